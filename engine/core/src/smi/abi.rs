//! AMD-SMI's C ABI, the subset rocflow reads: status codes, the enum values it passes, the
//! `#[repr(C)]` structs it fills and the entry points' types. Names follow the C types
//! without the `amdsmi_` prefix and `_t` suffix. Layouts are those of AMD-SMI 25 and later
//! (ROCm 6.4 on; `amdsmi.h` 26.5 is the reference of the layout tests): the power struct
//! and the version struct changed at 25, which is why older libraries are refused.

use std::ffi::{c_char, c_void};

/// `amdsmi_status_t`.
pub type Status = u32;

/// The `amdsmi_status_t` values rocflow reacts to.
pub mod status {
    use super::Status;
    pub const SUCCESS: Status = 0;
    pub const INVAL: Status = 1;
    pub const NOT_SUPPORTED: Status = 2;
    pub const NO_PERM: Status = 10;
    pub const INIT_ERROR: Status = 18;
    pub const NOT_INIT: Status = 32;
    pub const DRIVER_NOT_LOADED: Status = 34;
    pub const MORE_DATA: Status = 39;
}

/// `amdsmi_init_flags_t`'s `AMDSMI_INIT_AMD_GPUS`: AMD GPUs only, no CPU drivers needed.
pub const INIT_AMD_GPUS: u64 = 1 << 1;

/// `amdsmi_clk_type_t`.
pub mod clock {
    pub const GFX: u32 = 0;
    pub const MEM: u32 = 4;
}

/// `amdsmi_temperature_type_t`'s `AMDSMI_TEMPERATURE_TYPE_HOTSPOT` (alias `JUNCTION`): the
/// hottest point of the die, the temperature that throttles the GPU.
pub const TEMPERATURE_HOTSPOT: u32 = 1;

/// `amdsmi_temperature_metric_t`'s `AMDSMI_TEMP_CURRENT`.
pub const TEMP_CURRENT: u32 = 0;

/// `amdsmi_memory_type_t`'s `AMDSMI_MEM_TYPE_VRAM`.
pub const MEM_TYPE_VRAM: u32 = 0;

/// `amdsmi_socket_handle` and `amdsmi_processor_handle`: opaque pointers of the library.
pub type Handle = *mut c_void;

/// `amdsmi_version_t` (25 and later; before 25 it began with a `year`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub release: u32,
    pub build: *const c_char,
}

/// `amdsmi_bdf_t`: a union of a `uint64_t` and bitfields of it, function (bits 0-2),
/// device (3-7), bus (8-15) and domain (16-63).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bdf {
    pub as_uint: u64,
}

/// `amdsmi_power_info_t`. Members a GPU does not report hold `UINT32_MAX`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PowerInfo {
    /// W.
    pub socket_power: u64,
    /// W; MI300 and later.
    pub current_socket_power: u32,
    /// W; Navi, MI200 and earlier.
    pub average_socket_power: u32,
    /// mV.
    pub gfx_voltage: u64,
    pub soc_voltage: u64,
    pub mem_voltage: u64,
    pub power_limit: u32,
    /// W; MI350X and later (26.x; padding before).
    pub ubb_power: u32,
    pub reserved: [u64; 18],
}

/// `amdsmi_clk_info_t`; clocks in MHz.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ClkInfo {
    pub clk: u32,
    pub min_clk: u32,
    pub max_clk: u32,
    pub clk_locked: u8,
    pub clk_deep_sleep: u8,
    pub reserved: [u32; 4],
}

/// `amdsmi_engine_usage_t`; activities in percent.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct EngineUsage {
    pub gfx_activity: u32,
    /// The memory controllers'.
    pub umc_activity: u32,
    /// The multimedia engines'.
    pub mm_activity: u32,
    pub reserved: [u32; 13],
}

