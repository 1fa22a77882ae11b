//! The spool's compression: record frames stored compressed (see [`crate::wire`]), so that
//! a fast application is held to neither the disk's pace nor a spool ten times the size.
//! Compressing costs about 100 ns of a core per record, so by default it is done where the
//! machine has cores to spare for it, on threads of its own, each frame's parts at once,
//! while the frames after it are read (see [`super::listen::Lane`]).

use rayon::prelude::*;

use crate::wire;

/// Whether `rocflow run` compresses the spool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SpoolCompression {
    /// Where rocflow works on 8 threads or more (`--threads`, else one per core).
    #[default]
    Auto,
    /// Always, with zstd.
    Zstd,
    /// Never: the spool is the frames as the tool sent them.
    None,
}

/// Cores from which `auto` compresses: on fewer, the cores the compression takes are the
/// application's and the stages' (a 2-core machine ingests faster without it, unless its
/// disk is slow: 4.7–9.2 M records/s compressed against 4.7–13.1 as they are).
const AUTO_CORES: usize = 8;
/// Threads at most. Records come in bursts (a delivery's parts one after another), which
/// four threads did not keep up with once the tool encoded in shared memory: on 16 cores,
/// 8 M records took 0.73–0.90 s into a compressed spool with four, 0.62–0.69 s with eight.
const MAX_THREADS: usize = 8;
/// Payloads smaller than this are stored as they are: metadata, and records that save
/// little.
const SMALLEST: usize = 4 << 10;

impl SpoolCompression {
    /// The compressor this setting asks for when rocflow works on `cores` threads, `None` for no
    /// compression (or if its threads cannot start, which only costs the spool's size).
    pub fn compressor(self, cores: usize) -> Option<Compressor> {
        match self {
            SpoolCompression::None => None,
            SpoolCompression::Auto if cores < AUTO_CORES => None,
            SpoolCompression::Auto | SpoolCompression::Zstd => Compressor::new(cores),
        }
    }
}

/// Threads that compress frames for the spool: a pool of their own, so that compression
/// never waits behind the stages' work on the global one.
pub struct Compressor {
    pool: rayon::ThreadPool,
}

impl Compressor {
    /// Half the `cores` rocflow works on, from 1 to [`MAX_THREADS`].
    fn new(cores: usize) -> Option<Compressor> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads((cores / 2).clamp(1, MAX_THREADS))
            .thread_name(|i| format!("rocflow-compress-{i}"))
            .build()
            .ok()?;
        Some(Compressor { pool })
    }

    /// Whether the frame `raw` is worth compressing (metadata, and a few records, are
    /// not).
    pub fn takes(&self, raw: &[u8]) -> bool {
        raw.len() - wire::FRAME_HEADER >= SMALLEST
    }

    /// Compresses the plain frame `raw` on the compressor's threads, its parts at once, and
    /// hands it back to `done` with its compressed form (`None` where it does not shrink).
    pub fn spawn(
        &self,
        raw: Vec<u8>,
        done: impl FnOnce(Vec<u8>, Option<Vec<u8>>) + Send + 'static,
    ) {
        self.pool.spawn(move || {
            let parts = (raw[wire::FRAME_HEADER..].par_chunks(wire::COMPRESSED_PART))
                .map(wire::compress_part)
                .collect::<std::io::Result<Vec<_>>>();
            let compressed = parts
                .ok()
                .and_then(|parts| wire::compressed_frame(&raw, &parts));
            done(raw, compressed);
        });
    }
}
