//! Table-driven, in the style of `ordering`'s tables: each row has the
//! permit count N, a queue with one node marked `[ ]` as "me", and the
//! expected decision: `granted A` (A ahead), `wait A: i j` (watch the
//! i-th and j-th nodes of the row, 0-based, in queue order), `wait! A: i j`
//! (and the deletion of any of them grants), `conflict i` (the i-th node
//! carries another N), or `exhausted`.
use super::*;
use crate::node_name::Mode;
use crate::ordering;

/// Builds child names from a row like `S S3 [S] x W@7`, for N permits:
/// `S` is a semaphore node tagged with N, `S<n>` one tagged with n; `W`
/// and `R` are untagged native contenders; `cR`/`cW` Curator's, `m`
/// Curator's mutex, `kR`/`kW` kazoo's; `x` a foreign child; `@n` after a
/// token sets the sequence (default: position). Returns the names and mine.
fn build(permits: u32, row: &str) -> (Vec<String>, Option<String>) {
    let mut names = Vec::new();
    let mut me = None;
    for (i, tok) in row.split_whitespace().enumerate() {
        let marked = tok.starts_with('[') && tok.ends_with(']');
        let tok = tok.trim_start_matches('[').trim_end_matches(']');
        let (letter, seq) = match tok.split_once('@') {
            Some((l, s)) => (l, s.parse::<i32>().unwrap()),
            None => (tok, i as i32),
        };
        let token = Uuid::from_u128(i as u128 + 1);
        let name = match letter {
            "x" => format!("foreign-node-{i}"),
            "R" | "W" => format!("host-{i}-{letter}-{seq:010}"),
            s if s.starts_with('S') => {
                let n = if s == "S" {
                    permits
                } else {
                    s[1..].parse().unwrap()
                };
                crate::node_name::sequential(
                    &prefix(&format!("host-{i}"), token, NonZeroU32::new(n).unwrap()),
                    seq.into(),
                )
            }
            peer => {
                let (layout, mode) = match peer {
                    "cR" => (Layout::Curator, Mode::Read),
                    "cW" => (Layout::Curator, Mode::Write),
                    "m" => (Layout::CuratorMutex, Mode::Write),
                    "kR" => (Layout::Kazoo, Mode::Read),
                    "kW" => (Layout::Kazoo, Mode::Write),
                    other => panic!("bad token {other:?} in row {row:?}"),
                };
                crate::NodeName::new_in(layout, "", token, mode, seq)
                    .unwrap()
                    .to_string()
            }
        };
        if marked {
            me = Some(name.clone());
        }
        names.push(name);
    }
    (names, me)
}

