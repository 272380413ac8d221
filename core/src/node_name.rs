//! Contender node names, in each layout this library can read and write.
//!
//! A contender for a lock creates one ephemeral sequential child of the lock
//! directory. ZooKeeper appends the sequence number (the directory's one
//! counter, whoever creates the child), so the name the server stores is
//! `<prefix><marker><seq>`. The *marker* right before the sequence says which
//! library's layout the name follows and what the contender asks for:
//!
//! | layout ([`Layout`]) | written by | read (shared) | write (exclusive) |
//! |---|---|---|---|
//! | `native` | zk-rwlock | `<host>-R-<seq>` | `<host>-W-<seq>` |
//! | `curator` | Curator `InterProcessReadWriteLock` | `_c_<uuid>-__READ__<seq>` | `_c_<uuid>-__WRIT__<seq>` |
//! | `curator-mutex` | Curator `InterProcessMutex` | none | `_c_<uuid>-lock-<seq>` |
//! | `kazoo` | kazoo `ReadLock`, `WriteLock`, `Lock` | `<32 hex>__rlock__<seq>` | `<32 hex>__lock__<seq>` |
//!
//! - `<host>` is `<identity>@<token>` when this library wrote it: the
//!   identity (by default the machine's host name) and a per-attempt UUID in
//!   32 lowercase hex digits. Any other non-empty string is accepted too, so
//!   that contenders written by other clients in the bare `<host>-<R|W>-<seq>`
//!   form take part in the same queue.
//! - Curator prefixes its nodes with `_c_<uuid>-` (a lowercase UUID with
//!   dashes), kazoo with the UUID's 32 lowercase hex digits: that is the
//!   token by which each finds its node after a connection loss, and so
//!   does this library in their layouts. A peer name with any other prefix
//!   (or none) is still a contender: Curator and kazoo themselves recognise
//!   their nodes by the marker alone, so such a name carries no token.
//! - `<seq>` is ZooKeeper's signed 32-bit sequence counter printed as `%010d`.
//!   It is negative after the counter wraps: `-2147483648`, `-000000005`.
//!
//! A name is parsed from the right (host names may contain `-`): the
//! sequence, then the marker, which no other marker ends with, so a name
//! has at most one reading. The mode is the strictest the marker can mean:
//! kazoo's `__lock__` is written by both its `WriteLock` and its `Lock`, and
//! Curator's `lock-` by its mutex, so both are exclusive.
//!
//! This module is pure: no I/O, no clock, no logging.
//!
//! ```
//! use zk_rwlock_core::{Layout, Mode, NodeName};
//!
//! let name: NodeName = "web-01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042".parse()?;
//! assert_eq!(name.identity(), "web-01");
//! assert_eq!(name.mode(), Mode::Write);
//! assert_eq!(name.seq(), 42);
//! assert_eq!(name.to_string(), "web-01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042");
//!
//! let peer: NodeName = "_c_7f3a0c1e-9b2d-4f60-a1b2-c3d4e5f60718-__READ__0000000043".parse()?;
//! assert_eq!(peer.layout(), Layout::Curator);
//! assert_eq!(peer.mode(), Mode::Read);
//! assert_eq!(peer.token(), name.token());
//! # Ok::<(), zk_rwlock_core::node_name::ParseNameError>(())
//! ```

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

/// The lock mode a contender asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Shared: any number of readers may hold the lock together.
    Read,
    /// Exclusive: a writer holds the lock alone.
    Write,
}

impl Mode {
    /// The letter used in node names: `'R'` or `'W'`.
    pub const fn letter(self) -> char {
        match self {
            Mode::Read => 'R',
            Mode::Write => 'W',
        }
    }

    /// The mode for a node-name letter (`'R'` or `'W'`).
    pub const fn from_letter(letter: char) -> Option<Mode> {
        match letter {
            'R' => Some(Mode::Read),
            'W' => Some(Mode::Write),
            _ => None,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Mode::Read => "read",
            Mode::Write => "write",
        })
    }
}

