//! The simulated application's ROCTx calls where its ROCTx is roctracer's legacy library
//! (`marker_library = "legacy"`): the calls go to that library, loaded in the process, and
//! so reach no SDK, the simulated one included; a tool sees them only through the tracer
//! callback it registered with the library.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use crate::stderr::warn;

/// `roctxRangePushA`.
type Push = unsafe extern "C" fn(message: *const c_char) -> c_int;
/// `roctxRangePop`.
type Pop = unsafe extern "C" fn() -> c_int;

/// The legacy library's range calls.
pub struct Library {
    push: Push,
    pop: Pop,
}

impl Library {
    /// `roctxRangePushA(message)`.
    pub fn push(&self, message: Option<&CStr>) {
        // SAFETY: the library's function, with a NUL-terminated message or none.
        unsafe { (self.push)(message.map_or(std::ptr::null(), CStr::as_ptr)) };
    }

    /// `roctxRangePop()`.
    pub fn pop(&self) {
        // SAFETY: the library's function.
        unsafe { (self.pop)() };
    }
}

/// The legacy library the process loaded; `None`, said once, where it has none.
pub fn library() -> Option<&'static Library> {
    static LIBRARY: OnceLock<Option<Library>> = OnceLock::new();
    let library = LIBRARY.get_or_init(|| {
        let found = find();
        if found.is_none() {
            warn(
                "the scenario's marker_library = \"legacy\" needs roctracer's libroctx64.so loaded in the process (it has no roctxRegisterTracerCallback): the ranges are left out",
            );
        }
        found
    });
    library.as_ref()
}

fn find() -> Option<Library> {
    let symbol = |name: &CStr| {
        // SAFETY: looking up a NUL-terminated name.
        let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        (!found.is_null()).then_some(found)
    };
    // The library is known by the function only it has.
    symbol(c"roctxRegisterTracerCallback")?;
    let (push, pop) = (symbol(c"roctxRangePushA")?, symbol(c"roctxRangePop")?);
    // SAFETY: the library's functions have these types.
    unsafe {
        Some(Library {
            push: std::mem::transmute::<*mut c_void, Push>(push),
            pop: std::mem::transmute::<*mut c_void, Pop>(pop),
        })
    }
}
