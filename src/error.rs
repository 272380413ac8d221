//! The error type of the lock API.

use crate::backoff::Backoff;
use crate::contender::{child_path, Reported};
use crate::zk;

/// What went wrong with a lock operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The lock path is not a valid absolute ZooKeeper path for a lock directory.
    #[error(
        "invalid lock path {}: {}{}",
        quoted(.path),
        naming_the_character(.reason, .path),
        path_syntax(.reason)
    )]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The contender identity cannot be used in a node name.
    #[error(
        "invalid identity {}: {}; an identity is a non-empty name of at most {max} bytes \
         without '/', '@' or a character ZooKeeper refuses in node names ({REFUSED_CHARACTERS}), \
         like `web01`",
        quoted(.identity),
        naming_the_character(.reason, .identity),
        max = crate::limits::MAX_IDENTITY_LEN
    )]
    InvalidIdentity {
        /// The identity as given.
        identity: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A request of the lock would be larger than ZooKeeper accepts
    /// (`jute.maxbuffer`, see [`crate::limits`]): its ACLs are too many or
    /// too long. Refused when the lock is built, before anything is sent.
    #[error(
        "the lock `{path}` would send requests of {size} bytes (its path, identity and ACLs), more than \
         the {limit} bytes a ZooKeeper server accepts in one request (jute.maxbuffer): give it fewer or \
         shorter ACL entries"
    )]
    RequestTooLarge {
        /// The lock path.
        path: String,
        /// The size of its largest request, in bytes.
        size: usize,
        /// The client's limit ([`zk::Client::max_request_size`]).
        limit: usize,
    },
    /// The lock's [layout](crate::LockBuilder::layout) has no contenders
    /// of this mode: Curator's mutex is exclusive only.
    #[error(
        "the `{layout}` layout has no {mode} locks ({library} is exclusive only); \
         use the `curator` layout to share read locks with Curator",
        library = layout.library()
    )]
    UnsupportedMode {
        /// The lock's layout.
        layout: crate::node_name::Layout,
        /// The mode asked for.
        mode: crate::node_name::Mode,
    },
    /// [`WriteGuard::downgrade`](crate::WriteGuard::downgrade) in a
    /// peer's layout: only the native layout can downgrade (a peer's
    /// readers and writers would not see the hand-over for what it is).
    /// The write lock is released.
    #[error("the `{layout}` layout cannot downgrade a write lock (only the native layout can); the write lock was released")]
    DowngradeUnsupported {
        /// The lock's layout.
        layout: crate::node_name::Layout,
    },
    /// A re-entrant owner's write guard cannot downgrade: its node is the
    /// owner's other guards' too (see
    /// [`ReentrantLock`](crate::ReentrantLock)). Release the write guard
    /// while a read guard of the same owner holds the node, or use a plain
    /// [`SharedLock`](crate::SharedLock)'s guard. The write guard is
    /// released (the node stays while the owner's other guards hold it).
    #[error("a re-entrant owner's guard on `{node}` cannot downgrade (its node is the owner's other guards' too); the write guard was released")]
    DowngradeReentrant {
        /// The owner's node.
        node: String,
    },
    /// A [`Semaphore`](crate::Semaphore) was asked for with 0 permits: it
    /// would never grant anyone.
    #[error("a semaphore needs at least one permit; 0 were asked for")]
    NoPermits,
    /// A semaphore's permit ([`Permit`](crate::Permit)), taken as a
    /// [`Guard`](crate::Guard), cannot downgrade: a permit has no read
    /// mode. The permit was released.
    #[error("the semaphore permit `{node}` cannot downgrade (a permit has no read mode); it was released")]
    DowngradePermit {
        /// The permit's node.
        node: String,
    },
    /// A re-entrant owner that holds a read lock asked for the write lock:
    /// it would wait for its own reader node for ever, so it is refused at
    /// once (see [`ReentrantLock`](crate::ReentrantLock)). Release the
    /// owner's read guards first, then acquire the write lock.
    #[error("the re-entrant owner holds a read lock on `{path}`: taking the write lock would wait for itself for ever")]
    WouldDeadlock {
        /// The lock directory.
        path: String,
    },
    /// The ZooKeeper session ended by expiry: every ephemeral node of it,
    /// and so every lock it held or waited for, is gone. Connect a new client.
    ///
    /// Either a server expired it (it said so when the client reconnected),
    /// or the client gave it up: no server answered for 7/5 of the session
    /// timeout after the last answer (the client's own expiry, which the
    /// server's comes before while a server runs). Given up, the session's
    /// nodes stay on a server that is down until it is back and expires
    /// the session; nobody else is granted its locks before then. The client
    /// reports both the same way (`SessionState::Expired`): this variant
    /// is both. [`zk::Client::session_given_up`] tells which, on the
    /// lock's client ([`crate::SharedLock::client`]).
    #[error(
        "ZooKeeper session expired: a server expired it, or this client gave it up because no server \
         answered for 7/5 of the session timeout (a server then removes its nodes when it expires it); \
         its locks are lost: connect a new client to lock again"
    )]
    SessionExpired,
    /// The ZooKeeper client was closed (or failed authentication), so its session is over.
    #[error("ZooKeeper client is closed: connect a new client to lock again")]
    SessionClosed,
    /// The contender node was deleted while the lock was held or awaited,
    /// by someone other than this guard: an acquire fails with it, and a
    /// guard's `release()` reports it (the lock was lost before the
    /// release, which released nothing).
    #[error("lock lost: contender node `{node}` was deleted by someone else")]
    Lost {
        /// Full path of the deleted node.
        node: String,
    },
    /// ZooKeeper's sequence counter of the lock directory is used up: it
    /// stops at `2147483647` instead of wrapping, so new contender nodes no
    /// longer get unique, ordered sequence numbers. Also when two contender
    /// nodes carry the same sequence number (a stranger's node under a
    /// contender's name, or servers whose data diverged): the order is
    /// broken all the same. The acquire withdrew its node. The directory is deleted by whoever leaves it empty (and by
    /// ZooKeeper itself for the container directories this crate creates),
    /// after which the next contender recreates it with a fresh counter.
    #[error(
        "lock directory `{path}` has used up ZooKeeper's sequence numbers (the counter stops at 2147483647), \
         or two of its contender nodes carry the same sequence number: \
         the request was withdrawn; the lock works again once the directory is idle and removed \
         (automatic when its last contender leaves), or delete `{path}` by hand when no one holds the lock"
    )]
    SequenceExhausted {
        /// The lock directory.
        path: String,
    },
    /// The lock was taken and its directory's listing larger than the
    /// lock's limit ([`LockBuilder::max_listing_size`](crate::LockBuilder::max_listing_size),
    /// by default `jute.maxbuffer`): too many contenders queue. The acquire
    /// withdrew its node instead of waiting; those waiting already still
    /// wait. See [`crate::limits`].
    #[error(
        "lock `{path}` has {contenders} contenders: a listing of it is {size} bytes, more than the \
         lock's limit of {limit} bytes (by default jute.maxbuffer, the largest reply ZooKeeper's Java \
         clients read), so this acquire withdrew instead of queuing. Use fewer waiters per lock (acquire with a timeout or try_*, or \
         split the lock into several), or raise jute.maxbuffer on every ZooKeeper server and Java \
         client of the lock and this lock's limit with LockBuilder::max_listing_size"
    )]
    ListingTooLarge {
        /// The lock path.
        path: String,
        /// The contender nodes listed (this acquire's included).
        contenders: usize,
        /// The listing's size, in bytes.
        size: usize,
        /// The lock's limit.
        limit: usize,
    },
    /// A semaphore's acquire found a contender before its own node that
    /// carries another permit count in its name: the contenders of one
    /// semaphore directory disagree on how many may hold at once. The
    /// acquire withdrew its node instead of waiting (holding with two
    /// counts could let more hold than either allows).
    #[error(
        "semaphore `{path}` is asked for with {asked} permits, but its contender `{node}` carries {carried}: \
         every contender of one semaphore must ask for the same number of permits, so this acquire withdrew"
    )]
    PermitsDisagree {
        /// The semaphore's directory.
        path: String,
        /// The contender node that carries another count.
        node: String,
        /// The count it carries.
        carried: u32,
        /// The count this acquire asked for.
        asked: u32,
    },
    /// A request of an acquire got no answer from the server through
    /// retries over broken connections for twice the session timeout,
    /// while the session lived on: the client dropped the connection again
    /// and again because the server did not answer within the connection
    /// timeout (2/5 of the session timeout), or the server kept answering
    /// `Throttled`. The server is overloaded, e.g. by a lock with many
    /// thousands of waiters (each lists all of them as it queues; see
    /// [`crate::limits`]), or the network keeps breaking. The acquire
    /// withdrew its node.
    #[error(
        "ZooKeeper did not answer a request of lock `{path}` for {retried_for:?} of retries over \
         broken connections (last: {last}): the server is too slow to answer within the client's \
         connection timeout (2/5 of the session timeout) or keeps throttling, e.g. overloaded by \
         locks with many thousands of waiters, each of which lists all of them as it queues. Queue \
         fewer waiters per lock (LockBuilder::max_listing_size bounds them), queue them a few at a \
         time, or give the session a longer timeout; check the server's load and the network"
    )]
    NoAnswer {
        /// The lock path.
        path: String,
        /// How long the request was retried.
        retried_for: std::time::Duration,
        /// The last error of the request.
        #[source]
        last: zk::Error,
    },
    /// One of the user's operations of a holder's transaction
    /// ([`Transaction::commit`](crate::Transaction::commit)) failed, so
    /// the transaction wrote nothing. `index` counts the user's operations
    /// in the order they were added, from 0 (the checks of the holder's
    /// nodes are not counted); `source` says why: `BadVersion` (a version
    /// that did not match), `NoNode`, `NodeExists`, `NotEmpty`, `NoAuth`,
    /// or `BadArguments` for a path the client refused before sending.
    #[error(
        "operation {index} of the transaction failed, so nothing of the transaction was written: {source}"
    )]
    TransactionFailed {
        /// The failing operation's index among the user's operations.
        index: usize,
        /// Why it failed.
        #[source]
        source: zk::Error,
    },
    /// The connection broke while a holder's transaction
    /// ([`Transaction::commit`](crate::Transaction::commit)) was in flight,
    /// or its answer could not be read or did not match the request:
    /// ZooKeeper may or may not have applied it, all or nothing, and may
    /// still apply it after a read made over a new connection. It is not
    /// sent again (a create or an unversioned write could be applied twice,
    /// or fail for having been applied): make transactions that can be
    /// sent again (conditional operations, which fail rather than apply
    /// twice). The guard's state says whether the lock is still held.
    #[error(
        "the answer to the transaction was lost ({source}): ZooKeeper may or may not have applied it \
         (all or nothing), and it was not sent again"
    )]
    TransactionOutcomeUnknown {
        /// How the answer was lost.
        #[source]
        source: zk::Error,
    },
    /// A transaction of a [`MultiGuard`](crate::MultiGuard) whose parts
    /// use different sessions, or clients with different chroots: a
    /// transaction is one request on one session, with paths under one
    /// chroot. Nothing was sent. Use one client for every part
    /// ([`MultiLock::new`](crate::MultiLock::new) does).
    #[error(
        "the part `{path}` of the multi-guard uses another session or chroot than its first part: \
         a transaction is one request on one session; make every part's lock on the same client"
    )]
    TransactionAcrossSessions {
        /// The lock directory of the part that differs.
        path: String,
    },
    /// An operation of a holder's transaction
    /// ([`Transaction::commit`](crate::Transaction::commit)) would write to
    /// a holder's lock directory or below it: a node made there would
    /// join the queue or stand in its way, a deletion would release a
    /// contender behind its lock's back. Nothing was sent. (A `check` may
    /// look there.)
    #[error(
        "operation {index} of the transaction writes to `{path}`, in a lock directory of its holder: \
         the lock's nodes are the lock's; nothing of the transaction was sent"
    )]
    TransactionInLockDirectory {
        /// The operation's index among the user's operations.
        index: usize,
        /// Its path.
        path: String,
    },
    /// The server refused the operation for lack of permission (ACL).
    #[error("ZooKeeper refused access to `{path}` (NoAuth): add credentials with `Connector::with_auth` or fix the node's ACL")]
    NoAuth {
        /// The path the operation was on.
        path: String,
    },
    /// The server rejected this client's credentials (an unknown scheme,
    /// a SASL password it does not accept, or a session it requires to
    /// authenticate first): it closed the session. Every ephemeral node of
    /// the session is gone.
    #[error(
        "ZooKeeper rejected this client's credentials (AuthFailed) and closed the session: check the \
         authentication scheme, user and password, then connect again"
    )]
    AuthFailed,
    /// The lock directory (or one of its parents) is an ephemeral node, which cannot have children.
    #[error("lock directory `{path}` is an ephemeral node and cannot hold contenders: choose a path under persistent nodes")]
    EphemeralDirectory {
        /// The lock directory.
        path: String,
    },
    /// The lock directory holds data that is not the lock's (a release
    /// record): the node is someone's, e.g. a counter. The lock does not
    /// use it, so that no release overwrites that data: the acquire
    /// withdrew its node, and the data is as it was (the node's child
    /// version moved on; a container that never had children before is
    /// now an empty container, which the server removes).
    #[error(
        "lock directory `{path}` holds data that is not a lock's release record: it is left as it is \
         and not used as a lock (each release of the write lock would overwrite that data); lock a \
         path of its own, e.g. `{path}/lock`"
    )]
    DirectoryHoldsData {
        /// The lock directory.
        path: String,
    },
    /// The connect string is malformed: refused before anything is sent.
    #[error(
        "invalid connect string `{}`: {}; expected host:port[,host:port...]",
        escaped(.servers),
        escaped(.reason)
    )]
    InvalidConnectString {
        /// The connect string as given.
        servers: String,
        /// What is wrong with it, naming the part that is (a scheme other
        /// than `tcp://` or `tcp+tls://`, a port out of range, ...).
        reason: String,
    },
    /// The TLS settings cannot be used: a CA or client certificate or key
    /// that does not parse, a client certificate without a CA, or a server
    /// of the connect string written `tcp+tls://` without a CA (or in a
    /// build without the `tls` feature), refused before anything is sent.
    #[error("invalid TLS settings: {reason}")]
    InvalidTls {
        /// What is wrong with them.
        reason: String,
    },
    /// The chroot of the connect string (`host:port/app`) does not exist.
    /// ZooKeeper resolves every path of the client under it and never
    /// creates it: a chroot must exist before clients use it.
    #[error("{}", chroot_missing(.chroot, .path.as_deref()))]
    ChrootMissing {
        /// The chroot, as in the connect string (`/app`).
        chroot: String,
        /// The lock directory, relative to the chroot; `None` where no lock
        /// is involved ([`connect_client`](crate::connect_client)).
        path: Option<String>,
    },
    /// The lease would be too short to act on: the session timeout is less
    /// than 2.25 times the follower lag ([`LockBuilder::follower_lag`](crate::LockBuilder::follower_lag)).
    #[error(
        "the session timeout the server granted, {session_timeout:?}, leaves too short a lease with a \
         follower lag of {follower_lag:?}: the session timeout must be at least 2.25 x the follower lag \
         (ask for a longer one, or raise the server's maxSessionTimeout)"
    )]
    LeaseTooShort {
        /// The negotiated session timeout.
        session_timeout: std::time::Duration,
        /// The configured follower lag.
        follower_lag: std::time::Duration,
    },
    /// No host name of the connect string resolves to an address (DNS,
    /// `/etc/hosts`), and it names no IP address: no server can be tried,
    /// so connecting fails at once rather than after the connect timeout.
    /// (When some hosts resolve, the others are logged and those are tried.)
    /// A name that resolves only later, such as that of a server still
    /// being deployed, fails too: connect again later.
    #[error("cannot reach ZooKeeper at {servers}: {}", unresolvable(.hosts, .reason))]
    UnresolvableHosts {
        /// The connect string.
        servers: String,
        /// Its host names, none of which resolves.
        hosts: Vec<String>,
        /// What the name service said about the first one.
        reason: String,
    },
    /// No ZooKeeper server answered in time.
    #[error("cannot reach ZooKeeper at {servers}: no server answered (tried for up to {timeout:?}); is a server running there?")]
    Unreachable {
        /// The connect string.
        servers: String,
        /// How long connecting was tried.
        timeout: std::time::Duration,
    },
    /// A server accepted the connection and closed it before answering the
    /// connect request, again and again until the connect timeout, and no
    /// server established a session. ZooKeeper does that when this host
    /// already has `maxClientCnxns` connections to it (60 by default), when
    /// it is a member of an ensemble that lost its quorum (read-only or not,
    /// it refuses a client that does not ask for a read-only session, and
    /// this library never does), and when the connection is plain and the
    /// port takes TLS only (or the reverse).
    #[error(
        "ZooKeeper at {servers} accepted the connection but closed it before answering the connect \
         request (last: {server}; tried for {timeout:?}): the server refuses the session. Likely causes: \
         this host already has `maxClientCnxns` connections to that server (zoo.cfg, default 60 per \
         client address; raise it, or use fewer sessions per host, e.g. one client shared by many \
         locks), the server is a member of an ensemble without a quorum (wait until a quorum is \
         back), or the port takes TLS only, or the reverse; the server's log says which."
    )]
    SessionRefused {
        /// The connect string.
        servers: String,
        /// The last server that closed the connection.
        server: String,
        /// How long connecting was tried.
        timeout: std::time::Duration,
    },
    /// The blocking API was called on a thread that runs a Tokio runtime's
    /// tasks, where blocking would stop them (and wait for ever if one of
    /// them holds the lock). `spawn_blocking` and plain threads are fine:
    /// see [`crate::blocking`].
    #[error(
        "the blocking API cannot be used on a thread that runs async tasks: call it inside \
         `tokio::task::spawn_blocking`, or use the async `SharedLock` there"
    )]
    InsideRuntime,
    /// Starting the runtime of the blocking API failed.
    #[error("cannot start the runtime of the blocking API")]
    Runtime(#[source] std::io::Error),
    /// Any other error reported by ZooKeeper or its client.
    #[error("ZooKeeper error: {0}")]
    ZooKeeper(#[from] zk::Error),
}

/// Why a path given twice in one multi-lock is refused (its syntax is fine).
pub(crate) const DUPLICATE_PATH: &str = "it appears more than once in one multi-lock";

/// Why a lock path is refused that has a character ZooKeeper refuses in
/// paths ([`refused_in_path`]); its message names the character.
pub(crate) const REFUSED_IN_PATH: &str = "it contains a character ZooKeeper refuses in paths";

/// Why an identity is refused that has a character ZooKeeper refuses in
/// paths (an identity is part of every contender's node name); its message
/// names the character.
pub(crate) const REFUSED_IN_IDENTITY: &str = "it contains a character ZooKeeper refuses in node names";

/// The characters [`refused_in_path`] refuses, in words.
const REFUSED_CHARACTERS: &str = "NUL, U+0001-U+001F, U+007F-U+009F, U+D800-U+F8FF, U+FFF0 and above";

/// Whether ZooKeeper refuses the character `c` in a path (so in a node
/// name): the rule of its own `PathUtils.validatePath` and of the client's
/// path check, one rule for lock paths, identities and the connect
/// string's chroot. Refused are NUL, U+0001-U+001F, U+007F-U+009F,
/// U+D800-U+F8FF and U+FFF0-U+FFFF (the client refuses them before
/// sending, with a generic "unsupported characters in path"), and every
/// character beyond U+FFFF: the server reads a path as UTF-16, where
/// those are pairs of surrogates (U+D800-U+DFFF), which it refuses.
pub(crate) fn refused_in_path(c: char) -> bool {
    matches!(u32::from(c), 0..=0x1f | 0x7f..=0x9f | 0xd800..=0xf8ff | 0xfff0..)
}

/// The first character of `s` that ZooKeeper refuses in a path, and its
/// byte offset.
pub(crate) fn first_refused(s: &str) -> Option<(usize, char)> {
    s.char_indices().find(|&(_, c)| refused_in_path(c))
}

/// A character as a message names it: `` `\n` (U+000A) `` for NUL, tab,
/// line feed and carriage return, `U+0085` for any other.
pub(crate) fn character_name(c: char) -> String {
    match c {
        '\0' | '\t' | '\n' | '\r' => format!("`{}` (U+{:04X})", c.escape_debug(), u32::from(c)),
        _ => format!("U+{:04X}", u32::from(c)),
    }
}

/// The reason `reason` for refusing `s`, naming the character that
/// [`REFUSED_IN_PATH`] and [`REFUSED_IN_IDENTITY`] are about.
fn naming_the_character(reason: &'static str, s: &str) -> std::borrow::Cow<'static, str> {
    let what = match reason {
        REFUSED_IN_PATH => "paths",
        REFUSED_IN_IDENTITY => "node names",
        _ => return reason.into(),
    };
    match first_refused(s) {
        Some((at, c)) => format!(
            "it contains {} at byte {at}, a character ZooKeeper refuses in {what} ({REFUSED_CHARACTERS})",
            character_name(c)
        )
        .into(),
        None => reason.into(),
    }
}

/// What a lock path looks like, after the reason a path is refused; nothing
/// after a reason that is not about its syntax (a path given twice).
fn path_syntax(reason: &str) -> String {
    if reason == DUPLICATE_PATH {
        return String::new();
    }
    format!(
        "; a lock path is absolute, like `/locks/orders`: it starts with '/', has no empty, '.' or \
         '..' segments, no trailing '/', no character ZooKeeper refuses (control characters and \
         others), no segment named like a contender node (`<name>-<R|W>-<seq>`, or Curator's or \
         kazoo's), is at most {} bytes long, and is neither `/` nor in ZooKeeper's own `/zookeeper`",
        crate::limits::MAX_PATH_LEN
    )
}

/// A path or identity in backticks ([`escaped`]); a long one shortened,
/// with its length.
fn quoted(s: &str) -> String {
    const SHOWN: usize = 64;
    if s.len() <= 2 * SHOWN {
        return format!("`{}`", escaped(s));
    }
    let mut end = SHOWN;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("`{}...` ({} bytes)", escaped(&s[..end]), s.len())
}

/// `s` as a message shows it: control characters, the others ZooKeeper
/// refuses in paths, and the line and paragraph separators escaped (`\n`,
/// `\u{85}`), so that a message is one line.
fn escaped(s: &str) -> std::borrow::Cow<'_, str> {
    let shown_as_is =
        |c: char| !(c.is_control() || refused_in_path(c) || matches!(c, '\u{2028}' | '\u{2029}'));
    if s.chars().all(shown_as_is) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            _ if shown_as_is(c) => out.push(c),
            '\0' | '\t' | '\n' | '\r' => out.extend(c.escape_debug()),
            _ => out.extend(c.escape_unicode()),
        }
    }
    out.into()
}

