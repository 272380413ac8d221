//! The wire: every request a contender's action sends, with every byte of
//! it decided here, and how the server's answers become the machine's
//! input. One interpreter for every carrier: the library's driver
//! (`zk_rwlock`) and the simulation (`core/tests/simulation.rs`) both build
//! an [`Exchange`] for each action of [`crate::contender::Contender`], carry
//! it with [`Carry`] (which requests leave when, which are sent again, which
//! watches are kept, whose error is reported), and step the machine with
//! [`Wire::settle`]. A
//! carrier translates a [`Request`] into its client's call and the
//! client's answer into a [`Reply`] or an [`Error`], one to one; it decides
//! nothing.
//!
//! # Carrying an exchange
//!
//! [`Carry`] is the loop both carriers run: it says what to send, and
//! when to send a request again; it feeds the answers, keeps the watches
//! the exchange names, and says whose error a failure reports.
//!
//! ```text
//! exchange = wire.exchange(&action, &machine)?     // None: an end, or the wait's Wait
//! carry = Carry::new(exchange, Backoff::request(session timeout))
//! until carry.is_complete():
//!     send each carry.poll_send() as it is (after its pause)
//!     carry.answered(index, answer with the watches it left, time since sent)
//! Carried { exchange, kept, blamed } = carry.finish()
//! action = wire.settle(&exchange, &mut machine)
//! ```

mod arrivals;
mod carry;
mod keeping;
mod poll;
mod run;
mod watches;

pub use arrivals::{Arrivals, Now, Taken};
pub use carry::{Answered, Carried, Carry, Fault, Kept, Send};
pub use keeping::{Keeper, Keeping, Loss, Report};
pub use poll::Poll;
pub use run::{Next, Run, Step, Stepping, Wait};
pub use watches::{Fired, Lingering, Watches, Watching};

use crate::acquire::{self, Record, Reply as WaitReply};
use crate::contender::{self, child_path, Action, Answer, Contender, Created, HeldNode, Owner};
use crate::node_name;

/// How a node is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    /// Ephemeral, its name followed by the directory's sequence number
    /// (ten digits).
    EphemeralSequential,
    /// Ephemeral.
    Ephemeral,
    /// Persistent.
    Persistent,
    /// A container: the server removes it once it is empty.
    Container,
}

/// Which ACL a create gives its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acl {
    /// The ACL of the lock's contender nodes.
    Contender,
    /// The ACL of the lock's directory (and the parents it makes).
    Directory,
    /// The ACL the last [`Request::GetAcl`] read.
    Read,
}

/// One request, as it goes to the server. Paths are full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Create a node: answered [`Reply::Created`].
    Create {
        /// Its path (the name's prefix, for a sequential node).
        path: String,
        /// Its data.
        data: Vec<u8>,
        /// Ephemeral, sequential, persistent or a container.
        mode: CreateMode,
        /// Its ACL.
        acl: Acl,
    },
    /// Create `path` and every missing node above it, persistent, with the
    /// directory's ACL: answered [`Reply::Done`] (also when they exist).
    MakePath {
        /// The deepest node to make.
        path: String,
    },
    /// List the children (`getChildren`; with `stat`, `getChildren2`, whose
    /// answer also carries the listed node's stat): answered
    /// [`Reply::Children`] (its `data_length` 0 without `stat`).
    List {
        /// The node whose children are listed.
        path: String,
        /// Ask for the node's stat too (the create's listing: whether the
        /// directory holds data).
        stat: bool,
        /// Leave a watch on the node's children (one per session and
        /// node on the server: fired by a child's creation or deletion, or
        /// the node's).
        watch: bool,
    },
    /// Bring the server up to the leader (`sync`): answered [`Reply::Done`].
    Sync {
        /// The path named.
        path: String,
    },
    /// Read a node's data, with a data watch if `watch`: answered
    /// [`Reply::Data`]. On a missing node no watch is left behind.
    GetData {
        /// The node.
        path: String,
        /// Leave a data watch.
        watch: bool,
    },
    /// A node's stat, with an `exists` watch if `watch` (which waits for a
    /// creation too): answered [`Reply::Stat`]. Needs no permission, but
    /// from ZooKeeper 3.7.3, 3.8.4 and 3.9.2 on READ of a node that is there
    /// (ZOOKEEPER-2590: `NoAuth` otherwise).
    Exists {
        /// The node.
        path: String,
        /// Leave an `exists` watch.
        watch: bool,
    },
    /// Delete a node (at `version`; `None`: any): answered [`Reply::Done`].
    Delete {
        /// The node.
        path: String,
        /// The version it must have.
        version: Option<i32>,
    },
    /// A transaction (`multi`) of the machine's operations, in order; a
    /// create in it is ephemeral, with the contender nodes' ACL: answered
    /// [`Reply::Multi`], or [`Error::Refused`] naming the failing index.
    Multi {
        /// The operations, in the order sent.
        ops: Vec<contender::Op>,
    },
    /// Delete the node at `version` and create it again, persistent, with
    /// the ACL the last [`Request::GetAcl`] read, in one transaction:
    /// answered [`Reply::Done`].
    Recreate {
        /// The node.
        path: String,
        /// The version read with its ACL.
        version: i32,
    },
    /// Read the data of each node in one multi-read: answered
    /// [`Reply::Reads`].
    ReadAll {
        /// The nodes, in order.
        paths: Vec<String>,
    },
    /// A node's ACL and stat: answered [`Reply::Acl`].
    GetAcl {
        /// The node.
        path: String,
    },
    /// Set a data watch on each of `data` and an `exists` watch on each of
    /// `exist` in one `SetWatches` request, relative to `relative_zxid`:
    /// answered [`Reply::WatchesSet`]. The
    /// server first fires what changed since that zxid (a data-watched
    /// node missing: deleted; written after it: data changed; an
    /// exist-watched node there: created), then sets the others; it fires
    /// nothing for a node this session may not read.
    SetWatches {
        /// What changed after this zxid fires at once.
        relative_zxid: i64,
        /// The nodes to set a data watch on.
        data: Vec<String>,
        /// The nodes to set an `exists` watch on.
        exist: Vec<String>,
    },
}

