//! The stream to the runner: frames go through a queue bounded in bytes to a writer thread
//! that owns the connection (memory shared with the runner, see [`ring`]), so buffer
//! callbacks only encode and hand over (and wait, never drop, when the runner falls
//! behind). Callbacks encode records in the shared memory's slots where one is free, so
//! that the writer only describes them. Metadata sent is kept, so a forked child can open a
//! stream of its own that starts with everything its records refer to.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rocflow_core::queue::{self, Sender};
use rocflow_core::record::{Meta, ToolCost};
use rocflow_core::ring::{FrameBuffer, Layout, Outgoing, Slots};
use rocflow_core::wire;

use crate::guard::{entry, locked};
use crate::warning::unprofiled;

/// Records handed to the stream, and the CPU time buffer callbacks spent on them.
static RECORDS: AtomicU64 = AtomicU64::new(0);
static CALLBACK_NS: AtomicU64 = AtomicU64::new(0);

/// This thread's CPU time in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Counts a buffer callback's records and the CPU time it took.
pub fn account(records: u64, cpu_ns: u64) {
    RECORDS.fetch_add(records, Ordering::Relaxed);
    CALLBACK_NS.fetch_add(cpu_ns, Ordering::Relaxed);
}

/// Bytes of deliveries queued for the writer before a callback waits, and one delivery
/// however large. A delivery is up to a buffer's watermark of records as frames (tens of
/// MiB with `trace-all`'s 64 MiB buffer): four deliveries queued held the application of
/// a 20 M-record run at 385 MiB against 289 MiB at 2 M records; 16 MiB, at 282 and 282.
const QUEUE_BYTES: usize = 16 << 20;
/// Frame buffers kept for reuse.
const SPARE: usize = 8;

pub struct Stream {
    sender: Mutex<Option<Sender<FrameBuffer>>>,
    /// Shared memory to encode frames in, where there is some.
    slots: Option<Slots>,
    /// Frame buffers the writer is done with, for the next deliveries: a delivery's frames
    /// are megabytes, and fresh ones would cost page faults every time.
    spare: Arc<Mutex<Vec<Vec<u8>>>>,
    /// Threads and queues this stream has described, so each is described once.
    seen: Mutex<(HashSet<u64>, HashSet<u64>)>,
    /// Set by the writer when the socket is closed.
    finished: Arc<(Mutex<bool>, Condvar)>,
    /// How many threads' sends are pinned to this stream (see [`Pin`]).
    pins: (Mutex<usize>, Condvar),
}

/// The current stream; a forked child swaps in its own and never touches the parent's.
static STREAM: AtomicPtr<Stream> = AtomicPtr::new(ptr::null_mut());
/// Every metadata item sent so far, in order.
static META: Mutex<Vec<Meta>> = Mutex::new(Vec::new());

/// Why the tool has no stream to the runner.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot connect to the runner at {}: {source}", .socket.display())]
    Connect {
        socket: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the writer thread: {0}")]
    Writer(#[source] std::io::Error),
}

/// Connects to the runner and starts the writer.
pub fn open(socket: &Path) -> Result<(), OpenError> {
    let stream = connect(socket)?;
    STREAM.store(Box::into_raw(Box::new(stream)), Ordering::Release);
    Ok(())
}

fn connect(socket: &Path) -> Result<Stream, OpenError> {
    let mut out = UnixStream::connect(socket)
        .and_then(|socket| Outgoing::connect(socket, Layout::TOOL))
        .map_err(|source| OpenError::Connect {
            socket: socket.to_owned(),
            source,
        })?;
    let slots = out.slots();
    let (sender, frames) = queue::bounded::<FrameBuffer>(QUEUE_BYTES);
    let finished = Arc::new((Mutex::new(false), Condvar::new()));
    let done = Arc::clone(&finished);
    let spare = Arc::new(Mutex::new(Vec::new()));
    let returned = Arc::clone(&spare);
    std::thread::Builder::new()
        .name("rocflow-writer".into())
        .spawn(move || {
            let mut ok = out.write_all(&wire::stream_header()).is_ok();
            while let Ok(frames) = frames.recv() {
                // Once the runner stopped reading, frames are dropped (their slots freed).
                if !ok {
                    continue;
                }
                match out.send(frames) {
                    Ok(Some(mut heap)) => {
                        heap.clear();
                        // Not `locked`: switching the tool off closes the stream, which
                        // waits for this very thread. A poisoned pool only loses the buffer
                        // for reuse.
                        if let Ok(mut spare) = returned.lock()
                            && spare.len() < SPARE
                        {
                            spare.push(heap);
                        }
                    }
                    Ok(None) => {}
                    Err(_) => ok = false,
                }
            }
            // The tool's own cost, last: what the callbacks and this thread spent.
            let cost = ToolCost {
                records: RECORDS.load(Ordering::Relaxed),
                callback_ns: CALLBACK_NS.load(Ordering::Relaxed),
                writer_ns: thread_cpu_ns(),
            };
            let mut frame = Vec::new();
            wire::encode_meta(0, &[Meta::ToolCost(cost)], &mut frame);
            ok = ok && out.send(FrameBuffer::from(frame)).is_ok();
            out.shutdown();
            *done.0.lock().unwrap_or_else(PoisonError::into_inner) = true;
            done.1.notify_all();
            if !ok {
                eprintln!("rocflow: the runner stopped reading; records after that were lost");
            }
        })
        .map_err(OpenError::Writer)?;
    Ok(Stream {
        sender: Mutex::new(Some(sender)),
        slots,
        spare,
        seen: Mutex::default(),
        finished,
        pins: Default::default(),
    })
}

/// The stream to send on: the one this thread is pinned to, else the process's, opening a
/// forked child's on first use.
fn current() -> Option<&'static Stream> {
    PINNED.get().or_else(opened).or_else(open_pending)
}

