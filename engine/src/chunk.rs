//! A chunk: records of one kind from one stream, as they move through the stages.

use std::borrow::Cow;
use std::sync::Arc;

use crate::catalog::StreamMeta;
use crate::record::{ApiArgs, Arg, Batch};

/// Records a chunk holds at most, but for the values of one dispatch's counters, which
/// stay together: enough to amortize each stage's work per chunk, few enough that a
/// window's chunks spread over the cores. Sources send frames no larger; larger frames
/// (an SDK buffer delivers up to its whole size at once) are cut into chunks of it.
pub const MAX_RECORDS: usize = 16 * 1024;

#[derive(Debug, Clone)]
pub struct Chunk {
    /// The stream (process connection) the records came from; ids in them refer to its
    /// metadata.
    pub stream: u16,
    pub batch: Batch,
    /// Columns added by `derive` transforms, one value per record.
    pub extra: Vec<Extra>,
    /// The API calls' arguments, by correlation id, where the context collects them.
    pub args: Option<Arc<ApiArgs>>,
}

/// An API call's argument as sinks write it: the SDK's texts.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgText<'a> {
    pub position: u8,
    pub name: &'a str,
    pub type_name: &'a str,
    pub value: Cow<'a, str>,
}

#[derive(Debug, Clone)]
pub struct Extra {
    pub name: Arc<str>,
    pub values: Vec<evalexpr::Value>,
}

impl Chunk {
    pub fn new(stream: u16, batch: Batch) -> Chunk {
        Chunk {
            stream,
            batch,
            extra: Vec::new(),
            args: None,
        }
    }

    pub fn len(&self) -> usize {
        self.batch.len()
    }

    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// The added column `name`, if a transform derived it.
    pub fn extra(&self, name: &str) -> Option<&Extra> {
        self.extra.iter().find(|e| &*e.name == name)
    }

    /// The arguments of record `i`, if it is an API call whose context collected them.
    pub fn call_args(&self, i: usize) -> Option<&[Arg]> {
        let Batch::Api(calls) = &self.batch else {
            return None;
        };
        self.args.as_ref()?.of(calls[i].correlation_id)
    }

    /// [`Chunk::call_args`] with their strings resolved in `meta`, its stream's metadata.
    pub fn args<'a>(
        &'a self,
        i: usize,
        meta: &'a StreamMeta,
    ) -> Option<impl Iterator<Item = ArgText<'a>> + 'a> {
        Some(self.call_args(i)?.iter().map(|a| ArgText {
            position: a.position,
            name: meta.string(a.name),
            type_name: meta.string(a.type_name),
            value: a.value.text(|sym| meta.string(sym)),
        }))
    }

    /// Keeps record `i` where `keep[i]`, with its added columns.
    pub fn retain(&mut self, keep: &[bool]) {
        debug_assert_eq!(keep.len(), self.len());
        if keep.iter().all(|&k| k) {
            return;
        }
        self.batch.retain_indexed(|i| keep[i]);
        for extra in &mut self.extra {
            let mut i = 0;
            extra.values.retain(|_| {
                i += 1;
                keep[i - 1]
            });
        }
    }
}
