//! When `exec` signals its command: a pure verdict from where the lock
//! stands (the guard's [`HoldState`] and lease deadline), the time, and
//! what was sent already. No clock, no signal, no ZooKeeper: the
//! supervisor ([`super::supervise`]) asks, acts, and asks again on every
//! change; what it says then is [`super::messages`].

use std::time::{Duration, Instant};

use zk_rwlock::HoldState;

/// What `exec` does when the connection to ZooKeeper is lost while the
/// command runs (`--on-suspend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnSuspend {
    /// Let CMD run while the lease can still cover its orderly stop:
    /// SIGTERM at the lease deadline less the kill margin less the grace,
    /// SIGKILL at the deadline less the kill margin.
    Lease,
    /// Stop CMD at once: SIGTERM, and SIGKILL before the lease runs out.
    Term,
    /// Let CMD run while the lease lasts; stop it only once the lock is lost.
    Ignore,
}

/// Why `exec` signals the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The connection to ZooKeeper was lost (`--on-suspend term`).
    Suspended,
    /// The lock was lost: the session ended, the node was deleted, or the
    /// lease ran out.
    Lost,
    /// The lease runs out within the kill margin and the command still
    /// runs (`--on-suspend term`).
    LeaseEnding,
    /// `--kill-after` has passed since SIGTERM.
    KillAfter,
    /// The connection stayed lost (or the server silent) until the lease
    /// could only just cover the command's stop (`--on-suspend lease`).
    Outlasted,
}

/// What to do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing (more) to send for now.
    Run,
    /// Send SIGTERM.
    Term(Cause),
    /// Send SIGKILL.
    Kill(Cause),
}

/// How long before the lease deadline a command that is being stopped
/// gets SIGKILL: min(1 s, session timeout / 5).
///
/// SIGKILL cannot be caught, but the process is gone only once the kernel
/// has torn it down: unmapping a large address space, closing its files,
/// finishing an uninterruptible I/O (NFS, a slow disk) take from
/// milliseconds to hundreds of milliseconds on a loaded machine, and
/// `exec` itself may be scheduled late and checks the group every 20 ms.
/// One second covers that with room to spare. For short sessions the
/// margin shrinks with the timeout, so that a command still gets time for
/// SIGTERM: a lost connection is noticed about 2/5 of the session timeout
/// after the server's last answer and the lease ends at 49/50 of it, so
/// with a fifth as margin the command has at least about 0.38 of the
/// session timeout (1.5 s of a 4 s session, 4.8 s of the default 10 s
/// session) between SIGTERM and SIGKILL.
pub fn kill_margin(session_timeout: Duration) -> Duration {
    Duration::from_secs(1).min(session_timeout / 5)
}

/// The stop rules of one `exec` run.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// `--on-suspend`.
    pub on_suspend: OnSuspend,
    /// `--kill-after`: SIGTERM to SIGKILL, at most.
    pub kill_after: Duration,
    /// [`kill_margin`] of the session timeout.
    pub margin: Duration,
    /// `--grace`: with `--on-suspend lease`, SIGTERM comes this long
    /// before the SIGKILL time.
    pub grace: Duration,
}

/// The default `--grace`: 3/10 of the session timeout, at most 1 s.
///
/// The grace is the lease's tail that `--on-suspend lease` keeps for CMD's
/// orderly stop: every second of it is a second less of outage that CMD
/// rides out ([`Policy::survivable_outage`]). SIGTERM ends most commands in
/// milliseconds (a shell, a copy, a dump); one second covers a flush and a
/// clean exit, and SIGKILL only comes after it, with the kill margin still
/// ahead of the deadline. So the default keeps one second: with the default
/// 10 s session SIGTERM comes 7.8 s after the send of the last answered
/// request, and CMD survives any outage of up to 4.7 s (a standalone
/// server's restart; an ensemble's rolling restart costs a client about a
/// second). Commands that need longer to stop ask for `--grace` (and a
/// longer `--session-timeout`, to keep the outage they survive). Sessions
/// of 3.3 s or less keep 3/10 of the timeout for it.
pub fn default_grace(session_timeout: Duration) -> Duration {
    Duration::from_secs(1).min(session_timeout * 3 / 10)
}

/// The longest silence of the client's last answered ping before the
/// server goes away: the client pings once nothing was sent for 3/20 of
/// the session timeout, and looks every 1/20 (the vendored client's
/// `reset_timeout`), so the last answered request was sent at most 1/5 of
/// the timeout before the server's last moment.
pub fn ping_gap(session_timeout: Duration) -> Duration {
    session_timeout / 5
}

/// The longest wait, after a server has come back, for the client's next
/// attempt to connect: attempts to one server are min(1 s, session timeout
/// / 10) apart once the first few have failed, plus up to 100 ms of jitter
/// (the vendored client's `max_reconnect_backoff` and endpoint back-off).
pub fn retry_gap(session_timeout: Duration) -> Duration {
    Duration::from_secs(1).min(session_timeout / 10) + Duration::from_millis(100)
}

