//! One rocprofv3 job as rocflow pipelines: its tracing options become the domains of one
//! context, its counters that context's counter collection (with the kernel filters), its
//! PC-sampling options and collection period the context's too; output formats become
//! sinks, `stats` and `summary` a summary step, kernel naming a `kernel_name` transform.
//! A job with `pmc_groups` becomes one pipeline per group.

use std::ops::Range;

use indexmap::IndexMap;
use regex::Regex;

use super::command_line::Origin;
use super::de::Spanned;
use super::input::{Categories, Job, Opt, OutputFormat, RUN_OPTION, TimeUnit, Unsupported, flag};
use super::launch::Launch;
use super::paths::RunValues;
use super::pmc::counter_names;
use super::{att, domains, kernels, ompt, paths, period, replay};
use crate::diag::{Diagnostic, Span};
use crate::pipeline::model::{
    Context, Counters, Header, KernelFilter, KernelNames, PcSampling, Period, Pipeline, Post, Sink,
    SinkType, ThreadTrace, Tracing,
};
use crate::pipeline::name_of;
use crate::plan::sink::csv::{Flavour, Options as CsvOptions, Rocprofv3 as Rocprofv3Csv};
use crate::plan::sink::otf2::{Layout as Otf2Layout, Options as Otf2Options};
use crate::plan::sink::{Format, SinkKind};
use crate::plan::{Destination, DomainTables, PostStep};
use crate::record::RecordKind;
use crate::sdk::{Domain, PcSamplingMethod};
use rocflow_core::mpi::Ranks;

/// The context every converted pipeline collects with.
pub const CONTEXT: &str = "rocprofv3";

/// How the passes of a file are named and where each writes, as rocprofv3 does it.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// What the file's units are called: `job` (YAML, JSON) or `pass` (text lines).
    pub noun: &'static str,
    /// And more than one of them.
    pub nouns: &'static str,
    /// rocprofv3's output subdirectory prefix for them: `pass_` or `pmc_` for an input
    /// file's, none for the command line's one job.
    pub subdirectory: Option<&'static str>,
}

/// One pipeline of the conversion: a job, or one counter group of a job.
#[derive(Debug)]
pub struct Pass {
    /// `job 2`, `job 2, group 1`, `pass 3`.
    pub label: String,
    /// The pipeline's file name without `.toml`: `job-2`, `job-2-group-1`, `pass-3`.
    pub stem: String,
    /// The job in the input file.
    pub span: Range<usize>,
    pub pipeline: Pipeline,
    /// What was not converted, and what works differently; each points into the input.
    pub warnings: Vec<Diagnostic>,
    /// How `rocflow run` starts the application for it.
    pub launch: Launch,
}

/// What the pipelines are for.
#[derive(Clone, Copy)]
pub enum Purpose<'a> {
    /// Files to keep (`rocflow import-rocprofv3`): what only a run does is reported.
    Import,
    /// `rocflow run` with rocprofv3's options, which does it, and knows what the output
    /// paths' placeholders stand for before the application starts.
    Run(&'a RunValues),
}

/// Converts every job; the errors of all jobs are reported together.
pub fn passes(
    origin: &Origin,
    name: &str,
    jobs: &[Spanned<Job>],
    layout: Layout,
    purpose: Purpose<'_>,
) -> Result<Vec<Pass>, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut passes = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let mut converter = Converter {
            origin,
            errors: &mut errors,
            warnings: Vec::new(),
            purpose,
        };
        let number = i + 1;
        let place = JobPlace {
            name,
            number,
            layout,
            several: jobs.len() > 1,
        };
        passes.extend(converter.job(&place, job));
    }
    if errors.is_empty() {
        Ok(passes)
    } else {
        Err(errors)
    }
}

/// Which job of which file is converted.
struct JobPlace<'a> {
    /// The input file's stem, for pipeline names.
    name: &'a str,
    number: usize,
    layout: Layout,
    several: bool,
}

