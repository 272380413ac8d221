//! Writes that commit only while the lock is held: [`Transaction`], from
//! `transaction()` on every guard, a multi-guard and a leadership. The
//! operations and what a failing index means are the core's
//! ([`zk_rwlock_core::transaction`]); this builds them, sends them in one
//! `multi` and maps its answer to the library's errors.

use tracing::debug;
use zk_rwlock_core::transaction::{self as rules, Answered, Failure, Op, Refusal, Unsent};

pub use zk_rwlock_core::transaction::CreateAcl;

use super::Guard;
use crate::error::{is_retryable, Error};
use crate::lease::HoldState;
use crate::zk;

/// ZooKeeper operations that commit only while the lock is held: all of
/// them, in one ZooKeeper `multi`, behind a check that each holder node
/// (the guard's contender node; every part's, for a
/// [`MultiGuard`](crate::MultiGuard)) still exists, or none.
///
/// Made by `transaction()` on [`ReadGuard`](crate::ReadGuard),
/// [`WriteGuard`](crate::WriteGuard), [`Guard`],
/// [`MultiGuard`](crate::MultiGuard) and [`Leadership`](crate::Leadership);
/// it borrows the guard, so it cannot outlive it: a released guard has no
/// transaction. Add operations with [`create`](Transaction::create),
/// [`set_data`](Transaction::set_data), [`delete`](Transaction::delete) and
/// [`check`](Transaction::check), then [`commit`](Transaction::commit).
///
/// # What a commit proves
///
/// ZooKeeper applies a `multi` at one point of its total order of
/// transactions. A committed transaction was applied while each holder
/// node existed, so before anyone else could be granted a conflicting
/// lock: in ZooKeeper's order, the writes happened under the lock, however
/// late the client was (a paused process, a slow network), with no fencing
/// token needed for the nodes it writes, as long as every writer of those
/// nodes writes them through a holder's transaction. A read guard's
/// transaction excludes writers only: other readers' commit beside it.
/// The check carries no version: a
/// version does not tell a node from one created again under its name
/// (both start at 0), and a revocation request or an election's
/// announcement writes the holder's node, which a versioned check would
/// then refuse. So it proves that a node of that name exists: someone
/// allowed to create children in the lock directory who deletes a holder's
/// node and creates one under its name would pass it (a guard that has
/// already seen its node's deletion commits nothing). etcd's
/// `txn.If(mutex.IsOwner())` compares the key's create revision, unique to
/// one creation; ZooKeeper's `check` can only compare a version.
///
/// Only ZooKeeper nodes are covered: writes elsewhere (a database) still
/// need the [fencing token](crate::WriteGuard::fencing_token).
#[must_use = "a transaction does nothing until it is committed"]
#[derive(Debug)]
pub struct Transaction<'g> {
    /// The holders, in path order for a multi-guard; never empty.
    holders: Vec<&'g Guard>,
    ops: Vec<Op>,
}

impl<'g> Transaction<'g> {
    /// A transaction of the holders `holders` (never empty), with no
    /// operation of the user's yet.
    pub(crate) fn new(holders: Vec<&'g Guard>) -> Transaction<'g> {
        Transaction {
            holders,
            ops: Vec::new(),
        }
    }

    /// Adds the create of a persistent node at `path` holding `data`, with
    /// the ACL `acl`: [`CreateAcl::Lock`] gives it the ACL of the lock's
    /// contender nodes ([`LockBuilder::acls`](crate::LockBuilder::acls);
    /// for a multi-guard, its first part's in path order),
    /// [`CreateAcl::Open`] lets anyone do anything. Only persistent nodes:
    /// no ephemeral, sequential, container or TTL node. It fails the
    /// transaction if the node exists or its parent does not.
    pub fn create(mut self, path: &str, data: &[u8], acl: CreateAcl) -> Transaction<'g> {
        self.ops.push(Op::Create {
            path: path.to_owned(),
            data: data.to_vec(),
            acl,
        });
        self
    }

