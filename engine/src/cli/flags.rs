//! rocprofv3's everyday options on `rocflow run`, `explain` and `replay`: each a change to
//! the pipeline ([`crate::import::overlay`]), so `rocflow explain PIPELINE [FLAGS]`
//! shows what a run with them collects.

use clap::Args;

use crate::import::Overlay;
use crate::import::input::TimeUnit;
use crate::import::overlay::Change;
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
    #[arg(
        long,
        value_enum,
        default_value = "sec",
        requires = "collection_period"
    )]
    collection_period_unit: TimeUnit,
    #[command(flatten)]
    outputs: OutputFlags,
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
    pub fn overlay(&self) -> Overlay {
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
            let change = Change::CollectionPeriod(periods, self.collection_period_unit);
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
