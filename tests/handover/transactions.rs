//! Writes that commit only while the lock is held (`transaction()` on the
//! guards, a downgraded one, a multi-guard, a leadership, and the blocking
//! ones), against a real server: all of a transaction is written while the
//! holder's nodes exist, nothing of it once one is gone or when one of its
//! operations fails, and the error says which. A commit that finds a node
//! gone turns its guard (and a re-entrant owner) `Lost` at once. An answer
//! lost, garbled or empty (a `multi` answered by the `garbled_answers`
//! module's `liar`) is an unknown outcome, never `Ok` nor "nothing
//! written"; a commit racing the session's expiry never says "nothing
//! written" of a write that was. Nothing is sent for a multi-guard across
//! sessions or chroots, nor for a write into any part's lock directory.
//!
//! That a transaction cannot be committed after its guard's release is a
//! compile-time property: a `compile_fail` doctest on
//! `ReadGuard::transaction` and `WriteGuard::transaction` holds it.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use crate::garbled_answers::liar::Liar;
use support::proxy::{op, Proxy};
use support::{assert_drained, client, client_on, joined, mkdir_open, server, unique_path};
use zk_rwlock::{zk, CreateAcl, Error, HoldState, Mode, MultiLock, SharedLock};

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

/// Leader-only writes across a change of leader: the old leader, whose
/// node is gone, commits nothing; the new one commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_current_leader_commits_across_a_change_of_leader() {
    let (stranger, dir) = data_dir("tx-leaders").await;
    let path = unique_path("tx-leaders-el");
    let connect = server().connect_string();
    let (first, second) = (
        support::candidate(&connect, &path, "web01").await,
        support::candidate(&connect, &path, "web02").await,
    );
    let old = first.campaign().await.unwrap();
    let next = tokio::spawn(async move { second.campaign().await.map(|l| (l, second)) });
    // The old leader's node goes (an operator, an expiry): the next takes over.
    stranger.delete(old.node(), None).await.unwrap();
    let (new, _second) = tokio::time::timeout(SHORT, next)
        .await
        .expect("the next candidate leads")
        .unwrap()
        .unwrap();
    let at = format!("{dir}/b");
    let refused = old.transaction().set_data(&at, b"stale", None).commit().await;
    assert!(matches!(refused, Err(Error::Lost { .. })), "{refused:?}");
    assert_untouched(&stranger, &dir).await;
    new.transaction()
        .set_data(&at, b"new", None)
        .commit()
        .await
        .unwrap();
    assert_eq!(read(&stranger, &at).await.as_deref(), Some(b"new".as_slice()));
    new.resign().await.unwrap();
    drop(old);
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

/// A guard whose keeper watches its node, on a session through a proxy
/// that holds back the notifications of the lock directory for `delay`:
/// returns the proxy, the lock and the guard.
async fn watched_guard(name: &str, delay: Duration) -> (Proxy, SharedLock, zk_rwlock::WriteGuard) {
    let proxy = Proxy::start(&server().connect_string());
    let path = unique_path(name);
    let holder = SharedLock::new(client_on(proxy.addr()).await, &path).unwrap();
    let guard = holder.write().await.unwrap();
    // The keeper sets its watch after 100 ms: wait until the server has it.
    support::wait_watching(server(), guard.node(), holder.client().session_id().0).await;
    proxy.delay_events_for(&path, delay);
    (proxy, holder, guard)
}

/// A commit refused because the holder's node is gone returns
/// `Error::Lost`, and the guard says so at once (`HoldState::Lost`,
/// `is_held()` false), before its kept watch's notification arrives (held
/// back here by the network).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_finds_the_node_gone_turns_the_guard_lost_at_once() {
    let (stranger, dir) = data_dir("tx-lost-state").await;
    let (_proxy, _holder, guard) = watched_guard("tx-lost-state-lock", Duration::from_secs(5)).await;
    stranger.delete(guard.node(), None).await.unwrap();
    let result = guard
        .transaction()
        .set_data(&format!("{dir}/b"), b"late", None)
        .commit()
        .await;
    assert!(matches!(&result, Err(Error::Lost { .. })), "{result:?}");
    let state = guard.state();
    let held = guard.is_held();
    assert_eq!(
        (state, held),
        (HoldState::Lost, false),
        "a commit that found the node gone (Error::Lost) turns its guard Lost at once, \
         yet the guard says {state:?}, is_held() = {held}"
    );
}

