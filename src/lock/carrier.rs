//! Carries the core's exchanges ([`crate::wire`]) on the ZooKeeper client:
//! sends what the core's loop (`wire::Carry`) says, each [`Request`] as the
//! client's call after the pause it names, and hands each answer back in
//! the core's terms with the watches it left. Nothing here decides what is
//! sent, when, or what an answer means: the core does, for the simulation
//! as for the library.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::time::Instant;
use tracing::debug;

use super::wire::WatchFuture;
use super::Inner;
use crate::acquire::NodeEvent;
use crate::backoff::Backoff;
use crate::contender::{self, Action, Contender, Outcome, RequestError};
use crate::error::{ends_session, is_retryable, Error};
use crate::wire::{self, Done, Exchange, Reply, Request, Wire};
use crate::zk;

/// A contender's requests on its lock's client: its side of the wire, the
/// ACLs its creates give, and the error behind the last failed request.
/// Owned, so that work left running in the background holds the client,
/// not the lock (the lock's last handle must not go with a task of the
/// background runtime, where its drop would wait for that runtime's own
/// work).
pub(super) struct Carrier {
    client: zk::Client,
    pub(super) wire: Wire,
    acls: Arc<[zk::Acl]>,
    directory_acls: Arc<[zk::Acl]>,
    /// The ACL the last [`Request::GetAcl`] read, for [`Request::Recreate`].
    acl_read: Option<Vec<zk::Acl>>,
    /// The client's error behind the last failed request the exchange
    /// blames, and the path of that request.
    pub(super) last_error: Option<(zk::Error, String)>,
}

/// What one request's answer brought: the client's answer (with a
/// refused transaction's failing index), the watch it left, and an ACL read.
struct Answered {
    result: Result<Reply, zk::Error>,
    refused_at: Option<usize>,
    /// The watches it left, in the order the request sets them.
    watches: Vec<WatchFuture>,
    acl: Option<Vec<zk::Acl>>,
}

impl Answered {
    fn of(result: Result<Reply, zk::Error>) -> Answered {
        Answered {
            result,
            refused_at: None,
            watches: Vec::new(),
            acl: None,
        }
    }

    /// The answer in the core's terms.
    fn answer(&self) -> Result<Reply, wire::Error> {
        match (&self.result, self.refused_at) {
            (Ok(reply), _) => Ok(reply.clone()),
            (Err(e), None) => Err(wire_error(e)),
            (Err(e), Some(index)) => Err(wire::Error::Refused {
                index,
                error: Box::new(wire_error(e)),
            }),
        }
    }
}

/// A request on its way: it left when it was made.
type Sent<'c> = Pin<Box<dyn Future<Output = Answered> + Send + 'c>>;

/// An exchange on its way on the client ([`wire::Carry`]).
pub(super) type Carrying = wire::Carry<WatchFuture, zk::Error>;

/// The watches an exchange left and keeps.
pub(super) type Left = Vec<wire::Kept<WatchFuture>>;

impl Clone for Carrier {
    /// The same requests, with no error seen yet.
    fn clone(&self) -> Carrier {
        Carrier {
            client: self.client.clone(),
            wire: self.wire.clone(),
            acls: self.acls.clone(),
            directory_acls: self.directory_acls.clone(),
            acl_read: self.acl_read.clone(),
            last_error: None,
        }
    }
}

impl Carrier {
    /// The requests of a contender of `inner`'s lock whose node's name
    /// starts with `prefix`.
    pub(super) fn new(inner: &Inner, prefix: &str) -> Carrier {
        let data = contender::node_data(inner.layout, &inner.identity);
        Carrier {
            client: inner.client.clone(),
            wire: Wire::new(&inner.path, prefix, data),
            acls: inner.acls.clone(),
            directory_acls: inner.directory_acls.clone(),
            acl_read: None,
            last_error: None,
        }
    }

    /// An exchange to carry, its lost answers retried as
    /// [`crate::backoff::Backoff::request`] says.
    pub(super) fn carrying(&self, exchange: Exchange) -> Carrying {
        wire::Carry::new(exchange, Backoff::request(self.client.session_timeout()))
    }

    /// Carries `exchange` to its end ([`Carrier::carry_on`]); the
    /// exchange with its answers, and the watches it keeps.
    pub(super) async fn carry(&mut self, exchange: Exchange) -> (Exchange, Left) {
        let mut carrying = self.carrying(exchange);
        self.carry_on(&mut carrying).await;
        self.finished(carrying)
    }

