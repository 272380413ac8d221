//! The wait and the hand-off, against real ZooKeeper servers: who is
//! granted when, who waits on whom, and what wakes a waiter; one module per
//! behaviour.
//!
//! - `lock`: the lock's contract: readers share, a writer excludes
//!   everyone, FIFO order with growing fencing tokens, timeouts and
//!   cancellations that leave nothing behind, loss, many tasks on one
//!   session, the blocking API, typed errors for bad input.
//! - `multi`: the all-or-nothing multi-lock: no deadlock and no overlap in
//!   any order, nothing left behind by a give-up partway, loss of a part.
//! - `stray_writes`: a data change grants nothing (a stray write on a
//!   holder's node, a write then a withdrawal of a node that never held).
//! - `reconnects`: hand-offs across reconnections (a waiter whose own node
//!   went while it was cut off, a storm of cuts during hand-offs).
//! - `driver`: how the acquire driver reports a session's end to a waiter,
//!   a polling waiter across cut connections, and a waiter's listing (a
//!   plain `getChildren`).
//! - `cancelled_handoffs`: acquires dropped while a hand-off is under way
//!   (the release's events arriving, the next ones granted) leave no node
//!   behind, and the grants never overlap.
//! - `contender_edges`: the contender machine's driver at the edges (a
//!   directory refused for its data past the recycling threshold, what the
//!   logs name, a revocation request seen while waiting, a missing chroot).
//! - `reply_order`: replies ZooKeeper sends ahead of earlier requests'
//!   replies pass the client's reply-order check.
//! - `many_watches`: a holder with many watches keeps them, and its
//!   session, across a reconnection.
//! - `queue_place`: an acquire's place in the queue (`SharedLock::enqueue`,
//!   `enqueue_timeout`), told in order, at no cost in requests, never
//!   "granted" for a waiter that failed; `enqueue_timeout` counts from its
//!   first await.
//! - `reentrant`: re-entrant owners (`SharedLock::reentrant`): nested
//!   grants at once on the owner's node, the refused upgrade, the node
//!   released with the owner's last guard (also when two are released at
//!   once), cancelled and racing acquires.
//! - `stats`: `SharedLock::stats()` says what the acquires did.
//! - `garbled_wire`: a contended run through a proxy that garbles the
//!   server's replies: no grant on garbage, no overlap, no panic, no hang.
//!
//! Shared by the whole process, so by every module here: one ZooKeeper
//! server (`zk_rwlock_fixtures::server`; `contender_edges` starts a seeded
//! one of its own), the `tracing` subscriber that `contender_edges`
//! installs at its first test (`captured_logs`, `zk_rwlock` at DEBUG: no
//! other module may install one), and the panic counter `garbled_wire`
//! reads (`panics_so_far`: no module may panic on purpose, even caught).

mod cancelled_handoffs;
mod contender_edges;
mod driver;
mod garbled_wire;
mod lock;
mod many_watches;
mod multi;
mod queue_place;
mod reconnects;
mod reentrant;
mod reply_order;
mod set_watches;
mod stats;
mod stray_writes;
