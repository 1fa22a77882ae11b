//! Descriptors that a run's outputs share. A sink whose path names each process writes a
//! file per process: thousands of files for a job of thousands of processes, more than a
//! process may hold open (1,024 is a common limit). A [`PooledFile`] holds a descriptor
//! only while it is among the [`capacity`] files opened most recently; past them, the file
//! opened longest ago is closed, and opened again when it is next used.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use crate::writeback::Writeback;

/// The files held open at once, at most: a quarter of the descriptors the process may
/// open, the rest being for the runner's streams, the spool and SQLite.
fn capacity() -> usize {
    static CAPACITY: OnceLock<usize> = OnceLock::new();
    *CAPACITY.get_or_init(|| (limit() / 4).clamp(4, 4096) as usize)
}

/// The descriptors this process may open (its soft limit); the usual 1,024 if unknown.
pub fn limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a writable rlimit for the call to fill in.
    match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => limit.rlim_cur,
        _ => 1024,
    }
}

/// The files holding a descriptor, the one opened longest ago first.
fn pool() -> &'static Mutex<VecDeque<Arc<Slot>>> {
    static POOL: OnceLock<Mutex<VecDeque<Arc<Slot>>>> = OnceLock::new();
    POOL.get_or_init(|| Mutex::new(VecDeque::with_capacity(capacity())))
}

/// A file's descriptor, while it has one: shared by the threads that read and write the
/// file at their offsets, taken away by the pool alone.
#[derive(Default)]
struct Slot(RwLock<Option<File>>);

/// A file read and written at offsets (or appended to, through [`Write`]), which holds a
/// descriptor only while the pool has one for it.
pub struct PooledFile {
    path: PathBuf,
    slot: Arc<Slot>,
    /// Where [`Write`] appends.
    end: u64,
    writeback: Writeback,
}

impl PooledFile {
    /// Creates the file at `path`, empty.
    pub fn create(path: &Path) -> io::Result<PooledFile> {
        File::create(path)?;
        PooledFile::open(path)
    }

    /// Opens the file at `path`, to read and write.
    pub fn open(path: &Path) -> io::Result<PooledFile> {
        let mut file = PooledFile {
            path: path.to_owned(),
            slot: Arc::default(),
            end: 0,
            writeback: Writeback::default(),
        };
        file.end = file.at(|file| Ok(file.metadata()?.len()))?;
        Ok(file)
    }

    /// Runs `act` on the file's descriptor, opening it again if the pool closed it.
    pub fn at<T>(&self, act: impl FnOnce(&File) -> io::Result<T>) -> io::Result<T> {
        loop {
            {
                let slot = self.slot.0.read().unwrap();
                if let Some(file) = slot.as_ref() {
                    return act(file);
                }
            }
            self.reopen()?;
        }
    }

    /// Writes `bytes` at `offset`, sent towards the disk as they add up (see [`Writeback`]).
    pub fn write_all_at(&self, bytes: &[u8], offset: u64) -> io::Result<()> {
        self.at(|file| {
            file.write_all_at(bytes, offset)?;
            self.writeback.wrote(file, bytes.len());
            Ok(())
        })
    }

    /// Gives the file a descriptor, closing the file that has held one longest if the
    /// pool is full.
    fn reopen(&self) -> io::Result<()> {
        let mut pool = pool().lock().unwrap();
        if self.slot.0.read().unwrap().is_some() {
            return Ok(());
        }
        if pool.len() >= capacity()
            && let Some(oldest) = pool.pop_front()
        {
            // Waits for what that file's users are doing with it to end.
            oldest.0.write().unwrap().take();
        }
        let opened = OpenOptions::new().read(true).write(true).open(&self.path)?;
        *self.slot.0.write().unwrap() = Some(opened);
        pool.push_back(Arc::clone(&self.slot));
        Ok(())
    }
}

impl Write for PooledFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let end = self.end;
        let written = self.at(|file| {
            let written = file.write_at(bytes, end)?;
            self.writeback.wrote(file, written);
            Ok(written)
        })?;
        self.end += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for PooledFile {
    fn drop(&mut self) {
        let mut pool = pool().lock().unwrap();
        pool.retain(|slot| !Arc::ptr_eq(slot, &self.slot));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More files than the pool holds are written in turns, each whole and in order.
    #[test]
    fn files_beyond_the_pool_are_written_in_turns() {
        let dir = tempfile::tempdir().unwrap();
        let count = capacity() + 5;
        let mut files: Vec<PooledFile> = (0..count)
            .map(|i| PooledFile::create(&dir.path().join(i.to_string())).unwrap())
            .collect();
        for round in 0..3 {
            for (i, file) in files.iter_mut().enumerate() {
                write!(file, "{i}:{round};").unwrap();
            }
        }
        // Read back through the pool, and changed in place.
        for (i, file) in files.iter().enumerate() {
            let mut first = [0u8; 1];
            file.at(|f| f.read_exact_at(&mut first, 0)).unwrap();
            assert_eq!(first[0], i.to_string().as_bytes()[0]);
            file.at(|f| f.write_all_at(b"#", 0)).unwrap();
        }
        let open = pool().lock().unwrap().len();
        assert!(open <= capacity(), "{open} files hold a descriptor");
        drop(files);
        for i in 0..count {
            let text = std::fs::read_to_string(dir.path().join(i.to_string())).unwrap();
            let want = format!("{i}:0;{i}:1;{i}:2;");
            assert_eq!(text, format!("#{}", &want[1..]));
        }
    }
}
