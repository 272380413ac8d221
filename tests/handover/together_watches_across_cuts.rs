//! The wait's `SetWatches` (own node and release marker in one
//! request, relative to my node's czxid, once the handle learnt that its
//! session reads its own node): schedules against a real server.
//!
//! Every test here runs the same opening: a handle behind a proxy learns
//! that it reads its own node (one wait behind a holder), then, as the
//! third writer of a chain (`first` holds, `second` waits on it, `third`
//! waits on `second` with the marker), sends its `SetWatches`; the proxy
//! cuts the connection right after forwarding it and refuses reconnections
//! while a stranger acts on the third's node. Then the proxy lets the
//! client back in: the wait lists again and sends its `SetWatches` again,
//! relative to the same czxid, with what the handle learnt before.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::proxy::Proxy;
use support::{
    client, client_on, eventually, joined, lock, server, unique_path, wait_contenders, wait_watching,
};
use zk_rwlock::zk;
use zk_rwlock::{SharedLock, WriteGuard};

const SHORT: Duration = Duration::from_secs(10);

/// `SetWatches`, as the proxy sees it.
const SET_WATCHES: i32 = 101;

type Acquiring = tokio::task::JoinHandle<Result<WriteGuard, zk_rwlock::Error>>;

struct Cut {
    proxy: Proxy,
    first_lock: SharedLock,
    first: WriteGuard,
    second: Acquiring,
    third: Acquiring,
    /// Full paths: the second's node (watched by the third) and the third's.
    second_node: String,
    third_node: String,
    third_session: i64,
}

/// The opening described at the top: returns with the third's first
/// `SetWatches` forwarded to the server, its connection cut, and the proxy
/// refusing new connections.
async fn taught_third_cut_after_its_set_watches(path: &str) -> Cut {
    let proxy = Proxy::start(&server().connect_string());
    let third_lock = SharedLock::new(client_on(proxy.addr()).await, path).expect("lock path");
    let third_session = third_lock.client().session_id().0;
    let first_lock = lock(path).await;
    crate::teach_own_readable(&first_lock, &third_lock).await;

    let first = first_lock.write().await.unwrap();
    let second_lock = lock(path).await;
    let second = tokio::spawn(async move { second_lock.write().await });
    wait_contenders(&first_lock, 2).await;
    proxy.cut_after_request(&[SET_WATCHES]);
    proxy.set_blocked(true);
    let third = {
        let third_lock = third_lock.clone();
        tokio::spawn(async move { third_lock.write().await })
    };
    eventually("the third's SetWatches is cut", SHORT, || {
        let fired = proxy.fired() == 1;
        async move { fired }
    })
    .await;
    let queue = first_lock.contenders().await.unwrap();
    assert_eq!(queue.len(), 3, "{queue:?}");
    Cut {
        proxy,
        first_lock,
        first,
        second,
        third,
        second_node: queue[1].path.clone(),
        third_node: queue[2].path.clone(),
        third_session,
    }
}

/// Lets the third back in and waits until its wait is set again: the
/// server has its data watch on the second's node, which the exchange sends
/// right after its `SetWatches` (the first attempt's `getData` never left
/// the proxy, and a cut connection's watches go with it).
async fn let_back_in(cut: &Cut) {
    cut.proxy.set_blocked(false);
    wait_watching(server(), &cut.second_node, cut.third_session).await;
}

/// READ on my node taken away after the handle learnt that it
/// reads its nodes (here a stranger's `setACL` while the session is cut
/// off; the same for an `ip` ACL and a session that comes back from another
/// address, or an identity a new connection does not re-establish). The
/// wait's `SetWatches` is answered `Ok` and sets a watch the server never
/// fires (it checks READ when a watch fires: CVE-2024-23944), and the
/// hand-off trusts it: the stranger deletes my node, the second releases,
/// and the third is granted on its marker with its node gone, while a
/// fourth writer, queued after the deletion behind the second, is granted
/// by the same release: two write holders. With `getData` (the change's
/// first wait, or before the change) the answer is NoAuth, the hand-off
/// asks `exists` first, and the third fails `Lost`.
///
/// The fix: what the handle learnt holds for the connection it learnt it
/// on (`zk::Client::connections`); the wait after the reconnection asks
/// with `getData` again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_taken_away_after_the_handle_learnt_grants_a_waiter_whose_node_is_gone() {
    let path = unique_path("swr-read-taken");
    let cut = taught_third_cut_after_its_set_watches(&path).await;
    let stranger = client().await;
    crate::take_read_away(&stranger, &cut.third_node).await;
    let_back_in(&cut).await;
    assert!(
        !support::watches(server(), &cut.third_node, cut.third_session),
        "after the reconnection the wait asks with getData, refused: no watch on its unreadable node"
    );

    stranger.delete(&cut.third_node, None).await.unwrap();
    let fourth_lock = lock(&path).await;
    let fourth_session = fourth_lock.client().session_id().0;
    let fourth = tokio::spawn(async move { fourth_lock.write().await });
    wait_contenders(&cut.first_lock, 3).await;
    wait_watching(server(), &cut.second_node, fourth_session).await;

    cut.first.release().await.unwrap();
    let second = joined(SHORT, cut.second).await.unwrap();
    second.release().await.unwrap();
    let fourth = joined(SHORT, fourth).await.unwrap();
    assert!(fourth.is_held(), "the fourth holds after the second's release");
    let third = joined(SHORT, cut.third).await;
    let both = matches!(&third, Ok(g) if g.is_held());
    assert!(
        matches!(third, Err(zk_rwlock::Error::Lost { .. })),
        "the third's node was deleted while it waited: it must fail Lost, not be granted \
         (two write holders now: {both}; third: {third:?})"
    );
    fourth.release().await.unwrap();
}

