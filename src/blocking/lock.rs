//! The blocking lock and its guard.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{connect_runtime, runs_tasks, runtime, OwnedRuntime};
use crate::error::Error;
use crate::lock::validate_path;
use crate::{zk, HoldState, Mode, QueueEntry, DEFAULT_SESSION_TIMEOUT};

/// A read/write lock for synchronous code. Cheap to clone; clones share the session.
///
/// See the [module documentation](super) for the threads it can be used from.
///
/// # Deadlocks
///
/// As with [`crate::SharedLock`]: asking for write while holding read on the
/// same lock waits for itself. Use [`SharedLock::write_timeout`] as an
/// escape, or a re-entrant owner ([`SharedLock::reentrant`]), which grants a
/// nested acquire at once and refuses an upgrade.
#[derive(Clone, Debug)]
pub struct SharedLock {
    lock: crate::SharedLock,
    rt: Arc<OwnedRuntime>,
}

impl SharedLock {
    /// Connects a new session to `servers` and makes a lock on `path`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] before connecting; [`Error::Unreachable`] if no
    /// server answers within [`DEFAULT_CONNECT_TIMEOUT`](crate::DEFAULT_CONNECT_TIMEOUT);
    /// [`Error::ChrootMissing`] if the chroot of `servers` does not exist;
    /// [`Error::InsideRuntime`].
    pub fn connect(servers: &str, path: &str) -> Result<SharedLock, Error> {
        SharedLock::connect_with(servers, path, None, DEFAULT_SESSION_TIMEOUT)
    }

    /// A lock on `path` used through an existing `client`, with the default
    /// identity and ACLs (for others, [`crate::LockBuilder`] and
    /// [`SharedLock::from_async`]). A client of [`connect`](super::connect) or
    /// [`crate::connect_client_with`] runs on the library's background
    /// thread; one you connected yourself with a [`zk::Connector`] runs on
    /// the runtime it was made on, which must keep running while this lock
    /// is used.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::InsideRuntime`], [`Error::Runtime`].
    pub fn with_client(client: zk::Client, path: &str) -> Result<SharedLock, Error> {
        SharedLock::from_async(crate::SharedLock::new(client, path)?)
    }

    /// The blocking face of an async lock, for example one configured with
    /// [`crate::LockBuilder`] (identity, ACLs, follower lag) on a client of
    /// [`connect_client`](crate::connect_client). A client you built with
    /// [`zk::Client`] runs on the runtime it was made on, which must keep
    /// running while this lock is used.
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`], [`Error::Runtime`].
    pub fn from_async(lock: crate::SharedLock) -> Result<SharedLock, Error> {
        Ok(SharedLock {
            lock,
            rt: Arc::new(runtime()?),
        })
    }

    /// Acquires the lock for reading, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`crate::SharedLock::read`], and [`Error::InsideRuntime`].
    pub fn read(&self) -> Result<Guard, Error> {
        let g = self.block_on(self.lock.read())??;
        Ok(self.wrap(crate::Guard::from(g)))
    }

    /// Acquires the lock for writing, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`crate::SharedLock::write`], and [`Error::InsideRuntime`].
    pub fn write(&self) -> Result<Guard, Error> {
        let g = self.block_on(self.lock.write())??;
        Ok(self.wrap(crate::Guard::from(g)))
    }

    /// Acquires the lock for reading if it is free now; `Ok(None)` otherwise.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub fn try_read(&self) -> Result<Option<Guard>, Error> {
        Ok(self
            .block_on(self.lock.try_read())??
            .map(|g| self.wrap(crate::Guard::from(g))))
    }

    /// Acquires the lock for writing if it is free now; `Ok(None)` otherwise.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub fn try_write(&self) -> Result<Option<Guard>, Error> {
        Ok(self
            .block_on(self.lock.try_write())??
            .map(|g| self.wrap(crate::Guard::from(g))))
    }

    /// Acquires the lock for reading, waiting at most `timeout`; `Ok(None)` on timeout.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub fn read_timeout(&self, timeout: Duration) -> Result<Option<Guard>, Error> {
        Ok(self
            .block_on(self.lock.read_timeout(timeout))??
            .map(|g| self.wrap(crate::Guard::from(g))))
    }

    /// Acquires the lock for writing, waiting at most `timeout`; `Ok(None)` on timeout.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub fn write_timeout(&self, timeout: Duration) -> Result<Option<Guard>, Error> {
        Ok(self
            .block_on(self.lock.write_timeout(timeout))??
            .map(|g| self.wrap(crate::Guard::from(g))))
    }

    /// Runs `f` to completion on the calling thread, in this lock's
    /// runtime: for the client's own calls on the data the lock protects,
    /// without a runtime of one's own.
    ///
    /// ```no_run
    /// use zk_rwlock::blocking::SharedLock;
    ///
    /// let lock = SharedLock::connect("127.0.0.1:2181", "/locks/orders")?;
    /// let guard = lock.write()?;
    /// let client = lock.client();
    /// let (data, stat) = lock.block_on(client.get_data("/orders/state"))??;
    /// lock.block_on(client.set_data("/orders/state", b"next", Some(stat.version)))??;
    /// drop(guard);
    /// # let _ = data;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`] on a thread that runs a runtime's tasks
    /// (see the [module documentation](super)); `f`'s own errors are in its
    /// output.
    pub fn block_on<F: Future>(&self, f: F) -> Result<F::Output, Error> {
        self.rt.block_on(f)
    }

