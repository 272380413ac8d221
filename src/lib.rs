//! Distributed read/write locks on Apache ZooKeeper.
//!
//! Readers share a lock; a writer excludes everyone. Contenders create
//! ephemeral sequential nodes `<host>-<R|W>-<seq>` under a lock directory;
//! the pure [`ordering`] module decides who holds the lock and which node
//! each waiter watches (a reader watches the last writer before it, a writer
//! its immediate predecessor: no herd).
//!
//! What this crate does not do: it does not manage ZooKeeper ensembles in
//! production, and it cannot stop a process that lost its lock from acting:
//! use the fencing token for that.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod background;
pub mod blocking;
mod error;
mod lock;
pub mod node_name;
pub mod ordering;

pub use error::{is_retryable, Error};
pub use lock::{
    connect_client, validate_identity, validate_path, Contender, ContenderState, Guard, LockBuilder,
    ReadGuard, SharedLock, Snapshot, WriteGuard, DEFAULT_CONNECT_TIMEOUT, DEFAULT_SESSION_TIMEOUT,
    GIVE_UP_SLACK, TRY_TIMEOUT,
};
pub use node_name::{Mode, NodeName};
/// The ZooKeeper client crate, re-exported so that users need not pin the same version.
pub use zookeeper_client as zk;
