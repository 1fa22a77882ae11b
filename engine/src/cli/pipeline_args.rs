//! The options of every command that reads a pipeline, and its compiling for the command.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;

use crate::diag::SourceFile;
use crate::error::{Error, Result};
use crate::import::Overlay;
use crate::messages;
use crate::pipeline::{Library, Options, Override, SimulatedGpus};
use crate::plan::Plan;
use crate::plugin::{Check, Search};

/// Options every command that reads a pipeline shares.
#[derive(Debug, Args)]
pub struct PipelineArgs {
    /// Override a pipeline parameter (repeatable): --set top=20 --set kernels='["gemm"]'
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// Counter definitions to check counter names against (default: the pipeline's
    /// `definitions`, else $ROCM_PATH or /opt/rocm when installed).
    #[arg(long, value_name = "FILE")]
    counters: Option<PathBuf>,
}

/// What a compiled pipeline is for.
pub(super) enum Use {
    /// Running an application on an SDK: the simulated device's GPUs, if it is that.
    Run(Option<SimulatedGpus>),
    /// Shaping records that exist (a replay): no SDK is configured with it.
    Records,
}

impl PipelineArgs {
    /// Compiles a pipeline file (or template), changed by `overlay`, for `purpose`,
    /// showing its warnings: its plugins are loaded and tried, so one that cannot work stops
    /// the command before it starts.
    pub(super) fn compile(&self, file: &Path, overlay: Overlay, purpose: Use) -> Result<Plan> {
        let options = Options {
            overlay: Some(Box::new(overlay)),
            ..self.purpose_options(purpose)?
        };
        let compiled = crate::pipeline::compile_file(file, &options).map_err(Error::User)?;
        compiled.warnings.iter().for_each(messages::diagnostic);
        Ok(compiled.plan)
    }

    /// Compiles a pipeline made here (from rocprofv3's options), as [`compile`](Self::compile)
    /// does a file.
    pub(super) fn compile_text(&self, text: Arc<SourceFile>, purpose: Use) -> Result<Plan> {
        let options = self.purpose_options(purpose)?;
        let path = Path::new("rocprofv3.toml");
        let compiled = crate::pipeline::compile_text(path, text, &options).map_err(Error::User)?;
        compiled.warnings.iter().for_each(messages::diagnostic);
        Ok(compiled.plan)
    }

    fn purpose_options(&self, purpose: Use) -> Result<Options> {
        let (simulated, records_only) = match purpose {
            Use::Run(simulated) => (simulated, false),
            Use::Records => (None, true),
        };
        Ok(Options {
            plugin_check: Check::Load,
            simulated,
            records_only,
            ..self.options()?
        })
    }

    /// [`options`](Self::options) for a pipeline that only shapes records (see
    /// [`Use::Records`]).
    pub(super) fn records_options(&self) -> Result<Options> {
        Ok(Options {
            records_only: true,
            ..self.options()?
        })
    }

    pub(super) fn options(&self) -> Result<Options> {
        let overrides = self
            .set
            .iter()
            .map(|arg| Override::parse(arg))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Options {
            overrides,
            library: Library::from_env(),
            counters: self.counters.clone(),
            simulated: None,
            overlay: None,
            plugins: Search::from_env(),
            plugin_check: Check::Inspect,
            records_only: false,
        })
    }
}
