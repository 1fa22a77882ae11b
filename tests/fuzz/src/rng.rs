//! A small deterministic random number generator: a campaign is replayed exactly from its
//! seed, and no dependency is needed for it.

/// SplitMix64: one addition and a few multiply-xorshift rounds per number, a full period,
/// and well-mixed output even from seeds such as 0, 1, 2.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`; `n` must not be 0.
    pub fn below(&mut self, n: usize) -> usize {
        // The modulo bias is below 2^-40 for the sizes used here.
        (self.next_u64() % n as u64) as usize
    }

    /// True once in `n` times on average.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// One of `items`, which must not be empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// One of `items`, `None` when there are none.
    pub fn choose<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        (!items.is_empty()).then(|| self.pick(items))
    }

    /// A count in `1..=max`, most often small: as likely to be below 8 as between 8 and
    /// 64, so most mutations stay local while a few reach far (deep nesting, long runs).
    pub fn count(&mut self, max: usize) -> usize {
        let bits = usize::BITS - max.leading_zeros();
        let limit = (1usize << self.below(bits as usize + 1)).min(max);
        1 + self.below(limit)
    }
}

/// FNV-1a: a hash that is the same on every machine and in every build, for the names of
/// saved inputs and each target's stream of mutations.
pub fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_numbers() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let mut r = Rng::new(7);
        assert_eq!(a, (0..4).map(|_| r.next_u64()).collect::<Vec<_>>());
        assert_ne!(a[0], Rng::new(8).next_u64());
    }

    #[test]
    fn counts_stay_in_range_and_reach_both_ends() {
        let mut r = Rng::new(1);
        let counts: Vec<usize> = (0..10_000).map(|_| r.count(1000)).collect();
        assert!(counts.iter().all(|&c| (1..=1000).contains(&c)));
        assert!(counts.contains(&1));
        assert!(counts.iter().any(|&c| c > 500));
    }
}
