//! The runner's side of the socket: one connection per profiled process (children and MPI
//! ranks each open their own), each read on a thread of its own that numbers its frames,
//! keeps them in the spool (through its [`Lane`]) and hands them to the stages through one
//! [`backlog`](super::backlog).

use std::collections::BTreeMap;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::backlog::Sender;
use super::compress::Compressor;
use crate::messages;
use crate::queue::Closed;
use crate::record::{RecordKind, wire_size};
use crate::ring::Incoming;
use crate::spool::SpoolWriter;
use crate::wire::{self, FrameReader};

/// Where every frame goes: the raw spool, written as frames arrive (compressed first, where
/// it is compressed), so a crash of anything later loses nothing that arrived; and the
/// stages, for the kinds they take.
pub struct Intake {
    spool: Mutex<Kept>,
    /// Compresses frames for the spool, if it is to be compressed.
    compressor: Option<Compressor>,
    /// The record kinds the stages take (indexed as [`RecordKind::ALL`]); frames of the
    /// others are kept in the spool and not handed on.
    staged: Vec<bool>,
}

/// The spool while the run takes frames, and after.
struct Kept {
    /// `None` once finished: frames after that (from processes rocflow stopped waiting
    /// for) are neither kept nor decoded.
    writer: Option<SpoolWriter>,
    /// Why the spool is incomplete, if a write failed.
    error: Option<std::io::Error>,
}

impl Intake {
    pub fn new(
        spool: SpoolWriter,
        compressor: Option<Compressor>,
        consumes: impl Fn(RecordKind) -> bool,
    ) -> Intake {
        Intake {
            spool: Mutex::new(Kept {
                writer: Some(spool),
                error: None,
            }),
            compressor,
            staged: RecordKind::ALL.iter().map(|&k| consumes(k)).collect(),
        }
    }

    /// Keeps a raw frame in the spool as it is, and hands it to the stages if they take
    /// it; `Err` once the spool is finished or the stages stopped taking frames.
    pub fn take(&self, raw: &[u8], frames: &Sender) -> Result<(), Closed> {
        self.keep(raw)?;
        self.to_stages(raw, frames)
    }

    /// Frames of one process, which it keeps in order: see [`Lane`].
    pub fn lane(self: &Arc<Intake>) -> Lane {
        Lane {
            intake: Arc::clone(self),
            order: Arc::default(),
            taken: 0,
        }
    }

    /// Writes a frame, as it is to be stored, into the spool.
    fn keep(&self, stored: &[u8]) -> Result<(), Closed> {
        let mut kept = self.spool.lock().unwrap();
        let Kept { writer, error } = &mut *kept;
        let Some(writer) = writer else {
            return Err(Closed);
        };
        if error.is_none()
            && let Err(e) = writer.write(stored)
        {
            *error = Some(e);
        }
        Ok(())
    }

    /// Hands a raw frame to the stages, if they take its kind.
    fn to_stages(&self, raw: &[u8], frames: &Sender) -> Result<(), Closed> {
        if record_kind(raw).is_some_and(|kind| !self.staged[kind as usize]) {
            return Ok(());
        }
        frames.send(raw)
    }

    /// Completes the spool with every frame taken so far: written out and synced, whatever
    /// readers are still running. Once only; the error says why it is incomplete, if it is.
    pub fn finish(&self) -> Option<std::io::Error> {
        let mut kept = self.spool.lock().unwrap();
        let writer = kept.writer.take()?;
        let finished = writer.finish().err();
        kept.error.take().or(finished)
    }
}

/// Bytes of one process's frames on their way to the spool before its reading waits for
/// them: dozens of small deliveries' frames, or one of a large delivery (whose parts keep
/// the compressor's threads busy on their own). Each frame on its way is memory the run
/// holds besides: with 32 MiB, `trace-all`'s runner peaked 100 MiB higher.
const PENDING_BYTES: usize = 16 << 20;

/// One process's frames on their way into the spool. Where the spool is compressed, each
/// frame is compressed on the compressor's threads while the next ones are read and
/// decoded. Each is written as soon as it and every frame before it are done, by whichever
/// thread finishes last, so frames keep the order they came in (an arguments frame before
/// its calls, strings before what names them) and none waits on the next one's arrival.
/// Dropping the lane waits for the frames still on their way.
pub struct Lane {
    intake: Arc<Intake>,
    order: Arc<Order>,
    /// The number of the next frame taken.
    taken: u64,
}

/// Where a lane's frames wait for those before them.
#[derive(Default)]
struct Order {
    state: Mutex<OrderState>,
    /// Told whenever frames are written.
    written: Condvar,
}

