//! Sources: where the records the stages take come from. The mirror of [`crate::sink`]:
//! one trait, one module per origin. The streams of a live run, a recorded spool and
//! rocpd databases (rocprofv3's, or rocflow's own) reach the stages through the same
//! trait, so every pipeline works on any of them, and `run` and `replay` share the path
//! from source to sinks. A time [`window`] applies to any source; [`Input`] is what a
//! command line names.

pub mod campaign;
mod input;
pub mod rocpd;
mod spool;
pub mod window;

use std::path::PathBuf;

use crate::wire::Frame;

pub use input::{Input, OpenFault, missing_kinds};
pub use rocpd::Rocpd;
pub use spool::Spool;
pub use window::WindowArgs;

/// Where records come from, as frames: a stream's metadata before the records that refer
/// to it, and each stream's records in the order they were made.
///
/// The stage runner calls [`next_frame`](Source::next_frame) until it returns `None` or
/// the stages stop early (a strict transform failed), then [`finish`](Source::finish)
/// once, at once: before any sink finishes, so that what the source keeps (a live run's
/// spool) is complete however long the outputs take, or if they never finish.
pub trait Source {
    /// The next frame, or `None` at the end of the input. A fault part-way ends the input
    /// here and is reported by [`finish`](Source::finish).
    fn next_frame(&mut self) -> Option<Frame>;

    /// Ends the input: completes what the source keeps, and says how the input ended.
    fn finish(&mut self) -> Result<Ending, SourceError>;
}

impl<S: Source + ?Sized> Source for &mut S {
    fn next_frame(&mut self) -> Option<Frame> {
        (**self).next_frame()
    }

    fn finish(&mut self) -> Result<Ending, SourceError> {
        (**self).finish()
    }
}

/// Frames already in hand (a test's, a benchmark's, a fuzzer's): a source that ends well.
pub struct Frames<I>(pub I);

impl<I: Iterator<Item = Frame>> Source for Frames<I> {
    fn next_frame(&mut self) -> Option<Frame> {
        self.0.next()
    }

    fn finish(&mut self) -> Result<Ending, SourceError> {
        Ok(Ending::default())
    }
}

/// How a source's input ended, when it ended well.
#[derive(Debug, Default)]
pub struct Ending {
    /// Something the user should know about its end.
    pub warning: Option<String>,
    /// Why the input may hold only part of its run (a spool cut short), if it may: what is
    /// made of it says it is partial.
    pub partial: Option<String>,
}

/// Why the frames a source gave may be only part of its input, from how it `ended`: a
/// spool cut short, or an input that failed part-way. A live run's spool that could not be
/// completed is not one: the stages had every frame that arrived.
pub fn partial(ended: &Result<Ending, SourceError>) -> Option<String> {
    match ended {
        Ok(ending) => ending.partial.clone(),
        Err(SourceError::Spool(_)) => None,
        Err(e) => Some(e.to_string()),
    }
}

/// A source that could not be read, or not completed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    #[error("reading {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The live run's spool could not be completed; the run's outputs may still be whole.
    #[error("{0}")]
    Spool(std::io::Error),
    /// A database ended part-way (its file changed or is damaged).
    #[error("reading {}: {message}", path.display())]
    Database { path: PathBuf, message: String },
}
