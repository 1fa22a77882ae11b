//! Callback tracing kinds found by name: kinds that newer SDKs added (kernel replay, HIP
//! graphs) have no enum value a tool can rely on, so it looks each up among the kinds the
//! SDK in the process lists, as the SDK names them.

use std::ffi::{CStr, c_char, c_int, c_void};

use rocflow_core::abi::{Status, status};

use crate::api::MissingSymbol;
use crate::guard::entry;

/// `rocprofiler_callback_tracing_kind_cb_t`.
type KindCallback = unsafe extern "C" fn(c_int, *mut c_void) -> c_int;
type IterateKinds = unsafe extern "C" fn(Option<KindCallback>, *mut c_void) -> Status;
type KindName = unsafe extern "C" fn(c_int, *mut *const c_char, *mut u64) -> Status;

/// The value of the callback tracing kind named `name` in this process's SDK, if it has
/// one.
pub fn find(wanted: &str) -> Result<Option<c_int>, MissingSymbol> {
    const ITERATE: &str = "rocprofiler_iterate_callback_tracing_kinds";
    const NAME: &str = "rocprofiler_query_callback_tracing_kind_name";
    let this = libloading::os::unix::Library::this();
    // SAFETY: the symbols have the types the SDK's header declares.
    let (iterate, name) = unsafe {
        (
            *this
                .get::<IterateKinds>(b"rocprofiler_iterate_callback_tracing_kinds\0")
                .map_err(|_| MissingSymbol(ITERATE))?,
            *this
                .get::<KindName>(b"rocprofiler_query_callback_tracing_kind_name\0")
                .map_err(|_| MissingSymbol(NAME))?,
        )
    };
    let mut kinds: Vec<c_int> = Vec::new();
    // SAFETY: `kinds` outlives the call; the callback matches.
    unsafe { iterate(Some(list_kind), (&mut kinds as *mut Vec<c_int>).cast()) };
    Ok(kinds.into_iter().find(|&kind| {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: writable out-parameters; the length is not asked for.
        let status = unsafe { name(kind, &mut text, std::ptr::null_mut()) };
        // SAFETY: the SDK's names are static NUL-terminated strings.
        status == status::SUCCESS
            && !text.is_null()
            && unsafe { CStr::from_ptr(text) }.to_bytes() == wanted.as_bytes()
    }))
}

/// Adds a kind the SDK lists to the `Vec<c_int>` at `data`.
unsafe extern "C" fn list_kind(kind: c_int, data: *mut c_void) -> c_int {
    entry("callback_kind::list_kind", 1, || {
        // SAFETY: `data` is the vector `find` passed.
        unsafe { (*data.cast::<Vec<c_int>>()).push(kind) };
        0
    })
}
