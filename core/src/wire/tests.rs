use uuid::Uuid;

use super::*;
use crate::acquire::Input as WaitInput;
use crate::contender::{Failure, Input, ReplaceStep};
use crate::node_name::{Layout, Mode};

pub(super) const DIR: &str = "/locks/a";

pub(super) fn wire() -> Wire {
    Wire::new(DIR, "h-W-", Vec::new())
}

pub(super) fn machine() -> Contender {
    Contender::new(Mode::Write, true, Layout::Native, Uuid::nil(), 7, false)
}

/// A machine whose node `h-W-0000000003` was created, waiting on `h-W-0000000002`.
pub(super) fn waiting() -> (Wire, Contender, Action) {
    let (wire, machine, _, action) = created(3, &["h-W-0000000002"]);
    (wire, machine, action)
}

/// A lock's wait on `h-W-0000000002` ([`waiting`]'s): its own node's
/// watch, the watched node's and its release marker's, none left to fire.
pub(super) fn lock_watches() -> Action {
    Action::Acquire(acquire::Action::SetWatches {
        blind: false,
        together: false,
        kept: Vec::new(),
        lingers: false,
        own: true,
        watched: "h-W-0000000002".to_owned(),
        marker: Some(node_name::release_marker("h-W-0000000002")),
        also: Vec::new(),
    })
}

/// A semaphore's wait on `h-W-0000000002` and `h-W-0000000001` that keeps
/// its watch on the first, set before, and leaves its watches to fire.
pub(super) fn semaphore_watches() -> Action {
    Action::Acquire(acquire::Action::SetWatches {
        blind: false,
        own: false,
        together: false,
        watched: "h-W-0000000002".to_owned(),
        marker: None,
        also: vec!["h-W-0000000001".to_owned()],
        lingers: true,
        kept: vec!["h-W-0000000002".to_owned()],
    })
}

pub(super) fn stat(czxid: i64) -> Stat {
    Stat {
        czxid,
        ephemeral_owner: 7,
    }
}

#[test]
fn a_create_is_sent_with_a_listing_and_names_the_node_from_its_sequence() {
    let wire = wire();
    let mut machine = machine();
    let action = machine.start();
    let mut exchange = wire.exchange(&action, &machine).expect("a create");
    assert_eq!(
        exchange.requests(),
        [
            Request::Create {
                path: "/locks/a/h-W-".to_owned(),
                data: Vec::new(),
                mode: CreateMode::EphemeralSequential,
                acl: Acl::Contender,
            },
            // A watch on the directory's children: no request more.
            Request::List {
                watch: true,
                path: DIR.to_owned(),
                stat: true
            },
        ]
    );
    assert_eq!(exchange.watch_of(1), [Watch::Listing]);
    assert!(
        exchange.lingers(1),
        "a listing's watch is left to fire, never removed"
    );
    assert!(
        !exchange.retried(0) && !exchange.retried(1),
        "a create is never sent twice"
    );
    assert_eq!(
        exchange.answer(0, Ok(Reply::Created { czxid: 5, seq: 12 })),
        Progress::Pending
    );
    let children = vec!["h-W-0000000012".to_owned()];
    assert_eq!(
        exchange.answer(
            1,
            Ok(Reply::Children {
                children: children.clone(),
                data_length: 0
            })
        ),
        Progress::Complete
    );
    assert_eq!(
        exchange.input("h-W-"),
        Some(Input::Created {
            node: Answer::Ok(Created {
                name: "h-W-0000000012".to_owned(),
                czxid: 5
            }),
            listing: Some(Answer::Ok((children.as_slice(), 0))),
        })
    );
    assert_eq!(exchange.listing(), Some(children.as_slice()));
}

#[test]
fn a_failed_create_is_told_without_its_listing() {
    let wire = wire();
    let mut machine = machine();
    let action = machine.start();
    for (error, answer) in [
        (Error::Unanswered, Answer::Retry),
        (Error::NoNode, Answer::NoNode),
        (Error::NoAuth, Answer::NoAuth),
        (Error::SessionEnded, Answer::SessionEnded),
        (Error::NodeExists, Answer::Exists),
    ] {
        let mut exchange = wire.exchange(&action, &machine).expect("a create");
        // The listing's answer is awaited for its watch.
        assert_eq!(exchange.answer(0, Err(error.clone())), Progress::Pending);
        assert_eq!(exchange.answer(1, Err(error)), Progress::Complete);
        assert_eq!(
            exchange.input("h-W-"),
            Some(Input::Created {
                node: answer,
                listing: None
            })
        );
    }
}

#[test]
fn errors_read_as_the_rules_read_them() {
    let refused = |error| Error::Refused {
        index: 2,
        error: Box::new(error),
    };
    for (error, answer, reply) in [
        (Error::NoNode, Answer::NoNode, WaitReply::NoNode),
        (Error::NodeExists, Answer::Exists, WaitReply::Failed),
        (Error::NoAuth, Answer::NoAuth, WaitReply::NoAuth),
        (Error::BadVersion, Answer::Failed, WaitReply::Failed),
        (Error::NotEmpty, Answer::Failed, WaitReply::Failed),
        (Error::Unimplemented, Answer::Unimplemented, WaitReply::Failed),
        (Error::Unanswered, Answer::Retry, WaitReply::Retry),
        (Error::SessionEnded, Answer::SessionEnded, WaitReply::Failed),
        (Error::Failed, Answer::Failed, WaitReply::Failed),
        (refused(Error::NoNode), Answer::NoNode, WaitReply::NoNode),
        (refused(Error::NodeExists), Answer::Exists, WaitReply::Failed),
    ] {
        assert_eq!(error.answer::<()>(), answer, "{error:?}");
        assert_eq!(error.reply::<()>(), reply, "{error:?}");
    }
}

#[test]
fn the_directory_and_its_parents_are_made_with_the_directory_acl_and_retried() {
    let wire = wire();
    let machine = machine();
    let exchange = wire
        .exchange(&Action::CreateDir { container: true }, &machine)
        .expect("a create");
    assert_eq!(
        exchange.requests(),
        [Request::Create {
            path: DIR.to_owned(),
            data: Vec::new(),
            mode: CreateMode::Container,
            acl: Acl::Directory,
        }]
    );
    assert!(exchange.retried(0));
    let exchange = wire.exchange(&Action::CreateParents, &machine).expect("a mkdir");
    assert_eq!(
        exchange.requests(),
        [Request::MakePath {
            path: "/locks".to_owned()
        }]
    );
    // A directory at the root has no parent to make: nothing is sent.
    let mut top = Wire::new("/a", "h-W-", Vec::new());
    let exchange = top
        .exchange(&Action::CreateParents, &machine)
        .expect("an exchange");
    assert!(exchange.requests().is_empty() && exchange.is_complete());
    assert_eq!(
        exchange.input("h-W-"),
        Some(Input::ParentsCreated(Answer::Ok(()))),
        "nothing to make: made"
    );
    let mut machine = machine;
    let _ = machine.start();
    let _ = top.settle(&exchange, &mut machine);
}

