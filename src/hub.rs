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
//! Only a session the library connected has a hub (it runs on the
//! background thread, or moves there when the caller's runtime that runs
//! it ends): the hub runs on the background thread, and ends with the
//! session (a terminal state), starting what is still queued (the keepers'
//! reads fail, and their guards are counted lost). A session the caller connected runs on the
//! caller's runtimes, any of which may end first: each of its guards keeps
//! a keeper task of its own, on the runtime current at its grant, and each
//! lock's first holder a task that follows the link, as they need.

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
    /// How many links were left at the last pruning.
    pruned_to: usize,
    /// The session ended: work is started at once, not queued.
    closed: bool,
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

/// The hub of `client`'s session, started if it has none; `None` for a
/// session the library did not connect (a session
/// the caller connected runs on the caller's runtimes, which may end before
/// it: its guards keep a task each, as they need), or that has ended.
pub(crate) fn of(client: &zk::Client) -> Option<Arc<Hub>> {
    let id = client.session_id().0;
    if !background::runs_session(id) || client.state().is_terminated() {
        return None;
    }
    if let Some(hub) = registered(id) {
        return Some(hub);
    }
    let background = background::handle()?;
    let hub = Arc::new(Hub {
        queue: Mutex::new(Queue::default()),
        queued: Notify::new(),
    });
    // Taken before the hub is reachable: no state change is missed.
    let states = client.state_watcher();
    {
        let mut hubs = hubs();
        let hubs = hubs.get_or_insert_with(HashMap::new);
        if let Some(first) = hubs.get(&id) {
            return Some(first.clone());
        }
        hubs.insert(id, hub.clone());
    }
    let leave = Leave {
        id,
        hub: Arc::downgrade(&hub),
    };
    // Spawned outside the registry's lock, which a task dropped at once
    // (its `Leave`) would take. Not awaited: it ends with the session.
    drop(background.spawn(run(Arc::downgrade(&hub), states, leave)));
    Some(hub)
}

/// How many sessions have a hub: those that have had a guard and have not
/// ended. For the churn test, which checks that it does not grow.
#[doc(hidden)]
pub fn session_hubs() -> usize {
    hubs().as_ref().map_or(0, HashMap::len)
}

/// The registry, locked.
fn hubs() -> MutexGuard<'static, Option<HashMap<i64, Arc<Hub>>>> {
    HUBS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The hub the session `id` has, if any.
fn registered(id: i64) -> Option<Arc<Hub>> {
    hubs().as_ref().and_then(|hubs| hubs.get(&id).cloned())
}

impl Hub {
    /// Starts `work` at `at` on the session's runtime, unless the returned
    /// handle is dropped first.
    pub(crate) fn defer(&self, at: Instant, work: impl Future<Output = ()> + Send + 'static) -> Deferred {
        let slot = Arc::new(Mutex::new(Slot::Queued(Box::pin(work))));
        let wake = {
            let mut queue = self.queue();
            if queue.closed {
                drop(queue);
                // What the work learns of the ended session is still news
                // (a keeper's read fails, and the guard is counted lost).
                if let Some(background) = background::handle() {
                    start(&slot, |work| background.spawn(work));
                }
                return Deferred(slot);
            }
            // In the order of their instants: from the back, where a new
            // one nearly always goes (all defer by the same pause).
            let place = queue
                .due
                .iter()
                .rposition(|(due, _)| *due <= at)
                .map_or(0, |i| i + 1);
            queue.due.insert(place, (at, slot.clone()));
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
        let mut queue = self.queue();
        // The locks dropped since go when the list has doubled: a session
        // that makes a lock per request does not keep them all.
        if queue.links.len() >= queue.pruned_to.saturating_mul(2).max(8) {
            queue.links.retain(|l| l.strong_count() > 0);
            queue.pruned_to = queue.links.len();
        }
        queue.links.push(linked);
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
            if *at > now && matches!(*lock(slot), Slot::Queued(_)) {
                return Some(*at);
            }
            start(slot, tokio::spawn);
            queue.due.pop_front();
        }
        queue.armed = false;
        None
    }