    /// The contenders in queue order (see [`crate::SharedLock::contenders`]).
    ///
    /// # Errors
    ///
    /// As [`crate::SharedLock::contenders`], and [`Error::InsideRuntime`].
    pub fn contenders(&self) -> Result<Vec<QueueEntry>, Error> {
        self.block_on(self.lock.contenders())?
    }

    /// Asks the holder of `node` to let go (see
    /// [`crate::SharedLock::revoke`]); false if there is no such contender.
    ///
    /// # Errors
    ///
    /// As [`crate::SharedLock::revoke`], and [`Error::InsideRuntime`].
    pub fn revoke(&self, node: &str) -> Result<bool, Error> {
        self.block_on(self.lock.revoke(node))?
    }

    /// Asks every current holder to let go (see
    /// [`crate::SharedLock::revoke_holders`]); the nodes asked and those
    /// that refused.
    ///
    /// # Errors
    ///
    /// As [`crate::SharedLock::revoke_holders`], and [`Error::InsideRuntime`].
    pub fn revoke_holders(&self) -> Result<crate::Revoked, Error> {
        self.block_on(self.lock.revoke_holders())?
    }

    /// Like [`SharedLock::connect`], with an identity for the node names and a session timeout.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::connect`], and [`Error::InvalidIdentity`].
    pub fn connect_with(
        servers: &str,
        path: &str,
        identity: Option<&str>,
        session_timeout: Duration,
    ) -> Result<SharedLock, Error> {
        validate_path(path)?;
        if let Some(identity) = identity {
            crate::lock::validate_identity(identity)?;
        }
        let (rt, client) = connect_runtime(servers, session_timeout, Some(path))?;
        let mut builder = crate::SharedLock::builder(client, path);
        if let Some(identity) = identity {
            builder = builder.identity(identity);
        }
        Ok(SharedLock {
            lock: builder.build()?,
            rt: Arc::new(rt),
        })
    }

    /// Connects a new session to `servers` with `options` (credentials,
    /// TLS, timeouts: see [`ConnectOptions`](crate::ConnectOptions)) and
    /// makes a lock on `path` with the default identity and ACLs.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] before connecting, those of
    /// [`connect_client_with`](crate::connect_client_with), and
    /// [`Error::InsideRuntime`].
    pub fn connect_with_options(
        servers: &str,
        path: &str,
        options: &crate::ConnectOptions,
    ) -> Result<SharedLock, Error> {
        validate_path(path)?;
        let rt = runtime()?;
        let client = rt
            .block_on(crate::connect_client_with(servers, options))?
            .map_err(|e| e.for_lock(path))?;
        Ok(SharedLock {
            lock: crate::SharedLock::new(client, path)?,
            rt: Arc::new(rt),
        })
    }

