//! Migration of rocprofiler-sdk's real legacy file, checked against properties of the
//! input read independently (the semantics of AMD's converter), never against a stored
//! copy of our own output.

use rocflow_counters::migrate::{Migration, migrate};
use rocflow_counters::{DefinitionKind, Definitions, Schema, Source, check};
use support::counters::{LEGACY, STANDARD, Yaml, shared, source};

fn migrated(source: &std::sync::Arc<Source>) -> String {
    match migrate(source).expect("migrates") {
        Migration::Migrated { text, .. } => text,
        Migration::AlreadyStandard => panic!("expected a legacy file"),
    }
}

#[test]
fn the_real_legacy_file_migrates_as_amds_converter_does() {
    let input_text = std::fs::read_to_string(shared(LEGACY)).unwrap();
    let output_text = migrated(&Source::read(&shared(LEGACY)).unwrap());
    let input = Yaml::parse(&input_text);
    let output = Yaml::parse(&output_text);

    let sdk = output.get("rocprofiler-sdk");
    assert_eq!(
        sdk.map()
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>(),
        ["counters-schema-version", "counters"]
    );
    assert_eq!(
        sdk.get("counters-schema-version"),
        input.get("schema-version")
    );

    // Counters in input order, every top-level key but `schema-version`.
    let inputs: Vec<&(String, Yaml)> = input
        .map()
        .iter()
        .filter(|(k, _)| k != "schema-version")
        .collect();
    let outputs = sdk.get("counters").seq();
    assert_eq!(inputs.len(), 789);
    assert_eq!(outputs.len(), 789);

    for ((name, legacy), counter) in inputs.into_iter().zip(outputs) {
        let keys: Vec<&str> = counter.map().iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            ["name", "description", "properties", "definitions"],
            "{name}"
        );
        assert_eq!(counter.get("name").str(), name);
        assert_eq!(
            counter.get("description"),
            legacy.get("description"),
            "{name}"
        );
        assert_eq!(counter.get("properties"), &Yaml::Seq(vec![]), "{name}");

        // One definition per slash-joined key, in order: the architectures split and
        // sorted by byte order, then the key's own entries in input order.
        let groups = legacy.get("architectures").map();
        let definitions = counter.get("definitions").seq();
        assert_eq!(definitions.len(), groups.len(), "{name}");
        for ((group, entries), definition) in groups.iter().zip(definitions) {
            let mut archs: Vec<&str> = group.split('/').collect();
            archs.sort_unstable();
            let (first, rest) = definition.map().split_first().unwrap();
            assert_eq!(first.0, "architectures");
            let written: Vec<&str> = first.1.seq().iter().map(Yaml::str).collect();
            assert_eq!(written, archs, "{name}");
            assert_eq!(rest, entries.map(), "{name}");
        }
    }
}

#[test]
fn the_output_reloads_to_the_same_definitions_and_does_not_migrate_again() {
    let legacy = Definitions::load(&shared(LEGACY)).unwrap();
    let output = migrated(&Source::read(&shared(LEGACY)).unwrap());
    let reloaded = Definitions::parse(&Source::new("migrated.yaml", output.as_str())).unwrap();
    assert_eq!(legacy.schema(), Schema::Legacy);
    assert_eq!(reloaded.schema(), Schema::Standard);
    assert_eq!(reloaded.counters().len(), 789);
    for (before, after) in legacy.counters().iter().zip(reloaded.counters()) {
        assert_eq!(before.name, after.name);
        assert_eq!(before.description, after.description);
        for arch in before.architectures() {
            let (a, b) = (
                before.definition_for(arch).unwrap(),
                after.definition_for(arch).unwrap(),
            );
            match (&a.kind, &b.kind) {
                (
                    DefinitionKind::Hardware { block, event },
                    DefinitionKind::Hardware {
                        block: b2,
                        event: e2,
                    },
                ) => assert_eq!((block, event), (b2, e2)),
                (
                    DefinitionKind::Derived { expression },
                    DefinitionKind::Derived { expression: e2 },
                ) => assert_eq!(expression.text, e2.text),
                _ => panic!("{} changed kind on {arch}", before.name),
            }
        }
        assert_eq!(
            before.architectures().count(),
            after.architectures().count()
        );
    }
    assert_eq!(check(&legacy).len(), check(&reloaded).len());
    let again = migrate(&Source::new("migrated.yaml", output)).unwrap();
    assert!(matches!(again, Migration::AlreadyStandard));
}

