//! The runner's end: what it maps, and the bytes it copies out of the ring and the slots,
//! each checked against the layout first.

use std::io::{self, BufReader, Cursor, Read};
use std::mem::zeroed;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::ptr;
use std::sync::atomic::Ordering::{self, SeqCst};

use crate::wire::read_full;

use super::sys::{futex_wake, receive_hello};
use super::{Description, FREE, HELLO, Layout, MAGIC, Shared, invalid};

/// How the runner reads a process's stream.
pub enum Incoming {
    Ring(Reader),
    Socket(io::Chain<Cursor<Vec<u8>>, BufReader<UnixStream>>),
}

impl Incoming {
    /// Tells a ring stream from a plain one by its first bytes, and maps a ring's memory
    /// once it has checked that it is sealed and of the layout announced.
    pub fn accept(socket: UnixStream) -> io::Result<Incoming> {
        let (first, fd) = receive_hello(&socket)?;
        let Some(hello) = (first.get(..HELLO))
            .and_then(|hello| <&[u8; HELLO]>::try_from(hello).ok())
            .filter(|hello| hello[..8] == MAGIC)
        else {
            let rest = BufReader::with_capacity(1 << 20, socket);
            return Ok(Incoming::Socket(Cursor::new(first).chain(rest)));
        };
        let layout = Layout::of_hello(hello)?;
        let fd = fd.ok_or_else(|| invalid("it announced a ring but sent no memory".into()))?;
        check_memory(&fd, layout.len() as u64)?;
        Ok(Incoming::Ring(Reader {
            shared: Shared::map(&fd, layout)?,
            socket: BufReader::with_capacity(4096, socket),
            read: 0,
            described: 0,
            slot: None,
        }))
    }
}

impl Read for Incoming {
    fn read(&mut self, into: &mut [u8]) -> io::Result<usize> {
        match self {
            Incoming::Ring(reader) => reader.read(into),
            Incoming::Socket(socket) => socket.read(into),
        }
    }
}

/// A memfd that cannot shrink under the mapping (which would fault the runner) and is
/// `len` bytes long.
fn check_memory(fd: &OwnedFd, len: u64) -> io::Result<()> {
    // SAFETY: plain calls on a descriptor we own, into a zeroed stat.
    let (seals, size) = unsafe {
        let mut stat: libc::stat = zeroed();
        let seals = libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS);
        let size = (libc::fstat(fd.as_raw_fd(), &mut stat) == 0).then_some(stat.st_size as u64);
        (seals, size)
    };
    if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
        return Err(invalid(
            "its shared memory is not sealed against shrinking".into(),
        ));
    }
    if size != Some(len) {
        return Err(invalid(format!(
            "its shared memory is {} bytes, not the {len} announced",
            size.unwrap_or(0)
        )));
    }
    Ok(())
}

/// The runner's end of a ring stream.
pub struct Reader {
    shared: Shared,
    /// The descriptions, in order.
    socket: BufReader<UnixStream>,
    /// Bytes copied out of the ring, and bytes the socket has described there, since the
    /// start.
    read: u64,
    described: u64,
    /// The slot being copied out, if one is.
    slot: Option<SlotRead>,
}

/// A slot the socket described: its index, its length and the bytes copied out so far.
struct SlotRead {
    index: usize,
    len: usize,
    read: usize,
}

impl Read for Reader {
    fn read(&mut self, into: &mut [u8]) -> io::Result<usize> {
        if into.is_empty() {
            return Ok(0);
        }
        loop {
            if self.read < self.described {
                return Ok(self.read_ring(into));
            }
            if let Some(slot) = self.slot.take() {
                return Ok(self.read_slot(slot, into));
            }
            match self.next_description()? {
                None => return Ok(0),
                Some(description) => self.take(description)?,
            }
        }
    }
}

impl Reader {
    /// Copies out what `into` takes of the ring's bytes described and not yet read, and
    /// lets the writer reuse their room.
    fn read_ring(&mut self, into: &mut [u8]) -> usize {
        let len = into.len().min((self.described - self.read) as usize);
        self.shared.copy_out(self.read, &mut into[..len]);
        self.read += len as u64;
        let control = self.shared.control();
        control.consumed.store(self.read, SeqCst);
        if control.waiters.load(SeqCst) != 0 {
            control.wake.fetch_add(1, SeqCst);
            futex_wake(&control.wake);
        }
        len
    }

    /// Copies out what `into` takes of the slot being read, and frees the slot once all of
    /// it is read.
    fn read_slot(&mut self, mut slot: SlotRead, into: &mut [u8]) -> usize {
        let len = into.len().min(slot.len - slot.read);
        // SAFETY: within the slot, whose index and length were checked against the layout
        // when described.
        unsafe {
            let from = self.shared.slot(slot.index).add(slot.read);
            ptr::copy_nonoverlapping(from, into.as_mut_ptr(), len);
        }
        slot.read += len;
        if slot.read == slot.len {
            let state = self.shared.slot_state(slot.index);
            state.store(FREE, Ordering::Release);
        } else {
            self.slot = Some(slot);
        }
        len
    }

    /// Takes a description as the next bytes to read, once it is checked against the
    /// layout (everything described before was read, so any count up to the capacity is
    /// bytes the writer may have put in the ring).
    fn take(&mut self, description: Description) -> io::Result<()> {
        let layout = self.shared.layout;
        match description {
            Description::Ring(added) if added > 0 && added as usize <= layout.capacity => {
                self.described += u64::from(added);
            }
            Description::Slot { index, len }
                if (index as usize) < layout.slots
                    && len > 0
                    && len as usize <= layout.slot_size =>
            {
                self.slot = Some(SlotRead {
                    index: index as usize,
                    len: len as usize,
                    read: 0,
                });
            }
            Description::Ring(added) => {
                return Err(invalid(format!(
                    "it described {added} bytes in a ring of {}",
                    layout.capacity
                )));
            }
            Description::Slot { index, len } => {
                return Err(invalid(format!(
                    "it described {len} bytes in slot {index}, of {} slots of {} bytes",
                    layout.slots, layout.slot_size
                )));
            }
        }
        Ok(())
    }

    /// The next description, `None` at the stream's end.
    fn next_description(&mut self) -> io::Result<Option<Description>> {
        let mut bytes = [0; 8];
        match read_full(&mut self.socket, &mut bytes)? {
            0 => Ok(None),
            8 => Ok(Some(Description::decode(bytes))),
            _ => Err(io::ErrorKind::UnexpectedEof.into()),
        }
    }
}
