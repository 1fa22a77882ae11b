//! A plugin sink at work: created and opened when its first records arrive, handed each
//! chunk (and aggregate table) as a batch, then finished.

use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use rocflow_plugin::abi;

use super::staging::Staging;
use super::{Sink, SinkError};
use crate::arrow;
use crate::catalog::Catalog;
use crate::chunk::Chunk;
use crate::plugin::batch::{Lent, records};
use crate::plugin::library::{Instance, SinkFns};
use crate::plugin::{Error, Plugin};
use crate::table::Table;

/// An open instance of a plugin sink. The plugin writes in a staging directory, and what
/// it wrote there moves to the sink's path when it has finished, as every sink's output.
pub struct PluginSink {
    plugin: &'static Plugin,
    fns: &'static SinkFns,
    instance: Instance,
    staging: Staging,
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

    /// Creates an instance with the pipeline entry's options and opens its output, to be
    /// found at `path` once the sink has finished.
    pub fn open(
        plugin: &'static Plugin,
        options: &serde_json::Map<String, serde_json::Value>,
        path: &Path,
    ) -> Result<PluginSink, SinkError> {
        let fns = plugin.sink()?;
        let staging = Staging::create(path.to_path_buf())?;
        let path = staging.file();
        let sink = PluginSink {
            plugin,
            fns,
            instance: plugin.create(fns.create, fns.destroy, options)?,
            staging,
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
        if written.count > 0 && written.paths.is_null() {
            return Err(Error::Output {
                plugin: self.plugin.name.clone(),
                problem: format!("{} paths written, at a null pointer", written.count),
            }
            .into());
        }
        let reported: Vec<PathBuf> = if written.count == 0 {
            Vec::new()
        } else {
            // SAFETY: the plugin filled `written` with `count` NUL-terminated strings, which
            // stay valid until the instance is destroyed (when `self` drops, after this).
            let paths = unsafe { std::slice::from_raw_parts(written.paths, written.count) };
            paths
                .iter()
                // SAFETY: as above.
                .map(|&p| PathBuf::from(OsStr::from_bytes(unsafe { CStr::from_ptr(p) }.to_bytes())))
                .collect()
        };
        // What the plugin wrote in the staging directory moves beside the sink's path;
        // the paths it reported there follow.
        let names = self.staging.entries()?;
        let reported: Vec<PathBuf> = (reported.into_iter())
            .map(|p| self.staging.committed_path(p))
            .collect();
        let PluginSink { staging, .. } = *self;
        staging.commit_files(&names)?;
        Ok(reported)
    }
}
