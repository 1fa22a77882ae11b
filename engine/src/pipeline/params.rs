//! Pipeline parameters: `[params]` defaults, `--set name=value` overrides, and `{name}`
//! substitution in every string of the document.
//!
//! A string that is exactly `"{name}"` takes the parameter's value with its type (so a
//! list parameter can fill a list field); inside a longer string the value is formatted.
//! Braces that do not hold a parameter name (regex quantifiers such as `{2,3}`, run-time
//! placeholders such as `{pid}`) are left alone.

use std::borrow::Cow;
use std::sync::Arc;

use indexmap::IndexMap;

use crate::diag::{Diagnostic, SourceFile, Span, did_you_mean};

use super::value::{Entry, Node, Value};

/// Placeholders filled when the run starts, valid in output paths and post-step arguments.
pub const RUNTIME_PLACEHOLDERS: &[&str] = &["hostname", "pid", "ppid", "rank", "timestamp"];

/// One `--set name=value` from the command line.
#[derive(Debug, Clone)]
pub struct Override {
    name: String,
    name_span: Span,
    value: Node,
}

impl Override {
    /// Parses `name=value`; the value is read as a TOML value (`10`, `true`, `["a", "b"]`,
    /// `"text"`) and otherwise taken as a plain string. Diagnostics point into the option
    /// as written, `--set name=value`, on the command line.
    pub fn parse(arg: &str) -> Result<Override, Diagnostic> {
        const FLAG: &str = "--set ";
        let file = SourceFile::new("command line", format!("{FLAG}{arg}"));
        let end = file.text().len();
        let Some((name, value)) = arg.split_once('=') else {
            return Err(Diagnostic::error(format!("`--set {arg}` has no value"))
                .at(Some(Span::new(&file, FLAG.len()..end)))
                .hint("write --set name=value"));
        };
        let name_span = Span::new(&file, FLAG.len()..FLAG.len() + name.len());
        if !is_identifier(name.trim()) {
            return Err(
                Diagnostic::error(format!("`{name}` is not a parameter name"))
                    .at(Some(name_span))
                    .hint("parameter names are letters, digits and `_`"),
            );
        }
        let start = name_span.range.end + 1;
        let value = parse_value(&file, start).unwrap_or_else(|| Node {
            value: Value::String(value.to_owned()),
            span: Span::new(&file, start..end),
        });
        Ok(Override {
            name: name.trim().to_owned(),
            name_span,
            value,
        })
    }
}

