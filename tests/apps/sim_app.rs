//! A stand-in application for the `rocflow run` tests, doing what real applications do to
//! a profiler: `sim-app fork N` forks N children that live a while and exit; `sim-app
//! crash` dies of SIGSEGV; `sim-app threads N` runs N threads; `sim-app exit CODE` exits
//! with CODE; `sim-app _exit MS` ends with `_exit` after MS milliseconds, skipping
//! `atexit` (and so the SDK's finalize); `sim-app linger S` ignores SIGINT and SIGTERM and
//! lives S seconds; `sim-app force` hands the tool of `ROCP_TOOL_LIBRARIES` to
//! `rocprofiler_force_configure`, as tools that start the SDK themselves do, and prints the
//! status; `sim-app exec PROGRAM ARGS…` replaces itself with PROGRAM, as launchers and
//! shell wrappers do; `sim-app connections N CHILDREN` holds N connections to the runner's
//! socket that say nothing, closes them and forks CHILDREN children. Each first waits long
//! enough for the simulated device's work to finish.

use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize| args.get(i).and_then(|a| a.parse::<i32>().ok()).unwrap_or(1);
    let settle = || std::thread::sleep(Duration::from_millis(300));
    match args.first().map(String::as_str) {
        Some("fork") => {
            fork(number(1), settle);
            settle();
        }
        Some("connections") => {
            let connections = hold_connections(number(1) as usize);
            settle();
            drop(connections);
            fork(number(2), settle);
            settle();
        }
        Some("crash") => {
            settle();
            // SAFETY: raising a signal has no preconditions.
            unsafe { libc::raise(libc::SIGSEGV) };
        }
        Some("threads") => {
            let threads: Vec<_> = (0..number(1)).map(|_| std::thread::spawn(settle)).collect();
            threads.into_iter().for_each(|t| t.join().unwrap());
        }
        Some("exit") => {
            settle();
            std::process::exit(number(1));
        }
        Some("_exit") => {
            std::thread::sleep(Duration::from_millis(number(1) as u64));
            // SAFETY: ending the process has no preconditions.
            unsafe { libc::_exit(0) };
        }
        Some("linger") => {
            // SAFETY: ignoring signals has no preconditions.
            unsafe {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
            }
            std::thread::sleep(Duration::from_secs(number(1) as u64));
        }
        Some("exec") => {
            use std::os::unix::process::CommandExt;
            // Long enough for a pipeline that flushes often to have sent this program's
            // records: an exec loses what the SDK's buffers still hold.
            std::thread::sleep(Duration::from_secs(1));
            let error = std::process::Command::new(&args[1]).args(&args[2..]).exec();
            panic!("cannot exec {}: {error}", args[1]);
        }
        Some("force") => {
            println!("rocprofiler_force_configure: {}", force_configure());
            settle();
        }
        _ => {
            eprintln!(
                "usage: sim-app fork N | crash | threads N | exit CODE | _exit MS | linger S | force | exec PROGRAM ARGS... | connections N CHILDREN"
            );
            std::process::exit(2);
        }
    }
}

/// Forks `children` children that `settle` and exit, and waits for them.
fn fork(children: i32, settle: impl Fn()) {
    let mut pids = Vec::new();
    for _ in 0..children {
        // SAFETY: the child only sleeps and exits.
        match unsafe { libc::fork() } {
            0 => {
                settle();
                std::process::exit(0);
            }
            pid if pid > 0 => pids.push(pid),
            _ => panic!("fork failed"),
        }
    }
    for pid in pids {
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
}

/// Opens `n` connections to the runner's socket that say nothing, with as many descriptors
/// as the hard limit allows.
fn hold_connections(n: usize) -> Vec<std::os::unix::net::UnixStream> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain calls on a limit this function owns.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
    let socket = std::env::var_os("ROCFLOW_SOCKET").expect("run by rocflow");
    (0..n)
        .map(|i| {
            std::os::unix::net::UnixStream::connect(&socket)
                .unwrap_or_else(|e| panic!("connection {i}: {e}"))
        })
        .collect()
}

/// Calls `rocprofiler_force_configure` of the SDK in the process with the tool's entry point.
fn force_configure() -> i32 {
    type Force = unsafe extern "C" fn(*const std::ffi::c_void) -> i32;
    let tool = std::env::var("ROCP_TOOL_LIBRARIES").expect("rocflow names the tool");
    // SAFETY: the tool library and the SDK are loaded as the SDK's headers declare them.
    unsafe {
        let tool = libloading::Library::new(tool).expect("the tool loads");
        let configure = tool.get::<*const std::ffi::c_void>(b"rocprofiler_configure\0");
        let this = libloading::os::unix::Library::this();
        let force = this.get::<Force>(b"rocprofiler_force_configure\0");
        let status =
            force.expect("the SDK forces configuration")(*configure.expect("an entry point"));
        std::mem::forget(tool);
        status
    }
}
