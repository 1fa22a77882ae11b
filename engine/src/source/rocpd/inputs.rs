//! What a command line names as databases: files, directories of them (rocprofv3 writes
//! one per process, under a directory per host) and globs, told from spools by the SQLite
//! header rather than by extension.

use std::io::Read;
use std::path::{Path, PathBuf};

/// How deep a directory is searched for databases (`out/<host>/<pid>_results.db` is 2).
const DEPTH: usize = 4;

/// Whether the file at `path` is an SQLite database (by its header).
pub fn is_database(path: &Path) -> bool {
    let mut header = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .is_ok_and(|()| &header == b"SQLite format 3\0")
}

/// The databases `arg` names, sorted: the file itself, the databases under a directory,
/// or the files a glob in its last component (`*`, `?`) matches. Empty if it names none.
pub fn expand(arg: &Path) -> Vec<PathBuf> {
    if arg.is_dir() {
        let mut found = Vec::new();
        walk(arg, DEPTH, &mut found);
        found.sort();
        return found;
    }
    if is_database(arg) {
        return vec![arg.to_owned()];
    }
    let Some(pattern) = arg.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    if !pattern.contains(['*', '?']) {
        return Vec::new();
    }
    let dir = arg.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_str().is_some_and(|n| matches(pattern, n)))
        .map(|e| dir.join(e.file_name()))
        .filter(|p| is_database(p))
        .collect();
    found.sort();
    found
}

fn walk(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() && depth > 0 => walk(&path, depth - 1, found),
            Ok(t) if t.is_file() && is_database(&path) => found.push(path),
            _ => {}
        }
    }
}

/// Whether `name` matches the glob `pattern` (`*` any run, `?` one character).
fn matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // The classic two-pointer match, with the last `*` to fall back to.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs_match_runs_and_single_characters() {
        assert!(matches("*.db", "rank-3_results.db"));
        assert!(matches("rank-?.db", "rank-3.db"));
        assert!(matches("*", ""));
        assert!(!matches("rank-?.db", "rank-10.db"));
        assert!(!matches("*.db", "run.rfraw"));
        assert!(matches("a*b*c", "aXbYbZc"));
    }
}
