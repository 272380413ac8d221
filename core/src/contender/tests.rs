//! A contender's life, step by step: each test feeds answers and checks the
//! actions that come back.

use super::*;
use crate::acquire::{Action as Wait, Input as Heard, NodeEvent, Reply};
use crate::ordering;

const SESSION: i64 = 7;

fn token() -> Uuid {
    Uuid::from_u128(0xabcd)
}

fn name(mode: Mode, seq: i32) -> String {
    format!(
        "{}{seq:010}",
        Layout::Native.prefix("h", token(), mode).unwrap_or_default()
    )
}

/// A native contender on [`SESSION`], the directory's data already checked.
fn contender(mode: Mode) -> Contender {
    Contender::new(mode, true, Layout::Native, token(), SESSION, false)
}

fn created(name: &str, czxid: i64, listing: Option<&[String]>) -> Input<'static> {
    let listing = listing.map(|l| Answer::Ok((l.to_vec().leak() as &[String], 0)));
    Input::Created {
        node: Answer::Ok(Created {
            name: name.to_owned(),
            czxid,
        }),
        listing,
    }
}

fn deleted(answer: Answer<()>, answer_lost: bool) -> Input<'static> {
    Input::Deleted { answer, answer_lost }
}

/// A contender granted on its first listing, alone in the directory.
fn holder(mode: Mode, seq: i32) -> Contender {
    let mut c = contender(mode);
    assert_eq!(c.start(), Action::Create);
    let me = name(mode, seq);
    assert_eq!(
        c.step(created(&me, 40, Some(std::slice::from_ref(&me)))),
        Action::Grant { mark: false }
    );
    assert!(c.is_held());
    c
}

#[test]
fn granted_at_once_then_released_plainly() {
    let mut c = holder(Mode::Write, 3);
    assert_eq!(c.node(), Some(name(Mode::Write, 3).as_str()));
    assert_eq!((c.seq(), c.czxid()), (Some(3), Some(40)));
    assert_eq!(
        c.release(),
        Action::Delete {
            name: name(Mode::Write, 3),
            record: false
        }
    );
    assert!(!c.is_held());
    assert_eq!(
        c.step(deleted(Answer::Ok(()), false)),
        Action::Done(Outcome::Deleted)
    );
}

#[test]
fn a_guard_granted_at_its_first_look_watches_its_node_only_after_a_bound() {
    let c = holder(Mode::Write, 3);
    assert!(!c.own_watch_set());
    assert_eq!(c.first_watch_after(), Some(FIRST_WATCH_AFTER));
    assert!(FIRST_WATCH_AFTER > std::time::Duration::ZERO);
    let mut c = waiting_writer();
    c.step(Input::Acquire(Heard::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::Ok(()),
        marker: None,
    }));
    assert_eq!(
        c.step(Input::Acquire(Heard::Event(Event::Watched(NodeEvent::Deleted)))),
        Action::Grant { mark: true }
    );
    assert_eq!(
        c.first_watch_after(),
        None,
        "the watch set while waiting is handed over"
    );
    let mut refused = waiting_writer();
    refused.step(Input::Acquire(Heard::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::NoAuth),
        watched: Reply::Ok(()),
        marker: None,
    }));
    assert!(!refused.own_watch_set());
}

#[test]
fn a_listing_without_my_node_is_not_trusted() {
    let mut c = contender(Mode::Read);
    c.start();
    let me = name(Mode::Read, 1);
    assert_eq!(c.step(created(&me, 40, Some(&[]))), Action::Acquire(Wait::List));
}

/// A writer behind a writer: waits, then is granted by the record.
fn waiting_writer() -> Contender {
    let mut c = contender(Mode::Write);
    c.start();
    let me = name(Mode::Write, 2);
    let other = "x-W-0000000001".to_owned();
    assert_eq!(
        c.step(created(&me, 41, Some(&[other.clone(), me.clone()]))),
        Action::Acquire(Wait::SetWatches {
            // The listing left its watch on the directory: the watched
            // node's watch may go with my node's, unread.
            blind: true,
            kept: Vec::new(),
            lingers: false,
            also: Vec::new(),
            own: true,
            marker: None,
            watched: other,
            together: true,
        })
    );
    c
}

#[test]
fn the_wait_listens_to_the_listings_watch_while_its_watched_node_is_unread() {
    let mut c = waiting_writer();
    assert!(!c.listens_to_listing());
    c.step(Input::Acquire(Heard::WatchesSet {
        blind: true,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::Ok(()),
        marker: None,
    }));
    assert!(c.listens_to_listing());
    let mut read = waiting_writer();
    read.step(Input::Acquire(Heard::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::Ok(()),
        marker: None,
    }));
    assert!(!read.listens_to_listing());
}

#[test]
fn a_writer_that_waited_releases_with_the_record() {
    let mut c = waiting_writer();
    assert_eq!(
        c.step(Input::Acquire(Heard::WatchesSet {
            blind: false,
            also: Vec::new(),
            own: Some(Reply::Ok(())),
            watched: Reply::Ok(()),
            marker: None,
        })),
        Action::Acquire(Wait::Wait { poll: false })
    );
    assert_eq!(
        c.step(Input::Acquire(Heard::Event(Event::Watched(NodeEvent::Deleted)))),
        Action::Grant { mark: true }
    );
    assert!(c.mark());
    assert!(c.own_watch_set());
    assert_eq!(c.counts().wakeups, 1);
    let me = name(Mode::Write, 2);
    assert_eq!(
        c.release(),
        Action::Delete {
            name: me.clone(),
            record: true
        }
    );
    // The server refuses the record: a plain deletion, then done.
    assert_eq!(
        c.step(deleted(Answer::NoAuth, false)),
        Action::Delete {
            name: me.clone(),
            record: false
        }
    );
    assert_eq!(
        c.step(deleted(Answer::Ok(()), false)),
        Action::Done(Outcome::Deleted)
    );
}

#[test]
fn a_refused_record_of_any_kind_falls_back_to_a_plain_deletion() {
    for refusal in [
        Answer::Failed,
        Answer::NoAuth,
        Answer::Exists,
        Answer::Unimplemented,
    ] {
        let mut c = waiting_writer();
        c.step(Input::Acquire(Heard::WatchesSet {
            blind: false,
            also: Vec::new(),
            own: Some(Reply::Ok(())),
            watched: Reply::NoNode,
            marker: None,
        }));
        assert!(c.is_held(), "{refusal:?}");
        let me = name(Mode::Write, 2);
        assert_eq!(
            c.release(),
            Action::Delete {
                name: me.clone(),
                record: true
            }
        );
        assert_eq!(
            c.step(deleted(refusal.clone(), false)),
            Action::Delete {
                name: me.clone(),
                record: false
            },
            "{refusal:?}"
        );
        // A plain deletion refused is a failure, not a loop.
        assert_eq!(c.step(deleted(refusal, false)), Action::Done(Outcome::Failed));
    }
}

#[test]
fn a_release_that_finds_its_node_missing() {
    for (answer_lost_before, answer_lost_now, outcome) in [
        (false, false, Outcome::Lost),
        (false, true, Outcome::Deleted),
        (true, false, Outcome::Deleted),
        // Both attempts lost an answer: still one of them may have deleted it.
        (true, true, Outcome::Deleted),
    ] {
        let mut c = waiting_writer();
        c.step(Input::Acquire(Heard::WatchesSet {
            blind: false,
            also: Vec::new(),
            own: Some(Reply::Ok(())),
            watched: Reply::NoNode,
            marker: None,
        }));
        let me = name(Mode::Write, 2);
        assert_eq!(
            c.release(),
            Action::Delete {
                name: me.clone(),
                record: true
            }
        );
        if answer_lost_before {
            // The record was refused after an attempt whose answer was lost.
            assert_eq!(
                c.step(deleted(Answer::Failed, true)),
                Action::Delete {
                    name: me.clone(),
                    record: false
                }
            );
        }
        assert_eq!(
            c.step(deleted(Answer::NoNode, answer_lost_now)),
            Action::Done(outcome)
        );
    }
}

#[test]
fn release_ends_with_the_session() {
    let mut c = holder(Mode::Read, 5);
    c.release();
    assert_eq!(
        c.step(deleted(Answer::SessionEnded, false)),
        Action::Done(Outcome::SessionEnded)
    );
    let mut c = holder(Mode::Read, 5);
    c.release();
    assert_eq!(
        c.step(deleted(Answer::Retry, true)),
        Action::Done(Outcome::Failed)
    );
}

#[test]
fn the_held_node_deleted_by_someone_else_is_lost() {
    let mut c = holder(Mode::Write, 3);
    assert_eq!(c.held_event(NodeEvent::DataChanged), Keep::Watch);
    assert!(!c.is_lost());
    assert_eq!(c.held_event(NodeEvent::Deleted), Keep::Stop);
    assert!(c.is_lost() && !c.is_held());
    // Nothing of its own to delete.
    assert_eq!(c.release(), Action::Done(Outcome::Lost));
}

#[test]
fn the_held_node_made_again_by_someone_else_is_lost() {
    let mut c = holder(Mode::Write, 3);
    assert_eq!(
        c.held_watch_set(Answer::Ok(HeldNode {
            czxid: 40,
            revocation: false
        })),
        Keep::Wait
    );
    assert!(!c.is_lost());
    assert_eq!(
        c.held_watch_set(Answer::Ok(HeldNode {
            czxid: 99,
            revocation: false
        })),
        Keep::Stop
    );
    assert!(c.is_lost());
    assert_eq!(c.release(), Action::Done(Outcome::Lost));
}

#[test]
fn keeper_answers() {
    for (answer, keep, lost) in [
        (Answer::NoNode, Keep::Stop, true),
        (Answer::SessionEnded, Keep::Stop, true),
        (Answer::Retry, Keep::Watch, false),
        (Answer::NoAuth, Keep::Stop, false),
        (Answer::Failed, Keep::Stop, false),
        (Answer::Exists, Keep::Stop, false),
        (Answer::Unimplemented, Keep::Stop, false),
    ] {
        let mut c = holder(Mode::Read, 1);
        assert_eq!(c.held_watch_set(answer.clone()), keep, "{answer:?}");
        assert_eq!(c.is_lost(), lost, "{answer:?}");
    }
    for (event, keep, lost) in [
        (NodeEvent::Deleted, Keep::Stop, true),
        (NodeEvent::SessionEnded, Keep::Stop, true),
        (NodeEvent::DataChanged, Keep::Watch, false),
        (NodeEvent::Other, Keep::Watch, false),
        (NodeEvent::Failed, Keep::Watch, false),
    ] {
        let mut c = holder(Mode::Read, 1);
        assert_eq!(c.held_event(event), keep, "{event:?}");
        assert_eq!(c.is_lost(), lost, "{event:?}");
    }
}

