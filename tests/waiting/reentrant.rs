//! Re-entrant owners (`SharedLock::reentrant`) against a real server: a
//! nested write and a read within a write are granted at once, on the
//! owner's one node, and so is a write again once only a read within it is
//! kept, and a nested read of two reading owners past a queued writer; an
//! upgrade is refused at once; the node goes with the owner's last guard,
//! whichever it is, before the release of the last of two guards released
//! at once returns; a lost node refuses the owner's acquires until its
//! guards are gone; a nested guard does not downgrade; an owner's acquire
//! racing its guard's drop on another task ends, on one node; a cancelled
//! one leaves nothing.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::{assert_drained, children, client, eventually, joined, lock, unique_path, wait_contenders};
use zk_rwlock::{reentrant::Holding, zk, Error, Mode};

/// What "at once" allows: no hand-off, no request waited on by another.
const AT_ONCE: Duration = Duration::from_secs(2);
/// Upper bound for a hand-off or a task to end.
const SHORT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_nested_write_and_a_read_within_it_are_granted_at_once_on_the_owners_node() {
    let path = unique_path("reentrant-nest");
    let (a, b) = (lock(&path).await, lock(&path).await);
    let mut owner = a.reentrant();
    let outer = owner.write().await.unwrap();
    // Someone else queues behind the owner's writer node.
    let waiting = tokio::spawn(async move { b.write().await.map(|g| (g.fencing_token(), g)) });
    eventually("the other writer's node", Duration::from_secs(10), || async {
        children(a.client(), &path).await.len() == 2
    })
    .await;
    let inner = tokio::time::timeout(AT_ONCE, owner.write())
        .await
        .expect("a nested write does not wait, not even behind a waiter")
        .unwrap();
    let read = tokio::time::timeout(AT_ONCE, owner.read())
        .await
        .expect("a read within the write does not wait")
        .unwrap();
    for guard in [inner.node(), read.node()] {
        assert_eq!(guard, outer.node(), "every guard of the owner holds its one node");
    }
    assert_eq!(inner.fencing_token(), outer.fencing_token());
    assert_eq!(read.fencing_token(), outer.fencing_token());
    assert_eq!(read.mode(), Mode::Read);
    assert_eq!(
        owner.holding(),
        Holding::Node {
            mode: Mode::Write,
            guards: 3
        }
    );
    assert_eq!(
        children(a.client(), &path).await.len(),
        2,
        "no node of its own for a nested guard"
    );
    assert!(!waiting.is_finished());
    drop((outer, inner));
    assert!(read.is_held());
    assert!(
        !waiting.is_finished(),
        "the writer waits while the owner's last guard lives"
    );
    read.release().await.unwrap();
    let (token, next) = waiting.await.unwrap().unwrap();
    assert!(token > 0);
    assert_eq!(owner.holding(), Holding::Nothing);
    next.release().await.unwrap();
    assert_drained(&path).await;
}

#[tokio::test]
async fn an_owner_holding_a_read_lock_is_refused_the_write_lock_at_once() {
    let path = unique_path("reentrant-upgrade");
    let l = lock(&path).await;
    let mut owner = l.reentrant();
    let read = owner.read().await.unwrap();
    let nested = owner.try_read().await.unwrap().expect("a nested read is granted");
    for attempt in 0..3 {
        let refused = tokio::time::timeout(AT_ONCE, owner.write_timeout(Duration::from_secs(60)))
            .await
            .expect("an upgrade is refused at once, not waited on");
        assert!(
            matches!(refused, Err(Error::WouldDeadlock { ref path }) if *path == l.path()),
            "attempt {attempt}: {refused:?}"
        );
        assert!(matches!(
            owner.try_write().await,
            Err(Error::WouldDeadlock { .. })
        ));
        assert!(matches!(
            owner.acquire(Mode::Write).await,
            Err(Error::WouldDeadlock { .. })
        ));
    }
    assert_eq!(
        children(l.client(), &path).await.len(),
        1,
        "a refused upgrade makes no node"
    );
    read.release().await.unwrap();
    nested.release().await.unwrap();
    // With nothing held, the write is an ordinary acquire.
    let write = owner.write().await.unwrap();
    write.release().await.unwrap();
    assert_drained(&path).await;
}

