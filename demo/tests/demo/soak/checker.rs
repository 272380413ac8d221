//! The soak's independent checker: it parses the workers' JSON lines and
//! the fenced store's log itself, and shares no code with the library, the
//! demo's verdict or the store. It finds:
//!
//! 1. overlapping holds (a writer's with anyone else's) that the lease does
//!    not explain: an overlap is allowed only if, when it began, the
//!    earlier holder was past its lease deadline, proven by a deadline it
//!    reported at or after that moment (the deadline only moves forward, so
//!    such a report bounds it from above);
//! 2. writer fencing tokens that did not strictly increase in grant order,
//!    and nodes granted twice;
//! 3. writes to the store that it accepted with a stale token (smaller than
//!    the newest it had accepted, by its own log), that it refused with a
//!    token that was not stale, or that it refused while the writer's lease
//!    still ran (then a newer writer wrote while this one held the lock);
//!    and writes the workers and the store disagree about;
//! 4. requests without an answer, events out of order, and workers that
//!    exited non-zero without saying why.
//!
//! For a semaphore of N permits ([`Rule::Permits`], workers in
//! [`Mode::Permit`]) check 1 counts instead: when a hold began, at most N
//! workers held, not counting those past their lease deadline (proven as
//! in check 1). [`check_waits`] is the semaphore soak's liveness check:
//! every request granted, in about the order asked and within a bound,
//! unless the run ended or a kill ended it first.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::process::ExitStatus;

use serde_json::Value;

/// How long the soak gives a worker to exit once its stdin is closed.
pub const EXIT_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Read,
    Write,
    /// One of a semaphore's permits (`worker --permits N`).
    Permit,
}

impl Mode {
    pub fn arg(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Write => "write",
            Mode::Permit => "permit",
        }
    }

    pub fn letter(self) -> char {
        match self {
            Mode::Read => 'R',
            Mode::Write => 'W',
            Mode::Permit => 'P',
        }
    }
}

/// What the holds must respect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// A read/write lock: a writer holds alone.
    ReadWrite,
    /// A semaphore: at most this many hold at once.
    Permits(usize),
}

/// `t` relative to `t0`, e.g. `+12.345s`.
pub fn rel(t: u64, t0: u64) -> String {
    let d = t as i128 - t0 as i128;
    format!(
        "{}{:.3}s",
        if d < 0 { "-" } else { "+" },
        d.unsigned_abs() as f64 / 1e6
    )
}

/// What the checker needs of one worker.
#[derive(Debug, Clone)]
pub struct Log {
    pub id: usize,
    pub mode: Mode,
    /// Its name in the store's records.
    pub label: String,
    pub replacement: bool,
    pub lines: Vec<String>,
    pub spawned_us: u64,
    pub go_us: Option<u64>,
    pub killed_us: Option<u64>,
    pub straggler: bool,
    pub exit: Option<ExitStatus>,
    pub stderr_lines: usize,
    pub stderr_tail: Vec<String>,
}

/// One hold: from the grant to the release, the loss, or the kill.
#[derive(Debug, Clone)]
pub struct Hold {
    pub worker: usize,
    pub mode: Mode,
    pub start: u64,
    pub end: u64,
    pub how: &'static str,
    pub token: i64,
    pub node: String,
    /// (report time, lease deadline) of every report whose deadline was
    /// read after its time was taken: `grant`, `suspended`, `resumed`,
    /// `release`, `lost`.
    pub leases: Vec<(u64, u64)>,
}

/// A write a worker reported.
#[derive(Debug, Clone)]
pub struct Write {
    pub worker: usize,
    /// When the store had answered.
    pub t: u64,
    pub token: i64,
    /// The store's record: `<label> <n> <what>`.
    pub record: String,
    pub accepted: bool,
    /// The lease deadline read before the write.
    pub lease: u64,
}

/// An overlap the lease explains.
#[derive(Debug, Clone)]
pub struct Explained {
    /// The earlier holder and the later one.
    pub earlier: usize,
    pub later: usize,
    /// When the later hold began.
    pub from: u64,
    /// The earlier holder's lease deadline (at most).
    pub lease: u64,
}

