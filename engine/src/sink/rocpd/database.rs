//! One rocpd database being written: a SQLite file under a temporary name beside its final
//! path. SQLite creates its schema; the records' rows are appended as the pages of their
//! tables while SQLite has the file closed ([`crate::sqlite::btree`]); when the records end,
//! SQLite adds the info rows, aggregate tables and indexes, and the file is renamed into
//! place.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{Connection, OpenFlags};

use super::append::{Layouts, Writers};
use super::dispatches::{Dispatches, Spilled};
use super::fault::Fault;
use super::ids::Ids;
use super::info;
use super::rows::{self, Queued};
use super::views;
use crate::catalog::Catalog;
use crate::record::Process;
use crate::rocpd::Guid;
use crate::rocpd::schema::{self, Names};
use crate::sink::Written;
use crate::sqlite::btree::Pages;
use crate::table::Table;

/// Settings for a file written once, start to end, by one connection at a time: a crash or
/// failure discards the file anyway, so there is nothing to journal or sync. Events
/// reference info rows that are written when the run ends, so foreign keys are not
/// enforced (SQLite builds differ in their default). Pages of 16 KiB: SQLite loaded rows
/// 8 % faster with them than with the default 4 KiB, and a leaf of the appended tables
/// holds four times the rows.
pub const PRAGMAS: &str = "PRAGMA page_size = 16384;
PRAGMA journal_mode = OFF;
PRAGMA foreign_keys = OFF;
PRAGMA synchronous = OFF;
PRAGMA locking_mode = EXCLUSIVE;
PRAGMA cache_size = -8192;";

/// Turns off SQLite's count of the memory it uses, before it starts: the count takes a
/// lock shared by every connection on each allocation, which databases written in
/// parallel contend for. Nothing reads the count.
fn configure_sqlite() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `sqlite3_config` may be called before SQLite is initialized, by one
        // thread while no other uses SQLite; the rocpd sink opens no connection before
        // this. Once SQLite is initialized it refuses (SQLITE_MISUSE) and changes nothing.
        unsafe {
            rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0);
        }
    });
}

pub struct Database {
    path: PathBuf,
    staging: Staged,
    names: Names,
    ids: Ids,
    /// The streams whose records the database holds (every stream, for one database per
    /// run).
    streams: Streams,
    /// The staged file's pages, which the tables append to while SQLite has it closed.
    pages: Arc<Pages>,
    /// Rows are built (as `layouts` say) a segment of records at a time, and written by
    /// `writers` while the next segments' are built.
    layouts: Layouts,
    writers: Writers,
    /// The events of kernel dispatches, set aside until they are written in order, at the
    /// end: those being gathered, and the runs spilled.
    dispatches: Dispatches,
    spilled: Spilled,
}

/// Which streams a database holds.
#[derive(Debug, Clone)]
pub enum Streams {
    All,
    /// Those of one process: one stream, or one for each program it ran, across `exec`.
    Process(Process),
    /// One stream that never said which process it is.
    One(u16),
}

impl Streams {
    /// Those of `process`, or else `stream` alone.
    pub fn of(stream: u16, process: Option<&Process>) -> Streams {
        process.map_or(Streams::One(stream), |p| Streams::Process(p.clone()))
    }

    pub fn hold(&self, stream: u16, catalog: &Catalog) -> bool {
        match self {
            Streams::All => true,
            Streams::Process(process) => (catalog.stream(stream).process.as_ref())
                .is_some_and(|other| other.is_same_as(process)),
            Streams::One(one) => *one == stream,
        }
    }
}

