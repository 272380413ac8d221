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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_is_its_length_prefix_and_its_bytes() {
        assert_eq!(buffer(0), 4);
        assert_eq!(buffer(5), 9);
    }

    #[test]
    fn a_listing_counts_the_header_the_list_length_each_name_and_the_stat() {
        // (children, size): 16 (reply header) + 4 (list length) + each name
        // (4 + its bytes) + 68 (stat).
        let table: [(&[&str], usize); 3] = [
            (&[], 88),
            (&["ab"], 94),
            (&["ab", "read-0000000001"], 94 + 4 + 15),
        ];
        for (children, size) in table {
            assert_eq!(listing_size(children), size, "{children:?}");
        }
    }

    #[test]
    fn a_waiter_queues_behind_a_listing_up_to_the_limit_itself() {
        // (listing size, limit, admitted)
        let table = [
            (100, None, true),
            (99, Some(100), true),
            (100, Some(100), true),
            (101, Some(100), false),
        ];
        for (size, limit, admitted) in table {
            assert_eq!(queue_admits(size, limit), admitted, "{size} under {limit:?}");
        }
    }
}