#[test]
fn a_deletion_after_the_release_began_is_the_releases() {
    let mut c = holder(Mode::Write, 3);
    c.release();
    c.held_event(NodeEvent::Deleted);
    assert!(!c.is_lost());
    assert_eq!(
        c.step(deleted(Answer::Ok(()), false)),
        Action::Done(Outcome::Deleted)
    );
}

#[test]
fn revocation_requests_are_kept() {
    let mut c = holder(Mode::Read, 1);
    assert!(!c.is_revoked());
    c.held_watch_set(Answer::Ok(HeldNode {
        czxid: 40,
        revocation: true,
    }));
    assert!(c.is_revoked());
    c.held_watch_set(Answer::Ok(HeldNode {
        czxid: 40,
        revocation: false,
    }));
    assert!(c.is_revoked());
    let mut c = contender(Mode::Read);
    c.note_revoked();
    assert!(c.is_revoked());
    c.held_lost();
    assert!(c.is_lost());
}

#[test]
fn a_missing_directory_is_made_a_bounded_number_of_times() {
    let mut c = contender(Mode::Read);
    c.start();
    let missing = || Input::Created {
        node: Answer::NoNode,
        listing: Some(Answer::NoNode),
    };
    for attempt in 1..=MAX_DIRECTORY_ATTEMPTS {
        assert_eq!(
            c.step(missing()),
            Action::CreateDir { container: true },
            "{attempt}"
        );
        if attempt == 1 {
            // Its parent is missing too.
            assert_eq!(c.step(Input::DirCreated(Answer::NoNode)), Action::CreateParents);
            assert_eq!(
                c.step(Input::ParentsCreated(Answer::Exists)),
                Action::CreateDir { container: true }
            );
        }
        if attempt == 2 {
            // A server without containers.
            assert_eq!(
                c.step(Input::DirCreated(Answer::Unimplemented)),
                Action::CreateDir { container: false }
            );
        }
        let made = if attempt % 2 == 0 {
            Answer::Exists
        } else {
            Answer::Ok(())
        };
        assert_eq!(c.step(Input::DirCreated(made)), Action::Create);
    }
    assert_eq!(c.step(missing()), Action::Fail(Failure::NoDirectory));
    // Nothing was made: nothing to withdraw.
    assert_eq!(c.withdraw(), Action::Done(Outcome::Deleted));
}

#[test]
fn directory_requests_that_fail() {
    for (first, second, failure) in [
        (Answer::SessionEnded, None, Failure::SessionEnded),
        (Answer::NoAuth, None, Failure::Request),
        (Answer::Retry, None, Failure::Request),
        (
            Answer::Unimplemented,
            Some(Answer::Unimplemented),
            Failure::Request,
        ),
        (Answer::NoNode, Some(Answer::SessionEnded), Failure::SessionEnded),
        (Answer::NoNode, Some(Answer::NoAuth), Failure::Request),
        // A parent of the parents is missing (the chroot): the error says so.
        (Answer::NoNode, Some(Answer::NoNode), Failure::Request),
    ] {
        let mut c = contender(Mode::Read);
        c.start();
        c.step(Input::Created {
            node: Answer::NoNode,
            listing: None,
        });
        let mut action = c.step(Input::DirCreated(first.clone()));
        if let Some(second) = second {
            action = match action {
                Action::CreateParents => c.step(Input::ParentsCreated(second)),
                Action::CreateDir { .. } => c.step(Input::DirCreated(second)),
                other => other,
            };
        }
        assert_eq!(action, Action::Fail(failure), "{first:?}");
    }
}

#[test]
fn kazoo_directories_persist() {
    assert!(!container_directory(Layout::Kazoo));
    for layout in [Layout::Native, Layout::Curator, Layout::CuratorMutex] {
        assert!(container_directory(layout), "{layout}");
    }
}

#[test]
fn kazoos_directory_is_persistent() {
    let mut c = Contender::new(Mode::Read, true, Layout::Kazoo, token(), SESSION, false);
    c.start();
    assert_eq!(
        c.step(Input::Created {
            node: Answer::NoNode,
            listing: None
        }),
        Action::CreateDir { container: false }
    );
}

#[test]
fn a_parent_removed_meanwhile_makes_the_directory_again() {
    let mut c = contender(Mode::Read);
    c.start();
    c.step(Input::Created {
        node: Answer::NoNode,
        listing: None,
    });
    c.step(Input::DirCreated(Answer::NoNode));
    assert_eq!(
        c.step(Input::ParentsCreated(Answer::Exists)),
        Action::CreateDir { container: true }
    );
    // Gone again: the contender's create comes back.
    assert_eq!(c.step(Input::DirCreated(Answer::NoNode)), Action::Create);
    assert_eq!(
        c.step(Input::ParentsCreated(Answer::Ok(()))),
        Action::Fail(Failure::Request)
    );
}

#[test]
fn create_errors() {
    for (answer, failure) in [
        (Answer::SessionEnded, Failure::SessionEnded),
        (Answer::NoAuth, Failure::Request),
        (Answer::Failed, Failure::Request),
        (Answer::Exists, Failure::Request),
    ] {
        let mut c = contender(Mode::Read);
        c.start();
        assert_eq!(
            c.step(Input::Created {
                node: answer.clone(),
                listing: None
            }),
            Action::Fail(failure),
            "{answer:?}"
        );
        // Not made: nothing to withdraw.
        let end = if failure == Failure::SessionEnded {
            Outcome::SessionEnded
        } else {
            Outcome::Deleted
        };
        assert_eq!(c.withdraw(), Action::Done(end));
    }
}

/// After a create whose answer was lost: the listing found `children`.
fn finding(children: &[String]) -> (Contender, Action) {
    let mut c = contender(Mode::Write);
    c.start();
    assert_eq!(
        c.step(Input::Created {
            node: Answer::Retry,
            listing: Some(Answer::Retry)
        }),
        Action::FindOwn
    );
    let action = c.step(Input::Found(Answer::Ok(children)));
    (c, action)
}

#[test]
fn find_own_takes_my_sessions_node_with_my_token() {
    let mine = name(Mode::Write, 4);
    let other_layout = format!(
        "{}0000000005",
        Layout::Kazoo.prefix("", token(), Mode::Write).unwrap_or_default()
    );
    let other_token = format!(
        "{}0000000006",
        Layout::Native
            .prefix("h", Uuid::from_u128(1), Mode::Write)
            .unwrap_or_default()
    );
    let children = vec![other_layout, mine.clone(), other_token, "junk".to_owned()];
    let (mut c, action) = finding(&children);
    assert_eq!(action, Action::Stat { name: mine.clone() });
    assert_eq!(
        c.step(Input::Stat(Answer::Ok(Some(Owner {
            session: SESSION,
            czxid: 77
        })))),
        Action::Acquire(Wait::List)
    );
    assert_eq!(
        (c.node(), c.czxid(), c.seq()),
        (Some(mine.as_str()), Some(77), Some(4))
    );
}

#[test]
fn find_own_ignores_a_node_of_another_session() {
    let mine = name(Mode::Write, 4);
    let (mut c, _) = finding(std::slice::from_ref(&mine));
    // An earlier, expired session's node with the same token: not mine.
    assert_eq!(
        c.step(Input::Stat(Answer::Ok(Some(Owner {
            session: SESSION + 1,
            czxid: 77
        })))),
        Action::Create
    );
    assert_eq!(c.node(), None);
    let (mut c, _) = finding(std::slice::from_ref(&mine));
    assert_eq!(c.step(Input::Stat(Answer::Ok(None))), Action::Create);
    let (mut c, _) = finding(std::slice::from_ref(&mine));
    assert_eq!(c.step(Input::Stat(Answer::NoNode)), Action::Create);
    let (mut c, _) = finding(std::slice::from_ref(&mine));
    assert_eq!(c.step(Input::Stat(Answer::Retry)), Action::Fail(Failure::Request));
    let (mut c, _) = finding(std::slice::from_ref(&mine));
    assert_eq!(
        c.step(Input::Stat(Answer::SessionEnded)),
        Action::Fail(Failure::SessionEnded)
    );
}

#[test]
fn find_own_keeps_the_first_made_and_deletes_the_others() {
    let (a, b, d) = (name(Mode::Write, 4), name(Mode::Write, 5), name(Mode::Write, 6));
    let (mut c, action) = finding(&[a.clone(), b.clone(), d.clone()]);
    assert_eq!(action, Action::Stat { name: d.clone() });
    let owner = |czxid| {
        Input::Stat(Answer::Ok(Some(Owner {
            session: SESSION,
            czxid,
        })))
    };
    assert_eq!(c.step(owner(30)), Action::Stat { name: b.clone() });
    assert_eq!(c.step(owner(10)), Action::Stat { name: a.clone() });
    // b was made first: the others go.
    let first = c.step(owner(20));
    assert!(
        matches!(&first, Action::Delete { record: false, .. }),
        "{first:?}"
    );
    let second = c.step(deleted(Answer::Ok(()), false));
    assert!(
        matches!(&second, Action::Delete { record: false, .. }),
        "{second:?}"
    );
    let mut gone = [first, second]
        .into_iter()
        .filter_map(|a| match a {
            Action::Delete { name, .. } => Some(name),
            _ => None,
        })
        .collect::<Vec<_>>();
    gone.sort();
    assert_eq!(gone, vec![a, d]);
    assert_eq!(
        c.step(deleted(Answer::NoNode, false)),
        Action::Acquire(Wait::List)
    );
    assert_eq!((c.node(), c.czxid()), (Some(b.as_str()), Some(10)));
}