#[derive(Debug, Default)]
pub struct Verdict {
    pub holds: Vec<Hold>,
    pub violations: Vec<String>,
    /// Errors the workers reported: (worker, time, message).
    pub errors: Vec<(usize, u64, String)>,
    pub lost: usize,
    pub suspended: usize,
    pub resumed: usize,
    /// New sessions after a session ended.
    pub sessions: usize,
    pub cancels: usize,
    pub wants: usize,
    pub explained: Vec<Explained>,
    pub writes: Vec<Write>,
    /// Lines of the store's log accepted and rejected.
    pub store_accepted: usize,
    pub store_rejected: usize,
    /// Writes made after the lease deadline the writer read before them:
    /// (accepted, rejected).
    pub late_writes: (usize, usize),
    /// Session states reported, by name.
    pub states: BTreeMap<String, usize>,
    pub unknown_events: BTreeMap<String, usize>,
    /// (wait in µs, worker, want time): the longest waits for a grant.
    pub waits: Vec<(u64, usize, u64)>,
    /// Times a worker was disconnected from ZooKeeper: (worker, from the
    /// `Disconnected` state, to the next `SyncConnected` or new session, or
    /// the end of its stream).
    pub offline: Vec<(usize, u64, u64)>,
    /// Requests that ended without a grant: (worker, want time, end time,
    /// `cancel`, `error` or `kill -9`).
    pub ungranted: Vec<(usize, u64, u64, &'static str)>,
    /// The most requests made after one and granted before it while it was
    /// connected ([`check_waits`]).
    pub most_passed_over: usize,
    /// The most workers that held at once when a hold began, not counting
    /// those past their lease deadline, and counting them ([`Rule::Permits`]).
    pub most_holding: (usize, usize),
}

/// Where a worker is in its request cycle.
enum At {
    Idle,
    Wanting(u64),
    Holding(Hold),
    Failed,
}

/// Checks the workers' logs and the store's log (its lines, in order).
pub fn check(logs: &[Log], store_log: &[String], t0: u64) -> Verdict {
    check_by(Rule::ReadWrite, logs, store_log, t0)
}

/// [`check`], with the holds judged by `rule`.
pub fn check_by(rule: Rule, logs: &[Log], store_log: &[String], t0: u64) -> Verdict {
    let mut v = Verdict::default();
    for log in logs {
        check_worker(log, t0, &mut v);
    }
    match rule {
        Rule::ReadWrite => check_exclusion(logs, t0, &mut v),
        Rule::Permits(n) => check_permits(logs, n, t0, &mut v),
    }
    check_tokens(&mut v, t0);
    check_store(logs, store_log, t0, &mut v);
    v.waits.sort_unstable_by(|a, b| b.cmp(a));
    v
}

fn check_worker(log: &Log, t0: u64, v: &mut Verdict) {
    let who = format!("worker {}{}", log.mode.letter(), log.id);
    let mut at = At::Idle;
    let mut grants = 0u64;
    let mut done: Option<u64> = None;
    let mut errors = 0;
    let mut offline: Option<u64> = None;
    let problem = |v: &mut Verdict, msg: String| v.violations.push(format!("{who}: {msg}"));
    for (n, line) in log.lines.iter().enumerate() {
        let Ok(e) = serde_json::from_str::<Value>(line) else {
            problem(v, format!("line {n} is not JSON: {line:?}"));
            continue;
        };
        let (Some(t), Some(ev)) = (e["t_us"].as_u64(), e["ev"].as_str()) else {
            problem(v, format!("line {n} has no t_us/ev: {line}"));
            continue;
        };
        if matches!(at, At::Failed) && !matches!(ev, "state" | "done") {
            problem(v, format!("line {n} after its error: {line}"));
        }
        let lease = e["lease_us"].as_u64();
        match ev {
            "ready" => {}
            "session" => {
                v.sessions += 1;
                if let Some(from) = offline.take() {
                    v.offline.push((log.id, from, t));
                }
            }
            "want" => {
                v.wants += 1;
                match at {
                    At::Idle => at = At::Wanting(t),
                    _ => problem(v, format!("line {n}: want while not idle: {line}")),
                }
            }
            "grant" => {
                let (Some(token), Some(node), Some(lease)) = (e["token"].as_i64(), e["node"].as_str(), lease)
                else {
                    problem(v, format!("line {n}: grant without token/node/lease_us: {line}"));
                    continue;
                };
                match at {
                    At::Wanting(w) => {
                        v.waits.push((t.saturating_sub(w), log.id, w));
                        grants += 1;
                        at = At::Holding(Hold {
                            worker: log.id,
                            mode: log.mode,
                            start: t,
                            end: u64::MAX,
                            how: "?",
                            token,
                            node: node.to_owned(),
                            leases: vec![(t, lease)],
                        });
                    }
                    _ => problem(v, format!("line {n}: grant without a want: {line}")),
                }
            }
            "suspended" | "resumed" => {
                let Some(lease) = lease else {
                    problem(v, format!("line {n}: {ev} without lease_us: {line}"));
                    continue;
                };
                if let At::Holding(h) = &mut at {
                    h.leases.push((t, lease));
                    if ev == "suspended" {
                        v.suspended += 1;
                    } else {
                        v.resumed += 1;
                    }
                } else {
                    problem(v, format!("line {n}: {ev} while not holding: {line}"));
                }
            }
            "write" => {
                let (Some(token), Some(wn), Some(what), Some(accepted), Some(lease)) = (
                    e["token"].as_i64(),
                    e["n"].as_u64(),
                    e["what"].as_str(),
                    e["accepted"].as_bool(),
                    lease,
                ) else {
                    problem(
                        v,
                        format!("line {n}: write without token/n/what/accepted/lease_us: {line}"),
                    );
                    continue;
                };
                match &at {
                    At::Holding(h) if h.mode == Mode::Write && h.token == token => {}
                    _ => problem(
                        v,
                        format!("line {n}: a write that is not a writer's, with the token it holds: {line}"),
                    ),
                }
                v.writes.push(Write {
                    worker: log.id,
                    t,
                    token,
                    record: format!("{} {wn} {what}", log.label),
                    accepted,
                    lease,
                });
            }
            "release" | "lost" => {
                let Some(lease) = lease else {
                    problem(v, format!("line {n}: {ev} without lease_us: {line}"));
                    continue;
                };
                if let At::Holding(mut h) = std::mem::replace(&mut at, At::Idle) {
                    h.end = t;
                    h.leases.push((t, lease));
                    if ev == "lost" {
                        v.lost += 1;
                        h.how = "lost";
                    } else {
                        h.how = "release";
                    }
                    v.holds.push(h);
                } else {
                    problem(v, format!("line {n}: {ev} while not holding: {line}"));
                }
            }
            "cancel" => match at {
                At::Wanting(w) => {
                    v.cancels += 1;
                    v.ungranted.push((log.id, w, t, "cancel"));
                    at = At::Idle;
                }
                _ => problem(v, format!("line {n}: cancel while not waiting: {line}")),
            },
            "state" => {
                let state = e["state"].as_str().unwrap_or("?").to_owned();
                match state.as_str() {
                    "Disconnected" => {
                        offline.get_or_insert(t);
                    }
                    "SyncConnected" | "ConnectedReadOnly" => {
                        if let Some(from) = offline.take() {
                            v.offline.push((log.id, from, t));
                        }
                    }
                    _ => {}
                }
                *v.states.entry(state).or_default() += 1;
            }
            "error" => {
                errors += 1;
                let msg = e["msg"].as_str().unwrap_or("(no message)").to_owned();
                v.errors.push((log.id, t, msg));
                if let At::Wanting(w) = at {
                    v.ungranted.push((log.id, w, t, "error"));
                }
                if let At::Holding(mut h) = std::mem::replace(&mut at, At::Failed) {
                    // The worker stops; it no longer acts as the holder.
                    h.end = t;
                    h.how = "error";
                    v.holds.push(h);
                }
            }
            "done" => {
                done = Some(e["grants"].as_u64().unwrap_or(u64::MAX));
                match at {
                    At::Idle | At::Failed => {}
                    _ => problem(v, format!("line {n}: done in the middle of a request: {line}")),
                }
            }
            other => *v.unknown_events.entry(other.to_owned()).or_default() += 1,
        }
    }
    if let Some(from) = offline {
        v.offline.push((log.id, from, u64::MAX));
    }
    // How the stream ended.
    match std::mem::replace(&mut at, At::Idle) {
        At::Idle | At::Failed => {}
        At::Wanting(w) => {
            if let Some(k) = log.killed_us {
                v.ungranted.push((log.id, w, k, "kill -9"));
            } else {
                problem(
                    v,
                    format!(
                        "asked at {} and never got an answer (no grant, cancel or error) before exiting",
                        rel(w, t0)
                    ),
                );
            }
        }
        At::Holding(mut h) => {
            if let Some(k) = log.killed_us {
                h.end = k;
                h.how = "kill -9";
            } else {
                problem(
                    v,
                    format!("exited while holding (granted at {})", rel(h.start, t0)),
                );
                h.how = "exit while holding";
            }
            v.holds.push(h);
        }
    }
    if let Some(g) = done {
        if g != grants {
            problem(
                v,
                format!("reported {g} grants in `done` but {grants} `grant` events"),
            );
        }
    }
    if log.straggler {
        problem(
            v,
            format!("did not exit within {EXIT_WITHIN:?} after its stdin was closed, and was killed"),
        );
    }
    if log.killed_us.is_none() {
        match log.exit {
            None => problem(v, "exit status unknown".to_owned()),
            Some(s) if s.success() => {
                if log.go_us.is_some() && done.is_none() {
                    problem(v, "exited 0 without reporting `done`".to_owned());
                }
                if errors > 0 {
                    problem(v, "reported an error but exited 0".to_owned());
                }
            }
            Some(s) => {
                if errors == 0 {
                    problem(
                        v,
                        format!(
                            "exited with {s} without reporting why; stderr ({} lines) ends:\n    {}",
                            log.stderr_lines,
                            log.stderr_tail.join("\n    ")
                        ),
                    );
                }
            }
        }
    }
}

pub fn describe(h: &Hold, t0: u64) -> String {
    let leases: Vec<String> = h
        .leases
        .iter()
        .map(|&(t, l)| format!("{}→{}", rel(t, t0), rel(l, t0)))
        .collect();
    format!(
        "{}{} hold {}..{} ({}) token {} node {}; lease deadlines reported (at→deadline): {}",
        h.mode.letter(),
        h.worker,
        rel(h.start, t0),
        if h.end == u64::MAX {
            "never".to_owned()
        } else {
            rel(h.end, t0)
        },
        h.how,
        h.token,
        h.node,
        leases.join(", ")
    )
}

/// The events of `workers` between `from` and `to`, for a violation report.
pub fn window(logs: &[Log], workers: &[usize], from: u64, to: u64, t0: u64) -> String {
    let mut out = String::new();
    for log in logs.iter().filter(|l| workers.contains(&l.id)) {
        let _ = writeln!(
            out,
            "      {}{} (spawned {}, go {}, killed {}):",
            log.mode.letter(),
            log.id,
            rel(log.spawned_us, t0),
            log.go_us.map_or("-".to_owned(), |t| rel(t, t0)),
            log.killed_us.map_or("-".to_owned(), |t| rel(t, t0)),
        );
        for line in &log.lines {
            let t = serde_json::from_str::<Value>(line)
                .ok()
                .and_then(|e| e["t_us"].as_u64())
                .unwrap_or(0);
            if (from..=to).contains(&t) {
                let _ = writeln!(out, "        {} {line}", rel(t, t0));
            }
        }
    }
    out
}

/// The earlier holder's lease deadline at `from`, at most: the deadline of
/// its first report at or after `from` (the deadline never moves back).
fn lease_at_most(h: &Hold, from: u64) -> Option<u64> {
    h.leases.iter().find(|&&(t, _)| t >= from).map(|&(_, l)| l)
}

/// Check 1: a writer's hold overlaps another worker's hold only where the
/// earlier holder was past its lease deadline.
fn check_exclusion(logs: &[Log], t0: u64, v: &mut Verdict) {
    let mut holds = v.holds.clone();
    holds.sort_by_key(|h| (h.start, h.worker));
    for (i, a) in holds.iter().enumerate() {
        for b in &holds[i + 1..] {
            if b.start >= a.end {
                break; // sorted by start: no later hold overlaps `a` either
            }
            if a.worker == b.worker || (a.mode == Mode::Read && b.mode == Mode::Read) {
                continue;
            }
            let (from, to) = (b.start, a.end.min(b.end));
            if from >= to {
                continue;
            }
            let lease = lease_at_most(a, from);
            if let Some(lease) = lease.filter(|&l| l <= from) {
                v.explained.push(Explained {
                    earlier: a.worker,
                    later: b.worker,
                    from,
                    lease,
                });
                continue;
            }
            v.violations.push(format!(
                "OVERLAP {}..{} ({} µs), not explained by the lease: the earlier holder {}\n    {}\n    {}\n    events from 6 s before:\n{}",
                rel(from, t0),
                rel(to, t0),
                to - from,
                match lease {
                    Some(l) => format!("reported a lease deadline of {} after it began", rel(l, t0)),
                    None => "reported no lease deadline after it began".to_owned(),
                },
                describe(a, t0),
                describe(b, t0),
                window(
                    logs,
                    &[a.worker, b.worker],
                    from.saturating_sub(6_000_000),
                    to.saturating_add(1_000_000),
                    t0
                )
            ));
        }
    }
}

/// Check 1 for a semaphore of `permits` ([`Rule::Permits`]): when a hold
/// began, at most `permits` workers held, the new holder among them, not
/// counting an earlier holder that was past its lease deadline then, proven
/// by a deadline it reported at or after that moment (as in check 1). The
/// count only grows when a hold begins, so these are all the moments that
/// matter.
fn check_permits(logs: &[Log], permits: usize, t0: u64, v: &mut Verdict) {
    let mut holds = v.holds.clone();
    holds.sort_by_key(|h| (h.start, h.worker));
    let mut active: Vec<&Hold> = Vec::new();
    let mut found = Vec::new();
    for b in &holds {
        let at = b.start;
        active.retain(|a| a.end > at);
        active.push(b);
        let past = |a: &Hold| {
            if std::ptr::eq(a, b) {
                return None;
            }
            lease_at_most(a, at).filter(|&l| l <= at)
        };
        let counted: Vec<&Hold> = active.iter().copied().filter(|a| past(a).is_none()).collect();
        v.most_holding.0 = v.most_holding.0.max(counted.len());
        v.most_holding.1 = v.most_holding.1.max(active.len());
        if counted.len() > permits {
            let mut workers: Vec<usize> = counted.iter().map(|h| h.worker).collect();
            workers.sort_unstable();
            let holders: Vec<String> = counted.iter().map(|h| describe(h, t0)).collect();
            found.push(format!(
                "TOO MANY HOLDERS at {}: {} hold {permits} permits, not counting {} past their lease deadline\n    {}\n    events from 6 s before:\n{}",
                rel(at, t0),
                counted.len(),
                active.len() - counted.len(),
                holders.join("\n    "),
                window(logs, &workers, at.saturating_sub(6_000_000), at.saturating_add(1_000_000), t0)
            ));
        } else if active.len() > permits {
            for a in &active {
                if let Some(lease) = past(a) {
                    v.explained.push(Explained {
                        earlier: a.worker,
                        later: b.worker,
                        from: at,
                        lease,
                    });
                }
            }
        }
    }
    v.violations.extend(found);
}

/// The semaphore soak's liveness check: every request was granted before
/// more than `passed_over` requests of other workers made after it were
/// granted while it was connected (the semaphore grants in the order its
/// nodes were made: a waiter left behind is passed over again and again; a
/// waiter that could not make its node for a while, or learn of its turn,
/// is passed over by those that asked meanwhile), and within `within` (when
/// faults keep every permit taken, nobody is passed over); unless a kill -9
/// ended it, or the end of the run (`stop`, when the workers' stdins were
/// closed) cancelled it first. A request that failed was not granted.
pub fn check_waits(
    v: &mut Verdict,
    stop: u64,
    (within, passed_over): (std::time::Duration, usize),
    t0: u64,
) -> Vec<String> {
    let bound = within.as_micros() as u64;
    // (grant, worker, want) of every granted request, by grant time.
    let mut grants: Vec<(u64, usize, u64)> = v
        .waits
        .iter()
        .map(|&(wait, w, want)| (want + wait, w, want))
        .collect();
    grants.sort_unstable();
    // Grants before `end` to others that asked after `want`.
    let passes = |worker: usize, want: u64, end: u64| {
        let from = grants.partition_point(|&(t, _, _)| t <= want);
        grants[from..]
            .iter()
            .take_while(|&&(t, _, _)| t < end)
            .filter(|&&(_, w, asked)| w != worker && asked > want)
            .filter(|&&(t, _, _)| {
                !v.offline
                    .iter()
                    .any(|&(o, from, to)| o == worker && from <= t && t < to)
            })
            .count()
    };
    let mut found = Vec::new();
    let mut most = 0;
    for &(wait, worker, want) in &v.waits {
        if wait > bound {
            found.push(format!(
                "SLOW GRANT: worker {worker} asked at {} and was granted {:.2}s later, past the {within:?} bound",
                rel(want, t0),
                wait as f64 / 1e6
            ));
        }
        let n = passes(worker, want, want + wait);
        most = most.max(n);
        if n > passed_over {
            found.push(format!(
                "PASSED OVER: worker {worker} asked at {} and was granted {:.2}s later, after {n} grants to others that asked after it (at most {passed_over})",
                rel(want, t0),
                wait as f64 / 1e6
            ));
        }
    }
    for &(worker, want, end, _) in &v.ungranted {
        let n = passes(worker, want, end);
        most = most.max(n);
        if n > passed_over {
            found.push(format!(
                "PASSED OVER: worker {worker} asked at {} and was still waiting at {}, after {n} grants to others that asked after it (at most {passed_over})",
                rel(want, t0),
                rel(end, t0)
            ));
        }
    }
    for &(worker, want, end, how) in &v.ungranted {
        match how {
            "kill -9" => {}
            "cancel" if end >= stop => {
                if stop.saturating_sub(want) > bound {
                    found.push(format!(
                        "NOT GRANTED: worker {worker} asked at {} and was still waiting when the run ended at {}, past the {within:?} bound",
                        rel(want, t0),
                        rel(stop, t0)
                    ));
                }
            }
            _ => found.push(format!(
                "NOT GRANTED: worker {worker} asked at {} and its request ended with {how} at {}, before the end of the run",
                rel(want, t0),
                rel(end, t0)
            )),
        }
    }
    v.most_passed_over = most;
    found
}

/// Check 2: writer tokens strictly increase in grant order; no node is granted twice.
fn check_tokens(v: &mut Verdict, t0: u64) {
    let mut writes: Vec<&Hold> = v.holds.iter().filter(|h| h.mode == Mode::Write).collect();
    writes.sort_by_key(|h| (h.start, h.worker));
    let mut found = Vec::new();
    for pair in writes.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if b.token <= a.token {
            found.push(format!(
                "TOKEN ORDER: writer W{} granted after W{} with token {} <= {}:\n    {}\n    {}",
                b.worker,
                a.worker,
                b.token,
                a.token,
                describe(a, t0),
                describe(b, t0)
            ));
        }
    }
    let mut nodes: HashMap<&str, &Hold> = HashMap::new();
    for h in &v.holds {
        if let Some(first) = nodes.insert(&h.node, h) {
            found.push(format!(
                "node {} granted twice: {} and {}",
                h.node,
                describe(first, t0),
                describe(h, t0)
            ));
        }
    }
    v.violations.extend(found);
}

