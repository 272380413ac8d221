//! Properties of the pure core: node names and ordering decisions.
//!
//! Failing seeds are kept in `proptest-regressions/`.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::FileFailurePersistence;
use uuid::Uuid;
use zk_rwlock_core::ordering::{decide, queue, Decision};
use zk_rwlock_core::{Layout, Mode, NodeName};

/// A contender node name as the library writes it, or in the bare form.
fn name(host: &str, mode: Mode, seq: i32) -> String {
    format!("{host}-{}-{seq:010}", mode.letter())
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Read), Just(Mode::Write)]
}

/// A queue: modes in sequence order, a base sequence anywhere in the valid
/// range (some close to the counter's limit), gaps between sequences, and
/// foreign children.
#[derive(Debug, Clone)]
struct QueueSpec {
    modes: Vec<Mode>,
    base: i32,
    gaps: Vec<u8>,
    foreign: usize,
}

impl QueueSpec {
    /// Sequences in queue order.
    fn seqs(&self) -> Vec<i32> {
        let mut seq = self.base;
        let mut out = Vec::with_capacity(self.modes.len());
        for (i, _) in self.modes.iter().enumerate() {
            out.push(seq);
            seq = seq.wrapping_add(1 + i32::from(self.gaps[i % self.gaps.len()]));
        }
        out
    }

    /// Contender names in queue order.
    fn names(&self) -> Vec<String> {
        self.modes
            .iter()
            .zip(self.seqs())
            .enumerate()
            .map(|(i, (m, s))| name(&format!("host-{i}"), *m, s))
            .collect()
    }

    /// Contender names plus foreign children, in a scrambled order.
    fn children(&self, shuffle: &[Index]) -> Vec<String> {
        let mut all = self.names();
        for i in 0..self.foreign {
            all.push(format!("not-a-contender-{i}"));
        }
        for (i, ix) in shuffle.iter().enumerate() {
            if all.is_empty() {
                break;
            }
            let (a, b) = (i % all.len(), ix.index(all.len()));
            all.swap(a, b);
        }
        all
    }
}

fn queue_spec() -> impl Strategy<Value = QueueSpec> {
    (
        prop::collection::vec(mode(), 1..24),
        prop_oneof![0..i32::MAX - 100, (i32::MAX - 100)..(i32::MAX - 80), Just(0)],
        prop::collection::vec(0u8..3, 1..8),
        0usize..3,
    )
        .prop_map(|(modes, base, gaps, foreign)| QueueSpec {
            modes,
            base,
            gaps,
            foreign,
        })
}

/// Decision with the watched node replaced by its index in queue order,
/// and its two flags (deletion grants, release grants).
fn decision_index(d: Decision<'_>, order: &[String]) -> Option<(usize, bool, bool)> {
    match d {
        Decision::Granted => None,
        Decision::Wait {
            watch,
            deletion_grants,
            release_grants,
        } => Some((
            order
                .iter()
                .position(|n| n == watch)
                .expect("watched node is a contender"),
            deletion_grants,
            release_grants,
        )),
        other => panic!("a queue of valid sequences gave {other:?}"),
    }
}

