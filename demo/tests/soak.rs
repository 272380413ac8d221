//! Soak: at least eight `zk-rwlock-demo worker` processes, readers and
//! writers, take one lock at random on a real 3-member ensemble for a bounded
//! time, each through its own session and through one TCP proxy per member,
//! while a seeded fault loop restarts members (never more than one down),
//! kills the leader, cuts every connection through a proxy and kill -9s
//! workers (replacing them). Afterwards an independent checker - it parses
//! the workers' JSON lines itself and shares no code with the library or the
//! demo's verdict - verifies that
//!
//! 1. no writer's hold overlapped anyone else's hold (unless one of the two
//!    had been told it lost the lock before the overlap began),
//! 2. writer fencing tokens strictly increased in grant order,
//! 3. every request was granted, cancelled at the end of the run, failed
//!    with a reported reason, or ended by a kill; and every worker exited 0
//!    or said why not,
//! 4. no contender node is left once every worker has stopped and the
//!    sessions of the killed ones have expired.
//!
//! `ZK_RWLOCK_SOAK_SECS` sets the length of the faulted run (default 30 s);
//! `ZK_RWLOCK_SOAK_SEED` replays a run's fault schedule and worker seeds
//! (the timing of a real run is never exactly reproducible).

use zk_rwlock_testkit as support;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::proxy::Proxy;
use zk_rwlock::zk;
use zk_rwlock_testkit::launcher::ZkCluster;

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock-demo");
/// Length of the faulted run in seconds (default [`DEFAULT_SECS`]).
const SECS_ENV: &str = "ZK_RWLOCK_SOAK_SECS";
/// Seed of the fault schedule and of the workers' hold and think times.
const SEED_ENV: &str = "ZK_RWLOCK_SOAK_SEED";
/// Keep the events, the fault log and the servers' logs in this directory
/// (they are always kept, in a temporary directory, when the soak fails).
const KEEP_ENV: &str = "ZK_RWLOCK_SOAK_KEEP";
const DEFAULT_SECS: u64 = 30;
/// Worker processes kept alive during the run.
const WORKERS: usize = 8;
/// Of which writers.
const WRITERS: usize = 3;
/// Ensemble members (one proxy each).
const MEMBERS: usize = 3;
/// Pause between two faults (ms), drawn uniformly: part of the workload.
const FAULT_GAP_MS: (u64, u64) = (300, 2500);
/// How long a restarted or killed member stays down (ms).
const DOWNTIME_MS: (u64, u64) = (0, 1500);
/// Deadline for the workers to connect and report `ready`.
const READY_WITHIN: Duration = Duration::from_secs(60);
/// Deadline for the workers to exit once their stdin is closed.
const EXIT_WITHIN: Duration = Duration::from_secs(30);
/// Deadline for the lock directory to empty once every worker is gone (a
/// killed worker's nodes go when its session expires: at most 4 s here).
const DRAIN_WITHIN: Duration = Duration::from_secs(30);
/// How often the supervisor and the end-of-run waits poll.
const POLL: Duration = Duration::from_millis(20);
/// Lines of a worker's stderr kept for reports.
const STDERR_TAIL: usize = 20;

// ---------------------------------------------------------------- helpers

/// Microseconds of `CLOCK_MONOTONIC`, the clock the workers stamp events with.
fn now_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec that outlives the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    (ts.tv_sec as u64) * 1_000_000 + (ts.tv_nsec as u64) / 1_000
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

// The soak's seeded generator.
use zk_rwlock_testkit::SplitMix64 as Rng;

/// A duration of `lo..=hi` milliseconds.
fn ms(rng: &mut Rng, (lo, hi): (u64, u64)) -> Duration {
    Duration::from_millis(lo + rng.below(hi - lo + 1))
}

/// `t` relative to `t0`, e.g. `+12.345s`.
fn rel(t: u64, t0: u64) -> String {
    let d = t as i128 - t0 as i128;
    format!(
        "{}{:.3}s",
        if d < 0 { "-" } else { "+" },
        d.unsigned_abs() as f64 / 1e6
    )
}

// ---------------------------------------------------------------- workers

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Read,
    Write,
}

impl Mode {
    fn arg(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Write => "write",
        }
    }

    fn letter(self) -> char {
        match self {
            Mode::Read => 'R',
            Mode::Write => 'W',
        }
    }
}

