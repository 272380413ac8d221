//! The guards of a held lock: [`Guard`], of either mode, and [`ReadGuard`]
//! and [`WriteGuard`], each a [`Guard`] of its mode.

use std::sync::Arc;

use super::held::Held;
use super::transaction::Transaction;
use crate::error::Error;
use crate::lease::HoldState;
use crate::node_name::Mode;
use crate::zk;

/// A held lock of either mode, from [`SharedLock::acquire`](crate::SharedLock::acquire) and friends.
///
/// The same methods as [`ReadGuard`] and [`WriteGuard`]; dropping it
/// releases the lock in the background. A `ReadGuard` or `WriteGuard`
/// converts into one ([`Guard::from`]).
#[must_use = "dropping the guard releases the lock"]
pub struct Guard {
    mode: Mode,
    held: Node,
}

/// The node a guard holds: its own, or a re-entrant owner's
/// ([`ReentrantLock`](crate::ReentrantLock)), shared with the owner's other
/// guards and released when the last of them goes.
pub(super) enum Node {
    Own(Held),
    Shared(Arc<Held>),
}

impl std::ops::Deref for Node {
    type Target = Held;

    fn deref(&self) -> &Held {
        match self {
            Node::Own(held) => held,
            Node::Shared(held) => held,
        }
    }
}

impl Node {
    /// Releases the node, if this is its last guard (a shared node's other
    /// guards keep it: `Ok(())` at once).
    async fn release(self) -> Result<(), Error> {
        match self {
            Node::Own(held) => held.release().await,
            // Exactly one of the owner's guards gets the node, even when
            // the last two are released at once.
            Node::Shared(held) => match Arc::into_inner(held) {
                Some(held) => held.release().await,
                None => Ok(()),
            },
        }
    }

    /// Downgrades the node (see [`Held::downgrade`]): a re-entrant owner's
    /// refuses, its node being its other guards' too.
    async fn downgrade(self) -> Result<Held, Error> {
        match self {
            Node::Own(held) => held.downgrade().await,
            Node::Shared(held) => Err(Error::DowngradeReentrant {
                node: held.node().to_owned(),
            }),
        }
    }
}

impl Guard {
    pub(super) fn new(mode: Mode, held: Held) -> Guard {
        Guard {
            mode,
            held: Node::Own(held),
        }
    }

    /// A guard in `mode` on a re-entrant owner's node.
    pub(super) fn shared(mode: Mode, held: Arc<Held>) -> Guard {
        Guard {
            mode,
            held: Node::Shared(held),
        }
    }

    /// Full path of this guard's contender node.
    pub fn node(&self) -> &str {
        self.held.node()
    }

    /// The lock directory of this guard: the path of the lock it holds
    /// ([`SharedLock::path`](crate::SharedLock::path)), its node's parent.
    pub fn lock_path(&self) -> &str {
        self.held.lock_path()
    }

    /// The fencing token: the czxid of the contender node (see [`WriteGuard::fencing_token`]).
    pub fn fencing_token(&self) -> i64 {
        self.held.fencing_token
    }

    /// Read or write.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Held, suspended or lost (see [`WriteGuard::state`]).
    pub fn state(&self) -> HoldState {
        self.held.state()
    }

    /// The lease deadline (see [`WriteGuard::lease_deadline`]).
    pub fn lease_deadline(&self) -> std::time::Instant {
        self.held.lease_deadline()
    }

    /// False once the lock is known lost (see [`WriteGuard::is_held`]).
    pub fn is_held(&self) -> bool {
        self.held.is_held()
    }

    /// Completes when the lock is lost (see [`WriteGuard::lost`]).
    pub async fn lost(&self) {
        self.held.until(|s| s == HoldState::Lost).await;
    }

    /// Completes when the lock is no longer held: suspended or lost (see
    /// [`WriteGuard::suspended`]).
    pub async fn suspended(&self) -> HoldState {
        self.held.until(|s| s != HoldState::Held).await
    }

    /// Completes when the lock is no longer suspended: held again or lost
    /// (see [`WriteGuard::resumed`]).
    pub async fn resumed(&self) -> HoldState {
        self.held.until(|s| s != HoldState::Suspended).await
    }

    /// A revocation request was seen (see
    /// [`WriteGuard::is_revocation_requested`]).
    pub fn is_revocation_requested(&self) -> bool {
        self.held.is_revocation_requested()
    }

    /// Completes when a revocation request arrives (true) or the lock is
    /// lost first (false); see [`WriteGuard::revocation_requested`].
    pub async fn revocation_requested(&self) -> bool {
        self.held.revocation_requested().await
    }

