//! Device metrics through AMD-SMI (`libamd_smi`), as ROCm Systems Profiler samples them:
//! power, temperature, clocks, utilization and memory in use, per GPU. The library is
//! loaded at run time when it is found ([`find`]), never linked, so rocflow runs where it
//! is absent; on the simulated device the simulated SDK's library answers the same calls.
//!
//! [`Smi::open`] loads and initializes it for GPUs and lists them with their PCI
//! locations, by which [`Smi::gpu_at`] matches an SDK agent; [`Smi::read`] reads one GPU's
//! metrics.

pub mod abi;
mod library;
mod metric;
mod pci;

use std::ffi::{CStr, c_char};
use std::path::{Path, PathBuf};

pub use library::{Found, LIBRARY_VAR, find};
pub use metric::Metric;
pub use pci::{PciLocation, PciLocationError};

use abi::{Status, status};

/// AMD-SMI, loaded and initialized for GPUs; shut down when dropped.
pub struct Smi {
    api: Api,
    version: (u32, u32, u32),
    gpus: Vec<Gpu>,
    // Last: the entry points above are the library's.
    _library: libloading::Library,
}

// The processor handles are the library's, valid until it shuts down, and AMD-SMI's calls
// may come from any thread.
unsafe impl Send for Smi {}

/// A GPU AMD-SMI lists.
#[derive(Debug, Clone)]
pub struct Gpu {
    pub location: PciLocation,
    handle: abi::Handle,
}

/// The entry points read.
struct Api {
    shut_down: abi::ShutDown,
    status_string: Option<abi::StatusCodeToString>,
    power: abi::GetPowerInfo,
    temperature: abi::GetTempMetric,
    clock: abi::GetClockInfo,
    activity: abi::GetGpuActivity,
    memory: abi::GetGpuMemoryUsage,
}

/// A call AMD-SMI refused: its status and what the library says of it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} (AMD-SMI status {status})")]
pub struct Failure {
    pub status: Status,
    pub message: String,
}

impl Failure {
    /// Permission was denied: the user cannot open the GPU's render node.
    pub fn is_permission(&self) -> bool {
        self.status == status::NO_PERM
    }
}

/// Why AMD-SMI cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(
        "AMD-SMI is not installed (looked for {}); install ROCm's amd-smi-lib package, or set {LIBRARY_VAR} to the library",
        .searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    Absent { searched: Vec<PathBuf> },
    #[error("cannot load AMD-SMI from {}: {source}", .path.display())]
    Load {
        path: PathBuf,
        source: libloading::Error,
    },
    #[error("{} has no `{symbol}`: it is not AMD-SMI, or not a version rocflow reads", .path.display())]
    MissingSymbol { path: PathBuf, symbol: &'static str },
    #[error("AMD-SMI {version} at {} is not one rocflow reads: {why}", .path.display())]
    Unsupported {
        path: PathBuf,
        version: String,
        why: &'static str,
    },
    #[error(
        "AMD-SMI was denied access to the GPUs while {during}: {failure}; add yourself to the GPU's groups (`sudo usermod -aG render,video $USER`, then log in again)"
    )]
    Permission {
        during: &'static str,
        failure: Failure,
    },
    #[error("AMD-SMI failed while {during}: {failure}")]
    Failed {
        during: &'static str,
        failure: Failure,
    },
    #[error("AMD-SMI sees no GPU: is the amdgpu driver loaded?")]
    NoGpu,
}

/// One GPU's metrics at one time: those it reported, and those it could not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    pub values: Vec<(Metric, f64)>,
    pub failures: Vec<(Metric, Failure)>,
}

impl Smi {
    /// Finds AMD-SMI where ROCm's tools look for it (see [`find`]) and opens it.
    pub fn open() -> Result<Smi, OpenError> {
        let env = |name: &str| std::env::var(name).ok();
        let found =
            find(env, Path::to_path_buf).map_err(|searched| OpenError::Absent { searched })?;
        Smi::open_library(&found.path)
    }

