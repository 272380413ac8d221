//! A semaphore's wait keeps its watches across listings and leaves the ones
//! it no longer needs to fire, against a real server: a wake-up that grants
//! nothing asks only for what is new to the window; a waiter cut off is
//! woken by a node it kept watching; a lock's wait still removes the watch
//! it gives up; a node whose deletion the wait saw, listed again under its
//! name, is watched again (never kept on the strength of its name); a watch
//! that fired before the listing is not kept for a node listed under its
//! name; waits beside long-held permits leave at most one watcher per node
//! in the client (the lock's store of lingering watches).
//!
//! These tests run one at a time (`serial`); the memory measurement is
//! ignored by default (run it alone).

use zk_rwlock_fixtures as support;

use crate::{queue, semaphore, spawn_acquire};

use std::time::Duration;

use support::proxy::{op, Proxy};
use support::{
    assert_drained, child_name, client, client_on, eventually, joined, server, unique_path, wait_nodes,
    wait_watching,
};
use zk_rwlock::{zk, Semaphore, SharedLock};

const WITHIN: Duration = Duration::from_secs(30);

/// One test of this file at a time.
async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static ONE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    ONE.lock().await
}

/// Kept: N = 4, the waiter five behind the head (four holders and a waiter
/// X on their session). The release of the nearest holder grants X and
/// wakes the waiter, which then has exactly N before it: it lists, watches
/// its own node (a hand-off may grant it now) and asks for the one node new
/// to its window. Three requests, where asking for every watch again would
/// take six.
#[tokio::test]
async fn a_wake_up_that_grants_nothing_asks_only_for_the_node_new_to_the_window() {
    let _one = serial().await;
    const N: usize = 4;
    let path = unique_path("reuse-cost");
    let holders = semaphore(&path, N as u32).await;
    let mut held = Vec::new();
    for _ in 0..N {
        held.push(holders.acquire().await.unwrap());
    }
    let c = client().await;
    let x = spawn_acquire(&holders);
    wait_nodes(&c, &path, N + 1).await;
    let waiter = semaphore(&path, N as u32).await;
    let session = waiter.client().session_id().0;
    let w = spawn_acquire(&waiter);
    let nodes = queue(&c, &path, N + 2).await;
    // W watches H1, H2, H3 and X; H1's watch is asked last.
    wait_watching(server(), &nodes[N], session).await;
    wait_watching(server(), &nodes[1], session).await;
    let before = support::received_on(session);
    held.pop().unwrap().release().await.unwrap();
    // Now H0, H1, H2 and X: H0 is new, and its own node is watched.
    wait_watching(server(), &nodes[0], session).await;
    wait_watching(server(), &nodes[N + 1], session).await;
    let cost = support::received_on(session) - before;
    let x = joined(WITHIN, x).await;
    drop(held);
    drop(x);
    let w = joined(WITHIN, w).await;
    drop(w);
    assert_drained(&path).await;
    // A ping may fall in the window: one more.
    assert!(
        cost <= 4,
        "a wake-up that grants nothing cost {cost} requests with N = {N} (a listing, the own \
         node's watch and the new node's watch would do)"
    );
}

/// Kept: the waiter (N = 2) first watches A1 and X, then, A1 released (X
/// granted), A0 (new) and X (kept). Cut off, X's permit is released: the
/// client sets the kept watch again on reconnection, the server reports
/// the deletion, and the waiter is granted beside A0. Were the kept watch's
/// future lost, nothing would wake it while A0 holds.
#[tokio::test]
async fn a_waiter_cut_off_is_woken_by_the_deletion_of_a_node_it_kept_watching() {
    let _one = serial().await;
    let direct = server().connect_string();
    let path = unique_path("reuse-cut");
    let holders = semaphore(&path, 2).await;
    let a0 = holders.acquire().await.unwrap();
    let a1 = holders.acquire().await.unwrap();
    let c = client().await;
    let x = spawn_acquire(&holders);
    wait_nodes(&c, &path, 3).await;
    let proxy = Proxy::start(&direct);
    let waiter = Semaphore::new(client_on(proxy.addr()).await, &path, 2).unwrap();
    let session = waiter.client().session_id().0;
    let w = spawn_acquire(&waiter);
    let nodes = queue(&c, &path, 4).await;
    wait_watching(server(), &nodes[2], session).await;
    wait_watching(server(), &nodes[1], session).await;
    a1.release().await.unwrap();
    let x = joined(WITHIN, x).await;
    // A0 asked for (and its own node, a hand-off may grant it); X kept.
    wait_watching(server(), &nodes[0], session).await;
    wait_watching(server(), &nodes[3], session).await;
    proxy.set_blocked(true);
    proxy.cut_all();
    eventually("the waiter is cut off", WITHIN, || async {
        waiter.client().state() != zk::SessionState::SyncConnected
    })
    .await;
    x.release().await.unwrap();
    proxy.set_blocked(false);
    let permit = joined(WITHIN, w).await;
    assert!(a0.is_held() && permit.is_held());
    drop((a0, permit));
    assert_drained(&path).await;
}

