//! The driver of an acquire: creates the contender node, performs the
//! actions of [`crate::acquire`]'s machine on the ZooKeeper client, and
//! feeds back what came of them (the run loop in that module's
//! documentation).

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;
use tracing::{debug, info_span, warn, Instrument};
use uuid::Uuid;

use super::held::{Held, Pending};
use super::requests::{child_path, warn_threshold, with_retry, Requests};
use super::revoke::is_revocation;
use super::SharedLock;
use crate::acquire::{Action, Counts, Event, Input, NodeEvent, Record, Reply};
use crate::backoff::Backoff;
use crate::connect::missing_chroot;
use crate::contender::{self, Contender, Deadlines, Failure};
use crate::error::{is_retryable, Error};
use crate::node_name::{self, Mode};
use crate::ordering;
use crate::stats::End;
use crate::zk;

/// How long an acquire may wait.
#[derive(Clone, Copy)]
pub(super) enum Patience {
    /// Give up at once if the lock is not free (`try_*`).
    None,
    /// Give up at this instant.
    Until(Instant),
    /// Wait as long as it takes.
    Forever,
}

impl SharedLock {
    /// The acquire loop: create, snapshot, decide, act.
    pub(super) async fn acquire_held(&self, mode: Mode, patience: Patience) -> Result<Option<Held>, Error> {
        let span = info_span!("acquire", lock = %self.inner.path, mode = %mode);
        let waiter = self.inner.stats.started(mode);
        let mut counts = Counts::default();
        let result = match self
            .acquire_inner(mode, patience, &mut counts, None)
            .instrument(span)
            .await
        {
            // Neither the directory nor its parents could be created: a
            // missing chroot is the one cause the server does not name.
            Err(Error::ZooKeeper(zk::Error::NoNode)) => {
                Err(missing_chroot(&self.inner.client, Some(&self.inner.path))
                    .await
                    .unwrap_or(Error::ZooKeeper(zk::Error::NoNode)))
            }
            result => result,
        };
        let end = match &result {
            Ok(Some(_)) => End::Granted,
            Ok(None) => End::GaveUp,
            Err(_) => End::Failed,
        };
        waiter.finish(end, counts);
        result
    }

