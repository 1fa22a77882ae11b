//! rocprofv3's command lines run unchanged on `rocflow run`: each line of the table is the
//! option part of a command line from AMD's rocprofv3 tests (`tests/rocprofv3/*/
//! CMakeLists.txt` of rocprofiler-sdk in ROCm/rocm-systems at 1b1610fc) or its user
//! documentation (`source/docs/how-to/`), run on the simulated device, with the files
//! rocprofv3 writes for it (the names its tests' `validate.py` check, and those its writer
//! gives: `<dir>/<name>_<table>.csv`, `<dir>/<name>_results.<ext>`, `pmc_N/` and `pass_N/`
//! for the runs of an input file). A line's input files hold the options of AMD's input
//! file of that test, rewritten here; counters and kernel regexes name what the simulated
//! GPU has. Exactly those files appear: none missing, none more (the raw spool aside).

use std::collections::BTreeSet;
use std::path::Path;

use support::{assert_success, hostname, rocflow_command, text};

/// One command line and what it writes.
struct Line {
    /// Where it comes from, under AMD's tree.
    source: &'static str,
    args: &'static [&'static str],
    /// Input files it names, written first.
    inputs: &'static [(&'static str, &'static str)],
    env: &'static [(&'static str, &'static str)],
    /// The files it writes, relative to the directory it runs in: `{host}` is this
    /// machine's name, `{pid}` the application's pid.
    files: &'static [&'static str],
}

const APP: &[&str] = &["/bin/sleep", "0.1"];

/// The files each CSV trace of a system trace of the simulated device makes.
const TRANSPOSE: &[&str] = &[
    "sleep_0.1-trace/cmdl-input/out_agent_info.csv",
    "sleep_0.1-trace/cmdl-input/out_hsa_api_trace.csv",
    "sleep_0.1-trace/cmdl-input/out_kernel_trace.csv",
    "sleep_0.1-trace/cmdl-input/out_marker_api_trace.csv",
    "sleep_0.1-trace/cmdl-input/out_memory_copy_trace.csv",
    "sleep_0.1-trace/cmdl-input/out_results.db",
    "sleep_0.1-trace/cmdl-input/out_results.json",
    "sleep_0.1-trace/cmdl-input/out_results.pftrace",
];