    /// The exchange `carrying` carried (or cut short), and the watches it
    /// keeps; the error of the request it blames is kept in
    /// [`Carrier::last_error`].
    pub(super) fn finished(&mut self, carrying: Carrying) -> (Exchange, Left) {
        let carried = carrying.finish();
        if let (Some(fault), Some((_, path))) = (carried.blamed, carried.exchange.blame()) {
            self.last_error = Some((client_error(&fault), path.to_owned()));
        }
        (carried.exchange, carried.kept)
    }

    /// The error of the last failed request the exchange blamed
    /// ([`Carrier::last_error`]), taken.
    pub(super) fn take_error(&mut self) -> Option<Error> {
        self.last_error.take().map(|(e, path)| Error::from_zk(e, &path))
    }

    /// Carries `carrying` on the client ([`carry_on`]), keeping the ACL a
    /// [`Request::GetAcl`] read.
    pub(super) async fn carry_on(&mut self, carrying: &mut Carrying) {
        self.carry_after(carrying, None).await;
    }

    /// [`Carrier::carry_on`], the future of the first request (`first`)
    /// sent beforehand.
    async fn carry_after(&mut self, carrying: &mut Carrying, first: Option<Sent<'static>>) {
        let client = self.client.clone();
        let (acls, dirs) = (self.acls.clone(), self.directory_acls.clone());
        let read = self.acl_read.clone();
        let line = Line {
            client: &client,
            acls: &acls,
            directory_acls: &dirs,
            acl_read: read.as_deref(),
        };
        if let Some(acl) = carry_on(&line, carrying, first).await {
            self.acl_read = Some(acl);
        }
    }

    /// Performs a request action of the machine (its watches, a
    /// release's or withdrawal's, are dropped); `None` for an action that
    /// is no request (an end, the wait's `Wait`).
    async fn perform(&mut self, machine: &Contender, action: &Action) -> Option<Exchange> {
        let exchange = self.wire.exchange(action, machine)?;
        Some(self.carry(exchange).await.0)
    }

    /// Runs a release or withdrawal to its end: performs the machine's
    /// actions from `action` on until it is done.
    pub(super) async fn finish(&mut self, machine: &mut Contender, mut action: Action) -> Outcome {
        loop {
            if let Action::Done(outcome) = action {
                return outcome;
            }
            let Some(exchange) = self.perform(machine, &action).await else {
                return Outcome::Failed;
            };
            action = self.wire.settle(&exchange, machine);
            for notice in exchange.notices(machine) {
                super::notice::log_notice(self.wire.dir(), notice, |_| true);
            }
        }
    }

    /// Starts a withdrawal at `action` now: a plain deletion leaves
    /// before this returns (a later request of this session, a new
    /// acquire's, is answered after it); the rest runs in the returned
    /// future, to the withdrawal's end.
    pub(super) fn begin(
        mut self,
        mut machine: Contender,
        action: Action,
    ) -> impl Future<Output = (Outcome, Carrier)> + Send + 'static {
        let exchange = self.wire.exchange(&action, &machine);
        let first = match exchange.as_ref().map(Exchange::requests) {
            Some([Request::Delete { path, version }]) => Some(self.client.delete(path, *version)),
            _ => None,
        };
        async move {
            let outcome = match (action, exchange) {
                (Action::Done(outcome), _) => outcome,
                (_, None) => Outcome::Failed,
                (_, Some(exchange)) => {
                    let first = first.map(|first| -> Sent<'static> {
                        Box::pin(async move { Answered::of(first.await.map(|()| Reply::Done)) })
                    });
                    let mut carrying = match first {
                        Some(_) => self.carrying(exchange).sent_ahead(),
                        None => self.carrying(exchange),
                    };
                    self.carry_after(&mut carrying, first).await;
                    let (exchange, _) = self.finished(carrying);
                    let next = self.wire.settle(&exchange, &mut machine);
                    self.finish(&mut machine, next).await
                }
            };
            (outcome, self)
        }
    }
}

/// Carries the keeper's read-and-watch of the held node (`exchange`, as
/// [`wire::Keeping`] gives it): the exchange with its answer, the watch it
/// keeps, and the client's error behind a failure.
pub(super) async fn keep(client: &zk::Client, exchange: Exchange) -> wire::Carried<WatchFuture, zk::Error> {
    let line = Line {
        client,
        acls: &[],
        directory_acls: &[],
        acl_read: None,
    };
    let mut carrying = Carrying::new(exchange, Backoff::request(client.session_timeout()));
    carry_on(&line, &mut carrying, None).await;
    carrying.finish()
}