struct Converter<'a> {
    origin: &'a Origin,
    errors: &'a mut Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
    purpose: Purpose<'a>,
}

/// What a job counts.
enum Counting {
    /// These counters (maybe none) for the whole run.
    Run(Vec<String>),
    /// Groups rocprofv3 switches between during the run; rocflow has no multiplexing, so
    /// each is collected in a run (a pipeline) of its own.
    Groups(Vec<Vec<String>>),
}

/// A job's settings shared by its passes.
struct Settings {
    domains: Vec<Domain>,
    /// The OpenMP operations `ompt_trace`'s categories trace; `None` for every one.
    ompt: Option<Vec<&'static str>>,
    kernels: KernelFilter,
    iterations: Option<String>,
    pc_sampling: Option<PcSampling>,
    thread_trace: Option<ThreadTrace>,
    /// How the counters' passes run, where the job says.
    replay: Option<rocflow_core::contexts::Replay>,
    period: Option<Period>,
    sinks: Vec<SinkKind>,
    outputs: Outputs,
    summary: SummaryAsk,
    kernel_names: KernelNames,
    /// The options of rocprofv3's CSV files.
    csv: Rocprofv3Csv,
}

impl Converter<'_> {
    fn span(&self, range: &Range<usize>) -> Option<Span> {
        Some(self.origin.span(range.clone()))
    }

    fn error(&mut self, range: &Range<usize>, message: impl Into<String>) -> &mut Diagnostic {
        let d = Diagnostic::error(message).at(self.span(range));
        self.errors.push(d);
        self.errors.last_mut().expect("just pushed")
    }

    fn warn(&mut self, range: &Range<usize>, message: impl Into<String>) {
        let d = Diagnostic::warning(message).at(self.span(range));
        self.warnings.push(d);
    }

    /// The OpenMP operations the categories of `ompt_trace` trace, as rocprofv3 groups
    /// them; `None` for every one.
    fn ompt_operations(&mut self, j: &Job) -> Option<Vec<&'static str>> {
        let ompt = j.ompt_trace.as_ref()?;
        let Categories::Only(categories) = &ompt.value else {
            return None;
        };
        match ompt::operations(categories) {
            Ok(operations) => operations,
            Err(unknown) => {
                self.error(
                    &ompt.span,
                    format!("`{unknown}` is not a category of OpenMP events"),
                )
                .hint = Some(format!("the categories are {}", ompt::names()));
                None
            }
        }
    }

    fn job(&mut self, place: &JobPlace<'_>, job: &Spanned<Job>) -> Vec<Pass> {
        let j = &job.value;
        let run = matches!(self.purpose, Purpose::Run(_));
        let run_does = |u: &Unsupported| run && u.reason == RUN_OPTION;
        for u in j.unsupported().into_iter().filter(|u| !run_does(u)) {
            self.warn(
                &u.span,
                format!("`{}` is not converted: {}", u.key, u.reason),
            );
        }
        let ompt = self.ompt_operations(j);
        if let Some(kokkos) = j.kokkos_trace.as_ref().filter(|k| k.value) {
            self.warn(
                &kokkos.span,
                "`kokkos_trace` is converted as `marker_trace`: rocflow loads no Kokkos Tools connector and cannot rename kernels",
            );
        }
        let launch = self.launch(j);
        let counting = self.counting(j);
        let counts = match &counting {
            Counting::Run(counters) => !counters.is_empty(),
            Counting::Groups(_) => true,
        };
        let thread_trace = att::thread_trace(j, |span, message| self.warn(span, message));
        // The kernel filters select the dispatches counted and those traced alike.
        let (kernels, iterations) = self.kernel_filter(j, counts || thread_trace.is_some());
        let sinks = self.sinks(j);
        let summary = self.summary(j, &sinks);
        let pc_sampling = self.pc_sampling(j);
        let replay = replay::replay(j, counts, thread_trace.is_some(), pc_sampling.is_some())
            .unwrap_or_else(|refusal| {
                self.error(&refusal.span, refusal.message).hint = Some(refusal.hint.into());
                None
            });
        let settings = Settings {
            domains: domains::domains(j),
            ompt,
            kernels,
            iterations,
            pc_sampling,
            thread_trace,
            replay,
            period: self.period(j),
            sinks,
            outputs: self.outputs(j),
            summary,
            csv: Rocprofv3Csv {
                agent_index: j.agent_index.as_ref().map(|a| a.value).unwrap_or_default(),
                stats: flag(&j.stats),
            },
            kernel_names: match flag(&j.kernel_rename) {
                true => KernelNames::Renamed,
                false => {
                    KernelNames::of_rocprofv3(flag(&j.mangled_kernels), flag(&j.truncate_kernels))
                }
            },
        };
        let collects = !settings.domains.is_empty()
            || counts
            || settings.pc_sampling.is_some()
            || settings.thread_trace.is_some();
        match self.purpose {
            _ if collects => {}
            // A run that lists what the GPUs offer needs nothing else, as rocprofv3's `-L`.
            Purpose::Run(_) if !launch.list_avail => {
                let hint = "add a tracing option (`--kernel-trace`, `--sys-trace`, …), `--pmc`, PC sampling or `--att`";
                self.error(
                    &job.span,
                    "this job collects nothing: it enables no tracing, counters or PC sampling",
                )
                .hint = Some(hint.into());
            }
            _ => self.warn(
                &job.span,
                "this job enables no tracing, counters or PC sampling (rocprofv3 warns too)",
            ),
        }
        // Shown in the order of the file.
        self.warnings
            .sort_by_key(|w| w.span.as_ref().map(|s| s.range.start));
        let noun = place.layout.noun;
        let number = place.number;
        // rocprofv3 gives a job its own directory when there are several, or when it counts.
        let has_pmc = j.pmc.as_ref().is_some_and(|p| !p.value.is_empty());
        let subdirectory = (place.layout.subdirectory)
            .filter(|_| place.several || has_pmc)
            .map(|prefix| format!("{prefix}{number}"));
        let runs: Vec<(Option<usize>, Vec<String>)> = match counting {
            Counting::Run(counters) => vec![(None, counters)],
            Counting::Groups(groups) => (1..).map(Some).zip(groups).collect(),
        };
        runs.into_iter()
            .map(|(group, counters)| {
                let (label, stem, directory) = match group {
                    None => (
                        format!("{noun} {number}"),
                        format!("{noun}-{number}"),
                        subdirectory.clone(),
                    ),
                    Some(group) => (
                        format!("{noun} {number}, group {group}"),
                        format!("{noun}-{number}-group-{group}"),
                        Some(match &subdirectory {
                            Some(sub) => format!("{sub}/group_{group}"),
                            None => format!("group_{group}"),
                        }),
                    ),
                };
                let header = Header {
                    name: Some(pipeline_name(&format!("{}-{stem}", place.name))),
                    description: Some(format!(
                        "Converted from the rocprofv3 input {}, {label}",
                        self.origin.source().name()
                    )),
                    spool_dir: None,
                    kernel_names: None,
                };
                Pass {
                    pipeline: pipeline(&settings, counters, directory.as_deref(), header),
                    label,
                    stem,
                    span: job.span.clone(),
                    warnings: self.warnings.clone(),
                    launch: launch.clone(),
                }
            })
            .collect()
    }

    /// How the application is started: the ranks profiled, where the rank is read, what
    /// is preloaded, how much rocflow says.
    fn launch(&mut self, j: &Job) -> Launch {
        let ranks = j.profile_mpi_ranks.as_ref().and_then(|ranks| {
            Ranks::parse(&ranks.value)
                .map_err(|bad| {
                    self.error(&ranks.span, format!("`profile_mpi_ranks`: {bad}"))
                        .hint = Some("write ranks and ranges apart by commas, e.g. 0-3,8".into());
                })
                .ok()
        });
        let world_variables = match (&j.mpi_world_rank_variable, &j.mpi_world_size_variable) {
            (Some(rank), Some(size)) => Some((rank.value.clone(), size.value.clone())),
            (None, None) => None,
            (Some(one), None) | (None, Some(one)) => {
                self.error(
                    &one.span,
                    "`mpi_world_rank_variable` and `mpi_world_size_variable` go together",
                )
                .hint = Some("name both variables, or neither (rocflow then finds them)".into());
                None
            }
        };
        let preload = j.preload.as_ref().map_or_else(Vec::new, |p| {
            (p.value.as_slice().iter())
                .filter(|l| !l.is_empty())
                .cloned()
                .collect()
        });
        let quiet = (j.log_level.as_ref())
            .is_some_and(|l| matches!(l.value.as_str(), "fatal" | "error" | "warning"));
        Launch {
            ranks,
            world_variables,
            preload,
            quiet,
            list_avail: flag(&j.list_avail),
        }
    }

    /// What a job counts: `pmc`, or the groups of `pmc_groups`.
    fn counting(&mut self, j: &Job) -> Counting {
        let pmc = j.pmc.as_ref().map(|p| owned_names(&p.value));
        let Some(groups) = j.pmc_groups.as_ref().filter(|g| !g.value.is_empty()) else {
            return Counting::Run(pmc.unwrap_or_default());
        };
        if pmc.as_ref().is_some_and(|p| !p.is_empty()) {
            self.error(&groups.span, "`pmc` and `pmc_groups` cannot both be set")
                .hint = Some("rocprofv3 refuses this too: keep one of them".into());
        }
        let lists: Vec<Vec<String>> = groups.value.iter().map(|g| owned_names(g)).collect();
        if let Some(empty) = lists.iter().position(Vec::is_empty) {
            self.error(
                &groups.span,
                format!("group {} of `pmc_groups` names no counters", empty + 1),
            );
        }
        if let Purpose::Run(_) = self.purpose {
            // One run collects them all, in as many passes as the GPU needs, merged into
            // one set of outputs where rocprofv3 writes them.
            let mut all: Vec<String> = Vec::new();
            for name in lists.into_iter().flatten() {
                if !all.contains(&name) {
                    all.push(name);
                }
            }
            return Counting::Run(all);
        }
        if lists.len() > 1 {
            self.warn(
                &groups.span,
                format!(
                    "rocflow does not switch counter groups during a run: each of the {} groups is a pipeline of its own, to run once each",
                    lists.len()
                ),
            );
        }
        Counting::Groups(lists)
    }

    /// `kernel_include_regex`, `kernel_exclude_regex` and `kernel_iteration_range`, which
    /// select the dispatches whose counters are collected.
    fn kernel_filter(&mut self, j: &Job, counting: bool) -> (KernelFilter, Option<String>) {
        let mut regex = |option: &Opt<String>, key: &str| {
            // An empty regex is no filter, as rocprofv3 takes it (AMD's inputs write
            // `kernel_exclude_regex: ""`), not one that matches every kernel.
            let option = option.as_ref().filter(|o| !o.value.is_empty())?;
            if let Err(err) = Regex::new(&option.value) {
                let reason = err.to_string();
                let reason = reason.lines().last().unwrap_or_default().trim();
                self.error(
                    &option.span,
                    format!("`{key}` is not a regex rocflow reads: {reason}"),
                )
                .hint = Some(
                    "rocflow's kernel filters are Rust regexes: no look-around, no back-references"
                        .into(),
                );
                return None;
            }
            Some(option.value.clone())
        };
        let kernels = KernelFilter {
            include: regex(&j.kernel_include_regex, "kernel_include_regex"),
            exclude: regex(&j.kernel_exclude_regex, "kernel_exclude_regex"),
        };
        let iterations = j.kernel_iteration_range.as_ref().and_then(|range| {
            kernels::iteration_ranges(range.value.as_slice(), "kernel_iteration_range")
                .map_err(|message| {
                    self.error(&range.span, message.to_string()).hint =
                        Some("write ranges and iterations like \"[1-10],[20]\"".into());
                })
                .ok()
        });
        if !counting {
            let filters = [
                (
                    "kernel_include_regex",
                    j.kernel_include_regex.as_ref().map(|o| &o.span),
                ),
                (
                    "kernel_exclude_regex",
                    j.kernel_exclude_regex.as_ref().map(|o| &o.span),
                ),
                (
                    "kernel_iteration_range",
                    j.kernel_iteration_range.as_ref().map(|o| &o.span),
                ),
            ];
            for (key, span) in filters {
                if let Some(span) = span {
                    self.warn(
                        span,
                        format!("`{key}` has no effect: it selects the kernels whose counters are collected, and this job collects none"),
                    );
                }
            }
        }
        (kernels, iterations)
    }

    fn pc_sampling(&mut self, j: &Job) -> Option<PcSampling> {
        let (method, unit, interval) = match (
            &j.pc_sampling_method,
            &j.pc_sampling_unit,
            &j.pc_sampling_interval,
        ) {
            (None, None, None) => return None,
            (Some(m), Some(u), Some(i)) => (m, u, i),
            (m, u, i) => {
                let spans = [
                    m.as_ref().map(|o| &o.span),
                    u.as_ref().map(|o| &o.span),
                    i.as_ref().map(|o| &o.span),
                ];
                let keys = [
                    "pc_sampling_method",
                    "pc_sampling_unit",
                    "pc_sampling_interval",
                ];
                let missing: Vec<&str> = keys
                    .iter()
                    .zip(&spans)
                    .filter(|(_, s)| s.is_none())
                    .map(|(k, _)| *k)
                    .collect();
                let first = spans
                    .into_iter()
                    .flatten()
                    .next()
                    .expect("one is set")
                    .clone();
                self.error(
                    &first,
                    format!("PC sampling also needs `{}`", missing.join("` and `")),
                )
                .hint =
                    Some("rocprofv3 takes the method, the unit and the interval together".into());
                return None;
            }
        };
        let expected = method.value.unit();
        if unit.value != expected {
            self.error(
                &unit.span,
                format!(
                    "rocprofiler-sdk samples `{}` PCs by {}, not by {}",
                    name_of(&method.value),
                    name_of(&expected),
                    name_of(&unit.value)
                ),
            )
            .hint = Some(format!("set `pc_sampling_unit: {}`", name_of(&expected)));
        }
        // The pipeline is TOML, whose integers are i64.
        let most = i64::MAX as u64;
        if interval.value == 0 {
            self.error(&interval.span, "the PC sampling interval must be above 0");
        } else if interval.value > most {
            self.error(
                &interval.span,
                format!("the PC sampling interval must be at most {most}"),
            );
        } else if method.value == PcSamplingMethod::Stochastic && !interval.value.is_power_of_two()
        {
            let below = 1u64 << (63 - interval.value.leading_zeros());
            self.error(
                &interval.span,
                format!(
                    "stochastic sampling needs a power-of-two interval, not {}",
                    interval.value
                ),
            )
            .hint = Some(format!("try {below} or {}", below << 1));
        }
        Some(PcSampling {
            method: method.value,
            unit: Some(unit.value),
            interval: Some(interval.value),
            agents: Vec::new(),
        })
    }

    /// `selected_regions` starts the context paused (ROCTx resumes it); otherwise the first
    /// `collection_period`, as rocflow's period (see [`period::period`]).
    fn period(&mut self, j: &Job) -> Option<Period> {
        let unit = match &j.collection_period_unit {
            None => TimeUnit::Sec,
            Some(Spanned { value, span }) => match value.as_slice() {
                [unit] => *unit,
                _ => {
                    self.error(span, "`collection_period_unit` takes one unit");
                    TimeUnit::Sec
                }
            },
        };
        let periods = j.collection_period.as_ref().filter(|p| !p.value.is_empty());
        if let Some(unit) = j
            .collection_period_unit
            .as_ref()
            .filter(|_| periods.is_none())
        {
            self.warn(
                &unit.span,
                "`collection_period_unit` has no effect without `collection_period`",
            );
        }
        if flag(&j.selected_regions) {
            if let Some(periods) = periods {
                self.warn(
                    &periods.span,
                    "`collection_period` is not converted: `selected_regions` decides when to collect, as in rocprofv3",
                );
            }
            return Some(Period {
                paused: true,
                delay: None,
                duration: None,
                interval: None,
                repeat: None,
            });
        }
        let periods = periods?;
        if periods.value.len() > 1 {
            self.warn(
                &periods.span,
                format!(
                    "only the first of {} collection periods is converted: a rocflow context has one",
                    periods.value.len()
                ),
            );
        }
        period::period(&periods.value[0], unit)
            .map_err(|message| {
                self.error(&periods.span, message.to_string()).hint = Some(
                    "write `START_DELAY:COLLECTION_TIME:REPEAT`, e.g. \"1:2:0\" (in seconds unless `collection_period_unit` says otherwise)".into(),
                );
            })
            .ok()
    }

    /// One sink per output format (rocprofv3 writes rocpd when none is given).
    fn sinks(&mut self, j: &Job) -> Vec<SinkKind> {
        let Some(formats) = &j.output_format else {
            return vec![SinkKind::Rocpd];
        };
        let mut kinds = Vec::new();
        for format in &formats.value {
            let kind = match format.value {
                OutputFormat::Csv => SinkKind::Csv,
                OutputFormat::Rocpd => SinkKind::Rocpd,
                OutputFormat::Pftrace => SinkKind::Perfetto,
                OutputFormat::Otf2 => SinkKind::Otf2,
                OutputFormat::Json => SinkKind::Json,
            };
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        kinds
    }

    /// Where the outputs go: `output_directory` and `output_file` with their placeholders
    /// in rocflow's syntax, and the parameters those without an equivalent became.
    fn outputs(&mut self, j: &Job) -> Outputs {
        let mut params = IndexMap::new();
        let mut translate = |this: &mut Self, option: &Opt<String>, key: &str, default: &str| {
            let Some(option) = option else {
                return default.to_owned();
            };
            let translated = match this.purpose {
                Purpose::Run(values) => paths::translate(&values.expand(&option.value)),
                Purpose::Import => paths::translate(&option.value),
            };
            for param in translated.params {
                this.warn(
                    &option.span,
                    format!(
                        "`{}` in `{key}` has no rocflow equivalent: it is the parameter `{}` (set it with --set {}=…)",
                        param.written, param.name, param.name
                    ),
                );
                params.insert(param.name.clone(), serde_json::Value::String(param.name));
            }
            translated.text
        };
        let directory = translate(self, &j.output_directory, "output_directory", ".");
        let file = translate(self, &j.output_file, "output_file", "{hostname}/{pid}");
        Outputs {
            directory,
            file,
            params,
        }
    }
}

