//! The plugin ABI, version 1, in Rust: what `plugins/include/rocflow_plugin.h` declares for
//! C and C++ plugins, item for item (the header's comments say what each call must do).
//! rocflow reads plugins through these types; Rust plugins need not touch them, see
//! [`export_plugin!`](crate::export_plugin).
//!
//! Every function pointer is an `Option`: a plugin written in C may leave one NULL, and
//! rocflow checks them all when it loads the plugin.

use std::ffi::{CStr, c_char, c_void};

pub use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};

/// `ROCFLOW_PLUGIN_ABI_VERSION`: the version a plugin's descriptor must carry.
pub const ABI_VERSION: u32 = 1;

/// `ROCFLOW_PLUGIN_ENTRY`: the function every plugin exports, an [`Entry`].
pub const ENTRY: &CStr = c"rocflow_plugin_v1";

/// `ROCFLOW_ROW_COLUMN`: the row numbers of a transform's input batch; in its output, the
/// input rows it kept.
pub const ROW_COLUMN: &str = "rocflow.row";

/// `ROCFLOW_HOSTNAME_KEY`: the schema metadata key of the records' host name.
pub const HOSTNAME_KEY: &str = "rocflow.hostname";

/// `RocflowStatus`: [`OK`], or a failure whose message `last_error` gives.
pub type Status = i32;
pub const OK: Status = 0;
pub const ERROR: Status = 1;
/// A Rust plugin panicked; the panic was caught at the boundary.
pub const PANIC: Status = 2;

/// `rocflow_plugin_v1`: returns the plugin's descriptor.
pub type Entry = unsafe extern "C" fn() -> *const Plugin;

/// `create(options_json, &instance)`.
pub type CreateFn =
    unsafe extern "C" fn(options: *const c_char, instance: *mut *mut c_void) -> Status;
/// A transform's `process(instance, input, out_schema, out_array)`.
pub type ProcessFn = unsafe extern "C" fn(
    instance: *mut c_void,
    input: *mut Batch,
    out_schema: *mut FFI_ArrowSchema,
    out_array: *mut FFI_ArrowArray,
) -> Status;
/// A sink's `open(instance, path)`.
pub type OpenFn = unsafe extern "C" fn(instance: *mut c_void, path: *const c_char) -> Status;
/// A sink's `write(instance, batch)`.
pub type WriteFn = unsafe extern "C" fn(instance: *mut c_void, batch: *mut Batch) -> Status;
/// A sink's `finish(instance, &written)`.
pub type FinishFn = unsafe extern "C" fn(instance: *mut c_void, written: *mut Paths) -> Status;
/// `destroy(instance)`.
pub type DestroyFn = unsafe extern "C" fn(instance: *mut c_void);
/// `last_error()`.
pub type LastErrorFn = unsafe extern "C" fn() -> *const c_char;

/// `RocflowPlugin`: what a plugin is and what it provides.
#[repr(C)]
#[derive(Debug)]
pub struct Plugin {
    pub abi_version: u32,
    pub name: *const c_char,
    pub version: *const c_char,
    pub description: *const c_char,
    /// Null for a plugin that is not a transform.
    pub transform: *const Transform,
    /// Null for a plugin that is not a sink.
    pub sink: *const Sink,
    pub last_error: Option<LastErrorFn>,
}

// SAFETY: a descriptor is immutable data that lives as long as its library (the header
// requires it); its pointers lead to more of the same, so any thread may read it.
unsafe impl Sync for Plugin {}

/// `RocflowTransform`.
#[repr(C)]
#[derive(Debug)]
pub struct Transform {
    pub create: Option<CreateFn>,
    pub process: Option<ProcessFn>,
    pub destroy: Option<DestroyFn>,
}

/// `RocflowSink`.
#[repr(C)]
#[derive(Debug)]
pub struct Sink {
    pub create: Option<CreateFn>,
    pub open: Option<OpenFn>,
    pub write: Option<WriteFn>,
    pub finish: Option<FinishFn>,
    pub destroy: Option<DestroyFn>,
}

/// `RocflowBatch`: records of one kind, named by their table. Dropping it releases the
/// arrays it still holds.
#[repr(C)]
#[derive(Debug)]
pub struct Batch {
    pub table: *const c_char,
    pub schema: FFI_ArrowSchema,
    pub array: FFI_ArrowArray,
}

/// `RocflowPaths`: the paths a sink wrote, owned by the sink's instance.
#[repr(C)]
#[derive(Debug)]
pub struct Paths {
    pub paths: *const *const c_char,
    pub count: usize,
}

impl Default for Paths {
    fn default() -> Self {
        Paths {
            paths: std::ptr::null(),
            count: 0,
        }
    }
}
