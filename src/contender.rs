//! A contender's whole life as a pure state machine: create, wait, hold,
//! release or withdraw.
//!
//! [`Contender`] decides everything one acquire does with ZooKeeper, from
//! the create of its node to the deletion that ends it. It is fed
//! [`Input`]s (the answers to requests) and answers each with the next
//! [`Action`]. It performs no I/O, reads no clock and holds no ZooKeeper
//! types: the driver ([`crate::SharedLock`]) performs the actions, and the
//! simulation (`tests/simulation.rs`) runs the same machine against an
//! in-memory model of ZooKeeper. When a wake-up grants the lock is
//! [`crate::acquire`]'s business (it runs inside this machine while the
//! contender waits); who precedes whom is [`crate::ordering`]'s.
//!
//! # The run loop
//!
//! ```text
//! machine = Contender::new(mode, may_wait, layout, token, session, check_data)
//! action = machine.start()                       // Create
//! loop {
//!     match action {
//!         Create            => create my node (ephemeral sequential, with the token in its
//!                              name) and list the directory, both sent at once;
//!                              feed Created { node, listing }
//!         CreateDir{container} => create the lock directory (container or persistent, the
//!                              directory's ACL; retried); feed DirCreated
//!         CreateParents     => create the directory's parents (persistent; retried); feed
//!                              ParentsCreated
//!         FindOwn           => sync, then list the directory (retried); feed Found
//!         Stat{name}        => `exists` on a child (retried); feed Stat (owner session, czxid)
//!         ReadDirData       => read the directory's data (retried); feed DirData
//!         Acquire(a)        => perform `a` as in [`crate::acquire`]'s run loop; feed
//!                              Acquire(input), and machine.event(..) for events that
//!                              arrived while a request was in flight
//!         Grant{mark}       => hand the node to a guard: the machine now holds
//!                              (`held_*` below), until machine.release()
//!         GiveUp | Fail(_)  => the acquire ends; action = machine.withdraw()
//!                              (deletes the node, if there is one to delete)
//!         Delete{name,record} => delete `name` (with `record`: in one transaction with the
//!                              release record, [`crate::node_name::release_record`], and
//!                              the create and delete of its release marker,
//!                              [`crate::node_name::release_marker`]),
//!                              retried until answered; feed Deleted { answer, answer_lost }
//!         ReadDirAcl        => read the directory's ACL and child count, keeping the ACL;
//!                              feed DirAcl(children)
//!         Recycle           => delete the directory and create it again, persistent, with the
//!                              ACL just read, in one transaction; feed Recycled
//!         Replace{..}       => a downgrade's transaction: check the node after the writer (if
//!                              named), create the reader with the writer's sequence, delete
//!                              the writer and my node; retried; feed Replaced
//!         Done(outcome)     => the release or withdrawal is over
//!     }
//! }
//! ```
//!
//! While holding, the guard's keeper watches the node and feeds what it
//! learns with [`Contender::held_watch_set`] and [`Contender::held_event`];
//! [`Contender::release`] begins the release.
//!
//! "Retried" requests are sent again after a lost connection until they are
//! answered or retrying is over (see [`retry_pause`]); only then is
//! [`Answer::Retry`] fed.
//!
//! # Rules
//!
//! - The create is pipelined with a listing; the listing decides only if it
//!   contains my node. A create whose answer was lost may have been applied:
//!   my node is the child carrying my token in my layout, owned by my
//!   session ([`Action::FindOwn`], then [`Action::Stat`] for each
//!   candidate), the one with the lowest czxid; others are deleted (only a
//!   retried create makes two). None: create again.
//! - A missing directory is made ([`Action::CreateDir`], its parents first
//!   if they are missing too), at most [`MAX_DIRECTORY_ATTEMPTS`] times.
//!   It is a container, except in kazoo's layout; a server without
//!   containers gets a persistent directory.
//! - Until the directory's data is known to be the lock's (nothing or a
//!   release record), the first acquire checks it; data of another kind
//!   fails the acquire ([`Failure::DirectoryHoldsData`]).
//! - A holder's node deleted by someone else (or made again by someone else
//!   under its name: another czxid) is lost; a deletion after the release
//!   began is the release's. The session's end loses the lock.
//! - A release deletes the node, with the release record and marker if the
//!   grant said `mark`; a refused transaction (an ACL, a quota, a
//!   stranger's node under the marker's name) falls back to a plain
//!   deletion. A node missing at the release was deleted by someone else
//!   unless an earlier attempt's answer was lost
//!   ([`crate::lease::released_by_us`]).
//! - A withdrawal deletes my node (found by token first if its create's
//!   answer was lost); a lost node or an ended session needs none.
//! - A downgrade runs a reader's contender ([`Contender::replacing`]) beside
//!   the holding writer's machine ([`Contender::begin_replace`],
//!   [`Contender::end_replace`]): the reader's create and listing, then
//!   [`crate::ordering::downgrade`] decides: [`Action::Replace`] (the
//!   reader's grant once it is applied) or [`Action::GiveUp`] (the writer
//!   node stays, the reader is withdrawn). A transaction whose answer was
//!   lost and that fails on a retry is settled by the new reader node's
//!   owner. While it runs, the writer's deletion is the downgrade's unless
//!   the downgrade says otherwise.
//! - After a release or withdrawal of a node whose sequence is near the
//!   counter's limit ([`crate::ordering::needs_recycling`]), the directory is
//!   recycled if it is empty, with its ACL read back.

use std::time::Duration;

use uuid::Uuid;

use crate::acquire::{self, Acquire, Counts, Event};
use crate::node_name::{Layout, Mode, NodeName};
use crate::ordering;