#[test]
fn finding_my_node_syncs_before_it_lists() {
    let wire = wire();
    let machine = machine();
    let mut exchange = wire.exchange(&Action::FindOwn, &machine).expect("a find");
    assert_eq!(exchange.requests(), [Request::Sync { path: DIR.to_owned() }]);
    let list = Request::List {
        watch: false,
        path: DIR.to_owned(),
        stat: false,
    };
    // The listing leaves once the sync is answered, even by a failure.
    assert_eq!(
        exchange.answer(0, Err(Error::Failed)),
        Progress::Send(list.clone())
    );
    assert_eq!(
        exchange.requests(),
        [Request::Sync { path: DIR.to_owned() }, list]
    );
    assert!(exchange.retried(0) && exchange.retried(1));
    assert!(!exchange.retried(2), "no such request");
    let children = vec!["x".to_owned()];
    exchange.answer(
        1,
        Ok(Reply::Children {
            children: children.clone(),
            data_length: 0,
        }),
    );
    assert_eq!(exchange.listing(), Some(children.as_slice()));
    // The sync's failure is not the answer: the listing is.
    assert_eq!(
        exchange.input("h-W-"),
        Some(Input::Found(Answer::Ok(children.as_slice())))
    );
}

#[test]
fn a_release_with_the_record_is_one_transaction_and_notes_a_lost_answer() {
    let wire = wire();
    let machine = machine();
    let action = Action::Delete {
        name: "h-W-0000000003".to_owned(),
        record: true,
    };
    let mut exchange = wire.exchange(&action, &machine).expect("a release");
    let tx = action.transaction(DIR).expect("a transaction");
    assert_eq!(
        exchange.requests(),
        [Request::Multi {
            ops: tx.ops().to_vec()
        }]
    );
    assert!(exchange.retried(0));
    exchange.lost(0);
    assert_eq!(exchange.answer(0, Err(Error::NoNode)), Progress::Complete);
    assert_eq!(
        exchange.input("h-W-"),
        Some(Input::Deleted {
            answer: Answer::NoNode,
            answer_lost: true
        })
    );
    let plain = Action::Delete {
        name: "h-W-0000000003".to_owned(),
        record: false,
    };
    let mut exchange = wire.exchange(&plain, &machine).expect("a deletion");
    assert_eq!(
        exchange.requests(),
        [Request::Delete {
            path: "/locks/a/h-W-0000000003".to_owned(),
            version: None
        }]
    );
    exchange.answer(0, Ok(Reply::Done));
    assert_eq!(
        exchange.input("h-W-"),
        Some(Input::Deleted {
            answer: Answer::Ok(()),
            answer_lost: false
        })
    );
}

#[test]
fn recycling_sends_the_version_read_with_the_acl_and_nothing_without_it() {
    let mut wire = wire();
    let mut machine = machine();
    let exchange = wire.exchange(&Action::Recycle, &machine).expect("an exchange");
    assert!(
        exchange.requests().is_empty(),
        "no ACL read: nothing to recreate with"
    );
    assert_eq!(exchange.input("h-W-"), Some(Input::Recycled(Answer::Failed)));
    let mut read = wire.exchange(&Action::ReadDirAcl, &machine).expect("a read");
    assert_eq!(read.requests(), [Request::GetAcl { path: DIR.to_owned() }]);
    read.answer(
        0,
        Ok(Reply::Acl {
            version: 4,
            children: 0,
        }),
    );
    assert_eq!(read.input("h-W-"), Some(Input::DirAcl(Answer::Ok(0))));
    let _ = wire.settle(&read, &mut machine);
    let exchange = wire.exchange(&Action::Recycle, &machine).expect("an exchange");
    assert_eq!(
        exchange.requests(),
        [Request::Recreate {
            path: DIR.to_owned(),
            version: 4
        }]
    );
    let _ = wire.settle(&exchange, &mut machine);
    let again = wire.exchange(&Action::Recycle, &machine).expect("an exchange");
    assert!(again.requests().is_empty(), "a version read is used once");
}

fn replace(successor: bool) -> Action {
    Action::Replace {
        writer: "h-W-0000000001".to_owned(),
        reader: "h-R-0000000001".to_owned(),
        successor: successor.then(|| "h-R-0000000002".to_owned()),
        mine: "h-R-0000000004".to_owned(),
        record: false,
        writer_version: Some(0),
    }
}

#[test]
fn a_downgrade_names_the_operation_that_failed_it() {
    let wire = wire();
    let machine = machine();
    let action = replace(true);
    for (index, error, answer, step) in [
        (0, Error::NoNode, Answer::NoNode, Some(ReplaceStep::Successor)),
        (1, Error::NodeExists, Answer::Exists, Some(ReplaceStep::Reader)),
        (2, Error::BadVersion, Answer::Failed, Some(ReplaceStep::Writer)),
        (3, Error::NoNode, Answer::NoNode, Some(ReplaceStep::Mine)),
        (9, Error::NoNode, Answer::NoNode, None),
    ] {
        let mut exchange = wire.exchange(&action, &machine).expect("a downgrade");
        assert!(exchange.retried(0));
        let refused = Error::Refused {
            index,
            error: Box::new(error),
        };
        assert_eq!(exchange.answer(0, Err(refused)), Progress::Complete);
        assert_eq!(
            exchange.input("h-W-"),
            Some(Input::Replaced {
                answer,
                failed: step,
                answer_lost: false
            }),
            "index {index}"
        );
    }
}

#[test]
fn a_downgrade_whose_reader_stat_is_left_out_asks_for_it() {
    let wire = wire();
    let machine = machine();
    let mut exchange = wire.exchange(&replace(false), &machine).expect("a downgrade");
    let applied = Reply::Multi(vec![Done::Created(Some(stat(40))), Done::Deleted, Done::Deleted]);
    assert_eq!(exchange.answer(0, Ok(applied)), Progress::Complete);
    assert_eq!(
        exchange.input("h-W-"),
        Some(Input::Replaced {
            answer: Answer::Ok(40),
            failed: None,
            answer_lost: false
        })
    );
    let mut exchange = wire.exchange(&replace(false), &machine).expect("a downgrade");
    let left_out = Reply::Multi(vec![Done::Created(None), Done::Deleted, Done::Deleted]);
    assert_eq!(
        exchange.answer(0, Ok(left_out)),
        Progress::Send(Request::Exists {
            path: "/locks/a/h-R-0000000001".to_owned(),
            watch: false
        })
    );
    assert_eq!(exchange.input("h-W-"), None, "the stat is still missing");
    assert_eq!(
        exchange.answer(1, Ok(Reply::Stat(Some(stat(41))))),
        Progress::Complete
    );
    assert_eq!(
        exchange.input("h-W-"),
        Some(Input::Replaced {
            answer: Answer::Ok(41),
            failed: None,
            answer_lost: false
        }),
        "the lost answer of a read is no lost transaction"
    );
}

