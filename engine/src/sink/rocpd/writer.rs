//! A database written on a thread of its own. The sink queues each window's chunks for the
//! databases that hold them, so that the databases of several processes fill in parallel
//! (SQLite writes one database on one thread), and a slow database holds the sink back,
//! its queue being short, instead of filling memory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use super::Fault;
use super::database::{Database, Streams};
use super::rows::Queued;
use crate::catalog::Catalog;
use crate::sink::Written;
use crate::transform::Table;

/// Windows queued for one database before the sink waits for it.
const QUEUE: usize = 2;

enum Job {
    Window(Vec<Queued>),
    Finish {
        catalog: Arc<Catalog>,
        tables: Arc<[Table]>,
    },
}

pub struct Writer {
    path: PathBuf,
    streams: Streams,
    jobs: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<Result<PathBuf, Fault>>>,
}

impl Writer {
    /// Starts the database's thread; `written` counts the records it has put in.
    pub fn start(database: Database, written: Written) -> Writer {
        let (jobs, queue) = sync_channel(QUEUE);
        let path = database.path().to_owned();
        let streams = database.streams().clone();
        let thread = std::thread::Builder::new()
            .name("rocpd".into())
            .spawn(move || run(database, queue, &written))
            .expect("a thread starts");
        Writer {
            path,
            streams,
            jobs: Some(jobs),
            thread: Some(thread),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn holds(&self, stream: u16, catalog: &Catalog) -> bool {
        self.streams.hold(stream, catalog)
    }

    /// Queues a window's chunks; reports the failure of a database that stopped.
    pub fn write(&mut self, window: Vec<Queued>) -> Result<(), Fault> {
        self.send(Job::Window(window))
    }

    /// Asks for the database to be completed; [`Writer::join`] waits for it.
    pub fn finish(&mut self, catalog: Arc<Catalog>, tables: Arc<[Table]>) -> Result<(), Fault> {
        self.send(Job::Finish { catalog, tables })
    }

    /// Waits for the database's thread, and returns its final path.
    pub fn join(mut self) -> Result<PathBuf, Fault> {
        self.jobs = None;
        let thread = self.thread.take().expect("joined once");
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }

    fn send(&mut self, job: Job) -> Result<(), Fault> {
        let jobs = self.jobs.as_ref().expect("jobs are sent before joining");
        if jobs.send(job).is_ok() {
            return Ok(());
        }
        // The thread stopped on a failure, which it returns.
        let thread = self.thread.take().expect("a stopped thread is joined once");
        self.jobs = None;
        match thread.join() {
            Ok(outcome) => Err(outcome.expect_err("a thread stops early on failures only")),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl Drop for Writer {
    /// A writer dropped before it finished discards its database; its thread removes the
    /// file before the sink is gone.
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(mut database: Database, jobs: Receiver<Job>, written: &Written) -> Result<PathBuf, Fault> {
    let mut finish = None;
    let windows = std::iter::from_fn(|| match jobs.recv().ok()? {
        Job::Window(window) => Some(window),
        Job::Finish { catalog, tables } => {
            finish = Some((catalog, tables));
            None
        }
    });
    database.fill(windows, written)?;
    match finish {
        Some((catalog, tables)) => database.finish(&catalog, &tables),
        // The sink was dropped: the database is discarded.
        None => Err(Fault::Io(std::io::ErrorKind::Interrupted.into())),
    }
}
