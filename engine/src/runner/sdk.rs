//! Which rocprofiler-sdk an application profiled on a GPU runs with: found where ROCm puts
//! it, checked against the oldest the tool supports, and named to rocprofiler-register
//! (`ROCPROFILER_REGISTER_LIBRARY`), so that the application loads the SDK rocflow reports
//! rather than whichever its loader happens to find.

use std::path::{Path, PathBuf};

use rocflow_core::abi::MIN_SDK_VERSION;

/// The library's name; the installed file carries its version (`.so.1.0.0`).
const LIBRARY: &str = "librocprofiler-sdk.so";

/// An installed rocprofiler-sdk.
#[derive(Debug, Clone, PartialEq)]
pub struct Sdk {
    /// The library file, links resolved.
    pub path: PathBuf,
    /// From the file's name; `None` when it does not say.
    pub version: Option<Version>,
    /// How it was found, for the user.
    pub found_by: String,
}

pub use rocflow_core::sdk::SdkVersion as Version;

/// The oldest rocprofiler-sdk rocflow's tool supports.
pub const MIN: Version = Version(MIN_SDK_VERSION.0, MIN_SDK_VERSION.1, MIN_SDK_VERSION.2);

/// Why no usable SDK was found.
#[derive(Debug, thiserror::Error)]
pub enum SdkError {
    #[error("no rocprofiler-sdk found (looked in {})", .searched.join(", "))]
    Missing { searched: Vec<String> },
    #[error("rocprofiler-sdk {found} at {} is older than rocflow supports ({MIN} or later)", .path.display())]
    TooOld { found: Version, path: PathBuf },
}

/// Looks where ROCm installs rocprofiler-sdk, in the order a user steers it: the library
/// `ROCPROFILER_REGISTER_LIBRARY` names, `$ROCM_PATH/lib`, the directories of
/// `LD_LIBRARY_PATH`, ROCm's Python wheels in the active virtual or conda environment,
/// `/opt/rocm/lib`, then the system loader's cache.
pub fn find(env: impl Fn(&str) -> Option<String>) -> Result<Sdk, SdkError> {
    find_under(Path::new("/"), env)
}

/// [`find`] on the machine whose files lie under `root` (`/` for this one): every absolute
/// path, those the environment names included, is read below it. The loader's cache
/// describes this machine only, so it is asked only when `root` is `/`.
pub fn find_under(root: &Path, env: impl Fn(&str) -> Option<String>) -> Result<Sdk, SdkError> {
    let at = |path: &Path| rooted(root, path);
    let mut places: Vec<(PathBuf, String)> = Vec::new();
    if let Some(file) = env("ROCPROFILER_REGISTER_LIBRARY").filter(|f| !f.is_empty()) {
        places.push((at(Path::new(&file)), "ROCPROFILER_REGISTER_LIBRARY".into()));
    }
    if let Some(rocm) = env("ROCM_PATH").filter(|p| !p.is_empty()) {
        let dir = at(Path::new(&rocm)).join("lib");
        places.push((dir.join(LIBRARY), "ROCM_PATH".into()));
    }
    for dir in env("LD_LIBRARY_PATH").unwrap_or_default().split(':') {
        if !dir.is_empty() {
            places.push((at(Path::new(dir)).join(LIBRARY), "LD_LIBRARY_PATH".into()));
        }
    }
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = env(var).filter(|p| !p.is_empty()) {
            for lib in wheel_libraries(&at(Path::new(&prefix))) {
                places.push((lib.join(LIBRARY), format!("ROCm's Python wheels in {var}")));
            }
        }
    }
    places.push((
        at(Path::new("/opt/rocm/lib")).join(LIBRARY),
        "/opt/rocm".into(),
    ));
    if root == Path::new("/") {
        if let Some(cached) = loader_cache() {
            places.push((cached, "the system loader's cache".into()));
        }
    }
    let found = places.iter().find_map(|(file, how)| {
        let path = installed(file)?;
        Some(Sdk {
            version: version(&path),
            path,
            found_by: how.clone(),
        })
    });
    let sdk = found.ok_or_else(|| SdkError::Missing {
        searched: places
            .iter()
            .map(|(f, _)| f.display().to_string())
            .collect(),
    })?;
    match sdk.version {
        Some(found) if found < MIN => Err(SdkError::TooOld {
            found,
            path: sdk.path,
        }),
        _ => Ok(sdk),
    }
}

/// `path` on the machine under `root`; a relative path stays relative to the working
/// directory.
pub fn rooted(root: &Path, path: &Path) -> PathBuf {
    match path.strip_prefix("/") {
        Ok(inside) => root.join(inside),
        Err(_) => path.to_path_buf(),
    }
}

/// The library directories of ROCm's Python wheels in the Python environment at `prefix`:
/// `_rocm_sdk_core` (`pip install rocm[libraries]`) holds rocprofiler-sdk, and
/// `_rocm_sdk_devel` links into it once `rocm-sdk init` has run.
fn wheel_libraries(prefix: &Path) -> Vec<PathBuf> {
    let mut pythons: Vec<PathBuf> = std::fs::read_dir(prefix.join("lib"))
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            (path.file_name().and_then(|n| n.to_str())).is_some_and(|n| n.starts_with("python3"))
        })
        .collect();
    pythons.sort();
    let mut dirs = Vec::new();
    for python in pythons {
        for site in ["site-packages", "dist-packages"] {
            for package in ["_rocm_sdk_core", "_rocm_sdk_devel"] {
                let lib = python.join(site).join(package).join("lib");
                if lib.is_dir() {
                    dirs.push(lib);
                }
            }
        }
    }
    dirs
}