    /// Loads the AMD-SMI library at `path`, initializes it for AMD GPUs and lists them.
    pub fn open_library(path: &Path) -> Result<Smi, OpenError> {
        // SAFETY: loading AMD-SMI runs its initializers, which is what it is for.
        let library =
            unsafe { libloading::Library::new(path) }.map_err(|source| OpenError::Load {
                path: path.to_owned(),
                source,
            })?;
        // SAFETY (each `required` and `symbol` below): the type `amdsmi.h` declares for
        // the name.
        let version = lib_version(unsafe { required(&library, path, "amdsmi_get_lib_version") }?);
        if let Some(why) = unsupported(version) {
            let (major, minor, release) = version;
            return Err(OpenError::Unsupported {
                path: path.to_owned(),
                version: format!("{major}.{minor}.{release}"),
                why,
            });
        }
        let init: abi::Init = unsafe { required(&library, path, "amdsmi_init") }?;
        let sockets: abi::GetSocketHandles =
            unsafe { required(&library, path, "amdsmi_get_socket_handles") }?;
        let processors: abi::GetProcessorHandles =
            unsafe { required(&library, path, "amdsmi_get_processor_handles") }?;
        let bdf: abi::GetGpuDeviceBdf =
            unsafe { required(&library, path, "amdsmi_get_gpu_device_bdf") }?;
        let api = Api {
            shut_down: unsafe { required(&library, path, "amdsmi_shut_down") }?,
            status_string: unsafe { symbol(&library, "amdsmi_status_code_to_string") },
            power: unsafe { required(&library, path, "amdsmi_get_power_info") }?,
            temperature: unsafe { required(&library, path, "amdsmi_get_temp_metric") }?,
            clock: unsafe { required(&library, path, "amdsmi_get_clock_info") }?,
            activity: unsafe { required(&library, path, "amdsmi_get_gpu_activity") }?,
            memory: unsafe { required(&library, path, "amdsmi_get_gpu_memory_usage") }?,
        };
        // SAFETY: a plain call with flags.
        let status = unsafe { init(abi::INIT_AMD_GPUS) };
        if status != status::SUCCESS {
            return Err(api.refused("initializing for GPUs", status));
        }
        // From here on, a failure shuts the library down again.
        let mut smi = Smi {
            api,
            version,
            gpus: Vec::new(),
            _library: library,
        };
        let listing = "listing the GPUs";
        // SAFETY: the entry points with the counts and buffers they fill.
        let sockets = unsafe { handles(|count, out| sockets(count, out)) }
            .map_err(|s| smi.api.refused(listing, s))?;
        for socket in sockets {
            // SAFETY: as above, for a socket the library listed.
            let processors = unsafe { handles(|count, out| processors(socket, count, out)) }
                .map_err(|s| smi.api.refused(listing, s))?;
            for handle in processors {
                let mut location = abi::Bdf::default();
                // SAFETY: a processor the library listed, and a writable bdf.
                let status = unsafe { bdf(handle, &mut location) };
                // A processor without a PCI location cannot be matched to an agent.
                if status == status::SUCCESS {
                    smi.gpus.push(Gpu {
                        location: PciLocation::from_bdf(location),
                        handle,
                    });
                }
            }
        }
        if smi.gpus.is_empty() {
            return Err(OpenError::NoGpu);
        }
        Ok(smi)
    }

    /// The library's version: major (the year, 26 for 2026), minor, release.
    pub fn version(&self) -> (u32, u32, u32) {
        self.version
    }

    pub fn gpus(&self) -> &[Gpu] {
        &self.gpus
    }

    /// The GPU at `location` (an SDK agent's: [`PciLocation::of_agent`]).
    pub fn gpu_at(&self, location: PciLocation) -> Option<usize> {
        self.gpus.iter().position(|g| g.location == location)
    }

    /// Reads GPU `gpu`'s metrics, each with its own call: one a GPU does not support is
    /// among the failures, and the others are still read.
    ///
    /// # Panics
    /// If `gpu` is not an index of [`Smi::gpus`].
    pub fn read(&self, gpu: usize) -> Reading {
        let handle = self.gpus[gpu].handle;
        let api = &self.api;
        let mut reading = Reading::default();
        let mut note = |metric, value: Result<f64, Status>| match value {
            Ok(value) => reading.values.push((metric, value)),
            Err(status) => reading.failures.push((metric, api.failure(status))),
        };
        // SAFETY (each call below): a processor the library listed, and a writable
        // struct of the type the entry point fills.
        let mut power = abi::PowerInfo::default();
        note(
            Metric::PowerW,
            call(unsafe { (api.power)(handle, &mut power) }).and_then(|()| socket_power(&power)),
        );
        let mut celsius = 0i64;
        let status = unsafe {
            (api.temperature)(
                handle,
                abi::TEMPERATURE_HOTSPOT,
                abi::TEMP_CURRENT,
                &mut celsius,
            )
        };
        note(Metric::TemperatureC, call(status).map(|()| celsius as f64));
        for (metric, clock) in [
            (Metric::GfxClockMhz, abi::clock::GFX),
            (Metric::MemClockMhz, abi::clock::MEM),
        ] {
            let mut info = abi::ClkInfo::default();
            let status = unsafe { (api.clock)(handle, clock, &mut info) };
            note(metric, call(status).and_then(|()| reported(info.clk)));
        }
        let mut usage = abi::EngineUsage::default();
        let activity = call(unsafe { (api.activity)(handle, &mut usage) });
        note(
            Metric::GfxBusyPercent,
            activity.and_then(|()| percent(usage.gfx_activity)),
        );
        note(
            Metric::MemBusyPercent,
            activity.and_then(|()| percent(usage.umc_activity)),
        );
        let mut used = 0u64;
        let status = unsafe { (api.memory)(handle, abi::MEM_TYPE_VRAM, &mut used) };
        note(Metric::VramUsedBytes, call(status).map(|()| used as f64));
        reading
    }
}

