use super::*;
use crate::acquire::{Event, NodeEvent, WatchedKind};
use crate::contender::{child_path, Outcome};
use crate::wire::tests::{lock_watches, machine, waiting, wire, DIR};
use crate::wire::{Kept, Reply, Watch};

use SessionState::{Connected, Disconnected, Expired};

type TestRun = Run<u32, &'static str, Handle>;

fn forever() -> TestRun {
    Run::new(Deadlines::forever(), 0)
}

/// The failure's report, the errors classified as answered.
fn report(run: &mut TestRun, failure: Failure, machine: &Contender) -> Reported<'static, &'static str> {
    match run.reported(failure, machine, Connected, RequestError::Answered) {
        Reported::RequestFailed(e) => Reported::RequestFailed(e),
        Reported::Unexplained => Reported::Unexplained,
        Reported::SessionExpired => Reported::SessionExpired,
        other => panic!("not a report of this test: {other:?}"),
    }
}

#[test]
fn the_ends_go_as_they_are_and_an_end_without_a_grant_is_broken() {
    for (action, next) in [
        (Action::Grant { mark: true }, Next::Grant { mark: true }),
        (Action::GiveUp, Next::GiveUp),
        (Action::Fail(Failure::Lost), Next::Fail(Failure::Lost)),
        (
            Action::Done(Outcome::Deleted),
            Next::Broken("the acquire ended without a grant"),
        ),
        (
            Action::Acquire(acquire::Action::Wait { poll: true }),
            Next::Wait { poll: true },
        ),
    ] {
        let (wire, mut machine, _) = waiting();
        let step = forever().next(&mut machine, &wire, action.clone(), 0, 0);
        assert_eq!(step.next, next, "{action:?}");
    }
}

#[test]
fn a_request_action_sends_its_exchange_as_the_wire_builds_it() {
    let (wire, mut machine, _) = waiting();
    let step = forever().next(&mut machine, &wire, lock_watches(), 0, 0);
    assert_eq!(
        step.next,
        Next::Send(wire.exchange(&lock_watches(), &machine).expect("watches"))
    );
}

#[test]
fn a_step_of_the_wait_past_its_bound_meets_the_deadline_and_a_request_of_its_own_is_sent() {
    // Waits until 10; the look's answers are due by 20.
    let deadlines = Deadlines::until(10, 20);
    let (waiting_wire, mut waiting_machine, _) = waiting();
    let wait = Action::Acquire(acquire::Action::Wait { poll: false });
    for (action, now, deadline) in [
        (lock_watches(), 9, false),
        (lock_watches(), 10, true),
        (wait.clone(), 10, true),
        (wait, 11, true),
    ] {
        let mut run: TestRun = Run::new(deadlines, 0);
        let next = run
            .next(&mut waiting_machine, &waiting_wire, action.clone(), now, 0)
            .next;
        assert_eq!(next == Next::Deadline, deadline, "{action:?} at {now}: {next:?}");
    }
    // The create belongs to the look, bounded by the later instant, and is
    // no step of the wait: it is sent, its carrier bounds it.
    let mut fresh = machine();
    let mut run: TestRun = Run::new(deadlines, 0);
    assert_eq!(run.until(&fresh), Some(20), "the look's bound");
    let create = fresh.start();
    assert!(matches!(
        run.next(&mut fresh, &wire(), create, 30, 0).next,
        Next::Send(_)
    ));
    assert_eq!(run.until(&waiting_machine), Some(10), "the wait's bound");
    let mut forever = forever();
    assert_eq!(forever.until(&waiting_machine), None);
    let next = forever
        .next(&mut waiting_machine, &waiting_wire, lock_watches(), u32::MAX, 0)
        .next;
    assert!(matches!(next, Next::Send(_)), "no bound, no deadline");
}

