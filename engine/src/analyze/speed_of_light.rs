//! `speed-of-light`: each kernel's derived metrics (VALU and MFMA FLOP/s, HBM, LDS, vL1D
//! and L2 bandwidth, IPC, occupancy) against the theoretical peak of the GPU it ran on, as
//! ROCm Compute Profiler's speed-of-light panel presents them, and a warning for a kernel
//! that takes much of its GPU yet comes near none of its peaks.
//!
//! Each metric is per dispatch: what a dispatch counted (summed over the counter's
//! instances) over its mean time. Each peak comes from the agent record's properties, the
//! rule's settings and, on CDNA3, the widths of [`cdna3`]; where one it needs is missing
//! the metric has no peak, never a guess:
//!
//! | metric | from counters | peak | peak's inputs |
//! |---|---|---|---|
//! | VALU FLOP/s | `SQ_INSTS_VALU_{ADD,MUL,TRANS}_F{16,32,64}` × wave size, `…_FMA_…` × 2 × wave size | CUs × SIMDs per CU × 16 lanes × 2 (FMA) × max engine clock | `cu_count`, `simd_count`, `max_engine_clk_mhz`; 16 lanes a SIMD on CDNA (`gfx9…`) only |
//! | MFMA FLOP/s | `SQ_INSTS_VALU_MFMA_MOPS_{F16,BF16,F32,F64}` × 512 | no peak: the record has no matrix rate per type | |
//! | HBM bytes/s | `TCC_EA0_RDREQ` (64 B, of which `…_32B` 32 B), `TCC_EA0_WRREQ` (32 B, of which `…_64B` 64 B) | the `hbm_peak_gbps` setting: the record has no memory clock or bus width | |
//! | LDS bytes/s | (`SQ_LDS_IDX_ACTIVE` − `SQ_LDS_BANK_CONFLICT`) × 128 B (32 banks × 4 B), CDNA3 only | CUs × 128 B × max engine clock | `cu_count`, `max_engine_clk_mhz` |
//! | vL1D bytes/s | `TCP_TOTAL_CACHE_ACCESSES_sum` × 128 B, CDNA3 only | CUs × 128 B × max engine clock | `cu_count`, `max_engine_clk_mhz` |
//! | L2 bytes/s | `TCC_REQ_sum` × 128 B, CDNA3 only | L2 channels × 128 B × max engine clock | the `l2_channels` setting (the record has no channel count), `max_engine_clk_mhz` |
//! | IPC | `SQ_INSTS` / `SQ_BUSY_CU_CYCLES` | 5 instructions a cycle, CDNA3 only | |
//! | occupancy | `OccupancyPercent` | 100% | |
//!
//! [`cdna3`]: super::cdna3

use super::cdna3;
use super::finding::{Evidence, Finding, Severity};
use super::kernel_counters::{MIN_TIME_SHARE, who};
use super::rule::{Rule, Setting, Values};
use super::trace::{KernelCounter, Trace};
use crate::record::Agent;

pub struct SpeedOfLight;

const SETTINGS: &[Setting] = &[
    Setting {
        name: "warning_percent",
        default: 30.0,
        about: "percent of peak that a kernel taking its share of the GPU must reach in at \
                least one metric with a peak, else the finding is a warning",
    },
    Setting {
        name: "hbm_peak_gbps",
        default: 0.0,
        about: "the GPU's peak HBM bandwidth in GB/s (10^9 bytes a second), which the agent \
                record does not carry; 0: HBM bandwidth has no peak",
    },
    Setting {
        name: "l2_channels",
        default: 0.0,
        about: "the GPU's L2 channels over all its XCDs (an MI300X: 16 an XCD, 128), which \
                the agent record does not carry; 0: L2 bandwidth has no peak",
    },
    MIN_TIME_SHARE,
];

