//! rocflow: declarative profiling pipelines for AMD GPUs on rocprofiler-sdk.
//!
//! A pipeline file is parsed, merged with its templates, validated and compiled into a
//! [`plan::Plan`], the single artefact every later stage reads.

pub mod analyze;
pub mod arrow;
pub mod atomic;
pub mod cancel;
pub mod catalog;
pub mod cformat;
pub mod chunk;
pub mod cli;
pub mod column;
pub mod counter_defs;
pub mod data_home;
mod descriptors;
pub mod device;
pub mod diag;
pub mod diff;
pub mod doctor;
pub mod error;
pub mod expression;
pub mod generate;
pub mod import;
pub mod kernel_names;
pub mod kernel_rename;
pub mod merge;
pub mod messages;
pub mod pipeline;
pub mod plan;
pub mod plugin;
pub mod post;
pub mod printable;
pub mod progress;
pub mod report;
pub mod rocpd;
pub mod runner;
pub mod runs;
mod screen;
pub mod sink;
pub mod smi;
pub mod source;
pub mod sqlite;
pub mod stage;
pub mod stats;
pub mod summary;
pub mod table;
pub mod thread_trace;
pub mod threads;
pub mod transform;
mod trim;
pub mod units;
pub mod writeback;

pub use rocflow_core::{queue, record, ring, sdk, spool, wire};
