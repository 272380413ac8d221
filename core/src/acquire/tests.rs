//! Event sequences and the actions they lead to. A case starts with the
//! listing its node was created into (`[X]` marks mine; see
//! `ordering`'s table for the row syntax), then alternates an input and
//! the expected action:
//!
//! - inputs: `listed ROW`, `listed nonode`, `set OWN WATCHED` (each `ok`,
//!   `nonode`, `noauth`, `retry`, `failed`, or `-` for an own watch not
//!   asked), `deleted`, `data`, `other`, `own-deleted`, `own-data`,
//!   `interrupted`, `ended` (events during a wait), `~own-deleted`,
//!   `~own-data`, `~interrupted`, `~ended` (events recorded while a
//!   request is in flight, followed by the next input on the same line
//!   after `;`), `rewatched R`, `record named|other OWN`, `checked
//!   yes|no|retry`, `deadline`;
//! - actions: `list`, `watch N` / `watch+own N` (the child at position
//!   N), `wait`, `poll`, `rewatch`, `read`, `check`, `grant`, `grant
//!   mark`, `give up`, `fail lost|ended|exhausted|request`.
use super::*;

/// `ordering`'s rows, with each contender's host named by its sequence,
/// so that my name is the same in every listing of a case.
fn build(row: &str) -> (Vec<String>, Option<String>) {
    crate::ordering::tests::build_named(row, |_, seq| format!("h{seq}"))
}

fn reply(word: &str) -> Reply<()> {
    match word {
        "ok" => Reply::Ok(()),
        "nonode" => Reply::NoNode,
        "noauth" => Reply::NoAuth,
        "retry" => Reply::Retry,
        "failed" => Reply::Failed,
        other => panic!("bad reply {other}"),
    }
}

fn show(action: &Action, names: &[String]) -> String {
    let pos = |watched: &str| names.iter().position(|n| n == watched).unwrap();
    match action {
        Action::List => "list".into(),
        Action::SetWatches {
            blind,
            own,
            watched,
            marker,
            also,
            lingers,
            kept,
            together: _,
        } => {
            if let Some(marker) = marker {
                assert_eq!(*marker, crate::node_name::release_marker(watched));
            }
            let list = |nodes: &[String]| {
                nodes
                    .iter()
                    .map(|a| pos(a).to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            format!(
                "{}watch{}{}{} {}{}{}",
                if *lingers { "x" } else { "" },
                if *own { "+own" } else { "" },
                if marker.is_some() { "+marker" } else { "" },
                if *blind { "+blind" } else { "" },
                pos(watched),
                if also.is_empty() {
                    String::new()
                } else {
                    format!(" also {}", list(also))
                },
                if kept.is_empty() {
                    String::new()
                } else {
                    format!(" kept {}", list(kept))
                }
            )
        }
        Action::Wait { poll: false } => "wait".into(),
        Action::Wait { poll: true } => "poll".into(),
        Action::Rewatch { .. } => "rewatch".into(),
        Action::ReadWatched { watched } => format!("read {}", pos(watched)),
        Action::ReadRecord { .. } => "read".into(),
        Action::CheckOwn => "check".into(),
        Action::Grant { mark: false } => "grant".into(),
        Action::Grant { mark: true } => "grant mark".into(),
        Action::GiveUp => "give up".into(),
        Action::Fail(Failure::Lost) => "fail lost".into(),
        Action::Fail(Failure::SessionEnded) => "fail ended".into(),
        Action::Fail(Failure::Exhausted) => "fail exhausted".into(),
        Action::Fail(Failure::InvalidName) => "fail name".into(),
        Action::Fail(Failure::Request) => "fail request".into(),
        Action::Fail(Failure::WriterLost) => "fail writer lost".into(),
        Action::Fail(Failure::ListingTooLarge) => "fail listing too large".into(),
        Action::Fail(Failure::PermitsDisagree) => "fail permits disagree".into(),
        Action::Replace { successor, .. } => match successor {
            Some(successor) => format!("replace check {}", pos(successor)),
            None => "replace".into(),
        },
    }
}

fn event(word: &str) -> Event {
    match word {
        "deleted" => Event::Watched(NodeEvent::Deleted),
        "data" => Event::Watched(NodeEvent::DataChanged),
        "other" => Event::Watched(NodeEvent::Other),
        "watch-failed" => Event::Watched(NodeEvent::Failed),
        "own-deleted" => Event::Own(NodeEvent::Deleted),
        "own-data" => Event::Own(NodeEvent::DataChanged),
        "interrupted" => Event::Interrupted,
        "released" => Event::Released,
        "ended" => Event::SessionEnded,
        "listing" => Event::Listing(NodeEvent::Other),
        "listing-ended" => Event::Listing(NodeEvent::SessionEnded),
        other => panic!("bad event {other}"),
    }
}

/// Runs one case; returns the machine's counts at the end.
fn run(may_wait: bool, created: &str, steps: &[(&str, &str)]) -> Counts {
    run_with(None, may_wait, created, steps)
}

/// [`run`], for a semaphore's acquire with `permits` permits.
fn run_with(permits: Option<u32>, may_wait: bool, created: &str, steps: &[(&str, &str)]) -> Counts {
    // A semaphore's contenders carry its count.
    let build = |row: &str| match permits {
        Some(n) => crate::ordering::tests::build_named(row, |_, seq| format!("h{seq}@permits-{n}@t{seq}")),
        None => build(row),
    };
    let (first, me) = build(created);
    let me = me.expect("a row with [me]");
    let mode = me.parse::<crate::NodeName>().expect("my name parses").mode();
    let mut machine = Acquire::new(mode, may_wait).with_permits(permits);
    let (open, rest) = steps.split_first().expect("a first action");
    assert_eq!(open.0, "created", "{created}: the first step is `created`");
    let mut names = first.clone();
    let got = machine.created(&me, Some(&first));
    assert_eq!(show(&got, &names), open.1, "{created}: after creation");
    for (input, want) in rest {
        let mut line = *input;
        while let Some((pumped, next)) = line.split_once(';') {
            machine.event(event(pumped.trim().trim_start_matches('~')));
            line = next.trim();
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let listing;
        let got = match words.as_slice() {
            ["listed", "nonode"] => machine.step(Input::Listed(Reply::NoNode)),
            ["listed", row @ ..] => {
                listing = build(&row.join(" ")).0;
                names = listing.clone();
                machine.step(Input::Listed(Reply::Ok(&listing)))
            }
            // A semaphore's: the answers of the other watched nodes' `exists`.
            ["set", own, watched, "also", others @ ..] => machine.step(Input::WatchesSet {
                blind: false,
                also: others.iter().map(|r| reply(r)).collect(),
                own: (*own != "-").then(|| reply(own)),
                watched: reply(watched),
                marker: None,
            }),
            ["set", own, watched] => machine.step(Input::WatchesSet {
                blind: false,
                also: Vec::new(),
                own: (*own != "-").then(|| reply(own)),
                watched: reply(watched),
                marker: None,
            }),
            // The marker's answer: "absent", "exists", or a reply word.
            ["set", own, watched, marker] => machine.step(Input::WatchesSet {
                blind: false,
                also: Vec::new(),
                own: (*own != "-").then(|| reply(own)),
                watched: reply(watched),
                marker: Some(match *marker {
                    "absent" => Reply::Ok(false),
                    "exists" => Reply::Ok(true),
                    other => match reply(other) {
                        Reply::Ok(()) => Reply::Ok(false),
                        Reply::NoNode => Reply::NoNode,
                        Reply::NoAuth => Reply::NoAuth,
                        Reply::Retry => Reply::Retry,
                        Reply::Failed => Reply::Failed,
                    },
                }),
            }),
            ["rewatched", r] => machine.step(Input::Rewatched(reply(r))),
            ["watched-read", r] => machine.step(Input::WatchedRead(reply(r))),
            // The watched node's watch went in my node's `SetWatches`.
            ["set-blind", own, watched, rest @ ..] => machine.step(Input::WatchesSet {
                blind: true,
                also: Vec::new(),
                own: Some(reply(own)),
                watched: reply(watched),
                marker: match rest {
                    ["absent"] => Some(Reply::Ok(false)),
                    ["exists"] => Some(Reply::Ok(true)),
                    _ => None,
                },
            }),
            ["record", named, own] => machine.step(Input::RecordRead(Reply::Ok(Record {
                names_watched: *named == "named",
                own: reply(own),
            }))),
            ["record", r] => machine.step(Input::RecordRead(match reply(r) {
                Reply::Retry => Reply::Retry,
                _ => Reply::Failed,
            })),
            ["checked", "yes"] => machine.step(Input::OwnChecked(Reply::Ok(true))),
            ["checked", "no"] => machine.step(Input::OwnChecked(Reply::Ok(false))),
            ["checked", r] => machine.step(Input::OwnChecked(match reply(r) {
                Reply::Retry => Reply::Retry,
                Reply::NoNode => Reply::NoNode,
                _ => Reply::Failed,
            })),
            ["deadline"] => machine.step(Input::Deadline),
            [word] => machine.step(Input::Event(event(word))),
            _ => panic!("bad input {input}"),
        };
        assert_eq!(
            show(&got, &names),
            *want,
            "{created}: after `{input}` in {steps:?}"
        );
    }
    machine.counts()
}

type Steps = &'static [(&'static str, &'static str)];

/// Cases of the release marker: behind a native writer that others
/// precede, a waiter watches the writer's marker too; its creation, seen
/// before the deletion, grants with no read.
const MARKER_CASES: &[(&str, Steps)] = &[
    // The marker's creation, then the deletion: granted, no read.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok absent", "wait"),
            ("released", "wait"),
            ("deleted", "grant mark"),
        ],
    ),
    // A reader behind two writers: the same.
    (
        "W W [R]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok absent", "wait"),
            ("released", "wait"),
            ("deleted", "grant"),
        ],
    ),
    // The marker's event arrived while the watches were being set.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("released; set ok ok absent", "wait"),
            ("deleted", "grant mark"),
        ],
    ),
    // ... or the node was gone by the time it was watched.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("released; set ok nonode absent", "grant mark"),
        ],
    ),
    // Gone with no marker seen: listing again, as ever.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok nonode absent", "list"),
        ],
    ),
    // A deletion with no marker (a waiter that gave up, an expired
    // session): the record decides.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok absent", "wait"),
            ("deleted", "read"),
            ("record other ok", "list"),
        ],
    ),
    // A marker that existed when watched is a stranger's: no signal.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok exists", "wait"),
            ("released", "wait"),
            ("deleted", "read"),
        ],
    ),
    // Nor is a marker whose watch the server refused.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok retry", "wait"),
            ("released", "wait"),
            ("deleted", "read"),
        ],
    ),
    // A marker seen after a reconnection: my node is checked first.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok absent", "wait"),
            ("interrupted", "wait"),
            ("released", "wait"),
            ("deleted", "check"),
            ("checked yes", "grant mark"),
        ],
    ),
    // My node's watch fired meanwhile: listing again.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok absent", "wait"),
            ("released", "wait"),
            ("own-data", "list"),
        ],
    ),
    // A data change on the watched node keeps the marker's watch.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok absent", "wait"),
            ("data", "rewatch"),
            ("released; rewatched nonode", "grant mark"),
        ],
    ),
    // A marker event of an earlier wait does not count in the next.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok absent", "wait"),
            ("other", "list"),
            ("released; listed W@0 W@1 [W@2]", "watch+marker 1"),
            ("set - ok absent", "wait"),
            ("deleted", "read"),
        ],
    ),
    // The only node before me: its deletion grants alone; no marker.
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("deleted", "grant mark"),
        ],
    ),
];