#[test]
fn a_reconnection_is_told_to_the_machine_before_its_next_request_once() {
    let (wire, machine, _) = waiting();
    let mut machine = machine.with_own_readable(true);
    let mut run = forever();
    let wait = Action::Acquire(acquire::Action::Wait { poll: false });
    let _ = run.next(&mut machine, &wire, wait, 0, 1);
    assert!(
        machine.own_readable(),
        "a wait sends nothing: nothing to tell yet"
    );
    assert_eq!(run.connection(), 0);
    let _ = run.next(&mut machine, &wire, lock_watches(), 0, 1);
    assert!(
        !machine.own_readable(),
        "what it learnt may not hold on the new connection"
    );
    assert_eq!(run.connection(), 1);
    let mut machine = machine.with_own_readable(true);
    let _ = run.next(&mut machine, &wire, lock_watches(), 0, 1);
    assert!(machine.own_readable(), "the same connection: told once");
}

#[test]
fn the_place_is_told_when_it_changes_and_not_again() {
    let mut wire = wire();
    let mut machine = machine().with_place(true);
    let mut run = forever();
    let create = machine.start();
    let step = run.next(&mut machine, &wire, create, 0, 0);
    assert_eq!(step.place, None, "no listing yet, no place");
    let Next::Send(mut exchange) = step.next else {
        panic!("a create: {:?}", step.next);
    };
    exchange.answer(0, Ok(Reply::Created { czxid: 30, seq: 3 }));
    exchange.answer(
        1,
        Ok(Reply::Children {
            children: vec!["h-W-0000000002".to_owned(), "h-W-0000000003".to_owned()],
            data_length: 0,
        }),
    );
    let action = wire.settle(&exchange, &mut machine);
    let placed = machine.place().cloned();
    assert_eq!(placed.as_ref().map(|p| p.ahead), Some(1));
    let step = run.next(&mut machine, &wire, action.clone(), 0, 0);
    assert_eq!(step.place, placed, "the listing placed it");
    assert_eq!(
        run.next(&mut machine, &wire, action, 0, 0).place,
        None,
        "told once"
    );
}

#[test]
fn the_markers_watch_goes_once_the_machine_no_longer_needs_it_with_its_event() {
    // Waiting on a writer of this library's own naming, with another
    // before it: that writer's deletion does not grant, its release does.
    let native = |seq| format!("h@{}-W-{seq:010}", uuid::Uuid::nil());
    let (wire, mut machine, _, watches) = crate::wire::tests::created(3, &[&native(1), &native(2)]);
    let Action::Acquire(acquire::Action::SetWatches { marker: Some(_), .. }) = &watches else {
        panic!("a wait with the marker's watch: {watches:?}");
    };
    let mut run = forever();
    let step = run.next(&mut machine, &wire, watches, 0, 0);
    assert!(!step.drop_marker, "asked for");
    let Next::Send(mut exchange) = step.next else {
        panic!("watches: {:?}", step.next);
    };
    let data = Reply::Data {
        data: Vec::new(),
        stat: crate::wire::tests::stat(30),
    };
    exchange.answer(0, Ok(data.clone()));
    exchange.answer(1, Ok(Reply::Stat(None)));
    exchange.answer(2, Ok(data));
    let mut wire = wire;
    let wait = wire.settle(&exchange, &mut machine);
    run.arrivals_mut().marker(WatchedKind::Created);
    let step = run.next(&mut machine, &wire, wait, 0, 0);
    assert!(!step.drop_marker, "the wait needs it: {:?}", step.next);
    assert!(run.arrivals().has_marker(), "its creation waits to be taken");
    // My node is deleted: the wait is over, and with it the marker's use.
    let over = machine.step(crate::contender::Input::Acquire(acquire::Input::Event(
        Event::Own(NodeEvent::Deleted),
    )));
    let step = run.next(&mut machine, &wire, over, 0, 0);
    assert!(step.drop_marker, "{:?}", step.next);
    assert!(!run.arrivals().has_marker(), "its event goes with it");
}

