//! When a wake-up grants the lock: the acquire rules as a pure state machine.
//!
//! [`Acquire`] holds everything one acquire knows: its node's name, its
//! watches, whether the connection was interrupted since they were set,
//! what it is waiting for. It is fed [`Input`]s (the answers to requests
//! and the events that arrive) and answers each with the next [`Action`].
//! It performs no I/O, reads no clock and holds no ZooKeeper types: the
//! driver ([`crate::SharedLock`]) performs the actions, and a simulation
//! (`tests/simulation.rs`) runs many machines against an in-memory model of
//! ZooKeeper. Which contender precedes which is [`crate::ordering`]'s
//! business; this module decides what to *do* about it.
//!
//! # The run loop
//!
//! A driver owns one machine per acquire and runs it like this (this is
//! what [`crate::SharedLock`] does):
//!
//! ```text
//! create my node (ephemeral, sequential; pipelined with a first listing)
//! action = machine.created(name, listing if it contains my node)
//! loop {
//!     match action {
//!         List            => action = machine.step(Listed(list the directory, retried until answered))
//!         SetWatches{..}  => forget session changes seen so far;
//!                            send a data watch on `watched` (and on my own node if `own`);
//!                            action = machine.step(WatchesSet{..})
//!         Wait{poll}      => wait for the first of: my node's watch, the watched node's
//!                            watch (or, with `poll`, `exists` checks until it is gone),
//!                            a session state change, the deadline; feed it as an input
//!         Rewatch{..}     => action = machine.step(Rewatched(data watch on `watched` again))
//!         ReadRecord{..}  => action = machine.step(RecordRead(one multi-read: the lock
//!                            directory's data and my node))
//!         CheckOwn        => action = machine.step(OwnChecked(`exists` on my node, retried))
//!         Grant{mark}     => return a guard (that releases with the release record if `mark`)
//!         GiveUp          => delete my node, return "not acquired"
//!         Fail(why)       => return the error (withdrawing my node for `Exhausted`)
//!     }
//!     before feeding any answer: machine.event(..) for each event that arrived
//!     meanwhile (my node's watch fired, the session's state changed)
//! }
//! ```
//!
//! A request that the deadline overtakes is answered with
//! [`Input::Deadline`]. Retryable errors ([`crate::is_retryable`]) are
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
//!   `release_grants`, once the release record names it and my node is still
//!   there; otherwise it means "list again".
//! - A data change on the watched node grants nothing: it is watched again
//!   (a revocation request on a holder, [`crate::SharedLock::revoke`], is
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
//!   be watched (its ACL), one `exists` asks.
//! - A native writer that waited releases with the release record
//!   (`Grant { mark }`); in a peer's layout, a writer never does (see
//!   [`crate::ordering`], "Peers and the release record").
//! - An acquire that may not wait (`try_*`) gives up at the first wait.

use crate::node_name::{parse_parts, Layout, Mode};
use crate::ordering::{self, Decision, OrderingError};

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

/// An event that arrives without being asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// My own node's watch fired.
    Own(NodeEvent),
    /// The watched node's watch fired, or polling found it gone
    /// ([`NodeEvent::Deleted`]).
    Watched(NodeEvent),
    /// The connection was lost or re-established: watch events may come in
    /// any order until the watches are set again.
    Interrupted,
    /// The session is over.
    SessionEnded,
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
    /// asked), and on the watched node.
    WatchesSet {
        /// The data watch on my own node.
        own: Option<Reply<()>>,
        /// The data watch on the watched node.
        watched: Reply<()>,
    },
    /// The answer to [`Action::Rewatch`].
    Rewatched(Reply<()>),
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
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// List the lock directory (retried until answered).
    List,
    /// Forget the session changes seen so far, then set a data watch on
    /// `watched` (a child name), and on my own node if `own`.
    SetWatches {
        /// Also watch my own node.
        own: bool,
        /// The child name of the node to watch.
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

/// What the machine waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// Not created yet.
    Creating,
    Listing,
    SettingWatches(Waiting),
    Waiting(Waiting, bool),
    Rewatching(Waiting),
    ReadingRecord(Waiting),
    CheckingOwn,
    Done,
}

