//! Which sequence writes each track, and a window's records sorted to their tracks.
//!
//! Tracks differ a hundredfold in records (a busy thread's calls against a rarely used
//! queue's kernels). Hashed to sequences, they left some sequences several busy tracks and
//! others none: in a 20 M-record replay on 16 cores, the busiest sequence took 457 ms, and
//! one with no track 140 ms, all of it spent scanning the records for its own. A track goes
//! instead, when first seen, to the sequence with the least work so far; each record's
//! track is found once, chunks in parallel, and a sequence skips the chunks that hold none
//! of its tracks.

use rustc_hash::FxHashMap as HashMap;

use super::settings::Settings;
use super::tracks::{Track, TrackKey, copy_agent};
use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::plan::sink::perfetto::Shown;
use crate::record::{Batch, MemoryCopy};

/// The sequence each track is written by.
pub struct Shards {
    of: HashMap<TrackKey, usize>,
    /// The work each sequence has been given, in records weighted by [`weight`].
    load: Vec<u64>,
}

impl Shards {
    pub fn new(sequences: usize) -> Shards {
        Shards {
            of: HashMap::default(),
            load: vec![0; sequences.max(1)],
        }
    }

    /// The sequence of `key`, which `records` more records are for: the least loaded one
    /// when the track is new (the first of those, so that a trace is the same on every
    /// run).
    pub fn of(&mut self, key: TrackKey, records: u64) -> usize {
        let load = &self.load;
        let shard = *self.of.entry(key).or_insert_with(|| {
            (0..load.len())
                .min_by_key(|&shard| load[shard])
                .expect("a sequence at least")
        });
        self.load[shard] += records * weight(key.track);
        shard
    }

    /// Gives each track of `routes` its sequence, tracks in the order they first appear.
    pub fn assign(&mut self, routes: &mut Routes) {
        for track in &mut routes.tracks {
            track.shard = self.of(track.key, track.records);
        }
    }
}

/// What writing a record of `track` costs, roughly: a counter value is added to its
/// dispatch's (or read's) sum, a tenth of the work of encoding a slice or a value.
fn weight(track: Track) -> u64 {
    match track {
        Track::Counter(..) | Track::DeviceCounter(..) | Track::Spm(..) => 1,
        _ => 10,
    }
}

/// A chunk's records by track.
#[derive(Debug, Default)]
pub struct Routes {
    /// The chunk's tracks in the order they first appear.
    tracks: Vec<Route>,
    /// Per record, its track's index in `tracks`; empty for a chunk the trace does not
    /// show.
    of: Vec<u16>,
}

#[derive(Debug)]
struct Route {
    key: TrackKey,
    records: u64,
    /// The sequence that writes the track, once [`Shards::assign`] has said.
    shard: usize,
}