#[test]
fn a_standardized_file_passes_through() {
    let migration = migrate(&Source::read(&shared(STANDARD)).unwrap()).unwrap();
    assert!(matches!(migration, Migration::AlreadyStandard));
}

#[test]
fn comments_stay_next_to_the_counter_they_preceded() {
    let input = std::fs::read_to_string(shared(LEGACY)).unwrap();
    let output = migrated(&Source::read(&shared(LEGACY)).unwrap());
    let lines: Vec<&str> = input.lines().collect();
    let comments: Vec<(usize, &str)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with('#'))
        .map(|(i, l)| (i, *l))
        .collect();
    assert_eq!(comments.len(), 11);
    let out_lines: Vec<&str> = output.lines().collect();
    for (i, comment) in comments {
        let counter = lines[i + 1].strip_suffix(':').expect("a counter follows");
        let at = out_lines
            .iter()
            .position(|l| l.trim_start() == comment)
            .unwrap_or_else(|| panic!("{comment} is kept"));
        assert_eq!(out_lines[at + 1], format!("  - name: {counter}"));
    }
}

#[test]
fn long_descriptions_fold_near_120_columns() {
    let output = migrated(&Source::read(&shared(LEGACY)).unwrap());
    let mut past = 0;
    for line in output.lines().filter(|l| !l.trim_start().starts_with('#')) {
        // A line may pass 120 columns only by its last word: it breaks at the first single
        // space past the width (a run of spaces is kept, as a break would change it).
        if let Some(overflow) = line.get(120..) {
            past += 1;
            let words: Vec<&str> = overflow.split(' ').collect();
            let single_space = words
                .windows(2)
                .skip(1)
                .any(|w| !w[0].is_empty() && !w[1].is_empty());
            assert!(!single_space, "not folded: {line}");
        }
    }
    assert!(
        past > 0,
        "no line passes 120 columns: the folding is not seen"
    );
}

#[test]
fn a_legacy_file_without_schema_version_migrates_with_a_warning() {
    let text = "\
# header
B_COUNTER:
  architectures:
    gfx942/gfx90a:
      event: 3
      block: SQ
  description: 'Unit: cycles'
# group A
A_DERIVED:
  # inside
  architectures:
    gfx942:
      expression: reduce(B_COUNTER,sum)*2
  description: Twice B.
# the end
";
    let Migration::Migrated {
        text: out,
        warnings,
        counters,
    } = migrate(&source(text)).unwrap()
    else {
        panic!("migrates")
    };
    assert_eq!(counters, 2);
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].message.contains("schema-version"),
        "{}",
        warnings[0]
    );
    assert_eq!(
        out,
        "\
# header
rocprofiler-sdk:
  counters-schema-version: 1
  counters:
  - name: B_COUNTER
    description: 'Unit: cycles'
    properties: []
    definitions:
    - architectures:
      - gfx90a
      - gfx942
      event: 3
      block: SQ
  # group A
  # inside
  - name: A_DERIVED
    description: Twice B.
    properties: []
    definitions:
    - architectures:
      - gfx942
      expression: reduce(B_COUNTER,sum)*2
# the end
"
    );
}

#[test]
fn invalid_input_is_not_migrated() {
    let text =
        "schema-version: 1\nA:\n  architectures:\n    gfx942: {block: SQ}\n  description: x\n";
    let error = migrate(&source(text)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "defs.yaml:4:13: error: the definition of `A` for gfx942 has `block` but no `event`"
    );
}
