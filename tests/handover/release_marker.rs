//! The release marker (docs/protocol.md, "Wire protocol") on a real server: the
//! hand-off it carries needs no request after the event; a predecessor that
//! gives up creates no marker and leaves no watch behind; a stranger's node
//! under a marker's name, and a release written by a client that creates
//! no marker, cost a read, never the lock.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::{
    client, eventually, joined, lock, received_on, server, unique_path, wait_contenders, wait_watching,
};
use zk_rwlock::node_name::{release_marker, RELEASE_MARKER_SUFFIX};
use zk_rwlock::zk;
use zk_rwlock::{SharedLock, WriteGuard};

const SHORT: Duration = Duration::from_secs(10);

/// The child name of a full path.
fn child(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The paths under `dir` on the shared server that are watched and end as
/// a marker.
fn watched_markers(dir: &str) -> Vec<String> {
    let wchp = server().four_letter(0, "wchp").unwrap();
    let dir = format!("{dir}/");
    wchp.lines()
        .filter(|l| l.starts_with(&dir) && l.ends_with(RELEASE_MARKER_SUFFIX))
        .map(str::to_owned)
        .collect()
}

/// Fails unless no marker under `dir` is watched on the server.
fn assert_no_marker_watched(dir: &str) {
    let watched = watched_markers(dir);
    assert!(watched.is_empty(), "no marker watched: {watched:?}");
}

/// Waits until no marker under `dir` is watched on the server.
async fn until_no_marker_watched(dir: &str) {
    eventually("no marker watched", SHORT, || {
        let none = watched_markers(dir).is_empty();
        async move { none }
    })
    .await;
}

/// A waiter behind a writer that others precede is granted by the writer's
/// release with no request of its own between its wait and its grant: the
/// marker's `NodeCreated`, then the deletion, in the events of the release's
/// transaction. The release record is still written, for clients that read
/// it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chained_hand_off_sends_no_request_after_the_event() {
    let path = unique_path("marker-chain");
    let support::WriterChain {
        first,
        second,
        third,
        queue,
        ..
    } = support::writer_chain(&path).await;
    let second_node = &queue[1].path;
    let third_session = {
        // The third writer's session is the one watching the second's marker.
        let marker = format!("{path}/{}", release_marker(child(&queue[1].path)));
        eventually("the third writer watches the marker", SHORT, || {
            let watched = watched_markers(&path).contains(&marker);
            async move { watched }
        })
        .await;
        let wchp = server().four_letter(0, "wchp").unwrap();
        let sessions = support::watchers_in(&wchp, &marker);
        assert_eq!(sessions.len(), 1, "one session watches {marker}: {wchp}");
        i64::from_str_radix(sessions[0].trim_start_matches("0x"), 16).unwrap()
    };
    first.release().await.unwrap();
    let second = joined(SHORT, second).await.unwrap();
    let before = received_on(third_session);
    second.release().await.unwrap();
    let third = joined(SHORT, third).await.unwrap();
    let after = received_on(third_session);
    assert_eq!(
        after - before,
        0,
        "the third writer sent {} requests between its wait and its grant",
        after - before
    );
    let record = client().await.get_data(&path).await.unwrap().0;
    assert_eq!(
        record,
        child(second_node).as_bytes(),
        "the release record is written too"
    );
    assert_no_marker_watched(&path);
    third.release().await.unwrap();
}

/// A waiter whose predecessor gives up sees a deletion with no marker: it
/// reads the record, lists again, and drops its watch on the marker that
/// will never be made, so the server keeps none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_predecessor_that_gives_up_leaves_no_marker_watch() {
    let path = unique_path("marker-give-up");
    let first_lock = lock(&path).await;
    let first = first_lock.write().await.unwrap();
    let second_lock = lock(&path).await;
    let second = tokio::spawn(async move { second_lock.write_timeout(Duration::from_millis(1500)).await });
    wait_contenders(&first_lock, 2).await;
    let third_lock = lock(&path).await;
    let third_session = third_lock.client().session_id().0;
    let third = tokio::spawn(async move { third_lock.write().await });
    wait_contenders(&first_lock, 3).await;
    let queue = first_lock.contenders().await.unwrap();
    let marker = format!("{path}/{}", release_marker(child(&queue[1].path)));
    wait_watching(server(), &marker, third_session).await;
    // The second gives up: the third must move on to the first.
    assert!(
        joined(SHORT, second).await.unwrap().is_none(),
        "the second gave up"
    );
    wait_watching(server(), first.node(), third_session).await;
    until_no_marker_watched(&path).await;
    assert!(!third.is_finished(), "the third waits while the first holds");
    first.release().await.unwrap();
    let third = joined(SHORT, third).await.unwrap();
    assert_no_marker_watched(&path);
    third.release().await.unwrap();
}