    /// The driver of a contender's acquire: performs the machine's actions
    /// and feeds back what came of them (the run loop of
    /// [`crate::contender`]).
    async fn acquire_inner(
        &self,
        mode: Mode,
        patience: Patience,
        counts: &mut Counts,
        replacing: Option<(&str, bool, bool)>,
    ) -> Result<Option<Held>, Error> {
        let inner = &self.inner;
        let client = &inner.client;
        let token = Uuid::new_v4();
        let Some(prefix) = inner.layout.prefix(&inner.identity, token, mode) else {
            return Err(Error::UnsupportedMode {
                layout: inner.layout,
                mode,
            });
        };
        // Every session state change from here on: after a reconnect, the
        // client re-registers watches in no particular order, so events of
        // our own node and of the watched node may come in either order.
        let states = client.state_watcher();
        let start = Instant::now();
        let deadlines = match patience {
            Patience::Until(until) => Deadlines::until(until, start + TRY_TIMEOUT),
            Patience::None => Deadlines::until(start, start + TRY_TIMEOUT),
            Patience::Forever => Deadlines::forever(),
        };
        let machine = Contender::new(
            mode,
            !matches!(patience, Patience::None),
            inner.layout,
            token,
            client.session_id().0,
            !inner.data_checked.load(Ordering::Relaxed),
        )
        .with_release_markers(inner.release_markers)
        .with_listing_limit(inner.listing_limit);
        let machine = match replacing {
            Some((writer, mark, revoked)) => machine.replacing(writer, mark, revoked),
            None => machine,
        };
        // From here on, dropping this future withdraws whatever node it made.
        let mut pending = Pending::new(self.inner.clone(), Requests::new(inner, prefix), machine);
        let mut driver = Driver {
            lock: self,
            states,
            node: String::new(),
            until: deadlines.look,
            own_watch: None,
            watched: None,
            watched_path: String::new(),
            marker: None,
            last_error: None,
            ended: None,
        };
        let mut action = pending.machine.start();
        loop {
            *counts = pending.machine.counts();
            driver.until = pending.machine.deadline(deadlines);
            if !pending.machine.marker_watch_needed() {
                // Dropping it removes it from the server, unless it fired.
                driver.marker = None;
            }
            if driver.node.is_empty() {
                if let (Some(name), Some(seq)) = (pending.machine.node(), pending.machine.seq()) {
                    driver.node = child_path(&inner.path, name);
                    if seq >= ordering::RECYCLE_THRESHOLD {
                        warn_threshold(&inner.path, seq);
                    }
                }
            }
            action = match action {
                contender::Action::Grant { .. } => {
                    debug!(node = %driver.node, handoff = counts.handoff, "granted");
                    let own_watch = driver.own_watch.take();
                    let holder = inner.stats.holder(mode, client);
                    return Ok(Some(pending.grant(own_watch, holder)));
                }
                contender::Action::GiveUp => {
                    debug!(node = %driver.node, "giving up");
                    return pending.give_up().await;
                }
                contender::Action::Fail(failure) => return Err(driver.failed(failure, &mut pending).await),
                contender::Action::Acquire(action) => {
                    driver.last_error = None;
                    if driver.until.is_some_and(|until| until <= Instant::now()) {
                        // The deadline passed before the wait's request left.
                        feed(&mut pending.machine, Input::Deadline)
                    } else {
                        driver.perform(&mut pending.machine, action).await
                    }
                }
                contender::Action::Done(_) => return Err(unexpected("the acquire ended without a grant")),
                request => {
                    pending.requests.last_error = None;
                    let Some(answered) = before(driver.until, pending.requests.perform(&request)).await
                    else {
                        debug!("the deadline passed during {request:?}");
                        return pending.give_up().await;
                    };
                    let Some(answered) = answered else {
                        return Err(unexpected("an action that is no request"));
                    };
                    driver.pump(&mut pending.machine);
                    let next = pending.machine.step(answered.input());
                    if let (contender::Action::Stat { .. }, Some(name)) = (&request, pending.machine.node()) {
                        debug!(node = %name, "found own node after connection loss during create");
                    }
                    if pending.machine.data_checked() {
                        inner.data_checked.store(true, Ordering::Relaxed);
                    }
                    if pending.machine.saw_foreign() {
                        if let Some(children) = answered.listing() {
                            self.warn_foreign(children);
                        }
                    }
                    next
                }
            };
        }
    }

    /// A downgrade's reader: a reader node that takes the place of my
    /// holding writer node `writer` if only readers stand between them
    /// (`Some`, granted: the writer node is deleted), or is withdrawn again
    /// (`None`: the writer node is kept). Its requests are retried until
    /// answered or the session is over, with no deadline of their own.
    pub(super) async fn downgrade_reader(
        &self,
        writer: &str,
        mark: bool,
        revoked: bool,
    ) -> Result<Option<Held>, Error> {
        let span = info_span!("downgrade", lock = %self.inner.path, writer = %writer);
        let mut counts = Counts::default();
        self.acquire_inner(
            Mode::Read,
            Patience::Forever,
            &mut counts,
            Some((writer, mark, revoked)),
        )
        .instrument(span)
        .await
    }

    /// The error for a contender node that vanished.
    fn gone_error(&self, node: &str) -> Error {
        Error::from_session_state(self.inner.client.state()).unwrap_or_else(|| Error::Lost {
            node: node.to_owned(),
        })
    }

    /// True the first time this lock is asked about `key`: what is logged
    /// under it is logged once.
    fn first_time(&self, key: &str) -> bool {
        self.inner
            .warned
            .lock()
            .is_ok_and(|mut warned| warned.get_or_insert_with(Box::default).insert(key.to_owned()))
    }