    /// Downgrades a write lock to a read lock (see
    /// [`WriteGuard::downgrade`]); a read lock is returned as it is.
    ///
    /// # Errors
    ///
    /// As [`WriteGuard::downgrade`].
    pub async fn downgrade(self) -> Result<Guard, Error> {
        match self.mode {
            Mode::Read => Ok(self),
            Mode::Write => self
                .held
                .downgrade()
                .await
                .map(|held| Guard::new(Mode::Read, held)),
        }
    }

    /// Releases the lock and reports the outcome (see [`WriteGuard::release`]).
    ///
    /// # Errors
    ///
    /// As [`WriteGuard::release`].
    pub async fn release(self) -> Result<(), Error> {
        self.held.release().await
    }

    /// ZooKeeper operations that commit only while this lock is held (see
    /// [`WriteGuard::transaction`]).
    pub fn transaction(&self) -> Transaction<'_> {
        Transaction::new(vec![self])
    }

    /// The server said this guard's node is gone (see [`Held::node_gone`]).
    pub(super) fn node_gone(&self) {
        self.held.node_gone();
    }

    /// The lock's client: the session of the guard's node.
    pub(crate) fn client(&self) -> &zk::Client {
        self.held.client()
    }

    /// The ACL of the lock's contender nodes.
    pub(crate) fn acls(&self) -> &[zk::Acl] {
        self.held.acls()
    }

    /// Writes the guard as `name { node, fencing_token, state }`, the
    /// form of [`ReadGuard`] and [`WriteGuard`].
    fn fmt_fields(&self, name: &str, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(name)
            .field("node", &self.held.node())
            .field("fencing_token", &self.held.fencing_token)
            .field("state", &self.held.state())
            .finish()
    }
}

impl std::fmt::Debug for Guard {
    /// As the enum of a [`ReadGuard`] or [`WriteGuard`] it once was:
    /// `Read(ReadGuard { node, fencing_token, state })`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        struct Fields<'a>(&'a Guard);
        impl std::fmt::Debug for Fields<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self.0.mode {
                    Mode::Read => self.0.fmt_fields("ReadGuard", f),
                    Mode::Write => self.0.fmt_fields("WriteGuard", f),
                }
            }
        }
        let variant = match self.mode {
            Mode::Read => "Read",
            Mode::Write => "Write",
        };
        f.debug_tuple(variant).field(&Fields(self)).finish()
    }
}