impl Request {
    /// The node the request is about (a transaction's first operation's);
    /// what an error on it names.
    pub fn path(&self) -> &str {
        match self {
            Request::Create { path, .. }
            | Request::MakePath { path }
            | Request::List { path, .. }
            | Request::Sync { path }
            | Request::GetData { path, .. }
            | Request::Exists { path, .. }
            | Request::Delete { path, .. }
            | Request::Recreate { path, .. }
            | Request::GetAcl { path } => path,
            Request::Multi { ops } => ops.first().map_or("", |op| match op {
                contender::Op::Check { path, .. }
                | contender::Op::Create { path, .. }
                | contender::Op::Delete { path, .. }
                | contender::Op::SetData { path, .. } => path,
            }),
            Request::ReadAll { paths } => paths.first().map_or("", String::as_str),
            Request::SetWatches { data, exist, .. } => {
                data.first().or(exist.first()).map_or("", String::as_str)
            }
        }
    }

    /// The nodes of the watches the request sets, in the order it sets
    /// them ([`Exchange::watch_of`]'s): a `SetWatches`'s data watches, then
    /// its `exists` watches; any other request's node.
    pub fn watched_paths(&self) -> Vec<&str> {
        match self {
            Request::SetWatches { data, exist, .. } => data.iter().chain(exist).map(String::as_str).collect(),
            other => vec![other.path()],
        }
    }

    /// True if the request leaves a watch when it succeeds (an `exists`
    /// watch also when the node is missing).
    pub fn watches(&self) -> bool {
        matches!(
            self,
            Request::GetData { watch: true, .. }
                | Request::Exists { watch: true, .. }
                | Request::List { watch: true, .. }
                | Request::SetWatches { .. }
        )
    }
}

/// A node's stat, as far as the rules look at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// The zxid that made it: a contender's fencing token.
    pub czxid: i64,
    /// The session that owns it (ephemeral), 0 for a persistent node.
    pub ephemeral_owner: i64,
}

/// A successful answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A create's: the new node's czxid, and its sequence number (for a
    /// sequential node).
    Created {
        /// The node's czxid.
        czxid: i64,
        /// The sequence number the server appended.
        seq: i64,
    },
    /// A listing: the children, and the listed node's data length.
    Children {
        /// The child names.
        children: Vec<String>,
        /// The listed node's data length.
        data_length: i32,
    },
    /// A read's: the data and the stat.
    Data {
        /// The node's data.
        data: Vec<u8>,
        /// Its stat.
        stat: Stat,
    },
    /// An `exists`: the stat, `None` for a missing node.
    Stat(Option<Stat>),
    /// Done, nothing to say.
    Done,
    /// A transaction's: what each operation did, in order
    /// ([`Exchange::accepts`] checks that they match what was sent).
    Multi(Vec<Done>),
    /// A multi-read's: each node's data, or the error reading it.
    Reads(Vec<Result<Vec<u8>, Error>>),
    /// A [`Request::SetWatches`]'s: which of its watches (in the order of
    /// its paths: data, then exist) had fired when its answer came, that is
    /// at once, for what changed since its zxid (the server sends those
    /// events before its answer). A carrier that cannot tell an event sent
    /// before the answer from one sent just after it says fired for both:
    /// at worst a release's marker is taken for a stranger's, and the
    /// release record decides.
    WatchesSet {
        /// Fired at once, one per path.
        fired: Vec<bool>,
    },
    /// An ACL read: the node's data version and child count (the ACL itself
    /// is the carrier's to keep, for [`Request::Recreate`]).
    Acl {
        /// The node's data version.
        version: i32,
        /// Its number of children.
        children: i32,
    },
}

/// What one operation of an applied transaction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// A check passed.
    Check,
    /// A node was made: its stat, where the server gives it (`None`: left
    /// out, ZOOKEEPER-4026).
    Created(Option<Stat>),
    /// A node was deleted.
    Deleted,
    /// A node's data was written.
    Written,
    /// A result of a kind the rules do not know: it answers no operation.
    Unknown,
}

impl Done {
    /// True if this is what `op` answers.
    fn answers(self, op: &contender::Op) -> bool {
        matches!(
            (self, op),
            (Done::Check, contender::Op::Check { .. })
                | (Done::Created(_), contender::Op::Create { .. })
                | (Done::Deleted, contender::Op::Delete { .. })
                | (Done::Written, contender::Op::SetData { .. })
        )
    }
}

/// A failed answer, as the rules tell errors apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The node (or its parent) does not exist.
    NoNode,
    /// The node exists already.
    NodeExists,
    /// The node's ACL refuses this identity.
    NoAuth,
    /// The node's version is not the one named.
    BadVersion,
    /// The node has children.
    NotEmpty,
    /// The server does not know the request (containers before 3.6).
    Unimplemented,
    /// The connection was lost before the answer (or the server was too
    /// busy): the request may or may not have been applied.
    Unanswered,
    /// The session is over (expired, closed, its authentication failed).
    SessionEnded,
    /// A transaction refused at the operation `index`, with `error`.
    Refused {
        /// The failing operation's index.
        index: usize,
        /// Its error.
        error: Box<Error>,
    },
    /// Any other error.
    Failed,
}

impl Error {
    /// The error itself, a refused transaction's the failing operation's.
    fn cause(&self) -> &Error {
        match self {
            Error::Refused { error, .. } => error.cause(),
            other => other,
        }
    }

    /// The contender's view of it.
    pub fn answer<T>(&self) -> Answer<T> {
        match self.cause() {
            Error::NoNode => Answer::NoNode,
            Error::NodeExists => Answer::Exists,
            Error::NoAuth => Answer::NoAuth,
            Error::Unimplemented => Answer::Unimplemented,
            Error::Unanswered => Answer::Retry,
            Error::SessionEnded => Answer::SessionEnded,
            _ => Answer::Failed,
        }
    }

    /// The wait's view of it.
    pub fn reply<T>(&self) -> WaitReply<T> {
        match self.cause() {
            Error::NoNode => WaitReply::NoNode,
            Error::NoAuth => WaitReply::NoAuth,
            Error::Unanswered => WaitReply::Retry,
            _ => WaitReply::Failed,
        }
    }
}