/// The version in a library's file name (`librocprofiler-sdk.so.1.0.0`).
fn version(path: &Path) -> Option<Version> {
    let name = path.file_name()?.to_str()?;
    let numbers: Vec<u32> = name
        .strip_prefix(LIBRARY)?
        .strip_prefix('.')?
        .split('.')
        .map(|n| n.parse().ok())
        .collect::<Option<_>>()?;
    match numbers[..] {
        [major, minor, patch] => Some(Version(major, minor, patch)),
        _ => None,
    }
}

/// The library `file` names, or, where that is missing or no library, one beside it with
/// a version: the unversioned link comes with ROCm's development package only, while the
/// runtime has the soname (`.so.1`) and the versioned file, which is then taken newest first.
fn installed(file: &Path) -> Option<PathBuf> {
    let name = file.file_name()?.to_str()?;
    let mut beside: Vec<(Option<Version>, PathBuf)> = std::fs::read_dir(file.parent()?)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            (path.file_name().and_then(|n| n.to_str()))
                .is_some_and(|n| n.starts_with(name) && n[name.len()..].starts_with('.'))
        })
        .map(|path| (version(&path), path))
        .collect();
    beside.sort_by(|a, b| b.cmp(a));
    std::iter::once(file.to_path_buf())
        .chain(beside.into_iter().map(|(_, path)| path))
        .filter_map(|path| path.canonicalize().ok())
        .find(|path| is_shared_library(path))
}

/// Whether `path` is an ELF file (and not, say, a copied link's text).
fn is_shared_library(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path).is_ok_and(|mut f| f.read_exact(&mut magic).is_ok())
        && magic == *b"\x7fELF"
}

/// Where the system loader's cache (`ldconfig -p`) has the SDK, if it has it.
fn loader_cache() -> Option<PathBuf> {
    let out = ["/sbin/ldconfig", "ldconfig"]
        .iter()
        .find_map(|ldconfig| std::process::Command::new(ldconfig).arg("-p").output().ok())?;
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    listing.lines().find_map(|line| {
        let (name, path) = line.trim().split_once(" => ")?;
        name.starts_with(LIBRARY).then(|| PathBuf::from(path))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_the_installed_file_names() {
        let v = |name: &str| version(Path::new(name));
        assert_eq!(
            v("/opt/rocm/lib/librocprofiler-sdk.so.1.0.0"),
            Some(Version(1, 0, 0))
        );
        assert_eq!(v("librocprofiler-sdk.so.0.6.0"), Some(Version(0, 6, 0)));
        assert_eq!(v("librocprofiler-sdk.so.1"), None);
        assert_eq!(v("librocprofiler-sdk.so"), None);
        assert!(Version(0, 6, 0) < MIN && MIN <= Version(1, 0, 0));
    }

    #[test]
    fn a_runtime_install_without_the_unversioned_link_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let lib = |name: &str, bytes: &[u8]| std::fs::write(dir.path().join(name), bytes).unwrap();
        // Links copied as their text, and two versions installed side by side.
        lib("librocprofiler-sdk.so", b"librocprofiler-sdk.so.1");
        lib("librocprofiler-sdk.so.1", b"librocprofiler-sdk.so.1.0.0");
        lib("librocprofiler-sdk.so.0.6.0", b"\x7fELF");
        lib("librocprofiler-sdk.so.1.0.0", b"\x7fELF");
        lib("librocprofiler-sdk-roctx.so.1.0.0", b"\x7fELF");
        let found = installed(&dir.path().join(LIBRARY)).unwrap();
        assert_eq!(found.file_name().unwrap(), "librocprofiler-sdk.so.1.0.0");
        assert_eq!(version(&found), Some(Version(1, 0, 0)));
        assert_eq!(
            installed(&dir.path().join("librocprofiler-register.so")),
            None
        );
    }

    #[test]
    fn rocm_wheels_in_the_active_virtual_environment_are_found() {
        let root = tempfile::tempdir().unwrap();
        let lib = root
            .path()
            .join("home/u/venv/lib/python3.12/site-packages/_rocm_sdk_core/lib");
        std::fs::create_dir_all(&lib).unwrap();
        // The wheels carry the soname only, without the unversioned link.
        std::fs::write(lib.join("librocprofiler-sdk.so.1"), b"\x7fELF").unwrap();
        let env = |name: &str| (name == "VIRTUAL_ENV").then(|| "/home/u/venv".to_string());
        let sdk = find_under(root.path(), env).unwrap();
        assert_eq!(
            sdk.path,
            lib.join("librocprofiler-sdk.so.1").canonicalize().unwrap()
        );
        assert_eq!(sdk.found_by, "ROCm's Python wheels in VIRTUAL_ENV");
        // Without the environment active, the wheels are not this machine's ROCm.
        assert!(matches!(
            find_under(root.path(), |_| None),
            Err(SdkError::Missing { .. })
        ));
    }
}
