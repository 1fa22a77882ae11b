//! The JSON sink: the document `rocprofv3 --output-format json` writes
//! (`<prefix>_results.json`), for scripts written against it. One object,
//! `{"rocprofiler-sdk-tool": [...]}`, with an entry per process: `metadata` (node, pid,
//! init and fini times, command line), `agents`, `counters`, `strings` (the SDK's names of
//! record kinds and operations, indexed by value, and ROCTx messages by correlation id),
//! `code_objects` and `kernel_symbols` indexed by id, `host_functions`, `summary` (per
//! domain, the records' durations in all and per name), `callback_records`
//! (`counter_collection`: a dispatch's counter values) and `buffer_records` (an array per
//! domain: `kernel_dispatch`, `hip_api`, `hsa_api`, `marker_api`, `rccl_api`,
//! `memory_copy`, `memory_allocation`, `scratch_memory`, `rocdecode_api`, `rocjpeg_api`,
//! `pc_sample_host_trap`, `pc_sample_stochastic`), each record with the SDK's field names
//! and nesting. The reference is rocprofv3's writer (`source/lib/output/generateJSON.cpp`
//! of rocprofiler-sdk in ROCm/rocm-systems) and the SDK's serializer it calls
//! (`rocprofiler-sdk/cxx/serialization`).
//!
//! Records are written as they come into a file beside the document (see [`spill`]) and
//! copied into it when the run ends; counter values wait in memory, grouped by dispatch,
//! as an entry holds all of a dispatch's.

mod document;
mod names;
mod records;
mod section;
mod spill;
mod stats;

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use crate::catalog::{Catalog, StreamMeta};
use crate::chunk::Chunk;
use crate::record::{Batch, CounterSample, RecordKind, Sym};
use crate::sdk::Domain;
use crate::sink::staging::Staging;
use crate::sink::{Sink, SinkError};
use crate::writeback::Behind;
use document::{Facts, head, io_error, json, put};
use records::{CounterEntry, CounterValue, DispatchData, Handle, MapEntry, STOCHASTIC};
use section::Section;
use spill::Spill;
use stats::Durations;

/// The spill file's name in the staging directory.
const SPILL: &str = ".records";

/// The name of what the SDK does not name.
const UNKNOWN: &str = "<unknown>";

/// What the document holds of one process until the end.
#[derive(Default)]
struct Process {
    /// Per array, where its records lie in the spill file, in arrival order.
    spilled: BTreeMap<Section, Vec<Range<u64>>>,
    durations: Durations,
    /// Per dispatch, its counter values.
    counted: BTreeMap<u64, Counted>,
    /// The dispatches whose counters were collected, from their records (kept only while
    /// the sink takes counter samples).
    dispatches: HashMap<u64, DispatchData>,
    /// The end of the last record.
    last_ns: u64,
}

impl Process {
    /// Adds a record's duration to its name's statistics.
    fn time(&mut self, section: Section, name: &str, start: u64, end: u64) {
        stats::add(&mut self.durations, section, name, start, end);
        self.last_ns = self.last_ns.max(end);
    }

    /// Adds a counter sample to its dispatch's values.
    fn count(&mut self, meta: &StreamMeta, r: &CounterSample) {
        let counted = self
            .counted
            .entry(r.dispatch_id)
            .or_insert_with(|| Counted {
                agent: records::agent_handle(meta, r.agent),
                kernel_id: r.kernel_id,
                end_ns: r.timestamp_ns,
                values: Vec::new(),
            });
        counted.values.push(CounterValue {
            counter_id: Handle {
                handle: r.counter_id.into(),
            },
            value: r.value,
        });
        self.last_ns = self.last_ns.max(r.timestamp_ns);
    }
}

/// A record written as JSON, whatever its type.
trait Fragment {
    fn write(&self, out: &mut Vec<u8>) -> Result<(), SinkError>;
}

impl<T: Serialize> Fragment for T {
    fn write(&self, out: &mut Vec<u8>) -> Result<(), SinkError> {
        json(out, self)
    }
}

/// A dispatch's counter values, and what its samples say of it.
struct Counted {
    agent: Handle,
    kernel_id: u64,
    end_ns: u64,
    values: Vec<CounterValue>,
}

pub struct JsonSink {
    staging: Staging,
    spill: Spill,
    processes: BTreeMap<u32, Process>,
    /// Whether the sink takes counter samples: only then are dispatches kept for them.
    counters: bool,
}

impl JsonSink {
    pub fn create(path: PathBuf, kinds: &[RecordKind]) -> Result<JsonSink, SinkError> {
        let staging = Staging::create(path)?;
        let spill = Spill::new(staging.dir().join(SPILL));
        Ok(JsonSink {
            staging,
            spill,
            processes: BTreeMap::new(),
            counters: kinds.contains(&RecordKind::CounterSample),
        })
    }

