//! A write lock downgraded to a read lock (`WriteGuard::downgrade`) on a
//! real server: readers queued behind the writer are let in by the
//! downgrade's own notification, writers stay out until the read guard is
//! released, a writer queued directly behind keeps the writer node in
//! place (it may take the node's deletion for its grant, in this version
//! and the ones before), and nothing is left behind on any path.
//!
//! Then the downgrade under races and faults: fencing tokens across it,
//! cancellation at every await point, a refused transaction, a writer node
//! deleted just before, a revocation request racing it, a lost transaction
//! answer (cut or garbled), the session's expiry.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::{
    assert_drained, child_name, children, client, client_on, eventually, joined, lock, mode_of, seq_of,
    server, unique_path, until_watching, wait_contenders, watches,
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

// ---------------------------------------------------------------------------
// The downgrade under races and faults.

/// The writer queued last waits, in the lock's own view and in its task.
async fn assert_writer_waits(
    lock: &SharedLock,
    x: &tokio::task::JoinHandle<Result<zk_rwlock::WriteGuard, Error>>,
) {
    let queue = lock.contenders().await.unwrap();
    let last = queue.last().expect("a contender");
    assert_eq!(last.name.mode(), Mode::Write);
    assert!(
        matches!(last.state, zk_rwlock::ContenderState::WaitsOn(_)),
        "the writer waits: {queue:?}"
    );
    assert!(!x.is_finished(), "a writer got in beside the readers");
}

/// The child name of the writer queued last.
async fn x_name(lock: &SharedLock) -> String {
    let queue = lock.contenders().await.unwrap();
    child_name(&queue.last().expect("a contender").path).to_owned()
}

/// Fencing tokens stay monotonic across a downgrade. Before it, every
/// holder's fencing token is smaller than that of every holder granted
/// after it that conflicts with it (a writer waits for every older node,
/// and a node made later has a larger czxid). A downgrade replaces W with R0, made *after* the writers already
/// queued: had the read guard taken R0's czxid as its token, the next
/// writer would be granted with a token smaller than the read guard's it
/// follows, and a resource that fences with "reject tokens below the
/// largest seen" would refuse that writer.
///
///   W holds; reader S queues (waits on W); writer X queues (waits on S);
///   W.downgrade() -> R0; R0, S release; X granted: token(X) > token(R0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_stay_monotonic_across_a_downgrade() {
    let path = unique_path("downgrade-fencing");
    let holder = lock(&path).await;
    let write = holder.write().await.unwrap();
    let writer_node = write.node().to_owned();
    let s_lock = lock(&path).await;
    let s = tokio::spawn({
        let l = s_lock.clone();
        async move { l.read().await }
    });
    wait_contenders(&holder, 2).await;
    until_watching(&s_lock, &writer_node).await;
    let x_lock = lock(&path).await;
    let x = tokio::spawn({
        let l = x_lock.clone();
        async move { l.write().await }
    });
    wait_contenders(&holder, 3).await;

    let read = write.downgrade().await.unwrap();
    assert_ne!(read.node(), writer_node, "replaced");
    let read_token = read.fencing_token();
    let s = joined(SHORT, s).await.unwrap();
    read.release().await.unwrap();
    s.release().await.unwrap();
    let x = joined(SHORT, x).await.unwrap();
    let x_token = x.fencing_token();
    x.release().await.unwrap();
    assert_drained(&path).await;
    assert!(
        x_token > read_token,
        "the writer granted after the downgraded reader has the smaller token: {x_token} < {read_token}"
    );
}

