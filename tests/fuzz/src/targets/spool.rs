//! Raw spools, read as `rocflow replay` and `inspect` read them, and the same frames as the
//! runner reads them from a tool's socket.

use std::collections::BTreeSet;
use std::path::Path;

use rocflow::catalog::{Catalog, StreamMeta};
use rocflow::column::{self, BatchVisitor, Columns};
use rocflow::report::{self, Page};
use rocflow::spool::SpoolReader;
use rocflow::summary::{Breakdown, Summary};
use rocflow::wire::{self, Frame, FrameReader, Payload};

use super::{Shape, Target};

/// The spool's own folder of seeds: runs recorded on the simulated device.
const SEEDS: &[&str] = &["tests/fuzz/corpus/spool"];

/// A spool file through [`SpoolReader`], every record's columns read against the run's
/// metadata, then the run's summary and HTML report, as the post-steps make them.
pub const SPOOL: Target = Target {
    name: "spool",
    run: read_spool,
    seeds: SEEDS,
    shape: Shape::Spool,
    tokens: &[],
    nests: &[],
    extension: "rfraw",
};

/// A stream as the runner reads a tool's socket: [`FrameReader::next_raw`], then
/// [`wire::decode_frame`], a frame that does not decode dropped and the next one read.
pub const WIRE: Target = Target {
    name: "wire",
    run: read_stream,
    seeds: SEEDS,
    shape: Shape::Spool,
    tokens: &[],
    nests: &[],
    extension: "rfraw",
};

fn read_spool(input: &[u8], scratch: &Path) -> String {
    let path = scratch.join("run.rfraw");
    crate::files::replace(&path, input);
    let mut reader = match SpoolReader::open(&path) {
        Ok(reader) => reader,
        Err(e) => return e.to_string(),
    };
    let frames: Vec<Frame> = reader.by_ref().map_while(Result::ok).collect();
    let mut read = Read::default();
    frames.iter().for_each(|frame| read.frame(frame.clone()));
    let breakdown = Breakdown {
        node: true,
        process: true,
        agent: true,
    };
    let mut source = rocflow::source::Frames(frames.into_iter());
    let summary = match Summary::of_run(&Default::default(), &mut source, breakdown) {
        Ok((summary, _)) => summary,
        Err(e) => return format!("{read}\nsummary: {e}"),
    };
    let page = Page {
        title: "fuzz",
        pipeline: None,
        outputs: &[],
        thread_trace: &[],
        findings: &[],
    };
    report::render(&page, &summary, scratch);
    let ending = reader
        .ending()
        .and_then(|e| e.warning())
        .unwrap_or_default();
    format!("{read}\n{ending}")
}

fn read_stream(input: &[u8], _: &Path) -> String {
    let mut reader = match FrameReader::new(input) {
        Ok(reader) => reader,
        Err(e) => return e.to_string(),
    };
    let mut read = Read::default();
    let mut raw = Vec::new();
    let end = loop {
        match reader.next_raw(&mut raw) {
            Ok(true) => match wire::decode_frame(&raw) {
                Ok(frame) => read.frame(frame),
                Err(e) => {
                    read.seen.insert(e.to_string());
                }
            },
            Ok(false) => break String::new(),
            Err(e) => break e.to_string(),
        }
    };
    format!("{read}\n{end}")
}

/// What the frames of a stream held: the metadata, and which kinds of frames and errors
/// were seen (a line each, when displayed).
#[derive(Default)]
pub(super) struct Read {
    catalog: Catalog,
    seen: BTreeSet<String>,
}

impl Read {
    /// Applies metadata to the catalog, and reads every column of every record with it.
    pub(super) fn frame(&mut self, frame: Frame) {
        match frame.payload {
            Payload::Meta(items) => {
                self.seen.insert("meta".into());
                self.catalog.apply(frame.stream, items);
            }
            Payload::Args(_) => {
                // Decoding them, which the reader did, is all a spool's arguments take.
                self.seen.insert("args".into());
            }
            Payload::Trace(_) => {
                // As arguments: decoding a piece checked it, and the runner keeps it as bytes.
                self.seen.insert("thread trace".into());
            }
            Payload::Records(batch) => {
                self.seen.insert(batch.kind().name().into());
                column::visit(&batch, Cells(self.catalog.stream(frame.stream)));
            }
        }
    }
}

impl std::fmt::Display for Read {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seen: Vec<&str> = self.seen.iter().map(String::as_str).collect();
        write!(f, "{}", seen.join("\n"))
    }
}

/// Reads every column, derived ones included, of each record.
struct Cells<'a>(&'a StreamMeta);

impl BatchVisitor for Cells<'_> {
    type Output = ();

    fn visit<R: Columns>(self, records: &[R]) {
        for record in records {
            record.for_each_cell(self.0, |cell| {
                std::hint::black_box(cell);
            });
        }
    }
}
