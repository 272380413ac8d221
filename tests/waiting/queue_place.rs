//! The place in the queue (`SharedLock::enqueue`, `enqueue_timeout`),
//! against a real server: waiters behind a holder are told their place in
//! order (readers ahead counted, a reader granted at once told so),
//! updated as their listings show it (a waiter ahead that leaves moves
//! them up), at no cost in requests; a waiter that fails keeps the node it
//! waited on, never told it was granted; `enqueue_timeout` counts from its
//! first await.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::{assert_drained, client, joined, lock, received_on, unique_path};
use zk_rwlock::{Mode, Place, SharedLock};

const WITHIN: Duration = Duration::from_secs(10);

/// Waits until the place says the acquire waits.
async fn waiting(place: &mut tokio::sync::watch::Receiver<Option<Place>>) -> Place {
    let waits = tokio::time::timeout(
        WITHIN,
        place.wait_for(|p| p.as_ref().is_some_and(|p| p.waits_on.is_some())),
    )
    .await
    .expect("the acquire's place is told once its node is listed")
    .expect("the acquire is alive");
    waits.clone().unwrap_or_else(|| unreachable!())
}

#[tokio::test]
async fn waiters_behind_a_holder_are_told_their_place_in_order() {
    let path = unique_path("place");
    let holder_lock = lock(&path).await;
    let holder = holder_lock.write().await.unwrap();
    let holder_name = holder.node().rsplit('/').next().unwrap().to_owned();
    let mut queued = Vec::new();
    let mut places = Vec::new();
    for (i, mode) in [Mode::Write, Mode::Read, Mode::Read, Mode::Write]
        .into_iter()
        .enumerate()
    {
        let l = lock(&path).await;
        let q = l.enqueue(mode);
        let mut place = q.place();
        assert!(place.borrow().is_none(), "no place before the node is made");
        let task = tokio::spawn(async move { (q.await, l) });
        let now = waiting(&mut place).await;
        assert_eq!(now.ahead, i + 1, "{mode:?} #{i}: everyone before it counts");
        places.push((now, place));
        queued.push(task);
    }
    let name = |i: usize| places[i].0.node.clone();
    // A writer waits on its predecessor; a reader on the last writer before it.
    assert_eq!(places[0].0.waits_on.as_deref(), Some(holder_name.as_str()));
    assert_eq!(places[1].0.waits_on, Some(name(0)));
    assert_eq!(places[2].0.waits_on, Some(name(0)));
    assert_eq!(places[3].0.waits_on, Some(name(2)));
    holder.release().await.unwrap();
    // Each is granted in turn; its place then waits on none.
    for (i, task) in queued.into_iter().enumerate() {
        let (granted, _lock) = tokio::time::timeout(WITHIN, task)
            .await
            .expect("granted in turn")
            .unwrap();
        let guard = granted.unwrap();
        let last = places[i].1.borrow().clone().expect("a place");
        assert_eq!(last.node, guard.node().rsplit('/').next().unwrap());
        assert_eq!(last.waits_on, None, "#{i} granted");
        guard.release().await.unwrap();
    }
    assert_drained(&path).await;
}

#[tokio::test]
async fn following_the_place_costs_no_request() {
    let base = unique_path("place-cost");
    let c = client().await;
    let sid = c.session_id().0;
    // The directory made beforehand; a ping may fall into one measurement:
    // keep the least of a few.
    let l = SharedLock::new(c.clone(), &base).unwrap();
    l.write().await.unwrap().release().await.unwrap();
    let (mut plain, mut placed) = (i64::MAX, i64::MAX);
    for _ in 0..5 {
        let before = received_on(sid);
        l.write().await.unwrap().release().await.unwrap();
        plain = plain.min(received_on(sid) - before);
        let before = received_on(sid);
        let queued = l.enqueue(Mode::Write);
        let place = queued.place();
        queued.await.unwrap().release().await.unwrap();
        placed = placed.min(received_on(sid) - before);
        assert_eq!(
            place.borrow().as_ref().map(|p| (p.ahead, p.waits_on.clone())),
            Some((0, None))
        );
    }
    assert_eq!(
        placed, plain,
        "an acquire that follows its place sends what one that does not sends"
    );
    assert_drained(&base).await;
}

#[tokio::test]
async fn a_queued_acquire_dropped_or_timed_out_leaves_nothing() {
    let path = unique_path("place-drop");
    let (a, b) = (lock(&path).await, lock(&path).await);
    let held = a.write().await.unwrap();
    let queued = b.enqueue(Mode::Read);
    let mut place = queued.place();
    let waiter = tokio::spawn(queued);
    waiting(&mut place).await;
    waiter.abort();
    let timed = b.enqueue_timeout(Mode::Write, Duration::from_millis(200));
    assert!(timed.await.unwrap().is_none(), "gave up at its timeout");
    held.release().await.unwrap();
    assert_drained(&path).await;
}

