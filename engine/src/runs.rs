//! Where runs keep their raw spools: each run a file of its own,
//! `run-<timestamp>-<pid>.rfraw` (the application's pid), in the pipeline's spool
//! directory, so no run overwrites another's, and `last.rfraw` beside them, a link to the
//! newest, so "the last run" is one short path for `replay`, `inspect`, `summary` and
//! `diff` (which also take the directory itself).

use std::io;
use std::path::{Path, PathBuf};

use crate::spool::SpoolWriter;

/// The link to the newest spool of a directory.
pub const LAST: &str = "last.rfraw";

/// Creates a new spool named `<stem>.rfraw` in `dir` (creating `dir`), never replacing
/// one: a name taken, by a run started the same second with the same pid on another
/// host sharing the directory, gets a number. Points `last.rfraw` at it.
pub fn create(dir: &Path, stem: &str) -> io::Result<(PathBuf, SpoolWriter)> {
    std::fs::create_dir_all(dir)?;
    let mut attempt = 1;
    let (path, writer) = loop {
        let name = match attempt {
            1 => format!("{stem}.rfraw"),
            n => format!("{stem}-{n}.rfraw"),
        };
        let path = dir.join(&name);
        match SpoolWriter::create_new(&path) {
            Ok(writer) => break (path, writer),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    point_last(dir, &path)?;
    Ok((path, writer))
}

/// Replaces `dir/last.rfraw` with a link to `spool` in one step (a link made aside, then
/// renamed over it), so a reader never finds it missing.
fn point_last(dir: &Path, spool: &Path) -> io::Result<()> {
    let target = spool.file_name().expect("a spool path names a file");
    let aside = dir.join(format!(".{LAST}.{}", std::process::id()));
    let _ = std::fs::remove_file(&aside);
    std::os::unix::fs::symlink(target, &aside)?;
    std::fs::rename(&aside, dir.join(LAST))
}

/// The spool a command line names: a directory means its newest run.
pub fn resolve(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(LAST)
    } else {
        path.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_never_replace_each_other_and_last_follows_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let (first, writer) = create(dir.path(), "run-x-1").unwrap();
        writer.finish().unwrap();
        let (second, writer) = create(dir.path(), "run-x-1").unwrap();
        writer.finish().unwrap();
        assert_ne!(first, second);
        assert!(first.is_file() && second.is_file());
        assert_eq!(
            std::fs::canonicalize(resolve(dir.path())).unwrap(),
            std::fs::canonicalize(&second).unwrap()
        );
        assert_eq!(resolve(&first), first);
    }
}
