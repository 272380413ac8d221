//! When a wake-up grants the lock: the acquire rules as a pure state machine.
//!
//! [`Acquire`] holds everything one acquire knows: its node's name, its
//! watches, whether the connection was interrupted since they were set,
//! what it is waiting for. It is fed [`Input`]s (the answers to requests
//! and the events that arrive) and answers each with the next [`Action`].
//! It performs no I/O, reads no clock and holds no ZooKeeper types: the
//! driver (`zk_rwlock::SharedLock`, through [`crate::contender`]) performs
//! the actions, and a simulation
//! (`core/tests/simulation.rs`) runs many machines against an in-memory model of
//! ZooKeeper. Which contender precedes which is [`crate::ordering`]'s
//! business; this module decides what to *do* about it.
//!
//! # The run loop
//!
//! [`crate::contender::Contender`] runs one machine per acquire, from its
//! node's create on: its `Action::Acquire` carries this machine's actions
//! and its `Input::Acquire` their answers. On its own, a driver runs it
//! like this:
//!
//! ```text
//! create my node (ephemeral, sequential; pipelined with a first listing)
//! action = machine.created(name, listing if it contains my node)
//! loop {
//!     match action {
//!         List            => action = machine.step(Listed(list the directory, retried until answered))
//!         SetWatches{..}  => forget session changes seen so far;
//!                            send a data watch on `watched` (and on my own node if `own`),
//!                            and an `exists` watch on `marker` if any, all pipelined;
//!                            action = machine.step(WatchesSet{..})
//!         Wait{poll}      => wait until any of these has something: my node's watch, the
//!                            marker's watch, a session state change, the watched node's
//!                            watch (or, with `poll`, `exists` checks until it is gone),
//!                            the deadline; of all that arrived (an [`Arrived`]), feed the
//!                            first of [`Arrived::in_order`] as an input and leave the rest
//!                            where it arrived (none: a marker event that means nothing,
//!                            wait again)
//!         Rewatch{..}     => action = machine.step(Rewatched(data watch on `watched` again))
//!         ReadRecord{..}  => action = machine.step(RecordRead(one multi-read: the lock
//!                            directory's data and my node))
//!         CheckOwn        => action = machine.step(OwnChecked(`exists` on my node, retried))
//!         Grant{mark}     => return a guard (that releases with the release record if `mark`)
//!         GiveUp          => delete my node, return "not acquired"
//!         Fail(why)       => return the error (withdrawing my node for `Exhausted`)
//!     }
//!     before feeding any answer: machine.event(..) for each event that arrived
//!     meanwhile (my node's watch fired, the marker's `NodeCreated`, the session's
//!     state changed), in the order of [`Arrived::in_order`]
//!     after every step: drop the marker's watch (the client removes it from the
//!     server) once `machine.marker_watch_needed()` is false and it has not fired
//! }
//! ```
//!
//! A request that the deadline overtakes is answered with
//! [`Input::Deadline`]. Retryable errors (`zk_rwlock::is_retryable`) are
//! [`Reply::Retry`]; requests that the driver retries until they are
//! answered (`List`, `CheckOwn`) report one only once retrying is over.
//!
//! # Rules
//!
//! - A listing is decided by [`crate::ordering::decide`]: granted, wait on a
//!   node, or withdraw (the counter's limit). A waiter whose node is missing
//!   has lost it.
//! - A waiter watches the node [`crate::ordering`] names, and also its own
//!   node when a hand-off could grant it (`deletion_grants` or
//!   `release_grants`): its deletion by someone else must be known before a
//!   hand-off trusts that the node still exists.
//! - The watched node's deletion grants at once if `deletion_grants`; if only
//!   `release_grants`, when its release marker's creation
//!   ([`crate::node_name::release_marker`]) was reported since the watches
//!   were set, or else once the release record names it and my node is
//!   still there; otherwise it means "list again".
//! - With `release_grants` but not `deletion_grants`, the waiter also sets
//!   an `exists` watch on the watched node's release marker. Only
//!   `NodeCreated` on a marker found absent counts: a marker that exists
//!   when watched is a stranger's, and its events say nothing. The
//!   marker's watch is kept only while the wait on that node lasts
//!   ([`Acquire::marker_watch_needed`]): a marker never created (the
//!   watched node gave up, or its session ended) leaves no watch behind.
//! - A data change on the watched node grants nothing: it is watched again
//!   (a revocation request on a holder, `zk_rwlock::SharedLock::revoke`, is
//!   one). A data change on my own node means "list again": a revocation
//!   request on a waiter grants it nothing and does not end its wait; the
//!   driver reads my node's data when it watches it again, and a request
//!   it saw is recorded for good and set on the guard at the grant. A
//!   request the driver did not see before the grant is seen by the
//!   guard's first watch.
//! - Before a hand-off grants without a new listing, my node must be known to
//!   exist: its watch has not fired, and if the connection was interrupted
//!   since the watches were set (a reconnect re-registers watches in any
//!   order, so the order of their events proves nothing), or my node cannot
//!   be watched (its ACL), one `exists` asks. A watch set on an older
//!   connection counts as not set (the reconnection sets it again without
//!   a READ check, and a server that finds READ on my node taken away
//!   sends no event of it as it fires): the next listing's wait sets it
//!   again.
//! - A native writer that waited releases with the release record
//!   (`Grant { mark }`); in a peer's layout, a writer never does (see
//!   [`crate::ordering`], "Peers and the release record").
//! - An acquire that may not wait (`try_*`) gives up at the first wait.

use crate::lease::SessionState;
use crate::limits;
use crate::node_name::{self, parse_parts, Layout, Mode};
use crate::ordering::{self, Decision, OrderingError};
use crate::semaphore::{self, SemaphoreError};

/// The answer to a request, reduced to what the rules look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply<T> {
    /// The request succeeded.
    Ok(T),
    /// The node does not exist.
    NoNode,
    /// The node's ACL refuses this identity.
    NoAuth,
    /// A retryable error (the connection was lost): the request may or may
    /// not have been applied.
    Retry,
    /// Any other error: the acquire fails with it.
    Failed,
}

/// What happened to a watched node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeEvent {
    /// The node was deleted.
    Deleted,
    /// Data was written to the node.
    DataChanged,
    /// The session is over (expired, closed, authentication failed).
    SessionEnded,
    /// Anything else a watch can report.
    Other,
    /// Watching (or polling) the node failed for good: the acquire fails.
    Failed,
}