#[test]
fn find_own_failures() {
    let mut c = contender(Mode::Write);
    c.start();
    c.step(Input::Created {
        node: Answer::Retry,
        listing: None,
    });
    // The directory is gone: no node of mine, create again.
    assert_eq!(c.step(Input::Found(Answer::NoNode)), Action::Create);
    for (answer, failure) in [
        (Answer::SessionEnded, Failure::SessionEnded),
        (Answer::Retry, Failure::Request),
        (Answer::NoAuth, Failure::Request),
    ] {
        let mut c = contender(Mode::Write);
        c.start();
        c.step(Input::Created {
            node: Answer::Retry,
            listing: None,
        });
        assert_eq!(c.step(Input::Found(answer)), Action::Fail(failure));
    }
    // Deleting an extra node fails.
    for (answer, failure) in [
        (Answer::SessionEnded, Failure::SessionEnded),
        (Answer::NoAuth, Failure::Request),
    ] {
        let (a, b) = (name(Mode::Write, 4), name(Mode::Write, 5));
        let (mut c, _) = finding(&[a, b]);
        let owner = |czxid| {
            Input::Stat(Answer::Ok(Some(Owner {
                session: SESSION,
                czxid,
            })))
        };
        c.step(owner(1));
        c.step(owner(2));
        assert_eq!(c.step(deleted(answer, false)), Action::Fail(failure));
    }
}

#[test]
fn withdraw_while_creating_looks_for_the_node() {
    let mine = name(Mode::Read, 8);
    let mut c = contender(Mode::Read);
    c.start();
    // The deadline passed with the create's answer unknown.
    assert_eq!(c.withdraw(), Action::FindOwn);
    assert_eq!(
        c.step(Input::Found(Answer::Ok(std::slice::from_ref(&mine)))),
        Action::Stat { name: mine.clone() }
    );
    assert_eq!(
        c.step(Input::Stat(Answer::Ok(Some(Owner {
            session: SESSION,
            czxid: 5
        })))),
        Action::Delete {
            name: mine.clone(),
            record: false
        }
    );
    assert_eq!(
        c.step(deleted(Answer::NoNode, false)),
        Action::Done(Outcome::Deleted)
    );
    // Not there: nothing to delete.
    let mut c = contender(Mode::Read);
    c.start();
    c.withdraw();
    assert_eq!(
        c.step(Input::Found(Answer::Ok(&[]))),
        Action::Done(Outcome::Deleted)
    );
}

#[test]
fn withdraw_while_deleting_extras_deletes_them_all() {
    let (a, b) = (name(Mode::Write, 4), name(Mode::Write, 5));
    let (mut c, _) = finding(&[a.clone(), b.clone()]);
    let owner = |czxid| {
        Input::Stat(Answer::Ok(Some(Owner {
            session: SESSION,
            czxid,
        })))
    };
    // Stats go from the last child: b is made first, a is an extra.
    c.step(owner(1));
    assert_eq!(
        c.step(owner(2)),
        Action::Delete {
            name: a.clone(),
            record: false
        }
    );
    assert_eq!(
        c.withdraw(),
        Action::Delete {
            name: b.clone(),
            record: false
        }
    );
    assert_eq!(
        c.step(deleted(Answer::Ok(()), false)),
        Action::Delete {
            name: a,
            record: false
        }
    );
    assert_eq!(
        c.step(deleted(Answer::Ok(()), false)),
        Action::Done(Outcome::Deleted)
    );
}

#[test]
fn withdraw_while_deleting_extras_after_the_sessions_end() {
    let (a, b) = (name(Mode::Write, 4), name(Mode::Write, 5));
    let (mut c, _) = finding(&[a.clone(), b]);
    let owner = |czxid| {
        Input::Stat(Answer::Ok(Some(Owner {
            session: SESSION,
            czxid,
        })))
    };
    c.step(owner(1));
    assert_eq!(
        c.step(owner(2)),
        Action::Delete {
            name: a,
            record: false
        }
    );
    // The session's nodes are gone with it: nothing to delete.
    c.event(Event::SessionEnded);
    assert_eq!(c.withdraw(), Action::Done(Outcome::SessionEnded));
}

#[test]
fn a_holder_withdrawn_is_released() {
    let mut c = waiting_writer();
    c.step(Input::Acquire(Heard::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::NoNode,
        marker: None,
    }));
    assert!(c.is_held());
    // As a release: with the record the grant asked for, ...
    let me = name(Mode::Write, 2);
    assert_eq!(
        c.withdraw(),
        Action::Delete {
            name: me,
            record: true
        }
    );
    assert!(!c.is_held());
    // ... and a node found missing was lost before.
    assert_eq!(
        c.step(deleted(Answer::NoNode, false)),
        Action::Done(Outcome::Lost)
    );
}

#[test]
fn events_after_the_grant_are_the_keepers() {
    let mut c = waiting_writer();
    c.step(Input::Acquire(Heard::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::NoNode,
        marker: None,
    }));
    assert!(c.is_held() && c.own_watch_set());
    // The keeper takes over the watch on my node: the wait hears nothing more.
    c.event(Event::Own(NodeEvent::DataChanged));
    assert!(c.own_watch_set());
    assert!(c.is_held());
}

/// The deadlines of an acquire started at 0 with a timeout of `timeout`
/// (answers due by 500).
fn timed(timeout: u32) -> Deadlines<u32> {
    Deadlines::until(timeout, 500)
}

#[test]
fn a_timed_acquire_finishes_its_first_look_whatever_its_timeout() {
    // The look is bounded by the later of the deadline and the answers' due time.
    assert_eq!(timed(0).look, Some(500));
    assert_eq!(timed(1).look, Some(500));
    assert_eq!(timed(2_000).look, Some(2_000));
    assert_eq!((timed(1).wait, timed(2_000).wait), (Some(1), Some(2_000)));
    assert_eq!(
        Deadlines::<u32>::forever(),
        Deadlines {
            look: None,
            wait: None
        }
    );

    // The create, a lost answer's search and the first listing are the look's.
    let mut c = contender(Mode::Write);
    assert!(c.looking());
    c.start();
    assert_eq!(c.deadline(timed(1)), Some(500));
    let me = name(Mode::Write, 2);
    assert_eq!(c.step(created(&me, 41, Some(&[]))), Action::Acquire(Wait::List));
    assert_eq!(
        c.deadline(timed(1)),
        Some(500),
        "the listing that decides is the look's"
    );
    // Found free at the look: granted, however short the timeout.
    let mut free = contender(Mode::Write);
    free.start();
    assert_eq!(
        free.step(created(&me, 41, Some(std::slice::from_ref(&me)))),
        Action::Grant { mark: false }
    );

    // Found taken: the wait begins, bounded by the deadline itself.
    let c = waiting_writer();
    assert!(!c.looking());
    assert_eq!(c.deadline(timed(1)), Some(1));
    assert_eq!(c.deadline(timed(2_000)), Some(2_000));
    assert_eq!(c.deadline(Deadlines::<u32>::forever()), None);
}

#[test]
fn the_callers_patience_sets_the_deadlines_and_whether_the_acquire_waits() {
    // Begun at 100, answers due by 600.
    for (patience, deadlines, may_wait) in [
        (Patience::None, Deadlines::until(100, 600), false),
        (Patience::Until(2_000), Deadlines::until(2_000, 600), true),
        (Patience::Until(50), Deadlines::until(50, 600), true),
        (Patience::Forever, Deadlines::forever(), true),
    ] {
        assert_eq!(patience.deadlines(100, 600), deadlines, "{patience:?}");
        assert_eq!(patience.may_wait(), may_wait, "{patience:?}");
    }
    // A timeout from 100: zero is a try; one past the clock's range is forever.
    let from_100 = |timeout: std::time::Duration| u32::try_from(timeout.as_millis()).ok()?.checked_add(100);
    for (timeout, patience) in [
        (0, Patience::None),
        (1, Patience::Until(101)),
        (5_000, Patience::Until(5_100)),
        (u64::MAX, Patience::Forever),
    ] {
        let timeout = std::time::Duration::from_millis(timeout);
        assert_eq!(Patience::within(timeout, from_100), patience, "{timeout:?}");
    }
    assert_eq!(
        Patience::None.deadlines(100, 600),
        Deadlines {
            look: Some(600),
            wait: Some(100)
        },
        "a try finishes its first look, and waits no longer"
    );
}

#[test]
fn try_gives_up_and_withdraws() {
    let mut c = Contender::new(Mode::Write, false, Layout::Native, token(), SESSION, false);
    c.start();
    let me = name(Mode::Write, 2);
    assert_eq!(
        c.step(created(&me, 1, Some(&["x-R-0000000001".to_owned(), me.clone()]))),
        Action::GiveUp
    );
    assert_eq!(
        c.withdraw(),
        Action::Delete {
            name: me,
            record: false
        }
    );
    assert_eq!(
        c.step(deleted(Answer::SessionEnded, false)),
        Action::Done(Outcome::SessionEnded)
    );
}

#[test]
fn a_lost_waiter_has_nothing_to_withdraw() {
    let mut c = waiting_writer();
    assert_eq!(
        c.step(Input::Acquire(Heard::WatchesSet {
            blind: false,
            also: Vec::new(),
            own: Some(Reply::NoNode),
            watched: Reply::Ok(()),
            marker: None,
        })),
        Action::Fail(Failure::Lost)
    );
    assert_eq!(c.withdraw(), Action::Done(Outcome::Deleted));
    let mut c = waiting_writer();
    c.event(Event::SessionEnded);
    assert_eq!(
        c.step(Input::Acquire(Heard::WatchesSet {
            blind: false,
            also: Vec::new(),
            own: Some(Reply::Ok(())),
            watched: Reply::Ok(()),
            marker: None,
        })),
        Action::Fail(Failure::SessionEnded)
    );
    assert_eq!(c.withdraw(), Action::Done(Outcome::SessionEnded));
}

#[test]
fn a_session_ended_while_creating_reaches_the_wait() {
    let mut c = contender(Mode::Write);
    c.start();
    c.event(Event::SessionEnded);
    let me = name(Mode::Write, 2);
    assert_eq!(
        c.step(created(&me, 1, Some(std::slice::from_ref(&me)))),
        Action::Fail(Failure::SessionEnded)
    );
}

