//! Record buffers, as rocprofiler-sdk keeps them: records are copied in as operations
//! complete and handed to the tool's callback in batches, on the buffer's delivery thread,
//! when the watermark is reached or on a flush. A full buffer either waits for delivery
//! (lossless) or drops and counts.

use std::ffi::c_void;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

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
struct Pending {
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

    fn clear(&mut self) {
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

/// A buffer: the arena producers add to, and a second one that is either spare or on its
/// way to the tool. As AMD's SDK, batches reach the tool's callback on a thread of the
/// SDK's own, never on the thread that filled them, one batch at a time.
pub struct Buffer {
    pending: Mutex<Pending>,
    delivery: Arc<Delivery>,
}

/// What a buffer shares with its delivery thread.
struct Delivery {
    id: Handle,
    def: BufferDef,
    exchange: Mutex<Exchange>,
    /// Signalled whenever the exchange changes.
    changed: Condvar,
}

/// The buffer's second arena and the count of batches delivered.
struct Exchange {
    second: Second,
    /// Batches the tool has had: a flush waits for this to count the batch it sent.
    delivered: u64,
    /// Whether this process runs the delivery thread yet (a forked child starts its own).
    running: bool,
}

/// Where the second arena is. The SDK allocates two arenas of the size asked for, and
/// producers that fill one while the other is still with the tool wait for it; so does
/// this, whatever the tool's pace.
enum Second {
    Spare(Pending),
    Sent(Pending),
    WithTheTool,
}

/// The headers and header pointers of a delivered batch, kept for the next one.
#[derive(Default)]
struct Headers {
    headers: Vec<RecordHeader>,
    pointers: Vec<*mut RecordHeader>,
}

impl Buffer {
    pub fn new(id: Handle, def: BufferDef) -> Buffer {
        Buffer {
            pending: Mutex::new(Pending::default()),
            delivery: Arc::new(Delivery {
                id,
                def,
                exchange: Mutex::new(Exchange {
                    second: Second::Spare(Pending::default()),
                    delivered: 0,
                    running: false,
                }),
                changed: Condvar::new(),
            }),
        }
    }

    /// Adds the records a thread staged, in order, emptying `staged`; sends a batch for
    /// delivery whenever it reaches the watermark (or, lossless, when a record does not
    /// fit).
    pub fn push(&self, staged: &mut Staged) {
        let staged = &mut staged.0;
        let mut pending = self.pending.lock().unwrap();
        for i in 0..staged.records.len() {
            let (category, kind, words) = staged.record(i);
            if pending.bytes() + words.len() * 8 > self.delivery.def.size {
                match self.delivery.def.policy {
                    BufferPolicy::Discard => {
                        pending.dropped += 1;
                        continue;
                    }
                    BufferPolicy::Lossless => self.send(&mut pending),
                }
            }
            pending.push_words(category, kind, words);
            if pending.bytes() >= self.delivery.def.watermark {
                self.send(&mut pending);
            }
        }
        staged.clear();
    }

    /// Sends the pending batch to the delivery thread, leaving the spare arena in its place
    /// once the last batch sent has come back.
    fn send(&self, pending: &mut Pending) {
        let delivery = &self.delivery;
        let exchange = delivery.exchange.lock().unwrap();
        let mut exchange = (delivery.changed)
            .wait_while(exchange, |e| !matches!(e.second, Second::Spare(_)))
            .unwrap();
        let Second::Spare(spare) = std::mem::replace(&mut exchange.second, Second::WithTheTool)
        else {
            unreachable!("waited for the spare arena")
        };
        exchange.second = Second::Sent(std::mem::replace(pending, spare));
        if !exchange.running {
            let delivery = Arc::clone(delivery);
            std::thread::Builder::new()
                .name(format!("sim-buffer-{}", delivery.id.handle))
                .spawn(move || delivery.run())
                .expect("the SDK starts a buffer's delivery thread");
            exchange.running = true;
        }
        delivery.changed.notify_all();
    }

    /// Delivers whatever is pending (`rocprofiler_flush_buffer`), and returns once the tool
    /// has had every batch sent before.
    pub fn flush(&self) {
        let mut pending = self.pending.lock().unwrap();
        if !pending.records.is_empty() || pending.dropped != 0 {
            self.send(&mut pending);
        }
        drop(pending);
        let delivery = &self.delivery;
        let exchange = delivery.exchange.lock().unwrap();
        // At most one batch is out at a time: the last one sent.
        let sent = exchange.delivered + u64::from(!matches!(exchange.second, Second::Spare(_)));
        drop(
            delivery
                .changed
                .wait_while(exchange, |e| e.delivered < sent),
        );
    }

    /// Takes the buffer's locks, so that a fork finds no batch half added or half sent.
    pub fn hold_for_fork(&self) -> HeldForFork<'_> {
        HeldForFork {
            pending: self.pending.lock().unwrap(),
            exchange: self.delivery.exchange.lock().unwrap(),
        }
    }
}

/// A buffer's locks, held across a fork.
pub struct HeldForFork<'a> {
    pending: MutexGuard<'a, Pending>,
    exchange: MutexGuard<'a, Exchange>,
}

