//! The semaphore beside strangers and through faults, against a real
//! server: predecessors this identity may not read (polled, each of them);
//! a lock's directory with a stranger's permit node in it (the lock's queue
//! stays the lock's); a lock writer's downgrade ahead of a permit waiter
//! (no hand-off by a node that is no permit); a persistent predecessor
//! (reported); what a wake-up that grants nothing costs (the nodes still
//! watched are not asked again); and the failure modes other semaphores
//! shipped: a cut after the create (no orphan holding a permit,
//! CURATOR-315/335), an expired holder (its permit freed, the holder told,
//! CURATOR-595), racing try and timed acquires (never over the count,
//! kazoo#213), stray writes on watched holders, a waiter cut off while a
//! farther holder leaves, no watch left on predecessors gone when watched.

use zk_rwlock_fixtures as support;

use crate::{queue, semaphore, spawn_acquire};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::proxy::{op, Proxy};
use support::{
    assert_drained, child_name, client, client_on, eventually, joined, server, unique_path, wait_nodes,
    wait_watching,
};
use zk_rwlock::{zk, ContenderState, HoldState, Semaphore, SharedLock};

const WITHIN: Duration = Duration::from_secs(30);

/// Predecessors this identity may not read: the server sends a watcher no
/// event of a node it may not read (an `exists` watch would be set, and
/// silent), so the waiter polls every such node, and the farther one
/// leaving first grants it, the nearer one still there.
#[tokio::test]
async fn a_waiter_polls_every_predecessor_it_may_not_read_and_is_granted_by_any() {
    let path = unique_path("sem-unreadable");
    support::mkdir_open(&client().await, &path).await;
    let connect = |user: &'static str| async move {
        zk::Client::connector()
            .with_session_timeout(Duration::from_secs(8))
            .with_auth("digest", user.as_bytes())
            .connect(&server().connect_string())
            .await
            .unwrap()
    };
    let bob = Semaphore::builder(connect("bob:secret").await, &path, 2)
        .acls(&zk::Acls::creator_all())
        .build()
        .unwrap();
    let alice = Semaphore::builder(connect("alice:secret").await, &path, 2)
        .acls(&zk::Acls::creator_all())
        .build()
        .unwrap();
    let farther = bob.acquire().await.unwrap();
    let nearer = bob.acquire().await.unwrap();
    for node in [farther.node(), nearer.node()] {
        assert!(matches!(
            alice.client().get_data(node).await,
            Err(zk::Error::NoAuth)
        ));
    }
    let task = spawn_acquire(&alice);
    let c = client().await;
    wait_nodes(&c, &path, 3).await;
    farther.release().await.unwrap();
    let permit = joined(WITHIN, task).await;
    assert!(nearer.is_held() && permit.is_held());
    drop((nearer, permit));
    assert_drained(&path).await;
}

/// A lock's directory is the lock's whatever strangers queue behind its
/// head: a stranger's permit node there does not make the lock's
/// `contenders()` count by permits (its waiting writer stays waiting), and
/// `revoke_holders()` asks only the lock's holder.
#[tokio::test]
async fn a_locks_waiting_writer_stays_waiting_beside_a_strangers_permit_node() {
    let path = unique_path("sem-lock-status");
    let lock = SharedLock::new(client().await, &path).unwrap();
    let first = lock.write().await.unwrap();
    let other = SharedLock::new(client().await, &path).unwrap();
    let second = tokio::spawn({
        let other = other.clone();
        async move { other.write().await.unwrap() }
    });
    support::wait_contenders(&lock, 2).await;
    let stranger = semaphore(&path, 5).await;
    let permit = stranger
        .try_acquire()
        .await
        .unwrap()
        .expect("2 contenders before it, 5 permits");
    let states: Vec<ContenderState> = lock
        .contenders()
        .await
        .unwrap()
        .into_iter()
        .map(|q| q.state)
        .collect();
    let asked = lock.revoke_holders().await.unwrap().asked;
    let head = child_name(first.node()).to_owned();
    let first_node = first.node().to_owned();
    drop(first);
    let second = joined(WITHIN, second).await;
    drop((second, permit));
    assert_drained(&path).await;
    assert_eq!(
        (states[..2].to_vec(), asked),
        (
            vec![ContenderState::Holds, ContenderState::WaitsOn(head)],
            vec![first_node]
        ),
        "the lock's second writer waits on the first (the lock's own rules), whatever node \
         follows it, and only the lock's holder is asked to let go"
    );
}

