//! Slots: memory the tool's threads encode frames in, each slot theirs until it is sent,
//! then the runner's until it has copied it out.

use std::ptr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::record::Out;

use super::{Description, FREE, Shared, TAKEN};

/// The tool's slots, for the threads that encode frames.
#[derive(Clone)]
pub struct Slots(pub(super) Arc<Shared>);

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
pub(super) struct Slot {
    /// The memory it is in, mapped while the slot lives.
    shared: Arc<Shared>,
    index: usize,
}

impl Slot {
    /// Gives the slot, holding `len` bytes, to the runner: its description, and no freeing
    /// on this side.
    pub(super) fn hand_over(self, len: usize) -> Description {
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
    pub(super) len: usize,
    room: usize,
    pub(super) memory: Memory,
}

pub(super) enum Memory {
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

    #[inline]
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the bytes put, this thread's alone while it holds the buffer.
        unsafe { std::slice::from_raw_parts_mut(self.start, self.len) }
    }
}
