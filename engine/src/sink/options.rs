//! A built-in sink's options, typed: each format owns one struct (beside its sink), whose
//! `Default` is the one statement of its defaults. The compiler parses them once into a
//! [`Format`] in the Plan; the sink opens from it and never reads JSON again.
//!
//! In a serialized Plan the options are the JSON map they always were, holding what differs
//! from the defaults, so plans recorded before they were typed still read.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::pipeline::model::SinkKind;
use crate::units::Quantity;
use crate::units::parse_size;

use super::{csv, otf2, parquet, perfetto, rocpd};

/// One of rocflow's output formats, with its options.
#[derive(Debug, Clone, PartialEq)]
pub enum Format {
    Csv(csv::Options),
    Perfetto(perfetto::Options),
    Parquet(parquet::Options),
    Rocpd(rocpd::Options),
    Otf2(otf2::Options),
}

impl Format {
    /// Reads the options a pipeline gives a sink of `kind`.
    pub fn parse(kind: SinkKind, options: &Map<String, Value>) -> Result<Format, OptionError> {
        Ok(match kind {
            SinkKind::Csv => Format::Csv(parse(options)?),
            SinkKind::Perfetto => Format::Perfetto(parse(options)?),
            SinkKind::Parquet => Format::Parquet(parse(options)?),
            SinkKind::Rocpd => Format::Rocpd(parse(options)?),
            SinkKind::Otf2 => Format::Otf2(parse(options)?),
        })
    }

    pub fn kind(&self) -> SinkKind {
        match self {
            Format::Csv(_) => SinkKind::Csv,
            Format::Perfetto(_) => SinkKind::Perfetto,
            Format::Parquet(_) => SinkKind::Parquet,
            Format::Rocpd(_) => SinkKind::Rocpd,
            Format::Otf2(_) => SinkKind::Otf2,
        }
    }

    /// The options that differ from the format's defaults, as a pipeline writes them.
    pub fn written(&self) -> Map<String, Value> {
        match self {
            Format::Csv(o) => written(o),
            Format::Perfetto(o) => written(o),
            Format::Parquet(o) => written(o),
            Format::Rocpd(o) => written(o),
            Format::Otf2(o) => written(o),
        }
    }
}

/// Options a format does not take, or takes otherwise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct OptionError {
    /// The option at fault, where one is.
    pub key: Option<String>,
    pub message: String,
}

/// Reads options into `T`, naming the option at fault: since every option has a default,
/// the first one that `T` refuses on its own is it.
fn parse<T: DeserializeOwned>(options: &Map<String, Value>) -> Result<T, OptionError> {
    let read = |map: Map<String, Value>| serde_json::from_value::<T>(Value::Object(map));
    read(options.clone()).map_err(|e| {
        let key = options.iter().find_map(|(key, value)| {
            let alone = Map::from_iter([(key.clone(), value.clone())]);
            read(alone).is_err().then(|| key.clone())
        });
        OptionError {
            key,
            message: e.to_string(),
        }
    })
}

/// `options` without the entries that hold their default.
fn written<T: Serialize + Default>(options: &T) -> Map<String, Value> {
    let as_map = |o: &T| match serde_json::to_value(o).expect("options serialize") {
        Value::Object(map) => map,
        _ => unreachable!("options are a struct"),
    };
    let defaults = as_map(&T::default());
    let mut map = as_map(options);
    map.retain(|key, value| defaults.get(key) != Some(value));
    map
}

/// A size option: kept as written (so the Plan shows it so), read once into bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Quantity", into = "Quantity")]
pub struct Size {
    written: Quantity,
    pub bytes: u64,
}

impl TryFrom<Quantity> for Size {
    type Error = String;

    fn try_from(written: Quantity) -> Result<Size, String> {
        let bytes = written.value(parse_size)?;
        Ok(Size { written, bytes })
    }
}