/// Sends what `carrying` says, as it says, and hands it each answer in
/// the order sent, until it is complete; the ACL the last
/// [`Request::GetAcl`] read. `first`: the future of its first request,
/// sent beforehand.
async fn carry_on(
    line: &Line<'_>,
    carrying: &mut Carrying,
    first: Option<Sent<'static>>,
) -> Option<Vec<zk::Acl>> {
    let started = Instant::now();
    let requests = carrying.exchange().requests().to_vec();
    let mut first = first;
    let mut acl_read = None;
    // Each request leaves as `carrying` gives it, after the pause it
    // names; the answers are taken in the order sent.
    let mut sent: VecDeque<(usize, InFlight<'_>)> = VecDeque::new();
    loop {
        while let Some(send) = carrying.poll_send() {
            if !send.after.is_zero() {
                // On the background runtime's timer: a release may move there.
                crate::background::pause(send.after).await;
            }
            // The first request may have left beforehand (taken at its
            // first send: one sent again leaves anew).
            let ahead = if send.index == 0 { first.take() } else { None };
            let request = match (ahead, requests.get(send.index)) {
                (Some(ahead), _) => ahead,
                (None, Some(request)) => line.send(request),
                // A follow-up of an answer (`wire::Progress::Send`): it
                // leaves as it is awaited, at once (the answer it follows
                // was the last one awaited).
                (None, None) => line.send_owned(send.request),
            };
            sent.push_back((send.index, InFlight::new(request)));
        }
        if carrying.is_complete() {
            // The answers not awaited are dropped, with their watches.
            break;
        }
        let Some((index, request)) = sent.pop_front() else {
            break;
        };
        // A server answers a session's requests in the order sent (a few
        // refusals may overtake, never fall behind): once the last in
        // flight is answered, so are the ones before it. Waiting for it
        // first wakes this task once for them all (a create and its
        // listing), not once per answer; each is still handed over in
        // order, and every one is answered (or fails with the
        // connection), so the wait ends.
        if let Some((_, last)) = sent.back_mut() {
            last.settle().await;
        }
        let mut answered = request.answer().await;
        if let Some(acl) = answered.acl.take() {
            acl_read = Some(acl);
        }
        let answer = answered.answer();
        let answered = wire::Answered {
            answer,
            watches: answered.watches,
            error: answered.result.err(),
        };
        carrying.answered(index, answered, started.elapsed());
    }
    acl_read
}

/// A request in flight, and its answer once it was awaited.
struct InFlight<'r> {
    sent: Sent<'r>,
    answered: Option<Answered>,
}