/// A watch an answered request left, and whose it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// The data watch on my own node, set while waiting (the guard's
    /// keeper takes it over at the grant).
    Own,
    /// The `exists` watch on the watched node's release marker: its
    /// creation is the watched node's release.
    Marker,
    /// The data watch on the node the wait watches.
    Watched,
    /// The keeper's data watch on the held node.
    Held,
    /// The watch a listing left on the lock directory's children
    /// ([`crate::acquire::Event::Listing`]).
    Listing,
}

/// What a carrier does after [`Exchange::answer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Wait for the next answer.
    Pending,
    /// Send this request too: its answer comes at the next index.
    Send(Request),
    /// The exchange has what it needs: settle it. Answers not awaited yet
    /// are dropped.
    Complete,
}

/// A contender's side of the wire: what every exchange of its life needs
/// to know (its directory, its node's name and data), and what one
/// exchange leaves for a later one.
#[derive(Debug, Clone)]
pub struct Wire {
    dir: String,
    prefix: String,
    data: Vec<u8>,
    /// The directory's data version, as [`Action::ReadDirAcl`] read it
    /// with its ACL, for [`Action::Recycle`].
    acl_version: Option<i32>,
}

/// What an exchange is, and what its input needs besides the answers.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Create,
    CreateDir,
    CreateParents,
    FindOwn,
    Stat,
    ReadDirData,
    Delete,
    ReadDirAcl,
    Recycle,
    Replace {
        created: usize,
        reader: String,
        writer: String,
        steps: Vec<Option<contender::ReplaceStep>>,
    },
    List,
    SetWatches {
        own: Option<usize>,
        marker: Option<usize>,
        /// The request of each watched node, the nearest first (`None`: a
        /// semaphore's node still watched, not asked again).
        nodes: Vec<Option<usize>>,
        /// A semaphore's: its watches linger ([`Exchange::lingers`]).
        lingers: bool,
        /// The full paths of the nodes still watched ([`Exchange::kept`]).
        kept: Vec<String>,
    },
    Rewatch,
    ReadWatched,
    ReadRecord {
        watched: String,
    },
    CheckOwn,
    Keep,
}

/// The requests of one action, and their answers so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    kind: Kind,
    requests: Vec<Request>,
    answers: Vec<Option<Result<Reply, Error>>>,
    /// Its requests are sent again after a lost connection.
    retried: bool,
    /// An earlier attempt of a request lost its answer.
    answer_lost: bool,
    /// The watches each request sets (a `SetWatches`'s in the order of its
    /// nodes: data, then exist).
    watches: Vec<Vec<Watch>>,
}

impl Wire {
    /// The wire of a contender in the lock directory `dir`, whose node's
    /// name begins with `prefix` (before its sequence) and holds `data`.
    pub fn new(dir: &str, prefix: &str, data: Vec<u8>) -> Wire {
        Wire {
            dir: dir.to_owned(),
            prefix: prefix.to_owned(),
            data,
            acl_version: None,
        }
    }

