//! `exec` runs its command under the lock: the command's environment, its
//! exit status as zk-rwlock's, writers one at a time and readers together,
//! several locks all or nothing, signals forwarded to the command's group,
//! and foreign children of the lock directory warned about once. Every test
//! checks that its lock directory ends up empty.

use zk_rwlock_fixtures as support;

use crate::common::{finish, kill, read_pids, run, s, scratch, wait_children, zk_rwlock, BIN, SHORT};
use serde_json::Value;
use support::{alive, assert_drained, children, client, eventually, lock, unique_path};
use tokio::process::Child;
use zk_rwlock::zk;

/// The command runs under the lock with its environment; its exit code
/// (or 128+signal) becomes zk-rwlock's; 126/127 as in shells.
#[tokio::test]
async fn exec_runs_the_command_under_the_lock_and_propagates_its_status() {
    let path = unique_path("exec");
    // While the command runs, `status` (run by the command itself) shows
    // its node holding the lock.
    let script = r#"echo "$ZK_RWLOCK_NODE $ZK_RWLOCK_FENCING_TOKEN"; "$0" status --json "$1""#;
    let out = run(&["exec", "--write", &path, "--", "sh", "-c", script, BIN, &path]).await;
    out.expect_code(0);
    let (first, json) = out.stdout.split_once('\n').expect("two outputs");
    let (node, token) = first.split_once(' ').expect("node and token");
    assert!(node.starts_with(&format!("{path}/")), "{node}");
    assert!(node.contains("-W-"), "{node}");
    let token: i64 = token.parse().expect("token is an integer");
    assert!(token > 0);
    let status: Value = serde_json::from_str(json).expect("status JSON");
    let contenders = status["contenders"].as_array().unwrap();
    assert_eq!(contenders.len(), 1, "{status}");
    assert_eq!(contenders[0]["path"], node);
    assert_eq!(contenders[0]["state"], "holds");
    assert_eq!(contenders[0]["fencing_token"], token);

    // Read mode, exit codes, and no `--` needed.
    run(&["exec", "--read", &path, "sh", "-c", "exit 3"])
        .await
        .expect_code(3);
    run(&["exec", "-r", &path, "--", "true"]).await.expect_code(0);
    run(&["exec", "-w", &path, "--", "sh", "-c", "kill -KILL $$"])
        .await
        .expect_code(128 + libc::SIGKILL);
    run(&["exec", "-w", &path, "--", "sh", "-c", "kill -TERM $$"])
        .await
        .expect_code(128 + libc::SIGTERM);

    // Not found / not executable, like shells; the lock is released.
    let out = run(&["exec", "-w", &path, "--", "/nonexistent/zk-rwlock-test-cmd"]).await;
    out.expect_code(127);
    assert!(out.stderr.contains("zk-rwlock: cannot run"), "{out:#?}");
    let dir = scratch("noexec");
    let file = dir.join("not-executable");
    std::fs::write(&file, "#!/bin/sh\n").unwrap();
    run(&["exec", "-w", &path, "--", s(&file)]).await.expect_code(126);

    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Concurrent writers never overlap.
#[tokio::test]
async fn concurrent_writers_never_overlap() {
    let path = unique_path("writers");
    let dir = scratch("writers");
    let log = dir.join("log");
    let script = r#"echo start >> "$1"; sleep 0.05; echo end >> "$1""#;
    let runs: Vec<Child> = (0..4)
        .map(|_| {
            zk_rwlock(&["exec", "--write", &path, "--", "sh", "-c", script, "sh", s(&log)])
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in runs {
        finish(child).await.expect_code(0);
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 8, "{text}");
    for pair in lines.chunks(2) {
        assert_eq!(pair, ["start", "end"], "writers overlapped:\n{text}");
    }
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Readers share the lock: each waits until the other has started, which
/// only terminates if both run at the same time.
#[tokio::test]
async fn readers_run_together() {
    let path = unique_path("readers");
    let dir = scratch("readers");
    let script = r#"touch "$1"; i=0; while [ ! -e "$2" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; [ -e "$2" ]"#;
    let (a, b) = (dir.join("a"), dir.join("b"));
    let first = zk_rwlock(&[
        "exec",
        "--read",
        &path,
        "--",
        "sh",
        "-c",
        script,
        "sh",
        s(&a),
        s(&b),
    ])
    .spawn()
    .unwrap();
    let second = zk_rwlock(&[
        "exec",
        "--read",
        &path,
        "--",
        "sh",
        "-c",
        script,
        "sh",
        s(&b),
        s(&a),
    ])
    .spawn()
    .unwrap();
    finish(first).await.expect_code(0);
    finish(second).await.expect_code(0);
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// SIGTERM while the command runs is forwarded to its process group;
/// zk-rwlock releases the lock and exits 143.
#[tokio::test]
async fn signal_while_running_is_forwarded() {
    let path = unique_path("forward");
    let dir = scratch("forward");
    let pidfile = dir.join("pids");
    let exec = zk_rwlock(&[
        "exec",
        "--write",
        &path,
        "--",
        "sh",
        "-c",
        r#"sleep 60 & echo "$$ $!" > "$1"; wait"#,
        "sh",
        s(&pidfile),
    ])
    .spawn()
    .unwrap();
    let pids = read_pids(&pidfile).await;
    kill(exec.id().unwrap(), libc::SIGTERM);
    let out = finish(exec).await;
    out.expect_code(143);
    eventually("the command's processes are gone", SHORT, || {
        let any = pids.iter().any(|&p| alive(p));
        async move { !any }
    })
    .await;
    assert!(
        children(&client().await, &path).await.is_empty(),
        "released before exit"
    );
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Children of the lock directory that are not contender nodes are
/// ignored with one warning per name, however often `exec` lists the
/// directory while it waits.
#[tokio::test]
async fn exec_warns_once_per_foreign_child() {
    let path = unique_path("foreign-warn");
    let holder = lock(&path).await;
    let guard = holder.write().await.unwrap();
    let c = holder.client();
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let foreign = ["junk-a", "junk-b"];
    for name in foreign {
        c.create(&format!("{path}/{name}"), &[], &persistent)
            .await
            .unwrap();
    }
    // Readers queued behind the writer, then exec's writer behind them: it
    // watches the last reader, and each reader that gives up makes it list
    // the directory again.
    let mut readers = Vec::new();
    for _ in 0..3 {
        let l = lock(&path).await;
        let waiting = tokio::spawn(async move { l.read().await });
        readers.push(waiting);
    }
    wait_children(c, &path, 2 + 1 + 3).await;
    let exec = zk_rwlock(&["exec", "--write", &path, "--", "true"])
        .env("RUST_LOG", "zk_rwlock=debug")
        .spawn()
        .unwrap();
    wait_children(c, &path, 2 + 1 + 3 + 1).await;
    // Newest first: each one is the node exec's writer watches.
    for (i, reader) in readers.into_iter().enumerate().rev() {
        reader.abort();
        wait_children(c, &path, 2 + 1 + i + 1).await;
    }
    guard.release().await.unwrap();
    let out = finish(exec).await;
    out.expect_code(0);
    // It listed the directory before each wait: at least twice, since the
    // deletion of the reader it watched first does not grant it the lock
    // (four times when it sees each reader go on its own).
    let waits = out
        .stderr
        .lines()
        .filter(|l| l.contains("zk_rwlock::lock") && l.contains(": waiting node="))
        .count();
    assert!(waits >= 2, "{out:#?}");
    for name in foreign {
        let warnings = out
            .stderr
            .lines()
            .filter(|l| l.contains("not a contender") && l.contains(name))
            .count();
        assert_eq!(warnings, 1, "{name}: {out:#?}");
    }
    for name in foreign {
        c.delete(&format!("{path}/{name}"), None).await.unwrap();
    }
    assert_drained(&path).await;
}

/// Several locks at once: `--also-read` / `--also-write` take them all or
/// none; the command sees every part; a timeout leaves nothing behind; two
/// commands naming the same paths in opposite orders never deadlock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_takes_several_locks_all_or_nothing() {
    let (a, b) = (unique_path("multi-a"), unique_path("multi-b"));
    // A writer holds b: exec wants write on a and read on b, and times out
    // without keeping a.
    let holder = lock(&b).await;
    let held = holder.write().await.unwrap();
    let out = run(&[
        "exec",
        "--write",
        &a,
        "--also-read",
        &b,
        "--timeout",
        "1s",
        "--",
        "true",
    ])
    .await;
    out.expect_code(75);
    assert!(out.stderr.contains("(and 1 more lock)"), "{}", out.stderr);
    let c = client().await;
    wait_children(&c, &a, 0).await;
    held.release().await.unwrap();

    // Free: the command runs with every part in its environment.
    let script = r#"printf '%s\n' "$ZK_RWLOCK_NODE" "$ZK_RWLOCK_NODES" "$ZK_RWLOCK_FENCING_TOKENS""#;
    let out = run(&["exec", "--write", &a, "--also-read", &b, "--", "sh", "-c", script]).await;
    out.expect_code(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", out.stdout);
    assert!(lines[0].starts_with(&format!("{a}/")), "{}", out.stdout);
    let nodes = &lines[1..3];
    let tokens = &lines[3..5];
    // In path order, whatever order the command line gave.
    let (first, second) = if a < b { (&a, &b) } else { (&b, &a) };
    assert!(nodes[0].starts_with(&format!("{first}/")), "{nodes:?}");
    assert!(nodes[1].starts_with(&format!("{second}/")), "{nodes:?}");
    assert!(tokens[0].ends_with(&format!(" {first}")), "{tokens:?}");
    assert!(tokens[1].ends_with(&format!(" {second}")), "{tokens:?}");
    assert!(nodes[0].contains("-W-") == (first == &a), "modes: {nodes:?}");
    assert_drained(&a).await;
    assert_drained(&b).await;

    // Opposite orders, raced: each finishes (no deadlock), never together.
    let dir = scratch("multi");
    let log = dir.join("log");
    let script = format!(
        r#"echo start >> {log}; sleep 0.05; echo end >> {log}"#,
        log = s(&log)
    );
    let mut runs = Vec::new();
    for i in 0..6 {
        let (x, y) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let child = zk_rwlock(&["exec", "--write", x, "--also-write", y, "--", "sh", "-c", &script])
            .spawn()
            .expect("spawn zk-rwlock");
        runs.push(child);
    }
    for child in runs {
        finish(child).await.expect_code(0);
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 12, "{text}");
    for pair in lines.chunks(2) {
        assert_eq!(pair, ["start", "end"], "overlap in:\n{text}");
    }
    assert_drained(&a).await;
    assert_drained(&b).await;
    let _ = std::fs::remove_dir_all(&dir);
}
