//! Tallies of a run: the safety counter, errors and wake-up counting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use serde::Serialize;
use zk_rwlock::{Mode, SharedLock};

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

/// Wake-ups of waiting acquires, from the stats of every lock of the run
/// ([`SharedLock::stats`]), counted from the last reset.
#[derive(Default)]
pub(crate) struct WakeCounters {
    locks: Mutex<Vec<SharedLock>>,
    base: Mutex<Option<Wakes>>,
}

impl WakeCounters {
    /// Counts the acquires of `lock` from now on (and those it made before
    /// the next reset).
    pub(crate) fn track(&self, lock: &SharedLock) {
        self.locks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(lock.clone());
    }

    fn total(&self) -> Wakes {
        let locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.iter().map(SharedLock::stats).fold(
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
