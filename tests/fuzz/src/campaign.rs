//! A campaign on one target, in a worker process: the seeds first, then inputs mutated
//! from the corpus until the budget is spent or one fails.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::corpus::{self, Corpus};
use crate::database::Databases;
use crate::files::Files;
use crate::frames::{self, Payloads};
use crate::mutate::{self, Grammar, Numbers};
use crate::rng::{self, Rng};
use crate::runner::{Caught, Limits, Runner};
use crate::targets::{Shape, Target};

/// Text inputs are cut to this size, spools to [`MAX_SPOOL`], databases to
/// [`MAX_DATABASE`].
const MAX_TEXT: usize = 128 << 10;
const MAX_SPOOL: usize = 1 << 20;
const MAX_DATABASE: usize = 1 << 20;
/// Tokens kept from the seeds' words, at most.
const SEED_WORDS: usize = 1000;
/// How often a long campaign says how it is going.
const PROGRESS: Duration = Duration::from_secs(30);

/// How long a campaign runs: whichever ends first.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Mutated inputs, beyond the seeds.
    pub runs: u64,
    pub time: Duration,
}

/// Fuzzes `target` until the budget is spent or an input fails.
pub fn fuzz(
    target: &'static Target,
    seed: u64,
    budget: Budget,
    limits: Limits,
    files: &Files,
) -> Result<(), Caught> {
    let seeds = corpus::seeds(target).unwrap_or_else(|e| {
        panic!("cannot read the seeds of {}: {e}", target.name);
    });
    assert!(!seeds.is_empty(), "{} has no seeds", target.name);
    let mutator = Mutator::new(target, &seeds, files);
    let mut runner = Runner::start(target, limits, files);
    let mut corpus = Corpus::new(seeds.clone());
    for input in seeds {
        corpus.saw(&runner.run(input)?.1);
    }
    let mut rng = Rng::new(seed ^ rng::hash(target.name.as_bytes()));
    let started = Instant::now();
    let (mut runs, mut said) = (0, Instant::now());
    while runs < budget.runs && started.elapsed() < budget.time {
        let input = mutator.mutate(corpus.pick(&mut rng), corpus.entries(), &mut rng);
        let (input, outcome) = runner.run(input)?;
        corpus.observe(input, &outcome, &mut rng);
        runs += 1;
        if said.elapsed() >= PROGRESS {
            println!("{}: {runs} runs, {} kept", target.name, corpus.found());
            said = Instant::now();
        }
    }
    Ok(())
}

/// Runs one saved input.
pub fn replay(
    target: &'static Target,
    file: &Path,
    limits: Limits,
    files: &Files,
) -> Result<(), Caught> {
    let input =
        std::fs::read(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    Runner::start(target, limits, files).run(input)?;
    println!("{}: {} runs without failing", target.name, file.display());
    Ok(())
}

/// How a target's inputs are mutated.
enum Mutator {
    Text(Grammar),
    Spool(Payloads),
    Database(Databases),
}

impl Mutator {
    fn new(target: &Target, seeds: &[Vec<u8>], files: &Files) -> Mutator {
        match target.shape {
            Shape::Spool => Mutator::Spool(Payloads::new(MAX_SPOOL)),
            Shape::Database => Mutator::Database(Databases::new(files.mutating(), MAX_DATABASE)),
            Shape::Text => {
                let mut words: Vec<&[u8]> = seeds.iter().flat_map(|s| mutate::words(s)).collect();
                words.sort_unstable();
                words.dedup();
                Mutator::Text(Grammar {
                    tokens: target
                        .tokens
                        .iter()
                        .map(|t| t.as_bytes().to_vec())
                        .collect(),
                    words: words
                        .into_iter()
                        .take(SEED_WORDS)
                        .map(<[u8]>::to_vec)
                        .collect(),
                    nests: target.nests,
                    numbers: Numbers::Text,
                    max_len: MAX_TEXT,
                })
            }
        }
    }

    fn mutate(&self, input: &[u8], others: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
        match self {
            Mutator::Text(grammar) => mutate::havoc(input, others, grammar, rng),
            Mutator::Spool(payloads) => frames::havoc(input, others, payloads, rng),
            Mutator::Database(databases) => databases.havoc(input, others, rng),
        }
    }
}