/// How often an acquire makes a lock directory that vanishes under it (it
/// is removed when empty) before it fails with [`Failure::NoDirectory`].
pub const MAX_DIRECTORY_ATTEMPTS: u32 = 10;

/// The answer to a request of the contender's own (not of the wait, see
/// [`acquire::Reply`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer<T> {
    /// The request succeeded.
    Ok(T),
    /// The node (or its parent) does not exist.
    NoNode,
    /// The node exists already.
    Exists,
    /// The node's ACL refuses this identity.
    NoAuth,
    /// The server does not know the request (containers before 3.6).
    Unimplemented,
    /// The connection was lost and retrying is over: the request may or may
    /// not have been applied.
    Retry,
    /// The session is over (expired, closed, authentication failed).
    SessionEnded,
    /// Any other error.
    Failed,
}

/// My node, as the create answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    /// The node's name (a child name).
    pub name: String,
    /// Its czxid: the fencing token.
    pub czxid: i64,
}

/// A child's stat, as far as finding my own node needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// The session that owns the (ephemeral) node; 0 for a persistent one.
    pub session: i64,
    /// The node's czxid.
    pub czxid: i64,
}

/// What reading the held node (to watch it) found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldNode {
    /// The node's czxid.
    pub czxid: i64,
    /// Its data is a revocation request.
    pub revocation: bool,
}

/// An input to [`Contender::step`]: the answer to the last [`Action`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input<'a> {
    /// The answers to [`Action::Create`]: the create, and the listing sent
    /// with it (the children and the directory's data length), if it was
    /// sent and answered.
    Created {
        /// The create's answer.
        node: Answer<Created>,
        /// The pipelined listing: children, and the directory's data length.
        listing: Option<Answer<(&'a [String], i32)>>,
    },
    /// The answer to [`Action::CreateDir`].
    DirCreated(Answer<()>),
    /// The answer to [`Action::CreateParents`].
    ParentsCreated(Answer<()>),
    /// The answer to [`Action::FindOwn`]: the directory's children.
    Found(Answer<&'a [String]>),
    /// The answer to [`Action::Stat`]: the child's owner, `None` if it is gone.
    Stat(Answer<Option<Owner>>),
    /// The answer to [`Action::ReadDirData`].
    DirData(Answer<&'a [u8]>),
    /// The answer to an [`Action::Acquire`].
    Acquire(acquire::Input<'a>),
    /// The answer to [`Action::Delete`]; `answer_lost` if an attempt before
    /// the answer lost its answer to a broken connection (it may have
    /// deleted the node).
    Deleted {
        /// The last attempt's answer.
        answer: Answer<()>,
        /// An earlier attempt's answer was lost.
        answer_lost: bool,
    },
    /// The answer to [`Action::ReadDirAcl`]: the directory's child count.
    DirAcl(Answer<i32>),
    /// The answer to [`Action::Recycle`].
    Recycled(Answer<()>),
    /// The answer to [`Action::Replace`]: the new reader node's czxid;
    /// `failed` names the operation that failed the transaction, if one
    /// did; `answer_lost` as for [`Input::Deleted`].
    Replaced {
        /// The last attempt's answer.
        answer: Answer<i64>,
        /// The operation that failed the transaction.
        failed: Option<ReplaceStep>,
        /// An earlier attempt's answer was lost.
        answer_lost: bool,
    },
}

/// Why an acquire failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// My node was deleted by someone else (or with my session).
    Lost,
    /// The session is over.
    SessionEnded,
    /// The sequence counter is used up.
    Exhausted,
    /// My node's name is not a contender name.
    InvalidName,
    /// A request failed for good: the driver returns its error.
    Request,
    /// The lock directory holds data that is not the lock's.
    DirectoryHoldsData,
    /// The lock directory vanished [`MAX_DIRECTORY_ATTEMPTS`] times.
    NoDirectory,
    /// A downgrade's writer node was deleted by someone else before the
    /// downgrade replaced it: the write lock was lost.
    WriterLost,
}

impl From<acquire::Failure> for Failure {
    fn from(failure: acquire::Failure) -> Failure {
        match failure {
            acquire::Failure::Lost => Failure::Lost,
            acquire::Failure::SessionEnded => Failure::SessionEnded,
            acquire::Failure::Exhausted => Failure::Exhausted,
            acquire::Failure::InvalidName => Failure::InvalidName,
            acquire::Failure::Request => Failure::Request,
            acquire::Failure::WriterLost => Failure::WriterLost,
        }
    }
}

/// How a release or a withdrawal ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The node is deleted (or was never made).
    Deleted,
    /// A held node was deleted by someone else before its release: the lock
    /// was lost before it.
    Lost,
    /// The session is over: its ephemeral nodes are gone with it.
    SessionEnded,
    /// The deletion failed for good: the driver reports its error.
    Failed,
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Create my node, and list the directory in the same breath.
    Create,
    /// Create the lock directory: a container, or persistent.
    CreateDir {
        /// A container node (else persistent).
        container: bool,
    },
    /// Create the lock directory's parents.
    CreateParents,
    /// Sync with the leader, then list the directory: my node may exist.
    FindOwn,
    /// Ask for a child's owner and czxid.
    Stat {
        /// The child name.
        name: String,
    },
    /// Read the lock directory's data.
    ReadDirData,
    /// A step of the wait (see [`crate::acquire`]).
    Acquire(acquire::Action),
    /// The lock is mine: the machine holds it from now on.
    Grant {
        /// Release with the release record.
        mark: bool,
    },
    /// Not acquired (deadline, or not free for `try_*`): withdraw.
    GiveUp,
    /// The acquire failed: withdraw.
    Fail(Failure),
    /// Delete a node of mine, retried until answered.
    Delete {
        /// The child name.
        name: String,
        /// In one transaction with the release record naming it and its
        /// release marker's create and delete.
        record: bool,
    },
    /// Read the lock directory's ACL and child count.
    ReadDirAcl,
    /// Delete the lock directory and create it again, persistent, with the
    /// ACL just read.
    Recycle,
    /// The release or withdrawal is over.
    Done(Outcome),
    /// A downgrade's transaction (see [`crate::ordering::downgrade`]), in
    /// this order: check that `successor` exists (if any); with `record`,
    /// write the release record naming `writer` and create and delete its
    /// release marker, as a release does; create `reader` (ephemeral, not
    /// sequential: it carries the writer's sequence); delete `writer`;
    /// delete `mine`. Retried until answered. Feed [`Input::Replaced`].
    /// See [`Contender::replacing`].
    Replace {
        /// The child name of the writer node, my node that holds the lock.
        writer: String,
        /// The child name of the reader node to create in its place.
        reader: String,
        /// The node right after the writer, to check, if it is not `mine`.
        successor: Option<String>,
        /// The child name of this contender's node (made after the writer).
        mine: String,
        /// With the release record and marker of `writer`.
        record: bool,
        /// Delete `writer` only at this data version: 0, as it was made,
        /// unless a revocation request on it is known already (then any).
        /// A request written meanwhile refuses the transaction, and the
        /// downgrade keeps the writer node, whose guard sees the request.
        writer_version: Option<i32>,
    },
}

/// The operation that failed a downgrade's transaction ([`Action::Replace`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplaceStep {
    /// The check of the node right after the writer: it is gone.
    Successor,
    /// The release record: refused (the directory's ACL, a quota).
    Record,
    /// The release marker's create: a node has its name.
    Marker,
    /// The create of the reader node: a node has its name.
    Reader,
    /// The deletion of the writer node: it is gone.
    Writer,
    /// The deletion of my node: it is gone.
    Mine,
}

