//! Outputs written whole or not at all: under a hidden staging name beside the target,
//! `.NAME.rocflow-PID`, moved into place once complete, so a reader never sees half a file.
//!
//! The move is durable, as SQLite's own commit is: what was staged is on the disk before
//! it takes the final name, and the name is on the disk before the move returns, so after
//! a power loss the final name holds the earlier output or the whole new one. A process
//! killed before it moved its output leaves the staged one behind; the next that stages
//! the same output removes it (see [`remove_abandoned`]).
//!
//! A file written with [`write`] has the mode an overwrite in place would give it: that of
//! the file it replaces (a definition file migrated in place stays 0644, a script stays
//! executable), or for a new file the umask's, as the shell's `>` gives.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Writes `bytes` to `path`, creating its directory.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)?;
    }
    remove_abandoned(path);
    let staging = staging_path(path);
    stage(&staging, path, bytes.as_ref())
        .and_then(|()| commit(&staging, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&staging);
        })
}

/// Writes `bytes` to `staging`, created with the umask's mode or given that of the file at
/// `replaced`.
fn stage(staging: &Path, replaced: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = File::create(staging)?;
    match std::fs::metadata(replaced) {
        Ok(earlier) => file.set_permissions(earlier.permissions())?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    file.write_all(bytes)
}

/// What parts a staging name's output name from its pid.
const SEPARATOR: &str = ".rocflow-";

/// Where this process stages the output `target`: `.NAME.rocflow-PID` beside it.
pub fn staging_path(target: &Path) -> PathBuf {
    let mut hidden = OsString::from(".");
    hidden.push(output_name(target));
    hidden.push(format!("{SEPARATOR}{}", std::process::id()));
    beside(target).join(hidden)
}

/// The name of the output `target` (`output` for a path without one, such as `..`).
fn output_name(target: &Path) -> &OsStr {
    target.file_name().unwrap_or(OsStr::new("output"))
}

/// The directory `target` goes in (`.` for a bare name).
fn beside(target: &Path) -> &Path {
    target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Removes what processes killed before they could move it into place (SIGKILL, the OOM
/// killer) left staged for `target`: every entry beside it named exactly as a staging of
/// `target` is, of a pid that no process has now. Stagings of other outputs are left
/// alone: beside an output on a file system that several nodes share, another node's pids
/// say nothing here, and only one run at a time writes one output.
///
/// A directory is read once per process, for all the outputs staged in it (a job's
/// thousands of per-process outputs share one): what is left staged there later, while
/// this process runs, is for the next run to remove.
pub fn remove_abandoned(target: &Path) {
    static FOUND: Mutex<BTreeMap<PathBuf, Stagings>> = Mutex::new(BTreeMap::new());
    let dir = beside(target);
    let found = {
        let mut found = FOUND.lock().unwrap_or_else(|e| e.into_inner());
        let in_dir = found
            .entry(dir.to_owned())
            .or_insert_with(|| stagings_in(dir));
        in_dir
            .remove(output_name(target).as_encoded_bytes())
            .unwrap_or_default()
    };
    for (pid, path, is_dir) in found {
        // This process's own staging, or another live one's.
        if alive(pid) {
            continue;
        }
        let _ = match is_dir {
            true => std::fs::remove_dir_all(path),
            false => std::fs::remove_file(path),
        };
    }
}

/// Stagings by the name of the output they stage (its bytes): each with its pid, its path,
/// and whether it is a directory.
type Stagings = BTreeMap<Vec<u8>, Vec<(u32, PathBuf, bool)>>;

/// The stagings in `dir`, abandoned or not: whether its process is alive is asked when a
/// staging is about to go.
fn stagings_in(dir: &Path) -> Stagings {
    #[cfg(test)]
    tests::READ.with_borrow_mut(|read| read.push(dir.to_owned()));
    let mut found = Stagings::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((output, pid)) = staged_output(&name) else {
            continue;
        };
        // An entry's own type, never what a link in its place points to.
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        let stagings = found.entry(output.to_vec()).or_default();
        stagings.push((pid, entry.path(), is_dir));
    }
    found
}

/// The name of the output a staging name `.NAME.rocflow-PID` stages, and its pid (digits
/// cannot hold the separator, so the last one ends the name).
fn staged_output(name: &OsStr) -> Option<(&[u8], u32)> {
    let separator = SEPARATOR.as_bytes();
    let bytes = name.as_encoded_bytes().strip_prefix(b".")?;
    let at = (bytes.windows(separator.len())).rposition(|w| w == separator)?;
    Some((&bytes[..at], pid(&bytes[at + separator.len()..])?))
}

/// The pid a staging name ends in: decimal digits only, of a pid that can be.
fn pid(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let pid: u32 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    (1..=i32::MAX as u32).contains(&pid).then_some(pid)
}

/// Whether a process `pid` exists (one of another user's, which may not be signalled, too).
fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
    let sent = unsafe { libc::kill(pid as libc::pid_t, 0) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Moves the complete output `staged` (a file, or a directory of them) to `target`,
/// durably: its files and directories are synced first, then it is renamed, then the
/// directory that holds the new name is synced.
pub fn commit(staged: &Path, target: &Path) -> std::io::Result<()> {
    rename_synced(staged, target)?;
    sync_beside(target)
}

/// [`commit`] but for its last step, for outputs that several moves into one directory
/// make: their names are durable once [`sync_beside`] of any of them returns.
pub fn rename_synced(staged: &Path, target: &Path) -> std::io::Result<()> {
    sync_tree(staged)?;
    std::fs::rename(staged, target)
}

/// Makes the names moved into the directory of `target` durable.
pub fn sync_beside(target: &Path) -> std::io::Result<()> {
    sync(beside(target))
}

/// Syncs `path`, and where it is a directory everything in it first.
fn sync_tree(path: &Path) -> std::io::Result<()> {
    if std::fs::symlink_metadata(path)?.is_dir() {
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            if !entry.file_type()?.is_symlink() {
                sync_tree(&entry.path())?;
            }
        }
    }
    sync(path)
}

/// Flushes a file's or a directory's contents (a directory's: its names) to the disk.
fn sync(path: &Path) -> std::io::Result<()> {
    #[cfg(test)]
    tests::SYNCED.with_borrow_mut(|synced| synced.push(path.to_owned()));
    File::open(path)?.sync_all()
}

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::RefCell;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    thread_local! {
        /// The paths synced on this thread, in order.
        pub(crate) static SYNCED: RefCell<Vec<PathBuf>> = const { RefCell::new(Vec::new()) };
        /// The directories read for stagings on this thread, in order.
        pub(super) static READ: RefCell<Vec<PathBuf>> = const { RefCell::new(Vec::new()) };
    }

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

    /// A staged output is on the disk before it takes its name, each of its files and
    /// directories, and the name is on the disk before the commit returns: the directory
    /// that holds it is synced after the rename.
    #[test]
    fn a_commit_syncs_what_it_moves_then_the_directory_of_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let staged = dir.path().join(".out.rocflow-1");
        std::fs::create_dir_all(staged.join("kernels")).unwrap();
        std::fs::write(staged.join("kernels/part-0.parquet"), "rows").unwrap();
        std::fs::write(staged.join("meta.json"), "{}").unwrap();
        let target = dir.path().join("out");
        SYNCED.with_borrow_mut(Vec::clear);
        commit(&staged, &target).unwrap();
        let synced = SYNCED.take();
        let (last, moved) = synced.split_last().unwrap();
        assert_eq!(last, dir.path(), "{synced:?}");
        let mut moved = moved.to_vec();
        moved.sort();
        let mut want = [
            staged.clone(),
            staged.join("kernels"),
            staged.join("kernels/part-0.parquet"),
            staged.join("meta.json"),
        ];
        want.sort();
        assert_eq!(moved, want);
        assert_eq!(
            std::fs::read_to_string(target.join("kernels/part-0.parquet")).unwrap(),
            "rows"
        );

        // A file written whole goes the same way.
        let path = dir.path().join("summary.md");
        write(&path, "# Run summary\n").unwrap();
        assert_eq!(SYNCED.take(), [staging_path(&path), dir.path().to_owned()]);
    }

    /// A pid no process has: a child's, once it has been waited for.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        child.id()
    }

    /// What killed processes left staged for an output goes when the output is staged
    /// again; a live process's staging stays, and so does everything not named exactly as
    /// a staging of that output. The directory is read once for all its outputs.
    #[test]
    fn stagings_of_processes_gone_are_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (dead, me) = (dead_pid(), std::process::id());
        let mut live = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let gone = [
            format!(".run.db.rocflow-{dead}"),
            format!(".run.db.rocflow-{}", dead_pid()),
        ];
        let kept = [
            format!(".run.db.rocflow-{}", live.id()),
            format!(".run.db.rocflow-{me}"),
            format!(".other.db.rocflow-{dead}"),
            format!("run.db.rocflow-{dead}"),
            format!(".run.db.rocflow-{dead}.bak"),
            format!(".run.db.rocflow-+{dead}"),
            format!(".run.db.rocflow-x{dead}"),
            ".run.db.rocflow-".to_owned(),
            ".run.db.rocflow-0".to_owned(),
            ".run.db.rocflow-99999999999".to_owned(),
            "run.db".to_owned(),
        ];
        for name in gone.iter().chain(&kept) {
            std::fs::write(d.join(name), "x").unwrap();
        }
        // A staged directory, as a Parquet dataset's, with files in it.
        let dataset = d.join(format!(".tables.rocflow-{dead}"));
        std::fs::create_dir_all(dataset.join("kernels")).unwrap();
        std::fs::write(dataset.join("kernels/part-0.parquet"), "x").unwrap();
        // A link named as a staging goes, not what it points to.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        let link = d.join(format!(".tables.rocflow-{}", dead_pid()));
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();

        READ.with_borrow_mut(Vec::clear);
        remove_abandoned(&d.join("run.db"));
        remove_abandoned(&d.join("tables"));
        remove_abandoned(&d.join("other"));
        assert_eq!(READ.take(), [d]);
        live.kill().unwrap();
        live.wait().unwrap();
        let mut left: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut want = kept.to_vec();
        want.sort();
        assert_eq!(left, want);
        assert!(outside.path().join("keep").exists());
    }
}
