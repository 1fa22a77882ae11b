//! The CSV sink's options: one CSV file per record kind in a directory, simple and readable
//! by anything.

use serde::{Deserialize, Serialize};

/// The sink's `options`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Options {
    /// Whose files: rocflow's (every column of every record kind, one file per kind) or
    /// rocprofv3's, for scripts written against them.
    pub flavour: Flavour,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flavour {
    #[default]
    Rocflow,
    Rocprofv3,
}
