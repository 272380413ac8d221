//! From events to what happened: hold and wait intervals per worker, the
//! totals, and the safety verdict. Pure: no clock, no I/O.

use zk_rwlock::Mode;

use super::event::{Event, Kind};

/// A worker as the parent knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worker {
    /// Row label: `W1`, `R3`, ...
    pub label: String,
    /// What it asks for.
    pub mode: Mode,
}

/// How a hold ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldEnd {
    /// The worker was about to release it.
    Released,
    /// The worker was told it lost the lock.
    Lost,
    /// The worker process exited while holding it.
    Exited,
    /// No end was reported: still held at the end of the run.
    Open,
}

/// One interval during which a worker held the lock, as it saw it: from
/// right after the acquire returned to right before it called release (or
/// to the moment it learned that the lock was lost).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// Index of the worker.
    pub worker: usize,
    /// Read or write.
    pub mode: Mode,
    /// Grant time (µs, `CLOCK_MONOTONIC`).
    pub start: u64,
    /// Release (or loss) time; the end of the run for open holds.
    pub end: u64,
    /// The fencing token.
    pub token: i64,
    /// The contender node.
    pub node: String,
    /// How it ended.
    pub ended: HoldEnd,
    /// For a hold that ended lost: the lease deadline the worker reported
    /// then. No one else could be granted a conflicting lock before it;
    /// after it, someone may have been while the worker still believed it
    /// held (until `end`).
    pub lost_lease: Option<u64>,
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitEnd {
    /// With a grant.
    Granted,
    /// The run ended first (or the worker failed).
    GaveUp,
    /// Still waiting.
    Open,
}

/// One interval from asking for the lock to getting it (or giving up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    /// Index of the worker.
    pub worker: usize,
    /// When it asked.
    pub start: u64,
    /// When it got the lock, gave up, or the end of the run.
    pub end: u64,
    /// How it ended.
    pub ended: WaitEnd,
}

/// A moment worth marking on a worker's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkKind {
    /// The worker lost its hold.
    Lost,
    /// The worker reported an error.
    Error(String),
    /// The worker's session expired or closed.
    SessionEnded(String),
}

/// A marked moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// Index of the worker.
    pub worker: usize,
    /// When.
    pub t: u64,
    /// What.
    pub kind: MarkKind,
}

/// A time span of one worker: a disconnection from ZooKeeper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Index of the worker.
    pub worker: usize,
    /// From.
    pub start: u64,
    /// To (the end of the run if it never reconnected).
    pub end: u64,
    /// Whether it reconnected.
    pub closed: bool,
}

/// A time span during which a worker held the lock without a connection:
/// it stopped its work and waited for the connection or the lease deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suspension {
    /// Index of the worker.
    pub worker: usize,
    /// When it noticed the connection was lost.
    pub start: u64,
    /// When it was resumed, lost the lock, or the hold ended otherwise.
    pub end: u64,
    /// Its lease deadline meanwhile.
    pub lease: u64,
    /// Whether the connection came back within the lease.
    pub resumed: bool,
}

/// A write to the fenced store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreWrite {
    /// Index of the worker.
    pub worker: usize,
    /// When the store answered.
    pub t: u64,
    /// The token written with.
    pub token: i64,
    /// Whether the store accepted it.
    pub accepted: bool,
}

/// Everything the timeline, the SVG and the verdict need.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// The workers, by index.
    pub workers: Vec<Worker>,
    /// Hold intervals, in the order they started per worker.
    pub holds: Vec<Hold>,
    /// Wait intervals.
    pub waits: Vec<Wait>,
    /// Lost / error marks.
    pub marks: Vec<Mark>,
    /// Disconnections.
    pub offline: Vec<Span>,
    /// Holds without a connection.
    pub suspensions: Vec<Suspension>,
    /// Writes to the fenced store.
    pub writes: Vec<StoreWrite>,
    /// The workers take one of this many permits of a semaphore instead of
    /// the read/write lock (`--permits`): their holds count in the band
    /// of holders at once, and [`check_permits`] judges them.
    pub permits: Option<u32>,
}

