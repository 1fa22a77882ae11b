//! Living beside other rocprofiler-sdk clients: what the tool says when the process holds
//! more than one copy of the SDK or of rocprofiler-register (a framework's wheel bundles
//! its own ROCm libraries, a profiler preloads another), and when the SDK refuses one of
//! its contexts because another client's conflicts with it. The tool never touches what
//! another client registered; it names what it cannot have.

use std::collections::BTreeSet;
use std::ffi::{CStr, CString, c_int, c_void};
use std::path::PathBuf;

/// A symbol each copy of a library defines, and what to call that library.
struct Library {
    symbol: &'static CStr,
    name: &'static str,
}

/// The entry point only the SDK itself defines (an interposer such as a call logger
/// wraps the calls a tool makes, not this one).
const SDK: Library = Library {
    symbol: c"rocprofiler_force_configure",
    name: "rocprofiler-sdk",
};
const REGISTER: Library = Library {
    symbol: c"rocprofiler_register_library_api_table",
    name: "rocprofiler-register",
};

/// The files loaded in the process that define `library`'s symbol, each once.
fn copies(library: &Library) -> BTreeSet<PathBuf> {
    let mut copies = BTreeSet::new();
    for object in loaded_objects() {
        // SAFETY: a name the loader gave; NOLOAD only finds what is already loaded.
        let handle = unsafe { libc::dlopen(object.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
        if handle.is_null() {
            continue;
        }
        // SAFETY: a handle just opened, a NUL-terminated name.
        let address = unsafe { libc::dlsym(handle, library.symbol.as_ptr()) };
        if let Some(path) = defined_in(address) {
            copies.insert(path);
        }
        // SAFETY: the reference NOLOAD took.
        unsafe { libc::dlclose(handle) };
    }
    copies
}

/// The file that defines the code at `address` (a lookup from an object also finds its
/// dependencies' symbols: this says whose it is).
fn defined_in(address: *mut c_void) -> Option<PathBuf> {
    if address.is_null() {
        return None;
    }
    // SAFETY: `dladdr` fills the struct; a zeroed one is a valid start.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: a code address and a writable struct.
    if unsafe { libc::dladdr(address, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: the loader's NUL-terminated file name.
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    let path = PathBuf::from(name.as_ref());
    Some(path.canonicalize().unwrap_or(path))
}

/// The names of the shared objects loaded in the process.
fn loaded_objects() -> Vec<CString> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: the loader's entry, and the list passed below.
        let (info, names) = unsafe { (&*info, &mut *data.cast::<Vec<CString>>()) };
        if !info.dlpi_name.is_null() {
            // SAFETY: the loader's NUL-terminated name.
            let name = unsafe { CStr::from_ptr(info.dlpi_name) };
            if !name.is_empty() {
                names.push(name.to_owned());
            }
        }
        0
    }
    let mut names: Vec<CString> = Vec::new();
    // SAFETY: the callback only reads the entries and pushes onto `names`.
    unsafe { libc::dl_iterate_phdr(Some(each), (&raw mut names).cast()) };
    names
}

/// What to tell the user about a library loaded more than once, if it is.
fn twice(library: &Library, why: &str) -> Option<String> {
    let copies = copies(library);
    (copies.len() > 1).then(|| {
        let listed: Vec<String> = copies.iter().map(|p| p.display().to_string()).collect();
        format!(
            "{} is loaded {} times in this process ({}): {why}; load one copy (one ROCm on \
             LD_LIBRARY_PATH, or ROCPROFILER_REGISTER_LIBRARY naming the SDK every tool uses)",
            library.name,
            copies.len(),
            listed.join(", ")
        )
    })
}

/// Says, once the tool is configured, whether the process holds rocprofiler-sdk or
/// rocprofiler-register twice: each copy keeps its own clients and its own runtimes, so
/// a tool of one copy may record nothing (PyTorch's Kineto beside rocprofv3 does).
pub fn check_copies() -> Vec<String> {
    [
        twice(
            &SDK,
            "each copy configures its own tools and sees only the runtimes registered with it, \
             so a tool on the other copy may record nothing",
        ),
        twice(
            &REGISTER,
            "the runtimes register with one copy, and the SDK another copy starts never hears \
             of them, so its tools record nothing",
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Why the tool refuses to be configured a second time: a second copy of the SDK asked.
pub fn configured_again() -> String {
    let copies: Vec<String> = (copies(&SDK).iter())
        .map(|p| p.display().to_string())
        .collect();
    format!(
        "rocflow's tool was configured again, by another copy of rocprofiler-sdk in this \
         process ({}); it stays with the first, and this copy's records never reach rocflow",
        copies.join(", ")
    )
}

/// What a context's start refused with CONTEXT_CONFLICT means: the SDK counts dispatches
/// for one started context at a time, whichever client's it is.
pub fn conflict(context: &str) -> String {
    format!(
        "context `{context}` did not start: another started context counts dispatches, \
         perhaps another rocprofiler-sdk client's in this process (the SDK counts for one \
         context at a time); rocflow leaves it running and collects no counters meanwhile"
    )
}
