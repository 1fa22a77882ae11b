//! A stand-in application for the `rocflow run` tests, doing what real applications do to
//! a profiler: `sim-app fork N` forks N children that live a while and exit; `sim-app
//! crash` dies of SIGSEGV; `sim-app threads N` runs N threads; `sim-app exit CODE` exits
//! with CODE; `sim-app _exit MS` ends with `_exit` after MS milliseconds, skipping
//! `atexit` (and so the SDK's finalize); `sim-app linger S` ignores SIGINT and SIGTERM and
//! lives S seconds; `sim-app force` hands the tool of `ROCP_TOOL_LIBRARIES` to
//! `rocprofiler_force_configure`, as tools that start the SDK themselves do, and prints the
//! status; `sim-app exec PROGRAM ARGS…` replaces itself with PROGRAM, as launchers and
//! shell wrappers do. Each first waits long enough for the simulated device's work to
//! finish.

use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize| args.get(i).and_then(|a| a.parse::<i32>().ok()).unwrap_or(1);
    let settle = || std::thread::sleep(Duration::from_millis(300));
    match args.first().map(String::as_str) {
        Some("fork") => {
            let mut children = Vec::new();
            for _ in 0..number(1) {
                // SAFETY: the child only sleeps and exits.
                match unsafe { libc::fork() } {
                    0 => {
                        settle();
                        std::process::exit(0);
                    }
                    pid if pid > 0 => children.push(pid),
                    _ => panic!("fork failed"),
                }
            }
            for pid in children {
                let mut status = 0;
                // SAFETY: waiting for our own child.
                unsafe { libc::waitpid(pid, &mut status, 0) };
            }
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
                "usage: sim-app fork N | crash | threads N | exit CODE | _exit MS | linger S | force | exec PROGRAM ARGS..."
            );
            std::process::exit(2);
        }
    }
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
