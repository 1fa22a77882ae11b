//! What the trace shows, as the sink's options say: read by the shards, which route only
//! the records shown, and by every sequence, which writes them.

/// What the trace shows, as the sink's `tracks` option names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shown {
    Api,
    Marker,
    Kernel,
    MemoryCopy,
    MemoryAllocation,
    Counter,
    ScratchMemory,
}

impl Shown {
    pub const ALL: [Shown; 7] = [
        Shown::Api,
        Shown::Marker,
        Shown::Kernel,
        Shown::MemoryCopy,
        Shown::MemoryAllocation,
        Shown::Counter,
        Shown::ScratchMemory,
    ];
}

/// What every sequence needs to know of the options.
#[derive(Debug)]
pub struct Settings {
    pub tracks: Vec<Shown>,
    pub flows: bool,
    pub annotations: bool,
}
