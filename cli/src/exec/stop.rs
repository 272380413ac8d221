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

impl Policy {
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