/// How contender node names are written: this library's own layout, or the
/// layout of a peer library that locks the same directory.
///
/// A lock *reads* every layout whatever it writes (see the [module
/// documentation](self)); the layout chosen with
/// `zk_rwlock::LockBuilder::layout` decides only how its
/// own nodes are named, so that the peer library sees them as contenders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Layout {
    /// zk-rwlock's own: `<identity>@<token>-R-<seq>`, `<identity>@<token>-W-<seq>`.
    #[default]
    Native,
    /// Apache Curator's `InterProcessReadWriteLock`:
    /// `_c_<uuid>-__READ__<seq>`, `_c_<uuid>-__WRIT__<seq>`.
    Curator,
    /// Apache Curator's `InterProcessMutex` (exclusive only):
    /// `_c_<uuid>-lock-<seq>`. Read acquires fail with
    /// `zk_rwlock::Error::UnsupportedMode`.
    CuratorMutex,
    /// kazoo's `ReadLock` and `WriteLock` (and `Lock`, which writes what
    /// `WriteLock` writes): `<hex>__rlock__<seq>`, `<hex>__lock__<seq>`.
    Kazoo,
}

/// The markers, each followed by the sequence. No marker ends with another.
const MARKERS: [(&str, Layout, Mode); 7] = [
    ("-R-", Layout::Native, Mode::Read),
    ("-W-", Layout::Native, Mode::Write),
    ("__READ__", Layout::Curator, Mode::Read),
    ("__WRIT__", Layout::Curator, Mode::Write),
    ("lock-", Layout::CuratorMutex, Mode::Write),
    ("__rlock__", Layout::Kazoo, Mode::Read),
    ("__lock__", Layout::Kazoo, Mode::Write),
];

impl Layout {
    /// Every layout, native first.
    pub const ALL: [Layout; 4] = [
        Layout::Native,
        Layout::Curator,
        Layout::CuratorMutex,
        Layout::Kazoo,
    ];

    /// The layout's name, as the CLI's `--layout` takes it: `native`,
    /// `curator`, `curator-mutex`, `kazoo`.
    pub const fn name(self) -> &'static str {
        match self {
            Layout::Native => "native",
            Layout::Curator => "curator",
            Layout::CuratorMutex => "curator-mutex",
            Layout::Kazoo => "kazoo",
        }
    }

    /// The library and recipe that write this layout.
    pub const fn library(self) -> &'static str {
        match self {
            Layout::Native => "zk-rwlock",
            Layout::Curator => "Curator InterProcessReadWriteLock",
            Layout::CuratorMutex => "Curator InterProcessMutex",
            Layout::Kazoo => "kazoo",
        }
    }

    /// True if contenders of this layout can ask for `mode` (the Curator
    /// mutex has no readers).
    pub const fn supports(self, mode: Mode) -> bool {
        !matches!((self, mode), (Layout::CuratorMutex, Mode::Read))
    }

    /// True if the library that writes this layout counts a contender node
    /// written in `other` as a contender at all: zk-rwlock counts every
    /// layout; each peer recipe only its own nodes (Curator's read/write lock
    /// and its mutex ignore each other's, kazoo ignores both). A peer may
    /// hold the lock beside every node it does not recognise; within one
    /// layout, see [`crate::ordering::blind_to`].
    pub fn recognises(self, other: Layout) -> bool {
        self == Layout::Native || self == other
    }

    /// True if a contender node of this layout may be asked to let go (a
    /// revocation request, `zk_rwlock::SharedLock::revoke`,
    /// written as the node's data): every layout but kazoo's. kazoo has no
    /// revocation, and keeps its contender's identifier in the node's data
    /// (its `Lock.contenders()` returns it), so nothing is written to a
    /// kazoo node. A Curator holder acts on a request only if it made its
    /// lock revocable (`makeRevocable`); the request is Curator's own.
    pub const fn revocable(self) -> bool {
        !matches!(self, Layout::Kazoo)
    }

    /// The marker written before the sequence, or `None` if the layout has
    /// no such mode.
    pub fn marker(self, mode: Mode) -> Option<&'static str> {
        MARKERS
            .iter()
            .find(|(_, layout, m)| *layout == self && *m == mode)
            .map(|(marker, _, _)| *marker)
    }

    /// The name without its sequence suffix, as passed to ZooKeeper's
    /// sequential `create`, or `None` if the layout has no such mode.
    /// `identity` appears in the native layout only (the peers' names carry
    /// no identity; this library writes it as the node's data instead).
    pub fn prefix(self, identity: &str, token: Uuid, mode: Mode) -> Option<String> {
        let marker = self.marker(mode)?;
        Some(match self {
            Layout::Native => format!("{identity}@{}{marker}", token.simple()),
            Layout::Curator | Layout::CuratorMutex => format!("_c_{}-{marker}", token.hyphenated()),
            Layout::Kazoo => format!("{}{marker}", token.simple()),
        })
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A layout name that is none of `native`, `curator`, `curator-mutex`, `kazoo`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown layout `{0}`: expected native, curator, curator-mutex or kazoo")]
pub struct ParseLayoutError(String);

impl FromStr for Layout {
    type Err = ParseLayoutError;

    fn from_str(s: &str) -> Result<Layout, ParseLayoutError> {
        Layout::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| ParseLayoutError(s.to_owned()))
    }
}

