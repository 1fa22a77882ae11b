//! Counter checks of a pipeline: derived expressions parse (errors point at the column
//! inside the TOML string) and read only what the context collects, other derived counters
//! (without a cycle) and agent properties rocflow knows; and, when a counter definition file
//! is available, every collected counter resolves to hardware counters on every selected
//! architecture.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use rocflow_counters::expr::Expr;
use rocflow_counters::{
    self as counters, Definitions, Requirements, ResolveError, Resolved, Resolver, expr,
};

use rocflow_core::agent_counters;
use rocflow_core::scenario::Scenario;

use crate::diag::did_you_mean;
use crate::plan::AgentSelector;
use crate::record::Agent;

use super::glob::glob_match;
use super::model;
use super::passes::Need;
use crate::diag::Step;

/// A fault found in a `[context.counters]` table.
pub(super) struct Finding {
    /// Path below `context[i].counters`.
    pub path: Vec<Step<'static>>,
    /// Byte offset and length inside the string value, where the fault has a column.
    pub offset: Option<usize>,
    pub len: usize,
    pub message: String,
    pub hint: Option<String>,
    /// A doubt rather than a fault: the pipeline may still be right.
    pub warning: bool,
}

impl Finding {
    fn at(path: Vec<Step<'static>>, message: impl Into<String>) -> Finding {
        Finding {
            path,
            offset: None,
            len: 0,
            message: message.into(),
            hint: None,
            warning: false,
        }
    }
}

/// The counters of rocflow's simulated GPUs (the built-in MI300X + MI210 node and the
/// W7900 workstation): the only counter names rocflow knows without definition files.
static SIMULATED_COUNTERS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let scenarios = [
        rocflow_core::scenario::DEFAULT,
        include_str!("../../../examples/sim/w7900.toml"),
    ];
    let agents = scenarios
        .iter()
        .filter_map(|text| Scenario::parse(text).ok())
        .flat_map(|s| s.agents);
    let mut names: Vec<String> = agents
        .flat_map(|a| a.counters.into_iter().map(|c| c.name))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
});

/// The GPUs of the simulated device a pipeline is to run on, in order. They have no
/// counters but their scenario's, so a collected name none of them has is an error, where
/// on a real GPU without definitions it is only a doubt.
#[derive(Debug, Clone)]
pub struct SimulatedGpus {
    /// How the user names the device (`sim`, `sim:FILE`), for hints.
    device: String,
    gpus: Vec<SimulatedGpu>,
}

#[derive(Debug, Clone)]
struct SimulatedGpu {
    gfx: String,
    counters: Vec<String>,
}

impl SimulatedGpu {
    fn has(&self, counter: &str) -> bool {
        self.counters.iter().any(|c| c == counter)
    }
}

/// `gfx942, gfx90a`.
fn gfx_names<'a>(gpus: impl Iterator<Item = &'a SimulatedGpu>) -> String {
    gpus.map(|g| g.gfx.as_str()).collect::<Vec<_>>().join(", ")
}

impl SimulatedGpus {
    /// The GPUs of `scenario`, which `device` names, with the counters the simulated SDK
    /// gives them (those their scenario lists, and their architecture's where the
    /// scenario's counter definitions are found).
    pub fn new(device: impl Into<String>, scenario: &Scenario) -> SimulatedGpus {
        // Definitions that do not load were reported when the scenario was read.
        let definitions = agent_counters::definitions(scenario).ok().flatten();
        let gpus = (0..scenario.agents.len())
            .map(|gpu| SimulatedGpu {
                gfx: scenario.agents[gpu].name.clone(),
                counters: agent_counters::agent_counters(scenario, gpu, definitions.as_ref())
                    .into_iter()
                    .map(|c| c.name)
                    .collect(),
            })
            .collect();
        SimulatedGpus {
            device: device.into(),
            gpus,
        }
    }

