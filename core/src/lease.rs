//! Until when a holder may act: the lease, and what a guard's
//! [`HoldState`] promises.
//!
//! The server cannot expire a session before it received the last request
//! it answered plus the session timeout; the client knows when it sent that
//! request. The **lease deadline** is that bound, less a margin for the
//! difference in clock rates ([`CLOCK_RATE_MARGIN`]), and, on an ensemble
//! whose followers may lose their leader, less the follower lag and a ping
//! interval ([`span`], [`follower_lag_admissible`]):
//!
//! ```text
//! lease deadline = send instant of the last answered request
//!                  + session timeout − session timeout / 50
//!                  − (follower lag + 3/20 × session timeout)   if the lag is set
//! ```
//!
//! **The timeout is the smallest told this session**
//! (`zk_rwlock::zk::SessionLease::timeout`): the
//! smallest session timeout any connect response of the session carried,
//! the first (the server that created the session) included. A
//! reconnection may be told a longer one (a restarted server's, or another
//! member's, `minSessionTimeout`), and the server that told it renews the
//! session with it (`SessionTrackerImpl.touchSession`); but renewals are
//! not logged. A server restarted on its data, or a newly elected leader,
//! schedules every session again from the timeout of its `createSession`
//! transaction (`ZKDatabase`'s `sessionsWithTimeouts`), from the moment it
//! takes over: the first timeout told. A smaller one told later is enforced
//! by the server that told it. Every expiry a server can schedule is
//! therefore at least the smallest told after the last request it
//! received; a longer timeout told since is never trusted. Two cases no
//! client can know of, which the configuration must rule out: a
//! reconnection accepted by a member whose `maxSessionTimeout` (by default
//! 20 of its ticks) is below the smallest told, and whose answer never
//! arrived (the server renewed the session with a smaller timeout than
//! any the client heard of); and a client attached to an existing session
//! with `Connector::with_session`, which knows only the timeouts told to
//! it. Keep every member's `maxSessionTimeout` at or above the session
//! timeouts clients ask for, and alike across the ensemble
//! (`docs/operations.md`).
//!
//! On Linux, the time the machine spent suspended since the grant comes off
//! the lease ([`after_suspend`]).
//!
//! | state | connection | promise |
//! |---|---|---|
//! | [`HoldState::Held`] | up | no one else holds a conflicting lock, until at least the lease deadline |
//! | [`HoldState::Suspended`] | lost | the same, until the lease deadline; the session may end at any moment after it |
//! | [`HoldState::Lost`] | any | none: someone else may hold the lock. Final |
//!
//! Why the bound holds (the send instant, the follower lag, clocks), when a
//! guard becomes `Lost`, what a holder should do in each state, and what
//! only a fencing token can guarantee: the failure model, written down once
//! in the repository's `docs/failure-model.md`.

use std::time::{Duration, Instant};

/// The share of the session timeout by which the lease deadline stays
/// ahead of the earliest expiry the server's clock allows: 1/50 (2 %, 20
/// ms in a second).
///
/// It covers a client clock running slower than the server's by up to 2 %.
/// Clocks disciplined by NTP differ in rate by at most 0.05 %; an
/// undisciplined quartz clock by about 0.01 %.
pub const CLOCK_RATE_MARGIN: u32 = 50;

/// How long a lease lasts from the send instant of the last answered
/// request: the session `timeout` (the smallest told this session, see the
/// [module documentation](self)), less [`CLOCK_RATE_MARGIN`],
/// less, if `follower_lag` is not zero, the follower lag and the client's
/// ping interval (3/20 of the timeout: the leader may know of the session
/// only from the ping before). `None` if nothing is left.
///
/// A sum too large for a [`Duration`] leaves nothing either.
pub fn span(timeout: Duration, follower_lag: Duration) -> Option<Duration> {
    let allowance = if follower_lag.is_zero() {
        Duration::ZERO
    } else {
        follower_lag.checked_add(timeout.checked_mul(3)? / 20)?
    };
    (timeout - timeout / CLOCK_RATE_MARGIN)
        .checked_sub(allowance)
        .filter(|span| !span.is_zero())
}

