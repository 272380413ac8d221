//! Leader election on a lock directory: [`Election`].
//!
//! The verbs of etcd's `concurrency.Election` on top of the write lock:
//! [`Election::campaign`] waits until this candidate leads (holds the write
//! lock) and returns its [`Leadership`]; [`Leadership::resign`] (or
//! dropping it) lets the next candidate lead; [`Election::leader`] says who
//! leads now; [`Election::observe`] follows every change of leader. The
//! term of a leadership is the write lock's fencing token (the czxid of its
//! node): larger than every earlier term, also across a re-created lock
//! directory. A leadership has what a write guard has: the lease deadline,
//! the [`HoldState`] and the futures that complete on its changes.
//!
//! # On the wire
//!
//! Candidates are plain writers of the lock's wire protocol
//! (`<identity>@<token>-W-<seq>` nodes, see `docs/protocol.md`): `zk-rwlock status`
//! and every other client see them as writers, and a [`SharedLock`] on the
//! same path contends with them (a reader there keeps every candidate
//! waiting; a writer there is a leader that announces nothing).
//!
//! The head writer of the queue holds the lock as soon as nothing precedes
//! it, but its own client learns that a notification's trip later, or,
//! when it is cut off from ZooKeeper, not before its session expires. So an
//! observer never names a node for being the head writer alone: a
//! candidate whose campaign was granted writes its **announcement**,
//! `leader:<identity>`, as its node's data (one `setData`, conditional on
//! the version it read), and observers and [`Election::leader`] name the
//! head writer only while its node carries the announcement of the
//! identity in its name (see [`rules`]). So no one is named leader before
//! its own campaign has been granted. The announcement is written only
//! after the candidate's guard has recorded any revocation request already
//! on the node ([`rules::announce_step`]): it never hides one from the
//! guard's kept watch, which reads the node's data on each change and
//! takes only [`REVOKE_PAYLOAD`](crate::REVOKE_PAYLOAD) as a request.
//!
//! # Revocation
//!
//! A revocation request ([`SharedLock::revoke`], `zk-rwlock revoke`) asks
//! the leader to step down; it ends nothing by itself. The leader decides
//! ([`Leadership::revocation_requested`]); until it resigns, or its session
//! ends, it holds the write lock, nobody else can lead, and its term
//! stands. So it stays named: the request, written over its announcement,
//! stays on its node for its guard to see, and observers and
//! [`Election::leader`] name it with [`Leader::revocation_requested`] set
//! ([`rules::naming`]: the node's data version tells a request written
//! over the announcement from one written before the candidate announced
//! itself, which names no one yet). Its term ends when it resigns.
//!
//! # Observers
//!
//! One task per [`Election`] follows the lock directory for all of its
//! [`observe`](Election::observe) receivers, with one watch at a time and
//! no herd:
//!
//! - it lists the directory and reads the **head** of the queue (whatever
//!   it is: a leader, a writer not yet announced, a reader of a
//!   [`SharedLock`] on the same path) with a `getData` watch. Only the
//!   head's deletion or a write to it can change who leads: a later node
//!   leads only once every node before it has left. When the watch fires
//!   (the announcement, a revocation, the head's deletion), it lists once
//!   more;
//! - while the directory holds no contender, it watches the directory's
//!   children (`getChildren` with a watch: the first candidate's create is
//!   the news), or, while the directory does not exist, the directory
//!   itself (`exists` with a watch);
//! - after every reconnection (the client goes back to `SyncConnected`) it
//!   lists again, whatever its watches said meanwhile;
//! - a look that fails for another reason than connection loss (the head
//!   cannot be read: its ACL) sends `None` (no leader known) and looks
//!   again after a pause;
//! - when the session ends (expired, closed) it sends `None` and stops: a
//!   new [`Election`] on a new session is needed. It also stops when its
//!   last receiver is dropped; the next `observe` starts another.
//!
//! A receiver sees every change of leader while changes are slower than a
//! notification and a listing; leaders that come and go faster may be
//! skipped (a [`tokio::sync::watch`] channel keeps the latest
//! value), but a term is never seen out of order (terms grow) nor before
//! its campaign was granted. Between two leaders it says `None` (no
//! leader is known: the old one's node is gone and the new one has not
//! announced itself yet).
//!
//! Observers create no node and write nothing. What they say comes from the
//! server their client talks to: on a follower that lags the ensemble's
//! leader they learn of changes late, never early (they may still name a
//! leader that has just resigned or lost its session). Acting as the leader
//! is safe by the leadership's lease and term, not by what observers say.
//! [`Election::leader`] syncs first.
//!
//! # Trust
//!
//! Whoever may write a candidate's node can forge or erase its
//! announcement, as they can request its revocation. A leadership keeps a
//! data watch on its node (a second one beside its guard's) and writes its
//! announcement again over anything else written there, except a
//! revocation request ([`rules::reannounces`]; conditional on the version
//! read, so a request written meanwhile is never overwritten): observers
//! say `None` from a stranger's write until the rewrite (a revocation
//! request names the leader still, asked to step down). It writes only on
//! the node of its grant (its czxid, made by its session): a node deleted
//! and made again under its name by someone else is not announced (that
//! leadership is lost), and a persistent node is never named. A forged
//! announcement on a head writer not yet granted names it early, and so
//! do two revocation requests (or a stranger's write and a request)
//! written to a candidate before it announced itself ([`rules::naming`]).
//! The lock directory's ACL is the election's trust boundary, as it is the
//! lock's (see [`LockBuilder::directory_acls`](crate::LockBuilder::directory_acls));
//! give candidate nodes an ACL such as [`zk::Acls::creator_all`] (with READ
//! for the observers) where that matters.
//!
//! # Not covered
//!
//! A Curator `LeaderLatch` or `LeaderSelector` on the same path does not
//! take part: its nodes (`_c_<uuid>-latch-<seq>`) are no lock contenders,
//! and Curator's recipes do not see these candidates either. Use one kind
//! of election per path.

