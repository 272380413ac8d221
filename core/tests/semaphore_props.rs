//! The semaphore's grant-and-watch rule ([`zk_rwlock_core::semaphore`]),
//! driven in an abstract model of a directory (not ZooKeeper): random
//! arrivals, releases by holders, cancellations by waiters, session
//! expiries, and the delivery of watch notifications, each a step of its
//! own (a notification may wait while others act).
//!
//! A contender lists and decides when it arrives, and again only when a
//! node its last decision watches is deleted (one-shot watches, re-set at
//! each decision, kept by the server until they fire, as ZooKeeper keeps
//! them). After every step:
//!
//! - (a) never more than N hold (with contenders that disagree on N: the
//!   last holder's N bounds them all, and every holder whose name shows
//!   its N shows that one);
//! - (b) no waiter with fewer than N predecessors lacks a pending wake-up
//!   (no missed wake-up), and no contender is granted before an earlier one
//!   that waits without one (FIFO);
//! - (c) a deletion notifies at most N contenders (no herd);
//! - (d) once arrivals stop and holders keep releasing, every waiter is
//!   granted and the directory empties.
//!
//! Mutation checks run the same property with wrong rules (watch only the
//! N-th predecessor; watch the head of the queue) and expect it to fail.
//!
//! Failing seeds are kept in `proptest-regressions/`.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU32;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::ValueTree;
use proptest::test_runner::{FileFailurePersistence, TestError, TestRunner};
use uuid::Uuid;
use zk_rwlock_core::node_name::sequential;
use zk_rwlock_core::semaphore::{decide, prefix, Decision};
use zk_rwlock_core::NodeName;

/// What a waiter watches, given the rule's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// The rule as written: its N immediate predecessors.
    Exact,
    /// A mutant: only the N-th predecessor (the farthest of the N).
    NthOnly,
    /// A mutant: the N contenders at the head of the queue.
    Head,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    /// A contender arrives. `tagged`: its name carries its N (else a bare
    /// native writer that keeps the same rule); `other`: it asks for N + 1
    /// permits (only when the case mixes permit counts).
    Arrive { tagged: bool, other: bool },
    /// A holder releases: its node is deleted.
    Release(Index),
    /// A waiter gives up: its node is deleted.
    Cancel(Index),
    /// A contender's session expires: its node and its watches go.
    Expire(Index),
    /// A waiter acts on its pending notification.
    Deliver(Index),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<bool>(), prop::bool::weighted(0.3)).prop_map(|(tagged, other)| Op::Arrive { tagged, other }),
        2 => any::<Index>().prop_map(Op::Release),
        1 => any::<Index>().prop_map(Op::Cancel),
        1 => any::<Index>().prop_map(Op::Expire),
        4 => any::<Index>().prop_map(Op::Deliver),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    permits: u32,
    /// Arrivals may ask for N + 1 permits (tagged), to exercise conflicts.
    mixed: bool,
    ops: Vec<Op>,
    /// Which pending waiter or holder acts at each step of the drain.
    drain: Vec<Index>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1u32..=4,
        prop::bool::weighted(0.25),
        prop::collection::vec(op(), 1..160),
        prop::collection::vec(any::<Index>(), 1..16),
    )
        .prop_map(|(permits, mixed, ops, drain)| Case {
            permits,
            mixed,
            ops,
            drain,
        })
}

#[derive(Debug, Clone)]
enum State {
    Holding,
    Waiting {
        /// The nodes (sequences) its last decision watches.
        watch: BTreeSet<i32>,
        deletion_grants: bool,
        /// A watched node was deleted; the waiter has not acted on it yet.
        pending: bool,
    },
}

#[derive(Debug, Clone)]
struct Contender {
    name: String,
    permits: u32,
    /// Its name carries `permits`.
    tagged: bool,
    state: State,
}

/// Children of the directory that are not contenders: skipped by the rule.
const FOREIGN: [&str; 2] = ["config", "web@permits-2@x-W-0000000007.released"];

struct Model {
    rule: Rule,
    /// The largest N any contender asks for: the herd bound.
    max_permits: usize,
    next_seq: i32,
    /// Live contenders by sequence: queue order.
    live: BTreeMap<i32, Contender>,
    /// Watch registrations: watched sequence → watchers' sequences (one per
    /// contender and node, as ZooKeeper keeps one per session and path).
    watches: BTreeMap<i32, BTreeSet<i32>>,
    /// The most contenders one deletion notified.
    most_notified: usize,
    /// How many contenders were ever granted.
    grants: usize,
}

