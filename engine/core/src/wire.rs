//! The framed binary format records travel in, on the tool's socket and in the raw spool.
//!
//! A stream starts with an 8-byte header (`RFRAW`, a zero byte, the format version as a
//! little-endian u16). Then frames follow, each a 12-byte header and a payload:
//!
//! | bytes | field |
//! | --- | --- |
//! | 1 | tag: 0 = metadata (JSON array of [`Meta`]), 1 + [`RecordKind`] index = records, 128 = API call arguments ([`ApiArgs`]), 129 = a piece of a thread trace or code object ([`TraceData`], version 5 on), 130 = marker messages (version 9 on, below), 255 = the spool's end |
//! | 1 | encoding: 0 = the payload as it is, 1 = compressed with zstd (see below) |
//! | 2 | stream: which process the frame belongs to (the runner numbers connections) |
//! | 4 | payload length, as stored |
//! | 4 | CRC-32 of the header's first 8 bytes, then the payload as stored |
//!
//! Record payloads are whole records back to back in their fixed layout. A layout may grow
//! fields at its end from one version to the next; a reader of an earlier version's stream
//! reads them as 0 (see [`stored_size`]). A marker messages frame holds
//! [`Meta::MarkerMessages`]'s pairs back to back, each a correlation id (u64) and a string
//! number (u32); before version 9 they travelled as metadata. An arguments frame
//! comes just before the API records frame of the same delivery, whose calls it describes.
//! The tool sends payloads as they are; the runner may store them compressed in the spool,
//! in parts of [`COMPRESSED_PART`] bytes (the last one shorter) compressed apart, so that
//! several cores can share a frame: a compressed payload is its length as a u32, each
//! part's compressed length as a u32, then the parts.
//!
//! A spool's writer records its end when it closes the spool (format version 4 on): a last
//! frame of stream 0 whose payload is its own offset (a u64), after which nothing follows.
//! A spool without it was cut short: its runner was killed, or its disk filled. A live
//! stream has no such frame.
//!
//! A reader checks every header and checksum, and tells a truncated last frame (a crash
//! mid-write) from corruption. Earlier versions, which spools kept from earlier runs may
//! have, record no end, and versions before 3 store every payload as it is (their encoding
//! byte is 0); version 1 also differs in its checksum, which covers the payload only, so a
//! damaged header is caught only where it names no kind or has an encoding byte other
//! than 0.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::io::{self, Read};
use std::marker::PhantomData;

use rayon::prelude::*;

use crate::record::{
    ApiArgs, ArgsError, Batch, CounterSample, Meta, Out, Record, RecordKind, wire_size,
};
use crate::thread_trace::{TraceData, TraceDataError};

pub const MAGIC: &[u8; 6] = b"RFRAW\0";
/// The version this rocflow writes.
pub const VERSION: u16 = 9;
/// The first version whose spools record their end.
pub const ENDS_RECORDED: u16 = 4;
/// The first version whose streams may carry thread traces.
pub const TRACES_RECORDED: u16 = 5;
/// The first version whose kernel dispatches and memory copies end with their HIP graph
/// node (`graph_exec_id`, `graph_node_id`); earlier ones are 16 bytes shorter.
pub const GRAPH_NODES_RECORDED: u16 = 6;
/// The first version whose memory copies end with their addresses (`dst_address`,
/// `src_address`); earlier ones are 16 bytes shorter.
pub const COPY_ADDRESSES_RECORDED: u16 = 7;
/// The first version whose kernel dispatches and memory copies end with their HIP stream
/// (`hip_stream`); earlier ones are 8 bytes shorter, read as the stream unknown.
pub const HIP_STREAMS_RECORDED: u16 = 8;
/// The first version whose marker messages travel in frames of their own, as integers:
/// one pair per ROCTx call, whose JSON took a live ROCTx run's reading thread a tenth of
/// the runner's time to parse.
pub const MARKER_FRAMES: u16 = 9;
/// The oldest version of a kept spool this rocflow reads.
pub const OLDEST_VERSION: u16 = 1;
pub const STREAM_HEADER: usize = 8;
pub const FRAME_HEADER: usize = 12;
/// No frame is larger; a header claiming more is corrupt.
pub const MAX_PAYLOAD: usize = 256 << 20;
/// No counter has more instances (values per dispatch): a frame full of its samples, far
/// more than any GPU has, and a bound on what a counter's description may make a reader
/// set aside.
pub const MAX_INSTANCES: u64 = (MAX_PAYLOAD / CounterSample::SIZE) as u64;

const META_TAG: u8 = 0;
/// Far above the record kinds' tags, which grow with the kinds.
const ARGS_TAG: u8 = 128;
/// A piece of a thread trace or code object.
const TRACE_TAG: u8 = 129;
/// Marker messages (version [`MARKER_FRAMES`] on).
const MARKERS_TAG: u8 = 130;
/// A marker message's bytes in its frame: correlation id and string number.
const MARKER_MESSAGE: usize = 12;
/// The spool's recorded end.
const END_TAG: u8 = 255;
/// An end frame's payload: its own offset in the spool.
const END_PAYLOAD: usize = 8;

