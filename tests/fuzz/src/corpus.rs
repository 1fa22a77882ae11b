//! The inputs a campaign mutates: the target's seeds, and the inputs that led somewhere no
//! input had led before.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;

use crate::rng::Rng;
use crate::targets::{Target, root};

/// Inputs kept beyond the seeds, at most; a new one then takes the place of an old one.
const FOUND: usize = 512;

/// The seeds of `target`, in path order so that a campaign is the same on every machine.
pub fn seeds(target: &Target) -> std::io::Result<Vec<Vec<u8>>> {
    let mut files: Vec<PathBuf> = Vec::new();
    for place in target.seeds {
        let path = root().join(place);
        if path.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                let path = entry?.path();
                if path.is_file() {
                    files.push(path);
                }
            }
        } else {
            files.push(path);
        }
    }
    files.sort();
    files.iter().map(std::fs::read).collect()
}

pub struct Corpus {
    entries: Vec<Vec<u8>>,
    seeds: usize,
    seen: HashSet<u64>,
}

impl Corpus {
    pub fn new(seeds: Vec<Vec<u8>>) -> Corpus {
        Corpus {
            seeds: seeds.len(),
            entries: seeds,
            seen: HashSet::new(),
        }
    }

    pub fn entries(&self) -> &[Vec<u8>] {
        &self.entries
    }

    /// An entry to mutate: the shorter of two drawn, so that inputs grown by earlier
    /// mutations do not come to take all the time.
    pub fn pick(&self, rng: &mut Rng) -> &[u8] {
        let (a, b) = (rng.pick(&self.entries), rng.pick(&self.entries));
        if a.len() <= b.len() { a } else { b }
    }

    /// How many inputs were kept beyond the seeds.
    pub fn found(&self) -> usize {
        self.entries.len() - self.seeds
    }

    /// Notes an outcome; whether any of its lines is new.
    pub fn saw(&mut self, outcome: &str) -> bool {
        // Every line is noted, not only up to the first new one.
        let mut new = false;
        for line in outcome.lines() {
            new |= self.seen.insert(fingerprint(line));
        }
        new
    }

    /// Notes what `input` led to, and keeps it if no input led there before.
    pub fn observe(&mut self, input: Vec<u8>, outcome: &str, rng: &mut Rng) {
        if !self.saw(outcome) {
            return;
        }
        if self.found() < FOUND {
            self.entries.push(input);
        } else {
            let old = self.seeds + rng.below(FOUND);
            self.entries[old] = input;
        }
    }
}

/// What a line of an outcome says, less what the input chose: quoted text (names, values) and
/// digits (offsets, counts, lines) are left out, so inputs are told apart by what
/// happened to them rather than by what they were called.
fn fingerprint(outcome: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    let mut closing = None;
    for c in outcome.chars() {
        match (closing, c) {
            (Some(close), c) if c == close => closing = None,
            (Some(_), _) => {}
            (None, '`' | '"') => closing = Some(c),
            (None, c) if c.is_ascii_digit() => {}
            (None, c) => c.hash(&mut hasher),
        }
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_differing_in_names_and_numbers_are_the_same() {
        assert_eq!(
            fingerprint("line 3: unknown key `tracng`"),
            fingerprint("line 17: unknown key `sinks`")
        );
        assert_ne!(
            fingerprint("unknown key `a`"),
            fingerprint("duplicate key `a`")
        );
    }

    #[test]
    fn only_new_outcomes_keep_their_input() {
        let mut rng = Rng::new(1);
        let mut corpus = Corpus::new(vec![b"seed".to_vec()]);
        corpus.observe(b"a".to_vec(), "unknown key `a`", &mut rng);
        corpus.observe(b"b".to_vec(), "unknown key `b`", &mut rng);
        corpus.observe(b"c".to_vec(), "bad value\nunknown key `c`", &mut rng);
        corpus.observe(b"d".to_vec(), "bad value", &mut rng);
        assert_eq!(corpus.entries(), [&b"seed"[..], b"a", b"c"]);
        assert_eq!(corpus.found(), 2);
    }
}