/// Cancellation: the downgrade future dropped at every point (a timeout of
/// growing length) leaves nothing behind, and the lock is free afterwards.
/// Two shapes: alone (check on my own node), and with a reader S queued
/// behind a writer that waited (check(S), release record and marker).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_downgrade_leaves_nothing_behind() {
    let observer = client().await;
    for with_queue in [false, true] {
        for step in 0..40u64 {
            let path = unique_path("downgrade-cancel");
            let holder = lock(&path).await;
            // With a queue: W waits behind a first writer (mark = true), a
            // reader S waits behind W.
            let (write, s) = if with_queue {
                let first_lock = lock(&path).await;
                let first = first_lock.write().await.unwrap();
                let w = tokio::spawn({
                    let l = holder.clone();
                    async move { l.write().await }
                });
                wait_contenders(&first_lock, 2).await;
                first.release().await.unwrap();
                let write = joined(SHORT, w).await.unwrap();
                let s_lock = lock(&path).await;
                let s = tokio::spawn({
                    let l = s_lock.clone();
                    async move { l.read().await }
                });
                wait_contenders(&holder, 2).await;
                (write, Some(s))
            } else {
                (holder.write().await.unwrap(), None)
            };
            let limit = Duration::from_micros(step * 150);
            let outcome = tokio::time::timeout(limit, write.downgrade()).await;
            let read = match outcome {
                Ok(Ok(read)) => Some(read),
                Ok(Err(e)) => panic!("step {step}: {e}"),
                Err(_) => None,
            };
            if let Some(s) = s {
                let s = joined(SHORT, s).await.unwrap();
                s.release().await.unwrap();
            }
            if let Some(read) = read {
                assert_eq!(read.state(), HoldState::Held);
                read.release().await.unwrap();
            }
            support::settles_to(&observer, &path, &[]).await;
            let again = lock(&path).await;
            let w = tokio::time::timeout(SHORT, again.write())
                .await
                .expect("free")
                .unwrap();
            w.release().await.unwrap();
        }
    }
}

/// A downgrade whose transaction the server refuses for a reason other
/// than the ones it expects (here: a hard count quota that the reader
/// node's create passes but R0's create does not, since ZooKeeper checks
/// quotas against the committed tree, not the transaction's net effect)
/// gives up nothing: the writer node is intact, so the downgrade keeps it
/// (as it does when a writer is queued) and returns a read guard, instead
/// of failing and releasing the write lock.
#[tokio::test]
async fn a_refused_transaction_keeps_the_write_lock() {
    // The directory, W and the downgrade's reader node: 3.
    let (cluster, admin) = support::quota_server("count=-1,bytes=-1,countHardLimit=3,byteHardLimit=-1").await;
    let connect = cluster.connect_string();
    let path = "/quota-app/lock";
    let holder = SharedLock::new(client_on(&connect).await, path).unwrap();
    let write = holder.write().await.unwrap();
    let writer_node = write.node().to_owned();
    let result = write.downgrade().await;
    let names = children(&admin, path).await;
    match result {
        Ok(read) => {
            assert_eq!(read.state(), HoldState::Held);
            read.release().await.unwrap();
        }
        Err(e) => panic!(
            "the downgrade failed ({e:?}) and the write lock {writer_node} was given up; children now {names:?}"
        ),
    }
}

/// The writer node deleted by someone else just before the downgrade,
/// before the keeper saw it: the listing misses the writer, and
/// `ordering::downgrade` answers Keep (writer_found false). The downgrade
/// must fail with `Error::Lost` as documented ("if the write lock was lost
/// ... before the downgrade"), not succeed with a read guard on a node
/// that no longer exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_deleted_just_before_is_lost_not_kept() {
    let admin = client().await;
    let mut oks = 0;
    for _ in 0..20 {
        let path = unique_path("downgrade-lost-race");
        let holder = lock(&path).await;
        let write = holder.write().await.unwrap();
        let node = write.node().to_owned();
        admin.delete(&node, None).await.unwrap();
        match write.downgrade().await {
            Ok(read) => {
                oks += 1;
                assert_eq!(read.node(), node, "kept the deleted writer node");
                eventually("the guard says lost", SHORT, || {
                    let lost = read.state() == HoldState::Lost;
                    async move { lost }
                })
                .await;
            }
            Err(Error::Lost { .. }) => {}
            Err(e) => panic!("{e:?}"),
        }
        assert_drained(&path).await;
    }
    assert_eq!(
        oks, 0,
        "{oks} of 20 downgrades of a deleted writer node returned Ok"
    );
}

