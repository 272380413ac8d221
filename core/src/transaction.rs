//! Writes that commit only while the lock is held: a holder's own
//! operations, sent in one ZooKeeper `multi` behind a check that each of
//! its contender nodes still exists, and what a failing index of that
//! `multi` means. The driver only translates each [`Op`] into its client's
//! call and each [`Failure`] into its error.
//!
//! # What the check proves
//!
//! ZooKeeper applies a `multi` as one transaction, all or nothing, at one
//! point of its total order of transactions. The checks come first: if
//! the transaction is applied, each holder node existed at that point, so
//! no contender could have been granted a conflicting lock before it (a
//! holder's node is deleted before anyone else is granted, and the
//! deletion is a transaction of the same order). The user's operations
//! are applied at that same point, or not at all.
//!
//! The checks carry no version ([`Op::Check`] with `None`): a node's
//! version says nothing of its identity (a node deleted and created again
//! under the same name has version 0, as every contender node has when it
//! is made), and legitimate writes move it on: a revocation request
//! (`__REVOKE__`) and an election's announcement are data writes on the
//! holder's node. A versioned check would refuse the last writes of a
//! holder asked to let go, and prove no more. So the check proves that a
//! node of that name exists; a stranger allowed to create children of the
//! lock directory (inside its ACL's trust boundary) who deletes a holder's
//! node and creates one under the same name would pass it. The lock's
//! guard learns of such a deletion by its kept watch, but after the fact.
//! (etcd's `txn.If(mutex.IsOwner())` compares the key's create revision,
//! unique to one creation, so a key created again fails it; ZooKeeper's
//! `check` can only compare a version.)

/// Who may use a node made by [`Op::Create`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateAcl {
    /// The ACL of the lock's contender nodes (the lock's `acls`; for
    /// several locks, the first's in path order).
    Lock,
    /// Anyone may do anything (`world:anyone`, all permissions).
    Open,
}

/// One operation of a holder's transaction: the checks of its nodes, and
/// the user's operations. A version of `None` is any version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Fail the transaction unless the node at `path` exists (at `version`).
    Check {
        /// The node's full path.
        path: String,
        /// The version it must have; `None` for any.
        version: Option<i32>,
    },
    /// Create a persistent node at `path` holding `data`, with the ACL
    /// `acl`. Fails if the node exists or its parent does not.
    Create {
        /// The node's full path.
        path: String,
        /// Its data.
        data: Vec<u8>,
        /// Who may use it.
        acl: CreateAcl,
    },
    /// Delete the node at `path` (at `version`); fails if it has children.
    Delete {
        /// The node's full path.
        path: String,
        /// The version it must have; `None` for any.
        version: Option<i32>,
    },
    /// Write `data` to the node at `path` (at `version`).
    SetData {
        /// The node's full path.
        path: String,
        /// The data written.
        data: Vec<u8>,
        /// The version it must have; `None` for any.
        version: Option<i32>,
    },
}

/// What the server said of the operation that failed a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its node does not exist (`NoNode`).
    NoNode,
    /// Anything else (`BadVersion`, `NodeExists`, `NoAuth`, ...).
    Other,
}

/// What the failure of a holder's transaction means (see
/// [`Guarded::failure`]). Nothing of it was applied, whichever it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure<'a> {
    /// The check of this holder node found it gone: the lock is lost.
    Lost {
        /// The node's full path.
        node: &'a str,
    },
    /// The check of this holder node was refused otherwise (the holder may
    /// not READ its own node, say): the lock may still be held.
    HolderRefused {
        /// The node's full path.
        node: &'a str,
    },
    /// The user's operation at `index` (counted among the user's
    /// operations, from 0) failed.
    Op {
        /// Its index among the user's operations.
        index: usize,
    },
    /// The failing index is past the operations sent: the answer does
    /// not match the request.
    Unknown,
}

/// A holder's transaction: its operations in send order, and what a
/// failing index means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guarded {
    ops: Vec<Op>,
    /// The number of holder checks, in front of the user's operations.
    holders: usize,
}

/// The transaction of a holder whose nodes are `holders` (full paths), and
/// of the user's operations `user`: a check of each holder node (any
/// version), in the order given, then the user's operations, in theirs.
pub fn guarded<S: AsRef<str>>(holders: &[S], user: Vec<Op>) -> Guarded {
    let mut ops = Vec::with_capacity(holders.len() + user.len());
    ops.extend(holders.iter().map(|node| Op::Check {
        path: node.as_ref().to_owned(),
        version: None,
    }));
    ops.extend(user);
    Guarded {
        ops,
        holders: holders.len(),
    }
}