const LINES: &[Line] = &[
    Line {
        source: "tests/rocprofv3/tracing",
        args: &[
            "-M",
            "--hsa-trace",
            "--kernel-trace",
            "--memory-copy-trace",
            "--marker-trace",
            "-d",
            "%argt%-trace",
            "-o",
            "cmdl-input/out",
            "--output-format",
            "pftrace",
            "csv",
            "json",
            "rocpd",
            "--log-level",
            "info",
        ],
        inputs: &[],
        env: &[],
        files: TRANSPOSE,
    },
    Line {
        source: "tests/rocprofv3/tracing (input_trace.json)",
        args: &[
            "-i",
            "input_trace.json",
            "-d",
            "%argt%-trace",
            "--log-level",
            "info",
        ],
        inputs: &[(
            "input_trace.json",
            r#"{"jobs": [{"hsa_trace": true, "kernel_trace": true, "memory_copy_trace": true,
               "marker_trace": true, "output_file": "cmdl-input/out",
               "output_format": ["csv", "json", "pftrace", "rocpd"]}]}"#,
        )],
        env: &[],
        files: TRANSPOSE,
    },
    Line {
        source: "tests/rocprofv3/tracing (sys-trace)",
        args: &[
            "--sys-trace",
            "-d",
            "sys",
            "-o",
            "out",
            "--output-format",
            "pftrace",
            "csv",
            "json",
            "rocpd",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "sys/out_agent_info.csv",
            "sys/out_hip_api_trace.csv",
            "sys/out_hsa_api_trace.csv",
            "sys/out_kernel_trace.csv",
            "sys/out_marker_api_trace.csv",
            "sys/out_memory_allocation_trace.csv",
            "sys/out_memory_copy_trace.csv",
            "sys/out_results.db",
            "sys/out_results.json",
            "sys/out_results.pftrace",
        ],
    },
    Line {
        source: "tests/rocprofv3/hsa-queue-dependency",
        args: &[
            "--hsa-trace",
            "--kernel-trace",
            "-d",
            "%argt%-trace",
            "-o",
            "out",
            "--output-format",
            "json",
            "csv",
            "pftrace",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "sleep_0.1-trace/out_agent_info.csv",
            "sleep_0.1-trace/out_hsa_api_trace.csv",
            "sleep_0.1-trace/out_kernel_trace.csv",
            "sleep_0.1-trace/out_results.json",
            "sleep_0.1-trace/out_results.pftrace",
        ],
    },
    Line {
        source: "tests/rocprofv3/hip-stream-display",
        args: &[
            "--kernel-rename",
            "-s",
            "-d",
            "%tag%-trace",
            "-o",
            "out",
            "--output-format",
            "json",
            "pftrace",
            "--log-level",
            "env",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "sleep-trace/out_results.json",
            "sleep-trace/out_results.pftrace",
        ],
    },
    Line {
        source: "tests/rocprofv3/kernel-rename",
        args: &[
            "-M",
            "--sys-trace",
            "no",
            "--hsa-trace=0",
            "--hsa-core-trace=1",
            "--hip-compiler-trace",
            "False",
            "--hip-runtime-trace",
            "--kernel-trace",
            "--memory-copy-trace",
            "-d",
            "%argt%-trace-cmd-line",
            "-o",
            "out",
            "--output-format",
            "pftrace",
            "json",
            "otf2",
            "--log-level",
            "env",
            "--kernel-rename",
            "--perfetto-shmem-size-hint",
            "128",
            "--perfetto-buffer-size",
            "2048000",
            "--perfetto-buffer-fill-policy",
            "ring_buffer",
            "--perfetto-backend",
            "inprocess",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "sleep_0.1-trace-cmd-line/out_results.json",
            "sleep_0.1-trace-cmd-line/out_results.otf2",
            "sleep_0.1-trace-cmd-line/out_results.pftrace",
        ],
    },
    Line {
        source: "tests/rocprofv3/kernel-rename (input-kernel-rename.yml)",
        args: &["-i", "input-kernel-rename.yml"],
        inputs: &[(
            "input-kernel-rename.yml",
            "jobs:\n  - mangled_kernels: True\n    sys_trace: False\n    hsa_trace: False\n    \
             hsa_core_trace: True\n    hsa_amd_trace: False\n    hip_compiler_trace: False\n    \
             hip_runtime_trace: True\n    kernel_trace: True\n    memory_copy_trace: True\n    \
             marker_trace: False\n    output_directory: \"%argt%-trace-inp-yaml\"\n    \
             output_file: out\n    output_format: [pftrace, json, otf2]\n    log_level: env\n    \
             kernel_rename: True\n    perfetto_shmem_size_hint: 128\n    \
             perfetto_buffer_size: 2048000\n    perfetto_buffer_fill_policy: ring_buffer\n    \
             perfetto_backend: inprocess\n",
        )],
        env: &[],
        files: &[
            "sleep_0.1-trace-inp-yaml/out_results.json",
            "sleep_0.1-trace-inp-yaml/out_results.otf2",
            "sleep_0.1-trace-inp-yaml/out_results.pftrace",
        ],
    },
    Line {
        source: "tests/rocprofv3/summary",
        args: &[
            "-d",
            "%tag%-trace-cmd-line",
            "-o",
            "out",
            "--output-format",
            "pftrace",
            "json",
            "otf2",
            "--log-level",
            "env",
            "--runtime-trace",
            "--kernel-rename",
            "--summary",
            "--summary-output-file",
            "summary",
            "--summary-per-domain",
            "--summary-groups",
            "KERNEL_DISPATCH|MEMORY_COPY",
            ".*_API",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "sleep-trace-cmd-line/out_results.json",
            "sleep-trace-cmd-line/out_results.otf2",
            "sleep-trace-cmd-line/out_results.pftrace",
            "sleep-trace-cmd-line/out_summary.txt",
        ],
    },
    Line {
        source: "tests/rocprofv3/summary (input-summary.yaml)",
        args: &["-i", "input-summary.yaml"],
        inputs: &[(
            "input-summary.yaml",
            "jobs:\n  - output_directory: \"%env{ARBITRARY_ENV_VARIABLE}%\"\n    \
             output_file: out\n    output_format: [pftrace, json, otf2]\n    log_level: env\n    \
             runtime_trace: True\n    kernel_rename: True\n    summary: True\n    \
             summary_per_domain: True\n    summary_groups: [\"KERNEL_DISPATCH|MEMORY_COPY\"]\n    \
             summary_output_file: \"summary\"\n",
        )],
        env: &[("ARBITRARY_ENV_VARIABLE", "%tag%-trace-inp-yaml")],
        files: &[
            "sleep-trace-inp-yaml/out_results.json",
            "sleep-trace-inp-yaml/out_results.otf2",
            "sleep-trace-inp-yaml/out_results.pftrace",
            "sleep-trace-inp-yaml/out_summary.txt",
        ],
    },
    Line {
        source: "tests/rocprofv3/agent-index (input_type_relative_agent_index.yaml)",
        args: &[
            "-i",
            "input.yaml",
            "-d",
            "%argt%-agent-index",
            "--log-level",
            "info",
        ],
        inputs: &[(
            "input.yaml",
            "jobs:\n  - output_file: \"out\"\n    output_format: [csv]\n    sys_trace: True\n    \
             agent_index: type-relative\n",
        )],
        env: &[],
        files: &[
            "sleep_0.1-agent-index/out_agent_info.csv",
            "sleep_0.1-agent-index/out_hip_api_trace.csv",
            "sleep_0.1-agent-index/out_hsa_api_trace.csv",
            "sleep_0.1-agent-index/out_kernel_trace.csv",
            "sleep_0.1-agent-index/out_marker_api_trace.csv",
            "sleep_0.1-agent-index/out_memory_allocation_trace.csv",
            "sleep_0.1-agent-index/out_memory_copy_trace.csv",
        ],
    },
    Line {
        source: "tests/rocprofv3/collection-period",
        args: &[
            "--runtime-trace",
            "--summary",
            "-d",
            "collection-period",
            "-o",
            "out",
            "--output-format",
            "json",
            "pftrace",
            "otf2",
            "--log-level",
            "warning",
            "--collection-period",
            "0:1:1",
            "--collection-period-unit",
            "sec",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "collection-period/out_results.json",
            "collection-period/out_results.otf2",
            "collection-period/out_results.pftrace",
        ],
    },
    Line {
        source: "tests/rocprofv3/conversion-script (input.txt)",
        args: &[
            "-i",
            "input.txt",
            "-T",
            "-d",
            "out_conversion_script",
            "-o",
            "pmc1",
            "--output-format",
            "csv",
        ],
        inputs: &[(
            "input.txt",
            "# two passes\npmc: SQ_WAVES\npmc: SQ_INSTS_VALU\n",
        )],
        env: &[],
        files: &[
            "out_conversion_script/pmc_1/pmc1_agent_info.csv",
            "out_conversion_script/pmc_1/pmc1_counter_collection.csv",
            "out_conversion_script/pmc_2/pmc1_agent_info.csv",
            "out_conversion_script/pmc_2/pmc1_counter_collection.csv",
        ],
    },
    Line {
        source: "tests/rocprofv3/counter-collection/input1",
        args: &[
            "-i",
            "input.txt",
            "-T",
            "-d",
            "cc1",
            "-o",
            "pmc1",
            "--output-format",
            "csv",
            "json",
        ],
        inputs: &[("input.txt", "pmc: SQ_WAVES\n")],
        env: &[],
        files: &[
            "cc1/pmc_1/pmc1_agent_info.csv",
            "cc1/pmc_1/pmc1_counter_collection.csv",
            "cc1/pmc_1/pmc1_results.json",
        ],
    },
    Line {
        source: "tests/rocprofv3/counter-collection/input2",
        args: &[
            "-i",
            "input.txt",
            "--output-format",
            "CSV",
            "JSON",
            "-d",
            "%argt%-cc",
            "-o",
            "out",
        ],
        inputs: &[("input.txt", "pmc: SQ_WAVES\npmc: SQ_INSTS_SALU\n")],
        env: &[],
        files: &[
            "sleep_0.1-cc/pmc_1/out_agent_info.csv",
            "sleep_0.1-cc/pmc_1/out_counter_collection.csv",
            "sleep_0.1-cc/pmc_1/out_results.json",
            "sleep_0.1-cc/pmc_2/out_agent_info.csv",
            "sleep_0.1-cc/pmc_2/out_counter_collection.csv",
            "sleep_0.1-cc/pmc_2/out_results.json",
        ],
    },
    Line {
        source: "tests/rocprofv3/counter-collection/input3 (input.json)",
        args: &[
            "-i",
            "input.json",
            "-d",
            "%argt%-cc",
            "-o",
            "out_json",
            "-f",
            "csv",
        ],
        inputs: &[(
            "input.json",
            r#"{"jobs": [{"pmc": ["SQ_WAVES", "SQ_INSTS_SALU"]}, {"pmc": ["GRBM_GUI_ACTIVE"]}]}"#,
        )],
        env: &[],
        files: &[
            "sleep_0.1-cc/pass_1/out_json_agent_info.csv",
            "sleep_0.1-cc/pass_1/out_json_counter_collection.csv",
            "sleep_0.1-cc/pass_2/out_json_agent_info.csv",
            "sleep_0.1-cc/pass_2/out_json_counter_collection.csv",
        ],
    },
    Line {
        source: "tests/rocprofv3/counter-collection/input3 (input.yml)",
        args: &[
            "-i",
            "input.yml",
            "-d",
            "%argt%-cc",
            "-o",
            "out_yaml",
            "-f",
            "csv",
        ],
        inputs: &[(
            "input.yml",
            "jobs:\n  - pmc: [SQ_WAVES, SQ_INSTS_SALU]\n  - pmc: [GRBM_GUI_ACTIVE]\n",
        )],
        env: &[],
        files: &[
            "sleep_0.1-cc/pass_1/out_yaml_agent_info.csv",
            "sleep_0.1-cc/pass_1/out_yaml_counter_collection.csv",
            "sleep_0.1-cc/pass_2/out_yaml_agent_info.csv",
            "sleep_0.1-cc/pass_2/out_yaml_counter_collection.csv",
        ],
    },
    Line {
        source: "tests/rocprofv3/counter-collection/kernel_filtering (input.json)",
        args: &["-i", "input.json", "-d", "json_input"],
        inputs: &[(
            "input.json",
            r#"{"jobs": [
                {"pmc": ["SQ_WAVES"], "kernel_include_regex": "smooth|reduce", "kernel_exclude_regex": "reduce",
                 "kernel_iteration_range": "[1-2]", "output_file": "out", "output_format": ["csv", "json"], "truncate_kernels": true},
                {"pmc": ["SQ_WAVES"], "kernel_include_regex": ".*", "kernel_iteration_range": "[2-3]",
                 "output_file": "out", "output_format": ["csv", "json"], "truncate_kernels": true}
            ]}"#,
        )],
        env: &[],
        files: &[
            "json_input/pass_1/out_agent_info.csv",
            "json_input/pass_1/out_counter_collection.csv",
            "json_input/pass_1/out_results.json",
            "json_input/pass_2/out_agent_info.csv",
            "json_input/pass_2/out_counter_collection.csv",
            "json_input/pass_2/out_results.json",
        ],
    },
    Line {
        source: "tests/rocprofv3/counter-collection/kernel_filtering (input.txt)",
        args: &[
            "-i",
            "input.txt",
            "--kernel-include-regex",
            ".*",
            "--kernel-exclude-regex",
            "multiply",
            "-T",
            "-d",
            "cmd_input",
            "-o",
            "out",
            "--output-format",
            "csv",
        ],
        inputs: &[("input.txt", "pmc: SQ_WAVES\n")],
        env: &[],
        files: &[
            "cmd_input/pmc_1/out_agent_info.csv",
            "cmd_input/pmc_1/out_counter_collection.csv",
        ],
    },
    Line {
        source: "tests/rocprofv3/counter-collection/multiplex (input.json)",
        args: &[
            "-i",
            "input.json",
            "-d",
            "%argt%-cc",
            "-o",
            "out_json",
            "-f",
            "csv",
        ],
        inputs: &[(
            "input.json",
            r#"{"jobs": [{"pmc_groups": [["SQ_WAVES", "SQ_INSTS_SALU"], ["GRBM_GUI_ACTIVE"]], "pmc_group_interval": 1}]}"#,
        )],
        env: &[],
        files: &[
            "sleep_0.1-cc/out_json_agent_info.csv",
            "sleep_0.1-cc/out_json_counter_collection.csv",
        ],
    },
    Line {
        source: "tests/rocprofv3/counter-collection/range_filtering",
        args: &["-i", "input_range.json", "-d", "range_filter"],
        inputs: &[(
            "input_range.json",
            r#"{"jobs": [
                {"pmc": ["SQ_WAVES"], "output_file": "out", "truncate_kernels": true, "kernel_trace": true,
                 "output_format": ["json"], "kernel_iteration_range": "[1, 3, 5, [8-12]]", "kernel_include_regex": "smooth"},
                {"pmc": ["SQ_WAVES"], "output_file": "out", "truncate_kernels": true, "kernel_trace": true,
                 "output_format": ["json"], "kernel_iteration_range": "[11-14], [4-5]"},
                {"pmc": ["SQ_WAVES"], "output_file": "out", "truncate_kernels": true, "kernel_trace": true,
                 "output_format": ["json"], "kernel_iteration_range": "[[3-6], 1, 13]"}
            ]}"#,
        )],
        env: &[],
        files: &[
            "range_filter/pass_1/out_results.json",
            "range_filter/pass_2/out_results.json",
            "range_filter/pass_3/out_results.json",
        ],
    },
    Line {
        source: "tests/rocprofv3/memory-allocation",
        args: &[
            "--memory-allocation-trace",
            "-d",
            "%tag%-trace",
            "-o",
            "out",
            "--output-format",
            "json",
            "otf2",
            "csv",
            "--log-level",
            "env",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "sleep-trace/out_agent_info.csv",
            "sleep-trace/out_memory_allocation_trace.csv",
            "sleep-trace/out_results.json",
            "sleep-trace/out_results.otf2",
        ],
    },
    Line {
        source: "tests/rocprofv3/pc-sampling/host-trap/exec-mask-manipulation",
        args: &[
            "--pc-sampling-beta-enabled",
            "1",
            "--pc-sampling-unit",
            "time",
            "--pc-sampling-method",
            "host_trap",
            "--pc-sampling-interval",
            "1",
            "-d",
            "pc_sampling_cmd_input",
            "-o",
            "out",
            "--output-format",
            "csv",
            "json",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "pc_sampling_cmd_input/out_agent_info.csv",
            "pc_sampling_cmd_input/out_pc_sampling_host_trap.csv",
            "pc_sampling_cmd_input/out_results.json",
        ],
    },
    Line {
        source: "tests/rocprofv3/pc-sampling/host-trap/transpose-multiple-agents",
        args: &[
            "--kernel-trace",
            "--pc-sampling-unit",
            "time",
            "--pc-sampling-method",
            "host_trap",
            "--pc-sampling-interval",
            "1",
            "--agent-index",
            "absolute",
            "-d",
            "pc_sampling_cmd_input",
            "-o",
            "out",
            "--output-format",
            "csv",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "pc_sampling_cmd_input/out_agent_info.csv",
            "pc_sampling_cmd_input/out_kernel_trace.csv",
            "pc_sampling_cmd_input/out_pc_sampling_host_trap.csv",
        ],
    },
    Line {
        source: "tests/rocprofv3/pc-sampling/host-trap (input.yml, agent-index: relative)",
        args: &[
            "-i",
            "input.yml",
            "-d",
            "pc_sampling_yaml_input",
            "-o",
            "out",
            "--output-format",
            "csv",
        ],
        inputs: &[(
            "input.yml",
            "jobs:\n  - kernel_trace: true\n    pc_sampling_unit: time\n    \
             pc_sampling_method: host_trap\n    pc_sampling_interval: 1\n    \
             agent-index: relative\n",
        )],
        env: &[],
        files: &[
            "pc_sampling_yaml_input/out_agent_info.csv",
            "pc_sampling_yaml_input/out_kernel_trace.csv",
            "pc_sampling_yaml_input/out_pc_sampling_host_trap.csv",
        ],
    },
    Line {
        source: "tests/rocprofv3/python-bindings",
        args: &[
            "--marker-trace",
            "--summary",
            "-u",
            "sec",
            "-d",
            "marker-python-bindings",
            "-o",
            "out",
            "--output-format",
            "csv",
            "json",
            "pftrace",
            "--log-level",
            "info",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "marker-python-bindings/out_agent_info.csv",
            "marker-python-bindings/out_marker_api_trace.csv",
            "marker-python-bindings/out_results.json",
            "marker-python-bindings/out_results.pftrace",
        ],
    },
    Line {
        source: "tests/rocprofv3/tracing-hip-in-libraries",
        args: &[
            "--hip-runtime-trace",
            "--hsa-core-trace",
            "--hsa-amd-trace",
            "--marker-trace",
            "--kernel-trace",
            "--memory-copy-trace",
            "--stats",
            "--output-format",
            "csv",
            "-d",
            "%argt%-trace",
            "-o",
            "out",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "sleep_0.1-trace/out_agent_info.csv",
            "sleep_0.1-trace/out_domain_stats.csv",
            "sleep_0.1-trace/out_hip_api_stats.csv",
            "sleep_0.1-trace/out_hip_api_trace.csv",
            "sleep_0.1-trace/out_hsa_api_stats.csv",
            "sleep_0.1-trace/out_hsa_api_trace.csv",
            "sleep_0.1-trace/out_kernel_stats.csv",
            "sleep_0.1-trace/out_kernel_trace.csv",
            "sleep_0.1-trace/out_marker_api_stats.csv",
            "sleep_0.1-trace/out_marker_api_trace.csv",
            "sleep_0.1-trace/out_memory_copy_stats.csv",
            "sleep_0.1-trace/out_memory_copy_trace.csv",
        ],
    },
    Line {
        source: "tests/rocprofv3/tracing-plus-counter-collection (input.txt)",
        args: &[
            "--hsa-trace",
            "--kernel-trace",
            "-i",
            "input.txt",
            "-d",
            "out_counter_collection_trace",
            "-o",
            "pmc",
            "--output-format",
            "JSON",
            "PFTRACE",
            "CSV",
        ],
        inputs: &[(
            "input.txt",
            "pmc: SQ_INSTS_SALU\npmc: SQ_WAVES   SQ_INSTS_VALU # two\n",
        )],
        env: &[],
        files: &[
            "out_counter_collection_trace/pmc_1/pmc_agent_info.csv",
            "out_counter_collection_trace/pmc_1/pmc_counter_collection.csv",
            "out_counter_collection_trace/pmc_1/pmc_hsa_api_trace.csv",
            "out_counter_collection_trace/pmc_1/pmc_kernel_trace.csv",
            "out_counter_collection_trace/pmc_1/pmc_results.json",
            "out_counter_collection_trace/pmc_1/pmc_results.pftrace",
            "out_counter_collection_trace/pmc_2/pmc_agent_info.csv",
            "out_counter_collection_trace/pmc_2/pmc_counter_collection.csv",
            "out_counter_collection_trace/pmc_2/pmc_hsa_api_trace.csv",
            "out_counter_collection_trace/pmc_2/pmc_kernel_trace.csv",
            "out_counter_collection_trace/pmc_2/pmc_results.json",
            "out_counter_collection_trace/pmc_2/pmc_results.pftrace",
        ],
    },
    Line {
        source: "tests/rocprofv3/tracing-plus-counter-collection (single)",
        args: &[
            "--sys-trace",
            "--kernel-rename",
            "--pmc",
            "SQ_INSTS_SALU",
            "-d",
            "cc_trace",
            "-o",
            "cmdl/single",
            "--output-format",
            "JSON",
            "PFTRACE",
            "CSV",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "cc_trace/cmdl/single_agent_info.csv",
            "cc_trace/cmdl/single_counter_collection.csv",
            "cc_trace/cmdl/single_hip_api_trace.csv",
            "cc_trace/cmdl/single_hsa_api_trace.csv",
            "cc_trace/cmdl/single_kernel_trace.csv",
            "cc_trace/cmdl/single_marker_api_trace.csv",
            "cc_trace/cmdl/single_memory_allocation_trace.csv",
            "cc_trace/cmdl/single_memory_copy_trace.csv",
            "cc_trace/cmdl/single_results.json",
            "cc_trace/cmdl/single_results.pftrace",
        ],
    },
    Line {
        source: "docs/how-to/using-rocprofv3.rst (--hip-trace, csv)",
        args: &["--hip-trace", "--output-format", "csv"],
        inputs: &[],
        env: &[],
        files: &[
            "{host}/{pid}_agent_info.csv",
            "{host}/{pid}_hip_api_trace.csv",
        ],
    },
    Line {
        source: "docs/how-to/using-rocprofv3.rst (--stats)",
        args: &["--stats", "--hip-trace", "--output-format", "csv"],
        inputs: &[],
        env: &[],
        files: &[
            "{host}/{pid}_agent_info.csv",
            "{host}/{pid}_domain_stats.csv",
            "{host}/{pid}_hip_api_stats.csv",
            "{host}/{pid}_hip_api_trace.csv",
        ],
    },
    Line {
        source: "docs/how-to/using-rocprofv3.rst (-S, rocpd by default)",
        args: &["-S", "--hip-trace"],
        inputs: &[],
        env: &[],
        files: &["{host}/{pid}_results.db"],
    },
    Line {
        source: "docs/how-to/using-rocprofv3.rst (-S -D --summary-output-file)",
        args: &[
            "-S",
            "-D",
            "--summary-output-file",
            "filename",
            "--sys-trace",
        ],
        inputs: &[],
        env: &[],
        files: &["{host}/{pid}_filename.txt", "{host}/{pid}_results.db"],
    },
    Line {
        source: "docs/how-to/using-rocprofv3.rst (--sys-trace --hsa-trace=False)",
        args: &[
            "--sys-trace",
            "--hsa-trace=False",
            "--scratch-memory-trace=False",
            "-f",
            "csv",
            "-o",
            "out",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "out_agent_info.csv",
            "out_hip_api_trace.csv",
            "out_kernel_trace.csv",
            "out_marker_api_trace.csv",
            "out_memory_allocation_trace.csv",
            "out_memory_copy_trace.csv",
        ],
    },
    Line {
        source: "docs/how-to/using-rocprofv3.rst (--output-directory)",
        args: &[
            "--hip-trace",
            "--output-directory",
            "output_dir",
            "--output-format",
            "csv",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "output_dir/{host}/{pid}_agent_info.csv",
            "output_dir/{host}/{pid}_hip_api_trace.csv",
        ],
    },
    Line {
        source: "docs/how-to/using-rocprofv3.rst (--output-file)",
        args: &[
            "--hip-trace",
            "--output-file",
            "output",
            "--output-format",
            "csv",
        ],
        inputs: &[],
        env: &[],
        files: &["output_agent_info.csv", "output_hip_api_trace.csv"],
    },
    Line {
        source: "docs/how-to/using-rocprofv3-with-mpi.rst (%h.%p.%env{…}%)",
        args: &[
            "--hip-trace",
            "-d",
            "%h.%p.%env{OMPI_COMM_WORLD_RANK}%",
            "--output-format",
            "csv",
        ],
        inputs: &[],
        env: &[("OMPI_COMM_WORLD_RANK", "1")],
        files: &[
            "{host}.{pid}.1/{host}/{pid}_agent_info.csv",
            "{host}.{pid}.1/{host}/{pid}_hip_api_trace.csv",
        ],
    },
    Line {
        source: "docs/how-to/using-rocprofv3.rst (--agent-index)",
        args: &[
            "--kernel-trace",
            "--agent-index=type-relative",
            "--output-format",
            "csv",
            "-o",
            "k",
        ],
        inputs: &[],
        env: &[],
        files: &["k_agent_info.csv", "k_kernel_trace.csv"],
    },
    Line {
        source: "docs/how-to/using-rocprofv3.rst (-s --group-by-queue, pftrace)",
        args: &[
            "-s",
            "--group-by-queue",
            "--output-format",
            "pftrace",
            "-o",
            "q",
        ],
        inputs: &[],
        env: &[],
        files: &["q_results.pftrace"],
    },
    Line {
        source: "docs/how-to/using-rocprofv3.rst (--pmc, csv)",
        args: &[
            "--pmc",
            "SQ_WAVES",
            "SQ_INSTS_SALU",
            "GRBM_GUI_ACTIVE",
            "--output-format",
            "csv",
            "-o",
            "c",
        ],
        inputs: &[],
        env: &[],
        files: &["c_agent_info.csv", "c_counter_collection.csv"],
    },
    Line {
        source: "docs/how-to/using-rocprofv3.rst (--truncate-kernels)",
        args: &[
            "--truncate-kernels",
            "--kernel-trace",
            "--output-format",
            "csv",
            "-o",
            "t",
        ],
        inputs: &[],
        env: &[],
        files: &["t_agent_info.csv", "t_kernel_trace.csv"],
    },
    Line {
        source: "docs/how-to/using-rocprofv3.rst (--hip-trace, rocpd)",
        args: &["--hip-trace", "--output-format", "rocpd", "-d", "db"],
        inputs: &[],
        env: &[],
        files: &["db/{host}/{pid}_results.db"],
    },
    Line {
        source: "docs/how-to/using-rocprofv3.rst (--preload, --disable-signal-handlers)",
        args: &[
            "--preload",
            "libm.so.6",
            "--disable-signal-handlers",
            "--kernel-trace",
            "--pmc",
            "SQ_WAVES",
            "-o",
            "p",
            "-f",
            "csv",
        ],
        inputs: &[],
        env: &[],
        files: &[
            "p_agent_info.csv",
            "p_counter_collection.csv",
            "p_kernel_trace.csv",
        ],
    },
    Line {
        source: "docs/how-to/using-rocprofv3-with-mpi.rst (--profile-mpi-ranks, a rank profiled)",
        args: &[
            "--hip-trace",
            "--profile-mpi-ranks",
            "0-3,8",
            "-o",
            "rank%rank%",
            "-f",
            "csv",
        ],
        inputs: &[],
        env: &[
            ("OMPI_COMM_WORLD_RANK", "8"),
            ("OMPI_COMM_WORLD_SIZE", "16"),
        ],
        files: &["rank8_agent_info.csv", "rank8_hip_api_trace.csv"],
    },
    Line {
        source: "docs/how-to/using-rocprofv3-with-mpi.rst (--profile-mpi-ranks, a rank not)",
        args: &[
            "--hip-trace",
            "--profile-mpi-ranks",
            "0-3",
            "--mpi-world-rank-variable",
            "MY_CUSTOM_RANK",
            "--mpi-world-size-variable",
            "MY_CUSTOM_SIZE",
            "-f",
            "csv",
        ],
        inputs: &[],
        env: &[
            ("MY_CUSTOM_RANK", "5"),
            ("MY_CUSTOM_SIZE", "8"),
            ("SLURM_PROCID", "1"),
        ],
        files: &[],
    },
];