const TABLE: &[(u32, &str, &str)] = &[
    // N = 1 is a mutex: the head holds, a waiter watches its immediate
    // predecessor only.
    (1, "[S]", "granted 0"),
    (1, "[S] S S", "granted 0"),
    (1, "S [S]", "wait! 1: 0"),
    (1, "S S S [S]", "wait 3: 2"),
    (1, "S S [S] S", "wait 2: 1"),
    // N = 2, 3: the first N hold; a waiter watches its N immediate
    // predecessors; with exactly N ahead, any of their deletions grants.
    (2, "[S]", "granted 0"),
    (2, "S [S]", "granted 1"),
    (2, "S [S] S S", "granted 1"),
    (2, "S S [S]", "wait! 2: 0 1"),
    (2, "S S S [S]", "wait 3: 1 2"),
    (2, "S S S S S [S] S", "wait 5: 3 4"),
    (3, "S S [S] S", "granted 2"),
    (3, "S S S [S]", "wait! 3: 0 1 2"),
    (3, "S S S S S S S [S] S S", "wait 7: 4 5 6"),
    (u32::MAX, "S S S [S]", "granted 3"),
    // Input order does not matter: smaller sequences precede.
    (2, "S@9 [S@7] S@2 S@5", "wait! 2: 2 3"),
    (1, "S@9 [S@7] S@2 S@5", "wait 2: 3"),
    (2, "[S@8] S@1 S@7 S@3 S@5", "wait 4: 4 2"),
    // Foreign children are skipped.
    (2, "x x [S] x", "granted 0"),
    (2, "S x S x [S]", "wait! 2: 0 2"),
    (1, "x S x [S] x", "wait! 1: 1"),
    // Every contender counts as one permit taken, in any layout and mode,
    // tagged or not; `me` may be untagged.
    (2, "R [S]", "granted 1"),
    // Only permits hand over by their deletion alone.
    (2, "W kR [S]", "wait 2: 0 1"),
    (3, "m cR kW R [S]", "wait 4: 1 2 3"),
    (2, "S S [W]", "wait! 2: 0 1"),
    (2, "kW [R]", "granted 1"),
    // A lock's writer (Curator's, or this library's downgrading) may add a
    // node with its own sequence before its deletion: its deletion alone
    // grants nothing, nor does any node's that is not a permit.
    (2, "cW [S]", "granted 1"),
    (2, "cW S [S]", "wait 2: 0 1"),
    (2, "S cW [S]", "wait 2: 0 1"),
    (2, "cR S [S]", "wait 2: 0 1"),
    (2, "W S [S]", "wait 2: 0 1"),
    (1, "cW [S]", "wait 1: 0"),
    // A predecessor with another N: never granted (the nearest is named);
    // later nodes with another N are theirs to refuse.
    (2, "S3 [S]", "conflict 0"),
    (5, "S4 [S]", "conflict 0"),
    (2, "S3 S S5 S [S]", "conflict 2"),
    (2, "S S S S3 S [S]", "conflict 3"),
    (2, "S3 [W]", "conflict 0"),
    (2, "[S] S3", "granted 0"),
    (2, "S [S] S3 S1", "granted 1"),
    (2, "S2 [S]", "granted 1"),
    // The counter's limit: nodes there or negative are ignored (conflicts
    // included); a node of mine there, or sharing a sequence, is exhausted.
    (2, "[S@2147483647]", "exhausted"),
    (2, "S@2147483646 [S@2147483647]", "exhausted"),
    (2, "[S@-5]", "exhausted"),
    (2, "S@4 [S@4]", "exhausted"),
    (2, "S3@4 [S@4]", "exhausted"),
    (1, "S@2147483647 S@-3 [S@7]", "granted 0"),
    (2, "S3@2147483647 S3@-1 [S]", "granted 0"),
    // Two predecessors sharing a sequence (forged names) both count; the
    // nearer is the greater name.
    (1, "S@3 S@3 [S@5]", "wait 2: 1"),
];

#[test]
fn decisions_table() {
    for &(permits, row, want) in TABLE {
        let (names, me) = build(permits, row);
        let me = me.unwrap_or_else(|| panic!("no `[ ]` in row {row:?}"));
        let got = decide(&me, &names, permits).unwrap_or_else(|e| panic!("row `{row}`: {e}"));
        let (kind, rest) = want.split_once(' ').unwrap_or((want, ""));
        let expect = match kind {
            "granted" => Decision::Granted {
                ahead: rest.parse().unwrap(),
            },
            "wait" | "wait!" => {
                let (ahead, watch) = rest.split_once(':').unwrap();
                Decision::Wait {
                    watch: watch
                        .split_whitespace()
                        .map(|i| names[i.parse::<usize>().unwrap()].as_str())
                        .collect(),
                    ahead: ahead.parse().unwrap(),
                    deletion_grants: kind == "wait!",
                }
            }
            "conflict" => {
                let node = names[rest.parse::<usize>().unwrap()].as_str();
                Decision::Conflict {
                    node,
                    permits: permits_of(node).unwrap(),
                }
            }
            "exhausted" => Decision::Exhausted,
            _ => panic!("bad table row {row:?}: {want:?}"),
        };
        assert_eq!(got, expect, "row `{row}` with {permits} permits");
        // `ahead` counts the nodes `ordering::ahead` counts.
        if let Decision::Granted { ahead } | Decision::Wait { ahead, .. } = got {
            assert_eq!(ahead, ordering::ahead(&me, &names), "ahead in row `{row}`");
        }
    }
}

