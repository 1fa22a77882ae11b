//! rocprofv3's collection periods in rocflow's terms.

use super::input::TimeUnit;
use crate::pipeline::model::Period;
use crate::units::Quantity;

/// `START_DELAY:COLLECTION_TIME:REPEAT` as rocflow's period: rocprofv3 repeats *delay,
/// collect* `repeat` times (once for 0), which is rocflow's delay, duration, the delay
/// again as the pause between periods, and `repeat - 1` further periods.
pub fn period(text: &str, unit: TimeUnit) -> Result<Period, String> {
    let (delay, duration, repeat) = triplet(text, unit)?;
    Ok(Period {
        paused: false,
        delay: Some(Quantity::Text(duration_text(delay))),
        duration: Some(Quantity::Text(duration_text(duration))),
        interval: (repeat > 1).then(|| Quantity::Text(duration_text(delay))),
        repeat: (repeat > 1).then_some(repeat - 1),
    })
}

/// `START_DELAY:COLLECTION_TIME:REPEAT` in nanoseconds (converted as rocprofv3 converts
/// them: the time times the unit, rounded down) and the number of periods (0 means one).
fn triplet(text: &str, unit: TimeUnit) -> Result<(u64, u64, u32), String> {
    let parts: Vec<&str> = text.split(':').map(str::trim).collect();
    let [delay, duration, repeat] = parts[..] else {
        return Err(format!("`{text}` is not a collection period"));
    };
    let time = |part: &str| {
        part.parse::<f64>()
            .ok()
            .filter(|t| t.is_finite() && *t >= 0.0)
            .map(|t| (t * unit.nanoseconds()) as u64)
            .ok_or_else(|| format!("`{part}` in `{text}` is not a time"))
    };
    let repeat: u32 = repeat
        .parse()
        .map_err(|_| format!("`{repeat}` in `{text}` is not a number of repeats"))?;
    Ok((time(delay)?, time(duration)?, repeat.max(1)))
}

/// Nanoseconds in the largest unit rocflow reads that keeps them whole: "1500ms".
pub fn duration_text(ns: u64) -> String {
    const UNITS: &[(&str, u64)] = &[
        ("min", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
    ];
    UNITS
        .iter()
        .find(|(_, size)| ns >= *size && ns % size == 0)
        .map_or_else(
            || format!("{ns}ns"),
            |(unit, size)| format!("{}{unit}", ns / size),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_in_nanoseconds() {
        assert_eq!(
            triplet("1:2.5:3", TimeUnit::Sec),
            Ok((1_000_000_000, 2_500_000_000, 3))
        );
        assert_eq!(
            triplet("10:20:0", TimeUnit::Msec),
            Ok((10_000_000, 20_000_000, 1))
        );
        assert!(triplet("1:2", TimeUnit::Sec).is_err());
        assert!(triplet("1:x:2", TimeUnit::Sec).unwrap_err().contains("`x`"));
        assert_eq!(duration_text(2_500_000_000), "2500ms");
        assert_eq!(duration_text(120_000_000_000), "2min");
        assert_eq!(duration_text(0), "0ns");
        assert_eq!(duration_text(1_001), "1001ns");
    }
}
