//! A contender's whole life as a pure state machine: create, wait, hold,
//! release or withdraw.
//!
//! [`Contender`] decides everything one acquire does with ZooKeeper, from
//! the create of its node to the deletion that ends it. It is fed
//! [`Input`]s (the answers to requests) and answers each with the next
//! [`Action`]. It performs no I/O, reads no clock and holds no ZooKeeper
//! types: the driver (`zk_rwlock::SharedLock`) performs the actions, and the
//! simulation (`core/tests/simulation.rs`) runs the same machine against an
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
//!                              (deletes the node, if there is one to delete); a failure
//!                              waits for it and reports whose error [`Failure::ending`] says
//!         Delete{name,record} => delete `name` (with `record`: in one transaction with the
//!                              release record, [`crate::node_name::release_record`], and
//!                              the create and delete of its release marker,
//!                              [`crate::node_name::release_marker`]; its operations in
//!                              order: [`Action::transaction`]),
//!                              retried until answered; feed Deleted { answer, answer_lost }
//!         ReadDirAcl        => read the directory's ACL and child count, keeping the ACL;
//!                              feed DirAcl(children)
//!         Recycle           => delete the directory and create it again, persistent, with the
//!                              ACL just read, in one transaction; feed Recycled
//!         Replace{..}       => a downgrade's transaction: check the node after the writer (if
//!                              named), create the reader with the writer's sequence, delete
//!                              the writer and my node ([`Action::transaction`], which
//!                              also names the operation at a failing index); retried;
//!                              feed Replaced
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
//! answered or retrying is over (see [`crate::backoff::Backoff::request`]); only then is
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

use std::num::NonZeroU32;

use uuid::Uuid;

pub use downgrade::{DowngradeRefused, Downgrading};
pub use ending::{Blame, Ending, Reported, RequestError, Warning};
pub use held::FIRST_WATCH_AFTER;
pub use ops::{child_path, node_data, Op, Transaction};

use crate::acquire::{self, Acquire, Counts, Event};
use crate::node_name::{Layout, Mode};

mod downgrade;
mod ending;
mod held;
mod ops;
mod release;
mod step;

/// How often an acquire makes a lock directory that vanishes under it (it
/// is removed when empty) before it fails with [`Failure::NoDirectory`].
pub const MAX_DIRECTORY_ATTEMPTS: u32 = 10;

/// When an acquire gives up, on the driver's clock (`T`, an instant; the
/// machine reads none).
///
/// A timed acquire always finishes its first look, the create and the
/// listing, and is granted if the lock is free at that look, however short
/// its timeout: the deadline bounds only the wait after it. The look
/// itself is bounded by the later of the deadline and `answers_by`, the
/// instant by which the server's answers are due (the driver's
/// `TRY_TIMEOUT` after the start): while the connection is down, a timed
/// acquire gives up at its deadline or at `answers_by`, whichever is
/// later, as `try_*` gives up at `answers_by`. A zero timeout is `try_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines<T> {
    /// What bounds the requests of the first look.
    pub look: Option<T>,
    /// What bounds the wait and every request after the look.
    pub wait: Option<T>,
}

impl<T: Copy + Ord> Deadlines<T> {
    /// An acquire that gives up at `until` (`try_*`: `until` is its start),
    /// whose look's answers are due by `answers_by`.
    pub fn until(until: T, answers_by: T) -> Deadlines<T> {
        Deadlines {
            look: Some(until.max(answers_by)),
            wait: Some(until),
        }
    }

    /// An acquire that waits as long as it takes.
    pub fn forever() -> Deadlines<T> {
        Deadlines {
            look: None,
            wait: None,
        }
    }
}

/// How long an acquire may wait, as its caller asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patience<T> {
    /// Give up at once if the lock is not free (`try_*`, or a zero timeout).
    None,
    /// Give up at this instant.
    Until(T),
    /// Wait as long as it takes.
    Forever,
}

impl<T: Copy + Ord> Patience<T> {
    /// Waiting `timeout`, whose end `until` gives (`None`: beyond the
    /// clock's range, as `Duration::MAX`: forever); a zero timeout is a
    /// `try_*`, which still finds a free lock.
    pub fn within(
        timeout: std::time::Duration,
        until: impl FnOnce(std::time::Duration) -> Option<T>,
    ) -> Patience<T> {
        if timeout.is_zero() {
            return Patience::None;
        }
        until(timeout).map_or(Patience::Forever, Patience::Until)
    }

