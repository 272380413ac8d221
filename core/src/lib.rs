//! The pure core of [zk-rwlock](https://docs.rs/zk-rwlock): every rule of a
//! ZooKeeper read/write lock, as functions and state machines that take
//! names, answers and events in and give decisions and actions out. No I/O,
//! no clock, no ZooKeeper types: this crate depends on none of them, so a
//! pure module that reached for one would not compile.
//!
//! Users of the lock want the crate `zk-rwlock` (`SharedLock`,
//! `blocking::SharedLock`, `Election`, `MultiLock`). This crate is for those
//! who read the rules, test them, or drive them from another client:
//!
//! - [`node_name`]: contender names in every layout (native, Curator's,
//!   kazoo's), the release record and marker, revocation requests;
//! - [`ordering`]: who is granted, what a waiter watches, the queue;
//! - [`acquire`]: the wait as a state machine (hand-offs by a deletion, the
//!   release marker and the release record);
//! - [`contender`]: a contender's whole life as a state machine, with the
//!   run loop its driver carries out;
//! - [`lease`]: the lease deadline and a guard's [`lease::HoldState`];
//! - [`election`]: who an election may name leader, and the announcement;
//! - [`limits`]: the wire sizes the rules need;
//! - [`reentrant`]: what an owner's acquire does from what it holds;
//! - [`semaphore`]: who holds one of N permits, and what a waiter watches;
//! - [`backoff`]: the pauses of every retry loop, and when each gives up;
//! - [`transaction`]: a holder's writes, sent behind a check of its nodes;
//! - [`wire`]: the requests each action sends, and how their answers become
//!   the machine's input: one interpreter for every carrier.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod acquire;
pub mod backoff;
pub mod contender;
pub mod election;
pub mod lease;
pub mod limits;
pub mod node_name;
pub mod ordering;
pub mod reentrant;
pub mod semaphore;
pub mod transaction;
pub mod wire;

pub use node_name::{Layout, Mode, NodeName};
