//! The requests of a contender's life: one small function per request
//! action of [`crate::contender`]'s machine, each returning the answer the
//! machine is fed. Nothing here decides what to do next.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tracing::{debug, warn};

use super::Inner;
use crate::contender::{self, Action, Answer, Created, Input, Op, Outcome, Owner, ReplaceStep};
use crate::error::{is_retryable, with_retry, Error};
use crate::node_name;
use crate::ordering;
use crate::zk;

/// What a contender's requests need of its lock: owned, so that work left
/// running in the background holds the client, not the lock (the lock's
/// last handle must not go with a task of the background runtime, where
/// its drop would wait for that runtime's own work).
pub(super) struct Requests {
    client: zk::Client,
    dir: String,
    /// My node's name before its sequence.
    prefix: String,
    /// My node's data (a peer layout's identity).
    data: Box<[u8]>,
    acls: Arc<[zk::Acl]>,
    directory_acls: Arc<[zk::Acl]>,
    /// The directory's ACL and data version, as [`Action::ReadDirAcl`]
    /// read them.
    acl: Option<(Vec<zk::Acl>, i32)>,
    /// The error behind the last failed request.
    pub(super) last_error: Option<Error>,
}

/// An answer, owned; lent to the machine as an [`Input`].
pub(super) enum Answered {
    Created {
        node: Answer<Created>,
        listing: Option<Answer<(Vec<String>, i32)>>,
    },
    DirCreated(Answer<()>),
    ParentsCreated(Answer<()>),
    Found(Answer<Vec<String>>),
    Stat(Answer<Option<Owner>>),
    DirData(Answer<Vec<u8>>),
    Deleted {
        answer: Answer<()>,
        answer_lost: bool,
    },
    DirAcl(Answer<i32>),
    Recycled(Answer<()>),
    Replaced {
        answer: Answer<i64>,
        failed: Option<ReplaceStep>,
        answer_lost: bool,
    },
}

impl Answered {
    /// The children of a listing this answer carries, if any.
    pub(super) fn listing(&self) -> Option<&[String]> {
        match self {
            Answered::Created {
                listing: Some(Answer::Ok((children, _))),
                ..
            } => Some(children),
            Answered::Found(Answer::Ok(children)) => Some(children),
            _ => None,
        }
    }

    /// The answer as the machine's input.
    pub(super) fn input(&self) -> Input<'_> {
        match self {
            Answered::Created { node, listing } => Input::Created {
                node: node.clone(),
                listing: listing
                    .as_ref()
                    .map(|l| map(l, |(children, len)| (children.as_slice(), *len))),
            },
            Answered::DirCreated(a) => Input::DirCreated(a.clone()),
            Answered::ParentsCreated(a) => Input::ParentsCreated(a.clone()),
            Answered::Found(a) => Input::Found(map(a, Vec::as_slice)),
            Answered::Stat(a) => Input::Stat(a.clone()),
            Answered::DirData(a) => Input::DirData(map(a, Vec::as_slice)),
            Answered::Deleted { answer, answer_lost } => Input::Deleted {
                answer: answer.clone(),
                answer_lost: *answer_lost,
            },
            Answered::DirAcl(a) => Input::DirAcl(a.clone()),
            Answered::Recycled(a) => Input::Recycled(a.clone()),
            Answered::Replaced {
                answer,
                failed,
                answer_lost,
            } => Input::Replaced {
                answer: answer.clone(),
                failed: *failed,
                answer_lost: *answer_lost,
            },
        }
    }
}

/// `answer`'s value lent through `f`; errors as they are.
fn map<'a, T, U>(answer: &'a Answer<T>, f: impl FnOnce(&'a T) -> U) -> Answer<U> {
    match answer {
        Answer::Ok(value) => Answer::Ok(f(value)),
        Answer::NoNode => Answer::NoNode,
        Answer::Exists => Answer::Exists,
        Answer::NoAuth => Answer::NoAuth,
        Answer::Unimplemented => Answer::Unimplemented,
        Answer::Retry => Answer::Retry,
        Answer::SessionEnded => Answer::SessionEnded,
        Answer::Failed => Answer::Failed,
    }
}