mod announce;
mod look;
mod observer;
pub(crate) use zk_rwlock_core::election as rules;

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tracing::{debug, info, instrument, warn};

use crate::error::Error;
use crate::lease::HoldState;
use crate::lock::{child_path, with_retry, LockBuilder, SharedLock, WriteGuard};
use crate::zk;
use announce::{announce_failed, is_mine, keep_announced, Announcer};
use observer::observe;
use rules::AnnounceStep;

/// A leader election on one lock directory, through one client session.
///
/// Cheap to clone: clones share the lock, its session and the observer
/// task.
///
/// # Deadlocks
///
/// A task that leads and campaigns again on the same election waits for
/// itself, as a second write acquire would: resign first.
///
/// # Example
///
/// ```no_run
/// # async fn run(client: zk_rwlock::zk::Client) -> Result<(), zk_rwlock::Error> {
/// let election = zk_rwlock::Election::new(client, "/elections/billing", "web01")?;
/// let leadership = election.campaign().await?;
/// tokio::select! {
///     _ = serve_as_leader(leadership.term()) => {}
///     // Connection lost: stop before the lease deadline.
///     _ = leadership.suspended() => {}
/// }
/// leadership.resign().await?;
/// # Ok(()) }
/// # async fn serve_as_leader(_term: i64) {}
/// ```
#[derive(Clone)]
pub struct Election {
    lock: SharedLock,
    /// The observer task's sender while it runs (see [`Election::observe`]).
    observer: Arc<Mutex<Weak<watch::Sender<Option<Leader>>>>>,
}

impl std::fmt::Debug for Election {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Election")
            .field("path", &self.lock.path())
            .field("identity", &self.lock.identity())
            .field("session", &self.lock.client().session_id())
            .finish()
    }
}

/// Configures an [`Election`]: identity, ACLs, follower lag (as
/// [`LockBuilder`]; the layout is always the native one).
#[must_use]
pub struct ElectionBuilder {
    lock: LockBuilder,
}

impl ElectionBuilder {
    /// The candidate's identity, written into its node's name and its
    /// announcement (default: this machine's host name). Checked by
    /// [`build`](Self::build) as [`LockBuilder::identity`].
    pub fn identity(mut self, identity: &str) -> ElectionBuilder {
        self.lock = self.lock.identity(identity);
        self
    }

    /// The ACLs of the candidate nodes (see [`LockBuilder::acls`]). Observers
    /// need READ on them to see announcements.
    pub fn acls(mut self, acls: &[zk::Acl]) -> ElectionBuilder {
        self.lock = self.lock.acls(acls);
        self
    }

    /// The ACLs of the lock directory (see [`LockBuilder::directory_acls`]).
    pub fn directory_acls(mut self, acls: &[zk::Acl]) -> ElectionBuilder {
        self.lock = self.lock.directory_acls(acls);
        self
    }