impl Model {
    /// Builds the intervals from `events`, taken per worker in time order
    /// (events of one time in the order given); what is still open is closed
    /// at `end`.
    pub fn build(workers: &[Worker], events: &[Event], end: u64) -> Model {
        let mut ordered: Vec<&Event> = events.iter().collect();
        ordered.sort_by_key(|e| (e.worker, e.t_us));
        #[derive(Default, Clone)]
        struct Open {
            want: Option<u64>,
            hold: Option<(u64, i64, String)>,
            offline: Option<u64>,
            /// Start and lease deadline of a suspension.
            suspended: Option<(u64, u64)>,
        }
        let mut model = Model {
            workers: workers.to_vec(),
            ..Model::default()
        };
        let mut open = vec![Open::default(); workers.len()];
        for ev in ordered {
            let Some(state) = open.get_mut(ev.worker) else {
                continue;
            };
            let w = ev.worker;
            let t = ev.t_us;
            let mode = workers[w].mode;
            let close_wait = |state: &mut Open, model: &mut Model, ended: WaitEnd| {
                if let Some(start) = state.want.take() {
                    model.waits.push(Wait {
                        worker: w,
                        start,
                        end: t.max(start),
                        ended,
                    });
                }
            };
            let close_suspension = |state: &mut Open, model: &mut Model, resumed: bool| {
                if let Some((start, lease)) = state.suspended.take() {
                    model.suspensions.push(Suspension {
                        worker: w,
                        start,
                        end: t.max(start),
                        lease,
                        resumed,
                    });
                }
            };
            let close_hold =
                |state: &mut Open, model: &mut Model, ended: HoldEnd, lost_lease: Option<u64>| {
                    close_suspension(state, model, false);
                    if let Some((start, token, node)) = state.hold.take() {
                        model.holds.push(Hold {
                            worker: w,
                            mode,
                            start,
                            end: t.max(start),
                            token,
                            node,
                            ended,
                            lost_lease,
                        });
                    }
                };
            match &ev.kind {
                Kind::Ready { .. } | Kind::Done { .. } => {}
                // A new session after the last one ended: connected again.
                Kind::Session { .. } => {
                    if let Some(start) = state.offline.take() {
                        model.offline.push(Span {
                            worker: w,
                            start,
                            end: t.max(start),
                            closed: true,
                        });
                    }
                }
                Kind::Want => {
                    close_wait(state, &mut model, WaitEnd::GaveUp);
                    state.want = Some(t);
                }
                Kind::Grant { token, node, .. } => {
                    close_wait(state, &mut model, WaitEnd::Granted);
                    close_hold(state, &mut model, HoldEnd::Open, None);
                    state.hold = Some((t, *token, node.clone()));
                }
                Kind::Write { token, accepted, .. } => model.writes.push(StoreWrite {
                    worker: w,
                    t,
                    token: *token,
                    accepted: *accepted,
                }),
                Kind::Suspended { lease_us } => {
                    if state.hold.is_some() && state.suspended.is_none() {
                        state.suspended = Some((t, *lease_us));
                    }
                }
                Kind::Resumed { .. } => close_suspension(state, &mut model, true),
                Kind::Release { .. } => close_hold(state, &mut model, HoldEnd::Released, None),
                Kind::Exit => {
                    close_wait(state, &mut model, WaitEnd::GaveUp);
                    close_hold(state, &mut model, HoldEnd::Exited, None);
                    if let Some(start) = state.offline.take() {
                        model.offline.push(Span {
                            worker: w,
                            start,
                            end: t.max(start),
                            closed: false,
                        });
                    }
                }
                Kind::Lost { lease_us } => {
                    close_hold(state, &mut model, HoldEnd::Lost, Some(*lease_us));
                    model.marks.push(Mark {
                        worker: w,
                        t,
                        kind: MarkKind::Lost,
                    });
                }
                Kind::Cancel => close_wait(state, &mut model, WaitEnd::GaveUp),
                Kind::Error { msg } => {
                    close_wait(state, &mut model, WaitEnd::GaveUp);
                    model.marks.push(Mark {
                        worker: w,
                        t,
                        kind: MarkKind::Error(msg.clone()),
                    });
                }
                Kind::State { state: s } => match s.as_str() {
                    "Disconnected" => {
                        state.offline.get_or_insert(t);
                    }
                    "SyncConnected" | "ConnectedReadOnly" => {
                        if let Some(start) = state.offline.take() {
                            model.offline.push(Span {
                                worker: w,
                                start,
                                end: t.max(start),
                                closed: true,
                            });
                        }
                    }
                    "Expired" | "AuthFailed" => model.marks.push(Mark {
                        worker: w,
                        t,
                        kind: MarkKind::SessionEnded(s.clone()),
                    }),
                    _ => {}
                },
            }
        }
        for (w, state) in open.into_iter().enumerate() {
            if let Some(start) = state.want {
                model.waits.push(Wait {
                    worker: w,
                    start,
                    end: end.max(start),
                    ended: WaitEnd::Open,
                });
            }
            if let Some((start, lease)) = state.suspended {
                model.suspensions.push(Suspension {
                    worker: w,
                    start,
                    end: end.max(start),
                    lease,
                    resumed: false,
                });
            }
            if let Some((start, token, node)) = state.hold {
                model.holds.push(Hold {
                    worker: w,
                    mode: workers[w].mode,
                    start,
                    end: end.max(start),
                    token,
                    node,
                    ended: HoldEnd::Open,
                    lost_lease: None,
                });
            }
            if let Some(start) = state.offline {
                model.offline.push(Span {
                    worker: w,
                    start,
                    end: end.max(start),
                    closed: false,
                });
            }
        }
        model
    }

