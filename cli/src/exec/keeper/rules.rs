//! The keeper's rules: what it does and when, from the last lease `exec`
//! sent and what was done already. Pure: time is an argument.

use std::time::Duration;

use zk_rwlock::HoldState;

use super::ToKeeper;

/// What the keeper does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// SIGTERM to the tree.
    Term,
    /// SIGKILL to the tree (repeated while anything is left).
    Kill,
    /// SIGKILL to what is left of the tree, `--kill-after` after the
    /// SIGTERM of `--kill-orphans` (not news for `exec`: the lock is fine).
    KillOrphans,
    /// The lease deadline passed without a renewal: the lease file says `lost`.
    MarkLost,
}

/// The keeper's view: the last lease `exec` sent and what was done.
#[derive(Debug, Clone)]
pub struct Watch {
    pub deadline: i128,
    pub state: HoldState,
    pub term_at: Option<i128>,
    pub kill_at: Option<i128>,
    /// SIGTERM sent (by `exec`'s word or on the keeper's own).
    pub termed: bool,
    /// SIGKILL in progress.
    pub killing: bool,
    /// The lease file says `lost` for `deadline`.
    pub marked_lost: bool,
    /// `--kill-orphans`, once CMD exited: SIGTERM sent then, SIGKILL at this time.
    pub orphans_kill_at: Option<i128>,
}

impl Watch {
    pub fn new(deadline: i128, term_at: Option<i128>, kill_at: Option<i128>) -> Watch {
        Watch {
            deadline,
            state: HoldState::Held,
            term_at,
            kill_at,
            termed: false,
            killing: false,
            marked_lost: false,
            orphans_kill_at: None,
        }
    }

    /// A message from `exec`: what to do at once.
    pub fn on_message(&mut self, msg: &ToKeeper) -> Option<Act> {
        match *msg {
            ToKeeper::Lease {
                deadline,
                state,
                term_at,
                kill_at,
            } => {
                if deadline != self.deadline {
                    self.marked_lost = false;
                }
                self.deadline = deadline;
                self.state = state;
                self.term_at = term_at;
                self.kill_at = kill_at;
                None
            }
            ToKeeper::Signal(sig) => {
                if sig == libc::SIGTERM {
                    self.termed = true;
                }
                None
            }
            ToKeeper::Kill => {
                self.killing = true;
                Some(Act::Kill)
            }
        }
    }

    /// `exec` is gone: kill the tree.
    pub fn on_exec_gone(&mut self) -> Act {
        self.killing = true;
        Act::Kill
    }

    /// CMD exited with `--kill-orphans`: SIGTERM the rest now, SIGKILL
    /// after `kill_after` (or at the lease's kill time, if sooner).
    pub fn on_command_exit_kill_orphans(&mut self, now: i128, kill_after: Duration) -> Act {
        self.termed = true;
        self.orphans_kill_at = Some(now + kill_after.as_nanos() as i128);
        Act::Term
    }

    /// What is due at `now`, at most one act per call (call until `None`).
    pub fn due(&mut self, now: i128) -> Option<Act> {
        if !self.marked_lost && now >= self.deadline && self.state != HoldState::Lost {
            self.marked_lost = true;
            return Some(Act::MarkLost);
        }
        if self.killing {
            return None;
        }
        if self.kill_at.is_some_and(|at| now >= at) {
            self.killing = true;
            return Some(Act::Kill);
        }
        if self.orphans_kill_at.is_some_and(|at| now >= at) {
            self.killing = true;
            return Some(Act::KillOrphans);
        }
        if !self.termed && self.term_at.is_some_and(|at| now >= at) {
            self.termed = true;
            return Some(Act::Term);
        }
        None
    }

    /// When to look again (boot ns), if anything is pending.
    pub fn next_wake(&self) -> Option<i128> {
        let mut times = Vec::new();
        if !self.marked_lost && self.state != HoldState::Lost {
            times.push(self.deadline);
        }
        if !self.killing {
            times.extend(self.kill_at);
            times.extend(self.orphans_kill_at);
            if !self.termed {
                times.extend(self.term_at);
            }
        }
        times.into_iter().min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = 1_000_000_000;

    #[test]
    fn unattended_term_then_kill_then_lost() {
        let mut w = Watch::new(10 * S, Some(6 * S), Some(9 * S));
        assert_eq!(w.due(5 * S), None);
        assert_eq!(w.next_wake(), Some(6 * S));
        assert_eq!(w.due(6 * S), Some(Act::Term));
        assert_eq!(w.due(6 * S), None, "SIGTERM once");
        assert_eq!(w.next_wake(), Some(9 * S));
        assert_eq!(w.due(9 * S), Some(Act::Kill));
        assert_eq!(w.next_wake(), Some(10 * S));
        assert_eq!(w.due(10 * S), Some(Act::MarkLost));
        assert_eq!(w.due(11 * S), None);
        assert_eq!(w.next_wake(), None);
    }

    #[test]
    fn renewals_push_everything_on() {
        let mut w = Watch::new(10 * S, Some(6 * S), Some(9 * S));
        for k in 1..5 {
            let renew = ToKeeper::Lease {
                deadline: (10 + 5 * k) * S,
                state: HoldState::Held,
                term_at: Some((6 + 5 * k) * S),
                kill_at: Some((9 + 5 * k) * S),
            };
            assert_eq!(w.on_message(&renew), None);
            assert_eq!(w.due((5 + 5 * k) * S), None);
        }
    }

    #[test]
    fn exec_terms_first_keeper_does_not_term_again() {
        let mut w = Watch::new(10 * S, Some(6 * S), Some(9 * S));
        assert_eq!(w.on_message(&ToKeeper::Signal(libc::SIGTERM)), None);
        assert_eq!(w.due(7 * S), None);
        assert_eq!(w.due(9 * S), Some(Act::Kill));
        // Other signals are only forwarded.
        let mut w = Watch::new(10 * S, Some(6 * S), None);
        assert_eq!(w.on_message(&ToKeeper::Signal(libc::SIGUSR1)), None);
        assert_eq!(w.due(6 * S), Some(Act::Term));
    }

    #[test]
    fn a_lost_lease_is_not_marked_again_and_kill_is_final() {
        let mut w = Watch::new(10 * S, None, None);
        w.on_message(&ToKeeper::Lease {
            deadline: 10 * S,
            state: HoldState::Lost,
            term_at: None,
            kill_at: None,
        });
        assert_eq!(w.due(20 * S), None, "exec already said lost");
        assert_eq!(w.on_exec_gone(), Act::Kill);
        assert!(w.killing);
        assert_eq!(w.due(30 * S), None);
    }

    #[test]
    fn kill_orphans_terms_then_kills_after_the_grace() {
        let mut w = Watch::new(100 * S, Some(60 * S), Some(90 * S));
        assert_eq!(
            w.on_command_exit_kill_orphans(S, Duration::from_secs(2)),
            Act::Term
        );
        assert_eq!(w.due(2 * S), None);
        assert_eq!(w.next_wake(), Some(3 * S));
        assert_eq!(w.due(3 * S), Some(Act::KillOrphans));
        // The lease's own kill time comes first when it is sooner.
        let mut w = Watch::new(100 * S, Some(60 * S), Some(90 * S));
        w.on_command_exit_kill_orphans(89 * S, Duration::from_secs(2));
        assert_eq!(w.due(90 * S), Some(Act::Kill));
    }
}
