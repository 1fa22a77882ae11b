//! The JSON sink's options: it has none. It writes the document `rocprofv3 --output-format
//! json` writes, whose layout scripts rely on, so there is nothing to choose.

use serde::{Deserialize, Serialize};

/// The sink's `options`: none are taken.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {}
