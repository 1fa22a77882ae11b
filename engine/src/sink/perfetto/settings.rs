//! What the trace shows, as the sink's options say: read by the shards, which route only
//! the records shown, and by every sequence, which writes them.

use crate::plan::sink::perfetto::Shown;

/// What every sequence needs to know of the options.
#[derive(Debug)]
pub struct Settings {
    pub tracks: Vec<Shown>,
    pub flows: bool,
    pub annotations: bool,
}
