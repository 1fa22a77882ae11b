//! Post-steps: what runs after every sink finished, in pipeline order. A failing step does
//! not stop the others; a failing required one fails the run, and the steps after it do not
//! run.
//!
//! Commands see the run's outputs as placeholders in their arguments and environment:
//! `{spool}`, `{sink:NAME}` (a sink's output path) and `{post:NAME}` (an earlier step's
//! output), and as variables `ROCFLOW_SPOOL`, `ROCFLOW_SINK_<NAME>`, `ROCFLOW_POST_<NAME>`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::analyze::{Collecting, Finding, Selection, Trace};
use crate::catalog::Catalog;
use crate::plan::sink::SinkKind;
use crate::plan::{Destination, DomainTables, PostStep};
use crate::plan::{Plan, StageGraph};
use crate::progress::Board;
use crate::sink::{self, Placeholders};
use crate::source::{Frames, Source};
use crate::stage;
use crate::summary::{self, Breakdown, Format, Summary};

mod done;
pub mod sql;

pub use done::Done;

/// Rows of each table printed at the end of a run, unless the step says otherwise.
const DEFAULT_TOP: usize = 10;

/// What a post-step did.
#[derive(Debug)]
pub struct PostReport {
    pub name: String,
    pub required: bool,
    pub outcome: Result<Done, PostError>,
}

/// Why a post-step did not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PostError {
    /// rocflow was asked to stop before the step ended.
    #[error("{}", crate::cancel::STOPPED)]
    Stopped,
    /// A required step before this one failed.
    #[error("not run: the required step `{0}` failed")]
    NotRun(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    /// The run's records could not be summarized.
    #[error("{0}")]
    Summary(String),
    /// An `analyze` step's `fail_if` held for a finding.
    #[error("{0}")]
    Findings(String),
    #[error("the command is empty")]
    EmptyCommand,
    #[error("cannot run `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("waiting for `{program}`: {source}")]
    Wait {
        program: String,
        source: std::io::Error,
    },
    /// The command ended with a failure status (`code`), or by a signal (none).
    #[error("`{program}` {}", match code {
        Some(code) => format!("exited with status {code}"),
        None => "was killed by a signal".to_owned(),
    })]
    Exited { program: String, code: Option<i32> },
    /// A `sql` step failed; see [`sql::SqlError`].
    #[error(transparent)]
    Sql(#[from] sql::SqlError),
}

impl PostError {
    fn io(context: String) -> impl FnOnce(std::io::Error) -> PostError {
        move |source| PostError::Io { context, source }
    }
}

/// Reads the run's records again, as the sinks had them (the same input and time window),
/// for the steps that take them: the summary and the report.
pub type Reopen<'a> = &'a dyn Fn() -> Result<Box<dyn Source>, String>;

/// What the post-steps take, already collected: statistics by breakdown, and the report's
/// findings.
#[derive(Default)]
pub struct Statistics {
    by_breakdown: Vec<(Breakdown, Summary)>,
    findings: Option<Vec<Finding>>,
}

/// What the plan's post-steps take from the records, collected as they pass the stages of
/// the run itself (live or replayed), beside its sinks. Read again from the spool once
/// the application had exited, they held a 20 M-record `trace-all`'s outputs 2.0 to 4.9 s
/// after its sinks ended on 16 cores.
pub struct Collect {
    summaries: Vec<(Breakdown, summary::Collecting)>,
    /// The report's findings, once checked; `None` where no step reports.
    findings: Option<Checked>,
}

/// The findings a [`Checking`] sink leaves, once its records end.
type Checked = Arc<Mutex<Option<Vec<Finding>>>>;

/// The trace's collecting sink, which checks every rule on its own thread once its records
/// end: beside the sinks still finishing, not after the slowest of them. Checked after the
/// stage run, a 20 M-record `trace-all`'s outputs waited 4.1 s after its sinks on 16 cores.
struct Checking {
    trace: Box<dyn sink::Sink>,
    collected: Arc<Mutex<Option<(Collecting, crate::analyze::Input)>>>,
    findings: Checked,
}

