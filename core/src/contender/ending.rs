//! How a failed acquire ends: whether it waits for its node's withdrawal,
//! whose error it reports, what it warns of first and what its report says.

use super::{Contender, Failure};
use crate::acquire::RefusedListing;
use crate::lease::SessionState;

/// What a failed acquire does with its node before it reports
/// ([`Failure::ending`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Report at once. There is nothing to wait for: the node is gone (by
    /// someone else's hand or with the session), or the node is not one to
    /// wait on (its name is not a contender's), and whatever withdrawal is
    /// due goes on in the background.
    Report,
    /// Withdraw the node and wait for the withdrawal (a bounded while: the
    /// driver's give-up slack) before reporting. A withdrawal the server
    /// refused leaves the node queued: its error is reported instead of the
    /// failure's if `refusal_wins` ([`Ending::blame`]).
    Withdraw {
        /// A refused withdrawal's error is the one reported.
        refusal_wins: bool,
    },
}

/// Whose error a failed acquire reports ([`Ending::blame`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// The failure's own.
    Failure,
    /// The withdrawal's: the server refused to delete the node, which stays
    /// queued and blocks those behind it until the session ends.
    Withdrawal,
}

impl Failure {
    /// Whether a failed acquire withdraws its node and waits for it, and
    /// whether a refused withdrawal's error wins over the failure's.
    ///
    /// - A lost node, an ended session: nothing to withdraw.
    /// - A name that is no contender's: reported at once; the node is
    ///   withdrawn in the background.
    /// - A request that failed for good, a directory that holds data or
    ///   keeps vanishing, a listing over its limit: withdrawn, and a refused
    ///   withdrawal is the news (the node stays queued, as a timed-out
    ///   acquire's refused withdrawal says).
    /// - The counter used up, a downgrade's writer lost: withdrawn, but the
    ///   failure says more than a refusal would (the directory is unusable
    ///   until recycled; the write lock was lost).
    pub fn ending(self) -> Ending {
        match self {
            Failure::Lost | Failure::SessionEnded | Failure::InvalidName => Ending::Report,
            Failure::Request
            | Failure::DirectoryHoldsData
            | Failure::NoDirectory
            | Failure::ListingTooLarge => Ending::Withdraw { refusal_wins: true },
            Failure::Exhausted | Failure::WriterLost | Failure::PermitsDisagree => {
                Ending::Withdraw { refusal_wins: false }
            }
        }
    }
}

impl Ending {
    /// Whose error is reported, `refused` if the withdrawal waited for was
    /// refused by the server (not if it succeeded, or goes on in the
    /// background after the wait).
    pub fn blame(self, refused: bool) -> Blame {
        match self {
            Ending::Withdraw { refusal_wins: true } if refused => Blame::Withdrawal,
            _ => Blame::Failure,
        }
    }
}

/// What a failed acquire warns of as it withdraws its node
/// ([`Failure::warning`]): a lock directory that needs its operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warning {
    /// The directory's sequence counter is used up.
    CounterUsedUp,
    /// The directory's listing is over the limit: the listing refused, if
    /// the machine kept it.
    ListingTooLarge(Option<RefusedListing>),
}

/// The last failed request's error as a failed acquire's report tells it
/// apart ([`Failure::reported`]), carrying the carrier's own error `E`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestError<E> {
    /// No answer came (the connection was lost, or the server shed the
    /// request) until retrying was over.
    Unanswered(E),
    /// Any other error: the server's answer, or the client's own refusal.
    Answered(E),
}

