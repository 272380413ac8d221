//! Distributed read/write locks on Apache ZooKeeper: readers share a lock,
//! a writer excludes everyone, in order of arrival, across any number of
//! processes and machines.
//!
//! # Which type to use
//!
//! - [`SharedLock`]: a read/write lock on one lock directory, for async
//!   code (tokio). Start here: [`connect`](SharedLock::connect), then
//!   [`read`](SharedLock::read) or [`write`](SharedLock::write) (and
//!   `try_*`, `*_timeout`); each gives a guard.
//! - [`blocking::SharedLock`]: the same lock with blocking calls, for code
//!   without an async runtime.
//! - [`Election`]: leader election on a lock directory (`campaign`,
//!   `resign`, `leader`, `observe`): the candidates are the lock's writers,
//!   and a term is the leader's fencing token ([`blocking::Election`]
//!   without a runtime).
//! - [`MultiLock`]: several locks at once, each in its own mode (write
//!   `/accounts/42`, read `/rates`), all or nothing, without deadlock
//!   between callers that name them in different orders
//!   ([`blocking::MultiLock`] without a runtime).
//!
//! # Example
//!
//! It needs a ZooKeeper server (`scripts/dev-server.sh` in the repository
//! runs one on `127.0.0.1:2181`), so it is compiled but not run here.
//!
//! ```no_run
//! use zk_rwlock::SharedLock;
//!
//! # async fn example() -> Result<(), zk_rwlock::Error> {
//! let lock = SharedLock::connect("127.0.0.1:2181", "/locks/orders").await?;
//! let guard = lock.write().await?; // or read(), try_write(), write_timeout(d)
//! let token = guard.fencing_token(); // the store rejects writes with older tokens
//! tokio::select! {
//!     _ = do_the_work(token) => {}
//!     // The connection is lost (or the lock): stop before the lease deadline.
//!     _ = guard.suspended() => return Ok(()),
//! }
//! guard.release().await?; // dropping the guard releases it too, in the background
//! # Ok(())
//! # }
//! # async fn do_the_work(_token: i64) {}
//! ```
//!
//! Without a runtime:
//!
//! ```no_run
//! let lock = zk_rwlock::blocking::SharedLock::connect("127.0.0.1:2181", "/locks/orders")?;
//! let guard = lock.write()?;
//! // ... exclusive work, passing guard.fencing_token() to the store ...
//! guard.release()?;
//! # Ok::<(), zk_rwlock::Error>(())
//! ```
//!
//! # What a guard knows
//!
//! Every guard ([`ReadGuard`], [`WriteGuard`], or [`Guard`] for a mode
//! chosen at run time) knows until when no one else can hold its lock (its
//! [`lease`] deadline) and whether it is held, suspended (connection lost,
//! lease running) or lost ([`HoldState`]), with no future pending: it keeps
//! a watch on its node for its whole life (from its 100th millisecond, if
//! its acquire left none: the lock was free at its first look), so a node
//! deleted by anyone
//! makes it lost, and its release then says so ([`Error::Lost`]). Anyone may
//! ask a holder to let go ([`SharedLock::revoke`], cooperative revocation):
//! its guard learns it ([`WriteGuard::revocation_requested`]), and no one
//! else is granted the lock until it releases. [`SharedLock::contenders`]
//! lists who holds and who waits ([`QueueEntry`]), [`SharedLock::stats`]
//! says what the lock's acquires did.
//!
//! What this crate does not do: it does not manage ZooKeeper ensembles in
//! production, and it cannot stop a paused process from acting after its
//! lease: use the fencing token for that.
//!
//! # Connecting
//!
//! [`SharedLock::connect`] makes its own session. Many locks may share one
//! session: connect it with [`connect_client`] and make each lock with
//! [`SharedLock::new`], or [`SharedLock::builder`] for the identity, the
//! ACLs and the rest ([`LockBuilder`]).
//!
//! Secured ensembles: credentials (`digest`, any `addAuthInfo` scheme), TLS
//! and SASL are [`ConnectOptions`]; [`connect_client_with`],
//! [`SharedLock::connect_with_options`] and
//! [`blocking::SharedLock::connect_with_options`] connect with them, and
//! [`LockBuilder::acls`] sets the ACLs of the nodes a lock creates (e.g.
//! [`zk::Acls::creator_all`]).
//!
//! # Cargo features
//!
//! All off by default:
//!
//! * `tls`: TLS connections (`ConnectOptions::tls_ca_pem` and
//!   `tls_identity_pem`), through rustls with the `ring` crypto provider
//!   (a quick build). ring reads an EC client key only with its public key:
//!   `openssl ec -in key.pem -out key.pem` adds it to a key exported by
//!   `keytool` or `openssl pkcs12 -nodes`.
//! * `tls-aws-lc-rs`: `tls` with the `aws-lc-rs` provider instead (a C build
//!   of a few minutes; it reads EC keys without their public key).
//! * `sasl`: SASL DIGEST-MD5 (`ConnectOptions::sasl_digest_md5`), through
//!   the client's `sasl-digest-md5` feature, which adds `rsasl` (and through
//!   it `serde_json`). (The client's Kerberos/GSSAPI mechanism needs system
//!   libraries and is not offered.)
//! * `metrics`: lock metrics (wait and hold times, waiters and holders,
//!   grants, losses, timeouts, retries, expired sessions) through the
//!   `metrics` facade: see [`metrics`]. Without it,
//!   [`SharedLock::stats`] still tells a lock's counts.
//!
//! # How it works
//!
//! A contender creates an ephemeral sequential child of the lock directory
//! named `<identity>@<token>-<R|W>-<seq>` ([`NodeName`]); who holds the lock,
//! and which node each waiter watches (a reader the last writer before it,
//! a writer its predecessor: no herd), follows from the children's names
//! alone. Those rules, and a contender's whole life as a state machine, are
//! the pure crate [`zk-rwlock-core`](zk_rwlock_core) (no I/O, no clock, no
//! ZooKeeper types), for those who read the rules or build another driver;
//! this crate performs its decisions on ZooKeeper. The wire protocol is
//! `docs/protocol.md` in the repository.
//!
//! Its dependencies are the ZooKeeper client [`zk`]
//! (`zk-rwlock-zookeeper-client`: zookeeper-client 0.11.2 with patches, see
//! its `PATCHES.md`; with its `tokio` feature), `zk-rwlock-core`, `tokio`,
//! `tracing`, `thiserror`, `uuid` and `rustix` (the boot clock, on Linux).
//! The `zk-rwlock` command line (`exec`, `lead`, `status`, `revoke`) is the
//! separate package `zk-rwlock-cli`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod background;
pub mod blocking;
mod connect;
pub mod election;
mod error;
mod hub;
pub mod limits;
mod lock;
pub mod metrics;
pub mod multi;
mod stats;