/// A job's output directory and file prefix, in rocflow's placeholder syntax.
struct Outputs {
    directory: String,
    file: String,
    /// Parameters for rocprofv3 placeholders rocflow has no value for.
    params: IndexMap<String, serde_json::Value>,
}

impl Outputs {
    /// The prefix of every output path, and the parameters it uses, for a pass writing in
    /// `subdirectory` of the output directory.
    fn prefix(&self, subdirectory: Option<&str>) -> (String, IndexMap<String, serde_json::Value>) {
        let directory = match subdirectory {
            Some(sub) if self.directory == "." => sub.to_owned(),
            Some(sub) => format!("{}/{sub}", self.directory.trim_end_matches('/')),
            None => self.directory.clone(),
        };
        let mut params = IndexMap::new();
        // An absolute file name leaves the directory out, as rocprofv3's path join does.
        let prefix = if self.file.starts_with('/') {
            "{output_file}"
        } else {
            params.insert(
                "output_dir".to_owned(),
                serde_json::Value::String(directory),
            );
            "{output_dir}/{output_file}"
        };
        params.insert(
            "output_file".to_owned(),
            serde_json::Value::String(self.file.clone()),
        );
        params.extend(self.params.clone());
        (prefix.to_owned(), params)
    }
}

/// The pipeline of one pass.
fn pipeline(
    s: &Settings,
    counters: Vec<String>,
    subdirectory: Option<&str>,
    mut header: Header,
) -> Pipeline {
    let (prefix, params) = s.outputs.prefix(subdirectory);
    // The spool goes with the outputs, as rocprofv3's own files do.
    header.spool_dir = params
        .contains_key("output_dir")
        .then(|| "{output_dir}".to_owned());
    let counters = (!counters.is_empty()).then(|| Counters {
        collect: counters,
        definitions: None,
        derived: Vec::new(),
        reduce: Vec::new(),
        kernels: s.kernels.clone(),
        iterations: s.iterations.clone(),
        agents: Vec::new(),
        per_pass: None,
        replay: s.replay,
    });
    let produced: Vec<RecordKind> = s
        .domains
        .iter()
        .map(|d| d.record_kind())
        .chain(counters.as_ref().map(|_| RecordKind::CounterSample))
        .chain(s.pc_sampling.as_ref().map(|_| RecordKind::PcSample))
        .collect();
    let collects = !produced.is_empty() || s.thread_trace.is_some();
    let context = collects.then(|| Context {
        name: CONTEXT.to_owned(),
        tracing: s
            .domains
            .iter()
            .map(|&d| match (d, &s.ompt) {
                (Domain::Ompt, Some(operations)) => Tracing::Filtered {
                    domain: d.name().to_owned(),
                    include: operations.iter().map(|o| o.to_string()).collect(),
                    exclude: Vec::new(),
                },
                _ => Tracing::Domain(d.name().to_owned()),
            })
            .collect(),
        buffer: Default::default(),
        counters,
        pc_sampling: s.pc_sampling.clone(),
        device_counters: None,
        thread_trace: s.thread_trace.clone().map(|t| ThreadTrace {
            path: att::folder(&prefix),
            kernels: s.kernels.clone(),
            iterations: s.iterations.clone(),
            ..t
        }),
        spm: None,
        serialize: false,
        args: false,
        agents: Vec::new(),
        period: s.period.clone(),
    });
    let sink = s
        .sinks
        .iter()
        .map(|&kind| Sink {
            name: name_of(&kind),
            kind: SinkType::Builtin(kind),
            plugin: None,
            path: match kind {
                // rocprofv3's CSV files are named after the prefix: `{prefix}_kernel_trace.csv`.
                SinkKind::Csv | SinkKind::Parquet => prefix.clone(),
                SinkKind::Rocpd => format!("{prefix}_results.db"),
                SinkKind::Perfetto => format!("{prefix}_results.pftrace"),
                SinkKind::Otf2 => format!("{prefix}_results"),
                SinkKind::Json => format!("{prefix}_results.json"),
            },
            records: Vec::new(),
            options: match kind {
                SinkKind::Csv => Format::Csv(CsvOptions {
                    flavour: Flavour::Rocprofv3(s.csv),
                })
                .written(),
                // `{prefix}_results.otf2`, `.def` and the directory, as rocprofv3 names them.
                SinkKind::Otf2 => Format::Otf2(Otf2Options {
                    layout: Otf2Layout::Archive,
                    ..Otf2Options::default()
                })
                .written(),
                _ => Default::default(),
            },
        })
        .collect();
    let post = (s.summary.step(&prefix).into_iter())
        .map(|step| Post {
            name: "summary".into(),
            required: false,
            step,
        })
        .collect();
    Pipeline {
        pipeline: Header {
            kernel_names: (s.kernel_names != KernelNames::default()).then_some(s.kernel_names),
            ..header
        },
        params,
        context: context.into_iter().collect(),
        transform: Vec::new(),
        sink,
        post,
    }
}

