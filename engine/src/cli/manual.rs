//! What the manual pages say besides each command's `--help`: examples, the files rocflow
//! reads and writes, and the environment variables it reads.

/// Examples: a command line and what it does, by the page (`rocflow-run`) they belong to.
const EXAMPLES: &[(&str, &str, &str)] = &[
    (
        "rocflow-run",
        "Trace an application's kernels with a shipped template:",
        "rocflow run kernel-trace -- ./app --its-args",
    ),
    (
        "rocflow-run",
        "Collect counters as rocprofv3 would, with its statistics:",
        "rocflow run --pmc SQ_WAVES GRBM_COUNT --stats -- ./app",
    ),
    (
        "rocflow-run",
        "Try a pipeline on the simulated MI300X, no GPU needed:",
        "rocflow run csv --device sim -- /bin/sleep 1",
    ),
    (
        "rocflow-campaign",
        "Analyse a job's ranks (one run folder each) on 16 local Dask workers:",
        "rocflow campaign 'job/rank-*' -o job-campaign --workers 16",
    ),
    (
        "rocflow-validate",
        "Check every pipeline of a team library in CI:",
        "rocflow validate pipelines/*.toml",
    ),
    (
        "rocflow-explain",
        "See the SDK contexts, counters and sinks a pipeline becomes:",
        "rocflow explain kernel-trace",
    ),
    (
        "rocflow-init",
        "Start a pipeline of your own from a template:",
        "rocflow init kernel-trace -o mine.toml",
    ),
    (
        "rocflow-templates",
        "List the templates, shipped and on ROCFLOW_PIPELINE_PATH:",
        "rocflow templates list",
    ),
    (
        "rocflow-replay",
        "Write a run's outputs again with another pipeline:",
        "rocflow replay rocflow-out/last.rfraw perfetto",
    ),
    (
        "rocflow-summary",
        "Statistics of the last run:",
        "rocflow summary rocflow-out",
    ),
    (
        "rocflow-diff",
        "Fail CI when a kernel got 10% slower:",
        "rocflow diff base.rfraw new.rfraw --fail-if 'kernel.duration > 10%'",
    ),
    (
        "rocflow-analyze",
        "What to fix first in the last run: findings, most time at stake first:",
        "rocflow analyze rocflow-out",
    ),
    (
        "rocflow-analyze",
        "Fail CI on any warning, or on synchronous copies:",
        "rocflow analyze run.db --fail-if 'severity >= warning || rule == \"sync-copy\"'",
    ),
    (
        "rocflow-agents",
        "List the GPUs and their counters:",
        "rocflow agents --counters",
    ),
    (
        "rocflow-counters",
        "Find the counters about waves on gfx942:",
        "rocflow counters list --arch gfx942 --grep wave",
    ),
    (
        "rocflow-doctor",
        "Check the machine before profiling on it:",
        "rocflow doctor",
    ),
    (
        "rocflow-doctor",
        "The same, for a script (exit 1 when a check failed):",
        "rocflow doctor --format json",
    ),
    (
        "rocflow-completions",
        "Install bash completions for your user:",
        "rocflow completions bash > ~/.local/share/bash-completion/completions/rocflow",
    ),
    (
        "rocflow-man",
        "Read the page of one command:",
        "rocflow man run | man -l -",
    ),
];

/// The files: a path and what it is.
const FILES: &[(&str, &str)] = &[
    (
        "rocflow-out/",
        "Where a run's outputs go unless its pipeline says otherwise: the raw spool run-<timestamp>-<pid>.rfraw, and last.rfraw, a link to the newest.",
    ),
    (
        "librocflow_tool.so, librocflow_sim.so",
        "The tool library loaded into applications and the simulated rocprofiler-sdk, beside the rocflow binary (or in its deps/).",
    ),
    (
        "/opt/rocm/lib/librocprofiler-sdk.so",
        "The rocprofiler-sdk a run loads on a GPU, unless the environment names another (see ENVIRONMENT).",
    ),
    (
        "/opt/rocm/share/rocprofiler-sdk/counter_defs.yaml",
        "The counter definitions, unless ROCPROFILER_METRICS_PATH or ROCM_PATH names others.",
    ),
    (
        "$XDG_DATA_HOME/rocflow/venv/",
        "The Python environment rocflow campaign runs in, unless ROCFLOW_PYTHON names another (~/.local/share/rocflow/ without XDG_DATA_HOME).",
    ),
    (
        "$XDG_DATA_HOME/rocflow/pipeline.schema.json",
        "The pipeline schema for editors (~/.local/share/rocflow/ without XDG_DATA_HOME).",
    ),
    (
        "/dev/kfd, /sys/class/kfd/kfd/topology/nodes/*/properties",
        "The GPU driver's device and topology, which rocflow doctor checks.",
    ),
    (
        "/sys/class/drm/card*/device/power_dpm_force_performance_level",
        "A GPU's performance level, which rocflow doctor checks.",
    ),
    (
        "/proc/sys/kernel/yama/ptrace_scope",
        "Whether a running process can be attached to, which rocflow doctor checks.",
    ),
];