/// Defines [`ReadGuard`] or [`WriteGuard`]: a [`Guard`] of one mode with
/// the same methods and docs as the other (`$kind` and `$mode_name` name
/// its mode in the docs), each passed on to the [`Guard`].
macro_rules! mode_guard {
    ($name:ident, $mode:expr, $kind:literal, $mode_name:literal) => {
        #[doc = concat!("A held ", $kind, " lock.")]
        ///
        /// The guard owns its node, not a thread or a task: it can move
        /// between tasks and threads. Dropping it releases the lock in the
        /// background (logged with `tracing` if that fails); call
        /// `release` to learn the outcome.
        ///
        /// For its whole life the guard keeps a watch on its node (the one
        /// the acquire set while waiting; a guard whose acquire left none,
        /// such as one granted at its first look, sets one with a `getData`
        /// once it has held for 100 ms,
        /// [`contender::FIRST_WATCH_AFTER`](zk_rwlock_core::contender::FIRST_WATCH_AFTER)):
        /// whoever deletes the node, the guard knows it without being
        /// asked or awaited, and its state says `Lost` from then on.
        #[must_use = "dropping the guard releases the lock"]
        pub struct $name(Guard);

        impl $name {
            #[doc = concat!("A guard of `held`, a node granted in ", $mode_name, " mode.")]
            pub(super) fn new(held: Held) -> $name {
                $name(Guard::new($mode, held))
            }

            #[doc = concat!("A ", $mode_name, " guard on a re-entrant owner's node `held`.")]
            pub(super) fn shared(held: Arc<Held>) -> $name {
                $name(Guard::shared($mode, held))
            }

            /// Full path of this guard's contender node.
            pub fn node(&self) -> &str {
                self.0.node()
            }

            /// The lock directory of this guard: the path of the lock it holds
            /// ([`SharedLock::path`](crate::SharedLock::path)), its node's parent.
            pub fn lock_path(&self) -> &str {
                self.0.lock_path()
            }

            /// The fencing token: the czxid of the contender node. Larger
            /// than the token of every writer granted before on this lock.
            /// Pass it to stores that can reject writes with an older token.
            pub fn fencing_token(&self) -> i64 {
                self.0.fencing_token()
            }

            /// The mode of this guard.
            pub fn mode(&self) -> Mode {
                self.0.mode()
            }

            /// Where the lock stands now: [`HoldState::Held`],
            /// [`HoldState::Suspended`] (connection lost, lease still
            /// running) or [`HoldState::Lost`] (final). See
            /// [`crate::lease`] for what each promises.
            ///
            /// True without any future pending: it is `Lost` once the
            /// session has ended, the lease deadline has passed, or the
            /// guard's kept watch has seen its node deleted (by anyone: an
            /// operator, another client), a notification's trip after the
            /// deletion. Costs no request.
            pub fn state(&self) -> HoldState {
                self.0.state()
            }

            /// The lease deadline: no one else can be granted a conflicting
            /// lock before this instant, whatever happens to the connection.
            /// It moves forward with every answer from the server, by one
            /// heartbeat of the session (shared by all its guards), and
            /// earlier if a reconnection is told a smaller session timeout
            /// than any before: read it again rather than keep a reading
            /// (see [`crate::lease`]). Past it,
            /// the guard is [`HoldState::Lost`] until released. Stop acting
            /// as the holder before it, with time to spare for what you do
            /// (see [`crate::lease`]).
            pub fn lease_deadline(&self) -> std::time::Instant {
                self.0.lease_deadline()
            }

            /// False once the lock is known lost ([`HoldState::Lost`]):
            /// the session ended, the node was deleted (seen by the
            /// guard's kept watch, no future needed), or the lease
            /// deadline passed. True while held or suspended: use
            /// [`Self::state`] to tell them apart.
            pub fn is_held(&self) -> bool {
                self.0.is_held()
            }

            /// Completes when the lock is lost ([`HoldState::Lost`]): the
            /// session expires or is closed, the node is deleted by someone
            /// else, or the lease deadline passes before the server answers
            /// again. Costs no request: it waits on what the guard's kept
            /// watch and the session tell.
            ///
            /// # Cancellation safety
            ///
            /// Safe to drop and call again.
            pub async fn lost(&self) {
                self.0.lost().await;
            }

            /// Completes when the lock is no longer [`HoldState::Held`]:
            /// the connection is lost ([`HoldState::Suspended`]) or the lock
            /// is ([`HoldState::Lost`]). Returns that state. Complete at
            /// once if it is already so.
            ///
            /// # Cancellation safety
            ///
            /// Safe to drop and call again.
            pub async fn suspended(&self) -> HoldState {
                self.0.suspended().await
            }

            /// Completes when the lock is no longer
            /// [`HoldState::Suspended`]: the connection is back within the
            /// lease ([`HoldState::Held`]) or the lock is lost. Returns that
            /// state. Completes at once if it is not suspended.
            ///
            /// # Cancellation safety
            ///
            /// Safe to drop and call again.
            pub async fn resumed(&self) -> HoldState {
                self.0.resumed().await
            }

            /// True once a revocation request was seen on this guard's node
            /// ([`SharedLock::revoke`](crate::SharedLock::revoke)): someone asks the holder to let go.
            /// Cooperative: the lock is still held until released; no one
            /// else is granted meanwhile. Never reset.
            ///
            /// Costs no request: the guard's kept watch on its node sees
            /// the request (a data change, read once more), with or without
            /// a future pending, and so does the acquire for a request made
            /// while it waited. To act on a request, await
            /// [`Self::revocation_requested`] (e.g. in a `select!` with the
            /// work) rather than polling this flag. The holder sees a
            /// request only if it may READ its own node.
            pub fn is_revocation_requested(&self) -> bool {
                self.0.is_revocation_requested()
            }

            /// Completes when a revocation request arrives on this guard's
            /// node (true), at once if one already did, or when the lock is
            /// lost first (false: no request can come any more). Costs no
            /// request of its own: the guard's kept watch sees requests
            /// (each data change of the node costs one `getData` to read it
            /// and watch again). A node the holder may not READ cannot be
            /// watched: a request on it is never seen, and this completes
            /// only when the lock is lost.
            ///
            /// # Cancellation safety
            ///
            /// Safe to drop and call again.
            pub async fn revocation_requested(&self) -> bool {
                self.0.revocation_requested().await
            }

            /// Releases the lock: deletes the contender node, retrying
            /// through connection loss until the deletion is confirmed or
            /// the session is over.
            ///
            /// A node someone else deleted was not released by this call:
            /// the lock was lost before it, and the release says so with
            /// [`Error::Lost`] (whether the guard's kept watch had seen the
            /// deletion, or the server answers the release's first delete
            /// with "no such node"). One case cannot be told apart: when a
            /// delete of this release was sent and its answer lost with the
            /// connection, a node found gone on the retry counts as
            /// released by that delete.
            ///
            /// For a writer that had to wait, the deletion is one transaction
            /// that also writes the node's name as the lock directory's data
            /// (the release record): the contender watching the node learns
            /// that a writer that held the lock left, and takes the lock
            /// without listing the directory again (see
            /// [`ordering`](crate::ordering)).
            ///
            /// # Errors
            ///
            /// [`Error::Lost`] if someone else deleted the node (see
            /// above); [`Error::SessionExpired`] or [`Error::SessionClosed`]
            /// if the session ended first (the node is gone with it, but
            /// the lock was lost before this release); [`Error::NoAuth`] or
            /// [`Error::ZooKeeper`] if the server refused the deletion.
            pub async fn release(self) -> Result<(), Error> {
                self.0.release().await
            }

            /// ZooKeeper operations that commit only while this lock is
            /// held: all of them, in one ZooKeeper `multi` behind a check
            /// that this guard's node still exists, or none (see
            /// [`Transaction`] for what a commit proves). It borrows the
            /// guard, so it cannot be committed after the release:
            ///
            /// ```compile_fail,E0505
            #[doc = concat!("async fn late(guard: zk_rwlock::", stringify!($name), ") -> Result<(), zk_rwlock::Error> {")]
            ///     let tx = guard.transaction().set_data("/config", b"v2", None);
            ///     guard.release().await?; // error: `guard` is borrowed by `tx`
            ///     tx.commit().await?;
            ///     Ok(())
            /// }
            /// ```
            ///
            /// ```no_run
            /// use zk_rwlock::CreateAcl;
            ///
            #[doc = concat!("async fn publish(guard: &zk_rwlock::", stringify!($name), ") -> Result<(), zk_rwlock::Error> {")]
            ///     guard
            ///         .transaction()
            ///         .create("/jobs/42", b"queued", CreateAcl::Open)
            ///         .set_data("/jobs", b"42", None)
            ///         .commit()
            ///         .await?; // Error::Lost if the lock was lost: nothing written
            ///     Ok(())
            /// }
            /// ```
            pub fn transaction(&self) -> Transaction<'_> {
                self.0.transaction()
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt_fields(stringify!($name), f)
            }
        }

        impl From<$name> for Guard {
            /// The guard as a [`Guard`] of its mode.
            fn from(guard: $name) -> Guard {
                guard.0
            }
        }
    };
}

