//! An election's observer: [`Observing`].

use std::time::Duration;

use crate::backoff::Backoff;
use crate::lease::SessionState;
use crate::wire::Error;

/// What the observer does before a look, from the session's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeforeLook {
    /// Look (connected).
    Look,
    /// Cut off: look again once the session's state changes.
    AwaitState,
    /// The session ended: tell the listeners no one is known to lead, and
    /// stop.
    Stop,
}

/// What the observer does after a look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterLook<L> {
    /// Tell the listeners who the look found leads (`L`: what it found), and
    /// wait for its watch (or a change of the session's state).
    Publish(L),
    /// A lost answer: the last leader told stands; look again after this
    /// pause (or a change of the session's state).
    Retry(Duration),
    /// The look failed otherwise (the head cannot be read, say): who leads
    /// is unknown until a look succeeds, not the last leader told; tell the
    /// listeners `None`, and look again after this pause (or a change of
    /// the session's state).
    Unknown(Duration),
    /// The session ended: tell the listeners no one is known to lead, and
    /// stop.
    Stop,
}

/// An election's observer, sans-IO: when it looks at who leads
/// ([`super::Look`]), what it tells its listeners after a look, and when it
/// stops. Its carrier waits on the look's watch, the session's state, the
/// pause after a failed look, and the listeners leaving.
///
/// ```text
/// observing = Observing::new()
/// loop:
///     match observing.before_look(session state now):
///         Stop => tell None; stop
///         AwaitState => wait for a change of the session's state
///         Look => match observing.looked(look's outcome):
///             Publish(found) => tell who leads; wait for the look's watch or a change of state
///             Retry(pause) => wait for the pause or a change of state
///             Unknown(pause) => tell None; wait for the pause or a change of state
///             Stop => tell None; stop
/// ```
#[derive(Debug, Clone, Default)]
pub struct Observing {
    /// The pause after the last failed look (zero after one that succeeded).
    pause: Duration,
}

impl Observing {
    /// An observer that has not looked yet.
    pub fn new() -> Observing {
        Observing::default()
    }

    /// What to do with the session in `state`.
    pub fn before_look(&self, state: SessionState) -> BeforeLook {
        match state {
            SessionState::Connected => BeforeLook::Look,
            state if state.is_over() => BeforeLook::Stop,
            _ => BeforeLook::AwaitState,
        }
    }

    /// What a look came to: what it found (`Ok`), or the error that ended
    /// it.
    pub fn looked<L>(&mut self, outcome: Result<L, Error>) -> AfterLook<L> {
        match outcome {
            Ok(found) => {
                self.pause = Duration::ZERO;
                AfterLook::Publish(found)
            }
            Err(Error::SessionEnded) => AfterLook::Stop,
            Err(Error::Unanswered) => {
                self.pause = Backoff::OBSERVER.next(self.pause);
                AfterLook::Retry(self.pause)
            }
            Err(_) => {
                self.pause = Backoff::OBSERVER.next(self.pause);
                AfterLook::Unknown(self.pause)
            }
        }
    }
}

#[cfg(test)]
mod tests;