/// The environment variables rocflow reads: a name and what it does.
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "ROCFLOW_PIPELINE_PATH",
        "Directories of team templates (separated by colons), searched before the shipped library.",
    ),
    (
        "ROCFLOW_PLUGIN_PATH",
        "Directories of plugins (separated by colons), searched before the binary's own directory.",
    ),
    (
        "ROCFLOW_OTF2_LIBRARY",
        "The libotf2 the otf2 sink loads, instead of the system's.",
    ),
    (
        "ROCPROFILER_REGISTER_LIBRARY",
        "The rocprofiler-sdk library to profile with; rocflow sets it in the application's environment to the one it found.",
    ),
    (
        "ROCM_PATH",
        "A ROCm installation: its lib/ has rocprofiler-sdk and AMD-SMI, its share/rocprofiler-sdk/ the counter definitions.",
    ),
    (
        "LD_LIBRARY_PATH",
        "Searched for rocprofiler-sdk and AMD-SMI after ROCM_PATH.",
    ),
    (
        "ROCFLOW_AMD_SMI_LIBRARY",
        "The AMD-SMI library (libamd_smi.so) device metrics are read with, instead of the one found in ROCM_PATH, LD_LIBRARY_PATH or /opt/rocm; --device sim sets it to the simulated device's.",
    ),
    (
        "VIRTUAL_ENV, CONDA_PREFIX",
        "The active Python environment, searched for ROCm's Python wheels (_rocm_sdk_core).",
    ),
    (
        "ROCPROFILER_METRICS_PATH",
        "The directory of the counter definitions (counter_defs.yaml) to use.",
    ),
    (
        "ROCPROFILER_PC_SAMPLING_BETA_ENABLED",
        "rocflow sets it to ON for a pipeline that samples PCs, unless it is set already (OFF keeps PC sampling off).",
    ),
    (
        "ROCPROFILER_SPM_BETA_ENABLED",
        "rocflow sets it to ON for a pipeline that streams SPM, unless it is set already (OFF keeps SPM off).",
    ),
    (
        "ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES",
        "The GPUs the application sees; rocflow doctor says which those are.",
    ),
    (
        "SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, …",
        "The process's MPI rank and world size, from the variables MPI launchers set (PBS, Slurm, PMI, PMIx, MVAPICH2, Open MPI, MPICH), for {rank} in output paths and --profile-mpi-ranks.",
    ),
    (
        "ROCPROF_MPI_RANK_VAR, ROCPROF_MPI_SIZE_VAR",
        "The variables that hold the rank and the world size instead, as rocprofv3 reads them.",
    ),
    (
        "SLURM_JOB_ID",
        "The job, for %job% in rocprofv3's output paths.",
    ),
    (
        "XDG_DATA_HOME, HOME",
        "Where the pipeline schema for editors and the campaigns' Python environment are installed.",
    ),
    (
        "ROCFLOW_PYTHON",
        "The Python that rocflow campaign runs (one with rocflow's package), instead of the one in ~/.local/share/rocflow/venv.",
    ),
];

/// The roff of the EXAMPLES, FILES and ENVIRONMENT sections of the page `page` (`rocflow`,
/// `rocflow-run`): its own examples (rocflow's page has them all).
pub(super) fn sections(page: &str) -> String {
    let mut roff = String::from(".SH EXAMPLES\n");
    let examples = EXAMPLES
        .iter()
        .filter(|(of, ..)| page == "rocflow" || of == &page || page.starts_with(&format!("{of}-")));
    let mut any = false;
    for (_, what, command) in examples {
        any = true;
        roff.push_str(&format!(
            ".PP\n{}\n.RS 4\n.nf\n{}\n.fi\n.RE\n",
            text(what),
            text(command)
        ));
    }
    if !any {
        roff.push_str(".PP\nSee\n.BR rocflow (1)\nfor examples of every command.\n");
    }
    roff.push_str(".SH FILES\n");
    for (path, what) in FILES {
        roff.push_str(&format!(".TP\n.I {}\n{}\n", text(path), text(what)));
    }
    roff.push_str(".SH ENVIRONMENT\n");
    for (name, what) in ENVIRONMENT {
        roff.push_str(&format!(".TP\n.B {}\n{}\n", text(name), text(what)));
    }
    roff
}

/// `text` as roff prints it: backslashes and hyphens escaped, and a line never starting
/// with a control character.
fn text(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    match escaped.starts_with(['.', '\'']) {
        true => format!("\\&{escaped}"),
        false => escaped,
    }
}
