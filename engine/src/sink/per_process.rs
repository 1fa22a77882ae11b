//! One output per process: a sink whose path names what tells processes apart (`{pid}`,
//! `{ppid}`, `{rank}`, `{hostname}`) writes each process's records at the path its own
//! values fill in, as rocprofv3 writes a file per process. Processes whose values fill in
//! the same path share that output, unless the format refuses it ([`Paths::Distinct`], the
//! rocpd sink's `per_process` layout). A process is one process across `exec`: the program
//! it runs next loads the tool anew, and its records continue the process's output.
//!
//! Each output is a sink of its own, opened when its first process's records arrive (or,
//! for a process that sent none, at the end); aggregate tables, which are the whole run's,
//! go to every output; the outputs finish together, on a thread per core.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::{Placeholders, Sink, SinkError, Written};
use crate::catalog::Catalog;
use crate::chunk::Chunk;
use crate::record::Process;
use crate::table::Table;

/// The placeholders whose values differ between the processes of a run.
const PER_PROCESS: [&str; 4] = ["{pid}", "{ppid}", "{rank}", "{hostname}"];

/// Whether a sink's path template names something that tells processes apart.
pub fn names_a_process(template: &str) -> bool {
    PER_PROCESS.iter().any(|p| template.contains(p))
}

/// The path `template` names for `process`: its values, the run's where it has none.
fn path_of(template: &str, run: &Placeholders, process: Option<&Process>) -> PathBuf {
    process
        .map_or_else(|| run.clone(), |p| run.for_process(p))
        .expand(template)
}

/// The paths `template` names for the run's processes, each once, in the order they
/// connected (the run's own values when none said which process it is).
pub fn paths(template: &str, catalog: &Catalog) -> Vec<PathBuf> {
    let run = Placeholders::for_run(catalog);
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut seen = HashSet::default();
    for process in catalog
        .streams()
        .filter_map(|(_, meta)| meta.process.as_ref())
    {
        let path = path_of(template, &run, Some(process));
        if seen.insert(path.clone()) {
            paths.push(path);
        }
    }
    if paths.is_empty() {
        paths.push(path_of(template, &run, None));
    }
    paths
}

/// Whether processes whose values fill in the same path may share the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paths {
    Shared,
    /// Two processes at one path are an error naming both, with this hint (the programs
    /// one process runs across `exec` are one process).
    Distinct(&'static str),
}

/// Opens the output at a path, for the stream of its first process (and that process's
/// metadata, once it has sent it).
pub type OpenOutput =
    dyn Fn(PathBuf, u16, Option<&Process>) -> Result<Box<dyn Sink>, SinkError> + Send;

/// A sink that writes each process's records into the output its path names.
pub struct PerProcess {
    template: String,
    /// The run's values, for what a process's metadata does not say.
    run: Placeholders,
    paths: Paths,
    open: Box<OpenOutput>,
    outputs: Vec<Output>,
    /// The index in `outputs` of each stream's output, once the stream is routed; looked up
    /// rather than searched for, as a job has thousands of outputs.
    output_of: HashMap<u16, usize>,
    /// The index in `outputs` of the output at each path.
    at_path: HashMap<PathBuf, usize>,
    tables: Vec<Table>,
    written: Option<Written>,
}

struct Output {
    streams: Vec<u16>,
    sink: Box<dyn Sink>,
}

impl Output {
    /// Whether every stream of the output is of `process` (which images of one process
    /// across `exec` each open).
    fn is_of(&self, process: Option<&Process>, catalog: &Catalog) -> bool {
        let Some(process) = process else {
            return false;
        };
        (self.streams.iter()).all(|&stream| {
            let other = catalog.stream(stream).process.as_ref();
            other.is_some_and(|other| other.is_same_as(process))
        })
    }
}

impl PerProcess {
    /// `written`: the count the outputs keep together, if they keep one (see
    /// [`Sink::written`]).
    pub fn new(
        template: &str,
        run: &Placeholders,
        paths: Paths,
        written: Option<Written>,
        open: Box<OpenOutput>,
    ) -> PerProcess {
        PerProcess {
            template: template.to_owned(),
            run: run.clone(),
            paths,
            open,
            outputs: Vec::new(),
            output_of: HashMap::default(),
            at_path: HashMap::default(),
            tables: Vec::new(),
            written,
        }
    }

