//! The runner's side of the socket: one connection per profiled process (children and MPI
//! ranks each open their own), each read on a thread of its own that numbers its frames,
//! keeps them in the spool and decodes them into one bounded queue for the stages.

use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::messages;
use crate::queue::{Closed, Sender};
use crate::record::{RecordKind, wire_size};
use crate::spool::SpoolWriter;
use crate::wire::{self, Frame, FrameReader};

/// Where every frame goes first: the raw spool, written as frames arrive, so a crash of
/// anything later loses nothing that arrived.
pub struct Intake {
    spool: Mutex<Kept>,
    /// The record kinds the stages take (indexed as [`RecordKind::ALL`]); frames of the
    /// others are kept in the spool and not decoded.
    decode: Vec<bool>,
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
    pub fn new(spool: SpoolWriter, consumes: impl Fn(RecordKind) -> bool) -> Intake {
        Intake {
            spool: Mutex::new(Kept {
                writer: Some(spool),
                error: None,
            }),
            decode: RecordKind::ALL.iter().map(|&k| consumes(k)).collect(),
        }
    }

    /// Keeps a raw frame in the spool and decodes it for the stages if they take it;
    /// `Err` once the spool is finished or the stages stopped taking frames.
    pub fn take(&self, raw: &[u8], frames: &Sender<Frame>) -> Result<(), Closed> {
        {
            let mut kept = self.spool.lock().unwrap();
            let Kept { writer, error } = &mut *kept;
            let Some(writer) = writer else {
                return Err(Closed);
            };
            if error.is_none()
                && let Err(e) = writer.write(raw)
            {
                *error = Some(e);
            }
        }
        if record_kind(raw).is_some_and(|kind| !self.decode[kind as usize]) {
            return Ok(());
        }
        match wire::decode_frame(raw) {
            Ok(frame) => frames.send(frame, raw.len()),
            Err(e) => {
                messages::runner(format_args!("dropping a frame: {e}"));
                Ok(())
            }
        }
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

/// Accepts connections until `stop` is set and no connection is left waiting; every
/// frame goes to `frames` with its stream set to its connection's number, which counts on
/// from the connections of earlier passes.
pub fn serve(
    listener: UnixListener,
    intake: Arc<Intake>,
    frames: Sender<Frame>,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
) {
    listener
        .set_nonblocking(true)
        .expect("a listening socket can be made non-blocking");
    let mut next = counts.streams.load(Ordering::Relaxed) as u16;
    loop {
        match listener.accept() {
            Ok((socket, _)) => {
                let stream = next;
                next = next.wrapping_add(1);
                counts.streams.fetch_add(1, Ordering::Relaxed);
                let now = Instant::now();
                counts.lives.lock().unwrap().push(Life {
                    connected: now,
                    last_frame: now,
                    ended: false,
                });
                let (intake, frames, counts) =
                    (Arc::clone(&intake), frames.clone(), Arc::clone(&counts));
                std::thread::spawn(move || {
                    read(socket, stream, &intake, &frames, &counts);
                    counts.update(stream, |life| life.ended = true);
                    // The spool's last user lets go before the stages see the end.
                    drop(intake);
                    drop(frames);
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // Connections made before the application exited are still accepted.
                if stop.load(Ordering::Acquire) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                messages::runner(format_args!("accepting a connection failed: {e}"));
                return;
            }
        }
    }
}

/// Reads one process's frames until it closes its end (or dies, which closes it too).
fn read(socket: UnixStream, stream: u16, intake: &Intake, frames: &Sender<Frame>, counts: &Counts) {
    let _ = socket.set_nonblocking(false);
    let mut reader = match FrameReader::new(std::io::BufReader::with_capacity(1 << 20, socket)) {
        Ok(r) => r,
        Err(e) => {
            messages::runner(format_args!("a process's stream is unreadable: {e}"));
            return;
        }
    };
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
                if intake.take(&frame, frames).is_err() {
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