    /// The async lock underneath.
    pub fn as_async(&self) -> &crate::SharedLock {
        &self.lock
    }

    /// The lock directory path.
    pub fn path(&self) -> &str {
        self.lock.path()
    }

    /// The client session this lock uses.
    pub fn client(&self) -> &zk::Client {
        self.lock.client()
    }

    fn wrap(&self, guard: crate::Guard) -> Guard {
        Guard {
            inner: Some(guard),
            rt: self.rt.clone(),
        }
    }
}

/// A re-entrant owner of the blocking API, from [`SharedLock::reentrant`]:
/// the rules of [`crate::ReentrantLock`] (a nested acquire and a read
/// within a write are granted at once, on the owner's one node; an upgrade
/// is refused with [`Error::WouldDeadlock`]; the node goes with the owner's
/// last guard).
#[derive(Debug)]
pub struct ReentrantLock {
    owner: crate::ReentrantLock,
    lock: SharedLock,
}

impl SharedLock {
    /// An owner of this lock whose acquires are re-entrant (see
    /// [`crate::ReentrantLock`]).
    pub fn reentrant(&self) -> ReentrantLock {
        ReentrantLock {
            owner: self.lock.reentrant(),
            lock: self.clone(),
        }
    }
}

impl ReentrantLock {
    /// What the owner holds (see [`crate::ReentrantLock::holding`]).
    pub fn holding(&self) -> crate::reentrant::Holding {
        self.owner.holding()
    }

    /// Acquires the read lock, or nests on the owner's node.
    ///
    /// # Errors
    ///
    /// As [`crate::ReentrantLock::read`], and [`Error::InsideRuntime`].
    pub fn read(&mut self) -> Result<Guard, Error> {
        let g = self.lock.block_on(self.owner.read())??;
        Ok(self.lock.wrap(crate::Guard::from(g)))
    }

    /// Acquires the write lock, or nests on the owner's writer node.
    ///
    /// # Errors
    ///
    /// As [`crate::ReentrantLock::write`], and [`Error::InsideRuntime`].
    pub fn write(&mut self) -> Result<Guard, Error> {
        let g = self.lock.block_on(self.owner.write())??;
        Ok(self.lock.wrap(crate::Guard::from(g)))
    }

    /// As [`ReentrantLock::read`], giving up at once if the lock is not free.
    ///
    /// # Errors
    ///
    /// As [`ReentrantLock::read`].
    pub fn try_read(&mut self) -> Result<Option<Guard>, Error> {
        let g = self.lock.block_on(self.owner.try_read())??;
        Ok(g.map(|g| self.lock.wrap(crate::Guard::from(g))))
    }

    /// As [`ReentrantLock::write`], giving up at once if the lock is not free.
    ///
    /// # Errors
    ///
    /// As [`ReentrantLock::write`].
    pub fn try_write(&mut self) -> Result<Option<Guard>, Error> {
        let g = self.lock.block_on(self.owner.try_write())??;
        Ok(g.map(|g| self.lock.wrap(crate::Guard::from(g))))
    }

    /// As [`ReentrantLock::read`], waiting at most `timeout`.
    ///
    /// # Errors
    ///
    /// As [`ReentrantLock::read`].
    pub fn read_timeout(&mut self, timeout: Duration) -> Result<Option<Guard>, Error> {
        let g = self.lock.block_on(self.owner.read_timeout(timeout))??;
        Ok(g.map(|g| self.lock.wrap(crate::Guard::from(g))))
    }

    /// As [`ReentrantLock::write`], waiting at most `timeout`.
    ///
    /// # Errors
    ///
    /// As [`ReentrantLock::write`].
    pub fn write_timeout(&mut self, timeout: Duration) -> Result<Option<Guard>, Error> {
        let g = self.lock.block_on(self.owner.write_timeout(timeout))??;
        Ok(g.map(|g| self.lock.wrap(crate::Guard::from(g))))
    }
}

