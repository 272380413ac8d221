//! The synchronous API: the same lock for code without an async runtime.
//!
//! [`SharedLock`] here owns a small runtime (one worker thread) that runs
//! the ZooKeeper session in the background, so heartbeats keep flowing while
//! the calling thread does other work. Guards release when dropped.
//!
//! Do not use this module from inside an async runtime: calls there return
//! [`Error::InsideRuntime`] instead of blocking a worker thread.
//!
//! ```no_run
//! use zk_rwlock::blocking::SharedLock;
//!
//! let lock = SharedLock::connect("127.0.0.1:2181", "/locks/orders")?;
//! {
//!     let guard = lock.write()?;
//!     // ... exclusive work, passing guard.fencing_token() to the store ...
//! } // released here
//! # Ok::<(), zk_rwlock::Error>(())
//! ```

use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;

use crate::error::Error;
use crate::lock::{connect_client, validate_path};
use crate::{zk, Contender, Mode, DEFAULT_CONNECT_TIMEOUT, DEFAULT_SESSION_TIMEOUT};

/// A read/write lock for synchronous code. Cheap to clone; clones share the session.
///
/// # Deadlocks
///
/// As with [`crate::SharedLock`]: asking for write while holding read on the
/// same lock waits for itself. Use [`SharedLock::write_timeout`] as an escape.
#[derive(Clone, Debug)]
pub struct SharedLock {
    lock: crate::SharedLock,
    rt: Arc<OwnedRuntime>,
}

/// The runtime of the blocking API. Dropping a runtime inside another
/// runtime's context panics, and the last handle of a blocking lock may go
/// anywhere (a guard moved into a task, say): there it is shut down in the
/// background instead. Nothing the lock needs runs on it after that: the
/// session and the releases of dropped guards run on the library's
/// background thread.
#[derive(Debug)]
struct OwnedRuntime(Option<Runtime>);

impl OwnedRuntime {
    /// Runs `f` to completion on this runtime.
    fn block_on<F: std::future::Future>(&self, f: F) -> Result<F::Output, Error> {
        match &self.0 {
            Some(rt) => Ok(rt.block_on(f)),
            // Taken only when dropped, so never seen here.
            None => Err(Error::Runtime(std::io::Error::other("the runtime is gone"))),
        }
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                rt.shutdown_background();
            }
        }
    }
}

fn runtime() -> Result<Runtime, Error> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::InsideRuntime);
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("zk-rwlock")
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}

impl SharedLock {
    /// Connects a new session to `servers` and makes a lock on `path`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] before connecting; [`Error::Unreachable`] if no
    /// server answers within [`DEFAULT_CONNECT_TIMEOUT`]; [`Error::InsideRuntime`].
    pub fn connect(servers: &str, path: &str) -> Result<SharedLock, Error> {
        SharedLock::connect_with(servers, path, None, DEFAULT_SESSION_TIMEOUT)
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
        let rt = runtime()?;
        let client = rt.block_on(connect_client(servers, session_timeout, DEFAULT_CONNECT_TIMEOUT))?;
        let mut builder = crate::SharedLock::builder(client, path);
        if let Some(identity) = identity {
            builder = builder.identity(identity);
        }
        Ok(SharedLock {
            lock: builder.build()?,
            rt: Arc::new(OwnedRuntime(Some(rt))),
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

    fn block_on<F: std::future::Future>(&self, f: F) -> Result<F::Output, Error> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(Error::InsideRuntime);
        }
        self.rt.block_on(f)
    }

    fn wrap(&self, guard: crate::Guard) -> Guard {
        Guard {
            inner: Some(guard),
            rt: self.rt.clone(),
        }
    }

    /// Acquires the lock for reading, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`crate::SharedLock::read`], and [`Error::InsideRuntime`].
    pub fn read(&self) -> Result<Guard, Error> {
        let g = self.block_on(self.lock.read())??;
        Ok(self.wrap(crate::Guard::Read(g)))
    }

    /// Acquires the lock for writing, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`crate::SharedLock::write`], and [`Error::InsideRuntime`].
    pub fn write(&self) -> Result<Guard, Error> {
        let g = self.block_on(self.lock.write())??;
        Ok(self.wrap(crate::Guard::Write(g)))
    }

    /// Acquires the lock for reading if it is free now; `Ok(None)` otherwise.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub fn try_read(&self) -> Result<Option<Guard>, Error> {
        Ok(self
            .block_on(self.lock.try_read())??
            .map(|g| self.wrap(crate::Guard::Read(g))))
    }

    /// Acquires the lock for writing if it is free now; `Ok(None)` otherwise.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub fn try_write(&self) -> Result<Option<Guard>, Error> {
        Ok(self
            .block_on(self.lock.try_write())??
            .map(|g| self.wrap(crate::Guard::Write(g))))
    }

    /// Acquires the lock for reading, waiting at most `timeout`; `Ok(None)` on timeout.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub fn read_timeout(&self, timeout: Duration) -> Result<Option<Guard>, Error> {
        Ok(self
            .block_on(self.lock.read_timeout(timeout))??
            .map(|g| self.wrap(crate::Guard::Read(g))))
    }

    /// Acquires the lock for writing, waiting at most `timeout`; `Ok(None)` on timeout.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub fn write_timeout(&self, timeout: Duration) -> Result<Option<Guard>, Error> {
        Ok(self
            .block_on(self.lock.write_timeout(timeout))??
            .map(|g| self.wrap(crate::Guard::Write(g))))
    }

    /// The contenders in queue order (see [`crate::SharedLock::contenders`]).
    ///
    /// # Errors
    ///
    /// As [`crate::SharedLock::contenders`], and [`Error::InsideRuntime`].
    pub fn contenders(&self) -> Result<Vec<Contender>, Error> {
        self.block_on(self.lock.contenders())?
    }
}

/// A held lock (read or write) of the blocking API. Released when dropped.
#[derive(Debug)]
#[must_use = "dropping the guard releases the lock"]
pub struct Guard {
    inner: Option<crate::Guard>,
    rt: Arc<OwnedRuntime>,
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

    /// False as soon as the lock is known lost.
    pub fn is_held(&self) -> bool {
        self.inner.as_ref().is_some_and(crate::Guard::is_held)
    }

    /// Waits up to `timeout` for the lock to be lost; true if it was.
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_lost(&self, timeout: Duration) -> Result<bool, Error> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(Error::InsideRuntime);
        }
        let Some(inner) = &self.inner else { return Ok(true) };
        self.rt
            .block_on(async { tokio::time::timeout(timeout, inner.lost()).await.is_ok() })
    }

    /// Releases the lock and reports the outcome (see [`crate::WriteGuard::release`]).
    ///
    /// # Errors
    ///
    /// As [`crate::WriteGuard::release`], and [`Error::InsideRuntime`].
    pub fn release(mut self) -> Result<(), Error> {
        self.release_inner()
    }

    fn release_inner(&mut self) -> Result<(), Error> {
        let Some(inner) = self.inner.take() else {
            return Ok(());
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            // Dropping the async guard releases in the background.
            drop(inner);
            return Err(Error::InsideRuntime);
        }
        self.rt.block_on(inner.release())?
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Err(e) = self.release_inner() {
            tracing::warn!(error = %e, "release on drop failed");
        }
    }
}