/// The kind of a watch's event, as a ZooKeeper client reports it (the
/// core's copy: it depends on no client). What it means is [`NodeEvent::of`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchedKind {
    /// The session's state changed (no node event).
    Session,
    /// The node was created.
    Created,
    /// The node was deleted.
    Deleted,
    /// The node's data was written.
    DataChanged,
    /// The node's children changed.
    ChildrenChanged,
}

impl NodeEvent {
    /// What a watch's event of `kind`, carrying the session `state`, means
    /// for the watched node: a state that ends the session is its end
    /// whatever the kind (a watch hears of the end before the client's
    /// state says so); otherwise a deletion, a data change, or nothing the
    /// rules look at.
    pub fn of(kind: WatchedKind, state: SessionState) -> NodeEvent {
        if state.is_over() {
            return NodeEvent::SessionEnded;
        }
        match kind {
            WatchedKind::Deleted => NodeEvent::Deleted,
            WatchedKind::DataChanged => NodeEvent::DataChanged,
            WatchedKind::Session | WatchedKind::Created | WatchedKind::ChildrenChanged => NodeEvent::Other,
        }
    }
}

impl Event {
    /// What a change of the session's `state` means for a wait: the
    /// session's end, or an interruption (connection lost or re-established,
    /// read-only or not), after which watch events may come in any order.
    pub fn of_session(state: SessionState) -> Event {
        if state.is_over() {
            Event::SessionEnded
        } else {
            Event::Interrupted
        }
    }
}

/// An event that arrives without being asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// My own node's watch fired.
    Own(NodeEvent),
    /// The watched node's watch fired, or polling found it gone
    /// ([`NodeEvent::Deleted`]).
    Watched(NodeEvent),
    /// The watched node's release marker was created (`NodeCreated` on the
    /// `exists` watch of [`Action::SetWatches`]'s `marker`): a holder's
    /// release is deleting the watched node in the same transaction. The
    /// marker's other events are not reported.
    Released,
    /// The connection was lost or re-established: watch events may come in
    /// any order until the watches are set again.
    Interrupted,
    /// The session is over.
    SessionEnded,
    /// The watch a listing left on the lock directory's children fired: a
    /// child came or went since that listing (or, with
    /// [`NodeEvent::SessionEnded`], the session is over). It proves
    /// nothing about which child: a wait whose watched node's watch was set
    /// unread ([`Action::SetWatches`]'s `blind`) reads that node once, in
    /// case this identity may not read it (the server then tells nothing of
    /// its deletion).
    Listing(NodeEvent),
}

/// The sources a wait listens to ([`Arrived`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// My own node's data watch.
    Own,
    /// The `exists` watch on the watched node's release marker.
    Marker,
    /// The session's state changes.
    Session,
    /// The watched node's data watch (or polling it).
    Watched,
    /// The watch the last listing left on the lock directory's children.
    Listing,
    /// The deadline.
    Deadline,
}

/// What has arrived from each source of a wait, all that was ready at
/// once: when a wait wakes, or while a request was in flight (then only my
/// own node's watch, the marker's and the session's). The machine decides
/// the order they are taken in, and which mean nothing
/// ([`Arrived::in_order`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Arrived {
    /// My own node's watch fired.
    pub own: Option<NodeEvent>,
    /// The marker's watch fired with an event of this kind.
    pub marker: Option<WatchedKind>,
    /// The session's state changed to this.
    pub session: Option<SessionState>,
    /// The watched node's watch fired (or polling it ended).
    pub watched: Option<NodeEvent>,
    /// The listing's watch on the directory's children fired.
    pub listing: Option<NodeEvent>,
    /// The deadline passed.
    pub deadline: bool,
}

impl Arrived {
    /// True if nothing arrived.
    pub fn is_empty(&self) -> bool {
        *self == Arrived::default()
    }

    /// What arrived, in the order it is taken, each with what it means:
    ///
    /// 1. my own node's event: its deletion (or the session's end) must be
    ///    known before any hand-off trusts that the node exists;
    /// 2. the release marker's: a release's transaction creates the marker
    ///    and deletes the watched node, and their events come in that
    ///    order, so if both arrived the creation is taken first. Only its
    ///    creation means [`Event::Released`]; any other event of the
    ///    marker's watch (a stranger's marker that existed when watched)
    ///    means nothing: `None`, consumed and dropped;
    /// 3. the session's change ([`Event::of_session`]);
    /// 4. the watched node's event;
    /// 5. the listing's watch ([`Event::Listing`]): after the watched
    ///    node's, whose deletion fires it too (its data watch's event
    ///    comes first), so that a deletion is taken as one, not as a
    ///    reason to read the node;
    /// 6. the deadline ([`Input::Deadline`]), last: what arrived before it
    ///    counts.
    ///
    /// A wait takes the first and leaves the rest where they arrived, for
    /// its next look or the next request's; what arrives during a request
    /// is taken in full, in this order.
    pub fn in_order(&self) -> Vec<(Source, Option<Input<'static>>)> {
        let mut taken = Vec::new();
        if let Some(event) = self.own {
            taken.push((Source::Own, Some(Input::Event(Event::Own(event)))));
        }
        if let Some(kind) = self.marker {
            let released = (kind == WatchedKind::Created).then_some(Input::Event(Event::Released));
            taken.push((Source::Marker, released));
        }
        if let Some(state) = self.session {
            taken.push((Source::Session, Some(Input::Event(Event::of_session(state)))));
        }
        if let Some(event) = self.watched {
            taken.push((Source::Watched, Some(Input::Event(Event::Watched(event)))));
        }
        if let Some(event) = self.listing {
            taken.push((Source::Listing, Some(Input::Event(Event::Listing(event)))));
        }
        if self.deadline {
            taken.push((Source::Deadline, Some(Input::Deadline)));
        }
        taken
    }
}

/// What a multi-read of the release record and my own node found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The lock directory's data names the watched node: it held the lock
    /// and released it.
    pub names_watched: bool,
    /// What reading my own node gave.
    pub own: Reply<()>,
}

