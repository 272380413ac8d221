//! What `status` reads: a snapshot of each lock directory, its election's
//! leader, and the links between paths by session.

use std::collections::HashMap;

use serde::Serialize;
use zk_rwlock::{zk, ContenderState, Mode, QueueEntry, SharedLock};
use zk_rwlock_cli::Failure;

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
/// the watch (the library sends all stat requests at once).
pub(super) async fn describe(lock: &SharedLock, watch: bool) -> Result<Snapshot, Failure> {
    let s = lock.snapshot().await.map_err(Failure::from)?;
    let (leader, head_watch) = leader(lock, &s.contenders, watch).await;
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

/// The election's leader in a snapshot: its head writer, if it holds and
/// its node carries its announcement, or a revocation request written over
/// it (one read of the node; see [`zk_rwlock_core::election::naming`]).
/// `None` for a plain lock, or if the read fails. With `watch`, the read
/// leaves a data watch on the node, returned too.
pub(super) async fn leader(
    lock: &SharedLock,
    contenders: &[QueueEntry],
    watch: bool,
) -> (Option<Leader>, Option<zk::OneshotWatcher>) {
    let Some(head) = contenders.first() else {
        return (None, None);
    };
    // A persistent look-alike is no candidate (candidates are ephemeral).
    if head.state != ContenderState::Holds || head.name.mode() != Mode::Write || head.is_persistent() {
        return (None, None);
    }
    let client = lock.client();
    let (data, stat, watcher) = if watch {
        match client.get_and_watch_data(&head.path).await {
            Ok((data, stat, watcher)) => (data, stat, Some(watcher)),
            Err(_) => return (None, None),
        }
    } else {
        match client.get_data(&head.path).await {
            Ok((data, stat)) => (data, stat, None),
            Err(_) => return (None, None),
        }
    };
    let name = head.name.to_string();
    let named = zk_rwlock_core::election::naming(&name, &data, stat.version);
    let leader = named.is_leader().then(|| Leader {
        identity: head.name.identity().to_owned(),
        node: name,
        term: head.fencing_token,
        revocation_requested: named == zk_rwlock_core::election::Named::AskedToStepDown,
    });
    (leader, watcher)
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
