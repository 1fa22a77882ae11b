//! The OTF2 sink: an archive for Vampir, Scalasca and `otf2-print`, written through the
//! reference OTF2 library (3.0 or later, loaded at run time; see [`ffi`]).
//!
//! The sink's path is a directory holding the archive: `traces.otf2` (the anchor file to
//! open), `traces.def` and `traces/`; or, with `layout = "archive"`, the archive's own name
//! (`PATH.otf2`, `PATH.def`, `PATH/`). Host threads, GPU queues, copy engines and counters are
//! locations (see [`definitions`] for how they are grouped, [`events`] for what goes where,
//! [`timeline`](super::timeline) for how order and nesting are kept); API functions, kernels, copies and
//! marker ranges are regions entered and left; counters are metrics, one value per
//! dispatch. Correlation ids, dispatch ids and byte counts are event attributes.

mod archive;
mod attributes;
mod definitions;
mod events;
mod ffi;
mod locks;
mod spill;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use self::archive::Archive;
use self::definitions::Definitions;
use self::events::Tracks;
use self::ffi::Otf2;
use self::spill::Spill;
use super::staging::Staging;
use super::{Sink, SinkError};
use crate::catalog::Catalog;
use crate::chunk::Chunk;
use crate::plan::sink::otf2::{Layout, Options};

/// The archive's name within the sink's directory.
const ARCHIVE: &str = "traces";

/// Live writers (see [`Tracks`]) at most, one for every four threads the run may use: each
/// is a thread beside the pool's, busy as long as its location's events come, which on a
/// few cores would take from placing the spans.
const LIVE_WRITERS: usize = 4;

pub struct Otf2Sink {
    /// The archive's name; its files are the output when it is the path's own.
    name: String,
    layout: Layout,
    // Dropped in this order on failure: the live writers end before the archive closes,
    // the archive closes before its files are removed.
    tracks: Tracks,
    archive: Archive,
    /// Every location's events, until OTF2 writes them.
    spill: Arc<Spill>,
    staging: Staging,
    defs: Definitions,
}

impl Otf2Sink {
    pub fn create(options: &Options, path: PathBuf) -> Result<Otf2Sink, SinkError> {
        let otf2 = Otf2::load()?;
        let name = match options.layout {
            Layout::Directory => ARCHIVE.to_owned(),
            Layout::Archive => path.file_name().map_or_else(
                || ARCHIVE.to_owned(),
                |name| name.to_string_lossy().into_owned(),
            ),
        };
        let staging = Staging::create(path)?;
        Ok(Otf2Sink {
            archive: Archive::create(otf2, staging.dir(), &name)?,
            name,
            layout: options.layout,
            spill: Arc::new(
                Spill::create(staging.dir())
                    .map_err(SinkError::io("holding the OTF2 events back"))?,
            ),
            staging,
            defs: Definitions::default(),
            tracks: Tracks::new((crate::threads::count() / 4).min(LIVE_WRITERS)),
        })
    }
}

impl Sink for Otf2Sink {
    fn write(&mut self, window: &[Arc<Chunk>], catalog: &Catalog) -> Result<(), SinkError> {
        for chunk in window {
            (self.tracks).write(chunk, catalog.stream(chunk.stream), &mut self.defs);
        }
        self.tracks.place(&self.spill, &self.archive)
    }

    fn finish(self: Box<Self>, catalog: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        let Otf2Sink {
            name,
            layout,
            archive,
            spill,
            staging,
            mut defs,
            tracks,
        } = *self;
        let logs = tracks.finish(catalog, &mut defs, &spill)?;
        archive.finish(&spill, &logs, |out| defs.write(out))?;
        // OTF2's readers refuse an archive without a location, which a run without
        // records would make: there is no archive to open, and so none is kept.
        if logs.is_empty() {
            return Ok(Vec::new());
        }
        let anchor = format!("{name}.otf2");
        match layout {
            Layout::Directory => {
                let anchor = staging.target().join(anchor);
                staging.commit(is_archive)?;
                Ok(vec![anchor])
            }
            Layout::Archive => {
                let files = [anchor, format!("{name}.def"), name];
                let mut paths = staging.commit_files(&files)?;
                paths.truncate(1);
                Ok(paths)
            }
        }
    }
}

/// An earlier output of this sink: a directory with the archive's anchor file.
fn is_archive(path: &Path) -> bool {
    path.join(format!("{ARCHIVE}.otf2")).is_file()
}
