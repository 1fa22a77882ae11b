//! The events of dispatches. Their ids are computed from the dispatch (see `ids`), so they
//! come in no order of id, and counter samples, which may come before their dispatch or
//! without it, name them: a bare event is set aside for them, for which the dispatch's own
//! event stands in if it comes. They wait in runs sorted in memory and spilled to an
//! unlinked file beside the database, and join the event table when the records end:
//! merged in order of id, one per id, after the table's other rows, whose ids are all
//! smaller.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use rayon::slice::ParallelSliceMut;

use super::fault::Fault;
use crate::rocpd::schema::NO_DATA;
use crate::sqlite::{Value, row};

/// Events sorted in memory at a time: 3 MiB, so that a run's memory stays flat (the
/// merge reads 16 KiB of each spilled run at a time: 2 MiB for 10 M events).
const RUN: usize = 1 << 16;
/// Bytes read from a spilled run at a time, while merging.
const READ: usize = 16 << 10;

/// An event set aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
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

pub struct Dispatches {
    /// Events of the run being gathered.
    run: Vec<Event>,
    /// Runs spilled, sorted: each one's offset and length in the file.
    spilled: Vec<(u64, u64)>,
    file: Option<BufWriter<File>>,
    /// Where spilled files go: beside the database.
    dir: std::path::PathBuf,
    /// Events set aside so far, which orders them.
    arrived: u64,
    /// Events sorted in memory at a time.
    capacity: usize,
}

impl Dispatches {
    /// Events set aside in memory, and on disk in `dir`.
    pub fn new(dir: &Path) -> Dispatches {
        Dispatches::with_capacity(dir, RUN)
    }

    fn with_capacity(dir: &Path, capacity: usize) -> Dispatches {
        Dispatches {
            run: Vec::new(),
            spilled: Vec::new(),
            file: None,
            dir: dir.to_owned(),
            arrived: 0,
            capacity,
        }
    }

