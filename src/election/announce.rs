//! The leader's announcement on its node, kept while the node lives.

use tracing::{info, warn};

use super::rules::{self, Ended, Keeping, Wrote};
use crate::error::Error;
use crate::lock::wire_error;
use crate::lock::WriteGuard;
use crate::zk;

/// The error of a failed announcement, with the guard released (in vain if
/// the node is gone).
pub(super) async fn announce_failed(guard: WriteGuard, e: zk::Error, node: &str) -> Error {
    let error = match e {
        zk::Error::NoNode => Error::Lost {
            node: node.to_owned(),
        },
        e => Error::from_zk(e, node),
    };
    warn!(node, %error, "could not announce the leadership");
    let _ = guard.release().await;
    error
}

/// Keeps the leader's announcement on its node while the node lives, as
/// [`rules::KeepAnnounced`] says (a data watch on the node; data someone
/// else wrote over it that is neither the announcement nor a revocation
/// request is written over again, at the version read), until the node is
/// gone, the session ends, or the node of its name is not the one made at
/// `czxid` by this session.
pub(super) async fn keep_announced(client: zk::Client, node: String, mine: Vec<u8>, czxid: i64) {
    let mut keep = rules::KeepAnnounced::new(mine, czxid, client.session_id().0);
    let mut next = Keeping::Read;
    loop {
        next = match next {
            Keeping::Read => read_and_keep(&client, &node, &mut keep).await,
            Keeping::Pause(pause) => {
                tokio::time::sleep(pause).await;
                Keeping::Read
            }
            Keeping::Stop(Ended::MadeAgain) => {
                warn!(node = %node, "the leader's node was made again by someone else: its announcement is no longer kept");
                return;
            }
            Keeping::Stop(_) => return,
            // A write and a wait follow a read, whose watch they need:
            // `read_and_keep` carries them.
            Keeping::Write { .. } | Keeping::Await => Keeping::Read,
        };
    }
}

/// One read of the node with its watch, and what follows it as
/// [`rules::KeepAnnounced`] says: the announcement written again, the wait
/// for that watch. Returns what comes after: a read, a pause, or the end.
async fn read_and_keep(client: &zk::Client, node: &str, keep: &mut rules::KeepAnnounced) -> Keeping {
    let (data, stat, changed) = match client.get_and_watch_data(node).await {
        Ok(read) => read,
        Err(e) => {
            let next = keep.read(Err(wire_error(&e)));
            if next == Keeping::Stop(Ended::CannotWatch) {
                warn!(node = %node, error = %e, "cannot watch the leader's node: its announcement is not kept");
            }
            return next;
        }
    };
    let mut next = keep.read(Ok(rules::NodeRead {
        data: &data,
        version: stat.version,
        czxid: stat.czxid,
        ephemeral_owner: stat.ephemeral_owner,
    }));
    if let Keeping::Write { version } = next {
        let written = client.set_data(node, keep.mine(), Some(version)).await;
        let (after, wrote) = keep.written(written.as_ref().map(|_| ()).map_err(wire_error));
        match (wrote, written) {
            (Wrote::Announced, _) => {
                info!(node = %node, "announced the leadership again after a write by someone else")
            }
            (Wrote::Failed | Wrote::Lost, Err(e)) => {
                warn!(node = %node, error = %e, "could not announce the leadership again")
            }
            _ => {}
        }
        next = after;
    }
    if next != Keeping::Await {
        return next;
    }
    let event = changed.changed().await;
    keep.changed(event.event_type == zk::EventType::NodeDeleted || event.event_type == zk::EventType::Session)
}

/// Whether `stat` is the node this session made at `czxid` (the grant's
/// fencing token), not one made again under its name.
pub(super) fn is_mine(stat: &zk::Stat, czxid: i64, client: &zk::Client) -> bool {
    stat.czxid == czxid && stat.ephemeral_owner == client.session_id().0
}

/// The task that keeps a leadership's announcement ([`keep_announced`]):
/// aborted when the leadership is resigned or dropped, detached by
/// [`Leadership::into_guard`].
pub(super) struct Announcer(pub(super) Option<tokio::task::JoinHandle<()>>);

impl Announcer {
    pub(super) fn detach(mut self) {
        self.0 = None;
    }
}

impl Drop for Announcer {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}
