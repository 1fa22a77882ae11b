//! The boundary between the application and the tool. Every callback the SDK, libc or a
//! tool thread runs goes through [`entry`], so a bug in the tool switches the tool off
//! instead of taking the application down: since Rust 1.81 a panic unwinding out of an
//! `extern "C"` fn aborts the process (and a `panic = "abort"` profile would defeat this
//! module). A caught panic is reported once on stderr, every later callback returns at
//! once, and the stream to the runner is closed, so the records that already reached it are
//! kept. A poisoned lock is the same broken tool: [`locked`] switches the tool off and
//! finishes the callback rather than panicking a second time.
//!
//! Exempt, because they cannot panic and must run even once the tool is off: the fork
//! hooks that only release a lock their prepare hook took, and the dispatch callback that
//! leaves every dispatch uncounted.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LockResult, Once, OnceLock};

/// Set, never cleared, by the first internal error.
static DISABLED: AtomicBool = AtomicBool::new(false);
/// What switching the tool off does besides: closing the stream to the runner, which the
/// tool sets when it opens the stream (the guard sits below the stream, which it guards).
static ON_DISABLE: OnceLock<fn()> = OnceLock::new();

thread_local! {
    /// The callback this thread is in, if any: the panic hook stays quiet about its panics,
    /// which the report names instead.
    static CURRENT: Cell<Option<&'static str>> = const { Cell::new(None) };
    /// Where this thread's last panic inside a callback happened, for the report.
    static PANICKED_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Sets what switching the tool off does besides (once per process).
pub fn on_disable(hook: fn()) {
    let _ = ON_DISABLE.set(hook);
}

/// Whether an internal error has switched the tool off.
pub fn disabled() -> bool {
    DISABLED.load(Ordering::Acquire)
}

/// Runs the body of the callback `name`: at once `fallback` when the tool is off, and
/// `fallback`, with the tool switched off, when the body panics.
///
/// The body's state is not unwind-safe, and need not be: after a panic no other body runs,
/// and closing the stream, the one thing that still does, takes its locks poisoned or not.
pub fn entry<R>(name: &'static str, fallback: R, body: impl FnOnce() -> R) -> R {
    if disabled() {
        return fallback;
    }
    quiet_hook();
    let outer = CURRENT.replace(Some(name));
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        #[cfg(feature = "fault-injection")]
        fault::inject(name);
        body()
    }));
    let result = result.map_err(|payload| {
        let at = PANICKED_AT
            .take()
            .map_or_else(String::new, |at| format!(" at {at}"));
        disable(name, &format!("{}{at}", message(&*payload)));
    });
    CURRENT.set(outer);
    result.unwrap_or(fallback)
}

/// The guard of a lock, poisoned or not. A poisoned lock means a panic in the tool left
/// its data half-changed: the tool is switched off, and the callback finishes on that data
/// (plain collections, which a panic leaves memory-safe if not consistent), since the
/// stream it would send on is closed.
pub fn locked<G>(result: LockResult<G>) -> G {
    result.unwrap_or_else(|poisoned| {
        let name = CURRENT.get().unwrap_or("a rocflow thread");
        disable(name, "a lock was poisoned by an earlier panic");
        poisoned.into_inner()
    })
}

/// Switches the tool off, reporting why the first time.
fn disable(name: &str, why: &str) {
    if DISABLED.swap(true, Ordering::AcqRel) {
        return;
    }
    // Not `eprintln!`, which panics when stderr fails.
    let _ = writeln!(
        std::io::stderr(),
        "rocflow tool: internal error in {name}: {why}; profiling disabled, the application continues"
    );
    if let Some(&hook) = ON_DISABLE.get() {
        // A panic in the hook has nothing left to switch off.
        let _ = panic::catch_unwind(hook);
    }
}

/// A panic's message, as the default hook would print it.
fn message(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "a panic without a message"
    }
}

/// Installs, once, a panic hook that keeps the default hook's message out of stderr for
/// panics inside a callback (the report is their one line) and hands every other panic to
/// the hook it replaced. The tool library has a std of its own, so in an application this
/// hook only ever sees the tool's panics; it chains all the same, for the tool's tests.
fn quiet_hook() {
    static INSTALLED: Once = Once::new();
    // `take_hook` may not be called while panicking (a callback run by a destructor).
    if INSTALLED.is_completed() || std::thread::panicking() {
        return;
    }
    INSTALLED.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CURRENT.get().is_none() {
                return previous(info);
            }
            let at = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()));
            let _ = PANICKED_AT.try_with(|slot| *slot.borrow_mut() = at);
        }));
    });
}

