//! The HTML report: one self-contained file (inline CSS, SVG and a few lines of script;
//! nothing fetched) with the run's metadata, the summary tables (sortable, scrolling
//! sideways within the page when wide), the top kernels by time, the kernels' speed of
//! light (a table and an empirical roofline), GPU busy time per agent over the run,
//! counters per kernel (each counter's mean per dispatch, with a bar against the kernel
//! where it is largest), the thread trace's hot instructions, and links to the other
//! outputs, relative to the report.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use evalexpr::Value;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::analyze::{Evidence, Finding};
use crate::summary::{Summary, cell, number};
use crate::table::Table;

/// Kernels in the bar chart.
const CHART_KERNELS: usize = 15;
/// Characters of a kernel name shown in a chart label (the whole name is its tooltip).
const LABEL_CHARS: usize = 52;

/// What the report shows besides the summary.
pub struct Page<'a> {
    pub title: &'a str,
    /// The pipeline's name and hash.
    pub pipeline: Option<(&'a str, &'a str)>,
    /// Other outputs of the run, linked relative to the report.
    pub outputs: &'a [(String, PathBuf)],
    /// The run's decoded thread traces, per dispatch and instruction.
    pub thread_trace: &'a [crate::thread_trace::InstructionRow],
    /// What `rocflow analyze`'s rules found, which the report leads with.
    pub findings: &'a [Finding],
}

/// Writes the report to `path`, whole or not at all.
pub fn write(path: &Path, page: &Page<'_>, summary: &Summary) -> std::io::Result<()> {
    let html = render(page, summary, path.parent().unwrap_or(Path::new(".")));
    crate::atomic::write(path, html)
}

pub fn render(page: &Page<'_>, summary: &Summary, dir: &Path) -> String {
    let tables = summary.tables();
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(page.title),
        escape(page.title)
    );
    if let Some(why) = &summary.catalog.partial {
        let _ = writeln!(
            out,
            "<p class=\"partial\"><strong>Partial:</strong> {}</p>",
            escape(why)
        );
    }
    findings(&mut out, page.findings);
    metadata(&mut out, page, summary);
    if let Some(kernels) = tables.iter().find(|t| t.name == "kernels") {
        out.push_str("<h2>Top kernels by GPU time</h2>\n");
        top_kernels_chart(&mut out, kernels);
    }
    if let Some(table) = crate::analyze::speed_of_light_table(page.findings) {
        speed_of_light(&mut out, &table);
    }
    roofline_chart(&mut out, &crate::analyze::roofline(page.findings));
    busy_chart(&mut out, summary);
    device_counter_charts(&mut out, summary);
    for table in &tables {
        let _ = writeln!(
            out,
            "<h2 id=\"{}\">{}</h2>",
            escape(&table.name),
            escape(&heading(&table.name))
        );
        if table.name == "counters" {
            counter_matrix(&mut out, table);
            out.push_str("<details><summary>Every statistic per kernel and counter</summary>\n");
            html_table(&mut out, table);
            out.push_str("</details>\n");
        } else {
            html_table(&mut out, table);
        }
    }
    hot_spots(&mut out, page.thread_trace);
    outputs(&mut out, page, dir);
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    out
}

/// Instructions in the thread-trace hot-spot table.
const HOT_SPOTS: usize = 20;

/// One instruction of the thread trace, over every traced dispatch.
#[derive(Default)]
struct HotSpot {
    text: String,
    hits: u64,
    cycles: u64,
    stall: u64,
    /// The dispatches, or device trace windows, whose traces hold it.
    traced: BTreeSet<rocflow_core::thread_trace::Traced>,
}