impl Routes {
    /// The track of each record of `chunk` the trace shows.
    pub fn of(chunk: &Chunk, meta: &StreamMeta, settings: &Settings) -> Routes {
        let shows = |shown| settings.tracks.contains(&shown);
        let mut routes = Routes {
            tracks: Vec::new(),
            of: Vec::with_capacity(chunk.len()),
        };
        let stream = chunk.stream;
        match &chunk.batch {
            Batch::Api(records) if shows(Shown::Api) => {
                routes.add(stream, records, |r| r.tid, Track::Thread);
            }
            Batch::Marker(records) if shows(Shown::Marker) => {
                routes.add(stream, records, |r| r.tid, Track::Markers);
            }
            Batch::KernelDispatch(records) if shows(Shown::Kernel) => {
                let queue = |(agent, queue)| Track::Queue(agent, queue);
                routes.add(stream, records, |r| (r.agent, r.queue), queue);
            }
            Batch::MemoryCopy(records) if shows(Shown::MemoryCopy) => {
                let engines = |r: &MemoryCopy| (copy_agent(r, meta), r.operation_id);
                let copies = |(agent, operation)| Track::Copies(agent, operation);
                routes.add(stream, records, engines, copies);
            }
            // A counter's samples of a dispatch come together: they stay so within the
            // sequence of their counter's track.
            Batch::CounterSample(records) if shows(Shown::Counter) => {
                let counter = |(agent, counter)| Track::Counter(agent, counter);
                routes.add(stream, records, |r| (r.agent, r.counter_id), counter);
            }
            Batch::DeviceCounterSample(records) if shows(Shown::DeviceCounter) => {
                let counter = |(agent, counter)| Track::DeviceCounter(agent, counter);
                routes.add(stream, records, |r| (r.agent, r.counter_id), counter);
            }
            Batch::SpmSample(records) if shows(Shown::Spm) => {
                let counter = |(agent, counter)| Track::Spm(agent, counter);
                routes.add(stream, records, |r| (r.agent, r.counter_id), counter);
            }
            // Frees name only the address: a process's allocations stay together.
            Batch::MemoryAllocation(records) if shows(Shown::MemoryAllocation) => {
                routes.add(stream, records, |_| (), |()| Track::Process);
            }
            Batch::ScratchMemory(records) if shows(Shown::ScratchMemory) => {
                routes.add(stream, records, |r| r.agent, Track::Scratch);
            }
            // A graph's launch and a HIP event's barrier are GPU work, as kernels are.
            Batch::GraphLaunch(records) if shows(Shown::Kernel) => {
                routes.add(stream, records, |r| r.agent, Track::Graphs);
            }
            Batch::HipEventBarrier(records) if shows(Shown::Kernel) => {
                let barriers = |(agent, queue)| Track::Barriers(agent, queue);
                routes.add(stream, records, |r| (r.agent, r.queue), barriers);
            }
            _ => {}
        }
        routes
    }

    /// Routes `records`, each to the track of its `id`: ids are compared rather than
    /// tracks, as they are cheaper to, and a chunk's records come in runs of one track
    /// among few.
    fn add<R, I: Copy + PartialEq>(
        &mut self,
        stream: u16,
        records: &[R],
        id: impl Fn(&R) -> I,
        track: impl Fn(I) -> Track,
    ) {
        let mut ids: Vec<I> = Vec::new();
        let mut last = None;
        for record in records {
            let id = id(record);
            let index = match last {
                Some((last, index)) if last == id => index,
                _ => {
                    let index = match ids.iter().position(|&known| known == id) {
                        Some(index) => index,
                        None => {
                            ids.push(id);
                            self.tracks.push(Route {
                                key: TrackKey {
                                    stream,
                                    track: track(id),
                                },
                                records: 0,
                                shard: 0,
                            });
                            self.tracks.len() - 1
                        }
                    };
                    last = Some((id, index));
                    index
                }
            };
            self.tracks[index].records += 1;
            // A chunk holds at most `chunk::MAX_RECORDS` records, so fewer tracks than a
            // `u16` counts.
            self.of.push(index as u16);
        }
    }

    /// Whether sequence `shard` writes any of the chunk's records.
    pub fn reach(&self, shard: usize) -> bool {
        self.tracks.iter().any(|t| t.shard == shard)
    }

    /// The track of record `index`, if sequence `shard` writes it.
    #[inline]
    pub fn mine(&self, index: usize, shard: usize) -> Option<TrackKey> {
        let route = &self.tracks[usize::from(self.of[index])];
        (route.shard == shard).then_some(route.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(track: Track) -> TrackKey {
        TrackKey { stream: 0, track }
    }

    #[test]
    fn a_new_track_goes_to_the_sequence_with_the_least_work() {
        let mut shards = Shards::new(3);
        assert_eq!(shards.of(key(Track::Thread(1)), 100), 0);
        assert_eq!(shards.of(key(Track::Counter(1, 1)), 500), 1);
        assert_eq!(shards.of(key(Track::Thread(2)), 60), 2);
        // Counter values weigh a tenth: 500 of them are less work than 60 calls.
        assert_eq!(shards.of(key(Track::Thread(3)), 1), 1);
        // A known track stays with its sequence, however loaded.
        assert_eq!(shards.of(key(Track::Thread(1)), 1000), 0);
        assert_eq!(shards.of(key(Track::Thread(4)), 1), 1);
    }
}