/// Why a child name is not a contender node name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseNameReason {
    /// The name does not end in a sequence number.
    MissingSequence,
    /// The sequence suffix is not a signed 32-bit number in ZooKeeper's `%010d` form.
    BadSequence,
    /// The sequence is not preceded by the marker of a known layout
    /// (`-R-`, `-W-`, `__READ__`, `__WRIT__`, `lock-`, `__rlock__`, `__lock__`).
    MissingMode,
    /// Nothing precedes the `-R-`/`-W-` part of a native name.
    EmptyHost,
}

impl fmt::Display for ParseNameReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParseNameReason::MissingSequence => "it does not end in a sequence number",
            ParseNameReason::BadSequence => {
                "its sequence suffix is not a signed 32-bit number written as %010d"
            }
            ParseNameReason::MissingMode => {
                "the sequence number is not preceded by `-R-` or `-W-` (native), \
                 `__READ__`, `__WRIT__` or `lock-` (Curator), `__rlock__` or `__lock__` (kazoo)"
            }
            ParseNameReason::EmptyHost => "the host part before `-R-`/`-W-` is empty",
        })
    }
}

/// A child name that fits no layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{name}` is not a contender node name (native `<host>-<R|W>-<seq>`, \
     Curator `_c_<uuid>-<__READ__|__WRIT__|lock->`<seq>, kazoo `<hex><__rlock__|__lock__><seq>`): {reason}"
)]
pub struct ParseNameError {
    name: String,
    reason: ParseNameReason,
}

impl ParseNameError {
    pub(crate) fn new(name: &str, reason: ParseNameReason) -> ParseNameError {
        ParseNameError {
            name: name.to_owned(),
            reason,
        }
    }

    /// The name that failed to parse.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What was wrong with it.
    pub fn reason(&self) -> ParseNameReason {
        self.reason
    }
}

/// The parts of a contender name, borrowed from the name. Used by the
/// ordering code, which must not allocate per child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parts<'a> {
    /// Everything before the marker.
    pub(crate) host: &'a str,
    pub(crate) layout: Layout,
    pub(crate) mode: Mode,
    pub(crate) seq: i32,
}

/// The marker `rest` ends with, if any: its length, layout and mode.
#[inline]
fn marker_of(rest: &str) -> Option<(usize, Layout, Mode)> {
    MARKERS
        .iter()
        .find(|(marker, _, _)| rest.ends_with(marker))
        .map(|(marker, layout, mode)| (marker.len(), *layout, *mode))
}

/// Splits `name` into its parts, from the right.
pub(crate) fn parse_parts(name: &str) -> Result<Parts<'_>, ParseNameReason> {
    let bytes = name.as_bytes();
    let digits = bytes.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return Err(ParseNameReason::MissingSequence);
    }
    let mut seq_start = bytes.len() - digits;
    // `host-W--000000005`, `<hex>__lock__-000000005`: a `-` right after a
    // marker is the sign. (No marker ends with the end of another marker
    // followed by `-`, so this reading is the only one.)
    if name[..seq_start].strip_suffix('-').and_then(marker_of).is_some() {
        seq_start -= 1;
    }
    let seq_str = &name[seq_start..];
    let seq: i32 = seq_str.parse().map_err(|_| ParseNameReason::BadSequence)?;
    if !is_canonical_seq(seq, seq_str) {
        return Err(ParseNameReason::BadSequence);
    }
    let rest = &name[..seq_start];
    let (marker_len, layout, mode) = marker_of(rest).ok_or(ParseNameReason::MissingMode)?;
    let host = &rest[..rest.len() - marker_len];
    // Peers recognise their nodes by the marker alone; a native name needs a host.
    if host.is_empty() && layout == Layout::Native {
        return Err(ParseNameReason::EmptyHost);
    }
    Ok(Parts {
        host,
        layout,
        mode,
        seq,
    })
}

