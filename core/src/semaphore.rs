//! A counting semaphore on a lock directory: who holds one of N permits,
//! and which nodes a waiter watches, with no missed wake-up and no herd.
//!
//! Like [`crate::ordering`], this module takes the raw child names of the
//! directory and decides for one contender. It reads no clock, does no I/O
//! and logs nothing.
//!
//! # Rule
//!
//! Contenders create ephemeral sequential nodes in the directory and are
//! ordered by sequence, as in [`crate::ordering`]. With N permits:
//!
//! - a contender with `k < N` contenders before it **holds a permit**
//!   ([`Decision::Granted`]);
//! - a contender with `k ≥ N` before it **waits**, watching its N immediate
//!   predecessors (queue positions `k−N ..= k−1`), and decides again, from a
//!   new listing, when one of them is deleted ([`Decision::Wait`]).
//!
//! N = 1 is a mutex: a waiter watches its immediate predecessor only.
//!
//! **No missed wake-up.** While the N watched nodes all exist, each of them
//! precedes me (a node's sequence never changes), so I have at least N
//! predecessors and hold nothing. My count can therefore drop below N only
//! after one of them is deleted, which fires my watch. The argument needs
//! only N *distinct* predecessors, so it survives anything else that happens
//! in the queue, nodes added before me included (a Curator writer's
//! downgrade, see [`crate::ordering`]). Fewer than N watches are not enough,
//! whichever they are: with `w < N` nodes watched and `k ≥ N` ahead, the
//! `k − N + 1 ≤ k − w` unwatched predecessors can all leave, which grants
//! me while nothing I watch changed. Watching the N-th predecessor alone is
//! the case `w = 1`: with N = 2 and two ahead, the nearer one leaving grants
//! me while the watched one stays.
//!
//! **No herd.** A waiter that watches P had at most N − 1 contenders between
//! P and itself when it decided. Contenders are only ever added at the tail
//! (sequences grow), so it still has at most N − 1 between, however long it
//! takes to act on a notification: it is one of the N contenders right after
//! P. The deletion of P thus notifies at most N contenders, whatever the
//! queue's length. (The exception to "added at the tail" is a read/write
//! lock's writer, Curator's or this library's, whose downgrade adds a reader
//! node with the writer's sequence: each such node may push one more
//! watcher into reach.) This bounds stale watches too (ZooKeeper keeps a watch
//! until it fires): a contender re-decides only when one of its watched
//! nodes went, and its new N immediate predecessors still include every
//! node it watched before that is still there (only its predecessors left),
//! unless it now holds; either way it is still within N of each node it
//! ever watched. (A wait that ended, granted or given up, may leave its
//! watches to fire rather than remove them, [`crate::wire::Exchange::lingers`]:
//! a node held long then notifies those sessions too, which ignore it; at
//! most N waiting contenders act on it.) Why the *immediate* predecessors: any N distinct
//! predecessors would avoid a missed wake-up, but N nodes nearer the head
//! would each be watched by every waiter behind them.
//!
//! **Liveness and FIFO.** The contenders the rule grants are the first N in
//! sequence order: a contender is never granted while one created before it
//! waits (it has fewer predecessors). A waiter's predecessors only leave, and
//! each deletion that could grant it wakes it, so when holders keep
//! releasing (and nobody new can come before it), every waiter is granted,
//! in queue order.
//!
//! **Hand-off.** A waiter with exactly N ahead watches all its predecessors:
//! the deletion of any of them grants it without a new listing
//! (`deletion_grants`), if all of them are this semaphore's permits (they
//! carry its count). Any other node may be a read/write lock's writer, whose
//! downgrade deletes it while a reader with its sequence takes its place:
//! a deletion that leaves N ahead.
//!
//! # Node names: a writer with its permit count
//!
//! This library writes a semaphore contender as a **native writer** whose
//! host carries the permit count between the identity and the token
//! ([`prefix`]): `<identity>@permits-<N>@<token>-W-<seq>`. Identities never
//! contain `@` (the lock builder refuses them), so the tag cannot be taken
//! from an identity, and the token stays after the last `@`, where a driver
//! finds its node by after a connection loss
//! ([`crate::NodeName::token`]).
//!
//! Why the writer's `W` and not a marker of its own: a read/write lock
//! client of this library that lists the directory sees every semaphore node
//! as a writer, so none of its contenders queued behind a semaphore node is
//! granted while that node exists (a reader waits for the last writer before
//! it, a writer for its predecessor): it is never granted through a
//! semaphore node. A reader's `R` would let lock readers pass semaphore
//! holders; a new marker would be a foreign name to every lock client
//! (older versions included), which would ignore it and pass straight by.
//! A semaphore's release is a plain deletion of its node, with no release
//! record and no release marker, so a lock contender watching a semaphore
//! node never takes its deletion for a writer's release
//! (`release_grants`): the record never names it, and the lock client lists
//! again.
//!
//! The converse is not kept: a semaphore contender counts a lock's contender
//! before it as one permit taken, so with N ≥ 2 it may hold beside a lock's
//! writer queued before it. A directory is a lock's or a semaphore's; the
//! tag lets tools tell which.
//!
//! # Contenders that disagree on N
//!
//! Every tagged node shows its N in the listing, so a contender sees the N of
//! each predecessor that carries one; an N kept in the node's data would
//! take a read per node, and the directory's data is the lock's release
//! record. A contender **refuses** when a predecessor carries another N
//! ([`Decision::Conflict`]): it is not granted, and its driver withdraws its
//! node and reports the disagreement. Only predecessors matter (the nodes
//! after me check me): the holder with the greatest sequence listed every
//! other holder (they were created before it and are still there), found
//! them all carrying its N, and had fewer than N before it; so all holders
//! carry one N and at most that many hold. Predecessors only leave, so a
//! contender meets a conflict at its first decision or never.
//!
//! What a listing cannot show: the N of an untagged contender (a lock's
//! contender, a peer library's node, a bare `<host>-W-<seq>` name, a client
//! that keeps N elsewhere). Each counts as one permit taken and is never a
//! conflict. `me` itself may be untagged; if it carries a tag, the tag must
//! be the N asked for ([`SemaphoreError::PermitsDisagree`]).
//!
//! # Foreign children and the sequence counter
//!
//! As in [`crate::ordering`]: children whose names do not parse are skipped;
//! every contender name counts, in any layout and mode
//! ([`crate::ordering::ahead`] counts the same nodes); nodes at
//! [`crate::ordering::SEQUENCE_LIMIT`] or negative are ignored (they come
//! after every valid node and never hold); a contender whose own sequence is
//! at the limit, negative, or shared with another child is
//! [`Decision::Exhausted`]: never granted, withdrawn by its driver (and the
//! directory recycled, [`crate::ordering::needs_recycling`]).
//!
//! # What a driver carries out
//!
//! Create the node (sequential, ephemeral, with [`prefix`]), list the
//! directory, [`decide`]. On `Wait`, set N data watches (`getData` with a
//! watch, which leaves no watch on a node already gone: a `NoNode` answer
//! means "decide again"). On the deletion of a watched node: take the
//! permit if `deletion_grants`, else list and decide again. A data change
//! on a watched node proves nothing (re-set that watch); an event for a node
//! the last decision does not watch is stale (ignore it). Release: delete
//! the node, one request, nothing else.
//!
//! ```
//! use zk_rwlock_core::semaphore::{decide, Decision};
//!
//! let children = ["a-W-0000000001", "b-W-0000000002", "c-W-0000000003", "d-W-0000000004"];
//! // Two permits: the first two hold.
//! assert_eq!(decide("b-W-0000000002", &children, 2)?, Decision::Granted { ahead: 1 });
//! // The fourth watches the two right before it.
//! assert_eq!(
//!     decide("d-W-0000000004", &children, 2)?,
//!     Decision::Wait { watch: vec!["b-W-0000000002", "c-W-0000000003"], ahead: 3, deletion_grants: false },
//! );
//! # Ok::<(), zk_rwlock_core::semaphore::SemaphoreError>(())
//! ```

