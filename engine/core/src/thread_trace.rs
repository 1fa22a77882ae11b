//! Thread trace (ATT/SQTT): rocprofiler-sdk's dispatch and device thread-trace services,
//! as a context plans them and as the SDK takes their parameters. The tool turns a
//! [`ThreadTracePlan`] into the parameter array of
//! `rocprofiler_configure_dispatch_thread_trace_service` or
//! `rocprofiler_configure_device_thread_trace_service`; the simulated SDK reads that array
//! back by the same values.

use std::ffi::{c_char, c_void};
use std::path::{Path, PathBuf};

use crate::abi::{AsyncCorrelationId, ErasedShaderDataFn, Handle, Status, UserData};
pub use crate::contexts::{ThreadTracePlan, TraceMode, TracePerfcounter};

/// `rocprofiler_thread_trace_dispatch_callback_t`: whether to trace a dispatch (a
/// [`control`] value), and what the shader-data callback gets for it in `userdata_shader`.
pub type DispatchCallback = unsafe extern "C" fn(
    agent: Handle,
    queue: Handle,
    correlation: AsyncCorrelationId,
    kernel_id: u64,
    dispatch_id: u64,
    userdata_config: *mut c_void,
    userdata_shader: *mut UserData,
) -> i32;

/// `rocprofiler_configure_dispatch_thread_trace_service`.
pub type ConfigureDispatchFn = unsafe extern "C" fn(
    context: Handle,
    agent: Handle,
    parameters: *mut Parameter,
    count: usize,
    dispatch: Option<DispatchCallback>,
    shader: Option<ErasedShaderDataFn>,
    data: *mut c_void,
) -> Status;

/// `rocprofiler_configure_device_thread_trace_service`: the whole agent is traced while
/// the context runs; each stop hands the traced shader engines' data to `shader`, with
/// `data` as its user data.
pub type ConfigureDeviceFn = unsafe extern "C" fn(
    context: Handle,
    agent: Handle,
    parameters: *mut Parameter,
    count: usize,
    shader: Option<ErasedShaderDataFn>,
    data: UserData,
) -> Status;

/// rocprofiler-sdk's decoder API (`experimental/thread-trace/trace_decoder.h`) and the
/// C API of AMD's decoder library it loads (`librocprof-trace-decoder.so`).
pub mod decoder {
    use super::*;

    /// `rocprofiler_thread_trace_decoder_record_type_t`.
    pub mod record {
        pub const GFXIP: i32 = 0;
        pub const OCCUPANCY: i32 = 1;
        pub const PERFEVENT: i32 = 2;
        pub const WAVE: i32 = 3;
        pub const INFO: i32 = 4;
        pub const DEBUG: i32 = 5;
    }

    /// `rocprofiler_thread_trace_decoder_status_t`, the decoder library's statuses.
    pub mod status {
        pub const SUCCESS: i32 = 0;
        pub const ERROR: i32 = 1;
        pub const OUT_OF_RESOURCES: i32 = 2;
        pub const INVALID_ARGUMENT: i32 = 3;
        pub const INVALID_SHADER_DATA: i32 = 4;
    }