#[test]
fn an_exchange_sent_takes_away_what_the_watches_it_replaces_gave() {
    let (wire, mut machine, _) = waiting();
    let mut run = forever();
    run.arrivals_mut().own(WatchedKind::DataChanged, Connected);
    run.arrivals_mut().marker(WatchedKind::Created);
    run.arrivals_mut()
        .watched(&format!("{DIR}/h-W-0000000002"), WatchedKind::Deleted, Connected);
    let _ = run.next(&mut machine, &wire, lock_watches(), 0, 0);
    assert!(run.arrivals().is_empty(), "all three watches are set anew");
}

#[test]
fn a_wait_polls_unless_a_watched_event_waits_and_looks_again_with_nothing_to_watch() {
    for (poll, watching, polls, nothing_to_watch) in [
        (false, true, false, false),
        (false, false, false, true),
        (true, false, true, false),
        (true, true, true, false),
    ] {
        let mut run = forever();
        if watching {
            *run.watches_mut() = kept_watches(Handle::Pending, Handle::Pending);
        }
        assert_eq!(
            run.wait(poll),
            Wait {
                polls,
                nothing_to_watch
            },
            "poll {poll}, watching {watching}"
        );
    }
    let mut run = forever();
    run.arrivals_mut()
        .watched(&format!("{DIR}/h-W-0000000002"), WatchedKind::Deleted, Connected);
    assert!(!run.wait(true).polls, "the event waiting here ends the wait");
}

#[test]
fn a_wait_wakes_for_anything_that_arrived_its_polls_end_its_bound_or_nothing_to_watch() {
    let watching = Wait {
        polls: false,
        nothing_to_watch: false,
    };
    let bare = Wait {
        polls: false,
        nothing_to_watch: true,
    };
    for (wait, arrived, polled, deadline, wakes) in [
        (watching, false, false, false, false),
        (watching, true, false, false, true),
        (watching, false, true, false, true),
        (watching, false, false, true, true),
        (bare, false, false, false, true),
    ] {
        assert_eq!(
            wait.wakes(arrived, polled, deadline),
            wakes,
            "{wait:?}: arrived {arrived}, polled {polled}, deadline {deadline}"
        );
    }
}

#[test]
fn a_failure_reports_the_polls_error_it_took_before_the_exchanges_and_none_from_before_a_request() {
    let (wire, mut machine, _) = waiting();
    let mut run = forever();
    assert_eq!(
        report(&mut run, Failure::Request, &machine),
        Reported::Unexplained
    );
    run.blamed("the exchange's");
    assert_eq!(
        report(&mut run, Failure::Request, &machine),
        Reported::RequestFailed("the exchange's")
    );
    run.blamed("the exchange's");
    let polled = Now {
        polled: Some(NodeEvent::Other),
        ..Now::quiet(Connected)
    };
    assert!(run.arrived(polled, Some("the poll's")).is_some());
    assert_eq!(
        report(&mut run, Failure::Request, &machine),
        Reported::RequestFailed("the poll's"),
        "the poll came last"
    );
    // A poll's end not taken (a watched node's event went first) leaves
    // no error.
    let mut run = forever();
    run.arrivals_mut()
        .watched(&format!("{DIR}/h-W-0000000002"), WatchedKind::Deleted, Connected);
    assert!(run.arrived(polled, Some("a poll not taken")).is_some());
    assert_eq!(
        report(&mut run, Failure::Request, &machine),
        Reported::Unexplained
    );
    // A new request forgets the errors before it.
    run.blamed("the exchange's");
    assert!(run.arrived(polled, Some("the poll's")).is_some());
    let _ = run.next(&mut machine, &wire, lock_watches(), 0, 0);
    assert_eq!(
        report(&mut run, Failure::Request, &machine),
        Reported::Unexplained
    );
}

#[test]
fn a_failure_reports_the_sessions_end_an_event_told() {
    let (_, machine, _) = waiting();
    let mut run = forever();
    run.arrivals_mut().session(Expired);
    let _ = run.arrived(Now::quiet(Disconnected), None);
    assert_eq!(
        report(&mut run, Failure::SessionEnded, &machine),
        Reported::SessionExpired,
        "though the session's state says connected now"
    );
}

