//! The data model shared by the rocflow runner and the tool library loaded into
//! applications: rocprofiler-sdk facts (domains, operations, enum values), the records
//! and metadata the tool delivers, the framed wire format they travel in, the ring of shared
//! memory that carries it from the tool to the runner, the raw spool that keeps them, and
//! the device metrics read through AMD-SMI.
//!
//! It is a crate of its own so the tool library links only this, not the runner.

pub mod abi;
pub mod agent_counters;
pub mod attach;
pub mod availability;
pub mod contexts;
pub mod demangle;
pub mod mpi;
pub mod query;
pub mod queue;
pub mod record;
pub mod ring;
pub mod scenario;
pub mod sdk;
pub mod sim_trace;
pub mod smi;
pub mod spool;
pub mod thread_trace;
pub mod wire;
