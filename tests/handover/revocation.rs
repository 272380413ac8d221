//! Cooperative revocation against a real server: a request written to a
//! holder's node (`SharedLock::revoke`) reaches the holder's guard and
//! grants nobody until the holder releases.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::{client, joined, server, unique_path, wait_watching};
use zk_rwlock::{zk, Error, HoldState, Mode, SharedLock, REVOKE_PAYLOAD};

const SHORT: Duration = Duration::from_secs(10);

/// The payload is Apache Curator's, so its tooling interoperates.
#[test]
fn payload_is_curators() {
    assert_eq!(REVOKE_PAYLOAD, b"__REVOKE__");
}

/// A holds the write lock, B waits for it. A revocation request on A's
/// node reaches A and grants B nothing: B watches A's node again and stays
/// waiting until A releases, then it is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_grants_nobody_until_the_holder_releases() {
    let path = unique_path("revoke-holder");
    let a = support::lock(&path).await;
    let held = a.write().await.unwrap();
    let a_node = held.node().to_owned();
    assert!(!held.is_revocation_requested());

    let b = support::lock(&path).await;
    let b_session = b.client().session_id().0;
    let waiter = tokio::spawn(async move { b.write().await });
    wait_watching(server(), &a_node, b_session).await;

    // Contender nodes are created with empty data.
    let stranger = client().await;
    let (data, _) = stranger.get_data(&a_node).await.unwrap();
    assert!(data.is_empty(), "contender nodes carry no data: {data:?}");

    let revoker = support::lock(&path).await;
    // Written before the holder has a future pending: the first watch it
    // sets reads the node's data.
    assert!(revoker.revoke(&a_node).await.unwrap());
    let (data, _) = stranger.get_data(&a_node).await.unwrap();
    assert_eq!(data, REVOKE_PAYLOAD);

    let seen = tokio::time::timeout(SHORT, held.revocation_requested()).await;
    assert_eq!(seen, Ok(true), "the holder sees the request");
    assert!(held.is_revocation_requested());
    assert_eq!(held.state(), HoldState::Held, "a request takes nothing away");

    // The data change fired B's watch on A's node (the server removes a
    // watch before it answers the write that triggers it): B watching A's
    // node again means it has handled the change, and it is still waiting.
    wait_watching(server(), &a_node, b_session).await;
    assert!(
        !waiter.is_finished(),
        "a revocation request granted the waiting writer"
    );
    let queue = revoker.contenders().await.unwrap();
    assert_eq!(queue.len(), 2, "{queue:?}");
    assert_eq!(queue[0].path, a_node);

    held.release().await.unwrap();
    let granted = joined(SHORT, waiter).await.unwrap();
    assert_eq!(granted.mode(), Mode::Write);
    granted.release().await.unwrap();
}

/// A guard whose future is already pending (a writer that waited, whose
/// own node's watch from the wait goes on in the guard) completes when the
/// request arrives; `revoke` takes a child name too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_future_completes_on_the_request() {
    let path = unique_path("revoke-pending");
    let a = support::lock(&path).await;
    let first = a.write().await.unwrap();
    let b = support::lock(&path).await;
    let b_session = b.client().session_id().0;
    let waiter = tokio::spawn(async move { b.write().await });
    wait_watching(server(), first.node(), b_session).await;
    first.release().await.unwrap();
    let held = joined(SHORT, waiter).await.unwrap();
    assert!(!held.is_revocation_requested());

    {
        let requested = held.revocation_requested();
        tokio::pin!(requested);
        // Polled once: the future watches the node.
        assert!(futures_poll_once(requested.as_mut()).await.is_none());
        let name = held.node().rsplit('/').next().unwrap().to_owned();
        assert!(support::lock(&path).await.revoke(&name).await.unwrap());
        assert_eq!(tokio::time::timeout(SHORT, requested).await, Ok(true));
    }
    assert!(held.is_revocation_requested());
    held.release().await.unwrap();
}

