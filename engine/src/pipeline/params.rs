//! Pipeline parameters: `[params]` defaults, `--set name=value` overrides, and `{name}`
//! substitution in every string of the document.
//!
//! A string that is exactly `"{name}"` takes the parameter's value with its type (so a
//! list parameter can fill a list field); inside a longer string the value is formatted.
//! Braces that do not hold a parameter name (regex quantifiers such as `{2,3}`, run-time
//! placeholders such as `{pid}`) are left alone.

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
    /// `"text"`) and otherwise taken as a plain string.
    pub fn parse(arg: &str) -> Result<Override, Diagnostic> {
        let file = SourceFile::new("--set", arg);
        let Some((name, value)) = arg.split_once('=') else {
            return Err(Diagnostic::error(format!("`--set {arg}` has no value"))
                .at(Some(Span::new(&file, 0..arg.len())))
                .hint("write --set name=value"));
        };
        if !is_identifier(name.trim()) {
            return Err(
                Diagnostic::error(format!("`{name}` is not a parameter name"))
                    .at(Some(Span::new(&file, 0..name.len())))
                    .hint("parameter names are letters, digits and `_`"),
            );
        }
        let name_span = Span::new(&file, 0..name.len());
        let start = name.len() + 1;
        let value = parse_value(&file, start).unwrap_or_else(|| Node {
            value: Value::String(value.to_owned()),
            span: Span::new(&file, start..arg.len()),
        });
        Ok(Override {
            name: name.trim().to_owned(),
            name_span,
            value,
        })
    }
}

/// Parses the TOML value that starts at byte `start` of `file`, keeping its offsets.
fn parse_value(file: &Arc<SourceFile>, start: usize) -> Option<Node> {
    // `name=` is at least two bytes, so `v=` fits in front of the value at the same offset.
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
    resolve_references(&mut params)?;
    if let Value::Table(root) = &mut doc.value {
        for (key, entry) in root.iter_mut() {
            if key == "params" {
                for (name, e) in entry.node.as_table_mut().into_iter().flatten() {
                    e.node = params[name].clone();
                }
            } else {
                substitute(&mut entry.node, &params);
            }
        }
    }
    Ok(params)
}

/// Substitutes parameters used inside other parameters (`output_dir = "/scratch/{project}"`)
/// until none is left; a chain that never ends is a cycle.
fn resolve_references(params: &mut Params) -> Result<(), Vec<Diagnostic>> {
    for _ in 0..=params.len() {
        let snapshot = params.clone();
        let mut changed = false;
        for node in params.values_mut() {
            if let Value::String(s) = &node.value
                && let Some(replaced) = replace_placeholders(s, &snapshot)
            {
                node.value = Value::String(replaced);
                changed = true;
            }
        }
        if !changed {
            return Ok(());
        }
    }
    let cyclic = params
        .iter()
        .filter(|(_, node)| {
            node.as_str()
                .is_some_and(|s| placeholders(s).any(|(_, name)| params.contains_key(name)))
        })
        .map(|(name, node)| {
            Diagnostic::error(format!(
                "parameter `{name}` refers to itself through other parameters"
            ))
            .at(Some(node.span.clone()))
            .hint("break the cycle: one of these parameters must not use the others")
        })
        .collect();
    Err(cyclic)
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

fn substitute(node: &mut Node, params: &Params) {
    match &mut node.value {
        Value::String(s) => {
            if let Some(name) = whole_placeholder(s)
                && let Some(value) = params.get(name)
            {
                node.value = value.value.clone();
                return;
            }
            if let Some(replaced) = replace_placeholders(s, params) {
                *s = replaced;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|n| substitute(n, params)),
        Value::Table(table) => table
            .values_mut()
            .for_each(|Entry { node, .. }| substitute(node, params)),
        _ => {}
    }
}

fn whole_placeholder(s: &str) -> Option<&str> {
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    is_identifier(inner).then_some(inner)
}

/// Replaces every `{name}` of a scalar parameter; `None` when nothing changed.
fn replace_placeholders(s: &str, params: &Params) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut changed = false;
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after
            .find('}')
            .map(|close| &after[..close])
            .filter(|name| is_identifier(name))
            .and_then(|name| Some((name, format_scalar(params.get(name)?)?)));
        match value {
            Some((name, text)) => {
                out.push_str(&text);
                rest = &after[name.len() + 1..];
                changed = true;
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    changed.then_some(out)
}

fn format_scalar(node: &Node) -> Option<String> {
    Some(match &node.value {
        Value::String(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Boolean(b) => b.to_string(),
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