proptest! {
    #![proptest_config(config())]

    /// Grants are one writer at the head, or a non-empty prefix of readers;
    /// the head is always granted; the watched node precedes me; a reader
    /// watches a writer.
    #[test]
    fn grants_are_safe_and_watches_point_back(spec in queue_spec(), shuffle in prop::collection::vec(any::<Index>(), 0..32)) {
        let order = spec.names();
        let children = spec.children(&shuffle);
        let mut granted = Vec::new();
        for (i, me) in order.iter().enumerate() {
            match decision_index(decide(me, &children).unwrap(), &order) {
                None => granted.push(i),
                Some((w, deletion_grants, release_grants)) => {
                    prop_assert!(w < i, "{me} watches a later node");
                    prop_assert_eq!(
                        release_grants,
                        deletion_grants || spec.modes[w] == Mode::Write,
                        "the release of a watched writer grants; so does any deletion that grants"
                    );
                    if spec.modes[i] == Mode::Read {
                        prop_assert_eq!(spec.modes[w], Mode::Write, "a reader watches a writer");
                        prop_assert!(spec.modes[w + 1..i].iter().all(|m| *m == Mode::Read), "the last writer before it");
                    } else {
                        prop_assert_eq!(w, i - 1, "a writer watches its immediate predecessor");
                    }
                }
            }
        }
        prop_assert_eq!(granted.first(), Some(&0), "the head is granted");
        if spec.modes[0] == Mode::Write {
            prop_assert_eq!(granted, vec![0]);
        } else {
            let prefix = spec.modes.iter().take_while(|m| **m == Mode::Read).count();
            prop_assert_eq!(granted, (0..prefix).collect::<Vec<_>>());
        }
    }

    /// The order of the input list never matters, and `queue` agrees with `decide`.
    #[test]
    fn input_order_never_matters(spec in queue_spec(), a in prop::collection::vec(any::<Index>(), 0..32), b in prop::collection::vec(any::<Index>(), 0..32)) {
        let order = spec.names();
        let (ca, cb) = (spec.children(&a), spec.children(&b));
        let q = queue(&ca);
        prop_assert_eq!(q.contenders.iter().map(|p| p.name.to_owned()).collect::<Vec<_>>(), order.clone());
        prop_assert_eq!(q.foreign.len(), spec.foreign);
        for (i, me) in order.iter().enumerate() {
            let da = decide(me, &ca).unwrap();
            prop_assert_eq!(da, decide(me, &cb).unwrap());
            prop_assert_eq!(da, q.contenders[i].decision);
        }
    }

    /// Adding nodes with larger sequences never changes a decision.
    #[test]
    fn later_nodes_never_change_a_decision(spec in queue_spec(), extra in prop::collection::vec(mode(), 1..8)) {
        let before = spec.names();
        let mut longer = spec.clone();
        longer.modes.extend(extra);
        let after = longer.names();
        for me in &before {
            prop_assert_eq!(decide(me, &before).unwrap(), decide(me, &after).unwrap());
        }
    }

    /// Nodes whose sequence cannot be ordered (the counter's limit, where
    /// it sticks; a negative number; a sequence shared with another node)
    /// are never granted, and change nobody else's decision: nobody waits
    /// on a node at the limit or below zero.
    #[test]
    fn unorderable_sequences_are_never_granted(spec in queue_spec(), extra in prop::collection::vec((mode(), prop_oneof![Just(i32::MAX), i32::MIN..0]), 1..6), dup in any::<Index>()) {
        let order = spec.names();
        let mut children = order.clone();
        let stuck: Vec<String> = extra
            .iter()
            .enumerate()
            .map(|(i, (m, seq))| name(&format!("late-{i}"), *m, *seq))
            .collect();
        children.extend(stuck.iter().cloned());
        for me in &order {
            prop_assert_eq!(decide(me, &children).unwrap(), decide(me, &order).unwrap());
        }
        for me in &stuck {
            prop_assert_eq!(decide(me, &children).unwrap(), Decision::Exhausted);
        }
        let q = queue(&children);
        for place in &q.contenders {
            prop_assert_eq!(place.decision, decide(place.name, &children).unwrap(), "{}", place.name);
        }
        // A second node with the sequence of a valid one: neither of the two is granted.
        let twin_of = &order[dup.index(order.len())];
        let seq = twin_of.parse::<NodeName>().unwrap().seq();
        let twin = name("twin", Mode::Read, seq);
        let mut with_twin = order.clone();
        with_twin.push(twin.clone());
        prop_assert_eq!(decide(twin_of, &with_twin).unwrap(), Decision::Exhausted);
        prop_assert_eq!(decide(&twin, &with_twin).unwrap(), Decision::Exhausted);
    }

    /// Names round-trip through `Display` and `FromStr`, whatever the host.
    #[test]
    fn names_round_trip(identity in "[a-zA-Z0-9._-]{1,20}", token in any::<u128>(), bare in "[a-z0-9@._-]{0,12}[a-z0-9._]", m in mode(), seq in any::<i32>()) {
        let token = uuid::Uuid::from_u128(token);
        let ours = NodeName::new(&identity, token, m, seq);
        let text = ours.to_string();
        prop_assert!(text.starts_with(&NodeName::prefix(&identity, token, m)));
        let back: NodeName = text.parse().unwrap();
        prop_assert_eq!(back.identity(), identity.as_str());
        prop_assert_eq!(back.token(), Some(token));
        prop_assert_eq!((back.mode(), back.seq()), (m, seq));
        prop_assert_eq!(back.to_string(), text);

        let foreign = name(&bare, m, seq);
        let back: NodeName = foreign.parse().unwrap();
        prop_assert_eq!(back.host(), bare.as_str());
        prop_assert_eq!((back.mode(), back.seq()), (m, seq));
        prop_assert_eq!(back.to_string(), foreign);
    }
}