impl<'r> InFlight<'r> {
    fn new(sent: Sent<'r>) -> InFlight<'r> {
        InFlight { sent, answered: None }
    }

    /// Waits for the answer, and keeps it.
    async fn settle(&mut self) {
        if self.answered.is_none() {
            self.answered = Some((&mut self.sent).await);
        }
    }

    /// The answer, awaited if it was not yet.
    async fn answer(self) -> Answered {
        match self.answered {
            Some(answered) => answered,
            None => self.sent.await,
        }
    }
}

/// Sends one request that makes nothing (a look: no ACL to give) and
/// returns its answer in the core's terms, with the client's error.
pub(super) async fn look(
    client: &zk::Client,
    request: &Request,
) -> (Result<Reply, wire::Error>, Option<zk::Error>) {
    let line = Line {
        client,
        acls: &[],
        directory_acls: &[],
        acl_read: None,
    };
    let answered = line.send(request).await;
    (answered.answer(), answered.result.err())
}

/// The client's error behind a failed answer ([`wire::Fault`]): a garbled
/// answer is one the client could not read.
pub(super) fn client_error(fault: &wire::Fault<zk::Error>) -> zk::Error {
    match fault {
        wire::Fault::Carrier(e) => e.clone(),
        wire::Fault::Garbled => {
            zk::Error::UnexpectedError("an answer that does not match the request sent".to_owned())
        }
    }
}

/// The core's view of a client's error.
pub(crate) fn wire_error(e: &zk::Error) -> wire::Error {
    match e {
        zk::Error::NoNode => wire::Error::NoNode,
        zk::Error::NodeExists => wire::Error::NodeExists,
        zk::Error::NoAuth => wire::Error::NoAuth,
        zk::Error::BadVersion => wire::Error::BadVersion,
        zk::Error::NotEmpty => wire::Error::NotEmpty,
        zk::Error::Unimplemented => wire::Error::Unimplemented,
        e if is_retryable(e) => wire::Error::Unanswered,
        e if ends_session(e) => wire::Error::SessionEnded,
        _ => wire::Error::Failed,
    }
}

/// The core's view of the error behind a failed request (whether an answer
/// came, [`wire_error`]), carrying it with the path of the request.
pub(super) fn request_error((e, path): (zk::Error, String)) -> RequestError<(zk::Error, String)> {
    match wire_error(&e) {
        wire::Error::Unanswered => RequestError::Unanswered((e, path)),
        _ => RequestError::Answered((e, path)),
    }
}

/// The core's view of a transaction's failure.
fn multi_error(e: zk::MultiWriteError) -> (zk::Error, Option<usize>) {
    match e {
        zk::MultiWriteError::OperationFailed { index, source } => (source, Some(index)),
        zk::MultiWriteError::RequestFailed { source } => (source, None),
    }
}

/// The core's stat of the client's.
fn stat(stat: &zk::Stat) -> wire::Stat {
    wire::Stat {
        czxid: stat.czxid,
        ephemeral_owner: stat.ephemeral_owner,
    }
}

/// What sending a request needs: the client, and the ACLs a create gives
/// (my contender nodes', the directory's, and the one
/// [`Request::GetAcl`] read).
#[derive(Clone, Copy)]
struct Line<'c> {
    client: &'c zk::Client,
    acls: &'c [zk::Acl],
    directory_acls: &'c [zk::Acl],
    acl_read: Option<&'c [zk::Acl]>,
}

