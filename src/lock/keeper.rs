//! The watch a guard keeps on its own node for its whole life.
//!
//! A guard's state must be true when nothing awaits it: whoever deletes a
//! held node (an operator, another identity inside the directory's trust
//! boundary), the guard says `Lost` from then on, and its release says the
//! lock was lost. So each guard gets a small task at the grant, its keeper,
//! which keeps one data watch (`getData`) on the node and feeds what it
//! learns to the contender's machine ([`Contender::held_watch_set`],
//! [`Contender::held_event`]), which decides what it means (see
//! [`crate::contender`]'s rules):
//!
//! - the node's deletion loses the lock, unless its own release has begun
//!   (that deletion is the release's); so does a node of the same name
//!   found with another czxid when the watch is set again (a data change
//!   used up the watch, then the node was deleted and made again);
//! - a data change reads the node and watches it again: this is how a
//!   revocation request ([`super::REVOKE_PAYLOAD`]) is seen, with no
//!   second watch or loop of its own;
//! - the session's end loses the lock;
//! - a watch the server refuses (the node's ACL does not let its owner
//!   READ) is logged, and the guard learns only of the session's end and
//!   its lease.
//!
//! When the acquire waited, it set that watch already, and the keeper takes
//! it over. A guard whose acquire left none (granted at its first look, the
//! lock free; or a wait whose own watch had fired, or that could not read
//! its node) gets it only once the hold lasts
//! [`crate::contender::FIRST_WATCH_AFTER`] (100 ms) and its `getData` is
//! answered, so that a short hold costs no request beyond the lock's own.
//! Such a guard learns of a deletion or a revocation request within the
//! later of that bound (plus a round trip) and the server's notification;
//! of the session's end and its lease at once. A revocation request written
//! and overwritten by someone else within that window is not seen.
//!
//! A watch set once lasts through connection loss: on each reconnection
//! the client sets its watches again, and the server delivers at once a
//! deletion that happened meanwhile. Only a request that fails for a broken
//! connection is sent again, after a pause that doubles from 10 ms up to
//! 1 s while requests keep failing (a request sent while the client is
//! disconnected waits for the reconnection): a client whose session task
//! is gone, whose requests fail at once, does not make it spin.
//!
//! The keeper runs where the session runs (see [`background::spawn_near`]).
//! It ends when the node is gone, the session ends, or the server refuses
//! the watch; the guard aborts it when it is released or dropped, after the
//! release's deletion has fired the watch, so that removing the watch costs
//! no request. It holds a clone of the lock's client and the flags (with
//! the node's path) it shares with the guard, not the lock itself: the
//! lock's last handle must not go with a task of the background runtime,
//! where its drop would wait for that runtime's own work.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tracing::{debug, info, warn};

use super::carrier;
use super::wire::{node_event, WatchFuture};
use crate::background::{self, AbortOnDrop};
use crate::backoff::Backoff;
use crate::contender::{Action, Answer, Contender, Keep};
use crate::stats::{Holder, LostReason};
use crate::zk;

/// What a guard shares with its keeper and with the futures that wait on
/// its state: its node's path, and the contender's machine, which decides
/// what the keeper's answers and events mean.
pub(super) struct Flags {
    /// Full path of the guard's node.
    node: Box<str>,
    machine: Mutex<Contender>,
    /// The guard's place in the lock's holders (stats and metrics), until
    /// it is known lost or its release begins.
    holder: Mutex<Option<Holder>>,
    /// Woken on each change of what the machine knows.
    pub(super) notify: Notify,
}

impl Flags {
    /// The flags of a guard granted `node`; a revocation request seen
    /// while it waited is logged now.
    pub(super) fn new(node: String, machine: Contender, holder: Holder) -> Flags {
        if machine.is_revoked() {
            info!(node = %node, "revocation requested");
        }
        Flags {
            node: node.into_boxed_str(),
            machine: Mutex::new(machine),
            holder: Mutex::new(Some(holder)),
            notify: Notify::new(),
        }
    }

    pub(super) fn node(&self) -> &str {
        &self.node
    }

    fn machine(&self) -> MutexGuard<'_, Contender> {
        self.machine.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn is_lost(&self) -> bool {
        self.machine().is_lost()
    }

    pub(super) fn is_revoked(&self) -> bool {
        self.machine().is_revoked()
    }

    /// Marks the guard lost (logged once), and wakes its waiters.
    pub(super) fn mark_lost(&self, why: &str, reason: LostReason) {
        self.update(why, reason, |machine| machine.held_lost());
    }

