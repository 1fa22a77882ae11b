//! rocprofv3's summary (`-S`, `-D`, `--summary-groups`): a text table of one or more of
//! its tracing domains (`KERNEL_DISPATCH`, `HIP_API`, …), a row per kernel, function or
//! operation with its calls and times, the longest total first; laid out, named and
//! numbered as rocprofv3's `generateStats.cpp` prints it, and made of the run's statistics.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use rustc_hash::FxHashMap;

use crate::cformat::{scientific, shortest};
use crate::plan::{DomainTables, SummaryUnit};
use crate::sdk::Domain;
use crate::stats::Accumulator;

use super::{Kind, Summary};

/// A domain of rocprofv3's summary, in the order it prints them (its `domain_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SummaryDomain {
    HsaApi,
    HipApi,
    MarkerApi,
    KernelDispatch,
    MemoryCopy,
    ScratchMemory,
    RcclApi,
    MemoryAllocation,
    RocdecodeApi,
    RocjpegApi,
}

impl SummaryDomain {
    /// Its name in the tables (their `DOMAIN` column and titles), which groups match.
    pub fn name(self) -> &'static str {
        match self {
            SummaryDomain::HsaApi => "HSA_API",
            SummaryDomain::HipApi => "HIP_API",
            SummaryDomain::MarkerApi => "MARKER_API",
            SummaryDomain::KernelDispatch => "KERNEL_DISPATCH",
            SummaryDomain::MemoryCopy => "MEMORY_COPY",
            SummaryDomain::ScratchMemory => "SCRATCH_MEMORY",
            SummaryDomain::RcclApi => "RCCL_API",
            SummaryDomain::MemoryAllocation => "MEMORY_ALLOCATION",
            SummaryDomain::RocdecodeApi => "ROCDECODE_API",
            SummaryDomain::RocjpegApi => "ROCJPEG_API",
        }
    }

    /// The summary domain of an API's calls; none for the APIs rocprofv3 leaves out.
    fn of_api(domain: Domain) -> Option<SummaryDomain> {
        Some(match domain.plain() {
            Domain::HsaCoreApi
            | Domain::HsaAmdExtApi
            | Domain::HsaImageExtApi
            | Domain::HsaFinalizeExtApi => SummaryDomain::HsaApi,
            Domain::HipRuntimeApi | Domain::HipCompilerApi => SummaryDomain::HipApi,
            Domain::RcclApi => SummaryDomain::RcclApi,
            Domain::RocdecodeApi => SummaryDomain::RocdecodeApi,
            Domain::RocjpegApi => SummaryDomain::RocjpegApi,
            _ => return None,
        })
    }
}

/// A domain's rows: each name with the statistics of its records' durations, in ns.
type Rows = BTreeMap<String, Accumulator>;

impl Summary {
    /// The statistics by rocprofv3's summary domains, those with records only, in its
    /// order; by name alone, whatever the breakdown. Operations are named as the SDK names
    /// them (`MEMORY_COPY_HOST_TO_DEVICE`), counters are not summarized, as rocprofv3 does.
    fn by_domain(&self) -> BTreeMap<SummaryDomain, Rows> {
        let mut domains: BTreeMap<SummaryDomain, Rows> = BTreeMap::new();
        for (&kind, section) in &self.sections {
            for (key, row) in &section.rows {
                let own = |i: usize| self.names[key.own[i] as usize].as_str();
                let (domain, name) = match kind {
                    Kind::Kernels => (SummaryDomain::KernelDispatch, own(0).to_owned()),
                    Kind::Api => {
                        let domain = Domain::from_name(own(0)).and_then(SummaryDomain::of_api);
                        let Some(domain) = domain else { continue };
                        (domain, own(1).to_owned())
                    }
                    Kind::Copies => (SummaryDomain::MemoryCopy, format!("MEMORY_COPY_{}", own(0))),
                    Kind::Allocations => (
                        SummaryDomain::MemoryAllocation,
                        format!("MEMORY_ALLOCATION_{}", own(0)),
                    ),
                    Kind::Scratch => (
                        SummaryDomain::ScratchMemory,
                        format!("SCRATCH_MEMORY_{}", own(0)),
                    ),
                    Kind::Markers => (SummaryDomain::MarkerApi, own(0).to_owned()),
                    // rocprofv3 has no summary of graph launches.
                    Kind::Counters | Kind::Graphs => continue,
                };
                let rows = domains.entry(domain).or_default();
                rows.entry(name).or_default().merge(&row.durations);
            }
        }
        domains
    }

