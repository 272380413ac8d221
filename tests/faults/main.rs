//! Leases and faults, against real ZooKeeper servers and ensembles broken
//! on purpose (restarts, crashes, partitions, cut connections, expiry); one
//! module per behaviour.
//!
//! - `lease`: a guard's lease deadline comes before the server expires its
//!   session; guards share one heartbeat.
//! - `lease_followers`: on an ensemble, a follower cut from its leader
//!   never stretches the lease, a timeout shortened by a reconnect shortens
//!   it, and a follower lag too long for the session timeout is refused.
//! - `lease_timeout`: the lease runs on the smallest session timeout the
//!   session was ever told.
//! - `cuts_and_restarts`: restarts, leader failover, paused members,
//!   connections cut or replies garbled at the worst moments, session
//!   expiry, strangers without credentials.
//! - `outage`: a server outage shorter than the session timeout costs no
//!   held lock; deadlines hold while the server is down.
//! - `guard_state`: what a guard says when nothing awaits it (lost,
//!   deleted, dropped as its runtime ends).
//! - `session_placement`: a session the library connects runs on the
//!   caller's multi-thread runtime and moves to the background thread when
//!   that runtime ends, keeping its connection, watches and guards; a
//!   watch of a caller's session that went with its runtime ends closed.
//! - `connect`: `connect_client` against servers that never answer, refuse,
//!   or begin to listen late; sessions given up by the client or expired by
//!   a server.
//!
//! Shared by the whole process: one ZooKeeper server
//! (`zk_rwlock_fixtures::server`) for the tests that do not break their
//! own. `outage` runs its outages one at a time (a server started beside
//! another starts late). The churn test, which measures the whole process,
//! is a binary of its own (`tests/churn.rs`).

mod connect;
mod cuts_and_restarts;
mod guard_state;
mod lease;
mod lease_followers;
mod lease_timeout;
mod outage;
mod session_placement;