    /// The lock directory.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// The exchange `action` of `machine` sends; `None` for an action that
    /// is not a request (the ends, and the wait's `Wait`).
    pub fn exchange(&self, action: &Action, machine: &Contender) -> Option<Exchange> {
        let dir = self.dir.as_str();
        let mine = || child_path(dir, machine.node().unwrap_or_default());
        let (kind, requests, retried) = match action {
            Action::Create => (
                Kind::Create,
                vec![
                    Request::Create {
                        path: child_path(dir, &self.prefix),
                        data: self.data.clone(),
                        mode: CreateMode::EphemeralSequential,
                        acl: Acl::Contender,
                    },
                    // Answered after the create (a session's requests are
                    // answered in order): it lists the new node, and its
                    // stat says whether the directory holds data.
                    Request::List {
                        path: dir.to_owned(),
                        stat: true,
                        watch: machine.watches_listing(),
                    },
                ],
                false,
            ),
            Action::CreateDir { container } => (
                Kind::CreateDir,
                vec![Request::Create {
                    path: dir.to_owned(),
                    data: Vec::new(),
                    mode: if *container {
                        CreateMode::Container
                    } else {
                        CreateMode::Persistent
                    },
                    acl: Acl::Directory,
                }],
                true,
            ),
            Action::CreateParents => {
                let parent = dir
                    .rsplit_once('/')
                    .map(|(parent, _)| parent)
                    .filter(|p| !p.is_empty());
                let requests = parent
                    .map(|path| Request::MakePath {
                        path: path.to_owned(),
                    })
                    .into_iter()
                    .collect();
                (Kind::CreateParents, requests, true)
            }
            Action::FindOwn => (
                Kind::FindOwn,
                // The sync first, the listing once it is answered (or
                // retrying it is over): a create of mine still in flight at
                // another server is seen by a listing after the sync.
                vec![Request::Sync { path: dir.to_owned() }],
                true,
            ),
            Action::Stat { name } => (
                Kind::Stat,
                vec![Request::Exists {
                    path: child_path(dir, name),
                    watch: false,
                }],
                true,
            ),
            Action::ReadDirData => (
                Kind::ReadDirData,
                vec![Request::GetData {
                    path: dir.to_owned(),
                    watch: false,
                }],
                true,
            ),
            Action::Delete { name, .. } => {
                // With the record, the transaction; else a plain delete.
                let request = match action.transaction(dir) {
                    Some(tx) => Request::Multi {
                        ops: tx.ops().to_vec(),
                    },
                    _ => Request::Delete {
                        path: child_path(dir, name),
                        version: None,
                    },
                };
                (Kind::Delete, vec![request], true)
            }
            Action::ReadDirAcl => (
                Kind::ReadDirAcl,
                vec![Request::GetAcl { path: dir.to_owned() }],
                false,
            ),
            Action::Recycle => {
                // Without the version read with the ACL, nothing is sent:
                // the input says it failed.
                let requests = self
                    .acl_version
                    .map(|version| Request::Recreate {
                        path: dir.to_owned(),
                        version,
                    })
                    .into_iter()
                    .collect();
                (Kind::Recycle, requests, false)
            }
            Action::Replace { reader, writer, .. } => {
                let tx = action.transaction(dir)?;
                let (created, _) = tx.created()?;
                let steps = (0..tx.ops().len()).map(|i| tx.failed_step(i)).collect();
                (
                    Kind::Replace {
                        created,
                        reader: child_path(dir, reader),
                        writer: child_path(dir, writer),
                        steps,
                    },
                    vec![Request::Multi {
                        ops: tx.ops().to_vec(),
                    }],
                    true,
                )
            }
            Action::Acquire(wait) => match wait {
                acquire::Action::List => (
                    Kind::List,
                    vec![Request::List {
                        path: dir.to_owned(),
                        stat: false,
                        watch: machine.watches_listing(),
                    }],
                    true,
                ),
                acquire::Action::SetWatches {
                    own,
                    watched,
                    marker,
                    also,
                    lingers,
                    kept,
                    together,
                    blind,
                } => {
                    // Data watches (`getData`): on a missing node no watch
                    // is left behind. The marker's is an `exists` watch,
                    // which waits for its creation; it leaves before the
                    // watched node's, so that a release between the two is
                    // still seen by its marker.
                    let mut requests = Vec::new();
                    // Only while the contender still knows, on this
                    // connection, that it reads its node.
                    let relative = machine
                        .czxid()
                        .filter(|_| *together && *own && machine.own_readable());
                    // The watched node's too, unread, if the machine lets
                    // it (`blind`): one request for all.
                    let blind = relative.is_some() && *blind && also.is_empty() && kept.is_empty();
                    let (own, marker) = match (relative, marker) {
                        // One request for both, relative to my node's
                        // making: a write to it or its deletion since
                        // fires at once.
                        // (The machine asks `together` only with a marker
                        // or `blind`.)
                        (Some(relative_zxid), marker) => {
                            let mut data = vec![mine()];
                            if blind {
                                data.push(child_path(dir, watched));
                            }
                            requests.push(Request::SetWatches {
                                relative_zxid,
                                data,
                                exist: marker.iter().map(|marker| child_path(dir, marker)).collect(),
                            });
                            (Some(0), marker.as_ref().map(|_| 0))
                        }
                        (_, marker) => {
                            let own = own.then(|| {
                                requests.push(Request::GetData {
                                    path: mine(),
                                    watch: true,
                                });
                                requests.len() - 1
                            });
                            let marker = marker.as_ref().map(|marker| {
                                requests.push(Request::Exists {
                                    path: child_path(dir, marker),
                                    watch: true,
                                });
                                requests.len() - 1
                            });
                            (own, marker)
                        }
                    };
                    // Data watches: an `exists` watch on a node this
                    // identity may not read is set, but its events never
                    // come (the server sends none without READ); `getData`
                    // says NoAuth, and the node is polled.
                    // A semaphore's nodes still watched are not asked again.
                    let nodes = std::iter::once(watched)
                        .chain(also)
                        .enumerate()
                        .map(|(at, node)| {
                            if blind && at == 0 {
                                return Some(0);
                            }
                            (!kept.contains(node)).then(|| {
                                requests.push(Request::GetData {
                                    path: child_path(dir, node),
                                    watch: true,
                                });
                                requests.len() - 1
                            })
                        })
                        .collect();
                    let kind = Kind::SetWatches {
                        own,
                        marker,
                        nodes,
                        lingers: *lingers,
                        kept: kept.iter().map(|node| child_path(dir, node)).collect(),
                    };
                    (kind, requests, false)
                }
                acquire::Action::Rewatch { watched } => (
                    Kind::Rewatch,
                    vec![Request::GetData {
                        path: child_path(dir, watched),
                        watch: true,
                    }],
                    false,
                ),
                acquire::Action::ReadWatched { watched } => (
                    Kind::ReadWatched,
                    vec![Request::GetData {
                        path: child_path(dir, watched),
                        watch: false,
                    }],
                    false,
                ),
                acquire::Action::ReadRecord { watched } => (
                    Kind::ReadRecord {
                        watched: watched.clone(),
                    },
                    // One read request: the record and my own node.
                    vec![Request::ReadAll {
                        paths: vec![dir.to_owned(), mine()],
                    }],
                    true,
                ),
                acquire::Action::CheckOwn => (
                    Kind::CheckOwn,
                    vec![Request::Exists {
                        path: mine(),
                        watch: false,
                    }],
                    true,
                ),
                acquire::Action::Wait { .. }
                | acquire::Action::Grant { .. }
                | acquire::Action::GiveUp
                | acquire::Action::Fail(_)
                | acquire::Action::Replace { .. } => return None,
            },
            Action::Grant { .. } | Action::GiveUp | Action::Fail(_) | Action::Done(_) => return None,
        };
        Some(Exchange::new(kind, requests, retried))
    }

    /// The keeper's exchange ([`contender::Keep::Watch`]): read the held
    /// node `name` and set a data watch on it. Settle it with
    /// [`Exchange::held`].
    pub fn keep(&self, name: &str) -> Exchange {
        keep(&child_path(&self.dir, name))
    }

    /// Feeds what `exchange` learnt to `machine`, and returns its next
    /// action.
    pub fn settle(&mut self, exchange: &Exchange, machine: &mut Contender) -> Action {
        if let Some(Ok(Reply::Data { data, stat })) = exchange.own_read() {
            // The machine decides whether it is a revocation request, and
            // whether the node read is the one it made.
            machine.own_data_read(data);
            machine.own_node_read(stat.czxid);
        }
        if let (Kind::ReadDirAcl, Some(Ok(Reply::Acl { version, .. }))) = (&exchange.kind, exchange.result(0))
        {
            self.acl_version = Some(*version);
        }
        if exchange.kind == Kind::Recycle {
            self.acl_version = None;
        }
        match exchange.input(&self.prefix) {
            Some(input) => machine.step(input),
            None => Action::Fail(contender::Failure::Request),
        }
    }
}

impl Exchange {
    fn new(kind: Kind, requests: Vec<Request>, retried: bool) -> Exchange {
        let answers = vec![None; requests.len()];
        let mut watches = vec![Vec::new(); requests.len()];
        let set = match &kind {
            // In the order a `SetWatches` sets them: its data watches
            // (mine, then the watched node's), then its `exists` watch.
            Kind::SetWatches {
                own, marker, nodes, ..
            } => std::iter::once((*own, Watch::Own))
                .chain(nodes.iter().map(|index| (*index, Watch::Watched)))
                .chain(std::iter::once((*marker, Watch::Marker)))
                .collect(),
            Kind::Create => vec![(listing_watch(&requests, 1), Watch::Listing)],
            Kind::List => vec![(listing_watch(&requests, 0), Watch::Listing)],
            Kind::Rewatch => vec![(Some(0), Watch::Watched)],
            Kind::Keep => vec![(Some(0), Watch::Held)],
            _ => Vec::new(),
        };
        for (index, whose) in set {
            if let Some(slot) = index.and_then(|index| watches.get_mut(index)) {
                slot.push(whose);
            }
        }
        Exchange {
            kind,
            requests,
            answers,
            retried,
            answer_lost: false,
            watches,
        }
    }

