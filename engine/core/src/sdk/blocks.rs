//! How rocprofiler-sdk sizes a hardware counter's dimensions on an agent. The SDK asks
//! aqlprofile, which describes each counter block by where it sits (once per XCC, per
//! shader engine, per shader array, per compute unit or WGP) and how many instances it has,
//! and turns that into dimensions: `DIMENSION_XCC` when the agent has more than one XCC,
//! `DIMENSION_SHADER_ENGINE` and `DIMENSION_SHADER_ARRAY` for blocks in them, then
//! `DIMENSION_WGP` for RDNA's SQ or else `DIMENSION_INSTANCE`.
//!
//! The shapes below are aqlprofile's block tables (`gfx9_block_info.h`, the gfx10-12
//! `*_block_table.h`). On gfx94x they agree with what AMD's real SDK reports for a
//! 304-CU, 8-XCC gfx942 (e.g. `TA_*` over 4 shader engines of 11 instances, `TCC_*` 16
//! and `TCA_*` 32 instances per XCC); the tests hold every gfx942 counter to it. RDNA's
//! `TA` takes gfx9's 16 instances per shader engine: its tables name the count by a
//! constant whose value they do not give.

use crate::sdk::COUNTER_DIMENSIONS;

/// What the dimensions of a block's counters depend on: the agent's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topology {
    pub xcc: u32,
    /// Shader engines per XCC.
    pub shader_engines: u32,
    /// Shader arrays per shader engine.
    pub shader_arrays: u32,
    /// Compute units per XCC.
    pub compute_units: u32,
}

impl Topology {
    /// The layout of an agent described as KFD does (its totals over all XCCs).
    pub fn of(arch: &str, xcc: u32, shader_engines: u32, compute_units: u32) -> Topology {
        let xcc = xcc.max(1);
        Topology {
            xcc,
            shader_engines: (shader_engines / xcc).max(1),
            shader_arrays: shader_arrays_per_engine(arch),
            compute_units: (compute_units / xcc).max(1),
        }
    }

    fn shader_arrays_total(&self) -> u32 {
        self.shader_engines * self.shader_arrays
    }
}

/// Shader arrays in each shader engine: two on RDNA (gfx10 and later), one on CDNA/GCN.
pub fn shader_arrays_per_engine(arch: &str) -> u32 {
    match Family::of(arch) {
        Some(Family::Rdna { .. }) => 2,
        _ => 1,
    }
}

/// The architecture families whose blocks differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// gfx900 to gfx90a.
    Gcn,
    /// gfx940, gfx941, gfx942, gfx950.
    Cdna3,
    /// gfx10, gfx11, gfx12: `generation` is the major version.
    Rdna { generation: u32 },
}

impl Family {
    fn of(arch: &str) -> Option<Family> {
        let version = arch.strip_prefix("gfx")?;
        if version.starts_with('9') {
            return Some(match version {
                "940" | "941" | "942" | "950" => Family::Cdna3,
                _ => Family::Gcn,
            });
        }
        let generation: u32 = version.get(..2)?.parse().ok()?;
        (10..=12)
            .contains(&generation)
            .then_some(Family::Rdna { generation })
    }
}

/// Where a block's instances are.
#[derive(Debug, Clone, Copy)]
enum Spread {
    /// Once per XCC, with this many instances.
    Global(u32),
    /// Once per shader engine.
    PerEngine(u32),
    /// In each shader engine, one per compute unit of a shader array plus one, at most
    /// this many (aqlprofile's texture blocks on gfx9).
    PerComputeUnit(u32),
    /// In each shader array of each shader engine, one per WGP (RDNA's SQ).
    PerWgp,
}

fn spread(family: Family, block: &str) -> Option<Spread> {
    use Spread::*;
    Some(match (family, block) {
        (_, "GRBM") => Global(1),
        (Family::Gcn | Family::Cdna3, "CPC" | "CPF") => Global(1),
        (Family::Gcn | Family::Cdna3, "SPI" | "SQ") => PerEngine(1),
        (Family::Gcn | Family::Cdna3, "TA" | "TD" | "TCP") => PerComputeUnit(16),
        (Family::Gcn, "TCA") => Global(2),
        (Family::Cdna3, "TCA") => Global(32),
        (Family::Gcn | Family::Cdna3, "TCC") => Global(16),
        (Family::Rdna { .. }, "SQ") => PerWgp,
        (Family::Rdna { .. }, "TA") => PerEngine(16),
        (Family::Rdna { generation: 10 }, "GL2C") => Global(16),
        (Family::Rdna { .. }, "GL2C") => Global(32),
        _ => return None,
    })
}

