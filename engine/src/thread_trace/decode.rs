//! Decoding kept traces through rocprofiler-sdk's decoder API, which loads AMD's decoder
//! library from a folder: per dispatch (or device trace window), the process's code objects are loaded into a
//! decoder, then each shader engine's trace is decoded into its waves and their
//! instructions.

use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::path::{Path, PathBuf};

use rocflow_core::abi::{Handle, status};
use rocflow_core::thread_trace::Traced;
use rocflow_core::thread_trace::decoder::{
    self, CodeObjectLoadFn, CreateFn, DecodeFn, DestroyFn, Inst, Wave,
};

use super::keep::{Kept, KeptTrace};

/// A decoded wave, with the instructions it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedWave {
    pub stream: u16,
    pub traced: Traced,
    pub agent: u32,
    pub shader_engine: u32,
    pub cu: u8,
    pub simd: u8,
    pub slot: u8,
    pub begin: i64,
    pub end: i64,
    pub instructions: Vec<DecodedInstruction>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodedInstruction {
    /// The code object's load id (0 where the decoder placed it in none).
    pub code_object: u64,
    /// The offset in the code object, or the raw address.
    pub address: u64,
    pub time: i64,
    pub duration: i32,
    pub stall: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("loading {}: {reason}", .library.display())]
    Sdk { library: PathBuf, reason: String },
    #[error("the SDK found no usable trace decoder in {} (status {status})", .folder.display())]
    Create { folder: PathBuf, status: i32 },
    #[error("loading code object {id} into the decoder failed (status {status})")]
    CodeObject { id: u64, status: i32 },
    #[error("decoding {} failed (status {status})", .path.display())]
    Decode { path: PathBuf, status: i32 },
    #[error("reading {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The SDK's decoder entry points.
struct Api {
    create: CreateFn,
    destroy: DestroyFn,
    load: CodeObjectLoadFn,
    decode: DecodeFn,
    _library: libloading::Library,
}

impl Api {
    fn load(library: &Path) -> Result<Api, DecodeError> {
        let fail = |reason: String| DecodeError::Sdk {
            library: library.to_owned(),
            reason,
        };
        // SAFETY: loading rocprofiler-sdk runs its initializers, which it expects of a
        // process that uses its decoder API.
        let lib = unsafe { libloading::Library::new(library) }.map_err(|e| fail(e.to_string()))?;
        // SAFETY: each symbol is looked up with the type the SDK's header declares.
        unsafe {
            let get = |name: &[u8]| {
                lib.get::<*const c_void>(name)
                    .map(|s| *s)
                    .map_err(|e| fail(e.to_string()))
            };
            let create = get(b"rocprofiler_thread_trace_decoder_create\0")?;
            let destroy = get(b"rocprofiler_thread_trace_decoder_destroy\0")?;
            let load = get(b"rocprofiler_thread_trace_decoder_codeobj_load\0")?;
            let decode = get(b"rocprofiler_trace_decode\0")?;
            Ok(Api {
                create: std::mem::transmute::<*const c_void, CreateFn>(create),
                destroy: std::mem::transmute::<*const c_void, DestroyFn>(destroy),
                load: std::mem::transmute::<*const c_void, CodeObjectLoadFn>(load),
                decode: std::mem::transmute::<*const c_void, DecodeFn>(decode),
                _library: lib,
            })
        }
    }
}