impl Database {
    /// Creates the database's schema under a temporary name next to `path`. `start_ns`
    /// dates its GUID.
    pub fn create(path: PathBuf, start_ns: u64, streams: Streams) -> Result<Database, Fault> {
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(Fault::Io)?;
        crate::atomic::remove_abandoned(&path);
        let staging = Staged::new(crate::atomic::staging_path(&path));
        let names = Names::new(Guid::new(start_ns));
        let conn = open(staging.path())?;
        conn.execute_batch(&format!(
            "BEGIN;\n{}{}{}COMMIT;",
            names.create(),
            views::data_views(),
            views::summary_views()
        ))?;
        let roots: Vec<(String, u32)> = conn
            .prepare("SELECT name, rootpage FROM sqlite_schema WHERE type = 'table'")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        conn.close().map_err(|(_, e)| e)?;
        let pages = Arc::new(Pages::open(staging.path())?);
        let (layouts, writers) = rows::tables(&pages, |table| {
            let name = names.name(table);
            let root = roots
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, root)| *root);
            root.ok_or(rusqlite::Error::QueryReturnedNoRows)
        })?;
        let spilled = Spilled::new(parent);
        Ok(Database {
            path,
            staging,
            names,
            ids: Ids::default(),
            streams,
            pages,
            layouts,
            writers,
            dispatches: Dispatches::default(),
            spilled,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn streams(&self) -> &Streams {
        &self.streams
    }

    /// Writes a window's chunks; `written` counts their records once their rows are
    /// built. The last segments' rows are written at the next window or the end.
    pub fn write(&mut self, window: &[Queued], written: &Written) -> Result<(), Fault> {
        for segment in segments(window) {
            // The runs of events gathered whole are spilled while the segment is built.
            let full = self.dispatches.full();
            let (layouts, ids, dispatches) = (&self.layouts, &mut self.ids, &mut self.dispatches);
            let (writers, spilled) = (&mut self.writers, &mut self.spilled);
            let (stepped, spilt) = rayon::join(
                || writers.step(|| rows::build(segment, layouts, ids, dispatches)),
                || spilled.spill(full),
            );
            stepped?;
            spilt?;
            written.add(segment.iter().map(|q| q.len() as u64).sum());
        }
        Ok(())
    }

    /// Completes the database: the tables' last pages; then, through SQLite, the info
    /// rows of its processes (from the catalog, and for every id the records used), the
    /// aggregate tables, the indexes; then moves it to its path.
    pub fn finish(self, catalog: &Catalog, tables: &[Table]) -> Result<PathBuf, Fault> {
        let Database {
            path,
            staging,
            names,
            mut ids,
            streams,
            pages,
            layouts,
            mut writers,
            dispatches,
            spilled,
        } = self;
        let sorted = spilled.sorted(dispatches)?;
        rows::join_dispatches(sorted, &layouts, SEGMENT, &mut writers)?;
        writers.finish()?;
        Arc::into_inner(pages)
            .expect("the tables are finished")
            .close()?;
        let streams: Vec<u16> = catalog
            .streams()
            .map(|(stream, _)| stream)
            .filter(|&s| streams.hold(s, catalog))
            .collect();
        let mut conn = open(staging.path())?;
        let tx = conn.transaction()?;
        info::write(&tx, &names, &mut ids, catalog, &streams)?;
        if let Some(why) = &catalog.partial {
            let metadata = names.table(schema::METADATA);
            tx.execute(
                &format!("INSERT INTO {metadata} (tag, value) VALUES ('partial', ?1)"),
                [why],
            )?;
        }
        for table in tables {
            info::table(&tx, table)?;
        }
        tx.commit()?;
        // The indexes are sorted within a small budget (spilling to temporary files), so
        // that memory does not grow with the run.
        conn.execute_batch("PRAGMA cache_size = -1024")?;
        for (create, used) in names.indexes() {
            if conn.query_row(&used, [], |r| r.get(0))? {
                conn.execute_batch(&create)?;
            }
        }
        conn.close().map_err(|(_, e)| e)?;
        staging.move_to(&path)?;
        Ok(path)
    }
}

/// Records whose rows are built and written at a time (rows, while the dispatches'
/// events join): the steps of the pipeline wait for each other at every segment, so a
/// segment is large enough that the waits are few, and small enough that the buffers of
/// the steps in flight stay small. The tables' pages are numbered a segment at a time, so
/// the file's layout follows it. On 16 cores, replaying 20 M `trace-all` records into one
/// database (M records/s; peak MiB, and from 2 M records), two rounds on one lease:
/// segments of 32 Ki 10.4-10.6 (246-247, 1.40x), 64 Ki 11.6-12.0 (210-211, 1.12-1.17x),
/// 128 Ki 10.8-11.1 (225-254, 1.10x); at 8 Ki, before the leaves filled in parallel, on
/// another lease, 7.9-8.3 against 9.2-10.1 at 128 Ki.
const SEGMENT: usize = 64 * 1024;

/// A window's chunks in runs of at least [`SEGMENT`] records (but the last).
fn segments(window: &[Queued]) -> impl Iterator<Item = &[Queued]> {
    let mut rest = window;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut records = 0;
        let end = (rest.iter())
            .position(|chunk| {
                records += chunk.len();
                records >= SEGMENT
            })
            .map_or(rest.len(), |last| last + 1);
        let (segment, after) = rest.split_at(end);
        rest = after;
        Some(segment)
    })
}

/// A connection to the database at `path`, created if need be, with [`PRAGMAS`].
fn open(path: &Path) -> Result<Connection, Fault> {
    configure_sqlite();
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.execute_batch(PRAGMAS)?;
    Ok(conn)
}

/// A file written under a temporary name: removed unless moved to its path, so that a
/// database that did not finish leaves nothing behind.
struct Staged(Option<PathBuf>);

impl Staged {
    fn new(path: PathBuf) -> Staged {
        // A leftover of an earlier run that failed.
        let _ = std::fs::remove_file(&path);
        Staged(Some(path))
    }

    fn path(&self) -> &Path {
        self.0
            .as_deref()
            .expect("a staged file is in place until moved")
    }

    /// Moves the file to `target`, replacing an earlier database there; anything else at
    /// `target` is left alone and reported.
    fn move_to(mut self, target: &Path) -> Result<(), Fault> {
        if let Ok(meta) = std::fs::symlink_metadata(target) {
            let mut header = [0u8; SQLITE_HEADER.len()];
            let database = meta.is_file()
                && std::fs::File::open(target)
                    .and_then(|mut f| f.read_exact(&mut header))
                    .is_ok()
                && header == SQLITE_HEADER;
            if !database {
                return Err(Fault::Io(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "it exists and is not an earlier database; remove it or choose another path",
                )));
            }
        }
        // Written with `synchronous = OFF`: synced here, before it takes its name.
        crate::atomic::commit(self.path(), target).map_err(Fault::Io)?;
        self.0 = None;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The first bytes of every SQLite database file.
const SQLITE_HEADER: &[u8] = b"SQLite format 3\0";