impl sink::Sink for Checking {
    fn write(
        &mut self,
        window: &[Arc<crate::chunk::Chunk>],
        catalog: &Catalog,
    ) -> Result<(), sink::SinkError> {
        self.trace.write(window, catalog)
    }

    fn finish(self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, sink::SinkError> {
        let paths = self.trace.finish(catalog)?;
        let collected = self.collected.lock().expect("no poison").take();
        if let Some((mut collecting, input)) = collected
            && collecting.added(input, None).is_ok()
        {
            let findings = Selection::every_rule().check(&collecting.finish());
            *self.findings.lock().expect("no poison") = Some(findings);
        }
        Ok(paths)
    }
}

impl Collect {
    /// The collectors of what `plan`'s steps take, and the outlets that feed them, to be
    /// fed beside the sinks ([`stage::run_watched`]): none when no step takes records.
    pub fn of(plan: &Plan) -> (Collect, Vec<stage::Outlet<'static>>) {
        let (summaries, mut outlets): (Vec<_>, Vec<_>) = (breakdowns(plan).into_iter())
            .map(|b| {
                let (collecting, outlet) = Summary::collecting(b);
                ((b, collecting), outlet)
            })
            .unzip();
        let reported = (plan.posts.iter()).any(|p| matches!(p.step, PostStep::Report { .. }));
        let findings = reported.then(|| {
            let mut collecting = Collecting::default();
            let (input, outlet) = collecting.input();
            let collected = Arc::new(Mutex::new(Some((collecting, input))));
            let findings = Checked::default();
            let checked = Arc::clone(&findings);
            let open = outlet.open;
            outlets.push(stage::Outlet {
                open: Box::new(move |placeholders: &Placeholders| {
                    Ok(Box::new(Checking {
                        trace: open(placeholders)?,
                        collected: Arc::clone(&collected),
                        findings: Arc::clone(&checked),
                    }) as Box<dyn sink::Sink>)
                }),
                ..outlet
            });
            findings
        });
        (
            Collect {
                summaries,
                findings,
            },
            outlets,
        )
    }

