//! The `zk-rwlock` binary against a real ZooKeeper server: `exec` runs
//! commands under the lock (exit codes, environment, exclusion, timeouts,
//! loss, signals, bad input) and `status` shows the real queue. Every test
//! checks that its lock directory ends up empty.

mod common;

use zk_rwlock_testkit as support;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{contenders, finish, kill, run, s, scratch, watch_status, zk_rwlock, BIN, SHORT};
use serde_json::Value;
use support::{alive, assert_drained, children, client, eventually, lock, server, unique_path};
use tokio::process::Child;
use zk_rwlock::{zk, ContenderState};

/// Waits until `file` holds a complete line and returns its words.
async fn read_pids(file: &Path) -> Vec<u32> {
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
async fn wait_children(c: &zk::Client, path: &str, n: usize) -> Vec<String> {
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

fn child_name(node: &str) -> String {
    node.rsplit('/').next().unwrap().to_owned()
}

/// 1. The command runs under the lock with its environment; its exit code
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

/// 2. Concurrent writers never overlap.
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

/// 3. A timed-out exec exits 75, runs nothing and leaves no node behind.
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

/// 4. Deleting the node while the command runs: exec says so, kills the
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
/// is in `exec_partition.rs`.)
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

/// 5. `status --json` shows the real queue, and foreign children.
#[tokio::test]
async fn status_shows_the_real_queue() {
    let path = unique_path("status");
    let reader = lock(&path).await;
    let r = reader.read().await.unwrap();
    let writer_lock = lock(&path).await;
    let writer = tokio::spawn(async move { writer_lock.write().await });
    wait_children(reader.client(), &path, 2).await;
    let foreign = format!("{path}/not-a-lock-node");
    reader
        .client()
        .create(
            &foreign,
            &[],
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();

    let out = run(&["status", "--json", &path]).await;
    out.expect_code(0);
    let status: Value = serde_json::from_str(&out.stdout).expect("JSON");
    let expected = reader.contenders().await.unwrap();
    assert_eq!(status["path"], path.as_str());
    assert_eq!(status["foreign"], serde_json::json!(["not-a-lock-node"]));
    let got = status["contenders"].as_array().unwrap();
    assert_eq!(got.len(), expected.len());
    assert_eq!(got.len(), 2);
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g["position"], i + 1);
        assert_eq!(g["node"], e.name.to_string());
        assert_eq!(g["path"], e.path.as_str());
        assert_eq!(g["identity"], e.name.identity());
        assert_eq!(g["token"], e.name.token().unwrap().simple().to_string());
        assert_eq!(g["mode"], e.name.mode().to_string());
        assert_eq!(g["seq"], e.name.seq());
        assert_eq!(g["fencing_token"], e.fencing_token.unwrap());
        assert_eq!(g["session"], format!("{:#x}", e.session.unwrap() as u64));
        match &e.state {
            ContenderState::Holds => {
                assert_eq!(g["state"], "holds");
                assert_eq!(g["waits_on"], Value::Null);
            }
            ContenderState::WaitsOn(node) => {
                assert_eq!(g["state"], "waits");
                assert_eq!(g["waits_on"], node.as_str());
            }
            other => panic!("unexpected state {other:?}"),
        }
        assert!(g["created_ms"].as_i64().unwrap() > 0);
        assert!(g["age_ms"].as_u64().is_some());
    }
    assert_eq!(got[0]["mode"], "read");
    assert_eq!(got[0]["state"], "holds");
    assert_eq!(got[0]["fencing_token"], r.fencing_token());
    assert_eq!(got[1]["mode"], "write");
    assert_eq!(got[1]["waits_on"], got[0]["node"]);

    // The table says the same.
    let out = run(&["status", &path]).await;
    out.expect_code(0);
    let table = &out.stdout;
    assert!(
        table.starts_with(&format!("{path}: 2 contenders, 1 holding, 1 waiting\n")),
        "{table}"
    );
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[1]
        .split_whitespace()
        .eq(["POS", "NODE", "IDENTITY", "MODE", "STATE", "TOKEN", "AGE"]));
    let row2: Vec<&str> = lines[3].split_whitespace().collect();
    assert_eq!(
        row2[..4],
        [
            "2",
            &expected[1].name.to_string(),
            expected[1].name.identity(),
            "write"
        ]
    );
    assert_eq!(row2[4..7], ["waits", "on", &expected[0].name.to_string()]);
    assert!(table.contains("not-a-lock-node"), "{table}");

    reader.client().delete(&foreign, None).await.unwrap();
    r.release().await.unwrap();
    let w = tokio::time::timeout(SHORT, writer)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    w.release().await.unwrap();
    assert_drained(&path).await;

    // Empty and missing lock directories.
    let out = run(&["status", &path]).await;
    out.expect_code(0);
    assert_eq!(out.stdout, format!("{path}: no contenders\n"));
    let missing = unique_path("status-missing");
    let out = run(&["status", "--json", &missing]).await;
    out.expect_code(0);
    let status: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(status["contenders"], serde_json::json!([]));
    assert_eq!(status["foreign"], serde_json::json!([]));
}

