//! Record buffers, as rocprofiler-sdk keeps them: records are copied in as operations
//! complete and handed to the tool's callback in batches, when the watermark is reached or
//! on a flush. A full buffer either waits for delivery (lossless) or drops and counts.

use std::ffi::c_void;
use std::sync::{Condvar, Mutex};

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
    /// The buffer's second arena, while no batch is out for delivery. The SDK allocates two
    /// buffers of the size asked for, and producers that fill one while the other is still
    /// with the tool wait for it; so does this, whatever the tool's pace.
    pub spare: Mutex<Option<Pending>>,
    /// Signalled when a delivered batch's arena is back.
    returned: Condvar,
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
            spare: Mutex::new(Some(Pending::default())),
            returned: Condvar::new(),
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

    /// Takes the pending batch, leaving the spare arena in its place once the last batch
    /// delivered has given it back.
    fn swap(&self, pending: &mut Pending) -> Pending {
        let spare = self.spare.lock().unwrap();
        let mut spare = (self.returned.wait_while(spare, |spare| spare.is_none())).unwrap();
        std::mem::replace(pending, spare.take().expect("waited until it was back"))
    }

    /// Delivers whatever is pending (`rocprofiler_flush_buffer`).
    pub fn flush(&self) {
        let mut pending = self.pending.lock().unwrap();
        if pending.records.is_empty() && pending.dropped == 0 {
            return;
        }
        let batch = self.swap(&mut pending);
        drop(pending);
        self.deliver(batch);
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
        *self.spare.lock().unwrap() = Some(batch);
        self.returned.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc::{Receiver, Sender, channel};
    use std::thread;
    use std::time::{Duration, Instant};

    /// A tool whose callback counts records and holds its first delivery until released.
    struct SlowTool {
        records: AtomicUsize,
        entered: Mutex<Sender<()>>,
        release: Mutex<Receiver<()>>,
    }

    unsafe extern "C" fn on_buffer(
        _context: Handle,
        _buffer: Handle,
        _headers: *mut *mut RecordHeader,
        count: usize,
        data: *mut c_void,
        _drop_count: u64,
    ) {
        // SAFETY: the data given at creation, which the test keeps alive.
        let tool = unsafe { &*data.cast::<SlowTool>() };
        if tool.records.fetch_add(count, Ordering::SeqCst) == 0 {
            tool.entered.lock().unwrap().send(()).unwrap();
            tool.release.lock().unwrap().recv().unwrap();
        }
    }

    /// Stages `n` records of 16 bytes and pushes them from a thread of their own.
    fn producer(buffer: &Arc<Buffer>, n: usize) -> thread::JoinHandle<()> {
        let buffer = Arc::clone(buffer);
        thread::spawn(move || {
            let mut staged = Staged::default();
            for i in 0..n {
                staged.push(1, 1, &[i as u64; 2]);
            }
            buffer.push(&mut staged);
        })
    }

    fn finished_within(handle: &thread::JoinHandle<()>, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        while !handle.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        handle.is_finished()
    }

    #[test]
    fn a_lossless_buffer_holds_two_arenas_and_then_its_producers_wait() {
        let (entered, on_entry) = channel();
        let (release, released) = channel();
        let tool = Box::leak(Box::new(SlowTool {
            records: AtomicUsize::new(0),
            entered: Mutex::new(entered),
            release: Mutex::new(released),
        }));
        let buffer = Arc::new(Buffer::new(
            Handle { handle: 1 },
            BufferDef {
                context: Handle { handle: 2 },
                size: 64,
                watermark: 32,
                policy: BufferPolicy::Lossless,
                callback: on_buffer,
                data: std::ptr::from_mut(tool).cast(),
            },
        ));
        // Two records reach the watermark: the first arena goes to the tool, which holds
        // it.
        let first = producer(&buffer, 2);
        on_entry.recv_timeout(Duration::from_secs(5)).unwrap();
        // The second arena fills up to its watermark: its producer waits for the first,
        // holding the records back (a buffer that took a third arena would let it go on).
        let second = producer(&buffer, 2);
        let deadline = Instant::now() + Duration::from_secs(5);
        while buffer.pending.try_lock().is_ok() {
            assert!(
                Instant::now() < deadline && !second.is_finished(),
                "the second producer did not wait for the first arena"
            );
            thread::sleep(Duration::from_millis(1));
        }
        // A third producer's record finds both arenas taken.
        let third = producer(&buffer, 1);
        assert!(
            !finished_within(&third, Duration::from_millis(100)),
            "a producer went on while both arenas were full"
        );
        release.send(()).unwrap();
        for handle in [first, second, third] {
            assert!(finished_within(&handle, Duration::from_secs(5)));
        }
        buffer.flush();
        assert_eq!(tool.records.load(Ordering::SeqCst), 5);
    }
}