    /// What was collected, once the stage run of the outlets [`Collect::of`] gave ended
    /// with `report` (their reports are taken from it). What failed is left out for its
    /// step, which reads the records again and reports it.
    pub fn finish(self, report: &mut stage::Report) -> Statistics {
        let mut outlets = std::mem::take(&mut report.beside).into_iter();
        let catalog = &report.catalog;
        let by_breakdown = (self.summaries.into_iter())
            .filter_map(|(b, collecting)| {
                let summary = collecting.finish(outlets.next(), catalog.clone()).ok()?;
                Some((b, summary))
            })
            .collect();
        let findings = self.findings.and_then(|checked| {
            let report = outlets.next()?;
            report.outcome.ok()?;
            checked.lock().expect("no poison").take()
        });
        Statistics {
            by_breakdown,
            findings,
        }
    }
}

/// The breakdowns the plan's steps read the records by, each once.
fn breakdowns(plan: &Plan) -> Vec<Breakdown> {
    let mut breakdowns = Vec::new();
    for post in &plan.posts {
        let breakdown = match &post.step {
            PostStep::Summary { by, .. } => breakdown(by),
            PostStep::Report { .. } => Breakdown::default(),
            PostStep::Sql { .. } | PostStep::Analyze { .. } | PostStep::Command { .. } => continue,
        };
        if !breakdowns.contains(&breakdown) {
            breakdowns.push(breakdown);
        }
    }
    breakdowns
}

/// The breakdown a summary step's `by` asks for.
fn breakdown(by: &[String]) -> Breakdown {
    Breakdown {
        node: by.iter().any(|b| b == "node"),
        process: by.iter().any(|b| b == "process"),
        agent: by.iter().any(|b| b == "agent"),
    }
}

/// An `analyze` step: the findings of `rules` (every rule when none) written to `path`,
/// in the format its extension names, and printed; an error when `fail_if` holds.
fn analyze(
    stages: &StageGraph,
    open: Reopen<'_>,
    path: &Path,
    rules: &[String],
    fail_if: Option<&str>,
) -> Result<Done, PostError> {
    // The pipeline's compiler checked the rules and the predicate.
    let selection = Selection::new(rules, &[]).map_err(|e| PostError::Summary(e.to_string()))?;
    let gate = fail_if
        .map(crate::analyze::Gate::new)
        .transpose()
        .map_err(|e| PostError::Summary(e.to_string()))?;
    let findings = findings(stages, open, &selection)?;
    let written = match path.extension().and_then(|e| e.to_str()) {
        Some("md") => crate::analyze::markdown(&findings),
        Some("txt") => crate::analyze::text(&findings),
        _ => format!("{:#}\n", crate::analyze::json(&findings)),
    };
    crate::atomic::write(path, written)
        .map_err(PostError::io(format!("writing {}", path.display())))?;
    if let Some(finding) = gate.and_then(|g| g.first_holding(&findings).cloned()) {
        return Err(PostError::Findings(format!(
            "`{}` holds for {} `{}`: {}",
            fail_if.unwrap_or_default(),
            finding.severity.name(),
            finding.rule,
            finding.statement
        )));
    }
    Ok(Done {
        paths: vec![path.to_path_buf()],
        text: crate::analyze::text(&findings),
        partial: None,
    })
}

/// What `rules` find in the records `open` reads through `stages`.
fn findings(
    stages: &StageGraph,
    open: Reopen<'_>,
    rules: &Selection,
) -> Result<Vec<Finding>, PostError> {
    let mut records = open().map_err(PostError::Summary)?;
    let frames = std::iter::from_fn(|| records.next_frame());
    let mut source = Frames(frames.take_while(|_| !crate::cancel::requested()));
    let (trace, _, _) = Trace::of_run(stages, &mut source).map_err(PostError::Summary)?;
    if crate::cancel::requested() {
        return Err(PostError::Stopped);
    }
    Ok(rules.check(&trace))
}

/// The run's statistics through `stages`, from the records `open` reads, and whether they
/// are partial; none if rocflow is asked to stop meanwhile.
fn statistics(
    stages: &StageGraph,
    open: Reopen<'_>,
    breakdown: Breakdown,
) -> Result<Summary, PostError> {
    let mut records = open().map_err(PostError::Summary)?;
    let frames = std::iter::from_fn(|| records.next_frame());
    let mut source = Frames(frames.take_while(|_| !crate::cancel::requested()));
    let (mut summary, _) =
        Summary::of_run(stages, &mut source, breakdown).map_err(PostError::Summary)?;
    if crate::cancel::requested() {
        return Err(PostError::Stopped);
    }
    // A live run's sinks may have had records its spool lacks (its disk filled): the
    // spool's own end says whether the statistics are the whole run's.
    summary.catalog.partial = crate::source::partial(&records.finish());
    Ok(summary)
}

/// Runs the plan's post-steps for the run kept in `spool`, whose records `open` reads and
/// whose metadata is `catalog`, saying on `board` which one runs; `collected` holds what
/// was collected as the records passed the stages.
pub fn run(
    plan: &Plan,
    spool: &Path,
    open: Reopen<'_>,
    collected: Statistics,
    catalog: &Catalog,
    board: &Board,
) -> Vec<PostReport> {
    let placeholders = &Placeholders::for_run(catalog);
    let mut outputs = Outputs {
        placeholders,
        spool: spool.to_path_buf(),
        sinks: plan
            .sinks
            .iter()
            .map(|s| (s.name.clone(), placeholders.expand(&s.path)))
            .collect(),
        every_sink: (plan.sinks.iter())
            .flat_map(|s| {
                sink::paths(s, catalog)
                    .into_iter()
                    .map(|p| (s.name.clone(), p))
            })
            .collect(),
        posts: Vec::new(),
    };
    let mut summaries = Summaries {
        plan,
        open,
        computed: collected,
    };
    let mut reports: Vec<PostReport> = Vec::new();
    for post in &plan.posts {
        if crate::cancel::requested() {
            reports.push(PostReport {
                name: post.name.clone(),
                required: post.required,
                outcome: Err(PostError::Stopped),
            });
            continue;
        }
        if let Some(failed) = reports.iter().find(|r| r.required && r.outcome.is_err()) {
            reports.push(PostReport {
                name: post.name.clone(),
                required: post.required,
                outcome: Err(PostError::NotRun(failed.name.clone())),
            });
            continue;
        }
        let _running = board.step(&post.name);
        let outcome = match &post.step {
            PostStep::Summary {
                path,
                top,
                formats,
                by,
                domain_tables,
            } => {
                let dir = placeholders.expand(path.as_deref().unwrap_or("summary"));
                outputs.posts.push((post.name.clone(), dir.clone()));
                let asked = Asked {
                    dir: &dir,
                    top: *top,
                    formats: formats.as_deref(),
                    by,
                    domain_tables: domain_tables.as_ref(),
                };
                summarize(&mut summaries, &asked, placeholders)
            }
            PostStep::Sql {
                query,
                database,
                path,
                format,
                timeout,
            } => {
                let database = match database {
                    Some(database) => Some(placeholders.expand(database)),
                    None => plan
                        .sinks
                        .iter()
                        .find(|s| s.writes(SinkKind::Rocpd))
                        .map(|s| placeholders.expand(&s.path)),
                };
                let path = placeholders.expand(path);
                let done = match (database, crate::plan::time_limit(timeout.as_ref())) {
                    (Some(database), Ok(limit)) => sql::Query {
                        name: &post.name,
                        text: query,
                        limit: Duration::from_nanos(limit),
                        bounds: plan.bounds,
                    }
                    .run(&database, &path, format.as_deref()),
                    (None, _) => Err(sql::SqlError::NoDatabase),
                    (_, Err(e)) => Err(sql::SqlError::Timeout(e)),
                }
                .map_err(PostError::from);
                outputs.posts.push((post.name.clone(), path));
                done
            }
            PostStep::Report { path, title } => {
                let path = placeholders.expand(path);
                let done = report(&mut summaries, &path, title.as_deref(), &outputs);
                outputs.posts.push((post.name.clone(), path));
                done
            }
            PostStep::Analyze {
                path,
                rules,
                fail_if,
            } => {
                let path = placeholders.expand(path);
                let done = analyze(
                    &plan.stages,
                    summaries.open,
                    &path,
                    rules,
                    fail_if.as_deref(),
                );
                outputs.posts.push((post.name.clone(), path));
                done
            }
            PostStep::Command { argv, env } => command(argv, env, &outputs),
        };
        reports.push(PostReport {
            name: post.name.clone(),
            required: post.required,
            outcome,
        });
    }
    reports
}

/// Where the run's outputs are, for commands.
struct Outputs<'a> {
    placeholders: &'a Placeholders,
    spool: PathBuf,
    /// Each sink's path, as the run's first process fills it in.
    sinks: Vec<(String, PathBuf)>,
    /// Each sink's paths, one per process where the path names one (for the report).
    every_sink: Vec<(String, PathBuf)>,
    posts: Vec<(String, PathBuf)>,
}