/// A held lock (read or write) of the blocking API. Released when dropped.
#[derive(Debug)]
#[must_use = "dropping the guard releases the lock"]
pub struct Guard {
    pub(super) inner: Option<crate::Guard>,
    pub(super) rt: Arc<OwnedRuntime>,
}

impl Guard {
    /// Read or write.
    pub fn mode(&self) -> Mode {
        self.inner.as_ref().map_or(Mode::Read, crate::Guard::mode)
    }

    /// Full path of the contender node.
    pub fn node(&self) -> &str {
        self.inner.as_ref().map_or("", crate::Guard::node)
    }

    /// The fencing token (czxid of the node).
    pub fn fencing_token(&self) -> i64 {
        self.inner.as_ref().map_or(0, crate::Guard::fencing_token)
    }

    /// Held, suspended or lost (see [`crate::WriteGuard::state`] and
    /// [`crate::lease`]): true without a `wait_*` call under way (a node
    /// deleted by anyone makes it `Lost`).
    pub fn state(&self) -> HoldState {
        self.inner.as_ref().map_or(HoldState::Lost, crate::Guard::state)
    }

    /// The lease deadline: no one else can be granted a conflicting lock
    /// before it (see [`crate::WriteGuard::lease_deadline`]).
    pub fn lease_deadline(&self) -> Instant {
        self.inner
            .as_ref()
            .map_or_else(Instant::now, crate::Guard::lease_deadline)
    }

    /// False once the lock is known lost; true while held or suspended
    /// (see [`crate::WriteGuard::is_held`]).
    pub fn is_held(&self) -> bool {
        self.inner.as_ref().is_some_and(crate::Guard::is_held)
    }

    /// Waits up to `timeout` for the lock to be no longer held (suspended
    /// or lost); returns the state then, [`HoldState::Held`] if the time ran
    /// out first.
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_suspended(&self, timeout: Duration) -> Result<HoldState, Error> {
        self.rt.wait_suspended(self.inner.as_ref(), timeout)
    }

    /// Waits up to `timeout` for the lock to be no longer suspended (held
    /// again or lost); returns the state then, [`HoldState::Suspended`] if
    /// the time ran out first.
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_resumed(&self, timeout: Duration) -> Result<HoldState, Error> {
        self.rt.wait_resumed(self.inner.as_ref(), timeout)
    }

    /// Waits up to `timeout` for the lock to be lost; true if it was.
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_lost(&self, timeout: Duration) -> Result<bool, Error> {
        self.rt.wait_lost(self.inner.as_ref(), timeout)
    }

    /// True once a revocation request was seen on the node (see
    /// [`crate::WriteGuard::is_revocation_requested`]): the guard's kept
    /// watch sees it, with or without a `wait_*` call under way. Wait with
    /// [`Guard::wait_revocation_requested`] rather than polling this flag.
    pub fn is_revocation_requested(&self) -> bool {
        self.inner
            .as_ref()
            .is_some_and(crate::Guard::is_revocation_requested)
    }

    /// Waits up to `timeout` for a revocation request (see
    /// [`crate::SharedLock::revoke`]); true if one arrived (or had
    /// already), false if the time ran out or the lock was lost first.
    /// Costs no request (the guard's kept watch sees requests); the holder
    /// sees a request only if it may READ its node.
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_revocation_requested(&self, timeout: Duration) -> Result<bool, Error> {
        let Some(inner) = &self.inner else {
            return Ok(false);
        };
        self.rt
            .block_on_within(timeout, inner.revocation_requested(), false)
    }

    /// Releases the lock and reports the outcome (see [`crate::WriteGuard::release`]).
    ///
    /// # Errors
    ///
    /// As [`crate::WriteGuard::release`], and [`Error::InsideRuntime`].
    pub fn release(mut self) -> Result<(), Error> {
        self.rt.release(self.inner.take())
    }

