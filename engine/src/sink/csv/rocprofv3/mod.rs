//! The CSV sink's `rocprofv3` flavour: the files `rocprofv3 --output-format csv` writes,
//! named as it names them, so that scripts written against them find and read rocflow's.
//! The sink's path is a prefix, as rocprofv3's `<output_directory>/<output_file>` is:
//! `PREFIX_kernel_trace.csv`, `PREFIX_hip_api_trace.csv`, …, `PREFIX_agent_info.csv`, and
//! with `stats` the statistics files `PREFIX_kernel_stats.csv`, … and
//! `PREFIX_domain_stats.csv`; each has rocprofv3's columns in its order and its value
//! formats. A path that names the process (`{hostname}/{pid}`, rocprofv3's default) gives
//! each process its files; processes that share a prefix share its files, their
//! statistics together. The reference is rocprofv3's writer (`source/lib/output/
//! generateCSV.cpp`, `csv.hpp`, `statistics.cpp` and `generateStats.cpp` of
//! rocprofiler-sdk in ROCm/rocm-systems) and files it wrote.
//!
//! As rocprofv3 does, a file is written only for what has records, and the agents only
//! when some file is; every text field is quoted and no number is; a quote inside a text
//! is doubled (rocprofv3 leaves it alone, which no CSV reader reads back). What rocflow's
//! records do not hold is written as rocprofv3 writes an absent value: `0` for the HIP
//! stream of dispatches and copies and the accumulation registers of kernels, an empty
//! instruction for PC samples (rocflow does not disassemble).
//!
//! The files are written in a staging directory beside them and take their names when the
//! run ends, so a failed run leaves none half-written.

mod agent_info;
mod counters;
mod format;
mod stats;
mod table;
mod trace;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;

use crate::catalog::{Catalog, StreamMeta};
use crate::chunk::Chunk;
use crate::plan::sink::csv::Rocprofv3;
use crate::record::{Batch, KernelDispatch, RecordKind};
use crate::sink::staging::Staging;
use crate::sink::{Sink, SinkError};
use crate::stats::Accumulator;
use crate::writeback::Behind;

use agent_info::{AGENT_INFO, agent_rows};
use counters::{Counted, counter_rows};
use format::Line;
use stats::{Statistics, stats_rows};
use table::{STATS, Table};
use trace::Rows;
pub(crate) use trace::{INSTRUCTION_TYPES, NOT_ISSUED_REASONS};

pub struct Rocprofv3Sink {
    options: Rocprofv3,
    staging: Staging,
    /// What every file's name starts with: the prefix's last component and `_`.
    stem: String,
    /// The trace files written so far.
    files: BTreeMap<Table, BufWriter<Behind>>,
    /// The names of every file written, in the staging directory.
    names: Vec<String>,
    stats: Statistics,
    /// Counter values per stream and dispatch id, written when the run ends.
    counted: BTreeMap<(u16, u64), Counted>,
    /// The dispatches that counted, for their counter rows.
    dispatches: HashMap<(u16, u64), KernelDispatch>,
    /// Whether the sink takes counter samples: only then are dispatches kept for them.
    counters: bool,
}

impl Rocprofv3Sink {
    /// The sink writing `PREFIX_<table>.csv` for the prefix `path`.
    pub fn create(
        path: PathBuf,
        kinds: &[RecordKind],
        options: Rocprofv3,
    ) -> Result<Rocprofv3Sink, SinkError> {
        // Staged as the output `PREFIX_`, whose directory the files go in.
        let mut target = path.into_os_string();
        target.push("_");
        let target = PathBuf::from(target);
        let stem = (target.file_name()).map_or_else(|| "_".into(), |n| n.to_string_lossy().into());
        Ok(Rocprofv3Sink {
            options,
            staging: Staging::create(target)?,
            stem,
            files: BTreeMap::new(),
            names: Vec::new(),
            stats: Statistics::default(),
            counted: BTreeMap::new(),
            dispatches: HashMap::new(),
            counters: kinds.contains(&RecordKind::CounterSample),
        })
    }

