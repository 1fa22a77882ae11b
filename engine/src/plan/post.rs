//! Post-steps as the Plan carries them: what runs once the outputs are written.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::units::{Quantity, UnitError, parse_duration};

/// A post-step of the Plan, by name.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PostPlan {
    pub name: String,
    /// A failure of this step fails the run.
    pub required: bool,
    pub step: PostStep,
}

/// A post-step as a pipeline declares it; carried into the Plan unchanged.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PostStep {
    Summary {
        path: Option<String>,
        top: Option<u32>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        formats: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        by: Vec<String>,
    },
    Sql {
        query: String,
        database: Option<String>,
        path: String,
        format: Option<String>,
        /// How long the query may run; the post-step's default when left out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<Quantity>,
    },
    Report {
        path: String,
        title: Option<String>,
    },
    Command {
        argv: Vec<String>,
        #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
        env: IndexMap<String, String>,
    },
}

/// How long a query may run when its step sets no `timeout`, in nanoseconds.
const DEFAULT_TIME_LIMIT_NS: u64 = 60_000_000_000;

/// A step's time limit in nanoseconds: its `timeout`, else the default.
pub fn time_limit(timeout: Option<&Quantity>) -> Result<u64, UnitError> {
    timeout.map_or(Ok(DEFAULT_TIME_LIMIT_NS), |t| t.value(parse_duration))
}
