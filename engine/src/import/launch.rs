//! What of a rocprofv3 job says how to run the application rather than what to collect:
//! `rocflow run` does it itself, as rocprofv3 does; a pipeline has no place for it.

use rocflow_core::mpi::{self, Ranks};

/// How `rocflow run` starts the application for a job.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Launch {
    /// `profile_mpi_ranks`: only these ranks are profiled; the others run unprofiled.
    pub ranks: Option<Ranks>,
    /// `mpi_world_rank_variable` and `mpi_world_size_variable`: where the rank and the size
    /// are read, in rocflow and in the application.
    pub world_variables: Option<(String, String)>,
    /// `preload`: libraries put before the tool in the application's `LD_PRELOAD`.
    pub preload: Vec<String>,
    /// `log_level` of `fatal`, `error` or `warning`: rocflow says only warnings and errors.
    pub quiet: bool,
    /// `list_avail`: the agents' counters are listed before the application runs.
    pub list_avail: bool,
}

impl Launch {
    /// The environment the application gets for the world variables.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        match &self.world_variables {
            Some((rank, size)) => vec![
                (mpi::RANK_VARIABLE, rank.clone()),
                (mpi::SIZE_VARIABLE, size.clone()),
            ],
            None => Vec::new(),
        }
    }

    /// Whether this process (one rank of a job, or no MPI job) is to be profiled, read
    /// through `var` (the environment); the rank it is, when it is not.
    pub fn skips(&self, var: impl Fn(&str) -> Option<String>) -> Option<u32> {
        let ranks = self.ranks.as_ref()?;
        let names = self.env();
        let var = |name: &str| match names.iter().find(|(n, _)| *n == name) {
            Some((_, value)) => Some(value.clone()),
            None => var(name),
        };
        // Outside an MPI job the process is rank 0, as rocprofv3 takes it.
        let rank = mpi::world(var).map_or(0, |w| w.rank);
        (!ranks.contains(rank)).then_some(rank)
    }
}
