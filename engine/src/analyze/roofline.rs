//! The empirical roofline of a run: each kernel that `speed-of-light` measured both FLOPs
//! and HBM traffic of, as arithmetic intensity (FLOPs per HBM byte) against achieved
//! FLOP/s, under its GPU's peak compute and bandwidth where those are known.

use super::finding::{Evidence, Finding};

/// A kernel on the roofline.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub kernel: String,
    /// FLOPs per byte of HBM traffic.
    pub intensity: f64,
    /// FLOP/s, VALU and MFMA together.
    pub flops: f64,
    /// The peak FLOP/s of its GPU's VALU, where known.
    pub peak_flops: Option<f64>,
    /// The peak HBM bandwidth of its GPU in bytes a second, where known.
    pub peak_bandwidth: Option<f64>,
}

/// The points of `speed-of-light`'s findings, in their order.
pub fn points(findings: &[Finding]) -> Vec<Point> {
    (findings.iter())
        .filter(|f| f.rule == "speed-of-light")
        .filter_map(point)
        .collect()
}

fn point(f: &Finding) -> Option<Point> {
    let mut kernel = None;
    let (mut flops, mut bandwidth) = (None::<f64>, None);
    let (mut peak_flops, mut peak_bandwidth) = (None, None);
    for e in &f.evidence {
        let Evidence::Metric {
            kernel: name,
            metric,
            value,
            peak,
            ..
        } = e
        else {
            continue;
        };
        kernel = Some(name);
        match *metric {
            "VALU FLOP/s" => {
                flops = Some(flops.unwrap_or(0.0) + value);
                peak_flops = *peak;
            }
            "MFMA FLOP/s" => flops = Some(flops.unwrap_or(0.0) + value),
            "HBM bandwidth" => {
                bandwidth = Some(*value);
                peak_bandwidth = *peak;
            }
            _ => {}
        }
    }
    let (flops, bandwidth) = (flops?, bandwidth.filter(|&b| b > 0.0)?);
    Some(Point {
        kernel: kernel?.clone(),
        intensity: flops / bandwidth,
        flops,
        peak_flops,
        peak_bandwidth,
    })
}