/// The bytes that start every stream.
pub fn stream_header() -> [u8; STREAM_HEADER] {
    let mut header = [0; STREAM_HEADER];
    header[..6].copy_from_slice(MAGIC);
    header[6..].copy_from_slice(&VERSION.to_le_bytes());
    header
}

/// What a frame's checksum covers, by format version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checksum {
    /// Version 1: the payload.
    Payload,
    /// Version 2 on: the header's first 8 bytes, then the payload.
    HeaderAndPayload,
}

/// How a frame's payload is stored (its header's second byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Plain = 0,
    /// In parts compressed with zstd (format version 3 on).
    Zstd = 1,
}

/// Payload bytes compressed apart: a frame is up to a delivery of records (tens of MiB),
/// and its parts are compressed on as many cores as the runner gives them, at no cost in
/// size (a 128 KiB part of records compresses as well as the whole frame).
pub const COMPRESSED_PART: usize = 128 << 10;
/// zstd's fastest regular level: about 8 times smaller records at 0.7 GB/s a core.
const ZSTD_LEVEL: i32 = 1;
/// No compressed frame's payload is more than this many times the size it is stored in.
/// rocflow's own frames expand 7 to 13 times (runs of the shipped templates on the
/// simulated device, whose records repeat more than a GPU's, among them 320,000 launches
/// of eight kernels traced and counted); parts of zeros expand thousands of times, and a
/// spool of them would read as hundreds of times the records its size can hold. The bound
/// keeps ten times the margin over what the runner writes.
pub const MAX_EXPANSION: usize = 128;

/// Checks a stream header against the versions `oldest..=VERSION` and returns its version;
/// the error says what the bytes are instead.
fn check_stream_header(header: &[u8], oldest: u16) -> Result<u16, WireError> {
    if header.len() < STREAM_HEADER || &header[..6] != MAGIC {
        return Err(WireError::NotASpool);
    }
    match u16::from_le_bytes([header[6], header[7]]) {
        version if version < oldest || version > VERSION => Err(WireError::Version(version)),
        version => Ok(version),
    }
}

/// The checksum a frame carries in a stream of format `version`, from its `header` (the
/// first 8 bytes: tag, encoding byte, stream, length) and `payload`: for tools that write
/// frames of their own making, such as the fuzzer's.
pub fn checksum(version: u16, header: &[u8], payload: &[u8]) -> u32 {
    Checksum::of_version(version).of(header, payload)
}

/// Appends a records frame for `batch` to `out`.
pub fn encode_records(stream: u16, batch: &Batch, out: &mut Vec<u8>) {
    frame(stream, 1 + batch.kind() as u8, out, |out| batch.encode(out));
}

/// A records frame filled in place: its header's room is kept when it starts and the header
/// written when it is done, so each record is encoded once, straight into the bytes sent,
/// instead of being kept as a struct and copied into a frame later. The payload's checksum
/// is taken a stretch at a time as it grows, while the stretch is still in cache: a frame
/// is megabytes, which no core's cache holds by its end.
pub struct RecordsFrame<R, B> {
    bytes: B,
    /// The checksum of the payload up to `hashed`.
    payload: crc32fast::Hasher,
    hashed: usize,
    kind: PhantomData<R>,
}

/// Payload bytes a frame checksums at once: a small part of a core's cache.
const CHECKSUM_STRETCH: usize = 64 << 10;

impl<R: Record, B: Out> RecordsFrame<R, B> {
    /// Starts a frame in `bytes`, which must be empty (a buffer kept for reuse is cleared).
    pub fn new(mut bytes: B) -> RecordsFrame<R, B> {
        assert!(
            bytes.bytes().is_empty(),
            "a frame starts in an empty buffer"
        );
        bytes.put(&[0; FRAME_HEADER]);
        RecordsFrame {
            bytes,
            payload: crc32fast::Hasher::new(),
            hashed: FRAME_HEADER,
            kind: PhantomData,
        }
    }

    #[inline]
    pub fn push(&mut self, record: R) {
        record.encode(&mut self.bytes);
        if self.bytes.bytes().len() - self.hashed >= CHECKSUM_STRETCH {
            self.checksum_new();
        }
    }

    fn checksum_new(&mut self) {
        let bytes = self.bytes.bytes();
        self.payload.update(&bytes[self.hashed..]);
        self.hashed = bytes.len();
    }

    /// The whole frame, of stream `stream`.
    pub fn finish(mut self, stream: u16) -> B {
        self.checksum_new();
        let bytes = self.bytes.bytes();
        let len = bytes.len() - FRAME_HEADER;
        let header = &mut bytes[..FRAME_HEADER];
        put_header(header, 1 + R::KIND as u8, Encoding::Plain, stream, len);
        let crc = Checksum::HeaderAndPayload.of_hashed(header, &self.payload);
        header[8..12].copy_from_slice(&crc.to_le_bytes());
        self.bytes
    }
}

