//! Databases written on a pool of threads. SQLite writes one database on one thread, so the
//! databases of several processes fill in parallel, each on the thread its index picks; the
//! threads are few, whatever the number of processes (a job has thousands). The sink queues
//! each window's chunks for the databases that hold them, and a slow database holds the
//! sink back, its thread's queue being short, instead of filling memory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::database::{Database, Streams};
use super::fault::Fault;
use super::rows::Queued;
use crate::catalog::Catalog;
use crate::sink::Written;
use crate::table::Table;

/// Jobs queued for one thread before the sink waits for it: one, as the stages queue one
/// window for a sink. A database is written slower than the records are read, so every
/// place in the queue fills once a run is long enough. On 16 cores at 16 threads (glibc
/// held to one malloc arena in both, to set the allocator's own growth aside), a replay of
/// 20 M `trace-all` records into one database peaked at 196 MiB with four and at 140-142
/// MiB with one (2 M records: 112-113 and 111-112 MiB), 3 % slower.
const QUEUE: usize = 1;

/// The most threads a pool of per-process databases starts: past a few, the sink's own
/// thread, which cuts the windows for them, is the bound.
pub const MOST_THREADS: usize = 16;

/// What becomes of a database: its final path, or what stopped it.
type Outcome = Result<PathBuf, Fault>;

/// Threads that write databases, each those whose index it is given modulo their number.
pub struct Pool {
    threads: Vec<Thread>,
    /// The index of the next database.
    next: AtomicUsize,
}

struct Thread {
    jobs: Option<SyncSender<Job>>,
    /// Taken by the first who finds the thread stopped, to resume its panic.
    handle: Mutex<Option<JoinHandle<()>>>,
}

struct Job {
    database: usize,
    work: Work,
}

enum Work {
    Start(Box<Open>),
    Window(Vec<Queued>),
    Finish {
        catalog: Arc<Catalog>,
        tables: Arc<[Table]>,
    },
    /// The sink was dropped: the database is discarded.
    Discard,
}

/// A database its thread is writing.
struct Open {
    database: Database,
    /// Counts the records the database has put in.
    written: Written,
    outcome: Sender<Outcome>,
}

impl Pool {
    /// Starts as many threads as rocflow works on ([`crate::threads`]), at least one and at
    /// most `most`; fails if one does not start.
    pub fn start(most: usize) -> Result<Arc<Pool>, Fault> {
        let mut threads = Vec::new();
        for _ in 0..crate::threads::count().min(most).max(1) {
            let (jobs, queue) = sync_channel(QUEUE);
            let handle = std::thread::Builder::new()
                .name("rocpd".into())
                .spawn(move || work(queue))
                .map_err(|e| {
                    Fault::Io(std::io::Error::new(
                        e.kind(),
                        format!("a thread to write databases does not start: {e}"),
                    ))
                })?;
            threads.push(Thread {
                jobs: Some(jobs),
                handle: Mutex::new(Some(handle)),
            });
        }
        Ok(Arc::new(Pool {
            threads,
            next: AtomicUsize::new(0),
        }))
    }

    fn thread(&self, database: usize) -> &Thread {
        &self.threads[database % self.threads.len()]
    }

    /// Queues `work` for `database`'s thread, and resumes the panic of a thread that
    /// stopped.
    fn send(&self, database: usize, work: Work) {
        let thread = self.thread(database);
        let jobs = thread.jobs.as_ref().expect("a pool in use has its threads");
        if jobs.send(Job { database, work }).is_err() {
            thread.resume();
        }
    }
}

impl Thread {
    /// Resumes the panic that stopped the thread (a thread stops early on panics only).
    fn resume(&self) -> ! {
        let handle = self.handle.lock().unwrap_or_else(|e| e.into_inner()).take();
        match handle.map(JoinHandle::join) {
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            Some(Ok(())) => unreachable!("a thread of a pool in use stops on panics only"),
            None => panic!("a thread writing rocpd databases panicked"),
        }
    }
}

impl Drop for Pool {
    /// Ends the threads once their queues are done: they drop the databases left
    /// unfinished, whose files are removed before the sink is gone.
    fn drop(&mut self) {
        for thread in &mut self.threads {
            thread.jobs = None;
        }
        for thread in &mut self.threads {
            let handle = thread.handle.get_mut().unwrap_or_else(|e| e.into_inner());
            if let Some(handle) = handle.take() {
                // A panic was resumed in the sink, or is now moot.
                let _ = handle.join();
            }
        }
    }
}

/// One database, written on a thread of its pool.
pub struct Writer {
    pool: Arc<Pool>,
    index: usize,
    path: PathBuf,
    streams: Streams,
    outcome: Receiver<Outcome>,
    /// Whether its outcome was taken: a writer dropped before then discards the database.
    ended: bool,
}

