//! The compiler's state: the document it reads, the diagnostics it collects, the plugins and
//! counters it checks against; and the services each section's compilation uses (spans,
//! errors, quantities, record kinds, plugins). The sections (`contexts`, `transforms`, and
//! the sinks and post-steps in `mod.rs`) build on it.

use std::collections::HashMap;

use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::plan::PluginRef;
use crate::plugin::{self, Check, Kind, NotFound, Plugin, Search};
use crate::record::RecordKind;
use crate::sdk::Domain;

use crate::diag::Step;
use crate::pipeline::counters::CounterCheck;
use crate::pipeline::value::Node;
use crate::units::{Quantity, UnitError};

/// Where the plugins a pipeline names are found, and how far they are checked.
pub(crate) struct Plugins<'a> {
    pub search: &'a Search,
    pub check: Check,
}

/// Collects diagnostics while the plan is built, each pointing into the merged document.
pub(crate) struct Compiler<'a> {
    pub(super) doc: &'a Node,
    pub(super) counters: CounterCheck,
    pub(super) plugins: Plugins<'a>,
    /// Operation ids each (domain, glob) selects: contexts of one pipeline tend to repeat
    /// the same filters, and matching a glob against hundreds of names adds up.
    pub(super) selections: HashMap<(Domain, String), Vec<i32>>,
    pub(super) errors: Vec<Diagnostic>,
    pub(super) warnings: Vec<Diagnostic>,
    /// See [`Options::records_only`](crate::pipeline::Options::records_only).
    pub(super) records_only: bool,
}

impl<'a> Compiler<'a> {
    pub(crate) fn new(
        doc: &'a Node,
        counters: CounterCheck,
        plugins: Plugins<'a>,
        records_only: bool,
    ) -> Self {
        Compiler {
            doc,
            counters,
            plugins,
            records_only,
            selections: HashMap::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    pub(super) fn span(&self, path: &[Step<'_>]) -> Option<Span> {
        self.doc.at(path.iter().copied()).map(|n| n.span.clone())
    }

    pub(super) fn error(
        &mut self,
        path: &[Step<'_>],
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        let diagnostic = Diagnostic::error(message).at(self.span(path));
        self.errors.push(diagnostic);
        self.errors.last_mut().expect("just pushed")
    }

    pub(super) fn warn(
        &mut self,
        path: &[Step<'_>],
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        let diagnostic = Diagnostic::warning(message).at(self.span(path));
        self.warnings.push(diagnostic);
        self.warnings.last_mut().expect("just pushed")
    }

    /// Reads a size or duration; text goes through `parse`, errors are reported.
    pub(super) fn quantity(
        &mut self,
        path: &[Step<'_>],
        q: &Quantity,
        parse: fn(&str) -> Result<u64, UnitError>,
    ) -> Option<u64> {
        q.value(parse)
            .map_err(|e| self.error(path, e.to_string()))
            .ok()
    }

    /// Record kinds named in `records = [...]`, or `default` when the list is empty.
    pub(super) fn record_kinds(
        &mut self,
        path: &[Step<'_>],
        names: &[String],
        default: &[RecordKind],
    ) -> Vec<RecordKind> {
        if names.is_empty() {
            return default.to_vec();
        }
        let mut kinds = Vec::new();
        for (k, name) in names.iter().enumerate() {
            let mut item = path.to_vec();
            item.push(Step::Index(k));
            match RecordKind::from_name(name) {
                Some(kind) if !kinds.contains(&kind) => kinds.push(kind),
                Some(_) => {}
                None => {
                    let hint = Domain::from_name(name)
                        .map(|d| {
                            format!(
                                "`{name}` is a tracing domain; its records are `{}`",
                                d.record_kind().name()
                            )
                        })
                        .or_else(|| did_you_mean(name, RecordKind::names()));
                    self.error(&item, format!("unknown record kind `{name}`"))
                        .hint = hint.or_else(|| {
                        Some(format!(
                            "record kinds: {}",
                            RecordKind::names().collect::<Vec<_>>().join(", ")
                        ))
                    });
                }
            }
        }
        kinds
    }

    /// Finds the plugin a pipeline entry (at `path`) names and checks its library without
    /// running it; with [`Check::Load`], also loads it and checks that it is a `kind`,
    /// and returns it loaded.
    pub(super) fn plugin(
        &mut self,
        path: &[Step<'_>],
        name: &str,
        kind: Kind,
    ) -> Option<(PluginRef, Option<&'static Plugin>)> {
        let library = match self.plugins.search.resolve(name) {
            Ok(library) => library.canonicalize().unwrap_or(library),
            Err(e) => {
                let hint = match &e {
                    NotFound::Name { file, .. } => format!(
                        "put {file} in one of them, or add its directory to {}",
                        plugin::PATH_VAR
                    ),
                    NotFound::NotAName(_) => format!(
                        "name the library librocflow_plugin_NAME.so, put its directory on {}, and write plugin = \"NAME\"",
                        plugin::PATH_VAR
                    ),
                };
                self.error(path, e.to_string()).hint = Some(hint);
                return None;
            }
        };
        let found = PluginRef {
            name: name.to_owned(),
            library,
        };
        let loaded = match self.plugins.check {
            Check::Inspect => plugin::inspect(&found.library).map(|()| None),
            Check::Load => {
                Plugin::load(&found.library).and_then(|p| p.require(kind).map(|()| Some(p)))
            }
        };
        match loaded {
            Ok(None) => {
                let note = Diagnostic::notice(format!(
                    "plugin `{name}` is checked without loading it: whether it is a {kind} and takes these options is checked when `rocflow run` or `replay` loads it"
                ))
                .at(self.span(path));
                self.warnings.push(note);
                Some((found, None))
            }
            Ok(Some(plugin)) => Some((found, Some(plugin))),
            Err(e) => {
                let hint = e.hint();
                self.error(path, e.to_string()).hint = hint;
                None
            }
        }
    }

    /// Where a plugin's options are reported: at `options` if the entry has them.
    pub(super) fn options_path<'p>(&self, entry: &[Step<'p>]) -> Vec<Step<'p>> {
        let mut path = entry.to_vec();
        path.push(Step::Key("options"));
        if self.span(&path).is_none() {
            path.pop();
            path.push(Step::Key("plugin"));
        }
        path
    }
}

/// The span of `len` bytes at `offset` inside a string value, if the TOML source holds the
/// string verbatim (a basic or literal string without escapes before the offset).
pub(super) fn inner_span(node: &Node, offset: usize, len: usize) -> Option<Span> {
    let value = node.as_str()?;
    let source = node.span.snippet();
    let quote = source.len().checked_sub(value.len())? / 2;
    let body = source.get(quote..quote + value.len())?;
    (body == value).then(|| {
        let start = node.span.range.start + quote + offset;
        node.span.within(start..start + len)
    })
}

/// The last line of a multi-line library error ("regex parse error: … error: unclosed group").
pub(super) fn last_line(text: &str) -> String {
    let last = text.lines().last().unwrap_or(text).trim();
    last.strip_prefix("error: ").unwrap_or(last).to_owned()
}

/// A value's name as pipelines write it (its serde form).
pub(crate) fn name_of<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