/// Appends metadata frames for `items` to `out`, in their order: a marker messages frame
/// for each [`Meta::MarkerMessages`], a JSON frame for each run of the other items (one,
/// empty, for no items).
pub fn encode_meta(stream: u16, items: &[Meta], out: &mut Vec<u8>) {
    let json = |items: &[Meta], out: &mut Vec<u8>| {
        frame(stream, META_TAG, out, |out| {
            serde_json::to_writer(out, items).expect("metadata serializes to a Vec")
        })
    };
    if items.is_empty() {
        return json(items, out);
    }
    // Each run is one marker messages item, or items of the other kinds.
    for run in items.chunk_by(|a, b| !is_markers(a) && !is_markers(b)) {
        match run {
            [Meta::MarkerMessages { messages }] => frame(stream, MARKERS_TAG, out, |out| {
                for &(correlation_id, string) in messages {
                    out.extend_from_slice(&correlation_id.to_le_bytes());
                    out.extend_from_slice(&string.to_le_bytes());
                }
            }),
            _ => json(run, out),
        }
    }
}

fn is_markers(item: &Meta) -> bool {
    matches!(item, Meta::MarkerMessages { .. })
}

/// The messages of a marker messages frame's payload.
fn decode_markers(payload: &[u8]) -> Result<Meta, FrameError> {
    let pairs = payload.chunks_exact(MARKER_MESSAGE);
    if !pairs.remainder().is_empty() {
        return Err(FrameError::PartialMarkers(payload.len()));
    }
    let messages = pairs
        .map(|pair| {
            let (id, string) = pair.split_at(8);
            (
                u64::from_le_bytes(id.try_into().unwrap()),
                u32::from_le_bytes(string.try_into().unwrap()),
            )
        })
        .collect();
    Ok(Meta::MarkerMessages { messages })
}

/// Appends an API call arguments frame to `out`.
pub fn encode_args(stream: u16, args: &ApiArgs, out: &mut impl Out) {
    frame(stream, ARGS_TAG, out, |out| args.encode(out));
}

/// Appends the frame that records a spool's end to `out`, given where it starts in the
/// spool: the last frame a spool's writer writes, and only when every frame it took is
/// written.
pub fn encode_trace(stream: u16, data: &TraceData, out: &mut Vec<u8>) {
    frame(stream, TRACE_TAG, out, |out| data.encode(out));
}

pub fn encode_end(offset: u64, out: &mut Vec<u8>) {
    frame(0, END_TAG, out, |out| out.put(&offset.to_le_bytes()));
}

/// Appends a frame whose payload `body` writes.
fn frame<O: Out>(stream: u16, tag: u8, out: &mut O, body: impl FnOnce(&mut O)) {
    let start = out.bytes().len();
    out.put(&[0; FRAME_HEADER]);
    body(out);
    finish_frame(out.bytes(), start, tag, Encoding::Plain, stream);
}

/// Writes the header of the frame that starts at `start` and runs to the end of `out`.
fn finish_frame(out: &mut [u8], start: usize, tag: u8, encoding: Encoding, stream: u16) {
    let (header, payload) = out[start..].split_at_mut(FRAME_HEADER);
    put_header(header, tag, encoding, stream, payload.len());
    let crc = Checksum::HeaderAndPayload.of(header, payload);
    header[8..12].copy_from_slice(&crc.to_le_bytes());
}

/// Writes a frame header's first 8 bytes: all but the checksum.
fn put_header(header: &mut [u8], tag: u8, encoding: Encoding, stream: u16, len: usize) {
    let len = u32::try_from(len).expect("frames stay below 4 GiB");
    header[0] = tag;
    header[1] = encoding as u8;
    header[2..4].copy_from_slice(&stream.to_le_bytes());
    header[4..8].copy_from_slice(&len.to_le_bytes());
}

/// Compresses one part of a frame's payload (a [`COMPRESSED_PART`] of it, the last one
/// shorter) for [`compressed_frame`]; the parts of a frame may be compressed on different
/// threads.
pub fn compress_part(part: &[u8]) -> io::Result<Vec<u8>> {
    thread_local! {
        static COMPRESSOR: ZstdState<zstd::bulk::Compressor<'static>> = const { RefCell::new(None) };
    }
    with_state(
        &COMPRESSOR,
        || zstd::bulk::Compressor::new(ZSTD_LEVEL),
        |c| c.compress(part),
    )
}

/// A thread's zstd working state, made on first use and kept: making one costs more than
/// compressing or decompressing a part.
type ZstdState<T> = RefCell<Option<T>>;

/// Runs `work` on this thread's `state`, making it first if need be.
fn with_state<T, R>(
    state: &'static std::thread::LocalKey<ZstdState<T>>,
    make: impl FnOnce() -> io::Result<T>,
    work: impl FnOnce(&mut T) -> io::Result<R>,
) -> io::Result<R> {
    state.with_borrow_mut(|state| match state {
        Some(state) => work(state),
        None => work(state.insert(make()?)),
    })
}

