//! Files written whole or not at all: under a hidden temporary name beside the target,
//! renamed into place once complete, so a reader never sees half a file.

use std::path::Path;

/// Writes `bytes` to `path`, creating its directory.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)?;
    }
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let staging = path.with_file_name(format!(".{name}.rocflow-{}", std::process::id()));
    std::fs::write(&staging, bytes)?;
    std::fs::rename(&staging, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&staging);
    })
}
