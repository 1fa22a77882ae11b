//! The events of dispatches. Their ids are computed from the dispatch (see `ids`), so they
//! come in no order of id, and counter samples, which may come before their dispatch or
//! without it, name them: a bare event is set aside for them, for which the dispatch's own
//! event stands in if it comes. They are gathered in runs, which are sorted and spilled
//! to an unlinked file beside the database while the next are gathered, and join the event
//! table when the records end: merged in order of id, one per id, after the table's other
//! rows, whose ids are all smaller.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rayon::slice::ParallelSliceMut;

use crate::rocpd::schema::NO_DATA;
use crate::sqlite::{Value, row};

/// Events sorted in memory at a time: 3 MiB, so that a run's memory stays flat (a segment
/// of records gathers a few runs before they are spilled; the merge reads 16 KiB of each
/// spilled run at a time: 2 MiB for 10 M events).
const RUN: usize = 1 << 16;
/// Bytes read from a spilled run at a time, while merging.
const READ: usize = 16 << 10;

/// An event set aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Event {
    id: i64,
    /// Which of the events of one id is kept: the last dispatch's, else the first bare one.
    rank: u64,
    category: i64,
    /// The dispatch's correlation ids, internal and external; a bare event has none.
    correlation: Option<(i64, i64)>,
}

/// Bytes of an event in a spilled run.
const EVENT_BYTES: usize = 41;

impl Event {
    /// The event as a spilled run holds it.
    fn to_bytes(self) -> [u8; EVENT_BYTES] {
        let (internal, external) = self.correlation.unwrap_or_default();
        let words = [self.id, self.rank as i64, self.category, internal, external];
        let mut bytes = [0; EVENT_BYTES];
        for (i, word) in words.into_iter().enumerate() {
            bytes[8 * i..8 * i + 8].copy_from_slice(&word.to_le_bytes());
        }
        bytes[40] = u8::from(self.correlation.is_some());
        bytes
    }

    fn from_bytes(bytes: &[u8]) -> Event {
        let word = |i: usize| i64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap());
        Event {
            id: word(0),
            rank: word(1) as u64,
            category: word(2),
            correlation: (bytes[40] != 0).then(|| (word(3), word(4))),
        }
    }
}

/// An event a record sets aside, to be added in the records' order.
#[derive(Debug, Clone, Copy)]
pub enum Aside {
    /// A dispatch's, with its correlation ids, internal and external.
    Dispatched {
        id: i64,
        category: i64,
        internal: i64,
        external: i64,
    },
    /// A bare one, for a dispatch that counter samples named.
    Counted { id: i64, category: i64 },
}

/// Events being gathered.
pub struct Dispatches {
    /// Events of the run being gathered.
    run: Vec<Event>,
    /// Runs gathered whole, not yet spilled.
    full: Vec<Vec<Event>>,
    /// Events set aside so far, which orders them.
    arrived: u64,
    /// Events sorted in memory at a time.
    capacity: usize,
}

impl Default for Dispatches {
    fn default() -> Dispatches {
        Dispatches::with_capacity(RUN)
    }
}

impl Dispatches {
    fn with_capacity(capacity: usize) -> Dispatches {
        Dispatches {
            run: Vec::new(),
            full: Vec::new(),
            arrived: 0,
            capacity,
        }
    }

    /// The runs gathered whole since the last call, to be spilled.
    pub fn full(&mut self) -> Vec<Vec<Event>> {
        std::mem::take(&mut self.full)
    }

    pub fn add(&mut self, aside: Aside) {
        match aside {
            Aside::Dispatched {
                id,
                category,
                internal,
                external,
            } => self.dispatched(id, category, internal, external),
            Aside::Counted { id, category } => self.counted(id, category),
        }
    }

    /// The event of a dispatch, which replaces any other of its id.
    fn dispatched(&mut self, id: i64, category: i64, internal: i64, external: i64) {
        // The last dispatch's event sorts first among those of its id.
        let rank = u64::MAX / 2 - self.arrived;
        self.push(id, rank, category, Some((internal, external)));
    }

    /// A bare event, for a dispatch that counter samples named: kept unless its dispatch's
    /// event comes.
    fn counted(&mut self, id: i64, category: i64) {
        let rank = u64::MAX / 2 + self.arrived;
        self.push(id, rank, category, None);
    }

