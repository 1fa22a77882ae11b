//! `plugin`: a transform from a plugin library. It sees each batch of records and returns
//! those that go on, with the columns it adds; see [`crate::plugin`].
//!
//! This is what it does to records; its options, checks and explanation are the Plan's
//! ([`crate::plan::transform::plugin`]).

use std::sync::Mutex;

use crate::chunk::Chunk;
use crate::plugin::{Plugin, PluginTransform};

use super::apply::{Apply, At};
use crate::plan::transform::plugin::Plan;

/// The transform a plan of this kind compiled to, ready to run.
pub(super) fn build(plan: &Plan) -> Result<Box<dyn Apply>, String> {
    let plugin = Plugin::load(&plan.plugin.library).map_err(|e| e.explain())?;
    let instance = PluginTransform::create(plugin, &plan.options).map_err(|e| e.explain())?;
    Ok(Box::new(Running(Mutex::new(instance))))
}

/// An instance is called by one thread at a time, and sees chunks in arrival order.
#[derive(Debug)]
struct Running(Mutex<PluginTransform>);

impl Apply for Running {
    fn apply(&self, chunk: &mut Chunk, at: &At<'_>) {
        let mut plugin = self.0.lock().expect("plugin calls catch their panics");
        if let Err(e) = plugin.apply(chunk, at.meta) {
            // The records go on as they came.
            at.failures.record_many(chunk.len() as u64, || {
                format!(
                    "{} records of stream {}: {e}",
                    chunk.batch.kind().name(),
                    chunk.stream
                )
            });
        }
    }

    fn sequential(&self) -> bool {
        true
    }
}