/// `status --watch --json` prints one line per change, and exits 0 on Ctrl-C.
#[tokio::test]
async fn status_watch_follows_changes() {
    let path = unique_path("watch");
    let mut watch = watch_status(&[&path]);
    // The directory does not exist yet.
    watch.next("no contenders", |v| contenders(v) == 0).await;
    let l = lock(&path).await;
    let g = l.write().await.unwrap();
    let v = watch.next("the writer", |v| contenders(v) == 1).await;
    assert_eq!(v["contenders"][0]["path"], g.node());
    assert_eq!(v["contenders"][0]["state"], "holds");
    g.release().await.unwrap();
    watch.next("the writer gone", |v| contenders(v) == 0).await;
    watch.interrupt().await;
    assert_drained(&path).await;
}

/// 6. Bad input: a clear one-line message, a specific exit code, no panic.
#[tokio::test]
async fn bad_arguments_are_reported_clearly() {
    let path = unique_path("bad");
    let free_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let unreachable = format!("127.0.0.1:{free_port}");
    let chroot = unique_path("no-chroot");
    let no_chroot = format!("{}{chroot}", server().connect_string());
    let long_identity = "x".repeat(300);
    // A node that holds someone's data (a counter) is no lock directory.
    let counter = unique_path("counter");
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let c = client().await;
    match c.mkdir("/test", &open).await {
        Ok(()) | Err(zk::Error::NodeExists) => {}
        Err(e) => panic!("mkdir /test: {e}"),
    }
    c.create(&counter, b"42", &open).await.unwrap();
    let cases: Vec<(Vec<&str>, i32, String)> = vec![
        (
            vec!["exec", "--write", "locks/x", "--", "true"],
            2,
            "zk-rwlock: invalid lock path `locks/x`".to_owned(),
        ),
        (
            vec!["exec", "--write", "/a//b", "--", "true"],
            2,
            "invalid lock path `/a//b`".to_owned(),
        ),
        // An invalid path is reported even when no server is reachable.
        (
            vec!["exec", "-w", "-c", &unreachable, "locks/x", "--", "true"],
            2,
            "invalid lock path".to_owned(),
        ),
        (
            vec!["exec", "--mode", "x", &path, "--", "true"],
            2,
            "unexpected argument '--mode'".to_owned(),
        ),
        // A follower lag the session timeout (4 s) cannot carry.
        (
            vec![
                "exec",
                "-w",
                "--session-timeout",
                "4s",
                "--follower-lag",
                "1800ms",
                &path,
                "--",
                "true",
            ],
            2,
            "leaves too short a lease with a follower lag of 1.8s (--follower-lag or ZK_RWLOCK_FOLLOWER_LAG): \
             the session timeout must be at least 2.25 x the follower lag"
                .to_owned(),
        ),
        (
            vec!["exec", "-w", "--follower-lag", "soon", &path, "--", "true"],
            2,
            "invalid value 'soon' for '--follower-lag <DUR>'".to_owned(),
        ),
        (
            vec!["exec", &path, "--", "true"],
            2,
            "<--read|--write>".to_owned(),
        ),
        (
            vec!["exec", "--read", "--write", &path, "--", "true"],
            2,
            "cannot be used with".to_owned(),
        ),
        (vec!["exec", "--write", &path], 2, "<CMD>".to_owned()),
        (
            vec!["exec", "--write", "--timeout", "-1s", &path, "--", "true"],
            2,
            "invalid duration `-1s`".to_owned(),
        ),
        (
            vec!["exec", "--write", "--timeout", "5 parsecs", &path, "--", "true"],
            2,
            "invalid duration `5 parsecs`".to_owned(),
        ),
        (
            vec!["exec", "--write", "--also-read", &path, &path, "--", "true"],
            2,
            format!("zk-rwlock: lock path `{path}` is given more than once: name each lock once, with its mode"),
        ),
        (
            vec!["exec", "--write", "--identity", "a/b", &path, "--", "true"],
            2,
            "invalid identity `a/b`".to_owned(),
        ),
        (
            vec!["exec", "--write", "--identity", "__REVOKE__", &path, "--", "true"],
            2,
            "invalid identity `__REVOKE__`".to_owned(),
        ),
        (
            vec!["exec", "--write", "--identity", &long_identity, &path, "--", "true"],
            2,
            "(300 bytes): it is longer than 255 bytes".to_owned(),
        ),
        (
            vec!["exec", "--write", &counter, "--", "true"],
            2,
            format!("zk-rwlock: lock directory `{counter}` holds data that is not a lock's release record"),
        ),
        (
            // Refused connections are tried again until the connect timeout.
            vec![
                "exec",
                "--write",
                "--connect-timeout",
                "1s",
                "--connect",
                &unreachable,
                &path,
                "--",
                "true",
            ],
            69,
            format!("zk-rwlock: cannot reach ZooKeeper at {unreachable}"),
        ),
        (
            vec!["status", "--connect-timeout", "1s", "--connect", &unreachable, &path],
            69,
            format!("zk-rwlock: cannot reach ZooKeeper at {unreachable}"),
        ),
        (
            vec!["status", "locks/x"],
            2,
            "zk-rwlock: invalid lock path `locks/x`".to_owned(),
        ),
        // A chroot that does not exist is named, as a connect string error.
        (
            vec!["exec", "--write", "--connect", &no_chroot, &path, "--", "true"],
            2,
            format!("zk-rwlock: the chroot `{chroot}` of the connect string does not exist"),
        ),
        (
            vec!["status", "--connect", &no_chroot, &path],
            2,
            format!("zk-rwlock: the chroot `{chroot}` of the connect string does not exist"),
        ),
    ];
    for (args, code, message) in cases {
        let out = run(&args).await;
        assert_eq!(out.code, Some(code), "{args:?}: {out:#?}");
        out.assert_no_panic();
        assert!(
            out.stderr.contains(&message),
            "{args:?}: wanted {message:?} in {out:#?}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: {out:#?}");
    }
    assert!(children(&client().await, &path).await.is_empty());
    let (data, _) = client().await.get_data(&counter).await.unwrap();
    assert_eq!(data, b"42", "the counter's data");
    assert!(children(&client().await, &counter).await.is_empty());
}