/// The node waited on, and what its deletion means.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Waiting {
    watched: String,
    deletion_grants: bool,
    release_grants: bool,
}

/// One acquire's state: see the [module documentation](self).
#[derive(Debug, Clone)]
pub struct Acquire {
    mode: Mode,
    may_wait: bool,
    me: String,
    phase: Phase,
    own_watch: OwnWatch,
    own_unreadable: bool,
    interrupted: bool,
    waited: bool,
    foreign: bool,
    end_state: Option<Failure>,
    counts: Counts,
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
            own_unreadable: false,
            interrupted: false,
            waited: false,
            foreign: false,
            end_state: None,
            counts: Counts::default(),
        }
    }

    /// My node was created as `name`; `listing` is a listing known to
    /// contain it (pipelined with the create), if any.
    pub fn created(&mut self, name: &str, listing: Option<&[String]>) -> Action {
        self.me = name.to_owned();
        match listing {
            Some(children) => {
                self.counts.listings += 1;
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
            Event::Own(_) => self.own_watch = OwnWatch::Fired,
            Event::Interrupted => self.interrupted = true,
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
                Reply::Ok(children) => self.decide(children),
                Reply::NoNode => self.decide::<&str>(&[]),
                // Listings are retried until answered: this is the end.
                Reply::Retry | Reply::NoAuth | Reply::Failed => self.finish(Action::Fail(Failure::Request)),
            },
            (Phase::SettingWatches(waiting), Input::WatchesSet { own, watched }) => {
                self.watches_set(waiting, own, watched)
            }
            (Phase::Waiting(waiting, poll), Input::Event(event)) => self.woke(waiting, poll, event),
            (Phase::Rewatching(waiting), Input::Rewatched(reply)) => match reply {
                Reply::Ok(()) => self.wait(waiting, false),
                Reply::NoNode => self.gone(waiting),
                Reply::NoAuth => self.wait(waiting, true),
                Reply::Retry => {
                    self.counts.retries += 1;
                    self.list()
                }
                Reply::Failed => self.finish(Action::Fail(Failure::Request)),
            },
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

    /// True if the last listing had children that are not contender nodes
    /// (for the driver's warning).
    pub fn saw_foreign(&self) -> bool {
        self.foreign
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
        self.phase = Phase::Listing;
        Action::List
    }

    fn grant(&mut self, handoff: bool) -> Action {
        self.counts.handoff = handoff;
        // Only native nodes mark: see `ordering`'s "Peers and the release record".
        let mark = self.mode == Mode::Write
            && self.waited
            && parse_parts(&self.me).is_ok_and(|p| p.layout == Layout::Native);
        self.finish(Action::Grant { mark })
    }

    /// A listing: decide, and act on the decision.
    fn decide<S: AsRef<str>>(&mut self, children: &[S]) -> Action {
        let mut foreign = false;
        let decided = ordering::decide_noting_foreign(&self.me, children, &mut foreign);
        self.foreign = foreign;
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
                let own = self.own_watch != OwnWatch::Set
                    && !self.own_unreadable
                    && (deletion_grants || release_grants);
                if own {
                    self.own_watch = OwnWatch::None;
                }
                let waiting = Waiting {
                    watched: watch.to_owned(),
                    deletion_grants,
                    release_grants,
                };
                // Session changes before the watches exist do not matter.
                self.interrupted = false;
                self.phase = Phase::SettingWatches(waiting);
                Action::SetWatches {
                    own,
                    watched: watch.to_owned(),
                }
            }
            Ok(Decision::Exhausted) => self.finish(Action::Fail(Failure::Exhausted)),
            Err(OrderingError::Missing { .. }) => self.finish(Action::Fail(Failure::Lost)),
            Err(OrderingError::InvalidName(_)) => self.finish(Action::Fail(Failure::InvalidName)),
        }
    }

    fn watches_set(&mut self, waiting: Waiting, own: Option<Reply<()>>, watched: Reply<()>) -> Action {
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
            // unknown, so only `deletion_grants` can grant here.
            Reply::NoNode if waiting.deletion_grants => self.hand_off(),
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
                self.list()
            }
            Event::Watched(NodeEvent::Failed) => self.finish(Action::Fail(Failure::Request)),
            Event::Own(_) | Event::SessionEnded => {
                self.event(event);
                if let Some(failure) = self.ended() {
                    return self.finish(Action::Fail(failure));
                }
                // Someone wrote to our node; it is still ours: list again.
                self.counts.wakeups += 1;
                self.own_watch = OwnWatch::None;
                self.list()
            }
            Event::Interrupted => {
                self.interrupted = true;
                self.wait(waiting, poll)
            }
        }
    }

    /// The watched node is gone.
    fn gone(&mut self, waiting: Waiting) -> Action {
        if waiting.deletion_grants {
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

    /// True if the own node's watch is set and has not fired (the driver
    /// hands it to the guard, whose `lost()` then needs no new watch).
    pub fn own_watch_set(&self) -> bool {
        self.own_watch == OwnWatch::Set
    }
}

#[cfg(test)]
mod tests {
    //! Event sequences and the actions they lead to. A case starts with the
    //! listing its node was created into (`[X]` marks mine; see
    //! `ordering`'s table for the row syntax), then alternates an input and
    //! the expected action:
    //!
    //! - inputs: `listed ROW`, `listed nonode`, `set OWN WATCHED` (each `ok`,
    //!   `nonode`, `noauth`, `retry`, `failed`, or `-` for an own watch not
    //!   asked), `deleted`, `data`, `other`, `own-deleted`, `own-data`,
    //!   `interrupted`, `ended` (events during a wait), `~own-deleted`,
    //!   `~own-data`, `~interrupted`, `~ended` (events recorded while a
    //!   request is in flight, followed by the next input on the same line
    //!   after `;`), `rewatched R`, `record named|other OWN`, `checked
    //!   yes|no|retry`, `deadline`;
    //! - actions: `list`, `watch N` / `watch+own N` (the child at position
    //!   N), `wait`, `poll`, `rewatch`, `read`, `check`, `grant`, `grant
    //!   mark`, `give up`, `fail lost|ended|exhausted|request`.
    use super::*;

    /// `ordering`'s rows, with each contender's host named by its sequence,
    /// so that my name is the same in every listing of a case.
    fn build(row: &str) -> (Vec<String>, Option<String>) {
        crate::ordering::tests::build_named(row, |_, seq| format!("h{seq}"))
    }

    fn reply(word: &str) -> Reply<()> {
        match word {
            "ok" => Reply::Ok(()),
            "nonode" => Reply::NoNode,
            "noauth" => Reply::NoAuth,
            "retry" => Reply::Retry,
            "failed" => Reply::Failed,
            other => panic!("bad reply {other}"),
        }
    }

    fn show(action: &Action, names: &[String]) -> String {
        let pos = |watched: &str| names.iter().position(|n| n == watched).unwrap();
        match action {
            Action::List => "list".into(),
            Action::SetWatches { own: false, watched } => format!("watch {}", pos(watched)),
            Action::SetWatches { own: true, watched } => format!("watch+own {}", pos(watched)),
            Action::Wait { poll: false } => "wait".into(),
            Action::Wait { poll: true } => "poll".into(),
            Action::Rewatch { .. } => "rewatch".into(),
            Action::ReadRecord { .. } => "read".into(),
            Action::CheckOwn => "check".into(),
            Action::Grant { mark: false } => "grant".into(),
            Action::Grant { mark: true } => "grant mark".into(),
            Action::GiveUp => "give up".into(),
            Action::Fail(Failure::Lost) => "fail lost".into(),
            Action::Fail(Failure::SessionEnded) => "fail ended".into(),
            Action::Fail(Failure::Exhausted) => "fail exhausted".into(),
            Action::Fail(Failure::InvalidName) => "fail name".into(),
            Action::Fail(Failure::Request) => "fail request".into(),
        }
    }

    fn event(word: &str) -> Event {
        match word {
            "deleted" => Event::Watched(NodeEvent::Deleted),
            "data" => Event::Watched(NodeEvent::DataChanged),
            "other" => Event::Watched(NodeEvent::Other),
            "watch-failed" => Event::Watched(NodeEvent::Failed),
            "own-deleted" => Event::Own(NodeEvent::Deleted),
            "own-data" => Event::Own(NodeEvent::DataChanged),
            "interrupted" => Event::Interrupted,
            "ended" => Event::SessionEnded,
            other => panic!("bad event {other}"),
        }
    }

    /// Runs one case; returns the machine's counts at the end.
    fn run(may_wait: bool, created: &str, steps: &[(&str, &str)]) -> Counts {
        let (first, me) = build(created);
        let me = me.expect("a row with [me]");
        let mode = me.parse::<crate::NodeName>().expect("my name parses").mode();
        let mut machine = Acquire::new(mode, may_wait);
        let (open, rest) = steps.split_first().expect("a first action");
        assert_eq!(open.0, "created", "{created}: the first step is `created`");
        let mut names = first.clone();
        let got = machine.created(&me, Some(&first));
        assert_eq!(show(&got, &names), open.1, "{created}: after creation");
        for (input, want) in rest {
            let mut line = *input;
            while let Some((pumped, next)) = line.split_once(';') {
                machine.event(event(pumped.trim().trim_start_matches('~')));
                line = next.trim();
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let listing;
            let got = match words.as_slice() {
                ["listed", "nonode"] => machine.step(Input::Listed(Reply::NoNode)),
                ["listed", row @ ..] => {
                    listing = build(&row.join(" ")).0;
                    names = listing.clone();
                    machine.step(Input::Listed(Reply::Ok(&listing)))
                }
                ["set", own, watched] => machine.step(Input::WatchesSet {
                    own: (*own != "-").then(|| reply(own)),
                    watched: reply(watched),
                }),
                ["rewatched", r] => machine.step(Input::Rewatched(reply(r))),
                ["record", named, own] => machine.step(Input::RecordRead(Reply::Ok(Record {
                    names_watched: *named == "named",
                    own: reply(own),
                }))),
                ["record", r] => machine.step(Input::RecordRead(match reply(r) {
                    Reply::Retry => Reply::Retry,
                    _ => Reply::Failed,
                })),
                ["checked", "yes"] => machine.step(Input::OwnChecked(Reply::Ok(true))),
                ["checked", "no"] => machine.step(Input::OwnChecked(Reply::Ok(false))),
                ["checked", r] => machine.step(Input::OwnChecked(match reply(r) {
                    Reply::Retry => Reply::Retry,
                    Reply::NoNode => Reply::NoNode,
                    _ => Reply::Failed,
                })),
                ["deadline"] => machine.step(Input::Deadline),
                [word] => machine.step(Input::Event(event(word))),
                _ => panic!("bad input {input}"),
            };
            assert_eq!(
                show(&got, &names),
                *want,
                "{created}: after `{input}` in {steps:?}"
            );
        }
        machine.counts()
    }

    type Steps = &'static [(&'static str, &'static str)];

    /// Cases of an acquire that may wait.
    const CASES: &[(&str, Steps)] = &[
        // Granted at once: no watch, no mark.
        ("[W]", &[("created", "grant")]),
        ("R [R]", &[("created", "grant")]),
        // A writer behind the head: its deletion alone grants (hand-off).
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("deleted", "grant mark"),
            ],
        ),
        // ... unless my node is gone or changed meanwhile.
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("own-deleted", "fail lost"),
            ],
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("own-data", "list"),
                ("listed W@0 [W@1]", "watch+own 0"),
            ],
        ),
        // My node's watch fired before the answers were fed: it stays fired,
        // so no hand-off trusts it.
        (
            "W [W]",
            &[("created", "watch+own 0"), ("~own-data; set ok nonode", "list")],
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("~own-data; set ok ok", "wait"),
                ("deleted", "list"),
            ],
        ),
        // Own node deleted while the watches were being set: lost.
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("~own-deleted; set ok ok", "fail lost"),
            ],
        ),
        (
            "W [W]",
            &[("created", "watch+own 0"), ("set nonode ok", "fail lost")],
        ),
        // An interruption makes a hand-off ask first.
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("interrupted", "wait"),
                ("deleted", "check"),
                ("checked yes", "grant mark"),
            ],
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("interrupted", "wait"),
                ("deleted", "check"),
                ("checked no", "list"),
            ],
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("~interrupted; set ok ok", "wait"),
                ("deleted", "check"),
            ],
        ),
        // An own-node event recorded during a request blocks the hand-off.
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("deleted", "grant mark"),
            ],
        ),
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("deleted", "read"),
                ("~own-data; record named ok", "list"),
            ],
        ),
        // The watched node already gone when the watch is set.
        (
            "W [W]",
            &[("created", "watch+own 0"), ("set ok nonode", "grant mark")],
        ),
        (
            "W W [W]",
            &[("created", "watch+own 1"), ("set ok nonode", "list")],
        ),
        // Release record: a writer behind a waiting writer.
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("deleted", "read"),
                ("record named ok", "grant mark"),
            ],
        ),
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("deleted", "read"),
                ("record other ok", "list"),
            ],
        ),
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("deleted", "read"),
                ("record named nonode", "list"),
            ],
        ),
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("deleted", "read"),
                ("record retry", "list"),
            ],
        ),
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("deleted", "read"),
                ("record failed", "list"),
            ],
        ),
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("interrupted", "wait"),
                ("deleted", "read"),
                ("record named ok", "check"),
                ("checked yes", "grant mark"),
            ],
        ),
        // A stray data change grants nothing: watch again.
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("data", "rewatch"),
                ("rewatched ok", "wait"),
                ("deleted", "grant mark"),
            ],
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("data", "rewatch"),
                ("rewatched nonode", "grant mark"),
            ],
        ),
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("data", "rewatch"),
                ("rewatched nonode", "read"),
            ],
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("data", "rewatch"),
                ("rewatched noauth", "poll"),
                ("deleted", "grant mark"),
            ],
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("data", "rewatch"),
                ("rewatched retry", "list"),
            ],
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("data", "rewatch"),
                ("rewatched failed", "fail request"),
            ],
        ),
        // No hand-off possible: a reader-predecessor of a writer.
        (
            "R W R [W]",
            &[
                ("created", "watch 2"),
                ("set - ok", "wait"),
                ("deleted", "list"),
                ("listed R@0 W@1 [W@3]", "watch+own 1"),
            ],
        ),
        // Readers: the only writer before me.
        (
            "W R [R]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("deleted", "grant"),
            ],
        ),
        (
            "W W [R]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("deleted", "read"),
                ("record named ok", "grant"),
            ],
        ),
        // Unreadable nodes: poll the watched one; ask about my own one.
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok noauth", "poll"),
                ("deleted", "grant mark"),
            ],
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set noauth ok", "wait"),
                ("deleted", "check"),
                ("checked yes", "grant mark"),
            ],
        ),
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set noauth ok", "wait"),
                ("deleted", "read"),
                ("record named noauth", "check"),
            ],
        ),
        // Retryable errors while setting watches: list again.
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set retry ok", "list"),
                ("listed [W@1]", "grant mark"),
            ],
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok retry", "list"),
                ("listed W@0 [W@1]", "watch 0"),
            ],
        ),
        (
            "W [W]",
            &[("created", "watch+own 0"), ("set failed ok", "fail request")],
        ),
        (
            "W [W]",
            &[("created", "watch+own 0"), ("set ok failed", "fail request")],
        ),
        // The session ends: during a wait, or noticed between requests.
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("ended", "fail ended"),
            ],
        ),
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("deleted", "read"),
                ("~ended; record named ok", "fail ended"),
            ],
        ),
        // A watch that fails for good fails the acquire.
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok noauth", "poll"),
                ("watch-failed", "fail request"),
            ],
        ),
        // Other watch events: list again.
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("other", "list"),
                ("listed W@1 [W@2]", "watch 0"),
            ],
        ),
        // Missing from a listing: lost; the counter's limit: withdraw.
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("other", "list"),
                ("listed W@0 W@1", "fail lost"),
            ],
        ),
        ("[W@2147483647]", &[("created", "fail exhausted")]),
        ("W@5 [R@5]", &[("created", "fail exhausted")]),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("other", "list"),
                ("listed nonode", "fail lost"),
            ],
        ),
        // The deadline, at any step.
        ("W [W]", &[("created", "watch+own 0"), ("deadline", "give up")]),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("deadline", "give up"),
            ],
        ),
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("deleted", "read"),
                ("deadline", "give up"),
            ],
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("interrupted", "wait"),
                ("deleted", "check"),
                ("deadline", "give up"),
            ],
        ),
        // Answers to questions not asked are driver errors.
        (
            "W [W]",
            &[("created", "watch+own 0"), ("checked yes", "fail request")],
        ),
    ];

    #[test]
    fn event_sequences() {
        for (created, steps) in CASES {
            run(true, created, steps);
        }
    }

    #[test]
    fn try_gives_up_at_the_first_wait() {
        run(false, "W [W]", &[("created", "give up")]);
        run(false, "R R [R]", &[("created", "grant")]);
        run(false, "W [R]", &[("created", "give up")]);
    }

    #[test]
    fn peer_layout_writers_never_mark() {
        // Behind a peer's writer: its deletion, unless it grants alone,
        // means a new listing; and a peer-layout writer releases unmarked.
        run(
            true,
            "cW kW [cW]",
            &[
                ("created", "watch 1"),
                ("set - ok", "wait"),
                ("deleted", "list"),
                ("listed cW@0 [cW@2]", "watch 0"),
                ("set - ok", "wait"),
                ("deleted", "list"),
                ("listed [cW@2]", "grant"),
            ],
        );
        run(
            true,
            "W [kW]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("deleted", "grant"),
            ],
        );
        run(
            true,
            "m [m]",
            &[
                ("created", "watch+own 0"),
                ("set ok retry", "list"),
                ("listed [m@1]", "grant"),
            ],
        );
        // A native writer still marks behind a peer.
        run(
            true,
            "kW [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("deleted", "grant mark"),
            ],
        );
    }

    #[test]
    fn a_writer_granted_at_once_does_not_mark_but_one_granted_after_a_listing_does() {
        run(
            true,
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok retry", "list"),
                ("listed [W@1]", "grant mark"),
            ],
        );
        run(
            true,
            "R [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("deleted", "grant mark"),
            ],
        );
        run(
            true,
            "W [R]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("deleted", "grant"),
            ],
        );
    }

    #[test]
    fn counts() {
        let hand_off = run(
            true,
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("deleted", "grant mark"),
            ],
        );
        assert_eq!(
            hand_off,
            Counts {
                listings: 1,
                wakeups: 1,
                retries: 0,
                handoff: true
            }
        );
        let listed = run(
            true,
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok retry", "list"),
                ("listed W@1 [W@2]", "watch 0"),
                ("set - ok", "wait"),
                ("deleted", "grant mark"),
            ],
        );
        assert_eq!(
            listed,
            Counts {
                listings: 2,
                wakeups: 1,
                retries: 1,
                handoff: true
            }
        );
        let at_once = run(true, "[W]", &[("created", "grant")]);
        assert!(!at_once.handoff);
    }

    #[test]
    fn the_own_watch_is_kept_across_waits() {
        let (names, me) = build("W W [W]");
        let mut machine = Acquire::new(Mode::Write, true);
        let me = me.unwrap();
        assert_eq!(show(&machine.created(&me, Some(&names)), &names), "watch+own 1");
        machine.step(Input::WatchesSet {
            own: Some(Reply::Ok(())),
            watched: Reply::Ok(()),
        });
        assert!(machine.own_watch_set());
        machine.step(Input::Event(Event::Watched(NodeEvent::Other)));
        assert!(machine.own_watch_set());
        let (again, _) = build("W@1 [W@2]");
        // Still set: not asked for again.
        assert_eq!(
            show(&machine.step(Input::Listed(Reply::Ok(&again))), &again),
            "watch 0"
        );
        assert!(!machine.is_done());
        // Once it fires, it is not set any more.
        machine.event(Event::Own(NodeEvent::DataChanged));
        assert!(!machine.own_watch_set(), "a fired watch is not set");
    }

    #[test]
    fn foreign_children_are_noted() {
        let (names, me) = build("x W [W]");
        let mut machine = Acquire::new(Mode::Write, true);
        machine.created(&me.unwrap(), Some(&names));
        assert!(machine.saw_foreign());
        let (names, me) = build("W [W]");
        let mut machine = Acquire::new(Mode::Write, true);
        machine.created(&me.unwrap(), Some(&names));
        assert!(!machine.saw_foreign());
    }

    #[test]
    fn done_after_an_end_and_not_before() {
        let (names, me) = build("W [W]");
        let mut machine = Acquire::new(Mode::Write, true);
        machine.created(&me.unwrap(), Some(&names));
        assert!(!machine.is_done());
        machine.step(Input::WatchesSet {
            own: Some(Reply::Ok(())),
            watched: Reply::Ok(()),
        });
        assert!(!machine.is_done());
        assert_eq!(machine.step(Input::Deadline), Action::GiveUp);
        assert!(machine.is_done());
        // An ended machine answers nothing but failure.
        assert_eq!(machine.step(Input::Deadline), Action::Fail(Failure::Request));
    }

    /// `(listings, wakeups, retries, handoff)`.
    type Expected = (u32, u32, u32, bool);

    /// Cases and their counts at the end.
    const COUNTED: &[(&str, Steps, Expected)] = &[
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set retry ok", "list"),
                ("listed [W@1]", "grant mark"),
            ],
            (2, 0, 1, false),
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("data", "rewatch"),
                ("rewatched retry", "list"),
            ],
            (2, 1, 1, false),
        ),
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("deleted", "read"),
                ("record retry", "list"),
            ],
            (2, 1, 1, false),
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("interrupted", "wait"),
                ("deleted", "check"),
                ("checked retry", "list"),
            ],
            (2, 1, 1, false),
        ),
        (
            "W W [W]",
            &[
                ("created", "watch+own 1"),
                ("set ok ok", "wait"),
                ("other", "list"),
                ("listed W@1 [W@2]", "watch 0"),
                ("set - ok", "wait"),
                ("data", "rewatch"),
                ("rewatched ok", "wait"),
                ("deleted", "grant mark"),
            ],
            (2, 3, 0, true),
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("own-data", "list"),
                ("listed [W@1]", "grant mark"),
            ],
            (2, 1, 0, false),
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("own-deleted", "fail lost"),
            ],
            (1, 0, 0, false),
        ),
        (
            "W [W]",
            &[
                ("created", "watch+own 0"),
                ("set ok ok", "wait"),
                ("interrupted", "wait"),
                ("deadline", "give up"),
            ],
            (1, 0, 0, false),
        ),
    ];

    #[test]
    fn counts_of_each_path() {
        for (created, steps, (listings, wakeups, retries, handoff)) in COUNTED {
            let counts = run(true, created, steps);
            assert_eq!(
                counts,
                Counts {
                    listings: *listings,
                    wakeups: *wakeups,
                    retries: *retries,
                    handoff: *handoff
                },
                "{created}: {steps:?}"
            );
        }
    }
}