    /// Logs each child that is not a contender, once per name.
    fn warn_foreign(&self, children: &[String]) {
        for child in children {
            if !crate::node_name::is_contender_name(child) && self.first_time(child) {
                warn!(
                    lock = %self.inner.path,
                    child = %child,
                    "ignoring a child that is not a contender node in any known layout (native \
                     `<host>-<R|W>-<seq>`, Curator `_c_<uuid>-__READ__|__WRIT__|lock-<seq>`, \
                     kazoo `<hex>__rlock__|__lock__<seq>`)"
                );
            }
        }
    }

    /// Logs, once per lock, that a watched contender cannot be read by this
    /// identity: the server would not deliver its watch events, so it is
    /// polled. (Once per lock, not per node: every acquire waits on a new
    /// node, and the set of names warned about must not grow without end.)
    fn warn_unreadable(&self, path: &str) {
        if self.first_time("\0unreadable") {
            warn!(
                node = %path,
                "cannot read the contender node to wait on (its ACL): polling it instead of watching; \
                 give every contender READ on contender nodes (e.g. world:anyone:r) for prompt hand-offs"
            );
        }
    }

    /// Logs, once per node, that a watched contender is not ephemeral: it
    /// stays, and blocks the lock, until someone deletes it.
    fn warn_persistent(&self, path: &str) {
        if self.first_time(path) {
            warn!(node = %path, "a contender node in the queue is not ephemeral: it blocks the lock until someone deletes it");
        }
    }
}

/// What the driver of one acquire holds besides the machine: the watches'
/// futures, the deadline, and what it saw last.
struct Driver<'a> {
    lock: &'a SharedLock,
    states: zk::StateWatcher,
    /// The full path of our node.
    node: String,
    until: Option<Instant>,
    /// The pending watch on our own node.
    own_watch: Option<WatchFuture>,
    /// The pending watch on the watched node.
    watched: Option<WatchFuture>,
    watched_path: String,
    /// The pending `exists` watch on the watched node's release marker.
    marker: Option<WatchFuture>,
    /// The error behind the last failed request, for `Failure::Request`.
    last_error: Option<Error>,
    /// The terminal session state seen, if any.
    ended: Option<zk::SessionState>,
}

