//! The watch a guard keeps on its own node for its whole life.
//!
//! A guard's state must be true when nothing awaits it: whoever deletes a
//! held node (an operator, another identity inside the directory's trust
//! boundary), the guard says `Lost` from then on, and its release says the
//! lock was lost. So each guard gets a small task, its keeper (at the grant,
//! or once its first read is due: below), which keeps one data watch
//! (`getData`) on the node. It carries the
//! core's [`Keeping`], which says what to do next (wait on the watch, read
//! and watch the node after a pause, stop) and what is reported, and feeds
//! what it learns to the contender's machine ([`Contender::held_watch_set`],
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
//! its node, or whose watch was set on a connection older than the grant's,
//! which the keeper drops) gets it only once the hold lasts
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
//! The keeper runs where the session runs now ([`background::spawn_beside`]):
//! for a session the library connected on the caller's runtime, a task of
//! that runtime, so that its events cost no hop to another thread; if that
//! runtime ends first, its task goes, the session moves to the background
//! thread, and the keeper goes on there with the watch it awaits (no
//! request; it reads its node anew only if a read was under way). One that begins with a read
//! after the bound waits for it in the
//! session's hub, if the session has one ([`crate::hub`]) and becomes a task only then, so that a
//! guard released sooner costs the session's thread nothing. It ends when the node is gone, the session ends, or the server refuses
//! the watch; the guard aborts it when it is released or dropped, after the
//! release's deletion has fired the watch, so that removing the watch costs
//! no request. It holds a clone of the lock's client and the flags (with
//! the node's path) it shares with the guard, not the lock itself: the
//! lock's last handle must not go with a task of the background runtime,
//! where its drop would wait for that runtime's own work.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::Notify;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::carrier;
use super::wire::{event_of, session_ended, session_state, WatchFuture};
use crate::background::{self, Home};
use crate::contender::{Action, Contender};
use crate::hub;
use crate::stats::{Holder, LostReason};
use crate::wire::{Exchange, Keeper, Keeping, Loss, Report};
use crate::zk;

