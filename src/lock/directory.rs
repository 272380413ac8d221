//! Requests on the lock directory and its nodes: creating the directory
//! (and checking its data), retrying idempotent requests, finding,
//! deleting and releasing contender nodes, recycling the directory.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;
use tracing::{debug, warn};
use uuid::Uuid;

use super::held::Pending;
use super::validate::directory_mode;
use super::SharedLock;
use crate::error::{is_retryable, Error};
use crate::lease;
use crate::node_name::{Layout, NodeName};
use crate::ordering;
use crate::zk;

impl SharedLock {
    /// Checks that the lock directory's data is the lock's (nothing or a
    /// release record, see [`node_name::is_lock_directory_data`]): no
    /// request if the listing said it holds none (`data_length` 0),
    /// otherwise one read. If it is not, withdraws the node just created
    /// and fails: each release of the write lock would overwrite that data.
    ///
    /// [`node_name::is_lock_directory_data`]: crate::node_name::is_lock_directory_data
    pub(super) async fn check_data(
        &self,
        data_length: Option<i32>,
        pending: &mut Pending,
    ) -> Result<(), Error> {
        let inner = &self.inner;
        let client = &inner.client;
        let dir = inner.path.as_str();
        let data = match data_length {
            Some(0) => Ok(Vec::new()),
            _ => with_retry(client, || client.get_data(dir))
                .await
                .map(|(data, _)| data),
        };
        match data {
            Ok(data) if crate::node_name::is_lock_directory_data(&data) => {
                inner.data_checked.store(true, Ordering::Relaxed);
                Ok(())
            }
            Ok(data) => {
                warn!(
                    lock = %dir,
                    bytes = data.len(),
                    "the lock directory holds data that is not a release record: not using it as a lock"
                );
                pending.give_up().await?;
                Err(Error::DirectoryHoldsData { path: dir.to_owned() })
            }
            Err(e) => {
                pending.give_up().await?;
                Err(Error::from_zk(e, dir))
            }
        }
    }

    /// Creates the lock directory: its parents as persistent nodes, the
    /// directory itself as a container node, which the server removes once
    /// it is empty (so its sequence counter starts again from 0). Servers
    /// before 3.6, and locks in kazoo's layout, get a persistent directory. The directory is tried first,
    /// alone: its parents usually exist (a service locking per record makes
    /// many directories under one parent), and a create that finds its node
    /// there is still a write the server logs.
    pub(super) async fn make_dir(&self) -> Result<(), Error> {
        let client = &self.inner.client;
        let dir = self.inner.path.as_str();
        let acls = zk::Acls::new(&self.inner.directory_acls);
        match self.create_dir_node(acls).await {
            Err(zk::Error::NoNode) => {}
            result => return result.map_err(|e| Error::from_zk(e, dir)),
        }
        if let Some(parent) = dir
            .rsplit_once('/')
            .map(|(parent, _)| parent)
            .filter(|p| !p.is_empty())
        {
            let options = zk::CreateMode::Persistent.with_acls(acls);
            match with_retry(client, || client.mkdir(parent, &options)).await {
                Ok(()) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(Error::from_zk(e, parent)),
            }
        }
        match self.create_dir_node(acls).await {
            // A parent removed meanwhile: the caller's create finds the
            // directory missing and comes back (a bounded number of times).
            Ok(()) | Err(zk::Error::NoNode) => Ok(()),
            Err(e) => Err(Error::from_zk(e, dir)),
        }
    }