impl Driver<'_> {
    /// Performs one action of the wait, and returns the machine's next action.
    async fn perform(&mut self, machine: &mut Contender, action: Action) -> contender::Action {
        let client = &self.lock.inner.client;
        let dir = self.lock.inner.path.as_str();
        match action {
            Action::List => {
                let listed = before(self.until, with_retry(client, || client.list_children(dir))).await;
                self.pump(machine);
                match listed {
                    None => feed(machine, Input::Deadline),
                    Some(Ok(children)) => {
                        let next = feed(machine, Input::Listed(Reply::Ok(&children)));
                        if machine.saw_foreign() {
                            self.lock.warn_foreign(&children);
                        }
                        next
                    }
                    Some(Err(e)) => {
                        let reply = self.reply(e, dir);
                        feed(machine, Input::Listed(reply))
                    }
                }
            }
            Action::SetWatches { own, watched, marker } => {
                self.watched_path = child_path(dir, &watched);
                self.watched = None;
                self.marker = None;
                if own {
                    self.own_watch = None;
                }
                // Data watches (`getData`): on a missing node no watch is
                // left behind. The marker's is an `exists` watch, which
                // waits for its creation; it leaves before the watched
                // node's, so that a release between the two is still seen
                // by its marker. All requests leave now, in order.
                let marker_path = marker.map(|marker| child_path(dir, &marker));
                let own_request = own.then(|| client.get_and_watch_data(&self.node));
                let marker_request = marker_path
                    .as_deref()
                    .map(|path| client.check_and_watch_stat(path));
                let watch_request = client.get_and_watch_data(&self.watched_path);
                let requests = async {
                    let own = match own_request {
                        Some(request) => Some(request.await),
                        None => None,
                    };
                    let marker = match marker_request {
                        Some(request) => Some(request.await),
                        None => None,
                    };
                    (own, watch_request.await, marker)
                };
                // Changes of state before the watches were set do not matter.
                while state_now(&mut self.states).is_some() {}
                let Some((own, watched, marker)) = before(self.until, requests).await else {
                    return feed(machine, Input::Deadline);
                };
                let marker = marker.map(|marker| match marker {
                    Ok((None, watcher)) => {
                        self.marker = Some(Box::pin(watcher.changed()));
                        Reply::Ok(false)
                    }
                    // A stranger's marker: its watch is dropped, and with
                    // it removed from the server.
                    Ok((Some(_), _)) => Reply::Ok(true),
                    // Not the acquire's error: the release record decides.
                    Err(e) => error_reply(&e),
                });
                let watched = match watched {
                    Ok((_, stat, watcher)) => {
                        if stat.ephemeral_owner == 0 {
                            self.lock.warn_persistent(&self.watched_path);
                        }
                        self.watched = Some(Box::pin(watcher.changed()));
                        Reply::Ok(())
                    }
                    Err(e) => {
                        if e == zk::Error::NoAuth {
                            self.lock.warn_unreadable(&self.watched_path);
                        }
                        let path = self.watched_path.clone();
                        self.reply(e, &path)
                    }
                };
                // The machine looks at our own node's answer first: its
                // error is the one a failure reports.
                let own = own.map(|own| match own {
                    Ok((data, _, watcher)) => {
                        // Sticky, as the guard's flag: a later write to the
                        // node does not take back a request seen.
                        if is_revocation(&data) {
                            machine.note_revoked();
                        }
                        self.own_watch = Some(Box::pin(watcher.changed()));
                        Reply::Ok(())
                    }
                    Err(e) => {
                        let node = self.node.clone();
                        self.reply(e, &node)
                    }
                });
                self.pump(machine);
                let next = feed(machine, Input::WatchesSet { own, watched, marker });
                if let contender::Action::Acquire(Action::Wait { poll }) = next {
                    debug!(node = %self.node, watch = %self.watched_path, polling = poll, "waiting");
                }
                next
            }
            Action::Wait { poll } => {
                let input = self.wait(poll).await;
                debug!(node = %self.node, input = ?input, "woke up");
                feed(machine, input)
            }
            Action::Rewatch { .. } => {
                let again = before(self.until, client.get_and_watch_data(&self.watched_path)).await;
                self.pump(machine);
                match again {
                    None => feed(machine, Input::Deadline),
                    Some(Ok((_, _, watcher))) => {
                        debug!(node = %self.node, watch = %self.watched_path, "data written to the watched node, which is still there: waiting on");
                        self.watched = Some(Box::pin(watcher.changed()));
                        feed(machine, Input::Rewatched(Reply::Ok(())))
                    }
                    Some(Err(e)) => {
                        let path = self.watched_path.clone();
                        let reply = self.reply(e, &path);
                        feed(machine, Input::Rewatched(reply))
                    }
                }
            }
            Action::ReadRecord { watched } => {
                // One read request, with our own node.
                let node = self.node.as_str();
                let verify = || async {
                    let mut reads = client.new_multi_reader();
                    reads.add_get_data(dir)?;
                    reads.add_get_data(node)?;
                    reads.commit().await
                };
                let read = before(self.until, with_retry(client, verify)).await;
                self.pump(machine);
                let reply = match read {
                    None => return feed(machine, Input::Deadline),
                    Some(Ok(reads)) => match reads.as_slice() {
                        [zk::MultiReadResult::Data { data: record, .. }, mine] => Reply::Ok(Record {
                            names_watched: node_name::record_names(record, &watched),
                            own: match mine {
                                zk::MultiReadResult::Data { .. } => Reply::Ok(()),
                                zk::MultiReadResult::Error { err } => error_reply(err),
                                _ => Reply::Failed,
                            },
                        }),
                        _ => Reply::Failed,
                    },
                    Some(Err(e)) => {
                        debug!(node = %self.node, error = %e, "cannot read the release record: listing again");
                        error_reply(&e)
                    }
                };
                feed(machine, Input::RecordRead(reply))
            }
            Action::CheckOwn => {
                debug!(node = %self.node, "checking our own node before the hand-off");
                let node = self.node.as_str();
                let checked = before(self.until, with_retry(client, || client.check_stat(node))).await;
                self.pump(machine);
                match checked {
                    None => feed(machine, Input::Deadline),
                    Some(Ok(stat)) => feed(machine, Input::OwnChecked(Reply::Ok(stat.is_some()))),
                    Some(Err(e)) => {
                        let node = self.node.clone();
                        let reply = self.reply(e, &node);
                        feed(machine, Input::OwnChecked(reply))
                    }
                }
            }
            // Ends are the contender's own actions, never the wait's.
            Action::Grant { .. } | Action::GiveUp | Action::Fail(_) | Action::Replace { .. } => {
                self.last_error = Some(unexpected("an end of the wait reached its driver"));
                contender::Action::Fail(Failure::Request)
            }
        }
    }

    /// Waits for the next event of an acquire that waits.
    async fn wait(&mut self, poll: bool) -> Input<'static> {
        loop {
            if let Some(input) = self.wait_once(poll).await {
                return input;
            }
        }
    }

    /// Waits for the next event; `None` for an event of the release
    /// marker's watch that is not its creation (a stranger's marker that
    /// existed when watched), which means nothing.
    async fn wait_once(&mut self, poll: bool) -> Option<Input<'static>> {
        let client = &self.lock.inner.client;
        let marker = async {
            match self.marker.as_mut() {
                Some(changed) => changed.await,
                None => std::future::pending().await,
            }
        };
        let own = async {
            match self.own_watch.as_mut() {
                Some(changed) => changed.await,
                None => std::future::pending().await,
            }
        };
        let watched = async {
            if poll {
                return match poll_until_gone(client, &self.watched_path).await {
                    Ok(()) => (Event::Watched(NodeEvent::Deleted), client.state()),
                    Err(e) => {
                        let error = Error::from_zk(e, &self.watched_path);
                        let event = if error.is_session_over() {
                            Event::SessionEnded
                        } else {
                            Event::Watched(NodeEvent::Failed)
                        };
                        self.last_error = Some(error);
                        (event, client.state())
                    }
                };
            }
            match self.watched.as_mut() {
                Some(changed) => {
                    let event = changed.await;
                    (Event::Watched(node_event(&event)), event.session_state)
                }
                // Nothing to wait on: a fresh snapshot decides.
                None => (Event::Watched(NodeEvent::Other), client.state()),
            }
        };
        let deadline = async {
            match self.until {
                Some(until) => tokio::time::sleep_until(until).await,
                None => std::future::pending().await,
            }
        };
        let states = &mut self.states;
        // The session state an event carries: a watch hears of the
        // session's end before `client.state()` says so.
        // The marker's creation and the watched node's deletion come in
        // that order, in the events of one transaction: if both have
        // arrived, the creation is taken first.
        let (input, own_fired, watched_fired, state) = tokio::select! {
            biased;
            event = own => (Input::Event(Event::Own(node_event(&event))), true, false, event.session_state),
            event = marker => {
                self.marker = None;
                if !is_created(&event) {
                    return None;
                }
                (Input::Event(Event::Released), false, false, event.session_state)
            }
            state = states.changed() => (Input::Event(session_event(state)), false, false, state),
            (event, state) = watched => (Input::Event(event), false, !poll, state),
            () = deadline => (Input::Deadline, false, false, client.state()),
        };
        if own_fired {
            self.own_watch = None;
        }
        if watched_fired {
            self.watched = None;
        }
        if let Input::Event(
            Event::SessionEnded
            | Event::Own(NodeEvent::SessionEnded)
            | Event::Watched(NodeEvent::SessionEnded),
        ) = input
        {
            self.ended = Some(state)
                .filter(|state| Error::from_session_state(*state).is_some())
                .or(Some(client.state()));
        }
        Some(input)
    }

    /// Tells the machine what arrived while a request was in flight: our own
    /// node's watch, and the session's state changes.
    fn pump(&mut self, machine: &mut Contender) {
        if let Some(event) = take_ready(&mut self.own_watch) {
            if Error::from_session_state(event.session_state).is_some() {
                self.ended = Some(event.session_state);
            }
            machine.event(Event::Own(node_event(&event)));
        }
        if let Some(event) = take_ready(&mut self.marker) {
            if is_created(&event) {
                machine.event(Event::Released);
            }
        }
        while let Some(state) = state_now(&mut self.states) {
            let event = session_event(state);
            if event == Event::SessionEnded {
                self.ended = Some(state);
            }
            machine.event(event);
        }
    }

    /// The machine's view of a failed request; the error is kept for `Failure::Request`.
    fn reply<T>(&mut self, e: zk::Error, path: &str) -> Reply<T> {
        let reply = error_reply(&e);
        self.last_error = Some(Error::from_zk(e, path));
        reply
    }

    /// The error for a failed acquire.
    async fn failed(&mut self, failure: Failure, pending: &mut Pending) -> Error {
        let lock = self.lock;
        let dir = lock.inner.path.as_str();
        let last_error = self
            .last_error
            .take()
            .or_else(|| pending.requests.last_error.take());
        match failure {
            // Nothing to withdraw (the machine knows): dropping `pending` does it.
            Failure::Lost => lock.gone_error(&self.node),
            Failure::SessionEnded => self
                .ended
                .and_then(Error::from_session_state)
                .unwrap_or_else(|| lock.gone_error(&self.node)),
            Failure::Exhausted => {
                warn!(node = %self.node, "the lock directory's sequence counter is used up: withdrawing");
                let _ = pending.give_up().await;
                Error::SequenceExhausted {
                    path: lock.inner.path.clone(),
                }
            }
            Failure::ListingTooLarge => {
                let refused = pending.machine.refused_listing();
                warn!(node = %self.node, ?refused, "the lock directory's listing is over the limit: withdrawing");
                let (contenders, size, limit) = refused.map_or((0, 0, 0), |r| (r.children, r.size, r.limit));
                // A withdrawal the server refused leaves the node queued:
                // said as a timed-out acquire says it.
                match pending.give_up().await {
                    Err(e) => e,
                    Ok(_) => Error::ListingTooLarge {
                        path: lock.inner.path.clone(),
                        contenders,
                        size,
                        limit,
                    },
                }
            }
            Failure::InvalidName => Error::ZooKeeper(zk::Error::UnexpectedError(format!(
                "the contender node {} is not named as a contender",
                self.node
            ))),
            Failure::Request => {
                let error = match last_error {
                    // Retrying is over and the server still did not answer.
                    Some(Error::ZooKeeper(last)) if is_retryable(&last) => Error::NoAnswer {
                        path: dir.to_owned(),
                        retried_for: lock.inner.client.session_timeout() * 2,
                        last,
                    },
                    Some(error) => error,
                    None => unexpected("the acquire failed"),
                };
                match pending.give_up().await {
                    Err(e) => e,
                    Ok(_) => error,
                }
            }
            Failure::DirectoryHoldsData => match pending.give_up().await {
                Err(e) => e,
                Ok(_) => Error::DirectoryHoldsData { path: dir.to_owned() },
            },
            Failure::NoDirectory => match pending.give_up().await {
                Err(e) => e,
                Ok(_) => Error::from_zk(zk::Error::NoNode, dir),
            },
            // A downgrade's: its writer node is gone, the reader is withdrawn.
            Failure::WriterLost => {
                let _ = pending.give_up().await;
                let writer = pending.machine.replaces().unwrap_or_default();
                lock.gone_error(&child_path(dir, writer))
            }
        }
    }
}

