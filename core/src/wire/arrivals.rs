//! What arrived for an acquire and was not taken yet: the events of my own
//! node's watch, the release marker's, the session's state and the watched
//! nodes' watches.
//!
//! Sans-IO, as [`super::Carry`]: a carrier tells [`Arrivals`] each event as
//! its source gives it, and takes what the machine takes, when it takes
//! it: during a request, my own node's, the marker's and the session's, in
//! full ([`Arrivals::while_carrying`]); when the wait wakes, the first of
//! all that arrived ([`Arrivals::next`]); the rest stays for the next look.
//! The order is the machine's ([`Arrived::in_order`]). When an exchange is
//! sent, the events of the watches it replaces go ([`Arrivals::replaced`]).
//!
//! ```text
//! arrivals = Arrivals::default()
//! each exchange:  arrivals.replaced(&exchange); carry it
//!                 tell arrivals what fired meanwhile; feed machine.event(e) for e in arrivals.while_carrying()
//! each wait:      until arrivals.next(now) is Some(taken) (now: a poll's end, no watch to wait on,
//!                 the deadline, the session's state): wait for a source, tell arrivals what it gave
//! ```

use std::collections::VecDeque;

use super::{Exchange, Watch};
use crate::acquire::{Arrived, Event, Input, NodeEvent, Source, WatchedKind};
use crate::lease::SessionState;

/// What arrived and was not taken: at most one event of my own node's
/// watch, of the marker's and of the session (each source gives one, and
/// is not asked again until it is taken), and the watched nodes' events,
/// one per node, in the order they were told. Also the session's end, once
/// an event said so: the state a failed acquire reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Arrivals {
    own: Option<(NodeEvent, SessionState)>,
    marker: Option<WatchedKind>,
    session: Option<SessionState>,
    watched: VecDeque<(String, NodeEvent, SessionState)>,
    /// The listing's watch on the directory's children: taken only by a
    /// wait, after the watched nodes' ([`Arrived::in_order`]).
    listing: Option<(NodeEvent, SessionState)>,
    ended: Option<SessionState>,
}

/// What a wait found besides what was told to [`Arrivals`]: it is taken now
/// or never (a poll that ended and was not taken polls again; the deadline
/// is looked at again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// The session's state now.
    pub state: SessionState,
    /// Polling a watched node ended with this event.
    pub polled: Option<NodeEvent>,
    /// The wait has no watched node's watch to wait on (and polls none): a
    /// fresh look decides, at once.
    pub nothing_to_watch: bool,
    /// The deadline passed.
    pub deadline: bool,
}

impl Now {
    /// Nothing but the session's state: what a wait that found nothing
    /// besides the arrivals tells.
    pub fn quiet(state: SessionState) -> Now {
        Now {
            state,
            polled: None,
            nothing_to_watch: false,
            deadline: false,
        }
    }
}

/// What a wait takes ([`Arrivals::next`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The machine's input.
    pub input: Input<'static>,
    /// Taken from the end of a poll ([`Now::polled`]): the poll's error, if
    /// it failed, is the acquire's.
    pub polled: bool,
}

impl Arrivals {
    /// My own node's watch fired with an event of `kind`, carrying the
    /// session's `state`.
    pub fn own(&mut self, kind: WatchedKind, state: SessionState) {
        self.own = Some((NodeEvent::of(kind, state), state));
    }

    /// The release marker's watch fired with an event of `kind`.
    pub fn marker(&mut self, kind: WatchedKind) {
        self.marker = Some(kind);
    }

    /// The marker's watch is dropped (the machine no longer needs it:
    /// `Contender::marker_watch_needed`): its event, if one waits here,
    /// goes with it.
    pub fn marker_dropped(&mut self) {
        self.marker = None;
    }

    /// The session's state changed to `state`.
    pub fn session(&mut self, state: SessionState) {
        self.session = Some(state);
    }

    /// The watch on the watched node at `path` fired with an event of
    /// `kind`, carrying the session's `state`. A node's later event takes
    /// the place of one not taken (its watch fires once; a new watch is
    /// set only by an exchange, which drops the old one's event first).
    pub fn watched(&mut self, path: &str, kind: WatchedKind, state: SessionState) {
        self.watched.retain(|(p, _, _)| p != path);
        self.watched
            .push_back((path.to_owned(), NodeEvent::of(kind, state), state));
    }

    /// The watch the last listing left on the directory's children fired
    /// with an event of `kind`, carrying the session's `state`.
    pub fn listing(&mut self, kind: WatchedKind, state: SessionState) {
        self.listing = Some((NodeEvent::of(kind, state), state));
    }

    /// True if an event of the listing's watch waits here.
    pub fn has_listing(&self) -> bool {
        self.listing.is_some()
    }

    /// True if an event of my own node's watch waits here: its source is
    /// not asked again until it is taken.
    pub fn has_own(&self) -> bool {
        self.own.is_some()
    }