impl Clone for Requests {
    /// The same requests, with no error seen yet.
    fn clone(&self) -> Requests {
        Requests {
            client: self.client.clone(),
            dir: self.dir.clone(),
            prefix: self.prefix.clone(),
            data: self.data.clone(),
            acls: self.acls.clone(),
            directory_acls: self.directory_acls.clone(),
            acl: self.acl.clone(),
            last_error: None,
        }
    }
}

impl Requests {
    /// The requests of a contender of `inner`'s lock whose node's name
    /// starts with `prefix`.
    pub(super) fn new(inner: &Inner, prefix: String) -> Requests {
        let data = contender::node_data(inner.layout, &inner.identity).into_boxed_slice();
        Requests {
            client: inner.client.clone(),
            dir: inner.path.clone(),
            prefix,
            data,
            acls: inner.acls.clone(),
            directory_acls: inner.directory_acls.clone(),
            acl: None,
            last_error: None,
        }
    }

    pub(super) fn client(&self) -> &zk::Client {
        &self.client
    }

    pub(super) fn dir(&self) -> &str {
        &self.dir
    }

    /// Performs a request action of the machine; `None` for the others
    /// (the wait's, and the ends).
    pub(super) async fn perform(&mut self, action: &Action) -> Option<Answered> {
        Some(match action {
            Action::Create => self.create().await,
            Action::CreateDir { container } => Answered::DirCreated(self.create_dir(*container).await),
            Action::CreateParents => Answered::ParentsCreated(self.create_parents().await),
            Action::FindOwn => Answered::Found(self.find_own().await),
            Action::Stat { name } => Answered::Stat(self.stat(name).await),
            Action::ReadDirData => Answered::DirData(self.read_dir_data().await),
            Action::Delete { name, record } => self.delete(name, *record).await,
            Action::ReadDirAcl => Answered::DirAcl(self.read_dir_acl().await),
            Action::Recycle => Answered::Recycled(self.recycle().await),
            Action::Replace { .. } => self.replace(action).await,
            Action::Acquire(_)
            | Action::Grant { .. }
            | Action::GiveUp
            | Action::Fail(_)
            | Action::Done(_) => return None,
        })
    }

    /// Runs a release or withdrawal to its end: performs the machine's
    /// actions from `action` on until it is done.
    pub(super) async fn finish(&mut self, machine: &mut contender::Contender, mut action: Action) -> Outcome {
        loop {
            if let Action::Done(outcome) = action {
                return outcome;
            }
            let Some(answered) = self.perform(&action).await else {
                return Outcome::Failed;
            };
            action = machine.step(answered.input());
        }
    }

    /// Feeds the answer of a plain deletion `action` whose first attempt
    /// was sent beforehand (`first` its result), retrying it after a lost
    /// answer; returns the machine's next action.
    pub(super) async fn delete_sent(
        &mut self,
        machine: &mut contender::Contender,
        action: &Action,
        first: Result<(), zk::Error>,
    ) -> Action {
        let Action::Delete { name, record: false } = action else {
            return Action::Done(Outcome::Failed);
        };
        let answered = match first {
            Ok(()) => Answered::Deleted {
                answer: Answer::Ok(()),
                answer_lost: false,
            },
            Err(e) if is_retryable(&e) => match self.delete(name, false).await {
                Answered::Deleted { answer, .. } => Answered::Deleted {
                    answer,
                    answer_lost: true,
                },
                other => other,
            },
            Err(e) => {
                let path = child_path(&self.dir, name);
                Answered::Deleted {
                    answer: self.answer(e, &path),
                    answer_lost: false,
                }
            }
        };
        machine.step(answered.input())
    }

    /// The machine's view of an error; the error is kept.
    fn answer<T>(&mut self, e: zk::Error, path: &str) -> Answer<T> {
        let (answer, error) = answer_of(e, path);
        self.last_error = Some(error);
        answer
    }

