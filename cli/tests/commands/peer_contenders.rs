//! `zk-rwlock status` and `revoke` with Curator's and kazoo's contenders in
//! the queue: their library named, the layouts' blind spots warned about,
//! and kazoo holders, which have no revocation, left alone.

use zk_rwlock_fixtures as support;

use crate::common::{finish, zk_rwlock};
use serde_json::Value;
use support::{assert_drained, client, unique_path, wait_nodes};
use zk_rwlock::zk;

/// Runs `zk-rwlock <args>` on the shared server; returns the exit code, stdout, stderr.
async fn run(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut cmd = zk_rwlock(args);
    cmd.env_remove("ZK_RWLOCK_LAYOUT").envs(env.iter().copied());
    let run = finish(cmd.spawn().expect("spawn zk-rwlock")).await;
    (run.code, run.stdout, run.stderr)
}

/// Peers' contenders in the queue: their modes, their library, who waits on them.
#[tokio::test]
async fn status_shows_peer_contenders_with_their_library() {
    let path = unique_path("cli-status-peers");
    let c = client().await;
    c.mkdir(
        &path,
        &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
    )
    .await
    .unwrap();
    let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let curator_reader = format!("{path}/_c_7f3a0c1e-9b2d-4f60-a1b2-c3d4e5f60718-__READ__");
    c.create(&curator_reader, b"10.0.0.1", &ephemeral).await.unwrap();
    wait_nodes(&c, &path, 1).await;
    let (_, table, _) = run(&["status", &path], &[]).await;
    assert!(table.contains("(Curator InterProcessReadWriteLock)"), "{table}");
    assert!(!table.contains("WARNING"), "one layout: {table}");
    let kazoo_writer = format!("{path}/0123456789abcdef0123456789abcdef__lock__");
    c.create(&kazoo_writer, b"worker-3", &ephemeral).await.unwrap();
    let kids = wait_nodes(&c, &path, 2).await;
    let kazoo_name = kids.iter().find(|k| k.contains("__lock__")).unwrap().clone();

    let (code, stdout, stderr) = run(&["status", &path], &[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let rows: Vec<&str> = stdout.lines().collect();
    assert!(rows[0].contains("2 contenders, 1 holding, 1 waiting"), "{stdout}");
    assert!(
        rows[2].contains("(Curator InterProcessReadWriteLock)") && rows[2].contains("holds"),
        "{stdout}"
    );
    assert!(
        rows[3].contains("(kazoo)") && rows[3].contains("waits on _c_"),
        "{stdout}"
    );
    assert!(!stdout.contains("foreign"), "{stdout}");
    // Curator's and kazoo's locks do not see each other's nodes.
    let curator_name = kids.iter().find(|k| k.contains("__READ__")).unwrap();
    assert!(
        stdout.contains(&format!(
            "WARNING: Curator InterProcessReadWriteLock does not recognise {kazoo_name}: it can hold"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "WARNING: kazoo does not recognise {curator_name}: it can hold"
        )),
        "{stdout}"
    );

    let (code, stdout, _) = run(&["status", "--json", &path], &[]).await;
    assert_eq!(code, Some(0));
    let status: Value = serde_json::from_str(&stdout).unwrap();
    let got = status["contenders"].as_array().unwrap();
    assert_eq!(got[0]["layout"], "curator");
    assert_eq!(got[0]["mode"], "read");
    assert_eq!(got[0]["token"], "7f3a0c1e9b2d4f60a1b2c3d4e5f60718");
    assert_eq!(got[0]["identity"], "");
    assert_eq!(got[1]["layout"], "kazoo");
    assert_eq!(got[1]["mode"], "write");
    assert_eq!(got[1]["node"], kazoo_name.as_str());
    assert_eq!(got[1]["state"], "waits");
    drop(c);
    assert_drained(&path).await;
}

/// kazoo readers with a kazoo `__lock__` node behind them: `status` warns
/// that it may be a kazoo `Lock` (which holds beside readers); `--layout`
/// (or `ZK_RWLOCK_LAYOUT`) restricts the layout warning to that library;
/// `revoke` writes nothing to kazoo nodes.
#[tokio::test]
async fn status_layout_kazoo_lock_and_revoke_of_kazoo_holders() {
    let path = unique_path("cli-status-kazoo-lock");
    let c = client().await;
    c.mkdir(
        &path,
        &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
    )
    .await
    .unwrap();
    let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let reader = format!("{path}/0123456789abcdef0123456789abcdef__rlock__");
    let writer = format!("{path}/fedcba9876543210fedcba9876543210__lock__");
    c.create(&reader, b"reader-1", &ephemeral).await.unwrap();
    c.create(&writer, b"locker-2", &ephemeral).await.unwrap();
    let kids = wait_nodes(&c, &path, 2).await;
    let reader_name = kids.iter().find(|k| k.contains("__rlock__")).unwrap().clone();
    let writer_name = kids.iter().find(|k| k.contains("__lock__")).unwrap().clone();

    let (code, stdout, stderr) = run(&["status", &path], &[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!(
            "WARNING: {writer_name} waits behind kazoo readers ({reader_name}) but may be a kazoo \
             Lock (not WriteLock), which holds beside readers"
        )),
        "{stdout}"
    );
    assert!(!stdout.contains("does not recognise"), "one layout: {stdout}");

    // The chosen layout's library, by option or environment.
    let (code, stdout, stderr) = run(&["status", "--layout", "curator-mutex", &path], &[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!(
            "WARNING: Curator InterProcessMutex does not recognise {reader_name}, {writer_name}"
        )),
        "{stdout}"
    );
    let (_, stdout, _) = run(&["status", &path], &[("ZK_RWLOCK_LAYOUT", "curator")]).await;
    assert!(
        stdout.contains("WARNING: Curator InterProcessReadWriteLock does not recognise"),
        "{stdout}"
    );
    assert!(!stdout.contains("InterProcessMutex"), "{stdout}");
    let (_, stdout, _) = run(&["status", "--layout", "kazoo", &path], &[]).await;
    assert!(!stdout.contains("does not recognise"), "{stdout}");
    let (code, _, stderr) = run(&["status", "--layout", "zookeeper", &path], &[]).await;
    assert_eq!(code, Some(2), "{stderr}");

    // revoke: the kazoo holder is not asked, its data is left alone.
    let (code, _, stderr) = run(&["revoke", &path], &[]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "not asked: `{path}/{reader_name}` is a kazoo contender node"
        )),
        "{stderr}"
    );
    let (code, _, stderr) = run(&["revoke", &path, &reader_name], &[]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("kazoo has no revocation"), "{stderr}");
    let (data, _) = c.get_data(&format!("{path}/{reader_name}")).await.unwrap();
    assert_eq!(data, b"reader-1");
    drop(c);
    assert_drained(&path).await;
}
