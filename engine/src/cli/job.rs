//! `rocflow generate DIR --ranks N …`: a simulated MPI job, a spool per rank (and a rocpd
//! database per rank with `--rocpd`), with the faults injected that `injected.json`
//! beside them lists (see [`crate::generate::job`]).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use crate::diag::{Diagnostic, SourceFile};
use crate::error::{Error, Result};
use crate::generate::job::{self, ClockOffset, Job, SlowRank, Straggler};
use crate::source::Spool;
use crate::{pipeline, sink, stage};

use super::stdio::print;

#[derive(Debug, Args)]
pub struct JobArgs {
    /// Simulate an MPI job of N ranks: OUT is then a folder, a spool per rank
    /// (`rank-R.rfraw`) and `injected.json`, what was injected.
    #[arg(long, value_name = "N", conflicts_with_all = ["records", "processes", "pipeline"])]
    ranks: Option<u32>,
    /// The job's nodes (`node-00` on); ranks fill them in order.
    #[arg(long, default_value_t = 1, requires = "ranks")]
    nodes: u32,
    /// The steps every rank runs (each: a ROCTx range, six kernels, its collectives).
    #[arg(long, default_value_t = 20, requires = "ranks")]
    steps: u32,
    /// Rank R arrives at the job's collective K (from 0, over the whole job) late by D ns.
    #[arg(long, value_name = "R:K:D", value_parser = straggler, requires = "ranks")]
    straggler: Vec<Straggler>,
    /// Rank R's dispatches of kernel X (0 to 5, as injected.json lists them) take F
    /// times as long.
    #[arg(long, value_name = "R:X:F", value_parser = slow_rank, requires = "ranks")]
    slow_rank: Vec<SlowRank>,
    /// Every timestamp node N's processes record is shifted by D ns (D may be negative).
    #[arg(long, value_name = "N:D", value_parser = clock_offset, requires = "ranks")]
    clock_offset: Vec<ClockOffset>,
    /// Write a rocpd database per rank too (`rank-R.db`), from its spool.
    #[arg(long, requires = "ranks")]
    rocpd: bool,
}

impl JobArgs {
    /// The job asked for, if the command line asks for one.
    pub fn job(&self, seed: u64) -> Option<Job> {
        Some(Job {
            ranks: self.ranks?,
            nodes: self.nodes,
            steps: self.steps,
            seed,
            stragglers: self.straggler.clone(),
            slow_ranks: self.slow_rank.clone(),
            clock_offsets: self.clock_offset.clone(),
        })
    }

    /// Whether to write rocpd databases beside the spools.
    pub fn rocpd(&self) -> bool {
        self.rocpd
    }
}

/// Writes the job into the folder `out`; `injected.json` is written last.
pub fn generate(job: &Job, rocpd: bool, out: &Path) -> Result<ExitCode> {
    job.check()
        .map_err(|bad| Error::user(Diagnostic::error(bad.0)))?;
    let context = || format!("writing {}", out.display());
    let (injected, records) = job::write(job, out).map_err(Error::io(context()))?;
    if rocpd {
        databases(job, out)?;
    }
    let json = serde_json::to_string_pretty(&injected).expect("the injected faults serialize");
    let partial = out.join("injected.json.partial");
    std::fs::write(&partial, json + "\n").map_err(Error::io(context()))?;
    std::fs::rename(&partial, out.join("injected.json")).map_err(Error::io(context()))?;
    print(&format!(
        "generated {records} records of {} ranks on {} nodes into {}\n",
        job.ranks,
        job.nodes,
        out.display()
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// Replays each rank's spool into `out/rank-R.db` with rocflow's rocpd sink, as `rocflow
/// replay` would with a pipeline whose only output is that database.
fn databases(job: &Job, out: &Path) -> Result<()> {
    let dir = toml::Value::String(out.display().to_string());
    let text = format!(
        "[pipeline]\nname = \"generated-job\"\nextends = [\"trace-all\"]\n\
         [params]\noutput_dir = {dir}\n\
         [[sink]]\nname = \"perfetto\"\nenabled = false\n\
         [[post]]\nname = \"summary\"\nenabled = false\n\
         [[post]]\nname = \"report\"\nenabled = false\n\
         [[sink]]\nname = \"rocpd\"\npath = \"{{output_dir}}/rank-{{rank}}.db\"\n"
    );
    let path = out.join("generated-job.toml");
    let file = SourceFile::new(path.display().to_string(), text);
    let plan = pipeline::compile_text(&path, Arc::clone(&file), &Default::default())
        .map_err(Error::User)?
        .plan;
    job::for_each_rank(job.ranks, |rank| {
        let spool = Job::spool(out, rank);
        let failed = |e: String| std::io::Error::other(format!("{}: {e}", spool.display()));
        let mut source = Spool::open(&spool).map_err(|e| failed(e.to_string()))?;
        let report =
            stage::run(&plan, &mut source, &sink::open).map_err(|e| failed(e.to_string()))?;
        for sink in report.sinks {
            sink.outcome.map_err(|e| failed(e.to_string()))?;
        }
        Ok(0)
    })
    .map_err(Error::io(format!(
        "writing rocpd databases into {}",
        out.display()
    )))?;
    Ok(())
}

/// The parts of a `A:B:C` value, `parts` of them.
fn split(text: &str, parts: usize, form: &str) -> std::result::Result<Vec<String>, String> {
    let split: Vec<String> = text.split(':').map(|p| p.trim().to_owned()).collect();
    match split.len() == parts {
        true => Ok(split),
        false => Err(format!("`{text}` is not {form}")),
    }
}

fn number<T: std::str::FromStr>(text: &str, what: &str) -> std::result::Result<T, String> {
    text.parse()
        .map_err(|_| format!("`{text}` is not a {what}"))
}

fn straggler(text: &str) -> std::result::Result<Straggler, String> {
    let p = split(text, 3, "RANK:COLLECTIVE:DELAY_NS, e.g. 17:3:500000")?;
    Ok(Straggler {
        rank: number(&p[0], "rank")?,
        collective: number(&p[1], "collective's number")?,
        delay_ns: number(&p[2], "delay in nanoseconds")?,
    })
}

fn slow_rank(text: &str) -> std::result::Result<SlowRank, String> {
    let p = split(text, 3, "RANK:KERNEL:FACTOR, e.g. 5:0:2.5")?;
    let factor: f64 = number(&p[2], "factor")?;
    if !(factor.is_finite() && factor > 0.0) {
        return Err(format!("the factor `{}` is not a positive number", p[2]));
    }
    Ok(SlowRank {
        rank: number(&p[0], "rank")?,
        kernel: number(&p[1], "kernel's number")?,
        factor,
    })
}

fn clock_offset(text: &str) -> std::result::Result<ClockOffset, String> {
    let p = split(text, 2, "NODE:OFFSET_NS, e.g. 3:-2000000")?;
    Ok(ClockOffset {
        node: number(&p[0], "node")?,
        offset_ns: number(&p[1], "offset in nanoseconds")?,
    })
}
