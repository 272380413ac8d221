//! A deterministic simulation of the lock protocol: many contenders, each
//! running the real [`Acquire`] machine, against an in-memory model of the
//! ZooKeeper semantics the lock relies on, on seeded random schedules.
//!
//! # The model
//!
//! - One lock directory (it always exists): its data (the release record)
//!   and its child-version counter, the sequence of the next child. The
//!   counter advances with every child created or deleted and sticks at
//!   `2147483647`; a run may start it near the limit, and may let one
//!   create at the limit get a negative sequence.
//! - Nodes: name, ephemeral owner session, czxid, mzxid, and (for the
//!   history that grants are checked against) the zxid of their deletion.
//! - Sessions: connected, disconnected or expired. Each has the requests
//!   it sent that the server has not applied yet, and one outbound queue
//!   of replies and events delivered in order. The server applies one
//!   request at a time. A multi (release record + delete) and the
//!   multi-read (record + own node) are one step each.
//! - One-shot data watches per session (`getData` on an existing node; none
//!   on a missing one), fired by deletion (`NodeDeleted`) and `setData`
//!   (`NodeDataChanged`). The client side knows a watch once its reply is
//!   delivered, until its event is.
//! - Connection loss: of the requests in flight, a random prefix is
//!   applied, the rest is not; every reply not delivered yet becomes
//!   `Retry`, undelivered events are lost, the session sees
//!   `Event::Interrupted`. Requests sent while disconnected wait for the
//!   reconnection. On reconnection the client's watches are registered
//!   again: a watched node deleted or written meanwhile fires at once, these
//!   events in any order (after `Event::Interrupted`).
//! - Session expiry: its ephemeral nodes are deleted in one transaction
//!   (their watchers are notified), its watches dropped; the client sees
//!   the loss of connection, then `Event::SessionEnded` (and sometimes its
//!   watches firing with the session's end); every later request fails.
//! - A stranger may write data to any contender node, write garbage or the
//!   name of a node that is gone and that nobody waits on into the lock
//!   directory's data, and delete any contender node. (Writing the name of
//!   a live node, or of one that someone waits on, into the directory's data
//!   forges a release and is a documented protocol violation: excluded.)
//!
//! Not modelled: ACLs (so never `NoAuth` and never polling), the
//! directory's removal and recycling, several servers (`sync`), several
//! acquires sharing one session, a client library that fails a request
//! sent while disconnected at once (here it waits for the reconnection).
//!
//! # The contenders
//!
//! Each contender is a client that creates its node (pipelined with a
//! listing; after a `Retry` it looks for its node by its name's unique
//! prefix, owned by its session, and creates again if there is none), runs
//! the machine per the run loop in `zk_rwlock::acquire` (events that arrive
//! while a request is in flight are fed with `Acquire::event` before the
//! answer; `List`, `CheckOwn`, deletions and releases are retried until
//! answered; the multi-read sometimes is), holds for as long as the
//! scheduler likes, releases (with the release record when `mark`), may
//! reach its deadline, and may start again (in a new session if its
//! session expired). A contender that gives up or fails withdraws its node.
//! In half the schedules the contenders write every layout in turn
//! (native, Curator's read/write lock and mutex, kazoo): those in a peer's
//! layout never write the release record, as the peers never do, and
//! nobody may take a hand-off from a record behind them.
//!
//! # What is checked
//!
//! After every step: never two holders where one is a writer, a *holder*
//! being a contender whose machine answered `Grant`, that has not started
//! to release, and whose node still exists (a foreign deletion or the
//! session's expiry takes the lock away). At every grant: the state of the
//! directory at the zxid of the message that led to the grant (the
//! listing, the event, the answer) grants this contender (so its node
//! existed then), and `mark` is set exactly for a native writer that waited. At
//! every failure: `Lost` only when the node is gone, `SessionEnded` only
//! after expiry, `Exhausted` only for a sequence at the limit, negative or
//! shared, `GiveUp` only after the deadline or for a `try_*` acquire; never
//! `Request` or `InvalidName`. After the random part of a schedule, faults,
//! deadlines and new acquires stop, disconnected sessions reconnect and
//! holders release: within a bounded number of steps everything must come
//! to rest with every acquire finished (no waiter left without something to
//! wake it), and no node of a live session left in the directory.
//!
//! # Mutations
//!
//! To show that these checks find broken rules, `Machine` can wrap the real
//! machine with one rule broken on purpose; each `mutation_*` test runs the
//! same schedules (a fixed seed) and passes when a check fails within
//! `MUTATION_BUDGET` (300) cases. The case that first failed a check:
//!
//! - (a) a data change on the watched node counts as its deletion: 15
//! - (b) `CheckOwn` answered "exists" without asking: 81
//! - (b') `Event::Interrupted` never reaches the machine: 81
//! - (c) any release record names the watched node: 1
//! - (d) a writer is granted at its first wait: 1
//! - (e) my own node's deletion never reaches the machine: 9
//!
//! Scenario tests replay the tricky interleavings by hand, each also
//! against the mutation it is there to catch.
//!
//! # A bug it found
//!
//! `Acquire` once forgot that my own node's watch had fired when the event
//! came between the answers of a `SetWatches { own: true, .. }` (the
//! answer's `Ok` set the one-shot watch back to "set"), so a later deletion
//! of my node sent nothing and a hand-off granted with my node gone.
//! `own_watch_fired_while_setting_watches` replays it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Mutex;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{FileFailurePersistence, RngAlgorithm, TestError, TestRng, TestRunner};
use zk_rwlock::acquire::{Acquire, Action, Event, Failure, Input, NodeEvent, Record, Reply};
use zk_rwlock::ordering::{decide, is_valid_seq, Decision};
use zk_rwlock::{Layout, Mode};

type Check = Result<(), String>;

/// Adds a line to the world's trace, if it keeps one (a failing schedule is
/// run again with the trace on: runs are deterministic).
macro_rules! note {
    ($world:expr, $($arg:tt)*) => {
        if $world.tracing {
            let line = format!($($arg)*);
            $world.trace.push(format!("{:4} {line}", $world.step));
        }
    };
}

// ---- randomness ------------------------------------------------------------

// splitmix64: sub-choices within a step, and the final drain's schedule.
use zk_rwlock_testkit::SplitMix64 as Rng;

// ---- the machine, and broken copies of it ------------------------------------

/// A rule broken on purpose (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mutation {
    None,
    /// (a) A data change on the watched node counts as its deletion.
    DataChangeGrants,
    /// (b) `CheckOwn` is answered "my node exists" without asking.
    SkipOwnCheck,
    /// (b') `Event::Interrupted` never reaches the machine.
    IgnoreInterrupted,
    /// (c) Any release record is taken to name the watched node.
    AnyRecord,
    /// (d) A writer is granted at its first wait.
    WriterGrantedAtWait,
    /// (e) My own node's deletion never reaches the machine.
    IgnoreOwnDeletion,
}

/// The real machine, or the real machine with one rule broken.
struct Machine {
    inner: Acquire,
    mutation: Mutation,
    mode: Mode,
}

impl Machine {
    fn new(mode: Mode, may_wait: bool, mutation: Mutation) -> Machine {
        Machine {
            inner: Acquire::new(mode, may_wait),
            mutation,
            mode,
        }
    }

    fn created(&mut self, name: &str, listing: Option<&[String]>) -> Action {
        let action = self.inner.created(name, listing);
        self.mutate(action)
    }

    fn event(&mut self, event: Event) {
        if !self.drops(event) {
            self.inner.event(event);
        }
    }

    fn step(&mut self, input: Input<'_>) -> Action {
        let input = match input {
            Input::Event(event) if self.drops(event) => return Action::Wait { poll: false },
            Input::Event(Event::Watched(NodeEvent::DataChanged))
                if self.mutation == Mutation::DataChangeGrants =>
            {
                Input::Event(Event::Watched(NodeEvent::Deleted))
            }
            Input::RecordRead(Reply::Ok(Record { own, .. })) if self.mutation == Mutation::AnyRecord => {
                Input::RecordRead(Reply::Ok(Record {
                    names_watched: true,
                    own,
                }))
            }
            input => input,
        };
        let action = self.inner.step(input);
        self.mutate(action)
    }

