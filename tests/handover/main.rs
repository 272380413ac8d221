//! The lock changing hands, against real ZooKeeper servers: how a holder
//! lets go (release, drop, downgrade) and how the next one learns of it;
//! one module per behaviour.
//!
//! - `release_marker`: the release marker carries a hand-off with no
//!   request after the event; a stranger's node under a marker's name, or a
//!   release without a marker, costs a read, never the lock.
//! - `release_record`: the release record refused by a quota still
//!   releases; a waiter that only a release could grant, whose node is
//!   deleted, learns of it and is never granted by the release.
//! - `dropped_guards`: a guard dropped anywhere (outside a runtime, inside
//!   one, as the program ends, in a current-thread task) is released at
//!   once.
//! - `downgrade`: `WriteGuard::downgrade` lets queued readers in and keeps
//!   writers out, and holds under races and faults (fencing tokens,
//!   cancellation, refused or lost transactions, revocation, expiry).
//! - `revocation`: a revocation request reaches the holder's guard and
//!   grants nobody until the holder releases.
//! - `transactions`: writes committed through a guard's `transaction()`
//!   (a downgraded guard's, a multi-guard's, a leadership's, the blocking
//!   ones) are all written while its nodes exist, none once one is gone or
//!   one op fails; a commit that finds a node gone turns its guard `Lost`
//!   at once; a lost, garbled or empty answer is an unknown outcome; a
//!   multi-guard across sessions or chroots sends nothing.
//! - `garbled_answers`: the library's own release and downgrade answered
//!   by an empty `multi` success (its `liar` proxy, which `transactions`
//!   uses too): a reply that does not match the transaction is not taken
//!   as applied.
//!
//! - `own_watch_across_reconnections`: a wait after a reconnection sets
//!   its own node's watch again (READ on it may have been taken away, and
//!   the watch the reconnection set again is then silent).
//! - `together_watches_across_cuts`, `together_watches_own_node`: a wait's
//!   own-node and marker watches set in one `SetWatches` (once its handle
//!   knows, on this connection, that it reads its node) across cut
//!   connections, READ taken away, writes before it and nodes made again
//!   under its name.
//! - `watched_node_watch_set_unread`: a wait's watched node's watch set in
//!   that same `SetWatches`, unread; the watch its listing left on the
//!   directory's children makes up for a node it may not read.
//!
//! Shared by the whole process: one ZooKeeper server
//! (`zk_rwlock_fixtures::server`); tests that need a quota start their own.

mod downgrade;
mod dropped_guards;
mod garbled_answers;
mod own_watch_across_reconnections;
mod release_marker;
mod release_record;
mod revocation;
mod together_watches_across_cuts;
mod together_watches_own_node;
mod transactions;
mod watched_node_watch_set_unread;

/// Teaches `learner` that its session reads its own nodes in its lock: one
/// wait of it right behind a holder of `holder`'s lock (its `getData` watch
/// on its node reads the node it made). Later waits of `learner` on the
/// same connection set their own-node and marker watches in one
/// `SetWatches`.
async fn teach_own_readable(holder: &zk_rwlock::SharedLock, learner: &zk_rwlock::SharedLock) {
    let held = holder.write().await.unwrap();
    let learning = {
        let learner = learner.clone();
        tokio::spawn(async move { learner.write().await })
    };
    zk_rwlock_fixtures::wait_contenders(holder, 2).await;
    held.release().await.unwrap();
    zk_rwlock_fixtures::joined(std::time::Duration::from_secs(10), learning)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

/// An operator's `setACL` on `node` through `stranger`: anyone may do
/// anything to it but READ it (its owner included).
async fn take_read_away(stranger: &zk_rwlock::zk::Client, node: &str) {
    use zk_rwlock::zk;
    let no_read = [zk::Acl::new(
        zk::Permission::WRITE | zk::Permission::CREATE | zk::Permission::DELETE | zk::Permission::ADMIN,
        zk::AuthId::anyone(),
    )];
    stranger.set_acl(node, &no_read, None).await.unwrap();
}
