//! rocflow's end-to-end tests: the `rocflow` binary, the tool library and the simulated
//! rocprofiler-sdk together, as users run them. One test binary (`cargo test -p rocflow
//! --test integration`), a module a file; what the modules share is the `support` crate
//! (tests/support). Run one file's tests with a filter: `… --test integration rocpd::`.

mod agents;
mod analyze;
mod analyze_kernels;
mod analyze_ranks;
mod args;
mod attach;
mod campaign;
mod campaign_sim;
mod cli;
mod coexist;
mod counter_sets;
mod counters;
mod counters_cli;
mod csv_rocprofv3;
mod device_counters;
mod doctor;
mod flags;
mod hip_streams;
mod import;
mod json_rocprofv3;
mod kernel_names;
mod kernel_replay;
mod library;
mod matrix;
mod otf2;
mod parquet;
mod passes;
mod perfetto;
mod pipeline_errors;
mod plugins;
mod post;
mod progress;
// Conformance with AMD's real rocprofiler-sdk (the kit in ../shared/realsdk).
mod realsdk;
mod reliability;
mod replay;
mod rocpd;
mod rocpd_bounds;
mod rocpd_peer;
mod rocpd_revisions;
mod rocpd_source;
mod rocprofv3_cli;
mod rocprofv3_summary;
mod run;
mod session;
mod shell;
mod smi;
mod spm;
mod stages;
mod structure;
mod templates;
mod thread_trace;
mod threads;
mod tool_faults;
mod untrusted;

/// A file here that is not a module above would never be built, let alone run.
#[test]
fn every_test_file_is_a_module() {
    support::assert_every_file_is_a_module(&support::repo().join("tests/tests.rs"));
}
