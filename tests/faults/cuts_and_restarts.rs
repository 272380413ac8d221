//! Faults injected on purpose: server restarts, leader failover, paused
//! members, connections cut (or replies garbled) at the worst moments,
//! session expiry, and strangers without credentials. Most tests start the
//! servers they break; those that only cut connections go through a proxy
//! to the shared server.

use zk_rwlock_fixtures as support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::proxy::{op, Proxy};
use support::{
    children, client, client_on, eventually, server, settles_to, unique_path, wait_nodes, wait_watching,
};
use zk_rwlock::{zk, ContenderState, Error, Mode, SharedLock};
use zk_rwlock_fixtures::launcher::ZkCluster;

const WITHIN: Duration = Duration::from_secs(20);

fn start(cluster: Result<ZkCluster, zk_rwlock_fixtures::launcher::LaunchError>) -> ZkCluster {
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
    settles_to(client, path, &[]).await;
}

/// Runs `fut` (bounded by `WITHIN`) while checking the children of `path`:
/// fails at once, naming them, if two nodes carry one contender's token.
async fn unless_duplicated<T>(
    direct: &zk::Client,
    path: &str,
    fut: impl std::future::Future<Output = T>,
) -> T {
    let check = async {
        loop {
            support::assert_no_duplicate(path, &children(direct, path).await);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    match tokio::time::timeout(WITHIN, async {
        tokio::select! {
            out = fut => out,
            never = check => never,
        }
    })
    .await
    {
        Ok(out) => out,
        Err(_) => {
            let now = children(direct, path).await;
            panic!("{path}: not done within {WITHIN:?}; children {now:?}")
        }
    }
}

/// Runs `fut` while `task` (an acquire that must keep waiting) is pending;
/// fails at once, with its result, if the task finishes first.
async fn while_pending<T: std::fmt::Debug, U>(
    task: &mut tokio::task::JoinHandle<T>,
    what: &str,
    fut: impl std::future::Future<Output = U>,
) -> U {
    tokio::select! {
        out = fut => out,
        done = task => panic!("{what}: finished while it should wait: {done:?}"),
    }
}

/// The member of `zk` whose `cons` lists a connection of `session`.
fn connected_member(zk: &ZkCluster, session: i64) -> Option<usize> {
    let sid = format!("sid=0x{session:x},");
    (0..zk.members())
        .filter(|&i| zk.is_running(i) && !zk.is_paused(i))
        .find(|&i| zk.four_letter(i, "cons").is_ok_and(|cons| cons.contains(&sid)))
}

/// Connect string of every member of `zk` but `except`.
fn others(zk: &ZkCluster, except: usize) -> String {
    (0..zk.members())
        .filter(|&i| i != except)
        .map(|i| zk.member_connect_string(i))
        .collect::<Vec<_>>()
        .join(",")
}

/// A client that knows every member of an ensemble, each through a proxy of
/// its own, and whose first connection provably goes to member `victim`:
/// the other proxies refuse connections until the victim's `cons` lists the
/// session. (The client shuffles its server list, so listing the victim
/// first would not do.)
struct Pinned {
    client: zk::Client,
    proxies: Vec<Proxy>,
    victim: usize,
}

impl Pinned {
    async fn connect(zk: &ZkCluster, victim: usize) -> Pinned {
        let proxies: Vec<Proxy> = (0..zk.members())
            .map(|i| Proxy::start(&zk.member_connect_string(i)))
            .collect();
        let connect = proxies.iter().map(Proxy::addr).collect::<Vec<_>>().join(",");
        let pinned = Pinned {
            client: {
                for (i, proxy) in proxies.iter().enumerate() {
                    proxy.set_blocked(i != victim);
                }
                client_on(&connect).await
            },
            proxies,
            victim,
        };
        let session = pinned.client.session_id().0;
        assert_eq!(
            connected_member(zk, session),
            Some(victim),
            "session 0x{session:x} is connected to member {victim}"
        );
        pinned.block_others(false);
        pinned
    }

    /// Whether the members other than the victim refuse new connections.
    fn block_others(&self, blocked: bool) {
        for (i, proxy) in self.proxies.iter().enumerate() {
            if i != self.victim {
                proxy.set_blocked(blocked);
            }
        }
    }

    fn session(&self) -> i64 {
        self.client.session_id().0
    }

    /// The victim has just been killed or paused: the client must notice
    /// (Disconnected: the others refuse connections until the test has seen
    /// it, so that it cannot be missed) and reconnect elsewhere to the same
    /// session (SyncConnected).
    async fn fails_over(&self, zk: &ZkCluster) {
        let session = self.session();
        wait_state(&self.client, zk::SessionState::Disconnected).await;
        self.block_others(false);
        wait_state(&self.client, zk::SessionState::SyncConnected).await;
        assert_eq!(self.session(), session, "the same session");
        eventually(
            &format!("session 0x{session:x} is connected to another member"),
            WITHIN,
            || async { connected_member(zk, session).is_some_and(|m| m != self.victim) },
        )
        .await;
    }
}

/// Asserts that `node` still exists, is owned by `session`, and holds.
async fn assert_still_holds(observer: &SharedLock, node: &str, session: i64) {
    let stat = (observer.client().check_stat(node).await)
        .unwrap()
        .unwrap_or_else(|| panic!("{node} is gone"));
    assert_eq!(stat.ephemeral_owner, session, "{node}: same ephemeralOwner");
    let queue = observer.contenders().await.unwrap();
    let me = (queue.iter().find(|c| c.path == node))
        .unwrap_or_else(|| panic!("{node} is not a contender: {queue:?}"));
    assert_eq!(me.state, ContenderState::Holds, "{node} still holds: {queue:?}");
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
    let (w_session, r_session, f_session) = (wc.session_id().0, rc.session_id().0, fc.session_id().0);
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
    let queue = holder.contenders().await.unwrap();
    assert_eq!(queue[0].path, h.node(), "same node");
    // The queue is W [W] R W; each waiter watches its node again after the
    // restart (a restarted server has no watches of its own).
    wait_watching(&zk, &queue[0].path, w_session).await;
    wait_watching(&zk, &queue[1].path, r_session).await;
    wait_watching(&zk, &queue[2].path, f_session).await;
    assert!(!writer.is_finished() && !reader.is_finished() && !in_flight.is_finished());

    h.release().await.unwrap();
    let w = support::joined(WITHIN, writer).await.unwrap();
    assert_eq!(w.node(), queue[1].path);
    assert!(
        support::watches(&zk, w.node(), r_session) && !reader.is_finished(),
        "the reader waits for the writer"
    );
    let w_token = w.fencing_token();
    w.release().await.unwrap();
    let r = support::joined(WITHIN, reader).await.unwrap();
    assert!(
        support::watches(&zk, r.node(), f_session) && !in_flight.is_finished(),
        "the in-flight writer waits for the reader"
    );
    r.release().await.unwrap();
    let f = support::joined(WITHIN, in_flight).await.unwrap();
    assert!(f.fencing_token() > w_token);
    f.release().await.unwrap();
    drained(&hc, &path).await;
}

/// A reader holds through the leader, which is killed; later a writer holds
/// through a follower, which is paused. Each holder's client provably was
/// on the member that failed: it goes Disconnected, reconnects to another
/// member with the same session, and keeps its node and the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensemble_survives_a_killed_leader_and_a_paused_follower() {
    let mut zk = start(ZkCluster::ensemble(3));
    let connect = zk.connect_string();
    let path = unique_path("failover");
    let leader = zk.leader().expect("an ensemble has a leader");

    // Two readers hold, the first through the leader; a writer waits.
    let pinned = Pinned::connect(&zk, leader).await;
    let r0 = SharedLock::new(pinned.client.clone(), &path)
        .unwrap()
        .read()
        .await
        .unwrap();
    let r1 = SharedLock::new(client_on(&connect).await, &path)
        .unwrap()
        .read()
        .await
        .unwrap();
    let observer = SharedLock::new(client_on(&connect).await, &path).unwrap();
    let wl = SharedLock::new(client_on(&connect).await, &path).unwrap();
    let w_session = wl.client().session_id().0;
    let writer = tokio::spawn(async move { wl.write().await });
    wait_contenders(&observer, 3).await;
    wait_watching(&zk, r1.node(), w_session).await;

    pinned.block_others(true);
    zk.kill(leader).unwrap();
    pinned.fails_over(&zk).await;
    eventually("a new leader", WITHIN, || async {
        zk.leader().is_some_and(|l| l != leader)
    })
    .await;
    assert!(r0.is_held() && r1.is_held(), "readers still hold after failover");
    assert_still_holds(&observer, r0.node(), pinned.session()).await;
    // The writer, failed over too, still waits on the readers.
    wait_watching(&zk, r1.node(), w_session).await;
    assert!(!writer.is_finished(), "no writer was granted while readers hold");

    r0.release().await.unwrap();
    r1.release().await.unwrap();
    let w1 = support::joined(WITHIN, writer).await.unwrap();
    let w1_token = w1.fencing_token();
    w1.release().await.unwrap();

    // Bring the old leader back, then pause a follower under a holder.
    zk.start(leader).unwrap();
    let mut current = None;
    eventually("a leader after the restart", WITHIN, || {
        current = zk.leader();
        let found = current.is_some();
        async move { found }
    })
    .await;
    let current = current.unwrap();
    let follower = (0..3).find(|i| *i != current).unwrap();
    // Everyone else stays off the follower: only the holder is pinned to it.
    let elsewhere = others(&zk, follower);
    let observer = SharedLock::new(client_on(&elsewhere).await, &path).unwrap();
    let pinned = Pinned::connect(&zk, follower).await;
    let h = SharedLock::new(pinned.client.clone(), &path)
        .unwrap()
        .write()
        .await
        .unwrap();
    assert!(h.fencing_token() > w1_token);
    let wl = SharedLock::new(client_on(&elsewhere).await, &path).unwrap();
    let w_session = wl.client().session_id().0;
    let second = tokio::spawn(async move { wl.write().await });
    wait_watching(&zk, h.node(), w_session).await;

    pinned.block_others(true);
    // A paused member's port still accepts connections and then never
    // answers; its proxy refuses new ones, so that the reconnection does not
    // wait on it. The holder's open connection stalls for real.
    pinned.proxies[follower].set_blocked(true);
    zk.pause(follower).unwrap();
    pinned.fails_over(&zk).await;
    assert!(h.is_held(), "the holder still holds after the pause");
    assert_still_holds(&observer, h.node(), pinned.session()).await;
    wait_watching(&zk, h.node(), w_session).await;
    assert!(!second.is_finished(), "the second writer waits for the holder");
    let h_token = h.fencing_token();
    h.release().await.unwrap();
    let w2 = support::joined(WITHIN, second).await.unwrap();
    assert!(w2.fencing_token() > h_token);
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
    support::mkdir_open(&direct, &path).await;

    // Uncontended: the create is applied, its reply is lost. A duplicate
    // would make the acquire wait behind itself: it fails at once instead.
    proxy.cut_after_request(&[op::CREATE, op::CREATE2]);
    let g = unless_duplicated(&direct, &path, l.write()).await.unwrap();
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
    // Holder and one waiter node; a duplicate fails here at once, named.
    wait_nodes(&direct, &path, 2).await;
    unless_duplicated(
        &direct,
        &path,
        wait_watching(server(), g.node(), c.session_id().0),
    )
    .await;
    assert_eq!(wait_nodes(&direct, &path, 2).await.len(), 2);
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
    // The release is pending while the client tries to reconnect and is
    // refused: it must not report anything before it sees the deletion.
    let mut release = Box::pin(g.release());
    let refused = proxy.refused();
    tokio::select! {
        result = &mut release => panic!("release finished while disconnected: {result:?}"),
        () = eventually("a reconnection refused during the release", WITHIN, || async {
            proxy.refused() > refused
        }) => {}
    }
    assert!(
        direct.check_stat(&node).await.unwrap().is_some(),
        "not deleted while disconnected"
    );
    proxy.set_blocked(false);
    tokio::time::timeout(WITHIN, release)
        .await
        .expect("release completes")
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
    // Still waiting: its watch on the holder is set again on the new connection.
    wait_watching(server(), h.node(), c.session_id().0).await;
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
    settles_to(&direct, &path, &[name_of(h.node())]).await;
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
    // A private lock: the contender nodes and the directory are the
    // authenticated identity's alone.
    let lock = SharedLock::builder(owner.clone(), &path)
        .acls(&acls)
        .directory_acls(&acls)
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

/// Where a cut hits a waiter: during its first acquire, or after it was
/// woken (its watched node deleted without granting it) and looks again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Acquire,
    Rewait,
}

/// The listing requests a cut follows: whichever the acquire loop sends.
const LISTING: &[i32] = &[op::GET_CHILDREN, op::GET_CHILDREN2];
/// The watch requests a cut follows: `getData` or `exists` (the acquire
/// loop may set its watches with either); the first one sent is cut.
const WATCH: &[i32] = &[op::GET_DATA, op::EXISTS];

/// Lists `path` over and over until `stop`, and returns every node name
/// seen per identity, or the first listing where one identity had two
/// nodes at once.
async fn record_nodes(
    client: zk::Client,
    path: String,
    stop: Arc<AtomicBool>,
) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    loop {
        let last = stop.load(Ordering::SeqCst);
        let now = children(&client, &path).await;
        let mut at_once: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
        for child in &now {
            let identity = child.split_once('@').map_or(child.as_str(), |(id, _)| id);
            at_once.entry(identity).or_default().push(child);
            seen.entry(identity.to_owned()).or_default().insert(child.clone());
        }
        if let Some((identity, nodes)) = at_once.iter().find(|(_, nodes)| nodes.len() > 1) {
            return Err(format!("{identity} had {} nodes at once: {nodes:?}", nodes.len()));
        }
        if last {
            return Ok(seen);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A holder (writer) and a waiter of `mode` whose connection is cut right
/// after it sends one of `ops` at `step`. The waiter reconnects, watches
/// the holder again, is granted once the holder releases, and each
/// contender has exactly one node all along; nothing is left afterwards.
async fn cut_while_waiting(mode: Mode, step: Step, ops: &[i32]) {
    let what = format!("a {mode} waiter cut after {ops:?} at {step:?}");
    let proxy = Proxy::start(&server().connect_string());
    let path = unique_path("cut-step");
    let direct = client_on(&server().connect_string()).await;
    let as_identity = |client: zk::Client, identity: &str| {
        SharedLock::builder(client, &path)
            .identity(identity)
            .build()
            .unwrap()
    };
    let h = as_identity(direct.clone(), "holder").write().await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let recorder = tokio::spawn(record_nodes(direct.clone(), path.clone(), stop.clone()));
    // For `Rewait`: a writer between the holder and the waiter.
    let middle = if step == Step::Rewait {
        let ml = as_identity(client_on(&server().connect_string()).await, "middle");
        let session = ml.client().session_id().0;
        let middle = tokio::spawn(async move { ml.write().await });
        wait_watching(server(), h.node(), session).await;
        Some(middle)
    } else {
        None
    };
    let c = client_on(proxy.addr()).await;
    let session = c.session_id().0;
    let vl = as_identity(c.clone(), "victim");
    if step == Step::Acquire {
        proxy.cut_after_request(ops);
    }
    let mut victim = tokio::spawn(async move { vl.acquire(mode).await });
    if let Some(middle) = middle {
        let nodes = wait_nodes(&direct, &path, 3).await;
        let middle_node = nodes
            .iter()
            .find(|n| n.starts_with("middle@"))
            .map(|n| format!("{path}/{n}"))
            .unwrap();
        while_pending(&mut victim, &what, wait_watching(server(), &middle_node, session)).await;
        // The middle writer gives up without the release mark: the waiter
        // wakes up, lists again and watches the holder.
        proxy.cut_after_request(ops);
        direct.delete(&middle_node, None).await.unwrap();
        assert!(
            matches!(support::joined(WITHIN, middle).await, Err(Error::Lost { .. })),
            "{what}: the middle writer learns its node is gone"
        );
    }
    let cut_fired = format!("{what}: the cut fired");
    let fired = eventually(&cut_fired, WITHIN, || async { proxy.fired() == 1 });
    while_pending(&mut victim, &what, fired).await;
    // Reconnected and really waiting: its watch on the holder is set.
    while_pending(&mut victim, &what, wait_watching(server(), h.node(), session)).await;
    let nodes = wait_nodes(&direct, &path, 2).await;
    assert!(
        nodes.iter().any(|n| n.starts_with("victim@")),
        "{what}: {nodes:?}"
    );
    assert!(!victim.is_finished(), "{what}: granted while the holder holds");
    h.release().await.unwrap();
    let g = support::joined(WITHIN, victim)
        .await
        .unwrap_or_else(|e| panic!("{what}: not granted: {e}"));
    assert_eq!(g.mode(), mode);
    assert_eq!(children(&direct, &path).await, vec![name_of(g.node())], "{what}");
    let stat = direct.check_stat(g.node()).await.unwrap().unwrap();
    assert_eq!(
        stat.ephemeral_owner, session,
        "{what}: owned by the waiter's session"
    );
    g.release().await.unwrap();
    drained(&direct, &path).await;
    stop.store(true, Ordering::SeqCst);
    let seen = support::joined(WITHIN, recorder)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    for (identity, nodes) in &seen {
        assert_eq!(
            nodes.len(),
            1,
            "{what}: {identity} had more than one node over time: {nodes:?}"
        );
    }
    assert_eq!(
        seen.keys().map(String::as_str).collect::<Vec<_>>(),
        match step {
            Step::Acquire => vec!["holder", "victim"],
            Step::Rewait => vec!["holder", "middle", "victim"],
        },
        "{what}"
    );
}

#[tokio::test]
async fn a_reader_cut_after_listing_keeps_one_node_and_is_granted() {
    cut_while_waiting(Mode::Read, Step::Acquire, LISTING).await;
    cut_while_waiting(Mode::Read, Step::Rewait, LISTING).await;
}

#[tokio::test]
async fn a_writer_cut_after_listing_keeps_one_node_and_is_granted() {
    cut_while_waiting(Mode::Write, Step::Acquire, LISTING).await;
    cut_while_waiting(Mode::Write, Step::Rewait, LISTING).await;
}

/// Between the listing and the watch: the watch request is sent, its reply lost.
#[tokio::test]
async fn a_reader_cut_after_setting_its_watch_keeps_one_node_and_is_granted() {
    cut_while_waiting(Mode::Read, Step::Acquire, WATCH).await;
    cut_while_waiting(Mode::Read, Step::Rewait, WATCH).await;
}

#[tokio::test]
async fn a_writer_cut_after_setting_its_watch_keeps_one_node_and_is_granted() {
    cut_while_waiting(Mode::Write, Step::Acquire, WATCH).await;
    cut_while_waiting(Mode::Write, Step::Rewait, WATCH).await;
}

/// A request in flight when the connection breaks may have been applied,
/// whatever error the client hands it: `ConnectionLoss`, an I/O error, or
/// (here) `UnexpectedError`, when the client drops a connection that sent it
/// a reply it never asked for. A create is then looked for by its token, a
/// release or a withdrawal retried: nothing is left to block the lock for
/// the rest of the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbled_reply_strands_no_node() {
    let direct = server().connect_string();
    let through = |proxy: &Proxy| {
        let addr = proxy.addr().to_owned();
        async move {
            zk::Client::connector()
                .with_session_timeout(Duration::from_secs(8))
                .connect(&addr)
                .await
                .unwrap()
        }
    };
    // The create of an acquire.
    let path = unique_path("garbled-create");
    let proxy = Proxy::start(&direct);
    let lock = SharedLock::new(through(&proxy).await, &path).unwrap();
    proxy.garble_after_request(&[op::CREATE, op::CREATE2]);
    let guard = lock.write().await.expect("the acquire finds its node again");
    assert_eq!(proxy.fired(), 1);
    let observer = client().await;
    assert_eq!(
        children(&observer, &path).await,
        vec![guard.node().rsplit('/').next().unwrap().to_owned()]
    );
    // The release.
    proxy.garble_after_request(&[op::DELETE, op::MULTI]);
    guard.release().await.expect("the release is retried");
    assert_eq!(proxy.fired(), 2);
    assert!(
        children(&observer, &path).await.is_empty(),
        "the released node is gone"
    );
    // The withdrawal of a timed-out acquire.
    let holder = support::lock(&path).await.write().await.unwrap();
    proxy.garble_after_request(&[op::DELETE]);
    assert!(lock
        .write_timeout(Duration::from_millis(300))
        .await
        .unwrap()
        .is_none());
    let holder_name = holder.node().rsplit('/').next().unwrap().to_owned();
    eventually("only the holder's node is left", WITHIN, || async {
        children(&observer, &path).await == vec![holder_name.clone()]
    })
    .await;
    assert_eq!(proxy.fired(), 3);
    holder.release().await.unwrap();
    support::assert_drained(&path).await;
}