/// True if a session `timeout` admits the follower lag `follower_lag`
/// (`zk_rwlock::LockBuilder::follower_lag`): the
/// lag is at most 4/9 of the timeout (the timeout at least 2.25 times the
/// lag), and a lease is left ([`span`]). A larger lag leaves a lease of
/// less than 0.39 of the timeout: too close to the gaps between two answers
/// of a healthy session (3/20 of the timeout between pings, checked every
/// 1/20) for a holder to act on. A zero lag is admitted by any timeout
/// that leaves a lease.
///
/// ```
/// use std::time::Duration;
/// use zk_rwlock_core::lease::follower_lag_admissible;
/// let s = Duration::from_secs;
/// assert!(follower_lag_admissible(s(30), s(12))); // syncLimit 5, tickTime 2 s
/// assert!(!follower_lag_admissible(s(20), s(12)));
/// ```
pub fn follower_lag_admissible(timeout: Duration, follower_lag: Duration) -> bool {
    // In nanoseconds as u128: neither product can overflow.
    follower_lag.as_nanos() * 9 <= timeout.as_nanos() * 4 && span(timeout, follower_lag).is_some()
}

/// Below this, a difference between the boot and monotonic clocks is the
/// time between reading them, not a suspend: 5 ms (see [`after_suspend`]).
pub const MIN_SUSPEND: Duration = Duration::from_millis(5);

/// A guard's lease `deadline`, on the monotonic clock, once the machine has
/// been `suspended` for that long since the lock was granted at
/// `granted_at` (the growth of the boot clock's lead over the monotonic
/// one).
///
/// The monotonic clock stands still while the machine is suspended, the
/// server's does not: a guard that lived through a suspend loses that much
/// of its lease, for good (which answer came before the suspend and which
/// after is not known). Less than [`MIN_SUSPEND`] is no suspend: the
/// deadline is unchanged. `granted_at` if the deadline less the suspend is
/// before the monotonic clock's origin.
pub fn after_suspend(deadline: Instant, suspended: Duration, granted_at: Instant) -> Instant {
    if suspended >= MIN_SUSPEND {
        deadline.checked_sub(suspended).unwrap_or(granted_at)
    } else {
        deadline
    }
}

/// The lease deadline of a session whose last answered request was sent at
/// `answered_sent`, with the session `timeout` (the smallest told this
/// session, see the [module documentation](self)) and the
/// ensemble's `follower_lag` (zero: see [`span`]); `answered_sent` itself
/// if no lease is left.
pub fn deadline(answered_sent: Instant, timeout: Duration, follower_lag: Duration) -> Instant {
    answered_sent + span(timeout, follower_lag).unwrap_or_default()
}

/// Where a held lock stands. See the [module documentation](self) for what
/// each state promises.
///
/// States are ordered by how bad they are: `Held < Suspended < Lost`, so
/// the worst of several (a `zk_rwlock::MultiGuard`'s parts) is
/// their [`max`](Ord::max):
///
/// ```
/// use zk_rwlock_core::lease::HoldState::{Held, Lost, Suspended};
/// assert_eq!([Held, Lost, Suspended].into_iter().max(), Some(Lost));
/// assert_eq!(Held.max(Suspended), Suspended);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HoldState {
    /// Connected: the lock is held, and no one else can hold a conflicting
    /// lock until at least the lease deadline.
    Held,
    /// The connection is lost, and the lease deadline has not passed: no one
    /// else can hold a conflicting lock before it. The client is
    /// reconnecting; the guard becomes `Held` again if it succeeds before the
    /// deadline, `Lost` otherwise.
    Suspended,
    /// The lock may be held by someone else: the session ended, the node
    /// was deleted, or the lease deadline passed without an answer from the
    /// server. Final.
    Lost,
}

impl std::fmt::Display for HoldState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HoldState::Held => "held",
            HoldState::Suspended => "suspended",
            HoldState::Lost => "lost",
        })
    }
}

/// What the client says of its connection to the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// Connected to a server that serves the session.
    Up,
    /// Disconnected (or connected read-only, which the quorum does not
    /// serve): reconnecting.
    Down,
    /// The session expired, was closed, or failed authentication.
    Ended,
}

/// The states a ZooKeeper client reports of its session (the core's copy
/// of them: it depends on no client). The driver translates its client's
/// states one to one; what each means is [`Link::of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SessionState {
    /// Connected to a server that serves the session (`SyncConnected`).
    Connected,
    /// Connected to a read-only server, which the quorum does not serve.
    ConnectedReadOnly,
    /// Disconnected: the client is reconnecting.
    Disconnected,
    /// The session expired.
    Expired,
    /// The client closed the session.
    Closed,
    /// The session's authentication failed.
    AuthFailed,
}