#[derive(Default)]
struct OrderState {
    /// The number of the next frame to write.
    next: u64,
    /// Frames done and waiting for the ones before them, as stored, by number.
    done: BTreeMap<u64, Vec<u8>>,
    /// Bytes of the frames taken and not yet written, as read.
    pending: usize,
    /// Whether a write found the spool finished: it takes no more frames.
    closed: bool,
}

impl Order {
    /// Frame `number`, stored as `stored`, is done: writes it and the frames after it that
    /// are done, once every frame before it is written. `read` is its size as read.
    fn done(&self, intake: &Intake, number: u64, stored: Vec<u8>, read: usize) {
        let mut guard = self.state.lock().unwrap();
        let state = &mut *guard;
        state.done.insert(number, stored);
        state.pending -= read;
        while let Some(stored) = state.done.remove(&state.next) {
            state.closed |= intake.keep(&stored).is_err();
            state.next += 1;
        }
        self.written.notify_all();
    }
}

impl Lane {
    /// Takes a raw frame as [`Intake::take`] does, though it may reach the spool a little
    /// later; `raw`, the buffer for the next frame, may be left empty.
    pub fn take(&mut self, raw: &mut Vec<u8>, frames: &Sender) -> Result<(), Closed> {
        let Some(compressor) = self.intake.compressor.as_ref() else {
            return self.intake.take(raw, frames);
        };
        // Handed on first, so the frame can move on; it is kept even if the stages stopped.
        let handed = self.intake.to_stages(raw, frames);
        let (number, read) = (self.taken, raw.len());
        self.taken += 1;
        self.order.state.lock().unwrap().pending += read;
        if compressor.takes(raw) {
            // No buffer is kept for the next frame: a delivery's frames are tens of MiB.
            let (order, intake) = (Arc::clone(&self.order), Arc::clone(&self.intake));
            compressor.spawn(std::mem::take(raw), move |raw, compressed| {
                order.done(&intake, number, compressed.unwrap_or(raw), read);
            });
        } else {
            self.order.done(&self.intake, number, raw.clone(), read);
        }
        let state = self.wait_while(|state| state.pending > PENDING_BYTES);
        if state.closed { Err(Closed) } else { handed }
    }

    /// Waits while `busy` holds of the lane's frames.
    fn wait_while(
        &self,
        busy: impl FnMut(&mut OrderState) -> bool,
    ) -> std::sync::MutexGuard<'_, OrderState> {
        let state = self.order.state.lock().unwrap();
        self.order.written.wait_while(state, busy).unwrap()
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        drop(self.wait_while(|state| state.pending > 0));
    }
}

/// The kind of a raw frame's records; `None` for metadata (and unknown tags).
fn record_kind(raw: &[u8]) -> Option<RecordKind> {
    raw[0]
        .checked_sub(1)
        .and_then(|k| RecordKind::ALL.get(usize::from(k)))
        .copied()
}

/// What the listener counts for the progress line and the summary.
pub struct Counts {
    pub streams: AtomicU64,
    /// Records received, per kind (indexed as [`RecordKind::ALL`]).
    records: Vec<AtomicU64>,
    /// Each connection's life, indexed by its stream number.
    lives: Mutex<Vec<Life>>,
    /// Connections being read now.
    reading: AtomicUsize,
    /// Connections of processes that went unprofiled: taken but not read (no thread could
    /// start for one), or left waiting when accepting failed for good.
    pub unread: AtomicU64,
}

/// When a process's stream opened, when its last frame came, and whether it has ended: a
/// stream that ended without the tool's closing frame lost what the tool still held.
#[derive(Debug, Clone, Copy)]
pub struct Life {
    pub connected: Instant,
    pub last_frame: Instant,
    pub ended: bool,
}

impl Default for Counts {
    fn default() -> Counts {
        Counts {
            streams: AtomicU64::new(0),
            records: RecordKind::ALL.iter().map(|_| AtomicU64::new(0)).collect(),
            lives: Mutex::default(),
            reading: AtomicUsize::new(0),
            unread: AtomicU64::new(0),
        }
    }
}

impl Counts {
    /// Whether every stream that connected has ended.
    pub fn all_ended(&self) -> bool {
        self.lives.lock().unwrap().iter().all(|life| life.ended)
    }

    /// The life of stream `stream`, if it connected.
    pub fn life(&self, stream: u16) -> Option<Life> {
        self.lives.lock().unwrap().get(usize::from(stream)).copied()
    }

    fn update(&self, stream: u16, change: impl FnOnce(&mut Life)) {
        if let Some(life) = self.lives.lock().unwrap().get_mut(usize::from(stream)) {
            change(life);
        }
    }

    pub fn total(&self) -> u64 {
        self.records.iter().map(|n| n.load(Ordering::Relaxed)).sum()
    }

