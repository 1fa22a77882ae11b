//! rocprofv3's lists of counters (`--pmc`, `pmc:` lines), which the converter and the
//! `--pmc` flag both read.

/// Counter names as rocprofv3 takes them (`--pmc`, `pmc:`): apart by spaces or commas.
pub(crate) fn counter_names(written: &str) -> impl Iterator<Item = &str> {
    written
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|name| !name.is_empty())
}