/// The text of [`Error::UnresolvableHosts`] after "cannot reach ZooKeeper at ...: ".
fn unresolvable(hosts: &[String], reason: &str) -> String {
    let names: Vec<String> = hosts.iter().map(|h| quoted(h)).collect();
    let what = match names.as_slice() {
        [one] => format!("the host name {one} does not resolve to an address"),
        _ => format!(
            "none of the host names {} resolves to an address",
            names.join(", ")
        ),
    };
    format!(
        "{what} (name resolution failed: {reason}); check the spelling of the connect string and the \
         name service (DNS, /etc/hosts)"
    )
}

/// The text of [`Error::ChrootMissing`].
fn chroot_missing(chroot: &str, path: Option<&str>) -> String {
    let what = match path {
        Some(path) => format!(
            "the chroot `{chroot}` of the connect string does not exist, so the lock `{path}` \
             (`{chroot}{path}` on the server) cannot be used"
        ),
        None => format!("the chroot `{chroot}` of the connect string does not exist"),
    };
    format!(
        "{what}: a chroot must exist before clients use it; create `{chroot}` (and its parents) \
         first, e.g. with zkCli.sh `create {chroot}`, or leave it out of the connect string"
    )
}

impl Error {
    /// The error an acquire on the lock directory `path` that failed
    /// reports ([`Reported`]), variant for variant; its requests' retries
    /// went on for `retried_for` before they gave up.
    pub(crate) fn reported(
        reported: Reported<'_, (zk::Error, String)>,
        path: &str,
        retried_for: std::time::Duration,
    ) -> Error {
        let path = path.to_owned();
        let node = |name: Option<&str>| name.map(|name| child_path(&path, name)).unwrap_or_default();
        match reported {
            Reported::SessionExpired => Error::SessionExpired,
            Reported::SessionClosed => Error::SessionClosed,
            Reported::AuthFailed => Error::AuthFailed,
            Reported::Lost { node: name } => Error::Lost { node: node(name) },
            Reported::SequenceExhausted => Error::SequenceExhausted { path },
            Reported::ListingTooLarge {
                contenders,
                size,
                limit,
            } => Error::ListingTooLarge {
                path,
                contenders,
                size,
                limit,
            },
            Reported::InvalidName { node: name } => Error::unexpected(&format!(
                "the contender node {} is not named as a contender",
                node(name)
            )),
            Reported::NoAnswer((last, _)) => Error::NoAnswer {
                path,
                retried_for,
                last,
            },
            Reported::RequestFailed((e, at)) => Error::from_zk(e, &at),
            Reported::Unexplained => Error::unexpected("the acquire failed"),
            Reported::DirectoryHoldsData => Error::DirectoryHoldsData { path },
            Reported::NoDirectory => Error::from_zk(zk::Error::NoNode, &path),
            Reported::PermitsDisagree {
                node: name,
                carried,
                asked,
            } => Error::PermitsDisagree {
                node: node(name),
                path,
                carried,
                asked,
            },
        }
    }

