//! rocprofv3's text input: one `pmc: COUNTER …` line per pass (counters apart by spaces or
//! commas), `#` starting a comment. Each line is read as a job that collects its counters:
//! a mapping `pmc: [COUNTER, …]` pointing at the line, read as the jobs of YAML files are.

use std::ops::Range;
use std::sync::Arc;

use rocflow_counters::yaml::{Node, Scalar, Value};

use super::pmc::counter_names;
use crate::diag::{Diagnostic, SourceFile, Span};

/// Keys of rocprof's (v1) text files that rocprofv3 skips.
const ROCPROF_V1_KEYS: &[&str] = &["gpu:", "range:", "kernel:"];

/// The passes of a text file, and warnings about lines that are skipped.
pub fn parse(file: &Arc<SourceFile>) -> Result<(Vec<Node>, Vec<Diagnostic>), Vec<Diagnostic>> {
    let mut passes = Vec::new();
    let mut warnings = Vec::new();
    let mut errors = Vec::new();
    let mut offset = 0;
    for line in file.text().split_inclusive('\n') {
        let code = line.split('#').next().unwrap_or_default();
        let start = offset + (code.len() - code.trim_start().len());
        let trimmed = code.trim();
        let span: Range<usize> = start..start + trimmed.len();
        offset += line.len();
        if trimmed.is_empty() {
            continue;
        }
        let at = Some(Span::new(file, span.clone()));
        if let Some(list) = trimmed.strip_prefix("pmc:") {
            let node = |value| Node {
                value,
                span: span.clone(),
                comments: Vec::new(),
            };
            let text = |text: &str| {
                let plain = true;
                node(Value::Scalar(Scalar {
                    text: text.to_owned(),
                    plain,
                }))
            };
            let counters: Vec<Node> = counter_names(list).map(text).collect();
            if counters.is_empty() {
                errors.push(Diagnostic::error("this `pmc:` line names no counters").at(at));
                continue;
            }
            let pmc = (text("pmc"), node(Value::Sequence(counters)));
            passes.push(node(Value::Mapping(vec![pmc])));
        } else if let Some(key) = ROCPROF_V1_KEYS.iter().find(|k| trimmed.starts_with(**k)) {
            warnings.push(
                Diagnostic::warning(format!(
                    "`{key}` lines are rocprof's (v1); rocprofv3 skips them, and so does the conversion"
                ))
                .at(at),
            );
        } else {
            errors.push(
                Diagnostic::error("expected `pmc: COUNTER …`")
                    .at(at)
                    .hint("rocprofv3's text input has one `pmc:` line per pass, and `#` comments"),
            );
        }
    }
    if passes.is_empty() && errors.is_empty() {
        errors.push(
            Diagnostic::error(format!("`{}` has no `pmc:` line", file.name()))
                .hint("write one `pmc: COUNTER …` line per pass"),
        );
    }
    if errors.is_empty() {
        Ok((passes, warnings))
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::input::Job;

    #[test]
    fn each_pmc_line_is_a_pass() {
        let file = SourceFile::new(
            "in.txt",
            "# counters\npmc: SQ_WAVES GRBM_COUNT  # two\n\n  pmc:TCC_HIT,TCC_MISS\ngpu: 0\n",
        );
        let (passes, warnings) = parse(&file).unwrap();
        let jobs: Vec<Job> = (passes.iter())
            .map(|p| crate::import::de::from_node(p).unwrap())
            .collect();
        let counters: Vec<&[String]> = (jobs.iter())
            .map(|j| j.pmc.as_ref().unwrap().value.as_slice())
            .collect();
        assert_eq!(
            counters,
            [
                &["SQ_WAVES", "GRBM_COUNT"][..],
                &["TCC_HIT", "TCC_MISS"][..]
            ]
        );
        assert_eq!(&file.text()[passes[1].span.clone()], "pmc:TCC_HIT,TCC_MISS");
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].position().as_deref(), Some("in.txt:5:1"));
    }

    #[test]
    fn other_lines_are_errors_with_their_position() {
        let file = SourceFile::new("in.txt", "pmc: A\npmc B\npmc:\n");
        let errors = parse(&file).unwrap_err();
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "in.txt:2:1: expected `pmc: COUNTER …` (hint: rocprofv3's text input has one `pmc:` line per pass, and `#` comments)",
                "in.txt:3:1: this `pmc:` line names no counters",
            ]
        );
        let empty = SourceFile::new("e.txt", "# nothing\n");
        assert!(
            parse(&empty).unwrap_err()[0]
                .message
                .contains("has no `pmc:` line")
        );
    }
}
