//! rocpd databases as a source: what rocprofv3 (or rocflow's rocpd sink) wrote, read back
//! as the frames a run would have sent. A run is one large database or many (one per
//! rank), so the work is divided into pieces: each set of tables' info (its processes'
//! metadata), then its event tables in ranges of row ids. Readers, as many as the threads
//! rocflow works on ([`crate::threads`]), take the pieces in order, each with its own
//! connection, and the consumer takes their frames piece by piece in that order, so a
//! database's processes come out as the streams they were, the same way on every read,
//! however many readers there are. Each piece numbers its strings on its own; [`strings`]
//! merges the numberings. Nothing relies on `ATTACH`, which SQLite limits to 10.

mod emit;
mod info;
mod inputs;
mod lz4;
mod records;
mod schema;
mod strings;
mod value;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use rayon::prelude::*;
use rusqlite::{Connection, OptionalExtension};

use super::{Ending, Source, SourceError};
use crate::chunk::MAX_RECORDS;
use crate::wire::Frame;
use emit::Emitter;
pub use inputs::expand;
use records::Part;
use schema::{SchemaError, Table, Tables};

/// What a piece's reader sends.
enum Item {
    Frame(Frame),
    /// Rows of the piece no record could be made of.
    Left(records::Left),
    /// A fault that ended the database part-way.
    Failed(String),
}

/// Row ids a piece of a table spans: a few frames' worth, so that a piece's frames fit
/// its queue and its reader goes on to the next piece without waiting for the consumer.
const PIECE_ROWS: i64 = 2 * MAX_RECORDS as i64;

/// The most pieces one table is cut into.
const MAX_PIECES: i128 = 4096;

/// The name of the readers' threads.
pub const READER_THREAD: &str = "rocpd-read";

/// Frames a piece's reader may have ready before the consumer takes them.
const QUEUE: usize = 8;

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

/// A set of rocpd tables of a database, as its pieces read it.
struct Set {
    tables: Tables,
    /// The stream of its first process.
    first: u16,
    /// Its info tables, read by the first piece that needs them.
    info: OnceLock<Result<info::Info, String>>,
}

/// What one reader reads in one go: a set's info tables (its processes' metadata,
/// sent first), or a part of one of its event tables.
struct Piece {
    database: usize,
    set: usize,
    part: Option<Part>,
}

/// The databases and their pieces, shared by the readers and the consumer.
struct Work {
    paths: Vec<PathBuf>,
    sets: Vec<Vec<Set>>,
    /// Every piece, in the order the consumer takes them: database by database, set by
    /// set, a set's info before its tables, each table's rows in order.
    pieces: Vec<Piece>,
    /// The next piece no reader has taken.
    taken: AtomicUsize,
    board: Mutex<Board>,
    /// Signals a change on the board.
    posted: Condvar,
    /// How far past the consumer's piece readers may read ahead.
    window: usize,
    stopped: AtomicBool,
}

/// Where readers and the consumer meet.
#[derive(Default)]
struct Board {
    /// The queues of the pieces taken and not yet passed to the consumer.
    ready: BTreeMap<usize, Receiver<Item>>,
    /// The piece the consumer takes frames from.
    consumed: usize,
}

/// rocpd databases, read as one run.
pub struct Rocpd {
    work: Arc<Work>,
    /// The piece the consumer takes frames from, and its queue.
    current: Option<(usize, Receiver<Item>)>,
    /// The next piece after it.
    next: usize,
    strings: strings::Strings,
    /// What the pieces of the database being read left out.
    left: records::Left,
    failed: Option<SourceError>,
    warnings: Vec<String>,
    note: Option<String>,
}