impl Link {
    /// What a session `state` says of the link. Only a server that serves
    /// the session is a link: a read-only server answers reads, but the
    /// quorum does not renew the session through it, so the lease runs on
    /// as when disconnected. Expired, closed or failed authentication end
    /// the session, and with it every ephemeral node.
    pub fn of(state: SessionState) -> Link {
        match state {
            SessionState::Connected => Link::Up,
            SessionState::ConnectedReadOnly | SessionState::Disconnected => Link::Down,
            SessionState::Expired | SessionState::Closed | SessionState::AuthFailed => Link::Ended,
        }
    }
}

impl SessionState {
    /// True for a state that ends the session ([`Link::Ended`]).
    pub fn is_over(self) -> bool {
        Link::of(self) == Link::Ended
    }
}

/// Why a guard is lost, as the session and the clock tell it (see
/// [`loss_cause`]). A guard lost for neither reason lost its node: someone
/// deleted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LossCause {
    /// The session ended: expired, closed, or its authentication failed.
    SessionEnded,
    /// The lease deadline passed before the server answered again.
    LeaseRanOut,
}

/// Why a guard with the lease `deadline` is lost at `now`, if the session
/// or the clock says it is: the session's end (`session_ended`) is the
/// stronger news, then the deadline passed (`now` at or after it). `None`
/// if neither: a guard that is lost all the same lost its node.
///
/// ```
/// use std::time::{Duration, Instant};
/// use zk_rwlock_core::lease::{loss_cause, LossCause};
/// let now = Instant::now();
/// let later = now + Duration::from_secs(1);
/// assert_eq!(loss_cause(true, later, now), Some(LossCause::SessionEnded));
/// assert_eq!(loss_cause(false, later, now), Some(LossCause::LeaseRanOut));
/// assert_eq!(loss_cause(false, now, later), None);
/// ```
pub fn loss_cause(session_ended: bool, now: Instant, deadline: Instant) -> Option<LossCause> {
    if session_ended {
        Some(LossCause::SessionEnded)
    } else if now >= deadline {
        Some(LossCause::LeaseRanOut)
    } else {
        None
    }
}

/// The state of a guard: `flagged` if it is already known lost (its node
/// deleted, or lost before), with the session's `link`, at `now` with the
/// lease `deadline`. Returns the state, and why it is newly lost.
pub fn hold_state(
    flagged: bool,
    link: Link,
    now: Instant,
    deadline: Instant,
) -> (HoldState, Option<LossCause>) {
    if flagged {
        return (HoldState::Lost, None);
    }
    if let Some(cause) = loss_cause(link == Link::Ended, now, deadline) {
        return (HoldState::Lost, Some(cause));
    }
    match link {
        Link::Up => (HoldState::Held, None),
        _ => (HoldState::Suspended, None),
    }
}

