//! A write lock downgraded to a read lock (`WriteGuard::downgrade`) on a
//! real server: readers queued behind the writer are let in by the
//! downgrade's own notification, writers stay out until the read guard is
//! released, a writer queued directly behind keeps the writer node in
//! place (it may take the node's deletion for its grant, in this version
//! and the ones before), and nothing is left behind on any path.

use zk_rwlock_testkit as support;

use std::time::Duration;

use support::{
    assert_drained, child_name, children, client, joined, lock, mode_of, seq_of, server, unique_path,
    until_watching, wait_contenders, watches,
};
use zk_rwlock::{Error, HoldState, Layout, Mode, SharedLock};

const SHORT: Duration = Duration::from_secs(10);

/// Readers behind the writer get in at the downgrade, by the deletion's
/// notification (a hand-off, no new listing); the writer behind them and the
/// reader behind that writer stay out until the read locks are released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_readers_get_in_and_writers_stay_out() {
    let path = unique_path("downgrade-readers");
    let holder = lock(&path).await;
    let write = holder.write().await.unwrap();
    let writer_node = write.node().to_owned();
    let writer_token = write.fencing_token();

    let reader_lock = lock(&path).await;
    let reader = tokio::spawn({
        let l = reader_lock.clone();
        async move { l.read().await }
    });
    wait_contenders(&holder, 2).await;
    until_watching(&reader_lock, &writer_node).await;
    let writer_lock = lock(&path).await;
    let writer = tokio::spawn({
        let l = writer_lock.clone();
        async move { l.write().await }
    });
    wait_contenders(&holder, 3).await;
    let late_lock = lock(&path).await;
    let late = tokio::spawn({
        let l = late_lock.clone();
        async move { l.read().await }
    });
    wait_contenders(&holder, 4).await;

    let read = write.downgrade().await.unwrap();
    assert_eq!(read.mode(), Mode::Read);
    assert_ne!(read.node(), writer_node, "a reader node took the writer's place");
    assert_eq!(mode_of(read.node()), Mode::Read);
    assert_eq!(
        seq_of(read.node()),
        seq_of(&writer_node),
        "the reader took the writer's sequence"
    );
    assert_eq!(
        read.fencing_token(),
        writer_token,
        "held all along since the writer's grant"
    );
    assert_eq!(read.state(), HoldState::Held);
    let queued_reader = joined(SHORT, reader).await.unwrap();
    let stats = reader_lock.stats();
    assert_eq!(
        (stats.grants, stats.handoffs, stats.listings),
        (1, 1, 1),
        "the queued reader was granted by the deletion's notification: {stats:?}"
    );

    let names = children(&client().await, &path).await;
    assert!(!names.contains(&child_name(&writer_node).to_owned()), "{names:?}");
    assert_eq!(
        names.len(),
        4,
        "the downgraded reader, the reader, the writer, the late reader: {names:?}"
    );
    assert!(!writer.is_finished() && !late.is_finished());
    // Whoever the writer watches, it is not granted while a reader holds.
    let queue = holder.contenders().await.unwrap();
    assert_eq!(
        queue
            .iter()
            .filter(|c| c.state == zk_rwlock::ContenderState::Holds)
            .count(),
        2,
        "{queue:?}"
    );

    read.release().await.unwrap();
    assert!(!writer.is_finished(), "the queued reader still holds");
    queued_reader.release().await.unwrap();
    let writer = joined(SHORT, writer).await.unwrap();
    assert!(!late.is_finished());
    writer.release().await.unwrap();
    joined(SHORT, late).await.unwrap().release().await.unwrap();
    assert_drained(&path).await;
}

/// A reader queued behind two writers waits on the second with its
/// release marker (its deletion alone proves nothing: the first could have
/// gone first). That writer, granted after waiting, downgrades with the
/// release record and marker, as its release would: the reader is granted
/// by the marker's event, with no request after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_behind_a_chain_is_granted_by_the_downgrades_marker() {
    let path = unique_path("downgrade-marker");
    let first_lock = lock(&path).await;
    let first = first_lock.write().await.unwrap();
    let second_lock = lock(&path).await;
    let second = tokio::spawn({
        let l = second_lock.clone();
        async move { l.write().await }
    });
    wait_contenders(&first_lock, 2).await;
    let reader_lock = lock(&path).await;
    let reader = tokio::spawn({
        let l = reader_lock.clone();
        async move { l.read().await }
    });
    wait_contenders(&first_lock, 3).await;
    let queue = first_lock.contenders().await.unwrap();
    let marker = format!(
        "{path}/{}",
        zk_rwlock::node_name::release_marker(child_name(&queue[1].path))
    );
    support::wait_watching(server(), &marker, reader_lock.client().session_id().0).await;
    first.release().await.unwrap();
    let second = joined(SHORT, second).await.unwrap();
    let read = second.downgrade().await.unwrap();
    assert_eq!(seq_of(read.node()), seq_of(&queue[1].path));
    let queued = joined(SHORT, reader).await.unwrap();
    let stats = reader_lock.stats();
    assert_eq!(
        (stats.grants, stats.marker_handoffs, stats.listings),
        (1, 1, 1),
        "granted by the downgrade's marker: {stats:?}"
    );
    queued.release().await.unwrap();
    read.release().await.unwrap();
    assert_drained(&path).await;
}

