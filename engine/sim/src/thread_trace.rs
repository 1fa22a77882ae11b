//! The dispatch thread-trace service (the device one is `device_trace`) and the trace
//! decoder API, with rocprofiler-sdk's
//! rules and statuses: the service takes its parameters only while the tool initializes,
//! asks the tool's dispatch callback about every dispatch on its agent, and hands each
//! traced shader engine's data to the shader-data callback; the decoder API loads AMD's
//! decoder library from a folder and decodes through it, answering its ISA look-ups from
//! the code objects loaded into the decoder.

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_void};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rocflow_core::abi::{
    ErasedShaderDataFn, Handle, ShaderDataCallback, ShaderDataForm, Status, status,
};
use rocflow_core::sim_trace;
use rocflow_core::thread_trace::decoder::{
    self, LibIsaCallback, LibParseFn, LibSeDataCallback, LibStringFn, LibTraceCallback, Pc,
};
use rocflow_core::thread_trace::{
    DispatchCallback, MAX_SIMD_SELECT, MAX_TARGET_CU, MIN_BUFFER_BYTES, Parameter, parameter,
};

use crate::sdk::TraceService;
use crate::sdk::{configure, slice};

/// `ROCPROFILER_STATUS_ERROR_AGENT_ARCH_NOT_SUPPORTED`: the decoder read no trace of an
/// architecture it knows.
const ARCH_NOT_SUPPORTED: Status = 39;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure_dispatch_thread_trace_service(
    context: Handle,
    agent: Handle,
    parameters: *mut Parameter,
    count: usize,
    dispatch: Option<DispatchCallback>,
    shader: Option<ErasedShaderDataFn>,
    data: *mut c_void,
) -> Status {
    // SAFETY: the caller passes `count` parameters.
    let parameters = unsafe { slice(parameters, count) };
    configure(context, |contexts, index, _| {
        if !contexts[index].device_thread_trace.is_empty() {
            return status::CONTEXT_INVALID;
        }
        let Some(dispatch) = dispatch else {
            return status::INVALID_ARGUMENT;
        };
        let p = match TraceParameters::read(parameters, shader) {
            Ok(p) => p,
            Err(status) => return status,
        };
        let services = &mut contexts[index].thread_trace;
        services.retain(|s| s.agent.handle != agent.handle);
        services.push(TraceService {
            agent,
            target_cu: p.target_cu,
            simd_select: p.simd_select,
            shader_engine_mask: p.shader_engine_mask,
            serialize_all: p.serialize_all,
            dispatch,
            shader: p.shader,
            data,
        });
        status::SUCCESS
    })
}

/// The parameters both thread-trace services take, read and checked as the SDK's
/// parameter pack checks them.
pub(crate) struct TraceParameters {
    pub target_cu: u8,
    pub simd_select: u8,
    pub shader_engine_mask: u64,
    pub serialize_all: bool,
    pub shader: ShaderDataCallback,
}

impl TraceParameters {
    /// Reads `parameters`, and `shader` as a callback of the form the simulated SDK's
    /// version calls.
    pub(crate) fn read(
        parameters: &[Parameter],
        shader: Option<ErasedShaderDataFn>,
    ) -> Result<TraceParameters, Status> {
        // The SDK keeps the CU, the SIMDs and the perfcounter period in a byte each.
        let (mut target_cu, mut simd_select) = (1u8, 0xFu8);
        let (mut shader_engine_mask, mut buffer, mut serialize_all) = (1u64, 0x800_0000, false);
        for p in parameters {
            match p.kind {
                parameter::TARGET_CU => target_cu = p.value as u8,
                parameter::SHADER_ENGINE_MASK => shader_engine_mask = p.value,
                parameter::BUFFER_SIZE => buffer = p.value,
                parameter::SIMD_SELECT => simd_select = p.value as u8,
                parameter::SERIALIZE_ALL => serialize_all = p.value != 0,
                // Perfcounters are sampled into the real trace only; an unknown counter
                // is left out, as the SDK leaves it out.
                parameter::PERFCOUNTERS_CTRL | parameter::PERFCOUNTER => {}
                _ => return Err(status::INVALID_ARGUMENT),
            }
        }
        let Some(shader) = shader else {
            return Err(status::INVALID_ARGUMENT);
        };
        if shader_engine_mask == 0
            || buffer < MIN_BUFFER_BYTES
            || target_cu > MAX_TARGET_CU
            || simd_select > MAX_SIMD_SELECT
        {
            return Err(status::INVALID_ARGUMENT);
        }
        Ok(TraceParameters {
            target_cu,
            simd_select,
            shader_engine_mask,
            serialize_all,
            // SAFETY: a tool built for this SDK's version gives its form.
            shader: unsafe {
                ShaderDataCallback::typed(ShaderDataForm::of(crate::sdk::version()), shader)
            },
        })
    }
}

