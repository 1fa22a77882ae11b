//! How far a plan from anyone may reach: what the Plan carries for its queries when it is
//! followed as a stranger's (see `confine.rs`, which checks it).

/// What the `sql` steps of a plan from anyone may take: the time each may run, and how
/// much of its result is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The longest `timeout` a step may set, in nanoseconds.
    pub query_ns: u64,
    /// Rows of a result.
    pub rows: usize,
    /// Bytes of a result: each value counts 8, and its text's or blob's length on top. It
    /// bounds each value inside SQLite too, to its column's share, so a query cannot build
    /// a row past it.
    pub bytes: usize,
    /// The smallest file a sink may be asked to split its output into, in bytes.
    pub file: u64,
    /// The fewest rows a Parquet row group may be asked to hold.
    pub row_group: usize,
}

impl Bounds {
    /// Ten minutes a query (the default is one), and a million rows or 64 MiB of result:
    /// far more than a table a person reads, far less than a machine holds.
    pub const STRANGER: Bounds = Bounds {
        query_ns: 600_000_000_000,
        rows: 1_000_000,
        bytes: 64 << 20,
        file: 64 << 10,
        row_group: 1024,
    };
}
