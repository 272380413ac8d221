//! Who holds the lock, who waits on whom: the pure core of zk-rwlock.
//!
//! This module takes the raw child names of a lock directory and decides,
//! for one contender, whether it holds the lock or which node it must watch.
//! It contains no ZooKeeper types, reads no clock, does no I/O and logs
//! nothing: the adapter, `zk_rwlock::SharedLock`, drives it.
//!
//! # Rules
//!
//! Contenders are ordered by sequence number. Only smaller sequences matter:
//! nodes created after mine never change my decision.
//!
//! - A **reader** is granted when no writer precedes it; otherwise it waits
//!   on the *last writer before it*.
//! - A **writer** is granted when it is first; otherwise it waits on its
//!   *immediate predecessor*.
//!
//! Nobody watches the head of the queue unless it is their immediate
//! concern, so a release wakes one writer or the readers behind one writer:
//! there is no herd.
//!
//! # Hand-offs without a new listing
//!
//! A fired watch usually means "look again": the watched node may have been
//! a waiter that gave up, with others still ahead. Two cases are known in
//! advance, and [`Decision::Wait`] says so:
//!
//! - `deletion_grants`: the watched node is the only one that stands in the
//!   way (the only node before a writer, the only writer before a reader),
//!   so its deletion, for whatever reason, grants the lock.
//! - `release_grants`: the watched node's *release by a holder* grants the
//!   lock. A writer that held the lock after waiting releases, in one
//!   transaction, by writing its node's name into the lock directory's data
//!   (the release record, [`crate::node_name::release_record`]), creating
//!   and deleting again its release marker
//!   ([`crate::node_name::release_marker`]), and deleting the node. The
//!   watcher, which watches the marker with `exists` beside the node, learns
//!   of the release from the marker's `NodeCreated`, which comes before the
//!   deletion's event; without it (a client that makes no marker, a
//!   reconnection in between), woken by the deletion, it reads the record.
//!   A writer holds only once nothing precedes
//!   it, and nothing new can precede it later; so when a watched writer that
//!   held is gone, nothing stands before the watcher any more (a writer
//!   watches its immediate predecessor; a reader watches the last writer
//!   before it). This holds whenever the watched node is a native writer
//!   (see "Peers and the release record" below), and whenever
//!   `deletion_grants` holds. A deletion with no marker that the record
//!   does not name (a waiter that gave up, an expired session, a reader, a
//!   writer granted at once) still needs a fresh snapshot, unless
//!   `deletion_grants` holds.
//!   A data change on the watched node proves nothing (anyone with WRITE
//!   permission may write to it): the watcher just watches it again.
//!
//! # Peers' contenders
//!
//! A directory may hold contenders written by Apache Curator or kazoo (see
//! [`crate::node_name::Layout`]), whichever layout this lock writes. They
//! share the directory's sequence counter, so they are ordered with ours by
//! sequence, and each counts with the strictest mode its name can mean:
//! Curator's `__WRIT__` and mutex `lock-`, and kazoo's `__lock__` (written
//! by its `WriteLock` and its `Lock`) are writers; `__READ__` and
//! `__rlock__` are readers. The rules above then keep this library's
//! contenders safe towards every peer contender. Whether the *peers* see
//! ours depends on the layout ours are written in.
//!
//! ## Peers' blind spots
//!
//! A peer keeps its own rules, and does not wait for every contender these
//! rules have it wait for ([`blind_to`]): each peer recipe recognises only
//! its own layout's nodes ([`Layout::recognises`]: Curator's read/write
//! lock and its mutex ignore each other's, kazoo both), and kazoo's `Lock`,
//! which writes `__lock__` names as its `WriteLock` does, waits for
//! `__lock__` nodes only, not for `__rlock__` readers. A peer contender may
//! hold the lock beside the contenders it is blind to; ours never do.
//!
//! ## Peers and the release record
//!
//! The release-record hand-off rests on "a watched writer that held is
//! gone, so nothing stands before me": true of a writer granted by these
//! rules, not of one granted by a peer's own rules (Curator's read/write
//! lock and its mutex ignore each other's nodes; kazoo's `Lock` ignores
//! readers). Peers never write the record, so a record can name a peer's
//! node only by forgery or by a writer of this library in a peer's layout.
//! This library therefore writes the record for its native nodes only, and
//! `release_grants` holds for a watched node in a peer's layout only when
//! `deletion_grants` does: behind a peer-layout writer, a deletion that is
//! not known to grant means "list again". Peer layouts lose the
//! release-record shortcut, never safety; the directory's data is left to
//! whatever else uses it.
//!
//! ## A Curator writer's downgrade
//!
//! "Nodes created after mine never change my decision" fails for one peer:
//! from Curator 5.5, a thread that holds an `InterProcessReadWriteLock`'s
//! write lock and takes its read lock creates a plain ephemeral node
//! `_c_<uuid>-__READ__<the writer's sequence>`, a reader that comes before
//! every node queued behind the writer, and holds once the writer is gone.
//! The two share a sequence and both count before later nodes (see below),
//! and a writer watching a Curator writer does not take its deletion as a
//! grant (`deletion_grants` is false): it lists again, and finds the reader
//! if there is one. Readers are not concerned (a reader blocks no reader).
//! Curator 5.4 creates that read node with a new sequence instead and
//! grants it at once: it holds beside the next writer, Curator's or ours.
//!
//! # The sequence counter's limit
//!
//! The sequence is the lock directory's child-version counter, a signed
//! 32-bit number. ZooKeeper 3.5 and later do not wrap it: past `2147483647`
//! every new child gets `2147483647` again (and, while creates are still in
//! flight, the server may hand out negative numbers once). Such sequences
//! are neither unique nor ordered, so a contender whose own sequence is
//! [`SEQUENCE_LIMIT`], negative, or shared with another child is never
//! granted: [`decide`] answers [`Decision::Exhausted`], and the driver
//! withdraws the node. Other contenders ignore nodes at the limit or below
//! zero (they were created after every valid node and never hold).
//!
//! A directory is recycled before that: whoever leaves it empty while its
//! counter is past [`RECYCLE_THRESHOLD`] deletes it
//! ([`needs_recycling`]): it deletes it and creates it again, with the same
//! ACL, in one transaction, so its counter starts from 0.
//!
//! # Who acts on a decision
//!
//! [`crate::acquire`] holds the rest of the rules: when a watch event grants
//! (a hand-off) and when it means "list again", the release record, the
//! own-node check, giving up. Its module documentation has the driver's
//! run loop.
//!
//! ```
//! use zk_rwlock_core::ordering::{decide, Decision};
//!
//! let children = ["b-W-0000000002", "a-R-0000000001", "c-R-0000000003"];
//! assert_eq!(decide("a-R-0000000001", &children)?, Decision::Granted);
//! assert_eq!(
//!     decide("c-R-0000000003", &children)?,
//!     Decision::Wait { watch: "b-W-0000000002", deletion_grants: true, release_grants: true },
//! );
//! # Ok::<(), zk_rwlock_core::ordering::OrderingError>(())
//! ```