    /// Adds a write of `data` to the node at `path`; with
    /// `expected_version`, it fails the transaction unless the node has
    /// that version (compare-and-set), otherwise any version.
    pub fn set_data(mut self, path: &str, data: &[u8], expected_version: Option<i32>) -> Transaction<'g> {
        self.ops.push(Op::SetData {
            path: path.to_owned(),
            data: data.to_vec(),
            version: expected_version,
        });
        self
    }

    /// Adds the deletion of the node at `path` (at `expected_version`, or
    /// any); it fails the transaction if the node has children.
    pub fn delete(mut self, path: &str, expected_version: Option<i32>) -> Transaction<'g> {
        self.ops.push(Op::Delete {
            path: path.to_owned(),
            version: expected_version,
        });
        self
    }

    /// Adds a check that the node at `path` exists (at `expected_version`,
    /// or any), writing nothing.
    pub fn check(mut self, path: &str, expected_version: Option<i32>) -> Transaction<'g> {
        self.ops.push(Op::Check {
            path: path.to_owned(),
            version: expected_version,
        });
        self
    }

    /// The number of the user's operations added so far.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True before any operation of the user's was added (a commit then
    /// only checks the holder nodes).
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Sends the checks of the holder nodes, then the operations in the
    /// order they were added, in one ZooKeeper `multi`, on the holder's
    /// session, and returns the results of the user's operations, in
    /// their order (a create's path and stat, a write's new stat). Sent
    /// once: never retried.
    ///
    /// # Errors
    ///
    /// Nothing was written unless it says otherwise:
    ///
    /// - [`Error::Lost`] naming the holder node that is gone (for a
    ///   multi-guard, the first lost part's), found by the check, or known
    ///   before sending (the guard's state is
    ///   [`HoldState::Lost`]: nothing is sent then);
    /// - [`Error::TransactionFailed`] naming the user's operation that
    ///   failed (its index among the user's operations) and why;
    /// - [`Error::TransactionOutcomeUnknown`]: the connection broke while
    ///   the transaction was in flight: it may or may not have been applied
    ///   (all of it or nothing). It is not sent again;
    /// - [`Error::TransactionAcrossSessions`]: a multi-guard whose parts use
    ///   different sessions or chroots; nothing sent;
    /// - [`Error::TransactionInLockDirectory`]: an operation that would
    ///   write to a holder's lock directory or below it (only `check` may
    ///   look there); nothing sent;
    /// - [`Error::NoAuth`] naming a holder node the client may not check
    ///   (READ), [`Error::SessionExpired`], [`Error::SessionClosed`], or
    ///   [`Error::ZooKeeper`] for any other refusal of the request.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future once the request is sent leaves its outcome
    /// unknown, as a lost answer does.
    pub async fn commit(self) -> Result<Vec<zk::MultiWriteResult>, Error> {
        let chroots: Vec<String> = self
            .holders
            .iter()
            .map(|g| g.client().path().to_owned())
            .collect();
        let holders: Vec<rules::Holder<'_>> = self
            .holders
            .iter()
            .zip(&chroots)
            .map(|(g, chroot)| rules::Holder {
                node: g.node(),
                session: g.client().session_id().0,
                chroot,
                lost: g.state() == HoldState::Lost,
            })
            .collect();
        let refused = rules::refused_before_sending(&holders, &self.ops);
        let (Some(first), None) = (self.holders.first(), refused) else {
            return Err(match refused {
                Some(Unsent::AcrossSessions { holder }) => Error::TransactionAcrossSessions {
                    path: self.holders[holder].lock_path().to_owned(),
                },
                Some(Unsent::Lost { holder }) => {
                    debug!(node = %holders[holder].node, "the transaction is not sent: the lock is known lost");
                    Error::Lost {
                        node: holders[holder].node.to_owned(),
                    }
                }
                Some(Unsent::InLockDirectory { index }) => Error::TransactionInLockDirectory {
                    index,
                    path: self.ops[index].path().to_owned(),
                },
                Some(Unsent::NoHolder) | None => Error::Lost { node: String::new() },
            });
        };
        let client = first.client();
        let nodes: Vec<&str> = holders.iter().map(|h| h.node).collect();
        let tx = rules::guarded(&nodes, self.ops);
        let lock_acl = zk::CreateMode::Persistent.with_acls(zk::Acls::new(first.acls()));
        let open_acl = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        let mut multi = client.new_multi_writer();
        for (index, op) in tx.ops().iter().enumerate() {
            let added = match op {
                // The client's "any version" is -1.
                Op::Check { path, version } => multi.add_check_version(path, version.unwrap_or(-1)),
                Op::Create { path, data, acl } => {
                    let options = match acl {
                        CreateAcl::Lock => &lock_acl,
                        CreateAcl::Open => &open_acl,
                    };
                    multi.add_create(path, data, options)
                }
                Op::Delete { path, version } => multi.add_delete(path, *version),
                Op::SetData { path, data, version } => multi.add_set_data(path, data, *version),
            };
            if let Err(e) = added {
                return Err(failed(&tx, index, e));
            }
        }
        match multi.commit().await {
            Ok(mut results) => {
                let kinds: Vec<Answered> = results
                    .iter()
                    .map(|result| match result {
                        zk::MultiWriteResult::Check => Answered::Check,
                        zk::MultiWriteResult::Create { .. } => Answered::Create,
                        zk::MultiWriteResult::Delete => Answered::Delete,
                        zk::MultiWriteResult::SetData { .. } => Answered::SetData,
                        _ => Answered::Other,
                    })
                    .collect();
                if !tx.answered_by(&kinds) {
                    debug!(
                        results = results.len(),
                        sent = tx.ops().len(),
                        "the transaction's answer does not match it: its outcome is unknown"
                    );
                    return Err(Error::TransactionOutcomeUnknown {
                        source: zk::Error::UnexpectedError(format!(
                            "{} results to a transaction of {} operations",
                            results.len(),
                            tx.ops().len()
                        )),
                    });
                }
                Ok(results.split_off(nodes.len()))
            }
            Err(zk::MultiWriteError::OperationFailed { index, source }) => {
                let error = failed(&tx, index, source);
                if let Error::Lost { node } = &error {
                    // The server's word is final: the guard says Lost now,
                    // not only once its kept watch hears of it.
                    for holder in self.holders.iter().filter(|h| h.node() == node) {
                        holder.node_gone();
                    }
                }
                Err(error)
            }
            Err(zk::MultiWriteError::RequestFailed { source }) => Err(request_failed(source, nodes[0])),
        }
    }
}