#[test]
fn the_release_marker() {
    for (created, steps) in MARKER_CASES {
        run(true, created, steps);
    }
    let counts = run(true, MARKER_CASES[0].0, MARKER_CASES[0].1);
    assert!(counts.handoff && counts.marked);
    let counts = run(true, MARKER_CASES[5].0, MARKER_CASES[5].1);
    assert!(!counts.marked);
    // Markers not trusted: never watched, the record decides.
    let (names, me) = build("W W [W]");
    let mut machine = Acquire::new(Mode::Write, true).with_release_markers(false);
    assert_eq!(
        show(&machine.created(&me.unwrap(), Some(&names)), &names),
        "watch+own 1"
    );
    machine.step(Input::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::Ok(()),
        marker: None,
    });
    machine.event(Event::Released);
    assert_eq!(
        show(&machine.step(Input::Event(event("deleted"))), &names),
        "read"
    );
}

/// A writer behind two writers whose watches were answered, the marker's
/// with `marker` (`Ok(false)`: absent, its watch set).
fn waiting_on_a_marker(marker: Reply<bool>) -> Acquire {
    let (names, me) = build("W W [W]");
    let mut machine = Acquire::new(Mode::Write, true);
    machine.created(&me.unwrap(), Some(&names));
    assert!(machine.marker_watch_needed(), "asked for");
    machine.step(Input::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::Ok(()),
        marker: Some(marker),
    });
    machine
}

#[test]
fn the_marker_watch_is_needed_only_while_its_wait_lasts() {
    let names = build("W W [W]").0;
    let mut machine = waiting_on_a_marker(Reply::Ok(false));
    assert!(machine.marker_watch_needed(), "set, the wait goes on");
    // The deletion with no marker: the record is read, the watch dropped.
    assert_eq!(
        show(&machine.step(Input::Event(event("deleted"))), &names),
        "read"
    );
    assert!(!machine.marker_watch_needed(), "the wait on that node is over");

    // Fired: not needed any more.
    let mut machine = waiting_on_a_marker(Reply::Ok(false));
    machine.step(Input::Event(Event::Released));
    assert!(!machine.marker_watch_needed(), "its event came");

    // A stranger's marker: dropped at once.
    let machine = waiting_on_a_marker(Reply::Ok(true));
    assert!(!machine.marker_watch_needed());

    // The deadline: the wait is over.
    let mut machine = waiting_on_a_marker(Reply::Ok(false));
    machine.step(Input::Deadline);
    assert!(!machine.marker_watch_needed());
}