/// How long a healthy connection may go without a new answer, with room:
/// the [`ping_gap`] and one [`retry_gap`] (T/5 + min(1 s, T/10) + 0.1 s;
/// 3.1 s with a 10 s session, 1.3 s with 4 s).
///
/// On an idle connection the last answered request can be a ping gap old
/// when the next ping's answer comes; the retry gap is the room on top: it
/// covers the round trip, `exec`'s check period (min(250 ms, T/20), which
/// also paces what the keeper is told) and a late scheduling. A stop
/// schedule whose first signal comes sooner than this after an answer
/// stops CMD on a healthy connection ([`Schedule::fit`]). It is also the
/// part of the first signal's time that buys no outage: what is left of
/// it is [`Policy::survivable_outage`], which is zero at the limit.
pub fn healthy_silence(session_timeout: Duration) -> Duration {
    ping_gap(session_timeout) + retry_gap(session_timeout)
}

/// The stop options of `exec` and `lead` as given: `--on-suspend`,
/// `--kill-after`, `--grace` (`None`: the default) and `--follower-lag`
/// (`None` or zero: none). On a session, they make a [`Policy`]
/// ([`Schedule::policy`]), and [`Schedule::fit`] says whether it lets CMD
/// run on a healthy connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// `--on-suspend`.
    pub on_suspend: OnSuspend,
    /// `--kill-after`. Only counts once SIGTERM was sent: no part of
    /// [`Schedule::fit`].
    pub kill_after: Duration,
    /// `--grace`; `None`: [`default_grace`] of the session timeout.
    pub grace: Option<Duration>,
    /// `--follower-lag`; `None` or zero: none.
    pub follower_lag: Option<Duration>,
}

/// What [`Schedule::fit`] says of a schedule on a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// CMD keeps running on a healthy connection.
    Runs,
    /// `--grace` is too long: `largest` is the longest this session (and
    /// the follower lag) allows, to the millisecond.
    GraceTooLong {
        /// The longest `--grace` that fits.
        largest: Duration,
    },
    /// `--follower-lag` is too large for this session with this grace
    /// (given or the default): `largest` is the largest that fits, to the
    /// millisecond.
    LagTooLarge {
        /// The largest `--follower-lag` that fits.
        largest: Duration,
    },
    /// No lag or grace of those given fits: the session timeout is too
    /// short. `shortest` is the shortest that fits the options as given
    /// (`None`: none does).
    SessionTooShort {
        /// The shortest session timeout that fits.
        shortest: Option<Duration>,
    },
}