/// The counter names of a `pmc` list.
fn owned_names(written: &[String]) -> Vec<String> {
    let names = written.iter().flat_map(|item| counter_names(item));
    names.map(str::to_owned).collect()
}

/// What a job asks of the summary step: CSV tables for `stats` (unless rocprofv3's CSV
/// files, written, hold its statistics files); rocprofv3's summary
/// tables for `summary`, `summary_per_domain` and `summary_groups`, in `summary_units`,
/// to `summary_output_file`.
struct SummaryAsk {
    formats: Vec<String>,
    domain_tables: Option<DomainTables>,
}

impl Converter<'_> {
    fn summary(&mut self, j: &Job, sinks: &[SinkKind]) -> SummaryAsk {
        let groups: Vec<String> = j
            .summary_groups
            .as_ref()
            .map_or(&[][..], |g| g.value.as_slice())
            .to_vec();
        if let Some(option) = &j.summary_groups {
            for group in &groups {
                if let Err(err) = DomainTables::group(group) {
                    let reason = err.to_string();
                    let reason = reason.lines().last().unwrap_or_default().trim();
                    let reason = reason.strip_prefix("error: ").unwrap_or(reason);
                    self.error(
                        &option.span,
                        format!("summary group `{group}` is not a regex rocflow reads: {reason}"),
                    )
                    .hint = Some(
                        "rocflow's groups are Rust regexes: no look-around, no back-references"
                            .into(),
                    );
                }
            }
        }
        let asked = flag(&j.summary) || flag(&j.summary_per_domain) || !groups.is_empty();
        SummaryAsk {
            formats: (flag(&j.stats) && !sinks.contains(&SinkKind::Csv))
                .then(|| "csv".to_owned())
                .into_iter()
                .collect(),
            domain_tables: asked.then(|| DomainTables {
                all: flag(&j.summary),
                per_domain: flag(&j.summary_per_domain),
                groups,
                units: j
                    .summary_units
                    .as_ref()
                    .map(|u| u.value)
                    .unwrap_or_default(),
                output: (j.summary_output_file.as_ref()).map_or_else(Destination::default, |f| {
                    // With `summary`, rocprofv3 reads `Stdout` and `Stderr` in any case.
                    let lower = f.value.to_ascii_lowercase();
                    let stream = flag(&j.summary) && matches!(lower.as_str(), "stdout" | "stderr");
                    Destination::of(if stream { &lower } else { &f.value })
                }),
            }),
        }
    }
}