/// Cases of an acquire that may wait.
const CASES: &[(&str, Steps)] = &[
    // Granted at once: no watch, no mark.
    ("[W]", &[("created", "grant")]),
    ("R [R]", &[("created", "grant")]),
    // A writer behind the head: its deletion alone grants (hand-off).
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("deleted", "grant mark"),
        ],
    ),
    // ... unless my node is gone or changed meanwhile.
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("own-deleted", "fail lost"),
        ],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("own-data", "list"),
            // Written to: `getData` reads it, apart.
            ("listed W@0 [W@1]", "watch+own 0"),
        ],
    ),
    // My node's watch fired before the answers were fed: it stays fired,
    // so no hand-off trusts it.
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("~own-data; set ok nonode", "list"),
        ],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("~own-data; set ok ok", "wait"),
            ("deleted", "list"),
        ],
    ),
    // Own node deleted while the watches were being set: lost.
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("~own-deleted; set ok ok", "fail lost"),
        ],
    ),
    (
        "W [W]",
        &[("created", "watch+own+blind 0"), ("set nonode ok", "fail lost")],
    ),
    // An interruption makes a hand-off ask first.
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("interrupted", "wait"),
            ("deleted", "check"),
            ("checked yes", "grant mark"),
        ],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("interrupted", "wait"),
            ("deleted", "check"),
            ("checked no", "list"),
        ],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("~interrupted; set ok ok", "wait"),
            ("deleted", "check"),
        ],
    ),
    // An own-node event recorded during a request blocks the hand-off.
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("deleted", "grant mark"),
        ],
    ),
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("deleted", "read"),
            ("~own-data; record named ok", "list"),
        ],
    ),
    // The watched node already gone when the watch is set.
    (
        "W [W]",
        &[("created", "watch+own+blind 0"), ("set ok nonode", "grant mark")],
    ),
    (
        "W W [W]",
        &[("created", "watch+own+marker 1"), ("set ok nonode", "list")],
    ),
    // Release record: a writer behind a waiting writer.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("deleted", "read"),
            ("record named ok", "grant mark"),
        ],
    ),
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("deleted", "read"),
            ("record other ok", "list"),
        ],
    ),
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("deleted", "read"),
            ("record named nonode", "list"),
        ],
    ),
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("deleted", "read"),
            ("record retry", "list"),
        ],
    ),
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("deleted", "read"),
            ("record failed", "list"),
        ],
    ),
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("interrupted", "wait"),
            ("deleted", "read"),
            ("record named ok", "check"),
            ("checked yes", "grant mark"),
        ],
    ),
    // A stray data change grants nothing: watch again.
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("data", "rewatch"),
            ("rewatched ok", "wait"),
            ("deleted", "grant mark"),
        ],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("data", "rewatch"),
            ("rewatched nonode", "grant mark"),
        ],
    ),
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("data", "rewatch"),
            ("rewatched nonode", "read"),
        ],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("data", "rewatch"),
            ("rewatched noauth", "poll"),
            ("deleted", "grant mark"),
        ],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("data", "rewatch"),
            ("rewatched retry", "list"),
        ],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("data", "rewatch"),
            ("rewatched failed", "fail request"),
        ],
    ),
    // No hand-off possible: a reader-predecessor of a writer.
    (
        "R W R [W]",
        &[
            ("created", "watch 2"),
            ("set - ok", "wait"),
            ("deleted", "list"),
            ("listed R@0 W@1 [W@3]", "watch+own+marker 1"),
        ],
    ),
    // Readers: the only writer before me.
    (
        "W R [R]",
        &[
            ("created", "watch+own 0"),
            ("set ok ok", "wait"),
            ("deleted", "grant"),
        ],
    ),
    (
        "W W [R]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("deleted", "read"),
            ("record named ok", "grant"),
        ],
    ),
    // Unreadable nodes: poll the watched one; ask about my own one.
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok noauth", "poll"),
            ("deleted", "grant mark"),
        ],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set noauth ok", "wait"),
            ("deleted", "check"),
            ("checked yes", "grant mark"),
        ],
    ),
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set noauth ok", "wait"),
            ("deleted", "read"),
            ("record named noauth", "check"),
        ],
    ),
    // Retryable errors while setting watches: list again.
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set retry ok", "list"),
            ("listed [W@1]", "grant mark"),
        ],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok retry", "list"),
            ("listed W@0 [W@1]", "watch 0"),
        ],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set failed ok", "fail request"),
        ],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok failed", "fail request"),
        ],
    ),
    // The session ends: during a wait, or noticed between requests.
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("ended", "fail ended"),
        ],
    ),
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("deleted", "read"),
            ("~ended; record named ok", "fail ended"),
        ],
    ),
    // A watch that fails for good fails the acquire.
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok noauth", "poll"),
            ("watch-failed", "fail request"),
        ],
    ),
    // Other watch events: list again.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("other", "list"),
            ("listed W@1 [W@2]", "watch 0"),
        ],
    ),
    // Missing from a listing: lost; the counter's limit: withdraw.
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("other", "list"),
            ("listed W@0 W@1", "fail lost"),
        ],
    ),
    ("[W@2147483647]", &[("created", "fail exhausted")]),
    ("W@5 [R@5]", &[("created", "fail exhausted")]),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("other", "list"),
            ("listed nonode", "fail lost"),
        ],
    ),
    // The deadline, at any step.
    (
        "W [W]",
        &[("created", "watch+own+blind 0"), ("deadline", "give up")],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("deadline", "give up"),
        ],
    ),
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("deleted", "read"),
            ("deadline", "give up"),
        ],
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("interrupted", "wait"),
            ("deleted", "check"),
            ("deadline", "give up"),
        ],
    ),
    // Answers to questions not asked are driver errors.
    (
        "W [W]",
        &[("created", "watch+own+blind 0"), ("checked yes", "fail request")],
    ),
];

#[test]
fn event_sequences() {
    for (created, steps) in CASES {
        run(true, created, steps);
    }
}

#[test]
fn try_gives_up_at_the_first_wait() {
    run(false, "W [W]", &[("created", "give up")]);
    run(false, "R R [R]", &[("created", "grant")]);
    run(false, "W [R]", &[("created", "give up")]);
}

#[test]
fn peer_layout_writers_never_mark() {
    // Behind a peer's writer: its deletion, unless it grants alone,
    // means a new listing; and a peer-layout writer releases unmarked.
    run(
        true,
        "cW kW [cW]",
        &[
            ("created", "watch 1"),
            ("set - ok", "wait"),
            ("deleted", "list"),
            ("listed cW@0 [cW@2]", "watch 0"),
            ("set - ok", "wait"),
            ("deleted", "list"),
            ("listed [cW@2]", "grant"),
        ],
    );
    run(
        true,
        "W [kW]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("deleted", "grant"),
        ],
    );
    run(
        true,
        "m [m]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok retry", "list"),
            ("listed [m@1]", "grant"),
        ],
    );
    // A native writer still marks behind a peer.
    run(
        true,
        "kW [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("deleted", "grant mark"),
        ],
    );
}

#[test]
fn a_writer_granted_at_once_does_not_mark_but_one_granted_after_a_listing_does() {
    run(
        true,
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok retry", "list"),
            ("listed [W@1]", "grant mark"),
        ],
    );
    run(
        true,
        "R [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("deleted", "grant mark"),
        ],
    );
    run(
        true,
        "W [R]",
        &[
            ("created", "watch+own 0"),
            ("set ok ok", "wait"),
            ("deleted", "grant"),
        ],
    );
}

#[test]
fn counts() {
    let hand_off = run(
        true,
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("deleted", "grant mark"),
        ],
    );
    assert_eq!(
        hand_off,
        Counts {
            listings: 1,
            wakeups: 1,
            retries: 0,
            handoff: true,
            marked: false,
        }
    );
    let listed = run(
        true,
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok retry", "list"),
            ("listed W@1 [W@2]", "watch 0"),
            ("set - ok", "wait"),
            ("deleted", "grant mark"),
        ],
    );
    assert_eq!(
        listed,
        Counts {
            listings: 2,
            wakeups: 1,
            retries: 1,
            handoff: true,
            marked: false,
        }
    );
    let at_once = run(true, "[W]", &[("created", "grant")]);
    assert!(!at_once.handoff);
}

