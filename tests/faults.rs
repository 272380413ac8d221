//! Faults injected on purpose: server restarts, leader failover, paused
//! members, connections cut at the worst moments, session expiry, and
//! strangers without credentials. Each test starts the servers it breaks.

mod support;

use std::time::Duration;

use support::proxy::{op, Proxy};
use support::{children, client_on, eventually, server, unique_path};
use zk_rwlock::launcher::ZkCluster;
use zk_rwlock::{zk, ContenderState, Error, SharedLock};

const WITHIN: Duration = Duration::from_secs(20);

fn start(cluster: Result<ZkCluster, zk_rwlock::launcher::LaunchError>) -> ZkCluster {
    cluster.unwrap_or_else(|e| {
        panic!("these tests need a real ZooKeeper server: {e}\ninstall it with `sudo apt-get install -y zookeeper`")
    })
}

/// Waits until `client` reports `state`.
async fn wait_state(client: &zk::Client, state: zk::SessionState) {
    let mut states = client.state_watcher();
    let wait = async {
        while states.state() != state {
            states.changed().await;
        }
    };
    tokio::time::timeout(WITHIN, wait)
        .await
        .unwrap_or_else(|_| panic!("client never reached {state:?}"));
}

/// Waits until `lock` shows `n` contenders.
async fn wait_contenders(lock: &SharedLock, n: usize) {
    eventually(&format!("{n} contenders"), WITHIN, || async {
        lock.contenders().await.map(|c| c.len() == n).unwrap_or(false)
    })
    .await;
}

fn name_of(node: &str) -> String {
    node.rsplit('/').next().unwrap_or_default().to_owned()
}

