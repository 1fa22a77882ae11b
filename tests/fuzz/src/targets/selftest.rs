//! A target that fails on purpose, as its input says, so the harness's tests can check
//! that every kind of failure is caught, saved and named. Its seed is harmless and its one
//! token is `panic`: a campaign finds that failure within a few inputs.

use std::hint::black_box;

use super::{Shape, Target};

pub const TARGET: Target = Target {
    name: "selftest",
    run: |input, _| fail(input),
    seeds: &["tests/fuzz/corpus/selftest"],
    shape: Shape::Text,
    tokens: &["panic"],
    nests: &[],
    extension: "txt",
};

fn fail(input: &[u8]) -> String {
    let says = |word: &str| input.windows(word.len()).any(|w| w == word.as_bytes());
    if says("panic") {
        panic!("the self-test panics");
    }
    if says("hang") {
        loop {
            std::thread::park();
        }
    }
    if says("deep") {
        return depth(u64::MAX).to_string();
    }
    if says("allocate") {
        return black_box(Vec::<u8>::with_capacity(96 << 30))
            .capacity()
            .to_string();
    }
    "fine".into()
}

/// Recurses until the stack runs out; the frame's array, used after the call, keeps it
/// from becoming a loop.
fn depth(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let frame = black_box([n; 32]);
    depth(n - 1) + frame[31]
}