    /// Writes a chunk's records into `out`, by process and array, and notes their
    /// durations and counter values.
    fn chunk(
        &mut self,
        chunk: &Chunk,
        meta: &StreamMeta,
        out: &mut BTreeMap<(u32, Section), Vec<u8>>,
    ) -> Result<(), SinkError> {
        let pid = meta.process.as_ref().map_or(0, |p| p.pid);
        let keep_dispatches = self.counters;
        let process = self.processes.entry(pid).or_default();
        let mut put = |section: Section, value: &dyn Fragment| {
            let bytes = out.entry((pid, section)).or_default();
            bytes.extend_from_slice(b",\n");
            value.write(bytes)
        };
        match &chunk.batch {
            Batch::KernelDispatch(records) => {
                for r in records {
                    put(Section::KernelDispatch, &records::kernel_dispatch(meta, r))?;
                    let name = meta.kernel_name(r.kernel_id);
                    process.time(Section::KernelDispatch, name, r.start_ns, r.end_ns);
                }
                if keep_dispatches {
                    let kept = (records.iter()).map(|r| (r.dispatch_id, DispatchData::of(meta, r)));
                    process.dispatches.extend(kept);
                }
            }
            Batch::Api(records) => {
                for r in records {
                    let Some(domain) = Domain::from_sdk_value(r.domain_id.into()) else {
                        continue;
                    };
                    let Some(section) = Section::of_api(domain) else {
                        continue;
                    };
                    put(section, &records::api(r, section == Section::HipApi))?;
                    let function = domain.operation_name(r.operation_id).unwrap_or(UNKNOWN);
                    process.time(section, function, r.start_ns, r.end_ns);
                }
            }
            Batch::Marker(records) => {
                for r in records {
                    put(Section::MarkerApi, &records::marker(r))?;
                    let message = (r.message != Sym(0)).then(|| meta.string(r.message));
                    if let Some(value) = message {
                        let entry = MapEntry {
                            key: r.correlation_id,
                            value,
                        };
                        put(Section::MarkerMessages, &entry)?;
                    }
                    let name = marker_name(r.domain_id, r.operation_id, message);
                    process.time(Section::MarkerApi, name, r.start_ns, r.end_ns);
                }
            }
            Batch::MemoryCopy(records) => {
                for r in records {
                    put(Section::MemoryCopy, &records::memory_copy(meta, r))?;
                    let name = operation(Domain::MemoryCopy, r.operation_id);
                    process.time(Section::MemoryCopy, name, r.start_ns, r.end_ns);
                }
            }
            Batch::MemoryAllocation(records) => {
                for r in records {
                    put(
                        Section::MemoryAllocation,
                        &records::memory_allocation(meta, r),
                    )?;
                    let name = operation(Domain::MemoryAllocation, r.operation_id);
                    process.time(Section::MemoryAllocation, name, r.start_ns, r.end_ns);
                }
            }
            Batch::ScratchMemory(records) => {
                for r in records {
                    put(Section::ScratchMemory, &records::scratch_memory(meta, r))?;
                    let name = operation(Domain::ScratchMemory, r.operation_id);
                    process.time(Section::ScratchMemory, name, r.start_ns, r.end_ns);
                }
            }
            Batch::PcSample(records) => {
                for r in records {
                    let section = match r.method {
                        STOCHASTIC => Section::PcSampleStochastic,
                        _ => Section::PcSampleHostTrap,
                    };
                    put(section, &records::pc_sample(r))?;
                }
            }
            Batch::CounterSample(records) => {
                records.iter().for_each(|r| process.count(meta, r));
            }
            // rocprofv3's JSON has no array of these.
            // rocprofv3's document has no section for device counter samples.
            Batch::KfdEvent(_)
            | Batch::HipStream(_)
            | Batch::RuntimeInitialization(_)
            | Batch::DeviceCounterSample(_)
            | Batch::GraphLaunch(_)
            | Batch::HipEventBarrier(_)
            | Batch::SpmSample(_) => {}
        }
        Ok(())
    }

