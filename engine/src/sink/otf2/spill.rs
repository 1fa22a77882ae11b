//! Events held back until the archive is complete, so that OTF2 writes one location at a
//! time.
//!
//! From a location's first write to its file until the file closes, OTF2 keeps a 4 MiB
//! write buffer for it; with every location open for the whole run, a run's memory grew by
//! that much for each busy location (60 of them in the `otf2` benchmark: 358 MiB). So events
//! are encoded compactly into a small block per location (its [`Log`]), full blocks go to an
//! unlinked file beside the archive, and [`Spill::replay`] hands a location's events over in
//! order: memory is the open blocks and an OTF2 writer per thread writing. Locations' logs
//! are filled on several threads at once, each block taking its own stretch of the file.
//! The few busiest locations are written during the run instead: their blocks, once full,
//! go to a writer of their own (see [`archive::Live`](super::archive::Live)).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of a location's block kept in memory before it is written out: a write call takes
/// about a thousand events, and thousands of locations still fit in a few tens of MiB.
const BLOCK: usize = 32 * 1024;

/// One event, as the archive writes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event<'a> {
    Enter {
        time: u64,
        region: u32,
        /// Attribute (id, value) pairs.
        attributes: &'a [(u32, u64)],
    },
    Leave {
        time: u64,
        region: u32,
    },
    Metric {
        time: u64,
        metric: u32,
        value: f64,
        attributes: &'a [(u32, u64)],
    },
}

/// The file the locations' full blocks go to.
pub struct Spill {
    file: File,
    /// Bytes taken in the file.
    len: AtomicU64,
}

/// One location's events: blocks in the spill's file (offset, length), then the block
/// being filled.
#[derive(Default)]
pub struct Log {
    blocks: Vec<(u64, usize)>,
    open: Vec<u8>,
}

/// Event tags.
const ENTER: u8 = 0;
const LEAVE: u8 = 1;
const METRIC: u8 = 2;
/// Attributes an event carries at most (an API call's arguments beyond are left out).
pub const MAX_ATTRIBUTES: usize = u8::MAX as usize;
/// Bytes an event takes at most: a metric's tag, time, id, value and attributes.
const MAX_EVENT: usize = 1 + 8 + 4 + 8 + 1 + MAX_ATTRIBUTES * 12;

impl Spill {
    /// A spill in an unlinked file in `dir`, so it goes however the run ends.
    pub fn create(dir: &Path) -> io::Result<Spill> {
        Ok(Spill {
            file: tempfile::tempfile_in(dir)?,
            len: AtomicU64::new(0),
        })
    }

    /// Appends `event` to the events of `log`'s location.
    pub fn push(&self, log: &mut Log, event: Event<'_>) -> io::Result<()> {
        if log.push(event) {
            self.keep(log)?;
        }
        Ok(())
    }

    /// Writes `log`'s open block to the file, and begins another.
    fn keep(&self, log: &mut Log) -> io::Result<()> {
        let len = log.open.len();
        let offset = self.len.fetch_add(len as u64, Ordering::Relaxed);
        self.file.write_all_at(&log.open, offset)?;
        log.blocks.push((offset, len));
        log.open.clear();
        Ok(())
    }

    /// Calls `write` with each event of `log` in the order they were pushed; logs are read
    /// in parallel. The outer error is the spill's own (reading it back), the inner one the
    /// first of `write`, after which it is not called again.
    pub fn replay<E>(
        &self,
        log: &Log,
        mut write: impl FnMut(Event<'_>) -> Result<(), E>,
    ) -> io::Result<Result<(), E>> {
        if let Err(e) = self.replay_blocks(&log.blocks, &mut write)? {
            return Ok(Err(e));
        }
        Ok(decode(&log.open, &mut write))
    }

    /// Calls `write` with each event of `blocks` (taken from a [`Log`]), in order; errors
    /// as [`Spill::replay`]'s.
    pub fn replay_blocks<E>(
        &self,
        blocks: &[(u64, usize)],
        mut write: impl FnMut(Event<'_>) -> Result<(), E>,
    ) -> io::Result<Result<(), E>> {
        let mut block = Vec::new();
        for &(offset, len) in blocks {
            block.resize(len, 0);
            self.file.read_exact_at(&mut block, offset)?;
            if let Err(e) = decode(&block, &mut write) {
                return Ok(Err(e));
            }
        }
        Ok(Ok(()))
    }
}

impl Log {
    /// Appends `event` to the open block; true once the block is full.
    pub fn push(&mut self, event: Event<'_>) -> bool {
        if self.open.capacity() == 0 {
            // Exactly one block's room: growing by doubling would take twice that.
            self.open.reserve_exact(BLOCK + MAX_EVENT);
        }
        let out = &mut self.open;
        match event {
            Event::Enter {
                time,
                region,
                attributes,
            } => {
                out.push(ENTER);
                out.extend_from_slice(&time.to_le_bytes());
                out.extend_from_slice(&region.to_le_bytes());
                push_attributes(out, attributes);
            }
            Event::Leave { time, region } => {
                out.push(LEAVE);
                out.extend_from_slice(&time.to_le_bytes());
                out.extend_from_slice(&region.to_le_bytes());
            }
            Event::Metric {
                time,
                metric,
                value,
                attributes,
            } => {
                out.push(METRIC);
                out.extend_from_slice(&time.to_le_bytes());
                out.extend_from_slice(&metric.to_le_bytes());
                out.extend_from_slice(&value.to_le_bytes());
                push_attributes(out, attributes);
            }
        }
        self.open.len() >= BLOCK
    }

    /// The blocks written to the spill's file, handed over (to a writer of the location's
    /// own, which reads them back).
    pub fn take_spilled(&mut self) -> Vec<(u64, usize)> {
        std::mem::take(&mut self.blocks)
    }

    /// How many blocks are in the spill's file.
    pub fn spilled(&self) -> usize {
        self.blocks.len()
    }

    /// The open block, full or the last, handed over; the next event begins another.
    pub fn take_open(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.open)
    }
}

fn push_attributes(out: &mut Vec<u8>, attributes: &[(u32, u64)]) {
    assert!(
        attributes.len() <= MAX_ATTRIBUTES,
        "events carry few attributes"
    );
    out.push(attributes.len() as u8);
    for &(id, value) in attributes {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&value.to_le_bytes());
    }
}