/// 512 cases per property; failing seeds go to `proptest-regressions/` and
/// are replayed first on every later run.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/ordering_props.txt",
        ))),
        ..ProptestConfig::default()
    }
}

// ---- simulation ----------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Op {
    Arrive(Mode),
    /// A holder releases: its node is marked and deleted in one transaction.
    ReleaseHolder(Index),
    /// A holder's session expires: its node goes without the mark.
    ExpireHolder(Index),
    CancelWaiter(Index),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => mode().prop_map(Op::Arrive),
        2 => any::<Index>().prop_map(Op::ReleaseHolder),
        1 => any::<Index>().prop_map(Op::ExpireHolder),
        1 => any::<Index>().prop_map(Op::CancelWaiter),
    ]
}

#[derive(Debug, Clone)]
enum State {
    /// `waited`: granted after a decision to wait (its release is marked,
    /// if it is a writer), not on its first decision.
    Holding { waited: bool },
    Waiting {
        watch: String,
        deletion_grants: bool,
        release_grants: bool,
    },
}

/// How a node went away, as its watchers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gone {
    /// Released by a writer that held after waiting: the watcher sees the
    /// mark (a data change).
    Released,
    /// Deleted without the mark: a waiter gave up, or a session expired.
    Deleted,
}

/// Contenders driven exactly like the adapter drives them: decide on a
/// snapshot; on `Wait`, re-decide only when the watched node goes, unless
/// the decision said that its deletion, or its release by a holder, alone
/// grants: then take the lock at once.
struct Sim {
    next_seq: i32,
    live: BTreeMap<String, (Mode, State)>,
}

impl Sim {
    fn children(&self) -> Vec<String> {
        self.live.keys().cloned().collect()
    }

    /// Decides for `me`; `first` for its first decision, right after it arrived.
    fn decide_for(&mut self, me: &str, first: bool) -> Result<(), TestCaseError> {
        let children = self.children();
        let state = match decide(me, &children).map_err(|e| TestCaseError::fail(e.to_string()))? {
            Decision::Granted => State::Holding { waited: !first },
            Decision::Wait {
                watch,
                deletion_grants,
                release_grants,
            } => State::Waiting {
                watch: watch.to_owned(),
                deletion_grants,
                release_grants,
            },
            Decision::Exhausted => {
                // Withdrawn at once: the node is deleted without the mark.
                prop_assert!(
                    first && me.parse::<NodeName>().unwrap().seq() == i32::MAX,
                    "{me} exhausted, not at its arrival at the limit"
                );
                return self.delete(me, Gone::Deleted);
            }
            other => return Err(TestCaseError::fail(format!("unknown decision {other:?}"))),
        };
        if let Some(entry) = self.live.get_mut(me) {
            entry.1 = state;
        }
        Ok(())
    }

