//! Whether the rocprofiler-sdk in use has everything a plan asks of it: a domain or a
//! service a newer SDK added is refused by an older one, so a run asking for it fails,
//! naming the release that has it, instead of collecting nothing.

use std::fmt;

use crate::contexts::{ContextPlan, Replay};
use crate::sdk::{Domain, KERNEL_REPLAY, Release, SPM_SINCE, SdkVersion};

/// What a context asks of the SDK that a release after 1.0 added.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Needs {
    /// A tracing domain.
    Domain(Domain),
    /// Kernel replay of its counters' passes.
    KernelReplay,
    /// SPM, streaming performance monitors.
    Spm,
}

impl Needs {
    /// How the pipeline asks for it, for a hint to leave it out.
    pub fn setting(&self) -> String {
        match self {
            Needs::Domain(domain) => format!("`{}`", domain.name()),
            Needs::KernelReplay => "`replay = \"kernel\"`".into(),
            Needs::Spm => "`[context.spm]`".into(),
        }
    }

    /// The release that added it; `None` for what SDK 1.0 has.
    pub fn since(self) -> Option<Release> {
        match self {
            Needs::Domain(domain) => domain.since(),
            Needs::KernelReplay => Some(KERNEL_REPLAY),
            Needs::Spm => Some(SPM_SINCE),
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
            Needs::Spm => "streams counters with SPM (`[context.spm]`)".into(),
        };
        write!(
            f,
            "context `{}` {asks}, which {} added; the rocprofiler-sdk in use is {}",
            self.context, self.release, self.sdk
        )
    }
}

impl std::error::Error for Unavailable {}

/// The first domain or service of `contexts` that rocprofiler-sdk `sdk` lacks and that
/// the tool refuses a process for: an SDK aborts the application when asked for a kind
/// it lacks, and SPM's functions are not there to call.
pub fn unavailable(contexts: &[ContextPlan], sdk: SdkVersion) -> Option<Unavailable> {
    first_missing(contexts, sdk, |context| {
        let domains = context.tracing.iter().map(|t| Needs::Domain(t.domain));
        domains
            .chain(context.spm.iter().map(|_| Needs::Spm))
            .collect()
    })
}

/// The first thing of `contexts` that rocprofiler-sdk `sdk` lacks, for the runner to
/// refuse before the application starts: what [`unavailable`] finds, then kernel replay,
/// which the tool leaves to the SDK's own list of kinds.
pub fn unavailable_to_run(contexts: &[ContextPlan], sdk: SdkVersion) -> Option<Unavailable> {
    unavailable(contexts, sdk).or_else(|| {
        first_missing(contexts, sdk, |context| {
            let replays = (context.counters.as_ref()).is_some_and(|k| k.replay == Replay::Kernel);
            replays.then_some(Needs::KernelReplay).into_iter().collect()
        })
    })
}

/// The first of what `needs` gives per context that `sdk` lacks.
fn first_missing(
    contexts: &[ContextPlan],
    sdk: SdkVersion,
    needs: impl Fn(&ContextPlan) -> Vec<Needs>,
) -> Option<Unavailable> {
    contexts.iter().find_map(|context| {
        let (needs, release) = (needs(context).into_iter())
            .find_map(|n| n.since().filter(|r| r.sdk > sdk).map(|r| (n, r)))?;
        Some(Unavailable {
            context: context.name.clone(),
            needs,
            release,
            sdk,
        })
    })
}