/// Reads the events of a block, which [`Log::push`] encoded.
pub fn decode<E>(
    mut bytes: &[u8],
    write: &mut impl FnMut(Event<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let mut attributes = [(0, 0); MAX_ATTRIBUTES];
    while let Some((&tag, rest)) = bytes.split_first() {
        bytes = rest;
        let time = u64::from_le_bytes(take(&mut bytes));
        let id = u32::from_le_bytes(take(&mut bytes));
        let event = match tag {
            ENTER => Event::Enter {
                time,
                region: id,
                attributes: take_attributes(&mut bytes, &mut attributes),
            },
            LEAVE => Event::Leave { time, region: id },
            METRIC => Event::Metric {
                time,
                metric: id,
                value: f64::from_le_bytes(take(&mut bytes)),
                attributes: take_attributes(&mut bytes, &mut attributes),
            },
            _ => unreachable!("tags are written by `push` only"),
        };
        write(event)?;
    }
    Ok(())
}

fn take<const N: usize>(bytes: &mut &[u8]) -> [u8; N] {
    let (head, rest) = bytes.split_first_chunk().expect("events are written whole");
    *bytes = rest;
    *head
}

fn take_attributes<'a>(bytes: &mut &[u8], into: &'a mut [(u32, u64)]) -> &'a [(u32, u64)] {
    let [count] = take(bytes);
    let attributes = &mut into[..usize::from(count)];
    for attribute in attributes.iter_mut() {
        *attribute = (
            u32::from_le_bytes(take(bytes)),
            u64::from_le_bytes(take(bytes)),
        );
    }
    attributes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events come back per location, in order, across blocks written to the file.
    #[test]
    fn replays_each_location_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::create(dir.path()).unwrap();
        let (mut a, mut b) = (Log::default(), Log::default());
        let attributes = [(1, 7), (2, u64::MAX)];
        let mut expected = (Vec::new(), Vec::new());
        // Enough events to fill several blocks of each location.
        for i in 0..20_000u64 {
            let enter = (i, i as u32 % 5);
            spill
                .push(
                    &mut a,
                    Event::Enter {
                        time: enter.0,
                        region: enter.1,
                        attributes: &attributes[..(i % 3) as usize],
                    },
                )
                .unwrap();
            expected.0.push(format!(
                "enter {enter:?} {:?}",
                &attributes[..(i % 3) as usize]
            ));
            spill
                .push(
                    &mut a,
                    Event::Leave {
                        time: i + 1,
                        region: 3,
                    },
                )
                .unwrap();
            expected.0.push(format!("leave {}", i + 1));
            let value = i as f64 / 3.0;
            spill
                .push(
                    &mut b,
                    Event::Metric {
                        time: i * 2,
                        metric: 9,
                        value,
                        attributes: &attributes[1..],
                    },
                )
                .unwrap();
            expected
                .1
                .push(format!("metric {} {value} {:?}", i * 2, &attributes[1..]));
        }
        assert!(
            spill.len.load(Ordering::Relaxed) > 2 * BLOCK as u64,
            "blocks went to the file"
        );
        let replay = |location: &Log| {
            let mut seen = Vec::new();
            spill
                .replay::<()>(location, |event| {
                    seen.push(match event {
                        Event::Enter {
                            time,
                            region,
                            attributes,
                        } => format!("enter {:?} {attributes:?}", (time, region)),
                        Event::Leave { time, .. } => format!("leave {time}"),
                        Event::Metric {
                            time,
                            value,
                            attributes,
                            ..
                        } => format!("metric {time} {value} {attributes:?}"),
                    });
                    Ok(())
                })
                .unwrap()
                .unwrap();
            seen
        };
        assert_eq!(replay(&b), expected.1);
        assert_eq!(replay(&a), expected.0);
    }
}