/// A stranger's node under the name of a release marker refuses the
/// release's transaction whole; the release deletes its node plainly, and
/// the waiter behind it (whose marker watch found the node there and took
/// it for no signal) reads the record, lists, and is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strangers_node_under_a_markers_name_costs_a_read_not_the_lock() {
    let path = unique_path("marker-stranger");
    let support::WriterChain {
        first,
        second,
        third,
        queue,
        ..
    } = support::writer_chain(&path).await;
    let stranger = client().await;
    let marker = format!("{path}/{}", release_marker(child(&queue[1].path)));
    stranger
        .create(
            &marker,
            b"not a release",
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    first.release().await.unwrap();
    let second = joined(SHORT, second).await.unwrap();
    assert!(
        !third.is_finished(),
        "the marker made before the release grants nothing"
    );
    second.release().await.unwrap();
    let third = joined(SHORT, third).await.unwrap();
    let children = support::children(&stranger, &path).await;
    assert!(
        !children.iter().any(|c| queue[1].path.ends_with(c.as_str())),
        "the second's node is gone: {children:?}"
    );
    assert!(
        stranger.check_stat(&marker).await.unwrap().is_some(),
        "the stranger's node stays"
    );
    third.release().await.unwrap();
    stranger.delete(&marker, None).await.unwrap();
}

/// A release written by a client that makes no marker (an older zk-rwlock:
/// the record and the deletion only) is verified with the record: the
/// waiter reads it, and is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_without_a_marker_is_verified_by_the_record() {
    let path = unique_path("marker-old-release");
    let first_lock = lock(&path).await;
    let first = first_lock.write().await.unwrap();
    // An older client's writer, queued second (a native writer's name).
    let old = client().await;
    let prefix = format!("{path}/old@{}-W-", uuid::Uuid::new_v4().simple());
    let (_, old_node) = old
        .create(
            &prefix,
            &[],
            &zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let old_node = format!("{prefix}{old_node}");
    let third_lock = lock(&path).await;
    let third_session = third_lock.client().session_id().0;
    let third = tokio::spawn(async move { third_lock.write().await });
    wait_watching(server(), &old_node, third_session).await;
    // The first releases, and the older client "holds" and releases the
    // way it always did: record and deletion, no marker.
    first.release().await.unwrap();
    let before = received_on(third_session);
    let name = child(&old_node);
    let mut release = old.new_multi_writer();
    release.add_set_data(&path, name.as_bytes(), None).unwrap();
    release.add_delete(&old_node, None).unwrap();
    release.commit().await.unwrap();
    let third = joined(SHORT, third).await.unwrap();
    let sent = received_on(third_session) - before;
    // The record's read, and the removal of the marker's watch.
    assert!(
        sent <= 2,
        "the third writer sent {sent} requests for the hand-off"
    );
    assert_no_marker_watched(&path);
    third.release().await.unwrap();
}

/// At scale, the markers' watches cost nothing once the waits are over:
/// 200 writers queued behind a holder, on 20 sessions, every one of them
/// watching its predecessor's marker (bar the first), all give up at their
/// deadline; the server then keeps no watch on any marker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_waiters_that_give_up_leave_no_marker_watch() {
    const SESSIONS: usize = 20;
    const PER_SESSION: usize = 10;
    let path = unique_path("marker-scale");
    let holder_lock = lock(&path).await;
    let holder = holder_lock.write().await.unwrap();
    let mut locks = Vec::new();
    for _ in 0..SESSIONS {
        locks.push(lock(&path).await);
    }
    let mut waiters = Vec::new();
    for round in 0..PER_SESSION {
        for lock in &locks {
            let lock = lock.clone();
            waiters.push(tokio::spawn(async move {
                lock.write_timeout(Duration::from_secs(6)).await
            }));
        }
        wait_contenders(&holder_lock, 1 + SESSIONS * (round + 1)).await;
    }
    let waiting = SESSIONS * PER_SESSION;
    eventually(
        "every waiter but the first watches its predecessor's marker",
        SHORT,
        || {
            let n = watched_markers(&path).len();
            async move { n == waiting - 1 }
        },
    )
    .await;
    for waiter in waiters {
        assert!(joined(SHORT, waiter).await.unwrap().is_none(), "a waiter gave up");
    }
    until_no_marker_watched(&path).await;
    holder.release().await.unwrap();
}

/// A client authenticated as `users:pw` (digest), with a short session.
async fn user_client() -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .with_auth("digest", b"users:pw")
        .connect(&server().connect_string())
        .await
        .unwrap()
}

