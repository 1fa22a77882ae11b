//! The simulated device's thread trace, shared by the three parties that must agree on
//! it: the simulated SDK, which produces a shader engine's trace for each traced dispatch
//! and the code objects the trace points into; the simulated decoder library, which reads
//! them back as AMD's decoder reads the real ones; and the tests, which compute from the
//! scenario what a decoded trace must hold.
//!
//! The formats are rocflow's own (AMD's SQTT stream is undocumented): a trace is what the
//! decoder needs to give its waves and instructions, and a code object lists each
//! instruction's offset, size and text. Both are read as untrusted bytes.

use crate::scenario::{Agent, Kernel};
pub use crate::scenario::{Instruction, MAX_INSTRUCTIONS};

/// Every simulated instruction is one dword.
pub const INSTRUCTION_BYTES: u64 = 4;

/// A kernel without an `isa` runs this: a load, arithmetic, a store, with the waits a
/// memory-bound kernel stalls in.
const DEFAULT_ISA: &[(&str, u32, u32)] = &[
    ("s_load_dwordx4 s[0:3], s[4:5], 0x0", 4, 0),
    ("s_waitcnt lgkmcnt(0)", 1, 24),
    ("v_lshlrev_b32 v1, 2, v0", 1, 0),
    ("global_load_dword v2, v1, s[0:1]", 8, 0),
    ("s_waitcnt vmcnt(0)", 1, 380),
    ("v_fma_f32 v2, v2, s2, v3", 2, 0),
    ("global_store_dword v1, v2, s[2:3]", 8, 4),
    ("s_endpgm", 1, 0),
];

/// The instructions a kernel's waves run.
pub fn isa(kernel: &Kernel) -> Vec<Instruction> {
    if !kernel.isa.is_empty() {
        return kernel.isa.clone();
    }
    (DEFAULT_ISA.iter())
        .map(|&(text, latency, stall)| Instruction {
            text: text.into(),
            latency,
            stall,
        })
        .collect()
}

/// Where the code of the `k`th kernel of the scenario starts in its agent's code object.
pub fn kernel_offset(k: usize) -> u64 {
    0x1000 + k as u64 * MAX_INSTRUCTIONS as u64 * INSTRUCTION_BYTES
}

/// The waves of a dispatch of `kernel` that the trace of one shader engine holds: those
/// on the target CU, on the SIMDs `simd_select` picks. The dispatch's waves are spread
/// evenly over the agent's CUs, and a CU's waves round-robin over its SIMDs.
pub fn traced_waves(kernel: &Kernel, agent: &Agent, simd_select: u8) -> Vec<TracedWave> {
    let threads: u64 = kernel.grid.iter().map(|&g| u64::from(g.max(1))).product();
    let wave = u64::from(agent.wave_front_size.max(1));
    let waves = threads.div_ceil(wave);
    let simds = agent.simd_per_cu.max(1);
    let slots = u64::from(simds * agent.max_waves_per_simd.max(1));
    let on_cu = waves
        .div_ceil(u64::from(agent.cu_count.max(1)))
        .clamp(1, slots) as u32;
    (0..on_cu)
        .map(|w| TracedWave {
            simd: (w % simds) as u8,
            slot: (w / simds) as u8,
        })
        .filter(|w| simd_select >> w.simd & 1 == 1)
        .collect()
}

/// A traced wave's place on its CU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedWave {
    pub simd: u8,
    pub slot: u8,
}

/// The shader engines a trace covers: those of the mask the agent has.
pub fn traced_shader_engines(agent: &Agent, mask: u64) -> impl Iterator<Item = u32> {
    (0..agent.shader_engines.clamp(1, 64)).filter(move |se| mask >> se & 1 == 1)
}

/// Whether `bytes` begin as the simulated device's traces do.
pub fn is_shader_data(bytes: &[u8]) -> bool {
    bytes.starts_with(TRACE_MAGIC)
}

