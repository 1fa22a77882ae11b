//! A generator of realistic runs, for benchmarks, tests and trying pipelines without a GPU:
//! HIP API calls correlated with the kernel dispatches and copies they cause, real mangled
//! kernel names with a skewed (Zipf) popularity, MI300X-like agents (8 XCCs), several
//! queues and threads, counters with real dimension shapes, PC samples and ROCTx ranges.
//!
//! The output is a stream of wire frames, as the tool library sends them.

use std::io;
use std::path::Path;

use crate::record::hip_stream::NULL_STREAM;
use crate::record::{
    Agent, ApiCall, Batch, CounterInfo, CounterSample, KernelDispatch, KernelSymbol, Marker,
    MemoryCopy, Meta, PcSample, Process, Queue, RecordKind, Sym, Thread,
};
use crate::sdk::{AgentType, Domain};
use crate::spool::SpoolWriter;
use crate::wire;

pub mod job;

/// What to generate.
#[derive(Debug, Clone)]
pub struct Options {
    /// Records to generate (at least; the last launch completes its records).
    pub records: u64,
    /// Processes, one stream each.
    pub processes: u16,
    pub seed: u64,
    /// The plan to store in the run, so a replay without a pipeline can reuse it.
    pub plan: Option<String>,
}

/// Records per frame, about what one rocprofiler-sdk buffer flush delivers.
const BATCH: usize = 4096;

/// HIP kernels as compilers name them: mangled C++ (templates included) and Tensile GEMMs.
pub const KERNEL_NAMES: &[&str] = &[
    "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB1_GRVW8_K1",
    "_Z10vector_addPKfS0_Pfi",
    "_Z13matmul_kernelILi16EEvPKfS1_Pfiii",
    "_Z15softmax_forwardIfLi256EEvPT_PKS0_ii",
    "_Z20layernorm_fwd_kernelI6__halfLi1024EEvPT_PKS1_S4_S4_fi",
    "_Z21flash_attention_fwd_kILi128ELi64EEvPK6__halfS2_S2_PS0_ifii",
    "Cijk_Alik_Bljk_SB_MT64x64x16_MI16x16x4x1_SN_GRVW4_K1",
    "_Z12reduce_sum_kILj256EEvPKfPfj",
    "_Z16elementwise_reluIfEvPT_PKS0_m",
    "_Z18transpose_shared_kIdLi32EEvPT_PKS0_ii",
    "_Z11copy_kernelPvPKvm",
    "_Z18gelu_backward_kernPfPKfS1_i",
    "_Z17rms_norm_kernel_tIfEvPT_PKS0_S3_fii",
    "_Z14embedding_fwdkPfPKlPKfii",
    "_Z24rotary_embedding_kernel_IfEvPT_PKS0_S3_iii",
    "_Z13adam_step_kerPfS_S_PKffffffi",
    "Cijk_Ailk_Bjlk_BBS_BH_MT256x128x64_MI32x32x8x1_SN_1LDSB0_GRVW8_K1",
    "_Z22fused_bias_dropout_addIfEvPT_PKS0_S3_S3_fmi",
    "_Z16histogram_kernelPKjPjii",
    "_Z15stencil_3d_kernPKdPdiii",
];

/// A small, fast, deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Counters with their dimensions on an 8-XCC, 4-SE-per-XCC agent.
const COUNTERS: &[(&str, &[(&str, u32)])] = &[
    (
        "SQ_WAVES",
        &[("DIMENSION_XCC", 8), ("DIMENSION_SHADER_ENGINE", 4)],
    ),
    (
        "SQ_INSTS_VALU",
        &[("DIMENSION_XCC", 8), ("DIMENSION_SHADER_ENGINE", 4)],
    ),
    ("GRBM_GUI_ACTIVE", &[("DIMENSION_XCC", 8)]),
];

/// Per-process state while generating.
struct Generating {
    stream: u16,
    pid: u32,
    clock: u64,
    correlation: u64,
    dispatch: u64,
    buffers: Vec<Batch>,
    strings: u32,
}

/// Writes a generated run into a new spool at `path`; returns the records generated per
/// kind.
pub fn to_spool(options: &Options, path: &Path) -> io::Result<Vec<(RecordKind, u64)>> {
    let mut writer = SpoolWriter::create(path)?;
    let counts = generate(options, |bytes| writer.write(bytes))?;
    writer.finish()?;
    Ok(counts)
}