impl Rocpd {
    /// Opens the databases at `paths` (checking each is rocpd and dividing its tables into
    /// pieces, in parallel) and starts reading them.
    pub fn open(paths: &[PathBuf]) -> Result<Rocpd, OpenError> {
        let plans: Vec<Plan> = paths
            .par_iter()
            .map(|path| {
                plan(path).map_err(|error| OpenError {
                    path: path.clone(),
                    error,
                })
            })
            .collect::<Result<_, _>>()?;
        let mut next = 0usize;
        let mut sets = Vec::new();
        let mut pieces = Vec::new();
        // What a newer schema adds, and in how many of the databases.
        let mut unknown = std::collections::BTreeSet::new();
        let mut newer = 0;
        // Rows of a later revision's additions that no record holds, by table.
        let mut unread = BTreeMap::<&str, (&schema::Addition, u64)>::new();
        for (database, (path, plan)) in paths.iter().zip(plans).enumerate() {
            let mut database_sets = Vec::new();
            for (set, (tables, count, parts)) in plan.sets.into_iter().enumerate() {
                if next + count > usize::from(u16::MAX) + 1 {
                    return Err(too_many(path));
                }
                pieces.push(Piece {
                    database,
                    set,
                    part: None,
                });
                pieces.extend(parts.into_iter().map(|part| Piece {
                    database,
                    set,
                    part: Some(part),
                }));
                database_sets.push(Set {
                    tables,
                    // Below 2^16 whenever the set has a process to number.
                    first: next as u16,
                    info: OnceLock::new(),
                });
                next += count;
            }
            sets.push(database_sets);
            newer += usize::from(!plan.unknown.is_empty());
            unknown.extend(plan.unknown);
            for (addition, rows) in plan.unread {
                unread.entry(addition.table).or_insert((addition, 0)).1 += rows;
            }
        }
        let readers = crate::threads::count().min(pieces.len());
        let work = Arc::new(Work {
            paths: paths.to_vec(),
            sets,
            pieces,
            taken: AtomicUsize::new(0),
            board: Mutex::new(Board::default()),
            posted: Condvar::new(),
            // Each reader a piece in hand and one done, whichever the consumer is on.
            window: 2 * readers,
            stopped: AtomicBool::new(false),
        });
        for _ in 0..readers {
            let work = Arc::clone(&work);
            std::thread::Builder::new()
                .name(READER_THREAD.into())
                .spawn(move || work.read())
                .expect("a thread to read databases starts");
        }
        let newer_note = (!unknown.is_empty()).then(|| {
            let names: Vec<String> = unknown.into_iter().collect();
            format!(
                "ignored what this rocflow does not know (a newer rocpd schema?) in {newer} of \
                 the {} databases: {}",
                paths.len(),
                names.join(", ")
            )
        });
        let unread_note = (!unread.is_empty()).then(|| {
            let rows: Vec<String> = (unread.into_values())
                .map(|(a, rows)| {
                    format!(
                        "{rows} rows of `{}` ({}, rocpd {})",
                        a.table, a.holds, a.version
                    )
                })
                .collect();
            format!("left out what no rocflow record holds: {}", rows.join(", "))
        });
        let note = match (newer_note, unread_note) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        Ok(Rocpd {
            work,
            current: None,
            next: 0,
            strings: strings::Strings::default(),
            left: records::Left::default(),
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

/// What a database holds and how it is read.
struct Plan {
    /// Its sets of tables, each with its number of processes and the parts of its event
    /// tables.
    sets: Vec<(Tables, usize, Vec<Part>)>,
    /// Tables and columns of a newer schema.
    unknown: Vec<String>,
    /// Rows of later revisions' additions that no record holds.
    unread: Vec<(&'static schema::Addition, u64)>,
}

/// The table sets of the database at `path`, each with its number of processes and its
/// event tables divided into parts by row id.
fn plan(path: &Path) -> Result<Plan, SchemaError> {
    let conn = schema::open(path)?;
    let layout = schema::layout(&conn)?;
    let mut sets = Vec::new();
    let mut unread = Vec::new();
    for tables in layout.sets {
        unread.extend(tables.unread(&conn)?);
        let processes = info::process_rows(&conn, &tables)?.len();
        let parts = parts(&conn, &tables)?;
        sets.push((tables, processes, parts));
    }
    Ok(Plan {
        sets,
        unknown: layout.unknown,
        unread,
    })
}

/// The event tables of a set, in parts of [`PIECE_ROWS`] row ids (more where a table
/// spreads its rows thinly, so that it has at most [`MAX_PIECES`]). Each part starts at a
/// row that exists: ids the table skips (a database's ids may lie anywhere in the 64-bit
/// range) make no parts, so a table has no more parts than rows. Read whole are regions
/// with arguments (their arguments are merged in one pass over the argument table), and a
/// table whose reads look rows up by a column the database has no key or index on: SQLite
/// builds an index for that in each query, which over many parts of a large table was
/// quadratic.
fn parts(conn: &Connection, tables: &Tables) -> rusqlite::Result<Vec<Part>> {
    let has_args: bool = conn.query_row(
        &format!("SELECT EXISTS (SELECT 1 FROM {})", tables.name(schema::ARG)),
        [],
        |row| row.get(0),
    )?;
    let mut parts = Vec::new();
    for table in Table::ALL.into_iter().filter(|t| tables.holds(t.rows())) {
        let name = tables.name(table.rows());
        // SQLite finds a lone min() or max() of the row id at once, and the first row id
        // from a given one by a seek.
        let [low, high] = ["min", "max"].map(|end| {
            let sql = format!("SELECT {end}(rowid) FROM {name}");
            conn.query_row(&sql, [], |row| row.get::<_, Option<i64>>(0))
        });
        let (Some(low), Some(high)) = (low?, high?) else {
            continue;
        };
        let scanned = (table.lookups().iter()).any(|(t, column)| tables.scanned(t, column));
        if scanned || (table == Table::Regions && has_args) {
            parts.push(Part { table, rows: None });
            continue;
        }
        let span = i128::from(high) - i128::from(low) + 1;
        // At most 2^64 / MAX_PIECES, within i64.
        let step = ((span + MAX_PIECES - 1) / MAX_PIECES).max(i128::from(PIECE_ROWS)) as i64;
        let mut next = conn.prepare(&format!(
            "SELECT rowid FROM {name} WHERE rowid >= ?1 ORDER BY rowid LIMIT 1"
        ))?;
        let mut start = Some(low);
        while let Some(first) = start {
            let end = first.saturating_add(step - 1).min(high);
            parts.push(Part {
                table,
                rows: Some(first..=end),
            });
            start = match end.checked_add(1) {
                Some(after) if end < high => {
                    next.query_row([after], |row| row.get(0)).optional()?
                }
                _ => None,
            };
        }
    }
    Ok(parts)
}

impl Work {
    /// A reader: takes the next piece, posts its queue for the consumer and reads it,
    /// until no piece is left or the consumer is gone. It reads no further ahead of the
    /// consumer than the window, so what is read and not yet taken stays bounded. A
    /// connection is kept while the pieces taken are of one database.
    fn read(&self) {
        let mut open: Option<(usize, Connection)> = None;
        loop {
            let at = self.taken.fetch_add(1, Ordering::Relaxed);
            let Some(piece) = self.pieces.get(at) else {
                break;
            };
            let (frames, queue) = sync_channel(QUEUE);
            {
                let mut board = self.board.lock().expect("no panics");
                while at >= board.consumed + self.window && !self.stopped.load(Ordering::Relaxed) {
                    board = self.posted.wait(board).expect("no panics");
                }
                if self.stopped.load(Ordering::Relaxed) {
                    break;
                }
                board.ready.insert(at, queue);
            }
            self.posted.notify_all();
            if open.as_ref().is_none_or(|(d, _)| *d != piece.database) {
                open = match schema::open(&self.paths[piece.database]) {
                    Ok(conn) => Some((piece.database, conn)),
                    Err(e) => {
                        let _ = frames.send(Item::Failed(e.to_string()));
                        continue;
                    }
                };
            }
            let (_, conn) = open.as_ref().expect("opened above");
            if let Err(e) = self.read_piece(conn, piece, &frames) {
                let _ = frames.send(Item::Failed(e));
            }
        }
    }

    fn read_piece(
        &self,
        conn: &Connection,
        piece: &Piece,
        frames: &SyncSender<Item>,
    ) -> Result<(), String> {
        let set = &self.sets[piece.database][piece.set];
        let info = (set.info)
            .get_or_init(|| info::read(conn, &set.tables, set.first).map_err(|e| e.to_string()))
            .as_ref()?;
        let mut send = |frame| frames.send(Item::Frame(frame)).is_ok();
        let mut out = Emitter::new(&mut send);
        let Some(part) = &piece.part else {
            for process in &info.processes {
                let meta = std::mem::take(&mut *process.meta.lock().expect("no panics"));
                if out.meta(process.stream, meta).is_err() {
                    return Ok(());
                }
            }
            let long = records::Left {
                long: info.long.clone(),
                ..records::Left::default()
            };
            let _ = frames.send(Item::Left(long));
            return Ok(());
        };
        match records::read(conn, &set.tables, info, part, &mut out) {
            Ok(left) => {
                let _ = frames.send(Item::Left(left));
                Ok(())
            }
            Err(records::Fault::Stopped) => Ok(()),
            Err(records::Fault::Sqlite(e)) => Err(e.to_string()),
        }
    }

    /// The queue of piece `at`, which the consumer goes on to, once a reader has taken it.
    fn queue(&self, at: usize) -> Receiver<Item> {
        let mut board = self.board.lock().expect("no panics");
        board.consumed = at;
        self.posted.notify_all();
        loop {
            if let Some(queue) = board.ready.remove(&at) {
                return queue;
            }
            board = self.posted.wait(board).expect("no panics");
        }
    }
}

impl Rocpd {
    /// Stops reading: readers find their queues gone, and take no more pieces.
    fn stop(&mut self) {
        self.work.stopped.store(true, Ordering::Relaxed);
        self.work.board.lock().expect("no panics").ready.clear();
        self.work.posted.notify_all();
        self.current = None;
        self.next = self.work.pieces.len();
    }

    /// The warnings of what database `database`'s pieces left out, now it is read.
    fn database_read(&mut self, database: usize) {
        let left = std::mem::take(&mut self.left);
        let path = self.work.paths[database].display();
        if left.orphans > 0 {
            self.warnings.push(format!(
                "`{path}`: {} rows name a process the database does not describe; left out",
                left.orphans
            ));
        }
        if let Some(warning) = left.long.warning() {
            self.warnings.push(format!("`{path}`: {warning}"));
        }
        if !left.unknown.is_empty() {
            let counts: Vec<String> = (left.unknown.iter())
                .map(|(category, n)| format!("{n} of `{category}`"))
                .collect();
            self.warnings.push(format!(
                "`{path}`: host events of categories no rocflow record holds, left out: {}",
                counts.join(", ")
            ));
        }
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
            let (at, queue) = match &self.current {
                Some(current) => current,
                None => {
                    let at = self.next;
                    if at >= self.work.pieces.len() {
                        return None;
                    }
                    self.next += 1;
                    self.strings.next_part();
                    self.current.insert((at, self.work.queue(at)))
                }
            };
            let at = *at;
            match queue.recv() {
                Ok(Item::Frame(frame)) => {
                    if let Some(frame) = self.strings.renumber(frame) {
                        return Some(frame);
                    }
                }
                Ok(Item::Left(left)) => {
                    self.left.orphans += left.orphans;
                    self.left.long.merge(left.long);
                    for (category, n) in left.unknown {
                        *self.left.unknown.entry(category).or_default() += n;
                    }
                }
                Ok(Item::Failed(message)) => {
                    let path = self.work.paths[self.work.pieces[at].database].clone();
                    self.failed = Some(SourceError::Database { path, message });
                    self.stop();
                    return None;
                }
                // The piece is read; at a database's last, what it left out is told.
                Err(_) => {
                    self.current = None;
                    let database = self.work.pieces[at].database;
                    let last =
                        (self.work.pieces.get(at + 1)).is_none_or(|p| p.database != database);
                    if last {
                        self.database_read(database);
                    }
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
                partial: None,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ops::RangeInclusive;

    use super::*;
    use crate::rocpd::schema::TABLES;

    /// A database of the rocpd tables rocflow's sink writes (plain names, no rows but
    /// those `rows` adds, a column its declaration requires holding 0), with `key` the
    /// declaration of each table's `id`.
    fn database(key: &str, rows: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("parts.db");
        let conn = Connection::open(&path).unwrap();
        let mut sql = String::from("CREATE TABLE rocpd_metadata (id INTEGER, tag, value);");
        for table in TABLES {
            let columns = table.columns.iter().map(|c| {
                c.replace("NOT NULL", "NOT NULL DEFAULT 0")
                    .replace("DEFAULT 0 DEFAULT", "DEFAULT")
                    .replace("DEFAULT 0 UNIQUE", "UNIQUE")
            });
            let columns: Vec<String> = std::iter::once(format!("id {key}"))
                .chain(columns)
                .collect();
            sql += &format!("CREATE TABLE {} ({});", table.name, columns.join(", "));
        }
        conn.execute_batch(&(sql + rows)).unwrap();
        (dir, path)
    }

    /// `count` rows of `table` with ids from 1 and event ids the same.
    fn rows(table: &str, count: usize) -> String {
        format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count}) \
             INSERT INTO {table} (id, event_id) SELECT i, i FROM n;"
        )
    }

    /// The row ranges of each table's parts.
    fn planned(path: &Path) -> BTreeMap<&'static str, Vec<Option<RangeInclusive<i64>>>> {
        let mut parts = BTreeMap::<_, Vec<_>>::new();
        for (_, _, set) in plan(path).unwrap().sets {
            for part in set {
                parts.entry(part.table.rows()).or_default().push(part.rows);
            }
        }
        parts
    }

    #[test]
    fn parts_start_at_rows_that_exist() {
        let (_dir, path) = database(
            "INTEGER PRIMARY KEY",
            &format!(
                "INSERT INTO rocpd_kernel_dispatch (id) VALUES (1), ({max}); {}",
                rows("rocpd_memory_copy", 3 * PIECE_ROWS as usize),
                max = i64::MAX
            ),
        );
        let parts = planned(&path);
        // Ids far apart: a part each, not one per 2^52 ids between them.
        let dispatches = &parts[schema::KERNEL_DISPATCH];
        assert_eq!(dispatches.len(), 2, "{dispatches:?}");
        assert!(dispatches[0].as_ref().unwrap().contains(&1));
        assert_eq!(*dispatches[1].as_ref().unwrap(), i64::MAX..=i64::MAX);
        // Ids close together: parts of PIECE_ROWS ids.
        let copies = &parts[schema::MEMORY_COPY];
        let starts: Vec<i64> = copies
            .iter()
            .map(|r| *r.as_ref().unwrap().start())
            .collect();
        assert_eq!(starts, [1, 1 + PIECE_ROWS, 1 + 2 * PIECE_ROWS]);
    }

    #[test]
    fn a_table_whose_lookups_would_scan_is_read_in_one_part() {
        let dispatches = 3 * PIECE_ROWS as usize;
        let fill = rows("rocpd_kernel_dispatch", dispatches) + &rows("rocpd_pmc_event", dispatches);
        // The events' and dispatches' keys, as rocflow's sink writes them.
        let (_keyed, path) = database(
            "INTEGER PRIMARY KEY",
            &(fill.clone() + "CREATE INDEX by_event ON rocpd_kernel_dispatch (event_id);"),
        );
        let parts = planned(&path);
        assert_eq!(parts[schema::KERNEL_DISPATCH].len(), 3);
        assert_eq!(parts[schema::PMC_EVENT].len(), 3);
        // Neither: SQLite would build an index of the events for each part of the
        // dispatches, and scan the dispatches for each counter value's event.
        let (_bare, path) = database("INTEGER", &fill);
        let parts = planned(&path);
        assert_eq!(parts[schema::KERNEL_DISPATCH], [None]);
        assert_eq!(parts[schema::PMC_EVENT], [None]);
    }

    /// Counter values whose dispatches have no index of their events find each dispatch
    /// through one pass over the dispatches, not a scan of them per value's event: the
    /// statements' work (SQLite's instructions, counted by its progress handler) grows with
    /// the rows, not with their product.
    #[test]
    fn counter_values_find_unindexed_dispatches_in_one_pass() {
        use std::sync::atomic::AtomicU64;

        use crate::record::Batch;
        use crate::wire::Payload;

        const VALUES: usize = 2000;
        let fill = rows("rocpd_kernel_dispatch", VALUES) + &rows("rocpd_pmc_event", VALUES);
        let (_dir, path) = database(
            "INTEGER PRIMARY KEY",
            &(fill
                + "UPDATE rocpd_kernel_dispatch SET dispatch_id = 10 * id; \
                      INSERT INTO rocpd_info_process (id) VALUES (0);"),
        );
        let (tables, _, parts) = plan(&path).unwrap().sets.remove(0);
        let part = (parts.into_iter().find(|p| p.table == Table::Counters)).unwrap();
        assert_eq!(part.rows, None, "read whole, its dispatches mapped once");
        let conn = schema::open(&path).unwrap();
        let info = info::read(&conn, &tables, 0).unwrap();
        let thousands = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&thousands);
        let handler = move || {
            counted.fetch_add(1, Ordering::Relaxed);
            false
        };
        conn.progress_handler(1000, Some(handler)).unwrap();
        let mut dispatches = Vec::new();
        let mut send = |frame: Frame| {
            if let Payload::Records(Batch::CounterSample(values)) = frame.payload {
                dispatches.extend(values.iter().map(|v| v.dispatch_id));
            }
            true
        };
        let left = records::read(&conn, &tables, &info, &part, &mut Emitter::new(&mut send));
        assert_eq!(left.unwrap().orphans, 0);
        // Each value at the dispatch of its event.
        let expected: Vec<u64> = (1..=VALUES as u64).map(|event| 10 * event).collect();
        assert_eq!(dispatches, expected);
        // Some 40 (thousands of instructions); with a scan of the dispatches per event, 6,000.
        let thousands = thousands.load(Ordering::Relaxed);
        assert!(
            thousands < VALUES as u64 / 10,
            "{thousands} thousand instructions"
        );
    }
}
