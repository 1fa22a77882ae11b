//! Splits an expression into tokens the way rocprofiler-sdk's flex scanner does: longest
//! match first, and on a tie the earlier rule, so `1,2` is one index-list token (as inside
//! `select(…, [DIMENSION_XCC=[1,2]])`) while `1` alone is a number.

use std::ops::Range;

use super::ParseError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    Plus,
    Minus,
    Star,
    Slash,
    Equals,
    Comma,
    LParen,
    RParen,
    LBracket,
    RBracket,
    /// Digits, possibly with a fraction or exponent (`25`, `1.5`, `2e3`).
    Number,
    /// Comma-separated indices or `start:end` ranges, e.g. `0,2` or `1:3`.
    Indices,
    Name,
    Reduce,
    Select,
    Accumulate,
    End,
}

impl Token {
    /// How the token is shown in "expected …, found …" messages.
    pub fn describe(self, text: &str) -> String {
        match self {
            Token::End => "the end of the expression".to_owned(),
            _ => format!("`{text}`"),
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Spanned {
    pub token: Token,
    pub span: Range<usize>,
}

pub(super) fn tokenize(src: &str) -> Result<Vec<Spanned>, ParseError> {
    let bytes = src.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let single = match bytes[i] {
            b' ' | b'\t' => {
                i += 1;
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                // A comment runs to the end of the line.
                i += src[i..].find('\n').unwrap_or(src.len() - i);
                continue;
            }
            b'+' => Some(Token::Plus),
            b'-' => Some(Token::Minus),
            b'*' => Some(Token::Star),
            b'/' => Some(Token::Slash),
            b'=' => Some(Token::Equals),
            b',' => Some(Token::Comma),
            b'(' => Some(Token::LParen),
            b')' => Some(Token::RParen),
            b'[' => Some(Token::LBracket),
            b']' => Some(Token::RBracket),
            _ => None,
        };
        let token = match single {
            Some(token) => {
                i += 1;
                token
            }
            None if bytes[i].is_ascii_digit() || number_len(bytes, i) > 0 => {
                let number = number_len(bytes, i);
                let indices = indices_len(bytes, i);
                i += number.max(indices);
                if indices > number {
                    Token::Indices
                } else {
                    Token::Number
                }
            }
            None if bytes[i].is_ascii_alphabetic() || bytes[i] == b'_' => {
                i += bytes[i..]
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                    .count();
                match &src[start..i] {
                    "reduce" => Token::Reduce,
                    "select" => Token::Select,
                    "accumulate" => Token::Accumulate,
                    _ => Token::Name,
                }
            }
            None => {
                let c = src[i..].chars().next().expect("in bounds");
                let message = match c {
                    '\n' | '\r' => "an expression must be on one line".to_owned(),
                    _ => format!("unexpected character `{c}`"),
                };
                return Err(ParseError::new(i..i + c.len_utf8(), message));
            }
        };
        tokens.push(Spanned {
            token,
            span: start..i,
        });
    }
    tokens.push(Spanned {
        token: Token::End,
        span: src.len()..src.len(),
    });
    Ok(tokens)
}

fn digits(bytes: &[u8], i: usize) -> usize {
    i + bytes[i.min(bytes.len())..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count()
}

/// An optional exponent (`e-3`) at `i`: where it ends.
fn exponent(bytes: &[u8], i: usize) -> usize {
    if !matches!(bytes.get(i), Some(b'e' | b'E')) {
        return i;
    }
    let mut j = i + 1;
    if matches!(bytes.get(j), Some(b'+' | b'-')) {
        j += 1;
    }
    let end = digits(bytes, j);
    if end > j { end } else { i }
}

/// Length of the longest number at `i`: `[0-9]+ "." [0-9]* exp?` or `"."? [0-9]+ exp?`.
fn number_len(bytes: &[u8], i: usize) -> usize {
    let integer = digits(bytes, i);
    if integer > i {
        let plain = exponent(bytes, integer);
        let fraction = match bytes.get(integer) {
            Some(b'.') => exponent(bytes, digits(bytes, integer + 1)),
            _ => integer,
        };
        return plain.max(fraction) - i;
    }
    if bytes.get(i) == Some(&b'.') {
        let end = digits(bytes, i + 1);
        if end > i + 1 {
            return exponent(bytes, end) - i;
        }
    }
    0
}

/// Length of the longest index list at `i`: `N(:N)?(,N(:N)?)*`.
fn indices_len(bytes: &[u8], i: usize) -> usize {
    let item = |j: usize| -> usize {
        let end = digits(bytes, j);
        if end == j {
            return j;
        }
        match bytes.get(end) {
            Some(b':') if digits(bytes, end + 1) > end + 1 => digits(bytes, end + 1),
            _ => end,
        }
    };
    let mut end = item(i);
    if end == i {
        return 0;
    }
    while bytes.get(end) == Some(&b',') && item(end + 1) > end + 1 {
        end = item(end + 1);
    }
    end - i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(Token, &str)> {
        tokenize(src)
            .unwrap()
            .into_iter()
            .map(|t| (t.token, &src[t.span]))
            .collect()
    }

    #[test]
    fn numbers_names_keywords_and_operators() {
        use Token::*;
        assert_eq!(
            kinds("400*reduce(SQ_WAVES,sum) / reduced"),
            [
                (Number, "400"),
                (Star, "*"),
                (Reduce, "reduce"),
                (LParen, "("),
                (Name, "SQ_WAVES"),
                (Comma, ","),
                (Name, "sum"),
                (RParen, ")"),
                (Slash, "/"),
                (Name, "reduced"),
                (End, ""),
            ]
        );
    }

    #[test]
    fn longest_match_decides_between_numbers_and_index_lists() {
        use Token::*;
        assert_eq!(kinds("1")[0], (Number, "1"));
        assert_eq!(kinds("1.5e3")[0], (Number, "1.5e3"));
        assert_eq!(kinds(".5")[0], (Number, ".5"));
        assert_eq!(kinds("0,2")[0], (Indices, "0,2"));
        assert_eq!(kinds("1:3,5")[0], (Indices, "1:3,5"));
        // A space ends the list, as in the SDK's scanner.
        assert_eq!(kinds("0, 2")[0], (Number, "0"));
    }

    #[test]
    fn comments_are_skipped_and_stray_characters_rejected() {
        assert_eq!(kinds("A // the rest")[..1], [(Token::Name, "A")]);
        let err = tokenize("A | B").unwrap_err();
        assert_eq!(
            (err.offset(), err.message()),
            (2, "unexpected character `|`")
        );
        assert_eq!(tokenize("A\nB").unwrap_err().offset(), 1);
    }
}
