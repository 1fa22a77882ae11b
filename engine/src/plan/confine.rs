//! What a plan from anyone may ask for. A plan read back from a spool may come from anyone:
//! before rocflow follows it, every path it reads or writes must stay inside the directory
//! the replay runs in, every name that becomes a file name (an aggregate's table is named
//! after it) must be a plain name, as the pipeline compiler makes them, and its queries
//! must keep to [`Bounds::STRANGER`].

use std::path::{Component, Path};

use crate::plan::{Destination, PostStep};
use crate::units::{format_duration, parse_duration};

use super::bounds::Bounds;
use super::sink::{Format, Writer};
use super::{Plan, TransformOpPlan};

impl Plan {
    /// The plan, to follow as anyone may have written it: its queries' results bounded by
    /// [`Bounds::STRANGER`]. Refused with what it asks for past that (paths out of the
    /// current directory, names that are no plain names, time limits past the bound), one
    /// line each, its names and paths escaped (`\n`): they are anyone's too.
    pub fn bounded(mut self) -> Result<Plan, Vec<String>> {
        let bounds = Bounds::STRANGER;
        let refused: Vec<String> = (self.escapes().into_iter())
            .chain(self.overlong(bounds.query_ns))
            .chain(self.splinters(bounds))
            .collect();
        if !refused.is_empty() {
            return Err(refused);
        }
        self.bounds = Some(bounds);
        Ok(self)
    }

    /// What this plan reads or writes outside the current directory (an absolute path, a
    /// `..`), or names as a file that is no plain name: one line each.
    fn escapes(&self) -> Vec<String> {
        let sinks = (self.sinks.iter()).map(|s| {
            (
                format!("sink `{}` writes to", s.name.escape_debug()),
                s.path.as_str(),
            )
        });
        let posts = (self.posts.iter()).flat_map(|p| {
            let step = format!("post-step `{}`", p.name.escape_debug());
            let written =
                (written(&p.step).into_iter()).map(|path| (format!("{step} writes to"), path));
            let read = read(&p.step).map(|path| (format!("{step} reads"), path));
            written.chain(read).collect::<Vec<_>>()
        });
        let paths = sinks
            .chain(posts)
            .filter(|(_, path)| !inside(Path::new(path)))
            .map(|(what, path)| {
                format!("{what} `{}`, outside this directory", path.escape_debug())
            });
        let names = (self.stages.transforms.iter())
            .filter(|t| matches!(t.op, TransformOpPlan::Aggregate(_)) && !plain(&t.name))
            .map(|t| format!("table `{}` is not a plain name", t.name.escape_debug()));
        paths.chain(names).collect()
    }

    /// The sinks that would cut their output finer than `bounds` allow (a file or a row
    /// group a record long makes millions of them): one line each.
    fn splinters(&self, bounds: Bounds) -> Vec<String> {
        let small = |sink: &str, option: &str, size: u64| {
            (size < bounds.file).then(|| {
                format!(
                    "sink `{}` splits its files at {size} bytes (`{option}`), under {} KiB",
                    sink.escape_debug(),
                    bounds.file >> 10
                )
            })
        };
        let mut found = Vec::new();
        for sink in &self.sinks {
            match &sink.writer {
                Writer::Builtin(Format::Perfetto(options)) => {
                    let split = options.split_size.as_ref();
                    found.extend(split.and_then(|s| small(&sink.name, "split_size", s.bytes)));
                }
                Writer::Builtin(Format::Parquet(options)) => {
                    let most = options.max_file_size.as_ref();
                    found.extend(most.and_then(|s| small(&sink.name, "max_file_size", s.bytes)));
                    if options.row_group_rows < bounds.row_group {
                        found.push(format!(
                            "sink `{}` writes row groups of {} rows (`row_group_rows`), under {}",
                            sink.name.escape_debug(),
                            options.row_group_rows,
                            bounds.row_group
                        ));
                    }
                }
                _ => {}
            }
        }
        found
    }

    /// The `sql` steps that may run past `most` nanoseconds: one line each.
    fn overlong(&self, most: u64) -> Vec<String> {
        (self.posts.iter())
            .filter_map(|p| match &p.step {
                PostStep::Sql {
                    timeout: Some(timeout),
                    ..
                } => match timeout.value(parse_duration) {
                    Ok(ns) if ns > most => Some(format!(
                        "post-step `{}` may run for {}, past {}",
                        p.name.escape_debug(),
                        format_duration(ns),
                        format_duration(most)
                    )),
                    // One that reads as no duration fails when it runs.
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }
}

/// The paths a post-step writes.
fn written(step: &PostStep) -> Vec<&str> {
    match step {
        PostStep::Summary {
            path,
            domain_tables,
            ..
        } => {
            let file = domain_tables.as_ref().and_then(|t| match &t.output {
                Destination::File(file) => Some(file.as_str()),
                Destination::Stdout | Destination::Stderr => None,
            });
            [Some(path.as_deref().unwrap_or("summary")), file]
                .into_iter()
                .flatten()
                .collect()
        }
        PostStep::Sql { path, .. }
        | PostStep::Report { path, .. }
        | PostStep::Analyze { path, .. } => vec![path],
        PostStep::Command { .. } => Vec::new(),
    }
}

/// The path a post-step reads, if it names one (a `sql` step's own database).
fn read(step: &PostStep) -> Option<&str> {
    match step {
        PostStep::Sql { database, .. } => database.as_deref(),
        _ => None,
    }
}

/// Whether `path` names a place under the current directory, whatever its placeholders
/// fill in (they fill in plain names).
fn inside(path: &Path) -> bool {
    path.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// A name as the compiler accepts them: letters, digits, `_`, `-`, `.`, not starting with
/// `.` (so never `..` nor hidden).
fn plain(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_relative_paths_down_from_here_stay_inside() {
        for path in ["out", "out/{hostname}-{pid}.db", "./a/b", "summary"] {
            assert!(inside(Path::new(path)), "{path}");
        }
        for path in ["/etc/x", "../x", "out/../../x", "a/.."] {
            assert!(!inside(Path::new(path)), "{path}");
        }
        assert!(plain("kernels") && plain("per-kernel_2.v1"));
        for name in ["", "..", ".hidden", "a/b", "a\\b", "a\0b"] {
            assert!(!plain(name), "{name:?}");
        }
    }
}
