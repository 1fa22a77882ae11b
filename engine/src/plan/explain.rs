//! `rocflow explain`: the Plan as a person reads it, naming the rocprofiler-sdk services,
//! buffers and counter configuration each context becomes.

use std::fmt::Write as _;

use rocflow_core::thread_trace::TraceMode;

use crate::plan::PostStep;
use crate::units::{IterationRanges, format_duration};

use super::prose::{list_or, ranges};
use super::{AgentSelector, ContextPlan, Plan, SampleAt, StartPlan, Writer};
use rocflow_core::contexts::Replay;

/// Renders the plan as indented text.
pub fn explain(plan: &Plan) -> String {
    let mut out = String::new();
    let p = &plan.pipeline;
    let _ = writeln!(out, "pipeline `{}` (hash {})", p.name, p.hash);
    if let Some(description) = &p.description {
        let _ = writeln!(out, "  {description}");
    }
    let _ = writeln!(out, "  sources: {}", p.sources.join(" <- "));
    if !plan.params.is_empty() {
        let params: Vec<String> = plan
            .params
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        let _ = writeln!(out, "  params: {}", params.join(", "));
    }
    let _ = writeln!(
        out,
        "  spool: {}/run-{{timestamp}}-{{pid}}.rfraw (last.rfraw points at the newest)",
        plan.spool_dir
    );
    let _ = writeln!(
        out,
        "\ncontexts: {} (all created in the tool's initialize callback)",
        plan.contexts.len()
    );
    for (i, context) in plan.contexts.iter().enumerate() {
        context_section(&mut out, i, context);
    }
    let env = plan.application_env();
    if !env.is_empty() {
        let _ = writeln!(out, "\napplication environment (a value already set wins)");
        for (name, value) in env {
            let _ = writeln!(out, "  {name}={value}");
            let what = match name {
                crate::sdk::PC_SAMPLING_BETA => {
                    "PC sampling, AMD's beta of rocprofiler-sdk (which warns that it can hang the machine)"
                }
                _ => "SPM, AMD's beta of rocprofiler-sdk",
            };
            let _ = writeln!(out, "    turns on {what}; {name}=OFF keeps it off");
        }
    }
    let stages = &plan.stages;
    let produced: Vec<&str> = stages.produced.iter().map(|k| k.name()).collect();
    let _ = writeln!(out, "\nstages");
    let _ = writeln!(out, "  decode: {}", list_or(&produced, "no records"));
    let names = stages.kernel_names;
    let _ = writeln!(out, "  kernel names: {names}, {}", names.describe());
    for (i, t) in stages.transforms.iter().enumerate() {
        let kinds: Vec<&str> = t.kinds.iter().map(|k| k.name()).collect();
        let _ = writeln!(
            out,
            "  [{i}] {} on {}: {}",
            t.name,
            kinds.join(", "),
            t.op.explain()
        );
    }
    let _ = writeln!(out, "  fan-out (each sink in parallel):");
    for route in &stages.routes {
        let kinds: Vec<&str> = route.kinds.iter().map(|k| k.name()).collect();
        let via: Vec<String> = route.transforms.iter().map(|i| format!("[{i}]")).collect();
        let _ = writeln!(
            out,
            "    {} <- {}{}",
            route.sink,
            list_or(&kinds, "nothing"),
            if via.is_empty() {
                String::new()
            } else {
                format!(" via {}", via.join(" "))
            }
        );
    }
    let _ = writeln!(out, "\nsinks");
    for sink in &plan.sinks {
        let writer = match &sink.writer {
            Writer::Builtin(format) => serde_json::to_value(format.kind())
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            Writer::Plugin { plugin, .. } => plugin.to_string(),
        };
        let _ = writeln!(out, "  {} ({writer}): {}", sink.name, sink.path);
        let options = sink.options();
        if !options.is_empty() {
            let _ = writeln!(out, "    options: {}", serde_json::Value::Object(options));
        }
    }
    if !plan.posts.is_empty() {
        let _ = writeln!(out, "\npost-steps (after every sink has finished)");
        for post in &plan.posts {
            let required = if post.required { ", required" } else { "" };
            let _ = writeln!(
                out,
                "  {}{required}: {}",
                post.name,
                describe_post(&post.step)
            );
        }
    }
    out
}

/// The kernels and iterations a per-dispatch service selects, a line each that is set.
fn kernel_selection(
    out: &mut String,
    include: &Option<String>,
    exclude: &Option<String>,
    iterations: &Option<IterationRanges>,
) {
    if let Some(include) = include {
        let _ = writeln!(out, "        kernels matching /{include}/");
    }
    if let Some(exclude) = exclude {
        let _ = writeln!(out, "        kernels not matching /{exclude}/");
    }
    if let Some(iterations) = iterations {
        let _ = writeln!(out, "        iterations {}", ranges(iterations));
    }
}

