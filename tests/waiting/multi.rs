//! The all-or-nothing multi-lock against a real ZooKeeper server: no
//! deadlock and no overlap between multi-locks naming the same paths in
//! opposite orders, nothing left behind by a timeout, a cancellation or a
//! failure partway, loss of one part, fencing tokens per part, mixed modes,
//! and the blocking API.

use zk_rwlock_fixtures as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::{
    assert_drained, children, client, joined, lock, received_on, server, settles_to, unique_path,
    wait_contenders,
};
use zk_rwlock::{zk, Error, HoldState, Mode, MultiLock};

const SHORT: Duration = Duration::from_secs(10);

/// The name of a contender node (its last segment).
fn name(node: &str) -> String {
    node.rsplit('/').next().unwrap_or(node).to_owned()
}

#[tokio::test]
async fn parts_are_sorted_and_checked() {
    let c = client().await;
    let multi = MultiLock::new(c.clone(), &[("/m/b", Mode::Read), ("/m/a", Mode::Write)]).unwrap();
    let parts: Vec<(&str, Mode)> = multi.parts().map(|(l, m)| (l.path(), m)).collect();
    assert_eq!(parts, [("/m/a", Mode::Write), ("/m/b", Mode::Read)]);
    match MultiLock::new(
        c.clone(),
        &[("/m/a", Mode::Read), ("/m/b", Mode::Read), ("/m/a", Mode::Write)],
    ) {
        Err(Error::InvalidPath { path, reason }) => {
            assert_eq!(path, "/m/a");
            assert!(reason.contains("more than once"), "{reason}");
        }
        other => panic!("expected InvalidPath for a duplicate, got {other:?}"),
    }
    assert!(matches!(
        MultiLock::new(c.clone(), &[]),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        MultiLock::new(c, &[("/m/a", Mode::Read), ("m/b", Mode::Read)]),
        Err(Error::InvalidPath { path, .. }) if path == "m/b"
    ));
}