/// CREATE on the lock directory is enough to forge a release marker; a
/// lock built with `release_markers(false)` does not trust markers, and a
/// principal that may only list the directory and create children in it
/// (no WRITE for the record, no DELETE for contender nodes) cannot get a
/// writer granted beside the holder. The stranger creates the marker of
/// the writer the third waits on while it waits; that writer then gives
/// up: the third reads the record, lists again, and waits on the holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_that_does_not_trust_markers_cannot_be_forged_with_create_alone() {
    let path = unique_path("marker-create-only");
    let admin = user_client().await;
    let parent = path.rsplit_once('/').unwrap().0;
    admin
        .mkdir(
            parent,
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .ok();
    let dir_acl = [
        zk::Acl::new(zk::Permission::ALL, zk::AuthId::new("auth", "")),
        zk::Acl::new(
            zk::Permission::READ | zk::Permission::CREATE,
            zk::AuthId::anyone(),
        ),
    ];
    admin
        .create(
            &path,
            &[],
            &zk::CreateMode::Persistent.with_acls(zk::Acls::new(&dir_acl)),
        )
        .await
        .unwrap();
    let users_lock = || async {
        zk_rwlock::SharedLock::builder(user_client().await, &path)
            .release_markers(false)
            .build()
            .unwrap()
    };
    let first_lock = users_lock().await;
    let first = first_lock.write().await.unwrap();
    let second_lock = users_lock().await;
    let second = tokio::spawn(async move { second_lock.write_timeout(Duration::from_secs(3)).await });
    wait_contenders(&first_lock, 2).await;
    let third_lock = users_lock().await;
    let third_session = third_lock.client().session_id().0;
    let third = tokio::spawn(async move { third_lock.write().await });
    wait_contenders(&first_lock, 3).await;
    let queue = first_lock.contenders().await.unwrap();
    wait_watching(server(), &queue[1].path, third_session).await;
    assert!(watched_markers(&path).is_empty(), "markers are not watched");

    let stranger = client().await;
    assert_eq!(
        stranger
            .set_data(&path, child(&queue[1].path).as_bytes(), None)
            .await
            .err(),
        Some(zk::Error::NoAuth),
        "the stranger cannot write the record"
    );
    assert_eq!(
        stranger.delete(&queue[0].path, None).await.err(),
        Some(zk::Error::NoAuth),
        "the stranger cannot delete contender nodes"
    );
    let marker = format!("{path}/{}", release_marker(child(&queue[1].path)));
    stranger
        .create(
            &marker,
            &[],
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .expect("CREATE is all it takes to make the marker");
    assert!(
        joined(SHORT, second).await.unwrap().is_none(),
        "the second gave up"
    );
    wait_watching(server(), first.node(), third_session).await;
    assert!(!third.is_finished(), "the third waits while the first holds");
    first.release().await.unwrap();
    let third = joined(SHORT, third).await.unwrap();
    third.release().await.unwrap();
    admin.delete(&marker, None).await.unwrap();
}

/// `build()` counts the release's transaction, marker included, against
/// the client's request limit: a lock whose release would be refused as
/// too large (its ACLs travel with the marker's create) is refused when
/// built; a smaller one writes its release record (the transaction fits).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_refuses_a_lock_whose_release_would_be_too_large() {
    const LIMIT: u32 = 4096;
    let path = unique_path("marker-limits");
    let acls = |entries: usize| {
        let mut acls = vec![zk::Acl::new(zk::Permission::ALL, zk::AuthId::anyone())];
        for i in 0..entries {
            acls.push(zk::Acl::new(
                zk::Permission::READ,
                zk::AuthId::new("digest", &format!("user{i:02}:{}", "x".repeat(28))),
            ));
        }
        acls
    };
    let make = |entries: usize| {
        let acls = acls(entries);
        let path = path.clone();
        async move {
            let c = zk::Client::connector()
                .with_session_timeout(Duration::from_secs(4))
                .with_max_request_size(LIMIT)
                .connect(&server().connect_string())
                .await
                .unwrap();
            zk_rwlock::SharedLock::builder(c, &path)
                .identity("web01")
                .acls(&acls)
                .directory_acls(&[zk::Acl::new(zk::Permission::ALL, zk::AuthId::anyone())])
                .build()
        }
    };
    // About 3,800 bytes of ACL entries: the create fits, the release not.
    assert!(
        matches!(make(70).await, Err(zk_rwlock::Error::RequestTooLarge { .. })),
        "a lock whose release does not fit is refused"
    );
    let first_lock = make(30).await.expect("a lock whose requests fit");
    let first = first_lock.write().await.unwrap();
    let second_lock = make(30).await.unwrap();
    let second = tokio::spawn(async move { second_lock.write().await });
    wait_contenders(&first_lock, 2).await;
    let third_lock = make(30).await.unwrap();
    let third = tokio::spawn(async move { third_lock.write().await });
    wait_contenders(&first_lock, 3).await;
    first.release().await.unwrap();
    let second = joined(SHORT, second).await.unwrap();
    let second_name = child(second.node()).to_owned();
    second.release().await.unwrap();
    let third = joined(SHORT, third).await.unwrap();
    let record = client().await.get_data(&path).await.unwrap().0;
    third.release().await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&record),
        second_name,
        "the release transaction went through"
    );
}