/// How a downgrade's transaction ended, for the writer's machine
/// ([`Contender::end_replace`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replacement {
    /// It deleted the writer node: the reader holds from now on.
    Applied,
    /// The writer node was deleted by someone else first: the lock was lost.
    WriterGone,
    /// It did not happen (the writer node is kept), or whether it did is
    /// unknown: a deletion of the node seen from now on is someone else's.
    NotApplied,
}

/// What the guard's keeper does next with the held node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Read the node and set a data watch on it ([`Contender::held_watch_set`]).
    Watch,
    /// Wait for the watch's event ([`Contender::held_event`]).
    Wait,
    /// Nothing left to watch: the node is gone, the session over, or the
    /// server refuses the watch.
    Stop,
}

/// The phases of a contender's life.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    New,
    Creating,
    MakingDir {
        container: bool,
        after_parents: bool,
    },
    MakingParents {
        container: bool,
    },
    Finding,
    Checking {
        candidates: Vec<String>,
        mine: Vec<(String, i64)>,
    },
    /// Deleting [`Contender::extras`], the last first.
    DeletingExtras,
    CheckingData,
    Waiting,
    Holding,
    /// The acquire ended (given up or failed): withdraw next.
    Ended,
    Deleting {
        queue: Vec<String>,
        record: bool,
        releasing: bool,
    },
    ReadingAcl(Outcome),
    Recycling(Outcome),
    /// A downgrade's, replacing the writer by `reader` (with sequence `seq`)
    /// with the transaction of [`Action::Replace`] (its fields).
    Replacing {
        reader: String,
        seq: i32,
        writer: String,
        successor: Option<String>,
        mine: String,
        record: bool,
    },
    /// A downgrade's transaction lost an answer and failed on a retry:
    /// whether the earlier attempt made `reader`, its stat tells.
    VerifyingReplace {
        reader: String,
        seq: i32,
        failed: Option<ReplaceStep>,
        answer: Answer<i64>,
    },
    Done,
}

/// Where a holding writer stands in its downgrade ([`Contender::begin_replace`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Downgrade {
    None,
    /// The transaction that may delete the node is under way; `deleted`
    /// once the keeper saw the node deleted meanwhile.
    Running {
        deleted: bool,
    },
    /// The node was deleted by the downgrade: its reader holds.
    Replaced,
}

/// One contender's state: see the [module documentation](self).
#[derive(Debug, Clone)]
pub struct Contender {
    mode: Mode,
    may_wait: bool,
    layout: Layout,
    token: Uuid,
    session: i64,
    check_data: bool,
    phase: Phase,
    /// My node: its name, sequence and czxid, once known.
    me: Option<(String, i32, i64)>,
    /// A create was sent whose answer is not known.
    creating: bool,
    /// Withdrawing: the node is searched to be deleted.
    withdrawing: bool,
    dir_attempts: u32,
    /// Other nodes of mine from a retried create, still to delete.
    extras: Vec<String>,
    acquire: Option<Acquire>,
    /// The session's end was seen.
    session_ended: bool,
    /// My node is known gone (deleted by someone else, or with the session).
    gone: bool,
    mark: bool,
    revoked: bool,
    lost: bool,
    /// Release begun.
    releasing: bool,
    answer_lost: bool,
    data_checked: bool,
    /// The wait watches release markers.
    markers: bool,
    /// A downgrade's reader: the writer node of mine it replaces, whether
    /// that writer's release is due with the record, and whether a
    /// revocation request on it is known.
    replaces: Option<(String, bool, bool)>,
    downgrade: Downgrade,
}