    /// `rocprofiler_thread_trace_decoder_pc_t`: an address in a code object (its load id
    /// in `marker_id`), or a raw address where `marker_id` is 0.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct Pc {
        pub addr: usize,
        pub marker_id: usize,
    }

    /// `rocprofiler_thread_trace_decoder_occupancy_t`: a wave started or ended.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub struct Occupancy {
        pub pc: Pc,
        pub time: u64,
        pub reserved: u8,
        pub cu: u8,
        pub simd: u8,
        pub slot: u8,
        /// Bit 0: a start (1) or an end (0).
        pub start: u32,
    }

    /// `rocprofiler_thread_trace_decoder_wave_state_t`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub struct WaveState {
        pub kind: i32,
        pub duration: i32,
    }

    /// `rocprofiler_thread_trace_decoder_inst_t`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub struct Inst {
        /// Bits 0-7: the category; bits 8-31: the stall in cycles.
        pub category_stall: u32,
        pub duration: i32,
        pub time: i64,
        pub pc: Pc,
    }

    impl Inst {
        pub fn stall(&self) -> u32 {
            self.category_stall >> 8
        }
    }

    /// `rocprofiler_thread_trace_decoder_wave_t`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct Wave {
        pub cu: u8,
        pub simd: u8,
        pub wave_id: u8,
        pub contexts: u8,
        pub reserved: [u32; 3],
        pub begin_time: i64,
        pub end_time: i64,
        pub timeline_size: usize,
        pub instructions_size: usize,
        pub timeline: *mut WaveState,
        pub instructions: *mut Inst,
    }

    /// `rocprofiler_thread_trace_decoder_id_t`.
    pub type Id = Handle;

    /// `rocprofiler_thread_trace_decoder_callback_t`.
    pub type Callback =
        unsafe extern "C" fn(kind: i32, events: *mut c_void, count: u64, userdata: *mut c_void);

    pub type CreateFn = unsafe extern "C" fn(handle: *mut Id, path: *const c_char) -> Status;
    pub type DestroyFn = unsafe extern "C" fn(handle: Id);
    pub type CodeObjectLoadFn = unsafe extern "C" fn(
        handle: Id,
        load_id: u64,
        load_addr: u64,
        load_size: u64,
        data: *const c_void,
        size: u64,
    ) -> Status;
    pub type DecodeFn = unsafe extern "C" fn(
        handle: Id,
        callback: Option<Callback>,
        data: *mut c_void,
        size: u64,
        userdata: *mut c_void,
    ) -> Status;

    /// The decoder library's callbacks and entry point.
    pub type LibTraceCallback = unsafe extern "C" fn(
        kind: i32,
        events: *mut c_void,
        count: u64,
        userdata: *mut c_void,
    ) -> i32;
    pub type LibIsaCallback = unsafe extern "C" fn(
        instruction: *mut c_char,
        memory_size: *mut u64,
        size: *mut u64,
        address: Pc,
        userdata: *mut c_void,
    ) -> i32;
    pub type LibSeDataCallback =
        unsafe extern "C" fn(buffer: *mut *mut u8, size: *mut u64, userdata: *mut c_void) -> u64;
    pub type LibParseFn = unsafe extern "C" fn(
        se_data: LibSeDataCallback,
        trace: LibTraceCallback,
        isa: LibIsaCallback,
        userdata: *mut c_void,
    ) -> i32;
    pub type LibStringFn = unsafe extern "C" fn(value: i32) -> *const c_char;

    /// The decoder library's exported symbols.
    pub const PARSE_DATA: &[u8] = b"rocprof_trace_decoder_parse_data\0";
    pub const INFO_STRING: &[u8] = b"rocprof_trace_decoder_get_info_string\0";
    pub const STATUS_STRING: &[u8] = b"rocprof_trace_decoder_get_status_string\0";
}

/// `rocprofiler_thread_trace_parameter_type_t`.
pub mod parameter {
    pub const TARGET_CU: i32 = 0;
    pub const SHADER_ENGINE_MASK: i32 = 1;
    pub const BUFFER_SIZE: i32 = 2;
    pub const SIMD_SELECT: i32 = 3;
    pub const PERFCOUNTERS_CTRL: i32 = 4;
    pub const PERFCOUNTER: i32 = 5;
    pub const SERIALIZE_ALL: i32 = 6;
    pub const LAST: i32 = 7;
}

/// `rocprofiler_thread_trace_control_flags_t`: what the dispatch callback answers.
pub mod control {
    pub const NONE: i32 = 0;
    pub const START_AND_STOP: i32 = 3;
}

/// The SDK's defaults and limits for the service's parameters (its parameter pack): one
/// target CU of 16, the SIMDs as a 4-bit mask, a buffer of at least 1 MiB.
pub const DEFAULT_TARGET_CU: u8 = 1;
pub const DEFAULT_SIMD_SELECT: u8 = 0xF;
pub const DEFAULT_SHADER_ENGINE_MASK: u64 = 0x1;
/// rocprofv3's default buffer (256 MiB); the SDK's own is 128 MiB.
pub const DEFAULT_BUFFER_BYTES: u64 = 256 << 20;
pub const MIN_BUFFER_BYTES: u64 = 1 << 20;
pub const MAX_TARGET_CU: u8 = 0xF;
pub const MAX_SIMD_SELECT: u8 = 0xF;
/// Perfcounter sampling periods the SDK takes (0 turns them off).
pub const PERFCOUNTER_PERIODS: std::ops::RangeInclusive<u8> = 1..=32;

