//! The `zk-rwlock` commands besides `exec` and `lead`, and what every
//! subcommand shares, one module per behaviour:
//!
//! * `status`: the real queue (JSON and table), foreign children,
//!   `--watch`, a permanent node named like a contender.
//! * `status_several_paths`: several paths at once, a multi-lock's parts
//!   linked by their session.
//! * `peer_contenders`: `status` and `revoke` with Curator's and kazoo's
//!   contenders.
//! * `revoke`: `revoke` end to end, with `exec --on-revoke` and
//!   `lead --on-revoke`.
//! * `semaphores`: `status` and `revoke` on a semaphore's directory held
//!   by `exec --permits N`.
//! * `bad_input`: usage errors before connecting, connect strings, hosts
//!   that do not resolve, one clear message per failure.
//! * `client_logs`: the ZooKeeper client's own log lines only on request.
//! * `secured`: credentials, ACLs, TLS and SASL on a secured server.
//! * `completions`: completions, man pages, `--help`, `--version`.
//! * `docs`: docs/cli.md's exit codes are the `--help`'s.
//! * `doc_pages`: the repository's pages hold together: every relative
//!   link between README.md, ARCHITECTURE.md and `docs/*.md` resolves, the
//!   README maps every page, the metrics page lists what the library
//!   records, the install commands run as written.

#[path = "../common/mod.rs"]
mod common;

mod bad_input;
mod client_logs;
mod completions;
mod doc_pages;
mod docs;
mod peer_contenders;
mod revoke;
mod secured;
mod semaphores;
mod status;
mod status_several_paths;
