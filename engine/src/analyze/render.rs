//! Findings written for people (the terminal, Markdown) and for programs (JSON).

use std::fmt::Write as _;

use super::finding::{Evidence, Finding, Severity, amount, duration};

/// How `rocflow analyze` writes its findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Markdown,
}

/// Evidence shown per finding on the terminal and in Markdown (a kernel and the eight
/// metrics of `speed-of-light`); JSON has it all.
const EVIDENCE_SHOWN: usize = 9;

/// What the findings come to, in a line: `3 findings: 1 warning, 2 info`.
fn tally(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "no findings".into();
    }
    let counts: Vec<String> = Severity::ALL
        .iter()
        .rev()
        .filter_map(|&s| {
            let n = findings.iter().filter(|f| f.severity == s).count();
            (n > 0).then(|| format!("{n} {}", s.name()))
        })
        .collect();
    let plural = if findings.len() == 1 { "" } else { "s" };
    format!("{} finding{plural}: {}", findings.len(), counts.join(", "))
}

/// The terminal's form: findings first, most time at stake first, each with its
/// evidence and advice.
pub fn text(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let _ = writeln!(
            out,
            "{:<7}  {}  ({} at stake)\n  {}",
            f.severity.name().to_uppercase(),
            f.rule,
            duration(f.at_stake_ns),
            crate::printable::name(&f.statement)
        );
        for e in f.evidence.iter().take(EVIDENCE_SHOWN) {
            let _ = writeln!(out, "    - {}", evidence(e));
        }
        if f.evidence.len() > EVIDENCE_SHOWN {
            let more = f.evidence.len() - EVIDENCE_SHOWN;
            let _ = writeln!(out, "    - … {more} more (--format json has them all)");
        }
        let _ = writeln!(out, "  advice: {}\n", f.advice);
    }
    let _ = writeln!(out, "{}", tally(findings));
    out
}

/// A Markdown document: a table of the findings, the speed-of-light table where that rule
/// measured kernels, then each finding with its evidence.
pub fn markdown(findings: &[Finding]) -> String {
    let mut out = format!("# Findings\n\n{}\n\n", tally(findings));
    if findings.is_empty() {
        return out;
    }
    out.push_str("| severity | rule | at stake | finding |\n| --- | --- | --- | --- |\n");
    for f in findings {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} |",
            f.severity.name(),
            f.rule,
            duration(f.at_stake_ns),
            cell(&f.statement)
        );
    }
    if let Some(table) = super::sol_table::table(findings) {
        speed_of_light(&mut out, &table);
    }
    for f in findings {
        let _ = writeln!(
            out,
            "\n## {} `{}`\n\n{}\n",
            f.severity.name(),
            f.rule,
            cell(&f.statement)
        );
        for e in f.evidence.iter().take(EVIDENCE_SHOWN) {
            let _ = writeln!(out, "- {}", cell(&evidence(e)));
        }
        let _ = writeln!(out, "\n**Advice:** {}", f.advice);
    }
    out
}

/// The speed-of-light table in Markdown: a row per kernel, a column per metric.
fn speed_of_light(out: &mut String, table: &super::sol_table::Table) {
    let _ = writeln!(
        out,
        "\n## Speed of light\n\n| kernel | {} |\n| --- |{}",
        table.metrics.join(" | "),
        " --- |".repeat(table.metrics.len())
    );
    for row in &table.rows {
        let cells: Vec<String> = (row.cells.iter())
            .map(|c| c.as_ref().map_or_else(String::new, |c| c.text()))
            .collect();
        let _ = writeln!(out, "| {} | {} |", cell(&row.kernel), cells.join(" | "));
    }
}

/// Text safe in a Markdown table cell.
fn cell(text: &str) -> String {
    crate::printable::name(text)
        .replace('|', "\\|")
        .replace('\n', " ")
}

/// JSON: every finding with all its evidence.
pub fn json(findings: &[Finding]) -> serde_json::Value {
    serde_json::json!({ "findings": findings })
}

/// A piece of evidence in a line.
pub fn evidence(e: &Evidence) -> String {
    match e {
        Evidence::Span {
            what,
            pid,
            agent,
            tid,
            start_ns,
            end_ns,
        } => {
            let at = match (agent, tid) {
                (Some(agent), _) => format!("agent {agent} of process {pid}"),
                (None, Some(tid)) => format!("thread {tid} of process {pid}"),
                (None, None) => format!("process {pid}"),
            };
            format!(
                "{what} on {at}: {start_ns}..{end_ns} ns ({})",
                duration(end_ns.saturating_sub(*start_ns))
            )
        }
        Evidence::Kernel {
            name,
            dispatches,
            total_ns,
        } => format!(
            "kernel {}: {dispatches} dispatches, {}",
            crate::printable::name(name),
            duration(*total_ns)
        ),
        Evidence::Api {
            function,
            calls,
            total_ns,
        } => format!("{function}: {calls} calls, {}", duration(*total_ns)),
        Evidence::Copy {
            direction,
            function,
            copies,
            bytes,
            total_ns,
        } => format!(
            "{function} {direction}: {copies} copies, {bytes} bytes, {}",
            duration(*total_ns)
        ),
        Evidence::Sequence { kernels, times } => {
            let names: Vec<_> = kernels.iter().map(|k| crate::printable::name(k)).collect();
            format!("{} ({times} times)", names.join(" → "))
        }
        Evidence::Range {
            label,
            instances,
            total_ns,
        } => format!(
            "range {}: {instances} instances, {}",
            crate::printable::name(label),
            duration(*total_ns)
        ),
        Evidence::Counter {
            kernel,
            counter,
            value,
        } => format!("{counter} = {value} in {}", crate::printable::name(kernel)),
        Evidence::Metric {
            kernel,
            metric,
            value,
            unit,
            peak,
            percent_of_peak,
        } => {
            let against = match (peak, percent_of_peak) {
                (Some(peak), Some(percent)) => {
                    format!("{percent:.1}% of the peak {}", amount(*peak, unit))
                }
                _ => "no peak".to_owned(),
            };
            format!(
                "{metric} = {} in {}: {against}",
                amount(*value, unit),
                crate::printable::name(kernel)
            )
        }
        Evidence::Rank { rank, value } => format!("rank {rank}: {value}"),
        Evidence::Stream { pid, agent, stream } => {
            format!("stream {stream} of process {pid} on GPU {agent}")
        }
    }
}