    /// The requests to send, in order, all at once.
    pub fn requests(&self) -> &[Request] {
        &self.requests
    }

    /// True if request `index` is sent again after a lost connection
    /// ([`Error::Unanswered`]) until it is answered, or retrying is over
    /// ([`crate::backoff::Backoff::request`]); only its last answer is fed.
    /// A sync's failure is no answer the machine looks at.
    pub fn retried(&self, index: usize) -> bool {
        self.retried && index < self.requests.len()
    }

    /// Notes that an attempt of request `index` lost its answer (it is
    /// sent again): a deletion or a transaction may have been applied
    /// ([`contender::Input::Deleted`]'s `answer_lost`); a read's lost
    /// answer changes nothing.
    pub fn lost(&mut self, index: usize) {
        if matches!(
            self.requests.get(index),
            Some(Request::Delete { .. } | Request::Multi { .. })
        ) {
            self.answer_lost = true;
        }
    }

    /// True once every request has its answer, or the exchange needs no
    /// more of them.
    pub fn is_complete(&self) -> bool {
        self.complete()
    }

    /// True if `answer` can be the answer to request `index`: a
    /// transaction's must have one result per operation, each of its
    /// operation's kind (a reply garbled on the way, or a short one, is no
    /// answer: whether it was applied is unknown, and a carrier sends a
    /// retried request again, as after a lost connection).
    pub fn accepts(&self, index: usize, answer: &Result<Reply, Error>) -> bool {
        self.requests
            .get(index)
            .is_none_or(|request| answers(request, answer))
    }

    /// Feeds the (last) answer of request `index`; says what comes next.
    /// An answer it does not [accept](Exchange::accepts) counts as lost
    /// ([`Error::Unanswered`]).
    pub fn answer(&mut self, index: usize, answer: Result<Reply, Error>) -> Progress {
        let answer = if self.accepts(index, &answer) {
            answer
        } else {
            self.lost(index);
            Err(Error::Unanswered)
        };
        let Some(slot) = self.answers.get_mut(index) else {
            return Progress::Pending;
        };
        *slot = Some(answer);
        // Finding my node: the listing follows the sync's answer.
        if let (Kind::FindOwn, 0, 1) = (&self.kind, index, self.requests.len()) {
            let request = Request::List {
                path: self.requests[0].path().to_owned(),
                stat: false,
                watch: false,
            };
            self.requests.push(request.clone());
            self.answers.push(None);
            self.watches.push(Vec::new());
            return Progress::Send(request);
        }
        // A downgrade's reader whose stat the server left out: an
        // `exists` on it, after the transaction.
        if let Kind::Replace { created, reader, .. } = &self.kind {
            // The transaction's answer, before any follow-up.
            if self.requests.len() == 1 {
                if let Some(Ok(Reply::Multi(results))) = self.answers.first().and_then(Option::as_ref) {
                    if results.get(*created) == Some(&Done::Created(None)) {
                        let request = Request::Exists {
                            path: reader.clone(),
                            watch: false,
                        };
                        self.requests.push(request.clone());
                        self.answers.push(None);
                        self.watches.push(Vec::new());
                        return Progress::Send(request);
                    }
                }
            }
        }
        if self.complete() {
            Progress::Complete
        } else {
            Progress::Pending
        }
    }

