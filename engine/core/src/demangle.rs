//! Kernel names as people read them. The runner names kernels this way in every output,
//! and the tool library matches a context's kernel filters against this name as well as
//! the code object's own, so a filter written against either form selects the kernel.
//!
//! The form is the one binutils' `c++filt` and libstdc++'s `__cxa_demangle` (which
//! rocprofv3 uses) write, so that a kernel has the same name in rocflow's outputs as in
//! AMD's tools.

/// The demangled form of an Itanium C++ name (HIP kernels), or the name as it is.
pub fn demangle(name: &str) -> String {
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|symbol| symbol.demangle().ok())
        .map_or_else(
            || name.to_owned(),
            |demangled| suffixed_literals(&demangled),
        )
}

/// The name as rocprofv3 shows it by default: demangled, without the `.kd` suffix of a
/// kernel descriptor's symbol.
pub fn formatted(mangled: &str) -> String {
    demangle(mangled.strip_suffix(".kd").unwrap_or(mangled))
}

/// The integer types whose literals C++ writes with a suffix, as cpp_demangle writes
/// them in front of a literal, and the suffix.
const SUFFIXED: [(&str, &str); 5] = [
    ("(unsigned int)", "u"),
    ("(long)", "l"),
    ("(unsigned long)", "ul"),
    ("(long long)", "ll"),
    ("(unsigned long long)", "ull"),
];

/// `demangled` with each integer literal of a [`SUFFIXED`] type written with its suffix
/// (`256u`, `-5l`), as `c++filt` writes it, where cpp_demangle writes the type in
/// parentheses before the number (`(unsigned int)256`). Only a literal puts a number
/// right after a parenthesized type: a cast puts its operand in parentheses too.
fn suffixed_literals(demangled: &str) -> String {
    let mut out = String::with_capacity(demangled.len());
    let mut rest = demangled;
    'scan: while let Some(open) = rest.find('(') {
        out.push_str(&rest[..open]);
        rest = &rest[open..];
        for (cast, suffix) in SUFFIXED {
            let Some(literal) = rest.strip_prefix(cast) else {
                continue;
            };
            let sign = usize::from(literal.starts_with('-'));
            let digits = literal[sign..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            if digits > 0 {
                let (number, after) = literal.split_at(sign + digits);
                out.push_str(number);
                out.push_str(suffix);
                rest = after;
                continue 'scan;
            }
        }
        out.push('(');
        rest = &rest[1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Template arguments that are literals of each integer type, as `c++filt` (binutils
    /// 2.40) writes them.
    #[test]
    fn integer_literals_are_written_as_cxxfilt_writes_them() {
        for (mangled, shown) in [
            (
                "_Z12reduce_sum_kILj256EEvPKfPfj",
                "void reduce_sum_k<256u>(float const*, float*, unsigned int)",
            ),
            ("_Z1fILi5EEvv", "void f<5>()"),
            ("_Z1fILin5EEvv", "void f<-5>()"),
            ("_Z1fILl5EEvv", "void f<5l>()"),
            ("_Z1fILln5EEvv", "void f<-5l>()"),
            ("_Z1fILm5EEvv", "void f<5ul>()"),
            ("_Z1fILx5EEvv", "void f<5ll>()"),
            ("_Z1fILy5EEvv", "void f<5ull>()"),
            ("_Z1fILyn5EEvv", "void f<-5ull>()"),
            ("_Z1fILb1EEvv", "void f<true>()"),
            ("_Z1fILs5EEvv", "void f<(short)5>()"),
            ("_Z1fILt5EEvv", "void f<(unsigned short)5>()"),
            ("_Z1fILc65EEvv", "void f<(char)65>()"),
            // A cast of a literal is no literal of the type it casts to.
            ("_Z1fIXcvjLi5EEEvv", "void f<(unsigned int)(5)>()"),
            // Parameters of a suffixed type stay as they are.
            (
                "_Z1fILj2EEvmlj",
                "void f<2u>(unsigned long, long, unsigned int)",
            ),
        ] {
            assert_eq!(demangle(mangled), shown, "{mangled}");
        }
    }

    #[test]
    fn a_name_that_is_not_mangled_stays_as_it_is() {
        for name in ["Cijk_Ailk_Bljk_SB_MT64x64x16", "(long)5", "_Z"] {
            assert_eq!(demangle(name), name);
        }
    }
}
