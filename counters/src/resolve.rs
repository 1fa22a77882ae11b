//! Resolving a counter on one architecture: what a name means there, which hardware
//! counters a derived counter needs, and its value from theirs.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;

use crate::counter::DefinitionKind;
use crate::definitions::Definitions;
use crate::expr::{EvalError, Expr, Name, ParseError, Resolution, Tensor};

/// Agent properties an expression may name, e.g. `simd_count` in `CU_NUM`'s
/// `simd_count/simd_per_cu`. rocprofiler-sdk turns each property it reads from the kernel's
/// topology into a constant counter of that name.
pub const AGENT_PROPERTIES: &[&str] = &[
    "cpu_cores_count",
    "simd_count",
    "mem_banks_count",
    "caches_count",
    "io_links_count",
    "cpu_core_id_base",
    "simd_id_base",
    "max_waves_per_simd",
    "lds_size_in_kb",
    "gds_size_in_kb",
    "num_gws",
    "wave_front_size",
    "array_count",
    "simd_arrays_per_engine",
    "cu_per_simd_array",
    "simd_per_cu",
    "max_slots_scratch_cu",
    "gfx_target_version",
    "vendor_id",
    "device_id",
    "location_id",
    "domain",
    "drm_render_minor",
    "hive_id",
    "num_sdma_engines",
    "num_sdma_xgmi_engines",
    "num_cp_queues",
    "max_engine_clk_ccompute",
    "unique_id",
    "local_mem_size",
    "fw_version",
    "capability",
    "sdma_fw_version",
    "num_xcc",
];

/// What a name stands for on an architecture.
#[derive(Debug, Clone, Copy)]
pub enum Resolved<'a> {
    Hardware {
        block: &'a str,
        event: u64,
    },
    /// A derived counter: from the definitions, or declared by the caller.
    Derived(&'a Expr),
    AgentProperty,
}

/// Everything a counter needs collected to be computed on one architecture.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requirements {
    pub hardware: BTreeSet<String>,
    pub agent_properties: BTreeSet<String>,
}

/// Why a counter cannot be resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum ResolveError {
    /// A name that is neither a counter on the architecture nor an agent property; `via`
    /// is the chain of derived counters that led to it.
    Unknown {
        name: String,
        arch: String,
        via: Vec<String>,
    },
    /// Derived counters that refer to each other; the first name is repeated at the end.
    Cycle { cycle: Vec<String> },
    /// A derived counter whose expression does not parse.
    BadExpression { counter: String, error: ParseError },
    /// `accumulate` of something other than a hardware counter, or with a resolution on
    /// a counter outside the SQ block (the SDK refuses both).
    BadAccumulate {
        counter: String,
        target: String,
        reason: &'static str,
    },
    /// The values given do not combine, e.g. operands with different instance counts.
    Evaluation { counter: String, error: EvalError },
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::Unknown { name, arch, via } => {
                write!(f, "`{name}` is not defined for {arch}")?;
                match via.is_empty() {
                    true => Ok(()),
                    false => write!(f, " (needed by {})", via.join(" -> ")),
                }
            }
            ResolveError::Cycle { cycle } => {
                write!(f, "derived counters form a cycle: {}", cycle.join(" -> "))
            }
            ResolveError::BadExpression { counter, error } => {
                write!(f, "the expression of `{counter}` does not parse: {error}")
            }
            ResolveError::BadAccumulate {
                counter,
                target,
                reason,
            } => write!(f, "`accumulate({target}, …)` in `{counter}`: {reason}"),
            ResolveError::Evaluation { counter, error } => {
                write!(f, "cannot evaluate `{counter}`: {error}")
            }
        }
    }
}

impl std::error::Error for ResolveError {}

/// Resolves names on one architecture, with extra derived counters a caller (such as a
/// pipeline) declares on top of the definitions.
///
/// ```
/// # use rocflow_counters::{Definitions, Source, expr};
/// let defs = Definitions::parse(&Source::new("defs.yaml", "
/// schema-version: 1
/// SQ_WAVES:
///   architectures: {gfx942: {block: SQ, event: 4}}
///   description: Waves.
/// ")).unwrap();
/// let mut resolver = defs.resolver("gfx942");
/// resolver.add_derived("WAVES_PER_CU", expr::parse("reduce(SQ_WAVES,sum)/simd_count").unwrap());
/// let needs = resolver.requirements("WAVES_PER_CU").unwrap();
/// assert_eq!(needs.hardware.into_iter().collect::<Vec<_>>(), ["SQ_WAVES"]);
/// ```
#[derive(Debug, Clone)]
pub struct Resolver<'a> {
    definitions: &'a Definitions,
    arch: String,
    extra: HashMap<String, Expr>,
}

