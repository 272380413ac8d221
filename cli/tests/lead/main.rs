//! `zk-rwlock lead` against a real ZooKeeper server: a service run as an
//! election's leader.
//!
//! * `one_leader_at_a_time`: two leaders never run at once, a killed `lead`
//!   included, and `status` names the leader (one asked to step down too).
//! * `campaigns`: terms, back-offs and campaigning again; a signal while
//!   campaigning; a release the server refuses.

#[path = "../common/mod.rs"]
mod common;

mod campaigns;
mod one_leader_at_a_time;