/// Polls `f` once: its output if it was ready.
async fn futures_poll_once<F: std::future::Future + Unpin>(mut f: F) -> Option<F::Output> {
    std::future::poll_fn(|cx| match std::pin::Pin::new(&mut f).poll(cx) {
        std::task::Poll::Ready(out) => std::task::Poll::Ready(Some(out)),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}

/// Every reader holding the lock is asked by `revoke_holders`; a waiting
/// writer is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoke_holders_asks_every_holder() {
    let path = unique_path("revoke-holders");
    let r1 = support::lock(&path).await.read().await.unwrap();
    let r2 = support::lock(&path).await.read().await.unwrap();
    let w = support::lock(&path).await;
    let w_session = w.client().session_id().0;
    let waiter = tokio::spawn(async move { w.write().await });
    wait_watching(server(), r2.node(), w_session).await;

    let revoker = support::lock(&path).await;
    let mut asked = revoker.revoke_holders().await.unwrap().asked;
    asked.sort();
    let mut holders = vec![r1.node().to_owned(), r2.node().to_owned()];
    holders.sort();
    assert_eq!(asked, holders);
    assert_eq!(
        tokio::time::timeout(SHORT, r1.revocation_requested()).await,
        Ok(true)
    );
    assert_eq!(
        tokio::time::timeout(SHORT, r2.revocation_requested()).await,
        Ok(true)
    );

    r1.release().await.unwrap();
    wait_watching(server(), r2.node(), w_session).await;
    assert!(!waiter.is_finished(), "granted while a reader holds");
    r2.release().await.unwrap();
    let granted = joined(SHORT, waiter).await.unwrap();
    // The writer was never asked.
    let (data, _) = revoker.client().get_data(granted.node()).await.unwrap();
    assert!(data.is_empty(), "{data:?}");
    assert!(!granted.is_revocation_requested());
    granted.release().await.unwrap();
}

/// A request on a waiter's node grants it nothing (it lists again); the
/// request stands, and its guard reports it once granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_on_a_waiter_is_reported_once_granted() {
    let path = unique_path("revoke-waiter");
    let held = support::lock(&path).await.write().await.unwrap();
    let b = support::lock(&path).await;
    let b_session = b.client().session_id().0;
    let waiter = tokio::spawn(async move { b.write().await });
    wait_watching(server(), held.node(), b_session).await;
    let revoker = support::lock(&path).await;
    let queue = revoker.contenders().await.unwrap();
    let b_node = queue[1].path.clone();

    assert!(revoker.revoke(&b_node).await.unwrap());
    // B's own node's watch fired; it lists again, watches again, waits.
    wait_watching(server(), &b_node, b_session).await;
    wait_watching(server(), held.node(), b_session).await;
    assert!(!waiter.is_finished(), "a request on the waiter granted it");

    held.release().await.unwrap();
    let granted = joined(SHORT, waiter).await.unwrap();
    assert_eq!(
        tokio::time::timeout(SHORT, granted.revocation_requested()).await,
        Ok(true)
    );
    granted.release().await.unwrap();
}

/// A node that is gone, or that is no contender of this lock: false, and
/// nothing written. A guard whose node is deleted by someone else: its
/// future ends with false (no request can come any more).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gone_or_foreign_nodes_are_not_revoked() {
    let path = unique_path("revoke-gone");
    let lock = support::lock(&path).await;
    let held = lock.write().await.unwrap();
    let node = held.node().to_owned();
    held.release().await.unwrap();
    assert!(!lock.revoke(&node).await.unwrap(), "a released node");
    assert!(!lock.revoke("nobody-W-0000000007").await.unwrap());
    assert!(!lock.revoke("not a contender").await.unwrap());

    // A contender of another lock is not this lock's to revoke.
    let other_path = unique_path("revoke-other");
    let other = support::lock(&other_path).await.write().await.unwrap();
    assert!(!lock.revoke(other.node()).await.unwrap());
    let stranger = client().await;
    let (data, _) = stranger.get_data(other.node()).await.unwrap();
    assert!(data.is_empty());
    assert!(SharedLock::new(stranger.clone(), &other_path)
        .unwrap()
        .revoke(other.node())
        .await
        .unwrap());

    let held = lock.write().await.unwrap();
    stranger.delete(held.node(), None).await.unwrap();
    assert_eq!(
        tokio::time::timeout(SHORT, held.revocation_requested()).await,
        Ok(false)
    );
    assert_eq!(held.state(), HoldState::Lost);
    let _ = held.release().await;
    other.release().await.unwrap();
}

/// The blocking API: `revoke` on one handle, `wait_revocation_requested`
/// on the holder's guard, which times out (false) before the request.
#[test]
fn blocking_guard_waits_for_the_request() {
    let connect = server().connect_string();
    let path = unique_path("revoke-blocking");
    let holder = zk_rwlock::blocking::SharedLock::connect(&connect, &path).unwrap();
    let guard = holder.write().unwrap();
    assert!(!guard
        .wait_revocation_requested(Duration::from_millis(50))
        .unwrap());
    let revoker = zk_rwlock::blocking::SharedLock::connect(&connect, &path).unwrap();
    assert_eq!(
        revoker.revoke_holders().unwrap().asked,
        vec![guard.node().to_owned()]
    );
    assert!(guard.wait_revocation_requested(SHORT).unwrap());
    assert!(guard.is_revocation_requested());
    guard.release().unwrap();
    let revoked = revoker.revoke_holders().unwrap();
    assert!(revoked.asked.is_empty() && revoked.refused.is_empty());
}