thread_local! {
    /// The stream this thread's sends go to while a [`Pin`] of it lives.
    static PINNED: Cell<Option<&'static Stream>> = const { Cell::new(None) };
}

/// Keeps this thread's sends on one stream while it lives, so that what a delivery sends
/// goes whole to one runner: its frames are in that stream's shared memory and its threads
/// described to it. A switch to the next phase's runner waits for the pins of the stream it
/// leaves, so a delivery under way at the switch goes whole to the phase it began in, and
/// one that begins after it to the next. A pin within a pin is the outer one.
#[must_use = "the sends are pinned while it lives"]
pub struct Pin(Option<&'static Stream>);

/// Pins this thread's sends to the current stream (see [`Pin`]).
pub fn pin() -> Pin {
    if PINNED.get().is_some() {
        return Pin(None);
    }
    loop {
        let Some(stream) = opened().or_else(open_pending) else {
            return Pin(None);
        };
        *locked(stream.pins.0.lock()) += 1;
        // A switch that swapped the stream before this pin was counted does not wait for
        // it: then the pin is the next stream's.
        if opened().is_some_and(|now| ptr::eq(now, stream)) {
            PINNED.set(Some(stream));
            return Pin(Some(stream));
        }
        stream.unpin();
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        if let Some(stream) = self.0 {
            PINNED.set(None);
            stream.unpin();
        }
    }
}

/// Whether this process has a stream to a runner.
pub fn is_open() -> bool {
    opened().is_some()
}

fn opened() -> Option<&'static Stream> {
    // SAFETY: streams are leaked, never freed, so a pointer once stored stays valid.
    unsafe { STREAM.load(Ordering::Acquire).as_ref() }
}

/// An empty buffer for a delivery's frames (see [`Stream::frame_buffer`]).
pub fn frame_buffer() -> FrameBuffer {
    current().map_or_else(|| FrameBuffer::from(Vec::new()), Stream::frame_buffer)
}

/// Hands buffers of encoded frames to the writer, waiting while its queue is full. They
/// are queued together, in order: no other thread's frames come between them.
pub fn send(frames: impl IntoIterator<Item = FrameBuffer>) {
    let _pin = pin();
    if let Some(stream) = current() {
        stream.send(frames);
    }
}

impl Stream {
    fn unpin(&self) {
        let mut pins = self.pins.0.lock().unwrap_or_else(PoisonError::into_inner);
        *pins -= 1;
        if *pins == 0 {
            self.pins.1.notify_all();
        }
    }

    /// Waits until `deadline` at most for the sends pinned to this stream (deliveries
    /// under way) to be done, but for the calling thread's own pin: closing from within a
    /// delivery (the guard switching the tool off) must not wait for itself.
    fn unpinned(&self, deadline: Instant) {
        let own = usize::from(PINNED.get().is_some_and(|pinned| ptr::eq(pinned, self)));
        let timeout = deadline.saturating_duration_since(Instant::now());
        let pins = self.pins.0.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = self
            .pins
            .1
            .wait_timeout_while(pins, timeout, |pins| *pins > own);
    }