// The pure core (the crate zk-rwlock-core): the machines and rules that
// decide, with no I/O, no clock and no ZooKeeper types. Names and leases
// are part of this crate's API; the machines are the core's.
pub use zk_rwlock_core::reentrant;
pub(crate) use zk_rwlock_core::{acquire, backoff, contender, ordering, wire};
pub use zk_rwlock_core::{lease, node_name};

// For the churn test (`tests/churn.rs`), which counts the sessions on the
// library's background thread; no part of the API.
#[doc(hidden)]
pub use background::registered_sessions;
pub use connect::{
    connect_client, connect_client_with, ConnectOptions, DEFAULT_CONNECT_TIMEOUT, DEFAULT_SESSION_TIMEOUT,
};
pub use election::{Election, ElectionBuilder, Leader, Leadership};
pub use error::{is_retryable, Error};
#[doc(hidden)]
pub use hub::session_hubs;
pub use lease::{HoldState, LossCause};
pub use lock::{
    validate_identity, validate_path, ContenderState, CreateAcl, Guard, LockBuilder, Permit, Place,
    QueueEntry, Queued, ReadGuard, ReentrantLock, Revoked, Semaphore, SemaphoreBuilder, SharedLock, Snapshot,
    Transaction, WriteGuard, GIVE_UP_SLACK, REVOKE_PAYLOAD, TRY_TIMEOUT,
};
pub use metrics::describe_metrics;
pub use multi::{MultiGuard, MultiLock};
pub use node_name::{Layout, Mode, NodeName};
pub use stats::Stats;
/// The ZooKeeper client crate, re-exported so that users need not pin the
/// same version; documented here (inlined), also by `cargo doc --no-deps`.
#[doc(inline)]
pub use zookeeper_client as zk;

/// The Rust blocks of the README, ARCHITECTURE.md and `docs/*.md`, compiled
/// by `cargo test --doc` (those that need a server are `no_run`). Nothing
/// here exists outside doctests: docs.rs shows the crate docs above.
#[cfg(doctest)]
mod docs {
    #[doc = include_str!("../README.md")]
    pub struct Readme;
    #[doc = include_str!("../ARCHITECTURE.md")]
    pub struct Architecture;
    #[doc = include_str!("../docs/benchmarks.md")]
    pub struct Benchmarks;
    #[doc = include_str!("../docs/cli.md")]
    pub struct Cli;
    #[doc = include_str!("../docs/failure-model.md")]
    pub struct FailureModel;
    #[doc = include_str!("../docs/interop.md")]
    pub struct Interop;
    #[doc = include_str!("../docs/library.md")]
    pub struct Library;
    #[doc = include_str!("../docs/metrics.md")]
    pub struct Metrics;
    #[doc = include_str!("../docs/mutants.md")]
    pub struct Mutants;
    #[doc = include_str!("../docs/protocol.md")]
    pub struct Protocol;
    // Its examples call `ConnectOptions`' TLS and SASL methods.
    #[cfg(all(feature = "tls", feature = "sasl"))]
    #[doc = include_str!("../docs/security.md")]
    pub struct Security;
    #[doc = include_str!("../docs/testing.md")]
    pub struct Testing;
}
