//! The rocpd sink's options: `layout` says how the run's processes map to databases.

use serde::{Deserialize, Serialize};

/// How the run's processes map to databases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// One database per process, at the path with that process's placeholders filled in,
    /// as rocprofv3 writes.
    #[default]
    PerProcess,
    /// One database for the whole run.
    Single,
}

/// The sink's `options`; `Default` holds their defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    pub layout: Layout,
}
