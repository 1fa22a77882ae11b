//! The session C API (`plugins/include/rocflow_session.h`): each function returns a status,
//! and a failed call leaves its message for `rocflow_session_last_error` on the calling
//! thread.

use std::cell::RefCell;
use std::ffi::{CStr, CString, OsStr, OsString, c_char};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::{Error, Request, Session};
use crate::guard::{disabled, entry};

pub const OK: i32 = 0;
/// A null or malformed argument, or a phase name that cannot name a directory.
pub const ERROR_ARGUMENT: i32 = 1;
/// Not now: the session is closed, already started (or not), another process's, or the
/// process already opened one.
pub const ERROR_STATE: i32 = 2;
/// The rocflow runner could not be found or started, refused the pipeline, or failed to
/// complete a phase's outputs (it says why on stderr).
pub const ERROR_RUNNER: i32 = 3;
/// rocprofiler-sdk could not be started for the session.
pub const ERROR_SDK: i32 = 4;
/// The tool switched itself off after an internal error (it said so on stderr).
pub const ERROR_INTERNAL: i32 = 5;

/// The C API's opaque session.
pub type RocflowSession = Session;

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

fn remember(message: String) {
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = Some(message));
}

fn code(error: &Error) -> i32 {
    match error {
        Error::Argument(_) => ERROR_ARGUMENT,
        Error::State(_) => ERROR_STATE,
        Error::Runner(_) => ERROR_RUNNER,
        Error::Sdk(_) => ERROR_SDK,
    }
}

/// Runs a call through the tool's guard and turns its outcome into a status.
fn call(name: &'static str, body: impl FnOnce() -> Result<(), Error>) -> i32 {
    let internal = || {
        remember("rocflow's tool switched itself off after an internal error (see stderr)".into());
        ERROR_INTERNAL
    };
    if disabled() {
        return internal();
    }
    match entry(name, None, || Some(body())) {
        Some(Ok(())) => OK,
        Some(Err(e)) => {
            remember(e.to_string());
            code(&e)
        }
        None => internal(),
    }
}

/// A NUL-terminated argument; `what` names it in the error.
///
/// # Safety
/// `text` is null or points to a NUL-terminated string.
unsafe fn text<'a>(text: *const c_char, what: &str) -> Result<&'a OsStr, Error> {
    if text.is_null() {
        return Err(Error::Argument(format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    let bytes = unsafe { CStr::from_ptr(text) }.to_bytes();
    Ok(OsStr::from_bytes(bytes))
}

/// The session behind a handle.
///
/// # Safety
/// `session` is null or a handle `rocflow_session_open` gave (never freed).
unsafe fn session<'a>(session: *const RocflowSession) -> Result<&'a Session, Error> {
    // SAFETY: the caller's contract.
    unsafe { session.as_ref() }.ok_or_else(|| Error::Argument("the session is NULL".into()))
}

/// Opens the process's session on `pipeline` (a file or template name) with `set_count`
/// `NAME=VALUE` parameters, writing under `output_dir` (NULL: `rocflow-out`).
///
/// # Safety
/// Strings are NUL-terminated; `set` holds `set_count` of them; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocflow_session_open(
    pipeline: *const c_char,
    set: *const *const c_char,
    set_count: usize,
    output_dir: *const c_char,
    out: *mut *mut RocflowSession,
) -> i32 {
    call("rocflow_session_open", || {
        if out.is_null() {
            return Err(Error::Argument("the place for the session is NULL".into()));
        }
        // SAFETY: the caller's contract.
        let pipeline = unsafe { text(pipeline, "the pipeline") }?.to_owned();
        if set.is_null() && set_count > 0 {
            return Err(Error::Argument("the parameters are NULL".into()));
        }
        let mut sets = Vec::with_capacity(set_count);
        for i in 0..set_count {
            // SAFETY: `set` holds `set_count` pointers.
            let one = unsafe { text(*set.add(i), "a parameter") }?;
            if !one.as_bytes().contains(&b'=') {
                return Err(Error::Argument(format!(
                    "parameter `{}` is not NAME=VALUE",
                    one.to_string_lossy()
                )));
            }
            sets.push(OsString::from(one));
        }
        let output = match output_dir.is_null() {
            true => None,
            // SAFETY: the caller's contract.
            false => Some(PathBuf::from(unsafe {
                text(output_dir, "the output directory")
            }?)),
        };
        let opened = super::open(Request {
            pipeline,
            sets,
            output,
        })?;
        // SAFETY: checked writable above.
        unsafe { *out = std::ptr::from_ref(opened).cast_mut() };
        Ok(())
    })
}

/// Starts the pipeline's contexts.
///
/// # Safety
/// `session` is a handle from `rocflow_session_open`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocflow_session_start(session: *mut RocflowSession) -> i32 {
    // SAFETY: the caller's contract.
    call("rocflow_session_start", || {
        unsafe { self::session(session) }?.start()
    })
}

/// Stops them.
///
/// # Safety
/// As `rocflow_session_start`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocflow_session_stop(session: *mut RocflowSession) -> i32 {
    // SAFETY: the caller's contract.
    call("rocflow_session_stop", || {
        unsafe { self::session(session) }?.stop()
    })
}

/// Hands every buffered record to the runner.
///
/// # Safety
/// As `rocflow_session_start`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocflow_session_flush(session: *mut RocflowSession) -> i32 {
    // SAFETY: the caller's contract.
    call("rocflow_session_flush", || {
        unsafe { self::session(session) }?.flush()
    })
}

/// Ends the current phase as `name`: its outputs are complete in `OUTPUT/name` on return.
///
/// # Safety
/// As `rocflow_session_start`; `name` is NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocflow_session_phase(
    session: *mut RocflowSession,
    name: *const c_char,
) -> i32 {
    call("rocflow_session_phase", || {
        // SAFETY: the caller's contract.
        let session = unsafe { self::session(session) }?;
        // SAFETY: the caller's contract.
        let name = unsafe { text(name, "the phase's name") }?;
        let name = name
            .to_str()
            .ok_or_else(|| Error::Argument("the phase's name is not UTF-8".into()))?;
        session.phase(name).map(drop)
    })
}

/// Stops the contexts and ends the last phase (`OUTPUT/final`); the handle stays valid,
/// and every later call on it fails with ROCFLOW_SESSION_ERROR_STATE.
///
/// # Safety
/// As `rocflow_session_start`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocflow_session_close(session: *mut RocflowSession) -> i32 {
    // SAFETY: the caller's contract.
    call("rocflow_session_close", || {
        unsafe { self::session(session) }?.close()
    })
}

/// The message of the calling thread's last failed call, or NULL; valid until its next
/// call into this API.
#[unsafe(no_mangle)]
pub extern "C" fn rocflow_session_last_error() -> *const c_char {
    LAST_ERROR.with(|last| {
        last.borrow()
            .as_ref()
            .map_or(std::ptr::null(), |m| m.as_ptr())
    })
}