use std::num::NonZeroU32;

use uuid::Uuid;

use crate::node_name::{parse_parts, Layout, ParseNameError, Parts};
use crate::ordering::{is_valid_seq, OrderingError};

/// What a semaphore node's host carries between the identity and the token,
/// before its permit count: `<identity>@permits-<N>@<token>`.
pub const PERMITS_TAG: &str = "permits-";

/// What one semaphore contender should do now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision<'a> {
    /// The contender holds a permit: fewer than N contenders precede it.
    Granted {
        /// How many contenders precede it (less than N).
        ahead: usize,
    },
    /// The contender must wait until one of `watch` is deleted, then decide
    /// again.
    Wait {
        /// The child names of its N immediate predecessors, in queue order
        /// (the farthest first, the immediate predecessor last).
        watch: Vec<&'a str>,
        /// How many contenders precede it (N or more).
        ahead: usize,
        /// True when the deletion of any node of `watch` alone grants the
        /// permit: exactly N precede, all watched, and all are permits of
        /// this semaphore (a lock's writer may add a node before itself as
        /// it goes). The driver may then take the permit without listing
        /// again.
        deletion_grants: bool,
    },
    /// A predecessor carries another permit count in its name: the
    /// contender is never granted with it there. The driver withdraws its
    /// node and reports the disagreement.
    Conflict {
        /// The child name of the nearest such predecessor.
        node: &'a str,
        /// The permit count it carries.
        permits: u32,
    },
    /// The contender's sequence cannot be ordered: at
    /// [`crate::ordering::SEQUENCE_LIMIT`], negative, or shared with another
    /// child. It is never granted; the driver withdraws the node.
    Exhausted,
}