    /// An error for what cannot happen (a driver error), typed, not a panic.
    pub(crate) fn unexpected(what: &str) -> Error {
        Error::ZooKeeper(zk::Error::UnexpectedError(what.to_owned()))
    }

    /// Names the lock directory `path` in an [`Error::ChrootMissing`] that
    /// does not name one yet (from connecting for that lock).
    pub(crate) fn for_lock(self, path: &str) -> Error {
        match self {
            Error::ChrootMissing { chroot, path: None } => Error::ChrootMissing {
                chroot,
                path: Some(path.to_owned()),
            },
            other => other,
        }
    }

    /// The error for a session state that ends the session for good
    /// (expired, closed, authentication failed); `None` for the others.
    pub fn from_session_state(state: zk::SessionState) -> Option<Error> {
        match state {
            zk::SessionState::Expired => Some(Error::SessionExpired),
            zk::SessionState::Closed => Some(Error::SessionClosed),
            zk::SessionState::AuthFailed => Some(Error::AuthFailed),
            _ => None,
        }
    }

    /// True when the session is over ([`Error::SessionExpired`],
    /// [`Error::SessionClosed`], [`Error::AuthFailed`]): every ephemeral
    /// node of it is gone.
    pub fn is_session_over(&self) -> bool {
        matches!(
            self,
            Error::SessionExpired | Error::SessionClosed | Error::AuthFailed
        )
    }