    /// A free slot, or else a buffer the writer had to spare, or else a new one.
    fn frame_buffer(&self) -> FrameBuffer {
        let slot = self.slots.as_ref().and_then(Slots::take);
        slot.unwrap_or_else(|| {
            let spare = locked(self.spare.lock()).pop();
            FrameBuffer::from(spare.unwrap_or_default())
        })
    }

    /// Queues buffers of frames for the writer; they count for the memory they hold.
    fn send(&self, frames: impl IntoIterator<Item = FrameBuffer>) {
        if let Some(sender) = &*locked(self.sender.lock()) {
            for frames in frames {
                let bytes = frames.held();
                let _ = sender.send(frames, bytes);
            }
        }
    }
}

/// The threads and queues among `tids` and `queues` this stream has not described yet;
/// they count as described from now on.
pub fn unseen(tids: &[u64], queues: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let Some(stream) = current() else {
        return Default::default();
    };
    let mut seen = locked(stream.seen.lock());
    let new_tids = tids.iter().copied().filter(|t| seen.0.insert(*t)).collect();
    let new_queues = queues
        .iter()
        .copied()
        .filter(|q| seen.1.insert(*q))
        .collect();
    (new_tids, new_queues)
}

/// Sends metadata items and keeps them for a forked child's stream, but for marker
/// messages: they name this process's records only, and there is one per ROCTx call.
pub fn send_meta(items: Vec<Meta>) {
    if items.is_empty() {
        return;
    }
    let mut log = locked(META.lock());
    let mut frame = Vec::new();
    wire::encode_meta(0, &items, &mut frame);
    // Under the log's lock, so the stream's order and the log's agree.
    send([FrameBuffer::from(frame)]);
    let kept: Vec<Meta> = (items.into_iter())
        .filter(|item| !matches!(item, Meta::MarkerMessages { .. }))
        .collect();
    // A delivery pinned to the stream a switch left: the next stream began with the log
    // as it was, and its records may name what is added now.
    if let (Some(pinned), Some(now)) = (PINNED.get(), opened())
        && !ptr::eq(pinned, now)
    {
        let carried: Vec<Meta> = kept.iter().filter(|m| carried(m)).cloned().collect();
        if !carried.is_empty() {
            let mut frame = Vec::new();
            wire::encode_meta(0, &carried, &mut frame);
            now.send([FrameBuffer::from(frame)]);
        }
    }
    log.extend(kept);
}

/// Whether a metadata item of the log starts the next phase's stream: threads and queues
/// are described again as that stream's records name them.
fn carried(item: &Meta) -> bool {
    !matches!(item, Meta::Thread(_) | Meta::Queue(_))
}

/// Ends the stream: the deliveries under way send their frames, then the writer sends what
/// is queued and closes the socket. Waits up to `timeout` for that. Also how the guard saves what was sent when the tool fails, so a
/// poisoned lock is no reason not to close.
pub fn close(timeout: Duration) {
    // A forked child that sent nothing has no stream to close, and opens none.
    let Some(stream) = opened() else { return };
    finish(stream, timeout);
}

/// Lets the deliveries pinned to `stream` send their frames, then its writer send what is
/// queued and close its socket, waiting up to `timeout` in all. Nothing here calls into the
/// SDK, so the SDK's finalizer may close: a delivery that never ends (its thread blocked
/// for good at the process's exit) costs the wait, not a deadlock.
fn finish(stream: &Stream, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    stream.unpinned(deadline);
    (stream.sender.lock())
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let (done, signal) = &*stream.finished;
    let guard = done.lock().unwrap_or_else(PoisonError::into_inner);
    let timeout = deadline.saturating_duration_since(Instant::now());
    let _ = signal.wait_timeout_while(guard, timeout, |finished| !*finished);
}

/// Moves the stream to another runner (an in-process session's next phase): the new
/// stream starts with the metadata sent so far, threads and queues to be described again,
/// and the old one is closed once frames go to the new one and the sends pinned to it (a
/// delivery under way) are done, so its runner completes with nothing lost.
pub fn switch(socket: &Path, timeout: Duration) -> Result<(), OpenError> {
    let log = locked(META.lock());
    let stream = connect(socket)?;
    let items: Vec<Meta> = log.iter().filter(|m| carried(m)).cloned().collect();
    let mut meta = Vec::new();
    wire::encode_meta(0, &items, &mut meta);
    let stream: &'static Stream = Box::leak(Box::new(stream));
    stream.send([FrameBuffer::from(meta)]);
    let old = STREAM.swap(ptr::from_ref(stream).cast_mut(), Ordering::AcqRel);
    drop(log);
    // SAFETY: streams are leaked, never freed.
    if let Some(old) = unsafe { old.as_ref() } {
        finish(old, timeout);
    }
    Ok(())
}