    /// How much later than the ensemble's leader a follower may learn of a
    /// session (see [`LockBuilder::follower_lag`]): shortens lease deadlines.
    pub fn follower_lag(mut self, lag: Duration) -> ElectionBuilder {
        self.lock = self.lock.follower_lag(lag);
        self
    }

    /// Validates the configuration. Does no I/O.
    ///
    /// # Errors
    ///
    /// As [`LockBuilder::build`].
    pub fn build(self) -> Result<Election, Error> {
        Ok(Election {
            lock: self.lock.build()?,
            observer: Arc::default(),
        })
    }
}

/// Who leads, as [`Election::leader`] and [`Election::observe`] say: the
/// head writer of the queue whose node carries its announcement, or a
/// revocation request written over it (see [`rules::who_leads`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leader {
    /// The leader's identity (from its node's name).
    pub identity: String,
    /// Full path of the leader's node.
    pub node: String,
    /// The leader's term: its node's czxid, the write lock's fencing token.
    pub term: i64,
    /// The id of the leader's session (its node's `ephemeralOwner`).
    pub session: i64,
    /// Whether someone asked this leader to step down
    /// ([`SharedLock::revoke`] on its node): the request is on its node,
    /// written over its announcement. A request ends nothing: the leader
    /// leads, with the same term, until it resigns or its session ends.
    pub revocation_requested: bool,
}

impl Leader {
    /// The leader the core named ([`rules::who_leads`]) in the lock
    /// directory `dir`.
    fn named(dir: &str, leader: rules::Leader) -> Leader {
        Leader {
            identity: leader.identity,
            node: child_path(dir, &leader.node),
            term: leader.term,
            session: leader.session,
            revocation_requested: leader.revocation_requested,
        }
    }
}

impl Election {
    /// An election on the lock directory `path`, through `client`, for the
    /// candidate `identity`. No I/O.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::InvalidIdentity`], and the others of
    /// [`LockBuilder::build`].
    pub fn new(client: zk::Client, path: &str, identity: &str) -> Result<Election, Error> {
        Election::builder(client, path).identity(identity).build()
    }

    /// A builder to set the identity, ACLs and follower lag.
    pub fn builder(client: zk::Client, path: &str) -> ElectionBuilder {
        ElectionBuilder {
            lock: SharedLock::builder(client, path),
        }
    }

    /// The lock directory.
    pub fn path(&self) -> &str {
        self.lock.path()
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        self.lock.identity()
    }

    /// The lock underneath: candidates are its writers.
    pub fn lock(&self) -> &SharedLock {
        &self.lock
    }

    /// The client session this election uses.
    pub fn client(&self) -> &zk::Client {
        self.lock.client()
    }

    /// Waits until this candidate leads: acquires the write lock, then
    /// announces the leadership on its node (see the
    /// [module documentation](self)), and returns it.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::write`] ([`Error::SessionExpired`] or
    /// [`Error::SessionClosed`] if the session ends while waiting: a new
    /// election on a new session is needed); [`Error::Lost`] if the node is
    /// deleted before the announcement is written; [`Error::NoAuth`] if the
    /// node's ACL refuses READ or WRITE to its owner.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future leaves no node behind: a node not granted yet is
    /// withdrawn, a granted one released, in the background.
    #[instrument(skip_all, fields(election = %self.lock.path()))]
    pub async fn campaign(&self) -> Result<Leadership, Error> {
        let guard = self.lock.write().await?;
        self.announce(guard).await
    }

    /// As [`Election::campaign`], giving up after `timeout`: `Ok(None)`,
    /// with the node withdrawn. The announcement after the grant is not
    /// bounded by `timeout` (it is one request, retried through connection
    /// loss while the session lasts).
    ///
    /// # Errors
    ///
    /// As [`Election::campaign`].
    #[instrument(skip_all, fields(election = %self.lock.path()))]
    pub async fn campaign_timeout(&self, timeout: Duration) -> Result<Option<Leadership>, Error> {
        match self.lock.write_timeout(timeout).await? {
            Some(guard) => self.announce(guard).await.map(Some),
            None => Ok(None),
        }
    }

