//! Records into frames: each process's records gathered per kind into batches of
//! [`MAX_RECORDS`], sent with the strings they name (marker messages, argument names and
//! values) in a metadata frame before them, and API calls' arguments in the frame the
//! wire format puts just before their records.

use rustc_hash::FxHashMap as HashMap;

use crate::chunk::MAX_RECORDS;
use crate::record::{ApiArgs, Arg, ArgValue, Batch, Meta, RecordKind, Sym};
use crate::wire::{Frame, Payload};

/// The consumer is gone: stop reading.
#[derive(Debug)]
pub struct Stopped;

/// Where frames go; `false` when the consumer is gone.
pub type Out<'a> = &'a mut dyn FnMut(Frame) -> bool;

/// The records of one set of tables on their way out, per stream.
pub struct Emitter<'a> {
    send: Out<'a>,
    streams: HashMap<u16, Pending>,
}

#[derive(Default)]
struct Pending {
    /// The stream's strings, numbered as sent; `""` is 0.
    strings: HashMap<String, u32>,
    /// Strings not sent yet, from `next_string - new.len()`.
    new: Vec<String>,
    /// By kind, in the order of [`RecordKind::ALL`]: a lookup per record.
    batches: [Option<Batch>; RecordKind::ALL.len()],
    args: ApiArgs,
}

impl<'a> Emitter<'a> {
    pub fn new(send: Out<'a>) -> Self {
        Emitter {
            send,
            streams: HashMap::default(),
        }
    }

    /// Sends a stream's metadata.
    pub fn meta(&mut self, stream: u16, items: Vec<Meta>) -> Result<(), Stopped> {
        let pending = self.streams.entry(stream).or_default();
        // The empty string is 0: a marker without a message names it.
        pending.strings.insert(String::new(), 0);
        let mut all = vec![Meta::Strings {
            first: 0,
            values: vec![String::new()],
        }];
        all.extend(items);
        self.frame(stream, Payload::Meta(all))
    }

    /// The stream's symbol for `text`.
    pub fn sym(&mut self, stream: u16, text: &str) -> Sym {
        let pending = self.streams.entry(stream).or_default();
        if let Some(&sym) = pending.strings.get(text) {
            return Sym(sym);
        }
        let sym = pending.strings.len() as u32;
        pending.strings.insert(text.to_owned(), sym);
        pending.new.push(text.to_owned());
        Sym(sym)
    }

    /// Adds the arguments of the API call `correlation_id` of `stream`, which [`Emitter::push`]
    /// adds next: `(position, type, name, value)`.
    pub fn args(
        &mut self,
        stream: u16,
        correlation_id: u64,
        args: &[(u8, String, String, String)],
    ) {
        let syms: Vec<Arg> = args
            .iter()
            .map(|(position, type_name, name, value)| Arg {
                position: *position,
                name: self.sym(stream, name),
                type_name: self.sym(stream, type_name),
                value: ArgValue::number(value)
                    .unwrap_or_else(|| ArgValue::Text(self.sym(stream, value))),
            })
            .collect();
        let pending = self.streams.entry(stream).or_default();
        pending.args.begin(correlation_id);
        for arg in syms {
            pending.args.push(arg);
        }
    }

    /// Adds records of a kind to `stream`, with `add` pushing onto its batch; sends the
    /// batch when it is full.
    pub fn push(
        &mut self,
        stream: u16,
        kind: RecordKind,
        add: impl FnOnce(&mut Batch),
    ) -> Result<(), Stopped> {
        self.hold(stream, kind, add);
        self.flush_unless_room(stream, kind, 1)
    }

    /// Adds records as [`Emitter::push`] does, but keeps them with the next ones however
    /// full the batch: for records that must reach the stages in one batch (a dispatch's
    /// counter values), sent with [`Emitter::flush_unless_room`] between groups.
    pub fn hold(&mut self, stream: u16, kind: RecordKind, add: impl FnOnce(&mut Batch)) {
        let pending = self.streams.entry(stream).or_default();
        let batch = pending.batches[kind as usize]
            .get_or_insert_with(|| Batch::with_capacity(kind, MAX_RECORDS));
        add(batch);
    }

    /// Sends `stream`'s batch of `kind` if it has no room for `more` records: a batch
    /// that grew past [`MAX_RECORDS`] would be copied whole.
    pub fn flush_unless_room(
        &mut self,
        stream: u16,
        kind: RecordKind,
        more: usize,
    ) -> Result<(), Stopped> {
        let full = (self.streams.get(&stream))
            .and_then(|p| p.batches[kind as usize].as_ref())
            .is_some_and(|b| b.len() + more > MAX_RECORDS);
        if full {
            self.flush(stream, kind)?;
        }
        Ok(())
    }

    /// Sends what is gathered of `kind` for every stream.
    pub fn flush_kind(&mut self, kind: RecordKind) -> Result<(), Stopped> {
        let mut streams: Vec<u16> = self.streams.keys().copied().collect();
        streams.sort_unstable();
        for stream in streams {
            self.flush(stream, kind)?;
        }
        Ok(())
    }

    fn flush(&mut self, stream: u16, kind: RecordKind) -> Result<(), Stopped> {
        let pending = self
            .streams
            .get_mut(&stream)
            .expect("a stream with records");
        let Some(batch) = pending.batches[kind as usize]
            .take()
            .filter(|b| !b.is_empty())
        else {
            return Ok(());
        };
        let strings = std::mem::take(&mut pending.new);
        let args = (kind == RecordKind::Api && !pending.args.is_empty())
            .then(|| std::mem::take(&mut pending.args));
        if !strings.is_empty() {
            let first = (pending.strings.len() - strings.len()) as u32;
            let values = strings;
            self.frame(stream, Payload::Meta(vec![Meta::Strings { first, values }]))?;
        }
        if let Some(args) = args {
            // Arguments find their call through an index that only decoding builds.
            let mut bytes = Vec::new();
            args.encode(&mut bytes);
            let args = ApiArgs::decode(&bytes).expect("arguments decode as encoded");
            self.frame(stream, Payload::Args(args))?;
        }
        self.frame(stream, Payload::Records(batch))
    }

    fn frame(&mut self, stream: u16, payload: Payload) -> Result<(), Stopped> {
        if (self.send)(Frame { stream, payload }) {
            Ok(())
        } else {
            Err(Stopped)
        }
    }
}
