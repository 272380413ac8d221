//! What the server has confirmed about a session's liveness (zk-rwlock
//! patch 3, see PATCHES.md).
//!
//! The server renews a session's expiry when it receives a request from the
//! session (pings included; `auth` and `sasl` packets excepted): at the
//! earliest one session timeout after it received it. A request is received
//! after it was sent, so "the send instant of the last request the server
//! answered, plus the session timeout" is a moment before which the server
//! cannot expire the session, on the client's monotonic clock (up to the
//! difference in clock rates).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Shared between the session task, which records answers, and every
/// clone of its [Client](crate::Client), which reads them.
#[derive(Debug)]
pub struct LeaseCell {
    epoch: Instant,
    /// Nanoseconds from `epoch` to the send instant of the last answered
    /// request, plus one; zero before the first answer.
    answered: AtomicU64,
    /// The session timeout the server negotiated, in milliseconds.
    timeout_ms: AtomicU64,
}

/// A session's lease basis, see [Client::session_lease](crate::Client::session_lease).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLease {
    /// When the last request the server answered (or the connect request
    /// it accepted) was sent, at the latest: taken before the request's
    /// bytes were handed to the socket.
    pub answered_sent: Instant,
    /// The session timeout the server negotiated for this session.
    pub timeout: Duration,
}

impl LeaseCell {
    pub fn new() -> Self {
        LeaseCell { epoch: Instant::now(), answered: AtomicU64::new(0), timeout_ms: AtomicU64::new(0) }
    }

    /// Records that the server answered a request sent at `sent`.
    pub fn answered(&self, sent: Instant) {
        let nanos = sent.saturating_duration_since(self.epoch).as_nanos().min(u64::MAX as u128 - 1) as u64;
        self.answered.fetch_max(nanos + 1, Ordering::AcqRel);
    }

    /// Records the session timeout of a connect response.
    pub fn negotiated(&self, timeout: Duration) {
        self.timeout_ms.store(timeout.as_millis().min(u64::MAX as u128) as u64, Ordering::Release);
    }

    pub fn get(&self) -> Option<SessionLease> {
        let answered = self.answered.load(Ordering::Acquire);
        let timeout_ms = self.timeout_ms.load(Ordering::Acquire);
        if answered == 0 || timeout_ms == 0 {
            return None;
        }
        Some(SessionLease {
            answered_sent: self.epoch + Duration::from_nanos(answered - 1),
            timeout: Duration::from_millis(timeout_ms),
        })
    }
}

impl Default for LeaseCell {
    fn default() -> Self {
        Self::new()
    }
}
