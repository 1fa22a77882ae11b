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
