//! `status` and `revoke` on a semaphore's directory, its permits held by
//! `exec --permits N`: `status` shows the semaphore, its N, the holders
//! and the queue; `revoke` asks every permit holder, and `exec
//! --on-revoke` acts on it.

use zk_rwlock_fixtures as support;

use std::path::Path;

use crate::common::{finish, run, s, scratch, wait_children, zk_rwlock, SHORT};
use serde_json::Value;
use support::{assert_drained, client, eventually, unique_path};
use tokio::process::Child;
use zk_rwlock::Semaphore;

/// `exec --permits 2 --identity ID` running `script`, which gets `file`
/// as `$1`.
fn holder(path: &str, identity: &str, extra: &[&str], script: &str, file: &Path) -> Child {
    let mut args = vec!["exec", "--permits", "2", "--identity", identity];
    args.extend(extra);
    args.extend([path, "--", "sh", "-c", script, "sh", s(file)]);
    zk_rwlock(&args).spawn().expect("spawn zk-rwlock")
}

/// Waits until `file` holds a complete line; returns it.
async fn line_of(file: &Path) -> String {
    let mut line = String::new();
    eventually(&format!("{} written", file.display()), SHORT, || {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let done = text.ends_with('\n');
        if done {
            line = text.trim().to_owned();
        }
        async move { done }
    })
    .await;
    line
}

/// Two `exec --permits 2` hold, a third contender waits: `status` says it
/// is a semaphore of 2 permits, both held, shows the holders (MODE
/// `permit`, their identities without the count) and the waiter; JSON
/// gives `permits` beside the lock's usual fields, and no leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_a_semaphores_permits_holders_and_queue() {
    let path = unique_path("status-semaphore");
    let dir = scratch("status-semaphore");
    let stop = dir.join("stop");
    let c = client().await;
    let script = r#"while [ ! -e "$1" ]; do sleep 0.02; done"#;
    let first = holder(&path, "h1", &[], script, &stop);
    wait_children(&c, &path, 1).await;
    let second = holder(&path, "h2", &[], script, &stop);
    wait_children(&c, &path, 2).await;
    let waiter = Semaphore::builder(c.clone(), &path, 2)
        .identity("w3")
        .build()
        .unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await });
    wait_children(&c, &path, 3).await;

    let out = run(&["status", "--json", &path]).await;
    out.expect_code(0);
    let status: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(status["permits"], 2, "{status}");
    assert!(status.get("leader").is_none(), "{status}");
    let contenders = status["contenders"].as_array().unwrap();
    assert_eq!(contenders.len(), 3, "{status}");
    for (c, identity, state) in [(&contenders[0], "h1", "holds"), (&contenders[1], "h2", "holds")] {
        assert_eq!(c["identity"], identity, "{status}");
        assert_eq!(c["state"], state, "{status}");
        assert_eq!(c["permits"], 2, "{status}");
        assert_eq!(c["mode"], "write", "{status}");
        assert!(c["node"].as_str().unwrap().contains("@permits-2@"), "{status}");
    }
    assert_eq!(contenders[2]["identity"], "w3");
    assert_eq!(contenders[2]["state"], "waits");
    assert_eq!(contenders[2]["waits_on"], contenders[1]["node"]);

    let out = run(&["status", &path]).await;
    out.expect_code(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!("{path}: 3 contenders, 2 holding, 1 waiting"),
        "{out:#?}"
    );
    assert_eq!(lines[1], "semaphore: 2 permits, 2 held, 0 free", "{out:#?}");
    let row = |i: usize| lines[3 + i].split_whitespace().collect::<Vec<_>>();
    assert_eq!(row(0)[2..5], ["h1", "permit", "holds"], "{out:#?}");
    assert_eq!(row(1)[2..5], ["h2", "permit", "holds"], "{out:#?}");
    assert_eq!(row(2)[2..6], ["w3", "permit", "waits", "on"], "{out:#?}");
    assert!(!out.stdout.contains("WARNING"), "{out:#?}");

    std::fs::write(&stop, "").unwrap();
    finish(first).await.expect_code(0);
    let permit = support::joined(SHORT, waiting).await.unwrap();
    finish(second).await.expect_code(0);
    permit.release().await.unwrap();
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// `revoke PATH` on a semaphore asks its two permit holders, not the
/// waiter: both `exec --permits 2 --on-revoke TERM` send SIGTERM to their
/// commands and exit 143; the waiting exec is then granted and runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoke_asks_every_permit_holder() {
    let path = unique_path("revoke-semaphore");
    let dir = scratch("revoke-semaphore");
    let c = client().await;
    let script = r#"sleep 60 & echo "$ZK_RWLOCK_NODE" > "$1"; wait"#;
    let (a, b) = (dir.join("a"), dir.join("b"));
    let first = holder(&path, "h1", &["--on-revoke", "TERM"], script, &a);
    let second = holder(&path, "h2", &["--on-revoke", "TERM"], script, &b);
    let mut nodes = vec![line_of(&a).await, line_of(&b).await];
    nodes.sort();
    let ran = dir.join("ran");
    let third = holder(&path, "w3", &[], r#"echo ran > "$1""#, &ran);
    wait_children(&c, &path, 3).await;

    let out = run(&["revoke", &path]).await;
    out.expect_code(0);
    let mut asked: Vec<&str> = out.stdout.lines().collect();
    asked.sort();
    assert_eq!(asked, nodes, "{out:#?}");

    for exec in [first, second] {
        let exec = finish(exec).await;
        exec.expect_code(143);
        assert!(
            exec.stderr.contains("zk-rwlock: revocation requested on ")
                && exec.stderr.contains("sending SIGTERM to the command"),
            "{exec:#?}"
        );
    }
    finish(third).await.expect_code(0);
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n");
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}