/// Check 3: the store's log, line by line (`<accepted|rejected> <token>
/// <newest before or -> <record>`), and the workers' reports of their writes.
fn check_store(logs: &[Log], store_log: &[String], t0: u64, v: &mut Verdict) {
    let mut newest: Option<i64> = None;
    // Record -> (line number, token, accepted).
    let mut lines: HashMap<&str, (usize, i64, bool)> = HashMap::new();
    let mut found = Vec::new();
    for (k, line) in store_log.iter().enumerate() {
        let fields: Vec<&str> = line.splitn(4, ' ').collect();
        let parsed = match fields[..] {
            [verdict @ ("accepted" | "rejected"), token, before, record] => token
                .parse::<i64>()
                .ok()
                .zip(match before {
                    "-" => Some(None),
                    n => n.parse::<i64>().ok().map(Some),
                })
                .map(|(token, before)| (verdict == "accepted", token, before, record)),
            _ => None,
        };
        let Some((accepted, token, before, record)) = parsed else {
            found.push(format!("store log line {k} does not parse: {line:?}"));
            continue;
        };
        if before != newest {
            found.push(format!(
                "store log line {k} says the newest token before it was {before:?}, its accepted lines say {newest:?}: {line}"
            ));
        }
        let stale = newest.is_some_and(|n| token < n);
        if accepted {
            v.store_accepted += 1;
            if stale {
                found.push(format!(
                    "STALE WRITE ACCEPTED: store log line {k}: token {token} < newest {newest:?}: {line}"
                ));
            }
            newest = Some(newest.map_or(token, |n| n.max(token)));
        } else {
            v.store_rejected += 1;
            if !stale {
                found.push(format!(
                    "store log line {k} refused token {token}, not older than the newest {newest:?}: {line}"
                ));
            }
        }
        if lines.insert(record, (k, token, accepted)).is_some() {
            found.push(format!("store log line {k}: record {record:?} written twice"));
        }
    }
    let mut reported = HashMap::new();
    for w in &v.writes {
        reported.insert(w.record.as_str(), w);
        let late = w.lease < w.t;
        match (late, w.accepted) {
            (true, true) => v.late_writes.0 += 1,
            (true, false) => v.late_writes.1 += 1,
            _ => {}
        }
        match lines.get(w.record.as_str()) {
            None => found.push(format!(
                "worker {} reported the write {:?} at {}, which is not in the store's log",
                w.worker,
                w.record,
                rel(w.t, t0)
            )),
            Some(&(k, token, accepted)) if token != w.token || accepted != w.accepted => found.push(format!(
                "worker {} reported the write {:?} with token {} {}, the store's log line {k} says token {token} {}",
                w.worker,
                w.record,
                w.token,
                if w.accepted { "accepted" } else { "rejected" },
                if accepted { "accepted" } else { "rejected" },
            )),
            Some(_) => {}
        }
        // Its lease ran until after the store answered (it was read before
        // the write, and never moves back), yet the store had a newer
        // token: a newer writer wrote while this one held the lock.
        if !w.accepted && w.lease > w.t {
            found.push(format!(
                "REFUSED WHILE LEASED: worker {}'s write {:?} with token {} was refused at {} though its lease ran until {}",
                w.worker,
                w.record,
                w.token,
                rel(w.t, t0),
                rel(w.lease, t0)
            ));
        }
    }
    // A worker killed -9 may have written without living to report it:
    // its last write only.
    for (record, &(k, _, _)) in &lines {
        if reported.contains_key(record) {
            continue;
        }
        let mut parts = record.splitn(3, ' ');
        let (label, n) = (parts.next(), parts.next().and_then(|n| n.parse::<u64>().ok()));
        let killed_last = logs.iter().any(|l| {
            Some(l.label.as_str()) == label
                && l.killed_us.is_some()
                && n.is_some_and(|n| !v.writes.iter().any(|w| w.worker == l.id && w.record_n() > n))
        });
        if !killed_last {
            found.push(format!(
                "store log line {k}: record {record:?} was written, and no worker reported it"
            ));
        }
    }
    v.violations.extend(found);
}

