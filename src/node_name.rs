//! Contender node names: `<host>-<R|W>-<seq>`.
//!
//! A contender for a lock creates one ephemeral sequential child of the lock
//! directory. ZooKeeper appends the sequence number, so the name the server
//! stores is `<host>-<R|W>-<seq>`:
//!
//! - `<host>` is `<identity>@<token>` when this library wrote it: the
//!   identity (by default the machine's host name) and a per-attempt UUID in
//!   32 lowercase hex digits. Any other non-empty string is accepted too, so
//!   that contenders written by other clients in the bare `<host>-<R|W>-<seq>`
//!   form take part in the same queue.
//! - `R` asks for a read (shared) lock, `W` for a write (exclusive) lock.
//! - `<seq>` is ZooKeeper's signed 32-bit sequence counter printed as `%010d`.
//!   It is negative after the counter wraps: `-2147483648`, `-000000005`.
//!
//! Names are parsed from the right, because host names may contain `-`.
//! This module is pure: no I/O, no clock, no logging.
//!
//! ```
//! use zk_rwlock::{Mode, NodeName};
//!
//! let name: NodeName = "web-01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042".parse()?;
//! assert_eq!(name.identity(), "web-01");
//! assert_eq!(name.mode(), Mode::Write);
//! assert_eq!(name.seq(), 42);
//! assert_eq!(name.to_string(), "web-01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042");
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

/// Why a child name is not a contender node name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseNameReason {
    /// The name does not end in a sequence number.
    MissingSequence,
    /// The sequence suffix is not a signed 32-bit number in ZooKeeper's `%010d` form.
    BadSequence,
    /// The sequence is not preceded by `-R-` or `-W-`.
    MissingMode,
    /// Nothing precedes the `-R-`/`-W-` part.
    EmptyHost,
}

impl fmt::Display for ParseNameReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParseNameReason::MissingSequence => "it does not end in a sequence number",
            ParseNameReason::BadSequence => {
                "its sequence suffix is not a signed 32-bit number written as %010d"
            }
            ParseNameReason::MissingMode => "the sequence number is not preceded by `-R-` or `-W-`",
            ParseNameReason::EmptyHost => "the host part before `-R-`/`-W-` is empty",
        })
    }
}

/// A child name that is not of the form `<host>-<R|W>-<seq>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{name}` is not a contender node name (`<host>-<R|W>-<seq>`): {reason}")]
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
    pub(crate) host: &'a str,
    pub(crate) mode: Mode,
    pub(crate) seq: i32,
}

/// Splits `name` into its parts, from the right.
pub(crate) fn parse_parts(name: &str) -> Result<Parts<'_>, ParseNameReason> {
    let bytes = name.as_bytes();
    let digits = bytes.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return Err(ParseNameReason::MissingSequence);
    }
    let mut seq_start = bytes.len() - digits;
    // `host-W--000000005`: a `-` right after the mode separator is the sign.
    if seq_start >= 2 && bytes[seq_start - 1] == b'-' && bytes[seq_start - 2] == b'-' {
        seq_start -= 1;
    }
    let seq_str = &name[seq_start..];
    let seq: i32 = seq_str.parse().map_err(|_| ParseNameReason::BadSequence)?;
    if !is_canonical_seq(seq, seq_str) {
        return Err(ParseNameReason::BadSequence);
    }
    let rest = &name[..seq_start];
    let rest_bytes = rest.as_bytes();
    let n = rest_bytes.len();
    if n < 3 || rest_bytes[n - 1] != b'-' || rest_bytes[n - 3] != b'-' {
        return Err(ParseNameReason::MissingMode);
    }
    let mode = Mode::from_letter(rest_bytes[n - 2] as char).ok_or(ParseNameReason::MissingMode)?;
    let host = &rest[..n - 3];
    if host.is_empty() {
        return Err(ParseNameReason::EmptyHost);
    }
    Ok(Parts { host, mode, seq })
}

/// True if `name` parses as a contender node name `<host>-<R|W>-<seq>`:
/// a lock counts a child with such a name as a contender, whatever the node
/// is. Does not allocate.
///
/// ```
/// assert!(zk_rwlock::node_name::is_contender_name("web01-W-0000000001"));
/// assert!(!zk_rwlock::node_name::is_contender_name("orders"));
/// ```
pub fn is_contender_name(name: &str) -> bool {
    parse_parts(name).is_ok()
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

/// Splits a host part into identity and per-attempt token, if it carries one.
fn split_token(host: &str) -> (usize, Option<Uuid>) {
    if let Some(at) = host.rfind('@') {
        let (identity, token) = (&host[..at], &host[at + 1..]);
        if !identity.is_empty()
            && token.len() == 32
            && token.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            if let Ok(uuid) = Uuid::try_parse(token) {
                return (at, Some(uuid));
            }
        }
    }
    (host.len(), None)
}

/// A parsed contender node name `<host>-<R|W>-<seq>`.
///
/// `FromStr` and `Display` round-trip exactly.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeName {
    host: String,
    identity_len: usize,
    token: Option<Uuid>,
    mode: Mode,
    seq: i32,
}

impl NodeName {
    /// A name as this library writes it: `<identity>@<token>-<R|W>-<seq>`.
    ///
    /// The identity is not checked here; the lock builder validates
    /// identities before any node is created.
    pub fn new(identity: &str, token: Uuid, mode: Mode, seq: i32) -> NodeName {
        let host = format!("{identity}@{}", token.simple());
        NodeName {
            identity_len: identity.len(),
            host,
            token: Some(token),
            mode,
            seq,
        }
    }

    /// The name without its sequence suffix, as passed to ZooKeeper's
    /// sequential `create`: `<identity>@<token>-<R|W>-`.
    pub fn prefix(identity: &str, token: Uuid, mode: Mode) -> String {
        format!("{identity}@{}-{}-", token.simple(), mode.letter())
    }

    /// The whole host part: `<identity>@<token>`, or a foreign client's bare host.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The contender's identity: the host part without its `@token`.
    pub fn identity(&self) -> &str {
        &self.host[..self.identity_len]
    }

    /// The per-attempt token, if the host part carries one.
    pub fn token(&self) -> Option<Uuid> {
        self.token
    }

    /// Read or write.
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
        let (identity_len, token) = split_token(parts.host);
        Ok(NodeName {
            host: parts.host.to_owned(),
            identity_len,
            token,
            mode: parts.mode,
            seq: parts.seq,
        })
    }
}

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{:010}", self.host, self.mode.letter(), self.seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "7f3a0c1e9b2d4f60a1b2c3d4e5f60718";

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
    fn modes_print_as_words_and_honour_padding() {
        assert_eq!(Mode::Read.to_string(), "read");
        assert_eq!(Mode::Write.to_string(), "write");
        assert_eq!(
            format!("[{:>6}|{:<6}]", Mode::Read, Mode::Write),
            "[  read|write ]"
        );
    }
}
