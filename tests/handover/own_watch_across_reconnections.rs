//! My node's watch across a reconnection: the client sets it again on the
//! new connection, but a server that finds READ on my node taken away
//! meanwhile keeps it silent (it checks READ as a watch fires). The next
//! wait sets it again with `getData`, learns it may not read the node, and
//! its hand-off asks with `exists`.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::proxy::Proxy;
use support::{client, client_on, joined, lock, server, unique_path, wait_contenders, wait_watching};
use zk_rwlock::SharedLock;

const SHORT: Duration = Duration::from_secs(10);

/// The third writer waits on the second (its own node's watch set with
/// `getData` while it may read it); its connection is cut and, while it
/// is away, a stranger takes READ on its node; it comes back (the client
/// sets its watches again) and goes on waiting. The second withdraws: the
/// third reads the release record and lists again, and its new wait must
/// not trust the watch from the older connection. A stranger deletes the
/// third's node, a fourth writer queues behind the first, and the first
/// releases: the third fails `Lost`, and the fourth alone holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_after_a_reconnection_does_not_trust_my_nodes_watch_from_before_it() {
    let path = unique_path("own-watch-reconnected");
    let proxy = Proxy::start(&server().connect_string());
    let third_lock = SharedLock::new(client_on(proxy.addr()).await, &path).expect("lock path");
    let third_session = third_lock.client().session_id().0;
    let first_lock = lock(&path).await;
    let first = first_lock.write().await.unwrap();
    let second_lock = lock(&path).await;
    let second = tokio::spawn(async move { second_lock.write().await });
    wait_contenders(&first_lock, 2).await;
    let third = tokio::spawn(async move { third_lock.write().await });
    wait_contenders(&first_lock, 3).await;
    let queue = first_lock.contenders().await.unwrap();
    let (first_node, second_node, third_node) = (
        queue[0].path.clone(),
        queue[1].path.clone(),
        queue[2].path.clone(),
    );
    wait_watching(server(), &second_node, third_session).await;
    wait_watching(server(), &third_node, third_session).await;

    // Away while READ on its node is taken; back, watching the second again.
    proxy.set_blocked(true);
    proxy.cut_all();
    let stranger = client().await;
    crate::take_read_away(&stranger, &third_node).await;
    proxy.set_blocked(false);
    wait_watching(server(), &second_node, third_session).await;

    // The second withdraws: the third waits on the first now.
    second.abort();
    wait_watching(server(), &first_node, third_session).await;

    stranger.delete(&third_node, None).await.unwrap();
    let fourth_lock = lock(&path).await;
    let fourth_session = fourth_lock.client().session_id().0;
    let fourth = tokio::spawn(async move { fourth_lock.write().await });
    wait_watching(server(), &first_node, fourth_session).await;
    first.release().await.unwrap();
    let fourth = joined(SHORT, fourth).await.unwrap();
    assert!(fourth.is_held(), "the fourth holds after the first's release");
    let third = joined(SHORT, third).await;
    let both = matches!(&third, Ok(g) if g.is_held());
    assert!(
        matches!(third, Err(zk_rwlock::Error::Lost { .. })),
        "the third's node was deleted while it waited: it must fail Lost, not be granted \
         (two write holders now: {both}; third: {third:?})"
    );
    fourth.release().await.unwrap();
}