impl Outputs<'_> {
    /// `text` with `{spool}`, `{sink:NAME}`, `{post:NAME}` and the run's placeholders
    /// filled in.
    fn expand(&self, text: &str) -> String {
        let mut out = self
            .placeholders
            .fill(text)
            .replace("{spool}", &self.spool.to_string_lossy());
        for (prefix, named) in [("sink", &self.sinks), ("post", &self.posts)] {
            for (name, path) in named {
                out = out.replace(&format!("{{{prefix}:{name}}}"), &path.to_string_lossy());
            }
        }
        out
    }

    /// The outputs as environment variables.
    fn variables(&self) -> Vec<(String, PathBuf)> {
        let variable = |prefix: &str, name: &str| {
            let name: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_uppercase()
                    } else {
                        '_'
                    }
                })
                .collect();
            format!("ROCFLOW_{prefix}_{name}")
        };
        std::iter::once(("ROCFLOW_SPOOL".to_owned(), self.spool.clone()))
            .chain(
                self.sinks
                    .iter()
                    .map(|(n, p)| (variable("SINK", n), p.clone())),
            )
            .chain(
                self.posts
                    .iter()
                    .map(|(n, p)| (variable("POST", n), p.clone())),
            )
            .collect()
    }
}

/// Runs an argv (never through a shell), its output going to rocflow's.
fn command(
    argv: &[String],
    env: &indexmap::IndexMap<String, String>,
    outputs: &Outputs,
) -> Result<Done, PostError> {
    let argv: Vec<String> = argv.iter().map(|a| outputs.expand(a)).collect();
    let (program, args) = argv.split_first().ok_or(PostError::EmptyCommand)?;
    let mut child = Command::new(program)
        .args(args)
        .envs(outputs.variables())
        .envs(env.iter().map(|(k, v)| (k, outputs.expand(v))))
        .spawn()
        .map_err(|source| PostError::Spawn {
            program: program.clone(),
            source,
        })?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if crate::cancel::requested() => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(PostError::Stopped);
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(source) => {
                return Err(PostError::Wait {
                    program: program.clone(),
                    source,
                });
            }
        }
    };
    if status.success() {
        Ok(Done::default())
    } else {
        Err(PostError::Exited {
            program: program.clone(),
            code: status.code(),
        })
    }
}

