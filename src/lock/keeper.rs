//! The watch a guard keeps on its own node for its whole life.
//!
//! A guard's state must be true when nothing awaits it: whoever deletes a
//! held node (an operator, another identity inside the directory's trust
//! boundary), the guard says `Lost` from then on, and its release says the
//! lock was lost. So each guard gets a small task at the grant, its keeper,
//! which keeps one data watch (`getData`) on the node:
//!
//! - the node's deletion marks the guard lost, unless its own release has
//!   begun (that deletion is the release's); so does a node of the same
//!   name found with another czxid when the watch is set again (a data
//!   change used up the watch, then the node was deleted and made again);
//! - a data change reads the node and watches it again: this is how a
//!   revocation request ([`super::REVOKE_PAYLOAD`]) is seen, with no
//!   second watch or loop of its own;
//! - the session's end marks the guard lost;
//! - a watch the server refuses (the node's ACL does not let its owner
//!   READ) is logged, and the guard learns only of the session's end and
//!   its lease.
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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tracing::{debug, info, warn};

use super::driver::WatchFuture;
use super::revoke::is_revocation;
use crate::background;
use crate::background::AbortOnDrop;
use crate::error::{is_retryable, Error};
use crate::zk;

/// The shortest and the longest pause before a request that failed for a
/// broken connection is sent again.
const RETRY_PAUSES: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(1));

/// What a guard shares with its keeper and with the futures that wait on
/// its state: its node's path, and what is known of it.
pub(super) struct Flags {
    /// Full path of the guard's node.
    node: Box<str>,
    /// The node's czxid (the guard's fencing token): a node of the same
    /// name with another is someone else's, made after the guard's was
    /// deleted.
    czxid: i64,
    /// Known lost (final).
    lost: AtomicBool,
    /// The node was deleted, and not by this guard's release.
    deleted: AtomicBool,
    /// A revocation request was seen on the node (never cleared).
    revoked: AtomicBool,
    /// The guard's release (or drop) has begun: a deletion from now on is
    /// its own.
    releasing: AtomicBool,
    /// Woken on each change of the flags above.
    pub(super) notify: Notify,
}

impl Flags {
    pub(super) fn new(node: String, czxid: i64) -> Flags {
        Flags {
            node: node.into_boxed_str(),
            czxid,
            lost: AtomicBool::new(false),
            deleted: AtomicBool::new(false),
            revoked: AtomicBool::new(false),
            releasing: AtomicBool::new(false),
            notify: Notify::new(),
        }
    }

    pub(super) fn node(&self) -> &str {
        &self.node
    }

    pub(super) fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    pub(super) fn is_revoked(&self) -> bool {
        self.revoked.load(Ordering::Acquire)
    }

    /// Marks the guard lost (logged once), and wakes its waiters.
    pub(super) fn mark_lost(&self, why: &str) {
        if !self.lost.swap(true, Ordering::AcqRel) {
            warn!(node = %self.node, why, "lock lost");
        }
        self.notify.notify_waiters();
    }

    /// Notes a revocation request (logged once), and wakes the guard's
    /// waiters.
    pub(super) fn mark_revoked(&self) {
        if !self.revoked.swap(true, Ordering::AcqRel) {
            info!(node = %self.node, "revocation requested");
        }
        self.notify.notify_waiters();
    }

    /// The node is gone: the lock is lost, unless the guard's release has
    /// begun (then the deletion is the release's).
    fn mark_deleted(&self) {
        if self.releasing.load(Ordering::SeqCst) {
            return;
        }
        self.deleted.store(true, Ordering::SeqCst);
        self.mark_lost("its node was deleted");
    }

    /// The guard's release begins: a deletion seen from now on is its own.
    /// Returns whether the node was seen deleted before (by someone else).
    /// A deletion seen at the same moment may still be missed here; the
    /// release's first answer ("no such node") tells then.
    pub(super) fn begin_release(&self) -> bool {
        self.releasing.store(true, Ordering::SeqCst);
        self.deleted.load(Ordering::SeqCst)
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

/// The keeper's loop (see the [module documentation](self)). What stays
/// resident for the guard's life is this future waiting on its watch; the
/// request that sets the watch, and its retries, are boxed apart.
async fn keep(client: zk::Client, flags: Arc<Flags>, mut watch: Option<WatchFuture>) {
    loop {
        let changed = match watch.take() {
            Some(changed) => changed,
            None => match Box::pin(set_watch(&client, &flags)).await {
                Some(changed) => changed,
                None => return,
            },
        };
        let event = changed.await;
        if event.event_type == zk::EventType::NodeDeleted {
            return flags.mark_deleted();
        }
        if Error::from_session_state(event.session_state).is_some() {
            return flags.mark_lost("the session ended");
        }
        // Data written to the node (a revocation request?): read it and
        // watch again.
    }
}

/// Sets a data watch on the node, reading its data (a revocation request
/// is noted), and sends the request again after a broken connection.
/// `None` when there is nothing left to watch: the node is gone or the
/// session over (the guard is marked lost), or the server refuses (logged).
async fn set_watch(client: &zk::Client, flags: &Flags) -> Option<WatchFuture> {
    let mut pause = Duration::ZERO;
    loop {
        match client.get_and_watch_data(&flags.node).await {
            // A data change used up the watch, then the node was deleted
            // and made again under its name (by someone else: the name
            // carries this acquire's token): the guard's node is gone.
            Ok((_, stat, _)) if stat.czxid != flags.czxid => {
                flags.mark_deleted();
                return None;
            }
            Ok((data, _, watcher)) => {
                if is_revocation(&data) {
                    flags.mark_revoked();
                }
                return Some(Box::pin(watcher.changed()));
            }
            Err(zk::Error::NoNode) => {
                flags.mark_deleted();
                return None;
            }
            Err(e) if is_retryable(&e) => {
                pause = (pause * 2).clamp(RETRY_PAUSES.0, RETRY_PAUSES.1);
                debug!(node = %flags.node, error = %e, ?pause, "watching the held node again after a pause");
                tokio::time::sleep(pause).await;
            }
            Err(e) if Error::from_zk(e.clone(), &flags.node).is_session_over() => {
                flags.mark_lost("the session ended");
                return None;
            }
            Err(e) => {
                warn!(node = %flags.node, error = %e, "cannot watch the held node: only the session's end and the lease will be noticed");
                return None;
            }
        }
    }
}
