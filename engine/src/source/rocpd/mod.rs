//! rocpd databases as a source: what rocprofv3 (or rocflow's rocpd sink) wrote, read back
//! as the frames a run would have sent. A run of many ranks is many files, so databases
//! are read in parallel, each on a thread of its own into a bounded queue, and their
//! frames taken in turn from the databases being read, one frame each, in the order the
//! files were named: every process is a stream of its own, its metadata first, so the
//! streams interleave as a live run's do, the same way on every read. Nothing relies on
//! `ATTACH`, which SQLite limits to 10.

mod emit;
mod info;
mod inputs;
mod records;
mod schema;
mod value;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::{Ending, Source, SourceError};
use crate::wire::Frame;
use emit::Emitter;
pub use inputs::expand;
use schema::{SchemaError, Tables};

/// What a database's reader sends.
enum Item {
    Frame(Frame),
    /// Something the user should know, the database read to its end all the same.
    Warning(String),
    /// A fault that ended the database part-way.
    Failed(String),
}

/// Frames a database's reader may have ready before the consumer takes them.
const QUEUE: usize = 4;

/// A database that cannot be read as rocpd, with why.
#[derive(Debug, thiserror::Error)]
#[error("`{}`: {error}", path.display())]
pub struct OpenError {
    pub path: PathBuf,
    pub error: SchemaError,
}

impl OpenError {
    /// Whether the user named what cannot be read (SQLite but not rocpd, or too much),
    /// rather than the file being damaged.
    pub fn is_users(&self) -> bool {
        matches!(
            self.error,
            SchemaError::Missing(_) | SchemaError::TooManyProcesses
        )
    }
}

/// One database to read: its sets of tables, each with the stream of its first process.
struct Job {
    path: PathBuf,
    sets: Vec<(Tables, u16)>,
    frames: SyncSender<Item>,
}

/// rocpd databases, read as one run.
pub struct Rocpd {
    /// Each database's frames, in the order the databases were named.
    queues: VecDeque<(PathBuf, Receiver<Item>)>,
    /// How many databases are read at once: the first this many queues are being filled
    /// (readers take the databases in order), so frames are taken from them in turn.
    readers: usize,
    /// The queue (of the first `readers`) the next frame is taken from.
    turn: usize,
    /// The databases no reader has started yet.
    jobs: Arc<Mutex<VecDeque<Job>>>,
    failed: Option<SourceError>,
    warnings: Vec<String>,
    note: Option<String>,
}

impl Rocpd {
    /// Opens the databases at `paths` (checking each is rocpd, in parallel) and starts
    /// reading them.
    pub fn open(paths: &[PathBuf]) -> Result<Rocpd, OpenError> {
        let layouts: Vec<(schema::Layout, Vec<usize>)> = paths
            .par_iter()
            .map(|path| {
                layout(path).map_err(|error| OpenError {
                    path: path.clone(),
                    error,
                })
            })
            .collect::<Result<_, _>>()?;
        let mut next = 0usize;
        let mut jobs = VecDeque::new();
        let mut queues = VecDeque::new();
        // What a newer schema adds, and in how many of the databases.
        let mut unknown = std::collections::BTreeSet::new();
        let mut newer = 0;
        for (path, (layout, processes)) in paths.iter().zip(layouts) {
            let mut sets = Vec::new();
            for (tables, count) in layout.sets.into_iter().zip(processes) {
                if next + count > usize::from(u16::MAX) + 1 {
                    return Err(too_many(path));
                }
                // Below 2^16 whenever the set has a process to number.
                sets.push((tables, next as u16));
                next += count;
            }
            newer += usize::from(!layout.unknown.is_empty());
            unknown.extend(layout.unknown);
            let (frames, queue) = sync_channel(QUEUE);
            jobs.push_back(Job {
                path: path.clone(),
                sets,
                frames,
            });
            queues.push_back((path.clone(), queue));
        }
        let workers = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(jobs.len());
        let jobs = Arc::new(Mutex::new(jobs));
        for _ in 0..workers {
            let jobs = Arc::clone(&jobs);
            std::thread::spawn(move || {
                loop {
                    // Taken in a statement of its own, so the lock is not held while reading.
                    let job = jobs.lock().expect("no panics").pop_front();
                    let Some(job) = job else { break };
                    read(job);
                }
            });
        }
        let note = (!unknown.is_empty()).then(|| {
            let names: Vec<String> = unknown.into_iter().collect();
            format!(
                "ignored what this rocflow does not know (a newer rocpd schema?) in {newer} of \
                 the {} databases: {}",
                paths.len(),
                names.join(", ")
            )
        });
        Ok(Rocpd {
            queues,
            readers: workers.max(1),
            turn: 0,
            jobs,
            failed: None,
            warnings: Vec::new(),
            note,
        })
    }

