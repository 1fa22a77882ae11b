//! Kernel names as people read them. The runner names kernels this way in every output,
//! and the tool library matches a context's kernel filters against this name as well as
//! the code object's own, so a filter written against either form selects the kernel.

/// The demangled form of an Itanium C++ name (HIP kernels), or the name as it is.
pub fn demangle(name: &str) -> String {
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|symbol| symbol.demangle().ok())
        .unwrap_or_else(|| name.to_owned())
}

/// The name as rocprofv3 shows it by default: demangled, without the `.kd` suffix of a
/// kernel descriptor's symbol.
pub fn formatted(mangled: &str) -> String {
    demangle(mangled.strip_suffix(".kd").unwrap_or(mangled))
}