    /// The tables `asked` for, as rocprofv3 prints them: one per domain, then one per
    /// group, then one of every domain; each line after `indent` (rocprofv3 indents what
    /// it prints by four spaces, and nothing it writes to a file). A table with no rows
    /// (a group that matches no domain with records) is left out, as rocprofv3 leaves it.
    pub fn domain_tables(&self, asked: &DomainTables, indent: &str) -> Result<String, String> {
        let domains = self.by_domain();
        let unit = asked.units;
        let mut out = String::new();
        if asked.per_domain {
            for (&domain, rows) in &domains {
                let title = format!("{} SUMMARY", domain.name());
                table(&mut out, &title, &[(domain, rows)], unit, indent);
            }
        }
        for group in &asked.groups {
            let regex =
                DomainTables::group(group).map_err(|e| format!("summary group `{group}`: {e}"))?;
            let members: Vec<(SummaryDomain, &Rows)> = (domains.iter())
                .filter(|(domain, _)| regex.is_match(domain.name()))
                .map(|(&domain, rows)| (domain, rows))
                .collect();
            let names: Vec<&str> = members.iter().map(|(d, _)| d.name()).collect();
            let title = format!("{} SUMMARY", names.join(" + "));
            table(&mut out, &title, &members, unit, indent);
        }
        if asked.all {
            let every: Vec<(SummaryDomain, &Rows)> = domains
                .iter()
                .map(|(&domain, rows)| (domain, rows))
                .collect();
            table(&mut out, "SUMMARY", &every, unit, indent);
        }
        Ok(out)
    }
}

/// The narrowest `NAME` and `DOMAIN` columns.
const NAME_WIDTH: usize = 40;
const DOMAIN_WIDTH: usize = 12;

