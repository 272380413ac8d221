//! The loop of one acquire, between its machine and whatever carries its
//! requests: the library's driver and the simulation both step a [`Run`],
//! so that neither decides how the loop goes.
//!
//! Sans-IO, as [`super::Carry`] and [`Arrivals`]: the carrier says what
//! time it is and which connection its session is on, and does what
//! [`Run::next`] says; it asks its watches whether they fired and its
//! session whether it changed when [`Run::gather`] and [`Run::pump`] ask, and
//! a wait takes its input from [`Run::arrived`]. What a failed acquire reports
//! comes from [`Run::reported`], with the client's errors the run kept.
//!
//! ```text
//! run = Run::new(deadlines, connection)          (it holds the acquire's watches: run.watches_mut())
//! action = machine.start()
//! loop:
//!     step = run.next(&mut machine, &wire, action, now, connection)
//!     tell step.place if Some; let go of watches.drop_marker() if step.drop_marker
//!     action = match step.next:
//!         Grant, GiveUp, Fail  -> the acquire's end (a failure: run.reported(..));
//!                                 a grant hands watches.take_own() to the guard
//!         Deadline             -> wire::deadline(None, &mut machine)
//!         Wait { poll }        -> plan = run.wait(poll); poll if plan.polls;
//!                                 until run.arrived(now, poll's error) is Some(input),
//!                                 sleep until run.gather(fired, session) says something
//!                                 arrived, a poll ended or run.until(&machine) passed; machine.step(input)
//!         Send(exchange)       -> (exchange, gone) = run.sending(.., exchange, the session's next
//!                                 change seen, the connection now); let go of gone;
//!                                 carry it (until run.until(&machine));
//!                                 run.blamed(error) if it blames one;
//!                                 run.exchanged(&mut machine, &mut wire, &exchange, what it left, fired, session)
//!         Broken(what)         -> a typed error: this cannot happen
//! ```

use super::{Arrivals, Exchange, Fired, Kept, Now, Watches, Watching, Wire};
use crate::acquire::{self, Event, Input, Place};
use crate::contender::{Action, Contender, Deadlines, Failure, Reported, RequestError};
use crate::lease::SessionState;

/// One acquire's loop, besides its machine and its wire: its watches
/// (`W`, the carrier's handle of one: [`Watches`]), what arrived and
/// was not taken ([`Arrivals`]), the deadlines, the connection its requests
/// went on, the place last told, the client's errors a failure may report
/// (`E`, the carrier's error), and the action of an exchange that forgets
/// the session's changes, to build it again if the connection changed as
/// they were forgotten.
#[derive(Debug, Clone)]
pub struct Run<T, E, W> {
    watches: Watches<W>,
    deadlines: Deadlines<T>,
    connection: u64,
    place: Option<Place>,
    arrivals: Arrivals,
    /// The error of the look that ended the wait's poll, when the wait took that end.
    polled: Option<E>,
    /// The error of the request the last exchange blamed ([`Exchange::blame`]).
    blamed: Option<E>,
    /// The action of the last exchange `next` gave that forgets the
    /// session's changes, until [`Run::sending`] takes it.
    forgetting: Option<Action>,
    /// The machine listens to the listing's watch
    /// (`Contender::listens_to_listing`), as of its last action.
    listing: bool,
}

/// What the carrier does next ([`Run::next`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// What to do with the action.
    pub next: Next,
    /// The acquire's new place in the queue, to tell (`Contender::place`,
    /// told when it changes).
    pub place: Option<Place>,
    /// Drop the wait's watch on a release marker, if one is set: the
    /// machine no longer needs it (`Contender::marker_watch_needed`). Its
    /// event not taken yet is gone from [`Run::arrivals`] already.
    pub drop_marker: bool,
}

/// What to do with an action of the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The lock is granted: hand my node, its mark and my node's watch to a guard.
    Grant {
        /// Release with the release record.
        mark: bool,
    },
    /// Not acquired: withdraw my node.
    GiveUp,
    /// The acquire failed (withdrawing as [`Failure::ending`] says).
    Fail(Failure),
    /// The bound on the next step passed before it: the machine is told
    /// ([`super::deadline`] with no exchange).
    Deadline,
    /// Wait for what arrives ([`Run::wait`], [`Run::arrived`]).
    Wait {
        /// The watched nodes may not be read: poll them
        /// (`Contender::polled`) rather than wait on their watches.
        poll: bool,
    },
    /// Send this exchange, dropping first the watches of the kinds it
    /// replaces ([`Exchange::replaces`], but those it keeps,
    /// [`Exchange::kept`]); what they gave and was not taken is gone from
    /// [`Run::arrivals`] already. One that forgets the session's changes
    /// ([`Exchange::forgets_session_changes`]) goes through
    /// [`Run::sending`] first, and the exchange that returns is the one
    /// sent.
    Send(Exchange),
    /// An action an acquire's loop cannot carry out: an end without a
    /// grant, or one that sends nothing. A typed error, never a panic.
    Broken(&'static str),
}