/// Panics provoked on purpose, for the tests that check the guard in a real process:
/// `ROCFLOW_TOOL_PANIC=CALLBACK[@N]` makes the Nth call (the first without `@N`) of the
/// callback named CALLBACK panic. Only the `fault-injection` feature, which only rocflow's
/// own tests turn on, compiles it in.
#[cfg(feature = "fault-injection")]
mod fault {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    pub const VARIABLE: &str = "ROCFLOW_TOOL_PANIC";

    pub fn inject(name: &str) {
        static PLAN: OnceLock<Option<(String, u64)>> = OnceLock::new();
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let plan = PLAN.get_or_init(|| {
            let text = std::env::var(VARIABLE).ok()?;
            let (callback, nth) = text.split_once('@').unwrap_or((&text, "1"));
            Some((callback.to_owned(), nth.parse().ok()?))
        });
        if let Some((callback, nth)) = plan
            && callback == name
            && CALLS.fetch_add(1, Ordering::Relaxed) + 1 == *nth
        {
            panic!("{VARIABLE} asked call {nth} of {callback} to panic");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::sync::Mutex;

    /// Runs the test `name` again in a process of its own, where the tool starts on, and
    /// returns its stderr: being off is for the life of a process.
    fn alone(name: &str) -> Option<String> {
        const CHILD: &str = "ROCFLOW_GUARD_TEST_CHILD";
        if std::env::var_os(CHILD).is_some() {
            return None;
        }
        let output = Command::new(std::env::current_exe().unwrap())
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{stderr}");
        Some(stderr)
    }

    fn reports(stderr: &str) -> Vec<&str> {
        stderr
            .lines()
            .filter(|l| l.contains("internal error"))
            .collect()
    }

    #[test]
    fn a_panic_gives_the_fallback_and_switches_the_tool_off() {
        if let Some(stderr) =
            alone("guard::tests::a_panic_gives_the_fallback_and_switches_the_tool_off")
        {
            let reports = reports(&stderr);
            assert_eq!(reports.len(), 1, "{stderr}");
            assert!(
                reports[0].starts_with("rocflow tool: internal error in on_test: boom at ")
                    && reports[0].ends_with("; profiling disabled, the application continues"),
                "{stderr}"
            );
            assert!(
                !stderr.contains("panicked at"),
                "the default hook is quiet: {stderr}"
            );
            return;
        }
        assert!(!disabled());
        assert_eq!(entry("on_ok", 0, || 7), 7);
        assert_eq!(entry("on_test", -1, || panic!("boom")), -1);
        assert!(disabled());
        let mut ran = false;
        let later = entry("on_later", 3, || {
            ran = true;
            4
        });
        assert_eq!(later, 3);
        assert!(!ran, "a callback after the panic runs no body");
        assert_eq!(entry("on_test", -1, || panic!("again")), -1);
    }

    #[test]
    fn a_poisoned_lock_switches_the_tool_off_without_a_panic() {
        if let Some(stderr) =
            alone("guard::tests::a_poisoned_lock_switches_the_tool_off_without_a_panic")
        {
            let reports = reports(&stderr);
            assert_eq!(reports.len(), 1, "{stderr}");
            assert!(
                reports[0].contains("internal error in on_lock: a lock was poisoned"),
                "{stderr}"
            );
            return;
        }
        let lock = Mutex::new(vec![1]);
        // Poisoned by a panic outside any callback (a thread of the tool's own).
        std::thread::scope(|s| {
            let poisoning = s.spawn(|| {
                let _held = lock.lock().unwrap();
                panic!("poisoning");
            });
            assert!(poisoning.join().is_err());
        });
        assert!(lock.is_poisoned());
        let got = entry("on_lock", Vec::new(), || locked(lock.lock()).clone());
        assert_eq!(got, vec![1], "the callback finishes on the data");
        assert!(disabled());
        assert_eq!(entry("on_lock", 0, || locked(lock.lock()).len()), 0);
    }
}