/// An input to [`Acquire::step`]: the answer to the last [`Action`], or
/// an event that ends a wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input<'a> {
    /// The answer to [`Action::List`]: the lock directory's child names.
    Listed(Reply<&'a [String]>),
    /// The answers to [`Action::SetWatches`]: on my own node (`None` if not
    /// asked), on the watched node, and on its release marker (`None` if not
    /// asked).
    WatchesSet {
        /// The data watch on my own node.
        own: Option<Reply<()>>,
        /// The data watch on the watched node.
        watched: Reply<()>,
        /// The `exists` watch on the release marker: `Ok(false)` if the
        /// marker is absent (the watch waits for its creation), `Ok(true)`
        /// if it exists (a stranger's: no signal).
        marker: Option<Reply<bool>>,
        /// The data watches on the other nodes of a semaphore's wait, in
        /// the order asked.
        also: Vec<Reply<()>>,
        /// The watched node's watch went in the `SetWatches` request
        /// (`Action::SetWatches { blind }`): set without reading the node.
        blind: bool,
    },
    /// The answer to [`Action::Rewatch`].
    Rewatched(Reply<()>),
    /// The answer to [`Action::ReadWatched`].
    WatchedRead(Reply<()>),
    /// The answer to [`Action::ReadRecord`].
    RecordRead(Reply<Record>),
    /// The answer to [`Action::CheckOwn`]: whether my node exists.
    OwnChecked(Reply<bool>),
    /// An event, during [`Action::Wait`].
    Event(Event),
    /// The deadline passed.
    Deadline,
}

/// Why an acquire failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// My node was deleted by someone else (or with my session).
    Lost,
    /// The session is over.
    SessionEnded,
    /// The sequence counter is used up: withdraw my node and fail.
    Exhausted,
    /// My node's name is not a contender name.
    InvalidName,
    /// A request failed for good: the driver returns its error.
    Request,
    /// A downgrade's writer node is not in the listing
    /// ([`Acquire::replacing`]): someone else deleted it.
    WriterLost,
    /// The listing that would make me wait is larger than the limit
    /// ([`Acquire::with_listing_limit`]): withdraw my node and fail
    /// ([`Acquire::refused_listing`] says how large it was).
    ListingTooLarge,
    /// A semaphore's ([`Acquire::with_permits`]): a contender before mine
    /// carries another permit count ([`Acquire::conflict`] says which):
    /// withdraw my node and fail.
    PermitsDisagree,
}

/// A listing too large to queue behind ([`Failure::ListingTooLarge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefusedListing {
    /// The children listed.
    pub children: usize,
    /// The contender nodes among them (named as contenders, in any layout;
    /// the rest are strangers' nodes).
    pub contenders: usize,
    /// Its size ([`crate::limits::listing_size`]).
    pub size: usize,
    /// The limit it exceeds.
    pub limit: usize,
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// List the lock directory (retried until answered).
    List,
    /// Forget the session changes seen so far, then set a data watch on
    /// `watched` (a child name), and on my own node if `own`, and an
    /// `exists` watch on `marker` if any.
    SetWatches {
        /// Also watch my own node.
        own: bool,
        /// The child name of the node to watch.
        watched: String,
        /// The child name of the watched node's release marker, to watch
        /// with `exists`.
        marker: Option<String>,
        /// A semaphore's wait ([`Acquire::with_permits`]): the other nodes
        /// it watches; their events are the watched node's
        /// ([`Event::Watched`]).
        also: Vec<String>,
        /// A semaphore's wait: the watches are left to fire once not
        /// needed (their nodes are ahead in the queue and go in their
        /// turn), not removed.
        lingers: bool,
        /// A semaphore's wait: the nodes of `watched` and `also` whose
        /// watch is set from an earlier wait and has not fired: not asked
        /// again, their pending watches kept (answered as set).
        kept: Vec<String>,
        /// My own node's and the marker's watches may go in one
        /// `SetWatches` request relative to my node's czxid, which sets
        /// them without reading and fires at once for what changed since:
        /// my node gone or written to, the marker there. Only with both
        /// `own` and `marker`, and while no write to my node was seen (a
        /// data watch relative to the czxid would fire again at once;
        /// `getData` reads what was written). `crate::wire` sends them
        /// together only while the contender knows, on this connection,
        /// that it reads its node (`Contender::own_readable`: the server
        /// sends no event of a node it may not read, and this request says
        /// nothing of it). A request built before a disconnection is
        /// written on the next connection, where READ may differ: the
        /// session change that comes with it marks the wait interrupted,
        /// and a hand-off then checks my node with `exists` before it
        /// grants (keep that check: it is what makes this window safe).
        together: bool,
        /// The watched node's data watch may go in that `SetWatches` too
        /// (with `together`): set without reading it, so the server says
        /// nothing if this identity may not read it, and its deletion would
        /// then never be told. Only while the listing that decided the wait
        /// left its watch on the directory's children and it has not
        /// fired: any child's coming or going fires it
        /// ([`Event::Listing`]), and the wait then reads the watched node
        /// once ([`Action::ReadWatched`]), which says `NoAuth` if it may
        /// not (it is then polled).
        blind: bool,
    },
    /// Read the watched node (no watch: the one set is kept), to learn
    /// whether this identity may read it: its watch was set unread
    /// (`SetWatches { blind }`) and the directory's children changed.
    ReadWatched {
        /// The child name of the watched node.
        watched: String,
    },
    /// Wait for the next event. With `poll`, the watched node cannot be
    /// watched (its ACL): check it with `exists` until it is gone.
    Wait {
        /// Poll the watched node instead of waiting on its watch.
        poll: bool,
    },
    /// Set the data watch on `watched` again.
    Rewatch {
        /// The child name of the watched node.
        watched: String,
    },
    /// Read, in one multi-read, the lock directory's data and my own node.
    ReadRecord {
        /// The child name the record must name.
        watched: String,
    },
    /// Ask whether my node exists (retried until answered).
    CheckOwn,
    /// The lock is mine.
    Grant {
        /// Release with the release record.
        mark: bool,
    },
    /// Not acquired (deadline, or not free for `try_*`): delete my node.
    GiveUp,
    /// The acquire fails.
    Fail(Failure),
    /// A downgrade's: a reader node with the sequence of `writer` (the
    /// writer node of mine that holds the lock, [`Acquire::replacing`])
    /// takes its place, in one transaction that checks that `successor`
    /// (the node right after `writer`) still exists, creates that reader,
    /// deletes `writer` and deletes my node (see
    /// [`crate::ordering::downgrade`]).
    Replace {
        /// The child name of the writer node to delete.
        writer: String,
        /// The node to check, if it is not my own (whose deletion checks it).
        successor: Option<String>,
    },
}

/// Counts of what one acquire did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Listings of the lock directory, the first included.
    pub listings: u32,
    /// Events that woke a wait (watch events and polls that found the node gone).
    pub wakeups: u32,
    /// Retryable errors seen.
    pub retries: u32,
    /// The grant came from a watch event, without a new listing.
    pub handoff: bool,
    /// The grant came from the release marker's event (with no read of
    /// the release record).
    pub marked: bool,
}

/// The state of my own node's watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnWatch {
    /// Not set (or its event was used).
    None,
    /// Set and not fired.
    Set,
    /// Fired with a change that is not a deletion: list again.
    Fired,
}