impl Contender {
    /// A machine for an acquire in `mode` (`may_wait` false for `try_*`),
    /// whose node's name carries `token` in `layout`, on the session with
    /// id `session`. `check_data`: the directory's data is not known yet
    /// to be the lock's.
    pub fn new(
        mode: Mode,
        may_wait: bool,
        layout: Layout,
        token: Uuid,
        session: i64,
        check_data: bool,
    ) -> Contender {
        Contender {
            mode,
            may_wait,
            layout,
            token,
            session,
            check_data,
            phase: Phase::New,
            me: None,
            creating: false,
            withdrawing: false,
            dir_attempts: 0,
            extras: Vec::new(),
            acquire: None,
            session_ended: false,
            gone: false,
            mark: false,
            revoked: false,
            lost: false,
            releasing: false,
            answer_lost: false,
            data_checked: false,
            markers: true,
            replaces: None,
            downgrade: Downgrade::None,
        }
    }

    /// The first action: create my node.
    pub fn start(&mut self) -> Action {
        self.create()
    }

    /// My node's child name, once known.
    pub fn node(&self) -> Option<&str> {
        self.me.as_ref().map(|(name, _, _)| name.as_str())
    }

    /// The writer node a downgrade's reader replaces ([`Contender::replacing`]).
    pub fn replaces(&self) -> Option<&str> {
        self.replaces.as_ref().map(|(writer, _, _)| writer.as_str())
    }

    /// My node's sequence number, once known.
    pub fn seq(&self) -> Option<i32> {
        self.me.as_ref().map(|(_, seq, _)| *seq)
    }

    /// My node's czxid (the fencing token), once known.
    pub fn czxid(&self) -> Option<i64> {
        self.me.as_ref().map(|(_, _, czxid)| *czxid)
    }

    /// The counts of the wait so far.
    pub fn counts(&self) -> Counts {
        self.acquire.as_ref().map(Acquire::counts).unwrap_or_default()
    }

    /// True if the last listing had children that are not contender nodes.
    pub fn saw_foreign(&self) -> bool {
        self.acquire.as_ref().is_some_and(Acquire::saw_foreign)
    }

    /// True if my node's watch is set and has not fired (the keeper takes it over).
    pub fn own_watch_set(&self) -> bool {
        self.acquire.as_ref().is_some_and(Acquire::own_watch_set)
    }

    /// True while the wait's `exists` watch on a release marker may still
    /// matter ([`Acquire::marker_watch_needed`]); once false, the driver
    /// drops it.
    pub fn marker_watch_needed(&self) -> bool {
        self.phase == Phase::Waiting && self.acquire.as_ref().is_some_and(Acquire::marker_watch_needed)
    }

    /// True once this acquire found the directory's data to be the lock's.
    pub fn data_checked(&self) -> bool {
        self.data_checked
    }

    /// True while holding (granted, release not begun), and not lost.
    pub fn is_held(&self) -> bool {
        self.phase == Phase::Holding && !self.lost
    }

    /// True once the held node is known lost: deleted by someone else, or
    /// the session's end ([`Contender::held_lost`]).
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// True once a revocation request was seen (never cleared).
    pub fn is_revoked(&self) -> bool {
        self.revoked
    }

    /// Records an event that arrived while a request was in flight: passed
    /// on to the wait; the session's end also ends a create.
    pub fn event(&mut self, event: Event) {
        if matches!(
            event,
            Event::SessionEnded | Event::Own(acquire::NodeEvent::SessionEnded)
        ) {
            self.session_ended = true;
        }
        if let Some(acquire) = self.acquire.as_mut().filter(|_| self.phase == Phase::Waiting) {
            acquire.event(event);
        }
    }

    /// Whether the wait takes a release marker's creation as its node's
    /// release ([`Acquire::with_release_markers`]; the default).
    #[must_use]
    pub fn with_release_markers(mut self, on: bool) -> Contender {
        self.markers = on;
        self
    }

    /// This contender is a downgrade's: a reader (`mode` [`Mode::Read`],
    /// `may_wait` false, in the native layout) made while `writer`, a
    /// writer node of mine in the same directory, holds the lock. Its wait
    /// ([`Acquire::replacing`]) answers [`Action::Replace`] if the writer
    /// can hand the lock over to it (only readers between them), which
    /// grants it once the writer is deleted; [`Action::GiveUp`] otherwise
    /// (a writer queued between them), and the downgrade keeps the writer
    /// node instead. The writer's machine is told with
    /// [`Contender::begin_replace`] and [`Contender::end_replace`].
    ///
    /// `mark`: the writer's release is due with the release record (its
    /// grant said so): the transaction then also writes the record and
    /// makes the marker, so that the readers waiting on the writer with
    /// no other hand-off (they saw more writers before them when they
    /// listed) are granted by its events as by a release. It may: only
    /// readers wait on the writer (a reader stands right after it; see
    /// [`crate::ordering::downgrade`]). Refused (no WRITE on the
    /// directory, a stranger's node under the marker's name), the
    /// transaction is tried again without them.
    ///
    /// `revoked`: a revocation request on the writer node is known (see
    /// [`Action::Replace`]'s `writer_version`).
    #[must_use]
    pub fn replacing(mut self, writer: &str, mark: bool, revoked: bool) -> Contender {
        self.replaces = Some((writer.to_owned(), mark, revoked));
        self
    }

    /// The mark of the held node: whether its release is due with the
    /// release record.
    pub fn mark(&self) -> bool {
        self.mark
    }

    /// A holding writer's downgrade begins: a deletion of its node seen
    /// from now on may be the downgrade's. False (and nothing changes) if
    /// it cannot be downgraded: not holding, lost, or its release begun.
    pub fn begin_replace(&mut self) -> bool {
        if self.phase != Phase::Holding || self.lost || self.releasing || self.mode != Mode::Write {
            return false;
        }
        self.downgrade = Downgrade::Running { deleted: false };
        true
    }

