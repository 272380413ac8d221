//! `zk-rwlock lead` attacked: a release the server refuses, and a killed `lead`.

mod common;

use zk_rwlock_testkit as support;

use std::process::Stdio;
use std::time::Duration;

use common::{kill, zk_rwlock};
use support::unique_path;
use zk_rwlock::zk;

const SHORT: Duration = Duration::from_secs(20);

/// Finding 2. CMD exits 0 but the release fails with an error that is
/// neither `Lost` nor the session's end (here NoAuth: the directory's ACL
/// lets candidates create nodes but not delete them). `run_holding` says
/// `End::ReleaseFailed` (code 70), and `lead` treats it as a failed term:
/// it backs off and campaigns again *on the same session*, whose old node
/// is still there and heads the queue. The new campaign waits behind its
/// own node for ever: `lead` hangs, runs nothing, and keeps the election
/// blocked (no one else can lead either) until someone kills it.
#[tokio::test]

async fn a_failed_release_does_not_campaign_again_behind_its_own_node() {
    let path = unique_path("lead-review-norelease");
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

/// Held up. `lead` is killed with SIGKILL while its CMD (which ignores
/// SIGTERM and ticks a timestamp every 20ms) leads; a second `lead` waits.
/// The second leader's CMD starts only after the first CMD's last tick.
#[tokio::test]
async fn a_killed_lead_stops_its_command_before_the_next_leader_starts() {
    let path = unique_path("lead-review-kill9");
    let dir = std::env::temp_dir().join(format!("zk-rwlock-lead-review-{}-kill9", std::process::id()));
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
