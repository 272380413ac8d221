//! Writes that commit only while the lock is held (`transaction()` on the
//! guards, a multi-guard, a leadership, and the blocking ones), against a
//! real server: all of a transaction is written while the holder's nodes
//! exist, nothing of it once one is gone or when one of its operations
//! fails, and the error says which.
//!
//! That a transaction cannot be committed after its guard's release is a
//! compile-time property: a `compile_fail` doctest on
//! `ReadGuard::transaction` and `WriteGuard::transaction` holds it.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::{client, joined, mkdir_open, server, unique_path};
use zk_rwlock::{zk, CreateAcl, Error, HoldState, Mode, MultiLock};

const SHORT: Duration = Duration::from_secs(10);

/// A data directory of its own, open to anyone, with `b` (data `old`) and
/// `c` in it, made by a stranger's session; returns the stranger and the
/// directory.
async fn data_dir(name: &str) -> (zk::Client, String) {
    let stranger = client().await;
    let dir = unique_path(name);
    mkdir_open(&stranger, &dir).await;
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    for (child, data) in [("b", b"old".as_slice()), ("c", b"".as_slice())] {
        stranger
            .create(&format!("{dir}/{child}"), data, &open)
            .await
            .unwrap_or_else(|e| panic!("create {dir}/{child}: {e}"));
    }
    (stranger, dir)
}

/// The data of `path` as the stranger reads it; `None` if it is missing.
async fn read(stranger: &zk::Client, path: &str) -> Option<Vec<u8>> {
    match stranger.get_data(path).await {
        Ok((data, _)) => Some(data),
        Err(zk::Error::NoNode) => None,
        Err(e) => panic!("get_data {path}: {e}"),
    }
}

