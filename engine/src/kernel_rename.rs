//! `kernel_names = "renamed"`: a dispatch takes the message of the innermost named ROCTx
//! range (`roctxRangePushA` … `roctxRangePop`) open on its launching thread when it was
//! launched, as rocprofv3's `--kernel-rename` does; one launched outside every named range
//! keeps its kernel's name.
//!
//! The launch is the API call the dispatch shares its correlation id with; the ranges are
//! the marker records. Both may arrive after the dispatch (the SDK buffers a record as its
//! operation completes, and a range completes at its pop), so the dispatches, and the
//! counter samples that name their kernel, are held until the records end, as rocprofv3
//! holds every record until the application ends. Each (kernel, message) pair then becomes
//! a kernel symbol of its own: a copy of the kernel's, under a new id, named after the
//! message. Every output that names kernels by id so names the dispatch after its range,
//! and keeps the kernel's mangled name.

use rustc_hash::FxHashMap as HashMap;

use crate::catalog::Catalog;
use crate::record::{Batch, KernelSymbol, Meta, Sym};
use crate::sdk::Domain;

/// `roctxRangePushA` … `roctxRangePop`, as the marker range API records it.
const THREAD_RANGE: &str = "roctxThreadRangeA";

/// A named ROCTx range on a thread.
#[derive(Debug, Clone, Copy)]
struct Range {
    start_ns: u64,
    end_ns: u64,
    message: Sym,
}

/// What renaming needs of a run's records, and the records it holds until they end.
#[derive(Debug, Default)]
pub struct Renamer {
    /// Per stream and thread, the named ranges.
    ranges: HashMap<(u16, u32), Vec<Range>>,
    /// Per stream and correlation id, when the API call with that id started.
    launches: HashMap<(u16, u64), u64>,
    held: Vec<(u16, Batch)>,
}

impl Renamer {
    /// Notes the ranges and API calls of a batch, and holds it if it names kernels
    /// (`None`); any other batch goes on.
    pub fn take(&mut self, stream: u16, batch: Batch) -> Option<Batch> {
        match &batch {
            Batch::Marker(markers) => {
                let ranges = markers.iter().filter(|m| {
                    m.message != Sym(0)
                        && Domain::from_sdk_value(m.domain_id.into())
                            .and_then(|d| d.operation_name(m.operation_id))
                            == Some(THREAD_RANGE)
                });
                for m in ranges {
                    let thread = self.ranges.entry((stream, m.tid)).or_default();
                    thread.push(Range {
                        start_ns: m.start_ns,
                        end_ns: m.end_ns,
                        message: m.message,
                    });
                }
            }
            Batch::Api(calls) => {
                let calls = calls
                    .iter()
                    .map(|c| ((stream, c.correlation_id), c.start_ns));
                self.launches.extend(calls);
            }
            Batch::KernelDispatch(_) | Batch::CounterSample(_) => {
                self.held.push((stream, batch));
                return None;
            }
            _ => {}
        }
        Some(batch)
    }

    /// The held batches, their dispatches renamed; the kernel symbols they now refer to
    /// are added to `catalog` first.
    pub fn release(self, catalog: &mut Catalog) -> Vec<(u16, Batch)> {
        let Renamer {
            mut ranges,
            launches,
            mut held,
        } = self;
        for thread in ranges.values_mut() {
            thread.sort_unstable_by_key(|range| range.start_ns);
        }
        // The innermost range around a launch is the latest to start of those around it.
        let around = |stream: u16, tid: u32, at: u64| -> Option<Sym> {
            let thread = ranges.get(&(stream, tid))?;
            let before = thread.partition_point(|range| range.start_ns <= at);
            let around = thread[..before].iter().rev().find(|r| r.end_ns >= at)?;
            Some(around.message)
        };
        let mut symbols = Symbols::default();
        let mut renamed: HashMap<(u16, u64), u64> = HashMap::default();
        for (stream, batch) in &mut held {
            let Batch::KernelDispatch(dispatches) = batch else {
                continue;
            };
            for d in dispatches {
                let launch = launches.get(&(*stream, d.correlation_id));
                if let Some(message) = launch.and_then(|&at| around(*stream, d.tid, at)) {
                    d.kernel_id = symbols.id(catalog, *stream, d.kernel_id, message);
                    renamed.insert((*stream, d.dispatch_id), d.kernel_id);
                }
            }
        }
        for (stream, batch) in &mut held {
            if let Batch::CounterSample(samples) = batch {
                for s in samples {
                    if let Some(&kernel) = renamed.get(&(*stream, s.dispatch_id)) {
                        s.kernel_id = kernel;
                    }
                }
            }
        }
        held
    }
}

/// The kernel symbols made for (kernel, message) pairs, by stream.
#[derive(Default)]
struct Symbols {
    ids: HashMap<(u16, u64, Sym), u64>,
    next: HashMap<u16, u64>,
}