#[test]
fn watches_are_set_own_first_then_the_marker_then_the_watched_node() {
    let (wire, machine, _) = waiting();
    let watched = "h-W-0000000002".to_owned();
    let marker = Some(node_name::release_marker(&watched));
    let action = Action::Acquire(acquire::Action::SetWatches {
        blind: false,
        together: false,
        kept: Vec::new(),
        lingers: false,
        also: Vec::new(),
        own: true,
        watched: watched.clone(),
        marker: marker.clone(),
    });
    let watched = &watched;
    let mut exchange = wire.exchange(&action, &machine).expect("watches");
    assert_eq!(
        exchange.requests(),
        [
            Request::GetData {
                path: "/locks/a/h-W-0000000003".to_owned(),
                watch: true
            },
            Request::Exists {
                path: child_path(DIR, marker.as_deref().unwrap_or_default()),
                watch: true
            },
            Request::GetData {
                path: child_path(DIR, watched),
                watch: true
            },
        ]
    );
    assert!(exchange.requests().iter().all(Request::watches));
    for quiet in [
        Request::GetData {
            path: DIR.to_owned(),
            watch: false,
        },
        Request::Exists {
            path: DIR.to_owned(),
            watch: false,
        },
        Request::List {
            watch: false,
            path: DIR.to_owned(),
            stat: false,
        },
        Request::Sync { path: DIR.to_owned() },
    ] {
        assert!(!quiet.watches(), "{quiet:?} leaves no watch");
    }
    assert_eq!(wire.dir(), DIR);
    assert!(
        !exchange.retried(0),
        "a watch's request is not retried: the wait lists again"
    );
    let data = |czxid| Reply::Data {
        data: Vec::new(),
        stat: stat(czxid),
    };
    exchange.answer(0, Ok(data(30)));
    // A marker that exists already is a stranger's: its watch is dropped.
    exchange.answer(1, Ok(Reply::Stat(Some(stat(9)))));
    assert_eq!(exchange.answer(2, Ok(data(20))), Progress::Complete);
    assert_eq!(exchange.watch(0), [Some(Watch::Own)]);
    assert_eq!(
        exchange.watch(1),
        [None],
        "a stranger's marker's watch is dropped"
    );
    assert_eq!(exchange.watch(2), [Some(Watch::Watched)]);
    assert_eq!(
        exchange.input("h-W-"),
        Some(Input::Acquire(WaitInput::WatchesSet {
            blind: false,
            also: Vec::new(),
            own: Some(WaitReply::Ok(())),
            watched: WaitReply::Ok(()),
            marker: Some(WaitReply::Ok(true)),
        }))
    );
    let mut absent = wire.exchange(&action, &machine).expect("watches");
    absent.answer(1, Ok(Reply::Stat(None)));
    absent.answer(2, Err(Error::NoNode));
    assert_eq!(
        absent.watch(1),
        [Some(Watch::Marker)],
        "an absent marker's watch waits for its creation"
    );
    assert!(absent.watch(2).is_empty(), "no watch is left on a missing node");
}

#[test]
fn my_node_read_while_waiting_carries_a_revocation_request() {
    let (mut wire, mut machine, _) = waiting();
    let watched = "h-W-0000000002".to_owned();
    let action = Action::Acquire(acquire::Action::SetWatches {
        blind: false,
        together: false,
        kept: Vec::new(),
        lingers: false,
        also: Vec::new(),
        own: true,
        marker: Some(node_name::release_marker(&watched)),
        watched,
    });
    let mut exchange = wire.exchange(&action, &machine).expect("watches");
    let revoke = Reply::Data {
        data: node_name::REVOKE_PAYLOAD.to_vec(),
        stat: stat(30),
    };
    exchange.answer(0, Ok(revoke));
    exchange.answer(1, Ok(Reply::Stat(None)));
    exchange.answer(
        2,
        Ok(Reply::Data {
            data: Vec::new(),
            stat: stat(20),
        }),
    );
    assert!(!machine.is_revoked());
    let _ = wire.settle(&exchange, &mut machine);
    assert!(machine.is_revoked());
}

#[test]
fn the_record_is_read_with_my_node_in_one_request() {
    let (wire, machine, _) = waiting();
    let watched = "h-W-0000000002";
    let read = Action::Acquire(acquire::Action::ReadRecord {
        watched: watched.to_owned(),
    });
    let mut exchange = wire.exchange(&read, &machine).expect("a read");
    assert_eq!(
        exchange.requests(),
        [Request::ReadAll {
            paths: vec![DIR.to_owned(), "/locks/a/h-W-0000000003".to_owned()]
        }]
    );
    assert!(exchange.retried(0));
    let record = node_name::release_record(watched).to_vec();
    exchange.answer(0, Ok(Reply::Reads(vec![Ok(record), Err(Error::NoNode)])));
    assert_eq!(
        exchange.input("h-W-"),
        Some(Input::Acquire(WaitInput::RecordRead(WaitReply::Ok(Record {
            names_watched: true,
            own: WaitReply::NoNode
        }))))
    );
    let mut short = wire.exchange(&read, &machine).expect("a read");
    short.answer(0, Ok(Reply::Reads(vec![Ok(Vec::new())])));
    assert_eq!(
        short.input("h-W-"),
        Some(Input::Acquire(WaitInput::RecordRead(WaitReply::Failed))),
        "an answer that does not match the read is no answer"
    );
}

#[test]
fn a_deadline_is_the_waits_to_take_and_ends_a_request_of_the_contenders_own() {
    let (wire, mut machine, action) = waiting();
    let exchange = wire.exchange(&action, &machine).expect("watches");
    assert!(exchange.is_wait());
    // The wait takes it: a waiting writer gives up (and withdraws).
    assert_eq!(deadline(Some(&exchange), &mut machine.clone()), Action::GiveUp);
    assert_eq!(deadline(None, &mut machine.clone()), Action::GiveUp);
    let find = wire.exchange(&Action::FindOwn, &machine).expect("a find");
    assert!(!find.is_wait());
    assert_eq!(deadline(Some(&find), &mut machine), Action::GiveUp);
}

#[test]
fn the_keeper_reads_the_held_node_with_a_watch() {
    let wire = wire();
    let mut exchange = wire.keep("h-W-0000000003");
    assert_eq!(
        exchange.requests(),
        [Request::GetData {
            path: "/locks/a/h-W-0000000003".to_owned(),
            watch: true
        }]
    );
    assert_eq!(exchange.held(), Answer::Failed, "no answer yet");
    exchange.answer(
        0,
        Ok(Reply::Data {
            data: node_name::REVOKE_PAYLOAD.to_vec(),
            stat: stat(30),
        }),
    );
    assert_eq!(exchange.watch(0), [Some(Watch::Held)]);
    assert_eq!(
        exchange.held(),
        Answer::Ok(HeldNode {
            czxid: 30,
            revocation: true
        })
    );
    let mut gone = wire.keep("h-W-0000000003");
    gone.answer(0, Err(Error::NoNode));
    assert!(gone.watch(0).is_empty());
    assert_eq!(gone.held(), Answer::NoNode);
}

#[test]
fn ends_and_the_wait_send_nothing() {
    let wire = wire();
    let machine = machine();
    for action in [
        Action::Grant { mark: false },
        Action::GiveUp,
        Action::Fail(Failure::Lost),
        Action::Done(contender::Outcome::Deleted),
        Action::Acquire(acquire::Action::Wait { poll: false }),
    ] {
        assert_eq!(wire.exchange(&action, &machine), None, "{action:?}");
    }
}

