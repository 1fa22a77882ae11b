//! Byte-level mutations, stacked a few at a time ("havoc"): bit and byte flips, inserted,
//! deleted and repeated ranges, splices with other inputs, interesting integers, and the
//! input language's own tokens and brackets, nested deep.

use crate::rng::Rng;

/// Integers at the edges where size and offset arithmetic breaks: zero, sign and width
/// boundaries, counts just past what fits, and 4e9 (a plausible-looking huge count).
pub const INTERESTING: &[i128] = &[
    0,
    1,
    -1,
    2,
    7,
    8,
    16,
    64,
    127,
    128,
    255,
    256,
    1024,
    4096,
    32767,
    65535,
    65536,
    i32::MAX as i128,
    1 << 31,
    u32::MAX as i128,
    1 << 32,
    4_000_000_000,
    1 << 53,
    i64::MAX as i128,
    i64::MIN as i128,
    u64::MAX as i128,
];

/// How a target writes integers, so they are mutated where the decoder reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    /// Decimal digits in text: a run of digits is replaced by another number.
    Text,
    /// Little-endian fields of 1, 2, 4 or 8 bytes, usually at aligned offsets.
    Binary,
}

/// What the mutator knows about one kind of input.
#[derive(Debug, Clone)]
pub struct Grammar {
    /// Keywords, keys, operators and whole fragments of the input language.
    pub tokens: Vec<Vec<u8>>,
    /// Words taken from the seeds: all of them together as likely to be chosen as the
    /// tokens, which would otherwise be lost among a thousand words.
    pub words: Vec<Vec<u8>>,
    /// Bracket pairs of the language, for nesting thousands deep.
    pub nests: &'static [(&'static str, &'static str)],
    pub numbers: Numbers,
    /// Inputs are cut to this size: larger ones only slow a campaign down.
    pub max_len: usize,
}

impl Grammar {
    /// A token or a seed word; `None` when there are neither.
    fn token<'a>(&'a self, rng: &mut Rng) -> Option<&'a [u8]> {
        let lists: Vec<&Vec<Vec<u8>>> = [&self.tokens, &self.words]
            .into_iter()
            .filter(|list| !list.is_empty())
            .collect();
        let list = rng.choose(&lists)?;
        Some(rng.pick(list.as_slice()).as_slice())
    }
}

/// Applies one to eight mutations to `input`; `others` are inputs to splice from.
pub fn havoc(input: &[u8], others: &[Vec<u8>], grammar: &Grammar, rng: &mut Rng) -> Vec<u8> {
    let mut data = input.to_vec();
    for _ in 0..rng.count(8) {
        mutate(&mut data, others, grammar, rng);
        data.truncate(grammar.max_len);
    }
    data
}

fn mutate(data: &mut Vec<u8>, others: &[Vec<u8>], grammar: &Grammar, rng: &mut Rng) {
    match rng.below(10) {
        0 if !data.is_empty() => {
            let at = rng.below(data.len());
            data[at] ^= 1 << rng.below(8);
        }
        1 if !data.is_empty() => {
            let at = rng.below(data.len());
            let random = rng.next_u64() as u8;
            data[at] = *rng.pick(&[0, 0xff, 0x7f, 0x80, b'\n', b'"', random]);
        }
        2 => {
            let bytes: Vec<u8> = (0..rng.count(8)).map(|_| rng.next_u64() as u8).collect();
            insert(data, rng, &bytes);
        }
        3 if !data.is_empty() => {
            let (start, len) = range(data.len(), rng);
            data.drain(start..start + len);
        }
        4 if !data.is_empty() => repeat(data, grammar.max_len, rng),
        5 if !others.is_empty() => splice(data, rng.pick(others).as_slice(), rng),
        6 => number(data, grammar.numbers, rng),
        7 => {
            if let Some(token) = grammar.token(rng) {
                insert_token(data, token, rng);
            }
        }
        8 => {
            if let Some(token) = grammar.token(rng) {
                replace_word(data, token, rng);
            }
        }
        9 if !grammar.nests.is_empty() => nest(data, grammar, rng),
        _ => {}
    }
}

/// A range inside `len` bytes (not empty), usually short.
fn range(len: usize, rng: &mut Rng) -> (usize, usize) {
    let start = rng.below(len);
    (start, rng.count(len - start))
}

fn insert(data: &mut Vec<u8>, rng: &mut Rng, bytes: &[u8]) {
    let at = rng.below(data.len() + 1);
    data.splice(at..at, bytes.iter().copied());
}

/// Inserts a token, at the start of a line half the time: in TOML and YAML, that is the
/// only place a key or a table header means anything.
fn insert_token(data: &mut Vec<u8>, token: &[u8], rng: &mut Rng) {
    let at = if rng.one_in(2) {
        let lines = data.iter().enumerate().filter(|&(_, &b)| b == b'\n');
        let starts: Vec<usize> = std::iter::once(0)
            .chain(lines.map(|(i, _)| i + 1))
            .collect();
        *rng.pick(&starts)
    } else {
        rng.below(data.len() + 1)
    };
    data.splice(at..at, token.iter().copied());
}

/// Copies a range of the input somewhere, up to hundreds of times: a table or frame
/// repeated is how counts and sizes grow past what was tested.
fn repeat(data: &mut Vec<u8>, max_len: usize, rng: &mut Rng) {
    let (start, len) = range(data.len(), rng);
    let times = rng.count(256).min(max_len.saturating_sub(data.len()) / len);
    let copy = data[start..start + len].repeat(times);
    insert(data, rng, &copy);
}

