//! A holding writer's downgrade: the reader's contender beside the writer's
//! machine, and the transaction that replaces the writer.

use super::{Action, Answer, Contender, Downgrade, Failure, Phase, ReplaceStep, Replacement};
use crate::node_name::{Layout, Mode};

/// A holding writer's downgrade, begun ([`Contender::begin_replace`]): what
/// its reader's machine is made with ([`Contender::replacing`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downgrading {
    /// The writer node's child name.
    pub writer: String,
    /// The writer's release is due with the release record.
    pub mark: bool,
    /// A revocation request on the writer node is known.
    pub revoked: bool,
}

/// Why a holding writer's downgrade cannot begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DowngradeRefused {
    /// A peer's layout: only the native layout downgrades.
    Layout(Layout),
    /// A semaphore's permit ([`Contender::with_permits`]): a permit has
    /// no read mode.
    Permit,
    /// Not a holding writer: a reader, lost (its node deleted, its session
    /// or lease ended), or its release begun.
    NotHeld,
}

impl Replacement {
    /// How a downgrade ended for the writer when its reader's acquire
    /// failed with `failure` (`None`: an error of the driver's own), the
    /// error reported being the session's end if `session_over`: the
    /// writer node deleted by someone else first
    /// ([`Failure::WriterLost`] on a live session) loses the lock;
    /// otherwise it is not replaced, and a deletion seen meanwhile tells
    /// (a session that ended loses it by its own news).
    pub fn after_failure(failure: Option<Failure>, session_over: bool) -> Replacement {
        match failure {
            Some(Failure::WriterLost) if !session_over => Replacement::WriterGone,
            _ => Replacement::NotApplied,
        }
    }
}

impl Contender {
    /// This contender is a downgrade's: a reader (`mode` [`Mode::Read`],
    /// `may_wait` false, in the native layout) made while `writer`, a
    /// writer node of mine in the same directory, holds the lock. Its wait
    /// ([`Acquire::replacing`](crate::acquire::Acquire::replacing)) answers [`Action::Replace`] if the writer
    /// can hand the lock over to it (only readers between them), which
    /// grants it once the writer is deleted; [`Action::GiveUp`] otherwise
    /// (a writer queued between them), and the downgrade keeps the writer
    /// node instead. The writer's machine is told with
    /// [`Contender::begin_replace`] and [`Contender::end_replace`].
    ///
    /// `mark`: the writer's release is due with the release record (its
    /// grant said so): the transaction then also writes the record and
    /// makes the marker, so that the readers waiting on the writer with
    /// no other hand-off (they saw more writers before them when they
    /// listed) are granted by its events as by a release. It may: only
    /// readers wait on the writer (a reader stands right after it; see
    /// [`crate::ordering::downgrade`]). Refused (no WRITE on the
    /// directory, a stranger's node under the marker's name), the
    /// transaction is tried again without them.
    ///
    /// `revoked`: a revocation request on the writer node is known (see
    /// [`Action::Replace`]'s `writer_version`).
    #[must_use]
    pub fn replacing(mut self, writer: &str, mark: bool, revoked: bool) -> Contender {
        self.replaces = Some((writer.to_owned(), mark, revoked));
        self
    }

    /// A holding writer's downgrade begins: a deletion of its node seen
    /// from now on may be the downgrade's. Returns what the reader's
    /// machine is made with ([`Contender::replacing`]): the writer node,
    /// whether its release is due with the record, and whether a
    /// revocation request on it is known. Refused (and nothing changes) in
    /// a peer's layout, whatever the node's state (only the native layout
    /// has a reader that takes a writer's place: a peer would not see the
    /// hand-over), and if it is not a holding writer (a reader, lost, or
    /// its release begun).
    pub fn begin_replace(&mut self) -> Result<Downgrading, DowngradeRefused> {
        if self.permits.is_some() {
            return Err(DowngradeRefused::Permit);
        }
        if self.layout != Layout::Native {
            return Err(DowngradeRefused::Layout(self.layout));
        }
        let writer = match &self.me {
            Some((name, _, _))
                if self.phase == Phase::Holding
                    && !self.lost
                    && !self.releasing
                    && self.mode == Mode::Write =>
            {
                name.clone()
            }
            _ => return Err(DowngradeRefused::NotHeld),
        };
        self.downgrade = Downgrade::Running { deleted: false };
        Ok(Downgrading {
            writer,
            mark: self.mark,
            revoked: self.revoked,
        })
    }