    /// The watches request `index`'s answer left that the wait (or the
    /// keeper) keeps, and whose they are, in the order the request sets
    /// them (a `SetWatches`'s: its data watches, then its exist watches);
    /// empty if none was left. One left that must be dropped is `None`:
    /// an `exists` watch on a release marker that exists already (a
    /// stranger's, no signal).
    pub fn watch(&self, index: usize) -> Vec<Option<Watch>> {
        let kept = |at: usize, whose: Watch| match (whose, self.result(index)) {
            // An `exists` watch is left on a missing node too: on an
            // existing marker it is a stranger's, no signal. A
            // `SetWatches` fires it at once on a marker there: the same.
            (Watch::Marker, Some(Ok(Reply::Stat(None)))) => Some(Watch::Marker),
            (Watch::Marker, Some(Ok(Reply::WatchesSet { fired }))) => {
                (fired.get(at) == Some(&false)).then_some(Watch::Marker)
            }
            (Watch::Marker, _) | (_, None | Some(Err(_))) => None,
            (whose, Some(Ok(_))) => Some(whose),
        };
        match self.result(index) {
            Some(Ok(_)) => self
                .watch_of(index)
                .iter()
                .enumerate()
                .map(|(at, whose)| kept(at, *whose))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// True if the watch request `index` leaves, once no longer needed, is
    /// left to fire rather than removed (a removal is a request): the
    /// watches of a semaphore's wait. Each is on a node ahead in the queue,
    /// which is deleted in its turn, and goes with it. A carrier keeps one
    /// such watch per node and forgets the others (a client removes a
    /// watcher from the server only if it is the session's last on the
    /// node), so it holds at most one per node, and sends no request. While they wait, at
    /// most N contenders act on a node's deletion ([`crate::semaphore`]'s
    /// "No herd"); the watches of waits that ended (granted, given up)
    /// stay until the node goes, so a node held long may notify more
    /// sessions than N, each a notification to ignore, not a request. A
    /// watch on a node found gone is not kept at all ([`Exchange::watch`]),
    /// and every other watch is removed when dropped: a lock's may wait on
    /// a node for a long time, a marker's on one never created.
    ///
    /// A carrier holds a watched node's event that arrives during an
    /// exchange until the wait takes it (the machine listens to watched
    /// nodes only while it waits): a semaphore's exchange may be answered
    /// for one watched node while another's event is already on its way.
    ///
    /// A listing's watch on the directory's children lingers too: every
    /// acquire's listing leaves one, the server keeps one per session and
    /// directory, and the next child's creation or deletion (at the
    /// latest, the release of the node listed) fires it.
    pub fn lingers(&self, index: usize) -> bool {
        match &self.kind {
            Kind::SetWatches { nodes, lingers, .. } => *lingers && nodes.contains(&Some(index)),
            _ => self.watch_of(index).contains(&Watch::Listing),
        }
    }

    /// The full paths of the watched nodes whose watches, set before, this
    /// exchange keeps (a semaphore's wait asks only for the nodes new to
    /// it): a carrier keeps their pending watches and drops the others of
    /// the watched node's kind when it sends the exchange.
    pub fn kept(&self) -> &[String] {
        match &self.kind {
            Kind::SetWatches { kept, .. } => kept,
            _ => &[],
        }
    }

    /// The watches request `index` sets if its answer leaves them: a
    /// carrier drops the earlier watch of each kind when it sends the
    /// request.
    pub fn watch_of(&self, index: usize) -> &[Watch] {
        self.watches.get(index).map_or(&[], Vec::as_slice)
    }

    /// The kinds of watch whose earlier watches a carrier drops when it
    /// sends this exchange: the newer ones replace them. The wait's
    /// exchange replaces the watched nodes' even if it asks for none of
    /// them again (but those it [keeps](Exchange::kept)).
    pub fn replaces(&self) -> Vec<Watch> {
        let mut kinds = Vec::new();
        let set = self
            .watches
            .iter()
            .flatten()
            .copied()
            .filter(|whose| *whose != Watch::Held)
            .chain(self.forgets_session_changes().then_some(Watch::Watched));
        for whose in set {
            if !kinds.contains(&whose) {
                kinds.push(whose);
            }
        }
        kinds
    }

    /// True for the exchange that sets the wait's watches: the session's
    /// state changes seen before it are forgotten when it is sent (the
    /// listing after them decides).
    pub fn forgets_session_changes(&self) -> bool {
        matches!(self.kind, Kind::SetWatches { .. })
    }

    /// The request whose error an acquire that fails after this exchange
    /// reports, and the node the error names: my own node's watch before
    /// the watched node's, never the release marker's (the release record
    /// decides about it) nor the sync's; a create's failure names the
    /// directory; a downgrade's transaction names the writer. `None` if no
    /// request of it failed.
    pub fn blame(&self) -> Option<(usize, &str)> {
        let failed = |index: usize| matches!(self.result(index), Some(Err(_)));
        let index = match &self.kind {
            Kind::SetWatches { own, nodes, .. } => own
                .filter(|own| failed(*own))
                .or_else(|| nodes.iter().flatten().copied().find(|i| failed(*i)))?,
            Kind::FindOwn => 1,
            _ => (0..self.requests.len()).find(|i| failed(*i))?,
        };
        if !failed(index) {
            return None;
        }
        let path = match &self.kind {
            Kind::Create => self.requests.get(1).map(Request::path),
            Kind::Replace { writer, .. } => Some(writer.as_str()),
            _ => self.requests.get(index).map(Request::path),
        };
        Some((index, path?))
    }

    /// The answer to the read of my own node a `SetWatches` sent, if any.
    fn own_read(&self) -> Option<&Result<Reply, Error>> {
        match self.kind {
            Kind::SetWatches { own: Some(own), .. } => self.result(own),
            _ => None,
        }
    }

    /// The answer to request `index`, if it came.
    pub fn answered(&self, index: usize) -> Option<&Result<Reply, Error>> {
        self.result(index)
    }

    /// The answer to request `index`, if it came.
    fn result(&self, index: usize) -> Option<&Result<Reply, Error>> {
        self.answers.get(index).and_then(Option::as_ref)
    }

    fn complete(&self) -> bool {
        match &self.kind {
            // A create that failed makes no listing worth waiting for,
            // unless the listing leaves a watch: its answer is awaited, so
            // that the watch is kept and let go as a listing's (left to
            // fire), not dropped (a removal, a request).
            Kind::Create => {
                (matches!(self.result(0), Some(Err(_))) && listing_watch(&self.requests, 1).is_none())
                    || self.answers.iter().all(Option::is_some)
            }
            _ => self.answers.iter().all(Option::is_some),
        }
    }

    /// The machine's input: the answers, read as the rules read them.
    /// `None` while an answer it needs is missing.
    fn input<'a>(&'a self, prefix: &str) -> Option<contender::Input<'a>> {
        use contender::Input;
        let first = self.result(0);
        Some(match &self.kind {
            Kind::Create => {
                let node = match first? {
                    Ok(Reply::Created { czxid, seq }) => Answer::Ok(Created {
                        name: node_name::sequential(prefix, *seq),
                        czxid: *czxid,
                    }),
                    Ok(_) => Answer::Failed,
                    Err(e) => e.answer(),
                };
                let listing = match &node {
                    Answer::Ok(_) => Some(match self.result(1)? {
                        Ok(Reply::Children {
                            children,
                            data_length,
                        }) => Answer::Ok((children.as_slice(), *data_length)),
                        Ok(_) => Answer::Failed,
                        Err(e) => e.answer(),
                    }),
                    _ => None,
                };
                Input::Created { node, listing }
            }
            Kind::CreateDir => Input::DirCreated(done(first)?),
            Kind::CreateParents => Input::ParentsCreated(match first {
                // No parent to make: the directory is at the root.
                None if self.requests.is_empty() => Answer::Ok(()),
                other => done(other)?,
            }),
            Kind::FindOwn => Input::Found(match self.result(1)? {
                Ok(Reply::Children { children, .. }) => Answer::Ok(children.as_slice()),
                Ok(_) => Answer::Failed,
                Err(e) => e.answer(),
            }),
            Kind::Stat => Input::Stat(match first? {
                Ok(Reply::Stat(stat)) => Answer::Ok(stat.map(|stat| Owner {
                    session: stat.ephemeral_owner,
                    czxid: stat.czxid,
                })),
                Ok(_) => Answer::Failed,
                Err(e) => e.answer(),
            }),
            Kind::ReadDirData => Input::DirData(match first? {
                Ok(Reply::Data { data, .. }) => Answer::Ok(data.as_slice()),
                Ok(_) => Answer::Failed,
                Err(e) => e.answer(),
            }),
            Kind::Delete => Input::Deleted {
                answer: match first? {
                    Ok(Reply::Done | Reply::Multi(_)) => Answer::Ok(()),
                    Ok(_) => Answer::Failed,
                    Err(e) => e.answer(),
                },
                answer_lost: self.answer_lost,
            },
            Kind::ReadDirAcl => Input::DirAcl(match first? {
                Ok(Reply::Acl { children, .. }) => Answer::Ok(*children),
                Ok(_) => Answer::Failed,
                Err(e) => e.answer(),
            }),
            Kind::Recycle => Input::Recycled(match first {
                None if self.requests.is_empty() => Answer::Failed,
                other => done(other)?,
            }),
            Kind::Replace { created, steps, .. } => {
                let (answer, failed) = match first? {
                    Ok(Reply::Multi(results)) => match results.get(*created).copied() {
                        Some(Done::Created(Some(stat))) => (Answer::Ok(stat.czxid), None),
                        // The stat left out: the node is mine, just made.
                        _ => match self.result(1)? {
                            Ok(Reply::Stat(Some(stat))) => (Answer::Ok(stat.czxid), None),
                            Ok(_) => (Answer::NoNode, None),
                            Err(e) => (e.answer(), None),
                        },
                    },
                    Ok(_) => (Answer::Failed, None),
                    Err(e) => {
                        let failed = match e {
                            Error::Refused { index, .. } => steps.get(*index).copied().flatten(),
                            _ => None,
                        };
                        (e.answer(), failed)
                    }
                };
                Input::Replaced {
                    answer,
                    failed,
                    answer_lost: self.answer_lost,
                }
            }
            Kind::List => Input::Acquire(acquire::Input::Listed(match first? {
                Ok(Reply::Children { children, .. }) => WaitReply::Ok(children.as_slice()),
                Ok(_) => WaitReply::Failed,
                Err(e) => e.reply(),
            })),
            Kind::SetWatches {
                own, marker, nodes, ..
            } => {
                let own = match own {
                    Some(own) => Some(watch_set(self.result(*own)?)),
                    None => None,
                };
                let marker = match marker {
                    Some(marker) => Some(match self.result(*marker)? {
                        Ok(Reply::Stat(stat)) => WaitReply::Ok(stat.is_some()),
                        // Set by a `SetWatches`: there if it fired at once.
                        Ok(Reply::WatchesSet { fired }) => {
                            let at = self.watch_of(*marker).iter().position(|w| *w == Watch::Marker);
                            match at.and_then(|at| fired.get(at)) {
                                Some(fired) => WaitReply::Ok(*fired),
                                None => WaitReply::Failed,
                            }
                        }
                        Ok(_) => WaitReply::Failed,
                        Err(e) => e.reply(),
                    }),
                    None => None,
                };
                // A node still watched is set.
                let set = |index: &Option<usize>| match index {
                    Some(index) => Some(watch_set(self.result(*index)?)),
                    None => Some(WaitReply::Ok(())),
                };
                let mut set = nodes.iter().map(set).collect::<Option<Vec<_>>>()?.into_iter();
                let watched = set.next()?;
                let also = set.collect();
                // The watched node's watch went in my node's `SetWatches`.
                let blind = matches!(self.requests.first(), Some(Request::SetWatches { data, .. }) if data.len() == 2);
                Input::Acquire(acquire::Input::WatchesSet {
                    own,
                    watched,
                    marker,
                    also,
                    blind,
                })
            }
            Kind::Rewatch => Input::Acquire(acquire::Input::Rewatched(watch_set(first?))),
            Kind::ReadWatched => Input::Acquire(acquire::Input::WatchedRead(watch_set(first?))),
            Kind::ReadRecord { watched } => Input::Acquire(acquire::Input::RecordRead(match first? {
                Ok(Reply::Reads(reads)) => match reads.as_slice() {
                    [Ok(record), mine] => WaitReply::Ok(Record {
                        names_watched: node_name::record_names(record, watched),
                        own: match mine {
                            Ok(_) => WaitReply::Ok(()),
                            Err(e) => e.reply(),
                        },
                    }),
                    _ => WaitReply::Failed,
                },
                Ok(_) => WaitReply::Failed,
                Err(e) => e.reply(),
            })),
            Kind::CheckOwn => Input::Acquire(acquire::Input::OwnChecked(match first? {
                Ok(Reply::Stat(stat)) => WaitReply::Ok(stat.is_some()),
                // A server from ZooKeeper 3.7.3, 3.8.4 and 3.9.2 on checks
                // READ for `exists` of a node that is there (of one that is
                // gone, not): refused, it is there.
                Err(e) if *e.cause() == Error::NoAuth => WaitReply::Ok(true),
                Ok(_) => WaitReply::Failed,
                Err(e) => e.reply(),
            })),
            Kind::Keep => return None,
        })
    }