    /// The session ended: the work queued starts now (each waits out the
    /// rest of its pause itself), and work deferred from now on at once.
    fn close(&self) {
        let mut queue = self.queue();
        queue.closed = true;
        for (_, slot) in queue.due.drain(..) {
            start(&slot, tokio::spawn);
        }
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

/// Starts the work in `slot` with `spawn`, if it is queued.
fn start(slot: &Mutex<Slot>, spawn: impl FnOnce(Work) -> tokio::task::JoinHandle<()>) {
    let mut slot = lock(slot);
    if let Slot::Queued(work) = std::mem::replace(&mut *slot, Slot::Dropped) {
        *slot = Slot::Running {
            _task: AbortOnDrop(spawn(work)),
        };
    }
}

/// The hub's task: starts deferred work when due, tells the linked of
/// each state change, and ends with the session, when it starts what is
/// still queued.
async fn run(hub: Weak<Hub>, states: zk::StateWatcher, leave: Leave) {
    let _leave = leave;
    serve(&hub, states).await;
    if let Some(hub) = hub.upgrade() {
        hub.close();
    }
}

/// [`run`] until the session ends.
async fn serve(hub: &Weak<Hub>, mut states: zk::StateWatcher) {
    if states.peek_state().is_terminated() {
        return;
    }
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
        if let Some(hubs) = hubs().as_mut() {
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

    #[tokio::test]
    async fn work_deferred_out_of_order_starts_in_the_order_of_its_instants() {
        let hub = hub();
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let started = Arc::new(AtomicUsize::new(0));
        let _late = hub.defer(ms(200), counting(&started));
        let _early = hub.defer(ms(100), counting(&started));
        assert_eq!(
            hub.start_due(ms(150)),
            Some(ms(200)),
            "the earlier one went first"
        );
        settle().await;
        assert_eq!(started.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_closed_hub_starts_what_is_queued_and_what_comes_later_at_once() {
        let hub = hub();
        let started = Arc::new(AtomicUsize::new(0));
        let later = Instant::now() + Duration::from_secs(60);
        let _queued = hub.defer(later, counting(&started));
        let dropped = hub.defer(later, counting(&started));
        drop(dropped);
        hub.close();
        assert!(hub.queue().due.is_empty());
        let _after = hub.defer(later, counting(&started));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while started.load(Ordering::SeqCst) < 2 {
            assert!(std::time::Instant::now() < deadline, "both started");
            tokio::task::yield_now().await;
        }
        settle().await;
        assert_eq!(started.load(Ordering::SeqCst), 2, "not the one let go");
    }

    /// Counts what it is told.
    struct Told(AtomicUsize);
    impl Linked for Told {
        fn link(&self, _: zk::SessionState) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_live_linked_are_told_and_the_dropped_forgotten() {
        let hub = hub();
        let live = Arc::new(Told(AtomicUsize::new(0)));
        let live_dyn: Arc<dyn Linked> = live.clone();
        hub.link(Arc::downgrade(&live_dyn));
        let gone: Arc<dyn Linked> = Arc::new(Told(AtomicUsize::new(0)));
        hub.link(Arc::downgrade(&gone));
        drop(gone);
        hub.tell(zk::SessionState::Disconnected);
        assert_eq!(live.0.load(Ordering::SeqCst), 1);
        assert_eq!(hub.queue().links.len(), 1, "the dropped one forgotten");
    }

    struct Nobody;
    impl Linked for Nobody {
        fn link(&self, _: zk::SessionState) {}
    }

    #[test]
    fn links_of_dropped_locks_go_as_the_list_doubles() {
        let hub = hub();
        let kept: Arc<dyn Linked> = Arc::new(Nobody);
        hub.link(Arc::downgrade(&kept));
        for _ in 0..1000 {
            let dropped: Arc<dyn Linked> = Arc::new(Nobody);
            hub.link(Arc::downgrade(&dropped));
        }
        let links = hub.queue().links.len();
        assert!(links <= 16, "{links} links kept for one live lock");
        assert!(
            hub.queue().links.iter().any(|l| l.strong_count() > 0),
            "the live one stays"
        );
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
