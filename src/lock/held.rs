//! A contender node's life: [`Pending`] until it is granted (dropping it
//! withdraws the node), then [`Held`] (the state behind a guard: lease,
//! kept watch, release). Both own the contender's machine
//! ([`crate::contender`]) and run its withdrawal or release with
//! [`Carrier::finish`].

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::{debug, info_span, warn, Instrument};

use super::carrier::Carrier;
use super::wire::{session_state, WatchFuture};
use super::{keeper, Inner};
use super::{Patience, GIVE_UP_SLACK};
use crate::acquire::Counts;
use crate::background;
use crate::contender::child_path;
use crate::contender::{Action, Contender, DowngradeRefused, Downgrading, Failure, Outcome, Replacement};
use crate::error::Error;
use crate::lease::{self, HoldState, Link, LossCause};
use crate::node_name::Mode;
use crate::stats::{Holder, LostReason};
use crate::zk;

/// A contender that has not been handed to a guard yet: its machine and
/// its carrier. Dropping it withdraws the node in the background
/// (cancellation safety).
pub(super) struct Pending {
    inner: Arc<Inner>,
    pub(super) carrier: Carrier,
    pub(super) machine: Contender,
    armed: bool,
}

impl Pending {
    pub(super) fn new(inner: Arc<Inner>, carrier: Carrier, machine: Contender) -> Pending {
        Pending {
            inner,
            carrier,
            machine,
            armed: true,
        }
    }

    /// Hands the granted node to a guard, with the watch on it set while
    /// waiting (the guard's keeper takes it over).
    pub(super) fn grant(mut self, own_watch: Option<WatchFuture>, holder: Holder) -> Held {
        self.armed = false;
        let machine = self.machine.clone();
        Held::new(self.inner.clone(), machine, own_watch, holder)
    }

    /// Withdraws: starts the withdrawal now, waits for it at most
    /// [`GIVE_UP_SLACK`], and lets it go on in the background after that.
    /// Reports a deletion the server refused.
    pub(super) async fn give_up(&mut self) -> Result<Option<Held>, Error> {
        if let Some(withdrawal) = self.start_withdrawal() {
            if let Ok(Ok(Err(e))) = tokio::time::timeout(GIVE_UP_SLACK, withdrawal).await {
                return Err(e);
            }
        }
        Ok(None)
    }

    /// Starts the withdrawal the machine asks for, if there is anything to
    /// delete. A first deletion leaves at once, so any later request of
    /// this session (a new acquire) is answered after it.
    fn start_withdrawal(&mut self) -> Option<tokio::task::JoinHandle<Result<(), Error>>> {
        if !std::mem::take(&mut self.armed) {
            return None;
        }
        let mut machine = self.machine.clone();
        let action = machine.withdraw();
        if let Action::Done(_) = action {
            return None;
        }
        let dir = self.inner.path.clone();
        let withdrawal = self.carrier.clone().begin(machine, action);
        self.inner.tasks.spawn(async move {
            match withdrawal.await {
                // The session is over: its ephemeral nodes are gone with it.
                (Outcome::Deleted | Outcome::Lost | Outcome::SessionEnded, _) => Ok(()),
                (Outcome::Failed, mut carrier) => {
                    let e = carrier.take_error().unwrap_or_else(|| {
                        Error::ZooKeeper(zk::Error::UnexpectedError("the withdrawal failed".to_owned()))
                    });
                    warn!(lock = %dir, error = %e, "could not delete the node of a withdrawn acquire");
                    Err(e)
                }
            }
        })
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.start_withdrawal();
    }
}

/// The state common to read and write guards.
/// A failed acquire: the error it reports, and the machine's failure
/// behind it (`None` for an error of the driver's own).
pub(super) struct Failed {
    pub(super) error: Error,
    pub(super) failure: Option<Failure>,
}

impl From<Error> for Failed {
    fn from(error: Error) -> Failed {
        Failed { error, failure: None }
    }
}

pub(super) struct Held {
    inner: Arc<Inner>,
    pub(super) fencing_token: i64,
    /// The node's path and the contender's machine, shared with the keeper
    /// and the futures waiting on the guard's state.
    flags: Arc<keeper::Flags>,
    /// The task that keeps a watch on the node for the guard's life (see
    /// [`keeper`]); aborted when the guard is released or dropped.
    keeper: Option<keeper::Task>,
    /// When the lock was granted: the lease deadline if the session's lease
    /// is unknown (it is known once the server answered a request, so this
    /// is only a fallback that makes such a guard lost at once).
    granted_at: std::time::Instant,
    /// [`suspended_since_boot`] when the lock was granted.
    suspended_at_grant: Duration,
    released: bool,
}

