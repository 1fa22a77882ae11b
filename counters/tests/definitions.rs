//! Loading definition files: the real ones, and every mistake a user can make, each
//! reported at its line and column.

use rocflow_counters::{DefinitionKind, Definitions, Error, Schema, locate};
use support::counters::{LEGACY, STANDARD, load_errors, shared, source};

/// Counts lines such as `      block: SQ` in the raw text: independent of the YAML reader.
fn lines_with(path: &std::path::Path, key: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| l.trim_start().trim_start_matches("- ").starts_with(key))
        .count()
}

#[test]
fn the_real_files_load_in_either_schema() {
    for (file, schema, counters) in [
        (LEGACY, Schema::Legacy, 789),
        (STANDARD, Schema::Standard, 797),
    ] {
        let path = shared(file);
        let defs = Definitions::load(&path).unwrap();
        assert_eq!(defs.schema(), schema);
        assert_eq!(defs.counters().len(), counters);
        assert!(defs.warnings().is_empty());
        let kinds = |hardware: bool| {
            defs.counters()
                .iter()
                .flat_map(|c| &c.definitions)
                .filter(|d| matches!(d.kind, DefinitionKind::Hardware { .. }) == hardware)
                .count()
        };
        assert_eq!(kinds(true), lines_with(&path, "block:"), "{file}");
        assert_eq!(kinds(false), lines_with(&path, "expression:"), "{file}");
    }
}

#[test]
fn lookups_by_name_and_architecture() {
    let defs = Definitions::load(&shared(STANDARD)).unwrap();
    let busy = defs.get("CPC_CPC_STAT_BUSY").unwrap();
    assert_eq!(busy.description, "CPC Busy.");
    assert!(defs.is_defined("CPC_CPC_STAT_BUSY", "gfx942"));
    assert!(!defs.is_defined("CPC_CPC_STAT_BUSY", "gfx1100"));
    let Some(DefinitionKind::Hardware { block, event }) = defs
        .definition("CPC_CPC_STAT_BUSY", "gfx942")
        .map(|d| &d.kind)
    else {
        panic!("a hardware counter")
    };
    assert_eq!((block.as_str(), *event), ("CPC", 25));
    let cu_num = defs.definition("CU_NUM", "gfx942").unwrap();
    let DefinitionKind::Derived { expression } = &cu_num.kind else {
        panic!()
    };
    assert_eq!(expression.text, "simd_count/simd_per_cu");
    assert!(defs.architectures().contains("gfx950"));
    assert!(defs.get("NO_SUCH_COUNTER").is_none());
}

#[test]
fn extra_files_add_counters_and_architectures() {
    let mut defs = Definitions::load(&shared(STANDARD)).unwrap();
    let extra = "
rocprofiler-sdk:
  counters-schema-version: 1
  counters:
  - name: GRBM_GUI_ACTIVE_SUM
    description: 'Unit: cycles'
    definitions:
    - architectures: [gfx942]
      expression: reduce(GRBM_GUI_ACTIVE,max)*CU_NUM
";
    defs.extend(Definitions::parse(&source(extra)).unwrap())
        .unwrap();
    assert!(defs.is_defined("GRBM_GUI_ACTIVE_SUM", "gfx942"));
    assert_eq!(defs.counters().len(), 798);

    let clash = "
rocprofiler-sdk:
  counters-schema-version: 1
  counters:
  - name: CPC_CPC_STAT_BUSY
    description: again
    definitions:
    - architectures: [gfx942]
      block: CPC
      event: 26
";
    let error = defs
        .extend(Definitions::parse(&source(clash)).unwrap())
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("counter `CPC_CPC_STAT_BUSY` is already defined for gfx942"),
        "{error}"
    );
}

#[test]
fn no_file_found_says_where_it_looked() {
    // The default locations depend on the environment; their order is unit-tested.
    let missing = std::path::Path::new("/no/such/counter_defs.yaml");
    assert_eq!(locate(Some(missing)).unwrap(), missing);
    let Err(Error::Io { path, .. }) = Definitions::load(missing) else {
        panic!("a missing file is an I/O error")
    };
    assert_eq!(path, missing);
    let not_found = Error::NotFound {
        searched: vec!["/a/counter_defs.yaml".into(), "/b/counter_defs.yaml".into()],
    };
    assert_eq!(
        not_found.to_string(),
        "no counter definitions found; looked at\n  /a/counter_defs.yaml\n  /b/counter_defs.yaml"
    );
}

