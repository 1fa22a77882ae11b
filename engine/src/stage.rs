//! The stage runtime: frames in, through the transforms, out to every sink.
//!
//! The decoder applies metadata and gathers record chunks into a window. Each chunk is put
//! in start-time order (per thread and per queue, as timelines need; across chunks, records
//! keep their arrival order). The transforms run over the window in pipeline order, in
//! parallel across chunks on rayon (one chunk at a time, in arrival order, for transforms
//! that count or gather); then the window goes to every sink that takes its kinds. When the
//! records end, what a transform still holds goes through the transforms after it. Each sink runs on
//! its own thread behind a bounded channel, so a slow sink holds the decoder back instead of
//! filling memory, and a failing sink stops alone.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, RwLock};

use rayon::prelude::*;

use crate::catalog::{Catalog, MarkerMessages};
use crate::chunk::{Chunk, MAX_RECORDS};
use crate::column::row;
use crate::kernel_names::KernelNames;
use crate::kernel_rename::Renamer;
use crate::merge::Merge;
use crate::plan::{Plan, SinkPlan, StageGraph};
use crate::progress::{Board, SinkProgress, SinkState};
use crate::record::{ApiArgs, Batch, Meta, RecordKind};
use crate::sink::{Placeholders, Sink, SinkError};
use crate::source::{Ending, Source, SourceError};
use crate::table::Table;
use crate::transform::Transform;
use crate::trim;
use crate::wire::{Frame, Payload};

/// Chunks gathered, per core, before the transforms run over them: enough that every core
/// stays busy through a window's parallel steps (at 4, the cores waited on each other at
/// every step's end: a CSV replay took 13 % longer), few enough that a window's output
/// stays small (each step up doubles the windows' memory).
const CHUNKS_PER_CORE: usize = 8;
/// The records a window holds at most, in bytes: with the sinks' queues, what bounds the
/// records in flight, whatever the number of cores. On 16 cores, windows of 32 MiB with
/// two queued per sink held a 20 M-record Parquet replay at 569-587 MiB, and a rocpd one
/// at 172-175 MiB; 16 MiB with one queued, 408-430 and 109-113 MiB, at the same speed.
const WINDOW_BYTES: usize = 16 << 20;
/// Windows queued for one sink before the decoder waits for it: one, so that a sink finds
/// its next window ready while the decoder builds the one after.
const SINK_QUEUE: usize = 1;

/// Why the stages stopped without finishing their sinks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StageError {
    /// A transform of the plan cannot be built: a recorded plan's expression or pattern
    /// that this rocflow does not compile.
    #[error("transform `{name}`: {message}")]
    Transform { name: String, message: String },
    /// A strict transform failed on a record: the run stopped, and every sink dropped what
    /// it had written.
    #[error("{0}")]
    Strict(String),
}

/// What happened in a run of the stages.
#[derive(Debug)]
pub struct Report {
    /// Records decoded, per kind.
    pub records_in: Vec<(RecordKind, u64)>,
    pub sinks: Vec<SinkReport>,
    /// The outlets fed beside the sinks, in order: what the post-steps collect as the
    /// records pass, so that none reads them again.
    pub beside: Vec<SinkReport>,
    /// Transforms that failed on some records: name, count, the first messages.
    pub failures: Vec<(String, u64, Vec<String>)>,
    /// The run's metadata, as it stood at the end.
    pub catalog: Catalog,
    /// Where the counter passes of a multi-pass run disagreed (see [`crate::merge`]).
    pub disagreements: Vec<String>,
    /// The counters at least one value arrived of: stream and counter id.
    pub counted: BTreeSet<(u16, u32)>,
    /// How the source's input ended.
    pub source: Result<Ending, SourceError>,
}

#[derive(Debug)]
pub struct SinkReport {
    pub name: String,
    pub records: u64,
    pub outcome: Result<Vec<PathBuf>, SinkError>,
}

enum Message {
    /// A window's chunks of the kinds the sink takes.
    Window(Vec<Arc<Chunk>>),
    Table(Arc<Table>),
}

