//! The raw spool: every frame of a run, as received, in one file (`run.rfraw`).
//!
//! Frames are appended as they arrive, so a crash leaves a readable prefix: the reader
//! stops at the first incomplete or corrupt frame and says which, keeping what came before.
//! The writer records the spool's end when it closes it with every frame it took, so a
//! spool cut short between two frames (its runner killed, its disk full) is told from a
//! whole one.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{Sender, channel};
use std::thread::JoinHandle;

use crate::wire::{self, Frame, FrameError, FrameReader, WireError};

/// Appends frames to a spool file.
pub struct SpoolWriter {
    out: BufWriter<File>,
    bytes: u64,
    /// Where the writeback asked for so far ends.
    written_back: u64,
    writeback: Option<Writeback>,
    /// Whether a write failed: the frames after it are missing, so the spool takes no more
    /// and its end is not recorded.
    failed: bool,
}

/// Bytes written between requests to the kernel to start writing them to disk.
const WRITEBACK: u64 = 32 << 20;

/// A thread that asks the kernel to write the spool to disk as it grows, so that the run's
/// closing sync waits for the last stretch only instead of the whole spool (which the
/// kernel would otherwise keep in memory: a 600 MiB spool took a quarter of a second to
/// sync). The request can wait for the disk's queue, so it is not made on the thread that
/// writes, which would hold the application back meanwhile.
struct Writeback {
    /// Where each stretch written ends.
    ends: Sender<u64>,
    thread: JoinHandle<()>,
}

impl Writeback {
    /// The thread for `file`; without a descriptor or a thread, the closing sync does all.
    fn start(file: &File) -> Option<Writeback> {
        let file = file.try_clone().ok()?;
        let (ends, written) = channel::<u64>();
        let thread = std::thread::Builder::new()
            .name("spool writeback".into())
            .spawn(move || {
                let mut from = 0;
                while let Ok(mut to) = written.recv() {
                    // Stretches that came while the last request waited go as one.
                    to = written.try_iter().fold(to, u64::max);
                    start_writeback(&file, from, to);
                    from = to;
                }
            })
            .ok()?;
        Some(Writeback { ends, thread })
    }
}

impl SpoolWriter {
    /// Creates (or truncates) the spool and writes the stream header.
    pub fn create(path: &Path) -> io::Result<SpoolWriter> {
        SpoolWriter::start(File::create(path)?)
    }

    /// Creates the spool, failing if the file exists: a run never replaces another's.
    pub fn create_new(path: &Path) -> io::Result<SpoolWriter> {
        SpoolWriter::start(File::create_new(path)?)
    }

    fn start(file: File) -> io::Result<SpoolWriter> {
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(&wire::stream_header())?;
        Ok(SpoolWriter {
            writeback: Writeback::start(out.get_ref()),
            out,
            bytes: wire::STREAM_HEADER as u64,
            written_back: 0,
            failed: false,
        })
    }

    /// Appends encoded frames (see [`wire::encode_records`] and [`wire::encode_meta`]).
    /// After a failed write every later one fails: a spool never skips frames.
    pub fn write(&mut self, frames: &[u8]) -> io::Result<()> {
        if self.failed {
            return Err(io::Error::other("an earlier write to the spool failed"));
        }
        self.bytes += frames.len() as u64;
        if let Err(e) = self.out.write_all(frames) {
            self.failed = true;
            return Err(e);
        }
        let in_file = self.bytes - self.out.buffer().len() as u64;
        if in_file - self.written_back >= WRITEBACK
            && let Some(writeback) = &self.writeback
        {
            // A thread that stopped leaves the work to the closing sync.
            let _ = writeback.ends.send(in_file);
            self.written_back = in_file;
        }
        Ok(())
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Records the spool's end, after every frame written, then flushes and syncs the file;
    /// a spool a write failed in is synced as it is, its end not recorded.
    pub fn finish(mut self) -> io::Result<()> {
        let ended = match self.failed {
            true => Err(io::Error::other(
                "a write to the spool failed, so its end is not recorded",
            )),
            false => {
                let mut end = Vec::new();
                wire::encode_end(self.bytes, &mut end);
                self.out.write_all(&end)
            }
        };
        if let Some(Writeback { ends, thread }) = self.writeback {
            drop(ends);
            let _ = thread.join();
        }
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        let synced = file.sync_all();
        ended.and(synced)
    }
}

/// Asks the kernel to start writing bytes `from..to` of `file` to disk, without waiting for
/// the writes (the request itself waits when the disk's queue is full). A failure only
/// leaves the work to the closing sync.
fn start_writeback(file: &File, from: u64, to: u64) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid descriptor, and a range of it; the call reads no memory of ours.
    unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            from as libc::off64_t,
            (to - from) as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}

/// How reading a spool ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// Every frame was read, up to the end its writer recorded.
    Complete,
    /// Every frame in the file was read, and no end is recorded after them: the run was cut
    /// short between two frames (its runner killed, its disk full). A spool of a format
    /// `version` before [`wire::ENDS_RECORDED`] records none, and may or may not be whole.
    Unrecorded { version: u16 },
    /// The last frame was cut short (the run was killed while writing it); it was dropped.
    Truncated { offset: u64, missing: usize },
    /// A frame failed its checks; it and everything after it were dropped.
    Corrupt { offset: u64, reason: FrameError },
}

