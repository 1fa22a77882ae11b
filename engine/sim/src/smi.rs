//! The simulated AMD-SMI: the subset of `libamd_smi`'s C API that rocflow's reader calls
//! ([`rocflow_core::smi`]), exported by the simulated SDK's library, with the same layouts
//! and status codes. Each scenario GPU is a socket with one processor, at the PCI location
//! its SDK agent reports; its metrics come from the agent's `[agent.smi]` table, busy or
//! idle as a kernel dispatched to it runs or not when asked (see [`crate::activity`]).

use std::ffi::c_char;
use std::sync::atomic::{AtomicU32, Ordering};

use rocflow_core::scenario::SmiMetrics;
use rocflow_core::smi::abi::{
    self, Bdf, ClkInfo, EngineUsage, Handle, PowerInfo, Status, Version, status,
};

use crate::sdk::{Sdk, installed, now};

/// The version it reports: that of the header its layouts come from.
const VERSION: (u32, u32, u32) = (26, 5, 0);

/// Socket and processor handles are these plus the GPU's index: opaque to the caller, as
/// the real library's pointers are.
const SOCKET_BASE: usize = 0x5300_0000;
const PROCESSOR_BASE: usize = 0x5400_0000;

/// `amdsmi_init` calls for GPUs not yet shut down: AMD-SMI counts them.
static INITIALIZED: AtomicU32 = AtomicU32::new(0);

/// The SDK, once AMD-SMI is initialized.
fn initialized() -> Result<&'static Sdk, Status> {
    match INITIALIZED.load(Ordering::Acquire) {
        0 => Err(status::NOT_INIT),
        _ => installed().ok_or(status::NOT_INIT),
    }
}

/// The GPU index of a processor handle.
fn gpu(sdk: &Sdk, processor: Handle) -> Result<usize, Status> {
    let index = (processor as usize).wrapping_sub(PROCESSOR_BASE);
    (index < sdk.scenario.agents.len())
        .then_some(index)
        .ok_or(status::INVAL)
}

/// Writes `value` through `out`, if the call is valid.
///
/// # Safety
/// `out` is null or writable.
unsafe fn answer<T>(out: *mut T, value: Result<T, Status>) -> Status {
    if out.is_null() {
        return status::INVAL;
    }
    match value {
        // SAFETY: checked non-null; writable as the caller promises.
        Ok(value) => unsafe { out.write(value) },
        Err(refused) => return refused,
    }
    status::SUCCESS
}

/// The metrics of a processor's GPU: the scenario's, busy or idle now.
fn metrics<T>(processor: Handle, pick: impl FnOnce(&SmiMetrics, usize) -> T) -> Result<T, Status> {
    let sdk = initialized()?;
    let gpu = gpu(sdk, processor)?;
    let metrics = (sdk.scenario.agents[gpu].smi.as_ref()).ok_or(status::NOT_SUPPORTED)?;
    let busy = sdk.activity.busy(gpu, now());
    Ok(pick(metrics, usize::from(busy)))
}

/// Lists `count` handles from `base` the AMD-SMI way: their number alone when `out` is
/// null, else as many as fit.
///
/// # Safety
/// `count` is null or writable; `out` is null or has room for `*count` handles.
unsafe fn list(base: usize, available: usize, count: *mut u32, out: *mut Handle) -> Status {
    if count.is_null() {
        return status::INVAL;
    }
    // SAFETY: checked non-null; the caller's.
    let room = unsafe { *count } as usize;
    // SAFETY: as above.
    unsafe { *count = available as u32 };
    if out.is_null() {
        return status::SUCCESS;
    }
    for i in 0..available.min(room) {
        // SAFETY: room for `room` handles, as the caller promises.
        unsafe { *out.add(i) = (base + i) as Handle };
    }
    match available > room {
        true => status::MORE_DATA,
        false => status::SUCCESS,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn amdsmi_init(flags: u64) -> Status {
    if flags & abi::INIT_AMD_GPUS == 0 {
        // The simulated node has GPUs only.
        return status::INVAL;
    }
    let Some(sdk) = installed() else {
        return status::INIT_ERROR;
    };
    INITIALIZED.fetch_add(1, Ordering::AcqRel);
    sdk.activity.watch(true);
    status::SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn amdsmi_shut_down() -> Status {
    let ended = INITIALIZED.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    match ended {
        Ok(1) => {
            // The last user is gone: nothing asks about the GPUs' activity any more.
            if let Some(sdk) = installed() {
                sdk.activity.watch(false);
            }
            status::SUCCESS
        }
        Ok(_) => status::SUCCESS,
        Err(_) => status::NOT_INIT,
    }
}

/// # Safety
/// `version` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdsmi_get_lib_version(version: *mut Version) -> Status {
    let (major, minor, release) = VERSION;
    let build = c"26.5.0 (rocflow's simulated device)".as_ptr();
    let value = Version {
        major,
        minor,
        release,
        build,
    };
    // SAFETY: as the caller promises.
    unsafe { answer(version, Ok(value)) }
}

/// # Safety
/// `text` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdsmi_status_code_to_string(
    code: Status,
    text: *mut *const c_char,
) -> Status {
    let said = match code {
        status::SUCCESS => c"success",
        status::INVAL => c"invalid parameters",
        status::NOT_SUPPORTED => c"not supported by this GPU",
        status::NO_PERM => c"permission denied",
        status::INIT_ERROR => c"the device could not be initialized",
        status::NOT_INIT => c"AMD-SMI is not initialized",
        status::MORE_DATA => c"more data than room for it",
        _ => c"an unknown error",
    };
    // SAFETY: as the caller promises.
    unsafe { answer(text, Ok(said.as_ptr())) }
}

/// # Safety
/// As `amdsmi.h` says: `count` writable, `sockets` null or with room for `*count`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdsmi_get_socket_handles(
    count: *mut u32,
    sockets: *mut Handle,
) -> Status {
    match initialized() {
        // SAFETY: as the caller promises.
        Ok(sdk) => unsafe { list(SOCKET_BASE, sdk.scenario.agents.len(), count, sockets) },
        Err(refused) => refused,
    }
}

