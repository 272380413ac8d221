//! Carrying one [`Exchange`]: the interpreter both carriers run, the
//! library's on the ZooKeeper client and the simulation's on its model of
//! the server. A carrier sends what [`Carry::poll_send`] gives, as it is,
//! and hands each answer back to [`Carry::answered`] in the order the
//! requests were sent; everything else is decided here:
//!
//! - every request leaves at once, in the exchange's order; a follow-up
//!   ([`Progress::Send`]) once the answer it follows is in;
//! - a request whose answer was lost (a broken connection, or an answer
//!   that does not [answer](Exchange::accepts) it) is sent again if the
//!   exchange [retries](Exchange::retried) it, after the pause
//!   [`Backoff`] says, until it is answered or retrying is over (counted
//!   from when the carrier began, or from the first answer of a request
//!   [sent ahead](Carry::sent_ahead)); only its last answer is fed;
//! - each watch an answer left is kept, with whose it is, its node's path
//!   and whether it [lingers](Exchange::lingers), or dropped
//!   ([`Exchange::watch`]);
//! - the error that a failure reports is the one of the request the
//!   exchange [blames](Exchange::blame).
//!
//! ```text
//! carry = Carry::new(exchange, backoff)
//! loop {
//!     while let Some(send) = carry.poll_send() { send it (after send.after) }
//!     if carry.is_complete() { break }
//!     carry.answered(index, answer, how long since the carrier began)
//! }
//! let Carried { exchange, kept, blamed } = carry.finish()
//! ```

use std::collections::VecDeque;
use std::time::Duration;

use super::{Error, Exchange, Progress, Reply, Request, Watch};
use crate::backoff::Backoff;

/// A request to send now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Send {
    /// Which of the exchange's requests it is: its answer is fed with it.
    pub index: usize,
    /// The request, as it is sent.
    pub request: Request,
    /// Sent again after a lost answer. It leaves after the requests sent
    /// before it, and its answer is taken after theirs (each exchange that
    /// retries has one request in flight: nothing is before it).
    pub again: bool,
    /// The pause before it leaves.
    pub after: Duration,
}

/// What came back for one request: its answer in the core's terms, the
/// watches it left (in the order the request sets them,
/// [`Request::watched_paths`]), and the carrier's own error behind a
/// failure, reported if the exchange blames this request.
#[derive(Debug)]
pub struct Answered<W, E> {
    /// The answer.
    pub answer: Result<Reply, Error>,
    /// The watches it left.
    pub watches: Vec<W>,
    /// The carrier's error behind a failed answer.
    pub error: Option<E>,
}

impl<W, E> Answered<W, E> {
    /// An answer that left no watch and has no error of the carrier's.
    pub fn of(answer: Result<Reply, Error>) -> Answered<W, E> {
        Answered {
            answer,
            watches: Vec::new(),
            error: None,
        }
    }
}

/// A watch an exchange left and keeps.
#[derive(Debug)]
pub struct Kept<W> {
    /// Whose it is.
    pub kind: Watch,
    /// Its node's path.
    pub path: String,
    /// Once not needed, it is left to fire ([`Exchange::lingers`]).
    pub lingers: bool,
    /// The carrier's watch.
    pub watch: W,
}

/// What failed an answer: the carrier's error, or an answer that does not
/// answer its request (a transaction's garbled on the way,
/// [`Exchange::accepts`]), taken as lost.
#[derive(Debug, PartialEq, Eq)]
pub enum Fault<E> {
    /// The carrier's error behind a failed answer.
    Carrier(E),
    /// An answer that does not answer its request.
    Garbled,
}

/// A carried exchange: its answers, the watches it keeps, and what failed
/// the request it blames ([`Exchange::blame`]).
#[derive(Debug)]
pub struct Carried<W, E> {
    /// The exchange, with every answer fed.
    pub exchange: Exchange,
    /// The watches kept, in the order their answers came.
    pub kept: Vec<Kept<W>>,
    /// What failed the blamed request.
    pub blamed: Option<Fault<E>>,
}

/// One exchange on its way (the module's documentation).
#[derive(Debug)]
pub struct Carry<W, E> {
    exchange: Exchange,
    backoff: Backoff,
    outbox: VecDeque<Send>,
    /// Per request: the pause before its next attempt.
    pauses: Vec<Duration>,
    /// Per request: what failed its answer.
    errors: Vec<Option<Fault<E>>>,
    kept: Vec<Kept<W>>,
    complete: bool,
    /// The first request left before the carrier began
    /// ([`Carry::sent_ahead`]) and its first answer is not in yet.
    ahead: bool,
    /// When retrying began to count, from when the carrier began: its
    /// first answer, for a first request sent ahead.
    origin: Duration,
}

