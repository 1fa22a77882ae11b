//! Kernel families from kernel names. A name is demangled, reduced to its function's
//! qualified name (no return type, template arguments or parameters) and split into
//! lower-case words (`vectorAdd` is `vector_add`), then tested against each family's
//! patterns in a fixed order; only if none matches is the whole demangled name (template
//! arguments too: `ck_tile::kentry<…FmhaFwdKernel…>`) tested the same way.
//!
//! The order settles names that fit several families: communication before reduction
//! (`AllReduce`), convolution before GEMM (MIOpen's implicit-GEMM `igemm_fwd`), attention
//! before GEMM (FMHA kernels run GEMMs), reduction before elementwise (`fused_add_rms_norm`).

use std::sync::LazyLock;

use regex::RegexSet;

/// The families, in the order names are tested against them, and their patterns over a
/// name's words (joined by `_`; `(^|_)` and `(_|$)` bound a word).
const FAMILIES: &[(&str, &str)] = &[
    (
        "communication",
        r"nccl|rccl|msccl|(^|_)all_?(reduce|gather|to_?all)|reduce_?scatter",
    ),
    (
        "copy_memset",
        r"(^|_)(copy|memcpy|memset|fill|blit)(_|$)|rocclr_(copy|fill)",
    ),
    (
        "attention",
        r"attn|attention|fmha|flash|sdpa|paged_?att|(^|_)(mha|mla)(_|$)",
    ),
    (
        "convolution",
        r"conv(_|$|\d|olution)|winograd|im2col|col2im|igemm|implicit_?gemm|(^|_)wrw(_|$)",
    ),
    (
        "gemm",
        r"gemm|gemv|matmul|mat_mul|(^|_)(cijk|b?mm|dot|ger|hipblaslt|tensile)(_|$)",
    ),
    (
        "reduction",
        r"reduc|soft_?max|norm(_|$)|(^|_)(sum|mean|max|min|argmax|argmin|prod|cumsum|cumprod|scan|topk|histogram)(_|$)",
    ),
    (
        "elementwise",
        r"element_?wise|axpy|(^|_)(add|sub|mul|div|scale|relu|gelu|silu|swiglu|sigmoid|tanh|exp|sqrt|rsqrt|pow|abs|neg|cast|convert|clamp|dropout|bias|activation|unary|binary|vectorized|unrolled|triad)(_|$)",
    ),
];

/// The family of names that match none.
pub const OTHER: &str = "other";

static PATTERNS: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(FAMILIES.iter().map(|(_, pattern)| pattern)).expect("the patterns are valid")
});

/// The family of a kernel name, demangled by [`demangle`].
pub fn classify(demangled: &str) -> &'static str {
    [function(demangled), demangled]
        .into_iter()
        .find_map(|text| {
            let first = PATTERNS.matches(&words(text)).into_iter().next()?;
            Some(FAMILIES[first].0)
        })
        .unwrap_or(OTHER)
}

/// The demangled form of an Itanium C++ name, or the name as it is.
pub fn demangle(name: &str) -> String {
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|symbol| symbol.demangle().ok())
        .unwrap_or_else(|| name.to_owned())
}

/// The qualified function name of a demangled name: `void ns::f<int>(float*)` is `ns::f`.
fn function(demangled: &str) -> &str {
    let text = demangled.trim();
    // Parameters start at the first `(` outside template arguments.
    let mut depth = 0usize;
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            '(' if depth == 0 && !text[i..].starts_with("(anonymous namespace)") => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let head = &text[..end];
    // The return type, if any, ends at the last space outside template arguments.
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in head.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            ' ' if depth == 0 && !head[..i].ends_with("(anonymous") => start = i + 1,
            _ => {}
        }
    }
    let name = &head[start..];
    // Template arguments of the function itself go too.
    name.find('<').map_or(name, |at| &name[..at])
}

/// Lower-case words joined by `_`: camel case, digits-to-letters and punctuation split
/// words (`cunn_SoftMaxForward` is `cunn_soft_max_forward`; `HIPKernel` is `hip_kernel`).
fn words(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            continue;
        }
        let previous = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1);
        let boundary = c.is_ascii_uppercase()
            && previous.is_some_and(|p| {
                p.is_ascii_lowercase()
                    || p.is_ascii_digit()
                    || (p.is_ascii_uppercase() && next.is_some_and(char::is_ascii_lowercase))
            });
        if boundary && !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out.trim_end_matches('_').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_words() {
        assert_eq!(words("vectorAdd"), "vector_add");
        assert_eq!(words("cunn_SoftMaxForward"), "cunn_soft_max_forward");
        assert_eq!(words("HIPKernel"), "hip_kernel");
        assert_eq!(words("__amd_rocclr_copyBuffer"), "amd_rocclr_copy_buffer");
        assert_eq!(words("ck::kernel_gemm<4>"), "ck_kernel_gemm_4");
    }

    #[test]
    fn functions_lose_return_types_templates_and_parameters() {
        assert_eq!(function("gemm(float*, int)"), "gemm");
        assert_eq!(
            function("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(float)"),
            "at::native::reduce_kernel"
        );
        assert_eq!(
            function("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4>(float*)"),
            "at::native::(anonymous namespace)::cunn_SoftMaxForward"
        );
        assert_eq!(
            function("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32"),
            "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32"
        );
    }

    /// Names of kernels that ROCm libraries, PyTorch and the simulated scenario launch.
    #[test]
    fn kernels_fall_into_their_families() {
        let cases = [
            ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "communication"),
            (
                "void rccl::allGather_kernel<float>(float*)",
                "communication",
            ),
            ("__amd_rocclr_copyBuffer", "copy_memset"),
            ("__amd_rocclr_fillBufferAligned", "copy_memset"),
            ("flash_fwd_kernel", "attention"),
            (
                "void ck_tile::kentry<256, ck_tile::FmhaFwdKernel<ck_tile::BlockGemm>>(int)",
                "attention",
            ),
            ("igemm_fwd_gtcx_nhwc_fp16_bx0_ex1_bt64x64x16", "convolution"),
            ("miopenSp3AsmConv_v21_1_3_gfx9_fp32_stride1", "convolution"),
            ("naive_conv_fwd_nchw_float", "convolution"),
            (
                "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0",
                "gemm",
            ),
            ("_Z4gemmPfS_S_i", "gemm"),
            (
                "void ck::kernel_gemm_xdl_cshuffle_v3<ck::element_wise::PassThrough>(int)",
                "gemm",
            ),
            ("_Z13reduce_kernelPKfPfj", "reduction"),
            (
                "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*)",
                "reduction",
            ),
            (
                "void vllm::fused_add_rms_norm_kernel<float>(float*)",
                "reduction",
            ),
            ("_Z9vectorAddPKfS0_Pfi", "elementwise"),
            (
                "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)",
                "elementwise",
            ),
            ("_ZN6solver6smoothILi8EEEvPKdPdiii", "other"),
            ("convert_fp16_to_fp32", "elementwise"),
        ];
        for (name, family) in cases {
            assert_eq!(classify(&demangle(name)), family, "{name}");
        }
    }

    #[test]
    fn every_family_has_a_distinct_name() {
        let mut all: Vec<&str> = FAMILIES
            .iter()
            .map(|(name, _)| *name)
            .chain([OTHER])
            .collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 8);
    }
}