/// The kind of one result of a successful transaction, as the server
/// answered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// A check's.
    Check,
    /// A create's.
    Create,
    /// A deletion's.
    Delete,
    /// A write's.
    SetData,
    /// Of a kind no operation asks for.
    Other,
}

impl Guarded {
    /// The operations, in the order they are sent.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// Whether a successful answer whose results are of these kinds answers
    /// this transaction: one result per operation sent, each of its
    /// operation's kind. Any other answer does not match the request (a
    /// reply garbled on the way, say): whether it was applied is unknown,
    /// and it is never taken for a commit.
    pub fn answered_by(&self, results: &[Answered]) -> bool {
        results.len() == self.ops.len()
            && self.ops.iter().zip(results).all(|(op, result)| {
                matches!(
                    (op, result),
                    (Op::Check { .. }, Answered::Check)
                        | (Op::Create { .. }, Answered::Create)
                        | (Op::Delete { .. }, Answered::Delete)
                        | (Op::SetData { .. }, Answered::SetData)
                )
            })
    }

    /// What it means that the operation at `index` of [`Guarded::ops`]
    /// failed the transaction with `refusal`.
    pub fn failure(&self, index: usize, refusal: Refusal) -> Failure<'_> {
        match self.ops.get(index) {
            None => Failure::Unknown,
            Some(Op::Check { path, .. }) if index < self.holders => match refusal {
                Refusal::NoNode => Failure::Lost { node: path },
                Refusal::Other => Failure::HolderRefused { node: path },
            },
            Some(_) => Failure::Op {
                index: index - self.holders,
            },
        }
    }
}

impl Op {
    /// The operation's path.
    pub fn path(&self) -> &str {
        match self {
            Op::Check { path, .. }
            | Op::Create { path, .. }
            | Op::Delete { path, .. }
            | Op::SetData { path, .. } => path,
        }
    }
}

/// The first of the user's operations `user` that would write to the lock
/// directory of one of the holder nodes `holders` (full paths), or below
/// it: its index among the user's operations. A transaction is refused
/// before it is sent if one does: a node made there would join the queue
/// (a contender's name) or stand in its way, a deletion there would
/// release or withdraw a contender behind its machine's back, and data
/// written there is read as release records and revocation requests. A
/// `check` writes nothing and may look anywhere.
pub fn writes_in_lock_directory<S: AsRef<str>>(holders: &[S], user: &[Op]) -> Option<usize> {
    let directories: Vec<&str> = holders
        .iter()
        .filter_map(|node| node.as_ref().rsplit_once('/').map(|(dir, _)| dir))
        .collect();
    user.iter().position(|op| {
        !matches!(op, Op::Check { .. })
            && directories.iter().any(|dir| {
                let path = op.path();
                path == *dir || path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/'))
            })
    })
}

/// One holder node of a transaction, as far as whether to send it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder<'a> {
    /// The node's full path.
    pub node: &'a str,
    /// The session that holds it.
    pub session: i64,
    /// The chroot of its client.
    pub chroot: &'a str,
    /// Its guard knows it lost the lock.
    pub lost: bool,
}

/// Why a holder's transaction is not sent at all ([`refused_before_sending`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsent {
    /// There is no holder node to check.
    NoHolder,
    /// The holder at this index (of those given) has another session or
    /// chroot than the first: a transaction is one request on one session.
    AcrossSessions {
        /// The holder's index.
        holder: usize,
    },
    /// The holder at this index is known lost.
    Lost {
        /// The holder's index.
        holder: usize,
    },
    /// The user's operation at this index writes into a holder's lock
    /// directory ([`writes_in_lock_directory`]).
    InLockDirectory {
        /// The operation's index among the user's operations.
        index: usize,
    },
}