/// `d` rounded down to the millisecond.
fn floor_ms(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Schedule {
    /// The follower lag, `None` if not given or zero.
    fn lag(&self) -> Option<Duration> {
        self.follower_lag.filter(|lag| !lag.is_zero())
    }

    /// The lease span of a session of `session_timeout` with this follower
    /// lag ([`zk_rwlock::lease::span`]); `None` if no lease is left.
    pub fn span(&self, session_timeout: Duration) -> Option<Duration> {
        zk_rwlock::lease::span(session_timeout, self.lag().unwrap_or_default())
    }

    /// The stop rules on a session of `session_timeout`: the kill margin
    /// ([`kill_margin`]) at most a quarter of the lease span (a lease
    /// shortened by a follower lag keeps that much of it before SIGKILL),
    /// the grace given or [`default_grace`].
    pub fn policy(&self, session_timeout: Duration) -> Policy {
        let span = self.span(session_timeout).unwrap_or_default();
        Policy {
            on_suspend: self.on_suspend,
            kill_after: self.kill_after,
            margin: kill_margin(session_timeout).min(span / 4),
            grace: self.grace.unwrap_or_else(|| default_grace(session_timeout)),
        }
    }

    /// Whether CMD keeps running on a healthy connection to a session of
    /// `session_timeout`: the first signal comes at least
    /// [`healthy_silence`] after the send of the last answered request.
    /// (The follower lag's own bound, [`zk_rwlock::lease::follower_lag_admissible`],
    /// is checked apart, and first.)
    pub fn runs_healthy(&self, session_timeout: Duration) -> bool {
        self.span(session_timeout)
            .and_then(|span| self.policy(session_timeout).first_signal_after(span))
            .is_some_and(|first| first >= healthy_silence(session_timeout))
    }

    /// [`Schedule::runs_healthy`], and the follower lag admitted by the
    /// lease ([`zk_rwlock::lease::follower_lag_admissible`]): what a value
    /// suggested in a message must pass.
    fn acceptable(&self, session_timeout: Duration) -> bool {
        self.lag()
            .is_none_or(|lag| zk_rwlock::lease::follower_lag_admissible(session_timeout, lag))
            && self.runs_healthy(session_timeout)
    }

    /// Whether this schedule lets CMD run on a healthy connection to a
    /// session of `session_timeout`, and if not, which option to change and
    /// to what: the grace (if given, and some grace fits the lag), else the
    /// follower lag (if given, and some lag fits the grace), else the
    /// session timeout.
    ///
    /// The rule: with `--on-suspend lease`, SIGTERM comes the lease span
    /// less the kill margin less the grace after the send of the last
    /// answered request, and with `term` the keeper's own SIGTERM (should
    /// `exec` not act) comes then too; with `ignore`, the lock is lost at
    /// the span. That must be at least [`healthy_silence`], which an idle
    /// connection's answers may come apart. `--kill-after` only counts
    /// after SIGTERM: it plays no part.
    pub fn fit(&self, session_timeout: Duration) -> Fit {
        if self.runs_healthy(session_timeout) {
            return Fit::Runs;
        }
        if self.grace.is_some() && self.on_suspend != OnSuspend::Ignore {
            if let Some(largest) = self.largest_grace(session_timeout) {
                return Fit::GraceTooLong { largest };
            }
        }
        if self.lag().is_some() {
            if let Some(largest) = self.largest_lag(session_timeout) {
                return Fit::LagTooLarge { largest };
            }
        }
        Fit::SessionTooShort {
            shortest: self.shortest_session(),
        }
    }

    /// The longest grace, to the millisecond, that lets CMD run on a
    /// healthy connection with this lag; `None` if not even no grace does.
    /// The margin does not depend on the grace: the first signal is that
    /// much less than with no grace.
    fn largest_grace(&self, session_timeout: Duration) -> Option<Duration> {
        let no_grace = Schedule {
            grace: Some(Duration::ZERO),
            ..*self
        };
        let span = self.span(session_timeout)?;
        let first = no_grace.policy(session_timeout).first_signal_after(span)?;
        let largest = floor_ms(first.checked_sub(healthy_silence(session_timeout))?);
        Some(largest).filter(|&grace| {
            Schedule {
                grace: Some(grace),
                ..*self
            }
            .acceptable(session_timeout)
        })
    }

    /// The largest follower lag, in whole milliseconds (at least 1 ms),
    /// that lets CMD run on a healthy connection with this grace (given or
    /// the default) and that the lease admits; `None` if none does. A
    /// larger lag leaves a shorter span, so a shorter time to the first
    /// signal: a binary search.
    fn largest_lag(&self, session_timeout: Duration) -> Option<Duration> {
        let with = |ms: u64| Schedule {
            follower_lag: Some(Duration::from_millis(ms)),
            ..*self
        };
        let (mut fits, mut fails) = (1u64, u64::try_from(session_timeout.as_millis()).ok()?);
        if !with(fits).acceptable(session_timeout) {
            return None;
        }
        if with(fails).acceptable(session_timeout) {
            return Some(Duration::from_millis(fails));
        }
        while fails.saturating_sub(fits) > 1 {
            let mid = fits + (fails - fits) / 2;
            if with(mid).acceptable(session_timeout) {
                fits = mid;
            } else {
                fails = mid;
            }
        }
        Some(Duration::from_millis(fits))
    }

    /// The shortest session timeout, in whole milliseconds, that lets CMD
    /// run on a healthy connection with these options (the default grace
    /// is the new timeout's) and admits the follower lag; `None` if none up
    /// to a billion seconds does. A longer session leaves more time to the
    /// first signal than it adds to [`healthy_silence`]: a binary search.
    fn shortest_session(&self) -> Option<Duration> {
        const MOST_MS: u64 = 1_000_000_000_000;
        let fits = |ms: u64| self.acceptable(Duration::from_millis(ms));
        let (mut fails, mut ok) = (0u64, 1u64);
        while !fits(ok) {
            if ok >= MOST_MS {
                return None;
            }
            fails = ok;
            ok = (ok * 2).min(MOST_MS);
        }
        while ok.saturating_sub(fails) > 1 {
            let mid = fails + (ok - fails) / 2;
            if fits(mid) {
                ok = mid;
            } else {
                fails = mid;
            }
        }
        Some(Duration::from_millis(ok))
    }
}

impl Policy {
    /// How long after the send of the last answered request the command
    /// is first signalled if no answer comes after it, on a lease of
    /// `span`: with `lease`, `exec`'s SIGTERM, and with `term` the keeper's
    /// (should `exec` not act: [`Policy::unattended`]), at the span less
    /// the margin and the grace; with `ignore`, the lease's end, when the
    /// lock is lost. `None` if that is at once (the margin and the grace
    /// take the whole span).
    pub fn first_signal_after(&self, span: Duration) -> Option<Duration> {
        match self.on_suspend {
            OnSuspend::Ignore => Some(span),
            OnSuspend::Lease | OnSuspend::Term => span
                .checked_sub(self.margin.saturating_add(self.grace))
                .filter(|first| !first.is_zero()),
        }
    }

    /// When the command gets SIGKILL if it still runs, and why; `None`
    /// while nothing calls for one. `termed` is when SIGTERM was sent.
    ///
    /// With `--on-suspend term`, at the lease deadline less the margin
    /// whatever else happened: while the connection is up the deadline
    /// moves on with every answer and is never reached, so this only
    /// fires once the server has not answered for most of the session
    /// timeout. After SIGTERM, also `--kill-after` later, whichever is
    /// first.
    pub fn kill_at(&self, termed: Option<Instant>, deadline: Instant) -> Option<(Instant, Cause)> {
        let after = termed
            .and_then(|t| t.checked_add(self.kill_after))
            .map(|at| (at, Cause::KillAfter));
        let lease = match self.on_suspend {
            OnSuspend::Term | OnSuspend::Lease => Some((
                deadline.checked_sub(self.margin).unwrap_or(deadline),
                Cause::LeaseEnding,
            )),
            OnSuspend::Ignore => None,
        };
        match (after, lease) {
            (Some(a), Some(l)) => Some(if l.0 <= a.0 { l } else { a }),
            (a, l) => a.or(l),
        }
    }

    /// What to send now to a command that still runs and has not had
    /// SIGKILL yet, with the lock in `state` and its lease ending at
    /// `deadline`; `termed` is when SIGTERM was sent, if it was. SIGTERM
    /// is sent once: a connection that comes back does not undo it.
    pub fn step(&self, state: HoldState, now: Instant, deadline: Instant, termed: Option<Instant>) -> Step {
        if let Some((at, cause)) = self.kill_at(termed, deadline) {
            if now >= at {
                return Step::Kill(cause);
            }
        }
        if termed.is_some() {
            return Step::Run;
        }
        match (state, self.on_suspend) {
            (HoldState::Lost, _) => Step::Term(Cause::Lost),
            (HoldState::Suspended, OnSuspend::Term) => Step::Term(Cause::Suspended),
            (_, OnSuspend::Lease) if self.term_at(deadline).is_some_and(|at| now >= at) => {
                Step::Term(Cause::Outlasted)
            }
            _ => Step::Run,
        }
    }

    /// With `--on-suspend lease` and a lease of `span` (see
    /// [`zk_rwlock::lease::span`]) on a session of `session_timeout`: the
    /// longest server outage (from the server's last answer to the moment
    /// it serves again, e.g. a restart) that CMD survives whatever the
    /// timing; `None` with another `--on-suspend`.
    ///
    /// ```text
    /// lease span − kill margin − grace − ping gap (T/5) − retry gap
    /// ```
    ///
    /// SIGTERM comes the span less the margin and the grace after the send
    /// of the last answered request; that request may be a [`ping_gap`]
    /// older than the outage, and the client may connect a [`retry_gap`]
    /// after the server is back. Luckier timing survives up to the span
    /// less the margin and the grace. With the defaults and a 10 s session
    /// (span 9.8 s): 4.7 s. Zero if nothing is left.
    pub fn survivable_outage(&self, span: Duration, session_timeout: Duration) -> Option<Duration> {
        (self.on_suspend == OnSuspend::Lease).then(|| {
            span.saturating_sub(self.margin)
                .saturating_sub(self.grace)
                .saturating_sub(ping_gap(session_timeout))
                .saturating_sub(retry_gap(session_timeout))
        })
    }

    /// With `--on-suspend lease`: when a command that still runs without
    /// news from the server gets SIGTERM, the deadline less the margin and
    /// the grace.
    pub fn term_at(&self, deadline: Instant) -> Option<Instant> {
        match self.on_suspend {
            OnSuspend::Lease => Some(self.margin_and_grace_before(deadline)),
            _ => None,
        }
    }

    /// `deadline` less the kill margin and the grace (the deadline itself
    /// if that is before the clock's range).
    fn margin_and_grace_before(&self, deadline: Instant) -> Instant {
        deadline
            .checked_sub(self.margin.saturating_add(self.grace))
            .unwrap_or(deadline)
    }

    /// What the keeper does if `exec` says nothing more (stopped, or
    /// killed and its death missed): SIGTERM at the first time (unless
    /// `termed`), SIGKILL at the second. The same rules, as if no answer
    /// came from the server again: the command is stopped by the same
    /// deadline whether `exec` can act or not. With `--on-suspend ignore`,
    /// SIGTERM at the deadline and SIGKILL `--kill-after` later.
    pub fn unattended(
        &self,
        deadline: Instant,
        termed: Option<Instant>,
    ) -> (Option<Instant>, Option<Instant>) {
        let term = match (termed, self.on_suspend) {
            (Some(_), _) => None,
            (None, OnSuspend::Ignore) => Some(deadline),
            (None, OnSuspend::Term | OnSuspend::Lease) => Some(self.margin_and_grace_before(deadline)),
        };
        let kill = self
            .kill_at(termed, deadline)
            .map(|(at, _)| at)
            .or_else(|| term.and_then(|t| t.checked_add(self.kill_after)));
        (term, kill)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn kill_margin_is_a_second_or_a_fifth_of_short_sessions() {
        for (timeout, margin) in [
            (ms(400), ms(80)),
            (ms(4_000), ms(800)),
            (ms(5_000), ms(1_000)),
            (ms(10_000), ms(1_000)),
            (ms(40_000), ms(1_000)),
            (ms(0), ms(0)),
        ] {
            assert_eq!(kill_margin(timeout), margin, "{timeout:?}");
        }
        // The command gets time for SIGTERM: a lost connection is seen 2/5
        // of the timeout after the last answer, the lease ends at 49/50.
        for t in [400, 1_000, 4_000, 10_000, 60_000] {
            let t = ms(t);
            let grace = t * 49 / 50 - t * 2 / 5 - kill_margin(t);
            assert!(grace >= t * 37 / 100, "{t:?}: {grace:?}");
        }
    }

    #[test]
    fn kill_at() {
        let t0 = Instant::now();
        let deadline = t0 + ms(4_000);
        let term = Policy {
            on_suspend: OnSuspend::Term,
            kill_after: ms(10_000),
            margin: ms(800),
            grace: ms(1_200),
        };
        let ignore = Policy {
            on_suspend: OnSuspend::Ignore,
            ..term
        };
        let short = Policy {
            kill_after: ms(300),
            ..term
        };
        let at = |d| t0 + ms(d);
        for (policy, termed, want) in [
            // term: the lease, unless --kill-after is sooner.
            (term, None, Some((at(3_200), Cause::LeaseEnding))),
            (term, Some(at(1_600)), Some((at(3_200), Cause::LeaseEnding))),
            (short, Some(at(1_600)), Some((at(1_900), Cause::KillAfter))),
            (short, Some(at(2_900)), Some((at(3_200), Cause::LeaseEnding))),
            // ignore: only --kill-after, once SIGTERM was sent.
            (ignore, None, None),
            (ignore, Some(at(4_000)), Some((at(14_000), Cause::KillAfter))),
        ] {
            assert_eq!(policy.kill_at(termed, deadline), want, "{policy:?} {termed:?}");
        }
        // A margin beyond the clock's range.
        let early = Policy {
            margin: Duration::MAX,
            ..term
        };
        assert_eq!(early.kill_at(None, t0), Some((t0, Cause::LeaseEnding)));
        // A --kill-after beyond the clock's range never fires.
        let never = Policy {
            on_suspend: OnSuspend::Ignore,
            kill_after: Duration::MAX,
            margin: ms(800),
            grace: ms(1_200),
        };
        assert_eq!(never.kill_at(Some(t0), deadline), None);
    }

    #[test]
    fn lease_mode_rides_out_a_blip_and_stops_in_time() {
        use HoldState::*;
        let t0 = Instant::now();
        let deadline = t0 + ms(4_000);
        let lease = Policy {
            on_suspend: OnSuspend::Lease,
            kill_after: ms(10_000),
            margin: ms(800),
            grace: ms(1_200),
        };
        let at = |d| t0 + ms(d);
        // SIGTERM at 4000 - 800 - 1200, SIGKILL at 4000 - 800.
        assert_eq!(lease.term_at(deadline), Some(at(2_000)));
        for (state, now, termed, want) in [
            (Suspended, 1_999, None, Step::Run),
            (Held, 1_999, None, Step::Run),
            (Suspended, 2_000, None, Step::Term(Cause::Outlasted)),
            // The server silent, the loss not noticed yet: the same.
            (Held, 2_000, None, Step::Term(Cause::Outlasted)),
            (Suspended, 2_500, Some(2_000), Step::Run),
            (Suspended, 3_200, Some(2_000), Step::Kill(Cause::LeaseEnding)),
            (Lost, 1_000, None, Step::Term(Cause::Lost)),
        ] {
            assert_eq!(
                lease.step(state, at(now), deadline, termed.map(at)),
                want,
                "{state:?} at {now} termed {termed:?}"
            );
        }
        // A 10 s session: SIGTERM 7.8 s after the last answer.
        let ten = ms(10_000);
        assert_eq!(ten * 49 / 50 - kill_margin(ten) - default_grace(ten), ms(7_800));
    }

    #[test]
    fn the_default_grace_is_3_tenths_of_the_session_at_most_a_second() {
        for (timeout, grace) in [
            (ms(0), ms(0)),
            (ms(400), ms(120)),
            (ms(2_000), ms(600)),
            (ms(3_000), ms(900)),
            (ms(3_334), ms(1_000)),
            (ms(4_000), ms(1_000)),
            (ms(10_000), ms(1_000)),
            (ms(30_000), ms(1_000)),
        ] {
            assert_eq!(default_grace(timeout), grace, "{timeout:?}");
        }
    }

    /// Rows: session timeout; SIGTERM after the last answered request's
    /// send; the outage survived whatever the timing, with the defaults
    /// (no follower lag). The figures of `exec --help` and docs/cli.md.
    #[test]
    fn outages_survived_under_the_defaults() {
        for (timeout, term_after, survived) in [
            // 9.8 - 1 - 1 = 7.8; less 2 (pings) and 1.1 (retries).
            (ms(10_000), ms(7_800), ms(4_700)),
            // 3.92 - 0.8 - 1 = 2.12; less 0.8 and 0.5.
            (ms(4_000), ms(2_120), ms(820)),
            (ms(2_000), ms(960), ms(260)),
            (ms(20_000), ms(17_600), ms(12_500)),
            (ms(30_000), ms(27_400), ms(20_300)),
            // Nothing left: no outage is survived for sure.
            (ms(400), ms(192), ms(0)),
            (ms(0), ms(0), ms(0)),
        ] {
            let span = zk_rwlock::lease::span(timeout, Duration::ZERO).unwrap_or_default();
            let defaults = Policy {
                on_suspend: OnSuspend::Lease,
                kill_after: ms(10_000),
                margin: kill_margin(timeout),
                grace: default_grace(timeout),
            };
            let t0 = Instant::now();
            let term = defaults.term_at(t0 + span).map(|at| at - t0);
            assert_eq!(term, Some(term_after), "{timeout:?}");
            assert_eq!(
                defaults.survivable_outage(span, timeout),
                Some(survived),
                "{timeout:?}"
            );
            let term_mode = Policy {
                on_suspend: OnSuspend::Term,
                ..defaults
            };
            assert_eq!(term_mode.survivable_outage(span, timeout), None);
        }
        // The docs state the figure of the default session.
        let docs = include_str!("../../../docs/cli.md");
        for figure in ["4.7 s", "7.8 s"] {
            assert!(docs.contains(figure), "docs/cli.md does not state {figure}");
        }
    }

    /// Rows: session timeout, `--on-suspend`, `--grace` (`None`: the
    /// default), `--follower-lag`; what [`Schedule::fit`] says.
    #[test]
    fn schedules_that_stop_cmd_on_a_healthy_connection_are_refused() {
        use OnSuspend::*;
        let s = |n: u64| ms(n * 1_000);
        for (timeout, on_suspend, grace, lag, want) in [
            // The defaults run from 556 ms on.
            (s(10), Lease, None, None, Fit::Runs),
            (s(4), Lease, None, None, Fit::Runs),
            (s(2), Lease, None, None, Fit::Runs),
            (ms(556), Lease, None, None, Fit::Runs),
            (
                ms(555),
                Lease,
                None,
                None,
                Fit::SessionTooShort {
                    shortest: Some(ms(556)),
                },
            ),
            (
                ms(300),
                Term,
                None,
                None,
                Fit::SessionTooShort {
                    shortest: Some(ms(556)),
                },
            ),
            (ms(300), Ignore, None, None, Fit::Runs),
            // The newcomer's: a lag that passes the lease's own bound
            // (2.25 x) but leaves SIGTERM 1.925 s (0.215 s) after an
            // answer, which may be 2 s (0.8 s) old between pings.
            (
                s(10),
                Lease,
                None,
                Some(ms(4_400)),
                Fit::LagTooLarge { largest: ms(3_200) },
            ),
            (s(10), Lease, None, Some(ms(3_200)), Fit::Runs),
            (
                s(10),
                Lease,
                None,
                Some(ms(3_201)),
                Fit::LagTooLarge { largest: ms(3_200) },
            ),
            (
                s(4),
                Lease,
                None,
                Some(ms(1_700)),
                Fit::LagTooLarge { largest: ms(253) },
            ),
            (s(4), Lease, None, Some(ms(253)), Fit::Runs),
            (
                s(4),
                Term,
                None,
                Some(ms(1_700)),
                Fit::LagTooLarge { largest: ms(253) },
            ),
            // With no grace the lag can be larger: the lease's bound then.
            (s(4), Lease, Some(ms(0)), Some(ms(1_500)), Fit::Runs),
            // `ignore` sends nothing before the lease's end.
            (s(4), Ignore, None, Some(ms(1_700)), Fit::Runs),
            // A zero lag is none.
            (s(4), Lease, None, Some(ms(0)), Fit::Runs),
            // --grace: 9.8 - 1 - 3.1 = 5.7 s; 3.92 - 0.8 - 1.3 = 1.82 s.
            (
                s(10),
                Lease,
                Some(s(20)),
                None,
                Fit::GraceTooLong { largest: ms(5_700) },
            ),
            (
                s(10),
                Term,
                Some(s(20)),
                None,
                Fit::GraceTooLong { largest: ms(5_700) },
            ),
            (s(10), Ignore, Some(s(20)), None, Fit::Runs),
            (s(10), Lease, Some(ms(5_700)), None, Fit::Runs),
            (
                s(10),
                Lease,
                Some(ms(5_701)),
                None,
                Fit::GraceTooLong { largest: ms(5_700) },
            ),
            (s(4), Lease, Some(ms(1_820)), None, Fit::Runs),
            (
                s(4),
                Lease,
                Some(ms(1_821)),
                None,
                Fit::GraceTooLong { largest: ms(1_820) },
            ),
            (
                s(2),
                Lease,
                Some(s(1)),
                None,
                Fit::GraceTooLong { largest: ms(860) },
            ),
            // A grace that fits no lag, a lag that fits no grace: the
            // session, which must then be 18.254 s.
            (
                s(10),
                Lease,
                Some(s(5)),
                Some(ms(4_400)),
                Fit::SessionTooShort {
                    shortest: Some(ms(18_254)),
                },
            ),
            // The grace is named first when some grace fits the lag.
            (
                s(10),
                Lease,
                Some(s(5)),
                Some(s(2)),
                Fit::GraceTooLong { largest: ms(2_200) },
            ),
            // No lag fits a 2 s session with the default grace (0.6 s).
            (
                s(2),
                Lease,
                None,
                Some(ms(100)),
                Fit::SessionTooShort {
                    shortest: Some(ms(3_637)),
                },
            ),
            (s(2), Lease, Some(ms(100)), Some(ms(100)), Fit::Runs),
        ] {
            let schedule = Schedule {
                on_suspend,
                kill_after: s(10),
                grace,
                follower_lag: lag,
            };
            let fit = schedule.fit(timeout);
            assert_eq!(fit, want, "{timeout:?} {schedule:?}");
            // The value suggested fits, a millisecond more does not.
            let with = |grace, lag, timeout| {
                let changed = Schedule {
                    grace,
                    follower_lag: lag,
                    ..schedule
                };
                (changed.fit(timeout), changed)
            };
            let (at, over) = match fit {
                Fit::Runs => continue,
                Fit::GraceTooLong { largest } => (
                    with(Some(largest), lag, timeout),
                    with(Some(largest + ms(1)), lag, timeout),
                ),
                Fit::LagTooLarge { largest } => (
                    with(grace, Some(largest), timeout),
                    with(grace, Some(largest + ms(1)), timeout),
                ),
                Fit::SessionTooShort { shortest } => {
                    let shortest = shortest.unwrap();
                    (with(grace, lag, shortest), with(grace, lag, shortest - ms(1)))
                }
            };
            assert_eq!(at.0, Fit::Runs, "{timeout:?} {:?}", at.1);
            assert_ne!(over.0, Fit::Runs, "{timeout:?} {:?}", over.1);
            // What is suggested also passes the lease's own bound.
            if let Some(lag) = at.1.follower_lag {
                assert!(zk_rwlock::lease::follower_lag_admissible(timeout, lag) || lag.is_zero());
            }
        }
    }

    /// The figures of docs/cli.md's table: the largest grace, and the
    /// largest follower lag with the default grace and with none, for
    /// sessions of 4, 10 and 30 s (`--on-suspend lease`).
    #[test]
    fn the_docs_state_the_largest_values() {
        let docs = include_str!("../../../docs/cli.md");
        let largest = |timeout, grace: Option<Duration>, lag: Duration| {
            let schedule = Schedule {
                on_suspend: OnSuspend::Lease,
                kill_after: ms(10_000),
                grace,
                follower_lag: Some(lag),
            };
            match schedule.fit(timeout) {
                Fit::GraceTooLong { largest } | Fit::LagTooLarge { largest } => largest,
                other => panic!("{timeout:?} {grace:?} {lag:?}: {other:?}"),
            }
        };
        let secs = |d: Duration| {
            let fraction = format!("{:03}", d.subsec_millis());
            let fraction = fraction.trim_end_matches('0');
            match fraction {
                "" => format!("{} s", d.as_secs()),
                _ => format!("{}.{fraction} s", d.as_secs()),
            }
        };
        for (t, row) in [
            (4, "| 4 s | 1.82 s | 0.253 s | 1.586 s |"),
            (10, "| 10 s | 5.7 s | 3.2 s | 4.2 s |"),
            (30, "| 30 s | 21.3 s | 13.333 s | 13.333 s |"),
        ] {
            let timeout = ms(t * 1_000);
            let over = ms(t * 1_000);
            let computed = format!(
                "| {t} s | {} | {} | {} |",
                secs(largest(timeout, Some(over), Duration::ZERO)),
                secs(largest(timeout, None, over)),
                secs(largest(timeout, Some(Duration::ZERO), over)),
            );
            assert_eq!(computed, row);
            assert!(docs.contains(row), "docs/cli.md lacks {row}");
        }
    }

    /// The rule is the outage survived's: a schedule runs on a healthy
    /// connection exactly when, with `lease`, it survives an outage of no
    /// length at all (the first signal covers the ping gap and a retry gap).
    #[test]
    fn a_schedule_runs_when_it_survives_a_zero_outage() {
        for timeout in [400, 555, 556, 1_000, 2_000, 4_000, 10_000, 30_000].map(ms) {
            for lag in [0, 100, 250, 400, 1_000, 3_000].map(ms) {
                for grace in [None, Some(ms(0)), Some(ms(500)), Some(ms(2_000))] {
                    let schedule = Schedule {
                        on_suspend: OnSuspend::Lease,
                        kill_after: ms(10_000),
                        grace,
                        follower_lag: Some(lag),
                    };
                    let Some(span) = schedule.span(timeout) else {
                        assert!(!schedule.runs_healthy(timeout));
                        continue;
                    };
                    let policy = schedule.policy(timeout);
                    let first = policy.first_signal_after(span);
                    let exact = first.and_then(|f| f.checked_sub(healthy_silence(timeout)));
                    assert_eq!(schedule.runs_healthy(timeout), exact.is_some());
                    if let Some(left) = exact {
                        assert_eq!(policy.survivable_outage(span, timeout), Some(left));
                    }
                }
            }
        }
        // The figures of the docs: 3.1 s with a 10 s session, 1.3 s with 4 s.
        assert_eq!(healthy_silence(ms(10_000)), ms(3_100));
        assert_eq!(healthy_silence(ms(4_000)), ms(1_300));
    }

    /// The policy of a run: the margin is min(1 s, T/5, span/4), as the
    /// docs say, the grace given or the default.
    #[test]
    fn the_policy_of_a_schedule() {
        let schedule = |grace, lag| Schedule {
            on_suspend: OnSuspend::Lease,
            kill_after: ms(3_000),
            grace,
            follower_lag: lag,
        };
        for (timeout, grace, lag, margin, want_grace) in [
            (ms(10_000), None, None, ms(1_000), ms(1_000)),
            (ms(4_000), None, None, ms(800), ms(1_000)),
            // span 3.9 s: a quarter is 975 ms.
            (ms(10_000), None, Some(ms(4_400)), ms(975), ms(1_000)),
            // span 3.067 s: 766.75 ms.
            (
                ms(4_000),
                Some(ms(200)),
                Some(ms(253)),
                Duration::from_micros(766_750),
                ms(200),
            ),
        ] {
            let policy = schedule(grace, lag).policy(timeout);
            assert_eq!(
                (policy.margin, policy.grace, policy.kill_after),
                (margin, want_grace, ms(3_000)),
                "{timeout:?} {lag:?}"
            );
        }
    }

    #[test]
    fn unattended_times_match_the_rules() {
        let t0 = Instant::now();
        let deadline = t0 + ms(4_000);
        let at = |d| t0 + ms(d);
        let lease = Policy {
            on_suspend: OnSuspend::Lease,
            kill_after: ms(10_000),
            margin: ms(800),
            grace: ms(1_200),
        };
        assert_eq!(
            lease.unattended(deadline, None),
            (Some(at(2_000)), Some(at(3_200)))
        );
        assert_eq!(
            lease.unattended(deadline, Some(at(2_100))),
            (None, Some(at(3_200)))
        );
        let term = Policy {
            on_suspend: OnSuspend::Term,
            ..lease
        };
        assert_eq!(
            term.unattended(deadline, None),
            (Some(at(2_000)), Some(at(3_200)))
        );
        let ignore = Policy {
            on_suspend: OnSuspend::Ignore,
            kill_after: ms(300),
            ..lease
        };
        assert_eq!(
            ignore.unattended(deadline, None),
            (Some(at(4_000)), Some(at(4_300)))
        );
        assert_eq!(
            ignore.unattended(deadline, Some(at(4_000))),
            (None, Some(at(4_300)))
        );
    }

    /// Rows: policy, state, now and SIGTERM time (ms from t0; the lease
    /// ends at 4000, the margin is 800, --kill-after 10 s or 300 ms), step.
    #[test]
    fn steps() {
        use HoldState::*;
        let t0 = Instant::now();
        let deadline = t0 + ms(4_000);
        let term = Policy {
            on_suspend: OnSuspend::Term,
            kill_after: ms(10_000),
            margin: ms(800),
            grace: ms(1_200),
        };
        let ignore = Policy {
            on_suspend: OnSuspend::Ignore,
            ..term
        };
        let short = Policy {
            kill_after: ms(300),
            ..term
        };
        let short_ignore = Policy {
            kill_after: ms(300),
            ..ignore
        };
        for (policy, state, now, termed, want) in [
            (term, Held, 1_000, None, Step::Run),
            (ignore, Held, 1_000, None, Step::Run),
            // The connection is lost.
            (term, Suspended, 1_600, None, Step::Term(Cause::Suspended)),
            (ignore, Suspended, 1_600, None, Step::Run),
            (ignore, Suspended, 3_999, None, Step::Run),
            // SIGTERM once; the connection coming back does not undo it.
            (term, Suspended, 1_700, Some(1_600), Step::Run),
            (term, Held, 1_700, Some(1_600), Step::Run),
            // Still running at the lease deadline less the margin.
            (
                term,
                Suspended,
                3_200,
                Some(1_600),
                Step::Kill(Cause::LeaseEnding),
            ),
            (term, Lost, 4_100, Some(1_600), Step::Kill(Cause::LeaseEnding)),
            // --kill-after first.
            (short, Suspended, 1_900, Some(1_600), Step::Kill(Cause::KillAfter)),
            (short, Suspended, 1_899, Some(1_600), Step::Run),
            // The lock is lost while connected (its node deleted): SIGTERM,
            // then --kill-after.
            (term, Lost, 1_000, None, Step::Term(Cause::Lost)),
            (short, Lost, 1_299, Some(1_000), Step::Run),
            (short, Lost, 1_300, Some(1_000), Step::Kill(Cause::KillAfter)),
            // ignore: the lease ran out, the lock is lost.
            (ignore, Lost, 4_000, None, Step::Term(Cause::Lost)),
            (short_ignore, Lost, 4_299, Some(4_000), Step::Run),
            (
                short_ignore,
                Lost,
                4_300,
                Some(4_000),
                Step::Kill(Cause::KillAfter),
            ),
            // Found lost only past the deadline (exec was not scheduled):
            // no time for SIGTERM left.
            (term, Lost, 4_500, None, Step::Kill(Cause::LeaseEnding)),
            (ignore, Lost, 4_500, None, Step::Term(Cause::Lost)),
            // A held lock whose lease is about to run out (no answers for
            // most of the session timeout, disconnection not seen yet).
            (term, Held, 3_200, None, Step::Kill(Cause::LeaseEnding)),
            (ignore, Held, 3_200, None, Step::Run),
        ] {
            let termed = termed.map(|t| t0 + ms(t));
            assert_eq!(
                policy.step(state, t0 + ms(now), deadline, termed),
                want,
                "{policy:?} {state:?} at {now} termed {termed:?}"
            );
        }
    }
}
