//! rocpd databases as input, read as `rocflow inspect`, `summary` and `replay` read them:
//! every record's columns against the metadata, the statistics by node, process and agent
//! with their tables and report, and the run replayed with `trace-all` (the pipeline
//! databases replay with) into its sinks and post-steps.
//!
//! The seeds are databases rocflow's rocpd sink wrote from the spool seeds (`rocflow
//! replay SPOOL` with a pipeline whose one sink is rocpd), their views dropped and
//! vacuumed into 512-byte pages so that a few tens of KB hold every table and page
//! mutations land in structure rather than slack: `rccl` (API regions, dispatches,
//! copies, allocations), `api-args` (arguments), `kernel-hotspots` (counters),
//! `pc-sampling` (samples) and `two-processes` (two processes in one database).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rocflow::pipeline::{self, Library, Options, Override};
use rocflow::plan::Plan;
use rocflow::progress::Board;
use rocflow::report::{self, Page};
use rocflow::source::{Frames, Rocpd, Source};
use rocflow::summary::{self, Breakdown, Format, Summary};
use rocflow::wire::Frame;
use rocflow::{post, sink, stage};

use super::spool::Read;
use super::{Shape, Target};

pub const TARGET: Target = Target {
    name: "rocpd",
    run: read_database,
    seeds: &["tests/fuzz/corpus/rocpd"],
    shape: Shape::Database,
    tokens: &[],
    nests: &[],
    extension: "db",
};

/// The pipeline `replay` uses for databases when none is given.
const REPLAYED_WITH: &str = "trace-all";

/// What reading the database led to, less the names SQLite's messages quote from it
/// (see [`unnamed`]).
fn read_database(input: &[u8], scratch: &Path) -> String {
    unnamed(&read(input, scratch))
}

fn read(input: &[u8], scratch: &Path) -> String {
    let path = scratch.join("input.db");
    crate::files::replace(&path, input);
    let paths = [path];
    let mut source = match Rocpd::open(&paths) {
        Ok(source) => source,
        Err(e) => return e.to_string(),
    };
    let mut lines = vec![source.note().unwrap_or_default().to_owned()];
    // As `inspect`: every frame, the metadata applied and every record's cells read.
    let frames: Vec<Frame> = std::iter::from_fn(|| source.next_frame()).collect();
    let mut read = Read::default();
    frames.iter().for_each(|frame| read.frame(frame.clone()));
    lines.push(read.to_string());
    lines.push(match source.finish() {
        Ok(ending) => ending.warning.unwrap_or_default(),
        Err(e) => e.to_string(),
    });
    lines.push(summarize(&frames, scratch));
    lines.push(replay(&frames, &paths[0], scratch));
    lines.join("\n")
}

/// As `summary --by node,process,agent`, printed in every format and as the report.
fn summarize(frames: &[Frame], scratch: &Path) -> String {
    let breakdown = Breakdown {
        node: true,
        process: true,
        agent: true,
    };
    let mut source = Frames(frames.iter().cloned());
    let summary = match Summary::of_run(&Default::default(), &mut source, breakdown) {
        Ok((summary, _)) => summary,
        Err(e) => return format!("summary: {e}"),
    };
    let tables = summary.tables();
    for format in [Format::Csv, Format::Md, Format::Json] {
        summary::render(&tables, format);
    }
    summary::terminal(&tables, 10);
    let page = Page {
        title: "fuzz",
        pipeline: None,
        outputs: &[],
        thread_trace: &[],
        findings: &[],
    };
    report::render(&page, &summary, scratch);
    String::new()
}

/// As `replay DATABASE`: the records through `trace-all`'s stages into its sinks, then
/// its post-steps, every output in a folder of its own which nothing named in the
/// database may lead out of.
fn replay(frames: &[Frame], database: &Path, scratch: &Path) -> String {
    let (plan, out) = replay_plan(scratch);
    // What the last input wrote goes, so that outputs do not pile up.
    let _ = std::fs::remove_dir_all(out);
    let mut source = Frames(frames.iter().cloned());
    let report = match stage::run(plan, &mut source, &sink::open) {
        Ok(report) => report,
        Err(e) => return format!("replay: {e}"),
    };
    let mut lines = Vec::new();
    let mut written = Vec::new();
    for sink in &report.sinks {
        match &sink.outcome {
            Ok(paths) => written.extend(paths.iter().cloned()),
            Err(e) => lines.push(format!("sink: {e}")),
        }
    }
    // The post-steps read the run again, as `replay` reopens the databases.
    let reopen = || -> Result<Box<dyn Source>, String> {
        let again: Vec<Frame> = frames.to_vec();
        Ok(Box::new(Frames(again.into_iter())))
    };
    let board = Board::default();
    for step in post::run(
        plan,
        database,
        &reopen,
        post::Statistics::default(),
        &report.catalog,
        &board,
    ) {
        match step.outcome {
            Ok(done) => written.extend(done.paths),
            Err(e) => lines.push(format!("post-step: {e}")),
        }
    }
    for path in written {
        assert!(
            path.starts_with(out) && !path.components().any(|c| c.as_os_str() == ".."),
            "replay wrote {} outside its output folder {}",
            path.display(),
            out.display()
        );
    }
    lines.join("\n")
}

/// `text` without what is in brackets or quotes: SQLite names the table or token its
/// error is about, and a mutated schema has endless names, each of which would otherwise
/// make an input look new.
fn unnamed(text: &str) -> String {
    let mut closing = None;
    text.chars()
        .filter(|&c| match (closing, c) {
            (Some(close), c) if c == close => {
                closing = None;
                false
            }
            (Some(_), _) => false,
            (None, '(') => {
                closing = Some(')');
                false
            }
            (None, '"') => {
                closing = Some('"');
                false
            }
            _ => true,
        })
        .collect()
}

/// `trace-all` writing into `scratch/replay`, compiled once per worker.
fn replay_plan(scratch: &Path) -> (&'static Plan, &'static Path) {
    static PLAN: OnceLock<(Plan, PathBuf)> = OnceLock::new();
    let (plan, out) = PLAN.get_or_init(|| {
        let out = scratch.join("replay");
        let output_dir = format!("output_dir={}", out.display());
        let options = Options {
            overrides: vec![Override::parse(&output_dir).expect("a parameter")],
            library: Library::with_search_path(Vec::new()),
            records_only: true,
            ..Options::default()
        };
        let merged = (options.library)
            .load_template(REPLAYED_WITH)
            .expect("a shipped template");
        let compiled = pipeline::compile(Path::new(REPLAYED_WITH), merged, &options)
            .unwrap_or_else(|e| panic!("{REPLAYED_WITH} compiles: {e:?}"));
        (compiled.plan, out)
    });
    (plan, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seeds are whole databases: each is read, summarized and replayed without an
    /// error, so that what the mutations break is all the target sees go wrong.
    #[test]
    fn every_seed_reads_summarizes_and_replays() {
        let dir = tempfile::tempdir().unwrap();
        let seeds = crate::corpus::seeds(&TARGET).unwrap();
        assert_eq!(seeds.len(), 5);
        for seed in seeds {
            let outcome = read(&seed, dir.path());
            assert!(outcome.lines().any(|l| l == "meta"), "{outcome}");
            for error in [
                "SQLite",
                "reading",
                "summary:",
                "replay:",
                "sink:",
                "post-step:",
            ] {
                assert!(!outcome.contains(error), "{outcome}");
            }
        }
    }
}