/// A lock handle whose session was seen to read its own node: the third
/// writer of a chain (on that handle) sets the watches on its node and on
/// the second's marker in one `SetWatches` request, and sends a create, a
/// listing, that request and the second's read in all; it is still granted
/// by the marker's event alone, with no request after it.
async fn third_of_a_chain_on_a_taught_handle(
    path: &str,
) -> (SharedLock, SharedLock, WriteGuard, Waiting, i64) {
    let first_lock = lock(path).await;
    let third_lock = lock(path).await;
    crate::teach_own_readable(&first_lock, &third_lock).await;
    let first = first_lock.write().await.unwrap();
    let second_lock = lock(path).await;
    let second = tokio::spawn(async move { second_lock.write().await });
    wait_contenders(&first_lock, 2).await;
    let session = third_lock.client().session_id().0;
    let before = received_on(session);
    let third = {
        let third_lock = third_lock.clone();
        tokio::spawn(async move { third_lock.write().await })
    };
    wait_contenders(&first_lock, 3).await;
    let queue = first_lock.contenders().await.unwrap();
    let marker = format!("{path}/{}", release_marker(child(&queue[1].path)));
    eventually("the third writer watches the second's marker", SHORT, || {
        let watched = watched_markers(path).contains(&marker);
        async move { watched }
    })
    .await;
    wait_watching(server(), &queue[1].path, session).await;
    let sent = received_on(session) - before;
    (
        first_lock,
        third_lock,
        first,
        Waiting {
            second,
            third,
            third_node: queue[2].path.clone(),
        },
        sent,
    )
}

struct Waiting {
    second: tokio::task::JoinHandle<Result<WriteGuard, zk_rwlock::Error>>,
    third: tokio::task::JoinHandle<Result<WriteGuard, zk_rwlock::Error>>,
    third_node: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_that_read_its_node_sets_its_own_and_the_markers_watch_in_one_request() {
    let path = unique_path("marker-together");
    let (_first_lock, third_lock, first, waiting, sent) = third_of_a_chain_on_a_taught_handle(&path).await;
    assert_eq!(
        sent, 4,
        "create, listing, one SetWatches for my node and the marker, the second's read"
    );
    let third_session = third_lock.client().session_id().0;
    first.release().await.unwrap();
    let second = joined(SHORT, waiting.second).await.unwrap();
    let before = received_on(third_session);
    second.release().await.unwrap();
    let third = joined(SHORT, waiting.third).await.unwrap();
    assert_eq!(
        received_on(third_session) - before,
        0,
        "granted by the marker's event, no request"
    );
    assert!(third.is_held());
    third.release().await.unwrap();
    assert_no_marker_watched(&path);
}

/// The watch set with the marker's is relative to my node's making: a
/// revocation request written to my node while I wait is seen (the wait
/// lists again and reads my node), and the guard says so at the grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_request_on_a_waiter_whose_watches_went_together_is_seen() {
    let path = unique_path("marker-together-revoked");
    let (_first_lock, _third_lock, first, waiting, _) = third_of_a_chain_on_a_taught_handle(&path).await;
    let stranger = client().await;
    stranger
        .set_data(&waiting.third_node, zk_rwlock::REVOKE_PAYLOAD, None)
        .await
        .unwrap();
    first.release().await.unwrap();
    joined(SHORT, waiting.second)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    let third = joined(SHORT, waiting.third).await.unwrap();
    assert!(
        tokio::time::timeout(SHORT, third.revocation_requested())
            .await
            .unwrap_or(false),
        "the request written while it waited is on the guard"
    );
    third.release().await.unwrap();
}

/// A node deleted by someone else while it waits with the watches set
/// together: the acquire fails as lost, never granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_watches_went_together_loses_a_node_deleted_under_it() {
    let path = unique_path("marker-together-deleted");
    let (_first_lock, _third_lock, first, waiting, _) = third_of_a_chain_on_a_taught_handle(&path).await;
    let stranger = client().await;
    stranger.delete(&waiting.third_node, None).await.unwrap();
    let third = joined(SHORT, waiting.third).await;
    assert!(
        matches!(third, Err(zk_rwlock::Error::Lost { .. })),
        "lost, not granted: {third:?}"
    );
    first.release().await.unwrap();
    joined(SHORT, waiting.second)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}