    /// Maps a ZooKeeper error of an operation on `path` to the most specific
    /// variant: the errors that end the session to [`Error::SessionExpired`],
    /// [`Error::SessionClosed`] or [`Error::AuthFailed`], `NoAuth` to [`Error::NoAuth`],
    /// `NoChildrenForEphemerals` to [`Error::EphemeralDirectory`], any other
    /// to [`Error::ZooKeeper`]. Use it for requests made on the lock's client
    /// directly (e.g. with [`SharedLock::client`](crate::SharedLock::client)),
    /// so that they are classified as the lock's own are.
    pub fn from_zk(err: zk::Error, path: &str) -> Error {
        match err {
            zk::Error::SessionExpired | zk::Error::SessionMoved => Error::SessionExpired,
            zk::Error::ClientClosed => Error::SessionClosed,
            zk::Error::AuthFailed => Error::AuthFailed,
            zk::Error::NoAuth => Error::NoAuth {
                path: path.to_owned(),
            },
            zk::Error::NoChildrenForEphemerals => Error::EphemeralDirectory {
                path: path.to_owned(),
            },
            other => Error::ZooKeeper(other),
        }
    }
}

/// True for a ZooKeeper error that ends the session: one that
/// [`Error::from_zk`] maps to an error for which [`Error::is_session_over`]
/// holds. Nothing more can be done with the session.
pub(crate) fn ends_session(e: &zk::Error) -> bool {
    Error::from_zk(e.clone(), "").is_session_over()
}