#[test]
fn the_directorys_data_is_checked_once() {
    let me = name(Mode::Write, 2);
    // The listing says the directory holds no data: no read.
    let mut c = Contender::new(Mode::Write, true, Layout::Native, token(), SESSION, true);
    c.start();
    assert_eq!(
        c.step(created(&me, 1, Some(std::slice::from_ref(&me)))),
        Action::Grant { mark: false }
    );
    assert!(c.data_checked());
    // It holds some: read it.
    for (data, next) in [
        (&b""[..], Action::Acquire(Wait::List)),
        (me.as_bytes(), Action::Acquire(Wait::List)),
        (b"{\"config\": 1}", Action::Fail(Failure::DirectoryHoldsData)),
    ] {
        let mut c = Contender::new(Mode::Write, true, Layout::Native, token(), SESSION, true);
        c.start();
        assert_eq!(
            c.step(Input::Created {
                node: Answer::Ok(Created {
                    name: me.clone(),
                    czxid: 1
                }),
                listing: Some(Answer::Retry)
            }),
            Action::ReadDirData
        );
        assert_eq!(c.step(Input::DirData(Answer::Ok(data))), next);
        assert_eq!(
            c.data_checked(),
            next != Action::Fail(Failure::DirectoryHoldsData)
        );
        if !c.data_checked() {
            // The node is withdrawn.
            assert_eq!(
                c.withdraw(),
                Action::Delete {
                    name: me.clone(),
                    record: false
                }
            );
        }
    }
    for (answer, failure) in [
        (Answer::SessionEnded, Failure::SessionEnded),
        (Answer::Retry, Failure::Request),
    ] {
        let mut c = Contender::new(Mode::Write, true, Layout::Native, token(), SESSION, true);
        c.start();
        c.step(Input::Created {
            node: Answer::Ok(Created {
                name: me.clone(),
                czxid: 1,
            }),
            listing: None,
        });
        assert_eq!(c.step(Input::DirData(answer)), Action::Fail(failure));
    }
    // A node found after a lost answer: read too.
    let mut c = Contender::new(Mode::Write, true, Layout::Native, token(), SESSION, true);
    c.start();
    c.step(Input::Created {
        node: Answer::Retry,
        listing: None,
    });
    c.step(Input::Found(Answer::Ok(std::slice::from_ref(&me))));
    assert_eq!(
        c.step(Input::Stat(Answer::Ok(Some(Owner {
            session: SESSION,
            czxid: 3
        })))),
        Action::ReadDirData
    );
    // Not checked yet: a lock known to be fine asks nothing.
    let mut c = contender(Mode::Write);
    c.start();
    c.step(created(&me, 1, Some(std::slice::from_ref(&me))));
    assert!(!c.data_checked());
}

#[test]
fn a_directory_gone_before_its_data_is_read_is_a_lost_node() {
    // My node was deleted by someone else, then the empty container removed.
    let me = name(Mode::Write, 2);
    let mut c = Contender::new(Mode::Write, true, Layout::Native, token(), SESSION, true);
    c.start();
    assert_eq!(
        c.step(Input::Created {
            node: Answer::Ok(Created {
                name: me.clone(),
                czxid: 1
            }),
            listing: Some(Answer::Ok((&[][..], 12)))
        }),
        Action::ReadDirData
    );
    assert_eq!(
        c.step(Input::DirData(Answer::NoNode)),
        Action::Fail(Failure::Lost)
    );
    assert!(!c.data_checked());
    // Nothing left to delete.
    assert_eq!(c.withdraw(), Action::Done(Outcome::Deleted));
}

#[test]
fn recycling_near_the_counters_limit() {
    let seq = ordering::RECYCLE_THRESHOLD;
    // Empty: recycled; the outcome is the release's.
    let mut c = holder(Mode::Read, seq);
    c.release();
    assert_eq!(c.step(deleted(Answer::Ok(()), false)), Action::ReadDirAcl);
    assert_eq!(c.step(Input::DirAcl(Answer::Ok(0))), Action::Recycle);
    assert_eq!(
        c.step(Input::Recycled(Answer::Failed)),
        Action::Done(Outcome::Deleted)
    );
    // Someone queued, or the ACL cannot be read: it stays.
    for answer in [Answer::Ok(1), Answer::NoAuth, Answer::NoNode] {
        let mut c = holder(Mode::Read, seq);
        c.release();
        c.step(deleted(Answer::Ok(()), false));
        assert_eq!(c.step(Input::DirAcl(answer)), Action::Done(Outcome::Deleted));
    }
    // Below the threshold: no recycling.
    let mut c = holder(Mode::Read, seq - 1);
    c.release();
    assert_eq!(
        c.step(deleted(Answer::Ok(()), false)),
        Action::Done(Outcome::Deleted)
    );
    // A lost release recycles nothing.
    let mut c = holder(Mode::Read, seq);
    c.release();
    assert_eq!(
        c.step(deleted(Answer::NoNode, false)),
        Action::Done(Outcome::Lost)
    );
    // A withdrawal recycles too.
    let mut c = Contender::new(Mode::Write, false, Layout::Native, token(), SESSION, false);
    c.start();
    let me = name(Mode::Write, seq);
    c.step(created(&me, 1, Some(&["x-R-0000000001".to_owned(), me.clone()])));
    c.withdraw();
    assert_eq!(c.step(deleted(Answer::Ok(()), false)), Action::ReadDirAcl);
}

#[test]
fn the_sequence_limit_withdraws() {
    let mut c = contender(Mode::Write);
    c.start();
    let me = name(Mode::Write, ordering::SEQUENCE_LIMIT);
    assert_eq!(
        c.step(created(&me, 1, Some(std::slice::from_ref(&me)))),
        Action::Fail(Failure::Exhausted)
    );
    assert_eq!(
        c.withdraw(),
        Action::Delete {
            name: me,
            record: false
        }
    );
    assert_eq!(c.step(deleted(Answer::Ok(()), false)), Action::ReadDirAcl);
}

#[test]
fn answers_to_questions_not_asked() {
    let mut c = contender(Mode::Read);
    c.start();
    assert_eq!(
        c.step(Input::Recycled(Answer::Ok(()))),
        Action::Fail(Failure::Request)
    );
    let mut c = holder(Mode::Read, 1);
    c.release();
    c.step(deleted(Answer::Ok(()), false));
    assert_eq!(
        c.step(deleted(Answer::Ok(()), false)),
        Action::Done(Outcome::Failed)
    );
    // A withdrawal or release under way goes on; a second one is a no-op.
    let mut c = holder(Mode::Read, 1);
    let first = c.release();
    assert!(matches!(first, Action::Delete { .. }));
    assert_eq!(c.withdraw(), Action::Done(Outcome::Deleted));
    // A holder withdraws by releasing.
    let mut c = holder(Mode::Read, 1);
    assert!(matches!(c.withdraw(), Action::Delete { record: false, .. }));
    // Release before the grant is a withdrawal.
    let mut c = contender(Mode::Read);
    c.start();
    assert_eq!(c.release(), Action::FindOwn);
}

#[test]
fn events_reach_the_wait() {
    let mut c = waiting_writer();
    c.event(Event::Own(NodeEvent::Deleted));
    assert_eq!(
        c.step(Input::Acquire(Heard::WatchesSet {
            blind: false,
            also: Vec::new(),
            own: Some(Reply::Ok(())),
            watched: Reply::Ok(()),
            marker: None,
        })),
        Action::Fail(Failure::Lost)
    );
    assert!(!c.saw_foreign());
    let mut c = contender(Mode::Read);
    c.start();
    let me = name(Mode::Read, 1);
    c.step(created(&me, 1, Some(&["junk".to_owned(), me.clone()])));
    assert!(c.saw_foreign());
}

// ---------------------------------------------------------------------------
// Withdrawals at the edges: refused directories, ended sessions, extra nodes.

/// A directory refused for holding someone's data is not the lock's: its
/// data must be left alone (`docs/library.md`, "A lock directory is the lock's"). The
/// withdrawal of the node made there must not recycle it (delete it and
/// create it again empty) even when its counter is past the threshold: that
/// would wipe the data, reset the owner's sequence counter and turn a
/// container into a persistent node.
#[test]
fn a_directory_refused_for_its_data_is_never_recycled() {
    for seq in [ordering::RECYCLE_THRESHOLD, ordering::SEQUENCE_LIMIT, -5] {
        let me = name(Mode::Write, seq);
        let mut c = Contender::new(Mode::Write, true, Layout::Native, token(), SESSION, true);
        c.start();
        assert_eq!(
            c.step(Input::Created {
                node: Answer::Ok(Created {
                    name: me.clone(),
                    czxid: 1
                }),
                listing: Some(Answer::Ok((std::slice::from_ref(&me), 2)))
            }),
            Action::ReadDirData
        );
        assert_eq!(
            c.step(Input::DirData(Answer::Ok(b"42"))),
            Action::Fail(Failure::DirectoryHoldsData)
        );
        assert_eq!(
            c.withdraw(),
            Action::Delete {
                name: me.clone(),
                record: false
            }
        );
        assert_eq!(
            c.step(deleted(Answer::Ok(()), false)),
            Action::Done(Outcome::Deleted),
            "seq {seq}: the refused directory must not be read back for recycling"
        );
    }
}

/// The same when the acquire ends (deadline, cancellation) while the
/// directory's data is being read: whether the directory is the lock's is
/// not known, so it must not be recycled either.
#[test]
fn a_directory_whose_data_was_not_checked_is_never_recycled() {
    let me = name(Mode::Write, ordering::RECYCLE_THRESHOLD);
    let mut c = Contender::new(Mode::Write, true, Layout::Native, token(), SESSION, true);
    c.start();
    assert_eq!(
        c.step(Input::Created {
            node: Answer::Ok(Created {
                name: me.clone(),
                czxid: 1
            }),
            listing: Some(Answer::Ok((std::slice::from_ref(&me), 2)))
        }),
        Action::ReadDirData
    );
    // The deadline passes (or the future is dropped) during the read.
    assert_eq!(
        c.withdraw(),
        Action::Delete {
            name: me.clone(),
            record: false
        }
    );
    assert_eq!(
        c.step(deleted(Answer::Ok(()), false)),
        Action::Done(Outcome::Deleted),
        "a directory not known to be the lock's must not be read back for recycling"
    );
}

