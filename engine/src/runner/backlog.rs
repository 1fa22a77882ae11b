//! Frames on their way from the processes' connections to the stages. Up to a budget of
//! bytes they wait in memory, decoded. Past it, while the stages are behind, they wait as
//! they came, in an unlinked file beside the spool, and are decoded when the stages reach
//! them. So a sink slower than the application never holds the application back (its SDK
//! buffers full, its threads waiting on them, its timeline stretched), and memory stays
//! bounded however far behind the sinks fall. The file gives its space back as the stages
//! read it.
//!
//! Order: a connection's frames reach the stages in the order it sent them. Frames in
//! memory are always taken before those in the file, and none goes into memory while any
//! waits in the file; a frame a connection put in memory is there before its next one can
//! go to the file.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::messages;
use crate::queue::Closed;
use crate::wire::{self, Frame};

/// File bytes the stages have read before their space is given back: a few punches per
/// GiB.
const GIVE_BACK: u64 = 32 << 20;

/// A backlog whose frames wait in memory up to `budget` bytes (one frame however large),
/// and past that in a file in `dir`.
pub fn channel(budget: usize, dir: &Path) -> (Sender, Receiver) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queued: VecDeque::new(),
            bytes: 0,
            file: None,
            read: 0,
            written: 0,
            given_back: 0,
            senders: 1,
            closed: false,
            warned: false,
        }),
        arrived: Condvar::new(),
        taken: Condvar::new(),
        budget,
        dir: dir.to_owned(),
    });
    (
        Sender {
            shared: Arc::clone(&shared),
        },
        Receiver {
            shared,
            raw: Vec::new(),
        },
    )
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a frame comes or the last sender goes.
    arrived: Condvar,
    /// Signalled when the stages take a frame, or stop taking any.
    taken: Condvar,
    budget: usize,
    dir: PathBuf,
}

struct State {
    /// Frames in memory, with their sizes as they came.
    queued: VecDeque<(Frame, usize)>,
    bytes: usize,
    /// The file frames wait in, once one had to; each is its length (4 bytes, little
    /// endian) and its bytes, from `read` to `written`.
    file: Option<Arc<File>>,
    read: u64,
    written: u64,
    /// The file's bytes up to here have been given back.
    given_back: u64,
    senders: usize,
    /// The stages take no more frames.
    closed: bool,
    /// The user was told that frames could not wait in the file.
    warned: bool,
}

impl State {
    /// Frames wait in the file: later ones must wait behind them.
    fn behind(&self) -> bool {
        self.written > self.read
    }
}