/// A peer layout's refused downgrade has released the writer node by the
/// time the error is seen: the release is confirmed before the refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_peer_downgrade_has_released_when_it_returns() {
    let path = unique_path("downgrade-peer");
    let holder = SharedLock::builder(client().await, &path)
        .layout(Layout::Curator)
        .build()
        .unwrap();
    let write = holder.write().await.unwrap();
    let err = write.downgrade().await.unwrap_err();
    assert!(matches!(err, Error::DowngradeUnsupported { .. }));
    let names = children(&client().await, &path).await;
    assert!(
        names.is_empty(),
        "the error said released, the directory holds {names:?}"
    );
}

/// R0 deleted by someone else makes the read guard lost; a
/// revocation request on R0 reaches it; its node is a reader with W's
/// sequence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_new_read_guard_keeps_its_node() {
    let path = unique_path("downgrade-r0");
    let holder = lock(&path).await;
    let write = holder.write().await.unwrap();
    let w = write.node().to_owned();
    let read = write.downgrade().await.unwrap();
    assert_eq!(mode_of(read.node()), Mode::Read);
    assert_eq!(seq_of(read.node()), seq_of(&w));
    holder.revoke(read.node()).await.unwrap();
    tokio::time::timeout(SHORT, read.revocation_requested())
        .await
        .expect("revocation seen");
    client().await.delete(read.node(), None).await.unwrap();
    tokio::time::timeout(SHORT, read.lost()).await.expect("lost seen");
    assert_eq!(read.state(), HoldState::Lost);
    assert!(read.release().await.is_err());
    assert_drained(&path).await;
}

/// The downgrade's transaction applied and its answer lost (the
/// connection cut right after the multi is forwarded, and a garbled reply):
/// the retry fails on R0's create, `exists(R0)` settles it as applied. Alone
/// and with a reader S queued behind a writer that waited (check(S), record
/// and marker in the retried transaction). The read guard holds R0, no node
/// is left behind, and the writer behind S stays out until the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_transaction_answer_is_settled() {
    use support::proxy::{op, Proxy};
    let proxy = Proxy::start(&server().connect_string());
    for (garble, with_queue) in [(false, false), (false, true), (true, false), (true, true)] {
        let path = unique_path("downgrade-lost-answer");
        let holder = SharedLock::new(client_on(proxy.addr()).await, &path).unwrap();
        let (write, s, x) = if with_queue {
            let first_lock = lock(&path).await;
            let first = first_lock.write().await.unwrap();
            let w = tokio::spawn({
                let l = holder.clone();
                async move { l.write().await }
            });
            wait_contenders(&first_lock, 2).await;
            first.release().await.unwrap();
            let write = joined(SHORT, w).await.unwrap();
            let s_lock = lock(&path).await;
            let s = tokio::spawn({
                let l = s_lock.clone();
                async move { l.read().await }
            });
            wait_contenders(&holder, 2).await;
            let x_lock = lock(&path).await;
            let x = tokio::spawn({
                let l = x_lock.clone();
                async move { l.write().await }
            });
            wait_contenders(&holder, 3).await;
            (write, Some(s), Some(x))
        } else {
            (holder.write().await.unwrap(), None, None)
        };
        let w = write.node().to_owned();
        let fired = proxy.fired();
        if garble {
            proxy.garble_after_request(&[op::MULTI]);
        } else {
            proxy.cut_after_request(&[op::MULTI]);
        }
        let read = tokio::time::timeout(SHORT, write.downgrade())
            .await
            .expect("settled")
            .unwrap_or_else(|e| panic!("garble={garble} queue={with_queue}: {e:?}"));
        proxy.cut_after_request(&[]);
        proxy.garble_after_request(&[]);
        assert_eq!(proxy.fired(), fired + 1, "the fault happened");
        assert_eq!(mode_of(read.node()), Mode::Read);
        assert_eq!(seq_of(read.node()), seq_of(&w));
        assert_eq!(read.state(), HoldState::Held);
        let names = children(&client().await, &path).await;
        assert!(!names.contains(&child_name(&w).to_owned()), "{names:?}");
        assert_eq!(names.len(), if with_queue { 3 } else { 1 }, "{names:?}");
        if let (Some(s), Some(x)) = (s, x) {
            let s = joined(SHORT, s).await.unwrap();
            assert_writer_waits(&holder, &x).await;
            s.release().await.unwrap();
            let mut want = vec![child_name(read.node()).to_owned(), x_name(&holder).await];
            want.sort();
            let admin = client().await;
            eventually("the reader released", SHORT, || {
                let (admin, path, want) = (admin.clone(), path.clone(), want.clone());
                async move {
                    let mut now = children(&admin, &path).await;
                    now.sort();
                    now == want
                }
            })
            .await;
            assert_writer_waits(&holder, &x).await;
            read.release().await.unwrap();
            joined(SHORT, x).await.unwrap().release().await.unwrap();
        } else {
            read.release().await.unwrap();
        }
        assert_drained(&path).await;
    }
}

