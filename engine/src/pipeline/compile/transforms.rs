//! The pipeline's `[[transform]]` entries, compiled in order. Each kind checks its own
//! options (in its home under `crate::transform`) through a [`TransformCheck`], which
//! knows the records the transform takes and the columns they have at its place in the
//! pipeline: those of their kind, plus any an earlier `derive` or plugin added.

use std::collections::BTreeSet;

use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::expression;
use crate::plan::transform::Check;
use crate::plan::{PluginRef, TransformPlan};
use crate::plugin::{Kind, Plugin};
use crate::record::{ColumnType, RecordKind};

use super::super::model;
use super::compiler::{Compiler, inner_span, last_line};
use crate::diag::Step;
use crate::units::{Quantity, UnitError};

/// A column added by a `derive` transform or a plugin, with the value it takes on a sample
/// record (so later expressions are checked with its type).
struct Derived {
    kind: RecordKind,
    column: String,
    sample: evalexpr::Value,
}

/// The columns records have at a point of the pipeline, beyond those of their kind.
#[derive(Default)]
struct Columns {
    derived: Vec<Derived>,
    /// Kinds that pass through a plugin transform not loaded, which may add any column,
    /// with that transform's name.
    unseen: Vec<(RecordKind, String)>,
}

impl Columns {
    fn has(&self, kind: RecordKind, column: &str) -> bool {
        kind.column(column).is_some()
            || (kind == RecordKind::Api && is_argument(column))
            || (self.derived.iter()).any(|d| d.kind == kind && d.column == column)
    }
}

impl Compiler<'_> {
    pub(super) fn transforms(
        &mut self,
        transforms: &[model::Transform],
        produced: &[RecordKind],
    ) -> Vec<TransformPlan> {
        let mut columns = Columns::default();
        let mut plans = Vec::new();
        for (index, transform) in transforms.iter().enumerate() {
            let kinds = self.record_kinds(
                &[
                    Step::Key("transform"),
                    Step::Index(index),
                    Step::Key("records"),
                ],
                &transform.records,
                produced,
            );
            let mut check = TransformCheck {
                compiler: self,
                index,
                name: &transform.name,
                kinds: &kinds,
                columns: &mut columns,
            };
            let Some(op) = transform.op.compile(&mut check) else {
                continue;
            };
            plans.push(TransformPlan {
                name: transform.name.clone(),
                kinds,
                strict: transform.strict,
                op,
            });
        }
        plans
    }
}

/// What a transform kind's checks see: the records the transform takes, their columns at
/// its place in the pipeline, and where to report. Paths given to its methods are relative
/// to the transform's entry (`["predicate"]`, `["rename", 0, "pattern"]`).
struct TransformCheck<'c, 'a> {
    compiler: &'c mut Compiler<'a>,
    index: usize,
    name: &'c str,
    kinds: &'c [RecordKind],
    columns: &'c mut Columns,
}

