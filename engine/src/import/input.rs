//! rocprofv3's input file as typed values: `jobs`, each the options of one run of the
//! application.
//!
//! rocprofv3 reads a job's keys as its command-line options (`kernel_trace` is
//! `--kernel-trace`), so a job takes every key of rocprofiler-sdk's
//! `rocprofv3_input_schema.json` and every option of `rocprofv3 --help` by its argument
//! name. The schema spells a few keys differently from the options (`minimum-output-data`,
//! `hsa_finalize_trace`, `list_metrics`); both spellings are read.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;

use serde::de::{self, IgnoredAny, IntoDeserializer, Visitor};
use serde::{Deserialize, Deserializer};

use super::de::Spanned;
use crate::plan::sink::csv::AgentIndex;
use crate::sdk::{PcSamplingMethod, PcSamplingUnit};

/// An option as written, with its place in the file.
pub type Opt<T> = Option<Spanned<T>>;

/// A value whose type does not matter, for options that are only reported.
pub type Any = IgnoredAny;

/// The jobs of a file, each with its place.
pub type Jobs = Vec<Spanned<Job>>;

/// A YAML or JSON input file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub jobs: Spanned<Jobs>,
}

/// The options of one run.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    // Counter collection.
    pub pmc: Opt<Vec<String>>,
    pub pmc_groups: Opt<Vec<Vec<String>>>,
    pub pmc_group_interval: Opt<Any>,
    pub extra_counters: Opt<Any>,

    // Kernel filters (counter collection).
    pub kernel_include_regex: Opt<String>,
    pub kernel_exclude_regex: Opt<String>,
    pub kernel_iteration_range: Opt<OneOrMany<String>>,

    // Tracing, basic and aggregate.
    pub hip_trace: Opt<bool>,
    pub hip_runtime_trace: Opt<bool>,
    pub hip_compiler_trace: Opt<bool>,
    pub hsa_trace: Opt<bool>,
    pub hsa_core_trace: Opt<bool>,
    pub hsa_amd_trace: Opt<bool>,
    pub hsa_image_trace: Opt<bool>,
    #[serde(alias = "hsa_finalizer_trace")]
    pub hsa_finalize_trace: Opt<bool>,
    pub marker_trace: Opt<bool>,
    pub kernel_trace: Opt<bool>,
    pub memory_copy_trace: Opt<bool>,
    pub memory_allocation_trace: Opt<bool>,
    pub scratch_memory_trace: Opt<bool>,
    pub rccl_trace: Opt<bool>,
    pub rocdecode_trace: Opt<bool>,
    pub rocjpeg_trace: Opt<bool>,
    pub kokkos_trace: Opt<bool>,
    pub kfd_trace: Opt<bool>,
    pub kfd_page_migration_trace: Opt<bool>,
    pub kfd_page_mapping_trace: Opt<bool>,
    pub kfd_queue_trace: Opt<bool>,
    pub kfd_dropped_events_trace: Opt<bool>,
    pub ompt_trace: Opt<Categories>,
    pub runtime_trace: Opt<bool>,
    pub sys_trace: Opt<bool>,

    // Tracing of domains newer SDKs added (`Domain::since` says which).
    pub hip_graph_trace: Opt<bool>,
    pub hip_event_trace: Opt<bool>,
    pub rocshmem_trace: Opt<bool>,
    pub hipfile_trace: Opt<bool>,

    // Kernel names.
    pub mangled_kernels: Opt<bool>,
    pub truncate_kernels: Opt<bool>,
    pub kernel_rename: Opt<bool>,

    // When to collect.
    pub collection_period: Opt<Vec<String>>,
    pub collection_period_unit: Opt<OneOrMany<TimeUnit>>,
    pub selected_regions: Opt<bool>,
    pub selected_regions_ref_count: Opt<bool>,

    // Which MPI ranks are profiled (`rocflow run` reads these; see [`crate::mpi`]).
    pub profile_mpi_ranks: Opt<String>,
    pub mpi_world_rank_variable: Opt<String>,
    pub mpi_world_size_variable: Opt<String>,

    // Outputs.
    pub output_file: Opt<String>,
    pub output_directory: Opt<String>,
    pub output_format: Opt<Vec<Spanned<OutputFormat>>>,
    pub output_config: Opt<bool>,
    #[serde(alias = "minimum-output-data")]
    pub minimum_output_data: Opt<Any>,

    // Statistics and summaries.
    pub stats: Opt<bool>,
    pub summary: Opt<bool>,
    pub summary_per_domain: Opt<bool>,
    pub summary_groups: Opt<OneOrMany<String>>,
    pub summary_output_file: Opt<String>,
    pub summary_units: Opt<crate::plan::SummaryUnit>,

    // PC sampling.
    #[serde(alias = "pc-sampling-beta-enabled")]
    pub pc_sampling_beta_enabled: Opt<bool>,
    pub pc_sampling_method: Opt<PcSamplingMethod>,
    pub pc_sampling_unit: Opt<PcSamplingUnit>,
    pub pc_sampling_interval: Opt<u64>,

    // Kernel replay.
    pub replay_mode: Opt<rocflow_core::contexts::Replay>,
    pub kernel_replay_beta_enabled: Opt<bool>,

    // Perfetto's own settings.
    pub perfetto_backend: Opt<Any>,
    pub perfetto_buffer_size: Opt<Any>,
    pub perfetto_buffer_fill_policy: Opt<Any>,
    pub perfetto_shmem_size_hint: Opt<Any>,

    // Display and the runner.
    #[serde(alias = "list_metrics")]
    pub list_avail: Opt<bool>,
    pub group_by_queue: Opt<bool>,
    /// rocprofv3 reads `agent_index`; one of AMD's own inputs writes it with a dash.
    #[serde(alias = "agent-index")]
    pub agent_index: Opt<AgentIndex>,
    pub log_level: Opt<String>,
    pub preload: Opt<OneOrMany<String>>,
    #[serde(alias = "disable-signal-handlers")]
    pub disable_signal_handlers: Opt<bool>,
    pub rocm_root: Opt<Any>,
    pub sdk_soversion: Opt<Any>,
    pub sdk_version: Opt<Any>,
    /// Print the application's command line instead of running it.
    pub echo: Opt<bool>,
    pub process_sync: Opt<bool>,
    pub benchmark_mode: Opt<Any>,
    pub suppress_marker_preload: Opt<bool>,
    pub readlink: Opt<bool>,
    pub realpath: Opt<bool>,

    // Attaching to a running process.
    #[serde(alias = "attach")]
    pub pid: Opt<Any>,
    pub attach_duration_msec: Opt<Any>,
    pub attach_children: Opt<bool>,
    pub attach_sync_output: Opt<bool>,

    // Thread trace (ATT).
    pub advanced_thread_trace: Opt<bool>,
    pub att_library_path: Opt<OneOrMany<String>>,
    pub att_target_cu: Opt<Number>,
    pub att_simd_select: Opt<Number>,
    pub att_buffer_size: Opt<Number>,
    pub att_shader_engine_mask: Opt<Number>,
    pub att_gpu_index: Opt<Any>,
    /// `NAME[:SIMD_MASK]`, apart by spaces.
    pub att_perfcounters: Opt<String>,
    pub att_perfcounter_ctrl: Opt<Number>,
    pub att_activity: Opt<Any>,
    pub att_serialize_all: Opt<bool>,
    pub att_consecutive_kernels: Opt<Any>,
    pub att_perfcounter_target_only: Opt<bool>,
}

