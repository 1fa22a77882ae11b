//! A process's stream through memory it shares with the runner. Sent through the socket,
//! every byte costs the tool's writer a copy into the kernel, a third of the tool's cost per
//! record; so the writer copies its frames into a ring in a sealed memfd that both sides
//! map, and the socket carries only how many bytes each copy added, and the stream's end
//! (the socket closes when the process does, however it ends).
//!
//! The runner trusts nothing in the shared memory but bytes to copy out: where it reads is
//! its own count of the bytes the socket described, and each description is at most a
//! ring's worth. So a hostile application can garble its own stream, which the frames'
//! checksums catch, but never make the runner read outside the ring, nor fault on memory
//! taken away (the memfd must be sealed against shrinking).
//!
//! Either way the stream's bytes are the same: [`Outgoing`] and [`Incoming`] hide which
//! carries them, and the socket alone remains where no memfd can be made.

use std::io::{self, BufReader, Cursor, Read, Write};
use std::mem::{size_of, zeroed};
use std::ops::RangeInclusive;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
use std::time::Duration;

use crate::wire::read_full;

/// A ring stream's first bytes, sent with its memfd: these, then the ring's capacity.
const MAGIC: [u8; 8] = *b"RFRING\0\x01";
const HELLO: usize = 16;
/// The page before the ring that holds [`Control`].
const CONTROL: usize = 4096;
/// The tool's ring: twenty times a socket's buffer, so the writer rarely waits for the
/// runner, and small beside the tool's queue of 16 MiB (both processes map it).
pub const CAPACITY: usize = 4 << 20;
/// Rings the runner maps: up to four times the tool's, since each is memory an
/// application makes the runner read through (and so hold) however it behaves.
const CAPACITIES: RangeInclusive<u64> = (64 << 10)..=(16 << 20);
/// How long the writer sleeps at most before it looks whether the runner is still there.
const NAP: Duration = Duration::from_millis(20);

/// The shared words, at the start of the control page.
#[repr(C)]
struct Control {
    /// Bytes the runner has copied out since the start. The runner writes it; the writer
    /// may reuse the ring's bytes up to it.
    consumed: AtomicU64,
    /// Bumped by the runner when it frees space while a writer sleeps: the futex word.
    wake: AtomicU32,
    /// Writers asleep on `wake`.
    waiters: AtomicU32,
}

/// The control page and the ring, mapped.
struct Shared {
    base: NonNull<u8>,
    capacity: usize,
}

// SAFETY: the mapping is plain memory, shared only through atomics and byte copies.
unsafe impl Send for Shared {}

impl Shared {
    fn map(fd: &OwnedFd, capacity: usize) -> io::Result<Shared> {
        // SAFETY: a fresh mapping of a file at least this long (checked or made so).
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                CONTROL + capacity,
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
        Ok(Shared { base, capacity })
    }

    fn control(&self) -> &Control {
        // SAFETY: the page is mapped for as long as `self` and page-aligned; atomics are
        // valid for any bytes.
        unsafe { &*self.base.as_ptr().cast::<Control>() }
    }

    /// The ring's stretches, at most two, that hold `len` bytes from stream position `at`.
    fn spans(&self, at: u64, len: usize) -> [(usize, usize); 2] {
        let start = (at % self.capacity as u64) as usize;
        let first = len.min(self.capacity - start);
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
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unused from here on.
        unsafe { libc::munmap(self.base.as_ptr().cast(), CONTROL + self.capacity) };
    }
}

/// How the tool's writer sends its stream.
pub enum Outgoing {
    Ring(Writer),
    Socket(UnixStream),
}

impl Outgoing {
    /// Shares a ring of `capacity` bytes with the runner at the other end of `socket`, or
    /// keeps to the socket where this system makes no sealed memfd.
    pub fn connect(socket: UnixStream, capacity: usize) -> io::Result<Outgoing> {
        let Ok((fd, shared)) = make_ring(capacity) else {
            return Ok(Outgoing::Socket(socket));
        };
        let mut hello = [0; HELLO];
        hello[..8].copy_from_slice(&MAGIC);
        hello[8..].copy_from_slice(&(capacity as u64).to_le_bytes());
        send_with_fd(&socket, &hello, fd.as_raw_fd())?;
        Ok(Outgoing::Ring(Writer {
            shared,
            socket,
            written: 0,
            described: 0,
        }))
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

/// A sealed memfd of the control page and `capacity` bytes of ring, mapped.
fn make_ring(capacity: usize) -> io::Result<(OwnedFd, Shared)> {
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
        libc::ftruncate(fd.as_raw_fd(), (CONTROL + capacity) as libc::off_t) == 0
            && libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) == 0
    };
    if !made {
        return Err(io::Error::last_os_error());
    }
    let shared = Shared::map(&fd, capacity)?;
    Ok((fd, shared))
}

/// The tool's end of a ring stream.
pub struct Writer {
    shared: Shared,
    socket: UnixStream,
    /// Bytes put in the ring since the start, and those of them described to the runner.
    written: u64,
    described: u64,
}

impl Writer {
    fn free(&self) -> usize {
        let consumed = self.shared.control().consumed.load(SeqCst);
        let held = self.written.saturating_sub(consumed) as usize;
        self.shared.capacity.saturating_sub(held)
    }

    /// Waits until the ring has room for `wanted` bytes or a quarter of it, whichever is
    /// less (so a full ring is not refilled a few bytes at a time), and says how much.
    fn room(&mut self, wanted: usize) -> io::Result<usize> {
        let enough = wanted.min(self.shared.capacity / 4);
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
            send_all(&self.socket, &(added as u32).to_le_bytes())?;
            self.described = self.written;
        }
        Ok(())
    }
}

