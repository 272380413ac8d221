//! What a lock directory holds: [`SharedLock::contenders`] and
//! [`SharedLock::snapshot`], and the types they return.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::SharedLock;
use crate::connect::missing_chroot;
use crate::contender::child_path;
use crate::error::with_retry;
use crate::error::{is_retryable, Error};
use crate::node_name::NodeName;
use crate::ordering::Decision;
use crate::zk;
use zk_rwlock_core::semaphore;

/// Lists the lock directory and reads its contenders' stats: the work of
/// [`SharedLock::snapshot`].
pub(super) async fn take(lock: &SharedLock) -> Result<Snapshot, Error> {
    let client = &lock.inner.client;
    let dir = &lock.inner.path;
    let children = match with_retry(client, || client.list_children(dir)).await {
        Ok(children) => Some(children),
        Err(zk::Error::NoNode) => match missing_chroot(client, Some(dir)).await {
            Some(e) => return Err(e),
            None => None,
        },
        Err(e) => return Err(Error::from_zk(e, dir)),
    };
    describe(lock, children).await
}

/// Classifies a listing of the lock directory (`None`: the directory
/// does not exist) with [`ordering::queue`] and reads each contender's
/// stat. All stat requests are sent before any reply is awaited.
async fn describe(lock: &SharedLock, children: Option<Vec<String>>) -> Result<Snapshot, Error> {
    let client = &lock.inner.client;
    let dir = &lock.inner.path;
    let exists = children.is_some();
    let children = children.unwrap_or_default();
    // A semaphore's directory shows who holds its permits.
    let queue = semaphore::queue(&children, lock.inner.permits.map(std::num::NonZeroU32::get));
    let paths: Vec<String> = queue.contenders.iter().map(|p| child_path(dir, p.name)).collect();
    let stats: Vec<_> = paths.iter().map(|p| client.check_stat(p)).collect();
    let mut contenders = Vec::with_capacity(paths.len());
    for ((place, path), stat) in queue.contenders.iter().zip(&paths).zip(stats) {
        let stat = match stat.await {
            Ok(stat) => stat,
            Err(e) if is_retryable(&e) => None,
            // A server from ZooKeeper 3.7.3, 3.8.4 and 3.9.2 on checks READ
            // for `exists` of a node that is there: listed, its stat unknown.
            Err(zk::Error::NoAuth) => None,
            Err(e) => return Err(Error::from_zk(e, path)),
        };
        let Ok(name) = place.name.parse::<NodeName>() else {
            continue;
        };
        contenders.push(QueueEntry {
            path: path.clone(),
            state: match place.decision {
                Decision::Granted => ContenderState::Holds,
                Decision::Wait { watch, .. } => ContenderState::WaitsOn(watch.to_owned()),
                _ => ContenderState::Exhausted,
            },
            fencing_token: stat.as_ref().map(|s| s.czxid),
            created: stat
                .as_ref()
                .map(|s| UNIX_EPOCH + Duration::from_millis(s.ctime.max(0) as u64)),
            session: stat.as_ref().map(|s| s.ephemeral_owner),
            name,
        });
    }
    Ok(Snapshot {
        exists,
        contenders,
        foreign: queue.foreign.iter().map(|s| (*s).to_owned()).collect(),
    })
}

/// The lock directory at one moment, from [`SharedLock::snapshot`].
///
/// Non-exhaustive: fields may be added. Outside this crate, start from
/// `Snapshot::default()` and set the fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// Whether the lock directory exists.
    pub exists: bool,
    /// Contenders in queue order (head first).
    pub contenders: Vec<QueueEntry>,
    /// Children that are not contender nodes (ignored by the lock).
    pub foreign: Vec<String>,
}

/// One contender of a lock, as seen by [`SharedLock::contenders`].
///
/// Non-exhaustive: fields may be added. Outside this crate, build one with
/// [`QueueEntry::new`] and set the fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueEntry {
    /// Full path of the contender node.
    pub path: String,
    /// The parsed node name: identity, token, mode, sequence.
    pub name: NodeName,
    /// Holds the lock, or waits on a node.
    pub state: ContenderState,
    /// The node's czxid, if it still existed when read (and the server let
    /// this identity read its stat: from ZooKeeper 3.7.3, 3.8.4 and 3.9.2
    /// on, a node's ACL must give READ for that).
    pub fencing_token: Option<i64>,
    /// When the node was created (server clock), if it still existed when
    /// read (and its stat could be read, as for `fencing_token`).
    pub created: Option<SystemTime>,
    /// The id of the session that owns the node, if it still existed when
    /// read (and its stat could be read, as for `fencing_token`): the node's
    /// `ephemeralOwner`, `0` for a node that is not ephemeral (see
    /// [`QueueEntry::is_persistent`]).
    pub session: Option<i64>,
}

impl QueueEntry {
    /// The contender `name` in the lock directory `dir`, in `state`, with
    /// no stat (`fencing_token`, `created` and `session` are `None`, as
    /// for a node deleted before its stat was read).
    pub fn new(dir: &str, name: NodeName, state: ContenderState) -> QueueEntry {
        QueueEntry {
            path: child_path(dir, &name.to_string()),
            name,
            state,
            fencing_token: None,
            created: None,
            session: None,
        }
    }

    /// True for a node that is not ephemeral (`session` is `Some(0)`): no
    /// session's request for the lock, but a persistent node that has a
    /// contender's name (made by hand or by another tool). The lock still
    /// counts it as a contender, one that never leaves: it blocks everyone
    /// queued after it until someone deletes it.
    pub fn is_persistent(&self) -> bool {
        self.session == Some(0)
    }

    /// Full path of the contender node ([`QueueEntry::path`]), by the name
    /// a guard gives it ([`WriteGuard::node`](crate::WriteGuard::node)).
    pub fn node(&self) -> &str {
        &self.path
    }
}

/// Whether a contender holds the lock or waits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContenderState {
    /// Holds the lock.
    Holds,
    /// Waits on the node with this child name.
    WaitsOn(String),
    /// Cannot be ordered (its sequence is at ZooKeeper's limit, negative, or
    /// shared with another node): it is never granted, and its owner
    /// withdraws it (see [`Error::SequenceExhausted`]).
    Exhausted,
}