/// Either the input's head and another's tail, or a piece of another input inserted.
fn splice(data: &mut Vec<u8>, other: &[u8], rng: &mut Rng) {
    if other.is_empty() {
        return;
    }
    let from = rng.below(other.len());
    if rng.one_in(2) {
        data.truncate(rng.below(data.len() + 1));
        data.extend_from_slice(&other[from..]);
    } else {
        let len = rng.count(other.len() - from);
        insert(data, rng, &other[from..from + len]);
    }
}

fn number(data: &mut Vec<u8>, numbers: Numbers, rng: &mut Rng) {
    let value = *rng.pick(INTERESTING);
    match numbers {
        Numbers::Text => {
            let text = value.to_string().into_bytes();
            match rng.choose(&runs(data, u8::is_ascii_digit)) {
                Some(&(start, end)) => {
                    data.splice(start..end, text);
                }
                None => insert(data, rng, &text),
            }
        }
        Numbers::Binary => {
            let width = *rng.pick(&[1, 2, 4, 8]);
            if data.len() < width {
                return;
            }
            let mut at = rng.below(data.len() - width + 1);
            if !rng.one_in(4) {
                at -= at % width;
            }
            data[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
        }
    }
}

/// Replaces a word of the input (a run of letters, digits and `_`) by a token.
fn replace_word(data: &mut Vec<u8>, token: &[u8], rng: &mut Rng) {
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let Some(&(start, end)) = rng.choose(&runs(data, word)) else {
        return;
    };
    data.splice(start..end, token.iter().copied());
}

/// Wraps part of the input in a bracket pair repeated up to 65536 times, the depth at
/// which recursive parsers and evaluators run out of stack.
fn nest(data: &mut Vec<u8>, grammar: &Grammar, rng: &mut Rng) {
    let (open, close) = *rng.pick(grammar.nests);
    let room = grammar.max_len.saturating_sub(data.len()) / (open.len() + close.len());
    let depth = rng.count(1 << 16).min(room);
    let end = rng.below(data.len() + 1);
    let start = rng.below(end + 1);
    data.splice(end..end, close.repeat(depth).into_bytes());
    data.splice(start..start, open.repeat(depth).into_bytes());
}

/// The maximal runs of bytes that match `class`, as `(start, end)`.
fn runs(data: &[u8], class: impl Fn(&u8) -> bool) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut start = None;
    for (i, b) in data.iter().enumerate() {
        match (class(b), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                found.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    found.extend(start.map(|s| (s, data.len())));
    found
}

/// The words of `text` worth using as tokens: identifiers and keys two to 48 bytes long,
/// each once, in order of first appearance.
pub fn words(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-';
    runs(text, word)
        .into_iter()
        .map(move |(start, end)| &text[start..end])
        .filter(|w| (2..=48).contains(&w.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grammar(numbers: Numbers) -> Grammar {
        Grammar {
            tokens: vec![b"reduce(".to_vec()],
            words: vec![b"SQ_WAVES".to_vec()],
            nests: &[("(", ")")],
            numbers,
            max_len: 1 << 12,
        }
    }

    #[test]
    fn havoc_is_deterministic_and_changes_inputs() {
        let g = grammar(Numbers::Text);
        let input = b"reduce(SQ_WAVES,sum)/CU_NUM".to_vec();
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..100)
                .map(|_| havoc(&input, &[], &g, &mut rng))
                .collect::<Vec<_>>()
        };
        let outputs = run(3);
        assert_eq!(outputs, run(3));
        assert!(outputs.iter().filter(|o| **o != input).count() > 80);
        assert!(outputs.iter().all(|o| o.len() <= g.max_len));
    }

    #[test]
    fn text_numbers_replace_digit_runs() {
        let mut rng = Rng::new(5);
        for _ in 0..50 {
            let mut data = b"x = 12; y = 7".to_vec();
            number(&mut data, Numbers::Text, &mut rng);
            let text = String::from_utf8(data).unwrap();
            assert!(
                text.starts_with("x = ") && text.contains("; y = "),
                "{text}"
            );
        }
    }

    #[test]
    fn binary_numbers_keep_the_length() {
        let mut rng = Rng::new(9);
        for _ in 0..50 {
            let mut data = vec![0xaa; 24];
            number(&mut data, Numbers::Binary, &mut rng);
            assert_eq!(data.len(), 24);
        }
    }

    #[test]
    fn nesting_balances_brackets() {
        let g = grammar(Numbers::Text);
        let mut rng = Rng::new(11);
        for _ in 0..20 {
            let mut data = b"a+b".to_vec();
            nest(&mut data, &g, &mut rng);
            let opens = data.iter().filter(|&&b| b == b'(').count();
            assert_eq!(opens, data.iter().filter(|&&b| b == b')').count());
            assert!(opens >= 1 && data.len() <= g.max_len);
        }
    }

    #[test]
    fn tokens_often_start_lines() {
        let mut rng = Rng::new(13);
        let at_line_start = (0..100)
            .filter(|_| {
                let mut data = b"[a]\nb = 2\n".to_vec();
                insert_token(&mut data, b"k = 1\n", &mut rng);
                data.starts_with(b"k = 1\n") || data.windows(7).any(|w| w == b"\nk = 1\n")
            })
            .count();
        assert!((35..100).contains(&at_line_start), "{at_line_start}");
    }

    #[test]
    fn words_are_identifiers_of_useful_length() {
        let found: Vec<&[u8]> = words(b"[[context]] name = \"a\" x_y-z: 1").collect();
        assert_eq!(found, [&b"context"[..], b"name", b"x_y-z"]);
    }
}