/// How a wait waits ([`Run::wait`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    /// Poll the watched nodes now: the wait polls, and no watched node's
    /// event waits in [`Run::arrivals`] (which it would take instead).
    pub polls: bool,
    /// There is no watched node's watch to wait on and no poll: a fresh
    /// look decides at once ([`Now::nothing_to_watch`]).
    pub nothing_to_watch: bool,
}

impl Wait {
    /// Whether the wait wakes to look ([`Run::arrived`]): something waits
    /// in [`Arrivals`] (`arrived`, as [`Run::gather`] says), its poll ended
    /// (`polled`), its bound passed (`deadline`), or it has nothing to
    /// watch (a fresh look decides at once). Else it sleeps on.
    pub fn wakes(self, arrived: bool, polled: bool, deadline: bool) -> bool {
        arrived || polled || deadline || self.nothing_to_watch
    }
}

impl<T: Copy + Ord, E, W> Run<T, E, W> {
    /// The loop of an acquire bounded by `deadlines`, begun on the
    /// session's connection number `connection`.
    pub fn new(deadlines: Deadlines<T>, connection: u64) -> Run<T, E, W> {
        Run {
            watches: Watches::default(),
            deadlines,
            connection,
            place: None,
            arrivals: Arrivals::default(),
            polled: None,
            blamed: None,
            forgetting: None,
            listing: false,
        }
    }

    /// The instant that bounds the next request or wait of `machine`
    /// ([`Contender::deadline`]).
    pub fn until(&self, machine: &Contender) -> Option<T> {
        machine.deadline(self.deadlines)
    }

    /// The acquire's watches.
    pub fn watches(&self) -> &Watches<W> {
        &self.watches
    }

    /// The acquire's watches, to change: the carrier drops the marker's
    /// when a step says so ([`Step::drop_marker`]), lets go of those an
    /// exchange replaces as it is sent ([`Watches::replace`]), hands my
    /// node's to a guard ([`Watches::take_own`]), and lets go of the rest
    /// as the acquire ends ([`Watches::drain`]).
    pub fn watches_mut(&mut self) -> &mut Watches<W> {
        &mut self.watches
    }

    /// What arrived and was not taken.
    pub fn arrivals(&self) -> &Arrivals {
        &self.arrivals
    }

    /// What arrived and was not taken, to change: the carrier tells it
    /// what its sources gave, and feeds the machine what it takes while a
    /// request is in flight ([`Arrivals::while_carrying`]).
    pub fn arrivals_mut(&mut self) -> &mut Arrivals {
        &mut self.arrivals
    }

    /// The connection number the acquire's requests go on.
    pub fn connection(&self) -> u64 {
        self.connection
    }