/// # Safety
/// As `amdsmi.h` says: `count` writable, `processors` null or with room for `*count`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdsmi_get_processor_handles(
    socket: Handle,
    count: *mut u32,
    processors: *mut Handle,
) -> Status {
    let sdk = match initialized() {
        Ok(sdk) => sdk,
        Err(refused) => return refused,
    };
    let index = (socket as usize).wrapping_sub(SOCKET_BASE);
    if index >= sdk.scenario.agents.len() {
        return status::INVAL;
    }
    // SAFETY: as the caller promises.
    unsafe { list(PROCESSOR_BASE + index, 1, count, processors) }
}

/// # Safety
/// `bdf` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdsmi_get_gpu_device_bdf(processor: Handle, bdf: *mut Bdf) -> Status {
    let location = initialized().and_then(|sdk| {
        let gpu = gpu(sdk, processor)?;
        Ok(sdk.scenario.agents[gpu].pci(gpu).to_bdf())
    });
    // SAFETY: as the caller promises.
    unsafe { answer(bdf, location) }
}

/// # Safety
/// `info` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdsmi_get_power_info(processor: Handle, info: *mut PowerInfo) -> Status {
    let power = metrics(processor, |m, busy| {
        let watts = m.power_w[busy];
        // As an MI300X reports it: the current power, and no average.
        PowerInfo {
            socket_power: u64::from(watts),
            current_socket_power: watts,
            average_socket_power: u32::MAX,
            ..PowerInfo::default()
        }
    });
    // SAFETY: as the caller promises.
    unsafe { answer(info, power) }
}

/// # Safety
/// `celsius` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdsmi_get_temp_metric(
    processor: Handle,
    sensor: u32,
    metric: u32,
    celsius: *mut i64,
) -> Status {
    let temperature = match (sensor, metric) {
        (abi::TEMPERATURE_HOTSPOT, abi::TEMP_CURRENT) => {
            metrics(processor, |m, busy| m.temperature_c[busy])
        }
        _ => Err(status::NOT_SUPPORTED),
    };
    // SAFETY: as the caller promises.
    unsafe { answer(celsius, temperature) }
}

/// # Safety
/// `info` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdsmi_get_clock_info(
    processor: Handle,
    clock: u32,
    info: *mut ClkInfo,
) -> Status {
    let range = |mhz: [u32; 2], busy: usize| ClkInfo {
        clk: mhz[busy],
        min_clk: mhz[0],
        max_clk: mhz[1],
        ..ClkInfo::default()
    };
    let clock = match clock {
        abi::clock::GFX => metrics(processor, |m, busy| range(m.gfx_clock_mhz, busy)),
        abi::clock::MEM => metrics(processor, |m, busy| range(m.mem_clock_mhz, busy)),
        _ => Err(status::NOT_SUPPORTED),
    };
    // SAFETY: as the caller promises.
    unsafe { answer(info, clock) }
}

/// # Safety
/// `usage` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdsmi_get_gpu_activity(
    processor: Handle,
    usage: *mut EngineUsage,
) -> Status {
    let activity = metrics(processor, |m, busy| EngineUsage {
        gfx_activity: [0, 100][busy],
        umc_activity: m.mem_busy_percent[busy],
        // No video engines are simulated.
        mm_activity: u32::from(u16::MAX),
        ..EngineUsage::default()
    });
    // SAFETY: as the caller promises.
    unsafe { answer(usage, activity) }
}

