//! Runs inputs one at a time on a thread of their own, with a stack of known size, under
//! a memory limit. Each input is written to a file before it runs, so that a crash that
//! kills the process (stack overflow, failed allocation) is still attributable; a panic is
//! caught, and an input that outlasts its time limit is taken for a hang.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::thread;
use std::time::Duration;

use crate::files::{Files, Running};
use crate::targets::Target;

/// What each input may use.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    /// Bytes of address space for the whole worker.
    pub memory: u64,
    /// Bytes of stack of the thread inputs run on.
    pub stack: usize,
}

/// A failure the worker caught: a panic or a hang.
#[derive(Debug)]
pub struct Caught {
    pub kind: &'static str,
    pub message: String,
}

/// The first panic since it was last taken, with where it happened; set by the panic hook
/// on whichever thread panics.
static PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Runs inputs on a thread of its own, one at a time.
pub struct Runner {
    inputs: SyncSender<Vec<u8>>,
    results: Receiver<(Vec<u8>, thread::Result<String>)>,
    timeout: Duration,
    running: Running,
}

impl Runner {
    /// Limits the process's memory, and starts the thread inputs run on.
    pub fn start(target: &'static Target, limits: Limits, files: &Files) -> Runner {
        limit_memory(limits.memory);
        // The harness's own panics (on the main thread) are reported as usual.
        let harness = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if thread::current().name() == Some("main") {
                return harness(info);
            }
            let backtrace = std::backtrace::Backtrace::force_capture();
            let mut first = PANIC.lock().unwrap_or_else(|e| e.into_inner());
            first.get_or_insert_with(|| format!("{info}\n{}", ours(&backtrace.to_string())));
        }));
        let scratch = files.scratch();
        std::fs::create_dir_all(&scratch).expect("the worker folder is writable");
        let (inputs, receive) = mpsc::sync_channel::<Vec<u8>>(0);
        let (send, results) = mpsc::sync_channel(1);
        thread::Builder::new()
            .name(format!("fuzz {}", target.name))
            .stack_size(limits.stack)
            .spawn(move || {
                for input in receive {
                    let outcome =
                        panic::catch_unwind(AssertUnwindSafe(|| (target.run)(&input, &scratch)));
                    if send.send((input, outcome)).is_err() {
                        break;
                    }
                }
            })
            .expect("the input thread starts");
        Runner {
            inputs,
            results,
            timeout: limits.timeout,
            running: Running::create(files),
        }
    }

    /// Runs one input; gives it back with what it led to.
    pub fn run(&mut self, input: Vec<u8>) -> Result<(Vec<u8>, String), Caught> {
        self.running.start(&input);
        self.inputs.send(input).expect("the input thread runs");
        let (input, outcome) = match self.results.recv_timeout(self.timeout) {
            Ok(result) => result,
            Err(RecvTimeoutError::Timeout) => {
                return Err(Caught {
                    kind: "hang",
                    message: format!("still running after {:?}", self.timeout),
                });
            }
            Err(RecvTimeoutError::Disconnected) => unreachable!("the input thread catches panics"),
        };
        // A panic counts even where the code under test caught it: catching only hides it.
        let panicked = PANIC.lock().unwrap_or_else(|e| e.into_inner()).take();
        match (outcome, panicked) {
            (Ok(outcome), None) => Ok((input, outcome)),
            (_, panicked) => Err(Caught {
                kind: "panic",
                message: panicked.unwrap_or_else(|| "a panic without a message".into()),
            }),
        }
    }
}

/// The frames of a backtrace in rocflow's code, the harness's plumbing left out: the
/// path from the target's entry point to the panic.
fn ours(backtrace: &str) -> String {
    let mut kept = Vec::new();
    let mut lines = backtrace.lines().peekable();
    while let Some(function) = lines.next() {
        let at = lines.next_if(|l| l.trim_start().starts_with("at "));
        let std = at.is_some_and(|at| at.contains("/rustc/"));
        if function.contains("rocflow") && !function.contains("rocflow_fuzz::runner") && !std {
            kept.push(function);
            kept.extend(at);
        }
    }
    kept.join("\n")
}

/// Limits the process's address space: an allocation past it fails at once and aborts,
/// instead of swapping the machine to a halt.
fn limit_memory(bytes: u64) {
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: setrlimit reads the struct it is given and nothing else.
    let status = unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
    assert_eq!(status, 0, "setrlimit: {}", std::io::Error::last_os_error());
}
