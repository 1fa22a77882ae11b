use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::thread;
use std::time::Duration;

use crate::record::Out;

use super::outgoing::make_memory;
use super::slots::Memory;
use super::sys::{send_all, send_with_fd};
use super::*;

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
    let (heap, slotted, last) = (&bytes[..1000], &bytes[1000..60_000], &bytes[60_000..61_000]);
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
