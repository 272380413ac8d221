//! Checks of lock paths and identities, and the lock's defaults: the
//! identity (the host name), the ACLs, the directory's create mode.

use std::sync::{Arc, OnceLock};

use super::REVOKE_PAYLOAD;
use crate::error::Error;
use crate::limits;
use crate::node_name::Layout;
use crate::zk;

/// Checks that `path` can name a lock directory: absolute, not the root,
/// no empty, `.` or `..` segments, no trailing `/`, no NUL, at most
/// [`MAX_PATH_LEN`](crate::limits::MAX_PATH_LEN) (4096) bytes, and no segment
/// that parses as a contender node name (`<host>-<R|W>-<seq>`, see
/// [`node_name::is_contender_name`](crate::node_name::is_contender_name)).
/// Does no I/O.
///
/// The last rule protects the lock one level up: the lock directory and
/// its parents are created as persistent nodes, and a persistent child
/// named like a contender would count there as a contender that never
/// leaves, blocking that lock until someone deletes it.
///
/// # Errors
///
/// [`Error::InvalidPath`], whose message quotes the path and says what is allowed.
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
    if path.contains('\0') {
        return bad("it contains NUL");
    }
    if path.ends_with('/') {
        return bad("it ends with '/'");
    }
    if path.len() > limits::MAX_PATH_LEN {
        return bad("it is longer than 4096 bytes: every request and watch of the lock carries it");
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
            "its last segment looks like a contender node name (`<host>-<R|W>-<seq>`): \
             the lock one level up would count this lock's persistent directory as a contender \
             that holds it forever",
        );
    }
    if segments.any(crate::node_name::is_contender_name) {
        return bad(
            "one of its segments looks like a contender node name (`<host>-<R|W>-<seq>`): \
             the lock one level above that segment would count its persistent node as a contender \
             that holds it forever",
        );
    }
    Ok(())
}

/// Checks that `identity` can be written into contender node names:
/// non-empty, at most [`MAX_IDENTITY_LEN`](crate::limits::MAX_IDENTITY_LEN)
/// (255) bytes (every listing of the directory carries every contender's
/// name, see [`crate::limits`]), without `/`, `@` or NUL, and not
/// [`REVOKE_PAYLOAD`] (the Curator and kazoo layouts write the identity as
/// the node's data, where that value would read as a revocation request).
/// Does no I/O.
///
/// # Errors
///
/// [`Error::InvalidIdentity`], whose message quotes the identity and says what is allowed.
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
    if identity.contains('\0') {
        return bad("it contains NUL");
    }
    if identity.as_bytes() == REVOKE_PAYLOAD {
        return bad("it is the revocation request `__REVOKE__`, which would ask the holder to let go");
    }
    Ok(())
}

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
        let c = if matches!(c, '/' | '@' | '\0') || c.is_control() {
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
            ("/a\0b", "NUL"),
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
