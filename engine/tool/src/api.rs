//! The SDK's C API, resolved at run time from the library already loaded in the process
//! (rocprofiler-sdk, or the simulated one): rocflow links against no ROCm library, so it
//! builds and runs its tests anywhere, and says which symbol is missing on an old SDK.

use std::ffi::{CStr, c_char, c_int, c_void};

use rocflow_core::abi::graph_node::RequestCallback;
use rocflow_core::abi::{
    AgentsCallback, BufferArgsCallback, BufferCallback, CountersCallback, DimensionsCallback,
    DispatchCountingCallback, Handle, PcConfigurationsCallback, RecordHeader, Status,
    TracingCallback,
};
use rocflow_core::query::Queries;

/// An SDK entry point the process lacks (an old SDK).
#[derive(Debug, thiserror::Error)]
#[error("the rocprofiler-sdk in this process has no `{0}`")]
pub struct MissingSymbol(pub &'static str);

/// An SDK call that failed: what it did, and the SDK's message for its status.
#[derive(Debug, thiserror::Error)]
#[error("{call}: {message} (status {status})")]
pub struct CallError {
    pub call: String,
    pub message: String,
    pub status: Status,
}

/// How a beta's variable (named first) is set, as the errors of a beta that is off word it.
pub struct BetaSetting<'a>(pub &'static str, pub Option<&'a str>);

impl std::fmt::Display for BetaSetting<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Some(value) if crate::late_start::turned_on(self.0) => write!(
                f,
                "{}={value}, which the session set after rocprofiler-sdk had read the application's environment: set it there, before the SDK starts",
                self.0
            ),
            Some(value) => write!(f, "{}={value}", self.0),
            None => write!(f, "{} unset", self.0),
        }
    }
}

macro_rules! api {
    ($($field:ident = $symbol:literal: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The SDK entry points the tool calls.
        pub struct Api {
            $(pub $field: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl Api {
            /// Looks every entry point up in the process; the error names the first missing.
            pub fn resolve() -> Result<Api, MissingSymbol> {
                let this = libloading::os::unix::Library::this();
                // SAFETY: each symbol is looked up with the type the SDK's headers declare.
                unsafe {
                    Ok(Api {
                        $($field: *this
                            .get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(concat!($symbol, "\0").as_bytes())
                            .map_err(|_| MissingSymbol($symbol))?,)*
                    })
                }
            }
        }
    };
}

api! {
    get_timestamp = "rocprofiler_get_timestamp": fn(*mut u64) -> Status;
    get_status_string = "rocprofiler_get_status_string": fn(Status) -> *const c_char;
    create_context = "rocprofiler_create_context": fn(*mut Handle) -> Status;
    create_buffer = "rocprofiler_create_buffer":
        fn(Handle, usize, usize, c_int, Option<BufferCallback>, *mut c_void, *mut Handle) -> Status;
    configure_buffer_tracing = "rocprofiler_configure_buffer_tracing_service":
        fn(Handle, c_int, *const i32, usize, Handle) -> Status;
    configure_callback_tracing = "rocprofiler_configure_callback_tracing_service":
        fn(Handle, c_int, *const i32, usize, Option<TracingCallback>, *mut c_void) -> Status;
    query_available_agents = "rocprofiler_query_available_agents":
        fn(c_int, Option<AgentsCallback>, usize, *mut c_void) -> Status;
    iterate_record_args = "rocprofiler_iterate_buffer_tracing_record_args":
        fn(RecordHeader, Option<BufferArgsCallback>, *mut c_void) -> Status;
    start_context = "rocprofiler_start_context": fn(Handle) -> Status;
    stop_context = "rocprofiler_stop_context": fn(Handle) -> Status;
    flush_buffer = "rocprofiler_flush_buffer": fn(Handle) -> Status;
    iterate_agent_supported_counters = "rocprofiler_iterate_agent_supported_counters":
        fn(Handle, Option<CountersCallback>, *mut c_void) -> Status;
    query_counter_info = "rocprofiler_query_counter_info": fn(Handle, c_int, *mut c_void) -> Status;
    iterate_counter_dimensions = "rocprofiler_iterate_counter_dimensions":
        fn(Handle, Option<DimensionsCallback>, *mut c_void) -> Status;
    query_record_counter_id = "rocprofiler_query_record_counter_id": fn(u64, *mut Handle) -> Status;
    query_record_dimension_position = "rocprofiler_query_record_dimension_position":
        fn(u64, u64, *mut usize) -> Status;
    create_counter_config = "rocprofiler_create_counter_config":
        fn(Handle, *mut Handle, usize, *mut Handle) -> Status;
    configure_buffer_dispatch_counting = "rocprofiler_configure_buffer_dispatch_counting_service":
        fn(Handle, Handle, Option<DispatchCountingCallback>, *mut c_void) -> Status;
    query_pc_sampling_configurations = "rocprofiler_query_pc_sampling_agent_configurations":
        fn(Handle, Option<PcConfigurationsCallback>, *mut c_void) -> Status;
    configure_pc_sampling = "rocprofiler_configure_pc_sampling_service":
        fn(Handle, Handle, c_int, c_int, u64, Handle, c_int) -> Status;
    configure_external_correlation_request =
        "rocprofiler_configure_external_correlation_id_request_service":
        fn(Handle, *const i32, usize, Option<RequestCallback>, *mut c_void) -> Status;
}

impl Api {
    /// `Ok` on success, else the failure of the call `what`.
    pub fn check(&self, what: &str, status: Status) -> Result<(), CallError> {
        match status {
            0 => Ok(()),
            _ => Err(self.failed(what, status)),
        }
    }

    /// The failure of the call `what` with `status`, worded by the SDK.
    pub fn failed(&self, what: &str, status: Status) -> CallError {
        // SAFETY: the SDK returns a static C string for every status.
        let text = unsafe { (self.get_status_string)(status) };
        let message = if text.is_null() {
            "unknown error".into()
        } else {
            // SAFETY: non-null, NUL-terminated.
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        };
        CallError {
            call: what.into(),
            message,
            status,
        }
    }

    /// The device queries, shared with `rocflow agents`.
    pub fn queries(&self) -> Queries {
        // SAFETY: each was resolved by the SDK's name, with its type.
        unsafe {
            Queries::new(
                self.query_available_agents,
                self.iterate_agent_supported_counters,
                self.query_counter_info,
                self.iterate_counter_dimensions,
                self.query_pc_sampling_configurations,
            )
        }
    }

    pub fn timestamp(&self) -> u64 {
        let mut ts = 0;
        // SAFETY: a writable u64.
        unsafe { (self.get_timestamp)(&mut ts) };
        ts
    }
}
