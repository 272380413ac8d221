//! What workers tell the parent: one JSON object per line on stdout, and the
//! clock that stamps them.
//!
//! Every event carries `t_us`, microseconds of `CLOCK_MONOTONIC`: one clock
//! for all processes of a machine, so the parent can put the events of all
//! workers on one time line.

use serde::{Deserialize, Serialize};

/// One line of a worker's stdout, e.g. `{"ev":"grant","t_us":12,"token":4294967301,"node":"/l/x-W-0000000003"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// When it happened: microseconds of `CLOCK_MONOTONIC`.
    pub t_us: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: Kind,
}

/// What a worker reports.
///
/// `lease_us` is the holder's lease deadline (see `zk_rwlock::lease`) on the
/// same clock as `t_us`: no one else can be granted a conflicting lock
/// before it. In `grant`, `suspended`, `resumed`, `release` and `lost` it is
/// read after `t_us` was taken, so it bounds the deadline at `t_us` from
/// above; in `write` it is read before the write, so it bounds the deadline
/// during the write from below.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum Kind {
    /// Connected (session id in hex); waiting for the parent's `go`.
    Ready {
        /// The ZooKeeper session id.
        session: String,
    },
    /// The previous session ended (expired or closed); the worker goes on
    /// with this new one.
    Session {
        /// The new session id.
        session: String,
    },
    /// About to ask for the lock.
    Want,
    /// The acquire returned: stamped right after it did.
    Grant {
        /// The guard's fencing token (czxid of its node).
        token: i64,
        /// Full path of the contender node.
        node: String,
        /// The lease deadline right after the grant.
        lease_us: u64,
        /// How long the worker means to hold the lock (µs); a long hold was
        /// asked for with `long` on stdin.
        hold_us: u64,
    },
    /// A write to the fenced store, with the hold's token: stamped once the
    /// store answered.
    Write {
        /// The token written with.
        token: i64,
        /// The worker's write number (the store's record is `<label> <n> <what>`).
        n: u64,
        /// `begin` (at the grant), `progress` (during a long hold) or `end`.
        what: String,
        /// Whether the store accepted it (false: the token was stale).
        accepted: bool,
        /// The lease deadline read just before the write.
        lease_us: u64,
    },
    /// The connection was lost while holding: the worker stopped its work
    /// and waits for the connection (until the lease deadline at most).
    Suspended {
        /// The lease deadline: no answer came since, so it stays put.
        lease_us: u64,
    },
    /// The connection came back within the lease: the work goes on.
    Resumed {
        /// The renewed lease deadline.
        lease_us: u64,
    },
    /// About to release: stamped right before the release call.
    Release {
        /// The lease deadline at the release.
        lease_us: u64,
    },
    /// The lock was lost while holding (the session ended, the node was
    /// deleted, or the lease deadline passed): the worker stopped holding.
    Lost {
        /// The lease deadline, as it was when the loss was noticed.
        lease_us: u64,
    },
    /// The run ended while waiting: the acquire was dropped.
    Cancel,
    /// The session's state changed (`Disconnected`, `SyncConnected`, `Expired`, ...).
    State {
        /// The new state, as the client names it.
        state: String,
    },
    /// Something failed; the worker stops and exits non-zero.
    Error {
        /// What failed.
        msg: String,
    },
    /// The worker process exited (noted by the parent; never sent by a worker).
    #[serde(skip)]
    Exit,
    /// The worker finished its run.
    Done {
        /// How many times it was granted the lock.
        grants: u64,
    },
}

impl Line {
    /// The line as sent: JSON plus a newline.
    pub fn to_json_line(&self) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_else(|e| {
            format!(
                r#"{{"ev":"error","t_us":{},"msg":"cannot encode an event: {e}"}}"#,
                self.t_us
            )
        });
        s.push('\n');
        s
    }
}

/// An event of worker `worker` (its index in the parent's list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Index of the worker.
    pub worker: usize,
    /// When: microseconds of `CLOCK_MONOTONIC`.
    pub t_us: u64,
    /// What.
    pub kind: Kind,
}

/// `t` (a `std::time::Instant`, which is `CLOCK_MONOTONIC` on Linux) in
/// microseconds of [`now_us`]'s clock, e.g. a guard's lease deadline.
pub fn instant_us(t: std::time::Instant) -> u64 {
    let (now, now_us) = (std::time::Instant::now(), now_us());
    if t >= now {
        now_us.saturating_add((t - now).as_micros() as u64)
    } else {
        now_us.saturating_sub((now - t).as_micros() as u64)
    }
}

/// Microseconds of `CLOCK_MONOTONIC`: the same clock in every process of
/// this machine (unlike `std::time::Instant`, whose value cannot be shared).
pub fn now_us() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (ts.tv_sec as u64) * 1_000_000 + (ts.tv_nsec as u64) / 1_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip() {
        let line = Line {
            t_us: 42,
            kind: Kind::Grant {
                token: 4_294_967_301,
                node: "/l/a@b-W-0000000003".into(),
                lease_us: 3_920_042,
                hold_us: 50_000,
            },
        };
        let text = line.to_json_line();
        assert_eq!(
            text,
            "{\"t_us\":42,\"ev\":\"grant\",\"token\":4294967301,\"node\":\"/l/a@b-W-0000000003\",\"lease_us\":3920042,\"hold_us\":50000}\n"
        );
        assert_eq!(serde_json::from_str::<Line>(text.trim()).unwrap(), line);
        let want: Line = serde_json::from_str(r#"{"ev":"want","t_us":7}"#).unwrap();
        assert_eq!(want.kind, Kind::Want);
        assert!(serde_json::from_str::<Line>(r#"{"ev":"dance","t_us":7}"#).is_err());
    }

    #[test]
    fn clock_is_monotonic() {
        let a = now_us();
        let b = now_us();
        assert!(a > 0 && b >= a);
    }

    #[test]
    fn instants_convert_to_the_same_clock() {
        let now = std::time::Instant::now();
        let at = now_us();
        let later = instant_us(now + std::time::Duration::from_secs(4));
        let earlier = instant_us(now - std::time::Duration::from_millis(500));
        // Within the time the calls take.
        assert!(later.abs_diff(at + 4_000_000) < 50_000, "{later} vs {at}");
        assert!(earlier.abs_diff(at - 500_000) < 50_000, "{earlier} vs {at}");
    }
}