/// A writer third in the queue, waiting on the second with its own node's
/// watch set.
fn waiting_with_the_own_watch_set() -> Acquire {
    let (names, me) = build("W W [W]");
    let mut machine = Acquire::new(Mode::Write, true);
    let me = me.unwrap();
    assert_eq!(
        show(&machine.created(&me, Some(&names)), &names),
        "watch+own+marker 1"
    );
    machine.step(Input::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::Ok(()),
        marker: None,
    });
    assert!(machine.own_watch_set());
    machine
}

#[test]
fn the_own_watch_is_kept_across_waits() {
    let mut machine = waiting_with_the_own_watch_set();
    machine.step(Input::Event(Event::Watched(NodeEvent::Other)));
    assert!(machine.own_watch_set());
    let (again, _) = build("W@1 [W@2]");
    // Still set: not asked for again.
    assert_eq!(
        show(&machine.step(Input::Listed(Reply::Ok(&again))), &again),
        "watch 0"
    );
    assert!(!machine.is_done());
    // Once it fires, it is not set any more.
    machine.event(Event::Own(NodeEvent::DataChanged));
    assert!(!machine.own_watch_set(), "a fired watch is not set");
}

#[test]
fn an_own_watch_from_an_older_connection_is_set_again_before_a_hand_off_trusts_it() {
    let mut machine = waiting_with_the_own_watch_set();
    // A reconnection: the server may have set my node's watch again
    // silently (READ taken away), so it is asked for on this connection.
    machine.connection_changed();
    assert!(!machine.own_watch_set());
    machine.step(Input::Event(Event::Watched(NodeEvent::Other)));
    let (again, _) = build("W@1 [W@2]");
    assert_eq!(
        show(&machine.step(Input::Listed(Reply::Ok(&again))), &again),
        "watch+own+blind 0"
    );
    // Refused (NoAuth): the hand-off asks with `exists`.
    machine.step(Input::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::NoAuth),
        watched: Reply::Ok(()),
        marker: None,
    });
    assert_eq!(
        show(
            &machine.step(Input::Event(Event::Watched(NodeEvent::Deleted))),
            &again
        ),
        "check"
    );
    assert_eq!(
        show(&machine.step(Input::OwnChecked(Reply::Ok(false))), &again),
        "list"
    );
}

#[test]
fn foreign_children_are_noted() {
    let (names, me) = build("x W [W]");
    let mut machine = Acquire::new(Mode::Write, true);
    machine.created(&me.unwrap(), Some(&names));
    assert!(machine.saw_foreign());
    let (names, me) = build("W [W]");
    let mut machine = Acquire::new(Mode::Write, true);
    machine.created(&me.unwrap(), Some(&names));
    assert!(!machine.saw_foreign());
}

#[test]
fn done_after_an_end_and_not_before() {
    let (names, me) = build("W [W]");
    let mut machine = Acquire::new(Mode::Write, true);
    machine.created(&me.unwrap(), Some(&names));
    assert!(!machine.is_done());
    machine.step(Input::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::Ok(()),
        marker: None,
    });
    assert!(!machine.is_done());
    assert_eq!(machine.step(Input::Deadline), Action::GiveUp);
    assert!(machine.is_done());
    // An ended machine answers nothing but failure.
    assert_eq!(machine.step(Input::Deadline), Action::Fail(Failure::Request));
}

/// `(listings, wakeups, retries, handoff)`.
type Expected = (u32, u32, u32, bool);

/// Cases and their counts at the end.
const COUNTED: &[(&str, Steps, Expected)] = &[
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set retry ok", "list"),
            ("listed [W@1]", "grant mark"),
        ],
        (2, 0, 1, false),
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("data", "rewatch"),
            ("rewatched retry", "list"),
        ],
        (2, 1, 1, false),
    ),
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("deleted", "read"),
            ("record retry", "list"),
        ],
        (2, 1, 1, false),
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("interrupted", "wait"),
            ("deleted", "check"),
            ("checked retry", "list"),
        ],
        (2, 1, 1, false),
    ),
    (
        "W W [W]",
        &[
            ("created", "watch+own+marker 1"),
            ("set ok ok", "wait"),
            ("other", "list"),
            ("listed W@1 [W@2]", "watch 0"),
            ("set - ok", "wait"),
            ("data", "rewatch"),
            ("rewatched ok", "wait"),
            ("deleted", "grant mark"),
        ],
        (2, 3, 0, true),
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("own-data", "list"),
            ("listed [W@1]", "grant mark"),
        ],
        (2, 1, 0, false),
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("own-deleted", "fail lost"),
        ],
        (1, 0, 0, false),
    ),
    (
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("interrupted", "wait"),
            ("deadline", "give up"),
        ],
        (1, 0, 0, false),
    ),
];

#[test]
fn counts_of_each_path() {
    for (created, steps, (listings, wakeups, retries, handoff)) in COUNTED {
        let counts = run(true, created, steps);
        assert_eq!(
            counts,
            Counts {
                listings: *listings,
                wakeups: *wakeups,
                retries: *retries,
                handoff: *handoff,
                marked: counts.marked,
            },
            "{created}: {steps:?}"
        );
    }
}

/// A downgrade's reader (`replacing`): a reader right after the writer
/// replaces it (checking that reader, unless it is mine); a writer right
/// after it keeps it; the writer missing keeps it; my node missing is lost.
#[test]
fn a_downgrades_reader_decides_once() {
    let writer = "h-W-0000000001".to_owned();
    let me = "h-R-0000000009".to_owned();
    let cases: &[(&[&str], &str)] = &[
        (&["h-W-0000000001", "h-R-0000000009"], "replace"),
        (&["h-R-0000000009", "h-W-0000000001"], "replace"),
        (
            &[
                "h-W-0000000001",
                "b-R-0000000003",
                "c-W-0000000005",
                "h-R-0000000009",
            ],
            "replace check 1",
        ),
        (
            &[
                "h-W-0000000001",
                "c-W-0000000005",
                "b-R-0000000003",
                "h-R-0000000009",
            ],
            "replace check 2",
        ),
        (
            &[
                "h-W-0000000001",
                "c-W-0000000002",
                "b-R-0000000003",
                "h-R-0000000009",
            ],
            "give up",
        ),
        (
            &["h-W-0000000001", "_c_0-__WRIT__0000000002", "h-R-0000000009"],
            "give up",
        ),
        (
            &["h-W-0000000001", "_c_0-__READ__0000000002", "h-R-0000000009"],
            "replace check 1",
        ),
        // A node at the counter's limit comes after every valid one.
        (&["h-W-0000000001", "c-W-2147483647", "h-R-0000000009"], "replace"),
        (&["h-R-0000000009"], "fail writer lost"),
        (&["h-W-0000000001"], "fail lost"),
    ];
    for (listing, want) in cases {
        let names: Vec<String> = listing.iter().map(|n| (*n).to_owned()).collect();
        let mut a = Acquire::new(Mode::Read, true).replacing(&writer);
        let action = a.created(&me, Some(&names));
        assert_eq!(show(&action, &names), *want, "{listing:?}");
        if let Action::Replace { writer: w, .. } = &action {
            assert_eq!(*w, writer);
            assert_eq!(a.list_again(), Action::List);
            let action = a.step(Input::Listed(Reply::Ok(&names)));
            assert_eq!(show(&action, &names), *want, "{listing:?}, listed again");
        }
    }
    // My node at the limit orders nothing: keep.
    let me = "h-R-2147483647";
    let names = vec![writer.clone(), me.to_owned()];
    let mut a = Acquire::new(Mode::Read, true).replacing(&writer);
    assert_eq!(a.created(me, Some(&names)), Action::GiveUp);
}

