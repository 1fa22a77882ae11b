//! rocprofv3 input files converted to pipelines as `rocflow import-rocprofv3 --params`
//! converts them, each pipeline compiled. rocprofv3 tells the formats apart by extension,
//! so every input is read as YAML, as JSON and as a `pmc:` text file.

use std::path::Path;
use std::sync::OnceLock;

use rocflow::import::{self, Request, Several};
use rocflow::pipeline::{Library, Options};

use super::{Shape, Target};

pub const TARGET: Target = Target {
    name: "import",
    run: convert,
    seeds: &["tests/data/rocprofv3"],
    shape: Shape::Text,
    tokens: &[
        "jobs:\n",
        "- ",
        "pmc: ",
        "pmc:",
        "kernel_include_regex: ",
        "kernel_iteration_range: ",
        "\"[1-4000000000]\"",
        "collection_period: ",
        "\"0:1:4000000000\"",
        "output_directory: ",
        "%hostname%/%pid%",
        "{\"jobs\": [",
        "]}",
        "true",
        "null",
        ": ",
        "\n  ",
        "&a ",
        "*a",
        "\"",
    ],
    nests: &[("[", "]"), ("{\"a\": ", "}"), ("- ", "")],
    extension: "yaml",
};

fn convert(input: &[u8], scratch: &Path) -> String {
    static OPTIONS: OnceLock<Options> = OnceLock::new();
    let options = OPTIONS.get_or_init(|| Options {
        library: Library::with_search_path(Vec::new()),
        counters: Some(super::pipeline::counter_definitions()),
        ..Options::default()
    });
    let output = scratch.join("imported.toml");
    let mut outcome = Vec::new();
    for extension in ["yaml", "json", "txt"] {
        let path = scratch.join("input").with_extension(extension);
        crate::files::replace(&path, input);
        let request = Request {
            input: &path,
            several: Some(Several::Params),
            output: Some(&output),
            options,
        };
        outcome.push(match import::import(&request) {
            Ok(imported) => format!("{} pipelines", imported.pipelines.len()),
            Err(diagnostics) => super::messages(&diagnostics),
        });
    }
    outcome.join("\n")
}
