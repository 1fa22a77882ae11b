//! rocprofv3's options on `rocflow run`, `explain` and `replay`. Given with a pipeline,
//! its everyday options change it ([`crate::import::overlay`]), so `rocflow explain
//! PIPELINE [FLAGS]` shows what a run with them collects. Given without one, the options
//! are a rocprofv3 job ([`crate::import::command_line`]): the run collects and writes what
//! `rocprofv3` with the same command line would.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::rocprofv3::Given;
use crate::diag::Diagnostic;
use crate::error::{Error, Result};
use crate::import::input::TimeUnit;
use crate::import::overlay::Change;
use crate::import::{CommandLine, Overlay, Shape};
use crate::kernel_names::KernelNames;

/// What to collect and when, as rocprofv3 takes it.
#[derive(Debug, Args)]
#[command(next_help_heading = "rocprofv3 options (each changes the pipeline)")]
pub struct Flags {
    /// Collect these counters, in a context of their own (names apart by spaces or commas;
    /// the pipeline goes before them).
    #[arg(long, num_args = 1.., value_name = "NAME")]
    pmc: Vec<String>,
    /// Collect counters only for the kernels whose names match.
    #[arg(long, value_name = "REGEX")]
    kernel_include_regex: Option<String>,
    /// Collect no counters for the kernels whose names match (after the include regex).
    #[arg(long, value_name = "REGEX")]
    kernel_exclude_regex: Option<String>,
    /// Collect counters only for these dispatches of each kernel, e.g. "[1-10],[20]".
    #[arg(long, num_args = 1.., value_name = "RANGE")]
    kernel_iteration_range: Vec<String>,
    /// Collect only in this period of each process: wait START_DELAY, collect for
    /// COLLECTION_TIME, REPEAT times (once for 0).
    #[arg(
        short = 'P',
        long,
        num_args = 1..,
        value_name = "START_DELAY:COLLECTION_TIME:REPEAT"
    )]
    collection_period: Vec<String>,
    /// The unit of --collection-period's times.
    #[arg(long, value_enum, requires = "collection_period")]
    collection_period_unit: Option<TimeUnit>,
    #[command(flatten)]
    outputs: OutputFlags,
    #[command(flatten)]
    rocprofv3: Given,
}

/// A rocprofv3 run: the jobs of an input file, or the command line's one job.
pub struct Job {
    pub input: Option<PathBuf>,
    pub command_line: CommandLine,
}

/// Where outputs go and what is added to them: what `replay` can change too.
#[derive(Debug, Args)]
#[command(next_help_heading = "rocprofv3 options (each changes the pipeline)")]
pub struct OutputFlags {
    /// Add statistics: a summary step writing CSV tables (unless the pipeline has one).
    #[arg(long)]
    stats: bool,
    /// Write the outputs under DIR: the pipeline's `output_dir` parameter (rocflow's
    /// placeholders or rocprofv3's: `{hostname}` or `%hostname%`, `{pid}` or `%pid%`, …).
    #[arg(
        short = 'd',
        long = "output-directory",
        visible_alias = "output-dir",
        value_name = "DIR"
    )]
    output_dir: Option<String>,
    /// The form kernel names take in every output, as `[pipeline] kernel_names` sets it
    /// (rocprofv3's -M, -T and --kernel-rename; demangled by default).
    #[arg(long, value_enum, value_name = "FORM")]
    kernel_names: Option<KernelNames>,
}