    /// The deadlines of an acquire begun at `start` whose look's answers
    /// are due by `answers_by`: a `try_*` gives up at its start, and every
    /// acquire but one that waits forever finishes its first look
    /// ([`Deadlines::until`]).
    pub fn deadlines(self, start: T, answers_by: T) -> Deadlines<T> {
        match self {
            Patience::None => Deadlines::until(start, answers_by),
            Patience::Until(until) => Deadlines::until(until, answers_by),
            Patience::Forever => Deadlines::forever(),
        }
    }

    /// Whether the acquire may wait behind another holder at all
    /// ([`Contender::new`]'s `may_wait`): all but a `try_*`.
    pub fn may_wait(self) -> bool {
        !matches!(self, Patience::None)
    }
}

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
    /// The listing that would make the acquire wait is larger than its
    /// limit ([`Contender::with_listing_limit`]): my node is withdrawn.
    ListingTooLarge,
    /// A semaphore's: a contender before mine carries another permit
    /// count ([`Contender::conflict`]): my node is withdrawn.
    PermitsDisagree,
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
            acquire::Failure::ListingTooLarge => Failure::ListingTooLarge,
            acquire::Failure::PermitsDisagree => Failure::PermitsDisagree,
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
        /// An earlier attempt (of this transaction, or of the one with the
        /// record before it) lost its answer: it may have been applied.
        answer_lost: bool,
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
    /// This session is known to read its own nodes in this lock
    /// ([`Contender::with_own_readable`]).
    own_readable: bool,
    /// The largest listing to queue behind ([`Acquire::with_listing_limit`]).
    listing_limit: Option<usize>,
    /// A downgrade's reader: the writer node of mine it replaces, whether
    /// that writer's release is due with the record, and whether a
    /// revocation request on it is known.
    replaces: Option<(String, bool, bool)>,
    downgrade: Downgrade,
    /// The fencing token of the writer a downgrade's reader took over
    /// ([`Contender::take_over`]).
    inherited_token: Option<i64>,
    /// The wait follows its place in the queue ([`Contender::with_place`]).
    follow_place: bool,
    /// A semaphore's permit count ([`Contender::with_permits`]).
    permits: Option<NonZeroU32>,
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
            own_readable: false,
            listing_limit: None,
            replaces: None,
            downgrade: Downgrade::None,
            inherited_token: None,
            follow_place: false,
            permits: None,
        }
    }

    /// The contender is a counting semaphore's with `permits` permits
    /// (`None`, the default: a read/write lock's): it holds one while fewer
    /// than `permits` contenders precede it ([`Acquire::with_permits`]),
    /// its node is named by [`crate::semaphore::prefix`], and its release
    /// is a plain deletion.
    #[must_use]
    pub fn with_permits(mut self, permits: Option<NonZeroU32>) -> Contender {
        self.permits = permits;
        self
    }

    /// The name of my node without its sequence, as passed to the
    /// sequential create, for an `identity`: a semaphore's
    /// ([`crate::semaphore::prefix`]) or the layout's
    /// ([`Layout::prefix`]); `None` if the layout has no name for the
    /// mode, or a semaphore is asked in another layout than the native.
    pub fn prefix(&self, identity: &str) -> Option<String> {
        match self.permits {
            Some(permits) if self.layout == Layout::Native && self.mode == Mode::Write => {
                Some(crate::semaphore::prefix(identity, self.token, permits))
            }
            Some(_) => None,
            None => self.layout.prefix(identity, self.token, self.mode),
        }
    }

    /// The predecessor that carries another permit count, and its count,
    /// after [`Failure::PermitsDisagree`].
    pub fn conflict(&self) -> Option<(&str, u32)> {
        self.acquire.as_ref().and_then(Acquire::conflict)
    }

    /// The first action: create my node.
    pub fn start(&mut self) -> Action {
        self.create()
    }

    /// My node's child name, once known.
    pub fn node(&self) -> Option<&str> {
        self.me.as_ref().map(|(name, _, _)| name.as_str())
    }

    /// True while the wait listens to the listing's watch
    /// ([`Acquire::listens_to_listing`]).
    pub fn listens_to_listing(&self) -> bool {
        self.acquire.as_ref().is_some_and(Acquire::listens_to_listing)
    }

    /// True if the acquire's listings leave a watch on the lock directory's
    /// children ([`Acquire::watches_listing`]): a lock's, not a semaphore's
    /// nor a downgrade's reader's.
    pub fn watches_listing(&self) -> bool {
        self.permits.is_none() && self.replaces.is_none()
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

    /// True during the acquire's first look: until a listing found the
    /// lock taken. The create, its listing, and whatever it takes to find
    /// my node or make the directory belong to the look; setting the
    /// watches begins the wait.
    pub fn looking(&self) -> bool {
        !self.acquire.as_ref().is_some_and(Acquire::found_taken)
    }

    /// The instant that bounds the next request now: the look's deadline
    /// while [`Contender::looking`], the wait's after.
    pub fn deadline<T: Copy + Ord>(&self, deadlines: Deadlines<T>) -> Option<T> {
        if self.looking() {
            deadlines.look
        } else {
            deadlines.wait
        }
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

    /// Whether this session is known to read its own nodes in this lock,
    /// on its current connection (off by default): a wait then sets the
    /// watches on my node and the release marker in one request
    /// (`acquire::Action::SetWatches { together }`); the first asks with
    /// `getData`, which says NoAuth where it may not read. A driver keeps
    /// what [`Contender::own_readable`] learnt for the lock's next acquire
    /// on the same connection.
    #[must_use]
    pub fn with_own_readable(mut self, known: bool) -> Contender {
        self.own_readable = known;
        self
    }

    /// True once this session is known to read its own node: given
    /// ([`Contender::with_own_readable`]) or learnt
    /// ([`Contender::own_node_read`]).
    pub fn own_readable(&self) -> bool {
        self.own_readable
    }

    /// The session's connection changed (a reconnection): what it learnt
    /// of reading my node may not hold on the new one (an identity bound to
    /// the connection), so the wait asks with `getData` again, and my
    /// node's watch from an older connection no longer counts
    /// ([`Acquire::connection_changed`]).
    pub fn connection_changed(&mut self) {
        self.own_readable = false;
        if let Some(acquire) = self.acquire.as_mut() {
            acquire.connection_changed();
        }
    }

    /// A read of my node answered, with the czxid of the node read: this
    /// session reads its own nodes if it is the node I made. Another czxid
    /// is a node made again under my name by someone else: mine is gone
    /// (the wait ends `Lost`, as at its deletion; the other node is not
    /// mine to delete), and it says nothing of my nodes' ACL.
    pub fn own_node_read(&mut self, czxid: i64) {
        match self.czxid() {
            Some(mine) if mine == czxid => self.own_readable = true,
            Some(_) => self.event(Event::Own(acquire::NodeEvent::Deleted)),
            None => {}
        }
    }

    /// The largest listing to queue behind ([`Acquire::with_listing_limit`];
    /// `None`, the default: no limit).
    #[must_use]
    pub fn with_listing_limit(mut self, limit: Option<usize>) -> Contender {
        self.listing_limit = limit;
        self
    }

    /// Whether the wait follows its place in the queue
    /// ([`Acquire::with_place`]; off by default).
    #[must_use]
    pub fn with_place(mut self, on: bool) -> Contender {
        self.follow_place = on;
        self
    }

    /// Which watched nodes' watches the carrier holds set and unfired
    /// ([`Acquire::watches_pending`]).
    pub fn watches_pending(&mut self, pending: &[String]) {
        if let Some(acquire) = self.acquire.as_mut() {
            acquire.watches_pending(pending);
        }
    }

    /// The nodes a wait that polls looks at ([`Acquire::polled`]).
    pub fn polled(&self) -> &[String] {
        self.acquire.as_ref().map_or(&[], Acquire::polled)
    }

    /// The acquire's place in the queue, as of its last listing (see
    /// [`Contender::with_place`]).
    pub fn place(&self) -> Option<&acquire::Place> {
        self.acquire.as_ref().and_then(Acquire::place)
    }

    /// The listing refused, after [`Failure::ListingTooLarge`].
    pub fn refused_listing(&self) -> Option<acquire::RefusedListing> {
        self.acquire.as_ref().and_then(Acquire::refused_listing)
    }

    /// The mark of the held node: whether its release is due with the
    /// release record.
    pub fn mark(&self) -> bool {
        self.mark
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

#[cfg(test)]
mod tests;