    /// Creates the lock directory's node, its parent existing: a container
    /// (persistent on servers before 3.6, and in kazoo's layout, see
    /// [`directory_mode`]). A directory already there is success.
    async fn create_dir_node(&self, acls: zk::Acls<'_>) -> Result<(), zk::Error> {
        let client = &self.inner.client;
        let dir = self.inner.path.as_str();
        let container = directory_mode(self.inner.layout).with_acls(acls);
        match with_retry(client, || client.create(dir, &[], &container)).await {
            Ok(_) | Err(zk::Error::NodeExists) => Ok(()),
            Err(zk::Error::Unimplemented) => {
                let persistent = zk::CreateMode::Persistent.with_acls(acls);
                match with_retry(client, || client.create(dir, &[], &persistent)).await {
                    Ok(_) | Err(zk::Error::NodeExists) => Ok(()),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }
}

pub(super) fn child_path(dir: &str, name: &str) -> String {
    let mut path = String::with_capacity(dir.len() + 1 + name.len());
    path.push_str(dir);
    path.push('/');
    path.push_str(name);
    path
}

/// Runs an idempotent request again after a retryable error (see
/// [`is_retryable`]), until it gets the server's answer or the session is
/// over. A request sent while the client is disconnected waits for the
/// reconnection; once the session is over, requests fail with its terminal
/// error. Retries are spaced out (up to 100 ms apart), and they stop after
/// twice the session timeout: by then the client has declared the session
/// expired if it could not reconnect, so an error still coming back means
/// the client's session task is gone (its runtime shut down), which ends
/// the session just the same.
pub(crate) async fn with_retry<T, F, Fut>(client: &zk::Client, op: F) -> Result<T, zk::Error>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, zk::Error>>,
{
    let started = Instant::now();
    let mut pause = Duration::ZERO;
    loop {
        match op().await {
            Err(e) if is_retryable(&e) => {
                if started.elapsed() > client.session_timeout() * 2 {
                    debug!(error = %e, "giving up retrying: the session cannot be reached");
                    return Err(e);
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).clamp(Duration::from_millis(1), Duration::from_millis(100));
            }
            result => return result,
        }
    }
}

/// Finds this session's node carrying `token` in `layout` after a
/// connection loss (`<identity>@<token>` native, `_c_<token>-` Curator,
/// the token's hex kazoo): syncs the server with the leader first, so that
/// a create still in flight elsewhere is seen. Nodes with the token owned
/// by another session (an earlier, expired one) are not ours.
pub(super) async fn find_own(
    client: &zk::Client,
    dir: &str,
    token: Uuid,
    layout: Layout,
) -> Result<Option<(String, i64)>, Error> {
    let session = client.session_id().0;
    let _ = with_retry(client, || client.sync(dir)).await;
    let children = match with_retry(client, || client.list_children(dir)).await {
        Ok(children) => children,
        Err(zk::Error::NoNode) => return Ok(None),
        Err(e) => return Err(Error::from_zk(e, dir)),
    };
    let mut mine: Vec<(String, i64)> = Vec::new();
    for child in children {
        let Ok(name) = child.parse::<NodeName>() else {
            continue;
        };
        if name.token() != Some(token) || name.layout() != layout {
            continue;
        }
        let path = child_path(dir, &child);
        match with_retry(client, || client.check_stat(&path)).await {
            Ok(Some(stat)) if stat.ephemeral_owner == session => mine.push((child, stat.czxid)),
            Ok(_) => {}
            Err(e) => return Err(Error::from_zk(e, &path)),
        }
    }
    // Two nodes with one token can only come from a retried create: keep
    // the first, delete the others.
    mine.sort_by_key(|(_, czxid)| *czxid);
    let mut found = mine.into_iter();
    let first = found.next();
    for (extra, _) in found {
        delete_node(client, &child_path(dir, &extra)).await?;
    }
    Ok(first)
}

/// Deletes a node, retrying until the deletion is confirmed or the session
/// is over. A missing node counts as deleted.
pub(super) async fn delete_node(client: &zk::Client, path: &str) -> Result<(), Error> {
    match with_retry(client, || client.delete(path, None)).await {
        Ok(()) | Err(zk::Error::NoNode) => Ok(()),
        Err(e) => Err(Error::from_zk(e, path)),
    }
}

/// Recycles the lock directory if it is empty, once its sequence counter
/// is near the limit (see [`ordering::needs_recycling`]): one transaction
/// deletes it and creates it again, as a persistent node with the same
/// ACL, so its counter starts from 0 and whatever access an operator (or
/// another identity) gave it stays as it was. Fails harmlessly (and
/// silently) if someone has queued in the meantime or the directory is
/// gone; if its ACL cannot be read, the directory is left alone.
pub(super) async fn recycle_dir(client: &zk::Client, dir: &str) {
    let acl = match client.get_acl(dir).await {
        Ok((acl, stat)) if stat.num_children == 0 => acl,
        Ok(_) => return,
        Err(e) => {
            debug!(lock = %dir, error = %e, "cannot read the lock directory's ACL: not recycling it");
            return;
        }
    };
    let recycle = async {
        let mut multi = client.new_multi_writer();
        multi.add_delete(dir, None)?;
        multi.add_create(
            dir,
            &[],
            &zk::CreateMode::Persistent.with_acls(zk::Acls::new(&acl)),
        )?;
        multi.commit().await.map_err(zk::Error::from)
    };
    match recycle.await {
        Ok(_) => {
            warn!(lock = %dir, "recycled the idle lock directory: its sequence counter was near its limit and starts from 0 again")
        }
        Err(e) => debug!(lock = %dir, error = %e, "the lock directory stays"),
    }
}

/// Logs, once per directory in this process, that its sequence counter has
/// passed [`ordering::RECYCLE_THRESHOLD`].
pub(super) fn warn_threshold(dir: &str, seq: i32) {
    static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let Ok(mut warned) = WARNED.lock() else {
        return;
    };
    if warned.get_or_insert_with(HashSet::new).insert(dir.to_owned()) {
        warn!(
            lock = %dir,
            seq,
            limit = ordering::SEQUENCE_LIMIT,
            "the lock directory's sequence counter is near its limit: the directory is deleted and recreated as soon as it is idle"
        );
    }
}

/// Releases a writer's held node with the release record: one transaction
/// writes the node's name as the lock directory's data and deletes the node.
/// The contender watching the node reads the record after the deletion: a
/// node named there held the lock and released it (see
/// [`ordering`](crate::ordering)). Retried until answered or the session is
/// over; the server's `NoNode` is passed on (see [`release_node`]). Where
/// the server refuses the record (an ACL, a quota), a plain deletion.
async fn release_marked(
    client: &zk::Client,
    dir: &str,
    path: &str,
    answer_lost: &AtomicBool,
) -> Result<(), zk::Error> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let release = || {
        noting(answer_lost, async {
            let mut multi = client.new_multi_writer();
            multi.add_set_data(dir, name.as_bytes(), None)?;
            multi.add_delete(path, None)?;
            multi.commit().await.map_err(zk::Error::from)
        })
    };
    match with_retry(client, release).await {
        Ok(_) => Ok(()),
        Err(zk::Error::NoNode) => Err(zk::Error::NoNode),
        Err(e) if Error::from_zk(e.clone(), path).is_session_over() => Err(e),
        // The server refused the record (no WRITE on the directory, a
        // quota, ...): the transaction, deletion included, did not happen.
        // A plain deletion releases all the same; successors list again.
        Err(e) => {
            debug!(node = %path, error = %e, "the release record was refused: deleting without it");
            with_retry(client, || noting(answer_lost, client.delete(path, None))).await
        }
    }
}

/// Runs one request of a release, noting in `answer_lost` when its answer
/// was lost to a broken connection ([`is_retryable`]): it may have been
/// applied.
async fn noting<T>(
    answer_lost: &AtomicBool,
    request: impl std::future::Future<Output = Result<T, zk::Error>>,
) -> Result<T, zk::Error> {
    let result = request.await;
    if matches!(&result, Err(e) if is_retryable(e)) {
        answer_lost.store(true, Ordering::Relaxed);
    }
    result
}

/// Releases a held node, with the release record or not (see `Held::mark`),
/// retrying through connection loss until the deletion is answered or the
/// session is over, and recycles the directory if its counter is near the
/// limit.
///
/// A node the server says does not exist was deleted by someone else, and
/// the lock was lost before this release: [`Error::Lost`]. Unless a request
/// of this release was sent before and its answer lost: that one may have
/// deleted it, and the node counts as released (see
/// [`lease::released_by_us`]).
pub(super) async fn release_node(
    client: &zk::Client,
    dir: &str,
    mark: bool,
    path: &str,
    seq: i32,
) -> Result<(), Error> {
    let answer_lost = AtomicBool::new(false);
    let deleted = if mark {
        release_marked(client, dir, path, &answer_lost).await
    } else {
        with_retry(client, || noting(&answer_lost, client.delete(path, None))).await
    };
    let result = match deleted {
        Ok(()) => Ok(()),
        Err(zk::Error::NoNode) if lease::released_by_us(false, true, answer_lost.load(Ordering::Relaxed)) => {
            debug!(node = %path, "the node was gone on a retry: released by the attempt whose answer was lost");
            Ok(())
        }
        Err(zk::Error::NoNode) => Err(Error::Lost {
            node: path.to_owned(),
        }),
        Err(e) => Err(Error::from_zk(e, path)),
    };
    if result.is_ok() && ordering::needs_recycling(seq) {
        recycle_dir(client, dir).await;
    }
    result
}
