//! The acquire: the create, finding my own node, the directory, and the
//! wait until the grant.

use std::num::NonZeroU32;

use super::{
    container_directory, Action, Answer, Contender, Created, Failure, Input, Outcome, Phase, ReplaceStep,
    MAX_DIRECTORY_ATTEMPTS,
};
use crate::acquire::{self, Acquire};
use crate::node_name::{Mode, NodeName};
use crate::ordering;

impl Contender {
    /// Feeds the answer to the last action and returns the next action.
    pub fn step(&mut self, input: Input<'_>) -> Action {
        let phase = std::mem::replace(&mut self.phase, Phase::Done);
        match (phase, input) {
            (Phase::Creating, Input::Created { node, listing }) => self.created(node, listing),
            (
                Phase::MakingDir {
                    container,
                    after_parents,
                },
                Input::DirCreated(answer),
            ) => match answer {
                Answer::Ok(()) | Answer::Exists => self.create(),
                // A parent removed again meanwhile: the create finds the
                // directory missing and comes back, a bounded number of times.
                Answer::NoNode if after_parents => self.create(),
                Answer::NoNode => {
                    self.phase = Phase::MakingParents { container };
                    Action::CreateParents
                }
                Answer::Unimplemented if container => self.make_dir(false, after_parents),
                Answer::SessionEnded => self.fail(Failure::SessionEnded),
                _ => self.fail(Failure::Request),
            },
            (Phase::MakingParents { container }, Input::ParentsCreated(answer)) => match answer {
                Answer::Ok(()) | Answer::Exists => self.make_dir(container, true),
                // A parent of the parents missing: the chroot, most likely
                // (its error says so), or a path removed meanwhile.
                Answer::SessionEnded => self.fail(Failure::SessionEnded),
                _ => self.fail(Failure::Request),
            },
            (Phase::Finding, Input::Found(answer)) => match answer {
                Answer::Ok(children) => {
                    let candidates: Vec<String> = children
                        .iter()
                        .filter(|child| self.carries_my_token(child))
                        .cloned()
                        .collect();
                    self.check_next(candidates, Vec::new())
                }
                Answer::NoNode => self.check_next(Vec::new(), Vec::new()),
                Answer::SessionEnded => self.fail(Failure::SessionEnded),
                _ => self.fail(Failure::Request),
            },
            (
                Phase::Checking {
                    mut candidates,
                    mut mine,
                },
                Input::Stat(answer),
            ) => {
                let Some(name) = candidates.pop() else {
                    return self.fail(Failure::Request);
                };
                match answer {
                    Answer::Ok(Some(owner)) if owner.session == self.session => {
                        mine.push((name, owner.czxid))
                    }
                    Answer::Ok(_) | Answer::NoNode => {}
                    Answer::SessionEnded => return self.fail(Failure::SessionEnded),
                    _ => return self.fail(Failure::Request),
                }
                self.check_next(candidates, mine)
            }
            (Phase::DeletingExtras, Input::Deleted { answer, .. }) => match answer {
                Answer::Ok(()) | Answer::NoNode => {
                    self.extras.pop();
                    self.delete_extras()
                }
                Answer::SessionEnded => self.fail(Failure::SessionEnded),
                _ => self.fail(Failure::Request),
            },
            (Phase::CheckingData, Input::DirData(answer)) => match answer {
                Answer::Ok(data) if crate::node_name::is_lock_directory_data(data) => {
                    self.data_checked = true;
                    self.run_acquire(None)
                }
                Answer::Ok(_) => self.fail(Failure::DirectoryHoldsData),
                // The directory is gone, so my node in it is too (deleted by
                // someone else, then the empty container removed).
                Answer::NoNode => self.fail(Failure::Lost),
                Answer::SessionEnded => self.fail(Failure::SessionEnded),
                _ => self.fail(Failure::Request),
            },
            (Phase::Waiting, Input::Acquire(input)) => match self.acquire.as_mut() {
                Some(acquire) => {
                    let action = acquire.step(input);
                    self.waited(action)
                }
                None => self.fail(Failure::Request),
            },
            (
                Phase::Deleting {
                    queue,
                    record,
                    releasing,
                },
                Input::Deleted { answer, answer_lost },
            ) => self.deleted(queue, record, releasing, answer, answer_lost),
            (Phase::ReadingAcl(outcome), Input::DirAcl(answer)) => match answer {
                Answer::Ok(0) => {
                    self.phase = Phase::Recycling(outcome);
                    Action::Recycle
                }
                // Someone queued meanwhile, the directory is gone, or its
                // ACL cannot be read: the directory stays.
                _ => self.done(outcome),
            },
            (Phase::Recycling(outcome), Input::Recycled(_)) => self.done(outcome),
            (
                Phase::Replacing {
                    reader,
                    seq,
                    writer,
                    successor,
                    mine,
                    record,
                    answer_lost: lost_before,
                },
                Input::Replaced {
                    answer,
                    failed,
                    answer_lost,
                },
            ) => match answer {
                Answer::Ok(czxid) => self.replaced(reader, seq, czxid),
                // The record or the marker refused, the transaction whole:
                // again without them (an earlier attempt's lost answer
                // still counts: it may have been applied).
                Answer::NoAuth | Answer::Failed | Answer::Exists
                    if record && matches!(failed, Some(ReplaceStep::Record | ReplaceStep::Marker)) =>
                {
                    let action = self.replace(writer, reader, seq, successor, mine, false);
                    if let Phase::Replacing {
                        answer_lost: lost, ..
                    } = &mut self.phase
                    {
                        *lost = answer_lost || lost_before;
                    }
                    action
                }
                // An earlier attempt may have been applied: its reader tells.
                _ if answer_lost || lost_before => {
                    self.phase = Phase::VerifyingReplace {
                        reader: reader.clone(),
                        seq,
                        failed,
                        answer,
                    };
                    Action::Stat { name: reader }
                }
                answer => self.replace_failed(failed, answer),
            },
            (
                Phase::VerifyingReplace {
                    reader,
                    seq,
                    failed,
                    answer,
                },
                Input::Stat(stat),
            ) => match stat {
                Answer::Ok(Some(owner)) if owner.session == self.session => {
                    self.replaced(reader, seq, owner.czxid)
                }
                Answer::Ok(_) | Answer::NoNode => self.replace_failed(failed, answer),
                Answer::SessionEnded => self.fail(Failure::SessionEnded),
                _ => self.fail(Failure::Request),
            },
            // An answer to a question not asked: a driver error.
            (Phase::Done, _) => Action::Done(Outcome::Failed),
            (_, _) => self.fail(Failure::Request),
        }
    }

