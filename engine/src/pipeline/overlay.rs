//! Command-line flags that change a pipeline: rocprofv3's everyday options (`--pmc`,
//! `--kernel-include-regex`, `--collection-period`, `--stats`, `-d`, …) for `rocflow run`
//! and `rocflow explain`, so a one-off change needs no pipeline file.
//!
//! The flags are applied to the merged document before its parameters, as the entries of a
//! pipeline extending it would be, so a run with flags is the run of the pipeline they
//! describe and every later check applies to what they added (a diagnostic about a flag's
//! value points at it on the command line). A flag never replaces what the pipeline says:
//! one that would is an error naming the flag and the place in the pipeline.

use std::ops::Range;

use crate::diag::{Diagnostic, SourceFile, Span};
use crate::import::input::TimeUnit;
use crate::import::{counter_names, kernels, period};

use super::params::Override;
use super::value::{Entry, Node, Value};

/// What a flag asks of the pipeline, in rocprofv3's terms.
#[derive(Debug, Clone)]
pub enum Change {
    /// `-d DIR`: the `output_dir` parameter.
    OutputDir(String),
    /// `--pmc NAME…`: a context that collects these counters (apart by spaces or commas).
    Counters(Vec<String>),
    /// `--kernel-include-regex`: the kernels whose counters are collected.
    KernelInclude(String),
    /// `--kernel-exclude-regex`: kernels whose counters are not collected.
    KernelExclude(String),
    /// `--kernel-iteration-range`: the dispatches of each kernel whose counters are collected.
    KernelIterations(Vec<String>),
    /// `--collection-period START_DELAY:COLLECTION_TIME:REPEAT` in a unit.
    CollectionPeriod(Vec<String>, TimeUnit),
    /// `--stats`: a summary step, whose CSV tables are rocprofv3's statistics.
    Stats,
}

impl Change {
    /// The order changes apply in, whatever the command line's: the counters context comes
    /// before the kernel filters that apply to it.
    fn rank(&self) -> u8 {
        match self {
            Change::OutputDir(_) => 0,
            Change::Counters(_) => 1,
            Change::KernelInclude(_) | Change::KernelExclude(_) | Change::KernelIterations(_) => 2,
            Change::CollectionPeriod(..) => 3,
            Change::Stats => 4,
        }
    }

    fn values(&self) -> Vec<&str> {
        match self {
            Change::OutputDir(v) | Change::KernelInclude(v) | Change::KernelExclude(v) => {
                vec![v]
            }
            Change::Counters(v) | Change::KernelIterations(v) | Change::CollectionPeriod(v, _) => {
                v.iter().map(String::as_str).collect()
            }
            Change::Stats => Vec::new(),
        }
    }
}

/// The flags given, each with the name it was given by.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    flags: Vec<(&'static str, Change)>,
}

/// A flag written out on the command line: its name's and its values' places.
struct Written<'a> {
    name: &'static str,
    change: &'a Change,
    flag: Span,
    values: Vec<Span>,
}

impl Written<'_> {
    /// The place of the flag with its values.
    fn whole(&self) -> Span {
        let end = self.values.last().unwrap_or(&self.flag).range.end;
        Span::new(&self.flag.file, self.flag.range.start..end)
    }

    /// The error of a flag that would replace what the pipeline sets at `existing`.
    fn conflict(&self, message: String, existing: &Node) -> Diagnostic {
        Diagnostic::error(message)
            .at(Some(existing.span.clone()))
            .note(format!("the flag: `{}`", self.whole().snippet()))
    }
}

impl Overlay {
    pub fn add(&mut self, flag: &'static str, change: Change) {
        self.flags.push((flag, change));
    }

    pub fn is_empty(&self) -> bool {
        self.flags.is_empty()
    }