/// Why no semaphore decision could be made for a contender.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SemaphoreError {
    /// A semaphore with no permit would never grant anyone.
    #[error("a semaphore needs at least one permit; 0 were asked for")]
    NoPermits,
    /// The contender's own name carries another permit count than the one
    /// asked for.
    #[error(
        "contender node `{me}` carries {carried} permits in its name, but the decision was asked for {asked}"
    )]
    PermitsDisagree {
        /// The contender's node name.
        me: String,
        /// The permit count its name carries.
        carried: u32,
        /// The permit count asked for.
        asked: u32,
    },
    /// The contender's node is missing, or its name is not a contender name
    /// (as for [`crate::ordering::decide`]).
    #[error(transparent)]
    Ordering(#[from] OrderingError),
}

/// The name of a semaphore contender without its sequence suffix, as passed
/// to ZooKeeper's sequential `create`: a native writer whose host carries
/// the permit count, `<identity>@permits-<N>@<token>-W-`.
///
/// ```
/// use std::num::NonZeroU32;
/// use zk_rwlock_core::semaphore::{permits_of, prefix};
/// use zk_rwlock_core::{Mode, NodeName};
/// let token = uuid::Uuid::from_u128(0x7f3a0c1e9b2d4f60a1b2c3d4e5f60718);
/// let name = format!("{}0000000042", prefix("web01", token, NonZeroU32::new(3).unwrap()));
/// assert_eq!(name, "web01@permits-3@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042");
/// assert_eq!(permits_of(&name), Some(3));
/// let parsed: NodeName = name.parse()?;
/// assert_eq!((parsed.mode(), parsed.token()), (Mode::Write, Some(token)));
/// # Ok::<(), zk_rwlock_core::node_name::ParseNameError>(())
/// ```
pub fn prefix(identity: &str, token: Uuid, permits: NonZeroU32) -> String {
    format!("{identity}@{PERMITS_TAG}{permits}@{}-W-", token.simple())
}

/// The permit count a contender name carries (see [`prefix`]), or `None` if
/// it carries none: not a contender name, not native, or a host without
/// the tag `@permits-<N>@` (N in decimal, from 1, without leading zeros)
/// between a non-empty identity and a non-empty token.
pub fn permits_of(name: &str) -> Option<u32> {
    parse_parts(name).ok().and_then(|parts| carried(&parts))
}

/// [`permits_of`] for parsed parts.
fn carried(parts: &Parts<'_>) -> Option<u32> {
    if parts.layout != Layout::Native {
        return None;
    }
    let (front, token) = parts.host.rsplit_once('@')?;
    let (identity, tag) = front.rsplit_once('@')?;
    let digits = tag.strip_prefix(PERMITS_TAG)?;
    let canonical =
        !digits.is_empty() && !digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit());
    if identity.is_empty() || token.is_empty() || !canonical {
        return None;
    }
    digits.parse().ok()
}