#[test]
fn a_reconnection_seen_as_the_waits_watches_leave_rebuilds_them_without_what_the_old_connection_taught() {
    // A wait whose handle learnt, on connection 0, that it reads its node:
    // its own node's and the marker's watches go in one `SetWatches`.
    let native = |seq| format!("h@{}-W-{seq:010}", uuid::Uuid::nil());
    let (wire, machine, _, watches) = crate::wire::tests::created(3, &[&native(1), &native(2)]);
    let mut machine = machine.with_own_readable(true);
    let together = |exchange: &Exchange| {
        exchange
            .requests()
            .iter()
            .any(|r| matches!(r, crate::wire::Request::SetWatches { .. }))
    };
    for (now, rebuilt) in [(0, false), (1, true)] {
        let mut machine = machine.clone();
        let mut run = forever();
        let Next::Send(exchange) = run.next(&mut machine, &wire, watches.clone(), 0, 0).next else {
            panic!("the wait's watches");
        };
        assert!(exchange.forgets_session_changes() && together(&exchange));
        // The carrier has two changes of the session not taken; it reads
        // connection `now` after it gave them.
        let changes = std::cell::RefCell::new(vec![Connected, Disconnected]);
        let changed = || changes.borrow_mut().pop();
        let connection = || {
            assert!(
                changes.borrow().is_empty(),
                "the connection is read after every change is taken"
            );
            now
        };
        let (sent, _) = run.sending(&mut machine, &wire, exchange, changed, connection);
        assert!(
            changes.borrow().is_empty(),
            "the session's changes are forgotten before it is sent"
        );
        assert_eq!(
            !together(&sent),
            rebuilt,
            "connection {now}: {:?}",
            sent.requests()
        );
        assert_eq!(machine.own_readable(), !rebuilt);
        assert_eq!(run.connection(), now);
    }
    // Any other exchange is sent as it is, whatever the connection.
    let mut run = forever();
    let create = Action::Create;
    let Next::Send(exchange) = run.next(&mut machine, &wire, create, 0, 0).next else {
        panic!("a create");
    };
    let changed = || -> Option<SessionState> { panic!("that exchange forgets nothing") };
    let (sent, _) = run.sending(&mut machine, &wire, exchange.clone(), changed, || 5);
    assert_eq!(sent, exchange);
    assert!(machine.own_readable(), "not told: that exchange forgets nothing");
}

#[test]
fn an_exchange_sent_lets_go_of_the_watches_of_the_kinds_it_sets_and_keeps_the_others() {
    let (wire, mut machine, _) = waiting();
    let mut run = forever();
    let own = child_path(DIR, machine.node().expect("created"));
    run.watches_mut().keep(vec![Kept {
        kind: Watch::Own,
        path: own.clone(),
        lingers: false,
        watch: Handle::Pending,
    }]);
    // A listing sets no watch: my node's stays.
    let Next::Send(list) = run
        .next(&mut machine, &wire, Action::Acquire(acquire::Action::List), 0, 0)
        .next
    else {
        panic!("a listing");
    };
    let (_, gone) = run.sending(&mut machine, &wire, list, || None::<SessionState>, || 0);
    assert!(gone.is_empty(), "{gone:?}");
    assert!(
        run.watches().clone().take_own().is_some(),
        "my node's watch is kept"
    );
    // The wait's watches replace my node's.
    let Next::Send(watches) = run.next(&mut machine, &wire, lock_watches(), 0, 0).next else {
        panic!("the wait's watches");
    };
    let (_, gone) = run.sending(&mut machine, &wire, watches, || None::<SessionState>, || 0);
    let gone: Vec<_> = gone.into_iter().map(|w| (w.kind, w.path)).collect();
    assert_eq!(gone, vec![(Watch::Own, own)]);
    assert!(run.watches().clone().take_own().is_none());
}

/// A watch of these tests, as a watch future: pending, fired (its event
/// not asked for yet), or done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handle {
    Pending,
    Fires(WatchedKind, SessionState),
    Gave,
}

