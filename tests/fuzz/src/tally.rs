//! What a campaign did per target: inputs, time and rates, for the line each target ends
//! with and the table a campaign ends with. The rate per core is counted in the
//! processor time the workers used, so it says what one core does whatever else the
//! machine runs, and what a campaign on N cores will do.

use std::fmt;
use std::time::Duration;

/// What workers did: inputs run (seeds included), processor time used, workers started.
#[derive(Debug, Default, Clone, Copy)]
pub struct Work {
    pub inputs: u64,
    pub cpu: Duration,
    pub workers: u64,
}

impl Work {
    pub fn add(&mut self, other: &Work) {
        self.inputs += other.inputs;
        self.cpu += other.cpu;
        self.workers += other.workers;
    }
}

/// A target's campaign, summed over its workers.
#[derive(Debug)]
pub struct Tally {
    pub target: &'static str,
    pub wall: Duration,
    pub work: Work,
    pub failures: usize,
    pub repeats: u64,
}

impl Tally {
    pub fn new(target: &'static str, wall: Duration) -> Tally {
        Tally {
            target,
            wall,
            work: Work::default(),
            failures: 0,
            repeats: 0,
        }
    }

    pub fn add(&mut self, work: &Work) {
        self.work.add(work);
    }

    /// Inputs per second of the campaign's time.
    fn rate(&self) -> f64 {
        self.work.inputs as f64 / self.wall.as_secs_f64().max(1e-3)
    }

    /// Inputs per second of one core's time.
    fn per_core(&self) -> f64 {
        self.work.inputs as f64 / self.work.cpu.as_secs_f64().max(1e-3)
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} inputs in {:.0} s ({:.0}/s, {:.0}/s per core); workers: {}, failures: {}, repeats: {}",
            self.target,
            self.work.inputs,
            self.wall.as_secs_f64(),
            self.rate(),
            self.per_core(),
            self.work.workers,
            self.failures,
            self.repeats
        )
    }
}

/// The table a campaign ends with: a row per target, and the hours 10^7 inputs per
/// target would take at each rate on the cores this campaign had.
pub fn table(tallies: &[Tally], jobs: usize) -> String {
    let mut out = format!(
        "\n{:<14} {:>12} {:>8} {:>10} {:>14} {:>9}\n",
        "target", "inputs", "seconds", "inputs/s", "per core/s", "failures"
    );
    let mut hours = 0.0;
    for t in tallies {
        out.push_str(&format!(
            "{:<14} {:>12} {:>8.0} {:>10.0} {:>14.0} {:>9}\n",
            t.target,
            t.work.inputs,
            t.wall.as_secs_f64(),
            t.rate(),
            t.per_core(),
            t.failures
        ));
        hours += 1e7 / (t.per_core() * jobs.max(1) as f64) / 3600.0;
    }
    out.push_str(&format!(
        "10^7 inputs per target at these rates on {jobs} cores: {hours:.2} h\n"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_count_wall_time_and_processor_time_apart() {
        let mut tally = Tally::new("spool", Duration::from_secs(10));
        tally.add(&Work {
            inputs: 40_000,
            cpu: Duration::from_secs(20),
            workers: 2,
        });
        assert_eq!(tally.rate(), 4000.0);
        assert_eq!(tally.per_core(), 2000.0);
        let table = table(&[tally], 16);
        // 10^7 / (2000/s x 16) = 312.5 s.
        assert!(table.contains("on 16 cores: 0.09 h"), "{table}");
        assert!(table.contains("spool"), "{table}");
    }
}
