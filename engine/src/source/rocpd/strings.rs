//! One string numbering per stream out of many. Parts of a database are read in parallel,
//! each numbering the strings it sends on its own (from 0, as a stream's numbering
//! starts); the frames of each part pass through here in order, and the strings they name
//! are renumbered into the stream's one numbering, each string sent once.

use rustc_hash::FxHashMap as HashMap;

use crate::record::{Batch, Meta, Sym};
use crate::wire::{Frame, Payload};

/// The strings sent so far, per stream.
#[derive(Default)]
pub struct Strings {
    streams: HashMap<u16, HashMap<String, u32>>,
    /// The part being passed through: per stream, its numbers in the stream's numbering.
    part: HashMap<u16, Vec<u32>>,
}

impl Strings {
    /// The next frames come from another part, with a numbering of its own.
    pub fn next_part(&mut self) {
        self.part.clear();
    }

    /// `frame` of the current part, its strings in the stream's numbering; `None` where
    /// it only sent strings the stream already has.
    pub fn renumber(&mut self, mut frame: Frame) -> Option<Frame> {
        let stream = frame.stream;
        match &mut frame.payload {
            Payload::Meta(items) => {
                for item in items.iter_mut() {
                    if let Meta::Strings { first, values } = item {
                        (*first, *values) = self.add(stream, *first, std::mem::take(values));
                    }
                }
                items.retain(
                    |item| !matches!(item, Meta::Strings { values, .. } if values.is_empty()),
                );
                if items.is_empty() {
                    return None;
                }
            }
            Payload::Args(args) => {
                let map = self.part.get(&stream).map_or(&[][..], Vec::as_slice);
                args.map_strings(|sym| global(map, sym));
            }
            Payload::Records(Batch::Marker(markers)) => {
                let map = self.part.get(&stream).map_or(&[][..], Vec::as_slice);
                for marker in markers {
                    marker.message = global(map, marker.message);
                }
            }
            _ => {}
        }
        Some(frame)
    }

    /// Takes the part's strings numbered from `first`; returns those new to the stream,
    /// with the number of the first.
    fn add(&mut self, stream: u16, first: u32, values: Vec<String>) -> (u32, Vec<String>) {
        let known = self.streams.entry(stream).or_default();
        let map = self.part.entry(stream).or_default();
        map.truncate(first as usize);
        let next = known.len() as u32;
        let mut new = Vec::new();
        for value in values {
            let id = match known.get(&value) {
                Some(&id) => id,
                None => {
                    let id = known.len() as u32;
                    known.insert(value.clone(), id);
                    new.push(value);
                    id
                }
            };
            map.push(id);
        }
        (next, new)
    }
}

/// A part's string in the stream's numbering; one the part never sent stays as it is
/// (the stream's readers name it unknown, as they would have).
fn global(map: &[u32], sym: Sym) -> Sym {
    map.get(sym.0 as usize).map_or(sym, |&id| Sym(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Marker;

    fn strings(stream: u16, first: u32, values: &[&str]) -> Frame {
        let values = values.iter().map(|v| (*v).to_owned()).collect();
        Frame {
            stream,
            payload: Payload::Meta(vec![Meta::Strings { first, values }]),
        }
    }

    fn markers(stream: u16, messages: &[u32]) -> Frame {
        let markers = (messages.iter())
            .map(|&m| Marker {
                message: Sym(m),
                ..Marker::default()
            })
            .collect();
        Frame {
            stream,
            payload: Payload::Records(Batch::Marker(markers)),
        }
    }

    fn sent(frame: Option<Frame>) -> Option<(u32, Vec<String>)> {
        match frame?.payload {
            Payload::Meta(mut items) => match items.remove(0) {
                Meta::Strings { first, values } => Some((first, values)),
                _ => None,
            },
            _ => None,
        }
    }

    fn messages(frame: Option<Frame>) -> Vec<u32> {
        match frame.map(|f| f.payload) {
            Some(Payload::Records(Batch::Marker(m))) => m.iter().map(|m| m.message.0).collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn parts_numbered_apart_share_one_numbering_per_stream() {
        let mut s = Strings::default();
        let owned = |v: &[&str]| v.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            sent(s.renumber(strings(0, 0, &["", "a"]))),
            Some((0, owned(&["", "a"])))
        );
        assert_eq!(messages(s.renumber(markers(0, &[1, 0]))), [1, 0]);
        s.next_part();
        // The next part numbers "b" 1 and "a" 2: only "b" is new to the stream.
        assert_eq!(
            sent(s.renumber(strings(0, 0, &["", "b", "a"]))),
            Some((2, owned(&["b"])))
        );
        assert_eq!(messages(s.renumber(markers(0, &[2, 1, 0]))), [1, 2, 0]);
        // Another stream has a numbering of its own.
        assert_eq!(
            sent(s.renumber(strings(1, 0, &["a"]))),
            Some((0, owned(&["a"])))
        );
        assert_eq!(messages(s.renumber(markers(1, &[0]))), [0]);
        // Strings the stream has already send nothing.
        s.next_part();
        assert!(s.renumber(strings(0, 0, &["a", "b"])).is_none());
        assert_eq!(messages(s.renumber(markers(0, &[1, 0]))), [2, 1]);
    }
}
