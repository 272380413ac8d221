//! What a wait knows of reading its own node, for its `SetWatches`: bound
//! to the connection it learnt it on (`Client::connections`), learnt only
//! from a read of the node it made (another czxid: `Lost`). Schedules
//! against a real server.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::proxy::{op, Proxy};
use support::{
    client, client_on, eventually, joined, lock, server, unique_path, wait_contenders, wait_watching,
};
use zk_rwlock::SharedLock;

const SHORT: Duration = Duration::from_secs(10);

/// A handle behind a proxy that has learnt it reads its own node: one wait
/// right behind a holder. Returns the handle, its session, and the holder's lock.
async fn taught(path: &str) -> (Proxy, SharedLock, i64, SharedLock) {
    let proxy = Proxy::start(&server().connect_string());
    let third_lock = SharedLock::new(client_on(proxy.addr()).await, path).expect("lock path");
    let session = third_lock.client().session_id().0;
    let first_lock = lock(path).await;
    crate::teach_own_readable(&first_lock, &third_lock).await;
    (proxy, third_lock, session, first_lock)
}

/// A read of my node after a lost create's answer is mine: the create's answer lost (cut after the
/// create, reconnections refused a while), my node found again by
/// find-own (its czxid from a `Stat`), the wait after the reconnection
/// reads my node with `getData`: the same czxid, not `Lost`; granted when
/// the holder releases, one node of mine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_found_after_a_lost_create_answer_is_read_as_mine_and_granted() {
    let path = unique_path("swr2-find-own");
    let (proxy, third_lock, session, first_lock) = taught(&path).await;
    let first = first_lock.write().await.unwrap();
    proxy.cut_after_request(&[op::CREATE, op::CREATE2]);
    proxy.set_blocked(true);
    let third = {
        let third_lock = third_lock.clone();
        tokio::spawn(async move { third_lock.write().await })
    };
    eventually("the third's create is cut", SHORT, || {
        let fired = proxy.fired() == 1;
        async move { fired }
    })
    .await;
    proxy.set_blocked(false);
    let queue = first_lock.contenders().await.unwrap();
    assert_eq!(queue.len(), 2, "{queue:?}");
    wait_watching(server(), &queue[0].path, session).await;
    assert!(
        support::watches(server(), &queue[1].path, session),
        "the wait watches its own node"
    );
    first.release().await.unwrap();
    let third = joined(SHORT, third).await;
    assert!(matches!(&third, Ok(g) if g.is_held()), "{third:?}");
    assert_eq!(first_lock.contenders().await.unwrap().len(), 1);
    third.unwrap().release().await.unwrap();
}

/// A taught handle's wait, its watches set on its first connection, cut
/// while waiting; while it is kept out a stranger takes READ off its node
/// and deletes it. Back in, the client sets its watches again (relative to
/// its latest zxid): my node's deletion comes at once, the wait fails
/// `Lost`; the next writer alone holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taught_wait_cut_while_waiting_whose_node_is_made_unreadable_and_deleted_is_lost() {
    let path = unique_path("swr2-cut-waiting");
    let (proxy, third_lock, session, first_lock) = taught(&path).await;
    let first = first_lock.write().await.unwrap();
    let second_lock = lock(&path).await;
    let second = tokio::spawn(async move { second_lock.write().await });
    wait_contenders(&first_lock, 2).await;
    let third = {
        let third_lock = third_lock.clone();
        tokio::spawn(async move { third_lock.write().await })
    };
    wait_contenders(&first_lock, 3).await;
    let queue = first_lock.contenders().await.unwrap();
    let (second_node, third_node) = (queue[1].path.clone(), queue[2].path.clone());
    wait_watching(server(), &second_node, session).await;
    wait_watching(server(), &third_node, session).await;
    proxy.set_blocked(true);
    proxy.cut_all();
    let stranger = client().await;
    crate::take_read_away(&stranger, &third_node).await;
    stranger.delete(&third_node, None).await.unwrap();
    proxy.set_blocked(false);
    let third = joined(SHORT, third).await;
    assert!(matches!(third, Err(zk_rwlock::Error::Lost { .. })), "{third:?}");
    first.release().await.unwrap();
    let second = joined(SHORT, second).await.unwrap();
    assert!(second.is_held());
    second.release().await.unwrap();
}