fn seq_of(name: &str) -> i32 {
    name.parse::<NodeName>().unwrap().seq()
}

impl Model {
    fn new(rule: Rule, max_permits: u32) -> Model {
        Model {
            rule,
            max_permits: max_permits as usize,
            next_seq: 0,
            live: BTreeMap::new(),
            watches: BTreeMap::new(),
            most_notified: 0,
            grants: 0,
        }
    }

    /// The directory's listing, in an order that is not the queue's.
    fn children(&self) -> Vec<String> {
        let mut all: Vec<String> = self.live.values().rev().map(|c| c.name.clone()).collect();
        let at = all.len() / 2;
        all.insert(at, FOREIGN[0].to_owned());
        all.push(FOREIGN[1].to_owned());
        all
    }

    fn arrive(&mut self, permits: u32, tagged: bool) -> Result<(), TestCaseError> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let identity = format!("c{seq}");
        let name = if tagged {
            let token = Uuid::from_u128(seq as u128 + 1);
            sequential(
                &prefix(&identity, token, NonZeroU32::new(permits).unwrap()),
                seq.into(),
            )
        } else {
            format!("{identity}-W-{seq:010}")
        };
        self.live.insert(
            seq,
            Contender {
                name,
                permits,
                tagged,
                state: State::Waiting {
                    watch: BTreeSet::new(),
                    deletion_grants: false,
                    pending: false,
                },
            },
        );
        self.decide_for(seq, true)
    }

    /// Lists and decides for `seq`; `first` at its arrival. The listing and
    /// the watches are one step (a driver that finds a watched node gone
    /// when it sets the watch decides again).
    fn decide_for(&mut self, seq: i32, first: bool) -> Result<(), TestCaseError> {
        let children = self.children();
        let (me, permits) = {
            let c = &self.live[&seq];
            (c.name.clone(), c.permits)
        };
        let decision = decide(&me, &children, permits).map_err(|e| TestCaseError::fail(e.to_string()))?;
        match decision {
            Decision::Granted { ahead } => {
                prop_assert!(ahead < permits as usize);
                self.grant(seq)?;
            }
            Decision::Wait {
                watch,
                ahead,
                deletion_grants,
            } => {
                prop_assert!(ahead >= permits as usize && watch.len() == permits as usize);
                let (watch, deletion_grants): (BTreeSet<i32>, bool) = match self.rule {
                    Rule::Exact => (watch.iter().map(|w| seq_of(w)).collect(), deletion_grants),
                    Rule::NthOnly => (watch.first().map(|w| seq_of(w)).into_iter().collect(), false),
                    Rule::Head => (self.live.keys().copied().take(permits as usize).collect(), false),
                };
                for w in &watch {
                    self.watches.entry(*w).or_default().insert(seq);
                }
                self.live.get_mut(&seq).unwrap().state = State::Waiting {
                    watch,
                    deletion_grants,
                    pending: false,
                };
            }
            Decision::Conflict {
                node,
                permits: theirs,
            } => {
                // Predecessors only leave: a conflict shows at the first decision.
                prop_assert!(
                    first,
                    "{} met a conflict with {} after its first decision",
                    me,
                    node
                );
                prop_assert_ne!(theirs, permits);
                prop_assert_eq!(self.live[&seq_of(node)].permits, theirs);
                // Withdrawn at once.
                self.delete(seq)?;
            }
            other => {
                return Err(TestCaseError::fail(format!(
                    "unexpected decision for {me}: {other:?}"
                )))
            }
        }
        Ok(())
    }

    fn grant(&mut self, seq: i32) -> Result<(), TestCaseError> {
        // FIFO: nobody earlier waits without a wake-up on its way.
        for (earlier, c) in self.live.range(..seq) {
            prop_assert!(
                !matches!(c.state, State::Waiting { pending: false, .. }),
                "{} granted before {} (seq {}), which waits with no wake-up",
                self.live[&seq].name,
                c.name,
                earlier
            );
        }
        self.live.get_mut(&seq).unwrap().state = State::Holding;
        self.grants += 1;
        Ok(())
    }

    /// Deletes a node (release, cancellation, expiry, withdrawal): its own
    /// watches go with it (a session's expire; a client that gave up
    /// ignores later events), and its watchers are notified.
    fn delete(&mut self, seq: i32) -> Result<(), TestCaseError> {
        prop_assert!(self.live.remove(&seq).is_some());
        for watchers in self.watches.values_mut() {
            watchers.remove(&seq);
        }
        let notified = self.watches.remove(&seq).unwrap_or_default();
        prop_assert!(
            notified.len() <= self.max_permits,
            "herd: deleting node {} notified {} contenders {:?} (N = {})",
            seq,
            notified.len(),
            notified,
            self.max_permits
        );
        self.most_notified = self.most_notified.max(notified.len());
        for w in notified {
            // A holder, or a waiter whose last decision no longer watches
            // the node, ignores the event.
            if let Some(Contender {
                state: State::Waiting { watch, pending, .. },
                ..
            }) = self.live.get_mut(&w)
            {
                if watch.contains(&seq) {
                    *pending = true;
                }
            }
        }
        Ok(())
    }

    /// The waiter acts on its notification: takes the permit if its last
    /// decision said the deletion alone grants, else lists and decides.
    fn deliver(&mut self, seq: i32) -> Result<(), TestCaseError> {
        let State::Waiting { deletion_grants, .. } = self.live[&seq].state else {
            return Err(TestCaseError::fail("deliver to a holder"));
        };
        if deletion_grants {
            // The claim must be true: a fresh decision agrees.
            let children = self.children();
            let c = &self.live[&seq];
            let fresh = decide(&c.name, &children, c.permits).unwrap();
            prop_assert!(
                matches!(fresh, Decision::Granted { .. }),
                "{} took a deletion for a grant: {:?}",
                c.name,
                fresh
            );
            self.grant(seq)
        } else {
            self.decide_for(seq, false)
        }
    }

    fn pick(&self, ix: Index, want: impl Fn(&State) -> bool) -> Option<i32> {
        let found: Vec<i32> = self
            .live
            .iter()
            .filter(|(_, c)| want(&c.state))
            .map(|(s, _)| *s)
            .collect();
        (!found.is_empty()).then(|| found[ix.index(found.len())])
    }

    fn holding(s: &State) -> bool {
        matches!(s, State::Holding)
    }

    fn waiting(s: &State) -> bool {
        matches!(s, State::Waiting { .. })
    }

    fn pending(s: &State) -> bool {
        matches!(s, State::Waiting { pending: true, .. })
    }

    fn step(&mut self, op: Op, case: &Case) -> Result<(), TestCaseError> {
        match op {
            Op::Arrive { tagged, other } => {
                let other = case.mixed && other;
                self.arrive(case.permits + u32::from(other), tagged || other)?;
            }
            Op::Release(ix) => {
                if let Some(s) = self.pick(ix, Model::holding) {
                    self.delete(s)?;
                }
            }
            Op::Cancel(ix) => {
                if let Some(s) = self.pick(ix, Model::waiting) {
                    self.delete(s)?;
                }
            }
            Op::Expire(ix) => {
                if let Some(s) = self.pick(ix, |_| true) {
                    self.delete(s)?;
                }
            }
            Op::Deliver(ix) => {
                if let Some(s) = self.pick(ix, Model::pending) {
                    self.deliver(s)?;
                }
            }
        }
        self.check()
    }

    /// (a) and (b), after every step.
    fn check(&self) -> Result<(), TestCaseError> {
        // The last holder saw every other: they all count against its N,
        // and every one that shows its N shows the same.
        let holders: Vec<&Contender> = self.live.values().filter(|c| Model::holding(&c.state)).collect();
        if let Some(last) = holders.last() {
            prop_assert!(
                holders.iter().all(|h| !h.tagged || h.permits == last.permits),
                "holders disagree on N: {:?}",
                holders
            );
            prop_assert!(
                holders.len() <= last.permits as usize,
                "{} hold with N = {}: {:?}",
                holders.len(),
                last.permits,
                holders
            );
        }
        for (ahead, c) in self.live.values().enumerate() {
            if let State::Waiting { pending: false, .. } = c.state {
                prop_assert!(
                    ahead >= c.permits as usize,
                    "missed wake-up: {} has {} ahead with N = {} and no pending wake-up",
                    c.name,
                    ahead,
                    c.permits
                );
            }
        }
        Ok(())
    }

    /// (d): no more arrivals, cancellations or expiries; pending waiters
    /// act and holders release, in orders `picks` chooses, until the
    /// directory is empty. Every contender leaves by a release, so every
    /// waiter left was granted.
    fn drain(&mut self, picks: &[Index]) -> Result<(), TestCaseError> {
        let waiting = self.live.values().filter(|c| Model::waiting(&c.state)).count();
        let grants = self.grants;
        // Each release deletes a node and wakes at most N: a bound on steps.
        let bound = (self.live.len() + 1) * (self.max_permits + 2);
        for i in 0..bound {
            if self.live.is_empty() {
                prop_assert_eq!(self.grants - grants, waiting, "not every waiter was granted");
                return Ok(());
            }
            let ix = picks[i % picks.len()];
            // Alternate: act on a wake-up, or release, when both are possible.
            let deliver = self.pick(ix, Model::pending);
            let release = self.pick(ix, Model::holding);
            match (deliver, release) {
                (Some(s), Some(_)) if i % 2 == 0 => self.deliver(s)?,
                (_, Some(h)) => self.delete(h)?,
                (Some(s), None) => self.deliver(s)?,
                (None, None) => {
                    let stuck: Vec<&str> = self.live.values().map(|c| c.name.as_str()).collect();
                    return Err(TestCaseError::fail(format!(
                        "liveness: nobody holds and no wake-up is pending, but {stuck:?} wait"
                    )));
                }
            }
            self.check()?;
        }
        Err(TestCaseError::fail("the drain did not end"))
    }
}