/// A revocation request written to my node before the wait's
/// `SetWatches` (while cut off): the watch relative to the czxid fires at
/// once, the hand-off lists again, and the guard says revocation requested.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_request_written_before_the_set_watches_is_on_the_guard() {
    let path = unique_path("swr-revoked-before");
    let cut = taught_third_cut_after_its_set_watches(&path).await;
    let stranger = client().await;
    stranger
        .set_data(&cut.third_node, zk_rwlock::REVOKE_PAYLOAD, None)
        .await
        .unwrap();
    let_back_in(&cut).await;
    cut.first.release().await.unwrap();
    joined(SHORT, cut.second).await.unwrap().release().await.unwrap();
    let third = joined(SHORT, cut.third).await.unwrap();
    assert!(third.is_held());
    eventually("the guard has the revocation request", SHORT, || async {
        third.is_revocation_requested()
    })
    .await;
    third.release().await.unwrap();
}

/// My node deleted and made again under my name by a stranger before the
/// wait's `SetWatches`: back on a new connection, the wait reads its node
/// with `getData`, finds another czxid and fails `Lost` (a contender that
/// reads its node with another czxid has lost it: `Contender::own_node_read`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_made_again_under_my_name_before_the_set_watches_is_not_held() {
    let path = unique_path("swr-remade");
    let cut = taught_third_cut_after_its_set_watches(&path).await;
    let stranger = client().await;
    stranger.delete(&cut.third_node, None).await.unwrap();
    stranger
        .create(
            &cut.third_node,
            b"",
            &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    // Back in, the wait reads its node (the connection changed: with
    // `getData`), finds another czxid and fails `Lost` at once, without
    // deleting the stranger's node.
    cut.proxy.set_blocked(false);
    let third = joined(SHORT, cut.third).await;
    assert!(
        matches!(third, Err(zk_rwlock::Error::Lost { .. })),
        "my node made again by a stranger: lost, never held: {third:?}"
    );
    assert!(
        stranger.check_stat(&cut.third_node).await.unwrap().is_some(),
        "the stranger's node is not mine to delete"
    );
    cut.first.release().await.unwrap();
    stranger.delete(&cut.third_node, None).await.unwrap();
    joined(SHORT, cut.second).await.unwrap().release().await.unwrap();
}

/// The same schedule as the one above on a handle that has
/// not learnt (its wait asks with `getData`, cut after that request): the
/// retried `getData` says NoAuth, the hand-off asks `exists`, and the third
/// fails `Lost`; the fourth alone holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_read_taken_away_on_an_untaught_handle_is_lost() {
    let path = unique_path("swr-read-taken-control");
    let proxy = Proxy::start(&server().connect_string());
    let third_lock = SharedLock::new(client_on(proxy.addr()).await, &path).expect("lock path");
    let third_session = third_lock.client().session_id().0;
    let first_lock = lock(&path).await;
    let first = first_lock.write().await.unwrap();
    let second_lock = lock(&path).await;
    let second = tokio::spawn(async move { second_lock.write().await });
    wait_contenders(&first_lock, 2).await;
    proxy.cut_after_request(&[support::proxy::op::GET_DATA]);
    proxy.set_blocked(true);
    let third = tokio::spawn(async move { third_lock.write().await });
    eventually("the third's getData is cut", SHORT, || {
        let fired = proxy.fired() == 1;
        async move { fired }
    })
    .await;
    let queue = first_lock.contenders().await.unwrap();
    let (second_node, third_node) = (queue[1].path.clone(), queue[2].path.clone());
    let stranger = client().await;
    crate::take_read_away(&stranger, &third_node).await;
    proxy.set_blocked(false);
    wait_watching(server(), &second_node, third_session).await;
    stranger.delete(&third_node, None).await.unwrap();
    let fourth_lock = lock(&path).await;
    let fourth_session = fourth_lock.client().session_id().0;
    let fourth = tokio::spawn(async move { fourth_lock.write().await });
    wait_contenders(&first_lock, 3).await;
    wait_watching(server(), &second_node, fourth_session).await;
    first.release().await.unwrap();
    joined(SHORT, second).await.unwrap().release().await.unwrap();
    let fourth = joined(SHORT, fourth).await.unwrap();
    let third = joined(SHORT, third).await;
    assert!(matches!(third, Err(zk_rwlock::Error::Lost { .. })), "{third:?}");
    fourth.release().await.unwrap();
}