/// True for a ZooKeeper error that does not come from the server's verdict
/// on the request but from the way to it: the connection broke while the
/// request was in flight (`ConnectionLoss`, an I/O error, a lost or garbled
/// reply), or the server shed it (`Throttled`). The request may or may not
/// have been applied; once the session is reconnected it can be sent again
/// (an idempotent one as it is, a sequential create only after looking for
/// its node). Errors that end the session (`SessionExpired`, `ClientClosed`,
/// `AuthFailed`, `SessionMoved`) and the server's answers (`NoNode`,
/// `NoAuth`, ...) are not retryable.
///
/// The library, the command line and the benchmark all classify errors with
/// this one function.
pub fn is_retryable(e: &zk::Error) -> bool {
    matches!(
        e,
        zk::Error::ConnectionLoss
            | zk::Error::Custom(_)
            | zk::Error::UnexpectedError(_)
            | zk::Error::UnmarshalError { .. }
            | zk::Error::Timeout
            | zk::Error::Throttled
    )
}

/// Runs an idempotent request again after a retryable error (see
/// [`is_retryable`]), until it gets the server's answer or retrying is
/// over ([`Backoff::request`]). A request sent while the client is
/// disconnected waits for the reconnection; once the session is over,
/// requests fail with its terminal error.
pub(crate) async fn with_retry<T, F, Fut>(client: &zk::Client, op: F) -> Result<T, zk::Error>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, zk::Error>>,
{
    let started = tokio::time::Instant::now();
    let first = op().await;
    retry_after(client, started, first, op).await
}

