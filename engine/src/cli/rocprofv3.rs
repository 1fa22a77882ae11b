//! The rest of rocprofv3's options on `rocflow run` and `explain`, from one table: each is
//! the rocprofv3 job key it names, read by the same reader as an input file's jobs
//! ([`crate::import::command_line`]). The table also makes their help; `docs/rocprofv3.md`
//! says what each becomes (a test holds it to `rocflow run --help`).

use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command, FromArgMatches};

use crate::import::{CommandLine, Shape};

/// One option, as rocprofv3 spells it.
#[derive(Debug)]
pub struct Option3 {
    pub long: &'static str,
    pub short: Option<char>,
    /// Other long names rocprofv3 takes for it.
    pub aliases: &'static [&'static str],
    /// The job key; `input` is `-i`, which names the file of jobs.
    pub key: &'static str,
    pub shape: Shape,
    /// The values it takes, where they are few.
    pub choices: &'static [&'static str],
    pub heading: Heading,
    pub help: &'static str,
}

/// Where an option's help is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heading {
    Tracing,
    Outputs,
    Summaries,
    Selection,
    PcSampling,
    /// How counter passes run.
    Counters,
    ThreadTrace,
    /// Options that tune rocprofv3's own machinery: accepted, with a note of what rocflow
    /// does instead.
    Accepted,
}

impl Heading {
    fn title(self) -> &'static str {
        match self {
            Heading::Tracing => {
                "rocprofv3 tracing (each a whole run: give them without a pipeline)"
            }
            Heading::Outputs => "rocprofv3 outputs",
            Heading::Summaries => "rocprofv3 summaries",
            Heading::Selection => "rocprofv3 kernels, processes and regions",
            Heading::PcSampling => "rocprofv3 PC sampling",
            Heading::Counters => "rocprofv3 counter passes",
            Heading::ThreadTrace => "rocprofv3 thread trace (ATT)",
            Heading::Accepted => "rocprofv3 options rocflow accepts and does otherwise",
        }
    }
}

const fn flag(long: &'static str, heading: Heading, help: &'static str) -> Option3 {
    Option3 {
        long,
        short: None,
        aliases: &[],
        key: "",
        shape: Shape::Flag,
        choices: &[],
        heading,
        help,
    }
}

const fn one(long: &'static str, heading: Heading, help: &'static str) -> Option3 {
    Option3 {
        shape: Shape::One,
        ..flag(long, heading, help)
    }
}

const fn many(long: &'static str, heading: Heading, help: &'static str) -> Option3 {
    Option3 {
        shape: Shape::Many,
        ..flag(long, heading, help)
    }
}

impl Option3 {
    const fn short(self, short: char) -> Self {
        Option3 {
            short: Some(short),
            ..self
        }
    }

    const fn key(self, key: &'static str) -> Self {
        Option3 { key, ..self }
    }

    const fn choices(self, choices: &'static [&'static str]) -> Self {
        Option3 { choices, ..self }
    }

    const fn aliases(self, aliases: &'static [&'static str]) -> Self {
        Option3 { aliases, ..self }
    }

    /// The job key: the long name in snake case unless said otherwise.
    pub fn job_key(&self) -> String {
        match self.key {
            "" => self.long.replace('-', "_"),
            key => key.to_owned(),
        }
    }
}

use Heading::*;

