//! rocprofv3 input files as rocflow pipelines (`rocflow import-rocprofv3`).
//!
//! rocprofv3 reads a YAML or JSON file of `jobs` (each a run of the application with its
//! command-line options as keys), or a text file of `pmc:` lines (each a pass collecting
//! those counters). Each job or line becomes a pipeline that asks rocprofiler-sdk for what
//! rocprofv3 would, writes the outputs rocprofv3 would where it would, and says in comments
//! what it could not convert. Several become one file each, or one pipeline whose
//! parameters select each one's values. Every pipeline is compiled before it is returned:
//! one that does not compile is never written.

mod att;
pub mod command_line;
mod convert;
mod de;
mod domains;
pub(crate) mod input;
pub(crate) mod kernels;
pub mod launch;
mod ompt;
pub mod overlay;
pub mod paths;
pub(crate) mod period;
pub(crate) mod pmc;
mod replay;
mod shared;
mod text;

pub use command_line::{CommandLine, Shape};
pub use overlay::Overlay;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocflow_counters::yaml::{Node, Value};

use crate::diag::{Diagnostic, SourceFile, Span};
use crate::pipeline::{self, Options};

use command_line::Origin;
use convert::{Layout, Pass, Purpose};
use de::Spanned;

/// How a file with several jobs becomes pipelines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Several {
    /// One pipeline per job (or pass), each in a file of its own.
    Split,
    /// One pipeline; parameters select each job's values.
    Params,
}

/// What to convert, and how.
#[derive(Debug)]
pub struct Request<'a> {
    pub input: &'a Path,
    /// How several jobs are written; `None` refuses a file with several.
    pub several: Option<Several>,
    /// Where a single pipeline is written, or the directory of `Split`'s files; names the
    /// pipelines in messages and in the run commands of `Params`.
    pub output: Option<&'a Path>,
    /// What the pipelines are checked with (the counter definitions).
    pub options: &'a Options,
}

/// A converted pipeline.
#[derive(Debug)]
pub struct Converted {
    /// Its file name in `Split`'s directory: `job-1.toml`.
    pub file_name: String,
    pub text: String,
}

/// The result of a conversion.
#[derive(Debug)]
pub struct Imported {
    pub pipelines: Vec<Converted>,
    /// What was not converted or works differently, pointing into the input, then what
    /// the compiler says about the pipelines.
    pub warnings: Vec<Diagnostic>,
}

/// Converts a rocprofv3 input file.
pub fn import(request: &Request<'_>) -> Result<Imported, Vec<Diagnostic>> {
    let input = request.input;
    let Input {
        origin,
        jobs,
        layout,
        mut warnings,
    } = read(Some(input), None)?;
    let file = Arc::clone(origin.source());
    let stem = input
        .file_stem()
        .map_or_else(|| "imported".into(), |s| s.to_string_lossy().into_owned());
    let passes = convert::passes(&origin, &stem, &jobs.value, layout, Purpose::Import)?;
    let count = |n: usize| match n {
        1 => format!("1 {}", layout.noun),
        n => format!("{n} {}", layout.nouns),
    };
    // Counter groups make more pipelines than jobs.
    let what = match passes.len() {
        n if n == jobs.value.len() => count(n),
        n => format!("{}, {n} pipelines", count(jobs.value.len())),
    };
    // Each pipeline: where it goes, what it converts, its text.
    let own = |pass: &Pass, target: PathBuf| {
        let header = header(&file, &pass.label, &pass.warnings, &[]);
        (target, pass.label.clone(), render(&header, table(pass)))
    };
    let pipelines: Vec<(PathBuf, String, String)> = match (request.several, passes.as_slice()) {
        (Some(Several::Split), _) => {
            let dir = request.output.unwrap_or(Path::new("."));
            passes
                .iter()
                .map(|pass| own(pass, dir.join(format!("{}.toml", pass.stem))))
                .collect()
        }
        (_, [pass]) => {
            let target = request.output.map_or_else(
                || PathBuf::from(format!("{}.toml", pass.stem)),
                Path::to_path_buf,
            );
            vec![own(pass, target)]
        }
        (None, _) => {
            return Err(vec![
                Diagnostic::error(format!(
                    "`{}` has {what}: say how to write them",
                    input.display(),
                ))
                .hint(format!(
                    "--split -o DIR writes one pipeline per {noun}; --params writes one pipeline whose parameters select each {noun}",
                    noun = layout.noun
                )),
            ]);
        }
        (Some(Several::Params), _) => {
            let target = request
                .output
                .map_or_else(|| PathBuf::from(format!("{stem}.toml")), Path::to_path_buf);
            let text = params_pipeline(&file, &stem, &passes, &what, &target)?;
            vec![(target, what.clone(), text)]
        }
    };
    let mut converted = Vec::new();
    let mut compiler_warnings = Vec::new();
    for (target, label, text) in pipelines {
        let note = format!("in the pipeline converted from {} ({label})", file.name());
        let source = SourceFile::with_notes(target.display().to_string(), text, vec![note]);
        let compiled = pipeline::compile_text(&target, Arc::clone(&source), request.options)?;
        compiler_warnings.extend(compiled.warnings);
        converted.push(Converted {
            file_name: target
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            text: source.text().to_owned(),
        });
    }
    warnings.extend(distinct(passes.iter().flat_map(|p| &p.warnings)));
    warnings.extend(compiler_warnings);
    Ok(Imported {
        pipelines: converted,
        warnings,
    })
}

