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
