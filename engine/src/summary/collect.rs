//! The collector: a sink that adds every record it receives to a [`Summary`]; and the
//! replay of a run's records through a pipeline's stages into one.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use crate::catalog::{Catalog, StreamMeta};
use crate::chunk::Chunk;
use crate::column::marker_label;
use crate::plan::StageGraph;
use crate::record::{Batch, CounterSample, RecordKind};
use crate::sdk::Domain;
use crate::sink::{Placeholders, Sink, SinkError};
use crate::source::{Ending, Source, SourceError};
use crate::stage;

use super::{Breakdown, Kind, Summary, size_class};

impl Summary {
    /// Replays a source's records through a pipeline's stages (so the statistics
    /// describe the records its outputs hold) into a summary; says how the source ended.
    pub fn of_run(
        stages: &StageGraph,
        source: &mut dyn Source,
        breakdown: Breakdown,
    ) -> Result<(Summary, Result<Ending, SourceError>), String> {
        let (collecting, outlet) = Summary::collecting(breakdown);
        let report = stage::run_into(stages, source, vec![outlet], &Default::default())
            .map_err(|e| e.to_string())?;
        let mut sinks = report.sinks.into_iter();
        let summary = collecting.finish(sinks.next(), report.catalog)?;
        Ok((summary, report.source))
    }

    /// A summary by `breakdown` and the outlet that fills it, one of a stage run's
    /// outlets: the readers of one pass over a run's records each take one.
    pub fn collecting(breakdown: Breakdown) -> (Collecting, stage::Outlet<'static>) {
        let summary = Arc::new(Mutex::new(Summary {
            breakdown,
            ..Summary::default()
        }));
        // One collector, fed every kind the run holds.
        let filled = Arc::clone(&summary);
        let outlet = stage::Outlet {
            name: "summary".into(),
            kinds: RecordKind::ALL.to_vec(),
            open: Box::new(
                move |_: &Placeholders| -> Result<Box<dyn Sink>, SinkError> {
                    Ok(Box::new(Collector::new(Arc::clone(&filled))))
                },
            ),
        };
        (Collecting(summary), outlet)
    }
}

/// A summary its outlet fills during a stage run.
pub struct Collecting(Arc<Mutex<Summary>>);

impl Collecting {
    /// The summary, once the stage run that filled it ended with `sink` (its outlet's
    /// report) and `catalog`.
    pub fn finish(
        self,
        sink: Option<stage::SinkReport>,
        catalog: Catalog,
    ) -> Result<Summary, String> {
        if let Some(Err(e)) = sink.map(|s| s.outcome) {
            return Err(e.to_string());
        }
        let mut summary = Arc::try_unwrap(self.0)
            .map_err(|_| "the summary is still shared".to_string())?
            .into_inner()
            .expect("no panics while holding the lock");
        summary.catalog = catalog;
        Ok(summary)
    }
}

pub struct Collector {
    summary: Arc<Mutex<Summary>>,
    /// Per stream, the dispatch whose counter samples are arriving, and each counter's
    /// total over its dimension instances so far. The SDK delivers a dispatch's samples
    /// together, so a dispatch is complete when the next one starts.
    open: FxHashMap<u16, OpenDispatch>,
}

struct OpenDispatch {
    pid: u32,
    agent: u32,
    dispatch_id: u64,
    kernel_id: u64,
    totals: FxHashMap<u32, f64>,
}

impl Collector {
    pub fn new(summary: Arc<Mutex<Summary>>) -> Collector {
        Collector {
            summary,
            open: FxHashMap::default(),
        }
    }

    fn samples(
        &mut self,
        summary: &mut Summary,
        stream: u16,
        samples: &[CounterSample],
        meta: &StreamMeta,
    ) {
        for sample in samples {
            let current = self.open.get(&stream).map(|d| d.dispatch_id);
            if current != Some(sample.dispatch_id) {
                if let Some(done) = self.open.remove(&stream) {
                    close(summary, done, meta);
                }
                self.open.insert(
                    stream,
                    OpenDispatch {
                        pid: sample.pid,
                        agent: sample.agent,
                        dispatch_id: sample.dispatch_id,
                        kernel_id: sample.kernel_id,
                        totals: FxHashMap::default(),
                    },
                );
            }
            let open = self.open.get_mut(&stream).expect("opened above");
            *open.totals.entry(sample.counter_id).or_default() += sample.value;
        }
    }
}

