//! Identities sharing a lock, against real servers: contenders of
//! different digest identities whose nodes only their creator may read
//! still wait on each other (`exists` watches need no permission), a
//! recycled lock directory keeps its ACL for the other identities, and a
//! creator-only lock with an open directory (`directory_acls`) lets others
//! queue. These need no TLS or SASL feature.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::{client, joined, server, unique_path, wait_contenders};
use zk_rwlock::{zk, SharedLock};

const SHORT: Duration = Duration::from_secs(10);

/// Two digest users share one lock whose directory is open but whose
/// contender nodes are `creator_all`: neither may read the other's node,
/// and `exists` watches need no permission, so both can wait on each other.
#[tokio::test]
async fn contenders_of_different_identities_watch_each_others_nodes() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("zk_rwlock=debug")
        .with_test_writer()
        .try_init();
    let path = unique_path("identities");
    let admin = client().await;
    support::mkdir_open(&admin, &path).await;
    let connect = |user: &'static str| async move {
        zk::Client::connector()
            .with_session_timeout(Duration::from_secs(4))
            .with_auth("digest", user.as_bytes())
            .connect(&server().connect_string())
            .await
            .unwrap()
    };
    let alice = SharedLock::builder(connect("alice:secret").await, &path)
        .acls(&zk::Acls::creator_all())
        .build()
        .unwrap();
    let bob = SharedLock::builder(connect("bob:secret").await, &path)
        .acls(&zk::Acls::creator_all())
        .build()
        .unwrap();
    // Bob's node is not readable by Alice.
    let held = bob.write().await.unwrap();
    assert!(matches!(
        alice.client().get_data(held.node()).await,
        Err(zk::Error::NoAuth)
    ));
    held.release().await.unwrap();
    for round in 0..3 {
        let (first, second) = if round % 2 == 0 {
            (&alice, &bob)
        } else {
            (&bob, &alice)
        };
        let g1 = first.write().await.unwrap();
        let writer = tokio::spawn({
            let second = second.clone();
            async move { second.write().await }
        });
        wait_contenders(&alice, 2).await;
        let reader = tokio::spawn({
            let first = first.clone();
            async move { first.read().await }
        });
        wait_contenders(&alice, 3).await;
        assert!(!writer.is_finished() && !reader.is_finished());
        g1.release().await.unwrap();
        let g2 = joined(SHORT, writer)
            .await
            .expect("the other identity's writer is granted");
        assert!(!reader.is_finished(), "the reader waits for the writer");
        g2.release().await.unwrap();
        joined(SHORT, reader).await.unwrap().release().await.unwrap();
    }
    support::assert_drained(&path).await;
}

/// A server of this module's own whose `/identities/acl-flip` directory
/// (open to anyone, as seeded) has its sequence counter at the limit.
fn seeded_server() -> &'static zk_rwlock_fixtures::launcher::ZkCluster {
    static SEEDED: std::sync::OnceLock<zk_rwlock_fixtures::launcher::ZkCluster> = std::sync::OnceLock::new();
    SEEDED.get_or_init(|| {
        zk_rwlock_fixtures::launcher::ZkCluster::builder()
            .seed_cversion("/identities/acl-flip", i32::MAX)
            .start()
            .expect("seeded server")
    })
}

/// A lock on `path` for a session with digest credentials `user`
/// (`name:password`) whose contender nodes only that identity may touch.
async fn creator_only(connect: &str, path: &str, user: &str) -> zk_rwlock::LockBuilder {
    let client = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .with_auth("digest", user.as_bytes())
        .connect(connect)
        .await
        .unwrap();
    SharedLock::builder(client, path).acls(&zk::Acls::creator_all())
}

