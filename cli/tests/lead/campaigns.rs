//! `zk-rwlock lead` campaigning: a failed term campaigns again, up to
//! `--max-terms`, with growing fencing tokens; a lost leadership stops the
//! command and campaigns again; a signal while campaigning withdraws; a
//! release the server refuses stops rather than campaigning behind its own
//! node. Every test checks that its lock directory ends up empty.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use crate::common::{kill, s, scratch, zk_rwlock};
use support::{assert_drained, eventually, unique_path};
use tokio::process::Command;
use zk_rwlock::zk;

/// `lead` takes longer than one run of `exec`: terms, back-offs.
const SHORT: Duration = Duration::from_secs(20);

/// Runs to completion (bounded): exit code, stdout, stderr.
async fn finish(cmd: &mut Command) -> (Option<i32>, String, String) {
    let run = crate::common::finish_within(cmd.spawn().expect("spawn zk-rwlock"), SHORT).await;
    (run.code, run.stdout, run.stderr)
}

#[tokio::test]
async fn failed_terms_campaign_again_up_to_max_terms() {
    let path = unique_path("lead-terms");
    let dir = scratch("terms");
    let tokens = dir.join("tokens");
    let script = format!("echo \"$ZK_RWLOCK_FENCING_TOKEN\" >> {}; exit 3", s(&tokens));
    let (code, _, stderr) = finish(&mut zk_rwlock(&[
        "lead",
        "--identity",
        "svc",
        "--backoff",
        "10ms..40ms",
        "--max-terms",
        "3",
        &path,
        "--",
        "sh",
        "-c",
        &script,
    ]))
    .await;
    assert_eq!(code, Some(3), "the last term's status: {stderr}");
    assert_eq!(stderr.matches("zk-rwlock: leading").count(), 3, "{stderr}");
    let terms: Vec<i64> = std::fs::read_to_string(&tokens)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(terms.len(), 3);
    assert!(terms.windows(2).all(|w| w[0] < w[1]), "terms grow: {terms:?}");
    assert_drained(&path).await;
}

#[tokio::test]
async fn a_lost_leadership_stops_the_command_and_campaigns_again() {
    let path = unique_path("lead-lost");
    let dir = scratch("lost");
    let tokens = dir.join("tokens");
    let go = dir.join("go");
    let script = format!(
        "echo \"$ZK_RWLOCK_FENCING_TOKEN\" >> {tokens}; while [ ! -e {go} ]; do sleep 0.02; done",
        tokens = s(&tokens),
        go = s(&go)
    );
    let child = zk_rwlock(&[
        "lead",
        "--backoff",
        "10ms..20ms",
        "--kill-after",
        "1s",
        &path,
        "--",
        "sh",
        "-c",
        &script,
    ])
    .spawn()
    .expect("spawn zk-rwlock");
    let lines = |n: usize| {
        let tokens = tokens.clone();
        move || {
            let tokens = tokens.clone();
            async move { std::fs::read_to_string(&tokens).is_ok_and(|t| t.lines().count() >= n) }
        }
    };
    eventually("the first term runs", SHORT, lines(1)).await;
    // Someone deletes the leader's node: the leadership is lost.
    let observer = support::lock(&path).await;
    let queue = observer.contenders().await.unwrap();
    assert_eq!(queue.len(), 1);
    observer.client().delete(&queue[0].path, None).await.unwrap();
    eventually("a second term runs", SHORT, lines(2)).await;
    std::fs::write(&go, "").unwrap();
    let out = tokio::time::timeout(SHORT, child.wait_with_output())
        .await
        .expect("lead exits")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("campaigning again"), "{stderr}");
    let terms: Vec<i64> = std::fs::read_to_string(&tokens)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(terms.len(), 2, "{terms:?}");
    assert!(terms[0] < terms[1]);
    assert_drained(&path).await;
}

#[tokio::test]
async fn a_signal_while_campaigning_withdraws_and_exits() {
    let path = unique_path("lead-signal");
    let holder = support::lock(&path).await;
    let guard = holder.write().await.unwrap();
    let child = zk_rwlock(&["lead", &path, "--", "true"])
        .spawn()
        .expect("spawn zk-rwlock");
    support::wait_contenders(&holder, 2).await;
    kill(child.id().expect("running"), libc::SIGTERM);
    let out = tokio::time::timeout(SHORT, child.wait_with_output())
        .await
        .expect("lead exits")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("while campaigning"), "{stderr}");
    support::wait_contenders(&holder, 1).await;
    guard.release().await.unwrap();
    assert_drained(&path).await;
}

/// CMD exits 0 but the release fails with an error that is neither `Lost`
/// nor the session's end (here NoAuth: the directory's ACL lets candidates
/// create nodes but not delete them): `run_holding` says
/// `End::ReleaseFailed` (code 70). A campaign again *on the same session*
/// would queue behind its own old node, still there at the head of the
/// queue, for ever: `lead` would hang, run nothing, and block the election
/// (no one else could lead either). `lead` stops instead, after one term,
/// with a non-zero status.
#[tokio::test]
async fn a_failed_release_does_not_campaign_again_behind_its_own_node() {
    let path = unique_path("lead-norelease");
    let admin = support::client().await;
    let parent = path.rsplit_once('/').unwrap().0;
    admin
        .mkdir(
            parent,
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .ok();
    let no_delete = [zk::Acl::new(
        zk::Permission::READ | zk::Permission::WRITE | zk::Permission::CREATE | zk::Permission::ADMIN,
        zk::AuthId::anyone(),
    )];
    admin
        .create(
            &path,
            &[],
            &zk::CreateMode::Persistent.with_acls(zk::Acls::new(&no_delete)),
        )
        .await
        .unwrap();
    let child = zk_rwlock(&[
        "lead",
        "--backoff",
        "10ms..20ms",
        "--session-timeout",
        "4s",
        &path,
        "--",
        "true",
    ])
    .spawn()
    .unwrap();
    let pid = child.id().unwrap();
    let out = tokio::time::timeout(SHORT, child.wait_with_output()).await;
    let Ok(out) = out else {
        let queue = support::children(&admin, &path).await;
        kill(pid, libc::SIGKILL);
        panic!("lead hangs after a failed release; the directory holds {queue:?}");
    };
    let out = out.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("zk-rwlock: leading").count(), 1, "{stderr}");
    assert_ne!(out.status.code(), Some(0), "{stderr}");
}