/// Writes a generated run as frames to `out`; returns the records generated per kind.
pub fn generate(
    options: &Options,
    mut out: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<Vec<(RecordKind, u64)>> {
    let mut rng = Rng(options.seed.max(1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let zipf = zipf_table(KERNEL_NAMES.len(), 1.1);
    let mut frames = Vec::with_capacity(1 << 20);
    let mut processes: Vec<Generating> = (0..options.processes.max(1))
        .map(|stream| Generating {
            stream,
            pid: 4000 + u32::from(stream),
            clock: 1_700_000_000_000_000_000 + u64::from(stream) * 1_000,
            correlation: 0,
            dispatch: 0,
            buffers: Vec::new(),
            strings: 0,
        })
        .collect();
    for p in &processes {
        let mut meta = vec![Meta::Process(Process {
            command: vec!["./app".into(), "--steps".into(), "100".into()],
            rank: Some(u32::from(p.stream)),
            // The generated clock reads as a Unix time (November 2023).
            start_unix_ns: Some(p.clock),
            ..process(p.pid, p.clock)
        })];
        if p.stream == 0
            && let Some(plan) = &options.plan
        {
            meta.push(Meta::Plan { json: plan.clone() });
        }
        meta.extend(agents(2));
        meta.extend((0..4).map(|t| {
            Meta::Thread(Thread {
                pid: p.pid,
                tid: p.pid + t,
                name: None,
            })
        }));
        meta.extend((0..4).map(|q| {
            Meta::Queue(Queue {
                id: u64::from(q),
                agent: 1 + q / 2,
                pid: p.pid,
            })
        }));
        meta.extend(KERNEL_NAMES.iter().enumerate().map(|(i, name)| {
            Meta::KernelSymbol(KernelSymbol {
                kernel_id: i as u64 + 1,
                code_object_id: 1,
                name: (*name).to_owned(),
                lds_bytes: [0, 4096, 16384, 65536][i % 4],
                scratch_bytes: if i % 7 == 0 { 1024 } else { 0 },
                arch_vgpr_count: 32 + 8 * (i as u32 % 12),
                sgpr_count: 16 + 8 * (i as u32 % 8),
                kernarg_bytes: 64,
            })
        }));
        meta.extend(COUNTERS.iter().enumerate().map(|(i, (name, dims))| {
            Meta::Counter(CounterInfo {
                id: i as u32,
                agent: 1,
                name: (*name).to_owned(),
                description: String::new(),
                dimensions: dims.iter().map(|(d, n)| ((*d).to_owned(), *n)).collect(),
            })
        }));
        wire::encode_meta(p.stream, &meta, &mut frames);
    }
    out(&frames)?;
    frames.clear();

    let hip_launch = operation(Domain::HipRuntimeApi, "hipLaunchKernel");
    let hip_memcpy = operation(Domain::HipRuntimeApi, "hipMemcpyAsync");
    let range_push = operation(Domain::MarkerCoreApi, "roctxRangePushA");
    let mut counts = vec![0u64; RecordKind::ALL.len()];
    let mut total = 0u64;
    let mut launch = 0u64;
    while total < options.records {
        let count = processes.len() as u64;
        let p = &mut processes[(launch % count) as usize];
        launch += 1;
        let tid = p.pid + (rng.below(4) as u32);
        p.correlation += 1;
        let correlation = p.correlation;
        let start = p.clock + rng.below(2_000);
        let call_end = start + 3_000 + rng.below(4_000);
        let mut emitted: Vec<Batch> = Vec::with_capacity(4);
        emitted.push(Batch::Api(vec![ApiCall {
            pid: p.pid,
            tid,
            start_ns: start,
            end_ns: call_end,
            correlation_id: correlation,
            external_id: 0,
            domain_id: Domain::HipRuntimeApi.sdk_value() as u8,
            operation_id: hip_launch,
        }]));
        let kernel = 1 + zipf.partition_point(|&c| c < rng.below(u64::from(u32::MAX))) as u64;
        let kernel = kernel.min(KERNEL_NAMES.len() as u64);
        let kernel_start = call_end + 5_000 + rng.below(20_000);
        let duration = 2_000 + rng.below(200_000) * kernel % 500_000;
        p.dispatch += 1;
        let grid = 256 << rng.below(8);
        emitted.push(Batch::KernelDispatch(vec![KernelDispatch {
            pid: p.pid,
            tid,
            agent: 1 + (rng.below(2) as u32),
            queue: rng.below(4),
            dispatch_id: p.dispatch,
            kernel_id: kernel,
            start_ns: kernel_start,
            end_ns: kernel_start + duration,
            correlation_id: correlation,
            external_id: 0,
            grid_x: grid,
            grid_y: 1,
            grid_z: 1,
            workgroup_x: 256,
            workgroup_y: 1,
            workgroup_z: 1,
            lds_bytes: [0, 4096, 16384, 65536][kernel as usize % 4],
            scratch_bytes: 0,
            vgpr_count: 32 + 8 * (kernel as u32 % 12),
            sgpr_count: 16 + 8 * (kernel as u32 % 8),
            graph_exec_id: 0,
            graph_node_id: 0,
            hip_stream: NULL_STREAM,
        }]));
        if launch % 8 == 0 {
            p.correlation += 1;
            let bytes = 4096u64 << rng.below(16);
            let copy_start = call_end + 1_000;
            emitted.push(Batch::Api(vec![ApiCall {
                pid: p.pid,
                tid,
                start_ns: call_end + 500,
                end_ns: call_end + 4_000,
                correlation_id: p.correlation,
                external_id: 0,
                domain_id: Domain::HipRuntimeApi.sdk_value() as u8,
                operation_id: hip_memcpy,
            }]));
            emitted.push(Batch::MemoryCopy(vec![MemoryCopy {
                pid: p.pid,
                tid,
                src_agent: 0,
                dst_agent: 1,
                start_ns: copy_start,
                end_ns: copy_start + bytes / 50 + 1_000,
                correlation_id: p.correlation,
                external_id: 0,
                bytes,
                operation_id: 2,
                graph_exec_id: 0,
                graph_node_id: 0,
                dst_address: 0,
                src_address: 0,
                hip_stream: NULL_STREAM,
            }]));
        }
        if launch % 64 == 0 {
            let message = Sym(p.strings);
            p.strings += 1;
            wire::encode_meta(
                p.stream,
                &[Meta::Strings {
                    first: message.0,
                    values: vec![format!("step {}", launch / 64)],
                }],
                &mut frames,
            );
            emitted.push(Batch::Marker(vec![Marker {
                pid: p.pid,
                tid,
                start_ns: start,
                end_ns: kernel_start + duration,
                correlation_id: 0,
                external_id: 0,
                domain_id: Domain::MarkerCoreApi.sdk_value() as u8,
                operation_id: range_push,
                message,
            }]));
        }
        if launch % 16 == 0 {
            emitted.push(Batch::CounterSample(counter_samples(
                p.pid,
                p.dispatch,
                kernel,
                kernel_start + duration,
                &mut rng,
            )));
        }
        if launch % 32 == 0 {
            let samples = (0..4)
                .map(|i| PcSample {
                    pid: p.pid,
                    agent: 1,
                    timestamp_ns: kernel_start + duration * i / 4,
                    dispatch_id: p.dispatch,
                    correlation_id: correlation,
                    pc: 0x7f00_0000_0000 + kernel * 0x1000 + rng.below(0x800) * 4,
                    code_object_id: 1,
                    code_object_offset: kernel * 0x1000 + rng.below(0x800) * 4,
                    exec_mask: u64::MAX,
                    wave_id: rng.below(32) as u32,
                    hw_id: rng.below(1 << 20) as u32,
                    chiplet: rng.below(8) as u8,
                    method: 2,
                    instruction_type: 0,
                    stall_reason: 0,
                })
                .collect();
            emitted.push(Batch::PcSample(samples));
        }
        p.clock = call_end;
        for batch in emitted {
            counts[batch.kind() as usize] += batch.len() as u64;
            total += batch.len() as u64;
            append(p, batch, &mut frames);
        }
        if frames.len() >= 1 << 20 {
            out(&frames)?;
            frames.clear();
        }
    }
    for p in &mut processes {
        for batch in std::mem::take(&mut p.buffers) {
            if !batch.is_empty() {
                wire::encode_records(p.stream, &batch, &mut frames);
            }
        }
    }
    out(&frames)?;
    Ok(RecordKind::ALL
        .iter()
        .map(|&k| (k, counts[k as usize]))
        .filter(|(_, n)| *n > 0)
        .collect())
}

/// Adds records to the process's buffer of their kind, sending a frame when it is full.
fn append(p: &mut Generating, batch: Batch, frames: &mut Vec<u8>) {
    let kind = batch.kind();
    let index = match p.buffers.iter().position(|b| b.kind() == kind) {
        Some(i) => i,
        None => {
            p.buffers.push(Batch::with_capacity(kind, BATCH));
            p.buffers.len() - 1
        }
    };
    let buffer = &mut p.buffers[index];
    extend(buffer, batch);
    if buffer.len() >= BATCH {
        wire::encode_records(p.stream, buffer, frames);
        *buffer = Batch::with_capacity(kind, BATCH);
    }
}

fn extend(buffer: &mut Batch, batch: Batch) {
    match (buffer, batch) {
        (Batch::Api(a), Batch::Api(b)) => a.extend(b),
        (Batch::KernelDispatch(a), Batch::KernelDispatch(b)) => a.extend(b),
        (Batch::MemoryCopy(a), Batch::MemoryCopy(b)) => a.extend(b),
        (Batch::Marker(a), Batch::Marker(b)) => a.extend(b),
        (Batch::CounterSample(a), Batch::CounterSample(b)) => a.extend(b),
        (Batch::PcSample(a), Batch::PcSample(b)) => a.extend(b),
        (a, b) => unreachable!(
            "the generator makes no {:?} records ({:?})",
            b.kind(),
            a.kind()
        ),
    }
}

/// Every counter of one dispatch at every coordinate of its dimensions.
fn counter_samples(
    pid: u32,
    dispatch: u64,
    kernel: u64,
    at: u64,
    rng: &mut Rng,
) -> Vec<CounterSample> {
    let mut samples = Vec::new();
    for (id, (_, dims)) in COUNTERS.iter().enumerate() {
        let engines = dims
            .iter()
            .find(|(d, _)| *d == "DIMENSION_SHADER_ENGINE")
            .map_or(1, |(_, n)| *n);
        for xcc in 0..8u16 {
            for se in 0..engines as u16 {
                samples.push(CounterSample {
                    pid,
                    agent: 1,
                    dispatch_id: dispatch,
                    kernel_id: kernel,
                    timestamp_ns: at,
                    counter_id: id as u32,
                    xcc,
                    shader_engine: se,
                    value: (rng.below(10_000) + 100) as f64,
                    ..Default::default()
                });
            }
        }
    }
    samples
}

/// Process `pid` of `./app` on `gen-node`, started at `start_ns`, as the generated runs'
/// processes and the records written by hand in the tests are.
pub fn process(pid: u32, start_ns: u64) -> Process {
    Process {
        pid,
        ppid: 1,
        hostname: "gen-node".into(),
        command: vec!["./app".into()],
        start_ns,
        rank: None,
        world_size: None,
        rank_variable: None,
        start_unix_ns: None,
        kernel_start: None,
    }
}

/// An MI300X-like GPU (gfx942, 8 XCCs of 38 CUs) as agent `index`, with the handle and
/// node id the generated runs give it.
pub fn mi300x(index: u32) -> Agent {
    Agent {
        index,
        handle: 0x1000 + u64::from(index),
        agent_type: AgentType::Gpu,
        node_id: index,
        logical_node_id: index,
        name: "gfx942".into(),
        product_name: "AMD Instinct MI300X".into(),
        cu_count: 304,
        simd_count: 1216,
        xcc_count: 8,
        wave_front_size: 64,
        max_waves_per_simd: 8,
        lds_bytes_per_cu: 65536,
        max_engine_clk_mhz: 2100,
    }
}

/// A CPU and `gpus` MI300X-like GPUs.
fn agents(gpus: u32) -> Vec<Meta> {
    let gpu = mi300x;
    let cpu = Agent {
        agent_type: AgentType::Cpu,
        name: "AMD EPYC 9454".into(),
        product_name: "AMD EPYC 9454 48-Core Processor".into(),
        cu_count: 96,
        simd_count: 0,
        xcc_count: 0,
        wave_front_size: 0,
        max_waves_per_simd: 0,
        lds_bytes_per_cu: 0,
        max_engine_clk_mhz: 3800,
        ..gpu(0)
    };
    std::iter::once(cpu)
        .chain((1..=gpus).map(gpu))
        .map(Meta::Agent)
        .collect()
}

fn operation(domain: Domain, name: &str) -> i32 {
    domain
        .operations()
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(id, _)| *id)
        .expect("the SDK defines the operation")
}

/// Cumulative Zipf weights scaled to `u32::MAX`, for sampling ranks by binary search.
fn zipf_table(n: usize, exponent: f64) -> Vec<u64> {
    let weights: Vec<f64> = (1..=n)
        .map(|rank| 1.0 / (rank as f64).powf(exponent))
        .collect();
    let total: f64 = weights.iter().sum();
    let mut sum = 0.0;
    weights
        .iter()
        .map(|w| {
            sum += w;
            (sum / total * f64::from(u32::MAX)) as u64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mangled_names_demangle() {
        for name in KERNEL_NAMES.iter().filter(|n| n.starts_with("_Z")) {
            let demangled = crate::kernel_names::demangle(name);
            assert_ne!(&demangled, name, "{name} does not demangle");
        }
    }
}