impl Held {
    /// The guard of the node `machine` holds, with its keeper started:
    /// `own_watch` is the watch on the node set while waiting, if any (the
    /// keeper takes it over).
    fn new(inner: Arc<Inner>, machine: Contender, own_watch: Option<WatchFuture>, holder: Holder) -> Held {
        let granted_at = std::time::Instant::now();
        let suspended_at_grant = suspended_since_boot();
        let node = child_path(&inner.path, machine.node().unwrap_or_default());
        let fencing_token = machine.fencing_token().unwrap_or_default();
        let flags = Arc::new(keeper::Flags::new(node, machine, holder));
        let keeper = keeper::start(&inner.client, &flags, own_watch);
        Held {
            inner,
            fencing_token,
            flags,
            keeper,
            granted_at,
            suspended_at_grant,
            released: false,
        }
    }

    /// Full path of the guard's node.
    pub(super) fn node(&self) -> &str {
        self.flags.node()
    }

    /// The lock directory's path: the node's parent.
    pub(super) fn lock_path(&self) -> &str {
        &self.inner.path
    }

    /// The lock's client: the session the node belongs to.
    pub(super) fn client(&self) -> &zk::Client {
        &self.inner.client
    }

    /// The ACL of the lock's contender nodes.
    pub(super) fn acls(&self) -> &[zk::Acl] {
        &self.inner.acls
    }

    pub(super) fn lease_deadline(&self) -> std::time::Instant {
        // No floor from earlier readings: a reconnection may negotiate a
        // shorter timeout, and the server renews the session with it.
        let deadline =
            session_lease_deadline(&self.inner.client, self.inner.follower_lag).unwrap_or(self.granted_at);
        // The monotonic clock stands still while the machine is suspended,
        // the server's does not: a guard that lived through a suspend loses
        // that much of its lease, for good (which answer came before the
        // suspend and which after is not known).
        let suspended = suspended_since_boot().saturating_sub(self.suspended_at_grant);
        lease::after_suspend(deadline, suspended, self.granted_at)
    }

    pub(super) fn state(&self) -> HoldState {
        let link = Link::of(session_state(self.inner.client.state()));
        let flagged = self.flags.is_lost();
        let deadline = self.lease_deadline();
        let (state, cause) = lease::hold_state(flagged, link, std::time::Instant::now(), deadline);
        match cause {
            Some(LossCause::SessionEnded) => self.mark_lost(
                "the session ended",
                LostReason::of_session(self.inner.client.state()),
            ),
            Some(LossCause::LeaseRanOut) => self.mark_lost(
                "the lease deadline passed without an answer from the server",
                LostReason::LeaseRanOut,
            ),
            None => {}
        }
        state
    }

    pub(super) fn is_held(&self) -> bool {
        self.state() != HoldState::Lost
    }

    fn mark_lost(&self, why: &str, reason: LostReason) {
        self.flags.mark_lost(why, reason);
    }

    /// The server said the node is gone (a transaction's check of it): the
    /// machine takes it as the node's deletion ([`Contender::held_event`]),
    /// as the kept watch's notification, which may come later, would say.
    pub(super) fn node_gone(&self) {
        self.flags.update(
            "its node was gone at a transaction's check",
            LostReason::NodeDeleted,
            |machine| machine.held_event(crate::acquire::NodeEvent::Deleted),
        );
    }

    pub(super) fn is_revocation_requested(&self) -> bool {
        self.flags.is_revoked()
    }

    /// Completes when the lock is lost or a revocation request was seen;
    /// true for the request (also when the lock was lost after it).
    pub(super) async fn revocation_requested(&self) -> bool {
        self.wait(|state, revoked| revoked || state == HoldState::Lost)
            .await;
        self.is_revocation_requested()
    }

    /// Completes when `done` holds for the guard's state, and returns that
    /// state. Meanwhile it follows the session's state, the lease deadline,
    /// and what the guard's keeper learns of the node (its deletion).
    pub(super) async fn until(&self, done: impl Fn(HoldState) -> bool) -> HoldState {
        self.wait(|state, _| done(state)).await
    }

