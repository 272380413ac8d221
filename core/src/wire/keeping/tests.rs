use std::time::Duration;

use super::*;
use crate::acquire::{Event, Input as WaitInput, Reply as WaitReply};
use crate::contender::{Action, Input, FIRST_WATCH_AFTER};
use crate::node_name;
use crate::wire::tests::{created, stat, waiting};
use crate::wire::{Answered, Carry, Error, Reply};

const PATH: &str = "/locks/a/h-W-0000000003";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A writer granted at its first look (czxid 30): no watch on its node.
fn granted_at_once() -> Contender {
    let (_, machine, _, action) = created(3, &[]);
    assert_eq!(action, Action::Grant { mark: false });
    assert!(machine.is_held());
    machine
}

/// A writer granted by its predecessor's deletion, its own node's watch
/// set while it waited (handed over to the keeper).
fn granted_after_a_wait() -> Contender {
    let (_, mut machine, _) = waiting();
    machine.step(Input::Acquire(WaitInput::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(WaitReply::Ok(())),
        watched: WaitReply::Ok(()),
        marker: None,
    }));
    let action = machine.step(Input::Acquire(WaitInput::Event(Event::Watched(
        NodeEvent::Deleted,
    ))));
    assert!(matches!(action, Action::Grant { .. }), "{action:?}");
    assert!(machine.own_watch_set());
    machine
}

/// The next step: what it is, with its pause and whether it is sent again.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    Wait(&'static str),
    Send(Duration, bool),
    Stop,
}

fn next(keeping: &mut Keeping<&'static str>) -> Option<Next> {
    keeping.poll().map(|next| match next {
        Keeper::Wait(watch) => Next::Wait(watch),
        Keeper::Send {
            exchange,
            after,
            again,
        } => {
            assert_eq!(exchange, keep(PATH), "the wire's read and watch of the node");
            Next::Send(after, again)
        }
        Keeper::Stop => Next::Stop,
    })
}

/// The read carried as a carrier carries it: `answer`, with the watch it
/// leaves if it succeeded (`watched`), and the carrier's error behind a
/// failure.
fn carried(answer: Result<Reply, Error>, watched: bool) -> Carried<&'static str, &'static str> {
    let mut carry = Carry::new(keep(PATH), Backoff::request(Duration::from_secs(1)));
    while carry.poll_send().is_some() {}
    let error = answer.is_err().then_some("the client's error");
    let watches = if watched {
        vec!["the read's watch"]
    } else {
        Vec::new()
    };
    carry.answered(
        0,
        Answered {
            answer,
            watches,
            error,
        },
        Duration::ZERO,
    );
    assert!(carry.is_complete());
    carry.finish()
}

fn data(czxid: i64, payload: &[u8]) -> Result<Reply, Error> {
    Ok(Reply::Data {
        data: payload.to_vec(),
        stat: stat(czxid),
    })
}

/// A keeper of a node granted at once, its first read sent.
fn reading() -> (Keeping<&'static str>, Contender) {
    let machine = granted_at_once();
    let mut keeping = Keeping::new(PATH.into(), &machine, None);
    assert!(next(&mut keeping).is_some());
    (keeping, machine)
}

/// The read out finds the node and leaves its watch: the keeper waits on it.
fn found_and_watched(keeping: &mut Keeping<&'static str>, machine: &mut Contender) {
    keeping.answered(
        machine,
        carried(data(30, b""), true),
        None,
        SessionState::Connected,
    );
    assert_eq!(next(keeping), Some(Next::Wait("the read's watch")));
}

#[test]
fn a_guard_granted_at_its_first_look_reads_its_node_only_after_the_bound() {
    let machine = granted_at_once();
    for handed in [None, Some("a watch that fired")] {
        let mut keeping = Keeping::new(PATH.into(), &machine, handed);
        assert_eq!(next(&mut keeping), Some(Next::Send(FIRST_WATCH_AFTER, false)));
        assert_eq!(
            next(&mut keeping),
            None,
            "nothing more until the read is answered"
        );
        assert!(!keeping.is_stopped());
    }
}

#[test]
fn a_guard_whose_wait_set_its_watch_waits_on_it_and_sets_one_at_once_if_none_was_handed() {
    let machine = granted_after_a_wait();
    let mut keeping = Keeping::new(PATH.into(), &machine, Some("the wait's watch"));
    assert_eq!(next(&mut keeping), Some(Next::Wait("the wait's watch")));
    assert_eq!(next(&mut keeping), None);
    let mut keeping = Keeping::new(PATH.into(), &machine, None);
    assert_eq!(next(&mut keeping), Some(Next::Send(Duration::ZERO, false)));
}