/// A withdrawal ends with `Done(_)` (the run loop's contract: `Fail` ends an
/// acquire, never a withdrawal). One that finds the session over while it
/// looks for the node of a create whose answer was lost has nothing to
/// delete: `Done(SessionEnded)`, as a withdrawal that knew of the end from
/// the start says: a timed acquire that gives up then returns `Ok(None)`,
/// with no warning of a node left behind.
#[test]
fn a_withdrawal_that_finds_the_session_over_is_done() {
    // The session ends while listing.
    let mut c = contender(Mode::Read);
    c.start();
    assert_eq!(c.withdraw(), Action::FindOwn);
    assert_eq!(
        c.step(Input::Found(Answer::SessionEnded)),
        Action::Done(Outcome::SessionEnded)
    );
    // The session ends while asking a candidate's owner.
    let mine = name(Mode::Read, 8);
    let mut c = contender(Mode::Read);
    c.start();
    assert_eq!(c.withdraw(), Action::FindOwn);
    assert_eq!(
        c.step(Input::Found(Answer::Ok(std::slice::from_ref(&mine)))),
        Action::Stat { name: mine }
    );
    assert_eq!(
        c.step(Input::Stat(Answer::SessionEnded)),
        Action::Done(Outcome::SessionEnded)
    );
}

/// Other failures of a withdrawal's search end it with `Done(Failed)`, not
/// with `Fail(_)`, an action a withdrawal's driver has no meaning for.
#[test]
fn a_withdrawal_whose_search_fails_is_done_failed() {
    for answer in [Answer::Retry, Answer::NoAuth, Answer::Failed] {
        let mut c = contender(Mode::Read);
        c.start();
        assert_eq!(c.withdraw(), Action::FindOwn);
        assert_eq!(
            c.step(Input::Found(answer.clone())),
            Action::Done(Outcome::Failed),
            "{answer:?}"
        );
    }
}

/// Two nodes of mine from a retried create: the deletion of the extra one
/// fails, which fails the acquire. Its withdrawal must delete both: the
/// extra node is this session's ephemeral node, a contender that blocks
/// everyone behind it until the session ends.
#[test]
fn an_extra_node_whose_deletion_failed_is_still_withdrawn() {
    for failure in [Answer::Retry, Answer::Failed, Answer::NoAuth] {
        let (a, b) = (name(Mode::Write, 4), name(Mode::Write, 5));
        let (mut c, _) = finding(&[a.clone(), b.clone()]);
        let owner = |czxid| {
            Input::Stat(Answer::Ok(Some(Owner {
                session: SESSION,
                czxid,
            })))
        };
        // b was made first; a is the extra.
        c.step(owner(1));
        assert_eq!(
            c.step(owner(2)),
            Action::Delete {
                name: a.clone(),
                record: false
            }
        );
        assert_eq!(
            c.step(deleted(failure.clone(), true)),
            Action::Fail(Failure::Request)
        );
        let mut deletes = Vec::new();
        let mut action = c.withdraw();
        for _ in 0..5 {
            match action {
                Action::Delete { name, .. } => {
                    deletes.push(name);
                    action = c.step(deleted(Answer::Ok(()), false));
                }
                _ => break,
            }
        }
        assert_eq!(action, Action::Done(Outcome::Deleted), "{failure:?}");
        deletes.sort();
        assert_eq!(
            deletes,
            vec![a.clone(), b.clone()],
            "{failure:?}: the withdrawal must delete every node of mine"
        );
    }
}

/// A downgrade: the holding writer's machine and its reader's (the
/// writer granted at once: no record due).
fn downgrading(listing: &[String]) -> (Contender, Contender, Action) {
    downgrading_marked(listing, false)
}

fn downgrading_marked(listing: &[String], mark: bool) -> (Contender, Contender, Action) {
    let mut writer = holder(Mode::Write, 3);
    assert!(writer.begin_replace().is_ok());
    let w = name(Mode::Write, 3);
    let mut reader = Contender::new(
        Mode::Read,
        true,
        Layout::Native,
        Uuid::from_u128(0xef),
        SESSION,
        false,
    )
    .replacing(&w, mark, false);
    assert_eq!(reader.start(), Action::Create);
    let me = format!(
        "{}{:010}",
        Layout::Native
            .prefix("h", Uuid::from_u128(0xef), Mode::Read)
            .unwrap(),
        9
    );
    let mut listing = listing.to_vec();
    listing.push(me.clone());
    let action = reader.step(created(&me, 50, Some(&listing)));
    (writer, reader, action)
}

fn reader_name(seq: i32) -> String {
    format!(
        "{}{seq:010}",
        Layout::Native
            .prefix("h", Uuid::from_u128(0xef), Mode::Read)
            .unwrap()
    )
}

fn replaced(answer: Answer<i64>, failed: Option<ReplaceStep>, answer_lost: bool) -> Input<'static> {
    Input::Replaced {
        answer,
        failed,
        answer_lost,
    }
}

#[test]
fn a_downgrade_replaces_the_writer_by_a_reader_with_its_sequence() {
    let w = name(Mode::Write, 3);
    let (mut writer, mut reader, action) = downgrading(std::slice::from_ref(&w));
    assert_eq!(reader.replaces(), Some(w.as_str()));
    assert!(!writer.mark(), "granted at once: no record due");
    assert_eq!(
        action,
        Action::Replace {
            writer: w.clone(),
            reader: reader_name(3),
            successor: None,
            mine: reader_name(9),
            record: false,
            writer_version: Some(0),
        }
    );
    // The keeper sees the writer's deletion before the answer: not a loss.
    assert_eq!(writer.held_event(NodeEvent::Deleted), Keep::Stop);
    assert!(!writer.is_lost());
    assert_eq!(
        reader.step(replaced(Answer::Ok(77), None, false)),
        Action::Grant { mark: false }
    );
    assert_eq!(
        (reader.node(), reader.seq(), reader.czxid()),
        (Some(reader_name(3).as_str()), Some(3), Some(77))
    );
    assert!(reader.is_held());
    writer.end_replace(Replacement::Applied);
    assert!(!writer.is_lost() && !writer.is_held());
    // The reader releases its own node, plainly.
    assert_eq!(
        reader.release(),
        Action::Delete {
            name: reader_name(3),
            record: false
        }
    );
}

#[test]
fn a_downgrade_checks_the_reader_after_the_writer_and_keeps_it_behind_a_writer() {
    let w = name(Mode::Write, 3);
    let r = "b-R-0000000004".to_owned();
    let (_, _, action) = downgrading(&[w.clone(), r.clone(), "c-W-0000000005".to_owned()]);
    assert!(matches!(action, Action::Replace { successor: Some(s), .. } if s == r));
    let (mut writer, mut reader, action) = downgrading(&[w.clone(), "c-W-0000000004".to_owned()]);
    assert_eq!(action, Action::GiveUp);
    // The reader is withdrawn; the writer holds on.
    assert_eq!(
        reader.withdraw(),
        Action::Delete {
            name: reader_name(9),
            record: false
        }
    );
    writer.end_replace(Replacement::NotApplied);
    assert!(writer.is_held());
    // A deletion now is someone else's.
    writer.held_event(NodeEvent::Deleted);
    assert!(writer.is_lost());
}

#[test]
fn a_downgrades_transaction_that_fails() {
    let w = name(Mode::Write, 3);
    let r = "b-R-0000000004".to_owned();
    let listing = [w.clone(), r.clone()];
    // The reader after the writer left: list again and decide again.
    let (_, mut reader, _) = downgrading(&listing);
    assert_eq!(
        reader.step(replaced(Answer::NoNode, Some(ReplaceStep::Successor), false)),
        Action::Acquire(Wait::List)
    );
    // A stranger's node under the reader's name: keep the writer, withdraw mine.
    let (_, mut reader, _) = downgrading(&listing);
    assert_eq!(
        reader.step(replaced(Answer::Exists, Some(ReplaceStep::Reader), false)),
        Action::GiveUp
    );
    assert_eq!(
        reader.withdraw(),
        Action::Delete {
            name: reader_name(9),
            record: false
        }
    );
    // My node gone: keep the writer, nothing to withdraw.
    let (_, mut reader, _) = downgrading(&listing);
    assert_eq!(
        reader.step(replaced(Answer::NoNode, Some(ReplaceStep::Mine), false)),
        Action::GiveUp
    );
    assert_eq!(reader.withdraw(), Action::Done(Outcome::Deleted));
    // The writer deleted by someone else: the write lock was lost.
    let (mut writer, mut reader, _) = downgrading(&listing);
    writer.held_event(NodeEvent::Deleted);
    assert!(!writer.is_lost(), "whose deletion it is, the answer tells");
    assert_eq!(
        reader.step(replaced(Answer::NoNode, Some(ReplaceStep::Writer), false)),
        Action::Fail(Failure::WriterLost)
    );
    assert_eq!(
        reader.withdraw(),
        Action::Delete {
            name: reader_name(9),
            record: false
        }
    );
    writer.end_replace(Replacement::WriterGone);
    assert!(writer.is_lost());
    // The session ended.
    let (_, mut reader, _) = downgrading(&listing);
    assert_eq!(
        reader.step(replaced(Answer::SessionEnded, None, false)),
        Action::Fail(Failure::SessionEnded)
    );
}

#[test]
fn a_downgrades_lost_answer_is_settled_by_the_readers_stat() {
    let w = name(Mode::Write, 3);
    // Applied before the answer was lost: the retry finds the reader's name taken.
    let (_, mut reader, _) = downgrading(std::slice::from_ref(&w));
    assert_eq!(
        reader.step(replaced(Answer::Exists, Some(ReplaceStep::Reader), true)),
        Action::Stat { name: reader_name(3) }
    );
    let mine = Owner {
        session: SESSION,
        czxid: 88,
    };
    assert_eq!(
        reader.step(Input::Stat(Answer::Ok(Some(mine)))),
        Action::Grant { mark: false }
    );
    assert_eq!(reader.czxid(), Some(88));
    // Not applied: a stranger's reader (another session) is no proof.
    let (_, mut reader, _) = downgrading(std::slice::from_ref(&w));
    reader.step(replaced(Answer::Exists, Some(ReplaceStep::Reader), true));
    let theirs = Owner {
        session: SESSION + 1,
        czxid: 88,
    };
    assert_eq!(reader.step(Input::Stat(Answer::Ok(Some(theirs)))), Action::GiveUp);
    // Withdrawn while the transaction's fate is unknown: its reader goes too.
    let (_, mut reader, _) = downgrading(std::slice::from_ref(&w));
    assert_eq!(
        reader.withdraw(),
        Action::Delete {
            name: reader_name(9),
            record: false
        },
        "before the transaction, only my node"
    );
    let (_, mut reader, _) = downgrading(std::slice::from_ref(&w));
    reader.step(replaced(Answer::Retry, None, true));
    assert_eq!(
        reader.withdraw(),
        Action::Delete {
            name: reader_name(9),
            record: false
        }
    );
    assert_eq!(
        reader.step(deleted(Answer::NoNode, false)),
        Action::Delete {
            name: reader_name(3),
            record: false
        }
    );
}