    /// A downgrade's reader granted in place of the writer whose machine is
    /// `writer` (ended with [`Replacement::Applied`]): it takes over the
    /// writer's fencing token ([`Contender::fencing_token`]) and a
    /// revocation request seen on the writer, before or during the
    /// downgrade (the holder was asked to give the lock up; the reader is
    /// the same holder).
    pub fn take_over(&mut self, writer: &Contender) {
        if let Some(token) = writer.fencing_token() {
            self.inherited_token = Some(token);
        }
        self.revoked |= writer.revoked;
    }

    /// The held lock's fencing token: my node's czxid; for a downgrade's
    /// reader that took the writer's place ([`Contender::take_over`]), the
    /// writer's. The lock was held all along since the writer's grant:
    /// every writer granted after the read lock has a larger czxid than
    /// the writer's, but the reader node's own czxid may exceed theirs.
    pub fn fencing_token(&self) -> Option<i64> {
        self.inherited_token.or_else(|| self.czxid())
    }

    /// A holding writer's downgrade ended as `how`: with [`Replacement::Applied`]
    /// the node is gone and this machine is done (nothing to release);
    /// otherwise it holds as before, lost if the node was deleted by
    /// someone else meanwhile.
    pub fn end_replace(&mut self, how: Replacement) {
        let deleted = matches!(self.downgrade, Downgrade::Running { deleted: true });
        match how {
            Replacement::Applied => {
                self.downgrade = Downgrade::Replaced;
                self.phase = Phase::Done;
            }
            Replacement::WriterGone => {
                self.downgrade = Downgrade::None;
                self.held_deleted();
            }
            Replacement::NotApplied => {
                self.downgrade = Downgrade::None;
                if deleted {
                    self.held_deleted();
                }
            }
        }
    }

    /// A downgrade's transaction made `reader`: it holds from now on, in
    /// place of the writer (and of my node, deleted with it).
    pub(super) fn replaced(&mut self, reader: String, seq: i32, czxid: i64) -> Action {
        self.me = Some((reader, seq, czxid));
        self.hold(false)
    }

    /// A downgrade's transaction did not happen: `failed` says why. Unless
    /// the writer node is gone, or the session, the downgrade keeps it:
    /// whatever refused the transaction (a quota, the writer node written
    /// meanwhile, say with a revocation request) left it as it was.
    pub(super) fn replace_failed(&mut self, failed: Option<ReplaceStep>, answer: Answer<i64>) -> Action {
        match (failed, answer) {
            (_, Answer::SessionEnded) => self.fail(Failure::SessionEnded),
            // Retrying is over: the session is as good as gone.
            (_, Answer::Retry) => self.fail(Failure::Request),
            // The reader after the writer left: decide again.
            (Some(ReplaceStep::Successor), Answer::NoNode) => match self.acquire.as_mut() {
                Some(acquire) => {
                    let action = acquire.list_again();
                    self.waited(action)
                }
                None => self.fail(Failure::Request),
            },
            (Some(ReplaceStep::Mine), Answer::NoNode) => {
                self.gone = true;
                self.phase = Phase::Ended;
                Action::GiveUp
            }
            (Some(ReplaceStep::Writer), Answer::NoNode) => self.fail(Failure::WriterLost),
            // Someone else's node has the reader's name, the writer node was
            // written (its version moved), a quota: the writer node stays.
            _ => {
                self.phase = Phase::Ended;
                Action::GiveUp
            }
        }
    }

    pub(super) fn replace(
        &mut self,
        writer: String,
        reader: String,
        seq: i32,
        successor: Option<String>,
        mine: String,
        record: bool,
    ) -> Action {
        self.phase = Phase::Replacing {
            reader: reader.clone(),
            seq,
            writer: writer.clone(),
            successor: successor.clone(),
            mine: mine.clone(),
            record,
            answer_lost: false,
        };
        let revoked = self.replaces.as_ref().is_some_and(|(_, _, revoked)| *revoked);
        Action::Replace {
            writer,
            reader,
            successor,
            mine,
            record,
            writer_version: (!revoked).then_some(0),
        }
    }
}