/// True if `name` parses as a contender node name in any layout: a lock
/// counts a child with such a name as a contender, whatever the node is.
/// Does not allocate.
///
/// ```
/// assert!(zk_rwlock_core::node_name::is_contender_name("web01-W-0000000001"));
/// assert!(zk_rwlock_core::node_name::is_contender_name("0f6e5b1c2d3a49e8b7c6d5e4f3a2b1c0__rlock__0000000002"));
/// assert!(!zk_rwlock_core::node_name::is_contender_name("orders"));
/// ```
pub fn is_contender_name(name: &str) -> bool {
    parse_parts(name).is_ok()
}

/// The data that asks the holder of a contender node to let go, written
/// with `setData` on that node (`zk_rwlock::SharedLock::revoke`): Apache Curator's
/// `LockInternals.REVOKE_MESSAGE` (the bytes of `"__REVOKE__"`), so that
/// Curator's `Revoker.attemptRevoke(client, node)` asks a zk-rwlock holder
/// too. Contender nodes are created with empty data; any other data on
/// them is no request.
pub const REVOKE_PAYLOAD: &[u8] = b"__REVOKE__";

/// Whether a contender node's data is a revocation request.
pub fn is_revocation(data: &[u8]) -> bool {
    data == REVOKE_PAYLOAD
}

/// Where a revocation request for a node goes: see [`revocation_target`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevocationTarget<'a> {
    /// Ask the contender node of this child name.
    Ask(&'a str),
    /// A contender node of the directory in a layout that is not
    /// [revocable](Layout::revocable) (kazoo's): nothing is written to it.
    NotRevocable {
        /// The node's child name.
        name: &'a str,
        /// Its layout.
        layout: Layout,
    },
    /// Not a contender node of the directory: a node in another directory,
    /// a node further down (a nested lock's), a name that does not parse.
    /// Nothing is written to it.
    NotAContender,
}

/// Which contender node of the lock directory `dir` a revocation request
/// for `node` (a child name of `dir`, or its full path) is written to, if
/// any.
///
/// A child name with `/` names a node further down (a nested lock's),
/// which is not a contender of this lock although its last part may parse.
/// A node of a layout that is not [revocable](Layout::revocable) is not
/// asked.
///
/// ```
/// use zk_rwlock_core::node_name::{revocation_target, RevocationTarget};
/// let name = "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042";
/// assert_eq!(revocation_target("/locks/a", name), RevocationTarget::Ask(name));
/// assert_eq!(
///     revocation_target("/locks/a", &format!("/locks/a/{name}")),
///     RevocationTarget::Ask(name)
/// );
/// assert_eq!(
///     revocation_target("/locks/a", &format!("/locks/b/{name}")),
///     RevocationTarget::NotAContender
/// );
/// ```
pub fn revocation_target<'a>(dir: &str, node: &'a str) -> RevocationTarget<'a> {
    // A full path outside `dir` keeps its `/`.
    let name = node
        .strip_prefix(dir)
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(node);
    if name.contains('/') {
        return RevocationTarget::NotAContender;
    }
    match parse_parts(name) {
        Ok(parts) if parts.layout.revocable() => RevocationTarget::Ask(name),
        Ok(parts) => RevocationTarget::NotRevocable {
            name,
            layout: parts.layout,
        },
        Err(_) => RevocationTarget::NotAContender,
    }
}

/// True if `data`, a lock directory's data, is what a lock keeps there:
/// nothing, or a release record (the name of a native writer's node, as
/// the wire protocol writes it when a writer releases). A lock refuses a
/// directory that holds anything else
/// (`zk_rwlock::Error::DirectoryHoldsData`), whose
/// data its releases would overwrite. Does not allocate.
///
/// ```
/// use zk_rwlock_core::node_name::is_lock_directory_data;
/// assert!(is_lock_directory_data(b""));
/// assert!(is_lock_directory_data(b"web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042"));
/// assert!(!is_lock_directory_data(b"42"));
/// assert!(!is_lock_directory_data(b"web01-R-0000000042")); // a reader leaves no record
/// ```
pub fn is_lock_directory_data(data: &[u8]) -> bool {
    data.is_empty() || released_node(data).is_some()
}

