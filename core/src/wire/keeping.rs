//! Keeping a guard's watch on its own node: the keeper's loop, which both
//! carriers run (the library's keeper on the ZooKeeper client, the
//! simulation on its model of the server). A carrier does what
//! [`Keeping::poll`] gives, and hands back what happened: the watch's event
//! to [`Keeping::fired`], the carried read to [`Keeping::answered`]. Both
//! feed the machine, which says what the news means
//! ([`Contender::held_event`], [`Contender::held_watch_set`]); everything
//! else is decided here:
//!
//! - how the keeper starts: on the watch the acquire set on the node and
//!   handed over, if the machine says it is still set
//!   ([`Contender::first_watch_after`]); else that watch is dropped, and the
//!   node is read and watched after the machine's bound (at once without
//!   one);
//! - after a data change, the node is read and watched again at once; a
//!   read whose answer was lost is sent again after a pause
//!   ([`Backoff::HELD_WATCH`]: 10 ms, doubling up to 1 s), back to none once
//!   an answer tells what became of the node;
//! - when the carrier of a step ends before its news, and another takes
//!   the keeper on ([`Keeping::hand_on`]): a watch goes on as it was, a
//!   read under way is made again at once;
//! - what a loss is reported as ([`Loss`]), and when a watch the server
//!   refuses is reported ([`Report::unwatchable`]).
//!
//! ```text
//! keeping = Keeping::new(path of the node, &machine, the watch the acquire handed over)
//! while let Some(next) = keeping.poll() {
//!     report = match next {
//!         Keeper::Wait(watch) => keeping.fired(&mut machine, its event's kind, its session state)
//!         Keeper::Send { exchange, after, .. } => after the pause, carry the exchange (Carry);
//!             keeping.answered(&mut machine, carried, the session's end its error names, the session's state)
//!         Keeper::Stop => break
//!     }
//!     log report.lost, report.unwatchable
//! }
//! ```

use std::sync::Arc;
use std::time::Duration;

use super::{keep, Carried, Exchange};
use crate::acquire::{NodeEvent, WatchedKind};
use crate::backoff::Backoff;
use crate::contender::{Answer, Contender, Keep};
use crate::lease::SessionState;

/// What the keeper does next.
#[derive(Debug)]
pub enum Keeper<W> {
    /// Wait for this watch's event (the one kept on the node), and hand it
    /// to [`Keeping::fired`].
    Wait(W),
    /// After the pause `after`, send `exchange` (the read and watch of the
    /// node, [`keep`]), and hand what it carried to [`Keeping::answered`].
    /// Any watch the carrier still holds on the node is dropped.
    Send {
        /// The read and watch of the node.
        exchange: Exchange,
        /// The pause before it leaves.
        after: Duration,
        /// Sent again: the last answer was lost.
        again: bool,
    },
    /// Nothing left to watch: the node is gone, the session over, or the
    /// server refuses the watch.
    Stop,
}

/// Why the keeper's news lost the lock: a cause the library maps one to
/// one onto what it logs and counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Loss {
    /// The node was deleted: its watch fired for its deletion, or the read
    /// found no node.
    Deleted,
    /// The read found another node under its name: a data change used up
    /// the watch, then someone else deleted the node and made it again.
    MadeAgain,
    /// The session expired.
    SessionExpired,
    /// The session was closed, or its authentication failed.
    SessionClosed,
}

impl Loss {
    /// The session's end, by whether it `expired`.
    fn session(expired: bool) -> Loss {
        if expired {
            Loss::SessionExpired
        } else {
            Loss::SessionClosed
        }
    }
}

/// What the keeper's news is reported as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Report {
    /// The lock is lost, from this news on, and why (`None`: not lost by
    /// it, or lost before).
    pub lost: Option<Loss>,
    /// The server refused the watch (the node's ACL does not let its owner
    /// READ, or another error than a lost answer or the session's end):
    /// from now on, only the session's end and the lease tell.
    pub unwatchable: bool,
}

/// The keeper of one held node (the module's documentation). Small, as a
/// guard's keeper keeps it for the guard's whole life: its next read is
/// made when it is given.
#[derive(Debug)]
pub struct Keeping<W> {
    /// The node's full path (shared with the carrier's copy: a guard's
    /// keeper keeps it for the guard's life).
    path: Arc<str>,
    next: Option<Next<W>>,
    /// The pause before the read is sent again after a lost answer.
    pause: Duration,
    stopped: bool,
}

/// The next step, the read not made yet; or the step given to the carrier,
/// until its news is handed back.
#[derive(Debug)]
enum Next<W> {
    Wait(W),
    Send {
        after: Duration,
        again: bool,
    },
    Stop,
    /// The watch was given ([`Keeper::Wait`]).
    Waiting,
    /// The read was given ([`Keeper::Send`]).
    Sending,
}

impl<W> Keeping<W> {
    /// The keeper of the node at `path` that `machine` holds; `watch` is
    /// the watch the acquire set on it, handed over at the grant, if any.
    pub fn new(path: Arc<str>, machine: &Contender, watch: Option<W>) -> Keeping<W> {
        let mut keeping = Keeping {
            path,
            next: None,
            pause: Duration::ZERO,
            stopped: false,
        };
        keeping.next = Some(match (machine.first_watch_after(), watch) {
            (None, Some(watch)) => Next::Wait(watch),
            (after, _) => Next::Send {
                after: after.unwrap_or_default(),
                again: false,
            },
        });
        keeping
    }

