//! While holding: what the keeper's watch on the held node tells.

use std::time::Duration;

use super::{Answer, Contender, Downgrade, HeldNode, Keep};
use crate::acquire;
use crate::node_name;

/// How long a guard whose acquire left no watch on its node (a grant at
/// the first look, the lock free; a wait whose own watch had fired or
/// could not be set, or was set on a connection older than the grant's:
/// [`crate::acquire::Acquire::connection_changed`]) holds before
/// its keeper reads the node and watches it. A hold that ends sooner costs
/// no request beyond the lock's own (create, listing, release); one that
/// lasts longer costs one, as every grant's did. A deletion of the node by
/// anyone, or a revocation request written to it, is noticed within the
/// later of this bound and the server's notification; the session's end
/// and the lease are followed from the first moment, as ever. 100 ms.
pub const FIRST_WATCH_AFTER: Duration = Duration::from_millis(100);

impl HeldNode {
    /// What reading the held node found: its czxid, and whether its `data`
    /// is a revocation request ([`crate::node_name::REVOKE_PAYLOAD`]); the
    /// machine decides, the driver feeds the bytes it read.
    pub fn read(czxid: i64, data: &[u8]) -> HeldNode {
        HeldNode {
            czxid,
            revocation: node_name::is_revocation(data),
        }
    }
}

impl Contender {
    /// When the guard's keeper first reads and watches the held node:
    /// `None` to wait on the watch the acquire set on it while waiting
    /// (handed over at the grant: [`Contender::own_watch_set`]), else after
    /// [`FIRST_WATCH_AFTER`].
    pub fn first_watch_after(&self) -> Option<Duration> {
        if self.own_watch_set() {
            None
        } else {
            Some(FIRST_WATCH_AFTER)
        }
    }

    /// Feeds what the keeper's read-and-watch of the held node answered;
    /// returns what the keeper does next.
    pub fn held_watch_set(&mut self, answer: Answer<HeldNode>) -> Keep {
        match answer {
            // A data change used up the watch, then the node was deleted
            // and made again under its name (by someone else: the name
            // carries this acquire's token): the guard's node is gone.
            Answer::Ok(node) if Some(node.czxid) != self.czxid() => {
                self.held_deleted();
                Keep::Stop
            }
            Answer::Ok(node) => {
                if node.revocation {
                    self.revoked = true;
                }
                Keep::Wait
            }
            Answer::NoNode => {
                self.held_deleted();
                Keep::Stop
            }
            Answer::Retry => Keep::Watch,
            Answer::SessionEnded => {
                self.held_lost();
                Keep::Stop
            }
            Answer::Exists | Answer::NoAuth | Answer::Unimplemented | Answer::Failed => Keep::Stop,
        }
    }

    /// Feeds the held node's watch event; returns what the keeper does next.
    pub fn held_event(&mut self, event: acquire::NodeEvent) -> Keep {
        match event {
            acquire::NodeEvent::Deleted => {
                self.held_deleted();
                Keep::Stop
            }
            acquire::NodeEvent::SessionEnded => {
                self.held_lost();
                Keep::Stop
            }
            // Data written to the node (a revocation request?): read it and
            // watch again.
            acquire::NodeEvent::DataChanged | acquire::NodeEvent::Other | acquire::NodeEvent::Failed => {
                Keep::Watch
            }
        }
    }

    /// Marks the held lock lost (the session ended, or the lease ran out).
    pub fn held_lost(&mut self) {
        self.lost = true;
    }

    /// Notes a revocation request seen on my node before the grant.
    pub fn note_revoked(&mut self) {
        self.revoked = true;
    }

    /// Feeds the data of my node, read while waiting (with the data watch
    /// on it, [`crate::acquire::Action::SetWatches`]'s `own`): the machine
    /// decides whether it is a revocation request, which is kept for good
    /// (a later write does not take it back) and set on the guard at the
    /// grant ([`Contender::is_revoked`]).
    pub fn own_data_read(&mut self, data: &[u8]) {
        if node_name::is_revocation(data) {
            self.revoked = true;
        }
    }

    pub(super) fn held_deleted(&mut self) {
        match self.downgrade {
            // Whose deletion it is, the downgrade's answer tells.
            Downgrade::Running { .. } => self.downgrade = Downgrade::Running { deleted: true },
            // The downgrade's own.
            Downgrade::Replaced => {}
            // After the release began, the deletion is the release's.
            Downgrade::None if self.releasing => {}
            Downgrade::None => {
                self.gone = true;
                self.lost = true;
            }
        }
    }
}