/// The files under `dir` but the inputs and the raw spool, as the table writes them.
fn written(dir: &Path, inputs: &[(&str, &str)]) -> BTreeSet<String> {
    let pid = regex::Regex::new(r"\d{3,}").unwrap();
    let host = hostname();
    let mut files = BTreeSet::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let relative = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            // An OTF2 archive is its anchor file: NAME.otf2 with NAME.def and NAME/.
            let name = path.file_name().unwrap().to_string_lossy();
            let anchor = match (path.is_dir(), name.strip_suffix(".def")) {
                (true, _) => Some(path.with_file_name(format!("{name}.otf2"))),
                (false, Some(stem)) => Some(path.with_file_name(format!("{stem}.otf2"))),
                (false, None) => None,
            };
            let part_of_archive = anchor.is_some_and(|a| a.is_file());
            if part_of_archive {
                continue;
            } else if path.is_dir() {
                stack.push(path);
            } else if !relative.ends_with(".rfraw") && !inputs.iter().any(|(n, _)| *n == relative) {
                let named = relative.replace(&host, "{host}");
                files.insert(pid.replace_all(&named, "{pid}").into_owned());
            }
        }
    }
    files
}

#[test]
fn amds_command_lines_write_the_files_rocprofv3_writes() {
    assert!(LINES.len() >= 40, "{} lines", LINES.len());
    let mut failures = Vec::new();
    for line in LINES {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in line.inputs {
            std::fs::write(dir.path().join(name), content).unwrap();
        }
        let args = [&["run", "--device", "sim"], line.args, &["--"], APP].concat();
        let mut command = rocflow_command(&args, dir.path(), &[]);
        command.envs(line.env.iter().copied());
        let output = command.output().unwrap();
        let stderr = text(&output.stderr);
        if !output.status.success() {
            failures.push(format!("{}: exit {}\n{stderr}", line.source, output.status));
            continue;
        }
        let files = written(dir.path(), line.inputs);
        let expected: BTreeSet<String> = line.files.iter().map(|f| f.to_string()).collect();
        if files != expected {
            let missing: Vec<_> = expected.difference(&files).collect();
            let more: Vec<_> = files.difference(&expected).collect();
            failures.push(format!(
                "{}: missing {missing:?}, not expected {more:?}",
                line.source
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn explain_shows_what_rocprofv3s_options_become() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "explain",
        "--sys-trace",
        "--hsa-trace=no",
        "-o",
        "out",
        "-f",
        "csv",
    ];
    let output = support::rocflow(&args, dir.path(), &[]);
    assert_success(&output);
    let plan = text(&output.stdout);
    for domain in [
        "hip_runtime_api",
        "kernel_dispatch",
        "memory_copy",
        "marker_core_range_api",
    ] {
        assert!(plan.contains(domain), "{domain} traced:\n{plan}");
    }
    assert!(
        !plan.contains("hsa_core_api"),
        "--hsa-trace=no leaves HSA out:\n{plan}"
    );
}

#[test]
fn the_newer_sdks_options_trace_their_domains_and_ompt_categories_narrow() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "explain",
        "--hip-graph-trace",
        "--hip-event-trace",
        "--rocshmem-trace",
        "--hipfile-trace",
        "--ompt-trace",
        "thread",
        "error",
        "-o",
        "out",
    ];
    let output = support::rocflow(&args, dir.path(), &[]);
    assert_success(&output);
    let plan = text(&output.stdout);
    for domain in [
        "hip_graph",
        "hip_event",
        "rocshmem_api",
        "hipfile_api",
        "ompt",
    ] {
        assert!(plan.contains(domain), "{domain} traced:\n{plan}");
    }
    for operation in ["thread_begin", "thread_end", "error"] {
        assert!(plan.contains(operation), "{operation} traced:\n{plan}");
    }
    assert!(
        !plan.contains("parallel_begin"),
        "only two categories:\n{plan}"
    );
    // A category rocprofv3 has not is the command line's error.
    let args = ["explain", "--ompt-trace", "threads", "-o", "out"];
    let output = support::rocflow(&args, dir.path(), &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
}

/// The options of `rocflow run` that are rocflow's own, not rocprofv3's.
const ROCFLOW_OPTIONS: &[&str] = &[
    "--set",
    "--counters",
    "--device",
    "--spool",
    "--spool-compression",
    "--quiet",
    "--threads",
    "--kernel-names",
    "--help",
    "--version",
    "--output-dir",
];

#[test]
fn the_rocprofv3_page_says_what_every_option_becomes() {
    let dir = tempfile::tempdir().unwrap();
    let help = support::rocflow(&["run", "--help"], dir.path(), &[]);
    assert_success(&help);
    let long = regex::Regex::new(r"--[a-z][a-z0-9-]+").unwrap();
    let help = text(&help.stdout);
    let options: BTreeSet<&str> = (long.find_iter(&help))
        .map(|m| m.as_str())
        .filter(|o| !ROCFLOW_OPTIONS.contains(o))
        .collect();
    assert!(options.len() > 60, "{options:?}");
    let page = std::fs::read_to_string(support::repo().join("docs/rocprofv3.md")).unwrap();
    let missing: Vec<&&str> = (options.iter())
        .filter(|o| !page.contains(&format!("`{o}")) && !page.contains(&format!(", {o}")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/rocprofv3.md does not say what these become: {missing:?}"
    );
}

/// AMD's rocprofv3 test inputs (`tests/rocprofv3/**/input*`), their keys and values
/// rewritten here: each imports as it is, and runs on the simulated device with the
/// counters and kernels it names that the simulated GPU lacks replaced by ones it has
/// ([`ON_THE_SIMULATED_GPU`]).
const INPUTS: &[(&str, &str)] = &[
    (
        "aborted-app/input.json",
        r#"{"jobs": [{"kernel_include_regex": "addition", "kernel_exclude_regex": "subtract", "hip_runtime_trace": true, "kernel_trace": true, "output_file": "out", "output_format": ["csv", "json", "pftrace"], "truncate_kernels": true}]}"#,
    ),
    (
        "agent-index/input_absolute_agent_index.yaml",
        "jobs:\n  - output_file: out\n    output_format: [csv, json]\n    sys_trace: True\n    agent_index: absolute\n",
    ),
    (
        "agent-index/input_relative_agent_index.yaml",
        "jobs:\n  - output_file: out\n    output_format: [csv]\n    sys_trace: True\n    agent_index: relative\n",
    ),
    (
        "agent-index/input_type_relative_agent_index.yaml",
        "jobs:\n  - output_file: out\n    output_format: [csv]\n    sys_trace: True\n    agent_index: type-relative\n",
    ),
    (
        "conversion-script/input.txt",
        "# header\npmc: SQ_WAVES\npmc: GRBM_GUI_ACTIVE\n",
    ),
    ("counter-collection/input1/input.txt", "pmc: SQ_WAVES\n"),
    (
        "counter-collection/input2/input.txt",
        "pmc: SQ_WAVES\npmc: GRBM_COUNT\n",
    ),
    (
        "counter-collection/input3/input.json",
        r#"{"jobs": [{"pmc": ["SQ_WAVES", "GRBM_COUNT"]}, {"pmc": ["GRBM_GUI_ACTIVE"]}]}"#,
    ),
    (
        "counter-collection/input3/input.yml",
        "jobs:\n  - pmc: [SQ_WAVES, GRBM_COUNT]\n  - pmc: [GRBM_GUI_ACTIVE]\n",
    ),
    (
        "counter-collection/kernel_filtering/input.json",
        r#"{"jobs": [
        {"pmc": ["SQ_WAVES"], "kernel_include_regex": ".*", "kernel_exclude_regex": "multiply", "kernel_iteration_range": "[1-2]", "output_file": "out", "output_format": ["csv", "json"], "truncate_kernels": true},
        {"pmc": ["SQ_WAVES"], "kernel_include_regex": ".*", "kernel_iteration_range": "[2-3]", "output_file": "out", "output_format": ["csv", "json"], "truncate_kernels": true},
        {"pmc": ["SQ_WAVES"], "kernel_include_regex": ".*", "kernel_exclude_regex": "", "output_file": "out", "output_format": ["csv", "json"], "truncate_kernels": true},
        {"pmc": ["SQ_WAVES"], "kernel_include_regex": "divide", "kernel_exclude_regex": "", "output_file": "out", "output_format": ["csv", "json"], "truncate_kernels": true}]}"#,
    ),
    (
        "counter-collection/kernel_filtering/input.txt",
        "pmc: SQ_WAVES\n",
    ),
    (
        "counter-collection/kernel_filtering/input.yml",
        "jobs:\n  - pmc: [SQ_WAVES]\n    kernel_include_regex: \".*\"\n    kernel_exclude_regex: multiply\n    kernel_iteration_range: [\"[1-2]\", \"[3-4]\", \"[5-6]\"]\n  - pmc: [SQ_WAVES]\n    kernel_include_regex: \".*\"\n    kernel_iteration_range: \"[2-3]\"\n  - pmc: [SQ_WAVES]\n    kernel_include_regex: \".*\"\n    kernel_exclude_regex: \"\"\n  - pmc: [SQ_WAVES]\n    kernel_include_regex: divide\n    kernel_exclude_regex: \"\"\n",
    ),
    (
        "counter-collection/list_metrics/input.json",
        r#"{"jobs": [{"list_avail": true}]}"#,
    ),
    (
        "counter-collection/multiplex/input.json",
        r#"{"jobs": [{"pmc_groups": [["SQ_WAVES", "GRBM_COUNT"], ["GRBM_GUI_ACTIVE"]], "pmc_group_interval": 1}]}"#,
    ),
    (
        "counter-collection/multiplex/input.yml",
        "jobs:\n  - pmc_groups:\n      - [SQ_WAVES, GRBM_COUNT]\n      - [GRBM_GUI_ACTIVE]\n    pmc_group_interval: 1\n",
    ),
    (
        "counter-collection/range_filtering/input_range.json",
        r#"{"jobs": [
        {"pmc": ["SQ_WAVES"], "output_file": "out", "truncate_kernels": true, "kernel_trace": true, "output_format": ["json"], "kernel_iteration_range": "[1, 3, 5, [8-12]]", "kernel_include_regex": "transpose"},
        {"pmc": ["SQ_WAVES"], "output_file": "out", "truncate_kernels": true, "kernel_trace": true, "output_format": ["json"], "kernel_iteration_range": "[11-14], [4-5]"},
        {"pmc": ["SQ_WAVES"], "output_file": "out", "truncate_kernels": true, "kernel_trace": true, "output_format": ["json"], "kernel_iteration_range": "[[3-6], 1, 13]"}]}"#,
    ),
    (
        "counter-collection/extra_counters/input.txt",
        "pmc: TEST_YAML_LOAD\n",
    ),
    (
        "kernel-rename/input-kernel-rename.yml",
        "jobs:\n  - mangled_kernels: True\n    sys_trace: False\n    hsa_trace: False\n    hsa_core_trace: True\n    hsa_amd_trace: False\n    hip_compiler_trace: False\n    hip_runtime_trace: True\n    kernel_trace: True\n    memory_copy_trace: True\n    marker_trace: False\n    output_directory: \"%argt%-trace-inp-yaml\"\n    output_file: out\n    output_format: [pftrace, json, otf2]\n    log_level: env\n    kernel_rename: True\n    perfetto_shmem_size_hint: 128\n    perfetto_buffer_size: 2048000\n    perfetto_buffer_fill_policy: ring_buffer\n    perfetto_backend: inprocess\n",
    ),
    (
        "minimum-bytes/input.json",
        r#"{"jobs": [{"runtime_trace": true, "minimum_output_data": 1000000}]}"#,
    ),
    (
        "negate-aggregate-tracing-options/input-negate-aggregate-tracing-options.yml",
        "jobs:\n  - echo: True\n    runtime_trace: True\n    hip_trace: True\n    hsa_trace: True\n    summary: True\n    log_level: \"info\"\n    output_file: \"out\"\n    marker_trace: False\n    kernel_trace: False\n    memory_copy_trace: False\n    memory_allocation_trace: False\n    scratch_memory_trace: False\n    rccl_trace: False\n    kokkos_trace: False\n    rocdecode_trace: False\n    rocjpeg_trace: False\n    hip_runtime_trace: False\n    hip_compiler_trace: False\n    hsa_core_trace: False\n    hsa_amd_trace: False\n    hsa_image_trace: False\n    hsa_finalizer_trace: False\n    advanced_thread_trace: False\n    kernel_rename: False\n",
    ),
    (
        "pc-sampling/host-trap/exec-mask-manipulation/input.json",
        r#"{"jobs": [{"pc_sampling_unit": "time", "pc_sampling_method": "host_trap", "pc_sampling_interval": 1, "output_file": "out", "output_format": ["csv", "json"]}]}"#,
    ),
    (
        "pc-sampling/host-trap/exec-mask-manipulation/input.yml",
        "jobs:\n  - pc_sampling_unit: time\n    pc_sampling_method: host_trap\n    pc_sampling_interval: 1\n",
    ),
    (
        "pc-sampling/host-trap/transpose-multiple-agents/input.json",
        r#"{"jobs": [{"kernel_trace": true, "pc_sampling_unit": "time", "pc_sampling_method": "host_trap", "pc_sampling_interval": 1, "output_file": "out", "output_format": ["csv"], "agent_index": "type-relative"}]}"#,
    ),
    (
        "pc-sampling/host-trap/transpose-multiple-agents/input.yml",
        "jobs:\n  - kernel_trace: true\n    pc_sampling_unit: time\n    pc_sampling_method: host_trap\n    pc_sampling_interval: 1\n    agent-index: relative\n",
    ),
    (
        "pc-sampling/stochastic/exec-mask-manipulation/input.json",
        r#"{"jobs": [{"pc_sampling_unit": "cycles", "pc_sampling_method": "stochastic", "pc_sampling_interval": 1048576, "output_file": "out", "output_format": ["csv", "json"]}]}"#,
    ),
    (
        "pc-sampling/stochastic/exec-mask-manipulation/input.yml",
        "jobs:\n  - pc_sampling_unit: cycles\n    pc_sampling_method: stochastic\n    pc_sampling_interval: 1048576\n    output_file: out\n    output_format: [csv, json]\n",
    ),
    (
        "pc-sampling/stochastic/transpose-multiple-agents/input.json",
        r#"{"jobs": [{"kernel_trace": true, "pc_sampling_unit": "cycles", "pc_sampling_method": "stochastic", "pc_sampling_interval": 1048576, "output_file": "out", "output_format": ["csv", "json"]}]}"#,
    ),
    (
        "pc-sampling/stochastic/transpose-multiple-agents/input.yml",
        "jobs:\n  - kernel_trace: true\n    pc_sampling_unit: cycles\n    pc_sampling_method: stochastic\n    pc_sampling_interval: 1048576\n    output_file: out\n    output_format: [csv, json]\n",
    ),
    (
        "roctracer-roctx/roctracer-roctx-input.yml",
        "jobs:\n  - hsa_trace: False\n    hip_trace: False\n    kernel_trace: True\n    memory_copy_trace: True\n    marker_trace: True\n    output_directory: roctracer-roctx-trace\n    output_file: out\n    output_format: [pftrace, json, otf2]\n    log_level: env\n    kernel_rename: False\n",
    ),
    (
        "summary/input-summary.yaml",
        "jobs:\n  - output_directory: \"%env{ARBITRARY_ENV_VARIABLE}%\"\n    output_file: out\n    output_format: [pftrace, json, otf2]\n    log_level: env\n    runtime_trace: True\n    kernel_rename: True\n    summary: True\n    summary_per_domain: True\n    summary_groups: [\"KERNEL_DISPATCH|MEMORY_COPY\"]\n    summary_output_file: \"summary\"\n",
    ),
    (
        "tracing-plus-counter-collection/input.txt",
        "# passes\npmc: GRBM_COUNT\npmc: GRBM_GUI_ACTIVE\npmc: TA_BUSY_avr\npmc: SQ_WAVES  SQ_CYCLES:device=16384   SQ_BUSY_CYCLES:device=65536\n",
    ),
    (
        "tracing/input_systrace.json",
        r#"{"jobs": [{"sys_trace": true, "output_file": "json-input/out", "output_format": ["csv", "json", "pftrace", "rocpd"]}]}"#,
    ),
    (
        "tracing/input_trace.json",
        r#"{"jobs": [{"hsa_trace": true, "kernel_trace": true, "memory_copy_trace": true, "marker_trace": true, "output_file": "json-input/out", "output_format": ["csv", "json", "pftrace", "rocpd"]}]}"#,
    ),
    (
        "advanced-thread-trace/att_input.json",
        r#"{"jobs": [{"kernel_include_regex": "copyD", "kernel_exclude_regex": "", "output_file": "out", "output_format": ["json"], "truncate_kernels": true, "advanced_thread_trace": true, "att_target_cu": 1, "att_shader_engine_mask": "0x11", "att_simd_select": "0x3", "att_buffer_size": "0x6000000", "att_perfcounters": "SQ_WAVES:0x1 SQ_INSTS_VALU:0x3 SQ_INSTS_SALU", "att_perfcounter_ctrl": 3}]}"#,
    ),
    (
        "advanced-thread-trace/att_input.yml",
        "jobs:\n  - advanced_thread_trace: True\n    att_library_path: [/opt/rocm/lib, /usr/lib]\n  - advanced_thread_trace: True\n    att_library_path: [/opt/rocm/lib]\n",
    ),
];

