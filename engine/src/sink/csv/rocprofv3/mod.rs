//! The CSV sink's `rocprofv3` flavour: the files `rocprofv3 --output-format csv --stats`
//! writes, so that scripts written against them read rocflow's. One set of files per
//! process, `<pid>_kernel_trace.csv`, `<pid>_hip_api_trace.csv`, …, `<pid>_agent_info.csv`,
//! the statistics files `<pid>_kernel_stats.csv`, … and `<pid>_domain_stats.csv`, each
//! with rocprofv3's columns in its order and its value formats. The reference is rocprofv3's
//! writer (`source/lib/output/generateCSV.cpp`, `csv.hpp` and `statistics.cpp` of
//! rocprofiler-sdk in ROCm/rocm-systems) and files it wrote.
//!
//! As rocprofv3 does, every text field is quoted and no number is; a quote inside a text
//! is doubled (rocprofv3 leaves it alone, which no CSV reader reads back). What rocflow's
//! records do not hold is written as rocprofv3 writes an absent value: `0` for the HIP
//! stream of dispatches and copies and the accumulation registers of kernels, an empty
//! instruction for PC samples (rocflow does not disassemble).

mod agent_info;
mod counters;
mod format;
mod stats;
mod table;
mod trace;

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;

use crate::catalog::{Catalog, StreamMeta};
use crate::chunk::Chunk;
use crate::record::{Batch, CounterSample, KernelDispatch, RecordKind};
use crate::sink::staging::Staging;
use crate::sink::{Sink, SinkError};
use crate::stats::Accumulator;

use super::earlier_output;
use agent_info::{AGENT_INFO, agent_rows};
use counters::{Counted, counter_rows};
use format::Line;
use stats::{Statistics, stats_rows};
use table::{STATS, Table};
use trace::Rows;
pub(crate) use trace::{INSTRUCTION_TYPES, NOT_ISSUED_REASONS};

/// One process's files and what is written at the end.
#[derive(Default)]
struct Process {
    files: HashMap<Table, BufWriter<File>>,
    stats: Statistics,
    /// Counter values per dispatch id, written when the run ends.
    counted: BTreeMap<u64, Counted>,
    /// The dispatches that counted, for their counter rows.
    dispatches: HashMap<u64, KernelDispatch>,
}

impl Process {
    /// Adds a counter sample to its dispatch's sums.
    fn count(&mut self, sample: &CounterSample) {
        let counted = self.counted.entry(sample.dispatch_id).or_default();
        counted.add(sample);
    }
}

pub struct Rocprofv3Sink {
    staging: Staging,
    processes: BTreeMap<u32, Process>,
    written: Vec<PathBuf>,
    /// Whether the sink takes counter samples: only then are dispatches kept for them.
    counters: bool,
}

impl Rocprofv3Sink {
    pub fn create(path: PathBuf, kinds: &[RecordKind]) -> Result<Rocprofv3Sink, SinkError> {
        Ok(Rocprofv3Sink {
            staging: Staging::create(path)?,
            processes: BTreeMap::new(),
            written: Vec::new(),
            counters: kinds.contains(&RecordKind::CounterSample),
        })
    }

    /// Opens `<pid>_<name>.csv` and writes its header line.
    fn open(
        &mut self,
        pid: u32,
        name: &str,
        header: &[&str],
    ) -> Result<BufWriter<File>, SinkError> {
        let file = format!("{pid}_{name}.csv");
        let path = self.staging.dir().join(&file);
        let context = || format!("writing {}", self.staging.target().join(&file).display());
        let mut out = BufWriter::new(File::create(&path).map_err(SinkError::io(context()))?);
        let (mut line, mut text) = (Line::default(), Vec::new());
        header.iter().for_each(|h| {
            line.text(h);
        });
        line.end(&mut text);
        out.write_all(&text).map_err(SinkError::io(context()))?;
        self.written.push(self.staging.target().join(file));
        Ok(out)
    }