#[test]
fn a_failure_reports_the_error_of_the_request_the_rules_name() {
    let (wire, machine, _) = waiting();
    let watched = "h-W-0000000002".to_owned();
    let action = Action::Acquire(acquire::Action::SetWatches {
        blind: false,
        together: false,
        kept: Vec::new(),
        lingers: false,
        also: Vec::new(),
        own: true,
        marker: Some(node_name::release_marker(&watched)),
        watched,
    });
    let mut exchange = wire.exchange(&action, &machine).expect("watches");
    assert_eq!(exchange.watch_of(0), [Watch::Own]);
    assert_eq!(exchange.watch_of(1), [Watch::Marker]);
    assert_eq!(exchange.watch_of(2), [Watch::Watched]);
    assert!(exchange.forgets_session_changes());
    exchange.answer(1, Err(Error::Failed));
    exchange.answer(2, Err(Error::NoAuth));
    exchange.answer(
        0,
        Ok(Reply::Data {
            data: Vec::new(),
            stat: stat(30),
        }),
    );
    assert_eq!(
        exchange.blame(),
        Some((2, "/locks/a/h-W-0000000002")),
        "never the marker's"
    );
    exchange.answer(0, Err(Error::NoNode));
    assert_eq!(
        exchange.blame(),
        Some((0, "/locks/a/h-W-0000000003")),
        "my own node's first"
    );

    let mut find = wire.exchange(&Action::FindOwn, &machine).expect("a find");
    find.answer(0, Err(Error::Failed));
    find.answer(
        1,
        Ok(Reply::Children {
            children: Vec::new(),
            data_length: 0,
        }),
    );
    assert_eq!(find.blame(), None, "a sync's failure is no one's");

    let mut create = wire.exchange(&Action::Create, &machine).expect("a create");
    create.answer(0, Err(Error::NoNode));
    assert_eq!(
        create.blame(),
        Some((0, DIR)),
        "a failed create names the directory"
    );

    let mut replace = wire.exchange(&replace(false), &machine).expect("a downgrade");
    replace.answer(
        0,
        Err(Error::Refused {
            index: 1,
            error: Box::new(Error::NoNode),
        }),
    );
    assert_eq!(
        replace.blame(),
        Some((0, "/locks/a/h-W-0000000001")),
        "a downgrade names its writer"
    );
    assert!(!replace.forgets_session_changes());
}

#[test]
fn a_polled_node_is_gone_at_the_first_look_that_finds_it_missing() {
    use acquire::NodeEvent;
    assert_eq!(
        poll("/locks/a/x"),
        Request::Exists {
            path: "/locks/a/x".to_owned(),
            watch: false
        }
    );
    for (answer, event) in [
        (Ok(Reply::Stat(None)), Some(NodeEvent::Deleted)),
        (Ok(Reply::Stat(Some(stat(3)))), None),
        (Ok(Reply::Done), Some(NodeEvent::Failed)),
        (Err(Error::Unanswered), None),
        (Err(Error::SessionEnded), Some(NodeEvent::SessionEnded)),
        // ZooKeeper 3.7.3, 3.8.4, 3.9.2 on: `exists` of a node that is there
        // checks READ.
        (Err(Error::NoAuth), None),
        (Err(Error::Failed), Some(NodeEvent::Failed)),
    ] {
        assert_eq!(polled(&answer), event, "{answer:?}");
    }
}

#[test]
fn only_the_creates_listing_asks_for_the_directorys_stat() {
    let (wire, machine, _) = waiting();
    let list = wire
        .exchange(&Action::Acquire(acquire::Action::List), &machine)
        .expect("a listing");
    assert_eq!(
        list.requests(),
        [Request::List {
            watch: true,
            path: DIR.to_owned(),
            stat: false
        }]
    );
    assert_eq!(list.watch_of(0), [Watch::Listing]);
    assert_eq!(keep("/locks/a/x").requests(), wire.keep("x").requests());
}

#[test]
fn a_transactions_answer_must_match_it_or_it_is_no_answer() {
    let wire = wire();
    let machine = machine();
    let release = Action::Delete {
        name: "h-W-0000000003".to_owned(),
        record: true,
    };
    let ops = match &wire.exchange(&release, &machine).expect("a release").requests()[0] {
        Request::Multi { ops } => ops.clone(),
        other => panic!("not a transaction: {other:?}"),
    };
    let right: Vec<Done> = ops
        .iter()
        .map(|op| match op {
            contender::Op::Check { .. } => Done::Check,
            contender::Op::Create { .. } => Done::Created(None),
            contender::Op::Delete { .. } => Done::Deleted,
            contender::Op::SetData { .. } => Done::Written,
        })
        .collect();
    let mut swapped = right.clone();
    swapped.swap(0, 1);
    for (reply, accepted) in [
        (Reply::Multi(right.clone()), true),
        (Reply::Multi(Vec::new()), false),
        (Reply::Multi(right[1..].to_vec()), false),
        (Reply::Multi(swapped), false),
        (Reply::Done, false),
    ] {
        let mut exchange = wire.exchange(&release, &machine).expect("a release");
        assert_eq!(exchange.accepts(0, &Ok(reply.clone())), accepted, "{reply:?}");
        exchange.answer(0, Ok(reply.clone()));
        let expected = if accepted {
            Input::Deleted {
                answer: Answer::Ok(()),
                answer_lost: false,
            }
        } else {
            Input::Deleted {
                answer: Answer::Retry,
                answer_lost: true,
            }
        };
        assert_eq!(exchange.input("h-W-"), Some(expected), "{reply:?}");
    }
    // Other requests take any success.
    let find = wire.exchange(&Action::FindOwn, &machine).expect("a find");
    assert!(find.accepts(0, &Ok(Reply::Done)));
}

#[test]
fn an_exchange_waits_for_the_answers_it_needs() {
    let wire = wire();
    let machine = machine();
    let mut parents = wire.exchange(&Action::CreateParents, &machine).expect("a mkdir");
    assert_eq!(parents.input("h-W-"), None, "not answered yet");
    assert_eq!(parents.answered(0), None);
    parents.answer(0, Ok(Reply::Done));
    assert_eq!(parents.answered(0), Some(&Ok(Reply::Done)));
    assert_eq!(parents.input("h-W-"), Some(Input::ParentsCreated(Answer::Ok(()))));
    let mut wire = wire;
    let mut machine = machine;
    acl_read(&mut wire, &mut machine, 2);
    let recycle = wire.exchange(&Action::Recycle, &machine).expect("a recycle");
    assert_eq!(recycle.input("h-W-"), None, "not answered yet");
}

#[test]
fn a_downgrades_failures_name_its_writer() {
    let wire = wire();
    let machine = machine();
    let mut exchange = wire.exchange(&replace(false), &machine).expect("a downgrade");
    let left_out = Reply::Multi(vec![Done::Created(None), Done::Deleted, Done::Deleted]);
    exchange.answer(0, Ok(left_out));
    exchange.answer(1, Err(Error::Failed));
    assert_eq!(exchange.blame(), Some((1, "/locks/a/h-W-0000000001")));
    let mut keep = wire.keep("h-W-0000000003");
    assert_eq!(
        (keep.watch_of(0), keep.watch_of(1)),
        (&[Watch::Held][..], &[][..])
    );
    keep.answer(0, Err(Error::NoNode));
    assert!(keep.watch(0).is_empty());
}