/// `rocprofiler_thread_trace_parameter_t`: a type, then a 64-bit value or, for a
/// perfcounter, the counter's id and a 4-bit SIMD mask in the next word.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parameter {
    pub kind: i32,
    pub value: u64,
    /// The SIMD mask of a perfcounter (the union's second word, low 4 bits).
    pub simd_mask: u64,
}

impl Parameter {
    pub fn value(kind: i32, value: u64) -> Parameter {
        Parameter {
            kind,
            value,
            simd_mask: 0,
        }
    }
}

impl ThreadTracePlan {
    /// The SDK's parameters for an agent, whose perfcounters' ids are `counter_ids` (in
    /// the plan's order).
    pub fn parameters(&self, counter_ids: &[(u64, u8)]) -> Vec<Parameter> {
        let mut out = vec![
            Parameter::value(parameter::TARGET_CU, self.target_cu.into()),
            Parameter::value(parameter::SIMD_SELECT, self.simd_select.into()),
            Parameter::value(parameter::BUFFER_SIZE, self.buffer_bytes),
            Parameter::value(parameter::SHADER_ENGINE_MASK, self.shader_engine_mask),
            Parameter::value(parameter::SERIALIZE_ALL, self.serialize_all.into()),
        ];
        if self.perfcounter_period != 0 {
            out.push(Parameter::value(
                parameter::PERFCOUNTERS_CTRL,
                self.perfcounter_period.into(),
            ));
            out.extend(counter_ids.iter().map(|&(id, mask)| Parameter {
                kind: parameter::PERFCOUNTER,
                value: id,
                simd_mask: mask.into(),
            }));
        }
        out
    }
}

/// What the tool sends of a thread trace, in a frame of its own: a piece of one shader
/// engine's raw trace of one dispatch, or of a code object the trace's addresses point
/// into. Pieces of one trace or code object come in order, each at the offset the ones
/// before it end at, so that no piece is larger than a frame.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceData {
    pub what: TracePart,
    /// Where the piece starts in its trace or code object.
    pub offset: u64,
    pub bytes: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TracePart {
    ShaderData {
        /// rocflow's agent index.
        agent: u32,
        shader_engine: u32,
        traced: Traced,
    },
    /// The code object of a load (its id as the SDK's code-object tracing gives it).
    CodeObject {
        id: u64,
        agent: u32,
        load_base: u64,
        load_size: u64,
    },
}

/// What a shader engine's trace covers: one dispatch (the dispatch service), or all the
/// agent ran while its context was started (the device service), numbered by the
/// context's starts that the agent's shader engine delivered a trace of, from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Traced {
    Dispatch(u64),
    Device { window: u64 },
}

impl Traced {
    pub fn dispatch_id(self) -> Option<u64> {
        match self {
            Traced::Dispatch(id) => Some(id),
            Traced::Device { .. } => None,
        }
    }

    pub fn window(self) -> Option<u64> {
        match self {
            Traced::Dispatch(_) => None,
            Traced::Device { window } => Some(window),
        }
    }
}

/// No trace or code object the runner keeps is larger: a bound on what a stream's
/// offsets may make it write.
pub const MAX_TRACE_BYTES: u64 = 4 << 30;
/// The tool sends a trace in pieces of at most this much.
pub const PIECE_BYTES: usize = 16 << 20;
const TRACE_HEADER: usize = 48;

/// Why bytes are not a thread-trace piece.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceDataError {
    #[error("a thread-trace piece of {0} bytes is shorter than its header")]
    Short(usize),
    #[error("unknown thread-trace part {0}")]
    Part(u8),
    #[error("a thread-trace piece ends at byte {0}, beyond the {MAX_TRACE_BYTES} a trace may hold")]
    TooLarge(u64),
}