    pub(super) fn hold(&mut self, mark: bool) -> Action {
        self.mark = mark;
        self.phase = Phase::Holding;
        Action::Grant { mark }
    }

    pub(super) fn create(&mut self) -> Action {
        self.creating = true;
        self.phase = Phase::Creating;
        Action::Create
    }

    fn make_dir(&mut self, container: bool, after_parents: bool) -> Action {
        self.phase = Phase::MakingDir {
            container,
            after_parents,
        };
        Action::CreateDir { container }
    }

    pub(super) fn fail(&mut self, failure: Failure) -> Action {
        if failure == Failure::SessionEnded {
            self.session_ended = true;
        }
        if failure == Failure::Lost {
            self.gone = true;
        }
        // A withdrawal ends with an outcome, never as an acquire does: an
        // ended session took its nodes along.
        if self.withdrawing {
            return self.done(match failure {
                Failure::SessionEnded => Outcome::SessionEnded,
                _ => Outcome::Failed,
            });
        }
        self.phase = Phase::Ended;
        Action::Fail(failure)
    }

    pub(super) fn done(&mut self, outcome: Outcome) -> Action {
        self.phase = Phase::Done;
        Action::Done(outcome)
    }

    pub(super) fn find_own(&mut self) -> Action {
        self.phase = Phase::Finding;
        Action::FindOwn
    }

    fn carries_my_token(&self, child: &str) -> bool {
        child
            .parse::<NodeName>()
            .is_ok_and(|name| name.token() == Some(self.token) && name.layout() == self.layout)
    }