/// The release record of the contender node `name` (its child name): the
/// lock directory's data that a writer's release writes in the transaction
/// that deletes its node, so that the contender watching the node, woken by
/// the deletion, knows that it was released by a holder (see
/// [`crate::ordering`], "Hand-offs without a new listing"). It is the
/// name's bytes. Only a native writer's release writes it.
///
/// ```
/// use zk_rwlock_core::node_name::{record_names, release_record};
/// let name = "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042";
/// assert_eq!(release_record(name), name.as_bytes());
/// assert!(record_names(release_record(name), name));
/// ```
pub fn release_record(name: &str) -> &[u8] {
    name.as_bytes()
}

/// What ends a [release marker](release_marker)'s name. No contender name
/// in any layout ends so (they end with their sequence's digits), so a
/// marker is never taken for a contender, and it is never a lock
/// directory's child for longer than the transaction that makes it.
pub const RELEASE_MARKER_SUFFIX: &str = ".released";

/// The child name of the release marker of the contender node `name`: a
/// native writer's release creates it and deletes it again in the
/// transaction that deletes its node, after the release record and before
/// the node's deletion. It never stays in the directory, so no listing
/// sees it; but an `exists` watch on it fires `NodeCreated`, and the events
/// of one transaction reach a session in order: the contender watching the
/// node learns of the release from the marker's event, before the
/// deletion's, with no read (see [`crate::ordering`], "Hand-offs without a
/// new listing").
///
/// ```
/// use zk_rwlock_core::node_name::release_marker;
/// use zk_rwlock_core::NodeName;
/// let name = "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042";
/// let marker = release_marker(name);
/// assert_eq!(marker, format!("{name}.released"));
/// assert!(marker.parse::<NodeName>().is_err()); // not a contender, in any layout
/// ```
pub fn release_marker(name: &str) -> String {
    format!("{name}{RELEASE_MARKER_SUFFIX}")
}

/// True if `record`, the lock directory's data, is the
/// [release record](release_record) of the node `name` (a child name): the
/// node was deleted by its holder's release. Any other data, the empty
/// record included, says nothing about `name`.
pub fn record_names(record: &[u8], name: &str) -> bool {
    record == release_record(name)
}

/// The child name of the node whose [release record](release_record)
/// `record` is: a native writer's name (nothing else writes a record);
/// `None` for the empty data, and for data that is no release record.
///
/// ```
/// use zk_rwlock_core::node_name::released_node;
/// let name = "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042";
/// assert_eq!(released_node(name.as_bytes()), Some(name));
/// assert_eq!(released_node(b""), None);
/// assert_eq!(released_node(b"web01-R-0000000042"), None); // a reader leaves no record
/// ```
pub fn released_node(record: &[u8]) -> Option<&str> {
    std::str::from_utf8(record).ok().filter(|name| {
        parse_parts(name).is_ok_and(|parts| parts.layout == Layout::Native && parts.mode == Mode::Write)
    })
}

/// The name ZooKeeper gives a sequential node made with the name `prefix`:
/// the prefix and the counter `seq` as a signed 32-bit number in `%010d`.
pub fn sequential(prefix: &str, seq: i64) -> String {
    // The counter is a signed 32-bit number on the server.
    format!("{prefix}{:010}", seq as i32)
}

/// True if `s` is exactly how ZooKeeper prints `seq` (`%010d`): zero-padded
/// to ten characters, the sign included. `s` is known to parse to `seq`, so
/// only its length remains to be checked.
fn is_canonical_seq(seq: i32, s: &str) -> bool {
    let digits = match seq.unsigned_abs() {
        0 => 1,
        m => m.ilog10() as usize + 1,
    };
    let natural = digits + usize::from(seq < 0);
    // `-000000000` parses to 0, which ZooKeeper prints `0000000000`.
    s.len() == natural.max(10) && !(seq == 0 && s.starts_with('-'))
}

/// True if `s` is `len` lowercase hex digits, with `-` exactly at `dashes`.
fn is_lower_hex(s: &str, len: usize, dashes: &[usize]) -> bool {
    s.len() == len
        && s.bytes().enumerate().all(|(i, b)| {
            if dashes.contains(&i) {
                b == b'-'
            } else {
                matches!(b, b'0'..=b'9' | b'a'..=b'f')
            }
        })
}