/// As [`with_retry`], for a request whose first attempt, sent at
/// `started`, answered `first`: a retryable error sends it again at once,
/// then after pauses that double, until retrying is over counted from
/// `started`.
pub(crate) async fn retry_after<T, F, Fut>(
    client: &zk::Client,
    started: tokio::time::Instant,
    first: Result<T, zk::Error>,
    op: F,
) -> Result<T, zk::Error>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, zk::Error>>,
{
    let backoff = Backoff::request(client.session_timeout());
    let mut pause = std::time::Duration::ZERO;
    let mut result = first;
    loop {
        match result {
            Err(e) if is_retryable(&e) => {
                let Some(next) = backoff.pause(started.elapsed(), pause) else {
                    tracing::debug!(error = %e, "giving up retrying: the session cannot be reached");
                    return Err(e);
                };
                // The first retry goes at once; each pause after it doubles.
                tokio::time::sleep(pause).await;
                pause = next;
                result = op().await;
            }
            result => return result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_errors_are_the_broken_connections_and_throttling() {
        for e in [
            zk::Error::ConnectionLoss,
            zk::Error::UnexpectedError("recv response with xid 7 but no pending request".into()),
            zk::Error::Timeout,
            zk::Error::Throttled,
        ] {
            assert!(is_retryable(&e), "{e}");
        }
        for e in [
            zk::Error::NoNode,
            zk::Error::NoAuth,
            zk::Error::NodeExists,
            zk::Error::NotEmpty,
            zk::Error::SessionExpired,
            zk::Error::SessionMoved,
            zk::Error::ClientClosed,
            zk::Error::AuthFailed,
            zk::Error::BadVersion,
        ] {
            assert!(!is_retryable(&e), "{e}");
        }
    }

    #[test]
    fn session_states() {
        assert!(matches!(
            Error::from_session_state(zk::SessionState::Expired),
            Some(Error::SessionExpired)
        ));
        assert!(matches!(
            Error::from_session_state(zk::SessionState::Closed),
            Some(Error::SessionClosed)
        ));
        assert!(matches!(
            Error::from_session_state(zk::SessionState::AuthFailed),
            Some(Error::AuthFailed)
        ));
        assert!(Error::AuthFailed.is_session_over());
        assert!(Error::from_session_state(zk::SessionState::Disconnected).is_none());
        assert!(Error::from_session_state(zk::SessionState::SyncConnected).is_none());
    }

    /// A path given twice is refused for that alone, without the syntax of
    /// a lock path, which it follows.
    #[test]
    fn a_duplicate_path_is_not_explained_as_a_syntax_error() {
        let duplicate = Error::InvalidPath {
            path: "/locks/a".to_owned(),
            reason: DUPLICATE_PATH,
        };
        assert_eq!(
            duplicate.to_string(),
            "invalid lock path `/locks/a`: it appears more than once in one multi-lock"
        );
        let bad = Error::InvalidPath {
            path: "locks".to_owned(),
            reason: "it does not start with '/'",
        };
        assert!(bad.to_string().contains("a lock path is absolute"), "{bad}");
    }

    #[test]
    fn long_paths_and_identities_are_shortened_in_messages() {
        let long = "é".repeat(1000);
        let err = Error::InvalidIdentity {
            identity: long.clone(),
            reason: "it is longer than 255 bytes",
        }
        .to_string();
        assert!(err.len() < 400, "{err}");
        assert!(err.contains("(2000 bytes)"), "{err}");
        assert!(err.contains("at most 255 bytes"), "{err}");
        let err = Error::InvalidPath {
            path: format!("/{long}"),
            reason: "it is longer than 4096 bytes",
        }
        .to_string();
        assert!(err.contains("(2001 bytes)") && err.len() < 600, "{err}");
        let short = Error::InvalidIdentity {
            identity: "a/b".into(),
            reason: "it contains '/'",
        };
        assert!(short
            .to_string()
            .starts_with("invalid identity `a/b`: it contains '/'"));
    }

    /// Control characters and the others ZooKeeper refuses are escaped
    /// wherever a message quotes its input: a message is one line.
    #[test]
    fn messages_quote_their_input_in_one_line() {
        let long = format!("/{}\n{}", "a".repeat(40), "b".repeat(200));
        for (e, shown) in [
            (
                Error::InvalidPath {
                    path: "/a\r\nb\u{85}\u{2028}".into(),
                    reason: REFUSED_IN_PATH,
                },
                "invalid lock path `/a\\r\\nb\\u{85}\\u{2028}`: it contains `\\r` (U+000D) at byte 2, a \
                 character ZooKeeper refuses in paths (NUL, U+0001-U+001F, U+007F-U+009F, \
                 U+D800-U+F8FF, U+FFF0 and above); a lock path is absolute",
            ),
            (
                Error::InvalidPath {
                    path: long.clone(),
                    reason: REFUSED_IN_PATH,
                },
                "invalid lock path `/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\nbbbbbbbbbbbbbbbbbbbbbb...` \
                 (242 bytes): it contains `\\n` (U+000A) at byte 41",
            ),
            (
                Error::InvalidIdentity {
                    identity: "\u{0}\u{1f512}".into(),
                    reason: REFUSED_IN_IDENTITY,
                },
                "invalid identity `\\0\\u{1f512}`: it contains `\\0` (U+0000) at byte 0, a character \
                 ZooKeeper refuses in node names (",
            ),
            (
                Error::InvalidConnectString {
                    servers: "a:1\nb:2".into(),
                    reason: "`a:1\nb:2` contains whitespace".into(),
                },
                "invalid connect string `a:1\\nb:2`: `a:1\\nb:2` contains whitespace; expected",
            ),
            (
                Error::UnresolvableHosts {
                    servers: "x".into(),
                    hosts: vec!["a\u{1}b".into()],
                    reason: "unknown".into(),
                },
                "the host name `a\\u{1}b` does not resolve",
            ),
        ] {
            let message = e.to_string();
            assert!(message.contains(shown), "{message}\nwanted: {shown}");
            assert!(
                !message
                    .chars()
                    .any(|c| c.is_control() || matches!(c, '\u{85}' | '\u{2028}')),
                "{message:?}"
            );
        }
        // A reason about something else is shown as it is, even for a path
        // with such a character (an error made by hand).
        let other = Error::InvalidPath {
            path: "/a\nb".into(),
            reason: "it has an empty segment ('//')",
        };
        assert!(
            other
                .to_string()
                .starts_with("invalid lock path `/a\\nb`: it has an empty segment ('//');"),
            "{other}"
        );
    }

    #[test]
    fn unresolvable_hosts_are_named() {
        let reason = "failed to lookup address information: Name or service not known".to_owned();
        let one = Error::UnresolvableHosts {
            servers: "zk1.example:2181".into(),
            hosts: vec!["zk1.example".into()],
            reason: reason.clone(),
        };
        assert_eq!(
            one.to_string(),
            "cannot reach ZooKeeper at zk1.example:2181: the host name `zk1.example` does not resolve \
             to an address (name resolution failed: failed to lookup address information: Name or \
             service not known); check the spelling of the connect string and the name service (DNS, \
             /etc/hosts)"
        );
        let two = Error::UnresolvableHosts {
            servers: "a:1,b:2".into(),
            hosts: vec!["a".into(), "b".into()],
            reason,
        };
        assert!(
            two.to_string()
                .contains("none of the host names `a`, `b` resolves"),
            "{two}"
        );
        assert!(!two.is_session_over());
    }

    #[test]
    fn zk_errors_map_to_the_most_specific_variant() {
        for e in [
            zk::Error::SessionExpired,
            zk::Error::SessionMoved,
            zk::Error::ClientClosed,
            zk::Error::AuthFailed,
        ] {
            assert!(Error::from_zk(e, "/a").is_session_over());
        }
        assert!(matches!(Error::from_zk(zk::Error::NoAuth, "/a"), Error::NoAuth { path } if path == "/a"));
        assert!(matches!(
            Error::from_zk(zk::Error::NoChildrenForEphemerals, "/a"),
            Error::EphemeralDirectory { path } if path == "/a"
        ));
        assert!(matches!(
            Error::from_zk(zk::Error::ConnectionLoss, "/a"),
            Error::ZooKeeper(zk::Error::ConnectionLoss)
        ));
    }
}