#[tokio::test]
async fn the_node_goes_with_the_owners_last_guard_whichever_it_is() {
    let path = unique_path("reentrant-last");
    let (a, b) = (lock(&path).await, lock(&path).await);
    let mut owner = a.reentrant();
    let outer = owner.read().await.unwrap();
    let inner = owner.read().await.unwrap();
    let node = outer.node().to_owned();
    // The outer guard goes first: the nested one keeps the node.
    outer.release().await.unwrap();
    assert!(inner.is_held());
    assert!(b.try_write().await.unwrap().is_none(), "the lock is still held");
    assert!(children(a.client(), &path)
        .await
        .iter()
        .any(|c| node.ends_with(c.as_str())));
    drop(inner);
    let writer = eventually_write(&b).await;
    writer.release().await.unwrap();
    assert_drained(&path).await;
}

async fn eventually_write(l: &zk_rwlock::SharedLock) -> zk_rwlock::WriteGuard {
    tokio::time::timeout(Duration::from_secs(10), l.write())
        .await
        .expect("the lock is released once the owner's last guard is dropped")
        .unwrap()
}

#[tokio::test]
async fn a_lost_node_refuses_the_owner_until_its_guards_are_gone() {
    let path = unique_path("reentrant-lost");
    let l = lock(&path).await;
    let mut owner = l.reentrant();
    let outer = owner.write().await.unwrap();
    let inner = owner.write().await.unwrap();
    // Someone else deletes the owner's node.
    client().await.delete(outer.node(), None).await.unwrap();
    eventually("both guards lost", Duration::from_secs(10), || async {
        !outer.is_held() && !inner.is_held()
    })
    .await;
    assert!(matches!(owner.read().await, Err(Error::Lost { ref node }) if node == outer.node()));
    assert!(matches!(owner.try_write().await, Err(Error::Lost { .. })));
    assert!(
        matches!(inner.release().await, Ok(())),
        "not the last guard: nothing to say yet"
    );
    assert!(
        matches!(outer.release().await, Err(Error::Lost { .. })),
        "the last guard says the lock was lost"
    );
    let again = owner
        .write()
        .await
        .expect("with its guards gone, the owner acquires anew");
    again.release().await.unwrap();
    assert_drained(&path).await;
}

#[tokio::test]
async fn an_owners_write_guard_does_not_downgrade() {
    let path = unique_path("reentrant-downgrade");
    let (a, b) = (lock(&path).await, lock(&path).await);
    let mut owner = a.reentrant();
    let outer = owner.write().await.unwrap();
    let inner = owner.write().await.unwrap();
    let node = outer.node().to_owned();
    assert!(matches!(inner.downgrade().await, Err(Error::DowngradeReentrant { node: ref n }) if *n == node));
    assert!(outer.is_held(), "the other guard still holds the writer node");
    assert!(b.try_read().await.unwrap().is_none(), "still a write lock");
    assert!(matches!(
        outer.downgrade().await,
        Err(Error::DowngradeReentrant { .. })
    ));
    let reader = eventually_read(&b).await;
    reader.release().await.unwrap();
    assert_drained(&path).await;
}

async fn eventually_read(l: &zk_rwlock::SharedLock) -> zk_rwlock::ReadGuard {
    tokio::time::timeout(Duration::from_secs(10), l.read())
        .await
        .expect("a refused downgrade releases its guard: the last one releases the node")
        .unwrap()
}

#[tokio::test]
async fn two_owners_are_two_contenders() {
    let path = unique_path("reentrant-two");
    let l = lock(&path).await;
    let (mut first, mut second) = (l.reentrant(), l.reentrant());
    let held = first.write().await.unwrap();
    assert!(
        second.try_read().await.unwrap().is_none(),
        "another owner is excluded"
    );
    assert!(second.try_write().await.unwrap().is_none());
    held.release().await.unwrap();
    let read = second.read().await.unwrap();
    read.release().await.unwrap();
    assert_drained(&path).await;
}