/// Splits a host part into identity and per-attempt token, if it carries
/// one in the form its layout writes: native `<identity>@<32 hex>`, Curator
/// exactly `_c_<uuid with dashes>-`, kazoo exactly `<32 hex>`. Returns the
/// identity's length (0 for the peers, whose names carry none; the whole
/// host when there is no token) and the token.
fn split_token(host: &str, layout: Layout) -> (usize, Option<Uuid>) {
    let token = match layout {
        Layout::Native => host.rfind('@').and_then(|at| {
            let token = &host[at + 1..];
            (at > 0 && is_lower_hex(token, 32, &[])).then_some((at, token))
        }),
        Layout::Curator | Layout::CuratorMutex => host
            .strip_prefix("_c_")
            .and_then(|rest| rest.strip_suffix('-'))
            .filter(|uuid| is_lower_hex(uuid, 36, &[8, 13, 18, 23]))
            .map(|uuid| (0, uuid)),
        Layout::Kazoo => is_lower_hex(host, 32, &[]).then_some((0, host)),
    };
    match token.and_then(|(len, token)| Uuid::try_parse(token).ok().map(|uuid| (len, uuid))) {
        Some((len, uuid)) => (len, Some(uuid)),
        None => (host.len(), None),
    }
}

/// A parsed contender node name, in any [`Layout`].
///
/// `FromStr` and `Display` round-trip exactly.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeName {
    host: String,
    identity_len: usize,
    token: Option<Uuid>,
    layout: Layout,
    mode: Mode,
    seq: i32,
}

impl NodeName {
    /// A name as this library writes it in the native layout:
    /// `<identity>@<token>-<R|W>-<seq>`.
    ///
    /// The identity is not checked here; the lock builder validates
    /// identities before any node is created.
    pub fn new(identity: &str, token: Uuid, mode: Mode, seq: i32) -> NodeName {
        let host = format!("{identity}@{}", token.simple());
        NodeName {
            identity_len: identity.len(),
            host,
            token: Some(token),
            layout: Layout::Native,
            mode,
            seq,
        }
    }

    /// A name as this library writes it in `layout`, or `None` if the layout
    /// has no such mode. `identity` appears in the native layout only.
    pub fn new_in(layout: Layout, identity: &str, token: Uuid, mode: Mode, seq: i32) -> Option<NodeName> {
        let prefix = layout.prefix(identity, token, mode)?;
        let marker_len = layout.marker(mode).map_or(0, str::len);
        let host = prefix[..prefix.len() - marker_len].to_owned();
        Some(NodeName {
            identity_len: if layout == Layout::Native {
                identity.len()
            } else {
                0
            },
            host,
            token: Some(token),
            layout,
            mode,
            seq,
        })
    }

    /// The native name without its sequence suffix, as passed to
    /// ZooKeeper's sequential `create`: `<identity>@<token>-<R|W>-`. See
    /// [`Layout::prefix`] for every layout.
    pub fn prefix(identity: &str, token: Uuid, mode: Mode) -> String {
        format!("{identity}@{}-{}-", token.simple(), mode.letter())
    }

    /// Everything before the marker: `<identity>@<token>` or a foreign
    /// client's bare host (native), `_c_<uuid>-` (Curator), the 32 hex
    /// digits (kazoo).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The contender's identity: the native host part without its `@token`.
    /// Empty for a peer's name that carries a token (peers write no
    /// identity into names); the whole prefix for one that does not.
    pub fn identity(&self) -> &str {
        &self.host[..self.identity_len]
    }

    /// The per-attempt token, if the name carries one in its layout's form.
    pub fn token(&self) -> Option<Uuid> {
        self.token
    }

    /// The layout the name is written in.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Read or write: the strictest mode the name can mean.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// ZooKeeper's sequence number (negative after the 32-bit counter wraps).
    pub fn seq(&self) -> i32 {
        self.seq
    }
}

impl FromStr for NodeName {
    type Err = ParseNameError;

    fn from_str(name: &str) -> Result<NodeName, ParseNameError> {
        let parts = parse_parts(name).map_err(|reason| ParseNameError::new(name, reason))?;
        let (identity_len, token) = split_token(parts.host, parts.layout);
        Ok(NodeName {
            host: parts.host.to_owned(),
            identity_len,
            token,
            layout: parts.layout,
            mode: parts.mode,
            seq: parts.seq,
        })
    }
}

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let marker = self.layout.marker(self.mode).unwrap_or_default();
        write!(f, "{}{marker}{:010}", self.host, self.seq)
    }
}

#[cfg(test)]
mod tests;
