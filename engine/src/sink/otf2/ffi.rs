//! The reference OTF2 library, loaded at run time: the functions and constants this sink
//! uses, declared from OTF2 3.0's headers (`/usr/include/otf2/*.h`). Loading it at run time
//! keeps rocflow buildable and usable without it; only a pipeline that asks for OTF2 needs it.

use std::ffi::{c_char, c_void};

use libloading::Library;

use crate::sink::SinkError;

/// Set to a library file to load it instead of searching the system's library path (an
/// OTF2 built into a Spack or Score-P prefix, for example).
pub const LIBRARY_VAR: &str = "ROCFLOW_OTF2_LIBRARY";

/// The names the library is installed under: the development link of Debian's
/// `libotf2-trace-dev` and of upstream builds, then the run-time names.
const SONAMES: &[&str] = &["libotf2.so", "libopen-trace-format2.so.10", "libotf2.so.10"];

/// The Debian package that installs the library, named in the error when it is missing.
pub const PACKAGE: &str = "libotf2-trace-dev";

macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}

opaque!(
    Archive,
    EvtWriter,
    DefWriter,
    GlobalDefWriter,
    AttributeList,
    LockObject
);

/// `OTF2_ErrorCode`, a C enum.
pub type ErrorCode = i32;
pub const SUCCESS: ErrorCode = 0;

// `OTF2_FileMode`, `OTF2_FileSubstrate`, `OTF2_Compression`, `OTF2_FlushType`, `OTF2_FileType`.
pub const FILEMODE_WRITE: u8 = 0;
pub const SUBSTRATE_POSIX: u8 = 1;
pub const COMPRESSION_NONE: u8 = 1;
pub const FLUSH: u8 = 1;
pub const FILETYPE_EVENTS: u8 = 3;
/// `OTF2_CHUNK_SIZE_MIN`.
pub const CHUNK_SIZE_MIN: u64 = 256 * 1024;

/// `OTF2_Type`.
pub const TYPE_UINT64: u8 = 4;
pub const TYPE_STRING: u8 = 11;
pub const TYPE_DOUBLE: u8 = 10;

pub const UNDEFINED_UINT32: u32 = u32::MAX;
pub const UNDEFINED_TIMESTAMP: u64 = u64::MAX;

/// `OTF2_Paradigm`, `OTF2_ParadigmClass`.
pub const PARADIGM_USER: u8 = 1;
pub const PARADIGM_HIP: u8 = 23;
pub const PARADIGM_CLASS_ACCELERATOR: u8 = 3;

/// `OTF2_SystemTreeDomain`.
pub const SYSTEM_TREE_DOMAIN_MACHINE: u8 = 0;
pub const SYSTEM_TREE_DOMAIN_SHARED_MEMORY: u8 = 1;
pub const SYSTEM_TREE_DOMAIN_ACCELERATOR_DEVICE: u8 = 7;

/// `OTF2_LocationGroupType`.
pub const LOCATION_GROUP_TYPE_PROCESS: u8 = 1;
pub const LOCATION_GROUP_TYPE_ACCELERATOR: u8 = 2;

/// `OTF2_LocationType`.
pub const LOCATION_TYPE_CPU_THREAD: u8 = 1;
pub const LOCATION_TYPE_ACCELERATOR_STREAM: u8 = 2;
pub const LOCATION_TYPE_METRIC: u8 = 3;

/// `OTF2_RegionRole`.
pub const REGION_ROLE_FUNCTION: u8 = 1;
pub const REGION_ROLE_DATA_TRANSFER: u8 = 30;
pub const REGION_ROLE_ALLOCATE: u8 = 35;
pub const REGION_ROLE_DEALLOCATE: u8 = 36;
/// `OTF2_RegionFlag`.
pub const REGION_FLAG_NONE: u32 = 0;

/// `OTF2_MetricType`, `OTF2_MetricMode`, `OTF2_Base`, `OTF2_MetricOccurrence`,
/// `OTF2_RecorderKind`.
pub const METRIC_TYPE_OTHER: u8 = 0;
pub const METRIC_ABSOLUTE_POINT: u8 = 1 | (1 << 4);
pub const BASE_DECIMAL: u8 = 1;
pub const METRIC_ASYNCHRONOUS: u8 = 2;
pub const RECORDER_KIND_GPU: u8 = 3;

/// `OTF2_FlushCallbacks`.
#[repr(C)]
pub struct FlushCallbacks {
    pub pre_flush: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            file_type: u8,
            location: u64,
            caller_data: *mut c_void,
            final_: bool,
        ) -> u8,
    >,
    pub post_flush:
        Option<unsafe extern "C" fn(user_data: *mut c_void, file_type: u8, location: u64) -> u64>,
}

/// `OTF2_MemoryCallbacks`.
#[repr(C)]
pub struct MemoryCallbacks {
    pub allocate: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            file_type: u8,
            location: u64,
            per_buffer: *mut *mut c_void,
            chunk_size: u64,
        ) -> *mut c_void,
    >,
    pub free_all: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            file_type: u8,
            location: u64,
            per_buffer: *mut *mut c_void,
            final_: bool,
        ),
    >,
}

