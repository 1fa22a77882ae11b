//! rocprofiler-sdk's counter definitions: the derived-counter expression language, and
//! definition files in both YAML schemas, checked, resolved, evaluated and migrated.

use std::path::Path;

use rocflow_counters::expr::{self, Dimension, Tensor};
use rocflow_counters::migrate::{self, Migration};
use rocflow_counters::{Definitions, Source};

use super::{Shape, Target};

/// An expression parsed, printed, drawn, analysed and evaluated on made-up counter values.
pub const EXPRESSION: Target = Target {
    name: "counter-expr",
    run: |input, _| expression(&super::text(input)),
    seeds: &["tests/fuzz/corpus/counter-expr"],
    shape: Shape::Text,
    tokens: &[
        "reduce(",
        "select(",
        "accumulate(",
        ",sum)",
        ",avr)",
        ",min)",
        ",max)",
        ",HIGH_RES)",
        ",LOW_RES)",
        ",NONE)",
        "[DIMENSION_XCC]",
        "[DIMENSION_XCC=[0]]",
        "DIMENSION_SHADER_ENGINE=[4000000000]",
        "DIMENSION_INSTANCE",
        "+",
        "-",
        "*",
        "/",
        "/0",
        ",",
        "[",
        "]",
        "=",
        "CU_NUM",
        "simd_count",
        "SQ_WAVES",
        "GRBM_GUI_ACTIVE",
        "1.5",
        "9223372036854775807",
        "-9223372036854775808",
    ],
    nests: &[("(", ")"), ("reduce(", ",sum)"), ("[", "]"), ("-", "")],
    extension: "txt",
};

/// A definition file parsed (legacy or standard schema), checked, every counter resolved
/// and evaluated on a few architectures, and migrated as `rocflow migrate-counters` does.
pub const DEFINITIONS: Target = Target {
    name: "counter-defs",
    run: |input, _| definitions(&super::text(input)),
    seeds: &["tests/fuzz/corpus/counter-defs"],
    shape: Shape::Text,
    tokens: &[
        "schema-version: 1\n",
        "rocprofiler-sdk:\n",
        "  counters-schema-version: 1\n",
        "  counters:\n",
        "  - name: ",
        "    description: ",
        "    properties: []\n",
        "    definitions:\n",
        "    - architectures:\n",
        "      - gfx942\n",
        "  architectures:\n",
        "    gfx942/gfx90a:\n",
        "      block: SQ\n",
        "      event: 4000000000\n",
        "      expression: ",
        "reduce(SQ_WAVES,sum)",
        "&anchor ",
        "*anchor",
        "<<: ",
        "!!str ",
        "- ",
        ": ",
        "\n  ",
        "'",
        "\"",
        "# ",
        "~",
    ],
    nests: &[("[", "]"), ("{a: ", "}"), ("(", ")")],
    extension: "yaml",
};

/// Architectures the counters of a file are evaluated on, at most (each is resolved on
/// all of them by the check already).
const EVALUATED_ARCHITECTURES: usize = 4;

fn expression(text: &str) -> String {
    let parsed = match expr::parse(text) {
        Ok(parsed) => parsed,
        Err(e) => return format!("{e} {}", e.hint().unwrap_or_default()),
    };
    let printed = parsed.to_string();
    let again = expr::parse(&printed).unwrap_or_else(|e| {
        panic!("`{text}` is printed as `{printed}`, which does not parse: {e}")
    });
    assert_eq!(
        again.to_string(),
        printed,
        "printing `{text}` twice differs"
    );
    parsed.tree();
    parsed.zero_divisions();
    let _ = expr::evaluation_order(&[("fuzzed", &parsed)]);
    match parsed.evaluate(&mut |name| Some(values(name))) {
        Ok(value) => format!("{} instances", value.len()),
        Err(e) => e.to_string(),
    }
}

/// Made-up values for a counter: shapes vary with the name, as they vary per counter.
fn values(name: &str) -> Tensor {
    let shape: &[(Dimension, u32)] = match name.len() % 3 {
        0 => &[],
        1 => &[(Dimension::Xcc, 4)],
        _ => &[(Dimension::Xcc, 2), (Dimension::Instance, 3)],
    };
    let count = shape.iter().map(|&(_, n)| n as usize).product();
    let values: Vec<f64> = (1..=count).map(|v| v as f64).collect();
    Tensor::from_shape(shape, &values)
}

fn definitions(text: &str) -> String {
    let source = Source::new(Path::new("counter_defs.yaml"), text);
    let mut outcome = match Definitions::parse(&source) {
        Ok(defs) => resolve(&defs),
        Err(e) => e.to_string(),
    };
    outcome.push('\n');
    outcome.push_str(&match migrate::migrate(&source) {
        Ok(Migration::AlreadyStandard) => "standard".into(),
        Ok(Migration::Migrated { counters, .. }) => format!("migrated {counters}"),
        Err(e) => e.to_string(),
    });
    outcome
}

fn resolve(defs: &Definitions) -> String {
    let findings = rocflow_counters::check(defs);
    for arch in defs
        .architectures()
        .into_iter()
        .take(EVALUATED_ARCHITECTURES)
    {
        let resolver = defs.resolver(arch);
        for counter in defs.counters() {
            let _ = resolver.evaluate(&counter.name, &mut |name| Some(values(name)));
        }
    }
    let findings: Vec<String> = findings.iter().map(ToString::to_string).collect();
    findings.join("\n")
}
