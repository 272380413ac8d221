//! Soak: at least eight `zk-rwlock-demo worker` processes, readers and
//! writers, take one lock at random on a real 3-member ensemble for a bounded
//! time, each through its own session and its own TCP proxies (one per
//! member), while a seeded fault loop
//!
//! * restarts members (never more than one down) and kills the leader,
//! * cuts every worker's connections to one member,
//! * kill -9s workers (replacing them),
//! * pauses a worker that holds the lock (SIGSTOP for longer than the
//!   session timeout, then SIGCONT): it resumes believing it holds, finishes
//!   its work and writes with its old token,
//! * partitions a worker in the middle of a long hold (its proxies forward
//!   nothing and close nothing, past its lease deadline and the session
//!   timeout, then heal): it is suspended, then loses the lock at its lease
//!   deadline.
//!
//! One fault of each kind comes first, in a seeded order, however short the
//! run (the run is longer than asked if that takes longer). Writers write to
//! a fenced store (`zk_rwlock_testkit::fenced_store`) with their token while
//! they hold. Afterwards an independent checker (`soak/checker.rs`: it
//! parses the workers' JSON lines and the store's log itself, and shares no
//! code with the library, the demo's verdict or the store) verifies that
//!
//! 1. holds overlapped (a writer's with anyone else's) only where the
//!    earlier holder was past its lease deadline, by a deadline it reported
//!    at or after the overlap began,
//! 2. writer fencing tokens strictly increased in grant order,
//! 3. the store accepted no write with a stale token (by its own log), and
//!    refused none that was not stale or whose writer's lease still ran,
//! 4. every request was granted, cancelled at the end of the run, failed
//!    with a reported reason, or ended by a kill; and every worker exited 0
//!    or said why not,
//! 5. no contender node is left once every worker has stopped and the
//!    sessions of the killed ones have expired;
//!
//! and the soak checks that it did what it claims: a fault of each kind ran,
//! cuts closed live connections, a pause and a partition hit a holder, and
//! some worker lost the lock.
//!
//! `ZK_RWLOCK_SOAK_SECS` sets the length of the faulted run (default 30 s);
//! `ZK_RWLOCK_SOAK_SEED` replays a run's fault schedule and worker seeds
//! (the timing of a real run is never exactly reproducible).
//!
//! Beside it runs the nemesis (`soak/nemesis.rs`): this fleet, store and
//! checker on a 5-member ensemble partitioned from the inside, one run at a
//! time; and the semaphore soak ([`soak_semaphore_holders_under_faults`]):
//! these faults on 3N workers that take one of N permits each, the checker
//! counting holders instead of pairing them.

use zk_rwlock_testkit as support;

mod checker;
mod nemesis;

use std::collections::{HashSet, VecDeque};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use checker::{check_by, check_waits, holding_at, rel, stalls, Log, Mode, EXIT_WITHIN};
use serde_json::Value;
use support::proxy::Proxy;
use zk_rwlock::zk;
use zk_rwlock_testkit::launcher::ZkCluster;

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock-demo");
/// Length of the faulted run in seconds (default [`DEFAULT_SECS`]).
const SECS_ENV: &str = "ZK_RWLOCK_SOAK_SECS";
/// Seed of the fault schedule and of the workers' hold and think times.
const SEED_ENV: &str = "ZK_RWLOCK_SOAK_SEED";
/// Keep the events, the fault log, the store's log and the servers' logs in
/// this directory (they are always kept, in a temporary directory, when the
/// soak fails).
const KEEP_ENV: &str = "ZK_RWLOCK_SOAK_KEEP";
/// The same for the semaphore soak.
const SEMAPHORE_KEEP_ENV: &str = "ZK_RWLOCK_SEMAPHORE_KEEP";
const DEFAULT_SECS: u64 = 30;
/// Worker processes kept alive during the run.
const WORKERS: usize = 8;
/// Of which writers.
const WRITERS: usize = 3;
/// Ensemble members (each worker has a proxy to each).
const MEMBERS: usize = 3;
/// Permits of the semaphore soak ([`soak_semaphore_holders_under_faults`]).
const PERMITS: usize = 3;
/// Its worker processes: three contenders a permit.
const CONTENDERS: usize = 3 * PERMITS;
/// Its default length (s): `ZK_RWLOCK_SOAK_SECS` sets both soaks'.
const SEMAPHORE_DEFAULT_SECS: u64 = 20;
/// How many requests of others made after a semaphore contender asked
/// may be granted before it is, while it is connected: three times the
/// contenders (the semaphore grants in the order the nodes were made; in
/// 4,000 requests of 120 s and 300 s runs 8 at most, at the start, where all
/// ask at once). A waiter left behind is passed over this often in seconds.
const MAX_PASSED_OVER: usize = 3 * CONTENDERS;
/// How long a semaphore contender may wait for its permit at all: when
/// faults keep every permit taken nobody is passed over (a killed holder's
/// node keeps its permit until its session expires, later with each
/// election in between: nobody held for 7.8 s in a 300 s run, the longest
/// wait was 8.4 s).
const MAX_WAIT: Duration = Duration::from_secs(30);
/// Pause between two faults (ms), drawn uniformly: part of the workload.
const FAULT_GAP_MS: (u64, u64) = (300, 2500);
/// How long a restarted or killed member stays down (ms).
const DOWNTIME_MS: (u64, u64) = (0, 1500);
/// How long a paused worker stays stopped, and a partitioned one cut off
/// (ms): longer than the 4 s session timeout plus a tick, so the session
/// expires (unless a new leader restarted its clock meanwhile).
const OUTAGE_MS: (u64, u64) = (5000, 6500);
/// A hold of at least this long (µs) is the long hold asked for with `long`.
const LONG_HOLD_US: u64 = 2_000_000;
/// Deadline to find a holder to pause, or for a worker asked for a long
/// hold to get it.
const HOLDER_WITHIN: Duration = Duration::from_secs(20);
/// How long a pause waits for a writer to hold before it takes a reader.
const WRITER_WITHIN: Duration = Duration::from_secs(5);
/// Deadline for the workers to connect and report `ready`.
const READY_WITHIN: Duration = Duration::from_secs(60);
/// Deadline for the lock directory to empty once every worker is gone (a
/// killed worker's nodes go when its session expires: at most 4 s here).
const DRAIN_WITHIN: Duration = Duration::from_secs(30);
/// How often the supervisor and the end-of-run waits poll.
const POLL: Duration = Duration::from_millis(20);
/// Lines of a worker's stderr kept for reports.
const STDERR_TAIL: usize = 20;

