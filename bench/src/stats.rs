//! Statistics and small helpers: percentiles, the
//! output's rounding, and this process's CPU time and peak memory.

use std::time::Duration;

use hdrhistogram::Histogram;

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Percentiles of latencies in milliseconds, from an HDR histogram of them
/// in nanoseconds with 3 significant digits (each figure within 0.1% of
/// the nearest-rank value `sorted[ceil(q*n)-1]`, and never above the
/// largest value), up to an hour.
pub(crate) struct Percentiles {
    histogram: Option<Histogram<u64>>,
    max: Option<f64>,
}

/// The longest latency a histogram tells apart, in nanoseconds.
const HOUR_NS: u64 = 3_600_000_000_000;

impl Percentiles {
    /// The percentiles of `ms` (no figure if there is no value).
    pub(crate) fn of(ms: &[f64]) -> Percentiles {
        let histogram = Histogram::<u64>::new_with_bounds(1, HOUR_NS, 3)
            .ok()
            .map(|mut h| {
                for v in ms {
                    // Saturating: NaN and negatives count as 0, more than an
                    // hour as an hour.
                    h.saturating_record((v * 1e6).round() as u64);
                }
                h
            });
        Percentiles {
            histogram: histogram.filter(|h| !h.is_empty()),
            max: ms.iter().copied().max_by(f64::total_cmp),
        }
    }

    /// The `q` quantile (0..=1), in ms.
    pub(crate) fn at(&self, q: f64) -> Option<f64> {
        let at = self.histogram.as_ref()?.value_at_quantile(q) as f64 / 1e6;
        self.max.map(|max| at.min(max))
    }

    /// The largest value, in ms.
    pub(crate) fn max(&self) -> Option<f64> {
        self.max
    }
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

    /// Whether `got` is `want` within the histogram's precision (0.1%).
    fn near(got: Option<f64>, want: f64) -> bool {
        got.is_some_and(|got| (got / want - 1.0).abs() < 1e-3)
    }

    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let p = Percentiles::of(&v);
        assert!(near(p.at(0.5), 50.0), "{:?}", p.at(0.5));
        assert!(near(p.at(0.99), 99.0), "{:?}", p.at(0.99));
        assert!(near(Percentiles::of(&[3.0]).at(0.99), 3.0));
        assert!(near(Percentiles::of(&[1.0, 2.0]).at(0.5), 1.0));
        assert!(near(Percentiles::of(&[1.234_567]).at(0.5), 1.234_567));
        assert_eq!(Percentiles::of(&[]).at(0.5), None);
        // Never above the largest value.
        let p = Percentiles::of(&[2.5, 12.6798]);
        assert!(p.at(0.99) <= p.max() && p.max() == Some(12.6798));
    }

    #[test]
    fn numbers() {
        assert_eq!(num(Some(1.234_567)), Some(1.2346));
        assert_eq!(num(Some(f64::NAN)), None);
        assert_eq!(num(Some(f64::INFINITY)), None);
        assert_eq!(num(None), None);
    }
}