/// Feeds an input of the wait to the contender's machine.
fn feed(machine: &mut Contender, input: Input<'_>) -> contender::Action {
    machine.step(contender::Input::Acquire(input))
}

/// An error for what cannot happen (a driver error), typed, not a panic.
fn unexpected(what: &str) -> Error {
    Error::ZooKeeper(zk::Error::UnexpectedError(what.to_owned()))
}

/// The machine's view of an error.
fn error_reply<T>(e: &zk::Error) -> Reply<T> {
    match e {
        zk::Error::NoNode => Reply::NoNode,
        zk::Error::NoAuth => Reply::NoAuth,
        e if is_retryable(e) => Reply::Retry,
        _ => Reply::Failed,
    }
}

/// The machine's view of a watch event.
pub(super) fn node_event(event: &zk::WatchedEvent) -> NodeEvent {
    if Error::from_session_state(event.session_state).is_some() {
        return NodeEvent::SessionEnded;
    }
    match event.event_type {
        zk::EventType::NodeDeleted => NodeEvent::Deleted,
        zk::EventType::NodeDataChanged => NodeEvent::DataChanged,
        _ => NodeEvent::Other,
    }
}

/// The machine's view of a session state change.
fn session_event(state: zk::SessionState) -> Event {
    if Error::from_session_state(state).is_some() {
        Event::SessionEnded
    } else {
        Event::Interrupted
    }
}

