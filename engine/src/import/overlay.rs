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

use super::input::TimeUnit;
use super::pmc::counter_names;
use super::{kernels, paths, period};
use crate::diag::{Diagnostic, SourceFile, Span};
use crate::kernel_names::KernelNames;

use crate::diag::Step;
use crate::pipeline::Edit;
use crate::pipeline::params::Override;
use crate::pipeline::value::{Entry, Node, Value};

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
    /// `--kernel-names FORM`: `[pipeline] kernel_names`.
    KernelNames(KernelNames),
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
            Change::KernelNames(_) => 5,
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
            Change::KernelNames(form) => vec![form.as_str()],
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
    /// The place of the flag's values (of the flag, for one without).
    fn value(&self) -> Span {
        let (Some(first), Some(last)) = (self.values.first(), self.values.last()) else {
            return self.flag.clone();
        };
        Span::new(&first.file, first.range.start..last.range.end)
    }

    /// The place of the flag with its values.
    fn whole(&self) -> Span {
        let end = self.values.last().unwrap_or(&self.flag).range.end;
        Span::new(&self.flag.file, self.flag.range.start..end)
    }

    /// An error at the flag.
    fn error(&self, message: String) -> Diagnostic {
        Diagnostic::error(message).at(Some(self.whole()))
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

    /// Whether a flag changes more than the kernel names: what a recorded plan, replayed
    /// as it was, cannot take.
    pub fn changes_steps(&self) -> bool {
        (self.flags.iter()).any(|(_, change)| !matches!(change, Change::KernelNames(_)))
    }

    /// The form `--kernel-names` asks for, if given.
    pub fn kernel_names(&self) -> Option<KernelNames> {
        self.flags.iter().find_map(|(_, change)| match change {
            Change::KernelNames(form) => Some(*form),
            _ => None,
        })
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
}

impl Edit for Overlay {
    /// The flags, for the plan's sources (`rocflow explain`).
    fn describe(&self) -> Option<String> {
        let written = self.written();
        let file = &written.first()?.flag.file;
        Some(format!("command line `{}`", file.text()))
    }

    /// Applies the flags to a merged document; `overrides` are the `--set` ones, which a
    /// flag may not contradict. Gives notices of flags that asked for what the pipeline
    /// does already.
    fn apply(
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
                    kernel_filter(doc, &flag, Some("kernels"), "include", regex)
                }
                Change::KernelExclude(regex) => {
                    kernel_filter(doc, &flag, Some("kernels"), "exclude", regex)
                }
                Change::KernelIterations(ranges) => iterations(doc, &flag, ranges),
                Change::CollectionPeriod(periods, unit) => {
                    collection_period(doc, &flag, periods, *unit)
                }
                Change::Stats => stats(doc, &flag).map(|notice| notices.extend(notice)),
                Change::KernelNames(form) => kernel_names(doc, &flag, *form),
            };
            if let Err(e) = outcome {
                errors.extend(e);
            }
        }
        match errors.is_empty() {
            true => Ok(notices),
            false => Err(errors),
        }
    }
}

type Applied = Result<(), Vec<Diagnostic>>;

fn all_of(errors: Vec<Diagnostic>) -> Applied {
    match errors.is_empty() {
        true => Ok(()),
        false => Err(errors),
    }
}

/// The `[[context]]` (or `[[post]]`) entries of the document.
fn entries_mut<'a>(doc: &'a mut Node, key: &str) -> Option<&'a mut Vec<Node>> {
    let entry = doc.as_table_mut()?.get_mut(key)?;
    match &mut entry.node.value {
        Value::Array(items) => Some(items),
        _ => None,
    }
}

/// Adds an entry to the document's `[[context]]` (or `[[post]]`) entries.
fn push_entry(doc: &mut Node, key: &str, entry: Node) {
    if entries_mut(doc, key).is_none()
        && let Some(root) = doc.as_table_mut()
    {
        let items = Node {
            value: Value::Array(Vec::new()),
            span: entry.span.clone(),
        };
        let key_span = entry.span.clone();
        root.insert(
            key.to_owned(),
            Entry {
                key: key_span,
                node: items,
            },
        );
    }
    if let Some(items) = entries_mut(doc, key) {
        items.push(entry);
    }
}

fn name_of(entry: &Node) -> &str {
    entry.get("name").and_then(Node::as_str).unwrap_or("?")
}

/// Inserts `key = value` into a table node, unless it has one, and gives the key's value;
/// nothing for a node that is no table (the schema reports it).
fn insert<'a>(table: &'a mut Node, key: &str, value: Node) -> Option<&'a mut Node> {
    let key_span = value.span.clone();
    let entry = table
        .as_table_mut()?
        .entry(key.to_owned())
        .or_insert(Entry {
            key: key_span,
            node: value,
        });
    Some(&mut entry.node)
}

/// The parameter a value is taken from, when it is exactly `"{name}"`: how a template
/// lets its users change it.
fn parameter(value: &Node) -> Option<&str> {
    value.as_str()?.strip_prefix('{')?.strip_suffix('}')
}