    /// The largest number of readers holding at once.
    pub fn max_concurrent_readers(&self) -> usize {
        self.max_concurrent(|h| h.mode == Mode::Read)
    }

    /// Whether the holds drawn in the band of holders at once are all of
    /// them (`--permits`), not only the readers'.
    pub fn counts_permits(&self) -> bool {
        self.permits.is_some()
    }

    /// Whether there is a band of holders at once to draw: readers, or permits.
    pub fn has_band(&self) -> bool {
        self.counts_permits() || self.workers.iter().any(|w| w.mode == Mode::Read)
    }

    /// Whether `h` counts in the band: a reader's hold, or any hold of a permit.
    pub fn in_band(&self, h: &Hold) -> bool {
        self.counts_permits() || h.mode == Mode::Read
    }

    /// The largest number of holds in the band at once, by the holders' own
    /// intervals.
    pub fn max_in_band(&self) -> usize {
        self.max_concurrent(|h| self.in_band(h))
    }

    /// The largest number of the holds that satisfy `counted` at once.
    fn max_concurrent(&self, counted: impl Fn(&Hold) -> bool) -> usize {
        let mut points: Vec<(u64, i32)> = Vec::new();
        for h in self.holds.iter().filter(|h| counted(h)) {
            points.push((h.start, 1));
            points.push((h.end, -1));
        }
        // At equal times, ends before starts: touching intervals are not concurrent.
        points.sort_unstable();
        let (mut now, mut max) = (0i32, 0i32);
        for (_, d) in points {
            now += d;
            max = max.max(now);
        }
        max as usize
    }
}

/// Hand-off latencies (µs): for each grant that had to wait for a release,
/// the time from the last release (or loss) before it to the grant.
pub fn handoffs(model: &Model) -> Vec<u64> {
    let mut ends: Vec<u64> = model.holds.iter().map(|h| h.end).collect();
    ends.sort_unstable();
    let mut out = Vec::new();
    for w in model.waits.iter().filter(|w| w.ended == WaitEnd::Granted) {
        // The last release at or before the grant.
        let i = ends.partition_point(|&e| e <= w.end);
        if i == 0 {
            continue;
        }
        let released = ends[i - 1];
        if released > w.start {
            out.push(w.end - released);
        }
    }
    out.sort_unstable();
    out
}

