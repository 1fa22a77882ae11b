//! A process's stream through memory it shares with the runner. Sent through the socket,
//! every byte costs the tool's writer a copy into the kernel, a third of the tool's cost per
//! record; so the stream goes through a sealed memfd that both sides map, and the socket
//! carries only descriptions of where its next bytes are, and the stream's end (the socket
//! closes when the process does, however it ends). The memfd holds:
//!
//! - a ring, which the writer copies frames into: metadata, and frames made on the heap;
//! - slots, which the tool's threads encode record frames into in place, so that the
//!   writer only describes them and copies nothing. The runner frees a slot once it has
//!   copied it out; while the runner holds every slot, frames are made on the heap.
//!
//! The runner trusts nothing in the shared memory but bytes to copy out: where it reads is
//! its own count of the bytes the socket described in the ring, or a slot the socket named,
//! and each description is checked against the ring's and the slots' sizes. So a hostile
//! application can garble its own stream, which the frames' checksums catch, but never
//! make the runner read outside its memory, nor fault on memory taken away (the memfd must
//! be sealed against shrinking).
//!
//! Either way the stream's bytes are the same: [`Outgoing`] and [`Incoming`] hide what
//! carries them, and the socket alone remains where no memfd can be made.

use std::io::{self, BufReader, Cursor, Read, Write};
use std::mem::{size_of, zeroed};
use std::ops::RangeInclusive;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, Ordering::SeqCst};
use std::time::Duration;

use crate::record::Out;
use crate::wire::read_full;

/// A ring stream's first bytes, sent with its memfd: these, then its [`Layout`].
const MAGIC: [u8; 8] = *b"RFRING\0\x02";
const HELLO: usize = 24;
/// The page before the ring that holds [`Control`].
const CONTROL: usize = 4096;
/// Rings the runner maps: up to four times the tool's, since each is memory an
/// application makes the runner read through (and so hold) however it behaves.
const CAPACITIES: RangeInclusive<u64> = (64 << 10)..=(16 << 20);
/// Slots the runner maps: up to twice as many as the tool's, each up to twice as large.
const MAX_SLOTS: usize = 16;
const SLOT_SIZES: RangeInclusive<u64> = (64 << 10)..=(16 << 20);
/// How long the writer sleeps at most before it looks whether the runner is still there.
const NAP: Duration = Duration::from_millis(20);

/// The shape of a stream's shared memory: after the control page, a ring of `capacity`
/// bytes, then `slots` slots of `slot_size` bytes each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub capacity: usize,
    pub slots: usize,
    pub slot_size: usize,
}

impl Layout {
    /// The tool's. A ring of twenty times a socket's buffer, so the writer rarely waits
    /// for the runner. Slots of 8 MiB: a part of a delivery (65,536 records) of the
    /// largest records, dispatches of 108 bytes, fits one; and eight, enough for the frames
    /// of a part the tool encodes while the runner reads the previous part's. Each process
    /// holds only the slots it has used, and the runner maps them too.
    pub const TOOL: Layout = Layout {
        capacity: 4 << 20,
        slots: 8,
        slot_size: 8 << 20,
    };

    /// The memory's length.
    fn len(&self) -> usize {
        CONTROL + self.capacity + self.slots * self.slot_size
    }

    fn hello(&self) -> [u8; HELLO] {
        let mut hello = [0; HELLO];
        hello[..8].copy_from_slice(&MAGIC);
        hello[8..16].copy_from_slice(&(self.capacity as u64).to_le_bytes());
        hello[16..20].copy_from_slice(&(self.slots as u32).to_le_bytes());
        hello[20..].copy_from_slice(&(self.slot_size as u32).to_le_bytes());
        hello
    }