fn run(rule: Rule, case: &Case) -> Result<(), TestCaseError> {
    let mut model = Model::new(rule, case.permits + u32::from(case.mixed));
    for op in &case.ops {
        model.step(*op, case)?;
    }
    model.drain(&case.drain)
}

/// 512 cases per property; failing seeds go to `proptest-regressions/` and
/// are replayed first on every later run.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/semaphore_props.txt",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn permits_are_bounded_wake_ups_never_missed_and_every_waiter_granted(case in case()) {
        run(Rule::Exact, &case)?;
    }
}

/// Runs the property with a mutant rule and returns the failure it finds.
fn failure_of(rule: Rule) -> String {
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    match runner.run(&case(), |case| run(rule, &case)) {
        Err(TestError::Fail(reason, case)) => format!("{reason} (in {case:?})"),
        Err(e) => panic!("the run did not complete: {e}"),
        Ok(()) => panic!("the property did not catch the {rule:?} rule"),
    }
}

/// Watching only the N-th predecessor misses a wake-up: the property
/// catches it.
#[test]
fn the_property_catches_watching_only_the_nth_predecessor() {
    let failure = failure_of(Rule::NthOnly);
    assert!(failure.contains("missed wake-up"), "{failure}");
}

/// Watching the head of the queue wakes every waiter: the property
/// catches the herd.
#[test]
fn the_property_catches_a_herd() {
    let failure = failure_of(Rule::Head);
    assert!(failure.contains("herd"), "{failure}");
}