impl Drop for Smi {
    fn drop(&mut self) {
        // SAFETY: initialized in `open_library`, shut down once.
        unsafe { (self.api.shut_down)() };
    }
}

impl Api {
    /// Why opening failed `during` a step, refused with `status`.
    fn refused(&self, during: &'static str, status: Status) -> OpenError {
        opening_failed(during, self.failure(status))
    }

    fn failure(&self, status: Status) -> Failure {
        let mut text: *const c_char = std::ptr::null();
        let described = self.status_string.is_some_and(|f| {
            // SAFETY: the library writes a pointer to a static string.
            unsafe { f(status, &mut text) == status::SUCCESS && !text.is_null() }
        });
        let message = match described {
            // SAFETY: a NUL-terminated string of the library's.
            true => unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned(),
            false => "an error".into(),
        };
        Failure { status, message }
    }
}

/// Why opening failed `during` a step: permission, with what to do, or another failure.
fn opening_failed(during: &'static str, failure: Failure) -> OpenError {
    match failure.is_permission() {
        true => OpenError::Permission { during, failure },
        false => OpenError::Failed { during, failure },
    }
}

/// A symbol of the library, typed as the caller says.
///
/// # Safety
/// `T` is the type `amdsmi.h` declares for `name`.
unsafe fn symbol<T: Copy>(library: &libloading::Library, name: &str) -> Option<T> {
    let name = [name.as_bytes(), b"\0"].concat();
    // SAFETY: as the caller promises.
    unsafe { library.get::<T>(&name) }.ok().map(|f| *f)
}

/// A symbol the reader needs, typed as the caller says.
///
/// # Safety
/// `T` is the type `amdsmi.h` declares for `name`.
unsafe fn required<T: Copy>(
    library: &libloading::Library,
    path: &Path,
    name: &'static str,
) -> Result<T, OpenError> {
    // SAFETY: as the caller promises.
    unsafe { symbol(library, name) }.ok_or_else(|| OpenError::MissingSymbol {
        path: path.to_owned(),
        symbol: name,
    })
}

/// The library's version, read into a buffer with room for layouts before 25 too (which
/// began with the year, so their year reads as the major).
fn lib_version(get: abi::GetLibVersion) -> (u32, u32, u32) {
    #[repr(C)]
    struct Buffer {
        version: abi::Version,
        room: [u64; 4],
    }
    let mut buffer = Buffer {
        version: abi::Version {
            major: 0,
            minor: 0,
            release: 0,
            build: std::ptr::null(),
        },
        room: [0; 4],
    };
    // SAFETY: a writable version struct, with room to spare.
    let status = unsafe { get(&mut buffer.version) };
    let v = buffer.version;
    match status {
        status::SUCCESS => (v.major, v.minor, v.release),
        _ => (0, 0, 0),
    }
}

/// Why rocflow does not read the AMD-SMI of `version`, if it does not.
fn unsupported((major, minor, _): (u32, u32, u32)) -> Option<&'static str> {
    match (major, minor) {
        (..25, _) => Some(
            "rocflow reads AMD-SMI 25.0 (ROCm 6.4) and later, whose power and version structs it knows",
        ),
        (25, 2) => {
            Some("its `amdsmi_get_power_info` takes a sensor index, a transient API of 25.2")
        }
        _ => None,
    }
}

