//! Counter checks of a pipeline: derived expressions parse (errors point at the column
//! inside the TOML string), and, when a counter definition file is available, every
//! collected counter resolves to hardware counters on every selected architecture.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rocflow_counters::{self as counters, Definitions, ResolveError, expr};

use crate::diag::did_you_mean;
use crate::plan::AgentSelector;

use super::compile::glob_match;
use super::model;
use super::value::Step;

/// A fault found in a `[context.counters]` table.
pub(super) struct Finding {
    /// Path below `context[i].counters`.
    pub path: Vec<Step<'static>>,
    /// Byte offset and length inside the string value, where the fault has a column.
    pub offset: Option<usize>,
    pub len: usize,
    pub message: String,
    pub hint: Option<String>,
}

impl Finding {
    fn at(path: Vec<Step<'static>>, message: impl Into<String>) -> Finding {
        Finding {
            path,
            offset: None,
            len: 0,
            message: message.into(),
            hint: None,
        }
    }
}

/// Where counter definitions come from, and the files loaded so far.
pub(super) struct CounterCheck {
    /// `--counters FILE`, used when a pipeline names no file of its own.
    explicit: Option<PathBuf>,
    /// The directory relative `definitions` paths start from (the pipeline's).
    base: PathBuf,
    loaded: HashMap<Option<PathBuf>, Option<(String, Definitions)>>,
}

impl CounterCheck {
    pub fn new(explicit: Option<PathBuf>, base: PathBuf) -> CounterCheck {
        CounterCheck {
            explicit,
            base,
            loaded: HashMap::new(),
        }
    }

    /// The definitions for a `[context.counters]` table: its `definitions` file, else
    /// `--counters`, else the installed ones. A file the user named must load; when none
    /// was named and none is installed, only the expressions are checked.
    fn definitions(
        &mut self,
        named: Option<&str>,
        findings: &mut Vec<Finding>,
    ) -> Option<&(String, Definitions)> {
        let named = named.map(|p| self.base.join(p));
        let key = named.clone().or_else(|| self.explicit.clone());
        if !self.loaded.contains_key(&key) {
            let loaded = match &key {
                Some(path) => match Definitions::load(path) {
                    Ok(defs) => Some((path.display().to_string(), defs)),
                    Err(err) => {
                        let place = if named.is_some() {
                            vec![Step::Key("definitions")]
                        } else {
                            Vec::new()
                        };
                        findings.push(Finding::at(place, load_error(path, &err)));
                        None
                    }
                },
                None => counters::locate(None).ok().and_then(|path| {
                    Some((path.display().to_string(), Definitions::load(&path).ok()?))
                }),
            };
            self.loaded.insert(key.clone(), loaded);
        }
        self.loaded[&key].as_ref()
    }

    /// The definition file a table was checked against, if any.
    pub fn source(&mut self, named: Option<&str>) -> Option<String> {
        self.definitions(named, &mut Vec::new())
            .map(|(source, _)| source.clone())
    }

    /// Checks a counters table; `agents` are the selected agents (the table's and the
    /// context's), whose gfx names give the architectures to check.
    pub fn check<'a>(
        &mut self,
        table: &model::Counters,
        derived: &[(String, String)],
        agents: impl Iterator<Item = &'a AgentSelector>,
    ) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut parsed = Vec::new();
        for (d, (name, text)) in derived.iter().enumerate() {
            match expr::parse(text) {
                Ok(expression) => parsed.push((name.clone(), expression)),
                Err(err) => findings.push(Finding {
                    path: vec![
                        Step::Key("derived"),
                        Step::Index(d),
                        Step::Key("expression"),
                    ],
                    offset: Some(err.span().start),
                    len: err.span().len().max(1),
                    message: format!("invalid counter expression: {}", err.message()),
                    hint: err.hint().map(str::to_owned),
                }),
            }
        }
        let globs: Vec<String> = agents
            .filter_map(|a| match a {
                AgentSelector::Gfx(glob) => Some(glob.clone()),
                _ => None,
            })
            .collect();
        let Some((_, defs)) = self.definitions(table.definitions.as_deref(), &mut findings) else {
            return findings;
        };
        let known: Vec<&str> = defs.architectures().into_iter().collect();
        let mut architectures: Vec<&str> = Vec::new();
        for glob in &globs {
            let matching: Vec<&str> = known
                .iter()
                .copied()
                .filter(|a| glob_match(glob, a))
                .collect();
            if matching.is_empty() {
                findings.push(Finding {
                    hint: did_you_mean(glob, known.iter().copied()),
                    ..Finding::at(
                        vec![Step::Key("agents")],
                        format!("no counters are defined for `{glob}`"),
                    )
                });
            }
            architectures.extend(matching);
        }
        architectures.sort_unstable();
        architectures.dedup();
        for (n, name) in table.collect.iter().enumerate() {
            let path = vec![Step::Key("collect"), Step::Index(n)];
            let inline = parsed.iter().any(|(d, _)| d == name);
            if !inline && defs.get(name).is_none() {
                let names = defs.counters().iter().map(|c| c.name.as_str());
                let names = names.chain(parsed.iter().map(|(d, _)| d.as_str()));
                findings.push(Finding {
                    hint: did_you_mean(name, names)
                        .or_else(|| Some("see `rocflow counters list`".into())),
                    ..Finding::at(path, format!("unknown counter `{name}`"))
                });
                continue;
            }
            // Without a selected architecture, a counter is checked where it is defined.
            let on: Vec<&str> = if architectures.is_empty() {
                known
                    .iter()
                    .copied()
                    .filter(|a| inline || defs.is_defined(name, a))
                    .collect()
            } else {
                architectures.clone()
            };
            for arch in on {
                let mut resolver = defs.resolver(arch);
                for (d, expression) in &parsed {
                    resolver.add_derived(d.clone(), expression.clone());
                }
                if let Err(err) = resolver.requirements(name) {
                    let hint = match &err {
                        ResolveError::Unknown { .. } => Some(format!(
                            "`rocflow counters list --arch {arch}` lists what {arch} offers"
                        )),
                        _ => None,
                    };
                    findings.push(Finding {
                        hint,
                        ..Finding::at(path.clone(), err.to_string())
                    });
                    break;
                }
            }
        }
        findings
    }
}

fn load_error(path: &Path, err: &counters::Error) -> String {
    match err {
        counters::Error::Invalid(diagnostics) => {
            let first = diagnostics.first().map_or(String::new(), |d| {
                let at = d.location.as_ref().map_or(String::new(), |l| {
                    let (line, col) = l.line_col();
                    format!(" at {line}:{col}")
                });
                format!(": {}{at}", d.message)
            });
            format!(
                "counter definitions `{}` are invalid{first}",
                path.display()
            )
        }
        other => format!(
            "cannot load counter definitions `{}`: {other}",
            path.display()
        ),
    }
}