impl TraceData {
    pub fn encode(&self, out: &mut Vec<u8>) {
        let (part, agent, id, se, base, size) = match self.what {
            TracePart::ShaderData {
                agent,
                shader_engine,
                traced: Traced::Dispatch(dispatch_id),
            } => (0u8, agent, dispatch_id, shader_engine, 0, 0),
            TracePart::ShaderData {
                agent,
                shader_engine,
                traced: Traced::Device { window },
            } => (2, agent, window, shader_engine, 0, 0),
            TracePart::CodeObject {
                id,
                agent,
                load_base,
                load_size,
            } => (1, agent, id, 0, load_base, load_size),
        };
        out.extend([part, 0, 0, 0]);
        out.extend(agent.to_le_bytes());
        out.extend(id.to_le_bytes());
        out.extend(se.to_le_bytes());
        out.extend([0; 4]);
        out.extend(self.offset.to_le_bytes());
        out.extend(base.to_le_bytes());
        out.extend(size.to_le_bytes());
        out.extend_from_slice(&self.bytes);
    }

    pub fn decode(payload: &[u8]) -> Result<TraceData, TraceDataError> {
        let Some((header, bytes)) = payload.split_first_chunk::<TRACE_HEADER>() else {
            return Err(TraceDataError::Short(payload.len()));
        };
        let u32_at = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
        let (agent, id, offset) = (u32_at(4), u64_at(8), u64_at(24));
        let what = match header[0] {
            0 => TracePart::ShaderData {
                agent,
                shader_engine: u32_at(16),
                traced: Traced::Dispatch(id),
            },
            2 => TracePart::ShaderData {
                agent,
                shader_engine: u32_at(16),
                traced: Traced::Device { window: id },
            },
            1 => TracePart::CodeObject {
                id,
                agent,
                load_base: u64_at(32),
                load_size: u64_at(40),
            },
            other => return Err(TraceDataError::Part(other)),
        };
        let end = offset.saturating_add(bytes.len() as u64);
        if end > MAX_TRACE_BYTES {
            return Err(TraceDataError::TooLarge(end));
        }
        Ok(TraceData {
            what,
            offset,
            bytes: bytes.to_vec(),
        })
    }
}

// Where AMD's trace decoder library is found, as rocprofv3 finds it: the folders a
// pipeline names (rocprofv3's `--att-library-path`), else the folder
// `ROCPROF_ATT_LIBRARY_PATH` names, else the folders of `LD_LIBRARY_PATH` and ROCm's
// `lib`.

/// AMD's decoder library, which rocprofiler-sdk's decoder API loads from a folder.
pub const DECODER_LIBRARY: &str = "librocprof-trace-decoder.so";
/// The variable rocprofv3 reads the decoder's folder from.
pub const PATH_VARIABLE: &str = "ROCPROF_ATT_LIBRARY_PATH";

/// The folders searched for the decoder, in order.
fn search_folders(paths: &[String], env: &impl Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    if !paths.is_empty() {
        return paths.iter().map(PathBuf::from).collect();
    }
    if let Some(folder) = env(PATH_VARIABLE).filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(folder)];
    }
    let mut folders: Vec<PathBuf> = (env("LD_LIBRARY_PATH").unwrap_or_default().split(':'))
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    let rocm = env("ROCM_PATH").filter(|p| !p.is_empty());
    folders.push(Path::new(rocm.as_deref().unwrap_or("/opt/rocm")).join("lib"));
    folders.dedup();
    folders
}

/// The folder holding the decoder library, if one of the searched folders does.
pub fn find_decoder(paths: &[String], env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    (search_folders(paths, &env).into_iter()).find(|folder| folder.join(DECODER_LIBRARY).is_file())
}