use crate::node_name::{parse_parts, Layout, Mode, ParseNameError, Parts};

/// The value at which ZooKeeper's sequence counter sticks: `2147483647`.
pub const SEQUENCE_LIMIT: i32 = i32::MAX;

/// Sequences from here on are in the last 2^20 before [`SEQUENCE_LIMIT`]:
/// the directory is due for recycling (see [`needs_recycling`]).
pub const RECYCLE_THRESHOLD: i32 = SEQUENCE_LIMIT - (1 << 20);

/// True if a sequence can be trusted for order: not negative, not at the limit.
#[inline]
pub fn is_valid_seq(seq: i32) -> bool {
    (0..SEQUENCE_LIMIT).contains(&seq)
}

/// True if a contender that leaves a directory with this sequence should
/// try to delete the directory afterwards (the deletion fails harmlessly
/// if the directory is not empty): its counter is close to, or at, the
/// limit, and only a new directory starts again from 0.
#[inline]
pub fn needs_recycling(seq: i32) -> bool {
    !(0..RECYCLE_THRESHOLD).contains(&seq)
}

/// What one contender should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision<'a> {
    /// The contender holds the lock.
    Granted,
    /// The contender must wait until `watch` changes, then decide again.
    Wait {
        /// The child name (not the full path) of the node to watch.
        watch: &'a str,
        /// True when the deletion of `watch` alone grants the lock: the
        /// driver may take the lock on that deletion without listing the
        /// directory again. Holds for a writer whose predecessor is the head
        /// of the queue (unless it is a Curator read/write lock's writer, see
        /// "A Curator writer's downgrade"), and for a reader whose watched
        /// writer is the only writer before it. Any other change to `watch` still needs a fresh
        /// snapshot.
        deletion_grants: bool,
        /// True when the release of `watch` by a contender that held the
        /// lock alone grants it. A writer that held after waiting names its
        /// node in the lock directory's data (the release record) in the
        /// transaction that deletes it, so the driver may take the lock when
        /// `watch` is deleted and the record names it, without listing the
        /// directory again. Holds whenever `watch` is a native writer, and whenever
        /// `deletion_grants` holds.
        release_grants: bool,
    },
    /// The contender's sequence cannot be ordered: it is at
    /// [`SEQUENCE_LIMIT`], negative, or shared with another child. It is
    /// never granted; the driver withdraws the node.
    Exhausted,
}