/// What the simulated GPU has in place of what AMD's inputs name: counters of another
/// GPU, and the kernels of AMD's test applications.
const ON_THE_SIMULATED_GPU: &[(&str, &str)] = &[
    ("GRBM_COUNT", "SQ_INSTS_SALU"),
    ("TA_BUSY_avr", "TCC_HIT"),
    ("TEST_YAML_LOAD", "SQ_INSTS_VALU"),
    ("SQ_CYCLES:device=16384", "TCC_MISS"),
    ("SQ_BUSY_CYCLES:device=65536", "SQ_INSTS_LDS"),
    ("divide", "reduce"),
    ("transpose", "smooth"),
    ("copyD", "vectorAdd"),
];

/// What a run of an input does where it does not write rocprofv3's files: a job that
/// enables nothing collects nothing.
fn run_fails(name: &str) -> Option<&'static str> {
    match name {
        // Every part its aggregates name is negated but the KFD events and OpenMP, which
        // newer rocprofv3 adds to them and which the simulated GPU has none of.
        n if n.starts_with("negate-aggregate") => Some("no records were collected"),
        // As on an MI300X: the simulated gfx942 samples by host trap only.
        n if n.starts_with("pc-sampling/stochastic") => {
            Some("PC sampling Stochastic in Cycles is not supported on gfx942")
        }
        _ => None,
    }
}

