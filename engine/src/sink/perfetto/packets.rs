//! A sequence's packets, encoded in two steps so that one busy track does not hold a window
//! up. The sequence places its events in order, deciding as it goes what only it can
//! (interning, track descriptors); the placed events are then encoded in pieces on every
//! thread, and written in order. The bytes are those the sequence would have written alone.
//!
//! A host thread's calls are a third of a `trace-all` run's records, all on one track: the
//! sequence that placed and encoded them bounded a 16-core replay at about 11 M records/s.

use rayon::prelude::*;

use super::events::{Event, Writer};
use super::proto::Encoder;

/// Events encoded by one task: few, so that a busy track's last pieces of a window do not
/// leave the other threads waiting (a 20 M-record replay on 16 cores: 512 a piece was 6 %
/// faster than 1,024, and 4,096 a piece 13 % slower).
const PIECE: usize = 512;

#[derive(Default)]
pub struct Packets {
    written: Written,
    /// Events placed since they were last encoded.
    placed: Vec<Event>,
    /// Per run of placed events, where in `written.now` its packets go and its end in
    /// `placed`.
    runs: Vec<(usize, usize)>,
}

/// Packets ready to be written: those written as they came, and runs of encoded events
/// between them.
#[derive(Default)]
pub struct Written {
    /// Descriptors, the start of the incremental state, instants.
    now: Encoder,
    /// Runs of encoded events: where in `now` each goes, and its packets, a piece for each
    /// `PIECE` events.
    runs: Vec<(usize, Vec<Encoder>)>,
    /// Pieces of earlier windows, emptied, kept for their buffers.
    spare: Vec<Encoder>,
}

impl Packets {
    /// Where a packet written at once goes: after every event placed so far.
    pub fn now(&mut self) -> &mut Encoder {
        &mut self.written.now
    }

    /// Places an event, to be encoded by [`Packets::encode`].
    pub fn place(&mut self, event: Event) {
        let at = self.written.now.bytes().len();
        self.placed.push(event);
        match self.runs.last_mut() {
            Some((run_at, end)) if *run_at == at => *end += 1,
            _ => self.runs.push((at, self.placed.len())),
        }
    }

    /// Encodes the events placed since the last call, pieces in parallel.
    pub fn encode(&mut self, writer: Writer) {
        let Written { runs, spare, .. } = &mut self.written;
        let first = runs.len();
        let mut start = 0;
        for &(at, end) in &self.runs {
            let pieces = (end - start).div_ceil(PIECE);
            runs.push((
                at,
                (0..pieces)
                    .map(|_| spare.pop().unwrap_or_default())
                    .collect(),
            ));
            start = end;
        }
        let mut start = 0;
        let mut jobs = Vec::new();
        for ((_, end), (_, pieces)) in self.runs.iter().zip(&mut runs[first..]) {
            jobs.extend(self.placed[start..*end].chunks(PIECE).zip(pieces));
            start = *end;
        }
        jobs.into_par_iter().for_each(|(events, out)| {
            events.iter().for_each(|event| event.encode(writer, out));
        });
        self.placed.clear();
        self.runs.clear();
    }

    /// The packets ready to be written: all of them, once [`Packets::encode`] has run.
    pub fn written(&mut self) -> &mut Written {
        debug_assert!(self.placed.is_empty(), "events placed, not encoded");
        &mut self.written
    }
}

impl Written {
    /// Hands the packets to `write` in order.
    pub fn write<E>(&self, mut write: impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        let bytes = self.now.bytes();
        let mut from = 0;
        for (at, pieces) in &self.runs {
            write(&bytes[from..*at])?;
            pieces.iter().try_for_each(|piece| write(piece.bytes()))?;
            from = *at;
        }
        write(&bytes[from..])
    }

    /// Forgets the packets, keeping the buffers.
    pub fn clear(&mut self) {
        self.now.clear();
        for (_, pieces) in self.runs.drain(..) {
            self.spare.extend(pieces.into_iter().map(|mut piece| {
                piece.clear();
                piece
            }));
        }
    }
}