    /// What writing the file `name` failed at.
    fn context(&self, name: &str) -> String {
        let file = format!("{}{name}.csv", self.stem);
        format!(
            "writing {}",
            self.staging
                .committed_path(self.staging.dir().join(file))
                .display()
        )
    }

    /// Creates `PREFIX_<name>.csv` and writes its header line.
    fn create_file(&mut self, name: &str, header: &[&str]) -> Result<BufWriter<Behind>, SinkError> {
        let file = format!("{}{name}.csv", self.stem);
        let io = SinkError::io(self.context(name));
        let mut out = BufWriter::new(Behind::create(&self.staging.dir().join(&file)).map_err(io)?);
        let (mut line, mut text) = (Line::default(), Vec::new());
        header.iter().for_each(|h| {
            line.text(h);
        });
        line.end(&mut text);
        out.write_all(&text)
            .map_err(SinkError::io(self.context(name)))?;
        self.names.push(file);
        Ok(out)
    }

    /// Writes a whole file: its header and `rows`.
    fn write_file(&mut self, name: &str, header: &[&str], rows: &[u8]) -> Result<(), SinkError> {
        let mut out = self.create_file(name, header)?;
        (out.write_all(rows).and_then(|()| out.flush())).map_err(SinkError::io(self.context(name)))
    }

    /// Appends `lines` to the `table` file, creating it with its header first.
    fn append(&mut self, table: Table, lines: &[u8]) -> Result<(), SinkError> {
        if !self.files.contains_key(&table) {
            let file = self.create_file(table.name(), table.header())?;
            self.files.insert(table, file);
        }
        let out = self.files.get_mut(&table).expect("created above");
        // The context is made only on failure: this runs for every chunk.
        let written = out.write_all(lines);
        written.map_err(|e| SinkError::io(self.context(table.name()))(e))
    }

    /// Writes the rows of one chunk, and adds its durations to the statistics.
    fn chunk(&mut self, chunk: &Chunk, meta: &StreamMeta) -> Result<(), SinkError> {
        let stream = chunk.stream;
        match &chunk.batch {
            Batch::KernelDispatch(records) if self.counters => {
                let keyed = records.iter().map(|r| ((stream, r.dispatch_id), *r));
                self.dispatches.extend(keyed);
            }
            Batch::CounterSample(records) => {
                for r in records {
                    let counted = self.counted.entry((stream, r.dispatch_id)).or_default();
                    counted.add(r);
                }
            }
            _ => {}
        }
        let mut rows = Rows {
            meta,
            pid: meta.process.as_ref().map_or(0, |p| p.pid),
            agent_index: self.options.agent_index,
            out: BTreeMap::new(),
            stats: &mut self.stats,
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
            Batch::KfdEvent(_)
            | Batch::HipStream(_)
            | Batch::RuntimeInitialization(_)
            | Batch::DeviceCounterSample(_)
            | Batch::GraphLaunch(_)
            | Batch::HipEventBarrier(_)
            | Batch::SpmSample(_) => {}
        }
        for (table, lines) in std::mem::take(&mut rows.out) {
            self.append(table, &lines)?;
        }
        Ok(())
    }

    /// Writes the counter rows: one per dispatch and counter.
    fn counter_rows(&mut self, catalog: &Catalog) -> Result<(), SinkError> {
        let mut lines = Vec::new();
        for (&(stream, dispatch_id), counted) in &self.counted {
            let meta = catalog.stream(stream);
            let pid = meta.process.as_ref().map_or(0, |p| p.pid);
            let dispatch = self.dispatches.get(&(stream, dispatch_id));
            let form = self.options.agent_index;
            counter_rows(meta, pid, dispatch_id, counted, dispatch, form, &mut lines);
        }
        if lines.is_empty() {
            return Ok(());
        }
        self.append(Table::CounterCollection, &lines)
    }