/// A waiter with more than N before it, woken by the release of one of its
/// watched nodes, lists again and asks only for the node new to its N
/// nearest: the others' watches are still set (kept, not removed and set
/// again), so a wake-up costs a few requests, not 2N.
#[tokio::test]
async fn a_wake_up_that_grants_nothing_costs_the_waiter_a_few_requests_not_n() {
    const N: usize = 16;
    let path = unique_path("sem-rewatch-cost");
    let holders = semaphore(&path, N as u32).await;
    let mut held = Vec::new();
    for _ in 0..N {
        held.push(holders.acquire().await.unwrap());
    }
    let c = client().await;
    // X waits right behind the holders (on their session), W behind X.
    let x = spawn_acquire(&holders);
    wait_nodes(&c, &path, N + 1).await;
    let waiter = semaphore(&path, N as u32).await;
    let session = waiter.client().session_id().0;
    let w = spawn_acquire(&waiter);
    let nodes = queue(&c, &path, N + 2).await;
    // W (N + 1 ahead) watches H1 ..= H15 and X; H1's exists goes last.
    wait_watching(server(), &nodes[N], session).await;
    wait_watching(server(), &nodes[1], session).await;
    let before = support::received_on(session);
    // H15's release wakes W (and grants X): N ahead, W now also watches H0.
    held.pop().unwrap().release().await.unwrap();
    wait_watching(server(), &nodes[0], session).await;
    let cost = support::received_on(session) - before;
    let x = joined(WITHIN, x).await;
    drop(held);
    drop(x);
    let w = joined(WITHIN, w).await;
    drop(w);
    assert_drained(&path).await;
    assert!(
        cost <= 6,
        "one wake-up of a waiter that stays waiting cost {cost} requests with N = {N} \
         (a listing, its own node's watch and one new watch would do)"
    );
}

/// A lock writer's downgrade replaces its node by a reader with the same
/// sequence in one transaction: a permit waiter with exactly N before it,
/// that writer among them, must not take that deletion for its grant (only
/// a permit's deletion hands one over), and lists again instead.
#[tokio::test]
async fn a_lock_writers_downgrade_before_a_waiting_permit_grants_it_nothing() {
    let path = unique_path("sem-downgrade");
    let writer_lock = SharedLock::new(client().await, &path).unwrap();
    let writer = writer_lock.write().await.unwrap();
    let reader_lock = SharedLock::new(client().await, &path).unwrap();
    let reader = tokio::spawn({
        let l = reader_lock.clone();
        async move { l.read().await.unwrap() }
    });
    let c = client().await;
    let nodes = queue(&c, &path, 2).await;
    let sem = semaphore(&path, 2).await;
    let session = sem.client().session_id().0;
    let task = spawn_acquire(&sem);
    // N = 2 before it, both watched: the writer (exists), the reader (getData).
    wait_watching(server(), &nodes[0], session).await;
    wait_watching(server(), &nodes[1], session).await;
    let downgraded = writer.downgrade().await.unwrap();
    let replacement = downgraded.node().to_owned();
    assert_eq!(
        support::seq_of(child_name(&replacement)),
        support::seq_of(child_name(&nodes[0])),
        "the downgrade took the writer's place"
    );
    // Either the waiter took the deletion for its grant, or it listed
    // again and watches the replacing reader.
    eventually("the permit waiter decided again", WITHIN, || async {
        task.is_finished() || support::watches(server(), &replacement, session)
    })
    .await;
    let granted_early = task.is_finished();
    let read = joined(WITHIN, reader).await;
    drop((downgraded, read));
    let permit = joined(WITHIN, task).await;
    drop(permit);
    assert_drained(&path).await;
    assert!(
        !granted_early,
        "the permit waiter was granted with 2 contenders (the downgrade's reader and the \
         waiting reader, both holding the lock) before it and 2 permits"
    );
}