    /// The layout a hello announces, if the runner maps memory of its shape.
    fn of_hello(hello: &[u8; HELLO]) -> io::Result<Layout> {
        let word = |at: usize| u32::from_le_bytes(hello[at..at + 4].try_into().expect("4 bytes"));
        let capacity = u64::from_le_bytes(hello[8..16].try_into().expect("8 bytes"));
        let (slots, slot_size) = (word(16) as usize, u64::from(word(20)));
        let within = |range: &RangeInclusive<u64>| format!("{} to {}", range.start(), range.end());
        if !CAPACITIES.contains(&capacity) {
            return Err(invalid(format!(
                "its ring of {capacity} bytes is not within {}",
                within(&CAPACITIES)
            )));
        }
        if slots > MAX_SLOTS || (slots > 0 && !SLOT_SIZES.contains(&slot_size)) {
            return Err(invalid(format!(
                "its {slots} slots of {slot_size} bytes are not at most {MAX_SLOTS} of {}",
                within(&SLOT_SIZES)
            )));
        }
        Ok(Layout {
            capacity: capacity as usize,
            slots,
            slot_size: slot_size as usize,
        })
    }
}

/// The shared words, at the start of the control page.
#[repr(C)]
struct Control {
    /// Bytes the runner has copied out of the ring since the start. The runner writes it;
    /// the writer may reuse the ring's bytes up to it.
    consumed: AtomicU64,
    /// Bumped by the runner when it frees space while a writer sleeps: the futex word.
    wake: AtomicU32,
    /// Writers asleep on `wake`.
    waiters: AtomicU32,
    /// Each slot's state, [`FREE`] or [`TAKEN`]: the tool takes a free slot, the runner
    /// frees it once it has copied out the frames it was told of.
    slots: [AtomicU32; MAX_SLOTS],
}

const FREE: u32 = 0;
const TAKEN: u32 = 1;

/// The control page, the ring and the slots, mapped.
struct Shared {
    base: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the mapping is plain memory, shared only through atomics and byte copies, and
// each slot is written by one thread at a time (the one that took it).
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Shared {
    fn map(fd: &OwnedFd, layout: Layout) -> io::Result<Shared> {
        // SAFETY: a fresh mapping of a file at least this long (checked or made so).
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                layout.len(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(base.cast()).expect("mmap succeeded");
        Ok(Shared { base, layout })
    }

    fn control(&self) -> &Control {
        // SAFETY: the page is mapped for as long as `self` and page-aligned; atomics are
        // valid for any bytes.
        unsafe { &*self.base.as_ptr().cast::<Control>() }
    }

    /// The ring's stretches, at most two, that hold `len` bytes from stream position `at`.
    fn spans(&self, at: u64, len: usize) -> [(usize, usize); 2] {
        let capacity = self.layout.capacity;
        let start = (at % capacity as u64) as usize;
        let first = len.min(capacity - start);
        [(start, first), (0, len - first)]
    }

    fn ring(&self, offset: usize) -> *mut u8 {
        // SAFETY: offsets come from `spans`, inside the ring.
        unsafe { self.base.as_ptr().add(CONTROL + offset) }
    }

    fn copy_in(&self, at: u64, bytes: &[u8]) {
        let mut from = bytes.as_ptr();
        for (offset, len) in self.spans(at, bytes.len()) {
            // SAFETY: within `bytes` and within the ring, which `bytes` cannot overlap.
            unsafe {
                ptr::copy_nonoverlapping(from, self.ring(offset), len);
                from = from.add(len);
            }
        }
    }

    /// Copies bytes out once; the other side may scribble on them meanwhile, so they are
    /// only looked at in `into`.
    fn copy_out(&self, at: u64, into: &mut [u8]) {
        let mut to = into.as_mut_ptr();
        for (offset, len) in self.spans(at, into.len()) {
            // SAFETY: as in `copy_in`.
            unsafe {
                ptr::copy_nonoverlapping(self.ring(offset), to, len);
                to = to.add(len);
            }
        }
    }

    /// The start of slot `index`, which must be one of the layout's.
    fn slot(&self, index: usize) -> *mut u8 {
        assert!(index < self.layout.slots);
        let offset = CONTROL + self.layout.capacity + index * self.layout.slot_size;
        // SAFETY: inside the mapping, whose length the layout gives.
        unsafe { self.base.as_ptr().add(offset) }
    }

    fn slot_state(&self, index: usize) -> &AtomicU32 {
        &self.control().slots[index]
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unused from here on.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.layout.len()) };
    }
}

/// What the socket tells the runner, 8 bytes each: how many bytes were added to the ring,
/// or which slot holds the stream's next bytes, and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Description {
    Ring(u32),
    Slot { index: u32, len: u32 },
}