    /// A holding writer's downgrade ended as `how`: with [`Replacement::Applied`]
    /// the node is gone and this machine is done (nothing to release);
    /// otherwise it holds as before, lost if the node was deleted by
    /// someone else meanwhile.
    pub fn end_replace(&mut self, how: Replacement) {
        let deleted = matches!(self.downgrade, Downgrade::Running { deleted: true });
        match how {
            Replacement::Applied => {
                self.downgrade = Downgrade::Replaced;
                self.phase = Phase::Done;
            }
            Replacement::WriterGone => {
                self.downgrade = Downgrade::None;
                self.held_deleted();
            }
            Replacement::NotApplied => {
                self.downgrade = Downgrade::None;
                if deleted {
                    self.held_deleted();
                }
            }
        }
    }

    /// Feeds the answer to the last action and returns the next action.
    pub fn step(&mut self, input: Input<'_>) -> Action {
        let phase = std::mem::replace(&mut self.phase, Phase::Done);
        match (phase, input) {
            (Phase::Creating, Input::Created { node, listing }) => self.created(node, listing),
            (
                Phase::MakingDir {
                    container,
                    after_parents,
                },
                Input::DirCreated(answer),
            ) => match answer {
                Answer::Ok(()) | Answer::Exists => self.create(),
                // A parent removed again meanwhile: the create finds the
                // directory missing and comes back, a bounded number of times.
                Answer::NoNode if after_parents => self.create(),
                Answer::NoNode => {
                    self.phase = Phase::MakingParents { container };
                    Action::CreateParents
                }
                Answer::Unimplemented if container => self.make_dir(false, after_parents),
                Answer::SessionEnded => self.fail(Failure::SessionEnded),
                _ => self.fail(Failure::Request),
            },
            (Phase::MakingParents { container }, Input::ParentsCreated(answer)) => match answer {
                Answer::Ok(()) | Answer::Exists => self.make_dir(container, true),
                // A parent of the parents missing: the chroot, most likely
                // (its error says so), or a path removed meanwhile.
                Answer::SessionEnded => self.fail(Failure::SessionEnded),
                _ => self.fail(Failure::Request),
            },
            (Phase::Finding, Input::Found(answer)) => match answer {
                Answer::Ok(children) => {
                    let candidates: Vec<String> = children
                        .iter()
                        .filter(|child| self.carries_my_token(child))
                        .cloned()
                        .collect();
                    self.check_next(candidates, Vec::new())
                }
                Answer::NoNode => self.check_next(Vec::new(), Vec::new()),
                Answer::SessionEnded => self.fail(Failure::SessionEnded),
                _ => self.fail(Failure::Request),
            },
            (
                Phase::Checking {
                    mut candidates,
                    mut mine,
                },
                Input::Stat(answer),
            ) => {
                let Some(name) = candidates.pop() else {
                    return self.fail(Failure::Request);
                };
                match answer {
                    Answer::Ok(Some(owner)) if owner.session == self.session => {
                        mine.push((name, owner.czxid))
                    }
                    Answer::Ok(_) | Answer::NoNode => {}
                    Answer::SessionEnded => return self.fail(Failure::SessionEnded),
                    _ => return self.fail(Failure::Request),
                }
                self.check_next(candidates, mine)
            }
            (Phase::DeletingExtras, Input::Deleted { answer, .. }) => match answer {
                Answer::Ok(()) | Answer::NoNode => {
                    self.extras.pop();
                    self.delete_extras()
                }
                Answer::SessionEnded => self.fail(Failure::SessionEnded),
                _ => self.fail(Failure::Request),
            },
            (Phase::CheckingData, Input::DirData(answer)) => match answer {
                Answer::Ok(data) if crate::node_name::is_lock_directory_data(data) => {
                    self.data_checked = true;
                    self.run_acquire(None)
                }
                Answer::Ok(_) => self.fail(Failure::DirectoryHoldsData),
                // The directory is gone, so my node in it is too (deleted by
                // someone else, then the empty container removed).
                Answer::NoNode => self.fail(Failure::Lost),
                Answer::SessionEnded => self.fail(Failure::SessionEnded),
                _ => self.fail(Failure::Request),
            },
            (Phase::Waiting, Input::Acquire(input)) => match self.acquire.as_mut() {
                Some(acquire) => {
                    let action = acquire.step(input);
                    self.waited(action)
                }
                None => self.fail(Failure::Request),
            },
            (
                Phase::Deleting {
                    queue,
                    record,
                    releasing,
                },
                Input::Deleted { answer, answer_lost },
            ) => self.deleted(queue, record, releasing, answer, answer_lost),
            (Phase::ReadingAcl(outcome), Input::DirAcl(answer)) => match answer {
                Answer::Ok(0) => {
                    self.phase = Phase::Recycling(outcome);
                    Action::Recycle
                }
                // Someone queued meanwhile, the directory is gone, or its
                // ACL cannot be read: the directory stays.
                _ => self.done(outcome),
            },
            (Phase::Recycling(outcome), Input::Recycled(_)) => self.done(outcome),
            (
                Phase::Replacing {
                    reader,
                    seq,
                    writer,
                    successor,
                    mine,
                    record,
                },
                Input::Replaced {
                    answer,
                    failed,
                    answer_lost,
                },
            ) => match answer {
                Answer::Ok(czxid) => self.replaced(reader, seq, czxid),
                // The record or the marker refused, the transaction whole:
                // again without them.
                Answer::NoAuth | Answer::Failed | Answer::Exists
                    if record && matches!(failed, Some(ReplaceStep::Record | ReplaceStep::Marker)) =>
                {
                    self.replace(writer, reader, seq, successor, mine, false)
                }
                // An earlier attempt may have been applied: its reader tells.
                _ if answer_lost => {
                    self.phase = Phase::VerifyingReplace {
                        reader: reader.clone(),
                        seq,
                        failed,
                        answer,
                    };
                    Action::Stat { name: reader }
                }
                answer => self.replace_failed(failed, answer),
            },
            (
                Phase::VerifyingReplace {
                    reader,
                    seq,
                    failed,
                    answer,
                },
                Input::Stat(stat),
            ) => match stat {
                Answer::Ok(Some(owner)) if owner.session == self.session => {
                    self.replaced(reader, seq, owner.czxid)
                }
                Answer::Ok(_) | Answer::NoNode => self.replace_failed(failed, answer),
                Answer::SessionEnded => self.fail(Failure::SessionEnded),
                _ => self.fail(Failure::Request),
            },
            // An answer to a question not asked: a driver error.
            (Phase::Done, _) => Action::Done(Outcome::Failed),
            (_, _) => self.fail(Failure::Request),
        }
    }

