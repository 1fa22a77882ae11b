//! Which kernels are counted: rocprofv3's iteration ranges in rocflow's form.

use crate::units::IterationRanges;

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

#[cfg(test)]
mod tests {
    use super::*;

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