/// `OTF2_Lock`.
pub type Lock = *mut LockObject;

/// `OTF2_CallbackCode`, a C enum.
pub type CallbackCode = i32;
pub const CALLBACK_SUCCESS: CallbackCode = 0;
pub const CALLBACK_ERROR: CallbackCode = 1;

/// `OTF2_LockingCallbacks`.
#[repr(C)]
pub struct LockingCallbacks {
    pub release: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
    pub create:
        Option<unsafe extern "C" fn(user_data: *mut c_void, lock: *mut Lock) -> CallbackCode>,
    pub destroy: Option<unsafe extern "C" fn(user_data: *mut c_void, lock: Lock) -> CallbackCode>,
    pub lock: Option<unsafe extern "C" fn(user_data: *mut c_void, lock: Lock) -> CallbackCode>,
    pub unlock: Option<unsafe extern "C" fn(user_data: *mut c_void, lock: Lock) -> CallbackCode>,
}

/// Declares the library's functions as fields of [`Otf2`] and resolves them by name.
macro_rules! functions {
    ($($field:ident = $symbol:literal: fn($($arg:ty),*) -> $ret:ty;)*) => {
        /// The loaded library's functions.
        pub struct Otf2 {
            $(pub $field: unsafe extern "C" fn($($arg),*) -> $ret,)*
            /// Keeps the functions above mapped.
            _library: Library,
        }

        impl Otf2 {
            /// # Safety
            /// `library` must be OTF2 3.x, whose functions have the signatures declared here.
            unsafe fn resolve(library: Library) -> Result<Otf2, libloading::Error> {
                // SAFETY: the caller vouches for the signatures.
                unsafe {
                    Ok(Otf2 {
                        $($field: *library.get(concat!($symbol, "\0").as_bytes())?,)*
                        _library: library,
                    })
                }
            }
        }
    };
}

type W = *mut GlobalDefWriter;

functions! {
    archive_open = "OTF2_Archive_Open":
        fn(*const c_char, *const c_char, u8, u64, u64, u8, u8) -> *mut Archive;
    archive_close = "OTF2_Archive_Close": fn(*mut Archive) -> ErrorCode;
    archive_get_version = "OTF2_Archive_GetVersion":
        fn(*mut Archive, *mut u8, *mut u8, *mut u8) -> ErrorCode;
    archive_set_creator = "OTF2_Archive_SetCreator": fn(*mut Archive, *const c_char) -> ErrorCode;
    archive_set_flush_callbacks = "OTF2_Archive_SetFlushCallbacks":
        fn(*mut Archive, *const FlushCallbacks, *mut c_void) -> ErrorCode;
    archive_set_memory_callbacks = "OTF2_Archive_SetMemoryCallbacks":
        fn(*mut Archive, *const MemoryCallbacks, *mut c_void) -> ErrorCode;
    archive_set_locking_callbacks = "OTF2_Archive_SetLockingCallbacks":
        fn(*mut Archive, *const LockingCallbacks, *mut c_void) -> ErrorCode;
    archive_set_serial_collective_callbacks = "OTF2_Archive_SetSerialCollectiveCallbacks":
        fn(*mut Archive) -> ErrorCode;
    archive_open_evt_files = "OTF2_Archive_OpenEvtFiles": fn(*mut Archive) -> ErrorCode;
    archive_close_evt_files = "OTF2_Archive_CloseEvtFiles": fn(*mut Archive) -> ErrorCode;
    archive_open_def_files = "OTF2_Archive_OpenDefFiles": fn(*mut Archive) -> ErrorCode;
    archive_close_def_files = "OTF2_Archive_CloseDefFiles": fn(*mut Archive) -> ErrorCode;
    archive_get_evt_writer = "OTF2_Archive_GetEvtWriter": fn(*mut Archive, u64) -> *mut EvtWriter;
    archive_close_evt_writer = "OTF2_Archive_CloseEvtWriter":
        fn(*mut Archive, *mut EvtWriter) -> ErrorCode;
    archive_get_def_writer = "OTF2_Archive_GetDefWriter": fn(*mut Archive, u64) -> *mut DefWriter;
    archive_close_def_writer = "OTF2_Archive_CloseDefWriter":
        fn(*mut Archive, *mut DefWriter) -> ErrorCode;
    archive_get_global_def_writer = "OTF2_Archive_GetGlobalDefWriter": fn(*mut Archive) -> W;

    attribute_list_new = "OTF2_AttributeList_New": fn() -> *mut AttributeList;
    attribute_list_delete = "OTF2_AttributeList_Delete": fn(*mut AttributeList) -> ErrorCode;
    attribute_list_add_uint64 = "OTF2_AttributeList_AddUint64":
        fn(*mut AttributeList, u32, u64) -> ErrorCode;
    attribute_list_add_string_ref = "OTF2_AttributeList_AddStringRef":
        fn(*mut AttributeList, u32, u32) -> ErrorCode;

    evt_enter = "OTF2_EvtWriter_Enter": fn(*mut EvtWriter, *mut AttributeList, u64, u32) -> ErrorCode;
    evt_leave = "OTF2_EvtWriter_Leave": fn(*mut EvtWriter, *mut AttributeList, u64, u32) -> ErrorCode;
    // The values are `OTF2_MetricValue`, a union of 64-bit integers and a double.
    evt_metric = "OTF2_EvtWriter_Metric":
        fn(*mut EvtWriter, *mut AttributeList, u64, u32, u8, *const u8, *const f64) -> ErrorCode;

    def_clock_properties = "OTF2_GlobalDefWriter_WriteClockProperties":
        fn(W, u64, u64, u64, u64) -> ErrorCode;
    def_paradigm = "OTF2_GlobalDefWriter_WriteParadigm": fn(W, u8, u32, u8) -> ErrorCode;
    def_string = "OTF2_GlobalDefWriter_WriteString": fn(W, u32, *const c_char) -> ErrorCode;
    def_attribute = "OTF2_GlobalDefWriter_WriteAttribute": fn(W, u32, u32, u32, u8) -> ErrorCode;
    def_system_tree_node = "OTF2_GlobalDefWriter_WriteSystemTreeNode":
        fn(W, u32, u32, u32, u32) -> ErrorCode;
    def_system_tree_node_domain = "OTF2_GlobalDefWriter_WriteSystemTreeNodeDomain":
        fn(W, u32, u8) -> ErrorCode;
    def_location_group = "OTF2_GlobalDefWriter_WriteLocationGroup":
        fn(W, u32, u32, u8, u32, u32) -> ErrorCode;
    def_location = "OTF2_GlobalDefWriter_WriteLocation": fn(W, u64, u32, u8, u64, u32) -> ErrorCode;
    def_region = "OTF2_GlobalDefWriter_WriteRegion":
        fn(W, u32, u32, u32, u32, u8, u8, u32, u32, u32, u32) -> ErrorCode;
    def_metric_member = "OTF2_GlobalDefWriter_WriteMetricMember":
        fn(W, u32, u32, u32, u8, u8, u8, u8, i64, u32) -> ErrorCode;
    def_metric_class = "OTF2_GlobalDefWriter_WriteMetricClass":
        fn(W, u32, u8, *const u32, u8, u8) -> ErrorCode;
    def_metric_class_recorder = "OTF2_GlobalDefWriter_WriteMetricClassRecorder":
        fn(W, u32, u64) -> ErrorCode;

    error_name = "OTF2_Error_GetName": fn(ErrorCode) -> *const c_char;
    error_description = "OTF2_Error_GetDescription": fn(ErrorCode) -> *const c_char;
}

