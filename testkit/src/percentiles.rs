//! Percentiles from an HDR histogram: the bench's latencies and the demo's
//! waits and hand-offs.

use hdrhistogram::Histogram;

/// The largest value told apart: an hour in nanoseconds. Larger values
/// count as this.
const HIGHEST: u64 = 3_600_000_000_000;

/// Percentiles of a set of values, from an HDR histogram of them with 3
/// significant digits: each figure is within 0.1% of the nearest-rank value
/// (`sorted[ceil(p/100*n)-1]`), exact below 2,048, and never above the
/// largest value.
#[derive(Debug, Clone)]
pub struct Percentiles {
    histogram: Option<Histogram<u64>>,
    max: Option<u64>,
}

impl Percentiles {
    /// The percentiles of `values` (no figure if there is none).
    pub fn of(values: &[u64]) -> Percentiles {
        let histogram = Histogram::<u64>::new_with_bounds(1, HIGHEST, 3)
            .ok()
            .map(|mut h| {
                for &v in values {
                    h.saturating_record(v);
                }
                h
            });
        Percentiles {
            histogram: histogram.filter(|h| !h.is_empty()),
            max: values.iter().copied().max(),
        }
    }

    /// The `p`-th percentile (0..=100).
    pub fn at(&self, p: f64) -> Option<u64> {
        let at = self.histogram.as_ref()?.value_at_percentile(p);
        self.max.map(|max| at.min(max))
    }

    /// The largest value.
    pub fn max(&self) -> Option<u64> {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::Percentiles;

    #[test]
    fn nearest_rank_within_the_precision() {
        let v: Vec<u64> = (1..=100).collect();
        let p = Percentiles::of(&v);
        assert_eq!(p.at(50.0), Some(50));
        assert_eq!(p.at(99.0), Some(99));
        assert_eq!(p.at(100.0), Some(100));
        assert_eq!(Percentiles::of(&[7]).at(99.0), Some(7));
        assert_eq!(Percentiles::of(&[1, 2]).at(50.0), Some(1));
        assert_eq!(Percentiles::of(&[]).at(50.0), None);
        // Within 0.1% above 2,048, and never above the largest value.
        let big = Percentiles::of(&[1_234_567]).at(50.0).unwrap_or_default();
        assert!(big.abs_diff(1_234_567) < 1_235 && big <= 1_234_567, "{big}");
        let p = Percentiles::of(&[2_500_000, 12_679_800]);
        assert!(p.at(99.0) <= p.max() && p.max() == Some(12_679_800));
    }
}
