//! `zookeeper-client` is an async Rust client library for Apache ZooKeeper.
//!
//! ## Opinionated API
//! This library is written from scratch. Its API is pretty different from Java counterpart or even
//! other Rust clients. Some of them are listed here for a glance.
//!
//! * No callbacks.
//! * No catch-all watcher.
//! * [StateWatcher] tracks session state updates.
//! * [OneshotWatcher] tracks oneshot ZooKeeper node event.
//! * [PersistentWatcher] tracks persistent and recursive persistent ZooKeeper node events.
//! * No event type `XyzWatchRemoved` as Rust has [Drop].
//! * Most data operations are ordered at future creation time but not polling time.
//! * [Client::chroot] and [Client::clone] enable session sharing cross multiple different rooted clients.
//!
//! ## Feature flags
//! * `tls-ring`: Toggle TLS support with rustls on the `ring` crypto provider.
//! * `tls-aws-lc-rs`: Toggle TLS support with rustls on the `aws-lc-rs` crypto provider (it wins
//!   when both are enabled).
//! * `tls`: TLS without a provider; enable one of the two above with it.
//! * `sasl`, `sasl-digest-md5`: Toggle DIGEST-MD5 SASL support.
//!
//! (This copy for zk-rwlock has no `fips`, `fips-only` or `sasl-gssapi`: see PATCHES.md.)
//!
//! ## Async runtime support
//! This library uses [asyncs](https://docs.rs/asyncs) and [spawns](https://docs.rs/spawns) to
//! spawn asynchronous tasks. It exposes runtime feature flags for handy. Please refer their docs
//! for references.
//! * `tokio`: Toggle support for [tokio](https://docs.rs/tokio). Sockets and timers then run on
//!   tokio's I/O driver and timer instead of async-io's reactor thread, so the session's runtime
//!   needs IO and time enabled (`enable_all`).
//! * `smol`: Toggle support for [smol](https://docs.rs/smol) builtin global executor.
//! * `async-global-executor`: Toggle support for [async-global-executor](https://docs.rs/async-global-executor).

#![cfg_attr(docsrs, feature(doc_cfg))]

mod acl;
mod chroot;
mod client;
mod deadline;
mod endpoint;
mod error;
mod proto;
mod record;
mod rt;
#[cfg(feature = "sasl-digest-md5")]
mod sasl;
mod session;
#[cfg(feature = "tls")]
mod tls;
mod util;

pub use self::acl::{Acl, Acls, AuthId, AuthUser, Permission};
pub use self::error::Error;
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use self::tls::{TlsCa, TlsCerts, TlsCertsBuilder, TlsCertsOptions, TlsDynamicCerts, TlsIdentity, TlsOptions};
pub use crate::client::*;
#[cfg(feature = "sasl-digest-md5")]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sasl", feature = "sasl-digest-md5"))))]
pub use crate::sasl::DigestMd5SaslOptions;
#[cfg(feature = "sasl-digest-md5")]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sasl", feature = "sasl-digest-md5"))))]
pub use crate::sasl::SaslOptions;