/// Other identities keep their access when the directory is recycled: it
/// is deleted and created again, with the same ACL, in one transaction. A
/// directory that was simply deleted would be recreated by the next
/// contender with its `LockBuilder::directory_acls` (by default its
/// contender nodes' ACL): that happens to the directories the
/// library makes (container nodes) when ZooKeeper removes them, and to
/// those deleted by hand. A lock shared by identities that protect their
/// contender nodes with `creator_all` (the setup of
/// `contenders_of_different_identities_watch_each_others_nodes`) stays
/// shared when its directory is open (see
/// `a_creator_only_lock_with_an_open_directory_lets_others_queue`); only an
/// operator's pre-made directory ACL is lost when the directory is deleted.
///
/// Interleaving: the directory (open to anyone) is at the limit; Alice's
/// acquire is refused (SequenceExhausted) and recycles the empty
/// directory. Had it deleted it, Alice's next acquire would recreate it as
/// a container with creator_all (digest alice), and Bob, who could queue
/// there before, would get NoAuth.
#[tokio::test]
async fn a_recycled_directory_lets_other_identities_queue_again() {
    let path = "/identities/acl-flip";
    let connect = seeded_server().connect_string();
    let alice = creator_only(&connect, path, "alice:secret")
        .await
        .build()
        .unwrap();
    let bob = creator_only(&connect, path, "bob:secret").await.build().unwrap();
    // Bob can use the directory as it is (the counter is at the limit, so
    // he is refused with SequenceExhausted, not NoAuth) ... but that would
    // recycle it; so check his permission with a plain child instead.
    let probe = format!("{path}/probe");
    bob.client()
        .create(
            &probe,
            &[],
            &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .expect("Bob may create children in the seeded directory");
    bob.client().delete(&probe, None).await.unwrap();
    match alice.write().await {
        Err(zk_rwlock::Error::SequenceExhausted { .. }) => {}
        other => panic!("expected SequenceExhausted at the limit, got {other:?}"),
    }
    let c = support::client_on(&connect).await;
    // Recycled in place: the same directory, its counter from 0 again.
    let g = alice.write().await.expect("the directory was recycled");
    let seq = g.node().rsplit('-').next().unwrap().parse::<i64>().unwrap();
    assert!(seq < 10, "a fresh counter: {}", g.node());
    g.release().await.unwrap();
    let bobs = bob.try_write().await;
    assert!(
        bobs.is_ok(),
        "after Alice recreated the lock directory, Bob gets {bobs:?} (directory ACL now {:?})",
        c.get_acl(path).await.map(|(acl, _)| acl)
    );
}

/// A lock whose contender nodes are `creator_all` and whose directory is
/// given an open ACL (`directory_acls`) makes a missing lock directory (and
/// parents) open: another identity can queue on it, and only the contender
/// nodes are the creator's alone. Without `directory_acls` the directory
/// takes the contender nodes' ACL (see `tests/security/credentials.rs`).
#[tokio::test]
async fn a_creator_only_lock_with_an_open_directory_lets_others_queue() {
    let path = "/identities/fresh-parent/creator-dir";
    let connect = seeded_server().connect_string();
    let open_dir = |b: zk_rwlock::LockBuilder| b.directory_acls(&zk::Acls::anyone_all()).build().unwrap();
    let alice = open_dir(creator_only(&connect, path, "alice:secret").await);
    let bob = open_dir(creator_only(&connect, path, "bob:secret").await);
    let g = alice.write().await.expect("alice makes the directory and holds");
    let c = support::client_on(&connect).await;
    for dir in ["/identities/fresh-parent", path] {
        let (acl, _) = c.get_acl(dir).await.unwrap();
        assert_eq!(acl, zk::Acls::anyone_all().to_vec(), "the ACL of {dir}");
    }
    let refused = c.get_data(g.node()).await;
    assert_eq!(
        refused.err(),
        Some(zk::Error::NoAuth),
        "alice's node is hers alone"
    );
    assert!(
        bob.try_write().await.unwrap().is_none(),
        "bob queues (and gives up) beside alice's holder"
    );
    g.release().await.unwrap();
    let b = bob
        .try_write()
        .await
        .unwrap()
        .expect("bob takes the lock after alice");
    b.release().await.unwrap();
}