/// The frame `raw`, a plain one (a live stream's, see [`FrameReader::new`]), with its
/// payload stored compressed, given its parts as [`compress_part`] made them, in order;
/// `None` where that would not be smaller, or would expand past [`MAX_EXPANSION`] (which
/// a reader refuses).
pub fn compressed_frame(raw: &[u8], parts: &[Vec<u8>]) -> Option<Vec<u8>> {
    let (header, payload) = raw.split_at(FRAME_HEADER);
    debug_assert_eq!(header[1], Encoding::Plain as u8);
    debug_assert_eq!(parts.len(), payload.len().div_ceil(COMPRESSED_PART));
    let stored = 4 * (1 + parts.len()) + parts.iter().map(Vec::len).sum::<usize>();
    if stored >= payload.len() || payload.len() > stored.saturating_mul(MAX_EXPANSION) {
        return None;
    }
    let mut out = Vec::with_capacity(FRAME_HEADER + stored);
    out.extend_from_slice(&[0; FRAME_HEADER]);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    for part in parts {
        out.extend_from_slice(&(part.len() as u32).to_le_bytes());
    }
    parts.iter().for_each(|part| out.extend_from_slice(part));
    let stream = u16::from_le_bytes([header[2], header[3]]);
    finish_frame(&mut out, 0, header[0], Encoding::Zstd, stream);
    Some(out)
}

/// The payload a compressed frame stores. Its size is checked before memory is set aside
/// for it, as a plain frame's is, and against the size it is stored in (see
/// [`MAX_EXPANSION`]). The parts are decompressed on rayon's threads: a spool's reader
/// would otherwise spend most of its time here.
fn decompress(stored: &[u8]) -> Result<Vec<u8>, FrameError> {
    let (len, rest) = stored
        .split_first_chunk::<4>()
        .ok_or(FrameError::NoDecompressedLength)?;
    let len = u32::from_le_bytes(*len) as usize;
    if len > MAX_PAYLOAD {
        return Err(FrameError::DecompressedTooLarge(len));
    }
    let count = len.div_ceil(COMPRESSED_PART);
    let (lengths, mut data) = rest
        .split_at_checked(4 * count)
        .ok_or(FrameError::PartLengthsCut(count))?;
    let mut parts = Vec::with_capacity(count);
    for (i, length) in lengths.chunks_exact(4).enumerate() {
        let length = u32::from_le_bytes(length.try_into().unwrap()) as usize;
        let (part, rest) = data
            .split_at_checked(length)
            .ok_or(FrameError::PartCut(i + 1))?;
        parts.push(part);
        data = rest;
    }
    if !data.is_empty() {
        return Err(FrameError::AfterParts(data.len()));
    }
    if len > stored.len().saturating_mul(MAX_EXPANSION) {
        return Err(FrameError::Expansion {
            len,
            stored: stored.len(),
        });
    }
    let mut payload = vec![0; len];
    let done: Vec<Result<(), FrameError>> = (payload.par_chunks_mut(COMPRESSED_PART))
        .zip(parts)
        .enumerate()
        .map(|(i, (out, part))| decompress_part(i + 1, part, out))
        .collect();
    // The first part that is wrong, whichever thread found it.
    done.into_iter().collect::<Result<(), FrameError>>()?;
    Ok(payload)
}

/// Decompresses `part`, the frame's part number `number`, into the whole of `out`.
fn decompress_part(number: usize, part: &[u8], out: &mut [u8]) -> Result<(), FrameError> {
    thread_local! {
        static DECOMPRESSOR: ZstdState<zstd::bulk::Decompressor<'static>> =
            const { RefCell::new(None) };
    }
    let wanted = out.len();
    let decompress = |d: &mut zstd::bulk::Decompressor| d.decompress_to_buffer(part, out);
    match with_state(&DECOMPRESSOR, zstd::bulk::Decompressor::new, decompress) {
        Ok(n) if n == wanted => Ok(()),
        Ok(held) => Err(FrameError::PartSize {
            part: number,
            held,
            wanted,
        }),
        Err(e) => Err(FrameError::Zstd {
            part: number,
            reason: e.to_string(),
        }),
    }
}

impl Encoding {
    /// The encoding a header's second byte names, in a stream whose frames may be
    /// `compressed` or not.
    fn of(byte: u8, compressed: bool) -> Result<Encoding, FrameError> {
        match byte {
            0 => Ok(Encoding::Plain),
            1 if compressed => Ok(Encoding::Zstd),
            other => Err(FrameError::Encoding(other)),
        }
    }
}

impl Checksum {
    fn of_version(version: u16) -> Checksum {
        match version {
            1 => Checksum::Payload,
            _ => Checksum::HeaderAndPayload,
        }
    }

