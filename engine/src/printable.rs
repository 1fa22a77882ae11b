//! Text from elsewhere (names from spools and databases: hostnames, commands, kernels),
//! made safe to print on a terminal. Anyone may have filled a name with an escape sequence
//! that drives the terminal, or with a newline that forges a line of rocflow's output: a
//! name is printed with every control character escaped (`\n`, `\u{1b}`), and what rocflow
//! prints keeps only its own newlines and tabs.

use std::borrow::Cow;

/// A name inside a line: every control character escaped.
pub fn name(text: &str) -> Cow<'_, str> {
    escaped(text, |_| false)
}

/// A text of lines: its control characters other than newline and tab escaped.
pub fn lines(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c == '\n' || c == '\t')
}

/// `text` with its control characters escaped, but those `kept`.
fn escaped(text: &str, kept: fn(char) -> bool) -> Cow<'_, str> {
    let inert = |c: char| !c.is_control() || kept(c);
    if text.chars().all(inert) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if inert(c) {
            out.push(c);
        } else {
            out.extend(c.escape_default());
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_escape_every_control_character_and_lines_keep_theirs() {
        assert_eq!(lines("a\tb\n"), "a\tb\n");
        assert_eq!(
            lines("host\u{1b}]0;owned\u{7}\r\n"),
            "host\\u{1b}]0;owned\\u{7}\\r\n"
        );
        assert_eq!(
            name("node\n  process 1 on forged\0\t"),
            "node\\n  process 1 on forged\\u{0}\\t"
        );
        assert!(matches!(name("gemm(float*, int)"), Cow::Borrowed(_)));
    }
}