/// Why no decision could be made for a contender.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OrderingError {
    /// The contender's own node is not among the children: it was deleted
    /// (its session expired, or someone removed it), so it holds nothing.
    #[error("contender node `{me}` is not in the lock directory: it was deleted")]
    Missing {
        /// The contender's node name.
        me: String,
    },
    /// The contender's own name is not a contender node name.
    #[error("cannot decide for a node that is not a contender: {0}")]
    InvalidName(#[from] ParseNameError),
}

/// Decides for the contender named `me` given the raw, unordered child names
/// of the lock directory.
///
/// Names that do not parse as contender names are skipped. The work is one
/// pass over `children`, with no allocation.
///
/// # Errors
///
/// [`OrderingError::InvalidName`] if `me` is not a contender name, and
/// [`OrderingError::Missing`] if `me` is not among `children`.
pub fn decide<'a, S: AsRef<str>>(me: &str, children: &'a [S]) -> Result<Decision<'a>, OrderingError> {
    let mut foreign = false;
    decide_noting_foreign(me, children, &mut foreign)
}

/// [`decide`], also setting `foreign` when a child is not a contender (so
/// that a driver can log foreign names without parsing every name twice).
pub(crate) fn decide_noting_foreign<'a, S: AsRef<str>>(
    me: &str,
    children: &'a [S],
    foreign: &mut bool,
) -> Result<Decision<'a>, OrderingError> {
    let mine = parse_parts(me).map_err(|reason| ParseNameError::new(me, reason))?;
    let mut found = false;
    let mut shared = false;
    // The closest predecessor, the closest preceding writer, and counts.
    let mut predecessor: Option<(i32, &'a str)> = None;
    let mut predecessors = 0usize;
    let mut predecessor_marks = false;
    let mut predecessor_inserts = false;
    let mut writer: Option<(i32, &'a str)> = None;
    let mut writer_marks = false;
    let mut writers = 0usize;
    for child in children {
        let name = child.as_ref();
        let Ok(parts) = parse_parts(name) else {
            *foreign = true;
            continue;
        };
        if name == me {
            found = true;
            continue;
        }
        shared |= parts.seq == mine.seq;
        if !precedes(&parts, name, &mine, me) {
            continue;
        }
        let key = parts.seq;
        predecessors += 1;
        if closer(key, name, predecessor) {
            predecessor = Some((key, name));
            predecessor_marks = marks(&parts);
            predecessor_inserts = inserts_before_itself(&parts);
        }
        if parts.mode == Mode::Write {
            writers += 1;
            if closer(key, name, writer) {
                writer = Some((key, name));
                writer_marks = marks(&parts);
            }
        }
    }
    if !found {
        return Err(OrderingError::Missing { me: me.to_owned() });
    }
    if shared || !is_valid_seq(mine.seq) {
        return Ok(Decision::Exhausted);
    }
    Ok(match mine.mode {
        Mode::Read => match writer {
            None => Decision::Granted,
            Some((_, watch)) => Decision::Wait {
                watch,
                deletion_grants: writers == 1,
                release_grants: writers == 1 || writer_marks,
            },
        },
        Mode::Write => match predecessor {
            None => Decision::Granted,
            Some((_, watch)) => Decision::Wait {
                watch,
                deletion_grants: predecessors == 1 && !predecessor_inserts,
                release_grants: (predecessors == 1 && !predecessor_inserts) || predecessor_marks,
            },
        },
    })
}

/// How many contenders come before `me` in `children` (in any mode): its
/// place in the queue, counted from 0 (a writer with 0 ahead holds the
/// lock; a reader holds it behind readers only). Children that are not
/// contender names do not count.
pub fn ahead<S: AsRef<str>>(me: &str, children: &[S]) -> usize {
    let Ok(mine) = parse_parts(me) else {
        return 0;
    };
    children
        .iter()
        .map(AsRef::as_ref)
        .filter(|name| *name != me)
        .filter(|name| parse_parts(name).is_ok_and(|parts| precedes(&parts, name, &mine, me)))
        .count()
}

/// True if a contender's release by a holder may be recognised by the
/// release record: a native writer. Peers never write the record, and this
/// library does not write it for its nodes in a peer's layout, so a record
/// naming a peer-layout node is not to be trusted.
#[inline]
fn marks(parts: &Parts<'_>) -> bool {
    parts.mode == Mode::Write && parts.layout == Layout::Native
}

/// True if a contender may add a node with its own sequence before its
/// deletion: a writer of Curator's read/write lock (from Curator 5.5, the
/// thread that holds the write lock and takes the read lock creates
/// `_c_<uuid>-__READ__<the writer's sequence>`, a plain ephemeral node).
/// Its deletion is then no proof that nothing precedes a writer behind it.
#[inline]
pub(crate) fn inserts_before_itself(parts: &Parts<'_>) -> bool {
    parts.mode == Mode::Write && parts.layout == Layout::Curator
}

/// True if the contender `(parts, name)` comes before `(mine, me)`. Nodes
/// whose sequence is not valid (at the limit, negative) come after every
/// valid one. Equal valid sequences can only come from forged names; they
/// count as predecessors of each other (the name breaks the tie), which is
/// the cautious reading: nobody is granted past them by mistake.
#[inline]
fn precedes(parts: &Parts<'_>, name: &str, mine: &Parts<'_>, me: &str) -> bool {
    if !is_valid_seq(parts.seq) {
        return false;
    }
    match parts.seq.cmp(&mine.seq) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => name < me,
    }
}