    /// The checksum of a frame with this `header` (its checksum field aside) and `payload`.
    fn of(self, header: &[u8], payload: &[u8]) -> u32 {
        let mut hasher = self.of_header(header);
        hasher.update(payload);
        hasher.finalize()
    }

    /// [`Checksum::of`], for a payload whose checksum was taken already, as it was written.
    fn of_hashed(self, header: &[u8], payload: &crc32fast::Hasher) -> u32 {
        let mut hasher = self.of_header(header);
        hasher.combine(payload);
        hasher.finalize()
    }

    /// The checksum's state before the payload: the part of `header` it covers.
    fn of_header(self, header: &[u8]) -> crc32fast::Hasher {
        let mut hasher = crc32fast::Hasher::new();
        if self == Checksum::HeaderAndPayload {
            hasher.update(&header[..8]);
        }
        hasher
    }
}

/// What is wrong with a frame header of a stream whose frames may be `compressed` or not,
/// and may record its end or not, before its payload is read; checks that need no
/// checksum, so version 1 frames get them too.
fn check_frame_header(
    header: &[u8; FRAME_HEADER],
    compressed: bool,
    ends: bool,
    version: u16,
) -> Result<usize, FrameError> {
    let tag = header[0];
    let len = u32::from_le_bytes(header[4..8].try_into().unwrap()) as usize;
    if tag == END_TAG && ends {
        return match (header[1], len) {
            (0, END_PAYLOAD) => Ok(len),
            _ => Err(FrameError::EndMalformed),
        };
    }
    let known = match tag {
        ARGS_TAG => true,
        TRACE_TAG => version >= TRACES_RECORDED,
        MARKERS_TAG => version >= MARKER_FRAMES,
        _ => usize::from(tag) <= RecordKind::ALL.len(),
    };
    if !known {
        return Err(FrameError::UnknownTag(tag));
    }
    Encoding::of(header[1], compressed)?;
    if len > MAX_PAYLOAD {
        return Err(FrameError::TooLarge(len));
    }
    Ok(len)
}

/// A decoded frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub stream: u16,
    pub payload: Payload,
}

impl Frame {
    /// Appends the frame, encoded again, to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match &self.payload {
            Payload::Meta(items) => encode_meta(self.stream, items, out),
            Payload::Records(batch) => encode_records(self.stream, batch, out),
            Payload::Args(args) => encode_args(self.stream, args, out),
            Payload::Trace(data) => encode_trace(self.stream, data, out),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    Meta(Vec<Meta>),
    Records(Batch),
    Args(ApiArgs),
    Trace(TraceData),
}

/// What can be wrong with a stream of frames.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("not a rocflow spool (it does not start with RFRAW)")]
    NotASpool,
    #[error(
        "spool format version {0} is not supported here (this rocflow writes version {VERSION}, and reads kept spools from version {OLDEST_VERSION} on)"
    )]
    Version(u16),
    #[error("frame at byte {offset} is cut short: {missing} of its bytes are missing")]
    Truncated { offset: u64, missing: usize },
    #[error("frame at byte {offset} is corrupt: {reason}")]
    Corrupt { offset: u64, reason: FrameError },
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// What is wrong with one frame of a stream: why it is corrupt. Another crate's error is
/// kept as its text, so that a reader's ending, which holds this, can be copied and
/// compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("unknown frame tag {0}")]
    UnknownTag(u8),
    #[error("its encoding byte is {0}")]
    Encoding(u8),
    #[error("it claims {0} bytes")]
    TooLarge(usize),
    #[error("checksum mismatch")]
    Checksum,
    #[error("its end frame is malformed")]
    EndMalformed,
    #[error("an end frame names byte {0}, not its own place")]
    EndElsewhere(u64),
    #[error("bytes follow the spool's recorded end")]
    AfterEnd,
    #[error("its compressed payload has no length")]
    NoDecompressedLength,
    #[error("it claims {0} bytes once decompressed")]
    DecompressedTooLarge(usize),
    #[error("the lengths of its {0} compressed parts are cut short")]
    PartLengthsCut(usize),
    #[error("compressed part {0} is cut short")]
    PartCut(usize),
    #[error("{0} bytes follow its compressed parts")]
    AfterParts(usize),
    #[error(
        "it claims {len} bytes once decompressed from {stored} stored, more than {MAX_EXPANSION} times as many (rocflow's compressed frames expand about 10 times)"
    )]
    Expansion { len: usize, stored: usize },
    #[error("compressed part {part} holds {held} bytes, not {wanted}")]
    PartSize {
        part: usize,
        held: usize,
        wanted: usize,
    },
    #[error("compressed part {part}: {reason}")]
    Zstd { part: usize, reason: String },
    #[error("bad metadata: {0}")]
    Metadata(String),
    #[error("metadata item {item}: {problem}")]
    MetaItem { item: usize, problem: MetaError },
    #[error("bad thread trace: {0}")]
    Trace(#[from] TraceDataError),
    #[error("bad API arguments: {0}")]
    Args(#[from] ArgsError),
    #[error("{0} bytes is not a whole number of marker messages ({MARKER_MESSAGE} bytes each)")]
    PartialMarkers(usize),
    #[error(
        "{len} bytes is not a whole number of {} records ({size} bytes each)",
        .kind.name()
    )]
    PartialRecords {
        len: usize,
        kind: RecordKind,
        size: usize,
    },
}

