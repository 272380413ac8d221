//! Table-driven: each row is a queue in order, one node marked `[ ]` as
//! "me", and the expected decision: `granted`, `wait N` (watch the N-th
//! node of the row, 0-based, neither its deletion nor its release
//! grants), `wait^ N` (its release by a holder grants), `wait! N` (its
//! deletion alone grants, and so does its release), `exhausted` (the
//! sequence cannot be ordered), or `missing`.
use super::*;

/// Builds child names from a row like `R W [R] x W`; `x` is a foreign
/// child; `@n` after a letter sets the sequence (default: position).
/// Each contender's host is its position, so two nodes with one
/// sequence are two nodes.
fn build(row: &str) -> (Vec<String>, Option<String>) {
    build_named(row, |position, _| format!("host-{position}"))
}

/// [`build`] with the host of each contender named by `host(position,
/// sequence)`; returns the names, and mine (the one marked `[ ]`).
pub(crate) fn build_named(row: &str, host: impl Fn(usize, i32) -> String) -> (Vec<String>, Option<String>) {
    let mut names = Vec::new();
    let mut me = None;
    for (i, tok) in row.split_whitespace().enumerate() {
        let marked = tok.starts_with('[') && tok.ends_with(']');
        let tok = tok.trim_start_matches('[').trim_end_matches(']');
        let (letter, seq) = match tok.split_once('@') {
            Some((l, s)) => (l, s.parse::<i32>().unwrap()),
            None => (tok, i as i32),
        };
        let name = match letter {
            "x" => format!("foreign-node-{i}"),
            "R" | "W" => format!("{}-{letter}-{seq:010}", host(i, seq)),
            peer => {
                // `cR`/`cW` Curator, `m` Curator's mutex, `kR`/`kW` kazoo;
                // the token is made from the host, so it is stable too.
                let (layout, mode) = match peer {
                    "cR" => (Layout::Curator, Mode::Read),
                    "cW" => (Layout::Curator, Mode::Write),
                    "m" => (Layout::CuratorMutex, Mode::Write),
                    "kR" => (Layout::Kazoo, Mode::Read),
                    "kW" => (Layout::Kazoo, Mode::Write),
                    other => panic!("bad letter {other:?} in row {row:?}"),
                };
                let bits = host(i, seq).bytes().fold(0xcbf2_9ce4_8422_2325u128, |h, b| {
                    (h ^ u128::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
                let token = uuid::Uuid::from_u128(bits);
                crate::node_name::NodeName::new_in(layout, "", token, mode, seq)
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            }
        };
        if marked {
            me = Some(name.clone());
        }
        names.push(name);
    }
    (names, me)
}

const TABLE: &[(&str, &str)] = &[
    ("[R]", "granted"),
    ("[W]", "granted"),
    ("R R [R] W", "granted"),
    ("R R R [W]", "wait 2"),
    ("W W [W]", "wait^ 1"),
    ("R W [W]", "wait^ 1"),
    ("W R W W [W]", "wait^ 3"),
    ("R [W] R", "wait! 0"),
    ("R W [R]", "wait! 1"),
    ("W R [W]", "wait 1"),
    ("W [W]", "wait! 0"),
    ("W [R]", "wait! 0"),
    ("R [W]", "wait! 0"),
    ("W R [R]", "wait! 0"),
    ("W W [R]", "wait^ 1"),
    ("W R W R [R]", "wait^ 2"),
    ("R W R W [W]", "wait^ 3"),
    ("W R W R [W]", "wait 3"),
    ("[R] W R", "granted"),
    ("[W] R W", "granted"),
    ("x [W] x", "granted"),
    ("x W x [R]", "wait! 1"),
    // The counter's limit: 2147483647 sticks, so nodes there (and
    // negative ones) cannot be ordered: never granted, never watched.
    ("W@2147483646 [R@2147483647]", "exhausted"),
    ("[W@2147483647]", "exhausted"),
    ("W@2147483647 [R@-2147483648]", "exhausted"),
    ("[R@2147483646] W@2147483647 W@2147483647", "granted"),
    ("R@2147483645 [W@2147483646] W@2147483647", "wait! 0"),
    ("W@-5 [R@7]", "granted"),
    // A sequence shared with another node: never granted; the pair
    // counts as predecessors of later nodes.
    ("[R@4] W@4", "exhausted"),
    ("R@4 [W@4]", "exhausted"),
    ("R@3 R@3 [R@5]", "granted"),
    ("R@3 W@3 [R@5]", "wait! 1"),
    ("R@3 W@3 [W@5]", "wait^ 1"),
    // Input order does not matter: later-listed smaller sequences precede.
    ("[W@5] R@3", "wait! 1"),
    ("R@9 [W@7] W@2", "wait! 2"),
    // Peers' contenders count with their modes; `m` and `kW` are
    // exclusive. Only a native writer's release is known by the record.
    ("kR cR [R]", "granted"),
    ("kR cR [cR] kR", "granted"),
    ("m [R]", "wait! 0"),
    ("kW [kR]", "wait! 0"),
    ("cW [cR]", "wait! 0"),
    ("kR [kW]", "wait! 0"),
    ("cR [m]", "wait! 0"),
    ("R [m]", "wait! 0"),
    ("cR kR [cW]", "wait 1"),
    // A Curator writer may add a reader with its own sequence (a
    // downgrade): its deletion alone grants no writer behind it.
    ("cW [W]", "wait 0"),
    ("cW [m]", "wait 0"),
    ("cW [cW]", "wait 0"),
    ("cW [kR]", "wait! 0"),
    ("kW [W]", "wait! 0"),
    ("m [W]", "wait! 0"),
    ("W cW [W]", "wait 1"),
    ("W kW [R]", "wait 1"),
    ("W m [kR]", "wait 1"),
    ("cW W [W]", "wait^ 1"),
    ("kW W [cR]", "wait^ 1"),
    ("m W cR [kR]", "wait^ 1"),
    ("W m R [m]", "wait 2"),
    ("W R kW [R]", "wait 2"),
    ("kW R W [cW]", "wait^ 2"),
    ("kW R cW [W]", "wait 2"),
    ("kW R cW kR [R]", "wait 2"),
    ("kW@2147483647 [cW@7]", "granted"),
    ("[kR@2147483647]", "exhausted"),
    ("[m@-5]", "exhausted"),
    ("cR@4 [kW@4]", "exhausted"),
];

#[test]
fn decisions_table() {
    for (row, want) in TABLE {
        let (names, me) = build(row);
        let me = me.unwrap();
        let got = decide(&me, &names).unwrap();
        let expect = match want.split_once(' ') {
            None if *want == "granted" => Decision::Granted,
            None if *want == "exhausted" => Decision::Exhausted,
            Some((kind @ ("wait" | "wait^" | "wait!"), n)) => Decision::Wait {
                watch: &names[n.parse::<usize>().unwrap()],
                deletion_grants: kind == "wait!",
                release_grants: kind != "wait",
            },
            _ => panic!("bad table row {row:?}: {want:?}"),
        };
        assert_eq!(got, expect, "row `{row}`");
        // `queue` gives every contender the same answer as `decide`.
        let q = queue(&names);
        let place = q.contenders.iter().find(|p| p.name == me).unwrap();
        assert_eq!(place.decision, expect, "queue() for row `{row}`");
    }
}

#[test]
fn peers_blind_spots() {
    use Layout::*;
    use Mode::*;
    let every = [
        (Native, Read),
        (Native, Write),
        (Curator, Read),
        (Curator, Write),
        (CuratorMutex, Write),
        (Kazoo, Read),
        (Kazoo, Write),
    ];
    // Each contender (layout, mode), and the contenders before it that
    // its library may grant it beside although these rules do not.
    type Kind = (Layout, Mode);
    let table: [(Kind, &[Kind]); 7] = [
        // zk-rwlock keeps these rules.
        ((Native, Read), &[]),
        ((Native, Write), &[]),
        // Curator's read/write lock sees its own nodes only; a reader
        // never waits for a reader.
        (
            (Curator, Read),
            &[(Native, Write), (CuratorMutex, Write), (Kazoo, Write)],
        ),
        (
            (Curator, Write),
            &[
                (Native, Read),
                (Native, Write),
                (CuratorMutex, Write),
                (Kazoo, Read),
                (Kazoo, Write),
            ],
        ),
        (
            (CuratorMutex, Write),
            &[
                (Native, Read),
                (Native, Write),
                (Curator, Read),
                (Curator, Write),
                (Kazoo, Read),
                (Kazoo, Write),
            ],
        ),
        (
            (Kazoo, Read),
            &[(Native, Write), (Curator, Write), (CuratorMutex, Write)],
        ),
        // And kazoo's `Lock` passes kazoo readers.
        (
            (Kazoo, Write),
            &[
                (Native, Read),
                (Native, Write),
                (Curator, Read),
                (Curator, Write),
                (CuratorMutex, Write),
                (Kazoo, Read),
            ],
        ),
    ];
    for (me, blind) in table {
        let got: Vec<(Layout, Mode)> = every.into_iter().filter(|o| blind_to(me, *o)).collect();
        assert_eq!(got, blind, "{me:?}");
    }
}

/// The node right after a downgrading writer: ties on a sequence are
/// broken by name, whatever the listing's order; nodes that come
/// before the writer (a negative sequence) or after everything (the
/// limit) are not it.
#[test]
fn the_node_right_after_a_downgrading_writer() {
    let (w, me) = ("h-W-0000000001", "h-R-0000000009");
    let reader = "a-R-0000000003";
    let writer = "b-W-0000000003";
    for listing in [
        [w, reader, writer, me],
        [w, writer, reader, me],
        [me, writer, w, reader],
    ] {
        assert_eq!(
            downgrade(w, me, &listing),
            Ok(Downgrade::Replace { successor: reader }),
            "{listing:?}"
        );
    }
    let later = ["a-W-0000000003", "b-R-0000000003"];
    for listing in [[w, later[0], later[1], me], [w, later[1], later[0], me]] {
        assert_eq!(downgrade(w, me, &listing), Ok(Downgrade::Keep), "{listing:?}");
    }
    for other in ["c-W--000000005", "c-W-2147483647"] {
        assert_eq!(
            downgrade(w, me, &[w, other, me]),
            Ok(Downgrade::Replace { successor: me }),
            "{other}"
        );
    }
    assert_eq!(downgrade(w, me, &[me]), Ok(Downgrade::Lost));
    assert_eq!(downgrade("nonsense", me, &[me]), Ok(Downgrade::Lost));
    assert!(matches!(
        downgrade(w, me, &[w]),
        Err(OrderingError::Missing { .. })
    ));
    assert!(matches!(
        downgrade(w, "nonsense", &[w]),
        Err(OrderingError::InvalidName(_))
    ));
}

#[test]
fn missing_me_is_an_error() {
    let names = ["a-W-0000000001", "b-R-0000000002"];
    assert_eq!(
        decide("c-R-0000000003", &names),
        Err(OrderingError::Missing {
            me: "c-R-0000000003".into()
        })
    );
    assert!(matches!(
        decide("nonsense", &names),
        Err(OrderingError::InvalidName(_))
    ));
}

#[test]
fn recycling_starts_in_the_last_2_pow_20_sequences() {
    assert_eq!(RECYCLE_THRESHOLD, 2_146_435_071);
    for (seq, due) in [
        (0, false),
        (1, false),
        (1_000_000, false),
        (2_146_435_070, false),
        (2_146_435_071, true),
        (2_147_483_646, true),
        (SEQUENCE_LIMIT, true),
        (-1, true),
        (i32::MIN, true),
    ] {
        assert_eq!(needs_recycling(seq), due, "needs_recycling({seq})");
    }
}

/// Two other contenders that share a sequence (forged names): the one
/// with the greater name is the closer predecessor, whichever order the
/// server lists them in.
#[test]
fn ties_between_predecessors_do_not_depend_on_listing_order() {
    let (r, w, me) = ("a-R-0000000003", "b-W-0000000003", "c-W-0000000005");
    let want = Decision::Wait {
        watch: w,
        deletion_grants: false,
        release_grants: true,
    };
    for names in [[r, w, me], [w, r, me], [me, w, r]] {
        assert_eq!(decide(me, &names).unwrap(), want, "{names:?}");
        let q = queue(&names);
        let place = q.contenders.iter().find(|p| p.name == me).unwrap();
        assert_eq!(place.decision, want, "queue() for {names:?}");
    }
    // A reader behind them watches the writer, whatever the order.
    let (w2, me) = ("a-W-0000000003", "c-R-0000000005");
    for names in [[w2, w, me], [w, w2, me]] {
        let got = decide(me, &names).unwrap();
        assert!(
            matches!(got, Decision::Wait { watch, .. } if watch == w),
            "{names:?}: {got:?}"
        );
    }
}

#[test]
fn queue_orders_and_lists_foreign() {
    let (names, _) = build("W@-2147483648 x R@2147483647 R@2147483646 x W@5");
    let q = queue(&names);
    let seqs: Vec<i32> = q.contenders.iter().map(|p| p.seq).collect();
    assert_eq!(seqs, vec![5, 2147483646, -2147483648, 2147483647]);
    assert_eq!(q.foreign.len(), 2);
    assert_eq!(q.holders().count(), 1);
    let exhausted = q.contenders.iter().filter(|p| p.decision == Decision::Exhausted);
    assert_eq!(exhausted.count(), 2);
}