impl TransformCheck<'_, '_> {
    fn path<'p>(&self, key: &[Step<'p>]) -> Vec<Step<'p>> {
        let mut path = vec![Step::Key("transform"), Step::Index(self.index)];
        path.extend_from_slice(key);
        path
    }

    fn span(&self, key: &[Step<'_>]) -> Option<Span> {
        self.compiler.span(&self.path(key))
    }

    /// The kinds the transform takes that lack `column`, and the plugin transform (not
    /// loaded) that may add it to others that lack it.
    fn lacking(&self, column: &str) -> (Vec<RecordKind>, Option<String>) {
        let unseen = &self.columns.unseen;
        let (perhaps, missing): (Vec<RecordKind>, Vec<RecordKind>) = (self.kinds.iter())
            .copied()
            .filter(|&k| !self.has_column(k, column))
            .partition(|k| unseen.iter().any(|(u, _)| u == k));
        let plugin = unseen.iter().find(|(u, _)| perhaps.contains(u));
        (missing, plugin.map(|(_, name)| name.clone()))
    }

    /// Notes that `column`, at `span`, is taken to be one that the transform `plugin`, not
    /// loaded, adds.
    fn assume_column(&mut self, column: &str, plugin: &str, span: Option<Span>) {
        let note = Diagnostic::notice(format!(
            "`{column}` is taken to be a column that transform `{plugin}` adds: its plugin is not loaded to check it"
        ));
        self.compiler.warnings.push(note.at(span));
    }

    /// Parses an expression; returns the variables it reads, each with its byte offset
    /// in the expression when it can be found.
    fn parse(&mut self, key: &str, text: &str) -> Vec<(String, Option<(usize, usize)>)> {
        match expression::parse(text) {
            Ok(tree) => {
                let names: BTreeSet<&str> = tree.iter_variable_identifiers().collect();
                (names.into_iter())
                    .map(|name| {
                        (
                            name.to_owned(),
                            find_word(text, name).map(|o| (o, name.len())),
                        )
                    })
                    .collect()
            }
            Err(err) => {
                let path = self.path(&[Step::Key(key)]);
                let node = self.compiler.doc.at(path.iter().copied());
                let span = (err.span.as_ref())
                    .and_then(|at| node.and_then(|n| inner_span(n, at.start, at.len())));
                let d = Diagnostic::error(format!("invalid expression: {}", err.message))
                    .at(span.or_else(|| self.compiler.span(&path)))
                    .hint(err.hint.unwrap_or(
                        "expressions use evalexpr syntax, e.g. `duration_ns > 1000 && kernel_name != \"copy\"`",
                    ));
                self.compiler.errors.push(d);
                Vec::new()
            }
        }
    }

    /// Evaluates a checked expression once per record kind on a sample record, to catch
    /// what parsing accepts but evaluation rejects (a missing operand, a type mismatch, an
    /// unknown function). Returns the sample results; arithmetic faults of the sample
    /// values themselves (a division by zero) are not the user's and are ignored.
    fn evaluate(&mut self, key: &str, text: &str) -> Vec<evalexpr::Value> {
        use evalexpr::{ContextWithMutableVariables, EvalexprError, HashMapContext, Value};
        let Ok(tree) = expression::parse(text) else {
            return Vec::new();
        };
        let mut results = Vec::new();
        for &kind in self.kinds {
            let mut context = HashMapContext::new();
            let mut set = |name: String, value: Value| {
                (context.set_value(name, value)).expect("a fresh context is mutable");
            };
            for (name, column_type) in kind.columns() {
                let sample = match column_type {
                    ColumnType::Int => Value::Int(1),
                    ColumnType::Float => Value::Float(1.0),
                    ColumnType::String => Value::String(String::new()),
                };
                set(name.into(), sample);
            }
            for d in self.columns.derived.iter().filter(|d| d.kind == kind) {
                set(d.column.clone(), d.sample.clone());
            }
            if kind == RecordKind::Api {
                for name in tree.iter_variable_identifiers().filter(|n| is_argument(n)) {
                    set(name.into(), Value::Int(1));
                }
            }
            match tree.eval_with_context(&context) {
                Ok(value) => results.push(value),
                Err(
                    EvalexprError::DivisionError { .. }
                    | EvalexprError::ModulationError { .. }
                    | EvalexprError::AdditionError { .. }
                    | EvalexprError::SubtractionError { .. }
                    | EvalexprError::MultiplicationError { .. }
                    | EvalexprError::NegationError { .. },
                ) => results.push(Value::Empty),
                Err(err) => {
                    let message = format!("invalid expression: {err}");
                    self.error(&[Step::Key(key)], message).hint = Some(format!(
                        "checked against the columns of {} records",
                        kind.name()
                    ));
                    return Vec::new();
                }
            }
        }
        results
    }
}

impl Check for TransformCheck<'_, '_> {
    /// The record kinds the transform takes.
    fn kinds(&self) -> &[RecordKind] {
        self.kinds
    }