mode_guard!(ReadGuard, Mode::Read, "read (shared)", "read");

mode_guard!(WriteGuard, Mode::Write, "write (exclusive)", "write");

impl WriteGuard {
    /// Downgrades the write lock to a read lock, atomically: no other
    /// writer can be granted at any instant between the write guard and
    /// the read guard's release, and readers queued behind this writer
    /// are let in by the downgrade itself, in the notification a release
    /// would give them.
    ///
    /// It makes a reader node (ephemeral, sequential, like a read
    /// acquire's) and lists the lock directory with it. If only readers
    /// stand between the writer node and the new reader node, one
    /// transaction deletes the writer node and checks that the reader
    /// node exists: from then on the reader node holds the read lock,
    /// writers queued behind it wait on it, and the readers that waited
    /// on the writer node are granted by its deletion. If a writer is
    /// queued between them, nobody could be let in anyway (that writer
    /// is next), and a writer directly behind a writer node may take the
    /// node's deletion for its grant: the reader node is withdrawn and
    /// the read guard keeps the writer node, which the lock then shows as
    /// a writer until the read guard is released. So it is too when the
    /// server refuses the transaction while the writer node stands (a
    /// quota, say, or a revocation request written to the writer node
    /// meanwhile, which the read guard then sees). Either way the returned
    /// guard holds the read lock, and [`ReadGuard::node`] says on which
    /// node. Its fencing token stays the writer's: the lock was held
    /// without a break since the writer's grant, and every writer granted
    /// after the read guard's release has a larger one (the new reader
    /// node's czxid may be larger than theirs). See "Downgrade" in the wire
    /// protocol (`docs/protocol.md`).
    ///
    /// Two round trips (the reader's create and listing, pipelined, then
    /// the transaction), plus the reader's withdrawal when the writer
    /// node is kept. Not counted in [`SharedLock::stats`](crate::SharedLock::stats).
    ///
    /// There is no upgrade: a reader that becomes a writer would have to
    /// wait for the other readers, and two readers upgrading at once
    /// would wait for each other forever; release the read lock and
    /// acquire the write lock instead.
    ///
    /// # Errors
    ///
    /// [`Error::DowngradeUnsupported`] in a peer's
    /// [layout](crate::LockBuilder::layout); [`Error::Lost`] if the write
    /// lock was lost (its node deleted by someone else) before the
    /// downgrade replaced it; [`Error::SessionExpired`] or
    /// [`Error::SessionClosed`] if the session ended. On an error the
    /// write lock is released (as if the guard was dropped), or already
    /// lost; when the downgrade is refused before it begins
    /// (`DowngradeUnsupported`, `DowngradePermit`), the release is
    /// confirmed by the time the error is returned.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future releases the write lock and withdraws the
    /// reader node, in the background.
    pub async fn downgrade(self) -> Result<ReadGuard, Error> {
        let Guard { mode: _, held } = self.0;
        held.downgrade().await.map(ReadGuard::new)
    }
}