    /// Writes the announcement to the granted `guard`'s node.
    async fn announce(&self, guard: WriteGuard) -> Result<Leadership, Error> {
        let client = self.lock.client();
        let node = guard.node().to_owned();
        let mine = rules::announcement(self.lock.identity());
        loop {
            let read = with_retry(client, || client.get_data(&node)).await;
            let (data, stat) = match read {
                Ok(read) => read,
                Err(e) => return Err(announce_failed(guard, e, &node).await),
            };
            // Deleted and made again under its name by someone else: not
            // the node granted to this candidate, whose guard is lost.
            if !is_mine(&stat, guard.fencing_token(), client) {
                return Err(announce_failed(guard, zk::Error::NoNode, &node).await);
            }
            match rules::announce_step(&data, &mine, guard.is_revocation_requested()) {
                AnnounceStep::Done => break,
                AnnounceStep::AwaitRevocation => {
                    debug!(node = %node, "waiting for the guard to record a revocation request first");
                    if !guard.revocation_requested().await {
                        let _ = guard.release().await;
                        return Err(Error::Lost { node });
                    }
                }
                AnnounceStep::Write => {
                    let write =
                        with_retry(client, || client.set_data(&node, &mine, Some(stat.version))).await;
                    match write {
                        Ok(_) => break,
                        // Written by someone else meanwhile (or by this
                        // write, whose answer was lost): read again.
                        Err(zk::Error::BadVersion) => {}
                        Err(e) => return Err(announce_failed(guard, e, &node).await),
                    }
                }
            }
        }
        info!(node = %node, term = guard.fencing_token(), "leading");
        let keep = keep_announced(client.clone(), node, mine, guard.fencing_token());
        let announcer = crate::background::spawn_near(client.session_id().0, keep);
        Ok(Leadership {
            guard,
            identity: self.lock.identity().to_owned(),
            announcer: Announcer(announcer),
        })
    }

    /// Who leads now: a `sync` (the client's server may be a follower
    /// behind the ensemble), one listing of the directory, then one read of
    /// its head writer; `None` if no one leads, or the head writer has not
    /// announced itself yet (its campaign may not know of its grant). A
    /// leader asked to step down leads until it resigns: it is named, with
    /// [`Leader::revocation_requested`] set (see "Revocation" in the
    /// [module documentation](self)).
    ///
    /// # Errors
    ///
    /// [`Error::SessionExpired`], [`Error::SessionClosed`],
    /// [`Error::NoAuth`], [`Error::ZooKeeper`]; connection loss is retried
    /// while the session lasts.
    pub async fn leader(&self) -> Result<Option<Leader>, Error> {
        let client = self.lock.client();
        let dir = self.lock.path();
        // The server this client talks to may be a follower that lags the
        // ensemble's leader: `sync` first, so that the answer is at least
        // as new as every write completed before this call (a resignation,
        // an announcement).
        match with_retry(client, || client.sync(dir)).await {
            Ok(()) | Err(zk::Error::NoNode) => {}
            Err(e) => return Err(Error::from_zk(e, dir)),
        }
        look::look(client, dir, false, true)
            .await
            .map(|found| found.leader)
            .map_err(|(e, path)| Error::from_zk(e, &path))
    }

    /// Follows who leads: the receiver's value is the current leader
    /// (`None`: no leader known), updated on every change (see
    /// "Observers" in the [module documentation](self) for the watches),
    /// also when the leader is asked to step down (the same leader, with
    /// [`Leader::revocation_requested`] set: a request ends no term).
    /// All receivers of one election share one task, started by the first
    /// call and stopped when the last receiver is dropped, or when the
    /// session ends (the sender is then dropped, after a last `None`).
    ///
    /// The first value is `None` until the task's first listing is done:
    /// wait with [`watch::Receiver::changed`] or
    /// [`watch::Receiver::wait_for`].
    pub fn observe(&self) -> watch::Receiver<Option<Leader>> {
        let mut slot = self.observer.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sender) = slot.upgrade() {
            return sender.subscribe();
        }
        let (sender, receiver) = watch::channel(None);
        let sender = Arc::new(sender);
        let client = self.lock.client().clone();
        let work = observe(
            client.clone(),
            self.lock.path().to_owned(),
            sender.clone(),
            self.observer.clone(),
        );
        match crate::background::spawn_near(client.session_id().0, work) {
            Some(_task) => *slot = Arc::downgrade(&sender),
            None => warn!(
                election = %self.lock.path(),
                "no runtime to run the observer on: the receiver will not change"
            ),
        }
        receiver
    }
}