/// Where the decoder is looked for, in words (for `rocflow explain` and the note a run
/// gives when it is missing).
pub fn decoder_search(paths: &[String]) -> String {
    match paths {
        [] => {
            format!("{DECODER_LIBRARY} from ${PATH_VARIABLE}, else LD_LIBRARY_PATH and ROCm's lib")
        }
        _ => format!("{DECODER_LIBRARY} from {}", paths.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The union's layout from `experimental/thread-trace/core.h`: a 4-byte enum padded
    /// to 8, then 16 bytes (a counter id, then the bit-field word).
    #[test]
    fn parameter_layout() {
        assert_eq!(std::mem::size_of::<Parameter>(), 24);
        assert_eq!(std::mem::align_of::<Parameter>(), 8);
        assert_eq!(std::mem::offset_of!(Parameter, value), 8);
        assert_eq!(std::mem::offset_of!(Parameter, simd_mask), 16);
    }

    /// The decoder's structs, laid out as `trace_decoder_types.h` declares them.
    #[test]
    fn decoder_layouts() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<decoder::Pc>(), 16);
        assert_eq!(size_of::<decoder::Occupancy>(), 32);
        assert_eq!(offset_of!(decoder::Occupancy, time), 16);
        assert_eq!(offset_of!(decoder::Occupancy, cu), 25);
        assert_eq!(offset_of!(decoder::Occupancy, start), 28);
        assert_eq!(size_of::<decoder::Inst>(), 32);
        assert_eq!(offset_of!(decoder::Inst, time), 8);
        assert_eq!(offset_of!(decoder::Inst, pc), 16);
        assert_eq!(size_of::<decoder::Wave>(), 64);
        assert_eq!(offset_of!(decoder::Wave, begin_time), 16);
        assert_eq!(offset_of!(decoder::Wave, timeline_size), 32);
        assert_eq!(offset_of!(decoder::Wave, instructions), 56);
    }

    #[test]
    fn a_piece_reads_back_and_a_lying_one_is_refused() {
        let piece = TraceData {
            what: TracePart::CodeObject {
                id: 3,
                agent: 1,
                load_base: 0x7000,
                load_size: 64,
            },
            offset: 16,
            bytes: vec![1, 2, 3],
        };
        let mut bytes = Vec::new();
        piece.encode(&mut bytes);
        assert_eq!(TraceData::decode(&bytes), Ok(piece));
        for traced in [Traced::Dispatch(7), Traced::Device { window: 7 }] {
            let trace = TraceData {
                what: TracePart::ShaderData {
                    agent: 1,
                    shader_engine: 2,
                    traced,
                },
                offset: 0,
                bytes: vec![4],
            };
            let mut encoded = Vec::new();
            trace.encode(&mut encoded);
            assert_eq!(TraceData::decode(&encoded), Ok(trace));
        }
        bytes[24..32].copy_from_slice(&MAX_TRACE_BYTES.to_le_bytes());
        assert_eq!(
            TraceData::decode(&bytes),
            Err(TraceDataError::TooLarge(MAX_TRACE_BYTES + 3))
        );
        assert_eq!(
            TraceData::decode(&bytes[..40]),
            Err(TraceDataError::Short(40))
        );
        bytes[0] = 9;
        assert_eq!(TraceData::decode(&bytes), Err(TraceDataError::Part(9)));
    }

    #[test]
    fn the_pipeline_s_folders_come_first_then_the_variable_then_the_library_path() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                (vars.iter())
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let all = env(&[
            (PATH_VARIABLE, "/att"),
            ("LD_LIBRARY_PATH", "/a::/b"),
            ("ROCM_PATH", "/rocm"),
        ]);
        assert_eq!(search_folders(&["/x".into()], &all), [PathBuf::from("/x")]);
        assert_eq!(search_folders(&[], &all), [PathBuf::from("/att")]);
        let no_variable = env(&[("LD_LIBRARY_PATH", "/a::/b"), ("ROCM_PATH", "/rocm")]);
        assert_eq!(
            search_folders(&[], &no_variable),
            ["/a", "/b", "/rocm/lib"].map(PathBuf::from)
        );
        assert_eq!(
            search_folders(&[], &env(&[])),
            [PathBuf::from("/opt/rocm/lib")]
        );
    }

    #[test]
    fn the_decoder_is_found_in_the_folder_that_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let (empty, holding) = (dir.path().join("empty"), dir.path().join("holding"));
        std::fs::create_dir_all(&empty).unwrap();
        std::fs::create_dir_all(&holding).unwrap();
        std::fs::write(holding.join(DECODER_LIBRARY), b"").unwrap();
        let paths = [empty, holding.clone()].map(|p| p.display().to_string());
        assert_eq!(find_decoder(&paths, |_| None), Some(holding));
        assert_eq!(find_decoder(&paths[..1], |_| None), None);
    }
}
