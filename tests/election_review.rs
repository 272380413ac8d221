//! The election attacked on a real server (each test was a finding of an
//! outside review, fixed, or pins down an
//! attack that held up.

use zk_rwlock_testkit as support;

use std::time::Duration;

use support::{candidate, client_on, server, unique_path, until_term, wait_watching};
use tokio::time::Instant;
use zk_rwlock::{zk, Election, HoldState};

const WITHIN: Duration = Duration::from_secs(20);

/// Finding 1. A stranger writes to the leader's node, deletes it and makes
/// a node of the same name in one transaction. The leadership's guard sees
/// another czxid and says Lost (as a plain guard does, see
/// tests/guard_state.rs), but the re-announce task (`keep_announced`)
/// checks neither czxid nor owner: its data watch fired with
/// NodeDataChanged, it reads the stranger's node (empty data), and writes
/// `leader:a` on it. Observers then name `a` leader, with the stranger's
/// node as term and the stranger's session, while a's leadership is Lost;
/// for as long as a keeps its `Leadership` (or forever after
/// `into_guard`, as `zk-rwlock lead` and the blocking API do), any write
/// to the stranger's node is "announced over" again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]

async fn the_announcer_never_writes_on_a_node_made_again_by_someone_else() {
    let path = unique_path("review-remade");
    let zk = server();
    let connect = zk.connect_string();
    let a = candidate(&connect, &path, "a").await;
    let observer = candidate(&connect, &path, "observer").await;
    let mut rx = observer.observe();
    let leading = a.campaign().await.unwrap();
    let node = leading.node().to_owned();
    until_term(&mut rx, leading.term()).await;
    wait_watching(zk, &node, a.client().session_id().0).await;
    let stranger = client_on(&connect).await;
    let mut multi = stranger.new_multi_writer();
    multi.add_set_data(&node, b"not a revocation", None).unwrap();
    multi.add_delete(&node, None).unwrap();
    multi
        .add_create(
            &node,
            b"",
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .unwrap();
    multi.commit().await.unwrap();
    tokio::time::timeout(WITHIN, leading.lost())
        .await
        .expect("the leadership is lost: its node was made again");
    assert_eq!(leading.state(), HoldState::Lost);
    // For a while after the loss, nothing may name `a`: the node is the
    // stranger's, its data the stranger's empty data.
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let (data, stat) = stranger.get_data(&node).await.unwrap();
        assert!(
            data.is_empty(),
            "a's lost leadership wrote {:?} on the stranger's node (czxid {}, owner {:#x})",
            String::from_utf8_lossy(&data),
            stat.czxid,
            stat.ephemeral_owner
        );
        let named = observer.leader().await.unwrap();
        assert_eq!(named, None, "a lost leadership is named leader");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(leading);
    stranger.delete(&node, None).await.unwrap();
}

/// Finding 3. The observer keeps its last value when a look fails with an
/// error that is not connection loss. Here the next leader's node is
/// `creator_all` (digest auth) without READ for the observer, which the
/// module docs advise against but which the lock itself allows: `a`
/// resigns, `b` leads, and the observer's `getData` on the head gets
/// NoAuth on every retry. `leader()` says Err(NoAuth), but the observer's
/// receiver goes on naming `a`, who resigned, for ever (it never says
/// `None`, and nothing tells the receiver that it is blind).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]

async fn an_observer_that_cannot_read_the_head_does_not_name_a_resigned_leader() {
    let path = unique_path("review-noread");
    let connect = server().connect_string();
    let admin = client_on(&connect).await;
    support::mkdir_open(&admin, &path).await;
    let a = candidate(&connect, &path, "a").await;
    let b_client = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .with_auth("digest", b"bob:secret".as_slice())
        .connect(&connect)
        .await
        .unwrap();
    let b = Election::builder(b_client, &path)
        .identity("b")
        .acls(&zk::Acls::creator_all())
        .build()
        .unwrap();
    let observer = candidate(&connect, &path, "observer").await;
    let mut rx = observer.observe();
    let leading = a.campaign().await.unwrap();
    let a_term = leading.term();
    until_term(&mut rx, a_term).await;
    let waiting = tokio::spawn(async move { b.campaign().await.unwrap() });
    support::wait_contenders(a.lock(), 2).await;
    leading.resign().await.unwrap();
    let next = support::joined(WITHIN, waiting).await;
    assert!(
        matches!(observer.leader().await, Err(zk_rwlock::Error::NoAuth { .. })),
        "leader() cannot read b's node either"
    );
    let moved_on = tokio::time::timeout(
        Duration::from_secs(10),
        rx.wait_for(|l| l.as_ref().map(|l| l.term) != Some(a_term)),
    )
    .await;
    assert!(
        moved_on.is_ok(),
        "the observer still names a (term {a_term}), who resigned; b leads with term {}",
        next.term()
    );
    next.resign().await.unwrap();
}

/// Held up (race loop). A campaign dropped at any point (timings varied
/// around the grant and the announcement) leaves no node behind, and the
/// next campaign is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_campaign_leaves_no_node() {
    let path = unique_path("review-drop");
    let connect = server().connect_string();
    let a = candidate(&connect, &path, "a").await;
    let checker = candidate(&connect, &path, "checker").await;
    for i in 0..40u64 {
        let cut = Duration::from_micros(i * 150);
        let _ = tokio::time::timeout(cut, a.campaign()).await;
        support::eventually("the dropped campaign's node is gone", WITHIN, || async {
            checker.lock().contenders().await.unwrap().is_empty()
        })
        .await;
    }
    let leading = tokio::time::timeout(WITHIN, a.campaign()).await.unwrap().unwrap();
    leading.resign().await.unwrap();
    support::assert_drained(&path).await;
}
