use super::*;
use crate::acquire::{self, Event, Input, NodeEvent};
use crate::contender::{child_path, Action};
use crate::wire::tests::{lock_watches, semaphore_watches, waiting, DIR};
use crate::wire::Now;

use SessionState::{Connected, Expired};
use WatchedKind::{Created, DataChanged, Deleted};

/// A carrier's watch in these tests: its name, and what it gives when asked.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Handle {
    name: &'static str,
    fires: Fired,
}

fn handle(name: &'static str) -> Handle {
    Handle { name, fires: None }
}

fn fired(handle: &mut Handle) -> Fired {
    handle.fires
}

fn path(n: u32) -> String {
    child_path(DIR, &format!("h-W-{n:010}"))
}

fn kept(kind: Watch, path: String, lingers: bool, watch: Handle) -> Kept<Handle> {
    Kept {
        kind,
        path,
        lingers,
        watch,
    }
}

/// Every kind of watch of a wait: my node's, the marker's, and the watched
/// nodes 2 (lingering) and 1.
fn all() -> Watches<Handle> {
    let mut watches = Watches::default();
    watches.keep([
        kept(
            Watch::Own,
            child_path(DIR, "h-W-0000000003"),
            false,
            handle("own"),
        ),
        kept(Watch::Marker, path(2) + "-released", false, handle("marker")),
        kept(Watch::Watched, path(2), true, handle("two")),
        kept(Watch::Watched, path(1), false, handle("one")),
        kept(Watch::Held, path(3), false, handle("held")),
    ]);
    watches
}

#[test]
fn an_answer_leaves_its_watches_to_the_acquire_but_a_guards() {
    let mut watches = all();
    assert!(watches.watching());
    assert_eq!(watches.pending_watched(), ["h-W-0000000002", "h-W-0000000001"]);
    assert_eq!(watches.take_own().map(|h| h.name), Some("own"));
    assert_eq!(watches.take_own(), None, "taken once");
    let names: Vec<_> = watches
        .drain()
        .into_iter()
        .map(|w| (w.kind, w.watch.name))
        .collect();
    assert_eq!(
        names,
        [
            (Watch::Marker, "marker"),
            (Watch::Watched, "two"),
            (Watch::Watched, "one")
        ],
        "a guard's watch is its keeper's, not here"
    );
    assert_eq!(watches, Watches::default(), "drained");
}

#[test]
fn an_exchange_drops_the_watches_it_sets_anew_but_those_it_keeps() {
    let (wire, machine, _) = waiting();
    // A lock's wait sets every kind anew: all go, the watched nodes' to be let go of.
    let exchange = wire.exchange(&lock_watches(), &machine).expect("watches");
    let mut watches = all();
    let gone: Vec<_> = watches
        .replace(&exchange)
        .into_iter()
        .map(|w| (w.watch.name, w.lingers))
        .collect();
    assert_eq!(
        gone,
        [("own", false), ("marker", false), ("two", true), ("one", false)]
    );
    assert_eq!(watches, Watches::default());
    // A semaphore's keeps the watched nodes' it does not ask for again, and my node's and the marker's.
    let exchange = wire.exchange(&semaphore_watches(), &machine).expect("watches");
    let mut watches = all();
    let gone: Vec<_> = watches
        .replace(&exchange)
        .into_iter()
        .map(|w| w.watch.name)
        .collect();
    assert_eq!(gone, ["one"]);
    assert_eq!(watches.pending_watched(), ["h-W-0000000002"]);
    assert_eq!(
        watches.take_own().map(|h| h.name),
        Some("own"),
        "not set anew: kept"
    );
    // A listing sets none: nothing goes.
    let list = wire
        .exchange(&Action::Acquire(acquire::Action::List), &machine)
        .expect("a listing");
    let mut watches = all();
    assert!(watches.replace(&list).is_empty());
    assert_eq!(watches, all());
}