/// With N permits, every contender's decision in a long queue: the first N
/// hold, and each node is watched by exactly the N contenders right after
/// it (at most N woken by its deletion, whatever the queue's length).
#[test]
fn each_node_is_watched_by_the_n_contenders_right_after_it() {
    for permits in 1..=4u32 {
        let n = permits as usize;
        let row = vec!["S"; 60].join(" ");
        let (names, _) = build(permits, &row);
        let mut watchers = vec![Vec::new(); names.len()];
        for (i, me) in names.iter().enumerate() {
            match decide(me, &names, permits).unwrap() {
                Decision::Granted { ahead } => assert!(i < n && ahead == i),
                Decision::Wait { watch, ahead, .. } => {
                    assert_eq!((ahead, watch.len()), (i, n));
                    for w in watch {
                        watchers[names.iter().position(|x| x == w).unwrap()].push(i);
                    }
                }
                other => panic!("{other:?}"),
            }
        }
        for (p, by) in watchers.iter().enumerate() {
            // The waiters among the N right after it.
            let want: Vec<usize> = (p + 1..=p + n).filter(|&i| i >= n && i < names.len()).collect();
            assert_eq!(by, &want, "watchers of node {p} with {permits} permits");
        }
    }
}

#[test]
fn missing_or_invalid_me_is_an_error() {
    let names = ["a-W-0000000001", "b-W-0000000002"];
    assert_eq!(
        decide("c-W-0000000003", &names, 2),
        Err(SemaphoreError::Ordering(OrderingError::Missing {
            me: "c-W-0000000003".into()
        }))
    );
    assert!(matches!(
        decide("nonsense", &names, 2),
        Err(SemaphoreError::Ordering(OrderingError::InvalidName(_)))
    ));
}

#[test]
fn zero_permits_are_refused() {
    let names = ["a-W-0000000001"];
    assert_eq!(
        decide("a-W-0000000001", &names, 0),
        Err(SemaphoreError::NoPermits)
    );
    assert!(SemaphoreError::NoPermits
        .to_string()
        .contains("at least one permit"));
}

#[test]
fn my_name_must_carry_the_permits_asked_for() {
    let (names, me) = build(3, "S [S]");
    let me = me.unwrap();
    assert_eq!(decide(&me, &names, 3), Ok(Decision::Granted { ahead: 1 }));
    assert_eq!(
        decide(&me, &names, 2),
        Err(SemaphoreError::PermitsDisagree {
            me: me.clone(),
            carried: 3,
            asked: 2
        })
    );
}

#[test]
fn the_permit_tag() {
    let token = Uuid::from_u128(0x7f3a_0c1e_9b2d_4f60_a1b2_c3d4_e5f6_0718);
    for n in [1, 2, 10, u32::MAX] {
        let name = crate::node_name::sequential(&prefix("web-01", token, NonZeroU32::new(n).unwrap()), 42);
        assert_eq!(permits_of(&name), Some(n), "{name}");
        // A native writer, whose token is found as for any native node.
        let parsed: crate::NodeName = name.parse().unwrap();
        assert_eq!(
            (parsed.layout(), parsed.mode(), parsed.token()),
            (Layout::Native, Mode::Write, Some(token))
        );
        assert_eq!(parsed.seq(), 42);
    }
    let hex = "7f3a0c1e9b2d4f60a1b2c3d4e5f60718";
    for untagged in [
        format!("web@{hex}-W-0000000001"),
        format!("web@permits-0@{hex}-W-0000000001"),
        format!("web@permits-03@{hex}-W-0000000001"),
        format!("web@permits-+3@{hex}-W-0000000001"),
        format!("web@permits-4294967296@{hex}-W-0000000001"),
        format!("web@permits-@{hex}-W-0000000001"),
        format!("@permits-3@{hex}-W-0000000001"),
        "web@permits-3@-W-0000000001".to_owned(),
        "web@permits-3-W-0000000001".to_owned(),
        format!("web@permits-3@{hex}"),
        "_c_7f3a0c1e-9b2d-4f60-a1b2-c3d4e5f60718-__WRIT__0000000001".to_owned(),
    ] {
        assert_eq!(permits_of(&untagged), None, "{untagged}");
    }
    // Any mode carries a tag (only `W` is ever written).
    assert_eq!(permits_of(&format!("web@permits-3@{hex}-R-0000000001")), Some(3));
}

