//! The lines of rocprofv3's files and its number formats: texts quoted, numbers as its
//! C++ stream manipulators write them.

use std::fmt;
use std::io::Write;

use crate::catalog::StreamMeta;
use crate::cformat::scientific;
use crate::plan::sink::csv::AgentIndex;
use crate::record::Agent;
use crate::sdk::AgentType;
use crate::sink::csv::push_int;

/// A line of a rocprofv3 CSV file being formatted.
#[derive(Default)]
pub struct Line {
    bytes: Vec<u8>,
}

impl Line {
    fn separate(&mut self) {
        if !self.bytes.is_empty() {
            self.bytes.push(b',');
        }
    }

    /// A text, quoted.
    pub fn text(&mut self, s: &str) -> &mut Line {
        self.quoted(format_args!("{s}"))
    }

    /// A formatted text, quoted: written straight into the line, with no `String` per
    /// record.
    pub fn quoted(&mut self, text: fmt::Arguments) -> &mut Line {
        self.separate();
        self.bytes.push(b'"');
        let start = self.bytes.len();
        self.bytes
            .write_fmt(text)
            .expect("writing to a Vec cannot fail");
        // Quotes inside are doubled; rare, so the text is copied only when it has one.
        if self.bytes[start..].contains(&b'"') {
            let raw = self.bytes.split_off(start);
            for byte in raw {
                if byte == b'"' {
                    self.bytes.push(b'"');
                }
                self.bytes.push(byte);
            }
        }
        self.bytes.push(b'"');
        self
    }

    /// A whole number.
    pub fn int(&mut self, v: impl Into<i128>) -> &mut Line {
        self.separate();
        let v: i128 = v.into();
        match i64::try_from(v) {
            Ok(v) => push_int(&mut self.bytes, v),
            Err(_) => self.bytes.extend_from_slice(v.to_string().as_bytes()),
        }
        self
    }

    /// A fractional number of a trace (a counter value), as rocprofv3's
    /// `numerical_formatter` writes it: six decimals from 1 up, eight significant
    /// digits in scientific notation below.
    pub fn float(&mut self, v: f64) -> &mut Line {
        self.fraction(v, v >= 1.0, 6, 8)
    }

    /// A mean or standard deviation of a statistics file, as rocprofv3's
    /// `stats_formatter` writes it: six decimals above 0.01, scientific below.
    pub fn stat(&mut self, v: f64) -> &mut Line {
        self.fraction(v, v > 0.01, 6, 8)
    }

    /// A percentage of a statistics file: two decimals from 1 up, four above 0.01,
    /// three significant digits in scientific notation below.
    pub fn percent(&mut self, v: f64) -> &mut Line {
        if v >= 1.0 {
            self.fraction(v, true, 2, 0)
        } else {
            self.fraction(v, v > 0.01, 4, 3)
        }
    }

    /// `v` with `decimals` decimals where `fixed`, else in scientific notation with
    /// `digits` decimals: C++'s `std::fixed` and `std::scientific`.
    fn fraction(&mut self, v: f64, fixed: bool, decimals: usize, digits: usize) -> &mut Line {
        self.separate();
        let text = if !v.is_finite() {
            not_finite(v).to_owned()
        } else if fixed {
            format!("{v:.decimals$}")
        } else {
            scientific(v, digits)
        };
        self.bytes.extend_from_slice(text.as_bytes());
        self
    }

    /// An agent as rocprofv3's columns name it in the `form` its `--agent-index` says:
    /// `"Agent 2"` by node id or logical node id, `"GPU 0"` by its index among the agents
    /// of its type. An agent the process did not describe goes by rocflow's index.
    pub fn agent(&mut self, meta: &StreamMeta, index: u32, form: AgentIndex) -> &mut Line {
        let agent = meta.agents.iter().find(|a| a.index == index);
        let (label, number) = match (agent, form) {
            (None, _) => ("Agent", index),
            (Some(a), AgentIndex::Absolute) => ("Agent", a.node_id),
            (Some(a), AgentIndex::Relative) => ("Agent", a.logical_node_id),
            (Some(a), AgentIndex::TypeRelative) => {
                let label = match a.agent_type {
                    AgentType::Cpu => "CPU",
                    AgentType::Gpu => "GPU",
                };
                (label, type_index(meta, a))
            }
        };
        self.separate();
        self.bytes.push(b'"');
        self.bytes.extend_from_slice(label.as_bytes());
        self.bytes.push(b' ');
        push_int(&mut self.bytes, number.into());
        self.bytes.push(b'"');
        self
    }

    /// Ends the line, appending it to `out`.
    pub fn end(&mut self, out: &mut Vec<u8>) {
        self.bytes.push(b'\n');
        out.extend_from_slice(&self.bytes);
        self.bytes.clear();
    }
}

/// A number that is not finite as C++'s streams write it: a percentage of a total of 0 ns
/// (every call of a table took no time) is `0/0`.
fn not_finite(v: f64) -> &'static str {
    match (v.is_nan(), v.is_sign_negative()) {
        (true, false) => "nan",
        (true, true) => "-nan",
        (false, false) => "inf",
        (false, true) => "-inf",
    }
}

/// The index of `agent` among the agents of its type that its process sees, in the
/// order of rocflow's indices (the SDK's): the SDK's `logical_node_type_id`.
/// A stream's agents have an index each, so counting them needs no set: nothing is
/// allocated per row.
pub(super) fn type_index(meta: &StreamMeta, agent: &Agent) -> u32 {
    let below = (meta.agents.iter())
        .filter(|b| b.agent_type == agent.agent_type && b.index < agent.index)
        .count();
    below as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_formatted_as_rocprofv3s_stream_manipulators_do() {
        let mut line = Line::default();
        line.float(6144.0)
            .float(0.5)
            .float(0.0)
            .stat(1234.5)
            .stat(0.001)
            .percent(45.678)
            .percent(0.5)
            .percent(0.001)
            .text("a \"b\"")
            .quoted(format_args!("0x{:016x}", 0xabc_u64))
            .quoted(format_args!("{}\"", "c"))
            .int(u64::MAX);
        let mut out = Vec::new();
        line.end(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "6144.000000,5.00000000e-01,0.00000000e+00,1234.500000,1.00000000e-03,\
             45.68,0.5000,1.000e-03,\"a \"\"b\"\"\",\"0x0000000000000abc\",\"c\"\"\",18446744073709551615\n"
        );
        assert_eq!(scientific(1.5e-120, 3), "1.500e-120");
        let mut line = Line::default();
        line.percent(f64::NAN).stat(-f64::NAN).float(f64::INFINITY);
        let mut out = Vec::new();
        line.end(&mut out);
        assert_eq!(String::from_utf8(out).unwrap(), "nan,-nan,inf\n");
    }
}
