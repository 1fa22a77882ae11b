//! How kernels are named, decided once for the whole flow: every sink, post-step and
//! transform reads a kernel's name from the run's metadata
//! ([`StreamMeta::kernel_name`](crate::catalog::StreamMeta::kernel_name)), which names it
//! as the pipeline's `kernel_names` says, while the code object's own (mangled) name stays
//! beside it for the formats that have a place for both.
//!
//! The forms are rocprofv3's: demangled by default, mangled (its `-M`), truncated to the
//! function's base name (its `-T`), and renamed after the ROCTx range around the launch
//! (its `--kernel-rename`, see [`crate::kernel_rename`]).

pub use rocflow_core::demangle::{demangle, formatted};

use serde::{Deserialize, Serialize};

/// The form kernel names take in every output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum KernelNames {
    /// C++ names demangled, without the `.kd` descriptor suffix, as rocprofv3 shows them.
    #[default]
    Demangled,
    /// As the code object gives them.
    Mangled,
    /// Demangled, cut to the function's base name: `solver::smooth<8>(double*)` is `smooth`.
    Truncated,
    /// Demangled, and a dispatch launched inside a ROCTx range takes the range's message.
    Renamed,
}

impl KernelNames {
    pub const ALL: [KernelNames; 4] = [
        KernelNames::Demangled,
        KernelNames::Mangled,
        KernelNames::Truncated,
        KernelNames::Renamed,
    ];

    /// The name as the pipeline spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            KernelNames::Demangled => "demangled",
            KernelNames::Mangled => "mangled",
            KernelNames::Truncated => "truncated",
            KernelNames::Renamed => "renamed",
        }
    }

    /// What the form is, in a line of `rocflow explain`.
    pub fn describe(self) -> &'static str {
        match self {
            KernelNames::Demangled => "as rocprofv3 shows them by default",
            KernelNames::Mangled => "as the code objects give them (rocprofv3 -M)",
            KernelNames::Truncated => "cut to the function's base name (rocprofv3 -T)",
            KernelNames::Renamed => {
                "a dispatch after the ROCTx range around its launch, others demangled (rocprofv3 --kernel-rename)"
            }
        }
    }

    /// The form rocprofv3 shows with its `mangled_kernels` and `truncate_kernels` options
    /// (truncating demangles first, so it wins).
    pub fn of_rocprofv3(mangled: bool, truncate: bool) -> KernelNames {
        match (mangled, truncate) {
            (_, true) => KernelNames::Truncated,
            (true, false) => KernelNames::Mangled,
            (false, false) => KernelNames::Demangled,
        }
    }

    /// A kernel's name in this form, from the code object's name. Renamed dispatches get
    /// their range's message later; their kernel goes by its demangled name.
    pub fn name(self, mangled: &str) -> String {
        match self {
            KernelNames::Mangled => mangled.to_owned(),
            KernelNames::Demangled | KernelNames::Renamed => formatted(mangled),
            KernelNames::Truncated => truncate(&formatted(mangled)).to_owned(),
        }
    }
}

impl std::fmt::Display for KernelNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The function name in a demangled signature, as rocprofv3 truncates it: from the end,
/// skips the bracketed groups (call arguments, template arguments, array bounds) and
/// spaces, then takes the name back to the last space or `:`.
/// `ns::Foo<int>::foo(a[], int (int))` gives `foo`.
pub fn truncate(name: &str) -> &str {
    let bytes = name.as_bytes();
    let mut end = bytes.len();
    loop {
        while end > 0 && bytes[end - 1] == b' ' {
            end -= 1;
        }
        let (open, close) = match bytes.get(end.wrapping_sub(1)) {
            Some(b')') => (b'(', b')'),
            Some(b'>') => (b'<', b'>'),
            Some(b']') => (b'[', b']'),
            _ => break,
        };
        let mut depth = 0usize;
        while end > 0 {
            end -= 1;
            match bytes[end] {
                b if b == close => depth += 1,
                b if b == open => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    let start = name[..end].rfind([' ', ':']).map_or(0, |i| i + 1);
    &name[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_of_a_hip_kernel() {
        let mangled = "_ZN6solver6smoothILi8EEEvPKdPdiii";
        let name = |form: KernelNames| form.name(mangled);
        assert_eq!(
            name(KernelNames::Demangled),
            "void solver::smooth<8>(double const*, double*, int, int, int)"
        );
        assert_eq!(name(KernelNames::Mangled), mangled);
        assert_eq!(name(KernelNames::Truncated), "smooth");
        assert_eq!(name(KernelNames::Renamed), name(KernelNames::Demangled));
        assert_eq!(
            KernelNames::Demangled.name("_Z9vectorAddPKfS0_Pfi.kd"),
            "vectorAdd(float const*, float const*, float*, int)"
        );
        assert_eq!(KernelNames::Truncated.name("copy_kernel"), "copy_kernel");
    }

    #[test]
    fn truncates_as_rocprofv3_does() {
        assert_eq!(truncate("gemm(float*, float*, float*, int)"), "gemm");
        assert_eq!(
            truncate("void gemm_kernel<float, 64>(float const*, float*, int)"),
            "gemm_kernel"
        );
        assert_eq!(
            truncate("void at::native::(anonymous namespace)::foo<bar<int> >(int (*)(int))"),
            "foo"
        );
        assert_eq!(truncate("Foo<int, float>::foo(a[], int (int))"), "foo");
        assert_eq!(truncate("f<a<b<c<d<e>>>>>(int)"), "f");
        assert_eq!(truncate("void ns::k<(char)1>(int) "), "k");
        assert_eq!(truncate("main"), "main");
    }

    #[test]
    fn rocprofv3_options_map_to_one_form() {
        assert_eq!(
            KernelNames::of_rocprofv3(false, false),
            KernelNames::Demangled
        );
        assert_eq!(KernelNames::of_rocprofv3(true, false), KernelNames::Mangled);
        assert_eq!(
            KernelNames::of_rocprofv3(true, true),
            KernelNames::Truncated
        );
    }
}