    fn arrive(&mut self, i: usize, mode: Mode) -> Result<(), TestCaseError> {
        let me = name(&format!("c{i}"), mode, self.next_seq);
        // ZooKeeper's counter sticks at its limit.
        self.next_seq = self.next_seq.saturating_add(1);
        self.live.insert(
            me.clone(),
            (
                mode,
                State::Waiting {
                    watch: String::new(),
                    deletion_grants: false,
                    release_grants: false,
                },
            ),
        );
        self.decide_for(&me, true)
    }

    /// Removes a node and delivers the event to whoever watched it. Only the
    /// release of a writer that waited carries the mark; any other release
    /// is a plain deletion.
    fn delete(&mut self, gone: &str, how: Gone) -> Result<(), TestCaseError> {
        let how = match self.live.remove(gone) {
            Some((Mode::Write, State::Holding { waited: true })) => how,
            _ => Gone::Deleted,
        };
        let watchers: Vec<(String, bool)> = self
            .live
            .iter()
            .filter_map(|(n, (_, s))| match s {
                State::Waiting {
                    watch,
                    deletion_grants,
                    release_grants,
                } if watch == gone => Some((
                    n.clone(),
                    *deletion_grants || (how == Gone::Released && *release_grants),
                )),
                _ => None,
            })
            .collect();
        for (w, grants) in watchers {
            if grants {
                // The claim must be true: a fresh decision agrees.
                let children = self.children();
                prop_assert_eq!(
                    decide(&w, &children).unwrap(),
                    Decision::Granted,
                    "{:?} of {} was claimed to grant {}",
                    how,
                    gone,
                    w
                );
                if let Some(entry) = self.live.get_mut(&w) {
                    entry.1 = State::Holding { waited: true };
                }
            } else {
                self.decide_for(&w, false)?;
            }
        }
        Ok(())
    }

    fn holders(&self) -> Vec<String> {
        self.live
            .iter()
            .filter(|(_, (_, s))| matches!(s, State::Holding { .. }))
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn waiters(&self) -> Vec<String> {
        self.live
            .iter()
            .filter(|(_, (_, s))| matches!(s, State::Waiting { .. }))
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn check_safety(&self) -> Result<(), TestCaseError> {
        let holders = self.holders();
        let writers = holders.iter().filter(|h| self.live[*h].0 == Mode::Write).count();
        prop_assert!(
            writers == 0 || holders.len() == 1,
            "a writer holds together with others: {:?}",
            holders
        );
        // Everyone who believes it holds is granted by the real queue.
        let children = self.children();
        for h in &holders {
            prop_assert_eq!(decide(h, &children).unwrap(), Decision::Granted);
        }
        // Every waiter watches a live node.
        for (n, (_, s)) in &self.live {
            if let State::Waiting { watch, .. } = s {
                prop_assert!(
                    self.live.contains_key(watch),
                    "{} watches a deleted node {}",
                    n,
                    watch
                );
            }
        }
        // No one is stuck: if there are waiters, someone holds.
        prop_assert!(
            self.live.is_empty() || !holders.is_empty(),
            "waiters but no holder: {:?}",
            self.waiters()
        );
        Ok(())
    }
}

proptest! {
    #![proptest_config(config())]

    /// Random arrivals, releases and cancellations: never a safety
    /// violation, never a stuck waiter, and the queue always drains.
    #[test]
    fn simulated_runs_drain_safely(
        start in prop_oneof![Just(0i32), (i32::MAX - 40)..=i32::MAX, 0..=i32::MAX],
        ops in prop::collection::vec(op(), 1..120),
    ) {
        let mut sim = Sim { next_seq: start, live: BTreeMap::new() };
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Arrive(m) => sim.arrive(i, m)?,
                Op::ReleaseHolder(ix) | Op::ExpireHolder(ix) => {
                    let holders = sim.holders();
                    let how = if matches!(op, Op::ReleaseHolder(_)) { Gone::Released } else { Gone::Deleted };
                    if !holders.is_empty() {
                        sim.delete(&holders[ix.index(holders.len())], how)?;
                    }
                }
                Op::CancelWaiter(ix) => {
                    let waiters = sim.waiters();
                    if !waiters.is_empty() {
                        sim.delete(&waiters[ix.index(waiters.len())], Gone::Deleted)?;
                    }
                }
            }
            sim.check_safety()?;
        }
        // Drain: release holders until nothing is left.
        let mut steps = 0;
        while let Some(h) = sim.holders().first().cloned() {
            sim.delete(&h, Gone::Released)?;
            sim.check_safety()?;
            steps += 1;
            prop_assert!(steps <= ops.len(), "the queue does not drain");
        }
        prop_assert!(sim.live.is_empty(), "stuck waiters: {:?}", sim.waiters());
    }
}