    /// Creates my node, pipelined with a listing of the directory: both
    /// requests leave now; the server answers a session's requests in
    /// order, so the listing already contains the new node, and its stat
    /// says whether the directory holds data.
    async fn create(&mut self) -> Answered {
        let client = &self.client;
        let prefix_path = child_path(&self.dir, &self.prefix);
        let options = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::new(&self.acls));
        let create = client.create(&prefix_path, &self.data, &options);
        let list = client.get_children(&self.dir);
        match create.await {
            Ok((stat, seq)) => {
                let name = format!("{}{:010}", self.prefix, seq.into_i64() as i32);
                let listing = match list.await {
                    Ok((children, stat)) => Answer::Ok((children, stat.data_length)),
                    Err(e) => {
                        let dir = self.dir.clone();
                        self.answer(e, &dir)
                    }
                };
                debug!(node = %child_path(&self.dir, &name), "created contender node");
                Answered::Created {
                    node: Answer::Ok(Created {
                        name,
                        czxid: stat.czxid,
                    }),
                    listing: Some(listing),
                }
            }
            Err(e) => {
                drop(list);
                let dir = self.dir.clone();
                Answered::Created {
                    node: self.answer(e, &dir),
                    listing: None,
                }
            }
        }
    }

    /// Creates the lock directory, its parent existing.
    async fn create_dir(&mut self, container: bool) -> Answer<()> {
        let client = &self.client;
        let mode = if container {
            zk::CreateMode::Container
        } else {
            zk::CreateMode::Persistent
        };
        let options = mode.with_acls(zk::Acls::new(&self.directory_acls));
        match with_retry(client, || client.create(&self.dir, &[], &options)).await {
            Ok(_) => Answer::Ok(()),
            Err(e) => {
                let dir = self.dir.clone();
                self.answer(e, &dir)
            }
        }
    }

    /// Creates the lock directory's parents, as persistent nodes.
    async fn create_parents(&mut self) -> Answer<()> {
        let client = &self.client;
        let Some(parent) = self
            .dir
            .rsplit_once('/')
            .map(|(parent, _)| parent.to_owned())
            .filter(|p| !p.is_empty())
        else {
            return Answer::Ok(());
        };
        let options = zk::CreateMode::Persistent.with_acls(zk::Acls::new(&self.directory_acls));
        match with_retry(client, || client.mkdir(&parent, &options)).await {
            Ok(()) => Answer::Ok(()),
            Err(e) => self.answer(e, &parent),
        }
    }

    /// Syncs the server with the leader (so that a create still in flight
    /// elsewhere is seen), then lists the directory.
    async fn find_own(&mut self) -> Answer<Vec<String>> {
        let client = &self.client;
        let _ = with_retry(client, || client.sync(&self.dir)).await;
        match with_retry(client, || client.list_children(&self.dir)).await {
            Ok(children) => Answer::Ok(children),
            Err(e) => {
                let dir = self.dir.clone();
                self.answer(e, &dir)
            }
        }
    }

    /// A child's owner session and czxid.
    async fn stat(&mut self, name: &str) -> Answer<Option<Owner>> {
        let client = &self.client;
        let path = child_path(&self.dir, name);
        match with_retry(client, || client.check_stat(&path)).await {
            Ok(stat) => Answer::Ok(stat.map(|stat| Owner {
                session: stat.ephemeral_owner,
                czxid: stat.czxid,
            })),
            Err(e) => self.answer(e, &path),
        }
    }

    /// The lock directory's data.
    async fn read_dir_data(&mut self) -> Answer<Vec<u8>> {
        let client = &self.client;
        match with_retry(client, || client.get_data(&self.dir)).await {
            Ok((data, _)) => {
                if !node_name::is_lock_directory_data(&data) {
                    warn!(
                        lock = %self.dir,
                        bytes = data.len(),
                        "the lock directory holds data that is not a release record: not using it as a lock"
                    );
                }
                Answer::Ok(data)
            }
            Err(e) => {
                let dir = self.dir.clone();
                self.answer(e, &dir)
            }
        }
    }

    /// Deletes a node of mine, with the release record or not, retried
    /// until answered or the session is over; notes whether an attempt's
    /// answer was lost to a broken connection (it may have deleted the node).
    async fn delete(&mut self, name: &str, record: bool) -> Answered {
        let client = &self.client;
        let path = child_path(&self.dir, name);
        let answer_lost = AtomicBool::new(false);
        let release = Action::Delete {
            name: name.to_owned(),
            record,
        };
        let result = match release.transaction(&self.dir) {
            // The release record and marker, and the deletion, in one
            // transaction whose operations the machine wrote.
            Some(tx) => {
                let release = || {
                    noting(&answer_lost, async {
                        let mut multi = client.new_multi_writer();
                        add_ops(&mut multi, tx.ops(), &self.acls)?;
                        multi.commit().await.map_err(zk::Error::from)
                    })
                };
                with_retry(client, release).await.map(drop)
            }
            None => with_retry(client, || noting(&answer_lost, client.delete(&path, None))).await,
        };
        let answer_lost = answer_lost.load(Ordering::Relaxed);
        let answer = match result {
            Ok(()) => Answer::Ok(()),
            Err(e) => {
                if record && e != zk::Error::NoNode {
                    debug!(node = %path, error = %e, "the release record was refused");
                }
                self.answer(e, &path)
            }
        };
        Answered::Deleted { answer, answer_lost }
    }

    /// A downgrade's transaction ([`Action::Replace`]), as the machine
    /// wrote it ([`Action::transaction`]), retried until answered or the
    /// session is over. Notes which operation failed the transaction, and
    /// whether an attempt's answer was lost. The reader's czxid comes from
    /// its create's stat, or, where the server leaves it out
    /// (ZOOKEEPER-4026), from an `exists` on it.
    async fn replace(&mut self, action: &Action) -> Answered {
        let client = &self.client;
        let tx = action.transaction(&self.dir);
        let Some((tx, created, reader_path)) = tx
            .as_ref()
            .and_then(|tx| tx.created().map(|(index, path)| (tx, index, path)))
        else {
            return Answered::Replaced {
                answer: Answer::Failed,
                failed: None,
                answer_lost: false,
            };
        };
        let answer_lost = AtomicBool::new(false);
        let failed = Mutex::new(None);
        let replace = || {
            noting(&answer_lost, async {
                let mut multi = client.new_multi_writer();
                add_ops(&mut multi, tx.ops(), &self.acls)?;
                let result = multi.commit().await;
                let step = match &result {
                    Err(zk::MultiWriteError::OperationFailed { index, .. }) => tx.failed_step(*index),
                    _ => None,
                };
                if let Ok(mut failed) = failed.lock() {
                    *failed = step;
                }
                match result {
                    Ok(results) => Ok(match results.get(created) {
                        Some(zk::MultiWriteResult::Create { stat, .. }) if !stat.is_invalid() => {
                            Some(stat.czxid)
                        }
                        _ => None,
                    }),
                    Err(e) => Err(zk::Error::from(e)),
                }
            })
        };
        let result = match with_retry(client, replace).await {
            Ok(Some(czxid)) => Ok(czxid),
            // The stat left out: the node is mine, just made.
            Ok(None) => with_retry(client, || client.check_stat(reader_path))
                .await
                .and_then(|stat| stat.map(|stat| stat.czxid).ok_or(zk::Error::NoNode)),
            Err(e) => Err(e),
        };
        let answer = match result {
            Ok(czxid) => Answer::Ok(czxid),
            Err(e) => {
                let writer_path = match action {
                    Action::Replace { writer, .. } => child_path(&self.dir, writer),
                    _ => self.dir.clone(),
                };
                debug!(writer = %writer_path, reader = %reader_path, error = %e, "the downgrade's transaction failed");
                self.answer(e, &writer_path)
            }
        };
        let failed = failed.lock().map(|f| *f).unwrap_or(None);
        Answered::Replaced {
            answer,
            failed,
            answer_lost: answer_lost.load(Ordering::Relaxed),
        }
    }

    /// The lock directory's ACL (kept for [`Action::Recycle`]) and its
    /// number of children.
    async fn read_dir_acl(&mut self) -> Answer<i32> {
        match self.client.get_acl(&self.dir).await {
            Ok((acl, stat)) => {
                self.acl = Some((acl, stat.version));
                Answer::Ok(stat.num_children)
            }
            Err(e) => {
                debug!(lock = %self.dir, error = %e, "cannot read the lock directory's ACL: not recycling it");
                let dir = self.dir.clone();
                self.answer(e, &dir)
            }
        }
    }

    /// Deletes the directory and creates it again, persistent, with the
    /// ACL read before, in one transaction: its counter starts from 0, and
    /// whatever access an operator gave it stays. Fails harmlessly if
    /// someone has queued meanwhile, written to the directory since its
    /// ACL was read (its version), or the directory is gone.
    async fn recycle(&mut self) -> Answer<()> {
        let Some((acl, version)) = self.acl.take() else {
            return Answer::Failed;
        };
        let client = &self.client;
        let dir = &self.dir;
        let recycle = async {
            let mut multi = client.new_multi_writer();
            multi.add_delete(dir, Some(version))?;
            multi.add_create(
                dir,
                &[],
                &zk::CreateMode::Persistent.with_acls(zk::Acls::new(&acl)),
            )?;
            multi.commit().await.map_err(zk::Error::from)
        };
        match recycle.await {
            Ok(_) => {
                warn!(lock = %dir, "recycled the idle lock directory: its sequence counter was near its limit and starts from 0 again");
                Answer::Ok(())
            }
            Err(e) => {
                debug!(lock = %dir, error = %e, "the lock directory stays");
                let dir = dir.clone();
                self.answer(e, &dir)
            }
        }
    }
}

