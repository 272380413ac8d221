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
//! use zk_rwlock::{Layout, Mode, NodeName};
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
//! # Ok::<(), zk_rwlock::node_name::ParseNameError>(())
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
/// [`LockBuilder::layout`](crate::LockBuilder::layout) decides only how its
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
    /// [`Error::UnsupportedMode`](crate::Error::UnsupportedMode).
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
    /// revocation request, [`SharedLock::revoke`](crate::SharedLock::revoke),
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
/// assert!(zk_rwlock::node_name::is_contender_name("web01-W-0000000001"));
/// assert!(zk_rwlock::node_name::is_contender_name("0f6e5b1c2d3a49e8b7c6d5e4f3a2b1c0__rlock__0000000002"));
/// assert!(!zk_rwlock::node_name::is_contender_name("orders"));
/// ```
pub fn is_contender_name(name: &str) -> bool {
    parse_parts(name).is_ok()
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
/// use zk_rwlock::node_name::{revocation_target, RevocationTarget};
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
/// ([`Error::DirectoryHoldsData`](crate::Error::DirectoryHoldsData)), whose
/// data its releases would overwrite. Does not allocate.
///
/// ```
/// use zk_rwlock::node_name::is_lock_directory_data;
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
/// use zk_rwlock::node_name::{record_names, release_record};
/// let name = "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042";
/// assert_eq!(release_record(name), name.as_bytes());
/// assert!(record_names(release_record(name), name));
/// ```
pub fn release_record(name: &str) -> &[u8] {
    name.as_bytes()
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
/// use zk_rwlock::node_name::released_node;
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
mod tests {
    use super::*;

    #[test]
    fn lock_directory_data_is_empty_or_a_native_writers_name() {
        for (data, want) in [
            (&b""[..], true),
            (b"web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042", true),
            // A native reader's name: no reader leaves a record.
            (b"web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-R-0000000042", false),
            // Peers' writer names: no peer writes a record.
            (
                b"_c_0b7d6f5e-1c2a-4e3b-8f9a-0123456789ab-__WRIT__0000000042",
                false,
            ),
            (b"0123456789abcdef0123456789abcdef__lock__0000000042", false),
            (b"42", false),
            (b"\xff\xfe", false),
        ] {
            assert_eq!(
                is_lock_directory_data(data),
                want,
                "{:?}",
                String::from_utf8_lossy(data)
            );
        }
    }

    #[test]
    fn release_records() {
        let name = "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042";
        let other = "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000041";
        assert_eq!(release_record(name), name.as_bytes());
        assert_eq!(release_record(""), b"");
        for (record, node, names) in [
            (name.as_bytes(), name, true),
            (other.as_bytes(), name, false),
            (b"", name, false),
            // A record is exact: no prefix, no trailing byte.
            (&name.as_bytes()[..name.len() - 1], name, false),
            (
                b"web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-00000000420",
                name,
                false,
            ),
        ] {
            assert_eq!(
                record_names(record, node),
                names,
                "{:?} names {node}",
                String::from_utf8_lossy(record)
            );
        }
        for (record, want) in [
            (name.as_bytes(), Some(name)),
            (b"web01-W-0000000007", Some("web01-W-0000000007")),
            (b"", None),
            (b"web01-R-0000000007", None),
            (b"0123456789abcdef0123456789abcdef__lock__0000000042", None),
            (b"web01", None),
            (b"\xff\xfe", None),
        ] {
            assert_eq!(
                released_node(record),
                want,
                "{:?}",
                String::from_utf8_lossy(record)
            );
        }
    }

    const TOKEN: &str = "7f3a0c1e9b2d4f60a1b2c3d4e5f60718";

    #[test]
    fn each_peer_recognises_only_its_own_layout() {
        use Layout::*;
        for (layout, recognised) in [
            (Native, &[Native, Curator, CuratorMutex, Kazoo][..]),
            (Curator, &[Curator][..]),
            (CuratorMutex, &[CuratorMutex][..]),
            (Kazoo, &[Kazoo][..]),
        ] {
            let got: Vec<Layout> = Layout::ALL
                .into_iter()
                .filter(|o| layout.recognises(*o))
                .collect();
            assert_eq!(got, recognised, "{layout}");
        }
    }

    #[test]
    fn only_kazoo_is_not_revocable() {
        let revocable: Vec<Layout> = Layout::ALL.into_iter().filter(|l| l.revocable()).collect();
        assert_eq!(revocable, [Layout::Native, Layout::Curator, Layout::CuratorMutex]);
    }

    #[test]
    fn revocation_targets() {
        use RevocationTarget::*;
        let native = "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042";
        let curator = "_c_0b7d6f5e-1c2a-4e3b-8f9a-0123456789ab-__WRIT__0000000003";
        let mutex = "_c_0b7d6f5e-1c2a-4e3b-8f9a-0123456789ab-lock-0000000004";
        let kazoo = "0123456789abcdef0123456789abcdef__rlock__0000000001";
        let kazoo_write = "0123456789abcdef0123456789abcdef__lock__0000000001";
        let not_revocable = |name| NotRevocable {
            name,
            layout: Layout::Kazoo,
        };
        for (node, want) in [
            // A child name, or the full path.
            (native.to_owned(), Ask(native)),
            (format!("/locks/x/{native}"), Ask(native)),
            (curator.to_owned(), Ask(curator)),
            (format!("/locks/x/{mutex}"), Ask(mutex)),
            // kazoo: never written to.
            (kazoo.to_owned(), not_revocable(kazoo)),
            (format!("/locks/x/{kazoo_write}"), not_revocable(kazoo_write)),
            // Another directory, one whose name starts with the same
            // characters, the directory itself.
            (format!("/locks/y/{native}"), NotAContender),
            (format!("/locks/xy/{native}"), NotAContender),
            ("/locks/x".to_owned(), NotAContender),
            ("/locks/x/".to_owned(), NotAContender),
            // A nested lock's node, by full path or relative name.
            (format!("/locks/x/sub/{native}"), NotAContender),
            (format!("sub/{native}"), NotAContender),
            // Not a contender name.
            ("web01".to_owned(), NotAContender),
            ("/locks/x/web01".to_owned(), NotAContender),
            (String::new(), NotAContender),
        ] {
            assert_eq!(revocation_target("/locks/x", &node), want, "{node:?}");
        }
    }

    fn parse(s: &str) -> Result<NodeName, ParseNameReason> {
        s.parse::<NodeName>().map_err(|e| e.reason())
    }

    #[test]
    fn table() {
        use ParseNameReason::*;
        // (name, Ok((identity, has token, mode, seq)) or Err(reason))
        #[allow(clippy::type_complexity)]
        let table: &[(&str, Result<(&str, bool, Mode, i32), ParseNameReason>)] = &[
            ("web01-W-0000000042", Ok(("web01", false, Mode::Write, 42))),
            ("web-01-R-0000000000", Ok(("web-01", false, Mode::Read, 0))),
            ("a-R-2147483647", Ok(("a", false, Mode::Read, i32::MAX))),
            ("a-W--2147483648", Ok(("a", false, Mode::Write, i32::MIN))),
            ("a-W--000000005", Ok(("a", false, Mode::Write, -5))),
            ("x-W-R-0000000001", Ok(("x-W", false, Mode::Read, 1))),
            ("-W-0000000001", Err(EmptyHost)),
            ("a-W-42", Err(BadSequence)),
            ("a-W-00000000042", Err(BadSequence)),
            ("a-W-9999999999", Err(BadSequence)),
            ("a-W--5", Err(BadSequence)),
            ("a-W--0000000005", Err(BadSequence)),
            ("a-W--000000000", Err(BadSequence)),
            ("a-X-0000000001", Err(MissingMode)),
            ("aW-0000000001", Err(MissingMode)),
            ("W-0000000001", Err(MissingMode)),
            ("0000000001", Err(MissingMode)),
            ("lock", Err(MissingSequence)),
            ("", Err(MissingSequence)),
            ("a-W-", Err(MissingSequence)),
        ];
        for (name, want) in table {
            let got = parse(name).map(|n| (n.identity().to_owned(), n.token().is_some(), n.mode(), n.seq()));
            let want = want.map(|(i, t, m, s)| (i.to_owned(), t, m, s));
            assert_eq!(got, want, "parsing {name:?}");
            if let Ok(n) = name.parse::<NodeName>() {
                assert_eq!(n.to_string(), *name, "round trip of {name:?}");
            }
        }
    }

    const UUID: &str = "7f3a0c1e-9b2d-4f60-a1b2-c3d4e5f60718";

    /// Peer layouts: (name, Ok((layout, host, has token, mode, seq)) or Err(reason)).
    #[test]
    fn peer_table() {
        use Layout::*;
        use ParseNameReason::*;
        let curator = format!("_c_{UUID}-");
        #[allow(clippy::type_complexity)]
        let table: Vec<(String, Result<(Layout, &str, bool, Mode, i32), ParseNameReason>)> = vec![
            (
                format!("{curator}__READ__0000000043"),
                Ok((Curator, &curator, true, Mode::Read, 43)),
            ),
            (
                format!("{curator}__WRIT__0000000001"),
                Ok((Curator, &curator, true, Mode::Write, 1)),
            ),
            (
                format!("{curator}lock-0000000002"),
                Ok((CuratorMutex, &curator, true, Mode::Write, 2)),
            ),
            (
                format!("{TOKEN}__rlock__0000000003"),
                Ok((Kazoo, TOKEN, true, Mode::Read, 3)),
            ),
            (
                format!("{TOKEN}__lock__0000000004"),
                Ok((Kazoo, TOKEN, true, Mode::Write, 4)),
            ),
            // The peers recognise their nodes by the marker alone.
            (
                "__lock__0000000005".into(),
                Ok((Kazoo, "", false, Mode::Write, 5)),
            ),
            (
                "__rlock__0000000005".into(),
                Ok((Kazoo, "", false, Mode::Read, 5)),
            ),
            (
                "__READ__0000000005".into(),
                Ok((Curator, "", false, Mode::Read, 5)),
            ),
            (
                "lock-0000000006".into(),
                Ok((CuratorMutex, "", false, Mode::Write, 6)),
            ),
            (
                "block-0000000001".into(),
                Ok((CuratorMutex, "b", false, Mode::Write, 1)),
            ),
            (
                "_c_-__WRIT__0000000007".into(),
                Ok((Curator, "_c_-", false, Mode::Write, 7)),
            ),
            (
                "_c_nouuid-__WRIT__0000000007".into(),
                Ok((Curator, "_c_nouuid-", false, Mode::Write, 7)),
            ),
            // Negative and limit sequences after a peer's marker.
            (
                "x__lock__-000000005".into(),
                Ok((Kazoo, "x", false, Mode::Write, -5)),
            ),
            (
                "x__rlock__-2147483648".into(),
                Ok((Kazoo, "x", false, Mode::Read, i32::MIN)),
            ),
            (
                "x__WRIT__2147483647".into(),
                Ok((Curator, "x", false, Mode::Write, i32::MAX)),
            ),
            (
                "lock--000000005".into(),
                Ok((CuratorMutex, "", false, Mode::Write, -5)),
            ),
            ("x__lock__-0000000005".into(), Err(BadSequence)),
            ("x__lock__-000000000".into(), Err(BadSequence)),
            ("x__lock__42".into(), Err(BadSequence)),
            // Names that look like two layouts have one reading: the marker
            // right before the sequence.
            (
                "web__lock__-W-0000000005".into(),
                Ok((Native, "web__lock__", false, Mode::Write, 5)),
            ),
            (
                "__READ__-R-0000000005".into(),
                Ok((Native, "__READ__", false, Mode::Read, 5)),
            ),
            (
                "lock-W-0000000001".into(),
                Ok((Native, "lock", false, Mode::Write, 1)),
            ),
            (
                "a-R-__lock__0000000001".into(),
                Ok((Kazoo, "a-R-", false, Mode::Write, 1)),
            ),
            (
                "a-W-__rlock__0000000001".into(),
                Ok((Kazoo, "a-W-", false, Mode::Read, 1)),
            ),
            (
                "a-W-__READ__0000000001".into(),
                Ok((Curator, "a-W-", false, Mode::Read, 1)),
            ),
            ("x_lock__0000000001".into(), Err(MissingMode)),
            ("x__lock_0000000001".into(), Err(MissingMode)),
            ("x__WRITE__0000000001".into(), Err(MissingMode)),
            ("x__read__0000000001".into(), Err(MissingMode)),
            ("xlock_0000000001".into(), Err(MissingMode)),
            ("x__lock__".into(), Err(MissingSequence)),
        ];
        for (name, want) in &table {
            let got = parse(name).map(|n| {
                (
                    n.layout(),
                    n.host().to_owned(),
                    n.token().is_some(),
                    n.mode(),
                    n.seq(),
                )
            });
            let want = want.map(|(l, h, t, m, s)| (l, h.to_owned(), t, m, s));
            assert_eq!(got, want, "parsing {name:?}");
            if let Ok(n) = name.parse::<NodeName>() {
                assert_eq!(n.to_string(), *name, "round trip of {name:?}");
                assert!(is_contender_name(name), "{name}");
            } else {
                assert!(!is_contender_name(name), "{name}");
            }
        }
    }

    /// A peer's token only in the exact form the peer writes it; the
    /// identity of a tokened peer name is empty, of any other the prefix.
    #[test]
    fn peer_tokens_only_in_their_exact_form() {
        let token = Uuid::parse_str(TOKEN).unwrap();
        let ok = [
            (format!("_c_{UUID}-__WRIT__0000000001"), ""),
            (format!("_c_{UUID}-lock-0000000001"), ""),
            (format!("{TOKEN}__lock__0000000001"), ""),
        ];
        for (name, identity) in &ok {
            let n: NodeName = name.parse().unwrap();
            assert_eq!(n.token(), Some(token), "{name}");
            assert_eq!(n.identity(), *identity, "{name}");
        }
        let upper = UUID.to_uppercase();
        let not = [
            format!("_c_{upper}-__WRIT__0000000001"),
            format!("_c_{UUID}__WRIT__0000000001"),
            format!("c_{UUID}-__WRIT__0000000001"),
            format!("_c_{TOKEN}-__WRIT__0000000001"),
            format!("_c_{}x-__WRIT__0000000001", &UUID[1..]),
            format!("x_c_{UUID}-__WRIT__0000000001"),
            format!("_c_{UUID}-x__WRIT__0000000001"),
            format!("_c_{}-__WRIT__0000000001", UUID.replace('-', "_")),
            format!("{}__lock__0000000001", TOKEN.to_uppercase()),
            format!("{}__lock__0000000001", &TOKEN[1..]),
            format!("{TOKEN}0__lock__0000000001"),
            format!("{UUID}__lock__0000000001"),
            format!("{}g__lock__0000000001", &TOKEN[1..]),
            format!("h@{TOKEN}__lock__0000000001"),
            format!("{TOKEN}-W-0000000001"),
            format!("_c_{UUID}--W-0000000001"),
        ];
        for name in &not {
            let n: NodeName = name.parse().unwrap();
            assert_eq!(n.token(), None, "{name}");
            assert_eq!(n.identity(), n.host(), "{name}");
        }
    }

    #[test]
    fn every_layout_writes_what_it_reads() {
        let token = Uuid::parse_str(TOKEN).unwrap();
        let want = [
            (Layout::Native, Mode::Read, format!("h-1@{TOKEN}-R-")),
            (Layout::Native, Mode::Write, format!("h-1@{TOKEN}-W-")),
            (Layout::Curator, Mode::Read, format!("_c_{UUID}-__READ__")),
            (Layout::Curator, Mode::Write, format!("_c_{UUID}-__WRIT__")),
            (Layout::CuratorMutex, Mode::Write, format!("_c_{UUID}-lock-")),
            (Layout::Kazoo, Mode::Read, format!("{TOKEN}__rlock__")),
            (Layout::Kazoo, Mode::Write, format!("{TOKEN}__lock__")),
        ];
        for (layout, mode, prefix) in want {
            assert_eq!(
                layout.prefix("h-1", token, mode).as_deref(),
                Some(&*prefix),
                "{layout} {mode}"
            );
            assert!(layout.supports(mode));
            for seq in [0, 7, -7, i32::MAX, i32::MIN] {
                let n = NodeName::new_in(layout, "h-1", token, mode, seq).unwrap();
                let name = n.to_string();
                assert_eq!(name, format!("{prefix}{seq:010}"));
                let parsed: NodeName = name.parse().unwrap();
                assert_eq!(parsed, n, "{name}");
                assert_eq!(parsed.layout(), layout);
                assert_eq!(parsed.mode(), mode);
                assert_eq!(parsed.seq(), seq);
                assert_eq!(parsed.token(), Some(token));
                let identity = if layout == Layout::Native { "h-1" } else { "" };
                assert_eq!(parsed.identity(), identity);
            }
        }
        assert_eq!(Layout::CuratorMutex.prefix("h", token, Mode::Read), None);
        assert_eq!(Layout::CuratorMutex.marker(Mode::Read), None);
        assert_eq!(
            NodeName::new_in(Layout::CuratorMutex, "h", token, Mode::Read, 1),
            None
        );
        assert!(!Layout::CuratorMutex.supports(Mode::Read));
        assert_eq!(
            NodeName::new_in(Layout::Native, "h-1", token, Mode::Write, 3),
            Some(NodeName::new("h-1", token, Mode::Write, 3))
        );
    }

    #[test]
    fn layouts_have_names_and_libraries() {
        let want = [
            (Layout::Native, "native", "zk-rwlock"),
            (Layout::Curator, "curator", "Curator InterProcessReadWriteLock"),
            (Layout::CuratorMutex, "curator-mutex", "Curator InterProcessMutex"),
            (Layout::Kazoo, "kazoo", "kazoo"),
        ];
        assert_eq!(Layout::ALL.to_vec(), want.iter().map(|w| w.0).collect::<Vec<_>>());
        assert_eq!(Layout::default(), Layout::Native);
        for (layout, name, library) in want {
            assert_eq!(layout.name(), name);
            assert_eq!(layout.to_string(), name);
            assert_eq!(layout.library(), library);
            assert_eq!(name.parse::<Layout>(), Ok(layout));
        }
        assert_eq!(format!("[{:>8}]", Layout::Kazoo), "[   kazoo]");
        let err = "Curator".parse::<Layout>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown layout `Curator`: expected native, curator, curator-mutex or kazoo"
        );
    }

    #[test]
    fn token_is_split_from_identity() {
        let name = format!("web-01@{TOKEN}-W-0000000042");
        let n: NodeName = name.parse().unwrap();
        assert_eq!(n.identity(), "web-01");
        assert_eq!(n.host(), format!("web-01@{TOKEN}"));
        assert_eq!(n.token().map(|t| t.simple().to_string()), Some(TOKEN.to_owned()));
        assert_eq!(n.to_string(), name);
    }

    #[test]
    fn not_a_token_stays_in_identity() {
        for host in [
            format!("a@{}", TOKEN.to_uppercase()),
            format!("a@{}", &TOKEN[1..]),
            format!("@{TOKEN}"),
            "user@host".to_owned(),
        ] {
            let n: NodeName = format!("{host}-R-0000000001").parse().unwrap();
            assert_eq!(n.identity(), host);
            assert_eq!(n.token(), None);
        }
    }

    #[test]
    fn new_and_prefix_agree() {
        let token = Uuid::parse_str(TOKEN).unwrap();
        let n = NodeName::new("h-1", token, Mode::Read, -7);
        assert_eq!(
            NodeName::prefix("h-1", token, Mode::Read),
            format!("h-1@{TOKEN}-R-")
        );
        assert_eq!(n.to_string(), format!("h-1@{TOKEN}-R--000000007"));
        assert_eq!(n.to_string().parse::<NodeName>().unwrap(), n);
    }

    #[test]
    fn contender_names_are_what_parses() {
        for name in [
            "web01-W-0000000001",
            "a-R--000000005",
            &format!("h@{TOKEN}-R-0000000007"),
        ] {
            assert!(is_contender_name(name), "{name}");
        }
        for name in ["orders", "web01-W-1", "web01-X-0000000001", "-W-0000000001", ""] {
            assert!(!is_contender_name(name), "{name}");
        }
    }

    #[test]
    fn error_message_names_the_input() {
        let err = "lock".parse::<NodeName>().unwrap_err();
        assert_eq!(err.name(), "lock");
        assert!(err.to_string().contains("`lock`"), "{err}");
    }

    #[test]
    fn error_message_says_what_is_wrong() {
        use ParseNameReason::*;
        let table = [
            ("lock", MissingSequence, "it does not end in a sequence number"),
            (
                "a-W-42",
                BadSequence,
                "not a signed 32-bit number written as %010d",
            ),
            ("a-X-0000000001", MissingMode, "not preceded by `-R-` or `-W-`"),
            (
                "-W-0000000001",
                EmptyHost,
                "the host part before `-R-`/`-W-` is empty",
            ),
        ];
        for (name, reason, words) in table {
            let err = name.parse::<NodeName>().unwrap_err();
            assert_eq!(err.reason(), reason, "{name:?}");
            assert!(reason.to_string().contains(words), "{reason:?}: {reason}");
            assert!(err.to_string().ends_with(&format!(": {reason}")), "{err}");
        }
    }

    #[test]
    fn mode_letters() {
        assert_eq!((Mode::Read.letter(), Mode::Write.letter()), ('R', 'W'));
        assert_eq!(Mode::from_letter('R'), Some(Mode::Read));
        assert_eq!(Mode::from_letter('W'), Some(Mode::Write));
        assert_eq!(Mode::from_letter('r'), None);
        assert_eq!(Mode::from_letter('X'), None);
    }

    #[test]
    fn modes_print_as_words_and_honour_padding() {
        assert_eq!(Mode::Read.to_string(), "read");
        assert_eq!(Mode::Write.to_string(), "write");
        assert_eq!(
            format!("[{:>6}|{:<6}]", Mode::Read, Mode::Write),
            "[  read|write ]"
        );
    }
}
