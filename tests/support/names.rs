//! What a spool's metadata names, read the way a sink's output is checked against: on its
//! own, not through the runner's catalog.

use std::collections::HashMap;

use rocflow_core::record::{Meta, Sym};

/// The names a spool's metadata gives, stream by stream, as the spool goes on: kernels and
/// counters by id, and the strings records refer to.
#[derive(Debug, Default)]
pub struct Names {
    kernels: HashMap<(u16, u64), String>,
    counters: HashMap<(u16, u32), String>,
    strings: HashMap<u16, Vec<String>>,
}

impl Names {
    /// Takes in the metadata `items` of stream `stream`; what they do not name is passed
    /// over.
    pub fn learn(&mut self, stream: u16, items: Vec<Meta>) {
        for item in items {
            match item {
                Meta::KernelSymbol(k) => {
                    self.kernels.insert((stream, k.kernel_id), k.name);
                }
                Meta::Counter(c) => {
                    self.counters.insert((stream, c.id), c.name);
                }
                Meta::Strings { first, values } => {
                    let table = self.strings.entry(stream).or_default();
                    table.truncate(first as usize);
                    table.extend(values);
                }
                _ => {}
            }
        }
    }

    /// The kernel `id` of stream `stream`, as its symbol names it.
    pub fn kernel(&self, stream: u16, id: u64) -> &str {
        &self.kernels[&(stream, id)]
    }

    pub fn counter(&self, stream: u16, id: u32) -> &str {
        &self.counters[&(stream, id)]
    }

    /// The string `sym` of stream `stream` (a marker's message).
    pub fn string(&self, stream: u16, sym: Sym) -> &str {
        &self.strings[&stream][sym.0 as usize]
    }
}