// ---- layouts: Curator's and kazoo's contenders in one queue ---------------

/// A contender's layout and mode; the Curator mutex only writes.
fn layout_mode() -> impl Strategy<Value = (Layout, Mode)> {
    (prop::sample::select(Layout::ALL.to_vec()), mode()).prop_map(|(l, m)| {
        if l.supports(m) {
            (l, m)
        } else {
            (l, Mode::Write)
        }
    })
}

/// A token as the libraries make one (a random UUID), but whose hex does
/// not start with a digit: see `curator_sorts_a_kazoo_name_by_its_hex` for
/// what a leading `0` changes in Curator's eyes.
fn token(bits: u128) -> Uuid {
    Uuid::from_u128((bits & !(0xf << 124)) | (0xa << 124))
}

/// A mixed queue: each contender in its own layout, as its library writes it.
#[derive(Debug, Clone)]
struct MixedSpec {
    queue: QueueSpec,
    layouts: Vec<Layout>,
    tokens: Vec<u128>,
}

impl MixedSpec {
    fn names(&self) -> Vec<String> {
        self.queue
            .modes
            .iter()
            .zip(self.queue.seqs())
            .enumerate()
            .map(|(i, (m, s))| {
                let layout = self.layouts[i % self.layouts.len()];
                let m = if layout.supports(*m) { *m } else { Mode::Write };
                let t = token(self.tokens[i % self.tokens.len()] ^ i as u128);
                NodeName::new_in(layout, &format!("h{i}"), t, m, s)
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    /// The same queue, every contender in the native layout with its mode.
    fn native(&self) -> Vec<String> {
        self.names()
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let n: NodeName = n.parse().unwrap();
                name(&format!("h{i}"), n.mode(), n.seq())
            })
            .collect()
    }

    fn with_foreign(&self, names: Vec<String>) -> Vec<String> {
        let mut all = names;
        for i in 0..self.queue.foreign {
            all.insert((i * 7) % (all.len() + 1), format!("not-a-contender-{i}"));
        }
        all
    }
}

fn mixed_spec() -> impl Strategy<Value = MixedSpec> {
    (
        queue_spec(),
        prop::collection::vec(prop::sample::select(Layout::ALL.to_vec()), 1..6),
        prop::collection::vec(any::<u128>(), 1..4),
    )
        .prop_map(|(queue, layouts, tokens)| MixedSpec {
            queue,
            layouts,
            tokens,
        })
}

// -- Models of the peers' own grant predicates, from their sources --------
//
// Curator 5.4 (`LockInternals.getSortedChildren`, `StandardLockInternalsDriver`,
// `InterProcessReadWriteLock`): every child of the directory is sorted by
// `fixForSorting`: the text after the last occurrence of the lock name
// (`__READ__` then `__WRIT__` for the read/write lock, `lock-` for the
// mutex), or the whole name if it holds none. A writer or mutex is granted
// when it is first in that order; a reader when no child containing
// `__WRIT__` comes before it.
//
// kazoo 2.11 (`kazoo/recipe/lock.py`): children matching
// `(?:<exclude names>)(-?\d{10})$` whose sequence *string* is smaller than
// the contender's block it. `ReadLock` excludes `__lock__`; `WriteLock`
// `__lock__` and `__rlock__`; `Lock` only `__lock__`.

fn fix_for_sorting<'a>(name: &'a str, lock_name: &str) -> &'a str {
    match name.rfind(lock_name) {
        Some(i) => &name[i + lock_name.len()..],
        None => name,
    }
}

