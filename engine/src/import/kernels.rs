//! Which kernels are counted, and how their names are shown: rocprofv3's iteration ranges
//! in rocflow's form, and its demangling and truncation as a `kernel_name` transform.

use crate::pipeline::model::{Transform, TransformOp};
use crate::pipeline::units::IterationRanges;
use crate::record::RecordKind;
use crate::transform::kernel_name;

/// rocprofv3's iteration ranges (iterations and `A-B` ranges, apart by brackets, commas
/// or spaces: "[1-10],[20]", "[1, 2, 5-8]") in rocflow's form, "[1-10],[20]".
pub fn iteration_ranges(written: &[String]) -> Result<String, String> {
    let text = written.join(",");
    let parts: Vec<String> = text
        .split(|c: char| matches!(c, '[' | ']' | ',') || c.is_whitespace())
        .filter(|token| !token.is_empty())
        .map(|token| match token.split_once('-') {
            Some((first, last)) if first.is_empty() || last.is_empty() => Err(format!(
                "`{token}` in `kernel_iteration_range` is not a range; write `FIRST-LAST`"
            )),
            Some((first, last)) => Ok(format!("[{first}-{last}]")),
            None => Ok(format!("[{token}]")),
        })
        .collect::<Result<_, _>>()?;
    if parts.is_empty() {
        return Err("`kernel_iteration_range` names no iteration".into());
    }
    let ranges = parts.join(",");
    IterationRanges::parse(&ranges)?;
    Ok(ranges)
}

/// The transform that shows kernel names as rocprofv3 does, for the records `produced` that
/// name kernels: demangled unless `mangled_kernels` is set, and cut to their base name
/// (demangled either way) with `truncate_kernels`.
pub fn kernel_names(mangled: bool, truncate: bool, produced: &[RecordKind]) -> Option<Transform> {
    let demangle = !mangled || truncate;
    let records: Vec<String> = produced
        .iter()
        .filter(|k| k.column("kernel_name").is_some())
        .map(|k| k.name().to_owned())
        .collect();
    if records.is_empty() || !demangle {
        return None;
    }
    let rename = truncate
        .then(|| kernel_name::Rule {
            pattern: base_name_pattern(),
            replacement: "${1}".into(),
        })
        .into_iter()
        .collect();
    Some(Transform {
        name: "kernel-names".into(),
        records,
        strict: false,
        op: TransformOp::KernelName(kernel_name::Options {
            demangle,
            truncate: None,
            rename,
        }),
    })
}

/// How deep brackets nest in a name whose base name `truncate_kernels` finds.
const BRACKET_DEPTH: usize = 4;

/// A regex that keeps a demangled name's base name, as `truncate_kernels` does: the last
/// name before the trailing bracketed groups, after the last space or `::`, so
/// `void ns::gemm<float, 4>(float*, int)` becomes `gemm`. A regex cannot count, so groups
/// nest up to [`BRACKET_DEPTH`] levels; a name nested deeper is left whole.
fn base_name_pattern() -> String {
    let group = |open: &str, close: &str| {
        let other = format!("[^{open}{close}]");
        (1..BRACKET_DEPTH).fold(format!("{open}{other}*{close}"), |inner, _| {
            format!("{open}(?:{other}|{inner})*{close}")
        })
    };
    format!(
        r"^.*?([^\s:()<>\[\]]+)(?:\s*(?:{}|{}|{}))*\s*$",
        group(r"\(", r"\)"),
        group("<", ">"),
        group(r"\[", r"\]"),
    )
}

#[cfg(test)]
mod tests {
    use regex::Regex;

    use super::*;

    #[test]
    fn base_names_as_truncate_kernels_finds_them() {
        let re = Regex::new(&base_name_pattern()).unwrap();
        let base = |name: &str| re.replace(name, "${1}").into_owned();
        assert_eq!(base("gemm(float*, float*, float*, int)"), "gemm");
        assert_eq!(
            base("void gemm_kernel<float, 64>(float const*, float*, int)"),
            "gemm_kernel"
        );
        assert_eq!(
            base("void at::native::(anonymous namespace)::foo<bar<int> >(int (*)(int))"),
            "foo"
        );
        assert_eq!(base("Foo<int, float>::foo(a[], int (int))"), "foo");
        assert_eq!(
            base("__amd_rocclr_fillBufferAligned"),
            "__amd_rocclr_fillBufferAligned"
        );
        let deep = "f<a<b<c<d<e>>>>>(int)";
        assert_eq!(base(deep), deep, "deeper than the regex counts: left whole");
    }

    #[test]
    fn iteration_ranges_in_rocflow_form() {
        let one = |s: &str| iteration_ranges(&[s.to_owned()]);
        assert_eq!(one("[1-10],[20]").as_deref(), Ok("[1-10],[20]"));
        assert_eq!(one("[1, 2, 5-8]").as_deref(), Ok("[1],[2],[5-8]"));
        assert_eq!(
            iteration_ranges(&["3".into(), "[4-5]".into()]).as_deref(),
            Ok("[3],[4-5]")
        );
        assert!(one("[5-]").unwrap_err().contains("not a range"));
        assert!(one("[0-3]").unwrap_err().contains("count from 1"));
        assert!(one("[9-3]").unwrap_err().contains("ends before"));
        assert!(one("[]").unwrap_err().contains("names no iteration"));
    }
}
