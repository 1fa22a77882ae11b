//! Starter pipelines (`rocflow init`): a file that extends a template, with what can be
//! changed written out as comments (the template's parameters and their defaults, how to
//! override or remove an entry), so that the first edit is uncommenting a line.

use std::path::Path;

use crate::diag::Diagnostic;

use super::template::Library;
use super::value::Node;
use crate::diag::Step;

/// The template `rocflow init` extends when none is named: cheap, and useful on any GPU.
pub const DEFAULT_TEMPLATE: &str = "kernel-trace";

/// The text of a pipeline, to be written at `path`, that extends `template`; its first
/// line names the JSON Schema at `schema` for editors.
pub fn starter(
    library: &Library,
    template: &str,
    path: &Path,
    schema: Option<&Path>,
) -> Result<String, Diagnostic> {
    let doc = library.load_template(template)?.doc;
    let file = path.display();
    let name = path
        .file_stem()
        .map_or_else(|| "pipeline".into(), |s| s.to_string_lossy());
    let quoted = |text: &str| toml::Value::String(text.to_owned()).to_string();
    let mut out = String::new();
    let mut line = |text: &str| {
        out.push_str(text);
        out.push('\n');
    };

    if let Some(schema) = schema {
        line(&format!("#:schema {}", schema.display()));
    }
    line(&format!(
        "# {name}: a rocflow pipeline built on the `{template}` template."
    ));
    let description = doc.at([Step::Key("pipeline"), Step::Key("description")]);
    if let Some(description) = description.and_then(Node::as_str) {
        line(&format!("# {template}: {description}."));
    }
    line("#");
    line(&format!("#   rocflow validate {file}"));
    line(&format!(
        "#   rocflow explain {file}           # what it asks rocprofiler-sdk for"
    ));
    line(&format!(
        "#   rocflow run {file} -- ./app      # --device sim runs it on the simulated GPU"
    ));
    line("#");
    line(&format!(
        "# `rocflow templates show {template}` shows what the template collects and costs."
    ));
    line("");
    line("[pipeline]");
    line(&format!("name = {}", quoted(&name)));
    line(&format!("extends = [{}]", quoted(template)));

    let params = doc.get("params").and_then(Node::as_table);
    if let Some(params) = params.filter(|p| !p.is_empty()) {
        line("");
        line("# The template's parameters, with their defaults. Uncomment one to change it for");
        line("# every run, or change it for one run with `--set name=value`.");
        line("[params]");
        for (key, entry) in params {
            line(&format!("# {key} = {}", entry.node.to_toml()));
        }
    }

    let names = |key: &str| -> Vec<String> {
        let entries = doc.get(key).and_then(Node::as_array).unwrap_or_default();
        let names = entries.iter().filter_map(|e| e.get("name")?.as_str());
        names.map(quoted).collect()
    };
    line("");
    line("# [[context]], [[transform]], [[sink]] and [[post]] entries merge with the template's");
    line("# by `name`: the fields given here replace the template's, `enabled = false` removes");
    line("# the entry, and an entry with a new name is added. For example:");
    line("#");
    line("# [[context]]");
    match names("context").first() {
        Some(context) => {
            line(&format!("# name = {context}"));
            line("# period = { delay = \"10s\" }     # start collecting after the start-up");
        }
        None => {
            line("# name = \"kernels\"");
            line("# tracing = [\"kernel_dispatch\"]");
        }
    }
    if let Some(sink) = names("sink").first() {
        line("#");
        line("# [[sink]]");
        line(&format!("# name = {sink}"));
        line("# enabled = false");
    }
    let dir = if params.is_some_and(|p| p.contains_key("output_dir")) {
        "{output_dir}/"
    } else {
        ""
    };
    line("#");
    line("# [[sink]]");
    line("# name = \"csv-tables\"");
    line("# kind = \"csv\"");
    line(&format!("# path = \"{dir}csv-{{hostname}}-{{pid}}\""));
    Ok(out)
}
