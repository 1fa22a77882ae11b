//! The runner's side of the socket: one connection per profiled process (children and MPI
//! ranks each open their own), each read on a thread of its own into one bounded queue of
//! raw frames, numbered by connection.

use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::time::Duration;

use crate::record::{RecordKind, wire_size};
use crate::wire::{self, FrameReader};

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
    frames: SyncSender<Vec<u8>>,
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
                let frames = frames.clone();
                let counts = Arc::clone(&counts);
                std::thread::spawn(move || read(socket, stream, frames, &counts));
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
fn read(socket: UnixStream, stream: u16, frames: SyncSender<Vec<u8>>, counts: &Counts) {
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
            Ok(Some(frame)) => {
                wire::set_stream(frame, stream);
                if let Some(kind) = frame[0]
                    .checked_sub(1)
                    .and_then(|k| RecordKind::ALL.get(usize::from(k)))
                {
                    let records = (frame.len() - wire::FRAME_HEADER) / wire_size(*kind);
                    counts.records.fetch_add(records as u64, Ordering::Relaxed);
                }
                if frames.send(frame.to_vec()).is_err() {
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