/// How the runner reads a process's stream.
pub enum Incoming {
    Ring(Reader),
    Socket(io::Chain<Cursor<Vec<u8>>, BufReader<UnixStream>>),
}

impl Incoming {
    /// Tells a ring stream from a plain one by its first bytes, and maps a ring's memory
    /// once it has checked that it is sealed and as large as announced.
    pub fn accept(socket: UnixStream) -> io::Result<Incoming> {
        let (first, fd) = receive_hello(&socket)?;
        if first.len() < HELLO || first[..8] != MAGIC {
            let rest = BufReader::with_capacity(1 << 20, socket);
            return Ok(Incoming::Socket(Cursor::new(first).chain(rest)));
        }
        let capacity = u64::from_le_bytes(first[8..].try_into().expect("8 bytes"));
        if !CAPACITIES.contains(&capacity) {
            return Err(invalid(format!(
                "its ring of {capacity} bytes is not within {} to {}",
                CAPACITIES.start(),
                CAPACITIES.end()
            )));
        }
        let fd = fd.ok_or_else(|| invalid("it announced a ring but sent no memory".into()))?;
        check_memory(&fd, CONTROL as u64 + capacity)?;
        Ok(Incoming::Ring(Reader {
            shared: Shared::map(&fd, capacity as usize)?,
            socket: BufReader::with_capacity(4096, socket),
            read: 0,
            described: 0,
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
    /// The descriptions: each a little-endian u32 count of bytes added to the ring.
    socket: BufReader<UnixStream>,
    /// Bytes copied out of the ring, and bytes the socket has described, since the start.
    read: u64,
    described: u64,
}

impl Read for Reader {
    fn read(&mut self, into: &mut [u8]) -> io::Result<usize> {
        if into.is_empty() {
            return Ok(0);
        }
        if self.read == self.described {
            let Some(added) = self.next_description()? else {
                return Ok(0);
            };
            // Everything described before was read, so any count up to the capacity is
            // bytes the writer may have put there.
            if added == 0 || added as usize > self.shared.capacity {
                return Err(invalid(format!(
                    "it described {added} bytes in a ring of {}",
                    self.shared.capacity
                )));
            }
            self.described += u64::from(added);
        }
        let len = into.len().min((self.described - self.read) as usize);
        self.shared.copy_out(self.read, &mut into[..len]);
        self.read += len as u64;
        let control = self.shared.control();
        control.consumed.store(self.read, SeqCst);
        if control.waiters.load(SeqCst) != 0 {
            control.wake.fetch_add(1, SeqCst);
            futex_wake(&control.wake);
        }
        Ok(len)
    }
}

impl Reader {
    /// The next count of bytes added, `None` at the stream's end.
    fn next_description(&mut self) -> io::Result<Option<u32>> {
        let mut bytes = [0; 4];
        match read_full(&mut self.socket, &mut bytes)? {
            0 => Ok(None),
            4 => Ok(Some(u32::from_le_bytes(bytes))),
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
        let bytes = pattern(len);
        let (tool, runner) = UnixStream::pair().unwrap();
        let read = thread::scope(|scope| {
            scope.spawn(|| {
                let mut out = Outgoing::connect(tool, capacity).unwrap();
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
        let mut out = Outgoing::connect(tool, 64 << 10).unwrap();
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
        let mut out = Outgoing::connect(tool, 64 << 10).unwrap();
        drop(Incoming::accept(runner).unwrap());
        let error = out.write_all(&pattern(1 << 20)).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe, "{error}");

        let (tool, runner) = UnixStream::pair().unwrap();
        let mut out = Outgoing::connect(tool, 64 << 10).unwrap();
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

    /// Sends a hello announcing `capacity`, with `fd` if there is one.
    fn hello(socket: &UnixStream, capacity: u64, fd: Option<&OwnedFd>) {
        let mut hello = [0; HELLO];
        hello[..8].copy_from_slice(&MAGIC);
        hello[8..].copy_from_slice(&capacity.to_le_bytes());
        match fd {
            Some(fd) => send_with_fd(socket, &hello, fd.as_raw_fd()).unwrap(),
            None => send_all(socket, &hello).unwrap(),
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
        hello(&tool, capacity, None);
        assert!(refused(runner).contains("sent no memory"));
        // A ring too large, or too small.
        for capacity in [(16 << 20) + 1, 16] {
            let (tool, runner) = UnixStream::pair().unwrap();
            let (fd, _) = make_ring(64 << 10).unwrap();
            hello(&tool, capacity, Some(&fd));
            assert!(refused(runner).contains("is not within"));
        }
        // A file that could shrink under the runner's mapping.
        let (tool, runner) = UnixStream::pair().unwrap();
        let file = tempfile::tempfile().unwrap();
        file.set_len(CONTROL as u64 + capacity).unwrap();
        hello(&tool, capacity, Some(&OwnedFd::from(file)));
        assert!(refused(runner).contains("not sealed"));
        // Sealed memory smaller than announced.
        let (tool, runner) = UnixStream::pair().unwrap();
        let (fd, _) = make_ring(64 << 10).unwrap();
        hello(&tool, 128 << 10, Some(&fd));
        assert!(refused(runner).contains("not the"));
    }

    #[test]
    fn a_description_past_the_ring_is_an_error_not_a_read() {
        let capacity = 64 << 10;
        let (tool, runner) = UnixStream::pair().unwrap();
        let (fd, _shared) = make_ring(capacity as usize).unwrap();
        hello(&tool, capacity, Some(&fd));
        send_all(&tool, &(capacity as u32 + 1).to_le_bytes()).unwrap();
        let mut incoming = Incoming::accept(runner).unwrap();
        let error = incoming.read(&mut [0; 16]).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{error}");
        assert!(
            error.to_string().contains("described 65537 bytes"),
            "{error}"
        );
    }
}
