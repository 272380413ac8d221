//! The harness of the command line's tests: the `zk-rwlock` binary run on
//! the shared test server, what a run printed and how it exited, scratch
//! directories, signals.

// Each test file uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};
use zk_rwlock_testkit::{server, unique_path};

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
