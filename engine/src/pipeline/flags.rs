//! Command-line flags that set a pipeline key, as if the pipeline said it: `rocflow run`,
//! `replay` and `explain` compile the same pipeline from a flag as from the file, and a
//! flag that contradicts the file is an error naming both.

use crate::diag::{Diagnostic, SourceFile, Span};
use crate::kernel_names::KernelNames;

use super::value::{Entry, Node, Table, Value};

/// `--kernel-names FORM`: sets `[pipeline] kernel_names`.
pub fn kernel_names(doc: &mut Node, form: KernelNames) -> Result<(), Diagnostic> {
    let flag = format!("--kernel-names {form}");
    let file = SourceFile::new("command line", &flag);
    let span = Span::new(&file, 0..flag.len());
    let node = |value| Node {
        value,
        span: span.clone(),
    };
    // A document or header that is not a table is the schema's to report.
    let Some(root) = doc.as_table_mut() else {
        return Ok(());
    };
    let header = root.entry("pipeline".to_owned()).or_insert_with(|| Entry {
        key: span.clone(),
        node: node(Value::Table(Table::new())),
    });
    let Some(header) = header.node.as_table_mut() else {
        return Ok(());
    };
    match header.get("kernel_names") {
        Some(set) if set.node.as_str() != Some(form.as_str()) => {
            let written = set.node.as_str().map_or_else(
                || set.node.type_name().to_owned(),
                |value| format!("\"{value}\""),
            );
            Err(Diagnostic::error(format!(
                "`{flag}` conflicts with the pipeline's `kernel_names = {written}`"
            ))
            .at(Some(set.node.span.clone()))
            .hint("give one of them: drop the flag, or the pipeline's setting"))
        }
        _ => {
            let value = node(Value::String(form.as_str().to_owned()));
            header.insert(
                "kernel_names".to_owned(),
                Entry {
                    key: span.clone(),
                    node: value,
                },
            );
            Ok(())
        }
    }
}