async fn drained(client: &zk::Client, path: &str) {
    eventually(&format!("{path} is empty"), WITHIN, || async {
        children(client, path).await.is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_restart_keeps_holders_and_the_queue() {
    let mut zk = start(ZkCluster::standalone());
    let connect = zk.connect_string();
    let path = unique_path("restart");
    let (hc, wc, rc, fc) = (
        client_on(&connect).await,
        client_on(&connect).await,
        client_on(&connect).await,
        client_on(&connect).await,
    );
    let holder = SharedLock::new(hc.clone(), &path).unwrap();
    let h = holder.write().await.unwrap();
    let wl = SharedLock::new(wc, &path).unwrap();
    let writer = tokio::spawn(async move { wl.write().await });
    wait_contenders(&holder, 2).await;
    let rl = SharedLock::new(rc, &path).unwrap();
    let reader = tokio::spawn(async move { rl.read().await });
    wait_contenders(&holder, 3).await;

    zk.stop(0).unwrap();
    wait_state(&hc, zk::SessionState::Disconnected).await;
    // An acquire sent while the server is down is in flight across the restart.
    let fl = SharedLock::new(fc, &path).unwrap();
    let in_flight = tokio::spawn(async move { fl.write().await });
    zk.start(0).unwrap();
    wait_state(&hc, zk::SessionState::SyncConnected).await;

    assert!(h.is_held(), "the holder still holds after the restart");
    let queue = holder.contenders().await.unwrap();
    assert_eq!(queue[0].path, h.node(), "same node");
    wait_contenders(&holder, 4).await;
    assert!(!writer.is_finished() && !reader.is_finished() && !in_flight.is_finished());

    h.release().await.unwrap();
    let w = support::joined(WITHIN, writer).await.unwrap();
    assert!(!reader.is_finished(), "the reader waits for the writer");
    let w_token = w.fencing_token();
    w.release().await.unwrap();
    let r = support::joined(WITHIN, reader).await.unwrap();
    assert!(
        !in_flight.is_finished(),
        "the in-flight writer waits for the reader"
    );
    r.release().await.unwrap();
    let f = support::joined(WITHIN, in_flight).await.unwrap();
    assert!(f.fencing_token() > w_token);
    f.release().await.unwrap();
    drained(&hc, &path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensemble_survives_a_killed_leader_and_a_paused_follower() {
    let mut zk = start(ZkCluster::ensemble(3));
    let connect = zk.connect_string();
    let path = unique_path("failover");
    let mut readers = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..2 {
        let c = client_on(&connect).await;
        clients.push(c.clone());
        readers.push(SharedLock::new(c, &path).unwrap().read().await.unwrap());
    }
    let observer = SharedLock::new(client_on(&connect).await, &path).unwrap();
    let mut writers = Vec::new();
    for i in 0..2 {
        let l = SharedLock::new(client_on(&connect).await, &path).unwrap();
        writers.push(tokio::spawn(async move { l.write().await }));
        wait_contenders(&observer, 3 + i).await;
    }

    let leader = zk.leader().expect("an ensemble has a leader");
    zk.kill(leader).unwrap();
    // The remaining two elect a leader; every session fails over.
    eventually("a new leader", WITHIN, || async {
        zk.leader().is_some_and(|l| l != leader)
    })
    .await;
    wait_contenders(&observer, 4).await;
    assert!(
        readers.iter().all(|r| r.is_held()),
        "readers still hold after failover"
    );
    assert!(
        writers.iter().all(|w| !w.is_finished()),
        "no writer was granted while readers hold"
    );

    for r in readers {
        r.release().await.unwrap();
    }
    let mut writers = writers.into_iter();
    let w1 = support::joined(WITHIN, writers.next().unwrap()).await.unwrap();
    let second = writers.next().unwrap();

    // Bring the old leader back, then freeze a follower: the quorum holds.
    zk.start(leader).unwrap();
    let current = zk.leader().expect("leader");
    let follower = (0..3).find(|i| *i != current).unwrap();
    zk.pause(follower).unwrap();
    assert!(!second.is_finished(), "the second writer waits for the first");
    let w1_token = w1.fencing_token();
    w1.release().await.unwrap();
    let w2 = support::joined(WITHIN, second).await.unwrap();
    assert!(w2.fencing_token() > w1_token);
    w2.release().await.unwrap();
    zk.resume(follower).unwrap();
    // No grant was lost or duplicated: the queue drained completely.
    let c = client_on(&connect).await;
    drained(&c, &path).await;
}

#[tokio::test]
async fn connection_cut_right_after_create_finds_the_node_by_its_token() {
    let proxy = Proxy::start(&server().connect_string());
    let path = unique_path("cut-create");
    let c = client_on(proxy.addr()).await;
    let l = SharedLock::new(c.clone(), &path).unwrap();
    let direct = client_on(&server().connect_string()).await;
    // Make the directory first, so that the cut hits the contender's create.
    direct
        .mkdir(
            &path,
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();

    // Uncontended: the create is applied, its reply is lost.
    proxy.cut_after_request(&[op::CREATE, op::CREATE2]);
    let g = tokio::time::timeout(WITHIN, l.write())
        .await
        .expect("acquire completes")
        .unwrap();
    assert_eq!(
        proxy.fired(),
        1,
        "the cut happened after the create was forwarded"
    );
    let kids = children(&direct, &path).await;
    assert_eq!(
        kids,
        vec![name_of(g.node())],
        "exactly one node: no duplicate, no orphan"
    );
    let (_, stat) = direct.get_data(g.node()).await.unwrap();
    assert_eq!(stat.ephemeral_owner, c.session_id().0, "owned by this session");
    assert_eq!(stat.czxid, g.fencing_token());

    // Contended: same, while waiting behind the holder.
    proxy.cut_after_request(&[op::CREATE, op::CREATE2]);
    let l2 = l.clone();
    let waiter = tokio::spawn(async move { l2.read().await });
    eventually("the second cut fired", WITHIN, || async { proxy.fired() == 2 }).await;
    eventually("holder and one waiter node", WITHIN, || async {
        children(&direct, &path).await.len() == 2
    })
    .await;
    g.release().await.unwrap();
    let r = support::joined(WITHIN, waiter).await.unwrap();
    assert_eq!(children(&direct, &path).await, vec![name_of(r.node())]);
    r.release().await.unwrap();
    drained(&direct, &path).await;
}

#[tokio::test]
async fn release_is_retried_through_connection_loss() {
    let proxy = Proxy::start(&server().connect_string());
    let path = unique_path("cut-release");
    let c = client_on(proxy.addr()).await;
    let direct = client_on(&server().connect_string()).await;
    let l = SharedLock::new(c.clone(), &path).unwrap();

    // The release (a transaction that marks and deletes the node) reaches
    // the server, its reply is lost.
    let g = l.write().await.unwrap();
    proxy.cut_after_request(&[op::DELETE, op::MULTI]);
    tokio::time::timeout(WITHIN, g.release())
        .await
        .expect("release completes")
        .unwrap();
    assert_eq!(proxy.fired(), 1);
    drained(&direct, &path).await;

    // The connection is down when release starts, and stays down for a while.
    let g = l.write().await.unwrap();
    let node = g.node().to_owned();
    proxy.set_blocked(true);
    proxy.cut_all();
    wait_state(&c, zk::SessionState::Disconnected).await;
    let release = tokio::spawn(async move { g.release().await });
    assert!(
        direct.check_stat(&node).await.unwrap().is_some(),
        "not deleted while disconnected"
    );
    assert!(
        !release.is_finished(),
        "release does not report success it did not see"
    );
    proxy.set_blocked(false);
    tokio::time::timeout(WITHIN, release)
        .await
        .expect("release completes")
        .unwrap()
        .unwrap();
    assert!(direct.check_stat(&node).await.unwrap().is_none());
    drained(&direct, &path).await;
}

#[tokio::test]
async fn a_waiter_survives_a_cut_connection() {
    let proxy = Proxy::start(&server().connect_string());
    let path = unique_path("cut-wait");
    let direct = client_on(&server().connect_string()).await;
    let holder = SharedLock::new(direct.clone(), &path).unwrap();
    let h = holder.write().await.unwrap();
    let c = client_on(proxy.addr()).await;
    let l = SharedLock::new(c.clone(), &path).unwrap();
    let waiter = tokio::spawn(async move { l.write().await });
    wait_contenders(&holder, 2).await;
    let before = proxy.accepted();
    proxy.cut_all();
    eventually("the waiter reconnected", WITHIN, || async {
        proxy.accepted() > before
    })
    .await;
    wait_state(&c, zk::SessionState::SyncConnected).await;
    assert!(!waiter.is_finished());
    h.release().await.unwrap();
    let w = support::joined(WITHIN, waiter).await.unwrap();
    assert_eq!(children(&direct, &path).await, vec![name_of(w.node())]);
    w.release().await.unwrap();
    drained(&direct, &path).await;
}

#[tokio::test]
async fn acquires_given_up_during_a_disconnect_remove_their_nodes() {
    let proxy = Proxy::start(&server().connect_string());
    let path = unique_path("cut-cancel");
    let direct = client_on(&server().connect_string()).await;
    let holder = SharedLock::new(direct.clone(), &path).unwrap();
    let h = holder.write().await.unwrap();
    let c = client_on(proxy.addr()).await;
    let l = SharedLock::new(c.clone(), &path).unwrap();

    // A timed acquire whose deadline passes while disconnected.
    let lt = l.clone();
    let timed = tokio::spawn(async move { lt.write_timeout(Duration::from_millis(600)).await });
    // A cancelled acquire: its future is dropped while disconnected.
    let lc = l.clone();
    let cancelled =
        tokio::spawn(async move { tokio::time::timeout(Duration::from_millis(600), lc.read()).await });
    wait_contenders(&holder, 3).await;
    proxy.set_blocked(true);
    proxy.cut_all();
    wait_state(&c, zk::SessionState::Disconnected).await;
    assert!(
        cancelled.await.unwrap().is_err(),
        "the cancelled acquire timed out"
    );
    assert_eq!(
        children(&direct, &path).await.len(),
        3,
        "nothing can be deleted while disconnected"
    );
    proxy.set_blocked(false);
    let timed = tokio::time::timeout(WITHIN, timed).await.unwrap().unwrap();
    assert!(matches!(timed, Ok(None)), "timed out: {timed:?}");
    eventually("only the holder's node is left", WITHIN, || async {
        children(&direct, &path).await == vec![name_of(h.node())]
    })
    .await;
    h.release().await.unwrap();
    drained(&direct, &path).await;
}

#[tokio::test]
async fn session_expiry_tells_every_guard_and_waiter() {
    let connect = server().connect_string();
    let path = unique_path("expiry");
    let proxy = Proxy::start(&connect);
    let a = client_on(proxy.addr()).await;
    let la = SharedLock::new(a.clone(), &path).unwrap();
    let (r1, r2) = (la.read().await.unwrap(), la.read().await.unwrap());
    let other = SharedLock::new(client_on(&connect).await, &path).unwrap();
    let w = tokio::spawn({
        let other = other.clone();
        async move { other.write().await }
    });
    wait_contenders(&la, 3).await;
    let la2 = la.clone();
    let a_waiter = tokio::spawn(async move { la2.write().await });
    wait_contenders(&la, 4).await;

    // Expire session A: attach to it and close it.
    support::expire_behind(&proxy, &a, &connect).await;
    tokio::time::timeout(a.session_timeout(), async { tokio::join!(r1.lost(), r2.lost()) })
        .await
        .expect("every guard of the session reports lost within the session timeout");
    assert!(!r1.is_held() && !r2.is_held());
    let err = tokio::time::timeout(WITHIN, a_waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(err, Error::SessionExpired | Error::SessionClosed),
        "{err}"
    );
    let g = tokio::time::timeout(WITHIN, w)
        .await
        .expect("another session gets the lock")
        .unwrap()
        .unwrap();
    let queue = other.contenders().await.unwrap();
    assert_eq!(queue.len(), 1);
    assert_eq!(queue[0].state, ContenderState::Holds);
    g.release().await.unwrap();
    drained(other.client(), &path).await;
}

#[tokio::test]
async fn strangers_without_credentials_cannot_touch_the_lock() {
    let connect = server().connect_string();
    let path = unique_path("acl");
    let authed = || async {
        zk::Client::connector()
            .with_auth("digest", b"locker:s3cret")
            .connect(&connect)
            .await
            .unwrap()
    };
    let (owner, friend) = (authed().await, authed().await);
    let acls = zk::Acls::creator_all();
    let lock = SharedLock::builder(owner.clone(), &path)
        .acls(&acls)
        .build()
        .unwrap();
    let g = lock.write().await.unwrap();

    let stranger = client_on(&connect).await;
    // Cannot delete the holder's node.
    assert!(matches!(
        stranger.delete(g.node(), None).await,
        Err(zk::Error::NoAuth)
    ));
    // Cannot forge a contender (the directory refuses children).
    let forged = format!("{path}/forger-W-");
    let opts = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    assert!(matches!(
        stranger.create(&forged, &[], &opts).await,
        Err(zk::Error::NoAuth)
    ));
    match SharedLock::new(stranger.clone(), &path)
        .unwrap()
        .try_write()
        .await
    {
        Err(Error::NoAuth { .. }) => {}
        other => panic!("expected NoAuth, got {other:?}"),
    }
    assert!(g.is_held(), "the holder keeps the lock");

    // The lock keeps working for authenticated sessions.
    let fl = SharedLock::builder(friend, &path).acls(&acls).build().unwrap();
    let fl2 = fl.clone();
    let waiter = tokio::spawn(async move { fl2.read().await });
    wait_contenders(&fl, 2).await;
    g.release().await.unwrap();
    let r = support::joined(WITHIN, waiter).await.unwrap();
    r.release().await.unwrap();
    drained(&owner, &path).await;
}

#[tokio::test]
async fn a_killed_holder_process_is_replaced_only_after_its_session_expires() {
    let connect = server().connect_string();
    let path = unique_path("kill9");
    let mut holder = std::process::Command::new(env!("CARGO_BIN_EXE_zk-rwlock"))
        .args([
            "exec",
            "--write",
            "--session-timeout",
            "2s",
            "--connect",
            &connect,
            &path,
            "--",
            "sleep",
            "600",
        ])
        .stdin(std::process::Stdio::null())
        .spawn()
        .expect("run zk-rwlock exec");
    let observer = SharedLock::new(client_on(&connect).await, &path).unwrap();
    eventually("the holder process holds the lock", WITHIN, || async {
        observer
            .contenders()
            .await
            .map(|c| c.len() == 1 && c[0].state == ContenderState::Holds)
            .unwrap_or(false)
    })
    .await;
    let held = observer.contenders().await.unwrap().remove(0).path;
    let waiter_lock = observer.clone();
    let waiter = tokio::spawn(async move { waiter_lock.write().await });
    wait_contenders(&observer, 2).await;

    holder.kill().expect("kill -9 the holder");
    let killed = std::time::Instant::now();
    let _ = holder.wait();
    let direct = client_on(&connect).await;
    // Not before: while the dead holder's node exists, nobody else is granted.
    loop {
        let granted = waiter.is_finished();
        let exists = direct.check_stat(&held).await.unwrap().is_some();
        assert!(
            !(granted && exists),
            "granted while the killed holder's node still existed"
        );
        if !exists {
            break;
        }
        assert!(
            killed.elapsed() < WITHIN,
            "the killed holder's session never expired"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let expired_after = killed.elapsed();
    let g = tokio::time::timeout(WITHIN, waiter)
        .await
        .expect("granted after expiry")
        .unwrap()
        .unwrap();
    assert!(
        expired_after >= Duration::from_millis(500),
        "the node outlived its process until expiry"
    );
    g.release().await.unwrap();
    drained(&direct, &path).await;
}
