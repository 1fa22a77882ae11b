//! Finding and loading rocflow's tool library, which exports the session C API:
//! `ROCFLOW_TOOL_LIBRARY` names it; else, under `rocflow run`, it is the library the run
//! gave the SDK (`ROCP_TOOL_LIBRARIES`), already loaded, so the session drives the run's
//! tool; else the one beside the `rocflow` binary (`ROCFLOW_BIN`, or the first on PATH),
//! where rocflow's installation puts it.

use std::ffi::{OsString, c_char, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::{Error, ErrorKind, Result};

const FILE_NAME: &str = "librocflow_tool.so";

/// The session C API's entry points.
#[derive(Debug)]
pub struct Api {
    pub(crate) open: unsafe extern "C" fn(
        *const c_char,
        *const *const c_char,
        usize,
        *const c_char,
        *mut *mut c_void,
    ) -> i32,
    pub(crate) start: unsafe extern "C" fn(*mut c_void) -> i32,
    pub(crate) stop: unsafe extern "C" fn(*mut c_void) -> i32,
    pub(crate) flush: unsafe extern "C" fn(*mut c_void) -> i32,
    pub(crate) phase: unsafe extern "C" fn(*mut c_void, *const c_char) -> i32,
    pub(crate) close: unsafe extern "C" fn(*mut c_void) -> i32,
    pub(crate) last_error: unsafe extern "C" fn() -> *const c_char,
}

/// The tool library's API, loaded once for the life of the process.
pub fn api() -> Result<&'static Api> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    let loaded = API.get_or_init(|| {
        let path = path().ok_or_else(|| {
            format!("cannot find rocflow's tool library ({FILE_NAME}): set ROCFLOW_TOOL_LIBRARY to it, or put `rocflow` and its libraries on PATH")
        })?;
        load(&path).map_err(|e| format!("cannot load {}: {e}", path.display()))
    });
    loaded.as_ref().map_err(|message| Error {
        kind: ErrorKind::Library,
        message: message.clone(),
    })
}

/// Where the tool library is, by the rules above.
pub fn path() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(path) = var("ROCFLOW_TOOL_LIBRARY") {
        return Some(path.into());
    }
    let is_tool = |p: &Path| p.file_name().is_some_and(|n| n == FILE_NAME);
    if let Some(tools) = var("ROCP_TOOL_LIBRARIES") {
        let listed = std::env::split_paths(&tools).find(|p| is_tool(p));
        if listed.is_some() {
            return listed;
        }
    }
    let beside = |bin: PathBuf| bin.parent().map(|dir| dir.join(FILE_NAME));
    if let Some(bin) = var("ROCFLOW_BIN") {
        return beside(bin.into());
    }
    let path: OsString = var("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("rocflow"))
        .filter(|bin| bin.is_file())
        .find_map(beside)
        .filter(|lib| lib.is_file())
}

fn load(path: &Path) -> Result<Api, libloading::Error> {
    // SAFETY: rocflow's tool library; loading it runs no code of the application's.
    let library = unsafe { libloading::Library::new(path) }?;
    // The API's functions live as long as the process: so does the library.
    let library: &'static libloading::Library = Box::leak(Box::new(library));
    // SAFETY: each symbol has the type rocflow_session.h declares.
    unsafe {
        Ok(Api {
            open: *library.get(b"rocflow_session_open\0")?,
            start: *library.get(b"rocflow_session_start\0")?,
            stop: *library.get(b"rocflow_session_stop\0")?,
            flush: *library.get(b"rocflow_session_flush\0")?,
            phase: *library.get(b"rocflow_session_phase\0")?,
            close: *library.get(b"rocflow_session_close\0")?,
            last_error: *library.get(b"rocflow_session_last_error\0")?,
        })
    }
}
