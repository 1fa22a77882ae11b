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

mod incoming;
mod outgoing;
mod slots;
mod sys;
#[cfg(test)]
mod tests;

use std::io;
use std::ops::RangeInclusive;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::time::Duration;

pub use incoming::{Incoming, Reader};
pub use outgoing::{Outgoing, Writer};
pub use slots::{FrameBuffer, Slots};

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

fn invalid(reason: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, reason)
}