/// What `rocflow run` runs for rocprofv3's options: a pipeline per job of the input file
/// (`-i`), or for the command line's one job, each compiled by the caller.
pub struct Runs {
    pub runs: Vec<Run>,
    /// What was not converted or works differently.
    pub warnings: Vec<Diagnostic>,
}

/// The pipelines rocprofv3 would run for `command_line`, with the jobs of `input` if given,
/// for the run `values` describe.
pub fn runs(
    input: Option<&Path>,
    command_line: CommandLine,
    values: &paths::RunValues,
) -> Result<Runs, Vec<Diagnostic>> {
    let Input {
        origin,
        jobs,
        layout,
        mut warnings,
    } = read(input, Some(command_line))?;
    let stem = match input {
        Some(input) => input
            .file_stem()
            .map_or_else(|| "imported".into(), |s| s.to_string_lossy().into_owned()),
        None => "rocprofv3".to_owned(),
    };
    let passes = convert::passes(&origin, &stem, &jobs.value, layout, Purpose::Run(values))?;
    warnings.extend(distinct(passes.iter().flat_map(|p| &p.warnings)));
    let runs = passes
        .iter()
        .map(|pass| {
            let name = format!("{} ({})", origin.source().name(), pass.label);
            let header = format!("# rocprofv3's options of the {name}, as a rocflow pipeline.\n");
            let text = render(&header, table(pass));
            Run {
                label: pass.label.clone(),
                pipeline: SourceFile::new(name, text),
                launch: pass.launch.clone(),
            }
        })
        .collect();
    Ok(Runs { runs, warnings })
}

/// One run of the application.
pub struct Run {
    /// `job 2`, `pass 3`.
    pub label: String,
    pub pipeline: Arc<SourceFile>,
    pub launch: launch::Launch,
}

/// The jobs to convert, and where they come from.
struct Input {
    origin: Origin,
    jobs: Spanned<input::Jobs>,
    layout: Layout,
    /// About lines skipped (text files).
    warnings: Vec<Diagnostic>,
}

const JOBS: Layout = Layout {
    noun: "job",
    nouns: "jobs",
    subdirectory: Some("pass_"),
};

