//! How a failed acquire ends: whether it waits for its node's withdrawal,
//! and whose error it reports.

use super::Failure;

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