/// The same with a re-entrant owner: once its commit found the node gone,
/// the owner's next acquire is refused with `Error::Lost`, not nested on
/// that node, before the watch's notification arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_does_not_nest_on_a_node_its_commit_found_gone() {
    let (stranger, dir) = data_dir("tx-lost-owner").await;
    let proxy = Proxy::start(&server().connect_string());
    let path = unique_path("tx-lost-owner-lock");
    let holder = SharedLock::new(client_on(proxy.addr()).await, &path).unwrap();
    let mut owner = holder.reentrant();
    let outer = owner.write().await.unwrap();
    support::wait_watching(server(), outer.node(), holder.client().session_id().0).await;
    proxy.delay_events_for(&path, Duration::from_secs(5));
    stranger.delete(outer.node(), None).await.unwrap();
    let result = outer
        .transaction()
        .set_data(&format!("{dir}/b"), b"late", None)
        .commit()
        .await;
    assert!(matches!(&result, Err(Error::Lost { .. })), "{result:?}");
    let nested = owner.try_write().await;
    assert!(
        matches!(nested, Err(Error::Lost { .. })),
        "a nested acquire on a node the owner's commit found gone is refused with Error::Lost: {nested:?}"
    );
}

/// The multi's answer lost (the connection cut right after it is
/// forwarded) or garbled: `TransactionOutcomeUnknown`, never `Ok` nor an
/// error that says nothing was written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_or_garbled_commit_answer_is_an_unknown_outcome() {
    let proxy = Proxy::start(&server().connect_string());
    for garble in [false, true] {
        let (_stranger, dir) = data_dir("tx-cut").await;
        let path = unique_path("tx-cut-lock");
        let holder = SharedLock::new(client_on(proxy.addr()).await, &path).unwrap();
        let guard = holder.write().await.unwrap();
        for attempt in 1.. {
            let fired = proxy.fired();
            if garble {
                proxy.garble_after_request(&[op::MULTI]);
            } else {
                proxy.cut_after_request(&[op::MULTI]);
            }
            let result = guard
                .transaction()
                .set_data(&format!("{dir}/b"), b"new", None)
                .commit()
                .await;
            proxy.cut_after_request(&[]);
            proxy.garble_after_request(&[]);
            assert!(
                matches!(&result, Err(Error::TransactionOutcomeUnknown { .. })),
                "garble={garble}: {result:?}"
            );
            if proxy.fired() == fired + 1 {
                break;
            }
            // The client lost the connection on its own (a loaded machine)
            // before the multi reached the proxy: unknown all the same, and
            // the fault is tried again once the guard is back.
            assert!(attempt < 3, "the fault never fired: {result:?}");
            tokio::time::timeout(SHORT, guard.resumed()).await.unwrap();
        }
        let at = format!("{dir}/b");
        // (The multi may or may not be applied, even later: the proxy
        // answers the garbled reply itself and closes the connection, and
        // the server drops a request whose connection closed before it was
        // taken.)
        // The guard survives the cut (same session): it still holds and commits.
        tokio::time::timeout(SHORT, guard.resumed()).await.unwrap();
        guard
            .transaction()
            .set_data(&at, b"again", None)
            .commit()
            .await
            .unwrap();
        guard.release().await.unwrap();
        assert_drained(&path).await;
    }
}

/// The user's transaction answered by an empty success (through the
/// `garbled_answers` module's `liar`, which answers a `multi` itself): not
/// taken for a commit (`TransactionOutcomeUnknown`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_multi_answer_is_no_commit() {
    let (_stranger, dir) = data_dir("tx-short").await;
    let liar = Liar::start(&server().connect_string());
    let path = unique_path("tx-short-lock");
    let holder = SharedLock::new(client_on(&liar.addr).await, &path).unwrap();
    let guard = holder.write().await.unwrap();
    liar.arm();
    let r = guard
        .transaction()
        .set_data(&format!("{dir}/b"), b"x", None)
        .commit()
        .await;
    assert_eq!(liar.lied(), 1);
    assert!(
        matches!(&r, Err(Error::TransactionOutcomeUnknown { .. })),
        "{r:?}"
    );
    guard.release().await.unwrap();
    assert_drained(&path).await;
}

/// The session expires while the commit is in flight (held back by a
/// frozen network): whatever the commit says, an error that says "nothing
/// written" means nothing was written, and the lock is free afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_racing_the_sessions_expiry_never_lies() {
    let proxy = Proxy::start(&server().connect_string());
    for round in 0..2 {
        let (stranger, dir) = data_dir("tx-expiry").await;
        let path = unique_path("tx-expiry-lock");
        let victim = client_on(proxy.addr()).await;
        let holder = SharedLock::new(victim.clone(), &path).unwrap();
        let guard = holder.write().await.unwrap();
        if round == 0 {
            proxy.freeze();
        }
        let b = format!("{dir}/b");
        let commit = tokio::spawn(async move {
            let r = guard.transaction().set_data(&b, b"late", None).commit().await;
            (r, guard.state())
        });
        if round == 0 {
            proxy.thaw();
        }
        support::expire_behind(&proxy, &victim, &server().connect_string()).await;
        let (result, state) = joined(Duration::from_secs(20), commit).await;
        let written = read(&stranger, &format!("{dir}/b")).await.as_deref() == Some(b"late".as_slice());
        eprintln!("round {round}: {result:?}, state {state:?}, written {written}");
        match &result {
            Ok(_) => assert!(written),
            Err(Error::TransactionOutcomeUnknown { .. }) => {}
            Err(e) => assert!(!written, "{e:?} but written"),
        }
        assert_drained(&path).await;
    }
}