impl Definitions {
    /// A resolver for counters on `arch` (e.g. `gfx942`).
    pub fn resolver(&self, arch: &str) -> Resolver<'_> {
        Resolver {
            definitions: self,
            arch: arch.to_owned(),
            extra: HashMap::new(),
        }
    }
}

impl<'a> Resolver<'a> {
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// Declares a derived counter on top of the definitions; it hides a counter of the
    /// same name.
    pub fn add_derived(&mut self, name: impl Into<String>, expression: Expr) {
        self.extra.insert(name.into(), expression);
    }

    /// What `name` stands for: a declared derived counter, else an agent property (as in
    /// the SDK, where they come first), else a counter defined on the architecture.
    pub fn lookup(&self, name: &str) -> Result<Option<Resolved<'_>>, ResolveError> {
        if let Some(expr) = self.extra.get(name) {
            return Ok(Some(Resolved::Derived(expr)));
        }
        if AGENT_PROPERTIES.contains(&name) {
            return Ok(Some(Resolved::AgentProperty));
        }
        let Some(definition) = self.definitions.definition(name, &self.arch) else {
            return Ok(None);
        };
        Ok(Some(match &definition.kind {
            DefinitionKind::Hardware { block, event } => Resolved::Hardware {
                block,
                event: *event,
            },
            DefinitionKind::Derived { expression } => {
                let expr = expression
                    .parsed()
                    .map_err(|error| ResolveError::BadExpression {
                        counter: name.to_owned(),
                        error: error.clone(),
                    })?;
                Resolved::Derived(expr)
            }
        }))
    }

    /// The hardware counters and agent properties `name` needs, through any depth of
    /// derived counters.
    pub fn requirements(&self, name: &str) -> Result<Requirements, ResolveError> {
        let mut walk = Walk::new(self);
        walk.visit(name, &mut Err)?;
        Ok(walk.needs)
    }

    /// Every cycle among the derived counters defined on this architecture, and every
    /// misuse of `accumulate` in them, from one walk that visits each counter once. Names
    /// that mean nothing here, and expressions that do not parse, are left to whoever
    /// reports them where they are written.
    pub fn graph_errors(&self) -> Vec<ResolveError> {
        let mut walk = Walk::new(self);
        let mut errors = Vec::new();
        let mut found = |error: ResolveError| {
            if matches!(
                error,
                ResolveError::Cycle { .. } | ResolveError::BadAccumulate { .. }
            ) {
                errors.push(error);
            }
            Ok(())
        };
        let derived = (self.definitions.counters().iter()).filter(|c| {
            c.definition_for(&self.arch)
                .is_some_and(|d| matches!(d.kind, DefinitionKind::Derived { .. }))
        });
        for counter in derived {
            // `found` goes on after every problem, so the walk does too.
            let _ = walk.visit(&counter.name, &mut found);
        }
        errors
    }

    /// The value of `name` given the values of the hardware counters and agent properties
    /// it needs (`inputs`); derived counters are computed along the way.
    pub fn evaluate(
        &self,
        name: &str,
        inputs: &mut dyn FnMut(&str) -> Option<Tensor>,
    ) -> Result<Tensor, ResolveError> {
        self.requirements(name)?;
        self.value(name, inputs)
            .map_err(|error| ResolveError::Evaluation {
                counter: name.to_owned(),
                error,
            })
    }

    fn value(
        &self,
        name: &str,
        inputs: &mut dyn FnMut(&str) -> Option<Tensor>,
    ) -> Result<Tensor, EvalError> {
        let Ok(Some(Resolved::Derived(expr))) = self.lookup(name) else {
            return inputs(name).ok_or_else(|| EvalError {
                message: format!("no value for `{name}`"),
                span: None,
            });
        };
        let mut failure = None;
        let result = expr.evaluate(&mut |reference| match self.value(reference, inputs) {
            Ok(tensor) => Some(tensor),
            Err(error) => {
                failure.get_or_insert(error);
                None
            }
        });
        match failure {
            Some(error) => Err(error),
            None => result,
        }
    }
}