/// One worker process and what the test knows about it.
struct Worker {
    id: usize,
    mode: Mode,
    replacement: bool,
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its stdout, line by line, in the order it wrote them.
    lines: Arc<Mutex<Vec<String>>>,
    /// Number of stderr lines and the last few of them.
    stderr: Arc<Mutex<(usize, VecDeque<String>)>>,
    ready: Arc<AtomicBool>,
    spawned_us: u64,
    go_us: Option<u64>,
    /// When the test kill -9ed it (taken once the process was reaped).
    killed_us: Option<u64>,
    /// It did not stop in time after its stdin was closed and was killed.
    straggler: bool,
    exit: Option<ExitStatus>,
    exit_us: Option<u64>,
    pipes: Vec<JoinHandle<()>>,
}

/// All workers, past and present.
struct Fleet {
    connect: String,
    path: String,
    worker_secs: u64,
    rng: Rng,
    workers: Vec<Worker>,
    /// Set at the end of the run: no more `go`, no more replacements.
    stopping: bool,
    problems: Vec<String>,
}

impl Fleet {
    fn spawn(&mut self, mode: Mode, replacement: bool) {
        let id = self.workers.len();
        let seed = self.rng.next_u64() % 1_000_000_007;
        let spawned = Command::new(BIN)
            .args(["worker", "--connect", &self.connect, "--path", &self.path])
            .args(["--mode", mode.arg()])
            .args(["--duration", &format!("{}s", self.worker_secs)])
            .args(["--seed", &seed.to_string()])
            .args(["--label", &format!("soak{id}")])
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                self.problems
                    .push(format!("cannot start worker {id} ({BIN} worker): {e}"));
                return;
            }
        };
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new((0, VecDeque::new())));
        let ready = Arc::new(AtomicBool::new(false));
        let mut pipes = Vec::new();
        if let Some(out) = child.stdout.take() {
            let (lines, ready) = (lines.clone(), ready.clone());
            pipes.push(thread::spawn(move || {
                for line in byte_lines(out) {
                    let is_ready =
                        serde_json::from_str::<Value>(&line).is_ok_and(|v| v["ev"].as_str() == Some("ready"));
                    lock(&lines).push(line);
                    if is_ready {
                        ready.store(true, Ordering::SeqCst);
                    }
                }
            }));
        }
        if let Some(err) = child.stderr.take() {
            let stderr = stderr.clone();
            pipes.push(thread::spawn(move || {
                for line in byte_lines(err) {
                    let mut s = lock(&stderr);
                    s.0 += 1;
                    s.1.push_back(line);
                    if s.1.len() > STDERR_TAIL {
                        s.1.pop_front();
                    }
                }
            }));
        }
        self.workers.push(Worker {
            id,
            mode,
            replacement,
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            ready,
            spawned_us: now_us(),
            go_us: None,
            killed_us: None,
            straggler: false,
            exit: None,
            exit_us: None,
            pipes,
        });
    }

    /// Sends `go` to workers that are ready, and notices exits.
    fn poll(&mut self) {
        let stopping = self.stopping;
        for w in &mut self.workers {
            if w.exit.is_some() {
                continue;
            }
            if !stopping && w.go_us.is_none() && w.ready.load(Ordering::SeqCst) {
                if let Some(stdin) = w.stdin.as_mut() {
                    // A failed write means the worker is gone: try_wait sees it.
                    let _ = stdin.write_all(b"go\n").and_then(|()| stdin.flush());
                    w.go_us = Some(now_us());
                }
            }
            match w.child.try_wait() {
                Ok(Some(status)) => {
                    w.exit = Some(status);
                    w.exit_us = Some(now_us());
                }
                Ok(None) => {}
                Err(e) => self
                    .problems
                    .push(format!("cannot wait for worker {}: {e}", w.id)),
            }
        }
    }

    fn alive(&self) -> impl Iterator<Item = &Worker> {
        self.workers.iter().filter(|w| w.exit.is_none())
    }

    /// Starts replacements until [`WORKERS`] are alive, [`WRITERS`] of them writers.
    fn top_up(&mut self) {
        if self.stopping {
            return;
        }
        let mut alive = self.alive().count();
        let mut writers = self.alive().filter(|w| w.mode == Mode::Write).count();
        while alive < WORKERS {
            let mode = if writers < WRITERS {
                writers += 1;
                Mode::Write
            } else {
                Mode::Read
            };
            self.spawn(mode, true);
            alive += 1;
        }
    }

    /// Kill -9s worker `i` and reaps it; returns the kill time.
    fn kill(&mut self, i: usize) -> u64 {
        let w = &mut self.workers[i];
        let _ = w.child.kill();
        let status = w.child.wait();
        let t = now_us();
        w.killed_us = Some(t);
        w.exit = status.ok();
        w.exit_us = Some(t);
        w.stdin = None;
        t
    }
}

