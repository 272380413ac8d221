//! The blocking semaphore and its permit.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::lock::{Guard, Transaction};
use super::{connect_runtime, runtime, OwnedRuntime};
use crate::error::Error;
use crate::lock::validate_path;
use crate::{zk, HoldState, QueueEntry, DEFAULT_SESSION_TIMEOUT};

/// A counting semaphore for synchronous code (see [`crate::Semaphore`]):
/// at most N permits held at once. Cheap to clone; clones share the
/// session.
///
/// ```no_run
/// let pool = zk_rwlock::blocking::Semaphore::connect("127.0.0.1:2181", "/semaphores/licences", 4)?;
/// let permit = pool.acquire()?; // one of 4
/// permit.release()?;
/// # Ok::<(), zk_rwlock::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Semaphore {
    semaphore: crate::Semaphore,
    rt: Arc<OwnedRuntime>,
}

impl Semaphore {
    /// Connects a new session to `servers` and makes a semaphore of
    /// `permits` permits on `path`.
    ///
    /// # Errors
    ///
    /// [`Error::NoPermits`] or [`Error::InvalidPath`] before connecting;
    /// then as [`super::SharedLock::connect`].
    pub fn connect(servers: &str, path: &str, permits: u32) -> Result<Semaphore, Error> {
        validate_path(path)?;
        if permits == 0 {
            return Err(Error::NoPermits);
        }
        let (rt, client) = connect_runtime(servers, DEFAULT_SESSION_TIMEOUT, Some(path))?;
        Ok(Semaphore {
            semaphore: crate::Semaphore::new(client, path, permits)?,
            rt: Arc::new(rt),
        })
    }

    /// The blocking face of an async semaphore, for example one configured
    /// with [`crate::SemaphoreBuilder`].
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`], [`Error::Runtime`].
    pub fn from_async(semaphore: crate::Semaphore) -> Result<Semaphore, Error> {
        Ok(Semaphore {
            semaphore,
            rt: Arc::new(runtime()?),
        })
    }

    /// Takes a permit, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`crate::Semaphore::acquire`], and [`Error::InsideRuntime`].
    pub fn acquire(&self) -> Result<Permit, Error> {
        let permit = self.rt.block_on(self.semaphore.acquire())??;
        Ok(self.wrap(permit))
    }

    /// Takes a permit if one is free without waiting (see
    /// [`crate::Semaphore::try_acquire`]).
    ///
    /// # Errors
    ///
    /// As [`Semaphore::acquire`].
    pub fn try_acquire(&self) -> Result<Option<Permit>, Error> {
        let permit = self.rt.block_on(self.semaphore.try_acquire())??;
        Ok(permit.map(|p| self.wrap(p)))
    }

    /// Takes a permit, waiting at most `timeout` (see
    /// [`crate::Semaphore::acquire_timeout`]).
    ///
    /// # Errors
    ///
    /// As [`Semaphore::acquire`].
    pub fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Permit>, Error> {
        let permit = self.rt.block_on(self.semaphore.acquire_timeout(timeout))??;
        Ok(permit.map(|p| self.wrap(p)))
    }

    /// The contenders in queue order (see [`crate::Semaphore::contenders`]).
    ///
    /// # Errors
    ///
    /// As [`crate::Semaphore::contenders`], and [`Error::InsideRuntime`].
    pub fn contenders(&self) -> Result<Vec<QueueEntry>, Error> {
        self.rt.block_on(self.semaphore.contenders())?
    }

    /// Asks every permit holder to let go (see
    /// [`crate::Semaphore::revoke_holders`]).
    ///
    /// # Errors
    ///
    /// As [`crate::Semaphore::revoke_holders`], and [`Error::InsideRuntime`].
    pub fn revoke_holders(&self) -> Result<crate::Revoked, Error> {
        self.rt.block_on(self.semaphore.revoke_holders())?
    }

    /// The async semaphore behind this one.
    pub fn as_async(&self) -> &crate::Semaphore {
        &self.semaphore
    }

    /// How many may hold at once.
    pub fn permits(&self) -> u32 {
        self.semaphore.permits()
    }

    /// The client session this semaphore uses.
    pub fn client(&self) -> &zk::Client {
        self.semaphore.client()
    }

    fn wrap(&self, permit: crate::Permit) -> Permit {
        Permit(Guard {
            inner: Some(crate::Guard::from(permit)),
            rt: self.rt.clone(),
        })
    }
}

/// A held permit of the blocking API (see [`crate::Permit`]). Released
/// when dropped.
#[derive(Debug)]
#[must_use = "dropping the permit releases it"]
pub struct Permit(Guard);

impl Permit {
    /// Full path of the permit's node.
    pub fn node(&self) -> &str {
        self.0.node()
    }

    /// The fencing token (czxid of the node).
    pub fn fencing_token(&self) -> i64 {
        self.0.fencing_token()
    }

    /// Held, suspended or lost (see [`crate::Permit::state`]).
    pub fn state(&self) -> HoldState {
        self.0.state()
    }

    /// The lease deadline (see [`crate::Permit::lease_deadline`]).
    pub fn lease_deadline(&self) -> Instant {
        self.0.lease_deadline()
    }

    /// False once the permit is known lost.
    pub fn is_held(&self) -> bool {
        self.0.is_held()
    }

    /// Waits up to `timeout` for the permit to be suspended or lost (see
    /// [`Guard::wait_suspended`]).
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_suspended(&self, timeout: Duration) -> Result<HoldState, Error> {
        self.0.wait_suspended(timeout)
    }

    /// Waits up to `timeout` for the permit to be held again or lost (see
    /// [`Guard::wait_resumed`]).
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_resumed(&self, timeout: Duration) -> Result<HoldState, Error> {
        self.0.wait_resumed(timeout)
    }

    /// Waits up to `timeout` for the permit to be lost; true if it was.
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_lost(&self, timeout: Duration) -> Result<bool, Error> {
        self.0.wait_lost(timeout)
    }

    /// True once a revocation request was seen on the node.
    pub fn is_revocation_requested(&self) -> bool {
        self.0.is_revocation_requested()
    }

    /// Waits up to `timeout` for a revocation request; true if one arrived.
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_revocation_requested(&self, timeout: Duration) -> Result<bool, Error> {
        self.0.wait_revocation_requested(timeout)
    }

    /// Releases the permit and reports the outcome.
    ///
    /// # Errors
    ///
    /// As [`crate::Permit::release`], and [`Error::InsideRuntime`].
    pub fn release(self) -> Result<(), Error> {
        self.0.release()
    }

    /// ZooKeeper operations that commit only while this permit is held
    /// (see [`Guard::transaction`]).
    pub fn transaction(&self) -> Transaction<'_> {
        self.0.transaction()
    }
}
