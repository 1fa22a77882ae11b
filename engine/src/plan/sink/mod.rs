//! The sinks of a plan: what each writes, to which path, with which options. A built-in
//! format's options are typed: each format has one struct (in its file below), whose
//! `Default` is the one statement of its defaults. The compiler parses them once into a
//! [`Format`]; the sink opens from it and never reads JSON again. `formats!` lists the
//! formats, so a new one is its options file and one line there.
//!
//! In a serialized Plan the options are the JSON map they always were, holding what differs
//! from the defaults, so plans recorded before they were typed still read.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::plugin::PluginRef;
use crate::record::RecordKind;
use crate::units::{Quantity, UnitError, parse_size};

/// Lists the built-in formats by the name a pipeline's `kind` gives them and their options'
/// home, and derives from the list [`SinkKind`], [`Format`] and the passage between them.
macro_rules! formats {
    ($($name:literal => $Kind:ident($home:ident),)*) => {
        $(pub mod $home;)*

        /// The output formats rocflow writes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
        pub enum SinkKind {
            $(#[serde(rename = $name)] $Kind,)*
        }

        impl SinkKind {
            #[cfg(test)]
            const ALL: &[SinkKind] = &[$(SinkKind::$Kind,)*];
        }

        /// One of rocflow's output formats, with its options.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Format {
            $($Kind($home::Options),)*
        }

        impl Format {
            /// Reads the options a pipeline gives a sink of `kind`.
            pub fn parse(kind: SinkKind, options: &Map<String, Value>) -> Result<Format, OptionError> {
                Ok(match kind {
                    $(SinkKind::$Kind => Format::$Kind(parse(options)?),)*
                })
            }

            pub fn kind(&self) -> SinkKind {
                match self {
                    $(Format::$Kind(_) => SinkKind::$Kind,)*
                }
            }

            /// The options that differ from the format's defaults, as a pipeline writes them.
            pub fn written(&self) -> Map<String, Value> {
                match self {
                    $(Format::$Kind(o) => written(o),)*
                }
            }

            /// Every option, defaults included.
            #[cfg(test)]
            fn options(&self) -> Map<String, Value> {
                match self {
                    $(Format::$Kind(o) => as_map(o),)*
                }
            }
        }
    };
}

formats! {
    "perfetto" => Perfetto(perfetto),
    "parquet" => Parquet(parquet),
    "rocpd" => Rocpd(rocpd),
    "otf2" => Otf2(otf2),
    "csv" => Csv(csv),
    "json" => Json(json),
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(try_from = "RecordedSink", into = "RecordedSink")]
pub struct SinkPlan {
    pub name: String,
    pub writer: Writer,
    /// The output path with run-time placeholders (`{pid}`, …) still in it.
    pub path: String,
    pub kinds: Vec<RecordKind>,
}

/// What writes a sink's output, with its options: a format's are read when the pipeline
/// is compiled, a plugin's are handed to it as JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Writer {
    /// One of rocflow's formats.
    Builtin(Format),
    Plugin {
        plugin: PluginRef,
        options: Map<String, Value>,
    },
}

impl SinkPlan {
    /// Whether the sink writes rocflow's format `kind`.
    pub fn writes(&self, kind: SinkKind) -> bool {
        matches!(&self.writer, Writer::Builtin(format) if format.kind() == kind)
    }

    /// The options as a pipeline writes them: a format's where they differ from its
    /// defaults, a plugin's all.
    pub fn options(&self) -> Map<String, Value> {
        match &self.writer {
            Writer::Builtin(format) => format.written(),
            Writer::Plugin { options, .. } => options.clone(),
        }
    }
}

/// A sink as a serialized plan holds it, as plans have since before options were typed:
/// the format's name (or the plugin) in `kind`, the options as JSON.
#[derive(Serialize, Deserialize)]
struct RecordedSink {
    name: String,
    kind: RecordedWriter,
    path: String,
    kinds: Vec<RecordKind>,
    options: Map<String, Value>,
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum RecordedWriter {
    Builtin(SinkKind),
    Plugin(PluginRef),
}

impl TryFrom<RecordedSink> for SinkPlan {
    type Error = String;

