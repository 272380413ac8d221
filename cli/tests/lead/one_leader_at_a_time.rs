//! `zk-rwlock lead`: one leader at a time, and `status` names it: two
//! leaders never run their commands at once, a killed `lead`'s command is
//! gone before the next leader's starts, and a leader asked to step down
//! that ignores the request stays the one named until it resigns. Every
//! test checks that its lock directory ends up empty.

use zk_rwlock_fixtures as support;

use std::process::Stdio;
use std::time::Duration;

use crate::common::{kill, s, scratch, zk_rwlock};
use support::{assert_drained, eventually, unique_path};
use tokio::process::Command;

/// `lead` takes longer than one run of `exec`: terms, back-offs.
const SHORT: Duration = Duration::from_secs(20);

/// Runs to completion (bounded): exit code, stdout, stderr.
async fn finish(cmd: &mut Command) -> (Option<i32>, String, String) {
    let run = crate::common::finish_within(cmd.spawn().expect("spawn zk-rwlock"), SHORT).await;
    (run.code, run.stdout, run.stderr)
}

#[tokio::test]
async fn one_leader_at_a_time_and_status_names_it() {
    let path = unique_path("lead-one");
    let dir = scratch("one");
    let log = dir.join("log");
    let go = dir.join("go");
    // Each leader notes its start, waits until the test says go, notes its
    // end and exits 0 (resign and exit).
    let script = format!(
        "echo \"start $ID\" >> {log}; while [ ! -e {go} ]; do sleep 0.02; done; echo \"end $ID\" >> {log}",
        log = s(&log),
        go = s(&go)
    );
    let spawn = |id: &str| {
        zk_rwlock(&["lead", "--identity", id, &path, "--", "sh", "-c", &script])
            .env("ID", id)
            .spawn()
            .expect("spawn zk-rwlock")
    };
    let a = spawn("a");
    let b = spawn("b");
    let started = |n: usize| {
        let log = log.clone();
        move || {
            let log = log.clone();
            async move { std::fs::read_to_string(&log).is_ok_and(|l| l.matches("start").count() >= n) }
        }
    };
    eventually("a leader runs its command", SHORT, started(1)).await;
    let first = std::fs::read_to_string(&log).unwrap();
    let leader = first.trim().strip_prefix("start ").unwrap().to_owned();
    let (code, stdout, stderr) = finish(&mut zk_rwlock(&["status", &path])).await;
    assert_eq!(code, Some(0), "{stderr}");
    let line = stdout.lines().nth(1).unwrap_or_default();
    assert!(
        line.starts_with(&format!("leader: {leader} (term ")),
        "status names the leader: {stdout}"
    );
    std::fs::write(&go, "").unwrap();
    for child in [a, b] {
        let out = tokio::time::timeout(SHORT, child.wait_with_output())
            .await
            .expect("lead exits")
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let log = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 4, "{log}");
    for pair in lines.chunks(2) {
        let id = pair[0].strip_prefix("start ").unwrap();
        assert_eq!(pair[1], format!("end {id}"), "one leader at a time: {log}");
    }
    assert_drained(&path).await;
}

