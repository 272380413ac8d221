//! Replies ZooKeeper sends ahead of the replies to requests written before
//! them, against real servers: the client's check that replies come in
//! request order (patch 12 in `vendor/zookeeper-client/PATCHES.md`) must let
//! them through. Each test pipelines requests and fails on any call that
//! does not get its own answer (a refused reply drops the connection and
//! fails every call in flight with `UnexpectedError`).

use std::time::Duration;

use zk_rwlock::zk;
use zk_rwlock_fixtures::launcher::ZkCluster;

/// Awaits in order futures whose requests were all sent already.
async fn all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut out = Vec::new();
    for f in futures {
        out.push(f.await);
    }
    out
}

fn open() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

/// `Client::auth` while writes are in flight: the server answers auth as
/// soon as it reads it, before the writes ahead of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_while_requests_are_in_flight() {
    let cluster = tokio::task::spawn_blocking(ZkCluster::standalone)
        .await
        .unwrap()
        .expect("server");
    let client = zk::Client::connect(&cluster.connect_string()).await.unwrap();
    client.create("/auth-inflight", &[], &open()).await.unwrap();
    let mut failures = Vec::new();
    for round in 0..20 {
        let paths: Vec<String> = (0..8).map(|i| format!("/auth-inflight/r{round}-{i}")).collect();
        let opts = open();
        let creates: Vec<_> = paths.iter().map(|p| client.create(p, b"x", &opts)).collect();
        let auth = client.auth("digest", format!("u{round}:p").as_bytes());
        let (results, auth) = tokio::join!(all(creates), auth);
        auth.expect("auth");
        for r in results {
            if let Err(e) = r {
                failures.push(format!("round {round}: {e:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} creates failed: {failures:#?}",
        failures.len()
    );
}

/// Ensemble with eager ACL checks (`zookeeper.enableEagerACLCheck`): the
/// NoAuth of a write is answered before the reads ahead of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eager_acl_check_on_an_ensemble() {
    let cluster = tokio::task::spawn_blocking(|| {
        ZkCluster::builder()
            .members(3)
            .jvm_arg("-Dzookeeper.enableEagerACLCheck=true")
            .start()
    })
    .await
    .unwrap()
    .expect("ensemble");

    let alice = zk::Client::connector()
        .with_auth("digest", b"alice:pw")
        .connect(&cluster.connect_string())
        .await
        .unwrap();
    alice
        .create(
            "/eager",
            b"x",
            &zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all()),
        )
        .await
        .unwrap();
    let mut failures = Vec::new();
    for member in 0..3 {
        let bob = zk::Client::connect(&cluster.member_connect_string(member))
            .await
            .unwrap();
        for _ in 0..10 {
            let reads: Vec<_> = (0..8).map(|_| bob.get_children("/")).collect();
            let write = bob.set_data("/eager", b"y", None);
            let (reads, write) = tokio::join!(all(reads), write);
            for r in reads {
                if let Err(e) = r {
                    failures.push(format!("member {member} read: {e:?}"));
                }
            }
            if !matches!(write, Err(zk::Error::NoAuth)) {
                failures.push(format!("member {member} write: {write:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} calls failed: {failures:#?}",
        failures.len()
    );
}

/// A read-only member (ZooKeeper 3.8 needs local sessions for read-only
/// sessions): the NotReadOnly of a write is answered by the first request
/// processor, before the reads ahead of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_member() {
    let mut cluster = tokio::task::spawn_blocking(|| {
        ZkCluster::builder()
            .members(3)
            .jvm_arg("-Dreadonlymode.enabled=true")
            .setting("localSessionsEnabled", "true")
            .start()
    })
    .await
    .unwrap()
    .expect("ensemble");
    tokio::task::block_in_place(|| {
        cluster.stop(1).unwrap();
        cluster.stop(2).unwrap();
        for _ in 0..60 {
            let srvr = cluster.four_letter(0, "srvr").unwrap_or_default();
            if srvr.contains("read-only") {
                return;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("member 0 never read-only");
    });
    let ro = tokio::time::timeout(
        Duration::from_secs(10),
        zk::Client::connector()
            .with_readonly(true)
            .with_session_timeout(Duration::from_secs(4))
            .connect(&cluster.member_connect_string(0)),
    )
    .await
    .expect("connect in time")
    .expect("connect");
    assert_eq!(ro.state(), zk::SessionState::ConnectedReadOnly);
    let mut failures = Vec::new();
    for i in 0..20 {
        let reads: Vec<_> = (0..8).map(|_| ro.get_children("/")).collect();
        let path = format!("/ro-{i}");
        let opts = open();
        let write = ro.create(&path, b"x", &opts);
        let (reads, write) = tokio::join!(all(reads), write);
        for r in reads {
            if let Err(e) = r {
                failures.push(format!("round {i} read: {e:?}"));
            }
        }
        if !matches!(write, Err(zk::Error::NotReadOnly)) {
            failures.push(format!("round {i} write: {write:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} calls failed: {failures:#?}",
        failures.len()
    );
}
