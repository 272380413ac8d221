//! Tallies of a run: the safety counter, errors and wake-up counting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use serde::Serialize;
use zk_rwlock::{Mode, Semaphore, SharedLock, Stats};

/// The process-wide (readers, writers) count of the peers' safety check.
#[derive(Default)]
pub(crate) struct Holders {
    state: Mutex<HolderState>,
}

#[derive(Default)]
struct HolderState {
    readers: i64,
    writers: i64,
    violations: u64,
    /// `semaphore`: permits held now, and the most held at once.
    permits: i64,
    max_permits: i64,
}

impl Holders {
    /// Right after an acquire returned.
    pub(crate) fn acquired(&self, mode: Mode) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match mode {
            Mode::Read => {
                s.readers += 1;
                if s.writers > 0 {
                    s.violations += 1;
                }
            }
            Mode::Write => {
                s.writers += 1;
                if s.writers > 1 || s.readers > 0 {
                    s.violations += 1;
                }
            }
        }
    }

    /// Right before a release.
    pub(crate) fn releasing(&self, mode: Mode) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match mode {
            Mode::Read => s.readers -= 1,
            Mode::Write => s.writers -= 1,
        }
    }

    /// `semaphore`: right after an acquire of one of `limit` permits
    /// returned; more than `limit` holders at once is a violation.
    pub(crate) fn permit_acquired(&self, limit: u32) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.permits += 1;
        s.max_permits = s.max_permits.max(s.permits);
        if s.permits > i64::from(limit) {
            s.violations += 1;
        }
    }

    /// `semaphore`: right before a permit's release.
    pub(crate) fn permit_releasing(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).permits -= 1;
    }

    /// `semaphore`: the most permit holders seen at once.
    pub(crate) fn max_permit_holders(&self) -> u64 {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        u64::try_from(s.max_permits).unwrap_or(0)
    }

    pub(crate) fn violations(&self) -> u64 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).violations
    }

    /// Adds violations counted elsewhere (per entity).
    pub(crate) fn add_violations(&self, n: u64) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).violations += n;
    }
}

/// Errors of lock or client calls during the run.
#[derive(Default)]
pub(crate) struct Errors {
    pub(crate) count: AtomicU64,
    pub(crate) first: OnceLock<String>,
}

impl Errors {
    pub(crate) fn record(&self, e: &dyn std::fmt::Display) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let text = e.to_string();
        eprintln!("error: {text}");
        let _ = self.first.set(text);
    }
}

/// Wake-ups of waiting acquires, from the stats of every lock or semaphore
/// of the run ([`SharedLock::stats`], [`Semaphore::stats`]), counted from
/// the last reset.
#[derive(Default)]
pub(crate) struct WakeCounters {
    locks: Mutex<Vec<Counted>>,
    base: Mutex<Option<Wakes>>,
}

/// What [`WakeCounters`] sums.
enum Counted {
    Lock(SharedLock),
    Semaphore(Semaphore),
}

impl Counted {
    fn stats(&self) -> Stats {
        match self {
            Counted::Lock(lock) => lock.stats(),
            Counted::Semaphore(semaphore) => semaphore.stats(),
        }
    }
}

impl WakeCounters {
    /// Counts the acquires of `lock` from now on (and those it made before
    /// the next reset).
    pub(crate) fn track(&self, lock: &SharedLock) {
        self.locks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Counted::Lock(lock.clone()));
    }

    /// As [`WakeCounters::track`], for a semaphore.
    pub(crate) fn track_semaphore(&self, semaphore: &Semaphore) {
        self.locks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Counted::Semaphore(semaphore.clone()));
    }

    fn total(&self) -> Wakes {
        let locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.iter().map(Counted::stats).fold(
            Wakes {
                wakeups: 0,
                spurious: 0,
                relisted: 0,
            },
            |sum, stats| Wakes {
                wakeups: sum.wakeups + stats.wakeups,
                spurious: sum.spurious + stats.spurious_wakeups,
                relisted: sum.relisted + stats.relisted_grants,
            },
        )
    }

    /// Lets go of the tracked locks (and so of their sessions), keeping
    /// nothing to count: call it once the counts are taken.
    pub(crate) fn clear(&self) {
        self.locks.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    pub(crate) fn reset(&self) {
        let total = self.total();
        *self.base.lock().unwrap_or_else(|p| p.into_inner()) = Some(total);
    }

    pub(crate) fn get(&self) -> Wakes {
        let total = self.total();
        match *self.base.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(base) => Wakes {
                wakeups: total.wakeups - base.wakeups,
                spurious: total.spurious - base.spurious,
                relisted: total.relisted - base.relisted,
            },
            None => total,
        }
    }
}

/// A snapshot of [`WakeCounters`], and the output's wake-up fields.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct Wakes {
    pub(crate) wakeups: u64,
    #[serde(rename = "spurious_wakeups")]
    pub(crate) spurious: u64,
    #[serde(rename = "relisted_wakeups")]
    pub(crate) relisted: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permit_holders_past_the_limit_are_violations() {
        let holders = Holders::default();
        holders.permit_acquired(2);
        holders.permit_acquired(2);
        assert_eq!(holders.violations(), 0);
        holders.permit_acquired(2);
        assert_eq!(holders.violations(), 1, "a third holder of two permits");
        holders.permit_releasing();
        holders.permit_releasing();
        holders.permit_acquired(2);
        assert_eq!(holders.violations(), 1);
        assert_eq!(holders.max_permit_holders(), 3);
    }
}
