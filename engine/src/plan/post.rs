//! Post-steps as the Plan carries them: what runs once the outputs are written.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::units::{Quantity, UnitError, parse_duration};

/// A post-step of the Plan, by name.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PostPlan {
    pub name: String,
    /// A failure of this step fails the run.
    pub required: bool,
    pub step: PostStep,
}

/// A post-step as a pipeline declares it; carried into the Plan unchanged.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PostStep {
    Summary {
        path: Option<String>,
        top: Option<u32>,
        /// The files written under `path`; every format when left out, none when empty.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        formats: Option<Vec<String>>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        by: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        domain_tables: Option<DomainTables>,
    },
    Sql {
        query: String,
        database: Option<String>,
        path: String,
        format: Option<String>,
        /// How long the query may run; the post-step's default when left out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<Quantity>,
    },
    Report {
        path: String,
        title: Option<String>,
    },
    /// `rocflow analyze`'s findings on the run, written to `path` as JSON, Markdown
    /// (`.md`) or text (`.txt`) by its extension, and printed; when `fail_if` holds for a
    /// finding, the step fails.
    Analyze {
        path: String,
        /// The rules that run; every rule when empty.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rules: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fail_if: Option<String>,
    },
    Command {
        argv: Vec<String>,
        #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
        env: IndexMap<String, String>,
    },
}

/// rocprofv3's summary (`-S`, `-D`, `--summary-groups`): text tables of its tracing
/// domains (`KERNEL_DISPATCH`, `HIP_API`, …), printed or written where it puts them.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DomainTables {
    /// One table of every domain (`-S`), after the others.
    #[serde(default)]
    pub all: bool,
    /// One table per domain (`-D`), first.
    #[serde(default)]
    pub per_domain: bool,
    /// One table per regex, of the domains whose whole name it matches (`--summary-groups`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(default)]
    pub units: SummaryUnit,
    #[serde(default)]
    pub output: Destination,
}

impl DomainTables {
    /// The regex of a group, matching a whole domain name only, as rocprofv3's
    /// `std::regex_match` does.
    pub fn group(pattern: &str) -> Result<regex::Regex, regex::Error> {
        // Checked alone first: `a)|(b` is no regex, though `^(?:a)|(b)$` is one.
        regex::Regex::new(pattern)?;
        regex::Regex::new(&format!("^(?:{pattern})$"))
    }
}

/// The unit of a summary table's times (`-u`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SummaryUnit {
    Sec,
    Msec,
    Usec,
    #[default]
    Nsec,
}

impl SummaryUnit {
    /// Its name in the tables' headers.
    pub fn name(self) -> &'static str {
        match self {
            SummaryUnit::Sec => "sec",
            SummaryUnit::Msec => "msec",
            SummaryUnit::Usec => "usec",
            SummaryUnit::Nsec => "nsec",
        }
    }

    /// Nanoseconds in one of it.
    pub fn nanoseconds(self) -> u64 {
        match self {
            SummaryUnit::Sec => 1_000_000_000,
            SummaryUnit::Msec => 1_000_000,
            SummaryUnit::Usec => 1_000,
            SummaryUnit::Nsec => 1,
        }
    }
}

/// Where text goes: `stdout`, `stderr` (either in upper case too, as rocprofv3 reads them),
/// or any other text, a file's path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    #[default]
    Stderr,
    File(String),
}

impl Destination {
    pub fn of(text: &str) -> Destination {
        match text {
            "stdout" | "STDOUT" => Destination::Stdout,
            "stderr" | "STDERR" => Destination::Stderr,
            path => Destination::File(path.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Destination::Stdout => "stdout",
            Destination::Stderr => "stderr",
            Destination::File(path) => path,
        }
    }
}

impl Serialize for Destination {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Destination {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|text| Destination::of(&text))
    }
}

/// How long a query may run when its step sets no `timeout`, in nanoseconds.
const DEFAULT_TIME_LIMIT_NS: u64 = 60_000_000_000;

/// A step's time limit in nanoseconds: its `timeout`, else the default.
pub fn time_limit(timeout: Option<&Quantity>) -> Result<u64, UnitError> {
    timeout.map_or(Ok(DEFAULT_TIME_LIMIT_NS), |t| t.value(parse_duration))
}