/// Kept: a lock's wait lingers nowhere. A writer that gives up waiting
/// removes its watch on the holder from the server.
#[tokio::test]
async fn a_lock_waiter_that_gives_up_still_removes_its_watch() {
    let _one = serial().await;
    let path = unique_path("reuse-lock");
    let lock = SharedLock::new(client().await, &path).unwrap();
    let held = lock.write().await.unwrap();
    let other = SharedLock::new(client().await, &path).unwrap();
    let session = other.client().session_id().0;
    let gave_up = tokio::spawn({
        let other = other.clone();
        async move {
            other
                .write_timeout(Duration::from_secs(2))
                .await
                .unwrap()
                .is_none()
        }
    });
    wait_watching(server(), held.node(), session).await;
    assert!(joined(WITHIN, gave_up).await, "the holder still holds");
    eventually("the lock waiter's watch is removed", WITHIN, || async {
        !support::watches(server(), held.node(), session)
    })
    .await;
    drop(held);
    assert_drained(&path).await;
}

/// A node whose deletion the wait saw (its watch fired and was taken) is
/// watched again if a later listing still shows a node of that name: the
/// wait keeps only the watches its carrier holds set and unfired
/// (`Contender::watches_pending`), so it never runs on fewer than N.
///
/// In a real ensemble the listing after the wake-up can be a lagging
/// follower's (a notification does not move the client's last zxid seen);
/// here a stranger makes the node again under its name while the waiter's
/// listing is cut off, which the server answers the same way.
///
/// N = 2; strangers' nodes p, a, k before the waiter, which watches a and
/// k. k is deleted (the waiter wakes and lists; its listing is cut after it
/// is sent, reconnections refused), made again, and the waiter reconnects:
/// its listing (sent again) shows p, a, k, its window is a and k, and it
/// asks for k's watch again: when p and k go, it is woken and granted.
#[tokio::test]
async fn a_predecessor_listed_again_after_its_deletion_was_seen_is_watched_again() {
    let _one = serial().await;
    let direct = server().connect_string();
    let path = unique_path("reuse-seen-gone");
    let s = client().await;
    support::mkdir_open(&s, &path).await;
    let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    for host in ["p", "a", "k"] {
        s.create(&format!("{path}/{host}-W-"), &[], &ephemeral)
            .await
            .unwrap();
    }
    let nodes = queue(&s, &path, 3).await;
    let (p, a, k) = (nodes[0].clone(), nodes[1].clone(), nodes[2].clone());
    let proxy = Proxy::start(&direct);
    let waiter = Semaphore::new(client_on(proxy.addr()).await, &path, 2).unwrap();
    let session = waiter.client().session_id().0;
    let w = spawn_acquire(&waiter);
    wait_watching(server(), &k, session).await;
    wait_watching(server(), &a, session).await;
    proxy.set_blocked(true);
    proxy.cut_after_request(&[op::GET_CHILDREN, op::GET_CHILDREN2]);
    s.delete(&k, None).await.unwrap();
    eventually("the listing after k's deletion is cut", WITHIN, || async {
        proxy.fired() == 1
    })
    .await;
    s.create(
        &k,
        &[],
        &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
    )
    .await
    .unwrap();
    proxy.set_blocked(false);
    // Its listing shows p, a, k and itself: it watches a and k.
    let watched = {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if support::watches(server(), &k, session) {
                break true;
            }
            if tokio::time::Instant::now() >= deadline {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    // Whichever way it went: k and p leave, a stays, one before it.
    s.delete(&k, None).await.unwrap();
    s.delete(&p, None).await.unwrap();
    let granted = tokio::time::timeout(Duration::from_secs(10), w).await;
    let woke = matches!(granted, Ok(Ok(_)));
    if let Ok(Ok(permit)) = granted {
        drop(permit);
    }
    s.delete(&a, None).await.unwrap();
    drop(waiter);
    assert!(
        watched && woke,
        "the waiter listed {} again after its deletion was reported, and {} (its watch on k \
         counted as set though its event was taken); with k and p gone and one before it, it \
         was {}",
        child_name(&k),
        if watched { "watched it" } else { "did not watch it" },
        if woke { "granted" } else { "not woken within 10 s" }
    );
}

/// A watch whose event came before the listing is not kept for a node
/// that listing shows under its name: its old event is never taken for
/// the deletion of the node listed.
///
/// N = 2, two permits a and k before the waiter, its hand-off armed (its
/// own node watched). While its connection is held up (nothing lost, the
/// order kept), a stranger writes to the waiter's node (a revocation
/// request does), k's holder releases, and a node is made under k's name
/// (a stranger's, with the same permit count). The waiter wakes by its own
/// node's event and lists: a, k and itself, two before it; k's fired watch
/// is not kept, k is asked again, and the waiter waits: two hold two
/// permits.
#[tokio::test]
async fn a_watch_that_fired_before_the_listing_is_not_kept_for_a_node_listed_under_its_name() {
    let _one = serial().await;
    let direct = server().connect_string();
    let path = unique_path("reuse-same-name");
    let holders = semaphore(&path, 2).await;
    let a = holders.acquire().await.unwrap();
    let k = holders.acquire().await.unwrap();
    let k_path = k.node().to_owned();
    let proxy = Proxy::start(&direct);
    let waiter = Semaphore::new(client_on(proxy.addr()).await, &path, 2).unwrap();
    let session = waiter.client().session_id().0;
    let w = spawn_acquire(&waiter);
    let s = client().await;
    let nodes = queue(&s, &path, 3).await;
    let own = nodes[2].clone();
    wait_watching(server(), &k_path, session).await;
    wait_watching(server(), a.node(), session).await;
    wait_watching(server(), &own, session).await;
    proxy.freeze();
    s.set_data(&own, b"stray", None).await.unwrap();
    k.release().await.unwrap();
    s.create(
        &k_path,
        &[],
        &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
    )
    .await
    .unwrap();
    proxy.thaw();
    // It decides on a listing of a, k and itself: granted (wrongly), or
    // waiting on k again.
    eventually("the waiter decided again", WITHIN, || async {
        w.is_finished() || support::watches(server(), &k_path, session)
    })
    .await;
    let granted_early = w.is_finished();
    let holding_a = a.is_held();
    drop(a);
    s.delete(&k_path, None).await.unwrap();
    let permit = joined(WITHIN, w).await;
    drop(permit);
    assert_drained(&path).await;
    assert!(
        !(granted_early && holding_a),
        "the waiter was granted with two permits held before it (a, and a node named {}), \
         N = 2: the deletion event of the node of that name before it, which came before its \
         listing, was kept and taken for the listed node's",
        child_name(&k_path)
    );
}

/// A waiter's watches on nodes that stay (a permit held for a long time, a
/// persistent node) are left to fire when it no longer needs them, one per
/// node (the lock's store of lingering watches): the next wait's watch on
/// the same node is forgotten by the client when dropped (the store's
/// keeps the server's), so the client's registry does not grow by a
/// watcher per node per wait.
///
/// K permits held for the whole test, a cycler holding the last one; the
/// waiter queues behind all K + 1, is handed the cycler's permit and gives
/// it back, round after round. Its process must not grow by a watcher per
/// held permit per round (K × rounds of them; at about a hundred bytes and
/// more each, megabytes; about 224 bytes per round per held permit when
/// every wait left its watchers registered).
///
/// A measurement of the process's memory, so ignored by default (the other
/// tests of the binary allocate beside it): `cargo test --test semaphore
/// waits_beside_long_held -- --ignored --nocapture`.
#[tokio::test]
#[ignore = "a measurement of the process's memory: run it alone with --ignored"]
async fn waits_beside_long_held_permits_do_not_grow_the_clients_watch_registry() {
    let _one = serial().await;
    const K: usize = 256;
    const WARM_UP: usize = 8;
    const ROUNDS: usize = 128;
    let path = unique_path("reuse-registry");
    let permits = K as u32 + 1;
    let long = semaphore(&path, permits).await;
    let mut held = Vec::new();
    for _ in 0..K {
        held.push(long.try_acquire().await.unwrap().expect("a permit is free"));
    }
    let cycler = semaphore(&path, permits).await;
    let waiter = semaphore(&path, permits).await;
    let session = waiter.client().session_id().0;
    let c = client().await;
    let mut grown_from = None;
    for round in 0..WARM_UP + ROUNDS {
        if round == WARM_UP {
            grown_from = support::rss_kb("self");
        }
        let x = cycler
            .try_acquire()
            .await
            .unwrap()
            .expect("the cycler's permit is free");
        let w = spawn_acquire(&waiter);
        // The waiter waits (K + 1 before it, all permits): it watches its
        // own node, new each round.
        let nodes = queue(&c, &path, K + 2).await;
        wait_watching(server(), &nodes[K + 1], session).await;
        x.release().await.unwrap();
        let permit = joined(WITHIN, w).await;
        permit.release().await.unwrap();
    }
    let grown = support::rss_kb("self")
        .zip(grown_from)
        .map(|(now, from)| now.saturating_sub(from));
    drop(held);
    assert_drained(&path).await;
    let grown = grown.expect("the process's resident size can be read");
    println!("{ROUNDS} waits beside {K} permits held all along: the process grew by {grown} kB");
    assert!(
        grown < 2048,
        "{ROUNDS} waits beside {K} permits held all along grew the process by {grown} kB \
         ({} watchers left registered if one is kept per node per wait)",
        ROUNDS * K
    );
}
