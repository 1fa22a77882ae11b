//! The pipeline's `[[context]]` entries: each becomes the rocprofiler-sdk services of one
//! context, with its buffer, counters, PC sampling and collection period, checked against
//! what the SDK accepts.

use std::collections::{BTreeSet, HashSet};

use regex::Regex;

use crate::diag::{Diagnostic, did_you_mean};
use crate::plan::transform::{counters, reduce};
use crate::plan::{
    AgentSelector, BufferPlan, ContextPlan, CounterPlan, DEFAULT_FLUSH_INTERVAL_NS,
    DeviceCountingPlan, PcSamplingPlan, ReducePlan, SampleAt, SpmPlan, StartPlan, TracingPlan,
    TransformOpPlan, TransformPlan,
};
use crate::record::RecordKind;
use crate::sdk::{AgentType, COUNTER_DIMENSIONS, Domain, PcSamplingMethod};
use crate::units::IterationRanges;

use super::super::glob::glob_match;
use super::super::model::{self, AgentRef, Tracing};
use super::super::passes;
use super::compiler::{Compiler, inner_span, last_line, name_of};
use crate::diag::Step;
use crate::units;
use crate::units::Quantity;

/// The kernels and iterations a per-dispatch service selects, as the Plan holds them.
pub(super) struct KernelSelection {
    pub include: Option<String>,
    pub exclude: Option<String>,
    pub iterations: Option<IterationRanges>,
}

/// Default buffer: large enough that flushes are rare, small enough for many contexts.
const DEFAULT_BUFFER_BYTES: u64 = 32 << 20;
const DEFAULT_WATERMARK: f64 = 0.875;
/// SPM's interval when the pipeline does not say: 8192 shader clocks, a few microseconds
/// at an Instinct GPU's clock, so a kernel of a millisecond gives hundreds of samples.
const DEFAULT_SPM_INTERVAL_CYCLES: u64 = 8192;
/// How often device counters are read when the pipeline does not say.
const DEFAULT_SAMPLE_INTERVAL_NS: u64 = 10_000_000;
/// rocprofv3's default host-trap interval (microseconds).
const DEFAULT_HOST_TRAP_INTERVAL: u64 = 1000;
/// A stochastic interval rocprofiler-sdk accepts on every supported agent (a power of two).
const DEFAULT_STOCHASTIC_INTERVAL: u64 = 1 << 20;