    /// The guard's mode changes (a downgrade): its place in the lock's
    /// holders (stats and metrics) moves with it.
    pub(super) fn set_holder_mode(&self, mode: crate::node_name::Mode) {
        if let Some(holder) = self
            .holder
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            holder.set_mode(mode);
        }
    }

    /// The guard's place in the lock's holders, taken out (by its release).
    pub(super) fn take_holder(&self) -> Option<Holder> {
        self.holder.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// Feeds the machine through `feed`; logs what became known (lost, for
    /// `reason`; revocation requested) and wakes the guard's waiters.
    pub(super) fn update<T>(
        &self,
        why: &str,
        reason: LostReason,
        feed: impl FnOnce(&mut Contender) -> T,
    ) -> T {
        let mut machine = self.machine();
        let before = (machine.is_lost(), machine.is_revoked());
        let result = feed(&mut machine);
        let after = (machine.is_lost(), machine.is_revoked());
        drop(machine);
        if after.0 && !before.0 {
            warn!(node = %self.node, why, "lock lost");
            if let Some(holder) = self.take_holder() {
                holder.lost(reason);
            }
        }
        if after.1 && !before.1 {
            info!(node = %self.node, "revocation requested");
        }
        self.notify.notify_waiters();
        result
    }

    /// The guard's downgrade ended as `how` ([`Contender::end_replace`]): the
    /// node deleted by someone else meanwhile (or first) loses the lock.
    pub(super) fn end_replace(&self, how: crate::contender::Replacement) {
        self.update("its node was deleted", LostReason::NodeDeleted, |m| {
            m.end_replace(how)
        });
    }

    /// A downgrade's reader (these flags) took the place of `writer`'s
    /// node: it takes over the writer's fencing token and revocation
    /// request ([`Contender::take_over`]).
    pub(super) fn take_over(&self, writer: &Flags) {
        let writer = writer.machine().clone();
        self.update("", LostReason::NodeDeleted, |machine| machine.take_over(&writer));
    }

    /// The held lock's fencing token ([`Contender::fencing_token`]).
    pub(super) fn fencing_token(&self) -> i64 {
        self.machine().fencing_token().unwrap_or_default()
    }

    /// The guard's release begins: a deletion seen from now on is its own.
    /// Returns the machine (a copy, to run the release with) and its first
    /// action: [`crate::contender::Outcome::Lost`] if the node was seen
    /// deleted by someone else before. A deletion seen at the same moment
    /// may still be missed here; the release's first answer ("no such
    /// node") tells then.
    pub(super) fn begin_release(&self) -> (Contender, Action) {
        let mut machine = self.machine();
        let action = machine.release();
        (machine.clone(), action)
    }
}

/// Starts the keeper of the guard whose node and flags are `flags`, on
/// `client`'s session; `first` is a watch on the node that the acquire set,
/// taken over instead of setting another. `None`, logged, if there is no
/// runtime to run it on.
pub(super) fn start(
    client: &zk::Client,
    flags: &Arc<Flags>,
    first: Option<WatchFuture>,
) -> Option<AbortOnDrop<()>> {
    let work = keep(client.clone(), flags.clone(), first);
    match background::spawn_near(client.session_id().0, work) {
        Some(task) => Some(AbortOnDrop(task)),
        None => {
            warn!(
                node = %flags.node,
                "no runtime to watch the held node on: only the session's end and the lease will be noticed"
            );
            None
        }
    }
}

/// The keeper's loop (see the [module documentation](self)): performs what
/// the machine says ([`Keep`]). What stays resident for the guard's life is
/// this future waiting on its watch; the request that sets the watch is
/// boxed apart.
async fn keep(client: zk::Client, flags: Arc<Flags>, mut watch: Option<WatchFuture>) {
    // The machine says when the first watch is set: at once if the
    // acquire handed one over, else after a bound (a short hold then
    // costs no request).
    let first = flags.machine().first_watch_after();
    let mut next = match (first, &watch) {
        (None, Some(_)) => Keep::Wait,
        (Some(after), _) => {
            watch = None;
            tokio::time::sleep(after).await;
            Keep::Watch
        }
        (None, None) => Keep::Watch,
    };
    let mut pause = Duration::ZERO;
    loop {
        next = match (next, watch.take()) {
            (Keep::Stop, _) => return,
            (Keep::Wait, Some(changed)) => {
                let event = changed.await;
                let (why, reason) = if event.event_type == zk::EventType::NodeDeleted {
                    ("its node was deleted", LostReason::NodeDeleted)
                } else {
                    ("the session ended", LostReason::of_session(event.session_state))
                };
                flags.update(why, reason, |machine| machine.held_event(node_event(&event)))
            }
            (Keep::Wait, None) | (Keep::Watch, _) => {
                let (keep, changed) = Box::pin(set_watch(&client, &flags)).await;
                if keep == Keep::Watch {
                    pause = Backoff::HELD_WATCH.next(pause);
                    debug!(node = %flags.node, ?pause, "watching the held node again after a pause");
                    tokio::time::sleep(pause).await;
                } else {
                    pause = Duration::ZERO;
                }
                watch = changed;
                keep
            }
        };
    }
}

/// Reads the node and sets a data watch on it ([`crate::wire::keep`]);
/// the machine says what the answer means.
async fn set_watch(client: &zk::Client, flags: &Flags) -> (Keep, Option<WatchFuture>) {
    let (exchange, changed, error) = carrier::keep(client, &flags.node).await;
    let answer = exchange.held();
    let why = match &answer {
        Answer::Ok(_) => "its node was deleted and made again by someone else",
        _ => "its node was deleted, or the session ended",
    };
    let reason = match (&answer, &error) {
        (Answer::Ok(_), _) | (_, Some(zk::Error::NoNode)) => LostReason::NodeDeleted,
        (_, Some(zk::Error::SessionExpired)) => LostReason::SessionExpired,
        _ => LostReason::of_session(client.state()),
    };
    if !matches!(
        answer,
        Answer::Ok(_) | Answer::NoNode | Answer::Retry | Answer::SessionEnded
    ) {
        if let Some(error) = error {
            let error = crate::error::Error::from_zk(error, &flags.node);
            warn!(node = %flags.node, %error, "cannot watch the held node: only the session's end and the lease will be noticed");
        }
    }
    let keep = flags.update(why, reason, |machine| machine.held_watch_set(answer));
    (keep, changed.filter(|_| keep == Keep::Wait))
}