/// The dimensions (index into [`COUNTER_DIMENSIONS`] and size) of the counters of
/// `block` on an agent of `arch` laid out as `topology`, in the order the SDK lists them
/// (the last of [`COUNTER_DIMENSIONS`] first); `None` for a block the SDK has no counters
/// of there.
pub fn dimensions(arch: &str, block: &str, topology: &Topology) -> Option<Vec<(u64, u32)>> {
    let spread = spread(Family::of(arch)?, block)?;
    let id = |name: &str| {
        COUNTER_DIMENSIONS
            .iter()
            .position(|d| *d == name)
            .expect("an SDK dimension") as u64
    };
    let mut dims = Vec::new();
    if topology.xcc > 1 {
        dims.push((id("DIMENSION_XCC"), topology.xcc));
    }
    let engines = (id("DIMENSION_SHADER_ENGINE"), topology.shader_engines);
    match spread {
        Spread::Global(n) => dims.push((id("DIMENSION_INSTANCE"), n)),
        Spread::PerEngine(n) => dims.extend([engines, (id("DIMENSION_INSTANCE"), n)]),
        Spread::PerComputeUnit(most) => {
            let per_array = topology
                .compute_units
                .div_ceil(topology.shader_arrays_total());
            dims.extend([engines, (id("DIMENSION_INSTANCE"), most.min(per_array + 1))]);
        }
        Spread::PerWgp => {
            let wgps = (topology.compute_units / 2).div_ceil(topology.shader_arrays_total());
            dims.extend([
                engines,
                (id("DIMENSION_SHADER_ARRAY"), topology.shader_arrays),
                (id("DIMENSION_WGP"), wgps.max(1)),
            ]);
        }
    }
    dims.reverse();
    Some(dims)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dimensions by name, in the SDK's order of ids.
    fn named(dims: Option<Vec<(u64, u32)>>) -> Vec<(&'static str, u32)> {
        (dims.expect("a block of the arch").into_iter().rev())
            .map(|(id, size)| (COUNTER_DIMENSIONS[id as usize], size))
            .collect()
    }

    #[test]
    fn an_mi300x_has_the_shapes_amds_sdk_reports() {
        let mi300x = Topology::of("gfx942", 8, 32, 304);
        let xcc = ("DIMENSION_XCC", 8);
        let se = ("DIMENSION_SHADER_ENGINE", 4);
        let instance = |n| ("DIMENSION_INSTANCE", n);
        assert_eq!(
            named(dimensions("gfx942", "GRBM", &mi300x)),
            [xcc, instance(1)]
        );
        assert_eq!(
            named(dimensions("gfx942", "SQ", &mi300x)),
            [xcc, se, instance(1)]
        );
        assert_eq!(
            named(dimensions("gfx942", "TA", &mi300x)),
            [xcc, se, instance(11)]
        );
        assert_eq!(
            named(dimensions("gfx942", "TCC", &mi300x)),
            [xcc, instance(16)]
        );
        assert_eq!(
            named(dimensions("gfx942", "TCA", &mi300x)),
            [xcc, instance(32)]
        );
        assert_eq!(dimensions("gfx942", "GL2C", &mi300x), None);
    }

    #[test]
    fn one_xcc_has_no_xcc_dimension_and_rdna_counts_sq_per_wgp() {
        let mi210 = Topology::of("gfx90a", 1, 8, 104);
        assert_eq!(
            named(dimensions("gfx90a", "TCP", &mi210)),
            [("DIMENSION_SHADER_ENGINE", 8), ("DIMENSION_INSTANCE", 14)]
        );
        let w7900 = Topology::of("gfx1100", 1, 6, 96);
        assert_eq!(
            named(dimensions("gfx1100", "SQ", &w7900)),
            [
                ("DIMENSION_SHADER_ENGINE", 6),
                ("DIMENSION_SHADER_ARRAY", 2),
                ("DIMENSION_WGP", 4)
            ]
        );
        assert_eq!(
            named(dimensions("gfx1100", "GL2C", &w7900)),
            [("DIMENSION_INSTANCE", 32)]
        );
        assert_eq!(dimensions("gfx1100", "TCC", &w7900), None);
        assert_eq!(dimensions("gfx803", "SQ", &w7900), None);
    }
}