/// Two multi-locks on their own sessions, over the same two paths named
/// in opposite orders, each acquiring and releasing `ROUNDS` times at
/// once: every acquire finishes within a deadline (no deadlock), and their
/// holds never overlap (each is write on both paths).
#[tokio::test]
async fn opposite_orders_never_deadlock_nor_overlap() {
    const ROUNDS: usize = 50;
    let (a, b) = (unique_path("race-a"), unique_path("race-b"));
    let inside = Arc::new(AtomicUsize::new(0));
    let holds = Arc::new(Mutex::new(Vec::new()));
    let started = std::time::Instant::now();
    let mut tasks = Vec::new();
    for (who, order) in [(0, [&a, &b]), (1, [&b, &a])] {
        let multi = MultiLock::new(
            client().await,
            &[(order[0].as_str(), Mode::Write), (order[1].as_str(), Mode::Write)],
        )
        .unwrap();
        let (inside, holds, a) = (inside.clone(), holds.clone(), a.clone());
        tasks.push(tokio::spawn(async move {
            for round in 0..ROUNDS {
                let guard = tokio::time::timeout(SHORT, multi.acquire())
                    .await
                    .unwrap_or_else(|_| {
                        panic!("task {who}, round {round}: no grant within {SHORT:?}: deadlock")
                    })
                    .unwrap();
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                let from = std::time::Instant::now();
                // A round trip to the server while holding: real time in the lock.
                let c = multi.parts().next().unwrap().0.client().clone();
                c.check_stat(&a).await.unwrap();
                let token = guard.fencing_token(&a).unwrap();
                inside.fetch_sub(1, Ordering::SeqCst);
                holds
                    .lock()
                    .unwrap()
                    .push((from, std::time::Instant::now(), token));
                guard.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        joined(Duration::from_secs(120), t).await;
    }
    let mut holds = holds.lock().unwrap().clone();
    assert_eq!(holds.len(), 2 * ROUNDS);
    // Interval check: sorted by start, each ends before the next starts,
    // and the fencing tokens of `a` grow in that order.
    holds.sort_by_key(|h| h.0);
    for w in holds.windows(2) {
        assert!(w[0].1 <= w[1].0, "holds overlap: {:?} and {:?}", w[0], w[1]);
        assert!(
            w[0].2 < w[1].2,
            "fencing tokens do not grow: {} then {}",
            w[0].2,
            w[1].2
        );
    }
    eprintln!(
        "{} grants over two paths in opposite orders in {:?}",
        2 * ROUNDS,
        started.elapsed()
    );
    assert_drained(&a).await;
    assert_drained(&b).await;
}

#[tokio::test]
async fn timeout_partway_leaves_nothing_behind() {
    let base = unique_path("timeout");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let holder = lock(&b).await.write().await.unwrap();
    let multi = MultiLock::new(
        client().await,
        &[(b.as_str(), Mode::Write), (a.as_str(), Mode::Write)],
    )
    .unwrap();
    // `a` is taken first (sorted), then `b` times out.
    assert!(multi
        .acquire_timeout(Duration::from_millis(300))
        .await
        .unwrap()
        .is_none());
    assert!(multi.try_acquire().await.unwrap().is_none());
    let c = client().await;
    settles_to(&c, &a, &[]).await;
    settles_to(&c, &b, &[name(holder.node())]).await;
    holder.release().await.unwrap();
    let guard = multi.try_acquire().await.unwrap().expect("free now");
    guard.release().await.unwrap();
    assert_drained(&a).await;
    assert_drained(&b).await;
}

#[tokio::test]
async fn cancelled_acquire_leaves_nothing_behind() {
    let base = unique_path("cancel");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let holder_lock = lock(&b).await;
    let holder = holder_lock.write().await.unwrap();
    let multi = MultiLock::new(
        client().await,
        &[(a.as_str(), Mode::Write), (b.as_str(), Mode::Read)],
    )
    .unwrap();
    let waiting = tokio::spawn(async move { multi.acquire().await.map(|g| g.parts().len()) });
    // The multi-lock holds `a` and waits on `b`.
    wait_contenders(&holder_lock, 2).await;
    assert_eq!(children(&holder_lock.client().clone(), &a).await.len(), 1);
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    let c = client().await;
    settles_to(&c, &a, &[]).await;
    settles_to(&c, &b, &[name(holder.node())]).await;
    holder.release().await.unwrap();
    assert_drained(&b).await;
}

/// A part whose lock directory is an ephemeral node fails (a real server
/// refusal, `NoChildrenForEphemerals`) after the part sorted before it was
/// taken: that one is released.
#[tokio::test]
async fn failure_partway_leaves_nothing_behind() {
    let c = client().await;
    let base = unique_path("fail");
    support::mkdir_open(&c, &base).await;
    let eph = format!("{base}/z");
    c.create(
        &eph,
        &[],
        &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
    )
    .await
    .unwrap();
    let (a, bad) = (format!("{base}/a"), format!("{eph}/lock"));
    let multi = MultiLock::new(
        c.clone(),
        &[(bad.as_str(), Mode::Write), (a.as_str(), Mode::Write)],
    )
    .unwrap();
    match multi.acquire().await {
        Err(Error::EphemeralDirectory { .. }) => {}
        other => panic!("expected EphemeralDirectory, got {other:?}"),
    }
    settles_to(&c, &a, &[]).await;
    assert!(children(&c, &eph).await.is_empty());
    // `a` is free again.
    lock(&a)
        .await
        .try_write()
        .await
        .unwrap()
        .expect("a is free")
        .release()
        .await
        .unwrap();
    assert_drained(&a).await;
}

#[tokio::test]
async fn lost_when_one_part_is_deleted() {
    let base = unique_path("lost");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let multi = MultiLock::new(
        client().await,
        &[(a.as_str(), Mode::Write), (b.as_str(), Mode::Read)],
    )
    .unwrap();
    let guard = multi.acquire().await.unwrap();
    assert_eq!(guard.state(), HoldState::Held);
    assert!(guard.is_held());
    let deadlines: Vec<_> = guard.parts().iter().map(|g| g.lease_deadline()).collect();
    assert_eq!(Some(guard.lease_deadline()), deadlines.iter().min().copied());
    let node = guard.part(&b).unwrap().node().to_owned();
    let other = client().await;
    let deleter = tokio::spawn(async move { other.delete(&node, None).await.unwrap() });
    tokio::time::timeout(SHORT, guard.lost())
        .await
        .expect("lost() completes when one part is lost");
    deleter.await.unwrap();
    assert_eq!(guard.state(), HoldState::Lost);
    assert_eq!(guard.part(&a).unwrap().state(), HoldState::Held);
    assert_eq!(
        tokio::time::timeout(SHORT, guard.suspended()).await.unwrap(),
        HoldState::Lost
    );
    // Releasing releases the part still held, and says the deleted one was lost.
    let deleted = guard.part(&b).unwrap().node().to_owned();
    assert!(matches!(guard.release().await, Err(Error::Lost { node }) if node == deleted));
    assert_drained(&a).await;
    assert_drained(&b).await;
}

#[tokio::test]
async fn fencing_tokens_per_path_and_mixed_modes() {
    let (accounts, rates) = (unique_path("accounts"), unique_path("rates"));
    let multi = MultiLock::new(
        client().await,
        &[(rates.as_str(), Mode::Read), (accounts.as_str(), Mode::Write)],
    )
    .unwrap();
    let guard = multi.acquire().await.unwrap();
    // A plain reader shares `rates`; no one else gets `accounts`, nor writes `rates`.
    let (rates_lock, accounts_lock) = (lock(&rates).await, lock(&accounts).await);
    let reader = rates_lock
        .try_read()
        .await
        .unwrap()
        .expect("a reader shares rates");
    assert!(rates_lock.try_write().await.unwrap().is_none());
    assert!(accounts_lock.try_read().await.unwrap().is_none());
    // Each part's token is the czxid of its own node.
    for (path, mode) in [(&accounts, Mode::Write), (&rates, Mode::Read)] {
        let part = guard.part(path).unwrap();
        assert_eq!(part.mode(), mode);
        let contenders = lock(path).await.contenders().await.unwrap();
        let mine = contenders.iter().find(|c| c.path == part.node()).unwrap();
        assert_eq!(guard.fencing_token(path), mine.fencing_token);
    }
    assert_ne!(guard.fencing_token(&accounts), guard.fencing_token(&rates));
    assert_eq!(guard.fencing_token("/nowhere"), None);
    reader.release().await.unwrap();
    drop(guard); // released in the background
    assert_drained(&accounts).await;
    assert_drained(&rates).await;
}

#[tokio::test]
async fn blocking_multi_lock() {
    let base = unique_path("blocking");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let connect = server().connect_string();
    let (a2, b2) = (a.clone(), b.clone());
    tokio::task::spawn_blocking(move || {
        let parts = [(b2.as_str(), Mode::Read), (a2.as_str(), Mode::Write)];
        // A path given twice is refused before connecting.
        let twice = [(a2.as_str(), Mode::Read), (a2.as_str(), Mode::Write)];
        assert!(matches!(
            zk_rwlock::blocking::MultiLock::connect("127.0.0.1:1", &twice),
            Err(Error::InvalidPath { .. })
        ));
        let one = zk_rwlock::blocking::MultiLock::connect(&connect, &parts).unwrap();
        let two = zk_rwlock::blocking::MultiLock::connect(&connect, &parts).unwrap();
        let guard = one.acquire().unwrap();
        assert_eq!(guard.state(), HoldState::Held);
        assert!(guard.fencing_token(&a2).is_some() && guard.fencing_token(&b2).is_some());
        assert_eq!(guard.parts().len(), 2);
        assert!(two.try_acquire().unwrap().is_none());
        assert!(two.acquire_timeout(Duration::from_millis(200)).unwrap().is_none());
        assert_eq!(
            guard.wait_suspended(Duration::from_millis(50)).unwrap(),
            HoldState::Held
        );
        assert_eq!(
            guard.wait_resumed(Duration::from_millis(50)).unwrap(),
            HoldState::Held
        );
        guard.release().unwrap();
        let again = two.try_acquire().unwrap().expect("free after release");
        drop(again); // released on drop
    })
    .await
    .unwrap();
    assert_drained(&a).await;
    assert_drained(&b).await;
}

/// Parts on two sessions (`from_locks`): the one behind a partition is
/// suspended, so the multi-guard is, with that part's lease deadline; when
/// the partition heals it is held again.
#[tokio::test]
async fn suspended_and_resumed_with_the_worst_part() {
    let base = unique_path("suspend");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let proxy = support::proxy::Proxy::start(&server().connect_string());
    let behind = zk_rwlock::SharedLock::new(support::client_on(proxy.addr()).await, &b).unwrap();
    let direct = lock(&a).await;
    let multi = MultiLock::from_locks([(behind, Mode::Write), (direct, Mode::Read)]).unwrap();
    let guard = multi.acquire().await.unwrap();
    assert!(tokio::time::timeout(Duration::from_millis(50), guard.suspended())
        .await
        .is_err());
    proxy.freeze();
    let frozen_at = guard.part(&b).unwrap().lease_deadline();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(30), guard.suspended())
            .await
            .unwrap(),
        HoldState::Suspended
    );
    assert_eq!(guard.state(), HoldState::Suspended);
    assert_eq!(guard.part(&a).unwrap().state(), HoldState::Held);
    assert_eq!(
        guard.lease_deadline(),
        frozen_at,
        "the earliest: the frozen part's"
    );
    proxy.thaw();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(30), guard.resumed())
            .await
            .unwrap(),
        HoldState::Held
    );
    assert_eq!(guard.state(), HoldState::Held);
    guard.release().await.unwrap();
    assert_drained(&a).await;
    assert_drained(&b).await;
}