    /// The kinds received, with their counts.
    pub fn per_kind(&self) -> Vec<(RecordKind, u64)> {
        RecordKind::ALL
            .iter()
            .zip(&self.records)
            .map(|(&kind, n)| (kind, n.load(Ordering::Relaxed)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }
}

/// Connections read at once, at most: each holds a descriptor, a thread and the process's
/// shared memory. Half the descriptors the runner may open, the rest being for its spool
/// and outputs: a process that held a thousand connections took all of them, and every
/// later process of the run went unprofiled.
fn most_streams() -> usize {
    (crate::descriptors::limit() / 2).clamp(16, 1024) as usize
}

/// Accepts connections until `stop` is set and no connection is left waiting; every
/// frame goes to `frames` with its stream set to its connection's number, which counts on
/// from the connections of earlier passes. Past [`most_streams`] connections, the next
/// wait in the socket's backlog until one ends; a failure to accept (descriptors or memory
/// short for a while) is tried again.
pub fn serve(
    listener: UnixListener,
    intake: Arc<Intake>,
    frames: Sender,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
) {
    listener
        .set_nonblocking(true)
        .expect("a listening socket can be made non-blocking");
    let most = most_streams();
    let (mut told_most, mut failing) = (false, false);
    let mut next = counts.streams.load(Ordering::Relaxed) as u16;
    loop {
        if counts.reading.load(Ordering::Acquire) >= most {
            if !std::mem::replace(&mut told_most, true) {
                messages::runner(format_args!(
                    "{most} processes are connected, the most rocflow reads at once (half of \
                     `ulimit -n`); later ones wait until one ends"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        match listener.accept() {
            Ok((socket, _)) => {
                failing = false;
                let stream = next;
                next = next.wrapping_add(1);
                start_reading(socket, stream, &intake, &frames, &counts);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // Connections made before the application exited are still accepted.
                if stop.load(Ordering::Acquire) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // Once the application has exited, nothing frees what is short any more.
            Err(e) if stop.load(Ordering::Acquire) => {
                messages::runner(format_args!(
                    "accepting a connection failed: {e}; processes still connecting go unprofiled"
                ));
                counts.unread.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Err(e) => {
                if !std::mem::replace(&mut failing, true) {
                    messages::runner(format_args!(
                        "accepting a connection failed: {e}; trying again"
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Reads the process's stream `stream` on a thread of its own, or, where none can start,
/// counts the process unprofiled.
fn start_reading(
    socket: UnixStream,
    stream: u16,
    intake: &Arc<Intake>,
    frames: &Sender,
    counts: &Arc<Counts>,
) {
    counts.streams.fetch_add(1, Ordering::Relaxed);
    let now = Instant::now();
    counts.lives.lock().unwrap().push(Life {
        connected: now,
        last_frame: now,
        ended: false,
    });
    counts.reading.fetch_add(1, Ordering::AcqRel);
    let (intake, frames, counted) = (Arc::clone(intake), frames.clone(), Arc::clone(counts));
    let spawned = std::thread::Builder::new()
        .name(format!("stream-{stream}"))
        .spawn(move || {
            read(socket, stream, &intake, &frames, &counted);
            counted.update(stream, |life| life.ended = true);
            counted.reading.fetch_sub(1, Ordering::AcqRel);
            // The spool's last user lets go before the stages see the end.
            drop(intake);
            drop(frames);
        });
    if let Err(e) = spawned {
        messages::runner(format_args!(
            "cannot start a thread to read stream {stream}: {e}; its process goes unprofiled"
        ));
        counts.unread.fetch_add(1, Ordering::Relaxed);
        counts.update(stream, |life| life.ended = true);
        counts.reading.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Reads one process's frames until it closes its end (or dies, which closes it too).
fn read(socket: UnixStream, stream: u16, intake: &Arc<Intake>, frames: &Sender, counts: &Counts) {
    let _ = socket.set_nonblocking(false);
    let incoming = Incoming::accept(socket).map_err(wire::WireError::from);
    let mut reader = match incoming.and_then(FrameReader::new) {
        Ok(r) => r,
        Err(e) => {
            messages::runner(format_args!("a process's stream is unreadable: {e}"));
            return;
        }
    };
    let mut lane = intake.lane();
    let mut frame = Vec::new();
    loop {
        match reader.next_raw(&mut frame) {
            Ok(true) => {
                wire::set_stream(&mut frame, stream);
                if let Some(kind) = record_kind(&frame) {
                    let records = (frame.len() - wire::FRAME_HEADER) / wire_size(kind);
                    counts.records[kind as usize].fetch_add(records as u64, Ordering::Relaxed);
                }
                counts.update(stream, |life| life.last_frame = Instant::now());
                if lane.take(&mut frame, frames).is_err() {
                    return;
                }
            }
            Ok(false) => return,
            // A process killed mid-frame: everything before the frame was kept.
            Err(wire::WireError::Truncated { .. }) => return,
            Err(e) => {
                messages::runner(format_args!(
                    "stream {stream}: {e}; its later frames are dropped"
                ));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ApiCall, Batch, Meta, Record};
    use crate::runner::{SpoolCompression, backlog};
    use crate::spool::SpoolReader;
    use crate::wire::Frame;

    /// An intake that compresses into `run.rfraw` in `dir` and decodes nothing, and a
    /// backlog for the stages that holds whatever comes (its receiving end, kept alive).
    fn compressing(dir: &std::path::Path) -> (Arc<Intake>, Sender, backlog::Receiver) {
        let writer = SpoolWriter::create(&dir.join("run.rfraw")).unwrap();
        let compressor = SpoolCompression::Zstd.compressor(2);
        let intake = Arc::new(Intake::new(writer, compressor, |_| false));
        let (frames, decoded) = backlog::channel(usize::MAX, dir);
        (intake, frames, decoded)
    }

    /// A process's frames reach a compressed spool in the order they came, small ones
    /// (stored as they are) between large ones (compressed on other threads meanwhile), and
    /// all of them by the time its lane is dropped.
    #[test]
    fn a_lane_keeps_its_frames_in_order_and_compresses_the_large_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.rfraw");
        let (intake, frames, _decoded) = compressing(dir.path());
        // Every third frame names a string, numbered on from the one before.
        let sent: Vec<Frame> = (0..40u64)
            .map(|i| {
                let payload = match i % 3 {
                    0 => wire::Payload::Meta(vec![Meta::Strings {
                        first: (i / 3) as u32,
                        values: vec![format!("string {}", i / 3)],
                    }]),
                    // Large: compressed.
                    _ => wire::Payload::Records(Batch::Api(
                        (0..2000 + i)
                            .map(|n| ApiCall {
                                correlation_id: i * 10_000 + n,
                                ..ApiCall::default()
                            })
                            .collect(),
                    )),
                };
                Frame { stream: 0, payload }
            })
            .collect();
        {
            let mut lane = intake.lane();
            let mut raw = Vec::new();
            for frame in &sent {
                raw.clear();
                frame.encode(&mut raw);
                lane.take(&mut raw, &frames).unwrap();
            }
        }
        assert!(intake.finish().is_none());

        let read: Vec<Frame> = SpoolReader::open(&path)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        // What each frame starts with, to say where the orders part.
        let outline = |frames: &[Frame]| -> Vec<String> {
            (frames.iter())
                .map(|frame| match &frame.payload {
                    wire::Payload::Records(Batch::Api(calls)) => {
                        format!("calls from {}", calls[0].correlation_id)
                    }
                    other => format!("{other:?}"),
                })
                .collect()
        };
        assert_eq!(outline(&read), outline(&sent));
        assert!(read == sent, "the frames hold other records");
        let stored = std::fs::read(&path).unwrap();
        let (mut at, mut compressed) = (wire::STREAM_HEADER, 0);
        while at < stored.len() {
            compressed += usize::from(stored[at + 1] == 1);
            at += wire::FRAME_HEADER
                + u32::from_le_bytes(stored[at + 4..at + 8].try_into().unwrap()) as usize;
        }
        assert_eq!(compressed, 26, "the record frames");
    }

    /// A compressed frame reaches the spool once it is compressed, though its process
    /// sends nothing more for a while: the spool keeps up with what arrived.
    #[test]
    fn a_lane_writes_a_frame_without_waiting_for_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let (intake, frames, _decoded) = compressing(dir.path());
        // Numbered, as a run's are: calls all alike would expand past what a reader takes
        // and be stored plain.
        let calls: Vec<ApiCall> = (0..10_000)
            .map(|n| ApiCall {
                correlation_id: n,
                ..ApiCall::default()
            })
            .collect();
        let mut raw = Vec::new();
        wire::encode_records(0, &Batch::Api(calls), &mut raw);
        let mut lane = intake.lane();
        lane.take(&mut raw, &frames).unwrap();
        let kept = || {
            let spool = intake.spool.lock().unwrap();
            spool.writer.as_ref().unwrap().bytes() as usize
        };
        let waited = std::time::Instant::now();
        while kept() == wire::STREAM_HEADER && waited.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let stored = kept() - wire::STREAM_HEADER;
        assert!(stored > 0, "the frame is still on its way");
        assert!(
            stored * 10 < 10_000 * ApiCall::SIZE,
            "{stored} bytes: not compressed"
        );
        drop(lane);
    }
}
