//! The calls' positions by process and correlation id, for the rules that find an
//! operation's caller. The SDK numbers a process's correlation ids from 1 on, one per call
//! and operation, so a process's ids fill a range about as large as its calls: a slot per
//! id of the range, filled in parallel, takes 4 bytes a call and no hashing. A hash map
//! built one call at a time, and the rules' look-ups in it, were the largest part of
//! `rocflow analyze` (a fifth of its profile on 2 M records); with slots, 20 M records
//! took 2.9 s instead of 4.0-4.3 on 16 cores, and 1.35 GB instead of 1.70 at the peak.
//! Ids too sparse for slots (a hostile or merged input) are hashed.

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;
use rustc_hash::FxHashMap;

/// Slots a process may have per call before its ids are hashed instead: a range at most
/// this many times its calls, plus a little for a process of few calls.
const SLOTS_PER_CALL: u64 = 4;
const SLOTS_SPARE: u64 = 1 << 16;

#[derive(Debug, Default)]
pub struct CallIndex(FxHashMap<u32, Ids>);

#[derive(Debug)]
enum Ids {
    /// From id `first` on, each id's call's position plus one (0: no call).
    Slots {
        first: u64,
        slots: Vec<u32>,
    },
    Hashed(FxHashMap<u64, u32>),
}

/// A process's calls: how many, and the range of their ids.
#[derive(Clone, Copy)]
struct Extent {
    calls: u64,
    first: u64,
    last: u64,
}

impl CallIndex {
    /// The positions of `calls`, each of the process and correlation id `key` gives.
    /// Where two calls share a process and id, the later one is found.
    pub fn of<C: Sync>(calls: &[C], key: impl Fn(&C) -> (u32, u64) + Sync) -> CallIndex {
        let extents = (calls.par_iter())
            .fold(FxHashMap::default, |mut extents, call| {
                let (pid, id) = key(call);
                add(&mut extents, pid, one(id));
                extents
            })
            .reduce(FxHashMap::default, |mut all, part| {
                for (pid, extent) in part {
                    add(&mut all, pid, extent);
                }
                all
            });
        let mut slotted: FxHashMap<u32, (u64, Vec<AtomicU32>)> = FxHashMap::default();
        let mut index = FxHashMap::default();
        for (pid, e) in extents {
            let range = e.last - e.first;
            if range < e.calls.saturating_mul(SLOTS_PER_CALL) + SLOTS_SPARE {
                let slots = (0..=range).map(|_| AtomicU32::new(0)).collect();
                slotted.insert(pid, (e.first, slots));
            } else {
                index.insert(pid, Ids::Hashed(FxHashMap::default()));
            }
        }
        (calls.par_iter().enumerate()).for_each(|(i, call)| {
            let (pid, id) = key(call);
            if let Some((first, slots)) = slotted.get(&pid) {
                // The later call of an id wins, whichever thread comes first.
                slots[(id - first) as usize].fetch_max(i as u32 + 1, Ordering::Relaxed);
            }
        });
        // Hashed in order, so that the later call of an id wins. `index` holds only the
        // hashed processes so far: where every process has slots, as SDK runs give, no
        // call is looked at again.
        if !index.is_empty() {
            for (i, call) in calls.iter().enumerate() {
                let (pid, id) = key(call);
                if let Some(Ids::Hashed(ids)) = index.get_mut(&pid) {
                    ids.insert(id, i as u32);
                }
            }
        }
        for (pid, (first, slots)) in slotted {
            let slots = slots.into_iter().map(AtomicU32::into_inner).collect();
            index.insert(pid, Ids::Slots { first, slots });
        }
        CallIndex(index)
    }

    /// The position of process `pid`'s call `correlation_id`.
    pub fn get(&self, pid: u32, correlation_id: u64) -> Option<usize> {
        match self.0.get(&pid)? {
            Ids::Slots { first, slots } => {
                let slot =
                    *slots.get(usize::try_from(correlation_id.checked_sub(*first)?).ok()?)?;
                (slot as usize).checked_sub(1)
            }
            Ids::Hashed(ids) => ids.get(&correlation_id).map(|&i| i as usize),
        }
    }
}

fn one(id: u64) -> Extent {
    Extent {
        calls: 1,
        first: id,
        last: id,
    }
}

fn add(extents: &mut FxHashMap<u32, Extent>, pid: u32, more: Extent) {
    extents
        .entry(pid)
        .and_modify(|e| {
            e.calls += more.calls;
            e.first = e.first.min(more.first);
            e.last = e.last.max(more.last);
        })
        .or_insert(more);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call of process `pid`, as its key.
    fn call(pid: u32, correlation_id: u64) -> (u32, u64) {
        (pid, correlation_id)
    }

    /// Dense ids take slots and sparse ones a hash, and both find each call where the
    /// hash map of every call did: the later of two calls of one id, none for an id
    /// no call has, in another process or past either end of the range.
    #[test]
    fn each_call_is_found_by_process_and_id_dense_or_sparse() {
        let mut calls: Vec<(u32, u64)> = (1..=5000).map(|id| call(1, id)).collect();
        calls.extend([7, 1 << 40, 3, u64::MAX].map(|id| call(2, id)));
        calls.push(call(1, 42));
        calls.extend((0..3000).map(|i| call(3, 10 + 2 * i)));
        let index = CallIndex::of(&calls, |&key| key);
        let expected: FxHashMap<(u32, u64), usize> = (calls.iter().enumerate())
            .map(|(i, &key)| (key, i))
            .collect();
        assert!(matches!(index.0[&1], Ids::Slots { .. }));
        assert!(matches!(index.0[&2], Ids::Hashed(_)));
        assert!(matches!(index.0[&3], Ids::Slots { .. }));
        for (&(pid, id), &i) in &expected {
            assert_eq!(index.get(pid, id), Some(i), "process {pid}, id {id}");
        }
        assert_eq!(index.get(1, 42), Some(5004), "the later call of an id");
        for (pid, id) in [
            (1, 0),
            (1, 5001),
            (2, 8),
            (3, 11),
            (3, 9),
            (4, 1),
            (3, u64::MAX),
        ] {
            assert_eq!(index.get(pid, id), None, "process {pid}, id {id}");
        }
    }
}