/// A part taken is deleted by someone else while the multi-lock waits for
/// the next one: the acquire fails with `Lost` naming it, at once (not when
/// the next part is granted), and leaves nothing behind.
#[tokio::test]
async fn a_part_lost_while_waiting_fails_the_acquire() {
    let base = unique_path("lost-waiting");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let holder_lock = lock(&b).await;
    let holder = holder_lock.write().await.unwrap();
    let multi = MultiLock::new(
        client().await,
        &[(b.as_str(), Mode::Write), (a.as_str(), Mode::Write)],
    )
    .unwrap();
    let waiting = tokio::spawn(async move { multi.acquire().await.map(|g| g.parts().len()) });
    wait_contenders(&holder_lock, 2).await;
    let c = client().await;
    let taken = children(&c, &a).await;
    assert_eq!(taken.len(), 1, "the multi-lock holds a: {taken:?}");
    let node = format!("{a}/{}", taken[0]);
    c.delete(&node, None).await.unwrap();
    match joined(SHORT, waiting).await {
        Err(Error::Lost { node: lost }) => assert_eq!(lost, node),
        other => panic!("expected Lost, got {other:?}"),
    }
    settles_to(&c, &b, &[name(holder.node())]).await;
    settles_to(&c, &a, &[]).await;
    holder.release().await.unwrap();
    assert_drained(&b).await;
}