    /// What to do with `action`, the machine's, at `now`, on the session's
    /// connection number `connection`:
    /// - the place to tell, if it changed, and whether the marker's watch goes;
    /// - the ends as they are; `Done` is broken (an acquire ends in a grant,
    ///   a give-up or a failure);
    /// - a step of the wait whose bound passed: `Deadline`;
    /// - the wait's `Wait` as it is;
    /// - any other action sends its exchange ([`Wire::exchange`]): if the
    ///   session reconnected since the last, the machine is told first
    ///   (`Contender::connection_changed`), and the events of the watches
    ///   the exchange replaces go ([`Arrivals::replaced`]), as do the
    ///   client's errors of the requests before it; the carrier passes one
    ///   that forgets the session's changes through
    ///   [`Run::sending`] before it sends it.
    pub fn next(
        &mut self,
        machine: &mut Contender,
        wire: &Wire,
        action: Action,
        now: T,
        connection: u64,
    ) -> Step {
        let place = machine
            .place()
            .filter(|place| self.place.as_ref() != Some(*place))
            .cloned();
        if place.is_some() {
            self.place.clone_from(&place);
        }
        self.listing = machine.listens_to_listing();
        let drop_marker = !machine.marker_watch_needed();
        if drop_marker {
            self.arrivals.marker_dropped();
        }
        let next = match action {
            Action::Grant { mark } => Next::Grant { mark },
            Action::GiveUp => Next::GiveUp,
            Action::Fail(failure) => Next::Fail(failure),
            Action::Done(_) => Next::Broken("the acquire ended without a grant"),
            Action::Acquire(_) if self.until(machine).is_some_and(|until| until <= now) => Next::Deadline,
            Action::Acquire(acquire::Action::Wait { poll }) => Next::Wait { poll },
            request => {
                self.reconnected(machine, connection);
                match wire.exchange(&request, machine) {
                    Some(exchange) => {
                        self.arrivals.replaced(&exchange);
                        self.polled = None;
                        self.blamed = None;
                        self.forgetting = exchange.forgets_session_changes().then_some(request);
                        Next::Send(exchange)
                    }
                    None => Next::Broken("an action that is no request reached the carrier"),
                }
            }
        };
        Step {
            next,
            place,
            drop_marker,
        }
    }

    /// The exchange [`Run::next`] gave, as it is sent, and the watches it
    /// lets go of. One that forgets the session's changes
    /// ([`Exchange::forgets_session_changes`]) takes every change seen
    /// until now from the carrier (`changed`, asked until it gives none),
    /// and only then reads the connection its session is on
    /// (`connection`), so that a reconnection among the forgotten changes
    /// is seen; it goes through `Run::forgot_session_changes`. The watches
    /// of the kinds the exchange sets go ([`Watches::replace`], but those
    /// it keeps), for the carrier to let go of ([`super::Lingering`]).
    pub fn sending<S>(
        &mut self,
        machine: &mut Contender,
        wire: &Wire,
        exchange: Exchange,
        mut changed: impl FnMut() -> Option<S>,
        connection: impl FnOnce() -> u64,
    ) -> (Exchange, Vec<Watching<W>>) {
        let exchange = if exchange.forgets_session_changes() {
            while changed().is_some() {}
            self.forgot_session_changes(machine, wire, exchange, connection())
        } else {
            exchange
        };
        let gone = self.watches.replace(&exchange);
        (exchange, gone)
    }

    /// The carrier forgot the session's changes seen until now, as the
    /// exchange `next` gave asks ([`Exchange::forgets_session_changes`]),
    /// and then read the session's connection, `connection`: the exchange
    /// to send. If the session reconnected since `next` read it (a
    /// reconnection whose change the carrier may just have forgotten), the
    /// machine is told, and the exchange is built again from what it knows
    /// now: what it learnt on the old connection (that it reads its node,
    /// so the wait's watches may go in one `SetWatches`) is not trusted on
    /// the new one.
    fn forgot_session_changes(
        &mut self,
        machine: &mut Contender,
        wire: &Wire,
        exchange: Exchange,
        connection: u64,
    ) -> Exchange {
        let Some(action) = self.forgetting.take() else {
            return exchange;
        };
        if !self.reconnected(machine, connection) {
            return exchange;
        }
        wire.exchange(&action, machine).unwrap_or(exchange)
    }

    /// Tells the machine of a reconnection if the session's connection is
    /// no longer the one the acquire's requests went on; true if it was.
    fn reconnected(&mut self, machine: &mut Contender, connection: u64) -> bool {
        let changed = connection != self.connection;
        if changed {
            self.connection = connection;
            machine.connection_changed();
        }
        changed
    }

    /// How a wait that `poll`s waits ([`Wait`]), with the watched nodes'
    /// watches it still holds ([`Watches::watching`]).
    pub fn wait(&self, poll: bool) -> Wait {
        Wait {
            polls: poll && !self.arrivals.has_watched(),
            nothing_to_watch: !poll && !self.watches.watching(),
        }
    }