/// Nothing of a transaction that creates `a`, writes `b` and deletes `c`
/// was written.
async fn assert_untouched(stranger: &zk::Client, dir: &str) {
    assert_eq!(read(stranger, &format!("{dir}/a")).await, None, "a was created");
    assert_eq!(
        read(stranger, &format!("{dir}/b")).await.as_deref(),
        Some(b"old".as_slice()),
        "b was written"
    );
    assert!(
        read(stranger, &format!("{dir}/c")).await.is_some(),
        "c was deleted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_while_held_writes_everything_and_returns_the_users_results() {
    let (stranger, dir) = data_dir("tx-held").await;
    let lock = support::lock(&unique_path("tx-held-lock")).await;
    let guard = lock.write().await.unwrap();

    let results = guard
        .transaction()
        .create(&format!("{dir}/a"), b"new-a", CreateAcl::Open)
        .set_data(&format!("{dir}/b"), b"new-b", Some(0))
        .delete(&format!("{dir}/c"), None)
        .check(&format!("{dir}/b"), Some(1))
        .commit()
        .await
        .unwrap();

    assert_eq!(results.len(), 4, "one result per user op: {results:?}");
    assert!(
        matches!(&results[0], zk::MultiWriteResult::Create { path, .. } if *path == format!("{dir}/a")),
        "{results:?}"
    );
    assert!(
        matches!(&results[1], zk::MultiWriteResult::SetData { stat } if stat.version == 1),
        "{results:?}"
    );
    assert_eq!(
        read(&stranger, &format!("{dir}/a")).await.as_deref(),
        Some(b"new-a".as_slice())
    );
    assert_eq!(
        read(&stranger, &format!("{dir}/b")).await.as_deref(),
        Some(b"new-b".as_slice())
    );
    assert_eq!(read(&stranger, &format!("{dir}/c")).await, None);
    let (acl, _) = stranger.get_acl(&format!("{dir}/a")).await.unwrap();
    assert_eq!(acl, zk::Acls::anyone_all().to_vec(), "an open create is open");
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_with_the_locks_acl_gets_the_contender_nodes_acl() {
    let (stranger, dir) = data_dir("tx-acl").await;
    let lock = support::lock(&unique_path("tx-acl-lock")).await;
    let guard = lock.read().await.unwrap();
    let (node_acl, _) = stranger.get_acl(guard.node()).await.unwrap();
    guard
        .transaction()
        .create(&format!("{dir}/a"), b"", CreateAcl::Lock)
        .commit()
        .await
        .unwrap();
    let (acl, _) = stranger.get_acl(&format!("{dir}/a")).await.unwrap();
    assert_eq!(acl, node_acl);
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_node_a_stranger_deleted_gets_lost_and_writes_nothing() {
    let (stranger, dir) = data_dir("tx-lost").await;
    let lock = support::lock(&unique_path("tx-lost-lock")).await;
    let guard = lock.write().await.unwrap();
    let node = guard.node().to_owned();
    stranger.delete(&node, None).await.unwrap();

    // At once, whether or not the guard has seen the deletion yet: the
    // server's check refuses it if the guard has not.
    let result = guard
        .transaction()
        .create(&format!("{dir}/a"), b"new-a", CreateAcl::Open)
        .set_data(&format!("{dir}/b"), b"new-b", None)
        .delete(&format!("{dir}/c"), None)
        .commit()
        .await;

    assert!(
        matches!(&result, Err(Error::Lost { node: n }) if *n == node),
        "{result:?}"
    );
    assert_untouched(&stranger, &dir).await;
    assert!(matches!(guard.release().await, Err(Error::Lost { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_that_saw_its_node_deleted_commits_nothing_even_if_a_stranger_made_it_again() {
    let (stranger, dir) = data_dir("tx-recreated").await;
    let lock = support::lock(&unique_path("tx-recreated-lock")).await;
    let guard = lock.write().await.unwrap();
    let node = guard.node().to_owned();
    stranger.delete(&node, None).await.unwrap();
    tokio::time::timeout(SHORT, guard.lost())
        .await
        .expect("the guard sees its node's deletion");
    // A node of the same name, which the server's unversioned check alone
    // would take for the holder's.
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    stranger.create(&node, b"", &open).await.unwrap();

    let result = guard
        .transaction()
        .create(&format!("{dir}/a"), b"new-a", CreateAcl::Open)
        .commit()
        .await;

    assert!(
        matches!(&result, Err(Error::Lost { node: n }) if *n == node),
        "{result:?}"
    );
    assert_untouched(&stranger, &dir).await;
    stranger.delete(&node, None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_user_op_writes_nothing_and_is_named_by_its_index() {
    let (stranger, dir) = data_dir("tx-bad-op").await;
    let lock = support::lock(&unique_path("tx-bad-op-lock")).await;
    let guard = lock.write().await.unwrap();

    let cases = [
        // A write at a version b does not have.
        (
            guard
                .transaction()
                .create(&format!("{dir}/a"), b"new-a", CreateAcl::Open)
                .set_data(&format!("{dir}/b"), b"new-b", Some(7))
                .delete(&format!("{dir}/c"), None),
            1,
            zk::Error::BadVersion,
        ),
        // A check of a missing node, right after the holder's own check:
        // the user's op, not a loss.
        (
            guard.transaction().check(&format!("{dir}/missing"), None).create(
                &format!("{dir}/a"),
                b"new-a",
                CreateAcl::Open,
            ),
            0,
            zk::Error::NoNode,
        ),
        // A create of a node that exists, last.
        (
            guard
                .transaction()
                .create(&format!("{dir}/a"), b"new-a", CreateAcl::Open)
                .delete(&format!("{dir}/c"), None)
                .create(&format!("{dir}/b"), b"", CreateAcl::Open),
            2,
            zk::Error::NodeExists,
        ),
    ];
    for (tx, index, source) in cases {
        let result = tx.commit().await;
        assert!(
            matches!(&result, Err(Error::TransactionFailed { index: i, source: s }) if *i == index && *s == source),
            "expected op {index} to fail with {source}: {result:?}"
        );
        assert_untouched(&stranger, &dir).await;
    }
    assert_eq!(
        guard.state(),
        HoldState::Held,
        "a refused transaction takes nothing away"
    );
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_the_client_refuses_names_the_op_and_sends_nothing() {
    let (stranger, dir) = data_dir("tx-bad-path").await;
    let lock = support::lock(&unique_path("tx-bad-path-lock")).await;
    let guard = lock.write().await.unwrap();
    let result = guard
        .transaction()
        .create(&format!("{dir}/a"), b"new-a", CreateAcl::Open)
        .set_data("relative/path", b"x", None)
        .commit()
        .await;
    assert!(
        matches!(&result, Err(Error::TransactionFailed { index: 1, .. })),
        "{result:?}"
    );
    assert_untouched(&stranger, &dir).await;
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_guard_commits_while_every_part_is_held_and_nothing_once_one_is_lost() {
    let (stranger, dir) = data_dir("tx-multi").await;
    let (first, second) = (unique_path("tx-multi-a"), unique_path("tx-multi-b"));
    let multi = MultiLock::new(client().await, &[(&second, Mode::Read), (&first, Mode::Write)]).unwrap();
    let both = multi.acquire().await.unwrap();

    both.transaction()
        .set_data(&format!("{dir}/b"), b"both", None)
        .commit()
        .await
        .unwrap();
    assert_eq!(
        read(&stranger, &format!("{dir}/b")).await.as_deref(),
        Some(b"both".as_slice())
    );
    stranger
        .set_data(&format!("{dir}/b"), b"old", None)
        .await
        .unwrap();

    let lost = both.part(&second).unwrap().node().to_owned();
    stranger.delete(&lost, None).await.unwrap();
    let result = both
        .transaction()
        .create(&format!("{dir}/a"), b"new-a", CreateAcl::Open)
        .set_data(&format!("{dir}/b"), b"new-b", None)
        .delete(&format!("{dir}/c"), None)
        .commit()
        .await;

    assert!(
        matches!(&result, Err(Error::Lost { node }) if *node == lost),
        "{result:?}"
    );
    assert_untouched(&stranger, &dir).await;
    assert!(matches!(both.release().await, Err(Error::Lost { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_sharing_the_lock_each_commit() {
    let (stranger, dir) = data_dir("tx-readers").await;
    let path = unique_path("tx-readers-lock");
    let (a, b) = (support::lock(&path).await, support::lock(&path).await);
    let (ra, rb) = (a.read().await.unwrap(), b.read().await.unwrap());
    ra.transaction()
        .create(&format!("{dir}/a"), b"from-a", CreateAcl::Open)
        .commit()
        .await
        .unwrap();
    rb.transaction()
        .set_data(&format!("{dir}/b"), b"from-b", Some(0))
        .commit()
        .await
        .unwrap();
    assert_eq!(
        read(&stranger, &format!("{dir}/a")).await.as_deref(),
        Some(b"from-a".as_slice())
    );
    assert_eq!(
        read(&stranger, &format!("{dir}/b")).await.as_deref(),
        Some(b"from-b".as_slice())
    );
    ra.release().await.unwrap();
    rb.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_asked_to_let_go_still_commits_until_it_releases() {
    let (stranger, dir) = data_dir("tx-revoked").await;
    let path = unique_path("tx-revoked-lock");
    let lock = support::lock(&path).await;
    let guard = lock.write().await.unwrap();
    // The request writes the holder's node: its version moves on.
    assert!(support::lock(&path).await.revoke(guard.node()).await.unwrap());
    let seen = tokio::time::timeout(SHORT, guard.revocation_requested()).await;
    assert_eq!(seen, Ok(true));

    guard
        .transaction()
        .create(&format!("{dir}/a"), b"last", CreateAcl::Open)
        .commit()
        .await
        .unwrap();
    assert_eq!(
        read(&stranger, &format!("{dir}/a")).await.as_deref(),
        Some(b"last".as_slice())
    );
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_commits_through_its_announcement() {
    let (stranger, dir) = data_dir("tx-leader").await;
    let election =
        support::candidate(&server().connect_string(), &unique_path("tx-leader-el"), "web01").await;
    let leadership = election.campaign().await.unwrap();
    // The announcement is a write on the leader's node.
    let (_, stat) = stranger.get_data(leadership.node()).await.unwrap();
    assert!(stat.version > 0, "{stat:?}");

    leadership
        .transaction()
        .set_data(&format!("{dir}/b"), b"term", None)
        .commit()
        .await
        .unwrap();
    assert_eq!(
        read(&stranger, &format!("{dir}/b")).await.as_deref(),
        Some(b"term".as_slice())
    );
    leadership.resign().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_committed_before_the_release_outlive_it() {
    let (stranger, dir) = data_dir("tx-after").await;
    let path = unique_path("tx-after-lock");
    let lock = support::lock(&path).await;
    let guard = lock.write().await.unwrap();
    let tx = guard
        .transaction()
        .create(&format!("{dir}/a"), b"kept", CreateAcl::Open);
    assert_eq!(tx.len(), 1);
    tx.commit().await.unwrap();
    guard.release().await.unwrap();
    support::wait_contenders(&lock, 0).await;
    assert_eq!(
        read(&stranger, &format!("{dir}/a")).await.as_deref(),
        Some(b"kept".as_slice())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_blocking_guard_commits_and_reports_a_lost_lock() {
    let (stranger, dir) = data_dir("tx-blocking").await;
    let servers = server().connect_string();
    let path = unique_path("tx-blocking-lock");
    let blocking = tokio::task::spawn_blocking(move || {
        let lock = zk_rwlock::blocking::SharedLock::connect(&servers, &path).unwrap();
        let guard = lock.write().unwrap();
        guard
            .transaction()
            .create(&format!("{dir}/a"), b"blocking", CreateAcl::Open)
            .commit()
            .unwrap();
        let node = guard.node().to_owned();
        let client = lock.client().clone();
        lock.block_on(client.delete(&node, None)).unwrap().unwrap();
        let lost = guard
            .transaction()
            .set_data(&format!("{dir}/b"), b"late", None)
            .commit();
        (dir, node, lost)
    });
    let (dir, node, lost) = joined(SHORT, blocking).await;
    assert!(
        matches!(&lost, Err(Error::Lost { node: n }) if *n == node),
        "{lost:?}"
    );
    assert_eq!(
        read(&stranger, &format!("{dir}/a")).await.as_deref(),
        Some(b"blocking".as_slice())
    );
    assert_eq!(
        read(&stranger, &format!("{dir}/b")).await.as_deref(),
        Some(b"old".as_slice())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_into_the_lock_directory_is_refused_before_it_is_sent() {
    let (stranger, dir) = data_dir("tx-lockdir").await;
    let path = unique_path("tx-lockdir-lock");
    let lock = support::lock(&path).await;
    let guard = lock.write().await.unwrap();

    let err = guard
        .transaction()
        .set_data(&format!("{dir}/b"), b"new-b", None)
        .create(&format!("{path}/x-W-0000000001"), b"", CreateAcl::Open)
        .commit()
        .await
        .unwrap_err();

    assert!(
        matches!(&err, Error::TransactionInLockDirectory { index: 1, path: p } if *p == format!("{path}/x-W-0000000001")),
        "{err:?}"
    );
    assert_untouched(&stranger, &dir).await;
    // A check may look there; the lock is still held, and the node alone is in it.
    guard
        .transaction()
        .check(guard.node(), None)
        .commit()
        .await
        .unwrap();
    let children = stranger.list_children(&path).await.unwrap();
    assert_eq!(children.len(), 1, "{children:?}");
    assert_eq!(guard.state(), HoldState::Held);
    guard.release().await.unwrap();
}