/// Whether a holder's transaction is refused before it is sent, and why,
/// checked in this order: no holder, holders on several sessions or
/// chroots, a holder known lost, a write into a lock directory. `None`:
/// send it.
pub fn refused_before_sending(holders: &[Holder<'_>], user: &[Op]) -> Option<Unsent> {
    let Some(first) = holders.first() else {
        return Some(Unsent::NoHolder);
    };
    if let Some(holder) = holders
        .iter()
        .position(|h| h.session != first.session || h.chroot != first.chroot)
    {
        return Some(Unsent::AcrossSessions { holder });
    }
    if let Some(holder) = holders.iter().position(|h| h.lost) {
        return Some(Unsent::Lost { holder });
    }
    let nodes: Vec<&str> = holders.iter().map(|h| h.node).collect();
    writes_in_lock_directory(&nodes, user).map(|index| Unsent::InLockDirectory { index })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(path: &str) -> Op {
        Op::Check {
            path: path.to_owned(),
            version: None,
        }
    }

    fn user_ops() -> Vec<Op> {
        vec![
            Op::Create {
                path: "/app/a".to_owned(),
                data: b"1".to_vec(),
                acl: CreateAcl::Open,
            },
            Op::SetData {
                path: "/app/b".to_owned(),
                data: b"2".to_vec(),
                version: Some(3),
            },
            Op::Delete {
                path: "/app/c".to_owned(),
                version: None,
            },
            Op::Check {
                path: "/app/d".to_owned(),
                version: Some(0),
            },
        ]
    }

    #[test]
    fn holder_checks_come_first_unversioned_then_user_ops_in_order() {
        let cases: Vec<(&[&str], Vec<Op>, Vec<Op>)> = vec![
            (&["/l/n-W-1"], vec![], vec![check("/l/n-W-1")]),
            (
                &["/l/n-W-1"],
                user_ops(),
                [vec![check("/l/n-W-1")], user_ops()].concat(),
            ),
            (
                &["/a/n-R-1", "/b/n-W-2"],
                user_ops(),
                [vec![check("/a/n-R-1"), check("/b/n-W-2")], user_ops()].concat(),
            ),
            (&[], user_ops(), user_ops()),
        ];
        for (holders, user, expected) in cases {
            assert_eq!(guarded(holders, user).ops(), expected, "holders {holders:?}");
        }
    }

    #[test]
    fn a_failing_index_names_the_lost_holder_or_the_user_op() {
        let tx = guarded(&["/a/n-R-1", "/b/n-W-2"], user_ops());
        let cases = [
            (0, Refusal::NoNode, Failure::Lost { node: "/a/n-R-1" }),
            (1, Refusal::NoNode, Failure::Lost { node: "/b/n-W-2" }),
            (0, Refusal::Other, Failure::HolderRefused { node: "/a/n-R-1" }),
            (1, Refusal::Other, Failure::HolderRefused { node: "/b/n-W-2" }),
            (2, Refusal::NoNode, Failure::Op { index: 0 }),
            (2, Refusal::Other, Failure::Op { index: 0 }),
            (3, Refusal::Other, Failure::Op { index: 1 }),
            (4, Refusal::NoNode, Failure::Op { index: 2 }),
            // The user's own check, found missing, is the user's op, not a loss.
            (5, Refusal::NoNode, Failure::Op { index: 3 }),
            (6, Refusal::Other, Failure::Unknown),
            (usize::MAX, Refusal::NoNode, Failure::Unknown),
        ];
        for (index, refusal, expected) in cases {
            assert_eq!(tx.failure(index, refusal), expected, "index {index}, {refusal:?}");
        }
    }

    #[test]
    fn a_user_check_right_after_the_holder_checks_is_the_users() {
        let tx = guarded(&["/l/n-W-1"], vec![check("/app/x")]);
        assert_eq!(tx.failure(1, Refusal::NoNode), Failure::Op { index: 0 });
        assert_eq!(tx.failure(0, Refusal::NoNode), Failure::Lost { node: "/l/n-W-1" });
    }

    #[test]
    fn without_holders_every_failure_is_a_user_op() {
        let tx = guarded::<&str>(&[], user_ops());
        assert_eq!(tx.failure(0, Refusal::NoNode), Failure::Op { index: 0 });
        assert_eq!(tx.failure(3, Refusal::NoNode), Failure::Op { index: 3 });
        assert_eq!(tx.failure(4, Refusal::NoNode), Failure::Unknown);
    }

    #[test]
    fn a_write_in_a_holders_lock_directory_is_refused_and_a_check_is_not() {
        let holders = ["/locks/a/me@t-W-0000000001", "/locks/b/me@t-W-0000000002"];
        let set = |path: &str| Op::SetData {
            path: path.to_owned(),
            data: Vec::new(),
            version: None,
        };
        let create = |path: &str| Op::Create {
            path: path.to_owned(),
            data: Vec::new(),
            acl: CreateAcl::Open,
        };
        let delete = |path: &str| Op::Delete {
            path: path.to_owned(),
            version: None,
        };
        let check = |path: &str| Op::Check {
            path: path.to_owned(),
            version: None,
        };
        // (the user's operations, the index refused)
        let table: Vec<(Vec<Op>, Option<usize>)> = vec![
            (vec![set("/config"), create("/config/x")], None),
            (vec![set("/locks/a")], Some(0)),
            (vec![set("/config"), create("/locks/a/x-W-0000000007")], Some(1)),
            (vec![delete("/locks/b/me@t-W-0000000002")], Some(0)),
            (vec![set("/locks/ab"), set("/locks"), set("/locks/a2/x")], None),
            (vec![check("/locks/a/me@t-W-0000000001"), check("/locks/b")], None),
            (vec![check("/locks/a"), delete("/locks/a/x/y")], Some(1)),
        ];
        for (user, refused) in table {
            assert_eq!(writes_in_lock_directory(&holders, &user), refused, "{user:?}");
        }
        assert_eq!(writes_in_lock_directory::<&str>(&[], &[set("/locks/a")]), None);
    }

    #[test]
    fn only_one_result_per_operation_of_its_kind_answers_a_transaction() {
        let tx = guarded(&["/l/me-W-0000000001"], user_ops());
        let kinds: Vec<Answered> = tx
            .ops()
            .iter()
            .map(|op| match op {
                Op::Check { .. } => Answered::Check,
                Op::Create { .. } => Answered::Create,
                Op::Delete { .. } => Answered::Delete,
                Op::SetData { .. } => Answered::SetData,
            })
            .collect();
        assert!(tx.answered_by(&kinds));
        // Too few (a reply cut short), too many, none, or one of another kind.
        assert!(!tx.answered_by(&kinds[..kinds.len() - 1]));
        assert!(!tx.answered_by(&[kinds.clone(), vec![Answered::Check]].concat()));
        assert!(!tx.answered_by(&[]));
        let mut other = kinds.clone();
        other[0] = Answered::Other;
        assert!(!tx.answered_by(&other));
        for i in 0..kinds.len() {
            for other in [
                Answered::Check,
                Answered::Create,
                Answered::Delete,
                Answered::SetData,
            ] {
                if other != kinds[i] {
                    let mut wrong = kinds.clone();
                    wrong[i] = other;
                    assert!(!tx.answered_by(&wrong), "{wrong:?}");
                }
            }
        }
    }

    #[test]
    fn a_transaction_is_refused_before_sending_across_sessions_when_lost_or_into_a_lock_directory() {
        let holder = |node, session, chroot, lost| Holder {
            node,
            session,
            chroot,
            lost,
        };
        let a = holder("/locks/a/me-W-0000000001", 7, "/", false);
        let b = holder("/locks/b/me-W-0000000002", 7, "/", false);
        let into_a = vec![Op::SetData {
            path: "/locks/a".to_owned(),
            data: Vec::new(),
            version: None,
        }];
        let elsewhere = vec![Op::SetData {
            path: "/config".to_owned(),
            data: Vec::new(),
            version: None,
        }];
        // (holders, the user's operations, the refusal)
        let table: Vec<(Vec<Holder<'_>>, &Vec<Op>, Option<Unsent>)> = vec![
            (vec![a, b], &elsewhere, None),
            (vec![a], &into_a, Some(Unsent::InLockDirectory { index: 0 })),
            (vec![b], &into_a, None),
            (
                vec![a, holder(b.node, 8, "/", false)],
                &elsewhere,
                Some(Unsent::AcrossSessions { holder: 1 }),
            ),
            (
                vec![a, holder(b.node, 7, "/app", false)],
                &elsewhere,
                Some(Unsent::AcrossSessions { holder: 1 }),
            ),
            (
                vec![a, holder(b.node, 7, "/", true)],
                &elsewhere,
                Some(Unsent::Lost { holder: 1 }),
            ),
            // Across sessions before lost, lost before a write into a lock directory.
            (
                vec![holder(a.node, 7, "/", true), holder(b.node, 8, "/", false)],
                &elsewhere,
                Some(Unsent::AcrossSessions { holder: 1 }),
            ),
            (
                vec![holder(a.node, 7, "/", true)],
                &into_a,
                Some(Unsent::Lost { holder: 0 }),
            ),
        ];
        for (holders, user, refused) in table {
            assert_eq!(
                refused_before_sending(&holders, user),
                refused,
                "{holders:?} {user:?}"
            );
        }
        assert_eq!(refused_before_sending(&[], &elsewhere), Some(Unsent::NoHolder));
    }
}
