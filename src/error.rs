//! The error type of the lock API.

use crate::zk;

/// What went wrong with a lock operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The lock path is not a valid absolute ZooKeeper path for a lock directory.
    #[error(
        "invalid lock path `{path}`: {reason}; a lock path is absolute, like `/locks/orders`: \
         it starts with '/', has no empty, '.' or '..' segments, no trailing '/', no NUL, and is not `/` itself"
    )]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The contender identity cannot be used in a node name.
    #[error("invalid identity `{identity}`: {reason}; an identity is a non-empty name without '/', '@' or NUL, like `web01`")]
    InvalidIdentity {
        /// The identity as given.
        identity: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The ZooKeeper session ended by expiry: every ephemeral node of it,
    /// and so every lock it held or waited for, is gone. Connect a new client.
    #[error("ZooKeeper session expired: its locks are gone; connect a new client to lock again")]
    SessionExpired,
    /// The ZooKeeper client was closed (or failed authentication), so its session is over.
    #[error("ZooKeeper client is closed: connect a new client to lock again")]
    SessionClosed,
    /// The contender node was deleted while the lock was held or awaited,
    /// by someone other than this guard.
    #[error("lock lost: contender node `{node}` was deleted by someone else")]
    Lost {
        /// Full path of the deleted node.
        node: String,
    },
    /// The server refused the operation for lack of permission (ACL).
    #[error("ZooKeeper refused access to `{path}` (NoAuth): add credentials with `Connector::with_auth` or fix the node's ACL")]
    NoAuth {
        /// The path the operation was on.
        path: String,
    },
    /// The lock directory (or one of its parents) is an ephemeral node, which cannot have children.
    #[error("lock directory `{path}` is an ephemeral node and cannot hold contenders: choose a path under persistent nodes")]
    EphemeralDirectory {
        /// The lock directory.
        path: String,
    },
    /// The connect string is malformed.
    #[error("invalid connect string `{servers}`: {reason}; expected host:port[,host:port...]")]
    InvalidConnectString {
        /// The connect string as given.
        servers: String,
        /// What the client said is wrong with it.
        reason: &'static str,
    },
    /// No ZooKeeper server answered in time.
    #[error("cannot reach ZooKeeper at {servers}: no server answered (tried for up to {timeout:?}); is a server running there?")]
    Unreachable {
        /// The connect string.
        servers: String,
        /// How long connecting was tried.
        timeout: std::time::Duration,
    },
    /// The blocking API was called from inside an asynchronous runtime, where it would block a worker thread.
    #[error("the blocking API cannot be used inside an async runtime: use the async `SharedLock` there")]
    InsideRuntime,
    /// Starting the runtime of the blocking API failed.
    #[error("cannot start the runtime of the blocking API")]
    Runtime(#[source] std::io::Error),
    /// Any other error reported by ZooKeeper or its client.
    #[error("ZooKeeper error: {0}")]
    ZooKeeper(#[from] zk::Error),
}

impl Error {
    /// Maps a ZooKeeper error of an operation on `path` to the most specific variant.
    pub(crate) fn from_zk(err: zk::Error, path: &str) -> Error {
        match err {
            zk::Error::SessionExpired | zk::Error::SessionMoved => Error::SessionExpired,
            zk::Error::ClientClosed | zk::Error::AuthFailed => Error::SessionClosed,
            zk::Error::NoAuth => Error::NoAuth {
                path: path.to_owned(),
            },
            zk::Error::NoChildrenForEphemerals => Error::EphemeralDirectory {
                path: path.to_owned(),
            },
            other => Error::ZooKeeper(other),
        }
    }
}