/// The thread trace's instructions that took the most cycles, over every traced dispatch
/// or device window, with their share and the part spent stalled.
fn hot_spots(out: &mut String, rows: &[crate::thread_trace::InstructionRow]) {
    if rows.is_empty() {
        return;
    }
    let mut by_instruction: BTreeMap<(u32, u64, u64), HotSpot> = BTreeMap::new();
    for r in rows {
        let spot = by_instruction
            .entry((r.pid, r.code_object, r.address))
            .or_insert_with(|| HotSpot {
                text: r.text.clone(),
                ..HotSpot::default()
            });
        spot.hits += r.hits;
        spot.cycles += r.total_latency;
        spot.stall += r.stall;
        spot.traced.insert(r.traced);
    }
    let total: u64 = by_instruction.values().map(|s| s.cycles).sum();
    let mut hot: Vec<_> = by_instruction.into_iter().collect();
    hot.sort_by(|a, b| b.1.cycles.cmp(&a.1.cycles).then(a.0.cmp(&b.0)));
    out.push_str("<h2>Thread trace hot spots</h2>\n<div class=\"wide\"><table class=\"sortable matrix\">\n<thead><tr><th>pid</th><th>code object</th><th>address</th><th>instruction</th><th>dispatches or windows</th><th>hits</th><th>cycles</th><th>mean cycles</th><th>stalled</th><th>share</th></tr></thead>\n<tbody>\n");
    for ((pid, code, address), spot) in hot.iter().take(HOT_SPOTS) {
        let share = 100.0 * spot.cycles as f64 / total.max(1) as f64;
        let _ = writeln!(
            out,
            "<tr><td>{pid}</td><td>{code}</td><td>{address:#x}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.0}%</td><td class=\"bar\" style=\"--bar:{share:.1}%\">{share:.1}%</td></tr>",
            escape(&spot.text),
            spot.traced.len(),
            spot.hits,
            spot.cycles,
            spot.cycles as f64 / spot.hits.max(1) as f64,
            100.0 * spot.stall as f64 / spot.cycles.max(1) as f64,
        );
    }
    out.push_str("</tbody>\n</table></div>\n");
}

/// The findings, first: what to fix, each piece of evidence linked to the table or chart
/// that shows it.
fn findings(out: &mut String, findings: &[Finding]) {
    out.push_str("<h2 id=\"findings\">Findings</h2>\n");
    if findings.is_empty() {
        out.push_str("<p>No rule of <code>rocflow analyze</code> found anything.</p>\n");
        return;
    }
    out.push_str("<div class=\"wide\"><table class=\"findings\">\n<thead><tr><th>severity</th><th>rule</th><th>at stake</th><th>finding</th><th>evidence</th><th>advice</th></tr></thead>\n<tbody>\n");
    for f in findings {
        let evidence: String = (f.evidence.iter())
            .map(|e| {
                let anchor = match e {
                    Evidence::Span { .. } => "busy",
                    Evidence::Kernel { .. } | Evidence::Sequence { .. } => "kernels",
                    Evidence::Api { .. } => "api",
                    Evidence::Copy { .. } | Evidence::Stream { .. } => "memory_copies",
                    Evidence::Range { .. } => "markers",
                    Evidence::Counter { .. } | Evidence::Metric { .. } => "counters",
                    Evidence::Rank { .. } => "findings",
                };
                let text = escape(&crate::analyze::evidence(e));
                format!("<li><a href=\"#{anchor}\">{text}</a></li>")
            })
            .collect();
        let _ = writeln!(
            out,
            "<tr class=\"{severity}\"><td>{severity}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td><ul>{evidence}</ul></td><td>{}</td></tr>",
            f.rule,
            crate::analyze::duration(f.at_stake_ns),
            escape(&f.statement),
            escape(f.advice),
            severity = f.severity.name(),
        );
    }
    out.push_str("</tbody>\n</table></div>\n");
}

fn heading(name: &str) -> String {
    match name {
        "api" => "API functions".into(),
        "counters" => "Counters per kernel".into(),
        other => {
            let spaced = other.replace('_', " ");
            let mut chars = spaced.chars();
            chars
                .next()
                .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
        }
    }
}

