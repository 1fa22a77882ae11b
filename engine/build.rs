//! Embeds the shipped template library (`pipelines/**/*.toml`) into the binary, so an
//! installed `rocflow` resolves `extends = ["base"]` without a source tree.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pipelines");
    println!("cargo::rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &mut files);
    // A binary without its templates would fail every `rocflow run kernel-trace` far from
    // here (a build tree moved after a build script ran, a source tree without them).
    assert!(
        !files.is_empty(),
        "no shipped templates under {}",
        root.display()
    );
    files.sort();
    let mut out = String::from("/// Shipped templates: (name, TOML text), sorted by name.\n");
    out.push_str("pub static TEMPLATES: &[(&str, &str)] = &[\n");
    for file in &files {
        println!("cargo::rerun-if-changed={}", file.display());
        let name = file.strip_prefix(&root).unwrap().with_extension("");
        let name = name
            .to_str()
            .expect("template paths are UTF-8")
            .replace('\\', "/");
        let path = file.canonicalize().unwrap();
        writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("templates.rs");
    std::fs::write(dest, out).unwrap();
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            println!("cargo::rerun-if-changed={}", path.display());
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "toml") {
            files.push(path);
        }
    }
}
