//! The Parquet sink's options.

use serde::{Deserialize, Serialize};

use super::Size;

/// The sink's `options`; `Default` holds their defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// The codec of every column.
    pub compression: Codec,
    pub row_group_rows: usize,
    /// A table's rows go into part files of about this size.
    pub max_file_size: Option<Size>,
    /// Hive partition folders.
    pub partition_by: Vec<Partition>,
    /// Also write `dispatch_counters`, a row per dispatch with a column per counter.
    pub wide_counters: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            compression: Codec::default(),
            // Large enough for analytics (statistics per row group let readers skip most
            // of a file), small enough that each table being written holds one row
            // group's encoded columns in memory.
            row_group_rows: 1 << 20,
            max_file_size: None,
            partition_by: Vec::new(),
            wide_counters: false,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Codec {
    #[default]
    Zstd,
    Snappy,
    Lz4,
    None,
}

/// A column the dataset's folders may be split by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Partition {
    /// `host=NAME`, the process's host (the `host` column of tables that have one).
    Host,
    /// `pid=PID`, the process (the `pid` column).
    Process,
}
