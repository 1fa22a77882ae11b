//! Whether the rocprofiler-sdk in use has everything a plan asks of it: a domain or a
//! service a newer SDK added is refused by an older one, so a run asking for it fails,
//! naming the release that has it, instead of collecting nothing.

use std::fmt;

use crate::contexts::{ContextPlan, Replay};
use crate::sdk::{Domain, KERNEL_REPLAY, Release, SdkVersion};

/// What a context asks of the SDK that a release after 1.0 added.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Needs {
    /// A tracing domain.
    Domain(Domain),
    /// Kernel replay of its counters' passes.
    KernelReplay,
}

impl Needs {
    /// How the pipeline asks for it, for a hint to leave it out.
    pub fn setting(&self) -> String {
        match self {
            Needs::Domain(domain) => format!("`{}`", domain.name()),
            Needs::KernelReplay => "`replay = \"kernel\"`".into(),
        }
    }
}

/// Something a context asks for that the SDK in use lacks.
#[derive(Debug, Clone, PartialEq)]
pub struct Unavailable {
    pub context: String,
    pub needs: Needs,
    /// The release that added it.
    pub release: Release,
    /// The SDK in use.
    pub sdk: SdkVersion,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let asks = match self.needs {
            Needs::Domain(domain) => format!("traces `{}`", domain.name()),
            Needs::KernelReplay => "replays each dispatch for its counter passes".into(),
        };
        write!(
            f,
            "context `{}` {asks}, which {} added; the rocprofiler-sdk in use is {}",
            self.context, self.release, self.sdk
        )
    }
}

impl std::error::Error for Unavailable {}

/// The first domain of `contexts` that rocprofiler-sdk `sdk` lacks. The tool refuses a
/// process for it: an SDK aborts the application when asked for a kind it lacks.
pub fn unavailable(contexts: &[ContextPlan], sdk: SdkVersion) -> Option<Unavailable> {
    contexts.iter().find_map(|context| {
        let domain = (context.tracing.iter())
            .map(|t| t.domain)
            .find(|d| !d.in_sdk(sdk))?;
        Some(Unavailable {
            context: context.name.clone(),
            needs: Needs::Domain(domain),
            release: domain.since()?,
            sdk,
        })
    })
}

/// The first thing of `contexts` that rocprofiler-sdk `sdk` lacks, domains first, for the
/// runner to refuse before the application starts.
pub fn unavailable_to_run(contexts: &[ContextPlan], sdk: SdkVersion) -> Option<Unavailable> {
    unavailable(contexts, sdk).or_else(|| {
        let replays =
            |c: &&ContextPlan| (c.counters.as_ref()).is_some_and(|k| k.replay == Replay::Kernel);
        let context = contexts.iter().find(replays)?;
        (sdk < KERNEL_REPLAY.sdk).then(|| Unavailable {
            context: context.name.clone(),
            needs: Needs::KernelReplay,
            release: KERNEL_REPLAY,
            sdk,
        })
    })
}
