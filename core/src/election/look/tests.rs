use super::{Look, LookAnswer, LookRequest, Looked};
use crate::election::{announcement, Leader};

const W1: &str = "web01@0123456789abcdef0123456789abcdef-W-0000000001";
const W2: &str = "web02@fedcba9876543210fedcba9876543210-W-0000000002";
const R0: &str = "web03@00000000000000000000000000000000-R-0000000000";

fn listed(children: &[&str]) -> LookAnswer {
    LookAnswer::Listed(children.iter().map(|c| (*c).to_owned()).collect())
}

fn list(watch: bool) -> Looked {
    Looked::Send(LookRequest::List { watch })
}

fn read(node: &str, watch: bool) -> Looked {
    Looked::Send(LookRequest::Read {
        node: node.to_owned(),
        watch,
    })
}

/// W1's node as read: its announcement at version 1, ephemeral.
fn announced() -> LookAnswer {
    LookAnswer::Read {
        data: announcement("web01"),
        version: 1,
        ephemeral_owner: 7,
        czxid: 42,
    }
}

fn w1_leads() -> Looked {
    Looked::Over(Some(Leader {
        identity: "web01".to_owned(),
        node: W1.to_owned(),
        term: 42,
        session: 7,
        revocation_requested: false,
    }))
}

/// Runs a look: each answer in turn, with what the look says after it.
fn run(watch: bool, steps: &[(LookAnswer, Looked)]) {
    let mut look = Look::new(watch);
    assert_eq!(
        look.start(),
        LookRequest::List { watch: false },
        "a plain listing first"
    );
    for (i, (answer, then)) in steps.iter().enumerate() {
        assert_eq!(&look.answered(answer.clone()), then, "step {i}: {answer:?}");
    }
}

#[test]
fn an_observer_reads_and_watches_the_head_writer_and_names_it_from_that_read() {
    run(
        true,
        &[(listed(&[W2, W1]), read(W1, true)), (announced(), w1_leads())],
    );
}

#[test]
fn an_observer_watches_the_children_only_of_a_directory_with_no_contender() {
    run(
        true,
        &[(listed(&[]), list(true)), (listed(&[]), Looked::Over(None))],
    );
    // A candidate came between the two listings: its node's watch will do.
    run(
        true,
        &[(listed(&[]), list(true)), (listed(&[W1]), read(W1, true))],
    );
}

#[test]
fn an_observer_watches_a_missing_directory_for_its_creation() {
    run(
        true,
        &[
            (LookAnswer::Missing, Looked::Send(LookRequest::WatchDirectory)),
            (LookAnswer::Exists(false), Looked::Over(None)),
        ],
    );
    // Made meanwhile, or removed while the children's watch was set: list again.
    run(
        true,
        &[
            (LookAnswer::Missing, Looked::Send(LookRequest::WatchDirectory)),
            (LookAnswer::Exists(true), list(false)),
        ],
    );
    run(
        true,
        &[(listed(&[]), list(true)), (LookAnswer::Missing, list(false))],
    );
}

#[test]
fn an_observer_reads_a_reader_at_the_head_for_its_watch_and_names_no_one() {
    let reader = LookAnswer::Read {
        data: Vec::new(),
        version: 0,
        ephemeral_owner: 7,
        czxid: 40,
    };
    run(
        true,
        &[(listed(&[W1, R0]), read(R0, true)), (reader, Looked::Over(None))],
    );
}

#[test]
fn a_head_gone_between_the_listing_and_the_read_is_listed_again() {
    for watch in [true, false] {
        run(
            watch,
            &[
                (listed(&[W1]), read(W1, watch)),
                (LookAnswer::Missing, list(false)),
                (listed(&[W2]), read(W2, watch)),
            ],
        );
    }
}

#[test]
fn a_look_without_watches_reads_only_the_head_writer() {
    run(
        false,
        &[(listed(&[W2, W1]), read(W1, false)), (announced(), w1_leads())],
    );
    // A reader at the head holds: no writer leads, nothing to read.
    run(false, &[(listed(&[W1, R0]), Looked::Over(None))]);
    run(false, &[(listed(&[]), Looked::Over(None))]);
    run(false, &[(LookAnswer::Missing, Looked::Over(None))]);
}

#[test]
fn a_head_writer_not_announced_or_persistent_leads_no_one() {
    let unannounced = LookAnswer::Read {
        data: Vec::new(),
        version: 0,
        ephemeral_owner: 7,
        czxid: 42,
    };
    let persistent = LookAnswer::Read {
        data: announcement("web01"),
        version: 1,
        ephemeral_owner: 0,
        czxid: 42,
    };
    for answer in [unannounced, persistent] {
        run(
            false,
            &[(listed(&[W1]), read(W1, false)), (answer, Looked::Over(None))],
        );
    }
}

#[test]
fn an_answer_that_does_not_answer_the_request_ends_the_look() {
    run(true, &[(LookAnswer::Exists(true), Looked::Mismatched)]);
    run(
        true,
        &[
            (listed(&[W1]), read(W1, true)),
            (listed(&[W1]), Looked::Mismatched),
        ],
    );
    run(false, &[(LookAnswer::Exists(false), Looked::Mismatched)]);
}
