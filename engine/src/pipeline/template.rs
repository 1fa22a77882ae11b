//! Templates: finding what `extends` names, and merging documents.
//!
//! A name resolves relative to the including file, then on `ROCFLOW_PIPELINE_PATH`, then in
//! the library shipped in `pipelines/` (embedded in the binary). Merge rules: tables merge
//! deeply; arrays of named tables merge by `name` (a later entry overrides field by field,
//! `enabled = false` removes it); plain arrays and scalars are replaced.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diag::{Diagnostic, SourceFile, Span, did_you_mean};

use super::value::{Entry, Node, Value};

mod library {
    include!(concat!(env!("OUT_DIR"), "/templates.rs"));
}

/// The environment variable listing directories of team templates, `:`-separated.
pub const PATH_VAR: &str = "ROCFLOW_PIPELINE_PATH";

/// Where a pipeline document lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Origin {
    /// A file on disk (canonical path, so the same file reached two ways is one origin).
    File(PathBuf),
    /// A template of the shipped library, by name (`base`, `team/base`).
    Builtin(String),
}

impl Origin {
    /// How the origin is shown to users.
    pub fn display(&self) -> String {
        match self {
            Origin::File(path) => path.display().to_string(),
            Origin::Builtin(name) => format!("pipelines/{name}.toml (shipped)"),
        }
    }
}

/// A template found by name.
#[derive(Debug, Clone)]
pub struct Found {
    pub origin: Origin,
    /// Templates of the same name further down the search order, hidden by this one. Only
    /// a template on the search path hides others: a file next to its includer is what
    /// that file means, and the shipped library comes last.
    pub shadows: Vec<Origin>,
}

/// A template that `rocflow templates list` shows.
#[derive(Debug, Clone)]
pub struct Listed {
    pub name: String,
    pub found: Found,
}

/// Finds and reads pipeline documents.
#[derive(Debug, Clone, Default)]
pub struct Library {
    /// Team directories, in search order.
    search_path: Vec<PathBuf>,
}

/// A fully merged document and the files it was made from.
#[derive(Debug)]
pub struct Merged {
    pub doc: Node,
    /// Every document that contributed, the including file last.
    pub sources: Vec<Origin>,
    /// Notes on how names resolved: each team template used in place of another.
    pub notes: Vec<Diagnostic>,
}

impl Library {
    /// The library with the team directories named by `ROCFLOW_PIPELINE_PATH`.
    pub fn from_env() -> Self {
        let search_path = std::env::var_os(PATH_VAR)
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Library { search_path }
    }

    pub fn with_search_path(search_path: Vec<PathBuf>) -> Self {
        Library { search_path }
    }

    /// Reads `path` and everything it extends, and merges them. A `path` that is no file
    /// but names a template (`kernel-trace`, `team/base`) loads that template, so shipped
    /// pipelines run without a source tree.
    pub fn load(&self, path: &Path) -> Result<Merged, Diagnostic> {
        let file = match SourceFile::read(path) {
            Ok(file) => file,
            Err(e) => {
                let name = path.to_str().filter(|name| {
                    e.kind() == std::io::ErrorKind::NotFound && !name.ends_with(".toml")
                });
                if let Some(name) = name
                    && self.find(name, None).is_ok()
                {
                    return self.load_template(name);
                }
                return Err(Diagnostic::error(format!(
                    "cannot read pipeline `{}`: {e}",
                    path.display()
                ))
                .maybe_hint(name.and_then(|name| self.suggest(name)))
                .or_hint(
                    "give a pipeline file, or the name of a template (`rocflow templates list`)",
                ));
            }
        };
        let origin = Origin::File(path.canonicalize().unwrap_or_else(|_| path.to_owned()));
        self.merge_from(origin, file, Vec::new())
    }

    /// Merges `text`, the pipeline about to be written at `path`, with everything it
    /// extends (found from `path`'s directory, as once it is written).
    pub fn load_text(&self, path: &Path, file: Arc<SourceFile>) -> Result<Merged, Diagnostic> {
        let origin = Origin::File(std::path::absolute(path).unwrap_or_else(|_| path.to_owned()));
        self.merge_from(origin, file, Vec::new())
    }