#[test]
fn duplicate_counter_names_are_errors_not_silently_dropped() {
    let legacy = "schema-version: 1
A:
  architectures: {gfx942: {block: SQ, event: 1}}
  description: first
A:
  architectures: {gfx942: {block: SQ, event: 2}}
  description: second
";
    assert_eq!(load_errors(legacy), ["5:1: counter `A` is defined twice"]);
    let standard = "rocprofiler-sdk:
  counters-schema-version: 1
  counters:
  - name: A
    description: first
    definitions: [{architectures: [gfx942], block: SQ, event: 1}]
  - name: A
    description: second
    definitions: [{architectures: [gfx942], block: SQ, event: 2}]
";
    assert_eq!(
        load_errors(standard),
        ["7:11: counter `A` is defined twice"]
    );
}

#[test]
fn an_architecture_listed_twice_for_a_counter() {
    let legacy = "schema-version: 1
A:
  architectures:
    gfx90a/gfx942:
      block: SQ
      event: 1
    gfx950/gfx942:
      block: SQ
      event: 2
  description: x
";
    assert_eq!(
        load_errors(legacy),
        ["7:12: gfx942 is listed twice for counter `A`"]
    );
    let standard = "rocprofiler-sdk:
  counters-schema-version: 1
  counters:
  - name: A
    description: x
    definitions:
    - architectures: [gfx942, gfx90a, gfx942]
      expression: B
";
    assert_eq!(
        load_errors(standard),
        ["7:39: gfx942 is listed twice for counter `A`"]
    );
}

#[test]
fn a_definition_needs_exactly_one_of_expression_and_block_event() {
    let file = |definition: &str| {
        format!(
            "schema-version: 1\nA:\n  architectures:\n    gfx942: {{{definition}}}\n  description: x\n"
        )
    };
    assert_eq!(
        load_errors(&file("block: SQ, event: 1, expression: B")),
        ["4:35: the definition of `A` for gfx942 has both `expression` and `block`/`event`"]
    );
    assert_eq!(
        load_errors(&file("")),
        ["4:13: the definition of `A` for gfx942 has neither `expression` nor `block` and `event`"]
    );
    assert_eq!(
        load_errors(&file("event: 1")),
        ["4:13: the definition of `A` for gfx942 has `event` but no `block`"]
    );
}

#[test]
fn unknown_keys_wrong_types_and_missing_keys() {
    let legacy = "schema-version: 1
A:
  architectures:
    gfx942:
      blok: SQ
      event: one
  description: [x]
B:
  architectures:
    gfx9o: {expression: A}
";
    assert_eq!(
        load_errors(legacy),
        [
            "5:7: unknown key `blok` in the definition of `A` for gfx942",
            "5:7: the definition of `A` for gfx942 has `event` but no `block`",
            "7:16: `description` must be a string, not a list",
            "9:3: counter `B` has no `description`",
            "10:5: `gfx9o` is not an architecture name",
        ]
    );
    let standard = "rocprofiler-sdk:
  counters-schema-version: one
  counters:
  - name: A
    descripton: x
    definitions:
    - architectures: gfx942
      block: SQ
      event: -1
";
    assert_eq!(
        load_errors(standard),
        [
            "2:28: `counters-schema-version` must be a non-negative integer, not a string",
            "4:5: counter `A` has no `description`",
            "5:5: unknown key `descripton` in counter `A`",
            "7:22: `architectures` must be a list, not a string",
            "9:14: `event` must be a non-negative integer, not a number",
        ]
    );
}

#[test]
fn unknown_key_hints_name_the_closest_allowed_key() {
    let file = "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: A\n    descripton: x\n";
    let Err(Error::Invalid(diagnostics)) = Definitions::parse(&source(file)) else {
        panic!("invalid")
    };
    let unknown = diagnostics
        .iter()
        .find(|d| d.message.starts_with("unknown key"))
        .unwrap();
    assert_eq!(unknown.hint.as_deref(), Some("did you mean `description`?"));
}

#[test]
fn yaml_syntax_errors_have_a_place() {
    let errors = load_errors("schema-version: 1\nA:\n  architectures: [\n");
    assert_eq!(errors.len(), 1);
    assert!(errors[0].starts_with("4:1: invalid YAML"), "{}", errors[0]);
}

#[test]
fn the_json_schema_is_applied_to_standardized_files() {
    // The reader accepts any block name; the schema restricts it to identifiers.
    let file = "rocprofiler-sdk:
  counters-schema-version: 1
  counters:
  - name: A
    description: x
    definitions:
    - architectures: [gfx942]
      block: S Q
      event: 1
";
    let errors = load_errors(file);
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with("8:14: does not match the counters schema"),
        "{}",
        errors[0]
    );
    assert!(rocflow_counters::JSON_SCHEMA.contains("\"counters-schema-version\""));
}
