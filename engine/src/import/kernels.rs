//! Which kernels are counted: rocprofv3's iteration ranges in rocflow's form.

use crate::units::IterationRanges;
use rocflow_core::contexts::RangesError;

/// What is wrong with rocprofv3's `kernel_iteration_range`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KernelRangeError {
    /// A token with a dash and nothing on one side of it, in the option `option`.
    #[error("`{token}` in `{option}` is not a range; write `FIRST-LAST`")]
    NotARange { token: String, option: &'static str },
    #[error("`{option}` names no iteration")]
    Empty { option: &'static str },
    /// The ranges in rocflow's form do not parse.
    #[error(transparent)]
    Ranges(#[from] RangesError),
}

/// rocprofv3's iteration ranges (iterations and `A-B` ranges, apart by brackets, commas
/// or spaces: "[1-10],[20]", "[1, 2, 5-8]") in rocflow's form, "[1-10],[20]"; `option`
/// is what the user wrote them as, which the errors name.
pub fn iteration_ranges(
    written: &[String],
    option: &'static str,
) -> Result<String, KernelRangeError> {
    let text = written.join(",");
    let parts: Vec<String> = text
        .split(|c: char| matches!(c, '[' | ']' | ',') || c.is_whitespace())
        .filter(|token| !token.is_empty())
        .map(|token| match token.split_once('-') {
            Some((first, last)) if first.is_empty() || last.is_empty() => {
                Err(KernelRangeError::NotARange {
                    token: token.into(),
                    option,
                })
            }
            Some((first, last)) => Ok(format!("[{first}-{last}]")),
            None => Ok(format!("[{token}]")),
        })
        .collect::<Result<_, _>>()?;
    if parts.is_empty() {
        return Err(KernelRangeError::Empty { option });
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
        const OPTION: &str = "kernel_iteration_range";
        let one = |s: &str| iteration_ranges(&[s.to_owned()], OPTION);
        assert_eq!(one("[1-10],[20]").as_deref(), Ok("[1-10],[20]"));
        assert_eq!(one("[1, 2, 5-8]").as_deref(), Ok("[1],[2],[5-8]"));
        assert_eq!(
            iteration_ranges(&["3".into(), "[4-5]".into()], OPTION).as_deref(),
            Ok("[3],[4-5]")
        );
        let not_a_range = KernelRangeError::NotARange {
            token: "5-".into(),
            option: OPTION,
        };
        assert_eq!(one("[5-]"), Err(not_a_range));
        assert_eq!(
            one("[0-3]"),
            Err(RangesError::FromZero("[0-3]".into()).into())
        );
        assert_eq!(
            one("[9-3]"),
            Err(RangesError::Backwards("[9-3]".into()).into())
        );
        assert_eq!(one("[]"), Err(KernelRangeError::Empty { option: OPTION }));
        let e = iteration_ranges(&["[5-]".into()], "--kernel-iteration-range").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`5-` in `--kernel-iteration-range` is not a range; write `FIRST-LAST`"
        );
    }
}