/// A persistent contender-named node (made by hand or another tool) never
/// leaves: in a semaphore it takes a permit for good. It is reported
/// wherever it is among the watched predecessors, not only as the nearest.
#[tokio::test]
async fn a_persistent_predecessor_among_the_watched_ones_is_reported() {
    // Installs the process's log capture (its first call's filter).
    support::captured_logs("zk_rwlock=warn");
    let c = client().await;
    // Whether the waiter (2 permits, 2 before it, both watched) reports the
    // persistent node, made before the holder's (`persistent_first`: the
    // farther predecessor, watched with `exists`) or after it (the nearer,
    // read with `getData`).
    let reported = |persistent_first: bool| {
        let c = c.clone();
        async move {
            let path = unique_path("sem-persistent");
            support::mkdir_open(&c, &path).await;
            let by_hand = || async {
                c.create(
                    &format!("{path}/by-hand-W-"),
                    &[],
                    &zk::CreateMode::PersistentSequential.with_acls(zk::Acls::anyone_all()),
                )
                .await
                .unwrap();
            };
            let holders = semaphore(&path, 2).await;
            if persistent_first {
                by_hand().await;
            }
            let held = holders.acquire().await.unwrap();
            if !persistent_first {
                by_hand().await;
            }
            let waiter = semaphore(&path, 2).await;
            let session = waiter.client().session_id().0;
            let task = spawn_acquire(&waiter);
            let nodes = queue(&c, &path, 3).await;
            // Both predecessors are watched: the wait began.
            wait_watching(server(), &nodes[0], session).await;
            wait_watching(server(), &nodes[1], session).await;
            let stray = nodes.iter().find(|n| n.contains("by-hand")).unwrap().clone();
            // The warning follows the watches' answers: looked for a while.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
            let reported = loop {
                let logs = support::captured_logs("zk_rwlock=warn");
                let found = logs
                    .lines()
                    .any(|l| l.contains("not ephemeral") && l.contains(&stray));
                if found || tokio::time::Instant::now() >= deadline {
                    break found;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            };
            held.release().await.unwrap();
            let permit = joined(WITHIN, task).await;
            drop(permit);
            c.delete(&stray, None).await.unwrap();
            assert_drained(&path).await;
            reported
        }
    };
    assert!(
        reported(false).await,
        "the persistent node right before the waiter (read with getData) is reported"
    );
    assert!(
        reported(true).await,
        "the persistent node farther before the waiter (watched with exists) is reported: \
         it takes a permit for good"
    );
}

/// The farther of two watched holders is released while the waiter is cut
/// off. Its `exists` watch (on a node that existed) is a data watch for the
/// client, re-registered on reconnection, and the server reports the
/// deletion then: the waiter is granted (after checking its own node).
#[tokio::test]
async fn a_farther_holder_released_while_the_waiter_is_cut_off_still_grants_it() {
    let direct = server().connect_string();
    let path = unique_path("sem-reconnect");
    let holders = semaphore(&path, 2).await;
    let farther = holders.acquire().await.unwrap();
    let nearer = holders.acquire().await.unwrap();
    let proxy = Proxy::start(&direct);
    let waiter = Semaphore::new(client_on(proxy.addr()).await, &path, 2).unwrap();
    let session = waiter.client().session_id().0;
    let task = spawn_acquire(&waiter);
    wait_watching(server(), farther.node(), session).await;
    wait_watching(server(), nearer.node(), session).await;
    proxy.set_blocked(true);
    proxy.cut_all();
    eventually("the waiter is cut off", WITHIN, || async {
        waiter.client().state() != zk::SessionState::SyncConnected
    })
    .await;
    farther.release().await.unwrap();
    proxy.set_blocked(false);
    let permit = joined(WITHIN, task).await;
    assert!(nearer.is_held() && permit.is_held());
    drop((nearer, permit));
    assert_drained(&path).await;
}

/// CURATOR-595: a holder whose session is lost must free its permit. The
/// holder's session expires: its node goes with it, the waiter is granted,
/// and the old holder sees its permit lost (its release fails, deleting
/// nothing of the new holder's).
#[tokio::test]
async fn a_holders_expired_session_frees_its_permit_and_the_holder_knows() {
    let direct = server().connect_string();
    let path = unique_path("sem-expiry");
    let proxy = Proxy::start(&direct);
    let victim = client_on(proxy.addr()).await;
    let holder = Semaphore::new(victim.clone(), &path, 1).unwrap();
    let permit = holder.acquire().await.unwrap();
    let waiter = semaphore(&path, 1).await;
    let session = waiter.client().session_id().0;
    let task = spawn_acquire(&waiter);
    wait_watching(server(), permit.node(), session).await;
    support::expire_behind(&proxy, &victim, &direct).await;
    let granted = joined(WITHIN, task).await;
    eventually("the expired holder's permit is lost", WITHIN, || async {
        permit.state() == HoldState::Lost
    })
    .await;
    assert!(permit.release().await.is_err());
    let c = client().await;
    assert_eq!(
        support::children(&c, &path).await,
        vec![child_name(granted.node()).to_owned()]
    );
    drop(granted);
    assert_drained(&path).await;
}

/// CURATOR-335/315: a connection lost right after the create (applied, its
/// answer lost) must not orphan the node (it would take a permit for the
/// session's life). The waiter finds its node by its token and waits with
/// it; nothing of it is left once it releases.
#[tokio::test]
async fn a_cut_after_the_create_leaves_no_orphan_node_holding_a_permit() {
    let direct = server().connect_string();
    let path = unique_path("sem-cut-create");
    let holders = semaphore(&path, 1).await;
    let held = holders.acquire().await.unwrap();
    let proxy = Proxy::start(&direct);
    let waiter = Semaphore::new(client_on(proxy.addr()).await, &path, 1).unwrap();
    let session = waiter.client().session_id().0;
    proxy.cut_after_request(&[op::CREATE, op::CREATE2]);
    let task = spawn_acquire(&waiter);
    wait_watching(server(), held.node(), session).await;
    assert_eq!(proxy.fired(), 1, "the create's answer was cut");
    let c = client().await;
    assert_eq!(support::children(&c, &path).await.len(), 2);
    held.release().await.unwrap();
    let permit = joined(WITHIN, task).await;
    drop(permit);
    assert_drained(&path).await;
}

/// kazoo#213 (a non-blocking acquire taking a lease outside the lock) and
/// CURATOR-462 (an interrupted acquire orphaning its node): racing
/// `try_acquire`s and short timed acquires never hold more than N at once
/// by the holders' own count, and an acquire cancelled while it waits
/// leaves no node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_try_and_timed_acquires_never_exceed_the_permits() {
    const PERMITS: usize = 2;
    let path = unique_path("sem-try-race");
    let holding = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let granted = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..6 {
        let sem = semaphore(&path, PERMITS as u32).await;
        let (holding, most, granted) = (holding.clone(), most.clone(), granted.clone());
        tasks.push(tokio::spawn(async move {
            for round in 0..12 {
                let permit = if (i + round) % 3 == 0 {
                    sem.acquire_timeout(Duration::from_millis(30)).await.unwrap()
                } else {
                    sem.try_acquire().await.unwrap()
                };
                if let Some(permit) = permit {
                    granted.fetch_add(1, Ordering::SeqCst);
                    let now = holding.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    holding.fetch_sub(1, Ordering::SeqCst);
                    permit.release().await.unwrap();
                }
            }
        }));
    }
    for task in tasks {
        joined(Duration::from_secs(120), task).await;
    }
    let most = most.load(Ordering::SeqCst);
    assert!(most <= PERMITS, "{most} held at once with {PERMITS} permits");
    assert!(granted.load(Ordering::SeqCst) > 0);
    assert_drained(&path).await;
    // A cancelled acquire, while it waits, withdraws its node.
    let sem = semaphore(&path, PERMITS as u32).await;
    let a = sem.acquire().await.unwrap();
    let b = sem.acquire().await.unwrap();
    let waiter = semaphore(&path, PERMITS as u32).await;
    let session = waiter.client().session_id().0;
    let task = spawn_acquire(&waiter);
    wait_watching(server(), b.node(), session).await;
    task.abort();
    let c = client().await;
    let mut both = vec![child_name(a.node()).to_owned(), child_name(b.node()).to_owned()];
    both.sort();
    eventually("the cancelled acquire's node is withdrawn", WITHIN, || async {
        let mut now = support::children(&c, &path).await;
        now.sort();
        now == both
    })
    .await;
    drop((a, b));
    assert_drained(&path).await;
}