    /// Finds or opens the output of each stream in `streams` that has none yet.
    fn route(
        &mut self,
        streams: impl Iterator<Item = u16>,
        catalog: &Catalog,
    ) -> Result<(), SinkError> {
        for stream in streams {
            if self.output_of.contains_key(&stream) {
                continue;
            }
            let process = catalog.stream(stream).process.as_ref();
            let path = path_of(&self.template, &self.run, process);
            let index = match (self.at_path.get(&path), self.paths) {
                (Some(&index), Paths::Shared) => index,
                // A program the process exec'd continues its output.
                (Some(&index), Paths::Distinct(_))
                    if self.outputs[index].is_of(process, catalog) =>
                {
                    index
                }
                (Some(_), Paths::Distinct(hint)) => {
                    return Err(SinkError::NameClash {
                        context: format!("writing {}", path.display()),
                        reason: format!(
                            "two processes would write this output ({} and process {}); \
                             the path needs a placeholder that tells processes apart, such \
                             as {{pid}} or {{rank}}{hint}",
                            path.display(),
                            process.map_or(self.run.pid, |p| p.pid)
                        ),
                    });
                }
                (None, _) => {
                    let sink = (self.open)(path.clone(), stream, process)?;
                    self.at_path.insert(path, self.outputs.len());
                    self.outputs.push(Output {
                        streams: Vec::new(),
                        sink,
                    });
                    self.outputs.len() - 1
                }
            };
            self.outputs[index].streams.push(stream);
            self.output_of.insert(stream, index);
        }
        Ok(())
    }
}

impl Sink for PerProcess {
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
        self.route(window.iter().map(|c| c.stream), catalog)?;
        // Each output's chunks, written in the order the outputs were opened.
        let mut own: BTreeMap<usize, Vec<Arc<Chunk>>> = BTreeMap::new();
        for chunk in window {
            let output = self.output_of[&chunk.stream];
            own.entry(output).or_default().push(Arc::clone(chunk));
        }
        for (output, chunks) in own {
            self.outputs[output].sink.write(&chunks, catalog)?;
        }
        Ok(())
    }

    fn table(&mut self, table: &Table) -> Result<(), SinkError> {
        self.tables.push(table.clone());
        Ok(())
    }

    fn finish(mut self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        // A process whose records all went elsewhere still gets its output.
        let described = (catalog.streams())
            .filter(|(_, meta)| meta.process.is_some())
            .map(|(stream, _)| stream);
        self.route(described, catalog)?;
        for output in &mut self.outputs {
            for table in &self.tables {
                output.sink.table(table)?;
            }
        }
        // On the threads rocflow works on, not one per output: a job has thousands of
        // processes.
        let outputs = Mutex::new(std::mem::take(&mut self.outputs).into_iter().enumerate());
        let finished = Mutex::new(Vec::new());
        let threads = crate::threads::count();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    loop {
                        let next = outputs.lock().unwrap().next();
                        let Some((i, output)) = next else { break };
                        let done = output.sink.finish(&catalog.only(&output.streams));
                        finished.lock().unwrap().push((i, done));
                    }
                });
            }
        });
        let mut finished = finished.into_inner().unwrap();
        finished.sort_by_key(|(i, _)| *i);
        let mut paths = Vec::new();
        for (_, outcome) in finished {
            paths.extend(outcome?);
        }
        Ok(paths)
    }

    fn written(&self) -> Option<Written> {
        self.written.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_name_a_process_are_told_apart() {
        for (template, names) in [
            ("out/{hostname}-{pid}.pftrace", true),
            ("out/rank-{rank}", true),
            ("out/{ppid}.db", true),
            ("out/{timestamp}/trace.pftrace", false),
            ("out/trace.pftrace", false),
        ] {
            assert_eq!(names_a_process(template), names, "{template}");
        }
    }
}