fn metadata(out: &mut String, page: &Page<'_>, summary: &Summary) {
    out.push_str("<dl class=\"meta\">\n");
    let mut item = |term: &str, value: String| {
        let _ = writeln!(out, "<dt>{term}</dt><dd>{}</dd>", escape(&value));
    };
    if let Some((name, hash)) = page.pipeline {
        item("pipeline", format!("{name} ({hash})"));
    }
    item("rocflow", env!("CARGO_PKG_VERSION").to_owned());
    for (_, stream) in summary.catalog.streams() {
        if let Some(p) = &stream.process {
            item(
                "process",
                format!("{} on {}: {}", p.pid, p.hostname, p.command.join(" ")),
            );
        }
        for agent in stream.agents.iter().filter(|a| a.cu_count > 0) {
            item(
                "agent",
                format!(
                    "{} {} ({}, {} CUs, {} XCCs)",
                    agent.index, agent.product_name, agent.name, agent.cu_count, agent.xcc_count
                ),
            );
        }
    }
    out.push_str("</dl>\n");
}

/// Horizontal bars, one per kernel, longest first.
fn top_kernels_chart(out: &mut String, kernels: &Table) {
    let column = |name: &str| kernels.columns.iter().position(|c| c == name);
    let (Some(kernel), Some(total), Some(share)) =
        (column("kernel"), column("total_ns"), column("percent"))
    else {
        return;
    };
    let rows: Vec<(&str, f64, f64)> = kernels
        .rows
        .iter()
        .take(CHART_KERNELS)
        .map(|r| (text(&r[kernel]), number(&r[total]), number(&r[share])))
        .collect();
    let longest = rows.iter().map(|r| r.1).fold(0.0, f64::max).max(1.0);
    let (label_width, bar_width, row_height) = (430.0, 420.0, 22.0);
    let height = row_height * rows.len() as f64 + 10.0;
    let _ = writeln!(
        out,
        "<figure class=\"chart\" id=\"top-kernels\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {height}\" width=\"100%\" role=\"img\" aria-label=\"Top kernels by GPU time\">",
        label_width + bar_width + 120.0
    );
    for (i, (name, total, share)) in rows.iter().enumerate() {
        let y = 5.0 + i as f64 * row_height;
        let width = bar_width * total / longest;
        let label = short_label(name);
        let _ = writeln!(
            out,
            "<g><title>{}</title><text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"label\">{}</text><rect x=\"{}\" y=\"{y}\" width=\"{width:.1}\" height=\"{}\" class=\"bar\"/><text x=\"{:.1}\" y=\"{}\" class=\"value\">{:.2} ms ({share:.1}%)</text></g>",
            escape(name),
            label_width - 8.0,
            y + 15.0,
            escape(&label),
            label_width,
            row_height - 6.0,
            label_width + width + 6.0,
            y + 15.0,
            total / 1e6,
        );
    }
    out.push_str("</svg></figure>\n");
}

/// A kernel's name cut to [`LABEL_CHARS`] for a chart (the whole name is its tooltip).
fn short_label(name: &str) -> String {
    if name.chars().count() > LABEL_CHARS {
        name.chars().take(LABEL_CHARS - 1).chain(['…']).collect()
    } else {
        name.to_owned()
    }
}