    /// The flags as written on one line, which diagnostics point into.
    fn written(&self) -> Vec<Written<'_>> {
        let mut text = String::new();
        let mut places: Vec<(Range<usize>, Vec<Range<usize>>)> = Vec::new();
        for (name, change) in &self.flags {
            if !text.is_empty() {
                text.push(' ');
            }
            let flag = text.len()..text.len() + name.len();
            text.push_str(name);
            let values = change.values().into_iter().map(|value| {
                text.push(' ');
                let start = text.len();
                text.push_str(value);
                start..text.len()
            });
            let values = values.collect();
            places.push((flag, values));
        }
        let file = SourceFile::new("command line", text);
        let mut written: Vec<Written<'_>> = (self.flags.iter().zip(places))
            .map(|((name, change), (flag, values))| Written {
                name,
                change,
                flag: Span::new(&file, flag),
                values: values.into_iter().map(|v| Span::new(&file, v)).collect(),
            })
            .collect();
        written.sort_by_key(|w| w.change.rank());
        written
    }

    /// The flags, for the plan's sources (`rocflow explain`).
    pub fn describe(&self) -> Option<String> {
        let written = self.written();
        let file = &written.first()?.flag.file;
        Some(format!("command line `{}`", file.text()))
    }

    /// Applies the flags to a merged document; `overrides` are the `--set` ones, which a
    /// flag may not contradict. Gives notices of flags that asked for what the pipeline
    /// does already.
    pub(super) fn apply(
        &self,
        doc: &mut Node,
        overrides: &[Override],
    ) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        let mut notices = Vec::new();
        for flag in self.written() {
            let outcome = match flag.change {
                Change::OutputDir(dir) => output_dir(doc, &flag, dir, overrides),
                Change::Counters(names) => counters(doc, &flag, names),
                Change::KernelInclude(regex) => {
                    kernel_filter(doc, &flag, &["kernels", "include"], regex)
                }
                Change::KernelExclude(regex) => {
                    kernel_filter(doc, &flag, &["kernels", "exclude"], regex)
                }
                Change::KernelIterations(ranges) => match kernels::iteration_ranges(ranges) {
                    Ok(ranges) => kernel_filter(doc, &flag, &["iterations"], &ranges),
                    Err(message) => Err(vec![
                        Diagnostic::error(
                            message
                                .replace("`kernel_iteration_range`", "`--kernel-iteration-range`"),
                        )
                        .at(Some(flag.whole()))
                        .hint("write ranges and iterations like \"[1-10],[20]\""),
                    ]),
                },
                Change::CollectionPeriod(periods, unit) => {
                    collection_period(doc, &flag, periods, *unit)
                }
                Change::Stats => stats(doc, &flag).map(|notice| notices.extend(notice)),
            };
            if let Err(e) = outcome {
                errors.extend(e);
            }
        }
        if errors.is_empty() {
            Ok(notices)
        } else {
            Err(errors)
        }
    }
}

type Applied = Result<(), Vec<Diagnostic>>;

/// The table at `key` of the document's root, created when missing.
fn root_table<'a>(doc: &'a mut Node, key: &str, span: &Span) -> Option<&'a mut Node> {
    let root = doc.as_table_mut()?;
    let entry = root.entry(key.to_owned()).or_insert_with(|| Entry {
        key: span.clone(),
        node: Node {
            value: Value::Array(Vec::new()),
            span: span.clone(),
        },
    });
    Some(&mut entry.node)
}

/// The `[[context]]` entries (or `[[post]]`), each with its name.
fn entries<'a>(doc: &'a Node, key: &str) -> impl Iterator<Item = (&'a Node, &'a str)> {
    let items = doc.get(key).and_then(Node::as_array).unwrap_or_default();
    items
        .iter()
        .map(|item| (item, item.get("name").and_then(Node::as_str).unwrap_or("?")))
}

/// Inserts `key = value` into a table node.
fn insert(table: &mut Node, key: &str, value: Node) {
    if let Some(table) = table.as_table_mut() {
        let key_span = value.span.clone();
        table.insert(
            key.to_owned(),
            Entry {
                key: key_span,
                node: value,
            },
        );
    }
}

/// `-d DIR` sets the `output_dir` parameter, where every shipped template writes.
fn output_dir(doc: &mut Node, flag: &Written<'_>, dir: &str, overrides: &[Override]) -> Applied {
    if overrides.iter().any(|o| o.name() == "output_dir") {
        return Err(vec![
            Diagnostic::error(format!(
                "`{}` and `--set output_dir=…` both say where the outputs go",
                flag.name
            ))
            .at(Some(flag.whole()))
            .hint("give one of them"),
        ]);
    }
    let file = doc.span.file.name().to_owned();
    let param = doc
        .as_table_mut()
        .and_then(|root| root.get_mut("params"))
        .and_then(|params| params.node.as_table_mut())
        .and_then(|params| params.get_mut("output_dir"));
    let Some(param) = param else {
        return Err(vec![
            Diagnostic::error(format!(
                "`{}` sets the `output_dir` parameter, and pipeline {file} has none",
                flag.name
            ))
            .at(Some(flag.whole()))
            .hint("declare `output_dir` under [params] and write the output paths as \"{output_dir}/…\" (as the shipped templates do), or extend `base`"),
        ]);
    };
    param.node = Node::from_json(&dir.into(), &flag.values[0]);
    Ok(())
}

