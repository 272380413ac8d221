//! `zk-rwlock exec` cut off from ZooKeeper while its command runs: a proxy
//! between exec and the server stops forwarding without closing anything
//! (a partition), while another session waits for the lock. By default
//! exec stops the command when it notices the lost connection, and the
//! command is gone before its lease runs out, so before anyone else can be
//! granted the lock. The command sees its lease in its environment and its
//! lease file.
//!
//! Times are compared on the wall clock, which the commands (`date`), the
//! lease file and this process share.

use zk_rwlock_fixtures as support;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::kill;
use support::proxy::Proxy;
use support::{alive, client_on, eventually, joined, server, settles_to, unique_path, wait_contenders};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use zk_rwlock::{ContenderState, SharedLock};

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock");
/// The session timeout exec asks for; the test server grants 0.4 to 4 s.
const SESSION: &str = "4s";
const SESSION_MS: u64 = 4_000;
/// `kill_margin(4 s)`: SIGKILL comes this long before the lease deadline.
const MARGIN_MS: u64 = 800;
/// Upper bound for anything that should happen promptly.
const WITHIN: Duration = Duration::from_secs(30);

/// Wall-clock milliseconds since the Unix epoch.
fn wall_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

fn now_ms() -> i64 {
    wall_ms(SystemTime::now())
}

/// A fresh scratch directory for files the commands write.
fn scratch(name: &str) -> PathBuf {
    let unique = unique_path(name);
    let dir = std::env::temp_dir().join(format!("zk-rwlock-partition{}", unique.replace('/', "-")));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Whether any process of group `pgid` is alive (not a zombie).
fn group_alive(pgid: u32) -> bool {
    // kill(-pgid, 0): whether the group has a process at all.
    let group = rustix::process::Pid::from_raw(pgid as i32).expect("a process group");
    if rustix::process::test_kill_process_group(group).is_err() {
        return false;
    }
    let pgid = pgid.to_string();
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let (state, pgrp) = (fields.next(), fields.nth(1));
            pgrp == Some(pgid.as_str()) && state != Some("Z")
        })
}

/// Polls until the command (its shell `pids[0]`, which leads its process
/// group, and `pids[1]`) and its whole group are gone; returns the wall
/// clock when that was first seen (an upper bound of the moment of death).
fn watch_death(pids: Vec<u32>) -> tokio::task::JoinHandle<SystemTime> {
    tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        loop {
            // The known processes first (cheap), then the whole group.
            if !pids.iter().any(|&p| alive(p)) && !group_alive(pids[0]) {
                return SystemTime::now();
            }
            assert!(started.elapsed() < WITHIN, "the command never ended");
            std::thread::sleep(Duration::from_millis(2));
        }
    })
}

/// Waits until `file` exists (written by rename) and returns its content.
async fn read_when_there(file: &Path) -> String {
    let mut text = None;
    eventually(&format!("{} written", file.display()), WITHIN, || {
        text = std::fs::read_to_string(file).ok();
        let there = text.is_some();
        async move { there }
    })
    .await;
    text.unwrap_or_default()
}

/// The words of a file the command wrote, as numbers.
async fn numbers(file: &Path) -> Vec<u64> {
    read_when_there(file)
        .await
        .split_whitespace()
        .map(|w| {
            w.parse()
                .unwrap_or_else(|_| panic!("{}: not a number: {w:?}", file.display()))
        })
        .collect()
}

/// A lease file's line: deadline (Unix ms) and state.
fn lease_line(text: &str) -> (i64, String) {
    let mut words = text.split_whitespace();
    let deadline = words
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("bad lease file: {text:?}"));
    let state = words.next().unwrap_or_else(|| panic!("bad lease file: {text:?}"));
    assert!(
        words.next().is_none() && text.ends_with('\n'),
        "bad lease file: {text:?}"
    );
    (deadline, state.to_owned())
}

/// A running `zk-rwlock exec`, its stderr lines as they come (with the
/// wall clock of their arrival), and all of them so far. Dropped while
/// running (a failed test), it is killed.
struct Exec {
    child: Option<Child>,
    lines: UnboundedReceiver<(SystemTime, String)>,
    stderr: Vec<String>,
}

