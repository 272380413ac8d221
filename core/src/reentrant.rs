//! Re-entrant acquires: an explicit owner that takes a lock it holds
//! already gets a guard on the node it holds, at once, and never waits for
//! itself.
//!
//! Threads are the wrong owner in async Rust (a task moves between
//! threads), so the owner is a value (`zk_rwlock::ReentrantLock`), and
//! these rules say what each of its acquires does, from what it holds:
//!
//! | the owner holds | `read()` | `write()` |
//! |---|---|---|
//! | nothing | acquire: a reader node | acquire: a writer node |
//! | the write lock | nested: a guard on the writer node | nested: a guard on the writer node |
//! | a read lock | nested: a guard on the reader node | refused: [`Entry::WouldDeadlock`] |
//!
//! A read within a write is granted at once, as Apache Curator's
//! `InterProcessReadWriteLock` does (its write lock's holder may take the
//! read lock); an upgrade is refused at once rather than waiting for
//! itself (the owner's own reader node stands before the writer node it
//! would make, for ever). Every nested guard is a guard on the owner's one
//! node: the same fencing token, the same lease, the same state; the node
//! goes when the owner's last guard goes (the outer one need not be the
//! last). An owner whose node was lost refuses to acquire until all its
//! guards are gone ([`Entry::Lost`]). See [`Holding`].

use crate::node_name::Mode;

/// What an owner holds of its lock: no node, or one node in a mode and the
/// number of its guards alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Holding {
    /// No node: the next acquire makes one.
    #[default]
    Nothing,
    /// One node, granted in `mode`, with `guards` guards on it (at least 1).
    Node {
        /// The mode the node was granted in.
        mode: Mode,
        /// The guards alive on it.
        guards: u32,
    },
}

/// What an owner's acquire does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// Acquire a node in the mode asked, as a plain acquire does.
    Acquire,
    /// Granted at once: one more guard on the node held.
    Nested,
    /// A write asked while the owner holds a read lock: refused at once
    /// (it would wait for the owner's own reader node for ever).
    WouldDeadlock,
    /// The owner's node is lost (deleted by someone else, or with its
    /// session): refused at once; the owner acquires again once all its
    /// guards are gone.
    Lost,
}

/// What an acquire in `mode` does when the owner holds `holding`, whose
/// node is known `lost` (its guards say `Lost`).
pub fn enter(holding: Holding, mode: Mode, lost: bool) -> Entry {
    match (holding, mode) {
        (Holding::Nothing, _) => Entry::Acquire,
        (Holding::Node { .. }, _) if lost => Entry::Lost,
        (
            Holding::Node {
                mode: Mode::Write, ..
            },
            _,
        ) => Entry::Nested,
        (Holding::Node { mode: Mode::Read, .. }, Mode::Read) => Entry::Nested,
        (Holding::Node { mode: Mode::Read, .. }, Mode::Write) => Entry::WouldDeadlock,
    }
}

impl Holding {
    /// After an acquire in `mode` was granted (a new node, or nested).
    #[must_use]
    pub fn granted(self, mode: Mode) -> Holding {
        match self {
            Holding::Nothing => Holding::Node { mode, guards: 1 },
            Holding::Node { mode, guards } => Holding::Node {
                mode,
                guards: guards.saturating_add(1),
            },
        }
    }

    /// After one of the owner's guards went (released or dropped): the
    /// holding left, and whether the node goes with it (the last guard).
    #[must_use]
    pub fn dropped(self) -> (Holding, bool) {
        match self {
            Holding::Node { mode, guards } if guards > 1 => (
                Holding::Node {
                    mode,
                    guards: guards - 1,
                },
                false,
            ),
            Holding::Node { .. } => (Holding::Nothing, true),
            Holding::Nothing => (Holding::Nothing, false),
        }
    }

    /// The guards alive on the owner's node.
    pub fn guards(self) -> u32 {
        match self {
            Holding::Nothing => 0,
            Holding::Node { guards, .. } => guards,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Mode = Mode::Write;
    const R: Mode = Mode::Read;

    fn node(mode: Mode, guards: u32) -> Holding {
        Holding::Node { mode, guards }
    }

    #[test]
    fn what_each_acquire_does_from_what_the_owner_holds() {
        for (holding, mode, entry) in [
            (Holding::Nothing, R, Entry::Acquire),
            (Holding::Nothing, W, Entry::Acquire),
            (node(W, 1), W, Entry::Nested),
            (node(W, 3), R, Entry::Nested),
            (node(R, 1), R, Entry::Nested),
            (node(R, 2), W, Entry::WouldDeadlock),
        ] {
            assert_eq!(enter(holding, mode, false), entry, "{holding:?} then {mode:?}");
            let lost = if holding == Holding::Nothing {
                entry
            } else {
                Entry::Lost
            };
            assert_eq!(
                enter(holding, mode, true),
                lost,
                "{holding:?} lost, then {mode:?}"
            );
        }
    }

    #[test]
    fn the_node_goes_with_the_last_guard_whichever_it_is() {
        let h = Holding::Nothing.granted(W);
        assert_eq!(h, node(W, 1));
        // A read within the write: the node stays a writer node.
        let h = h.granted(R).granted(W);
        assert_eq!(h, node(W, 3));
        assert_eq!(h.guards(), 3);
        let (h, last) = h.dropped();
        assert_eq!((h, last), (node(W, 2), false));
        let (h, last) = h.dropped();
        assert_eq!((h, last), (node(W, 1), false));
        let (h, last) = h.dropped();
        assert_eq!((h, last), (Holding::Nothing, true));
        assert_eq!(enter(h, R, false), Entry::Acquire);
        assert_eq!(Holding::Nothing.dropped(), (Holding::Nothing, false));
    }

    #[test]
    fn a_read_lock_never_upgrades_whatever_its_nesting() {
        let mut h = Holding::Nothing.granted(R);
        for _ in 0..3 {
            assert_eq!(enter(h, W, false), Entry::WouldDeadlock);
            h = h.granted(R);
        }
        assert_eq!(h, node(R, 4));
    }
}
