//! The OTF2 sink's options.

use serde::{Deserialize, Serialize};

/// The sink's `options`; `Default` holds their defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// Taken since the first pipeline schema, and without effect: every event of the
    /// records the sink takes is written.
    pub offload_events: bool,
    /// Where the archive's files go.
    pub layout: Layout,
}

/// Where an OTF2 archive's files go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// The path is a directory holding `traces.otf2` (the anchor), `traces.def` and
    /// `traces/`.
    #[default]
    Directory,
    /// The path names the archive: `PATH.otf2`, `PATH.def` and `PATH/`, side by side where
    /// other outputs may be, as rocprofv3 writes `NAME_results.otf2`.
    Archive,
}
