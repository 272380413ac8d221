//! The sizes on the wire that the pure rules need: how large a listing is,
//! and whether a waiter may queue behind it. The limits a lock sets on its
//! requests, and why, are the library's (`zk_rwlock_core::limits`).

/// Reply header: xid, zxid and error.
pub const REPLY_HEADER: usize = 16;
/// A node's `Stat`.
pub const STAT: usize = 68;
/// An `int` field (flags, version).
pub const INT: usize = 4;

/// A string or byte buffer: its length, then its bytes.
pub const fn buffer(len: usize) -> usize {
    4 + len
}

/// The size of a listing of a lock directory with these children, as
/// ZooKeeper sends it (after the length prefix): the reply header, the
/// list's length, each name (its length and bytes) and the directory's
/// stat. A reader whose limit is below it cannot take the reply (see `zk_rwlock_core::limits`).
pub fn listing_size<S: AsRef<str>>(children: &[S]) -> usize {
    REPLY_HEADER + INT + children.iter().map(|c| buffer(c.as_ref().len())).sum::<usize>() + STAT
}

/// Whether a contender that found the lock taken may queue behind a
/// listing of `listing_size` bytes: not when it is larger than `limit`
/// (`None`: no limit). See `zk_rwlock::LockBuilder::max_listing_size`.
pub fn queue_admits(listing_size: usize, limit: Option<usize>) -> bool {
    limit.is_none_or(|limit| listing_size <= limit)
}