    /// Ends the acquire here, whatever it was doing (the deadline passed,
    /// or its future was dropped), and withdraws: the first action of the
    /// withdrawal. Also what follows [`Action::GiveUp`] and [`Action::Fail`].
    pub fn withdraw(&mut self) -> Action {
        match std::mem::replace(&mut self.phase, Phase::Ended) {
            // A holder leaves by release; a release or withdrawal under way
            // goes on.
            Phase::Holding => {
                self.phase = Phase::Holding;
                return self.release();
            }
            phase @ (Phase::Deleting { .. } | Phase::ReadingAcl(_) | Phase::Recycling(_) | Phase::Done) => {
                self.phase = phase;
                return Action::Done(Outcome::Deleted);
            }
            // A downgrade's transaction may have made its reader: it goes too.
            Phase::Replacing { reader, .. } | Phase::VerifyingReplace { reader, .. } => {
                self.extras.push(reader)
            }
            _ => {}
        }
        self.acquire = None;
        self.withdrawing = true;
        if self.gone || self.session_ended {
            return self.done(if self.session_ended {
                Outcome::SessionEnded
            } else {
                Outcome::Deleted
            });
        }
        self.delete_mine()
    }

    /// Deletes my node, with the extra nodes of a retried create not
    /// deleted yet; looks for it first if a create's answer is unknown.
    fn delete_mine(&mut self) -> Action {
        match self.me.as_ref() {
            Some((name, _, _)) => {
                let mut queue = vec![name.clone()];
                queue.append(&mut self.extras);
                self.delete(queue, false, false)
            }
            // A create may have been applied: look for the token.
            None if self.creating => self.find_own(),
            None => self.done(Outcome::Deleted),
        }
    }

    /// Begins the release of the held node: deletes it (with the release
    /// record if the grant said so), unless it is known deleted by someone
    /// else ([`Outcome::Lost`] at once).
    pub fn release(&mut self) -> Action {
        if self.phase != Phase::Holding {
            return self.withdraw();
        }
        self.releasing = true;
        if self.gone {
            return self.done(Outcome::Lost);
        }
        let Some((name, _, _)) = self.me.as_ref() else {
            return self.done(Outcome::Deleted);
        };
        let name = name.clone();
        let record = self.mark;
        self.delete(vec![name], record, true)
    }

    /// Feeds what the keeper's read-and-watch of the held node answered;
    /// returns what the keeper does next.
    pub fn held_watch_set(&mut self, answer: Answer<HeldNode>) -> Keep {
        match answer {
            // A data change used up the watch, then the node was deleted
            // and made again under its name (by someone else: the name
            // carries this acquire's token): the guard's node is gone.
            Answer::Ok(node) if Some(node.czxid) != self.czxid() => {
                self.held_deleted();
                Keep::Stop
            }
            Answer::Ok(node) => {
                if node.revocation {
                    self.revoked = true;
                }
                Keep::Wait
            }
            Answer::NoNode => {
                self.held_deleted();
                Keep::Stop
            }
            Answer::Retry => Keep::Watch,
            Answer::SessionEnded => {
                self.held_lost();
                Keep::Stop
            }
            Answer::Exists | Answer::NoAuth | Answer::Unimplemented | Answer::Failed => Keep::Stop,
        }
    }

    /// Feeds the held node's watch event; returns what the keeper does next.
    pub fn held_event(&mut self, event: acquire::NodeEvent) -> Keep {
        match event {
            acquire::NodeEvent::Deleted => {
                self.held_deleted();
                Keep::Stop
            }
            acquire::NodeEvent::SessionEnded => {
                self.held_lost();
                Keep::Stop
            }
            // Data written to the node (a revocation request?): read it and
            // watch again.
            acquire::NodeEvent::DataChanged | acquire::NodeEvent::Other | acquire::NodeEvent::Failed => {
                Keep::Watch
            }
        }
    }

    /// Marks the held lock lost (the session ended, or the lease ran out).
    pub fn held_lost(&mut self) {
        self.lost = true;
    }

    /// Notes a revocation request seen on my node before the grant.
    pub fn note_revoked(&mut self) {
        self.revoked = true;
    }

    fn held_deleted(&mut self) {
        match self.downgrade {
            // Whose deletion it is, the downgrade's answer tells.
            Downgrade::Running { .. } => self.downgrade = Downgrade::Running { deleted: true },
            // The downgrade's own.
            Downgrade::Replaced => {}
            // After the release began, the deletion is the release's.
            Downgrade::None if self.releasing => {}
            Downgrade::None => {
                self.gone = true;
                self.lost = true;
            }
        }
    }

