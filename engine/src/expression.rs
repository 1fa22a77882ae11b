//! The expressions users write in evalexpr's language (filter predicates, derived columns,
//! `rocflow diff --fail-if`) are parsed here and nowhere else.
//!
//! evalexpr recurses once per level of its tree as it builds, evaluates and drops it, and
//! sets no limit: 10 000 `!` or nested parentheses, or a sum of a few thousand terms,
//! overflow the stack and abort the process. So the text is scanned first, and refused
//! where it would make a tree deeper than a thread's stack safely holds.
//!
//! Sizes may be written with a binary unit, as everywhere else in a pipeline: `1MiB` is
//! `1048576` (`KiB`, `MiB`, `GiB`, `TiB`; not inside string literals).

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

/// The prefix of the variables that name an API call's arguments (`args.sizeBytes`).
pub const ARGS: &str = "args.";

/// Bytes an expression may hold: string literals included, so long alternatives fit.
const MAX_LEN: usize = 16 << 10;

/// How deep parentheses may nest.
const MAX_NESTING: usize = 32;

/// Operators in all. Each may be a level of the tree (`a + b + c …` is as deep as it is
/// long), and a level takes a kilobyte or two of stack in a debug build.
const MAX_OPERATORS: usize = 256;

/// `!` and `-` in a row (`!!x`, `- -x`): each is a level of the tree.
const MAX_UNARY_RUN: usize = 4;

/// Why an expression was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpressionError {
    pub message: String,
    /// Byte range in the expression of what is at fault, when it is one place.
    pub span: Option<Range<usize>>,
    pub hint: Option<&'static str>,
}