/// Per path: how many readers and writers hold it now.
#[derive(Default)]
struct Occupancy {
    readers: usize,
    writers: usize,
}

/// Four multi-locks on their own sessions over three paths, each naming
/// them in another order and with other modes, plus a plain writer on one
/// path, acquire and release at once, `ROUNDS` times each: every acquire
/// finishes within a deadline, and no path is ever written while anyone
/// else holds it.
#[tokio::test]
async fn mixed_modes_in_many_orders_never_deadlock_nor_conflict() {
    const ROUNDS: usize = 25;
    let paths: Vec<String> = (0..3).map(|i| unique_path(&format!("mixed{i}"))).collect();
    let (r, w) = (Mode::Read, Mode::Write);
    // (path index, mode) in the caller's order.
    let specs: [&[(usize, Mode)]; 4] = [
        &[(0, w), (1, r), (2, w)],
        &[(2, r), (1, w), (0, r)],
        &[(1, r), (2, w), (0, w)],
        &[(2, r), (0, r), (1, r)],
    ];
    let table = Arc::new(Mutex::new(
        (0..paths.len()).map(|_| Occupancy::default()).collect::<Vec<_>>(),
    ));
    let enter = |table: &Mutex<Vec<Occupancy>>, parts: &[(usize, Mode)]| {
        let mut t = table.lock().unwrap();
        for &(i, mode) in parts {
            let o = &mut t[i];
            match mode {
                Mode::Read => {
                    assert_eq!(o.writers, 0, "path {i} read while written");
                    o.readers += 1;
                }
                Mode::Write => {
                    assert_eq!((o.readers, o.writers), (0, 0), "path {i} written while held");
                    o.writers += 1;
                }
            }
        }
    };
    let leave = |table: &Mutex<Vec<Occupancy>>, parts: &[(usize, Mode)]| {
        let mut t = table.lock().unwrap();
        for &(i, mode) in parts {
            match mode {
                Mode::Read => t[i].readers -= 1,
                Mode::Write => t[i].writers -= 1,
            }
        }
    };
    let started = std::time::Instant::now();
    let mut tasks = Vec::new();
    let plain: &[(usize, Mode)] = &[(1, w)];
    for (who, spec) in specs.iter().copied().chain([plain]).enumerate() {
        let parts: Vec<(usize, Mode)> = spec.to_vec();
        let named: Vec<(&str, Mode)> = parts.iter().map(|&(i, m)| (paths[i].as_str(), m)).collect();
        let multi = MultiLock::new(client().await, &named).unwrap();
        let table = table.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..ROUNDS {
                let guard = tokio::time::timeout(SHORT, multi.acquire())
                    .await
                    .unwrap_or_else(|_| {
                        panic!("task {who}, round {round}: no grant within {SHORT:?}: deadlock")
                    })
                    .unwrap();
                enter(&table, &parts);
                // A round trip to the server while holding.
                let (first, _) = multi.parts().next().unwrap();
                first.client().check_stat(first.path()).await.unwrap();
                leave(&table, &parts);
                guard.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        joined(Duration::from_secs(120), t).await;
    }
    eprintln!(
        "{} grants of 5 contenders over 3 paths in mixed orders and modes in {:?}",
        5 * ROUNDS,
        started.elapsed()
    );
    for p in &paths {
        assert_drained(p).await;
    }
}

/// Multi-lock acquires dropped at many different points (creating the
/// first part's node, holding it, waiting on the second) leave nothing
/// behind on either path.
#[tokio::test]
async fn acquires_cancelled_at_many_points_leave_nothing_behind() {
    let base = unique_path("cancel-many");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let holder_lock = lock(&b).await;
    let holder = holder_lock.write().await.unwrap();
    let shared = MultiLock::new(
        client().await,
        &[(a.as_str(), Mode::Write), (b.as_str(), Mode::Read)],
    )
    .unwrap();
    let mut tasks = Vec::new();
    for i in 0..30u64 {
        let multi = if i % 2 == 0 {
            shared.clone()
        } else {
            MultiLock::new(
                client().await,
                &[(b.as_str(), Mode::Write), (a.as_str(), Mode::Read)],
            )
            .unwrap()
        };
        tasks.push(tokio::spawn(async move {
            let wait = Duration::from_micros(i * 1500);
            match tokio::time::timeout(wait, multi.acquire()).await {
                Err(_elapsed) => None,
                Ok(outcome) => Some(format!("after {wait:?}: {:?}", outcome.map(|g| g.parts().len()))),
            }
        }));
    }
    for t in tasks {
        if let Some(outcome) = joined(SHORT, t).await {
            panic!("a multi-lock acquire ended before its deadline while b is written: {outcome}");
        }
    }
    let c = client().await;
    settles_to(&c, &a, &[]).await;
    settles_to(&c, &b, &[name(holder.node())]).await;
    holder.release().await.unwrap();
    assert_drained(&b).await;
}

/// A give-up (`try_acquire`, `acquire_timeout`) releases the parts it took
/// before it returns, as a single lock's give-up deletes its node: right
/// after `Ok(None)` the node of the part taken is gone (seen by the same
/// session), and another session's `try_write` on that path succeeds.
#[tokio::test]
async fn give_up_releases_the_parts_taken_before_it_returns() {
    let base = unique_path("giveup-released");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let holder = lock(&b).await.write().await.unwrap();
    let c = client().await;
    let multi = MultiLock::new(c.clone(), &[(a.as_str(), Mode::Write), (b.as_str(), Mode::Write)]).unwrap();
    let other = lock(&a).await;
    for round in 0..5 {
        let out = if round % 2 == 0 {
            multi.try_acquire().await.unwrap()
        } else {
            multi.acquire_timeout(Duration::from_millis(100)).await.unwrap()
        };
        assert!(out.is_none());
        // Same session: requests are answered in order.
        assert_eq!(children(&c, &a).await, Vec::<String>::new(), "round {round}");
        let g = other
            .try_write()
            .await
            .unwrap()
            .expect("`a` free after the give-up");
        g.release().await.unwrap();
        settles_to(&c, &a, &[]).await;
    }
    holder.release().await.unwrap();
    assert_drained(&a).await;
    assert_drained(&b).await;
}

/// Parts through chrooted clients are ordered by their absolute path: a
/// multi-lock over two directories named through two chroots and one
/// naming them without chroot take them in the same order and both finish.
/// Two different directories both `/a` under two chroots are two parts;
/// one directory named through a chroot and without one is a duplicate.
#[tokio::test]
async fn chrooted_parts_sort_by_their_absolute_path() {
    let base = unique_path("chroot-order");
    let c = client().await;
    for p in [base.clone(), format!("{base}/p"), format!("{base}/q")] {
        c.create(
            &p,
            b"",
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    }
    let conn = server().connect_string();
    let in_p = support::client_on(&format!("{conn}{base}/p")).await;
    let in_q = support::client_on(&format!("{conn}{base}/q")).await;
    // Real directories: {base}/p/z and {base}/q/a; relative to their
    // chroots they sort the other way round.
    let (pz, qa) = (format!("{base}/p/z"), format!("{base}/q/a"));
    let x = MultiLock::from_locks([
        (
            zk_rwlock::SharedLock::new(in_p.clone(), "/z").unwrap(),
            Mode::Write,
        ),
        (
            zk_rwlock::SharedLock::new(in_q.clone(), "/a").unwrap(),
            Mode::Write,
        ),
    ])
    .unwrap();
    let order: Vec<&str> = x.parts().map(|(l, _)| l.path()).collect();
    assert_eq!(order, ["/z", "/a"]);
    let y = MultiLock::new(
        client().await,
        &[(pz.as_str(), Mode::Write), (qa.as_str(), Mode::Write)],
    )
    .unwrap();
    let h_qa = lock(&qa).await;
    let h_pz = lock(&pz).await;
    let g_qa = h_qa.write().await.unwrap();
    let g_pz = h_pz.write().await.unwrap();
    let tx = tokio::spawn(async move {
        let g = x.acquire().await?;
        assert!(g.fencing_token("/z").is_some() && g.fencing_token("/a").is_some());
        g.release().await
    });
    let ty = tokio::spawn(async move { y.acquire().await?.release().await });
    // Both queue on the first directory in absolute order, {base}/p/z.
    wait_contenders(&h_pz, 3).await;
    g_qa.release().await.unwrap();
    g_pz.release().await.unwrap();
    let both = tokio::time::timeout(SHORT, async { (tx.await, ty.await) }).await;
    let (rx, ry) = both.expect("deadlock: neither multi-lock finished");
    rx.unwrap().unwrap();
    ry.unwrap().unwrap();
    // Same relative path, different directories: two parts.
    let two = MultiLock::from_locks([
        (
            zk_rwlock::SharedLock::new(in_p.clone(), "/a").unwrap(),
            Mode::Write,
        ),
        (
            zk_rwlock::SharedLock::new(in_q.clone(), "/a").unwrap(),
            Mode::Write,
        ),
    ])
    .unwrap();
    assert_eq!(two.parts().count(), 2);
    // One directory named twice, through a chroot and without one.
    let dup = MultiLock::from_locks([
        (
            zk_rwlock::SharedLock::new(in_q.clone(), "/a").unwrap(),
            Mode::Write,
        ),
        (zk_rwlock::SharedLock::new(c.clone(), &qa).unwrap(), Mode::Read),
    ]);
    assert!(matches!(dup, Err(Error::InvalidPath { .. })), "{dup:?}");
    assert_drained(&pz).await;
    assert_drained(&qa).await;
}

/// `acquire_timeout(Duration::MAX)` is no limit, not a panic.
#[tokio::test]
async fn acquire_timeout_max_waits_without_a_deadline() {
    let base = unique_path("timeout-max");
    let a = format!("{base}/a");
    let multi = MultiLock::new(client().await, &[(a.as_str(), Mode::Write)]).unwrap();
    let out = tokio::spawn(async move {
        let g = multi.acquire_timeout(Duration::MAX).await?.expect("free");
        g.release().await
    })
    .await;
    out.expect("no panic").unwrap();
    assert_drained(&a).await;
}

/// The requests of an uncontended acquire grow linearly with the number of
/// parts: each part taken is watched once for the whole acquire, not once
/// per later part (which cost N(N-1)/2 extra reads).
#[tokio::test]
async fn acquire_requests_grow_linearly_with_the_parts() {
    const N: usize = 10;
    let base = unique_path("requests");
    let paths: Vec<String> = (0..N).map(|i| format!("{base}/p{i:02}")).collect();
    let c = client().await;
    let locks: Vec<_> = paths
        .iter()
        .map(|p| zk_rwlock::SharedLock::new(c.clone(), p).unwrap())
        .collect();
    for l in &locks {
        l.write().await.unwrap().release().await.unwrap();
    }
    let parts: Vec<(&str, Mode)> = paths.iter().map(|p| (p.as_str(), Mode::Write)).collect();
    let multi = MultiLock::new(c.clone(), &parts).unwrap();
    // The requests the server received on this one session (`cons`), so
    // that other tests running at once do not count; the least of a few
    // rounds, so that a ping does not either.
    let sid = c.session_id().0;
    let (mut singles, mut multis) = (i64::MAX, i64::MAX);
    for _ in 0..3 {
        let before = received_on(sid);
        let mut gs = Vec::new();
        for l in &locks {
            gs.push(l.write().await.unwrap());
        }
        singles = singles.min(received_on(sid) - before);
        for g in gs {
            g.release().await.unwrap();
        }
        let before = received_on(sid);
        let g = multi.acquire().await.unwrap();
        multis = multis.min(received_on(sid) - before);
        g.release().await.unwrap();
    }
    assert!(
        multis - singles < 2 * N as i64,
        "{N} parts: {singles} requests for single acquires, {multis} for one multi acquire"
    );
}

/// A revocation request on any part reaches the multi-guard; once every
/// part is lost without one, the answer is false.
#[tokio::test]
async fn a_revocation_request_on_any_part() {
    let base = unique_path("revoke");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let parts = [(a.as_str(), Mode::Write), (b.as_str(), Mode::Read)];
    let multi = MultiLock::new(client().await, &parts).unwrap();
    let guard = multi.acquire().await.unwrap();
    let node = guard.part(&b).unwrap().node().to_owned();
    let revoker = lock(&b).await;
    let asking = tokio::spawn(async move { revoker.revoke(&node).await.unwrap() });
    let asked = tokio::time::timeout(SHORT, guard.revocation_requested())
        .await
        .expect("a request on one part is seen");
    assert!(asked);
    assert!(asking.await.unwrap());
    guard.release().await.unwrap();

    let guard = multi.acquire().await.unwrap();
    let other = client().await;
    for part in guard.parts() {
        other.delete(part.node(), None).await.unwrap();
    }
    let asked = tokio::time::timeout(SHORT, guard.revocation_requested())
        .await
        .expect("every part lost: no request");
    assert!(!asked);
    // Both nodes were deleted by someone else: the release says so.
    let first = guard.parts()[0].node().to_owned();
    assert!(matches!(guard.release().await, Err(Error::Lost { node }) if node == first));
    assert_drained(&a).await;
    assert_drained(&b).await;
}
