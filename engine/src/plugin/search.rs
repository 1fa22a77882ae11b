//! Where plugins are found: `plugin = "NAME"` is `librocflow_plugin_NAME.so` in a directory
//! of `ROCFLOW_PLUGIN_PATH` (`:`-separated, searched in order), else next to the `rocflow`
//! binary (or in its build tree's `deps/`, where `cargo test` builds the example plugins).
//! A name is letters, digits, `_` and `-`, never a path: a pipeline cannot make rocflow
//! open a file outside these directories.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::path::{Path, PathBuf};

/// The environment variable of plugin directories.
pub const PATH_VAR: &str = "ROCFLOW_PLUGIN_PATH";

const PREFIX: &str = "librocflow_plugin_";
const SUFFIX: &str = ".so";

/// The directories plugins are looked for in, in order.
#[derive(Debug, Clone, Default)]
pub struct Search {
    dirs: Vec<PathBuf>,
}

/// A plugin library found in a directory.
#[derive(Debug)]
pub struct Found {
    /// What a pipeline names it by.
    pub name: String,
    pub path: PathBuf,
    /// Libraries of the same name later on the path, which this one hides.
    pub shadows: Vec<PathBuf>,
}

/// Why a pipeline's `plugin = "…"` names no library.
#[derive(Debug, thiserror::Error)]
pub enum NotFound {
    #[error("`{0}` is not a plugin name: a name is letters, digits, `_` and `-`")]
    NotAName(String),
    #[error("no plugin named `{name}` ({file} is in none of: {})", dirs.join(", "))]
    Name {
        name: String,
        file: String,
        dirs: Vec<String>,
    },
}

impl Search {
    /// `ROCFLOW_PLUGIN_PATH`, then the directory of the running binary and its `deps/`.
    pub fn from_env() -> Search {
        let mut dirs: Vec<PathBuf> = std::env::var_os(PATH_VAR)
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let exe = std::env::current_exe().ok();
        if let Some(dir) = exe.as_deref().and_then(Path::parent) {
            dirs.push(dir.to_path_buf());
            let deps = dir.join("deps");
            if deps.is_dir() {
                dirs.push(deps);
            }
        }
        Search { dirs }
    }

    pub fn with_dirs(dirs: Vec<PathBuf>) -> Search {
        Search { dirs }
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The library of the plugin `name`: the first in the directories.
    pub fn resolve(&self, name: &str) -> Result<PathBuf, NotFound> {
        if !is_name(name) {
            return Err(NotFound::NotAName(name.to_owned()));
        }
        let file = file_name(name);
        self.dirs
            .iter()
            .map(|dir| dir.join(&file))
            .find(|path| path.is_file())
            .ok_or_else(|| NotFound::Name {
                name: name.to_owned(),
                file,
                dirs: self.dirs.iter().map(|d| d.display().to_string()).collect(),
            })
    }

    /// Every plugin library in the directories, by name; the first of a name wins.
    pub fn list(&self) -> Vec<Found> {
        let mut found: BTreeMap<String, Found> = BTreeMap::new();
        for dir in &self.dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            paths.sort();
            for path in paths {
                let Some(name) = plugin_name(&path) else {
                    continue;
                };
                match found.entry(name) {
                    Entry::Occupied(first) => first.into_mut().shadows.push(path),
                    Entry::Vacant(slot) => {
                        let name = slot.key().clone();
                        slot.insert(Found {
                            name,
                            path,
                            shadows: Vec::new(),
                        });
                    }
                }
            }
        }
        found.into_values().collect()
    }
}

/// The file of the plugin `name`.
pub fn file_name(name: &str) -> String {
    format!("{PREFIX}{name}{SUFFIX}")
}

/// Whether a pipeline may name a plugin `name`.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The plugin name of a library file, if it is named as plugins are.
fn plugin_name(path: &Path) -> Option<String> {
    let file = path.file_name()?.to_str()?;
    let name = file.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    (is_name(name) && path.is_file()).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_in_path_order_and_are_never_paths() {
        let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for dir in [&first, &second] {
            std::fs::write(dir.path().join("librocflow_plugin_a.so"), "").unwrap();
        }
        std::fs::write(second.path().join("librocflow_plugin_b.so"), "").unwrap();
        std::fs::write(second.path().join("librocflow_plugin_c.d.so"), "").unwrap();
        std::fs::write(second.path().join("libother.so"), "").unwrap();
        let search = Search::with_dirs(vec![first.path().into(), second.path().into()]);
        let a = search.resolve("a").unwrap();
        assert_eq!(a, first.path().join("librocflow_plugin_a.so"));
        let missing = search.resolve("c").unwrap_err().to_string();
        assert!(missing.contains("librocflow_plugin_c.so"), "{missing}");
        assert!(
            missing.contains(&first.path().display().to_string()),
            "{missing}"
        );
        // `librocflow_plugin_../../x.so` would be a file two directories up.
        for path in ["../../x", "/tmp/a", "./a", "c.d", "a b", ""] {
            assert!(
                matches!(search.resolve(path), Err(NotFound::NotAName(_))),
                "{path}"
            );
        }

        let listed = search.list();
        let names: Vec<&str> = listed.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(
            listed[0].shadows,
            [second.path().join("librocflow_plugin_a.so")]
        );
    }
}
