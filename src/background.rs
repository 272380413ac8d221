//! The library's background thread, and the work it tracks.
//!
//! Some work must outlive the code that started it: the release of a guard
//! that was dropped, the deletion of a cancelled or timed-out acquire's
//! node, and the ZooKeeper session itself. If that work died with the
//! caller's runtime, a guard dropped as `#[tokio::main]` returns would hold
//! the lock until the session expired. It therefore runs on one thread of
//! the library's own, started on first use, with a current-thread runtime
//! that lives as long as the process, or, for a session the library
//! connected inside a multi-thread runtime, on that runtime until it drops
//! the session, which then moves here ([`Placement`]): a session on the
//! caller's runtime costs no hop to another thread per request.
//!
//! Each lock counts the work it started there ([`Tasks`]); when the last
//! handle of a lock goes away, it waits (briefly, and only while connected)
//! for that work to finish, so that a program that drops its guards and
//! returns from `main` has released them by the time it exits. A session
//! the caller connected runs on the caller's runtime, and the wait needs
//! that runtime to go on meanwhile: see [`may_block_for_caller_session`].
//!
//! A guard's watch on its node runs where its session runs
//! ([`spawn_beside`]: on the caller's runtime while the session runs there,
//! going on on the background thread if that runtime ends first), and
//! is not counted: it is no work to wait for, it ends with the guard.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tracing::warn;

/// The handle of the background runtime, started on first use; `None` if
/// the thread could not be started.
pub(crate) fn handle() -> Option<&'static Handle> {
    static BACKGROUND: OnceLock<Option<Handle>> = OnceLock::new();
    BACKGROUND
        .get_or_init(|| {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    warn!(error = %e, "cannot start the background runtime");
                    return None;
                }
            };
            let handle = rt.handle().clone();
            let started = std::thread::Builder::new()
                .name("zk-rwlock-background".to_owned())
                .spawn(move || rt.block_on(std::future::pending::<()>()));
            match started {
                Ok(_) => Some(handle),
                Err(e) => {
                    warn!(error = %e, "cannot start the background thread");
                    None
                }
            }
        })
        .as_ref()
}

/// The sessions the library connected, by id, each with where it runs: on
/// the background thread, or on a caller's multi-thread runtime from which
/// it moves to the background thread when that runtime drops it
/// ([`Placement`]).
static SESSIONS: Mutex<Option<HashMap<i64, Arc<Placement>>>> = Mutex::new(None);

/// Where a session the library connected runs, and the work to wait for
/// when it moves.
#[derive(Default)]
pub(crate) struct Placement {
    /// Where it runs, and what its move waits for: one lock, so that a
    /// lock's last handle either leaves its work to the move or sees the
    /// move done, never neither.
    at: Mutex<At>,
    /// The session's state, once it is registered.
    states: OnceLock<crate::zk::StateWatcher>,
}

#[derive(Default)]
struct At {
    /// The caller's runtime that runs it; `None` on the background thread
    /// (from the start, or since it moved there).
    runtime: Option<tokio::runtime::Id>,
    /// The work of locks whose last handle was dropped while that runtime
    /// was shutting down: the move waits for it ([`Placement::moved`]).
    flush: Vec<Arc<Tasks>>,
}

impl Placement {
    /// A session that runs on the background thread from the start.
    pub(crate) fn background() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A session that runs on the caller's runtime `runtime`.
    pub(crate) fn caller(runtime: tokio::runtime::Id) -> Arc<Self> {
        Arc::new(Self {
            at: Mutex::new(At {
                runtime: Some(runtime),
                flush: Vec::new(),
            }),
            states: OnceLock::new(),
        })
    }

    fn at(&self) -> std::sync::MutexGuard<'_, At> {
        self.at.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The caller's runtime that runs the session; `None` on the background
    /// thread.
    pub(crate) fn runtime(&self) -> Option<tokio::runtime::Id> {
        self.at().runtime
    }

    /// True if the session runs on the background thread.
    pub(crate) fn on_background(&self) -> bool {
        self.runtime().is_none()
    }

    /// Leaves `tasks` for the session's move to wait for; false if the
    /// session has moved already (wait for them here, then).
    pub(crate) fn flush_at_move(&self, tasks: Arc<Tasks>) -> bool {
        let mut at = self.at();
        if at.runtime.is_none() {
            return false;
        }
        at.flush.push(tasks);
        true
    }