/// The state of the `exists` watch on the watched node's release marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MarkerWatch {
    /// Not asked for, refused, or the marker existed when watched.
    None,
    /// Asked for, not answered yet.
    Asked,
    /// Set on the absent marker, not fired.
    Set,
    /// Its `NodeCreated` was reported.
    Seen,
}

/// What the machine waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// Not created yet.
    Creating,
    Listing,
    SettingWatches(Waiting),
    Waiting(Waiting, bool),
    Rewatching(Waiting),
    ReadingWatched(Waiting),
    ReadingRecord(Waiting),
    CheckingOwn,
    Done,
}

/// The node waited on, and what its deletion means.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Waiting {
    watched: String,
    /// A semaphore's other watched nodes (see [`Action::SetWatches`]).
    also: Vec<String>,
    /// The watched nodes this identity may not read (`NoAuth`): the server
    /// sends a watcher no event of a node it may not read, so they are
    /// polled ([`Acquire::polled`]).
    unreadable: Vec<String>,
    deletion_grants: bool,
    release_grants: bool,
}

/// An acquire's place in the queue, as its last listing showed it
/// ([`Acquire::with_place`]): what a service shows as "you are 3rd in
/// line", at no cost in requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// My node's child name.
    pub node: String,
    /// How many contenders came before my node, in any mode
    /// ([`crate::ordering::ahead`]).
    pub ahead: usize,
    /// The node my wait watches; `None` once granted (an acquire that
    /// fails or gives up keeps the node it waited on).
    pub waits_on: Option<String>,
}

/// One acquire's state: see the [module documentation](self).
#[derive(Debug, Clone)]
pub struct Acquire {
    mode: Mode,
    may_wait: bool,
    me: String,
    phase: Phase,
    own_watch: OwnWatch,
    marker: MarkerWatch,
    /// Release markers are watched (see [`Acquire::with_release_markers`]).
    markers: bool,
    own_unreadable: bool,
    /// A write to my node was seen (its watch fired with a data change).
    own_written: bool,
    /// The last listing left a watch on the directory's children
    /// ([`Acquire::watches_listing`]) and it has not fired.
    listing_watch: bool,
    /// The wait's watched node's watch was set unread
    /// (`SetWatches { blind }`), and no read of it has answered since.
    blind: bool,
    interrupted: bool,
    waited: bool,
    foreign: bool,
    end_state: Option<Failure>,
    counts: Counts,
    /// A downgrade's reader: the writer node of mine it may replace.
    replacing: Option<String>,
    /// The largest listing to queue behind ([`Acquire::with_listing_limit`]).
    listing_limit: Option<usize>,
    /// A listing checked against the limit and found fitting: the wait
    /// began, and later listings are not checked.
    admitted: bool,
    /// The listing refused ([`Failure::ListingTooLarge`]).
    refused: Option<RefusedListing>,
    /// The place is followed ([`Acquire::with_place`]), and where it was last.
    follow_place: bool,
    place: Option<Place>,
    /// A semaphore's permit count ([`Acquire::with_permits`]).
    permits: Option<u32>,
    /// The disagreeing predecessor, after [`Failure::PermitsDisagree`].
    conflict: Option<(String, u32)>,
    /// A semaphore's watched nodes whose watch is set and has not fired
    /// (as far as the machine knows: an event of unknown origin clears
    /// them all).
    live: Vec<String>,
}

impl Acquire {
    /// A machine for an acquire in `mode`; `may_wait` is false for `try_*`.
    pub fn new(mode: Mode, may_wait: bool) -> Acquire {
        Acquire {
            mode,
            may_wait,
            me: String::new(),
            phase: Phase::Creating,
            own_watch: OwnWatch::None,
            marker: MarkerWatch::None,
            markers: true,
            own_unreadable: false,
            own_written: false,
            listing_watch: false,
            blind: false,
            interrupted: false,
            waited: false,
            foreign: false,
            end_state: None,
            counts: Counts::default(),
            replacing: None,
            listing_limit: None,
            admitted: false,
            refused: None,
            follow_place: false,
            place: None,
            permits: None,
            conflict: None,
            live: Vec::new(),
        }
    }

    /// The acquire is a counting semaphore's with `permits` permits
    /// (`None`, the default: a read/write lock's). Its listings are decided
    /// by [`crate::semaphore::decide`]: granted while fewer than `permits`
    /// contenders precede my node, else wait on the `permits` nodes right
    /// before it, each with a data watch left to fire once not needed
    /// (`SetWatches { lingers }`) and polled if this identity may not read
    /// it ([`Acquire::polled`]), listing again when any of them is deleted
    /// (or taking the permit, when its deletion alone grants it) or written
    /// to. No release marker or record: a permit's release is a plain
    /// deletion. A predecessor carrying another count
    /// fails the acquire with [`Failure::PermitsDisagree`]. A semaphore's
    /// acquire is never a downgrade's ([`Acquire::replacing`] is ignored).
    #[must_use]
    pub fn with_permits(mut self, permits: Option<u32>) -> Acquire {
        self.permits = permits;
        self
    }

    /// The predecessor that carries another permit count, and its count,
    /// after [`Failure::PermitsDisagree`].
    pub fn conflict(&self) -> Option<(&str, u32)> {
        self.conflict
            .as_ref()
            .map(|(node, permits)| (node.as_str(), *permits))
    }

    /// Whether the acquire follows its place in the queue ([`Acquire::place`]):
    /// each listing is counted once more (no request). Off by default.
    #[must_use]
    pub fn with_place(mut self, on: bool) -> Acquire {
        self.follow_place = on;
        self
    }

    /// The acquire's place in the queue, as of its last listing that
    /// granted it or made it wait (followed only [`Acquire::with_place`]);
    /// its grant says `waits_on: None`. An acquire that ends otherwise
    /// (lost, failed, given up) keeps the last place it had.
    pub fn place(&self) -> Option<&Place> {
        self.place.as_ref()
    }

    /// The largest listing (in bytes, [`crate::limits::listing_size`]) this
    /// acquire queues behind: one that finds the lock taken and the listing
    /// larger does not wait but fails with [`Failure::ListingTooLarge`]
    /// (the driver withdraws its node). Only the first listing that makes
    /// it wait is checked: a waiter is never turned away later. `None` (the
    /// default): no limit.
    #[must_use]
    pub fn with_listing_limit(mut self, limit: Option<usize>) -> Acquire {
        self.listing_limit = limit;
        self
    }

    /// The listing refused, after [`Failure::ListingTooLarge`].
    pub fn refused_listing(&self) -> Option<RefusedListing> {
        self.refused
    }

