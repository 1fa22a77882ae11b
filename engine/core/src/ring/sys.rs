//! The system calls under the ring: a descriptor sent and received with the stream's first
//! bytes, sends that never raise SIGPIPE, and the futex the writer sleeps on.

use std::io::{self, Read};
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::ptr;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

use super::HELLO;

/// Sends `bytes` with `fd` attached to them.
pub(super) fn send_with_fd(socket: &UnixStream, bytes: &[u8], fd: RawFd) -> io::Result<()> {
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

pub(super) fn send_all(socket: &UnixStream, mut bytes: &[u8]) -> io::Result<()> {
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
pub(super) fn send(socket: &UnixStream, bytes: &[u8]) -> io::Result<usize> {
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
pub(super) fn receive_hello(socket: &UnixStream) -> io::Result<(Vec<u8>, Option<OwnedFd>)> {
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
pub(super) fn hung_up(socket: &UnixStream) -> bool {
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
pub(super) fn futex_wait(word: &AtomicU32, seen: u32, timeout: Duration) {
    let timeout = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    futex(word, libc::FUTEX_WAIT, seen, &timeout);
}

/// Wakes every writer asleep on `word`.
pub(super) fn futex_wake(word: &AtomicU32) {
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
