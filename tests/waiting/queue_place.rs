//! The place in the queue (`SharedLock::enqueue`), against a real server:
//! waiters behind a holder are told their place in order, updated as their
//! listings show it, at no cost in requests.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::{assert_drained, client, lock, received_on, unique_path};
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