    /// Appends `lines` to the process's `table` file, opening it with its header first.
    fn append(&mut self, pid: u32, table: Table, lines: &[u8]) -> Result<(), SinkError> {
        if !self
            .processes
            .entry(pid)
            .or_default()
            .files
            .contains_key(&table)
        {
            let file = self.open(pid, table.name(), table.header())?;
            self.process(pid).files.insert(table, file);
        }
        let out = self
            .process(pid)
            .files
            .get_mut(&table)
            .expect("opened above");
        out.write_all(lines)
            .map_err(SinkError::io(format!("writing {pid}_{}.csv", table.name())))
    }

    fn process(&mut self, pid: u32) -> &mut Process {
        self.processes.entry(pid).or_default()
    }

    /// Writes the rows of one chunk, and adds its durations to the statistics.
    fn chunk(&mut self, chunk: &Chunk, meta: &StreamMeta) -> Result<(), SinkError> {
        let pid = meta.process.as_ref().map_or(0, |p| p.pid);
        let keep_dispatches = self.counters;
        let process = self.processes.entry(pid).or_default();
        match &chunk.batch {
            Batch::KernelDispatch(records) if keep_dispatches => {
                (process.dispatches).extend(records.iter().map(|r| (r.dispatch_id, *r)));
            }
            Batch::CounterSample(records) => records.iter().for_each(|r| process.count(r)),
            _ => {}
        }
        let mut rows = Rows {
            meta,
            pid,
            out: BTreeMap::new(),
            stats: &mut process.stats,
            line: Line::default(),
        };
        match &chunk.batch {
            Batch::KernelDispatch(records) => records.iter().for_each(|r| rows.kernel(r)),
            Batch::Api(records) => records.iter().for_each(|r| rows.api(r)),
            Batch::Marker(records) => records.iter().for_each(|r| rows.marker(r)),
            Batch::MemoryCopy(records) => records.iter().for_each(|r| rows.copy(r)),
            Batch::MemoryAllocation(records) => records.iter().for_each(|r| rows.allocation(r)),
            Batch::ScratchMemory(records) => records.iter().for_each(|r| rows.scratch(r)),
            Batch::PcSample(records) => records.iter().for_each(|r| rows.pc_sample(r)),
            // Written when the run ends, their dispatches' values summed.
            Batch::CounterSample(_) => {}
            // rocprofv3 writes no CSV of these.
            Batch::KfdEvent(_) | Batch::HipStream(_) | Batch::RuntimeInitialization(_) => {}
        }
        for (table, lines) in rows.out {
            self.append(pid, table, &lines)?;
        }
        Ok(())
    }

    /// Writes a process's counter rows, statistics and agents.
    fn finish_process(&mut self, pid: u32, meta: &StreamMeta) -> Result<(), SinkError> {
        let process = std::mem::take(self.process(pid));
        let mut lines = Vec::new();
        for (dispatch_id, counted) in &process.counted {
            let dispatch = process.dispatches.get(dispatch_id);
            counter_rows(meta, pid, *dispatch_id, counted, dispatch, &mut lines);
        }
        if !lines.is_empty() {
            self.append(pid, Table::CounterCollection, &lines)?;
        }
        let mut domains: Vec<(&str, Accumulator)> = Vec::new();
        for (table, names) in &process.stats {
            let Some((file, domain)) = table.stats() else {
                continue;
            };
            let rows: Vec<(&str, &Accumulator)> =
                names.iter().map(|(n, a)| (n.as_str(), a)).collect();
            let total = stats_rows(&rows);
            let mut out = self.open(pid, file, STATS)?;
            out.write_all(&total.1)
                .map_err(SinkError::io(format!("writing {pid}_{file}.csv")))?;
            out.flush()
                .map_err(SinkError::io(format!("writing {pid}_{file}.csv")))?;
            domains.push((domain, total.0));
        }
        if !domains.is_empty() {
            let rows: Vec<(&str, &Accumulator)> = domains.iter().map(|(n, a)| (*n, a)).collect();
            let (_, text) = stats_rows(&rows);
            let mut out = self.open(pid, "domain_stats", STATS)?;
            out.write_all(&text)
                .and_then(|()| out.flush())
                .map_err(SinkError::io(format!("writing {pid}_domain_stats.csv")))?;
        }
        for (table, mut out) in process.files {
            out.flush()
                .map_err(SinkError::io(format!("writing {pid}_{}.csv", table.name())))?;
        }
        if !meta.agents.is_empty() {
            let mut out = self.open(pid, Table::AgentInfo.name(), AGENT_INFO)?;
            out.write_all(&agent_rows(meta))
                .and_then(|()| out.flush())
                .map_err(SinkError::io(format!("writing {pid}_agent_info.csv")))?;
        }
        Ok(())
    }
}

