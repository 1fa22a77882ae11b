//! Plugins: transforms and sinks in shared libraries, behind the C ABI of
//! [`rocflow_plugin::abi`]. A pipeline names one with `kind = "plugin"` and
//! `plugin = "NAME"` ([`Search`] says where it is found). How far the compiler checks it
//! is a [`Check`]. At run time a [`PluginTransform`] is a stage and a [`PluginSink`](crate::sink::PluginSink) a sink
//! like the others; records reach both as Arrow batches.

pub(crate) mod batch;
mod inspect;
pub(crate) mod library;
mod search;
mod transform;

use std::fmt;
use std::path::PathBuf;

pub use inspect::inspect;
pub use library::Plugin;
pub use search::{Found, NotFound, PATH_VAR, Search, file_name};
pub use transform::PluginTransform;

/// How far the compiler checks the plugins a pipeline names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Check {
    /// Finds each library and reads its symbols ([`inspect`]), running none of its code:
    /// for `rocflow validate` and `explain`.
    #[default]
    Inspect,
    /// Also loads each one, creates it with its options and runs a transform on a sample
    /// record of each kind it takes: for `run` and `replay`, which run plugins anyway, so a
    /// plugin that cannot work fails before any application starts.
    Load,
}

/// What a plugin can be in a pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Transform,
    Sink,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Transform => "transform",
            Kind::Sink => "sink",
        })
    }
}

/// What goes wrong with a plugin: loading it, or a call into it.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("cannot load {}: {message}", path.display())]
    Open { path: PathBuf, message: String },
    #[error("{} is not a rocflow plugin: it does not export `rocflow_plugin_v1`", path.display())]
    NoEntry { path: PathBuf },
    #[error(
        "{} is built for plugin ABI version {found}; this rocflow loads version {}",
        path.display(),
        rocflow_plugin::abi::ABI_VERSION
    )]
    Version { path: PathBuf, found: u32 },
    #[error("{} is not a valid rocflow plugin: {problem}", path.display())]
    Malformed { path: PathBuf, problem: String },
    #[error("plugin `{plugin}` is not a {kind}; it is a {kinds}")]
    NotA {
        plugin: String,
        kind: Kind,
        kinds: String,
    },
    #[error("plugin `{plugin}` failed: {message}")]
    Failed { plugin: String, message: String },
    #[error("plugin `{plugin}` panicked: {message}")]
    Panicked { plugin: String, message: String },
    #[error("plugin `{plugin}` returned a bad batch: {problem}")]
    Output { plugin: String, problem: String },
}

impl Error {
    /// What would fix it, where rocflow can tell.
    /// The error with its hint, where one line of text is all that is passed on.
    pub fn explain(&self) -> String {
        match self.hint() {
            Some(hint) => format!("{self} (hint: {hint})"),
            None => self.to_string(),
        }
    }

    pub fn hint(&self) -> Option<String> {
        match self {
            Error::NoEntry { .. } | Error::Malformed { .. } => Some(
                "a plugin exports `rocflow_plugin_v1`, declared in plugins/include/rocflow_plugin.h (or made by rocflow_plugin::export_plugin! in Rust)".into(),
            ),
            Error::Version { .. } => Some(
                "rebuild the plugin against this rocflow's rocflow_plugin.h or rocflow-plugin crate".into(),
            ),
            Error::NotA { kind, .. } => Some(format!("use it where a pipeline takes a {kind}")),
            _ => None,
        }
    }
}
