//! Counter checks of a pipeline: derived expressions parse, every name resolves, and
//! counters exist for the selected architectures when a definition file is available.

use crate::plan::AgentSelector;

use super::model;
use super::value::Step;

/// A fault found in a `[context.counters]` table.
pub(super) struct Finding {
    /// Path below `context[i].counters`.
    pub path: Vec<Step<'static>>,
    /// Byte offset and length inside the string value, where the fault has a column.
    pub offset: Option<usize>,
    pub len: usize,
    pub message: String,
    pub hint: Option<String>,
}

/// The counter definitions a pipeline is checked against, if any were found.
#[derive(Default)]
pub(super) struct CounterCheck {}

impl CounterCheck {
    pub fn source(&self) -> Option<&str> {
        None
    }

    pub fn check<'a>(
        &self,
        _counters: &model::Counters,
        _derived: &[(String, String)],
        _agents: impl Iterator<Item = &'a AgentSelector>,
    ) -> Vec<Finding> {
        Vec::new()
    }
}