fn context_section(out: &mut String, i: usize, c: &ContextPlan) {
    let _ = writeln!(out, "  [{i}] {}: {}", c.name, describe_start(&c.start));
    let b = &c.buffer;
    let _ = writeln!(
        out,
        "      buffer: {}, flushed at {} ({:.1}%) and every {}, {:?} policy",
        bytes(b.size_bytes),
        bytes(b.watermark_bytes),
        b.watermark_bytes as f64 * 100.0 / b.size_bytes as f64,
        format_duration(b.flush_interval_ns),
        b.policy
    );
    let _ = writeln!(out, "      agents: {}", agents(&c.agents, "every agent"));
    if !c.tracing.is_empty() {
        let _ = writeln!(out, "      buffer tracing:");
        for t in &c.tracing {
            let total = t.domain.operations().len();
            let ops = match &t.operations {
                None => format!("all {total} operations"),
                Some(ids) => {
                    const SHOWN: usize = 6;
                    let names: Vec<&str> = ids
                        .iter()
                        .take(SHOWN)
                        .filter_map(|id| t.domain.operation_name(*id))
                        .collect();
                    let more = if ids.len() > SHOWN { ", …" } else { "" };
                    format!(
                        "{} of {total} operations: {}{more}",
                        ids.len(),
                        names.join(", ")
                    )
                }
            };
            let _ = writeln!(
                out,
                "        {:<24} ROCPROFILER_BUFFER_TRACING_{} = {}, {ops}",
                t.domain.name(),
                t.domain.name().to_ascii_uppercase(),
                t.domain.sdk_value()
            );
            if !t.also_for.is_empty() {
                let others: Vec<String> = t.also_for.iter().map(|c| format!("`{c}`")).collect();
                let _ = writeln!(
                    out,
                    "          also for {}: traced in this context only, so each record is kept once",
                    others.join(", ")
                );
            }
        }
    }
    let with_args: Vec<&str> = (c.tracing.iter())
        .filter(|t| t.domain.has_args())
        .map(|t| t.domain.plain().name())
        .collect();
    if !with_args.is_empty() {
        let _ = writeln!(
            out,
            "      API arguments of {} calls (names, types, values), as rocprofv3 records them",
            with_args.join(", ")
        );
    }
    if c.code_objects {
        let _ = writeln!(
            out,
            "      callback tracing: code objects and kernel symbols (kernel names)"
        );
    }
    if let Some(k) = &c.counters {
        let _ = writeln!(
            out,
            "      dispatch counting on {}: {}",
            agents(&k.agents, "the context's agents"),
            k.collect.join(", ")
        );
        if k.pass_count() > 1 {
            let how = match k.replay {
                Replay::Application => format!(
                    "{} passes: the application runs once per pass, with the same arguments and environment; the runs are merged by process, kernel and dispatch order",
                    k.pass_count()
                ),
                Replay::Kernel => format!(
                    "1 run: each dispatch replayed {} passes (rocprofiler-sdk's kernel replay, beta), its device memory restored between passes; the passes' values merge by dispatch, with the last pass's time, and each dispatch is traced once, by its last pass (the application's own execution; the SDK records every pass, and the others are counted as replayed passes)",
                    k.pass_count()
                ),
            };
            let _ = writeln!(out, "        {how}");
            for (n, pass) in k.passes.iter().enumerate() {
                let _ = writeln!(out, "          pass {}: {}", n + 1, pass.join(", "));
            }
        }
        for (name, expression) in &k.derived {
            let _ = writeln!(out, "        derived {name} = {expression}");
        }
        for r in &k.reduce {
            let which = if r.counters.is_empty() {
                "all counters".to_owned()
            } else {
                r.counters.join(", ")
            };
            let _ = writeln!(
                out,
                "        reduce {which}: {:?} over {}",
                r.op,
                r.dimensions.join(", ")
            );
        }
        kernel_selection(out, &k.kernel_include, &k.kernel_exclude, &k.iterations);
        if let Some(definitions) = &k.definitions {
            let _ = writeln!(out, "        checked against {definitions}");
        }
    }
    if let Some(d) = &c.device_counting {
        let k = &d.counters;
        let at = match d.at {
            SampleAt::Interval => "",
            SampleAt::Markers => " and at every ROCTx range push and pop",
        };
        let _ = writeln!(
            out,
            "      device counting on {}: {}, read every {}{at} while the context is started (counts since it started; no dispatch is serialized)",
            agents(&k.agents, "the context's agents"),
            k.collect.join(", "),
            format_duration(d.interval_ns),
        );
        if let Some(definitions) = &k.definitions {
            let _ = writeln!(out, "        checked against {definitions}");
        }
        if !d.metrics.is_empty() {
            let names: Vec<&str> = d.metrics.iter().map(|m| m.name()).collect();
            let _ = writeln!(
                out,
                "        with each read, through AMD-SMI: {}",
                names.join(", ")
            );
        }
    }
    if let Some(pc) = &c.pc_sampling {
        let _ = writeln!(
            out,
            "      pc sampling: {:?} method, {:?} unit, interval {} on {}",
            pc.method,
            pc.unit,
            pc.interval,
            agents(&pc.agents, "the context's agents")
        );
    }
    if let Some(spm) = &c.spm {
        let _ = writeln!(
            out,
            "      SPM (rocprofiler-sdk 1.3.0 on, beta) on {}: {}, a sample every {} shader clock cycles of each dispatch, per XCC, shader engine and instance",
            agents(&spm.agents, "the context's agents"),
            spm.counters.join(", "),
            spm.interval_cycles
        );
        kernel_selection(
            out,
            &spm.kernel_include,
            &spm.kernel_exclude,
            &spm.iterations,
        );
    }
    if let Some(t) = &c.thread_trace {
        let (service, kept) = match t.mode {
            TraceMode::Dispatch => ("dispatch thread trace", "per dispatch"),
            TraceMode::Device => (
                "device thread trace (all each agent runs while the context is started)",
                "per agent, shader engine and start of the context",
            ),
        };
        let _ = writeln!(
            out,
            "      {service} on {}: target CU {}, SIMDs {:#x}, shader engines {:#x}, buffer {} bytes",
            agents(&t.agents, "the context's agents"),
            t.target_cu,
            t.simd_select,
            t.shader_engine_mask,
            t.buffer_bytes
        );
        if !t.perfcounters.is_empty() {
            let names: Vec<String> = (t.perfcounters.iter())
                .map(|p| format!("{} (SIMDs {:#x})", p.name, p.simd_mask))
                .collect();
            let _ = writeln!(
                out,
                "        perfcounters every {} cycles: {}",
                t.perfcounter_period,
                names.join(", ")
            );
        }
        if t.serialize_all {
            let _ = writeln!(out, "        every dispatch serialized, traced or not");
        }
        kernel_selection(out, &t.kernel_include, &t.kernel_exclude, &t.iterations);
        let _ = writeln!(
            out,
            "        raw traces and code objects kept {kept}; decoded by AMD's trace decoder ({})",
            rocflow_core::thread_trace::decoder_search(&t.decoder_paths)
        );
    }
    if c.serialize {
        let _ = writeln!(out, "      kernels serialized (one dispatch at a time)");
    }
}