#[test]
fn only_a_holding_native_writer_begins_a_downgrade() {
    use DowngradeRefused::NotHeld;
    let refused = |layout| Err(DowngradeRefused::Layout(layout));
    let lost = |mut c: Contender| {
        c.held_lost();
        c
    };
    let releasing = |mut c: Contender| {
        c.release();
        c
    };
    let deleted = |mut c: Contender| {
        c.held_event(NodeEvent::Deleted);
        c
    };
    let revoked = |mut c: Contender| {
        c.note_revoked();
        c
    };
    let began = |seq: i32, mark: bool, revoked: bool| {
        Ok(Downgrading {
            writer: name(Mode::Write, seq),
            mark,
            revoked,
        })
    };
    for (what, mut c, want) in [
        ("a holding writer", holder(Mode::Write, 3), began(3, false, false)),
        (
            "a revoked writer",
            revoked(holder(Mode::Write, 3)),
            began(3, false, true),
        ),
        ("a marked writer", waiting_writer_granted(), began(2, true, false)),
        ("a reader", holder(Mode::Read, 3), Err(NotHeld)),
        ("a lost writer", lost(holder(Mode::Write, 3)), Err(NotHeld)),
        ("a deleted writer", deleted(holder(Mode::Write, 3)), Err(NotHeld)),
        (
            "a releasing writer",
            releasing(holder(Mode::Write, 3)),
            Err(NotHeld),
        ),
        ("a waiting writer", waiting_writer(), Err(NotHeld)),
        // The layout first, whatever the state.
        (
            "a Curator writer",
            peer_holder(Layout::Curator),
            refused(Layout::Curator),
        ),
        (
            "a Curator mutex",
            peer_holder(Layout::CuratorMutex),
            refused(Layout::CuratorMutex),
        ),
        (
            "a kazoo writer",
            peer_holder(Layout::Kazoo),
            refused(Layout::Kazoo),
        ),
        (
            "a lost kazoo writer",
            lost(peer_holder(Layout::Kazoo)),
            refused(Layout::Kazoo),
        ),
    ] {
        let want_ok = want.is_ok();
        assert_eq!(c.begin_replace(), want, "{what}");
        if !want_ok {
            // Nothing changed: a deletion now is not the downgrade's.
            c.held_event(NodeEvent::Deleted);
            assert!(c.is_lost() || c.releasing, "{what}");
        }
    }
}

/// [`waiting_writer`], granted by its predecessor's release: its own
/// release is due with the record.
fn waiting_writer_granted() -> Contender {
    let mut c = waiting_writer();
    c.step(Input::Acquire(Heard::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::Ok(()),
        marker: None,
    }));
    assert_eq!(
        c.step(Input::Acquire(Heard::Event(Event::Watched(NodeEvent::Deleted)))),
        Action::Grant { mark: true }
    );
    c
}

/// A writer in a peer's `layout`, granted on its first listing.
fn peer_holder(layout: Layout) -> Contender {
    let mut c = Contender::new(Mode::Write, true, layout, token(), SESSION, false);
    assert_eq!(c.start(), Action::Create);
    let Some(me) = layout
        .prefix("host", token(), Mode::Write)
        .map(|p| format!("{p}0000000003"))
    else {
        panic!("{layout:?} has no writer")
    };
    assert_eq!(
        c.step(created(&me, 40, Some(std::slice::from_ref(&me)))),
        Action::Grant { mark: false }
    );
    c
}

#[test]
fn a_downgrades_reader_takes_over_the_writers_token_and_revocation() {
    let w = name(Mode::Write, 3);
    for (writer_revoked, reader_revoked, want_revoked) in [
        (false, false, false),
        (true, false, true),
        (false, true, true),
        (true, true, true),
    ] {
        let (mut writer, mut reader, action) = downgrading(std::slice::from_ref(&w));
        let Action::Replace { .. } = action else {
            panic!("{action:?}")
        };
        assert!(matches!(
            reader.step(replaced(Answer::Ok(77), None, false)),
            Action::Grant { .. }
        ));
        assert_eq!(reader.fencing_token(), Some(77));
        if writer_revoked {
            // Seen during the downgrade.
            writer.note_revoked();
        }
        if reader_revoked {
            reader.note_revoked();
        }
        writer.end_replace(Replacement::Applied);
        reader.take_over(&writer);
        assert_eq!(reader.fencing_token(), writer.czxid(), "the writer's token");
        assert_eq!(writer.czxid(), Some(40));
        assert_eq!(reader.czxid(), Some(77), "its own node's czxid stays");
        assert_eq!(
            reader.is_revoked(),
            want_revoked,
            "{writer_revoked} {reader_revoked}"
        );
    }
    // Without a downgrade, the token is the node's czxid.
    assert_eq!(holder(Mode::Read, 1).fencing_token(), Some(40));
}

#[test]
fn a_downgrade_whose_reader_failed_loses_the_writer_only_if_its_node_went_first() {
    use Replacement::*;
    for (failure, session_over, want) in [
        (Some(Failure::WriterLost), false, WriterGone),
        // The session's end says it: not the downgrade's news.
        (Some(Failure::WriterLost), true, NotApplied),
        (Some(Failure::Lost), false, NotApplied),
        (Some(Failure::SessionEnded), true, NotApplied),
        (Some(Failure::Request), false, NotApplied),
        (Some(Failure::ListingTooLarge), false, NotApplied),
        (Some(Failure::Exhausted), false, NotApplied),
        (None, false, NotApplied),
        (None, true, NotApplied),
    ] {
        assert_eq!(
            Replacement::after_failure(failure, session_over),
            want,
            "{failure:?} {session_over}"
        );
    }
}

/// A writer whose release is due with the record downgrades with it (and
/// its marker), for the readers that wait on it with no other hand-off;
/// refused, the transaction goes again without them.
#[test]
fn a_marked_writers_downgrade_writes_the_record_unless_refused() {
    let w = name(Mode::Write, 3);
    let replace = |record| Action::Replace {
        writer: w.clone(),
        reader: reader_name(3),
        successor: None,
        mine: reader_name(9),
        record,
        writer_version: Some(0),
    };
    let (_, mut reader, action) = downgrading_marked(std::slice::from_ref(&w), true);
    assert_eq!(action, replace(true));
    assert_eq!(
        reader.step(replaced(Answer::NoAuth, Some(ReplaceStep::Record), false)),
        replace(false)
    );
    assert_eq!(
        reader.step(replaced(Answer::Ok(5), None, false)),
        Action::Grant { mark: false }
    );
    let (_, mut reader, _) = downgrading_marked(std::slice::from_ref(&w), true);
    assert_eq!(
        reader.step(replaced(Answer::Exists, Some(ReplaceStep::Marker), false)),
        replace(false)
    );
    // Without the record, a refusal keeps the writer node.
    let (_, mut reader, _) = downgrading_marked(std::slice::from_ref(&w), false);
    assert_eq!(
        reader.step(replaced(Answer::NoAuth, Some(ReplaceStep::Record), false)),
        Action::GiveUp
    );
}

/// A first attempt with the record that lost its answer (it may have been
/// applied), a retry refused at the record, then the retry without it
/// refused because the reader exists: the earlier lost answer still counts,
/// and the reader's owner settles it.
#[test]
fn a_lost_answer_before_the_record_was_refused_is_settled_by_the_readers_stat() {
    let w = name(Mode::Write, 3);
    let (_, mut reader, _) = downgrading_marked(std::slice::from_ref(&w), true);
    let without = Action::Replace {
        writer: w.clone(),
        reader: reader_name(3),
        successor: None,
        mine: reader_name(9),
        record: false,
        writer_version: Some(0),
    };
    assert_eq!(
        reader.step(replaced(Answer::NoAuth, Some(ReplaceStep::Record), true)),
        without
    );
    assert_eq!(
        reader.step(replaced(Answer::Exists, Some(ReplaceStep::Reader), false)),
        Action::Stat { name: reader_name(3) },
        "not given up: the first attempt may have made the reader"
    );
}

/// Whatever refuses a downgrade's transaction while the writer node stays
/// (a quota, the node written meanwhile: its version moved) keeps the
/// writer node; only its deletion or the session's end fail the downgrade.
#[test]
fn a_refused_downgrade_keeps_the_writer() {
    let w = name(Mode::Write, 3);
    for (failed, answer) in [
        (Some(ReplaceStep::Reader), Answer::Failed),
        (Some(ReplaceStep::Reader), Answer::NoAuth),
        (Some(ReplaceStep::Writer), Answer::Failed),
        (None, Answer::Failed),
        (Some(ReplaceStep::Successor), Answer::Failed),
    ] {
        let (_, mut reader, _) = downgrading(std::slice::from_ref(&w));
        assert_eq!(
            reader.step(replaced(answer.clone(), failed, false)),
            Action::GiveUp,
            "{failed:?} {answer:?}"
        );
    }
    let (_, mut reader, _) = downgrading(std::slice::from_ref(&w));
    assert_eq!(
        reader.step(replaced(Answer::Retry, None, false)),
        Action::Fail(Failure::Request)
    );
    // A revocation request on the writer already known: any version.
    let mut writer = holder(Mode::Write, 3);
    writer.note_revoked();
    assert!(writer.begin_replace().is_ok());
    let mut reader = Contender::new(
        Mode::Read,
        true,
        Layout::Native,
        Uuid::from_u128(0xef),
        SESSION,
        false,
    )
    .replacing(&w, false, writer.is_revoked());
    reader.start();
    let me = reader_name(9);
    let action = reader.step(created(&me, 50, Some(&[w.clone(), me.clone()])));
    assert!(
        matches!(
            action,
            Action::Replace {
                writer_version: None,
                ..
            }
        ),
        "{action:?}"
    );
}

