//! The worker process: a campaign on one target. Each input is written to a file before
//! it runs, so that a crash that kills the process (stack overflow, failed allocation) is
//! still attributable; it runs on a thread with a stack of known size, under a memory
//! limit, with a panic caught and a run that outlasts its time limit taken for a hang.
//! What the worker catches itself it writes down for the supervisor, which reports it.

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::thread;
use std::time::{Duration, Instant};

use crate::corpus::{self, Corpus};
use crate::frames::{self, Payloads};
use crate::mutate::{self, Grammar, Numbers};
use crate::rng::{self, Rng};
use crate::targets::{Shape, Target};

/// Text inputs are cut to this size, spools to [`MAX_SPOOL`].
const MAX_TEXT: usize = 128 << 10;
const MAX_SPOOL: usize = 1 << 20;
/// Tokens kept from the seeds' words, at most.
const SEED_WORDS: usize = 1000;
/// How often a long campaign says how it is going.
const PROGRESS: Duration = Duration::from_secs(30);

/// What each input may use.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    /// Bytes of address space for the whole worker.
    pub memory: u64,
    /// Bytes of stack of the thread inputs run on.
    pub stack: usize,
}

/// How long a campaign runs: whichever ends first.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Mutated inputs, beyond the seeds.
    pub runs: u64,
    pub time: Duration,
}

/// A failure the worker caught: a panic or a hang.
#[derive(Debug)]
pub struct Caught {
    pub kind: &'static str,
    pub message: String,
}

/// The files a worker shares with its supervisor, in the worker's own folder.
pub struct Files {
    dir: PathBuf,
}

impl Files {
    pub fn new(dir: PathBuf) -> Files {
        Files { dir }
    }

    /// The input running now (or the last one).
    pub fn input(&self) -> PathBuf {
        self.dir.join("input")
    }

    /// What the worker caught: its kind on the first line, then the message.
    pub fn caught(&self) -> PathBuf {
        self.dir.join("caught")
    }

    /// The worker's standard error, where the runtime says why it aborted.
    pub fn stderr(&self) -> PathBuf {
        self.dir.join("stderr")
    }

    /// Where targets write the files they need.
    pub fn scratch(&self) -> PathBuf {
        self.dir.join("scratch")
    }
}

/// Fuzzes `target` until the budget is spent or an input fails; prints how it went.
pub fn fuzz(
    target: &'static Target,
    seed: u64,
    budget: Budget,
    limits: Limits,
    files: &Files,
) -> Result<(), Caught> {
    let seeds = corpus::seeds(target).unwrap_or_else(|e| {
        panic!("cannot read the seeds of {}: {e}", target.name);
    });
    assert!(!seeds.is_empty(), "{} has no seeds", target.name);
    let mutator = Mutator::new(target, &seeds);
    let mut runner = Runner::start(target, limits, files);
    let mut corpus = Corpus::new(seeds.clone());
    for input in seeds {
        corpus.saw(&runner.run(input)?.1);
    }
    let mut rng = Rng::new(seed ^ rng::hash(target.name.as_bytes()));
    let started = Instant::now();
    let (mut runs, mut said) = (0, Instant::now());
    while runs < budget.runs && started.elapsed() < budget.time {
        let input = mutator.mutate(corpus.pick(&mut rng), corpus.entries(), &mut rng);
        let (input, outcome) = runner.run(input)?;
        corpus.observe(input, &outcome, &mut rng);
        runs += 1;
        if said.elapsed() >= PROGRESS {
            println!("{}: {runs} runs, {} kept", target.name, corpus.found());
            said = Instant::now();
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{}: {runs} runs in {seconds:.0} s ({:.0}/s), {} inputs kept; nothing failed",
        target.name,
        runs as f64 / seconds.max(1e-3),
        corpus.found()
    );
    Ok(())
}

/// Runs one saved input.
pub fn replay(
    target: &'static Target,
    file: &Path,
    limits: Limits,
    files: &Files,
) -> Result<(), Caught> {
    let input =
        std::fs::read(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    Runner::start(target, limits, files).run(input)?;
    println!("{}: {} runs without failing", target.name, file.display());
    Ok(())
}

/// How a target's inputs are mutated.
enum Mutator {
    Text(Grammar),
    Spool(Payloads),
}

impl Mutator {
    fn new(target: &Target, seeds: &[Vec<u8>]) -> Mutator {
        match target.shape {
            Shape::Spool => Mutator::Spool(Payloads::new(MAX_SPOOL)),
            Shape::Text => {
                let mut tokens: Vec<Vec<u8>> = target
                    .tokens
                    .iter()
                    .map(|t| t.as_bytes().to_vec())
                    .collect();
                let mut words: Vec<&[u8]> = seeds.iter().flat_map(|s| mutate::words(s)).collect();
                words.sort_unstable();
                words.dedup();
                tokens.extend(words.into_iter().take(SEED_WORDS).map(<[u8]>::to_vec));
                Mutator::Text(Grammar {
                    tokens,
                    nests: target.nests,
                    numbers: Numbers::Text,
                    max_len: MAX_TEXT,
                })
            }
        }
    }

    fn mutate(&self, input: &[u8], others: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
        match self {
            Mutator::Text(grammar) => mutate::havoc(input, others, grammar, rng),
            Mutator::Spool(payloads) => frames::havoc(input, others, payloads, rng),
        }
    }
}

/// The first panic since it was last taken, with where it happened; set by the panic hook
/// on whichever thread panics.
static PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Runs inputs on a thread of its own, one at a time.
struct Runner<'a> {
    inputs: SyncSender<Vec<u8>>,
    results: Receiver<(Vec<u8>, thread::Result<String>)>,
    timeout: Duration,
    files: &'a Files,
}

impl<'a> Runner<'a> {
    fn start(target: &'static Target, limits: Limits, files: &'a Files) -> Runner<'a> {
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
            files,
        }
    }

    /// Runs one input; gives it back with what it led to.
    fn run(&mut self, input: Vec<u8>) -> Result<(Vec<u8>, String), Caught> {
        std::fs::write(self.files.input(), &input).expect("the worker folder is writable");
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
        if function.contains("rocflow") && !function.contains("rocflow_fuzz::campaign") && !std {
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
