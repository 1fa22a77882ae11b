//! A recorded run: the frames of a spool, as the runner wrote them.

use std::path::{Path, PathBuf};

use crate::spool::SpoolReader;
use crate::wire::{Frame, WireError};

use super::{Ending, Source, SourceError};

pub struct Spool {
    path: PathBuf,
    reader: SpoolReader,
    /// What ended the frames early, if something did.
    failed: Option<std::io::Error>,
}

impl Spool {
    pub fn open(path: &Path) -> Result<Spool, WireError> {
        let reader = SpoolReader::open(path)?;
        Ok(Spool {
            path: path.to_owned(),
            reader,
            failed: None,
        })
    }
}

impl Source for Spool {
    fn next_frame(&mut self) -> Option<Frame> {
        match self.reader.next()? {
            Ok(frame) => Some(frame),
            Err(e) => {
                self.failed = Some(e);
                None
            }
        }
    }

    fn finish(&mut self) -> Result<Ending, SourceError> {
        if let Some(source) = self.failed.take() {
            return Err(SourceError::Read {
                path: self.path.clone(),
                source,
            });
        }
        let partial = self.reader.ending().and_then(|e| e.warning());
        Ok(Ending {
            warning: None,
            partial,
        })
    }
}