/// The hint for a flag that would replace `existing`.
fn replace_hint(flag: &Written<'_>, existing: &Node, what: &str) -> String {
    match parameter(existing) {
        Some(param) => format!("the pipeline takes {what} from a parameter: --set {param}=…"),
        None => format!("drop `{}`, or the pipeline's setting", flag.name),
    }
}

/// `-d DIR` sets the `output_dir` parameter, where every shipped template writes; DIR may
/// hold rocprofv3's placeholders.
fn output_dir(doc: &mut Node, flag: &Written<'_>, dir: &str, overrides: &[Override]) -> Applied {
    if overrides.iter().any(|o| o.name() == "output_dir") {
        return Err(vec![
            flag.error(format!(
                "`{}` and `--set output_dir=…` both say where the outputs go",
                flag.name
            ))
            .hint("give one of them"),
        ]);
    }
    let file = doc.span.file.name().to_owned();
    let param = (doc.as_table_mut())
        .and_then(|root| root.get_mut("params"))
        .and_then(|params| params.node.as_table_mut())
        .and_then(|params| params.get_mut("output_dir"));
    let Some(param) = param else {
        return Err(vec![
            flag.error(format!(
                "`{}` sets the `output_dir` parameter, and pipeline {file} has none",
                flag.name
            ))
            .hint("declare `output_dir` under [params] and write the output paths as \"{output_dir}/…\" (as the shipped templates do), or extend `base`"),
        ]);
    };
    // rocprofv3's placeholders (`%hostname%`, `%p`, …) are rocflow's (`{hostname}`, …).
    let translated = paths::translate(dir);
    if let Some(unfilled) = translated.params.first() {
        return Err(vec![
            Diagnostic::error(format!(
                "rocflow has no value for `{}` in an output directory",
                unfilled.written
            ))
            .at(Some(flag.value()))
            .hint("rocflow fills {hostname}, {pid}, {ppid}, {rank} and {timestamp} (rocprofv3's %hostname%, %pid%, %ppid%, %rank% and %launch_time%)"),
        ]);
    }
    param.node = Node::from_json(&translated.text.into(), &flag.value());
    Ok(())
}

/// `--pmc` adds a context that collects the counters, named `pmc`; rocprofiler-sdk counts
/// dispatches for one context only, so a pipeline that counts already conflicts.
fn counters(doc: &mut Node, flag: &Written<'_>, written: &[String]) -> Applied {
    const NAME: &str = "pmc";
    let contexts = entries_mut(doc, "context").map_or(&[][..], |c| &c[..]);
    let mut errors = Vec::new();
    for context in contexts {
        let name = name_of(context);
        let counts = context.get("counters").map(|c| (c, "collects counters"));
        let serializes = (context.get("serialize"))
            .filter(|s| matches!(s.value, Value::Boolean(true)))
            .map(|s| (s, "serializes dispatches"));
        if let Some((existing, what)) = counts.or(serializes) {
            let message = format!(
                "`{}` adds a context that collects counters, and context `{name}` {what}",
                flag.name
            );
            let collect = existing.get("collect").and_then(parameter);
            let hint = match collect {
                Some(param) => format!("collect them in context `{name}`: --set {param}=[…]"),
                None => format!(
                    "rocprofiler-sdk counts dispatches for one context per process: collect them in context `{name}`"
                ),
            };
            errors.push(flag.conflict(message, existing).hint(hint));
        } else if name == NAME {
            let message = format!(
                "`{}` adds a context named `{NAME}`, and the pipeline has one",
                flag.name
            );
            let existing = context.get("name").expect("named");
            errors.push(
                flag.conflict(message, existing)
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
            flag.error(format!("`{}` names no counter", flag.name))
                .hint("--pmc SQ_WAVES GRBM_GUI_ACTIVE"),
        ]);
    }
    let span = flag.whole();
    let mut context = Node::from_json(&serde_json::json!({ "name": NAME, "counters": {} }), &span);
    let collect = Node {
        value: Value::Array(names),
        span: span.clone(),
    };
    let table = context.as_table_mut().and_then(|t| t.get_mut("counters"));
    insert(&mut table.expect("just made").node, "collect", collect);
    push_entry(doc, "context", context);
    Ok(())
}

/// `--kernel-iteration-range`: rocprofv3's ranges, in rocflow's form.
fn iterations(doc: &mut Node, flag: &Written<'_>, ranges: &[String]) -> Applied {
    match kernels::iteration_ranges(ranges, flag.name) {
        Ok(ranges) => kernel_filter(doc, flag, None, "iterations", &ranges),
        Err(e) => Err(vec![
            Diagnostic::error(e.to_string())
                .at(Some(flag.value()))
                .hint("write ranges and iterations like \"[1-10],[20]\""),
        ]),
    }
}