/// Asks a watch of these tests: its event, once; asked again after it gave
/// it, a panic (a future polled after it completed).
fn once(handle: &mut Handle) -> Fired {
    match *handle {
        Handle::Pending => None,
        Handle::Fires(kind, state) => {
            *handle = Handle::Gave;
            Some((kind, state))
        }
        Handle::Gave => panic!("a watch asked again after it gave its event"),
    }
}

/// My node's watch and the watched node 2's, as a lock's wait keeps them.
fn kept_watches(own: Handle, watched: Handle) -> Watches<Handle> {
    let mut watches = Watches::default();
    let kept = |kind, path: &str, watch| Kept {
        kind,
        path: child_path(DIR, path),
        lingers: false,
        watch,
    };
    watches.keep([
        kept(Watch::Own, "h-W-0000000003", own),
        kept(Watch::Watched, "h-W-0000000002", watched),
    ]);
    watches
}

#[test]
fn a_wait_gathers_what_its_watches_and_the_session_gave_and_says_whether_anything_did() {
    let mut quiet = forever();
    *quiet.watches_mut() = kept_watches(Handle::Pending, Handle::Pending);
    assert!(quiet.watches().watching(), "the run holds the table given");
    assert!(!quiet.gather(once, || None), "nothing: it sleeps");
    let fired = Handle::Fires(WatchedKind::Deleted, Connected);
    let mut run = forever();
    *run.watches_mut() = kept_watches(fired, fired);
    assert!(run.gather(once, || Some(Disconnected)));
    let arrivals = run.arrivals();
    assert!(arrivals.has_own() && arrivals.has_watched() && arrivals.has_session());
    assert!(!run.watches().watching(), "a fired watch is out of the table");
    // A change of the session waits here: the session is not asked again until it is taken.
    let mut asked = false;
    assert!(run.gather(once, || {
        asked = true;
        None
    }));
    assert!(!asked);
}

#[test]
fn what_arrived_during_a_request_is_all_fed_but_the_watched_nodes_events_stay_for_the_wait() {
    let mut run = forever();
    *run.watches_mut() = kept_watches(
        Handle::Fires(WatchedKind::DataChanged, Connected),
        Handle::Fires(WatchedKind::Deleted, Connected),
    );
    // Two changes of the session seen already: both are taken, one after the other.
    let mut changes = vec![Expired, Disconnected];
    let mut fed = Vec::new();
    run.pump(once, || changes.pop(), |event| fed.push(event));
    assert_eq!(
        fed,
        [
            Event::Own(NodeEvent::DataChanged),
            Event::Interrupted,
            Event::SessionEnded
        ],
        "my node's event and the first change, then the next change"
    );
    assert!(changes.is_empty(), "asked until nothing more is there");
    assert_eq!(
        run.arrivals().ended(),
        Some(Expired),
        "the session's end was taken"
    );
    let arrivals = run.arrivals();
    assert!(!(arrivals.has_own() || arrivals.has_marker() || arrivals.has_session()));
    assert!(
        arrivals.has_watched(),
        "the watched node's event stays for the wait"
    );
    assert_eq!(
        run.arrived(Now::quiet(Connected), None),
        Some(Input::Event(Event::Watched(NodeEvent::Deleted)))
    );
}

/// The lock's wait's watches ([`lock_watches`]) sent through `run` and
/// answered: my node read (czxid 30), no marker yet, the watched node read.
fn lock_watches_answered(run: &mut TestRun, machine: &mut Contender, wire: &Wire) -> Exchange {
    let Next::Send(mut exchange) = run.next(machine, wire, lock_watches(), 0, 0).next else {
        panic!("the wait's watches are sent");
    };
    let data = |czxid| Reply::Data {
        data: Vec::new(),
        stat: crate::wire::tests::stat(czxid),
    };
    exchange.answer(0, Ok(data(30)));
    exchange.answer(1, Ok(Reply::Stat(None)));
    exchange.answer(2, Ok(data(20)));
    exchange
}

/// A machine that notes what the run tells it, and steps as the contender.
struct Noting {
    inner: Contender,
    events: Vec<Event>,
    settled: usize,
}

