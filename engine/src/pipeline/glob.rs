//! Globs over operation names, as pipelines select API calls and counters.

/// A case-sensitive glob with `*` and `?`, for operation names. Greedy with one backtrack
/// point (the last `*`), so it runs in linear time on typical patterns.
pub(super) fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(&c) if c == b'?' || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                // Let the last `*` swallow one more byte and retry from there.
                Some((sp, sn)) => {
                    star = Some((sp, sn + 1));
                    pi = sp + 1;
                    ni = sn + 1;
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("hipMemcpy*", "hipMemcpyAsync"));
        assert!(glob_match("hipMemcpy*", "hipMemcpy"));
        assert!(!glob_match("hipMemcpy*", "hipMalloc"));
        assert!(glob_match("hip?alloc", "hipMalloc"));
        assert!(glob_match("*Async", "hipMemsetAsync"));
        assert!(glob_match("hip*Async*", "hipMemcpyAsync"));
        assert!(glob_match("*a*b", "xaxxab"));
        assert!(!glob_match("*a*b", "xaxxa"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("?", ""));
    }
}
