//! The compiler: a schema-valid pipeline becomes a [`Plan`], and every semantic fault the
//! schema cannot see (unknown domains and operations, bad regexes and expressions, two
//! sinks on one path, combinations rocprofiler-sdk refuses, …) becomes a diagnostic that
//! points at the offending value.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use indexmap::IndexMap;
use regex::Regex;

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::expression;
use crate::plan::{
    AgentSelector, BufferPlan, ContextPlan, CounterPlan, DEFAULT_FLUSH_INTERVAL_NS, Metric,
    MetricOp, PcSamplingPlan, Plan, PluginRef, PostPlan, Provenance, ReducePlan, Route, SinkPlan,
    StageGraph, StartPlan, TracingPlan, TransformOpPlan, TransformPlan, Writer,
};
use crate::plugin::{self, Check, Kind, NotFound, Plugin, PluginSink, PluginTransform, Search};
use crate::record::{Batch, ColumnType, RecordKind, wire_size};
use crate::sdk::{AgentType, COUNTER_DIMENSIONS, Domain, PcSamplingMethod};
use crate::sink::Format;

use super::counters::CounterCheck;
use super::model::{
    self, AgentRef, Pipeline, PostStep, Quantity, SinkKind, SinkType, Tracing, TransformOp,
};
use super::params::{RUNTIME_PLACEHOLDERS, placeholders};
use super::passes;
use super::units::{self, IterationRanges};
use super::value::{Node, Step};

/// Default buffer: large enough that flushes are rare, small enough for many contexts.
const DEFAULT_BUFFER_BYTES: u64 = 32 << 20;
const DEFAULT_WATERMARK: f64 = 0.875;
/// rocprofv3's default host-trap interval (microseconds).
const DEFAULT_HOST_TRAP_INTERVAL: u64 = 1000;
/// A stochastic interval rocprofiler-sdk accepts on every supported agent (a power of two).
const DEFAULT_STOCHASTIC_INTERVAL: u64 = 1 << 20;

/// Builds a path into the document: `path!["context", 2, "tracing", 0]`.
macro_rules! path {
    ($($step:expr),* $(,)?) => { &[$(Step::from($step)),*][..] };
}

/// Where the plugins a pipeline names are found, and how far they are checked.
pub(super) struct Plugins<'a> {
    pub search: &'a Search,
    pub check: Check,
}

/// Collects diagnostics while the plan is built, each pointing into the merged document.
pub(super) struct Compiler<'a> {
    doc: &'a Node,
    counters: CounterCheck,
    plugins: Plugins<'a>,
    /// Operation ids each (domain, glob) selects: contexts of one pipeline tend to repeat
    /// the same filters, and matching a glob against hundreds of names adds up.
    selections: HashMap<(Domain, String), Vec<i32>>,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
}

