//! Record buffers, as rocprofiler-sdk keeps them: records are copied in as operations
//! complete and handed to the tool's callback in batches, when the watermark is reached or
//! on a flush. A full buffer either waits for delivery (lossless) or drops and counts.

use std::ffi::c_void;
use std::sync::Mutex;

use rocflow_core::abi::{BufferCallback, Handle, RecordHeader};
use rocflow_core::sdk::BufferPolicy;

/// How a buffer was created.
pub struct BufferDef {
    pub context: Handle,
    pub size: usize,
    pub watermark: usize,
    pub policy: BufferPolicy,
    pub callback: BufferCallback,
    pub data: *mut c_void,
}

// The tool's callback data is only handed back to the tool.
unsafe impl Send for BufferDef {}
unsafe impl Sync for BufferDef {}

/// Records waiting for delivery: payloads in an 8-byte aligned arena, with their headers.
#[derive(Default)]
pub struct Pending {
    words: Vec<u64>,
    records: Vec<(u32, u32, usize)>,
    dropped: u64,
}

impl Pending {
    fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    fn push<T: Copy>(&mut self, category: u32, kind: u32, record: &T) {
        let words = std::mem::size_of::<T>().div_ceil(8);
        let at = self.words.len();
        self.words.reserve(words);
        // SAFETY: the arena has room for `words` 8-byte words at `at`, enough for a `T`
        // whose alignment is at most 8 (every SDK record's is); the record's bytes
        // initialize them (padding words past its size stay as they were: never read).
        unsafe {
            std::ptr::write(self.words.as_mut_ptr().add(at).cast::<T>(), *record);
            self.words.set_len(at + words);
        }
        self.records.push((category, kind, at));
    }

    /// Record `i` of the arena: its category, kind and words.
    fn record(&self, i: usize) -> (u32, u32, &[u64]) {
        let (category, kind, at) = self.records[i];
        let end = self.records.get(i + 1).map_or(self.words.len(), |r| r.2);
        (category, kind, &self.words[at..end])
    }

    fn push_words(&mut self, category: u32, kind: u32, words: &[u64]) {
        self.records.push((category, kind, self.words.len()));
        self.words.extend_from_slice(words);
    }

    pub fn clear(&mut self) {
        self.words.clear();
        self.records.clear();
        self.dropped = 0;
    }
}

/// Records one thread produced and has not yet handed to a buffer. Threads add records
/// here and move them into the shared buffer a group at a time, as the SDK's producers
/// do, rather than contending for the buffer's lock on every record.
#[derive(Default)]
pub struct Staged(Pending);

impl Staged {
    pub fn push<T: Copy>(&mut self, category: u32, kind: u32, record: &T) {
        self.0.push(category, kind, record);
    }

    pub fn len(&self) -> usize {
        self.0.records.len()
    }
}

pub struct Buffer {
    pub id: Handle,
    pub def: BufferDef,
    pub pending: Mutex<Pending>,
    /// A delivered batch's arena, kept for the next one.
    spare: Mutex<Pending>,
    /// Held while the callback runs: one buffer's batches reach the tool one at a time.
    pub delivering: Mutex<Headers>,
}

/// The headers and header pointers of a delivered batch, kept for the next one.
#[derive(Default)]
pub struct Headers {
    headers: Vec<RecordHeader>,
    pointers: Vec<*mut RecordHeader>,
}

// SAFETY: the pointers are only set and used during one delivery, under the lock, and
// cleared before it is released.
unsafe impl Send for Headers {}

impl Buffer {
    pub fn new(id: Handle, def: BufferDef) -> Buffer {
        Buffer {
            id,
            def,
            pending: Mutex::new(Pending::default()),
            spare: Mutex::new(Pending::default()),
            delivering: Mutex::new(Headers::default()),
        }
    }

    /// Adds the records a thread staged, in order, emptying `staged`; delivers a batch
    /// whenever it reaches the watermark (or, lossless, when a record does not fit).
    pub fn push(&self, staged: &mut Staged) {
        let staged = &mut staged.0;
        let mut pending = self.pending.lock().unwrap();
        for i in 0..staged.records.len() {
            let (category, kind, words) = staged.record(i);
            if pending.bytes() + words.len() * 8 > self.def.size {
                match self.def.policy {
                    BufferPolicy::Discard => {
                        pending.dropped += 1;
                        continue;
                    }
                    BufferPolicy::Lossless => {
                        let full = self.swap(&mut pending);
                        drop(pending);
                        self.deliver(full);
                        pending = self.pending.lock().unwrap();
                    }
                }
            }
            pending.push_words(category, kind, words);
            if pending.bytes() >= self.def.watermark {
                let batch = self.swap(&mut pending);
                drop(pending);
                self.deliver(batch);
                pending = self.pending.lock().unwrap();
            }
        }
        staged.clear();
    }

    /// Takes the pending batch, leaving the spare arena in its place.
    fn swap(&self, pending: &mut Pending) -> Pending {
        let spare = std::mem::take(&mut *self.spare.lock().unwrap());
        std::mem::replace(pending, spare)
    }

    /// Delivers whatever is pending (`rocprofiler_flush_buffer`).
    pub fn flush(&self) {
        let batch = self.swap(&mut self.pending.lock().unwrap());
        if !batch.records.is_empty() || batch.dropped > 0 {
            self.deliver(batch);
        }
    }

    fn deliver(&self, mut batch: Pending) {
        let mut one_at_a_time = self.delivering.lock().unwrap();
        let Headers { headers, pointers } = &mut *one_at_a_time;
        let base = batch.words.as_mut_ptr();
        headers.extend(
            batch
                .records
                .iter()
                .map(|&(category, kind, at)| RecordHeader {
                    category,
                    kind,
                    // SAFETY: `at` is an offset inside the arena.
                    payload: unsafe { base.add(at) }.cast(),
                }),
        );
        pointers.extend(headers.iter_mut().map(|h| h as *mut RecordHeader));
        // SAFETY: the callback is the tool's, called with the arguments the SDK passes:
        // the headers and payloads stay alive until it returns.
        unsafe {
            (self.def.callback)(
                self.def.context,
                self.id,
                pointers.as_mut_ptr(),
                pointers.len(),
                self.def.data,
                batch.dropped,
            )
        };
        pointers.clear();
        headers.clear();
        drop(one_at_a_time);
        batch.clear();
        *self.spare.lock().unwrap() = batch;
    }
}
