//! The harness of the command line's tests (the `exec`, `lead` and
//! `commands` binaries each include it): the `zk-rwlock` binary run on the
//! shared test server, what a run printed and how it exited, the lock
//! directory's children, scratch directories, signals.

// Each test binary uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};
use zk_rwlock::zk;
use zk_rwlock_fixtures::{children, eventually, server, unique_path};

pub const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock");
/// Upper bound for anything that should happen promptly.
pub const SHORT: Duration = Duration::from_secs(15);

/// `zk-rwlock <args>` on the shared server (through `ZK_CONNECT`), with
/// stdout and stderr captured.
pub fn zk_rwlock(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("ZK_CONNECT", server().connect_string())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// What a finished run printed and how it exited.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts the exit code; prints everything if it differs.
    pub fn expect_code(&self, code: i32) -> &Run {
        assert_eq!(self.code, Some(code), "unexpected exit: {self:#?}");
        self.assert_no_panic();
        self
    }

    pub fn assert_no_panic(&self) {
        let err = self.stderr.to_lowercase();
        assert!(
            !err.contains("panicked") && !err.contains("backtrace"),
            "{self:#?}"
        );
    }
}

/// Waits (at most [`SHORT`]) for a spawned `zk-rwlock` to finish.
pub async fn finish(child: Child) -> Run {
    finish_within(child, SHORT).await
}

/// Waits (at most `limit`) for a spawned `zk-rwlock` to finish; it must not
/// have panicked.
pub async fn finish_within(child: Child, limit: Duration) -> Run {
    let out = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .expect("zk-rwlock finished in time")
        .expect("wait for zk-rwlock");
    let run = Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    run.assert_no_panic();
    run
}

/// Runs `zk-rwlock <args>` on the shared server to completion.
pub async fn run(args: &[&str]) -> Run {
    finish(zk_rwlock(args).spawn().expect("spawn zk-rwlock")).await
}

/// Waits until `file` holds a complete line and returns its words.
pub async fn read_pids(file: &Path) -> Vec<u32> {
    let mut pids = Vec::new();
    eventually(&format!("{} written", file.display()), SHORT, || {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let ok = text.ends_with('\n');
        if ok {
            pids = text.split_whitespace().map(|w| w.parse().expect("pid")).collect();
        }
        async move { ok }
    })
    .await;
    pids
}

/// Waits until the lock directory has `n` children.
pub async fn wait_children(c: &zk::Client, path: &str, n: usize) -> Vec<String> {
    let deadline = Instant::now() + SHORT;
    loop {
        let last = children(c, path).await;
        if last.len() == n {
            return last;
        }
        assert!(
            Instant::now() < deadline,
            "{path}: wanted {n} children, have {last:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The last segment of a node's path: its name in the lock directory.
pub fn child_name(node: &str) -> String {
    node.rsplit('/').next().unwrap().to_owned()
}

/// A fresh scratch directory for files the commands write.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "zk-rwlock-cli-{name}-{}-{}",
        std::process::id(),
        unique_path("d").rsplit('-').next().unwrap()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A path as a command-line argument.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// Sends `sig` to process `pid`.
pub fn kill(pid: u32, sig: libc::c_int) {
    let target = rustix::process::Pid::from_raw(pid as i32).expect("a pid");
    let signal = rustix::process::Signal::from_named_raw(sig).expect("a signal");
    if let Err(e) = rustix::process::kill_process(target, signal) {
        panic!("kill({pid}, {sig}): {}", std::io::Error::from(e));
    }
}

/// `zk-rwlock status --watch --json <paths>` running on the shared server,
/// its stdout read line by line as it comes.
pub struct Watching {
    child: std::process::Child,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

/// Starts `status --watch --json` on `paths`.
pub fn watch_status(paths: &[&str]) -> Watching {
    use std::io::BufRead;
    let mut child = std::process::Command::new(BIN)
        .args(["status", "--watch", "--json"])
        .args(paths)
        .env("ZK_CONNECT", server().connect_string())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn zk-rwlock status --watch");
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Watching { child, lines }
}

impl Watching {
    /// Reads snapshots (one JSON object per line) until one that `wanted`
    /// accepts, within [`SHORT`]; `what` names it if none comes.
    pub async fn next(
        &mut self,
        what: &str,
        wanted: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = tokio::time::Instant::now() + SHORT;
        loop {
            let line = tokio::time::timeout_at(deadline, self.lines.recv())
                .await
                .unwrap_or_else(|_| panic!("no snapshot with {what}"))
                .expect("status still running");
            let v = serde_json::from_str(&line).expect("one JSON object per line");
            if wanted(&v) {
                return v;
            }
        }
    }

    /// Ctrl-C: `status --watch` must exit 0 within [`SHORT`], without panic.
    pub async fn interrupt(mut self) {
        kill(self.child.id(), libc::SIGINT);
        let deadline = std::time::Instant::now() + SHORT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "status --watch ignored Ctrl-C"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut self.child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(0), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// How many contenders a JSON snapshot of one path lists.
pub fn contenders(snapshot: &serde_json::Value) -> usize {
    snapshot["contenders"].as_array().expect("contenders").len()
}