impl Stepping for Noting {
    fn contender(&mut self) -> &mut Contender {
        &mut self.inner
    }

    fn event(&mut self, event: Event) {
        self.events.push(event);
        self.inner.event(event);
    }

    fn settle(&mut self, wire: &mut Wire, exchange: &Exchange) -> Action {
        self.settled += 1;
        wire.settle(exchange, &mut self.inner)
    }
}

#[test]
fn an_exchanges_end_keeps_its_watches_feeds_what_arrived_counts_the_live_watches_then_settles() {
    let (mut wire, machine, _) = waiting();
    let mut run = forever();
    let mut noting = Noting {
        inner: machine,
        events: Vec::new(),
        settled: 0,
    };
    let exchange = lock_watches_answered(&mut run, &mut noting.inner, &wire);
    let kept = |kind, name: &str, watch| Kept {
        kind,
        path: child_path(DIR, name),
        lingers: false,
        watch,
    };
    let marker = crate::node_name::release_marker("h-W-0000000002");
    let kept = vec![
        kept(
            Watch::Own,
            "h-W-0000000003",
            Handle::Fires(WatchedKind::DataChanged, Connected),
        ),
        kept(Watch::Marker, &marker, Handle::Pending),
        kept(
            Watch::Watched,
            "h-W-0000000002",
            Handle::Fires(WatchedKind::Deleted, Connected),
        ),
    ];
    // What the contender alone does with the same, in this order.
    let (mut alone, mut alone_wire) = (noting.inner.clone(), wire.clone());
    alone.event(Event::Own(NodeEvent::DataChanged));
    alone.watches_pending(&[]);
    let expected = alone_wire.settle(&exchange, &mut alone);

    let action = run.exchanged(&mut noting, &mut wire, &exchange, kept, once, || None);
    assert_eq!(action, expected);
    assert_eq!(noting.settled, 1);
    assert_eq!(
        noting.events,
        [Event::Own(NodeEvent::DataChanged)],
        "my node's event is fed as the answers are in; the watched node's waits"
    );
    assert!(
        run.watches().pending_watched().is_empty() && !run.watches().watching(),
        "the watched node's watch fired: none is live"
    );
    assert!(run.arrivals().has_watched());
}

#[test]
fn the_contender_steps_through_an_exchanges_end_taking_what_arrived_before_the_answers() {
    // My node deleted while the wait's watches were being set: the
    // contender is told before it settles the answers, which then count
    // for nothing.
    let (mut wire, mut machine, _) = waiting();
    let mut run = forever();
    let exchange = lock_watches_answered(&mut run, &mut machine, &wire);
    let own = Kept {
        kind: Watch::Own,
        path: child_path(DIR, "h-W-0000000003"),
        lingers: false,
        watch: Handle::Fires(WatchedKind::Deleted, Connected),
    };
    let (mut told, mut told_wire) = (machine.clone(), wire.clone());
    told.event(Event::Own(NodeEvent::Deleted));
    let expected = told_wire.settle(&exchange, &mut told);
    let not_told = wire.clone().settle(&exchange, &mut machine.clone());
    assert_ne!(expected, not_told, "the event decides what comes next");

    let action = run.exchanged(&mut machine, &mut wire, &exchange, vec![own], once, || None);
    assert_eq!(action, expected);
}

/// Answers every request of `exchange` as a quiet directory would: `listing`
/// listed, each node read or found (created at 20).
fn answer_all(exchange: &mut Exchange, listing: &[String]) {
    let requests = exchange.requests().to_vec();
    for (index, request) in requests.iter().enumerate() {
        let answer = match request {
            crate::wire::Request::Create { .. } => Reply::Created { czxid: 30, seq: 3 },
            crate::wire::Request::List { .. } => Reply::Children {
                children: listing.to_vec(),
                data_length: 0,
            },
            crate::wire::Request::GetData { .. } => Reply::Data {
                data: Vec::new(),
                stat: crate::wire::tests::stat(20),
            },
            crate::wire::Request::Exists { .. } => Reply::Stat(Some(crate::wire::tests::stat(20))),
            other => panic!("not a request of this test: {other:?}"),
        };
        exchange.answer(index, Ok(answer));
    }
}

