//! Counter definitions: the counters of rocprofiler-sdk's YAML files, loaded in either
//! schema, merged across files and looked up by name.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::counter::{Counter, Definition};
use crate::diagnostic::{Diagnostic, Error, Source};
use crate::schema::{self, Schema};
use crate::yaml::Document;

/// The file rocprofiler-sdk installs, relative to a ROCm installation.
pub const INSTALLED_PATH: &str = "share/rocprofiler-sdk/counter_defs.yaml";

/// A set of counter definitions, as loaded from rocprofiler-sdk's YAML files.
#[derive(Debug, Clone)]
pub struct Definitions {
    counters: Vec<Counter>,
    by_name: HashMap<String, usize>,
    schema: Schema,
    warnings: Vec<Diagnostic>,
}

impl Definitions {
    /// Loads a file in either schema (told apart by its top-level `rocprofiler-sdk` key).
    pub fn load(path: &Path) -> Result<Self, Error> {
        Self::parse(&Source::read(path)?)
    }

    /// Loads the definitions at `explicit`, or else the first found of
    /// [`default_locations`].
    pub fn load_default(explicit: Option<&Path>) -> Result<Self, Error> {
        Self::load(&locate(explicit)?)
    }

    /// Parses definitions from text already read.
    pub fn parse(source: &Arc<Source>) -> Result<Self, Error> {
        let doc = Document::parse(source)?;
        let parsed = schema::read(&doc)?;
        let mut definitions = Definitions {
            counters: Vec::with_capacity(parsed.counters.len()),
            by_name: HashMap::with_capacity(parsed.counters.len()),
            schema: parsed.schema,
            warnings: parsed.warnings,
        };
        definitions.extend_counters(parsed.counters)?;
        Ok(definitions)
    }

    /// Adds the counters of another file, the way rocprofiler-sdk takes extra counter files
    /// (`rocprofv3 -E`): new counters are appended, and a counter already known gains the
    /// architectures it lacked. Defining a counter again on an architecture it already has
    /// is an error, as the SDK would silently keep only the first.
    pub fn extend(&mut self, other: Definitions) -> Result<(), Error> {
        self.warnings.extend(other.warnings);
        self.extend_counters(other.counters)
    }

    /// Adds counters; within one file names are unique (the schema readers see to it).
    fn extend_counters(&mut self, counters: Vec<Counter>) -> Result<(), Error> {
        let mut errors = Vec::new();
        for counter in counters {
            let Some(&i) = self.by_name.get(&counter.name) else {
                self.by_name
                    .insert(counter.name.clone(), self.counters.len());
                self.counters.push(counter);
                continue;
            };
            let existing = &mut self.counters[i];
            for definition in counter.definitions {
                let taken = definition
                    .architectures
                    .iter()
                    .find(|a| existing.definition_for(a).is_some());
                match taken {
                    Some(arch) => errors.push(
                        Diagnostic::error(format!(
                            "counter `{}` is already defined for {arch}",
                            counter.name
                        ))
                        .at(definition.location.clone())
                        .note(format!("defined at {}", existing.location)),
                    ),
                    None => existing.definitions.push(definition),
                }
            }
        }
        match errors.is_empty() {
            true => Ok(()),
            false => Err(Error::Invalid(errors)),
        }
    }

    /// Which schema the (first) file was written in.
    pub fn schema(&self) -> Schema {
        self.schema
    }

    /// Problems that did not stop loading, such as a legacy file without `schema-version`.
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }

    /// Every counter, in file order.
    pub fn counters(&self) -> &[Counter] {
        &self.counters
    }

    pub fn get(&self, name: &str) -> Option<&Counter> {
        self.by_name.get(name).map(|&i| &self.counters[i])
    }

    /// The definition of counter `name` on `arch`, if it exists there.
    pub fn definition(&self, name: &str, arch: &str) -> Option<&Definition> {
        self.get(name)?.definition_for(arch)
    }

    /// Whether counter `name` is defined for `arch`.
    pub fn is_defined(&self, name: &str, arch: &str) -> bool {
        self.definition(name, arch).is_some()
    }

    /// Every architecture some counter is defined on, sorted.
    pub fn architectures(&self) -> BTreeSet<&str> {
        self.counters
            .iter()
            .flat_map(Counter::architectures)
            .collect()
    }
}

/// Where counter definitions are looked for when no file is named, in order: rocprofiler-
/// sdk's own override `$ROCPROFILER_METRICS_PATH/counter_defs.yaml`, then the file installed
/// under `$ROCM_PATH`, then under `/opt/rocm`.
pub fn default_locations() -> Vec<PathBuf> {
    locations_with(|name| std::env::var_os(name))
}

/// [`default_locations`] with the environment `env` gives.
pub fn locations_with(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Vec<PathBuf> {
    let metrics =
        env("ROCPROFILER_METRICS_PATH").map(|dir| Path::new(&dir).join("counter_defs.yaml"));
    let rocm = env("ROCM_PATH").map(|dir| Path::new(&dir).join(INSTALLED_PATH));
    let opt = Some(Path::new("/opt/rocm").join(INSTALLED_PATH));
    let mut found: Vec<PathBuf> = Vec::new();
    for path in [metrics, rocm, opt].into_iter().flatten() {
        if !found.contains(&path) {
            found.push(path);
        }
    }
    found
}

/// The definition file to use: `explicit` if given (it must exist), else the first of
/// [`default_locations`] that exists; none is an error listing where it looked.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(path) = explicit {
        return Ok(path.to_owned());
    }
    let searched = default_locations();
    match searched.iter().find(|p| p.is_file()) {
        Some(path) => Ok(path.clone()),
        None => Err(Error::NotFound { searched }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_locations_follow_the_sdk_then_rocm_path_then_opt() {
        let env = |name: &str| match name {
            "ROCPROFILER_METRICS_PATH" => Some("/m".into()),
            "ROCM_PATH" => Some("/rocm-6.4".into()),
            _ => None,
        };
        assert_eq!(
            locations_with(env),
            [
                PathBuf::from("/m/counter_defs.yaml"),
                PathBuf::from("/rocm-6.4/share/rocprofiler-sdk/counter_defs.yaml"),
                PathBuf::from("/opt/rocm/share/rocprofiler-sdk/counter_defs.yaml"),
            ]
        );
        assert_eq!(
            locations_with(|_| None),
            [PathBuf::from(
                "/opt/rocm/share/rocprofiler-sdk/counter_defs.yaml"
            )]
        );
    }
}