/// Alone on the lock, the downgraded reader holds on a reader node: readers
/// get in at once, writers do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alone_the_downgraded_reader_shares_with_readers_only() {
    let path = unique_path("downgrade-alone");
    let holder = lock(&path).await;
    let read = holder.write().await.unwrap().downgrade().await.unwrap();
    assert_eq!(mode_of(read.node()), Mode::Read);
    let other = lock(&path).await;
    assert!(other.try_write().await.unwrap().is_none());
    let shared = other.try_read().await.unwrap().expect("a reader shares the lock");
    assert!(other.try_write().await.unwrap().is_none());
    shared.release().await.unwrap();
    read.release().await.unwrap();
    other
        .try_write()
        .await
        .unwrap()
        .expect("free again")
        .release()
        .await
        .unwrap();
    assert_drained(&path).await;
}

/// A writer queued directly behind the holder watches the writer node and
/// may take its deletion for its grant (this version and the ones before
/// do): the downgrade keeps the writer node, withdraws the reader node it
/// made, and that writer is granted only after the read guard's release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_directly_behind_keeps_the_writer_node() {
    let path = unique_path("downgrade-writer-behind");
    let holder = lock(&path).await;
    let write = holder.write().await.unwrap();
    let writer_node = write.node().to_owned();
    let next_lock = lock(&path).await;
    let next = tokio::spawn({
        let l = next_lock.clone();
        async move { l.write().await }
    });
    wait_contenders(&holder, 2).await;
    until_watching(&next_lock, &writer_node).await;

    let read = write.downgrade().await.unwrap();
    assert_eq!(read.mode(), Mode::Read);
    assert_eq!(read.node(), writer_node, "the writer node is kept");
    assert_eq!(read.state(), HoldState::Held);
    let names = children(&client().await, &path).await;
    assert_eq!(names.len(), 2, "the reader node was withdrawn: {names:?}");
    assert!(watches(server(), &writer_node, next_lock.client().session_id().0));
    assert!(!next.is_finished());
    // A reader that comes now queues behind the writer.
    let late = lock(&path).await;
    assert!(late.try_read().await.unwrap().is_none());

    read.release().await.unwrap();
    joined(SHORT, next).await.unwrap().release().await.unwrap();
    assert_drained(&path).await;
}

/// A writer node deleted by someone else before the downgrade: the
/// downgrade says the lock was lost, and leaves no reader node behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_writer_is_not_downgraded() {
    let path = unique_path("downgrade-lost");
    let holder = lock(&path).await;
    let write = holder.write().await.unwrap();
    let node = write.node().to_owned();
    client().await.delete(&node, None).await.unwrap();
    support::eventually("the guard knows", SHORT, || {
        let lost = write.state() == HoldState::Lost;
        async move { lost }
    })
    .await;
    match write.downgrade().await {
        Err(Error::Lost { node: lost }) => assert_eq!(lost, node),
        other => panic!("expected Lost, got {other:?}"),
    }
    assert_drained(&path).await;
}

/// A peer's layout cannot downgrade: a typed error, and the write lock is
/// released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_layouts_refuse_with_a_typed_error() {
    let path = unique_path("downgrade-peer");
    let holder = SharedLock::builder(client().await, &path)
        .layout(Layout::Kazoo)
        .build()
        .unwrap();
    let write = holder.write().await.unwrap();
    match write.downgrade().await {
        Err(Error::DowngradeUnsupported { layout }) => assert_eq!(layout, Layout::Kazoo),
        other => panic!("expected DowngradeUnsupported, got {other:?}"),
    }
    assert_drained(&path).await;
}

/// The blocking guard downgrades too.
#[test]
fn the_blocking_guard_downgrades() {
    let path = unique_path("downgrade-blocking");
    let connect = server().connect_string();
    let l = zk_rwlock::blocking::SharedLock::connect(&connect, &path).unwrap();
    let guard = l.write().unwrap();
    let read = guard.downgrade().unwrap();
    assert_eq!(read.mode(), Mode::Read);
    assert_eq!(mode_of(read.node()), Mode::Read);
    let other = zk_rwlock::blocking::SharedLock::connect(&connect, &path).unwrap();
    let shared = other.try_read().unwrap().expect("a reader shares the lock");
    assert!(other.try_write().unwrap().is_none());
    drop(shared);
    read.release().unwrap();
    assert!(other.try_write().unwrap().is_some());
}