#[test]
fn a_fired_watch_tells_arrivals_once_and_a_waiting_source_is_not_asked_again() {
    let mut watches = all();
    let mut arrivals = Arrivals::default();
    watches.collect(&mut arrivals, true, fired);
    assert!(arrivals.is_empty(), "none fired");
    assert_eq!(watches, all());
    // All fire: each tells arrivals, and is taken out.
    let fire = |handle: &mut Handle| {
        handle.fires = Some((if handle.name == "marker" { Created } else { Deleted }, Connected));
    };
    let mut firing = all();
    for watching in firing.own.iter_mut().chain(firing.marker.iter_mut()) {
        fire(&mut watching.watch);
    }
    firing.watched.iter_mut().for_each(|w| fire(&mut w.watch));
    firing.collect(&mut arrivals, true, fired);
    assert_eq!(firing, Watches::default(), "a fired watch is not asked again");
    assert!(arrivals.has_own() && arrivals.has_marker() && arrivals.has_watched());
    let first = arrivals.next(Now::quiet(Connected)).map(|taken| taken.input);
    assert_eq!(first, Some(Input::Event(Event::Own(NodeEvent::Deleted))));
    // My node's event waits in arrivals: its next watch is not asked until it is taken.
    let mut asked = Vec::new();
    let mut again = all();
    again.own.iter_mut().for_each(|own| fire(&mut own.watch));
    again.watched[0].watch.fires = Some((DataChanged, Expired));
    arrivals.marker(Created);
    arrivals.own(Deleted, Connected);
    again.collect(&mut arrivals, true, |handle: &mut Handle| {
        asked.push(handle.name);
        handle.fires
    });
    assert_eq!(
        asked,
        ["two", "one"],
        "my node's and the marker's events wait: not asked"
    );
    assert_eq!(again.take_own().map(|h| h.name), Some("own"), "kept until asked");
    assert_eq!(
        again.pending_watched(),
        ["h-W-0000000001"],
        "the fired one is out"
    );
}

#[test]
fn a_dropped_marker_watch_is_gone() {
    let mut watches = all();
    assert_eq!(watches.drop_marker().map(|w| w.watch.name), Some("marker"));
    assert_eq!(watches.drop_marker(), None);
    let mut asked = Vec::new();
    watches.collect(&mut Arrivals::default(), true, |handle: &mut Handle| {
        asked.push(handle.name);
        None
    });
    assert_eq!(asked, ["own", "two", "one"]);
}

#[test]
fn a_lock_keeps_one_lingering_watch_per_node_and_sweeps_the_fired_ones() {
    let mut lingering = Lingering::default();
    let watching = |name: &'static str, n: u32, lingers: bool| Watching {
        kind: Watch::Watched,
        path: path(n),
        lingers,
        watch: handle(name),
    };
    let pending = |handle: &mut Handle| handle.fires.is_some();
    lingering.let_go(watching("not lingering", 2, false), pending);
    assert!(lingering.is_empty(), "one that does not linger is dropped");
    lingering.let_go(watching("first", 2, true), pending);
    lingering.let_go(watching("second", 2, true), pending);
    lingering.let_go(watching("other", 1, true), pending);
    assert_eq!(lingering.len(), 2, "one per node");
    assert!(!lingering.is_empty());
    assert_eq!(
        lingering.0.get(&path(2)).map(|h| h.name),
        Some("first"),
        "the first stays"
    );
    // Once the node's watch fired, it is swept out and the next one stays.
    let swept = |handle: &mut Handle| handle.name == "first";
    lingering.let_go(watching("third", 2, true), swept);
    assert_eq!(lingering.0.get(&path(2)).map(|h| h.name), Some("third"));
    assert_eq!(lingering.len(), 2);
}

#[test]
fn the_listings_watch_is_asked_only_while_the_machine_listens_to_it() {
    let mut watches = Watches::default();
    let fires = Handle {
        name: "listing",
        fires: Some((WatchedKind::ChildrenChanged, Connected)),
    };
    watches.keep([kept(Watch::Listing, DIR.to_owned(), true, fires)]);
    let mut arrivals = Arrivals::default();
    let mut asked = Vec::new();
    watches.collect(&mut arrivals, false, |handle: &mut Handle| {
        asked.push(handle.name);
        handle.fires
    });
    assert!(
        asked.is_empty() && arrivals.is_empty(),
        "not asked: it wakes nothing"
    );
    watches.collect(&mut arrivals, true, |handle: &mut Handle| {
        asked.push(handle.name);
        handle.fires
    });
    assert_eq!(asked, ["listing"]);
    assert!(arrivals.has_listing());
    // Taken out once it gave its event; the next listing's replaces it.
    assert!(watches.drain().is_empty());
}
