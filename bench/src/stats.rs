//! Statistics and small helpers: the seeded generator, percentiles, the
//! output's rounding, and this process's CPU time and peak memory.

use std::time::Duration;

/// SplitMix64: a small seeded generator for the mixed workload's coin.
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n) (n >= 1).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((self.next_f64() * n as f64) as usize).min(n.saturating_sub(1))
    }
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Nearest-rank percentile of sorted values: `sorted[ceil(q*n)-1]`.
pub(crate) fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// A number of the output rounded to 4 decimals (as the peers print), or
/// `None` (JSON null) if there is none or it is not finite.
pub(crate) fn num(v: Option<f64>) -> Option<f64> {
    match v {
        Some(v) if v.is_finite() => Some((v * 1e4).round() / 1e4),
        _ => None,
    }
}

fn rusage() -> Option<libc::rusage> {
    // SAFETY: `rusage` is plain data (all-zero is valid); getrusage only
    // writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    (rc == 0).then_some(usage)
}

/// User + system CPU time of this process so far, in seconds.
pub(crate) fn cpu_secs() -> f64 {
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    rusage().map_or(0.0, |u| tv(u.ru_utime) + tv(u.ru_stime))
}

/// Peak resident set size of this process, in KiB.
pub(crate) fn max_rss_kb() -> Option<libc::c_long> {
    rusage().map(|u| u.ru_maxrss)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), Some(50.0));
        assert_eq!(percentile(&v, 0.99), Some(99.0));
        assert_eq!(percentile(&[3.0], 0.99), Some(3.0));
        assert_eq!(percentile(&[1.0, 2.0], 0.5), Some(1.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn coin_is_seeded_and_fair() {
        let mut a = SplitMix64(42_000);
        let mut b = SplitMix64(42_000);
        let draws: Vec<f64> = (0..10_000).map(|_| a.next_f64()).collect();
        assert!(draws
            .iter()
            .all(|&x| x == b.next_f64() && (0.0..1.0).contains(&x)));
        let reads = draws.iter().filter(|&&x| x < 0.9).count();
        assert!((8800..9200).contains(&reads), "{reads}");
    }

    #[test]
    fn numbers() {
        assert_eq!(num(Some(1.234_567)), Some(1.2346));
        assert_eq!(num(Some(f64::NAN)), None);
        assert_eq!(num(Some(f64::INFINITY)), None);
        assert_eq!(num(None), None);
    }
}
