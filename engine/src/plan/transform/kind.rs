//! What each kind of transform provides the compiler, and what the compiler lends it.
//!
//! A kind's home (a module beside this one) owns its options as a pipeline declares them,
//! their JSON Schema, its checks, its compiled form and its line in `rocflow explain`;
//! what it does to records lives under `crate::transform`, built from the compiled form.

use serde_json::{Value as Json, json};

use crate::diag::{Diagnostic, Step};
use crate::plan::PluginRef;
use crate::plugin::Plugin;
use crate::record::RecordKind;
use crate::units::{Quantity, UnitError};

/// How a pipeline declares a kind of transform: the keys of its `[[transform]]` entry
/// beyond `name`, `kind`, `records` and `strict`.
pub(super) trait Declared {
    /// The kind's compiled form.
    type Plan;

    /// The JSON Schema of the kind's own keys: `properties`, and `required` or a
    /// `description` where it has them.
    fn schema() -> Json;

    /// Checks the options against the records the transform takes. `None` when the
    /// transform cannot take its place in the plan (its errors were reported).
    fn compile(&self, check: &mut impl Check) -> Option<Self::Plan>;
}

/// A kind of transform as compiled into the Plan.
pub(super) trait Compiled {
    /// What it does, in one line of `rocflow explain`.
    fn explain(&self) -> String;
}

/// What a kind's checks see: the records the transform takes, their columns at its place
/// in the pipeline, and where to report. The pipeline's compiler implements it; paths
/// given to its methods are relative to the transform's entry (`["predicate"]`,
/// `["rename", 0, "pattern"]`).
pub trait Check {
    /// The record kinds the transform takes.
    fn kinds(&self) -> &[RecordKind];

    /// Reports an error at `key` of the transform's entry.
    fn error(&mut self, key: &[Step<'_>], message: impl Into<String>) -> &mut Diagnostic;

    /// Reads a size or duration at `key`; text goes through `parse`, errors are reported.
    fn quantity(
        &mut self,
        key: &[Step<'_>],
        value: &Quantity,
        parse: fn(&str) -> Result<u64, UnitError>,
    ) -> Option<u64>;

    /// Checks counter dimension names at `key`.
    fn dimensions(&mut self, key: &[Step<'_>], dimensions: &[String]);

    /// Checks a regex at `key`; `what` names it in the error ("regex", "kernel regex").
    fn regex(&mut self, key: &[Step<'_>], pattern: &str, what: &str);

    /// Kernel-name transforms need records that name a kernel.
    fn require_kernel_names(&mut self);

    /// Whether records of `kind` have `column` here.
    fn has_column(&self, kind: RecordKind, column: &str) -> bool;

    /// Adds a column to the records of `kind` for the transforms after this one; `sample`
    /// is its value on a sample record.
    fn add_column(&mut self, kind: RecordKind, column: &str, sample: evalexpr::Value);

    /// Notes that this transform, a plugin not loaded, may add any column to the records
    /// it takes.
    fn add_unknown_columns(&mut self);

    /// Checks that every record the transform takes has `column`, named at `key`.
    fn group_column(&mut self, key: &[Step<'_>], column: &str);

    /// Reports the columns some records lack; each column comes with its byte offset and
    /// length in the string at `key`, where known. Returns whether every column is known
    /// (none is perhaps one that a plugin not loaded adds).
    fn columns(&mut self, key: &str, columns: &[(String, Option<(usize, usize)>)]) -> bool;

    /// Checks an evalexpr expression at `key`: its syntax, the columns it reads, and its
    /// evaluation on a sample record of each kind. Returns the sample results, one per
    /// kind, or none when a check failed or a column is one a plugin not loaded may add.
    fn expression(&mut self, key: &'static str, text: &str) -> Vec<evalexpr::Value>;

    /// Finds the plugin the transform names and checks its library; returns it, and the
    /// plugin itself when the compiler loads plugins.
    fn plugin(&mut self, reference: &str) -> Option<(PluginRef, Option<&'static Plugin>)>;

    /// Reports a fault of the plugin's options, at `options` if the entry has them.
    fn options_error(&mut self, message: impl Into<String>);
}

/// The schema of `strict` for a kind whose records can each fail (an expression's).
pub(super) fn strict_per_record() -> Json {
    json!({
        "type": "boolean",
        "description": "Stop the run at the first record the expression fails on, instead of reporting the first failures and going on."
    })
}
