//! What ZooKeeper accepts in one request, and the limits a lock sets on its
//! identity, path and ACLs so that every request it sends is accepted.
//!
//! # The server's limit
//!
//! A ZooKeeper server reads each packet's length first and closes the
//! connection when it is larger than `jute.maxbuffer` (a Java system
//! property of the server, default `0xfffff`: 1 MiB less one byte; the check
//! is in `NIOServerCnxn.readLength` and `NettyServerCnxn`). The client sees
//! a lost connection, and every request in flight on the session fails
//! with `ConnectionLoss`, which asks to be retried: a client that sends the
//! same request again loses its connection again, and every guard on the
//! session flips between suspended and held. So the client refuses such a
//! request before sending it ([`zk::Error::RequestTooLarge`], limit
//! [`zk::Client::max_request_size`], set with
//! [`zk::Connector::with_max_request_size`] for servers with another
//! `jute.maxbuffer`), and [`LockBuilder::build`](crate::LockBuilder::build)
//! refuses a lock whose requests would not fit
//! ([`Error::RequestTooLarge`](crate::Error::RequestTooLarge)).
//!
//! # The requests of a lock
//!
//! Sizes are those of ZooKeeper's wire format (jute) after the length
//! prefix: 8 bytes of header, 4 bytes of length before each string, and for
//! each ACL entry its permissions, scheme and id. The largest requests a
//! lock sends are
//!
//! - the contender create: the directory's path (under the client's chroot),
//!   `/`, the node name's prefix (`<identity>@<token>-W-` natively, the
//!   peer's form in a peer layout; the server appends the sequence), the
//!   node's data (the identity in a peer layout) and the contender ACLs;
//! - the directory create: its path and the directory ACLs (its parents
//!   have shorter paths and the same ACLs);
//! - the release with the record: one `multi` that sets the directory's
//!   data to the node's name, creates the node's release marker (its path
//!   and the contender ACLs) and deletes it, and deletes the node (the path
//!   four times);
//! - the recycling of a directory at the sequence counter's limit: one
//!   `multi` that deletes it and creates it again with its ACL.
//!
//! # The limits on input
//!
//! - **Identity: at most [`MAX_IDENTITY_LEN`] (255) bytes.** Not for the
//!   requests (an identity of 1 MiB would not fit, but one of 100 KiB would)
//!   but for the listing: every contender's name carries its identity
//!   (natively `<identity>@<32 hex>-W-<10 digits>`, 46 bytes more), and
//!   every contender that lists the directory gets all the names in one
//!   reply. ZooKeeper's Java client (Curator, zkCli) refuses a reply larger
//!   than its own `jute.maxbuffer` (1 MiB by default) and reconnects, so
//!   the names must fit there: 4 bytes of length and the name per
//!   contender. At 255 bytes a 1 MiB listing carries 3,400 contenders; with
//!   a 20-byte host name, 15,000. A host name (Linux: at most 64 bytes) or
//!   a DNS name (at most 253) fits.
//! - **Lock path: at most [`MAX_PATH_LEN`] (4096) bytes**, Linux's
//!   `PATH_MAX`. ZooKeeper sets no limit of its own below the request limit,
//!   but every request and every watch the lock sets carries the path
//!   (twice in a release), and after a reconnection the client sends the
//!   session's watches again in batches of 128 KiB of paths plus the last
//!   one: a path of a few KiB keeps each of them far below 1 MiB, and any
//!   lock name, record keys included, fits.
//! - **ACLs:** what is left of the request limit: the largest request of
//!   the lock (of those above) must not exceed the client's
//!   [`max_request_size`](zk::Client::max_request_size). With the identity
//!   and path at their limits that leaves over 1,000,000 bytes for ACL
//!   entries: only a list of thousands of entries gets there.
//!
//! # The listing
//!
//! The lock directory's listing grows with its queue: a reply of
//! [`listing_size`] bytes, 16 of header, 4 of count, the stat's 68, and
//! per contender 4 bytes of length and its name. No server refuses to send
//! it (`jute.maxbuffer` bounds what a server reads, not what it writes),
//! and this crate's client reads a reply of any size; but ZooKeeper's Java
//! client refuses a reply larger than its own `jute.maxbuffer` (the check
//! is in `ClientCnxnSocket.readLength`) and reconnects, and lists again
//! after reconnecting: a Curator peer, or zkCli, on a lock with more
//! contenders than fit never lists it again (kazoo, in Python, reads a
//! reply of any length). So an acquire that finds
//! the lock taken and the listing larger than the lock's limit
//! ([`LockBuilder::max_listing_size`](crate::LockBuilder::max_listing_size),
//! by default the client's [`max_request_size`](zk::Client::max_request_size),
//! 1 MiB less one byte: the ensemble's `jute.maxbuffer`) does not queue
//! ([`queue_admits`](zk_rwlock_core::limits::queue_admits)): it withdraws
//! its node and fails with
//! [`Error::ListingTooLarge`](crate::Error::ListingTooLarge). The first
//! listing that makes an acquire wait is checked, not those after (a
//! waiter is never turned away), so concurrent arrivals may pass the limit
//! by the few that listed together. With 48-byte names (a 2-byte identity)
//! 20,163 contenders fit in 1 MiB; with a 20-byte host name, 14,978.
//!
//! Each contender lists the directory once as it queues (the hand-offs of
//! a chain of writers need no listing), so queuing `n` contenders sends
//! about `n * n / 2` names: 20,000 contenders with 48-byte names, about
//! 10 GB. That, not a limit, is what a large queue costs first: see the
//! figures in `docs/testing.md` (Scale).
//!
//! Pure arithmetic: no I/O.

