//! The compiler: a schema-valid pipeline becomes a [`Plan`], and every semantic fault the
//! schema cannot see (unknown domains and operations, bad regexes and expressions, two
//! sinks on one path, combinations rocprofiler-sdk refuses, …) becomes a diagnostic that
//! points at the offending value.

use std::collections::BTreeSet;
use std::path::PathBuf;

use indexmap::IndexMap;

use crate::diag::{Diagnostic, did_you_mean};
use crate::plan::sink::Format;
use crate::plan::{
    ContextPlan, Plan, PluginRef, PostPlan, Provenance, Route, SinkPlan, StageGraph, TransformPlan,
    Writer,
};
use crate::plugin::Kind;
use crate::record::RecordKind;
use crate::sink::PluginSink;

use super::model::{self, KernelNames, Pipeline, SinkType};
use super::params::{RUNTIME_PLACEHOLDERS, placeholders};
use crate::diag::Step;
use crate::plan::sink::SinkKind;
use crate::plan::transform::TransformOp;
use crate::plan::{Destination, DomainTables, PostStep};
use crate::units::{self};

/// Builds a path into the document: `path!["context", 2, "tracing", 0]`.
macro_rules! path {
    ($($step:expr),* $(,)?) => { &[$(Step::from($step)),*][..] };
}

mod compiler;
mod contexts;
mod kernel_replay;
mod thread_trace;
mod transforms;

pub(crate) use compiler::name_of;
pub(super) use compiler::{Compiler, Plugins};
use compiler::{inner_span, last_line};
use contexts::counter_stages;

impl Compiler<'_> {
    /// Compiles the whole pipeline; errors win over a plan.
    pub(super) fn compile(
        mut self,
        pipeline: &Pipeline,
        resolved: &serde_json::Value,
        sources: Vec<String>,
        params: IndexMap<String, serde_json::Value>,
    ) -> Result<(Plan, Vec<Diagnostic>), Vec<Diagnostic>> {
        let mut contexts: Vec<ContextPlan> = pipeline
            .context
            .iter()
            .enumerate()
            .map(|(i, c)| self.context(i, c))
            .collect();
        self.check_exclusive_services(&contexts);
        self.check_kernel_replay(&contexts);
        self.one_thread_trace(&contexts);
        self.trace_each_once(&mut contexts);
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
        let kernel_names = self.kernel_names(pipeline.pipeline.kernel_names, &produced);
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
                kernel_names,
                transforms,
                routes,
            },
            sinks,
            posts,
            bounds: None,
        };
        Ok((plan, self.warnings))
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

    /// The form kernel names take. Renaming after ROCTx ranges needs the ranges and the
    /// launching API calls: without them the dispatches keep their kernels' names.
    fn kernel_names(&mut self, set: Option<KernelNames>, produced: &[RecordKind]) -> KernelNames {
        let names = set.unwrap_or_default();
        let needed = [RecordKind::Marker, RecordKind::Api];
        if names == KernelNames::Renamed && !needed.iter().all(|k| produced.contains(k)) {
            self.warn(
                path!["pipeline", "kernel_names"],
                "dispatches are renamed after the ROCTx range around their launch, which needs the ranges and the launching API calls: no context traces both",
            )
            .hint = Some("trace `marker_core_range_api` and `hip_runtime_api` in a context".into());
        }
        names
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

    /// Checks the rocprofv3 summary tables of post-step `p`: each group a regex, a file's
    /// path its placeholders.
    fn domain_tables(
        &mut self,
        p: usize,
        tables: &DomainTables,
        params: &IndexMap<String, serde_json::Value>,
    ) {
        for (g, group) in tables.groups.iter().enumerate() {
            if let Err(err) = DomainTables::group(group) {
                let message = format!("invalid summary group: {}", last_line(&err.to_string()));
                self.error(path!["post", p, "domain_tables", "groups", g], message)
                    .hint = Some(
                    "a group is a regex matching domain names whole, e.g. \"KERNEL_DISPATCH|MEMORY_COPY\" or \".*_API\"".into(),
                );
            }
        }
        if let Destination::File(file) = &tables.output {
            self.placeholders(path!["post", p, "domain_tables", "output"], file, params);
        }
    }

    fn posts(
        &mut self,
        posts: &[model::Post],
        sinks: &[SinkPlan],
        params: &IndexMap<String, serde_json::Value>,
    ) -> Vec<PostPlan> {
        for (p, post) in posts.iter().enumerate() {
            if let PostStep::Summary {
                domain_tables: Some(tables),
                ..
            } = &post.step
            {
                self.domain_tables(p, tables, params);
            }
            match &post.step {
                PostStep::Summary {
                    path: Some(path), ..
                }
                | PostStep::Report { path, .. } => {
                    self.placeholders(path!["post", p, "path"], path, params);
                }
                PostStep::Summary { path: None, .. } => {}
                PostStep::Analyze {
                    path,
                    rules,
                    fail_if,
                } => {
                    self.placeholders(path!["post", p, "path"], path, params);
                    if let Err(e) = crate::analyze::Selection::new(rules, &[]) {
                        self.error(path!["post", p, "rules"], e.to_string());
                    }
                    if let Some(Err(e)) = fail_if.as_deref().map(crate::analyze::Gate::new) {
                        self.error(path!["post", p, "fail_if"], e.to_string());
                    }
                }
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

/// 64-bit FNV-1a: a stable content hash for provenance (not for security).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
