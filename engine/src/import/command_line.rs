//! rocprofv3's command line as a job: each option given is the job key it names
//! (`--kernel-trace` is `kernel_trace`), in a mapping whose places point into the command
//! line. The same reader as an input file's jobs reads it, so an option and a key mean one
//! thing, and it is merged into each job of an input file as rocprofv3 merges them: the
//! command line fills in what a job leaves unset, and the two may not disagree.

use std::ops::Range;
use std::sync::Arc;

use rocflow_counters::yaml::{Node, Scalar, Value};

use crate::diag::{Diagnostic, SourceFile, Span};

/// How an option takes its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A boolean: alone it is true; `--hsa-trace=no` sets it false.
    Flag,
    /// One value.
    One,
    /// A list of values.
    Many,
}

/// The options given, as written, and the job they make.
#[derive(Debug, Default)]
pub struct CommandLine {
    text: String,
    entries: Vec<(Node, Node)>,
}

impl CommandLine {
    /// Adds an option written as `flag` with its `values`, for the job key `key`.
    pub fn add(&mut self, flag: &str, key: &str, shape: Shape, values: &[String]) {
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        let start = self.text.len();
        self.text.push_str(flag);
        let flag_range = start..self.text.len();
        let mut nodes = Vec::new();
        for (i, value) in values.iter().enumerate() {
            // A flag's value is joined to it (`--hsa-trace=no`), as it must be written.
            self.text.push(if shape == Shape::Flag && i == 0 {
                '='
            } else {
                ' '
            });
            let start = self.text.len();
            self.text.push_str(value);
            nodes.push(scalar(value, start..self.text.len()));
        }
        let value = match (shape, nodes.len()) {
            (Shape::Flag, 0) => scalar("true", flag_range.clone()),
            (Shape::Many, _) => {
                let span = match (nodes.first(), nodes.last()) {
                    (Some(first), Some(last)) => first.span.start..last.span.end,
                    _ => flag_range.end..flag_range.end,
                };
                node(Value::Sequence(nodes), span)
            }
            _ => nodes.swap_remove(0),
        };
        self.entries.push((scalar(key, flag_range), value));
    }

    /// The command line as a file diagnostics point into, and its job.
    pub fn finish(self) -> (Arc<SourceFile>, Node) {
        let span = 0..self.text.len();
        let file = SourceFile::new("command line", self.text);
        (file, node(Value::Mapping(self.entries), span))
    }
}

/// Where a job's places point: into its input file, or into the command line whose options
/// were merged into it. The command line's places are counted after the file's text, so one
/// range tells both apart.
#[derive(Debug, Clone)]
pub struct Origin {
    file: Arc<SourceFile>,
    command_line: Option<Arc<SourceFile>>,
}

impl Origin {
    /// A job from one file (or from the command line alone).
    pub fn file(file: Arc<SourceFile>) -> Origin {
        Origin {
            file,
            command_line: None,
        }
    }

    /// The file jobs were read from, for names and descriptions.
    pub fn source(&self) -> &Arc<SourceFile> {
        &self.file
    }

    fn base(&self) -> usize {
        self.file.text().len() + 1
    }

    /// The place `range` points to.
    pub fn span(&self, range: Range<usize>) -> Span {
        match &self.command_line {
            Some(line) if range.start >= self.base() => {
                let base = self.base();
                Span::new(line, range.start - base..range.end - base)
            }
            _ => Span::new(&self.file, range),
        }
    }

    /// Merges the command line's job into each of the input's `jobs`, and returns where
    /// their places point.
    pub fn merge(
        file: Arc<SourceFile>,
        jobs: &mut [Node],
        line: Arc<SourceFile>,
        options: &Node,
    ) -> Result<Origin, Vec<Diagnostic>> {
        let origin = Origin {
            file,
            command_line: Some(line),
        };
        let mut options = options.clone();
        shift(&mut options, origin.base());
        let Value::Mapping(options) = options.value else {
            unreachable!("the command line is a mapping")
        };
        let mut errors = Vec::new();
        for job in jobs {
            let Value::Mapping(entries) = &mut job.value else {
                // The reader says what a job must be.
                continue;
            };
            for (key, value) in &options {
                let given = entries.iter().find(|(k, _)| same_key(k, key));
                match given {
                    Some((_, set)) if !same(set, value) => errors.push(
                        Diagnostic::error(format!(
                            "the input sets `{}` to `{}`, the command line to `{}`",
                            key_of(key).unwrap_or_default(),
                            origin.span(set.span.clone()).snippet(),
                            origin.span(value.span.clone()).snippet(),
                        ))
                        .at(Some(origin.span(key.span.start..value.span.end)))
                        .note(format!(
                            "the input sets it at {}",
                            origin.span(set.span.clone()).position()
                        ))
                        .hint("rocprofv3 refuses this too: set each option in one place"),
                    ),
                    Some(_) => {}
                    None => entries.push((key.clone(), value.clone())),
                }
            }
        }
        match errors.is_empty() {
            true => Ok(origin),
            false => Err(errors),
        }
    }
}

