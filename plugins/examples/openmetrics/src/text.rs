//! The OpenMetrics text format (<https://openmetrics.io>), as far as counters need it: a
//! metric family is its `# TYPE`, `# UNIT` and `# HELP` lines, then one `NAME_total{…}
//! VALUE` line per series; the exposition ends with `# EOF`.

use std::fmt::Write as _;

/// A counter family and its series.
pub struct Counter<'a> {
    /// The family's name, without `_total`; with a unit, it ends in `_UNIT`.
    pub name: &'static str,
    pub unit: Option<&'static str>,
    pub help: &'static str,
    /// Each series' labels (name, value) and value.
    pub series: Vec<(Vec<(&'a str, &'a str)>, Value)>,
}

/// A sample's value: counts stay integers.
#[derive(Debug, Clone, Copy)]
pub enum Value {
    Count(u64),
    Real(f64),
}

/// The exposition of `counters`; families without series are left out.
pub fn exposition(counters: &[Counter<'_>]) -> String {
    let mut out = String::new();
    for counter in counters.iter().filter(|c| !c.series.is_empty()) {
        let name = counter.name;
        let _ = writeln!(out, "# TYPE {name} counter");
        if let Some(unit) = counter.unit {
            let _ = writeln!(out, "# UNIT {name} {unit}");
        }
        let _ = writeln!(out, "# HELP {name} {}", escape(counter.help, false));
        for (labels, value) in &counter.series {
            let _ = write!(out, "{name}_total");
            if !labels.is_empty() {
                let labels: Vec<String> = labels
                    .iter()
                    .map(|(label, value)| format!("{label}=\"{}\"", escape(value, true)))
                    .collect();
                let _ = write!(out, "{{{}}}", labels.join(","));
            }
            let _ = match value {
                Value::Count(n) => writeln!(out, " {n}"),
                Value::Real(x) => writeln!(out, " {x}"),
            };
        }
    }
    out.push_str("# EOF\n");
    out
}

/// Escapes a label value (backslash, quote, line feed) or help text (backslash, line feed).
fn escape(text: &str, quote: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if quote => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// Whether `name` is a valid label name (and not one reserved for the format's use).
pub fn valid_label(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with("__")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_expose_type_unit_help_and_escaped_series() {
        let counters = [
            Counter {
                name: "x_duration_seconds",
                unit: Some("seconds"),
                help: "Time.",
                series: vec![(vec![("kernel", "f<\"a\\b\">\n")], Value::Real(0.5))],
            },
            Counter {
                name: "x_calls",
                unit: None,
                help: "Calls.",
                series: vec![],
            },
            Counter {
                name: "x_dispatches",
                unit: None,
                help: "Dispatches.",
                series: vec![(vec![], Value::Count(3))],
            },
        ];
        assert_eq!(
            exposition(&counters),
            "# TYPE x_duration_seconds counter\n\
             # UNIT x_duration_seconds seconds\n\
             # HELP x_duration_seconds Time.\n\
             x_duration_seconds_total{kernel=\"f<\\\"a\\\\b\\\">\\n\"} 0.5\n\
             # TYPE x_dispatches counter\n\
             # HELP x_dispatches Dispatches.\n\
             x_dispatches_total 3\n\
             # EOF\n"
        );
    }

    #[test]
    fn label_names() {
        assert!(valid_label("job") && valid_label("_x1"));
        assert!(
            !valid_label("1x") && !valid_label("a-b") && !valid_label("__x") && !valid_label("")
        );
    }
}
