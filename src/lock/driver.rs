//! The driver of an acquire: creates the contender node, performs the
//! actions of [`crate::acquire`]'s machine on the ZooKeeper client, and
//! feeds back what came of them (the run loop in that module's
//! documentation).

use std::sync::Mutex;

use tokio::time::Instant;
use tracing::{debug, info_span, Instrument};
use uuid::Uuid;

use super::carrier::{poll_until_one_gone, request_error, Carrier};
use super::held::{Failed, Held, Pending};
use super::notice::log_warning;
use super::wire::{fired, poll_watch, session_state, state_now, WatchFuture};
use super::{Patience, SharedLock, TRY_TIMEOUT};
use crate::acquire::{self, Counts, Input, NodeEvent};
use crate::backoff::Backoff;
use crate::connect::diagnose_no_node;
use crate::contender::{self, child_path, Blame, Contender, Downgrading, Ending, Failure};
use crate::error::Error;
use crate::node_name::Mode;
use crate::stats::End;
use crate::wire::{self, Lingering, Next, Now, Run, Watching};
use crate::zk;

/// Where an acquire publishes its place in the queue.
pub(super) type Places = tokio::sync::watch::Sender<Option<acquire::Place>>;

impl SharedLock {
    /// The acquire loop: create, snapshot, decide, act.
    pub(super) async fn acquire_held(&self, mode: Mode, patience: Patience) -> Result<Option<Held>, Error> {
        self.acquire_placed(mode, patience, None).await
    }

    /// [`SharedLock::acquire_held`], publishing the acquire's place in the
    /// queue on `place` (each listing's, [`Contender::place`]).
    pub(super) async fn acquire_placed(
        &self,
        mode: Mode,
        patience: Patience,
        place: Option<&Places>,
    ) -> Result<Option<Held>, Error> {
        let span = info_span!("acquire", lock = %self.inner.path, mode = %mode);
        let waiter = self.inner.stats.started(mode);
        let mut counts = Counts::default();
        let result = self
            .acquire_inner(mode, patience, &mut counts, None, place)
            .instrument(span)
            .await
            .map_err(|failed| failed.error);
        // Neither the directory nor its parents could be created: a missing
        // chroot is the one cause the server does not name.
        let result = diagnose_no_node(&self.inner.client, &self.inner.path, result).await;
        waiter.finish(End::of(&result), counts);
        result
    }