/// The jobs of an input file, told apart by its extension as rocprofv3 does, with the
/// command line's options merged into each; or the command line's job alone.
fn read(path: Option<&Path>, command_line: Option<CommandLine>) -> Result<Input, Vec<Diagnostic>> {
    let line = command_line.map(CommandLine::finish);
    let Some(path) = path else {
        let (file, job) = line.expect("a job comes from a file or the command line");
        let origin = Origin::file(file);
        let span = job.span.clone();
        let job = deserialize(&origin, &job)?;
        return Ok(Input {
            origin,
            jobs: Spanned::new(vec![Spanned::new(job, span.clone())], span),
            layout: Layout {
                subdirectory: None,
                ..JOBS
            },
            warnings: Vec::new(),
        });
    };
    let file = SourceFile::read(path).map_err(|e| {
        vec![Diagnostic::error(format!(
            "cannot read `{}`: {e}",
            path.display()
        ))]
    })?;
    let merge = |jobs: &mut [Node]| match &line {
        Some((line, options)) => Origin::merge(Arc::clone(&file), jobs, Arc::clone(line), options),
        None => Ok(Origin::file(Arc::clone(&file))),
    };
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    match extension {
        "yaml" | "yml" | "json" => {
            if extension == "json" {
                check_json(&file)?;
            }
            let mut root = document(&file)?;
            let origin = merge(job_nodes(&mut root))?;
            let jobs = structured(&origin, &root)?;
            Ok(Input {
                origin,
                jobs,
                layout: JOBS,
                warnings: Vec::new(),
            })
        }
        "txt" => {
            let (mut passes, warnings) = text::parse(&file)?;
            let origin = merge(&mut passes)?;
            let jobs = (passes.iter())
                .map(|pass| Ok(Spanned::new(deserialize(&origin, pass)?, pass.span.clone())))
                .collect::<Result<_, Vec<Diagnostic>>>()?;
            Ok(Input {
                origin,
                jobs: Spanned::new(jobs, 0..file.text().len()),
                layout: Layout {
                    noun: "pass",
                    nouns: "passes",
                    subdirectory: Some("pmc_"),
                },
                warnings,
            })
        }
        _ => Err(vec![
            Diagnostic::error(format!(
                "cannot tell the format of `{}` from its name",
                path.display()
            ))
            .hint("rocprofv3 input files end in .yaml, .yml, .json (jobs) or .txt (pmc: lines)"),
        ]),
    }
}

/// A YAML or JSON file's tree.
fn document(file: &Arc<SourceFile>) -> Result<Node, Vec<Diagnostic>> {
    let source = rocflow_counters::Source::new(file.name(), file.text());
    let document = rocflow_counters::yaml::Document::parse(&source).map_err(|d| {
        let mut files = crate::counter_defs::Files::default();
        vec![files.diagnostic(&d)]
    })?;
    Ok(document.root)
}

/// The jobs in a file's tree, for the command line to be merged into (none where the tree
/// is not as it should be: reading it says why).
fn job_nodes(root: &mut Node) -> &mut [Node] {
    let Value::Mapping(entries) = &mut root.value else {
        return &mut [];
    };
    let jobs = entries.iter_mut().find(|(key, _)| match &key.value {
        Value::Scalar(s) => s.text == "jobs",
        _ => false,
    });
    match jobs.map(|(_, jobs)| &mut jobs.value) {
        Some(Value::Sequence(jobs)) => jobs,
        _ => &mut [],
    }
}

/// One job of a tree.
fn deserialize(origin: &Origin, node: &Node) -> Result<input::Job, Vec<Diagnostic>> {
    de::from_node(node).map_err(|e| vec![read_error(origin, &e)])
}

fn read_error(origin: &Origin, e: &de::Error) -> Diagnostic {
    Diagnostic::error(e.describe())
        .at(e.span.clone().map(|range| origin.span(range)))
        .maybe_hint(e.hint.clone())
}

/// A YAML or JSON file's jobs.
fn structured(origin: &Origin, root: &Node) -> Result<Spanned<input::Jobs>, Vec<Diagnostic>> {
    let parsed: input::File = de::from_node(root).map_err(|e| vec![read_error(origin, &e)])?;
    if parsed.jobs.value.is_empty() {
        return Err(vec![
            Diagnostic::error("`jobs` is empty: there is nothing to convert")
                .at(Some(origin.span(parsed.jobs.span.clone()))),
        ]);
    }
    Ok(parsed.jobs)
}

