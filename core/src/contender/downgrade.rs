//! A holding writer's downgrade: the reader's contender beside the writer's
//! machine, and the transaction that replaces the writer.

use super::{Action, Answer, Contender, Downgrade, Failure, Phase, ReplaceStep, Replacement};
use crate::node_name::Mode;

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
    /// from now on may be the downgrade's. False (and nothing changes) if
    /// it cannot be downgraded: not holding, lost, or its release begun.
    pub fn begin_replace(&mut self) -> bool {
        if self.phase != Phase::Holding || self.lost || self.releasing || self.mode != Mode::Write {
            return false;
        }
        self.downgrade = Downgrade::Running { deleted: false };
        true
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
