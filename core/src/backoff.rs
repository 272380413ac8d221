//! The pauses of every retry loop in the library, and when each stops
//! retrying: one rule, [`Backoff`], with a named policy per loop.
//!
//! A pause doubles from the policy's first up to its longest; a loop whose
//! requests keep failing gives up once they have failed for longer than the
//! policy allows (if it allows a limit at all). The driver keeps the clock:
//! it passes how long the requests have been failing.

use std::time::Duration;

/// How a retry loop pauses, and when it gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The first pause.
    pub first: Duration,
    /// The longest pause.
    pub longest: Duration,
    /// Give up once the requests have failed for longer than this (`None`:
    /// never; the loop ends for reasons of its own).
    pub give_up_after: Option<Duration>,
}

impl Backoff {
    /// An idempotent request retried through connection loss (the lock's
    /// requests, `status`, revocation): from 1 ms to 100 ms, given up after
    /// twice the session timeout. By then the client has declared the
    /// session expired if it could not reconnect, so an error still coming
    /// back means its session task is gone.
    pub fn request(session_timeout: Duration) -> Backoff {
        Backoff {
            first: Duration::from_millis(1),
            longest: Duration::from_millis(100),
            give_up_after: Some(session_timeout * 2),
        }
    }

    /// Checks of a node that cannot be watched (its `exists` watch was
    /// refused), until it is gone: from 10 ms to 200 ms, given up after
    /// twice the session timeout of failing checks.
    pub fn poll(session_timeout: Duration) -> Backoff {
        Backoff {
            first: Duration::from_millis(10),
            longest: Duration::from_millis(200),
            give_up_after: Some(session_timeout * 2),
        }
    }

    /// A guard's watch on its own node, set again after a failure: from
    /// 10 ms to 1 s, for the guard's whole life.
    pub const HELD_WATCH: Backoff = Backoff {
        first: Duration::from_millis(10),
        longest: Duration::from_secs(1),
        give_up_after: None,
    };

    /// A leader's announcement, kept against writes by others: from 10 ms
    /// to 1 s, for the leadership's whole life.
    pub const ANNOUNCEMENT: Backoff = Backoff {
        first: Duration::from_millis(10),
        longest: Duration::from_secs(1),
        give_up_after: None,
    };

    /// An election's observer after a failed look: from 50 ms to 1 s, for
    /// as long as someone listens.
    pub const OBSERVER: Backoff = Backoff {
        first: Duration::from_millis(50),
        longest: Duration::from_secs(1),
        give_up_after: None,
    };

    /// The pause after one of `last` (`Duration::ZERO` before the first).
    pub fn next(&self, last: Duration) -> Duration {
        (last * 2).clamp(self.first, self.longest)
    }

    /// Whether a loop whose requests have failed for `failing_for` gives up.
    pub fn gives_up(&self, failing_for: Duration) -> bool {
        self.give_up_after.is_some_and(|limit| failing_for > limit)
    }

    /// The pause after one of `last`, or `None` once the requests have
    /// failed for too long (`failing_for`).
    pub fn pause(&self, failing_for: Duration, last: Duration) -> Option<Duration> {
        (!self.gives_up(failing_for)).then(|| self.next(last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn pauses_double_from_the_first_to_the_longest() {
        // (policy, last pause, next pause)
        let second = Duration::from_secs(1);
        let table = [
            (Backoff::request(second), ms(0), ms(1)),
            (Backoff::request(second), ms(1), ms(2)),
            (Backoff::request(second), ms(80), ms(100)),
            (Backoff::request(second), ms(100), ms(100)),
            (Backoff::poll(second), ms(0), ms(10)),
            (Backoff::poll(second), ms(150), ms(200)),
            (Backoff::HELD_WATCH, ms(0), ms(10)),
            (Backoff::HELD_WATCH, ms(640), ms(1000)),
            (Backoff::ANNOUNCEMENT, ms(20), ms(40)),
            (Backoff::OBSERVER, ms(0), ms(50)),
            (Backoff::OBSERVER, ms(800), ms(1000)),
        ];
        for (policy, last, next) in table {
            assert_eq!(policy.next(last), next, "{policy:?} after {last:?}");
        }
    }

    #[test]
    fn a_loop_gives_up_only_past_its_limit() {
        let second = Duration::from_secs(1);
        // (policy, failing for, gives up)
        let table = [
            (Backoff::request(second), Duration::ZERO, false),
            (Backoff::request(second), second * 2, false),
            (Backoff::request(second), second * 2 + ms(1), true),
            (Backoff::poll(second), second * 2, false),
            (Backoff::poll(second), second * 2 + ms(1), true),
            (Backoff::HELD_WATCH, Duration::from_secs(3600), false),
            (Backoff::ANNOUNCEMENT, Duration::from_secs(3600), false),
            (Backoff::OBSERVER, Duration::from_secs(3600), false),
        ];
        for (policy, failing_for, gives_up) in table {
            assert_eq!(
                policy.gives_up(failing_for),
                gives_up,
                "{policy:?} after {failing_for:?}"
            );
            assert_eq!(policy.pause(failing_for, ms(1)).is_none(), gives_up);
        }
    }
}
