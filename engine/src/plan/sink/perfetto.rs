//! The Perfetto sink's options.

use serde::{Deserialize, Serialize};

use super::Size;

/// The sink's `options`; `Default` holds their defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// What the trace shows.
    pub tracks: Vec<Shown>,
    /// A file that has reached this size is closed, and the trace goes on in the next.
    pub split_size: Option<Size>,
    /// Arrows from each API call to the kernels and copies it caused.
    pub flows: bool,
    /// Ids and launch parameters on the slices.
    pub annotations: bool,
    pub time_unit: TimeUnit,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            tracks: Shown::ALL.to_vec(),
            split_size: None,
            flows: true,
            annotations: true,
            time_unit: TimeUnit::default(),
        }
    }
}

/// What the trace shows, as the sink's `tracks` option names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shown {
    Api,
    Marker,
    Kernel,
    MemoryCopy,
    MemoryAllocation,
    Counter,
    ScratchMemory,
    /// Device counter samples: a track per agent and counter.
    DeviceCounter,
    /// SPM samples: a track per agent and counter.
    Spm,
}

impl Shown {
    pub const ALL: [Shown; 9] = [
        Shown::Api,
        Shown::Marker,
        Shown::Kernel,
        Shown::MemoryCopy,
        Shown::MemoryAllocation,
        Shown::Counter,
        Shown::ScratchMemory,
        Shown::DeviceCounter,
        Shown::Spm,
    ];
}

/// What the trace's timestamps count: nanoseconds of the boot time clock, or a coarser
/// unit (the sink's `time` module writes the clock that ties one to the other).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeUnit {
    #[default]
    Ns,
    Us,
    Ms,
}
