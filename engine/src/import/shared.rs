//! `--params`: the passes of a file as one pipeline. A value the passes' pipelines differ in
//! becomes a parameter, the first pass's value its default; each pass is then a run with
//! `--set` for the values it changes. Passes that differ in shape (one collects counters,
//! another does not) cannot share a pipeline: that is reported, and `--split` is the way.

use indexmap::IndexMap;
use toml::{Table, Value};

use crate::pipeline::params::is_identifier;

/// One pipeline for every pass, and the runs that select each pass.
#[derive(Debug)]
pub struct Shared {
    /// The pipeline, without its `[pipeline]` header.
    pub pipeline: Table,
    /// Per pass, its `--set NAME=VALUE` arguments.
    pub runs: Vec<Vec<String>>,
}

/// Where a pass's pipeline differs in shape from the first pass's.
#[derive(Debug, PartialEq)]
pub struct Mismatch {
    /// Index of the pass.
    pub pass: usize,
    /// Where, e.g. `context[0].counters`.
    pub at: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Merges the passes' pipelines (two or more, each without its `[pipeline]` header).
pub fn share(mut pipelines: Vec<Table>) -> Result<Shared, Mismatch> {
    let params: Vec<Table> = pipelines
        .iter_mut()
        .map(|p| match p.remove("params") {
            Some(Value::Table(t)) => t,
            _ => Table::new(),
        })
        .collect();
    let mut base = pipelines[0].clone();
    let mut differing: Vec<Vec<Step>> = Vec::new();
    for (pass, other) in pipelines.iter().enumerate().skip(1) {
        compare_tables(&base, other, &mut Vec::new(), &mut differing)
            .map_err(|at| Mismatch { pass, at })?;
    }
    // The passes' own parameters (the output directory, …), defaults from the first pass
    // that has each.
    let mut defaults: IndexMap<String, Value> = IndexMap::new();
    for table in &params {
        for (name, value) in table {
            defaults
                .entry(name.clone())
                .or_insert_with(|| value.clone());
        }
    }
    let mut lookups: Vec<(String, Lookup)> = defaults
        .keys()
        .map(|name| (name.clone(), Lookup::Param(name.clone())))
        .collect();
    for (path, name) in differing.iter().zip(names(&base, &differing, &defaults)) {
        let value = at(&base, path).expect("found in the first pass").clone();
        *at_mut(&mut base, path).expect("found in the first pass") =
            Value::String(format!("{{{name}}}"));
        defaults.insert(name.clone(), value);
        lookups.push((name, Lookup::Value(path.clone())));
    }
    let runs = pipelines
        .iter()
        .zip(&params)
        .map(|(pipeline, own)| {
            lookups
                .iter()
                .filter_map(|(name, lookup)| {
                    let value = match lookup {
                        Lookup::Param(param) => own.get(param)?,
                        Lookup::Value(path) => at(pipeline, path)?,
                    };
                    (Some(value) != defaults.get(name)).then(|| set_argument(name, value))
                })
                .collect()
        })
        .collect();
    let mut pipeline = Table::new();
    pipeline.insert(
        "params".into(),
        Value::Table(defaults.into_iter().collect()),
    );
    pipeline.extend(base);
    Ok(Shared { pipeline, runs })
}

/// Where a parameter's value for a pass is found.
enum Lookup {
    /// Among the pass's own parameters.
    Param(String),
    /// At this place in the pass's pipeline.
    Value(Vec<Step>),
}

/// Compares `other` with `base`, noting the places of values that differ; a difference in
/// shape, or in what names an entry (`name`, `kind`), is an error at its place.
fn compare_tables(
    base: &Table,
    other: &Table,
    path: &mut Vec<Step>,
    differing: &mut Vec<Vec<Step>>,
) -> Result<(), String> {
    if let Some(key) = base
        .keys()
        .find(|k| !other.contains_key(*k))
        .or_else(|| other.keys().find(|k| !base.contains_key(*k)))
    {
        path.push(Step::Key(key.clone()));
        return Err(describe(path));
    }
    for (key, value) in base {
        path.push(Step::Key(key.clone()));
        let identity = matches!(key.as_str(), "name" | "kind");
        if identity && value != &other[key] {
            return Err(describe(path));
        }
        compare_values(value, &other[key], path, differing)?;
        path.pop();
    }
    Ok(())
}

fn compare_values(
    base: &Value,
    other: &Value,
    path: &mut Vec<Step>,
    differing: &mut Vec<Vec<Step>>,
) -> Result<(), String> {
    match (base, other) {
        (Value::Table(a), Value::Table(b)) => compare_tables(a, b, path, differing),
        (Value::Array(a), Value::Array(b)) if holds_tables(a) || holds_tables(b) => {
            if a.len() != b.len() {
                return Err(describe(path));
            }
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                path.push(Step::Index(i));
                compare_values(x, y, path, differing)?;
                path.pop();
            }
            Ok(())
        }
        (Value::Table(_), _) | (_, Value::Table(_)) => Err(describe(path)),
        (a, b) => {
            if a != b && !differing.contains(path) {
                differing.push(path.clone());
            }
            Ok(())
        }
    }
}

fn holds_tables(values: &[Value]) -> bool {
    values.iter().any(Value::is_table)
}