    /// The runtime that served the session dropped it, and it goes on on
    /// the background thread (`serve`, spawned there). A runtime drops its
    /// tasks as it shuts down: a lock dropped by one of them before the
    /// session's turn could not wait for its releases (they need the
    /// session, whose runtime no longer runs it), and left them here; this
    /// thread, the one that drops the session, waits for them now, so that
    /// a program that ends its runtime with guards held has released them
    /// when the runtime is gone.
    pub(crate) fn moved(&self, serve: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>) {
        let flush = {
            let mut at = self.at();
            at.runtime = None;
            std::mem::take(&mut at.flush)
        };
        match handle() {
            Some(background) => drop(background.spawn(serve)),
            None => warn!("no background thread to serve a session whose runtime dropped it: it ends"),
        }
        let connected = || {
            self.states
                .get()
                .is_some_and(|states| states.peek_state() == crate::zk::SessionState::SyncConnected)
        };
        let until = Instant::now() + FLUSH_TIMEOUT;
        for tasks in flush {
            tasks.wait_idle(until.saturating_duration_since(Instant::now()), connected);
        }
    }
}

/// How long the last handle of a lock waits, while connected, for the
/// releases and deletions it started in the background.
pub(crate) const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// Notes that `client`'s session is one the library connected, placed as
/// `placement` says, until it ends: a task on the background thread
/// follows its state and takes the id out of the registry once the state
/// is terminal (closed, expired, or refused credentials), so that the
/// registry holds the live sessions only. A session never leaves a
/// terminal state, so `runs_session` cannot answer no for a live session;
/// after the end it answers no, and a dead session has nothing left to
/// run anywhere.
pub(crate) fn register_session(client: &crate::zk::Client, placement: Arc<Placement>) {
    let id = client.session_id().0;
    // Taken before the id goes in: a state change after this point is seen.
    let mut states = client.state_watcher();
    // Set once, here: a watcher holds no part of the session that keeps it open.
    drop(placement.states.set(client.state_watcher()));
    if let Ok(mut sessions) = SESSIONS.lock() {
        sessions.get_or_insert_with(HashMap::new).insert(id, placement);
    }
    let follow = async move {
        let mut state = states.peek_state();
        while !state.is_terminated() {
            state = states.changed().await;
        }
        forget_session(id);
    };
    match handle() {
        Some(background) => drop(background.spawn(follow)),
        // Not registered without the background thread either (the caller
        // checks); nothing to follow.
        None => forget_session(id),
    }
}

/// Takes the session `id` out of the registry: it has ended.
fn forget_session(id: i64) {
    if let Ok(mut sessions) = SESSIONS.lock() {
        if let Some(s) = sessions.as_mut() {
            s.remove(&id);
        }
    }
}

/// Where the session `id` runs, if the library connected it.
fn placement(id: i64) -> Option<Arc<Placement>> {
    SESSIONS
        .lock()
        .ok()
        .and_then(|sessions| sessions.as_ref().and_then(|s| s.get(&id).cloned()))
}

/// How many sessions the registry holds: those connected by
/// [`connect_client`](crate::connect_client) that have not ended. For the
/// churn test, which checks that it does not grow.
#[doc(hidden)]
pub fn registered_sessions() -> usize {
    SESSIONS
        .lock()
        .map_or(0, |sessions| sessions.as_ref().map_or(0, HashMap::len))
}

/// True if the library connected the session `id`: it runs on the
/// background thread, or on a caller's runtime from which it moves there
/// when that runtime ends. Either way it outlives the runtime that runs it:
/// work that needs it may run on the background thread.
pub(crate) fn runs_session(id: i64) -> bool {
    placement(id).is_some()
}

/// How a lock's last handle may wait for the work it left running on the
/// session `id`: see [`Wait`].
pub(crate) fn how_to_wait(id: i64) -> Wait {
    let Some(placement) = placement(id) else {
        return Wait::CallerSession;
    };
    let Some(runs_on) = placement.runtime() else {
        return Wait::Block;
    };
    match Handle::try_current() {
        // Not a worker of any runtime: blocking this thread holds nothing
        // back.
        Err(_) => Wait::Block,
        // Another runtime's thread. (A task of the session's runtime that
        // entered another runtime's handle is taken for one too, and may
        // hold back the worker that would drive the session, for at most
        // the wait's bound: `block_in_place` there leaves tokio's worker
        // unable to finish the task.)
        Ok(here) if here.id() != runs_on => Wait::Block,
        Ok(here) if shutting_down(&here) => Wait::AtTheMove(placement),
        Ok(_) => Wait::BlockInPlace,
    }
}

