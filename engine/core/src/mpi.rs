//! A process's MPI rank and world size, from the variables launchers set: read by the tool
//! in each profiled process (its outputs' `{rank}`) and by `rocflow run` itself, which a
//! launcher starts once per rank (`--profile-mpi-ranks`).

use std::fmt;
use std::ops::RangeInclusive;

/// The variables that name another rank and size variable (rocprofv3's
/// `--mpi-world-rank-variable` and `--mpi-world-size-variable` set them).
pub const RANK_VARIABLE: &str = "ROCPROF_MPI_RANK_VAR";
pub const SIZE_VARIABLE: &str = "ROCPROF_MPI_SIZE_VAR";

/// Rank and size variables, in the order rocprofv3 reads them (PBS, Slurm, PMI, MVAPICH2,
/// Open MPI, then MPICH's and generic names), with PMIx's rank after PMI's. The first
/// pair whose rank is set wins.
const PAIRS: &[(&str, Option<&str>)] = &[
    ("PBS_NODENUM", Some("PBS_O_TASKNUM")),
    ("SLURM_PROCID", Some("SLURM_NTASKS")),
    ("PMI_RANK", Some("PMI_SIZE")),
    ("PMIX_RANK", None),
    ("MV2_COMM_WORLD_RANK", Some("MV2_COMM_WORLD_SIZE")),
    ("OMPI_COMM_WORLD_RANK", Some("OMPI_COMM_WORLD_SIZE")),
    ("MPI_RANKID", Some("MPI_NRANKS")),
    ("MPI_LOCALRANKID", Some("MPI_LOCALNRANKS")),
    ("MPI_RANK", Some("MPI_SIZE")),
];

/// Where a process stands in its MPI job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct World {
    pub rank: u32,
    /// The number of ranks, where the launcher says.
    pub size: Option<u32>,
    /// The variable the rank was read from.
    pub variable: String,
}

/// The process's place in its MPI job, read through `var` (the environment): from the
/// variables [`RANK_VARIABLE`] and [`SIZE_VARIABLE`] name when set, else from the first
/// launcher's variables found.
pub fn world(var: impl Fn(&str) -> Option<String>) -> Option<World> {
    let number = |name: &str| var(name)?.trim().parse::<u32>().ok();
    let read = |rank: &str, size: Option<&str>| {
        Some(World {
            rank: number(rank)?,
            size: size.and_then(number),
            variable: rank.to_owned(),
        })
    };
    if let Some(rank) = var(RANK_VARIABLE) {
        return read(&rank, var(SIZE_VARIABLE).as_deref());
    }
    PAIRS.iter().find_map(|(rank, size)| read(rank, *size))
}

/// The launcher's variable that holds the world size beside `rank_variable`, for the
/// launchers rocprofv3 reads (none for a variable named by [`RANK_VARIABLE`]).
pub fn size_variable(rank_variable: &str) -> Option<&'static str> {
    PAIRS
        .iter()
        .find(|(rank, _)| *rank == rank_variable)
        .and_then(|(_, size)| *size)
}

/// The launchers' rank variables, in the order rocprofv3 reads them.
pub fn rank_variables() -> impl Iterator<Item = &'static str> {
    PAIRS.iter().map(|(rank, _)| *rank)
}

/// Ranks as rocprofv3's `--profile-mpi-ranks` writes them: `0-3,8,10-15`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranks(Vec<RangeInclusive<u32>>);

/// Why a rank list does not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRanks(pub String);

impl fmt::Display for BadRanks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a rank, nor a range of ranks like 0-3",
            self.0
        )
    }
}

impl Ranks {
    pub fn parse(text: &str) -> Result<Ranks, BadRanks> {
        let number = |part: &str| {
            part.trim()
                .parse::<u32>()
                .map_err(|_| BadRanks(part.into()))
        };
        let ranges = text.split(',').map(|part| match part.split_once('-') {
            Some((first, last)) => {
                let (first, last) = (number(first)?, number(last)?);
                match first <= last {
                    true => Ok(first..=last),
                    false => Err(BadRanks(part.trim().into())),
                }
            }
            None => number(part).map(|rank| rank..=rank),
        });
        ranges.collect::<Result<_, _>>().map(Ranks)
    }

    pub fn contains(&self, rank: u32) -> bool {
        self.0.iter().any(|range| range.contains(&rank))
    }

    /// The highest rank named.
    pub fn last(&self) -> u32 {
        self.0.iter().map(|r| *r.end()).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            let found = pairs.iter().find(|(n, _)| *n == name);
            found.map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn launchers_are_read_in_rocprofv3s_order() {
        let both = [
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("SLURM_PROCID", "5"),
            ("SLURM_NTASKS", "16"),
        ];
        let found = world(env(&both)).unwrap();
        assert_eq!((found.rank, found.size), (5, Some(16)));
        assert_eq!(found.variable, "SLURM_PROCID");
        assert_eq!(size_variable(&found.variable), Some("SLURM_NTASKS"));
        let pmix = world(env(&[("PMIX_RANK", "2")])).unwrap();
        assert_eq!(size_variable(&pmix.variable), None);
        assert_eq!((pmix.rank, pmix.size), (2, None));
        assert_eq!(world(env(&[("HOME", "/root")])), None);
    }

    #[test]
    fn named_variables_come_first() {
        let pairs = [
            (RANK_VARIABLE, "MY_RANK"),
            (SIZE_VARIABLE, "MY_SIZE"),
            ("MY_RANK", "7"),
            ("MY_SIZE", "9"),
            ("SLURM_PROCID", "1"),
        ];
        let found = world(env(&pairs)).unwrap();
        assert_eq!((found.rank, found.size), (7, Some(9)));
        assert_eq!(world(env(&[(RANK_VARIABLE, "UNSET")])), None);
    }

    #[test]
    fn rank_lists() {
        let ranks = Ranks::parse("0-3,8, 10-15").unwrap();
        assert!([0, 3, 8, 10, 15].iter().all(|&r| ranks.contains(r)));
        assert!(![4, 9, 16].iter().any(|&r| ranks.contains(r)));
        assert_eq!(ranks.last(), 15);
        assert_eq!(Ranks::parse("0-x").unwrap_err(), BadRanks("x".into()));
        assert_eq!(Ranks::parse("5-2").unwrap_err(), BadRanks("5-2".into()));
        assert!(Ranks::parse("").is_err());
    }
}
