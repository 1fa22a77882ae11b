//! Where AMD-SMI's library is: where ROCm's tools look for it, in the order a user steers
//! them. rocflow never links it: it is loaded when found, so rocflow runs where it is not.

use std::path::{Path, PathBuf};

/// The variable that names the library to load, before any search: how `rocflow run
/// --device sim` points the tool at the simulated device's AMD-SMI, and how a user picks
/// one installation among several.
pub const LIBRARY_VAR: &str = "ROCFLOW_AMD_SMI_LIBRARY";

/// The library's development name; installations without the development files have only
/// the versioned one (`libamd_smi.so.26`).
const NAME: &str = "libamd_smi.so";

/// A library found, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub path: PathBuf,
    /// The variable or directory that led to it, for the user.
    pub found_by: String,
}

/// Looks for AMD-SMI: the file [`LIBRARY_VAR`] names, then `$ROCM_PATH/lib`, the
/// directories of `LD_LIBRARY_PATH` and `/opt/rocm/lib`. `at` maps each path to where it
/// lies (the identity on this machine; the doctor examines machines laid out under a
/// directory). `Err` lists the places looked at.
pub fn find(
    env: impl Fn(&str) -> Option<String>,
    at: impl Fn(&Path) -> PathBuf,
) -> Result<Found, Vec<PathBuf>> {
    if let Some(file) = env(LIBRARY_VAR).filter(|f| !f.is_empty()) {
        let path = at(Path::new(&file));
        return match path.is_file() {
            true => Ok(Found {
                path,
                found_by: LIBRARY_VAR.into(),
            }),
            false => Err(vec![path]),
        };
    }
    let mut dirs: Vec<(PathBuf, String)> = Vec::new();
    if let Some(rocm) = env("ROCM_PATH").filter(|p| !p.is_empty()) {
        dirs.push((Path::new(&rocm).join("lib"), "ROCM_PATH".into()));
    }
    for dir in env("LD_LIBRARY_PATH").unwrap_or_default().split(':') {
        if !dir.is_empty() {
            dirs.push((dir.into(), "LD_LIBRARY_PATH".into()));
        }
    }
    dirs.push(("/opt/rocm/lib".into(), "/opt/rocm".into()));
    let found = dirs.iter().find_map(|(dir, how)| {
        Some(Found {
            path: in_dir(&at(dir))?,
            found_by: how.clone(),
        })
    });
    found.ok_or_else(|| {
        dirs.into_iter()
            .map(|(dir, _)| at(&dir.join(NAME)))
            .collect()
    })
}

/// `libamd_smi.so` in `dir`, or else its newest versioned file.
fn in_dir(dir: &Path) -> Option<PathBuf> {
    let plain = dir.join(NAME);
    if plain.is_file() {
        return Some(plain);
    }
    let versioned = std::fs::read_dir(dir).ok()?.filter_map(|entry| {
        let path = entry.ok()?.path();
        let version = path
            .file_name()?
            .to_str()?
            .strip_prefix(NAME)?
            .strip_prefix('.')?;
        let numbers: Vec<u32> = version
            .split('.')
            .map(|n| n.parse().ok())
            .collect::<Option<_>>()?;
        path.is_file().then_some((numbers, path))
    });
    versioned.max().map(|(_, path)| path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, String)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn the_named_library_comes_first_then_rocm_path_then_the_loader_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = |p: &Path| dir.path().join(p.strip_prefix("/").unwrap_or(p));
        for lib in [
            "rocm/lib/libamd_smi.so.25.1",
            "rocm/lib/libamd_smi.so.26.5",
            "ld/libamd_smi.so",
            "opt/rocm/lib/libamd_smi.so",
        ] {
            let path = root(Path::new(lib));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        let mut vars = vec![
            ("LD_LIBRARY_PATH", "/nowhere::/ld".to_string()),
            ("ROCM_PATH", "/rocm".to_string()),
        ];
        let found = find(env(&vars), root).unwrap();
        assert_eq!(found.path, root(Path::new("/rocm/lib/libamd_smi.so.26.5")));
        assert_eq!(found.found_by, "ROCM_PATH");
        vars.remove(1);
        let found = find(env(&vars), root).unwrap();
        assert_eq!(found.path, root(Path::new("/ld/libamd_smi.so")));
        assert_eq!(found.found_by, "LD_LIBRARY_PATH");
        vars.clear();
        assert_eq!(find(env(&vars), root).unwrap().found_by, "/opt/rocm");
        vars.push((LIBRARY_VAR, "/ld/libamd_smi.so".into()));
        assert_eq!(find(env(&vars), root).unwrap().found_by, LIBRARY_VAR);
    }

    #[test]
    fn an_absent_library_lists_where_it_was_looked_for() {
        let dir = tempfile::tempdir().unwrap();
        let root = |p: &Path| dir.path().join(p.strip_prefix("/").unwrap_or(p));
        let vars = [("ROCM_PATH", "/rocm".to_string())];
        let searched = find(env(&vars), root).unwrap_err();
        assert_eq!(
            searched,
            [
                root(Path::new("/rocm/lib/libamd_smi.so")),
                root(Path::new("/opt/rocm/lib/libamd_smi.so"))
            ]
        );
        let vars = [(LIBRARY_VAR, "/missing/libamd_smi.so".to_string())];
        let searched = find(env(&vars), root).unwrap_err();
        assert_eq!(searched, [root(Path::new("/missing/libamd_smi.so"))]);
    }
}