    fn created(&mut self, node: Answer<Created>, listing: Option<Answer<(&[String], i32)>>) -> Action {
        match node {
            Answer::Ok(created) => {
                self.creating = false;
                let seq = created
                    .name
                    .parse::<NodeName>()
                    .map_or(ordering::SEQUENCE_LIMIT, |n| n.seq());
                self.me = Some((created.name, seq, created.czxid));
                let (children, data_length) = match listing {
                    Some(Answer::Ok((children, data_length))) => (Some(children), Some(data_length)),
                    _ => (None, None),
                };
                if self.check_data && data_length != Some(0) {
                    self.phase = Phase::CheckingData;
                    return Action::ReadDirData;
                }
                if self.check_data {
                    self.data_checked = true;
                }
                let name = self.node().unwrap_or_default().to_owned();
                self.run_acquire(children.filter(|c| c.contains(&name)))
            }
            Answer::NoNode => {
                self.creating = false;
                self.dir_attempts += 1;
                if self.dir_attempts > MAX_DIRECTORY_ATTEMPTS {
                    return self.fail(Failure::NoDirectory);
                }
                self.make_dir(container_directory(self.layout), false)
            }
            // The create may have been applied: look for the token.
            Answer::Retry => self.find_own(),
            Answer::SessionEnded => {
                self.creating = false;
                self.fail(Failure::SessionEnded)
            }
            _ => {
                self.creating = false;
                self.fail(Failure::Request)
            }
        }
    }

    /// Stats the next candidate of find-own, or decides once all are known.
    fn check_next(&mut self, candidates: Vec<String>, mut mine: Vec<(String, i64)>) -> Action {
        if let Some(name) = candidates.last().cloned() {
            self.phase = Phase::Checking { candidates, mine };
            return Action::Stat { name };
        }
        // The first made is mine; others come from a retried create.
        mine.sort_by_key(|(_, czxid)| *czxid);
        let mut found = mine.into_iter();
        let Some((first, czxid)) = found.next() else {
            self.creating = false;
            return if self.withdrawing {
                self.done(Outcome::Deleted)
            } else {
                self.create()
            };
        };
        self.creating = false;
        let seq = first
            .parse::<NodeName>()
            .map_or(ordering::SEQUENCE_LIMIT, |n| n.seq());
        self.me = Some((first.clone(), seq, czxid));
        self.extras = found.map(|(name, _)| name).collect();
        if self.withdrawing {
            return self.delete_mine();
        }
        self.delete_extras()
    }

    /// Deletes the next extra node, or goes on once there is none left.
    fn delete_extras(&mut self) -> Action {
        match self.extras.last().cloned() {
            Some(name) => {
                self.phase = Phase::DeletingExtras;
                Action::Delete { name, record: false }
            }
            None => self.found_mine(),
        }
    }

    fn found_mine(&mut self) -> Action {
        if self.check_data {
            self.phase = Phase::CheckingData;
            return Action::ReadDirData;
        }
        self.run_acquire(None)
    }

    fn run_acquire(&mut self, listing: Option<&[String]>) -> Action {
        // The session ended while the node was made: nothing to wait for.
        if self.session_ended {
            return self.fail(Failure::SessionEnded);
        }
        let name = self.node().unwrap_or_default().to_owned();
        let mut acquire = Acquire::new(self.mode, self.may_wait)
            .with_release_markers(self.markers)
            .with_listing_limit(self.listing_limit)
            .with_place(self.follow_place)
            .with_permits(self.permits.map(NonZeroU32::get));
        if let Some((writer, _, _)) = &self.replaces {
            acquire = acquire.replacing(writer);
        }
        let action = acquire.created(&name, listing);
        self.acquire = Some(acquire);
        self.waited(action)
    }

    /// The wait's next action, as the contender's.
    pub(super) fn waited(&mut self, action: acquire::Action) -> Action {
        match action {
            acquire::Action::Grant { mark } => self.hold(mark),
            acquire::Action::Replace { writer, successor } => {
                let mine = self.node().unwrap_or_default().to_owned();
                let reader = mine.parse::<NodeName>().ok().zip(writer.parse::<NodeName>().ok());
                let Some((reader, seq)) = reader.and_then(|(mine, writer)| {
                    let seq = writer.seq();
                    let reader = NodeName::new(mine.identity(), mine.token()?, Mode::Read, seq);
                    Some((reader.to_string(), seq))
                }) else {
                    return self.fail(Failure::InvalidName);
                };
                let record = self.replaces.as_ref().is_some_and(|(_, mark, _)| *mark);
                self.replace(writer, reader, seq, successor, mine, record)
            }
            acquire::Action::GiveUp => {
                self.phase = Phase::Ended;
                Action::GiveUp
            }
            acquire::Action::Fail(failure) => self.fail(failure.into()),
            action => {
                self.phase = Phase::Waiting;
                Action::Acquire(action)
            }
        }
    }
}
