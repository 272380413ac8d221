//! Leader election (`Election`) on real ZooKeeper servers; one module per
//! behaviour.
//!
//! - `leadership`: one leader at a time with growing terms, hand-over on
//!   resignation and on a killed leader (a child process of this binary),
//!   suspension before anyone else leads, the blocking API, a campaign
//!   failed by its session's expiry or dropped at any point.
//! - `observers`: observers see every leader in grant order (across a
//!   restart too), never name a candidate before its campaign is granted,
//!   watch only the head, and stop naming a resigned leader they cannot
//!   read past.
//! - `announcement`: the leader's announcement never hides a revocation
//!   request, a revoked leader stays named until it resigns, a stranger's
//!   write is announced over, a node made again by someone else is never
//!   written on.
//!
//! Shared by the whole process: one ZooKeeper server
//! (`zk_rwlock_fixtures::server`); tests that restart or partition servers
//! start their own.

mod announcement;
mod leadership;
mod observers;