fn curator_sorted<'a>(children: &'a [String], lock_names: &[&str]) -> Vec<&'a str> {
    let key = |n: &'a str| lock_names.iter().fold(n, |n, l| fix_for_sorting(n, l));
    let mut sorted: Vec<&str> = children.iter().map(String::as_str).collect();
    sorted.sort_by(|a, b| key(a).cmp(key(b)));
    sorted
}

/// Curator's predicate for `me`, a node of one of its recipes.
fn curator_grants(me: &str, children: &[String]) -> bool {
    if me.contains("lock-") && !me.contains("__WRIT__") && !me.contains("__READ__") {
        return curator_sorted(children, &["lock-"]).first() == Some(&me);
    }
    let sorted = curator_sorted(children, &["__READ__", "__WRIT__"]);
    if me.contains("__WRIT__") {
        return sorted.first() == Some(&me);
    }
    for n in sorted {
        if n.contains("__WRIT__") {
            return false;
        }
        if n.starts_with(me) {
            return true;
        }
    }
    false
}

/// kazoo's sequence of a child if it matches `(?:names)(-?\d{10})$`.
fn kazoo_seq<'a>(child: &'a str, names: &[&str]) -> Option<&'a str> {
    names.iter().find_map(|n| {
        let (before, seq) = if child.len() >= 11 && child.as_bytes()[child.len() - 11] == b'-' {
            child.split_at(child.len() - 11)
        } else {
            child.split_at(child.len().checked_sub(10)?)
        };
        let digits = seq.trim_start_matches('-');
        (before.ends_with(n) && digits.len() == 10 && digits.bytes().all(|b| b.is_ascii_digit()))
            .then_some(seq)
    })
}

/// kazoo's predicate for `me`, with the exclude names of its recipe.
fn kazoo_grants(me: &str, children: &[String], exclude: &[&str]) -> bool {
    let own = &me[me.len() - 10..];
    !children
        .iter()
        .filter_map(|c| kazoo_seq(c, exclude))
        .any(|seq| seq < own)
}

/// Every library's predicate that could have written `me` grants it.
fn peer_grants(me: &str, children: &[String]) -> bool {
    let n: NodeName = me.parse().unwrap();
    match (n.layout(), n.mode()) {
        (Layout::Curator | Layout::CuratorMutex, _) => curator_grants(me, children),
        (Layout::Kazoo, Mode::Read) => kazoo_grants(me, children, &["__lock__"]),
        // `__lock__`: a WriteLock, or a Lock (whose predicate is weaker).
        (Layout::Kazoo, Mode::Write) => {
            kazoo_grants(me, children, &["__lock__", "__rlock__"])
                && kazoo_grants(me, children, &["__lock__"])
        }
        _ => true,
    }
}