/// JSON syntax errors in JSON's words (the YAML reader reads JSON too, but would say
/// "invalid YAML").
fn check_json(file: &Arc<SourceFile>) -> Result<(), Vec<Diagnostic>> {
    let Err(err) = serde_json::from_str::<serde::de::IgnoredAny>(file.text()) else {
        return Ok(());
    };
    let message = err.to_string();
    let message = message
        .rsplit_once(" at line ")
        .map_or(message.as_str(), |(m, _)| m);
    let offset = file.offset(err.line(), err.column());
    Err(vec![
        Diagnostic::error(format!("invalid JSON: {message}"))
            .at(Some(Span::new(file, offset..offset))),
    ])
}

/// A pass's pipeline as a TOML table.
fn table(pass: &Pass) -> toml::Table {
    toml::Table::try_from(&pass.pipeline).expect("pipelines serialize to TOML")
}

/// The warnings of the passes, each once (the passes of one job share theirs).
fn distinct<'a>(warnings: impl IntoIterator<Item = &'a Diagnostic>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    for warning in warnings {
        let seen = out
            .iter()
            .any(|w| w.message == warning.message && w.position() == warning.position());
        if !seen {
            out.push(warning.clone());
        }
    }
    out
}

/// Every pass in one pipeline whose parameters select each pass's values.
fn params_pipeline(
    file: &Arc<SourceFile>,
    stem: &str,
    passes: &[Pass],
    what: &str,
    target: &Path,
) -> Result<String, Vec<Diagnostic>> {
    let tables = passes
        .iter()
        .map(|pass| {
            let mut table = table(pass);
            table.remove("pipeline");
            table
        })
        .collect();
    let shared = shared::share(tables).map_err(|mismatch| {
        let pass = &passes[mismatch.pass];
        vec![
            Diagnostic::error(format!(
                "{} differs from {} in `{}`, which a parameter cannot select",
                pass.label, passes[0].label, mismatch.at
            ))
            .at(Some(Span::new(file, pass.span.clone())))
            .hint("write one pipeline per job with --split -o DIR"),
        ]
    })?;
    let mut pipeline = toml::Table::new();
    let mut header_table = toml::Table::new();
    header_table.insert("name".into(), convert::pipeline_name(stem).into());
    header_table.insert(
        "description".into(),
        format!(
            "Converted from the rocprofv3 input {}: {what}, selected by parameters",
            file.name()
        )
        .into(),
    );
    pipeline.insert("pipeline".into(), header_table.into());
    pipeline.extend(shared.pipeline);
    let runs: Vec<String> = passes
        .iter()
        .zip(&shared.runs)
        .map(|(pass, sets)| {
            let sets: String = sets
                .iter()
                .map(|set| format!(" --set {}", shell_word(set)))
                .collect();
            format!(
                "{}: rocflow run {}{sets} -- APP",
                pass.label,
                shell_word(&target.display().to_string())
            )
        })
        .collect();
    let warnings = distinct(passes.iter().flat_map(|p| &p.warnings));
    let header = header(file, what, &warnings, &runs);
    Ok(render(&header, pipeline))
}

/// The comment a converted pipeline starts with: where it came from, what was not
/// converted, and (for `--params`) how to run each job.
fn header(file: &SourceFile, what: &str, warnings: &[Diagnostic], runs: &[String]) -> String {
    let mut out = format!(
        "# Converted by `rocflow import-rocprofv3` from {} ({what}).\n",
        file.name()
    );
    if !runs.is_empty() {
        out.push_str("#\n# Run each with:\n");
        for run in runs {
            out.push_str(&format!("#   {run}\n"));
        }
    }
    if !warnings.is_empty() {
        out.push_str("#\n# Not converted, or converted differently:\n");
        for warning in warnings {
            out.push_str(&format!("#   {warning}\n"));
        }
    }
    out
}

fn render(header: &str, table: toml::Table) -> String {
    let body = toml::to_string_pretty(&table).expect("TOML tables print");
    format!("{header}\n{body}")
}

/// A word for a POSIX shell: as it is when that is safe, else in single quotes.
fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
