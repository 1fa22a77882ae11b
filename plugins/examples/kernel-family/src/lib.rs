//! A rocflow transform plugin: the family of each kernel (GEMM, attention, convolution,
//! reduction, elementwise, copy/memset, communication, other), from its name, in a
//! `kernel_family` column of kernel dispatches (and of counter samples, which name their
//! kernel too). Batches without a `kernel_name` column pass unchanged.
//!
//! ```toml
//! [[transform]]
//! name = "families"
//! kind = "plugin"
//! plugin = "kernel_family"
//! records = ["kernel_dispatch"]
//! # Optional: another column name, and rules tried before the built-in ones (a regex on
//! # the demangled name, and the family it gives, which may be a new one).
//! options = { column = "family", rules = [{ pattern = "^my_fused_mlp", family = "gemm" }] }
//! ```
//!
//! The families are `gemm`, `attention`, `convolution`, `reduction`, `elementwise`,
//! `copy_memset`, `communication` and `other`; [`family`] says how names are read.

pub mod family;

use std::collections::HashMap;
use std::sync::Arc;

use regex::Regex;
use rocflow_plugin::arrow_array::cast::AsArray;
use rocflow_plugin::arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use rocflow_plugin::arrow_schema::Field;
use rocflow_plugin::{Batch, Result, Transform, export_plugin, with_column};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// The column added.
    #[serde(default = "default_column")]
    column: String,
    /// Rules tried first, in order.
    #[serde(default)]
    rules: Vec<Rule>,
}

fn default_column() -> String {
    "kernel_family".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rule {
    /// A regex on the demangled kernel name.
    pattern: String,
    family: String,
}

pub struct KernelFamily {
    column: String,
    rules: Vec<(Regex, String)>,
    /// Families of the names seen so far: a run has few kernels and many dispatches.
    known: HashMap<String, String>,
}

impl KernelFamily {
    /// The families of `names`, one each.
    fn families(&mut self, names: &StringArray) -> StringArray {
        for name in names.iter().flatten() {
            if !self.known.contains_key(name) {
                let demangled = family::demangle(name);
                let family = (self.rules.iter())
                    .find(|(pattern, _)| pattern.is_match(&demangled))
                    .map_or_else(
                        || family::classify(&demangled).to_owned(),
                        |(_, f)| f.clone(),
                    );
                self.known.insert(name.to_owned(), family);
            }
        }
        (names.iter())
            .map(|name| name.map(|n| self.known[n].as_str()))
            .collect()
    }
}

impl Transform for KernelFamily {
    type Options = Options;

    fn new(options: Options) -> Result<Self> {
        let rules = (options.rules.into_iter())
            .map(|rule| Ok((Regex::new(&rule.pattern)?, rule.family)))
            .collect::<Result<_, regex::Error>>()?;
        Ok(KernelFamily {
            column: options.column,
            rules,
            known: HashMap::new(),
        })
    }

    fn process(&mut self, batch: Batch) -> Result<RecordBatch> {
        let Some(names) = batch.records.column_by_name("kernel_name").cloned() else {
            return Ok(batch.records);
        };
        const NOT_TEXT: &str = "the kernel_name column does not hold strings";
        // Names usually come dictionary-encoded: then each distinct name is looked at once,
        // and the families share the names' keys.
        let families: ArrayRef = match names.as_any_dictionary_opt() {
            Some(dictionary) => {
                let names = dictionary.values().as_string_opt::<i32>().ok_or(NOT_TEXT)?;
                dictionary.with_values(Arc::new(self.families(names)))
            }
            None => Arc::new(self.families(names.as_string_opt::<i32>().ok_or(NOT_TEXT)?)),
        };
        let field = Field::new(&self.column, families.data_type().clone(), true);
        Ok(with_column(batch.records, field, families)?)
    }
}

export_plugin! {
    name: "kernel_family",
    description: "Adds kernel_family: gemm, attention, convolution, reduction, elementwise, copy_memset, communication or other, from the kernel's name",
    transform: KernelFamily,
}

#[cfg(test)]
mod tests {
    use rocflow_plugin::arrow_array::types::Int32Type;
    use rocflow_plugin::arrow_array::{DictionaryArray, UInt64Array};

    use super::*;

    fn plugin(options: &str) -> KernelFamily {
        KernelFamily::new(serde_json::from_str(options).unwrap()).unwrap()
    }

    fn run(plugin: &mut KernelFamily, names: ArrayRef) -> RecordBatch {
        let records = RecordBatch::try_from_iter([("kernel_name", names)]).unwrap();
        let batch = Batch {
            table: "kernel_dispatch".into(),
            records,
        };
        plugin.process(batch).unwrap()
    }

    fn families(batch: &RecordBatch, column: &str) -> Vec<Option<String>> {
        let column = batch.column_by_name(column).unwrap();
        let text: StringArray = match column.as_any_dictionary_opt() {
            Some(d) => d
                .normalized_keys()
                .iter()
                .map(|&k| d.values().as_string::<i32>().value(k).to_owned())
                .map(Some)
                .collect(),
            None => column.as_string::<i32>().clone(),
        };
        text.iter().map(|f| f.map(str::to_owned)).collect()
    }

    #[test]
    fn families_share_the_keys_of_dictionary_encoded_names() {
        let names: DictionaryArray<Int32Type> =
            ["_Z4gemmPfS_S_i", "_Z9vectorAddPKfS0_Pfi", "_Z4gemmPfS_S_i"]
                .into_iter()
                .collect();
        let output = run(&mut plugin("{}"), Arc::new(names));
        assert_eq!(
            families(&output, "kernel_family"),
            [
                Some("gemm".into()),
                Some("elementwise".into()),
                Some("gemm".into())
            ]
        );
    }

    #[test]
    fn rules_come_first_and_the_column_can_be_renamed() {
        let options = r#"{"column": "f", "rules": [{"pattern": "^vector", "family": "stream"}]}"#;
        let names = StringArray::from(vec![Some("_Z9vectorAddPKfS0_Pfi"), None]);
        let output = run(&mut plugin(options), Arc::new(names));
        assert_eq!(families(&output, "f"), [Some("stream".into()), None]);
    }

    #[test]
    fn records_without_kernel_names_pass_unchanged() {
        let records =
            RecordBatch::try_from_iter([("bytes", Arc::new(UInt64Array::from(vec![1])) as _)])
                .unwrap();
        let batch = Batch {
            table: "memory_copy".into(),
            records: records.clone(),
        };
        assert_eq!(plugin("{}").process(batch).unwrap(), records);
    }

    #[test]
    fn unknown_options_are_refused() {
        assert!(serde_json::from_str::<Options>(r#"{"colum": "x"}"#).is_err());
    }
}
