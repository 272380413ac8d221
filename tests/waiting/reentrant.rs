//! Re-entrant owners (`SharedLock::reentrant`) against a real server: a
//! nested write and a read within a write are granted at once, on the
//! owner's one node; an upgrade is refused at once; the node goes with the
//! owner's last guard, whichever it is; a lost node refuses the owner's
//! acquires until its guards are gone; a nested guard does not downgrade.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::{assert_drained, children, client, eventually, lock, unique_path};
use zk_rwlock::{reentrant::Holding, Error, Mode};

/// What "at once" allows: no hand-off, no request waited on by another.
const AT_ONCE: Duration = Duration::from_secs(2);

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