    fn push(&mut self, id: i64, rank: u64, category: i64, correlation: Option<(i64, i64)>) {
        self.arrived += 1;
        self.run.push(Event {
            id,
            rank,
            category,
            correlation,
        });
        if self.run.len() == self.capacity {
            let run = std::mem::replace(&mut self.run, Vec::with_capacity(self.capacity));
            self.full.push(run);
        }
    }
}

/// Runs of events spilled, sorted, to a file.
pub struct Spilled {
    /// Each run's offset and length in the file.
    runs: Vec<(u64, u64)>,
    file: Option<File>,
    /// Where the file goes: beside the database.
    dir: std::path::PathBuf,
}

impl Spilled {
    /// Runs to be spilled to a file in `dir`.
    pub fn new(dir: &Path) -> Spilled {
        Spilled {
            runs: Vec::new(),
            file: None,
            dir: dir.to_owned(),
        }
    }

    /// Sorts each run (on the rayon pool: no two events are equal, each having its own
    /// rank, so their order is one on any number of threads) and writes it to the file.
    pub fn spill(&mut self, runs: Vec<Vec<Event>>) -> io::Result<()> {
        for mut run in runs {
            run.par_sort_unstable();
            let file = match &mut self.file {
                Some(file) => file,
                None => self.file.insert(tempfile::tempfile_in(&self.dir)?),
            };
            let bytes: Vec<u8> = run.iter().flat_map(|event| event.to_bytes()).collect();
            let at = self.runs.last().map_or(0, |(at, len)| at + len);
            file.write_all_at(&bytes, at)?;
            self.runs.push((at, bytes.len() as u64));
        }
        Ok(())
    }

    /// The events set aside, these spilled and those still `gathered`, each run sorted,
    /// ready to be merged.
    pub fn sorted(mut self, mut gathered: Dispatches) -> io::Result<Sorted> {
        self.spill(gathered.full())?;
        gathered.run.par_sort_unstable();
        Ok(Sorted {
            memory: gathered.run,
            spilled: self.runs,
            file: self.file,
        })
    }
}

/// The events set aside, in sorted runs: spilled ones, and the last in memory.
pub struct Sorted {
    memory: Vec<Event>,
    spilled: Vec<(u64, u64)>,
    file: Option<File>,
}

impl Sorted {
    /// The event table's rows of the events, in order of id, one per id.
    pub fn rows(&self) -> io::Result<impl Iterator<Item = io::Result<[Value; 6]>> + Send + '_> {
        let rows = self.merged()?.map(|event| {
            let event = event?;
            let (stack, external) = match event.correlation {
                Some((internal, external)) => (Some(internal), Some(external)),
                None => (None, None),
            };
            Ok(row![
                event.id,
                event.category,
                stack,
                stack,
                external,
                NO_DATA
            ])
        });
        Ok(rows)
    }

    /// The event kept of each id, in order of id.
    fn merged(&self) -> io::Result<Merged<'_>> {
        let spilled = self.spilled.iter().map(|&(at, len)| Run::Spilled {
            file: self.file.as_ref().expect("spilled runs have a file"),
            at,
            end: at + len,
            buffer: Vec::new(),
            next: 0,
        });
        let mut runs: Vec<Run> = spilled.chain([Run::Memory(self.memory.iter())]).collect();
        let mut heads = BinaryHeap::new();
        for (i, run) in runs.iter_mut().enumerate() {
            if let Some(event) = run.next()? {
                heads.push(Reverse((event, i)));
            }
        }
        Ok(Merged {
            runs,
            heads,
            lead: None,
            last: None,
        })
    }
}

/// The events of sorted runs, merged in order, the first of each id kept.
struct Merged<'f> {
    runs: Vec<Run<'f>>,
    /// Each run's next event, but the leading run's.
    heads: BinaryHeap<Reverse<(Event, usize)>>,
    /// The run whose events come before every other run's head.
    lead: Option<usize>,
    /// The id of the last event given.
    last: Option<i64>,
}

