//! Re-entrant acquires: [`ReentrantLock`], an owner of one lock whose
//! acquires of a lock it holds are granted at once (the rules:
//! [`zk_rwlock_core::reentrant`]).

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::guard::{Guard, ReadGuard, WriteGuard};
use super::held::Held;
use super::SharedLock;
use super::{deadline, Patience};
use crate::error::Error;
use crate::lease::HoldState;
use crate::node_name::Mode;
use zk_rwlock_core::reentrant::{self, Entry, Holding};

/// An owner of a lock whose acquires are re-entrant, from
/// [`SharedLock::reentrant`]: code that takes the lock and calls a helper
/// that takes it again gets a second guard at once, instead of waiting for
/// itself until its timeout.
///
/// | the owner holds | `read()` | `write()` |
/// |---|---|---|
/// | nothing | a reader node, as [`SharedLock::read`] | a writer node, as [`SharedLock::write`] |
/// | the write lock | at once, on the writer node | at once, on the writer node |
/// | a read lock | at once, on the reader node | [`Error::WouldDeadlock`], at once |
///
/// A read within a write is granted at once, as Apache Curator's
/// `InterProcessReadWriteLock` does; an upgrade (a write while only a read
/// is held) would wait for the owner's own reader node for ever, so it is
/// refused. Every guard of the owner is a guard on its one node: the same
/// fencing token (the first grant's), the same lease and state. The node is
/// released when the owner's last guard goes, whichever it is: releasing
/// an outer guard while a nested one lives keeps the lock held, and its
/// `release()` returns `Ok(())` at once. A guard of an owner cannot
/// [downgrade](WriteGuard::downgrade) ([`Error::DowngradeReentrant`]).
/// While the owner's node is lost, its acquires fail with [`Error::Lost`]
/// until all its guards are gone.
///
/// The owner is one caller's: it is not `Clone`, and its acquires take it
/// by `&mut`, so two of them never run at once. Its guards are ordinary
/// [`ReadGuard`]s and [`WriteGuard`]s that it does not borrow: they may
/// move to other tasks.
///
/// ```no_run
/// # async fn demo(lock: zk_rwlock::SharedLock) -> Result<(), zk_rwlock::Error> {
/// let mut owner = lock.reentrant();
/// let outer = owner.write().await?;
/// // A helper that takes the lock again: granted at once, nested.
/// let inner = owner.write().await?;
/// let read = owner.read().await?; // a read within the write
/// assert_eq!(inner.fencing_token(), outer.fencing_token());
/// drop((outer, inner));
/// read.release().await?; // the last guard: the node is released
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ReentrantLock {
    lock: SharedLock,
    /// The owner's node, while any of its guards holds it.
    node: Weak<Held>,
    /// The mode the node was granted in.
    mode: Mode,
}

impl SharedLock {
    /// An owner of this lock whose acquires are re-entrant: see
    /// [`ReentrantLock`]. Each call makes a new owner, with nothing held;
    /// two owners are two contenders, as two [`SharedLock`] handles are.
    pub fn reentrant(&self) -> ReentrantLock {
        ReentrantLock {
            lock: self.clone(),
            node: Weak::new(),
            mode: Mode::Read,
        }
    }
}

impl ReentrantLock {
    /// The lock this owner takes.
    pub fn lock(&self) -> &SharedLock {
        &self.lock
    }

    /// What the owner holds: no node, or its node's mode and the number of
    /// its guards alive.
    pub fn holding(&self) -> Holding {
        match self.node.upgrade() {
            // Less this handle on it.
            Some(node) => Holding::Node {
                mode: self.mode,
                guards: u32::try_from(Arc::strong_count(&node) - 1).unwrap_or(u32::MAX),
            },
            None => Holding::Nothing,
        }
    }

    /// Acquires the read lock, or nests on the owner's node (see the
    /// [table](ReentrantLock)); waits as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`]; [`Error::Lost`] if the owner's node is
    /// lost and some of its guards are still alive.
    pub async fn read(&mut self) -> Result<ReadGuard, Error> {
        let node = self.enter(Mode::Read, Patience::Forever).await?;
        node.map(ReadGuard::shared).ok_or_else(super::unreachable_timeout)
    }