/// In a forked child of a process whose stream belongs to an in-process session: the
/// child sends nothing, to the session's runner or anywhere else.
pub fn forget_in_child() {
    STREAM.store(ptr::null_mut(), Ordering::Release);
    *locked(PENDING.lock()) = None;
}

thread_local! {
    /// The metadata log's lock, held across a fork so the child gets a whole log.
    static HELD: RefCell<Option<MutexGuard<'static, Vec<Meta>>>> = const { RefCell::new(None) };
}

/// `pthread_atfork` prepare handler.
pub extern "C" fn before_fork() {
    entry("stream::before_fork", (), || {
        HELD.with(|held| *held.borrow_mut() = Some(locked(META.lock())));
    });
}

/// `pthread_atfork` parent handler, and the child's last step: lets go of the log's lock,
/// if the prepare handler took it. Not guarded: it cannot panic, and must run even if the
/// tool was switched off since the prepare handler.
pub extern "C" fn after_fork() {
    HELD.with(|held| held.borrow_mut().take());
}

/// A forked child's stream, opened when the child first sends something: a child that
/// only execs another program (a shell's, `mpirun`'s) would otherwise leave an empty
/// stream beside the one the new program opens under the same pid.
static PENDING: Mutex<Option<Pending>> = Mutex::new(None);

struct Pending {
    socket: PathBuf,
    /// The child's metadata so far, encoded: the new stream's first frame.
    meta: Vec<u8>,
}

/// In a forked child: the parent's stream is left alone, and the child's own will start
/// with the parent's metadata with this process's description in place of the parent's.
pub fn reopen_in_child(socket: &Path, process: Meta) {
    let log = HELD.with(|held| {
        let mut held = held.borrow_mut();
        let log = held.as_deref().cloned().unwrap_or_default();
        held.take();
        log
    });
    STREAM.store(ptr::null_mut(), Ordering::Release);
    RECORDS.store(0, Ordering::Relaxed);
    CALLBACK_NS.store(0, Ordering::Relaxed);
    let mut items: Vec<Meta> = log
        .into_iter()
        .filter(|m| {
            !matches!(
                m,
                Meta::Process(_)
                    | Meta::Thread(_)
                    | Meta::Queue(_)
                    | Meta::Dropped { .. }
                    | Meta::ReplayedPasses { .. }
            )
        })
        .collect();
    items.insert(0, process);
    let mut meta = Vec::new();
    wire::encode_meta(0, &items, &mut meta);
    *locked(META.lock()) = items;
    *locked(PENDING.lock()) = Some(Pending {
        socket: socket.to_owned(),
        meta,
    });
}