impl Description {
    /// The length, then 0 for the ring or the slot's index plus one.
    fn encode(self) -> [u8; 8] {
        let (len, place) = match self {
            Description::Ring(len) => (len, 0),
            Description::Slot { index, len } => (len, index + 1),
        };
        let mut bytes = [0; 8];
        bytes[..4].copy_from_slice(&len.to_le_bytes());
        bytes[4..].copy_from_slice(&place.to_le_bytes());
        bytes
    }

    fn decode(bytes: [u8; 8]) -> Description {
        let len = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
        match u32::from_le_bytes(bytes[4..].try_into().expect("4 bytes")) {
            0 => Description::Ring(len),
            place => Description::Slot {
                index: place - 1,
                len,
            },
        }
    }
}

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
fn make_memory(layout: Layout) -> io::Result<(OwnedFd, Shared)> {
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

/// The tool's slots, for the threads that encode frames.
#[derive(Clone)]
pub struct Slots(Arc<Shared>);

impl Slots {
    /// A free slot, now taken, to encode frames in; `None` while the runner holds them all.
    pub fn take(&self) -> Option<FrameBuffer> {
        let shared = &self.0;
        let index = (0..shared.layout.slots).find(|&index| {
            let state = shared.slot_state(index);
            (state.compare_exchange(FREE, TAKEN, Ordering::Acquire, Ordering::Relaxed)).is_ok()
        })?;
        Some(FrameBuffer {
            start: shared.slot(index),
            len: 0,
            room: shared.layout.slot_size,
            memory: Memory::Slot(Slot {
                shared: Arc::clone(shared),
                index,
            }),
        })
    }
}

/// A slot taken by the tool; dropped before it is sent, it is free again.
struct Slot {
    /// The memory it is in, mapped while the slot lives.
    shared: Arc<Shared>,
    index: usize,
}

impl Slot {
    /// Gives the slot, holding `len` bytes, to the runner: its description, and no freeing
    /// on this side.
    fn hand_over(self, len: usize) -> Description {
        let description = Description::Slot {
            index: self.index as u32,
            len: len as u32,
        };
        let slot = std::mem::ManuallyDrop::new(self);
        // SAFETY: read once, from a slot that is never used nor dropped again.
        drop(unsafe { ptr::read(&slot.shared) });
        description
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.shared
            .slot_state(self.index)
            .store(FREE, Ordering::Release);
    }
}

/// A buffer the tool encodes frames in: a slot, whose frames the writer only describes, or
/// the tool's own memory, which the writer copies into the ring, for when every slot is
/// the runner's or frames outgrow their slot. Either way, putting bytes in it is what
/// putting them in a `Vec` is: a check for room, then a copy.
pub struct FrameBuffer {
    /// Where the bytes go, how many were put, and how many fit.
    start: *mut u8,
    len: usize,
    room: usize,
    memory: Memory,
}

enum Memory {
    Slot(Slot),
    /// A vector whose first `len` bytes are the frames (its own length is not kept up).
    Heap(Vec<u8>),
}

// SAFETY: the buffer is the memory of one thread at a time, the one that holds it.
unsafe impl Send for FrameBuffer {}

impl From<Vec<u8>> for FrameBuffer {
    /// A buffer of the tool's own memory that starts with `bytes`.
    fn from(mut bytes: Vec<u8>) -> FrameBuffer {
        FrameBuffer {
            start: bytes.as_mut_ptr(),
            len: bytes.len(),
            room: bytes.capacity(),
            memory: Memory::Heap(bytes),
        }
    }
}

impl FrameBuffer {
    /// The memory it holds while queued for the writer.
    pub fn held(&self) -> usize {
        match &self.memory {
            Memory::Slot(_) => self.len,
            Memory::Heap(_) => self.room,
        }
    }

    /// Makes room for `more` bytes: a larger vector, where a slot's bytes move (freeing
    /// the slot) or a vector's grow.
    #[cold]
    fn grow(&mut self, more: usize) {
        let heap = match std::mem::replace(&mut self.memory, Memory::Heap(Vec::new())) {
            Memory::Slot(slot) => {
                let mut heap = Vec::with_capacity(2 * (self.len + more));
                heap.extend_from_slice(self.bytes());
                drop(slot);
                heap
            }
            Memory::Heap(mut heap) => {
                // SAFETY: the first `len` bytes were put there.
                unsafe { heap.set_len(self.len) };
                heap.reserve(more);
                heap
            }
        };
        *self = FrameBuffer::from(heap);
    }
}

impl Out for FrameBuffer {
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        if bytes.len() > self.room - self.len {
            self.grow(bytes.len());
        }
        // SAFETY: within the room of the buffer, which only this thread writes.
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), self.start.add(self.len), bytes.len()) };
        self.len += bytes.len();
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the bytes put, this thread's alone while it holds the buffer.
        unsafe { std::slice::from_raw_parts_mut(self.start, self.len) }
    }
}

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