    /// ZooKeeper operations that commit only while this lock is held,
    /// all or none, with a blocking [`Transaction::commit`] (see
    /// [`crate::WriteGuard::transaction`]).
    ///
    /// ```no_run
    /// use zk_rwlock::CreateAcl;
    ///
    /// let lock = zk_rwlock::blocking::SharedLock::connect("127.0.0.1:2181", "/locks/jobs")?;
    /// let guard = lock.write()?;
    /// guard
    ///     .transaction()
    ///     .create("/jobs/42", b"queued", CreateAcl::Open)
    ///     .commit()?; // Error::Lost if the lock was lost: nothing written
    /// guard.release()?;
    /// # Ok::<(), zk_rwlock::Error>(())
    /// ```
    pub fn transaction(&self) -> Transaction<'_> {
        Transaction::new(self.inner.as_ref().map(crate::Guard::transaction), &self.rt)
    }

    /// Downgrades a write lock to a read lock, atomically (see
    /// [`crate::WriteGuard::downgrade`]); a read lock is returned as it is.
    ///
    /// # Errors
    ///
    /// As [`crate::WriteGuard::downgrade`] (the write lock is then
    /// released), and [`Error::InsideRuntime`] (the write lock is then
    /// released in the background).
    pub fn downgrade(mut self) -> Result<Guard, Error> {
        if runs_tasks() {
            return Err(Error::InsideRuntime);
        }
        let Some(inner) = self.inner.take() else {
            return Ok(self);
        };
        let rt = self.rt.clone();
        let downgraded = rt.block_on(inner.downgrade())??;
        Ok(Guard {
            inner: Some(downgraded),
            rt,
        })
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.rt.release_on_drop(self.inner.take(), "guard");
    }
}

/// ZooKeeper operations that commit only while the lock is held, for
/// synchronous code: [`crate::Transaction`] with a blocking
/// [`commit`](Transaction::commit). From `transaction()` on [`Guard`],
/// [`MultiGuard`](super::MultiGuard) and [`Leadership`](super::Leadership).
#[must_use = "a transaction does nothing until it is committed"]
#[derive(Debug)]
pub struct Transaction<'g> {
    /// `None` for a guard already released (never seen: a release takes
    /// the guard).
    inner: Option<crate::Transaction<'g>>,
    rt: &'g OwnedRuntime,
}

impl<'g> Transaction<'g> {
    /// A blocking transaction of `inner`, committed on `rt`.
    pub(super) fn new(inner: Option<crate::Transaction<'g>>, rt: &'g OwnedRuntime) -> Transaction<'g> {
        Transaction { inner, rt }
    }

    fn with(mut self, add: impl FnOnce(crate::Transaction<'g>) -> crate::Transaction<'g>) -> Transaction<'g> {
        self.inner = self.inner.map(add);
        self
    }

    /// Adds the create of a persistent node (see [`crate::Transaction::create`]).
    pub fn create(self, path: &str, data: &[u8], acl: crate::CreateAcl) -> Transaction<'g> {
        self.with(|tx| tx.create(path, data, acl))
    }

    /// Adds a write of a node's data (see [`crate::Transaction::set_data`]).
    pub fn set_data(self, path: &str, data: &[u8], expected_version: Option<i32>) -> Transaction<'g> {
        self.with(|tx| tx.set_data(path, data, expected_version))
    }

    /// Adds the deletion of a node (see [`crate::Transaction::delete`]).
    pub fn delete(self, path: &str, expected_version: Option<i32>) -> Transaction<'g> {
        self.with(|tx| tx.delete(path, expected_version))
    }

    /// Adds a check of a node (see [`crate::Transaction::check`]).
    pub fn check(self, path: &str, expected_version: Option<i32>) -> Transaction<'g> {
        self.with(|tx| tx.check(path, expected_version))
    }

    /// Sends them all in one `multi` behind the checks of the holder
    /// nodes, and waits for the answer (see [`crate::Transaction::commit`]).
    ///
    /// # Errors
    ///
    /// As [`crate::Transaction::commit`], and [`Error::InsideRuntime`]
    /// (nothing sent).
    pub fn commit(self) -> Result<Vec<zk::MultiWriteResult>, Error> {
        let Some(inner) = self.inner else {
            return Err(Error::Lost { node: String::new() });
        };
        self.rt.block_on(inner.commit())?
    }
}