/// Lines of a pipe, lossily decoded, until EOF.
fn byte_lines(pipe: impl Read) -> impl Iterator<Item = String> {
    BufReader::new(pipe)
        .split(b'\n')
        .map_while(Result::ok)
        .map(|l| String::from_utf8_lossy(&l).trim_end_matches('\r').to_owned())
}

/// Kills every worker still running when dropped (also on panic), and
/// stops the supervisor.
struct Cleanup {
    fleet: Arc<Mutex<Fleet>>,
    stop: Arc<AtomicBool>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let mut fleet = lock(&self.fleet);
        fleet.stopping = true;
        for w in &mut fleet.workers {
            w.stdin = None;
            if w.exit.is_none() {
                let _ = w.child.kill();
                w.exit = w.child.wait().ok();
                w.exit_us = Some(now_us());
            }
        }
    }
}

// ---------------------------------------------------------------- faults

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum FaultKind {
    Restart,
    LeaderKill,
    Cut,
    WorkerKill,
}

const KINDS: [FaultKind; 4] = [
    FaultKind::Restart,
    FaultKind::LeaderKill,
    FaultKind::Cut,
    FaultKind::WorkerKill,
];

struct Fault {
    kind: FaultKind,
    start_us: u64,
    end_us: u64,
    what: String,
}

fn pick_kind(rng: &mut Rng, n: usize, first: &[FaultKind; 4]) -> FaultKind {
    // Every kind once, in a random order, then weighted at random.
    if n < first.len() {
        return first[n];
    }
    match rng.below(100) {
        0..=29 => FaultKind::Restart,
        30..=44 => FaultKind::LeaderKill,
        45..=84 => FaultKind::Cut,
        _ => FaultKind::WorkerKill,
    }
}

fn leader_of(zk: &ZkCluster) -> usize {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(l) = zk.leader() {
            return l;
        }
        assert!(
            Instant::now() < deadline,
            "no member of the ensemble says it leads within 30 s"
        );
        thread::sleep(POLL);
    }
}

/// Injects one fault of `kind`; returns what was done.
fn inject(
    kind: FaultKind,
    rng: &mut Rng,
    zk: &mut ZkCluster,
    proxies: &[Proxy],
    fleet: &Mutex<Fleet>,
) -> String {
    match kind {
        FaultKind::Restart => {
            let i = rng.below(MEMBERS as u64) as usize;
            let was = zk.leader();
            let down = ms(rng, DOWNTIME_MS);
            zk.stop(i).unwrap_or_else(|e| panic!("stop member {i}: {e}"));
            thread::sleep(down);
            let t = Instant::now();
            zk.start(i).unwrap_or_else(|e| panic!("start member {i}: {e}"));
            format!(
                "restart member {i}{} (down {down:?} + {:.1}s to rejoin)",
                if was == Some(i) { " (the leader)" } else { "" },
                t.elapsed().as_secs_f64()
            )
        }
        FaultKind::LeaderKill => {
            let l = leader_of(zk);
            let down = ms(rng, DOWNTIME_MS);
            zk.kill(l).unwrap_or_else(|e| panic!("kill leader {l}: {e}"));
            thread::sleep(down);
            let t = Instant::now();
            zk.start(l).unwrap_or_else(|e| panic!("start member {l}: {e}"));
            format!(
                "kill -9 leader member {l} (down {down:?} + {:.1}s to rejoin)",
                t.elapsed().as_secs_f64()
            )
        }
        FaultKind::Cut => {
            let i = rng.below(MEMBERS as u64) as usize;
            proxies[i].cut_all();
            format!("cut all connections through proxy {i}")
        }
        FaultKind::WorkerKill => {
            let mut fleet = lock(fleet);
            let started: Vec<usize> = (0..fleet.workers.len())
                .filter(|&i| fleet.workers[i].exit.is_none() && fleet.workers[i].go_us.is_some())
                .collect();
            let candidates = if started.is_empty() {
                (0..fleet.workers.len())
                    .filter(|&i| fleet.workers[i].exit.is_none())
                    .collect()
            } else {
                started
            };
            if candidates.is_empty() {
                return "kill -9 worker: none alive".to_owned();
            }
            let i = candidates[rng.below(candidates.len() as u64) as usize];
            fleet.kill(i);
            let (id, mode) = (fleet.workers[i].id, fleet.workers[i].mode);
            let before = fleet.workers.len();
            fleet.top_up();
            let spawned: Vec<String> = fleet.workers[before..]
                .iter()
                .map(|w| format!("{}{}", w.mode.letter(), w.id))
                .collect();
            format!(
                "kill -9 worker {}{id}, replaced by {}",
                mode.letter(),
                spawned.join(",")
            )
        }
    }
}