/// Decodes every kept trace with the SDK at `library` and AMD's decoder in `folder`.
pub fn decode(kept: &Kept, library: &Path, folder: &Path) -> Result<Vec<DecodedWave>, DecodeError> {
    let api = Api::load(library)?;
    let mut by_dispatch: HashMap<(u16, Traced), Vec<&KeptTrace>> = HashMap::new();
    for trace in &kept.traces {
        by_dispatch
            .entry((trace.stream, trace.traced))
            .or_default()
            .push(trace);
    }
    let mut dispatches: Vec<_> = by_dispatch.into_iter().collect();
    dispatches.sort_by_key(|(key, _)| *key);
    let folder_c =
        CString::new(folder.as_os_str().as_encoded_bytes()).map_err(|_| DecodeError::Create {
            folder: folder.to_owned(),
            status: status::INVALID_ARGUMENT,
        })?;
    let mut waves = Vec::new();
    for ((stream, _), traces) in dispatches {
        let mut handle = Handle { handle: 0 };
        // SAFETY: a writable handle and a C string.
        let created = unsafe { (api.create)(&mut handle, folder_c.as_ptr()) };
        if created != status::SUCCESS {
            return Err(DecodeError::Create {
                folder: folder.to_owned(),
                status: created,
            });
        }
        let decoded = decode_dispatch(&api, handle, kept, stream, &traces, &mut waves);
        // SAFETY: the handle the SDK gave.
        unsafe { (api.destroy)(handle) };
        decoded?;
    }
    Ok(waves)
}

fn decode_dispatch(
    api: &Api,
    handle: Handle,
    kept: &Kept,
    stream: u16,
    traces: &[&KeptTrace],
    waves: &mut Vec<DecodedWave>,
) -> Result<(), DecodeError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| DecodeError::Read {
            path: path.to_owned(),
            source,
        })
    };
    for code in kept.code_objects.iter().filter(|c| c.stream == stream) {
        let bytes = read(&code.path)?;
        // SAFETY: the bytes outlive the call.
        let loaded = unsafe {
            (api.load)(
                handle,
                code.id,
                code.load_base,
                code.load_size,
                bytes.as_ptr().cast(),
                bytes.len() as u64,
            )
        };
        if loaded != status::SUCCESS {
            return Err(DecodeError::CodeObject {
                id: code.id,
                status: loaded,
            });
        }
    }
    for trace in traces {
        let mut bytes = read(&trace.path)?;
        let mut found: Vec<DecodedWave> = Vec::new();
        let mut sink = Collect {
            trace,
            waves: &mut found,
        };
        // SAFETY: the bytes and the collector outlive the call; the callback has the
        // SDK's type.
        let result = unsafe {
            (api.decode)(
                handle,
                Some(collect),
                bytes.as_mut_ptr().cast(),
                bytes.len() as u64,
                (&mut sink as *mut Collect).cast(),
            )
        };
        if result != status::SUCCESS {
            return Err(DecodeError::Decode {
                path: trace.path.clone(),
                status: result,
            });
        }
        waves.extend(found);
    }
    Ok(())
}

/// What the decoder's callback fills: the waves of one trace.
struct Collect<'a> {
    trace: &'a KeptTrace,
    waves: &'a mut Vec<DecodedWave>,
}

/// `rocprofiler_thread_trace_decoder_callback_t`: copies the waves out (the decoder's
/// memory lives for the call only).
unsafe extern "C" fn collect(kind: i32, events: *mut c_void, count: u64, userdata: *mut c_void) {
    if kind != decoder::record::WAVE || events.is_null() {
        return;
    }
    // SAFETY: the `Collect` given to the decode; `count` waves at `events`.
    let (sink, waves) = unsafe {
        (
            &mut *userdata.cast::<Collect>(),
            std::slice::from_raw_parts(events.cast::<Wave>(), count as usize),
        )
    };
    for wave in waves {
        let instructions: &[Inst] = match wave.instructions.is_null() {
            true => &[],
            // SAFETY: the decoder's array of `instructions_size` instructions.
            false => unsafe {
                std::slice::from_raw_parts(wave.instructions, wave.instructions_size)
            },
        };
        sink.waves.push(DecodedWave {
            stream: sink.trace.stream,
            traced: sink.trace.traced,
            agent: sink.trace.agent,
            shader_engine: sink.trace.shader_engine,
            cu: wave.cu,
            simd: wave.simd,
            slot: wave.wave_id,
            begin: wave.begin_time,
            end: wave.end_time,
            instructions: instructions
                .iter()
                .map(|i| DecodedInstruction {
                    code_object: i.pc.marker_id as u64,
                    address: i.pc.addr as u64,
                    time: i.time,
                    duration: i.duration,
                    stall: i.stall(),
                })
                .collect(),
        });
    }
}
