//! From a sink's plan to the sink at work: its format's, or a plugin's, at its path, one
//! per process where the path says so.

use std::path::PathBuf;

use super::per_process::{self, Paths, PerProcess};
use super::plugin::PluginSink;
use super::{Placeholders, Sink, SinkError, csv, json, otf2, parquet, perfetto, rocpd};
use crate::catalog::Catalog;
use crate::plan::sink::csv::Flavour;
use crate::plan::sink::rocpd::Layout;
use crate::plan::sink::{Format, SinkPlan, Writer};
use crate::plugin::Plugin;
use crate::record::Process;

/// Opens the sink a plan names, at its path with the placeholders filled in: one output
/// per process where the path names what tells processes apart (see [`per_process`]).
pub fn open(plan: &SinkPlan, placeholders: &Placeholders) -> Result<Box<dyn Sink>, SinkError> {
    // rocpd's layouts say how processes map to databases.
    if let Writer::Builtin(Format::Rocpd(options)) = &plan.writer {
        return rocpd::RocpdSink::open(options, &plan.path, placeholders);
    }
    if !per_process::names_a_process(&plan.path) {
        return open_at(plan, placeholders.expand(&plan.path));
    }
    let template = plan.path.clone();
    let plan = plan.clone();
    let open = move |path: PathBuf, _: u16, _: Option<&Process>| open_at(&plan, path);
    Ok(Box::new(PerProcess::new(
        &template,
        placeholders,
        Paths::Shared,
        None,
        Box::new(open),
    )))
}

/// The paths a sink of the plan writes for a run, as [`open`] fills them in: one per
/// process (in the order they connected) where its path names one, else one.
pub fn paths(plan: &SinkPlan, catalog: &Catalog) -> Vec<PathBuf> {
    let single = matches!(&plan.writer,
        Writer::Builtin(Format::Rocpd(options)) if options.layout == Layout::Single);
    if single || !per_process::names_a_process(&plan.path) {
        return vec![Placeholders::for_run(catalog).expand(&plan.path)];
    }
    per_process::paths(&plan.path, catalog)
}

/// Opens the sink a plan names at `path`.
fn open_at(plan: &SinkPlan, path: PathBuf) -> Result<Box<dyn Sink>, SinkError> {
    Ok(match &plan.writer {
        Writer::Builtin(Format::Csv(options)) => match options.flavour {
            Flavour::Rocflow => Box::new(csv::CsvSink::create(path)?),
            Flavour::Rocprofv3(options) => Box::new(csv::rocprofv3::Rocprofv3Sink::create(
                path,
                &plan.kinds,
                options,
            )?),
        },
        Writer::Builtin(Format::Perfetto(options)) => {
            Box::new(perfetto::PerfettoSink::create(options, path)?)
        }
        Writer::Builtin(Format::Parquet(options)) => {
            Box::new(parquet::ParquetSink::create(options, path)?)
        }
        Writer::Builtin(Format::Rocpd(_)) => {
            unreachable!("rocpd maps processes to databases itself")
        }
        Writer::Builtin(Format::Otf2(options)) => Box::new(otf2::Otf2Sink::create(options, path)?),
        Writer::Builtin(Format::Json(_)) => Box::new(json::JsonSink::create(path, &plan.kinds)?),
        Writer::Plugin { plugin, options } => {
            let plugin = Plugin::load(&plugin.library)?;
            Box::new(PluginSink::open(plugin, options, &path)?)
        }
    })
}