/// Opens a sink for a plan's sink entry (see [`sink::open`]); plugins and tests bring
/// their own.
pub type OpenSink<'a> =
    dyn Fn(&SinkPlan, &Placeholders) -> Result<Box<dyn Sink>, SinkError> + Sync + 'a;

/// Where records leave the stages: a sink's name, the kinds it takes, and how to open it
/// (when its first records arrive, so the run's metadata can fill the path's placeholders).
pub struct Outlet<'a> {
    pub name: String,
    pub kinds: Vec<RecordKind>,
    pub open: Box<OpenOutlet<'a>>,
}

/// Opens an outlet's sink with the run's placeholder values.
pub type OpenOutlet<'a> =
    dyn Fn(&Placeholders) -> Result<Box<dyn Sink>, SinkError> + Send + Sync + 'a;

/// Runs the plan's stages over the source's records, a run of several counter passes
/// merged into one (see [`crate::merge`]), into the plan's sinks, opened with `open`.
pub fn run(
    plan: &Plan,
    source: &mut dyn Source,
    open: &OpenSink<'_>,
) -> Result<Report, StageError> {
    run_watched(plan, source, open, Vec::new(), &Board::default())
}

/// [`run`], saying how far it got on `board`, with `beside` fed as the sinks are (what the
/// post-steps collect; see [`Report::beside`]).
pub fn run_watched(
    plan: &Plan,
    source: &mut dyn Source,
    open: &OpenSink<'_>,
    beside: Vec<Outlet<'_>>,
    board: &Board,
) -> Result<Report, StageError> {
    let outlets = plan
        .sinks
        .iter()
        .map(|sink| Outlet {
            name: sink.name.clone(),
            kinds: sink.kinds.clone(),
            open: Box::new(move |placeholders| open(sink, placeholders)),
        })
        .collect();
    run_beside(&plan.stages, source, outlets, beside, board)
}

/// Runs the stages' transforms over the source's records until they end, a run of several
/// counter passes merged into one, into `outlets`, with kernels named in the stages' form,
/// then finishes every sink, saying how far it got on `board`. Every reader of records
/// comes this way, so the summary counts what the sinks hold: one pass's dispatches.
pub fn run_into(
    stages: &StageGraph,
    source: &mut dyn Source,
    outlets: Vec<Outlet<'_>>,
    board: &Board,
) -> Result<Report, StageError> {
    run_beside(stages, source, outlets, Vec::new(), board)
}

