use std::time::Duration;

use super::*;
use crate::acquire;
use crate::contender::{Action, Answer, Input};
use crate::node_name;
use crate::wire::tests::{machine, stat, waiting, wire, DIR};

const SECOND: Duration = Duration::from_secs(1);

fn carrying(action: &Action) -> Carry<&'static str, &'static str> {
    let exchange = wire().exchange(action, &machine()).expect("an exchange");
    Carry::new(exchange, Backoff::request(SECOND))
}

/// A release of my node `h-W-0000000003`, with the release record (a
/// transaction) or plainly.
fn release_of(record: bool) -> Action {
    Action::Delete {
        name: "h-W-0000000003".to_owned(),
        record,
    }
}

fn release() -> Action {
    release_of(false)
}

fn sent(carry: &mut Carry<&'static str, &'static str>) -> Vec<(usize, bool, Duration)> {
    std::iter::from_fn(|| carry.poll_send())
        .map(|send| (send.index, send.again, send.after))
        .collect()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn every_request_leaves_at_once_in_order_and_the_exchange_completes_with_its_last_answer() {
    let mut carry = carrying(&machine().start());
    let requests = carry.exchange().requests().to_vec();
    let out: Vec<Send> = std::iter::from_fn(|| carry.poll_send()).collect();
    assert_eq!(
        out.iter().map(|s| s.request.clone()).collect::<Vec<_>>(),
        requests
    );
    assert_eq!(out.iter().map(|s| s.index).collect::<Vec<_>>(), [0, 1]);
    assert!(out.iter().all(|s| !s.again && s.after.is_zero()));
    carry.answered(0, Answered::of(Ok(Reply::Created { czxid: 30, seq: 3 })), ms(1));
    assert!(!carry.is_complete());
    let children = vec!["h-W-0000000003".to_owned()];
    carry.answered(
        1,
        Answered::of(Ok(Reply::Children {
            children,
            data_length: 0,
        })),
        ms(2),
    );
    assert!(carry.is_complete());
    assert_eq!(carry.poll_send(), None);
}

#[test]
fn a_lost_answer_is_sent_again_first_pausing_longer_each_time_and_only_its_last_answer_is_fed() {
    let mut carry = carrying(&release());
    assert_eq!(sent(&mut carry), [(0, false, Duration::ZERO)]);
    // (failing for, the pause before the attempt it causes)
    for (failing_for, after) in [(ms(1), ms(0)), (ms(2), ms(1)), (ms(4), ms(2)), (ms(8), ms(4))] {
        let fates = carry.answered(0, Answered::of(Err(Error::Unanswered)), failing_for);
        assert!(fates.is_empty());
        assert!(!carry.is_complete());
        assert_eq!(
            sent(&mut carry),
            [(0, true, after)],
            "failing for {failing_for:?}"
        );
    }
    carry.answered(0, Answered::of(Ok(Reply::Done)), ms(9));
    assert!(carry.is_complete());
    let carried = carry.finish();
    // The deletion may have been applied by an attempt whose answer was lost.
    assert_eq!(
        carried.exchange.input("h-W-"),
        Some(Input::Deleted {
            answer: Answer::Ok(()),
            answer_lost: true
        })
    );
    assert!(carried.blamed.is_none());
}

#[test]
fn once_retrying_is_over_the_lost_answer_is_fed_and_its_error_reported() {
    let mut carry = carrying(&release());
    sent(&mut carry);
    let lost = |error| Answered {
        answer: Err(Error::Unanswered),
        watches: Vec::new(),
        error: Some(error),
    };
    carry.answered(0, lost("cut"), SECOND);
    assert_eq!(sent(&mut carry), [(0, true, Duration::ZERO)]);
    // Twice the session timeout.
    carry.answered(0, lost("still cut"), SECOND * 2 + ms(1));
    assert_eq!(sent(&mut carry), [], "no attempt after retrying is over");
    assert!(carry.is_complete());
    let carried = carry.finish();
    assert_eq!(
        carried.exchange.input("h-W-"),
        Some(Input::Deleted {
            answer: Answer::Retry,
            answer_lost: true
        })
    );
    assert_eq!(carried.blamed, Some(Fault::Carrier("still cut")));
}

#[test]
fn an_answer_that_does_not_answer_the_transaction_is_a_lost_one() {
    let mut carry = carrying(&release_of(true));
    sent(&mut carry);
    carry.answered(0, Answered::of(Ok(Reply::Multi(Vec::new()))), ms(1));
    assert_eq!(sent(&mut carry), [(0, true, Duration::ZERO)]);
    assert!(!carry.is_complete());
}

#[test]
fn a_request_not_retried_has_its_lost_answer_fed_at_once() {
    let (wire, machine, action) = waiting();
    let exchange = wire.exchange(&action, &machine).expect("the wait's watches");
    assert!(!exchange.retried(0), "{action:?}");
    let n = exchange.requests().len();
    let mut carry: Carry<&str, &str> = Carry::new(exchange, Backoff::request(SECOND));
    assert_eq!(sent(&mut carry).len(), n);
    carry.answered(0, Answered::of(Err(Error::Unanswered)), ms(1));
    assert_eq!(sent(&mut carry), [], "the wait lists again instead");
    assert_eq!(carry.exchange().answered(0), Some(&Err(Error::Unanswered)));
}

#[test]
fn a_follow_up_leaves_once_the_answer_it_follows_is_in() {
    let mut carry = carrying(&Action::FindOwn);
    assert_eq!(sent(&mut carry), [(0, false, Duration::ZERO)]);
    carry.answered(0, Answered::of(Ok(Reply::Done)), ms(1));
    let out: Vec<Send> = std::iter::from_fn(|| carry.poll_send()).collect();
    assert_eq!(
        out,
        [Send {
            index: 1,
            request: Request::List {
                watch: false,
                path: DIR.to_owned(),
                stat: false
            },
            again: false,
            after: Duration::ZERO,
        }]
    );
}

#[test]
fn the_watches_an_answer_left_are_kept_with_whose_they_are_or_dropped() {
    let watched = "h-W-0000000002".to_owned();
    let marker = node_name::release_marker(&watched);
    let action = Action::Acquire(acquire::Action::SetWatches {
        blind: false,
        together: false,
        kept: Vec::new(),
        lingers: false,
        also: Vec::new(),
        own: true,
        watched: watched.clone(),
        marker: Some(marker.clone()),
    });
    let (wire, machine, _) = waiting();
    let exchange = wire.exchange(&action, &machine).expect("watches");
    let mut carry: Carry<&str, &str> = Carry::new(exchange, Backoff::request(SECOND));
    assert_eq!(sent(&mut carry).len(), 3);
    let data = |czxid| Reply::Data {
        data: Vec::new(),
        stat: stat(czxid),
    };
    let with = |answer, watch| Answered {
        answer,
        watches: vec![watch],
        error: None,
    };
    assert_eq!(
        carry.answered(0, with(Ok(data(30)), "own"), ms(1)),
        [Some(Watch::Own)]
    );
    // A marker that exists already is a stranger's.
    assert_eq!(
        carry.answered(1, with(Ok(Reply::Stat(Some(stat(9)))), "marker"), ms(1)),
        [None]
    );
    // An answer with more watches than the request sets: the extra one dropped.
    let two = Answered {
        answer: Ok(data(20)),
        watches: vec!["watched", "extra"],
        error: None,
    };
    assert_eq!(carry.answered(2, two, ms(1)), [Some(Watch::Watched), None]);
    assert!(carry.is_complete());
    let kept: Vec<(Watch, String, bool, &str)> = carry
        .finish()
        .kept
        .into_iter()
        .map(|k| (k.kind, k.path, k.lingers, k.watch))
        .collect();
    assert_eq!(
        kept,
        [
            (Watch::Own, format!("{DIR}/h-W-0000000003"), false, "own"),
            (Watch::Watched, format!("{DIR}/{watched}"), false, "watched"),
        ]
    );
}

#[test]
fn the_error_reported_is_the_blamed_requests_and_answers_after_the_end_are_dropped() {
    // A semaphore's create: its listing leaves no watch, so a failed create
    // needs no listing.
    let mut permit = machine().with_permits(std::num::NonZeroU32::new(2));
    let start = permit.start();
    let mut carry = Carry::new(
        wire().exchange(&start, &permit).expect("a create"),
        Backoff::request(Duration::from_secs(10)),
    );
    sent(&mut carry);
    let failed = Answered {
        answer: Err(Error::NoAuth),
        watches: Vec::new(),
        error: Some("no auth on the directory"),
    };
    carry.answered(0, failed, ms(1));
    // A failed create needs no listing.
    assert!(carry.is_complete());
    let late = Answered {
        answer: Err(Error::Failed),
        watches: vec!["late"],
        error: Some("late"),
    };
    assert!(carry.answered(1, late, ms(2)).is_empty());
    assert_eq!(
        carry.finish().blamed,
        Some(Fault::Carrier("no auth on the directory"))
    );
    // A success's error is nobody's.
    let mut deleting = carrying(&release());
    sent(&mut deleting);
    let ok = Answered {
        answer: Ok(Reply::Done),
        watches: Vec::new(),
        error: Some("stale"),
    };
    deleting.answered(0, ok, ms(1));
    assert_eq!(deleting.finish().blamed, None);
}

#[test]
fn a_first_lost_answer_past_the_give_up_still_counts_as_lost() {
    let mut carry = carrying(&release());
    sent(&mut carry);
    carry.answered(0, Answered::of(Err(Error::Unanswered)), SECOND * 3);
    assert_eq!(sent(&mut carry), [], "retrying is over");
    // The deletion may have been applied: the machine checks.
    assert_eq!(
        carry.finish().exchange.input("h-W-"),
        Some(Input::Deleted {
            answer: Answer::Retry,
            answer_lost: true
        })
    );
}

#[test]
fn a_garbled_answer_is_reported_as_such_once_retrying_is_over() {
    let mut carry = carrying(&release_of(true));
    sent(&mut carry);
    carry.answered(0, Answered::of(Ok(Reply::Multi(Vec::new()))), SECOND * 3);
    assert_eq!(sent(&mut carry), []);
    let carried = carry.finish();
    assert_eq!(carried.blamed, Some(Fault::Garbled));
    assert_eq!(
        carried.exchange.input("h-W-"),
        Some(Input::Deleted {
            answer: Answer::Retry,
            answer_lost: true
        })
    );
}

#[test]
fn a_request_sent_ahead_retries_for_the_bound_from_its_first_answer_not_from_each() {
    let lost = || Answered::of(Err(Error::Unanswered));
    // Retrying gives up after twice the session timeout (2 s here); the
    // first answer comes 10 s after the carrier began.
    for (ahead, retried) in [(true, true), (false, false)] {
        let carry = carrying(&release());
        let mut carry = if ahead { carry.sent_ahead() } else { carry };
        sent(&mut carry);
        carry.answered(0, lost(), SECOND * 10);
        assert_eq!(!sent(&mut carry).is_empty(), retried, "sent ahead: {ahead}");
    }
    let mut carry = carrying(&release()).sent_ahead();
    sent(&mut carry);
    carry.answered(0, lost(), SECOND * 10);
    assert_eq!(sent(&mut carry).len(), 1);
    carry.answered(0, lost(), SECOND * 11);
    assert_eq!(sent(&mut carry).len(), 1, "1 s since its first answer");
    carry.answered(0, lost(), SECOND * 12 + ms(1));
    assert_eq!(sent(&mut carry), [], "over 2 s since its first answer");
    assert!(carry.is_complete());
}