impl<'c> Line<'c> {
    /// Sends `request` as it is first awaited ([`Line::send`]).
    fn send_owned(self, request: Request) -> Sent<'c> {
        Box::pin(async move { self.send(&request).await })
    }

    /// Sends `request` now, as the client's call.
    fn send<'r>(&self, request: &'r Request) -> Sent<'r>
    where
        'c: 'r,
    {
        let Line {
            client,
            acls,
            directory_acls,
            acl_read,
        } = *self;
        match request {
            Request::Create {
                path,
                data,
                mode,
                acl,
            } => {
                let mode = match mode {
                    wire::CreateMode::EphemeralSequential => zk::CreateMode::EphemeralSequential,
                    wire::CreateMode::Ephemeral => zk::CreateMode::Ephemeral,
                    wire::CreateMode::Persistent => zk::CreateMode::Persistent,
                    wire::CreateMode::Container => zk::CreateMode::Container,
                };
                let acl = match acl {
                    wire::Acl::Contender => acls,
                    wire::Acl::Directory => directory_acls,
                    wire::Acl::Read => acl_read.unwrap_or(directory_acls),
                };
                let created = client.create(path, data, &mode.with_acls(zk::Acls::new(acl)));
                Box::pin(async move {
                    Answered::of(created.await.map(|(stat, seq)| Reply::Created {
                        czxid: stat.czxid,
                        seq: seq.into_i64(),
                    }))
                })
            }
            Request::MakePath { path } => Box::pin(async move {
                let options = zk::CreateMode::Persistent.with_acls(zk::Acls::new(directory_acls));
                Answered::of(client.mkdir(path, &options).await.map(|()| Reply::Done))
            }),
            Request::List {
                path,
                stat: true,
                watch: false,
            } => {
                let listed = client.get_children(path);
                Box::pin(async move {
                    Answered::of(listed.await.map(|(children, stat)| Reply::Children {
                        children,
                        data_length: stat.data_length,
                    }))
                })
            }
            Request::List {
                path,
                stat: true,
                watch: true,
            } => {
                let listed = client.get_and_watch_children(path);
                Box::pin(async move {
                    match listed.await {
                        Ok((children, stat, watcher)) => Answered {
                            watches: vec![Box::pin(watcher.changed())],
                            ..Answered::of(Ok(Reply::Children {
                                children,
                                data_length: stat.data_length,
                            }))
                        },
                        Err(e) => Answered::of(Err(e)),
                    }
                })
            }
            Request::List {
                path,
                stat: false,
                watch: false,
            } => {
                let listed = client.list_children(path);
                Box::pin(async move {
                    Answered::of(listed.await.map(|children| Reply::Children {
                        children,
                        data_length: 0,
                    }))
                })
            }
            Request::List {
                path,
                stat: false,
                watch: true,
            } => {
                let listed = client.list_and_watch_children(path);
                Box::pin(async move {
                    match listed.await {
                        Ok((children, watcher)) => Answered {
                            watches: vec![Box::pin(watcher.changed())],
                            ..Answered::of(Ok(Reply::Children {
                                children,
                                data_length: 0,
                            }))
                        },
                        Err(e) => Answered::of(Err(e)),
                    }
                })
            }
            Request::Sync { path } => {
                let synced = client.sync(path);
                Box::pin(async move { Answered::of(synced.await.map(|()| Reply::Done)) })
            }
            Request::GetData { path, watch: false } => {
                let read = client.get_data(path);
                Box::pin(async move {
                    Answered::of(read.await.map(|(data, s)| Reply::Data { data, stat: stat(&s) }))
                })
            }
            Request::GetData { path, watch: true } => {
                let read = client.get_and_watch_data(path);
                Box::pin(async move {
                    match read.await {
                        Ok((data, s, watcher)) => Answered {
                            watches: vec![Box::pin(watcher.changed())],
                            ..Answered::of(Ok(Reply::Data { data, stat: stat(&s) }))
                        },
                        Err(e) => Answered::of(Err(e)),
                    }
                })
            }
            Request::Exists { path, watch: false } => {
                let checked = client.check_stat(path);
                Box::pin(
                    async move { Answered::of(checked.await.map(|s| Reply::Stat(s.as_ref().map(stat)))) },
                )
            }
            Request::Exists { path, watch: true } => {
                let checked = client.check_and_watch_stat(path);
                Box::pin(async move {
                    match checked.await {
                        Ok((s, watcher)) => Answered {
                            watches: vec![Box::pin(watcher.changed())],
                            ..Answered::of(Ok(Reply::Stat(s.as_ref().map(stat))))
                        },
                        Err(e) => Answered::of(Err(e)),
                    }
                })
            }
            Request::SetWatches {
                relative_zxid,
                data,
                exist,
            } => {
                let data: Vec<&str> = data.iter().map(String::as_str).collect();
                let exist: Vec<&str> = exist.iter().map(String::as_str).collect();
                let set = client.set_watches(*relative_zxid, &data, &exist);
                Box::pin(async move {
                    match set.await {
                        Ok(watchers) => {
                            // The events sent before the answer are in
                            // their watchers already (the session hands
                            // them over before the answer): fired at once.
                            let (watches, fired) = watchers.into_iter().map(fired_at_once).unzip();
                            Answered {
                                watches,
                                ..Answered::of(Ok(Reply::WatchesSet { fired }))
                            }
                        }
                        Err(e) => Answered::of(Err(e)),
                    }
                })
            }
            Request::Delete { path, version } => {
                let deleted = client.delete(path, *version);
                Box::pin(async move { Answered::of(deleted.await.map(|()| Reply::Done)) })
            }
            Request::Multi { ops } => multi(client, ops, acls),
            Request::Recreate { path, version } => {
                let Some(acl) = acl_read else {
                    return Box::pin(std::future::ready(Answered::of(Err(zk::Error::BadArguments(
                        &"no ACL read to create the directory again with",
                    )))));
                };
                let mut writer = client.new_multi_writer();
                let options = zk::CreateMode::Persistent.with_acls(zk::Acls::new(acl));
                let added = writer
                    .add_delete(path, Some(*version))
                    .and_then(|()| writer.add_create(path, &[], &options));
                if let Err(e) = added {
                    return Box::pin(std::future::ready(Answered::of(Err(e))));
                }
                let committed = writer.commit();
                Box::pin(async move {
                    Answered::of(committed.await.map(|_| Reply::Done).map_err(zk::Error::from))
                })
            }
            Request::ReadAll { paths } => {
                let mut reader = client.new_multi_reader();
                for path in paths {
                    if let Err(e) = reader.add_get_data(path) {
                        return Box::pin(std::future::ready(Answered::of(Err(e))));
                    }
                }
                let read = reader.commit();
                Box::pin(async move {
                    Answered::of(read.await.map(|reads| {
                        Reply::Reads(
                            reads
                                .into_iter()
                                .map(|read| match read {
                                    zk::MultiReadResult::Data { data, .. } => Ok(data),
                                    zk::MultiReadResult::Error { err } => Err(wire_error(&err)),
                                    _ => Err(wire::Error::Failed),
                                })
                                .collect(),
                        )
                    }))
                })
            }
            Request::GetAcl { path } => {
                let read = client.get_acl(path);
                Box::pin(async move {
                    match read.await {
                        Ok((acl, s)) => Answered {
                            acl: Some(acl),
                            ..Answered::of(Ok(Reply::Acl {
                                version: s.version,
                                children: s.num_children,
                            }))
                        },
                        Err(e) => Answered::of(Err(e)),
                    }
                })
            }
        }
    }
}