    /// A downgrade's transaction made `reader`: it holds from now on, in
    /// place of the writer (and of my node, deleted with it).
    fn replaced(&mut self, reader: String, seq: i32, czxid: i64) -> Action {
        self.me = Some((reader, seq, czxid));
        self.hold(false)
    }

    /// A downgrade's transaction did not happen: `failed` says why. Unless
    /// the writer node is gone, or the session, the downgrade keeps it:
    /// whatever refused the transaction (a quota, the writer node written
    /// meanwhile, say with a revocation request) left it as it was.
    fn replace_failed(&mut self, failed: Option<ReplaceStep>, answer: Answer<i64>) -> Action {
        match (failed, answer) {
            (_, Answer::SessionEnded) => self.fail(Failure::SessionEnded),
            // Retrying is over: the session is as good as gone.
            (_, Answer::Retry) => self.fail(Failure::Request),
            // The reader after the writer left: decide again.
            (Some(ReplaceStep::Successor), Answer::NoNode) => match self.acquire.as_mut() {
                Some(acquire) => {
                    let action = acquire.list_again();
                    self.waited(action)
                }
                None => self.fail(Failure::Request),
            },
            (Some(ReplaceStep::Mine), Answer::NoNode) => {
                self.gone = true;
                self.phase = Phase::Ended;
                Action::GiveUp
            }
            (Some(ReplaceStep::Writer), Answer::NoNode) => self.fail(Failure::WriterLost),
            // Someone else's node has the reader's name, the writer node was
            // written (its version moved), a quota: the writer node stays.
            _ => {
                self.phase = Phase::Ended;
                Action::GiveUp
            }
        }
    }

    fn hold(&mut self, mark: bool) -> Action {
        self.mark = mark;
        self.phase = Phase::Holding;
        Action::Grant { mark }
    }

    fn create(&mut self) -> Action {
        self.creating = true;
        self.phase = Phase::Creating;
        Action::Create
    }

    fn make_dir(&mut self, container: bool, after_parents: bool) -> Action {
        self.phase = Phase::MakingDir {
            container,
            after_parents,
        };
        Action::CreateDir { container }
    }

    fn fail(&mut self, failure: Failure) -> Action {
        if failure == Failure::SessionEnded {
            self.session_ended = true;
        }
        if failure == Failure::Lost {
            self.gone = true;
        }
        // A withdrawal ends with an outcome, never as an acquire does: an
        // ended session took its nodes along.
        if self.withdrawing {
            return self.done(match failure {
                Failure::SessionEnded => Outcome::SessionEnded,
                _ => Outcome::Failed,
            });
        }
        self.phase = Phase::Ended;
        Action::Fail(failure)
    }

    fn done(&mut self, outcome: Outcome) -> Action {
        self.phase = Phase::Done;
        Action::Done(outcome)
    }

    fn find_own(&mut self) -> Action {
        self.phase = Phase::Finding;
        Action::FindOwn
    }

    fn carries_my_token(&self, child: &str) -> bool {
        child
            .parse::<NodeName>()
            .is_ok_and(|name| name.token() == Some(self.token) && name.layout() == self.layout)
    }

    fn created(&mut self, node: Answer<Created>, listing: Option<Answer<(&[String], i32)>>) -> Action {
        match node {
            Answer::Ok(created) => {
                self.creating = false;
                let seq = created
                    .name
                    .parse::<NodeName>()
                    .map_or(ordering::SEQUENCE_LIMIT, |n| n.seq());
                self.me = Some((created.name, seq, created.czxid));
                let (children, data_length) = match listing {
                    Some(Answer::Ok((children, data_length))) => (Some(children), Some(data_length)),
                    _ => (None, None),
                };
                if self.check_data && data_length != Some(0) {
                    self.phase = Phase::CheckingData;
                    return Action::ReadDirData;
                }
                if self.check_data {
                    self.data_checked = true;
                }
                let name = self.node().unwrap_or_default().to_owned();
                self.run_acquire(children.filter(|c| c.contains(&name)))
            }
            Answer::NoNode => {
                self.creating = false;
                self.dir_attempts += 1;
                if self.dir_attempts > MAX_DIRECTORY_ATTEMPTS {
                    return self.fail(Failure::NoDirectory);
                }
                self.make_dir(container_directory(self.layout), false)
            }
            // The create may have been applied: look for the token.
            Answer::Retry => self.find_own(),
            Answer::SessionEnded => {
                self.creating = false;
                self.fail(Failure::SessionEnded)
            }
            _ => {
                self.creating = false;
                self.fail(Failure::Request)
            }
        }
    }

    /// Stats the next candidate of find-own, or decides once all are known.
    fn check_next(&mut self, candidates: Vec<String>, mut mine: Vec<(String, i64)>) -> Action {
        if let Some(name) = candidates.last().cloned() {
            self.phase = Phase::Checking { candidates, mine };
            return Action::Stat { name };
        }
        // The first made is mine; others come from a retried create.
        mine.sort_by_key(|(_, czxid)| *czxid);
        let mut found = mine.into_iter();
        let Some((first, czxid)) = found.next() else {
            self.creating = false;
            return if self.withdrawing {
                self.done(Outcome::Deleted)
            } else {
                self.create()
            };
        };
        self.creating = false;
        let seq = first
            .parse::<NodeName>()
            .map_or(ordering::SEQUENCE_LIMIT, |n| n.seq());
        self.me = Some((first.clone(), seq, czxid));
        self.extras = found.map(|(name, _)| name).collect();
        if self.withdrawing {
            return self.delete_mine();
        }
        self.delete_extras()
    }

    /// Deletes the next extra node, or goes on once there is none left.
    fn delete_extras(&mut self) -> Action {
        match self.extras.last().cloned() {
            Some(name) => {
                self.phase = Phase::DeletingExtras;
                Action::Delete { name, record: false }
            }
            None => self.found_mine(),
        }
    }