/// A listing over the limit refuses the first wait only: a grant at once,
/// a `try_*` and a waiter's later listings are never refused.
#[test]
fn a_listing_over_the_limit_refuses_the_first_wait_only() {
    let (names, me) = build("W W [W]");
    let me = me.unwrap();
    // A stranger's node counts in the listing's size, not as a contender.
    let with_stranger: Vec<String> = names.iter().cloned().chain(["notes".to_owned()]).collect();
    let size = crate::limits::listing_size(&with_stranger);
    let mut over = Acquire::new(Mode::Write, true).with_listing_limit(Some(size - 1));
    assert_eq!(
        over.created(&me, Some(&with_stranger)),
        Action::Fail(Failure::ListingTooLarge)
    );
    assert_eq!(
        over.refused_listing(),
        Some(RefusedListing {
            children: 4,
            contenders: 3,
            size,
            limit: size - 1
        })
    );
    let size = crate::limits::listing_size(&names);
    assert_eq!(Acquire::new(Mode::Write, true).refused_listing(), None);

    // At the limit: it waits, and a larger listing later (the watched
    // writer gone without a release, more contenders queued) keeps it waiting.
    let mut at = Acquire::new(Mode::Write, true).with_listing_limit(Some(size));
    assert!(matches!(at.created(&me, Some(&names)), Action::SetWatches { .. }));
    assert_eq!(
        at.step(Input::WatchesSet {
            blind: false,
            also: Vec::new(),
            own: Some(Reply::Ok(())),
            watched: Reply::Retry,
            marker: Some(Reply::Ok(false)),
        }),
        Action::List
    );
    let (more, _) = build("W W [W] W W W");
    assert!(matches!(
        at.step(Input::Listed(Reply::Ok(&more))),
        Action::SetWatches { .. }
    ));
    assert_eq!(at.refused_listing(), None);

    // Granted at once whatever the size; a try gives up, as without a limit.
    let (first, me_first) = build("[W] W W");
    let mut head = Acquire::new(Mode::Write, true).with_listing_limit(Some(1));
    assert!(matches!(
        head.created(&me_first.unwrap(), Some(&first)),
        Action::Grant { .. }
    ));
    let mut try_ = Acquire::new(Mode::Write, false).with_listing_limit(Some(1));
    assert_eq!(try_.created(&me, Some(&names)), Action::GiveUp);
}

#[test]
fn a_watch_event_means_the_sessions_end_whatever_its_kind_once_the_state_ends_it() {
    use crate::lease::SessionState::*;
    use WatchedKind::*;
    for (kind, state, want) in [
        (Deleted, Connected, NodeEvent::Deleted),
        (DataChanged, Connected, NodeEvent::DataChanged),
        (Created, Connected, NodeEvent::Other),
        (ChildrenChanged, Connected, NodeEvent::Other),
        (Session, Connected, NodeEvent::Other),
        (Session, Disconnected, NodeEvent::Other),
        (Session, ConnectedReadOnly, NodeEvent::Other),
        // A deletion delivered on reconnection to a read-only server.
        (Deleted, ConnectedReadOnly, NodeEvent::Deleted),
        (Deleted, Expired, NodeEvent::SessionEnded),
        (DataChanged, Closed, NodeEvent::SessionEnded),
        (Session, Expired, NodeEvent::SessionEnded),
        (Session, Closed, NodeEvent::SessionEnded),
        (Session, AuthFailed, NodeEvent::SessionEnded),
    ] {
        assert_eq!(NodeEvent::of(kind, state), want, "{kind:?} {state:?}");
    }
}

#[test]
fn a_session_state_change_interrupts_a_wait_unless_it_ends_the_session() {
    use crate::lease::SessionState::*;
    for (state, want) in [
        (Connected, Event::Interrupted),
        (ConnectedReadOnly, Event::Interrupted),
        (Disconnected, Event::Interrupted),
        (Expired, Event::SessionEnded),
        (Closed, Event::SessionEnded),
        (AuthFailed, Event::SessionEnded),
    ] {
        assert_eq!(Event::of_session(state), want, "{state:?}");
    }
}

#[test]
fn what_arrived_at_once_is_taken_own_marker_session_watched_deadline_and_a_marker_event_other_than_its_creation_means_nothing(
) {
    use crate::lease::SessionState as S;
    use Source::*;
    let all = Arrived {
        listing: None,
        own: Some(NodeEvent::DataChanged),
        marker: Some(WatchedKind::Created),
        session: Some(S::Disconnected),
        watched: Some(NodeEvent::Deleted),
        deadline: true,
    };
    let ev = |event| Some(Input::Event(event));
    for (arrived, want) in [
        (Arrived::default(), vec![]),
        (
            all,
            vec![
                (Own, ev(Event::Own(NodeEvent::DataChanged))),
                (Marker, ev(Event::Released)),
                (Session, ev(Event::Interrupted)),
                (Watched, ev(Event::Watched(NodeEvent::Deleted))),
                (Deadline, Some(Input::Deadline)),
            ],
        ),
        // One transaction's events: the marker's creation before the
        // watched node's deletion.
        (
            Arrived {
                watched: Some(NodeEvent::Deleted),
                marker: Some(WatchedKind::Created),
                ..Arrived::default()
            },
            vec![
                (Marker, ev(Event::Released)),
                (Watched, ev(Event::Watched(NodeEvent::Deleted))),
            ],
        ),
        // A stranger's marker deleted: consumed, and means nothing.
        (
            Arrived {
                marker: Some(WatchedKind::Deleted),
                watched: Some(NodeEvent::Deleted),
                ..Arrived::default()
            },
            vec![(Marker, None), (Watched, ev(Event::Watched(NodeEvent::Deleted)))],
        ),
        (
            Arrived {
                marker: Some(WatchedKind::DataChanged),
                ..Arrived::default()
            },
            vec![(Marker, None)],
        ),
        // The session's end before the watched node's event; the deadline
        // after both.
        (
            Arrived {
                session: Some(S::Expired),
                watched: Some(NodeEvent::SessionEnded),
                deadline: true,
                ..Arrived::default()
            },
            vec![
                (Session, ev(Event::SessionEnded)),
                (Watched, ev(Event::Watched(NodeEvent::SessionEnded))),
                (Deadline, Some(Input::Deadline)),
            ],
        ),
        // My own node's deletion before anything else.
        (
            Arrived {
                own: Some(NodeEvent::Deleted),
                session: Some(S::Connected),
                ..Arrived::default()
            },
            vec![
                (Own, ev(Event::Own(NodeEvent::Deleted))),
                (Session, ev(Event::Interrupted)),
            ],
        ),
        (
            Arrived {
                deadline: true,
                ..Arrived::default()
            },
            vec![(Deadline, Some(Input::Deadline))],
        ),
    ] {
        assert_eq!(arrived.is_empty(), want.is_empty(), "{arrived:?}");
        assert_eq!(arrived.in_order(), want, "{arrived:?}");
    }
}