#[test]
fn a_listing_exchange_gives_its_children() {
    let (wire, machine, _) = waiting();
    let mut list = wire
        .exchange(&Action::Acquire(acquire::Action::List), &machine)
        .expect("a listing");
    assert_eq!(list.listing(), None, "not answered yet");
    let children = vec!["h-W-0000000003".to_owned()];
    list.answer(
        0,
        Ok(Reply::Children {
            children: children.clone(),
            data_length: 0,
        }),
    );
    assert_eq!(list.listing(), Some(children.as_slice()));
}

#[test]
fn a_deadline_during_the_waits_request_is_the_machines_to_take() {
    let (wire, mut machine, action) = waiting();
    let exchange = wire.exchange(&action, &machine).expect("watches");
    // My node's deletion was heard while the request was in flight: the
    // machine fails the acquire rather than give up.
    machine.event(acquire::Event::Own(acquire::NodeEvent::Deleted));
    assert_eq!(
        deadline(Some(&exchange), &mut machine),
        Action::Fail(Failure::Lost)
    );
}

#[test]
fn a_semaphores_watched_nodes_are_all_watched_with_data_watches() {
    let (wire, machine, _) = waiting();
    let action = Action::Acquire(acquire::Action::SetWatches {
        blind: false,
        together: false,
        kept: Vec::new(),
        lingers: true,
        own: false,
        watched: "h-W-0000000002".to_owned(),
        marker: None,
        also: vec!["h-W-0000000001".to_owned(), "h-W-0000000000".to_owned()],
    });
    let mut exchange = wire.exchange(&action, &machine).expect("watches");
    // Data watches: an `exists` on a node this identity may not read would
    // be set, but its events would never come.
    let data_watch = |name: &str| Request::GetData {
        path: child_path(DIR, name),
        watch: true,
    };
    assert_eq!(
        exchange.requests(),
        [
            data_watch("h-W-0000000002"),
            data_watch("h-W-0000000001"),
            data_watch("h-W-0000000000"),
        ]
    );
    for index in 0..3 {
        assert_eq!(exchange.watch_of(index), [Watch::Watched], "request {index}");
    }
    let data = || {
        Ok(Reply::Data {
            data: Vec::new(),
            stat: stat(20),
        })
    };
    exchange.answer(0, data());
    exchange.answer(1, Err(Error::NoAuth));
    assert_eq!(exchange.answer(2, Err(Error::NoNode)), Progress::Complete);
    assert_eq!(exchange.watch(0), [Some(Watch::Watched)]);
    assert!(exchange.watch(1).is_empty(), "a refused read leaves no watch");
    assert!(exchange.watch(2).is_empty(), "no watch is left on a missing node");
    assert_eq!(
        exchange.input("h-W-"),
        Some(Input::Acquire(WaitInput::WatchesSet {
            blind: false,
            own: None,
            watched: WaitReply::Ok(()),
            marker: None,
            also: vec![WaitReply::NoAuth, WaitReply::NoNode],
        }))
    );
    // Left to fire once not needed: their nodes go in their turn.
    assert!((0..3).all(|index| exchange.lingers(index)));
    // A lock's watches are removed when dropped.
    let (lock_wire, lock_machine, _) = waiting();
    let lock_exchange = lock_wire
        .exchange(&lock_watches(), &lock_machine)
        .expect("watches");
    assert!((0..3).all(|index| !lock_exchange.lingers(index)));
    assert!(!keep("/locks/a/h-W-0000000003").lingers(0));
    // A failure of one of them is what an acquire that fails reports.
    let mut failed = wire.exchange(&action, &machine).expect("watches");
    failed.answer(0, data());
    failed.answer(1, Err(Error::Unanswered));
    failed.answer(2, data());
    assert_eq!(
        failed.blame(),
        Some((1, child_path(DIR, "h-W-0000000001").as_str()))
    );
}

#[test]
fn a_semaphores_wait_asks_only_for_the_nodes_new_to_it() {
    let (wire, machine, _) = waiting();
    let action = Action::Acquire(acquire::Action::SetWatches {
        blind: false,
        own: false,
        together: false,
        watched: "h-W-0000000002".to_owned(),
        marker: None,
        also: vec!["h-W-0000000001".to_owned(), "h-W-0000000000".to_owned()],
        lingers: true,
        kept: vec!["h-W-0000000002".to_owned(), "h-W-0000000000".to_owned()],
    });
    let mut exchange = wire.exchange(&action, &machine).expect("watches");
    assert_eq!(
        exchange.requests(),
        [Request::GetData {
            path: child_path(DIR, "h-W-0000000001"),
            watch: true
        }]
    );
    assert_eq!(
        exchange.kept(),
        [
            child_path(DIR, "h-W-0000000002"),
            child_path(DIR, "h-W-0000000000")
        ]
    );
    assert!(exchange.lingers(0));
    exchange.answer(0, Err(Error::NoNode));
    assert_eq!(
        exchange.input("h-W-"),
        Some(Input::Acquire(WaitInput::WatchesSet {
            blind: false,
            own: None,
            watched: WaitReply::Ok(()),
            marker: None,
            also: vec![WaitReply::NoNode, WaitReply::Ok(())],
        })),
        "the kept ones are set"
    );
    // Nothing new to watch: nothing is sent, and the wait goes on.
    let all_kept = Action::Acquire(acquire::Action::SetWatches {
        blind: false,
        own: false,
        together: false,
        watched: "h-W-0000000002".to_owned(),
        marker: None,
        also: Vec::new(),
        lingers: true,
        kept: vec!["h-W-0000000002".to_owned()],
    });
    let quiet = wire.exchange(&all_kept, &machine).expect("watches");
    assert!(quiet.requests().is_empty());
    assert!(quiet.forgets_session_changes());
    assert_eq!(
        quiet.input("h-W-"),
        Some(Input::Acquire(WaitInput::WatchesSet {
            blind: false,
            own: None,
            watched: WaitReply::Ok(()),
            marker: None,
            also: Vec::new(),
        }))
    );
}

