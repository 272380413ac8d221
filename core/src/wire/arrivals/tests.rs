use super::*;
use crate::acquire;
use crate::contender::{child_path, Action};
use crate::wire::tests::{lock_watches, semaphore_watches, waiting, DIR};

use SessionState::{Connected, Disconnected, Expired};
use WatchedKind::{Created, DataChanged, Deleted, Session};

fn watched(n: u32) -> String {
    child_path(DIR, &format!("h-W-{n:010}"))
}

fn event(input: Option<Taken>) -> Option<Event> {
    match input {
        Some(Taken {
            input: Input::Event(event),
            ..
        }) => Some(event),
        other => panic!("not an event: {other:?}"),
    }
}

#[test]
fn a_wait_takes_what_arrived_in_the_machines_order_one_at_a_time() {
    let mut arrivals = Arrivals::default();
    arrivals.watched(&watched(2), Deleted, Connected);
    arrivals.session(Disconnected);
    arrivals.marker(Created);
    arrivals.own(DataChanged, Connected);
    let now = Now {
        deadline: true,
        ..Now::quiet(Connected)
    };
    assert_eq!(
        event(arrivals.next(now)),
        Some(Event::Own(NodeEvent::DataChanged))
    );
    assert_eq!(event(arrivals.next(now)), Some(Event::Released));
    assert_eq!(event(arrivals.next(now)), Some(Event::Interrupted));
    assert_eq!(
        event(arrivals.next(now)),
        Some(Event::Watched(NodeEvent::Deleted))
    );
    assert!(arrivals.is_empty(), "each was taken once");
    assert_eq!(
        arrivals.next(now),
        Some(Taken {
            input: Input::Deadline,
            polled: false
        }),
        "the deadline last: what arrived before it counts"
    );
    assert_eq!(arrivals.next(Now::quiet(Connected)), None, "nothing arrived");
}

#[test]
fn a_markers_event_that_is_not_its_creation_is_dropped_and_the_next_is_taken() {
    let mut arrivals = Arrivals::default();
    arrivals.marker(Deleted);
    assert_eq!(arrivals.next(Now::quiet(Connected)), None);
    assert!(arrivals.is_empty(), "it means nothing, and is gone");
    arrivals.marker(DataChanged);
    arrivals.watched(&watched(2), Deleted, Connected);
    assert_eq!(
        event(arrivals.next(Now::quiet(Connected))),
        Some(Event::Watched(NodeEvent::Deleted))
    );
    assert!(arrivals.is_empty());
}

#[test]
fn the_watched_nodes_events_are_taken_in_the_order_they_fired_one_per_node() {
    let mut arrivals = Arrivals::default();
    arrivals.watched(&watched(2), DataChanged, Connected);
    arrivals.watched(&watched(1), Deleted, Connected);
    arrivals.watched(&watched(2), Deleted, Connected);
    assert!(arrivals.fired(&watched(1)) && arrivals.fired(&watched(2)));
    assert!(!arrivals.fired(&watched(0)));
    let now = Now::quiet(Connected);
    assert_eq!(
        event(arrivals.next(now)),
        Some(Event::Watched(NodeEvent::Deleted))
    );
    assert!(!arrivals.fired(&watched(1)));
    assert_eq!(
        event(arrivals.next(now)),
        Some(Event::Watched(NodeEvent::Deleted))
    );
    assert_eq!(arrivals.next(now), None);
}

#[test]
fn a_watched_nodes_event_is_taken_before_a_polls_end_and_the_polls_end_is_taken_now_or_never() {
    let mut arrivals = Arrivals::default();
    arrivals.watched(&watched(2), Deleted, Connected);
    let now = Now {
        polled: Some(NodeEvent::Failed),
        ..Now::quiet(Connected)
    };
    assert_eq!(
        arrivals.next(now),
        Some(Taken {
            input: Input::Event(Event::Watched(NodeEvent::Deleted)),
            polled: false
        })
    );
    assert_eq!(
        arrivals.next(now),
        Some(Taken {
            input: Input::Event(Event::Watched(NodeEvent::Failed)),
            polled: true
        }),
        "the poll's end, whose error is the acquire's"
    );
    assert!(arrivals.is_empty(), "a poll's end is not kept");
    assert_eq!(arrivals.next(Now::quiet(Connected)), None);
}

#[test]
fn a_wait_with_nothing_to_watch_wakes_at_once_after_what_arrived() {
    let mut arrivals = Arrivals::default();
    let now = Now {
        nothing_to_watch: true,
        ..Now::quiet(Connected)
    };
    assert_eq!(event(arrivals.next(now)), Some(Event::Watched(NodeEvent::Other)));
    arrivals.session(Disconnected);
    assert_eq!(event(arrivals.next(now)), Some(Event::Interrupted));
}

#[test]
fn the_sessions_end_a_wait_takes_is_the_state_its_event_carried_else_the_sessions_now() {
    // The watch heard of it before the session's state says so.
    let mut arrivals = Arrivals::default();
    arrivals.own(Session, Expired);
    assert_eq!(
        event(arrivals.next(Now::quiet(Disconnected))),
        Some(Event::Own(NodeEvent::SessionEnded))
    );
    assert_eq!(arrivals.ended(), Some(Expired));
    // A poll that found the session over: the session's state now.
    let mut arrivals = Arrivals::default();
    let now = Now {
        polled: Some(NodeEvent::SessionEnded),
        ..Now::quiet(SessionState::Closed)
    };
    assert_eq!(
        event(arrivals.next(now)),
        Some(Event::Watched(NodeEvent::SessionEnded))
    );
    assert_eq!(arrivals.ended(), Some(SessionState::Closed));
    // No session's end, none told.
    let mut arrivals = Arrivals::default();
    arrivals.watched(&watched(2), Deleted, Connected);
    arrivals.session(Disconnected);
    arrivals.next(Now::quiet(Connected));
    arrivals.next(Now::quiet(Connected));
    assert_eq!(arrivals.ended(), None);
}

