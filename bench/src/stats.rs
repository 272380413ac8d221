//! Statistics and small helpers: percentiles, the
//! output's rounding, and this process's CPU time and peak memory.

use std::time::Duration;

use nix::sys::resource::{getrusage, Usage, UsageWho};
use nix::sys::time::TimeVal;
use zk_rwlock_testkit::Percentiles;

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The percentiles of latencies `ms`, recorded in nanoseconds.
pub(crate) fn latencies(ms: &[f64]) -> Percentiles {
    // Saturating: NaN and negatives count as 0.
    let ns: Vec<u64> = ms.iter().map(|v| (v * 1e6).round() as u64).collect();
    Percentiles::of(&ns)
}

/// A figure of [`latencies`] back in milliseconds.
pub(crate) fn in_ms(ns: Option<u64>) -> Option<f64> {
    ns.map(|ns| ns as f64 / 1e6)
}

/// A number of the output rounded to 4 decimals (as the peers print), or
/// `None` (JSON null) if there is none or it is not finite.
pub(crate) fn num(v: Option<f64>) -> Option<f64> {
    match v {
        Some(v) if v.is_finite() => Some((v * 1e4).round() / 1e4),
        _ => None,
    }
}

fn rusage() -> Option<Usage> {
    getrusage(UsageWho::RUSAGE_SELF).ok()
}

/// User + system CPU time of this process so far, in seconds.
pub(crate) fn cpu_secs() -> f64 {
    let tv = |t: TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    rusage().map_or(0.0, |u| tv(u.user_time()) + tv(u.system_time()))
}

/// Peak resident set size of this process, in KiB.
pub(crate) fn max_rss_kb() -> Option<std::ffi::c_long> {
    rusage().map(|u| u.max_rss())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_in_ms() {
        let p = latencies(&[2.5, 12.6798]);
        assert_eq!(in_ms(p.max()), Some(12.6798));
        let p50 = in_ms(p.at(50.0)).unwrap_or_default();
        assert!((p50 / 2.5 - 1.0).abs() < 1e-3, "{p50}");
        assert_eq!(in_ms(latencies(&[]).at(50.0)), None);
    }

    #[test]
    fn numbers() {
        assert_eq!(num(Some(1.234_567)), Some(1.2346));
        assert_eq!(num(Some(f64::NAN)), None);
        assert_eq!(num(Some(f64::INFINITY)), None);
        assert_eq!(num(None), None);
    }
}