#[test]
fn the_place_in_the_queue_follows_each_listing_at_no_cost() {
    let names = |row: &[&str]| row.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
    let me = "h-R-0000000004";
    let first = names(&["h-R-0000000001", "h-W-0000000002", "h-R-0000000003", me]);
    let mut followed = Acquire::new(Mode::Read, true).with_place(true);
    let mut plain = Acquire::new(Mode::Read, true);
    let action = followed.created(me, Some(&first));
    assert_eq!(
        plain.created(me, Some(&first)),
        action,
        "following the place changes no action"
    );
    assert!(matches!(action, Action::SetWatches { .. }));
    assert_eq!(plain.place(), None, "not followed: nothing counted");
    assert_eq!(
        followed.place(),
        Some(&Place {
            node: me.to_owned(),
            ahead: 3,
            waits_on: Some("h-W-0000000002".to_owned()),
        })
    );
    // The watched writer goes: its deletion alone grants (no listing).
    followed.step(Input::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::Ok(()),
        marker: None,
    });
    assert_eq!(
        followed.step(Input::Event(Event::Watched(NodeEvent::Deleted))),
        Action::Grant { mark: false }
    );
    assert_eq!(
        followed.place(),
        Some(&Place {
            node: me.to_owned(),
            ahead: 3,
            waits_on: None,
        }),
        "granted: waiting on none; ahead as the last listing counted"
    );
    // A listing that grants behind a reader: one ahead.
    let mut behind = Acquire::new(Mode::Read, true).with_place(true);
    let later = names(&["h-R-0000000003", me, "h-W-0000000009"]);
    assert_eq!(behind.created(me, Some(&later)), Action::Grant { mark: false });
    assert_eq!(
        behind.place().map(|p| (p.ahead, p.waits_on.clone())),
        Some((1, None))
    );
}

#[test]
fn ahead_counts_every_contender_before_mine_in_any_mode() {
    let me = "h-W-0000000005";
    for (children, ahead) in [
        (vec![me], 0),
        (vec!["h-R-0000000001", me], 1),
        (
            vec![
                "h-R-0000000001",
                "h-W-0000000002",
                "x-R-0000000003",
                me,
                "h-R-0000000007",
            ],
            3,
        ),
        (vec!["stranger", "h-W-0000000002", me], 1),
        (vec!["h-W-2147483647", me], 0),
    ] {
        assert_eq!(crate::ordering::ahead(me, &children), ahead, "{children:?}");
    }
    assert_eq!(crate::ordering::ahead("not a contender", &["h-W-0000000001"]), 0);
}

/// A semaphore's wait, with 2 permits unless the case says 1: holds while
/// fewer than N precede it; waits on the N right before it (the
/// immediate predecessor first, the others `also`); no release marker or
/// record, no mark at the grant; any deletion lists again, or grants when
/// exactly N precede; a data change on one of several lists again.
const PERMIT_CASES: &[(u32, &str, Steps)] = &[
    // One ahead of two permits: held at once, released plainly.
    (2, "W [W]", &[("created", "grant")]),
    // Readers count too: every contender takes a permit.
    (2, "R [W]", &[("created", "grant")]),
    // Two ahead: both watched; either deletion grants (exactly N ahead).
    (
        2,
        "W W [W]",
        &[
            ("created", "xwatch+own 1 also 0"),
            ("set ok ok also ok", "wait"),
            ("deleted", "grant"),
        ],
    ),
    // Three ahead: the two nearest watched; a deletion lists again.
    (
        2,
        "W W W [W]",
        &[
            ("created", "xwatch 2 also 1"),
            ("set - ok also ok", "wait"),
            // The nearest went: the next farther one is new to the wait,
            // the other is still watched (kept, not asked again).
            ("deleted", "list"),
            ("listed W@0 W@1 [W@3]", "xwatch+own 1 also 0 kept 1"),
            ("set ok ok also ok", "wait"),
            ("deleted", "grant"),
        ],
    ),
    // The farther watched node found gone while watching: the wait is over.
    (
        2,
        "W W W [W]",
        &[("created", "xwatch 2 also 1"), ("set - ok also nonode", "list")],
    ),
    (
        2,
        "W W [W]",
        &[
            ("created", "xwatch+own 1 also 0"),
            ("set ok ok also nonode", "grant"),
        ],
    ),
    // A data change on one of several: which one is not known, list again.
    (
        2,
        "W W W [W]",
        &[
            ("created", "xwatch 2 also 1"),
            ("set - ok also ok", "wait"),
            ("data", "list"),
        ],
    ),
    // The nearest unreadable: polled, the others watched still.
    (
        2,
        "W W W [W]",
        &[("created", "xwatch 2 also 1"), ("set - noauth also ok", "poll")],
    ),
    // A lost answer of any: list again; a failure fails.
    (
        2,
        "W W W [W]",
        &[("created", "xwatch 2 also 1"), ("set - ok also retry", "list")],
    ),
    (
        2,
        "W W W [W]",
        &[
            ("created", "xwatch 2 also 1"),
            ("set - noauth also failed", "fail request"),
        ],
    ),
    // A gone node wins over a lost answer: the wait is over either way.
    (
        2,
        "W W [W]",
        &[
            ("created", "xwatch+own 1 also 0"),
            ("set ok retry also nonode", "grant"),
        ],
    ),
    // One permit: a mutex, one watch; a data change lists again.
    (
        1,
        "W [W]",
        &[
            ("created", "xwatch+own 0"),
            ("set ok ok", "wait"),
            ("data", "list"),
            // My own node's watch is still set.
            ("listed W@0 [W@1]", "xwatch 0"),
            ("set ok ok", "wait"),
            ("deleted", "grant"),
        ],
    ),
    // My node gone while waiting: lost, as for a lock.
    (
        2,
        "W W [W]",
        &[
            ("created", "xwatch+own 1 also 0"),
            ("set ok ok also ok", "wait"),
            ("own-deleted", "fail lost"),
        ],
    ),
];

#[test]
fn a_semaphores_wait_watches_its_n_predecessors_and_never_marks() {
    for (permits, created, steps) in PERMIT_CASES {
        run_with(Some(*permits), true, created, steps);
    }
}

#[test]
fn a_semaphores_try_gives_up_when_n_precede() {
    run_with(Some(2), false, "W W [W]", &[("created", "give up")]);
    run_with(Some(2), false, "W [W]", &[("created", "grant")]);
}

#[test]
fn a_semaphore_refuses_a_predecessor_with_another_count() {
    let tagged = |n: u32, seq: i32| format!("h{seq}@permits-{n}@t{seq}-W-{seq:010}");
    let children = [tagged(3, 1), tagged(2, 2), tagged(2, 3)];
    let mut machine = Acquire::new(Mode::Write, true).with_permits(Some(2));
    assert_eq!(
        machine.created(&children[2], Some(&children)),
        Action::Fail(Failure::PermitsDisagree)
    );
    assert_eq!(machine.conflict(), Some((children[0].as_str(), 3)));
    // My own name carrying another count than asked: refused too.
    let mut mine = Acquire::new(Mode::Write, true).with_permits(Some(3));
    assert_eq!(
        mine.created(&children[2], Some(&children)),
        Action::Fail(Failure::PermitsDisagree)
    );
    assert_eq!(mine.conflict(), Some((children[2].as_str(), 2)));
    // The same count agrees; untagged predecessors count without a conflict.
    let agreeing = [tagged(2, 1), "bare-W-0000000002".to_owned(), tagged(2, 3)];
    let mut ok = Acquire::new(Mode::Write, true).with_permits(Some(2));
    assert_eq!(
        ok.created(&agreeing[2], Some(&agreeing)),
        Action::SetWatches {
            blind: false,
            kept: Vec::new(),
            lingers: true,
            // The nearest is no permit: its deletion alone grants nothing,
            // so my own node is not watched yet.
            own: false,
            watched: agreeing[1].clone(),
            marker: None,
            also: vec![agreeing[0].clone()],
            together: false,
        }
    );
}

