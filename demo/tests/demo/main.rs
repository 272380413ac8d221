//! `zk-rwlock-demo` run for real: the binary, its worker processes and
//! throwaway ZooKeeper servers (the demo starts its own, or a test's).
//!
//! * `end_to_end`: a small run passes its verdict and draws its timeline; a
//!   leader killed and a writer cut off mid-hold; bad arguments.
//! * `secured`: the parent and every worker on TLS with credentials.
//! * `soak`: the workers under a seeded fault loop, judged by an independent
//!   checker (`soak/checker.rs`), and the nemesis (`soak/nemesis.rs`):
//!   partitions inside a 5-member ensemble; and the semaphore soak: 3N
//!   workers taking N permits under the soak's faults. At their CI length
//!   here; `ZK_RWLOCK_SOAK_SECS` and `ZK_RWLOCK_NEMESIS_SECS` make them longer
//!   (`cargo test -p zk-rwlock-demo --test demo soak_readers -- --nocapture`
//!   runs the soak alone, `... soak_semaphore` the semaphore soak, `... nemesis`
//!   the nemesis).

mod end_to_end;
mod secured;
mod soak;
