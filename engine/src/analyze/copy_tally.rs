//! Copies tallied per API call and direction, as the copy rules state them.

use std::collections::BTreeMap;

use super::finding::Evidence;
use super::trace::Transfer;

/// Tallies by the API call that copied and the copy's direction.
pub type ByCall<'a, T> = BTreeMap<(&'a str, &'static str), T>;

/// Copies of one API call in one direction: how many, their bytes and their time.
#[derive(Debug, Default, Clone, Copy)]
pub struct CopyTally {
    pub copies: u64,
    pub bytes: u64,
    pub ns: u64,
}

impl CopyTally {
    pub fn add(&mut self, copy: &Transfer) {
        self.copies += 1;
        self.bytes = self.bytes.saturating_add(copy.bytes);
        self.ns = self.ns.saturating_add(copy.span.len());
    }

    /// The tally as a finding's evidence for the copies `function` made.
    pub fn evidence(&self, function: &str, direction: &'static str) -> Evidence {
        Evidence::Copy {
            direction,
            function: function.to_owned(),
            copies: self.copies,
            bytes: self.bytes,
            total_ns: self.ns,
        }
    }
}