impl Override {
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Parses the TOML value that starts at byte `start` of `file`, keeping its offsets.
fn parse_value(file: &Arc<SourceFile>, start: usize) -> Option<Node> {
    // `--set name=` is longer than `v=`, which so fits in front of the value at its offset.
    let text = format!("{:<start$}{}", "v=", &file.text()[start..]);
    let doc = Node::parse(&SourceFile::new(file.name(), text)).ok()?;
    let mut node = doc.get("v")?.clone();
    rebase(&mut node, file);
    Some(node)
}

/// Points every span of `node` into `file` (same offsets).
fn rebase(node: &mut Node, file: &Arc<SourceFile>) {
    node.span = Span::new(file, node.span.range.clone());
    match &mut node.value {
        Value::Array(items) => items.iter_mut().for_each(|n| rebase(n, file)),
        Value::Table(table) => table.values_mut().for_each(|e| {
            e.key = Span::new(file, e.key.range.clone());
            rebase(&mut e.node, file);
        }),
        _ => {}
    }
}

/// The parameters after overrides: name to value.
pub type Params = IndexMap<String, Node>;

/// Applies overrides to the document's `[params]` and substitutes `{name}` everywhere else.
pub fn apply(doc: &mut Node, overrides: &[Override]) -> Result<Params, Vec<Diagnostic>> {
    let mut params: Params = doc
        .get("params")
        .and_then(Node::as_table)
        .map(|t| t.iter().map(|(k, e)| (k.clone(), e.node.clone())).collect())
        .unwrap_or_default();
    let mut errors = Vec::new();
    for o in overrides {
        let Some(default) = params.get(&o.name) else {
            let names: Vec<&str> = params.keys().map(String::as_str).collect();
            let hint = did_you_mean(&o.name, names.iter().copied()).unwrap_or_else(|| {
                if names.is_empty() {
                    "this pipeline declares no [params]".to_owned()
                } else {
                    format!("parameters: {}", names.join(", "))
                }
            });
            errors.push(
                Diagnostic::error(format!("unknown parameter `{}`", o.name))
                    .at(Some(o.name_span.clone()))
                    .hint(hint),
            );
            continue;
        };
        match coerce(&o.value, default) {
            Some(value) => {
                params.insert(o.name.clone(), value);
            }
            None => errors.push(
                Diagnostic::error(format!(
                    "parameter `{}` is {}, but --set gives {}",
                    o.name,
                    default.type_name(),
                    o.value.type_name()
                ))
                .at(Some(o.value.span.clone()))
                .note(format!("default declared at {}", default.span.position())),
            ),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut budget = Budget::default();
    Resolver::new(&mut params, &mut budget).resolve_all()?;
    if let Value::Table(root) = &mut doc.value {
        for (key, entry) in root.iter_mut() {
            if key == "params" {
                for (name, e) in entry.node.as_table_mut().into_iter().flatten() {
                    e.node = params[name].clone();
                }
            } else {
                substitute(&mut entry.node, &params, &mut budget).map_err(|e| vec![e])?;
            }
        }
    }
    Ok(params)
}

/// The most bytes one string may hold once its parameters are filled in: far more than a
/// path or an expression needs, and where a parameter used twice in a parameter used twice
/// (and so on) stops doubling.
const MAX_EXPANDED: usize = 1 << 20;

/// The most bytes that substitution may produce in one pipeline, all strings together, so
/// that many uses of a large parameter stop too.
const MAX_EXPANDED_TOTAL: usize = 64 << 20;

/// How long a chain of parameters using parameters may be (`a` uses `b`, which uses `c`…).
const MAX_DEPTH: usize = 32;

/// Bytes that substitution may still produce in this pipeline.
struct Budget {
    left: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            left: MAX_EXPANDED_TOTAL,
        }
    }
}

/// Why a string was not expanded.
#[derive(Debug)]
enum TooLarge {
    /// It would have held this many bytes, more than [`MAX_EXPANDED`].
    Value(usize),
    /// The pipeline's expanded strings would have held more than [`MAX_EXPANDED_TOTAL`].
    Total,
}

impl Budget {
    /// Takes `bytes` from what is left.
    fn spend(&mut self, bytes: usize) -> Result<(), TooLarge> {
        self.left = self.left.checked_sub(bytes).ok_or(TooLarge::Total)?;
        Ok(())
    }

    /// `s` with every `{name}` of a scalar parameter replaced; `None` when nothing changed.
    /// The size is checked before the string is built.
    fn expand(&mut self, s: &str, params: &Params) -> Result<Option<String>, TooLarge> {
        let Some(pieces) = pieces(s, params) else {
            return Ok(None);
        };
        let len = pieces.iter().map(|p| p.len()).sum();
        if len > MAX_EXPANDED {
            return Err(TooLarge::Value(len));
        }
        self.spend(len)?;
        Ok(Some(pieces.concat()))
    }
}

impl TooLarge {
    /// The error for `what` (a parameter, or a value of the pipeline) at `span`.
    fn diagnostic(&self, what: &str, span: &Span) -> Diagnostic {
        let (message, hint) = match self {
            TooLarge::Value(len) => (
                format!(
                    "{what} would expand to {len} bytes, more than the {} MiB a value may hold",
                    MAX_EXPANDED >> 20
                ),
                "each use of a parameter copies its value: one used twice in a parameter that is itself used twice doubles at every step",
            ),
            TooLarge::Total => (
                format!(
                    "{what} would take the pipeline past {} MiB of expanded parameters",
                    MAX_EXPANDED_TOTAL >> 20
                ),
                "each use of a parameter copies its value: use a large one in fewer places",
            ),
        };
        Diagnostic::error(message).at(Some(span.clone())).hint(hint)
    }
}

/// Where a parameter stands while parameters are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Unresolved,
    /// On the chain being resolved: meeting it again closes a cycle.
    InProgress,
    Resolved,
    /// It, or a parameter it uses, has an error (reported once, where it was found).
    Failed,
}

/// Substitutes parameters used inside other parameters (`output_dir = "/scratch/{project}"`),
/// each parameter after those it uses.
struct Resolver<'a> {
    params: &'a mut Params,
    budget: &'a mut Budget,
    states: Vec<State>,
    /// The parameters being resolved, each using the next.
    chain: Vec<usize>,
    errors: Vec<Diagnostic>,
}