    /// Writes the document: each process's head, summary, counter entries and records.
    fn document(&mut self, catalog: &Catalog) -> Result<(), SinkError> {
        let path = self.staging.file();
        let file = Behind::create(&path).map_err(SinkError::io(format!(
            "writing {}",
            self.staging.target().display()
        )))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let mut spilled = self.spill.reader().map_err(io_error)?;
        put(&mut out, b"{\"rocprofiler-sdk-tool\":[")?;
        for (i, (&pid, process)) in self.processes.iter().enumerate() {
            if i > 0 {
                put(&mut out, b",\n")?;
            }
            let empty = StreamMeta::default();
            let meta = (catalog.streams().map(|(_, m)| m))
                .find(|m| m.process.as_ref().is_some_and(|p| p.pid == pid))
                .unwrap_or(&empty);
            let facts = Facts {
                meta,
                pid,
                last_ns: process.last_ns,
            };
            let mut copy_section = |out: &mut BufWriter<Behind>, section: Section| {
                copy(&mut spilled, process.spilled.get(&section), out)
            };
            head(&mut out, &facts, |out| {
                copy_section(out, Section::MarkerMessages)
            })?;
            put(&mut out, b"\"summary\":")?;
            json(&mut out, &stats::summary(&process.durations))?;
            put(
                &mut out,
                b",\n\"callback_records\":{\"counter_collection\":[",
            )?;
            counter_entries(&mut out, process)?;
            put(&mut out, b"]},\n\"buffer_records\":{")?;
            for (j, section) in Section::BUFFER_RECORDS.into_iter().enumerate() {
                let separator = if j > 0 { ",\n" } else { "" };
                put(
                    &mut out,
                    format!("{separator}\"{}\":[", section.key()).as_bytes(),
                )?;
                copy_section(&mut out, section).map_err(io_error)?;
                put(&mut out, b"]")?;
            }
            put(&mut out, b"}}")?;
        }
        put(&mut out, b"]}\n")?;
        // Synced when it is moved into place.
        out.flush().map_err(io_error)
    }
}

/// Copies an array's records out of the spill file, without the separator before the
/// first.
fn copy(
    spilled: &mut Option<File>,
    ranges: Option<&Vec<Range<u64>>>,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let (Some(file), Some(ranges)) = (spilled.as_mut(), ranges) else {
        return Ok(());
    };
    for (i, range) in ranges.iter().enumerate() {
        let skip = if i == 0 { 1 } else { 0 };
        spill::copy(file, &(range.start + skip..range.end), out)?;
    }
    Ok(())
}

/// Writes `callback_records.counter_collection`: an entry per dispatch, by dispatch id.
fn counter_entries(out: &mut impl Write, process: &Process) -> Result<(), SinkError> {
    for (i, (&dispatch_id, counted)) in process.counted.iter().enumerate() {
        if i > 0 {
            put(out, b",\n")?;
        }
        let described = process.dispatches.get(&dispatch_id).copied();
        let dispatch = described.unwrap_or_else(|| {
            DispatchData::of_samples(
                counted.agent,
                dispatch_id,
                counted.kernel_id,
                counted.end_ns,
            )
        });
        json(out, &CounterEntry::new(&dispatch, &counted.values))?;
    }
    Ok(())
}

/// The SDK's name of an operation of an enumerated domain, without the domain's
/// (`HOST_TO_DEVICE`; the summary writes `MEMORY_COPY_HOST_TO_DEVICE`): no allocation per
/// record.
fn operation(domain: Domain, id: u8) -> &'static str {
    domain.operation_name(id.into()).unwrap_or("NONE")
}

/// The name a marker's duration counts under: a mark's or range's message, another
/// call's function.
fn marker_name(domain_id: u8, operation_id: i32, message: Option<&str>) -> &str {
    let domain = Domain::from_sdk_value(domain_id.into());
    let function = domain.and_then(|d| d.operation_name(operation_id));
    message.or(function).unwrap_or(UNKNOWN)
}

impl Sink for JsonSink {
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
        let mut out = BTreeMap::new();
        for chunk in window {
            self.chunk(chunk, catalog.stream(chunk.stream), &mut out)?;
        }
        let parts: Vec<&[u8]> = out.values().map(Vec::as_slice).collect();
        let context = || format!("writing {}", self.staging.target().display());
        let ranges = self
            .spill
            .append(&parts)
            .map_err(SinkError::io(context()))?;
        for ((pid, section), range) in out.keys().zip(ranges) {
            let process = self.processes.entry(*pid).or_default();
            process.spilled.entry(*section).or_default().push(range);
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        // Every process the run described has its entry, records or not.
        for (_, meta) in catalog.streams() {
            if let Some(p) = &meta.process {
                self.processes.entry(p.pid).or_default();
            }
        }
        self.document(catalog)?;
        let JsonSink { staging, spill, .. } = *self;
        spill.remove().map_err(io_error)?;
        let file = staging.file();
        let name = file.file_name().expect("a staged file has a name");
        staging.commit_files(&[name])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Meta, PcSample, ScratchMemory};
    use rocflow_core::abi;

    /// A catalog of one process, 42, with one MI300X; the agent's handle.
    fn catalog() -> (Catalog, u64) {
        let mut catalog = Catalog::default();
        let agent = crate::generate::mi300x(1);
        let handle = agent.handle;
        let process = crate::generate::process(42, 0);
        catalog.apply(0, vec![Meta::Process(process), Meta::Agent(agent)]);
        (catalog, handle)
    }

