//! A plugin sink at work: created and opened when its first records arrive, handed each
//! chunk (and aggregate table) as a batch, then finished.

use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use rocflow_plugin::abi;

use super::batch::{Lent, records};
use super::library::{Instance, SinkFns};
use super::{Error, Plugin};
use crate::arrow;
use crate::catalog::Catalog;
use crate::chunk::Chunk;
use crate::sink::{Sink, SinkError};
use crate::transform::Table;

/// An open instance of a plugin sink.
#[derive(Debug)]
pub struct PluginSink {
    plugin: &'static Plugin,
    fns: &'static SinkFns,
    instance: Instance,
}

impl PluginSink {
    /// Checks that the plugin is a sink that takes these options (it writes nothing).
    pub fn check(
        plugin: &'static Plugin,
        options: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), Error> {
        let fns = plugin.sink()?;
        plugin.create(fns.create, fns.destroy, options).map(drop)
    }

    /// Creates an instance with the pipeline entry's options and opens its output at `path`.
    pub fn open(
        plugin: &'static Plugin,
        options: &serde_json::Map<String, serde_json::Value>,
        path: &Path,
    ) -> Result<PluginSink, Error> {
        let fns = plugin.sink()?;
        let sink = PluginSink {
            plugin,
            fns,
            instance: plugin.create(fns.create, fns.destroy, options)?,
        };
        let path =
            CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| Error::Failed {
                plugin: plugin.name.clone(),
                message: format!("the path {} holds a NUL character", path.display()),
            })?;
        // SAFETY: the plugin's `open`, with its instance and a NUL-terminated path valid for
        // the call.
        let status = unsafe { (fns.open)(sink.instance.pointer, path.as_ptr()) };
        plugin.check(status)?;
        Ok(sink)
    }

    /// Writes one batch of `table`.
    fn send(&mut self, table: &str, batch: arrow_array::RecordBatch) -> Result<(), Error> {
        let mut lent = Lent::new(table, batch);
        // SAFETY: the plugin's `write`, with its instance (called through `&mut self`: one
        // thread at a time) and a batch lent for the call.
        let status = unsafe { (self.fns.write)(self.instance.pointer, &mut lent.batch) };
        self.plugin.check(status)
    }
}

impl Sink for PluginSink {
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
        let batches: Vec<_> = window
            .par_iter()
            .map(|chunk| records(chunk, catalog.stream(chunk.stream), false))
            .collect();
        for (chunk, batch) in window.iter().zip(batches) {
            self.send(chunk.batch.kind().name(), batch)?;
        }
        Ok(())
    }

    fn table(&mut self, table: &Table) -> Result<(), SinkError> {
        Ok(self.send(&table.name, arrow::records::table(table))?)
    }

    fn finish(self: Box<Self>, _: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        let mut written = abi::Paths::default();
        // SAFETY: the plugin's `finish`, with its instance and a `Paths` to fill.
        let status = unsafe { (self.fns.finish)(self.instance.pointer, &mut written) };
        self.plugin.check(status)?;
        if written.count == 0 {
            return Ok(Vec::new());
        }
        if written.paths.is_null() {
            return Err(Error::Output {
                plugin: self.plugin.name.clone(),
                problem: format!("{} paths written, at a null pointer", written.count),
            }
            .into());
        }
        // SAFETY: the plugin filled `written` with `count` NUL-terminated strings, which stay
        // valid until the instance is destroyed (when `self` drops, after this).
        let paths = unsafe { std::slice::from_raw_parts(written.paths, written.count) };
        Ok(paths
            .iter()
            // SAFETY: as above.
            .map(|&p| PathBuf::from(OsStr::from_bytes(unsafe { CStr::from_ptr(p) }.to_bytes())))
            .collect())
    }
}