pub type Init = unsafe extern "C" fn(flags: u64) -> Status;
pub type ShutDown = unsafe extern "C" fn() -> Status;
pub type GetLibVersion = unsafe extern "C" fn(version: *mut Version) -> Status;
pub type StatusCodeToString = unsafe extern "C" fn(Status, *mut *const c_char) -> Status;
pub type GetSocketHandles = unsafe extern "C" fn(count: *mut u32, sockets: *mut Handle) -> Status;
pub type GetProcessorHandles =
    unsafe extern "C" fn(socket: Handle, count: *mut u32, processors: *mut Handle) -> Status;
pub type GetGpuDeviceBdf = unsafe extern "C" fn(Handle, *mut Bdf) -> Status;
pub type GetPowerInfo = unsafe extern "C" fn(Handle, *mut PowerInfo) -> Status;
pub type GetTempMetric =
    unsafe extern "C" fn(Handle, sensor: u32, metric: u32, celsius: *mut i64) -> Status;
pub type GetClockInfo = unsafe extern "C" fn(Handle, clock: u32, *mut ClkInfo) -> Status;
pub type GetGpuActivity = unsafe extern "C" fn(Handle, *mut EngineUsage) -> Status;
pub type GetGpuMemoryUsage = unsafe extern "C" fn(Handle, memory: u32, used: *mut u64) -> Status;

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    // Sizes, alignments and offsets as `amdsmi.h` 26.5 lays them out on x86-64 (unchanged
    // since 25.0 but for `ubb_power`, which took the power struct's padding).

    #[test]
    fn version() {
        assert_eq!((size_of::<Version>(), align_of::<Version>()), (24, 8));
        assert_eq!(offset_of!(Version, major), 0);
        assert_eq!(offset_of!(Version, minor), 4);
        assert_eq!(offset_of!(Version, release), 8);
        assert_eq!(offset_of!(Version, build), 16);
    }

    #[test]
    fn bdf() {
        assert_eq!((size_of::<Bdf>(), align_of::<Bdf>()), (8, 8));
    }

    #[test]
    fn power_info() {
        assert_eq!((size_of::<PowerInfo>(), align_of::<PowerInfo>()), (192, 8));
        assert_eq!(offset_of!(PowerInfo, socket_power), 0);
        assert_eq!(offset_of!(PowerInfo, current_socket_power), 8);
        assert_eq!(offset_of!(PowerInfo, average_socket_power), 12);
        assert_eq!(offset_of!(PowerInfo, gfx_voltage), 16);
        assert_eq!(offset_of!(PowerInfo, soc_voltage), 24);
        assert_eq!(offset_of!(PowerInfo, mem_voltage), 32);
        assert_eq!(offset_of!(PowerInfo, power_limit), 40);
        assert_eq!(offset_of!(PowerInfo, ubb_power), 44);
        assert_eq!(offset_of!(PowerInfo, reserved), 48);
    }

    #[test]
    fn clk_info() {
        assert_eq!((size_of::<ClkInfo>(), align_of::<ClkInfo>()), (32, 4));
        assert_eq!(offset_of!(ClkInfo, clk), 0);
        assert_eq!(offset_of!(ClkInfo, min_clk), 4);
        assert_eq!(offset_of!(ClkInfo, max_clk), 8);
        assert_eq!(offset_of!(ClkInfo, clk_locked), 12);
        assert_eq!(offset_of!(ClkInfo, clk_deep_sleep), 13);
        assert_eq!(offset_of!(ClkInfo, reserved), 16);
    }

    #[test]
    fn engine_usage() {
        assert_eq!(
            (size_of::<EngineUsage>(), align_of::<EngineUsage>()),
            (64, 4)
        );
        assert_eq!(offset_of!(EngineUsage, gfx_activity), 0);
        assert_eq!(offset_of!(EngineUsage, umc_activity), 4);
        assert_eq!(offset_of!(EngineUsage, mm_activity), 8);
        assert_eq!(offset_of!(EngineUsage, reserved), 12);
    }
}