/// A breach of the lock's promises, found in the events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A writer's hold overlapped another worker's hold.
    Overlap {
        /// The earlier-starting hold.
        a: Hold,
        /// The later-starting hold.
        b: Hold,
    },
    /// A writer was granted a token not larger than the writer granted before it.
    Token {
        /// The earlier write grant.
        before: Hold,
        /// The later write grant, with a token that is not larger.
        after: Hold,
    },
    /// More workers held permits than there are (`--permits`) when a hold began.
    TooMany {
        /// When the last of them was granted.
        at: u64,
        /// The permits.
        permits: u32,
        /// The holds, the new one last.
        holds: Vec<Hold>,
    },
    /// A worker asked and was never granted during the run (`--permits`).
    NotGranted {
        /// The worker.
        worker: usize,
        /// When it first asked.
        asked: u64,
    },
    /// Contender nodes left in the directory after the run (`--permits`).
    LeftBehind {
        /// Their names.
        nodes: Vec<String>,
    },
}

/// Checks the holds: (a) no write hold overlaps any hold of another worker,
/// unless the earlier hold ended lost and the later one began after the
/// lease deadline the loser reported (the lock's promise ends there; the
/// store's fencing covers the rest); (b) writer fencing tokens strictly
/// increase in grant order.
pub fn check(holds: &[Hold]) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut by_start: Vec<&Hold> = holds.iter().collect();
    by_start.sort_by_key(|h| (h.start, h.end, h.worker));
    for (i, a) in by_start.iter().enumerate() {
        for b in &by_start[i + 1..] {
            if b.start >= a.end {
                break;
            }
            let overlap = a.start < b.end && b.start < a.end;
            let involves_writer = a.mode == Mode::Write || b.mode == Mode::Write;
            let past_lease = a.lost_lease.is_some_and(|lease| lease <= b.start);
            if overlap && involves_writer && a.worker != b.worker && !past_lease {
                violations.push(Violation::Overlap {
                    a: (*a).clone(),
                    b: (*b).clone(),
                });
            }
        }
    }
    let writes: Vec<&&Hold> = by_start.iter().filter(|h| h.mode == Mode::Write).collect();
    for pair in writes.windows(2) {
        if pair[1].token <= pair[0].token {
            violations.push(Violation::Token {
                before: (**pair[0]).clone(),
                after: (**pair[1]).clone(),
            });
        }
    }
    violations
}

/// Checks the holds of a semaphore of `permits` (`--permits`): (a) when a
/// hold began, at most `permits` workers held, the new holder among them,
/// not counting an earlier holder that ended lost and reported then a
/// lease deadline at or before that moment (as [`check`] allows an
/// overlap); (b) every worker that asked was granted at least once. The
/// count only grows when a hold begins, so these are all the moments that
/// matter. (That no node is left in the directory is the report's to check:
/// [`Violation::LeftBehind`].)
pub fn check_permits(model: &Model, permits: u32) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut by_start: Vec<&Hold> = model.holds.iter().collect();
    by_start.sort_by_key(|h| (h.start, h.worker));
    let mut active: Vec<&Hold> = Vec::new();
    for b in &by_start {
        let at = b.start;
        active.retain(|a| a.end > at);
        let holding: Vec<&Hold> = active
            .iter()
            .copied()
            .filter(|a| a.lost_lease.is_none_or(|lease| lease > at))
            .chain(std::iter::once(*b))
            .collect();
        if holding.len() > permits as usize {
            violations.push(Violation::TooMany {
                at,
                permits,
                holds: holding.into_iter().cloned().collect(),
            });
        }
        active.push(b);
    }
    for (w, _) in model.workers.iter().enumerate() {
        let asked = model
            .waits
            .iter()
            .filter(|x| x.worker == w)
            .map(|x| x.start)
            .min();
        if let Some(asked) = asked {
            if !model.holds.iter().any(|h| h.worker == w) {
                violations.push(Violation::NotGranted { worker: w, asked });
            }
        }
    }
    violations
}

