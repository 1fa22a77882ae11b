//! The crates' import graphs run one way: no file uses, through others, an item of its
//! own, and no top-level module of a crate another that uses it back, so each layer can be
//! read, tested and changed knowing only those below it.
//!
//! Run with `--nocapture` for the figures of each crate, by files and by top-level modules:
//! imports, circles, and floors (the longest chain of imports, a circle counted as one;
//! and with each circle opened where a depth-first walk meets it, the imports that then
//! run back up).
//! `ROCFLOW_STRUCTURE_ROOT=DIR` measures another checkout (an older commit's worktree).

use std::path::PathBuf;

use support::imports::Graph;

/// Each crate of the workspace, by its root file.
const CRATES: [&str; 6] = [
    "engine/src/lib.rs",
    "engine/core/src/lib.rs",
    "engine/sim/src/lib.rs",
    "engine/tool/src/lib.rs",
    "counters/src/lib.rs",
    "plugins/abi/src/lib.rs",
];

#[test]
fn no_crate_has_an_import_circle() {
    let root = std::env::var_os("ROCFLOW_STRUCTURE_ROOT").map_or_else(support::repo, PathBuf::from);
    let mut found = Vec::new();
    for krate in CRATES {
        let files = Graph::of_crate(&root.join(krate));
        let modules = files.modules();
        for (level, graph) in [("files", &files), ("modules", &modules)] {
            found.extend(figures(&format!("{krate} by {level}"), graph));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

/// Prints a graph's figures and the imports inside its circles; returns its circles.
fn figures(name: &str, graph: &Graph) -> Vec<String> {
    let circles = graph.circles();
    let (floors, back) = graph.layering();
    println!(
        "{name}: {} nodes, {} imports, {} circles ({} nodes, {} imports inside), {} floors \
         ({floors} floors and {back} imports that run back up with the circles opened)",
        graph.files.len(),
        graph.imports.len(),
        circles.len(),
        circles.iter().map(Vec::len).sum::<usize>(),
        graph.imports_in_circles(),
        graph.floors()
    );
    let circle_of = |file: usize| circles.iter().position(|c| c.contains(&file));
    for &(a, b) in &graph.imports {
        if circle_of(a).is_some() && circle_of(a) == circle_of(b) {
            println!("  {} -> {}", graph.name(a), graph.name(b));
        }
    }
    (circles.iter())
        .map(|circle| {
            let nodes: Vec<String> = circle.iter().map(|&f| graph.name(f)).collect();
            format!("{name}: {}", nodes.join(" "))
        })
        .collect()
}