proptest! {
    #![proptest_config(config())]

    /// Every layout's names round-trip, with their token, mode and sequence.
    #[test]
    fn names_round_trip_in_every_layout(lm in layout_mode(), bits in any::<u128>(), seq in any::<i32>()) {
        let (layout, m) = lm;
        let t = Uuid::from_u128(bits);
        let ours = NodeName::new_in(layout, "web-1", t, m, seq).unwrap();
        let text = ours.to_string();
        prop_assert!(text.starts_with(&layout.prefix("web-1", t, m).unwrap()));
        let back: NodeName = text.parse().unwrap();
        prop_assert_eq!(&back, &ours);
        prop_assert_eq!((back.layout(), back.mode(), back.seq(), back.token()), (layout, m, seq, Some(t)));
        prop_assert_eq!(back.to_string(), text);
    }

    /// A mixed queue decides exactly as the same queue written natively,
    /// mode for mode: same grants, same watched node, same `deletion_grants`
    /// except for a writer behind a Curator writer (which may add a reader
    /// before itself); `release_grants` only behind a native writer (peers
    /// never mark).
    #[test]
    fn mixed_queues_decide_by_mode(spec in mixed_spec()) {
        let names = spec.names();
        let native = spec.native();
        let (mixed_children, native_children) = (spec.with_foreign(names.clone()), spec.with_foreign(native.clone()));
        let q = queue(&mixed_children);
        for (i, me) in names.iter().enumerate() {
            let got = decide(me, &mixed_children).unwrap();
            prop_assert_eq!(got, q.contenders[i].decision);
            let want = decide(&native[i], &native_children).unwrap();
            match (got, want) {
                (
                    Decision::Wait { watch, deletion_grants, release_grants },
                    Decision::Wait { watch: w, deletion_grants: d, release_grants: r },
                ) => {
                    let wi = names.iter().position(|n| n == watch).unwrap();
                    prop_assert_eq!(&native[wi], w);
                    let watched: NodeName = watch.parse().unwrap();
                    let mine: NodeName = me.parse().unwrap();
                    // A Curator writer may add a reader before itself: no
                    // writer behind it takes its deletion as a grant.
                    let downgrade = mine.mode() == Mode::Write
                        && (watched.layout(), watched.mode()) == (Layout::Curator, Mode::Write);
                    prop_assert_eq!(deletion_grants, d && !downgrade);
                    if watched.layout() == Layout::Native {
                        prop_assert_eq!(release_grants, r);
                    } else {
                        prop_assert_eq!(release_grants, deletion_grants, "{} marks nothing", watch);
                    }
                }
                (got, want) => prop_assert_eq!(got, want),
            }
        }
    }

    /// A peer contender that `decide` grants is also granted by its own
    /// library's predicate on the same listing (names as the libraries
    /// write them, foreign children included): zk-rwlock is never more
    /// permissive towards a peer than the peer itself. The converse is
    /// false by design: Curator's mutex and read/write lock ignore each
    /// other's nodes, kazoo's `Lock` ignores readers, and no peer sees
    /// native nodes.
    #[test]
    fn a_peer_granted_by_decide_is_granted_by_its_library(spec in mixed_spec()) {
        let names = spec.names();
        let children = spec.with_foreign(names.clone());
        for me in &names {
            if decide(me, &children).unwrap() == Decision::Granted {
                prop_assert!(peer_grants(me, &children), "{} granted by decide, not by its library in {:?}", me, children);
            }
        }
    }

    /// In a directory of peers only, each written as its library writes
    /// it, every contender that its library grants and whose mode agrees
    /// with the others' is granted by `decide` too, where the peers'
    /// recipes agree with each other: Curator's read/write lock alone,
    /// kazoo's `ReadLock`/`WriteLock` alone.
    #[test]
    fn one_peer_recipe_alone_decides_as_its_library(spec in queue_spec(), kazoo in any::<bool>(), bits in any::<u128>()) {
        let layout = if kazoo { Layout::Kazoo } else { Layout::Curator };
        let names: Vec<String> = spec
            .modes
            .iter()
            .zip(spec.seqs())
            .enumerate()
            .map(|(i, (m, s))| NodeName::new_in(layout, "h", token(bits ^ i as u128), *m, s).unwrap().to_string())
            .collect();
        for me in &names {
            prop_assert_eq!(decide(me, &names).unwrap() == Decision::Granted, peer_grants(me, &names), "{}", me);
        }
    }
}

/// Curator sorts a name without its lock names by the whole name: a kazoo
/// name whose hex starts with enough `0`s sorts before Curator's sequences
/// and blocks Curator's writer, which `decide` grants. Curator is the more
/// careful one there, never the less.
#[test]
fn curator_sorts_a_kazoo_name_by_its_hex() {
    let kazoo = NodeName::new_in(Layout::Kazoo, "", Uuid::from_u128(1), Mode::Read, 9)
        .unwrap()
        .to_string();
    let writer = NodeName::new_in(Layout::Curator, "", Uuid::from_u128(2), Mode::Write, 3)
        .unwrap()
        .to_string();
    let children = vec![kazoo, writer.clone()];
    assert_eq!(decide(&writer, &children).unwrap(), Decision::Granted);
    assert!(!curator_grants(&writer, &children));
}