// ---------------------------------------------------------------- helpers

thread_local! {
    /// What the printed lines of the run on this thread start with.
    static TAG: std::cell::Cell<&'static str> = const { std::cell::Cell::new("soak") };
}

/// `println!` with the run's tag (`soak: ...`, `nemesis: ...`).
macro_rules! say {
    ($($arg:tt)*) => {
        println!("{}: {}", TAG.with(std::cell::Cell::get), format_args!($($arg)*))
    };
}

/// One soak or nemesis run at a time: each starts its own ensemble and
/// fleet, and two at once would overload the machine.
fn serial() -> MutexGuard<'static, ()> {
    static RUN: Mutex<()> = Mutex::new(());
    lock(&RUN)
}

/// Microseconds of `CLOCK_MONOTONIC`, the clock the workers stamp events with.
fn now_us() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
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

/// Sends `signal` to worker `w`'s process, if it has not been reaped (so its
/// pid is still its own).
fn signal(w: &Worker, signal: rustix::process::Signal) -> bool {
    if w.exit.is_some() {
        return false;
    }
    let Some(pid) = i32::try_from(w.child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    // A pid this test spawned and has not reaped.
    rustix::process::kill_process(pid, signal).is_ok()
}

// ---------------------------------------------------------------- workers

/// Who the fleet's workers are.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Worker processes kept alive.
    workers: usize,
    /// Of which writers (the rest read, or take permits).
    writers: usize,
    /// Every worker takes one of this many permits of a semaphore
    /// (`worker --permits`) instead of the read/write lock.
    permits: Option<usize>,
}

impl Shape {
    /// The soak's and the nemesis's: readers and writers.
    const LOCK: Shape = Shape {
        workers: WORKERS,
        writers: WRITERS,
        permits: None,
    };

    /// The mode of a new worker, with `writers` writers alive.
    fn mode(&self, writers: usize) -> Mode {
        if self.permits.is_some() {
            Mode::Permit
        } else if writers < self.writers {
            Mode::Write
        } else {
            Mode::Read
        }
    }

    /// What the checker holds the holds to.
    fn rule(&self) -> checker::Rule {
        self.permits
            .map_or(checker::Rule::ReadWrite, checker::Rule::Permits)
    }
}

/// One worker process and what the test knows about it.
struct Worker {
    id: usize,
    mode: Mode,
    label: String,
    replacement: bool,
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its own proxies, one per member: its connect string.
    proxies: Vec<Proxy>,
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

impl Worker {
    /// The token of a long hold (at least [`LONG_HOLD_US`]) granted in its
    /// output lines from `seen` on, if any: the hold a `long` line asked for.
    fn long_grant(&self, seen: usize) -> Option<i64> {
        lock(&self.lines)[seen..].iter().find_map(|l| {
            let e = serde_json::from_str::<Value>(l).ok()?;
            (e["ev"] == "grant" && e["hold_us"].as_u64() >= Some(LONG_HOLD_US))
                .then(|| e["token"].as_i64())
                .flatten()
        })
    }

    /// The token of the hold it is in, by the events it reported so far, if
    /// it is at work: a reader once granted, a writer once its first write
    /// is done (not while it writes: the store's `flock` would stay taken
    /// during a pause, and every writer would wait for it).
    fn working(&self) -> Option<i64> {
        let lines = lock(&self.lines);
        for line in lines.iter().rev() {
            let Ok(e) = serde_json::from_str::<Value>(line) else {
                return None;
            };
            match (e["ev"].as_str(), self.mode) {
                (Some("state" | "session" | "suspended" | "resumed"), _) => continue,
                (Some("grant"), Mode::Read | Mode::Permit) => return e["token"].as_i64(),
                (Some("write"), Mode::Write) if e["what"] != "end" => return e["token"].as_i64(),
                _ => return None,
            }
        }
        None
    }

    /// Whether it runs and was told `go`.
    fn started(&self) -> bool {
        self.exit.is_none() && self.go_us.is_some()
    }
}

/// All workers, past and present.
struct Fleet {
    /// The members' connect strings, which each worker's proxies forward to.
    members: Vec<String>,
    path: String,
    store: std::path::PathBuf,
    worker_secs: u64,
    /// The workers' `--follower-lag` (none if zero).
    follower_lag: Duration,
    shape: Shape,
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
        let label = format!("soak{id}");
        let proxies: Vec<Proxy> = self.members.iter().map(|m| Proxy::start(m)).collect();
        let connect = proxies.iter().map(Proxy::addr).collect::<Vec<_>>().join(",");
        let mut command = Command::new(BIN);
        command.args(["worker", "--connect", &connect, "--path", &self.path]);
        match (mode, self.shape.permits) {
            (Mode::Permit, Some(n)) => command.args(["--permits", &n.to_string()]),
            _ => command.args(["--mode", mode.arg()]),
        };
        command
            .args(["--duration", &format!("{}s", self.worker_secs)])
            .args(["--seed", &seed.to_string()])
            .args(["--label", &label])
            .arg("--store")
            .arg(&self.store);
        if !self.follower_lag.is_zero() {
            command.args(["--follower-lag", &format!("{}ms", self.follower_lag.as_millis())]);
        }
        let spawned = command
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
            label,
            replacement,
            proxies,
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

