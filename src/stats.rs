//! What a lock's acquires did: counts and wait times, as API; the
//! acquires waiting and the guards holding now. The same events feed the
//! lock's metrics ([`crate::metrics`], the room below: it knows nothing of
//! this one), which record nothing without the `metrics` feature.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::acquire::Counts;
pub(crate) use crate::metrics::LostReason;
use crate::metrics::{LockMetrics, Outcome};
use crate::node_name::Mode;
use crate::zk;

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
    /// Acquires in progress now: started and not yet granted, given up,
    /// failed or cancelled.
    pub waiting: u64,
    /// Guards holding the lock now (held or suspended): granted, and not
    /// yet released, dropped or known lost.
    pub holding: u64,
    /// Guards known lost (node deleted by someone else, session ended,
    /// lease ran out), each counted once: when its loss is noticed (see
    /// [`crate::metrics`]), or by its release finding its node gone.
    pub lost: u64,
}

/// How an acquire ended, for [`Recorder::record`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Granted,
    GaveUp,
    Failed,
}

impl End {
    /// How an acquire that returned `result` ended: a guard is a grant, none a
    /// give-up (its time ran out).
    pub(crate) fn of<T, E>(result: &Result<Option<T>, E>) -> End {
        match result {
            Ok(Some(_)) => End::Granted,
            Ok(None) => End::GaveUp,
            Err(_) => End::Failed,
        }
    }
}

impl From<End> for Outcome {
    fn from(end: End) -> Outcome {
        match end {
            End::Granted => Outcome::Granted,
            End::GaveUp => Outcome::Timeout,
            End::Failed => Outcome::Failed,
        }
    }
}

/// The shared, lock-free counters behind [`Stats`].
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
    /// What goes up and down, shared with the guards.
    live: Arc<Live>,
}

/// The acquires waiting and the guards holding one lock, the guards
/// lost, and its metrics.
#[derive(Default)]
struct Live {
    waiting: AtomicU64,
    holding: AtomicU64,
    lost: AtomicU64,
    metrics: LockMetrics,
}

impl Recorder {
    /// The recorder of a lock whose metrics carry the label `path`, if given.
    pub(crate) fn new(path_label: Option<&str>) -> Recorder {
        let zero = || AtomicU64::new(0);
        Recorder {
            acquires: zero(),
            grants: zero(),
            handoffs: zero(),
            marker_handoffs: zero(),
            give_ups: zero(),
            failures: zero(),
            listings: zero(),
            wakeups: zero(),
            spurious_wakeups: zero(),
            relisted_grants: zero(),
            retries: zero(),
            wait_nanos: zero(),
            max_wait_nanos: zero(),
            live: Arc::new(Live {
                metrics: LockMetrics::new(path_label),
                ..Live::default()
            }),
        }
    }

    /// An acquire in `mode` starts: it waits until the returned token is
    /// [finished](Waiter::finish), or dropped (cancelled).
    pub(crate) fn started(&self, mode: Mode) -> Waiter<'_> {
        self.acquires.fetch_add(1, Ordering::Relaxed);
        self.live.waiting.fetch_add(1, Ordering::Relaxed);
        self.live.metrics.waiter_in(mode);
        Waiter {
            recorder: self,
            mode,
            started: Instant::now(),
            finished: false,
        }
    }

    /// A guard of `mode` on `client`'s session begins to hold the lock: it
    /// holds until the returned token ends or is dropped.
    pub(crate) fn holder(&self, mode: Mode, client: &zk::Client) -> Holder {
        self.live.metrics.holder_in(mode, client);
        self.hold(mode)
    }

    fn hold(&self, mode: Mode) -> Holder {
        self.live.holding.fetch_add(1, Ordering::Relaxed);
        Holder {
            live: self.live.clone(),
            mode,
            since: std::time::Instant::now(),
            holding: true,
        }
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
            waiting: get(&self.live.waiting),
            holding: get(&self.live.holding),
            lost: get(&self.live.lost),
        }
    }
}

/// An acquire in progress: counted in [`Stats::waiting`] (and the
/// `zk_rwlock_waiters` gauge) until finished or dropped; dropped
/// unfinished, it records a cancelled acquire's wait.
pub(crate) struct Waiter<'a> {
    recorder: &'a Recorder,
    mode: Mode,
    started: Instant,
    finished: bool,
}