    /// True if an event of the marker's watch waits here.
    pub fn has_marker(&self) -> bool {
        self.marker.is_some()
    }

    /// True if a change of the session's state waits here.
    pub fn has_session(&self) -> bool {
        self.session.is_some()
    }

    /// True if a watched node's event waits here: a wait then takes it, not
    /// a poll's end (so it need not poll).
    pub fn has_watched(&self) -> bool {
        !self.watched.is_empty()
    }

    /// True if nothing waits here.
    pub fn is_empty(&self) -> bool {
        self.own.is_none()
            && self.marker.is_none()
            && self.session.is_none()
            && self.watched.is_empty()
            && self.listing.is_none()
    }

    /// True if the watched node at `path` has an event here: its watch
    /// fired, and is no longer pending.
    #[cfg(test)]
    fn fired(&self, path: &str) -> bool {
        self.watched.iter().any(|(p, _, _)| p == path)
    }

    /// The session's end an event told (expired, closed, authentication
    /// failed), if one did: what a failed acquire reports.
    pub fn ended(&self) -> Option<SessionState> {
        self.ended
    }

    /// An exchange is sent: the events of the watches it sets anew go
    /// ([`Exchange::replaces`]), a watched node's unless the exchange keeps
    /// its watch ([`Exchange::kept`]), and the session's changes seen
    /// before the wait's watches are set ([`Exchange::forgets_session_changes`]).
    pub fn replaced(&mut self, exchange: &Exchange) {
        let replaced = exchange.replaces();
        if replaced.contains(&Watch::Own) {
            self.own = None;
        }
        if replaced.contains(&Watch::Marker) {
            self.marker = None;
        }
        if replaced.contains(&Watch::Watched) {
            let kept = exchange.kept();
            self.watched.retain(|(path, _, _)| kept.contains(path));
        }
        if replaced.contains(&Watch::Listing) {
            self.listing = None;
        }
        if exchange.forgets_session_changes() {
            self.session = None;
        }
    }

    /// What the machine takes while a request is in flight: my own node's
    /// event, the marker's and the session's change, all that arrived, in
    /// its order ([`Arrived::in_order`]), less what means nothing (a marker's
    /// event that is not its creation). The watched nodes' events and the
    /// listing's stay for the wait (the machine listens to them only while
    /// it waits).
    pub fn while_carrying(&mut self) -> Vec<Event> {
        let own = self.own.take();
        let session = self.session.take();
        for state in own.map(|(_, state)| state).into_iter().chain(session) {
            if state.is_over() {
                self.ended = Some(state);
            }
        }
        let arrived = Arrived {
            own: own.map(|(event, _)| event),
            marker: self.marker.take(),
            session,
            ..Arrived::default()
        };
        arrived
            .in_order()
            .into_iter()
            .filter_map(|(_, input)| match input {
                Some(Input::Event(event)) => Some(event),
                _ => None,
            })
            .collect()
    }

    /// What a wait takes: the first of all that arrived and of what it
    /// found `now`, in the machine's order ([`Arrived::in_order`]); `None`
    /// if nothing did. What comes before it and means nothing (a marker's
    /// event that is not its creation) is dropped; what comes after it
    /// stays here (but what `now` found).
    pub fn next(&mut self, now: Now) -> Option<Taken> {
        let first_watched = self.watched.front().map(|(_, event, state)| (*event, *state));
        let polled = first_watched.is_none() && now.polled.is_some();
        let watched = first_watched
            .or_else(|| now.polled.map(|event| (event, now.state)))
            .or_else(|| now.nothing_to_watch.then_some((NodeEvent::Other, now.state)));
        let arrived = Arrived {
            own: self.own.map(|(event, _)| event),
            marker: self.marker,
            session: self.session,
            watched: watched.map(|(event, _)| event),
            listing: self.listing.map(|(event, _)| event),
            deadline: now.deadline,
        };
        for (source, input) in arrived.in_order() {
            // The session's state the event carries: a watch hears of the
            // session's end before the session's state says so.
            let state = match source {
                Source::Own => self.own.take().map(|(_, state)| state),
                Source::Marker => self.marker.take().map(|_| now.state),
                Source::Session => self.session.take(),
                Source::Watched => {
                    if first_watched.is_some() {
                        self.watched.pop_front();
                    }
                    watched.map(|(_, state)| state)
                }
                Source::Listing => self.listing.take().map(|(_, state)| state),
                Source::Deadline => None,
            }
            .unwrap_or(now.state);
            let Some(input) = input else {
                continue;
            };
            if let Input::Event(
                Event::SessionEnded
                | Event::Own(NodeEvent::SessionEnded)
                | Event::Watched(NodeEvent::SessionEnded)
                | Event::Listing(NodeEvent::SessionEnded),
            ) = input
            {
                self.ended = Some(if state.is_over() { state } else { now.state });
            }
            return Some(Taken {
                input,
                polled: polled && source == Source::Watched,
            });
        }
        None
    }
}

#[cfg(test)]
mod tests;
