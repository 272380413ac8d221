//! A data change grants nothing: anyone may write to a contender node
//! (zkCli's `set`, a monitoring tool, the holder's own code through
//! `client()`), and a write looks like a release's mark to the waiter
//! watching that node. A stray write on a holder's node, and a stray write
//! followed by the withdrawal of a node that never held, must send the
//! waiter back to check, never grant it. (The rule itself:
//! `core/src/acquire/tests.rs` and the simulation's mutation (a).)

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::{client, eventually, joined, server, unique_path};
use zk_rwlock::{zk, Mode};

const SHORT: Duration = Duration::from_secs(10);

/// Anyone may write to a contender node (zkCli's `set`, a monitoring tool,
/// the holder's own code through `client()`): the waiter that watches it
/// sees a data change, which is also what a release's mark looks like. It
/// must check that the node is gone before it takes the lock.
#[tokio::test]
async fn a_data_write_on_the_holders_node_grants_nobody() {
    let path = unique_path("stray-write");
    let holder_lock = support::lock(&path).await;
    let holder = holder_lock.write().await.unwrap();
    let waiter_lock = support::lock(&path).await;
    let waiter_session = waiter_lock.client().session_id().0;
    let waiter = tokio::spawn(async move { waiter_lock.write().await });
    let node = holder.node().to_owned();
    eventually("the waiter watches the holder", SHORT, || async {
        support::watches(server(), &node, waiter_session)
    })
    .await;
    let stranger = client().await;
    for round in 0..3 {
        stranger.set_data(&node, b"hello", None).await.unwrap();
        // The write fired the waiter's watch; it checks the node, finds it
        // still there and watches it again (or, wrongly, takes the lock).
        eventually("the waiter watches the holder again", SHORT, || async {
            waiter.is_finished() || support::watches(server(), &node, waiter_session)
        })
        .await;
        assert!(
            !waiter.is_finished(),
            "round {round}: a data write on the holder's node granted the waiter while the holder held"
        );
    }
    assert!(holder.is_held());
    holder.release().await.unwrap();
    let granted = joined(SHORT, waiter).await.unwrap();
    granted.release().await.unwrap();
    support::assert_drained(&path).await;
}

/// A data change followed by a deletion is no release. `release_grants`
/// must not trust "a data change on the watched node, then getData says
/// NoNode" as proof that a writer that HELD the lock released it, or two
/// would hold. But a data change followed by a deletion of
/// a node that never held (a stray write, then the waiter gives up / its
/// session ends) looks exactly the same from the watcher's side.
///
/// Interleaving (one round):
///   1. A (zk-rwlock) holds the write lock: A-W-0.
///   2. F (another client following the wire protocol) queues as a writer:
///      f-W-1, ephemeral sequential. It waits behind A.
///   3. C (zk-rwlock) asks for `mode`: C-?-2. For a writer, its predecessors
///      are A and F, its immediate predecessor F is a writer, so decide()
///      says Wait { watch: f-W-1, deletion_grants: false, release_grants:
///      true }; for a reader, F is the last of two writers before it: the
///      same answer.
///   4. Someone writes F's node (zkCli `set`, a monitoring tool, F itself);
///      right after, F gives up and deletes its node (timeout, Ctrl-C,
///      expiry). No mark, F never held. (`marked` = true: F sends both in
///      one multi, which makes the interleaving deterministic; otherwise
///      they are pipelined and C's getData usually, not always, arrives
///      after the delete.)
///   5. C sees NodeDataChanged, getData(f-W-1) -> NoNode. Had it taken that
///      for a release, C would be granted while A still holds the write
///      lock; the release record in the directory's data does not name F,
///      so C lists again and waits on A.
///
/// Returns the node C was granted while A held, if it was.
async fn stray_write_round(mode: Mode, marked: bool) -> Option<String> {
    let path = unique_path("stray-then-gone");
    let a = support::lock(&path).await;
    let held = a.write().await.unwrap();
    let f = client().await;
    let (_, seq) = f
        .create(
            &format!("{path}/f-W-"),
            &[],
            &zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let f_node = format!("{path}/f-W-{:010}", seq.into_i64());
    let c = support::lock(&path).await;
    let c_session = c.client().session_id().0;
    let waiter = tokio::spawn(async move { c.acquire(mode).await });
    eventually("C watches F's node", SHORT, || async {
        support::watches(server(), &f_node, c_session)
    })
    .await;
    // Step 4: a stray write, then F withdraws.
    if marked {
        let mut multi = f.new_multi_writer();
        multi.add_set_data(&f_node, b"hello", None).unwrap();
        multi.add_delete(&f_node, None).unwrap();
        multi.commit().await.unwrap();
    } else {
        let write = f.set_data(&f_node, b"hello", None);
        let delete = f.delete(&f_node, None);
        write.await.unwrap();
        delete.await.unwrap();
    }
    // Correct: C lists again and watches A's node. Wrong: C is granted.
    let a_node = held.node().to_owned();
    eventually("C re-decides (watches A) or is granted", SHORT, || async {
        waiter.is_finished() || support::watches(server(), &a_node, c_session)
    })
    .await;
    let wrong = if waiter.is_finished() {
        let g = waiter.await.unwrap().unwrap();
        let node = g.node().to_owned();
        assert!(held.is_held());
        g.release().await.unwrap();
        held.release().await.unwrap();
        Some(node)
    } else {
        held.release().await.unwrap();
        joined(SHORT, waiter).await.unwrap().release().await.unwrap();
        None
    };
    support::assert_drained(&path).await;
    wrong
}

/// A writer behind a waiting writer, pipelined write+delete: 20 rounds
/// (each round reproduced the double grant most of the time on this
/// machine before it was fixed).
#[tokio::test]
async fn a_stray_write_then_a_withdrawal_grants_no_second_writer() {
    for round in 0..20 {
        if let Some(node) = stray_write_round(Mode::Write, false).await {
            panic!("round {round}: writer {node} was granted while another writer held the lock");
        }
    }
}

/// A reader behind a waiting writer, pipelined write+delete.
#[tokio::test]
async fn a_stray_write_then_a_writers_withdrawal_grants_no_reader() {
    for round in 0..20 {
        if let Some(node) = stray_write_round(Mode::Read, false).await {
            panic!("round {round}: reader {node} was granted while a writer held the lock");
        }
    }
}

/// Deterministic: F's write and deletion in one transaction, which looks
/// exactly like a release (a mark, then the deletion) of a node that never
/// held.
#[tokio::test]
async fn a_write_and_deletion_in_one_transaction_grants_no_second_writer() {
    if let Some(node) = stray_write_round(Mode::Write, true).await {
        panic!("writer {node} was granted while another writer held the lock");
    }
}