/// Checks with `exists` (which needs no permission) until the node at
/// `path` is gone, pausing between checks as [`Backoff::poll`] says. Fails
/// with the last error once checks fail for good: a non-retryable error,
/// or retryable ones for as long as the policy allows.
async fn poll_until_gone(client: &zk::Client, path: &str) -> Result<(), zk::Error> {
    let backoff = Backoff::poll(client.session_timeout());
    let mut pause = Duration::ZERO;
    let mut failing_since: Option<Instant> = None;
    loop {
        pause = backoff.next(pause);
        tokio::time::sleep(pause).await;
        match client.check_stat(path).await {
            Ok(None) => return Ok(()),
            Ok(Some(_)) => failing_since = None,
            Err(e) if is_retryable(&e) => {
                let since = *failing_since.get_or_insert_with(Instant::now);
                if backoff.gives_up(since.elapsed()) {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// True for the event of a release marker's creation (see
/// [`crate::node_name::release_marker`]).
fn is_created(event: &zk::WatchedEvent) -> bool {
    event.event_type == zk::EventType::NodeCreated
}

/// A pending watch: its event, once it fires.
pub(super) type WatchFuture = std::pin::Pin<Box<dyn std::future::Future<Output = zk::WatchedEvent> + Send>>;

/// The event of a watch that has fired (checked without waiting); a
/// finished watch is taken out, as it must not be polled again.
fn take_ready(watch: &mut Option<WatchFuture>) -> Option<zk::WatchedEvent> {
    let changed = watch.as_mut()?;
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match changed.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(event) => {
            *watch = None;
            Some(event)
        }
        std::task::Poll::Pending => None,
    }
}

/// The next session state change already seen, without waiting.
fn state_now(states: &mut zk::StateWatcher) -> Option<zk::SessionState> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match std::future::Future::poll(std::pin::pin!(states.changed()), &mut cx) {
        std::task::Poll::Ready(state) => Some(state),
        std::task::Poll::Pending => None,
    }
}

/// Runs `fut` unless the deadline passes first (`None` then).
async fn before<T>(until: Option<Instant>, fut: impl std::future::Future<Output = T>) -> Option<T> {
    match until {
        None => Some(fut.await),
        Some(until) => tokio::time::timeout_at(until, fut).await.ok(),
    }
}

/// Waiting until `timeout` from now; forever if that instant is beyond
/// the clock's range (`Duration::MAX`); a zero timeout is `try_*`.
pub(super) fn deadline(timeout: Duration) -> Patience {
    if timeout.is_zero() {
        return Patience::None;
    }
    Instant::now()
        .checked_add(timeout)
        .map_or(Patience::Forever, Patience::Until)
}

/// How long a giving-up acquire (timed out, `try_*` that found the lock
/// taken, or refused at the counter's limit) waits for its node's deletion
/// before it returns; the deletion goes on in the background after that
/// (for example until the client has reconnected). 250 ms.
pub const GIVE_UP_SLACK: Duration = Duration::from_millis(250);

/// How long `try_*` waits for ZooKeeper's answers (it never waits for
/// another contender): when no answer comes in time, for example while
/// the client is disconnected, it gives up with `Ok(None)`. 500 ms.
pub const TRY_TIMEOUT: Duration = Duration::from_millis(500);