/// How a lock's last handle waits for its pending work.
pub(crate) enum Wait {
    /// Blocks this thread: the session runs elsewhere.
    Block,
    /// Blocks with [`tokio::task::block_in_place`]: this may be a worker of
    /// the runtime that runs the session, whose other workers drive it
    /// meanwhile.
    BlockInPlace,
    /// The runtime is shutting down, and the session it runs moves when
    /// its turn comes: the move waits ([`Placement::moved`]).
    AtTheMove(Arc<Placement>),
    /// A session the caller connected.
    CallerSession,
}

/// Sleeps for `pause` on the background runtime's timer (on the current
/// runtime's without a background thread): work that may be handed from
/// the caller's runtime to the background one (a release whose future was
/// dropped, [`Handover`]) must hold no timer of a runtime that may shut
/// down under it, which would fail its next poll.
pub(crate) async fn pause(pause: Duration) {
    match handle() {
        // The timer made inside the task: `sleep` takes the timer of the
        // runtime current where it is called.
        Some(background) => {
            drop(AbortOnDrop(background.spawn(async move { tokio::time::sleep(pause).await })).await)
        }
        None => tokio::time::sleep(pause).await,
    }
}

/// Work awaited where it was called, handed to the background runtime
/// ([`Tasks::spawn`]) if its future is dropped before it ends: a release
/// cut short by a timeout around it, or by its runtime shutting down,
/// still runs to its end. The work must be movable between runtimes: no
/// timer of the caller's runtime ([`pause`]).
pub(crate) struct Handover<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    work: Option<std::pin::Pin<Box<F>>>,
    tasks: Arc<Tasks>,
}

impl<F> Handover<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    pub(crate) fn new(work: F, tasks: Arc<Tasks>) -> Self {
        Self {
            work: Some(Box::pin(work)),
            tasks,
        }
    }
}

impl<F> Future for Handover<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        // Polled again after its end (which a future's contract leaves
        // open): nothing more to give.
        let Some(work) = self.work.as_mut() else {
            return std::task::Poll::Pending;
        };
        let output = std::task::ready!(work.as_mut().poll(cx));
        self.work = None;
        std::task::Poll::Ready(output)
    }
}

impl<F> Drop for Handover<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn drop(&mut self) {
        if let Some(work) = self.work.take() {
            // A handle to a task nobody awaits: the work is counted until it ends.
            drop(self.tasks.spawn(work));
        }
    }
}

/// Runs `work` where the session `id` runs, uncounted: work that lasts as
/// long as something else does (a guard's watch on its node), not work to
/// wait for. On the background runtime for a session the library connected
/// (it runs there, or moves there when its runtime ends);
/// otherwise on the current runtime, where the caller's session most likely
/// runs: work that uses a session need not outlive the runtime that drives
/// it (a watch whose session's task is dropped under it ends with the
/// session closed: it can never fire), and there it ends with that runtime. On the background
/// runtime if there is no current one; `None` if there is neither.
pub(crate) fn spawn_near<F>(id: i64, work: F) -> Option<tokio::task::JoinHandle<F::Output>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let near = if runs_session(id) {
        handle().cloned()
    } else {
        Handle::try_current().ok().or_else(|| handle().cloned())
    };
    near.map(|handle| handle.spawn(work))
}