/// What the peers' own rules let through, modelled from their sources:
/// Curator's mutex and read/write write lock are both granted on one
/// directory, and so are kazoo's `Lock` and a `ReadLock` before it.
/// `decide` grants only the first of each pair.
#[test]
fn peers_do_not_exclude_each_other_where_decide_does() {
    let t = |n| token(n);
    let mutex = NodeName::new_in(Layout::CuratorMutex, "", t(1), Mode::Write, 1)
        .unwrap()
        .to_string();
    let writer = NodeName::new_in(Layout::Curator, "", t(2), Mode::Write, 2)
        .unwrap()
        .to_string();
    let children = vec![mutex.clone(), writer.clone()];
    assert!(curator_grants(&mutex, &children) && curator_grants(&writer, &children));
    assert_eq!(decide(&mutex, &children).unwrap(), Decision::Granted);
    assert_ne!(decide(&writer, &children).unwrap(), Decision::Granted);

    let reader = NodeName::new_in(Layout::Kazoo, "", t(3), Mode::Read, 1)
        .unwrap()
        .to_string();
    let lock = NodeName::new_in(Layout::Kazoo, "", t(4), Mode::Write, 2)
        .unwrap()
        .to_string();
    let children = vec![reader.clone(), lock.clone()];
    assert!(kazoo_grants(&reader, &children, &["__lock__"]) && kazoo_grants(&lock, &children, &["__lock__"]));
    assert!(
        !kazoo_grants(&lock, &children, &["__lock__", "__rlock__"]),
        "WriteLock waits"
    );
    assert_ne!(decide(&lock, &children).unwrap(), Decision::Granted);
}

/// The deletion of a Curator read/write lock's writer alone never grants:
/// from Curator 5.5 its owner may add a `__READ__` node with the same
/// sequence (a plain ephemeral create) before deleting it; only a new
/// listing shows that node, which the decision then waits on.
#[test]
fn a_curator_writers_deletion_alone_does_not_grant() {
    let cw = "_c_7f3a0c1e-9b2d-4f60-a1b2-c3d4e5f60718-__WRIT__0000000000";
    let cr = "_c_0f8f5a3e-5b7c-4d8e-9f00-112233445566-__READ__0000000000";
    let me = "x@0123456789abcdef0123456789abcdef-W-0000000001";
    let after = [cr, me];
    assert!(
        matches!(decide(me, &after).unwrap(), Decision::Wait { watch, .. } if watch == cr),
        "with the read node listed, the writer waits on it"
    );
    let before = [cw, me];
    let d = decide(me, &before).unwrap();
    assert!(
        matches!(
            d,
            Decision::Wait {
                deletion_grants: false,
                release_grants: false,
                ..
            }
        ),
        "behind a Curator writer: {d:?}"
    );
}

/// `queue()` gives every contender the same decision as `decide()`, over
/// every queue of up to 4 nodes drawn from sequences {0, 1, 2, MAX, -1,
/// -2147483648} (duplicates included) and both modes.
#[test]
fn queue_agrees_with_decide_exhaustively() {
    let seqs = [0, 1, 2, i32::MAX, -1, i32::MIN];
    let mut count = 0;
    for n in 1..=4usize {
        let combos = (seqs.len() * 2).pow(n as u32);
        for mut k in 0..combos {
            let mut names = Vec::new();
            for i in 0..n {
                let pick = k % (seqs.len() * 2);
                k /= seqs.len() * 2;
                let seq = seqs[pick / 2];
                let mode = if pick % 2 == 0 { 'R' } else { 'W' };
                names.push(format!("h{i}-{mode}-{seq:010}"));
            }
            let q = queue(&names);
            for me in &names {
                let d = decide(me, &names).unwrap();
                let p = q.contenders.iter().find(|p| p.name == me.as_str()).unwrap();
                assert_eq!(p.decision, d, "{me} in {names:?}");
                count += 1;
            }
        }
    }
    assert!(count > 0);
}