/// Opens a forked child's stream, if it has one waiting.
fn open_pending() -> Option<&'static Stream> {
    let mut pending = locked(PENDING.lock());
    // Another thread may have opened it meanwhile.
    if let Some(stream) = opened() {
        return Some(stream);
    }
    let Pending { socket, meta } = pending.take()?;
    let stream = match connect(&socket) {
        Ok(stream) => &*Box::leak(Box::new(stream)),
        Err(e) => {
            unprofiled(&e);
            return None;
        }
    };
    stream.send([FrameBuffer::from(meta)]);
    STREAM.store(ptr::from_ref(stream).cast_mut(), Ordering::Release);
    Some(stream)
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use rocflow_core::record::Out;

    use super::*;

    /// A delivery's frames start in the slots of the memory shared with the runner while
    /// one is free, so the writer copies none of them; once the runner holds them all,
    /// they start on the heap, and a slot let go is taken again.
    #[test]
    fn frames_start_in_free_slots_then_on_the_heap() {
        let socket = std::env::temp_dir().join(format!("rocflow-tool-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).unwrap();
        let stream = connect(&socket).unwrap();
        let _runner = listener.accept().unwrap();
        std::fs::remove_file(&socket).unwrap();
        let slots = stream
            .slots
            .as_ref()
            .expect("a system that makes sealed memfds");

        let mut taken: Vec<FrameBuffer> = (0..Layout::TOOL.slots)
            .map(|_| stream.frame_buffer())
            .collect();
        assert!(slots.take().is_none(), "every slot holds a frame");
        let mut heap = stream.frame_buffer();
        heap.put(b"a frame");
        assert_eq!(heap.bytes(), b"a frame");
        drop(heap);
        assert!(slots.take().is_none(), "a frame on the heap holds no slot");

        taken.pop();
        let mut again = stream.frame_buffer();
        assert!(slots.take().is_none(), "the slot let go is taken again");
        again.put(b"in a slot");
        assert_eq!(again.bytes(), b"in a slot");
    }

    /// A runner listening at a fresh socket; what it read, once the stream to it closed.
    fn runner(name: &str) -> (PathBuf, std::thread::JoinHandle<Vec<u8>>) {
        let socket =
            std::env::temp_dir().join(format!("rocflow-tool-{}-{name}.sock", std::process::id()));
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).unwrap();
        let read = std::thread::spawn(move || {
            let (socket, _) = listener.accept().unwrap();
            let mut incoming = rocflow_core::ring::Incoming::accept(socket).unwrap();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut incoming, &mut bytes).unwrap();
            bytes
        });
        (socket, read)
    }

    fn holds(bytes: &[u8], needle: &[u8]) -> bool {
        bytes.windows(needle.len()).any(|w| w == needle)
    }

    /// The tests that open the process's stream, one at a time.
    static GLOBAL_STREAM: Mutex<()> = Mutex::new(());

    /// A delivery under way when the stream closes (a session's last window, delivered by
    /// the SDK's thread while the application closes the session) sends its frames before
    /// the stream closes, not into a stream that is gone.
    #[test]
    fn closing_waits_for_a_delivery_under_way() {
        let _one = GLOBAL_STREAM.lock().unwrap_or_else(PoisonError::into_inner);
        let (socket, read) = runner("closing");
        open(&socket).unwrap();
        let (began, closing) = std::sync::mpsc::channel();
        let delivery = std::thread::spawn(move || {
            let _pin = pin();
            let mut frame = frame_buffer();
            frame.put(b"the last window's records");
            began.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            send([frame]);
        });
        closing.recv().unwrap();
        close(Duration::from_secs(10));
        delivery.join().unwrap();
        assert!(holds(&read.join().unwrap(), b"the last window's records"));
    }

    /// Closing from within a delivery (the guard switching the tool off mid-delivery)
    /// does not wait for that delivery, which cannot end before closing does.
    #[test]
    fn closing_from_within_a_delivery_does_not_wait_for_it() {
        let _one = GLOBAL_STREAM.lock().unwrap_or_else(PoisonError::into_inner);
        let (socket, read) = runner("within");
        open(&socket).unwrap();
        let _pin = pin();
        send([FrameBuffer::from(b"sent before closing".to_vec())]);
        let began = Instant::now();
        close(Duration::from_secs(30));
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "{:?}",
            began.elapsed()
        );
        assert!(holds(&read.join().unwrap(), b"sent before closing"));
    }

    /// A delivery that began before a phase switch (its frame in the first stream's
    /// shared memory) and sends after the switch began goes whole to the first runner,
    /// which the switch waits for; what is sent after the switch goes to the second.
    #[test]
    fn a_delivery_under_way_at_a_switch_goes_to_the_phase_it_began_in() {
        let _one = GLOBAL_STREAM.lock().unwrap_or_else(PoisonError::into_inner);
        let (first, first_read) = runner("first");
        let (second, second_read) = runner("second");
        open(&first).unwrap();
        let (began, switching) = std::sync::mpsc::channel();
        let delivery = std::thread::spawn(move || {
            let _pin = pin();
            let mut frame = frame_buffer();
            frame.put(b"delivered at the switch");
            began.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            send([frame]);
        });
        switching.recv().unwrap();
        switch(&second, Duration::from_secs(10)).unwrap();
        delivery.join().unwrap();
        send([FrameBuffer::from(b"delivered after the switch".to_vec())]);
        close(Duration::from_secs(10));

        let first_got = first_read.join().unwrap();
        let second_got = second_read.join().unwrap();
        assert!(holds(&first_got, b"delivered at the switch"));
        assert!(!holds(&second_got, b"delivered at the switch"));
        assert!(holds(&second_got, b"delivered after the switch"));
        assert!(!holds(&first_got, b"delivered after the switch"));
    }
}
