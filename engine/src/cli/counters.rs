//! `rocflow migrate-counters` and `rocflow counters list|show|check`: the command line of
//! the `rocflow-counters` crate, whose diagnostics are turned into rocflow's here.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use rocflow_counters::migrate::{self, Migration};
use rocflow_counters::{self as counters, DefinitionKind, Definitions, Source};

use crate::device::CounterKind;
use crate::diag::{Diagnostic, did_you_mean};
use crate::error::{Error, Result};
use crate::messages;
use crate::runner::Device;

use super::stdio::print;
use crate::counter_defs::Files;

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Counter definition file in the legacy schema.
    #[arg(short, long, value_name = "FILE")]
    input: PathBuf,
    /// Write the standardized file here (default: standard output).
    #[arg(short, long, value_name = "FILE", conflicts_with = "in_place")]
    output: Option<PathBuf>,
    /// Replace the input file.
    #[arg(long)]
    in_place: bool,
    /// Write nothing; exit 1 if the file still needs migrating, 0 if it is standardized.
    #[arg(long, conflicts_with_all = ["output", "in_place"])]
    check: bool,
}

#[derive(Debug, Subcommand)]
pub enum CountersCommand {
    /// List counters, optionally those of one architecture, of one kind, or matching a text.
    List(ListArgs),
    /// Show a counter: description, definitions, expression tree and the hardware counters it needs.
    Show(ShowArgs),
    /// Check a definition file: expressions parse, names resolve on every architecture, no cycles. Exit 1 on findings.
    Check(CheckArgs),
}

