//! The runner's side of the socket: one connection per profiled process (children and MPI
//! ranks each open their own), each read on a thread of its own that numbers its frames,
//! keeps them in the spool and decodes them into one bounded queue for the stages.

use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::record::{RecordKind, wire_size};
use crate::spool::SpoolWriter;
use crate::wire::{self, Frame, FrameReader};

/// Where every frame goes first: the raw spool, written as frames arrive, so a crash of
/// anything later loses nothing that arrived.
pub struct Intake {
    spool: Mutex<(SpoolWriter, Option<String>)>,
    /// The record kinds the stages take (indexed as [`RecordKind::ALL`]); frames of the
    /// others are kept in the spool and not decoded.
    decode: Vec<bool>,
}

impl Intake {
    pub fn new(spool: SpoolWriter, consumes: impl Fn(RecordKind) -> bool) -> Intake {
        Intake {
            spool: Mutex::new((spool, None)),
            decode: RecordKind::ALL.iter().map(|&k| consumes(k)).collect(),
        }
    }

    /// Keeps a raw frame in the spool and decodes it for the stages if they take it.
    pub fn take(&self, raw: &[u8], frames: &SyncSender<Frame>) -> Result<(), ()> {
        {
            let mut spool = self.spool.lock().unwrap();
            if spool.1.is_none()
                && let Err(e) = spool.0.write(raw)
            {
                spool.1 = Some(e.to_string());
            }
        }
        if record_kind(raw).is_some_and(|kind| !self.decode[kind as usize]) {
            return Ok(());
        }
        match wire::decode_frame(raw) {
            Ok(frame) => frames.send(frame).map_err(|_| ()),
            Err(e) => {
                eprintln!("rocflow: dropping a frame: {e}");
                Ok(())
            }
        }
    }

    /// Completes the spool; the error says why it is incomplete, if it is.
    pub fn finish(self) -> Option<String> {
        let (spool, error) = self.spool.into_inner().unwrap();
        error.or_else(|| spool.finish().err().map(|e| e.to_string()))
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
}

impl Default for Counts {
    fn default() -> Counts {
        Counts {
            streams: AtomicU64::new(0),
            records: RecordKind::ALL.iter().map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl Counts {
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
/// frame goes to `frames` with its stream set to its connection's number.
pub fn serve(
    listener: UnixListener,
    intake: Arc<Intake>,
    frames: SyncSender<Frame>,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
) {
    listener
        .set_nonblocking(true)
        .expect("a listening socket can be made non-blocking");
    let mut next: u16 = 0;
    loop {
        match listener.accept() {
            Ok((socket, _)) => {
                let stream = next;
                next = next.wrapping_add(1);
                counts.streams.fetch_add(1, Ordering::Relaxed);
                let (intake, frames, counts) =
                    (Arc::clone(&intake), frames.clone(), Arc::clone(&counts));
                std::thread::spawn(move || {
                    read(socket, stream, &intake, &frames, &counts);
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
                eprintln!("rocflow: accepting a connection failed: {e}");
                return;
            }
        }
    }
}

/// Reads one process's frames until it closes its end (or dies, which closes it too).
fn read(
    socket: UnixStream,
    stream: u16,
    intake: &Intake,
    frames: &SyncSender<Frame>,
    counts: &Counts,
) {
    let _ = socket.set_nonblocking(false);
    let mut reader = match FrameReader::new(std::io::BufReader::with_capacity(1 << 20, socket)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rocflow: a process's stream is unreadable: {e}");
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
                if intake.take(&frame, frames).is_err() {
                    return;
                }
            }
            Ok(false) => return,
            // A process killed mid-frame: everything before the frame was kept.
            Err(wire::WireError::Truncated { .. }) => return,
            Err(e) => {
                eprintln!("rocflow: stream {stream}: {e}; its later frames are dropped");
                return;
            }
        }
    }
}
