//! What the `zk-rwlock` command line's subcommands share, and what the
//! bench and the demo use of it: the connection options (`--auth`,
//! `--tls-*`, `--acl`), the failure → exit code mapping, and small helpers
//! (tracing, the runtime, durations).
//!
//! Not an API for other programs: it follows the command line.

pub mod common;
pub mod connection;
pub mod failure;

pub use failure::{exit, Failure};
