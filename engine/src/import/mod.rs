//! rocprofv3 input files as rocflow pipelines (`rocflow import-rocprofv3`).
//!
//! rocprofv3 reads a YAML or JSON file of `jobs` (each a run of the application with its
//! command-line options as keys), or a text file of `pmc:` lines (each a pass collecting
//! those counters). Each job or line becomes a pipeline that asks rocprofiler-sdk for what
//! rocprofv3 would, writes the outputs rocprofv3 would where it would, and says in comments
//! what it could not convert. Several become one file each, or one pipeline whose
//! parameters select each one's values. Every pipeline is compiled before it is returned:
//! one that does not compile is never written.

mod convert;
mod de;
mod domains;
pub(crate) mod input;
pub(crate) mod kernels;
pub mod overlay;
pub(crate) mod paths;
pub(crate) mod period;
pub(crate) mod pmc;
mod shared;
mod text;

pub use overlay::Overlay;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diag::{Diagnostic, SourceFile, Span};
use crate::pipeline::{self, Options};

use convert::{Layout, Pass};
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
    let file = SourceFile::read(input).map_err(|e| {
        vec![Diagnostic::error(format!(
            "cannot read `{}`: {e}",
            input.display()
        ))]
    })?;
    let Input {
        jobs,
        layout,
        mut warnings,
    } = read(&file, input)?;
    let stem = input
        .file_stem()
        .map_or_else(|| "imported".into(), |s| s.to_string_lossy().into_owned());
    let passes = convert::passes(&file, &stem, &jobs.value, layout)?;
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

/// What an input file holds.
struct Input {
    jobs: Spanned<input::Jobs>,
    layout: Layout,
    /// About lines skipped (text files).
    warnings: Vec<Diagnostic>,
}

/// The jobs of a file, by its extension as rocprofv3 tells them apart.
fn read(file: &Arc<SourceFile>, path: &Path) -> Result<Input, Vec<Diagnostic>> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    let jobs = |jobs| Input {
        jobs,
        layout: Layout {
            noun: "job",
            nouns: "jobs",
            subdirectory: "pass_",
        },
        warnings: Vec::new(),
    };
    match extension {
        "yaml" | "yml" => Ok(jobs(structured(file)?)),
        "json" => {
            check_json(file)?;
            Ok(jobs(structured(file)?))
        }
        "txt" => {
            let (passes, warnings) = text::parse(file)?;
            Ok(Input {
                jobs: Spanned::new(passes, 0..file.text().len()),
                layout: Layout {
                    noun: "pass",
                    nouns: "passes",
                    subdirectory: "pmc_",
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

/// A YAML or JSON file's jobs.
fn structured(
    file: &Arc<SourceFile>,
) -> Result<Spanned<Vec<Spanned<input::Job>>>, Vec<Diagnostic>> {
    let source = rocflow_counters::Source::new(file.name(), file.text());
    let document = rocflow_counters::yaml::Document::parse(&source).map_err(|d| {
        let mut files = crate::counter_defs::Files::default();
        vec![files.diagnostic(&d)]
    })?;
    let parsed: input::File = de::from_node(&document.root).map_err(|e| {
        vec![
            Diagnostic::error(e.describe())
                .at(e.span.clone().map(|range| Span::new(file, range)))
                .maybe_hint(e.hint.clone()),
        ]
    })?;
    if parsed.jobs.value.is_empty() {
        return Err(vec![
            Diagnostic::error("`jobs` is empty: there is nothing to convert")
                .at(Some(Span::new(file, parsed.jobs.span.clone()))),
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
