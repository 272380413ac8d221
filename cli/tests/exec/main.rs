//! `zk-rwlock exec` against real ZooKeeper servers, one module per behaviour:
//!
//! * `under_the_lock`: the command runs under the lock: its environment,
//!   its exit status, writers one at a time and readers together, several
//!   locks all or nothing, signals forwarded, foreign children.
//! * `waiting`: timeouts, a signal while waiting, a waiting node deleted.
//! * `lost_lock`: the node deleted or the lease run out while the command
//!   runs: the command's group terminated, exit 79, said once.
//! * `partition`: cut off from ZooKeeper, the command is stopped before its
//!   lease runs out, so before the next grant; `--on-suspend ignore`; the
//!   lease in the command's environment and lease file.
//! * `outages`: the server down or restarted under exec.
//! * `process_tree`: nothing of the command's process tree runs after the
//!   next writer's grant (background jobs, daemons, exec stopped or killed).
//! * `sequence_limit`: ZooKeeper's sequence counter at its limit.
//! * `layouts`: `--layout`, nodes named as Curator's and kazoo's.
//! * `permits`: `--permits N`, a semaphore's permit instead of a lock:
//!   at most N commands at once, the lock's supervision, what is refused.
//! * `stop_schedule`: `--follower-lag` and `--grace` too large for the
//!   session refused; CMD runs on a healthy connection at the largest
//!   values allowed, under `exec` and `lead`.

#[path = "../common/mod.rs"]
mod common;

mod layouts;
mod lost_lock;
mod outages;
mod partition;
mod permits;
mod process_tree;
mod sequence_limit;
mod stop_schedule;
mod under_the_lock;
mod waiting;