/// `ompt_trace`: true for every OpenMP event, or the categories of events.
#[derive(Debug, Clone, PartialEq)]
pub enum Categories {
    All(bool),
    Only(Vec<String>),
}

impl Categories {
    pub fn asks(&self) -> bool {
        match self {
            Categories::All(on) => *on,
            Categories::Only(categories) => !categories.is_empty(),
        }
    }
}

impl<'de> Deserialize<'de> for Categories {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CategoriesVisitor;

        impl<'de> Visitor<'de> for CategoriesVisitor {
            type Value = Categories;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("true, false or a list of OpenMP event categories")
            }

            fn visit_bool<E: de::Error>(self, on: bool) -> Result<Categories, E> {
                Ok(Categories::All(on))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Categories, E> {
                Ok(Categories::Only(vec![text.to_owned()]))
            }

            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Categories, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Categories::Only)
            }
        }

        deserializer.deserialize_any(CategoriesVisitor)
    }
}

/// Whether a flag is set to true.
pub fn flag(option: &Opt<bool>) -> bool {
    option.as_ref().is_some_and(|o| o.value)
}

/// Whether an option asks for anything: a flag set to `false` asks for nothing.
pub trait Asks {
    fn asks(&self) -> bool;
}

impl Asks for bool {
    fn asks(&self) -> bool {
        *self
    }
}

impl Asks for Any {
    fn asks(&self) -> bool {
        true
    }
}

impl Asks for String {
    fn asks(&self) -> bool {
        true
    }
}

impl Asks for OneOrMany<String> {
    fn asks(&self) -> bool {
        self.as_slice().iter().any(|s| !s.is_empty())
    }
}

/// The options rocflow has no equivalent for, with the reason, in the order of `Job`.
macro_rules! unsupported {
    ($job:expr; $($field:ident => $reason:expr,)*) => {
        [$(
            $job.$field
                .as_ref()
                .filter(|o| o.value.asks())
                .map(|o| Unsupported { key: stringify!($field), span: o.span.clone(), reason: $reason }),
        )*]
    };
}

/// An option that is not converted.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsupported {
    pub key: &'static str,
    pub span: Range<usize>,
    pub reason: &'static str,
}

const NO_ATT: &str = "rocprofiler-sdk's thread-trace service has no such setting in the SDK rocflow's tool is built for";
const NO_PERFETTO_SDK: &str =
    "rocflow writes Perfetto traces itself, not through the Perfetto SDK's backends and buffers";
const OWN_SDK: &str = "rocflow uses the rocprofiler-sdk the application loads";
/// The reason of the options `rocflow run` honours itself (see [`super::launch`]).
pub const RUN_OPTION: &str = "it says how to run the application, not what to collect: `rocflow run` takes it as rocprofv3 does";
const NO_ATTACH: &str =
    "rocflow profiles the processes it starts; it does not attach to running ones";