#[test]
fn own_and_marker_watches_together_are_one_set_watches_relative_to_my_czxid_before_the_watched_nodes() {
    let (wire, machine, _) = waiting();
    let machine = machine.with_own_readable(true);
    let watched = "h-W-0000000002".to_owned();
    let marker = node_name::release_marker(&watched);
    let together = |together| {
        Action::Acquire(acquire::Action::SetWatches {
            blind: false,
            together,
            kept: Vec::new(),
            lingers: false,
            also: Vec::new(),
            own: true,
            watched: watched.clone(),
            marker: Some(marker.clone()),
        })
    };
    let mut exchange = wire.exchange(&together(true), &machine).expect("watches");
    assert_eq!(
        exchange.requests(),
        [
            Request::SetWatches {
                relative_zxid: 30,
                data: vec!["/locks/a/h-W-0000000003".to_owned()],
                exist: vec![child_path(DIR, &marker)],
            },
            Request::GetData {
                path: child_path(DIR, &watched),
                watch: true
            },
        ]
    );
    assert!(exchange.requests().iter().all(Request::watches));
    assert_eq!(exchange.requests()[0].path(), "/locks/a/h-W-0000000003");
    assert_eq!(exchange.watch_of(0), [Watch::Own, Watch::Marker]);
    assert_eq!(exchange.watch_of(1), [Watch::Watched]);
    assert!(exchange.forgets_session_changes());
    // Answered with no event before: both set, both kept.
    exchange.answer(
        0,
        Ok(Reply::WatchesSet {
            fired: vec![false, false],
        }),
    );
    let data = Reply::Data {
        data: Vec::new(),
        stat: stat(20),
    };
    assert_eq!(exchange.answer(1, Ok(data.clone())), Progress::Complete);
    assert_eq!(exchange.watch(0), [Some(Watch::Own), Some(Watch::Marker)]);
    assert_eq!(
        exchange.input("h-W-"),
        Some(Input::Acquire(WaitInput::WatchesSet {
            blind: false,
            also: Vec::new(),
            own: Some(WaitReply::Ok(())),
            watched: WaitReply::Ok(()),
            marker: Some(WaitReply::Ok(false)),
        }))
    );
    assert_eq!(exchange.blame(), None);
    // The marker's watch fired before the answer: a marker there already,
    // a stranger's (a release's lives only inside its transaction). Its
    // watch is dropped and it counts as found; my node's fired too: its
    // event is the wait's to take.
    let mut there = wire.exchange(&together(true), &machine).expect("watches");
    there.answer(
        0,
        Ok(Reply::WatchesSet {
            fired: vec![true, true],
        }),
    );
    there.answer(1, Ok(data));
    assert_eq!(there.watch(0), [Some(Watch::Own), None]);
    assert_eq!(
        there.input("h-W-"),
        Some(Input::Acquire(WaitInput::WatchesSet {
            blind: false,
            also: Vec::new(),
            own: Some(WaitReply::Ok(())),
            watched: WaitReply::Ok(()),
            marker: Some(WaitReply::Ok(true)),
        }))
    );
    // Each watch is read from its own place in the answer: my node
    // written to since (fired), the marker not there.
    let mut written = wire.exchange(&together(true), &machine).expect("watches");
    written.answer(
        0,
        Ok(Reply::WatchesSet {
            fired: vec![true, false],
        }),
    );
    written.answer(
        1,
        Ok(Reply::Data {
            data: Vec::new(),
            stat: stat(20),
        }),
    );
    assert_eq!(written.watch(0), [Some(Watch::Own), Some(Watch::Marker)]);
    assert!(matches!(
        written.input("h-W-"),
        Some(Input::Acquire(WaitInput::WatchesSet {
            marker: Some(WaitReply::Ok(false)),
            ..
        }))
    ));
    // An answer of another shape is no answer to it.
    assert!(!answers(&there.requests()[0], &Ok(Reply::Done)));
    assert!(!answers(
        &there.requests()[0],
        &Ok(Reply::WatchesSet { fired: vec![false] })
    ));
    // Its answer lost: neither is set, and the wait lists again.
    let mut lost = wire.exchange(&together(true), &machine).expect("watches");
    lost.answer(0, Err(Error::Unanswered));
    lost.answer(1, Err(Error::Unanswered));
    assert!(lost.watch(0).is_empty());
    assert_eq!(
        lost.input("h-W-"),
        Some(Input::Acquire(WaitInput::WatchesSet {
            blind: false,
            also: Vec::new(),
            own: Some(WaitReply::Retry),
            watched: WaitReply::Retry,
            marker: Some(WaitReply::Retry),
        }))
    );
    assert_eq!(lost.blame(), Some((0, "/locks/a/h-W-0000000003")));
    // Not together: apart, as before.
    let apart = wire.exchange(&together(false), &machine).expect("watches");
    assert_eq!(apart.requests().len(), 3);
    // Together, but the contender no longer knows it reads its node (the
    // connection changed since it learnt it): apart.
    let mut reconnected = machine.clone();
    reconnected.connection_changed();
    let apart = wire.exchange(&together(true), &reconnected).expect("watches");
    assert_eq!(apart.requests().len(), 3);
    assert!(matches!(apart.requests()[0], Request::GetData { .. }));
    // My czxid not known (my node found after a lost create): apart.
    let (finding, _) = {
        let mut machine = self::machine();
        let action = machine.start();
        (machine, action)
    };
    let unknown = wire
        .exchange(&together(true), &finding.with_own_readable(true))
        .expect("watches");
    assert_eq!(unknown.requests().len(), 3);
    assert!(matches!(unknown.requests()[0], Request::GetData { .. }));
}

#[test]
fn a_read_of_my_node_teaches_that_this_session_reads_its_nodes_only_if_it_is_the_node_i_made() {
    for (czxid, learnt) in [(30, true), (31, false)] {
        let (mut wire, mut machine, _) = waiting();
        let watched = "h-W-0000000002".to_owned();
        let action = Action::Acquire(acquire::Action::SetWatches {
            blind: false,
            together: false,
            kept: Vec::new(),
            lingers: false,
            also: Vec::new(),
            own: true,
            marker: None,
            watched,
        });
        let mut exchange = wire.exchange(&action, &machine).expect("watches");
        assert!(!machine.own_readable());
        let read = |czxid| {
            Ok(Reply::Data {
                data: Vec::new(),
                stat: stat(czxid),
            })
        };
        exchange.answer(0, read(czxid));
        exchange.answer(1, read(20));
        wire.settle(&exchange, &mut machine);
        assert_eq!(
            machine.own_readable(),
            learnt,
            "my node's czxid is 30, read {czxid}"
        );
    }
}

#[test]
fn a_requests_watched_paths_are_in_the_order_of_its_watches() {
    let set = Request::SetWatches {
        relative_zxid: 3,
        data: vec!["/a/mine".to_owned()],
        exist: vec!["/a/x.released".to_owned()],
    };
    assert_eq!(set.watched_paths(), ["/a/mine", "/a/x.released"]);
    let read = Request::GetData {
        path: "/a/w".to_owned(),
        watch: true,
    };
    assert_eq!(read.watched_paths(), ["/a/w"]);
}

#[test]
fn an_exchange_replaces_the_earlier_watches_of_the_kinds_it_sets() {
    let (wire, machine, _) = waiting();
    let watched = "h-W-0000000002".to_owned();
    let set = |own, marker: Option<String>, kept: Vec<String>| {
        Action::Acquire(acquire::Action::SetWatches {
            blind: false,
            together: false,
            kept,
            lingers: false,
            also: Vec::new(),
            own,
            watched: watched.clone(),
            marker,
        })
    };
    let marker = Some(node_name::release_marker(&watched));
    // (action, the kinds replaced when it is sent)
    let table = [
        (
            set(true, marker.clone(), Vec::new()),
            vec![Watch::Own, Watch::Marker, Watch::Watched],
        ),
        (
            set(false, marker, Vec::new()),
            vec![Watch::Marker, Watch::Watched],
        ),
        (set(false, None, Vec::new()), vec![Watch::Watched]),
        // Every watched node kept: nothing is asked, the others still go.
        (set(false, None, vec![watched.clone()]), vec![Watch::Watched]),
        (Action::ReadDirData, Vec::new()),
    ];
    for (action, replaced) in table {
        let exchange = wire.exchange(&action, &machine).expect("an exchange");
        assert_eq!(exchange.replaces(), replaced, "{action:?}");
    }
    // The keeper's watch replaces none of the wait's.
    assert_eq!(wire.keep("h-W-0000000003").replaces(), []);
}