    /// Writes the statistics of each table that has them, and of each domain.
    fn statistics(&mut self) -> Result<(), SinkError> {
        let mut domains: Vec<(&str, Accumulator)> = Vec::new();
        for (table, names) in std::mem::take(&mut self.stats) {
            let Some((file, domain)) = table.stats() else {
                continue;
            };
            let rows: Vec<(&str, &Accumulator)> =
                names.iter().map(|(n, a)| (n.as_str(), a)).collect();
            let (total, text) = stats_rows(&rows);
            self.write_file(file, STATS, &text)?;
            domains.push((domain, total));
        }
        if domains.is_empty() {
            return Ok(());
        }
        let rows: Vec<(&str, &Accumulator)> = domains.iter().map(|(n, a)| (*n, a)).collect();
        let (_, text) = stats_rows(&rows);
        self.write_file("domain_stats", STATS, &text)
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
        self.counter_rows(catalog)?;
        for (table, mut out) in std::mem::take(&mut self.files) {
            out.flush()
                .map_err(SinkError::io(self.context(table.name())))?;
        }
        if self.options.stats {
            self.statistics()?;
        }
        // rocprofv3 describes the agents of a process that wrote something.
        if !self.names.is_empty() {
            let rows = agent_rows(catalog.streams().map(|(_, meta)| meta));
            if !rows.is_empty() {
                self.write_file(Table::AgentInfo.name(), AGENT_INFO, &rows)?;
            }
        }
        let Rocprofv3Sink { staging, names, .. } = *self;
        staging.commit_files(&names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::sink::csv::AgentIndex;
    use crate::record::{Meta, ScratchMemory};

    const OPTIONS: Rocprofv3 = Rocprofv3 {
        agent_index: AgentIndex::Relative,
        stats: true,
    };

    /// A catalog of one process with one MI300X, and a chunk of one scratch memory record
    /// on it.
    fn scratch() -> (Catalog, Chunk, crate::record::Agent) {
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
        (catalog, chunk, agent)
    }

    /// Scratch memory, which the simulated device does not produce: rocprofv3's columns
    /// (`generateCSV.cpp`), the operation by the SDK's name, the agent as `Agent N`; the
    /// files are named after the prefix.
    #[test]
    fn scratch_memory_is_written_with_rocprofv3s_columns() {
        let dir = tempfile::tempdir().unwrap();
        let (catalog, chunk, agent) = scratch();
        let prefix = dir.path().join("out");
        let mut sink = Box::new(Rocprofv3Sink::create(prefix, &[], OPTIONS).unwrap());
        sink.write(&[Arc::new(chunk)], &catalog).unwrap();
        let written = sink.finish(&catalog).unwrap();
        let names: Vec<String> = (written.iter())
            .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "out_scratch_memory_trace.csv",
                "out_scratch_memory_stats.csv",
                "out_domain_stats.csv",
                "out_agent_info.csv"
            ]
        );
        let left = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(left, names.len(), "the staging directory is gone");
        let text = std::fs::read_to_string(dir.path().join("out_scratch_memory_trace.csv"));
        let logical = agent.logical_node_id;
        assert_eq!(
            text.unwrap(),
            format!(
                "\"Kind\",\"Operation\",\"Agent_Id\",\"Queue_Id\",\"Thread_Id\",\"Alloc_Flags\",\
                 \"Start_Timestamp\",\"End_Timestamp\",\"Allocation_Size\"\n\
                 \"SCRATCH_MEMORY\",\"SCRATCH_MEMORY_ALLOC\",\"Agent {logical}\",7,43,1,100,250,4096\n"
            )
        );
        let stats = std::fs::read_to_string(dir.path().join("out_scratch_memory_stats.csv"));
        assert!(stats.unwrap().ends_with(
            "\"SCRATCH_MEMORY_ALLOC\",1,150,150.000000,100.00,150,150,0.00000000e+00\n"
        ));
    }

