//! What a multi-pass counter run costs: one `rocflow run` of three passes (the application
//! three times, the passes merged into one run) against three single-pass runs counting
//! one counter each, on the simulated MI300X with 12 000 dispatches per run, every value
//! written to CSV. Prints both wall times and their ratio.
//! Run with `cargo bench -p rocflow --bench passes`.

#[allow(dead_code)]
mod sim;

use std::time::Duration;

const COUNTERS: [&str; 3] = ["SQ_WAVES", "SQ_INSTS_VALU", "GRBM_GUI_ACTIVE"];

fn pipeline(collect: &[&str], per_pass: Option<usize>) -> String {
    let collect: Vec<String> = collect.iter().map(|c| format!("\"{c}\"")).collect();
    let per_pass = per_pass.map_or(String::new(), |n| format!("per_pass = {n}\n"));
    format!(
        "[pipeline]\nname = \"passes\"\n[[context]]\nname = \"counters\"\n\
         tracing = [\"kernel_dispatch\"]\nagents = [\"gfx942\"]\n[context.counters]\n\
         collect = [{}]\n{per_pass}[[sink]]\nname = \"csv\"\nkind = \"csv\"\npath = \"out\"\n",
        collect.join(", ")
    )
}

/// Runs `rocflow run` on `pipeline` in `dir`; its wall time and summary.
fn run(dir: &std::path::Path, pipeline: &str) -> (Duration, String) {
    std::fs::write(dir.join("p.toml"), pipeline).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("out"));
    let run = sim::run(dir, "p.toml", &[]);
    (run.wall, run.stdout)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.toml"), sim::example(2000)).unwrap();
    for round in 1..=3 {
        let (merged, summary) = run(dir.path(), &pipeline(&COUNTERS, Some(1)));
        assert!(
            summary.contains("3 passes, merged into one run"),
            "{summary}"
        );
        let singles: Duration = COUNTERS
            .iter()
            .map(|c| run(dir.path(), &pipeline(&[c], None)).0)
            .sum();
        println!(
            "round {round}: 3-pass run {:.2} s, 3 single runs {:.2} s together: {:.2}x",
            merged.as_secs_f64(),
            singles.as_secs_f64(),
            merged.as_secs_f64() / singles.as_secs_f64()
        );
    }
}
