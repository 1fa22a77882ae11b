//! rocprofiler-sdk counter definitions (placeholder until the counters crate lands).
