//! Nothing of a holder's process tree runs after the next writer's grant.
//!
//! Writer A runs `zk-rwlock exec --write` with a command whose worker
//! process (a child, a background job, a daemon that left A's process
//! group and session) appends `A <wall ns> <pid>` to a log every 50 ms;
//! writer B, started later on the same lock, appends `B <wall ns>` once it
//! is granted. Judged by the work's own timestamps: no `A` line after B's,
//! and every A worker dead by then. A is stopped (SIGSTOP), killed
//! (SIGKILL), cut off in a terminal, or its command exits while its
//! background work goes on. And a holder killed with SIGKILL takes its
//! command with it; its lock passes on only once its session has expired.
//!
//! `ZK_RWLOCK_REPEAT=n` runs each scenario n times in a row (default 1).

use zk_rwlock_fixtures as support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::kill;
use support::proxy::Proxy;
use support::{alive, client_on, eventually, server, settles_to, unique_path, wait_contenders};
use zk_rwlock::{ContenderState, SharedLock};

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock");
/// Upper bound for anything that should happen promptly.
const WITHIN: Duration = Duration::from_secs(30);

/// The worker: `worker.sh LOG N` appends `A <ns> <pid>` every 50 ms, N
/// times (0: forever).
const WORKER: &str = r#"#!/bin/sh
i=0
while [ "$2" -eq 0 ] || [ "$i" -lt "$2" ]; do
  echo "A $(date +%s%N) $$" >> "$1"
  i=$((i + 1))
  sleep 0.05
done
"#;