    /// The keeper's exchange's answer ([`Wire::keep`]): what reading the
    /// held node found, for [`Contender::held_watch_set`].
    pub fn held(&self) -> Answer<HeldNode> {
        match self.result(0) {
            Some(Ok(Reply::Data { data, stat })) => Answer::Ok(HeldNode::read(stat.czxid, data)),
            Some(Ok(_)) | None => Answer::Failed,
            Some(Err(e)) => e.answer(),
        }
    }

    /// True for an exchange of the wait's ([`Action::Acquire`]): a
    /// deadline that passes during it is the wait's to take
    /// ([`deadline`]).
    pub fn is_wait(&self) -> bool {
        matches!(
            self.kind,
            Kind::List
                | Kind::SetWatches { .. }
                | Kind::Rewatch
                | Kind::ReadWatched
                | Kind::ReadRecord { .. }
                | Kind::CheckOwn
        )
    }

    /// The children a listing in this exchange's answers carries, if any.
    pub fn listing(&self) -> Option<&[String]> {
        let index = match self.kind {
            Kind::Create => 1,
            Kind::FindOwn => 1,
            Kind::List => 0,
            _ => return None,
        };
        match self.result(index)? {
            Ok(Reply::Children { children, .. }) => Some(children),
            _ => None,
        }
    }