fn node(value: Value, span: Range<usize>) -> Node {
    Node {
        value,
        span,
        comments: Vec::new(),
    }
}

fn scalar(text: &str, span: Range<usize>) -> Node {
    let value = Value::Scalar(Scalar {
        text: text.to_owned(),
        plain: true,
    });
    node(value, span)
}

fn key_of(node: &Node) -> Option<&str> {
    match &node.value {
        Value::Scalar(s) => Some(&s.text),
        _ => None,
    }
}

/// Keys are the same whichever way they are spelled (`output-file`, `output_file`).
fn same_key(a: &Node, b: &Node) -> bool {
    let norm = |n: &Node| key_of(n).map(|k| k.replace('-', "_"));
    norm(a).is_some_and(|k| Some(k) == norm(b))
}

/// Whether two values say the same, wherever they were written.
fn same(a: &Node, b: &Node) -> bool {
    match (&a.value, &b.value) {
        (Value::Scalar(a), Value::Scalar(b)) => a.text == b.text,
        (Value::Sequence(a), Value::Sequence(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
        }
        // One value where a list of one is expected.
        (Value::Sequence(list), Value::Scalar(_)) => list.len() == 1 && same(&list[0], b),
        (Value::Scalar(_), Value::Sequence(list)) => list.len() == 1 && same(a, &list[0]),
        (Value::Mapping(a), Value::Mapping(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(a, b)| same(&a.0, &b.0) && same(&a.1, &b.1))
        }
        _ => false,
    }
}

fn shift(node: &mut Node, by: usize) {
    node.span = node.span.start + by..node.span.end + by;
    match &mut node.value {
        Value::Scalar(_) => {}
        Value::Sequence(items) => items.iter_mut().for_each(|n| shift(n, by)),
        Value::Mapping(entries) => entries.iter_mut().for_each(|(k, v)| {
            shift(k, by);
            shift(v, by);
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line() -> CommandLine {
        let mut line = CommandLine::default();
        line.add("--sys-trace", "sys_trace", Shape::Flag, &[]);
        line.add("--hsa-trace", "hsa_trace", Shape::Flag, &["no".into()]);
        line.add(
            "-f",
            "output_format",
            Shape::Many,
            &["csv".into(), "rocpd".into()],
        );
        line.add("-o", "output_file", Shape::One, &["out".into()]);
        line
    }

    #[test]
    fn options_are_written_back_as_given_and_point_there() {
        let (file, job) = line().finish();
        assert_eq!(
            file.text(),
            "--sys-trace --hsa-trace=no -f csv rocpd -o out"
        );
        let Value::Mapping(entries) = job.value else {
            panic!("a mapping")
        };
        let places: Vec<&str> = (entries.iter())
            .map(|(k, v)| &file.text()[k.span.start..v.span.end])
            .collect();
        assert_eq!(
            places,
            ["--sys-trace", "--hsa-trace=no", "-f csv rocpd", "-o out"]
        );
    }

    #[test]
    fn the_command_line_fills_in_a_job_and_may_not_contradict_it() {
        let input = SourceFile::new("in.yaml", "jobs:\n  - output_file: out\n");
        let (line_file, options) = line().finish();
        let job = |entries: Vec<(Node, Node)>| node(Value::Mapping(entries), 8..27);
        let given = (scalar("output_file", 10..21), scalar("out", 23..26));
        let mut jobs = vec![job(vec![given.clone()])];
        let origin = Origin::merge(input.clone(), &mut jobs, line_file.clone(), &options).unwrap();
        let Value::Mapping(entries) = &jobs[0].value else {
            panic!("a mapping")
        };
        assert_eq!(entries.len(), 4, "output_file is not added twice");
        assert_eq!(
            origin.span(entries[2].0.span.clone()).snippet(),
            "--hsa-trace"
        );
        assert_eq!(origin.span(entries[0].1.span.clone()).snippet(), "out");

        let input = SourceFile::new("in.yaml", "jobs:\n  - output-file: other\n");
        let other = (scalar("output-file", 10..21), scalar("other", 23..28));
        let mut jobs = vec![job(vec![other])];
        let errors = Origin::merge(input, &mut jobs, line_file, &options).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].to_string().contains("command line:1:"),
            "{}",
            errors[0]
        );
    }
}