/// A machine whose node `h-W-<seq>` was created, with `children` listed
/// before it: the create's exchange, and the machine's next action.
pub(super) fn created(seq: i32, children: &[&str]) -> (Wire, Contender, Exchange, Action) {
    let mut wire = wire();
    let mut machine = machine();
    let action = machine.start();
    let mut exchange = wire.exchange(&action, &machine).expect("a create");
    exchange.answer(
        0,
        Ok(Reply::Created {
            czxid: 30,
            seq: i64::from(seq),
        }),
    );
    let mut children: Vec<String> = children.iter().map(|c| (*c).to_owned()).collect();
    children.push(format!("h-W-{seq:010}"));
    exchange.answer(
        1,
        Ok(Reply::Children {
            children,
            data_length: 0,
        }),
    );
    let action = wire.settle(&exchange, &mut machine);
    (wire, machine, exchange, action)
}

/// The directory's ACL read (its data version `version`) and settled:
/// the machine may recycle it.
fn acl_read(wire: &mut Wire, machine: &mut Contender, version: i32) {
    let mut read = wire.exchange(&Action::ReadDirAcl, machine).expect("a read");
    read.answer(0, Ok(Reply::Acl { version, children: 0 }));
    let _ = wire.settle(&read, machine);
}

#[test]
fn what_an_exchange_tells_the_user_is_noticed_from_its_answers() {
    // A create: its counter near the limit; children that are no contenders.
    let (_, machine, create, _) = created(3, &[]);
    assert_eq!(create.notices(&machine), []);
    let high = crate::ordering::RECYCLE_THRESHOLD;
    let (_, machine, create, _) = created(high, &[]);
    assert_eq!(create.notices(&machine), [Notice::CounterNearLimit { seq: high }]);
    let (wire, machine, create, _) = created(3, &["junk", "h-W-0000000001"]);
    assert_eq!(
        create.notices(&machine),
        [Notice::Foreign {
            names: vec!["junk".to_owned()]
        }]
    );
    // The directory's data.
    for (data, noticed) in [(b"junk".to_vec(), true), (Vec::new(), false)] {
        let mut read = wire.exchange(&Action::ReadDirData, &machine).expect("a read");
        read.answer(
            0,
            Ok(Reply::Data {
                data: data.clone(),
                stat: stat(1),
            }),
        );
        let expected = if noticed {
            vec![Notice::DirectoryData { bytes: data.len() }]
        } else {
            Vec::new()
        };
        assert_eq!(read.notices(&machine), expected, "{data:?}");
    }
    // My node found after a lost answer.
    let found = wire
        .exchange(
            &Action::Stat {
                name: "h-W-0000000003".to_owned(),
            },
            &machine,
        )
        .expect("a stat");
    assert_eq!(
        found.notices(&machine),
        [Notice::FoundOwn {
            name: "h-W-0000000003".to_owned()
        }]
    );
    // A watched node that is not ephemeral; an ephemeral one is not noticed.
    let (wire, machine, _) = waiting();
    let watched = "h-W-0000000002".to_owned();
    let action = Action::Acquire(acquire::Action::SetWatches {
        blind: false,
        together: false,
        kept: Vec::new(),
        lingers: false,
        also: Vec::new(),
        own: false,
        watched: watched.clone(),
        marker: None,
    });
    for (owner, noticed) in [(0, true), (7, false)] {
        let mut watches = wire.exchange(&action, &machine).expect("watches");
        let last = watches.requests().len() - 1;
        watches.answer(
            last,
            Ok(Reply::Data {
                data: Vec::new(),
                stat: Stat {
                    czxid: 20,
                    ephemeral_owner: owner,
                },
            }),
        );
        let expected = if noticed {
            vec![Notice::Persistent {
                path: child_path(DIR, &watched),
            }]
        } else {
            Vec::new()
        };
        assert_eq!(watches.notices(&machine), expected, "owner {owner}");
    }
}

#[test]
fn a_recycled_directory_is_noticed_once_recreated() {
    let mut wire = wire();
    let mut machine = machine();
    acl_read(&mut wire, &mut machine, 4);
    for (answer, noticed) in [(Ok(Reply::Done), true), (Err(Error::BadVersion), false)] {
        let mut recycle = wire.exchange(&Action::Recycle, &machine).expect("a recycle");
        recycle.answer(0, answer.clone());
        let expected = if noticed {
            vec![Notice::Recycled]
        } else {
            Vec::new()
        };
        assert_eq!(recycle.notices(&machine), expected, "{answer:?}");
    }
}

#[test]
fn a_check_of_my_own_node_refused_by_its_acl_found_it_there() {
    // A server from ZooKeeper 3.7.3, 3.8.4 and 3.9.2 on checks READ for
    // `exists` of a node that is there (of one that is gone, not).
    let (wire, machine, _) = waiting();
    for (answer, found) in [
        (Err(Error::NoAuth), WaitReply::Ok(true)),
        (Ok(Reply::Stat(Some(stat(3)))), WaitReply::Ok(true)),
        (Ok(Reply::Stat(None)), WaitReply::Ok(false)),
        (Err(Error::Unanswered), WaitReply::Retry),
        (Err(Error::SessionEnded), WaitReply::Failed),
    ] {
        let mut exchange = wire
            .exchange(&Action::Acquire(acquire::Action::CheckOwn), &machine)
            .expect("a check");
        assert_eq!(
            exchange.requests(),
            [Request::Exists {
                path: "/locks/a/h-W-0000000003".to_owned(),
                watch: false
            }]
        );
        assert_eq!(exchange.answer(0, answer.clone()), Progress::Complete);
        assert_eq!(
            exchange.input("h-W-"),
            Some(Input::Acquire(WaitInput::OwnChecked(found))),
            "{answer:?}"
        );
    }
}