/// This candidate's leadership: the write lock it holds, announced on its
/// node. Has what a [`WriteGuard`] has (term = fencing token, lease,
/// state, the futures on its changes).
///
/// Owns its node, not a task: it can move between tasks and threads.
/// Dropping it resigns in the background (as dropping a guard releases);
/// [`Leadership::resign`] reports the outcome.
#[must_use = "dropping the leadership resigns it"]
pub struct Leadership {
    guard: WriteGuard,
    identity: String,
    /// Dropped after the guard: the release has begun by then.
    announcer: Announcer,
}

impl std::fmt::Debug for Leadership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leadership")
            .field("identity", &self.identity)
            .field("node", &self.guard.node())
            .field("term", &self.guard.fencing_token())
            .field("state", &self.guard.state())
            .finish()
    }
}

impl Leadership {
    /// The term: the node's czxid, the write lock's fencing token. Larger
    /// than every earlier leader's term of this election; pass it to stores
    /// that can reject writes of older terms.
    pub fn term(&self) -> i64 {
        self.guard.fencing_token()
    }

    /// Full path of the leader's node.
    pub fn node(&self) -> &str {
        self.guard.node()
    }

    /// The leader's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// ZooKeeper operations that commit only while this candidate leads:
    /// all of them, in one ZooKeeper `multi` behind a check that the
    /// leader's node still exists, or none (see
    /// [`WriteGuard::transaction`]). The announcement on the node does
    /// not stop it (the check is of any version).
    pub fn transaction(&self) -> crate::Transaction<'_> {
        self.guard.transaction()
    }

    /// The lease deadline: no one else can lead before this instant (see
    /// [`WriteGuard::lease_deadline`]). Stop acting as the leader before it.
    pub fn lease_deadline(&self) -> Instant {
        self.guard.lease_deadline()
    }

    /// Held, suspended (connection lost, lease running) or lost (see
    /// [`WriteGuard::state`]). Costs no request.
    pub fn state(&self) -> HoldState {
        self.guard.state()
    }

    /// False once the leadership is known lost (see [`WriteGuard::is_held`]).
    pub fn is_held(&self) -> bool {
        self.guard.is_held()
    }

    /// Completes when the leadership is no longer [`HoldState::Held`]
    /// (suspended or lost), with that state (see [`WriteGuard::suspended`]).
    ///
    /// # Cancellation safety
    ///
    /// Safe to drop and call again.
    pub async fn suspended(&self) -> HoldState {
        self.guard.suspended().await
    }

    /// Completes when the leadership is no longer suspended: held again or
    /// lost (see [`WriteGuard::resumed`]).
    ///
    /// # Cancellation safety
    ///
    /// Safe to drop and call again.
    pub async fn resumed(&self) -> HoldState {
        self.guard.resumed().await
    }

    /// Completes when the leadership is lost (see [`WriteGuard::lost`]).
    ///
    /// # Cancellation safety
    ///
    /// Safe to drop and call again.
    pub async fn lost(&self) {
        self.guard.lost().await;
    }

    /// True once someone asked this leader to step down
    /// ([`SharedLock::revoke`] on its node; see
    /// [`WriteGuard::is_revocation_requested`]). Observers keep naming it
    /// (with [`Leader::revocation_requested`]) until it resigns.
    pub fn is_revocation_requested(&self) -> bool {
        self.guard.is_revocation_requested()
    }

    /// Completes when someone asks this leader to step down (true), or the
    /// leadership is lost first (false); see
    /// [`WriteGuard::revocation_requested`].
    pub async fn revocation_requested(&self) -> bool {
        self.guard.revocation_requested().await
    }

    /// The write guard underneath.
    pub fn guard(&self) -> &WriteGuard {
        &self.guard
    }

    /// The write guard underneath, to hold the lock as a plain writer.
    /// Observers keep naming this leader: its node carries the
    /// announcement, and the task that writes it again after someone
    /// else's write goes on until the node is deleted or the session ends.
    pub fn into_guard(self) -> WriteGuard {
        let Leadership { guard, announcer, .. } = self;
        announcer.detach();
        guard
    }

    /// Resigns: deletes the node (see [`WriteGuard::release`]), so that the
    /// next candidate leads.
    ///
    /// # Errors
    ///
    /// As [`WriteGuard::release`]: [`Error::Lost`] if the leadership was
    /// lost before (the node was deleted by someone else),
    /// [`Error::SessionExpired`] or [`Error::SessionClosed`] if the session
    /// ended first.
    pub async fn resign(self) -> Result<(), Error> {
        let Leadership { guard, announcer, .. } = self;
        let resigned = guard.release().await;
        drop(announcer);
        resigned
    }
}
