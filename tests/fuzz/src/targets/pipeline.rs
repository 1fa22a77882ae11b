//! Pipeline files compiled as `rocflow validate` and `explain` compile them: TOML,
//! templates, parameters, the schema, semantic checks and the Plan, then the Plan and the
//! merged pipeline printed, and every diagnostic rendered with its snippet.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rocflow::diag::SourceFile;
use rocflow::pipeline::{self, Library, Node, Options, value::Value};
use rocflow::plan;
use rocflow::plugin::Search;

use super::{Shape, Target, root};

pub const TARGET: Target = Target {
    name: "pipeline",
    run: |input, scratch| compile(&super::text(input), scratch),
    seeds: &["pipelines", "examples"],
    shape: Shape::Text,
    tokens: &[
        "[pipeline]\n",
        "[params]\n",
        "[[context]]\n",
        "[[context.counters.derived]]\n",
        "[[transform]]\n",
        "[[sink]]\n",
        "[[post]]\n",
        "extends = [\"base\"]\n",
        "extends = [\"team/base\"]\n",
        "a = \"{b}{b}\"\n",
        "x = \"{x}{x}{x}{x}\"\n",
        "[params]\nx = \"{x}{x}{x}{x}\"\n",
        "output_dir = \"{output_dir}/{output_dir}\"\n",
        "b = \"{c}{c}\"\n",
        "c = \"{a}\"\n",
        "\"{a}\"",
        "{a}",
        "{b}",
        "{output_dir}",
        "{pid}",
        "{{",
        "}}",
        " = ",
        "\"\"\"",
        "'''",
        "\\u0000",
        "= []",
        "= {}",
        "9223372036854775807",
        "-9223372036854775808",
        "1e308",
        "nan",
        "inf",
        "\"1TiB\"",
        "\"100%\"",
        "\"[1-4000000000]\"",
    ],
    nests: &[("[", "]"), ("{a = ", "}"), ("(", ")")],
    extension: "toml",
};

/// Compiles `text` as a pipeline file in `scratch`; the result is what compiled, or the
/// diagnostics.
pub fn compile(text: &str, scratch: &Path) -> String {
    let path = scratch.join("pipeline.toml");
    let file = SourceFile::new(path.display().to_string(), text);
    let options = options();
    // The compiler loads the plugins a pipeline names, to check them; a fuzzer must never
    // make it load a library, so a pipeline that could name one by path is not compiled.
    let merged = match options.library.load_text(&path, file) {
        Ok(merged) if names_a_library(&merged.doc) => return "names a plugin library".into(),
        Ok(merged) => merged,
        Err(diagnostic) => return super::messages(&[diagnostic]),
    };
    match pipeline::compile(&path, merged, options) {
        Ok(compiled) => {
            plan::explain(&compiled.plan);
            serde_json::to_string(&compiled.plan).expect("plans serialize");
            // As `explain --resolved` prints it; not every merged document is TOML again.
            let _ = toml::to_string_pretty(&compiled.resolved.to_toml());
            format!("compiled\n{}", super::messages(&compiled.warnings))
        }
        Err(diagnostics) => super::messages(&diagnostics),
    }
}

/// Shipped templates, the examples' team templates (`team/base`), counter definitions
/// from the corpus, and no plugin directory; made once per worker.
fn options() -> &'static Options {
    static OPTIONS: OnceLock<Options> = OnceLock::new();
    OPTIONS.get_or_init(|| Options {
        overrides: Vec::new(),
        overlay: Default::default(),
        library: Library::with_search_path(vec![root().join("examples")]),
        counters: Some(counter_definitions()),
        simulated: None,
        plugins: Search::with_dirs(Vec::new()),
        // As validate and explain: a plugin's symbols are read, none of its code runs.
        plugin_check: rocflow::plugin::Check::Inspect,
        records_only: false,
    })
}

pub fn counter_definitions() -> PathBuf {
    root().join("tests/fuzz/corpus/counter-defs/standard.yaml")
}

/// Whether a `plugin` value anywhere in the document is a path or could become one
/// through a parameter: with no plugin directory, only those can load a library.
fn names_a_library(doc: &Node) -> bool {
    // A loop, not recursion: the document may be nested deeper than the stack allows.
    let mut pending = vec![doc];
    while let Some(node) = pending.pop() {
        match &node.value {
            Value::Table(table) => {
                for (key, entry) in table {
                    let path_like = |s: &str| s.contains(['/', '{']);
                    if key == "plugin"
                        && !matches!(&entry.node.value, Value::String(s) if !path_like(s))
                    {
                        return true;
                    }
                    pending.push(&entry.node);
                }
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    false
}