/// The VALU's floating-point instruction counters, with the FLOPs a lane does in each.
const VALU_FLOPS: &[(&str, f64)] = &[
    ("SQ_INSTS_VALU_ADD_F16", 1.0),
    ("SQ_INSTS_VALU_MUL_F16", 1.0),
    ("SQ_INSTS_VALU_TRANS_F16", 1.0),
    ("SQ_INSTS_VALU_FMA_F16", 2.0),
    ("SQ_INSTS_VALU_ADD_F32", 1.0),
    ("SQ_INSTS_VALU_MUL_F32", 1.0),
    ("SQ_INSTS_VALU_TRANS_F32", 1.0),
    ("SQ_INSTS_VALU_FMA_F32", 2.0),
    ("SQ_INSTS_VALU_ADD_F64", 1.0),
    ("SQ_INSTS_VALU_MUL_F64", 1.0),
    ("SQ_INSTS_VALU_TRANS_F64", 1.0),
    ("SQ_INSTS_VALU_FMA_F64", 2.0),
];

/// The matrix cores' operation counters: each counts 512 FLOPs.
const MFMA_OPS: &[&str] = &[
    "SQ_INSTS_VALU_MFMA_MOPS_F16",
    "SQ_INSTS_VALU_MFMA_MOPS_BF16",
    "SQ_INSTS_VALU_MFMA_MOPS_F32",
    "SQ_INSTS_VALU_MFMA_MOPS_F64",
];
const FLOPS_PER_MFMA_OP: f64 = 512.0;

/// The metrics, in the order a kernel's evidence and the speed-of-light table give them.
pub const METRICS: [&str; 8] = [
    "VALU FLOP/s",
    "MFMA FLOP/s",
    "HBM bandwidth",
    "LDS bandwidth",
    "vL1D bandwidth",
    "L2 bandwidth",
    "IPC",
    "occupancy",
];

/// Lanes of a SIMD on CDNA (`gfx9…`), which runs a wave64 instruction over 4 cycles.
const CDNA_SIMD_LANES: f64 = 16.0;

/// A kernel's metrics per dispatch, as far as its counters and its GPU tell.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Metrics {
    pub valu_flops: Option<f64>,
    pub mfma_flops: Option<f64>,
    pub hbm_bytes: Option<f64>,
    /// Bytes the LDS, the vL1D caches and the L2 served: on CDNA3 only, whose access
    /// widths [`cdna3`] knows.
    pub lds_bytes: Option<f64>,
    pub l1_bytes: Option<f64>,
    pub l2_bytes: Option<f64>,
    /// Instructions issued per busy CU cycle.
    pub ipc: Option<f64>,
    pub occupancy_percent: Option<f64>,
    /// A dispatch's mean time.
    pub dispatch_ns: f64,
}

impl Metrics {
    /// The metrics of kernel `c` (any of its counters) from its counters.
    pub fn of(trace: &Trace, c: &KernelCounter) -> Option<Metrics> {
        let (own_ns, _) = trace.kernel_time(c.pid, c.agent, c.kernel);
        let dispatches = trace.dispatch_count(c.pid, c.agent, c.kernel);
        if own_ns == 0 || dispatches == 0 {
            return None;
        }
        let agent = trace.agents.get(&(c.pid, c.agent));
        let value = |name: &str| trace.counter_of(c, name);
        let wave = agent.map(|a| f64::from(a.wave_front_size));
        let valu_flops = wave.and_then(|wave| {
            sum_present(
                VALU_FLOPS
                    .iter()
                    .map(|&(n, per_lane)| Some(value(n)? * per_lane)),
            )
            .map(|lane_flops| lane_flops * wave)
        });
        let mfma_flops =
            sum_present(MFMA_OPS.iter().map(|n| value(n))).map(|ops| ops * FLOPS_PER_MFMA_OP);
        let is_cdna3 = agent.is_some_and(cdna3::is_cdna3);
        let on_cdna3 = |bytes: Option<f64>| bytes.filter(|_| is_cdna3);
        let lds_cycles = || Some(value("SQ_LDS_IDX_ACTIVE")? - value("SQ_LDS_BANK_CONFLICT")?);
        let ipc = || Some(value("SQ_INSTS")? / value("SQ_BUSY_CU_CYCLES").filter(|&c| c > 0.0)?);
        Some(Metrics {
            valu_flops,
            mfma_flops,
            hbm_bytes: hbm_bytes(&value),
            // Bank conflicts stall cycles in which the LDS is active but serves nothing.
            lds_bytes: on_cdna3(lds_cycles().map(|c| c.max(0.0) * cdna3::LDS_BYTES_PER_CYCLE)),
            l1_bytes: on_cdna3(
                value("TCP_TOTAL_CACHE_ACCESSES_sum").map(|n| n * cdna3::L1_BYTES_PER_ACCESS),
            ),
            l2_bytes: on_cdna3(value("TCC_REQ_sum").map(|n| n * cdna3::L2_BYTES_PER_REQUEST)),
            ipc: ipc(),
            occupancy_percent: value("OccupancyPercent"),
            dispatch_ns: own_ns as f64 / dispatches as f64,
        })
    }