impl Ending {
    /// A warning for the user, `None` for a complete spool.
    pub fn warning(&self) -> Option<String> {
        match self {
            Ending::Complete => None,
            Ending::Unrecorded { version } if *version < wire::ENDS_RECORDED => Some(format!(
                "the spool's end is not recorded (its format, version {version}, records none): whether its run was cut short cannot be told"
            )),
            Ending::Unrecorded { .. } => Some(
                "the spool's end is not recorded: its run was cut short (the runner killed, or its disk full); using the frames it holds".into(),
            ),
            Ending::Truncated { offset, missing } => Some(format!(
                "the spool ends inside a frame at byte {offset} ({missing} bytes missing, the run was probably interrupted); using the frames before it"
            )),
            Ending::Corrupt { offset, reason } => Some(format!(
                "the spool is corrupt at byte {offset} ({reason}); using the frames before it"
            )),
        }
    }
}

/// Reads a spool's frames in order. Iteration stops at the end of the valid prefix;
/// [`SpoolReader::ending`] then says why.
pub struct SpoolReader {
    frames: FrameReader<BufReader<File>>,
    /// A buffer per frame read at once (see [`FrameReader::next_frames`]).
    raw: Vec<Vec<u8>>,
    /// Frames decoded and not yet taken.
    decoded: VecDeque<Frame>,
    /// What ended the frames in `decoded`, once they are taken.
    after: Option<WireError>,
    ending: Option<Ending>,
}

/// Frames read and decoded at once at most: enough for reading to keep ahead of the
/// sinks, few enough that the frames waiting add little memory (a frame of a `trace-all`
/// run holds about 7 MiB decoded). On 16 cores, a 20 M-record spool compressed with zstd
/// was read in 0.66 s at 4 and 0.47 s at 8 (1.5 s one at a time), and the replays that
/// reading bounds took it: at 8, CSV 11.8-12.7 -> 13.2-13.4 M records/s and Parquet
/// 13.9-14.1 -> 15.3-15.6 (one run, the builds in turns), their peaks 7 to 24 MiB higher.
/// Decoding on a pool of its own instead, beside the sinks' work, was no faster.
const DECODED_AT_ONCE: usize = 8;

/// Bytes the reader buffers: little, so that a frame's payload (hundreds of KiB) is read
/// from the file straight into its frame past the few bytes buffered, not copied through
/// the buffer. At 1 MiB, a 20 M-record replay's reading thread ran 0.38 s of CPU on 16
/// cores; at 64 KiB, 0.29-0.30 s.
const READ_BUFFER: usize = 64 << 10;

impl SpoolReader {
    /// Opens a spool; fails if the file is missing or is not a spool of a version this
    /// rocflow reads.
    pub fn open(path: &Path) -> Result<SpoolReader, WireError> {
        let file = BufReader::with_capacity(READ_BUFFER, File::open(path)?);
        let at_once = rayon::current_num_threads().clamp(1, DECODED_AT_ONCE);
        Ok(SpoolReader {
            frames: FrameReader::kept(file)?,
            raw: vec![Vec::new(); at_once],
            decoded: VecDeque::new(),
            after: None,
            ending: None,
        })
    }

    /// Why iteration stopped; `None` while frames remain.
    pub fn ending(&self) -> Option<&Ending> {
        self.ending.as_ref()
    }
}

impl Iterator for SpoolReader {
    type Item = Result<Frame, io::Error>;

    /// The next frame; an I/O error reading the file is passed on, a truncated or corrupt
    /// frame ends the iteration.
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(frame) = self.decoded.pop_front() {
                return Some(Ok(frame));
            }
            if self.ending.is_some() {
                return None;
            }
            let read = match self.after.take() {
                Some(error) => Err(error),
                None => self.frames.next_frames(&mut self.raw, &mut self.decoded),
            };
            let ending = match read {
                Err(error) if !self.decoded.is_empty() => {
                    self.after = Some(error);
                    continue;
                }
                Ok(()) if !self.decoded.is_empty() => continue,
                Ok(()) if self.frames.end_recorded() => Ending::Complete,
                Ok(()) => Ending::Unrecorded {
                    version: self.frames.version(),
                },
                Err(WireError::Truncated { offset, missing }) => {
                    Ending::Truncated { offset, missing }
                }
                Err(WireError::Corrupt { offset, reason }) => Ending::Corrupt { offset, reason },
                Err(WireError::Io(e)) => return Some(Err(e)),
                Err(other @ (WireError::NotASpool | WireError::Version(_))) => {
                    unreachable!("the header was checked on open: {other}")
                }
            };
            self.ending = Some(ending);
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writer asks for the writeback of each stretch of `WRITEBACK` bytes once the
    /// stretch is in the file (not in the writer's buffer), and of nothing beyond it.
    #[test]
    fn writeback_is_asked_for_each_stretch_once_it_is_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.rfraw");
        let mut writer = SpoolWriter::create(&path).unwrap();
        let (ends, asked) = channel();
        // In place of the thread, which would ask the kernel.
        writer.writeback = Some(Writeback {
            ends,
            thread: std::thread::spawn(|| ()),
        });
        // Smaller than the writer's buffer, which holds some of them at any time.
        let piece = vec![0; 100 << 10];
        let mut ends = Vec::new();
        for _ in 0..1200 {
            writer.write(&piece).unwrap();
            let in_file = std::fs::metadata(&path).unwrap().len();
            for end in asked.try_iter() {
                assert!(
                    end <= in_file,
                    "{end} bytes asked for, {in_file} in the file"
                );
                ends.push(end);
            }
        }
        writer.finish().unwrap();
        // 117 MiB written: three whole stretches, in order.
        assert_eq!(ends.len(), 3, "{ends:?}");
        assert!(ends[0] >= WRITEBACK);
        assert!(
            ends.windows(2).all(|w| w[1] - w[0] >= WRITEBACK),
            "{ends:?}"
        );
    }
}
