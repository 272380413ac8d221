//! A counting semaphore: [`Semaphore`], at most N holders of a
//! [`Permit`] at once, on a lock directory, carried by the same contender
//! machine as the lock ([`Contender::with_permits`](zk_rwlock_core::contender::Contender::with_permits)).

use std::num::NonZeroU32;
use std::time::Duration;

use super::guard::Guard;
use super::transaction::Transaction;
use super::{deadline, Patience};
use super::{unreachable_timeout, LockBuilder, QueueEntry, Revoked, SharedLock};
use crate::error::Error;
use crate::lease::HoldState;
use crate::node_name::Mode;
use crate::zk;

/// A counting semaphore on ZooKeeper: at most `permits` holders at once,
/// in the order they asked, herd-free.
///
/// Each contender creates an ephemeral sequential node
/// `<identity>@permits-<N>@<token>-W-<seq>` in the directory and holds a
/// permit while fewer than N contenders precede it; a waiter watches the N
/// nodes right before its own, so a release wakes at most N waiters
/// ([`zk_rwlock_core::semaphore`] has the rule and why it misses no
/// wake-up). A permit is held as a lock is: its lease, fencing token,
/// revocation requests and transactions are a guard's.
///
/// Every contender of one directory must ask for the same N: the count is
/// in each node's name, and an acquire that finds a contender before it
/// with another count withdraws and fails with [`Error::PermitsDisagree`]
/// (so holders never count with two Ns). Do not share the directory with
/// a read/write lock: the lock's contenders see permits as writers (safe
/// for the lock), but the semaphore counts a lock contender as one permit
/// taken.
///
/// ```no_run
/// # async fn run() -> Result<(), zk_rwlock::Error> {
/// use zk_rwlock::{connect_client, DEFAULT_CONNECT_TIMEOUT, DEFAULT_SESSION_TIMEOUT};
/// let client = connect_client("127.0.0.1:2181", DEFAULT_SESSION_TIMEOUT, DEFAULT_CONNECT_TIMEOUT).await?;
/// let pool = zk_rwlock::Semaphore::new(client, "/semaphores/licences", 4)?;
/// let permit = pool.acquire().await?; // one of 4
/// // ... work, checking permit.state() or permit.fencing_token() ...
/// permit.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Semaphore {
    lock: SharedLock,
    permits: NonZeroU32,
}

/// Configures a [`Semaphore`]: identity, ACLs, lag, limits (as
/// [`LockBuilder`], whose documentation each method follows).
#[must_use]
pub struct SemaphoreBuilder {
    lock: LockBuilder,
    permits: u32,
}

impl SemaphoreBuilder {
    /// See [`LockBuilder::identity`].
    pub fn identity(self, identity: &str) -> SemaphoreBuilder {
        self.with(|b| b.identity(identity))
    }

    /// See [`LockBuilder::acls`].
    pub fn acls(self, acls: &[zk::Acl]) -> SemaphoreBuilder {
        self.with(|b| b.acls(acls))
    }

    /// See [`LockBuilder::directory_acls`].
    pub fn directory_acls(self, acls: &[zk::Acl]) -> SemaphoreBuilder {
        self.with(|b| b.directory_acls(acls))
    }

    /// See [`LockBuilder::follower_lag`].
    pub fn follower_lag(self, lag: Duration) -> SemaphoreBuilder {
        self.with(|b| b.follower_lag(lag))
    }

    /// See [`LockBuilder::max_listing_size`].
    pub fn max_listing_size(self, limit: Option<usize>) -> SemaphoreBuilder {
        self.with(|b| b.max_listing_size(limit))
    }

    /// See [`LockBuilder::metrics_path_label`].
    pub fn metrics_path_label(self, on: bool) -> SemaphoreBuilder {
        self.with(|b| b.metrics_path_label(on))
    }

    fn with(self, set: impl FnOnce(LockBuilder) -> LockBuilder) -> SemaphoreBuilder {
        SemaphoreBuilder {
            lock: set(self.lock),
            permits: self.permits,
        }
    }

    /// Makes the semaphore. No I/O.
    ///
    /// # Errors
    ///
    /// [`Error::NoPermits`] if it was asked for 0 permits; otherwise as
    /// [`LockBuilder::build`].
    pub fn build(self) -> Result<Semaphore, Error> {
        let permits = NonZeroU32::new(self.permits).ok_or(Error::NoPermits)?;
        Ok(Semaphore {
            lock: self.lock.permits(permits).build()?,
            permits,
        })
    }
}

impl Semaphore {
    /// A semaphore of `permits` permits on the directory `path`, used
    /// through `client`, with the default identity and ACLs. No I/O.
    ///
    /// # Errors
    ///
    /// [`Error::NoPermits`] for 0 permits; [`Error::InvalidPath`].
    pub fn new(client: zk::Client, path: &str, permits: u32) -> Result<Semaphore, Error> {
        Semaphore::builder(client, path, permits).build()
    }

    /// A builder to set the identity, ACLs and limits.
    pub fn builder(client: zk::Client, path: &str, permits: u32) -> SemaphoreBuilder {
        SemaphoreBuilder {
            lock: SharedLock::builder(client, path),
            permits,
        }
    }

    /// Takes a permit, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// [`Error::PermitsDisagree`] if a contender before this one carries
    /// another permit count; otherwise as [`SharedLock::write`].
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future leaves no node behind (see [`SharedLock`]).
    pub async fn acquire(&self) -> Result<Permit, Error> {
        let held = self.lock.acquire_held(Mode::Write, Patience::Forever).await?;
        held.map(|held| Permit(Guard::new(Mode::Write, held)))
            .ok_or_else(unreachable_timeout)
    }