/// A request written while the holder is cut off reaches it after it
/// reconnects: the client sets its watch again with the last zxid it saw,
/// and the server reports the change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_made_during_a_disconnect_is_seen_after_it() {
    let path = unique_path("revoke-cut");
    let proxy = support::proxy::Proxy::start(&server().connect_string());
    let holder_client = zk_rwlock::zk::Client::connector()
        .with_session_timeout(Duration::from_secs(8))
        .connect(proxy.addr())
        .await
        .unwrap();
    let session = holder_client.session_id().0;
    let holder = SharedLock::new(holder_client, &path).unwrap();
    let held = holder.write().await.unwrap();
    {
        let requested = held.revocation_requested();
        tokio::pin!(requested);
        assert!(futures_poll_once(requested.as_mut()).await.is_none());
        wait_watching(server(), held.node(), session).await;
        proxy.set_blocked(true);
        proxy.cut_all();
        assert!(support::lock(&path).await.revoke(held.node()).await.unwrap());
        assert!(futures_poll_once(requested.as_mut()).await.is_none());
        proxy.set_blocked(false);
        assert_eq!(tokio::time::timeout(SHORT, requested).await, Ok(true));
    }
    assert_eq!(held.state(), HoldState::Held);
    held.release().await.unwrap();
}

/// A node of a lock nested under this lock's directory is no contender of
/// this lock (`NodeName` parses a host containing `/`): by full path or by
/// relative name, nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_lock_node_is_not_revoked_through_the_parent() {
    let outer_path = unique_path("revoke-outer");
    let outer = support::lock(&outer_path).await;
    let outer_held = outer.write().await.unwrap();
    let inner_path = format!("{outer_path}/sub");
    let inner_held = support::lock(&inner_path).await.write().await.unwrap();
    let inner_node = inner_held.node().to_owned();
    let relative = inner_node
        .strip_prefix(&format!("{outer_path}/"))
        .unwrap()
        .to_owned();
    assert!(!outer.revoke(&inner_node).await.unwrap());
    assert!(!outer.revoke(&relative).await.unwrap());
    let (data, _) = client().await.get_data(&inner_node).await.unwrap();
    assert!(data.is_empty(), "another lock's holder was asked: {data:?}");
    inner_held.release().await.unwrap();
    outer_held.release().await.unwrap();
}

/// A holder whose node refuses WRITE does not stop `revoke_holders`: the
/// other holders are asked, and the refusal is reported with its node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoke_holders_asks_the_others_when_one_refuses() {
    let path = unique_path("revoke-noauth");
    let admin = client().await;
    support::mkdir_open(&admin, &path).await;
    let alice_client = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .with_auth("digest", b"alice:secret".as_slice())
        .connect(&server().connect_string())
        .await
        .unwrap();
    let alice = SharedLock::builder(alice_client, &path)
        .acls(&zk::Acls::creator_all())
        .build()
        .unwrap();
    let closed = alice.read().await.unwrap();
    let open = support::lock(&path).await.read().await.unwrap();
    let revoked = support::lock(&path).await.revoke_holders().await.unwrap();
    assert_eq!(revoked.asked, vec![open.node().to_owned()]);
    assert_eq!(revoked.refused.len(), 1, "{revoked:?}");
    assert_eq!(revoked.refused[0].0, closed.node());
    assert!(
        matches!(revoked.refused[0].1, Error::NoAuth { .. }),
        "{revoked:?}"
    );
    let (data, _) = client().await.get_data(open.node()).await.unwrap();
    assert_eq!(data, REVOKE_PAYLOAD);
    closed.release().await.unwrap();
    open.release().await.unwrap();
}

/// A request a waiter saw is kept, as the guard's flag is: another
/// client's later write to the node before the grant does not erase it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_seen_while_waiting_is_sticky() {
    let path = unique_path("revoke-sticky");
    let held = support::lock(&path).await.write().await.unwrap();
    let b = support::lock(&path).await;
    let b_session = b.client().session_id().0;
    let waiter = tokio::spawn(async move { b.write().await });
    wait_watching(server(), held.node(), b_session).await;
    let revoker = support::lock(&path).await;
    let b_node = revoker.contenders().await.unwrap()[1].path.clone();
    assert!(revoker.revoke(&b_node).await.unwrap());
    // B read the request when it watched its node again.
    wait_watching(server(), &b_node, b_session).await;
    let stranger = client().await;
    stranger.set_data(&b_node, b"other", None).await.unwrap();
    wait_watching(server(), &b_node, b_session).await;
    held.release().await.unwrap();
    let granted = joined(SHORT, waiter).await.unwrap();
    assert!(
        granted.is_revocation_requested(),
        "the request seen while waiting was lost"
    );
    assert_eq!(
        tokio::time::timeout(SHORT, granted.revocation_requested()).await,
        Ok(true)
    );
    granted.release().await.unwrap();
}