/// Runs the work `make` returns where the session `id` runs now: on the
/// caller's runtime while it runs the session (no hop to another thread
/// per event), else as [`spawn_near`]. On the caller's runtime, `make` is
/// given a [`Home`]: if that runtime drops the work unfinished (it ends,
/// and the session moves to the background thread), the work's drop may
/// hand what it still has to do to the background thread with it. Dropping
/// the returned handle ends the work wherever it runs. `None` if there is
/// no runtime to run it on.
pub(crate) fn spawn_beside<F>(id: i64, make: impl FnOnce(Option<Home>) -> F) -> Option<Beside>
where
    F: Future<Output = ()> + Send + 'static,
{
    let here = Handle::try_current().ok();
    let beside = here.filter(|here| placement(id).and_then(|p| p.runtime()) == Some(here.id()));
    let Some(here) = beside else {
        return spawn_near(id, make(None)).map(|task| Beside::Near {
            _task: AbortOnDrop(task),
        });
    };
    let homed = Arc::new(Mutex::new(Homed::default()));
    let task = here.spawn(make(Some(Home(Arc::downgrade(&homed)))));
    let mut at = homed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // Cancelled at once (the runtime is shutting down): it went on already.
    if at.task.is_none() {
        at.task = Some(AbortOnDrop(task));
    }
    drop(at);
    Some(Beside::Homed(homed))
}

/// Work started by [`spawn_beside`]; dropping it ends the work.
pub(crate) enum Beside {
    /// Where [`spawn_near`] put it.
    Near { _task: AbortOnDrop<()> },
    /// On the caller's runtime, or gone on on the background thread.
    Homed(Arc<Mutex<Homed>>),
}

/// Where [`spawn_beside`]'s work runs, and whether its handle is gone.
#[derive(Default)]
pub(crate) struct Homed {
    stopped: bool,
    task: Option<AbortOnDrop<()>>,
}

impl Drop for Beside {
    fn drop(&mut self) {
        let Beside::Homed(homed) = self else { return };
        let task = {
            let mut homed = homed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            homed.stopped = true;
            homed.task.take()
        };
        // Aborted outside the lock: the work may be dropped at once, and
        // its [`Home::go_on`] takes the lock.
        drop(task);
    }
}

/// What work on the caller's runtime that [`spawn_beside`] started keeps,
/// to go on on the background thread if that runtime drops it.
pub(crate) struct Home(std::sync::Weak<Mutex<Homed>>);

impl Home {
    /// Runs `work` on the background thread in place of the work dropped
    /// unfinished, unless its handle was dropped first; true if it does.
    /// (Called from that work's drop: nothing to wait for.)
    pub(crate) fn go_on(self, work: impl Future<Output = ()> + Send + 'static) -> bool {
        let Some(homed) = self.0.upgrade() else {
            return false;
        };
        let mut homed = homed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if homed.stopped {
            return false;
        }
        match handle() {
            Some(background) => {
                homed.task = Some(AbortOnDrop(background.spawn(work)));
                true
            }
            None => {
                warn!("no background thread to carry on the work of a runtime that ended");
                false
            }
        }
    }
}

/// Whether this thread may block until work that needs a session run by
/// the caller's runtime is done: `Err` says why not.
///
/// Yes inside a multi-thread runtime (a worker, its `block_on`, or a
/// `spawn_blocking` thread) that is not shutting down: the caller blocks
/// with [`tokio::task::block_in_place`], and the runtime's other workers
/// drive the session meanwhile. No on a current-thread runtime (its one
/// thread may be the one that drives the session), in a runtime that is
/// shutting down (its tasks, the session's among them, are being
/// dropped), or outside any runtime (the runtime that drives the session
/// may not be running).
pub(crate) fn may_block_for_caller_session() -> Result<(), &'static str> {
    let Ok(handle) = Handle::try_current() else {
        return Err("no runtime runs on this thread, and the one that drives the session may not be running");
    };
    match handle.runtime_flavor() {
        tokio::runtime::RuntimeFlavor::MultiThread if shutting_down(&handle) => {
            Err("its runtime is shutting down")
        }
        tokio::runtime::RuntimeFlavor::MultiThread => Ok(()),
        _ => Err("this thread runs a current-thread runtime, whose thread the session may need"),
    }
}

/// True if the runtime of `handle` is shutting down: a task spawned there
/// is cancelled at once instead of being scheduled.
pub(crate) fn shutting_down(handle: &Handle) -> bool {
    let mut probe = std::pin::pin!(tokio::task::unconstrained(handle.spawn(async {})));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    matches!(probe.as_mut().poll(&mut cx), std::task::Poll::Ready(Err(e)) if e.is_cancelled())
}

/// Work of one lock that runs in the background: counted, so that the
/// lock's last handle can wait for it.
#[derive(Default)]
pub(crate) struct Tasks {
    running: Mutex<Count>,
    idle: Condvar,
}