#[test]
fn a_failed_acquire_waits_for_its_withdrawal_and_reports_whose_error_the_table_says() {
    use Blame::{Failure as Its, Withdrawal};
    // (failure, waits for the withdrawal, blamed if it was refused)
    for (failure, waits, if_refused) in [
        // Nothing to withdraw: the node is gone.
        (Failure::Lost, false, Its),
        (Failure::SessionEnded, false, Its),
        // Withdrawn in the background, reported at once.
        (Failure::InvalidName, false, Its),
        // A refused withdrawal leaves the node queued: that is the news.
        (Failure::Request, true, Withdrawal),
        (Failure::DirectoryHoldsData, true, Withdrawal),
        (Failure::NoDirectory, true, Withdrawal),
        (Failure::ListingTooLarge, true, Withdrawal),
        // The failure says more than a refusal would.
        (Failure::Exhausted, true, Its),
        (Failure::WriterLost, true, Its),
        // The disagreement on N is the news, withdrawn or not.
        (Failure::PermitsDisagree, true, Its),
    ] {
        let ending = failure.ending();
        assert_eq!(matches!(ending, Ending::Withdraw { .. }), waits, "{failure:?}");
        assert_eq!(ending.blame(true), if_refused, "{failure:?} refused");
        // A withdrawal that succeeded (or goes on in the background) never
        // takes the report.
        assert_eq!(ending.blame(false), Its, "{failure:?} not refused");
    }
}

/// A writer that failed with [`Failure::ListingTooLarge`]: its listing of
/// three writers and a stranger's node is one byte over its limit.
fn refused_a_listing() -> Contender {
    let me = name(Mode::Write, 3);
    let listing = [
        "x-W-0000000001".to_owned(),
        "notes".to_owned(),
        "y-W-0000000002".to_owned(),
        me.clone(),
    ];
    let size = crate::limits::listing_size(&listing);
    let mut c = contender(Mode::Write).with_listing_limit(Some(size - 1));
    c.start();
    assert_eq!(
        c.step(created(&me, 41, Some(&listing))),
        Action::Fail(Failure::ListingTooLarge)
    );
    c
}

/// A semaphore's contender asking for 2 permits that failed with
/// [`Failure::PermitsDisagree`]: the contender before it carries 3.
fn disagreed_on_permits() -> Contender {
    let mut c = contender(Mode::Write).with_permits(NonZeroU32::new(2));
    c.start();
    let me = format!("{}0000000002", c.prefix("h").unwrap_or_default());
    let listing = ["o@permits-3@t-W-0000000001".to_owned(), me.clone()];
    assert_eq!(
        c.step(created(&me, 41, Some(&listing))),
        Action::Fail(Failure::PermitsDisagree)
    );
    c
}

#[test]
fn a_failed_acquire_warns_of_a_directory_that_needs_its_operator() {
    let refused = refused_a_listing();
    let listing = refused.refused_listing();
    assert!(listing.is_some());
    let waiting = waiting_writer();
    for (failure, machine, warning) in [
        (Failure::Exhausted, &waiting, Some(Warning::CounterUsedUp)),
        (
            Failure::ListingTooLarge,
            &refused,
            Some(Warning::ListingTooLarge(listing)),
        ),
        // The listing not kept: warned of all the same.
        (
            Failure::ListingTooLarge,
            &waiting,
            Some(Warning::ListingTooLarge(None)),
        ),
        (Failure::Lost, &waiting, None),
        (Failure::SessionEnded, &waiting, None),
        (Failure::InvalidName, &waiting, None),
        (Failure::Request, &waiting, None),
        (Failure::DirectoryHoldsData, &waiting, None),
        (Failure::NoDirectory, &waiting, None),
        (Failure::WriterLost, &waiting, None),
        (Failure::PermitsDisagree, &disagreed_on_permits(), None),
    ] {
        assert_eq!(failure.warning(machine), warning, "{failure:?}");
    }
}

#[test]
fn a_failed_acquire_reports_what_the_table_says() {
    use crate::lease::SessionState::{
        AuthFailed, Closed, Connected, ConnectedReadOnly, Disconnected, Expired,
    };
    use Failure as F;
    use Reported as R;
    use RequestError::{Answered, Unanswered};
    let fresh = {
        let mut c = contender(Mode::Write);
        c.start();
        c
    };
    let waiting = waiting_writer();
    let (f, w) = (&fresh, &waiting);
    let me = name(Mode::Write, 2);
    let me = Some(me.as_str());
    let writer = name(Mode::Write, 3);
    let (_, reader, _) = downgrading(std::slice::from_ref(&writer));
    let writer = Some(writer.as_str());
    // A node gone, the session over: (failure, machine, the session's end an
    // event told, the session now, reported).
    for (failure, machine, ended, now, reported) in [
        // My node gone: lost while the session lives, else the session's end.
        (F::Lost, w, None, Connected, R::Lost { node: me }),
        (F::Lost, w, None, Disconnected, R::Lost { node: me }),
        (F::Lost, w, None, ConnectedReadOnly, R::Lost { node: me }),
        (F::Lost, w, None, Expired, R::SessionExpired),
        (F::Lost, w, None, Closed, R::SessionClosed),
        (F::Lost, w, None, AuthFailed, R::AuthFailed),
        (F::Lost, f, None, Connected, R::Lost { node: None }),
        // What an event told does not make a lost node the session's end.
        (F::Lost, w, Some(Expired), Connected, R::Lost { node: me }),
        // The session's end an event told wins, then the state now, then
        // my node gone.
        (F::SessionEnded, w, Some(Expired), Connected, R::SessionExpired),
        (F::SessionEnded, w, Some(Closed), Expired, R::SessionClosed),
        (F::SessionEnded, w, Some(AuthFailed), Expired, R::AuthFailed),
        (F::SessionEnded, w, Some(Disconnected), Expired, R::SessionExpired),
        (F::SessionEnded, w, None, Closed, R::SessionClosed),
        (
            F::SessionEnded,
            w,
            Some(Connected),
            Connected,
            R::Lost { node: me },
        ),
        (F::SessionEnded, f, None, Disconnected, R::Lost { node: None }),
        // A downgrade's writer gone: that node, not the reader's own.
        (F::WriterLost, &reader, None, Connected, R::Lost { node: writer }),
        (F::WriterLost, &reader, Some(Closed), Expired, R::SessionExpired),
    ] {
        assert_eq!(
            failure.reported::<()>(machine, None, ended, now),
            reported,
            "{failure:?}, ended {ended:?}, now {now:?}"
        );
    }
    // A request failed for good: no answer, the server's error, or none
    // known; whatever the session.
    for (last, reported) in [
        (Some(Unanswered("lost")), R::NoAnswer("lost")),
        (Some(Answered("refused")), R::RequestFailed("refused")),
        (None, R::Unexplained),
    ] {
        for (ended, now) in [(None, Connected), (Some(Expired), Expired)] {
            assert_eq!(
                F::Request.reported(w, last, ended, now),
                reported,
                "{last:?}, ended {ended:?}, now {now:?}"
            );
        }
    }
    // The others name what the machine kept, whatever the last request's
    // error and the session.
    let refused = refused_a_listing();
    let size = refused.refused_listing().map_or(0, |r| r.size);
    let disagreeing = disagreed_on_permits();
    for (failure, machine, reported) in [
        (F::Exhausted, w, R::SequenceExhausted),
        (F::DirectoryHoldsData, w, R::DirectoryHoldsData),
        (F::NoDirectory, w, R::NoDirectory),
        (F::InvalidName, w, R::InvalidName { node: me }),
        (F::InvalidName, f, R::InvalidName { node: None }),
        // The listing refused; zeros if it was not kept.
        (
            F::ListingTooLarge,
            &refused,
            R::ListingTooLarge {
                contenders: 3,
                size,
                limit: size - 1,
            },
        ),
        (
            F::ListingTooLarge,
            w,
            R::ListingTooLarge {
                contenders: 0,
                size: 0,
                limit: 0,
            },
        ),
        // The contender that carries another count, and both counts; a
        // lock's contender asked for none.
        (
            F::PermitsDisagree,
            &disagreeing,
            R::PermitsDisagree {
                node: Some("o@permits-3@t-W-0000000001"),
                carried: 3,
                asked: 2,
            },
        ),
        (
            F::PermitsDisagree,
            w,
            R::PermitsDisagree {
                node: None,
                carried: 0,
                asked: 0,
            },
        ),
    ] {
        for (last, ended, now) in [
            (None, None, Connected),
            (Some(Unanswered("lost")), Some(Expired), Expired),
            (Some(Answered("refused")), None, Closed),
        ] {
            assert_eq!(
                failure.reported(machine, last, ended, now),
                reported,
                "{failure:?}, ended {ended:?}, now {now:?}"
            );
        }
    }
}

/// A transaction's operations, one word each: `set PATH DATA`, `create
/// PATH`, `delete PATH [vN]`, `check PATH`, each with its step's name for a
/// downgrade's.
fn ops_of(tx: &Transaction, dir: &str) -> Vec<String> {
    let short = |path: &str| path.strip_prefix(dir).unwrap_or(path).to_owned();
    let version = |v: &Option<i32>| v.map(|v| format!(" v{v}")).unwrap_or_default();
    tx.ops()
        .iter()
        .enumerate()
        .map(|(i, op)| {
            let op = match op {
                Op::Check { path, version: v } => format!("check {}{}", short(path), version(v)),
                Op::Create { path, data } => {
                    assert!(data.is_empty());
                    format!("create {}", short(path))
                }
                Op::Delete { path, version: v } => format!("delete {}{}", short(path), version(v)),
                Op::SetData {
                    path,
                    data,
                    version: v,
                } => format!(
                    "set {} {}{}",
                    short(path),
                    String::from_utf8_lossy(data),
                    version(v)
                ),
            };
            match tx.failed_step(i) {
                Some(step) => format!("{op} ({step:?})"),
                None => op,
            }
        })
        .collect()
}

#[test]
fn a_release_with_the_record_sends_record_marker_and_deletion_in_that_order() {
    let dir = "/locks/a";
    let release = Action::Delete {
        name: "w-W-0000000003".into(),
        record: true,
    };
    let tx = release.transaction(dir).unwrap();
    assert_eq!(
        ops_of(&tx, dir),
        [
            "set  w-W-0000000003",
            "create /w-W-0000000003.released",
            "delete /w-W-0000000003.released",
            "delete /w-W-0000000003",
        ]
        .map(|op| op.replace(".released", crate::node_name::RELEASE_MARKER_SUFFIX))
    );
    // Any refusal means the same (a plain deletion next): no step.
    assert_eq!(tx.failed_step(0), None);
    assert_eq!(tx.created(), None);
    // A plain deletion is a single request, no transaction.
    let plain = Action::Delete {
        name: "w-W-0000000003".into(),
        record: false,
    };
    assert_eq!(plain.transaction(dir), None);
    assert_eq!(Action::Create.transaction(dir), None);
}

