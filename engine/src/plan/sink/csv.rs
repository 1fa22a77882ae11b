//! The CSV sink's options: whose files it writes (rocflow's, a directory with one CSV file
//! per record kind, simple and readable by anything; or rocprofv3's, files named after a
//! prefix), and, for rocprofv3's, how agents are named and whether the statistics files
//! are written.
//!
//! A pipeline writes them flat (`options = { flavour = "rocprofv3", agent_index =
//! "absolute" }`); the options that only rocprofv3's files have are refused with
//! rocflow's, so the typed [`Flavour`] holds them only where they apply.

use serde::{Deserialize, Serialize};

/// The sink's `options`; `Default` holds their defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Written", into = "Written")]
pub struct Options {
    pub flavour: Flavour,
}

/// Whose files the sink writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Flavour {
    /// Every column of every record kind, one file per kind, in the directory at the path.
    #[default]
    Rocflow,
    /// rocprofv3's files, `PATH_kernel_trace.csv`, …, for scripts written against them.
    Rocprofv3(Rocprofv3),
}

/// The options of rocprofv3's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rocprofv3 {
    pub agent_index: AgentIndex,
    /// Whether the statistics files (`PATH_kernel_stats.csv`, …, `PATH_domain_stats.csv`)
    /// are written, as `rocprofv3 --stats` writes them.
    pub stats: bool,
}

/// How columns that name an agent number it: rocprofv3's `--agent-index`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentIndex {
    /// `Agent N`, N the agent's node id, cgroups masking or not.
    Absolute,
    /// `Agent N`, N the agent's logical node id: its index among the agents the process
    /// sees (rocprofv3's default).
    #[default]
    Relative,
    /// `GPU N` or `CPU N`, N the agent's index among the agents of its type the process
    /// sees.
    TypeRelative,
}

/// The options as a pipeline writes them.
#[derive(Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Written {
    flavour: FlavourName,
    agent_index: AgentIndex,
    stats: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum FlavourName {
    #[default]
    Rocflow,
    Rocprofv3,
}

impl Default for Written {
    fn default() -> Written {
        Written {
            flavour: FlavourName::Rocflow,
            agent_index: AgentIndex::default(),
            stats: true,
        }
    }
}

impl TryFrom<Written> for Options {
    type Error = String;

    fn try_from(written: Written) -> Result<Options, String> {
        let flavour = match written.flavour {
            FlavourName::Rocprofv3 => Flavour::Rocprofv3(Rocprofv3 {
                agent_index: written.agent_index,
                stats: written.stats,
            }),
            FlavourName::Rocflow => {
                let defaults = Written::default();
                let own = [
                    ("agent_index", written.agent_index != defaults.agent_index),
                    ("stats", written.stats != defaults.stats),
                ];
                if let Some((option, _)) = own.iter().find(|(_, set)| *set) {
                    return Err(format!(
                        "`{option}` is an option of rocprofv3's files: set `flavour = \
                         \"rocprofv3\"` with it"
                    ));
                }
                Flavour::Rocflow
            }
        };
        Ok(Options { flavour })
    }
}

impl From<Options> for Written {
    fn from(options: Options) -> Written {
        match options.flavour {
            Flavour::Rocflow => Written::default(),
            Flavour::Rocprofv3(rocprofv3) => Written {
                flavour: FlavourName::Rocprofv3,
                agent_index: rocprofv3.agent_index,
                stats: rocprofv3.stats,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::super::{Format, SinkKind};
    use super::*;

    fn parse(options: Value) -> Result<Format, super::super::OptionError> {
        let Value::Object(map) = options else {
            panic!()
        };
        Format::parse(SinkKind::Csv, &map)
    }

    #[test]
    fn rocprofv3s_options_are_read_and_written_back() {
        let format = parse(json!({"flavour": "rocprofv3", "agent_index": "type-relative"}));
        let format = format.unwrap();
        let Format::Csv(options) = &format else {
            panic!()
        };
        let expected = Rocprofv3 {
            agent_index: AgentIndex::TypeRelative,
            stats: true,
        };
        assert_eq!(options.flavour, Flavour::Rocprofv3(expected));
        let written = format.written();
        assert_eq!(
            Value::Object(written),
            json!({"flavour": "rocprofv3", "agent_index": "type-relative"})
        );
        assert_eq!(parse(json!({})).unwrap().written(), Map::new());
    }

    /// rocflow's files name agents by rocflow's index and have no statistics: the options
    /// of rocprofv3's are refused there, naming the option.
    #[test]
    fn rocprofv3s_options_are_refused_for_rocflows_files() {
        for (key, value) in [("agent_index", json!("absolute")), ("stats", json!(false))] {
            let error = parse(json!({ key: value })).unwrap_err();
            assert_eq!(error.key.as_deref(), Some(key));
            assert!(error.message.contains("flavour = \"rocprofv3\""), "{error}");
        }
        let error = parse(json!({"flavour": "rocprofv3", "agent_index": "logical"}));
        assert_eq!(error.unwrap_err().key.as_deref(), Some("agent_index"));
    }
}
