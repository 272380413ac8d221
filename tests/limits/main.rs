//! Limits and bad input: ZooKeeper's limits and a server's own, many
//! contenders, and input that is malformed or garbled; one module per
//! behaviour.
//!
//! - `zookeeper_limits`: the sequence counter at its limit (never granted,
//!   the directory recycled, with a warning), the request limit
//!   (`jute.maxbuffer`), lock directories that hold someone's data.
//! - `server_limits`: a server at a limit of its own (`maxClientCnxns`, the
//!   request throttler, a member without a quorum, listings over the
//!   limit): typed errors or give-ups by the deadline, never a hang.
//! - `scale`: thousands of contenders on one lock, granted once each in
//!   order; one session with thousands of locks across a cut (the large,
//!   sized runs are `#[ignore]`d).
//! - `malformed_input`: the library's parsers (names, paths, identities,
//!   records, connect strings, ordering over any child list) never panic,
//!   and round-trip where a format is defined (proptest).
//! - `garbled_replies`: the vendored client's reply decoding against a fake
//!   server's garbled replies: values or errors, never a panic or a hang
//!   (proptest).
//!
//! Shared by the whole process: one ZooKeeper server
//! (`zk_rwlock_fixtures::server`; `zookeeper_limits` starts a seeded one of
//! its own), the `tracing` subscriber `zookeeper_limits` installs
//! (`captured_logs` at WARN: no other module may install one), and the
//! panic counter `garbled_replies` reads (`panics_so_far`: no module may
//! panic on purpose, even caught).

mod garbled_replies;
mod malformed_input;
mod scale;
mod server_limits;
mod zookeeper_limits;