/// True if `(key, name)` is closer to me than the current best.
#[inline]
fn closer(key: i32, name: &str, best: Option<(i32, &str)>) -> bool {
    match best {
        None => true,
        Some((k, n)) => key > k || (key == k && name > n),
    }
}

/// True if the library that wrote a contender of layout and mode `me` may
/// grant it the lock with a contender `other` before it, although these
/// rules have it wait for `other` (one of the two is a writer): its library
/// does not recognise `other`'s layout ([`Layout::recognises`]), or `me` is
/// a kazoo `__lock__` node, which may be a kazoo `Lock` (not `WriteLock`),
/// and `other` a kazoo `__rlock__` reader, which `Lock` does not wait for.
/// False if neither is a writer (nobody waits), and for every native `me`.
/// See "Peers' blind spots" in the [module documentation](self).
///
/// ```
/// use zk_rwlock_core::ordering::blind_to;
/// use zk_rwlock_core::{Layout, Mode};
/// let kazoo_lock = (Layout::Kazoo, Mode::Write);
/// assert!(blind_to(kazoo_lock, (Layout::Kazoo, Mode::Read)));
/// assert!(!blind_to(kazoo_lock, (Layout::Kazoo, Mode::Write)));
/// assert!(blind_to(kazoo_lock, (Layout::Native, Mode::Write)));
/// ```
pub fn blind_to(me: (Layout, Mode), other: (Layout, Mode)) -> bool {
    let ((layout, mode), (other_layout, other_mode)) = (me, other);
    if mode == Mode::Read && other_mode == Mode::Read {
        return false;
    }
    !layout.recognises(other_layout)
        || (layout == Layout::Kazoo
            && mode == Mode::Write
            && other_layout == Layout::Kazoo
            && other_mode == Mode::Read)
}