/// The error of a transaction whose operation `index` (in send order)
/// failed with `e`.
fn failed(tx: &rules::Guarded, index: usize, e: zk::Error) -> Error {
    let refusal = match e {
        zk::Error::NoNode => Refusal::NoNode,
        _ => Refusal::Other,
    };
    let error = match tx.failure(index, refusal) {
        Failure::Lost { node } => Error::Lost {
            node: node.to_owned(),
        },
        Failure::HolderRefused { node } => Error::from_zk(e, node),
        Failure::Op { index } => Error::TransactionFailed { index, source: e },
        // A failing index past what was sent: the answer does not match
        // the request.
        Failure::Unknown => Error::TransactionOutcomeUnknown { source: e },
    };
    debug!(error = %error, "the transaction was refused: nothing written");
    error
}

/// The error of a transaction whose request failed as a whole with `e`;
/// `node`, the first holder node, is named by a refusal of access.
fn request_failed(e: zk::Error, node: &str) -> Error {
    // A throttled request was shed by the server before it was applied. A
    // failed authentication answered ahead of it ends the session with the
    // transaction possibly applied.
    if (is_retryable(&e) && e != zk::Error::Throttled) || e == zk::Error::AuthFailed {
        debug!(error = %e, "the transaction's answer was lost: its outcome is unknown");
        return Error::TransactionOutcomeUnknown { source: e };
    }
    Error::from_zk(e, node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_answer_is_an_unknown_outcome_and_a_verdict_is_not() {
        let unknown = [
            zk::Error::ConnectionLoss,
            zk::Error::Timeout,
            zk::Error::UnexpectedError("garbled".into()),
            // Answered ahead of the transaction, which may be applied.
            zk::Error::AuthFailed,
        ];
        for e in unknown {
            let error = request_failed(e.clone(), "/l/n-W-1");
            assert!(
                matches!(&error, Error::TransactionOutcomeUnknown { source } if *source == e),
                "{e}: {error:?}"
            );
        }
        let known = [
            (zk::Error::Throttled, "ZooKeeper"),
            (zk::Error::SessionExpired, "SessionExpired"),
            (zk::Error::ClientClosed, "SessionClosed"),
            (zk::Error::NoAuth, "NoAuth"),
        ];
        for (e, variant) in known {
            let error = request_failed(e.clone(), "/l/n-W-1");
            assert!(format!("{error:?}").starts_with(variant), "{e}: {error:?}");
        }
    }

    #[test]
    fn a_failing_index_is_mapped_to_the_lost_node_or_the_users_op() {
        let tx = rules::guarded(
            &["/l/n-W-1"],
            vec![Op::Check {
                path: "/app/x".to_owned(),
                version: None,
            }],
        );
        let lost = failed(&tx, 0, zk::Error::NoNode);
        assert!(
            matches!(&lost, Error::Lost { node } if node == "/l/n-W-1"),
            "{lost:?}"
        );
        let refused = failed(&tx, 0, zk::Error::NoAuth);
        assert!(
            matches!(&refused, Error::NoAuth { path } if path == "/l/n-W-1"),
            "{refused:?}"
        );
        let op = failed(&tx, 1, zk::Error::NoNode);
        assert!(
            matches!(
                &op,
                Error::TransactionFailed {
                    index: 0,
                    source: zk::Error::NoNode
                }
            ),
            "{op:?}"
        );
        // An index past what was sent: the answer does not match the request.
        let beyond = failed(&tx, 2, zk::Error::BadVersion);
        assert!(
            matches!(
                &beyond,
                Error::TransactionOutcomeUnknown {
                    source: zk::Error::BadVersion
                }
            ),
            "{beyond:?}"
        );
    }
}