/// [`run_into`], with `beside` fed as the outlets are but not shown on `board`, their
/// reports apart (see [`Report::beside`]).
fn run_beside(
    stages: &StageGraph,
    source: &mut dyn Source,
    outlets: Vec<Outlet<'_>>,
    beside: Vec<Outlet<'_>>,
    board: &Board,
) -> Result<Report, StageError> {
    let shown = outlets.len();
    let unseen = Board::default();
    let mut source = Merge::new(source);
    let transforms: Vec<Transform> = (stages.transforms.iter())
        .map(|t| {
            Transform::new(t).map_err(|message| StageError::Transform {
                name: t.name.clone(),
                message,
            })
        })
        .collect::<Result<_, _>>()?;
    let catalog = Arc::new(RwLock::new(Catalog::named(stages.kernel_names)));
    // Set when the run stops early: sinks then drop their output instead of finishing it.
    let abandoned = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let _trimming = trim::periodically(scope);
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for (i, outlet) in outlets.into_iter().chain(beside).enumerate() {
            let (sender, receiver) = sync_channel(SINK_QUEUE);
            senders.push((outlet.kinds.clone(), sender));
            let catalog = Arc::clone(&catalog);
            let abandoned = &abandoned;
            let progress = match i < shown {
                true => board.sink(&outlet.name),
                false => unseen.sink(&outlet.name),
            };
            handles.push(
                scope.spawn(move || drive_sink(outlet, receiver, &catalog, abandoned, &progress)),
            );
        }
        let mut decoder = Decoder {
            transforms: &transforms,
            catalog: &catalog,
            messages: MarkerMessages::default(),
            metadata: Vec::new(),
            outlets: senders,
            window: Vec::new(),
            window_chunks: CHUNKS_PER_CORE * rayon::current_num_threads().max(2),
            origin_ns: None,
            counts: Vec::new(),
            counted: BTreeSet::new(),
            stopped: None,
            args: HashMap::default(),
            renamer: (stages.kernel_names == KernelNames::Renamed).then(Renamer::default),
            board,
        };
        while let Some(frame) = source.next_frame() {
            decoder.frame(frame);
            if decoder.stopped.is_some() {
                break;
            }
        }
        let ending = source.finish();
        // Before any sink finishes: they describe the input in their outputs.
        catalog.write().expect("no poison").partial = crate::source::partial(&ending);
        board.input_ended();
        decoder.flush();
        decoder.release_renamed();
        decoder.finish();
        if let Some(error) = decoder.stopped.take() {
            abandoned.store(true, Ordering::Relaxed);
            drop(decoder); // the sinks see the channels close, and drop their output
            for handle in handles {
                handle
                    .join()
                    .expect("sink threads catch their own failures");
            }
            return Err(StageError::Strict(error));
        }
        for transform in &transforms {
            if let Some(table) = transform.table() {
                let table = Arc::new(table);
                for (kinds, sender) in &decoder.outlets {
                    if kinds.iter().any(|&k| transform.applies_to(k)) {
                        let _ = sender.send(Message::Table(Arc::clone(&table)));
                    }
                }
            }
        }
        let records_in = std::mem::take(&mut decoder.counts);
        let counted = std::mem::take(&mut decoder.counted);
        drop(decoder); // closes the channels: the sinks finish
        let mut sinks: Vec<SinkReport> = handles
            .into_iter()
            .map(|h| h.join().expect("sink threads catch their own failures"))
            .collect();
        let beside = sinks.split_off(shown);
        let failures = transforms
            .iter()
            .filter_map(|t| {
                let f = t.failures();
                let count = f.count.load(Ordering::Relaxed);
                (count > 0).then(|| {
                    (
                        t.name.clone(),
                        count,
                        f.first.lock().expect("no poison").clone(),
                    )
                })
            })
            .collect();
        Ok(Report {
            records_in,
            sinks,
            beside,
            failures,
            catalog: catalog.read().expect("no poison").clone(),
            disagreements: source.disagreements().to_vec(),
            counted,
            source: ending,
        })
    })
}

struct Decoder<'a> {
    transforms: &'a [Transform],
    catalog: &'a RwLock<Catalog>,
    messages: MarkerMessages,
    /// Metadata frames, per stream, not in the catalog yet (see [`Decoder::apply_metadata`]).
    metadata: Vec<(u16, Vec<Meta>)>,
    outlets: Vec<(Vec<RecordKind>, SyncSender<Message>)>,
    window: Vec<Chunk>,
    window_chunks: usize,
    /// The first record's timestamp: time windows are relative to it.
    origin_ns: Option<u64>,
    counts: Vec<(RecordKind, u64)>,
    /// Stream and id of each counter a value arrived of.
    counted: BTreeSet<(u16, u32)>,
    /// Why the run stops early (a strict transform failed).
    stopped: Option<String>,
    /// Per stream, the arguments frame that came before its next API records frame.
    args: HashMap<u16, ApiArgs>,
    /// With kernels renamed after ROCTx ranges: what it needs, and the records it holds.
    renamer: Option<Renamer>,
    board: &'a Board,
}