/// What the downgrade of a holding writer does ([`downgrade`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Downgrade<'a> {
    /// A reader node with the writer's sequence takes the writer's place,
    /// in one transaction that also checks that `successor`, the node right
    /// after the writer (a reader: the downgrade's own reader node, or a
    /// reader queued before it), still exists.
    Replace {
        /// The child name of the node right after the writer.
        successor: &'a str,
    },
    /// The writer node stays: the node right after it is a writer, which
    /// may take the writer node's deletion for its grant (or the
    /// downgrade's reader cannot be ordered).
    Keep,
    /// The writer node is not in the listing: it was deleted (by someone
    /// else), and the write lock with it.
    Lost,
}

/// How the holding writer `writer` downgrades, given a listing (`children`)
/// that contains `me`, a reader node the downgrade made after it (see
/// "Downgrade" in the [module documentation](self)).
///
/// The downgrade replaces the writer node by a reader node with the same
/// sequence, in one transaction. Who could be granted by the writer node's
/// deletion? Readers behind it, which is the point, and the writer right
/// after it, if any, which waits on it and may take its deletion for its
/// grant (`deletion_grants`): so the writer node stays if the node right
/// after it is a writer. If it is a reader, every writer behind has that
/// reader before it for as long as that reader exists (nodes are only ever
/// added behind), so the transaction checks that it still exists; `me`,
/// made after the writer, is such a reader when nothing else is queued
/// behind the writer, and it closes the gap through which a writer created
/// after this listing could come directly behind the writer.
///
/// # Errors
///
/// [`OrderingError::Missing`] if `me` is not among `children`;
/// [`OrderingError::InvalidName`] if `me` is not a contender name.
///
/// ```
/// use zk_rwlock_core::ordering::{downgrade, Downgrade};
///
/// let w = "a-W-0000000001";
/// let me = "a-R-0000000004";
/// assert_eq!(downgrade(w, me, &[w, me])?, Downgrade::Replace { successor: me });
/// assert_eq!(
///     downgrade(w, me, &[w, "b-R-0000000002", "c-W-0000000003", me])?,
///     Downgrade::Replace { successor: "b-R-0000000002" },
/// );
/// assert_eq!(downgrade(w, me, &[w, "c-W-0000000003", me])?, Downgrade::Keep);
/// assert_eq!(downgrade(w, me, &[me])?, Downgrade::Lost);
/// # Ok::<(), zk_rwlock_core::ordering::OrderingError>(())
/// ```
pub fn downgrade<'a, S: AsRef<str>>(
    writer: &str,
    me: &str,
    children: &'a [S],
) -> Result<Downgrade<'a>, OrderingError> {
    let mine = parse_parts(me).map_err(|reason| ParseNameError::new(me, reason))?;
    let Ok(held) = parse_parts(writer) else {
        return Ok(Downgrade::Lost);
    };
    let mut found = false;
    let mut writer_found = false;
    // The node right after the writer: its sequence, name and mode.
    let mut successor: Option<(i32, &'a str, Mode)> = None;
    for child in children {
        let name = child.as_ref();
        found |= name == me;
        writer_found |= name == writer;
        let Ok(parts) = parse_parts(name) else {
            continue;
        };
        if name == writer || !precedes(&held, writer, &parts, name) {
            continue;
        }
        // The nearest after the writer: the smallest sequence, ties by name.
        if successor.is_none_or(|(seq, best, _)| (parts.seq, name) < (seq, best)) {
            successor = Some((parts.seq, name, parts.mode));
        }
    }
    if !found {
        return Err(OrderingError::Missing { me: me.to_owned() });
    }
    if !writer_found {
        return Ok(Downgrade::Lost);
    }
    Ok(match successor {
        Some((_, successor, Mode::Read)) if is_valid_seq(held.seq) && is_valid_seq(mine.seq) => {
            Downgrade::Replace { successor }
        }
        _ => Downgrade::Keep,
    })
}

/// One contender's place in the queue, as classified by [`queue`].
/// Non-exhaustive: fields may be added.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Place<'a> {
    /// The child name.
    pub name: &'a str,
    /// The host part of the name: everything before its mode marker
    /// (`<identity>@<token>`, a bare host, `_c_<uuid>-`, kazoo's hex).
    pub host: &'a str,
    /// The layout the name is written in: which library wrote it.
    pub layout: Layout,
    /// Read or write.
    pub mode: Mode,
    /// ZooKeeper's sequence number.
    pub seq: i32,
    /// Holds the lock, or waits.
    pub decision: Decision<'a>,
}

