//! `rocflow validate`, `rocflow explain` and `rocflow templates`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

use crate::diag::{Diagnostic, SourceFile};
use crate::error::{Error, Result};
use crate::import;
use crate::import::paths::RunValues;
use crate::messages;
use crate::pipeline::starter::{self, DEFAULT_TEMPLATE};
use crate::pipeline::{self, Library, Options};
use crate::plan;
use crate::runner::Device;
use crate::sdk::Domain;

use super::flags::Flags;
use super::pipeline_args::PipelineArgs;
use super::stdio::print;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// Diagnostics with source snippets, for people.
    Text,
    /// One JSON document, for CI and editors.
    Json,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Pipeline files (or template names) to check.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    pipeline: PipelineArgs,
    /// The device the pipelines are for: counter names are checked against the counters
    /// of the simulated device (`sim` or `sim:SCENARIO.toml`), or, for `rocm`, against
    /// the installed definitions when there are any.
    #[arg(long, default_value = "rocm", value_parser = Device::parse)]
    device: Device,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

/// Checks every file and reports all diagnostics; exit 2 if any file has an error.
pub fn validate(args: ValidateArgs) -> Result<ExitCode> {
    let options = Options {
        simulated: super::device::simulated(&args.device)?.map(|(_, gpus)| gpus),
        ..args.pipeline.options()?
    };
    let mut failed = false;
    let mut report = Vec::new();
    for file in &args.files {
        let (valid, diagnostics) = match pipeline::compile_file(file, &options) {
            Ok(compiled) => (true, compiled.warnings),
            Err(diagnostics) => (false, diagnostics),
        };
        failed |= !valid;
        match args.format {
            Format::Text => {
                diagnostics.iter().for_each(messages::diagnostic);
                let verdict = if valid { "ok" } else { "invalid" };
                print(&format!("{}: {verdict}\n", file.display()))?;
            }
            Format::Json => report.push(serde_json::json!({
                "file": file.display().to_string(),
                "valid": valid,
                "diagnostics": diagnostics.iter().map(Diagnostic::to_json).collect::<Vec<_>>(),
            })),
        }
    }
    if let Format::Json = args.format {
        let json = serde_json::json!({ "valid": !failed, "files": report });
        print(&format!("{json:#}\n"))?;
    }
    Ok(if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The pipeline file, or the name of a template such as `trace-all`; without one,
    /// the pipelines rocprofv3's options given make.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    #[command(flatten)]
    pipeline: PipelineArgs,
    /// Print the compiled Plan as JSON (what the tool library receives).
    #[arg(long, conflicts_with = "resolved")]
    json: bool,
    /// Print the fully merged pipeline (templates and parameters applied) as TOML.
    #[arg(long)]
    resolved: bool,
    /// List rocprofiler-sdk tracing domains, how many operations each has, and the SDK
    /// release that added those newer than 1.0.
    #[arg(long, conflicts_with_all = ["json", "resolved"])]
    domains: bool,
    // Last: its help heading holds for what follows it.
    #[command(flatten)]
    flags: Flags,
}

/// Prints the compiled plan (or the merged pipeline, or the domain list).
pub fn explain(args: ExplainArgs) -> Result<ExitCode> {
    if args.domains {
        let mut out = String::new();
        for d in Domain::ALL {
            out.push_str(&format!(
                "{:<26} {:>4} operations  -> {} records",
                d.name(),
                d.operations().len(),
                d.record_kind().name()
            ));
            if let Some(release) = d.since() {
                out.push_str(&format!(" (since {release})"));
            }
            out.push('\n');
        }
        print(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let compiled = match (&args.file, args.flags.job()?) {
        (Some(file), _) => {
            let options = Options {
                overlay: Some(Box::new(args.flags.overlay()?)),
                ..args.pipeline.options()?
            };
            vec![pipeline::compile_file(file, &options).map_err(Error::User)?]
        }
        (None, Some(job)) => {
            let runs = import::runs(
                job.input.as_deref(),
                job.command_line,
                &RunValues::here(&[]),
            )
            .map_err(Error::User)?;
            runs.warnings.iter().for_each(messages::diagnostic);
            let options = args.pipeline.options()?;
            let path = std::path::Path::new("rocprofv3.toml");
            (runs.runs.into_iter())
                .map(|run| pipeline::compile_text(path, run.pipeline, &options))
                .collect::<std::result::Result<_, _>>()
                .map_err(Error::User)?
        }
        (None, None) => {
            return Err(Error::user(
                Diagnostic::error("nothing to explain: give a pipeline, or rocprofv3's options")
                    .hint(
                        "`rocflow explain trace-all`, or `rocflow explain --kernel-trace --stats`",
                    ),
            ));
        }
    };
    let mut text = String::new();
    for compiled in &compiled {
        compiled.warnings.iter().for_each(messages::diagnostic);
        if args.json {
            let json = serde_json::to_string_pretty(&compiled.plan).expect("plans serialize");
            text.push_str(&format!("{json}\n"));
        } else if args.resolved {
            let toml = toml::to_string_pretty(&compiled.resolved.to_toml())
                .map_err(|e| Error::Runtime(format!("cannot print the resolved pipeline: {e}")))?;
            text.push_str(&toml);
        } else {
            text.push_str(&plan::explain(&compiled.plan));
        }
    }
    print(&text)?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Subcommand)]
pub enum TemplatesCommand {
    /// List templates with where each comes from; a template hiding another is marked.
    List,
    /// Print a template's TOML.
    Show {
        /// Template name, e.g. `base` or `team/base`.
        name: String,
    },
}

pub fn templates(command: TemplatesCommand) -> Result<ExitCode> {
    let library = Library::from_env();
    match command {
        TemplatesCommand::List => {
            let mut out = String::new();
            for t in library.list() {
                out.push_str(&format!("{:<24} {}\n", t.name, t.found.origin.display()));
                for hidden in &t.found.shadows {
                    out.push_str(&format!("{:<24}   shadows {}\n", "", hidden.display()));
                }
            }
            print(&out)?;
        }
        TemplatesCommand::Show { name } => {
            let (found, text) = library.read(&name)?;
            let mut header = format!("# {}\n", found.origin.display());
            for hidden in &found.shadows {
                header.push_str(&format!("# shadows {}\n", hidden.display()));
            }
            print(&format!("{header}{text}"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The template the pipeline extends (see `rocflow templates list`).
    #[arg(default_value = DEFAULT_TEMPLATE)]
    template: String,
    /// Where to write the pipeline.
    #[arg(short, long, value_name = "FILE", default_value = "pipeline.toml")]
    output: PathBuf,
    /// Overwrite FILE if it exists.
    #[arg(long)]
    force: bool,
}

/// Writes a starter pipeline that extends a template; it is checked before it is written,
/// and an existing file is only replaced with --force.
pub fn init(args: InitArgs) -> Result<ExitCode> {
    let path = &args.output;
    // `extends` looks next to the file first, so a file named after its template would
    // extend itself once written.
    let itself = path.with_file_name(format!("{}.toml", args.template.trim_end_matches(".toml")));
    if std::path::absolute(&itself).ok() == std::path::absolute(path).ok() {
        let file = path.display();
        return Err(Error::user(
            Diagnostic::error(format!(
                "`{file}` would extend itself: `extends` looks next to the file first"
            ))
            .hint(format!(
                "name it after what it profiles, e.g. -o my-{}",
                itself.file_name().unwrap_or_default().to_string_lossy()
            )),
        ));
    }
    let options = Options {
        library: Library::from_env(),
        ..Options::default()
    };
    let schema = pipeline::schema::installed_path();
    let text = starter::starter(&options.library, &args.template, path, schema.as_deref())?;
    let file = SourceFile::new(path.display().to_string(), text.clone());
    let compiled = pipeline::compile_text(path, file, &options).map_err(Error::User)?;
    if path.exists() && !args.force {
        return Err(Error::user(
            Diagnostic::error(format!("`{}` already exists", path.display()))
                .hint("pass --force to overwrite it, or -o to write another file"),
        ));
    }
    compiled.warnings.iter().for_each(messages::diagnostic);
    crate::atomic::write(path, text).map_err(Error::io(format!("writing {}", path.display())))?;
    print(&format!(
        "wrote {file}, a pipeline that extends `{template}`\n  rocflow run {file} -- ./app\n",
        file = path.display(),
        template = args.template,
    ))?;
    Ok(ExitCode::SUCCESS)
}
