//! Where AMD's trace decoder library is found, as rocprofv3 finds it: the folders a
//! pipeline names (rocprofv3's `--att-library-path`), else the folder
//! `ROCPROF_ATT_LIBRARY_PATH` names, else the folders of `LD_LIBRARY_PATH` and ROCm's
//! `lib`.

use std::path::{Path, PathBuf};

/// AMD's decoder library, which rocprofiler-sdk's decoder API loads from a folder.
pub const DECODER_LIBRARY: &str = "librocprof-trace-decoder.so";
/// The variable rocprofv3 reads the decoder's folder from.
pub const PATH_VARIABLE: &str = "ROCPROF_ATT_LIBRARY_PATH";

/// The folders searched for the decoder, in order.
fn search_folders(paths: &[String], env: &impl Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    if !paths.is_empty() {
        return paths.iter().map(PathBuf::from).collect();
    }
    if let Some(folder) = env(PATH_VARIABLE).filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(folder)];
    }
    let mut folders: Vec<PathBuf> = (env("LD_LIBRARY_PATH").unwrap_or_default().split(':'))
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    let rocm = env("ROCM_PATH").filter(|p| !p.is_empty());
    folders.push(Path::new(rocm.as_deref().unwrap_or("/opt/rocm")).join("lib"));
    folders.dedup();
    folders
}

/// The folder holding the decoder library, if one of the searched folders does.
pub fn find_decoder(paths: &[String], env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    (search_folders(paths, &env).into_iter()).find(|folder| folder.join(DECODER_LIBRARY).is_file())
}

/// Where the decoder is looked for, in words (for `rocflow explain` and the note a run
/// gives when it is missing).
pub fn decoder_search(paths: &[String]) -> String {
    match paths {
        [] => {
            format!("{DECODER_LIBRARY} from ${PATH_VARIABLE}, else LD_LIBRARY_PATH and ROCm's lib")
        }
        _ => format!("{DECODER_LIBRARY} from {}", paths.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pipeline_s_folders_come_first_then_the_variable_then_the_library_path() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                (vars.iter())
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let all = env(&[
            (PATH_VARIABLE, "/att"),
            ("LD_LIBRARY_PATH", "/a::/b"),
            ("ROCM_PATH", "/rocm"),
        ]);
        assert_eq!(search_folders(&["/x".into()], &all), [PathBuf::from("/x")]);
        assert_eq!(search_folders(&[], &all), [PathBuf::from("/att")]);
        let no_variable = env(&[("LD_LIBRARY_PATH", "/a::/b"), ("ROCM_PATH", "/rocm")]);
        assert_eq!(
            search_folders(&[], &no_variable),
            ["/a", "/b", "/rocm/lib"].map(PathBuf::from)
        );
        assert_eq!(
            search_folders(&[], &env(&[])),
            [PathBuf::from("/opt/rocm/lib")]
        );
    }

    #[test]
    fn the_decoder_is_found_in_the_folder_that_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let (empty, holding) = (dir.path().join("empty"), dir.path().join("holding"));
        std::fs::create_dir_all(&empty).unwrap();
        std::fs::create_dir_all(&holding).unwrap();
        std::fs::write(holding.join(DECODER_LIBRARY), b"").unwrap();
        let paths = [empty, holding.clone()].map(|p| p.display().to_string());
        assert_eq!(find_decoder(&paths, |_| None), Some(holding));
        assert_eq!(find_decoder(&paths[..1], |_| None), None);
    }
}
