//! Files written whole or not at all: under a hidden temporary name beside the target,
//! renamed into place once complete, so a reader never sees half a file.
//!
//! The file that results has the mode an overwrite in place would give it: that of the
//! file it replaces (a definition file migrated in place stays 0644, a script stays
//! executable), or for a new file the umask's, as the shell's `>` gives.

use std::io::Write;
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
    stage(&staging, path, bytes.as_ref())
        .and_then(|()| std::fs::rename(&staging, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&staging);
        })
}

/// Writes `bytes` to `staging`, created with the umask's mode or given that of the file at
/// `replaced`, and flushes them to the disk: renamed over a file, it holds them after a
/// crash too.
fn stage(staging: &Path, replaced: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::File::create(staging)?;
    match std::fs::metadata(replaced) {
        Ok(earlier) => file.set_permissions(earlier.permissions())?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    /// The process's umask, as Linux reports it (setting it to read it would race with
    /// the tests that create files meanwhile).
    fn umask() -> u32 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find_map(|l| l.strip_prefix("Umask:"));
        u32::from_str_radix(line.expect("a Umask line").trim(), 8).unwrap()
    }

    #[test]
    fn a_replacement_keeps_the_replaced_files_mode_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.yaml");
        for kept in [0o644, 0o600, 0o755] {
            std::fs::write(&path, "old").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(kept)).unwrap();
            write(&path, "new\n").unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
            assert_eq!(mode(&path), kept, "{kept:o}");
        }
        let entries = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(entries, 1, "no temporary file is left behind");
    }

    #[test]
    fn a_new_file_has_the_umasks_mode_and_its_directory_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/new.csv");
        write(&path, "x").unwrap();
        assert_eq!(mode(&path), 0o666 & !umask());
    }

    #[test]
    fn a_failed_write_leaves_the_earlier_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        std::fs::create_dir(&path).unwrap();
        // A directory cannot be replaced by a file.
        assert!(write(&path, "x").is_err());
        assert!(path.is_dir());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
