//! In-process rocflow sessions: profile windows of this process's own work with a rocflow
//! pipeline, from Rust. A safe API over the session C API (`rocflow_session.h`) that
//! rocflow's tool library exports; the library is loaded at run time (see [`library`]),
//! so that under `rocflow run` the session is the run's own tool, not a second copy.
//!
//! ```no_run
//! use rocflow_session::Session;
//!
//! let session = Session::builder("kernel-trace").set("top", "5").output("profile").open()?;
//! session.start()?;
//! // ... the work to profile ...
//! session.stop()?;
//! session.phase("warmup")?; // profile/warmup/ is complete now
//! session.close()?; // and profile/final/
//! # Ok::<(), rocflow_session::Error>(())
//! ```
//!
//! The semantics (one session per process, phases, forks, `rocflow run`) are the C API's:
//! see `plugins/include/rocflow_session.h`.

pub mod library;

use std::ffi::{CStr, CString, OsStr, OsString, c_char, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::ptr::NonNull;

use library::Api;

/// Why a session call failed: the C API's status, and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

/// The C API's statuses, and the one failure of this crate's own: no tool library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A malformed argument (a parameter without `=`, a phase name that cannot name a
    /// directory, a NUL inside a string).
    Argument,
    /// Not now: closed, already started (or not started), another process's, or the
    /// process already opened a session.
    State,
    /// The rocflow runner could not be found or started, refused the pipeline, or failed
    /// to complete a phase's outputs.
    Runner,
    /// rocprofiler-sdk could not be started for the session.
    Sdk,
    /// The tool switched itself off after an internal error.
    Internal,
    /// rocflow's tool library could not be found or loaded.
    Library,
}

impl ErrorKind {
    fn of(status: i32) -> ErrorKind {
        match status {
            1 => ErrorKind::Argument,
            2 => ErrorKind::State,
            3 => ErrorKind::Runner,
            4 => ErrorKind::Sdk,
            _ => ErrorKind::Internal,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

fn argument(message: impl Into<String>) -> Error {
    Error {
        kind: ErrorKind::Argument,
        message: message.into(),
    }
}

fn c_string(text: &OsStr, what: &str) -> Result<CString> {
    CString::new(text.as_bytes()).map_err(|_| argument(format!("{what} holds a NUL byte")))
}

/// What to open a session on; [`Session::builder`] makes one.
#[derive(Debug, Clone)]
pub struct Builder {
    pipeline: OsString,
    sets: Vec<OsString>,
    output: Option<PathBuf>,
}

impl Builder {
    /// Sets a pipeline parameter, as `rocflow run --set NAME=VALUE` does.
    pub fn set(mut self, name: &str, value: impl AsRef<OsStr>) -> Builder {
        let mut set = OsString::from(name);
        set.push("=");
        set.push(value);
        self.sets.push(set);
        self
    }

    /// Where the phases' outputs go (default `rocflow-out`).
    pub fn output(mut self, dir: impl Into<PathBuf>) -> Builder {
        self.output = Some(dir.into());
        self
    }

    /// Opens the process's session.
    pub fn open(self) -> Result<Session> {
        let api = library::api()?;
        let pipeline = c_string(&self.pipeline, "the pipeline")?;
        let sets = (self.sets.iter())
            .map(|s| c_string(s, "a parameter"))
            .collect::<Result<Vec<_>>>()?;
        let set_ptrs: Vec<*const c_char> = sets.iter().map(|s| s.as_ptr()).collect();
        let output = (self.output.as_ref())
            .map(|o| c_string(o.as_os_str(), "the output directory"))
            .transpose()?;
        let mut raw: *mut c_void = std::ptr::null_mut();
        // SAFETY: NUL-terminated strings and a pointer array that outlive the call; a
        // writable handle.
        let status = unsafe {
            (api.open)(
                pipeline.as_ptr(),
                set_ptrs.as_ptr(),
                set_ptrs.len(),
                output.as_ref().map_or(std::ptr::null(), |o| o.as_ptr()),
                &mut raw,
            )
        };
        api.check(status)?;
        let raw = NonNull::new(raw).ok_or_else(|| Error {
            kind: ErrorKind::Internal,
            message: "the tool library opened a session and gave no handle".into(),
        })?;
        Ok(Session {
            api,
            raw,
            closed: false,
        })
    }
}

/// The process's session. Every method may be called from any thread.
#[derive(Debug)]
pub struct Session {
    api: &'static Api,
    raw: NonNull<c_void>,
    closed: bool,
}

// SAFETY: the C API serializes calls on a session and takes them from any thread; the
// handle is never freed.
unsafe impl Send for Session {}
// SAFETY: as above.
unsafe impl Sync for Session {}

impl Session {
    /// A session on `pipeline`: a pipeline file, or a template name such as `kernel-trace`.
    pub fn builder(pipeline: impl Into<OsString>) -> Builder {
        Builder {
            pipeline: pipeline.into(),
            sets: Vec::new(),
            output: None,
        }
    }

    /// Starts the pipeline's contexts.
    pub fn start(&self) -> Result<()> {
        // SAFETY: a handle the library gave.
        self.api
            .check(unsafe { (self.api.start)(self.raw.as_ptr()) })
    }

    /// Stops them.
    pub fn stop(&self) -> Result<()> {
        // SAFETY: as above.
        self.api
            .check(unsafe { (self.api.stop)(self.raw.as_ptr()) })
    }

    /// Hands every buffered record to the runner.
    pub fn flush(&self) -> Result<()> {
        // SAFETY: as above.
        self.api
            .check(unsafe { (self.api.flush)(self.raw.as_ptr()) })
    }

    /// Ends the current phase as `name`: its outputs are complete in `name` under the
    /// output directory when this returns.
    pub fn phase(&self, name: &str) -> Result<()> {
        let name = c_string(OsStr::new(name), "the phase's name")?;
        // SAFETY: as above, with a NUL-terminated name.
        self.api
            .check(unsafe { (self.api.phase)(self.raw.as_ptr(), name.as_ptr()) })
    }

    /// Stops the contexts and ends the last phase (`final`), complete on return.
    pub fn close(mut self) -> Result<()> {
        self.closed = true;
        // SAFETY: as above.
        self.api
            .check(unsafe { (self.api.close)(self.raw.as_ptr()) })
    }
}

impl Drop for Session {
    /// Closes a session not closed yet; a failure is the library's to report on stderr.
    fn drop(&mut self) {
        if !self.closed {
            // SAFETY: as above.
            let _ = unsafe { (self.api.close)(self.raw.as_ptr()) };
        }
    }
}

impl Api {
    fn check(&self, status: i32) -> Result<()> {
        if status == 0 {
            return Ok(());
        }
        // SAFETY: the library's function; its message lives until this thread's next call.
        let message = unsafe { (self.last_error)() };
        let message = match message.is_null() {
            true => format!("session call failed with status {status}"),
            // SAFETY: non-null and NUL-terminated.
            false => unsafe { CStr::from_ptr(message) }
                .to_string_lossy()
                .into_owned(),
        };
        Err(Error {
            kind: ErrorKind::of(status),
            message,
        })
    }
}
