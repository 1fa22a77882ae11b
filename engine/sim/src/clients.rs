//! The SDK's rules for several tools in one process, as AMD's registration code has them:
//! which tools `ROCP_TOOL_LIBRARIES` names, in which order they are configured (the
//! priority each is told), and which tool owns a context (the one initializing when it
//! was created), so that a tool finalizing early stops its own contexts and no other's.

use std::sync::atomic::{AtomicU32, Ordering};

/// The tool libraries a `ROCP_TOOL_LIBRARIES` value names, as rocprofiler-sdk 1.0 reads
/// it: one entry without a `:`; with one, only the entries a `:` follows (`a:b` names `a`
/// alone, `a:b:` both), empty ones skipped.
pub fn tool_list(value: &str) -> Vec<&str> {
    let mut entries: Vec<&str> = value.split(':').collect();
    if entries.len() > 1 {
        // What follows the last `:` is not read.
        entries.pop();
    }
    entries.retain(|entry| !entry.is_empty());
    entries
}

/// The client whose initialize runs (0: none); contexts created meanwhile are its own.
static INITIALIZING: AtomicU32 = AtomicU32::new(0);

/// Runs `f` as client `client`'s initialize.
pub fn initializing_as<T>(client: u32, f: impl FnOnce() -> T) -> T {
    INITIALIZING.store(client, Ordering::Release);
    let result = f();
    INITIALIZING.store(0, Ordering::Release);
    result
}

/// The client initializing now, which owns the contexts it creates.
pub fn initializing() -> u32 {
    INITIALIZING.load(Ordering::Acquire)
}

#[cfg(test)]
mod tests {
    use super::tool_list;

    #[test]
    fn the_last_entry_of_a_list_is_read_only_when_a_colon_follows_it() {
        assert_eq!(tool_list(""), Vec::<&str>::new());
        assert_eq!(tool_list("a.so"), ["a.so"]);
        assert_eq!(tool_list("a.so:b.so"), ["a.so"]);
        assert_eq!(tool_list("a.so:b.so:"), ["a.so", "b.so"]);
        assert_eq!(tool_list("a.so::b.so:"), ["a.so", "b.so"]);
        assert_eq!(tool_list(":a.so"), Vec::<&str>::new());
    }
}