/// A read/write lock contender of this library behind semaphore nodes sees
/// writers: it is not granted while one of them is there.
#[test]
fn lock_contenders_are_never_granted_past_a_semaphore_node() {
    for (row, lock) in [
        ("S [R]", 1),
        ("S S R [R]", 3),
        ("S [W]", 1),
        ("S S R [W]", 3),
        ("R S R [R]", 3),
    ] {
        let (names, _) = build(2, row);
        let me = &names[lock];
        let got = ordering::decide(me, &names).unwrap();
        assert!(
            matches!(got, ordering::Decision::Wait { .. }),
            "row `{row}`: {got:?}"
        );
    }
}

#[test]
fn a_directorys_count_is_its_heads() {
    let (children, _) = build(3, "x S S2 W");
    assert_eq!(permits_in(&children), Some(3), "the head's");
    let (stranger, _) = build(3, "W S S2 x");
    assert_eq!(
        permits_in(&stranger),
        None,
        "a lock's directory, whatever strangers queue behind its head"
    );
    let (lock, _) = build(2, "W R W x");
    assert_eq!(permits_in(&lock), None, "a lock's directory carries no count");
    assert_eq!(permits_in::<String>(&[]), None);
}

#[test]
fn a_semaphores_queue_shows_the_first_n_holding_and_the_rest_waiting_in_turn() {
    use crate::ordering::Decision as Lock;
    let (children, _) = build(2, "S S S x S");
    let seen = queue(&children, None);
    let decisions: Vec<_> = seen.contenders.iter().map(|p| p.decision).collect();
    let wait_on = |i: usize| Lock::Wait {
        watch: children[i].as_str(),
        deletion_grants: false,
        release_grants: false,
    };
    assert_eq!(
        decisions,
        vec![Lock::Granted, Lock::Granted, wait_on(1), wait_on(2)]
    );
    assert_eq!(seen.foreign, vec![children[3].as_str()]);
    assert_eq!(seen.holders().count(), 2);
    // Its verdict agrees with each contender's own decision.
    for (place, name) in seen.contenders.iter().zip([0, 1, 2, 4].map(|i| &children[i])) {
        let granted = matches!(decide(name, &children, 2), Ok(Decision::Granted { .. }));
        assert_eq!(place.decision == Lock::Granted, granted, "{name}");
    }
    // A count given wins over the tags; none and no tags: the lock's rule.
    assert_eq!(queue_of_holders(&children, Some(3)), 3);
    let (lock, _) = build(2, "R R W R");
    assert_eq!(queue(&lock, None), crate::ordering::queue(&lock));
    // Two nodes sharing a sequence hold nothing but count for those after
    // (as each decides); a node past the limit counts for no one.
    let (spent, _) = build(2, "S@5 S@5 S@7 S@8");
    let spent_queue = queue(&spent, None);
    assert_eq!(spent_queue.holders().count(), 0);
    for (place, name) in spent_queue.contenders.iter().zip(&spent) {
        let granted = matches!(decide(name, &spent, 2), Ok(Decision::Granted { .. }));
        assert_eq!(place.decision == Lock::Granted, granted, "{name}");
    }
    let (past, _) = build(1, &format!("S S@{}", crate::ordering::SEQUENCE_LIMIT));
    let past_queue = queue(&past, None);
    assert_eq!(past_queue.contenders[1].decision, Lock::Exhausted);
    assert_eq!(past_queue.holders().count(), 1);
}

fn queue_of_holders(children: &[String], permits: Option<u32>) -> usize {
    queue(children, permits).holders().count()
}