/// A name for the parameter at each place: its keys below the entry it is in
/// (`counters_collect`), or with the entry's name in front (`csv_path`) where that is
/// ambiguous or taken.
fn names(base: &Table, places: &[Vec<Step>], taken: &IndexMap<String, Value>) -> Vec<String> {
    let bare: Vec<String> = places
        .iter()
        .map(|p| identifier(&keys_below_entry(p)))
        .collect();
    places
        .iter()
        .zip(&bare)
        .map(|(path, name)| {
            let ambiguous = bare.iter().filter(|b| *b == name).count() > 1;
            if !(ambiguous || taken.contains_key(name)) {
                return name.clone();
            }
            let entry = path
                .iter()
                .position(|s| matches!(s, Step::Index(_)))
                .and_then(|i| at(base, &path[..=i]))
                .and_then(|e| e.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("value");
            identifier(&format!("{entry}_{name}"))
        })
        .collect()
}

fn keys_below_entry(path: &[Step]) -> String {
    let start = path
        .iter()
        .position(|s| matches!(s, Step::Index(_)))
        .map_or(0, |i| i + 1);
    path[start..]
        .iter()
        .filter_map(|s| match s {
            Step::Key(k) => Some(k.as_str()),
            Step::Index(_) => None,
        })
        .collect::<Vec<_>>()
        .join("_")
}

/// `text` with what a parameter name cannot hold replaced by `_`.
fn identifier(text: &str) -> String {
    let name: String = text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if is_identifier(&name) {
        name
    } else {
        format!("p_{name}")
    }
}

fn at<'a>(table: &'a Table, path: &[Step]) -> Option<&'a Value> {
    let (Step::Key(first), rest) = path.split_first()? else {
        return None;
    };
    rest.iter()
        .try_fold(table.get(first)?, |value, step| match step {
            Step::Key(k) => value.get(k.as_str()),
            Step::Index(i) => value.get(*i),
        })
}

fn at_mut<'a>(table: &'a mut Table, path: &[Step]) -> Option<&'a mut Value> {
    let (Step::Key(first), rest) = path.split_first()? else {
        return None;
    };
    rest.iter()
        .try_fold(table.get_mut(first)?, |value, step| match step {
            Step::Key(k) => value.get_mut(k.as_str()),
            Step::Index(i) => value.get_mut(*i),
        })
}

/// `context[0].counters.collect`
fn describe(path: &[Step]) -> String {
    crate::diag::Step::dotted(path.iter().map(|step| match step {
        Step::Key(k) => crate::diag::Step::Key(k),
        Step::Index(i) => crate::diag::Step::Index(*i),
    }))
}

/// `NAME=VALUE` as `rocflow run --set` reads it: a string as it is, anything else in TOML.
fn set_argument(name: &str, value: &Value) -> String {
    match value {
        Value::String(text) => format!("{name}={text}"),
        other => format!("{name}={other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().unwrap()
    }

    #[test]
    fn differing_values_become_parameters() {
        let a = table(
            "[params]\noutput_dir = \"pass_1\"\n[[context]]\nname = \"c\"\ntracing = [\"kernel_dispatch\"]\n[context.counters]\ncollect = [\"A\"]\n[[sink]]\nname = \"rocpd\"\nkind = \"rocpd\"\npath = \"x\"\n",
        );
        let b = table(
            "[params]\noutput_dir = \"pass_2\"\n[[context]]\nname = \"c\"\ntracing = [\"kernel_dispatch\"]\n[context.counters]\ncollect = [\"B\", \"C\"]\n[[sink]]\nname = \"rocpd\"\nkind = \"rocpd\"\npath = \"x\"\n",
        );
        let shared = share(vec![a, b]).unwrap();
        let params = shared.pipeline["params"].as_table().unwrap();
        assert_eq!(params["output_dir"].as_str(), Some("pass_1"));
        assert_eq!(params["counters_collect"].as_array().unwrap().len(), 1);
        assert_eq!(
            shared.pipeline["context"][0]["counters"]["collect"].as_str(),
            Some("{counters_collect}")
        );
        assert_eq!(
            shared.runs,
            [
                Vec::<String>::new(),
                vec![
                    "output_dir=pass_2".to_owned(),
                    "counters_collect=[\"B\", \"C\"]".to_owned()
                ]
            ]
        );
    }

    #[test]
    fn a_different_shape_is_a_mismatch() {
        let a = table("[[context]]\nname = \"c\"\ntracing = [\"kernel_dispatch\"]\n");
        let b = table(
            "[[context]]\nname = \"c\"\ntracing = [\"kernel_dispatch\"]\n[context.counters]\ncollect = [\"A\"]\n",
        );
        assert_eq!(
            share(vec![a.clone(), b]).unwrap_err(),
            Mismatch {
                pass: 1,
                at: "context[0].counters".into()
            }
        );
        let c = table("[[sink]]\nname = \"csv\"\nkind = \"csv\"\npath = \"x\"\n");
        let d = table("[[sink]]\nname = \"rocpd\"\nkind = \"rocpd\"\npath = \"x\"\n");
        assert_eq!(share(vec![c, d]).unwrap_err().at, "sink[0].name");
        assert!(
            share(vec![a.clone(), a])
                .unwrap()
                .runs
                .iter()
                .all(Vec::is_empty)
        );
    }

    #[test]
    fn ambiguous_names_carry_the_entry_name() {
        let a = table(
            "[[sink]]\nname = \"csv\"\nkind = \"csv\"\npath = \"a\"\n[[sink]]\nname = \"rocpd\"\nkind = \"rocpd\"\npath = \"a.db\"\n",
        );
        let b = table(
            "[[sink]]\nname = \"csv\"\nkind = \"csv\"\npath = \"b\"\n[[sink]]\nname = \"rocpd\"\nkind = \"rocpd\"\npath = \"b.db\"\n",
        );
        let shared = share(vec![a, b]).unwrap();
        assert_eq!(shared.runs[1], ["csv_path=b", "rocpd_path=b.db"]);
    }
}
