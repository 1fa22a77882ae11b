//! Kernel-name transforms: demangle, rename and truncate names (applied to the kernel
//! symbols in the metadata, once per kernel), and keep only some kernels and iterations.

use std::collections::HashMap;
use std::sync::Mutex;

use regex::Regex;

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::pipeline::units::IterationRanges;
use crate::record::Batch;

/// How a kernel's name is rewritten.
#[derive(Debug)]
pub struct Rename {
    pub demangle: bool,
    pub rules: Vec<(Regex, String)>,
    pub truncate: Option<u32>,
}

impl Rename {
    pub fn apply(&self, name: &str) -> String {
        let mut name = if self.demangle {
            demangle(name)
        } else {
            name.to_owned()
        };
        for (pattern, replacement) in &self.rules {
            if let std::borrow::Cow::Owned(renamed) =
                pattern.replace_all(&name, replacement.as_str())
            {
                name = renamed;
            }
        }
        if let Some(limit) = self.truncate.map(|n| n as usize)
            && name.chars().count() > limit
        {
            name = name
                .chars()
                .take(limit.saturating_sub(1))
                .collect::<String>()
                + "…";
        }
        name
    }
}

/// The demangled form of an Itanium C++ name (HIP kernels), or the name as it is.
pub fn demangle(name: &str) -> String {
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|symbol| symbol.demangle().ok())
        .unwrap_or_else(|| name.to_owned())
}

/// Keeps records of matching kernels, and of the listed dispatch iterations of each.
#[derive(Debug)]
pub struct KernelFilter {
    pub include: Option<Regex>,
    pub exclude: Option<Regex>,
    pub iterations: Option<IterationRanges>,
    /// Per (stream, kernel): dispatches seen so far, and the last dispatch id counted.
    seen: Mutex<HashMap<(u16, u64), (u64, u64)>>,
}

impl KernelFilter {
    pub fn new(
        include: Option<Regex>,
        exclude: Option<Regex>,
        iterations: Option<IterationRanges>,
    ) -> Self {
        KernelFilter {
            include,
            exclude,
            iterations,
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Which records of the chunk to keep. Iterations are counted in arrival order, so the
    /// stage runtime gives this transform chunks one at a time, in order.
    pub fn keep(&self, chunk: &Chunk, meta: &StreamMeta) -> Vec<bool> {
        let ids: Vec<(u64, u64)> = match &chunk.batch {
            Batch::KernelDispatch(r) => r.iter().map(|d| (d.kernel_id, d.dispatch_id)).collect(),
            Batch::CounterSample(r) => r.iter().map(|s| (s.kernel_id, s.dispatch_id)).collect(),
            _ => return vec![true; chunk.len()],
        };
        let mut names: HashMap<u64, bool> = HashMap::new();
        let mut seen = self.seen.lock().expect("no panics while holding the lock");
        ids.into_iter()
            .map(|(kernel, dispatch)| {
                let name_ok = *names.entry(kernel).or_insert_with(|| {
                    let name = meta.kernel_name(kernel);
                    self.include.as_ref().is_none_or(|r| r.is_match(name))
                        && !self.exclude.as_ref().is_some_and(|r| r.is_match(name))
                });
                let (count, last) = seen.entry((chunk.stream, kernel)).or_insert((0, u64::MAX));
                // Counter samples of one dispatch come together; count each dispatch once.
                if *last != dispatch {
                    *count += 1;
                    *last = dispatch;
                }
                name_ok && self.iterations.as_ref().is_none_or(|r| r.contains(*count))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_hip_kernel_names() {
        assert_eq!(
            demangle("_Z4gemmPfS_S_i"),
            "gemm(float*, float*, float*, int)"
        );
        assert_eq!(demangle("not_mangled"), "not_mangled");
    }

    #[test]
    fn renames_then_truncates() {
        let rename = Rename {
            demangle: true,
            rules: vec![(Regex::new(r"\(.*\)").unwrap(), String::new())],
            truncate: Some(10),
        };
        assert_eq!(rename.apply("_Z4gemmPfS_S_i"), "gemm");
        assert_eq!(rename.apply("_Z21a_very_long_kernel_namev"), "a_very_lo…");
    }
}