    fn chunk(batch: Batch) -> Vec<Arc<Chunk>> {
        vec![Arc::new(Chunk::new(0, batch))]
    }

    /// Records the simulated device does not produce, with the SDK serializer's fields in
    /// its order (`save.hpp`'s `rocprofiler_buffer_tracing_scratch_memory_record_t` and
    /// `rocprofiler_pc_sampling_record_stochastic_v0_t`), and the durations' summary.
    #[test]
    fn scratch_memory_and_pc_samples_are_written_as_the_sdk_serializes_them() {
        let dir = tempfile::tempdir().unwrap();
        let (catalog, agent) = catalog();
        let scratch = ScratchMemory {
            pid: 42,
            tid: 43,
            agent: 1,
            queue: 7,
            start_ns: 100,
            end_ns: 250,
            correlation_id: 5,
            bytes: 4096,
            flags: 1,
            operation_id: 1,
            ..Default::default()
        };
        let sample = PcSample {
            pid: 42,
            agent: 1,
            timestamp_ns: 300,
            dispatch_id: 9,
            correlation_id: 5,
            code_object_id: 2,
            code_object_offset: 64,
            exec_mask: 3,
            hw_id: 1 | (3 << 6) | (2 << 24),
            method: STOCHASTIC,
            instruction_type: 1,
            stall_reason: 3,
            ..Default::default()
        };
        let mut sink = Box::new(JsonSink::create(dir.path().join("out.json"), &[]).unwrap());
        sink.write(&chunk(Batch::ScratchMemory(vec![scratch])), &catalog)
            .unwrap();
        sink.write(&chunk(Batch::PcSample(vec![sample])), &catalog)
            .unwrap();
        let written = sink.finish(&catalog).unwrap();
        assert_eq!(written, [dir.path().join("out.json")]);
        let text = std::fs::read_to_string(dir.path().join("out.json")).unwrap();
        let size = size_of::<abi::ScratchMemoryRecord>();
        let scratch = format!(
            "\"scratch_memory\":[\n{{\"size\":{size},\"kind\":12,\"operation\":1,\
             \"agent_id\":{{\"handle\":{agent}}},\"queue_id\":{{\"handle\":7}},\"thread_id\":43,\
             \"start_timestamp\":100,\"end_timestamp\":250,\
             \"correlation_id\":{{\"internal\":5,\"external\":0,\"ancestor\":0}},\
             \"flags\":1,\"allocation_size\":4096}}]"
        );
        assert!(text.contains(&scratch), "{text}");
        let sample = "\"pc_sample_stochastic\":[\n{\"record\":{\"flags\":{\"has_mem_cnt\":0},\
             \"hw_id\":{\"chiplet\":1,\"wave_id\":3,\"simd_id\":0,\"pipe_id\":0,\
             \"cu_or_wgp_id\":0,\"shader_array_id\":0,\"shader_engine_id\":2,\
             \"workgroup_id \":0,\"vm_id\":0,\"queue_id\":0,\"microengine_id\":0},\
             \"pc\":{\"code_object_id\":2,\"code_object_offset\":64},\"exec_mask\":3,\
             \"timestamp\":300,\"dispatch_id\":9,\"corr_id\":{\"internal\":5,\"external\":0},\
             \"wrkgrp_id\":{\"x\":0,\"y\":0,\"z\":0},\"wave_in_grp\":0,\"wave_issued\":0,\
             \"inst_type\":\"ROCPROFILER_PC_SAMPLING_INSTRUCTION_TYPE_VALU\",\"wave_cnt\":0,\
             \"snapshot\":{\"stall_reason\":\
             \"ROCPROFILER_PC_SAMPLING_INSTRUCTION_NOT_ISSUED_REASON_WAITCNT\",";
        assert!(text.contains(sample), "{text}");
        let data: serde_json::Value = serde_json::from_str(&text).unwrap();
        let data = &data["rocprofiler-sdk-tool"][0];
        assert_eq!(data["metadata"]["pid"], 42);
        assert_eq!(data["summary"][0]["domain"], "SCRATCH_MEMORY");
        let operations = &data["summary"][0]["stats"]["operations"];
        assert_eq!(operations[0]["key"], "SCRATCH_MEMORY_ALLOC");
        assert_eq!(operations[0]["value"]["sum"], 150);
        // The records' file is gone with the staging directory.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1);
    }

    /// A sink dropped before its end (a failure, a run stopped early) leaves nothing
    /// where its document belongs, and no staging directory.
    #[test]
    fn a_sink_dropped_before_its_end_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (catalog, _) = catalog();
        let mut sink = JsonSink::create(dir.path().join("out.json"), &[]).unwrap();
        let scratch = ScratchMemory::default();
        sink.write(&chunk(Batch::ScratchMemory(vec![scratch])), &catalog)
            .unwrap();
        drop(sink);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
