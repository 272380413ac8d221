//! What `status` reads: a snapshot of each lock directory, its election's
//! leader, and the links between paths by session.

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;
use zk_rwlock::{zk, NodeName, QueueEntry, SharedLock};
use zk_rwlock_cli::failure::{self, Failure};
use zk_rwlock_core::backoff::Backoff;
use zk_rwlock_core::election::{self, Leads};
use zk_rwlock_core::semaphore;

/// What `status` shows: the lock directory at one moment.
pub(super) struct Snapshot {
    pub(super) path: String,
    /// Whether the lock directory exists.
    pub(super) exists: bool,
    pub(super) contenders: Vec<QueueEntry>,
    pub(super) foreign: Vec<String>,
    /// With several paths: for each contender, the other given paths where
    /// its session has a contender. `None` with one path.
    pub(super) also_in: Option<Vec<Vec<String>>>,
    /// The elected leader, when the directory is used for an election: the
    /// head writer, holding, whose node carries its announcement.
    pub(super) leader: Option<Leader>,
    /// With --watch: a data watch on the holding head writer's node.
    pub(super) head_watch: Option<zk::OneshotWatcher>,
}

impl Snapshot {
    /// The permits of a semaphore's directory: the count its contenders
    /// carry in their names (`@permits-N@`, the first in queue order that
    /// carries one: [`semaphore::permits_in`]); `None` for a lock's. The
    /// library's snapshot classified the queue by the same rule (the first
    /// N hold).
    pub(super) fn permits(&self) -> Option<u32> {
        permits_of_queue(&self.contenders)
    }
}

/// [`Snapshot::permits`] of a queue.
fn permits_of_queue(contenders: &[QueueEntry]) -> Option<u32> {
    let names: Vec<&str> = contenders.iter().map(|c| child_name(&c.path)).collect();
    semaphore::permits_in(&names)
}

/// A semaphore contender's identity (as given to `--identity`) and the
/// permit count its name carries (`<identity>@permits-<N>@<token>-W-<seq>`);
/// `None` for any other contender.
pub(super) fn permit_tag(name: &NodeName) -> Option<(&str, u32)> {
    let permits = semaphore::permits_of(&name.to_string())?;
    let identity = name
        .identity()
        .strip_suffix(&format!("@{}{permits}", semaphore::PERMITS_TAG))?;
    Some((identity, permits))
}

/// An election's leader as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct Leader {
    pub(super) identity: String,
    pub(super) node: String,
    pub(super) term: Option<i64>,
    /// A revocation request was written over its announcement: it was
    /// asked to step down, and leads until it resigns.
    pub(super) revocation_requested: bool,
}

/// A snapshot taken after the watch was set: any change after it fires
/// the watch (the library sends all stat requests at once). A `sync`
/// first, as [`zk_rwlock::Election::leader`] does: the server this client
/// talks to may be a follower behind the ensemble, and the snapshot is then
/// at least as new as every write completed before it (a resignation, an
/// announcement, a release).
pub(super) async fn describe(lock: &SharedLock, watch: bool) -> Result<Snapshot, Failure> {
    sync(lock).await?;
    // Classified as a semaphore's when its contenders carry a permit
    // count (`zk_rwlock_core::semaphore::queue`), else as a lock's.
    let s = lock.snapshot().await.map_err(Failure::from)?;
    // A semaphore elects no one (`election::who_leads`: a permit is no candidate).
    let (leader, head_watch) = leader(lock, &s.contenders, &s.foreign, watch).await;
    Ok(Snapshot {
        path: lock.path().to_owned(),
        exists: s.exists,
        contenders: s.contenders,
        foreign: s.foreign,
        also_in: None,
        leader,
        head_watch,
    })
}

/// Syncs the server this client talks to with the ensemble's leader, for
/// the lock directory (one that does not exist is fine: it has no
/// contenders). Connection loss is retried as the library retries its own
/// requests ([`Backoff::request`]): until the session is over, or until
/// retrying has failed for twice the session timeout.
async fn sync(lock: &SharedLock) -> Result<(), Failure> {
    let client = lock.client();
    let path = lock.path();
    let backoff = Backoff::request(client.session_timeout());
    let started = tokio::time::Instant::now();
    let mut pause = Duration::ZERO;
    loop {
        match client.sync(path).await {
            Ok(()) | Err(zk::Error::NoNode) => return Ok(()),
            Err(e) if zk_rwlock::is_retryable(&e) => {
                let Some(next) = backoff.pause(started.elapsed(), pause) else {
                    return Err(failure::zk_failure(e, path));
                };
                tracing::debug!(error = %e, path, "sync failed; trying again");
                tokio::time::sleep(pause).await;
                pause = next;
            }
            Err(e) => return Err(failure::zk_failure(e, path)),
        }
    }
}

