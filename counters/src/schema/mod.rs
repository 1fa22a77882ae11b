//! The two YAML schemas rocprofiler-sdk has used for counter definitions, read into one
//! model. Both readers share [`Reader`], so a mistake gets the same message in either.

pub(crate) mod legacy;
mod reader;
pub(crate) mod standard;

use self::reader::Reader;
use crate::counter::Counter;
use crate::diagnostic::Diagnostic;
use crate::yaml::Document;

/// Which schema a file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// Before May 2025: `schema-version`, then one top-level key per counter, each with
    /// `architectures:` keyed by slash-joined architecture names.
    Legacy,
    /// `rocprofiler-sdk: {counters-schema-version, counters: [...]}`, one definition per
    /// list of architectures.
    Standard,
}

impl Schema {
    /// The standardized schema nests everything under `rocprofiler-sdk`.
    pub(crate) fn detect(doc: &Document) -> Schema {
        match doc.root.get(standard::ROOT_KEY) {
            Some(_) => Schema::Standard,
            None => Schema::Legacy,
        }
    }
}

/// What a reader found in a file.
pub(crate) struct Parsed {
    pub schema: Schema,
    pub counters: Vec<Counter>,
    pub warnings: Vec<Diagnostic>,
}

/// Reads a file in whichever schema it is written in; every error found, or the counters.
pub(crate) fn read(doc: &Document) -> Result<Parsed, Vec<Diagnostic>> {
    let mut reader = Reader::new(doc);
    let schema = Schema::detect(doc);
    let counters = match schema {
        Schema::Legacy => legacy::read(&mut reader),
        Schema::Standard => standard::read(&mut reader),
    };
    reader.unique_names(&counters);
    if reader.errors.is_empty() && schema == Schema::Standard {
        reader.errors = standard::validate(doc);
    }
    reader
        .errors
        .sort_by_key(|d| d.location.as_ref().map(|l| l.span.start));
    match reader.errors.is_empty() {
        true => Ok(Parsed {
            schema,
            counters,
            warnings: reader.warnings,
        }),
        false => Err(reader.errors),
    }
}
