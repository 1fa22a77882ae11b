//! What a kind of transform does to records at run time, and what it sees of the run.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::record::Meta;
use crate::table::Table;

use super::rename::Rename;

/// What a kind of transform does to records, at run time.
pub(super) trait Apply: Send + Sync + std::fmt::Debug {
    /// Applies the transform to a chunk of a kind it takes.
    fn apply(&self, chunk: &mut Chunk, at: &At<'_>);

    /// Whether chunks must come one at a time, in arrival order.
    fn sequential(&self) -> bool {
        false
    }

    /// Metadata for the records the transform makes, given a stream's metadata as it
    /// grows; applied to the stream before any of its later records.
    fn describe(&self, _stream: u16, _meta: &StreamMeta) -> Vec<Meta> {
        Vec::new()
    }

    /// Records the transform still holds when the run's records end.
    fn finish(&self, _failures: &Failures) -> Vec<Chunk> {
        Vec::new()
    }

    /// The renaming it applies to kernel symbols, for a kernel-name transform.
    fn rename(&self) -> Option<&Rename> {
        None
    }

    /// The table it made, for an aggregate, once every chunk has passed.
    fn table(&self, _name: &str) -> Option<Table> {
        None
    }
}

/// What a transform sees of the run besides the chunk.
pub(super) struct At<'a> {
    pub(super) meta: &'a StreamMeta,
    /// The run's first timestamp, for time windows.
    pub(super) origin_ns: u64,
    pub(super) failures: &'a Failures,
}

/// How many failures of one transform are kept with their record for the report.
const KEPT_FAILURES: usize = 5;

/// Failures of a transform on individual records.
#[derive(Debug, Default)]
pub struct Failures {
    /// Records failed on.
    pub count: AtomicU64,
    /// Failures (each of one or more records), for the first messages.
    failures: AtomicU64,
    pub first: Mutex<Vec<String>>,
}

impl Failures {
    pub(super) fn record(&self, message: impl FnOnce() -> String) {
        self.record_many(1, message);
    }

    /// A failure that concerns `records` records.
    pub(super) fn record_many(&self, records: u64, message: impl FnOnce() -> String) {
        self.count.fetch_add(records, Ordering::Relaxed);
        if self.failures.fetch_add(1, Ordering::Relaxed) < KEPT_FAILURES as u64 {
            self.first
                .lock()
                .expect("no panics while holding the lock")
                .push(message());
        }
    }
}

/// Names a record in a failure message.
pub(super) fn describe(chunk: &Chunk, i: usize) -> String {
    format!(
        "{} record #{i} of stream {}",
        chunk.batch.kind().name(),
        chunk.stream
    )
}

/// Keeps the records of a chunk for which `keep` holds.
pub(super) fn retain(chunk: &mut Chunk, keep: impl FnMut(usize) -> bool) {
    let keep: Vec<bool> = (0..chunk.len()).map(keep).collect();
    chunk.retain(&keep);
}