    /// This acquire is a downgrade's: my node is a reader made while my
    /// writer node `writer` holds the lock, and it never waits. Its listing
    /// is decided by [`crate::ordering::downgrade`]: a reader right after
    /// the writer (my node, or a reader queued before it) gives
    /// [`Action::Replace`]; a writer right after it, which may take its
    /// deletion for its grant (`deletion_grants`, in this version and the
    /// ones before), gives [`Action::GiveUp`]: the downgrade keeps the
    /// writer node and withdraws mine; the writer missing fails with
    /// [`Failure::WriterLost`].
    #[must_use]
    pub fn replacing(mut self, writer: &str) -> Acquire {
        self.replacing = Some(writer.to_owned());
        self
    }

    /// Whether a release marker's creation counts as its node's release
    /// (the default). Without, a waiter never watches markers and always
    /// reads the release record: for directories whose ACL lets someone
    /// create children who must not be able to forge a release
    /// (`zk_rwlock::LockBuilder::release_markers`).
    #[must_use]
    pub fn with_release_markers(mut self, on: bool) -> Acquire {
        self.markers = on;
        self
    }

    /// True if this acquire's listings leave a watch on the lock
    /// directory's children (`getChildren` with a watch: no request more):
    /// a lock's, not a semaphore's nor a downgrade's. Its event lets a wait
    /// set its watched node's watch unread, in the same request as my own
    /// node's (`SetWatches { blind }`).
    pub fn watches_listing(&self) -> bool {
        self.permits.is_none() && self.replacing.is_none()
    }

    /// My node was created as `name`; `listing` is a listing known to
    /// contain it (pipelined with the create, with a watch on the
    /// directory's children if [`Acquire::watches_listing`]), if any.
    pub fn created(&mut self, name: &str, listing: Option<&[String]>) -> Action {
        self.me = name.to_owned();
        match listing {
            Some(children) => {
                self.counts.listings += 1;
                self.listing_watch = self.watches_listing();
                self.decide(children)
            }
            None => self.list(),
        }
    }

    /// Records an event that arrived while a request was in flight (my
    /// node's watch fired, the session's state changed). Its consequences
    /// are drawn at the next [`Acquire::step`].
    pub fn event(&mut self, event: Event) {
        match event {
            Event::Own(NodeEvent::Deleted) | Event::Own(NodeEvent::SessionEnded) | Event::SessionEnded => {
                self.end(event)
            }
            Event::Own(_) => {
                self.own_watch = OwnWatch::Fired;
                self.own_written = true;
            }
            Event::Interrupted => self.interrupted = true,
            Event::Released => self.released(),
            Event::Listing(NodeEvent::SessionEnded) => self.end(Event::SessionEnded),
            Event::Listing(_) => self.listing_watch = false,
            // Only a wait listens to the watched node.
            Event::Watched(_) => {}
        }
    }

