use std::time::Duration;

use super::Poll;
use crate::acquire::NodeEvent;
use crate::backoff::Backoff;
use crate::wire::{Error, Reply, Request, Stat};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The back-off of a session of 1 s: gives up after 2 s of lost answers.
fn poll() -> Poll {
    Poll::new("/locks/a/h-W-0000000001", Backoff::poll(Duration::from_secs(1)))
}

fn there() -> Result<Reply, Error> {
    Ok(Reply::Stat(Some(Stat {
        czxid: 7,
        ephemeral_owner: 3,
    })))
}

#[test]
fn every_look_is_an_exists_without_a_watch_of_the_node() {
    assert_eq!(
        poll().request(),
        &Request::Exists {
            path: "/locks/a/h-W-0000000001".to_owned(),
            watch: false
        }
    );
}

#[test]
fn the_pauses_grow_from_the_first_to_the_longest_of_the_back_off() {
    let mut poll = poll();
    let pauses: Vec<Duration> = (0..7).map(|_| poll.pause()).collect();
    assert_eq!(
        pauses,
        [ms(10), ms(20), ms(40), ms(80), ms(160), ms(200), ms(200)]
    );
}

#[test]
fn a_look_that_finds_the_node_gone_or_the_session_over_ends_the_poll() {
    for (answer, event) in [
        (Ok(Reply::Stat(None)), Some(NodeEvent::Deleted)),
        (there(), None),
        (Err(Error::SessionEnded), Some(NodeEvent::SessionEnded)),
        (Err(Error::NoAuth), None),
        (Err(Error::Failed), Some(NodeEvent::Failed)),
        (Ok(Reply::Done), Some(NodeEvent::Failed)),
        (Err(Error::Unanswered), None),
    ] {
        assert_eq!(poll().looked(&answer, ms(5)), event, "{answer:?}");
    }
}

#[test]
fn lost_answers_end_the_poll_once_lost_for_longer_than_the_back_off_retries() {
    let mut poll = poll();
    let lost = Err(Error::Unanswered);
    // Lost from 1 s on: the count starts at the first lost answer.
    assert_eq!(poll.looked(&lost, ms(1_000)), None);
    assert_eq!(poll.looked(&lost, ms(3_000)), None, "lost for exactly 2 s");
    assert_eq!(poll.looked(&lost, ms(3_001)), Some(NodeEvent::Failed));
}

#[test]
fn a_look_refused_by_the_nodes_acl_found_it_there_and_starts_the_count_again() {
    // A server from ZooKeeper 3.7.3, 3.8.4 and 3.9.2 on checks READ for
    // `exists` of a node that is there.
    let mut poll = poll();
    let lost = Err(Error::Unanswered);
    assert_eq!(poll.looked(&lost, ms(0)), None);
    assert_eq!(poll.looked(&Err(Error::NoAuth), ms(1_900)), None);
    assert_eq!(poll.looked(&lost, ms(2_100)), None);
    assert_eq!(poll.looked(&lost, ms(4_100)), None, "lost for 2 s since 2.1 s");
    assert_eq!(
        poll.looked(&Ok(Reply::Stat(None)), ms(4_200)),
        Some(NodeEvent::Deleted)
    );
}

#[test]
fn an_answered_look_starts_the_count_of_lost_answers_again() {
    let mut poll = poll();
    let lost = Err(Error::Unanswered);
    assert_eq!(poll.looked(&lost, ms(0)), None);
    assert_eq!(poll.looked(&lost, ms(1_900)), None);
    assert_eq!(poll.looked(&there(), ms(2_000)), None);
    assert_eq!(poll.looked(&lost, ms(2_100)), None);
    assert_eq!(poll.looked(&lost, ms(4_100)), None, "lost for 2 s since 2.1 s");
    assert_eq!(poll.looked(&lost, ms(4_101)), Some(NodeEvent::Failed));
    // Without the answered look, 4.1 s of lost answers would have ended it
    // long before.
    let mut unbroken = Poll::new("/x", Backoff::poll(Duration::from_secs(1)));
    assert_eq!(unbroken.looked(&lost, ms(0)), None);
    assert_eq!(unbroken.looked(&lost, ms(2_001)), Some(NodeEvent::Failed));
}