#[test]
fn a_semaphores_place_counts_every_contender_ahead_and_names_the_nearest_watched() {
    let (children, me) = build("W R W [W]");
    let me = me.expect("mine");
    let mut machine = Acquire::new(Mode::Write, true)
        .with_permits(Some(2))
        .with_place(true);
    let _ = machine.created(&me, Some(&children));
    let place = machine.place().expect("placed");
    assert_eq!(place.ahead, 3);
    assert_eq!(place.waits_on.as_deref(), Some(children[2].as_str()));
}

#[test]
fn the_answers_of_several_watches_read_as_one() {
    use Reply::*;
    type Case = (Reply<()>, &'static [Reply<()>], Reply<()>);
    let cases: &[Case] = &[
        (Ok(()), &[], Ok(())),
        (Ok(()), &[Ok(()), Ok(())], Ok(())),
        (Ok(()), &[Ok(()), NoNode], NoNode),
        (NoAuth, &[Ok(())], NoAuth),
        (NoAuth, &[Retry], Retry),
        (Retry, &[Failed], Failed),
        (Failed, &[NoNode], NoNode),
    ];
    for (watched, also, want) in cases {
        assert_eq!(
            &several(watched.clone(), also.to_vec()),
            want,
            "{watched:?} {also:?}"
        );
    }
}

#[test]
fn a_semaphores_wait_polls_every_watched_node_it_may_not_read() {
    let (children, me) =
        crate::ordering::tests::build_named("W W W [W]", |_, seq| format!("h{seq}@permits-3@t{seq}"));
    let me = me.expect("mine");
    let mut machine = Acquire::new(Mode::Write, true).with_permits(Some(3));
    let set = machine.created(&me, Some(&children));
    assert!(matches!(&set, Action::SetWatches { also, lingers: true, .. } if also.len() == 2));
    assert!(machine.polled().is_empty(), "not polling yet");
    let polls = machine.step(Input::WatchesSet {
        blind: false,
        own: Some(Reply::Ok(())),
        watched: Reply::NoAuth,
        marker: None,
        also: vec![Reply::Ok(()), Reply::NoAuth],
    });
    assert_eq!(polls, Action::Wait { poll: true });
    // The nearest and the farthest, each polled until it is gone; the one
    // between is watched.
    assert_eq!(machine.polled(), [children[2].clone(), children[0].clone()]);
    // The first found gone is the deletion: exactly 3 ahead, a permit each.
    assert_eq!(
        machine.step(Input::Event(Event::Watched(NodeEvent::Deleted))),
        Action::Grant { mark: false }
    );
    assert!(machine.polled().is_empty());
    // A lock's wait polls its one watched node, as ever.
    let (lock, mine) = build("W [W]");
    let mut waiter = Acquire::new(Mode::Write, true);
    let _ = waiter.created(&mine.expect("mine"), Some(&lock));
    let _ = waiter.step(Input::WatchesSet {
        blind: false,
        own: Some(Reply::Ok(())),
        watched: Reply::NoAuth,
        marker: None,
        also: Vec::new(),
    });
    assert_eq!(waiter.polled(), [lock[0].clone()]);
}

#[test]
fn a_semaphores_wait_keeps_only_the_watches_its_carrier_holds_unfired() {
    let host = |_: usize, seq: i32| format!("h{seq}@permits-2@t{seq}");
    let (children, me) = crate::ordering::tests::build_named("W W W [W]", host);
    let me = me.expect("mine");
    let mut machine = Acquire::new(Mode::Write, true).with_permits(Some(2));
    let _ = machine.created(&me, Some(&children));
    let set = |also: Vec<Reply<()>>| Input::WatchesSet {
        blind: false,
        own: None,
        watched: Reply::Ok(()),
        marker: None,
        also,
    };
    assert_eq!(
        machine.step(set(vec![Reply::Ok(())])),
        Action::Wait { poll: false }
    );
    // My own node written to: a listing, the same window.
    assert_eq!(
        machine.step(Input::Event(Event::Own(NodeEvent::DataChanged))),
        Action::List
    );
    // The carrier holds the nearest's watch unfired, not the farther's
    // (its event came and was taken, or came and waits): that one is
    // asked again, whatever its node now is.
    machine.watches_pending(&[children[2].clone()]);
    let again = machine.step(Input::Listed(Reply::Ok(&children)));
    let Action::SetWatches { kept, .. } = again else {
        panic!("watches again, got {again:?}");
    };
    assert_eq!(kept, [children[2].clone()]);
    // Nothing held: everything is asked again.
    let _ = machine.step(set(vec![Reply::Ok(())]));
    let _ = machine.step(Input::Event(Event::Own(NodeEvent::DataChanged)));
    machine.watches_pending(&[]);
    let Action::SetWatches { kept, .. } = machine.step(Input::Listed(Reply::Ok(&children))) else {
        panic!("watches again");
    };
    assert!(kept.is_empty());
}

#[test]
fn a_semaphores_wake_up_by_a_data_change_counts_once() {
    let counts = run_with(
        Some(2),
        true,
        "W W W [W]",
        &[
            ("created", "xwatch 2 also 1"),
            ("set - ok also ok", "wait"),
            ("data", "list"),
        ],
    );
    assert_eq!(counts.wakeups, 1);
}

/// Whether the wait's own and marker watches may go together (the wire
/// sends them so only while the contender knows it reads its node).
fn together(action: &Action) -> Option<bool> {
    match action {
        Action::SetWatches { together, .. } => Some(*together),
        _ => None,
    }
}

#[test]
fn own_marker_and_watched_watches_go_together_while_the_listing_watches_and_no_write_was_seen() {
    let (names, me) = build("W W [W]");
    let me = me.unwrap();
    let mut both = Acquire::new(Mode::Write, true);
    let action = both.created(&me, Some(&names));
    assert_eq!(show(&action, &names), "watch+own+marker 1");
    assert_eq!(together(&action), Some(true));
    // A writer right behind the holder: its own node's watch and the
    // holder's, unread, in one request.
    let (behind, next) = build("W [W]");
    let mut alone = Acquire::new(Mode::Write, true);
    let action = alone.created(&next.unwrap(), Some(&behind));
    assert_eq!(show(&action, &behind), "watch+own+blind 0");
    assert_eq!(together(&action), Some(true));
    // Behind a waiter (its deletion alone does not grant): each arrival
    // after me would make me read it; my own node's and the marker's.
    let mut unmarked = Acquire::new(Mode::Write, true).with_release_markers(false);
    let action = unmarked.created(&me, Some(&names));
    assert_eq!(show(&action, &names), "watch+own 1");
    assert_eq!(together(&action), Some(false));
    // A reader right behind the only writer: apart too.
    let (readers, reader) = build("W [R]");
    let mut behind_writer = Acquire::new(Mode::Read, true);
    let action = behind_writer.created(&reader.unwrap(), Some(&readers));
    assert_eq!(show(&action, &readers), "watch+own 0");
    assert_eq!(together(&action), Some(false));
    // A create without its listing: the listing asked after it watches too.
    let mut listed = Acquire::new(Mode::Write, true);
    assert_eq!(show(&listed.created(&me, None), &names), "list");
    let action = listed.step(Input::Listed(Reply::Ok(&names)));
    assert_eq!(show(&action, &names), "watch+own+marker 1");
    // A semaphore's listings leave no watch: never blind.
    let (sem, mine) =
        crate::ordering::tests::build_named("W [W]", |_, seq| format!("h{seq}@permits-1@t{seq}"));
    let mut permit = Acquire::new(Mode::Write, true).with_permits(Some(1));
    assert!(!permit.watches_listing());
    let action = permit.created(&mine.unwrap(), Some(&sem));
    assert!(
        matches!(
            action,
            Action::SetWatches {
                blind: false,
                together: false,
                ..
            }
        ),
        "{action:?}"
    );
    // A downgrade's reader leaves none either.
    assert!(!Acquire::new(Mode::Read, true).replacing("x").watches_listing());
    assert!(Acquire::new(Mode::Read, true).watches_listing());
}

#[test]
fn a_blind_watch_is_read_once_when_the_directory_changes_before_the_watched_node_goes() {
    // A stranger's child came (or any other): the watched node is read
    // once, without a watch; readable, the wait goes on.
    let counts = run(
        true,
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set-blind ok ok", "wait"),
            ("listing", "read 0"),
            ("watched-read ok", "wait"),
            // A second change: nothing more to learn.
            ("listing", "wait"),
            ("deleted", "grant mark"),
        ],
    );
    assert_eq!((counts.wakeups, counts.handoff), (1, true));
    // Not readable: polled.
    run(
        true,
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set-blind ok ok", "wait"),
            ("listing", "read 0"),
            ("watched-read noauth", "poll"),
            ("deleted", "grant mark"),
        ],
    );
    // Gone when read: the deletion's rules (only node before me: mine).
    let counts = run(
        true,
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set-blind ok ok", "wait"),
            ("listing", "read 0"),
            ("watched-read nonode", "grant mark"),
        ],
    );
    assert_eq!(counts.wakeups, 1);
    // A write to the watched node, watched again with `getData`: read,
    // so the directory's changes ask nothing more.
    run(
        true,
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set-blind ok ok", "wait"),
            ("data", "rewatch"),
            ("rewatched ok", "wait"),
            ("listing", "wait"),
            ("deleted", "grant mark"),
        ],
    );
    // The read's answer lost: list again, and watch again.
    let counts = run(
        true,
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set-blind ok ok", "wait"),
            ("listing", "read 0"),
            ("watched-read retry", "list"),
            // My node's watch is still set: the watched node's alone, read.
            ("listed W@0 [W@1]", "watch 0"),
        ],
    );
    assert_eq!((counts.retries, counts.listings), (1, 2));
    run(
        true,
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set-blind ok ok", "wait"),
            ("listing", "read 0"),
            ("watched-read failed", "fail request"),
        ],
    );
}

