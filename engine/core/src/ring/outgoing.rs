//! The tool's end: the writer copies frames into the ring, or describes the slot they were
//! encoded in.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;

use crate::record::Out;

use super::slots::{Memory, Slot};
use super::sys::{futex_wait, hung_up, send, send_all, send_with_fd};
use super::{Description, FrameBuffer, Layout, NAP, Shared, Slots};

/// How the tool's writer sends its stream.
pub enum Outgoing {
    Ring(Writer),
    Socket(UnixStream),
}

impl Outgoing {
    /// Shares memory of `layout` with the runner at the other end of `socket`, or keeps to
    /// the socket where this system makes no sealed memfd.
    pub fn connect(socket: UnixStream, layout: Layout) -> io::Result<Outgoing> {
        let Ok((fd, shared)) = make_memory(layout) else {
            return Ok(Outgoing::Socket(socket));
        };
        send_with_fd(&socket, &layout.hello(), fd.as_raw_fd())?;
        Ok(Outgoing::Ring(Writer {
            shared: Arc::new(shared),
            socket,
            written: 0,
            described: 0,
        }))
    }

    /// The slots frames can be encoded in, for any thread; `None` without shared memory.
    pub fn slots(&self) -> Option<Slots> {
        match self {
            Outgoing::Ring(writer) if writer.shared.layout.slots > 0 => {
                Some(Slots(Arc::clone(&writer.shared)))
            }
            _ => None,
        }
    }

    /// Sends a buffer of frames: a slot is only described, heap bytes are written and
    /// flushed, and their vector handed back for reuse.
    pub fn send(&mut self, mut frames: FrameBuffer) -> io::Result<Option<Vec<u8>>> {
        let len = frames.len;
        match (self, frames.memory) {
            (Outgoing::Ring(writer), Memory::Slot(slot)) if len > 0 => {
                writer.send_slot(slot, len)?;
                Ok(None)
            }
            // An empty slot is freed. Slots come from a ring only: should one reach a
            // socket, its bytes are sent.
            (out, Memory::Slot(slot)) => {
                frames.memory = Memory::Slot(slot);
                out.write_all(frames.bytes()).map(|()| None)
            }
            (out, Memory::Heap(mut bytes)) => {
                // SAFETY: the first `len` bytes were put there.
                unsafe { bytes.set_len(len) };
                out.write_all(&bytes)?;
                out.flush()?;
                Ok(Some(bytes))
            }
        }
    }

    /// Ends the stream: the runner reads what was sent, then its end.
    pub fn shutdown(&self) {
        let socket = match self {
            Outgoing::Ring(writer) => &writer.socket,
            Outgoing::Socket(socket) => socket,
        };
        let _ = socket.shutdown(std::net::Shutdown::Both);
    }
}

/// Bytes written to a ring reach the runner when flushed, so that a run of frames costs
/// one description.
impl Write for Outgoing {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Outgoing::Ring(writer) => writer.write(bytes),
            Outgoing::Socket(socket) => send(socket, bytes),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Outgoing::Ring(writer) => writer.flush(),
            Outgoing::Socket(_) => Ok(()),
        }
    }
}

/// A sealed memfd of `layout`, mapped.
pub(super) fn make_memory(layout: Layout) -> io::Result<(OwnedFd, Shared)> {
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: a NUL-terminated name.
    let fd = unsafe { libc::memfd_create(c"rocflow-ring".as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just made, owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    // SAFETY: plain calls on a descriptor we own.
    let made = unsafe {
        libc::ftruncate(fd.as_raw_fd(), layout.len() as libc::off_t) == 0
            && libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) == 0
    };
    if !made {
        return Err(io::Error::last_os_error());
    }
    let shared = Shared::map(&fd, layout)?;
    Ok((fd, shared))
}

/// The tool's end of a ring stream.
pub struct Writer {
    shared: Arc<Shared>,
    socket: UnixStream,
    /// Bytes put in the ring since the start, and those of them described to the runner.
    written: u64,
    described: u64,
}

impl Writer {
    fn free(&self) -> usize {
        let consumed = self.shared.control().consumed.load(SeqCst);
        let held = self.written.saturating_sub(consumed) as usize;
        self.shared.layout.capacity.saturating_sub(held)
    }

    /// Waits until the ring has room for `wanted` bytes or a quarter of it, whichever is
    /// less (so a full ring is not refilled a few bytes at a time), and says how much.
    fn room(&mut self, wanted: usize) -> io::Result<usize> {
        let enough = wanted.min(self.shared.layout.capacity / 4);
        if self.free() < enough {
            // The runner frees only what it was told of.
            self.flush()?;
        }
        let control = self.shared.control();
        loop {
            let seen = control.wake.load(SeqCst);
            let free = self.free();
            if free >= enough {
                return Ok(free);
            }
            // Registered before looking again, so the runner either sees the waiter or
            // has freed space that this look sees.
            control.waiters.fetch_add(1, SeqCst);
            if self.free() < enough {
                futex_wait(&control.wake, seen, NAP);
            }
            control.waiters.fetch_sub(1, SeqCst);
            if hung_up(&self.socket) {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
        }
    }

    /// Describes a slot's frames, after the ring's bytes written before them; the slot is
    /// the runner's to free from then on.
    fn send_slot(&mut self, slot: Slot, len: usize) -> io::Result<()> {
        self.flush()?;
        send_all(&self.socket, &slot.hand_over(len).encode())
    }
}

impl Write for Writer {
    /// Copies as much of `bytes` into the ring as it has room for.
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if bytes.is_empty() {
            return Ok(0);
        }
        let len = self.room(bytes.len())?.min(bytes.len());
        self.shared.copy_in(self.written, &bytes[..len]);
        self.written += len as u64;
        Ok(len)
    }

    /// Tells the runner of the bytes written since the last time: at most a ring's worth.
    fn flush(&mut self) -> io::Result<()> {
        let added = self.written - self.described;
        if added > 0 {
            send_all(&self.socket, &Description::Ring(added as u32).encode())?;
            self.described = self.written;
        }
        Ok(())
    }
}
