//! The Perfetto sink: a `.pftrace` file (a protobuf `Trace` of `TracePacket`s in the
//! TrackEvent format) that ui.perfetto.dev and trace_processor open.
//!
//! Host threads show API calls and marker ranges, each GPU a track per queue (kernels), per
//! copy direction and per counter, and memory over time (see [`tracks`]). Slices carry their
//! ids and launch parameters as debug annotations, and flows link each API call to the
//! kernels and copies it caused. Timestamps are rocprofiler-sdk's, nanoseconds of the boot
//! time clock, which the trace declares as its clock, or counted in a coarser `time_unit`
//! (see [`time`]).
//!
//! The messages are encoded by hand ([`proto`]), a window at a time by several packet
//! sequences in parallel ([`sequence`]), and streamed to the file, a window's bytes while
//! the sequences encode the next: memory holds the timelines' reorder buffers and two
//! windows' bytes, not the run. With `split_size`, a file that has reached that
//! size is closed after the chunk of records that took it there, and the trace goes on in
//! `NAME.1.pftrace`,
//! `NAME.2.pftrace`, … each with its own descriptors and interning. Files are written in a
//! hidden directory beside their path and moved there when the run completes.

mod events;
mod packets;
mod proto;
mod sequence;
mod settings;
mod shards;
mod time;
mod tracks;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;

use self::packets::Written;
use self::sequence::Sequence;
use self::settings::Settings;
use self::shards::{Routes, Shards};
use self::tracks::{Track, TrackKey};
use super::staging::Staging;
use super::{Sink, SinkError};
use crate::catalog::Catalog;
use crate::chunk::Chunk;
use crate::column::row;
use crate::descriptors::PooledFile;
use crate::plan::sink::perfetto::{Options, TimeUnit};
use crate::record::Exit;

pub struct PerfettoSink {
    settings: Settings,
    sequences: Vec<Sequence>,
    /// The sequence of each track.
    shards: Shards,
    files: Files,
    /// What each sequence encoded of the last window, written while they encode the next:
    /// on one thread, the writing alone bounded a 16-core replay at 7.5 M records/s. (With
    /// `split_size` each chunk is written at once, so that files end where they always have.)
    pending: Vec<Written>,
    /// Per stream, the latest record start seen: where a run cut short ends.
    last_ns: HashMap<u16, u64>,
}

/// The trace's files: written in a staging directory, split at a size.
struct Files {
    staging: Staging,
    split_size: Option<u64>,
    /// Each file begins with the trace's clock, in this unit.
    time_unit: TimeUnit,
    /// The file being written, and its size so far.
    current: Option<(PooledFile, u64)>,
    /// Names of the files begun, in order; the last is the current one.
    names: Vec<String>,
}

impl PerfettoSink {
    pub fn create(options: &Options, path: PathBuf) -> Result<PerfettoSink, SinkError> {
        let sequences = rayon::current_num_threads().max(1);
        Ok(PerfettoSink {
            settings: Settings {
                tracks: options.tracks.clone(),
                flows: options.flows,
                annotations: options.annotations,
            },
            // Sequence 1 is the tracing service's own.
            sequences: (2..sequences as u32 + 2)
                .map(|id| Sequence::new(id, options.time_unit))
                .collect(),
            shards: Shards::new(sequences),
            pending: (0..sequences).map(|_| Written::default()).collect(),
            files: Files {
                staging: Staging::create(path)?,
                split_size: options.split_size.as_ref().map(|size| size.bytes),
                time_unit: options.time_unit,
                current: None,
                names: Vec::new(),
            },
            last_ns: HashMap::default(),
        })
    }

    /// Makes sure a file is open, starting the next one when the current one has reached
    /// the split size: then the sequences start over.
    fn open(&mut self, catalog: &Catalog) -> Result<(), SinkError> {
        if self.files.open(catalog)? {
            self.sequences.iter_mut().for_each(Sequence::new_file);
        }
        Ok(())
    }

    /// Appends what the sequences wrote of the last window to the file.
    fn write_pending(&mut self) -> Result<(), SinkError> {
        for out in &mut self.pending {
            out.write(|bytes| self.files.write(bytes))?;
            out.clear();
        }
        Ok(())
    }

    /// Appends what the sequences wrote to the file.
    fn drain(&mut self) -> Result<(), SinkError> {
        for sequence in &mut self.sequences {
            let written = sequence.out.written();
            written.write(|bytes| self.files.write(bytes))?;
            written.clear();
        }
        Ok(())
    }
}

impl Files {
    /// Opens the first file, or the next one if the current one is full (then returns
    /// true); a file begins with the trace's clock.
    fn open(&mut self, catalog: &Catalog) -> Result<bool, SinkError> {
        let full = match (&self.current, self.split_size) {
            (Some((_, size)), Some(limit)) => *size >= limit,
            _ => false,
        };
        if full {
            self.current = None;
        }
        if self.current.is_some() {
            return Ok(false);
        }
        let name = file_name(self.staging.target(), self.names.len());
        let path = self.staging.dir().join(&name);
        let file = PooledFile::create(&path)
            .map_err(SinkError::io(format!("creating {}", path.display())))?;
        self.names.push(name);
        self.current = Some((file, 0));
        self.write(self.time_unit.snapshot(catalog).bytes())?;
        Ok(full)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), SinkError> {
        let (file, size) = self.current.as_mut().expect("a file is open");
        *size += bytes.len() as u64;
        file.write_all(bytes).map_err(|source| SinkError::Io {
            context: format!("writing {}", self.names.last().expect("named").as_str()),
            source,
        })
    }