/// # Safety
/// `used` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn amdsmi_get_gpu_memory_usage(
    processor: Handle,
    memory: u32,
    used: *mut u64,
) -> Status {
    let bytes = match memory {
        abi::MEM_TYPE_VRAM => metrics(processor, |m, _| m.vram_used_bytes),
        _ => Err(status::NOT_SUPPORTED),
    };
    // SAFETY: as the caller promises.
    unsafe { answer(used, bytes) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocflow_core::scenario::{DEFAULT, Scenario};
    use rocflow_core::smi::PciLocation;

    /// The handles a listing gives.
    fn listed(list: impl Fn(*mut u32, *mut Handle) -> Status) -> Vec<Handle> {
        let mut count = 0;
        assert_eq!(list(&mut count, std::ptr::null_mut()), status::SUCCESS);
        let mut handles = vec![std::ptr::null_mut(); count as usize];
        assert_eq!(list(&mut count, handles.as_mut_ptr()), status::SUCCESS);
        handles
    }

    #[test]
    fn each_gpu_reads_its_scenario_values_idle_and_busy_while_a_kernel_of_it_runs() {
        let sdk = crate::sdk::install(Scenario::parse(DEFAULT).unwrap());
        let scenario = Scenario::parse(DEFAULT).unwrap();
        let mut power = PowerInfo::default();
        // SAFETY (every call below): valid pointers throughout.
        unsafe {
            let processor = (PROCESSOR_BASE + 1) as Handle;
            assert_eq!(
                amdsmi_get_power_info(processor, &mut power),
                status::NOT_INIT
            );
            assert_eq!(amdsmi_init(abi::INIT_AMD_GPUS), status::SUCCESS);
            let sockets = listed(|n, out| amdsmi_get_socket_handles(n, out));
            assert_eq!(sockets.len(), scenario.agents.len());
            let processors = listed(|n, out| amdsmi_get_processor_handles(sockets[1], n, out));
            assert_eq!(processors, [processor]);
            let mut bdf = Bdf::default();
            assert_eq!(
                amdsmi_get_gpu_device_bdf(processor, &mut bdf),
                status::SUCCESS
            );
            assert_eq!(bdf, scenario.agents[1].pci(1).to_bdf());
            // The GPU's SDK agent (after the CPU's) is at the same place.
            let agent = sdk.device.agents[2];
            assert_eq!(
                PciLocation::of_agent(agent.domain, agent.location_id),
                PciLocation::from_bdf(bdf)
            );

            let expected = scenario.agents[1].smi.as_ref().unwrap();
            let read = || {
                let (mut power, mut celsius, mut clock, mut usage) = (
                    PowerInfo::default(),
                    0,
                    ClkInfo::default(),
                    EngineUsage::default(),
                );
                amdsmi_get_power_info(processor, &mut power);
                amdsmi_get_temp_metric(
                    processor,
                    abi::TEMPERATURE_HOTSPOT,
                    abi::TEMP_CURRENT,
                    &mut celsius,
                );
                amdsmi_get_clock_info(processor, abi::clock::GFX, &mut clock);
                amdsmi_get_gpu_activity(processor, &mut usage);
                (
                    power.current_socket_power,
                    celsius,
                    clock.clk,
                    usage.gfx_activity,
                    usage.umc_activity,
                )
            };
            let idle = (
                expected.power_w[0],
                expected.temperature_c[0],
                expected.gfx_clock_mhz[0],
                0,
                expected.mem_busy_percent[0],
            );
            assert_eq!(read(), idle);
            let now = now();
            sdk.activity
                .dispatch(1, now - 1_000, now + 600_000_000_000, now);
            let busy = (
                expected.power_w[1],
                expected.temperature_c[1],
                expected.gfx_clock_mhz[1],
                100,
                expected.mem_busy_percent[1],
            );
            assert_eq!(read(), busy);
            let mut used = 0;
            assert_eq!(
                amdsmi_get_gpu_memory_usage(processor, abi::MEM_TYPE_VRAM, &mut used),
                status::SUCCESS
            );
            assert_eq!(used, expected.vram_used_bytes);
            let mut celsius = 0;
            let edge = 0;
            assert_eq!(
                amdsmi_get_temp_metric(processor, edge, abi::TEMP_CURRENT, &mut celsius),
                status::NOT_SUPPORTED
            );
            assert_eq!(amdsmi_shut_down(), status::SUCCESS);
            assert_eq!(
                amdsmi_get_power_info(processor, &mut power),
                status::NOT_INIT
            );
        }
    }
}