    /// The driver of a contender's acquire: performs the machine's actions
    /// and feeds back what came of them (the run loop of
    /// [`crate::contender`]).
    pub(super) async fn acquire_inner(
        &self,
        mode: Mode,
        patience: Patience,
        counts: &mut Counts,
        replacing: Option<&Downgrading>,
        place: Option<&Places>,
    ) -> Result<Option<Held>, Failed> {
        let inner = &self.inner;
        let client = &inner.client;
        let token = Uuid::new_v4();
        // Every session state change from here on: after a reconnect, the
        // client re-registers watches in no particular order, so events of
        // our own node and of the watched node may come in either order.
        let states = client.state_watcher();
        let start = Instant::now();
        // What this session learnt of reading its nodes holds for the
        // connection it learnt it on.
        let connection = client.connections();
        let deadlines = patience.deadlines(start, start + TRY_TIMEOUT);
        let machine = inner.contender(mode, patience.may_wait(), token, connection, place.is_some());
        let Some(prefix) = machine.prefix(&inner.identity) else {
            return Err(Error::UnsupportedMode {
                layout: inner.layout,
                mode,
            }
            .into());
        };
        let machine = match replacing {
            Some(d) => machine.replacing(&d.writer, d.mark, d.revoked),
            None => machine,
        };
        // From here on, dropping this future withdraws whatever node it made.
        let mut pending = Pending::new(self.inner.clone(), Carrier::new(inner, &prefix), machine);
        let mut driver = Driver {
            lock: self,
            states,
            node: String::new(),
            polled: Vec::new(),
            run: Run::new(deadlines, connection),
        };
        let mut action = pending.machine.start();
        loop {
            *counts = pending.machine.counts();
            let machine = &mut pending.machine;
            let step = driver.run.next(
                machine,
                &pending.carrier.wire,
                action,
                Instant::now(),
                client.connections(),
            );
            if let (Some(places), Some(now)) = (place, step.place) {
                places.send_replace(Some(now));
            }
            if step.drop_marker {
                // Dropping it removes it from the server, unless it fired.
                drop(driver.run.watches_mut().drop_marker());
            }
            if let (true, Some(name)) = (driver.node.is_empty(), machine.node()) {
                driver.node = child_path(&inner.path, name);
            }
            action = match step.next {
                Next::Grant { .. } => {
                    debug!(node = %driver.node, handoff = counts.handoff, "granted");
                    let own_watch = driver.run.watches_mut().take_own();
                    let holder = inner.stats.holder(mode, client);
                    return Ok(Some(pending.grant(own_watch, holder)));
                }
                Next::GiveUp => {
                    debug!(node = %driver.node, "giving up");
                    return Ok(pending.give_up().await?);
                }
                Next::Fail(failure) => {
                    return Err(Failed {
                        error: driver.failed(failure, &mut pending).await,
                        failure: Some(failure),
                    })
                }
                Next::Broken(what) => return Err(Error::unexpected(what).into()),
                // The bound passed before the wait's next step (a request, or waiting).
                Next::Deadline => wire::deadline(None, machine),
                Next::Wait { poll } => {
                    driver.polled = machine
                        .polled()
                        .iter()
                        .map(|n| child_path(&inner.path, n))
                        .collect();
                    if let Some(first) = driver.polled.first() {
                        inner.warn_unreadable(first);
                    }
                    debug!(node = %driver.node, watching = ?driver.run.watches().pending_watched(), polling = poll, "waiting");
                    let until = driver.run.until(machine);
                    let input = driver.wait(poll, until).await;
                    debug!(node = %driver.node, input = ?input, "woke up");
                    feed(&mut pending.machine, input)
                }
                Next::Send(exchange) => {
                    // The client counts a connection before it says
                    // `Connected` (`Client::connections`): a reconnection
                    // after the read leaves its `Connected` for the wait,
                    // which it interrupts.
                    let changed = || state_now(&mut driver.states);
                    let connection = || client.connections();
                    let wire = &pending.carrier.wire;
                    let (exchange, gone) = driver.run.sending(machine, wire, exchange, changed, connection);
                    for watching in gone {
                        inner.leftovers.let_go(watching);
                    }
                    let until = driver.run.until(machine);
                    let carrier = &mut pending.carrier;
                    let mut carrying = carrier.carrying(exchange);
                    match before(until, carrier.carry_on(&mut carrying)).await {
                        None => {
                            debug!("the deadline passed during {:?}", carrying.exchange().requests());
                            wire::deadline(Some(carrying.exchange()), &mut pending.machine)
                        }
                        Some(()) => {
                            let (exchange, kept) = carrier.finished(carrying);
                            if let Some(blamed) = carrier.last_error.take() {
                                driver.run.blamed(blamed);
                            }
                            let states = &mut driver.states;
                            let session = || state_now(states).map(session_state);
                            let (machine, wire) = (&mut pending.machine, &mut carrier.wire);
                            let next = driver
                                .run
                                .exchanged(machine, wire, &exchange, kept, fired, session);
                            for notice in exchange.notices(&pending.machine) {
                                inner.notice(notice);
                            }
                            inner.learnt(&pending.machine, driver.run.connection());
                            next
                        }
                    }
                }
            };
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
    /// The watched nodes a wait polls (those it may not read), full paths.
    polled: Vec<String>,
    /// The loop's state besides the machine ([`Run`]): the pending
    /// watches (my node's, the release marker's, the watched nodes'), what
    /// they and the session's state gave and the machine did not take yet,
    /// and the client's errors a failure reports, each with the path of
    /// its request.
    run: Run<Instant, (zk::Error, String), WatchFuture>,
}

/// The watches a lock's waits left to fire ([`Lingering`]).
#[derive(Default)]
pub(super) struct Leftovers(Mutex<Lingering<WatchFuture>>);

impl Leftovers {
    /// Takes a watch a wait no longer needs ([`Lingering::let_go`]); one
    /// that does not linger is dropped here, without the lock.
    fn let_go(&self, watching: Watching<WatchFuture>) {
        if !watching.lingers {
            return;
        }
        if let Ok(mut kept) = self.0.lock() {
            kept.let_go(watching, |watch| fired(watch).is_some());
        }
    }
}

impl Drop for Driver<'_> {
    /// The wait's watches left to fire go to the lock's store.
    fn drop(&mut self) {
        for watching in self.run.watches_mut().drain() {
            self.lock.inner.leftovers.let_go(watching);
        }
    }
}

/// What a wait found besides what it told [`Arrivals`] ([`Driver::gather`]):
/// taken now or never.
struct Found {
    /// Polling a watched node ended: the event, and the client's error
    /// behind a failure with the path of the node it polled.
    polled: Option<(NodeEvent, Option<(zk::Error, String)>)>,
    /// There was no watched node's watch to wait on (and no poll) when the
    /// wait began.
    nothing_to_watch: bool,
    deadline: bool,
}

impl Driver<'_> {
    /// Waits for the next event of an acquire that waits, until `until`:
    /// the first that the machine takes of all that arrived ([`Run::arrived`]).
    async fn wait(&mut self, poll: bool, until: Option<Instant>) -> Input<'static> {
        loop {
            let found = self.gather(poll, until).await;
            let client = &self.lock.inner.client;
            let (polled, error) = found.polled.unzip();
            let now = Now {
                state: session_state(client.state()),
                polled,
                nothing_to_watch: found.nothing_to_watch,
                deadline: found.deadline,
            };
            if let Some(input) = self.run.arrived(now, error.flatten()) {
                return input;
            }
        }
    }

    /// Waits until at least one source of the wait has something (or
    /// something waits in [`Arrivals`]): my node's watch, the marker's,
    /// the session's state, the watched nodes' watches (or their polling,
    /// with `poll`; or at once if there is no watch to wait on: a fresh
    /// look decides), the deadline. What the watches and the session gave
    /// goes to [`Arrivals`]; the rest is returned.
    async fn gather(&mut self, poll: bool, until: Option<Instant>) -> Found {
        use std::future::Future;
        let plan = self.run.wait(poll);
        let client = self.lock.inner.client.clone();
        let polled_paths = self.polled.clone();
        let mut polled = std::pin::pin!(async {
            if plan.polls {
                poll_until_one_gone(&client, &polled_paths).await
            } else {
                std::future::pending().await
            }
        });
        let mut deadline = std::pin::pin!(async {
            match until {
                Some(until) => tokio::time::sleep_until(until).await,
                None => std::future::pending().await,
            }
        });
        let Driver { states, run, .. } = self;
        let mut changed = std::pin::pin!(states.changed());
        std::future::poll_fn(|cx| {
            let waker = cx.waker();
            let session = || match changed.as_mut().poll(&mut std::task::Context::from_waker(waker)) {
                std::task::Poll::Ready(state) => Some(session_state(state)),
                std::task::Poll::Pending => None,
            };
            let fired =
                |watch: &mut WatchFuture| poll_watch(watch, &mut std::task::Context::from_waker(waker));
            let arrived = run.gather(fired, session);
            let found = Found {
                polled: match polled.as_mut().poll(cx) {
                    std::task::Poll::Ready(polled) => Some(polled),
                    std::task::Poll::Pending => None,
                },
                nothing_to_watch: plan.nothing_to_watch,
                deadline: deadline.as_mut().poll(cx).is_ready(),
            };
            if plan.wakes(arrived, found.polled.is_some(), found.deadline) {
                std::task::Poll::Ready(found)
            } else {
                std::task::Poll::Pending
            }
        })
        .await
    }

    /// The error for a failed acquire: the node withdrawn first if the
    /// machine says so (warning first of what it says, [`Failure::warning`]),
    /// and the withdrawal's refusal reported instead if it wins
    /// ([`Failure::ending`], [`Ending::blame`]); else what the machine
    /// reports ([`Failure::reported`]).
    async fn failed(&mut self, failure: Failure, pending: &mut Pending) -> Error {
        let ending = failure.ending();
        let refusal = match ending {
            Ending::Report => None,
            Ending::Withdraw { .. } => {
                if let Some(warning) = failure.warning(&pending.machine) {
                    log_warning(&self.node, warning);
                }
                pending.give_up().await.err()
            }
        };
        match (ending.blame(refusal.is_some()), refusal) {
            (Blame::Withdrawal, Some(refusal)) => refusal,
            _ => {
                let now = session_state(self.lock.inner.client.state());
                let reported = self.run.reported(failure, &pending.machine, now, request_error);
                let retried_for = Backoff::request(self.lock.inner.client.session_timeout()).give_up_after;
                Error::reported(reported, &self.lock.inner.path, retried_for.unwrap_or_default())
            }
        }
    }
}

/// Feeds an input of the wait to the contender's machine.
fn feed(machine: &mut Contender, input: Input<'_>) -> contender::Action {
    machine.step(contender::Input::Acquire(input))
}

/// Runs `fut` unless the deadline passes first (`None` then).
async fn before<T>(until: Option<Instant>, fut: impl std::future::Future<Output = T>) -> Option<T> {
    match until {
        None => Some(fut.await),
        Some(until) => tokio::time::timeout_at(until, fut).await.ok(),
    }
}