    /// FLOPs a dispatch did, VALU and MFMA together, where either was counted.
    pub fn flops(&self) -> Option<f64> {
        sum_present([self.valu_flops, self.mfma_flops].into_iter())
    }

    /// Whether the dispatch's work or traffic was counted: occupancy or IPC alone is no
    /// speed of light.
    fn has_work(&self) -> bool {
        [
            self.flops(),
            self.hbm_bytes,
            self.lds_bytes,
            self.l1_bytes,
            self.l2_bytes,
        ]
        .iter()
        .any(Option::is_some)
    }

    fn per_second(&self, amount: f64) -> f64 {
        amount * 1e9 / self.dispatch_ns
    }
}

/// The bytes between L2 and HBM: 64-byte reads but the 32-byte ones, 32-byte writes but
/// the 64-byte ones; none unless all four counters were collected.
fn hbm_bytes(value: &impl Fn(&str) -> Option<f64>) -> Option<f64> {
    let (rd, rd32) = (value("TCC_EA0_RDREQ")?, value("TCC_EA0_RDREQ_32B")?);
    let (wr, wr64) = (value("TCC_EA0_WRREQ")?, value("TCC_EA0_WRREQ_64B")?);
    Some(64.0 * (rd - rd32) + 32.0 * rd32 + 32.0 * (wr - wr64) + 64.0 * wr64)
}

/// The sum of the values present, if any is.
fn sum_present(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values.flatten().reduce(|a, b| a + b)
}

/// The peak VALU FLOP/s of `agent`: CUs × SIMDs per CU × lanes × 2 (an FMA) × clock;
/// none where the record lacks one of them or the lanes of its SIMDs are not known.
pub fn valu_peak_flops(agent: &Agent) -> Option<f64> {
    let simds_per_cu = agent.simd_count.checked_div(agent.cu_count)?;
    let cdna = agent.name.starts_with("gfx9");
    (cdna && agent.cu_count > 0 && agent.max_engine_clk_mhz > 0).then(|| {
        f64::from(agent.cu_count)
            * f64::from(simds_per_cu)
            * CDNA_SIMD_LANES
            * 2.0
            * f64::from(agent.max_engine_clk_mhz)
            * 1e6
    })
}

/// The peak bytes a second of `agent`'s LDS or its vL1D caches, which each CU serves
/// `bytes_per_cycle` of: CUs × bytes × clock; none but on CDNA3 or without every input.
fn per_cu_peak(agent: &Agent, bytes_per_cycle: f64) -> Option<f64> {
    clock_hz(agent)
        .filter(|_| agent.cu_count > 0)
        .map(|hz| f64::from(agent.cu_count) * bytes_per_cycle * hz)
}

