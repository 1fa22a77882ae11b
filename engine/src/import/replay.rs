//! rocprofv3's kernel replay options: `--replay-mode kernel` with the beta's opt-in
//! `--kernel-replay-beta-enabled` (the first rocprofv3 with the beta took the opt-in
//! alone), as `replay = "kernel"` in the counters table. rocprofv3's own rules hold:
//! kernel replay needs counters, and refuses thread trace and PC sampling in the job.

use std::ops::Range;

use rocflow_core::contexts::Replay;

use super::input::{Job, flag};

/// What is wrong with a job's replay options: the option's place and the message, and a
/// hint.
pub(super) struct Refusal {
    pub span: Range<usize>,
    pub message: String,
    pub hint: &'static str,
}

/// How the job's counter passes run; `counts`, `traces` and `samples` say whether it
/// collects counters, traces threads and samples PCs.
pub(super) fn replay(
    j: &Job,
    counts: bool,
    traces: bool,
    samples: bool,
) -> Result<Option<Replay>, Refusal> {
    let beta = flag(&j.kernel_replay_beta_enabled);
    let (mode, span) = match (&j.replay_mode, &j.kernel_replay_beta_enabled) {
        (Some(mode), _) => (mode.value, mode.span.clone()),
        (None, Some(opt_in)) if beta => (Replay::Kernel, opt_in.span.clone()),
        (None, _) => return Ok(None),
    };
    // Each pass a run of its own is what a pipeline does unless told otherwise.
    if mode == Replay::Application {
        return Ok(None);
    }
    let refuse = |message: &str, hint| Refusal {
        span: span.clone(),
        message: message.into(),
        hint,
    };
    if !beta {
        return Err(refuse(
            "kernel replay is a beta of rocprofiler-sdk: it needs `kernel_replay_beta_enabled`",
            "add --kernel-replay-beta-enabled, as rocprofv3 asks",
        ));
    }
    if !counts {
        return Err(refuse(
            "kernel replay runs the passes of counters, and this job collects none",
            "add --pmc with the counters to collect",
        ));
    }
    if traces || samples {
        let what = if traces {
            "thread trace"
        } else {
            "PC sampling"
        };
        return Err(refuse(
            &format!("kernel replay runs each dispatch once per pass, which {what} cannot share"),
            "collect the counters and the rest in two runs, as rocprofv3 requires",
        ));
    }
    Ok(Some(mode))
}
