//! A run's thread traces and code objects, taken from its spool (where every frame the
//! tool sent is) and kept as files in the thread-trace folder, under rocprofv3's names:
//! `{pid}_{agent}_shader_engine_{se}_{dispatch}.att` for one shader engine's trace of a
//! dispatch, `{pid}_code_object_id_{id}.out` for a code object. rocprofv3 (SDK 1.0) has
//! no device mode; a device trace is named as a dispatch's, its window in the dispatch's
//! place after `device_`: `{pid}_{agent}_shader_engine_{se}_device_{window}.att`. The spool is untrusted:
//! a piece must continue its file where the last one ended, and every name is built from
//! numbers, so nothing it says becomes a path outside the folder.

use std::collections::HashMap;
use std::fs::File;
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

/// Keeps the traces of the spool at `spool` in the folder `template` names (placeholders
/// filled per process from `catalog`).
pub fn keep(template: &str, spool: &Path, catalog: &Catalog) -> Result<Kept, KeepError> {
    let read_error = |source| KeepError::Spool {
        path: spool.to_owned(),
        source,
    };
    let reader = SpoolReader::open(spool).map_err(|e| read_error(std::io::Error::other(e)))?;
    let run = Placeholders::for_run(catalog);
    let mut kept = Kept::default();
    // Per file: its handle and the bytes it holds.
    let mut open: HashMap<PathBuf, (File, u64)> = HashMap::new();
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
        let held = open.get(&path).map_or(0, |(_, held)| *held);
        if data.offset != held {
            if kept.refused.len() < REFUSALS_SAID {
                kept.refused.push(format!(
                    "a piece of {} starts at byte {}, where the file holds {held}",
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
        if held == 0 {
            std::fs::create_dir_all(&dir).map_err(write_error)?;
            let file = File::create(&path).map_err(write_error)?;
            open.insert(path.clone(), (file, 0));
            record(&mut kept, stream, &data, path.clone());
        }
        let (file, held) = open.get_mut(&path).expect("opened above");
        file.write_all(&data.bytes).map_err(write_error)?;
        *held += data.bytes.len() as u64;
        let total = *held;
        match data.what {
            TracePart::ShaderData { .. } => {
                let trace = kept.traces.iter_mut().rev().find(|t| t.path == path);
                trace.expect("recorded when opened").bytes = total;
            }
            TracePart::CodeObject { .. } => {
                let code = kept.code_objects.iter_mut().rev().find(|c| c.path == path);
                code.expect("recorded when opened").bytes = total;
            }
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

fn record(kept: &mut Kept, stream: u16, data: &TraceData, path: PathBuf) {
    match data.what {
        TracePart::ShaderData {
            agent,
            shader_engine,
            traced,
        } => kept.traces.push(KeptTrace {
            stream,
            agent,
            shader_engine,
            traced,
            path,
            bytes: 0,
        }),
        TracePart::CodeObject {
            id,
            load_base,
            load_size,
            ..
        } => kept.code_objects.push(KeptCodeObject {
            stream,
            id,
            load_base,
            load_size,
            path,
            bytes: 0,
        }),
    }
}