impl Writer {
    /// Hands `database` to a thread of `pool`; `written` counts the records it puts in.
    pub fn start(pool: &Arc<Pool>, database: Database, written: Written) -> Writer {
        let index = pool.next.fetch_add(1, Ordering::Relaxed);
        let path = database.path().to_owned();
        let streams = database.streams().clone();
        let (outcome, receiver) = channel();
        let open = Open {
            database,
            written,
            outcome,
        };
        pool.send(index, Work::Start(Box::new(open)));
        Writer {
            pool: Arc::clone(pool),
            index,
            path,
            streams,
            outcome: receiver,
            ended: false,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn holds(&self, stream: u16, catalog: &Catalog) -> bool {
        self.streams.hold(stream, catalog)
    }

    /// Queues a window's chunks; reports the failure of the database, if it stopped.
    pub fn write(&mut self, window: Vec<Queued>) -> Result<(), Fault> {
        if let Ok(outcome) = self.outcome.try_recv() {
            self.ended = true;
            return Err(outcome.expect_err("a database ends early on failures only"));
        }
        self.pool.send(self.index, Work::Window(window));
        Ok(())
    }

    /// Completes the database, and returns its final path.
    pub fn finish(mut self, catalog: Arc<Catalog>, tables: Arc<[Table]>) -> Outcome {
        self.pool.send(self.index, Work::Finish { catalog, tables });
        self.ended = true;
        match self.outcome.recv() {
            Ok(outcome) => outcome,
            // Its thread dropped it unfinished: it panicked.
            Err(_) => self.pool.thread(self.index).resume(),
        }
    }
}

impl Drop for Writer {
    /// A writer dropped before its end discards its database, whose thread removes the
    /// file; without resuming a panic, which the sink may be unwinding from already.
    fn drop(&mut self) {
        if !self.ended {
            let thread = self.pool.thread(self.index);
            if let Some(jobs) = &thread.jobs {
                // A thread that stopped dropped the database already.
                let _ = jobs.send(Job {
                    database: self.index,
                    work: Work::Discard,
                });
            }
        }
    }
}

/// A thread of a pool: writes the databases its jobs name until the pool ends.
fn work(jobs: Receiver<Job>) {
    let mut open: HashMap<usize, Open> = HashMap::new();
    for Job { database, work } in jobs {
        match work {
            Work::Start(one) => {
                open.insert(database, *one);
            }
            Work::Window(window) => {
                // A database that failed has reported it, and takes no more.
                let Some(one) = open.get_mut(&database) else {
                    continue;
                };
                if let Err(fault) = one.database.write(&window, &one.written) {
                    let failed = open.remove(&database).expect("the database is open");
                    // Dropped first, so that its file is gone when the sink reports.
                    drop(failed.database);
                    let _ = failed.outcome.send(Err(fault));
                }
            }
            Work::Finish { catalog, tables } => {
                if let Some(one) = open.remove(&database) {
                    let _ = one.outcome.send(one.database.finish(&catalog, &tables));
                }
            }
            Work::Discard => {
                open.remove(&database);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::StreamMeta;
    use crate::chunk::Chunk;
    use crate::record::{Batch, KernelDispatch};

    /// A window of the dispatches numbered `ids`.
    fn dispatches(ids: impl Iterator<Item = u64>) -> Vec<Queued> {
        let batch = Batch::KernelDispatch(
            ids.map(|dispatch_id| KernelDispatch {
                dispatch_id,
                correlation_id: dispatch_id,
                ..KernelDispatch::default()
            })
            .collect(),
        );
        vec![Queued::new(
            Arc::new(Chunk::new(0, batch)),
            &StreamMeta::default(),
        )]
    }

    /// A database past the dispatch ids rocpd numbers.
    fn unrepresentable() -> Vec<Queued> {
        dispatches(std::iter::once(1 << 41))
    }

    fn start(pool: &Arc<Pool>, dir: &Path, name: &str, written: &Written) -> Writer {
        let database = Database::create(dir.join(name), 0, Streams::All).unwrap();
        Writer::start(pool, database, written.clone())
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = (std::fs::read_dir(dir).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn finish(writer: Writer) -> Outcome {
        writer.finish(Arc::new(Catalog::default()), Arc::from([]))
    }

    /// On one thread, so that its jobs are done in the order they are queued.
    #[test]
    fn a_failed_database_reports_at_its_next_write_or_finish_and_spares_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let pool = Pool::start(1).unwrap();
        let written = Written::default();
        let [mut a, mut b, mut c, mut d] =
            ["a.db", "b.db", "c.db", "d.db"].map(|name| start(&pool, dir.path(), name, &written));
        b.write(unrepresentable()).unwrap();
        c.write(unrepresentable()).unwrap();
        a.write(dispatches(1..=10)).unwrap();
        d.write(dispatches(1..=5)).unwrap();
        assert_eq!(finish(a).unwrap(), dir.path().join("a.db"));
        // b failed before a finished.
        let failed = b.write(dispatches(1..=10)).unwrap_err();
        assert!(
            matches!(failed, Fault::DispatchId(id) if id == 1 << 41),
            "{failed}"
        );
        drop(b);
        assert!(matches!(finish(c), Err(Fault::DispatchId(_))));
        assert_eq!(finish(d).unwrap(), dir.path().join("d.db"));
        assert_eq!(written.get(), 15);
        // No staging file of the failed databases is left.
        assert_eq!(files(dir.path()), ["a.db", "d.db"]);
    }

    #[test]
    fn a_dropped_writer_discards_its_database() {
        let dir = tempfile::tempdir().unwrap();
        let pool = Pool::start(MOST_THREADS).unwrap();
        let written = Written::default();
        let mut a = start(&pool, dir.path(), "a.db", &written);
        a.write(dispatches(1..=10)).unwrap();
        assert_eq!(files(dir.path()).len(), 1, "its staging file");
        drop(a);
        // Gone once the pool is.
        drop(pool);
        assert!(files(dir.path()).is_empty(), "{:?}", files(dir.path()));
    }
}