impl From<Size> for Quantity {
    fn from(size: Size) -> Quantity {
        size.written
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::diag::{Diagnostic, SourceFile, Span};
    use crate::pipeline::{self, schema::SCHEMA_TEXT};
    use crate::plan::Writer;

    const KINDS: [SinkKind; 5] = [
        SinkKind::Csv,
        SinkKind::Perfetto,
        SinkKind::Parquet,
        SinkKind::Rocpd,
        SinkKind::Otf2,
    ];

    fn map(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    /// Every option of every default, as JSON: what the schema must declare.
    fn defaults(kind: SinkKind) -> Map<String, Value> {
        let value = match Format::parse(kind, &Map::new()).unwrap() {
            Format::Csv(o) => serde_json::to_value(o),
            Format::Perfetto(o) => serde_json::to_value(o),
            Format::Parquet(o) => serde_json::to_value(o),
            Format::Rocpd(o) => serde_json::to_value(o),
            Format::Otf2(o) => serde_json::to_value(o),
        };
        match value.unwrap() {
            Value::Object(map) => map,
            other => panic!("{other}"),
        }
    }

    /// The schema's `options` of a sink kind.
    fn schema_options(kind: SinkKind) -> Map<String, Value> {
        let schema: Value = serde_json::from_str(SCHEMA_TEXT).unwrap();
        let name = serde_json::to_value(kind).unwrap();
        let branch = schema["$defs"]["sink"]["allOf"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["if"]["properties"]["kind"]["const"] == name)
            .unwrap_or_else(|| panic!("the schema has no options for {name}"));
        let options = &branch["then"]["properties"]["options"];
        assert_eq!(options["additionalProperties"], false, "{name}");
        options["properties"].as_object().unwrap().clone()
    }

    /// How a schema description states a default.
    fn stated(value: &Value) -> String {
        match value {
            Value::String(s) => s.clone(),
            Value::Array(items) => items.iter().map(stated).collect::<Vec<_>>().join(", "),
            other => other.to_string(),
        }
    }

    /// The schema editors complete from declares exactly the options each sink takes, and
    /// states each default as `Default` has it (none for an option that is off unless
    /// given: no value, no items).
    #[test]
    fn the_schema_states_the_options_and_defaults_the_sinks_take() {
        for kind in KINDS {
            let defaults = defaults(kind);
            let declared = schema_options(kind);
            let names = |m: &Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
            let (mut taken, mut schema) = (names(&defaults), names(&declared));
            taken.sort();
            schema.sort();
            assert_eq!(taken, schema, "{kind:?}");
            for (key, default) in &defaults {
                let description = declared[key]["description"].as_str().unwrap_or_default();
                let statement = format!("(default {})", stated(default));
                let off = default.is_null() || default.as_array().is_some_and(Vec::is_empty);
                if off {
                    assert!(!description.contains("(default "), "{kind:?}.{key}");
                } else {
                    assert!(
                        description.contains(&statement),
                        "{kind:?}.{key}: `{description}` does not say {statement}"
                    );
                }
            }
        }
    }

    #[test]
    fn defaults_are_what_no_options_give() {
        let Format::Parquet(parquet) = Format::parse(SinkKind::Parquet, &Map::new()).unwrap()
        else {
            panic!()
        };
        assert_eq!(parquet, parquet::Options::default());
        assert_eq!(parquet.row_group_rows, 1 << 20);
        let Format::Perfetto(perfetto) = Format::parse(SinkKind::Perfetto, &Map::new()).unwrap()
        else {
            panic!()
        };
        assert!(perfetto.flows && perfetto.annotations && perfetto.split_size.is_none());
        for kind in KINDS {
            let format = Format::parse(kind, &Map::new()).unwrap();
            assert_eq!(format.kind(), kind);
            assert!(format.written().is_empty(), "{kind:?}");
        }
    }

    /// What differs from the defaults is written back as the pipeline wrote it; a default
    /// given explicitly is left out.
    #[test]
    fn written_options_are_those_that_differ() {
        let given = map(r#"{"split_size":"64KiB","flows":true,"time_unit":"us"}"#);
        let format = Format::parse(SinkKind::Perfetto, &given).unwrap();
        let Format::Perfetto(options) = &format else {
            panic!()
        };
        assert_eq!(options.split_size.as_ref().unwrap().bytes, 64 << 10);
        assert_eq!(
            format.written(),
            map(r#"{"split_size":"64KiB","time_unit":"us"}"#)
        );
        assert_eq!(
            Format::parse(SinkKind::Perfetto, &format.written()),
            Ok(format)
        );
    }

    #[test]
    fn the_option_at_fault_is_named() {
        let e = Format::parse(
            SinkKind::Parquet,
            &map(r#"{"wide_counters":true,"compresion":"zstd"}"#),
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("compresion"));
        assert!(e.message.contains("unknown field `compresion`"), "{e}");
        let e = Format::parse(SinkKind::Parquet, &map(r#"{"max_file_size":"12 XB"}"#)).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("max_file_size"));
        assert_eq!(e.message, parse_size("12 XB").unwrap_err());
        // A format's options are its own: rocpd's layout is no Parquet option.
        let e = Format::parse(SinkKind::Parquet, &map(r#"{"layout":"single"}"#)).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("layout"));
    }

    /// Compiles a pipeline with one sink, whose `options` line is `options`.
    fn compile(kind: &str, options: &str) -> Result<crate::plan::Plan, Vec<Diagnostic>> {
        let text = format!(
            "[[context]]\nname = \"c\"\ntracing = [\"kernel_dispatch\"]\n\n\
             [[sink]]\nname = \"s\"\nkind = \"{kind}\"\npath = \"out\"\n{options}\n"
        );
        let file = SourceFile::new("p.toml", text);
        let options = pipeline::Options::default();
        pipeline::compile_text(Path::new("p.toml"), file, &options).map(|c| c.plan)
    }

    /// The position of the only error.
    fn error_at(errors: &[Diagnostic]) -> (String, String) {
        let [error] = errors else {
            panic!("{errors:?}")
        };
        let position = error.span.as_ref().map(Span::position).unwrap_or_default();
        (error.message.clone(), position)
    }

    #[test]
    fn the_compiler_reads_the_options_into_the_plan() {
        let plan = compile(
            "parquet",
            "options = { compression = \"lz4\", max_file_size = \"1MiB\" }",
        )
        .unwrap();
        let Writer::Builtin(Format::Parquet(options)) = &plan.sinks[0].writer else {
            panic!("{:?}", plan.sinks[0])
        };
        assert_eq!(
            options.max_file_size.as_ref().map(|s| s.bytes),
            Some(1 << 20)
        );
        assert_eq!(
            options.row_group_rows,
            parquet::Options::default().row_group_rows
        );
    }

    /// A size the schema takes (text) but that is no size is reported where it is written;
    /// Perfetto's `split_size` was only read when the sink opened, after the run.
    #[test]
    fn a_bad_option_value_is_reported_at_its_line_and_column() {
        let errors = compile(
            "perfetto",
            "options = { flows = false, split_size = \"12 XB\" }",
        )
        .unwrap_err();
        let (message, position) = error_at(&errors);
        assert_eq!(message, parse_size("12 XB").unwrap_err());
        assert_eq!(position, "p.toml:9:41");
    }

    #[test]
    fn an_unknown_option_is_reported_at_its_line_and_column() {
        let errors = compile("rocpd", "options = {\n  layuot = \"single\" }").unwrap_err();
        let (message, position) = error_at(&errors);
        assert_eq!(message, "unknown key `layuot` in `sink[0].options`");
        assert_eq!(position, "p.toml:10:3");
        assert_eq!(errors[0].hint.as_deref(), Some("did you mean `layout`?"));
    }
}