impl<'a> Resolver<'a> {
    fn new(params: &'a mut Params, budget: &'a mut Budget) -> Self {
        Resolver {
            states: vec![State::Unresolved; params.len()],
            params,
            budget,
            chain: Vec::new(),
            errors: Vec::new(),
        }
    }

    fn resolve_all(mut self) -> Result<(), Vec<Diagnostic>> {
        for index in 0..self.params.len() {
            self.resolve(index);
        }
        match self.errors.is_empty() {
            true => Ok(()),
            false => Err(self.errors),
        }
    }

    /// Resolves parameter `index`; false if it cannot be, for a reason already reported.
    /// Recursion is no deeper than [`MAX_DEPTH`].
    fn resolve(&mut self, index: usize) -> bool {
        match self.states[index] {
            State::Resolved => return true,
            State::Failed => return false,
            State::InProgress => {
                let start = self.chain.iter().position(|&i| i == index);
                let start = start.expect("a parameter in progress is on the chain");
                self.errors.push(self.cycle(&self.chain[start..]));
                return false;
            }
            State::Unresolved => {}
        }
        if self.chain.len() == MAX_DEPTH {
            self.errors.push(self.too_deep(index));
            return false;
        }
        self.states[index] = State::InProgress;
        self.chain.push(index);
        let resolved = self.uses(index).into_iter().all(|u| self.resolve(u)) && self.expand(index);
        self.chain.pop();
        self.states[index] = if resolved {
            State::Resolved
        } else {
            State::Failed
        };
        resolved
    }

    /// The parameters that parameter `index` uses.
    fn uses(&self, index: usize) -> Vec<usize> {
        let Some(text) = self.params[index].as_str() else {
            return Vec::new();
        };
        placeholders(text)
            .filter_map(|(_, name)| self.params.get_index_of(name))
            .collect()
    }

    /// Fills in parameter `index`, whose parameters are resolved.
    fn expand(&mut self, index: usize) -> bool {
        let (name, node) = self.params.get_index(index).expect("an index of params");
        let Some(text) = node.as_str() else {
            return true;
        };
        match self.budget.expand(text, self.params) {
            Ok(None) => true,
            Ok(Some(expanded)) => {
                self.params[index].value = Value::String(expanded);
                true
            }
            Err(e) => {
                let error = e.diagnostic(&format!("parameter `{name}`"), &node.span);
                self.errors.push(error);
                false
            }
        }
    }

    /// The error for parameters that use each other in a circle, at the first one, with
    /// where the others are.
    fn cycle(&self, members: &[usize]) -> Diagnostic {
        let (first, node) = self.entry(members[0]);
        let mut error = Diagnostic::error(format!(
            "parameter `{first}` refers to itself: {}",
            self.names(members.iter().chain(&members[..1]))
        ))
        .at(Some(node.span.clone()))
        .hint("break the cycle: one of these parameters must not use the others");
        for &i in &members[1..] {
            let (name, node) = self.entry(i);
            error = error.note(format!("`{name}` is at {}", node.span.position()));
        }
        error
    }

    /// The error for a chain longer than [`MAX_DEPTH`], at its first parameter.
    fn too_deep(&self, next: usize) -> Diagnostic {
        let (first, node) = self.entry(self.chain[0]);
        Diagnostic::error(format!(
            "parameter `{first}` uses parameters more than {MAX_DEPTH} deep: {}",
            self.names(self.chain.iter().chain([&next]))
        ))
        .at(Some(node.span.clone()))
        .hint("give one of the parameters in the chain its value directly")
    }

    fn entry(&self, index: usize) -> (&String, &Node) {
        self.params.get_index(index).expect("an index of params")
    }

    /// `a -> b -> c`
    fn names<'i>(&self, indices: impl Iterator<Item = &'i usize>) -> String {
        let names: Vec<&str> = indices.map(|&i| self.entry(i).0.as_str()).collect();
        names.join(" -> ")
    }
}