/// A decoder: AMD's library, loaded, and the code objects loaded into it.
struct Decoder {
    parse: LibParseFn,
    info: LibStringFn,
    /// Load id → (offset, size, text) of each instruction.
    code_objects: Mutex<HashMap<u64, sim_trace::Listing>>,
    _library: libloading::Library,
}

fn decoders() -> &'static Mutex<HashMap<u64, Arc<Decoder>>> {
    static DECODERS: OnceLock<Mutex<HashMap<u64, Arc<Decoder>>>> = OnceLock::new();
    DECODERS.get_or_init(Mutex::default)
}

fn decoder(handle: Handle) -> Option<Arc<Decoder>> {
    decoders().lock().unwrap().get(&handle.handle).cloned()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_thread_trace_decoder_create(
    handle: *mut Handle,
    path: *const c_char,
) -> Status {
    if handle.is_null() || path.is_null() {
        return status::INVALID_ARGUMENT;
    }
    // SAFETY: a C string from the caller.
    let folder = unsafe { CStr::from_ptr(path) }
        .to_string_lossy()
        .into_owned();
    let file = Path::new(&folder).join("librocprof-trace-decoder.so");
    // SAFETY: loading the decoder library runs its initializers, as dlopen does for the SDK.
    let Ok(library) = (unsafe { libloading::Library::new(&file) }) else {
        return status::NOT_AVAILABLE;
    };
    // SAFETY: the symbols have the decoder library's C types.
    let symbols = unsafe {
        (
            library.get::<LibParseFn>(decoder::PARSE_DATA).map(|s| *s),
            library.get::<LibStringFn>(decoder::INFO_STRING).map(|s| *s),
            library
                .get::<LibStringFn>(decoder::STATUS_STRING)
                .map(|s| *s),
        )
    };
    let (Ok(parse), Ok(info), Ok(_)) = symbols else {
        return status::INCOMPATIBLE_ABI;
    };
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let decoder = Decoder {
        parse,
        info,
        code_objects: Mutex::default(),
        _library: library,
    };
    decoders().lock().unwrap().insert(id, Arc::new(decoder));
    // SAFETY: checked non-null.
    unsafe { *handle = Handle { handle: id } };
    status::SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_thread_trace_decoder_destroy(handle: Handle) {
    decoders().lock().unwrap().remove(&handle.handle);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_thread_trace_decoder_codeobj_load(
    handle: Handle,
    load_id: u64,
    _load_addr: u64,
    _load_size: u64,
    data: *const c_void,
    size: u64,
) -> Status {
    let Some(decoder) = decoder(handle) else {
        return status::INVALID_ARGUMENT;
    };
    if data.is_null() {
        return status::INVALID_ARGUMENT;
    }
    // SAFETY: the caller passes `size` bytes at `data`.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size as usize) };
    // The real SDK reads an ELF here and fails on anything else; the simulated device's
    // code objects are its own listing.
    let Some(listing) = sim_trace::read_code_object(bytes) else {
        return status::ERROR;
    };
    decoder
        .code_objects
        .lock()
        .unwrap()
        .insert(load_id, listing);
    status::SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_thread_trace_decoder_codeobj_unload(
    handle: Handle,
    load_id: u64,
) -> Status {
    let Some(decoder) = decoder(handle) else {
        return status::INVALID_ARGUMENT;
    };
    match decoder.code_objects.lock().unwrap().remove(&load_id) {
        Some(_) => status::SUCCESS,
        None => status::ERROR,
    }
}

/// What the decoder library's callbacks need during one decode.
struct Decoding<'a> {
    data: Option<&'a mut [u8]>,
    decoder: &'a Decoder,
    callback: decoder::Callback,
    userdata: *mut c_void,
}

unsafe extern "C" fn se_data(buffer: *mut *mut u8, size: *mut u64, userdata: *mut c_void) -> u64 {
    // SAFETY: `userdata` is the `Decoding` of the decode in progress; the pointers are
    // the library's, writable.
    let decoding = unsafe { &mut *userdata.cast::<Decoding>() };
    let Some(data) = decoding.data.take() else {
        return 0;
    };
    // SAFETY: as above.
    unsafe {
        *buffer = data.as_mut_ptr();
        *size = data.len() as u64;
    }
    data.len() as u64
}

unsafe extern "C" fn trace(
    kind: i32,
    events: *mut c_void,
    count: u64,
    userdata: *mut c_void,
) -> i32 {
    // SAFETY: as in `se_data`.
    let decoding = unsafe { &*userdata.cast::<Decoding>() };
    // SAFETY: the user's callback, with the library's events.
    unsafe { (decoding.callback)(kind, events, count, decoding.userdata) };
    decoder::status::SUCCESS
}

unsafe extern "C" fn isa(
    instruction: *mut c_char,
    memory_size: *mut u64,
    size: *mut u64,
    address: Pc,
    userdata: *mut c_void,
) -> i32 {
    // SAFETY: as in `se_data`.
    let decoding = unsafe { &*userdata.cast::<Decoding>() };
    let code_objects = decoding.decoder.code_objects.lock().unwrap();
    let found = (code_objects.get(&(address.marker_id as u64))).and_then(|listing| {
        listing
            .iter()
            .find(|(offset, ..)| *offset == address.addr as u64)
    });
    let Some((_, bytes, text)) = found else {
        return decoder::status::INVALID_ARGUMENT;
    };
    // SAFETY: the library's pointers: `size` holds the room at `instruction`.
    unsafe {
        let room = *size;
        *size = text.len() as u64;
        if text.len() as u64 > room {
            return decoder::status::OUT_OF_RESOURCES;
        }
        std::ptr::copy_nonoverlapping(text.as_ptr().cast(), instruction, text.len());
        *memory_size = *bytes;
    }
    decoder::status::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_trace_decode(
    handle: Handle,
    callback: Option<decoder::Callback>,
    data: *mut c_void,
    size: u64,
    userdata: *mut c_void,
) -> Status {
    let (Some(decoder), Some(callback)) = (decoder(handle), callback) else {
        return status::INVALID_ARGUMENT;
    };
    if data.is_null() {
        return status::INVALID_ARGUMENT;
    }
    let mut decoding = Decoding {
        // SAFETY: the caller passes `size` bytes at `data`.
        data: Some(unsafe { std::slice::from_raw_parts_mut(data.cast::<u8>(), size as usize) }),
        decoder: &decoder,
        callback,
        userdata,
    };
    let se_data: LibSeDataCallback = se_data;
    let trace: LibTraceCallback = trace;
    let isa: LibIsaCallback = isa;
    // SAFETY: the library's entry point, with callbacks of its types and their data.
    let result =
        unsafe { (decoder.parse)(se_data, trace, isa, (&mut decoding as *mut Decoding).cast()) };
    match result {
        decoder::status::SUCCESS => status::SUCCESS,
        decoder::status::INVALID_ARGUMENT => status::INVALID_ARGUMENT,
        decoder::status::INVALID_SHADER_DATA => ARCH_NOT_SUPPORTED,
        _ => status::ERROR,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_thread_trace_decoder_info_string(
    handle: Handle,
    info: i32,
) -> *const c_char {
    match decoder(handle) {
        // SAFETY: the library's function.
        Some(decoder) => unsafe { (decoder.info)(info) },
        None => std::ptr::null(),
    }
}
