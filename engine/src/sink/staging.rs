//! Output written in a hidden sibling directory of its final path and moved there only when
//! complete, so a failed run leaves nothing half-written where the output belongs: staged,
//! moved durably and cleaned up after, as [`crate::atomic`] does it.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::atomic;
use crate::sink::SinkError;

pub struct Staging {
    target: PathBuf,
    dir: PathBuf,
    committed: bool,
}

impl Staging {
    pub fn create(target: PathBuf) -> Result<Staging, SinkError> {
        atomic::remove_abandoned(&target);
        let dir = atomic::staging_path(&target);
        std::fs::create_dir_all(&dir)
            .map_err(SinkError::io(format!("creating {}", dir.display())))?;
        Ok(Staging {
            target,
            dir,
            committed: false,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Where an output that is one file is written: its final name, in the staging
    /// directory.
    pub fn file(&self) -> PathBuf {
        self.dir.join(file_name(&self.target))
    }

    /// The names of what has been written in the staging directory.
    pub fn entries(&self) -> Result<Vec<OsString>, SinkError> {
        let context = || format!("reading {}", self.dir.display());
        std::fs::read_dir(&self.dir)
            .map_err(SinkError::io(context()))?
            .map(|entry| Ok(entry.map_err(SinkError::io(context()))?.file_name()))
            .collect()
    }

    /// Where a path in the staging directory will be once the output is committed with
    /// [`Staging::commit_files`]; other paths are left as they are.
    pub fn committed_path(&self, staged: PathBuf) -> PathBuf {
        match staged.strip_prefix(&self.dir) {
            Ok(inside) => beside(&self.target).join(inside),
            Err(_) => staged,
        }
    }

    /// Moves the output to its final path, replacing an earlier output there that
    /// `earlier` recognizes; anything else there is left alone and reported.
    pub fn commit(mut self, earlier: impl Fn(&Path) -> bool) -> Result<(), SinkError> {
        let target = &self.target;
        if target.exists() {
            if !earlier(target) {
                return Err(SinkError::NameClash {
                    context: format!("writing {}", target.display()),
                    reason: "it exists and is not an earlier output of this sink; remove it \
                             or choose another path"
                        .into(),
                });
            }
            std::fs::remove_dir_all(target)
                .map_err(SinkError::io(format!("replacing {}", target.display())))?;
        }
        atomic::commit(&self.dir, target).map_err(SinkError::io(format!(
            "moving output to {}",
            target.display()
        )))?;
        self.committed = true;
        Ok(())
    }
}

impl Staging {
    /// Moves the files `names` of the output beside its final path (replacing files of
    /// those names there), for outputs that are files rather than a directory; returns
    /// their paths.
    pub fn commit_files(mut self, names: &[impl AsRef<OsStr>]) -> Result<Vec<PathBuf>, SinkError> {
        let parent = beside(&self.target);
        let mut paths = Vec::with_capacity(names.len());
        for name in names.iter().map(AsRef::as_ref) {
            let path = parent.join(name);
            atomic::rename_synced(&self.dir.join(name), &path).map_err(SinkError::io(format!(
                "moving output to {}",
                path.display()
            )))?;
            paths.push(path);
        }
        // Once for all the names, which are in one directory.
        if let Some(path) = paths.first() {
            atomic::sync_beside(path).map_err(SinkError::io(format!(
                "moving output to {}",
                path.display()
            )))?;
        }
        self.committed = true;
        std::fs::remove_dir(&self.dir)
            .map_err(SinkError::io(format!("removing {}", self.dir.display())))?;
        Ok(paths)
    }
}

/// The output's name: its path's last component.
fn file_name(target: &Path) -> &OsStr {
    target.file_name().unwrap_or(OsStr::new("output"))
}

/// The directory the output goes in.
fn beside(target: &Path) -> &Path {
    target.parent().unwrap_or(Path::new(""))
}

impl Drop for Staging {
    /// Output that was not committed is removed.
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is at the output's path and not this sink's is a name clash, said as before
    /// errors had kinds; the staged output is dropped and the file left as it was.
    #[test]
    fn a_foreign_file_at_the_path_is_a_name_clash() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        std::fs::write(&target, "mine").unwrap();
        let staging = Staging::create(target.clone()).unwrap();
        let staged = staging.dir().to_owned();
        let error = staging.commit(|_| false).unwrap_err();
        assert!(matches!(error, SinkError::NameClash { .. }), "{error:?}");
        assert_eq!(
            error.to_string(),
            format!(
                "writing {}: it exists and is not an earlier output of this sink; remove it or \
                 choose another path",
                target.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
        assert!(!staged.exists());
    }

    /// Files moved beside their output's path are each on the disk before they take their
    /// names, and the directory of the names is synced once, after the last: not per file.
    #[test]
    fn files_committed_together_sync_their_directory_once() {
        use crate::atomic::tests::SYNCED;
        let dir = tempfile::tempdir().unwrap();
        let staging = Staging::create(dir.path().join("trace.pftrace")).unwrap();
        let names = ["trace.pftrace", "trace.1.pftrace", "trace.2.pftrace"];
        for name in names {
            std::fs::write(staging.dir().join(name), name).unwrap();
        }
        let staged: Vec<PathBuf> = names.iter().map(|n| staging.dir().join(n)).collect();
        SYNCED.with_borrow_mut(Vec::clear);
        let paths = staging.commit_files(&names).unwrap();
        assert_eq!(
            SYNCED.take(),
            [staged, vec![dir.path().to_owned()]].concat()
        );
        for (path, name) in paths.iter().zip(names) {
            assert_eq!(std::fs::read_to_string(path).unwrap(), name);
        }
        let left = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(left, names.len(), "the staging directory is gone");
    }
}
