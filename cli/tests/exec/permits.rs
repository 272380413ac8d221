//! `exec --permits N`: the command runs holding one of N permits of a
//! semaphore, judged by the commands' own timestamps (at most N at once, N
//! together); the lock's supervision on the permit (a timeout, the node
//! deleted while the command runs); and what is refused: `--permits 0`,
//! `--permits` with a mode, another count than the semaphore's
//! contenders carry. Every test checks that its directory ends up empty.

use zk_rwlock_fixtures as support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::common::{child_name, finish, read_pids, run, s, scratch, wait_children, zk_rwlock, SHORT};
use support::{alive, assert_drained, children, client, eventually, unique_path};
use tokio::process::Child;
use zk_rwlock::Semaphore;

/// Six commands on a semaphore of two permits, started at once: by their
/// own timestamps (taken inside the commands), never more than two run at
/// any instant, two do run together, and all six complete. The first to
/// start waits (at most 5 s) until a second has started, so the two
/// overlap if the semaphore lets two hold, whatever the timing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_n_commands_run_at_once_and_n_run_together() {
    let path = unique_path("permits");
    let dir = scratch("permits");
    let log = dir.join("log");
    let script = r#"
        echo "$(date +%s%N) start $$ $ZK_RWLOCK_NODE" >> "$1"
        i=0
        while [ "$(grep -c ' start ' "$1")" -lt 2 ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
        sleep 0.1
        echo "$(date +%s%N) end $$" >> "$1"
    "#;
    let runs: Vec<Child> = (0..6)
        .map(|_| {
            zk_rwlock(&[
                "exec",
                "--permits",
                "2",
                &path,
                "--",
                "sh",
                "-c",
                script,
                "sh",
                s(&log),
            ])
            .spawn()
            .expect("spawn zk-rwlock")
        })
        .collect();
    for child in runs {
        finish(child).await.expect_code(0);
    }
    let text = std::fs::read_to_string(&log).unwrap();
    // (timestamp, 0 for an end and 1 for a start: at one instant, an end
    // comes first), per command.
    let mut events: Vec<(u128, u8, String)> = Vec::new();
    let mut per_command: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let at: u128 = words[0].parse().unwrap_or_else(|_| panic!("a timestamp: {line}"));
        let start = words[1] == "start";
        if start {
            let node = words.get(3).copied().unwrap_or_default();
            assert!(
                node.starts_with(&format!("{path}/")) && node.contains("@permits-2@"),
                "a permit's node in ZK_RWLOCK_NODE: {line}"
            );
        }
        per_command.entry(words[2].to_owned()).or_default().push(words[1]);
        events.push((at, u8::from(start), words[2].to_owned()));
    }
    assert_eq!(per_command.len(), 6, "six commands ran:\n{text}");
    for (pid, said) in &per_command {
        assert_eq!(said, &["start", "end"], "command {pid}:\n{text}");
    }
    events.sort();
    let (mut running, mut most) = (0usize, 0usize);
    for (_, start, _) in &events {
        if *start == 1 {
            running += 1;
            most = most.max(running);
        } else {
            running -= 1;
        }
    }
    assert_eq!(most, 2, "at most 2 at once, and 2 together:\n{text}");
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// The lock's supervision on a permit: with every permit held, `--timeout`
/// gives up (exit 75) and leaves no node; once one is free, the command
/// runs; when its node is deleted while it runs, the command's processes
/// are terminated and exec exits 79.
#[tokio::test]
async fn a_permit_is_supervised_as_a_lock() {
    let path = unique_path("permit-supervised");
    let dir = scratch("permit-supervised");
    let marker = dir.join("ran");
    let c = client().await;
    let holder = Semaphore::new(c.clone(), &path, 1).unwrap();
    let held = holder.acquire().await.unwrap();
    let out = run(&[
        "exec",
        "--permits",
        "1",
        "-t",
        "300ms",
        &path,
        "--",
        "touch",
        s(&marker),
    ])
    .await;
    out.expect_code(75);
    assert!(
        out.stderr.contains(&format!(
            "zk-rwlock: timed out after 300ms waiting for the only permit on {path}"
        )),
        "{out:#?}"
    );
    let out = run(&[
        "exec",
        "--permits",
        "1",
        "-t",
        "0",
        &path,
        "--",
        "touch",
        s(&marker),
    ])
    .await;
    out.expect_code(75);
    assert!(
        out.stderr
            .contains(&format!("the only permit on {path}: all taken (--timeout 0")),
        "{out:#?}"
    );
    assert!(!marker.exists(), "the command ran");
    assert_eq!(children(&c, &path).await, vec![child_name(held.node())]);
    held.release().await.unwrap();

    let pidfile = dir.join("pids");
    let started = Instant::now();
    let exec = zk_rwlock(&[
        "exec",
        "--permits",
        "1",
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
    let node = wait_children(&c, &path, 1).await.remove(0);
    assert!(node.contains("@permits-1@"), "{node}");
    c.delete(&format!("{path}/{node}"), None).await.unwrap();
    let out = finish(exec).await;
    out.expect_code(79);
    assert!(
        out.stderr.contains("was deleted): terminating the command"),
        "{out:#?}"
    );
    eventually("the command's processes are gone", SHORT, || {
        let any = pids.iter().any(|&p| alive(p));
        async move { !any }
    })
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// `--permits 0`, and `--permits` with `--read` or `--write`: a usage
/// error (exit 2) with one clear message, the command not run, no node.
/// A count other than the one the semaphore's contenders carry: exit 2
/// once the directory is read, naming both counts; the request is
/// withdrawn (only the holder's node is left).
#[tokio::test]
async fn a_zero_count_a_mode_or_another_count_is_refused() {
    let path = unique_path("permits-refused");
    let dir = scratch("permits-refused");
    let marker = dir.join("ran");
    let c = client().await;
    for (args, message) in [
        (
            &["--permits", "0"][..],
            "invalid value '0' for '--permits <N>': a semaphore needs at least one permit: give N from 1",
        ),
        (
            &["--permits", "2", "--read"],
            "the argument '--permits <N>' cannot be used with '--read'",
        ),
        (
            &["--write", "--permits", "2"],
            "the argument '--write' cannot be used with '--permits <N>'",
        ),
    ] {
        let mut all = vec!["exec"];
        all.extend(args);
        all.extend([path.as_str(), "--", "touch", s(&marker)]);
        let out = run(&all).await;
        out.expect_code(2);
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{out:#?}");
        assert!(
            lines[0].starts_with("zk-rwlock: ") && lines[0].contains(message),
            "wanted {message:?}: {out:#?}"
        );
        assert!(!marker.exists(), "the command ran");
        assert!(children(&c, &path).await.is_empty(), "a node was left");
    }

    let holder = Semaphore::new(c.clone(), &path, 2).unwrap();
    let held = holder.acquire().await.unwrap();
    let out = run(&["exec", "--permits", "3", &path, "--", "touch", s(&marker)]).await;
    out.expect_code(2);
    assert!(
        out.stderr.contains(&format!(
            "zk-rwlock: --permits 3 disagrees with the semaphore {path}: its contender {} was started \
             with --permits 2",
            held.node()
        )),
        "{out:#?}"
    );
    assert!(!marker.exists(), "the command ran");
    assert_eq!(children(&c, &path).await, vec![child_name(held.node())]);
    held.release().await.unwrap();
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}
