//! The bytes of the contender's transactions: each operation, in send
//! order, and what a failing index means. The driver only translates each
//! [`Op`] into its client's call.

use super::{Action, ReplaceStep};
use crate::node_name::{self, Layout};

/// The full path of the child `name` of the directory `dir`.
pub fn child_path(dir: &str, name: &str) -> String {
    let mut path = String::with_capacity(dir.len() + 1 + name.len());
    path.push_str(dir);
    path.push('/');
    path.push_str(name);
    path
}

/// The data of a contender node of mine in `layout`, for `identity`:
/// nothing in the native layout (the identity is in the name); the
/// identity in a peer's, where kazoo keeps its identifier as the node's
/// data and Curator the client's address.
pub fn node_data(layout: Layout, identity: &str) -> Vec<u8> {
    match layout {
        Layout::Native => Vec::new(),
        Layout::Curator | Layout::CuratorMutex | Layout::Kazoo => identity.as_bytes().to_vec(),
    }
}

/// One operation of a transaction (a ZooKeeper `multi`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Fail the transaction unless the node at `path` exists (at `version`;
    /// `None`: any).
    Check {
        /// The node's full path.
        path: String,
        /// The version it must have; `None` for any.
        version: Option<i32>,
    },
    /// Create an ephemeral node at `path` holding `data`, with the ACL of
    /// my contender nodes (the server delivers a node's events only to
    /// those who may read it).
    Create {
        /// The node's full path.
        path: String,
        /// Its data.
        data: Vec<u8>,
    },
    /// Delete the node at `path` (at `version`; `None`: any).
    Delete {
        /// The node's full path.
        path: String,
        /// The version it must have; `None` for any.
        version: Option<i32>,
    },
    /// Write `data` to the node at `path` (at `version`; `None`: any).
    SetData {
        /// The node's full path.
        path: String,
        /// The data written.
        data: Vec<u8>,
        /// The version it must have; `None` for any.
        version: Option<i32>,
    },
}

/// A transaction's operations in send order, and what each index means
/// ([`Transaction::failed_step`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    ops: Vec<Op>,
    /// What each operation is, for a downgrade's; empty for a release's.
    steps: Vec<ReplaceStep>,
    /// The index of the create whose czxid the answer carries.
    created: Option<usize>,
}

impl Transaction {
    /// The operations, in the order they are sent.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// What the operation at `index` (a failed transaction's failing
    /// index) is; `None` for a release's transaction (any refusal means
    /// the same there) or an index out of range.
    pub fn failed_step(&self, index: usize) -> Option<ReplaceStep> {
        self.steps.get(index).copied()
    }

    /// The create whose node's czxid the answer carries (a downgrade's
    /// reader): its index, and the node's path. Where the server leaves
    /// the stat out of the create's result (ZOOKEEPER-4026), the driver
    /// asks the node's stat with an `exists` after the transaction.
    pub fn created(&self) -> Option<(usize, &str)> {
        let index = self.created?;
        match self.ops.get(index)? {
            Op::Create { path, .. } => Some((index, path)),
            _ => None,
        }
    }

    fn push(&mut self, op: Op, step: ReplaceStep) {
        self.ops.push(op);
        self.steps.push(step);
    }
}

/// The release record naming `name`, written to `dir`, and the create and
/// delete of `name`'s release marker: a contender watching `name` learns of
/// its release from the marker's `NodeCreated`, or reads the record after
/// the deletion (see [`crate::ordering`]).
fn record_ops(dir: &str, name: &str) -> [Op; 3] {
    let marker = child_path(dir, &node_name::release_marker(name));
    [
        Op::SetData {
            path: dir.to_owned(),
            data: node_name::release_record(name).to_vec(),
            version: None,
        },
        Op::Create {
            path: marker.clone(),
            data: Vec::new(),
        },
        Op::Delete {
            path: marker,
            version: None,
        },
    ]
}

impl Action {
    /// The transaction this action sends in the lock directory `dir`: a
    /// release with the record ([`Action::Delete`] with `record`), or a
    /// downgrade's ([`Action::Replace`]). `None` for any other action (a
    /// plain deletion is a single `delete`, no transaction).
    pub fn transaction(&self, dir: &str) -> Option<Transaction> {
        let mut tx = Transaction {
            ops: Vec::new(),
            steps: Vec::new(),
            created: None,
        };
        match self {
            Action::Delete { name, record: true } => {
                tx.ops.extend(record_ops(dir, name));
                tx.ops.push(Op::Delete {
                    path: child_path(dir, name),
                    version: None,
                });
            }
            Action::Replace {
                writer,
                reader,
                successor,
                mine,
                record,
                writer_version,
            } => {
                if let Some(successor) = successor {
                    let path = child_path(dir, successor);
                    tx.push(Op::Check { path, version: None }, ReplaceStep::Successor);
                }
                if *record {
                    let [set, create, delete] = record_ops(dir, writer);
                    tx.push(set, ReplaceStep::Record);
                    tx.push(create, ReplaceStep::Marker);
                    tx.push(delete, ReplaceStep::Marker);
                }
                tx.created = Some(tx.ops.len());
                let path = child_path(dir, reader);
                tx.push(
                    Op::Create {
                        path,
                        data: Vec::new(),
                    },
                    ReplaceStep::Reader,
                );
                let path = child_path(dir, writer);
                let version = *writer_version;
                tx.push(Op::Delete { path, version }, ReplaceStep::Writer);
                let path = child_path(dir, mine);
                tx.push(Op::Delete { path, version: None }, ReplaceStep::Mine);
            }
            _ => return None,
        }
        Some(tx)
    }
}
