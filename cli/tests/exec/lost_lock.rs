//! `exec` losing the lock while its command runs: its node deleted or its
//! session's lease run out (with `--on-suspend ignore`), exec terminates
//! the command's whole process group (SIGKILL after `--kill-after` if it
//! ignores SIGTERM), exits 79 and says so once. (The default, stopping the
//! command as soon as the connection is lost, is in `partition.rs`.)

use zk_rwlock_fixtures as support;

use std::time::{Duration, Instant};

use crate::common::{finish, read_pids, s, scratch, wait_children, zk_rwlock, SHORT};
use support::{alive, assert_drained, client, eventually, server, unique_path, wait_nodes};

/// Deleting the node while the command runs: exec says so, kills the
/// command and exits 79.
#[tokio::test]
async fn lost_lock_terminates_the_command() {
    let path = unique_path("lost");
    let dir = scratch("lost");
    let pidfile = dir.join("pid");
    let c = client().await;
    let started = Instant::now();
    let exec = zk_rwlock(&[
        "exec",
        "--write",
        &path,
        "--",
        "sh",
        "-c",
        // A shell and its own child: SIGTERM goes to the whole group.
        r#"sleep 60 & echo "$$ $!" > "$1"; wait"#,
        "sh",
        s(&pidfile),
    ])
    .spawn()
    .unwrap();
    let pids = read_pids(&pidfile).await;
    assert!(pids.iter().all(|&p| alive(p)));
    let node = wait_children(&c, &path, 1).await.remove(0);
    c.delete(&format!("{path}/{node}"), None).await.unwrap();
    let out = finish(exec).await;
    out.expect_code(79);
    assert!(
        out.stderr.contains("zk-rwlock: lock lost (node ")
            && out.stderr.contains("was deleted): terminating the command"),
        "{out:#?}"
    );
    eventually("the command's processes are gone", SHORT, || {
        let any = pids.iter().any(|&p| alive(p));
        async move { !any }
    })
    .await;
    // SIGTERM was enough: no waiting for the 10 s --kill-after (not even
    // where orphans stay unreaped zombies).
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// A command that ignores SIGTERM is killed, with its whole process group,
/// after --kill-after.
#[tokio::test]
async fn lost_lock_kills_a_stubborn_command_group_after_the_grace_period() {
    let path = unique_path("stubborn");
    let dir = scratch("stubborn");
    let pidfile = dir.join("pids");
    let c = client().await;
    let exec = zk_rwlock(&[
        "exec",
        "--write",
        "--kill-after",
        "300ms",
        &path,
        "--",
        "sh",
        "-c",
        r#"trap '' TERM; sleep 60 & echo "$$ $!" > "$1"; wait"#,
        "sh",
        s(&pidfile),
    ])
    .spawn()
    .unwrap();
    let pids = read_pids(&pidfile).await;
    assert_eq!(pids.len(), 2);
    let node = wait_children(&c, &path, 1).await.remove(0);
    let deleted = Instant::now();
    c.delete(&format!("{path}/{node}"), None).await.unwrap();
    let out = finish(exec).await;
    out.expect_code(79);
    assert!(
        deleted.elapsed() >= Duration::from_millis(300),
        "killed before the grace period"
    );
    assert!(out.stderr.contains("sending SIGKILL"), "{out:#?}");
    // The shell and its background child, which share the group.
    eventually("the command's processes are gone", SHORT, || {
        let any = pids.iter().any(|&p| alive(p));
        async move { !any }
    })
    .await;
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// The network between exec and ZooKeeper is cut while the command runs:
/// with `--on-suspend ignore` the command runs on while the lease lasts,
/// then the lock is lost, the command is terminated and exec exits 79.
/// (The default, stopping the command as soon as the connection is lost,
/// is in `partition.rs`.)
#[tokio::test]
async fn expired_session_terminates_the_command() {
    let path = unique_path("expired");
    let dir = scratch("expired");
    let pidfile = dir.join("pid");
    let proxy = support::proxy::Proxy::start(&server().connect_string());
    let c = client().await;
    let exec = zk_rwlock(&[
        "exec",
        "--write",
        "--session-timeout",
        "1s",
        "--on-suspend",
        "ignore",
        "--connect",
        proxy.addr(),
        &path,
        "--",
        "sh",
        "-c",
        r#"echo $$ > "$1"; exec sleep 60"#,
        "sh",
        s(&pidfile),
    ])
    .spawn()
    .unwrap();
    let pid = read_pids(&pidfile).await[0];
    wait_children(&c, &path, 1).await;
    proxy.set_blocked(true);
    proxy.cut_all();
    let out = finish(exec).await;
    out.expect_code(79);
    assert!(
        out.stderr
            .contains("the command keeps running (--on-suspend ignore)"),
        "{out:#?}"
    );
    assert!(
        out.stderr.contains("zk-rwlock: lock lost (its lease ran out")
            && out.stderr.contains("terminating the command"),
        "{out:#?}"
    );
    assert!(!alive(pid), "the command survived the loss");
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// The library's warning about a lock lost while the command ran
/// is not printed beside `exec`'s own message about it.
#[tokio::test]
async fn a_lost_lock_is_said_once() {
    let path = unique_path("lost-once");
    let c = client().await;
    let started = scratch("lost-once").join("started");
    let exec = zk_rwlock(&["exec", "-w", "--kill-after", "1s", &path, "--", "sh", "-c"])
        .args([r#"touch "$0"; sleep 60"#])
        .arg(&started)
        .spawn()
        .unwrap();
    // Held: the command runs (a node seen in the directory may still be
    // waiting for its listing).
    eventually("the command runs", SHORT, || {
        let there = started.exists();
        async move { there }
    })
    .await;
    let names = wait_nodes(&c, &path, 1).await;
    let node = format!("{path}/{}", names[0]);
    c.delete(&node, None).await.unwrap();
    let out = finish(exec).await;
    out.expect_code(79);
    let said: Vec<&str> = out.stderr.lines().filter(|l| l.contains("lock lost")).collect();
    assert_eq!(said.len(), 1, "{out:#?}");
    assert!(said[0].starts_with("zk-rwlock: lock lost ("), "{out:#?}");
    for line in out.stderr.lines() {
        assert!(line.starts_with("zk-rwlock: "), "{line:?} in {out:#?}");
    }
    let _ = c.delete(&path, None).await;
}