use crate::node_name::{Layout, Mode, RELEASE_MARKER_SUFFIX};
use crate::zk;
pub use zk_rwlock_core::limits::listing_size;
use zk_rwlock_core::limits::{buffer, INT};

/// The longest identity, in bytes of UTF-8: 255 (see the [module](self)).
pub const MAX_IDENTITY_LEN: usize = 255;

/// The longest lock path, in bytes of UTF-8: 4096 (see the [module](self)).
pub const MAX_PATH_LEN: usize = 4096;

/// The longest sequence suffix ZooKeeper appends: `-2147483648`.
const MAX_SEQUENCE_LEN: usize = 11;

/// Request header: xid and operation code.
const REQUEST_HEADER: usize = 8;
/// A `multi`'s header before each operation and after the last: operation
/// code, done flag, error.
const MULTI_HEADER: usize = 9;

/// An ACL list: its length, then per entry the permissions, the scheme and
/// the id.
pub(crate) fn acls_len(acls: &[zk::Acl]) -> usize {
    4 + acls
        .iter()
        .map(|acl| INT + buffer(acl.scheme().len()) + buffer(acl.id().len()))
        .sum::<usize>()
}

/// Everything of a lock that its requests carry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LockShape<'a> {
    /// The lock directory's path on the server: the client's chroot (if
    /// any) followed by the lock path.
    pub server_path_len: usize,
    /// The contender identity.
    pub identity: &'a str,
    /// How contender nodes are named.
    pub layout: Layout,
    /// The contender nodes' ACLs, in bytes ([`acls_len`]).
    pub acls_len: usize,
    /// The directory's ACLs, in bytes ([`acls_len`]).
    pub directory_acls_len: usize,
}