/// Where definitions come from, for the commands that look counters up.
#[derive(Debug, Args)]
pub struct DefinitionsArgs {
    /// Counter definitions (default: $ROCPROFILER_METRICS_PATH, $ROCM_PATH, then /opt/rocm).
    #[arg(long, value_name = "FILE")]
    counters: Option<PathBuf>,
    /// More definitions to add, as with `rocprofv3 -E` (repeatable).
    #[arg(long, value_name = "FILE")]
    extra: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    definitions: DefinitionsArgs,
    /// Only counters defined for this architecture, e.g. gfx942.
    #[arg(long, value_name = "ARCH")]
    arch: Option<String>,
    /// Only derived counters (computed from an expression).
    #[arg(long, conflicts_with = "hardware")]
    derived: bool,
    /// Only hardware counters (a block and an event).
    #[arg(long)]
    hardware: bool,
    /// Only counters whose name or description contains TEXT (any case).
    #[arg(long, value_name = "TEXT")]
    grep: Option<String>,
    /// List the counters this device's rocprofiler-sdk supports (`rocm`, `sim` or
    /// `sim:SCENARIO.toml`) instead of definitions; without definitions found, `rocm`'s.
    #[arg(long, value_parser = Device::parse, conflicts_with = "counters")]
    device: Option<Device>,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    definitions: DefinitionsArgs,
    /// The counter's name.
    name: String,
    /// Only its definition on this architecture.
    #[arg(long, value_name = "ARCH")]
    arch: Option<String>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The definition file to check (either schema).
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

/// Converts a legacy definition file to the standardized schema, the way AMD's converter
/// does, keeping comments. A file already standardized is left as it is.
pub fn migrate(args: MigrateArgs) -> Result<ExitCode> {
    let source = Source::read(&args.input).map_err(convert)?;
    let migration = migrate::migrate(&source).map_err(convert)?;
    let input = args.input.display();
    let text = match migration {
        Migration::AlreadyStandard if args.check => {
            eprintln!("{input} is in the standardized schema");
            return Ok(ExitCode::SUCCESS);
        }
        Migration::Migrated { counters, .. } if args.check => {
            eprintln!("{input} needs migrating: {counters} counters in the legacy schema");
            return Ok(ExitCode::from(1));
        }
        Migration::AlreadyStandard => {
            eprintln!("{input} is in the standardized schema already; nothing to migrate");
            source.text().to_owned()
        }
        Migration::Migrated { text, warnings, .. } => {
            report_warnings(&warnings);
            text
        }
    };
    let target = match (&args.output, args.in_place) {
        (Some(output), _) => output,
        (None, true) => &args.input,
        (None, false) => return print(&text).map(|()| ExitCode::SUCCESS),
    };
    crate::atomic::write(target, &text)
        .map_err(Error::io(format!("writing {}", target.display())))?;
    Ok(ExitCode::SUCCESS)
}

/// Runs one of `rocflow counters …`.
pub fn run(command: CountersCommand) -> Result<ExitCode> {
    match command {
        CountersCommand::List(args) => list(args),
        CountersCommand::Show(args) => show(args),
        CountersCommand::Check(args) => check(args),
    }
}

/// Lists counters: name, kind and description, one per line.
fn list(args: ListArgs) -> Result<ExitCode> {
    // Without definitions to read, the device's SDK says what it supports.
    let device = match &args.device {
        Some(device) => Some(device.clone()),
        None if args.definitions.counters.is_none() => {
            counters::locate(None).err().map(|_| Device::Rocm)
        }
        None => None,
    };
    if let Some(device) = device {
        return list_device(&device, &args);
    }
    let defs = args.definitions.load()?;
    let grep = args.grep.as_deref().map(str::to_lowercase);
    let wanted_kind = |kind: &DefinitionKind| match kind {
        DefinitionKind::Hardware { .. } => !args.derived,
        DefinitionKind::Derived { .. } => !args.hardware,
    };
    let rows: Vec<(&str, &str, &str)> = defs
        .counters()
        .iter()
        .filter_map(|counter| {
            let definitions: Vec<_> = match &args.arch {
                Some(arch) => counter.definition_for(arch).into_iter().collect(),
                None => counter.definitions.iter().collect(),
            };
            let kinds: Vec<&DefinitionKind> = definitions
                .iter()
                .map(|d| &d.kind)
                .filter(|k| wanted_kind(k))
                .collect();
            let matches = grep
                .as_ref()
                .is_none_or(|text| found(text, &counter.name, &counter.description));
            (!kinds.is_empty() && matches).then(|| {
                (
                    counter.name.as_str(),
                    kind_name(&kinds),
                    counter.description.as_str(),
                )
            })
        })
        .collect();
    print_rows(&rows)
}

/// Whether `text` (lower case) is in a counter's name or description.
fn found(text: &str, name: &str, description: &str) -> bool {
    name.to_lowercase().contains(text) || description.to_lowercase().contains(text)
}

/// Lists the counters a device's GPUs support, each once, with the same filters.
fn list_device(device: &Device, args: &ListArgs) -> Result<ExitCode> {
    let agents = super::device::list(device, true).map_err(|e| match (&args.device, e) {
        (None, Error::User(diagnostics)) => {
            let searched: Vec<String> = (counters::default_locations().iter())
                .map(|p| p.display().to_string())
                .collect();
            let why: Vec<String> = diagnostics.iter().map(|d| d.message.clone()).collect();
            Error::user(
                Diagnostic::error(format!(
                    "no counter definitions found (looked in {}), and no device to ask: {}",
                    searched.join(", "),
                    why.join("; ")
                ))
                .hint("name a definitions file with --counters FILE, or list the simulated device's counters with --device sim"),
            )
        }
        (_, other) => other,
    })?;
    let grep = args.grep.as_deref().map(str::to_lowercase);
    let mut rows: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    for agent in &agents {
        if args.arch.as_ref().is_some_and(|arch| *arch != agent.name) {
            continue;
        }
        for c in agent.counters.iter().flatten() {
            let wanted = match c.kind {
                CounterKind::Hardware => !args.derived,
                CounterKind::Derived => !args.hardware,
                CounterKind::Constant => !args.derived && !args.hardware,
            };
            let matches = (grep.as_ref()).is_none_or(|text| found(text, &c.name, &c.description));
            if wanted && matches {
                rows.entry(c.name.as_str())
                    .or_insert((c.kind.name(), c.description.as_str()));
            }
        }
    }
    let rows: Vec<(&str, &str, &str)> = (rows.into_iter())
        .map(|(name, (kind, description))| (name, kind, description))
        .collect();
    print_rows(&rows)
}

/// Prints name, kind and description, one counter a line, the names aligned.
fn print_rows(rows: &[(&str, &str, &str)]) -> Result<ExitCode> {
    let width = rows.iter().map(|(name, ..)| name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (name, kind, description) in rows {
        out.push_str(&format!("{name:width$}  {kind:8}  {description}\n"));
    }
    print(&out)?;
    Ok(ExitCode::SUCCESS)
}

fn kind_name(kinds: &[&DefinitionKind]) -> &'static str {
    let hardware = kinds
        .iter()
        .any(|k| matches!(k, DefinitionKind::Hardware { .. }));
    let derived = kinds
        .iter()
        .any(|k| matches!(k, DefinitionKind::Derived { .. }));
    match (hardware, derived) {
        (true, true) => "mixed",
        (true, false) => "hardware",
        _ => "derived",
    }
}

/// Shows one counter: each definition, the expression as a tree, and what it needs.
fn show(args: ShowArgs) -> Result<ExitCode> {
    let defs = args.definitions.load()?;
    let Some(counter) = defs.get(&args.name) else {
        let names = defs.counters().iter().map(|c| c.name.as_str());
        return Err(
            Diagnostic::error(format!("unknown counter `{}`", args.name))
                .maybe_hint(did_you_mean(&args.name, names))
                .into(),
        );
    };
    let definitions: Vec<_> = match &args.arch {
        None => counter.definitions.iter().collect(),
        Some(arch) => match counter.definition_for(arch) {
            Some(definition) => vec![definition],
            None => {
                let archs: Vec<&str> = counter.architectures().collect();
                return Err(Diagnostic::error(format!(
                    "`{}` is not defined for {arch}",
                    counter.name
                ))
                .hint(format!("it is defined for {}", archs.join(", ")))
                .into());
            }
        },
    };
    let mut out = format!("{}\n  {}\n", counter.name, counter.description);
    for definition in definitions {
        let archs: Vec<&str> = match &args.arch {
            Some(arch) => vec![arch.as_str()],
            None => definition
                .architectures
                .iter()
                .map(String::as_str)
                .collect(),
        };
        out.push_str(&format!("\n  on {}:\n", archs.join(", ")));
        match &definition.kind {
            DefinitionKind::Hardware { block, event } => {
                out.push_str(&format!(
                    "    hardware counter: block {block}, event {event}\n"
                ));
            }
            DefinitionKind::Derived { expression } => {
                out.push_str(&format!("    expression: {}\n", expression.text));
                match expression.parsed() {
                    Ok(expr) => {
                        for line in expr.tree().lines() {
                            out.push_str(&format!("      {line}\n"));
                        }
                    }
                    Err(error) => out.push_str(&format!("    does not parse: {error}\n")),
                }
                for (needs, on) in requirements(&defs, &counter.name, &archs) {
                    out.push_str(&format!("    needs on {}: {needs}\n", on.join(", ")));
                }
            }
        }
    }
    print(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// What a derived counter needs on each architecture, architectures with the same needs
/// grouped together.
fn requirements<'a>(
    defs: &Definitions,
    name: &str,
    archs: &[&'a str],
) -> BTreeMap<String, Vec<&'a str>> {
    let mut grouped: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for &arch in archs {
        let needs = match defs.resolver(arch).requirements(name) {
            Ok(needs) => {
                let mut all: Vec<String> = needs.hardware.into_iter().collect();
                all.extend(
                    needs
                        .agent_properties
                        .into_iter()
                        .map(|p| format!("{p} (agent)")),
                );
                all.join(", ")
            }
            Err(error) => format!("unresolved: {error}"),
        };
        grouped.entry(needs).or_default().push(arch);
    }
    grouped
}

/// Checks a definition file and prints every finding; exit 1 if there is any.
fn check(args: CheckArgs) -> Result<ExitCode> {
    let defs = Definitions::load(&args.file).map_err(convert)?;
    report_warnings(defs.warnings());
    let findings = counters::check(&defs);
    let color = std::io::stdout().is_terminal();
    let mut files = Files::default();
    let mut out = String::new();
    for finding in &findings {
        out.push_str(&format!("{}\n\n", files.diagnostic(finding).render(color)));
    }
    let file = args.file.display();
    let count = defs.counters().len();
    match findings.len() {
        0 => out.push_str(&format!("{file}: {count} counters, no problems found\n")),
        n => out.push_str(&format!("{file}: {count} counters, {n} problem(s) found\n")),
    }
    print(&out)?;
    Ok(if findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

impl DefinitionsArgs {
    /// The definitions named (or found at the default locations), plus the extra files.
    fn load(&self) -> Result<Definitions> {
        let mut defs = Definitions::load_default(self.counters.as_deref()).map_err(convert)?;
        for extra in &self.extra {
            defs.extend(Definitions::load(extra).map_err(convert)?)
                .map_err(convert)?;
        }
        report_warnings(defs.warnings());
        Ok(defs)
    }
}

fn report_warnings(warnings: &[counters::Diagnostic]) {
    let mut files = Files::default();
    for warning in warnings {
        messages::diagnostic(&files.diagnostic(warning));
    }
}

/// Turns the counters crate's errors into rocflow's: problems in the file are user errors
/// (exit 2) with their snippet.
fn convert(error: counters::Error) -> Error {
    match error {
        counters::Error::Io { path, source } => Error::Io {
            context: format!("reading {}", path.display()),
            source,
        },
        counters::Error::NotFound { searched } => {
            let looked: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
            Error::user(
                Diagnostic::error("no counter definitions found")
                    .note(format!("looked at {}", looked.join(", ")))
                    .hint(
                        "name a file with --counters FILE, or set ROCM_PATH to a ROCm installation",
                    ),
            )
        }
        counters::Error::Invalid(diagnostics) => {
            let mut files = Files::default();
            Error::User(diagnostics.iter().map(|d| files.diagnostic(d)).collect())
        }
    }
}
