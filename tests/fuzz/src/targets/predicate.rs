//! Filter predicates and derived-column expressions (evalexpr 11), through rocflow's own
//! paths: compiled and evaluated on records as the transforms do, and checked in a
//! pipeline as `rocflow validate` checks them.

use std::path::Path;

use rocflow::catalog::StreamMeta;
use rocflow::chunk::Chunk;
use rocflow::record::{Batch, RecordKind, wire_size};
use rocflow::transform::Expression;

use super::{Shape, Target};

pub const TARGET: Target = Target {
    name: "predicate",
    run: evaluate,
    seeds: &["tests/fuzz/corpus/predicate"],
    shape: Shape::Text,
    tokens: &[
        "&&",
        "||",
        "!",
        "==",
        "!=",
        "<=",
        ">=",
        "<",
        ">",
        "+",
        "-",
        "*",
        "/",
        "%",
        "^",
        "=",
        "+=",
        ";",
        ",",
        "()",
        "\"",
        "\\\"",
        "true",
        "false",
        "duration_ns",
        "kernel_name",
        "start_ns",
        "end_ns",
        "bytes",
        "str::regex_matches(",
        "str::from(",
        "if(",
        "len(",
        "min(",
        "max(",
        "floor(",
        "math::pow(",
        "9223372036854775807",
        "-9223372036854775808",
        "1e308",
        "0.0",
    ],
    nests: &[("(", ")"), ("-", ""), ("!", "")],
    extension: "txt",
};

fn evaluate(input: &[u8], scratch: &Path) -> String {
    let text = super::text(input);
    let mut outcome = match Expression::compile(&text) {
        Ok(expression) => on_records(&expression),
        Err(e) => e,
    };
    outcome.push('\n');
    outcome.push_str(&super::pipeline::compile(&pipeline(&text), scratch));
    outcome
}

/// Evaluates on two records of every kind, all zeros and all ones (`-1`, `u64::MAX`,
/// NaN): what evaluation gave, by kind.
fn on_records(expression: &Expression) -> String {
    let mut results = Vec::new();
    for &kind in RecordKind::ALL {
        for fill in [0, 0xff] {
            let record = Batch::decode(kind, &vec![fill; wire_size(kind)]).expect("one record");
            let chunk = Chunk::new(0, record);
            let value = expression.eval(&chunk, 0, &StreamMeta::default(), &mut Vec::new());
            results.push(match value {
                Ok(value) => type_name(&value).to_owned(),
                Err(e) => e.to_string(),
            });
        }
    }
    results.join("\n")
}

fn type_name(value: &evalexpr::Value) -> &'static str {
    match value {
        evalexpr::Value::String(_) => "string",
        evalexpr::Value::Float(_) => "float",
        evalexpr::Value::Int(_) => "int",
        evalexpr::Value::Boolean(_) => "bool",
        evalexpr::Value::Tuple(_) => "tuple",
        evalexpr::Value::Empty => "empty",
    }
}

/// A pipeline whose filter and derived column are `expression`, on kernel dispatches.
fn pipeline(expression: &str) -> String {
    let quoted = toml::Value::String(expression.to_owned());
    format!(
        "[pipeline]\nname = \"fuzz\"\n\n[[context]]\nname = \"trace\"\ntracing = [\"kernel_dispatch\"]\n\n\
         [[transform]]\nname = \"derive\"\nkind = \"derive\"\ncolumn = \"fuzzed\"\nexpression = {quoted}\n\n\
         [[transform]]\nname = \"filter\"\nkind = \"filter\"\npredicate = {quoted}\n\n\
         [[sink]]\nname = \"csv\"\nkind = \"csv\"\npath = \"out\"\n"
    )
}