impl<W, E> Carry<W, E> {
    /// Carries `exchange`, retrying its lost answers as `backoff` says.
    pub fn new(exchange: Exchange, backoff: Backoff) -> Carry<W, E> {
        let outbox = exchange
            .requests()
            .iter()
            .enumerate()
            .map(|(index, request)| Send {
                index,
                request: request.clone(),
                again: false,
                after: Duration::ZERO,
            })
            .collect();
        let complete = exchange.is_complete();
        Carry {
            exchange,
            backoff,
            outbox,
            pauses: Vec::new(),
            errors: Vec::new(),
            kept: Vec::new(),
            complete,
            ahead: false,
            origin: Duration::ZERO,
        }
    }

    /// The exchange's first request left before the carrier began (a
    /// withdrawal's deletion, sent before the acquire's future returns):
    /// its retrying is bounded from its first answer, not from when the
    /// carrier began, which may be long after.
    pub fn sent_ahead(mut self) -> Carry<W, E> {
        self.ahead = true;
        self
    }

    /// The next request to send, if any.
    pub fn poll_send(&mut self) -> Option<Send> {
        if self.complete {
            return None;
        }
        self.outbox.pop_front()
    }

    /// True once the exchange has what it needs: the answers not awaited
    /// yet are dropped, with the watches they leave.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// The exchange, with the answers fed so far.
    pub fn exchange(&self) -> &Exchange {
        &self.exchange
    }

    /// Feeds the answer of request `index`, come `elapsed` after the
    /// carrier began (retrying is bounded from then, or from the first
    /// answer of a request [sent ahead](Carry::sent_ahead)), and returns
    /// what became of the watches it left,
    /// in their order: whose each is now, kept; `None`: dropped (the
    /// carrier's watch is dropped here). A lost answer of a retried
    /// request is not fed: the request is sent again
    /// ([`Carry::poll_send`]), unless retrying is over.
    pub fn answered(
        &mut self,
        index: usize,
        answered: Answered<W, E>,
        elapsed: Duration,
    ) -> Vec<Option<Watch>> {
        let Answered {
            answer,
            watches,
            error,
        } = answered;
        if self.complete {
            return Vec::new();
        }
        if index == 0 && std::mem::take(&mut self.ahead) {
            self.origin = elapsed;
        }
        let failing_for = elapsed.saturating_sub(self.origin);
        let garbled = !self.exchange.accepts(index, &answer);
        let lost = answer == Err(Error::Unanswered) || garbled;
        if lost && self.exchange.retried(index) {
            // It may have been applied, whether or not it is sent again.
            self.exchange.lost(index);
            if let Some(again) = self.again(index, failing_for) {
                self.outbox.push_front(again);
                return watches.iter().map(|_| None).collect();
            }
        }
        if self.errors.len() <= index {
            self.errors.resize_with(index + 1, || None);
        }
        self.errors[index] = match (garbled, answer.is_err(), error) {
            (true, _, _) => Some(Fault::Garbled),
            (false, true, Some(error)) => Some(Fault::Carrier(error)),
            _ => None,
        };
        let progress = self.exchange.answer(index, answer);
        let paths: Vec<String> = self
            .exchange
            .requests()
            .get(index)
            .map(|request| request.watched_paths().into_iter().map(str::to_owned).collect())
            .unwrap_or_default();
        let kinds = self.exchange.watch(index);
        let lingers = self.exchange.lingers(index);
        let mut fates = Vec::with_capacity(watches.len());
        let mut kinds = kinds.into_iter().zip(paths);
        for watch in watches {
            match kinds.next() {
                Some((Some(kind), path)) => {
                    self.kept.push(Kept {
                        kind,
                        path,
                        lingers,
                        watch,
                    });
                    fates.push(Some(kind));
                }
                // Dropped here: a carrier's watch asks its server to
                // remove it when dropped.
                _ => fates.push(None),
            }
        }
        match progress {
            Progress::Pending => {}
            Progress::Send(request) => self.outbox.push_back(Send {
                index: self.exchange.requests().len() - 1,
                request,
                again: false,
                after: Duration::ZERO,
            }),
            Progress::Complete => {
                self.complete = true;
                self.outbox.clear();
            }
        }
        fates
    }

    /// Request `index` sent again, after its pause; `None` once retrying is over.
    fn again(&mut self, index: usize, failing_for: Duration) -> Option<Send> {
        if self.pauses.len() <= index {
            self.pauses.resize(index + 1, Duration::ZERO);
        }
        let after = self.pauses[index];
        self.pauses[index] = self.backoff.pause(failing_for, after)?;
        Some(Send {
            index,
            request: self.exchange.requests().get(index)?.clone(),
            again: true,
            after,
        })
    }

    /// The carried exchange, the watches it keeps, and the blamed
    /// request's error (also for an exchange cut short: the answers fed
    /// so far).
    pub fn finish(mut self) -> Carried<W, E> {
        let blamed = self
            .exchange
            .blame()
            .and_then(|(index, _)| self.errors.get_mut(index))
            .and_then(Option::take);
        Carried {
            exchange: self.exchange,
            kept: self.kept,
            blamed,
        }
    }
}

#[cfg(test)]
mod tests;