    /// Finds the template `name` (on the search path or shipped) and merges it with
    /// everything it extends.
    pub fn load_template(&self, name: &str) -> Result<Merged, Diagnostic> {
        let found = self
            .find(name, None)
            .map_err(|looked| self.not_found(name, &looked, None))?;
        let notes = shadowing(name, &found, None).into_iter().collect();
        let file = self.open(&found.origin, Vec::new())?;
        self.merge_from(found.origin, file, notes)
    }

    /// Merges `file` over everything it extends; `notes` are those found so far.
    fn merge_from(
        &self,
        origin: Origin,
        file: Arc<SourceFile>,
        mut notes: Vec<Diagnostic>,
    ) -> Result<Merged, Diagnostic> {
        let mut sources = Vec::new();
        let doc = self.resolve(origin, file, &mut Vec::new(), &mut sources, &mut notes)?;
        Ok(Merged {
            doc,
            sources,
            notes,
        })
    }

    /// The text of a template found by name on the search path or in the shipped library,
    /// for `templates show`.
    pub fn read(&self, name: &str) -> Result<(Found, String), Diagnostic> {
        let found = self
            .find(name, None)
            .map_err(|looked| self.not_found(name, &looked, None))?;
        let file = self.open(&found.origin, Vec::new())?;
        Ok((found, file.text().to_owned()))
    }

    /// Every template on the search path and in the shipped library, by name, each with
    /// what it shadows.
    pub fn list(&self) -> Vec<Listed> {
        let mut names: Vec<String> = self
            .search_path
            .iter()
            .flat_map(|dir| {
                let mut names = Vec::new();
                collect_toml(dir, dir, &mut names);
                names
            })
            .chain(builtin_names().map(str::to_owned))
            .collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .filter_map(|name| {
                let found = self.find(&name, None).ok()?;
                Some(Listed { name, found })
            })
            .collect()
    }

    /// Parses one document, then merges it over the templates it extends (depth first).
    fn resolve(
        &self,
        origin: Origin,
        file: Arc<SourceFile>,
        chain: &mut Vec<Origin>,
        sources: &mut Vec<Origin>,
        notes: &mut Vec<Diagnostic>,
    ) -> Result<Node, Diagnostic> {
        let mut doc = Node::parse(&file)?;
        check_unique_names(&doc)?;
        let extends = take_extends(&mut doc)?;
        chain.push(origin.clone());
        let mut base: Option<Node> = None;
        for (name, span) in extends {
            let found = self
                .find(&name, Some(&origin))
                .map_err(|looked| self.not_found(&name, &looked, Some(span.clone())))?;
            if let Some(start) = chain.iter().position(|o| *o == found.origin) {
                let cycle: Vec<String> = chain[start..]
                    .iter()
                    .chain(std::iter::once(&found.origin))
                    .map(Origin::display)
                    .collect();
                return Err(
                    Diagnostic::error(format!("template cycle: `{name}` extends itself"))
                        .at(Some(span))
                        .note(format!("cycle: {}", cycle.join(" -> ")))
                        .hint("remove one of the `extends` entries that close the loop"),
                );
            }
            if let Some(note) = shadowing(&name, &found, Some(span.clone()))
                && !notes.iter().any(|n| n.message == note.message)
            {
                notes.push(note);
            }
            let mut included = vec![format!(
                "in template `{name}` ({}), included from {}",
                found.origin.display(),
                span.position()
            )];
            included.extend(file.notes().iter().cloned());
            let template_file = self.open(&found.origin, included)?;
            let template = self.resolve(found.origin, template_file, chain, sources, notes)?;
            base = Some(match base {
                Some(base) => merge(base, template),
                None => template,
            });
        }
        chain.pop();
        sources.push(origin);
        let mut merged = match base {
            Some(base) => merge(base, doc),
            None => doc,
        };
        if chain.is_empty() {
            prune_disabled(&mut merged);
        }
        Ok(merged)
    }