/// A whole lock directory classified: every contender in queue order with
/// what it holds or waits on, and the children that are not contenders.
/// Non-exhaustive: fields may be added.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Queue<'a> {
    /// Contenders in queue order (head first).
    pub contenders: Vec<Place<'a>>,
    /// Children whose names do not parse, in input order.
    pub foreign: Vec<&'a str>,
}

impl Queue<'_> {
    /// The contenders that hold the lock: one writer at the head, or a prefix of readers.
    pub fn holders(&self) -> impl Iterator<Item = &Place<'_>> {
        self.contenders.iter().filter(|p| p.decision == Decision::Granted)
    }
}

/// Classifies every child of a lock directory: queue order, and for each
/// contender whether it holds or which node it waits on (the same answer
/// [`decide`] gives that contender). Runs in O(n log n).
pub fn queue<S: AsRef<str>>(children: &[S]) -> Queue<'_> {
    let mut foreign = Vec::new();
    let mut parsed: Vec<(Parts<'_>, &str)> = Vec::with_capacity(children.len());
    for child in children {
        let name = child.as_ref();
        match parse_parts(name) {
            Ok(parts) => parsed.push((parts, name)),
            Err(_) => foreign.push(name),
        }
    }
    // Valid sequences in order, then those that cannot be ordered.
    parsed.sort_unstable_by_key(|(p, name)| (!is_valid_seq(p.seq), p.seq, *name));
    let mut contenders = Vec::with_capacity(parsed.len());
    // The previous contender and the last writer, each with whether it marks.
    let mut last: Option<(&str, bool, bool)> = None;
    let mut last_writer: Option<(&str, bool)> = None;
    let mut writers = 0usize;
    for (i, (parts, name)) in parsed.iter().enumerate() {
        let shared = |j: usize| parsed.get(j).is_some_and(|(p, _)| p.seq == parts.seq);
        let decision = if !is_valid_seq(parts.seq) || (i > 0 && shared(i - 1)) || shared(i + 1) {
            Decision::Exhausted
        } else {
            decision_in_queue(i, parts.mode, last, last_writer, writers)
        };
        contenders.push(Place {
            name,
            host: parts.host,
            layout: parts.layout,
            mode: parts.mode,
            seq: parts.seq,
            decision,
        });
        if !is_valid_seq(parts.seq) {
            continue;
        }
        last = Some((name, marks(parts), inserts_before_itself(parts)));
        if parts.mode == Mode::Write {
            last_writer = Some((name, marks(parts)));
            writers += 1;
        }
    }
    Queue { contenders, foreign }
}

/// The decision of the `i`-th valid contender in queue order, given the one
/// before it (with whether it [marks] and whether it [inserts before
/// itself](inserts_before_itself)), the last writer before it (with whether
/// it marks), and how many writers precede it.
fn decision_in_queue<'a>(
    i: usize,
    mode: Mode,
    last: Option<(&'a str, bool, bool)>,
    last_writer: Option<(&'a str, bool)>,
    writers: usize,
) -> Decision<'a> {
    match mode {
        Mode::Read => match last_writer {
            None => Decision::Granted,
            Some((w, marks)) => Decision::Wait {
                watch: w,
                deletion_grants: writers == 1,
                release_grants: writers == 1 || marks,
            },
        },
        Mode::Write => match last {
            None => Decision::Granted,
            Some((p, marks, inserts)) => Decision::Wait {
                watch: p,
                deletion_grants: i == 1 && !inserts,
                release_grants: (i == 1 && !inserts) || marks,
            },
        },
    }
}

/// The leader of a lock directory used for an election: the writer at the
/// head of the queue, which holds the lock because nothing precedes it;
/// `None` if the queue is empty, its head is a reader, or its head cannot
/// be ordered. Its child name, from `children` (any order).
///
/// This is who holds the write lock, not yet who knows it: the owner of
/// that node learns of its grant a notification's trip later. Who leads is
/// [`crate::election::who_leads`]'s answer, which names this writer only
/// once its node carries its announcement.
pub fn leader<S: AsRef<str>>(children: &[S]) -> Option<&str> {
    let queue = queue(children);
    let head = queue.contenders.first()?;
    (head.mode == Mode::Write && head.decision == Decision::Granted).then_some(head.name)
}

#[cfg(test)]
pub(crate) mod tests;