/// The handles a two-call listing gives (the count first, then the handles).
///
/// # Safety
/// `list` is an AMD-SMI listing: given a count and null it writes the count, given a
/// count and room for that many it writes them and their number.
unsafe fn handles(
    list: impl Fn(*mut u32, *mut abi::Handle) -> Status,
) -> Result<Vec<abi::Handle>, Status> {
    let mut count = 0u32;
    call(list(&mut count, std::ptr::null_mut()))?;
    let mut handles = vec![std::ptr::null_mut(); count as usize];
    call(list(&mut count, handles.as_mut_ptr()))?;
    handles.truncate(count as usize);
    Ok(handles)
}

fn call(status: Status) -> Result<(), Status> {
    match status {
        status::SUCCESS => Ok(()),
        refused => Err(refused),
    }
}

/// A value the GPU reports; `UINT32_MAX` is AMD-SMI's "not reported".
fn reported(value: u32) -> Result<f64, Status> {
    match value {
        u32::MAX => Err(status::NOT_SUPPORTED),
        value => Ok(f64::from(value)),
    }
}

/// A percentage; above 100 is AMD-SMI's "not reported" (`UINT16_MAX`, `UINT32_MAX`).
fn percent(value: u32) -> Result<f64, Status> {
    match value {
        0..=100 => Ok(f64::from(value)),
        _ => Err(status::NOT_SUPPORTED),
    }
}

/// The socket's power: the current one, which MI300 and later report, else the average,
/// which earlier GPUs report.
fn socket_power(power: &abi::PowerInfo) -> Result<f64, Status> {
    match power.current_socket_power {
        0 | u32::MAX => reported(power.average_socket_power),
        current => Ok(f64::from(current)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_before_25_and_the_transient_25_2_are_refused() {
        assert!(unsupported((24, 7, 0)).unwrap().contains("25.0"));
        assert!(unsupported((25, 2, 0)).unwrap().contains("sensor index"));
        assert_eq!(unsupported((25, 0, 0)), None);
        assert_eq!(unsupported((26, 5, 0)), None);
    }

    #[test]
    fn a_denied_permission_says_which_groups_to_join() {
        let denied = Failure {
            status: status::NO_PERM,
            message: "permission denied".into(),
        };
        let e = opening_failed("listing the GPUs", denied).to_string();
        assert!(
            e.starts_with("AMD-SMI was denied access to the GPUs while listing the GPUs: permission denied (AMD-SMI status 10)"),
            "{e}"
        );
        assert!(e.contains("sudo usermod -aG render,video $USER"), "{e}");
        let other = Failure {
            status: status::DRIVER_NOT_LOADED,
            message: "driver not loaded".into(),
        };
        let e = opening_failed("initializing for GPUs", other);
        assert!(matches!(e, OpenError::Failed { .. }), "{e:?}");
    }

    #[test]
    fn values_a_gpu_does_not_report_are_failures_not_numbers() {
        let mut power = abi::PowerInfo {
            current_socket_power: 750,
            average_socket_power: u32::MAX,
            ..Default::default()
        };
        assert_eq!(socket_power(&power), Ok(750.0));
        (power.current_socket_power, power.average_socket_power) = (u32::MAX, 300);
        assert_eq!(socket_power(&power), Ok(300.0));
        power.average_socket_power = u32::MAX;
        assert_eq!(socket_power(&power), Err(status::NOT_SUPPORTED));
        assert_eq!(percent(100), Ok(100.0));
        assert_eq!(percent(u32::from(u16::MAX)), Err(status::NOT_SUPPORTED));
        assert_eq!(reported(u32::MAX), Err(status::NOT_SUPPORTED));
    }

    #[test]
    fn an_absent_library_says_where_it_was_looked_for_and_how_to_get_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("libamd_smi.so");
        let e = Smi::open_library(&missing).err().unwrap();
        assert!(matches!(e, OpenError::Load { .. }), "{e:?}");
        let e = OpenError::Absent {
            searched: vec![missing.clone()],
        }
        .to_string();
        assert!(
            e.starts_with("AMD-SMI is not installed (looked for "),
            "{e}"
        );
        assert!(e.contains(&missing.display().to_string()), "{e}");
        assert!(e.contains(LIBRARY_VAR), "{e}");
    }

    #[test]
    fn a_library_that_is_not_amd_smi_is_named_by_what_it_lacks() {
        // libc is loaded in every process, and has none of AMD-SMI's entry points.
        let e = Smi::open_library(Path::new("libc.so.6")).err().unwrap();
        assert!(
            matches!(
                &e,
                OpenError::MissingSymbol {
                    symbol: "amdsmi_get_lib_version",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            e.to_string().contains("has no `amdsmi_get_lib_version`"),
            "{e}"
        );
    }
}