    /// Takes a permit if one is free without waiting; `Ok(None)` otherwise,
    /// with the contender node deleted again (see
    /// [`SharedLock::try_acquire`] for how long it waits for answers).
    ///
    /// # Errors
    ///
    /// As [`Semaphore::acquire`].
    pub async fn try_acquire(&self) -> Result<Option<Permit>, Error> {
        let held = self.lock.acquire_held(Mode::Write, Patience::None).await?;
        Ok(held.map(|held| Permit(Guard::new(Mode::Write, held))))
    }

    /// Takes a permit, waiting at most `timeout`; `Ok(None)` on timeout,
    /// with the contender node deleted. The first look always completes:
    /// a free permit is taken however short `timeout` is (see
    /// [`SharedLock::acquire_timeout`]).
    ///
    /// # Errors
    ///
    /// As [`Semaphore::acquire`].
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Permit>, Error> {
        let held = self.lock.acquire_held(Mode::Write, deadline(timeout)).await?;
        Ok(held.map(|held| Permit(Guard::new(Mode::Write, held))))
    }

    /// The contenders in queue order: the first N hold a permit, the rest
    /// wait (each shown waiting on its immediate predecessor; it watches
    /// the N right before it).
    ///
    /// # Errors
    ///
    /// As [`SharedLock::contenders`].
    pub async fn contenders(&self) -> Result<Vec<QueueEntry>, Error> {
        self.lock.contenders().await
    }

    /// Asks every current permit holder to let go (see
    /// [`SharedLock::revoke_holders`]).
    ///
    /// # Errors
    ///
    /// As [`SharedLock::revoke_holders`].
    pub async fn revoke_holders(&self) -> Result<Revoked, Error> {
        self.lock.revoke_holders().await
    }

    /// How many may hold at once.
    pub fn permits(&self) -> u32 {
        self.permits.get()
    }

    /// The semaphore's directory.
    pub fn path(&self) -> &str {
        self.lock.path()
    }

    /// The client session this semaphore uses.
    pub fn client(&self) -> &zk::Client {
        self.lock.client()
    }

    /// What the acquires did so far (see [`SharedLock::stats`]).
    pub fn stats(&self) -> crate::Stats {
        self.lock.stats()
    }
}

/// One of a [`Semaphore`]'s permits, held. Dropping it releases it in the
/// background; [`Permit::release`] reports the outcome. Everything a lock's
/// guard offers but the downgrade: lease, fencing token, state, revocation
/// requests, transactions (see [`WriteGuard`](crate::WriteGuard), whose
/// documentation each method follows).
#[must_use = "dropping the permit releases it"]
#[derive(Debug)]
pub struct Permit(Guard);

impl Permit {
    /// Full path of the permit's contender node.
    pub fn node(&self) -> &str {
        self.0.node()
    }

    /// The semaphore's directory.
    pub fn path(&self) -> &str {
        self.0.lock_path()
    }

    /// The fencing token: the czxid of the permit's node, unique and
    /// growing in queue order. Up to N hold at once, so a newer token does
    /// not mean an older holder lost its permit: a store must not reject a
    /// write for carrying a token older than the newest it saw (as a
    /// lock's fencing does). Use it to tell holders apart, and fence each
    /// holder's own writes.
    pub fn fencing_token(&self) -> i64 {
        self.0.fencing_token()
    }

    /// Held, suspended or lost (see [`WriteGuard::state`](crate::WriteGuard::state)).
    pub fn state(&self) -> HoldState {
        self.0.state()
    }

    /// The lease deadline: the permit is this holder's until then at least
    /// (see [`WriteGuard::lease_deadline`](crate::WriteGuard::lease_deadline)).
    pub fn lease_deadline(&self) -> std::time::Instant {
        self.0.lease_deadline()
    }

    /// False once the permit is known lost.
    pub fn is_held(&self) -> bool {
        self.0.is_held()
    }

    /// Completes when the permit is lost.
    pub async fn lost(&self) {
        self.0.lost().await;
    }

    /// Completes when the permit is no longer held: suspended or lost.
    pub async fn suspended(&self) -> HoldState {
        self.0.suspended().await
    }

    /// Completes when the permit is no longer suspended: held again or lost.
    pub async fn resumed(&self) -> HoldState {
        self.0.resumed().await
    }

    /// A revocation request was seen on the permit's node.
    pub fn is_revocation_requested(&self) -> bool {
        self.0.is_revocation_requested()
    }

    /// Completes when a revocation request arrives (true) or the permit is
    /// lost first (false).
    pub async fn revocation_requested(&self) -> bool {
        self.0.revocation_requested().await
    }

    /// Releases the permit (a plain deletion of its node) and reports the
    /// outcome.
    ///
    /// # Errors
    ///
    /// As [`WriteGuard::release`](crate::WriteGuard::release).
    pub async fn release(self) -> Result<(), Error> {
        self.0.release().await
    }

    /// ZooKeeper operations that commit only while this permit is held
    /// (see [`WriteGuard::transaction`](crate::WriteGuard::transaction)).
    pub fn transaction(&self) -> Transaction<'_> {
        self.0.transaction()
    }
}

impl From<Permit> for Guard {
    /// The permit as a write [`Guard`], for code that takes guards (its
    /// [`Guard::downgrade`] is refused: [`Error::DowngradePermit`]).
    fn from(permit: Permit) -> Guard {
        permit.0
    }
}