    /// A run that fails before the sink finishes leaves no file where the output belongs,
    /// and no staging directory.
    #[test]
    fn an_unfinished_output_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (catalog, chunk, _) = scratch();
        let prefix = dir.path().join("host/42");
        let mut sink = Box::new(Rocprofv3Sink::create(prefix, &[], OPTIONS).unwrap());
        sink.write(&[Arc::new(chunk)], &catalog).unwrap();
        drop(sink);
        let left: Vec<_> = std::fs::read_dir(dir.path().join("host"))
            .unwrap()
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    /// Without `stats`, the statistics files are not written.
    #[test]
    fn statistics_are_written_on_request() {
        let dir = tempfile::tempdir().unwrap();
        let (catalog, chunk, _) = scratch();
        let options = Rocprofv3 {
            stats: false,
            ..OPTIONS
        };
        let prefix = dir.path().join("out");
        let mut sink = Box::new(Rocprofv3Sink::create(prefix, &[], options).unwrap());
        sink.write(&[Arc::new(chunk)], &catalog).unwrap();
        let written = sink.finish(&catalog).unwrap();
        let names: Vec<&str> = (written.iter())
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["out_scratch_memory_trace.csv", "out_agent_info.csv"]
        );
    }

    /// Every column that names an agent names it in the `agent_index` form: by node id, by
    /// logical node id (which differ where cgroups hide agents, as here: node 2 is hidden),
    /// or by type and index among the agents of the type. `agent_info.csv` is the same
    /// in every form.
    #[test]
    fn agents_are_named_in_the_agent_index_form() {
        use crate::record::{KernelDispatch, MemoryAllocation, MemoryCopy};
        use crate::sdk::AgentType;
        let cpu = crate::record::Agent {
            agent_type: AgentType::Cpu,
            ..crate::generate::mi300x(0)
        };
        let gpu = |index, node_id| crate::record::Agent {
            node_id,
            ..crate::generate::mi300x(index)
        };
        let (first, second) = (gpu(1, 1), gpu(2, 3));
        let mut catalog = Catalog::default();
        let agents = [cpu, first, second.clone()].map(Meta::Agent);
        let process = Meta::Process(crate::generate::process(42, 0));
        catalog.apply(0, [process].into_iter().chain(agents).collect());
        let kernel = KernelDispatch {
            agent: second.index,
            end_ns: 10,
            ..Default::default()
        };
        let copy = MemoryCopy {
            src_agent: 0,
            dst_agent: second.index,
            operation_id: 1,
            ..Default::default()
        };
        let allocation = MemoryAllocation {
            agent: second.index,
            operation_id: 1,
            ..Default::default()
        };
        let batches = [
            Batch::KernelDispatch(vec![kernel]),
            Batch::MemoryCopy(vec![copy]),
            Batch::MemoryAllocation(vec![allocation]),
        ];
        let window: Vec<Arc<Chunk>> = (batches.into_iter())
            .map(|b| Arc::new(Chunk::new(0, b)))
            .collect();
        let mut agent_info = Vec::new();
        for (form, cpu, gpu) in [
            (AgentIndex::Absolute, "Agent 0", "Agent 3"),
            (AgentIndex::Relative, "Agent 0", "Agent 2"),
            (AgentIndex::TypeRelative, "CPU 0", "GPU 1"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let options = Rocprofv3 {
                agent_index: form,
                ..OPTIONS
            };
            let prefix = dir.path().join("out");
            let mut sink = Box::new(Rocprofv3Sink::create(prefix, &[], options).unwrap());
            sink.write(&window, &catalog).unwrap();
            sink.finish(&catalog).unwrap();
            let row = |table: &str| {
                let path = dir.path().join(format!("out_{table}.csv"));
                let text = std::fs::read_to_string(path).unwrap();
                text.lines().nth(1).unwrap().to_owned()
            };
            let field = |table: &str, i: usize| row(table).split(',').nth(i).unwrap().to_owned();
            let quoted = |name: &str| format!("\"{name}\"");
            assert_eq!(field("kernel_trace", 1), quoted(gpu), "{form:?}");
            assert_eq!(field("memory_copy_trace", 3), quoted(cpu), "{form:?}");
            assert_eq!(field("memory_copy_trace", 4), quoted(gpu), "{form:?}");
            assert_eq!(field("memory_allocation_trace", 2), quoted(gpu), "{form:?}");
            let path = dir.path().join("out_agent_info.csv");
            agent_info.push(std::fs::read_to_string(path).unwrap());
        }
        assert!(agent_info.windows(2).all(|w| w[0] == w[1]));
    }
}