    /// As [`Held::until`], with `done` also told whether a revocation was
    /// requested. Costs no request: the keeper's watch on the node (see
    /// [`keeper`]) sets the flags this looks at.
    async fn wait(&self, done: impl Fn(HoldState, bool) -> bool) -> HoldState {
        let mut states = self.inner.client.state_watcher();
        loop {
            let flagged = self.flags.notify.notified();
            let state = self.state();
            if done(state, self.is_revocation_requested()) {
                return state;
            }
            let lease_end = Instant::from_std(self.lease_deadline()).min(Instant::now() + RECHECK);
            tokio::select! {
                _ = states.changed() => {}
                () = tokio::time::sleep_until(lease_end) => {}
                () = flagged => {}
            }
        }
    }

    /// Begins the release (of [`Held::release`] or the drop): the work that
    /// runs the machine's release (deletes the node, with the release record
    /// if the grant said so) and then ends the keeper, to be run in the
    /// background; [`Error::Lost`] instead if the keeper saw the node
    /// deleted by someone else before (nothing of the guard's own to delete).
    fn begin_release(
        &mut self,
    ) -> Result<impl std::future::Future<Output = Result<(), Error>> + Send + 'static, Error> {
        self.released = true;
        let released = self.flags.take_holder().map(Holder::release);
        let (mut machine, action) = self.flags.begin_release();
        let keeper = self.keeper.take();
        let node = self.node().to_owned();
        if action == Action::Done(Outcome::Lost) {
            return Err(Error::Lost { node });
        }
        // Made now, not kept by the guard: a held guard stays small.
        let mut carrier = Carrier::new(&self.inner, "");
        Ok(async move {
            let outcome = carrier.finish(&mut machine, action).await;
            // After the deletion, which fired the keeper's watch: ending
            // the keeper then costs no request to remove the watch.
            drop(keeper);
            match outcome {
                Outcome::Deleted => Ok(()),
                Outcome::Lost => {
                    if let Some(released) = released {
                        released.lost(LostReason::NodeDeleted);
                    }
                    Err(Error::Lost { node })
                }
                Outcome::SessionEnded | Outcome::Failed => Err(carrier.take_error().unwrap_or_else(|| {
                    Error::ZooKeeper(zk::Error::UnexpectedError("the release failed".to_owned()))
                })),
            }
        })
    }

    /// Downgrades a held write lock to a read lock (see
    /// [`WriteGuard::downgrade`](crate::WriteGuard::downgrade)): makes a
    /// reader node, and deletes this writer node in one transaction with a
    /// check that the reader exists if only readers stand between the two;
    /// otherwise withdraws the reader and keeps this node. Returns the
    /// state of the read lock: a new one on the reader node, or this one.
    /// On an error the write lock is released: a downgrade refused before
    /// it began (a peer's layout, a permit) has released it when it
    /// returns; one that failed later, in the background (this is
    /// dropped).
    ///
    /// The machine begins it, the reader's contender runs its acquire (a
    /// reader that takes the writer's place, or is withdrawn again; its
    /// requests retried until answered or the session is over, with no
    /// deadline of their own), and both machines are told how it ended.
    pub(super) async fn downgrade(self) -> Result<Held, Error> {
        let (lock, downgrading) = match self.begin_downgrade() {
            Ok(began) => began,
            // Nothing of the downgrade was done: the release is the whole
            // answer, and it is confirmed before the refusal is.
            Err(e @ (Error::DowngradeUnsupported { .. } | Error::DowngradePermit { .. })) => {
                // The refusal is the answer; a release that fails is said
                // as a dropped guard's would be.
                let node = self.node().to_owned();
                if let Err(failed) = self.release().await {
                    warn!(node = %node, error = %failed, "release after a refused downgrade failed");
                }
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        let span = info_span!("downgrade", lock = %lock.inner.path, writer = %downgrading.writer);
        let mut counts = Counts::default();
        let reader = lock
            .acquire_inner(
                Mode::Read,
                Patience::Forever,
                &mut counts,
                Some(&downgrading),
                None,
            )
            .instrument(span)
            .await;
        self.end_downgrade(reader)
    }

    /// The downgrade's first half: the machine begins it, or says why not.
    fn begin_downgrade(&self) -> Result<(super::SharedLock, Downgrading), Error> {
        let began = self
            .flags
            .update("", LostReason::NodeDeleted, Contender::begin_replace);
        match began {
            Ok(downgrading) => Ok((
                super::SharedLock {
                    inner: self.inner.clone(),
                },
                downgrading,
            )),
            Err(DowngradeRefused::Layout(layout)) => Err(Error::DowngradeUnsupported { layout }),
            Err(DowngradeRefused::Permit) => Err(Error::DowngradePermit {
                node: self.node().to_owned(),
            }),
            // Not held: lost (or the lock is someone else's by now).
            Err(DowngradeRefused::NotHeld) => Err(Error::Lost {
                node: self.node().to_owned(),
            }),
        }
    }

    /// The downgrade's second half: what came of the reader's acquire
    /// (`reader`), told to both machines.
    fn end_downgrade(self, reader: Result<Option<Held>, Failed>) -> Result<Held, Error> {
        let node = self.node().to_owned();
        match reader {
            Ok(Some(mut reader)) => {
                self.flags.end_replace(Replacement::Applied);
                // The writer's token and revocation request, as the
                // machine says ([`Contender::take_over`]).
                reader.flags.take_over(&self.flags);
                reader.fencing_token = reader.flags.fencing_token();
                debug!(writer = %node, reader = %reader.node(), "downgraded: the reader node took the writer's place");
                let mut writer = self;
                // Nothing left to release: the transaction deleted the node.
                writer.released = true;
                // The write hold ends now, not when the keeper (which may
                // not have set its watch yet) lets go of the flags.
                drop(writer.flags.take_holder());
                Ok(reader)
            }
            Ok(None) => {
                self.flags.end_replace(Replacement::NotApplied);
                // A read lock from now on, in the lock's holders.
                self.flags.set_holder_mode(Mode::Read);
                debug!(node = %node, "downgraded in place: a writer waits between this node and a new reader's place, so the writer node stays until the read lock is released");
                Ok(self)
            }
            Err(failed) => {
                let session_over = failed.error.is_session_over();
                self.flags
                    .end_replace(Replacement::after_failure(failed.failure, session_over));
                Err(failed.error)
            }
        }
    }

    /// Releases: dropping this future (a timeout around it, say, or its
    /// runtime shutting down) leaves the release running on the library's
    /// background runtime until it is confirmed or the session is over, as
    /// a dropped guard's would.
    ///
    /// A node the keeper saw deleted before is not deleted again: the
    /// release reports [`Error::Lost`] at once; so does a release whose
    /// first answer says the node is gone (someone else deleted it), unless
    /// an earlier attempt's answer was lost ([`lease::released_by_us`]).
    pub(super) async fn release(mut self) -> Result<(), Error> {
        let span = info_span!("release", node = %self.node());
        let work = match self.begin_release() {
            Ok(work) => work,
            Err(e) => {
                let _entered = span.enter();
                debug!("the node was deleted by someone else before the release: the lock was lost");
                return Err(e);
            }
        };
        let work = async move {
            let result = work.await;
            debug!(?result, "released");
            result
        }
        .instrument(span);
        // Awaited here, on the caller's runtime, where the session most
        // likely runs too: no hop to another thread. Handed to the
        // background runtime if this future is dropped first.
        background::Handover::new(work, self.inner.tasks.clone()).await
    }
}

/// The longest a future waiting on a guard's state sleeps before it looks
/// again: its timers run on the monotonic clock, which stands still while
/// the machine is suspended, so after a resume it must not wait out a
/// deadline that has long passed.
const RECHECK: Duration = Duration::from_secs(1);

/// How long this machine has been suspended since it booted:
/// `CLOCK_BOOTTIME` less `CLOCK_MONOTONIC` (Linux). Zero where unknown.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn suspended_since_boot() -> Duration {
    use rustix::time::{clock_gettime, ClockId, Timespec};
    let nanos = |t: Timespec| i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec);
    let monotonic = nanos(clock_gettime(ClockId::Monotonic));
    let boot = nanos(clock_gettime(ClockId::Boottime));
    Duration::from_nanos(u64::try_from((boot - monotonic).max(0)).unwrap_or(u64::MAX))
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn suspended_since_boot() -> Duration {
    Duration::ZERO
}

/// The lease deadline of `client`'s session, once the server has answered.
fn session_lease_deadline(client: &zk::Client, follower_lag: Duration) -> Option<std::time::Instant> {
    client
        .session_lease()
        .map(|l| lease::deadline(l.answered_sent, l.timeout, follower_lag))
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let node = self.node().to_owned();
        let Ok(work) = self.begin_release() else {
            debug!(node = %node, "dropped a guard whose node someone else deleted: nothing to release");
            return;
        };
        // On the library's background runtime: the caller's runtime may be
        // shutting down, or there may be none (a plain thread).
        self.inner.tasks.spawn(async move {
            match work.await {
                Ok(()) => debug!(node = %node, "released on drop"),
                Err(e) => warn!(node = %node, error = %e, "release on drop failed"),
            }
        });
    }
}