impl Write {
    /// The write number of the record.
    fn record_n(&self) -> u64 {
        self.record
            .split(' ')
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}

/// Periods between `from` and `to` in which nobody held the lock, longest first.
pub fn stalls(holds: &[Hold], from: u64, to: u64) -> Vec<(u64, u64)> {
    let mut spans: Vec<(u64, u64)> = holds.iter().map(|h| (h.start, h.end)).collect();
    spans.sort_unstable();
    let mut gaps = Vec::new();
    let mut covered = from;
    for (start, end) in spans {
        if start > covered {
            gaps.push((covered, start.min(to)));
        }
        covered = covered.max(end);
    }
    if covered < to {
        gaps.push((covered, to));
    }
    gaps.retain(|(a, b)| b > a);
    gaps.sort_unstable_by_key(|(a, b)| std::cmp::Reverse(b - a));
    gaps
}

/// Whether worker `id` held the lock at `t`, by its events.
pub fn holding_at(v: &Verdict, id: usize, t: u64) -> bool {
    v.holds
        .iter()
        .any(|h| h.worker == id && h.start <= t && t < h.end)
}

/// A recorded run: the workers' logs, the store's log, and time 0.
pub struct Recorded {
    pub logs: Vec<Log>,
    pub store_log: Vec<String>,
    pub t0: u64,
}

/// Reads a run kept by the soak (`ZK_RWLOCK_SOAK_KEEP`): `workers.jsonl`,
/// `events.jsonl` and `store.log` in `dir`.
pub fn load_recorded(dir: &std::path::Path) -> Result<Recorded, String> {
    use std::os::unix::process::ExitStatusExt;
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name)).map_err(|e| format!("{}: {e}", dir.join(name).display()))
    };
    let json = |line: &str| serde_json::from_str::<Value>(line).map_err(|e| format!("{line:?}: {e}"));
    let mut t0 = 0;
    let mut logs = Vec::new();
    let mut by_tag = HashMap::new();
    for line in read("workers.jsonl")?.lines() {
        let w = json(line)?;
        if let Some(t) = w["t0_us"].as_u64() {
            t0 = t;
            continue;
        }
        let (Some(tag), Some(id), Some(mode), Some(label)) = (
            w["worker"].as_str(),
            w["id"].as_u64(),
            w["mode"].as_str(),
            w["label"].as_str(),
        ) else {
            return Err(format!("workers.jsonl: {line}"));
        };
        by_tag.insert(tag.to_owned(), logs.len());
        logs.push(Log {
            id: id as usize,
            mode: match mode {
                "write" => Mode::Write,
                "permit" => Mode::Permit,
                _ => Mode::Read,
            },
            label: label.to_owned(),
            replacement: w["replacement"].as_bool().unwrap_or(false),
            lines: Vec::new(),
            spawned_us: w["spawned_us"].as_u64().unwrap_or(0),
            go_us: w["go_us"].as_u64(),
            killed_us: w["killed_us"].as_u64(),
            straggler: w["straggler"].as_bool().unwrap_or(false),
            exit: match (w["exit_code"].as_i64(), w["exit_signal"].as_i64()) {
                (Some(code), _) => Some(ExitStatus::from_raw((code as i32) << 8)),
                (None, Some(signal)) => Some(ExitStatus::from_raw(signal as i32)),
                (None, None) => None,
            },
            stderr_lines: 0,
            stderr_tail: Vec::new(),
        });
    }
    for line in read("events.jsonl")?.lines() {
        let mut e = json(line)?;
        let tag = e["worker"].as_str().unwrap_or("").to_owned();
        let Some(&i) = by_tag.get(&tag) else {
            return Err(format!("events.jsonl: no worker {tag:?}: {line}"));
        };
        let original = match e["raw"].as_str() {
            Some(raw) => raw.to_owned(),
            None => {
                if let Some(map) = e.as_object_mut() {
                    map.remove("worker");
                    map.remove("rel");
                }
                e.to_string()
            }
        };
        logs[i].lines.push(original);
    }
    let store_log = read("store.log")?.lines().map(str::to_owned).collect();
    Ok(Recorded { logs, store_log, t0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic worker log; `code` is its exit code (ignored when killed).
    fn synthetic(id: usize, mode: Mode, lines: &[&str], killed_us: Option<u64>, code: i32) -> Log {
        use std::os::unix::process::ExitStatusExt;
        Log {
            id,
            mode,
            label: format!("w{id}"),
            replacement: false,
            lines: lines.iter().map(|l| (*l).to_owned()).collect(),
            spawned_us: 0,
            go_us: Some(1),
            killed_us,
            straggler: false,
            exit: Some(ExitStatus::from_raw(code << 8)),
            stderr_lines: 0,
            stderr_tail: Vec::new(),
        }
    }

    /// `want` at `w`, `grant` at `g` with `token`, then `end` (`release`/`lost`)
    /// at `e`; the leases reported run 10 ms past each report.
    fn cycle(w: u64, g: u64, token: i64, end: &str, e: u64) -> Vec<String> {
        vec![
            format!(r#"{{"t_us":{w},"ev":"want"}}"#),
            format!(
                r#"{{"t_us":{g},"ev":"grant","token":{token},"node":"/l/n{token}-{g}","lease_us":{},"hold_us":100}}"#,
                g + 10_000
            ),
            format!(r#"{{"t_us":{e},"ev":"{end}","lease_us":{}}}"#, e + 10_000),
        ]
    }

    fn lines(parts: &[Vec<String>], tail: &[&str]) -> Vec<String> {
        parts
            .iter()
            .flatten()
            .cloned()
            .chain(tail.iter().map(|s| (*s).to_owned()))
            .collect()
    }

    /// A synthetic worker: id, mode, stdout lines, kill time, exit code.
    type Case = (usize, Mode, Vec<String>, Option<u64>, i32);

    fn logs_of(cases: Vec<Case>) -> Vec<Log> {
        cases
            .into_iter()
            .map(|(id, mode, l, killed, code)| {
                let refs: Vec<&str> = l.iter().map(String::as_str).collect();
                synthetic(id, mode, &refs, killed, code)
            })
            .collect()
    }

    fn run_check(cases: Vec<Case>) -> Verdict {
        check(&logs_of(cases), &[], 0)
    }

    fn says(v: &Verdict, what: &str) -> bool {
        v.violations.iter().any(|m| m.contains(what))
    }

    #[test]
    fn the_checker_accepts_a_clean_history() {
        let done = |n: u64, t: u64| format!(r#"{{"t_us":{t},"ev":"done","grants":{n}}}"#);
        let v = run_check(vec![
            (
                0,
                Mode::Write,
                lines(&[cycle(10, 100, 1, "release", 200)], &[&done(1, 900)]),
                None,
                0,
            ),
            (
                1,
                Mode::Read,
                lines(&[cycle(10, 300, 2, "release", 400)], &[&done(1, 900)]),
                None,
                0,
            ),
            (
                2,
                Mode::Read,
                lines(&[cycle(10, 350, 3, "release", 450)], &[&done(1, 900)]),
                None,
                0,
            ),
            // Killed while holding: its hold ends at the kill, before the next grant.
            (
                3,
                Mode::Write,
                cycle(460, 500, 4, "release", 0)[..2].to_vec(),
                Some(600),
                0,
            ),
            (
                4,
                Mode::Write,
                lines(&[cycle(470, 5000, 9, "release", 5100)], &[&done(1, 9000)]),
                None,
                0,
            ),
            // Failed with a reason and exit 1; cancelled at the end with exit 0.
            (
                5,
                Mode::Read,
                lines(
                    &[],
                    &[
                        r#"{"t_us":5200,"ev":"want"}"#,
                        r#"{"t_us":5300,"ev":"error","msg":"acquire failed: session expired"}"#,
                    ],
                ),
                None,
                1,
            ),
            (
                6,
                Mode::Read,
                lines(
                    &[],
                    &[
                        r#"{"t_us":5200,"ev":"want"}"#,
                        r#"{"t_us":9000,"ev":"cancel"}"#,
                        &done(0, 9001),
                    ],
                ),
                None,
                0,
            ),
        ]);
        assert!(v.violations.is_empty(), "{:#?}", v.violations);
        assert_eq!(v.holds.len(), 5);
        let killed = v
            .holds
            .iter()
            .find(|h| h.worker == 3)
            .expect("the killed worker's hold");
        assert_eq!((killed.end, killed.how), (600, "kill -9"));
        assert_eq!((v.errors.len(), v.cancels, v.wants), (1, 1, 7));
    }

    #[test]
    fn the_checker_finds_overlaps_token_regressions_and_silent_failures() {
        // A reader granted while a writer holds.
        let v = run_check(vec![
            (0, Mode::Write, cycle(10, 100, 1, "release", 300), None, 0),
            (1, Mode::Read, cycle(10, 200, 2, "release", 250), None, 0),
            (2, Mode::Read, cycle(10, 260, 3, "release", 270), None, 0),
        ]);
        let overlaps: Vec<&String> = v.violations.iter().filter(|m| m.starts_with("OVERLAP")).collect();
        assert_eq!(overlaps.len(), 2, "{:#?}", v.violations);
        // A kill ends a hold at the kill, not before.
        let v = run_check(vec![
            (
                0,
                Mode::Write,
                cycle(10, 100, 1, "release", 0)[..2].to_vec(),
                Some(600),
                0,
            ),
            (1, Mode::Write, cycle(10, 500, 2, "release", 700), None, 0),
        ]);
        assert!(says(&v, "OVERLAP"), "{:#?}", v.violations);
        // A later writer with a smaller token; a node granted twice.
        let v = run_check(vec![
            (0, Mode::Write, cycle(10, 100, 7, "release", 110), None, 0),
            (1, Mode::Write, cycle(10, 200, 5, "release", 210), None, 0),
        ]);
        assert!(says(&v, "TOKEN ORDER"), "{:#?}", v.violations);
        let same = |g: u64| {
            let mut c = cycle(g, g + 1, g as i64, "release", g + 2);
            c[1] = c[1].replace(&format!("/l/n{g}-{}", g + 1), "/l/same");
            c
        };
        let v = run_check(vec![
            (0, Mode::Read, same(10), None, 0),
            (1, Mode::Read, same(20), None, 0),
        ]);
        assert!(says(&v, "granted twice"), "{:#?}", v.violations);
        // An unanswered request, a silent non-zero exit, garbage on stdout.
        let v = run_check(vec![
            (
                0,
                Mode::Read,
                vec![r#"{"t_us":10,"ev":"want"}"#.to_owned()],
                None,
                0,
            ),
            (1, Mode::Read, Vec::new(), None, 101),
            (2, Mode::Read, vec!["thread 'main' panicked".to_owned()], None, 0),
        ]);
        assert!(says(&v, "never got an answer"), "{:#?}", v.violations);
        assert!(says(&v, "without reporting why"), "{:#?}", v.violations);
        assert!(says(&v, "is not JSON"), "{:#?}", v.violations);
    }

    /// A writer paused in its hold: granted at 100 with a lease to 4100,
    /// then nothing until it resumes at 6000 and learns it lost the lock.
    fn paused_writer(lost_lease: u64) -> Vec<String> {
        vec![
            r#"{"t_us":10,"ev":"want"}"#.to_owned(),
            r#"{"t_us":100,"ev":"grant","token":1,"node":"/l/a","lease_us":4100,"hold_us":50}"#.to_owned(),
            format!(r#"{{"t_us":6000,"ev":"lost","lease_us":{lost_lease}}}"#),
            DONE.to_owned(),
        ]
    }

    /// The end of a worker's run with one grant.
    const DONE: &str = r#"{"t_us":9999,"ev":"done","grants":1}"#;

    /// A writer's hold from `cycle`, and the end of its run.
    fn one(w: u64, g: u64, token: i64, e: u64) -> Vec<String> {
        lines(&[cycle(w, g, token, "release", e)], &[DONE])
    }

    #[test]
    fn an_overlap_is_allowed_only_past_the_earlier_holders_lease() {
        // The next writer is granted at 4500, after the paused one's lease.
        let v = run_check(vec![
            (0, Mode::Write, paused_writer(4100), None, 0),
            (1, Mode::Write, one(20, 4500, 2, 4600), None, 0),
        ]);
        assert!(v.violations.is_empty(), "{:#?}", v.violations);
        assert_eq!((v.explained.len(), v.lost), (1, 1));
        assert_eq!((v.explained[0].from, v.explained[0].lease), (4500, 4100));
        // Its lease, as reported after the overlap began, ran past the grant.
        let v = run_check(vec![
            (0, Mode::Write, paused_writer(4600), None, 0),
            (1, Mode::Write, cycle(20, 4500, 2, "release", 4600), None, 0),
        ]);
        assert!(says(&v, "OVERLAP"), "{:#?}", v.violations);
        assert!(
            says(&v, "reported a lease deadline of +0.005s after it began"),
            "{:#?}",
            v.violations
        );
        // The grant's own lease (4100) is no proof: a report before the
        // overlap began says nothing of the deadline at its start.
        let mut no_end = paused_writer(0);
        no_end.truncate(2);
        let v = run_check(vec![
            (0, Mode::Write, no_end, Some(9000), 0),
            (1, Mode::Write, cycle(20, 4500, 2, "release", 4600), None, 0),
        ]);
        assert!(
            says(&v, "reported no lease deadline after it began"),
            "{:#?}",
            v.violations
        );
    }

    fn permits(n: usize, cases: Vec<Case>) -> Verdict {
        check_by(Rule::Permits(n), &logs_of(cases), &[], 0)
    }

    #[test]
    fn a_semaphore_allows_n_holders_and_finds_one_more() {
        // Three hold together from 300 to 400; the fourth is granted at 450.
        let three = || {
            vec![
                (0, Mode::Permit, one(10, 100, 1, 400), None, 0),
                (1, Mode::Permit, one(20, 200, 2, 450), None, 0),
                (2, Mode::Permit, one(30, 300, 3, 500), None, 0),
                (3, Mode::Permit, one(40, 450, 4, 600), None, 0),
            ]
        };
        let v = permits(3, three());
        assert!(v.violations.is_empty(), "{:#?}", v.violations);
        assert_eq!(v.most_holding, (3, 3));
        // Tokens of holders that hold together need not grow in grant order.
        let mut swapped = three();
        swapped[1].2 = one(20, 200, 9, 450);
        assert!(permits(3, swapped).violations.is_empty());
        // One permit fewer: the three together are one too many.
        let v = permits(2, three());
        assert_eq!(v.violations.len(), 1, "{:#?}", v.violations);
        assert!(
            v.violations[0].starts_with("TOO MANY HOLDERS at +0.000s: 3 hold 2 permits"),
            "{:#?}",
            v.violations
        );
        // A fourth granted at 350, while the three hold.
        let mut four = three();
        four[3].2 = one(40, 350, 4, 600);
        let v = permits(3, four);
        assert!(says(&v, "TOO MANY HOLDERS"), "{:#?}", v.violations);
        assert_eq!(v.most_holding, (4, 4));
        // A hold ends at the kill, not before.
        let killed_at = |k: u64| {
            vec![
                (
                    0,
                    Mode::Permit,
                    cycle(10, 100, 1, "release", 0)[..2].to_vec(),
                    Some(k),
                    0,
                ),
                (1, Mode::Permit, one(20, 200, 2, 600), None, 0),
                (2, Mode::Permit, one(30, 450, 3, 700), None, 0),
            ]
        };
        let v = permits(2, killed_at(440));
        assert!(v.violations.is_empty(), "{:#?}", v.violations);
        assert!(says(&permits(2, killed_at(500)), "TOO MANY HOLDERS"));
    }

    #[test]
    fn a_semaphore_holder_past_its_lease_does_not_count() {
        // The paused holder's lease ends at 4100; two more hold from 4200,
        // a third is granted at 4500: four by their own intervals, three
        // counting only those whose lease ran.
        let others = || {
            vec![
                (1, Mode::Permit, one(20, 4200, 2, 5000), None, 0),
                (2, Mode::Permit, one(30, 4300, 3, 5000), None, 0),
                (3, Mode::Permit, one(40, 4500, 4, 5000), None, 0),
            ]
        };
        let mut cases = vec![(0, Mode::Permit, paused_writer(4100), None, 0)];
        cases.extend(others());
        let v = permits(3, cases);
        assert!(v.violations.is_empty(), "{:#?}", v.violations);
        assert_eq!(v.most_holding, (3, 4));
        assert_eq!(v.explained.len(), 1);
        assert_eq!((v.explained[0].earlier, v.explained[0].from), (0, 4500));
        // Its lease, reported after the fourth grant, ran past it.
        let mut cases = vec![(0, Mode::Permit, paused_writer(4600), None, 0)];
        cases.extend(others());
        assert!(says(&permits(3, cases), ": 4 hold 3 permits"));
    }

    #[test]
    fn every_request_must_be_granted_in_time() {
        let want = |t: u64| format!(r#"{{"t_us":{t},"ev":"want"}}"#);
        let cancel = |t: u64| format!(r#"{{"t_us":{t},"ev":"cancel"}}"#);
        let done = |n: u64, t: u64| format!(r#"{{"t_us":{t},"ev":"done","grants":{n}}}"#);
        let stop = 10_000_000;
        let within = (std::time::Duration::from_secs(5), 3);
        let logs = logs_of(vec![
            // Granted after 2 s; cancelled at the end after 1 s: fine.
            (
                0,
                Mode::Permit,
                lines(
                    &[cycle(1_000_000, 3_000_000, 1, "release", 3_100_000)],
                    &[&want(9_000_000), &cancel(stop + 5), &done(1, stop + 9)],
                ),
                None,
                0,
            ),
            // Killed while waiting: fine.
            (1, Mode::Permit, vec![want(1_000_000)], Some(2_000_000), 0),
        ]);
        let mut v = check_by(Rule::Permits(3), &logs, &[], 0);
        assert!(v.violations.is_empty(), "{:#?}", v.violations);
        assert!(check_waits(&mut v, stop, within, 0).is_empty());

        let logs = logs_of(vec![
            // Granted after 6 s.
            (
                0,
                Mode::Permit,
                lines(
                    &[cycle(1_000_000, 7_000_000, 1, "release", 7_100_000)],
                    &[&done(1, stop + 9)],
                ),
                None,
                0,
            ),
            // Still waiting at the end, for 6 s.
            (
                1,
                Mode::Permit,
                lines(&[], &[&want(4_000_000), &cancel(stop + 5), &done(0, stop + 9)]),
                None,
                0,
            ),
            // Failed while waiting.
            (
                2,
                Mode::Permit,
                lines(
                    &[],
                    &[
                        &want(1_000_000),
                        r#"{"t_us":1500000,"ev":"error","msg":"acquire failed: session expired"}"#,
                    ],
                ),
                None,
                1,
            ),
            // Cancelled before the end of the run.
            (
                3,
                Mode::Permit,
                lines(&[], &[&want(1_000_000), &cancel(2_000_000), &done(0, stop + 9)]),
                None,
                0,
            ),
        ]);
        let mut v = check_by(Rule::Permits(3), &logs, &[], 0);
        let found = check_waits(&mut v, stop, within, 0);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(found[0].starts_with("SLOW GRANT: worker 0 asked at +1.000s and was granted 6.00s later"));
        assert!(found
            .iter()
            .any(|m| m.contains("worker 1 asked at +4.000s and was still waiting when the run ended")));
        assert!(found
            .iter()
            .any(|m| m.contains("worker 2 asked at +1.000s and its request ended with error")));
        assert!(found
            .iter()
            .any(|m| m.contains("worker 3 asked at +1.000s and its request ended with cancel")));

        // Passed over: four grants to others that asked after worker 0, while it waits.
        let mut cases: Vec<Case> = vec![(
            0,
            Mode::Permit,
            lines(&[cycle(1_000, 9_000, 1, "release", 9_100)], &[&done(1, stop + 9)]),
            None,
            0,
        )];
        for (i, g) in [2_000u64, 3_000, 4_000, 5_000].into_iter().enumerate() {
            cases.push((i + 1, Mode::Permit, one(g - 500, g, g as i64, g + 100), None, 0));
        }
        let mut v = check_by(Rule::Permits(3), &logs_of(cases.clone()), &[], 0);
        let found = check_waits(&mut v, stop, within, 0);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].starts_with(
            "PASSED OVER: worker 0 asked at +0.001s and was granted 0.01s later, after 4 grants"
        ));
        // Not while it was disconnected.
        let mut offline = cases.clone();
        offline[0].2.insert(
            1,
            r#"{"t_us":2500,"ev":"state","state":"Disconnected"}"#.to_owned(),
        );
        offline[0].2.insert(
            2,
            r#"{"t_us":3500,"ev":"state","state":"SyncConnected"}"#.to_owned(),
        );
        let mut v = check_by(Rule::Permits(3), &logs_of(offline), &[], 0);
        assert_eq!(v.offline, vec![(0, 2500, 3500)]);
        assert!(check_waits(&mut v, stop, within, 0).is_empty());
        // Three are fine; so are grants to requests made before it.
        cases.truncate(4);
        cases.push((4, Mode::Permit, one(500, 5_000, 5_000, 5_100), None, 0));
        let mut v = check_by(Rule::Permits(3), &logs_of(cases), &[], 0);
        assert!(check_waits(&mut v, stop, within, 0).is_empty());
    }

    fn write(t: u64, token: i64, n: u64, what: &str, accepted: bool, lease: u64) -> String {
        format!(
            r#"{{"t_us":{t},"ev":"write","token":{token},"n":{n},"what":"{what}","accepted":{accepted},"lease_us":{lease}}}"#
        )
    }

    #[test]
    fn the_store_log_is_checked_against_itself_and_the_workers() {
        // w0 (token 1) pauses after its first write; w1 (token 2) writes;
        // w0 resumes and its stale write is refused.
        let w0 = vec![
            r#"{"t_us":10,"ev":"want"}"#.to_owned(),
            r#"{"t_us":100,"ev":"grant","token":1,"node":"/l/a","lease_us":4100,"hold_us":50}"#.to_owned(),
            write(110, 1, 1, "begin", true, 4100),
            write(6010, 1, 2, "end", false, 4100),
            r#"{"t_us":6020,"ev":"lost","lease_us":4100}"#.to_owned(),
            DONE.to_owned(),
        ];
        let w1 = vec![
            r#"{"t_us":20,"ev":"want"}"#.to_owned(),
            r#"{"t_us":4500,"ev":"grant","token":2,"node":"/l/b","lease_us":8500,"hold_us":50}"#.to_owned(),
            write(4510, 2, 1, "begin", true, 8500),
            r#"{"t_us":4600,"ev":"release","lease_us":8600}"#.to_owned(),
            DONE.to_owned(),
        ];
        let store: Vec<String> = [
            "accepted 1 - w0 1 begin",
            "accepted 2 1 w1 1 begin",
            "rejected 1 2 w0 2 end",
        ]
        .map(str::to_owned)
        .to_vec();
        let logs = logs_of(vec![
            (0, Mode::Write, w0.clone(), None, 0),
            (1, Mode::Write, w1.clone(), None, 0),
        ]);
        let v = check(&logs, &store, 0);
        assert!(v.violations.is_empty(), "{:#?}", v.violations);
        assert_eq!(
            (v.store_accepted, v.store_rejected, v.late_writes),
            (2, 1, (0, 1))
        );

        // A store that accepted the stale write.
        let mut bad = store.clone();
        bad[2] = "accepted 1 2 w0 2 end".to_owned();
        let v = check(&logs, &bad, 0);
        assert!(says(&v, "STALE WRITE ACCEPTED"), "{:#?}", v.violations);
        assert!(
            says(&v, "the store's log line 2 says token 1 accepted"),
            "{:#?}",
            v.violations
        );
        // A store that refused a write that was not stale.
        let mut bad = store.clone();
        bad[1] = "rejected 2 1 w1 1 begin".to_owned();
        let v = check(&logs, &bad, 0);
        assert!(says(&v, "not older than the newest"), "{:#?}", v.violations);
        // A log whose `newest before` disagrees with its accepted lines, and
        // a line no worker reported.
        let mut bad = store.clone();
        bad.push("accepted 3 1 w1 9 end".to_owned());
        let v = check(&logs, &bad, 0);
        assert!(says(&v, "its accepted lines say Some(2)"), "{:#?}", v.violations);
        assert!(says(&v, "no worker reported it"), "{:#?}", v.violations);
        // A refusal while the writer's lease still ran.
        let mut w0 = w0;
        w0[3] = write(6010, 1, 2, "end", false, 7000);
        let logs = logs_of(vec![(0, Mode::Write, w0, None, 0), (1, Mode::Write, w1, None, 0)]);
        let v = check(&logs, &store, 0);
        assert!(says(&v, "REFUSED WHILE LEASED"), "{:#?}", v.violations);
    }

    /// The directory of the recorded run (see [`recorded_run`]).
    fn recorded_dir() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/demo/soak/recorded")
    }

    /// Sets `field` of worker `worker`'s event line that satisfies `which`.
    fn edit(logs: &mut [Log], worker: usize, which: impl Fn(&Value) -> bool, field: &str, value: u64) {
        let log = logs.iter_mut().find(|l| l.id == worker).expect("the worker");
        let line = log
            .lines
            .iter_mut()
            .find(|l| serde_json::from_str::<Value>(l).is_ok_and(|e| which(&e)))
            .expect("the event to edit");
        let mut e: Value = serde_json::from_str(line).expect("JSON");
        e[field] = value.into();
        *line = e.to_string();
    }

    /// The checker on the events of a real soak run, kept in
    /// `tests/demo/soak/recorded/` (re-record with `ZK_RWLOCK_SOAK_KEEP=dir
    /// ZK_RWLOCK_SOAK_SECS=1 cargo test -p zk-rwlock-demo --test demo --
    /// --nocapture soak_readers`, then copy `workers.jsonl`, `events.jsonl` and
    /// `store.log` of `dir`; `faults.txt` is there for the reader): clean as
    /// recorded, and each break is found.
    #[test]
    fn recorded_run() {
        let run = load_recorded(&recorded_dir()).unwrap_or_else(|e| panic!("{e}"));
        let v = check(&run.logs, &run.store_log, run.t0);
        assert!(v.violations.is_empty(), "{:#?}", v.violations);
        assert!(
            v.holds.len() > 20 && v.lost >= 1 && v.suspended >= 1,
            "{} holds",
            v.holds.len()
        );
        assert!(
            !v.explained.is_empty(),
            "the recording has an overlap the lease explains"
        );
        assert!(v.store_rejected >= 1, "the recording has a stale write refused");

        // 1. One grant moved back into the previous writer's hold.
        let mut writes: Vec<&Hold> = v.holds.iter().filter(|h| h.mode == Mode::Write).collect();
        writes.sort_by_key(|h| h.start);
        let (a, b) = writes
            .windows(2)
            .map(|p| (p[0], p[1]))
            .find(|(a, b)| a.worker != b.worker && a.how == "release" && a.end - a.start > 2_000)
            .expect("two writers in a row");
        let mut logs = run.logs.clone();
        let (start, shifted) = (b.start, a.end - 1_000);
        edit(
            &mut logs,
            b.worker,
            |e| e["ev"] == "grant" && e["t_us"] == start,
            "t_us",
            shifted,
        );
        let broken = check(&logs, &run.store_log, run.t0);
        let overlap = format!("OVERLAP {}..{}", rel(shifted, run.t0), rel(a.end, run.t0));
        assert!(
            broken.violations.iter().any(|m| m.starts_with(&overlap)),
            "{overlap} not found in {:#?}",
            broken.violations
        );

        // 2. The overlap the lease explained, with the earlier holder's
        // lease reported to run past the later grant.
        let x = &v.explained[0];
        let earlier = v
            .holds
            .iter()
            .find(|h| h.worker == x.earlier && h.start < x.from && x.from < h.end)
            .expect("the earlier hold");
        let (report, _) = *earlier
            .leases
            .iter()
            .find(|(t, _)| *t >= x.from)
            .expect("its report");
        let mut logs = run.logs.clone();
        edit(
            &mut logs,
            x.earlier,
            |e| e["t_us"] == report && e["lease_us"].is_u64(),
            "lease_us",
            x.from + 1_000_000,
        );
        let broken = check(&logs, &run.store_log, run.t0);
        assert!(
            broken.violations.iter().any(|m| m.starts_with("OVERLAP")),
            "{:#?}",
            broken.violations
        );

        // 3. A refused stale write, accepted in the store's log.
        let mut store = run.store_log.clone();
        let k = store
            .iter()
            .position(|l| l.starts_with("rejected "))
            .expect("a refusal");
        store[k] = store[k].replacen("rejected", "accepted", 1);
        let broken = check(&run.logs, &store, run.t0);
        assert!(
            broken
                .violations
                .iter()
                .any(|m| m.starts_with("STALE WRITE ACCEPTED")),
            "{:#?}",
            broken.violations
        );
    }
}