/// Starts `zk-rwlock exec --write --session-timeout 4s <extra> --connect
/// <connect> <path> -- sh -c <script> sh <dir> <rest>`.
fn exec(connect: &str, path: &str, extra: &[&str], script: &str, dir: &Path, rest: &[&str]) -> Exec {
    let mut child = Command::new(BIN)
        .args(["exec", "--write", "--session-timeout", SESSION])
        .args(extra)
        .args(["--connect", connect, path, "--", "sh", "-c", script, "sh"])
        .arg(dir)
        .args(rest)
        .env_remove("RUST_LOG")
        .env_remove("ZK_RWLOCK_LEASE_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zk-rwlock exec");
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, lines) = unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send((SystemTime::now(), line)).is_err() {
                break;
            }
        }
    });
    Exec {
        child: Some(child),
        lines,
        stderr: Vec::new(),
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Exec {
    /// Waits for a line of stderr containing `text`; returns when it came.
    async fn line(&mut self, text: &str) -> SystemTime {
        let found = tokio::time::timeout(WITHIN, async {
            while let Some((at, line)) = self.lines.recv().await {
                self.stderr.push(line.clone());
                if line.contains(text) {
                    return Some(at);
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(at)) => at,
            _ => panic!("exec never said {text:?}; its stderr: {:#?}", self.stderr),
        }
    }

    /// Waits for exec to exit; its code and its whole stderr.
    async fn finish(mut self) -> (Option<i32>, String) {
        let mut child = self.child.take().expect("running");
        let pid = child.id();
        let waiting = tokio::task::spawn_blocking(move || child.wait());
        let status = match tokio::time::timeout(WITHIN, waiting).await {
            Ok(joined) => joined.expect("wait for exec").expect("wait for exec"),
            Err(_) => {
                // The child is not reaped yet, so the pid is still its.
                kill(pid, libc::SIGKILL);
                panic!(
                    "exec did not finish within {WITHIN:?}; its stderr: {:#?}",
                    self.stderr
                )
            }
        };
        // The rest of its stderr (closed once exec and its command are gone).
        let _ = tokio::time::timeout(WITHIN, async {
            while let Some((_, line)) = self.lines.recv().await {
                self.stderr.push(line);
            }
        })
        .await;
        let stderr = self.stderr.join("\n");
        assert!(!stderr.contains("panicked"), "exec panicked: {stderr}");
        (status.code(), stderr)
    }
}

/// The command of the partition tests: writes its lease file's path and
/// "<shell pid> <background pid>", then waits. `$2` says what it does on
/// SIGTERM: `stop` writes the time (ns) to `term`, cleans up for 300 ms,
/// writes the time to `end` and exits; `ignore` ignores it (and so does its
/// background child).
const PARTITIONED: &str = r#"
d="$1"
if [ "$2" = ignore ]; then
    trap '' TERM
else
    trap 'date +%s%N > "$d/term"; sleep 0.3; date +%s%N > "$d/end.tmp"; mv "$d/end.tmp" "$d/end"; exit 0' TERM
fi
echo "$ZK_RWLOCK_LEASE_FILE" > "$d/lease.tmp" && mv "$d/lease.tmp" "$d/leasefile"
sleep 600 &
echo "$$ $!" > "$d/pids.tmp" && mv "$d/pids.tmp" "$d/pids"
wait
"#;

/// What one partition showed.
#[derive(Debug)]
struct Partition {
    /// Freeze to exec's report of the lost connection (ms).
    frozen_to_suspended: i64,
    /// exec's report to the command's SIGTERM trap (ms; the report comes
    /// first, a few ms are the pipe's).
    suspended_to_term: Option<i64>,
    /// The SIGTERM trap to the command's last word (ms).
    term_to_end: Option<i64>,
    /// The command's group seen gone to the next writer's grant (ms).
    dead_to_grant: i64,
    /// The lease deadline to the command's group seen gone (ms; negative:
    /// before the deadline).
    deadline_to_dead: i64,
    /// The lease deadline to the next writer's grant (ms).
    deadline_to_grant: i64,
    /// exec's exit code and stderr.
    code: Option<i32>,
    stderr: String,
}

/// Runs `exec --write` through a proxy with `PARTITIONED` (`on_term`:
/// `stop` or `ignore`), queues a writer on a direct session, freezes the
/// proxy and measures until the writer is granted and exec has exited.
async fn partition(name: &str, on_term: &str) -> Partition {
    let direct = server().connect_string();
    let path = unique_path(name);
    let dir = scratch(name);
    let proxy = Proxy::start(&direct);
    let mut run = exec(proxy.addr(), &path, &[], PARTITIONED, &dir, &[on_term]);
    let pids = numbers(&dir.join("pids")).await;
    let pids: Vec<u32> = pids.iter().map(|&p| p as u32).collect();
    assert_eq!(pids.len(), 2);
    let lease_file = PathBuf::from(read_when_there(&dir.join("leasefile")).await.trim());
    let (before, state) = lease_line(&read_when_there(&lease_file).await);
    assert_eq!(state, "held");
    assert!(before > now_ms(), "a live lease ends in the future");

    let other = SharedLock::new(client_on(&direct).await, &path).unwrap();
    eventually("exec holds the lock", WITHIN, || async {
        other
            .contenders()
            .await
            .map(|c| c.len() == 1 && c[0].state == ContenderState::Holds)
            .unwrap_or(false)
    })
    .await;
    let waiter = {
        let (other, pgid) = (other.clone(), pids[0]);
        tokio::spawn(async move {
            let guard = other.write().await.expect("the next writer is granted");
            let granted = SystemTime::now();
            // Right after the grant (the watcher below says since when).
            assert!(
                !group_alive(pgid),
                "the command still ran when the next writer was granted"
            );
            (granted, guard)
        })
    };
    wait_contenders(&other, 2).await;
    let death = watch_death(pids.clone());

    proxy.freeze();
    let frozen = SystemTime::now();
    let suspended = run.line("connection to ZooKeeper lost").await;
    // The lease stands still while nothing is answered: its last value.
    let mut deadline = 0;
    eventually("the lease file says suspended or lost", WITHIN, || {
        let text = std::fs::read_to_string(&lease_file).unwrap_or_default();
        let ok = text.ends_with(" suspended\n") || text.ends_with(" lost\n");
        if ok {
            deadline = lease_line(&text).0;
        }
        async move { ok }
    })
    .await;
    let dead = joined(WITHIN, death).await;
    let (granted, next) = joined(WITHIN, waiter).await;
    proxy.thaw();
    let (code, stderr) = run.finish().await;
    next.release().await.unwrap();
    settles_to(&client_on(&direct).await, &path, &[]).await;
    assert!(
        !lease_file.parent().unwrap().exists(),
        "exec removed its lease file's directory"
    );

    let ms_of = |ns: u64| (ns / 1_000_000) as i64;
    let term = std::fs::read_to_string(dir.join("term"))
        .ok()
        .map(|t| ms_of(t.trim().parse().unwrap()));
    let end = std::fs::read_to_string(dir.join("end"))
        .ok()
        .map(|t| ms_of(t.trim().parse().unwrap()));
    let _ = std::fs::remove_dir_all(&dir);
    let (suspended, dead, granted) = (wall_ms(suspended), wall_ms(dead), wall_ms(granted));
    if let Some(end) = end {
        assert!(end <= dead + 1, "the command wrote after it was seen dead");
        assert!(
            end < granted,
            "the command ended after the next grant: {end} >= {granted}"
        );
    }
    Partition {
        frozen_to_suspended: suspended - wall_ms(frozen),
        suspended_to_term: term.map(|t| t - suspended),
        term_to_end: term.zip(end).map(|(t, e)| e - t),
        dead_to_grant: granted - dead,
        deadline_to_dead: dead - deadline,
        deadline_to_grant: granted - deadline,
        code,
        stderr,
    }
}

/// Five partitions of a holder whose command stops on SIGTERM (in
/// 300 ms). Each time the command has ended, its
/// whole process group gone, before the lease deadline and so before the
/// next writer is granted; exec exits 79 and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_holder_stops_its_command_before_the_next_grant() {
    let tasks: Vec<_> = (0..5)
        .map(|i| {
            tokio::spawn(async move {
                // Staggered, so that the freezes fall at different points
                // of the ping cycle.
                tokio::time::sleep(Duration::from_millis(113 * i)).await;
                partition("partition", "stop").await
            })
        })
        .collect();
    let mut runs = Vec::new();
    for task in tasks {
        runs.push(joined(3 * WITHIN, task).await);
    }
    for run in &runs {
        eprintln!(
            "partition: frozen→suspended {} ms, suspended→SIGTERM {:?} ms, SIGTERM→end {:?} ms, \
             group gone→grant {} ms, lease deadline→group gone {} ms, lease deadline→grant {} ms",
            run.frozen_to_suspended,
            run.suspended_to_term,
            run.term_to_end,
            run.dead_to_grant,
            run.deadline_to_dead,
            run.deadline_to_grant
        );
    }
    for run in &runs {
        assert_eq!(run.code, Some(79), "{run:#?}");
        assert!(
            run.stderr
                .contains("zk-rwlock: connection to ZooKeeper lost while the command ran")
                && run.stderr.contains("stopping the command (SIGTERM now"),
            "{run:#?}"
        );
        assert!(
            run.stderr
                .contains("the command was stopped because the connection to ZooKeeper was lost"),
            "{run:#?}"
        );
        assert!(!run.stderr.contains("sending SIGKILL"), "{run:#?}");
        let term_to_end = run.term_to_end.expect("the command got SIGTERM and ended");
        assert!(term_to_end >= 300, "{run:#?}");
        assert!(
            run.dead_to_grant > 0,
            "granted before the command was gone: {run:#?}"
        );
        assert!(
            run.deadline_to_dead < 0,
            "the command outlived the lease: {run:#?}"
        );
        assert!(
            run.deadline_to_grant >= 0,
            "granted before the lease deadline: {run:#?}"
        );
        // A lost connection is seen 2/5 of the session timeout after the
        // last answer (checked every 1/20), well within the lease.
        assert!(
            run.frozen_to_suspended < (SESSION_MS as i64) * 49 / 50,
            "the lost connection was noticed late: {run:#?}"
        );
    }
}

/// A command that ignores SIGTERM is killed, with its group, at the lease
/// deadline less the kill margin: gone before the deadline, so before the
/// next grant; exec exits 79.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_ignores_sigterm_is_killed_before_the_lease_runs_out() {
    let run = partition("stubborn", "ignore").await;
    eprintln!(
        "stubborn: frozen→suspended {} ms, lease deadline→group gone {} ms, group gone→grant {} ms, \
         lease deadline→grant {} ms",
        run.frozen_to_suspended, run.deadline_to_dead, run.dead_to_grant, run.deadline_to_grant
    );
    assert_eq!(run.code, Some(79), "{run:#?}");
    assert!(
        run.stderr.contains("before the lease runs out: sending SIGKILL"),
        "{run:#?}"
    );
    assert_eq!(run.term_to_end, None, "the command ignored SIGTERM: {run:#?}");
    assert!(
        run.deadline_to_dead < 0,
        "the command outlived the lease: {run:#?}"
    );
    // Killed at the margin, not before: the command had its time for
    // SIGTERM (the lease file's deadline is rounded to the millisecond).
    assert!(
        run.deadline_to_dead >= -(MARGIN_MS as i64) - 5,
        "killed earlier than the margin: {run:#?}"
    );
    assert!(
        run.dead_to_grant > 0,
        "granted before the command was gone: {run:#?}"
    );
}

/// `--on-suspend ignore`: the command keeps running through a partition
/// that heals within the lease, and exec exits with its status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_suspend_ignore_keeps_the_command_running_through_a_short_partition() {
    let direct = server().connect_string();
    let path = unique_path("ignore");
    let dir = scratch("ignore");
    let proxy = Proxy::start(&direct);
    // Runs until told to stop (the file `go`), then exits 7.
    let script = r#"
echo "$ZK_RWLOCK_LEASE_FILE" > "$1/lease.tmp" && mv "$1/lease.tmp" "$1/leasefile"
echo $$ > "$1/pid.tmp" && mv "$1/pid.tmp" "$1/pid"
while [ ! -e "$1/go" ]; do sleep 0.02; done
exit 7
"#;
    let mut run = exec(
        proxy.addr(),
        &path,
        &["--on-suspend", "ignore"],
        script,
        &dir,
        &[],
    );
    let pid = numbers(&dir.join("pid")).await[0] as u32;
    let lease_file = PathBuf::from(read_when_there(&dir.join("leasefile")).await.trim());
    let (_, state) = lease_line(&read_when_there(&lease_file).await);
    assert_eq!(state, "held");

    proxy.freeze();
    run.line("the command keeps running (--on-suspend ignore)").await;
    // The keeper writes the file on exec's word, as exec says so on stderr:
    // the two arrive in either order.
    let mut seen = (0, String::new());
    eventually("the lease file says suspended", WITHIN, || {
        seen = lease_line(&std::fs::read_to_string(&lease_file).unwrap_or_default());
        let suspended = seen.1 == "suspended";
        async move { suspended }
    })
    .await;
    let (deadline, state) = seen;
    assert_eq!(state, "suspended");
    proxy.thaw();
    run.line("connection to ZooKeeper back: the lock is held").await;
    assert!(
        now_ms() < deadline,
        "the connection came back after the lease deadline: the test proves nothing"
    );
    assert!(alive(pid), "the command was stopped");
    eventually("the lease file says held, with a later deadline", WITHIN, || {
        let (now, state) = lease_line(&std::fs::read_to_string(&lease_file).unwrap_or_default());
        let ok = state == "held" && now > deadline;
        async move { ok }
    })
    .await;
    std::fs::write(dir.join("go"), "").unwrap();
    let (code, stderr) = run.finish().await;
    assert_eq!(code, Some(7), "{stderr}");
    assert!(
        !stderr.contains("SIGTERM") && !stderr.contains("lock lost"),
        "{stderr}"
    );
    assert!(
        !lease_file.parent().unwrap().exists(),
        "exec removed its lease file's directory"
    );
    settles_to(&client_on(&direct).await, &path, &[]).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The command's environment: the session timeout, the lease deadline at
/// spawn, and a lease file (in a private directory) whose deadline moves
/// on while the lock is held.
#[tokio::test]
async fn the_command_sees_its_lease() {
    let path = unique_path("lease-env");
    let dir = scratch("lease-env");
    let spawned = now_ms();
    // Reads the lease file, then again until it changes (it does with the
    // next ping, 3/20 of the session timeout), noting the time of each read.
    let script = r#"
out="$1/out"
{
    echo "node $ZK_RWLOCK_NODE"
    echo "token $ZK_RWLOCK_FENCING_TOKEN"
    echo "timeout $ZK_RWLOCK_SESSION_TIMEOUT_MS"
    echo "deadline $ZK_RWLOCK_LEASE_DEADLINE_MS"
    echo "file $ZK_RWLOCK_LEASE_FILE"
    echo "mode $(stat -c %a "$(dirname "$ZK_RWLOCK_LEASE_FILE")")"
    echo "first $(date +%s%3N) $(cat "$ZK_RWLOCK_LEASE_FILE")"
} > "$out.tmp"
first=$(cat "$ZK_RWLOCK_LEASE_FILE")
i=0
while [ $i -lt 400 ]; do
    now=$(cat "$ZK_RWLOCK_LEASE_FILE")
    [ "$now" != "$first" ] && break
    sleep 0.02
    i=$((i + 1))
done
echo "second $(date +%s%3N) $now" >> "$out.tmp"
mv "$out.tmp" "$out"
"#;
    let run = exec(&server().connect_string(), &path, &[], script, &dir, &[]);
    let (code, stderr) = run.finish().await;
    assert_eq!(code, Some(0), "{stderr}");
    let text = std::fs::read_to_string(dir.join("out")).unwrap();
    let value = |key: &str| -> Vec<String> {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no {key} in {text}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let num = |s: &str| -> i64 { s.parse().unwrap_or_else(|_| panic!("{s:?} in {text}")) };
    assert!(value("node")[0].starts_with(&format!("{path}/")), "{text}");
    assert!(num(&value("token")[0]) > 0, "{text}");
    assert_eq!(value("timeout"), ["4000"], "{text}");
    let deadline = num(&value("deadline")[0]);
    assert!(
        deadline > spawned && deadline <= now_ms() + SESSION_MS as i64,
        "{text}"
    );
    let file = PathBuf::from(&value("file")[0]);
    assert_eq!(value("mode"), ["700"], "{text}");
    assert!(
        !file.parent().unwrap().exists(),
        "exec removed its lease file's directory"
    );
    // Each read: when, the deadline, the state.
    let read = |key: &str| {
        let v = value(key);
        assert_eq!(v.len(), 3, "{text}");
        (num(&v[0]), num(&v[1]), v[2].clone())
    };
    let (first_at, first, first_state) = read("first");
    let (second_at, second, second_state) = read("second");
    assert_eq!(
        (first_state.as_str(), second_state.as_str()),
        ("held", "held"),
        "{text}"
    );
    assert!(second > first, "the deadline moved on: {text}");
    for (at, deadline) in [(first_at, first), (second_at, second)] {
        // A deadline the file had (to the ms) when it was read: ahead of
        // the read by at most the session timeout, and (being refreshed
        // every 3/20 of it) by more than half of it.
        assert!(
            deadline > at + SESSION_MS as i64 / 2 && deadline <= at + SESSION_MS as i64 + 5,
            "{text}"
        );
    }
    // At spawn, the same lease as the file's first reading, give or take a renewal.
    assert!((first - deadline).abs() <= SESSION_MS as i64 / 2, "{text}");
    settles_to(&client_on(&server().connect_string()).await, &path, &[]).await;
    let _ = std::fs::remove_dir_all(&dir);
}