/// What a guard shares with its keeper and with the futures that wait on
/// its state: its node's path, and the contender's machine, which decides
/// what the keeper's answers and events mean.
pub(super) struct Flags {
    /// Full path of the guard's node.
    node: Arc<str>,
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
            node: node.into(),
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
        self.learnt(
            (after.0 && !before.0).then_some((why, reason)),
            after.1 && !before.1,
        );
        result
    }

    /// Feeds the keeper's news to the machine through `feed` (the core's
    /// [`Keeping`]); logs the loss it reports and a revocation request
    /// newly seen, and wakes the guard's waiters.
    fn learn(&self, feed: impl FnOnce(&mut Contender) -> Report) -> Report {
        let mut machine = self.machine();
        let before = machine.is_revoked();
        let report = feed(&mut machine);
        let revoked = machine.is_revoked() && !before;
        drop(machine);
        self.learnt(report.lost.map(lost_as), revoked);
        report
    }

    /// Logs what became known: the lock `lost` (why, and the reason
    /// counted), a revocation request; wakes the guard's waiters.
    fn learnt(&self, lost: Option<(&str, LostReason)>, revoked: bool) {
        if let Some((why, reason)) = lost {
            warn!(node = %self.node, why, "lock lost");
            if let Some(holder) = self.take_holder() {
                holder.lost(reason);
            }
        }
        if revoked {
            info!(node = %self.node, "revocation requested");
        }
        self.notify.notify_waiters();
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

/// A guard's keeper: running, or deferred to the session's hub until its
/// first read is due. Dropping it ends the keeper (or lets it go unstarted).
pub(super) enum Task {
    Running { _task: background::Beside },
    Deferred { _until: hub::Deferred },
}

/// Starts the keeper of the guard whose node and flags are `flags`, on
/// `client`'s session; `first` is a watch on the node that the acquire set,
/// taken over instead of setting another. A keeper whose first step is a
/// read after a pause ([`Keeping::starts_after`]) waits for it in the
/// session's hub, if the session has one, not as a task of its own (see
/// [`crate::hub`]): a short hold then costs its session's thread no
/// wake-up. `None`, logged, if
/// there is no runtime to run it on.
pub(super) fn start(client: &zk::Client, flags: &Arc<Flags>, first: Option<WatchFuture>) -> Option<Task> {
    let keeping = Keeping::new(flags.node.clone(), &flags.machine(), first);
    let late = keeping
        .starts_after()
        .and_then(|after| Some((after, hub::of(client)?)));
    if let Some((after, hub)) = late {
        // The hub's clock, not the caller's runtime's (which may be paused).
        let granted = Instant::from_std(std::time::Instant::now());
        let work = keep(
            Carry::new(client.clone(), flags.clone(), keeping, None),
            Some(granted),
        );
        return Some(Task::Deferred {
            _until: hub.defer(granted + after, work),
        });
    }
    // Beside the session: if the runtime it runs on ends first, the session
    // moves to the background thread, and so does the keeper ([`Carry`]).
    let carried = (client.clone(), flags.clone());
    let beside = background::spawn_beside(client.session_id().0, move |home| {
        let (client, flags) = carried;
        keep(Carry::new(client, flags, keeping, home), None)
    });
    match beside {
        Some(task) => Some(Task::Running { _task: task }),
        None => {
            warn!(
                node = %flags.node,
                "no runtime to watch the held node on: only the session's end and the lease will be noticed"
            );
            None
        }
    }
}

/// The keeper's loop (see the [module documentation](self)): does what
/// the core's [`Keeping`] says, and hands it back what happened. What
/// stays resident for the guard's life is this future waiting on its
/// watch: each step is made small before anything is awaited (the
/// exchange boxed), and the pause and the request that sets the watch are
/// a boxed future of their own ([`send`]).
#[allow(clippy::manual_async_fn)] // On purpose: see the block's comment.
fn keep(
    mut carry: Carry,
    mut granted: Option<Instant>,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    // A block, not an `async fn`: the arguments are used in place, not
    // copied into the future a second time (it stays resident).
    async move {
        loop {
            if let Some(watch) = carry.watch.as_mut() {
                let event = watch.await;
                carry.watch = None;
                let (kind, state) = event_of(&event);
                if let Some(keeping) = carry.keeping.as_mut() {
                    carry.flags.learn(|machine| keeping.fired(machine, kind, state));
                }
                continue;
            }
            let Some(keeping) = carry.keeping.as_mut() else {
                return carry.finished();
            };
            let (exchange, at, again) = match keeping.poll() {
                Some(Keeper::Stop) => return carry.finished(),
                // Only with a step out whose news was never handed back:
                // nothing would tell the guard any more.
                None => {
                    warn!(node = %carry.flags.node, "the held node's keeper has nothing to do: only the session's end and the lease will be noticed");
                    return carry.finished();
                }
                Some(Keeper::Wait(watch)) => {
                    carry.watch = Some(watch);
                    continue;
                }
                // The first read's pause counts from the grant when the hub
                // started the keeper late (`granted`); every other from now.
                // Boxed before anything is awaited: the resident future
                // keeps no room for an exchange.
                Some(Keeper::Send {
                    exchange,
                    after,
                    again,
                }) => (
                    Box::new(exchange),
                    granted.take().unwrap_or_else(Instant::now) + after,
                    again,
                ),
            };
            Box::pin(send(&carry.client, &carry.flags, keeping, *exchange, at, again)).await;
        }
    }
}

/// What a keeper carries: its session, its guard's flags, the core's
/// [`Keeping`], and the watch it awaits. A keeper beside its session on
/// the caller's runtime also carries its [`Home`]: if that runtime drops it
/// unfinished (it ends, and the session moves to the background thread),
/// its drop hands the keeper on to the background thread, with the watch
/// it awaits; what goes on from there is the core's ([`Keeping::hand_on`]).
struct Carry {
    client: zk::Client,
    flags: Arc<Flags>,
    /// `None` once handed on.
    keeping: Option<Keeping<WatchFuture>>,
    watch: Option<WatchFuture>,
    home: Option<Home>,
}

impl Carry {
    fn new(
        client: zk::Client,
        flags: Arc<Flags>,
        keeping: Keeping<WatchFuture>,
        home: Option<Home>,
    ) -> Carry {
        Carry {
            client,
            flags,
            keeping: Some(keeping),
            watch: None,
            home,
        }
    }

    /// The keeper ended: nothing to hand on.
    fn finished(&mut self) {
        self.home = None;
    }
}

impl Drop for Carry {
    fn drop(&mut self) {
        let (Some(home), Some(mut keeping)) = (self.home.take(), self.keeping.take()) else {
            return;
        };
        keeping.hand_on(self.watch.take());
        let carry = Carry::new(self.client.clone(), self.flags.clone(), keeping, None);
        if home.go_on(keep(carry, None)) {
            debug!(node = %self.flags.node, "the keeper goes on on the background thread: its task was dropped unfinished (its runtime ended)");
        }
    }
}

/// Sends the keeper's read of the node at `at` (`again`: after a lost
/// one), and hands [`Keeping`] what came of it; warns if the node cannot
/// be watched.
async fn send(
    client: &zk::Client,
    flags: &Flags,
    keeping: &mut Keeping<WatchFuture>,
    exchange: Exchange,
    at: Instant,
    again: bool,
) {
    if again {
        debug!(node = %flags.node, at = ?at, "watching the held node again after a pause");
    }
    if at > Instant::now() {
        tokio::time::sleep_until(at).await;
    }
    let carried = carrier::keep(client, exchange).await;
    let error = carried.blamed.as_ref().map(carrier::client_error);
    let ended = error.as_ref().and_then(session_ended);
    let state = session_state(client.state());
    let report = flags.learn(|machine| keeping.answered(machine, carried, ended, state));
    if let (true, Some(error)) = (report.unwatchable, error) {
        let error = crate::error::Error::from_zk(error, &flags.node);
        warn!(node = %flags.node, %error, "cannot watch the held node: only the session's end and the lease will be noticed");
    }
}

/// What the library logs and counts for a loss the keeper reports, one to
/// one.
fn lost_as(loss: Loss) -> (&'static str, LostReason) {
    match loss {
        Loss::Deleted => ("its node was deleted", LostReason::NodeDeleted),
        Loss::MadeAgain => (
            "its node was deleted and made again by someone else",
            LostReason::NodeDeleted,
        ),
        Loss::SessionExpired => ("the session ended", LostReason::SessionExpired),
        Loss::SessionClosed => ("the session ended", LostReason::SessionClosed),
    }
}