    fn found_mine(&mut self) -> Action {
        if self.check_data {
            self.phase = Phase::CheckingData;
            return Action::ReadDirData;
        }
        self.run_acquire(None)
    }

    fn run_acquire(&mut self, listing: Option<&[String]>) -> Action {
        // The session ended while the node was made: nothing to wait for.
        if self.session_ended {
            return self.fail(Failure::SessionEnded);
        }
        let name = self.node().unwrap_or_default().to_owned();
        let mut acquire = Acquire::new(self.mode, self.may_wait).with_release_markers(self.markers);
        if let Some((writer, _, _)) = &self.replaces {
            acquire = acquire.replacing(writer);
        }
        let action = acquire.created(&name, listing);
        self.acquire = Some(acquire);
        self.waited(action)
    }

    /// The wait's next action, as the contender's.
    fn waited(&mut self, action: acquire::Action) -> Action {
        match action {
            acquire::Action::Grant { mark } => self.hold(mark),
            acquire::Action::Replace { writer, successor } => {
                let mine = self.node().unwrap_or_default().to_owned();
                let reader = mine.parse::<NodeName>().ok().zip(writer.parse::<NodeName>().ok());
                let Some((reader, seq)) = reader.and_then(|(mine, writer)| {
                    let seq = writer.seq();
                    let reader = NodeName::new(mine.identity(), mine.token()?, Mode::Read, seq);
                    Some((reader.to_string(), seq))
                }) else {
                    return self.fail(Failure::InvalidName);
                };
                let record = self.replaces.as_ref().is_some_and(|(_, mark, _)| *mark);
                self.replace(writer, reader, seq, successor, mine, record)
            }
            acquire::Action::GiveUp => {
                self.phase = Phase::Ended;
                Action::GiveUp
            }
            acquire::Action::Fail(failure) => self.fail(failure.into()),
            action => {
                self.phase = Phase::Waiting;
                Action::Acquire(action)
            }
        }
    }

    fn replace(
        &mut self,
        writer: String,
        reader: String,
        seq: i32,
        successor: Option<String>,
        mine: String,
        record: bool,
    ) -> Action {
        self.phase = Phase::Replacing {
            reader: reader.clone(),
            seq,
            writer: writer.clone(),
            successor: successor.clone(),
            mine: mine.clone(),
            record,
        };
        let revoked = self.replaces.as_ref().is_some_and(|(_, _, revoked)| *revoked);
        Action::Replace {
            writer,
            reader,
            successor,
            mine,
            record,
            writer_version: (!revoked).then_some(0),
        }
    }

    fn delete(&mut self, queue: Vec<String>, record: bool, releasing: bool) -> Action {
        let Some(name) = queue.first().cloned() else {
            return self.after_deletion(Outcome::Deleted);
        };
        self.phase = Phase::Deleting {
            queue,
            record,
            releasing,
        };
        Action::Delete { name, record }
    }

    fn deleted(
        &mut self,
        mut queue: Vec<String>,
        record: bool,
        releasing: bool,
        answer: Answer<()>,
        answer_lost: bool,
    ) -> Action {
        self.answer_lost |= answer_lost;
        match answer {
            Answer::Ok(()) => {}
            Answer::NoNode if !releasing => {}
            Answer::NoNode => {
                if !crate::lease::released_by_us(false, true, self.answer_lost) {
                    self.gone = true;
                    return self.done(Outcome::Lost);
                }
            }
            Answer::SessionEnded => return self.done(Outcome::SessionEnded),
            // The server refused the record (no WRITE on the directory, a
            // quota, ...): the transaction, deletion included, did not
            // happen. A plain deletion releases all the same.
            Answer::NoAuth | Answer::Failed | Answer::Exists | Answer::Unimplemented if record => {
                return self.delete(queue, false, releasing);
            }
            Answer::NoAuth | Answer::Failed | Answer::Exists | Answer::Unimplemented | Answer::Retry => {
                return self.done(Outcome::Failed)
            }
        }
        queue.remove(0);
        if !queue.is_empty() {
            return self.delete(queue, false, releasing);
        }
        self.after_deletion(Outcome::Deleted)
    }

    fn after_deletion(&mut self, outcome: Outcome) -> Action {
        match self.seq() {
            // Only a directory known to be the lock's: recycling makes it
            // again empty, and data of someone else's would be gone.
            Some(seq) if ordering::needs_recycling(seq) && (!self.check_data || self.data_checked) => {
                self.phase = Phase::ReadingAcl(outcome);
                Action::ReadDirAcl
            }
            _ => self.done(outcome),
        }
    }
}

/// Whether a lock in `layout` makes its directory a container, which the
/// server removes once it is empty: all but kazoo's layout. kazoo checks its
/// lock path once per lock object and does not recreate it, so a reaped
/// directory would fail kazoo's next acquire (kazoo's own directories are
/// persistent).
pub fn container_directory(layout: Layout) -> bool {
    layout != Layout::Kazoo
}

/// The pause before a request that failed for a broken connection is sent
/// again, or `None` when retrying is over: the pause doubles from 1 ms up
/// to 100 ms, and retries stop once `elapsed` since the first attempt is
/// past twice the session timeout (by then the client has declared the
/// session expired if it could not reconnect, so an error still coming
/// back means its session task is gone).
pub fn retry_pause(elapsed: Duration, session_timeout: Duration, last: Duration) -> Option<Duration> {
    if elapsed > session_timeout * 2 {
        return None;
    }
    Some((last * 2).clamp(Duration::from_millis(1), Duration::from_millis(100)))
}

#[cfg(test)]
#[path = "contender/tests.rs"]
mod tests;
