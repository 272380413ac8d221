//! Revocation requests: [`SharedLock::revoke`] and
//! [`SharedLock::revoke_holders`] ask a holder to let go by writing
//! [`REVOKE_PAYLOAD`] to its node.

use tracing::{debug, info};

use super::{ContenderState, SharedLock};
use crate::contender::child_path;
use crate::error::with_retry;
use crate::error::Error;
use crate::node_name::{self, RevocationTarget};
use crate::zk;

/// Writes [`REVOKE_PAYLOAD`] on the contender node `node` of `lock`, if it
/// is one that may be asked: the work of [`SharedLock::revoke`].
pub(super) async fn ask(lock: &SharedLock, node: &str) -> Result<bool, Error> {
    let dir = lock.inner.path.as_str();
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
    let client = &lock.inner.client;
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

/// Asks each holder of `lock` found by one listing: the work of
/// [`SharedLock::revoke_holders`].
pub(super) async fn ask_holders(lock: &SharedLock) -> Result<Revoked, Error> {
    let mut revoked = Revoked::default();
    for contender in lock.contenders().await? {
        if contender.state != ContenderState::Holds {
            continue;
        }
        if !contender.name.layout().revocable() {
            revoked.not_revocable.push(contender.path);
            continue;
        }
        match ask(lock, &contender.path).await {
            Ok(true) => revoked.asked.push(contender.path),
            Ok(false) => {}
            Err(e @ Error::NoAuth { .. }) => revoked.refused.push((contender.path, e)),
            Err(e) => return Err(e),
        }
    }
    Ok(revoked)
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

pub use zk_rwlock_core::node_name::REVOKE_PAYLOAD;