/// The machine's view of an error on `path`, and the error as the library
/// reports it.
pub(super) fn answer_of<T>(e: zk::Error, path: &str) -> (Answer<T>, Error) {
    let answer = match e {
        zk::Error::NoNode => Answer::NoNode,
        zk::Error::NodeExists => Answer::Exists,
        zk::Error::NoAuth => Answer::NoAuth,
        zk::Error::Unimplemented => Answer::Unimplemented,
        ref e if is_retryable(e) => Answer::Retry,
        _ => Answer::Failed,
    };
    let error = Error::from_zk(e, path);
    match answer {
        Answer::Failed if error.is_session_over() => (Answer::SessionEnded, error),
        answer => (answer, error),
    }
}

/// The full path of the child `name` of `dir`.
pub(crate) fn child_path(dir: &str, name: &str) -> String {
    contender::child_path(dir, name)
}

/// Adds the machine's operations to `multi`, in their order, each as the
/// client's call; a create gets my contender nodes' ACL (`acls`).
fn add_ops(multi: &mut zk::MultiWriter<'_>, ops: &[Op], acls: &[zk::Acl]) -> Result<(), zk::Error> {
    let options = zk::CreateMode::Ephemeral.with_acls(zk::Acls::new(acls));
    for op in ops {
        match op {
            // The client's "any version" is -1.
            Op::Check { path, version } => multi.add_check_version(path, version.unwrap_or(-1))?,
            Op::Create { path, data } => multi.add_create(path, data, &options)?,
            Op::Delete { path, version } => multi.add_delete(path, *version)?,
            Op::SetData { path, data, version } => multi.add_set_data(path, data, *version)?,
        }
    }
    Ok(())
}

/// Runs one request of a deletion, noting in `answer_lost` when its answer
/// was lost to a broken connection ([`is_retryable`]): it may have been
/// applied.
async fn noting<T>(
    answer_lost: &AtomicBool,
    request: impl std::future::Future<Output = Result<T, zk::Error>>,
) -> Result<T, zk::Error> {
    let result = request.await;
    if matches!(&result, Err(e) if is_retryable(e)) {
        answer_lost.store(true, Ordering::Relaxed);
    }
    result
}

/// Logs, once per directory in this process, that its sequence counter has
/// passed [`ordering::RECYCLE_THRESHOLD`].
pub(super) fn warn_threshold(dir: &str, seq: i32) {
    static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let Ok(mut warned) = WARNED.lock() else {
        return;
    };
    if warned.get_or_insert_with(HashSet::new).insert(dir.to_owned()) {
        warn!(
            lock = %dir,
            seq,
            limit = ordering::SEQUENCE_LIMIT,
            "the lock directory's sequence counter is near its limit: the directory is deleted and recreated as soon as it is idle"
        );
    }
}