#[test]
fn only_a_keeper_that_begins_with_a_read_after_a_pause_says_it_may_start_late() {
    // (the machine, the watch handed over): the pause its carrier may
    // start it after.
    let rows: [(Contender, Option<&'static str>, Option<Duration>); 4] = [
        (granted_at_once(), None, Some(FIRST_WATCH_AFTER)),
        (
            granted_at_once(),
            Some("a watch that fired"),
            Some(FIRST_WATCH_AFTER),
        ),
        (granted_after_a_wait(), Some("the wait's watch"), None),
        (granted_after_a_wait(), None, None),
    ];
    for (row, (machine, handed, after)) in rows.into_iter().enumerate() {
        let mut keeping = Keeping::new(PATH.into(), &machine, handed);
        assert_eq!(keeping.starts_after(), after, "row {row}");
        next(&mut keeping);
        assert_eq!(keeping.starts_after(), None, "row {row}: once polled");
    }
    // A read sent again after a lost answer is no start.
    let (mut keeping, mut machine) = reading();
    keeping.answered(
        &mut machine,
        carried(Err(Error::Unanswered), false),
        None,
        SessionState::Disconnected,
    );
    assert_eq!(keeping.starts_after(), None);
    assert_eq!(next(&mut keeping), Some(Next::Send(ms(10), true)));
}

#[test]
fn a_read_that_finds_the_node_waits_on_its_watch_and_sees_a_revocation_request() {
    let (mut keeping, mut machine) = reading();
    let report = keeping.answered(
        &mut machine,
        carried(data(30, b""), true),
        None,
        SessionState::Connected,
    );
    assert_eq!(report, Report::default());
    assert_eq!(next(&mut keeping), Some(Next::Wait("the read's watch")));
    assert!(!machine.is_revoked());
    let report = keeping.fired(&mut machine, WatchedKind::DataChanged, SessionState::Connected);
    assert_eq!(report, Report::default());
    assert_eq!(
        next(&mut keeping),
        Some(Next::Send(Duration::ZERO, false)),
        "a data change: read and watch again, at once"
    );
    let revoked = data(30, node_name::REVOKE_PAYLOAD);
    assert_eq!(
        keeping.answered(
            &mut machine,
            carried(revoked, true),
            None,
            SessionState::Connected
        ),
        Report::default()
    );
    assert!(machine.is_revoked() && !machine.is_lost());
    assert_eq!(next(&mut keeping), Some(Next::Wait("the read's watch")));
}

#[test]
fn a_read_that_finds_the_node_but_left_no_watch_reads_again_at_once() {
    let (mut keeping, mut machine) = reading();
    keeping.answered(
        &mut machine,
        carried(data(30, b""), false),
        None,
        SessionState::Connected,
    );
    assert_eq!(next(&mut keeping), Some(Next::Send(Duration::ZERO, false)));
}

#[test]
fn what_the_reads_answer_stops_and_reports() {
    use Loss::{Deleted, MadeAgain, SessionClosed, SessionExpired};
    use SessionState::{AuthFailed, Closed, Connected, Disconnected, Expired};
    let session_ended = || Err(Error::SessionEnded);
    // The answer, the session's end the carrier's error names, the
    // session's state: the loss reported, and the watch refused.
    let table = [
        (data(99, b""), None, Connected, Some(MadeAgain), false),
        (Err(Error::NoNode), None, Connected, Some(Deleted), false),
        (Err(Error::NoNode), Some(Expired), Expired, Some(Deleted), false),
        (
            session_ended(),
            Some(Expired),
            Connected,
            Some(SessionExpired),
            false,
        ),
        (
            session_ended(),
            Some(Closed),
            Expired,
            Some(SessionExpired),
            false,
        ),
        (session_ended(), None, Expired, Some(SessionExpired), false),
        (session_ended(), Some(Closed), Closed, Some(SessionClosed), false),
        (
            session_ended(),
            Some(AuthFailed),
            AuthFailed,
            Some(SessionClosed),
            false,
        ),
        (session_ended(), None, Disconnected, Some(SessionClosed), false),
        (Err(Error::NoAuth), None, Connected, None, true),
        (Err(Error::Unimplemented), None, Connected, None, true),
        (Err(Error::NodeExists), None, Connected, None, true),
        (Err(Error::Failed), None, Connected, None, true),
        // An answer of another kind: no error of the carrier's to tell.
        (Ok(Reply::Done), None, Connected, None, false),
    ];
    for (answer, ended, state, lost, unwatchable) in table {
        let (mut keeping, mut machine) = reading();
        let watched = answer.is_ok();
        let report = keeping.answered(&mut machine, carried(answer.clone(), watched), ended, state);
        let row = format!("{answer:?} {ended:?} {state:?}");
        assert_eq!(report, Report { lost, unwatchable }, "{row}");
        assert_eq!(machine.is_lost(), lost.is_some(), "{row}");
        assert_eq!(next(&mut keeping), Some(Next::Stop), "{row}");
        assert!(keeping.is_stopped(), "{row}");
        assert_eq!(next(&mut keeping), None, "{row}");
    }
}

#[test]
fn a_read_whose_answer_is_lost_again_pauses_longer_each_time_up_to_a_second() {
    let (mut keeping, mut machine) = reading();
    let lost = || carried(Err(Error::Unanswered), false);
    for pause in [10, 20, 40, 80, 160, 320, 640, 1000, 1000] {
        let report = keeping.answered(&mut machine, lost(), None, SessionState::Disconnected);
        assert_eq!(report, Report::default(), "a lost answer tells nothing");
        assert_eq!(next(&mut keeping), Some(Next::Send(ms(pause), true)));
    }
    // An answer that tells what became of the node: the next lost one
    // pauses the shortest again.
    found_and_watched(&mut keeping, &mut machine);
    keeping.fired(&mut machine, WatchedKind::DataChanged, SessionState::Connected);
    assert_eq!(next(&mut keeping), Some(Next::Send(Duration::ZERO, false)));
    keeping.answered(&mut machine, lost(), None, SessionState::Connected);
    assert_eq!(next(&mut keeping), Some(Next::Send(ms(10), true)));
    assert!(!machine.is_lost() && !keeping.is_stopped());
}

#[test]
fn what_the_watchs_event_stops_and_reports() {
    use SessionState::{AuthFailed, Closed, Connected, ConnectedReadOnly, Disconnected, Expired};
    use WatchedKind::{ChildrenChanged, Created, DataChanged, Deleted, Session};
    // The event's kind and session state: the loss reported, and whether
    // the keeper stops (else it reads and watches again, at once).
    let table = [
        (Deleted, Connected, Some(Loss::Deleted), true),
        // A deletion tells of the node, whatever the session's state.
        (Deleted, Expired, Some(Loss::Deleted), true),
        (Deleted, Closed, Some(Loss::Deleted), true),
        (Session, Expired, Some(Loss::SessionExpired), true),
        (DataChanged, Expired, Some(Loss::SessionExpired), true),
        (Session, Closed, Some(Loss::SessionClosed), true),
        (Session, AuthFailed, Some(Loss::SessionClosed), true),
        (DataChanged, Connected, None, false),
        (Session, Disconnected, None, false),
        (Session, ConnectedReadOnly, None, false),
        (Created, Connected, None, false),
        (ChildrenChanged, Connected, None, false),
    ];
    for (kind, state, lost, stops) in table {
        let mut machine = granted_after_a_wait();
        let mut keeping = Keeping::new(PATH.into(), &machine, Some("the wait's watch"));
        assert!(next(&mut keeping).is_some());
        let report = keeping.fired(&mut machine, kind, state);
        let row = format!("{kind:?} {state:?}");
        assert_eq!(
            report,
            Report {
                lost,
                unwatchable: false
            },
            "{row}"
        );
        assert_eq!(machine.is_lost(), lost.is_some(), "{row}");
        let expected = if stops {
            Next::Stop
        } else {
            Next::Send(Duration::ZERO, false)
        };
        assert_eq!(next(&mut keeping), Some(expected), "{row}");
        assert_eq!(keeping.is_stopped(), stops, "{row}");
    }
}

#[test]
fn news_of_a_lock_lost_before_or_of_the_releases_own_deletion_reports_no_loss() {
    // Lost before (the lease ran out): the deletion or the session's end
    // that follows is no new loss.
    for (kind, state) in [
        (WatchedKind::Deleted, SessionState::Connected),
        (WatchedKind::Session, SessionState::Expired),
    ] {
        let mut machine = granted_at_once();
        let mut keeping = Keeping::new(PATH.into(), &machine, None);
        machine.held_lost();
        assert_eq!(keeping.fired(&mut machine, kind, state), Report::default());
        assert_eq!(next(&mut keeping), Some(Next::Stop));
    }
    let (mut keeping, mut machine) = reading();
    machine.held_lost();
    let gone = keeping.answered(
        &mut machine,
        carried(Err(Error::NoNode), false),
        None,
        SessionState::Connected,
    );
    assert_eq!(gone, Report::default());
    // The release began: its deletion is its own.
    let (mut keeping, mut machine) = reading();
    let _ = machine.release();
    let deleted = keeping.fired(&mut machine, WatchedKind::Deleted, SessionState::Connected);
    assert_eq!(deleted, Report::default());
    assert!(!machine.is_lost());
    assert_eq!(next(&mut keeping), Some(Next::Stop));
}

#[test]
fn a_keeper_handed_on_mid_step_waits_on_its_watch_or_makes_its_read_again_at_once() {
    // (the machine, the watch handed over at the grant, the news handed
    // back before the hand-on, the watch handed on): the step given before
    // and after the hand-on.
    type Row = (Contender, Option<&'static str>, Option<&'static str>, Next, Next);
    let rows: [Row; 5] = [
        // Waiting on the wait's watch: it goes on with the keeper.
        (
            granted_after_a_wait(),
            Some("the wait's watch"),
            Some("the wait's watch"),
            Next::Wait("the wait's watch"),
            Next::Wait("the wait's watch"),
        ),
        // The watch did not come along: read and watch again, at once.
        (
            granted_after_a_wait(),
            Some("the wait's watch"),
            None,
            Next::Wait("the wait's watch"),
            Next::Send(Duration::ZERO, true),
        ),
        // The first read, in its pause: made at once.
        (
            granted_at_once(),
            None,
            None,
            Next::Send(FIRST_WATCH_AFTER, false),
            Next::Send(Duration::ZERO, true),
        ),
        (
            granted_at_once(),
            None,
            Some("a watch the read had not left"),
            Next::Send(FIRST_WATCH_AFTER, false),
            Next::Send(Duration::ZERO, true),
        ),
        // A read at once (no watch handed over at the grant): at once.
        (
            granted_after_a_wait(),
            None,
            None,
            Next::Send(Duration::ZERO, false),
            Next::Send(Duration::ZERO, true),
        ),
    ];
    for (row, (machine, handed, on, before, after)) in rows.into_iter().enumerate() {
        let mut keeping = Keeping::new(PATH.into(), &machine, handed);
        assert_eq!(next(&mut keeping), Some(before), "row {row}");
        assert_eq!(next(&mut keeping), None, "row {row}: the step is out");
        keeping.hand_on(on);
        assert_eq!(next(&mut keeping), Some(after), "row {row}: handed on");
        assert_eq!(next(&mut keeping), None, "row {row}: the step is out again");
        assert!(!keeping.is_stopped(), "row {row}");
    }
}

#[test]
fn a_read_sent_again_after_lost_answers_is_made_at_once_when_handed_on_and_backs_off_as_before() {
    let (mut keeping, mut machine) = reading();
    let lost = || carried(Err(Error::Unanswered), false);
    for _ in 0..3 {
        keeping.answered(&mut machine, lost(), None, SessionState::Disconnected);
        assert!(next(&mut keeping).is_some());
    }
    keeping.hand_on(None);
    assert_eq!(next(&mut keeping), Some(Next::Send(Duration::ZERO, true)));
    // Its answer, handed back to the keeper that goes on, counts as usual:
    // another lost one pauses as the fourth would have.
    keeping.answered(&mut machine, lost(), None, SessionState::Disconnected);
    assert_eq!(next(&mut keeping), Some(Next::Send(ms(80), true)));
    found_and_watched(&mut keeping, &mut machine);
}

#[test]
fn a_keeper_handed_on_before_its_first_step_or_after_it_stopped_is_as_it_was() {
    let machine = granted_at_once();
    let mut keeping = Keeping::new(PATH.into(), &machine, None);
    keeping.hand_on(Some("a watch nobody set"));
    assert_eq!(next(&mut keeping), Some(Next::Send(FIRST_WATCH_AFTER, false)));
    let mut machine = granted_after_a_wait();
    let mut keeping = Keeping::new(PATH.into(), &machine, Some("the wait's watch"));
    next(&mut keeping);
    keeping.fired(&mut machine, WatchedKind::Deleted, SessionState::Connected);
    assert_eq!(next(&mut keeping), Some(Next::Stop));
    keeping.hand_on(None);
    assert_eq!(next(&mut keeping), None);
    assert!(keeping.is_stopped());
}
