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
}

impl Intake {
    pub fn new(spool: SpoolWriter) -> Intake {
        Intake {
            spool: Mutex::new((spool, None)),
        }
    }

    /// Keeps a raw frame in the spool and decodes it for the stages.
    pub fn take(&self, raw: &[u8], frames: &SyncSender<Frame>) -> Result<(), ()> {
        {
            let mut spool = self.spool.lock().unwrap();
            if spool.1.is_none()
                && let Err(e) = spool.0.write(raw)
            {
                spool.1 = Some(e.to_string());
            }
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

/// What the listener counts for the progress line and the summary.
#[derive(Default)]
pub struct Counts {
    pub streams: AtomicU64,
    pub records: AtomicU64,
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
    loop {
        match reader.next_raw() {
            Ok(Some(mut frame)) => {
                wire::set_stream(&mut frame, stream);
                if let Some(kind) = frame[0]
                    .checked_sub(1)
                    .and_then(|k| RecordKind::ALL.get(usize::from(k)))
                {
                    let records = (frame.len() - wire::FRAME_HEADER) / wire_size(*kind);
                    counts.records.fetch_add(records as u64, Ordering::Relaxed);
                }
                if intake.take(&frame, frames).is_err() {
                    return;
                }
            }
            Ok(None) => return,
            // A process killed mid-frame: everything before the frame was kept.
            Err(wire::WireError::Truncated { .. }) => return,
            Err(e) => {
                eprintln!("rocflow: stream {stream}: {e}; its later frames are dropped");
                return;
            }
        }
    }
}