fn report(
    summaries: &mut Summaries<'_>,
    path: &Path,
    title: Option<&str>,
    outputs: &Outputs<'_>,
) -> Result<Done, PostError> {
    let plan = summaries.plan;
    let findings = summaries.findings()?;
    let summary = summaries.of(Breakdown::default())?;
    let title = title.map_or_else(|| format!("rocflow: {}", plan.pipeline.name), str::to_owned);
    let linked: Vec<(String, PathBuf)> = outputs
        .every_sink
        .iter()
        .chain(&outputs.posts)
        .cloned()
        .chain([("raw spool".to_owned(), outputs.spool.clone())])
        .collect();
    let thread_trace = crate::thread_trace::decoded(plan, &summary.catalog);
    let page = crate::report::Page {
        title: &title,
        pipeline: Some((&plan.pipeline.name, &plan.pipeline.hash)),
        outputs: &linked,
        thread_trace: &thread_trace,
        findings: &findings,
    };
    crate::report::write(path, &page, summary)
        .map_err(PostError::io(format!("writing {}", path.display())))?;
    Ok(Done {
        paths: vec![path.to_path_buf()],
        text: String::new(),
        partial: summary.catalog.partial.clone(),
    })
}

/// The run's statistics through the plan's transforms, read once per breakdown: the
/// summary and the report of a run read the same records.
struct Summaries<'a> {
    plan: &'a Plan,
    open: Reopen<'a>,
    computed: Statistics,
}

