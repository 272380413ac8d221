//! The synchronous API: the same lock for code without an async runtime.
//!
//! [`SharedLock`] here owns a small runtime (one worker thread) for its
//! timers; the ZooKeeper session it connects runs on that thread, and on
//! the library's background thread once the lock's runtime is gone, so
//! heartbeats keep flowing while the calling thread does other work.
//! Guards release when dropped.
//!
//! # Where it can be called
//!
//! A call blocks the calling thread until the lock's work, which runs on
//! the library's threads, is done. It works from any thread that does not
//! run a Tokio runtime's tasks: a plain thread, a closure given to
//! [`spawn_blocking`] (of any runtime, `current_thread` included) or to
//! [`block_in_place`], and the thread that drives a multi-thread runtime's
//! `block_on` (it runs no tasks).
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
//! handle is set too ([`Handle::try_current`] succeeds), so that cannot
//! tell. Tokio itself decides it when a task yields: [`yield_now`] hands
//! its wake-up to the scheduler that runs on the current thread, to be
//! delivered when the task has yielded, and wakes at once on a thread that
//! runs no scheduler. The check polls `yield_now` once with a waker of its
//! own and looks whether it was woken at once. The lock's futures are then
//! polled on the calling thread, with a plain thread park between polls
//! (not `Runtime::block_on`, which refuses to start where a runtime's
//! `block_on` already runs), outside Tokio's cooperative budget, in the
//! context of this module's runtime for their timers.
//!
//! Not seen by the check: a [`LocalSet`] driven from a multi-thread
//! runtime's `block_on` runs its tasks on that thread without a scheduler
//! of the runtime there; blocking inside it stops them.
//!
//! [`spawn_blocking`]: https://docs.rs/tokio/1/tokio/task/fn.spawn_blocking.html
//! [`block_in_place`]: https://docs.rs/tokio/1/tokio/task/fn.block_in_place.html
//! [`Handle::try_current`]: https://docs.rs/tokio/1/tokio/runtime/struct.Handle.html#method.try_current
//! [`yield_now`]: https://docs.rs/tokio/1/tokio/task/fn.yield_now.html
//! [`LocalSet`]: https://docs.rs/tokio/1/tokio/task/struct.LocalSet.html
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
use std::time::Duration;

use tokio::runtime::Runtime;

mod election;
mod lock;
mod multi;
mod semaphore;
pub use election::{Election, Leadership, Observer};
pub use lock::{Guard, ReentrantLock, SharedLock, Transaction};
pub use multi::{MultiGuard, MultiLock};
pub use semaphore::{Permit, Semaphore};

use crate::connect::connect_client;
use crate::error::Error;
use crate::{zk, HoldState, DEFAULT_CONNECT_TIMEOUT};

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
    // On the background thread from the start: `rt` ends when this
    // returns, and a session on it would move there at once.
    let options = options.clone().session_on_own_thread(true);
    rt.block_on(crate::connect_client_with(servers, &options))?
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

/// A runtime for a blocking lock and a new session on it to `servers`
/// (with `session_timeout` and the default connect timeout); a failure to
/// connect is named for the lock directory `lock`, if any.
fn connect_runtime(
    servers: &str,
    session_timeout: Duration,
    lock: Option<&str>,
) -> Result<(OwnedRuntime, zk::Client), Error> {
    let rt = runtime()?;
    let client = rt
        .block_on(connect_client(servers, session_timeout, DEFAULT_CONNECT_TIMEOUT))?
        .map_err(|e| match lock {
            Some(path) => e.for_lock(path),
            None => e,
        })?;
    Ok((rt, client))
}

/// An async guard that a blocking guard wraps, [`crate::Guard`] or
/// [`crate::MultiGuard`]: what the blocking guard's waits wait on, and its
/// release.
trait Wrapped {
    /// [`crate::Guard::suspended`] or [`crate::MultiGuard::suspended`].
    fn until_suspended(&self) -> impl Future<Output = HoldState>;
    /// [`crate::Guard::resumed`] or [`crate::MultiGuard::resumed`].
    fn until_resumed(&self) -> impl Future<Output = HoldState>;
    /// [`crate::Guard::lost`] or [`crate::MultiGuard::lost`].
    fn until_lost(&self) -> impl Future<Output = ()>;
    /// [`crate::Guard::release`] or [`crate::MultiGuard::release`].
    fn released(self) -> impl Future<Output = Result<(), Error>>;
}

/// The same methods of both async guards.
macro_rules! wrapped {
    ($($guard:ty),*) => {$(
        impl Wrapped for $guard {
            fn until_suspended(&self) -> impl Future<Output = HoldState> {
                self.suspended()
            }

            fn until_resumed(&self) -> impl Future<Output = HoldState> {
                self.resumed()
            }

            fn until_lost(&self) -> impl Future<Output = ()> {
                self.lost()
            }

            fn released(self) -> impl Future<Output = Result<(), Error>> {
                self.release()
            }
        }
    )*};
}

wrapped!(crate::Guard, crate::MultiGuard);

/// The waits and the release of [`Guard`] and [`MultiGuard`] (their
/// `wait_*` methods, `release` and drop), on the async guard they wrap:
/// `None` once released, which counts as lost.
impl OwnedRuntime {
    /// Releases `guard` and reports the outcome; refused inside a runtime
    /// ([`Error::InsideRuntime`]), where dropping the async guard releases
    /// it in the background.
    fn release(&self, guard: Option<impl Wrapped>) -> Result<(), Error> {
        let Some(guard) = guard else {
            return Ok(());
        };
        if runs_tasks() {
            // Dropping the async guard releases in the background.
            drop(guard);
            return Err(Error::InsideRuntime);
        }
        self.block_on(guard.released())?
    }

    /// The release when a blocking guard (`what`) is dropped: a failure is
    /// logged.
    fn release_on_drop(&self, guard: Option<impl Wrapped>, what: &str) {
        match self.release(guard) {
            Ok(()) => {}
            // Dropped where blocking is refused: released in the background.
            Err(Error::InsideRuntime) => {
                tracing::debug!("{what} dropped inside a runtime: released in the background")
            }
            Err(e) => tracing::warn!(error = %e, "release on drop failed"),
        }
    }

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