#[test]
fn every_input_of_amds_tests_imports_and_runs() {
    assert!(INPUTS.len() >= 32, "{} inputs", INPUTS.len());
    let mut failures = Vec::new();
    for (name, text_of) in INPUTS {
        let dir = tempfile::tempdir().unwrap();
        let file = name.rsplit('/').next().unwrap();
        std::fs::write(dir.path().join(file), text_of).unwrap();
        let import = support::rocflow(
            &["import-rocprofv3", file, "--split", "-o", "pipelines"],
            dir.path(),
            &[],
        );
        if !import.status.success() {
            failures.push(format!("{name}: import failed\n{}", text(&import.stderr)));
        }
        let mut sim = text_of.to_string();
        for (theirs, ours) in ON_THE_SIMULATED_GPU {
            sim = sim.replace(theirs, ours);
        }
        std::fs::write(dir.path().join(file), sim).unwrap();
        let args = [&["run", "--device", "sim", "-i", file, "--"][..], APP].concat();
        let mut command = rocflow_command(&args, dir.path(), &[]);
        command.env("ARBITRARY_ENV_VARIABLE", "%tag%-trace-inp-yaml");
        let run = command.output().unwrap();
        let stderr = text(&run.stderr);
        match (run_fails(name), run.status.success()) {
            (None, false) => failures.push(format!("{name}: run failed\n{stderr}")),
            (Some(why), true) => failures.push(format!("{name}: ran, but should say `{why}`")),
            (Some(why), false) if !stderr.contains(why) => {
                failures.push(format!("{name}: failed without saying `{why}`\n{stderr}"))
            }
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A rocprofv3 command line's outputs hold what the simulated scenario does, as the
/// matrix holds each pipeline's: its CSV files, JSON document, database, Perfetto trace
/// and OTF2 archive (in rocprofv3's layout), each counted against the scenario's truth
/// in the parts the matrix holds it to.
#[test]
fn a_command_lines_outputs_hold_what_the_scenario_does() {
    use support::truth::{self, Collects, Part, Scenario};
    let dir = tempfile::tempdir().unwrap();
    let scenario_file = support::repo().join("examples/sim/mi300x.toml");
    let device = format!("sim:{}", scenario_file.display());
    let app = support::sim_app();
    let args = [
        "run",
        "--device",
        &device,
        "--sys-trace",
        "--pmc",
        "SQ_WAVES",
        "-f",
        "csv",
        "json",
        "rocpd",
        "pftrace",
        "otf2",
        "-d",
        "out",
        "-o",
        "run",
        "--",
        app.to_str().unwrap(),
        "exit",
        "0",
    ];
    assert_success(&support::rocflow(&args, dir.path(), &[]));
    let out = dir.path().join("out");
    let (json, dispatches) = truth::rocprofv3_json(&[out.join("run_results.json")]);
    let csv: Vec<_> = (std::fs::read_dir(&out).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    // What the scenario calls of the domains `--sys-trace` traces.
    let collects = Collects {
        api: [
            "hip_runtime_api",
            "hsa_core_api",
            "hsa_amd_ext_api",
            "rccl_api",
        ]
        .map(|d| (d, vec![], vec![]))
        .to_vec(),
        ..Collects::everything(&["SQ_WAVES"])
    };
    let want = Scenario::read(&scenario_file).truth(&collects, 1, &dispatches);
    let but_bytes: Vec<Part> = (Part::ALL.into_iter())
        .filter(|&p| p != Part::CopyBytes)
        .collect();
    let outputs = [
        ("json", json, &Part::ALL[..], 1e-9),
        // rocprofv3's CSV has no copy sizes, and writes counter values to six decimals.
        ("csv", truth::rocprofv3_csv(&csv), &but_bytes, 1e-6),
        (
            "rocpd",
            truth::rocpd(&out.join("run_results.db")),
            &Part::ALL,
            1e-9,
        ),
        (
            "pftrace",
            truth::perfetto(&[out.join("run_results.pftrace")]),
            &[
                Part::Kernels,
                Part::KernelTime,
                Part::Api,
                Part::Copies,
                Part::Markers,
            ],
            1e-9,
        ),
        (
            "otf2",
            truth::otf2(&out.join("run_results.otf2"), &want),
            &[
                Part::Kernels,
                Part::Api,
                Part::Copies,
                Part::Allocations,
                Part::Markers,
            ],
            1e-9,
        ),
    ];
    let mut problems = Vec::new();
    for (output, seen, parts, within) in outputs {
        for difference in want.differences(&seen, parts, within) {
            problems.push(format!("{output}: {difference}"));
        }
    }
    assert!(!dispatches.is_empty(), "the JSON document has dispatches");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// AMD's thread-trace input keeps, next to its outputs, one trace per shader engine of its
/// mask and traced dispatch, and decodes them with the decoder `ROCPROF_ATT_LIBRARY_PATH`
/// names: on the simulated MI300X (32 shader engines) mask 0x11 traces engines 0 and 4,
/// and SIMD selection 0x3 leaves waves on SIMDs 0 and 1.
#[test]
fn amds_thread_trace_input_keeps_and_decodes_a_trace_per_shader_engine_and_dispatch() {
    let (name, input) = INPUTS
        .iter()
        .find(|(name, _)| name.ends_with("att_input.json"))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = name.rsplit('/').next().unwrap();
    std::fs::write(dir.path().join(file), input.replace("copyD", "vectorAdd")).unwrap();
    let decoder = support::sim_decoder_folder(dir.path());
    let args = [&["run", "--device", "sim", "-i", file, "--"][..], APP].concat();
    let mut command = rocflow_command(&args, dir.path(), &[]);
    command.env("ROCPROF_ATT_LIBRARY_PATH", &decoder);
    let run = command.output().unwrap();
    assert_success(&run);
    let traces: Vec<String> = (std::fs::read_dir(dir.path()).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".att"))
        .collect();
    let engines: BTreeSet<&str> = (traces.iter())
        .map(|n| n.split('_').nth(4).unwrap())
        .collect();
    assert_eq!(engines, BTreeSet::from(["0", "4"]), "{traces:?}");
    let dispatches: BTreeSet<&str> = traces
        .iter()
        .map(|n| n.rsplit('_').next().unwrap())
        .collect();
    assert_eq!(traces.len(), 2 * dispatches.len());
    // vectorAdd is dispatched once per iteration of each of the scenario's threads.
    assert_eq!(dispatches.len(), 200, "{}", text(&run.stderr));
    let waves = std::fs::File::open(dir.path().join("thread_trace_waves.parquet")).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(waves)
        .unwrap()
        .build()
        .unwrap();
    let mut simds = BTreeSet::new();
    for batch in reader {
        let batch = batch.unwrap();
        let column = batch.column_by_name("simd").unwrap();
        let column =
            arrow_array::cast::AsArray::as_primitive::<arrow_array::types::UInt8Type>(column);
        simds.extend(column.values().iter().copied());
    }
    assert_eq!(simds, BTreeSet::from([0, 1]));
}

/// `--kfd-trace` traces every KFD domain: the database holds each event the scenario's
/// `[[kfd]]` tables make, and no other.
#[test]
fn kfd_trace_records_the_scenarios_kfd_events() {
    use support::truth::{Collects, Part, Scenario};
    let dir = tempfile::tempdir().unwrap();
    let mut text =
        std::fs::read_to_string(support::repo().join("examples/sim/mi300x.toml")).unwrap();
    for (domain, operation) in [
        ("kfd_event_page_migrate", "PAGEFAULT_CPU"),
        ("kfd_event_page_fault", "START_READ_FAULT"),
        ("kfd_event_queue", "RESTORE"),
        ("kfd_event_unmap_from_gpu", "UNMAP_FROM_CPU"),
        ("kfd_event_dropped_events", "DROPPED_EVENTS"),
        ("kfd_page_migrate", "PREFETCH"),
        ("kfd_page_fault", "READ_FAULT_UPDATED"),
        ("kfd_queue", "EVICT_USERPTR"),
    ] {
        text += &format!("\n[[kfd]]\ndomain = \"{domain}\"\noperation = \"{operation}\"\n");
    }
    let scenario_file = dir.path().join("kfd.toml");
    std::fs::write(&scenario_file, text).unwrap();
    let device = format!("sim:{}", scenario_file.display());
    let app = support::sim_app();
    let args = [
        "run",
        "--device",
        &device,
        "--kfd-trace",
        "-f",
        "rocpd",
        "-d",
        "out",
        "-o",
        "run",
        "--",
        app.to_str().unwrap(),
        "exit",
        "0",
    ];
    assert_success(&support::rocflow(&args, dir.path(), &[]));
    let collects = Collects {
        kfd: true,
        ..Collects::default()
    };
    let scenario = Scenario::read(&scenario_file);
    let want = scenario.truth(&collects, 1, &Default::default());
    assert_eq!(want.kfd.len(), 8, "every KFD domain has events");
    let seen = support::truth::rocpd(&dir.path().join("out/run_results.db"));
    let differences = want.differences(&seen, &[Part::Kfd], 0.0);
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
