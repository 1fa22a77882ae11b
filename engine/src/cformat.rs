//! Numbers as the C and C++ libraries rocprofv3 writes with print them, for the files and
//! tables that copy its layout: iostream's `std::scientific` (and {fmt}'s `e`), and {fmt}'s
//! shortest form of a double (its `{}`).

/// `v` as C++'s `std::scientific` with `digits` decimals writes it: `1.50000000e-05`, the
/// exponent signed and of two digits at least.
pub fn scientific(v: f64, digits: usize) -> String {
    c_exponent(&format!("{v:.digits$e}"))
}

/// `v` as {fmt} writes a double with no format given: the fewest digits that read back
/// as `v`, in fixed notation for decimal exponents from -4 up to 15 (`406.507215`, `1`),
/// else in scientific notation (`2e-08`, `1e+16`).
pub fn shortest(v: f64) -> String {
    let scientific = format!("{v:e}");
    let exponent: i32 = scientific
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    if (-4..16).contains(&exponent) {
        format!("{v}")
    } else {
        c_exponent(&scientific)
    }
}

/// Rust's exponent (`1.5e-5`) as C writes it (`1.5e-05`).
fn c_exponent(text: &str) -> String {
    let Some((mantissa, exponent)) = text.split_once('e') else {
        // `inf`, `NaN`.
        return text.to_owned();
    };
    let (sign, magnitude) = match exponent.strip_prefix('-') {
        Some(m) => ('-', m),
        None => ('+', exponent),
    };
    format!("{mantissa}e{sign}{magnitude:0>2}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_cs_libraries_write_them() {
        assert_eq!(scientific(70_019_405.25, 3), "7.002e+07");
        assert_eq!(scientific(0.0, 3), "0.000e+00");
        assert_eq!(scientific(1.5e-120, 3), "1.500e-120");
        for (v, text) in [
            (406.507215, "406.507215"),
            (1.0, "1"),
            (0.0, "0"),
            (0.0001, "0.0001"),
            (0.00002, "2e-05"),
            (1e16, "1e+16"),
            (123_456_789_012_345.0, "123456789012345"),
        ] {
            assert_eq!(shortest(v), text, "{v}");
        }
    }
}