/// Whether a release that ends with its node gone released the lock
/// itself (true), or found it deleted by someone else, which means the lock
/// was lost before the release (false).
///
/// `deleted_before`: the guard's watch saw the node deleted before the
/// release began (no deletion of the guard's own was sent by then).
/// `found_missing`: the server answered one of the release's requests with
/// "no such node". `answer_lost`: a request of this release was sent before
/// that and its answer was lost to a broken connection: it may have deleted
/// the node itself, so a node missing after it is no proof of anyone else,
/// and counts as released (one cannot tell the two apart).
pub fn released_by_us(deleted_before: bool, found_missing: bool, answer_lost: bool) -> bool {
    !deleted_before && (!found_missing || answer_lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_is_the_timeout_less_two_percent() {
        let t0 = Instant::now();
        let zero = Duration::ZERO;
        assert_eq!(
            deadline(t0, Duration::from_secs(10), zero),
            t0 + Duration::from_millis(9_800)
        );
        assert_eq!(
            deadline(t0, Duration::from_secs(4), zero),
            t0 + Duration::from_millis(3_920)
        );
    }

    /// The earliest moment a ZooKeeper server expires a session whose last
    /// answered request was sent at 0 ms, as ZooKeeper's code has it: the
    /// server that received the request renewed it with the timeout it
    /// told the connection (`told.last()`); if a server restarted on its
    /// data or a new leader took over at `restored_at` ms, it scheduled the
    /// session again with the timeout it was created with (`told[0]`). The
    /// tick rounds expiries up, never down: left out.
    fn earliest_expiry(told: &[u64], restored_at: Option<u64>) -> Duration {
        Duration::from_millis(match restored_at {
            Some(at) => at + told[0],
            None => *told.last().unwrap(),
        })
    }

    #[test]
    fn the_timeout_is_the_smallest_told() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // (timeouts told, in order; restored at; follower lag; whether the
        // latest told overclaims)
        for (told, restored_at, lag, last_overclaims) in [
            // Issue 35: created with 10 s, the server's minimum raised to 30 s
            // and the server restarted (told 30 s), then a crash: the server
            // is back 0.5 s later and expires the session 10 s after that.
            (&[10_000, 30_000][..], Some(500), 0, true),
            // The control: restarted alike.
            (&[10_000, 10_000][..], Some(0), 0, false),
            // Issue 35: created with 3 s on follower A, told 8 s by follower
            // B, the leader killed; the new leader takes over 0.6 s later.
            (&[3_000, 8_000][..], Some(600), 1_200, true),
            // The server that told the longer timeout renews with it.
            (&[3_000, 8_000][..], None, 1_200, false),
            // A smaller timeout told later is enforced by whoever told it.
            (&[4_000, 1_000][..], None, 0, false),
            (&[2_000, 1_000, 6_000][..], None, 0, false),
            (&[2_000, 1_000, 6_000][..], Some(0), 0, true),
        ] {
            let expiry = t0 + earliest_expiry(told, restored_at);
            let smallest = ms(*told.iter().min().unwrap());
            let lease = deadline(t0, smallest, ms(lag));
            let case = format!("told {told:?}, restored at {restored_at:?}, lag {lag} ms");
            assert!(
                lease <= expiry,
                "{case}: lease {lease:?} after the expiry {expiry:?}"
            );
            // What trusting the latest timeout told would have claimed.
            let last = deadline(t0, ms(*told.last().unwrap()), ms(lag));
            assert_eq!(last > expiry, last_overclaims, "{case}");
        }
    }

    #[test]
    fn a_follower_lag_costs_itself_and_a_ping_interval() {
        let t0 = Instant::now();
        let (t, lag) = (Duration::from_secs(20), Duration::from_secs(12));
        // 20 s - 0.4 s - (12 s + 3 s)
        assert_eq!(span(t, lag), Some(Duration::from_millis(4_600)));
        assert_eq!(deadline(t0, t, lag), t0 + Duration::from_millis(4_600));
        // Nothing left: the deadline is the send instant itself.
        let t = Duration::from_secs(10);
        assert_eq!(span(t, lag), None);
        assert_eq!(deadline(t0, t, lag), t0);
        // Exactly nothing left is none either.
        assert_eq!(span(Duration::from_secs(1), Duration::from_millis(830)), None);
        assert_eq!(
            span(Duration::from_secs(1), Duration::from_millis(829)),
            Some(Duration::from_millis(1))
        );
    }

    #[test]
    fn huge_lags_and_timeouts_leave_no_lease() {
        let max = Duration::MAX;
        assert_eq!(span(Duration::from_secs(10), max), None);
        assert_eq!(span(max, Duration::from_secs(1)), None);
        assert_eq!(span(max, max), None);
    }

    #[test]
    fn admissible_follower_lags() {
        let ms = Duration::from_millis;
        let ns = Duration::from_nanos;
        for (timeout, lag, admitted) in [
            // No lag: any timeout that leaves a lease.
            (ms(4_000), ms(0), true),
            (ns(1), ns(0), true),
            (ms(0), ms(0), false),
            // At most 4/9 of the timeout, to the nanosecond.
            (ms(9_000), ms(4_000), true),
            (ms(9_000), ms(4_000) + ns(1), false),
            (ms(30_000), ms(12_000), true),
            (ms(20_000), ms(12_000), false),
            (ms(27_000), ms(12_000), true),
            (ms(27_000) - ns(1), ms(12_000), false),
            (ns(9), ns(4), true),
            (ns(9), ns(5), false),
            // Too large to multiply as durations: refused, no panic.
            (ms(10_000), Duration::MAX, false),
            (Duration::MAX, Duration::MAX, false),
            // A small enough lag, but a timeout whose lease overflows.
            (Duration::MAX, ns(1), false),
        ] {
            assert_eq!(
                follower_lag_admissible(timeout, lag),
                admitted,
                "timeout {timeout:?}, lag {lag:?}"
            );
        }
    }

    #[test]
    fn a_suspend_costs_its_length() {
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_secs(10);
        let ms = Duration::from_millis;
        let ns = Duration::from_nanos;
        for (suspended, want) in [
            (Duration::ZERO, deadline),
            // Below MIN_SUSPEND: the time between two clock readings.
            (ms(5) - ns(1), deadline),
            (ms(5), deadline - ms(5)),
            (ms(3_000), deadline - ms(3_000)),
            // Longer than the lease: the deadline is before the grant.
            (ms(12_000), deadline - ms(12_000)),
            // Before the clock's origin: the grant.
            (Duration::MAX, t0),
        ] {
            assert_eq!(after_suspend(deadline, suspended, t0), want, "{suspended:?}");
        }
        assert_eq!(MIN_SUSPEND, ms(5));
    }

    #[test]
    fn who_released() {
        for (deleted_before, found_missing, answer_lost, ours) in [
            // The delete was answered: the release did it.
            (false, false, false, true),
            (false, false, true, true),
            // Its first answer says the node is gone: someone else deleted it.
            (false, true, false, false),
            // Gone on a retry after a lost answer: maybe its own delete.
            (false, true, true, true),
            // The watch saw the deletion before the release began.
            (true, false, false, false),
            (true, true, false, false),
            (true, true, true, false),
        ] {
            assert_eq!(
                released_by_us(deleted_before, found_missing, answer_lost),
                ours,
                "deleted before {deleted_before}, found missing {found_missing}, answer lost {answer_lost}"
            );
        }
    }

    #[test]
    fn each_session_state_says_whether_the_link_is_up_down_or_ended() {
        use SessionState::*;
        for (state, link) in [
            (Connected, Link::Up),
            // The quorum does not serve the session through a read-only
            // server: the lease is not renewed there.
            (ConnectedReadOnly, Link::Down),
            (Disconnected, Link::Down),
            (Expired, Link::Ended),
            (Closed, Link::Ended),
            (AuthFailed, Link::Ended),
        ] {
            assert_eq!(Link::of(state), link, "{state:?}");
            assert_eq!(state.is_over(), link == Link::Ended, "{state:?}");
        }
    }

    #[test]
    fn states_are_ordered_by_how_bad_they_are() {
        use HoldState::*;
        assert!(Held < Suspended && Suspended < Lost);
        for (states, worst) in [
            (&[][..], None),
            (&[Held, Held][..], Some(Held)),
            (&[Held, Suspended, Held][..], Some(Suspended)),
            (&[Suspended, Lost, Held][..], Some(Lost)),
            (&[Lost, Suspended][..], Some(Lost)),
        ] {
            assert_eq!(states.iter().copied().max(), worst, "{states:?}");
        }
    }

    #[test]
    fn names() {
        let names: Vec<String> = [HoldState::Held, HoldState::Suspended, HoldState::Lost]
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(names, ["held", "suspended", "lost"]);
    }

    #[test]
    fn loss_causes() {
        let t0 = Instant::now();
        let end = t0 + Duration::from_secs(1);
        let before = end - Duration::from_nanos(1);
        use LossCause::*;
        for (ended, now, want) in [
            (false, before, None),
            (false, end, Some(LeaseRanOut)),
            (false, end + Duration::from_secs(1), Some(LeaseRanOut)),
            (true, before, Some(SessionEnded)),
            // The session's end is the stronger news.
            (true, end, Some(SessionEnded)),
        ] {
            assert_eq!(loss_cause(ended, now, end), want, "{ended} {now:?}");
        }
    }

    #[test]
    fn states() {
        let t0 = Instant::now();
        let end = t0 + Duration::from_secs(1);
        let before = t0 + Duration::from_millis(999);
        use HoldState::*;
        use Link::*;
        for (flagged, link, now, want) in [
            (false, Up, before, (Held, None)),
            (false, Down, before, (Suspended, None)),
            (false, Ended, before, (Lost, Some(LossCause::SessionEnded))),
            (false, Up, end, (Lost, Some(LossCause::LeaseRanOut))),
            (false, Down, end, (Lost, Some(LossCause::LeaseRanOut))),
            // The session's end is the stronger news.
            (false, Ended, end, (Lost, Some(LossCause::SessionEnded))),
            // Lost is final: a fresh lease and a connection do not undo it.
            (true, Up, before, (Lost, None)),
            (true, Down, end, (Lost, None)),
        ] {
            assert_eq!(
                hold_state(flagged, link, now, end),
                want,
                "{flagged} {link:?} {now:?}"
            );
        }
    }
}