    /// What the keeper does next; `None` until the news of the last step
    /// is handed back.
    pub fn poll(&mut self) -> Option<Keeper<W>> {
        let (given, next) = match self.next.take()? {
            Next::Wait(watch) => (Next::Waiting, Keeper::Wait(watch)),
            Next::Send { after, again } => (
                Next::Sending,
                Keeper::Send {
                    exchange: keep(&self.path),
                    after,
                    again,
                },
            ),
            Next::Stop => return Some(Keeper::Stop),
            out @ (Next::Waiting | Next::Sending) => {
                self.next = Some(out);
                return None;
            }
        };
        self.next = Some(given);
        Some(next)
    }

    /// The carrier of the step under way ends before it hands back its
    /// news, and another takes the keeper on (the library's keeper, when
    /// the runtime it ran on ends): `watch` is the watch the step awaited,
    /// if the carrier still has it. A watch needs no carrier: the keeper
    /// waits on it where it goes on (no request). A watch not handed back
    /// is read and watched again at once, and so is a read under way (or
    /// in its pause), which went with its answer: a hand-on happens once,
    /// and the pause, counted anew, would only delay what the read tells.
    /// A step not given yet stays as it is.
    pub fn hand_on(&mut self, watch: Option<W>) {
        self.next = match (self.next.take(), watch) {
            (Some(Next::Waiting), Some(watch)) => Some(Next::Wait(watch)),
            (Some(Next::Waiting), None) | (Some(Next::Sending), _) => Some(Next::Send {
                after: Duration::ZERO,
                again: true,
            }),
            (next, _) => next,
        };
    }

    /// The pause before the keeper's first step, if that step is a read
    /// after a pause (no watch was handed over): a carrier may start the
    /// keeper only then, counting the pause from the grant. `None` once
    /// polled, or when it begins on a watch or at once.
    pub fn starts_after(&self) -> Option<Duration> {
        match self.next {
            Some(Next::Send { after, again: false }) if !after.is_zero() => Some(after),
            _ => None,
        }
    }

    /// True once the keeper stopped ([`Keeper::Stop`]).
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// The watch fired with an event of `kind`, carrying the session
    /// `state`: fed to `machine` ([`NodeEvent::of`],
    /// [`Contender::held_event`]).
    pub fn fired(&mut self, machine: &mut Contender, kind: WatchedKind, state: SessionState) -> Report {
        let was_lost = machine.is_lost();
        let keep = machine.held_event(NodeEvent::of(kind, state));
        // A deletion tells of the node, whatever the session's state.
        let cause = match kind {
            WatchedKind::Deleted => Loss::Deleted,
            _ => Loss::session(state == SessionState::Expired),
        };
        self.then(keep, None, Duration::ZERO, false);
        Report {
            lost: (machine.is_lost() && !was_lost).then_some(cause),
            unwatchable: false,
        }
    }

    /// The read sent last was carried: its answer is fed to `machine`
    /// ([`Exchange::held`], [`Contender::held_watch_set`]), and the watch it
    /// left is kept if the machine waits on it. `ended`: the session's end
    /// the carrier's error names (expired, closed, authentication failed),
    /// if it names one; `state`: the session's state as the carrier knows
    /// it now.
    pub fn answered<E>(
        &mut self,
        machine: &mut Contender,
        carried: Carried<W, E>,
        ended: Option<SessionState>,
        state: SessionState,
    ) -> Report {
        let Carried {
            exchange,
            kept,
            blamed,
        } = carried;
        let answer = exchange.held();
        let was_lost = machine.is_lost();
        let keep = machine.held_watch_set(answer.clone());
        let cause = match answer {
            Answer::Ok(_) => Loss::MadeAgain,
            Answer::NoNode => Loss::Deleted,
            _ => Loss::session(ended == Some(SessionState::Expired) || state == SessionState::Expired),
        };
        let unwatchable = blamed.is_some()
            && !matches!(
                answer,
                Answer::Ok(_) | Answer::NoNode | Answer::Retry | Answer::SessionEnded
            );
        self.pause = match keep {
            Keep::Watch => Backoff::HELD_WATCH.next(self.pause),
            Keep::Wait | Keep::Stop => Duration::ZERO,
        };
        let watch = kept.into_iter().next().map(|kept| kept.watch);
        self.then(keep, watch, self.pause, keep == Keep::Watch);
        Report {
            lost: (machine.is_lost() && !was_lost).then_some(cause),
            unwatchable,
        }
    }

    /// The next step after the machine said `keep`, with the watch the
    /// news left (dropped unless waited on).
    fn then(&mut self, keep: Keep, watch: Option<W>, after: Duration, again: bool) {
        self.next = Some(match (keep, watch) {
            (Keep::Stop, _) => {
                self.stopped = true;
                Next::Stop
            }
            (Keep::Wait, Some(watch)) => Next::Wait(watch),
            // No watch to wait on: set one.
            (Keep::Wait, None) | (Keep::Watch, _) => Next::Send { after, again },
        });
    }
}

#[cfg(test)]
mod tests;