impl Shared {
    /// The state, whatever a panicking holder left: every step leaves it consistent.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A raw frame of a live stream (this version's) decoded for the stages; a frame that does
/// not decode is dropped, and said.
fn decode(raw: &[u8]) -> Option<Frame> {
    wire::decode_frame(raw, wire::VERSION)
        .map_err(|e| messages::runner(format_args!("dropping a frame: {e}")))
        .ok()
}

pub struct Sender {
    shared: Arc<Shared>,
}

impl Clone for Sender {
    fn clone(&self) -> Self {
        self.shared.state().senders += 1;
        Sender {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.shared.state().senders -= 1;
        self.shared.arrived.notify_all();
    }
}

impl Sender {
    /// Hands a raw frame to the stages: decoded in memory if there is room and nothing
    /// waits in the file, otherwise into the file. Waits only where the file cannot be
    /// written (then for room in memory, as if there were no file). `Err` once the stages
    /// take no more frames.
    pub fn send(&self, raw: &[u8]) -> Result<(), Closed> {
        let shared = &*self.shared;
        let mut state = shared.state();
        if state.closed {
            return Err(Closed);
        }
        let fits = |state: &State| state.bytes == 0 || state.bytes + raw.len() <= shared.budget;
        if state.behind() || !fits(&state) {
            match spill(&mut state, &shared.dir, raw) {
                Ok(()) => {
                    drop(state);
                    shared.arrived.notify_one();
                    return Ok(());
                }
                Err(e) => {
                    if !std::mem::replace(&mut state.warned, true) {
                        messages::warning(format_args!(
                            "the outputs are behind the application, and its records cannot wait for them in {} ({e}): the application waits for them instead (free space there, or give --spool a path on another disk)",
                            shared.dir.display()
                        ));
                    }
                    state = (shared.taken)
                        .wait_while(state, |s| !s.closed && (s.behind() || !fits(s)))
                        .unwrap_or_else(PoisonError::into_inner);
                    if state.closed {
                        return Err(Closed);
                    }
                }
            }
        }
        // The room is this frame's while it is decoded, outside the lock.
        state.bytes += raw.len();
        drop(state);
        let frame = decode(raw);
        let mut state = shared.state();
        match frame {
            Some(frame) => state.queued.push_back((frame, raw.len())),
            None => state.bytes -= raw.len(),
        }
        drop(state);
        shared.arrived.notify_one();
        Ok(())
    }
}

/// Appends `raw` to the file, created on the first frame that needs it.
fn spill(state: &mut State, dir: &Path, raw: &[u8]) -> io::Result<()> {
    let file = match &state.file {
        Some(file) => file,
        None => state.file.insert(Arc::new(tempfile::tempfile_in(dir)?)),
    };
    let len = u32::try_from(raw.len()).map_err(|_| io::Error::other("a frame over 4 GiB"))?;
    file.write_all_at(&len.to_le_bytes(), state.written)?;
    file.write_all_at(raw, state.written + 4)?;
    state.written += 4 + raw.len() as u64;
    Ok(())
}

pub struct Receiver {
    shared: Arc<Shared>,
    /// The frame read from the file.
    raw: Vec<u8>,
}

impl Drop for Receiver {
    /// Senders waiting for room give up.
    fn drop(&mut self) {
        self.shared.state().closed = true;
        self.shared.taken.notify_all();
    }
}

impl Receiver {
    /// The next frame, waiting up to `timeout` for one; `Disconnected` once every sender
    /// is gone and no frame is left.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<Frame, RecvTimeoutError> {
        let deadline = Instant::now() + timeout;
        let shared = Arc::clone(&self.shared);
        let mut state = shared.state();
        loop {
            if let Some((frame, bytes)) = state.queued.pop_front() {
                state.bytes -= bytes;
                drop(state);
                shared.taken.notify_all();
                return Ok(frame);
            }
            if state.behind() {
                let (file, at) = (Arc::clone(state.file.as_ref().expect("behind")), state.read);
                // The frames between `read` and `written` stay as they are: read unlocked.
                drop(state);
                let read = self.read_at(&file, at);
                state = shared.state();
                let read = match read {
                    Ok(len) => {
                        state.read = at + 4 + len as u64;
                        true
                    }
                    Err(e) => {
                        let lost = state.written - at;
                        messages::runner(format_args!(
                            "{lost} bytes of frames waiting on disk for the stages cannot be read back ({e}): their records are missing from the outputs (the spool has them)"
                        ));
                        state.read = state.written;
                        false
                    }
                };
                give_back(&mut state);
                // A sender without a file waits for the file to empty, too.
                shared.taken.notify_all();
                if read {
                    drop(state);
                    if let Some(frame) = decode(&self.raw) {
                        return Ok(frame);
                    }
                    state = shared.state();
                }
                continue;
            }
            if state.senders == 0 {
                return Err(RecvTimeoutError::Disconnected);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RecvTimeoutError::Timeout);
            }
            state = (shared.arrived.wait_timeout(state, left))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Whether every sender has gone: no frame will come that is not already here.
    pub fn senders_gone(&self) -> bool {
        self.shared.state().senders == 0
    }

    /// Reads the frame at `at` into `self.raw`; returns its length.
    fn read_at(&mut self, file: &File, at: u64) -> io::Result<usize> {
        let mut len = [0; 4];
        file.read_exact_at(&mut len, at)?;
        let len = u32::from_le_bytes(len) as usize;
        self.raw.resize(len, 0);
        file.read_exact_at(&mut self.raw, at + 4)?;
        Ok(len)
    }
}

/// Gives the file's space back: all of it once the stages have read every frame (the next
/// frames start it again), or what they have read, a stretch at a time.
fn give_back(state: &mut State) {
    let Some(file) = &state.file else { return };
    if !state.behind() {
        // A file that cannot shrink only keeps its space until the run ends.
        let _ = file.set_len(0);
        (state.read, state.written, state.given_back) = (0, 0, 0);
    } else if state.read - state.given_back >= GIVE_BACK {
        let end = state.read & !(GIVE_BACK - 1);
        punch(file, state.given_back, end - state.given_back);
        state.given_back = end;
    }
}

/// Frees `len` bytes of `file` from `offset`, which then read as zeros; a file system that
/// cannot only keeps them until the file shrinks.
fn punch(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid descriptor and a range of it; the call touches no memory of ours.
    unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset as libc::off_t,
            len as libc::off_t,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ApiCall, Batch};
    use crate::wire::Payload;

    /// A raw frame of `n` API calls of stream `stream`, the first numbered `first`.
    fn raw(stream: u16, first: u64, n: u64) -> Vec<u8> {
        let calls = (first..first + n)
            .map(|i| ApiCall {
                correlation_id: i,
                ..ApiCall::default()
            })
            .collect();
        let mut raw = Vec::new();
        wire::encode_records(stream, &Batch::Api(calls), &mut raw);
        raw
    }

    /// The correlation ids of a frame of API calls.
    fn ids(frame: &Frame) -> Vec<u64> {
        match &frame.payload {
            Payload::Records(Batch::Api(calls)) => calls.iter().map(|c| c.correlation_id).collect(),
            other => panic!("{other:?}"),
        }
    }

    fn recv(receiver: &mut Receiver) -> Frame {
        receiver.recv_timeout(Duration::from_secs(5)).unwrap()
    }

    /// The file's length now.
    fn on_disk(receiver: &Receiver) -> u64 {
        let state = receiver.shared.state();
        state
            .file
            .as_ref()
            .map_or(0, |f| f.metadata().unwrap().len())
    }