/// What is wrong with one metadata item of a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetaError {
    #[error("its strings are numbered from {first}, but the stream has numbered {numbered}")]
    StringsGap { first: u64, numbered: u64 },
    #[error("counter `{counter}` has a dimension {dimension} of size 0")]
    EmptyDimension { counter: String, dimension: String },
    #[error(
        "counter `{counter}` claims {instances} instances, more than a frame of its samples holds ({MAX_INSTANCES})"
    )]
    Instances { counter: String, instances: u64 },
}

/// Reads frames one at a time from a byte stream (a spool file or a socket). Each frame
/// is read straight into a buffer that is reused from frame to frame, so nothing is
/// zeroed on the way and memory is not mapped afresh for every frame.
pub struct FrameReader<R> {
    input: R,
    /// What the stream's frames carry, by its format version.
    checksum: Checksum,
    /// The stream's format version.
    version: u16,
    /// Whether its frames may be stored compressed: a kept stream's, from version 3 on. A
    /// live stream's frames are as the tool sent them.
    compressed: bool,
    /// Whether it may record its end: a kept stream's, from [`ENDS_RECORDED`] on.
    ends: bool,
    /// Whether its end was read: no frame follows.
    ended: bool,
    /// Offset of the next frame from the start of the stream.
    offset: u64,
    /// The last frame's bytes, for [`FrameReader::next_frame`].
    bytes: Vec<u8>,
    /// Per stream, how many strings its [`Meta::Strings`] items have numbered: an item
    /// continues the numbering or repeats part of it, never leaves a gap (which a reader
    /// would have to fill).
    strings: HashMap<u16, u64>,
}

impl<R: Read> FrameReader<R> {
    /// Reads and checks the stream header, which must be of this version: a live stream,
    /// whose frames are plain, as the tool encodes them, and go into a spool of this
    /// version (compressed there, where the runner compresses it).
    pub fn new(input: R) -> Result<Self, WireError> {
        Self::from_version(input, VERSION, false)
    }

    /// Reads and checks the stream header of a kept stream (a spool), which may be of any
    /// version from [`OLDEST_VERSION`] on. Its frames are for decoding: raw ones are of the
    /// stream's version.
    pub fn kept(input: R) -> Result<Self, WireError> {
        Self::from_version(input, OLDEST_VERSION, true)
    }

    fn from_version(mut input: R, oldest: u16, kept: bool) -> Result<Self, WireError> {
        let mut header = [0; STREAM_HEADER];
        let got = read_full(&mut input, &mut header)?;
        let version = check_stream_header(&header[..got], oldest)?;
        Ok(FrameReader {
            input,
            checksum: Checksum::of_version(version),
            version,
            compressed: kept && version >= 3,
            ends: kept && version >= ENDS_RECORDED,
            ended: false,
            offset: STREAM_HEADER as u64,
            bytes: Vec::new(),
            strings: HashMap::new(),
        })
    }

    /// Offset of the next frame.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The stream's format version.
    pub fn version(&self) -> u16 {
        self.version
    }

    /// Whether the stream's recorded end was read (see [`encode_end`]).
    pub fn end_recorded(&self) -> bool {
        self.ended
    }

