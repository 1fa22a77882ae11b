//! A plugin transform at work: each chunk goes to the plugin as a batch, and the batch it
//! returns says which records go on and which columns they gain.

use std::panic::{AssertUnwindSafe, catch_unwind};

use rocflow_plugin::abi::{FFI_ArrowArray, FFI_ArrowSchema};
use rocflow_plugin::batch::{Check, import};

use super::batch::{Change, Lent, records};
use super::library::{Instance, TransformFns};
use super::{Error, Plugin};
use crate::catalog::StreamMeta;
use crate::chunk::Chunk;

/// An instance of a plugin transform.
#[derive(Debug)]
pub struct PluginTransform {
    plugin: &'static Plugin,
    fns: &'static TransformFns,
    instance: Instance,
}

impl PluginTransform {
    /// Creates an instance with the pipeline entry's options.
    pub fn create(
        plugin: &'static Plugin,
        options: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<PluginTransform, Error> {
        let fns = plugin.transform()?;
        Ok(PluginTransform {
            plugin,
            fns,
            instance: plugin.create(fns.create, fns.destroy, options)?,
        })
    }

    /// Runs the plugin on a chunk: the rows it drops are dropped, the columns it adds are
    /// added. On an error the chunk is left as it was.
    pub fn apply(&mut self, chunk: &mut Chunk, meta: &StreamMeta) -> Result<(), Error> {
        let input = records(chunk, meta, true);
        let columns = input.schema();
        let bad = |problem: String| Error::Output {
            plugin: self.plugin.name.clone(),
            problem,
        };
        let mut lent = Lent::new(chunk.batch.kind().name(), input);
        let (mut schema, mut array) = (FFI_ArrowSchema::empty(), FFI_ArrowArray::empty());
        // SAFETY: the plugin's `process`, with the instance it created (called through
        // `&mut self`: one thread at a time), a batch lent for the call and released
        // structs for the output, as the ABI says.
        let status = unsafe {
            (self.fns.process)(
                self.instance.pointer,
                &mut lent.batch,
                &mut schema,
                &mut array,
            )
        };
        drop(lent);
        self.plugin.check(status)?;
        if schema.release.is_none() || array.is_released() {
            return Err(bad("no batch".into()));
        }
        // SAFETY: the plugin filled the structs with a C Data Interface batch, which the
        // ABI trusts it for as `import` says; the contents are checked. arrow-rs asserts
        // some of what it trusts: a panic there is the plugin's error too.
        let output = catch_unwind(AssertUnwindSafe(|| unsafe {
            import(&schema, array, Check::Full)
        }))
        .map_err(|_| bad("a batch arrow-rs cannot import".into()))?
        .map_err(|e| bad(e.to_string()))?;
        let change =
            Change::read(&output, &columns, chunk.len()).map_err(|e| bad(e.to_string()))?;
        if let Some(keep) = change.keep {
            chunk.retain(&keep);
        }
        chunk.extra.extend(change.added);
        Ok(())
    }
}