    /// Acquires the write lock, or nests on the owner's writer node (see
    /// the [table](ReentrantLock)); waits as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::write`]; [`Error::WouldDeadlock`] at once if the
    /// owner holds a read lock; [`Error::Lost`] if the owner's node is lost
    /// and some of its guards are still alive.
    pub async fn write(&mut self) -> Result<WriteGuard, Error> {
        let node = self.enter(Mode::Write, Patience::Forever).await?;
        node.map(WriteGuard::shared)
            .ok_or_else(super::unreachable_timeout)
    }

    /// As [`ReentrantLock::read`], giving up at once if the lock is not
    /// free (as [`SharedLock::try_read`]); a nested read is always granted.
    ///
    /// # Errors
    ///
    /// As [`ReentrantLock::read`].
    pub async fn try_read(&mut self) -> Result<Option<ReadGuard>, Error> {
        Ok(self
            .enter(Mode::Read, Patience::None)
            .await?
            .map(ReadGuard::shared))
    }

    /// As [`ReentrantLock::write`], giving up at once if the lock is not
    /// free (as [`SharedLock::try_write`]); a nested write is always
    /// granted.
    ///
    /// # Errors
    ///
    /// As [`ReentrantLock::write`].
    pub async fn try_write(&mut self) -> Result<Option<WriteGuard>, Error> {
        Ok(self
            .enter(Mode::Write, Patience::None)
            .await?
            .map(WriteGuard::shared))
    }

    /// As [`ReentrantLock::read`], giving up after `timeout` (as
    /// [`SharedLock::read_timeout`]).
    ///
    /// # Errors
    ///
    /// As [`ReentrantLock::read`].
    pub async fn read_timeout(&mut self, timeout: Duration) -> Result<Option<ReadGuard>, Error> {
        Ok(self
            .enter(Mode::Read, deadline(timeout))
            .await?
            .map(ReadGuard::shared))
    }

    /// As [`ReentrantLock::write`], giving up after `timeout` (as
    /// [`SharedLock::write_timeout`]).
    ///
    /// # Errors
    ///
    /// As [`ReentrantLock::write`].
    pub async fn write_timeout(&mut self, timeout: Duration) -> Result<Option<WriteGuard>, Error> {
        Ok(self
            .enter(Mode::Write, deadline(timeout))
            .await?
            .map(WriteGuard::shared))
    }

    /// Acquires in a mode chosen at run time (see [`ReentrantLock::read`],
    /// [`ReentrantLock::write`]).
    ///
    /// # Errors
    ///
    /// As those.
    pub async fn acquire(&mut self, mode: Mode) -> Result<Guard, Error> {
        let node = self.enter(mode, Patience::Forever).await?;
        node.map(|node| Guard::shared(mode, node))
            .ok_or_else(super::unreachable_timeout)
    }

    /// The owner's node for an acquire in `mode`: the node it holds
    /// (nested), or a new one granted within `patience` (`None`: not
    /// granted), as [`reentrant::enter`] says.
    async fn enter(&mut self, mode: Mode, patience: Patience) -> Result<Option<Arc<Held>>, Error> {
        let node = self.node.upgrade();
        let lost = node.as_ref().is_some_and(|node| node.state() == HoldState::Lost);
        let holding = match &node {
            Some(node) => Holding::Node {
                mode: self.mode,
                guards: u32::try_from(Arc::strong_count(node) - 1).unwrap_or(u32::MAX),
            },
            None => Holding::Nothing,
        };
        match reentrant::enter(holding, mode, lost) {
            Entry::Nested => Ok(node),
            Entry::WouldDeadlock => Err(Error::WouldDeadlock {
                path: self.lock.path().to_owned(),
            }),
            Entry::Lost => Err(Error::Lost {
                node: node.map(|node| node.node().to_owned()).unwrap_or_default(),
            }),
            Entry::Acquire => {
                drop(node);
                let Some(held) = self.lock.acquire_held(mode, patience).await? else {
                    return Ok(None);
                };
                let node = Arc::new(held);
                self.node = Arc::downgrade(&node);
                self.mode = mode;
                Ok(Some(node))
            }
        }
    }
}