/// A depth-first walk through derived counters, each visited once however many counters
/// lead to it, the path kept to report cycles. It loops over a stack of its own rather than
/// recursing: a chain of derived counters as long as a file holds must not overflow the
/// thread's.
struct Walk<'r, 'a> {
    resolver: &'r Resolver<'a>,
    /// The derived counters being visited, outermost first, each with the names it refers
    /// to that are still to visit.
    path: Vec<(String, std::vec::IntoIter<&'r str>)>,
    /// Where on `path` each of its counters is.
    on_path: HashMap<String, usize>,
    done: HashSet<String>,
    needs: Requirements,
}

impl<'r, 'a> Walk<'r, 'a> {
    fn new(resolver: &'r Resolver<'a>) -> Self {
        Walk {
            resolver,
            path: Vec::new(),
            on_path: HashMap::new(),
            done: HashSet::new(),
            needs: Requirements::default(),
        }
    }

    /// Visits `name` and all it needs that was not visited yet. Each problem met goes to
    /// `found`, which says whether to go on (`Ok`) or to stop with an error.
    fn visit(
        &mut self,
        name: &str,
        found: &mut impl FnMut(ResolveError) -> Result<(), ResolveError>,
    ) -> Result<(), ResolveError> {
        self.enter(name, found)?;
        while let Some((_, references)) = self.path.last_mut() {
            match references.next() {
                Some(reference) => self.enter(reference, found)?,
                None => {
                    let (name, _) = self.path.pop().expect("not empty");
                    self.on_path.remove(&name);
                    self.done.insert(name);
                }
            }
        }
        Ok(())
    }

    /// Meets `name`: a cycle if it is on the path, nothing if it was visited, else it is
    /// looked up, and a derived counter goes on the path.
    fn enter(
        &mut self,
        name: &str,
        found: &mut impl FnMut(ResolveError) -> Result<(), ResolveError>,
    ) -> Result<(), ResolveError> {
        if let Some(&start) = self.on_path.get(name) {
            let mut cycle: Vec<String> =
                self.path[start..].iter().map(|(n, _)| n.clone()).collect();
            cycle.push(name.to_owned());
            return found(ResolveError::Cycle { cycle });
        }
        if self.done.contains(name) {
            return Ok(());
        }
        let resolved = match self.resolver.lookup(name) {
            Ok(resolved) => resolved,
            Err(error) => {
                self.done.insert(name.to_owned());
                return found(error);
            }
        };
        match resolved {
            None => {
                self.done.insert(name.to_owned());
                let via = self.path.iter().map(|(n, _)| n.clone()).collect();
                return found(ResolveError::Unknown {
                    name: name.to_owned(),
                    arch: self.resolver.arch.clone(),
                    via,
                });
            }
            Some(Resolved::Hardware { .. }) => {
                self.needs.hardware.insert(name.to_owned());
            }
            Some(Resolved::AgentProperty) => {
                self.needs.agent_properties.insert(name.to_owned());
            }
            Some(Resolved::Derived(expr)) => {
                self.on_path.insert(name.to_owned(), self.path.len());
                let references: Vec<&'r str> = expr.references().map(Name::as_str).collect();
                self.path.push((name.to_owned(), references.into_iter()));
                if let Err(error) = self.check_accumulates(name, expr) {
                    found(error)?;
                }
                return Ok(());
            }
        }
        self.done.insert(name.to_owned());
        Ok(())
    }

    fn check_accumulates(&self, counter: &str, expr: &Expr) -> Result<(), ResolveError> {
        let mut problem = None;
        expr.walk(&mut |e| {
            let Expr::Accumulate {
                counter: target,
                resolution,
            } = e
            else {
                return;
            };
            let reason = match self.resolver.lookup(&target.text) {
                Ok(Some(Resolved::Hardware { block, .. })) => (*resolution != Resolution::None
                    && block != "SQ")
                    .then_some("LOW_RES and HIGH_RES apply only to counters of the SQ block"),
                Ok(Some(_)) => Some("only hardware counters can be accumulated"),
                // Unknown names are reported when the walk reaches them.
                Ok(None) | Err(_) => None,
            };
            if let Some(reason) = reason {
                problem.get_or_insert(ResolveError::BadAccumulate {
                    counter: counter.to_owned(),
                    target: target.text.clone(),
                    reason,
                });
            }
        });
        problem.map_or(Ok(()), Err)
    }
}