    fn drops(&self, event: Event) -> bool {
        match self.mutation {
            Mutation::IgnoreInterrupted => event == Event::Interrupted,
            Mutation::IgnoreOwnDeletion => event == Event::Own(NodeEvent::Deleted),
            _ => false,
        }
    }

    fn mutate(&mut self, action: Action) -> Action {
        match (self.mutation, &action) {
            (Mutation::SkipOwnCheck, Action::CheckOwn) => {
                let action = self.inner.step(Input::OwnChecked(Reply::Ok(true)));
                self.mutate(action)
            }
            (Mutation::WriterGrantedAtWait, Action::SetWatches { .. }) if self.mode == Mode::Write => {
                Action::Grant { mark: true }
            }
            _ => action,
        }
    }

    fn is_done(&self) -> bool {
        self.inner.is_done()
    }
}

// ---- the ZooKeeper model ---------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SessionState {
    Connected,
    Disconnected,
    Expired,
}

/// A request, as the server sees it. Names are child names of the lock directory.
#[derive(Debug, Clone)]
enum Op {
    /// Ephemeral sequential create of `<prefix><seq>`.
    Create {
        prefix: String,
    },
    List,
    /// `getData` with a data watch.
    GetWatch {
        name: String,
    },
    /// `exists` (the owner, for the search after a lost create).
    Exists {
        name: String,
    },
    /// The multi-read: the directory's data and my node.
    ReadRecord {
        own: String,
    },
    Delete {
        name: String,
    },
    /// The multi: `setData(directory, name)` and `delete(name)`.
    Release {
        name: String,
    },
}

#[derive(Debug, Clone)]
enum Resp {
    Created(String),
    Children(Vec<String>),
    Data { name: String, mzxid: u64 },
    Stat(Option<usize>),
    Record { data: String, own: bool },
    Done,
    NoNode,
    Retry,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WatchKind {
    Deleted,
    DataChanged,
    SessionEnded,
}

#[derive(Debug, Clone)]
enum Msg {
    Reply { id: u64, resp: Resp },
    Watch { name: String, kind: WatchKind },
    Interrupted,
    Expired,
}

struct Session {
    contender: usize,
    state: SessionState,
    /// Sent, not applied yet.
    inflight: VecDeque<(u64, Op)>,
    /// Replies and events not delivered yet, with the zxid they were made at.
    outbound: VecDeque<(u64, Msg)>,
    /// The watches the client knows of: name and mzxid when set, in the order set.
    registry: Vec<(String, u64)>,
}

struct Node {
    owner: usize,
    seq: i32,
    czxid: u64,
    mzxid: u64,
    dzxid: Option<u64>,
}

/// The order in which a reconnection delivers the events of the watches it
/// registers again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Random,
    /// The contender's own node's event last.
    OwnLast,
}

// ---- the contenders --------------------------------------------------------

/// What an outstanding request is for.
#[derive(Debug, Clone)]
enum Purpose {
    Create,
    CreateList,
    /// The search for my node after a lost create (`cleanup`: to delete it).
    FindList {
        cleanup: bool,
    },
    FindCheck {
        name: String,
        cleanup: bool,
    },
    List,
    WatchOwn,
    WatchWatched,
    Rewatch,
    ReadRecord,
    CheckOwn,
    Release,
    Withdraw,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CState {
    Idle,
    Acquiring,
    Holding,
    Releasing,
    Withdrawing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Released,
    GaveUp,
    Failed(Failure),
    /// The session ended before the node was known.
    EndedCreating,
}

/// One acquire of a contender.
struct Acq {
    mode: Mode,
    may_wait: bool,
    has_deadline: bool,
    deadline_fired: bool,
    prefix: String,
    name: Option<String>,
    machine: Option<Machine>,
    /// The last action was `Wait`.
    waiting: bool,
    /// The node the machine is concerned with since its last `SetWatches`.
    watching: Option<String>,
    set_own: bool,
    own_reply: Option<Reply<()>>,
    waited: bool,
    last: &'static str,
    mark: bool,
    outcome: Option<Outcome>,
}

struct Contender {
    session: usize,
    state: CState,
    acq: Option<Acq>,
    pending: BTreeMap<u64, Purpose>,
    /// The zxid of the message being delivered.
    basis: u64,
    acquires: u32,
    outcomes: Vec<Outcome>,
}

/// What happened across runs, to show what the schedules reach.
#[derive(Debug, Default, Clone)]
struct Stats {
    runs: u64,
    steps: u64,
    grants: u64,
    handoffs: u64,
    record_grants: u64,
    checked_grants: u64,
    lost: u64,
    session_ended: u64,
    exhausted: u64,
    gave_up: u64,
    retries: u64,
    disconnects: u64,
    expiries: u64,
    foreign: u64,
    /// Grants of contenders in a peer's layout (which never mark).
    peer_grants: u64,
}

impl Stats {
    fn add(&mut self, other: &Stats) {
        self.runs += other.runs;
        self.steps += other.steps;
        self.grants += other.grants;
        self.handoffs += other.handoffs;
        self.record_grants += other.record_grants;
        self.checked_grants += other.checked_grants;
        self.lost += other.lost;
        self.session_ended += other.session_ended;
        self.exhausted += other.exhausted;
        self.gave_up += other.gave_up;
        self.retries += other.retries;
        self.disconnects += other.disconnects;
        self.expiries += other.expiries;
        self.foreign += other.foreign;
        self.peer_grants += other.peer_grants;
    }
}

// ---- the world -------------------------------------------------------------

struct World {
    mutation: Mutation,
    zxid: u64,
    cversion: i32,
    negative_once: bool,
    record: String,
    /// Every node ever created (deleted ones keep their deletion's zxid).
    nodes: BTreeMap<String, Node>,
    watches: BTreeMap<String, BTreeSet<usize>>,
    sessions: Vec<Session>,
    contenders: Vec<Contender>,
    next_id: u64,
    rng: Rng,
    step: usize,
    tracing: bool,
    trace: Vec<String>,
    stats: Stats,
    /// Contenders write peers' layouts too (see `layout_of`).
    mixed: bool,
}

/// The layout contender `c` writes in a mixed world: every layout in turn
/// (the Curator mutex has no readers: Curator's read/write lock then).
/// Peer-layout contenders never write the release record, as peers.
fn layout_of(c: usize, mode: Mode) -> Layout {
    match Layout::ALL[c % Layout::ALL.len()] {
        Layout::CuratorMutex if mode == Mode::Read => Layout::Curator,
        layout => layout,
    }
}

impl World {
    fn new(contenders: usize, counter: i32, mutation: Mutation) -> World {
        let mut world = World {
            mutation,
            zxid: 1,
            cversion: counter,
            negative_once: false,
            record: String::new(),
            nodes: BTreeMap::new(),
            watches: BTreeMap::new(),
            sessions: Vec::new(),
            contenders: Vec::new(),
            next_id: 1,
            rng: Rng(0),
            step: 0,
            tracing: true,
            trace: Vec::new(),
            stats: Stats::default(),
            mixed: false,
        };
        for c in 0..contenders {
            let session = world.new_session(c);
            world.contenders.push(Contender {
                session,
                state: CState::Idle,
                acq: None,
                pending: BTreeMap::new(),
                basis: 0,
                acquires: 0,
                outcomes: Vec::new(),
            });
        }
        world
    }

    fn new_session(&mut self, contender: usize) -> usize {
        self.sessions.push(Session {
            contender,
            state: SessionState::Connected,
            inflight: VecDeque::new(),
            outbound: VecDeque::new(),
            registry: Vec::new(),
        });
        self.sessions.len() - 1
    }

    fn fail<T>(&self, what: String) -> Result<T, String> {
        Err(format!("step {}: {what}", self.step))
    }

    // ---- the server ----

    fn live(&self, name: &str) -> bool {
        self.nodes.get(name).is_some_and(|n| n.dzxid.is_none())
    }