impl Sink for Rocprofv3Sink {
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
        for chunk in window {
            self.chunk(chunk, catalog.stream(chunk.stream))?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        // Every process the run described has its agents written, records or not.
        for (_, meta) in catalog.streams() {
            if let Some(p) = &meta.process {
                self.processes.entry(p.pid).or_default();
            }
        }
        let pids: Vec<u32> = self.processes.keys().copied().collect();
        for pid in pids {
            let meta = catalog
                .streams()
                .map(|(_, m)| m)
                .find(|m| m.process.as_ref().is_some_and(|p| p.pid == pid));
            let empty = StreamMeta::default();
            self.finish_process(pid, meta.unwrap_or(&empty))?;
        }
        let Rocprofv3Sink {
            staging, written, ..
        } = *self;
        staging.commit(earlier_output)?;
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scratch memory, which the simulated device does not produce: rocprofv3's columns
    /// (`generateCSV.cpp`), the operation by the SDK's name, the agent as `Agent N`.
    #[test]
    fn scratch_memory_is_written_with_rocprofv3s_columns() {
        use crate::record::{Meta, ScratchMemory};
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::default();
        let process = crate::generate::process(42, 0);
        let agent = crate::generate::mi300x(1);
        catalog.apply(0, vec![Meta::Process(process), Meta::Agent(agent.clone())]);
        let scratch = ScratchMemory {
            pid: 42,
            tid: 43,
            agent: agent.index,
            queue: 7,
            start_ns: 100,
            end_ns: 250,
            bytes: 4096,
            flags: 1,
            operation_id: 1,
            ..Default::default()
        };
        let chunk = Chunk::new(0, Batch::ScratchMemory(vec![scratch]));
        let mut sink = Box::new(Rocprofv3Sink::create(dir.path().join("out"), &[]).unwrap());
        sink.write(&[Arc::new(chunk)], &catalog).unwrap();
        sink.finish(&catalog).unwrap();
        let text = std::fs::read_to_string(dir.path().join("out/42_scratch_memory_trace.csv"));
        let logical = agent.logical_node_id;
        assert_eq!(
            text.unwrap(),
            format!(
                "\"Kind\",\"Operation\",\"Agent_Id\",\"Queue_Id\",\"Thread_Id\",\"Alloc_Flags\",\
                 \"Start_Timestamp\",\"End_Timestamp\",\"Allocation_Size\"\n\
                 \"SCRATCH_MEMORY\",\"SCRATCH_MEMORY_ALLOC\",\"Agent {logical}\",7,43,1,100,250,4096\n"
            )
        );
        let stats = std::fs::read_to_string(dir.path().join("out/42_scratch_memory_stats.csv"));
        assert!(stats.unwrap().ends_with(
            "\"SCRATCH_MEMORY_ALLOC\",1,150,150.000000,100.00,150,150,0.00000000e+00\n"
        ));
    }
}