/// How many tasks run, and how many threads wait for none to run.
#[derive(Default)]
struct Count {
    running: usize,
    /// Only with a waiter is the end of the last task signalled: a
    /// `notify_all` costs a system call even when nobody waits, and most
    /// tasks (a guard's release) end with nobody waiting.
    waiting: usize,
}

impl Tasks {
    /// Runs `work` on the background runtime (on the current runtime if the
    /// background thread cannot be started; nowhere, with a warning, if
    /// there is neither). Returns a handle to await its result.
    pub(crate) fn spawn<T, F>(self: &Arc<Self>, work: F) -> Option<tokio::task::JoinHandle<T>>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let handle = match handle() {
            Some(handle) => handle.clone(),
            None => match Handle::try_current() {
                Ok(handle) => handle,
                Err(_) => {
                    warn!("no runtime to run background work on: it is dropped");
                    return None;
                }
            },
        };
        self.add(1);
        let tasks = self.clone();
        let done = Done(tasks);
        Some(handle.spawn(async move {
            let result = work.await;
            drop(done);
            result
        }))
    }

    fn add(&self, n: isize) {
        if let Ok(mut count) = self.running.lock() {
            count.running = count.running.saturating_add_signed(n);
            if count.running == 0 && count.waiting > 0 {
                self.idle.notify_all();
            }
        }
    }

    /// How many of these tasks are running.
    pub(crate) fn running(&self) -> usize {
        self.running.lock().map_or(0, |count| count.running)
    }

    /// Blocks until no work is running, `timeout` has passed, or
    /// `keep_waiting` turns false (checked every few milliseconds).
    pub(crate) fn wait_idle(&self, timeout: Duration, keep_waiting: impl Fn() -> bool) {
        let until = Instant::now() + timeout;
        let Ok(mut count) = self.running.lock() else {
            return;
        };
        count.waiting += 1;
        while count.running > 0 && keep_waiting() {
            let now = Instant::now();
            if now >= until {
                break;
            }
            let slice = (until - now).min(Duration::from_millis(20));
            count = match self.idle.wait_timeout(count, slice) {
                Ok((guard, _)) => guard,
                // Poisoned: nobody else counts on `waiting` being right.
                Err(_) => return,
            };
        }
        count.waiting = count.waiting.saturating_sub(1);
    }
}

/// Marks one background task done when dropped: also when the task is
/// cancelled with its runtime.
struct Done(Arc<Tasks>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.add(-1);
    }
}

/// A background task that is cancelled when its handle is dropped.
pub(crate) struct AbortOnDrop<T>(pub(crate) tokio::task::JoinHandle<T>);

impl<T> std::future::Future for AbortOnDrop<T> {
    type Output = Result<T, tokio::task::JoinError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    use std::time::{Duration, Instant};

    /// A retry's pause begun on a caller's runtime that then shuts down
    /// lasts its whole length on the background thread (its timer is that
    /// thread's), as a release handed there needs: a timer of the dead
    /// runtime would fail its next poll, and end the pause at once.
    #[test]
    fn a_pause_outlives_the_runtime_it_began_on() {
        const PAUSE: Duration = Duration::from_millis(300);
        let caller = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let began = Instant::now();
        let mut pause = Box::pin(super::pause(PAUSE));
        caller.block_on(async {
            let mut cx = Context::from_waker(Waker::noop());
            assert!(pause.as_mut().poll(&mut cx) == Poll::Pending);
        });
        drop(caller);
        let observer = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        observer.block_on(async { (&mut pause).await });
        let took = began.elapsed();
        assert!(took >= PAUSE, "the pause ended after {took:?}, not {PAUSE:?}");
    }

    /// Work left to a session's move is waited for by the move; once the
    /// session has moved, nothing is left to it (the lock's last handle
    /// waits itself), so no work is left behind unwaited.
    #[test]
    fn work_is_left_to_a_move_only_before_it() {
        let caller = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let placement = super::Placement::caller(caller.handle().id());
        assert!(!placement.on_background());
        let tasks = std::sync::Arc::new(super::Tasks::default());
        assert!(placement.flush_at_move(tasks.clone()), "left to a move to come");
        placement.moved(Box::pin(async {}));
        assert!(placement.on_background());
        assert!(
            placement.at().flush.is_empty(),
            "the move took what was left to it"
        );
        assert!(!placement.flush_at_move(tasks), "left to a move that is over");
    }
}
