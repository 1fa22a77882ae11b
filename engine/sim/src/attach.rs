//! Attaching to a running process, as rocprofiler-register does from rocprofiler-sdk 1.1
//! on (see [`rocflow_core::attach`]): a process started with `ROCP_TOOL_ATTACH=1` runs the
//! attach thread, and nothing else of the SDK, until a profiler attaches; the attach loads
//! the profiler's tool with the environment it sent, configures and initializes it as at
//! start, and starts the scenario on the schedule begun when the process started; the
//! detach stops the tool's contexts, flushes its buffers and finalizes it, and the process
//! goes on untraced. As without AMD's experimental reattach, a process is attached once.

use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::OnceLock;

use rocflow_core::attach::{self, DETACH, Reply, Request};

use crate::sdk::{self, Phase};
use crate::stderr::warn;

/// When the process started: the scenario's schedule begins then, attached or not.
static ORIGIN: OnceLock<u64> = OnceLock::new();

/// Whether the process was started attachable.
pub fn enabled() -> bool {
    std::env::var(attach::ENABLE_VAR).is_ok_and(|v| v == "1")
}

/// Starts the attach thread.
pub fn listen() {
    ORIGIN.get_or_init(sdk::now);
    let name = attach::socket_name(std::process::id());
    let listener = SocketAddr::from_abstract_name(name.as_bytes())
        .and_then(|address| UnixListener::bind_addr(&address));
    let listener = match listener {
        Ok(l) => l,
        Err(e) => {
            warn(&format!(
                "cannot listen for attach requests: {e}; the process cannot be attached"
            ));
            return;
        }
    };
    let spawned = std::thread::Builder::new()
        .name(attach::THREAD.into())
        .spawn(move || serve(listener));
    if let Err(e) = spawned {
        warn(&format!(
            "cannot start the attach thread: {e}; the process cannot be attached"
        ));
    }
}

/// Takes attach requests, one at a time, for the life of the process.
fn serve(listener: UnixListener) {
    for connection in listener.incoming().flatten() {
        if let Err(e) = session(connection) {
            warn(&format!("an attach request failed: {e}"));
        }
    }
}

/// One profiler's attach, to its detach.
fn session(connection: UnixStream) -> std::io::Result<()> {
    let mut reply_to = connection.try_clone()?;
    let mut from = BufReader::new(connection);
    let request = Request::read_from(&mut from)?;
    if let Err(why) = allowed(&reply_to).and_then(|()| attach(&request)) {
        return Reply::Refused(why).write_to(&mut reply_to);
    }
    Reply::Attached.write_to(&mut reply_to)?;
    // A `detach` line, or the profiler gone, detaches.
    let mut line = String::new();
    while from.read_line(&mut line)? > 0 && line.trim_end() != DETACH {
        line.clear();
    }
    detach();
    Reply::Detached.write_to(&mut reply_to)
}

/// Whether the peer may attach: as ptrace has it at least, the process's own user or root
/// (the profiler checks the rest, Yama's scope, with ptrace itself).
fn allowed(peer: &UnixStream) -> Result<(), String> {
    let mut credentials = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a connected socket and a `ucred` of the length given.
    let status = unsafe {
        libc::getsockopt(
            peer.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut credentials).cast(),
            &mut len,
        )
    };
    // SAFETY: getuid has no preconditions.
    let own = unsafe { libc::getuid() };
    match status == 0 && (credentials.uid == own || credentials.uid == 0) {
        true => Ok(()),
        false => Err(format!(
            "user {} may not attach to a process of user {own}",
            credentials.uid
        )),
    }
}

/// Loads and starts the requested tool; says why not.
fn attach(request: &Request) -> Result<(), String> {
    if sdk::phase() != Phase::Loaded {
        return Err(
            "the process was attached before; the simulated SDK, as AMD's without its experimental reattach, configures a tool once"
                .into(),
        );
    }
    for (name, value) in &request.env {
        // SAFETY: as rocprofiler-register sets the profiler's environment on attach: the
        // application's threads may read the environment meanwhile, which the C library
        // tolerates for variables they do not use.
        unsafe { std::env::set_var(name, value) };
    }
    let configure = crate::entry_point(&request.tool).ok_or_else(|| {
        format!(
            "cannot load the tool {} (the process's stderr says why)",
            request.tool
        )
    })?;
    let origin = ORIGIN.get().copied();
    match crate::start(&[configure], origin) {
        None => Err("the simulated device has no scenario (the process's stderr says why)".into()),
        Some(0) => Err("the tool did not start (the process's stderr says why)".into()),
        Some(_) => Ok(()),
    }
}

/// Stops the tool's contexts, delivers what they buffered and finalizes the tool; the
/// scenario goes on untraced.
fn detach() {
    crate::stop_contexts(|_| true);
    if let Some(running) = sdk::sdk().and_then(sdk::Sdk::running) {
        running
            .buffers
            .iter()
            .for_each(crate::buffer::Buffer::flush);
    }
    crate::finalize_tools();
}
