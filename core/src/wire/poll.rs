//! Polling a node that a wait cannot watch: its ACL refuses this identity
//! READ, so the server would set no watch on it and deliver no event
//! (`Wait { poll: true }`, [`crate::acquire::Acquire::polled`]).
//!
//! Sans-IO, as [`super::Carry`]: a carrier sends [`Poll::request`] after
//! each pause [`Poll::pause`] gives, and hands each answer to
//! [`Poll::looked`], which says when the poll is over. The carrier owns the
//! clock: it tells how long the poll has run when an answer comes.
//!
//! ```text
//! poll = Poll::new(path, Backoff::poll(session timeout))
//! loop:
//!     sleep(poll.pause())
//!     answer = send(poll.request())
//!     if let Some(event) = poll.looked(&answer, time since the poll began): the wait's event
//! ```

use std::time::Duration;

use super::{poll, polled, Error, Reply, Request};
use crate::acquire::NodeEvent;
use crate::backoff::Backoff;

/// The poll of one node, until a look finds it gone, the session over, or
/// looking failed for longer than its [`Backoff`] retries.
#[derive(Clone, Debug)]
pub struct Poll {
    request: Request,
    backoff: Backoff,
    /// The pause before the last look (zero before the first).
    pause: Duration,
    /// When the answers began to be lost, counted from the poll's start;
    /// `None` while the last look was answered.
    failing_since: Option<Duration>,
}

impl Poll {
    /// The poll of the node at `path`, pausing and giving up as `backoff`
    /// says.
    pub fn new(path: &str, backoff: Backoff) -> Poll {
        Poll {
            request: poll(path),
            backoff,
            pause: Duration::ZERO,
            failing_since: None,
        }
    }

    /// The request of every look: an `exists` without a watch ([`poll`]).
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The pause before the next look: each one longer than the one
    /// before, as the back-off says, from its first.
    pub fn pause(&mut self) -> Duration {
        self.pause = self.backoff.next(self.pause);
        self.pause
    }

    /// What a look found ([`polled`]), its answer come `at` after the poll
    /// began: the event that ends the poll, or `None` to look again. A lost
    /// answer ends it with [`NodeEvent::Failed`] once the answers have been
    /// lost for longer than the back-off gives up after; an answered look
    /// (the node there, or a refusal that says it is there) starts that
    /// count again.
    pub fn looked(&mut self, answer: &Result<Reply, Error>, at: Duration) -> Option<NodeEvent> {
        if let Some(event) = polled(answer) {
            return Some(event);
        }
        if !matches!(answer, Err(e) if *e.cause() == Error::Unanswered) {
            self.failing_since = None;
            return None;
        }
        let since = *self.failing_since.get_or_insert(at);
        self.backoff
            .gives_up(at.saturating_sub(since))
            .then_some(NodeEvent::Failed)
    }
}

#[cfg(test)]
mod tests;