/// `zk-rwlock revoke PATH` on a `lead` leader with the default
/// `--on-revoke ignore`: the request ends nothing, so the leader keeps
/// running CMD with the same term, nobody else leads, and `status` (table
/// and JSON) and the library's `Election::leader()` keep naming it, marked
/// as asked to step down, until it resigns; then the next one is named.
#[tokio::test]
async fn a_revoked_leader_that_ignores_the_request_stays_named() {
    let path = unique_path("lead-revoked");
    let dir = scratch("revoked");
    let log = dir.join("log");
    let go = dir.join("go");
    // Each leader notes its start and term, then ticks until the test says go.
    let script = format!(
        "echo \"start $ID $ZK_RWLOCK_FENCING_TOKEN\" >> {log}; \
         while [ ! -e {go} ]; do echo \"tick $ID\" >> {log}; sleep 0.02; done; echo \"end $ID\" >> {log}",
        log = s(&log),
        go = s(&go)
    );
    let spawn = |id: &str| {
        zk_rwlock(&["lead", "--identity", id, &path, "--", "sh", "-c", &script])
            .env("ID", id)
            .spawn()
            .expect("spawn zk-rwlock")
    };
    let a = spawn("a");
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    eventually("a leads", SHORT, || {
        let started = read().contains("start a ");
        async move { started }
    })
    .await;
    let term: i64 = read()
        .lines()
        .find_map(|l| l.strip_prefix("start a "))
        .and_then(|t| t.trim().parse().ok())
        .expect("a's term");
    let b = spawn("b");
    let observer = support::lock(&path).await;
    support::wait_contenders(&observer, 2).await;

    let out = crate::common::run(&["revoke", &path]).await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    let asked = out.stdout.trim().to_owned();
    assert!(asked.contains("/a@"), "a's node was asked: {out:#?}");
    // The request is on a's node (written over its announcement).
    eventually("the request is on a's node", SHORT, || {
        let (client, asked) = (observer.client().clone(), asked.clone());
        async move {
            client
                .get_data(&asked)
                .await
                .is_ok_and(|(data, _)| data == zk_rwlock::REVOKE_PAYLOAD)
        }
    })
    .await;
    let ticks = read().matches("tick a").count();

    // status names a, asked to step down, with its term.
    let out = crate::common::run(&["status", &path]).await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    let line = out.stdout.lines().nth(1).unwrap_or_default();
    assert!(
        line.starts_with(&format!("leader: a (term {term}, node "))
            && line.ends_with(", asked to step down (revocation requested): leads until it resigns"),
        "status names the revoked leader: {}",
        out.stdout
    );
    let out = crate::common::run(&["status", "--json", &path]).await;
    let json: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(json["leader"]["identity"], "a", "{json}");
    assert_eq!(json["leader"]["term"], term, "{json}");
    assert_eq!(json["leader"]["revocation_requested"], true, "{json}");
    // The library says the same.
    let election = zk_rwlock::Election::new(observer.client().clone(), &path, "observer").unwrap();
    let leader = election.leader().await.unwrap().expect("a is named");
    assert_eq!(
        (leader.identity.as_str(), leader.term, leader.revocation_requested),
        ("a", term, true)
    );
    // a's command runs on; b waits.
    eventually("a's command runs on", SHORT, || {
        let more = read().matches("tick a").count() > ticks;
        async move { more }
    })
    .await;
    assert!(!read().contains("start b"), "b led while a did: {}", read());

    // a's term ends when it resigns: then b leads, and is named.
    std::fs::write(&go, "").unwrap();
    for child in [a, b] {
        let out = tokio::time::timeout(SHORT, child.wait_with_output())
            .await
            .expect("lead exits")
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let log = read();
    let order: Vec<&str> = log.lines().filter(|l| !l.starts_with("tick")).collect();
    assert!(
        order.len() == 4 && order[1] == "end a" && order[2].starts_with("start b "),
        "one leader at a time: {log}"
    );
    assert_drained(&path).await;
}

/// `lead` is killed with SIGKILL while its CMD (which ignores
/// SIGTERM and ticks a timestamp every 20ms) leads; a second `lead` waits.
/// The second leader's CMD starts only after the first CMD's last tick.
#[tokio::test]
async fn a_killed_lead_stops_its_command_before_the_next_leader_starts() {
    let path = unique_path("lead-kill9");
    let dir = std::env::temp_dir().join(format!("zk-rwlock-lead-kill9-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("log");
    let log = log.to_str().unwrap();
    let a_script =
        format!("trap '' TERM; while true; do echo \"tick $(date +%s%N)\" >> {log}; sleep 0.02; done");
    let b_script = format!("echo \"start $(date +%s%N)\" >> {log}");
    let args = |id: &'static str, script: &str| {
        let mut cmd = zk_rwlock(&[
            "lead",
            "--identity",
            id,
            "--session-timeout",
            "4s",
            "--kill-after",
            "30s",
            &path,
            "--",
            "sh",
            "-c",
            script,
        ]);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        cmd
    };
    let a = args("a", &a_script).spawn().unwrap();
    support::eventually("a ticks", SHORT, || async {
        std::fs::read_to_string(log).is_ok_and(|l| l.contains("tick"))
    })
    .await;
    let b = args("b", &b_script).spawn().unwrap();
    let watcher = support::lock(&path).await;
    support::wait_contenders(&watcher, 2).await;
    kill(a.id().unwrap(), libc::SIGKILL);
    let out = tokio::time::timeout(SHORT, b.wait_with_output())
        .await
        .expect("b leads and exits")
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(log).unwrap();
    let stamp = |l: &str| l.split_whitespace().nth(1).unwrap().parse::<u128>().unwrap();
    let last_tick = text
        .lines()
        .filter(|l| l.starts_with("tick"))
        .map(stamp)
        .max()
        .unwrap();
    let start = text.lines().find(|l| l.starts_with("start")).map(stamp).unwrap();
    assert!(
        last_tick < start,
        "a's command ticked {}ms after b's started",
        (last_tick - start) / 1_000_000
    );
    drop(a);
    support::assert_drained(&path).await;
}
