//! Mutations that know the spool's framing. Random bytes almost never survive a frame's
//! CRC-32, so most mutations change one frame (its header or payload, or which frames there
//! are) and the checksums are recomputed: the decoders behind the checksum see the damage.
//! A few mutate the raw bytes, checksums and lengths included, for the framing itself.

use rocflow::wire::{self, FRAME_HEADER, STREAM_HEADER};

use crate::mutate::{self, Grammar, Numbers};
use crate::rng::Rng;

/// Fragments of metadata frames (JSON arrays of items tagged by `type`): whole items with
/// sizes and ids at their limits, and the keys and values items have.
const META_TOKENS: &[&str] = &[
    r#"{"type":"strings","first":4000000000,"values":["x"]},"#,
    r#"{"type":"strings","first":0,"values":[]},"#,
    r#"{"type":"counter","id":0,"agent":0,"name":"SQ_WAVES","description":"","dimensions":[["DIMENSION_XCC",4000000000]]},"#,
    r#"{"type":"dropped","kind":"kernel_dispatch","count":18446744073709551615},"#,
    r#"{"type":"exit","signal":-1},"#,
    r#"{"type":"plan","json":"{}"},"#,
    r#""first":"#,
    r#""values":"#,
    r#""dimensions":"#,
    r#""cu_count":0"#,
    r#""simd_count":0"#,
    r#""xcc_count":0"#,
    r#""start_ns":"#,
    r#"null"#,
    r#"-1"#,
    r#"1e999"#,
];

/// A stream split at its frames; bytes after the last whole frame are kept as they are.
struct Spool {
    head: Vec<u8>,
    frames: Vec<Frame>,
    tail: Vec<u8>,
}

#[derive(Clone)]
struct Frame {
    /// Tag, encoding byte and stream: the header less its length and checksum.
    header: [u8; 4],
    payload: Vec<u8>,
}

impl Spool {
    fn split(bytes: &[u8]) -> Spool {
        let (head, mut rest) = bytes.split_at(STREAM_HEADER.min(bytes.len()));
        let mut frames = Vec::new();
        while let Some(frame) = rest.get(..FRAME_HEADER) {
            let len = u32::from_le_bytes(frame[4..8].try_into().unwrap()) as usize;
            let Some(payload) = rest[FRAME_HEADER..].get(..len) else {
                break;
            };
            frames.push(Frame {
                header: frame[..4].try_into().unwrap(),
                payload: payload.to_vec(),
            });
            rest = &rest[FRAME_HEADER + len..];
        }
        Spool {
            head: head.to_vec(),
            frames,
            tail: rest.to_vec(),
        }
    }

    /// The bytes, each frame with its length and checksum made right for the format
    /// version the stream header names.
    fn join(&self) -> Vec<u8> {
        let mut out = self.head.clone();
        let version = match self.head.get(6..8) {
            Some(v) => u16::from_le_bytes([v[0], v[1]]),
            None => wire::VERSION,
        };
        for frame in &self.frames {
            let start = out.len();
            out.extend_from_slice(&frame.header);
            out.extend_from_slice(&(frame.payload.len() as u32).to_le_bytes());
            let crc = wire::checksum(version, &out[start..], &frame.payload);
            out.extend_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&frame.payload);
        }
        out.extend_from_slice(&self.tail);
        out
    }
}

/// The grammars of the two payloads: JSON metadata, and records in fixed binary layouts.
pub struct Payloads {
    meta: Grammar,
    records: Grammar,
}

impl Payloads {
    pub fn new(max_len: usize) -> Payloads {
        Payloads {
            meta: Grammar {
                tokens: META_TOKENS.iter().map(|t| t.as_bytes().to_vec()).collect(),
                words: Vec::new(),
                nests: &[("[", "]"), ("{\"a\":", "}")],
                numbers: Numbers::Text,
                max_len,
            },
            records: Grammar {
                tokens: Vec::new(),
                words: Vec::new(),
                nests: &[],
                numbers: Numbers::Binary,
                max_len,
            },
        }
    }
}

/// Mutates a spool: one to four frame-level changes with checksums recomputed, or now
/// and then damage to the raw bytes.
pub fn havoc(input: &[u8], others: &[Vec<u8>], payloads: &Payloads, rng: &mut Rng) -> Vec<u8> {
    if rng.one_in(8) {
        return mutate::havoc(input, others, &payloads.records, rng);
    }
    let mut spool = Spool::split(input);
    for _ in 0..rng.count(4) {
        mutate_frames(&mut spool, others, payloads, rng);
    }
    let mut out = spool.join();
    out.truncate(payloads.records.max_len);
    out
}

fn mutate_frames(spool: &mut Spool, others: &[Vec<u8>], payloads: &Payloads, rng: &mut Rng) {
    let frames = &mut spool.frames;
    if frames.is_empty() {
        return;
    }
    let at = rng.below(frames.len());
    match rng.below(8) {
        0..=3 => {
            let frame = &mut frames[at];
            let grammar = match frame.header[0] {
                0 => &payloads.meta,
                _ => &payloads.records,
            };
            frame.payload = mutate::havoc(&frame.payload, &[], grammar, rng);
        }
        4 => {
            let header = &mut frames[at].header;
            match rng.below(3) {
                0 => header[0] = rng.below(14) as u8,
                1 => header[1] = rng.next_u64() as u8,
                _ => header[2..4].copy_from_slice(&rng.pick(&[0u16, 1, 2, u16::MAX]).to_le_bytes()),
            }
        }
        5 => {
            let copies = vec![frames[at].clone(); rng.count(64)];
            let to = rng.below(frames.len() + 1);
            frames.splice(to..to, copies);
        }
        6 => {
            frames.remove(at);
        }
        _ => {
            // A frame of another spool: metadata and records meet that never met.
            let Some(other) = rng.choose(others) else {
                return;
            };
            let donor = Spool::split(other).frames;
            if let Some(frame) = rng.choose(&donor) {
                frames.insert(at, frame.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocflow::record::Meta;
    use rocflow::spool::{Ending, SpoolReader};
    use rocflow::wire;

    fn spool() -> Vec<u8> {
        let mut bytes = wire::stream_header().to_vec();
        let strings = Meta::Strings {
            first: 0,
            values: vec!["a".into()],
        };
        wire::encode_meta(0, &[strings], &mut bytes);
        wire::encode_meta(1, &[], &mut bytes);
        bytes
    }

    #[test]
    fn split_and_join_give_the_bytes_back() {
        let bytes = spool();
        let split = Spool::split(&bytes);
        assert_eq!(split.frames.len(), 2);
        assert_eq!(split.join(), bytes);
        let mut cut = bytes.clone();
        cut.truncate(bytes.len() - 3);
        assert_eq!(Spool::split(&cut).join(), cut);
    }

    #[test]
    fn frame_mutations_keep_checksums_right() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.rfraw");
        let (bytes, payloads) = (spool(), Payloads::new(1 << 16));
        let mut rng = Rng::new(2);
        for _ in 0..200 {
            let mut split = Spool::split(&bytes);
            mutate_frames(
                &mut split,
                std::slice::from_ref(&bytes),
                &payloads,
                &mut rng,
            );
            std::fs::write(&path, split.join()).unwrap();
            let mut reader = SpoolReader::open(&path).unwrap();
            reader.by_ref().for_each(drop);
            if let Some(Ending::Corrupt { reason, .. }) = reader.ending() {
                assert_ne!(*reason, wire::FrameError::Checksum);
            }
        }
    }
}
