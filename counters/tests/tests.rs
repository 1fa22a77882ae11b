//! The `rocflow-counters` crate's tests, one binary (`cargo test -p rocflow-counters --test
//! integration`), a module a file; what they share is the `support` crate (tests/support
//! at the top, with the engine's tests).

mod check;
mod definitions;
mod eval;
mod migrate;

/// A file here that is not a module above would never be built, let alone run.
#[test]
fn every_test_file_is_a_module() {
    support::assert_every_file_is_a_module(&support::repo().join("counters/tests/tests.rs"));
}