// ---------------------------------------------------------------- checker

/// What the checker needs of one worker.
struct Log {
    id: usize,
    mode: Mode,
    replacement: bool,
    lines: Vec<String>,
    spawned_us: u64,
    go_us: Option<u64>,
    killed_us: Option<u64>,
    straggler: bool,
    exit: Option<ExitStatus>,
    stderr_lines: usize,
    stderr_tail: Vec<String>,
}

/// One hold: from the grant to the release, the loss, or the kill.
#[derive(Debug, Clone)]
struct Hold {
    worker: usize,
    mode: Mode,
    start: u64,
    end: u64,
    how: &'static str,
    /// When the worker was told it lost the lock (`lost`, or its session
    /// reported `Expired`/`Closed`/`AuthFailed`) during the hold.
    told_lost: Option<u64>,
    token: i64,
    node: String,
}

#[derive(Default)]
struct Verdict {
    holds: Vec<Hold>,
    violations: Vec<String>,
    /// Errors the workers reported: (worker, time, message).
    errors: Vec<(usize, u64, String)>,
    lost: usize,
    cancels: usize,
    wants: usize,
    excused_overlaps: usize,
    /// Session states reported, by name.
    states: BTreeMap<String, usize>,
    unknown_events: BTreeMap<String, usize>,
    /// (wait in µs, worker, want time): the longest waits for a grant.
    waits: Vec<(u64, usize, u64)>,
}

/// Where a worker is in its request cycle.
enum At {
    Idle,
    Wanting(u64),
    Holding(Hold),
    Failed,
}

fn check(logs: &[Log], t0: u64) -> Verdict {
    let mut v = Verdict::default();
    for log in logs {
        check_worker(log, t0, &mut v);
    }
    check_exclusion(logs, t0, &mut v);
    check_tokens(&mut v, t0);
    v.waits.sort_unstable_by(|a, b| b.cmp(a));
    v
}