/// Appends one table of `domains`, titled `ROCPROFV3 {title}:`. A name in two domains is
/// one row, of the first, as rocprofv3 keys a table's rows by name alone.
fn table(
    out: &mut String,
    title: &str,
    domains: &[(SummaryDomain, &Rows)],
    unit: SummaryUnit,
    indent: &str,
) {
    let mut rows: Vec<(Cow<'_, str>, SummaryDomain, Accumulator)> = Vec::new();
    let mut at: FxHashMap<&str, usize> = FxHashMap::default();
    let mut total = Accumulator::default();
    let (mut name_width, mut domain_width) = (NAME_WIDTH, DOMAIN_WIDTH);
    for &(domain, entries) in domains {
        for (name, stats) in entries {
            total.merge(stats);
            match at.get(name.as_str()) {
                Some(&i) => rows[i].2.merge(stats),
                None => {
                    at.insert(name, rows.len());
                    // Printable: a name may come from anyone (see `crate::printable`).
                    let shown = crate::printable::name(name);
                    name_width = name_width.max(shown.len());
                    rows.push((shown, domain, stats.clone()));
                }
            }
        }
        domain_width = domain_width.max(domain.name().len());
    }
    if total.count() == 0 {
        return;
    }
    rows.sort_by(|a, b| b.2.sum().total_cmp(&a.2.sum()).then_with(|| a.0.cmp(&b.0)));

    let u = unit.name();
    let (nw, dw) = (name_width, domain_width);
    let _ = write!(out, "\n{indent}ROCPROFV3 {title}:\n\n{indent}");
    let _ = writeln!(
        out,
        "| {:^nw$} | {:^dw$} | {:^15} | {:^15} | {:^15} | {:^13} | {:^15} | {:^15} | {:^15} |",
        "NAME",
        "DOMAIN",
        "CALLS",
        format!("DURATION ({u})"),
        format!("AVERAGE ({u})"),
        "PERCENT (INC)",
        format!("MIN ({u})"),
        format!("MAX ({u})"),
        "STDDEV",
    );
    out.push_str(indent);
    for width in [nw, dw, 15, 15, 15, 13, 15, 15, 15] {
        let _ = write!(out, "|-{:-<width$}-", "");
    }
    out.push_str("|\n");
    let whole_ns = total.sum();
    let scale = unit.nanoseconds() as f64;
    // Whole nanoseconds print as integers; other units as {fmt}'s shortest doubles.
    let time = |ns: f64| match unit {
        SummaryUnit::Nsec => format!("{}", ns as u64),
        _ => shortest(ns / scale),
    };
    for (name, domain, stats) in rows {
        // rocprofv3 divides by a total of 0 (records of no duration): x86 makes that a
        // negative NaN, which C prints as `-nan`.
        let percent = match whole_ns {
            0.0 => "-nan".to_owned(),
            _ => format!("{:.6}", 100.0 * stats.sum() / whole_ns),
        };
        let _ = writeln!(
            out,
            "{indent}| {:<nw$} | {:<dw$} | {:>15} | {:>15} | {:>15} | {:>13} | {:>15} | {:>15} | {:>15} |",
            name,
            domain.name(),
            stats.count(),
            time(stats.sum()),
            scientific(stats.mean() / scale, 3),
            percent,
            time(stats.min()),
            time(stats.max()),
            scientific(stats.stddev() / scale, 3),
        );
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Destination;

    /// A table laid out as rocprofv3's: columns centred in the header, 40 characters for
    /// names and 12 for domains at least, calls and totals whole, means and deviations to
    /// three decimals in scientific notation, shares to six decimals.
    #[test]
    fn tables_are_laid_out_as_rocprofv3_prints_them() {
        let mut summary = Summary::default();
        for ns in [100.0, 300.0] {
            let own = ["hip_runtime_api", "hipMalloc"];
            summary.add(Kind::Api, (1, None), &own, ns, 0);
        }
        let own = ["hip_compiler_api", "__hipRegisterFunction"];
        summary.add(Kind::Api, (1, None), &own, 100.0, 0);
        let asked = DomainTables {
            all: false,
            per_domain: true,
            groups: Vec::new(),
            units: SummaryUnit::Nsec,
            output: Destination::Stderr,
        };
        let text = summary.domain_tables(&asked, "  ").unwrap();
        let expected = [
            "",
            "  ROCPROFV3 HIP_API SUMMARY:",
            "",
            "  |                   NAME                   |    DOMAIN    |      CALLS      | DURATION (nsec) | AVERAGE (nsec)  | PERCENT (INC) |   MIN (nsec)    |   MAX (nsec)    |     STDDEV      |",
            "  |------------------------------------------|--------------|-----------------|-----------------|-----------------|---------------|-----------------|-----------------|-----------------|",
            "  | hipMalloc                                | HIP_API      |               2 |             400 |       2.000e+02 |     80.000000 |             100 |             300 |       1.414e+02 |",
            "  | __hipRegisterFunction                    | HIP_API      |               1 |             100 |       1.000e+02 |     20.000000 |             100 |             100 |       0.000e+00 |",
            "",
            "",
        ];
        assert_eq!(text, expected.join("\n"));

        // In seconds: times as {fmt}'s shortest doubles, in the unit's name.
        let asked = DomainTables {
            units: SummaryUnit::Sec,
            ..asked
        };
        let text = summary.domain_tables(&asked, "").unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[3].contains("| DURATION (sec)  |  AVERAGE (sec)  |"),
            "{text}"
        );
        assert!(
            lines[5].ends_with(
                "|           4e-07 |       2.000e-07 |     80.000000 |           1e-07 |           3e-07 |       1.414e-07 |"
            ),
            "{text}"
        );
    }

    #[test]
    fn groups_match_whole_domain_names() {
        let mut summary = Summary::default();
        summary.add(Kind::Kernels, (1, Some(0)), &["k"], 10.0, 0);
        summary.add(
            Kind::Copies,
            (1, Some(0)),
            &["HOST_TO_DEVICE", "<4KiB"],
            5.0,
            64,
        );
        summary.add(
            Kind::Copies,
            (1, Some(0)),
            &["HOST_TO_DEVICE", ">=64MiB"],
            7.0,
            1 << 30,
        );
        let asked = |groups: &[&str]| DomainTables {
            all: false,
            per_domain: false,
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            units: SummaryUnit::Nsec,
            output: Destination::Stdout,
        };
        let text = summary
            .domain_tables(&asked(&["MEMORY_COPY|KERNEL_DISPATCH"]), "")
            .unwrap();
        assert!(
            text.contains("ROCPROFV3 KERNEL_DISPATCH + MEMORY_COPY SUMMARY:"),
            "{text}"
        );
        // A copy's rows of every size are one, as rocprofv3 keys them by direction alone.
        assert!(text.contains("| MEMORY_COPY_HOST_TO_DEVICE "), "{text}");
        assert_eq!(
            text.matches("MEMORY_COPY_HOST_TO_DEVICE").count(),
            1,
            "{text}"
        );
        // `MEMORY` matches no name whole: no table.
        assert_eq!(summary.domain_tables(&asked(&["MEMORY"]), "").unwrap(), "");
        assert!(summary.domain_tables(&asked(&["(KERNEL"]), "").is_err());
    }
}