impl Job {
    /// The options set in this job that rocflow cannot honour.
    pub fn unsupported(&self) -> Vec<Unsupported> {
        let all = unsupported![self;
            pmc_group_interval => "rocflow does not multiplex counter groups: each group of `pmc_groups` is a pass of its own",
            extra_counters => "rocflow cannot add counter definitions to rocprofiler-sdk; `rocflow counters list --extra FILE` shows them",
            output_config => "rocflow writes no configuration file; `rocflow explain --json` prints what a pipeline compiles to",
            minimum_output_data => "rocflow writes every output a pipeline asks for, however small",
            pc_sampling_beta_enabled => "rocflow needs no opt-in: the `pc_sampling` table enables PC sampling",
            perfetto_backend => NO_PERFETTO_SDK,
            perfetto_buffer_size => NO_PERFETTO_SDK,
            perfetto_buffer_fill_policy => NO_PERFETTO_SDK,
            perfetto_shmem_size_hint => NO_PERFETTO_SDK,
            list_avail => RUN_OPTION,
            group_by_queue => "rocflow has no option to show HIP streams in place of HSA queues",
            log_level => RUN_OPTION,
            preload => RUN_OPTION,
            profile_mpi_ranks => RUN_OPTION,
            mpi_world_rank_variable => RUN_OPTION,
            mpi_world_size_variable => RUN_OPTION,
            disable_signal_handlers => "the rocflow tool's signal handlers (which save the buffered records when the application crashes) stay on",
            rocm_root => OWN_SDK,
            sdk_soversion => OWN_SDK,
            sdk_version => OWN_SDK,
            echo => "a pipeline always runs the application; `rocflow explain` shows what a run would collect",
            process_sync => "rocflow's runner waits for every process's records itself",
            benchmark_mode => "rocflow measures its own cost on every run (the report's `tool cost`)",
            suppress_marker_preload => "rocflow preloads no marker library",
            readlink => OWN_SDK,
            realpath => OWN_SDK,
            pid => NO_ATTACH,
            attach_duration_msec => NO_ATTACH,
            attach_children => NO_ATTACH,
            attach_sync_output => NO_ATTACH,
            selected_regions_ref_count => "rocflow's contexts pause at every roctxProfilerPause and resume at every roctxProfilerResume, without counting nesting",
            att_gpu_index => "rocflow selects a thread trace's GPUs with the `agents` of `[context.thread_trace]`",
            att_activity => NO_ATT,
            att_consecutive_kernels => NO_ATT,
            att_perfcounter_target_only => NO_ATT,
        ];
        all.into_iter().flatten().collect()
    }
}

/// A number, as rocprofv3 takes it: an integer, or text in decimal or hexadecimal
/// (`"0x11"`, as its `--att-*` options are written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Number(pub u64);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NumberVisitor;

        impl Visitor<'_> for NumberVisitor {
            type Value = Number;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number, decimal or hexadecimal (0x…)")
            }

            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Number, E> {
                Ok(Number(n))
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Number, E> {
                u64::try_from(n)
                    .map(Number)
                    .map_err(|_| E::custom(format!("{n} is below 0")))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Number, E> {
                let text = text.trim();
                let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                    Some(hex) => u64::from_str_radix(hex, 16),
                    None => text.parse(),
                };
                parsed
                    .map(Number)
                    .map_err(|_| E::custom(format!("`{text}` is not a number")))
            }
        }

        deserializer.deserialize_any(NumberVisitor)
    }
}

/// A list, or a single value where rocprofv3 also takes one (`kernel_iteration_range`).
#[derive(Debug, Clone, PartialEq)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OneOrManyVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for OneOrManyVisitor<T> {
            type Value = OneOrMany<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of strings")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<OneOrMany<T>, E> {
                T::deserialize(text.into_deserializer()).map(OneOrMany::One)
            }

            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<OneOrMany<T>, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(OneOrMany::Many)
            }
        }

        deserializer.deserialize_any(OneOrManyVisitor(PhantomData))
    }
}

impl<T> OneOrMany<T> {
    pub fn as_slice(&self) -> &[T] {
        match self {
            OneOrMany::One(one) => std::slice::from_ref(one),
            OneOrMany::Many(many) => many,
        }
    }
}

/// `output_format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    Csv,
    Json,
    Pftrace,
    Otf2,
    Rocpd,
}

/// `collection_period_unit` values (rocprofv3's `--collection-period-unit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum TimeUnit {
    Hour,
    Min,
    Sec,
    Msec,
    Usec,
    Nsec,
}

impl TimeUnit {
    pub fn nanoseconds(self) -> f64 {
        match self {
            TimeUnit::Hour => 3_600e9,
            TimeUnit::Min => 60e9,
            TimeUnit::Sec => 1e9,
            TimeUnit::Msec => 1e6,
            TimeUnit::Usec => 1e3,
            TimeUnit::Nsec => 1.0,
        }
    }
}
