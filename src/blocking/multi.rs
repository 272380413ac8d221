//! The blocking lock on several paths at once and its guard.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{connect_runtime, runtime, OwnedRuntime, Transaction};
use crate::error::Error;
use crate::{HoldState, Mode, DEFAULT_SESSION_TIMEOUT};

/// Several locks acquired all together or not at all, for synchronous code
/// (see [`crate::multi`]). Cheap to clone; clones share the runtime.
#[derive(Clone, Debug)]
pub struct MultiLock {
    lock: crate::MultiLock,
    rt: Arc<OwnedRuntime>,
}

impl MultiLock {
    /// Connects a new session to `servers` and makes a multi-lock over
    /// `parts` (lock directory path and mode, in any order) on it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] before connecting (also for a path given
    /// twice, or no path); then as [`SharedLock::connect`](super::SharedLock::connect).
    pub fn connect(servers: &str, parts: &[(&str, Mode)]) -> Result<MultiLock, Error> {
        crate::multi::check_parts(parts)?;
        let lock = parts.first().map(|(path, _)| *path);
        let (rt, client) = connect_runtime(servers, DEFAULT_SESSION_TIMEOUT, lock)?;
        Ok(MultiLock {
            lock: crate::MultiLock::new(client, parts)?,
            rt: Arc::new(rt),
        })
    }

    /// The blocking face of an async multi-lock (see
    /// [`SharedLock::from_async`](super::SharedLock::from_async) for the client it may use).
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`], [`Error::Runtime`].
    pub fn from_async(lock: crate::MultiLock) -> Result<MultiLock, Error> {
        Ok(MultiLock {
            lock,
            rt: Arc::new(runtime()?),
        })
    }

    /// Acquires every part, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`crate::MultiLock::acquire`], and [`Error::InsideRuntime`].
    pub fn acquire(&self) -> Result<MultiGuard, Error> {
        let g = self.rt.block_on(self.lock.acquire())??;
        Ok(self.wrap(g))
    }

    /// Acquires every part if each is free now; `Ok(None)` otherwise.
    ///
    /// # Errors
    ///
    /// As [`MultiLock::acquire`].
    pub fn try_acquire(&self) -> Result<Option<MultiGuard>, Error> {
        Ok(self.rt.block_on(self.lock.try_acquire())??.map(|g| self.wrap(g)))
    }

    /// Acquires every part within `timeout` (for all parts together);
    /// `Ok(None)` on timeout, with what was taken released.
    ///
    /// # Errors
    ///
    /// As [`MultiLock::acquire`].
    pub fn acquire_timeout(&self, timeout: Duration) -> Result<Option<MultiGuard>, Error> {
        Ok(self
            .rt
            .block_on(self.lock.acquire_timeout(timeout))??
            .map(|g| self.wrap(g)))
    }

    /// The async multi-lock underneath.
    pub fn as_async(&self) -> &crate::MultiLock {
        &self.lock
    }

    fn wrap(&self, guard: crate::MultiGuard) -> MultiGuard {
        MultiGuard {
            inner: Some(guard),
            rt: self.rt.clone(),
        }
    }
}

/// Every part of a blocking [`MultiLock`], held. Released when dropped.
#[derive(Debug)]
#[must_use = "dropping the guard releases the locks"]
pub struct MultiGuard {
    inner: Option<crate::MultiGuard>,
    rt: Arc<OwnedRuntime>,
}

impl MultiGuard {
    /// The async guards of the parts, sorted by lock path.
    pub fn parts(&self) -> &[crate::Guard] {
        self.inner.as_ref().map_or(&[], crate::MultiGuard::parts)
    }

    /// The fencing token of the part on lock directory `path`.
    pub fn fencing_token(&self, path: &str) -> Option<i64> {
        self.inner.as_ref().and_then(|g| g.fencing_token(path))
    }

    /// The worst state of the parts (see [`crate::MultiGuard::state`]).
    pub fn state(&self) -> HoldState {
        self.inner
            .as_ref()
            .map_or(HoldState::Lost, crate::MultiGuard::state)
    }

    /// The earliest lease deadline of the parts.
    pub fn lease_deadline(&self) -> Instant {
        self.inner
            .as_ref()
            .map_or_else(Instant::now, crate::MultiGuard::lease_deadline)
    }

    /// False once any part is known lost.
    pub fn is_held(&self) -> bool {
        self.inner.as_ref().is_some_and(crate::MultiGuard::is_held)
    }

    /// Waits up to `timeout` for any part to be no longer held; returns
    /// the worst state then, [`HoldState::Held`] if the time ran out first.
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_suspended(&self, timeout: Duration) -> Result<HoldState, Error> {
        self.rt.wait_suspended(self.inner.as_ref(), timeout)
    }

    /// Waits up to `timeout` for no part to be suspended any more (all
    /// held again, or one lost); returns the state then,
    /// [`HoldState::Suspended`] if the time ran out first (see
    /// [`crate::MultiGuard::resumed`]).
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_resumed(&self, timeout: Duration) -> Result<HoldState, Error> {
        self.rt.wait_resumed(self.inner.as_ref(), timeout)
    }

    /// Waits up to `timeout` for any part to be lost; true if one was.
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_lost(&self, timeout: Duration) -> Result<bool, Error> {
        self.rt.wait_lost(self.inner.as_ref(), timeout)
    }

    /// ZooKeeper operations that commit only while every part is held,
    /// all or none, with a blocking commit (see
    /// [`crate::MultiGuard::transaction`]).
    pub fn transaction(&self) -> Transaction<'_> {
        Transaction::new(self.inner.as_ref().map(crate::MultiGuard::transaction), &self.rt)
    }

    /// Releases every part and reports the first error (see
    /// [`crate::MultiGuard::release`]).
    ///
    /// # Errors
    ///
    /// As [`crate::MultiGuard::release`], and [`Error::InsideRuntime`].
    pub fn release(mut self) -> Result<(), Error> {
        self.rt.release(self.inner.take())
    }
}

impl Drop for MultiGuard {
    fn drop(&mut self) {
        self.rt.release_on_drop(self.inner.take(), "multi-guard");
    }
}