#[test]
fn a_blocking_owner_nests_and_refuses_the_upgrade() {
    let path = unique_path("reentrant-blocking");
    let connect = support::server().connect_string();
    let lock = zk_rwlock::blocking::SharedLock::connect(&connect, &path).unwrap();
    let other = zk_rwlock::blocking::SharedLock::connect(&connect, &path).unwrap();
    let mut owner = lock.reentrant();
    let outer = owner.write().unwrap();
    let inner = owner
        .write_timeout(Duration::from_millis(1))
        .unwrap()
        .expect("nested: granted whatever the timeout");
    let read = owner.try_read().unwrap().expect("a read within the write");
    assert_eq!((inner.node(), read.node()), (outer.node(), outer.node()));
    assert!(other.try_read().unwrap().is_none());
    drop((outer, inner, read));
    let mut reader = other.reentrant();
    let shared = reader.read().unwrap();
    assert!(matches!(reader.write(), Err(Error::WouldDeadlock { .. })));
    assert!(matches!(reader.try_write(), Err(Error::WouldDeadlock { .. })));
    assert!(matches!(reader.read_timeout(Duration::ZERO), Ok(Some(_))));
    shared.release().unwrap();
    let again = owner.write().unwrap();
    again.release().unwrap();
}

/// A read within a write, the write released, then a write again: granted
/// at once on the writer node (no upgrade deadlock), even with a writer
/// queued behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_that_kept_only_a_read_within_its_write_writes_again_at_once() {
    let path = unique_path("reentrant-rw");
    let (a, b) = (lock(&path).await, lock(&path).await);
    let mut owner = a.reentrant();
    let outer = owner.write().await.unwrap();
    let waiter = tokio::spawn(async move { b.write().await });
    wait_contenders(&a, 2).await;
    let read = owner.read().await.unwrap();
    outer.release().await.unwrap();
    assert_eq!(
        owner.holding(),
        Holding::Node {
            mode: Mode::Write,
            guards: 1
        }
    );
    let again = tokio::time::timeout(AT_ONCE, owner.write())
        .await
        .expect("no deadlock")
        .unwrap();
    assert_eq!(again.node(), read.node());
    assert!(!waiter.is_finished());
    drop(read);
    assert!(!waiter.is_finished(), "the writer node is still held by `again`");
    again.release().await.unwrap();
    joined(SHORT, waiter).await.unwrap().release().await.unwrap();
    assert_drained(&path).await;
}

/// The owner's guards dropped or released on other tasks while the owner
/// acquires: every acquire ends (nested or new), the owner never holds two
/// nodes whose guards are alive, and nothing is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owners_acquire_racing_its_guards_drop_on_another_task_ends_on_one_node() {
    let path = unique_path("reentrant-race");
    let a = lock(&path).await;
    let mut owner = a.reentrant();
    for round in 0..60u64 {
        let mode = if round % 3 == 0 { Mode::Read } else { Mode::Write };
        let g = owner.acquire(mode).await.unwrap();
        let node = g.node().to_owned();
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(2));
        let dropper = {
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                if round % 2 == 0 {
                    drop(g);
                    Ok(())
                } else {
                    g.release().await
                }
            })
        };
        barrier.wait().await;
        let next = tokio::time::timeout(SHORT, owner.acquire(mode))
            .await
            .unwrap_or_else(|_| panic!("round {round}: the owner's acquire hangs"))
            .unwrap();
        joined(SHORT, dropper).await.unwrap();
        // The first guard is gone: `next` is the owner's only guard.
        assert_eq!(
            owner.holding(),
            Holding::Node { mode, guards: 1 },
            "round {round}"
        );
        if next.node() == node {
            assert!(next.is_held());
        }
        next.release().await.unwrap();
    }
    assert_drained(&path).await;
}