/// A revocation request written to W while the downgrade runs reaches the
/// read guard: whenever `Revoker` was told the request landed (Ok(true)),
/// the read guard that now holds the lock learns of it, although the
/// keeper may read W's data after the transaction deleted it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_during_the_downgrade_reaches_the_reader() {
    let mut missed = 0;
    let mut landed = 0;
    for i in 0..40u64 {
        let path = unique_path("downgrade-revoke-race");
        let holder = lock(&path).await;
        let write = holder.write().await.unwrap();
        let w = write.node().to_owned();
        let revoker = lock(&path).await;
        let r = {
            let revoker = revoker.clone();
            let w = w.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_micros(i * 100)).await;
                revoker.revoke(&w).await
            })
        };
        let read = write.downgrade().await.unwrap();
        let written = r.await.unwrap().unwrap_or(false);
        if written {
            landed += 1;
            let seen = tokio::time::timeout(SHORT, read.revocation_requested())
                .await
                .unwrap_or(false);
            if !seen {
                missed += 1;
            }
        }
        read.release().await.unwrap();
    }
    eprintln!("revocations landed on W: {landed}, missed: {missed}");
    assert_eq!(
        missed, 0,
        "{missed} of {landed} revocation requests that landed on W were lost"
    );
}

/// The session expires while the downgrade's requests are held
/// back (the proxy frozen): the downgrade fails with `SessionExpired`, the
/// server removed every node, and another client gets the write lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_expired_mid_downgrade_fails_cleanly() {
    use support::proxy::Proxy;
    let proxy = Proxy::start(&server().connect_string());
    let path = unique_path("downgrade-expiry");
    let victim = client_on(proxy.addr()).await;
    let holder = SharedLock::new(victim.clone(), &path).unwrap();
    let write = holder.write().await.unwrap();
    proxy.freeze();
    let downgrade = tokio::spawn(write.downgrade());
    proxy.thaw();
    support::expire_behind(&proxy, &victim, &server().connect_string()).await;
    match joined(Duration::from_secs(20), downgrade).await {
        Err(Error::SessionExpired) => {}
        Ok(read) => assert_eq!(
            read.state(),
            HoldState::Lost,
            "a read guard of an expired session"
        ),
        Err(e) => panic!("{e:?}"),
    }
    assert_drained(&path).await;
    let other = lock(&path).await;
    other
        .try_write()
        .await
        .unwrap()
        .expect("free")
        .release()
        .await
        .unwrap();
}

/// A revocation request written to a guard granted at its first look,
/// before its kept watch is set, then a downgrade: the request is not lost
/// (the downgrade deletes the writer only at version 0, so it keeps the
/// writer node, whose guard then sees the request).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_written_before_the_first_watch_reaches_the_downgraded_guard() {
    let path = unique_path("revoke-before-watch-downgrade");
    let holder = lock(&path).await;
    let other = lock(&path).await;
    let guard = holder.write().await.unwrap();
    assert!(other.revoke(guard.node()).await.unwrap());
    let read = guard.downgrade().await.unwrap();
    let asked = tokio::time::timeout(SHORT, read.revocation_requested()).await;
    assert_eq!(
        asked.ok(),
        Some(true),
        "the request written before the downgrade reaches the read guard"
    );
    read.release().await.unwrap();
    assert_drained(&path).await;
}