fn repeat() -> usize {
    std::env::var("ZK_RWLOCK_REPEAT")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

/// A scratch directory with the worker script in it.
fn scratch(name: &str) -> PathBuf {
    let unique = unique_path(name);
    let dir = std::env::temp_dir().join(format!("zk-rwlock-tree{}", unique.replace('/', "-")));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let worker = dir.join("worker.sh");
    std::fs::write(&worker, WORKER).expect("worker script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&worker, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// The log: A's lines (time, pid) and B's grant times.
struct Log {
    a: Vec<(i128, u32)>,
    b: Vec<i128>,
    lease_file: Option<PathBuf>,
}

fn read_log(path: &Path) -> Log {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut log = Log {
        a: Vec::new(),
        b: Vec::new(),
        lease_file: None,
    };
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["A", t, pid] => {
                if let (Ok(t), Ok(pid)) = (t.parse(), pid.parse()) {
                    log.a.push((t, pid));
                }
            }
            ["B", t] => log.b.extend(t.parse::<i128>().ok()),
            ["F", file] => log.lease_file = Some(PathBuf::from(file)),
            _ => {}
        }
    }
    log
}

/// Waits until A's worker has written at least `n` lines.
async fn worker_running(log: &Path, n: usize) {
    eventually("A's worker writes", WITHIN, || {
        let count = read_log(log).a.len();
        async move { count >= n }
    })
    .await;
}

/// `zk-rwlock exec --write <extra> --connect <connect> <path> -- sh -c <script> <dir>/worker.sh <dir>/log`.
fn exec_a(connect: &str, path: &str, extra: &[&str], script: &str, dir: &Path) -> std::process::Child {
    Command::new(BIN)
        .args(["exec", "--write"])
        .args(extra)
        .args(["--connect", connect, path, "--", "sh", "-c", script])
        .arg(dir.join("worker.sh"))
        .arg(dir.join("log"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zk-rwlock exec")
}

/// Writer B: granted, it writes its time; waits for it to finish.
async fn writer_b(connect: &str, path: &str, dir: &Path) -> std::process::Output {
    let out = tokio::process::Command::new(BIN)
        .args(["exec", "--write", "--connect", connect, path, "--", "sh", "-c"])
        .arg(r#"echo "B $(date +%s%N)" >> "$0""#)
        .arg(dir.join("log"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(WITHIN, out)
        .await
        .expect("writer B finished in time")
        .expect("run writer B");
    assert!(out.status.success(), "writer B: {out:?}");
    out
}

/// The verdict: B was granted once, after A's last line, and every A worker
/// is dead by now.
fn judge(dir: &Path, what: &str) {
    let log = read_log(&dir.join("log"));
    assert_eq!(log.b.len(), 1, "{what}: B's grant written once");
    let b = log.b[0];
    assert!(!log.a.is_empty(), "{what}: A's worker never wrote");
    let late: Vec<_> = log.a.iter().filter(|(t, _)| *t >= b).collect();
    assert!(
        late.is_empty(),
        "{what}: A's tree wrote {} time(s) after B was granted (first {:.3} s after)",
        late.len(),
        (late[0].0 - b) as f64 / 1e9
    );
    let mut pids: Vec<u32> = log.a.iter().map(|(_, p)| *p).collect();
    pids.dedup();
    for pid in pids {
        assert!(!alive(pid), "{what}: A's worker {pid} still runs after B's grant");
    }
}

/// Waits for `child` (bounded); its exit code and stderr.
async fn finish(child: std::process::Child) -> (Option<i32>, String) {
    let out = tokio::time::timeout(
        WITHIN,
        tokio::task::spawn_blocking(move || child.wait_with_output()),
    )
    .await
    .expect("exec finished in time")
    .expect("join")
    .expect("wait for exec");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// CMD exits at once, its background jobs go on: the lock is held until
/// they end, whichever way they left CMD's process group or session
/// (flock(1)'s promise: the lock lives as long as anything CMD started).
#[tokio::test]
async fn background_work_holds_the_lock_until_it_ends() {
    let connect = server().connect_string();
    for round in 0..repeat() {
        for (name, script) in [
            ("a background job", r#""$0" "$1" 20 & exit 0"#),
            ("nohup", r#"nohup "$0" "$1" 20 >/dev/null 2>&1 & exit 0"#),
            ("setsid", r#"setsid "$0" "$1" 20 & exit 0"#),
            (
                "a double fork into a new session",
                r#"(setsid "$0" "$1" 20 &); exit 0"#,
            ),
            ("a pipeline's stage", r#""$0" "$1" 20 | cat > /dev/null & exit 0"#),
        ] {
            let what = format!("{name} (round {round})");
            let dir = scratch("bg");
            let path = unique_path("bg");
            let a = exec_a(&connect, &path, &[], script, &dir);
            worker_running(&dir.join("log"), 2).await;
            writer_b(&connect, &path, &dir).await;
            judge(&dir, &what);
            let (code, stderr) = finish(a).await;
            assert_eq!(code, Some(0), "{what}: {stderr}");
            assert!(
                stderr.contains("still run") && stderr.contains("the lock is held until they exit"),
                "{what}: {stderr}"
            );
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// `--kill-orphans`: CMD's exit ends what it started (it would run
/// forever), then the lock is released.
#[tokio::test]
async fn kill_orphans_ends_the_rest_of_the_tree() {
    let connect = server().connect_string();
    for round in 0..repeat() {
        for (name, script) in [
            ("a background job", r#""$0" "$1" 0 & sleep 0.3; exit 0"#),
            (
                "a double fork into a new session",
                r#"(setsid "$0" "$1" 0 &); sleep 0.3; exit 0"#,
            ),
            // SIGTERM ignored: SIGKILL after --kill-after.
            (
                "a job ignoring SIGTERM",
                r#"(trap "" TERM; "$0" "$1" 0) & sleep 0.3; exit 0"#,
            ),
        ] {
            let what = format!("{name} (round {round})");
            let dir = scratch("orphans");
            let path = unique_path("orphans");
            let a = exec_a(
                &connect,
                &path,
                &["--kill-orphans", "--kill-after", "1s"],
                script,
                &dir,
            );
            worker_running(&dir.join("log"), 1).await;
            let (code, stderr) = finish(a).await;
            assert_eq!(code, Some(0), "{what}: {stderr}");
            assert!(stderr.contains("--kill-orphans"), "{what}: {stderr}");
            writer_b(&connect, &path, &dir).await;
            judge(&dir, &what);
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// exec killed with SIGKILL: its keeper kills CMD's whole tree at once
/// (CMD's own child included, which no parent-death signal reaches).
#[tokio::test]
async fn exec_killed_takes_the_whole_tree() {
    let connect = server().connect_string();
    for round in 0..repeat() {
        let dir = scratch("killed");
        let path = unique_path("killed");
        let mut a = exec_a(
            &connect,
            &path,
            &["--session-timeout", "2s"],
            r#"sh -c '"$0" "$1" 0' "$0" "$1"; echo cleanup"#,
            &dir,
        );
        worker_running(&dir.join("log"), 2).await;
        a.kill().expect("kill -9 exec");
        let _ = a.wait();
        writer_b(&connect, &path, &dir).await;
        judge(&dir, &format!("exec killed (round {round})"));
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// exec stopped (SIGSTOP) with its command running in a group of its own:
/// the keeper stops the tree by the lease's deadlines, and the lease file
/// never shows a deadline that has passed as held. Continued, exec says
/// the lock was lost.
#[tokio::test]
async fn exec_stopped_the_keeper_stops_the_tree_in_time() {
    let connect = server().connect_string();
    for round in 0..repeat() {
        let dir = scratch("stopped");
        let path = unique_path("stopped");
        let a = exec_a(
            &connect,
            &path,
            &["--session-timeout", "2s"],
            r#"echo "F $ZK_RWLOCK_LEASE_FILE" >> "$1"; sh -c '"$0" "$1" 0' "$0" "$1""#,
            &dir,
        );
        worker_running(&dir.join("log"), 2).await;
        let lease_file = read_log(&dir.join("log"))
            .lease_file
            .expect("the lease file's path");
        // `a` is not reaped: the pid is still its.
        kill(a.id(), libc::SIGSTOP);
        let b = {
            let (connect, path, dir) = (connect.clone(), path.clone(), dir.clone());
            tokio::spawn(async move { writer_b(&connect, &path, &dir).await })
        };
        // While B waits: the lease file, as long as it is there, never says
        // held past its deadline.
        while !b.is_finished() {
            if let Ok(text) = std::fs::read_to_string(&lease_file) {
                let mut words = text.split_whitespace();
                let deadline: i128 = words.next().and_then(|w| w.parse().ok()).expect("deadline");
                let state = words.next().unwrap_or("");
                let now_ms = now_ns() / 1_000_000;
                assert!(
                    state != "held" || deadline + 50 >= now_ms,
                    "round {round}: the lease file says held {} ms past its deadline",
                    now_ms - deadline
                );
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        b.await.expect("writer B");
        judge(&dir, &format!("exec stopped (round {round})"));
        kill(a.id(), libc::SIGCONT);
        let (code, stderr) = finish(a).await;
        assert_eq!(code, Some(79), "round {round}: {stderr}");
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Interactive: exec in a terminal's foreground (under script(1)), so CMD
/// shares exec's process group; A's connection is frozen. The whole tree,
/// not only CMD's own process, is stopped before B is granted.
#[tokio::test]
async fn in_a_terminal_the_whole_tree_is_stopped() {
    let connect = server().connect_string();
    assert!(
        Command::new("script").arg("--version").output().is_ok(),
        "this test needs script(1): install util-linux (`sudo apt-get install -y util-linux`)"
    );
    for round in 0..repeat() {
        let dir = scratch("tty");
        let path = unique_path("tty");
        let proxy = Proxy::start(&connect);
        let line = format!(
            "{BIN} exec --write --session-timeout 2s --connect {} {path} -- sh -c '{} \"$1\" 0; echo cleanup' sh {}",
            proxy.addr(),
            dir.join("worker.sh").display(),
            dir.join("log").display(),
        );
        let mut a = Command::new("script")
            .args(["-qfec", &line, "/dev/null"])
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run script(1)");
        worker_running(&dir.join("log"), 2).await;
        proxy.freeze();
        writer_b(&connect, &path, &dir).await;
        judge(&dir, &format!("in a terminal (round {round})"));
        proxy.thaw();
        let started = Instant::now();
        while a.try_wait().expect("wait for script").is_none() {
            assert!(started.elapsed() < WITHIN, "exec under script(1) never ended");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The zk-rwlock binary replaced (an upgrade) while exec waits for the
/// lock: its keeper is still this very program, and CMD runs.
#[tokio::test]
async fn a_binary_replaced_while_waiting_still_runs_the_command() {
    let connect = server().connect_string();
    let dir = scratch("replaced");
    let path = unique_path("replaced");
    let copy = dir.join("zk-rwlock");
    std::fs::copy(BIN, &copy).expect("copy the binary");
    let holder = SharedLock::new(client_on(&connect).await, &path).expect("lock");
    let guard = holder.write().await.expect("hold the lock");
    let ran = dir.join("ran");
    let a = Command::new(&copy)
        .args(["exec", "--write", "--connect", &connect, &path, "--", "touch"])
        .arg(&ran)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the copy");
    wait_contenders(&holder, 2).await;
    std::fs::remove_file(&copy).expect("remove the binary");
    guard.release().await.expect("release");
    let (code, stderr) = finish(a).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(ran.exists(), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A `zk-rwlock exec` holder killed with SIGKILL takes its command with it,
/// and its lock passes on only once its session has expired.
#[tokio::test]
async fn a_killed_holder_process_is_replaced_only_after_its_session_expires() {
    let connect = server().connect_string();
    let path = unique_path("kill9");
    let pidfile = std::env::temp_dir().join(format!("zk-rwlock-{}", &path[1..].replace('/', "-")));
    let _ = std::fs::remove_file(&pidfile);
    let mut holder = Command::new(BIN)
        .args([
            "exec",
            "--write",
            "--session-timeout",
            "2s",
            "--connect",
            &connect,
            &path,
            "--",
            "sh",
            "-c",
            // The command writes its pid, then becomes `sleep` (same pid).
            r#"echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 600"#,
            "sh",
        ])
        .arg(&pidfile)
        .stdin(Stdio::null())
        .spawn()
        .expect("run zk-rwlock exec");
    let observer = SharedLock::new(client_on(&connect).await, &path).unwrap();
    eventually("the holder process holds the lock", WITHIN, || async {
        observer
            .contenders()
            .await
            .map(|c| c.len() == 1 && c[0].state == ContenderState::Holds)
            .unwrap_or(false)
    })
    .await;
    let held = observer.contenders().await.unwrap().remove(0).path;
    let mut command = None;
    eventually("the command wrote its pid", WITHIN, || {
        command = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|pid| pid.trim().parse::<u32>().ok());
        let found = command.is_some();
        async move { found }
    })
    .await;
    let command = command.unwrap();
    let _ = std::fs::remove_file(&pidfile);
    assert!(alive(command), "the command runs");
    let waiter_lock = observer.clone();
    let waiter = tokio::spawn(async move { waiter_lock.write().await });
    wait_contenders(&observer, 2).await;

    holder.kill().expect("kill -9 the holder");
    let killed = std::time::Instant::now();
    let _ = holder.wait();
    // exec cannot forward a SIGKILL; on Linux its command gets one when
    // exec dies (`exec --help`: "CMD is killed (SIGKILL) if zk-rwlock itself
    // dies"): no command keeps running without the lock.
    eventually(
        "the command died with exec",
        WITHIN,
        || async move { !alive(command) },
    )
    .await;
    let direct = client_on(&connect).await;
    // Not before: while the dead holder's node exists, nobody else is granted.
    loop {
        let granted = waiter.is_finished();
        let exists = direct.check_stat(&held).await.unwrap().is_some();
        assert!(
            !(granted && exists),
            "granted while the killed holder's node still existed"
        );
        if !exists {
            break;
        }
        assert!(
            killed.elapsed() < WITHIN,
            "the killed holder's session never expired"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let expired_after = killed.elapsed();
    let g = tokio::time::timeout(WITHIN, waiter)
        .await
        .expect("granted after expiry")
        .unwrap()
        .unwrap();
    // The session (2 s) was last renewed at most a ping interval (a few
    // hundred ms) before the kill: its node lives on for about 2 s.
    assert!(
        expired_after >= Duration::from_secs(1),
        "the node outlived its process until expiry, not {expired_after:?}"
    );
    g.release().await.unwrap();
    settles_to(&direct, &path, &[]).await;
}
