//! SplitMix64: the small seeded generator of the soak's fault schedule, the
//! simulation's schedules, the demo's workers and the bench's mixed
//! workload (the same seed gives the same run). Not for cryptography.

/// A seeded SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`: the top 53 of the next 64 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// An index into a slice of `len` elements (0 when `len` is 0).
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// A value in `lo..=hi` (`lo` when `hi <= lo`).
    pub fn range(&mut self, (lo, hi): (u64, u64)) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below((hi - lo).saturating_add(1))
    }

    /// True once in `n` draws on average.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.next_u64().is_multiple_of(n)
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn seeded_and_in_range() {
        let draws = |seed| {
            let mut r = SplitMix64::new(seed);
            (0..5).map(|_| r.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7)[0], draws(8)[0]);
        let mut r = SplitMix64::new(1);
        let mut seen = [false; 11];
        for _ in 0..1000 {
            let v = r.range((20, 30));
            assert!((20..=30).contains(&v), "{v}");
            seen[(v - 20) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s), "every value of the range comes up");
        assert_eq!(r.range((5, 5)), 5);
        assert_eq!(r.range((9, 3)), 9);
        assert_eq!(r.index(0), 0);
    }

    #[test]
    fn coin_is_seeded_and_fair() {
        let (mut a, mut b) = (SplitMix64(42_000), SplitMix64(42_000));
        let draws: Vec<f64> = (0..10_000).map(|_| a.next_f64()).collect();
        assert!(draws
            .iter()
            .all(|&x| x == b.next_f64() && (0.0..1.0).contains(&x)));
        let reads = draws.iter().filter(|&&x| x < 0.9).count();
        assert!((8800..9200).contains(&reads), "{reads}");
    }
}
