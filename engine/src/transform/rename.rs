//! How kernel names are rewritten: regex rules, each expansion bounded, and a name cut at
//! a length (see the `kernel_name` transform, which applies it).

use regex::Regex;

/// How long renaming may make a name, in bytes, unless it was longer: past it, the name is
/// cut with `…`. Rules take apart names of a few hundred bytes (rarely a few KiB); without
/// it, a replacement of a million `$1` makes a name of megabytes, for every kernel.
pub const RENAMED_MAX: usize = 64 << 10;

/// How a kernel's name is rewritten.
#[derive(Debug)]
pub struct Rename {
    pub rules: Vec<(Regex, String)>,
    pub truncate: Option<u32>,
}

impl Rename {
    pub fn apply(&self, name: &str) -> String {
        let room = RENAMED_MAX.max(name.len());
        let mut name = name.to_owned();
        for (pattern, replacement) in &self.rules {
            match replace(pattern, replacement, &name, room) {
                Ok(renamed) => name = renamed,
                Err(start) => {
                    name = start + "…";
                    break;
                }
            }
        }
        if let Some(limit) = self.truncate.map(|n| n as usize)
            && name.chars().count() > limit
        {
            name = name
                .chars()
                .take(limit.saturating_sub(1))
                .collect::<String>()
                + "…";
        }
        name
    }
}

/// `name` with each match of `pattern` replaced by `replacement`, built only as far as `room`
/// bytes: before a match is expanded, its expansion is bounded by the replacement's length
/// and the longest group's for each `$` in it (every group reference starts with one).
/// One that would pass `room` is an error holding its start, `room` bytes at most.
fn replace(pattern: &Regex, replacement: &str, name: &str, room: usize) -> Result<String, String> {
    let references = replacement.bytes().filter(|&b| b == b'$').count();
    let mut out = String::new();
    let mut last = 0;
    for groups in pattern.captures_iter(name) {
        let whole = groups.get_match();
        out.push_str(&name[last..whole.start()]);
        let longest = groups.iter().flatten().map(|g| g.len()).max().unwrap_or(0);
        let most = references
            .saturating_mul(longest)
            .saturating_add(replacement.len());
        if out.len().saturating_add(most) > room {
            return Err(cut(out, room));
        }
        groups.expand(replacement, &mut out);
        last = whole.end();
    }
    out.push_str(&name[last..]);
    if out.len() > room {
        return Err(cut(out, room));
    }
    Ok(out)
}

/// `text` cut to at most `room` bytes, at a character's start.
fn cut(mut text: String, room: usize) -> String {
    let mut end = room.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_then_truncates() {
        let rename = Rename {
            rules: vec![(Regex::new(r"\(.*\)").unwrap(), String::new())],
            truncate: Some(10),
        };
        assert_eq!(rename.apply("gemm(float*, float*, float*, int)"), "gemm");
        assert_eq!(rename.apply("a_very_long_kernel_name()"), "a_very_lo…");
    }

    /// A replacement of a million `$1` (as a spool's recorded plan may hold) is cut at
    /// [`RENAMED_MAX`] before it is expanded; one that fits is expanded whole, and a name
    /// longer than the bound keeps its length.
    #[test]
    fn renaming_grows_a_name_only_so_far() {
        let rules = |pattern: &str, replacement: &str| Rename {
            rules: vec![(Regex::new(pattern).unwrap(), replacement.to_owned())],
            truncate: None,
        };
        let amplified = rules("(k.+)", &"$1".repeat(1_000_000));
        // Cut where the match that could pass the bound starts.
        assert_eq!(amplified.apply("gemm_kernel"), "gemm_…");

        let long = "k".repeat(RENAMED_MAX / 2 - 8);
        let doubled = rules("^(.*)$", "${1}_$1").apply(&long);
        assert_eq!(doubled, format!("{long}_{long}"));

        let longer = "x".repeat(2 * RENAMED_MAX);
        assert_eq!(rules("x$", "y").apply(&longer).len(), longer.len());
        assert!(rules("(x+)", "$1$1").apply(&longer).ends_with('…'));
        // Matches one by one, each within the room: a name of every letter twice.
        let each = rules("(.)", "$1$1").apply("abc");
        assert_eq!(each, "aabbcc");
    }
}