/// The max engine clock of a CDNA3 `agent` in Hz, where its record gives one.
fn clock_hz(agent: &Agent) -> Option<f64> {
    (cdna3::is_cdna3(agent) && agent.max_engine_clk_mhz > 0)
        .then(|| f64::from(agent.max_engine_clk_mhz) * 1e6)
}

/// What the rule is told of the GPU beyond its agent record.
#[derive(Debug, Clone, Copy)]
pub struct Given {
    /// Peak HBM bandwidth, GB/s; 0: not given.
    pub hbm_peak_gbps: f64,
    /// L2 channels over all XCDs; 0: not given.
    pub l2_channels: f64,
}

/// One metric's evidence: its value and its share of `peak`.
fn metric(
    kernel: &str,
    metric: &'static str,
    value: f64,
    unit: &'static str,
    peak: Option<f64>,
) -> Evidence {
    let peak = peak.filter(|&p| p > 0.0);
    Evidence::Metric {
        kernel: kernel.to_owned(),
        metric,
        value,
        unit,
        peak,
        percent_of_peak: peak.map(|p| 100.0 * value / p),
    }
}

/// A kernel's speed-of-light evidence: each metric it has, with its peak.
pub fn evidence(trace: &Trace, c: &KernelCounter, m: &Metrics, given: Given) -> Vec<Evidence> {
    let kernel = trace.name(c.kernel);
    let agent = trace.agents.get(&(c.pid, c.agent));
    let mut out = Vec::new();
    if let Some(flops) = m.valu_flops {
        let peak = agent.and_then(valu_peak_flops);
        out.push(metric(
            kernel,
            "VALU FLOP/s",
            m.per_second(flops),
            "FLOP/s",
            peak,
        ));
    }
    if let Some(flops) = m.mfma_flops {
        out.push(metric(
            kernel,
            "MFMA FLOP/s",
            m.per_second(flops),
            "FLOP/s",
            None,
        ));
    }
    if let Some(bytes) = m.hbm_bytes {
        let rate = m.per_second(bytes);
        out.push(metric(
            kernel,
            "HBM bandwidth",
            rate,
            "B/s",
            Some(given.hbm_peak_gbps * 1e9),
        ));
    }
    let bandwidths = [
        (
            "LDS bandwidth",
            m.lds_bytes,
            agent.and_then(|a| per_cu_peak(a, cdna3::LDS_BYTES_PER_CYCLE)),
        ),
        (
            "vL1D bandwidth",
            m.l1_bytes,
            agent.and_then(|a| per_cu_peak(a, cdna3::L1_BYTES_PER_ACCESS)),
        ),
        (
            "L2 bandwidth",
            m.l2_bytes,
            agent
                .and_then(clock_hz)
                .map(|hz| given.l2_channels * cdna3::L2_BYTES_PER_REQUEST * hz),
        ),
    ];
    for (name, bytes, peak) in bandwidths {
        if let Some(bytes) = bytes {
            out.push(metric(kernel, name, m.per_second(bytes), "B/s", peak));
        }
    }
    if let Some(ipc) = m.ipc {
        let peak = agent
            .is_some_and(cdna3::is_cdna3)
            .then_some(cdna3::PEAK_IPC);
        out.push(metric(kernel, "IPC", ipc, "instr/cycle", peak));
    }
    if let Some(occupancy) = m.occupancy_percent {
        out.push(metric(kernel, "occupancy", occupancy, "%", Some(100.0)));
    }
    out
}