/// What a failed acquire reports ([`Failure::reported`]): the library's
/// error, variant for variant, with what it names. A node is a child name
/// of the lock directory, `None` where the machine knows none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reported<'a, E> {
    /// The session expired.
    SessionExpired,
    /// The session was closed.
    SessionClosed,
    /// The session's authentication failed.
    AuthFailed,
    /// A node is gone while the session lives on: deleted by someone else.
    Lost {
        /// The node gone: mine, or the writer node a downgrade replaces.
        node: Option<&'a str>,
    },
    /// The directory's sequence counter is used up.
    SequenceExhausted,
    /// The listing that would make the acquire wait is over the limit.
    ListingTooLarge {
        /// The contender nodes listed (0 if the listing was not kept).
        contenders: usize,
        /// The listing's size in bytes (0 if not kept).
        size: usize,
        /// The limit (0 if not kept).
        limit: usize,
    },
    /// My node's name is not a contender's.
    InvalidName {
        /// My node.
        node: Option<&'a str>,
    },
    /// Retrying is over and the server still did not answer: the last
    /// request's error.
    NoAnswer(E),
    /// The last failed request's error, as it is.
    RequestFailed(E),
    /// A request failed for good and no error is known: the carrier's bug,
    /// reported as an unexpected error.
    Unexplained,
    /// The lock directory holds data that is not the lock's.
    DirectoryHoldsData,
    /// The lock directory kept vanishing.
    NoDirectory,
    /// A semaphore's contender before mine carries another permit count.
    PermitsDisagree {
        /// That contender's node.
        node: Option<&'a str>,
        /// The count it carries (0 if unknown).
        carried: u32,
        /// The count this acquire asked for (0 for a lock's).
        asked: u32,
    },
}

impl Failure {
    /// What the acquire warns of before it waits for its node's withdrawal:
    /// a used-up counter, a listing over the limit (with the listing
    /// refused); `None` for every other failure.
    pub fn warning(self, machine: &Contender) -> Option<Warning> {
        match self {
            Failure::Exhausted => Some(Warning::CounterUsedUp),
            Failure::ListingTooLarge => Some(Warning::ListingTooLarge(machine.refused_listing())),
            _ => None,
        }
    }

    /// What the acquire reports when the failure's own error is reported
    /// ([`Blame::Failure`]), from the machine's state and what the carrier
    /// knows: `last`, the last failed request's error; `ended`, the
    /// session's end an event told ([`crate::wire::Arrivals::ended`]);
    /// `now`, the session's state as the report is made.
    ///
    /// - A node gone (mine, or the writer a downgrade replaces) reports the
    ///   session's end if the session is over `now`, else the node lost.
    /// - An ended session reports the end an event told, else as my node
    ///   gone.
    /// - A request failed for good reports [`Reported::NoAnswer`] if no
    ///   answer came, else the request's error, else
    ///   [`Reported::Unexplained`].
    /// - A listing over the limit and a disagreement on the permits name
    ///   what the machine kept of them.
    pub fn reported<E>(
        self,
        machine: &Contender,
        last: Option<RequestError<E>>,
        ended: Option<SessionState>,
        now: SessionState,
    ) -> Reported<'_, E> {
        let gone = |node| session_over(now).unwrap_or(Reported::Lost { node });
        match self {
            Failure::Lost => gone(machine.node()),
            Failure::SessionEnded => ended
                .and_then(session_over)
                .unwrap_or_else(|| gone(machine.node())),
            Failure::WriterLost => gone(machine.replaces()),
            Failure::Exhausted => Reported::SequenceExhausted,
            Failure::ListingTooLarge => {
                let refused = machine.refused_listing();
                let (contenders, size, limit) =
                    refused.map_or((0, 0, 0), |r| (r.contenders, r.size, r.limit));
                Reported::ListingTooLarge {
                    contenders,
                    size,
                    limit,
                }
            }
            Failure::InvalidName => Reported::InvalidName { node: machine.node() },
            Failure::Request => match last {
                Some(RequestError::Unanswered(e)) => Reported::NoAnswer(e),
                Some(RequestError::Answered(e)) => Reported::RequestFailed(e),
                None => Reported::Unexplained,
            },
            Failure::DirectoryHoldsData => Reported::DirectoryHoldsData,
            Failure::NoDirectory => Reported::NoDirectory,
            Failure::PermitsDisagree => {
                let conflict = machine.conflict();
                Reported::PermitsDisagree {
                    node: conflict.map(|(node, _)| node),
                    carried: conflict.map_or(0, |(_, carried)| carried),
                    asked: machine.permits.map_or(0, std::num::NonZeroU32::get),
                }
            }
        }
    }
}

/// The report of a session `state` that ends the session; `None` for a
/// session that lives on.
fn session_over<'a, E>(state: SessionState) -> Option<Reported<'a, E>> {
    match state {
        SessionState::Expired => Some(Reported::SessionExpired),
        SessionState::Closed => Some(Reported::SessionClosed),
        SessionState::AuthFailed => Some(Reported::AuthFailed),
        SessionState::Connected | SessionState::ConnectedReadOnly | SessionState::Disconnected => None,
    }
}