    /// Moves the files to their final paths.
    fn commit(self) -> Result<Vec<PathBuf>, SinkError> {
        self.staging.commit_files(&self.names)
    }
}

impl Sink for PerfettoSink {
    /// The sequences write the window in parallel, a chunk at a time when the trace is
    /// split (so that a file ends within a chunk of its split size), else whole while the
    /// last window's bytes go to the file. The
    /// records are first sorted to their tracks, chunks in parallel, and new tracks given
    /// their sequences in the window's order.
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
        for chunk in window.iter().filter(|c| !c.is_empty()) {
            // Chunks are in start order.
            let last = row(&chunk.batch, chunk.len() - 1).start_ns();
            let seen = self.last_ns.entry(chunk.stream).or_default();
            *seen = (*seen).max(last);
        }
        let settings = &self.settings;
        let mut routes: Vec<Routes> = window
            .par_iter()
            .map(|chunk| Routes::of(chunk, catalog.stream(chunk.stream), settings))
            .collect();
        routes.iter_mut().for_each(|r| self.shards.assign(r));
        if self.files.split_size.is_none() {
            // The last window's bytes are written while this one is encoded; the buffers
            // then change places.
            self.open(catalog)?;
            let (files, pending) = (&mut self.files, &self.pending);
            let ((), written) = rayon::join(
                || {
                    encode(
                        &mut self.sequences,
                        window,
                        &routes,
                        catalog,
                        &self.settings,
                    )
                },
                || {
                    let mut write = |bytes: &[u8]| files.write(bytes);
                    pending.iter().try_for_each(|out| out.write(&mut write))
                },
            );
            written?;
            for (sequence, out) in self.sequences.iter_mut().zip(&mut self.pending) {
                out.clear();
                std::mem::swap(sequence.out.written(), out);
            }
            return Ok(());
        }
        for (part, routes) in window.chunks(1).zip(routes.chunks(1)) {
            self.open(catalog)?;
            encode(&mut self.sequences, part, routes, catalog, &self.settings);
            self.drain()?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        self.write_pending()?;
        if let Some(Exit::Signal(signal)) = catalog.exit {
            self.mark_incomplete(signal, catalog)?;
        }
        loop {
            self.open(catalog)?;
            let settings = &self.settings;
            let more = self
                .sequences
                .par_iter_mut()
                .map(|sequence| {
                    let more = sequence.finish(catalog, settings);
                    sequence.encode(settings);
                    more
                })
                .reduce(|| false, |a, b| a | b);
            self.drain()?;
            if !more {
                break;
            }
        }
        self.files.current = None;
        self.files.commit()
    }
}

impl PerfettoSink {
    /// Marks each process's last moment when the application died of a signal, so a
    /// trace that ends early says why instead of looking like a run that finished.
    fn mark_incomplete(&mut self, signal: i32, catalog: &Catalog) -> Result<(), SinkError> {
        self.open(catalog)?;
        let name = format!(
            "run incomplete: the application was killed by signal {signal}; \
             records after this were not received"
        );
        for (&stream, &time) in &self.last_ns {
            let key = TrackKey {
                stream,
                track: Track::Process,
            };
            let sequence = &mut self.sequences[self.shards.of(key, 1)];
            sequence.process_instant(stream, time, &name, catalog.stream(stream));
        }
        self.drain()
    }
}

/// The sequences encode the chunks `part` in parallel, each the tracks `routes` give it.
fn encode(
    sequences: &mut [Sequence],
    part: &[Arc<Chunk>],
    routes: &[Routes],
    catalog: &Catalog,
    settings: &Settings,
) {
    sequences
        .par_iter_mut()
        .enumerate()
        .for_each(|(shard, sequence)| {
            for (chunk, routes) in part.iter().zip(routes) {
                let meta = catalog.stream(chunk.stream);
                sequence.write(chunk, routes, meta, settings, shard);
            }
            // A sequence done placing encodes at once: the pieces of a busy one go to the
            // threads whose sequences are done.
            sequence.encode(settings);
        });
}

/// The `index`th file of a trace at `target`: `trace.pftrace`, `trace.1.pftrace`, …
fn file_name(target: &Path, index: usize) -> String {
    let name = target.file_name().map_or_else(
        || "trace.pftrace".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    match (index, name.rsplit_once('.')) {
        (0, _) => name,
        (_, Some((stem, extension))) => format!("{stem}.{index}.{extension}"),
        (_, None) => format!("{name}.{index}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_files_are_numbered_before_the_extension() {
        let target = Path::new("out/run.pftrace");
        assert_eq!(file_name(target, 0), "run.pftrace");
        assert_eq!(file_name(target, 2), "run.2.pftrace");
        assert_eq!(file_name(Path::new("trace"), 1), "trace.1");
    }
}
