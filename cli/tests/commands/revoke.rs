//! `zk-rwlock revoke` end to end against a real server, with `exec
//! --on-revoke` and `lead --on-revoke`.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use crate::common::{finish, run, s, scratch, zk_rwlock, SHORT};
use support::{assert_drained, eventually, joined, server, unique_path, wait_watching};

/// `exec --on-revoke TERM` holds the write lock, a writer waits behind it;
/// `zk-rwlock revoke PATH` asks the holder (and prints its node), exec
/// sends SIGTERM to its command and exits with the command's status
/// (143); only then is the waiting writer granted.
#[tokio::test]
async fn revoke_stops_an_exec_that_listens() {
    let path = unique_path("cli-revoke");
    let dir = scratch("term");
    let started = dir.join("started");
    let exec = zk_rwlock(&[
        "exec",
        "--write",
        "--on-revoke",
        "TERM",
        &path,
        "--",
        "sh",
        "-c",
        r#"sleep 60 & echo "$ZK_RWLOCK_NODE" > "$1"; wait"#,
        "sh",
        s(&started),
    ])
    .spawn()
    .unwrap();
    let mut node = String::new();
    eventually("the command started", SHORT, || {
        let text = std::fs::read_to_string(&started).unwrap_or_default();
        let done = text.ends_with('\n');
        if done {
            node = text.trim().to_owned();
        }
        async move { done }
    })
    .await;

    let waiter_lock = support::lock(&path).await;
    let session = waiter_lock.client().session_id().0;
    let waiter = tokio::spawn(async move { waiter_lock.write().await });
    wait_watching(server(), &node, session).await;

    let out = run(&["revoke", &path]).await;
    out.expect_code(0);
    assert_eq!(out.stdout.trim(), node, "{out:#?}");

    let exec = finish(exec).await;
    exec.expect_code(143);
    assert!(
        exec.stderr.contains("zk-rwlock: revocation requested on ")
            && exec.stderr.contains("sending SIGTERM to the command"),
        "{exec:#?}"
    );
    let granted = joined(SHORT, waiter).await.unwrap();
    granted.release().await.unwrap();
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Nothing to ask: exit 1. A NODE that is no contender name: exit 2,
/// before connecting. A named node that is gone: exit 1.
#[tokio::test]
async fn revoke_reports_what_it_could_not_ask() {
    let path = unique_path("cli-revoke-none");
    let out = run(&["revoke", &path]).await;
    out.expect_code(1);
    assert!(out.stderr.contains("no one holds the lock"), "{out:#?}");
    assert!(out.stdout.is_empty());

    let out = run(&["revoke", &path, "not-a-node"]).await;
    out.expect_code(2);
    assert!(out.stderr.contains("is not a contender node of"), "{out:#?}");

    let lock = support::lock(&path).await;
    let held = lock.write().await.unwrap();
    let node = held.node().to_owned();
    let name = node.rsplit('/').next().unwrap().to_owned();
    // By child name: asked.
    let out = run(&["revoke", &path, &name]).await;
    out.expect_code(0);
    assert_eq!(out.stdout.trim(), node);
    assert_eq!(
        tokio::time::timeout(SHORT, held.revocation_requested()).await,
        Ok(true)
    );
    held.release().await.unwrap();
    // By full path, once gone: nothing asked.
    let out = run(&["revoke", &path, &node]).await;
    out.expect_code(1);
    assert!(out.stderr.contains("no contender node"), "{out:#?}");
}

/// `revoke PATH` with two readers, one of which refuses WRITE: the other
/// is asked and printed, the refusal is reported as such, exit 77.
#[tokio::test]
async fn revoke_prints_the_nodes_asked_when_one_refuses() {
    use zk_rwlock::{zk, SharedLock, REVOKE_PAYLOAD};
    let path = unique_path("cli-revoke-noauth");
    let open = support::lock(&path).await.read().await.unwrap();
    let alice_client = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .with_auth("digest", b"alice:secret".as_slice())
        .connect(&server().connect_string())
        .await
        .unwrap();
    let alice = SharedLock::builder(alice_client, &path)
        .acls(&zk::Acls::creator_all())
        .build()
        .unwrap();
    let closed = alice.read().await.unwrap();
    let out = run(&["revoke", &path]).await;
    out.expect_code(77);
    assert_eq!(out.stdout.trim(), open.node(), "{out:#?}");
    assert!(
        out.stderr
            .contains(&format!("may not write to contender node {}", closed.node()))
            && out.stderr.contains("revoking needs WRITE on the contender nodes"),
        "{out:#?}"
    );
    let (data, _) = support::client().await.get_data(open.node()).await.unwrap();
    assert_eq!(data, REVOKE_PAYLOAD);
    open.release().await.unwrap();
    closed.release().await.unwrap();
}

/// A nested lock's node is no contender of the outer lock: exit 2.
#[tokio::test]
async fn revoke_rejects_a_nested_lock_node() {
    let path = unique_path("cli-revoke-nested");
    let name = "web01@7f3a0c1e9b2d4f60a1b2c3d4e5f60718-W-0000000042";
    let out = run(&["revoke", &path, &format!("{path}/sub/{name}")]).await;
    out.expect_code(2);
    let out = run(&["revoke", &path, &format!("sub/{name}")]).await;
    out.expect_code(2);
    assert!(out.stderr.contains("is not a contender node of"), "{out:#?}");
}

/// `zk-rwlock revoke PATH` on a `lead` leader that listens (`--on-revoke
/// TERM`): its command gets SIGTERM, the leader resigns once it has
/// exited, and its term ends there: `status` names no leader after
/// (`--max-terms 1`: lead exits with the command's status). A leader that
/// does not listen stays named: `a_revoked_leader_that_ignores_the_request_stays_named`
/// in the `lead` binary (`cli/tests/lead/one_leader_at_a_time.rs`).
#[tokio::test]
async fn revoke_ends_the_term_of_a_leader_that_listens() {
    let path = unique_path("cli-revoke-lead");
    let dir = scratch("lead-term");
    let started = dir.join("started");
    let lead = zk_rwlock(&[
        "lead",
        "--identity",
        "svc",
        "--on-revoke",
        "TERM",
        "--max-terms",
        "1",
        &path,
        "--",
        "sh",
        "-c",
        r#"trap 'echo stopping >> "$1"; exit 143' TERM; echo "$ZK_RWLOCK_NODE" > "$1"; while :; do sleep 0.02; done"#,
        "sh",
        s(&started),
    ])
    .spawn()
    .unwrap();
    eventually("the leader's command started", SHORT, || {
        let started = std::fs::read_to_string(&started).is_ok_and(|t| t.ends_with('\n'));
        async move { started }
    })
    .await;
    let status = run(&["status", &path]).await;
    status.expect_code(0);
    assert!(
        status
            .stdout
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("leader: svc (term ")),
        "{status:#?}"
    );

    run(&["revoke", &path]).await.expect_code(0);
    let lead = finish(lead).await;
    lead.expect_code(143);
    assert!(
        lead.stderr.contains("sending SIGTERM to the command"),
        "{lead:#?}"
    );
    assert!(
        std::fs::read_to_string(&started).is_ok_and(|t| t.contains("stopping")),
        "the command got SIGTERM"
    );
    let status = run(&["status", &path]).await;
    status.expect_code(0);
    assert!(!status.stdout.contains("leader:"), "{status:#?}");
    assert_drained(&path).await;
    let _ = std::fs::remove_dir_all(dir);
}
