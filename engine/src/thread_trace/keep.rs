//! A run's thread traces and code objects, taken from its spool (where every frame the
//! tool sent is) and kept as files in the thread-trace folder, under rocprofv3's names:
//! `{pid}_{agent}_shader_engine_{se}_{dispatch}.att` for one shader engine's trace of a
//! dispatch, `{pid}_code_object_id_{id}.out` for a code object. rocprofv3 (SDK 1.0) has
//! no device mode; a device trace is named as a dispatch's, its window in the dispatch's
//! place after `device_`: `{pid}_{agent}_shader_engine_{se}_device_{window}.att`. The spool is untrusted:
//! a piece must continue its file where the last one ended, and every name is built from
//! numbers, so nothing it says becomes a path outside the folder.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use rocflow_core::spool::SpoolReader;
use rocflow_core::thread_trace::{TraceData, TracePart, Traced};
use rocflow_core::wire::Payload;

use crate::catalog::Catalog;
use crate::sink::Placeholders;

/// What a run's spool held of thread traces, as kept.
#[derive(Debug, Default)]
pub struct Kept {
    pub traces: Vec<KeptTrace>,
    pub code_objects: Vec<KeptCodeObject>,
    /// Pieces left out, and why (the first few).
    pub refused: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeptTrace {
    pub stream: u16,
    pub agent: u32,
    pub shader_engine: u32,
    pub traced: Traced,
    pub path: PathBuf,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeptCodeObject {
    pub stream: u16,
    pub id: u64,
    pub load_base: u64,
    pub load_size: u64,
    pub path: PathBuf,
    pub bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum KeepError {
    #[error("reading the spool {}: {source}", .path.display())]
    Spool {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// At most this many refused pieces are described.
const REFUSALS_SAID: usize = 5;

/// At most this many files are kept from one spool: a spool may come from elsewhere, and
/// one that names endless traces must not fill the disk with files. A real run of
/// thousands of dispatches on every shader engine stays far below it.
pub const MAX_FILES: usize = 1 << 20;

/// Keeps the traces of the spool at `spool` in the folder `template` names (placeholders
/// filled per process from `catalog`).
pub fn keep(template: &str, spool: &Path, catalog: &Catalog) -> Result<Kept, KeepError> {
    keep_at_most(template, spool, catalog, MAX_FILES)
}

/// A kept file's bytes so far and its entry in [`Kept`].
struct Held {
    bytes: u64,
    entry: usize,
}

/// The one kept file open for writing. The pieces of one file come together, so a file
/// is closed when a piece of another comes and reopened to append if it comes back: a
/// run's thousands of traces never hold thousands of descriptors (1024 by default).
#[derive(Default)]
struct Writing {
    open: Option<(PathBuf, File)>,
}

impl Writing {
    /// Appends `bytes` to the file at `path`, created when `new`.
    fn append(&mut self, path: &Path, new: bool, bytes: &[u8]) -> std::io::Result<()> {
        let file = match &mut self.open {
            Some((open, file)) if open == path => file,
            _ => {
                self.open = None;
                let file = if new {
                    File::create(path)?
                } else {
                    OpenOptions::new().append(true).open(path)?
                };
                &mut self.open.insert((path.to_owned(), file)).1
            }
        };
        file.write_all(bytes)
    }
}

/// [`keep`], creating at most `limit` files.
fn keep_at_most(
    template: &str,
    spool: &Path,
    catalog: &Catalog,
    limit: usize,
) -> Result<Kept, KeepError> {
    let read_error = |source| KeepError::Spool {
        path: spool.to_owned(),
        source,
    };
    let reader = SpoolReader::open(spool).map_err(|e| read_error(std::io::Error::other(e)))?;
    let run = Placeholders::for_run(catalog);
    let mut kept = Kept::default();
    let mut held: HashMap<PathBuf, Held> = HashMap::new();
    let mut writing = Writing::default();
    let mut beyond_limit = false;
    for frame in reader {
        let frame = frame.map_err(read_error)?;
        let Payload::Trace(data) = frame.payload else {
            continue;
        };
        let stream = frame.stream;
        let placeholders = match &catalog.stream(stream).process {
            Some(process) => run.for_process(process),
            None => run.clone(),
        };
        let dir = placeholders.expand(template);
        let pid = placeholders.pid;
        let path = dir.join(file_name(pid, &data));
        let known = held.get(&path).map(|h| h.bytes);
        if known.is_none() && held.len() >= limit {
            // Every piece of a file beyond the limit is left out; one refusal says so.
            if !beyond_limit && kept.refused.len() < REFUSALS_SAID {
                kept.refused.push(format!(
                    "{} and every later file: the spool holds more than {limit} files",
                    path.display()
                ));
            }
            beyond_limit = true;
            continue;
        }
        let bytes = known.unwrap_or(0);
        if data.offset != bytes {
            if kept.refused.len() < REFUSALS_SAID {
                kept.refused.push(format!(
                    "a piece of {} starts at byte {}, where the file holds {bytes}",
                    path.display(),
                    data.offset
                ));
            }
            continue;
        }
        let write_error = |source| KeepError::Write {
            path: path.clone(),
            source,
        };
        if known.is_none() {
            std::fs::create_dir_all(&dir).map_err(write_error)?;
        }
        writing
            .append(&path, known.is_none(), &data.bytes)
            .map_err(write_error)?;
        let total = bytes + data.bytes.len() as u64;
        let file = match held.get_mut(&path) {
            Some(file) => file,
            None => {
                let entry = record(&mut kept, stream, &data, path.clone());
                held.entry(path).or_insert(Held { bytes: 0, entry })
            }
        };
        file.bytes = total;
        match data.what {
            TracePart::ShaderData { .. } => kept.traces[file.entry].bytes = total,
            TracePart::CodeObject { .. } => kept.code_objects[file.entry].bytes = total,
        }
    }
    Ok(kept)
}

/// rocprofv3's name of the file a piece belongs to.
fn file_name(pid: u32, data: &TraceData) -> String {
    match data.what {
        TracePart::ShaderData {
            agent,
            shader_engine,
            traced: Traced::Dispatch(dispatch_id),
        } => format!("{pid}_{agent}_shader_engine_{shader_engine}_{dispatch_id}.att"),
        TracePart::ShaderData {
            agent,
            shader_engine,
            traced: Traced::Device { window },
        } => format!("{pid}_{agent}_shader_engine_{shader_engine}_device_{window}.att"),
        TracePart::CodeObject { id, .. } => format!("{pid}_code_object_id_{id}.out"),
    }
}

/// Records the file a piece starts; its index in `kept`'s list of its kind.
fn record(kept: &mut Kept, stream: u16, data: &TraceData, path: PathBuf) -> usize {
    match data.what {
        TracePart::ShaderData {
            agent,
            shader_engine,
            traced,
        } => {
            kept.traces.push(KeptTrace {
                stream,
                agent,
                shader_engine,
                traced,
                path,
                bytes: 0,
            });
            kept.traces.len() - 1
        }
        TracePart::CodeObject {
            id,
            load_base,
            load_size,
            ..
        } => {
            kept.code_objects.push(KeptCodeObject {
                stream,
                id,
                load_base,
                load_size,
                path,
                bytes: 0,
            });
            kept.code_objects.len() - 1
        }
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use rocflow_core::spool::SpoolWriter;
    use rocflow_core::wire;

    use super::*;

    /// A spool holding `traces` traces of one dispatch each, in two pieces: every trace's
    /// first piece, then every trace's second, so each file is left and comes back.
    fn spool_of(dir: &Path, traces: u64) -> PathBuf {
        let path = dir.join("run.rfraw");
        let mut writer = SpoolWriter::create(&path).unwrap();
        for (piece, offset) in [(b"first ", 0), (b"second", 6)] {
            for dispatch in 0..traces {
                let data = TraceData {
                    what: TracePart::ShaderData {
                        agent: 1,
                        shader_engine: 0,
                        traced: Traced::Dispatch(dispatch),
                    },
                    offset,
                    bytes: piece.to_vec(),
                };
                let mut frame = Vec::new();
                wire::encode_trace(0, &data, &mut frame);
                writer.write(&frame).unwrap();
            }
        }
        writer.finish().unwrap();
        path
    }

    /// Set in the child process that runs a test under a low open-files limit.
    const LOW_LIMIT: &str = "ROCFLOW_TEST_LOW_NOFILE";

    /// Three hundred traces, each file left and reopened, are kept by a process that may
    /// hold only 64 files open at once.
    #[test]
    fn keeps_more_traces_than_files_may_be_open() {
        let name = "thread_trace::keep::tests::keeps_more_traces_than_files_may_be_open";
        if std::env::var_os(LOW_LIMIT).is_none() {
            let status = Command::new("sh")
                .args(["-c", "ulimit -n 64 && exec \"$0\" \"$@\""])
                .arg(std::env::current_exe().unwrap())
                .args(["--exact", name, "--nocapture", "--test-threads=1"])
                .env(LOW_LIMIT, "1")
                .status()
                .unwrap();
            assert!(status.success(), "the test under `ulimit -n 64` failed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let spool = spool_of(dir.path(), 300);
        let out = dir.path().join("traces");
        let kept = keep(out.to_str().unwrap(), &spool, &Catalog::default()).unwrap();
        assert_eq!(kept.refused, Vec::<String>::new());
        assert_eq!(kept.traces.len(), 300);
        for trace in &kept.traces {
            assert_eq!(std::fs::read(&trace.path).unwrap(), b"first second");
            assert_eq!(trace.bytes, 12);
        }
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 300);
    }

    /// Past the limit no file is created, and one refusal says why.
    #[test]
    fn a_spool_beyond_the_file_limit_is_refused_with_one_warning() {
        let dir = tempfile::tempdir().unwrap();
        let spool = spool_of(dir.path(), 5);
        let out = dir.path().join("traces");
        let kept = keep_at_most(out.to_str().unwrap(), &spool, &Catalog::default(), 3).unwrap();
        assert_eq!(kept.traces.len(), 3);
        assert!(kept.traces.iter().all(|t| t.bytes == 12));
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 3);
        let [refused] = kept.refused.as_slice() else {
            panic!("one refusal expected: {:?}", kept.refused);
        };
        assert!(
            refused.ends_with("and every later file: the spool holds more than 3 files"),
            "{refused}"
        );
    }
}