impl SummaryAsk {
    /// The summary step, writing under `prefix` where rocprofv3 writes: `stats` tables in
    /// `{prefix}_stats`, a summary file `NAME` as `{prefix}_NAME.txt`; none when the job
    /// asks for no summary.
    fn step(&self, prefix: &str) -> Option<PostStep> {
        if self.formats.is_empty() && self.domain_tables.is_none() {
            return None;
        }
        let mut domain_tables = self.domain_tables.clone();
        if let Some(Destination::File(name)) = domain_tables.as_mut().map(|t| &mut t.output) {
            // rocprofv3 adds `.txt` to whatever name it is given.
            *name = format!("{prefix}_{name}.txt");
        }
        Some(PostStep::Summary {
            path: Some(format!("{prefix}_stats")),
            top: None,
            formats: Some(self.formats.clone()),
            by: Vec::new(),
            domain_tables,
        })
    }
}

/// A pipeline name from a file and pass name (letters, digits, `_`, `-`, `.`).
pub(super) fn pipeline_name(text: &str) -> String {
    let name: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_start_matches(['_', '-', '.']);
    if name.is_empty() {
        "imported".to_owned()
    } else {
        name.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(pipeline_name("my input-job-1"), "my-input-job-1");
        assert_eq!(pipeline_name(".hidden"), "hidden");
    }
}
