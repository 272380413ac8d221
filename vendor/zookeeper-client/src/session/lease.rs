//! What the server has confirmed about a session's liveness (zk-rwlock
//! patches 3 and 14, see PATCHES.md).
//!
//! The server renews a session's expiry when it receives a request from the
//! session (pings included; `auth` and `sasl` packets excepted): at the
//! earliest one session timeout after it received it. A request is received
//! after it was sent, so "the send instant of the last request the server
//! answered, plus the session timeout" is a moment before which the server
//! cannot expire the session, on the client's monotonic clock (up to the
//! difference in clock rates).
//!
//! Which session timeout: the smallest this session was ever told by a
//! connect response (patch 14). A server that accepts a reconnection renews
//! the session with the timeout it negotiated for that connection
//! (`SessionTrackerImpl.touchSession`), but logs nothing about it: a
//! restarted server, or a newly elected leader, schedules every session
//! again with the timeout of its `createSession` transaction
//! (`ZKDatabase.sessionsWithTimeouts`), the first one the session was told.
//! A later, smaller timeout is enforced by the server that told it. No
//! server expires the session sooner than the smallest of them after it
//! last heard from it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Shared between the session task, which records answers, and every
/// clone of its [Client](crate::Client), which reads them.
#[derive(Debug)]
pub struct LeaseCell {
    epoch: Instant,
    /// Nanoseconds from `epoch` to the send instant of the last answered
    /// request, plus one; zero before the first answer.
    answered: AtomicU64,
    /// The smallest session timeout a connect response of this session
    /// told, in milliseconds; zero before the first.
    smallest_ms: AtomicU64,
    /// The session timeout of the latest connect response, in
    /// milliseconds; zero before the first.
    latest_ms: AtomicU64,
    /// The client gave the session up (patch 15): no server answered for
    /// its client-side expiry, and the session ended here without a server
    /// saying it expired.
    given_up: AtomicBool,
    /// While the session task reconnects an established session (patch
    /// 16): nanoseconds from `epoch` to the instant it gives the session up
    /// if no server accepts it by then, plus one; zero otherwise.
    gives_up_at: AtomicU64,
    /// The connect responses that accepted a session of this client so far
    /// (patch 18): what a session learnt on one connection, such as what an
    /// identity bound to the connection may read, holds while this is unchanged.
    connections: AtomicU64,
}

/// A session's lease basis, see [Client::session_lease](crate::Client::session_lease).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLease {
    /// When the last request the server answered (or the connect request
    /// it accepted) was sent, at the latest: taken before the request's
    /// bytes were handed to the socket.
    pub answered_sent: Instant,
    /// The smallest session timeout any connect response of this session
    /// told (the first, from the server that created the session, is one
    /// of them): no server undercuts it unless it renewed the session with
    /// a smaller timeout on a reconnection whose answer never arrived (a
    /// member whose `maxSessionTimeout` is below this one). A
    /// reconnection may be told a longer one (another member's, or a
    /// restarted server's, `minSessionTimeout`), but a restarted server or
    /// a new leader restores the session with the timeout it was created
    /// with. The server cannot expire the session before
    /// `answered_sent + timeout` (up to the difference in clock rates).
    ///
    /// A client attached to an existing session
    /// ([Connector::with_session](crate::Connector::with_session)) knows
    /// only the timeouts told to it.
    pub timeout: Duration,
    /// The session timeout of the latest connect response: the one this
    /// client's own timers run on (its pings, its connection timeout, and
    /// its verdict that the session is lost, 7/5 of it after the last
    /// receive). At least `timeout`.
    pub negotiated: Duration,
}

impl LeaseCell {
    pub fn new() -> Self {
        LeaseCell {
            epoch: Instant::now(),
            answered: AtomicU64::new(0),
            smallest_ms: AtomicU64::new(0),
            latest_ms: AtomicU64::new(0),
            given_up: AtomicBool::new(false),
            gives_up_at: AtomicU64::new(0),
            connections: AtomicU64::new(0),
        }
    }

    /// Records the instant the session task gives the session up while it
    /// reconnects it, or (`None`) that it no longer reconnects (patch 16).
    pub fn reconnecting_until(&self, deadline: Option<Instant>) {
        let nanos = match deadline {
            Some(deadline) => {
                deadline.saturating_duration_since(self.epoch).as_nanos().min(u64::MAX as u128 - 1) as u64 + 1
            },
            None => 0,
        };
        self.gives_up_at.store(nanos, Ordering::Release);
    }

    /// The instant recorded by [LeaseCell::reconnecting_until], if any (patch 16).
    pub fn gives_up_at(&self) -> Option<Instant> {
        match self.gives_up_at.load(Ordering::Acquire) {
            0 => None,
            nanos => Some(self.epoch + Duration::from_nanos(nanos - 1)),
        }
    }

    /// Records that the client gave the session up (patch 15).
    pub fn give_up(&self) {
        self.given_up.store(true, Ordering::Release);
    }

    /// True once the client gave the session up (patch 15).
    pub fn given_up(&self) -> bool {
        self.given_up.load(Ordering::Acquire)
    }

    /// Records that the server answered a request sent at `sent`.
    pub fn answered(&self, sent: Instant) {
        let nanos = sent.saturating_duration_since(self.epoch).as_nanos().min(u64::MAX as u128 - 1) as u64;
        self.answered.fetch_max(nanos + 1, Ordering::AcqRel);
    }

    /// Forgets the session timeouts told so far: the connect response is
    /// for another session than the last one.
    pub fn new_session(&self) {
        self.smallest_ms.store(0, Ordering::Release);
        self.latest_ms.store(0, Ordering::Release);
    }

    /// Records the session timeout of a connect response. Called by the
    /// session task only, so nothing else can reset the minimum between
    /// its two steps. A timeout of zero (a server whose minimum and
    /// maximum are zero) counts as 1 ms: a lease that ends at once.
    pub fn negotiated(&self, timeout: Duration) {
        // A zero (a server configured so) is kept as 1 ms: it ends the lease at once and,
        // unlike zero (unknown), is never taken for the first timeout told.
        let ms = (timeout.as_millis().min(u64::MAX as u128) as u64).max(1);
        self.connections.fetch_add(1, Ordering::AcqRel);
        self.latest_ms.store(ms, Ordering::Release);
        if self.smallest_ms.compare_exchange(0, ms, Ordering::AcqRel, Ordering::Acquire).is_err() {
            self.smallest_ms.fetch_min(ms, Ordering::AcqRel);
        }
    }

    /// The connect responses that accepted a session so far (patch 18).
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Acquire)
    }

    /// The smallest session timeout told so far, if any.
    pub fn smallest(&self) -> Option<Duration> {
        match self.smallest_ms.load(Ordering::Acquire) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    pub fn get(&self) -> Option<SessionLease> {
        let answered = self.answered.load(Ordering::Acquire);
        let smallest_ms = self.smallest_ms.load(Ordering::Acquire);
        let latest_ms = self.latest_ms.load(Ordering::Acquire);
        if answered == 0 || smallest_ms == 0 {
            return None;
        }
        Some(SessionLease {
            answered_sent: self.epoch + Duration::from_nanos(answered - 1),
            timeout: Duration::from_millis(smallest_ms),
            negotiated: Duration::from_millis(latest_ms.max(smallest_ms)),
        })
    }
}

impl Default for LeaseCell {
    fn default() -> Self {
        Self::new()
    }
}