/// Sets `key` (in the `table` below it, if any) of every `[context.counters]`: rocprofv3's
/// kernel filters apply to counter collection (and thread traces) only.
fn kernel_filter(
    doc: &mut Node,
    flag: &Written<'_>,
    table: Option<&str>,
    key: &str,
    value: &str,
) -> Applied {
    let file = doc.span.file.name().to_owned();
    let mut counting = false;
    let mut errors = Vec::new();
    for context in entries_mut(doc, "context").into_iter().flatten() {
        let name = name_of(context).to_owned();
        let Some(counters) = (context.as_table_mut())
            .and_then(|t| t.get_mut("counters"))
            .map(|e| &mut e.node)
        else {
            continue;
        };
        counting = true;
        let place = match table {
            Some(table) => {
                let empty = Node::from_json(&serde_json::json!({}), &flag.flag);
                insert(counters, table, empty)
            }
            None => Some(counters),
        };
        let Some(place) = place else {
            continue;
        };
        if let Some(existing) = place.get(key) {
            let setting = table.map_or(key.to_owned(), |t| format!("{t}.{key}"));
            let message = format!(
                "`{}` would replace `{setting}` of context `{name}`",
                flag.name
            );
            let hint = replace_hint(flag, existing, "it");
            errors.push(flag.conflict(message, existing).hint(hint));
            continue;
        }
        insert(place, key, Node::from_json(&value.into(), &flag.value()));
    }
    if !counting {
        errors.push(
            flag.error(format!(
                "`{}` selects the kernels whose counters are collected (as in rocprofv3), and pipeline {file} collects none",
                flag.name,
            ))
            .hint("add --pmc NAME…; to keep only some kernels' records, add a `kernel_filter` transform"),
        );
    }
    all_of(errors)
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
        vec![Diagnostic::error(message.to_string()).at(Some(flag.value())).hint(
            "write START_DELAY:COLLECTION_TIME:REPEAT, e.g. 1:2:0 (in seconds unless --collection-period-unit says otherwise)",
        )]
    })?;
    let period = serde_json::to_value(&period).expect("periods serialize");
    let mut errors = Vec::new();
    let contexts = entries_mut(doc, "context").filter(|c| !c.is_empty());
    let Some(contexts) = contexts else {
        return Err(vec![
            flag.error(format!("`{}`: the pipeline has no context", flag.name)),
        ]);
    };
    for context in contexts {
        if let Some(existing) = context.get("period") {
            let message = format!(
                "`{}` would replace the period of context `{}`",
                flag.name,
                name_of(context)
            );
            let hint = replace_hint(flag, existing, "the period");
            errors.push(flag.conflict(message, existing).hint(hint));
            continue;
        }
        insert(context, "period", Node::from_json(&period, &flag.value()));
    }
    all_of(errors)
}

/// `--stats` adds a summary step writing CSV tables, unless the pipeline has one.
fn stats(doc: &mut Node, flag: &Written<'_>) -> Result<Option<Diagnostic>, Vec<Diagnostic>> {
    const NAME: &str = "stats";
    for post in entries_mut(doc, "post").into_iter().flatten() {
        let name = name_of(post);
        if post.get("kind").and_then(Node::as_str) == Some("summary") {
            let notice = Diagnostic::notice(format!(
                "`{}`: the pipeline's summary step `{name}` writes the statistics already",
                flag.name
            ))
            .at(post.get("name").map(|n| n.span.clone()));
            return Ok(Some(notice));
        }
        if name == NAME {
            let message = format!(
                "`{}` adds a post-step named `{NAME}`, and the pipeline has one",
                flag.name
            );
            let existing = post.get("name").expect("named");
            return Err(vec![
                flag.conflict(message, existing)
                    .hint("rename the pipeline's step"),
            ]);
        }
    }
    let dir = doc
        .at([Step::Key("params"), Step::Key("output_dir")])
        .map_or("", |_| "{output_dir}/");
    let step = serde_json::json!({
        "name": NAME,
        "kind": "summary",
        "path": format!("{dir}{NAME}"),
        "formats": ["csv"],
    });
    push_entry(doc, "post", Node::from_json(&step, &flag.whole()));
    Ok(None)
}

/// `--kernel-names FORM` sets `[pipeline] kernel_names`, unless the pipeline sets another.
fn kernel_names(doc: &mut Node, flag: &Written<'_>, form: KernelNames) -> Applied {
    let table = Node::from_json(&serde_json::json!({}), &flag.whole());
    let value = Node::from_json(&form.as_str().into(), &flag.value());
    let Some(set) = insert(doc, "pipeline", table).and_then(|h| insert(h, "kernel_names", value))
    else {
        return Ok(());
    };
    if set.as_str() == Some(form.as_str()) {
        return Ok(());
    }
    let written = set.as_str().map_or_else(
        || set.type_name().to_owned(),
        |value| format!("\"{value}\""),
    );
    let message = format!(
        "`{}` conflicts with the pipeline's `kernel_names = {written}`",
        flag.whole().snippet()
    );
    let hint = replace_hint(flag, set, "the kernel names");
    Err(vec![flag.conflict(message, set).hint(hint)])
}
