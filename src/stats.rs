//! What a lock's acquires did: counts and wait times, as API.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::acquire::Counts;

/// Counts and wait times of the acquires made through one [`crate::SharedLock`]
/// (and its clones) since it was built, from [`crate::SharedLock::stats`].
///
/// Every acquire ends in exactly one of `grants`, `give_ups` and
/// `failures`, or is still running (or was cancelled by dropping its
/// future): `acquires >= grants + give_ups + failures`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Acquires started.
    pub acquires: u64,
    /// Acquires granted.
    pub grants: u64,
    /// Of the grants, those made after waiting without a new listing of
    /// the lock directory (hand-offs): on the watched node's deletion, or
    /// on finding it already gone when the watch was set.
    pub handoffs: u64,
    /// Of the hand-offs, those made by the watched writer's release marker
    /// (its creation's event, before the deletion's), with no read of the
    /// release record.
    pub marker_handoffs: u64,
    /// Acquires that gave up: a deadline passed, or `try_*` found the lock taken.
    pub give_ups: u64,
    /// Acquires that failed with an error.
    pub failures: u64,
    /// Listings of the lock directory (each acquire's first included).
    pub listings: u64,
    /// Watch events that woke a waiting acquire (and polls that found the
    /// watched node gone).
    pub wakeups: u64,
    /// Of the wake-ups, those that did not end in a grant: the acquire
    /// waited again, gave up or failed.
    pub spurious_wakeups: u64,
    /// Grants after a wake-up that needed a new listing (not a hand-off).
    pub relisted_grants: u64,
    /// Retryable errors (connection losses) that made an acquire list the
    /// lock directory again. Requests the driver retries in place (the
    /// create, listings, deletions) are not counted.
    pub retries: u64,
    /// The time granted acquires waited, in total.
    pub wait_time: Duration,
    /// The longest time a granted acquire waited.
    pub max_wait: Duration,
}

/// How an acquire ended, for [`Recorder::record`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Granted,
    GaveUp,
    Failed,
}

/// The shared, lock-free counters behind [`Stats`].
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    acquires: AtomicU64,
    grants: AtomicU64,
    handoffs: AtomicU64,
    marker_handoffs: AtomicU64,
    give_ups: AtomicU64,
    failures: AtomicU64,
    listings: AtomicU64,
    wakeups: AtomicU64,
    spurious_wakeups: AtomicU64,
    relisted_grants: AtomicU64,
    retries: AtomicU64,
    wait_nanos: AtomicU64,
    max_wait_nanos: AtomicU64,
}

impl Recorder {
    pub(crate) fn started(&self) {
        self.acquires.fetch_add(1, Ordering::Relaxed);
    }

    /// Records one finished acquire.
    pub(crate) fn record(&self, end: End, counts: Counts, waited: Duration) {
        let add = |counter: &AtomicU64, n: u64| {
            counter.fetch_add(n, Ordering::Relaxed);
        };
        let granted = end == End::Granted;
        let woken = u64::from(counts.wakeups);
        // The last wake-up of a granted acquire is the one that granted it.
        let useful = u64::from(granted && woken > 0);
        add(&self.listings, u64::from(counts.listings));
        add(&self.wakeups, woken);
        add(&self.spurious_wakeups, woken - useful);
        add(&self.retries, u64::from(counts.retries));
        match end {
            End::Granted => {
                add(&self.grants, 1);
                add(&self.handoffs, u64::from(counts.handoff));
                add(&self.marker_handoffs, u64::from(counts.marked));
                add(&self.relisted_grants, u64::from(woken > 0 && !counts.handoff));
                let nanos = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
                add(&self.wait_nanos, nanos);
                self.max_wait_nanos.fetch_max(nanos, Ordering::Relaxed);
            }
            End::GaveUp => add(&self.give_ups, 1),
            End::Failed => add(&self.failures, 1),
        }
    }

    pub(crate) fn get(&self) -> Stats {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Stats {
            acquires: get(&self.acquires),
            grants: get(&self.grants),
            handoffs: get(&self.handoffs),
            marker_handoffs: get(&self.marker_handoffs),
            give_ups: get(&self.give_ups),
            failures: get(&self.failures),
            listings: get(&self.listings),
            wakeups: get(&self.wakeups),
            spurious_wakeups: get(&self.spurious_wakeups),
            relisted_grants: get(&self.relisted_grants),
            retries: get(&self.retries),
            wait_time: Duration::from_nanos(get(&self.wait_nanos)),
            max_wait: Duration::from_nanos(get(&self.max_wait_nanos)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_each_end() {
        let recorder = Recorder::default();
        for _ in 0..5 {
            recorder.started();
        }
        let handoff = Counts {
            listings: 1,
            wakeups: 1,
            retries: 0,
            handoff: true,
            marked: true,
        };
        let relisted = Counts {
            listings: 3,
            wakeups: 2,
            retries: 1,
            handoff: false,
            marked: false,
        };
        recorder.record(End::Granted, handoff, Duration::from_millis(5));
        recorder.record(End::Granted, handoff, Duration::from_millis(0));
        recorder.record(End::Granted, relisted, Duration::from_millis(9));
        recorder.record(
            End::GaveUp,
            Counts {
                listings: 1,
                wakeups: 1,
                ..Counts::default()
            },
            Duration::ZERO,
        );
        recorder.record(End::Failed, Counts::default(), Duration::ZERO);
        let stats = recorder.get();
        assert_eq!(
            stats,
            Stats {
                acquires: 5,
                grants: 3,
                handoffs: 2,
                marker_handoffs: 2,
                give_ups: 1,
                failures: 1,
                listings: 6,
                wakeups: 5,
                spurious_wakeups: 2,
                relisted_grants: 1,
                retries: 1,
                wait_time: Duration::from_millis(14),
                max_wait: Duration::from_millis(9),
            }
        );
    }

    #[test]
    fn a_grant_at_once_is_neither_a_handoff_nor_relisted() {
        let recorder = Recorder::default();
        recorder.record(
            End::Granted,
            Counts {
                listings: 1,
                ..Counts::default()
            },
            Duration::ZERO,
        );
        let stats = recorder.get();
        assert_eq!(
            (
                stats.grants,
                stats.handoffs,
                stats.relisted_grants,
                stats.spurious_wakeups
            ),
            (1, 0, 0, 0)
        );
    }
}