impl Symbols {
    /// The id of `kernel`'s symbol named `message`, made on first use after the stream's
    /// own kernel ids.
    fn id(&mut self, catalog: &mut Catalog, stream: u16, kernel: u64, message: Sym) -> u64 {
        if let Some(&id) = self.ids.get(&(stream, kernel, message)) {
            return id;
        }
        let meta = catalog.stream(stream);
        let next = self
            .next
            .entry(stream)
            .or_insert_with(|| meta.kernels.keys().max().map_or(1, |&max| max + 1));
        let id = *next;
        *next += 1;
        let name = meta.string(message).to_owned();
        let symbol = match meta.kernels.get(&kernel) {
            Some(known) => KernelSymbol {
                kernel_id: id,
                ..known.clone()
            },
            None => KernelSymbol {
                kernel_id: id,
                code_object_id: 0,
                name: meta.kernel_name(kernel).to_owned(),
                lds_bytes: 0,
                scratch_bytes: 0,
                arch_vgpr_count: 0,
                sgpr_count: 0,
                kernarg_bytes: 0,
            },
        };
        catalog.apply(stream, vec![Meta::KernelSymbol(symbol)]);
        catalog.name_kernel(stream, id, name);
        self.ids.insert((stream, kernel, message), id);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ApiCall, CounterSample, KernelDispatch, Marker};

    const GEMM: &str = "_Z4gemmPfS_S_i";

    fn range(tid: u32, (start_ns, end_ns): (u64, u64), message: u32) -> Marker {
        let domain = Domain::MarkerCoreRangeApi;
        let (operation_id, _) = *(domain.operations().iter())
            .find(|(_, name)| *name == THREAD_RANGE)
            .unwrap();
        Marker {
            tid,
            start_ns,
            end_ns,
            domain_id: domain.sdk_value() as u8,
            operation_id,
            message: Sym(message),
            ..Marker::default()
        }
    }

    fn launch(correlation_id: u64, start_ns: u64) -> ApiCall {
        ApiCall {
            correlation_id,
            start_ns,
            ..ApiCall::default()
        }
    }

    fn dispatch(correlation_id: u64, tid: u32) -> KernelDispatch {
        KernelDispatch {
            tid,
            kernel_id: 1,
            dispatch_id: correlation_id,
            correlation_id,
            ..KernelDispatch::default()
        }
    }

    /// A dispatch goes by the innermost named range open on its thread at its launch,
    /// whenever the range's record arrives; others keep their kernel.
    #[test]
    fn the_innermost_range_around_the_launch_names_a_dispatch() {
        let mut catalog = Catalog::default();
        let names = ["", "solve", "step"].map(String::from).to_vec();
        catalog.apply(
            0,
            vec![Meta::Strings {
                first: 0,
                values: names,
            }],
        );
        let symbol = KernelSymbol {
            kernel_id: 1,
            code_object_id: 1,
            name: GEMM.into(),
            lds_bytes: 0,
            scratch_bytes: 0,
            arch_vgpr_count: 0,
            sgpr_count: 0,
            kernarg_bytes: 0,
        };
        catalog.apply(0, vec![Meta::KernelSymbol(symbol)]);
        let mut renamer = Renamer::default();
        // Dispatches first: the ranges around them complete (and arrive) later.
        let dispatches = vec![
            dispatch(1, 7),
            dispatch(2, 7),
            dispatch(3, 7),
            dispatch(4, 8),
            dispatch(5, 7),
            dispatch(6, 7),
        ];
        assert!(renamer.take(0, Batch::KernelDispatch(dispatches)).is_none());
        let samples = vec![CounterSample {
            dispatch_id: 1,
            kernel_id: 1,
            ..CounterSample::default()
        }];
        assert!(renamer.take(0, Batch::CounterSample(samples)).is_none());
        let launches = [(1, 15), (2, 50), (3, 150), (4, 15), (6, 15)];
        let calls = launches.map(|(id, at)| launch(id, at)).to_vec();
        assert!(renamer.take(0, Batch::Api(calls)).is_some());
        let ranges = vec![
            range(7, (10, 20), 1),
            range(7, (0, 100), 2),
            range(7, (12, 18), 0),
        ];
        assert!(renamer.take(0, Batch::Marker(ranges)).is_some());

        let held = renamer.release(&mut catalog);
        let meta = catalog.stream(0);
        let [
            (0, Batch::KernelDispatch(dispatches)),
            (0, Batch::CounterSample(samples)),
        ] = held.as_slice()
        else {
            panic!("{held:?}")
        };
        let named: Vec<(u64, &str)> = (dispatches.iter())
            .map(|d| (d.correlation_id, meta.kernel_name(d.kernel_id)))
            .collect();
        let gemm = "gemm(float*, float*, float*, int)";
        assert_eq!(
            named,
            [
                (1, "solve"), // inside both: the inner one; the nameless one inside it is skipped
                (2, "step"),
                (3, gemm), // after the ranges
                (4, gemm), // another thread
                (5, gemm), // its launch was not traced
                (6, "solve"),
            ]
        );
        assert_eq!(
            dispatches[0].kernel_id, dispatches[5].kernel_id,
            "one symbol per name"
        );
        assert_eq!(samples[0].kernel_id, dispatches[0].kernel_id);
        assert_eq!(meta.mangled_kernel_name(dispatches[1].kernel_id), GEMM);
    }
}