/// The override as the default's type, if it fits (an integer is accepted for a float).
fn coerce(value: &Node, default: &Node) -> Option<Node> {
    let fits = match (&value.value, &default.value) {
        (Value::Integer(i), Value::Float(_)) => {
            return Some(Node {
                value: Value::Float(*i as f64),
                span: value.span.clone(),
            });
        }
        // A bare word that happens to parse as something else is still a string parameter.
        (_, Value::String(_)) => {
            return Some(Node {
                value: Value::String(value.span.snippet().to_owned()),
                span: value.span.clone(),
            });
        }
        (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
    };
    fits.then(|| value.clone())
}

/// Substitutes parameters in `node` and below; stops at the first string that would grow
/// too large.
///
/// A value that is a parameter's whole value points where the parameter was given (the
/// user's `[params]` entry, or `--set`), which is where it is fixed; a note says where it
/// was used. A string that holds parameters among other text points where it was written,
/// with a note on where its parameters were given.
fn substitute(node: &mut Node, params: &Params, budget: &mut Budget) -> Result<(), Diagnostic> {
    match &mut node.value {
        Value::String(s) => {
            if let Some((name, value)) =
                whole_placeholder(s).and_then(|name| params.get_key_value(name))
            {
                // A whole value costs what its text costs.
                budget
                    .spend(value.as_str().map_or(value.span.range.len(), str::len))
                    .map_err(|e| e.diagnostic("this value", &node.span))?;
                let used: Arc<str> =
                    format!("used as `{{{name}}}` at {}", node.span.position()).into();
                *node = value.clone();
                note_all(node, &used);
                return Ok(());
            }
            match budget.expand(s, params) {
                Ok(Some(replaced)) => {
                    let given = given_at(s, params);
                    *s = replaced;
                    node.span = node.span.clone().noted(given);
                    Ok(())
                }
                Ok(None) => Ok(()),
                Err(e) => Err(e.diagnostic("this value", &node.span)),
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .try_for_each(|n| substitute(n, params, budget)),
        Value::Table(table) => table
            .values_mut()
            .try_for_each(|Entry { node, .. }| substitute(node, params, budget)),
        _ => Ok(()),
    }
}

/// Puts `note` on the spans of `node` and of everything in it.
fn note_all(node: &mut Node, note: &Arc<str>) {
    node.span = node.span.clone().noted(Arc::clone(note));
    match &mut node.value {
        Value::Array(items) => items.iter_mut().for_each(|n| note_all(n, note)),
        Value::Table(table) => table.values_mut().for_each(|e| {
            e.key = e.key.clone().noted(Arc::clone(note));
            note_all(&mut e.node, note);
        }),
        _ => {}
    }
}

/// Where the parameters that `s` holds were given: "`{a}` is given at p.toml:2:5; …".
fn given_at(s: &str, params: &Params) -> String {
    let mut given: Vec<String> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (_, name) in placeholders(s) {
        let Some(value) = params.get(name).filter(|v| format_scalar(v).is_some()) else {
            continue;
        };
        if !seen.contains(&name) {
            seen.push(name);
            given.push(format!(
                "`{{{name}}}` is given at {}",
                value.span.position()
            ));
        }
    }
    given.join("; ")
}

fn whole_placeholder(s: &str) -> Option<&str> {
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    is_identifier(inner).then_some(inner)
}

/// `s` cut where its `{name}` placeholders of scalar parameters are, with their values in
/// place; `None` when it has none.
fn pieces<'a>(s: &'a str, params: &'a Params) -> Option<Vec<Cow<'a, str>>> {
    let mut pieces = Vec::new();
    let mut changed = false;
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let value = after
            .find('}')
            .map(|close| &after[..close])
            .filter(|name| is_identifier(name))
            .and_then(|name| Some((name, format_scalar(params.get(name)?)?)));
        match value {
            Some((name, text)) => {
                pieces.extend([Cow::Borrowed(&rest[..open]), text]);
                rest = &after[name.len() + 1..];
                changed = true;
            }
            None => {
                pieces.push(Cow::Borrowed(&rest[..=open]));
                rest = after;
            }
        }
    }
    pieces.push(Cow::Borrowed(rest));
    changed.then_some(pieces)
}

fn format_scalar(node: &Node) -> Option<Cow<'_, str>> {
    Some(match &node.value {
        Value::String(s) => Cow::Borrowed(s),
        Value::Integer(i) => Cow::Owned(i.to_string()),
        Value::Float(f) => Cow::Owned(f.to_string()),
        Value::Boolean(b) => Cow::Owned(b.to_string()),
        _ => return None,
    })
}

pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The `{name}` placeholders left in a string after parameter substitution.
pub fn placeholders(s: &str) -> impl Iterator<Item = (usize, &str)> {
    s.match_indices('{').filter_map(move |(open, _)| {
        let after = &s[open + 1..];
        let name = &after[..after.find('}')?];
        is_identifier(name).then_some((open, name))
    })
}
