//! How explanations word what they list: a list or what stands for none, iteration ranges.
//! Shared by `rocflow explain` and the lines each transform kind explains itself with.

use crate::units::IterationRanges;

pub fn ranges(iterations: &IterationRanges) -> String {
    iterations
        .0
        .iter()
        .map(|r| match r.last {
            Some(last) if last == r.first => format!("[{}]", r.first),
            Some(last) => format!("[{}-{last}]", r.first),
            None => format!("[{}-]", r.first),
        })
        .collect::<Vec<_>>()
        .join(",")
}

pub fn list_or<T: AsRef<str>>(items: &[T], empty: &str) -> String {
    if items.is_empty() {
        empty.to_owned()
    } else {
        items
            .iter()
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join(", ")
    }
}