/// One shader engine's trace of one dispatch.
#[derive(Debug, Clone, PartialEq)]
pub struct ShaderData {
    pub shader_engine: u32,
    pub waves: Vec<Wave>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Wave {
    pub cu: u8,
    pub simd: u8,
    pub slot: u8,
    pub begin: i64,
    pub end: i64,
    pub instructions: Vec<Executed>,
}

/// An instruction a wave ran: where (the code object's load id and the offset in it),
/// when, for how long, and how much of that it stalled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Executed {
    pub code_object: u64,
    pub offset: u64,
    pub time: i64,
    pub duration: i32,
    pub stall: u32,
}

const TRACE_MAGIC: &[u8; 8] = b"RFSQTT\x01\x00";
const WAVE_BYTES: usize = 4 + 4 + 8 + 8;
const EXECUTED_BYTES: usize = 8 + 8 + 8 + 4 + 4;

impl ShaderData {
    /// The trace of the waves a dispatch of `kernel` (the scenario's `k`th, in code object
    /// `code_object`) runs on the target CU of shader engine `se`, starting at cycle 0.
    pub fn simulate(
        kernel: &Kernel,
        k: usize,
        agent: &Agent,
        code_object: u64,
        se: u32,
        target_cu: u8,
        simd_select: u8,
    ) -> ShaderData {
        let isa = isa(kernel);
        let waves = traced_waves(kernel, agent, simd_select)
            .into_iter()
            .enumerate()
            .map(|(w, placed)| {
                let begin = 16 * w as i64;
                let mut time = begin;
                let instructions = (isa.iter().enumerate())
                    .map(|(n, i)| {
                        let duration = (i.stall + i.latency) as i32;
                        let executed = Executed {
                            code_object,
                            offset: kernel_offset(k) + n as u64 * INSTRUCTION_BYTES,
                            time,
                            duration,
                            stall: i.stall,
                        };
                        time += i64::from(duration);
                        executed
                    })
                    .collect();
                Wave {
                    cu: target_cu,
                    simd: placed.simd,
                    slot: placed.slot,
                    begin,
                    end: time,
                    instructions,
                }
            })
            .collect();
        ShaderData {
            shader_engine: se,
            waves,
        }
    }

    /// One shader engine's trace of a device traced over a window: the traces of the
    /// dispatches it ran then, each moved to start `at` cycles into the window.
    pub fn window(
        shader_engine: u32,
        dispatches: impl IntoIterator<Item = (i64, ShaderData)>,
    ) -> ShaderData {
        let waves = (dispatches.into_iter())
            .flat_map(|(at, data)| {
                data.waves.into_iter().map(move |mut w| {
                    w.begin += at;
                    w.end += at;
                    w.instructions.iter_mut().for_each(|i| i.time += at);
                    w
                })
            })
            .collect();
        ShaderData {
            shader_engine,
            waves,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = TRACE_MAGIC.to_vec();
        out.extend(self.shader_engine.to_le_bytes());
        out.extend((self.waves.len() as u32).to_le_bytes());
        for w in &self.waves {
            out.extend([w.cu, w.simd, w.slot, 0]);
            out.extend((w.instructions.len() as u32).to_le_bytes());
            out.extend(w.begin.to_le_bytes());
            out.extend(w.end.to_le_bytes());
            for i in &w.instructions {
                out.extend(i.code_object.to_le_bytes());
                out.extend(i.offset.to_le_bytes());
                out.extend(i.time.to_le_bytes());
                out.extend(i.duration.to_le_bytes());
                out.extend(i.stall.to_le_bytes());
            }
        }
        out
    }

    /// Reads a trace back; `None` when the bytes are not one (counts are checked against
    /// the bytes there before anything is set aside for them).
    pub fn decode(bytes: &[u8]) -> Option<ShaderData> {
        let mut r = Reader(bytes.strip_prefix(TRACE_MAGIC)?);
        let shader_engine = r.u32()?;
        let count = r.u32()? as usize;
        if count > r.0.len() / WAVE_BYTES {
            return None;
        }
        let mut waves = Vec::with_capacity(count);
        for _ in 0..count {
            let [cu, simd, slot, _] = r.take::<4>()?;
            let n = r.u32()? as usize;
            let (begin, end) = (r.i64()?, r.i64()?);
            if n > r.0.len() / EXECUTED_BYTES {
                return None;
            }
            let instructions = (0..n)
                .map(|_| {
                    Some(Executed {
                        code_object: r.u64()?,
                        offset: r.u64()?,
                        time: r.i64()?,
                        duration: i32::from_le_bytes(r.take()?),
                        stall: r.u32()?,
                    })
                })
                .collect::<Option<Vec<_>>>()?;
            waves.push(Wave {
                cu,
                simd,
                slot,
                begin,
                end,
                instructions,
            });
        }
        r.0.is_empty().then_some(ShaderData {
            shader_engine,
            waves,
        })
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.take().map(i64::from_le_bytes)
    }
}

const CODE_OBJECT_MAGIC: &str = "RFSIMCO1\n";

/// The code object of an agent's kernels (`kernels`: the scenario's index of each and
/// the kernel): a line per instruction, its offset, size and text.
pub fn code_object<'a>(kernels: impl Iterator<Item = (usize, &'a Kernel)>) -> Vec<u8> {
    let mut out = String::from(CODE_OBJECT_MAGIC);
    for (k, kernel) in kernels {
        for (n, i) in isa(kernel).iter().enumerate() {
            let offset = kernel_offset(k) + n as u64 * INSTRUCTION_BYTES;
            out.push_str(&format!("{offset:#x} {INSTRUCTION_BYTES} {}\n", i.text));
        }
    }
    out.into_bytes()
}

