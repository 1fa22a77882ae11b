//! `[context.thread_trace]`: rocprofv3's `--att` options, checked against the limits
//! rocprofiler-sdk's thread-trace services accept, so a bad value is refused here with its
//! place in the file, not by the SDK inside the application. The device service traces
//! all an agent runs while the context is started: the options that pick dispatches have
//! no meaning there, and the SDK refuses `serialize_all`.

use rocflow_core::thread_trace::{
    DEFAULT_BUFFER_BYTES, DEFAULT_SHADER_ENGINE_MASK, DEFAULT_SIMD_SELECT, DEFAULT_TARGET_CU,
    MAX_SIMD_SELECT, MAX_TARGET_CU, MIN_BUFFER_BYTES, PERFCOUNTER_PERIODS, ThreadTracePlan,
    TraceMode, TracePerfcounter,
};

use super::compiler::Compiler;
use super::contexts::KernelSelection;
use crate::diag::Step;
use crate::pipeline::model::{self, TracePerfcounter as Written};
use crate::units;

impl Compiler<'_> {
    pub(super) fn thread_trace(&mut self, i: usize, t: &model::ThreadTrace) -> ThreadTracePlan {
        let base = [
            Step::Key("context"),
            Step::Index(i),
            Step::Key("thread_trace"),
        ];
        let at = |key: &'static str| {
            let mut p = base.to_vec();
            p.push(Step::Key(key));
            p
        };
        let target_cu = self
            .at_most(&at("target_cu"), t.target_cu, MAX_TARGET_CU, "CU")
            .unwrap_or(DEFAULT_TARGET_CU);
        let simd_select = self
            .at_most(
                &at("simd_select"),
                t.simd_select,
                MAX_SIMD_SELECT,
                "SIMD selection",
            )
            .unwrap_or(DEFAULT_SIMD_SELECT);
        let shader_engine_mask = t.shader_engine_mask.unwrap_or(DEFAULT_SHADER_ENGINE_MASK);
        if shader_engine_mask == 0 {
            self.error(
                &at("shader_engine_mask"),
                "a shader-engine mask of 0 traces nothing",
            )
            .hint = Some("set a bit per shader engine, e.g. 0x1 for the first".into());
        }
        let buffer_bytes = match &t.buffer_size {
            None => DEFAULT_BUFFER_BYTES,
            Some(q) => self
                .quantity(&at("buffer_size"), q, units::parse_size)
                .unwrap_or(DEFAULT_BUFFER_BYTES),
        };
        if buffer_bytes < MIN_BUFFER_BYTES {
            self.error(
                &at("buffer_size"),
                format!(
                    "a thread-trace buffer of {buffer_bytes} bytes is below rocprofiler-sdk's 1 MiB"
                ),
            )
            .hint = Some("try \"256MiB\", rocprofv3's default".into());
        }
        let perfcounters = self.perfcounters(&base, &t.perfcounters);
        let perfcounter_period = match (t.perfcounter_period, t.perfcounters.is_empty()) {
            (None, true) => 0,
            (Some(period), false)
                if u8::try_from(period).is_ok_and(|p| PERFCOUNTER_PERIODS.contains(&p)) =>
            {
                period as u8
            }
            (Some(period), false) => {
                self.error(
                    &at("perfcounter_period"),
                    format!("a perfcounter period of {period} is outside 1..=32"),
                );
                0
            }
            (None, false) => {
                self.error(
                    &at("perfcounters"),
                    "perfcounters in a thread trace need a `perfcounter_period`",
                )
                .hint = Some(
                    "add `perfcounter_period = 8` (1 to 32), as rocprofv3's --att-perfcounter-ctrl"
                        .into(),
                );
                0
            }
            (Some(_), true) => {
                self.error(
                    &at("perfcounter_period"),
                    "a perfcounter period without `perfcounters` samples nothing",
                )
                .hint = Some("add `perfcounters = [\"SQ_WAVES\"]`, or drop the period".into());
                0
            }
        };
        let mode = t.mode.unwrap_or_default();
        if mode == TraceMode::Device {
            self.device_mode_options(&base, t);
        }
        let KernelSelection {
            include,
            exclude,
            iterations,
        } = self.kernel_selection(&base, &t.kernels, t.iterations.as_deref());
        ThreadTracePlan {
            mode,
            path: t.path.clone(),
            target_cu,
            simd_select,
            shader_engine_mask,
            buffer_bytes,
            perfcounters,
            perfcounter_period,
            serialize_all: t.serialize_all,
            kernel_include: include,
            kernel_exclude: exclude,
            iterations,
            agents: self.agents(&at("agents"), &t.agents),
            decoder_paths: t.decoder_paths.clone(),
        }
    }

    /// Refuses the dispatch service's options in a device-mode trace, each at its key.
    fn device_mode_options(&mut self, base: &[Step<'_>], t: &model::ThreadTrace) {
        let given = [
            ("kernels", !t.kernels.is_empty(), "picks dispatches"),
            ("iterations", t.iterations.is_some(), "picks dispatches"),
            (
                "serialize_all",
                t.serialize_all,
                "serializes dispatches, which rocprofiler-sdk's device service refuses",
            ),
        ];
        for (key, _, what) in given.into_iter().filter(|(_, given, _)| *given) {
            let mut path = base.to_vec();
            path.push(Step::Key(key));
            self.error(
                &path,
                format!("`{key}` {what}; a device-mode thread trace traces all the agent runs while the context is started"),
            )
            .hint = Some(format!(
                "drop `{key}`, or set `mode = \"dispatch\"` to trace chosen dispatches; bound a device trace with the context's `period` (`paused = true` waits for roctxProfilerResume)"
            ));
        }
    }

    /// Thread traces carry no context (the SDK hands a trace to the callback of the
    /// service that started it, and rocflow's frames name no context), and traces of one
    /// dispatch by two contexts would be kept as one: one context traces threads.
    pub(super) fn one_thread_trace(&mut self, contexts: &[rocflow_core::contexts::ContextPlan]) {
        self.device_trace_from_initialization(contexts);
        let mut tracing = (contexts.iter().enumerate()).filter(|(_, c)| c.thread_trace.is_some());
        let Some((_, first)) = tracing.next() else {
            return;
        };
        for (i, c) in tracing {
            self.error(
                &[Step::Key("context"), Step::Index(i), Step::Key("thread_trace")],
                format!(
                    "context `{}` traces threads, and so does context `{}`: one context of a pipeline may",
                    c.name, first.name
                ),
            )
            .hint = Some(format!(
                "move these settings to context `{}`, or trace in separate runs",
                first.name
            ));
        }
    }

    /// rocprofiler-sdk 1.0 readies its device thread traces when the HSA runtime loads,
    /// after the tool initialized: a device trace started then (a context's start with no
    /// `period`) does not start, and the context traces from its next start on.
    fn device_trace_from_initialization(
        &mut self,
        contexts: &[rocflow_core::contexts::ContextPlan],
    ) {
        for (i, c) in contexts.iter().enumerate() {
            let device = c
                .thread_trace
                .as_ref()
                .is_some_and(|t| t.mode == TraceMode::Device);
            if !device || c.start.paused || c.start.delay_ns > 0 {
                continue;
            }
            let path = [
                Step::Key("context"),
                Step::Index(i),
                Step::Key("thread_trace"),
                Step::Key("mode"),
            ];
            self.warn(
                &path,
                format!(
                    "context `{}` starts as the tool initializes, before the HSA runtime loads: rocprofiler-sdk starts no device thread trace then, so it traces from the context's next start (a roctxProfilerResume after a roctxProfilerPause) on",
                    c.name
                ),
            )
            .hint = Some(
                "start it after the runtime loads: `period = { paused = true }` with roctxProfilerResume and roctxProfilerPause around what to trace, or a `delay`".into(),
            );
        }
    }

    /// A small number the SDK keeps in a byte and checks against `max`.
    fn at_most(
        &mut self,
        path: &[Step<'_>],
        value: Option<u64>,
        max: u8,
        what: &str,
    ) -> Option<u8> {
        let value = value?;
        match u8::try_from(value) {
            Ok(v) if v <= max => Some(v),
            _ => {
                self.error(
                    path,
                    format!("{what} {value} is above {max}, the most rocprofiler-sdk takes"),
                );
                None
            }
        }
    }

    fn perfcounters(&mut self, base: &[Step<'_>], written: &[Written]) -> Vec<TracePerfcounter> {
        let mut out = Vec::new();
        for (n, counter) in written.iter().enumerate() {
            let (name, mask) = match counter {
                Written::Name(name) => (name, u64::from(MAX_SIMD_SELECT)),
                Written::Masked { name, simd_mask } => (name, *simd_mask),
            };
            let mut path = base.to_vec();
            path.extend([Step::Key("perfcounters"), Step::Index(n)]);
            if mask == 0 || mask > u64::from(MAX_SIMD_SELECT) {
                path.push(Step::Key("simd_mask"));
                self.error(
                    &path,
                    format!("SIMD mask {mask:#x} of `{name}` is not a mask of 4 SIMDs"),
                )
                .hint = Some("use 0x1 to 0xF".into());
                continue;
            }
            out.push(TracePerfcounter {
                name: name.clone(),
                simd_mask: mask as u8,
            });
        }
        out
    }
}
