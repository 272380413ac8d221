//! The leader's announcement (`leader:<identity>` written on its node,
//! which observers read) on a real server: it never hides a revocation
//! request, a revoked leader stays named (asked to step down) until it
//! resigns, a stranger's write on the leader's node is announced over, and
//! a node made again by someone else is never written on.

use zk_rwlock_fixtures as support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::{candidate, client_on, eventually, server, unique_path, until_term, wait_watching};
use tokio::time::Instant;
use zk_rwlock::{zk, Election, HoldState, Leader};

const WITHIN: Duration = Duration::from_secs(20);

/// Waits until `election`'s lock shows `n` contenders.
async fn contenders(election: &Election, n: usize) {
    support::wait_contenders(election.lock(), n).await;
}

/// A revocation request written while a candidate waits is not hidden by
/// its announcement, and one written on the leader's node reaches its
/// leadership (observers keep naming it, asked to step down: see
/// `a_revoked_leader_stays_named_until_it_resigns`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_announcement_never_hides_a_revocation() {
    let path = unique_path("election-revoke");
    let connect = server().connect_string();
    let a = candidate(&connect, &path, "a").await;
    let b = candidate(&connect, &path, "b").await;
    let observer = candidate(&connect, &path, "observer").await;
    let mut rx = observer.observe();
    let leading = a.campaign().await.unwrap();
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move { b.campaign().await.unwrap() })
    };
    contenders(&a, 2).await;
    let queue = observer.lock().contenders().await.unwrap();
    assert!(
        observer.lock().revoke(&queue[1].path).await.unwrap(),
        "b's node is asked"
    );
    leading.resign().await.unwrap();
    let next = support::joined(WITHIN, waiting).await;
    assert!(
        next.is_revocation_requested(),
        "the request made while b waited is not lost"
    );
    until_term(&mut rx, next.term()).await;
    let (data, _) = observer.client().get_data(next.node()).await.unwrap();
    assert_eq!(data, b"leader:b", "announced after the request was taken in");

    // A request on the announced leader: its leadership sees it.
    let c = candidate(&connect, &path, "c").await;
    let third = c.campaign_timeout(Duration::from_millis(200)).await.unwrap();
    assert!(third.is_none(), "b still leads");
    next.resign().await.unwrap();
    let leading = c.campaign().await.unwrap();
    until_term(&mut rx, leading.term()).await;
    assert!(!leading.is_revocation_requested());
    assert!(observer.lock().revoke(leading.node()).await.unwrap());
    assert!(
        tokio::time::timeout(WITHIN, leading.revocation_requested())
            .await
            .unwrap(),
        "the leader is asked to step down"
    );
    let named = observer.leader().await.unwrap().expect("still named");
    assert_eq!((named.term, named.revocation_requested), (leading.term(), true));
    leading.resign().await.unwrap();
    tokio::time::timeout(WITHIN, rx.wait_for(Option::is_none))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(observer.leader().await.unwrap(), None);
    support::assert_drained(&path).await;
}

