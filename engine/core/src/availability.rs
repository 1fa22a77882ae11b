//! Whether the rocprofiler-sdk in use has every domain and service a plan asks for: one a
//! newer SDK added is refused by an older one, so a run asking for it fails, naming the
//! release that has it, instead of collecting nothing.

use std::fmt;

use crate::contexts::ContextPlan;
use crate::sdk::{Domain, Release, SPM_SINCE, SdkVersion};

/// What a context asks of the SDK that a newer release added.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Feature {
    /// A traced domain.
    Domain(Domain),
    /// SPM, streaming performance monitors.
    Spm,
}

impl Feature {
    /// Its name in a pipeline.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Domain(domain) => domain.name(),
            Feature::Spm => "spm",
        }
    }

    /// The release that added it; `None` for what SDK 1.0 has.
    pub fn since(self) -> Option<Release> {
        match self {
            Feature::Domain(domain) => domain.since(),
            Feature::Spm => Some(SPM_SINCE),
        }
    }
}

/// A feature a context asks for that the SDK in use lacks.
#[derive(Debug, Clone, PartialEq)]
pub struct Unavailable {
    pub context: String,
    pub feature: Feature,
    /// The release that added the feature.
    pub release: Release,
    /// The SDK in use.
    pub sdk: SdkVersion,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let asks = match self.feature {
            Feature::Domain(domain) => format!("traces `{}`", domain.name()),
            Feature::Spm => "streams counters with SPM (`[context.spm]`)".to_owned(),
        };
        write!(
            f,
            "context `{}` {asks}, which {} added; the rocprofiler-sdk in use is {}",
            self.context, self.release, self.sdk
        )
    }
}

impl std::error::Error for Unavailable {}

/// The first feature of `contexts` that rocprofiler-sdk `sdk` lacks.
pub fn unavailable(contexts: &[ContextPlan], sdk: SdkVersion) -> Option<Unavailable> {
    contexts.iter().find_map(|context| {
        let domains = context.tracing.iter().map(|t| Feature::Domain(t.domain));
        let spm = context.spm.iter().map(|_| Feature::Spm);
        let (feature, release) = domains
            .chain(spm)
            .find_map(|f| f.since().filter(|r| r.sdk > sdk).map(|r| (f, r)))?;
        Some(Unavailable {
            context: context.name.clone(),
            feature,
            release,
            sdk,
        })
    })
}