    /// What the wait takes of all that arrived and what it found `now`
    /// ([`Arrivals::next`]); `None`: nothing, wait on. If it takes a poll's
    /// end, the error of the look that ended it (`polled_error`) is what
    /// a failure reports.
    pub fn arrived(&mut self, now: Now, polled_error: Option<E>) -> Option<Input<'static>> {
        let taken = self.arrivals.next(now)?;
        if let Some(error) = polled_error.filter(|_| taken.polled) {
            self.polled = Some(error);
        }
        Some(taken.input)
    }

    /// Asks the sources of a wait what they gave and tells [`Arrivals`]:
    /// the watches ([`Watches::collect`], each asked with `fired`) and the
    /// session's state (`session`: its next change already seen, if any;
    /// asked only while no change waits here). True if anything waits here
    /// now: a wait then looks ([`Run::arrived`]); otherwise it sleeps until
    /// a source has something, a poll ended or the deadline passed.
    pub fn gather(
        &mut self,
        fired: impl FnMut(&mut W) -> Fired,
        session: impl FnOnce() -> Option<SessionState>,
    ) -> bool {
        self.watches.collect(&mut self.arrivals, self.listing, fired);
        if !self.arrivals.has_session() {
            if let Some(state) = session() {
                self.arrivals.session(state);
            }
        }
        !self.arrivals.is_empty()
    }

    /// Tells the machine (`feed`: `Contender::event`) what arrived while a request was in flight, as
    /// the exchange's answers are in and before they are settled: my own
    /// node's watch, the release marker's, and the session's changes, all
    /// of it, asked again until a look feeds nothing more
    /// ([`Arrivals::while_carrying`]); the watched nodes' events stay for the
    /// wait.
    pub fn pump(
        &mut self,
        mut fired: impl FnMut(&mut W) -> Fired,
        mut session: impl FnMut() -> Option<SessionState>,
        mut feed: impl FnMut(Event),
    ) {
        loop {
            self.gather(&mut fired, &mut session);
            let events = self.arrivals.while_carrying();
            if events.is_empty() {
                return;
            }
            for event in events {
                feed(event);
            }
        }
    }

    /// What comes of an exchange `machine` sent, now that every answer is
    /// in (`exchange`, carried to its end): the watches its answers left
    /// are kept (`kept`, [`Watches::keep`]); what arrived meanwhile is fed
    /// to the machine ([`Run::pump`], its sources asked with `fired` and
    /// `session`); the machine keeps only the watched nodes' watches still
    /// set ([`Watches::pending_watched`]); and the answers are settled
    /// ([`Stepping::settle`]): the machine's next action. (The error of the
    /// request the exchange blamed, if any, is told first: [`Run::blamed`].)
    pub fn exchanged(
        &mut self,
        machine: &mut impl Stepping,
        wire: &mut Wire,
        exchange: &Exchange,
        kept: Vec<Kept<W>>,
        fired: impl FnMut(&mut W) -> Fired,
        session: impl FnMut() -> Option<SessionState>,
    ) -> Action {
        self.watches.keep(kept);
        self.pump(fired, session, |event| machine.event(event));
        let pending = self.watches.pending_watched();
        machine.contender().watches_pending(&pending);
        machine.settle(wire, exchange)
    }

    /// The exchange carried blamed a request that failed with `error`
    /// ([`Exchange::blame`]): what a failure reports, if no poll's error
    /// came after it.
    pub fn blamed(&mut self, error: E) {
        self.blamed = Some(error);
    }

    /// What the acquire that failed with `failure` reports
    /// ([`Failure::reported`]), the session being in state `now`: the
    /// client's last error (a poll's before a request's, classified by
    /// `classify`) and the session's end an event told are taken from here.
    pub fn reported<'m, F>(
        &mut self,
        failure: Failure,
        machine: &'m Contender,
        now: SessionState,
        classify: impl FnOnce(E) -> RequestError<F>,
    ) -> Reported<'m, F> {
        let last = self.polled.take().or_else(|| self.blamed.take()).map(classify);
        failure.reported(machine, last, self.arrivals.ended(), now)
    }
}

/// The machine an acquire's loop steps ([`Run::exchanged`]): the
/// contender's own, or one that stands in for it and may misread on
/// purpose (a test's).
pub trait Stepping {
    /// The contender's machine.
    fn contender(&mut self) -> &mut Contender;

    /// Tells the machine what arrived while a request was in flight
    /// (`Contender::event`).
    fn event(&mut self, event: Event) {
        self.contender().event(event);
    }

    /// The machine's next action, now that the answers of `exchange` are
    /// in ([`Wire::settle`]).
    fn settle(&mut self, wire: &mut Wire, exchange: &Exchange) -> Action {
        wire.settle(exchange, self.contender())
    }
}

impl Stepping for Contender {
    fn contender(&mut self) -> &mut Contender {
        self
    }
}

#[cfg(test)]
mod tests;
