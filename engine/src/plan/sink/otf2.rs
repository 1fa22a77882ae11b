//! The OTF2 sink's options.

use serde::{Deserialize, Serialize};

/// The sink's `options`; `Default` holds their defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// Taken since the first pipeline schema, and without effect: every event of the
    /// records the sink takes is written.
    pub offload_events: bool,
}
