//! When `exec` signals its command: a pure verdict from where the lock
//! stands (the guard's [`HoldState`] and lease deadline), the time, and
//! what was sent already. No clock, no signal, no ZooKeeper: the
//! supervisor in `exec.rs` asks, acts, and asks again on every change.

use std::time::{Duration, Instant};

use zk_rwlock::HoldState;

/// What `exec` does when the connection to ZooKeeper is lost while the
/// command runs (`--on-suspend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnSuspend {
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
            OnSuspend::Term => Some((
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
            _ => Step::Run,
        }
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
        };
        assert_eq!(never.kill_at(Some(t0), deadline), None);
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