#[test]
fn the_watched_nodes_watch_goes_unread_in_my_nodes_set_watches_when_the_machine_lets_it() {
    let (wire, machine, _) = waiting();
    let watched = "h-W-0000000002".to_owned();
    let action = |blind, marker: Option<String>| {
        Action::Acquire(acquire::Action::SetWatches {
            blind,
            together: true,
            kept: Vec::new(),
            lingers: false,
            also: Vec::new(),
            own: true,
            watched: watched.clone(),
            marker,
        })
    };
    let mine = "/locks/a/h-W-0000000003".to_owned();
    // Known to read my node: one request, my node's and the watched node's
    // data watches, then the marker's `exists` watch.
    let known = machine.clone().with_own_readable(true);
    let marker = node_name::release_marker(&watched);
    let mut exchange = wire
        .exchange(&action(true, Some(marker.clone())), &known)
        .expect("watches");
    assert_eq!(
        exchange.requests(),
        [Request::SetWatches {
            relative_zxid: 30,
            data: vec![mine.clone(), child_path(DIR, &watched)],
            exist: vec![child_path(DIR, &marker)],
        }]
    );
    assert_eq!(exchange.watch_of(0), [Watch::Own, Watch::Watched, Watch::Marker]);
    assert!(!exchange.lingers(0));
    exchange.answer(
        0,
        Ok(Reply::WatchesSet {
            fired: vec![false, false, false],
        }),
    );
    assert_eq!(
        exchange.watch(0),
        [Some(Watch::Own), Some(Watch::Watched), Some(Watch::Marker)]
    );
    assert_eq!(
        exchange.input("h-W-"),
        Some(Input::Acquire(WaitInput::WatchesSet {
            blind: true,
            also: Vec::new(),
            own: Some(WaitReply::Ok(())),
            watched: WaitReply::Ok(()),
            marker: Some(WaitReply::Ok(false)),
        }))
    );
    // Without a marker (right behind the holder): the two data watches.
    let mut behind = wire.exchange(&action(true, None), &known).expect("watches");
    assert_eq!(
        behind.requests(),
        [Request::SetWatches {
            relative_zxid: 30,
            data: vec![mine.clone(), child_path(DIR, &watched)],
            exist: Vec::new(),
        }]
    );
    assert_eq!(behind.watch_of(0), [Watch::Own, Watch::Watched]);
    // The watched node gone: fired at once, the watch kept for its event.
    behind.answer(
        0,
        Ok(Reply::WatchesSet {
            fired: vec![false, true],
        }),
    );
    assert_eq!(behind.watch(0), [Some(Watch::Own), Some(Watch::Watched)]);
    assert_eq!(
        behind.input("h-W-"),
        Some(Input::Acquire(WaitInput::WatchesSet {
            blind: true,
            also: Vec::new(),
            own: Some(WaitReply::Ok(())),
            watched: WaitReply::Ok(()),
            marker: None,
        }))
    );
    // Not known to read my node: each with `getData`, read, not blind.
    let mut apart = wire.exchange(&action(true, None), &machine).expect("watches");
    assert_eq!(
        apart.requests(),
        [
            Request::GetData {
                path: mine,
                watch: true
            },
            Request::GetData {
                path: child_path(DIR, &watched),
                watch: true
            },
        ]
    );
    let data = Reply::Data {
        data: Vec::new(),
        stat: stat(30),
    };
    apart.answer(0, Ok(data.clone()));
    apart.answer(1, Ok(data));
    assert!(matches!(
        apart.input("h-W-"),
        Some(Input::Acquire(WaitInput::WatchesSet { blind: false, .. }))
    ));
    // Not let by the machine: apart.
    let told = wire.exchange(&action(false, None), &known).expect("watches");
    assert_eq!(told.requests().len(), 2);
}

#[test]
fn reading_the_watched_node_sets_no_watch_and_keeps_the_one_set() {
    let (wire, machine, _) = waiting();
    let watched = "h-W-0000000002".to_owned();
    let mut read = wire
        .exchange(
            &Action::Acquire(acquire::Action::ReadWatched {
                watched: watched.clone(),
            }),
            &machine,
        )
        .expect("a read");
    assert_eq!(
        read.requests(),
        [Request::GetData {
            path: child_path(DIR, &watched),
            watch: false
        }]
    );
    assert!(read.replaces().is_empty(), "the watch set is kept");
    assert!(read.is_wait());
    for (answer, want) in [
        (
            Ok(Reply::Data {
                data: Vec::new(),
                stat: stat(20),
            }),
            WaitReply::Ok(()),
        ),
        (Err(Error::NoAuth), WaitReply::NoAuth),
        (Err(Error::NoNode), WaitReply::NoNode),
        (Err(Error::Unanswered), WaitReply::Retry),
    ] {
        read.answer(0, answer);
        assert_eq!(
            read.input("h-W-"),
            Some(Input::Acquire(WaitInput::WatchedRead(want)))
        );
    }
}

#[test]
fn a_listings_watch_event_waits_for_the_wait_and_goes_with_the_next_listing() {
    use crate::acquire::{Event, NodeEvent, WatchedKind};
    use crate::lease::SessionState;
    let (wire, machine, _) = waiting();
    let mut arrivals = Arrivals::default();
    arrivals.listing(WatchedKind::ChildrenChanged, SessionState::Connected);
    // Not taken while a request is carried.
    assert!(arrivals.while_carrying().is_empty());
    assert!(arrivals.has_listing());
    // Taken by a wait, after a watched node's deletion that came with it.
    arrivals.watched(
        "/locks/a/h-W-0000000002",
        WatchedKind::Deleted,
        SessionState::Connected,
    );
    let now = Now::quiet(SessionState::Connected);
    assert_eq!(
        arrivals.next(now).map(|taken| taken.input),
        Some(WaitInput::Event(Event::Watched(NodeEvent::Deleted)))
    );
    assert_eq!(
        arrivals.next(now).map(|taken| taken.input),
        Some(WaitInput::Event(Event::Listing(NodeEvent::Other)))
    );
    assert!(arrivals.is_empty());
    // A new listing drops the old one's event.
    arrivals.listing(WatchedKind::ChildrenChanged, SessionState::Connected);
    let list = wire
        .exchange(&Action::Acquire(acquire::Action::List), &machine)
        .expect("a listing");
    assert!(list.replaces().contains(&Watch::Listing));
    arrivals.replaced(&list);
    assert!(!arrivals.has_listing());
    // The session's end, told by it, is the acquire's end state.
    arrivals.listing(WatchedKind::Session, SessionState::Expired);
    assert_eq!(
        arrivals.next(now).map(|taken| taken.input),
        Some(WaitInput::Event(Event::Listing(NodeEvent::SessionEnded)))
    );
    assert_eq!(arrivals.ended(), Some(SessionState::Expired));
}

#[test]
fn a_refused_create_awaits_its_listing_whose_watch_is_left_to_fire() {
    let wire = wire();
    let mut machine = machine();
    let action = machine.start();
    let mut exchange = wire.exchange(&action, &machine).expect("a create");
    assert_eq!(exchange.answer(0, Err(Error::NoAuth)), Progress::Pending);
    let listing = Reply::Children {
        children: Vec::new(),
        data_length: 0,
    };
    assert_eq!(exchange.answer(1, Ok(listing)), Progress::Complete);
    assert_eq!(exchange.watch(1), [Some(Watch::Listing)]);
    assert!(exchange.lingers(1));
    // Without a watch on the listing, the create's failure is enough.
    let mut semaphore = super::tests::machine().with_permits(std::num::NonZeroU32::new(2));
    let action = semaphore.start();
    let mut plain = wire.exchange(&action, &semaphore).expect("a create");
    assert_eq!(plain.answer(0, Err(Error::NoAuth)), Progress::Complete);
}