#[test]
fn while_carrying_the_machine_takes_my_nodes_the_markers_and_the_sessions_in_full_and_the_watched_stay() {
    let mut arrivals = Arrivals::default();
    arrivals.watched(&watched(2), Deleted, Connected);
    arrivals.session(SessionState::AuthFailed);
    arrivals.marker(Created);
    arrivals.own(Deleted, Connected);
    assert_eq!(
        arrivals.while_carrying(),
        [
            Event::Own(NodeEvent::Deleted),
            Event::Released,
            Event::SessionEnded
        ]
    );
    assert_eq!(arrivals.ended(), Some(SessionState::AuthFailed));
    assert!(arrivals.has_watched() && arrivals.fired(&watched(2)));
    assert!(!arrivals.has_own() && !arrivals.has_marker() && !arrivals.has_session());
    assert!(arrivals.while_carrying().is_empty());
    // A marker's event that is not its creation means nothing.
    arrivals.marker(Deleted);
    assert!(arrivals.while_carrying().is_empty());
    assert!(!arrivals.has_marker());
}

#[test]
fn while_carrying_my_nodes_event_that_carries_the_sessions_end_is_the_end_told() {
    let mut arrivals = Arrivals::default();
    arrivals.own(Session, Expired);
    assert_eq!(arrivals.while_carrying(), [Event::Own(NodeEvent::SessionEnded)]);
    assert_eq!(arrivals.ended(), Some(Expired));
    let mut arrivals = Arrivals::default();
    arrivals.session(Disconnected);
    assert_eq!(arrivals.while_carrying(), [Event::Interrupted]);
    assert_eq!(arrivals.ended(), None);
}

#[test]
fn an_exchange_drops_the_events_of_the_watches_it_sets_anew_but_those_it_keeps() {
    let (wire, machine, _) = waiting();
    let filled = || {
        let mut arrivals = Arrivals::default();
        arrivals.own(DataChanged, Connected);
        arrivals.marker(Created);
        arrivals.session(Disconnected);
        arrivals.watched(&watched(2), Deleted, Connected);
        arrivals.watched(&watched(1), Deleted, Connected);
        arrivals
    };
    // The wait's watches: all of a lock's go (and the session's changes before them).
    let exchange = wire.exchange(&lock_watches(), &machine).expect("watches");
    let mut arrivals = filled();
    arrivals.replaced(&exchange);
    assert!(arrivals.is_empty(), "{arrivals:?}");
    // A semaphore's keeps the watches it does not ask for again, and their events.
    let exchange = wire.exchange(&semaphore_watches(), &machine).expect("watches");
    let mut arrivals = filled();
    arrivals.replaced(&exchange);
    assert!(arrivals.fired(&watched(2)) && !arrivals.fired(&watched(1)));
    assert!(arrivals.has_own() && arrivals.has_marker(), "not set anew: kept");
    assert!(!arrivals.has_session(), "the listing after them decides");
    // A listing sets no watch: nothing goes.
    let list = wire
        .exchange(&Action::Acquire(acquire::Action::List), &machine)
        .expect("a listing");
    let mut arrivals = filled();
    arrivals.replaced(&list);
    assert_eq!(arrivals, filled());
}

#[test]
fn each_source_waits_here_until_taken_and_says_so() {
    let empty = Arrivals::default();
    assert!(empty.is_empty());
    assert!(!(empty.has_own() || empty.has_marker() || empty.has_session() || empty.has_watched()));
    type Tell = fn(&mut Arrivals);
    let told: [(&str, Tell); 4] = [
        ("own", |a| a.own(DataChanged, Connected)),
        ("marker", |a| a.marker(Created)),
        ("session", |a| a.session(Disconnected)),
        ("watched", |a| a.watched(&watched(2), Deleted, Connected)),
    ];
    for (source, tell) in told {
        let mut arrivals = Arrivals::default();
        tell(&mut arrivals);
        assert!(!arrivals.is_empty(), "{source}");
        let has = [
            ("own", arrivals.has_own()),
            ("marker", arrivals.has_marker()),
            ("session", arrivals.has_session()),
            ("watched", arrivals.has_watched()),
        ];
        for (name, has) in has {
            assert_eq!(has, name == source, "{source} told, has {name}: {has}");
        }
        assert!(arrivals.next(Now::quiet(Connected)).is_some(), "{source}");
        assert!(arrivals.is_empty(), "{source} taken");
    }
}

#[test]
fn a_markers_event_not_taken_goes_with_its_watch_when_the_machine_drops_it() {
    // A wait took my node's event, which came with the marker's creation;
    // the machine lists again and no longer needs the marker.
    let mut arrivals = Arrivals::default();
    arrivals.own(DataChanged, Connected);
    arrivals.marker(Created);
    assert_eq!(
        event(arrivals.next(Now::quiet(Connected))),
        Some(Event::Own(NodeEvent::DataChanged))
    );
    arrivals.marker_dropped();
    assert!(
        arrivals.while_carrying().is_empty(),
        "no release is told of a marker the machine no longer watches"
    );
    assert!(arrivals.is_empty());
}
