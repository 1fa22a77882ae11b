//! rocflow: declarative profiling pipelines for AMD GPUs on rocprofiler-sdk.
//!
//! A pipeline file is parsed, merged with its templates, validated and compiled into a
//! [`plan::Plan`], the single artefact every later stage reads.

pub mod cli;
pub mod diag;
pub mod error;
pub mod pipeline;
pub mod plan;

pub use rocflow_core::{record, sdk};