#[test]
fn a_semaphores_watch_that_fired_during_an_exchange_is_set_again_by_the_watches_that_follow() {
    // A semaphore of 2 permits: my node 3 waits on 2 and 1 (0 and 1 hold,
    // 2 waits).
    let permits = std::num::NonZeroU32::new(2);
    let mut machine = Contender::new(
        crate::node_name::Mode::Write,
        true,
        crate::node_name::Layout::Native,
        uuid::Uuid::nil(),
        7,
        false,
    )
    .with_permits(permits);
    let prefix = machine.prefix("h").expect("a semaphore's prefix");
    let mut wire = Wire::new(DIR, &prefix, Vec::new());
    let tagged = |seq: i32| format!("o{seq}@permits-2@t{seq}-W-{seq:010}");
    let me = format!("{prefix}0000000003");
    let listing = vec![tagged(0), tagged(1), tagged(2), me];
    let mut run = forever();
    let start = machine.start();
    let Next::Send(mut create) = run.next(&mut machine, &wire, start, 0, 0).next else {
        panic!("a create");
    };
    answer_all(&mut create, &listing);
    let watches = run.exchanged(&mut machine, &mut wire, &create, Vec::new(), once, || None);
    let Next::Send(mut set) = run.next(&mut machine, &wire, watches, 0, 0).next else {
        panic!("the wait's watches are sent");
    };
    answer_all(&mut set, &listing);
    let watched = |seq: i32, watch| Kept {
        kind: Watch::Watched,
        path: child_path(DIR, &tagged(seq)),
        lingers: true,
        watch,
    };
    // Both watches set; node 1's is to fire (a write to it) while a later
    // exchange is under way, and is not asked before.
    let writes_1 = Handle::Fires(WatchedKind::DataChanged, Connected);
    let wait = run.exchanged(
        &mut machine,
        &mut wire,
        &set,
        vec![watched(2, Handle::Pending), watched(1, writes_1)],
        |_: &mut Handle| None,
        || None,
    );
    assert_eq!(wait, Action::Acquire(acquire::Action::Wait { poll: false }));
    // My node written to: listed again; meanwhile node 1's watch fires,
    // its event left for the wait.
    let list = machine.step(crate::contender::Input::Acquire(Input::Event(Event::Own(
        NodeEvent::DataChanged,
    ))));
    let Next::Send(mut listed) = run.next(&mut machine, &wire, list, 0, 0).next else {
        panic!("a listing");
    };
    answer_all(&mut listed, &listing);
    let again = run.exchanged(&mut machine, &mut wire, &listed, Vec::new(), once, || None);
    assert!(run.arrivals().has_watched(), "node 1's event waits for the wait");
    let Action::Acquire(acquire::Action::SetWatches { kept, .. }) = again else {
        panic!("the watches set again, got {again:?}");
    };
    assert_eq!(
        kept,
        [tagged(2)],
        "the watch that fired as the listing was under way is set again; the one still set is kept"
    );
}

#[test]
fn the_contender_settles_on_the_wire_it_is_given_which_learns_the_directorys_acl_version() {
    // Recycling the directory sends the version its ACL read found: the
    // wire learns it as the read is settled through the contender's own
    // stepping.
    let mut wire = wire();
    let mut machine = machine();
    let mut read = wire.exchange(&Action::ReadDirAcl, &machine).expect("a read");
    read.answer(
        0,
        Ok(Reply::Acl {
            version: 4,
            children: 0,
        }),
    );
    let _ = Stepping::settle(&mut machine, &mut wire, &read);
    let recycle = wire.exchange(&Action::Recycle, &machine).expect("an exchange");
    assert_eq!(
        recycle.requests(),
        [crate::wire::Request::Recreate {
            path: DIR.to_owned(),
            version: 4
        }]
    );
}