impl Decoder<'_> {
    fn frame(&mut self, frame: Frame) {
        match frame.payload {
            Payload::Meta(mut items) => {
                self.messages.take(frame.stream, &mut items);
                if !items.is_empty() {
                    self.metadata.push((frame.stream, items));
                }
            }
            Payload::Args(args) => {
                if self.wanted(RecordKind::Api) {
                    self.args.insert(frame.stream, args);
                }
            }
            // Thread traces are no records: the runner keeps them from the spool (see
            // `crate::thread_trace`).
            Payload::Trace(_) => {}
            Payload::Records(mut batch) => {
                if let Batch::Marker(markers) = &mut batch {
                    self.messages.name(frame.stream, markers);
                }
                let kind = batch.kind();
                self.board.decoded(batch.len() as u64);
                match self.counts.iter_mut().find(|(k, _)| *k == kind) {
                    Some((_, n)) => *n += batch.len() as u64,
                    None => self.counts.push((kind, batch.len() as u64)),
                }
                if let Batch::CounterSample(samples) = &batch {
                    // A counter's instances come together: one look-up each run of them.
                    let mut last = None;
                    for id in samples.iter().map(|s| s.counter_id) {
                        if last.replace(id) != Some(id) {
                            self.counted.insert((frame.stream, id));
                        }
                    }
                }
                if self.origin_ns.is_none() && !batch.is_empty() {
                    self.origin_ns = (0..batch.len()).map(|i| row(&batch, i).start_ns()).min();
                }
                let batch = match &mut self.renamer {
                    Some(renamer) => match renamer.take(frame.stream, batch) {
                        Some(batch) => batch,
                        None => return,
                    },
                    None => batch,
                };
                // Records that no transform and no sink takes are only counted (they are
                // in the spool already).
                if !self.wanted(kind) {
                    return;
                }
                let args = match kind {
                    RecordKind::Api => self.args.remove(&frame.stream).map(Arc::new),
                    _ => None,
                };
                for batch in pieces(batch) {
                    let mut chunk = Chunk::new(frame.stream, batch);
                    chunk.args.clone_from(&args);
                    self.push(chunk);
                }
            }
        }
    }

    /// Puts the metadata that came since the last window into the catalog. Records in a
    /// window use metadata sent before them, which they find there; applying it waits for
    /// the sinks to finish the window they are writing (they read the catalog meanwhile),
    /// so it is applied once per window, not once per frame: a run with many ROCTx
    /// messages sends a metadata frame every few records.
    fn apply_metadata(&mut self) {
        if self.metadata.is_empty() {
            return;
        }
        let mut catalog = self.catalog.write().expect("no poison");
        for (stream, items) in self.metadata.drain(..) {
            let kernels: Vec<u64> = (items.iter())
                .filter_map(|item| match item {
                    Meta::KernelSymbol(symbol) => Some(symbol.kernel_id),
                    _ => None,
                })
                .collect();
            catalog.apply(stream, items);
            // Kernel names live in the metadata, in the run's form: renaming transforms
            // apply to them here, once.
            for rename in self.transforms.iter().filter_map(Transform::rename) {
                for &kernel in &kernels {
                    let name = rename.apply(catalog.stream(stream).kernel_name(kernel));
                    catalog.name_kernel(stream, kernel, name);
                }
            }
            let made: Vec<Meta> = (self.transforms.iter())
                .flat_map(|t| t.describe(stream, catalog.stream(stream)))
                .collect();
            if !made.is_empty() {
                catalog.apply(stream, made);
            }
        }
    }

    /// Adds a chunk to the window, which goes through the stages once it is full.
    fn push(&mut self, chunk: Chunk) {
        self.window.push(chunk);
        let bytes: usize = self.window.iter().map(|c| c.batch.bytes()).sum();
        if self.window.len() >= self.window_chunks || bytes >= WINDOW_BYTES {
            self.flush();
        }
    }

    /// Passes the records held for renaming through the stages, renamed.
    fn release_renamed(&mut self) {
        let Some(renamer) = self.renamer.take() else {
            return;
        };
        self.apply_metadata();
        let held = renamer.release(&mut self.catalog.write().expect("no poison"));
        for (stream, batch) in held {
            if self.wanted(batch.kind()) {
                self.push(Chunk::new(stream, batch));
            }
        }
        self.flush();
    }

    fn wanted(&self, kind: RecordKind) -> bool {
        self.outlets.iter().any(|(kinds, _)| kinds.contains(&kind))
            || self.transforms.iter().any(|t| t.applies_to(kind))
    }

    /// Runs the transforms over the window and hands its chunks to the sinks, in order.
    fn flush(&mut self) {
        self.flush_from(0);
    }

    /// Passes what each transform still holds through the transforms after it, in order.
    fn finish(&mut self) {
        for (t, transform) in self.transforms.iter().enumerate() {
            self.window = transform.finish();
            self.flush_from(t + 1);
        }
    }

    /// Runs the transforms from the `first` on over the window, then hands its chunks to
    /// the sinks.
    fn flush_from(&mut self, first: usize) {
        self.apply_metadata();
        if self.window.is_empty() || self.stopped.is_some() {
            return;
        }
        let origin = self.origin_ns.unwrap_or(0);
        self.window
            .par_iter_mut()
            .for_each(|chunk| chunk.batch.sort_by_start());
        {
            let catalog = self.catalog.read().expect("no poison");
            for transform in &self.transforms[first..] {
                let apply = |chunk: &mut Chunk| {
                    if transform.applies_to(chunk.batch.kind()) && !chunk.is_empty() {
                        transform.apply(chunk, catalog.stream(chunk.stream), origin);
                    }
                };
                if transform.sequential() {
                    self.window.iter_mut().for_each(apply);
                } else {
                    self.window.par_iter_mut().for_each(apply);
                }
                self.stopped = transform.strict_failure();
                if self.stopped.is_some() {
                    return;
                }
            }
        }
        let window: Vec<Arc<Chunk>> = self
            .window
            .drain(..)
            .filter(|chunk| !chunk.is_empty())
            .map(Arc::new)
            .collect();
        // Sinks with room take the window first, then the decoder waits for the others in
        // turn: waiting on a busy sink first held back sinks that were ready for it.
        let mut busy = Vec::new();
        for (kinds, sender) in &self.outlets {
            let taken: Vec<Arc<Chunk>> = window
                .iter()
                .filter(|chunk| kinds.contains(&chunk.batch.kind()))
                .cloned()
                .collect();
            if taken.is_empty() {
                continue;
            }
            // A sink that stopped has dropped its receiver; the others go on.
            if let Err(TrySendError::Full(message)) = sender.try_send(Message::Window(taken)) {
                busy.push((sender, message));
            }
        }
        for (sender, message) in busy {
            let _ = sender.send(message);
        }
    }
}