/// `--pmc` adds a context that collects the counters, named `pmc`; rocprofiler-sdk counts
/// dispatches for one context only, so a pipeline that counts already conflicts.
fn counters(doc: &mut Node, flag: &Written<'_>, written: &[String]) -> Applied {
    const NAME: &str = "pmc";
    let mut errors = Vec::new();
    for (context, name) in entries(doc, "context") {
        let uses = [
            ("counters", "collects counters"),
            ("serialize", "serializes dispatches"),
        ];
        let counting = uses.iter().find(|(key, _)| match context.get(key) {
            Some(Node {
                value: Value::Boolean(on),
                ..
            }) => *on,
            found => found.is_some(),
        });
        if let Some((key, what)) = counting {
            errors.push(
                flag.conflict(
                    format!(
                        "`{}` adds a context that collects counters, and context `{name}` {what}",
                        flag.name
                    ),
                    context.get(key).expect("found"),
                )
                .hint(format!(
                    "rocprofiler-sdk counts dispatches for one context per process: add the counters to context `{name}` instead of `{}`",
                    flag.name
                )),
            );
        } else if name == NAME {
            errors.push(
                flag.conflict(
                    format!(
                        "`{}` adds a context named `{NAME}`, and the pipeline has one",
                        flag.name
                    ),
                    context.get("name").expect("named"),
                )
                .hint("rename the pipeline's context"),
            );
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut names = Vec::new();
    for (value, span) in written.iter().zip(&flag.values) {
        for name in counter_names(value) {
            // A name is a part of its value: its place is its offset within it.
            let start = span.range.start + (name.as_ptr() as usize - value.as_ptr() as usize);
            let at = Span::new(&span.file, start..start + name.len());
            names.push(Node::from_json(&name.into(), &at));
        }
    }
    if names.is_empty() {
        return Err(vec![
            Diagnostic::error(format!("`{}` names no counter", flag.name))
                .at(Some(flag.whole()))
                .hint("--pmc SQ_WAVES GRBM_GUI_ACTIVE"),
        ]);
    }
    let span = flag.whole();
    let mut context = Node::from_json(&serde_json::json!({ "name": NAME, "counters": {} }), &span);
    let mut table = Node::from_json(&serde_json::json!({}), &span);
    insert(
        &mut table,
        "collect",
        Node {
            value: Value::Array(names),
            span: span.clone(),
        },
    );
    insert(&mut context, "counters", table);
    if let Some(Node {
        value: Value::Array(contexts),
        ..
    }) = root_table(doc, "context", &span)
    {
        contexts.push(context);
    }
    Ok(())
}

/// The kernel filters (`path` below `[context.counters]`) of every context that collects
/// counters: rocprofv3's apply to counter collection (and thread traces) only.
fn kernel_filter(doc: &mut Node, flag: &Written<'_>, path: &[&str], value: &str) -> Applied {
    let Some(Node {
        value: Value::Array(contexts),
        ..
    }) = doc
        .as_table_mut()
        .and_then(|root| root.get_mut("context"))
        .map(|e| &mut e.node)
    else {
        return Err(vec![no_counters(doc, flag)]);
    };
    let mut applied = false;
    let mut errors = Vec::new();
    for context in contexts.iter_mut() {
        let name = context
            .get("name")
            .and_then(Node::as_str)
            .unwrap_or("?")
            .to_owned();
        let Some(table) = context
            .as_table_mut()
            .and_then(|t| t.get_mut("counters"))
            .map(|e| &mut e.node)
        else {
            continue;
        };
        applied = true;
        let (last, parents) = path.split_last().expect("a key");
        let mut node = table;
        for key in parents {
            if node.get(key).is_none() {
                insert(
                    node,
                    key,
                    Node::from_json(&serde_json::json!({}), &flag.flag),
                );
            }
            node = &mut node
                .as_table_mut()
                .expect("a table")
                .get_mut(*key)
                .expect("inserted")
                .node;
        }
        if let Some(existing) = node.get(last) {
            let mut e = flag.conflict(
                format!(
                    "`{}` would replace `{}` of context `{name}`",
                    flag.name,
                    path.join(".")
                ),
                existing,
            );
            // A template's parameter says the same: that is the way to change it.
            if let Some(param) = existing
                .as_str()
                .and_then(|s| s.strip_prefix('{')?.strip_suffix('}'))
            {
                e = e.hint(format!(
                    "the pipeline takes it from a parameter: --set {param}=…"
                ));
            } else {
                e = e.hint(format!("drop `{}`, or the pipeline's setting", flag.name));
            }
            errors.push(e);
            continue;
        }
        let span = flag.values.first().cloned().unwrap_or_else(|| flag.whole());
        let span = if flag.values.len() > 1 {
            flag.whole()
        } else {
            span
        };
        insert(node, last, Node::from_json(&value.into(), &span));
    }
    if !applied {
        return Err(vec![no_counters(doc, flag)]);
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn no_counters(doc: &Node, flag: &Written<'_>) -> Diagnostic {
    Diagnostic::error(format!(
        "`{}` selects the kernels whose counters are collected (as in rocprofv3), and pipeline {} collects none",
        flag.name,
        doc.span.file.name()
    ))
    .at(Some(flag.whole()))
    .hint("add --pmc NAME…; to keep only some kernels' records, add a `kernel_filter` transform")
}

/// `--collection-period`: every context collects in the period (rocprofv3 starts and
/// stops all of its contexts on it).
fn collection_period(
    doc: &mut Node,
    flag: &Written<'_>,
    periods: &[String],
    unit: TimeUnit,
) -> Applied {
    if let Some(second) = flag.values.get(1) {
        return Err(vec![
            Diagnostic::error(
                "rocflow collects in one period: give one `START_DELAY:COLLECTION_TIME:REPEAT`",
            )
            .at(Some(second.clone())),
        ]);
    }
    let period = period::period(&periods[0], unit).map_err(|message| {
        vec![Diagnostic::error(message).at(Some(flag.values[0].clone())).hint(
            "write START_DELAY:COLLECTION_TIME:REPEAT, e.g. 1:2:0 (in seconds unless --collection-period-unit says otherwise)",
        )]
    })?;
    let period = serde_json::to_value(&period).expect("periods serialize");
    let Some(Node {
        value: Value::Array(contexts),
        ..
    }) = doc
        .as_table_mut()
        .and_then(|root| root.get_mut("context"))
        .map(|e| &mut e.node)
    else {
        return Err(vec![
            Diagnostic::error(format!(
                "`{}`: the pipeline has no context to collect in a period",
                flag.name
            ))
            .at(Some(flag.whole())),
        ]);
    };
    let mut errors = Vec::new();
    for context in contexts.iter_mut() {
        if let Some(existing) = context.get("period") {
            let name = context.get("name").and_then(Node::as_str).unwrap_or("?");
            errors.push(
                flag.conflict(
                    format!(
                        "`{}` would replace the period of context `{name}`",
                        flag.name
                    ),
                    existing,
                )
                .hint(format!("drop `{}`, or the context's `period`", flag.name)),
            );
            continue;
        }
        insert(context, "period", Node::from_json(&period, &flag.values[0]));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// `--stats` adds a summary step writing CSV tables, unless the pipeline has one.
fn stats(doc: &mut Node, flag: &Written<'_>) -> Result<Option<Diagnostic>, Vec<Diagnostic>> {
    const NAME: &str = "stats";
    for (post, name) in entries(doc, "post") {
        if post.get("kind").and_then(Node::as_str) == Some("summary") {
            let notice = Diagnostic::notice(format!(
                "`{}`: the pipeline's summary step `{name}` writes the statistics already",
                flag.name
            ))
            .at(post.get("name").map(|n| n.span.clone()));
            return Ok(Some(notice));
        }
        if name == NAME {
            return Err(vec![
                flag.conflict(
                    format!(
                        "`{}` adds a post-step named `{NAME}`, and the pipeline has one",
                        flag.name
                    ),
                    post.get("name").expect("named"),
                )
                .hint("rename the pipeline's step"),
            ]);
        }
    }
    let dir = doc
        .at([super::Step::Key("params"), super::Step::Key("output_dir")])
        .map_or("", |_| "{output_dir}/");
    let step = serde_json::json!({
        "name": NAME,
        "kind": "summary",
        "path": format!("{dir}{NAME}"),
        "formats": ["csv"],
    });
    let span = flag.whole();
    if let Some(Node {
        value: Value::Array(posts),
        ..
    }) = root_table(doc, "post", &span)
    {
        posts.push(Node::from_json(&step, &span));
    }
    Ok(None)
}