#[test]
fn a_downgrades_transaction_sends_its_operations_in_order_and_names_each_failing_index() {
    let dir = "/d";
    let marker = |name: &str| format!("{name}{}", crate::node_name::RELEASE_MARKER_SUFFIX);
    let replace = |successor: Option<&str>, record: bool, writer_version: Option<i32>| Action::Replace {
        writer: "w".into(),
        reader: "r".into(),
        successor: successor.map(str::to_owned),
        mine: "m".into(),
        record,
        writer_version,
    };
    for (action, want) in [
        (
            replace(None, false, Some(0)),
            vec!["create /r (Reader)", "delete /w v0 (Writer)", "delete /m (Mine)"],
        ),
        // A revocation request known: the writer is deleted at any version.
        (
            replace(None, false, None),
            vec!["create /r (Reader)", "delete /w (Writer)", "delete /m (Mine)"],
        ),
        (
            replace(Some("s"), false, Some(0)),
            vec![
                "check /s (Successor)",
                "create /r (Reader)",
                "delete /w v0 (Writer)",
                "delete /m (Mine)",
            ],
        ),
        (
            replace(Some("s"), true, Some(0)),
            vec![
                "check /s (Successor)",
                "set  w (Record)",
                &format!("create /{} (Marker)", marker("w")),
                &format!("delete /{} (Marker)", marker("w")),
                "create /r (Reader)",
                "delete /w v0 (Writer)",
                "delete /m (Mine)",
            ],
        ),
        (
            replace(None, true, None),
            vec![
                "set  w (Record)",
                &format!("create /{} (Marker)", marker("w")),
                &format!("delete /{} (Marker)", marker("w")),
                "create /r (Reader)",
                "delete /w (Writer)",
                "delete /m (Mine)",
            ],
        ),
    ] {
        let tx = action.transaction(dir).unwrap();
        assert_eq!(ops_of(&tx, dir), want, "{action:?}");
        // The reader's create carries its czxid; past the end, no step.
        let (index, path) = tx.created().unwrap();
        assert_eq!((tx.failed_step(index), path), (Some(ReplaceStep::Reader), "/d/r"));
        assert_eq!(tx.failed_step(want.len()), None);
    }
}

#[test]
fn a_peer_layouts_node_holds_the_identity_a_native_one_nothing() {
    for (layout, data) in [
        (Layout::Native, &b""[..]),
        (Layout::Curator, b"host-1"),
        (Layout::CuratorMutex, b"host-1"),
        (Layout::Kazoo, b"host-1"),
    ] {
        assert_eq!(node_data(layout, "host-1"), data, "{layout:?}");
    }
    assert_eq!(child_path("/a/b", "c-R-0000000001"), "/a/b/c-R-0000000001");
}

#[test]
fn the_machine_recognises_a_revocation_request_in_the_data_it_is_fed() {
    use crate::node_name::REVOKE_PAYLOAD;
    // (data read, revoked after); the request is kept for good.
    for (reads, revoked) in [
        (&[&b""[..]][..], false),
        (&[b"__REVOKE__ "], false),
        (&[b"__revoke__"], false),
        (&[b"something else"], false),
        (&[REVOKE_PAYLOAD], true),
        (&[REVOKE_PAYLOAD, b""], true),
        (&[b"", REVOKE_PAYLOAD], true),
    ] {
        // While waiting: my node's data, read with its watch.
        let mut waiting = contender(Mode::Read);
        for data in reads {
            waiting.own_data_read(data);
        }
        assert_eq!(waiting.is_revoked(), revoked, "waiting, {reads:?}");
        // While holding: the keeper's read of the held node.
        let mut held = holder(Mode::Read, 1);
        let czxid = held.czxid().unwrap();
        for data in reads {
            assert_eq!(
                held.held_watch_set(Answer::Ok(HeldNode::read(czxid, data))),
                Keep::Wait
            );
        }
        assert_eq!(held.is_revoked(), revoked, "held, {reads:?}");
        assert!(!held.is_lost());
    }
}

#[test]
fn a_semaphores_contender_is_named_with_its_count_and_never_downgrades() {
    let token = Uuid::from_u128(7);
    let permits = std::num::NonZeroU32::new(3);
    let semaphore = |mode, layout| Contender::new(mode, true, layout, token, 1, false).with_permits(permits);
    assert_eq!(
        semaphore(Mode::Write, Layout::Native).prefix("web01").as_deref(),
        Some("web01@permits-3@00000000000000000000000000000007-W-")
    );
    // A permit is a native writer: no other layout or mode names one.
    assert_eq!(semaphore(Mode::Read, Layout::Native).prefix("web01"), None);
    assert_eq!(semaphore(Mode::Write, Layout::Curator).prefix("web01"), None);
    // A lock's contender is named by its layout.
    let lock = Contender::new(Mode::Read, true, Layout::Native, token, 1, false);
    assert_eq!(
        lock.prefix("web01"),
        Layout::Native.prefix("web01", token, Mode::Read)
    );
    // Held, a permit refuses to downgrade (it has no read mode).
    let mut held = semaphore(Mode::Write, Layout::Native);
    let name = "web01@permits-3@00000000000000000000000000000007-W-0000000001".to_owned();
    let _ = held.start();
    let listing = [name.clone()];
    let _ = held.step(created(&name, 40, Some(&listing)));
    assert!(held.is_held(), "granted at its first look");
    assert!(matches!(held.begin_replace(), Err(DowngradeRefused::Permit)));
}

#[test]
fn a_semaphores_waiter_polls_what_it_may_not_read_and_keeps_what_its_carrier_holds() {
    let permits = std::num::NonZeroU32::new(2);
    let mut c = contender(Mode::Write).with_permits(permits);
    assert_eq!(c.start(), Action::Create);
    let tagged = |seq: i32| format!("o{seq}@permits-2@t{seq}-W-{seq:010}");
    let me = format!("{}0000000003", c.prefix("h").unwrap_or_default());
    let listing = vec![tagged(0), tagged(1), tagged(2), me.clone()];
    let watch = c.step(created(&me, 40, Some(&listing)));
    assert!(
        matches!(&watch, Action::Acquire(Wait::SetWatches { also, .. }) if also.len() == 1),
        "{watch:?}"
    );
    assert!(c.polled().is_empty());
    // The nearest refuses READ: polled; the farther one is watched.
    let polls = c.step(Input::Acquire(Heard::WatchesSet {
        blind: false,
        own: None,
        watched: Reply::NoAuth,
        marker: None,
        also: vec![Reply::Ok(())],
    }));
    assert_eq!(polls, Action::Acquire(Wait::Wait { poll: true }));
    assert_eq!(c.polled(), [tagged(2)]);
    // My node written to: listed again; the farther one's watch is held
    // unfired by the carrier, so it is kept.
    let relist = c.step(Input::Acquire(Heard::Event(crate::acquire::Event::Own(
        NodeEvent::DataChanged,
    ))));
    assert_eq!(relist, Action::Acquire(Wait::List));
    c.watches_pending(&[tagged(1)]);
    let again = c.step(Input::Acquire(Heard::Listed(Reply::Ok(listing.clone().leak()))));
    let Action::Acquire(Wait::SetWatches { kept, .. }) = again else {
        panic!("watches again, got {again:?}");
    };
    assert_eq!(kept, [tagged(1)]);
    // Once its carrier no longer holds it (its event came), it is asked again.
    let _ = c.step(Input::Acquire(Heard::WatchesSet {
        blind: false,
        own: None,
        watched: Reply::Ok(()),
        marker: None,
        also: vec![Reply::Ok(())],
    }));
    let _ = c.step(Input::Acquire(Heard::Event(crate::acquire::Event::Own(
        NodeEvent::DataChanged,
    ))));
    c.watches_pending(&[]);
    let fresh = c.step(Input::Acquire(Heard::Listed(Reply::Ok(listing.leak()))));
    let Action::Acquire(Wait::SetWatches { kept, .. }) = fresh else {
        panic!("watches again, got {fresh:?}");
    };
    assert!(kept.is_empty(), "{kept:?}");
}

#[test]
fn what_is_known_of_reading_my_node_is_given_to_the_wait_and_learnt_from_it() {
    let me = name(Mode::Write, 3);
    let listing = [
        "x-W-0000000001".to_owned(),
        "x-W-0000000002".to_owned(),
        me.clone(),
    ];
    let marker = Some(crate::node_name::release_marker(&listing[1]));
    // Given: known (the wire sends the own and marker watches together).
    let mut known = contender(Mode::Write).with_own_readable(true);
    known.start();
    assert!(known.own_readable());
    assert!(matches!(
        known.step(created(&me, 41, Some(&listing))),
        Action::Acquire(Wait::SetWatches { own: true, together: true, ref marker, .. }) if marker.is_some()
    ));
    // Not given: apart, and learnt once my node's data watch is set.
    let mut learning = contender(Mode::Write);
    learning.start();
    assert_eq!(
        learning.step(created(&me, 41, Some(&listing))),
        Action::Acquire(Wait::SetWatches {
            blind: false,
            kept: Vec::new(),
            lingers: false,
            also: Vec::new(),
            own: true,
            marker,
            watched: listing[1].clone(),
            together: true,
        })
    );
    // The wire sends them apart: not known readable.
    assert!(!learning.own_readable());
    // My node, read: learnt.
    learning.own_node_read(41);
    assert!(learning.own_readable());
    // A node made again under my name by someone else teaches nothing, and
    // means mine is gone: the wait ends lost, and nothing is withdrawn (the
    // node there is not mine).
    let mut remade = contender(Mode::Write);
    remade.start();
    remade.step(created(&me, 41, Some(&listing)));
    remade.own_node_read(42);
    assert!(!remade.own_readable());
    assert_eq!(
        remade.step(Input::Acquire(Heard::WatchesSet {
            blind: false,
            also: Vec::new(),
            own: Some(Reply::Ok(())),
            watched: Reply::Ok(()),
            marker: Some(Reply::Ok(false)),
        })),
        Action::Fail(Failure::Lost)
    );
    // Once the connection changed, what was learnt on the old one goes.
    learning.connection_changed();
    assert!(!learning.own_readable());
}