impl Summaries<'_> {
    fn of(&mut self, breakdown: Breakdown) -> Result<&Summary, PostError> {
        let computed = &mut self.computed.by_breakdown;
        let at = match computed.iter().position(|(b, _)| *b == breakdown) {
            Some(at) => at,
            None => {
                let summary = statistics(&self.plan.stages, self.open, breakdown)?;
                computed.push((breakdown, summary));
                computed.len() - 1
            }
        };
        Ok(&computed[at].1)
    }

    /// What every rule finds in the run, with its defaults: the report's findings.
    fn findings(&mut self) -> Result<Vec<Finding>, PostError> {
        match self.computed.findings.take() {
            Some(findings) => Ok(findings),
            None => findings(&self.plan.stages, self.open, &Selection::every_rule()),
        }
    }
}

/// What a summary step asks for, its paths filled in.
struct Asked<'a> {
    dir: &'a Path,
    top: Option<u32>,
    formats: Option<&'a [String]>,
    by: &'a [String],
    domain_tables: Option<&'a DomainTables>,
}

fn summarize(
    summaries: &mut Summaries<'_>,
    asked: &Asked<'_>,
    placeholders: &Placeholders,
) -> Result<Done, PostError> {
    let summary = summaries.of(breakdown(asked.by))?;
    let (tables, partial) = (summary.tables(), summary.catalog.partial.clone());
    let formats: Vec<Format> = match asked.formats {
        None => vec![Format::Csv, Format::Md, Format::Json],
        Some(names) => names.iter().filter_map(|f| Format::from_name(f)).collect(),
    };
    let dir = asked.dir;
    let mut paths = match formats.is_empty() {
        true => Vec::new(),
        false => summary::write_files(&tables, partial.as_deref(), dir, &formats)
            .map_err(PostError::io(format!("writing {}", dir.display())))?,
    };
    if let Some(domain_tables) = asked.domain_tables {
        paths.extend(print_domain_tables(summary, domain_tables, placeholders)?);
    }
    let top = asked.top.map_or(DEFAULT_TOP, |n| n as usize);
    Ok(Done {
        paths,
        text: summary::terminal(&tables, top),
        partial,
    })
}