/// `n` locks on `path`, each through a session of its own.
async fn locks_on(path: &str, n: usize) -> Vec<SharedLock> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(lock(path).await);
    }
    v
}

/// A waiter whose node a stranger deleted, woken by its predecessor's
/// release, lists the directory, finds its node missing and fails; its
/// place keeps the node it waited on and never says `waits_on: None`,
/// which means granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_lost_its_node_is_never_told_it_was_granted() {
    let path = unique_path("place-lost");
    let (h, r, w) = (lock(&path).await, lock(&path).await, lock(&path).await);
    // Two readers hold; a writer waits on the second: its deletion alone
    // grants nothing (another reader is before it), so no own watch.
    let first = h.read().await.unwrap();
    let second = r.read().await.unwrap();
    let queued = w.enqueue(Mode::Write);
    let mut place = queued.place();
    let task = tokio::spawn(queued);
    let now = waiting(&mut place).await;
    assert_eq!(now.ahead, 2);
    let stranger = client().await;
    stranger
        .delete(&format!("{path}/{}", now.node), None)
        .await
        .unwrap();
    second.release().await.unwrap();
    let result = joined(WITHIN, task).await;
    let last = place.borrow().clone();
    eprintln!("acquire: {result:?}; last place: {last:?}");
    assert!(result.is_err(), "{result:?}");
    assert!(
        last.as_ref().is_some_and(|p| p.waits_on.is_some()),
        "a failed acquire's place keeps the node it waited on, never says granted: {last:?}"
    );
    first.release().await.unwrap();
    assert_drained(&path).await;
}

/// A reader behind two readers is granted at once with `ahead: 2`; a
/// writer behind them waits on the last reader; a waiter ahead that gives
/// up makes the next waiter list again and count one fewer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn places_count_readers_ahead_and_move_up_when_a_waiter_ahead_leaves() {
    let path = unique_path("place-figures");
    let locks = locks_on(&path, 5).await;
    let r0 = locks[0].read().await.unwrap();
    let r1 = locks[1].read().await.unwrap();
    let q = locks[2].enqueue(Mode::Read);
    let p = q.place();
    let g2 = joined(WITHIN, tokio::spawn(q)).await.unwrap();
    assert_eq!(
        p.borrow().as_ref().map(|p| (p.ahead, p.waits_on.clone())),
        Some((2, None))
    );
    let qw = locks[3].enqueue_timeout(Mode::Write, Duration::from_millis(1500));
    let mut pw = qw.place();
    let tw = tokio::spawn(qw);
    let w_place = waiting(&mut pw).await;
    assert_eq!(w_place.ahead, 3);
    assert_eq!(w_place.waits_on.as_deref(), Some(support::child_name(g2.node())));
    let qx = locks[4].enqueue(Mode::Write);
    let mut px = qx.place();
    let tx = tokio::spawn(qx);
    let x_place = waiting(&mut px).await;
    assert_eq!(x_place.ahead, 4);
    assert_eq!(x_place.waits_on.as_deref(), Some(w_place.node.as_str()));
    // The writer ahead gives up at its timeout: X lists again.
    assert!(joined(WITHIN, tw).await.unwrap().is_none());
    let again = tokio::time::timeout(WITHIN, px.wait_for(|p| p.as_ref().is_some_and(|p| p.ahead == 3)))
        .await
        .expect("X lists again once the writer ahead left")
        .unwrap()
        .clone()
        .unwrap();
    assert_eq!(again.waits_on.as_deref(), Some(support::child_name(g2.node())));
    drop((r0, r1, g2));
    let x = joined(WITHIN, tx).await.unwrap();
    assert_eq!(px.borrow().as_ref().map(|p| p.waits_on.clone()), Some(None));
    x.release().await.unwrap();
    assert_drained(&path).await;
}

/// `enqueue_timeout`'s timeout counts from its first await, not from the
/// call (as `acquire_timeout`'s does, an `async fn`): a queued acquire
/// built longer ago than its 3 s timeout, then awaited, still waits and is
/// granted when the lock is released half a second into the await.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueue_timeout_counts_from_the_first_await_not_the_call() {
    let path = unique_path("place-timeout");
    let (a, b) = (lock(&path).await, lock(&path).await);
    let held = a.write().await.unwrap();
    let queued = b.enqueue_timeout(Mode::Write, Duration::from_secs(3));
    // Built, not yet awaited, for longer than the timeout (the scenario,
    // not a wait for anything to settle).
    tokio::time::sleep(Duration::from_millis(3200)).await;
    let releaser = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        held.release().await
    });
    let started = std::time::Instant::now();
    let q = queued.await.unwrap();
    let took = started.elapsed();
    joined(WITHIN, releaser).await.unwrap();
    eprintln!(
        "enqueue_timeout(3 s) awaited: granted {} after {took:?}",
        q.is_some()
    );
    assert!(
        q.is_some(),
        "the 3 s timeout counts from the first await, yet the acquire gave up after {took:?} of it"
    );
    drop(q);
    assert_drained(&path).await;
}