    /// The next frame, `None` at a clean end of the stream.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, WireError> {
        let offset = self.offset;
        let mut bytes = std::mem::take(&mut self.bytes);
        let read = self.next_raw(&mut bytes);
        let frame = match read {
            Ok(true) => self
                .numbered(offset, decode_frame(&bytes, self.version))
                .map(Some),
            Ok(false) => Ok(None),
            Err(e) => Err(e),
        };
        self.bytes = bytes;
        frame
    }

    /// Reads the next frames, as many as `raw` has buffers at most (reused from call to
    /// call), and decodes them on rayon's threads: one thread reading a spool decoded
    /// (and decompressed) 11 to 14 M records/s, less than its sinks take. The frames go
    /// to `frames` in order; an error ends them after the frames before it, as
    /// [`FrameReader::next_frame`] would have. Nothing added and `Ok` is the stream's end.
    pub fn next_frames(
        &mut self,
        raw: &mut [Vec<u8>],
        frames: &mut VecDeque<Frame>,
    ) -> Result<(), WireError> {
        let mut offsets = Vec::with_capacity(raw.len());
        let mut read = Ok(());
        for bytes in raw.iter_mut() {
            let offset = self.offset;
            match self.next_raw(bytes) {
                Ok(true) => offsets.push(offset),
                Ok(false) => break,
                Err(e) => {
                    read = Err(e);
                    break;
                }
            }
        }
        let version = self.version;
        let decoded: Vec<_> = raw[..offsets.len()]
            .par_iter()
            .map(|bytes| decode_frame(bytes, version))
            .collect();
        for (offset, frame) in offsets.into_iter().zip(decoded) {
            frames.push_back(self.numbered(offset, frame)?);
        }
        read
    }

    /// A decoded frame, once its strings are checked to continue their numbering, or
    /// why the frame at `offset` is corrupt.
    fn numbered(
        &mut self,
        offset: u64,
        decoded: Result<Frame, FrameError>,
    ) -> Result<Frame, WireError> {
        decoded
            .and_then(|frame| self.number_strings(frame))
            .map_err(|reason| WireError::Corrupt { offset, reason })
    }

    /// Checks that the frame's strings continue its stream's numbering.
    fn number_strings(&mut self, frame: Frame) -> Result<Frame, FrameError> {
        let Payload::Meta(items) = &frame.payload else {
            return Ok(frame);
        };
        let numbered = self.strings.entry(frame.stream).or_default();
        for (i, item) in items.iter().enumerate() {
            if let Meta::Strings { first, values } = item {
                let first = u64::from(*first);
                if first > *numbered {
                    return Err(FrameError::MetaItem {
                        item: i + 1,
                        problem: MetaError::StringsGap {
                            first,
                            numbered: *numbered,
                        },
                    });
                }
                *numbered = first + values.len() as u64;
            }
        }
        Ok(frame)
    }

    /// Reads the next frame as it was encoded (header and payload) into `frame`, its
    /// checksum verified; `false` at a clean end of the stream, or at its recorded end
    /// (then [`FrameReader::end_recorded`]). Reusing one `frame` for every call spares an
    /// allocation, and its page faults, per frame.
    pub fn next_raw(&mut self, frame: &mut Vec<u8>) -> Result<bool, WireError> {
        if self.ended {
            return Ok(false);
        }
        let offset = self.offset;
        let mut header = [0; FRAME_HEADER];
        match read_full(&mut self.input, &mut header)? {
            0 => return Ok(false),
            n if n < FRAME_HEADER => {
                return Err(WireError::Truncated {
                    offset,
                    missing: FRAME_HEADER - n,
                });
            }
            _ => {}
        }
        let corrupt = |reason| WireError::Corrupt { offset, reason };
        let len = check_frame_header(&header, self.compressed, self.ends, self.version)
            .map_err(corrupt)?;
        frame.clear();
        frame.extend_from_slice(&header);
        let got = (&mut self.input).take(len as u64).read_to_end(frame)?;
        if got < len {
            return Err(WireError::Truncated {
                offset,
                missing: len - got,
            });
        }
        let crc = u32::from_le_bytes(header[8..12].try_into().unwrap());
        if self.checksum.of(&header, &frame[FRAME_HEADER..]) != crc {
            return Err(corrupt(FrameError::Checksum));
        }
        self.offset += (FRAME_HEADER + len) as u64;
        if header[0] == END_TAG && self.ends {
            self.read_end(offset, &frame[FRAME_HEADER..])?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Checks the end frame at `offset`, whose payload is `payload`: it names where it is,
    /// and nothing follows it.
    fn read_end(&mut self, offset: u64, payload: &[u8]) -> Result<(), WireError> {
        let corrupt = |reason| WireError::Corrupt { offset, reason };
        let named = u64::from_le_bytes(payload.try_into().expect("checked length"));
        if named != offset {
            return Err(corrupt(FrameError::EndElsewhere(named)));
        }
        let after = self.offset;
        let mut more = [0; 1];
        if read_full(&mut self.input, &mut more)? > 0 {
            return Err(WireError::Corrupt {
                offset: after,
                reason: FrameError::AfterEnd,
            });
        }
        self.ended = true;
        Ok(())
    }
}

/// Sets the stream a raw frame of this version belongs to (the runner numbers each
/// connection), keeping its checksum valid without hashing the payload again: a CRC is
/// linear, so a change of the header changes the checksum by the CRC of that change carried
/// past the payload (as if the payload were zeros).
pub fn set_stream(frame: &mut [u8], stream: u16) {
    let before = crc32fast::hash(&frame[..8]);
    frame[2..4].copy_from_slice(&stream.to_le_bytes());
    let mut change = crc32fast::Hasher::new_with_initial(before ^ crc32fast::hash(&frame[..8]));
    let payload = (frame.len() - FRAME_HEADER) as u64;
    change.combine(&crc32fast::Hasher::new_with_initial_len(0, payload));
    let crc = u32::from_le_bytes(frame[8..12].try_into().unwrap()) ^ change.finalize();
    frame[8..12].copy_from_slice(&crc.to_le_bytes());
}

/// The bytes a record of `kind` takes in a stream of format `version`: its layout's, less
/// the fields later versions added at its end.
pub fn stored_size(kind: RecordKind, version: u16) -> usize {
    let graph_node = match kind {
        RecordKind::KernelDispatch | RecordKind::MemoryCopy => 2 * size_of::<u64>(),
        _ => 0,
    };
    let addresses = match kind {
        RecordKind::MemoryCopy => 2 * size_of::<u64>(),
        _ => 0,
    };
    let hip_stream = match kind {
        RecordKind::KernelDispatch | RecordKind::MemoryCopy => size_of::<u64>(),
        _ => 0,
    };
    match version {
        v if v < GRAPH_NODES_RECORDED => wire_size(kind) - graph_node - addresses - hip_stream,
        v if v < COPY_ADDRESSES_RECORDED => wire_size(kind) - addresses - hip_stream,
        v if v < HIP_STREAMS_RECORDED => wire_size(kind) - hip_stream,
        _ => wire_size(kind),
    }
}

/// Decodes a whole frame of a stream of format `version` whose checksum was verified.
pub fn decode_frame(bytes: &[u8], version: u16) -> Result<Frame, FrameError> {
    let (header, stored) = bytes.split_at(FRAME_HEADER);
    let tag = header[0];
    let stream = u16::from_le_bytes([header[2], header[3]]);
    let payload = match Encoding::of(header[1], true)? {
        Encoding::Plain => Cow::Borrowed(stored),
        Encoding::Zstd => Cow::Owned(decompress(stored)?),
    };
    let payload = &payload[..];
    let payload = if tag == META_TAG {
        let items: Vec<Meta> =
            serde_json::from_slice(payload).map_err(|e| FrameError::Metadata(e.to_string()))?;
        for (i, item) in items.iter().enumerate() {
            check_meta(item).map_err(|problem| FrameError::MetaItem {
                item: i + 1,
                problem,
            })?;
        }
        Payload::Meta(items)
    } else if tag == ARGS_TAG {
        Payload::Args(ApiArgs::decode(payload)?)
    } else if tag == TRACE_TAG {
        Payload::Trace(TraceData::decode(payload)?)
    } else if tag == MARKERS_TAG {
        Payload::Meta(vec![decode_markers(payload)?])
    } else {
        let kind = *RecordKind::ALL
            .get(usize::from(tag - 1))
            .ok_or(FrameError::UnknownTag(tag))?;
        let size = stored_size(kind, version);
        let batch =
            Batch::decode_stored(kind, payload, size).ok_or(FrameError::PartialRecords {
                len: payload.len(),
                kind,
                size,
            })?;
        Payload::Records(batch)
    };
    Ok(Frame { stream, payload })
}

/// Checks what a metadata item says against what a stream can hold, before a reader sizes
/// anything by it. A counter's dimensions each have a size of at least 1, so no part of
/// its shape is larger than the whole.
fn check_meta(item: &Meta) -> Result<(), MetaError> {
    let Meta::Counter(counter) = item else {
        return Ok(());
    };
    let name = &counter.name;
    if let Some((dimension, _)) = counter.dimensions.iter().find(|(_, size)| *size == 0) {
        return Err(MetaError::EmptyDimension {
            counter: name.clone(),
            dimension: dimension.clone(),
        });
    }
    match counter.instances() {
        instances if instances > MAX_INSTANCES => Err(MetaError::Instances {
            counter: name.clone(),
            instances,
        }),
        _ => Ok(()),
    }
}

/// Reads until `buf` is full or the input ends; returns how many bytes were read.
pub(crate) fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ApiCall;

    /// A frame filled in place, in a buffer that held an earlier frame, is the frame of the
    /// same records encoded at once, and reads back as them: its checksum, taken a stretch
    /// at a time, is the whole frame's.
    #[test]
    fn a_frame_filled_in_place_is_the_frame_of_its_records() {
        let records = 3 * CHECKSUM_STRETCH / ApiCall::SIZE + 5;
        let calls: Vec<ApiCall> = (0..records as u32)
            .map(|i| ApiCall {
                pid: 7,
                tid: 8 + i,
                start_ns: 100 * u64::from(i),
                end_ns: 100 * u64::from(i) + 50,
                correlation_id: u64::from(i) + 1,
                operation_id: 41,
                ..ApiCall::default()
            })
            .collect();
        // A buffer kept for reuse: cleared, with room left from its last frame.
        let mut used = vec![0xee; 500];
        used.clear();
        let mut frame = RecordsFrame::new(used);
        calls.iter().for_each(|&call| frame.push(call));
        let bytes = frame.finish(3);

        let mut at_once = Vec::new();
        encode_records(3, &Batch::Api(calls.clone()), &mut at_once);
        assert_eq!(bytes, at_once);
        let mut stream = stream_header().to_vec();
        stream.extend_from_slice(&bytes);
        let read = FrameReader::new(&stream[..]).unwrap().next_frame().unwrap();
        assert_eq!(
            read,
            Some(Frame {
                stream: 3,
                payload: Payload::Records(Batch::Api(calls))
            })
        );
    }
}
