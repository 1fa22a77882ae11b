//! What a run or a replay made: each sink's files, then the post-steps run on its records.

use std::path::{Path, PathBuf};

use crate::messages::{self, Level, Message};
use crate::plan::Plan;
use crate::plan::sink::{SinkKind, Writer};
use crate::progress::Board;
use crate::{post, stage};

/// Lists what each sink wrote, then runs the post-steps (saying on `board` which one
/// runs, and taking what `collect`'s outlets collected beside the sinks as read already);
/// a sink or a required step that failed is an error message (the command then fails),
/// an optional step a warning.
pub(super) fn outputs(
    plan: &Plan,
    report: &mut stage::Report,
    spool: &Path,
    open: post::Reopen<'_>,
    collect: post::Collect,
    board: &Board,
    out: &mut String,
) {
    let collected = collect.finish(report);
    let report = &*report;
    for sink in &report.sinks {
        match &sink.outcome {
            Ok(paths) => {
                out.push_str(&format!("  {}: {} records", sink.name, sink.records));
                for path in paths {
                    out.push_str(&format!("\n    {}", path.display()));
                }
                out.push('\n');
            }
            Err(e) => messages::error(format_args!("sink `{}`: {e}", sink.name)),
        }
    }
    for (name, count, first) in &report.failures {
        messages::warning(format_args!(
            "transform `{name}` failed on {count} records; first: {}",
            first.join("; ")
        ));
    }
    for disagreement in &report.disagreements {
        messages::warning(format_args!("the counter passes disagree: {disagreement}"));
    }
    let databases: Vec<&Path> = (plan.sinks.iter())
        .filter(|s| matches!(&s.writer, Writer::Builtin(f) if f.kind() == SinkKind::Rocpd))
        .filter_map(|s| report.sinks.iter().find(|r| r.name == s.name))
        .filter_map(|r| r.outcome.as_ref().ok())
        .flatten()
        .map(PathBuf::as_path)
        .collect();
    for context in &plan.contexts {
        if let Some(trace) = &context.thread_trace {
            let catalog = &report.catalog;
            crate::thread_trace::outputs(&context.name, trace, spool, catalog, &databases, out);
        }
    }
    for step in post::run(plan, spool, open, collected, &report.catalog, board) {
        match step.outcome {
            Ok(done) => {
                if let Some(why) = &done.partial {
                    messages::warning(format_args!(
                        "post-step `{}` holds part of the run's records, and says so: {why}",
                        step.name
                    ));
                }
                out.push_str(&format!("  {}:", step.name));
                for path in &done.paths {
                    out.push_str(&format!("\n    {}", path.display()));
                }
                out.push('\n');
                out.push_str(&done.text);
            }
            Err(e) => {
                let level = if step.required {
                    Level::Error
                } else {
                    Level::Warning
                };
                messages::emit(&Message::new(
                    level,
                    format_args!("post-step `{}`: {e}", step.name),
                ));
            }
        }
    }
}