/// A revocation request asks the leader to step down and ends nothing by
/// itself: a leader that ignores it (as `zk-rwlock lead` does by default)
/// still holds the write lock, nobody else can lead, and its term stands.
/// So `leader()` and `observe()` keep naming it, with the request shown,
/// from the request until it resigns (never `None` in between), and the
/// next candidate is named once it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_leader_stays_named_until_it_resigns() {
    let path = unique_path("election-revoked-leader");
    let connect = server().connect_string();
    let a = candidate(&connect, &path, "a").await;
    let b = candidate(&connect, &path, "b").await;
    let observer = candidate(&connect, &path, "observer").await;
    let leading = a.campaign().await.unwrap();
    let mut rx = observer.observe();
    until_term(&mut rx, leading.term()).await;
    // Every value the observer says from now on, in order.
    let said = Arc::new(Mutex::new(Vec::<Option<Leader>>::new()));
    let recorder = {
        let (said, mut rx) = (said.clone(), rx.clone());
        tokio::spawn(async move {
            loop {
                said.lock().unwrap().push(rx.borrow_and_update().clone());
                if rx.changed().await.is_err() {
                    return;
                }
            }
        })
    };
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move { b.campaign().await.unwrap() })
    };
    contenders(&a, 2).await;

    let asked = observer.lock().revoke_holders().await.unwrap().asked;
    assert_eq!(asked, [leading.node()], "the leader's node is asked");
    assert!(
        tokio::time::timeout(WITHIN, leading.revocation_requested())
            .await
            .unwrap(),
        "the leader is asked to step down"
    );
    // The request is its node's data, over the announcement.
    let (data, stat) = observer.client().get_data(leading.node()).await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (zk_rwlock::REVOKE_PAYLOAD, 2));
    // It leads on: the lock is still its, the next candidate waits.
    assert_eq!(leading.state(), HoldState::Held);
    assert!(!waiting.is_finished(), "a request grants no one");
    let named = observer
        .leader()
        .await
        .unwrap()
        .expect("the revoked leader is named");
    assert_eq!(
        (
            named.identity.as_str(),
            named.term,
            named.node.as_str(),
            named.revocation_requested
        ),
        ("a", leading.term(), leading.node(), true)
    );
    let seen = tokio::time::timeout(
        WITHIN,
        rx.wait_for(|l| l.as_ref().is_some_and(|l| l.revocation_requested)),
    )
    .await
    .expect("the observer shows the request")
    .unwrap()
    .clone()
    .unwrap();
    assert_eq!(seen.term, leading.term());
    // The next campaign's observer names it too, from its first look.
    let late = candidate(&connect, &path, "late").await;
    let mut late_rx = late.observe();
    let first = until_term(&mut late_rx, leading.term()).await;
    assert!(first.revocation_requested);

    // Its term ends when it resigns: then the next candidate leads.
    let resigned = leading.term();
    leading.resign().await.unwrap();
    let next = support::joined(WITHIN, waiting).await;
    until_term(&mut rx, next.term()).await;
    let now = observer.leader().await.unwrap().expect("b leads");
    assert_eq!((now.identity.as_str(), now.revocation_requested), ("b", false));
    let next_term = next.term();
    next.resign().await.unwrap();
    eventually("the recorder saw the next leader", WITHIN, || {
        let seen = said
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.as_ref().is_some_and(|l| l.term == next_term));
        async move { seen }
    })
    .await;
    recorder.abort();
    let said = said.lock().unwrap().clone();
    // From the request to the resignation: a, then a asked, never None.
    let revoked_at = said
        .iter()
        .position(|l| l.as_ref().is_some_and(|l| l.revocation_requested))
        .expect("the request was seen");
    let resigned_at = said
        .iter()
        .position(|l| l.as_ref().is_none_or(|l| l.term != resigned))
        .expect("the resignation was seen");
    assert!(revoked_at < resigned_at, "{said:?}");
    assert!(
        said[..resigned_at]
            .iter()
            .all(|l| l.as_ref().is_some_and(|l| l.term == resigned)),
        "the leader was not named all along: {said:?}"
    );
    support::assert_drained(&path).await;
}

/// A stranger's write to the leader's node is replaced by the leader's
/// announcement again (observers keep naming it); it revokes and grants
/// nothing, and the next leader is named as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strangers_write_on_the_leaders_node_is_announced_over() {
    let path = unique_path("election-stranger");
    let connect = server().connect_string();
    let a = candidate(&connect, &path, "a").await;
    let b = candidate(&connect, &path, "b").await;
    let observer = candidate(&connect, &path, "observer").await;
    let mut rx = observer.observe();
    let leading = a.campaign().await.unwrap();
    until_term(&mut rx, leading.term()).await;
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move { b.campaign().await.unwrap() })
    };
    contenders(&a, 2).await;
    let stranger = client_on(&connect).await;
    let (_, before) = stranger.get_data(leading.node()).await.unwrap();
    stranger.set_data(leading.node(), b"junk", None).await.unwrap();
    eventually("the leader announced itself again", WITHIN, || async {
        let (data, stat) = stranger.get_data(leading.node()).await.unwrap();
        data == b"leader:a" && stat.version > before.version + 1
    })
    .await;
    until_term(&mut rx, leading.term()).await;
    assert_eq!(
        observer.leader().await.unwrap().map(|l| l.term),
        Some(leading.term())
    );
    assert_eq!(leading.state(), HoldState::Held);
    assert!(
        !leading.is_revocation_requested(),
        "junk is no revocation request"
    );
    assert!(!waiting.is_finished(), "a data change grants no one");
    leading.resign().await.unwrap();
    let next = support::joined(WITHIN, waiting).await;
    let seen = until_term(&mut rx, next.term()).await;
    assert_eq!(seen.identity, "b");
    next.resign().await.unwrap();
    support::assert_drained(&path).await;
}

/// A stranger writes to the leader's node, deletes it and makes a node of
/// the same name in one transaction. The leadership's guard sees another
/// czxid and says Lost (as a plain guard does, see
/// tests/faults/guard_state.rs), and the re-announce task
/// (`keep_announced`) must not write on the stranger's node: its data
/// watch fired with NodeDataChanged, and had it checked neither czxid nor
/// owner it would read the stranger's node (empty data) and write
/// `leader:a` on it. Observers would then name `a` leader, with the
/// stranger's node as term and the stranger's session, while a's
/// leadership is Lost; for as long as a kept its `Leadership` (or forever
/// after `into_guard`, as `zk-rwlock lead` and the blocking API do), any
/// write to the stranger's node would be "announced over" again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_announcer_never_writes_on_a_node_made_again_by_someone_else() {
    let path = unique_path("election-remade");
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