impl<'a> Compiler<'a> {
    pub(super) fn new(doc: &'a Node, counters: CounterCheck, plugins: Plugins<'a>) -> Self {
        Compiler {
            doc,
            counters,
            plugins,
            selections: HashMap::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn span(&self, path: &[Step<'_>]) -> Option<Span> {
        self.doc.at(path.iter().copied()).map(|n| n.span.clone())
    }

    fn error(&mut self, path: &[Step<'_>], message: impl Into<String>) -> &mut Diagnostic {
        let diagnostic = Diagnostic::error(message).at(self.span(path));
        self.errors.push(diagnostic);
        self.errors.last_mut().expect("just pushed")
    }

    fn warn(&mut self, path: &[Step<'_>], message: impl Into<String>) -> &mut Diagnostic {
        let diagnostic = Diagnostic::warning(message).at(self.span(path));
        self.warnings.push(diagnostic);
        self.warnings.last_mut().expect("just pushed")
    }

    /// Compiles the whole pipeline; errors win over a plan.
    pub(super) fn compile(
        mut self,
        pipeline: &Pipeline,
        resolved: &serde_json::Value,
        sources: Vec<String>,
        params: IndexMap<String, serde_json::Value>,
    ) -> Result<(Plan, Vec<Diagnostic>), Vec<Diagnostic>> {
        let contexts: Vec<ContextPlan> = pipeline
            .context
            .iter()
            .enumerate()
            .map(|(i, c)| self.context(i, c))
            .collect();
        self.check_exclusive_services(&contexts);
        let produced: Vec<RecordKind> = contexts
            .iter()
            .flat_map(ContextPlan::record_kinds)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let reduces_dimensions = (pipeline.transform.iter())
            .any(|t| matches!(t.op, TransformOp::ReduceDimensions { .. }));
        let transforms = counter_stages(&contexts, reduces_dimensions)
            .chain(self.transforms(&pipeline.transform, &produced))
            .collect::<Vec<_>>();
        let sinks = self.sinks(&pipeline.sink, &produced, &params);
        let routes = routes(&sinks, &transforms);
        let posts = self.posts(&pipeline.post, &sinks, &params);
        let spool_dir = match &pipeline.pipeline.spool_dir {
            Some(dir) => {
                self.placeholders(path!["pipeline", "spool_dir"], dir, &params);
                dir.clone()
            }
            None => crate::plan::DEFAULT_SPOOL_DIR.to_owned(),
        };
        if !self.errors.is_empty() {
            self.errors.extend(self.warnings);
            return Err(self.errors);
        }
        let resolved = serde_json::to_string(resolved).expect("JSON serializes");
        let plan = Plan {
            format: crate::plan::FORMAT_VERSION,
            pipeline: Provenance {
                name: pipeline
                    .pipeline
                    .name
                    .clone()
                    .unwrap_or_else(|| "pipeline".into()),
                description: pipeline.pipeline.description.clone(),
                sources,
                hash: format!("{:016x}", fnv1a(resolved.as_bytes())),
            },
            params,
            spool_dir,
            contexts,
            stages: StageGraph {
                produced,
                transforms,
                routes,
            },
            sinks,
            posts,
        };
        Ok((plan, self.warnings))
    }

    fn context(&mut self, i: usize, c: &model::Context) -> ContextPlan {
        let tracing = c
            .tracing
            .iter()
            .enumerate()
            .filter_map(|(j, t)| self.tracing(i, j, t))
            .collect::<Vec<_>>();
        let mut seen = BTreeSet::new();
        for (j, t) in c.tracing.iter().enumerate() {
            if !seen.insert(t.domain()) {
                self.error(
                    path!["context", i, "tracing", j],
                    format!(
                        "domain `{}` is traced twice in context `{}`",
                        t.domain(),
                        c.name
                    ),
                )
                .hint = Some("merge the two entries into one".into());
            }
        }
        let tracing = if c.args {
            self.with_args(i, c, tracing)
        } else {
            tracing
        };
        let counters = c.counters.as_ref().map(|k| self.counters(i, c, k));
        let pc_sampling = c.pc_sampling.as_ref().map(|p| self.pc_sampling(i, p));
        if tracing.is_empty() && counters.is_none() && pc_sampling.is_none() {
            self.warn(
                path!["context", i, "name"],
                format!("context `{}` collects nothing", c.name),
            )
            .hint = Some(
                "add `tracing = [...]`, `[context.counters]` or `[context.pc_sampling]`".into(),
            );
        }
        let code_objects = tracing
            .iter()
            .any(|t| matches!(t.domain, Domain::KernelDispatch | Domain::ScratchMemory))
            || counters.is_some()
            || pc_sampling.is_some();
        ContextPlan {
            name: c.name.clone(),
            buffer: self.buffer(i, &c.buffer),
            agents: self.agents(path!["context", i, "agents"], &c.agents),
            tracing,
            code_objects,
            counters,
            pc_sampling,
            serialize: c.serialize,
            start: self.period(i, c.period.as_ref()),
        }
    }

    /// Traces the API domains whose records can carry arguments through the domains whose
    /// records do (`_EXT`); a context where none can is refused, since it would look
    /// configured and collect no argument.
    fn with_args(
        &mut self,
        i: usize,
        c: &model::Context,
        tracing: Vec<TracingPlan>,
    ) -> Vec<TracingPlan> {
        if !tracing.iter().any(|t| t.domain.with_args().is_some()) {
            self.error(
                path!["context", i, "args"],
                format!(
                    "context `{}` traces no API whose calls the SDK gives arguments of",
                    c.name
                ),
            )
            .hint = Some(
                "rocprofiler-sdk gives the arguments of hip_runtime_api, hip_compiler_api and rocdecode_api calls (as rocprofv3 records them); HSA, marker and RCCL calls carry none".into(),
            );
        }
        tracing
            .into_iter()
            .map(|t| TracingPlan {
                domain: t.domain.with_args().unwrap_or(t.domain),
                ..t
            })
            .collect()
    }

    fn tracing(&mut self, i: usize, j: usize, t: &Tracing) -> Option<TracingPlan> {
        let domain_path = match t {
            Tracing::Domain(_) => path!["context", i, "tracing", j].to_vec(),
            Tracing::Filtered { .. } => path!["context", i, "tracing", j, "domain"].to_vec(),
        };
        let Some(domain) = Domain::from_name(t.domain()) else {
            let hint = did_you_mean(t.domain(), Domain::names())
                .or_else(|| Some("run `rocflow explain --domains` for the list".into()));
            self.error(
                &domain_path,
                format!("unknown tracing domain `{}`", t.domain()),
            )
            .hint = hint;
            return None;
        };
        let Tracing::Filtered {
            include, exclude, ..
        } = t
        else {
            return Some(TracingPlan {
                domain,
                operations: None,
            });
        };
        let ops = domain.operations();
        let mut select = |list: &[String], key: &str| -> BTreeSet<i32> {
            let mut ids = BTreeSet::new();
            for (k, pattern) in list.iter().enumerate() {
                let matched = self
                    .selections
                    .entry((domain, pattern.clone()))
                    .or_insert_with(|| {
                        ops.iter()
                            .filter(|(_, name)| glob_match(pattern, name))
                            .map(|(id, _)| *id)
                            .collect()
                    })
                    .clone();
                if matched.is_empty() {
                    let hint = did_you_mean(pattern, ops.iter().map(|(_, n)| *n));
                    self.error(
                        path!["context", i, "tracing", j, key, k],
                        format!("`{pattern}` matches no operation of `{}`", domain.name()),
                    )
                    .hint = hint.or_else(|| {
                        let some: Vec<&str> = ops.iter().take(4).map(|(_, n)| *n).collect();
                        Some(format!("operations look like: {}, …", some.join(", ")))
                    });
                }
                ids.extend(matched);
            }
            ids
        };
        let included = if include.is_empty() {
            ops.iter().map(|(id, _)| *id).collect()
        } else {
            select(include, "include")
        };
        let excluded = select(exclude, "exclude");
        let operations: Vec<i32> = included.difference(&excluded).copied().collect();
        if operations.is_empty() && !(include.is_empty() && exclude.is_empty()) {
            self.warn(
                path!["context", i, "tracing", j],
                format!(
                    "the filter on `{}` leaves no operation to trace",
                    domain.name()
                ),
            );
        }
        Some(TracingPlan {
            domain,
            operations: Some(operations),
        })
    }

    fn buffer(&mut self, i: usize, b: &model::Buffer) -> BufferPlan {
        let size_bytes = match &b.size {
            None => DEFAULT_BUFFER_BYTES,
            Some(q) => self
                .quantity(path!["context", i, "buffer", "size"], q, units::parse_size)
                .unwrap_or(DEFAULT_BUFFER_BYTES),
        };
        let default_watermark = (size_bytes as f64 * DEFAULT_WATERMARK) as u64;
        let watermark_bytes = match &b.watermark {
            None => default_watermark,
            Some(Quantity::Text(text)) if text.trim().ends_with('%') => {
                match units::parse_percent(text).expect("ends with %") {
                    Ok(fraction) => (size_bytes as f64 * fraction) as u64,
                    Err(message) => {
                        self.error(path!["context", i, "buffer", "watermark"], message);
                        default_watermark
                    }
                }
            }
            Some(q) => {
                let path = path!["context", i, "buffer", "watermark"];
                let bytes = self
                    .quantity(path, q, units::parse_size)
                    .unwrap_or(default_watermark);
                if bytes > size_bytes {
                    self.error(path, "the watermark is larger than the buffer")
                        .hint = Some(format!("the buffer holds {size_bytes} bytes; try \"75%\""));
                }
                bytes
            }
        };
        let path = path!["context", i, "buffer", "flush_interval"];
        let flush_interval_ns = match &b.flush_interval {
            None => DEFAULT_FLUSH_INTERVAL_NS,
            Some(q) => match self.quantity(path, q, units::parse_duration) {
                Some(0) => {
                    self.error(path, "a buffer cannot be flushed every 0 s")
                        .hint = Some("try \"1s\" or \"100ms\"".into());
                    DEFAULT_FLUSH_INTERVAL_NS
                }
                ns => ns.unwrap_or(DEFAULT_FLUSH_INTERVAL_NS),
            },
        };
        BufferPlan {
            size_bytes,
            watermark_bytes,
            policy: b.policy.unwrap_or_default(),
            flush_interval_ns,
        }
    }

    /// Reads a size or duration; text goes through `parse`, errors are reported.
    fn quantity(
        &mut self,
        path: &[Step<'_>],
        q: &Quantity,
        parse: fn(&str) -> Result<u64, String>,
    ) -> Option<u64> {
        q.value(parse)
            .map_err(|message| self.error(path, message))
            .ok()
    }

    fn agents(&mut self, path: &[Step<'_>], agents: &[AgentRef]) -> Vec<AgentSelector> {
        agents
            .iter()
            .enumerate()
            .filter_map(|(k, a)| {
                let mut item = path.to_vec();
                item.push(Step::Index(k));
                match a {
                    AgentRef::Index(n) => Some(AgentSelector::Index(*n)),
                    AgentRef::Name(name) => match name.to_ascii_lowercase().as_str() {
                        "gpu" => Some(AgentSelector::Type(AgentType::Gpu)),
                        "cpu" => Some(AgentSelector::Type(AgentType::Cpu)),
                        lower if lower.starts_with("gfx") => Some(AgentSelector::Gfx(lower.to_owned())),
                        _ => {
                            self.error(&item, format!("`{name}` does not select an agent"))
                                .hint = Some(
                                "use an index (0), a type (\"gpu\", \"cpu\") or a gfx name (\"gfx942\", \"gfx9*\")"
                                    .into(),
                            );
                            None
                        }
                    },
                }
            })
            .collect()
    }

    fn counters(&mut self, i: usize, c: &model::Context, k: &model::Counters) -> CounterPlan {
        let base = ["context", "counters"];
        let at = |rest: &[Step<'static>]| -> Vec<Step<'static>> {
            let mut p = vec![Step::from(base[0]), Step::Index(i), Step::from(base[1])];
            p.extend_from_slice(rest);
            p
        };
        let regex = |this: &mut Self, key: &'static str, pattern: &Option<String>| {
            let pattern = pattern.as_ref()?;
            match Regex::new(pattern) {
                Ok(_) => Some(pattern.clone()),
                Err(err) => {
                    this.error(
                        &at(&[Step::Key("kernels"), Step::Key(key)]),
                        format!("invalid kernel regex: {}", last_line(&err.to_string())),
                    )
                    .hint = Some("kernel filters are Rust regex syntax, e.g. \"gemm|conv\"".into());
                    None
                }
            }
        };
        let kernel_include = regex(self, "include", &k.kernels.include);
        let kernel_exclude = regex(self, "exclude", &k.kernels.exclude);
        let iterations = k.iterations.as_ref().and_then(|text| {
            IterationRanges::parse(text)
                .map_err(|message| {
                    self.error(&at(&[Step::Key("iterations")]), message).hint =
                        Some("write ranges like \"[1-10],[20]\" or \"[5-]\"".into());
                })
                .ok()
        });
        let derived: Vec<(String, String)> = k
            .derived
            .iter()
            .map(|d| (d.name.clone(), d.expression.clone()))
            .collect();
        let agents = self.agents(&at(&[Step::Key("agents")]), &k.agents);
        let context_agents = self.agents_quiet(&c.agents);
        // Counters, derived expressions and architectures are checked by the counters crate.
        let (findings, needs) =
            self.counters
                .check(k, &derived, agents.iter().chain(&context_agents));
        for finding in findings {
            let mut path = at(&finding.path);
            let span = finding.offset.and_then(|offset| {
                let node = self.doc.at(path.iter().copied())?;
                inner_span(node, offset, finding.len)
            });
            let diagnostic = Diagnostic::error(finding.message)
                .at(span.or_else(|| self.span(&path)))
                .maybe_hint(finding.hint);
            self.errors.push(diagnostic);
            path.clear();
        }
        for (r, reduction) in k.reduce.iter().enumerate() {
            for (n, name) in reduction.counters.iter().enumerate() {
                if !k.collect.contains(name) && !derived.iter().any(|(d, _)| d == name) {
                    self.error(
                        &at(&[
                            Step::Key("reduce"),
                            Step::Index(r),
                            Step::Key("counters"),
                            Step::Index(n),
                        ]),
                        format!("`{name}` is not collected by this context"),
                    )
                    .hint = did_you_mean(name, k.collect.iter().map(String::as_str))
                        .or_else(|| Some(format!("add it to `collect` of context `{}`", c.name)));
                }
            }
            self.dimensions(
                &at(&[Step::Key("reduce"), Step::Index(r), Step::Key("dimensions")]),
                &reduction.dimensions,
            );
        }
        if k.per_pass == Some(0) {
            self.error(
                &at(&[Step::Key("per_pass")]),
                "a pass holds at least one counter",
            );
        }
        let counted: Vec<String> = (k.collect.iter())
            .filter(|name| !derived.iter().any(|(d, _)| d == *name))
            .cloned()
            .collect();
        let passes = match passes::plan(&counted, &needs, k.per_pass.filter(|&n| n > 0)) {
            Ok(passes) => passes,
            Err(over) => {
                let n = k
                    .collect
                    .iter()
                    .position(|c| *c == over.counter)
                    .unwrap_or(0);
                self.error(
                    &at(&[Step::Key("collect"), Step::Index(n)]),
                    format!(
                        "`{}` needs {} counters of block {} on {}, which counts {} at once",
                        over.counter, over.count, over.block, over.arch, over.limit
                    ),
                )
                .hint = Some("no pass can count it; collect its inputs instead".into());
                Vec::new()
            }
        };
        CounterPlan {
            passes,
            collect: k.collect.clone(),
            derived,
            reduce: k
                .reduce
                .iter()
                .map(|r| ReducePlan {
                    counters: r.counters.clone(),
                    dimensions: r.dimensions.clone(),
                    op: r.op,
                })
                .collect(),
            kernel_include,
            kernel_exclude,
            iterations,
            agents,
            definitions: self.counters.source(k.definitions.as_deref()),
        }
    }

    /// Agent selectors whose errors are reported elsewhere.
    fn agents_quiet(&mut self, agents: &[AgentRef]) -> Vec<AgentSelector> {
        let errors = self.errors.len();
        let selected = self.agents(&[], agents);
        self.errors.truncate(errors);
        selected
    }

    fn dimensions(&mut self, path: &[Step<'_>], dimensions: &[String]) {
        for (n, dimension) in dimensions.iter().enumerate() {
            if COUNTER_DIMENSIONS.contains(&dimension.as_str()) {
                continue;
            }
            let mut item = path.to_vec();
            item.push(Step::Index(n));
            let prefixed = format!("DIMENSION_{}", dimension.to_ascii_uppercase());
            let hint = if COUNTER_DIMENSIONS.contains(&prefixed.as_str()) {
                Some(format!("did you mean `{prefixed}`?"))
            } else {
                did_you_mean(dimension, COUNTER_DIMENSIONS.iter().copied())
            };
            self.error(&item, format!("unknown counter dimension `{dimension}`"))
                .hint =
                hint.or_else(|| Some(format!("dimensions: {}", COUNTER_DIMENSIONS.join(", "))));
        }
    }

    fn pc_sampling(&mut self, i: usize, p: &model::PcSampling) -> PcSamplingPlan {
        let unit = p.unit.unwrap_or(p.method.unit());
        if unit != p.method.unit() {
            self.error(
                path!["context", i, "pc_sampling", "unit"],
                format!(
                    "rocprofiler-sdk samples `{}` PCs by {}, not by {}",
                    name_of(&p.method),
                    name_of(&p.method.unit()),
                    name_of(&unit)
                ),
            )
            .hint = Some(format!("set `unit = \"{}\"`", name_of(&p.method.unit())));
        }
        let interval = match p.method {
            PcSamplingMethod::HostTrap => p.interval.unwrap_or(DEFAULT_HOST_TRAP_INTERVAL),
            PcSamplingMethod::Stochastic => p.interval.unwrap_or(DEFAULT_STOCHASTIC_INTERVAL),
        };
        if p.method == PcSamplingMethod::Stochastic && !interval.is_power_of_two() {
            let below = 1u64 << (63 - interval.leading_zeros());
            self.error(
                path!["context", i, "pc_sampling", "interval"],
                format!("stochastic sampling needs a power-of-two interval, not {interval}"),
            )
            .hint = Some(format!("try {below} or {}", below << 1));
        }
        PcSamplingPlan {
            method: p.method,
            unit,
            interval,
            agents: self.agents(path!["context", i, "pc_sampling", "agents"], &p.agents),
        }
    }

    fn period(&mut self, i: usize, period: Option<&model::Period>) -> StartPlan {
        let Some(p) = period else {
            return StartPlan::default();
        };
        let duration = |this: &mut Self, key: &'static str, q: &Option<Quantity>| {
            q.as_ref().and_then(|q| {
                this.quantity(path!["context", i, "period", key], q, units::parse_duration)
            })
        };
        let start = StartPlan {
            paused: p.paused,
            delay_ns: duration(self, "delay", &p.delay).unwrap_or(0),
            duration_ns: duration(self, "duration", &p.duration),
            interval_ns: duration(self, "interval", &p.interval).unwrap_or(0),
            repeat: p.repeat.unwrap_or(0),
        };
        if start.repeat > 0 && start.duration_ns.is_none() {
            self.error(
                path!["context", i, "period", "repeat"],
                "a repeated period needs a `duration`",
            )
            .hint = Some("add `duration = \"10s\"` to say how long each period collects".into());
        }
        start
    }

    /// rocprofiler-sdk allows dispatch counter collection and PC sampling in one context
    /// each: a second one fails at `rocprofiler_configure_*` time on the device. Kernel
    /// serialization is a dispatch-counting service too (see the tool library).
    fn check_exclusive_services(&mut self, contexts: &[ContextPlan]) {
        /// The key that configures the service in a context, if it does.
        type Uses = fn(&ContextPlan) -> Option<&'static str>;
        let exclusive: [(&str, Uses); 2] = [
            ("dispatch counter collection", |c| {
                if c.counters.is_some() {
                    Some("counters")
                } else {
                    c.serialize.then_some("serialize")
                }
            }),
            ("PC sampling", |c| {
                c.pc_sampling.is_some().then_some("pc_sampling")
            }),
        ];
        for (what, uses) in exclusive {
            let users: Vec<(usize, &str)> = (0..contexts.len())
                .filter_map(|i| uses(&contexts[i]).map(|key| (i, key)))
                .collect();
            if let [(first, first_key), rest @ ..] = users.as_slice() {
                for &(i, key) in rest {
                    let first_at = self
                        .span(path!["context", *first, *first_key])
                        .map(|s| s.position());
                    let d = self.error(
                        path!["context", i, key],
                        format!(
                            "{what} is already configured in context `{}`",
                            contexts[*first].name
                        ),
                    );
                    d.hint = Some(format!(
                        "rocprofiler-sdk allows {what} in one context only; move these settings there"
                    ));
                    if let Some(at) = first_at {
                        d.notes.push(format!("first configured at {at}"));
                    }
                }
            }
        }
    }

    /// Record kinds named in `records = [...]`, or `default` when the list is empty.
    fn record_kinds(
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

    fn transforms(
        &mut self,
        transforms: &[model::Transform],
        produced: &[RecordKind],
    ) -> Vec<TransformPlan> {
        // Columns added by `derive` transforms, visible to the transforms after them.
        let mut derived: Vec<Derived> = Vec::new();
        // Kinds that pass through a plugin transform not loaded, which may add any column,
        // with the transform's name.
        let mut unseen: Vec<(RecordKind, &str)> = Vec::new();
        let mut plans = Vec::new();
        for (t, transform) in transforms.iter().enumerate() {
            let kinds = self.record_kinds(
                path!["transform", t, "records"],
                &transform.records,
                produced,
            );
            let has_column = |kind: RecordKind, column: &str, derived: &[Derived]| {
                kind.column(column).is_some()
                    || (kind == RecordKind::Api && is_argument(column))
                    || derived.iter().any(|d| d.kind == kind && d.column == column)
            };
            // The kinds of `kinds` that lack `column`, and the plugin transform (not loaded)
            // that may add it to others that lack it.
            let lacking = |column: &str| {
                let (perhaps, missing): (Vec<RecordKind>, Vec<RecordKind>) = kinds
                    .iter()
                    .copied()
                    .filter(|&k| !has_column(k, column, &derived))
                    .partition(|k| unseen.iter().any(|(u, _)| u == k));
                let plugin = unseen.iter().find(|(u, _)| perhaps.contains(u));
                (missing, plugin.map(|&(_, name)| name))
            };
            // Reports the columns some records of `kinds` lack; returns whether every column
            // is known (none is perhaps one that a plugin not loaded adds).
            let check_columns =
                |this: &mut Self,
                 key: &'static str,
                 columns: &[(String, Option<(usize, usize)>)]| {
                    let mut known = true;
                    for (column, at) in columns {
                        let (missing, plugin) = lacking(column);
                        let node = this.doc.at(path!["transform", t, key].iter().copied());
                        let span = node
                            .and_then(|n| at.and_then(|(o, l)| inner_span(n, o, l)))
                            .or_else(|| this.span(path!["transform", t, key]));
                        if let Some(plugin) = plugin {
                            known = false;
                            this.assume_column(column, plugin, span.clone());
                        }
                        if missing.is_empty() {
                            continue;
                        }
                        let missing: Vec<&str> = missing.iter().map(|k| k.name()).collect();
                        let candidates: BTreeSet<&str> = kinds
                            .iter()
                            .flat_map(|k| k.columns().map(|(n, _)| n))
                            .collect();
                        // Where the plugin perhaps adds it counts as having it.
                        let perhaps =
                            |k: RecordKind| plugin.is_some() && unseen.iter().any(|(u, _)| *u == k);
                        let having: Vec<&str> = RecordKind::ALL
                            .iter()
                            .filter(|&&k| has_column(k, column, &derived) || perhaps(k))
                            .map(|k| k.name())
                            .collect();
                        let hint = if having.is_empty() {
                            did_you_mean(column, candidates.iter().copied())
                        } else {
                            let kinds: Vec<String> =
                                having.iter().map(|h| format!("\"{h}\"")).collect();
                            Some(format!(
                                "add `records = [{}]` to apply it only where the column exists",
                                kinds.join(", ")
                            ))
                        };
                        let d = Diagnostic::error(format!(
                            "`{column}` is not a column of {} records",
                            missing.join(", ")
                        ))
                        .at(span)
                        .maybe_hint(hint);
                        this.errors.push(d);
                    }
                    known
                };
            let op = match &transform.op {
                TransformOp::Filter { predicate } => {
                    let path = path!["transform", t, "predicate"];
                    let columns = self.expression(path, predicate);
                    let errors = self.errors.len();
                    let known = check_columns(self, "predicate", &columns);
                    if errors == self.errors.len() && known {
                        let results = self.evaluate(path, predicate, &kinds, &derived);
                        if let Some(value) = results.iter().find(|v| !v.is_boolean()) {
                            self.error(
                                path,
                                format!(
                                    "a filter must be true or false, but this gives {}",
                                    describe_value(value)
                                ),
                            )
                            .hint = Some("compare the value, e.g. `duration_ns > 1000`".into());
                        }
                    }
                    TransformOpPlan::Filter {
                        predicate: predicate.clone(),
                    }
                }
                TransformOp::Derive { column, expression } => {
                    let path = path!["transform", t, "expression"];
                    let columns = self.expression(path, expression);
                    let errors = self.errors.len();
                    let known = check_columns(self, "expression", &columns);
                    let results = if errors == self.errors.len() && known {
                        self.evaluate(path, expression, &kinds, &derived)
                    } else {
                        Vec::new()
                    };
                    for &kind in &kinds {
                        if has_column(kind, column, &derived) {
                            self.error(
                                path!["transform", t, "column"],
                                format!(
                                    "`{column}` is already a column of {} records",
                                    kind.name()
                                ),
                            )
                            .hint = Some("choose a new column name".into());
                            break;
                        }
                    }
                    derived.extend(
                        kinds
                            .iter()
                            .zip(results.into_iter().map(Some).chain(std::iter::repeat(None)))
                            .map(|(&kind, sample)| Derived {
                                kind,
                                column: column.clone(),
                                sample: sample.unwrap_or(evalexpr::Value::Empty),
                            }),
                    );
                    TransformOpPlan::Derive {
                        column: column.clone(),
                        expression: expression.clone(),
                    }
                }
                TransformOp::KernelName {
                    demangle,
                    truncate,
                    rename,
                } => {
                    for (r, rule) in rename.iter().enumerate() {
                        if let Err(err) = Regex::new(&rule.pattern) {
                            self.error(
                                path!["transform", t, "rename", r, "pattern"],
                                format!("invalid regex: {}", last_line(&err.to_string())),
                            );
                        }
                    }
                    self.require_kernel_names(t, &kinds);
                    TransformOpPlan::KernelName {
                        demangle: *demangle,
                        truncate: *truncate,
                        rename: rename
                            .iter()
                            .map(|r| (r.pattern.clone(), r.replacement.clone()))
                            .collect(),
                    }
                }
                TransformOp::KernelFilter {
                    include,
                    exclude,
                    iterations,
                } => {
                    for (key, pattern) in [("include", include), ("exclude", exclude)] {
                        if let Some(Err(err)) = pattern.as_deref().map(Regex::new) {
                            self.error(
                                path!["transform", t, key],
                                format!("invalid kernel regex: {}", last_line(&err.to_string())),
                            );
                        }
                    }
                    let iterations = iterations.as_ref().and_then(|text| {
                        IterationRanges::parse(text)
                            .map_err(|message| {
                                self.error(path!["transform", t, "iterations"], message)
                                    .hint =
                                    Some("write ranges like \"[1-10],[20]\" or \"[5-]\"".into());
                            })
                            .ok()
                    });
                    self.require_kernel_names(t, &kinds);
                    TransformOpPlan::KernelFilter {
                        include: include.clone(),
                        exclude: exclude.clone(),
                        iterations,
                    }
                }
                TransformOp::TimeWindow { start, end } => {
                    let start_ns = start
                        .as_ref()
                        .and_then(|q| {
                            self.quantity(path!["transform", t, "start"], q, units::parse_duration)
                        })
                        .unwrap_or(0);
                    let end_ns = end.as_ref().and_then(|q| {
                        self.quantity(path!["transform", t, "end"], q, units::parse_duration)
                    });
                    if end_ns.is_some_and(|end| end <= start_ns) {
                        self.error(
                            path!["transform", t, "end"],
                            "the time window ends before it starts",
                        );
                    }
                    TransformOpPlan::TimeWindow { start_ns, end_ns }
                }
                TransformOp::ReduceDimensions {
                    counters,
                    dimensions,
                    op,
                } => {
                    self.dimensions(path!["transform", t, "dimensions"], dimensions);
                    if kinds.iter().any(|&k| k != RecordKind::CounterSample) {
                        self.error(
                            path!["transform", t, "kind"],
                            "dimension reductions apply to counter samples only",
                        )
                        .hint = Some("add `records = [\"counter_sample\"]`".into());
                    }
                    TransformOpPlan::ReduceDimensions {
                        counters: counters.clone(),
                        dimensions: dimensions.clone(),
                        op: *op,
                    }
                }
                TransformOp::Aggregate { group_by, metrics } => {
                    let mut columns: Vec<(String, Option<(usize, usize)>)> = Vec::new();
                    for (g, column) in group_by.iter().enumerate() {
                        let (missing, plugin) = lacking(column);
                        if let Some(plugin) = plugin {
                            let span = self.span(path!["transform", t, "group_by", g]);
                            self.assume_column(column, plugin, span);
                        }
                        if !missing.is_empty() {
                            let hint = did_you_mean(
                                column,
                                kinds.iter().flat_map(|k| k.columns().map(|(n, _)| n)),
                            );
                            self.error(path!["transform", t, "group_by", g], format!("cannot group by `{column}`: not a column of every record kind this transform takes"))
                                .hint = hint;
                        }
                    }
                    let mut plans = Vec::new();
                    for (name, spec) in metrics {
                        match parse_metric(spec) {
                            Ok((op, column)) => {
                                if let Some(column) = &column {
                                    columns.push((column.clone(), None));
                                }
                                plans.push(Metric {
                                    name: name.clone(),
                                    op,
                                    column,
                                });
                            }
                            Err(message) => {
                                self.error(
                                    path!["transform", t, "metrics", name.as_str()],
                                    message,
                                )
                                .hint = Some(format!(
                                    "write \"op(column)\" with op among {}",
                                    MetricOp::NAMES.join(", ")
                                ));
                            }
                        }
                    }
                    check_columns(self, "metrics", &columns);
                    TransformOpPlan::Aggregate {
                        group_by: group_by.clone(),
                        metrics: plans,
                    }
                }
                TransformOp::Plugin { plugin, options } => {
                    let Some((plugin, columns)) = self.plugin_transform(t, plugin, options, &kinds)
                    else {
                        continue;
                    };
                    match columns {
                        Some(columns) => {
                            for added in columns {
                                if has_column(added.kind, &added.column, &derived) {
                                    self.error(
                                        path!["transform", t, "plugin"],
                                        format!(
                                            "the plugin adds `{}`, already a column of {} records",
                                            added.column,
                                            added.kind.name()
                                        ),
                                    );
                                }
                                derived.push(added);
                            }
                        }
                        // Not loaded, it may add any column to the kinds it takes.
                        None => {
                            unseen.extend(kinds.iter().map(|&kind| (kind, transform.name.as_str())))
                        }
                    }
                    TransformOpPlan::Plugin {
                        plugin,
                        options: options.clone(),
                    }
                }
            };
            plans.push(TransformPlan {
                name: transform.name.clone(),
                kinds,
                strict: transform.strict,
                op,
            });
        }
        plans
    }

    /// Notes that `column`, at `span`, is taken to be one that the transform `plugin`, not
    /// loaded, adds.
    fn assume_column(&mut self, column: &str, plugin: &str, span: Option<Span>) {
        let note = Diagnostic::notice(format!(
            "`{column}` is taken to be a column that transform `{plugin}` adds: its plugin is not loaded to check it"
        ));
        self.warnings.push(note.at(span));
    }

    /// Kernel-name transforms need records that name a kernel.
    fn require_kernel_names(&mut self, t: usize, kinds: &[RecordKind]) {
        let without: Vec<&str> = kinds
            .iter()
            .filter(|k| k.column("kernel_name").is_none())
            .map(|k| k.name())
            .collect();
        if !without.is_empty() {
            self.error(
                path!["transform", t, "kind"],
                format!("{} records have no kernel name", without.join(", ")),
            )
            .hint = Some("add `records = [\"kernel_dispatch\", \"counter_sample\"]`".into());
        }
    }

    /// Finds the plugin a pipeline entry (at `path`) names and checks its library without
    /// running it; with [`Check::Load`], also loads it and checks that it is a `kind`,
    /// and returns it loaded.
    fn plugin(
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
    fn options_path<'p>(&self, entry: &[Step<'p>]) -> Vec<Step<'p>> {
        let mut path = entry.to_vec();
        path.push(Step::Key("options"));
        if self.span(&path).is_none() {
            path.pop();
            path.push(Step::Key("plugin"));
        }
        path
    }

    /// Finds a transform plugin and, if it is loaded, creates it with its options and runs
    /// it on a sample record of each kind it takes: a plugin that cannot work fails here,
    /// before any application starts. Returns the plugin and, if it was loaded, the columns
    /// it adds to each kind, with sample values.
    fn plugin_transform(
        &mut self,
        t: usize,
        reference: &str,
        options: &serde_json::Map<String, serde_json::Value>,
        kinds: &[RecordKind],
    ) -> Option<(PluginRef, Option<Vec<Derived>>)> {
        let at = path!["transform", t, "plugin"];
        let (found, loaded) = self.plugin(at, reference, Kind::Transform)?;
        let Some(plugin) = loaded else {
            return Some((found, None));
        };
        let mut instance = match PluginTransform::create(plugin, options) {
            Ok(instance) => instance,
            Err(e) => {
                let path = self.options_path(path!["transform", t]);
                self.error(&path, e.to_string());
                return None;
            }
        };
        let mut columns = Vec::new();
        for &kind in kinds {
            let sample = Batch::decode(kind, &vec![0; wire_size(kind)]).expect("one record");
            let mut chunk = Chunk::new(0, sample);
            if let Err(e) = instance.apply(&mut chunk, &StreamMeta::default()) {
                let d = self.error(at, e.to_string());
                d.notes.push(format!(
                    "validation runs a transform on a sample {} record",
                    kind.name()
                ));
                d.hint = Some("`records = [...]` chooses the kinds a transform takes".into());
                return None;
            }
            columns.extend(chunk.extra.into_iter().map(|extra| Derived {
                kind,
                column: extra.name.to_string(),
                sample: (extra.values.into_iter().next()).unwrap_or(evalexpr::Value::Empty),
            }));
        }
        Some((found, Some(columns)))
    }

    /// Parses an evalexpr expression; returns the variables it reads, each with its byte
    /// offset in the expression when it can be found.
    fn expression(
        &mut self,
        path: &[Step<'_>],
        text: &str,
    ) -> Vec<(String, Option<(usize, usize)>)> {
        match expression::parse(text) {
            Ok(tree) => {
                let names: BTreeSet<&str> = tree.iter_variable_identifiers().collect();
                names
                    .into_iter()
                    .map(|name| {
                        (
                            name.to_owned(),
                            find_word(text, name).map(|o| (o, name.len())),
                        )
                    })
                    .collect()
            }
            Err(err) => {
                let node = self.doc.at(path.iter().copied());
                let span = (err.span.as_ref())
                    .and_then(|at| node.and_then(|n| inner_span(n, at.start, at.len())));
                let d = Diagnostic::error(format!("invalid expression: {}", err.message))
                    .at(span.or_else(|| self.span(path)))
                    .hint(err.hint.unwrap_or(
                        "expressions use evalexpr syntax, e.g. `duration_ns > 1000 && kernel_name != \"copy\"`",
                    ));
                self.errors.push(d);
                Vec::new()
            }
        }
    }

    /// Evaluates a checked expression once per record kind on a sample record, to catch
    /// what parsing accepts but evaluation rejects (a missing operand, a type mismatch, an
    /// unknown function). Returns the sample results; arithmetic faults of the sample
    /// values themselves (a division by zero) are not the user's and are ignored.
    fn evaluate(
        &mut self,
        path: &[Step<'_>],
        text: &str,
        kinds: &[RecordKind],
        derived: &[Derived],
    ) -> Vec<evalexpr::Value> {
        use evalexpr::{ContextWithMutableVariables, EvalexprError, HashMapContext, Value};
        let Ok(tree) = expression::parse(text) else {
            return Vec::new();
        };
        let mut results = Vec::new();
        for &kind in kinds {
            let mut context = HashMapContext::new();
            for (name, column_type) in kind.columns() {
                let sample = match column_type {
                    ColumnType::Int => Value::Int(1),
                    ColumnType::Float => Value::Float(1.0),
                    ColumnType::String => Value::String(String::new()),
                };
                context
                    .set_value(name.into(), sample)
                    .expect("a fresh context is mutable");
            }
            for d in derived.iter().filter(|d| d.kind == kind) {
                context
                    .set_value(d.column.clone(), d.sample.clone())
                    .expect("a fresh context is mutable");
            }
            if kind == RecordKind::Api {
                for name in tree.iter_variable_identifiers().filter(|n| is_argument(n)) {
                    context
                        .set_value(name.into(), Value::Int(1))
                        .expect("a fresh context is mutable");
                }
            }
            match tree.eval_with_context(&context) {
                Ok(value) => results.push(value),
                Err(
                    EvalexprError::DivisionError { .. }
                    | EvalexprError::ModulationError { .. }
                    | EvalexprError::AdditionError { .. }
                    | EvalexprError::SubtractionError { .. }
                    | EvalexprError::MultiplicationError { .. }
                    | EvalexprError::NegationError { .. },
                ) => results.push(Value::Empty),
                Err(err) => {
                    self.error(path, format!("invalid expression: {err}")).hint = Some(format!(
                        "checked against the columns of {} records",
                        kind.name()
                    ));
                    return Vec::new();
                }
            }
        }
        results
    }

    fn sinks(
        &mut self,
        sinks: &[model::Sink],
        produced: &[RecordKind],
        params: &IndexMap<String, serde_json::Value>,
    ) -> Vec<SinkPlan> {
        let mut plans: Vec<SinkPlan> = Vec::new();
        for (s, sink) in sinks.iter().enumerate() {
            self.placeholders(path!["sink", s, "path"], &sink.path, params);
            if let Some(other) = plans.iter().position(|p| p.path == sink.path) {
                let first = self
                    .span(path!["sink", other, "path"])
                    .map(|s| s.position());
                let d = self.error(
                    path!["sink", s, "path"],
                    format!(
                        "sinks `{}` and `{}` write the same path",
                        plans[other].name, sink.name
                    ),
                );
                d.hint =
                    Some("give each sink its own path, e.g. with a different extension".into());
                d.notes
                    .extend(first.map(|p| format!("`{}` writes it at {p}", plans[other].name)));
            }
            let kinds = self.record_kinds(path!["sink", s, "records"], &sink.records, produced);
            for (k, kind) in kinds.iter().enumerate() {
                if !sink.records.is_empty() && !produced.contains(kind) {
                    self.warn(
                        path!["sink", s, "records", k],
                        format!(
                            "no context collects `{}` records for sink `{}`",
                            kind.name(),
                            sink.name
                        ),
                    );
                }
            }
            let writer = match sink.kind {
                SinkType::Builtin(kind) => Writer::Builtin(self.sink_options(s, kind, sink)),
                SinkType::Plugin(_) => {
                    let reference = sink
                        .plugin
                        .as_deref()
                        .expect("the schema requires `plugin`");
                    let found = self.plugin_sink(s, reference, &sink.options);
                    // After an error (reported) the plan is not used; it keeps its place so
                    // that sinks line up with their entries.
                    Writer::Plugin {
                        plugin: found.unwrap_or_else(|| PluginRef {
                            name: reference.to_owned(),
                            library: PathBuf::from(reference),
                        }),
                        options: sink.options.clone(),
                    }
                }
            };
            plans.push(SinkPlan {
                name: sink.name.clone(),
                writer,
                path: sink.path.clone(),
                kinds,
            });
        }
        if plans.is_empty() && !produced.is_empty() {
            self.warn(
                &[],
                "the pipeline collects records but has no [[sink]]; only the raw spool is kept",
            );
        }
        plans
    }

    /// Reads a format's options into their typed form, once: a bad one is reported where
    /// it is written. After an error (reported) the plan is not used, so the defaults stand
    /// in.
    fn sink_options(&mut self, s: usize, kind: SinkKind, sink: &model::Sink) -> Format {
        Format::parse(kind, &sink.options).unwrap_or_else(|e| {
            let mut path = path!["sink", s, "options"].to_vec();
            path.extend(e.key.as_deref().map(Step::Key));
            self.error(&path, e.message);
            Format::parse(kind, &Default::default()).expect("the defaults are options")
        })
    }

    /// Finds a sink plugin and, if it is loaded, creates it with its options (it writes
    /// nothing yet).
    fn plugin_sink(
        &mut self,
        s: usize,
        reference: &str,
        options: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<PluginRef> {
        let (found, loaded) = self.plugin(path!["sink", s, "plugin"], reference, Kind::Sink)?;
        if let Some(plugin) = loaded
            && let Err(e) = PluginSink::check(plugin, options)
        {
            let path = self.options_path(path!["sink", s]);
            self.error(&path, e.to_string());
            return None;
        }
        Some(found)
    }

    /// `{sink:NAME}` and `{post:NAME}` in a command must name a sink, or a post-step that
    /// runs before it.
    fn output_references(
        &mut self,
        path: &[Step<'_>],
        text: &str,
        sinks: &[SinkPlan],
        earlier_posts: &[&str],
    ) {
        for (prefix, names) in [
            (
                "sink",
                sinks.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ),
            ("post", earlier_posts.to_vec()),
        ] {
            let opening = format!("{{{prefix}:");
            for (offset, _) in text.match_indices(&opening) {
                let rest = &text[offset + opening.len()..];
                let Some(end) = rest.find('}') else { continue };
                let name = &rest[..end];
                if names.contains(&name) {
                    continue;
                }
                let span = self
                    .doc
                    .at(path.iter().copied())
                    .and_then(|n| inner_span(n, offset, opening.len() + end + 1));
                let what = if prefix == "sink" {
                    "sink"
                } else {
                    "earlier post-step"
                };
                let hint = did_you_mean(name, names.iter().copied())
                    .unwrap_or_else(|| format!("{what}s: {}", names.join(", ")));
                let d = Diagnostic::error(format!("no {what} named `{name}`"))
                    .at(span.or_else(|| self.span(path)))
                    .hint(hint);
                self.errors.push(d);
            }
        }
    }

    /// Placeholders left in a path after parameters must be the run-time ones.
    fn placeholders(
        &mut self,
        path: &[Step<'_>],
        text: &str,
        params: &IndexMap<String, serde_json::Value>,
    ) {
        self.placeholders_with(path, text, params, &[]);
    }

    /// Like [`placeholders`](Self::placeholders), with `extra` names also allowed.
    fn placeholders_with(
        &mut self,
        path: &[Step<'_>],
        text: &str,
        params: &IndexMap<String, serde_json::Value>,
        extra: &[&str],
    ) {
        for (offset, name) in placeholders(text) {
            if RUNTIME_PLACEHOLDERS.contains(&name)
                || extra.contains(&name)
                || params.contains_key(name)
            {
                continue;
            }
            let node = self.doc.at(path.iter().copied());
            let span = node.and_then(|n| inner_span(n, offset, name.len() + 2));
            let candidates = RUNTIME_PLACEHOLDERS
                .iter()
                .copied()
                .chain(params.keys().map(String::as_str));
            let hint = did_you_mean(name, candidates).unwrap_or_else(|| {
                format!(
                    "placeholders: {}, or a parameter from [params]",
                    RUNTIME_PLACEHOLDERS
                        .iter()
                        .map(|p| format!("{{{p}}}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            });
            let d = Diagnostic::error(format!("unknown placeholder `{{{name}}}`"))
                .at(span.or_else(|| self.span(path)))
                .hint(hint);
            self.errors.push(d);
        }
    }

    fn posts(
        &mut self,
        posts: &[model::Post],
        sinks: &[SinkPlan],
        params: &IndexMap<String, serde_json::Value>,
    ) -> Vec<PostPlan> {
        for (p, post) in posts.iter().enumerate() {
            match &post.step {
                PostStep::Summary {
                    path: Some(path), ..
                }
                | PostStep::Report { path, .. } => {
                    self.placeholders(path!["post", p, "path"], path, params);
                }
                PostStep::Summary { path: None, .. } => {}
                PostStep::Sql {
                    database,
                    path,
                    timeout,
                    ..
                } => {
                    self.placeholders(path!["post", p, "path"], path, params);
                    let timeout_path = path!["post", p, "timeout"];
                    let timeout = timeout.as_ref();
                    if timeout.and_then(|t| self.quantity(timeout_path, t, units::parse_duration))
                        == Some(0)
                    {
                        self.error(
                            timeout_path,
                            "a timeout of 0 stops every query before it starts",
                        )
                        .hint = Some("give the query time to run, e.g. `timeout = \"30s\"`".into());
                    }
                    if database.is_none() && !sinks.iter().any(|s| s.writes(SinkKind::Rocpd)) {
                        self.error(path!["post", p, "kind"], format!("sql step `{}` has no database to query", post.name))
                            .hint = Some("add a [[sink]] with kind = \"rocpd\", or set `database = \"path/to/run.db\"`".into());
                    }
                }
                PostStep::Command { argv, .. } => {
                    let earlier: Vec<&str> = posts[..p].iter().map(|e| e.name.as_str()).collect();
                    for (a, arg) in argv.iter().enumerate() {
                        self.placeholders_with(
                            path!["post", p, "argv", a],
                            arg,
                            params,
                            &["spool"],
                        );
                        self.output_references(path!["post", p, "argv", a], arg, sinks, &earlier);
                    }
                    if argv
                        .first()
                        .is_some_and(|program| program.contains(' ') && !program.contains('/'))
                    {
                        self.error(
                            path!["post", p, "argv", 0],
                            "argv[0] contains a space: commands are not run through a shell",
                        )
                        .hint = Some(
                            "split the command into a list: argv = [\"python3\", \"script.py\"]"
                                .into(),
                        );
                    }
                }
            }
        }
        posts
            .iter()
            .map(|p| PostPlan {
                name: p.name.clone(),
                required: p.required,
                step: p.step.clone(),
            })
            .collect()
    }
}

/// A column added by a `derive` transform or a plugin, with the value it takes on a sample
/// record (so later expressions are checked with its type).
struct Derived {
    kind: RecordKind,
    column: String,
    sample: evalexpr::Value,
}

fn describe_value(value: &evalexpr::Value) -> &'static str {
    match value {
        evalexpr::Value::String(_) => "a string",
        evalexpr::Value::Float(_) | evalexpr::Value::Int(_) => "a number",
        evalexpr::Value::Boolean(_) => "a boolean",
        evalexpr::Value::Tuple(_) => "a tuple",
        evalexpr::Value::Empty => "nothing",
    }
}

/// The stages a counter context's settings compile into, ahead of the pipeline's own
/// transforms: its dispatches made whole, with the derived counters added (computed on the
/// collected values, as rocprofiler-sdk computes derived counters), then its reductions,
/// which apply to collected and derived counters alike. Whole dispatches are needed by any
/// reduction, the pipeline's own too.
fn counter_stages(
    contexts: &[ContextPlan],
    reduces_dimensions: bool,
) -> impl Iterator<Item = TransformPlan> + '_ {
    let counting = contexts
        .iter()
        .filter_map(|c| Some((c.name.as_str(), c.counters.as_ref()?)));
    counting
        .filter(move |(_, k)| reduces_dimensions || !k.derived.is_empty() || !k.reduce.is_empty())
        .flat_map(|(context, k)| {
            let stage = |name: String, op| TransformPlan {
                name,
                kinds: vec![RecordKind::CounterSample],
                strict: false,
                op,
            };
            let collected = k.counted().cloned().collect();
            let dispatches = stage(
                format!("{context}/dispatches"),
                TransformOpPlan::DeriveCounters {
                    collected,
                    derived: k.derived.clone(),
                },
            );
            let reductions = k.reduce.iter().enumerate().map(move |(r, reduce)| {
                stage(
                    format!("{context}/reduce[{r}]"),
                    TransformOpPlan::ReduceDimensions {
                        counters: reduce.counters.clone(),
                        dimensions: reduce.dimensions.clone(),
                        op: reduce.op,
                    },
                )
            });
            std::iter::once(dispatches).chain(reductions)
        })
}

/// Which transforms each sink's records pass through.
fn routes(sinks: &[SinkPlan], transforms: &[TransformPlan]) -> Vec<Route> {
    sinks
        .iter()
        .map(|sink| Route {
            sink: sink.name.clone(),
            kinds: sink.kinds.clone(),
            transforms: transforms
                .iter()
                .enumerate()
                .filter(|(_, t)| t.kinds.iter().any(|k| sink.kinds.contains(k)))
                .map(|(i, _)| i)
                .collect(),
        })
        .collect()
}

/// "p95(duration_ns)" → (P95, Some("duration_ns")); "count()" → (Count, None).
fn parse_metric(spec: &str) -> Result<(MetricOp, Option<String>), String> {
    let spec = spec.trim();
    let (op, rest) = spec
        .split_once('(')
        .ok_or_else(|| format!("`{spec}` is not a metric"))?;
    let column = rest
        .strip_suffix(')')
        .ok_or_else(|| format!("`{spec}` is missing `)`"))?
        .trim();
    let op = MetricOp::from_name(op.trim())
        .ok_or_else(|| format!("unknown aggregate `{}` in `{spec}`", op.trim()))?;
    match (op, column.is_empty()) {
        (MetricOp::Count, _) => Ok((op, (!column.is_empty()).then(|| column.to_owned()))),
        (_, true) => Err(format!("`{spec}` needs a column")),
        (_, false) => Ok((op, Some(column.to_owned()))),
    }
}

/// The span of `len` bytes at `offset` inside a string value, if the TOML source holds the
/// string verbatim (a basic or literal string without escapes before the offset).
fn inner_span(node: &Node, offset: usize, len: usize) -> Option<Span> {
    let value = node.as_str()?;
    let source = node.span.snippet();
    let quote = source.len().checked_sub(value.len())? / 2;
    let body = source.get(quote..quote + value.len())?;
    (body == value).then(|| {
        let start = node.span.range.start + quote + offset;
        Span::new(&node.span.file, start..start + len)
    })
}

/// Byte offset of `word` as a whole identifier in `text`.
/// Whether an expression's variable names an API call's argument (`args.sizeBytes`).
fn is_argument(name: &str) -> bool {
    name.strip_prefix(crate::transform::ARGS)
        .is_some_and(|arg| !arg.is_empty())
}

fn find_word(text: &str, word: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    text.match_indices(word).map(|(i, _)| i).find(|&i| {
        let before = text[..i].chars().next_back().is_none_or(|c| !is_ident(c));
        let after = text[i + word.len()..]
            .chars()
            .next()
            .is_none_or(|c| !is_ident(c));
        before && after
    })
}

/// A case-sensitive glob with `*` and `?`, for operation names. Greedy with one backtrack
/// point (the last `*`), so it runs in linear time on typical patterns.
pub(super) fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(&c) if c == b'?' || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                // Let the last `*` swallow one more byte and retry from there.
                Some((sp, sn)) => {
                    star = Some((sp, sn + 1));
                    pi = sp + 1;
                    ni = sn + 1;
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// The last line of a multi-line library error ("regex parse error: … error: unclosed group").
fn last_line(text: &str) -> String {
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

/// 64-bit FNV-1a: a stable content hash for provenance (not for security).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl<'a> From<&'a str> for Step<'a> {
    fn from(key: &'a str) -> Self {
        Step::Key(key)
    }
}

impl From<usize> for Step<'_> {
    fn from(index: usize) -> Self {
        Step::Index(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("hipMemcpy*", "hipMemcpyAsync"));
        assert!(glob_match("hipMemcpy*", "hipMemcpy"));
        assert!(!glob_match("hipMemcpy*", "hipMalloc"));
        assert!(glob_match("hip?alloc", "hipMalloc"));
        assert!(glob_match("*Async", "hipMemsetAsync"));
        assert!(glob_match("hip*Async*", "hipMemcpyAsync"));
        assert!(glob_match("*a*b", "xaxxab"));
        assert!(!glob_match("*a*b", "xaxxa"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("?", ""));
    }

    #[test]
    fn metrics() {
        assert_eq!(
            parse_metric("p95(duration_ns)"),
            Ok((MetricOp::P95, Some("duration_ns".into())))
        );
        assert_eq!(parse_metric("count()"), Ok((MetricOp::Count, None)));
        assert!(
            parse_metric("median(x)")
                .unwrap_err()
                .contains("unknown aggregate `median`")
        );
        assert!(
            parse_metric("sum()")
                .unwrap_err()
                .contains("needs a column")
        );
    }

    #[test]
    fn words() {
        assert_eq!(find_word("bytes / duration_ns > 1", "duration_ns"), Some(8));
        assert_eq!(find_word("xbytes + bytes", "bytes"), Some(9));
    }
}