impl Merged<'_> {
    /// The next event in order, the same id or not.
    fn next_any(&mut self) -> io::Result<Option<Event>> {
        // A run keeps the lead while its events come before every other run's head:
        // dispatches arrive nearly in order, so runs barely overlap, and most events
        // pass without the heap.
        if let Some(i) = self.lead {
            match self.runs[i].next()? {
                Some(next)
                    if (self.heads.peek()).is_some_and(|Reverse((head, _))| *head < next) =>
                {
                    self.heads.push(Reverse((next, i)));
                }
                Some(next) => return Ok(Some(next)),
                None => {}
            }
        }
        let head = self.heads.pop().map(|Reverse((event, i))| {
            self.lead = Some(i);
            event
        });
        Ok(head)
    }
}

impl Iterator for Merged<'_> {
    type Item = io::Result<Event>;

    fn next(&mut self) -> Option<io::Result<Event>> {
        loop {
            match self.next_any() {
                Ok(Some(event)) if self.last == Some(event.id) => {}
                Ok(Some(event)) => {
                    self.last = Some(event.id);
                    return Some(Ok(event));
                }
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// A sorted run, read in order while merging.
enum Run<'f> {
    Memory(std::slice::Iter<'f, Event>),
    Spilled {
        file: &'f File,
        at: u64,
        end: u64,
        buffer: Vec<u8>,
        next: usize,
    },
}

impl Run<'_> {
    fn next(&mut self) -> io::Result<Option<Event>> {
        match self {
            Run::Memory(events) => Ok(events.next().copied()),
            Run::Spilled {
                file,
                at,
                end,
                buffer,
                next,
            } => {
                if *next == buffer.len() {
                    let len = (*end - *at).min((READ / EVENT_BYTES * EVENT_BYTES) as u64);
                    if len == 0 {
                        return Ok(None);
                    }
                    buffer.resize(len as usize, 0);
                    file.read_exact_at(buffer, *at)?;
                    *at += len;
                    *next = 0;
                }
                let event = Event::from_bytes(&buffer[*next..*next + EVENT_BYTES]);
                *next += EVENT_BYTES;
                Ok(Some(event))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events kept, as (id, correlation ids).
    fn merged(dispatches: Dispatches) -> Vec<(i64, Option<(i64, i64)>)> {
        let dir = tempfile::tempdir().unwrap();
        let sorted = Spilled::new(dir.path()).sorted(dispatches).unwrap();
        let kept = sorted
            .merged()
            .unwrap()
            .map(|e| e.map(|e| (e.id, e.correlation)));
        kept.collect::<io::Result<_>>().unwrap()
    }

    #[test]
    fn a_dispatchs_last_event_stands_for_every_other_of_its_id() {
        // Runs of two: most of these are spilled and merged.
        let mut d = Dispatches::with_capacity(2);
        d.counted(5, 1);
        d.dispatched(7, 1, 70, 0);
        d.dispatched(5, 1, 50, 0);
        d.dispatched(6, 1, 60, 0);
        d.counted(7, 1);
        d.counted(8, 1);
        d.dispatched(6, 1, 61, 0);
        d.counted(8, 1);
        d.dispatched(4, 1, 40, 9);
        assert_eq!(d.full.len(), 4);
        let want = [
            (4, Some((40, 9))),
            (5, Some((50, 0))),
            (6, Some((61, 0))),
            (7, Some((70, 0))),
            (8, None),
        ];
        assert_eq!(merged(d), want);
    }

    #[test]
    fn events_come_out_in_order_of_id_across_runs() {
        // Scattered, so that every run spans the ids of the others; then nearly in order,
        // as dispatches arrive, so that runs barely overlap.
        let scattered = (0..10_500).map(|i| (i * 7919) % 10_500);
        let nearly = (0..10_500).map(|i: i64| i + if i % 100 == 7 { 150 } else { 0 });
        for ids in [scattered.collect::<Vec<i64>>(), nearly.collect()] {
            let mut d = Dispatches::with_capacity(1000);
            for &id in &ids {
                d.dispatched(id, 1, id * 2, id * 3);
            }
            assert_eq!(d.full.len(), 10);
            let mut want: Vec<_> = ids.iter().map(|&id| (id, Some((id * 2, id * 3)))).collect();
            want.sort();
            want.dedup_by_key(|(id, _)| *id);
            assert_eq!(merged(d), want);
        }
    }
}