/// An owner's acquire dropped while it waits (a timeout around it, a
/// `write_timeout` that gives up) leaves nothing held and no node behind;
/// the next acquire is a fresh one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owners_cancelled_acquire_leaves_nothing() {
    let path = unique_path("reentrant-cancel");
    let (a, b) = (lock(&path).await, lock(&path).await);
    let held = b.write().await.unwrap();
    let mut owner = a.reentrant();
    assert!(tokio::time::timeout(Duration::from_millis(300), owner.write())
        .await
        .is_err());
    assert_eq!(owner.holding(), Holding::Nothing);
    assert!(owner
        .write_timeout(Duration::from_millis(200))
        .await
        .unwrap()
        .is_none());
    assert!(owner.try_read().await.unwrap().is_none());
    assert_eq!(owner.holding(), Holding::Nothing);
    support::settles_to(a.client(), &path, &[support::child_name(held.node()).to_owned()]).await;
    held.release().await.unwrap();
    let g = owner.read().await.unwrap();
    let h = owner.read().await.unwrap();
    assert_eq!(g.node(), h.node());
    drop((g, h));
    assert_drained(&path).await;
}

/// Two owners on one lock, both readers, with a writer queued between
/// their nodes: each owner's nested read is granted at once (no node
/// behind the writer), and the writer gets the lock once both are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_reading_owners_nest_past_a_queued_writer() {
    let path = unique_path("reentrant-two-readers");
    let (a, b, w) = (lock(&path).await, lock(&path).await, lock(&path).await);
    let (mut first, mut second) = (a.reentrant(), b.reentrant());
    let r1 = first.read().await.unwrap();
    let r2 = second.read().await.unwrap();
    let writer = tokio::spawn(async move { w.write().await });
    wait_contenders(&a, 3).await;
    let n1 = tokio::time::timeout(AT_ONCE, first.read())
        .await
        .unwrap()
        .unwrap();
    let n2 = tokio::time::timeout(AT_ONCE, second.read())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(first.write().await, Err(Error::WouldDeadlock { .. })));
    assert_eq!(children(a.client(), &path).await.len(), 3);
    drop((r1, n1, r2));
    assert!(!writer.is_finished());
    drop(n2);
    joined(SHORT, writer).await.unwrap().release().await.unwrap();
    assert_drained(&path).await;
}

/// Two guards of one owner released at once on two threads: both
/// `release()` calls return `Ok(())`, and by then the node is gone: one of
/// them is taken for the last guard's and waits for the deletion (the
/// node never goes in the background, through `Drop`, where a lost node
/// would report nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owners_last_two_guards_released_at_once_delete_the_node_before_returning() {
    let path = unique_path("reentrant-both");
    let a = lock(&path).await;
    let look = client().await;
    let mut owner = a.reentrant();
    let mut raced = 0;
    let rounds = 1500;
    for _ in 0..rounds {
        let g1 = owner.write().await.unwrap();
        let g2 = owner.write().await.unwrap();
        let node = g1.node().to_owned();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let spawn = |g: zk_rwlock::WriteGuard, b: std::sync::Arc<std::sync::Barrier>| {
            tokio::spawn(async move {
                b.wait();
                g.release().await
            })
        };
        let (t1, t2) = (spawn(g1, barrier.clone()), spawn(g2, barrier));
        let (r1, r2) = (joined(SHORT, t1).await, joined(SHORT, t2).await);
        assert!(r1.is_ok() && r2.is_ok(), "{r1:?} {r2:?}");
        // Both returned: the last guard's release has completed.
        if look.check_stat(&node).await.unwrap().is_some() {
            raced += 1;
            eventually_gone(&look, &node).await;
        }
    }
    assert_eq!(
        raced, 0,
        "in {raced} of {rounds} rounds both releases returned with the node still there: \
         one of them must be the last guard's and wait for the deletion"
    );
    assert_drained(&path).await;
}

async fn eventually_gone(c: &zk::Client, node: &str) {
    support::eventually("the node goes", SHORT, || async {
        c.check_stat(node).await.unwrap().is_none()
    })
    .await;
}
