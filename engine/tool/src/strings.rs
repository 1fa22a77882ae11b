//! The stream's string table, as far as the tool fills it: each distinct string gets the
//! next [`Sym`] once, and goes out as metadata before the first frame that uses it.
//! Numbering starts after the empty string, which initialize sends as `Sym(0)`.

use std::cell::RefCell;
use std::sync::{Mutex, MutexGuard};

use rustc_hash::FxHashMap;

use rocflow_core::record::{Meta, Sym};

use crate::guard::{entry, locked};
use crate::stream;

pub struct Table {
    ids: FxHashMap<Box<[u8]>, Sym>,
    /// Numbered, not sent yet.
    pending: Vec<String>,
    next: u32,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

/// The table, locked: a call's strings are interned under one lock.
pub fn lock() -> MutexGuard<'static, Option<Table>> {
    locked(TABLE.lock())
}

impl Table {
    /// The table behind a lock, made at first use.
    pub fn of(guard: &mut Option<Table>) -> &mut Table {
        guard.get_or_insert_with(|| Table {
            ids: FxHashMap::default(),
            pending: Vec::new(),
            next: 1,
        })
    }

    /// The id of `bytes` (its text with invalid UTF-8 replaced), numbering it if new;
    /// `make` gives the text a new string is sent as.
    pub fn intern(&mut self, bytes: &[u8], make: impl FnOnce(&str) -> String) -> Sym {
        if let Some(&sym) = self.ids.get(bytes) {
            return sym;
        }
        let sym = Sym(self.next);
        self.next += 1;
        self.ids.insert(bytes.into(), sym);
        self.pending.push(make(&String::from_utf8_lossy(bytes)));
        sym
    }

    /// Sends the strings numbered since the last time, under the table's lock.
    pub fn send_new(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let values = std::mem::take(&mut self.pending);
        let first = self.next - values.len() as u32;
        stream::send_meta(vec![Meta::Strings { first, values }]);
    }
}

/// Sends the strings numbered since the last call. A thread calls it before sending frames
/// that use its strings; since it sends every thread's under the table's lock, a string
/// another thread numbered is out before any frame that found it numbered.
pub fn send_new() {
    if let Some(table) = lock().as_mut() {
        table.send_new();
    }
}

thread_local! {
    /// The table, held by the thread that forks while it forks.
    static HELD: RefCell<Option<MutexGuard<'static, Option<Table>>>> = const { RefCell::new(None) };
}

/// `pthread_atfork` prepare handler, run before the stream's (strings are sent under the
/// table's lock, then the stream's): a child never inherits the table locked by a thread it
/// does not have.
pub extern "C" fn before_fork() {
    entry("strings::before_fork", (), || {
        HELD.with(|held| *held.borrow_mut() = Some(lock()));
    });
}

/// `pthread_atfork` parent and child handler. Not guarded: it cannot panic, and must let
/// go of the table even if the tool was switched off since the prepare handler.
pub extern "C" fn after_fork() {
    HELD.with(|held| held.borrow_mut().take());
}
