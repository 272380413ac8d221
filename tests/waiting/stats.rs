//! `SharedLock::stats()` against a real server: the counts say what the
//! acquires did (hand-offs, listings, wake-ups, give-ups).

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::{children, client, joined, lock, server, unique_path, wait_contenders, wait_watching};

#[tokio::test]
async fn a_waiting_writer_is_granted_by_a_handoff() {
    let path = unique_path("stats-handoff");
    let first = lock(&path).await;
    let second = lock(&path).await;
    let held = first.write().await.expect("first writer");
    let waiter = {
        let second = second.clone();
        tokio::spawn(async move { second.write().await })
    };
    wait_contenders(&first, 2).await;
    // Really waiting: its watch on the holder's node is set.
    wait_watching(server(), held.node(), second.client().session_id().0).await;
    // What goes on now: one guard holds through `first`, one acquire waits through `second`.
    let now = |lock: &zk_rwlock::SharedLock| (lock.stats().waiting, lock.stats().holding);
    assert_eq!((now(&first), now(&second)), ((0, 1), (1, 0)));
    held.release().await.expect("release");
    let guard = joined(Duration::from_secs(10), waiter)
        .await
        .expect("second writer");
    assert_eq!((now(&first), now(&second)), ((0, 0), (0, 1)));
    guard.release().await.expect("release");
    assert_eq!((now(&first), now(&second)), ((0, 0), (0, 0)));

    let at_once = first.stats();
    assert_eq!(
        (at_once.acquires, at_once.grants, at_once.handoffs),
        (1, 1, 0),
        "{at_once:?}"
    );
    assert_eq!((at_once.listings, at_once.wakeups), (1, 0), "{at_once:?}");

    let waited = second.stats();
    assert_eq!(
        (waited.acquires, waited.grants, waited.handoffs),
        (1, 1, 1),
        "{waited:?}"
    );
    // Granted on the watched node's deletion: one listing, one wake-up.
    assert_eq!(
        (waited.listings, waited.wakeups, waited.spurious_wakeups),
        (1, 1, 0),
        "{waited:?}"
    );
    assert_eq!(waited.relisted_grants, 0, "{waited:?}");
    assert!(
        waited.max_wait > Duration::ZERO && waited.wait_time >= waited.max_wait,
        "{waited:?}"
    );
}

#[tokio::test]
async fn a_try_that_finds_the_lock_taken_gives_up() {
    let path = unique_path("stats-try");
    let holder = lock(&path).await;
    let other = lock(&path).await;
    let held = holder.write().await.expect("writer");
    assert!(other.try_read().await.expect("try_read").is_none());
    assert!(other.try_write().await.expect("try_write").is_none());
    held.release().await.expect("release");
    let stats = other.stats();
    assert_eq!(
        (stats.acquires, stats.grants, stats.give_ups, stats.failures),
        (2, 0, 2, 0),
        "{stats:?}"
    );
}

#[tokio::test]
async fn a_deletion_that_is_no_release_costs_a_new_listing() {
    // R1 holds, W2 waits on R1, W3 waits on W2 (only W2's *release* could
    // grant W3). One transaction deletes R1's and W2's nodes, as if both
    // sessions had ended: W3 wakes, finds no release record naming W2,
    // lists again, and that listing grants it.
    let path = unique_path("stats-relist");
    let (r1, w2, w3) = (lock(&path).await, lock(&path).await, lock(&path).await);
    let held = r1.read().await.expect("reader");
    let second = {
        let w2 = w2.clone();
        tokio::spawn(async move { w2.write().await })
    };
    wait_contenders(&r1, 2).await;
    let third = {
        let w3 = w3.clone();
        tokio::spawn(async move { w3.write().await })
    };
    wait_contenders(&r1, 3).await;
    let mut nodes = children(r1.client(), &path).await;
    nodes.sort_by_key(|name| name.rsplit('-').next().map(str::to_owned));
    // The third writer really waits on the second's node.
    wait_watching(
        server(),
        &format!("{path}/{}", nodes[1]),
        w3.client().session_id().0,
    )
    .await;
    let direct = client().await;
    let mut multi = direct.new_multi_writer();
    for node in &nodes[..2] {
        multi
            .add_delete(&format!("{path}/{node}"), None)
            .expect("delete op");
    }
    multi.commit().await.expect("both deleted");
    let guard = joined(Duration::from_secs(10), third)
        .await
        .expect("third writer");
    // The second writer fails with `Lost`, or (if the watched node's event
    // is handled before its own node's) is granted a guard that is lost at once.
    if let Ok(guard) = joined(Duration::from_secs(10), second).await {
        tokio::time::timeout(Duration::from_secs(10), guard.lost())
            .await
            .expect("lost");
    }
    guard.release().await.expect("release");
    drop(held);
    let stats = w3.stats();
    assert_eq!(
        (stats.grants, stats.handoffs, stats.relisted_grants),
        (1, 0, 1),
        "{stats:?}"
    );
    assert_eq!(
        (stats.listings, stats.wakeups, stats.spurious_wakeups),
        (2, 1, 0),
        "{stats:?}"
    );
    assert_eq!(w2.stats().grants + w2.stats().failures, 1);
}