impl Otf2 {
    /// Loads the library from [`LIBRARY_VAR`], or else under the names it is installed as.
    pub fn load() -> Result<Otf2, SinkError> {
        let missing = |message| SinkError::Otf2 {
            context: "opening the OTF2 library".into(),
            message,
        };
        let install = format!("install it with `apt-get install {PACKAGE}` (Debian, Ubuntu)");
        let library = match std::env::var_os(LIBRARY_VAR) {
            // SAFETY: loading runs the library's initializers; OTF2's have no preconditions.
            Some(path) => unsafe { Library::new(&path) }.map_err(|e| {
                missing(format!(
                    "cannot load the OTF2 library {} that {LIBRARY_VAR} names ({e}); unset it \
                     to use the system's, or {install}",
                    path.to_string_lossy()
                ))
            })?,
            None => SONAMES
                .iter()
                // SAFETY: as above.
                .find_map(|name| unsafe { Library::new(name) }.ok())
                .ok_or_else(|| {
                    missing(format!(
                        "the OTF2 library is not installed (looked for {}); {install}, or set \
                         {LIBRARY_VAR} to its path",
                        SONAMES.join(", ")
                    ))
                })?,
        };
        // SAFETY: the names are OTF2's; a library that has them all is OTF2, and the
        // version is checked when an archive is opened.
        unsafe { Otf2::resolve(library) }.map_err(|e| {
            missing(format!(
                "the OTF2 library found lacks a function rocflow uses: {e}"
            ))
        })
    }

    /// `OTF2_Error_GetName` and `OTF2_Error_GetDescription` of `code`.
    pub fn describe(&self, code: ErrorCode) -> String {
        let text = |p: *const c_char| {
            if p.is_null() {
                String::new()
            } else {
                // SAFETY: OTF2 returns static NUL-terminated strings.
                unsafe { std::ffi::CStr::from_ptr(p) }
                    .to_string_lossy()
                    .into_owned()
            }
        };
        // SAFETY: both accept any code.
        let (name, description) = unsafe {
            (
                text((self.error_name)(code)),
                text((self.error_description)(code)),
            )
        };
        format!("{name} ({description})")
    }
}