impl HeldForFork<'_> {
    /// In a forked child: the pending records and a batch out for delivery are the
    /// parent's, and so is the delivery thread, which does not exist here.
    pub fn forget_the_parent(mut self) {
        self.pending.clear();
        if !matches!(self.exchange.second, Second::Spare(_)) {
            self.exchange.second = Second::Spare(Pending::default());
        }
        self.exchange.running = false;
    }
}

impl Delivery {
    /// The delivery thread: hands each batch sent to the tool's callback, then makes its
    /// arena the spare.
    fn run(&self) {
        let mut headers = Headers::default();
        loop {
            let exchange = self.exchange.lock().unwrap();
            let mut exchange = (self.changed)
                .wait_while(exchange, |e| !matches!(e.second, Second::Sent(_)))
                .unwrap();
            let Second::Sent(mut batch) =
                std::mem::replace(&mut exchange.second, Second::WithTheTool)
            else {
                unreachable!("waited for a batch")
            };
            drop(exchange);
            self.deliver(&mut headers, &mut batch);
            batch.clear();
            let mut exchange = self.exchange.lock().unwrap();
            exchange.second = Second::Spare(batch);
            exchange.delivered += 1;
            drop(exchange);
            self.changed.notify_all();
        }
    }

    fn deliver(&self, Headers { headers, pointers }: &mut Headers, batch: &mut Pending) {
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

    /// Where the threads of `reached_the_tool_on` delivered.
    static DELIVERED_ON: Mutex<Vec<thread::ThreadId>> = Mutex::new(Vec::new());

    unsafe extern "C" fn reached_the_tool_on(
        _context: Handle,
        _buffer: Handle,
        _headers: *mut *mut RecordHeader,
        _count: usize,
        _data: *mut c_void,
        _drop_count: u64,
    ) {
        DELIVERED_ON.lock().unwrap().push(thread::current().id());
    }

    #[test]
    fn batches_reach_the_tool_on_a_thread_of_the_sdk_and_a_flush_waits_for_them() {
        let buffer = Buffer::new(
            Handle { handle: 1 },
            BufferDef {
                context: Handle { handle: 2 },
                size: 64,
                watermark: 32,
                policy: BufferPolicy::Lossless,
                callback: reached_the_tool_on,
                data: std::ptr::null_mut(),
            },
        );
        let mut staged = Staged::default();
        // Two batches at the watermark, and one more record that the flush sends.
        for i in 0..5_u64 {
            staged.push(1, 1, &[i; 2]);
        }
        buffer.push(&mut staged);
        buffer.flush();
        let threads = DELIVERED_ON.lock().unwrap().clone();
        assert_eq!(
            threads.len(),
            3,
            "every batch was delivered when the flush returned"
        );
        assert!(
            threads.iter().all(|t| *t != thread::current().id()),
            "a batch reached the tool on the thread that filled it"
        );
    }
}
