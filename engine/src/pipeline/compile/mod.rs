//! The compiler: a schema-valid pipeline becomes a [`Plan`], and every semantic fault the
//! schema cannot see (unknown domains and operations, bad regexes and expressions, two
//! sinks on one path, combinations rocprofiler-sdk refuses, …) becomes a diagnostic that
//! points at the offending value.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use indexmap::IndexMap;

use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::plan::sink::Format;
use crate::plan::{
    ContextPlan, Plan, PluginRef, PostPlan, Provenance, Route, SinkPlan, StageGraph, TransformPlan,
    Writer,
};
use crate::plugin::{self, Check, Kind, NotFound, Plugin, PluginSink, Search};
use crate::record::RecordKind;
use crate::sdk::Domain;

use super::counters::CounterCheck;
use super::model::{self, KernelNames, Pipeline, PostStep, SinkKind, SinkType, TransformOp};
use super::params::{RUNTIME_PLACEHOLDERS, placeholders};
use super::value::{Node, Step};
use crate::units::{self, Quantity};

/// Builds a path into the document: `path!["context", 2, "tracing", 0]`.
macro_rules! path {
    ($($step:expr),* $(,)?) => { &[$(Step::from($step)),*][..] };
}

mod contexts;
mod transforms;

use contexts::counter_stages;
pub(crate) use transforms::TransformCheck;

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
    /// See [`Options::records_only`](crate::pipeline::Options::records_only).
    records_only: bool,
}

impl<'a> Compiler<'a> {
    pub(super) fn new(
        doc: &'a Node,
        counters: CounterCheck,
        plugins: Plugins<'a>,
        records_only: bool,
    ) -> Self {
        Compiler {
            doc,
            counters,
            plugins,
            records_only,
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

/// The span of `len` bytes at `offset` inside a string value, if the TOML source holds the
/// string verbatim (a basic or literal string without escapes before the offset).
fn inner_span(node: &Node, offset: usize, len: usize) -> Option<Span> {
    let value = node.as_str()?;
    let source = node.span.snippet();
    let quote = source.len().checked_sub(value.len())? / 2;
    let body = source.get(quote..quote + value.len())?;
    (body == value).then(|| {
        let start = node.span.range.start + quote + offset;
        node.span.within(start..start + len)
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
}