/// A multi-guard over two sessions, or over one session through two
/// chroots, sends nothing (`TransactionAcrossSessions`), even for a
/// transaction with no operation of the user's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_guard_across_sessions_or_chroots_sends_nothing() {
    let (stranger, dir) = data_dir("tx-across").await;
    let (a, b) = (unique_path("tx-across-a"), unique_path("tx-across-b"));
    let one = client().await;
    let two = client().await;
    let multi = MultiLock::from_locks([
        (SharedLock::new(one.clone(), &a).unwrap(), Mode::Write),
        (SharedLock::new(two.clone(), &b).unwrap(), Mode::Read),
    ])
    .unwrap();
    let both = multi.acquire().await.unwrap();
    for tx in [
        both.transaction().set_data(&format!("{dir}/b"), b"x", None),
        both.transaction(),
    ] {
        let r = tx.commit().await;
        assert!(
            matches!(&r, Err(Error::TransactionAcrossSessions { .. })),
            "{r:?}"
        );
    }
    both.release().await.unwrap();
    // One session, two chroots: `/` and `/test`.
    let chrooted = one.clone().chroot("/test").unwrap_or_else(|_| panic!("chroot"));
    let b_rel = b.strip_prefix("/test").unwrap().to_owned();
    let multi = MultiLock::from_locks([
        (SharedLock::new(one.clone(), &a).unwrap(), Mode::Write),
        (SharedLock::new(chrooted, &b_rel).unwrap(), Mode::Write),
    ])
    .unwrap();
    let both = multi.acquire().await.unwrap();
    let r = both
        .transaction()
        .set_data(&format!("{dir}/b"), b"x", None)
        .commit()
        .await;
    assert!(
        matches!(&r, Err(Error::TransactionAcrossSessions { .. })),
        "{r:?}"
    );
    assert_eq!(
        read(&stranger, &format!("{dir}/b")).await.as_deref(),
        Some(b"old".as_slice())
    );
    both.release().await.unwrap();
}

/// A multi-guard's transaction may not write into any part's lock
/// directory (the second part's too), nor the directory node itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_guard_may_not_write_into_any_parts_directory() {
    let (a, b) = (unique_path("tx-dir-a"), unique_path("tx-dir-b"));
    let multi = MultiLock::new(client().await, &[(&a, Mode::Write), (&b, Mode::Read)]).unwrap();
    let both = multi.acquire().await.unwrap();
    for (tx, index) in [
        (both.transaction().set_data(&b, b"x", None), 0),
        (
            both.transaction()
                .check(&a, None)
                .create(&format!("{b}/x-W-0000000000"), b"", CreateAcl::Open),
            1,
        ),
        (both.transaction().delete(both.parts()[1].node(), None), 0),
    ] {
        let r = tx.commit().await;
        assert!(
            matches!(&r, Err(Error::TransactionInLockDirectory { index: i, .. }) if *i == index),
            "{r:?}"
        );
    }
    assert_eq!(both.state(), HoldState::Held);
    both.release().await.unwrap();
    assert_drained(&a).await;
    assert_drained(&b).await;
}

/// A downgraded guard's transaction checks the node that holds the read
/// lock now (the reader node), and commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downgraded_guard_commits_behind_its_new_node() {
    let (stranger, dir) = data_dir("tx-downgrade").await;
    let path = unique_path("tx-downgrade-lock");
    let l = support::lock(&path).await;
    let write = l.write().await.unwrap();
    let writer = write.node().to_owned();
    let read_guard = write.downgrade().await.unwrap();
    assert_ne!(read_guard.node(), writer);
    read_guard
        .transaction()
        .set_data(&format!("{dir}/b"), b"down", None)
        .commit()
        .await
        .unwrap();
    // A stranger deleting the reader node: the next commit is refused.
    stranger.delete(read_guard.node(), None).await.unwrap();
    let r = read_guard
        .transaction()
        .set_data(&format!("{dir}/b"), b"late", None)
        .commit()
        .await;
    assert!(
        matches!(&r, Err(Error::Lost { node }) if node == read_guard.node()),
        "{r:?}"
    );
    assert_eq!(
        read(&stranger, &format!("{dir}/b")).await.as_deref(),
        Some(b"down".as_slice())
    );
}
