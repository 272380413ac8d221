//! The counting semaphore (`Semaphore`, `Permit`), against a real
//! ZooKeeper server: at most N hold at once by the holders' own clocks and
//! every waiter is granted; a release of the nearer of two watched nodes
//! wakes the waiter (the wake-up a single watch would miss); a release
//! wakes at most N waiters (each waiter watches only the N right before
//! it); contenders that disagree on N are refused; status, revocation,
//! timeouts, the blocking API and the errors for bad input
//! (`permits`); strangers, unreadable predecessors and faults
//! (`strangers_and_faults`).

mod permits;
mod strangers_and_faults;
mod watch_reuse;

use zk_rwlock::{zk, Permit, Semaphore};
use zk_rwlock_fixtures as support;

/// A semaphore of `permits` on `path`, on a session of its own.
async fn semaphore(path: &str, permits: u32) -> Semaphore {
    Semaphore::new(support::client().await, path, permits).unwrap()
}

/// An acquire of `sem` running on its own, to be joined.
fn spawn_acquire(sem: &Semaphore) -> tokio::task::JoinHandle<Permit> {
    let sem = sem.clone();
    tokio::spawn(async move { sem.acquire().await.expect("granted") })
}

/// The children of `path` in queue order, as full paths, once there are `n`.
async fn queue(c: &zk::Client, path: &str, n: usize) -> Vec<String> {
    let mut names = support::wait_nodes(c, path, n).await;
    names.sort_by_key(|n| support::seq_of(n));
    names.into_iter().map(|n| format!("{path}/{n}")).collect()
}