impl Rule for SpeedOfLight {
    fn id(&self) -> &'static str {
        "speed-of-light"
    }

    fn about(&self) -> &'static str {
        "each kernel's FLOP/s, HBM, LDS, vL1D and L2 bandwidth, IPC and occupancy as a \
         percentage of its GPU's peaks"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        let given = Given {
            hbm_peak_gbps: values.get("hbm_peak_gbps"),
            l2_channels: values.get("l2_channels"),
        };
        let mut seen = std::collections::BTreeSet::new();
        (trace.counters.iter())
            .filter(|c| seen.insert((c.pid, c.agent, c.kernel)))
            .filter_map(|c| {
                let m = Metrics::of(trace, c)?;
                if !m.has_work() {
                    return None;
                }
                let evidence = evidence(trace, c, &m, given);
                let percents: Vec<(&str, f64)> = (evidence.iter())
                    .filter_map(|e| match e {
                        Evidence::Metric {
                            metric,
                            percent_of_peak: Some(p),
                            ..
                        } => Some((*metric, *p)),
                        _ => None,
                    })
                    .collect();
                let best = percents.iter().map(|&(_, p)| p).reduce(f64::max);
                let (own_ns, all_ns) = trace.kernel_time(c.pid, c.agent, c.kernel);
                let large = own_ns as f64 >= values.get("min_time_share") * all_ns as f64;
                let slow = best.filter(|&b| large && b < values.get("warning_percent"));
                let summary: Vec<String> = (percents.iter())
                    .map(|(metric, p)| format!("{metric} {p:.1}%"))
                    .collect();
                let mut all = vec![Evidence::Kernel {
                    name: trace.name(c.kernel).to_owned(),
                    dispatches: trace.dispatch_count(c.pid, c.agent, c.kernel),
                    total_ns: own_ns,
                }];
                all.extend(evidence);
                Some(Finding {
                    rule: self.id(),
                    severity: if slow.is_some() {
                        Severity::Warning
                    } else {
                        Severity::Info
                    },
                    statement: if summary.is_empty() {
                        format!("{}: no metric has a peak on its GPU", who(trace, c))
                    } else {
                        format!(
                            "{} reached of its GPU's peaks: {}",
                            who(trace, c),
                            summary.join(", ")
                        )
                    },
                    evidence: all,
                    // Below every peak: the time beyond what the closest one would take.
                    at_stake_ns: slow.map_or(0, |b| (own_ns as f64 * (1.0 - b / 100.0)) as u64),
                    advice: "a kernel far from every peak is bound by latency: raise occupancy \
                             (fewer registers or LDS per workgroup, larger grids), keep more \
                             memory requests in flight, and check the counter rules' findings \
                             for what holds it",
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_valu_peak_needs_every_input_and_a_known_simd() {
        let mut mi300x = crate::generate::mi300x(0);
        // AMD's figure for the MI300X's vector FP64: 81.7 TFLOP/s.
        assert_eq!(valu_peak_flops(&mi300x), Some(81.7152e12));
        mi300x.max_engine_clk_mhz = 0;
        assert_eq!(valu_peak_flops(&mi300x), None);
        mi300x.max_engine_clk_mhz = 2100;
        mi300x.name = "gfx1100".into();
        assert_eq!(valu_peak_flops(&mi300x), None);
    }

    #[test]
    fn the_lds_and_vl1d_peaks_are_a_cdna3_cus_128_bytes_a_clock() {
        let mut mi300x = crate::generate::mi300x(0);
        let peak = 304.0 * 128.0 * 2100e6;
        assert_eq!(per_cu_peak(&mi300x, cdna3::LDS_BYTES_PER_CYCLE), Some(peak));
        assert_eq!(per_cu_peak(&mi300x, cdna3::L1_BYTES_PER_ACCESS), Some(peak));
        // A gfx90a's vL1D lines are 64 bytes: CDNA3's widths are not its own.
        mi300x.name = "gfx90a".into();
        assert_eq!(per_cu_peak(&mi300x, cdna3::L1_BYTES_PER_ACCESS), None);
        assert_eq!(clock_hz(&mi300x), None);
        mi300x.name = "gfx942".into();
        mi300x.cu_count = 0;
        assert_eq!(per_cu_peak(&mi300x, cdna3::LDS_BYTES_PER_CYCLE), None);
    }
}