    /// What this carried exchange tells the lock's user, in its logs
    /// ([`Notice`]), with `machine` settled on it.
    pub fn notices(&self, machine: &Contender) -> Vec<Notice> {
        let mut notices = Vec::new();
        if let (Kind::Create | Kind::FindOwn | Kind::Stat, Some(seq)) = (&self.kind, machine.seq()) {
            if seq >= crate::ordering::RECYCLE_THRESHOLD {
                notices.push(Notice::CounterNearLimit { seq });
            }
        }
        match (&self.kind, self.result(0), machine.node()) {
            (Kind::Stat, _, Some(name)) => notices.push(Notice::FoundOwn {
                name: name.to_owned(),
            }),
            (Kind::ReadDirData, Some(Ok(Reply::Data { data, .. })), _)
                if !node_name::is_lock_directory_data(data) =>
            {
                notices.push(Notice::DirectoryData { bytes: data.len() });
            }
            (Kind::Recycle, Some(Ok(_)), _) => notices.push(Notice::Recycled),
            _ => {}
        }
        if let (true, Some(children)) = (machine.saw_foreign(), self.listing()) {
            let names: Vec<String> = children
                .iter()
                .filter(|child| !node_name::is_contender_name(child))
                .cloned()
                .collect();
            if !names.is_empty() {
                notices.push(Notice::Foreign { names });
            }
        }
        for (index, request) in self.requests.iter().enumerate() {
            if let (Some(Ok(Reply::Data { stat, .. } | Reply::Stat(Some(stat)))), [Watch::Watched]) =
                (self.result(index), self.watch_of(index))
            {
                if stat.ephemeral_owner == 0 {
                    notices.push(Notice::Persistent {
                        path: request.path().to_owned(),
                    });
                }
            }
        }
        notices
    }
}

/// What an exchange tells the lock's user ([`Exchange::notices`]): each
/// is logged, none changes what is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// My node's sequence number is past
    /// [`crate::ordering::RECYCLE_THRESHOLD`]: the directory is recycled
    /// as soon as it is idle.
    CounterNearLimit {
        /// The sequence number.
        seq: i32,
    },
    /// My node was found after the answer to its create was lost.
    FoundOwn {
        /// Its child name.
        name: String,
    },
    /// The lock directory holds data that is not a release record: it is
    /// not used as a lock.
    DirectoryData {
        /// How many bytes.
        bytes: usize,
    },
    /// The idle directory was deleted and made again: its sequence counter
    /// starts from 0.
    Recycled,
    /// Children of the directory that are not contender nodes in any known
    /// layout, ignored.
    Foreign {
        /// Their names.
        names: Vec<String>,
    },
    /// A watched contender node is not ephemeral: it blocks the lock until
    /// someone deletes it.
    Persistent {
        /// Its path.
        path: String,
    },
}

/// A request answered with nothing to say.
fn done(answer: Option<&Result<Reply, Error>>) -> Option<Answer<()>> {
    Some(match answer? {
        Ok(_) => Answer::Ok(()),
        Err(e) => e.answer(),
    })
}

/// A watch's request, as the wait sees it.
/// The index of the listing among `requests` if it asks for a watch on
/// the directory's children.
fn listing_watch(requests: &[Request], index: usize) -> Option<usize> {
    matches!(requests.get(index), Some(Request::List { watch: true, .. })).then_some(index)
}

fn watch_set(answer: &Result<Reply, Error>) -> WaitReply<()> {
    match answer {
        Ok(_) => WaitReply::Ok(()),
        Err(e) => e.reply(),
    }
}

/// What a machine does when its deadline passes during `exchange` (or
/// before an action of the wait is sent: `None`): the wait is told
/// (`Input::Deadline`); a request of the contender's own ends the acquire
/// (`GiveUp`).
pub fn deadline(exchange: Option<&Exchange>, machine: &mut Contender) -> Action {
    match exchange {
        Some(exchange) if !exchange.is_wait() => Action::GiveUp,
        _ => machine.step(contender::Input::Acquire(acquire::Input::Deadline)),
    }
}

/// True if `answer` can be the answer to `request` (see
/// [`Exchange::accepts`]): an error always can; a transaction's success
/// only with one result per operation, each of its operation's kind.
pub fn answers(request: &Request, answer: &Result<Reply, Error>) -> bool {
    match (request, answer) {
        (Request::Multi { ops }, Ok(reply)) => match reply {
            Reply::Multi(results) => {
                results.len() == ops.len() && results.iter().zip(ops).all(|(done, op)| done.answers(op))
            }
            _ => false,
        },
        (Request::SetWatches { data, exist, .. }, Ok(reply)) => {
            matches!(reply, Reply::WatchesSet { fired } if fired.len() == data.len() + exist.len())
        }
        _ => true,
    }
}

/// The keeper's exchange for the held node at `path` (see [`Wire::keep`]).
pub fn keep(path: &str) -> Exchange {
    let request = Request::GetData {
        path: path.to_owned(),
        watch: true,
    };
    Exchange::new(Kind::Keep, vec![request], false)
}

/// The request of one look at a node the wait polls (`Wait { poll:
/// true }`: it cannot watch it, its ACL refusing this identity): an
/// `exists`, which needs no permission of a node that is gone (of one that
/// is there, from ZooKeeper 3.7.3, 3.8.4 and 3.9.2 on, READ: [`polled`]).
pub fn poll(path: &str) -> Request {
    Request::Exists {
        path: path.to_owned(),
        watch: false,
    }
}

/// What one look of a poll found, for the wait: the node's deletion, the
/// session's end, or a failure; `None` to look again after a pause
/// ([`crate::backoff::Backoff::poll`]): the node is there, or the answer
/// was lost (for as long as the policy retries; then the poll failed).
///
/// A server from ZooKeeper 3.7.3, 3.8.4 and 3.9.2 on (ZOOKEEPER-2590)
/// checks READ for `exists` of a node that is there, and not of one that is
/// gone: a look refused (`NoAuth`) found the node there.
pub fn polled(answer: &Result<Reply, Error>) -> Option<acquire::NodeEvent> {
    match answer {
        Ok(Reply::Stat(None)) => Some(acquire::NodeEvent::Deleted),
        Ok(Reply::Stat(Some(_))) => None,
        Ok(_) => Some(acquire::NodeEvent::Failed),
        Err(e) => match e.cause() {
            Error::Unanswered | Error::NoAuth => None,
            Error::SessionEnded => Some(acquire::NodeEvent::SessionEnded),
            _ => Some(acquire::NodeEvent::Failed),
        },
    }
}

#[cfg(test)]
mod tests;