    /// Feeds the answer to the last action (or an event ending a wait) and
    /// returns the next action.
    pub fn step(&mut self, input: Input<'_>) -> Action {
        if let Phase::Done = self.phase {
            return Action::Fail(Failure::Request);
        }
        if let Some(failure) = self.ended() {
            return self.finish(Action::Fail(failure));
        }
        if let Input::Deadline = input {
            return self.finish(Action::GiveUp);
        }
        let phase = std::mem::replace(&mut self.phase, Phase::Done);
        match (phase, input) {
            (Phase::Listing, Input::Listed(reply)) => match reply {
                Reply::Ok(children) => {
                    self.listing_watch = self.watches_listing();
                    self.decide(children)
                }
                Reply::NoNode => self.decide::<&str>(&[]),
                // Listings are retried until answered: this is the end.
                Reply::Retry | Reply::NoAuth | Reply::Failed => self.finish(Action::Fail(Failure::Request)),
            },
            (
                Phase::SettingWatches(mut waiting),
                Input::WatchesSet {
                    own,
                    watched,
                    marker,
                    also,
                    blind,
                },
            ) => {
                self.blind = blind && watched == Reply::Ok(());
                let nodes = std::iter::once(&waiting.watched).chain(&waiting.also);
                let replies: Vec<_> = nodes.zip(std::iter::once(&watched).chain(&also)).collect();
                waiting.unreadable = replies
                    .iter()
                    .filter(|(_, reply)| **reply == Reply::NoAuth)
                    .map(|(node, _)| (*node).clone())
                    .collect();
                if self.permits.is_some() {
                    // What is watched now (a lost answer's watch may be set
                    // too: it is asked again, at worst one watch twice).
                    self.live = replies
                        .iter()
                        .filter(|(_, reply)| **reply == Reply::Ok(()))
                        .map(|(node, _)| (*node).clone())
                        .collect();
                }
                self.watches_set(waiting, own, several(watched, also), marker)
            }
            (Phase::Waiting(waiting, poll), Input::Event(event)) => self.woke(waiting, poll, event),
            // The listing's event woke it: the wake-up is counted here.
            (Phase::ReadingWatched(waiting), Input::WatchedRead(reply)) => {
                self.watched_read(waiting, reply, true)
            }
            // Its data event woke it and was counted.
            (Phase::Rewatching(waiting), Input::Rewatched(reply)) => self.watched_read(waiting, reply, false),
            (Phase::ReadingRecord(_), Input::RecordRead(reply)) => match reply {
                // Our node is gone (or unknown): the listing says so.
                Reply::Ok(Record {
                    names_watched: true,
                    own: Reply::Ok(()) | Reply::NoAuth,
                }) => self.hand_off(),
                Reply::Ok(_) => self.list(),
                Reply::Retry => {
                    self.counts.retries += 1;
                    self.list()
                }
                // The record cannot be read: a fresh listing decides.
                Reply::NoNode | Reply::NoAuth | Reply::Failed => self.list(),
            },
            (Phase::CheckingOwn, Input::OwnChecked(reply)) => match reply {
                Reply::Ok(true) => self.grant(true),
                Reply::Ok(false) | Reply::NoNode => self.list(),
                Reply::Retry => {
                    self.counts.retries += 1;
                    self.list()
                }
                Reply::NoAuth | Reply::Failed => self.finish(Action::Fail(Failure::Request)),
            },
            // An answer to a question not asked: a driver error.
            (_, _) => self.finish(Action::Fail(Failure::Request)),
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// True once a listing found the lock taken: the first look is over
    /// (see [`crate::contender::Deadlines`]).
    pub fn found_taken(&self) -> bool {
        self.waited
    }

    /// True if the last listing had children that are not contender nodes
    /// (for the driver's warning).
    pub fn saw_foreign(&self) -> bool {
        self.foreign
    }

    /// True while the `exists` watch on the watched node's release marker
    /// is asked for or set and may still matter: the wait on that node
    /// goes on and its event has not come. Once false, the driver drops
    /// the watch (its client then removes it from the server), so a
    /// marker never created leaves no watch behind.
    pub fn marker_watch_needed(&self) -> bool {
        matches!(self.marker, MarkerWatch::Asked | MarkerWatch::Set)
            && matches!(
                self.phase,
                Phase::SettingWatches(_)
                    | Phase::Waiting(..)
                    | Phase::Rewatching(_)
                    | Phase::ReadingWatched(_)
            )
    }

    /// The release marker's creation was reported: remembered if its watch
    /// is this wait's.
    fn released(&mut self) {
        if self.marker_watch_needed() {
            self.marker_seen();
        }
    }

    fn marker_seen(&mut self) {
        if matches!(self.marker, MarkerWatch::Asked | MarkerWatch::Set) {
            self.marker = MarkerWatch::Seen;
        }
    }

    /// True once the machine has answered `Grant`, `GiveUp` or `Fail`.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Records that my node is gone or the session is over.
    fn end(&mut self, event: Event) {
        let failure = match event {
            Event::Own(NodeEvent::Deleted) => Failure::Lost,
            _ => Failure::SessionEnded,
        };
        // The session's end explains a deletion, not the other way round.
        if self.end_state != Some(Failure::SessionEnded) {
            self.end_state = Some(failure);
        }
    }

    fn ended(&self) -> Option<Failure> {
        self.end_state
    }

    fn finish(&mut self, action: Action) -> Action {
        self.phase = Phase::Done;
        action
    }

    fn list(&mut self) -> Action {
        self.counts.listings += 1;
        self.blind = false;
        self.phase = Phase::Listing;
        Action::List
    }

    fn grant(&mut self, handoff: bool) -> Action {
        self.counts.handoff = handoff;
        if let Some(place) = self.place.as_mut() {
            place.waits_on = None;
        }
        // Only native nodes mark: see `ordering`'s "Peers and the release record".
        let mark = self.mode == Mode::Write
            && self.permits.is_none()
            && self.waited
            && parse_parts(&self.me).is_ok_and(|p| p.layout == Layout::Native);
        self.finish(Action::Grant { mark })
    }

    /// A listing: decide, and act on the decision.
    fn decide<S: AsRef<str>>(&mut self, children: &[S]) -> Action {
        if let Some(permits) = self.permits {
            return self.decide_permit(children, permits);
        }
        let mut foreign = false;
        let decided = ordering::decide_noting_foreign(&self.me, children, &mut foreign);
        self.foreign = foreign;
        if let Some(writer) = self.replacing.clone() {
            return match ordering::downgrade(&writer, &self.me, children) {
                Ok(ordering::Downgrade::Replace { successor }) => {
                    let successor = (successor != self.me).then(|| successor.to_owned());
                    self.finish(Action::Replace { writer, successor })
                }
                Ok(ordering::Downgrade::Keep) => self.finish(Action::GiveUp),
                Ok(ordering::Downgrade::Lost) => self.finish(Action::Fail(Failure::WriterLost)),
                Err(OrderingError::Missing { .. }) => self.finish(Action::Fail(Failure::Lost)),
                Err(OrderingError::InvalidName(_)) => self.finish(Action::Fail(Failure::InvalidName)),
            };
        }
        // Only a listing that grants or makes it wait places the acquire
        // (one that ends it says nothing of a place).
        let waits_on = match &decided {
            Ok(Decision::Wait { watch, .. }) => Some(Some((*watch).to_owned())),
            Ok(Decision::Granted) => Some(None),
            _ => None,
        };
        if let (true, Some(waits_on)) = (self.follow_place, waits_on) {
            self.place = Some(Place {
                node: self.me.clone(),
                ahead: ordering::ahead(&self.me, children),
                waits_on,
            });
        }
        match decided {
            Ok(Decision::Granted) => self.grant(false),
            Ok(Decision::Wait {
                watch,
                deletion_grants,
                release_grants,
            }) => {
                self.waited = true;
                if !self.may_wait {
                    return self.finish(Action::GiveUp);
                }
                if let Some(action) = self.refuse_listing(children) {
                    return action;
                }
                let own = self.own_watch != OwnWatch::Set
                    && !self.own_unreadable
                    && (deletion_grants || release_grants);
                if own {
                    self.own_watch = OwnWatch::None;
                }
                let waiting = Waiting {
                    watched: watch.to_owned(),
                    also: Vec::new(),
                    unreadable: Vec::new(),
                    deletion_grants,
                    release_grants,
                };
                // Only a release can tell what its deletion means.
                // A marker listed already is a stranger's (a release's
                // lives only inside its transaction): no signal.
                let marker = (self.markers && release_grants && !deletion_grants)
                    .then(|| node_name::release_marker(watch))
                    .filter(|marker| !children.iter().any(|c| c.as_ref() == marker.as_str()));
                self.marker = if marker.is_some() {
                    MarkerWatch::Asked
                } else {
                    MarkerWatch::None
                };
                // The watched node's watch unread, in the same request as
                // my node's (with it, `set_watches`): while the listing's
                // watch can still tell that the directory's children
                // changed, and only for a writer right behind the node
                // whose deletion alone grants it. Each arrival after a
                // waiter fires its listing's watch, and a blind waiter then
                // reads its watched node: a request more, and a wake-up,
                // for a waiter deeper in a queue or a reader among readers;
                // the last writer of a short queue has nobody after it.
                let blind = self.listing_watch && deletion_grants && self.mode == Mode::Write;
                // Session changes before the watches exist do not matter.
                self.set_watches(waiting, own, marker, blind)
            }
            Ok(Decision::Exhausted) => self.finish(Action::Fail(Failure::Exhausted)),
            Err(OrderingError::Missing { .. }) => self.finish(Action::Fail(Failure::Lost)),
            Err(OrderingError::InvalidName(_)) => self.finish(Action::Fail(Failure::InvalidName)),
        }
    }

    /// Sets the wait's watches.
    fn set_watches(&mut self, waiting: Waiting, own: bool, marker: Option<String>, blind: bool) -> Action {
        // Session changes before the watches exist do not matter.
        self.interrupted = false;
        // A semaphore's watches still set on nodes it watches now are kept;
        // the rest (on nodes gone, or out of the new window) are let go.
        let window = std::iter::once(&waiting.watched).chain(&waiting.also);
        self.live = window.filter(|node| self.live.contains(node)).cloned().collect();
        let together = own && (marker.is_some() || blind) && !self.own_written;
        let action = Action::SetWatches {
            own,
            watched: waiting.watched.clone(),
            marker,
            also: waiting.also.clone(),
            lingers: self.permits.is_some(),
            kept: self.live.clone(),
            together,
            blind: together && blind,
        };
        self.phase = Phase::SettingWatches(waiting);
        action
    }

    /// A semaphore's listing ([`Acquire::with_permits`]): decide, and act.
    fn decide_permit<S: AsRef<str>>(&mut self, children: &[S], permits: u32) -> Action {
        self.foreign = children.iter().any(|c| parse_parts(c.as_ref()).is_err());
        let decided = semaphore::decide(&self.me, children, permits);
        let place = match &decided {
            Ok(semaphore::Decision::Granted { ahead }) => Some((*ahead, None)),
            Ok(semaphore::Decision::Wait { watch, ahead, .. }) => {
                Some((*ahead, watch.last().map(|w| (*w).to_owned())))
            }
            _ => None,
        };
        if let (true, Some((ahead, waits_on))) = (self.follow_place, place) {
            self.place = Some(Place {
                node: self.me.clone(),
                ahead,
                waits_on,
            });
        }
        match decided {
            Ok(semaphore::Decision::Granted { .. }) => self.grant(false),
            Ok(semaphore::Decision::Wait {
                mut watch,
                deletion_grants,
                ..
            }) => {
                self.waited = true;
                if !self.may_wait {
                    return self.finish(Action::GiveUp);
                }
                if let Some(action) = self.refuse_listing(children) {
                    return action;
                }
                // The immediate predecessor first: the one a place names.
                watch.reverse();
                let mut watch = watch.into_iter().map(str::to_owned);
                let Some(watched) = watch.next() else {
                    return self.finish(Action::Fail(Failure::Request));
                };
                let own = self.own_watch != OwnWatch::Set && !self.own_unreadable && deletion_grants;
                if own {
                    self.own_watch = OwnWatch::None;
                }
                self.marker = MarkerWatch::None;
                let waiting = Waiting {
                    watched,
                    also: watch.collect(),
                    unreadable: Vec::new(),
                    deletion_grants,
                    release_grants: false,
                };
                self.set_watches(waiting, own, None, false)
            }
            Ok(semaphore::Decision::Conflict { node, permits }) => {
                self.conflict = Some((node.to_owned(), permits));
                self.finish(Action::Fail(Failure::PermitsDisagree))
            }
            Ok(semaphore::Decision::Exhausted) => self.finish(Action::Fail(Failure::Exhausted)),
            Err(SemaphoreError::Ordering(OrderingError::Missing { .. })) => {
                self.finish(Action::Fail(Failure::Lost))
            }
            Err(SemaphoreError::PermitsDisagree { carried, .. }) => {
                self.conflict = Some((self.me.clone(), carried));
                self.finish(Action::Fail(Failure::PermitsDisagree))
            }
            Err(_) => self.finish(Action::Fail(Failure::InvalidName)),
        }
    }

    /// The first listing that would make the acquire wait is checked
    /// against the limit ([`Acquire::with_listing_limit`]): the failure
    /// if it is over.
    fn refuse_listing<S: AsRef<str>>(&mut self, children: &[S]) -> Option<Action> {
        if !self.admitted {
            if let Some(limit) = self.listing_limit {
                let size = limits::listing_size(children);
                if !limits::queue_admits(size, Some(limit)) {
                    self.refused = Some(RefusedListing {
                        children: children.len(),
                        contenders: children
                            .iter()
                            .filter(|c| parse_parts(c.as_ref()).is_ok())
                            .count(),
                        size,
                        limit,
                    });
                    return Some(self.finish(Action::Fail(Failure::ListingTooLarge)));
                }
            }
            self.admitted = true;
        }
        None
    }

    fn watches_set(
        &mut self,
        waiting: Waiting,
        own: Option<Reply<()>>,
        watched: Reply<()>,
        marker: Option<Reply<bool>>,
    ) -> Action {
        self.marker = match (self.marker, marker) {
            // Its event may have come before this answer was fed.
            (MarkerWatch::Asked, Some(Reply::Ok(false))) => MarkerWatch::Set,
            (MarkerWatch::Seen, Some(Reply::Ok(false))) => MarkerWatch::Seen,
            // A marker that exists is no release's (a release's lives only
            // inside its transaction); any other answer: no signal, and
            // the record decides.
            _ => MarkerWatch::None,
        };
        match own {
            None => {}
            // Unless its event already came (a one-shot watch fires once).
            Some(Reply::Ok(())) if self.own_watch == OwnWatch::None => self.own_watch = OwnWatch::Set,
            Some(Reply::Ok(())) => {}
            Some(Reply::NoNode) => return self.finish(Action::Fail(Failure::Lost)),
            // Our own ACL does not let us read our node: every hand-off
            // asks with `exists` instead.
            Some(Reply::NoAuth) => self.own_unreadable = true,
            Some(Reply::Retry) => {
                self.counts.retries += 1;
                return self.list();
            }
            Some(Reply::Failed) => return self.finish(Action::Fail(Failure::Request)),
        }
        match watched {
            Reply::Ok(()) => self.wait(waiting, false),
            // Gone already: whether it was released or given up is
            // unknown, so only `deletion_grants` can grant here, or its
            // release marker's creation, reported meanwhile.
            Reply::NoNode if waiting.deletion_grants => self.hand_off(),
            Reply::NoNode if waiting.release_grants && self.marker == MarkerWatch::Seen => {
                self.counts.marked = true;
                self.hand_off()
            }
            Reply::NoNode => self.list(),
            // The server would not deliver its events: poll it.
            Reply::NoAuth => self.wait(waiting, true),
            Reply::Retry => {
                self.counts.retries += 1;
                self.list()
            }
            Reply::Failed => self.finish(Action::Fail(Failure::Request)),
        }
    }

    fn wait(&mut self, waiting: Waiting, poll: bool) -> Action {
        self.phase = Phase::Waiting(waiting, poll);
        Action::Wait { poll }
    }

    /// An event during a wait.
    fn woke(&mut self, waiting: Waiting, poll: bool, event: Event) -> Action {
        match event {
            Event::Watched(NodeEvent::Deleted) => {
                self.counts.wakeups += 1;
                self.gone(waiting)
            }
            // Anyone with WRITE permission can write to it: watch it again.
            // A semaphore's: which of its watched nodes it was is not
            // known: a fresh listing decides (and sets every watch again).
            Event::Watched(NodeEvent::DataChanged) if self.permits.is_some() => {
                self.counts.wakeups += 1;
                self.live.clear();
                self.list()
            }
            Event::Watched(NodeEvent::DataChanged) => {
                self.counts.wakeups += 1;
                let watched = waiting.watched.clone();
                self.phase = Phase::Rewatching(waiting);
                Action::Rewatch { watched }
            }
            Event::Watched(NodeEvent::SessionEnded) => {
                self.end(Event::SessionEnded);
                self.finish(Action::Fail(Failure::SessionEnded))
            }
            Event::Watched(NodeEvent::Other) => {
                self.counts.wakeups += 1;
                // Whose watch fired is not known: all are set again.
                self.live.clear();
                self.list()
            }
            Event::Watched(NodeEvent::Failed) => self.finish(Action::Fail(Failure::Request)),
            // The deletion follows in the same transaction's events.
            Event::Released => {
                self.marker_seen();
                self.wait(waiting, poll)
            }
            Event::Own(_) | Event::SessionEnded => {
                self.event(event);
                if let Some(failure) = self.ended() {
                    return self.finish(Action::Fail(failure));
                }
                // Someone wrote to our node; it is still ours: list again.
                self.counts.wakeups += 1;
                self.own_watch = OwnWatch::None;
                self.own_written = true;
                self.list()
            }
            Event::Interrupted => {
                self.interrupted = true;
                self.wait(waiting, poll)
            }
            Event::Listing(NodeEvent::SessionEnded) => {
                self.end(Event::SessionEnded);
                self.finish(Action::Fail(Failure::SessionEnded))
            }
            Event::Listing(_) => {
                self.listing_watch = false;
                if self.blind {
                    // The watched node's watch was set unread: if this
                    // identity may not read it, its deletion is never told.
                    let watched = waiting.watched.clone();
                    self.phase = Phase::ReadingWatched(waiting);
                    Action::ReadWatched { watched }
                } else {
                    self.wait(waiting, poll)
                }
            }
        }
    }

    /// The watched node read (and watched again, after a write to it):
    /// whatever the answer, its watch is no longer unread.
    fn watched_read(&mut self, mut waiting: Waiting, reply: Reply<()>, uncounted: bool) -> Action {
        self.blind = false;
        match reply {
            // Readable: the watch set is told of its deletion.
            Reply::Ok(()) => self.wait(waiting, false),
            Reply::NoNode => {
                if uncounted {
                    self.counts.wakeups += 1;
                }
                self.gone(waiting)
            }
            // The server would not deliver its events: poll it.
            Reply::NoAuth => {
                waiting.unreadable = vec![waiting.watched.clone()];
                self.wait(waiting, true)
            }
            Reply::Retry => {
                self.counts.retries += 1;
                self.list()
            }
            Reply::Failed => self.finish(Action::Fail(Failure::Request)),
        }
    }

    /// The watched node is gone.
    fn gone(&mut self, waiting: Waiting) -> Action {
        if waiting.deletion_grants {
            self.hand_off()
        } else if waiting.release_grants && self.marker == MarkerWatch::Seen {
            // Its release marker was created: a holder released it.
            self.counts.marked = true;
            self.hand_off()
        } else if waiting.release_grants {
            // Released by a writer that held the lock, if the release
            // record names it; otherwise it gave up or its session ended.
            let watched = waiting.watched.clone();
            self.phase = Phase::ReadingRecord(waiting);
            Action::ReadRecord { watched }
        } else {
            self.list()
        }
    }

    /// A hand-off grants, once my node is known to still exist.
    fn hand_off(&mut self) -> Action {
        if self.own_watch == OwnWatch::Fired {
            self.own_watch = OwnWatch::None;
            return self.list();
        }
        // Not set: my node cannot be read (its ACL), so it was never watched.
        if self.interrupted || self.own_watch != OwnWatch::Set {
            self.phase = Phase::CheckingOwn;
            return Action::CheckOwn;
        }
        self.grant(true)
    }

    /// Lists again after the end: a downgrade's transaction found the node
    /// it checks gone, and a fresh listing decides again.
    pub fn list_again(&mut self) -> Action {
        self.list()
    }

    /// Which watched nodes' watches are set and have not fired, as the
    /// carrier holds them (child names): a semaphore's wait keeps only
    /// those of its watches across a listing (a watch whose event came,
    /// taken or not, is asked for again if its node is still listed).
    pub fn watches_pending(&mut self, pending: &[String]) {
        self.live.retain(|node| pending.contains(node));
    }

    /// The nodes a wait that polls (`Wait { poll: true }`) looks at, each
    /// until it is gone (the first found gone is the watched node's
    /// deletion, [`Event::Watched`]): those of its watched nodes it may not
    /// read. Empty unless it polls.
    pub fn polled(&self) -> &[String] {
        match &self.phase {
            Phase::Waiting(waiting, true) => &waiting.unreadable,
            _ => &[],
        }
    }

    /// The session's connection changed (a reconnection): my node's watch,
    /// set on an older connection, counts as not set. The reconnection set
    /// it again without a READ check, and a server that finds READ on my
    /// node taken away since (an operator's `setACL`) sends no event of it
    /// as it fires: only a watch set again on this connection (its
    /// `getData` says `NoAuth` if READ is gone), or an `exists` at the
    /// hand-off, proves my node there.
    pub fn connection_changed(&mut self) {
        if self.own_watch == OwnWatch::Set {
            self.own_watch = OwnWatch::None;
        }
    }

    /// True while the wait listens to the listing's watch
    /// ([`Event::Listing`]): its watched node's watch was set unread and
    /// no read answered since. Otherwise a carrier leaves that watch's
    /// event where it is (it wakes no wait), to be taken if a later wait
    /// of this listing's needs it.
    pub fn listens_to_listing(&self) -> bool {
        self.blind
    }

    /// True if the own node's watch is set and has not fired (the driver
    /// hands it to the guard, whose `lost()` then needs no new watch).
    pub fn own_watch_set(&self) -> bool {
        self.own_watch == OwnWatch::Set
    }
}

/// The answers to the watches of several watched nodes (a semaphore's
/// wait), as one: a node found gone first (the wait is over), then a
/// failure, a lost answer, a refusal, and `Ok` only if every watch is set.
fn several(watched: Reply<()>, also: Vec<Reply<()>>) -> Reply<()> {
    let rank = |reply: &Reply<()>| match reply {
        Reply::NoNode => 0,
        Reply::Failed => 1,
        Reply::Retry => 2,
        Reply::NoAuth => 3,
        Reply::Ok(()) => 4,
    };
    std::iter::once(watched)
        .chain(also)
        .min_by_key(rank)
        .unwrap_or(Reply::Ok(()))
}

#[cfg(test)]
mod tests;