/// Every rocprofv3 option `rocflow run` takes as rocprofv3 does, but those
/// [`super::flags::Flags`] declares with rocflow's own meaning on a pipeline (`--pmc`,
/// `-d`, `--stats`, the kernel filters, `-P`).
pub const OPTIONS: &[Option3] = &[
    one("input", Outputs, "Run the jobs of a rocprofv3 input file (YAML, JSON or text `pmc:` lines), one run of the application each; the options given here fill in what a job leaves unset").short('i'),
    one("output-file", Outputs, "The outputs' name, placeholders allowed (`%hostname%/%pid%` by default): NAME_kernel_trace.csv, NAME_results.db, …").short('o'),
    many("output-format", Outputs, "The formats to write, one or more").short('f').choices(&["csv", "json", "pftrace", "otf2", "rocpd"]),
    flag("output-config", Outputs, "Also write what the run collects, as rocflow's plan (NAME_config.json)"),
    one("minimum-output-data", Outputs, "Write no output holding less than this many KB of records"),
    one("log-level", Outputs, "How much rocflow says on stderr: fatal, error and warning keep it to warnings and errors").choices(&["fatal", "error", "warning", "info", "trace", "env", "config"]),
    one("extra-counters", Outputs, "Counter definitions (YAML) to read besides the SDK's, for --pmc").short('E'),
    flag("runtime-trace", Tracing, "HIP runtime API, markers, RCCL, rocDecode, rocJPEG, memory copies, allocations and scratch memory, kernel dispatches, KFD events and OpenMP").short('r'),
    flag("sys-trace", Tracing, "--runtime-trace with the HIP compiler API and the HSA API; `--sys-trace --hsa-trace=no` leaves a part out").short('s'),
    flag("hip-trace", Tracing, "The HIP runtime and compiler APIs"),
    flag("hip-runtime-trace", Tracing, "The HIP runtime API (functions named hip…)"),
    flag("hip-compiler-trace", Tracing, "The HIP compiler API (functions named __hip…)"),
    flag("hsa-trace", Tracing, "The HSA core, AMD extension, image and finalizer APIs"),
    flag("hsa-core-trace", Tracing, "The HSA core API"),
    flag("hsa-amd-trace", Tracing, "The HSA AMD extension API"),
    flag("hsa-image-trace", Tracing, "The HSA image extension API"),
    flag("hsa-finalizer-trace", Tracing, "The HSA finalizer extension API").key("hsa_finalize_trace"),
    flag("marker-trace", Tracing, "ROCTx markers and ranges"),
    flag("kernel-trace", Tracing, "Kernel dispatches"),
    flag("memory-copy-trace", Tracing, "Memory copies"),
    flag("memory-allocation-trace", Tracing, "Memory allocations"),
    flag("scratch-memory-trace", Tracing, "Scratch memory"),
    flag("rccl-trace", Tracing, "The RCCL API"),
    flag("rocdecode-trace", Tracing, "The rocDecode API"),
    flag("rocjpeg-trace", Tracing, "The rocJPEG API"),
    flag("kokkos-trace", Tracing, "Kokkos: markers, with kernels renamed by their ranges"),
    flag("kfd-trace", Tracing, "The four KFD event kinds below"),
    flag("kfd-page-migration-trace", Tracing, "KFD page migrations"),
    flag("kfd-page-mapping-trace", Tracing, "KFD page faults, mappings and invalidations"),
    flag("kfd-queue-trace", Tracing, "KFD queue evictions and restores"),
    flag("kfd-dropped-events-trace", Tracing, "Events KFD dropped"),
    many("ompt-trace", Tracing, "OpenMP (OMPT) events").choices(&["thread", "parallel", "task", "sync", "mutex", "target", "device", "error", "all"]),
    flag("hip-graph-trace", Tracing, "HIP graph operations (newer SDKs only)"),
    flag("hip-event-trace", Tracing, "HIP events (newer SDKs only)"),
    flag("rocshmem-trace", Tracing, "The rocSHMEM API (newer SDKs only)"),
    flag("hipfile-trace", Tracing, "The hipFile API (newer SDKs only)"),
    flag("summary", Summaries, "Print a summary of every traced domain when the run ends").short('S'),
    flag("summary-per-domain", Summaries, "Print a summary per domain").short('D'),
    many("summary-groups", Summaries, "Print a summary per set of domains whose names match each regex, e.g. 'KERNEL_DISPATCH|MEMORY_COPY'"),
    one("summary-output-file", Summaries, "Where the summaries go: stdout, stderr (the default) or a file"),
    one("summary-units", Summaries, "The summaries' time unit").short('u').choices(&["sec", "msec", "usec", "nsec"]),
    flag("mangled-kernels", Selection, "Kernel names as the code objects give them").short('M'),
    flag("truncate-kernels", Selection, "Kernel names cut to the function's base name").short('T'),
    flag("kernel-rename", Selection, "A kernel launched inside a ROCTx range takes the range's name"),
    one("agent-index", Selection, "How agents are numbered in the outputs").short('A').choices(&["absolute", "relative", "type-relative"]),
    one("profile-mpi-ranks", Selection, "Profile only these MPI ranks, e.g. 0-3,8; the others run unprofiled"),
    one("mpi-world-rank-variable", Selection, "The environment variable that holds the MPI rank (found by itself by default)"),
    one("mpi-world-size-variable", Selection, "The environment variable that holds the MPI world size"),
    flag("selected-regions", Selection, "Collect only between roctxProfilerResume and roctxProfilerPause"),
    flag("list-avail", Selection, "List each agent's counters and PC-sampling configurations, then run").short('L'),
    flag("pc-sampling-beta-enabled", PcSampling, "Accepted; PC sampling needs no opt-in in rocflow"),
    one("pc-sampling-method", PcSampling, "host_trap or stochastic").choices(&["host_trap", "stochastic"]),
    one("pc-sampling-unit", PcSampling, "What the interval counts").choices(&["instructions", "cycles", "time"]),
    one("pc-sampling-interval", PcSampling, "How often a PC is sampled, in the unit"),
    one("replay-mode", Counters, "How --pmc's passes run: `application` runs the application once per pass, `kernel` replays each dispatch once per pass in one run (rocprofiler-sdk 1.4.1, beta)").choices(&["application", "kernel"]),
    flag("kernel-replay-beta-enabled", Counters, "Opt in to kernel replay, a beta of rocprofiler-sdk (alone, it selects `--replay-mode kernel`)"),
    many("preload", Accepted, "Libraries to put before the tool in LD_PRELOAD"),
    one("perfetto-backend", Accepted, "rocflow writes Perfetto itself").choices(&["inprocess", "system"]),
    one("perfetto-buffer-size", Accepted, "rocflow writes Perfetto itself, with no buffer to size"),
    one("perfetto-buffer-fill-policy", Accepted, "rocflow writes Perfetto itself, losing nothing").choices(&["discard", "ring_buffer"]),
    one("perfetto-shmem-size-hint", Accepted, "rocflow writes Perfetto itself"),
    flag("group-by-queue", Accepted, "rocflow shows HSA queues"),
    one("rocm-root", Accepted, "rocflow uses the SDK the application loads (ROCM_PATH finds it)"),
    one("sdk-soversion", Accepted, "rocflow uses the SDK the application loads"),
    one("sdk-version", Accepted, "rocflow uses the SDK the application loads"),
    flag("disable-signal-handlers", Accepted, "rocflow's tool keeps its handlers, which save the records when the application crashes"),
    flag("echo", Accepted, "rocflow always runs the application; `rocflow explain` shows what it would collect"),
    flag("advanced-thread-trace", ThreadTrace, "Trace threads of the dispatches the kernel filters select: raw traces and code objects kept, decoded when AMD's trace decoder is installed").aliases(&["att"]),
    many("att-library-path", ThreadTrace, "Folders to look for AMD's trace decoder (librocprof-trace-decoder.so) in first"),
    one("att-target-cu", ThreadTrace, "The CU (gfx9) or WGP traced in detail, 0 to 15 (default 1)"),
    one("att-simd-select", ThreadTrace, "Bitmask of SIMDs (gfx9) or a SIMD id (gfx10 on); default 0xF"),
    one("att-buffer-size", ThreadTrace, "The trace buffer on the GPU, in bytes (default 256 MiB)"),
    one("att-shader-engine-mask", ThreadTrace, "Bitmask of shader engines to trace (default 0x1)"),
    one("att-perfcounters", ThreadTrace, "SQ counters sampled into the trace (gfx9): NAME or NAME:SIMD_MASK, apart by spaces"),
    one("att-perfcounter-ctrl", ThreadTrace, "How often the perfcounters are sampled, 1 to 32 (0: not at all)"),
    flag("att-serialize-all", ThreadTrace, "Serialize the dispatches not traced too"),
];

