//! The target's rocprofiler-register, read from outside: AMD's process attachment calls
//! two of its functions in the target by ptrace, which exist only in the releases that
//! came with rocprofiler-sdk 1.1's attachment (ROCm 7.1). An older one (the real SDK kit's
//! 0.5.0, for one) has neither, so no process that loads it can be attached to, however it
//! was started; its dynamic symbols tell, without running any of it.

use std::path::{Path, PathBuf};

use object::read::ReadCache;
use object::{Object, ObjectSymbol};

/// AMD's registration library, which every ROCm runtime loads.
pub const LIBRARY: &str = "librocprofiler-register.so";
/// What an attach and a detach call in the target.
pub const ENTRY_POINTS: [&str; 2] = ["rocprofiler_register_attach", "rocprofiler_register_detach"];

/// The rocprofiler-register file a process mapped, from its `/proc/PID/maps`.
pub fn mapped(maps: &str) -> Option<PathBuf> {
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(Path::new)
        .find(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with(LIBRARY))
        })
        .map(Path::to_path_buf)
}

/// The version in a library's file name (`….so.0.5.0`: `0.5.0`).
pub fn version(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    let (_, version) = name.split_once(".so.")?;
    let numeric = version
        .split('.')
        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    numeric.then(|| version.to_owned())
}

/// The entry points `path` does not export; `None` when it cannot be read as ELF (the
/// process's file gone or unreadable), which tells nothing either way.
pub fn missing_entry_points(path: &Path) -> Option<Vec<&'static str>> {
    let file = std::fs::File::open(path).ok()?;
    let cache = ReadCache::new(file);
    let library = object::File::parse(&cache).ok()?;
    let exported: Vec<Vec<u8>> = (library.dynamic_symbols())
        .filter(|symbol| symbol.is_definition() && symbol.is_global())
        .filter_map(|symbol| symbol.name_bytes().ok().map(<[u8]>::to_vec))
        .collect();
    let missing = (ENTRY_POINTS.into_iter())
        .filter(|entry| !exported.iter().any(|name| name == entry.as_bytes()))
        .collect();
    Some(missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mapped_library_and_its_version_are_read_from_the_maps() {
        let maps = "7f00-7f01 r--p 00000000 08:01 12 /usr/lib/libc.so.6\n\
                    7f02-7f03 r-xp 00001000 08:01 34 /opt/rocm/lib/librocprofiler-register.so.0.5.0\n\
                    7f04-7f05 rw-p 00000000 00:00 0 \n";
        let path = mapped(maps).unwrap();
        assert_eq!(
            path,
            Path::new("/opt/rocm/lib/librocprofiler-register.so.0.5.0")
        );
        assert_eq!(version(&path).as_deref(), Some("0.5.0"));
        assert_eq!(version(Path::new("/lib/librocprofiler-register.so")), None);
        assert_eq!(
            mapped("7f00-7f01 r--p 00000000 08:01 12 /usr/lib/libc.so.6\n"),
            None
        );
    }

    #[test]
    fn a_file_that_is_not_elf_tells_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("librocprofiler-register.so.0");
        std::fs::write(&path, "not a library").unwrap();
        assert_eq!(missing_entry_points(&path), None);
    }
}