    fn children(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.dzxid.is_none())
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The children the directory had once the transaction `zxid` was applied.
    fn children_at(&self, zxid: u64) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.czxid <= zxid && n.dzxid.is_none_or(|d| d > zxid))
            .map(|(name, _)| name.clone())
            .collect()
    }

    fn push(&mut self, s: usize, msg: Msg) {
        let zxid = self.zxid;
        self.sessions[s].outbound.push_back((zxid, msg));
    }

    fn fire(&mut self, name: &str, kind: WatchKind) {
        if let Some(watchers) = self.watches.remove(name) {
            for s in watchers {
                self.push(
                    s,
                    Msg::Watch {
                        name: name.to_owned(),
                        kind,
                    },
                );
            }
        }
    }

    /// Deletes a live node in the current transaction.
    fn remove_node(&mut self, name: &str) {
        let zxid = self.zxid;
        if let Some(node) = self.nodes.get_mut(name) {
            node.dzxid = Some(zxid);
        }
        self.cversion = self.cversion.saturating_add(1);
        self.fire(name, WatchKind::Deleted);
    }

    fn apply(&mut self, s: usize, id: u64, op: Op) {
        let resp = match op {
            Op::Create { prefix } => {
                let seq = if self.negative_once && self.cversion == i32::MAX {
                    self.negative_once = false;
                    i32::MIN
                } else {
                    self.cversion
                };
                let name = format!("{prefix}{seq:010}");
                if self.live(&name) {
                    Resp::Failed
                } else {
                    self.zxid += 1;
                    self.cversion = self.cversion.saturating_add(1);
                    self.nodes.insert(
                        name.clone(),
                        Node {
                            owner: s,
                            seq,
                            czxid: self.zxid,
                            mzxid: self.zxid,
                            dzxid: None,
                        },
                    );
                    Resp::Created(name)
                }
            }
            Op::List => Resp::Children(self.children()),
            Op::GetWatch { name } => match self.nodes.get(&name) {
                Some(node) if node.dzxid.is_none() => {
                    let mzxid = node.mzxid;
                    self.watches.entry(name.clone()).or_default().insert(s);
                    Resp::Data { name, mzxid }
                }
                _ => Resp::NoNode,
            },
            Op::Exists { name } => Resp::Stat(
                self.nodes
                    .get(&name)
                    .filter(|n| n.dzxid.is_none())
                    .map(|n| n.owner),
            ),
            Op::ReadRecord { own } => Resp::Record {
                data: self.record.clone(),
                own: self.live(&own),
            },
            Op::Delete { name } => {
                if self.live(&name) {
                    self.zxid += 1;
                    self.remove_node(&name);
                    Resp::Done
                } else {
                    Resp::NoNode
                }
            }
            Op::Release { name } => {
                if self.live(&name) {
                    self.zxid += 1;
                    self.record = name.clone();
                    self.remove_node(&name);
                    Resp::Done
                } else {
                    Resp::NoNode
                }
            }
        };
        self.push(s, Msg::Reply { id, resp });
    }

    fn send(&mut self, c: usize, op: Op, purpose: Purpose) {
        let id = self.next_id;
        self.next_id += 1;
        let s = self.contenders[c].session;
        self.contenders[c].pending.insert(id, purpose);
        if self.sessions[s].state == SessionState::Expired {
            self.push(
                s,
                Msg::Reply {
                    id,
                    resp: Resp::Failed,
                },
            );
        } else {
            self.sessions[s].inflight.push_back((id, op));
        }
    }

    /// The server applies the next request of session `s`.
    fn apply_next(&mut self, s: usize) {
        if let Some((id, op)) = self.sessions[s].inflight.pop_front() {
            note!(self, "apply s{s} #{id} {op:?}");
            self.apply(s, id, op);
        }
    }

    /// The connection of session `s` is lost; the first `applied` requests
    /// in flight reach the server (random if `None`).
    fn disconnect(&mut self, s: usize, applied: Option<usize>) {
        self.stats.disconnects += 1;
        let inflight: Vec<(u64, Op)> = self.sessions[s].inflight.drain(..).collect();
        let cut = applied.unwrap_or_else(|| self.rng.index(inflight.len() + 1));
        note!(
            self,
            "disconnect s{s} ({cut} of {} in flight applied)",
            inflight.len()
        );
        let mut lost = Vec::new();
        for (i, (id, op)) in inflight.into_iter().enumerate() {
            if i < cut {
                self.apply(s, id, op);
            } else {
                lost.push(id);
            }
        }
        let outbound = std::mem::take(&mut self.sessions[s].outbound);
        let mut ids: Vec<u64> = outbound
            .iter()
            .filter_map(|(_, m)| match m {
                Msg::Reply { id, .. } => Some(*id),
                _ => None,
            })
            .collect();
        ids.extend(lost);
        for watchers in self.watches.values_mut() {
            watchers.remove(&s);
        }
        self.sessions[s].state = SessionState::Disconnected;
        self.push(s, Msg::Interrupted);
        for id in ids {
            self.push(
                s,
                Msg::Reply {
                    id,
                    resp: Resp::Retry,
                },
            );
        }
    }

    fn reconnect(&mut self, s: usize, order: Order) {
        self.sessions[s].state = SessionState::Connected;
        self.push(s, Msg::Interrupted);
        let mut fired = Vec::new();
        for (name, mzxid) in self.sessions[s].registry.clone() {
            match self.nodes.get(&name) {
                Some(node) if node.dzxid.is_none() && node.mzxid == mzxid => {
                    self.watches.entry(name).or_default().insert(s);
                }
                Some(node) if node.dzxid.is_none() => fired.push((name, WatchKind::DataChanged)),
                _ => fired.push((name, WatchKind::Deleted)),
            }
        }
        match order {
            Order::Random => {
                for i in (1..fired.len()).rev() {
                    let j = self.rng.index(i + 1);
                    fired.swap(i, j);
                }
            }
            Order::OwnLast => {
                let own = self.contenders[self.sessions[s].contender]
                    .acq
                    .as_ref()
                    .and_then(|a| a.name.clone());
                fired.sort_by_key(|(name, _)| Some(name) == own.as_ref());
            }
        }
        note!(self, "reconnect s{s}, firing {fired:?}");
        for (name, kind) in fired {
            self.push(s, Msg::Watch { name, kind });
        }
    }

    fn expire(&mut self, s: usize) {
        self.stats.expiries += 1;
        if self.sessions[s].state == SessionState::Connected {
            self.disconnect(s, None);
        }
        note!(self, "expire s{s}");
        let queued: Vec<u64> = self.sessions[s].inflight.drain(..).map(|(id, _)| id).collect();
        self.sessions[s].state = SessionState::Expired;
        self.zxid += 1;
        let owned: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.dzxid.is_none() && n.owner == s)
            .map(|(name, _)| name.clone())
            .collect();
        for name in owned {
            self.remove_node(&name);
        }
        for watchers in self.watches.values_mut() {
            watchers.remove(&s);
        }
        self.push(s, Msg::Expired);
        for (name, _) in std::mem::take(&mut self.sessions[s].registry) {
            if self.rng.one_in(2) {
                self.push(
                    s,
                    Msg::Watch {
                        name,
                        kind: WatchKind::SessionEnded,
                    },
                );
            }
        }
        for id in queued {
            self.push(
                s,
                Msg::Reply {
                    id,
                    resp: Resp::Failed,
                },
            );
        }
    }

    fn foreign_data(&mut self, name: &str) {
        self.stats.foreign += 1;
        note!(self, "stranger writes to {name}");
        self.zxid += 1;
        let zxid = self.zxid;
        if let Some(node) = self.nodes.get_mut(name) {
            node.mzxid = zxid;
        }
        self.fire(name, WatchKind::DataChanged);
    }

    fn foreign_record(&mut self, data: String) {
        self.stats.foreign += 1;
        note!(self, "stranger writes {data:?} to the directory");
        self.zxid += 1;
        self.record = data;
    }

    fn foreign_delete(&mut self, name: &str) {
        self.stats.foreign += 1;
        note!(self, "stranger deletes {name}");
        self.zxid += 1;
        self.remove_node(name);
    }

    /// What a stranger may write to the directory's data without forging a
    /// release: garbage, or the name of a node that is gone and that no
    /// contender waits on.
    fn record_candidates(&self) -> Vec<String> {
        let watched: BTreeSet<&String> = self
            .contenders
            .iter()
            .filter_map(|c| c.acq.as_ref().and_then(|a| a.watching.as_ref()))
            .collect();
        let mut out = vec!["garbage".to_owned(), String::new()];
        out.extend(
            self.nodes
                .iter()
                .filter(|(name, n)| n.dzxid.is_some() && !watched.contains(name))
                .map(|(name, _)| name.clone())
                .take(6),
        );
        out
    }

    // ---- the contenders ----

    fn acq(&mut self, c: usize) -> &mut Acq {
        self.contenders[c].acq.as_mut().expect("an acquire")
    }

    fn start(&mut self, c: usize, mode: Mode, may_wait: bool, has_deadline: bool) {
        if self.sessions[self.contenders[c].session].state == SessionState::Expired {
            self.contenders[c].session = self.new_session(c);
        }
        let contender = &mut self.contenders[c];
        contender.acquires += 1;
        let layout = if self.mixed {
            layout_of(c, mode)
        } else {
            Layout::Native
        };
        let prefix = match layout {
            Layout::Native => format!("c{c}.{}-{}-", contender.acquires, mode.letter()),
            // The peers' token: unique per contender and acquire.
            peer => {
                let token = uuid::Uuid::from_u128(((c as u128) << 64) | contender.acquires as u128);
                peer.prefix("", token, mode).expect("a mode the layout has")
            }
        };
        contender.state = CState::Acquiring;
        contender.acq = Some(Acq {
            mode,
            may_wait,
            has_deadline,
            deadline_fired: false,
            prefix: prefix.clone(),
            name: None,
            machine: None,
            waiting: false,
            watching: None,
            set_own: false,
            own_reply: None,
            waited: false,
            last: "created",
            mark: false,
            outcome: None,
        });
        let s = self.contenders[c].session;
        note!(
            self,
            "c{c} (s{s}) starts {mode}{}{}",
            if may_wait { "" } else { " (try)" },
            if has_deadline { " with a deadline" } else { "" }
        );
        self.send_create(c);
    }

    fn send_create(&mut self, c: usize) {
        let prefix = self.acq(c).prefix.clone();
        self.send(c, Op::Create { prefix }, Purpose::Create);
        self.send(c, Op::List, Purpose::CreateList);
    }

    fn release(&mut self, c: usize) {
        let acq = self.acq(c);
        let name = acq.name.clone().expect("a held node");
        let op = if acq.mark {
            Op::Release { name: name.clone() }
        } else {
            Op::Delete { name: name.clone() }
        };
        acq.outcome = Some(Outcome::Released);
        note!(self, "c{c} releases {name}");
        self.contenders[c].state = CState::Releasing;
        self.send(c, op, Purpose::Release);
    }

    fn deadline(&mut self, c: usize) -> Check {
        note!(self, "c{c}: deadline");
        self.contenders[c].pending.clear();
        let acq = self.acq(c);
        acq.deadline_fired = true;
        acq.waiting = false;
        match acq.machine.as_mut() {
            Some(machine) if !machine.is_done() => {
                let action = machine.step(Input::Deadline);
                self.act(c, action)
            }
            _ => {
                acq.outcome = Some(Outcome::GaveUp);
                match acq.name.clone() {
                    Some(name) => self.withdraw(c, name),
                    None => {
                        self.contenders[c].state = CState::Withdrawing;
                        self.send(c, Op::List, Purpose::FindList { cleanup: true });
                    }
                }
                Ok(())
            }
        }
    }

    fn withdraw(&mut self, c: usize, name: String) {
        self.acq(c).name = Some(name.clone());
        self.contenders[c].state = CState::Withdrawing;
        self.send(c, Op::Delete { name }, Purpose::Withdraw);
    }

    fn finish(&mut self, c: usize) {
        let contender = &mut self.contenders[c];
        let outcome = contender
            .acq
            .take()
            .and_then(|a| a.outcome)
            .unwrap_or(Outcome::EndedCreating);
        contender.outcomes.push(outcome);
        contender.state = CState::Idle;
        contender.pending.clear();
        note!(self, "c{c} done: {outcome:?}");
    }

    fn deliver(&mut self, s: usize) -> Check {
        let Some((zxid, msg)) = self.sessions[s].outbound.pop_front() else {
            return Ok(());
        };
        let c = self.sessions[s].contender;
        if self.contenders[c].session != s {
            return Ok(());
        }
        self.contenders[c].basis = zxid;
        match msg {
            Msg::Reply { id, resp } => {
                if let Resp::Data { name, mzxid } = &resp {
                    let registry = &mut self.sessions[s].registry;
                    registry.retain(|(n, _)| n != name);
                    registry.push((name.clone(), *mzxid));
                }
                let Some(purpose) = self.contenders[c].pending.remove(&id) else {
                    return Ok(());
                };
                note!(self, "c{c} <- #{id} {purpose:?}: {resp:?}");
                self.on_reply(c, purpose, resp)
            }
            Msg::Watch { name, kind } => {
                self.sessions[s].registry.retain(|(n, _)| *n != name);
                let Some(acq) = self.contenders[c].acq.as_ref() else {
                    return Ok(());
                };
                let event = match kind {
                    WatchKind::Deleted => NodeEvent::Deleted,
                    WatchKind::DataChanged => NodeEvent::DataChanged,
                    WatchKind::SessionEnded => NodeEvent::SessionEnded,
                };
                let event = if acq.name.as_ref() == Some(&name) {
                    Event::Own(event)
                } else if acq.watching.as_ref() == Some(&name) {
                    Event::Watched(event)
                } else {
                    return Ok(());
                };
                note!(self, "c{c} <- {event:?} ({name})");
                self.on_event(c, event)
            }
            Msg::Interrupted => {
                note!(self, "c{c} <- Interrupted");
                self.on_event(c, Event::Interrupted)
            }
            Msg::Expired => {
                note!(self, "c{c} <- SessionEnded");
                self.on_event(c, Event::SessionEnded)
            }
        }
    }

    fn on_event(&mut self, c: usize, event: Event) -> Check {
        if self.contenders[c].state != CState::Acquiring {
            return Ok(());
        }
        let acq = self.acq(c);
        match acq.machine.as_mut() {
            Some(machine) if !machine.is_done() => {
                if std::mem::take(&mut acq.waiting) {
                    let action = machine.step(Input::Event(event));
                    self.act(c, action)
                } else {
                    machine.event(event);
                    Ok(())
                }
            }
            // Creating: the session's end is the acquire's end.
            None if event == Event::SessionEnded => {
                self.finish(c);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn step_machine(&mut self, c: usize, input: Input<'_>) -> Check {
        let action = self
            .acq(c)
            .machine
            .as_mut()
            .expect("a running machine")
            .step(input);
        self.act(c, action)
    }

    fn on_reply(&mut self, c: usize, purpose: Purpose, resp: Resp) -> Check {
        let watch_reply = |resp: &Resp| match resp {
            Resp::Data { .. } => Reply::Ok(()),
            Resp::NoNode => Reply::NoNode,
            Resp::Retry => Reply::Retry,
            _ => Reply::Failed,
        };
        if matches!(resp, Resp::Retry) {
            self.stats.retries += 1;
        }
        match purpose {
            Purpose::Create => match resp {
                Resp::Created(name) => self.acq(c).name = Some(name),
                Resp::Retry => {
                    self.contenders[c]
                        .pending
                        .retain(|_, p| !matches!(p, Purpose::CreateList));
                    self.send(c, Op::List, Purpose::FindList { cleanup: false });
                }
                _ => self.finish(c),
            },
            Purpose::CreateList => {
                let Some(name) = self.acq(c).name.clone() else {
                    return self.fail(format!("c{c}: a listing answered before the create"));
                };
                let listing = match resp {
                    Resp::Children(children) if children.contains(&name) => Some(children),
                    _ => None,
                };
                self.run_machine(c, name, listing)?;
            }
            Purpose::FindList { cleanup } => match resp {
                Resp::Children(children) => {
                    let prefix = self.acq(c).prefix.clone();
                    match children.into_iter().find(|n| n.starts_with(&prefix)) {
                        Some(name) => self.send(
                            c,
                            Op::Exists { name: name.clone() },
                            Purpose::FindCheck { name, cleanup },
                        ),
                        None if cleanup => self.finish(c),
                        None => self.send_create(c),
                    }
                }
                Resp::Retry => self.send(c, Op::List, Purpose::FindList { cleanup }),
                _ => self.finish(c),
            },
            Purpose::FindCheck { name, cleanup } => match resp {
                Resp::Stat(Some(owner)) if owner == self.contenders[c].session => {
                    if cleanup {
                        self.withdraw(c, name);
                    } else {
                        self.acq(c).name = Some(name.clone());
                        self.run_machine(c, name, None)?;
                    }
                }
                Resp::Stat(_) if cleanup => self.finish(c),
                Resp::Stat(_) => self.send_create(c),
                Resp::Retry => self.send(
                    c,
                    Op::Exists { name: name.clone() },
                    Purpose::FindCheck { name, cleanup },
                ),
                _ => self.finish(c),
            },
            Purpose::List => match resp {
                Resp::Children(children) => self.step_machine(c, Input::Listed(Reply::Ok(&children)))?,
                Resp::Retry => self.send(c, Op::List, Purpose::List),
                Resp::NoNode => self.step_machine(c, Input::Listed(Reply::NoNode))?,
                _ => self.step_machine(c, Input::Listed(Reply::Failed))?,
            },
            Purpose::WatchOwn => self.acq(c).own_reply = Some(watch_reply(&resp)),
            Purpose::WatchWatched => {
                let acq = self.acq(c);
                let own = if acq.set_own {
                    match acq.own_reply.take() {
                        Some(own) => Some(own),
                        None => return self.fail(format!("c{c}: no answer for the own watch")),
                    }
                } else {
                    None
                };
                self.step_machine(
                    c,
                    Input::WatchesSet {
                        own,
                        watched: watch_reply(&resp),
                    },
                )?;
            }
            Purpose::Rewatch => self.step_machine(c, Input::Rewatched(watch_reply(&resp)))?,
            Purpose::ReadRecord => match resp {
                Resp::Record { data, own } => {
                    let names_watched = self.acq(c).watching.as_deref() == Some(data.as_str());
                    let own = if own { Reply::Ok(()) } else { Reply::NoNode };
                    self.step_machine(c, Input::RecordRead(Reply::Ok(Record { names_watched, own })))?;
                }
                // The driver may retry the multi-read, or not.
                Resp::Retry if self.rng.one_in(2) => {
                    let own = self.acq(c).name.clone().expect("a node");
                    self.send(c, Op::ReadRecord { own }, Purpose::ReadRecord);
                }
                Resp::Retry => self.step_machine(c, Input::RecordRead(Reply::Retry))?,
                _ => self.step_machine(c, Input::RecordRead(Reply::Failed))?,
            },
            Purpose::CheckOwn => match resp {
                Resp::Stat(owner) => self.step_machine(c, Input::OwnChecked(Reply::Ok(owner.is_some())))?,
                Resp::Retry => {
                    let name = self.acq(c).name.clone().expect("a node");
                    self.send(c, Op::Exists { name }, Purpose::CheckOwn);
                }
                _ => self.step_machine(c, Input::OwnChecked(Reply::Failed))?,
            },
            Purpose::Release | Purpose::Withdraw => match resp {
                Resp::Retry => {
                    let acq = self.acq(c);
                    let name = acq.name.clone().expect("a node");
                    let op = if matches!(purpose, Purpose::Release) && acq.mark {
                        Op::Release { name }
                    } else {
                        Op::Delete { name }
                    };
                    self.send(c, op, purpose);
                }
                _ => self.finish(c),
            },
        }
        Ok(())
    }

    fn run_machine(&mut self, c: usize, name: String, listing: Option<Vec<String>>) -> Check {
        let mutation = self.mutation;
        let acq = self.acq(c);
        let mut machine = Machine::new(acq.mode, acq.may_wait, mutation);
        let action = machine.created(&name, listing.as_deref());
        acq.machine = Some(machine);
        note!(
            self,
            "c{c} created {name}{}",
            if listing.is_some() {
                " (with a listing)"
            } else {
                ""
            }
        );
        self.act(c, action)
    }

    fn act(&mut self, c: usize, action: Action) -> Check {
        note!(self, "c{c} -> {action:?}");
        let acq = self.acq(c);
        let me = acq.name.clone().expect("a node");
        acq.last = match &action {
            Action::List => "List",
            Action::SetWatches { .. } => "SetWatches",
            Action::Wait { .. } => "Wait",
            Action::Rewatch { .. } => "Rewatch",
            Action::ReadRecord { .. } => "ReadRecord",
            Action::CheckOwn => "CheckOwn",
            _ => acq.last,
        };
        match action {
            Action::List => {
                acq.watching = None;
                self.send(c, Op::List, Purpose::List);
            }
            Action::SetWatches { own, watched } => {
                acq.waited = true;
                acq.watching = Some(watched.clone());
                acq.set_own = own;
                acq.own_reply = None;
                if own {
                    self.send(c, Op::GetWatch { name: me }, Purpose::WatchOwn);
                }
                self.send(c, Op::GetWatch { name: watched }, Purpose::WatchWatched);
            }
            Action::Wait { poll } => {
                if poll {
                    return self.fail(format!("c{c} polls, with no ACLs in the model"));
                }
                acq.waiting = true;
            }
            Action::Rewatch { watched } => {
                if acq.watching.as_ref() != Some(&watched) {
                    let what = format!("c{c} rewatches {watched}, not {:?}", acq.watching);
                    return self.fail(what);
                }
                self.send(c, Op::GetWatch { name: watched }, Purpose::Rewatch);
            }
            Action::ReadRecord { watched } => {
                if acq.watching.as_ref() != Some(&watched) {
                    let what = format!("c{c} reads the record for {watched}, not {:?}", acq.watching);
                    return self.fail(what);
                }
                self.send(c, Op::ReadRecord { own: me }, Purpose::ReadRecord);
            }
            Action::CheckOwn => self.send(c, Op::Exists { name: me }, Purpose::CheckOwn),
            Action::Grant { mark } => return self.granted(c, me, mark),
            Action::GiveUp => {
                if !acq.deadline_fired && acq.may_wait {
                    return self.fail(format!("c{c} gives up with no deadline"));
                }
                acq.outcome = Some(Outcome::GaveUp);
                acq.watching = None;
                self.stats.gave_up += 1;
                self.withdraw(c, me);
            }
            Action::Fail(failure) => return self.failed(c, me, failure),
        }
        Ok(())
    }

    fn granted(&mut self, c: usize, me: String, mark: bool) -> Check {
        let basis = self.contenders[c].basis;
        let children = self.children_at(basis);
        let acq = self.contenders[c].acq.as_ref().expect("an acquire");
        let (mode, waited, last) = (acq.mode, acq.waited, acq.last);
        if !children.contains(&me) {
            return self.fail(format!(
                "c{c} granted on a message of zxid {basis}, when its node {me} was gone (deleted at {:?})",
                self.nodes[&me].dzxid
            ));
        }
        match decide(&me, &children) {
            Ok(Decision::Granted) => {}
            _ if !children.contains(&me) => {}
            other => {
                return self.fail(format!(
                    "c{c} granted {me} on a message of zxid {basis}, when the directory {children:?} said {other:?}"
                ))
            }
        }
        let native = !self.mixed || layout_of(c, mode) == Layout::Native;
        if mark != (mode == Mode::Write && waited && native) {
            return self.fail(format!(
                "c{c} ({mode}, waited: {waited}) granted with mark {mark}"
            ));
        }
        let acq = self.acq(c);
        acq.mark = mark;
        acq.watching = None;
        let handoff = acq.machine.as_ref().is_some_and(|m| m.inner.counts().handoff);
        self.contenders[c].state = CState::Holding;
        self.stats.grants += 1;
        self.stats.peer_grants += u64::from(!native);
        if handoff {
            self.stats.handoffs += 1;
        }
        match last {
            "ReadRecord" => self.stats.record_grants += 1,
            "CheckOwn" => self.stats.checked_grants += 1,
            _ => {}
        }
        self.check_safety()
    }

    fn failed(&mut self, c: usize, me: String, failure: Failure) -> Check {
        let session = self.contenders[c].session;
        let acq = self.acq(c);
        acq.outcome = Some(Outcome::Failed(failure));
        acq.watching = None;
        match failure {
            Failure::Lost => {
                self.stats.lost += 1;
                if self.live(&me) {
                    return self.fail(format!("c{c} failed with Lost, but {me} exists"));
                }
                self.finish(c);
            }
            Failure::SessionEnded => {
                self.stats.session_ended += 1;
                if self.sessions[session].state != SessionState::Expired {
                    return self.fail(format!("c{c} failed with SessionEnded in a live session"));
                }
                self.finish(c);
            }
            Failure::Exhausted => {
                self.stats.exhausted += 1;
                let seq = self.nodes[&me].seq;
                let shared = self.nodes.iter().any(|(n, node)| *n != me && node.seq == seq);
                if is_valid_seq(seq) && !shared {
                    return self.fail(format!("c{c} failed with Exhausted at sequence {seq}"));
                }
                self.withdraw(c, me);
            }
            other => return self.fail(format!("c{c} failed with {other:?}")),
        }
        Ok(())
    }

    // ---- checks ----

    fn holders(&self) -> Vec<(usize, Mode, String)> {
        self.contenders
            .iter()
            .enumerate()
            .filter(|(_, k)| k.state == CState::Holding)
            .filter_map(|(c, k)| {
                let acq = k.acq.as_ref()?;
                let name = acq.name.clone()?;
                self.live(&name).then_some((c, acq.mode, name))
            })
            .collect()
    }

    fn check_safety(&self) -> Check {
        let holders = self.holders();
        if holders.len() > 1 && holders.iter().any(|(_, m, _)| *m == Mode::Write) {
            return self.fail(format!("a writer holds together with others: {holders:?}"));
        }
        Ok(())
    }

    /// Why contender `c` has not finished, for the report of a stuck run.
    fn describe(&self, c: usize) -> String {
        let k = &self.contenders[c];
        let s = &self.sessions[k.session];
        match &k.acq {
            None => "idle".to_owned(),
            Some(acq) => format!(
                "{:?} {:?} as {:?}, last action {}, waiting {}, watching {:?} (exists: {}), session {:?}, pending {:?}",
                k.state,
                acq.mode,
                acq.name,
                acq.last,
                acq.waiting,
                acq.watching,
                acq.watching.as_deref().is_some_and(|w| self.live(w)),
                s.state,
                k.pending
            ),
        }
    }

    // ---- the scheduler ----

    /// Every enabled move of one kind.
    fn moves(&self, kind: Kind) -> Vec<Move> {
        let current = |w: &World, s: usize| w.contenders[w.sessions[s].contender].session == s;
        let sessions = 0..self.sessions.len();
        match kind {
            Kind::Deliver => sessions
                .filter(|&s| !self.sessions[s].outbound.is_empty())
                .map(Move::Deliver)
                .collect(),
            Kind::Apply => sessions
                .filter(|&s| {
                    self.sessions[s].state == SessionState::Connected && !self.sessions[s].inflight.is_empty()
                })
                .map(Move::Apply)
                .collect(),
            Kind::Release => (0..self.contenders.len())
                .filter(|&c| self.contenders[c].state == CState::Holding)
                .map(Move::Release)
                .collect(),
            Kind::Start => (0..self.contenders.len())
                .filter(|&c| self.contenders[c].state == CState::Idle)
                .map(Move::Start)
                .collect(),
            Kind::Reconnect => sessions
                .filter(|&s| self.sessions[s].state == SessionState::Disconnected)
                .map(Move::Reconnect)
                .collect(),
            Kind::Deadline => (0..self.contenders.len())
                .filter(|&c| {
                    self.contenders[c].state == CState::Acquiring
                        && self.contenders[c]
                            .acq
                            .as_ref()
                            .is_some_and(|a| a.has_deadline && !a.deadline_fired)
                })
                .map(Move::Deadline)
                .collect(),
            Kind::Disconnect => sessions
                .filter(|&s| self.sessions[s].state == SessionState::Connected && current(self, s))
                .map(Move::Disconnect)
                .collect(),
            Kind::Expire => sessions
                .filter(|&s| self.sessions[s].state != SessionState::Expired && current(self, s))
                .map(Move::Expire)
                .collect(),
            Kind::ForeignData => self.children().into_iter().map(Move::ForeignData).collect(),
            Kind::ForeignRecord => self
                .record_candidates()
                .into_iter()
                .map(Move::ForeignRecord)
                .collect(),
            Kind::ForeignDelete => self.children().into_iter().map(Move::ForeignDelete).collect(),
        }
    }

    fn perform(&mut self, m: Move) -> Check {
        match m {
            Move::Deliver(s) => self.deliver(s)?,
            Move::Apply(s) => self.apply_next(s),
            Move::Release(c) => self.release(c),
            Move::Start(c) => {
                let mode = if self.rng.one_in(2) {
                    Mode::Read
                } else {
                    Mode::Write
                };
                let may_wait = !self.rng.one_in(8);
                let has_deadline = self.rng.one_in(4);
                self.start(c, mode, may_wait, has_deadline);
            }
            Move::Reconnect(s) => self.reconnect(s, Order::Random),
            Move::Deadline(c) => self.deadline(c)?,
            Move::Disconnect(s) => self.disconnect(s, None),
            Move::Expire(s) => self.expire(s),
            Move::ForeignData(name) => self.foreign_data(&name),
            Move::ForeignRecord(data) => self.foreign_record(data),
            Move::ForeignDelete(name) => self.foreign_delete(&name),
        }
        self.stats.steps += 1;
        self.step += 1;
        self.check_safety()
    }

    /// One step of the random part: `choice` picks the kind of move (by
    /// weight, among the kinds with a move enabled), the move, and seeds
    /// the sub-choices. Choice 0 delivers the first message there is.
    fn random_step(&mut self, choice: u32, faults: u8) -> Check {
        self.rng = Rng(u64::from(choice) ^ ((self.step as u64) << 32));
        let f = u32::from(faults);
        let rare = [0, 1, 1, 2][usize::from(faults.min(3))];
        let table = [
            (Kind::Deliver, 30),
            (Kind::Apply, 30),
            (Kind::Release, 4),
            (Kind::Start, 4),
            (Kind::Reconnect, 6),
            (Kind::Deadline, 1),
            (Kind::Disconnect, 2 * f),
            (Kind::Expire, rare),
            (Kind::ForeignData, f),
            (Kind::ForeignRecord, f),
            (Kind::ForeignDelete, rare),
        ];
        let mut enabled = Vec::new();
        let mut total = 0;
        for (kind, weight) in table {
            if weight == 0 {
                continue;
            }
            let moves = self.moves(kind);
            if !moves.is_empty() {
                total += weight;
                enabled.push((weight, moves));
            }
        }
        if enabled.is_empty() {
            return Ok(());
        }
        let mut pick = (choice & 0xffff) % total;
        for (weight, moves) in enabled {
            if pick < weight {
                let m = moves[(choice >> 16) as usize % moves.len()].clone();
                return self.perform(m);
            }
            pick -= weight;
        }
        unreachable!("the weights add up")
    }

    /// The end of a schedule: no more faults, deadlines or acquires;
    /// sessions reconnect, holders release. Everything must come to rest,
    /// every acquire finished, no node of a live session left.
    fn drain(&mut self, seed: u64) -> Check {
        note!(self, "drain");
        let mut rng = Rng(seed);
        let limit = 2000 + 400 * self.contenders.len();
        let mut steps = 0;
        loop {
            let mut moves = Vec::new();
            for kind in [Kind::Deliver, Kind::Apply, Kind::Reconnect, Kind::Release] {
                moves.extend(self.moves(kind));
            }
            if moves.is_empty() {
                break;
            }
            steps += 1;
            if steps > limit {
                return self.fail(format!("no rest after {limit} steps of the drain"));
            }
            self.rng = Rng(rng.next_u64());
            let m = moves[rng.index(moves.len())].clone();
            self.perform(m)?;
        }
        for c in 0..self.contenders.len() {
            if self.contenders[c].state != CState::Idle {
                return self.fail(format!("c{c} is stuck: {}", self.describe(c)));
            }
        }
        let orphans: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.dzxid.is_none() && self.sessions[n.owner].state != SessionState::Expired)
            .map(|(name, _)| name.clone())
            .collect();
        if !orphans.is_empty() {
            return self.fail(format!("nodes of live sessions left behind: {orphans:?}"));
        }
        Ok(())
    }

    fn report(&self, what: &str) -> String {
        const TAIL: usize = 400;
        let skip = self.trace.len().saturating_sub(TAIL);
        let mut out = format!(
            "{what}\n--- trace ({} lines, last {TAIL}) ---\n",
            self.trace.len()
        );
        for line in &self.trace[skip..] {
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Deliver,
    Apply,
    Release,
    Start,
    Reconnect,
    Deadline,
    Disconnect,
    Expire,
    ForeignData,
    ForeignRecord,
    ForeignDelete,
}

#[derive(Debug, Clone)]
enum Move {
    Deliver(usize),
    Apply(usize),
    Release(usize),
    Start(usize),
    Reconnect(usize),
    Deadline(usize),
    Disconnect(usize),
    Expire(usize),
    ForeignData(String),
    ForeignRecord(String),
    ForeignDelete(String),
}

// ---- schedules -------------------------------------------------------------

/// One schedule: how many contenders, where the counter starts, whether
/// one create at the limit gets a negative sequence, how often faults
/// happen (0: never), the drain's seed, and one choice per step.
#[derive(Debug, Clone)]
struct Schedule {
    /// Contenders in every layout (peers never mark), or native only.
    mixed: bool,
    contenders: usize,
    counter: i32,
    negative_once: bool,
    faults: u8,
    drain_seed: u64,
    choices: Vec<u32>,
}

fn schedule() -> impl Strategy<Value = Schedule> {
    (
        any::<bool>(),
        3usize..=8,
        prop_oneof![4 => Just(0i32), 1 => (i32::MAX - 40)..=i32::MAX],
        any::<bool>(),
        0u8..=3,
        any::<u64>(),
        prop::collection::vec(any::<u32>(), 40..320),
    )
        .prop_map(
            |(mixed, contenders, counter, negative_once, faults, drain_seed, choices)| Schedule {
                mixed,
                contenders,
                counter,
                negative_once,
                faults,
                drain_seed,
                choices,
            },
        )
}

/// Runs one schedule; the error is the broken check and the trace.
fn simulate(schedule: &Schedule, mutation: Mutation) -> Result<Stats, String> {
    let run = |tracing: bool| -> (World, Check) {
        let mut world = World::new(schedule.contenders, schedule.counter, mutation);
        world.negative_once = schedule.negative_once;
        world.mixed = schedule.mixed;
        world.tracing = tracing;
        let mut run = || -> Check {
            for &choice in &schedule.choices {
                world.random_step(choice, schedule.faults)?;
            }
            world.drain(schedule.drain_seed)
        };
        let result = run();
        (world, result)
    };
    match run(false) {
        (mut world, Ok(())) => {
            world.stats.runs = 1;
            Ok(world.stats)
        }
        (_, Err(_)) => {
            let (world, result) = run(true);
            let what = result
                .err()
                .unwrap_or_else(|| "the run did not fail again".to_owned());
            Err(world.report(&what))
        }
    }
}

/// Cases of the main simulation: `SIM_CASES` overrides.
const CASES: u32 = 5000;

/// Cases a mutation test may take to find its violation.
const MUTATION_BUDGET: u32 = 300;

fn cases() -> u32 {
    std::env::var("SIM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES)
}

static TOTALS: Mutex<Option<Stats>> = Mutex::new(None);

/// Random schedules with the real machine: no check ever fails. Failing
/// schedules are shrunk and kept in `proptest-regressions/simulation.txt`.
#[test]
fn schedules_keep_every_rule() {
    let config = ProptestConfig {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/simulation.txt",
        ))),
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&schedule(), |schedule| {
        let stats = simulate(&schedule, Mutation::None).map_err(TestCaseError::fail)?;
        TOTALS
            .lock()
            .unwrap()
            .get_or_insert_with(Stats::default)
            .add(&stats);
        Ok(())
    });
    match result {
        Ok(()) => {}
        Err(TestError::Fail(why, schedule)) => panic!("{why}\nminimal schedule: {schedule:?}"),
        Err(e) => panic!("{e}"),
    }
    let totals = TOTALS.lock().unwrap().clone().unwrap_or_default();
    eprintln!("simulation totals: {totals:?}");
    // The schedules reach the interesting paths (the counts are in the
    // thousands; these floors only catch a scheduler that stopped reaching them).
    if totals.runs >= 200 {
        for (what, n) in [
            ("hand-offs", totals.handoffs),
            ("grants after the release record", totals.record_grants),
            ("grants in a peer's layout", totals.peer_grants),
            ("grants after an own-node check", totals.checked_grants),
            ("Lost", totals.lost),
            ("SessionEnded", totals.session_ended),
            ("Exhausted", totals.exhausted),
            ("gave up", totals.gave_up),
        ] {
            assert!(n > 0, "no {what} in {} runs: {totals:?}", totals.runs);
        }
    }
}

/// Runs schedules from a fixed seed with a broken machine; returns the
/// number of the first case that broke a check, and its report.
fn hunt(mutation: Mutation) -> Option<(u32, String)> {
    let config = ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let strategy = schedule();
    for case in 1..=MUTATION_BUDGET {
        let tree = strategy.new_tree(&mut runner).expect("a schedule");
        if let Err(report) = simulate(&tree.current(), mutation) {
            return Some((case, report));
        }
    }
    None
}

fn assert_caught(mutation: Mutation) {
    match hunt(mutation) {
        Some((case, report)) => {
            // `SIM_SHOW=1` shows the whole report.
            let shown = match std::env::var_os("SIM_SHOW") {
                Some(_) => report.as_str(),
                None => report.lines().next().unwrap_or_default(),
            };
            eprintln!("{mutation:?} caught at case {case}: {shown}");
        }
        None => panic!("{mutation:?} went unnoticed in {MUTATION_BUDGET} cases"),
    }
}

#[test]
fn mutation_data_change_grants_is_caught() {
    assert_caught(Mutation::DataChangeGrants);
}

#[test]
fn mutation_skip_own_check_is_caught() {
    assert_caught(Mutation::SkipOwnCheck);
}

#[test]
fn mutation_ignore_interrupted_is_caught() {
    assert_caught(Mutation::IgnoreInterrupted);
}

#[test]
fn mutation_any_record_is_caught() {
    assert_caught(Mutation::AnyRecord);
}

#[test]
fn mutation_writer_granted_at_wait_is_caught() {
    assert_caught(Mutation::WriterGrantedAtWait);
}

#[test]
fn mutation_ignore_own_deletion_is_caught() {
    assert_caught(Mutation::IgnoreOwnDeletion);
}

// ---- scenarios -------------------------------------------------------------

impl World {
    /// Applies and delivers everything there is, in a fixed order; sessions
    /// stay as they are (a disconnected one only gets its local messages).
    fn settle(&mut self) -> Check {
        loop {
            let m = match self.moves(Kind::Apply).into_iter().next() {
                Some(m) => m,
                None => match self.moves(Kind::Deliver).into_iter().next() {
                    Some(m) => m,
                    None => return Ok(()),
                },
            };
            self.perform(m)?;
        }
    }

    fn name(&self, c: usize) -> String {
        self.contenders[c]
            .acq
            .as_ref()
            .and_then(|a| a.name.clone())
            .expect("a node")
    }

    fn holding(&self, c: usize) -> bool {
        self.contenders[c].state == CState::Holding
    }

    /// Waiting on `watched`'s node.
    fn waits_on(&self, c: usize, watched: usize) -> bool {
        let acq = self.contenders[c].acq.as_ref();
        acq.is_some_and(|a| a.waiting && a.watching == Some(self.name(watched)))
    }

    fn last_outcome(&self, c: usize) -> Option<Outcome> {
        self.contenders[c].outcomes.last().copied()
    }

    fn run(&mut self, script: impl FnOnce(&mut World) -> Check) -> Check {
        script(self).map_err(|what| self.report(&what))
    }
}

fn scenario(
    mutation: Mutation,
    contenders: usize,
    counter: i32,
    script: impl FnOnce(&mut World) -> Check,
) -> Check {
    let mut world = World::new(contenders, counter, mutation);
    world.run(script)
}

fn expect(cond: bool, what: &str) -> Check {
    if cond {
        Ok(())
    } else {
        Err(format!("expected: {what}"))
    }
}

/// A writer waits on a writer that holds; while its connection is lost, a
/// stranger deletes its node and the holder releases; the reconnection
/// delivers the watched node's deletion first, its own node's last. It
/// must not take the lock: `Interrupted` makes it ask whether its node
/// exists, and it fails with `Lost`.
fn reconnect_own_deletion_last(mutation: Mutation) -> Check {
    scenario(mutation, 2, 0, |w| {
        w.start(0, Mode::Write, true, false);
        w.settle()?;
        w.start(1, Mode::Write, true, false);
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        let s1 = w.contenders[1].session;
        w.disconnect(s1, Some(0));
        let mine = w.name(1);
        w.foreign_delete(&mine);
        w.release(0);
        w.settle()?;
        w.reconnect(s1, Order::OwnLast);
        w.settle()?;
        expect(
            w.last_outcome(1) == Some(Outcome::Failed(Failure::Lost)),
            "c1 fails with Lost",
        )?;
        w.drain(1)
    })
}

#[test]
fn scenario_reconnect_delivers_own_deletion_after_watched_deletion() {
    reconnect_own_deletion_last(Mutation::None).unwrap();
    for broken in [Mutation::IgnoreInterrupted, Mutation::SkipOwnCheck] {
        let report = reconnect_own_deletion_last(broken).unwrap_err();
        assert!(report.contains("when its node"), "{broken:?}: {report}");
    }
}

/// A stranger writes to the node a waiter watches: it watches again, and
/// is granted only once the holder releases.
fn stray_data_on_watched(mutation: Mutation) -> Check {
    scenario(mutation, 2, 0, |w| {
        w.start(0, Mode::Write, true, false);
        w.settle()?;
        w.start(1, Mode::Read, true, false);
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        let held = w.name(0);
        w.foreign_data(&held);
        w.settle()?;
        expect(w.waits_on(1, 0), "c1 waits on c0 again")?;
        w.release(0);
        w.settle()?;
        expect(w.holding(1), "c1 holds")?;
        w.drain(1)
    })
}

#[test]
fn scenario_stray_set_data_on_the_watched_node() {
    stray_data_on_watched(Mutation::None).unwrap();
    let report = stray_data_on_watched(Mutation::DataChangeGrants).unwrap_err();
    assert!(report.contains("said Ok(Wait"), "{report}");
}

/// A stranger deletes a waiter's node while the holder holds: the waiter
/// fails with `Lost` at once; the writer behind it waits on the holder.
fn foreign_delete_of_waiter(mutation: Mutation) -> Check {
    scenario(mutation, 3, 0, |w| {
        w.start(0, Mode::Write, true, false);
        w.settle()?;
        w.start(1, Mode::Read, true, false);
        w.settle()?;
        w.start(2, Mode::Write, true, false);
        w.settle()?;
        expect(w.waits_on(1, 0) && w.waits_on(2, 1), "c1 waits on c0, c2 on c1")?;
        let waiter = w.name(1);
        w.foreign_delete(&waiter);
        w.settle()?;
        if mutation == Mutation::None {
            expect(
                w.last_outcome(1) == Some(Outcome::Failed(Failure::Lost)),
                "c1 fails with Lost at once",
            )?;
            expect(w.holding(0) && w.waits_on(2, 0), "c0 holds, c2 waits on it")?;
        }
        w.release(0);
        w.settle()?;
        expect(w.holding(2), "c2 holds")?;
        w.drain(1)
    })
}

#[test]
fn scenario_foreign_delete_of_a_waiter_while_the_holder_holds() {
    foreign_delete_of_waiter(Mutation::None).unwrap();
    let report = foreign_delete_of_waiter(Mutation::IgnoreOwnDeletion).unwrap_err();
    assert!(report.contains("when its node"), "{report}");
}

/// The holder's session expires: its node goes, the waiter behind it
/// takes the lock; the old holder is no holder any more, and acquires
/// again in a new session.
#[test]
fn scenario_an_expired_holder() {
    scenario(Mutation::None, 2, 0, |w| {
        w.start(0, Mode::Write, true, false);
        w.settle()?;
        w.start(1, Mode::Write, true, false);
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        let s0 = w.contenders[0].session;
        w.expire(s0);
        w.settle()?;
        expect(w.holding(1), "c1 holds")?;
        expect(
            w.holders().iter().map(|h| h.0).collect::<Vec<_>>() == [1],
            "c1 is the only holder",
        )?;
        w.release(0);
        w.settle()?;
        expect(w.last_outcome(0) == Some(Outcome::Released), "c0's release ends")?;
        w.start(0, Mode::Read, true, false);
        w.settle()?;
        expect(
            w.contenders[0].session != s0 && w.waits_on(0, 1),
            "c0 waits on c1 in a new session",
        )?;
        w.drain(1)
    })
    .unwrap();
}

/// The counter starts two short of its limit: the first two contenders
/// get valid sequences; the third gets 2147483647 (the counter sticks), the
/// fourth a negative one, the fifth 2147483647 again: all three withdraw
/// with `Exhausted`, and the first two are not disturbed.
#[test]
fn scenario_the_counter_at_its_limit() {
    scenario(Mutation::None, 5, i32::MAX - 2, |w| {
        w.start(0, Mode::Read, true, false);
        w.settle()?;
        w.start(1, Mode::Write, true, false);
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        for (c, negative) in [(2, false), (3, true), (4, false)] {
            w.negative_once = negative;
            w.start(c, Mode::Read, true, false);
            w.settle()?;
            expect(
                w.last_outcome(c) == Some(Outcome::Failed(Failure::Exhausted)),
                "Exhausted at the limit",
            )?;
        }
        let seqs: Vec<i32> = w.nodes.values().map(|n| n.seq).collect();
        expect(
            seqs.contains(&i32::MIN) && seqs.iter().filter(|s| **s == i32::MAX).count() == 2,
            "two nodes at the limit and a negative one",
        )?;
        expect(w.children().len() == 2, "the exhausted nodes are withdrawn")?;
        w.release(0);
        w.settle()?;
        expect(w.holding(1), "c1 holds")?;
        w.drain(1)
    })
    .unwrap();
}

/// The bug the simulation found (see the module documentation): a writer waits on a
/// reader that holds. Between the answers of its `SetWatches { own: true }`
/// a stranger writes to its node (the own watch fires: `Own(DataChanged)`,
/// fed with `Acquire::event`), then deletes it (no watch left: no event);
/// the reader releases; the watched node's `getData` answers `NoNode`, and
/// with `deletion_grants` the machine hands the lock over, as its own watch
/// is "set" again. It must list again instead, and fail with `Lost`.
#[test]
fn own_watch_fired_while_setting_watches() {
    scenario(Mutation::None, 2, 0, |w| {
        w.start(0, Mode::Read, true, false);
        w.settle()?;
        w.start(1, Mode::Write, true, false);
        let s1 = w.contenders[1].session;
        // The create and the listing: SetWatches { own: true, watched: c0 }.
        w.apply_next(s1);
        w.apply_next(s1);
        w.deliver(s1)?;
        w.deliver(s1)?;
        // The own watch is set and answered; the watched node's is not yet.
        w.apply_next(s1);
        w.deliver(s1)?;
        let mine = w.name(1);
        w.foreign_data(&mine);
        w.deliver(s1)?;
        w.foreign_delete(&mine);
        w.release(0);
        w.settle()?;
        expect(
            w.last_outcome(1) == Some(Outcome::Failed(Failure::Lost)),
            "c1 fails with Lost",
        )?;
        w.drain(1)
    })
    .unwrap();
}
