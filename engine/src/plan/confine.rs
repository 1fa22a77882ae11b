//! Where a plan writes. A plan read back from a spool may come from anyone: before rocflow
//! follows it, every output must stay inside the directory the replay runs in, and every
//! name that becomes a file name (an aggregate's table is named after it) must be a plain
//! name, as the pipeline compiler makes them.

use std::path::{Component, Path};

use crate::pipeline::model::PostStep;

use super::{Plan, TransformOpPlan};

impl Plan {
    /// What this plan writes outside the current directory (an absolute path, a `..`), or
    /// names as a file that is no plain name: one line each, empty when it stays inside.
    pub fn escapes(&self) -> Vec<String> {
        let sinks = (self.sinks.iter()).map(|s| (format!("sink `{}`", s.name), s.path.as_str()));
        let posts = (self.posts.iter())
            .filter_map(|p| written(&p.step).map(|path| (format!("post-step `{}`", p.name), path)));
        let paths = sinks
            .chain(posts)
            .filter(|(_, path)| !inside(Path::new(path)))
            .map(|(what, path)| format!("{what} writes to `{path}`"));
        let names = (self.stages.transforms.iter())
            .filter(|t| matches!(t.op, TransformOpPlan::Aggregate(_)) && !plain(&t.name))
            .map(|t| format!("table `{}` is not a plain name", t.name.escape_debug()));
        paths.chain(names).collect()
    }
}

/// The path a post-step writes, if it writes one.
fn written(step: &PostStep) -> Option<&str> {
    match step {
        PostStep::Summary { path, .. } => Some(path.as_deref().unwrap_or("summary")),
        PostStep::Sql { path, .. } | PostStep::Report { path, .. } => Some(path),
        PostStep::Command { .. } => None,
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
