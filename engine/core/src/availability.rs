//! Whether the rocprofiler-sdk in use has every domain a plan traces: a domain a newer
//! SDK added is refused by an older one, so a run asking for it fails, naming the release
//! that has it, instead of collecting nothing.

use std::fmt;

use crate::contexts::ContextPlan;
use crate::sdk::{Domain, Release, SdkVersion};

/// A domain a context traces that the SDK in use lacks.
#[derive(Debug, Clone, PartialEq)]
pub struct Unavailable {
    pub context: String,
    pub domain: Domain,
    /// The release that added the domain.
    pub release: Release,
    /// The SDK in use.
    pub sdk: SdkVersion,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "context `{}` traces `{}`, which {} added; the rocprofiler-sdk in use is {}",
            self.context,
            self.domain.name(),
            self.release,
            self.sdk
        )
    }
}

impl std::error::Error for Unavailable {}

/// The first domain of `contexts` that rocprofiler-sdk `sdk` lacks.
pub fn unavailable(contexts: &[ContextPlan], sdk: SdkVersion) -> Option<Unavailable> {
    contexts.iter().find_map(|context| {
        let domain = (context.tracing.iter())
            .map(|t| t.domain)
            .find(|d| !d.in_sdk(sdk))?;
        Some(Unavailable {
            context: context.name.clone(),
            domain,
            release: domain.since()?,
            sdk,
        })
    })
}
