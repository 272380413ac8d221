//! One task per session for what its guards need from it while they hold:
//! the keepers they start late, and the locks whose holders follow its
//! state (their metrics).
//!
//! A guard granted at its first look sets its node's watch only once its
//! hold lasts [`crate::contender::FIRST_WATCH_AFTER`] (see the keeper in
//! `lock/keeper.rs`). Spawning a keeper at every grant to wait out that
//! pause, and aborting it at the release, woke the thread the session runs
//! on twice per grant for nothing when the hold is short, as most are. The
//! hub holds such keepers in a queue instead, in the order of the instants
//! they are due ([`Hub::defer`]), and starts each when it is due, unless
//! its guard let it go first ([`Deferred`]'s drop). Queuing one wakes the
//! hub only if it has nothing queued: while guards keep coming, it wakes
//! once per due instant, not once per guard.
//!
//! Likewise, the holders of a lock move between held and suspended in the
//! metrics as the session's link goes down and up: the hub tells each lock
//! that ever had a holder ([`Hub::link`]), rather than a task per lock
//! started at its first holder and aborted at its last.
//!
//! The hub runs where its session runs ([`background::spawn_near`]), and
//! ends with the session (a terminal state), or with the runtime that
//! runs it; the next use starts another.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::background::{self, AbortOnDrop};
use crate::zk;

/// Work that starts at an instant, on the session's runtime.
type Work = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Something that follows the session's link: told its state, the latest,
/// at each change.
pub(crate) trait Linked: Send + Sync {
    fn link(&self, state: zk::SessionState);
}

/// The session's hub (the module's documentation).
pub(crate) struct Hub {
    queue: Mutex<Queue>,
    /// Woken when work is queued while the hub waits on nothing else.
    queued: Notify,
}

#[derive(Default)]
struct Queue {
    due: VecDeque<(Instant, Arc<Mutex<Slot>>)>,
    /// The hub waits for the front's instant: queuing needs no wake-up.
    armed: bool,
    links: Vec<Weak<dyn Linked>>,
}

/// A deferred work's place: queued, started, or let go.
enum Slot {
    Queued(Work),
    /// Held for its drop, which aborts the work.
    Running {
        _task: AbortOnDrop<()>,
    },
    Dropped,
}

/// The handle of deferred work: dropping it lets the work go (not started
/// if it was not yet; aborted if it was).
pub(crate) struct Deferred(Arc<Mutex<Slot>>);

impl Drop for Deferred {
    fn drop(&mut self) {
        // Dropped outside the lock: the work owns what it was given.
        let old = std::mem::replace(&mut *lock(&self.0), Slot::Dropped);
        drop(old);
    }
}

/// The hubs of the sessions that have one, by session id.
static HUBS: Mutex<Option<HashMap<i64, Arc<Hub>>>> = Mutex::new(None);

/// The hub of `client`'s session, started if it has none (where the
/// session runs); `None` if there is no runtime to run it on.
pub(crate) fn of(client: &zk::Client) -> Option<Arc<Hub>> {
    let id = client.session_id().0;
    let mut hubs = HUBS.lock().unwrap_or_else(PoisonError::into_inner);
    let hubs = hubs.get_or_insert_with(HashMap::new);
    if let Some(hub) = hubs.get(&id) {
        return Some(hub.clone());
    }
    let hub = Arc::new(Hub {
        queue: Mutex::new(Queue::default()),
        queued: Notify::new(),
    });
    // Taken before the hub is reachable: no state change is missed.
    let states = client.state_watcher();
    let leave = Leave {
        id,
        hub: Arc::downgrade(&hub),
    };
    let task = background::spawn_near(id, run(Arc::downgrade(&hub), states, leave))?;
    // Not awaited: it ends with the session or its runtime.
    drop(task);
    hubs.insert(id, hub.clone());
    Some(hub)
}

impl Hub {
    /// Starts `work` at `at` on the session's runtime, unless the returned
    /// handle is dropped first.
    pub(crate) fn defer(&self, at: Instant, work: impl Future<Output = ()> + Send + 'static) -> Deferred {
        let slot = Arc::new(Mutex::new(Slot::Queued(Box::pin(work))));
        let wake = {
            let mut queue = self.queue();
            // In the order of their instants, for all who defer by the
            // same pause: a later one is never due before the front.
            queue.due.push_back((at, slot.clone()));
            !std::mem::replace(&mut queue.armed, true)
        };
        if wake {
            self.queued.notify_one();
        }
        Deferred(slot)
    }

