//! Hand-offs across reconnections: after a reconnect the client registers
//! its watches again in no particular order, and a connection may be cut
//! after any request. A waiter whose own node went while it was cut off
//! fails with `Lost`, and a storm of cuts during hand-offs never lets two
//! holders overlap.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::proxy::Proxy;
use support::{client, eventually, joined, server, unique_path};
use zk_rwlock::{zk, ContenderState, Error, Mode, SharedLock};

const SHORT: Duration = Duration::from_secs(10);

/// After a reconnect the client re-registers its watches in no particular
/// order, so "our node is gone" may arrive after "the node we watched is
/// gone". A waiter whose node was deleted while it was cut off must fail
/// with `Lost`, never be granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_off_after_a_reconnect_checks_its_own_node() {
    let direct = server().connect_string();
    for round in 0..3 {
        let path = unique_path("reorder");
        let proxy = Proxy::start(&direct);
        let holder_lock = support::lock(&path).await;
        let holder = holder_lock.write().await.unwrap();
        let waiter_client = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(8))
            .connect(proxy.addr())
            .await
            .unwrap();
        let waiter_session = waiter_client.session_id().0;
        let waiter_lock = SharedLock::new(waiter_client, &path).unwrap();
        let waiter = tokio::spawn(async move { waiter_lock.write().await.map(|g| g.node().to_owned()) });
        let node = holder.node().to_owned();
        eventually("the waiter watches the holder", SHORT, || async {
            support::watches(server(), &node, waiter_session)
        })
        .await;
        let queue = holder_lock.contenders().await.unwrap();
        assert_eq!(queue[1].state, ContenderState::WaitsOn(queue[0].name.to_string()));
        // Cut the waiter off; while it is away, its node is deleted by
        // someone else and the holder releases.
        proxy.set_blocked(true);
        proxy.cut_all();
        let stranger = client().await;
        stranger.delete(&queue[1].path, None).await.unwrap();
        holder.release().await.unwrap();
        // On reconnection the server reports both deletions; the waiter
        // gets the one of its own node last, as it may after any reconnect.
        proxy.delay_events_for(&queue[1].name.to_string(), Duration::from_millis(300));
        proxy.set_blocked(false);
        match joined(SHORT * 2, waiter).await {
            Err(Error::Lost { .. }) => {}
            other => panic!("round {round}: a waiter whose node was deleted got {other:?}"),
        }
    }
}

/// Exclusion holds through reconnect storms during hand-offs. Six contenders (3 writers,
/// 3 readers) on sessions through one proxy, which cuts every connection
/// every 150 ms and arms a cut right after a random request type (create,
/// getData, getChildren, multi, delete). An in-process checker counts
/// holders; no session expires in this test, so any overlap is a bug.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_storm_during_hand_offs_keeps_exclusion() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use support::proxy::op;
    let path = unique_path("storm");
    let proxy = Arc::new(Proxy::start(&server().connect_string()));
    let state = Arc::new(Mutex::new((0usize, 0usize, 0usize))); // readers, writers, violations
    let stop = Arc::new(AtomicBool::new(false));
    let grants = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut workers = Vec::new();
    for i in 0..6 {
        let mode = if i % 2 == 0 { Mode::Write } else { Mode::Read };
        let (state, stop, grants, errors, proxy, path) = (
            state.clone(),
            stop.clone(),
            grants.clone(),
            errors.clone(),
            proxy.clone(),
            path.clone(),
        );
        workers.push(tokio::spawn(async move {
            let client = zk::Client::connector()
                .with_session_timeout(Duration::from_secs(8))
                .connect(proxy.addr())
                .await
                .unwrap();
            let lock = SharedLock::new(client, &path).unwrap();
            while !stop.load(Ordering::SeqCst) {
                let guard = match lock.acquire_timeout(mode, Duration::from_secs(3)).await {
                    Ok(Some(g)) => g,
                    Ok(None) => continue,
                    Err(e) => {
                        errors.lock().unwrap().push(format!("acquire {mode}: {e}"));
                        if e.is_session_over() {
                            return;
                        }
                        continue;
                    }
                };
                {
                    let mut s = state.lock().unwrap();
                    let bad = match mode {
                        Mode::Write => s.0 > 0 || s.1 > 0,
                        Mode::Read => s.1 > 0,
                    };
                    if bad {
                        s.2 += 1;
                        errors
                            .lock()
                            .unwrap()
                            .push(format!("overlap: {mode} {} granted with {s:?}", guard.node()));
                    }
                    match mode {
                        Mode::Write => s.1 += 1,
                        Mode::Read => s.0 += 1,
                    }
                }
                grants.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(2 + (i as u64) * 2)).await;
                {
                    let mut s = state.lock().unwrap();
                    match mode {
                        Mode::Write => s.1 -= 1,
                        Mode::Read => s.0 -= 1,
                    }
                }
                if let Err(e) = guard.release().await {
                    errors.lock().unwrap().push(format!("release {mode}: {e}"));
                }
            }
        }));
    }
    let ops = [
        op::CREATE2,
        op::CREATE,
        op::GET_DATA,
        op::GET_CHILDREN,
        op::MULTI,
        op::DELETE,
    ];
    let started = std::time::Instant::now();
    let mut k = 0;
    while started.elapsed() < Duration::from_secs(8) {
        tokio::time::sleep(Duration::from_millis(150)).await;
        if k % 2 == 0 {
            proxy.cut_all();
        } else {
            proxy.cut_after_request(&[ops[k % ops.len()]]);
        }
        k += 1;
    }
    proxy.cut_after_request(&[]);
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        joined(Duration::from_secs(30), w).await;
    }
    let s = *state.lock().unwrap();
    let errors = errors.lock().unwrap().clone();
    eprintln!(
        "storm: grants={} cuts fired={} errors={:?}",
        grants.load(Ordering::SeqCst),
        proxy.fired(),
        errors
    );
    assert_eq!(s.2, 0, "overlaps: {errors:?}");
    assert!(grants.load(Ordering::SeqCst) > 0);
    support::assert_drained(&path).await;
}