fn check_worker(log: &Log, t0: u64, v: &mut Verdict) {
    let who = format!("worker {}{}", log.mode.letter(), log.id);
    let mut at = At::Idle;
    let mut grants = 0u64;
    let mut done: Option<u64> = None;
    let mut errors = 0;
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
        match ev {
            "ready" => {}
            "want" => {
                v.wants += 1;
                match at {
                    At::Idle => at = At::Wanting(t),
                    _ => problem(v, format!("line {n}: want while not idle: {line}")),
                }
            }
            "grant" => {
                let (Some(token), Some(node)) = (e["token"].as_i64(), e["node"].as_str()) else {
                    problem(v, format!("line {n}: grant without token/node: {line}"));
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
                            told_lost: None,
                            token,
                            node: node.to_owned(),
                        });
                    }
                    _ => problem(v, format!("line {n}: grant without a want: {line}")),
                }
            }
            "release" | "lost" => {
                if let At::Holding(mut h) = std::mem::replace(&mut at, At::Idle) {
                    h.end = t;
                    if ev == "lost" {
                        v.lost += 1;
                        h.how = "lost";
                        h.told_lost = Some(h.told_lost.map_or(t, |l| l.min(t)));
                    } else {
                        h.how = "release";
                    }
                    v.holds.push(h);
                } else {
                    problem(v, format!("line {n}: {ev} while not holding: {line}"));
                }
            }
            "cancel" => match at {
                At::Wanting(_) => {
                    v.cancels += 1;
                    at = At::Idle;
                }
                _ => problem(v, format!("line {n}: cancel while not waiting: {line}")),
            },
            "state" => {
                let state = e["state"].as_str().unwrap_or("?").to_owned();
                if let At::Holding(h) = &mut at {
                    if matches!(state.as_str(), "Expired" | "Closed" | "AuthFailed") && h.told_lost.is_none()
                    {
                        h.told_lost = Some(t);
                    }
                }
                *v.states.entry(state).or_default() += 1;
            }
            "error" => {
                errors += 1;
                let msg = e["msg"].as_str().unwrap_or("(no message)").to_owned();
                v.errors.push((log.id, t, msg));
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
    // How the stream ended.
    match std::mem::replace(&mut at, At::Idle) {
        At::Idle | At::Failed => {}
        At::Wanting(w) => {
            if log.killed_us.is_none() {
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

fn describe(h: &Hold, t0: u64) -> String {
    format!(
        "{}{} hold {}..{} ({}) token {} node {}{}",
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
        h.told_lost
            .map(|l| format!(", told lost at {}", rel(l, t0)))
            .unwrap_or_default()
    )
}

/// The events of `workers` between `from` and `to`, for a violation report.
fn window(logs: &[Log], workers: &[usize], from: u64, to: u64, t0: u64) -> String {
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

/// Check 1: no writer's hold overlaps another worker's hold.
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
            let told = |h: &Hold| h.told_lost.is_some_and(|l| l <= from);
            if told(a) || told(b) {
                v.excused_overlaps += 1;
                continue;
            }
            v.violations.push(format!(
                "OVERLAP {}..{} ({} µs):\n    {}\n    {}\n    events from 6 s before:\n{}",
                rel(from, t0),
                rel(to, t0),
                to - from,
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

/// Periods between `from` and `to` in which nobody held the lock, longest first.
fn stalls(holds: &[Hold], from: u64, to: u64) -> Vec<(u64, u64)> {
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

/// Writes what a post-mortem needs to `dir`: every event tagged with its
/// worker (`events.jsonl`), the workers (`workers.txt`), the faults
/// (`faults.txt`, with the wall-clock time of the run's start to line them
/// up with the servers' logs) and the servers' logs (`member-<i>.log`).
fn keep(
    dir: &std::path::Path,
    zk: &ZkCluster,
    logs: &[Log],
    faults: &[Fault],
    t0: u64,
    t0_wall: std::time::SystemTime,
    seed: u64,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut events = Vec::new();
    let mut workers = String::new();
    for log in logs {
        let _ = writeln!(
            workers,
            "{}{} replacement={} spawned={} go={} killed={} exit={:?} straggler={} stderr_lines={}",
            log.mode.letter(),
            log.id,
            log.replacement,
            rel(log.spawned_us, t0),
            log.go_us.map_or("-".to_owned(), |t| rel(t, t0)),
            log.killed_us.map_or("-".to_owned(), |t| rel(t, t0)),
            log.exit,
            log.straggler,
            log.stderr_lines,
        );
        for line in &log.stderr_tail {
            let _ = writeln!(workers, "    stderr: {line}");
        }
        for line in &log.lines {
            let mut e = serde_json::from_str::<Value>(line)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| serde_json::json!({ "raw": line }));
            let t = e["t_us"].as_u64().unwrap_or(0);
            e["worker"] = format!("{}{}", log.mode.letter(), log.id).into();
            e["rel"] = rel(t, t0).into();
            events.push((t, e.to_string()));
        }
    }
    events.sort_by_key(|(t, _)| *t);
    let events: String = events.into_iter().map(|(_, e)| e + "\n").collect();
    std::fs::write(dir.join("events.jsonl"), events)?;
    std::fs::write(dir.join("workers.txt"), workers)?;
    let wall_ms = t0_wall
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let day_ms = wall_ms % 86_400_000;
    let mut text = format!(
        "seed {seed}\nt0 = CLOCK_MONOTONIC {t0} us = unix {wall_ms} ms = {:02}:{:02}:{:02}.{:03} UTC\n",
        day_ms / 3_600_000,
        day_ms / 60_000 % 60,
        day_ms / 1000 % 60,
        day_ms % 1000
    );
    for f in faults {
        let _ = writeln!(
            text,
            "{}..{} {:?}: {}",
            rel(f.start_us, t0),
            rel(f.end_us, t0),
            f.kind,
            f.what
        );
    }
    std::fs::write(dir.join("faults.txt"), text)?;
    for i in 0..zk.members() {
        let _ = std::fs::copy(zk.log_path(i), dir.join(format!("member-{i}.log")));
    }
    Ok(())
}

// ---------------------------------------------------------------- the test

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a whole number")),
    )
}

/// Contender nodes left in `path` once every worker is gone: polls until
/// none are left or [`DRAIN_WITHIN`] has passed.
fn orphans(connect: &str, path: &str) -> (Vec<String>, Duration) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let started = Instant::now();
    rt.block_on(async {
        let deadline = tokio::time::Instant::now() + DRAIN_WITHIN;
        let client = tokio::time::timeout(
            DRAIN_WITHIN,
            zk::Client::connector()
                .with_session_timeout(Duration::from_secs(4))
                .connect(connect),
        )
        .await
        .unwrap_or_else(|_| panic!("no session with {connect} within {DRAIN_WITHIN:?}"))
        .unwrap_or_else(|e| panic!("cannot connect to {connect}: {e}"));
        let mut last: Vec<String>;
        loop {
            match client.list_children(path).await {
                Ok(children) if children.is_empty() => return (children, started.elapsed()),
                Ok(children) => last = children,
                Err(zk::Error::NoNode) => return (Vec::new(), started.elapsed()),
                Err(e) => last = vec![format!("(cannot list {path}: {e})")],
            }
            if tokio::time::Instant::now() >= deadline {
                return (last, started.elapsed());
            }
            tokio::time::sleep(POLL).await;
        }
    })
}

#[test]
fn soak_readers_and_writers_under_faults() {
    let began = Instant::now();
    let secs = env_u64(SECS_ENV).unwrap_or(DEFAULT_SECS).max(1);
    let seed = env_u64(SEED_ENV).unwrap_or_else(|| now_us() ^ u64::from(std::process::id()));
    println!(
        "soak: seed={seed} ({SEED_ENV}) run={secs}s ({SECS_ENV}) workers={WORKERS} ({WRITERS} writers) members={MEMBERS}"
    );
    let mut rng = Rng(seed);

    let mut zk = ZkCluster::ensemble(MEMBERS).unwrap_or_else(|e| {
        panic!(
            "the soak needs a real ZooKeeper ensemble: {e}\n\
             install it with `sudo apt-get install -y zookeeper` (or run ./scripts/test.sh, which does)"
        )
    });
    let direct = zk.connect_string();
    let proxies: Vec<Proxy> = (0..MEMBERS)
        .map(|i| Proxy::start(&zk.member_connect_string(i)))
        .collect();
    let through_proxies = proxies.iter().map(Proxy::addr).collect::<Vec<_>>().join(",");
    let path = format!("/soak/{}-{}", std::process::id(), now_us());

    let fleet = Arc::new(Mutex::new(Fleet {
        connect: through_proxies,
        path: path.clone(),
        worker_secs: secs + 120,
        rng: Rng(rng.next_u64()),
        workers: Vec::new(),
        stopping: false,
        problems: Vec::new(),
    }));
    let stop = Arc::new(AtomicBool::new(false));
    // Declared after the cluster and the proxies, so dropped before them.
    let _cleanup = Cleanup {
        fleet: fleet.clone(),
        stop: stop.clone(),
    };
    {
        let mut f = lock(&fleet);
        for i in 0..WORKERS {
            f.spawn(if i < WRITERS { Mode::Write } else { Mode::Read }, false);
        }
    }
    let supervisor = {
        let (fleet, stop) = (fleet.clone(), stop.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                {
                    let mut f = lock(&fleet);
                    f.poll();
                    f.top_up();
                }
                thread::sleep(POLL);
            }
        })
    };

    // The run starts once the first workers have all been told `go`.
    let ready_deadline = Instant::now() + READY_WITHIN;
    loop {
        let (all_go, problems) = {
            let f = lock(&fleet);
            (
                f.workers.len() >= WORKERS && f.workers[..WORKERS].iter().all(|w| w.go_us.is_some()),
                f.problems.clone(),
            )
        };
        assert!(problems.is_empty(), "{problems:#?}");
        if all_go {
            break;
        }
        if Instant::now() >= ready_deadline {
            let f = lock(&fleet);
            let late: Vec<String> = f.workers[..WORKERS]
                .iter()
                .filter(|w| w.go_us.is_none())
                .map(|w| {
                    format!(
                        "worker {}: exit {:?}, stdout {:?}, stderr {:?}",
                        w.id,
                        w.exit,
                        lock(&w.lines),
                        lock(&w.stderr).1
                    )
                })
                .collect();
            panic!("workers not ready within {READY_WITHIN:?}:\n{}", late.join("\n"));
        }
        thread::sleep(POLL);
    }
    let t0 = now_us();
    let t0_wall = std::time::SystemTime::now();
    let run_started = Instant::now();
    let run_end = run_started + Duration::from_secs(secs);

    // The fault loop.
    let mut first = KINDS;
    for i in (1..first.len()).rev() {
        first.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut faults: Vec<Fault> = Vec::new();
    loop {
        let next = Instant::now() + ms(&mut rng, FAULT_GAP_MS);
        if next >= run_end {
            break;
        }
        thread::sleep(next.saturating_duration_since(Instant::now()));
        let kind = pick_kind(&mut rng, faults.len(), &first);
        let start_us = now_us();
        let what = inject(kind, &mut rng, &mut zk, &proxies, &fleet);
        let end_us = now_us();
        println!("soak: {} {what}", rel(start_us, t0));
        faults.push(Fault {
            kind,
            start_us,
            end_us,
            what,
        });
    }
    thread::sleep(run_end.saturating_duration_since(Instant::now()));
    let run_secs = run_started.elapsed().as_secs_f64();

    // Stop: no more replacements or `go`; closing stdin ends each worker's run.
    let stop_us = now_us();
    {
        let mut f = lock(&fleet);
        f.stopping = true;
        for w in &mut f.workers {
            w.stdin = None;
        }
    }
    let exit_deadline = Instant::now() + EXIT_WITHIN;
    loop {
        let mut f = lock(&fleet);
        f.poll();
        if f.alive().count() == 0 {
            break;
        }
        if Instant::now() >= exit_deadline {
            for i in 0..f.workers.len() {
                if f.workers[i].exit.is_none() {
                    f.kill(i);
                    f.workers[i].straggler = true;
                }
            }
            break;
        }
        drop(f);
        thread::sleep(POLL);
    }
    let exited_secs = (now_us() - stop_us) as f64 / 1e6;
    stop.store(true, Ordering::SeqCst);
    supervisor.join().expect("the supervisor thread panicked");

    // Every worker's pipes are closed once it has exited.
    let (logs, fleet_problems) = {
        let mut f = lock(&fleet);
        let mut logs = Vec::new();
        for w in &mut f.workers {
            for pipe in w.pipes.drain(..) {
                pipe.join().expect("a pipe reader panicked");
            }
            let stderr = lock(&w.stderr);
            logs.push(Log {
                id: w.id,
                mode: w.mode,
                replacement: w.replacement,
                lines: lock(&w.lines).clone(),
                spawned_us: w.spawned_us,
                go_us: w.go_us,
                killed_us: w.killed_us,
                straggler: w.straggler,
                exit: w.exit,
                stderr_lines: stderr.0,
                stderr_tail: stderr.1.iter().cloned().collect(),
            });
        }
        (logs, f.problems.clone())
    };

    // Check 4: no contender node is left behind.
    let (left, drained_in) = orphans(&direct, &path);

    // Checks 1 to 3.
    let mut verdict = check(&logs, t0);
    verdict.violations.extend(fleet_problems);

    let reads = verdict.holds.iter().filter(|h| h.mode == Mode::Read).count();
    let writes = verdict.holds.len() - reads;
    let count = |k: FaultKind| faults.iter().filter(|f| f.kind == k).count();
    println!(
        "soak: grants={} (read {reads}, write {writes}) faults={} (restarts {}, leader kills {}, cuts {}, kill -9 {}) violations={} orphans={} duration={run_secs:.1}s",
        verdict.holds.len(),
        faults.len(),
        count(FaultKind::Restart),
        count(FaultKind::LeaderKill),
        count(FaultKind::Cut),
        count(FaultKind::WorkerKill),
        verdict.violations.len(),
        left.len(),
    );
    let replacements = logs.iter().filter(|l| l.replacement).count();
    let states: Vec<String> = verdict.states.iter().map(|(s, n)| format!("{s} {n}")).collect();
    println!(
        "soak: workers={} (replacements {replacements}) wants={} lost={} cancelled={} worker errors={} excused overlaps={} session states: {}; workers stopped in {exited_secs:.1}s, lock drained in {:.1}s; total {:.1}s; seed={seed}",
        logs.len(),
        verdict.wants,
        verdict.lost,
        verdict.cancels,
        verdict.errors.len(),
        verdict.excused_overlaps,
        if states.is_empty() { "none".to_owned() } else { states.join(", ") },
        drained_in.as_secs_f64(),
        began.elapsed().as_secs_f64(),
    );
    for (w, t, msg) in &verdict.errors {
        println!("soak: worker {w} reported at {}: {msg}", rel(*t, t0));
    }
    // Faults that started up to 6 s before `from` and before `to`: what
    // a stall or a long wait most likely came from.
    let around = |from: u64, to: u64| -> String {
        let near: Vec<String> = faults
            .iter()
            .filter(|f| f.start_us + 6_000_000 >= from && f.start_us <= to)
            .map(|f| format!("{} at {}..{}", f.what, rel(f.start_us, t0), rel(f.end_us, t0)))
            .collect();
        if near.is_empty() {
            "no fault in the 6 s before".to_owned()
        } else {
            format!("after: {}", near.join("; "))
        }
    };
    if let Some((wait, w, at)) = verdict.waits.first() {
        println!(
            "soak: longest wait: worker {w} waited {:.2}s from {}; {}",
            *wait as f64 / 1e6,
            rel(*at, t0),
            around(*at, at + wait)
        );
    }
    for (from, to) in stalls(&verdict.holds, t0, stop_us).iter().take(3) {
        println!(
            "soak: stall: nobody held the lock {}..{} ({:.2}s); {}",
            rel(*from, t0),
            rel(*to, t0),
            (to - from) as f64 / 1e6,
            around(*from, *to)
        );
    }
    if !verdict.unknown_events.is_empty() {
        println!("soak: unknown events ignored: {:?}", verdict.unknown_events);
    }
    for v in &verdict.violations {
        println!("soak: VIOLATION {v}");
    }
    if !left.is_empty() {
        println!("soak: ORPHANS in {path} after {DRAIN_WITHIN:?}: {left:?}");
    }
    let failed = !verdict.violations.is_empty() || !left.is_empty();
    if failed || std::env::var_os(KEEP_ENV).is_some() {
        let dir = std::env::var_os(KEEP_ENV)
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::env::temp_dir().join(format!("zk-rwlock-soak-{}", std::process::id())));
        match keep(&dir, &zk, &logs, &faults, t0, t0_wall, seed) {
            Ok(()) => println!("soak: events, faults and server logs kept in {}", dir.display()),
            Err(e) => println!("soak: could not keep the logs in {}: {e}", dir.display()),
        }
    }
    assert!(
        verdict.holds.iter().any(|h| h.mode == Mode::Write),
        "no writer was ever granted"
    );
    assert!(
        verdict.holds.iter().any(|h| h.mode == Mode::Read),
        "no reader was ever granted"
    );
    assert!(
        verdict.violations.is_empty(),
        "{} violation(s), seed {seed}:\n{}",
        verdict.violations.len(),
        verdict.violations.join("\n")
    );
    assert!(
        left.is_empty(),
        "{} orphan node(s) in {path}: {left:?}",
        left.len()
    );
}

// ---------------------------------------------------------------- the checker's own tests

/// A synthetic worker log; `code` is its exit code (ignored when killed).
fn synthetic(id: usize, mode: Mode, lines: &[&str], killed_us: Option<u64>, code: i32) -> Log {
    use std::os::unix::process::ExitStatusExt;
    Log {
        id,
        mode,
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

/// `want` at `w`, `grant` at `g` with `token`, then `end` (`release`/`lost`) at `e`.
fn cycle(w: u64, g: u64, token: i64, end: &str, e: u64) -> Vec<String> {
    vec![
        format!(r#"{{"t_us":{w},"ev":"want"}}"#),
        format!(r#"{{"t_us":{g},"ev":"grant","token":{token},"node":"/l/n{token}-{g}"}}"#),
        format!(r#"{{"t_us":{e},"ev":"{end}"}}"#),
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

fn run_check(logs: Vec<Case>) -> Verdict {
    let logs: Vec<Log> = logs
        .into_iter()
        .map(|(id, mode, l, killed, code)| {
            let refs: Vec<&str> = l.iter().map(String::as_str).collect();
            synthetic(id, mode, &refs, killed, code)
        })
        .collect();
    check(&logs, 0)
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
    // ... unless the writer had been told it lost the lock before.
    let mut expired = cycle(10, 100, 1, "lost", 300);
    expired.insert(2, r#"{"t_us":150,"ev":"state","state":"Expired"}"#.to_owned());
    let v = run_check(vec![
        (0, Mode::Write, expired, None, 0),
        (1, Mode::Read, cycle(10, 200, 2, "release", 250), None, 0),
    ]);
    assert!(
        !v.violations.iter().any(|m| m.starts_with("OVERLAP")),
        "{:#?}",
        v.violations
    );
    assert_eq!((v.excused_overlaps, v.lost), (1, 1));
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
    assert!(
        v.violations.iter().any(|m| m.starts_with("OVERLAP")),
        "{:#?}",
        v.violations
    );
    // A later writer with a smaller token; a node granted twice.
    let v = run_check(vec![
        (0, Mode::Write, cycle(10, 100, 7, "release", 110), None, 0),
        (1, Mode::Write, cycle(10, 200, 5, "release", 210), None, 0),
    ]);
    assert!(
        v.violations.iter().any(|m| m.starts_with("TOKEN ORDER")),
        "{:#?}",
        v.violations
    );
    let same = |g: u64| {
        vec![
            format!(r#"{{"t_us":{g},"ev":"want"}}"#),
            format!(
                r#"{{"t_us":{},"ev":"grant","token":{g},"node":"/l/same"}}"#,
                g + 1
            ),
            format!(r#"{{"t_us":{},"ev":"release"}}"#, g + 2),
        ]
    };
    let v = run_check(vec![
        (0, Mode::Read, same(10), None, 0),
        (1, Mode::Read, same(20), None, 0),
    ]);
    assert!(
        v.violations.iter().any(|m| m.contains("granted twice")),
        "{:#?}",
        v.violations
    );
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
    let says = |s: &str| v.violations.iter().any(|m| m.contains(s));
    assert!(says("never got an answer"), "{:#?}", v.violations);
    assert!(says("without reporting why"), "{:#?}", v.violations);
    assert!(says("is not JSON"), "{:#?}", v.violations);
}