/// The election's leader in a snapshot of the directory (its `contenders`
/// and `foreign` children): who [`election::who_leads`] names, reading what
/// it asks for (the holding head writer's node, once). `None` for a plain
/// lock, or if the read fails. With `watch`, the read leaves a data watch
/// on the node, returned too (its announcement, or a revocation request,
/// is news).
pub(super) async fn leader(
    lock: &SharedLock,
    contenders: &[QueueEntry],
    foreign: &[String],
    watch: bool,
) -> (Option<Leader>, Option<zk::OneshotWatcher>) {
    // The listing the snapshot classified, as child names.
    let children: Vec<&str> = contenders
        .iter()
        .map(|c| child_name(&c.path))
        .chain(foreign.iter().map(String::as_str))
        .collect();
    let client = lock.client();
    let mut read: Option<(&str, Vec<u8>, zk::Stat)> = None;
    let mut watcher = None;
    loop {
        let head = read.as_ref().map(|(node, data, stat)| election::HeadRead {
            node,
            data,
            version: stat.version,
            ephemeral_owner: stat.ephemeral_owner,
            czxid: stat.czxid,
        });
        let name = match election::who_leads(&children, head) {
            Leads::NoOne => return (None, watcher),
            Leads::Leader(leader) => {
                let leader = Leader {
                    identity: leader.identity,
                    node: leader.node,
                    term: Some(leader.term),
                    revocation_requested: leader.revocation_requested,
                };
                return (Some(leader), watcher);
            }
            Leads::Read(name) => name,
        };
        let Some(path) = contenders
            .iter()
            .map(|c| c.path.as_str())
            .find(|&p| child_name(p) == name)
        else {
            return (None, watcher);
        };
        let answer = if watch {
            client
                .get_and_watch_data(path)
                .await
                .map(|(data, stat, w)| (data, stat, Some(w)))
        } else {
            client.get_data(path).await.map(|(data, stat)| (data, stat, None))
        };
        match answer {
            Ok((data, stat, w)) => {
                read = Some((name, data, stat));
                watcher = w.or(watcher);
            }
            Err(e) => {
                tracing::debug!(error = %e, path, "cannot read the head writer");
                return (None, None);
            }
        }
    }
}

/// The child name at the end of a contender's full path.
fn child_name(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}

/// A snapshot of each lock in turn; with several, contenders are linked
/// across paths by session.
pub(super) async fn describe_all(locks: &[SharedLock], watch: bool) -> Result<Vec<Snapshot>, Failure> {
    let mut snapshots = Vec::with_capacity(locks.len());
    for lock in locks {
        snapshots.push(describe(lock, watch).await?);
    }
    if snapshots.len() > 1 {
        link_sessions(&mut snapshots);
    }
    Ok(snapshots)
}

/// Fills in `also_in`: for each contender, the other paths where a
/// contender has the same session. Session 0 (a persistent node) and
/// unknown sessions (a node gone before its stat was read) link nothing.
pub(super) fn link_sessions(snapshots: &mut [Snapshot]) {
    let mut paths_of: HashMap<i64, Vec<&str>> = HashMap::new();
    for s in snapshots.iter() {
        for c in &s.contenders {
            if let Some(session) = c.session.filter(|&id| id != 0) {
                let paths = paths_of.entry(session).or_default();
                if !paths.contains(&s.path.as_str()) {
                    paths.push(&s.path);
                }
            }
        }
    }
    let linked: Vec<Vec<Vec<String>>> = snapshots
        .iter()
        .map(|s| {
            s.contenders
                .iter()
                .map(|c| match c.session.and_then(|id| paths_of.get(&id)) {
                    Some(paths) => paths
                        .iter()
                        .filter(|&&p| p != s.path)
                        .map(|&p| p.to_owned())
                        .collect(),
                    None => Vec::new(),
                })
                .collect()
        })
        .collect();
    for (s, also_in) in snapshots.iter_mut().zip(linked) {
        s.also_in = Some(also_in);
    }
}
