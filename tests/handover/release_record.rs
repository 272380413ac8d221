//! The release record (see docs/protocol.md, "Wire protocol") under attack, each
//! against a real server: a record the server refuses, and a waiter that
//! only a release could grant whose node is deleted (it learns of it while
//! the holder holds, and the release that names its predecessor does not
//! grant it).

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::{client, client_on, eventually, joined, unique_path};
use zk_rwlock::{zk, Error, SharedLock};

const SHORT: Duration = Duration::from_secs(10);

/// No orphan when the record is refused. The marked release is one multi:
/// setData(dir, name), delete(node); if the server refuses the setData, the
/// deletion is rolled back with it, so the release must delete again, plainly. ZooKeeper 3.7+ enforces
/// hard byte quotas (`zookeeper.enforceQuota=true`, zkCli `setquota -B`): the
/// contender nodes carry no data, so every create passes, but the ~47-byte
/// record pushes the directory past a small byte limit, and the whole multi
/// fails with `QuotaExceeded`. The plain-delete protocol (and every release
/// by a writer granted at once) works fine under the same quota.
///
/// Interleaving:
///   1. Server with enforceQuota; hard byte quota of 16 on the lock path.
///   2. A takes the write lock at once (no mark).
///   3. B queues as a writer, waits on A (so B is `waited`: mark = true).
///   4. A releases (plain delete): B is granted by the hand-off.
///   5. B releases: the multi fails with QuotaExceeded. Without a plain
///      deletion after it, B's node would stay, and C would wait behind it
///      for as long as B's session lives.
#[tokio::test]
async fn a_release_record_refused_by_a_quota_still_releases() {
    // What zkCli's `setquota -B 16 /quota-app/lock` writes.
    let (cluster, admin) =
        support::quota_server("count=-1,bytes=-1,countHardLimit=-1,byteHardLimit=16").await;
    let connect = cluster.connect_string();
    let path = "/quota-app/lock";
    // The quota is enforced: a 47-byte write to the directory is refused.
    assert!(
        matches!(
            admin.set_data(path, &[b'x'; 47], None).await,
            Err(zk::Error::QuotaExceeded)
        ),
        "the server does not enforce the quota: the test proves nothing"
    );

    let mk = |c: zk::Client| SharedLock::new(c, path).unwrap();
    let a_lock = mk(client_on(&connect).await);
    let a = a_lock.write().await.unwrap();
    let b_lock = mk(client_on(&connect).await);
    let b_session = b_lock.client().session_id().0;
    let b = tokio::spawn(async move {
        let guard = b_lock.write().await;
        (b_lock, guard)
    });
    let a_node = a.node().to_owned();
    eventually("B watches A", SHORT, || async {
        support::watches(&cluster, &a_node, b_session)
    })
    .await;
    a.release().await.unwrap();
    let (_b_lock, b) = joined(SHORT, b).await;
    let b = b.unwrap();
    let b_node = b.node().to_owned();
    let released = b.release().await;
    // The lock must be free now, whatever `release` said.
    let c_lock = mk(client_on(&connect).await);
    let c = c_lock.write_timeout(Duration::from_secs(3)).await.unwrap();
    assert!(
        c.is_some(),
        "B's release returned {released:?} and left {b_node} in place: C cannot take the lock \
         (children: {:?})",
        support::children(&admin, path).await
    );
}

/// No hang. docs/failure-model.md: "A waiter whose session
/// ends or whose node is deleted fails with ... `Lost`" and "No hang".
/// A waiter whose decision has `release_grants` but not `deletion_grants`
/// no longer watches its own node. If someone deletes its node (an
/// operator clearing a stuck queue, `zk-rwlock`'s own tooling), nothing
/// wakes it: it sleeps on its predecessor, which sleeps on the holder, for
/// as long as the holder holds (forever for `write()` behind a long job).
/// So every waiter that a hand-off could grant watches its own node.
///
/// Interleaving:
///   1. first holds W; second waits on first (deletion_grants: own watch).
///   2. third (W) waits on second: two predecessors, second is a writer:
///      Wait { deletion_grants: false, release_grants: true }: no own watch.
///   3. Another client deletes third's node.
///   4. first keeps holding: third never learns, until first and second move.
#[tokio::test]
async fn a_waiter_whose_node_is_deleted_fails_while_the_holder_still_holds() {
    let path = unique_path("own-deleted-hang");
    let support::WriterChain {
        first,
        second,
        third,
        queue,
        ..
    } = support::writer_chain(&path).await;
    client().await.delete(&queue[2].path, None).await.unwrap();
    // first still holds: third must still find out its node is gone.
    let outcome = tokio::time::timeout(Duration::from_secs(5), third).await;
    drop(first);
    drop(second);
    match outcome {
        Ok(Ok(Err(Error::Lost { .. }))) => {}
        Ok(other) => panic!("a waiter whose node was deleted got {other:?}"),
        Err(_) => panic!(
            "a waiter whose node was deleted is still waiting 5 s later (it sleeps until the \
             holder releases)"
        ),
    }
}

/// A waiter that only a release can grant (its watched writer has others
/// before it) has no watch on its own node: the read of the release record
/// reads its node too, so a waiter whose node someone deleted is never
/// granted by the release.
#[tokio::test]
async fn a_release_does_not_grant_a_waiter_whose_node_is_gone() {
    let path = unique_path("release-gone");
    let support::WriterChain {
        first,
        second,
        third,
        queue,
        ..
    } = support::writer_chain(&path).await;
    // The third writer's node goes; nothing tells it yet.
    client().await.delete(&queue[2].path, None).await.unwrap();
    first.release().await.unwrap();
    let second = joined(SHORT, second).await.unwrap();
    // The second writer waited: it releases with the record naming it.
    second.release().await.unwrap();
    match joined(SHORT, third).await {
        Err(Error::Lost { node }) => assert_eq!(node, queue[2].path),
        other => panic!("a writer whose node was deleted got {other:?}"),
    }
    support::assert_drained(&path).await;
}