    /// Starts replacements until the shape's workers are alive, its writers among them.
    fn top_up(&mut self) {
        if self.stopping {
            return;
        }
        let mut alive = self.alive().count();
        let mut writers = self.alive().filter(|w| w.mode == Mode::Write).count();
        while alive < self.shape.workers {
            let mode = self.shape.mode(writers);
            if mode == Mode::Write {
                writers += 1;
            }
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
    Pause,
    Partition,
    // The nemesis's partitions inside the ensemble (`soak/nemesis.rs`).
    /// Majority and minority, the leader and a holder in the minority.
    Split,
    /// The leader cut off from every other member.
    LeaderIsolated,
    /// Two sides that do not see each other, and one member that sees both.
    Bridge,
    /// A partition cut and healed several times within a few seconds.
    Flap,
    /// A split healed while the minority's holder still holds.
    HealWhileHolding,
    /// Majority and minority, the leader in the majority, and a holder
    /// connected to a follower in the minority.
    FollowerSplit,
}

const KINDS: [FaultKind; 6] = [
    FaultKind::Restart,
    FaultKind::LeaderKill,
    FaultKind::Cut,
    FaultKind::WorkerKill,
    FaultKind::Pause,
    FaultKind::Partition,
];

struct Fault {
    kind: FaultKind,
    start_us: u64,
    /// When it was over (a pause or a partition: when it healed).
    end_us: u64,
    what: String,
    /// The worker paused or partitioned, and when it was stopped or cut off.
    victim: Option<(usize, u64)>,
    /// Live connections a cut closed.
    cut: usize,
    /// Workers put on the minority side of a split while they held the
    /// lock, and when.
    holders: Vec<(usize, u64)>,
    /// Those that still held when the split healed, and when.
    still_held: Vec<(usize, u64)>,
}

/// What ends a pause or a partition, and when.
struct Heal {
    at: Instant,
    fault: usize,
    worker: usize,
}

/// The soak's later faults, weighted at random.
fn pick_kind(rng: &mut Rng) -> FaultKind {
    match rng.below(100) {
        0..=21 => FaultKind::Restart,
        22..=33 => FaultKind::LeaderKill,
        34..=63 => FaultKind::Cut,
        64..=75 => FaultKind::WorkerKill,
        76..=87 => FaultKind::Pause,
        _ => FaultKind::Partition,
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

/// The fault loop's state besides the cluster and the fleet.
struct Faults {
    rng: Rng,
    done: Vec<Fault>,
    heals: Vec<Heal>,
    /// Workers paused, partitioned, or about to be: no other fault picks them.
    busy: HashSet<usize>,
    /// Time 0 of the run, for the log.
    t0: u64,
    /// During a split: the members each worker's proxies were frozen to.
    split_frozen: std::collections::HashMap<usize, Vec<usize>>,
    /// A kill -9 takes a worker that holds, if one does within
    /// [`WRITER_WITHIN`] (otherwise any worker).
    kill_holders: bool,
}

impl Faults {
    /// Injects one fault of `kind`.
    fn inject(&mut self, kind: FaultKind, zk: &mut ZkCluster, fleet: &Mutex<Fleet>) {
        let fleet_ref = fleet;
        let start_us = now_us();
        let (mut victim, mut cut, mut heal_in) = (None::<(usize, u64)>, 0, None);
        let (mut holders, mut still_held) = (Vec::new(), Vec::new());
        let what = match kind {
            FaultKind::Split
            | FaultKind::LeaderIsolated
            | FaultKind::Bridge
            | FaultKind::Flap
            | FaultKind::HealWhileHolding
            | FaultKind::FollowerSplit => {
                let done = self.inject_ensemble(kind, zk, fleet);
                holders = done.holders;
                still_held = done.still_held;
                done.what
            }
            FaultKind::Restart => {
                let i = self.rng.below(zk.members() as u64) as usize;
                let was = zk.leader();
                let down = ms(&mut self.rng, DOWNTIME_MS);
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
                let down = ms(&mut self.rng, DOWNTIME_MS);
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
                // A member some worker is connected to; partitioned workers
                // are left alone (a cut would end their partition's silence).
                let fleet = lock(fleet);
                let cuttable = || {
                    fleet
                        .workers
                        .iter()
                        .filter(|w| w.exit.is_none() && !self.busy.contains(&w.id))
                };
                let used: Vec<usize> = (0..zk.members())
                    .filter(|&m| cuttable().any(|w| w.proxies[m].open() > 0))
                    .collect();
                let m = if used.is_empty() {
                    self.rng.below(zk.members() as u64) as usize
                } else {
                    used[self.rng.index(used.len())]
                };
                cut = cuttable().map(|w| w.proxies[m].cut_all()).sum();
                format!("cut every worker's connections to member {m}: {cut} live")
            }
            FaultKind::WorkerKill => {
                if self.kill_holders {
                    self.await_holder(fleet_ref);
                }
                let mut fleet = lock(fleet);
                let alive = |f: &Fleet, started: bool| -> Vec<usize> {
                    (0..f.workers.len())
                        .filter(|&i| f.workers[i].exit.is_none() && !self.busy.contains(&i))
                        .filter(|&i| !started || f.workers[i].go_us.is_some())
                        .collect()
                };
                let mut candidates = alive(&fleet, true);
                if candidates.is_empty() {
                    candidates = alive(&fleet, false);
                }
                let holding: Vec<usize> = candidates
                    .iter()
                    .copied()
                    .filter(|&i| fleet.workers[i].working().is_some())
                    .collect();
                if self.kill_holders && !holding.is_empty() {
                    candidates = holding;
                }
                if candidates.is_empty() {
                    "kill -9 worker: none alive".to_owned()
                } else {
                    let i = candidates[self.rng.index(candidates.len())];
                    // Taken before the kill: a holder still held then.
                    victim = Some((i, now_us()));
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
            FaultKind::Pause => {
                // A holder; a writer for the first few seconds (its late
                // write meets the store's fencing), then anyone (at once
                // in a fleet without writers).
                let writers_for = if lock(fleet).shape.writers == 0 {
                    Duration::ZERO
                } else {
                    WRITER_WITHIN
                };
                let (writers_only, deadline) = (Instant::now() + writers_for, Instant::now() + HOLDER_WITHIN);
                loop {
                    let fleet = lock(fleet);
                    let holders: Vec<(usize, i64)> = fleet
                        .workers
                        .iter()
                        .filter(|w| w.started() && !self.busy.contains(&w.id))
                        .filter_map(|w| w.working().map(|token| (w.id, token)))
                        .collect();
                    let writer = holders
                        .iter()
                        .find(|(i, _)| fleet.workers[*i].mode == Mode::Write);
                    let pick = if Instant::now() < writers_only {
                        writer.copied()
                    } else {
                        writer.or(holders.first()).copied()
                    };
                    if let Some((i, token)) = pick {
                        let w = &fleet.workers[i];
                        let out = ms(&mut self.rng, OUTAGE_MS);
                        if signal(w, rustix::process::Signal::STOP) {
                            victim = Some((i, now_us()));
                            heal_in = Some(out);
                            break format!(
                                "SIGSTOP worker {}{i} holding token {token}, for {out:?}",
                                w.mode.letter()
                            );
                        }
                    }
                    drop(fleet);
                    if Instant::now() >= deadline {
                        break format!("pause: no worker held the lock within {HOLDER_WITHIN:?}");
                    }
                    self.heal(fleet_ref);
                    thread::sleep(Duration::from_millis(2));
                }
            }
            FaultKind::Partition => {
                // Ask a worker for a long hold, and cut it off once it has it.
                let picked = {
                    let mut fleet = lock(fleet);
                    let candidates: Vec<usize> = fleet
                        .workers
                        .iter()
                        .filter(|w| w.started() && !self.busy.contains(&w.id))
                        .map(|w| w.id)
                        .collect();
                    if candidates.is_empty() {
                        None
                    } else {
                        let i = candidates[self.rng.index(candidates.len())];
                        let w = &mut fleet.workers[i];
                        let seen = lock(&w.lines).len();
                        let asked = w
                            .stdin
                            .as_mut()
                            .is_some_and(|s| s.write_all(b"long\n").and_then(|()| s.flush()).is_ok());
                        asked.then_some((i, seen))
                    }
                };
                match picked {
                    None => "partition: no worker to ask for a long hold".to_owned(),
                    Some((i, seen)) => {
                        self.busy.insert(i);
                        let out = ms(&mut self.rng, OUTAGE_MS);
                        let deadline = Instant::now() + HOLDER_WITHIN;
                        loop {
                            let fleet = lock(fleet);
                            let w = &fleet.workers[i];
                            if let Some(token) = w.long_grant(seen) {
                                for p in &w.proxies {
                                    p.freeze();
                                }
                                victim = Some((i, now_us()));
                                heal_in = Some(out);
                                break format!(
                                    "partition worker {}{i} in a long hold of token {token}, for {out:?}",
                                    w.mode.letter()
                                );
                            }
                            if w.exit.is_some() || Instant::now() >= deadline {
                                self.busy.remove(&i);
                                break format!(
                                    "partition: worker {}{i} was not granted its long hold within {HOLDER_WITHIN:?}",
                                    w.mode.letter()
                                );
                            }
                            drop(fleet);
                            self.heal(fleet_ref);
                            thread::sleep(Duration::from_millis(2));
                        }
                    }
                }
            }
        };
        let end_us = now_us();
        // A pause or a partition begins when it hits, not when it began
        // to look for its victim.
        let start_us = victim.map_or(start_us, |(_, at)| at);
        if let (Some((worker, _)), Some(out)) = (victim, heal_in) {
            self.busy.insert(worker);
            self.heals.push(Heal {
                at: Instant::now() + out,
                fault: self.done.len(),
                worker,
            });
        }
        self.done.push(Fault {
            kind,
            start_us,
            end_us,
            what,
            victim,
            cut,
            holders,
            still_held,
        });
    }

    /// Heals the pauses and partitions that are due.
    fn heal(&mut self, fleet: &Mutex<Fleet>) {
        let now = Instant::now();
        let (due, later): (Vec<Heal>, Vec<Heal>) = std::mem::take(&mut self.heals)
            .into_iter()
            .partition(|h| h.at <= now);
        self.heals = later;
        let fleet = lock(fleet);
        for h in due {
            let w = &fleet.workers[h.worker];
            let fault = &mut self.done[h.fault];
            match fault.kind {
                FaultKind::Pause => {
                    signal(w, rustix::process::Signal::CONT);
                }
                _ => {
                    // Proxies a split froze stay frozen until it heals.
                    let split = self.split_frozen.get(&h.worker);
                    for (m, p) in w.proxies.iter().enumerate() {
                        if !split.is_some_and(|ms| ms.contains(&m)) {
                            p.thaw();
                        }
                    }
                }
            }
            fault.end_us = now_us();
            self.busy.remove(&h.worker);
            say!("{} healed: {}", rel(fault.end_us, self.t0), fault.what);
        }
    }

    /// When the next heal is due.
    fn next_heal(&self) -> Option<Instant> {
        self.heals.iter().map(|h| h.at).min()
    }

    /// Waits until some started worker that no fault has taken holds, by
    /// its events, at most [`WRITER_WITHIN`]; heals what is due meanwhile.
    fn await_holder(&mut self, fleet: &Mutex<Fleet>) {
        let deadline = Instant::now() + WRITER_WITHIN;
        while Instant::now() < deadline {
            let held = lock(fleet)
                .workers
                .iter()
                .any(|w| w.started() && !self.busy.contains(&w.id) && w.working().is_some());
            if held {
                return;
            }
            self.heal(fleet);
            thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Writes what a post-mortem needs to `dir`: every event tagged with its
/// worker (`events.jsonl`), the workers (`workers.txt`, and for
/// `checker::load_recorded` `workers.jsonl`), the store's log
/// (`store.log`), the faults (`faults.txt`, with the wall-clock time of the
/// run's start to line them up with the servers' logs) and the servers'
/// logs (`member-<i>.log`).
fn keep(
    dir: &std::path::Path,
    zk: &ZkCluster,
    (logs, store_log): (&[Log], &[String]),
    faults: &[Fault],
    t0: u64,
    t0_wall: std::time::SystemTime,
    seed: u64,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut events = Vec::new();
    let mut workers = String::new();
    let mut meta = format!("{}\n", serde_json::json!({ "t0_us": t0, "seed": seed }));
    for log in logs {
        use std::os::unix::process::ExitStatusExt;
        let _ = writeln!(
            meta,
            "{}",
            serde_json::json!({
                "worker": format!("{}{}", log.mode.letter(), log.id),
                "id": log.id,
                "mode": log.mode.arg(),
                "label": log.label,
                "replacement": log.replacement,
                "spawned_us": log.spawned_us,
                "go_us": log.go_us,
                "killed_us": log.killed_us,
                "straggler": log.straggler,
                "exit_code": log.exit.and_then(|s| s.code()),
                "exit_signal": log.exit.and_then(|s| s.signal()),
            })
        );
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
    std::fs::write(dir.join("workers.jsonl"), meta)?;
    let store: String = store_log.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("store.log"), store)?;
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

/// The members whose log reports a digest mismatch (ZooKeeper 3.6 and
/// later compare a digest of the data tree with the leader's at each
/// transaction), with the first line that says so.
fn diverged_members(zk: &ZkCluster) -> Vec<(usize, String)> {
    (0..zk.members())
        .filter_map(|i| {
            let log = std::fs::read_to_string(zk.log_path(i)).ok()?;
            let first = log.lines().find(|l| l.contains("First digest mismatch"))?;
            Some((i, first.trim().to_owned()))
        })
        .collect()
}

/// A directory removed when dropped.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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

/// What a run is: its ensemble, its length, its faults.
struct Plan {
    /// What its printed lines start with.
    tag: &'static str,
    members: usize,
    /// The members talk through links that can be cut ([`ZkCluster::partition`]).
    partitionable: bool,
    secs: u64,
    seed: u64,
    /// Where to keep the logs (besides on failure).
    keep_env: &'static str,
    /// Keep the logs in a temporary directory until the caller's own
    /// checks pass too ([`Outcome::kept`]).
    keep_until_passed: bool,
    /// One fault of each kind first, in a seeded order.
    first: Vec<FaultKind>,
    /// The kind of each later fault.
    pick: fn(&mut Rng) -> FaultKind,
    /// The first summary line, from the verdict, the faults, the orphans
    /// and the length of the run.
    summary: fn(&checker::Verdict, &[Fault], &[String], f64) -> String,
    /// The workers' follower lag, from the started ensemble (zero: none).
    follower_lag: fn(&ZkCluster) -> Duration,
    /// Who the workers are.
    shape: Shape,
    /// Every request must be granted within this, before others were
    /// granted that many times after it asked, unless the end of the run or
    /// a kill ends it first ([`checker::check_waits`]).
    max_wait: Option<(Duration, usize)>,
    /// A kill -9 takes a worker that holds ([`Faults::kill_holders`]).
    kill_holders: bool,
}

/// What a run found.
struct Outcome {
    /// The logs kept until the caller's checks pass
    /// ([`Plan::keep_until_passed`]): forget it to keep them.
    kept: Option<Scratch>,
    verdict: checker::Verdict,
    faults: Vec<Fault>,
    /// Contender nodes left behind, in `path`.
    left: Vec<String>,
    /// Members whose log says ZooKeeper's digest check found their data
    /// diverged from the leader's, with the first such line.
    diverged: Vec<(usize, String)>,
    path: String,
    /// The workers' follower lag.
    follower_lag: Duration,
    cut_live: usize,
    paused_holders: usize,
    partitioned_holders: usize,
    /// Kill -9s of a worker that held.
    killed_holders: usize,
}

impl Outcome {
    fn count(&self, k: FaultKind) -> usize {
        self.faults.iter().filter(|f| f.kind == k).count()
    }
}

/// The soak's first summary line.
fn soak_summary(verdict: &checker::Verdict, faults: &[Fault], left: &[String], run_secs: f64) -> String {
    let reads = verdict.holds.iter().filter(|h| h.mode == Mode::Read).count();
    let writes = verdict.holds.len() - reads;
    let count = |k: FaultKind| faults.iter().filter(|f| f.kind == k).count();
    format!(
        "grants={} (read {reads}, write {writes}) faults={} (restarts {}, leader kills {}, cuts {}, kill -9 {}, pauses {}, partitions {}) violations={} orphans={} duration={run_secs:.1}s",
        verdict.holds.len(),
        faults.len(),
        count(FaultKind::Restart),
        count(FaultKind::LeaderKill),
        count(FaultKind::Cut),
        count(FaultKind::WorkerKill),
        count(FaultKind::Pause),
        count(FaultKind::Partition),
        verdict.violations.len(),
        left.len(),
    )
}

#[test]
fn soak_readers_and_writers_under_faults() {
    let _serial = serial();
    TAG.with(|t| t.set("soak"));
    let began = Instant::now();
    let secs = env_u64(SECS_ENV).unwrap_or(DEFAULT_SECS).max(1);
    let seed = env_u64(SEED_ENV).unwrap_or_else(|| now_us() ^ u64::from(std::process::id()));
    say!(
        "seed={seed} ({SEED_ENV}) run={secs}s ({SECS_ENV}) workers={WORKERS} ({WRITERS} writers) members={MEMBERS}"
    );
    let plan = Plan {
        tag: "soak",
        members: MEMBERS,
        partitionable: false,
        secs,
        seed,
        keep_env: KEEP_ENV,
        keep_until_passed: false,
        first: KINDS.to_vec(),
        pick: pick_kind,
        summary: soak_summary,
        follower_lag: |_| Duration::ZERO,
        shape: Shape::LOCK,
        max_wait: None,
        kill_holders: false,
    };
    let out = run(&plan, began);
    let verdict = &out.verdict;
    assert!(
        verdict.holds.iter().any(|h| h.mode == Mode::Write),
        "no writer was ever granted"
    );
    assert!(
        verdict.holds.iter().any(|h| h.mode == Mode::Read),
        "no reader was ever granted"
    );
    passed(&out, seed);
}

/// The soak's and the semaphore soak's common end: it did what it claims
/// (a fault of each kind, cuts of live connections, a pause and a partition
/// of a holder, a loss), the checker found nothing, nothing is left behind.
fn passed(out: &Outcome, seed: u64) {
    let (verdict, left, path) = (&out.verdict, &out.left, &out.path);
    for k in KINDS {
        assert!(
            out.count(k) > 0,
            "no {k:?} fault ran, seed {seed} (the first faults are one of each kind)"
        );
    }
    assert!(out.cut_live > 0, "no cut closed a live connection, seed {seed}");
    assert!(
        out.paused_holders > 0,
        "no pause stopped a worker while it held the lock, seed {seed}"
    );
    assert!(
        out.partitioned_holders > 0,
        "no partition cut off a worker while it held the lock, seed {seed}"
    );
    assert!(
        verdict.lost > 0,
        "no worker reported the lock lost: the lost path never ran, seed {seed}"
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

/// The semaphore soak's first summary line.
fn semaphore_summary(verdict: &checker::Verdict, faults: &[Fault], left: &[String], run_secs: f64) -> String {
    let count = |k: FaultKind| faults.iter().filter(|f| f.kind == k).count();
    format!(
        "grants={} holders max={} of {PERMITS} permits ({} by the holders' own intervals, those past their lease deadline included) longest wait={:.2}s most passed over={} faults={} (restarts {}, leader kills {}, cuts {}, kill -9 {}, pauses {}, partitions {}) violations={} orphans={} duration={run_secs:.1}s",
        verdict.holds.len(),
        verdict.most_holding.0,
        verdict.most_holding.1,
        verdict.waits.first().map_or(0.0, |w| w.0 as f64 / 1e6),
        verdict.most_passed_over,
        faults.len(),
        count(FaultKind::Restart),
        count(FaultKind::LeaderKill),
        count(FaultKind::Cut),
        count(FaultKind::WorkerKill),
        count(FaultKind::Pause),
        count(FaultKind::Partition),
        verdict.violations.len(),
        left.len(),
    )
}

/// The soak's faults on a semaphore: [`CONTENDERS`] workers (3N) take one
/// of [`PERMITS`] (N) permits each, again and again
/// (`zk-rwlock-demo worker --permits N`), while the soak's fault loop cuts
/// their connections, restarts members and kills the leader, pauses and
/// partitions holders past their session's expiry, and kill -9s holders
/// (replacing them). The checker counts: when a hold began, no more than N
/// workers held by their own intervals, not counting a holder past its
/// lease deadline (as the soak allows an overlap); every request was
/// granted before [`MAX_PASSED_OVER`] requests made after it were (while it
/// was connected), and within [`MAX_WAIT`], unless a kill or the end of the
/// run ended it (none failed); and nothing is left in the directory.
#[test]
fn soak_semaphore_holders_under_faults() {
    let _serial = serial();
    TAG.with(|t| t.set("semaphore"));
    let began = Instant::now();
    let secs = env_u64(SECS_ENV).unwrap_or(SEMAPHORE_DEFAULT_SECS).max(1);
    let seed = env_u64(SEED_ENV).unwrap_or_else(|| now_us() ^ u64::from(std::process::id()));
    say!(
        "seed={seed} ({SEED_ENV}) run={secs}s ({SECS_ENV}) contenders={CONTENDERS} permits={PERMITS} members={MEMBERS}"
    );
    let plan = Plan {
        tag: "semaphore",
        members: MEMBERS,
        partitionable: false,
        secs,
        seed,
        keep_env: SEMAPHORE_KEEP_ENV,
        keep_until_passed: false,
        first: KINDS.to_vec(),
        pick: pick_kind,
        summary: semaphore_summary,
        follower_lag: |_| Duration::ZERO,
        shape: Shape {
            workers: CONTENDERS,
            writers: 0,
            permits: Some(PERMITS),
        },
        max_wait: Some((MAX_WAIT, MAX_PASSED_OVER)),
        kill_holders: true,
    };
    let out = run(&plan, began);
    let verdict = &out.verdict;
    assert!(
        verdict.violations.is_empty(),
        "{} violation(s), seed {seed}:\n{}",
        verdict.violations.len(),
        verdict.violations.join("\n")
    );
    assert!(
        verdict.most_holding.0 == PERMITS,
        "at most {} held at once: the {PERMITS} permits were never all taken, seed {seed}",
        verdict.most_holding.0
    );
    assert!(out.killed_holders > 0, "no kill -9 hit a holder, seed {seed}");
    passed(&out, seed);
}

/// Starts the ensemble and the fleet, runs the faults of `plan`, stops,
/// and checks; the caller asserts.
/// Set when ZooKeeper itself did not recover from a fault (a member that
/// does not serve again, even restarted): the fault loop stops there and
/// the run is judged on what ran (see `nemesis::Faults::wait_whole`).
static ZOOKEEPER_STUCK: Mutex<Option<String>> = Mutex::new(None);

/// Why the fault loop stopped early, if it did ([`ZOOKEEPER_STUCK`]).
fn zookeeper_stuck() -> Option<String> {
    lock(&ZOOKEEPER_STUCK).clone()
}

fn run(plan: &Plan, began: Instant) -> Outcome {
    let (secs, seed) = (plan.secs, plan.seed);
    let mut rng = Rng(seed);

    let mut builder = ZkCluster::builder().members(plan.members);
    if plan.partitionable {
        builder = builder.partitionable();
    }
    let mut zk = builder.start().unwrap_or_else(|e| {
        panic!(
            "the {} needs a real ZooKeeper ensemble: {e}\n\
             install it with `sudo apt-get install -y zookeeper` (or run ./scripts/test.sh, which does)",
            plan.tag
        )
    });
    let direct = zk.connect_string();
    let follower_lag = (plan.follower_lag)(&zk);
    let path = format!("/{}/{}-{}", plan.tag, std::process::id(), now_us());
    let store =
        Scratch(std::env::temp_dir().join(format!("zk-rwlock-{}-store-{}", plan.tag, std::process::id())));
    let _ = std::fs::remove_dir_all(&store.0);

    let fleet = Arc::new(Mutex::new(Fleet {
        members: (0..plan.members).map(|i| zk.member_connect_string(i)).collect(),
        path: path.clone(),
        store: store.0.clone(),
        worker_secs: secs + 120,
        follower_lag,
        shape: plan.shape,
        rng: Rng(rng.next_u64()),
        workers: Vec::new(),
        stopping: false,
        problems: Vec::new(),
    }));
    let stop = Arc::new(AtomicBool::new(false));
    // Declared after the cluster, so dropped before it.
    let _cleanup = Cleanup {
        fleet: fleet.clone(),
        stop: stop.clone(),
    };
    {
        let mut f = lock(&fleet);
        for i in 0..plan.shape.workers {
            f.spawn(plan.shape.mode(i), false);
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
                f.workers.len() >= plan.shape.workers
                    && f.workers[..plan.shape.workers].iter().all(|w| w.go_us.is_some()),
                f.problems.clone(),
            )
        };
        assert!(problems.is_empty(), "{problems:#?}");
        if all_go {
            break;
        }
        if Instant::now() >= ready_deadline {
            let f = lock(&fleet);
            let late: Vec<String> = f.workers[..plan.shape.workers]
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

    // The fault loop: one fault of each kind first, then at random until
    // the end of the run; pauses and partitions heal in the background.
    let mut first = plan.first.clone();
    for i in (1..first.len()).rev() {
        first.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut faults = Faults {
        rng: Rng(rng.next_u64()),
        done: Vec::new(),
        heals: Vec::new(),
        busy: HashSet::new(),
        t0,
        split_frozen: std::collections::HashMap::new(),
        kill_holders: plan.kill_holders,
    };
    let mut next = Instant::now() + ms(&mut rng, FAULT_GAP_MS);
    let mut first_round_done = None;
    loop {
        faults.heal(&fleet);
        let first_round = faults.done.len() < first.len();
        if !first_round && next >= run_end {
            break;
        }
        if let Some(why) = lock(&ZOOKEEPER_STUCK).as_ref() {
            say!("no more faults: {why}");
            break;
        }
        let wake = faults.next_heal().map_or(next, |h| h.min(next));
        thread::sleep(wake.saturating_duration_since(Instant::now()));
        if Instant::now() < next {
            continue;
        }
        // Every kind once, in a random order, then weighted at random.
        let kind = match first.get(faults.done.len()) {
            Some(&k) => k,
            None => (plan.pick)(&mut rng),
        };
        faults.inject(kind, &mut zk, &fleet);
        if faults.done.len() == first.len() {
            first_round_done = Some(Instant::now());
        }
        let f = faults.done.last().expect("the fault just injected");
        say!("{} {}", rel(f.start_us, t0), f.what);
        next = Instant::now() + ms(&mut rng, FAULT_GAP_MS);
    }
    if first_round_done.is_some_and(|t| t > run_end) {
        say!(
            "the first fault of each kind took {:.1}s, longer than the {secs}s asked: the run lasted that long",
            run_started.elapsed().as_secs_f64()
        );
    }
    // Let the last pauses and partitions outlast the session timeout, as
    // they were meant to.
    while let Some(at) = faults.next_heal() {
        thread::sleep(at.saturating_duration_since(Instant::now()));
        faults.heal(&fleet);
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
                label: w.label.clone(),
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
    let diverged = diverged_members(&zk);

    // Checks 1 to 4.
    let store_log: Vec<String> = match std::fs::read_to_string(store.0.join("log")) {
        Ok(text) => text.lines().map(str::to_owned).collect(),
        // No writer, no store.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && plan.shape.writers == 0 => Vec::new(),
        Err(e) => panic!("cannot read the fenced store's log in {}: {e}", store.0.display()),
    };
    let mut verdict = check_by(plan.shape.rule(), &logs, &store_log, t0);
    if let Some(within) = plan.max_wait {
        let slow = check_waits(&mut verdict, stop_us, within, t0);
        verdict.violations.extend(slow);
    }
    verdict.violations.extend(fleet_problems);
    let faults = faults.done;

    // Whether each pause and partition hit a hold, by the victim's events.
    let hit = |k: FaultKind| {
        faults
            .iter()
            .filter(|f| f.kind == k)
            .filter(|f| f.victim.is_some_and(|(w, at)| holding_at(&verdict, w, at)))
            .count()
    };
    let (paused_holders, partitioned_holders) = (hit(FaultKind::Pause), hit(FaultKind::Partition));
    let killed_holders = hit(FaultKind::WorkerKill);
    let cut_live: usize = faults.iter().map(|f| f.cut).sum();
    say!("{}", (plan.summary)(&verdict, &faults, &left, run_secs));
    let store = if plan.shape.writers == 0 {
        String::new()
    } else {
        format!(
            "; store: {} accepted, {} refused as stale; writes after the writer's lease deadline: {} accepted (no newer token written yet), {} refused",
            verdict.store_accepted,
            verdict.store_rejected,
            verdict.late_writes.0,
            verdict.late_writes.1,
        )
    };
    say!(
        "cuts closed {cut_live} live connections; pauses of a holder {paused_holders}, partitions of a holder {partitioned_holders}, kill -9 of a holder {killed_holders}; lost {} (suspended {}, resumed {}, new sessions {}); overlaps explained by the lease {}{store}",
        verdict.lost,
        verdict.suspended,
        verdict.resumed,
        verdict.sessions,
        verdict.explained.len(),
    );
    // The overlaps, by the holder whose lease had run out.
    let mut by_lease: Vec<(usize, u64)> = verdict.explained.iter().map(|x| (x.earlier, x.lease)).collect();
    by_lease.sort_unstable();
    by_lease.dedup();
    for (earlier, lease) in by_lease {
        let after: Vec<&checker::Explained> = verdict
            .explained
            .iter()
            .filter(|x| (x.earlier, x.lease) == (earlier, lease))
            .collect();
        let first = after.iter().map(|x| x.from).min().unwrap_or(lease);
        let mut others: Vec<usize> = after.iter().map(|x| x.later).collect();
        others.sort_unstable();
        others.dedup();
        let end = verdict
            .holds
            .iter()
            .find(|h| h.worker == earlier && h.start < first && first < h.end)
            .map_or("?".to_owned(), |h| format!("{} ({})", rel(h.end, t0), h.how));
        say!(
            "worker {earlier}'s lease deadline {}: {} holds of {} workers began after it, the first {:.0} ms after, before the worker stopped holding at {end}",
            rel(lease, t0),
            after.len(),
            others.len(),
            (first - lease) as f64 / 1e3,
        );
    }
    let replacements = logs.iter().filter(|l| l.replacement).count();
    let states: Vec<String> = verdict.states.iter().map(|(s, n)| format!("{s} {n}")).collect();
    say!(
        "workers={} (replacements {replacements}) wants={} cancelled={} worker errors={} session states: {}; workers stopped in {exited_secs:.1}s, lock drained in {:.1}s; total {:.1}s; seed={seed}",
        logs.len(),
        verdict.wants,
        verdict.cancels,
        verdict.errors.len(),
        if states.is_empty() { "none".to_owned() } else { states.join(", ") },
        drained_in.as_secs_f64(),
        began.elapsed().as_secs_f64(),
    );
    for (w, t, msg) in &verdict.errors {
        say!("worker {w} reported at {}: {msg}", rel(*t, t0));
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
        say!(
            "longest wait: worker {w} waited {:.2}s from {}; {}",
            *wait as f64 / 1e6,
            rel(*at, t0),
            around(*at, at + wait)
        );
    }
    for (from, to) in stalls(&verdict.holds, t0, stop_us).iter().take(3) {
        say!(
            "stall: nobody held the lock {}..{} ({:.2}s); {}",
            rel(*from, t0),
            rel(*to, t0),
            (to - from) as f64 / 1e6,
            around(*from, *to)
        );
    }
    if !verdict.unknown_events.is_empty() {
        say!("unknown events ignored: {:?}", verdict.unknown_events);
    }
    for v in &verdict.violations {
        say!("VIOLATION {v}");
    }
    for (i, first) in &diverged {
        say!("ZooKeeper's digest check found member {i}'s data diverged from its leader's: {first}");
    }
    if !left.is_empty() {
        say!("ORPHANS in {path} after {DRAIN_WITHIN:?}: {left:?}");
    }
    let failed = !verdict.violations.is_empty() || !left.is_empty();
    let mut kept = None;
    if failed || plan.keep_until_passed || std::env::var_os(plan.keep_env).is_some() {
        let dir = std::env::var_os(plan.keep_env)
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::env::temp_dir().join(format!("zk-rwlock-{}-{}", plan.tag, std::process::id()))
            });
        match keep(&dir, &zk, (&logs, &store_log), &faults, t0, t0_wall, seed) {
            Ok(()) => {
                say!("events, faults and server logs kept in {}", dir.display());
                if std::env::var_os(plan.keep_env).is_none() && !failed {
                    kept = Some(Scratch(dir));
                }
            }
            Err(e) => say!("could not keep the logs in {}: {e}", dir.display()),
        }
    }
    Outcome {
        kept,
        diverged,
        verdict,
        faults,
        left,
        path,
        follower_lag,
        cut_live,
        paused_holders,
        partitioned_holders,
        killed_holders,
    }
}