/// A test history: one writer granted at 0 with a lease to 4 s for a 12 s
/// hold, suspended at 2 s (lease 5 s), lost at its lease deadline; the
/// model over `span_us`.
#[cfg(test)]
pub(crate) fn suspended_writer(span_us: u64) -> Model {
    use super::event::{Event, Kind};
    let workers = vec![Worker {
        label: "W1".into(),
        mode: Mode::Write,
    }];
    let ev = |t_us, kind| Event {
        worker: 0,
        t_us,
        kind,
    };
    let events = vec![
        ev(0, Kind::Want),
        ev(
            0,
            Kind::Grant {
                token: 1,
                node: "/l/n".into(),
                lease_us: 4_000_000,
                hold_us: 12_000_000,
            },
        ),
        ev(2_000_000, Kind::Suspended { lease_us: 5_000_000 }),
        ev(5_000_000, Kind::Lost { lease_us: 5_000_000 }),
    ];
    Model::build(&workers, &events, span_us)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workers() -> Vec<Worker> {
        vec![
            Worker {
                label: "W1".into(),
                mode: Mode::Write,
            },
            Worker {
                label: "W2".into(),
                mode: Mode::Write,
            },
            Worker {
                label: "R1".into(),
                mode: Mode::Read,
            },
            Worker {
                label: "R2".into(),
                mode: Mode::Read,
            },
        ]
    }

    fn ev(worker: usize, t_us: u64, kind: Kind) -> Event {
        Event { worker, t_us, kind }
    }

    fn grant(worker: usize, t: u64, token: i64) -> Event {
        ev(
            worker,
            t,
            Kind::Grant {
                token,
                node: format!("/l/n-{token}"),
                lease_us: t + 4_000,
                hold_us: 100,
            },
        )
    }

    fn release(worker: usize, t: u64) -> Event {
        ev(worker, t, Kind::Release { lease_us: t + 4_000 })
    }

    /// want/grant/release of one hold.
    fn hold(out: &mut Vec<Event>, worker: usize, want: u64, start: u64, end: u64, token: i64) {
        out.push(ev(worker, want, Kind::Want));
        out.push(grant(worker, start, token));
        out.push(release(worker, end));
    }

    /// Writers alone, readers together, tokens increasing.
    fn clean() -> Vec<Event> {
        let mut e = Vec::new();
        hold(&mut e, 0, 0, 10, 100, 1);
        hold(&mut e, 2, 5, 110, 200, 2);
        hold(&mut e, 3, 5, 120, 250, 3);
        hold(&mut e, 1, 20, 260, 300, 4);
        hold(&mut e, 0, 150, 301, 400, 5);
        hold(&mut e, 2, 390, 401, 500, 6);
        e
    }

    #[test]
    fn clean_run_passes() {
        let model = Model::build(&workers(), &clean(), 1_000);
        assert_eq!(model.holds.len(), 6);
        assert_eq!(model.waits.len(), 6);
        assert!(model.waits.iter().all(|w| w.ended == WaitEnd::Granted));
        assert_eq!(check(&model.holds), Vec::new());
        assert_eq!(model.max_concurrent_readers(), 2);
    }

    #[test]
    fn writer_overlapping_a_reader_is_flagged() {
        let mut e = clean();
        // R2 reads from 90 to 110 as well: W1 still holds until 100.
        e.retain(|e| e.worker != 3);
        hold(&mut e, 3, 80, 90, 110, 7);
        let model = Model::build(&workers(), &e, 1_000);
        let v = check(&model.holds);
        assert_eq!(v.len(), 1, "{v:?}");
        match &v[0] {
            Violation::Overlap { a, b } => {
                assert_eq!((a.worker, a.start, a.end), (0, 10, 100));
                assert_eq!((b.worker, b.start, b.end), (3, 90, 110));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn two_writers_overlapping_are_flagged_and_touching_is_not() {
        let mut e = Vec::new();
        hold(&mut e, 0, 0, 10, 100, 1);
        hold(&mut e, 1, 0, 100, 200, 2); // touches: fine
        hold(&mut e, 0, 150, 199, 300, 3); // overlaps W2 by 1 µs
        let model = Model::build(&workers(), &e, 1_000);
        let v = check(&model.holds);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(matches!(&v[0], Violation::Overlap { a, b } if a.worker == 1 && b.worker == 0));
    }

    #[test]
    fn readers_may_overlap_each_other() {
        let mut e = Vec::new();
        hold(&mut e, 2, 0, 10, 100, 1);
        hold(&mut e, 3, 0, 20, 90, 2);
        let model = Model::build(&workers(), &e, 1_000);
        assert!(check(&model.holds).is_empty());
    }

    #[test]
    fn decreasing_writer_tokens_are_flagged() {
        let mut e = Vec::new();
        hold(&mut e, 0, 0, 10, 100, 5);
        hold(&mut e, 2, 0, 110, 150, 6); // a reader's token does not count
        hold(&mut e, 1, 0, 200, 300, 4); // smaller than W1's 5
        hold(&mut e, 0, 0, 400, 500, 4); // equal: not strictly larger
        let model = Model::build(&workers(), &e, 1_000);
        let v = check(&model.holds);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(matches!(&v[0], Violation::Token { before, after } if before.token == 5 && after.token == 4));
        assert!(
            matches!(&v[1], Violation::Token { before, after } if before.start == 200 && after.start == 400)
        );
    }

    #[test]
    fn a_lost_hold_counts_until_the_loss_or_its_lease_deadline() {
        let mut e = vec![
            ev(0, 0, Kind::Want),
            grant(0, 10, 1),
            ev(0, 50, Kind::Lost { lease_us: 45 }),
            // W1 never releases (it lost the lock at 50); W2 gets it at 60.
        ];
        hold(&mut e, 1, 20, 60, 100, 2);
        let model = Model::build(&workers(), &e, 1_000);
        assert!(check(&model.holds).is_empty());
        assert_eq!(
            model.holds.iter().find(|h| h.worker == 0).unwrap().ended,
            HoldEnd::Lost
        );
        assert_eq!(model.marks.len(), 1);

        // Lost after the other writer was granted, whose grant came after
        // the loser's lease deadline: the lock kept its promise.
        let mut e = vec![
            ev(0, 0, Kind::Want),
            grant(0, 10, 1),
            ev(0, 70, Kind::Lost { lease_us: 55 }),
        ];
        hold(&mut e, 1, 20, 60, 100, 2);
        let model = Model::build(&workers(), &e, 1_000);
        assert_eq!(model.holds[0].lost_lease, Some(55));
        assert!(check(&model.holds).is_empty());
        // ... but granted before that deadline: an overlap.
        let mut e = vec![
            ev(0, 0, Kind::Want),
            grant(0, 10, 1),
            ev(0, 70, Kind::Lost { lease_us: 65 }),
        ];
        hold(&mut e, 1, 20, 60, 100, 2);
        let model = Model::build(&workers(), &e, 1_000);
        assert_eq!(check(&model.holds).len(), 1);
    }

    #[test]
    fn suspensions_and_writes() {
        let e = vec![
            ev(0, 0, Kind::Want),
            grant(0, 10, 1),
            ev(0, 20, Kind::Suspended { lease_us: 90 }),
            ev(0, 30, Kind::Resumed { lease_us: 120 }),
            ev(0, 40, Kind::Suspended { lease_us: 100 }),
            ev(
                0,
                45,
                Kind::Write {
                    token: 1,
                    n: 1,
                    what: "end".into(),
                    accepted: false,
                    lease_us: 100,
                },
            ),
            ev(0, 100, Kind::Lost { lease_us: 100 }),
        ];
        let model = Model::build(&workers(), &e, 1_000);
        assert_eq!(
            model.suspensions,
            vec![
                Suspension {
                    worker: 0,
                    start: 20,
                    end: 30,
                    lease: 90,
                    resumed: true
                },
                Suspension {
                    worker: 0,
                    start: 40,
                    end: 100,
                    lease: 100,
                    resumed: false
                },
            ]
        );
        assert_eq!(
            model.writes,
            vec![StoreWrite {
                worker: 0,
                t: 45,
                token: 1,
                accepted: false
            }]
        );
    }

    #[test]
    fn an_unreleased_hold_lasts_to_the_end_or_the_exit() {
        let mut e = vec![ev(0, 0, Kind::Want), grant(0, 10, 1)];
        hold(&mut e, 2, 20, 900, 950, 2);
        let model = Model::build(&workers(), &e, 1_000);
        let w1 = model.holds.iter().find(|h| h.worker == 0).unwrap();
        assert_eq!((w1.end, w1.ended), (1_000, HoldEnd::Open));
        assert_eq!(check(&model.holds).len(), 1);

        // The process died at 500: it held nothing after that.
        e.push(ev(0, 500, Kind::Exit));
        let model = Model::build(&workers(), &e, 1_000);
        let w1 = model.holds.iter().find(|h| h.worker == 0).unwrap();
        assert_eq!((w1.end, w1.ended), (500, HoldEnd::Exited));
        assert!(check(&model.holds).is_empty());
    }

    #[test]
    fn waits_and_disconnections() {
        let e = vec![
            ev(2, 0, Kind::Want),
            ev(
                2,
                5,
                Kind::State {
                    state: "Disconnected".into(),
                },
            ),
            ev(
                2,
                15,
                Kind::State {
                    state: "SyncConnected".into(),
                },
            ),
            ev(2, 30, Kind::Cancel),
            ev(3, 40, Kind::Want),
        ];
        let model = Model::build(&workers(), &e, 100);
        assert_eq!(
            model.waits,
            vec![
                Wait {
                    worker: 2,
                    start: 0,
                    end: 30,
                    ended: WaitEnd::GaveUp
                },
                Wait {
                    worker: 3,
                    start: 40,
                    end: 100,
                    ended: WaitEnd::Open
                },
            ]
        );
        assert_eq!(
            model.offline,
            vec![Span {
                worker: 2,
                start: 5,
                end: 15,
                closed: true
            }]
        );
    }

    #[test]
    fn permits_allow_n_holders_at_once_and_no_more() {
        // Four permit holders (all four workers hold exclusive guards).
        let mut e = Vec::new();
        hold(&mut e, 0, 0, 10, 100, 1);
        hold(&mut e, 1, 0, 20, 110, 2);
        hold(&mut e, 2, 0, 30, 120, 3);
        hold(&mut e, 3, 0, 100, 200, 4); // touches the first: three at once
        let model = Model::build(&workers(), &e, 1_000);
        assert_eq!(check_permits(&model, 3), Vec::new());
        // Two permits: the third hold is one too many, at 30 and at 100.
        let v = check_permits(&model, 2);
        assert_eq!(v.len(), 2, "{v:?}");
        match &v[0] {
            Violation::TooMany { at, permits, holds } => {
                assert_eq!((*at, *permits), (30, 2));
                let who: Vec<usize> = holds.iter().map(|h| h.worker).collect();
                assert_eq!(who, vec![0, 1, 2]);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(&v[1], Violation::TooMany { at: 100, .. }));
        // A holder lost at its lease deadline (50) does not count after it.
        let mut e = vec![
            ev(0, 0, Kind::Want),
            grant(0, 10, 1),
            ev(0, 70, Kind::Lost { lease_us: 50 }),
        ];
        hold(&mut e, 1, 0, 20, 110, 2);
        hold(&mut e, 2, 0, 60, 120, 3);
        let model = Model::build(&workers(), &e, 1_000);
        assert_eq!(check_permits(&model, 2), Vec::new());
        // ... but it does before it.
        e.retain(|x| x.worker != 2);
        hold(&mut e, 2, 0, 40, 120, 3);
        let model = Model::build(&workers(), &e, 1_000);
        assert!(matches!(
            check_permits(&model, 2)[..],
            [Violation::TooMany { at: 40, .. }]
        ));
    }

    #[test]
    fn permits_must_be_granted_to_everyone_who_asked() {
        let mut e = Vec::new();
        hold(&mut e, 0, 0, 10, 100, 1);
        e.push(ev(1, 5, Kind::Want));
        e.push(ev(1, 900, Kind::Cancel));
        let model = Model::build(&workers(), &e, 1_000);
        assert_eq!(
            check_permits(&model, 1),
            vec![Violation::NotGranted { worker: 1, asked: 5 }]
        );
    }

    #[test]
    fn handoff_latency_counts_grants_that_waited_for_a_release() {
        let mut e = Vec::new();
        hold(&mut e, 0, 0, 10, 100, 1); // free: no hand-off
        hold(&mut e, 2, 50, 103, 200, 2); // waited for W1's release at 100
        hold(&mut e, 3, 150, 160, 210, 3); // joined R1 at once: no release in its wait
        let model = Model::build(&workers(), &e, 1_000);
        assert_eq!(handoffs(&model), vec![3]);
    }
}