    /// Resolves a template name as seen from the document at `from` (relative names first),
    /// returning where it looked when nothing matches.
    fn find(&self, name: &str, from: Option<&Origin>) -> Result<Found, Vec<String>> {
        let file_name = if name.ends_with(".toml") {
            name.to_owned()
        } else {
            format!("{name}.toml")
        };
        let alone = |origin| Found {
            origin,
            shadows: Vec::new(),
        };
        let mut looked = Vec::new();
        match from {
            None => {}
            Some(Origin::File(path)) => {
                let dir = path.parent().unwrap_or(Path::new("."));
                let candidate = dir.join(&file_name);
                if candidate.is_file() {
                    return Ok(alone(Origin::File(
                        candidate.canonicalize().unwrap_or(candidate),
                    )));
                }
                looked.push(candidate.display().to_string());
            }
            Some(Origin::Builtin(including)) => {
                // A shipped template extends others by their path within the library.
                let dir = Path::new(including).parent().unwrap_or(Path::new(""));
                let relative = dir.join(name.trim_end_matches(".toml"));
                let relative = relative.to_string_lossy().replace('\\', "/");
                if builtin(&relative).is_some() {
                    return Ok(alone(Origin::Builtin(relative)));
                }
            }
        }
        let mut hits = Vec::new();
        for dir in &self.search_path {
            let candidate = dir.join(&file_name);
            if candidate.is_file() {
                let origin = Origin::File(candidate.canonicalize().unwrap_or(candidate));
                // A directory listed twice holds one template, not two.
                if !hits.contains(&origin) {
                    hits.push(origin);
                }
            } else if hits.is_empty() {
                looked.push(candidate.display().to_string());
            }
        }
        let bare = name.trim_end_matches(".toml");
        if builtin(bare).is_some() {
            hits.push(Origin::Builtin(bare.to_owned()));
        }
        if hits.is_empty() {
            looked.push(format!("the shipped library (pipelines/{file_name})"));
            return Err(looked);
        }
        let origin = hits.remove(0);
        Ok(Found {
            origin,
            shadows: hits,
        })
    }

    /// "Did you mean", among every template this library has.
    fn suggest(&self, name: &str) -> Option<String> {
        let names: Vec<String> = self.list().into_iter().map(|t| t.name).collect();
        did_you_mean(name, names.iter().map(String::as_str))
    }

    /// The error of a template name that resolves to nothing; `span` is the `extends`
    /// entry naming it, none for a name given on the command line.
    fn not_found(&self, name: &str, looked: &[String], span: Option<Span>) -> Diagnostic {
        let hint = match span {
            Some(_) => format!(
                "give a path relative to this file, add its directory to {PATH_VAR}, or see `rocflow templates list`"
            ),
            None => format!(
                "`rocflow templates list` shows the templates; add a directory of your own to {PATH_VAR}"
            ),
        };
        Diagnostic::error(format!("template `{name}` not found"))
            .at(span.clone())
            .note(format!("looked in: {}", looked.join(", ")))
            .maybe_hint(self.suggest(name))
            .or_hint(hint)
    }

    fn open(&self, origin: &Origin, notes: Vec<String>) -> Result<Arc<SourceFile>, Diagnostic> {
        match origin {
            Origin::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    Diagnostic::error(format!("cannot read template `{}`: {e}", path.display()))
                })?;
                Ok(SourceFile::with_notes(
                    path.display().to_string(),
                    text,
                    notes,
                ))
            }
            Origin::Builtin(name) => {
                let text = builtin(name).expect("found builtins exist");
                Ok(SourceFile::with_notes(
                    format!("pipelines/{name}.toml"),
                    text,
                    notes,
                ))
            }
        }
    }
}

/// The names of the shipped templates.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    library::TEMPLATES.iter().map(|(name, _)| *name)
}

fn builtin(name: &str) -> Option<&'static str> {
    library::TEMPLATES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// The note that `name` resolved to a team template hiding others, if it did.
fn shadowing(name: &str, found: &Found, span: Option<Span>) -> Option<Diagnostic> {
    let (first, rest) = found.shadows.split_first()?;
    let mut note = Diagnostic::notice(format!(
        "template `{name}` is {} (on {PATH_VAR})",
        found.origin.display()
    ))
    .at(span)
    .note(format!("it shadows {}", first.display()));
    for hidden in rest {
        note = note.note(format!("and {}", hidden.display()));
    }
    Some(note.hint("`rocflow templates list` shows every template and what it shadows"))
}

