//! The end of a contender: the release of a held node, or the withdrawal
//! of an acquire, and the directory's recycling after it.

use super::{Action, Answer, Contender, Outcome, Phase};
use crate::ordering;

impl Contender {
    /// Ends the acquire here, whatever it was doing (the deadline passed,
    /// or its future was dropped), and withdraws: the first action of the
    /// withdrawal. Also what follows [`Action::GiveUp`] and [`Action::Fail`].
    pub fn withdraw(&mut self) -> Action {
        match std::mem::replace(&mut self.phase, Phase::Ended) {
            // A holder leaves by release; a release or withdrawal under way
            // goes on.
            Phase::Holding => {
                self.phase = Phase::Holding;
                return self.release();
            }
            phase @ (Phase::Deleting { .. } | Phase::ReadingAcl(_) | Phase::Recycling(_) | Phase::Done) => {
                self.phase = phase;
                return Action::Done(Outcome::Deleted);
            }
            // A downgrade's transaction may have made its reader: it goes too.
            Phase::Replacing { reader, .. } | Phase::VerifyingReplace { reader, .. } => {
                self.extras.push(reader)
            }
            _ => {}
        }
        self.acquire = None;
        self.withdrawing = true;
        if self.gone || self.session_ended {
            return self.done(if self.session_ended {
                Outcome::SessionEnded
            } else {
                Outcome::Deleted
            });
        }
        self.delete_mine()
    }

    /// Deletes my node, with the extra nodes of a retried create not
    /// deleted yet; looks for it first if a create's answer is unknown.
    pub(super) fn delete_mine(&mut self) -> Action {
        match self.me.as_ref() {
            Some((name, _, _)) => {
                let mut queue = vec![name.clone()];
                queue.append(&mut self.extras);
                self.delete(queue, false, false)
            }
            // A create may have been applied: look for the token.
            None if self.creating => self.find_own(),
            None => self.done(Outcome::Deleted),
        }
    }

    /// Begins the release of the held node: deletes it (with the release
    /// record if the grant said so), unless it is known deleted by someone
    /// else ([`Outcome::Lost`] at once).
    pub fn release(&mut self) -> Action {
        if self.phase != Phase::Holding {
            return self.withdraw();
        }
        self.releasing = true;
        if self.gone {
            return self.done(Outcome::Lost);
        }
        let Some((name, _, _)) = self.me.as_ref() else {
            return self.done(Outcome::Deleted);
        };
        let name = name.clone();
        let record = self.mark;
        self.delete(vec![name], record, true)
    }

    fn delete(&mut self, queue: Vec<String>, record: bool, releasing: bool) -> Action {
        let Some(name) = queue.first().cloned() else {
            return self.after_deletion(Outcome::Deleted);
        };
        self.phase = Phase::Deleting {
            queue,
            record,
            releasing,
        };
        Action::Delete { name, record }
    }

    pub(super) fn deleted(
        &mut self,
        mut queue: Vec<String>,
        record: bool,
        releasing: bool,
        answer: Answer<()>,
        answer_lost: bool,
    ) -> Action {
        self.answer_lost |= answer_lost;
        match answer {
            Answer::Ok(()) => {}
            Answer::NoNode if !releasing => {}
            Answer::NoNode => {
                if !crate::lease::released_by_us(false, true, self.answer_lost) {
                    self.gone = true;
                    return self.done(Outcome::Lost);
                }
            }
            Answer::SessionEnded => return self.done(Outcome::SessionEnded),
            // The server refused the record (no WRITE on the directory, a
            // quota, ...): the transaction, deletion included, did not
            // happen. A plain deletion releases all the same.
            Answer::NoAuth | Answer::Failed | Answer::Exists | Answer::Unimplemented if record => {
                return self.delete(queue, false, releasing);
            }
            Answer::NoAuth | Answer::Failed | Answer::Exists | Answer::Unimplemented | Answer::Retry => {
                return self.done(Outcome::Failed)
            }
        }
        queue.remove(0);
        if !queue.is_empty() {
            return self.delete(queue, false, releasing);
        }
        self.after_deletion(Outcome::Deleted)
    }

    fn after_deletion(&mut self, outcome: Outcome) -> Action {
        match self.seq() {
            // Only a directory known to be the lock's: recycling makes it
            // again empty, and data of someone else's would be gone.
            Some(seq) if ordering::needs_recycling(seq) && (!self.check_data || self.data_checked) => {
                self.phase = Phase::ReadingAcl(outcome);
                Action::ReadDirAcl
            }
            _ => self.done(outcome),
        }
    }
}