impl Waiter<'_> {
    /// The acquire ended: records it.
    pub(crate) fn finish(mut self, end: End, counts: Counts) {
        self.finished = true;
        let waited = self.started.elapsed();
        self.recorder.record(end, counts, waited);
        let metrics = &self.recorder.live.metrics;
        metrics.acquire_ended(self.mode, end.into(), waited, counts);
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        let live = &self.recorder.live;
        live.waiting.fetch_sub(1, Ordering::Relaxed);
        live.metrics.waiter_out(self.mode, self.finished, self.started);
    }
}

/// A guard holding the lock: counted in [`Stats::holding`] (and the
/// `zk_rwlock_holders` gauge) until it is released, lost or dropped, when
/// its hold time is recorded.
pub(crate) struct Holder {
    live: Arc<Live>,
    mode: Mode,
    since: std::time::Instant,
    holding: bool,
}

impl Holder {
    /// The guard's mode changes (a downgrade): it moves in the gauge.
    pub(crate) fn set_mode(&mut self, mode: Mode) {
        self.live.metrics.holder_moved(self.mode, mode);
        self.mode = mode;
    }

    /// The guard is known lost, for `reason`.
    pub(crate) fn lost(mut self, reason: LostReason) {
        self.end();
        self.live.lost(reason);
    }

    /// The guard's release begins; the returned [`Released`] records a
    /// loss the release finds.
    pub(crate) fn release(mut self) -> Released {
        self.end();
        Released(self.live.clone())
    }

    fn end(&mut self) {
        if std::mem::take(&mut self.holding) {
            self.live.holding.fetch_sub(1, Ordering::Relaxed);
            self.live.metrics.holder_out(self.mode, self.since);
        }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.end();
    }
}

impl Live {
    fn lost(&self, reason: LostReason) {
        self.lost.fetch_add(1, Ordering::Relaxed);
        self.metrics.lost(reason);
    }
}

/// A guard whose release has begun.
pub(crate) struct Released(Arc<Live>);

impl Released {
    /// The release found the guard lost before it, for `reason`.
    pub(crate) fn lost(&self, reason: LostReason) {
        self.0.lost(reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_each_end() {
        let recorder = Recorder::new(None);
        for _ in 0..5 {
            recorder.acquires.fetch_add(1, Ordering::Relaxed);
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
                waiting: 0,
                holding: 0,
                lost: 0,
            }
        );
    }

    #[test]
    fn a_grant_at_once_is_neither_a_handoff_nor_relisted() {
        let recorder = Recorder::new(None);
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

    #[test]
    fn waiters_and_holders_are_counted_until_they_end() {
        let recorder = Recorder::new(None);
        let count = |r: &Recorder| (r.get().waiting, r.get().holding);
        let first = recorder.started(Mode::Write);
        let second = recorder.started(Mode::Read);
        assert_eq!(count(&recorder), (2, 0));
        // Finished or cancelled (dropped), an acquire no longer waits.
        first.finish(End::Granted, Counts::default());
        assert_eq!(count(&recorder), (1, 0));
        drop(second);
        assert_eq!(count(&recorder), (0, 0));
        assert_eq!((recorder.get().acquires, recorder.get().grants), (2, 1));

        let released = recorder.hold(Mode::Write);
        let mut lost = recorder.hold(Mode::Write);
        let dropped = recorder.hold(Mode::Read);
        assert_eq!(count(&recorder), (0, 3));
        lost.set_mode(Mode::Read);
        assert_eq!((count(&recorder), lost.mode), ((0, 3), Mode::Read));
        let released = released.release();
        assert_eq!((count(&recorder), recorder.get().lost), ((0, 2), 0));
        released.lost(LostReason::NodeDeleted);
        assert_eq!((count(&recorder), recorder.get().lost), ((0, 2), 1));
        lost.lost(LostReason::LeaseRanOut);
        assert_eq!((count(&recorder), recorder.get().lost), ((0, 1), 2));
        drop(dropped);
        assert_eq!((count(&recorder), recorder.get().lost), ((0, 0), 2));
    }

    #[test]
    fn outcomes() {
        assert_eq!(Outcome::from(End::Granted), Outcome::Granted);
        assert_eq!(Outcome::from(End::GaveUp), Outcome::Timeout);
        assert_eq!(Outcome::from(End::Failed), Outcome::Failed);
    }
}