impl Compiler<'_> {
    pub(super) fn context(&mut self, i: usize, c: &model::Context) -> ContextPlan {
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
        let device_counting = (c.device_counters.as_ref()).map(|d| self.device_counting(i, c, d));
        let thread_trace = c.thread_trace.as_ref().map(|t| self.thread_trace(i, t));
        let spm = c.spm.as_ref().map(|s| self.spm(i, c, s));
        if tracing.is_empty()
            && counters.is_none()
            && pc_sampling.is_none()
            && device_counting.is_none()
            && thread_trace.is_none()
            && spm.is_none()
        {
            self.warn(
                path!["context", i, "name"],
                format!("context `{}` collects nothing", c.name),
            )
            .hint = Some(
                "add `tracing = [...]`, `[context.counters]`, `[context.device_counters]`, `[context.pc_sampling]`, `[context.thread_trace]` or `[context.spm]`".into(),
            );
        }
        let code_objects = tracing
            .iter()
            .any(|t| matches!(t.domain, Domain::KernelDispatch | Domain::ScratchMemory))
            || counters.is_some()
            || pc_sampling.is_some()
            || thread_trace.is_some()
            || spm.is_some();
        // rocprofiler-sdk refuses device counting in a context that counts dispatches
        // (AGENT_DISPATCH_CONFLICT); serializing is counting dispatches.
        let counts = [("counters", counters.is_some()), ("serialize", c.serialize)];
        for (key, _) in counts
            .into_iter()
            .filter(|&(_, on)| on && device_counting.is_some())
        {
            self.error(
                path!["context", i, key],
                format!("context `{}` samples device counters, and rocprofiler-sdk does not count dispatches in the same context", c.name),
            )
            .hint = Some("move `[context.device_counters]` to a context of its own".into());
        }
        // rocprofiler-sdk streams SPM in a context that counts nothing else and samples no
        // PC (CONTEXT_CONFLICT).
        let beside = [
            ("counters", counters.is_some()),
            ("serialize", c.serialize),
            ("device_counters", device_counting.is_some()),
            ("pc_sampling", pc_sampling.is_some()),
        ];
        for (key, _) in beside.into_iter().filter(|&(_, on)| on && spm.is_some()) {
            self.error(
                path!["context", i, key],
                format!("context `{}` streams SPM, and rocprofiler-sdk does not stream it beside `{key}` in one context", c.name),
            )
            .hint = Some("move `[context.spm]` to a context of its own".into());
        }
        ContextPlan {
            name: c.name.clone(),
            buffer: self.buffer(i, &c.buffer),
            agents: self.agents(path!["context", i, "agents"], &c.agents),
            tracing,
            code_objects,
            counters,
            pc_sampling,
            device_counting,
            thread_trace,
            spm,
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
                also_for: Vec::new(),
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
            also_for: Vec::new(),
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
                        self.error(
                            path!["context", i, "buffer", "watermark"],
                            message.to_string(),
                        );
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

    pub(super) fn agents(&mut self, path: &[Step<'_>], agents: &[AgentRef]) -> Vec<AgentSelector> {
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
        self.counter_table(i, "counters", c, k)
    }

    /// `[context.device_counters]`: its counters are checked and planned as those of
    /// `[context.counters]`; the service reads one configuration per agent, so they must
    /// fit one pass.
    fn device_counting(
        &mut self,
        i: usize,
        c: &model::Context,
        d: &model::DeviceCounters,
    ) -> DeviceCountingPlan {
        let counters = self.counter_table(i, "device_counters", c, &d.counter_table());
        self.one_pass(
            i,
            "device_counters",
            &d.collect,
            &counters,
            "a device is sampled in one",
        );
        let path = path!["context", i, "device_counters", "interval"];
        let interval_ns = match &d.interval {
            None => DEFAULT_SAMPLE_INTERVAL_NS,
            Some(q) => match self.quantity(path, q, units::parse_duration) {
                Some(0) => {
                    self.error(path, "device counters cannot be read every 0 s")
                        .hint = Some("try \"10ms\"".into());
                    DEFAULT_SAMPLE_INTERVAL_NS
                }
                ns => ns.unwrap_or(DEFAULT_SAMPLE_INTERVAL_NS),
            },
        };
        DeviceCountingPlan {
            counters,
            at: d.at.unwrap_or(SampleAt::Interval),
            interval_ns,
            metrics: d.metrics.clone(),
        }
    }

    /// `[context.spm]`: its counters are checked and planned as those of
    /// `[context.counters]`; SPM streams one configuration per agent, so they must fit
    /// one pass.
    fn spm(&mut self, i: usize, c: &model::Context, s: &model::Spm) -> SpmPlan {
        let counters = self.counter_table(i, "spm", c, &s.counter_table());
        self.one_pass(i, "spm", &s.collect, &counters, "SPM streams one");
        SpmPlan {
            counters: counters.collect,
            // The schema holds it to 1 or more.
            interval_cycles: s.interval.unwrap_or(DEFAULT_SPM_INTERVAL_CYCLES),
            kernel_include: counters.kernel_include,
            kernel_exclude: counters.kernel_exclude,
            iterations: counters.iterations,
            agents: counters.agents,
        }
    }

    /// Says where counters that need more than one pass start the second, for a service
    /// that counts in one (`what` says so).
    fn one_pass(
        &mut self,
        i: usize,
        key: &'static str,
        listed: &[String],
        counters: &CounterPlan,
        what: &str,
    ) {
        if counters.passes.len() <= 1 {
            return;
        }
        let first_over = counters.passes[1][0].clone();
        let n = listed.iter().position(|c| *c == first_over).unwrap_or(0);
        self.error(
            path!["context", i, key, "collect", n],
            format!(
                "these counters need {} passes; {what}",
                counters.passes.len()
            ),
        )
        .hint = Some(format!(
            "the hardware counts `{first_over}` and the counters before it at once: collect the others in a second context or run"
        ));
    }

    fn counter_table(
        &mut self,
        i: usize,
        key: &'static str,
        c: &model::Context,
        k: &model::Counters,
    ) -> CounterPlan {
        let base = ["context", key];
        let at = |rest: &[Step<'static>]| -> Vec<Step<'static>> {
            let mut p = vec![Step::from(base[0]), Step::Index(i), Step::from(base[1])];
            p.extend_from_slice(rest);
            p
        };
        let KernelSelection {
            include: kernel_include,
            exclude: kernel_exclude,
            iterations,
        } = self.kernel_selection(&at(&[]), &k.kernels, k.iterations.as_deref());
        let derived: Vec<(String, String)> = k
            .derived
            .iter()
            .map(|d| (d.name.clone(), d.expression.clone()))
            .collect();
        let agents = self.agents(&at(&[Step::Key("agents")]), &k.agents);
        // The tool counts on the table's agents, else on the context's.
        let counted_on = match agents.is_empty() {
            true => self.agents_quiet(&c.agents),
            false => agents.clone(),
        };
        // Counters, derived expressions and architectures are checked by the counters crate.
        let (findings, needs) = self.counters.check(k, &derived, &counted_on);
        for finding in findings {
            let mut path = at(&finding.path);
            let span = finding.offset.and_then(|offset| {
                let node = self.doc.at(path.iter().copied())?;
                inner_span(node, offset, finding.len)
            });
            let diagnostic = match finding.warning {
                true => Diagnostic::warning(finding.message),
                false => Diagnostic::error(finding.message),
            };
            let diagnostic = diagnostic
                .at(span.or_else(|| self.span(&path)))
                .maybe_hint(finding.hint);
            match finding.warning {
                true => self.warnings.push(diagnostic),
                false => self.errors.push(diagnostic),
            }
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
        // A name listed again is collected once (the checks above warned of it).
        let mut listed = HashSet::new();
        let collect: Vec<String> = (k.collect.iter())
            .filter(|name| listed.insert(name.as_str()))
            .cloned()
            .collect();
        let counted: Vec<String> = (collect.iter())
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
            replay: k.replay.unwrap_or_default(),
            collect,
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

    /// The kernels and iterations a per-dispatch service (counters, thread trace) selects,
    /// checked: its table is at `base`.
    pub(super) fn kernel_selection(
        &mut self,
        base: &[Step<'_>],
        kernels: &model::KernelFilter,
        iterations: Option<&str>,
    ) -> KernelSelection {
        let at = |rest: &[Step<'static>]| -> Vec<Step<'_>> {
            let mut p = base.to_vec();
            p.extend_from_slice(rest);
            p
        };
        // An empty pattern (a template's parameter left empty) selects every kernel.
        let regex = |this: &mut Self, key: &'static str, pattern: &Option<String>| {
            let pattern = pattern.as_ref().filter(|p| !p.is_empty())?;
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
        let include = regex(self, "include", &kernels.include);
        let exclude = regex(self, "exclude", &kernels.exclude);
        let iterations = iterations.and_then(|text| {
            IterationRanges::parse(text)
                .map_err(|message| {
                    self.error(&at(&[Step::Key("iterations")]), message.to_string())
                        .hint = Some("write ranges like \"[1-10],[20]\" or \"[5-]\"".into());
                })
                .ok()
        });
        KernelSelection {
            include,
            exclude,
            iterations,
        }
    }

    /// Agent selectors whose errors are reported elsewhere.
    fn agents_quiet(&mut self, agents: &[AgentRef]) -> Vec<AgentSelector> {
        let errors = self.errors.len();
        let selected = self.agents(&[], agents);
        self.errors.truncate(errors);
        selected
    }

    pub(super) fn dimensions(&mut self, path: &[Step<'_>], dimensions: &[String]) {
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
    /// serialization is a dispatch-counting service too (see the tool library), so a
    /// context that serializes and another that collects counters conflict as well.
    pub(super) fn check_exclusive_services(&mut self, contexts: &[ContextPlan]) {
        /// The key that configures the service in a context, if it does, and what the
        /// context does with it.
        type Uses = fn(&ContextPlan) -> Option<(&'static str, &'static str)>;
        let counts: Uses = |c| {
            if c.counters.is_some() {
                Some(("counters", "collects counters"))
            } else {
                c.serialize
                    .then_some(("serialize", "serializes kernel dispatches"))
            }
        };
        let samples: Uses = |c| {
            c.pc_sampling
                .is_some()
                .then_some(("pc_sampling", "samples PCs"))
        };
        let exclusive = [
            ("dispatch counter collection", counts),
            ("PC sampling", samples),
        ];
        for (service, uses) in exclusive {
            let users: Vec<(usize, &str, &str)> = (0..contexts.len())
                .filter_map(|i| uses(&contexts[i]).map(|(key, what)| (i, key, what)))
                .collect();
            if let [(first, first_key, first_what), rest @ ..] = users.as_slice() {
                for &(i, key, what) in rest {
                    let first_at = self
                        .span(path!["context", *first, *first_key])
                        .map(|s| s.position());
                    let (name, first_name) = (&contexts[i].name, &contexts[*first].name);
                    let d = self.error(
                        path!["context", i, key],
                        format!(
                            "context `{name}` {what}, and context `{first_name}` {first_what}: both need rocprofiler-sdk's {service} service, which one context only may configure"
                        ),
                    );
                    let serializes = [key, *first_key].contains(&"serialize");
                    d.hint = Some(if serializes {
                        "a context that collects counters serializes dispatches already: drop `serialize = true`, or collect the counters in the context that serializes".into()
                    } else {
                        format!("move these settings to context `{first_name}`")
                    });
                    if let Some(at) = first_at {
                        d.notes
                            .push(format!("context `{first_name}` {first_what} at {at}"));
                    }
                }
            }
        }
        // rocprofiler-sdk refuses PC sampling in a process whose dispatches it counts,
        // whichever context asks for which (CONTEXT_CONFLICT).
        let counter = contexts
            .iter()
            .enumerate()
            .find_map(|(i, c)| Some((i, counts(c)?)));
        let sampler = contexts.iter().position(|c| samples(c).is_some());
        if let (Some((counter, (key, what))), Some(sampler), false) =
            (counter, sampler, self.records_only)
        {
            let counts_at = self
                .span(path!["context", counter, key])
                .map(|s| s.position());
            let path = path!["context", sampler, "pc_sampling"];
            let (sampler, counter) = (&contexts[sampler].name, &contexts[counter].name);
            let d = self.error(
                path,
                format!(
                    "context `{sampler}` samples PCs, and context `{counter}` {what}: rocprofiler-sdk refuses PC sampling in a process whose dispatches it counts"
                ),
            );
            d.hint = Some("sample PCs and count dispatches in separate runs".into());
            if let Some(at) = counts_at {
                d.notes.push(format!("context `{counter}` {what} at {at}"));
            }
        }
    }
}

impl Compiler<'_> {
    /// Traces each service in one context only. rocprofiler-sdk gives a record to every
    /// context that traces its kind, so two contexts tracing kernel dispatches (a system
    /// trace extended with counters) would put each dispatch in every output twice. The
    /// service stays in the first context whose collection period covers every other's,
    /// with the operations all of them asked for, and arguments where any asked for them;
    /// a context left with nothing to do is dropped. The others are named on the service,
    /// for `rocflow explain`.
    pub(super) fn trace_each_once(&mut self, contexts: &mut Vec<ContextPlan>) {
        // Per service, in the pipeline's order: its contexts and where it is in each.
        let mut users: Vec<(Domain, Vec<(usize, usize)>)> = Vec::new();
        for (c, context) in contexts.iter().enumerate() {
            for (t, tracing) in context.tracing.iter().enumerate() {
                let domain = tracing.domain.plain();
                match users.iter_mut().find(|(d, _)| *d == domain) {
                    Some((_, at)) => at.push((c, t)),
                    None => users.push((domain, vec![(c, t)])),
                }
            }
        }
        let mut absorbed = BTreeSet::new();
        for (domain, users) in users.into_iter().filter(|(_, u)| u.len() > 1) {
            let covers_all = |&(c, _): &(usize, usize)| {
                (users.iter()).all(|&(o, _)| contexts[c].start.covers(&contexts[o].start))
            };
            let Some(&(owner, kept)) = users.iter().find(|u| covers_all(u)) else {
                let (first, second) = (users[0].0, users[1].0);
                self.error(
                    path!["context", second, "tracing"],
                    format!(
                        "contexts `{}` and `{}` both trace `{}` in different collection periods",
                        contexts[first].name,
                        contexts[second].name,
                        domain.name()
                    ),
                )
                .hint = Some(format!(
                    "rocprofiler-sdk would record each of its operations once per context: trace `{}` in one of them, or give both the same period",
                    domain.name()
                ));
                continue;
            };
            let mut operations = Some(BTreeSet::new());
            let mut with_args = false;
            let mut also_for = Vec::new();
            for &(c, t) in &users {
                let tracing = &contexts[c].tracing[t];
                with_args |= tracing.domain.has_args();
                operations = match (operations, &tracing.operations) {
                    (Some(mut all), Some(ids)) => {
                        all.extend(ids);
                        Some(all)
                    }
                    _ => None,
                };
                if c != owner {
                    also_for.push(contexts[c].name.clone());
                    absorbed.insert((c, t));
                }
            }
            let owner = &mut contexts[owner];
            owner.code_objects |= matches!(domain, Domain::KernelDispatch | Domain::ScratchMemory);
            owner.tracing[kept] = TracingPlan {
                domain: match with_args {
                    true => domain.with_args().unwrap_or(domain),
                    false => domain,
                },
                operations: operations.map(|ids| ids.into_iter().collect()),
                also_for,
            };
        }
        if absorbed.is_empty() {
            return;
        }
        for (c, context) in contexts.iter_mut().enumerate() {
            let mut t = 0;
            context.tracing.retain(|_| {
                t += 1;
                !absorbed.contains(&(c, t - 1))
            });
        }
        // A thread trace travels in frames of its own, not as records.
        contexts.retain(|c| c.record_kinds().next().is_some() || c.thread_trace.is_some());
    }
}

/// The stages a counter context's settings compile into, ahead of the pipeline's own
/// transforms: its dispatches made whole, with the derived counters added (computed on the
/// collected values, as rocprofiler-sdk computes derived counters), then its reductions,
/// which apply to collected and derived counters alike. Whole dispatches are needed by any
/// reduction, the pipeline's own too (which takes dispatch samples only). A device
/// counting context's reads are made whole, derived and reduced the same way.
pub(super) fn counter_stages(
    contexts: &[ContextPlan],
    reduces_dimensions: bool,
) -> impl Iterator<Item = TransformPlan> + '_ {
    let dispatches = (contexts.iter()).filter_map(move |c| {
        let k = c.counters.as_ref()?;
        let wanted = reduces_dimensions || !k.derived.is_empty() || !k.reduce.is_empty();
        wanted.then_some((c.name.as_str(), k, RecordKind::CounterSample, "dispatches"))
    });
    let reads = (contexts.iter()).filter_map(|c| {
        let k = &c.device_counting.as_ref()?.counters;
        let wanted = !k.derived.is_empty() || !k.reduce.is_empty();
        wanted.then_some((c.name.as_str(), k, RecordKind::DeviceCounterSample, "reads"))
    });
    dispatches
        .chain(reads)
        .flat_map(|(context, k, kind, whole)| {
            let stage = move |name: String, op| TransformPlan {
                name,
                kinds: vec![kind],
                strict: false,
                op,
            };
            let collected = k.counted().cloned().collect();
            let gathered = stage(
                format!("{context}/{whole}"),
                TransformOpPlan::DeriveCounters(counters::Plan {
                    collected,
                    derived: k.derived.clone(),
                }),
            );
            let reductions = k.reduce.iter().enumerate().map(move |(r, reduce)| {
                stage(
                    format!("{context}/reduce[{r}]"),
                    TransformOpPlan::ReduceDimensions(reduce::Options {
                        counters: reduce.counters.clone(),
                        dimensions: reduce.dimensions.clone(),
                        op: reduce.op,
                    }),
                )
            });
            std::iter::once(gathered).chain(reductions)
        })
}
