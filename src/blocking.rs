//! The synchronous API: the same lock for code without an async runtime.
//!
//! [`SharedLock`] here owns a small runtime (one worker thread) for its
//! timers; the ZooKeeper session runs on the library's background thread,
//! so heartbeats keep flowing while the calling thread does other work.
//! Guards release when dropped.
//!
//! # Where it can be called
//!
//! A call blocks the calling thread until the lock's work, which runs on
//! the library's threads, is done. It works from any thread that does not
//! run a Tokio runtime's tasks: a plain thread, a closure given to
//! [`tokio::task::spawn_blocking`] (of any runtime, `current_thread`
//! included) or to [`tokio::task::block_in_place`], and the thread that
//! drives a multi-thread runtime's `block_on` (it runs no tasks).
//!
//! On a thread that runs a runtime's tasks (the thread of a
//! `current_thread` runtime, in its `block_on` or in any of its tasks, and
//! the worker threads of a multi-thread runtime) a call returns
//! [`Error::InsideRuntime`] instead: blocking there stops every other task
//! of that thread, and if one of them holds the lock, or must release it,
//! the call would wait for ever. Move the call into `spawn_blocking`, or use
//! the async [`crate::SharedLock`] there.
//!
//! How such a thread is told apart: inside `spawn_blocking` a runtime's
//! handle is set too ([`tokio::runtime::Handle::try_current`] succeeds), so
//! that cannot tell. Tokio itself decides it when a task yields:
//! [`tokio::task::yield_now`] hands its wake-up to the scheduler that runs
//! on the current thread, to be delivered when the task has yielded, and
//! wakes at once on a thread that runs no scheduler. The check polls
//! `yield_now` once with a waker of its own and looks whether it was woken
//! at once. The lock's futures are then polled on the calling thread, with
//! a plain thread park between polls (not `Runtime::block_on`, which
//! refuses to start where a runtime's `block_on` already runs), outside
//! Tokio's cooperative budget, in the context of this module's runtime for
//! their timers.
//!
//! Not seen by the check: a [`tokio::task::LocalSet`] driven from a
//! multi-thread runtime's `block_on` runs its tasks on that thread without
//! a scheduler of the runtime there; blocking inside it stops them.
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
//!
//! From async code, through `spawn_blocking`:
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let token = tokio::task::spawn_blocking(|| {
//!     let lock = zk_rwlock::blocking::SharedLock::connect("127.0.0.1:2181", "/locks/orders")?;
//!     let guard = lock.write()?;
//!     Ok::<_, zk_rwlock::Error>(guard.fencing_token())
//! })
//! .await??;
//! # let _ = token; Ok(()) }
//! ```

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

mod election;
pub use election::{Election, Leadership, Observer};

use crate::connect::connect_client;
use crate::error::Error;
use crate::lock::validate_path;
use crate::{zk, Contender, HoldState, Mode, DEFAULT_CONNECT_TIMEOUT, DEFAULT_SESSION_TIMEOUT};

/// A read/write lock for synchronous code. Cheap to clone; clones share the session.
///
/// See the [module documentation](self) for the threads it can be used from.
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

/// The runtime of the blocking API: it drives the timers of the futures
/// that [`OwnedRuntime::block_on`] polls. Dropping a runtime inside another
/// runtime's context panics, and the last handle of a blocking lock may go
/// anywhere (a guard moved into a task, say): there it is shut down in the
/// background instead. Nothing the lock needs runs on it after that: the
/// session and the releases of dropped guards run on the library's
/// background thread.
#[derive(Debug)]
struct OwnedRuntime(Option<Runtime>);

impl OwnedRuntime {
    /// Runs `f` to completion, blocking this thread, unless this thread
    /// runs a runtime's tasks (see the [module documentation](self)).
    fn block_on<F: Future>(&self, f: F) -> Result<F::Output, Error> {
        if runs_tasks() {
            return Err(Error::InsideRuntime);
        }
        let Some(rt) = &self.0 else {
            // Taken only when dropped, so never seen here.
            return Err(Error::Runtime(std::io::Error::other("the runtime is gone")));
        };
        let _context = rt.enter();
        Ok(park_until_ready(tokio::task::unconstrained(f)))
    }

    /// Runs `f` for at most `timeout` (see [`OwnedRuntime::block_on`]):
    /// its output, or `on_timeout` if the time ran out first.
    fn block_on_within<F: Future>(
        &self,
        timeout: Duration,
        f: F,
        on_timeout: F::Output,
    ) -> Result<F::Output, Error> {
        self.block_on(async { tokio::time::timeout(timeout, f).await.unwrap_or(on_timeout) })
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

/// True if this thread runs the tasks of a Tokio runtime: `yield_now`
/// hands its wake-up to a scheduler of this thread instead of waking at
/// once (see the [module documentation](self)).
fn runs_tasks() -> bool {
    let woken = Arc::new(Flag::default());
    let waker = Waker::from(woken.clone());
    let yielding = pin!(tokio::task::yield_now());
    yielding.poll(&mut Context::from_waker(&waker)).is_pending() && !woken.0.load(Ordering::Acquire)
}

/// A waker that notes that it was woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

/// A waker that unparks the thread that polls.
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `f` on this thread until it is ready, parking the thread in between.
fn park_until_ready<F: Future>(f: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(output) = f.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

/// Connects a new client session without an async runtime: the blocking
/// [`crate::connect_client_with`]. The session runs on the library's
/// background thread; hand the client to [`SharedLock::with_client`], or
/// to [`crate::SharedLock::builder`] then [`SharedLock::from_async`].
///
/// # Errors
///
/// Those of [`crate::connect_client_with`], and [`Error::InsideRuntime`].
pub fn connect(servers: &str, options: &crate::ConnectOptions) -> Result<zk::Client, Error> {
    let rt = runtime()?;
    rt.block_on(crate::connect_client_with(servers, options))?
}

fn runtime() -> Result<OwnedRuntime, Error> {
    if runs_tasks() {
        return Err(Error::InsideRuntime);
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("zk-rwlock")
        .enable_all()
        .build()
        .map(|rt| OwnedRuntime(Some(rt)))
        .map_err(Error::Runtime)
}

impl SharedLock {
    /// Connects a new session to `servers` and makes a lock on `path`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] before connecting; [`Error::Unreachable`] if no
    /// server answers within [`DEFAULT_CONNECT_TIMEOUT`];
    /// [`Error::ChrootMissing`] if the chroot of `servers` does not exist;
    /// [`Error::InsideRuntime`].
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
        let client = rt
            .block_on(connect_client(servers, session_timeout, DEFAULT_CONNECT_TIMEOUT))?
            .map_err(|e| e.for_lock(path))?;
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

    /// A lock on `path` used through an existing `client`, with the default
    /// identity and ACLs (for others, [`crate::LockBuilder`] and
    /// [`SharedLock::from_async`]). A client of [`connect`] or
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
    /// [`connect_client`]. A client you built with
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

    fn block_on<F: Future>(&self, f: F) -> Result<F::Output, Error> {
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

    /// The contenders in queue order (see [`crate::SharedLock::contenders`]).
    ///
    /// # Errors
    ///
    /// As [`crate::SharedLock::contenders`], and [`Error::InsideRuntime`].
    pub fn contenders(&self) -> Result<Vec<Contender>, Error> {
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
}

/// An async guard that a blocking guard wraps, [`crate::Guard`] or
/// [`crate::MultiGuard`]: what the blocking guard's waits wait on.
trait Wrapped {
    /// [`crate::Guard::suspended`] or [`crate::MultiGuard::suspended`].
    fn until_suspended(&self) -> impl Future<Output = HoldState>;
    /// [`crate::Guard::resumed`] or [`crate::MultiGuard::resumed`].
    fn until_resumed(&self) -> impl Future<Output = HoldState>;
    /// [`crate::Guard::lost`] or [`crate::MultiGuard::lost`].
    fn until_lost(&self) -> impl Future<Output = ()>;
}

impl Wrapped for crate::Guard {
    fn until_suspended(&self) -> impl Future<Output = HoldState> {
        self.suspended()
    }

    fn until_resumed(&self) -> impl Future<Output = HoldState> {
        self.resumed()
    }

    fn until_lost(&self) -> impl Future<Output = ()> {
        self.lost()
    }
}

impl Wrapped for crate::MultiGuard {
    fn until_suspended(&self) -> impl Future<Output = HoldState> {
        self.suspended()
    }

    fn until_resumed(&self) -> impl Future<Output = HoldState> {
        self.resumed()
    }

    fn until_lost(&self) -> impl Future<Output = ()> {
        self.lost()
    }
}

/// The waits of [`Guard`] and [`MultiGuard`] (their `wait_*` methods), on
/// the async guard they wrap: `None` once released, which counts as lost.
impl OwnedRuntime {
    fn wait_suspended(&self, guard: Option<&impl Wrapped>, timeout: Duration) -> Result<HoldState, Error> {
        let Some(guard) = guard else {
            return Ok(HoldState::Lost);
        };
        self.block_on_within(timeout, guard.until_suspended(), HoldState::Held)
    }

    fn wait_resumed(&self, guard: Option<&impl Wrapped>, timeout: Duration) -> Result<HoldState, Error> {
        let Some(guard) = guard else {
            return Ok(HoldState::Lost);
        };
        self.block_on_within(timeout, guard.until_resumed(), HoldState::Suspended)
    }

    fn wait_lost(&self, guard: Option<&impl Wrapped>, timeout: Duration) -> Result<bool, Error> {
        let Some(guard) = guard else { return Ok(true) };
        self.block_on_within(
            timeout,
            async {
                guard.until_lost().await;
                true
            },
            false,
        )
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
        self.release_inner()
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

    fn release_inner(&mut self) -> Result<(), Error> {
        let Some(inner) = self.inner.take() else {
            return Ok(());
        };
        if runs_tasks() {
            // Dropping the async guard releases in the background.
            drop(inner);
            return Err(Error::InsideRuntime);
        }
        self.rt.block_on(inner.release())?
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        match self.release_inner() {
            Ok(()) => {}
            // Dropped where blocking is refused: released in the background.
            Err(Error::InsideRuntime) => {
                tracing::debug!("guard dropped inside a runtime: released in the background")
            }
            Err(e) => tracing::warn!(error = %e, "release on drop failed"),
        }
    }
}

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
    /// twice, or no path); then as [`SharedLock::connect`].
    pub fn connect(servers: &str, parts: &[(&str, Mode)]) -> Result<MultiLock, Error> {
        crate::multi::check_parts(parts)?;
        let rt = runtime()?;
        let client = rt
            .block_on(connect_client(
                servers,
                DEFAULT_SESSION_TIMEOUT,
                DEFAULT_CONNECT_TIMEOUT,
            ))?
            .map_err(|e| match parts.first() {
                Some((path, _)) => e.for_lock(path),
                None => e,
            })?;
        Ok(MultiLock {
            lock: crate::MultiLock::new(client, parts)?,
            rt: Arc::new(rt),
        })
    }

    /// The blocking face of an async multi-lock (see
    /// [`SharedLock::from_async`] for the client it may use).
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

    /// Releases every part and reports the first error (see
    /// [`crate::MultiGuard::release`]).
    ///
    /// # Errors
    ///
    /// As [`crate::MultiGuard::release`], and [`Error::InsideRuntime`].
    pub fn release(mut self) -> Result<(), Error> {
        self.release_inner()
    }

    fn release_inner(&mut self) -> Result<(), Error> {
        let Some(inner) = self.inner.take() else {
            return Ok(());
        };
        if runs_tasks() {
            drop(inner);
            return Err(Error::InsideRuntime);
        }
        self.rt.block_on(inner.release())?
    }
}

impl Drop for MultiGuard {
    fn drop(&mut self) {
        match self.release_inner() {
            Ok(()) => {}
            Err(Error::InsideRuntime) => {
                tracing::debug!("multi-guard dropped inside a runtime: released in the background")
            }
            Err(e) => tracing::warn!(error = %e, "release on drop failed"),
        }
    }
}
