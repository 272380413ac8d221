//! The leader's announcement on its node, kept while the node lives.

use std::time::Duration;

use tracing::{info, warn};

use super::rules;
use crate::backoff::Backoff;
use crate::error::{ends_session, is_retryable, Error};
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

/// Keeps the leader's announcement on its node while the node lives: a
/// data watch on it; data written by someone else that is neither the
/// announcement nor a revocation request ([`rules::reannounces`]) is
/// replaced by the announcement again, with a `setData` conditional on the
/// version read, so a revocation request written meanwhile is never
/// overwritten. Ends when the node is deleted or the session ends, or when
/// a node of its name is not the one made at `czxid` by this session (it
/// was deleted and made again by someone else: the leadership is lost, and
/// that node is not to be announced).
pub(super) async fn keep_announced(client: zk::Client, node: String, mine: Vec<u8>, czxid: i64) {
    let mut pause = Duration::ZERO;
    loop {
        let watcher = match client.get_and_watch_data(&node).await {
            Ok((_, stat, _)) if !is_mine(&stat, czxid, &client) => {
                warn!(node = %node, "the leader's node was made again by someone else: its announcement is no longer kept");
                return;
            }
            Ok((data, stat, watcher)) => {
                pause = Duration::ZERO;
                if rules::reannounces(&data, &mine) {
                    match client.set_data(&node, &mine, Some(stat.version)).await {
                        Ok(_) => {
                            info!(node = %node, "announced the leadership again after a write by someone else")
                        }
                        // Written again meanwhile: the watch says so.
                        Err(zk::Error::BadVersion) => {}
                        Err(zk::Error::NoNode) => return,
                        Err(e) if ends_session(&e) => return,
                        Err(e) => warn!(node = %node, error = %e, "could not announce the leadership again"),
                    }
                }
                watcher
            }
            Err(zk::Error::NoNode) => return,
            Err(e) if ends_session(&e) => return,
            Err(e) if is_retryable(&e) => {
                pause = Backoff::ANNOUNCEMENT.next(pause);
                tokio::time::sleep(pause).await;
                continue;
            }
            Err(e) => {
                warn!(node = %node, error = %e, "cannot watch the leader's node: its announcement is not kept");
                return;
            }
        };
        let event = watcher.changed().await;
        if event.event_type == zk::EventType::NodeDeleted || event.event_type == zk::EventType::Session {
            return;
        }
    }
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