/// The size of the largest request a lock of this shape sends, after the
/// length prefix: the largest of its contender create, its directory
/// create, its release with the record and the recycling of its directory
/// (see the [module](self)).
pub(crate) fn largest_request(shape: &LockShape<'_>) -> usize {
    let dir = shape.server_path_len;
    // Every mode's prefix: kazoo's read marker is longer than its write one.
    let prefix = [Mode::Read, Mode::Write]
        .into_iter()
        .filter_map(|mode| shape.layout.prefix(shape.identity, uuid::Uuid::nil(), mode))
        .map(|prefix| prefix.len())
        .max()
        .unwrap_or(0);
    let data = match shape.layout {
        Layout::Native => 0,
        _ => shape.identity.len(),
    };
    let node = dir + 1 + prefix + MAX_SEQUENCE_LEN;
    let name = prefix + MAX_SEQUENCE_LEN;
    let marker = node + RELEASE_MARKER_SUFFIX.len();
    let contender_create = REQUEST_HEADER + buffer(dir + 1 + prefix) + buffer(data) + shape.acls_len + INT;
    let directory_create = REQUEST_HEADER + buffer(dir) + buffer(0) + shape.directory_acls_len + INT;
    // Only a native writer releases with the record and the marker; a
    // peer layout's release is a plain delete, smaller than its create.
    let release = usize::from(shape.layout == Layout::Native)
        * (REQUEST_HEADER
            + MULTI_HEADER
            + buffer(dir)
            + buffer(name)
            + INT
            + MULTI_HEADER
            + buffer(marker)
            + buffer(0)
            + shape.acls_len
            + INT
            + MULTI_HEADER
            + buffer(marker)
            + INT
            + MULTI_HEADER
            + buffer(node)
            + INT
            + MULTI_HEADER);
    let recycle = REQUEST_HEADER
        + MULTI_HEADER
        + buffer(dir)
        + INT
        + MULTI_HEADER
        + (directory_create - REQUEST_HEADER)
        + MULTI_HEADER;
    contender_create.max(directory_create).max(release).max(recycle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zk_rwlock_core::limits::queue_admits;

    #[test]
    fn a_listing_counts_its_header_names_and_stat() {
        let names = ["vm@00000000000000000000000000000000-W-0000000001"; 3];
        // 16 header + 4 count + 3 x (4 + 48) + 68 stat.
        assert_eq!(listing_size(&names), 16 + 4 + 3 * 52 + 68);
        assert_eq!(listing_size::<&str>(&[]), 88);
        // The largest queue of 48-byte names a 1 MiB reader takes.
        let fits = (zk::DEFAULT_MAX_REQUEST_SIZE as usize - 88) / 52;
        assert_eq!(fits, 20_163);
        assert!(queue_admits(
            88 + fits * 52,
            Some(zk::DEFAULT_MAX_REQUEST_SIZE as usize)
        ));
        assert!(!queue_admits(
            88 + (fits + 1) * 52,
            Some(zk::DEFAULT_MAX_REQUEST_SIZE as usize)
        ));
        assert!(queue_admits(usize::MAX, None));
    }

    fn shape<'a>(identity: &'a str, layout: Layout, acls: &[zk::Acl]) -> LockShape<'a> {
        LockShape {
            server_path_len: "/locks/orders".len(),
            identity,
            layout,
            acls_len: acls_len(acls),
            directory_acls_len: acls_len(acls),
        }
    }

    #[test]
    fn acl_lists_count_permissions_scheme_and_id() {
        // world:anyone: 4 (perms) + 4 + 5 + 4 + 6, and the list's length.
        assert_eq!(acls_len(&zk::Acls::anyone_all()), 4 + 4 + 4 + 5 + 4 + 6);
        assert_eq!(acls_len(&[]), 4);
    }

    #[test]
    fn with_large_acls_the_release_or_a_create_is_the_largest_request() {
        let acls: Vec<zk::Acl> = (0..100)
            .map(|i| {
                zk::Acl::new(
                    zk::Permission::READ,
                    zk::AuthId::new("digest", &format!("user{i}:{}", "x".repeat(28))),
                )
            })
            .collect();
        let a = acls_len(&acls);
        // The contender create: 8 header, path "/locks/orders/<identity>@<32 hex>-W-",
        // empty data, ACLs, flags.
        let create = |identity: &str| 8 + 4 + 13 + 1 + identity.len() + 1 + 32 + 3 + 4 + a + 4;
        // The recycling: 8 header, then each operation after a 9-byte
        // header: delete (path, version) and create (path, no data, ACLs,
        // flags), and a last header.
        let recycle = 8 + 9 + 4 + 13 + 4 + 9 + 4 + 13 + 4 + a + 4 + 9;
        // The release: 8 header, then setData (path, the name, version),
        // the marker's create (path, no data, ACLs, flags) and delete (path,
        // version), the node's delete (path, version), and a last header.
        let release = |identity: &str| {
            let name = identity.len() + 1 + 32 + 3 + 11;
            let node = 13 + 1 + name;
            let marker = node + ".released".len();
            8 + 9
                + 4
                + 13
                + 4
                + name
                + 4
                + 9
                + 4
                + marker
                + 4
                + a
                + 4
                + 9
                + 4
                + marker
                + 4
                + 9
                + 4
                + node
                + 4
                + 9
        };
        for identity in ["i".repeat(40), "web01".to_owned()] {
            assert_eq!(
                largest_request(&shape(&identity, Layout::Native, &acls)),
                release(&identity)
            );
            assert!(release(&identity) > create(&identity).max(recycle));
        }
        // In a peer layout (a plain delete releases), the create or the
        // recycling.
        for identity in ["i".repeat(40), "web01".to_owned()] {
            let curator = largest_request(&shape(&identity, Layout::Curator, &acls));
            assert!(curator >= recycle && curator < release(&identity));
        }
    }

    #[test]
    fn peer_layouts_carry_the_identity_as_data_and_their_longest_marker() {
        let open: &[zk::Acl] = &zk::Acls::anyone_all();
        let identity = "i".repeat(MAX_IDENTITY_LEN);
        let native = largest_request(&shape(&identity, Layout::Native, open));
        let kazoo = largest_request(&shape(&identity, Layout::Kazoo, open));
        // kazoo: `<32 hex>__rlock__` and the identity as data; native:
        // `<identity>@<32 hex>-R-` and no data.
        let kazoo_create = 8 + 4 + 13 + 1 + 32 + 9 + 4 + identity.len() + acls_len(open) + 4;
        assert_eq!(kazoo, kazoo_create);
        assert!(native > 8 + 4 + 13 + 1 + identity.len());
    }

    #[test]
    fn a_long_path_makes_the_release_the_largest_request() {
        let open: &[zk::Acl] = &zk::Acls::anyone_all();
        let mut s = shape("web01", Layout::Native, open);
        s.server_path_len = MAX_PATH_LEN;
        let name = "web01@".len() + 32 + 3 + 11;
        let node = MAX_PATH_LEN + 1 + name;
        let marker = node + ".released".len();
        let release = 8
            + 9
            + (4 + MAX_PATH_LEN)
            + (4 + name)
            + 4
            + 9
            + (4 + marker)
            + 4
            + acls_len(open)
            + 4
            + 9
            + (4 + marker)
            + 4
            + 9
            + (4 + node)
            + 4
            + 9;
        assert_eq!(largest_request(&s), release);
        // Four paths of 4 KiB: far below the 1 MiB a server takes.
        assert!(release < 20_000);
    }
}
