//! Revocation requests: [`SharedLock::revoke`] and
//! [`SharedLock::revoke_holders`] ask a holder to let go by writing
//! [`REVOKE_PAYLOAD`] to its node.

use tracing::{debug, info};

use super::requests::{child_path, with_retry};
use super::{ContenderState, SharedLock};
use crate::error::Error;
use crate::node_name::{self, RevocationTarget};
use crate::zk;

impl SharedLock {
    /// Asks the holder of the contender node `node` to let go: writes
    /// [`REVOKE_PAYLOAD`] as the node's data (ZooKeeper's "revocable shared
    /// locks" recipe, with Apache Curator's payload). Cooperative: the
    /// holder learns it through its guard
    /// ([`WriteGuard::revocation_requested`](crate::WriteGuard::revocation_requested)) and decides; nothing is
    /// taken from it, and no one is granted before it releases (a data
    /// change on a contender node grants nothing).
    ///
    /// Permissions: revoking needs WRITE on the node (nodes created with
    /// an ACL such as [`zk::Acls::creator_all`] cannot be revoked by other
    /// identities: [`Error::NoAuth`]), and the holder sees a request only if
    /// it may READ its own node (on a node it cannot watch, a request is
    /// written but never seen).
    ///
    /// `node` is a child name of this lock's directory, or its full path.
    /// Writing to a node that still waits costs its owner a listing plus
    /// new watches; a request its owner saw while waiting stays recorded,
    /// and one it did not is seen by the guard's kept watch, which reads
    /// the node at the grant. Ok(false) if there is no
    /// such contender: the node no longer exists (released, withdrawn, or
    /// its session ended), or `node` does not name a contender node of this
    /// lock (another directory, a node further down such as a nested
    /// lock's, a name that does not parse), in which case nothing is sent.
    ///
    /// A kazoo node (`…__lock__…`, `…__rlock__…`) is never written to:
    /// kazoo has no revocation, and the node's data is its contender's
    /// identifier, which kazoo's `Lock.contenders()` returns. Ok(false),
    /// nothing sent. Curator nodes are asked: `__REVOKE__` is Curator's own
    /// revocation message, acted on by a Curator holder only if it made
    /// its lock revocable (`makeRevocable`).
    ///
    /// The request is retried through connection loss: if it landed but
    /// its answer was lost, and the holder released before the retry, the
    /// result is Ok(false) although the request was written (to a node now
    /// gone).
    ///
    /// # Errors
    ///
    /// [`Error::NoAuth`] if the node's ACL refuses WRITE;
    /// [`Error::SessionExpired`], [`Error::ZooKeeper`].
    pub async fn revoke(&self, node: &str) -> Result<bool, Error> {
        let dir = self.inner.path.as_str();
        // Nothing is written to a node that is not a contender of this lock,
        // nor to kazoo's (kazoo has no revocation, and its node data is the
        // contender's identifier): see `node_name::revocation_target`.
        let name = match node_name::revocation_target(dir, node) {
            RevocationTarget::Ask(name) => name,
            RevocationTarget::NotRevocable { layout, .. } => {
                debug!(node, %layout, "a kazoo contender node: kazoo has no revocation, nothing sent");
                return Ok(false);
            }
            RevocationTarget::NotAContender => {
                debug!(node, "not a contender node of this lock: nothing to revoke");
                return Ok(false);
            }
        };
        let path = child_path(dir, name);
        let client = &self.inner.client;
        // Idempotent: retried through connection loss.
        match with_retry(client, || client.set_data(&path, REVOKE_PAYLOAD, None)).await {
            Ok(_) => {
                info!(node = %path, "revocation requested");
                Ok(true)
            }
            Err(zk::Error::NoNode) => Ok(false),
            Err(e) => Err(Error::from_zk(e, &path)),
        }
    }

    /// Asks every current holder of the lock to let go (see
    /// [`SharedLock::revoke`]): one listing, then one request per holder,
    /// each asked even if another refused. Returns the full paths of the
    /// nodes asked that still existed ([`Revoked::asked`]), those whose
    /// ACL refused WRITE ([`Revoked::refused`], with
    /// [`Error::NoAuth`]) and the kazoo holders, which are not asked
    /// (kazoo has no revocation: [`Revoked::not_revocable`]). A holder
    /// granted after the listing is not asked.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::contenders`]; [`Error::SessionExpired`] or
    /// [`Error::ZooKeeper`] from a request (NoAuth is not an error here: it
    /// is reported in [`Revoked::refused`]).
    pub async fn revoke_holders(&self) -> Result<Revoked, Error> {
        let mut revoked = Revoked::default();
        for contender in self.contenders().await? {
            if contender.state != ContenderState::Holds {
                continue;
            }
            if !contender.name.layout().revocable() {
                revoked.not_revocable.push(contender.path);
                continue;
            }
            match self.revoke(&contender.path).await {
                Ok(true) => revoked.asked.push(contender.path),
                Ok(false) => {}
                Err(e @ Error::NoAuth { .. }) => revoked.refused.push((contender.path, e)),
                Err(e) => return Err(e),
            }
        }
        Ok(revoked)
    }
}

/// What [`SharedLock::revoke_holders`] did: the holders asked and those
/// whose node refused the request.
///
/// Non-exhaustive: fields may be added.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Revoked {
    /// Full paths of the nodes asked (the request was written), in queue
    /// order.
    pub asked: Vec<String>,
    /// Full paths of the holders' nodes whose ACL refused WRITE to this
    /// client, each with its [`Error::NoAuth`]: those holders were not
    /// asked.
    pub refused: Vec<(String, Error)>,
    /// Full paths of the holders' nodes in kazoo's layout, in queue order:
    /// not asked, nothing written (kazoo has no revocation, and the node's
    /// data is its contender's identifier).
    pub not_revocable: Vec<String>,
}

pub use zk_rwlock_core::node_name::{is_revocation, REVOKE_PAYLOAD};