/// A lock directory the user may not write to: exit 77.
#[tokio::test]
async fn no_auth_exits_77() {
    let path = unique_path("noauth");
    let owner = zk::Client::connector()
        .with_auth("digest", b"alice:secret")
        .connect(&server().connect_string())
        .await
        .unwrap();
    owner
        .mkdir(
            &path,
            &zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all()),
        )
        .await
        .unwrap();
    let out = run(&["exec", "--write", &path, "--", "true"]).await;
    out.expect_code(77);
    assert!(out.stderr.contains("NoAuth"), "{out:#?}");
    assert!(children(&owner, &path).await.is_empty());
    owner.delete(&path, None).await.unwrap();
}

/// 7. Ctrl-C (or SIGTERM, SIGHUP) while waiting: exit 130 (143, 129), the command never
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

/// A persistent node named like a contender (left by hand or by another
/// tool) counts as a contender that never leaves: it blocks the lock, and
/// `status` flags it. A lock path that would make such a node is refused.
#[tokio::test]
async fn status_flags_a_permanent_node_named_like_a_contender() {
    let path = unique_path("permanent");
    let c = client().await;
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    c.mkdir(&path, &persistent).await.unwrap();
    let blocker = format!("{path}/web01-W-0000000000");
    c.create(&blocker, &[], &persistent).await.unwrap();

    // The lock counts it as the writer that holds.
    let l = lock(&path).await;
    assert!(l.try_write().await.unwrap().is_none(), "granted past the node");
    let reader = tokio::spawn(async move { l.read().await });
    wait_children(&c, &path, 2).await;

    let out = run(&["status", "--json", &path]).await;
    out.expect_code(0);
    let status: Value = serde_json::from_str(&out.stdout).expect("JSON");
    let got = status["contenders"].as_array().unwrap();
    assert_eq!(got.len(), 2, "{status}");
    assert_eq!(got[0]["node"], "web01-W-0000000000");
    assert_eq!(got[0]["state"], "holds");
    assert_eq!(got[0]["ephemeral"], false);
    assert_eq!(got[0]["session"], "0x0");
    assert_eq!(got[1]["state"], "waits");
    assert_eq!(got[1]["waits_on"], "web01-W-0000000000");
    assert_eq!(got[1]["ephemeral"], true);

    let out = run(&["status", &path]).await;
    out.expect_code(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[2].contains("web01-W-0000000000") && lines[2].contains("holds (PERMANENT node)"),
        "{}",
        out.stdout
    );
    assert!(!lines[3].contains("PERMANENT"), "{}", out.stdout);
    assert!(
        lines[4].starts_with(&format!("WARNING: {blocker} is a PERMANENT node"))
            && lines[4].contains("blocks the lock until it is deleted")
            && lines[4].contains(&format!("`delete {blocker}`")),
        "{}",
        out.stdout
    );

    // The lock path that made such a node in the first place is refused.
    let out = run(&["exec", "--write", &blocker, "--", "true"]).await;
    out.expect_code(2);
    assert!(
        out.stderr.contains(&format!(
            "zk-rwlock: invalid lock path `{blocker}`: its last segment looks like a contender node name"
        )),
        "{out:#?}"
    );
    let out = run(&["status", &blocker]).await;
    out.expect_code(2);
    assert!(
        out.stderr.contains("looks like a contender node name"),
        "{out:#?}"
    );

    // Deleting it lets the lock go on.
    c.delete(&blocker, None).await.unwrap();
    let r = tokio::time::timeout(SHORT, reader)
        .await
        .expect("granted once the node is gone")
        .unwrap()
        .unwrap();
    r.release().await.unwrap();
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
