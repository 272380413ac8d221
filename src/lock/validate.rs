//! Checks of lock paths and identities, and the lock's defaults: the
//! identity (the host name), the ACLs, the directory's create mode.

use std::sync::{Arc, OnceLock};

use super::REVOKE_PAYLOAD;
use crate::error::{refused_in_path, Error, REFUSED_IN_IDENTITY, REFUSED_IN_PATH};
use crate::limits;
use crate::node_name::Layout;
use crate::zk;

/// Checks that `path` can name a lock directory: absolute, not the root,
/// no empty, `.` or `..` segments, no trailing `/`, no character ZooKeeper
/// refuses in paths (below), at most
/// [`MAX_PATH_LEN`](crate::limits::MAX_PATH_LEN) (4096) bytes, not
/// ZooKeeper's own tree `/zookeeper` or under it, and no segment that
/// parses as a contender node name in any layout (natively
/// `<identity>@<token>-<R|W>-<seq>`, and any `<name>-<R|W>-<seq>`; see
/// [`node_name::is_contender_name`](crate::node_name::is_contender_name)).
/// Does no I/O.
///
/// The characters are those ZooKeeper's `PathUtils.validatePath` refuses:
/// NUL, the control characters U+0001-U+001F and U+007F-U+009F,
/// U+D800-U+F8FF (private use), U+FFF0-U+FFFF, and every character beyond
/// U+FFFF (the server reads paths as UTF-16, where those are surrogates).
/// Otherwise the client or the server would refuse the lock's first
/// request, with a generic error.
///
/// `/zookeeper` holds the server's quotas and configuration: a lock there
/// would leave persistent nodes (its directory) in the server's own tree.
/// The check knows no chroot: `/zookeeper` is refused under one too.
///
/// The last rule protects the lock one level up: the lock directory and
/// its parents are created as persistent nodes, and a persistent child
/// named like a contender would count there as a contender that never
/// leaves, blocking that lock until someone deletes it.
///
/// # Errors
///
/// [`Error::InvalidPath`], whose message quotes the path (its control
/// characters escaped), says what is wrong, naming a refused character
/// (`` `\n` (U+000A) ``, `U+0085`), and what is allowed.
pub fn validate_path(path: &str) -> Result<(), Error> {
    let bad = |reason| {
        Err(Error::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if path.is_empty() {
        return bad("it is empty");
    }
    if !path.starts_with('/') {
        return bad("it does not start with '/'");
    }
    if path == "/" {
        return bad("it is the root node itself");
    }
    if path.chars().any(refused_in_path) {
        return bad(REFUSED_IN_PATH);
    }
    if path.ends_with('/') {
        return bad("it ends with '/'");
    }
    if path.len() > limits::MAX_PATH_LEN {
        return bad("it is longer than 4096 bytes: every request and watch of the lock carries it");
    }
    if path == ZOOKEEPER_TREE
        || path
            .strip_prefix(ZOOKEEPER_TREE)
            .is_some_and(|rest| rest.starts_with('/'))
    {
        return bad(
            "it is in ZooKeeper's own tree `/zookeeper` (its quotas and configuration), where a lock \
             would leave persistent nodes",
        );
    }
    for segment in path[1..].split('/') {
        match segment {
            "" => return bad("it has an empty segment ('//')"),
            "." | ".." => return bad("it has a '.' or '..' segment"),
            _ => {}
        }
    }
    let mut segments = path[1..].split('/').rev();
    if segments.next().is_some_and(crate::node_name::is_contender_name) {
        return bad(
            "its last segment looks like a contender node name (`<name>-<R|W>-<seq>`): \
             the lock one level up would count this lock's persistent directory as a contender \
             that holds it forever",
        );
    }
    if segments.any(crate::node_name::is_contender_name) {
        return bad(
            "one of its segments looks like a contender node name (`<name>-<R|W>-<seq>`): \
             the lock one level above that segment would count its persistent node as a contender \
             that holds it forever",
        );
    }
    Ok(())
}

/// Checks that `identity` can be written into contender node names:
/// non-empty, at most [`MAX_IDENTITY_LEN`](crate::limits::MAX_IDENTITY_LEN)
/// (255) bytes (every listing of the directory carries every contender's
/// name, see [`crate::limits`]), without `/`, `@` or a character ZooKeeper
/// refuses in paths (NUL, the control characters, and the others
/// [`validate_path`] names), and not [`REVOKE_PAYLOAD`] (the Curator and
/// kazoo layouts write the identity as the node's data, where that value
/// would read as a revocation request). Does no I/O.
///
/// # Errors
///
/// [`Error::InvalidIdentity`], whose message quotes the identity (its
/// control characters escaped), says what is wrong, naming a refused
/// character, and what is allowed.
pub fn validate_identity(identity: &str) -> Result<(), Error> {
    let bad = |reason| {
        Err(Error::InvalidIdentity {
            identity: identity.to_owned(),
            reason,
        })
    };
    if identity.is_empty() {
        return bad("it is empty");
    }
    if identity.len() > limits::MAX_IDENTITY_LEN {
        return bad(
            "it is longer than 255 bytes: every contender's node name carries it, and a listing of \
             the lock's contenders must fit in one reply",
        );
    }
    if identity.contains('/') {
        return bad("it contains '/'");
    }
    if identity.contains('@') {
        return bad("it contains '@'");
    }
    if identity.chars().any(refused_in_path) {
        return bad(REFUSED_IN_IDENTITY);
    }
    if identity.as_bytes() == REVOKE_PAYLOAD {
        return bad("it is the revocation request `__REVOKE__`, which would ask the holder to let go");
    }
    Ok(())
}

/// ZooKeeper's own tree: its quotas (`/zookeeper/quota`) and configuration
/// (`/zookeeper/config`).
const ZOOKEEPER_TREE: &str = "/zookeeper";

/// Whether contender nodes made with `acls` in `layout` would be
/// unreadable to a peer library's contenders: a peer layout, and no ACL
/// entry giving READ to anyone but the creator (scheme `auth`). Curator and
/// kazoo watch their predecessor by reading it (getData / get).
pub(super) fn peers_cannot_read(layout: Layout, acls: &[zk::Acl]) -> bool {
    layout != Layout::Native
        && !acls
            .iter()
            .any(|acl| acl.scheme() != "auth" && acl.permission().has(zk::Permission::READ))
}

/// [`default_identity`], read once per process.
pub(super) fn shared_default_identity() -> Arc<str> {
    static IDENTITY: OnceLock<Arc<str>> = OnceLock::new();
    IDENTITY.get_or_init(|| Arc::from(default_identity())).clone()
}

/// The default ACLs (open to anyone), one copy per process.
pub(super) fn default_acls() -> Arc<[zk::Acl]> {
    static ACLS: OnceLock<Arc<[zk::Acl]>> = OnceLock::new();
    ACLS.get_or_init(|| Arc::from(zk::Acls::anyone_all().to_vec()))
        .clone()
}

/// This machine's host name, made safe for node names (and cut to
/// [`MAX_IDENTITY_LEN`](limits::MAX_IDENTITY_LEN) bytes, which a host name
/// read from the environment may exceed).
pub(crate) fn default_identity() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let mut cleaned = String::new();
    for c in raw.trim().chars() {
        let c = if matches!(c, '/' | '@') || refused_in_path(c) {
            '_'
        } else {
            c
        };
        if cleaned.len() + c.len_utf8() > limits::MAX_IDENTITY_LEN {
            break;
        }
        cleaned.push(c);
    }
    if cleaned.is_empty() {
        "localhost".to_owned()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        for ok in [
            "/a",
            "/shared_lock",
            "/a/b-c/d.e",
            "/..a",
            "/a./b",
            // Near misses of contender names.
            "/locks/web01-W-1",
            "/locks/web01-X-0000000001",
            "/locks/-W-0000000001",
            "/locks/web01-W-0000000001x",
            // Near misses of ZooKeeper's own tree.
            "/zookeeperx",
            "/zookeeper-locks/a",
            "/Zookeeper/x",
            "/locks/zookeeper",
            "/locks/zookeeper/quota",
        ] {
            assert!(validate_path(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("", "empty"),
            ("a", "does not start"),
            ("locks/a", "does not start"),
            ("/", "root"),
            ("/a/", "ends with"),
            ("//a", "empty segment"),
            ("/a//b", "empty segment"),
            ("/a/./b", "'.'"),
            ("/a/..", "'.'"),
            ("/zookeeper", "ZooKeeper's own tree `/zookeeper`"),
            ("/zookeeper/x", "ZooKeeper's own tree"),
            ("/zookeeper/quota", "ZooKeeper's own tree"),
            ("/zookeeper/config/locks/a", "ZooKeeper's own tree"),
            (
                "/locks/web01-W-0000000001",
                "its last segment looks like a contender node name",
            ),
            (
                "/web01-R--000000005",
                "its last segment looks like a contender node name",
            ),
            (
                "/locks/a-W-0000000001/b",
                "one of its segments looks like a contender node name",
            ),
            // Peers' contender names too: a persistent node so named would
            // block their locks and ours one level up.
            (
                "/locks/lock-0000000001",
                "its last segment looks like a contender node name",
            ),
            (
                "/locks/0123456789abcdef0123456789abcdef__rlock__0000000001/b",
                "one of its segments looks like a contender node name",
            ),
        ] {
            let err = validate_path(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad:?}: {err}");
            assert!(err.contains(&format!("`{bad}`")), "{bad:?}: {err}");
        }
    }

    /// The characters ZooKeeper refuses in paths, at the edges of its
    /// ranges, and how a message names each: (character, name).
    const REFUSED: [(char, &str); 18] = [
        ('\0', "`\\0` (U+0000)"),
        ('\u{1}', "U+0001"),
        ('\t', "`\\t` (U+0009)"),
        ('\n', "`\\n` (U+000A)"),
        ('\r', "`\\r` (U+000D)"),
        ('\u{1f}', "U+001F"),
        ('\u{7f}', "U+007F"),
        ('\u{85}', "U+0085"),
        ('\u{9f}', "U+009F"),
        ('\u{e000}', "U+E000"),
        ('\u{f8ff}', "U+F8FF"),
        ('\u{fff0}', "U+FFF0"),
        ('\u{fffd}', "U+FFFD"),
        ('\u{ffff}', "U+FFFF"),
        // Beyond U+FFFF: surrogates to the server, which reads UTF-16.
        ('\u{10000}', "U+10000"),
        ('\u{1f512}', "U+1F512"),
        ('\u{e0001}', "U+E0001"),
        ('\u{10ffff}', "U+10FFFF"),
    ];

    /// The characters just outside ZooKeeper's ranges, which it takes.
    const TAKEN: [char; 9] = [
        ' ', '~', '\u{a0}', 'é', '\u{2028}', '\u{d7ff}', '\u{f900}', '\u{ffef}', '\\',
    ];

    /// Asserts that `message` is one line that names `name` at byte `at`
    /// and shows no raw control character.
    fn names_the_character(message: &str, name: &str, at: usize) {
        assert!(
            message.contains(&format!(
                "it contains {name} at byte {at}, a character ZooKeeper refuses"
            )),
            "{message:?}"
        );
        assert!(
            !message.chars().any(|c| c.is_control() || refused_in_path(c)),
            "a raw character in {message:?}"
        );
    }

    #[test]
    fn paths_with_characters_zookeeper_refuses() {
        for (c, name) in REFUSED {
            for (path, at) in [
                (format!("/a{c}b"), 2),
                (format!("/locks/a{c}"), 8),
                (format!("/{c}/b"), 1),
            ] {
                let err = validate_path(&path).unwrap_err();
                assert!(
                    matches!(&err, Error::InvalidPath { path: p, reason } if *p == path && *reason == REFUSED_IN_PATH),
                    "{path:?}: {err:?}"
                );
                let message = err.to_string();
                names_the_character(&message, name, at);
                assert!(message.contains("in paths (NUL, U+0001-U+001F"), "{message}");
            }
        }
        for c in TAKEN {
            let path = format!("/locks/a{c}b");
            assert!(validate_path(&path).is_ok(), "{path:?}");
        }
        // The path is quoted with the character escaped.
        let message = validate_path("/a\nb\u{85}").unwrap_err().to_string();
        assert!(
            message.starts_with("invalid lock path `/a\\nb\\u{85}`: it contains `\\n` (U+000A) at byte 2"),
            "{message}"
        );
    }

    #[test]
    fn identities_with_characters_zookeeper_refuses() {
        for (c, name) in REFUSED {
            for (identity, at) in [
                (format!("a{c}b"), 1),
                (format!("{c}"), 0),
                (format!("web01{c}"), 5),
            ] {
                let err = validate_identity(&identity).unwrap_err();
                assert!(
                    matches!(&err, Error::InvalidIdentity { identity: i, reason } if *i == identity && *reason == REFUSED_IN_IDENTITY),
                    "{identity:?}: {err:?}"
                );
                let message = err.to_string();
                names_the_character(&message, name, at);
                assert!(message.contains("in node names (NUL, U+0001-U+001F"), "{message}");
            }
        }
        for c in TAKEN {
            let identity = format!("a{c}b");
            assert!(validate_identity(&identity).is_ok(), "{identity:?}");
        }
        let message = validate_identity("a\nb").unwrap_err().to_string();
        assert!(
            message.starts_with("invalid identity `a\\nb`: it contains `\\n` (U+000A) at byte 1"),
            "{message}"
        );
    }

    #[test]
    fn peer_layouts_need_read_for_others() {
        let creator = zk::Acls::creator_all().to_vec();
        assert!(peers_cannot_read(Layout::Kazoo, &creator));
        assert!(peers_cannot_read(Layout::Curator, &creator));
        assert!(!peers_cannot_read(Layout::Native, &creator));
        let mut readable = creator.clone();
        readable.extend(zk::Acls::anyone_read().iter().cloned());
        assert!(!peers_cannot_read(Layout::Kazoo, &readable));
        assert!(!peers_cannot_read(Layout::CuratorMutex, &default_acls()));
    }

    #[test]
    fn identities() {
        assert!(validate_identity("web-01.example").is_ok());
        for bad in ["", "a/b", "a@b", "a\0", "__REVOKE__"] {
            let err = validate_identity(bad).unwrap_err().to_string();
            assert!(err.contains("invalid identity"), "{err}");
        }
        let err = validate_identity("__REVOKE__").unwrap_err().to_string();
        assert!(err.contains("revocation request"), "{err}");
        assert!(validate_identity("__REVOKE__x").is_ok());
        assert!(validate_identity(&default_identity()).is_ok());
        assert!(validate_identity("web 01\u{2028}é").is_ok());
        // Bytes count, not characters: 127 two-byte characters and one more byte.
        let longest = format!("{}x", "é".repeat(127));
        assert!(validate_identity(&longest).is_ok());
        let err = validate_identity(&format!("{longest}x")).unwrap_err().to_string();
        assert!(err.contains("longer than 255 bytes"), "{err}");
    }

    #[test]
    fn path_length() {
        let longest = format!("/{}", "p".repeat(limits::MAX_PATH_LEN - 1));
        assert!(validate_path(&longest).is_ok());
        let err = validate_path(&format!("{longest}p")).unwrap_err().to_string();
        assert!(err.contains("longer than 4096 bytes"), "{err}");
    }
}