fn invalid(reason: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, reason)
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
            "its ring's memory is not sealed against shrinking".into(),
        ));
    }
    if size != Some(len) {
        return Err(invalid(format!(
            "its ring's memory is {} bytes, not the {len} announced",
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
            if let Some(slot) = &mut self.slot {
                let len = into.len().min(slot.len - slot.read);
                // SAFETY: within the slot, whose index and length were checked against the
                // layout when described.
                unsafe {
                    let from = self.shared.slot(slot.index).add(slot.read);
                    ptr::copy_nonoverlapping(from, into.as_mut_ptr(), len);
                }
                slot.read += len;
                if slot.read == slot.len {
                    self.shared
                        .slot_state(slot.index)
                        .store(FREE, Ordering::Release);
                    self.slot = None;
                }
                return Ok(len);
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

/// Sends `bytes` with `fd` attached to them.
fn send_with_fd(socket: &UnixStream, bytes: &[u8], fd: RawFd) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr().cast_mut().cast(),
        iov_len: bytes.len(),
    };
    // Room for one descriptor's control message, aligned as a `cmsghdr`.
    let mut control = [0u64; 4];
    // SAFETY: a zeroed msghdr pointing at live buffers; the control message is written
    // inside `control`, which CMSG_SPACE says it fits.
    let sent = unsafe {
        let space = libc::CMSG_SPACE(size_of::<RawFd>() as u32) as usize;
        assert!(space <= size_of::<[u64; 4]>());
        let mut message: libc::msghdr = zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = space as _;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as _;
        ptr::write_unaligned(libc::CMSG_DATA(header).cast::<RawFd>(), fd);
        libc::sendmsg(socket.as_raw_fd(), &message, libc::MSG_NOSIGNAL)
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    send_all(socket, &bytes[sent as usize..])
}

fn send_all(socket: &UnixStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match send(socket, bytes)? {
            0 => return Err(io::ErrorKind::WriteZero.into()),
            sent => bytes = &bytes[sent..],
        }
    }
    Ok(())
}

/// Writes what the socket takes of `bytes`. A runner gone is an error to the writer, not
/// the SIGPIPE that would kill the application.
fn send(socket: &UnixStream, bytes: &[u8]) -> io::Result<usize> {
    loop {
        // SAFETY: a live buffer of this length.
        let sent = unsafe {
            libc::send(
                socket.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if sent >= 0 {
            return Ok(sent as usize);
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Reads a stream's first [`HELLO`] bytes, or fewer where it ends sooner, and the first
/// descriptor sent with them; any other descriptor is closed.
fn receive_hello(socket: &UnixStream) -> io::Result<(Vec<u8>, Option<OwnedFd>)> {
    let mut first = [0; HELLO];
    let mut iov = libc::iovec {
        iov_base: first.as_mut_ptr().cast(),
        iov_len: HELLO,
    };
    let mut control = [0u64; 8];
    let mut fds = Vec::new();
    // SAFETY: a zeroed msghdr pointing at live buffers; the kernel writes within them and
    // the control messages are walked with the CMSG macros inside `msg_controllen`.
    let got = unsafe {
        let mut message: libc::msghdr = zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = size_of::<[u64; 8]>() as _;
        let got = loop {
            let got = libc::recvmsg(socket.as_raw_fd(), &mut message, libc::MSG_CMSG_CLOEXEC);
            if got >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break got;
            }
        };
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(header);
                let len = (*header).cmsg_len as usize - (data as usize - header as usize);
                for i in 0..len / size_of::<RawFd>() {
                    let fd = ptr::read_unaligned(data.cast::<RawFd>().add(i));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
        got as usize
    };
    let mut first = first[..got].to_vec();
    if got > 0 && got < HELLO {
        let mut rest = socket.take((HELLO - got) as u64);
        rest.read_to_end(&mut first)?;
    }
    Ok((first, fds.into_iter().next()))
}

/// Whether the runner has closed its end.
fn hung_up(socket: &UnixStream) -> bool {
    let mut poll = libc::pollfd {
        fd: socket.as_raw_fd(),
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no waiting.
    let ready = unsafe { libc::poll(&mut poll, 1, 0) };
    ready > 0 && poll.revents & (libc::POLLHUP | libc::POLLERR) != 0
}

/// Sleeps on `word` while it holds `seen`, for `timeout` at most.
fn futex_wait(word: &AtomicU32, seen: u32, timeout: Duration) {
    let timeout = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    futex(word, libc::FUTEX_WAIT, seen, &timeout);
}

/// Wakes every writer asleep on `word`.
fn futex_wake(word: &AtomicU32) {
    futex(word, libc::FUTEX_WAKE, i32::MAX as u32, ptr::null());
}

fn futex(word: &AtomicU32, op: libc::c_int, value: u32, timeout: *const libc::timespec) {
    // SAFETY: a futex word in memory shared between processes (so not FUTEX_PRIVATE) and a
    // relative timeout or none; a wake-up, a timeout or a changed word all just return.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            value,
            timeout,
            ptr::null::<u32>(),
            0,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    /// A ring of `capacity` bytes and no slots.
    fn ring_only(capacity: usize) -> Layout {
        Layout {
            capacity,
            slots: 0,
            slot_size: 0,
        }
    }

    /// A ring and two slots of 64 KiB.
    const SMALL: Layout = Layout {
        capacity: 64 << 10,
        slots: 2,
        slot_size: 64 << 10,
    };

    /// Bytes no two offsets of a long stream share the same way.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// Writes `len` bytes through a ring of 64 KiB in writes of varied sizes, flushing
    /// after each, reads the stream at the runner's end until it closes, and checks it
    /// read them all, in order. A `slow` runner naps after each read, so the writer keeps
    /// finding the ring full.
    fn carries(len: usize, slow: bool) {
        let capacity = 64 << 10;
        let layout = ring_only(capacity);
        let bytes = pattern(len);
        let (tool, runner) = UnixStream::pair().unwrap();
        let read = thread::scope(|scope| {
            scope.spawn(|| {
                let mut out = Outgoing::connect(tool, layout).unwrap();
                assert!(matches!(out, Outgoing::Ring(_)));
                let sizes = [1, 4095, 70_000, 3 * capacity + 5, 16];
                let mut rest = &bytes[..];
                for size in sizes.iter().cycle() {
                    if rest.is_empty() {
                        break;
                    }
                    let (now, later) = rest.split_at((*size).min(rest.len()));
                    out.write_all(now).unwrap();
                    out.flush().unwrap();
                    rest = later;
                }
                out.shutdown();
            });
            let mut incoming = Incoming::accept(runner).unwrap();
            assert!(matches!(incoming, Incoming::Ring(_)));
            let mut read = Vec::new();
            let mut buf = vec![0; 9000];
            loop {
                let n = incoming.read(&mut buf).unwrap();
                if n == 0 {
                    break read;
                }
                read.extend_from_slice(&buf[..n]);
                if slow {
                    thread::sleep(Duration::from_micros(200));
                }
            }
        });
        assert!(read == bytes, "{} bytes read of {len}", read.len());
    }

    #[test]
    fn a_ring_carries_every_byte_in_order_however_it_wraps() {
        carries(3 << 20, false);
    }

    #[test]
    fn a_writer_waits_for_a_slow_reader_and_loses_nothing() {
        carries(1 << 20, true);
    }

    /// What reached the runner is read after the process that sent it has gone: the
    /// memory outlives it, and the socket's end comes after the descriptions.
    #[test]
    fn what_was_flushed_outlives_the_writer() {
        let (tool, runner) = UnixStream::pair().unwrap();
        let bytes = pattern(40_000);
        let mut out = Outgoing::connect(tool, ring_only(64 << 10)).unwrap();
        out.write_all(&bytes).unwrap();
        out.flush().unwrap();
        out.write_all(b"never described").unwrap();
        drop(out);
        let mut read = Vec::new();
        Incoming::accept(runner)
            .unwrap()
            .read_to_end(&mut read)
            .unwrap();
        assert!(read == bytes);
    }

    #[test]
    fn a_stream_without_a_ring_reads_as_it_was_sent() {
        for len in [0, 5, HELLO, 100_000] {
            let (tool, runner) = UnixStream::pair().unwrap();
            let bytes = pattern(len);
            let mut out = Outgoing::Socket(tool);
            let sent = bytes.clone();
            let writer = thread::spawn(move || {
                out.write_all(&sent).unwrap();
                out.shutdown();
            });
            let mut incoming = Incoming::accept(runner).unwrap();
            assert!(matches!(incoming, Incoming::Socket(_)));
            let mut read = Vec::new();
            incoming.read_to_end(&mut read).unwrap();
            writer.join().unwrap();
            assert!(read == bytes, "{len} bytes sent, {} read", read.len());
        }
    }

    /// A runner gone is an error to the writer, not a hang, nor a SIGPIPE (which would end
    /// this test's process): whether it went before the writer's next flush, or while
    /// the writer waits for room in a ring it filled.
    #[test]
    fn a_writer_learns_that_the_runner_is_gone() {
        let (tool, runner) = UnixStream::pair().unwrap();
        let mut out = Outgoing::connect(tool, ring_only(64 << 10)).unwrap();
        drop(Incoming::accept(runner).unwrap());
        let error = out.write_all(&pattern(1 << 20)).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe, "{error}");

        let (tool, runner) = UnixStream::pair().unwrap();
        let mut out = Outgoing::connect(tool, ring_only(64 << 10)).unwrap();
        let incoming = Incoming::accept(runner).unwrap();
        // The ring full and described: only the runner's reading could make room.
        out.write_all(&pattern(64 << 10)).unwrap();
        out.flush().unwrap();
        let (result, waited) = std::sync::mpsc::channel();
        thread::spawn(move || result.send(out.write_all(b"more")).unwrap());
        thread::sleep(Duration::from_millis(100));
        drop(incoming);
        let error = waited
            .recv_timeout(Duration::from_secs(5))
            .unwrap()
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe, "{error}");
    }

    /// Sends a hello announcing `layout`, with `fd` if there is one.
    fn hello(socket: &UnixStream, layout: Layout, fd: Option<&OwnedFd>) {
        match fd {
            Some(fd) => send_with_fd(socket, &layout.hello(), fd.as_raw_fd()).unwrap(),
            None => send_all(socket, &layout.hello()).unwrap(),
        }
    }

    fn refused(runner: UnixStream) -> String {
        match Incoming::accept(runner) {
            Ok(_) => panic!("a hostile hello was taken"),
            Err(e) => {
                assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
                e.to_string()
            }
        }
    }

    #[test]
    fn a_ring_the_runner_cannot_trust_is_refused() {
        let capacity = 64 << 10;
        // No memory at all.
        let (tool, runner) = UnixStream::pair().unwrap();
        hello(&tool, SMALL, None);
        assert!(refused(runner).contains("sent no memory"));
        // A ring too large, or too small; too many slots, or slots too large or too small.
        let (fd, _) = make_memory(SMALL).unwrap();
        let shapes = [
            (ring_only((16 << 20) + 1), "is not within"),
            (ring_only(16), "is not within"),
            (Layout { slots: 17, ..SMALL }, "are not at most 16"),
            (
                Layout {
                    slot_size: (16 << 20) + 1,
                    ..SMALL
                },
                "are not at most 16",
            ),
            (
                Layout {
                    slot_size: 16,
                    ..SMALL
                },
                "are not at most 16",
            ),
        ];
        for (layout, error) in shapes {
            let (tool, runner) = UnixStream::pair().unwrap();
            hello(&tool, layout, Some(&fd));
            let refusal = refused(runner);
            assert!(refusal.contains(error), "{layout:?}: {refusal}");
        }
        // A file that could shrink under the runner's mapping.
        let (tool, runner) = UnixStream::pair().unwrap();
        let file = tempfile::tempfile().unwrap();
        file.set_len((CONTROL + capacity) as u64).unwrap();
        hello(&tool, ring_only(capacity), Some(&OwnedFd::from(file)));
        assert!(refused(runner).contains("not sealed"));
        // Sealed memory smaller than announced.
        let (tool, runner) = UnixStream::pair().unwrap();
        let (fd, _) = make_memory(ring_only(capacity)).unwrap();
        hello(&tool, SMALL, Some(&fd));
        assert!(refused(runner).contains("not the"));
    }

    /// The error reading a stream whose socket describes `description` in memory of
    /// the `SMALL` layout.
    fn misdescribed(description: Description) -> io::Error {
        let (tool, runner) = UnixStream::pair().unwrap();
        let (fd, _shared) = make_memory(SMALL).unwrap();
        hello(&tool, SMALL, Some(&fd));
        send_all(&tool, &description.encode()).unwrap();
        let mut incoming = Incoming::accept(runner).unwrap();
        let error = incoming.read(&mut [0; 16]).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{error}");
        error
    }

    #[test]
    fn a_description_past_the_memory_is_an_error_not_a_read() {
        let past_the_ring = misdescribed(Description::Ring((64 << 10) + 1));
        assert!(
            past_the_ring.to_string().contains("described 65537 bytes"),
            "{past_the_ring}"
        );
        for (index, len) in [(2, 16), (u32::MAX - 1, 16), (0, (64 << 10) + 1), (1, 0)] {
            let error = misdescribed(Description::Slot { index, len }).to_string();
            assert!(
                error.contains(&format!("described {len} bytes in slot {index}")),
                "{error}"
            );
        }
    }

    /// Slots carry frames between the ring's bytes, in the order they were sent; while
    /// the runner holds every slot there is none to take, and each is free again once the
    /// runner has read it.
    #[test]
    fn slots_carry_frames_in_order_and_come_back_free() {
        let (tool, runner) = UnixStream::pair().unwrap();
        let mut out = Outgoing::connect(tool, SMALL).unwrap();
        let slots = out.slots().expect("a layout with slots");
        let bytes = pattern(150_000);
        let pieces = [&bytes[..1000], &bytes[1000..60_000], &bytes[60_000..61_000]];
        let (heap, slotted, last) = (pieces[0], pieces[1], pieces[2]);
        let mut taken = [slots.take().unwrap(), slots.take().unwrap()];
        assert!(slots.take().is_none(), "two slots, both taken");
        taken[0].put(slotted);
        taken[1].put(last);
        let [first, second] = taken;
        out.send(FrameBuffer::from(heap.to_vec())).unwrap();
        out.send(first).unwrap();
        out.send(second).unwrap();
        assert!(slots.take().is_none(), "the runner's until it reads them");
        let reader = thread::spawn(move || {
            let mut read = Vec::new();
            let mut incoming = Incoming::accept(runner).unwrap();
            incoming.read_to_end(&mut read).unwrap();
            read
        });
        // More than the ring holds: the rest waits for the runner to read.
        out.send(FrameBuffer::from(bytes[61_000..].to_vec()))
            .unwrap();
        out.shutdown();
        let read = reader.join().unwrap();
        assert!(
            read == bytes,
            "{} bytes read of {}",
            read.len(),
            bytes.len()
        );
        let again = [slots.take(), slots.take()];
        assert!(again.iter().all(Option::is_some), "both slots free again");
    }

    /// Frames that outgrow their slot move to the heap whole, and free the slot.
    #[test]
    fn frames_outgrowing_their_slot_move_to_the_heap() {
        let (tool, _runner) = UnixStream::pair().unwrap();
        let out = Outgoing::connect(tool, SMALL).unwrap();
        let slots = out.slots().unwrap();
        let bytes = pattern(SMALL.slot_size + 100);
        let mut frames = slots.take().unwrap();
        frames.put(&bytes[..SMALL.slot_size - 10]);
        assert!(matches!(frames.memory, Memory::Slot(_)));
        frames.put(&bytes[SMALL.slot_size - 10..]);
        assert!(matches!(frames.memory, Memory::Heap(_)));
        assert!(frames.bytes() == &bytes[..]);
        let again = [slots.take(), slots.take()];
        assert!(again.iter().all(Option::is_some), "the slot freed");
    }
}
