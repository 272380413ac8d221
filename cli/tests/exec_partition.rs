//! `zk-rwlock exec` and the lease of its lock: what the command sees of it
//! (its environment and its lease file).
//!
//! Times are compared on the wall clock, which the commands (`date`), the
//! lease file and this process share.

use zk_rwlock_testkit as support;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use support::{client_on, server, settles_to, unique_path};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock");
/// The session timeout exec asks for; the test server grants 0.4 to 4 s.
const SESSION: &str = "4s";
const SESSION_MS: u64 = 4_000;
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
    /// Waits for exec to exit; its code and its whole stderr.
    async fn finish(mut self) -> (Option<i32>, String) {
        let mut child = self.child.take().expect("running");
        let pid = child.id();
        let waiting = tokio::task::spawn_blocking(move || child.wait());
        let status = match tokio::time::timeout(WITHIN, waiting).await {
            Ok(joined) => joined.expect("wait for exec").expect("wait for exec"),
            Err(_) => {
                // SAFETY: kill(2) has no memory-safety preconditions; the
                // child is not reaped yet, so the pid is still its.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
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