/// When a context collects, in words.
pub(crate) fn describe_start(s: &StartPlan) -> String {
    let mut parts = vec![if s.paused {
        "starts paused until roctxProfilerResume".to_owned()
    } else {
        "starts at initialization".to_owned()
    }];
    if s.delay_ns > 0 {
        parts.push(format!("after {}", format_duration(s.delay_ns)));
    }
    if let Some(d) = s.duration_ns {
        parts.push(format!("collects for {}", format_duration(d)));
    }
    if s.repeat > 0 {
        parts.push(format!(
            "repeats {} more times, {} apart",
            s.repeat,
            format_duration(s.interval_ns)
        ));
    }
    parts.join(", ")
}

fn describe_post(step: &PostStep) -> String {
    match step {
        PostStep::Summary {
            path,
            top,
            domain_tables,
            ..
        } => format!(
            "summary (top {}){}{}",
            top.unwrap_or(10),
            path.as_ref().map_or(String::new(), |p| format!(" -> {p}")),
            domain_tables
                .as_ref()
                .map_or(String::new(), describe_tables)
        ),
        PostStep::Sql {
            query,
            path,
            timeout,
            ..
        } => {
            let limit = super::post::time_limit(timeout.as_ref()).map_or_else(
                |e| e.to_string(),
                |ns| format!("stops after {}", format_duration(ns)),
            );
            format!("sql `{query}` -> {path} ({limit})")
        }
        PostStep::Report { path, .. } => format!("HTML report -> {path}"),
        PostStep::Analyze { path, fail_if, .. } => match fail_if {
            Some(predicate) => format!("findings -> {path} (fails if `{predicate}`)"),
            None => format!("findings -> {path}"),
        },
        PostStep::Command { argv, .. } => format!("run {argv:?}"),
    }
}

/// rocprofv3's summary tables of a summary step: which, in what unit, where.
fn describe_tables(tables: &super::DomainTables) -> String {
    let mut which: Vec<String> = Vec::new();
    if tables.per_domain {
        which.push("per domain".into());
    }
    which.extend(tables.groups.iter().map(|g| format!("of `{g}`")));
    if tables.all {
        which.push("of all domains".into());
    }
    format!(
        "; rocprofv3's tables {} in {} -> {}",
        which.join(", "),
        tables.units.name(),
        tables.output.as_str()
    )
}

fn agents(selectors: &[AgentSelector], default: &str) -> String {
    if selectors.is_empty() {
        return default.to_owned();
    }
    selectors
        .iter()
        .map(|s| match s {
            AgentSelector::Index(i) => format!("agent {i}"),
            AgentSelector::Type(t) => format!("{t:?} agents").to_ascii_lowercase(),
            AgentSelector::Gfx(g) => g.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn bytes(n: u64) -> String {
    const UNITS: &[(&str, u64)] = &[("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    UNITS
        .iter()
        .find(|(_, size)| n >= *size)
        .map_or(format!("{n} B"), |(unit, size)| {
            let value = n as f64 / *size as f64;
            if value.fract() == 0.0 {
                format!("{value:.0} {unit}")
            } else {
                format!("{value:.1} {unit}")
            }
        })
}