/// A frame's records in chunks of at most [`MAX_RECORDS`], in order. Counter values are
/// cut between dispatches only: the summary and the sinks total a dispatch's values chunk
/// by chunk.
fn pieces(mut batch: Batch) -> Vec<Batch> {
    let mut cuts = Vec::new();
    let mut at = MAX_RECORDS;
    while at < batch.len() {
        let cut = match &batch {
            Batch::CounterSample(values) => (at..values.len())
                .find(|&i| values[i].dispatch_id != values[i - 1].dispatch_id)
                .unwrap_or(values.len()),
            _ => at,
        };
        if cut == batch.len() {
            break;
        }
        cuts.push(cut);
        at = cut + MAX_RECORDS;
    }
    // From the last cut back, so that each split moves only the records after it, and
    // memory holds the frame's records about once.
    let mut pieces: Vec<Batch> = cuts.iter().rev().map(|&cut| batch.split_off(cut)).collect();
    pieces.push(batch);
    pieces.reverse();
    pieces
}

/// One sink's thread: opens the sink at its first message (when the run's metadata can
/// fill the path's placeholders), writes until the channel closes, then finishes it. After
/// a failure it keeps draining its channel so the decoder never waits on it.
fn drive_sink(
    outlet: Outlet<'_>,
    messages: Receiver<Message>,
    catalog: &RwLock<Catalog>,
    abandoned: &AtomicBool,
    progress: &SinkProgress,
) -> SinkReport {
    let mut sink: Option<Box<dyn Sink>> = None;
    let mut error: Option<SinkError> = None;
    let mut records = 0;
    let open = || (outlet.open)(&Placeholders::for_run(&catalog.read().expect("no poison")));
    for message in messages {
        if error.is_some() {
            continue;
        }
        if sink.is_none() {
            match open() {
                Ok(opened) => {
                    if let Some(written) = opened.written() {
                        progress.counted_by(written);
                    }
                    sink = Some(opened);
                }
                Err(e) => {
                    error = Some(e);
                    continue;
                }
            }
        }
        let target = sink.as_mut().expect("opened above");
        let written = match &message {
            Message::Window(window) => {
                let taken = window.iter().map(|c| c.len() as u64).sum::<u64>();
                records += taken;
                progress.handed(taken);
                target.write(window, &catalog.read().expect("no poison"))
            }
            Message::Table(table) => target.table(table),
        };
        if let Err(e) = written {
            error = Some(e);
        }
    }
    progress.set(SinkState::Finishing);
    let outcome = match (error, sink) {
        (Some(e), _) => Err(e),
        // Dropping the sink removes what it wrote so far.
        (None, _) if abandoned.load(Ordering::Relaxed) => Err(SinkError::Stopped),
        (None, Some(sink)) => sink.finish(&catalog.read().expect("no poison")),
        // No process sent anything (none connected): there is nothing to describe.
        (None, None)
            if (catalog.read().expect("no poison").streams())
                .all(|(_, meta)| meta.process.is_none()) =>
        {
            Ok(Vec::new())
        }
        // No records reached the sink: it still writes its (empty) output.
        (None, None) => open().and_then(|sink| sink.finish(&catalog.read().expect("no poison"))),
    };
    progress.set(match &outcome {
        Ok(paths) if paths.is_empty() && records == 0 => SinkState::Unopened,
        Ok(_) => SinkState::Done,
        Err(_) => SinkState::Failed,
    });
    SinkReport {
        name: outlet.name.clone(),
        records,
        outcome,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{TransformOpPlan, TransformPlan};
    use crate::record::{ApiCall, CounterSample, KernelDispatch};

    /// A frame as large as an SDK buffer flush goes through the stages in chunks of
    /// `MAX_RECORDS`, in order, and a dispatch's counter values stay in one chunk.
    #[test]
    fn large_frames_are_cut_into_chunks_between_dispatches() {
        let calls: Vec<ApiCall> = (0..2 * MAX_RECORDS as u64 + 5)
            .map(|i| ApiCall {
                correlation_id: i,
                ..Default::default()
            })
            .collect();
        let cut = pieces(Batch::Api(calls.clone()));
        let lengths: Vec<usize> = cut.iter().map(Batch::len).collect();
        assert_eq!(lengths, [MAX_RECORDS, MAX_RECORDS, 5]);
        let joined: Vec<ApiCall> = (cut.into_iter())
            .flat_map(|p| match p {
                Batch::Api(calls) => calls,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(joined, calls);

        // Dispatches of 3 values: a cut at `MAX_RECORDS` would split one of them.
        let values = |dispatches: u64| -> Vec<CounterSample> {
            (0..dispatches * 3)
                .map(|i| CounterSample {
                    dispatch_id: i / 3,
                    ..Default::default()
                })
                .collect()
        };
        let dispatches = MAX_RECORDS as u64;
        let cut = pieces(Batch::CounterSample(values(dispatches)));
        let lengths: Vec<usize> = cut.iter().map(Batch::len).collect();
        let whole = MAX_RECORDS.next_multiple_of(3);
        assert_eq!(lengths, [whole, whole, 3 * MAX_RECORDS - 2 * whole]);
        // A frame no larger than a chunk stays whole.
        let small = pieces(Batch::CounterSample(values(5)));
        assert_eq!(small.iter().map(Batch::len).collect::<Vec<_>>(), [15]);
    }

    /// Runs `frames` through no transform into one sink of kernel dispatches, which `sink`
    /// makes.
    fn run_dispatches(
        frames: impl Iterator<Item = Frame>,
        sink: impl Fn() -> Box<dyn Sink> + Send + Sync + 'static,
    ) {
        let outlet = Outlet {
            name: "test".into(),
            kinds: vec![RecordKind::KernelDispatch],
            open: Box::new(move |_: &Placeholders| Ok(sink())),
        };
        let mut source = crate::source::Frames(frames);
        run_into(
            &StageGraph::default(),
            &mut source,
            vec![outlet],
            &Board::default(),
        )
        .unwrap();
    }

    /// The bytes of each window a sink gets.
    struct Sizes(Arc<std::sync::Mutex<Vec<usize>>>);

    impl Sink for Sizes {
        fn write(&mut self, window: &[Arc<Chunk>], _: &Catalog) -> Result<(), SinkError> {
            let bytes = window.iter().map(|c| c.batch.bytes()).sum();
            self.0.lock().unwrap().push(bytes);
            Ok(())
        }

        fn finish(self: Box<Self>, _: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
            Ok(Vec::new())
        }
    }

    /// However many chunks a window may hold, it ends once its records take
    /// `WINDOW_BYTES`: what bounds the records in flight to a sink.
    #[test]
    fn windows_end_at_their_size_in_bytes() {
        let chunk_bytes = MAX_RECORDS * std::mem::size_of::<KernelDispatch>();
        // Frames of a chunk each, three windows' worth.
        let frames = (0..3 * WINDOW_BYTES / chunk_bytes).map(|_| Frame {
            stream: 0,
            payload: Payload::Records(Batch::KernelDispatch(vec![
                KernelDispatch::default();
                MAX_RECORDS
            ])),
        });
        let sizes = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&sizes);
        run_dispatches(frames, move || Box::new(Sizes(Arc::clone(&seen))));
        let sizes = sizes.lock().unwrap();
        assert!(sizes.len() >= 3, "{sizes:?}");
        // A window of `CHUNKS_PER_CORE` chunks per core (two at least) would hold more.
        assert!(CHUNKS_PER_CORE * 2 * chunk_bytes > WINDOW_BYTES + chunk_bytes);
        assert!(
            sizes
                .iter()
                .all(|&bytes| bytes < WINDOW_BYTES + chunk_bytes),
            "windows of {sizes:?} bytes"
        );
    }

    /// What a sink saw: each dispatch's kernel name as the window's catalog gave it, and
    /// the records the catalog said were dropped when the sink finished.
    #[derive(Default)]
    struct Seen {
        names: Vec<String>,
        dropped: u64,
    }

    struct Names(Arc<std::sync::Mutex<Seen>>);

    impl Sink for Names {
        fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
            let mut seen = self.0.lock().unwrap();
            for chunk in window {
                if let Batch::KernelDispatch(records) = &chunk.batch {
                    let meta = catalog.stream(chunk.stream);
                    seen.names.extend(
                        records
                            .iter()
                            .map(|r| meta.kernel_name(r.kernel_id).to_owned()),
                    );
                }
            }
            Ok(())
        }

        fn finish(self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
            self.0.lock().unwrap().dropped = catalog.stream(0).dropped.values().sum();
            Ok(Vec::new())
        }
    }

    /// Metadata goes into the catalog a window at a time: records still find what was sent
    /// before them, however it interleaves with them in a window, and what comes after the
    /// last window reaches the sinks' end.
    #[test]
    fn records_find_the_metadata_sent_before_them_and_sinks_the_last() {
        let symbol = |kernel_id: u64, name: &str| {
            Payload::Meta(vec![Meta::KernelSymbol(crate::record::KernelSymbol {
                kernel_id,
                code_object_id: 1,
                name: name.into(),
                lds_bytes: 0,
                scratch_bytes: 0,
                arch_vgpr_count: 0,
                sgpr_count: 0,
                kernarg_bytes: 0,
            })])
        };
        let dispatch = |kernel_id| {
            Payload::Records(Batch::KernelDispatch(vec![KernelDispatch {
                kernel_id,
                ..Default::default()
            }]))
        };
        let dropped = Payload::Meta(vec![Meta::Dropped {
            kind: RecordKind::KernelDispatch,
            count: 7,
        }]);
        // One window exactly: a chunk per frame, the second kernel named after the first
        // dispatch; then metadata alone.
        let chunks = CHUNKS_PER_CORE * rayon::current_num_threads().max(2);
        let payloads = [symbol(1, "first"), dispatch(1), symbol(2, "second")].into_iter();
        let payloads = payloads
            .chain((1..chunks).map(|_| dispatch(2)))
            .chain([dropped]);
        let frames = payloads.map(|payload| Frame { stream: 0, payload });
        let seen = Arc::new(std::sync::Mutex::new(Seen::default()));
        let sink = Arc::clone(&seen);
        run_dispatches(frames, move || Box::new(Names(Arc::clone(&sink))));
        let seen = seen.lock().unwrap();
        assert_eq!(seen.names[0], "first");
        assert!(seen.names[1..].iter().all(|name| name == "second"));
        assert_eq!(seen.names.len(), chunks);
        assert_eq!(seen.dropped, 7);
    }

    fn page_size() -> usize {
        // SAFETY: sysconf has no preconditions.
        unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
    }

    /// How many of the pages inside `blocks` (address, length) are in memory.
    fn resident_pages(blocks: &[(usize, usize)]) -> usize {
        let page = page_size();
        let mut resident = 0;
        for &(start, len) in blocks {
            let first = start.next_multiple_of(page);
            let pages = (start + len - first) / page;
            let mut state = vec![0u8; pages];
            // SAFETY: a range of this process's address space, and a byte per page of it.
            let status =
                unsafe { libc::mincore(first as *mut _, pages * page, state.as_mut_ptr()) };
            assert_eq!(status, 0, "mincore: {}", std::io::Error::last_os_error());
            resident += state.iter().filter(|&&s| s & 1 == 1).count();
        }
        resident
    }

    /// Memory freed while the stages run goes back to the system within a few of the
    /// trimmer's intervals, even where the allocator would keep it: the middle of a
    /// thread's arena, below a block still in use.
    #[test]
    fn memory_freed_during_a_run_goes_back_to_the_system() {
        use std::sync::mpsc::channel;
        use std::time::{Duration, Instant};
        const BLOCK: usize = 64 << 10;
        let (freed_in, freed) = channel();
        let (release, released) = channel::<()>();
        // A thread of its own, kept alive through the check so that its arena stays its own.
        let holder = std::thread::spawn(move || {
            let blocks: Vec<Vec<u8>> = (0..512).map(|_| vec![1u8; BLOCK]).collect();
            let pin = vec![1u8; 64];
            let spans: Vec<(usize, usize)> = blocks
                .iter()
                .map(|b| (b.as_ptr() as usize, BLOCK))
                .collect();
            drop(blocks);
            freed_in.send(spans).unwrap();
            released.recv().unwrap();
            drop(pin);
        });
        let spans = freed.recv().unwrap();
        let pages = spans.len() * BLOCK / page_size();
        let mut left = None;
        let source = std::iter::from_fn(|| {
            // Inside the run: wait for the freed pages to leave memory, 5 s at most.
            let deadline = Instant::now() + Duration::from_secs(5);
            let mut resident = resident_pages(&spans);
            while resident > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
                resident = resident_pages(&spans);
            }
            left = Some(resident);
            None
        });
        run_into(
            &StageGraph::default(),
            &mut crate::source::Frames(source),
            Vec::new(),
            &Board::default(),
        )
        .unwrap();
        release.send(()).unwrap();
        holder.join().unwrap();
        // Other threads may take some of those addresses again meanwhile; most stay free.
        let left = left.expect("the stages asked the source for frames");
        assert!(
            left < pages / 2,
            "{left} of the {pages} freed pages are still in memory"
        );
    }

    /// A recorded plan's transform that this rocflow cannot build stops the stages before
    /// any sink opens, named.
    #[test]
    fn a_transform_that_cannot_be_built_is_a_stage_error() {
        let broken = TransformPlan {
            name: "slow".into(),
            kinds: vec![RecordKind::KernelDispatch],
            strict: false,
            op: TransformOpPlan::KernelFilter(crate::plan::transform::kernel_filter::Plan {
                include: Some("gemm(".into()),
                exclude: None,
                iterations: None,
            }),
        };
        let mut nothing = crate::source::Frames(std::iter::empty());
        let stages = StageGraph {
            transforms: vec![broken],
            ..StageGraph::default()
        };
        let error = run_into(&stages, &mut nothing, Vec::new(), &Board::default()).unwrap_err();
        let StageError::Transform { name, .. } = &error else {
            panic!("{error:?}")
        };
        assert_eq!(name, "slow");
        assert!(
            error.to_string().starts_with("transform `slow`: "),
            "{error}"
        );
    }
}