    /// The collected names no GPU that `selectors` pick has (all GPUs when there are no
    /// selectors), each where it first is. Picking no GPU at all is the tool's to report:
    /// it says so when the run starts.
    fn unknown(
        &self,
        table: &model::Counters,
        parsed: &[(usize, String, Expr)],
        selectors: &[AgentSelector],
    ) -> Vec<Finding> {
        let selected: Vec<&SimulatedGpu> = (0..)
            .zip(&self.gpus)
            .filter(|(i, gpu)| AgentSelector::any_selects_gpu(selectors, *i, &gpu.gfx))
            .map(|(_, gpu)| gpu)
            .collect();
        if selected.is_empty() {
            return Vec::new();
        }
        let mut seen = HashSet::new();
        let collected = table.collect.iter().enumerate();
        collected
            .filter(|(_, name)| !parsed.iter().any(|(_, d, _)| d == *name))
            .filter(|(_, name)| !selected.iter().any(|g| g.has(name)) && seen.insert(*name))
            .map(|(n, name)| {
                let path = vec![Step::Key("collect"), Step::Index(n)];
                let elsewhere = gfx_names(self.gpus.iter().filter(|g| g.has(name)));
                if !elsewhere.is_empty() {
                    let message = format!(
                        "`{name}` is not a counter of the selected GPUs ({})",
                        gfx_names(selected.iter().copied())
                    );
                    return Finding {
                        hint: Some(format!("{elsewhere} of the simulated device has it")),
                        ..Finding::at(path, message)
                    };
                }
                let names = (selected.iter()).flat_map(|g| g.counters.iter().map(String::as_str));
                let names = names.chain(parsed.iter().map(|(_, d, _)| d.as_str()));
                let hint = did_you_mean(name, names).unwrap_or_else(|| {
                    format!(
                        "`rocflow counters list --device {}` lists its counters",
                        self.device
                    )
                });
                Finding {
                    hint: Some(hint),
                    ..Finding::at(
                        path,
                        format!(
                            "unknown counter `{name}`: the simulated device has none of that name"
                        ),
                    )
                }
            })
            .collect()
    }
}

/// Where counter definitions come from, and the files loaded so far.
pub(super) struct CounterCheck {
    /// `--counters FILE`, used when a pipeline names no file of its own.
    explicit: Option<PathBuf>,
    /// The simulated device the pipeline runs on: when no file is named, its counters
    /// are checked instead of the installed definitions, which describe real GPUs.
    simulated: Option<SimulatedGpus>,
    /// The directory relative `definitions` paths start from (the pipeline's).
    base: PathBuf,
    loaded: HashMap<Option<PathBuf>, Option<(String, Definitions)>>,
}

impl CounterCheck {
    pub fn new(
        explicit: Option<PathBuf>,
        simulated: Option<SimulatedGpus>,
        base: PathBuf,
    ) -> CounterCheck {
        CounterCheck {
            explicit,
            simulated,
            base,
            loaded: HashMap::new(),
        }
    }

    /// The definitions for a `[context.counters]` table: its `definitions` file, else
    /// `--counters`, else the installed ones (not for the simulated device). A file the
    /// user named must load.
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
                None if self.simulated.is_some() => None,
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