/// Prints rocprofv3's summary tables where they go, as rocprofv3 does: on stdout or
/// stderr indented, or into a file (its path returned) as they are.
fn print_domain_tables(
    summary: &Summary,
    asked: &DomainTables,
    placeholders: &Placeholders,
) -> Result<Option<PathBuf>, PostError> {
    let indent = match asked.output {
        Destination::File(_) => "",
        Destination::Stdout | Destination::Stderr => "    ",
    };
    let text = summary
        .domain_tables(asked, indent)
        .map_err(PostError::Summary)?;
    let printed = |mut stream: Box<dyn Write>| {
        let text = crate::printable::lines(&text);
        // A closed stream leaves nowhere to say so.
        let _ = crate::screen::suspend(|| stream.write_all(text.as_bytes()));
    };
    match &asked.output {
        Destination::Stdout => printed(Box::new(std::io::stdout().lock())),
        Destination::Stderr => printed(Box::new(std::io::stderr().lock())),
        Destination::File(path) => {
            let path = placeholders.expand(path);
            crate::atomic::write(&path, text)
                .map_err(PostError::io(format!("writing {}", path.display())))?;
            return Ok(Some(path));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::diag::SourceFile;
    use crate::source::Spool;

    /// A generated run of 2,000 records from two processes in `dir`, and the plan of
    /// `steps` (post-steps' TOML) over its dispatches.
    fn run_and_plan(dir: &Path, steps: &str) -> (PathBuf, Plan) {
        let spool = dir.join("run.rfraw");
        let options = crate::generate::Options {
            records: 2000,
            processes: 2,
            seed: 3,
            plan: None,
        };
        crate::generate::to_spool(&options, &spool).unwrap();
        let text = format!("[[context]]\nname = \"c\"\ntracing = [\"kernel_dispatch\"]\n{steps}");
        let file = SourceFile::new("p.toml", text);
        let plan = crate::pipeline::compile_text(Path::new("p.toml"), file, &Default::default())
            .unwrap()
            .plan;
        (spool, plan)
    }

    /// Reads the spool at `path`.
    fn opener(path: &Path) -> impl Fn() -> Result<Box<dyn Source>, String> + Send + 'static {
        let path = path.to_owned();
        move || {
            Spool::open(&path)
                .map(|s| Box::new(s) as Box<dyn Source>)
                .map_err(|e| e.to_string())
        }
    }

    const BY_PROCESS: Breakdown = Breakdown {
        node: false,
        process: true,
        agent: false,
    };

    /// The summary and the report of one breakdown read the records once; another
    /// breakdown reads them again and gets its own statistics.
    #[test]
    fn statistics_are_read_once_per_breakdown() {
        let dir = tempfile::tempdir().unwrap();
        let (spool, plan) = run_and_plan(dir.path(), "");
        let (opened, open) = (Cell::new(0), opener(&spool));
        let counted = || {
            opened.set(opened.get() + 1);
            open()
        };
        let mut summaries = Summaries {
            plan: &plan,
            open: &counted,
            computed: Statistics::default(),
        };
        let whole = summaries.of(Breakdown::default()).unwrap().tables();
        assert_eq!(summaries.of(Breakdown::default()).unwrap().tables(), whole);
        assert_eq!(opened.get(), 1);
        let split = summaries.of(BY_PROCESS).unwrap().tables();
        assert_eq!(opened.get(), 2);
        assert!(split[0].columns.contains(&"process".to_owned()));
        assert!(!whole[0].columns.contains(&"process".to_owned()));
    }

    /// Collected beside the sinks, the statistics of every breakdown the steps take and
    /// the report's findings come from the run's own pass over the records, and the steps
    /// read nothing more; they are what the steps would have read themselves.
    #[test]
    fn statistics_collected_beside_the_sinks_serve_every_step() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().display();
        let (spool, plan) = run_and_plan(
            dir.path(),
            &format!(
                "[[post]]\nname = \"all\"\nkind = \"summary\"\npath = \"{out}/all\"\n\
                 [[post]]\nname = \"split\"\nkind = \"summary\"\npath = \"{out}/split\"\n\
                 by = [\"process\"]\n\
                 [[post]]\nname = \"page\"\nkind = \"report\"\npath = \"{out}/r.html\"\n"
            ),
        );

        let (collect, beside) = Collect::of(&plan);
        let mut source = opener(&spool)().unwrap();
        let mut report =
            stage::run_watched(&plan, &mut *source, &sink::open, beside, &Board::default())
                .unwrap();
        assert!(report.sinks.is_empty(), "the collectors are no sinks");
        let collected = collect.finish(&mut report);
        let breakdowns: Vec<Breakdown> = (collected.by_breakdown.iter()).map(|(b, _)| *b).collect();
        assert_eq!(breakdowns, [Breakdown::default(), BY_PROCESS]);
        for (breakdown, summary) in &collected.by_breakdown {
            let own = statistics(&plan.stages, &opener(&spool), *breakdown).unwrap();
            assert_eq!(summary.tables(), own.tables());
        }
        let own = findings(&plan.stages, &opener(&spool), &Selection::every_rule()).unwrap();
        assert_eq!(collected.findings.as_ref(), Some(&own));

        let unread = || -> Result<Box<dyn Source>, String> { panic!("the steps read again") };
        let reports = run(
            &plan,
            &spool,
            &unread,
            collected,
            &Catalog::default(),
            &Board::default(),
        );
        for report in &reports {
            assert!(
                report.outcome.is_ok(),
                "{}: {:?}",
                report.name,
                report.outcome
            );
        }
        assert!(dir.path().join("split").is_dir() && dir.path().join("r.html").is_file());
    }

    /// A plan whose steps take no records collects nothing.
    #[test]
    fn steps_without_records_collect_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (_, plan) = run_and_plan(dir.path(), "");
        assert!(Collect::of(&plan).1.is_empty());
    }
}