impl fmt::Display for ExpressionError {
    /// `column N: message` when the error has a place, else the message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(span) = &self.span {
            write!(f, "column {}: ", span.start + 1)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExpressionError {}

/// Parses `text` with evalexpr once it is known to be small and shallow enough.
pub fn parse(text: &str) -> Result<evalexpr::Node, ExpressionError> {
    check(text)?;
    evalexpr::build_operator_tree(&sizes(text)).map_err(|e| ExpressionError {
        message: e.to_string(),
        span: None,
        hint: None,
    })
}

/// Binary units a size literal may end in.
const SIZE_UNITS: &[(&str, u32)] = &[("KiB", 10), ("MiB", 20), ("GiB", 30), ("TiB", 40)];

/// `text` with each size literal (`64KiB`) written as its number of bytes.
fn sizes(text: &str) -> Cow<'_, str> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'.';
    let bytes = text.as_bytes();
    let mut out = String::new();
    let (mut copied, mut i, mut quoted) = (0, 0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if quoted {
            quoted = b != b'"';
            i += if b == b'\\' { 2 } else { 1 };
            continue;
        }
        quoted = b == b'"';
        if !b.is_ascii_digit() || (i > 0 && word(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let digits = i + bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        let unit = SIZE_UNITS.iter().find(|(unit, _)| {
            text[digits..].starts_with(unit)
                && !bytes.get(digits + unit.len()).is_some_and(|&b| word(b))
        });
        let value = unit.and_then(|&(unit, shift)| {
            let n: u64 = text[i..digits].parse().ok()?;
            Some((n.checked_mul(1 << shift)?, unit.len()))
        });
        match value {
            Some((value, unit)) => {
                out.push_str(&text[copied..i]);
                out.push_str(&value.to_string());
                i = digits + unit;
                copied = i;
            }
            None => i = digits,
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Refuses text past the limits, at the place it crosses one.
fn check(text: &str) -> Result<(), ExpressionError> {
    let refuse = |span: Option<Range<usize>>, message: String| ExpressionError {
        message,
        span,
        hint: Some("split it: filters one after another, or columns derived one from another"),
    };
    let (mut nesting, mut operators, mut signs) = (0usize, 0, 0);
    for (piece, span) in Scanner::new(text) {
        match piece {
            Piece::Open => {
                nesting += 1;
                if nesting > MAX_NESTING {
                    let message = format!("parentheses nest more than {MAX_NESTING} deep here");
                    return Err(refuse(Some(span), message));
                }
            }
            Piece::Close => nesting = nesting.saturating_sub(1),
            Piece::Operand => signs = 0,
            Piece::Operator | Piece::Sign => {
                operators += 1;
                if operators > MAX_OPERATORS {
                    let message = format!("the expression has more than {MAX_OPERATORS} operators");
                    return Err(refuse(Some(span), message));
                }
                signs = if piece == Piece::Sign { signs + 1 } else { 0 };
                if signs > MAX_UNARY_RUN {
                    let message = format!("more than {MAX_UNARY_RUN} `!` and `-` in a row");
                    return Err(refuse(Some(span), message));
                }
            }
        }
    }
    if text.len() > MAX_LEN {
        let message = format!(
            "the expression is {} bytes long, more than the {} KiB an expression may hold",
            text.len(),
            MAX_LEN >> 10
        );
        return Err(refuse(None, message));
    }
    Ok(())
}

/// What the scan tells apart, as evalexpr's tokenizer would see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    Open,
    Close,
    /// `!` or `-`: an operator that may be unary.
    Sign,
    Operator,
    /// A byte of a name, a number or a string literal.
    Operand,
}

/// Operators of two characters; any other operator character is one operator.
const PAIRS: &[[u8; 2]] = &[
    *b"==", *b"!=", *b"<=", *b">=", *b"&&", *b"||", *b"+=", *b"-=", *b"*=", *b"/=", *b"%=", *b"^=",
];

/// The pieces of an expression with their byte ranges; whitespace and comments are
/// skipped, a string literal is one operand.
struct Scanner<'t> {
    bytes: &'t [u8],
    at: usize,
}

impl<'t> Scanner<'t> {
    fn new(text: &'t str) -> Self {
        Scanner {
            bytes: text.as_bytes(),
            at: 0,
        }
    }
}

impl Iterator for Scanner<'_> {
    type Item = (Piece, Range<usize>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let start = self.at;
            let rest = &self.bytes[start..];
            let until = |end: &[u8]| rest.windows(end.len()).position(|w| w == end);
            let (piece, len) = match rest {
                [] => return None,
                [b' ' | b'\t' | b'\r' | b'\n', ..] => (None, 1),
                [b'/', b'*', ..] => (None, until(b"*/").map_or(rest.len(), |end| end + 2)),
                [b'/', b'/', ..] => (None, until(b"\n").unwrap_or(rest.len())),
                [b'"', ..] => (Some(Piece::Operand), string_len(rest)),
                [b'(', ..] => (Some(Piece::Open), 1),
                [b')', ..] => (Some(Piece::Close), 1),
                [a, b, ..] if PAIRS.contains(&[*a, *b]) => (Some(Piece::Operator), 2),
                [b'!' | b'-', ..] => (Some(Piece::Sign), 1),
                [
                    b'+' | b'*' | b'/' | b'%' | b'^' | b'<' | b'>' | b'=' | b'&' | b'|' | b','
                    | b';',
                    ..,
                ] => (Some(Piece::Operator), 1),
                _ => (Some(Piece::Operand), 1),
            };
            self.at += len;
            if let Some(piece) = piece {
                return Some((piece, start..self.at));
            }
        }
    }
}

/// The length of the string literal `rest` starts with, quotes included; all of `rest`
/// when it is not closed (evalexpr reports that).
fn string_len(rest: &[u8]) -> usize {
    let mut i = 1;
    while i < rest.len() {
        match rest[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    rest.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where `text` is refused, and why.
    fn refused(text: &str) -> (Option<Range<usize>>, String) {
        let e = parse(text).unwrap_err();
        (e.span, e.message)
    }

    fn nested(depth: usize) -> String {
        format!("{}duration_ns > 1{}", "(".repeat(depth), ")".repeat(depth))
    }

    #[test]
    fn nesting_is_bounded_at_the_parenthesis_that_crosses_it() {
        assert!(parse(&nested(MAX_NESTING)).is_ok());
        assert_eq!(
            refused(&nested(MAX_NESTING + 1)),
            (
                Some(32..33),
                "parentheses nest more than 32 deep here".into()
            )
        );
        // Closed parentheses give their level back.
        let siblings = vec![nested(MAX_NESTING); 3].join(" && ");
        assert!(parse(&siblings).is_ok());
    }

    #[test]
    fn strings_and_comments_are_not_scanned() {
        let text = format!(
            "kernel_name == \"{}\\\"{}\" /* {} */ && true // {}",
            "(".repeat(40),
            "!".repeat(40),
            "-".repeat(40),
            "(".repeat(40)
        );
        assert!(parse(&text).is_ok(), "{:?}", parse(&text));
    }

    #[test]
    fn unary_runs_are_bounded() {
        assert!(parse("!!!!true").is_ok());
        assert!(parse("duration_ns - -1 > 0").is_ok());
        assert_eq!(
            refused("!!!!!true"),
            (Some(4..5), "more than 4 `!` and `-` in a row".into())
        );
        assert_eq!(refused("! ( ! (! - -1))").0, Some(11..12));
    }

    #[test]
    fn operators_are_bounded() {
        let terms = |n: usize| vec!["duration_ns"; n].join(" + ");
        assert!(parse(&terms(MAX_OPERATORS + 1)).is_ok());
        let text = terms(MAX_OPERATORS + 2);
        let start = "duration_ns + ".len() * MAX_OPERATORS + "duration_ns ".len();
        assert_eq!(
            refused(&text),
            (
                Some(start..start + 1),
                "the expression has more than 256 operators".into()
            )
        );
        // Two-character operators count once.
        let comparisons = vec!["1 == 1"; MAX_OPERATORS / 2].join(" && ");
        assert!(parse(&comparisons).is_ok());
    }

    #[test]
    fn length_is_bounded() {
        let text = format!("kernel_name == \"{}\"", "k".repeat(MAX_LEN));
        let (span, message) = refused(&text);
        assert_eq!(span, None);
        assert_eq!(
            message,
            format!(
                "the expression is {} bytes long, more than the 16 KiB an expression may hold",
                MAX_LEN + 17
            )
        );
    }

    #[test]
    fn size_literals_are_bytes_outside_strings() {
        assert_eq!(sizes("args.sizeBytes > 1MiB"), "args.sizeBytes > 1048576");
        assert_eq!(
            sizes("a >= 4KiB && b < 2GiB"),
            "a >= 4096 && b < 2147483648"
        );
        assert_eq!(
            sizes(r#"name == "1MiB \" 2KiB""#),
            r#"name == "1MiB \" 2KiB""#
        );
        for untouched in ["x1MiB > 0", "1MiBs", "1.5MiB", "99999999999TiB", "1 MiB"] {
            assert_eq!(sizes(untouched), untouched);
        }
        let tree = parse("sizeBytes > 1MiB").unwrap();
        let context = evalexpr::context_map! { "sizeBytes" => 2 << 20 }.unwrap();
        assert_eq!(tree.eval_boolean_with_context(&context), Ok(true));
    }

    #[test]
    fn evalexpr_errors_pass_through() {
        let e = parse("(duration_ns > 1").unwrap_err();
        assert_eq!((e.span, e.hint), (None, None));
        assert!(!e.message.is_empty());
    }
}
