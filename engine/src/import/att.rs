//! rocprofv3's thread-trace options (`advanced_thread_trace` and `att_*`) as a
//! `[context.thread_trace]` table.

use std::ops::Range;

use super::input::{Job, Number, Opt, flag};
use crate::pipeline::model::{ThreadTrace, TracePerfcounter};
use crate::units::Quantity;

/// The job's thread trace, its folder left to the outputs (see [`folder`]); `warn` is told
/// of `att_*` options given without `advanced_thread_trace`.
pub(super) fn thread_trace(
    j: &Job,
    mut warn: impl FnMut(&Range<usize>, String),
) -> Option<ThreadTrace> {
    let set: Vec<(&str, Option<&Range<usize>>)> = vec![
        (
            "att_library_path",
            j.att_library_path.as_ref().map(|o| &o.span),
        ),
        ("att_target_cu", j.att_target_cu.as_ref().map(|o| &o.span)),
        (
            "att_simd_select",
            j.att_simd_select.as_ref().map(|o| &o.span),
        ),
        (
            "att_buffer_size",
            j.att_buffer_size.as_ref().map(|o| &o.span),
        ),
        (
            "att_shader_engine_mask",
            j.att_shader_engine_mask.as_ref().map(|o| &o.span),
        ),
        (
            "att_perfcounters",
            j.att_perfcounters.as_ref().map(|o| &o.span),
        ),
        (
            "att_perfcounter_ctrl",
            j.att_perfcounter_ctrl.as_ref().map(|o| &o.span),
        ),
        (
            "att_serialize_all",
            j.att_serialize_all.as_ref().map(|o| &o.span),
        ),
    ];
    if !flag(&j.advanced_thread_trace) {
        for (key, span) in set {
            if let Some(span) = span {
                warn(
                    span,
                    format!("`{key}` has no effect without `advanced_thread_trace`"),
                );
            }
        }
        return None;
    }
    let number = |o: &Opt<Number>| o.as_ref().map(|n| n.value.0);
    let perfcounters = (j.att_perfcounters.as_ref())
        .map(|p| p.value.split_whitespace().map(perfcounter).collect())
        .unwrap_or_default();
    Some(ThreadTrace {
        // rocprofv3 (SDK 1.0) configures the dispatch service only.
        mode: None,
        path: String::new(),
        target_cu: number(&j.att_target_cu),
        simd_select: number(&j.att_simd_select),
        shader_engine_mask: number(&j.att_shader_engine_mask),
        buffer_size: number(&j.att_buffer_size).map(Quantity::Number),
        perfcounters,
        // rocprofv3 leaves perfcounters out of the trace when its period is 0.
        perfcounter_period: number(&j.att_perfcounter_ctrl).filter(|&p| p != 0),
        serialize_all: flag(&j.att_serialize_all),
        kernels: Default::default(),
        iterations: None,
        agents: Vec::new(),
        decoder_paths: (j.att_library_path.as_ref())
            .map(|p| p.value.as_slice().to_vec())
            .unwrap_or_default(),
    })
}

/// `NAME` or `NAME:SIMD_MASK` (hexadecimal, as rocprofv3 reads it).
fn perfcounter(text: &str) -> TracePerfcounter {
    match text.split_once(':') {
        Some((name, mask)) => {
            let mask = mask.trim_start_matches("0x").trim_start_matches("0X");
            match u64::from_str_radix(mask, 16) {
                Ok(simd_mask) => TracePerfcounter::Masked {
                    name: name.to_owned(),
                    simd_mask,
                },
                Err(_) => TracePerfcounter::Name(text.to_owned()),
            }
        }
        None => TracePerfcounter::Name(text.to_owned()),
    }
}

/// The folder rocprofv3 writes a job's thread traces in: its outputs' folder.
pub(super) fn folder(prefix: &str) -> String {
    match prefix.rsplit_once('/') {
        Some((dir, _)) if !dir.is_empty() => dir.to_owned(),
        _ => ".".to_owned(),
    }
}