/// Adds a complete dispatch's counter totals to the summary.
fn close(summary: &mut Summary, dispatch: OpenDispatch, meta: &StreamMeta) {
    summary.at_node(hostname(meta));
    let kernel = meta.kernel_name(dispatch.kernel_id);
    let at = (dispatch.pid, Some(dispatch.agent));
    for (counter, total) in dispatch.totals {
        let own = [kernel, meta.counter_name(counter)];
        summary.add(Kind::Counters, at, &own, total, 0);
    }
}

const UNKNOWN: &str = "<unknown>";

/// The node a stream's process ran on.
fn hostname(meta: &StreamMeta) -> &str {
    meta.process
        .as_ref()
        .map_or(UNKNOWN, |p| p.hostname.as_str())
}

/// The name of an operation of a fixed domain.
/// `roctxMarkA`, operation 0 of both marker domains.
const ROCTX_MARK: i32 = 0;

fn operation(domain: Domain, id: u8) -> &'static str {
    domain.operation_name(id.into()).unwrap_or(UNKNOWN)
}

impl Sink for Collector {
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
        let summary = Arc::clone(&self.summary);
        let mut summary = summary.lock().expect("no panics while holding the lock");
        for chunk in window {
            let meta = catalog.stream(chunk.stream);
            let s = &mut *summary;
            s.at_node(hostname(meta));
            let span = |start: u64, end: u64| end.saturating_sub(start) as f64;
            match &chunk.batch {
                Batch::KernelDispatch(records) => {
                    for r in records {
                        s.timeline
                            .add((chunk.stream, r.agent), r.start_ns, r.end_ns);
                        let name = meta.kernel_name(r.kernel_id);
                        let at = (r.pid, Some(r.agent));
                        s.add(Kind::Kernels, at, &[name], span(r.start_ns, r.end_ns), 0);
                    }
                }
                Batch::Api(records) => {
                    for r in records {
                        let domain = Domain::from_sdk_value(r.domain_id.into());
                        let function = domain.and_then(|d| d.operation_name(r.operation_id));
                        let own = [
                            domain.map_or(UNKNOWN, Domain::name),
                            function.unwrap_or(UNKNOWN),
                        ];
                        s.add(
                            Kind::Api,
                            (r.pid, None),
                            &own,
                            span(r.start_ns, r.end_ns),
                            0,
                        );
                    }
                }
                Batch::MemoryCopy(records) => {
                    for r in records {
                        let own = [
                            operation(Domain::MemoryCopy, r.operation_id),
                            size_class(r.bytes),
                        ];
                        let at = (r.pid, Some(r.dst_agent));
                        s.add(Kind::Copies, at, &own, span(r.start_ns, r.end_ns), r.bytes);
                    }
                }
                Batch::MemoryAllocation(records) => {
                    for r in records {
                        let own = [operation(Domain::MemoryAllocation, r.operation_id)];
                        let at = (r.pid, Some(r.agent));
                        s.add(
                            Kind::Allocations,
                            at,
                            &own,
                            span(r.start_ns, r.end_ns),
                            r.bytes,
                        );
                    }
                }
                Batch::ScratchMemory(records) => {
                    for r in records {
                        let own = [operation(Domain::ScratchMemory, r.operation_id)];
                        let at = (r.pid, Some(r.agent));
                        s.add(Kind::Scratch, at, &own, span(r.start_ns, r.end_ns), r.bytes);
                    }
                }
                Batch::Marker(records) => {
                    for r in records {
                        let own = [marker_label(r, meta)];
                        // A mark is an instant, however long the SDK's record of the
                        // roctxMarkA call lasts: counted, as rocprofv3 counts it, with no time.
                        let time = match r.operation_id {
                            ROCTX_MARK => 0.0,
                            _ => span(r.start_ns, r.end_ns),
                        };
                        s.add(Kind::Markers, (r.pid, None), &own, time, 0);
                    }
                }
                Batch::GraphLaunch(records) => {
                    for r in records {
                        let graph = format!("graph {}", r.graph_exec_id);
                        let at = (r.pid, Some(r.agent));
                        let time = span(r.start_ns, r.end_ns);
                        s.add(Kind::Graphs, at, &[&graph], time, r.dispatch_count);
                    }
                }
                Batch::CounterSample(samples) => self.samples(s, chunk.stream, samples, meta),
                Batch::DeviceCounterSample(samples) => {
                    for r in samples {
                        let key = ((chunk.stream, r.agent), r.counter_id);
                        s.device.add(key, r.timestamp_ns, r.value);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        let mut summary = self
            .summary
            .lock()
            .expect("no panics while holding the lock");
        for (stream, dispatch) in self.open.drain() {
            close(&mut summary, dispatch, catalog.stream(stream));
        }
        Ok(Vec::new())
    }
}