    fn try_from(sink: RecordedSink) -> Result<SinkPlan, String> {
        let writer = match sink.kind {
            RecordedWriter::Builtin(kind) => Writer::Builtin(
                Format::parse(kind, &sink.options)
                    .map_err(|e| format!("the options of sink `{}`: {e}", sink.name))?,
            ),
            RecordedWriter::Plugin(plugin) => Writer::Plugin {
                plugin,
                options: sink.options,
            },
        };
        Ok(SinkPlan {
            name: sink.name,
            writer,
            path: sink.path,
            kinds: sink.kinds,
        })
    }
}

impl From<SinkPlan> for RecordedSink {
    fn from(sink: SinkPlan) -> RecordedSink {
        let options = sink.options();
        let kind = match sink.writer {
            Writer::Builtin(format) => RecordedWriter::Builtin(format.kind()),
            Writer::Plugin { plugin, .. } => RecordedWriter::Plugin(plugin),
        };
        RecordedSink {
            name: sink.name,
            kind,
            path: sink.path,
            kinds: sink.kinds,
            options,
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

/// Options as a JSON map.
fn as_map<T: Serialize>(options: &T) -> Map<String, Value> {
    match serde_json::to_value(options).expect("options serialize") {
        Value::Object(map) => map,
        _ => unreachable!("options are a struct"),
    }
}

/// `options` without the entries that hold their default.
fn written<T: Serialize + Default>(options: &T) -> Map<String, Value> {
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
    type Error = UnitError;

    fn try_from(written: Quantity) -> Result<Size, UnitError> {
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
    use crate::plan::plugin::PluginRef;

    fn map(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    /// Every option of every default, as JSON: what the schema must declare.
    fn defaults(kind: SinkKind) -> Map<String, Value> {
        Format::parse(kind, &Map::new()).unwrap().options()
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
        for &kind in SinkKind::ALL {
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
        for &kind in SinkKind::ALL {
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
        assert_eq!(e.message, parse_size("12 XB").unwrap_err().to_string());
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
        assert_eq!(message, parse_size("12 XB").unwrap_err().to_string());
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

    /// Plans recorded in spools before there were plugins name a sink's format in `kind`.
    #[test]
    fn sinks_serialize_their_writer_as_kind() {
        let recorded = r#"{"name":"t","kind":"csv","path":"out","kinds":[],"options":{}}"#;
        let sink: SinkPlan = serde_json::from_str(recorded).unwrap();
        assert!(sink.writes(SinkKind::Csv));
        assert_eq!(serde_json::to_string(&sink).unwrap(), recorded);
        let plugin = SinkPlan {
            writer: Writer::Plugin {
                plugin: PluginRef {
                    name: "openmetrics".into(),
                    library: "/lib/librocflow_plugin_openmetrics.so".into(),
                },
                options: serde_json::from_str(r#"{"labels":{"job":"x"}}"#).unwrap(),
            },
            ..sink
        };
        let json = serde_json::to_string(&plugin).unwrap();
        assert!(
            json.contains(r#""kind":{"name":"openmetrics","library":"/lib/"#),
            "{json}"
        );
        assert!(
            json.ends_with(r#""options":{"labels":{"job":"x"}}}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<SinkPlan>(&json).unwrap(), plugin);
    }

    /// A sink recorded before options were typed (as JSON, every value as the pipeline
    /// wrote it) reads into its format's options, and is written back the same.
    #[test]
    fn recorded_sink_options_read_typed() {
        let recorded = r#"{"name":"trace","kind":"perfetto","path":"t.pftrace","kinds":["api"],"options":{"split_size":"512MiB","time_unit":"us"}}"#;
        let sink: SinkPlan = serde_json::from_str(recorded).unwrap();
        let Writer::Builtin(Format::Perfetto(options)) = &sink.writer else {
            panic!("{sink:?}")
        };
        assert_eq!(
            options.split_size.as_ref().map(|s| s.bytes),
            Some(512 << 20)
        );
        assert!(options.flows);
        assert_eq!(serde_json::to_string(&sink).unwrap(), recorded);
        let bad = recorded.replace("512MiB", "512 parsecs");
        let e = serde_json::from_str::<SinkPlan>(&bad).unwrap_err();
        assert!(
            e.to_string().starts_with("the options of sink `trace`: "),
            "{e}"
        );
    }
}