/// Sends a transaction of the machine's operations now, each as the
/// client's call; a create gets my contender nodes' ACL (`acls`). A refused
/// transaction's failing index is kept with its error.
fn multi<'c>(client: &'c zk::Client, ops: &[contender::Op], acls: &[zk::Acl]) -> Sent<'c> {
    let options = zk::CreateMode::Ephemeral.with_acls(zk::Acls::new(acls));
    let mut writer = client.new_multi_writer();
    for op in ops {
        let added = match op {
            // The client's "any version" is -1.
            contender::Op::Check { path, version } => writer.add_check_version(path, version.unwrap_or(-1)),
            contender::Op::Create { path, data } => writer.add_create(path, data, &options),
            contender::Op::Delete { path, version } => writer.add_delete(path, *version),
            contender::Op::SetData { path, data, version } => writer.add_set_data(path, data, *version),
        };
        if let Err(e) = added {
            return Box::pin(std::future::ready(Answered::of(Err(e))));
        }
    }
    let committed = writer.commit();
    Box::pin(async move {
        match committed.await {
            Ok(results) => Answered::of(Ok(Reply::Multi(
                results
                    .iter()
                    .map(|result| match result {
                        zk::MultiWriteResult::Check => Done::Check,
                        zk::MultiWriteResult::Create { stat: s, .. } => {
                            Done::Created((!s.is_invalid()).then(|| stat(s)))
                        }
                        zk::MultiWriteResult::Delete => Done::Deleted,
                        zk::MultiWriteResult::SetData { .. } => Done::Written,
                        _ => Done::Unknown,
                    })
                    .collect(),
            ))),

            Err(e) => {
                let (source, index) = multi_error(e);
                debug!(error = %source, ?index, "a transaction was refused");
                Answered {
                    refused_at: index,
                    ..Answered::of(Err(source))
                }
            }
        }
    })
}

/// A watcher's future, and whether its event has come already.
fn fired_at_once(watcher: zk::OneshotWatcher) -> (WatchFuture, bool) {
    let mut watch: WatchFuture = Box::pin(watcher.changed());
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match watch.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(event) => (Box::pin(std::future::ready(event)), true),
        std::task::Poll::Pending => (watch, false),
    }
}

/// Polls the nodes at `paths` ([`poll_until_gone`]) until one of them is
/// gone, the session ended, or polling one failed (the client's error
/// then comes with the path of the node it polled); with no path, never.
pub(super) async fn poll_until_one_gone(
    client: &zk::Client,
    paths: &[String],
) -> (NodeEvent, Option<(zk::Error, String)>) {
    use std::future::Future;
    let mut polls: Vec<_> = paths
        .iter()
        .map(|path| Box::pin(poll_until_gone(client, path)))
        .collect();
    std::future::poll_fn(|cx| {
        polls
            .iter_mut()
            .zip(paths)
            .find_map(|(poll, path)| match poll.as_mut().poll(cx) {
                std::task::Poll::Ready((event, error)) => Some((event, error.map(|e| (e, path.clone())))),
                std::task::Poll::Pending => None,
            })
            .map_or(std::task::Poll::Pending, std::task::Poll::Ready)
    })
    .await
}

/// Polls the node at `path` as [`wire::Poll`] says (its pauses, its
/// looks, when it is over), until a look says it is gone, the session
/// ended, or polling failed. The client's error behind a failure comes
/// with it.
async fn poll_until_gone(client: &zk::Client, path: &str) -> (NodeEvent, Option<zk::Error>) {
    let mut poll = wire::Poll::new(path, Backoff::poll(client.session_timeout()));
    let began = Instant::now();
    loop {
        tokio::time::sleep(poll.pause()).await;
        let (answer, error) = look(client, poll.request()).await;
        if let Some(event) = poll.looked(&answer, began.elapsed()) {
            return (event, error);
        }
    }
}
