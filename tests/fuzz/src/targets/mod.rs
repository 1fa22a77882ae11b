//! What is fuzzed: each target is an entry point of rocflow that reads untrusted or
//! user-written input, with its seeds and the tokens its inputs are made of.

mod counters;
mod import;
mod pipeline;
mod predicate;
mod rocpd;
mod selftest;
mod spool;

use std::path::Path;

/// How a target's inputs are mutated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Text in a language with tokens and brackets.
    Text,
    /// A raw spool: a stream header and checksummed frames.
    Spool,
    /// An SQLite database.
    Database,
}

/// One fuzz target.
pub struct Target {
    pub name: &'static str,
    /// Runs one input. `scratch` is a directory of the target's own for files it needs.
    /// Returns what the input led to, a line per fact (an error, a kind of record read):
    /// an input with a line no input had before is kept to be mutated further.
    pub run: fn(input: &[u8], scratch: &Path) -> String,
    /// Where the seeds are, relative to the workspace root: files, or folders whose files
    /// (not those of their subfolders) are seeds.
    pub seeds: &'static [&'static str],
    pub shape: Shape,
    /// Tokens of the input language for the mutator, besides the seeds' own words.
    pub tokens: &'static [&'static str],
    /// Bracket pairs the language nests.
    pub nests: &'static [(&'static str, &'static str)],
    /// The extension a saved input gets, so an editor or rocflow itself opens it.
    pub extension: &'static str,
}

/// Every target a campaign runs by default.
pub const ALL: &[&Target] = &[
    &spool::SPOOL,
    &spool::WIRE,
    &rocpd::TARGET,
    &pipeline::TARGET,
    &predicate::TARGET,
    &counters::EXPRESSION,
    &counters::DEFINITIONS,
    &import::TARGET,
];

/// The target called `name`, including the self-test, which checks that the harness
/// catches each kind of failure and is never part of a campaign.
pub fn find(name: &str) -> Option<&'static Target> {
    ALL.iter()
        .copied()
        .chain([&selftest::TARGET])
        .find(|t| t.name == name)
}

/// The workspace root, which seed paths and shared files are relative to.
pub fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The messages of diagnostics, a line each, after rendering them with their snippets as
/// the command line does (rendering is code under test too).
fn messages(diagnostics: &[rocflow::diag::Diagnostic]) -> String {
    let lines: Vec<&str> = diagnostics
        .iter()
        .map(|d| {
            d.render(false);
            d.message.as_str()
        })
        .collect();
    lines.join("\n")
}

/// The input as text, invalid UTF-8 replaced: the text parsers are given text, as
/// rocflow gives them what it read from a file.
fn text(input: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(input)
}
