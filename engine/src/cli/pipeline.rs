//! `rocflow validate`, `rocflow explain` and `rocflow templates`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

use crate::diag::Diagnostic;
use crate::error::{Error, Result};
use crate::pipeline::{self, Library, Options, Origin, Override};
use crate::plan::{self, Plan};
use crate::plugin::Search;
use crate::sdk::Domain;

use super::print;

/// Options every command that reads a pipeline shares.
#[derive(Debug, Args)]
pub struct PipelineArgs {
    /// Override a pipeline parameter (repeatable): --set top=20 --set kernels='["gemm"]'
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// Counter definitions to check counter names against (default: the pipeline's
    /// `definitions`, else $ROCM_PATH or /opt/rocm when installed).
    #[arg(long, value_name = "FILE")]
    counters: Option<PathBuf>,
}

impl PipelineArgs {
    /// Compiles a pipeline file (or template) with these options, showing its warnings.
    pub(super) fn compile(&self, file: &Path) -> Result<Plan> {
        let compiled =
            crate::pipeline::compile_file(file, &self.options()?).map_err(Error::User)?;
        let color = std::io::stderr().is_terminal();
        compiled
            .warnings
            .iter()
            .for_each(|w| eprintln!("{}\n", w.render(color)));
        Ok(compiled.plan)
    }

    pub(super) fn options(&self) -> Result<Options> {
        let overrides = self
            .set
            .iter()
            .map(|arg| Override::parse(arg))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Options {
            overrides,
            library: Library::from_env(),
            counters: self.counters.clone(),
            plugins: Search::from_env(),
        })
    }
}

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
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

/// Checks every file and reports all diagnostics; exit 2 if any file has an error.
pub fn validate(args: ValidateArgs) -> Result<ExitCode> {
    let options = args.pipeline.options()?;
    let mut failed = false;
    let mut report = Vec::new();
    let color = std::io::stderr().is_terminal();
    for file in &args.files {
        let (valid, diagnostics) = match pipeline::compile_file(file, &options) {
            Ok(compiled) => (true, compiled.warnings),
            Err(diagnostics) => (false, diagnostics),
        };
        failed |= !valid;
        match args.format {
            Format::Text => {
                for d in &diagnostics {
                    eprintln!("{}\n", d.render(color));
                }
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
    /// The pipeline file, or the name of a template such as `trace-all`.
    #[arg(value_name = "FILE", required_unless_present = "domains")]
    file: Option<PathBuf>,
    #[command(flatten)]
    pipeline: PipelineArgs,
    /// Print the compiled Plan as JSON (what the tool library receives).
    #[arg(long, conflicts_with = "resolved")]
    json: bool,
    /// Print the fully merged pipeline (templates and parameters applied) as TOML.
    #[arg(long)]
    resolved: bool,
    /// List rocprofiler-sdk tracing domains and how many operations each has.
    #[arg(long, conflicts_with_all = ["json", "resolved"])]
    domains: bool,
}

/// Prints the compiled plan (or the merged pipeline, or the domain list).
pub fn explain(args: ExplainArgs) -> Result<ExitCode> {
    if args.domains {
        let mut out = String::new();
        for d in Domain::ALL {
            out.push_str(&format!(
                "{:<26} {:>4} operations  -> {} records\n",
                d.name(),
                d.operations().len(),
                d.record_kind().name()
            ));
        }
        print(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let file = args.file.expect("clap requires FILE without --domains");
    let compiled = pipeline::compile_file(&file, &args.pipeline.options()?).map_err(Error::User)?;
    let color = std::io::stderr().is_terminal();
    for warning in &compiled.warnings {
        eprintln!("{}\n", warning.render(color));
    }
    let text = if args.json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&compiled.plan).expect("plans serialize")
        )
    } else if args.resolved {
        toml::to_string_pretty(&compiled.resolved.to_toml())
            .map_err(|e| Error::Runtime(format!("cannot print the resolved pipeline: {e}")))?
    } else {
        plan::explain(&compiled.plan)
    };
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
                out.push_str(&format!("{:<24} {}\n", t.name, t.origin.display()));
                for hidden in &t.shadows {
                    out.push_str(&format!("{:<24}   shadows {}\n", "", hidden.display()));
                }
            }
            print(&out)?;
        }
        TemplatesCommand::Show { name } => {
            let (origin, text) = library.read(&name)?;
            let origin = match origin {
                Origin::File(path) => path.display().to_string(),
                builtin => builtin.display(),
            };
            print(&format!("# {origin}\n{text}"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
