//! A plugin as the Plan refers to it: by the name the pipeline gave, and the library found.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A plugin as a pipeline names it, and the library that name found.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PluginRef {
    /// As written: a name or a path.
    pub name: String,
    /// The library, as found when the pipeline was compiled.
    pub library: PathBuf,
}

impl std::fmt::Display for PluginRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "plugin {} at {}", self.name, self.library.display())
    }
}