/// Decides for the semaphore contender named `me`, with `permits` permits,
/// given the raw, unordered child names of the directory.
///
/// One pass over `children`; allocates the list of predecessors.
///
/// # Errors
///
/// [`SemaphoreError::NoPermits`] if `permits` is 0;
/// [`SemaphoreError::PermitsDisagree`] if `me` carries another permit count;
/// [`SemaphoreError::Ordering`] with [`OrderingError::InvalidName`] if `me`
/// is not a contender name, or [`OrderingError::Missing`] if `me` is not
/// among `children`.
pub fn decide<'a, S: AsRef<str>>(
    me: &str,
    children: &'a [S],
    permits: u32,
) -> Result<Decision<'a>, SemaphoreError> {
    if permits == 0 {
        return Err(SemaphoreError::NoPermits);
    }
    let mine =
        parse_parts(me).map_err(|reason| OrderingError::InvalidName(ParseNameError::new(me, reason)))?;
    if let Some(carried) = carried(&mine).filter(|carried| *carried != permits) {
        return Err(SemaphoreError::PermitsDisagree {
            me: me.to_owned(),
            carried,
            asked: permits,
        });
    }
    let mut found = false;
    let mut shared = false;
    // Predecessors as (sequence, name, carries a count); the nearest one
    // that carries another permit count.
    let mut predecessors: Vec<(i32, &'a str, bool)> = Vec::new();
    let mut conflict: Option<(i32, &'a str, u32)> = None;
    for child in children {
        let name = child.as_ref();
        let Ok(parts) = parse_parts(name) else {
            continue;
        };
        if name == me {
            found = true;
            continue;
        }
        shared |= parts.seq == mine.seq;
        // Nodes that cannot be ordered come after every valid one. (An
        // equal sequence makes me `Exhausted`.)
        if !is_valid_seq(parts.seq) || parts.seq >= mine.seq {
            continue;
        }
        if let Some(theirs) = carried(&parts).filter(|theirs| *theirs != permits) {
            // The nearest disagreeing predecessor is named.
            conflict = conflict.max(Some((parts.seq, name, theirs)));
        }
        // Only a permit's deletion leaves one fewer ahead for sure.
        predecessors.push((parts.seq, name, carried(&parts).is_some()));
    }
    if !found {
        return Err(OrderingError::Missing { me: me.to_owned() }.into());
    }
    if shared || !is_valid_seq(mine.seq) {
        return Ok(Decision::Exhausted);
    }
    if let Some((_, node, permits)) = conflict {
        return Ok(Decision::Conflict { node, permits });
    }
    let ahead = predecessors.len();
    let n = usize::try_from(permits).unwrap_or(usize::MAX);
    if ahead < n {
        return Ok(Decision::Granted { ahead });
    }
    // The N nearest: the N greatest (sequence, name), then in queue order.
    let key = |p: &(i32, &'a str, bool)| (p.0, p.1);
    let split = ahead - n;
    // `ahead >= n >= 1`: the index is in range.
    predecessors.select_nth_unstable_by_key(split, key);
    let nearest = &mut predecessors[split..];
    nearest.sort_unstable_by_key(key);
    Ok(Decision::Wait {
        watch: nearest.iter().map(|p| p.1).collect(),
        ahead,
        deletion_grants: ahead == n && nearest.iter().all(|p| p.2),
    })
}

/// The permit count of a directory, as its head (the first contender in
/// queue order) carries it ([`permits_of`]); `None` if the head carries
/// none (a read/write lock's directory, whatever strangers queue behind
/// its head) or there is no contender.
pub fn permits_in<S: AsRef<str>>(children: &[S]) -> Option<u32> {
    let head = children
        .iter()
        .filter_map(|child| {
            let parts = parse_parts(child.as_ref()).ok()?;
            is_valid_seq(parts.seq).then_some((parts.seq, child.as_ref()))
        })
        .min()?;
    permits_of(head.1)
}

/// Classifies every child of a directory as [`crate::ordering::queue`]
/// does, for a semaphore with `permits` permits, or, with `None`, with the
/// count its contenders carry ([`permits_in`]), and as a read/write lock's
/// if none carries one. A semaphore's contender holds if fewer than
/// `permits` valid contenders precede it, and waits otherwise, on its
/// immediate predecessor as shown (it watches the `permits` right before
/// it, [`decide`]); one that cannot be ordered is
/// [`ordering::Decision::Exhausted`](crate::ordering::Decision::Exhausted)
/// (and, if it shares its sequence with another, still counts for those
/// after it, as in [`decide`]).
/// What status tools and revocation show, not what a contender decides
/// (a contender meeting a disagreeing count refuses instead).
pub fn queue<S: AsRef<str>>(children: &[S], permits: Option<u32>) -> crate::ordering::Queue<'_> {
    use crate::ordering::Decision as Lock;
    let mut queue = crate::ordering::queue(children);
    let Some(permits) = permits.or_else(|| permits_in(children)) else {
        return queue;
    };
    let n = usize::try_from(permits).unwrap_or(usize::MAX);
    let mut ahead = 0;
    let mut previous = "";
    for place in &mut queue.contenders {
        // Those that cannot be ordered come last and count for no one;
        // two that share a sequence hold nothing but count for those after.
        if !is_valid_seq(place.seq) {
            continue;
        }
        if place.decision == Lock::Exhausted {
            ahead += 1;
            previous = place.name;
            continue;
        }
        place.decision = if ahead < n {
            Lock::Granted
        } else {
            Lock::Wait {
                watch: previous,
                deletion_grants: false,
                release_grants: false,
            }
        };
        ahead += 1;
        previous = place.name;
    }
    queue
}

#[cfg(test)]
mod tests;
