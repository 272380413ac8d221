//! What zk-rwlock's tests, demo and benchmarks share; not published.
//!
//! * [`launcher`]: [`ZkCluster`], throwaway Apache ZooKeeper servers and
//!   ensembles on `127.0.0.1` (the Java server, e.g. Debian's `zookeeper`
//!   package), optionally on seeded data.
//! * [`secure`]: TLS keys and SASL JAAS files made at test time, for
//!   servers that require TLS or authentication.
//! * [`proxy`]: a TCP proxy between a client and a server that cuts, refuses,
//!   garbles or delays on command.
//! * The fixtures at the crate root: one server per test binary
//!   ([`server`]), clients on it, polling with a deadline instead of
//!   sleeping, and helpers that read the server's watch lists. The test kit
//!   knows nothing of the lock: the lock fixtures (locks, elections, queues,
//!   contender names) are `zk-rwlock-fixtures`', which re-exports this crate.
//! * [`SplitMix64`], a small seeded generator, and [`Percentiles`], from an
//!   HDR histogram, for the simulation, the demo and the bench.
//! * [`fenced_store`]: a store on disk that refuses writes with stale
//!   fencing tokens, for the fencing example (`examples/fenced_store/`),
//!   the demo's workers and its soak test.
//!
//! The binary `zk-dev-server` runs one [`ZkCluster`] until Ctrl-C, for
//! trying the command line or an application by hand
//! (`scripts/dev-server.sh`).

pub mod fenced_store;
mod fixtures;
pub mod launcher;
mod percentiles;
pub mod proxy;
mod rng;
pub mod secure;

pub use fixtures::*;
pub use launcher::{LaunchError, ServerMode, ZkCluster, ZkClusterBuilder};
pub use percentiles::Percentiles;
pub use rng::SplitMix64;
pub use secure::{ClientAuth, TlsFiles};