/// The speed-of-light table: per kernel, each metric with a bar for its share of the peak.
fn speed_of_light(out: &mut String, table: &crate::analyze::SpeedOfLightTable) {
    out.push_str("<h2 id=\"speed-of-light\">Speed of light</h2>\n<div class=\"wide\"><table class=\"sortable matrix speed-of-light\">\n<thead><tr><th>kernel</th>");
    for metric in &table.metrics {
        let _ = write!(out, "<th>{}</th>", escape(metric));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        let _ = write!(out, "<tr><td>{}</td>", escape(&row.kernel));
        for (metric, c) in table.metrics.iter().zip(&row.cells) {
            let Some(c) = c else {
                out.push_str("<td class=\"num\" data-value=\"-1\"></td>");
                continue;
            };
            let (bar, percent) = c
                .percent_of_peak
                .map_or((String::new(), String::new()), |p| {
                    (
                        format!(" bar\" style=\"--bar:{:.1}%", p.clamp(0.0, 100.0)),
                        format!(" data-percent-of-peak=\"{p}\""),
                    )
                });
            let _ = write!(
                out,
                "<td class=\"num{bar}\" data-metric=\"{}\" data-value=\"{}\"{percent}>{}</td>",
                escape(metric),
                c.value,
                escape(&c.text()),
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

/// The empirical roofline, log-log: each kernel's arithmetic intensity against its FLOP/s,
/// under the peak compute and bandwidth of its GPU where known (of the first kernel's GPU:
/// a run's kernels share one kind of GPU).
fn roofline_chart(out: &mut String, points: &[crate::analyze::RooflinePoint]) {
    let Some(first) = points.first() else {
        return;
    };
    let (peak_flops, peak_bandwidth) = (first.peak_flops, first.peak_bandwidth);
    let ridge = peak_flops.zip(peak_bandwidth).map(|(f, b)| f / b);
    let decades = |values: &mut dyn Iterator<Item = f64>| {
        let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let (lo, hi) = (lo.log10().floor(), hi.log10().ceil());
        (lo, hi.max(lo + 1.0))
    };
    let (x_lo, x_hi) = decades(&mut points.iter().map(|p| p.intensity).chain(ridge));
    let (y_lo, y_hi) = decades(&mut points.iter().map(|p| p.flops).chain(peak_flops));
    let (left, top, width, height) = (80.0, 10.0, 700.0, 300.0);
    let x = |v: f64| left + width * (v.log10() - x_lo) / (x_hi - x_lo);
    let y = |v: f64| top + height * (y_hi - v.log10()) / (y_hi - y_lo);
    let _ = write!(
        out,
        "<h2 id=\"roofline\">Empirical roofline</h2>\n<figure class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" aria-label=\"Empirical roofline\"><line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"axis\"/><line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{}\" class=\"axis\"/><text x=\"{left}\" y=\"{}\" class=\"value\">1e{x_lo} FLOP/B</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"value\">1e{x_hi} FLOP/B (arithmetic intensity, HBM)</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"value\">1e{y_hi}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"value\">1e{y_lo} FLOP/s</text>",
        left + width + 20.0,
        top + height + 40.0,
        top + height,
        left + width,
        top + height,
        top + height,
        top + height + 18.0,
        left + width,
        top + height + 18.0,
        left - 4.0,
        top + 10.0,
        left - 4.0,
        top + height,
    );
    let x_end = ridge.unwrap_or(10f64.powf(x_hi));
    if let Some(bandwidth) = peak_bandwidth {
        let x_start = 10f64.powf(x_lo).max(10f64.powf(y_lo) / bandwidth);
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" class=\"series ceiling\" data-peak-bandwidth=\"{bandwidth}\"><title>peak HBM bandwidth {bandwidth:.3e} B/s</title></line>",
            x(x_start),
            y(bandwidth * x_start),
            x(x_end),
            y(bandwidth * x_end),
        );
    }
    if let Some(flops) = peak_flops {
        let from = if peak_bandwidth.is_some() {
            x_end
        } else {
            10f64.powf(x_lo)
        };
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" class=\"series ceiling\" data-peak-flops=\"{flops}\"><title>peak VALU {flops:.3e} FLOP/s</title></line>",
            x(from),
            y(flops),
            left + width,
            y(flops),
        );
    }
    for p in points {
        // A label beside its point, on the side with room.
        let (anchor, dx) = if x(p.intensity) > left + width / 2.0 {
            ("end", -8.0)
        } else {
            ("start", 8.0)
        };
        let _ = write!(
            out,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\" class=\"bar roofline-point\" data-kernel=\"{}\" data-intensity=\"{}\" data-flops=\"{}\"><title>{}: {:.3} FLOP/B, {:.3e} FLOP/s</title></circle><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\" class=\"value\">{}</text>",
            x(p.intensity),
            y(p.flops),
            escape(&p.kernel),
            p.intensity,
            p.flops,
            escape(&p.kernel),
            p.intensity,
            p.flops,
            x(p.intensity) + dx,
            y(p.flops) + 4.0,
            escape(&short_label(&p.kernel)),
        );
    }
    out.push_str("</svg>");
    if peak_bandwidth.is_none() {
        out.push_str("<figcaption>No bandwidth ceiling: the agent record carries no memory clock or bus width; <code>rocflow analyze --set speed-of-light.hbm_peak_gbps=N</code> takes it.</figcaption>");
    }
    out.push_str("</figure>\n");
}

/// Per agent, the share of each time bucket its kernels kept it busy.
fn busy_chart(out: &mut String, summary: &Summary) {
    let (width_ns, agents) = summary.timeline.fractions();
    if agents.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"busy\">GPU busy over time</h2>\n");
    let (plot_width, plot_height, left) = (840.0, 80.0, 150.0);
    for ((stream, agent), fractions) in agents {
        let meta = summary.catalog.stream(stream);
        let name = meta.agents.iter().find(|a| a.index == agent).map_or_else(
            || format!("agent {agent}"),
            |a| format!("agent {agent} {}", a.name),
        );
        let pid = meta.process.as_ref().map_or(0, |p| p.pid);
        let span_ms = fractions.len() as f64 * width_ns as f64 / 1e6;
        let step = plot_width / fractions.len().max(1) as f64;
        let mut points = format!("{left},{plot_height}");
        for (i, f) in fractions.iter().enumerate() {
            let y = plot_height * (1.0 - f);
            let _ = write!(
                points,
                " {:.1},{y:.1} {:.1},{y:.1}",
                left + i as f64 * step,
                left + (i + 1) as f64 * step
            );
        }
        let _ = write!(points, " {},{plot_height}", left + plot_width);
        let mean = fractions.iter().sum::<f64>() / fractions.len().max(1) as f64;
        let _ = writeln!(
            out,
            "<figure class=\"chart busy\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" aria-label=\"GPU busy, {}\"><text x=\"0\" y=\"20\" class=\"label-left\">pid {pid}</text><text x=\"0\" y=\"38\" class=\"label-left\">{}</text><text x=\"0\" y=\"56\" class=\"value\">{:.0}% busy</text><polygon points=\"{points}\" class=\"area\"/><line x1=\"{left}\" y1=\"{plot_height}\" x2=\"{}\" y2=\"{plot_height}\" class=\"axis\"/><text x=\"{left}\" y=\"{}\" class=\"value\">0 ms</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"value\">{span_ms:.1} ms</text></svg></figure>",
            left + plot_width + 10.0,
            plot_height + 18.0,
            escape(&name),
            escape(&name),
            mean * 100.0,
            left + plot_width,
            plot_height + 14.0,
            left + plot_width,
            plot_height + 14.0,
        );
    }
}

/// Per GPU and device counter, its reads over the run (the instances summed), below the
/// GPU's busy time: a line through the reads, each a point whose tooltip has its time and
/// value. The value axis starts at 0; the time axis runs from the GPU's first read to its
/// last, in ms from the first.
fn device_counter_charts(out: &mut String, summary: &Summary) {
    let mut series = summary.device.series().peekable();
    if series.peek().is_none() {
        return;
    }
    out.push_str("<h2>Device counters over time</h2>\n");
    let (plot_width, plot_height, left) = (840.0, 80.0, 150.0);
    for (((stream, agent), counter), reads) in series {
        let meta = summary.catalog.stream(stream);
        let gpu = meta.agents.iter().find(|a| a.index == agent).map_or_else(
            || format!("agent {agent}"),
            |a| format!("agent {agent} {}", a.name),
        );
        let counter = meta.counter_name(counter);
        let pid = meta.process.as_ref().map_or(0, |p| p.pid);
        let (Some((&first, _)), Some((&last, _))) =
            (reads.first_key_value(), reads.last_key_value())
        else {
            continue;
        };
        let span = (last - first).max(1) as f64;
        let top = reads.values().copied().fold(0.0, f64::max);
        let scale = if top > 0.0 { plot_height / top } else { 0.0 };
        let (mut line, mut points) = (String::new(), String::new());
        for (&time, &value) in reads {
            let x = left + plot_width * (time - first) as f64 / span;
            let y = plot_height - value * scale;
            let _ = write!(line, "{x:.1},{y:.1} ");
            let _ = write!(
                points,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2\" class=\"point\" data-ns=\"{time}\" data-value=\"{value}\"><title>{:.3} ms: {}</title></circle>",
                (time - first) as f64 / 1e6,
                value
            );
        }
        let _ = writeln!(
            out,
            "<figure class=\"chart device\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" aria-label=\"{}, {}\"><text x=\"0\" y=\"20\" class=\"label-left\">pid {pid}</text><text x=\"0\" y=\"38\" class=\"label-left\">{}</text><text x=\"0\" y=\"56\" class=\"value\">{}</text><polyline points=\"{}\" class=\"series\"/>{points}<line x1=\"{left}\" y1=\"{plot_height}\" x2=\"{}\" y2=\"{plot_height}\" class=\"axis\"/><text x=\"{left}\" y=\"{}\" class=\"value\">0 ms</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"value\">{:.1} ms, up to {}</text></svg></figure>",
            left + plot_width + 10.0,
            plot_height + 18.0,
            escape(counter),
            escape(&gpu),
            escape(&gpu),
            escape(counter),
            line.trim_end(),
            left + plot_width,
            plot_height + 14.0,
            left + plot_width,
            plot_height + 14.0,
            (last - first) as f64 / 1e6,
            top,
        );
    }
}

/// Kernels down, counters across: each counter's mean value per dispatch of the kernel,
/// over a bar as long as its share of the largest mean of that counter (counters differ in
/// unit and scale, so each is measured against itself). A cell's tooltip has its
/// dispatches, total and share of the counter's total.
fn counter_matrix(out: &mut String, table: &Table) {
    let column = |name: &str| table.columns.iter().position(|c| c == name);
    let (Some(kernel), Some(counter), Some(dispatches), Some(total), Some(share), Some(mean)) = (
        column("kernel"),
        column("counter"),
        column("dispatches"),
        column("total_value"),
        column("percent"),
        column("mean_value"),
    ) else {
        return;
    };
    // One pass over the rows: a cell by kernel and counter, each counter's largest mean.
    let (mut kernels, mut seen) = (Vec::new(), FxHashSet::default());
    let mut cells: FxHashMap<(&str, &str), &Vec<Value>> = FxHashMap::default();
    let mut largest: BTreeMap<&str, f64> = BTreeMap::new();
    for row in &table.rows {
        let (k, c) = (text(&row[kernel]), text(&row[counter]));
        if seen.insert(k) {
            kernels.push(k);
        }
        cells.entry((k, c)).or_insert(row);
        let most = largest.entry(c).or_insert(0.0);
        *most = most.max(number(&row[mean]));
    }
    let counters: Vec<&str> = largest.keys().copied().collect();
    let largest: Vec<f64> = largest.into_values().collect();
    out.push_str(
        "<div class=\"wide\"><table class=\"sortable matrix\">\n<thead><tr><th>kernel</th>",
    );
    for name in &counters {
        let _ = write!(out, "<th title=\"mean per dispatch\">{}</th>", escape(name));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    // Kernels in the table's order: the largest counter total first.
    for name in &kernels {
        let _ = write!(out, "<tr><td title=\"{0}\">{0}</td>", escape(name));
        for (c, counter_name) in counters.iter().enumerate() {
            let Some(row) = cells.get(&(*name, *counter_name)) else {
                out.push_str("<td class=\"num\" data-value=\"-1\"></td>");
                continue;
            };
            let value = number(&row[mean]);
            let width = if largest[c] > 0.0 {
                100.0 * value / largest[c]
            } else {
                0.0
            };
            let _ = write!(
                out,
                "<td class=\"num bar\" data-value=\"{value}\" style=\"--bar:{width:.1}%\" title=\"{} dispatches, total {}, {:.1}% of the counter's total\">{}</td>",
                cell(&row[dispatches]),
                cell(&row[total]),
                number(&row[share]),
                cell(&row[mean])
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

fn html_table(out: &mut String, table: &Table) {
    out.push_str("<div class=\"wide\"><table class=\"sortable\">\n<thead><tr>");
    for column in &table.columns {
        let _ = write!(out, "<th>{}</th>", escape(column));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        out.push_str("<tr>");
        for value in row {
            match value {
                Value::String(s) => {
                    let _ = write!(out, "<td>{}</td>", escape(s));
                }
                other => {
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-value=\"{}\">{}</td>",
                        number(other),
                        cell(other)
                    );
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

fn outputs(out: &mut String, page: &Page<'_>, dir: &Path) {
    if page.outputs.is_empty() {
        return;
    }
    out.push_str("<h2>Outputs</h2>\n<ul class=\"outputs\">\n");
    for (name, path) in page.outputs {
        let link = relative(path, dir);
        let _ = writeln!(
            out,
            "<li>{}: <a href=\"{}\">{}</a></li>",
            escape(name),
            escape(&link),
            escape(&path.display().to_string())
        );
    }
    out.push_str("</ul>\n");
}

/// A link to `path` from a page in `base`: the way from one to the other (both taken
/// from the working directory when relative), with what a URL cannot hold as it is
/// percent-encoded.
fn relative(path: &Path, base: &Path) -> String {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (path, base) = (absolute(path), absolute(base));
    let (mut to, mut from) = (path.components().peekable(), base.components().peekable());
    while let (Some(a), Some(b)) = (to.peek(), from.peek()) {
        if a != b {
            break;
        }
        to.next();
        from.next();
    }
    let up = from.map(|_| "..".to_owned());
    let down = to.map(|c| c.as_os_str().to_string_lossy().into_owned());
    let link: Vec<String> = up.chain(down).collect();
    if link.is_empty() {
        return ".".into();
    }
    let mut out = String::new();
    for (i, part) in link.iter().enumerate() {
        if i > 0 {
            out.push('/');
        }
        for byte in part.bytes() {
            match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    out.push(byte as char)
                }
                other => {
                    let _ = write!(out, "%{other:02X}");
                }
            }
        }
    }
    out
}

fn text(value: &Value) -> &str {
    match value {
        Value::String(s) => s,
        _ => "",
    }
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #1d2330; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #d8dce5; padding-bottom: .2em; }
p.partial { background: #fdecea; border-left: 4px solid #c8102e; padding: .5em 1em; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; }
dl.meta dt { color: #5a6272; }
dl.meta dd { margin: 0; }
figure.chart { margin: .5em 0; }
svg .bar { fill: #c8102e; }
svg .area { fill: #e8707f; stroke: #c8102e; stroke-width: .6; }
svg .axis { stroke: #5a6272; stroke-width: 1; }
svg .series { fill: none; stroke: #c8102e; stroke-width: 1.2; }
svg .point { fill: #c8102e; }
svg text { font: 12px system-ui, sans-serif; fill: #1d2330; }
svg .value { fill: #5a6272; }
div.wide { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; width: 100%; font-size: 12.5px; }
table.matrix td.bar { background: linear-gradient(to right, #f3c4cb var(--bar), transparent var(--bar)); }
details > summary { cursor: pointer; color: #5a6272; margin: .6em 0; }
th, td { padding: 3px 8px; border-bottom: 1px solid #eceef3; text-align: left; }
td { max-width: 480px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
/* A finding is read, not scanned: its sentences wrap. */
table.findings td { white-space: normal; min-width: 8em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f4f5f8; cursor: pointer; user-select: none; position: sticky; top: 0; }
th[aria-sort="ascending"]::after { content: " ▲"; }
th[aria-sort="descending"]::after { content: " ▼"; }
tr:hover td { background: #fbf3f4; }
"#;

/// Sorting by a column on a click, and marks of the page's laid-out width and of each
/// chart's rendered size (which tests read to know the page was laid out).
const SCRIPT: &str = r#"
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, column) {
    th.addEventListener("click", function () {
      var descending = th.getAttribute("aria-sort") !== "descending";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column], y = b.cells[column];
        var order = x.dataset.value !== undefined
          ? parseFloat(x.dataset.value) - parseFloat(y.dataset.value)
          : x.textContent.localeCompare(y.textContent);
        return descending ? -order : order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
  table.dataset.sortable = "ready";
});
document.body.dataset.scrollWidth = document.documentElement.scrollWidth;
document.querySelectorAll("figure.chart").forEach(function (figure) {
  var box = figure.querySelector("svg").getBoundingClientRect();
  figure.dataset.rendered = Math.round(box.width) + "x" + Math.round(box.height);
});
"#;