impl Flags {
    /// The options as a rocprofv3 job, when one of them describes a whole run (the
    /// everyday options alone change the default pipeline, as they change any other).
    pub fn job(&self) -> Result<Option<Job>> {
        if self.rocprofv3.is_empty() {
            return Ok(None);
        }
        let mut line = CommandLine::default();
        let mut add = |flag: &str, key: &str, shape, values: &[String]| {
            line.add(flag, key, shape, values);
        };
        if !self.pmc.is_empty() {
            add("--pmc", "pmc", Shape::Many, &self.pmc);
        }
        let regexes = [
            ("kernel_include_regex", &self.kernel_include_regex),
            ("kernel_exclude_regex", &self.kernel_exclude_regex),
        ];
        for (key, regex) in regexes {
            if let Some(regex) = regex {
                let flag = format!("--{}", key.replace('_', "-"));
                add(&flag, key, Shape::One, std::slice::from_ref(regex));
            }
        }
        if !self.kernel_iteration_range.is_empty() {
            let ranges = &self.kernel_iteration_range;
            add(
                "--kernel-iteration-range",
                "kernel_iteration_range",
                Shape::Many,
                ranges,
            );
        }
        if !self.collection_period.is_empty() {
            let periods = &self.collection_period;
            add(
                "--collection-period",
                "collection_period",
                Shape::Many,
                periods,
            );
        }
        if let Some(unit) = self.collection_period_unit {
            let unit = unit.to_possible_value().expect("units have names");
            let unit = [unit.get_name().to_owned()];
            add(
                "--collection-period-unit",
                "collection_period_unit",
                Shape::One,
                &unit,
            );
        }
        let OutputFlags {
            stats,
            output_dir,
            kernel_names,
        } = &self.outputs;
        if let Some(dir) = output_dir {
            add(
                "-d",
                "output_directory",
                Shape::One,
                std::slice::from_ref(dir),
            );
        }
        if *stats {
            add("--stats", "stats", Shape::Flag, &[]);
        }
        self.rocprofv3.add_to(&mut line);
        let input = self.rocprofv3.input();
        if kernel_names.is_some() {
            return Err(Error::user(
                Diagnostic::error("`--kernel-names` changes a pipeline, and none was given")
                    .hint("rocprofv3's -M (mangled), -T (truncated) and --kernel-rename name kernels in a run without one"),
            ));
        }
        Ok(Some(Job {
            input,
            command_line: line,
        }))
    }

    /// The options as changes to a pipeline: only the everyday ones change one; the others
    /// describe a whole rocprofv3 run.
    pub fn overlay(&self) -> Result<Overlay> {
        if let Some(option) = self
            .rocprofv3
            .first()
            .or(self.rocprofv3.input().map(|_| "-i".into()))
        {
            return Err(Error::user(
                Diagnostic::error(format!(
                    "`{option}` describes a whole rocprofv3 run, not a change to a pipeline"
                ))
                .hint(format!(
                    "give it without a pipeline, as to rocprofv3 (`rocflow run {option} … -- APP`), or say it in the pipeline"
                )),
            ));
        }
        Ok(self.overlay_of_flags())
    }

    fn overlay_of_flags(&self) -> Overlay {
        let mut overlay = self.outputs.overlay();
        let mut add = |flag, change| overlay.add(flag, change);
        if !self.pmc.is_empty() {
            add("--pmc", Change::Counters(self.pmc.clone()));
        }
        if let Some(regex) = &self.kernel_include_regex {
            add(
                "--kernel-include-regex",
                Change::KernelInclude(regex.clone()),
            );
        }
        if let Some(regex) = &self.kernel_exclude_regex {
            add(
                "--kernel-exclude-regex",
                Change::KernelExclude(regex.clone()),
            );
        }
        if !self.kernel_iteration_range.is_empty() {
            let ranges = self.kernel_iteration_range.clone();
            add("--kernel-iteration-range", Change::KernelIterations(ranges));
        }
        if !self.collection_period.is_empty() {
            let periods = self.collection_period.clone();
            let unit = self.collection_period_unit.unwrap_or(TimeUnit::Sec);
            let change = Change::CollectionPeriod(periods, unit);
            add("--collection-period", change);
        }
        overlay
    }
}

impl OutputFlags {
    pub fn overlay(&self) -> Overlay {
        let mut overlay = Overlay::default();
        if let Some(dir) = &self.output_dir {
            overlay.add("-d", Change::OutputDir(dir.clone()));
        }
        if self.stats {
            overlay.add("--stats", Change::Stats);
        }
        if let Some(form) = self.kernel_names {
            overlay.add("--kernel-names", Change::KernelNames(form));
        }
        overlay
    }
}