/// Stray writes on watched holders (a revocation request is one) fire the
/// waiter's watches with a data change: the `exists` watch on the farther
/// and the `getData` watch on the nearer. Neither grants: the waiter lists
/// again and watches both again.
#[tokio::test]
async fn stray_writes_on_watched_holders_grant_nothing() {
    let path = unique_path("sem-stray");
    let holders = semaphore(&path, 2).await;
    let farther = holders.acquire().await.unwrap();
    let nearer = holders.acquire().await.unwrap();
    let waiter = semaphore(&path, 2).await;
    let session = waiter.client().session_id().0;
    let task = spawn_acquire(&waiter);
    wait_watching(server(), farther.node(), session).await;
    wait_watching(server(), nearer.node(), session).await;
    let stranger = client().await;
    for node in [farther.node(), nearer.node()] {
        stranger.set_data(node, b"stray", None).await.unwrap();
        wait_watching(server(), node, session).await;
    }
    wait_watching(server(), farther.node(), session).await;
    assert!(!task.is_finished(), "a data change grants nothing");
    nearer.release().await.unwrap();
    let permit = joined(WITHIN, task).await;
    drop((farther, permit));
    assert_drained(&path).await;
}

/// An `exists` on a predecessor already gone leaves an `exists` watch (for
/// its creation) on the server. The holder farther of two is released as
/// the waiter sets its watches, many times over; whichever way each round
/// goes (its listing saw the node or not, its `exists` found it or not),
/// no watch of the waiter's session is left on any path of the directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_watch_is_left_on_predecessors_gone_when_watched() {
    let path = unique_path("sem-gone-watch");
    let holders = semaphore(&path, 2).await;
    let waiter = semaphore(&path, 2).await;
    for round in 0..60 {
        let farther = holders.acquire().await.unwrap();
        let nearer = holders.acquire().await.unwrap();
        let task = spawn_acquire(&waiter);
        for _ in 0..(round % 15) {
            tokio::task::yield_now().await;
        }
        farther.release().await.unwrap();
        let permit = joined(WITHIN, task).await;
        permit.release().await.unwrap();
        nearer.release().await.unwrap();
    }
    assert_drained(&path).await;
    let prefix = format!("{path}/");
    eventually(
        "no watch is left on the directory's children",
        Duration::from_secs(10),
        || async {
            let wchp = server().four_letter(0, "wchp").unwrap();
            !wchp.lines().any(|line| line.starts_with(&prefix))
        },
    )
    .await;
}
