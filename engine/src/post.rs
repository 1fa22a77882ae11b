//! Post-steps: what runs after every sink finished, in pipeline order. A failing step does
//! not stop the others; a required one fails the run.

use std::path::{Path, PathBuf};

use crate::pipeline::model::PostStep;
use crate::plan::Plan;
use crate::sink::Placeholders;
use crate::spool::SpoolReader;
use crate::summary::{self, Breakdown, Format, Summary};

/// Kernels in the table printed at the end of a run, unless the step says otherwise.
const DEFAULT_TOP: usize = 10;

/// What a post-step did.
#[derive(Debug)]
pub struct PostReport {
    pub name: String,
    pub required: bool,
    pub outcome: Result<Done, String>,
}

/// A finished post-step's files and what it prints.
#[derive(Debug, Default)]
pub struct Done {
    pub paths: Vec<PathBuf>,
    pub text: String,
}

/// Runs the plan's post-steps for the run kept in `spool`.
pub fn run(plan: &Plan, spool: &Path, placeholders: &Placeholders) -> Vec<PostReport> {
    plan.posts
        .iter()
        .map(|post| PostReport {
            name: post.name.clone(),
            required: post.required,
            outcome: match &post.step {
                PostStep::Summary {
                    path,
                    top,
                    formats,
                    by,
                } => summarize(
                    plan,
                    spool,
                    placeholders,
                    path.as_deref(),
                    *top,
                    formats,
                    by,
                ),
                PostStep::Sql { .. } => Err(unavailable("sql")),
                PostStep::Report { .. } => Err(unavailable("report")),
                PostStep::Command { .. } => Err(unavailable("command")),
            },
        })
        .collect()
}

fn unavailable(kind: &str) -> String {
    format!("the {kind} post-step is not part of this rocflow build yet")
}

fn summarize(
    plan: &Plan,
    spool: &Path,
    placeholders: &Placeholders,
    path: Option<&str>,
    top: Option<u32>,
    formats: &[String],
    by: &[String],
) -> Result<Done, String> {
    let breakdown = Breakdown {
        process: by.iter().any(|b| b == "process"),
        agent: by.iter().any(|b| b == "agent"),
    };
    let reader =
        SpoolReader::open(spool).map_err(|e| format!("reading {}: {e}", spool.display()))?;
    // The spool was read whole by the sinks already; a damaged tail was reported there.
    let frames = reader.map_while(Result::ok);
    let tables = Summary::of_run(&plan.stages.transforms, frames, breakdown)?.tables();
    let formats: Vec<Format> = if formats.is_empty() {
        vec![Format::Csv, Format::Md, Format::Json]
    } else {
        formats
            .iter()
            .filter_map(|f| Format::from_name(f))
            .collect()
    };
    let dir = placeholders.expand(path.unwrap_or("summary"));
    let paths = summary::write_files(&tables, &dir, &formats)
        .map_err(|e| format!("writing {}: {e}", dir.display()))?;
    let top = top.map_or(DEFAULT_TOP, |n| n as usize);
    Ok(Done {
        paths,
        text: summary::top_kernels(&tables, top).unwrap_or_default(),
    })
}