/// The options given.
#[derive(Debug, Default)]
pub struct Given {
    /// Each option with its values, in command-line order.
    given: Vec<(&'static Option3, Vec<String>)>,
}

impl Given {
    pub fn is_empty(&self) -> bool {
        self.given.is_empty()
    }

    /// `-i`: the input file whose jobs run.
    pub fn input(&self) -> Option<PathBuf> {
        (self.given.iter())
            .find(|(option, _)| option.long == "input")
            .map(|(_, values)| PathBuf::from(&values[0]))
    }

    /// The first option given that is not `-i`, as written.
    pub fn first(&self) -> Option<String> {
        (self.given.iter())
            .find(|(option, _)| option.long != "input")
            .map(|(option, _)| format!("--{}", option.long))
    }

    /// Adds the options (but `-i`) to a job.
    pub fn add_to(&self, line: &mut CommandLine) {
        for (option, values) in self.given.iter().filter(|(o, _)| o.long != "input") {
            let values: Vec<String> = match (option.shape, values.as_slice()) {
                (Shape::Flag, [value]) if value == "true" => Vec::new(),
                // rocprofv3 takes its choices in any case (`-f CSV JSON`).
                _ if !option.choices.is_empty() => {
                    values.iter().map(|v| v.to_ascii_lowercase()).collect()
                }
                _ => values.clone(),
            };
            line.add(
                &format!("--{}", option.long),
                &option.job_key(),
                option.shape,
                &values,
            );
        }
    }
}

/// rocprofv3's spellings of true and false (Python's `strtobool`), as the input files' YAML
/// reader reads them.
fn boolean(text: &str) -> Result<String, String> {
    match text.to_ascii_lowercase().as_str() {
        "y" | "yes" | "t" | "true" | "on" | "1" => Ok("true".into()),
        "n" | "no" | "f" | "false" | "off" | "0" => Ok("false".into()),
        _ => Err(format!(
            "`{text}` is neither true nor false (yes, no, 1, 0, on, off)"
        )),
    }
}

fn arg(option: &'static Option3) -> Arg {
    let mut arg = Arg::new(option.long)
        .long(option.long)
        .help(option.help)
        .help_heading(option.heading.title());
    if let Some(short) = option.short {
        arg = arg.short(short);
    }
    for alias in option.aliases {
        arg = arg.visible_alias(*alias);
    }
    arg = match option.shape {
        Shape::Flag => arg
            .num_args(0..=1)
            .default_missing_value("true")
            .value_name("BOOL")
            .value_parser(boolean),
        Shape::One => arg.num_args(1).action(ArgAction::Set),
        Shape::Many => arg.num_args(1..).action(ArgAction::Append),
    };
    if !option.choices.is_empty() {
        arg = arg
            .value_parser(PossibleValuesParser::new(option.choices))
            .ignore_case(true);
    }
    arg
}

impl clap::Args for Given {
    fn augment_args(command: Command) -> Command {
        OPTIONS
            .iter()
            .fold(command, |command, option| command.arg(arg(option)))
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl FromArgMatches for Given {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut given: Vec<(usize, &'static Option3, Vec<String>)> = Vec::new();
        for option in OPTIONS {
            if matches.value_source(option.long) != Some(ValueSource::CommandLine) {
                continue;
            }
            let values: Vec<String> = (matches.get_many::<String>(option.long))
                .into_iter()
                .flatten()
                .cloned()
                .collect();
            let index = matches.index_of(option.long).unwrap_or(usize::MAX);
            given.push((index, option, values));
        }
        given.sort_by_key(|(index, ..)| *index);
        let given = given.into_iter().map(|(_, o, v)| (o, v)).collect();
        Ok(Given { given })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}