fn collect_toml(root: &Path, dir: &Path, names: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_toml(root, &path, names);
        } else if path.extension().is_some_and(|e| e == "toml") {
            let name = path.strip_prefix(root).unwrap_or(&path).with_extension("");
            names.push(name.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// Removes `[pipeline].extends` from a document and returns its entries with their spans.
fn take_extends(doc: &mut Node) -> Result<Vec<(String, Span)>, Diagnostic> {
    let Value::Table(root) = &mut doc.value else {
        unreachable!("a TOML document is a table")
    };
    let Some(Entry { node: pipeline, .. }) = root.get_mut("pipeline") else {
        return Ok(Vec::new());
    };
    let Value::Table(pipeline) = &mut pipeline.value else {
        return Ok(Vec::new()); // the schema reports the wrong type
    };
    let Some(entry) = pipeline.shift_remove("extends") else {
        return Ok(Vec::new());
    };
    let expected = || {
        Diagnostic::error("`extends` must be an array of template names")
            .at(Some(entry.node.span.clone()))
            .hint("extends = [\"base\"]")
    };
    let items = entry.node.as_array().ok_or_else(expected)?;
    items
        .iter()
        .map(|item| {
            item.as_str()
                .map(|s| (s.to_owned(), item.span.clone()))
                .ok_or_else(expected)
        })
        .collect()
}

/// The `name` of every entry, if `items` is a non-empty array of named tables.
fn names(items: &[Node]) -> Option<Vec<&str>> {
    if items.is_empty() {
        return None;
    }
    items.iter().map(|n| n.get("name")?.as_str()).collect()
}

/// Rejects two entries of one named array with the same name within a single document, at
/// any depth: with merge-by-name, the second would silently override the first.
fn check_unique_names(node: &Node) -> Result<(), Diagnostic> {
    let Value::Table(table) = &node.value else {
        return Ok(());
    };
    for (key, entry) in table {
        match &entry.node.value {
            Value::Table(_) => check_unique_names(&entry.node)?,
            Value::Array(items) => {
                let mut seen: Vec<&Node> = Vec::new();
                for item in items {
                    check_unique_names(item)?;
                    let Some(name) = item.get("name").filter(|n| n.as_str().is_some()) else {
                        continue;
                    };
                    if let Some(first) = seen.iter().find(|n| n.as_str() == name.as_str()) {
                        let text = name.as_str().unwrap_or_default();
                        return Err(Diagnostic::error(format!("duplicate {key} name `{text}`"))
                            .at(Some(name.span.clone()))
                            .note(format!("first defined at {}", first.span.position()))
                            .hint(format!("give each entry of `{key}` a unique name")));
                    }
                    seen.push(name);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Merges `over` onto `base` (see the module docs for the rules).
pub fn merge(base: Node, over: Node) -> Node {
    match (base.value, over.value) {
        (Value::Table(mut base_table), Value::Table(over_table)) => {
            for (key, entry) in over_table {
                match base_table.shift_remove_full(&key) {
                    Some((index, _, old)) => {
                        let merged = Entry {
                            key: entry.key,
                            node: merge(old.node, entry.node),
                        };
                        base_table.shift_insert(index, key, merged);
                    }
                    None => {
                        base_table.insert(key, entry);
                    }
                }
            }
            Node {
                value: Value::Table(base_table),
                span: over.span,
            }
        }
        (Value::Array(base_items), Value::Array(over_items))
            if names(&base_items).is_some() && names(&over_items).is_some() =>
        {
            let mut merged = base_items;
            for item in over_items {
                let name = item.get("name").and_then(Node::as_str).map(str::to_owned);
                match merged
                    .iter()
                    .position(|m| m.get("name").and_then(Node::as_str) == name.as_deref())
                {
                    Some(i) => {
                        let old = merged.remove(i);
                        merged.insert(i, merge(old, item));
                    }
                    None => merged.push(item),
                }
            }
            Node {
                value: Value::Array(merged),
                span: over.span,
            }
        }
        (_, value) => Node {
            value,
            span: over.span,
        },
    }
}

/// Drops entries of named arrays that say `enabled = false`, and the `enabled` keys, at
/// every depth.
fn prune_disabled(node: &mut Node) {
    match &mut node.value {
        Value::Table(table) => table.values_mut().for_each(|e| prune_disabled(&mut e.node)),
        Value::Array(items) => {
            let named = names(items).is_some();
            if named {
                items.retain(|item| enabled(item) != Some(false));
            }
            for item in items.iter_mut() {
                prune_disabled(item);
                if let (true, Some(_), Value::Table(t)) = (named, enabled(item), &mut item.value) {
                    t.shift_remove("enabled");
                }
            }
        }
        _ => {}
    }
}

fn enabled(item: &Node) -> Option<bool> {
    match item.get("enabled")?.value {
        Value::Boolean(b) => Some(b),
        _ => None,
    }
}
