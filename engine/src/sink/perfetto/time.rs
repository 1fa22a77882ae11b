//! The trace's clock: rocprofiler-sdk's timestamps are nanoseconds of the boot time clock,
//! which the trace declares as its own. With a coarser `time_unit`, packets count in a
//! clock of the trace's own whose unit is that many nanoseconds; the trace's first packet
//! ties it to the boot time clock, so readers place every event in boot time nanoseconds,
//! rounded down to the unit.

use super::proto::{Encoder, TRACE_PACKET, clock, packet};
use crate::catalog::Catalog;
use crate::plan::sink::perfetto::TimeUnit;

impl TimeUnit {
    fn nanoseconds(self) -> u64 {
        match self {
            TimeUnit::Ns => 1,
            TimeUnit::Us => 1_000,
            TimeUnit::Ms => 1_000_000,
        }
    }

    /// Writes a packet's timestamp: `time`, in boot time nanoseconds, in the unit. Two
    /// packets a slice: nanoseconds, the default, are not divided (a division by one took
    /// a twentieth of the Perfetto sink's time).
    pub fn stamp(self, packet: &mut Encoder, time: u64) {
        match self {
            TimeUnit::Ns => packet.uint(packet::TIMESTAMP, time),
            unit => {
                packet.uint(packet::TIMESTAMP, time / unit.nanoseconds());
                packet.uint(packet::TIMESTAMP_CLOCK_ID, clock::SCALED);
            }
        }
    }

    /// A packet declaring the boot time clock as the trace's clock, and the clock of the
    /// unit beside it, at the first process's start.
    pub fn snapshot(self, catalog: &Catalog) -> Encoder {
        let start = catalog
            .streams()
            .filter_map(|(_, s)| s.process.as_ref().map(|p| p.start_ns))
            .min()
            .unwrap_or(0);
        let unit = self.nanoseconds();
        // A whole number of units, so that converting back gives `time` rounded down.
        let ticks = start / unit;
        let mut out = Encoder::default();
        out.message(TRACE_PACKET, |p| {
            p.message(packet::CLOCK_SNAPSHOT, |c| {
                c.message(clock::CLOCKS, |k| {
                    k.uint(clock::CLOCK_ID, clock::BOOTTIME);
                    k.uint(clock::TIMESTAMP, ticks * unit);
                });
                if self != TimeUnit::Ns {
                    c.message(clock::CLOCKS, |k| {
                        k.uint(clock::CLOCK_ID, clock::SCALED);
                        k.uint(clock::TIMESTAMP, ticks);
                        k.uint(clock::UNIT_MULTIPLIER_NS, unit);
                    });
                }
                c.uint(clock::PRIMARY_TRACE_CLOCK, clock::BOOTTIME);
            });
        });
        out
    }
}
