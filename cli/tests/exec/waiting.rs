//! `exec` waiting for the lock: `--timeout` gives up (exit 75) without
//! running the command or leaving a node, `--timeout 0` takes a free lock
//! at once, a signal while waiting withdraws the request before exec exits,
//! and a waiting node deleted by someone else is an error (exit 70).

use zk_rwlock_fixtures as support;

use std::time::{Duration, Instant};

use crate::common::{child_name, finish, kill, run, s, scratch, wait_children, zk_rwlock};
use support::{assert_drained, children, lock, unique_path};

/// A timed-out exec exits 75, runs nothing and leaves no node behind.
#[tokio::test]
async fn exec_times_out_behind_a_holder() {
    let path = unique_path("timeout");
    let holder = lock(&path).await;
    let guard = holder.write().await.unwrap();
    let dir = scratch("timeout");
    let marker = dir.join("ran");
    let started = Instant::now();
    let out = run(&[
        "exec",
        "--write",
        "--timeout",
        "300ms",
        &path,
        "--",
        "touch",
        s(&marker),
    ])
    .await;
    out.expect_code(75);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(
        out.stderr.contains(&format!(
            "zk-rwlock: timed out after 300ms waiting for the write lock on {path}"
        )),
        "{out:#?}"
    );
    assert!(!marker.exists(), "the command ran");
    assert_eq!(
        children(holder.client(), &path).await,
        vec![child_name(guard.node())],
        "only the holder's node is left"
    );
    // A reader gives up the same way; with a zero timeout, at its first look.
    let out = run(&["exec", "--read", "-t", "0", &path, "--", "touch", s(&marker)]).await;
    out.expect_code(75);
    assert!(
        out.stderr.contains(&format!(
            "zk-rwlock: the read lock on {path}: taken (--timeout 0: only if free now)"
        )),
        "{out:#?}"
    );
    assert!(!marker.exists());
    guard.release().await.unwrap();
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// `--timeout 0` means "only if free now", as `try_*`: on a free lock it
/// is granted every time, in both modes, on new and existing paths.
#[tokio::test]
async fn exec_with_a_zero_timeout_takes_a_free_lock() {
    let existing = unique_path("zero-timeout");
    for round in 0..6 {
        let fresh = unique_path("zero-timeout-new");
        let path = if round % 2 == 0 { &fresh } else { &existing };
        let mode = ["--write", "--read"][(round / 2) % 2];
        let out = run(&["exec", mode, "--timeout", "0", path, "--", "true"]).await;
        assert_eq!(
            out.code,
            Some(0),
            "round {round}: exec {mode} --timeout 0 on a free lock: {out:#?}"
        );
        assert_drained(path).await;
    }
}

/// Ctrl-C (or SIGTERM, SIGHUP) while waiting: exit 130 (143, 129), the command never
/// runs, and the node is gone by the time zk-rwlock has exited.
#[tokio::test]
async fn interrupt_while_waiting_withdraws_the_request() {
    let path = unique_path("interrupt");
    let dir = scratch("interrupt");
    let marker = dir.join("ran");
    let holder = lock(&path).await;
    let guard = holder.write().await.unwrap();
    let mine = vec![child_name(guard.node())];
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let exec = zk_rwlock(&["exec", "--write", &path, "--", "touch", s(&marker)])
            .spawn()
            .unwrap();
        wait_children(holder.client(), &path, 2).await;
        kill(exec.id().unwrap(), sig);
        let out = finish(exec).await;
        out.expect_code(code);
        assert!(out.stderr.contains("zk-rwlock: interrupted"), "{out:#?}");
        // No polling: the node must be gone before zk-rwlock exits.
        assert_eq!(children(holder.client(), &path).await, mine, "signal {sig}");
        assert!(!marker.exists(), "the command ran");
    }
    guard.release().await.unwrap();
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// The waiting node deleted by someone else: exit 70, command not run.
/// (The library notices only when the node it watches changes, so the
/// holder releases first.)
#[tokio::test]
async fn node_deleted_while_waiting_is_an_error() {
    let path = unique_path("deleted-waiting");
    let dir = scratch("deleted-waiting");
    let marker = dir.join("ran");
    let holder = lock(&path).await;
    let guard = holder.write().await.unwrap();
    let exec = zk_rwlock(&["exec", "--read", &path, "--", "touch", s(&marker)])
        .spawn()
        .unwrap();
    let mine = child_name(guard.node());
    let waiting = wait_children(holder.client(), &path, 2)
        .await
        .into_iter()
        .find(|c| *c != mine)
        .unwrap();
    holder
        .client()
        .delete(&format!("{path}/{waiting}"), None)
        .await
        .unwrap();
    guard.release().await.unwrap();
    let out = finish(exec).await;
    out.expect_code(70);
    assert!(
        out.stderr.contains(&format!(
            "zk-rwlock: someone deleted its node {path}/{waiting} while waiting for the read lock on {path}"
        )),
        "{out:#?}"
    );
    assert!(!marker.exists(), "the command ran");
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}