#[test]
fn the_listing_watch_means_nothing_to_a_wait_whose_watched_node_was_read() {
    // Watched with `getData` (not blind): the directory's changes are no
    // reason to read it.
    run(
        true,
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set ok ok", "wait"),
            ("listing", "wait"),
            ("deleted", "grant mark"),
        ],
    );
    // A reader behind the only writer reads it too (readers queue
    // together, and each arrival would make the one before it read).
    run(
        true,
        "W [R]",
        &[
            ("created", "watch+own 0"),
            ("set ok ok", "wait"),
            ("listing", "wait"),
            ("deleted", "grant"),
        ],
    );
    // The session's end, told by the listing's watch, ends the wait.
    run(
        true,
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("set-blind ok ok", "wait"),
            ("listing-ended", "fail ended"),
        ],
    );
    // The session's end told while a request is in flight ends it too.
    run(
        true,
        "W [W]",
        &[
            ("created", "watch+own+blind 0"),
            ("~listing-ended; set-blind ok ok", "fail ended"),
        ],
    );
}

#[test]
fn a_wait_listens_to_the_listings_watch_only_while_its_watched_node_is_unread() {
    let (names, me) = build("W [W]");
    let mut machine = Acquire::new(Mode::Write, true);
    machine.created(&me.unwrap(), Some(&names));
    assert!(!machine.listens_to_listing(), "nothing set yet");
    let waits = machine.step(Input::WatchesSet {
        blind: true,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::Ok(()),
        marker: None,
    });
    assert_eq!(show(&waits, &names), "wait");
    assert!(machine.listens_to_listing());
    machine.step(Input::Event(Event::Listing(NodeEvent::Other)));
    machine.step(Input::WatchedRead(Reply::Ok(())));
    assert!(!machine.listens_to_listing(), "read: readable");
    // Read with `getData` from the start: never.
    let (names, me) = build("W W [W]");
    let mut read = Acquire::new(Mode::Write, true);
    read.created(&me.unwrap(), Some(&names));
    read.step(Input::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::Ok(()),
        marker: Some(Reply::Ok(false)),
    });
    assert!(!read.listens_to_listing());
}

#[test]
fn a_deletion_that_arrives_with_the_listing_watch_is_taken_first() {
    let arrived = Arrived {
        watched: Some(NodeEvent::Deleted),
        listing: Some(NodeEvent::Other),
        ..Arrived::default()
    };
    let order: Vec<Source> = arrived.in_order().into_iter().map(|(source, _)| source).collect();
    assert_eq!(order, [Source::Watched, Source::Listing]);
    let with_own = Arrived {
        own: Some(NodeEvent::Deleted),
        listing: Some(NodeEvent::Other),
        deadline: true,
        ..Arrived::default()
    };
    let order: Vec<Source> = with_own
        .in_order()
        .into_iter()
        .map(|(source, _)| source)
        .collect();
    assert_eq!(order, [Source::Own, Source::Listing, Source::Deadline]);
}

#[test]
fn a_write_to_my_node_sends_its_watch_apart_with_a_read() {
    let (names, me) = build("W W [W]");
    let mut machine = Acquire::new(Mode::Write, true);
    assert_eq!(together(&machine.created(&me.unwrap(), Some(&names))), Some(true));
    // Fired at once: written since my node was made.
    machine.event(Event::Own(NodeEvent::DataChanged));
    let after = machine.step(Input::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::Ok(()),
        marker: Some(Reply::Ok(false)),
    });
    assert_eq!(show(&after, &names), "wait");
    // The hand-off does not trust a node written to: it lists again.
    machine.event(Event::Released);
    assert_eq!(
        show(&machine.step(Input::Event(event("deleted"))), &names),
        "list",
        "a write to my node: list again"
    );
    // A watch relative to its czxid would fire again at once: `getData`
    // reads what was written and sets it.
    let again = machine.step(Input::Listed(Reply::Ok(&names)));
    assert_eq!(show(&again, &names), "watch+own+marker 1");
    assert_eq!(together(&again), Some(false));
    // The same for a write that comes during the wait.
    let (names, me) = build("W W [W]");
    let mut waiting = Acquire::new(Mode::Write, true);
    waiting.created(&me.unwrap(), Some(&names));
    waiting.step(Input::WatchesSet {
        blind: false,
        also: Vec::new(),
        own: Some(Reply::Ok(())),
        watched: Reply::Ok(()),
        marker: Some(Reply::Ok(false)),
    });
    assert_eq!(
        show(
            &waiting.step(Input::Event(Event::Own(NodeEvent::DataChanged))),
            &names
        ),
        "list"
    );
    let again = waiting.step(Input::Listed(Reply::Ok(&names)));
    assert_eq!(show(&again, &names), "watch+own+marker 1");
    assert_eq!(together(&again), Some(false));
}

#[test]
fn a_marker_listed_already_is_not_watched() {
    let (mut names, me) = build("W W [W]");
    let me = me.unwrap();
    names.push(crate::node_name::release_marker(&names[1]));
    let mut machine = Acquire::new(Mode::Write, true);
    assert_eq!(show(&machine.created(&me, Some(&names)), &names), "watch+own 1");
}
