//! Records as Arrow record batches, each column with its own type: what the Parquet sink
//! writes and what plugins receive.

pub mod columns;
pub mod records;