    /// A sender with no one taking its frames still sends them all at once, past the
    /// budget, and they come out in order; memory held no more than the budget meanwhile,
    /// and the file is emptied once they are all taken.
    #[test]
    fn frames_past_the_budget_wait_on_disk_without_holding_the_sender() {
        let dir = tempfile::tempdir().unwrap();
        let frame = raw(0, 0, 10).len();
        let (sender, mut receiver) = channel(3 * frame, dir.path());
        let sending = std::thread::spawn(move || {
            for i in 0..100 {
                sender.send(&raw(0, i * 10, 10)).unwrap();
            }
        });
        // Nothing is taken until every frame is sent: a sender waiting for room would
        // never finish.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !sending.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(sending.is_finished(), "the sender waits for the stages");
        sending.join().unwrap();
        assert_eq!(receiver.shared.state().bytes, 3 * frame);
        assert!(on_disk(&receiver) >= 97 * frame as u64);

        let taken: Vec<u64> = (0..100).flat_map(|_| ids(&recv(&mut receiver))).collect();
        assert_eq!(taken, (0..1000).collect::<Vec<_>>());
        assert_eq!(on_disk(&receiver), 0, "the file keeps its space");
        assert!(matches!(
            receiver.recv_timeout(Duration::from_millis(10)),
            Err(RecvTimeoutError::Disconnected)
        ));
    }

    /// Connections sending at once while the stages take their frames, slower: each
    /// connection's frames come out in its order, through memory and the file alike.
    #[test]
    fn each_senders_frames_keep_their_order_through_memory_and_disk() {
        let dir = tempfile::tempdir().unwrap();
        let (sender, mut receiver) = channel(2 * raw(0, 0, 5).len(), dir.path());
        let senders: Vec<_> = (0..4u16)
            .map(|stream| {
                let sender = sender.clone();
                std::thread::spawn(move || {
                    for i in 0..300 {
                        sender.send(&raw(stream, i * 5, 5)).unwrap();
                        if i % 5 == 0 {
                            std::thread::sleep(Duration::from_micros(200));
                        }
                    }
                })
            })
            .collect();
        drop(sender);
        let (mut next, mut taken, mut waited_on_disk) = ([0u64; 4], 0, false);
        loop {
            match receiver.recv_timeout(Duration::from_secs(5)) {
                Ok(frame) => {
                    let stream = usize::from(frame.stream);
                    let ids = ids(&frame);
                    assert_eq!(ids[0], next[stream], "stream {stream} out of order");
                    next[stream] = ids[ids.len() - 1] + 1;
                    taken += 1;
                    if taken % 20 == 0 {
                        waited_on_disk |= on_disk(&receiver) > 0;
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!("frames stopped coming"),
            }
        }
        senders.into_iter().for_each(|s| s.join().unwrap());
        assert_eq!(next, [1500; 4]);
        assert!(waited_on_disk, "no frame had to wait on disk");
    }

    /// While the stages are behind, the file gives back the space of the frames they have
    /// read, a stretch at a time, though more frames wait after them.
    #[test]
    fn the_file_gives_back_what_the_stages_have_read() {
        let dir = tempfile::tempdir().unwrap();
        let frame = raw(0, 0, 20_000);
        let (sender, mut receiver) = channel(frame.len(), dir.path());
        let stretch = GIVE_BACK as usize / frame.len() + 1;
        for _ in 0..2 * stretch + 1 {
            sender.send(&frame).unwrap();
        }
        let held = |receiver: &Receiver| {
            use std::os::unix::fs::MetadataExt;
            let state = receiver.shared.state();
            state.file.as_ref().unwrap().metadata().unwrap().blocks() * 512
        };
        let before = held(&receiver);
        assert!(before >= 2 * GIVE_BACK, "{before} bytes on disk");
        // The frame in memory, then a stretch's worth from the file.
        for _ in 0..=stretch {
            recv(&mut receiver);
        }
        let after = held(&receiver);
        assert!(
            after <= before - GIVE_BACK,
            "{before} then {after} bytes on disk"
        );
        assert!(on_disk(&receiver) > 0, "frames still wait in the file");
    }

    /// Where the file cannot be made, frames wait for room in memory, as before there was
    /// a file: a frame taken lets the next in; senders still waiting give up once the
    /// stages stop.
    #[test]
    fn without_a_file_senders_wait_for_room() {
        let dir = Path::new("/nonexistent/dir");
        let (sender, mut receiver) = channel(raw(0, 0, 5).len(), dir);
        let sender = Arc::new(sender);
        let send = |first| {
            let sender = Arc::clone(&sender);
            std::thread::spawn(move || sender.send(&raw(0, first, 5)))
        };
        sender.send(&raw(0, 0, 5)).unwrap();
        let waiting = send(5);
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !waiting.is_finished(),
            "a frame past the budget went nowhere"
        );
        assert_eq!(ids(&recv(&mut receiver))[0], 0);
        waiting.join().unwrap().unwrap();
        let waiting = send(10);
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !waiting.is_finished(),
            "a frame past the budget went nowhere"
        );
        drop(receiver);
        assert!(waiting.join().unwrap().is_err());
    }
}