/// A code object's instructions: offset, size and text of each.
pub type Listing = Vec<(u64, u64, String)>;

/// A code object's instructions; `None` when the bytes are not a simulated code object.
pub fn read_code_object(bytes: &[u8]) -> Option<Listing> {
    let text = std::str::from_utf8(bytes).ok()?;
    let body = text.strip_prefix(CODE_OBJECT_MAGIC)?;
    body.lines()
        .map(|line| {
            let mut parts = line.splitn(3, ' ');
            let offset = u64::from_str_radix(parts.next()?.strip_prefix("0x")?, 16).ok()?;
            let size = parts.next()?.parse().ok()?;
            Some((offset, size, parts.next()?.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(grid: u32) -> Kernel {
        toml::from_str(&format!(
            "name = \"k\"\nduration_ns = 1\ngrid = [{grid}, 1, 1]\nworkgroup = [64, 1, 1]\n"
        ))
        .unwrap()
    }

    fn agent() -> Agent {
        toml::from_str(
            "name = \"gfx942\"\nproduct = \"p\"\ncu_count = 4\nsimd_per_cu = 4\nshader_engines = 2\nmax_waves_per_simd = 8\nlds_kb = 64\nmax_engine_clk_mhz = 2100\n",
        )
        .unwrap()
    }

    #[test]
    fn a_trace_reads_back_as_it_was_written_and_nothing_else_does() {
        let data = ShaderData::simulate(&kernel(64 * 24), 2, &agent(), 1, 1, 3, 0b0101);
        // 24 waves over 4 CUs: 6 on the target CU, on SIMDs 0 1 2 3 0 1; SIMDs 0 and 2.
        assert_eq!(data.waves.len(), 3);
        assert!(
            data.waves
                .iter()
                .all(|w| w.instructions.len() == DEFAULT_ISA.len())
        );
        let bytes = data.encode();
        assert_eq!(ShaderData::decode(&bytes), Some(data));
        assert_eq!(ShaderData::decode(&bytes[..bytes.len() - 1]), None);
        let mut lying = bytes.clone();
        lying[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(ShaderData::decode(&lying), None);
    }

    #[test]
    fn a_code_object_lists_each_instruction_at_its_offset() {
        let k = kernel(64);
        let listed = read_code_object(&code_object([(1, &k)].into_iter())).unwrap();
        assert_eq!(listed.len(), DEFAULT_ISA.len());
        assert_eq!(listed[1].0, kernel_offset(1) + 4);
        assert_eq!(listed[1].2, DEFAULT_ISA[1].0);
        assert_eq!(read_code_object(b"RFSIMCO1\nzz 4 x\n"), None);
    }
}