    /// Checks a counters table; `agents` are the agents it counts on (the table's, else
    /// the context's), whose gfx names give the architectures to check. Gives the faults,
    /// and what each counter the SDK counts needs on each architecture it was checked on.
    pub fn check(
        &mut self,
        table: &model::Counters,
        derived: &[(String, String)],
        agents: &[AgentSelector],
    ) -> (Vec<Finding>, Vec<Need>) {
        let mut findings = Vec::new();
        let mut needs = Vec::new();
        let mut parsed = Vec::new();
        for (d, (name, text)) in derived.iter().enumerate() {
            match expr::parse(text) {
                Ok(expression) => parsed.push((d, name.clone(), expression)),
                Err(err) => findings.push(Finding {
                    warning: false,
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
        let names: Vec<&str> = derived.iter().map(|(name, _)| name.as_str()).collect();
        let defs =
            (self.definitions(table.definitions.as_deref(), &mut findings)).map(|(_, defs)| defs);
        findings.extend(derived_inputs(table, &names, &parsed, defs));
        let globs: Vec<String> = agents
            .iter()
            .filter_map(|a| match a {
                AgentSelector::Gfx(glob) => Some(glob.clone()),
                _ => None,
            })
            .collect();
        let Some(defs) = defs else {
            findings.extend(match &self.simulated {
                Some(gpus) => gpus.unknown(table, &parsed, agents),
                None => unchecked(table, &parsed),
            });
            return (findings, needs);
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
        // Each unknown name is reported once, where it first is: a list (an imported `pmc:`
        // line) may repeat one thousands of times.
        let mut unknown = HashSet::new();
        // A name listed again is counted once, and said once: planning passes for the
        // same counter hundreds of times over would take hours.
        let (mut listed, mut repeated) = (HashSet::new(), HashSet::new());
        for (n, name) in table.collect.iter().enumerate() {
            let path = vec![Step::Key("collect"), Step::Index(n)];
            if !listed.insert(name) {
                if repeated.insert(name) {
                    findings.push(Finding {
                        warning: true,
                        ..Finding::at(
                            path,
                            format!("`{name}` is listed again; it is collected once"),
                        )
                    });
                }
                continue;
            }
            let inline = parsed.iter().any(|(_, d, _)| d == name);
            if !inline && defs.get(name).is_none() {
                if !unknown.insert(name) {
                    continue;
                }
                let names = defs.counters().iter().map(|c| c.name.as_str());
                let names = names.chain(parsed.iter().map(|(_, d, _)| d.as_str()));
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
                for (_, d, expression) in &parsed {
                    resolver.add_derived(d.clone(), expression.clone());
                }
                let err = match resolver.requirements(name) {
                    Ok(requirements) => {
                        if !inline {
                            needs.push(need(&resolver, name, requirements));
                        }
                        continue;
                    }
                    Err(err) => err,
                };
                // Reported elsewhere: cycles among the pipeline's own counters (at
                // them), and unknown counters a derived one reads (where collected).
                let reported = match &err {
                    ResolveError::Cycle { cycle } => {
                        cycle.iter().all(|c| parsed.iter().any(|(_, d, _)| d == c))
                    }
                    ResolveError::Unknown { name, via, .. } => {
                        !via.is_empty() && table.collect.contains(name)
                    }
                    _ => false,
                };
                if reported {
                    break;
                }
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
        (findings, needs)
    }
}

/// Without definitions, the collected names no simulated GPU has: each may be a counter
/// of a real GPU, or a typo (then the closest simulated name is the hint).
fn unchecked(table: &model::Counters, parsed: &[(usize, String, Expr)]) -> Vec<Finding> {
    let known = &*SIMULATED_COUNTERS;
    let mut seen = HashSet::new();
    let collected = table.collect.iter().enumerate();
    collected
        .filter(|(_, name)| !parsed.iter().any(|(_, d, _)| d == *name))
        .filter(|(_, name)| !known.contains(name) && seen.insert(*name))
        .map(|(n, name)| Finding {
            hint: did_you_mean(name, known.iter().map(String::as_str)).or_else(|| {
                Some("check it against a GPU's counters with --counters FILE (rocprofiler-sdk's counter_defs.yaml)".into())
            }),
            warning: true,
            ..Finding::at(
                vec![Step::Key("collect"), Step::Index(n)],
                format!(
                    "`{name}` is not checked: no counter definitions were found, and no simulated GPU has this counter"
                ),
            )
        })
        .collect()
}

/// What `name` needs counted on the resolver's architecture: each hardware counter with
/// its block.
fn need(resolver: &Resolver<'_>, name: &str, requirements: Requirements) -> Need {
    let hardware =
        requirements
            .hardware
            .into_iter()
            .filter_map(|counter| match resolver.lookup(&counter) {
                Ok(Some(Resolved::Hardware { block, .. })) => Some((counter, block.to_owned())),
                _ => None,
            });
    Need {
        counter: name.to_owned(),
        arch: resolver.arch().to_owned(),
        hardware: hardware.collect(),
    }
}

/// What derived counters may read: collected counters, other derived counters (without a
/// cycle) and the agent properties rocflow knows; and no division by a constant zero.
/// `derived` names every derived counter, those that do not parse too (they are reported
/// where they are defined); `parsed` holds each parsed one's index in `derived`, name and
/// expression; `defs` are the definitions the collected names are checked against, if any.
fn derived_inputs(
    table: &model::Counters,
    derived: &[&str],
    parsed: &[(usize, String, Expr)],
    defs: Option<&Definitions>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let expression = |d: usize| {
        vec![
            Step::Key("derived"),
            Step::Index(d),
            Step::Key("expression"),
        ]
    };
    let properties = || Agent::PROPERTIES.iter().map(|(name, _)| *name);
    for (d, _, expr) in parsed {
        // The runner reads collected values as they are: the SDK's accumulation of
        // per-cycle levels is configured for counters it defines, not for these.
        expr.walk(&mut |e| {
            if let Expr::Accumulate { counter, .. } = e {
                findings.push(Finding {
                    warning: false,
                    path: expression(*d),
                    offset: Some(counter.span.start),
                    len: counter.span.len(),
                    message: format!(
                        "a pipeline's derived counter cannot accumulate `{}`",
                        counter.text
                    ),
                    hint: Some(
                        "define it in a counter definitions file (`definitions`) and collect \
                         it, so rocprofiler-sdk accumulates it"
                            .into(),
                    ),
                });
            }
        });
        for reference in expr.references() {
            let name = reference.as_str();
            if table.collect.iter().any(|c| c == name)
                || derived.contains(&name)
                || properties().any(|p| p == name)
            {
                continue;
            }
            let (message, hint) = if counters::AGENT_PROPERTIES.contains(&name) {
                (
                    format!("rocflow does not know the agent property `{name}`"),
                    format!(
                        "derived counters can read {}",
                        properties().collect::<Vec<_>>().join(", ")
                    ),
                )
            } else {
                // A collected name the definitions do not know is a typo of its own
                // (reported where it is collected), never the fix for this one.
                let known = (table.collect.iter().map(String::as_str))
                    .filter(|c| derived.contains(c) || defs.is_none_or(|d| d.get(c).is_some()));
                let known = known.chain(derived.iter().copied()).chain(properties());
                let hint = did_you_mean(name, known)
                    .unwrap_or_else(|| format!("add `{name}` to `collect`"));
                (format!("`{name}` is not collected by this context"), hint)
            };
            findings.push(Finding {
                warning: false,
                path: expression(*d),
                offset: Some(reference.span.start),
                len: reference.span.len(),
                message,
                hint: Some(hint),
            });
        }
        for division in expr.zero_divisions() {
            findings.push(Finding {
                hint: Some(
                    "rocprofiler-sdk makes a division by zero 0; divide by a counter".into(),
                ),
                ..Finding::at(expression(*d), format!("`{division}` divides by zero"))
            });
        }
    }
    let named: Vec<(&str, &Expr)> = parsed.iter().map(|(_, n, e)| (n.as_str(), e)).collect();
    if let Err(cycle) = expr::evaluation_order(&named) {
        let (d, _, expr) = &parsed[named
            .iter()
            .position(|(n, _)| *n == cycle[0])
            .expect("a member")];
        let next = expr
            .references()
            .find(|r| r.as_str() == cycle[1])
            .expect("the next member");
        findings.push(Finding {
            warning: false,
            path: expression(*d),
            offset: Some(next.span.start),
            len: next.span.len(),
            message: format!("derived counters form a cycle: {}", cycle.join(" -> ")),
            hint: None,
        });
    }
    findings
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