    /// Tells `linked` the session's state at each change from now on, for
    /// as long as it lives.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn link(&self, linked: Weak<dyn Linked>) {
        self.queue().links.push(linked);
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        lock(&self.queue)
    }

    /// Starts the work that is due at `now`, lets go of what was dropped,
    /// and says when the next is due (`None`: nothing queued, and the hub
    /// is no longer armed).
    fn start_due(&self, now: Instant) -> Option<Instant> {
        let mut queue = self.queue();
        while let Some((at, slot)) = queue.due.front() {
            let mut slot = lock(slot);
            match &*slot {
                Slot::Queued(_) if *at > now => return Some(*at),
                Slot::Queued(_) => {
                    if let Slot::Queued(work) = std::mem::replace(&mut *slot, Slot::Dropped) {
                        *slot = Slot::Running {
                            _task: AbortOnDrop(tokio::spawn(work)),
                        };
                    }
                }
                Slot::Running { .. } | Slot::Dropped => {}
            }
            drop(slot);
            queue.due.pop_front();
        }
        queue.armed = false;
        None
    }

    /// Tells the linked their session's `state`.
    fn tell(&self, state: zk::SessionState) {
        let linked: Vec<_> = {
            let mut queue = self.queue();
            queue.links.retain(|l| l.strong_count() > 0);
            queue.links.iter().filter_map(Weak::upgrade).collect()
        };
        for l in linked {
            l.link(state);
        }
    }
}

/// The hub's task: starts deferred work when due, tells the linked of
/// each state change, and ends with the session.
async fn run(hub: Weak<Hub>, mut states: zk::StateWatcher, leave: Leave) {
    let _leave = leave;
    loop {
        let next = match hub.upgrade() {
            Some(hub) => hub.start_due(Instant::now()),
            None => return,
        };
        let queued = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => match hub.upgrade() {
                    Some(hub) => hub.queued.notified().await,
                    None => std::future::pending().await,
                },
            }
        };
        tokio::select! {
            () = queued => {}
            state = states.changed() => {
                if state.is_terminated() {
                    return;
                }
                let Some(hub) = hub.upgrade() else { return };
                // The latest: a change seen late must not undo a later one.
                hub.tell(states.peek_state());
            }
        }
    }
}

/// Takes a hub out of the registry when its task ends (with the session,
/// or dropped with its runtime), unless another took its place.
struct Leave {
    id: i64,
    hub: Weak<Hub>,
}

impl Drop for Leave {
    fn drop(&mut self) {
        let mut hubs = HUBS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(hubs) = hubs.as_mut() {
            if hubs
                .get(&self.id)
                .is_some_and(|h| Weak::ptr_eq(&Arc::downgrade(h), &self.hub))
            {
                hubs.remove(&self.id);
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    fn hub() -> Hub {
        Hub {
            queue: Mutex::new(Queue::default()),
            queued: Notify::new(),
        }
    }

    /// Work that counts its start in `started`, then waits forever.
    fn counting(started: &Arc<AtomicUsize>) -> impl Future<Output = ()> + Send + 'static {
        let started = started.clone();
        async move {
            started.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<()>().await;
        }
    }

    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn deferred_work_starts_when_due_and_work_let_go_first_never_starts() {
        let hub = hub();
        let started = Arc::new(AtomicUsize::new(0));
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let first = hub.defer(ms(100), counting(&started));
        let dropped = hub.defer(ms(101), counting(&started));
        let _third = hub.defer(ms(102), counting(&started));
        drop(dropped);

        assert_eq!(hub.start_due(ms(99)), Some(ms(100)), "nothing is due yet");
        settle().await;
        assert_eq!(started.load(Ordering::SeqCst), 0);

        assert_eq!(
            hub.start_due(ms(101)),
            Some(ms(102)),
            "the first started, the dropped one gone"
        );
        settle().await;
        assert_eq!(started.load(Ordering::SeqCst), 1);
        assert_eq!(hub.queue().due.len(), 1);

        assert_eq!(
            hub.start_due(ms(102)),
            None,
            "all started: the hub is no longer armed"
        );
        settle().await;
        assert_eq!(started.load(Ordering::SeqCst), 2);
        assert!(!hub.queue().armed);
        drop(first);
    }

    #[tokio::test]
    async fn dropping_the_handle_of_started_work_aborts_it() {
        let hub = hub();
        let ended = Arc::new(AtomicUsize::new(0));
        struct Ends(Arc<AtomicUsize>);
        impl Drop for Ends {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let ends = Ends(ended.clone());
        let handle = hub.defer(Instant::now(), async move {
            let _ends = ends;
            std::future::pending::<()>().await;
        });
        hub.start_due(Instant::now());
        settle().await;
        assert_eq!(ended.load(Ordering::SeqCst), 0, "running");
        drop(handle);
        settle().await;
        assert_eq!(ended.load(Ordering::SeqCst), 1, "aborted");
    }

    /// True if a wake-up of the hub is stored (polled once, not waited).
    fn woken(hub: &Hub) -> bool {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        std::pin::pin!(hub.queued.notified()).poll(&mut cx).is_ready()
    }

    #[test]
    fn only_work_queued_on_an_empty_queue_wakes_the_hub() {
        let hub = hub();
        let later = Instant::now() + Duration::from_secs(60);
        let _a = hub.defer(later, async {});
        assert!(woken(&hub), "the first wakes it");
        let _b = hub.defer(later, async {});
        assert!(!woken(&hub), "the hub is armed: no wake-up");
        drop((_a, _b));
        assert_eq!(hub.start_due(Instant::now()), None, "all let go: no longer armed");
        let _c = hub.defer(later, async {});
        assert!(woken(&hub), "queued on an empty queue again: woken");
    }
}