    /// One note on what the databases hold that was ignored, if anything.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }
}

fn too_many(path: &Path) -> OpenError {
    OpenError {
        path: path.to_owned(),
        error: SchemaError::TooManyProcesses,
    }
}

/// The table sets of the database at `path`, with each set's number of processes.
fn layout(path: &Path) -> Result<(schema::Layout, Vec<usize>), SchemaError> {
    let conn = schema::open(path)?;
    let layout = schema::layout(&conn)?;
    let counts = (layout.sets.iter())
        .map(|tables| info::process_rows(&conn, tables).map(|rows| rows.len()))
        .collect::<rusqlite::Result<_>>()?;
    Ok((layout, counts))
}

/// Reads one database into its queue; a fault ends it with the error.
fn read(job: Job) {
    let frames = job.frames.clone();
    if let Err(e) = read_sets(&job) {
        let _ = frames.send(Item::Failed(e));
    }
}

fn read_sets(job: &Job) -> Result<(), String> {
    let conn = schema::open(&job.path).map_err(|e| e.to_string())?;
    let mut send = |frame| job.frames.send(Item::Frame(frame)).is_ok();
    let mut left = records::Left::default();
    for (tables, first) in &job.sets {
        let mut info = info::read(&conn, tables, *first).map_err(|e| e.to_string())?;
        let mut out = Emitter::new(&mut send);
        for process in &mut info.processes {
            if out
                .meta(process.stream, std::mem::take(&mut process.meta))
                .is_err()
            {
                return Ok(());
            }
        }
        match records::read(&conn, tables, &info, &mut out) {
            Ok(set) => {
                left.orphans += set.orphans;
                for (category, n) in set.unknown {
                    *left.unknown.entry(category).or_default() += n;
                }
            }
            Err(records::Fault::Stopped) => return Ok(()),
            Err(records::Fault::Sqlite(e)) => return Err(e.to_string()),
        }
    }
    let path = job.path.display();
    if left.orphans > 0 {
        let warning = format!(
            "`{path}`: {} rows name a process the database does not describe; left out",
            left.orphans
        );
        let _ = job.frames.send(Item::Warning(warning));
    }
    if !left.unknown.is_empty() {
        let counts: Vec<String> = (left.unknown.iter())
            .map(|(category, n)| format!("{n} of `{category}`"))
            .collect();
        let warning = format!(
            "`{path}`: host events of categories no rocflow record holds, left out: {}",
            counts.join(", ")
        );
        let _ = job.frames.send(Item::Warning(warning));
    }
    Ok(())
}

impl Rocpd {
    /// Stops reading: readers find their queues gone, and no database is started.
    fn stop(&mut self) {
        self.jobs.lock().expect("no panics").clear();
        self.queues.clear();
    }
}

impl Drop for Rocpd {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Source for Rocpd {
    fn next_frame(&mut self) -> Option<Frame> {
        loop {
            let reading = self.readers.min(self.queues.len());
            if reading == 0 {
                return None;
            }
            let at = self.turn % reading;
            let (path, queue) = &self.queues[at];
            match queue.recv() {
                Ok(Item::Frame(frame)) => {
                    self.turn = at + 1;
                    return Some(frame);
                }
                Ok(Item::Warning(warning)) => self.warnings.push(warning),
                Ok(Item::Failed(message)) => {
                    self.failed = Some(SourceError::Database {
                        path: path.clone(),
                        message,
                    });
                    self.stop();
                    return None;
                }
                // The database is read to its end; the next one takes its turn.
                Err(_) => {
                    self.queues.remove(at);
                    self.turn = at;
                }
            }
        }
    }

    fn finish(&mut self) -> Result<Ending, SourceError> {
        self.stop();
        match self.failed.take() {
            Some(e) => Err(e),
            None => Ok(Ending {
                warning: (!self.warnings.is_empty()).then(|| self.warnings.join("; ")),
            }),
        }
    }
}