/// The smallest case of the brief: N = 2, two hold, a third waits; the
/// nearer holder leaves. The third must be woken; watching the N-th
/// predecessor alone, it is not.
#[test]
fn the_nearer_holder_leaving_wakes_the_next_waiter() {
    let arrive = Op::Arrive {
        tagged: true,
        other: false,
    };
    let case = Case {
        permits: 2,
        mixed: false,
        // Two holders, one waiter; the second holder releases (holders are
        // picked in queue order: index 1 of 2).
        ops: vec![arrive, arrive, arrive, Op::Release(index(1, 2))],
        drain: vec![index(0, 1)],
    };
    run(Rule::Exact, &case).unwrap();
    let err = run(Rule::NthOnly, &case).unwrap_err().to_string();
    assert!(err.contains("missed wake-up"), "{err}");
}

/// A long queue drained by its holders: every deletion notifies at most N
/// contenders, and some notify exactly N (the bound is reached, not lax).
#[test]
fn a_long_queue_wakes_at_most_n_per_deletion() {
    for permits in 1..=4 {
        let case = Case {
            permits,
            mixed: false,
            ops: vec![
                Op::Arrive {
                    tagged: true,
                    other: false
                };
                200
            ],
            drain: vec![index(0, 1)],
        };
        let mut model = Model::new(Rule::Exact, permits);
        for op in &case.ops {
            model.step(*op, &case).unwrap();
        }
        // A waiter in the middle gives up, with N waiters behind it watching it.
        model.delete(100).unwrap();
        model.drain(&case.drain).unwrap();
        assert_eq!(model.most_notified, permits as usize, "N = {permits}");
        assert_eq!(model.grants, 199);
    }
}

/// The `Index` that picks `i` among `n`.
fn index(i: usize, n: usize) -> Index {
    // `Index::index(n)` scales the raw value into 0..n.
    let mut runner = TestRunner::deterministic();
    loop {
        let ix = any::<Index>().new_tree(&mut runner).unwrap().current();
        if ix.index(n) == i {
            return ix;
        }
    }
}
