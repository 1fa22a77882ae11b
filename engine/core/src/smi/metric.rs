//! The device metrics read through AMD-SMI, named as rocflow stores them: the quantity and
//! its unit in the name, as ROCm Systems Profiler and `amd-smi metric` show them.

use serde::{Deserialize, Serialize};

/// One device metric. Each is read from one AMD-SMI call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The socket's power, W (`amdsmi_get_power_info`: the current power where the GPU
    /// reports it, MI300 and later, else the average).
    PowerW,
    /// The hottest point of the die, °C (`amdsmi_get_temp_metric`, hotspot/junction).
    TemperatureC,
    /// The graphics (shader) clock, MHz (`amdsmi_get_clock_info`, GFX).
    GfxClockMhz,
    /// The memory clock, MHz (`amdsmi_get_clock_info`, MEM).
    MemClockMhz,
    /// How busy the graphics engine is, percent (`amdsmi_get_gpu_activity`'s `gfx_activity`).
    GfxBusyPercent,
    /// How busy the memory controllers are, percent (`umc_activity`).
    MemBusyPercent,
    /// Device memory in use, bytes (`amdsmi_get_gpu_memory_usage`, VRAM).
    VramUsedBytes,
}

impl Metric {
    /// Every metric, in the order a reading lists them.
    pub const ALL: [Metric; 7] = [
        Metric::PowerW,
        Metric::TemperatureC,
        Metric::GfxClockMhz,
        Metric::MemClockMhz,
        Metric::GfxBusyPercent,
        Metric::MemBusyPercent,
        Metric::VramUsedBytes,
    ];

    /// The counter id its samples of rocflow's agent `agent` carry: one of the top 2^20
    /// ids, which no counter the SDK reports has (its ids are small handles), so metrics
    /// and counters share a sample's columns and a GPU's tracks. Like the SDK's counters,
    /// each agent's are its own: a database keeps a counter per id, with its agent.
    pub fn counter_id(self, agent: u32) -> u32 {
        const BASE: u32 = u32::MAX - 0xf_ffff;
        let index = Metric::ALL.iter().position(|m| *m == self).unwrap_or(0) as u32;
        BASE + (agent % 0x1_0000) * 16 + index
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::PowerW => "power_w",
            Metric::TemperatureC => "temperature_c",
            Metric::GfxClockMhz => "gfx_clock_mhz",
            Metric::MemClockMhz => "mem_clock_mhz",
            Metric::GfxBusyPercent => "gfx_busy_percent",
            Metric::MemBusyPercent => "mem_busy_percent",
            Metric::VramUsedBytes => "vram_used_bytes",
        }
    }

    /// The unit, as a track or column shows it.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::PowerW => "W",
            Metric::TemperatureC => "°C",
            Metric::GfxClockMhz | Metric::MemClockMhz => "MHz",
            Metric::GfxBusyPercent | Metric::MemBusyPercent => "%",
            Metric::VramUsedBytes => "bytes",
        }
    }
}
