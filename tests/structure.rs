//! The crates' import graphs run one way: no file uses, through others, an item of its
//! own, so each layer can be read, tested and changed knowing only those below it. Run with
//! `--nocapture` for the figures: files, imports, circles, and floors (the longest chain).

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
    let mut found = Vec::new();
    for root in CRATES {
        let graph = Graph::of_crate(&support::repo().join(root));
        let circles = graph.circles();
        println!(
            "{root}: {} files, {} imports, {} circles ({} files, {} imports inside), {} floors",
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
        for circle in circles {
            let files: Vec<String> = circle.iter().map(|&f| graph.name(f)).collect();
            found.push(format!("{root}: {}", files.join(" ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}
