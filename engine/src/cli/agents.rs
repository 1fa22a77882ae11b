//! `rocflow agents`: the agents of a device, as its rocprofiler-sdk lists them, with their
//! counters on request (what `rocprofv3 -L` and `rocprofv3-avail` show).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::device;
use crate::error::{Error, Result};
use crate::messages;
use crate::runner::Device;

use super::device::list;
use super::stdio::print;

#[derive(Debug, Args)]
pub struct AgentsArgs {
    /// Which rocprofiler-sdk to ask: `rocm` (the installed one), `sim` (rocflow's simulated
    /// MI300X) or `sim:SCENARIO.toml`.
    #[arg(long, default_value = "rocm", value_parser = Device::parse)]
    device: Device,
    /// Also list each GPU's counters, with their dimensions and descriptions.
    #[arg(long)]
    counters: bool,
    /// Print JSON, for scripts.
    #[arg(long)]
    json: bool,
}

/// The hidden command that asks the SDK, in a process of its own (see [`crate::device`]).
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The SDK library to load.
    library: PathBuf,
    /// Where to write the answer (JSON).
    #[arg(long)]
    answer: PathBuf,
    #[arg(long)]
    counters: bool,
}

/// Lists the agents.
pub fn agents(args: AgentsArgs) -> Result<ExitCode> {
    let agents = list(&args.device, args.counters)?;
    if agents.is_empty() {
        messages::warning(
            "the SDK reports no agents: is the GPU driver loaded? `--device sim` lists the simulated device",
        );
    }
    let text = if args.json {
        let mut json = serde_json::to_string_pretty(&agents).expect("agents serialize");
        json.push('\n');
        json
    } else {
        device::render(&agents)
    };
    print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Answers the query as JSON in the answer file.
pub fn query(args: QueryArgs) -> Result<ExitCode> {
    let agents =
        device::query(&args.library, args.counters).map_err(|e| Error::Runtime(e.to_string()))?;
    let json = serde_json::to_vec(&agents).expect("agents serialize");
    std::fs::write(&args.answer, json).map_err(Error::io("writing the device query's answer"))?;
    Ok(ExitCode::SUCCESS)
}