    pub fn add(&mut self, aside: Aside) -> io::Result<()> {
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
    fn dispatched(
        &mut self,
        id: i64,
        category: i64,
        internal: i64,
        external: i64,
    ) -> io::Result<()> {
        // The last dispatch's event sorts first among those of its id.
        let rank = u64::MAX / 2 - self.arrived;
        self.push(id, rank, category, Some((internal, external)))
    }

    /// A bare event, for a dispatch that counter samples named: kept unless its dispatch's
    /// event comes.
    fn counted(&mut self, id: i64, category: i64) -> io::Result<()> {
        let rank = u64::MAX / 2 + self.arrived;
        self.push(id, rank, category, None)
    }

    fn push(
        &mut self,
        id: i64,
        rank: u64,
        category: i64,
        correlation: Option<(i64, i64)>,
    ) -> io::Result<()> {
        self.arrived += 1;
        self.run.push(Event {
            id,
            rank,
            category,
            correlation,
        });
        if self.run.len() == self.capacity {
            self.spill()?;
        }
        Ok(())
    }

    /// Sorts the run (on the rayon pool: no two events are equal, each having its own
    /// rank, so their order is one on any number of threads) and writes it to the file.
    fn spill(&mut self) -> io::Result<()> {
        self.run.par_sort_unstable();
        let file = match &mut self.file {
            Some(file) => file,
            None => self
                .file
                .insert(BufWriter::new(tempfile::tempfile_in(&self.dir)?)),
        };
        let start = self.spilled.last().map_or(0, |(at, len)| at + len);
        for event in &self.run {
            file.write_all(&event.to_bytes())?;
        }
        self.spilled
            .push((start, (self.run.len() * EVENT_BYTES) as u64));
        self.run.clear();
        Ok(())
    }

    /// Gives `push` the event table's rows of the events set aside, in order of id, one
    /// per id.
    pub fn join(self, mut push: impl FnMut([Value; 6]) -> Result<(), Fault>) -> Result<(), Fault> {
        self.merge(|event| {
            let (stack, external) = match event.correlation {
                Some((internal, external)) => (Some(internal), Some(external)),
                None => (None, None),
            };
            push(row![
                event.id,
                event.category,
                stack,
                stack,
                external,
                NO_DATA
            ])
        })
    }

    /// Calls `each` with the event kept of each id, in order of id.
    fn merge(mut self, mut each: impl FnMut(Event) -> Result<(), Fault>) -> Result<(), Fault> {
        self.run.sort_unstable();
        let file = match self.file.take() {
            Some(file) => Some(file.into_inner().map_err(|e| e.into_error())?),
            None => None,
        };
        let mut runs: Vec<Run> = (self.spilled.iter())
            .map(|&(at, len)| Run::Spilled {
                file: file.as_ref().expect("spilled runs have a file"),
                at,
                end: at + len,
                buffer: Vec::new(),
                next: 0,
            })
            .collect();
        runs.push(Run::Memory(self.run.into_iter()));
        let mut heads = BinaryHeap::new();
        for (i, run) in runs.iter_mut().enumerate() {
            if let Some(event) = run.next()? {
                heads.push(Reverse((event, i)));
            }
        }
        let mut last = None;
        let mut keep = |event: Event| {
            if last == Some(event.id) {
                return Ok(());
            }
            last = Some(event.id);
            each(event)
        };
        while let Some(Reverse((event, i))) = heads.pop() {
            keep(event)?;
            // A run keeps the lead while its events come before every other run's head:
            // dispatches arrive nearly in order, so runs barely overlap, and most events
            // pass without the heap.
            while let Some(next) = runs[i].next()? {
                if heads.peek().is_some_and(|Reverse((head, _))| *head < next) {
                    heads.push(Reverse((next, i)));
                    break;
                }
                keep(next)?;
            }
        }
        Ok(())
    }
}

/// A sorted run, read in order while merging.
enum Run<'f> {
    Memory(std::vec::IntoIter<Event>),
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
            Run::Memory(events) => Ok(events.next()),
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
        let mut kept = Vec::new();
        let each = |e: Event| {
            kept.push((e.id, e.correlation));
            Ok(())
        };
        dispatches.merge(each).unwrap();
        kept
    }

    #[test]
    fn a_dispatchs_last_event_stands_for_every_other_of_its_id() {
        let dir = tempfile::tempdir().unwrap();
        // Runs of two: most of these are spilled and merged.
        let mut d = Dispatches::with_capacity(dir.path(), 2);
        d.counted(5, 1).unwrap();
        d.dispatched(7, 1, 70, 0).unwrap();
        d.dispatched(5, 1, 50, 0).unwrap();
        d.dispatched(6, 1, 60, 0).unwrap();
        d.counted(7, 1).unwrap();
        d.counted(8, 1).unwrap();
        d.dispatched(6, 1, 61, 0).unwrap();
        d.counted(8, 1).unwrap();
        d.dispatched(4, 1, 40, 9).unwrap();
        assert_eq!(d.spilled.len(), 4);
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
        let dir = tempfile::tempdir().unwrap();
        // Scattered, so that every run spans the ids of the others; then nearly in order,
        // as dispatches arrive, so that runs barely overlap.
        let scattered = (0..10_500).map(|i| (i * 7919) % 10_500);
        let nearly = (0..10_500).map(|i: i64| i + if i % 100 == 7 { 150 } else { 0 });
        for ids in [scattered.collect::<Vec<i64>>(), nearly.collect()] {
            let mut d = Dispatches::with_capacity(dir.path(), 1000);
            for &id in &ids {
                d.dispatched(id, 1, id * 2, id * 3).unwrap();
            }
            assert_eq!(d.spilled.len(), 10);
            let mut want: Vec<_> = ids.iter().map(|&id| (id, Some((id * 2, id * 3)))).collect();
            want.sort();
            want.dedup_by_key(|(id, _)| *id);
            assert_eq!(merged(d), want);
        }
    }
}