    /// Reports an error at `key` of the transform's entry.
    fn error(&mut self, key: &[Step<'_>], message: impl Into<String>) -> &mut Diagnostic {
        let path = self.path(key);
        self.compiler.error(&path, message)
    }

    /// Reads a size or duration at `key`; text goes through `parse`, errors are reported.
    fn quantity(
        &mut self,
        key: &[Step<'_>],
        value: &Quantity,
        parse: fn(&str) -> Result<u64, UnitError>,
    ) -> Option<u64> {
        let path = self.path(key);
        self.compiler.quantity(&path, value, parse)
    }

    /// Checks counter dimension names at `key`.
    fn dimensions(&mut self, key: &[Step<'_>], dimensions: &[String]) {
        let path = self.path(key);
        self.compiler.dimensions(&path, dimensions);
    }

    /// Checks a regex at `key`; `what` names it in the error ("regex", "kernel regex").
    fn regex(&mut self, key: &[Step<'_>], pattern: &str, what: &str) {
        if let Err(err) = regex::Regex::new(pattern) {
            let message = format!("invalid {what}: {}", last_line(&err.to_string()));
            self.error(key, message);
        }
    }

    /// Kernel-name transforms need records that name a kernel.
    fn require_kernel_names(&mut self) {
        let without: Vec<&str> = (self.kinds.iter())
            .filter(|k| k.column("kernel_name").is_none())
            .map(|k| k.name())
            .collect();
        if !without.is_empty() {
            let message = format!("{} records have no kernel name", without.join(", "));
            self.error(&[Step::Key("kind")], message).hint =
                Some("add `records = [\"kernel_dispatch\", \"counter_sample\"]`".into());
        }
    }

    /// Whether records of `kind` have `column` here.
    fn has_column(&self, kind: RecordKind, column: &str) -> bool {
        self.columns.has(kind, column)
    }

    /// Adds a column to the records of `kind` for the transforms after this one; `sample`
    /// is its value on a sample record.
    fn add_column(&mut self, kind: RecordKind, column: &str, sample: evalexpr::Value) {
        self.columns.derived.push(Derived {
            kind,
            column: column.to_owned(),
            sample,
        });
    }

    /// Notes that this transform, a plugin not loaded, may add any column to the records
    /// it takes.
    fn add_unknown_columns(&mut self) {
        let name = self.name.to_owned();
        (self.columns.unseen).extend(self.kinds.iter().map(|&kind| (kind, name.clone())));
    }

    /// Checks that every record the transform takes has `column`, named at `key`.
    fn group_column(&mut self, key: &[Step<'_>], column: &str) {
        let (missing, plugin) = self.lacking(column);
        if let Some(plugin) = &plugin {
            let span = self.span(key);
            self.assume_column(column, plugin, span);
        }
        if !missing.is_empty() {
            let hint = did_you_mean(
                column,
                (self.kinds.iter()).flat_map(|k| k.columns().map(|(n, _)| n)),
            );
            self.error(key, format!("cannot group by `{column}`: not a column of every record kind this transform takes"))
                .hint = hint;
        }
    }

    /// Reports the columns some records lack; each column comes with its byte offset and
    /// length in the string at `key`, where known. Returns whether every column is known
    /// (none is perhaps one that a plugin not loaded adds).
    fn columns(&mut self, key: &str, columns: &[(String, Option<(usize, usize)>)]) -> bool {
        let mut known = true;
        for (column, at) in columns {
            let (missing, plugin) = self.lacking(column);
            let node = self.compiler.doc.at(self.path(&[Step::Key(key)]));
            let span = node
                .and_then(|n| at.and_then(|(o, l)| inner_span(n, o, l)))
                .or_else(|| self.span(&[Step::Key(key)]));
            if let Some(plugin) = &plugin {
                known = false;
                self.assume_column(column, plugin, span.clone());
            }
            if missing.is_empty() {
                continue;
            }
            let missing: Vec<&str> = missing.iter().map(|k| k.name()).collect();
            let candidates: BTreeSet<&str> = (self.kinds.iter())
                .flat_map(|k| k.columns().map(|(n, _)| n))
                .collect();
            // Where the plugin perhaps adds it counts as having it.
            let perhaps = |k: RecordKind| {
                plugin.is_some() && self.columns.unseen.iter().any(|(u, _)| *u == k)
            };
            let having: Vec<&str> = (RecordKind::ALL.iter())
                .filter(|&&k| self.has_column(k, column) || perhaps(k))
                .map(|k| k.name())
                .collect();
            let hint = if having.is_empty() {
                did_you_mean(column, candidates.iter().copied())
            } else {
                let kinds: Vec<String> = having.iter().map(|h| format!("\"{h}\"")).collect();
                Some(format!(
                    "add `records = [{}]` to apply it only where the column exists",
                    kinds.join(", ")
                ))
            };
            let d = Diagnostic::error(format!(
                "`{column}` is not a column of {} records",
                missing.join(", ")
            ))
            .at(span)
            .maybe_hint(hint);
            self.compiler.errors.push(d);
        }
        known
    }

    /// Checks an evalexpr expression at `key`: its syntax, the columns it reads, and its
    /// evaluation on a sample record of each kind. Returns the sample results, one per
    /// kind, or none when a check failed or a column is one a plugin not loaded may add.
    fn expression(&mut self, key: &'static str, text: &str) -> Vec<evalexpr::Value> {
        let read = self.parse(key, text);
        let errors = self.compiler.errors.len();
        let known = self.columns(key, &read);
        if errors == self.compiler.errors.len() && known {
            self.evaluate(key, text)
        } else {
            Vec::new()
        }
    }

    /// Finds the plugin the transform names and checks its library; returns it, and the
    /// plugin itself when the compiler loads plugins.
    fn plugin(&mut self, reference: &str) -> Option<(PluginRef, Option<&'static Plugin>)> {
        let path = self.path(&[Step::Key("plugin")]);
        self.compiler.plugin(&path, reference, Kind::Transform)
    }

    /// Reports a fault of the plugin's options, at `options` if the entry has them.
    fn options_error(&mut self, message: impl Into<String>) {
        let path = self.compiler.options_path(&self.path(&[]));
        self.compiler.error(&path, message);
    }
}

/// Whether an expression's variable names an API call's argument (`args.sizeBytes`).
fn is_argument(name: &str) -> bool {
    (name.strip_prefix(crate::expression::ARGS)).is_some_and(|arg| !arg.is_empty())
}

/// Byte offset of `word` as a whole identifier in `text`.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    text.match_indices(word).map(|(i, _)| i).find(|&i| {
        let before = text[..i].chars().next_back().is_none_or(|c| !is_ident(c));
        let after = text[i + word.len()..]
            .chars()
            .next()
            .is_none_or(|c| !is_ident(c));
        before && after
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words() {
        assert_eq!(find_word("bytes / duration_ns > 1", "duration_ns"), Some(8));
        assert_eq!(find_word("xbytes + bytes", "bytes"), Some(9));
    }
}
