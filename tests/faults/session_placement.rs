//! Where a session the library connects runs, against a real server: on
//! the caller's multi-thread runtime (no hop to another thread per
//! request), from which it moves to the library's background thread when
//! that runtime ends. The move keeps the session, its connection, its
//! watches and its guards: a guard that outlives its runtime is still held,
//! still told of a stranger's deletion, and still released. A runtime that
//! ends with guards held in its tasks has released them when it is gone.

use zk_rwlock_fixtures as support;

use std::future::Future;
use std::time::{Duration, Instant};

use support::{client, eventually, received_on, server, unique_path};
use zk_rwlock::{zk, HoldState, SharedLock};

const SESSION: Duration = Duration::from_secs(4);

/// A runtime of the given flavour, with I/O and timers.
fn runtime(multi_thread: bool) -> tokio::runtime::Runtime {
    if multi_thread {
        support::multi_thread_runtime(2)
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }
}

/// A guard held on a session connected inside a runtime that then ends:
/// the session goes on, on its connection (a plain one moves as it is), so
/// the guard stays held; a stranger's deletion of its node turns it lost,
/// and the lock still grants on that session afterwards. For both flavours
/// of runtime: a current-thread runtime's session runs on the background
/// thread from the start.
#[test]
fn a_guard_outlives_the_runtime_its_session_was_connected_in() {
    for multi_thread in [true, false] {
        let path = unique_path(if multi_thread {
            "moved-multi"
        } else {
            "moved-current"
        });
        let rt = runtime(multi_thread);
        let (lock, guard, connections) = rt.block_on(async {
            let c = zk_rwlock::connect_client(&server().connect_string(), SESSION, SESSION)
                .await
                .unwrap();
            let lock = SharedLock::new(c, &path).unwrap();
            let guard = lock.write().await.unwrap();
            let connections = lock.client().connections();
            (lock, guard, connections)
        });
        let registered = zk_rwlock::registered_sessions();
        drop(rt);
        let observer = runtime(false);
        observer.block_on(async {
            assert_eq!(
                guard.state(),
                HoldState::Held,
                "the guard after its runtime ended"
            );
            assert_eq!(
                lock.client().connections(),
                connections,
                "the session connected again instead of moving its connection (multi-thread: {multi_thread})"
            );
            assert_eq!(lock.client().state(), zk::SessionState::SyncConnected);
            assert_eq!(
                zk_rwlock::registered_sessions(),
                registered,
                "the session left the registry"
            );
            // Still served: a stranger's deletion reaches the guard's watch,
            // and the session still takes requests.
            let stranger = client().await;
            lost_to_a_strangers_deletion(&stranger, guard, &lock).await;
            assert!(
                stranger.list_children(&path).await.unwrap().is_empty(),
                "the second grant's node is still there after its release"
            );
        });
    }
}

/// A runtime that shuts down while one of its tasks holds a guard (the
/// lock's last handle goes with that task) has released it by the time
/// the runtime is gone, and does not stall: the session moves when the
/// runtime drops it, and that move waits for the releases left to it.
#[test]
fn a_runtime_ending_with_a_guard_held_in_a_task_has_released_it() {
    let path = unique_path("shutdown-release");
    let rt = support::multi_thread_runtime(2);
    let (node, client) = rt.block_on(async {
        // The task that holds starts before the session's: whichever of the
        // two the runtime drops first, the release completes.
        let (lock_tx, held_rx) = support::hold_in_a_task_spawned_first();
        let c = zk_rwlock::connect_client(&server().connect_string(), SESSION, SESSION)
            .await
            .unwrap();
        lock_tx.send(SharedLock::new(c.clone(), &path).unwrap()).unwrap();
        (held_rx.await.unwrap(), c)
    });
    support::shut_down_within(rt, Duration::from_secs(1));
    let observer = runtime(false);
    observer.block_on(async {
        let other = support::client().await;
        assert!(
            other.check_stat(&node).await.unwrap().is_none(),
            "the guard's node {node} is still there when its runtime is gone"
        );
        assert_eq!(
            client.state(),
            zk::SessionState::SyncConnected,
            "the session after the move"
        );
    });
}

/// A release whose future is dropped before it is confirmed (a timeout
/// around it, its runtime ending) is carried to its end on the background
/// thread: here its first deletion never reaches the server (held by a
/// frozen connection that is then cut), and the node still goes, by the
/// deletion sent again after the reconnection.
#[test]
fn a_release_cut_short_by_its_runtime_is_carried_to_its_end() {
    let path = unique_path("release-cut-short");
    let proxy = support::proxy::Proxy::start(&server().connect_string());
    let rt = support::multi_thread_runtime(2);
    let (node, client) = rt.block_on(async {
        let c = zk_rwlock::connect_client(proxy.addr(), SESSION, SESSION)
            .await
            .unwrap();
        let lock = SharedLock::new(c.clone(), &path).unwrap();
        let guard = lock.write().await.unwrap();
        let node = guard.node().to_owned();
        proxy.freeze();
        // Polled once: the deletion is sent, and held by the proxy.
        let mut release = Box::pin(guard.release());
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(
            release.as_mut().poll(&mut cx).is_pending(),
            "released at the first poll"
        );
        drop(release);
        (node, c)
    });
    drop(rt);
    proxy.cut_all();
    proxy.thaw();
    let observer = runtime(false);
    observer.block_on(async {
        let other = support::client().await;
        eventually("the node is deleted", Duration::from_secs(3), || {
            let other = other.clone();
            let node = node.clone();
            async move { other.check_stat(&node).await.unwrap().is_none() }
        })
        .await;
        drop(client);
    });
}

/// A session asked to run on the library's own thread goes on while every
/// worker of the runtime it was connected in is blocked for longer than
/// its connection's timeout (two fifths of the session timeout): the same
/// connection after the block, the guard held throughout.
#[test]
fn a_session_on_its_own_thread_outlives_a_blocked_runtime() {
    let path = unique_path("own-thread");
    let rt = support::multi_thread_runtime(2);
    rt.block_on(async {
        let options = zk_rwlock::ConnectOptions::new()
            .session_timeout(SESSION)
            .session_on_own_thread(true);
        let c = zk_rwlock::connect_client_with(&server().connect_string(), &options)
            .await
            .unwrap();
        let lock = SharedLock::new(c, &path).unwrap();
        let guard = lock.write().await.unwrap();
        let connections = lock.client().connections();
        // Both workers blocked, well past the connection's 1.6 s timeout.
        let block = || tokio::spawn(async { std::thread::sleep(Duration::from_millis(2500)) });
        let (a, b) = (block(), block());
        a.await.unwrap();
        b.await.unwrap();
        assert_eq!(
            lock.client().connections(),
            connections,
            "the session connected again while its caller's runtime was blocked"
        );
        assert_eq!(guard.state(), HoldState::Held);
        guard.release().await.unwrap();
    });
}

/// A lock's last handle, dropped with a dropped guard's release pending,
/// waits for that release wherever it is dropped while its session runs on
/// a one-worker runtime A: the node is gone when the drop returns, and the
/// drop takes far less than its 2 s bound (a wait that held back the only
/// worker driving the session would take all of it).
#[test]
fn a_locks_last_handle_waits_for_its_release_on_every_kind_of_thread() {
    let a = support::multi_thread_runtime(1);
    let c = a.block_on(async {
        zk_rwlock::connect_client(&server().connect_string(), SESSION, SESSION)
            .await
            .unwrap()
    });
    let observer = runtime(false);
    let stranger = observer.block_on(client());
    let other_multi = support::multi_thread_runtime(1);
    let other_current = runtime(false);
    for kind in [
        "A's block_on",
        "a worker of A",
        "a spawn_blocking thread of A",
        "a plain thread",
        "another current-thread runtime",
        "a worker of another multi-thread runtime",
    ] {
        let path = unique_path("last-handle");
        let (lock, guard) = a.block_on(async {
            let lock = SharedLock::new(c.clone(), &path).unwrap();
            let guard = lock.write().await.unwrap();
            (lock, guard)
        });
        let node = guard.node().to_owned();
        let last = move || {
            let started = Instant::now();
            drop(guard);
            drop(lock);
            started.elapsed()
        };
        let took = match kind {
            "A's block_on" => a.block_on(async move { last() }),
            "a worker of A" => a.block_on(async move { tokio::spawn(async move { last() }).await.unwrap() }),
            "a spawn_blocking thread of A" => {
                a.block_on(async move { tokio::task::spawn_blocking(last).await.unwrap() })
            }
            "a plain thread" => std::thread::spawn(last).join().unwrap(),
            "another current-thread runtime" => other_current.block_on(async move { last() }),
            "a worker of another multi-thread runtime" => {
                other_multi.block_on(async move { tokio::spawn(async move { last() }).await.unwrap() })
            }
            _ => unreachable!("{kind}"),
        };
        assert!(took < Duration::from_secs(1), "{kind}: the drop took {took:?}");
        let gone = observer.block_on(async { stranger.check_stat(&node).await.unwrap().is_none() });
        assert!(
            gone,
            "{kind}: the node {node} is still there when the drop returns"
        );
    }
}

/// A watch of a session whose task went with its runtime (a client the
/// caller connected, which has no background thread to move to): awaited on
/// another runtime, it ends with the session closed, never a panic. The
/// watch can no longer fire, and the session is over for this client.
#[test]
fn a_watch_whose_session_went_with_its_runtime_ends_closed_without_a_panic() {
    let panics = support::panics_so_far();
    let path = unique_path("watch-orphaned");
    let a = runtime(false);
    let (client, watcher) = a.block_on(async {
        let client = zk::Client::connector()
            .with_session_timeout(SESSION)
            .connect(&server().connect_string())
            .await
            .unwrap();
        // An `exists` watch on a node that is not there.
        let (stat, watcher) = client.check_and_watch_stat(&path).await.unwrap();
        assert!(stat.is_none());
        (client, watcher)
    });
    drop(a);
    let event = runtime(false).block_on(async {
        tokio::time::timeout(Duration::from_secs(5), watcher.changed())
            .await
            .expect("the watch ends once its session's task is gone")
    });
    assert_eq!(
        (event.event_type, event.session_state),
        (zk::EventType::Session, zk::SessionState::Closed)
    );
    assert_eq!(support::panics_since(panics), Vec::<String>::new(), "no panic");
    drop(client);
}

/// A guard granted by a hand-off keeps the watch its acquire set, in a task
/// of the runtime that runs its session. When that runtime ends, the task
/// goes with it and the session moves to the background thread, where the
/// guard's keeper goes on with that watch: a stranger's deletion still
/// turns the guard lost, and the session still grants.
#[test]
fn a_handed_off_guard_is_still_told_of_a_deletion_after_its_runtime_ends() {
    let path = unique_path("moved-handoff");
    let rt = runtime(true);
    let (lock, guard) = rt.block_on(async {
        let c = zk_rwlock::connect_client(&server().connect_string(), SESSION, SESSION)
            .await
            .unwrap();
        let lock = SharedLock::new(c, &path).unwrap();
        let guard = handed_off(&lock, &path).await;
        (lock, guard)
    });
    drop(rt);
    runtime(false).block_on(async {
        assert_eq!(
            guard.state(),
            HoldState::Held,
            "the guard after its runtime ended"
        );
        let stranger = client().await;
        lost_to_a_strangers_deletion(&stranger, guard, &lock).await;
    });
}

/// A handed-off guard's keeper whose read of its node is under way when the
/// runtime that runs it ends: a stranger wrote to the node (the watch
/// fired), and every read of it loses its answer (its connection is cut
/// after each one), so the keeper pauses and reads again, and again. The
/// keeper goes on on the background thread with that read given again:
/// once answers come back, it watches the node anew, and a stranger's
/// deletion still turns the guard lost.
#[test]
fn a_handed_off_guards_read_under_way_as_its_runtime_ends_is_made_again_where_it_goes_on() {
    const GET_DATA: i32 = 4;
    let path = unique_path("moved-reading");
    let proxy = support::proxy::Proxy::start(&server().connect_string());
    let rt = runtime(true);
    let (lock, guard) = rt.block_on(async {
        let c = zk_rwlock::connect_client(proxy.addr(), SESSION, SESSION)
            .await
            .unwrap();
        let lock = SharedLock::new(c, &path).unwrap();
        let guard = handed_off(&lock, &path).await;
        support::wait_watching(server(), guard.node(), lock.client().session_id().0).await;
        (lock, guard)
    });
    let node = guard.node().to_owned();
    let observer = runtime(false);
    let stranger = observer.block_on(client());
    proxy.cut_after_every_request(&[GET_DATA]);
    observer
        .block_on(stranger.set_data(&node, b"a stranger's write", None))
        .unwrap();
    support::poll(
        "the keeper's reads lose their answers",
        Duration::from_secs(10),
        || (proxy.fired() >= 2).then_some(()),
    );
    support::shut_down_within(rt, Duration::from_secs(2));
    proxy.cut_after_request(&[]);
    observer.block_on(async {
        support::wait_watching(server(), &node, lock.client().session_id().0).await;
        // (A read cut before the cuts were disarmed suspends it a moment.)
        eventually("the guard says Held again", Duration::from_secs(5), || {
            let now = guard.state();
            async move { now == HoldState::Held }
        })
        .await;
        lost_to_a_strangers_deletion(&stranger, guard, &lock).await;
    });
}

/// A stranger deletes `guard`'s node: the guard says Lost within 2 s (its
/// keeper was told), and once it is let go, `lock` grants again on its
/// session and releases.
async fn lost_to_a_strangers_deletion(
    stranger: &zk::Client,
    guard: zk_rwlock::WriteGuard,
    lock: &SharedLock,
) {
    stranger.delete(guard.node(), None).await.unwrap();
    eventually("the guard says Lost", Duration::from_secs(2), || {
        let now = guard.state();
        async move { now == HoldState::Lost }
    })
    .await;
    drop(guard);
    let again = lock.write().await.unwrap();
    again.release().await.unwrap();
}

/// A write guard of `lock` (directory `path`, no other contender) granted
/// by a hand-off: it waits behind a holder of a plain client, which then
/// releases, so the guard's keeper takes over the watch its acquire set
/// and runs beside the session.
async fn handed_off(lock: &SharedLock, path: &str) -> zk_rwlock::WriteGuard {
    let holder_lock = SharedLock::new(client().await, path).unwrap();
    let holder = holder_lock.write().await.unwrap();
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move { lock.write().await }
    });
    let stranger = client().await;
    eventually("the waiter queues", Duration::from_secs(5), || {
        let stranger = stranger.clone();
        let path = path.to_owned();
        async move { stranger.list_children(&path).await.is_ok_and(|c| c.len() == 2) }
    })
    .await;
    holder.release().await.unwrap();
    waiter.await.unwrap().unwrap()
}

/// A guard as [`handed_off`] grants it, held by a task of the current
/// runtime until that runtime ends. Returns the node held.
async fn handed_off_guard_held_in_a_task(lock: &SharedLock, path: &str) -> String {
    let guard = handed_off(lock, path).await;
    let node = guard.node().to_owned();
    tokio::spawn(async move {
        std::future::pending::<()>().await;
        drop(guard);
    });
    node
}

/// Handed-off guards held by tasks of a runtime that ends are released by
/// that end (their tasks go), on the background thread. Their keepers go
/// with the runtime too and go on on the background thread with the watch
/// each awaits: the move costs the session no request (no removal of the
/// old watch, no read of a node being deleted), one deletion per guard.
#[test]
fn guards_released_by_their_runtimes_end_cost_no_request_beyond_their_release() {
    const N: usize = 8;
    let rt = runtime(true);
    let (sid, nodes, session) = rt.block_on(async {
        let c = zk_rwlock::connect_client(&server().connect_string(), Duration::from_secs(30), SESSION)
            .await
            .unwrap();
        let mut nodes = Vec::new();
        for i in 0..N {
            // One directory per guard: each holds its own lock at once.
            let path = unique_path(&format!("moved-released-{i}"));
            let lock = SharedLock::new(c.clone(), &path).unwrap();
            nodes.push(handed_off_guard_held_in_a_task(&lock, &path).await);
        }
        // Every keeper waits on the watch its acquire set.
        let sid = c.session_id().0;
        for node in &nodes {
            support::wait_watching(server(), node, sid).await;
        }
        (sid, nodes, c)
    });
    let before = received_on(sid);
    support::shut_down_within(rt, Duration::from_secs(2));
    let observer = runtime(false);
    observer.block_on(async {
        let other = client().await;
        for node in &nodes {
            eventually("the guard's node is deleted", Duration::from_secs(3), || {
                let other = other.clone();
                let node = node.clone();
                async move { other.check_stat(&node).await.unwrap().is_none() }
            })
            .await;
        }
        // One request more through the session: answered, every request
        // sent before it has reached the server.
        session.check_stat("/").await.unwrap();
    });
    let sent = received_on(sid) - before - 1;
    eprintln!("requests sent by the session from its runtime's end: {sent} for {N} guards");
    assert_eq!(
        sent, N as i64,
        "{sent} requests for {N} releases: the move read or unwatched nodes being released"
    );
    drop(session);
}

/// A handed-off guard dropped on another thread while the runtime that runs
/// its keeper (and its session) ends, over and over: whichever of the
/// guard's drop and the keeper task's drop comes first, nothing panics or
/// hangs, the guard's node is released, and the session goes on, served
/// on the background thread.
#[test]
fn a_handed_off_guard_dropped_while_its_runtime_ends_is_released_without_a_panic() {
    let panics = support::panics_so_far();
    let observer = runtime(false);
    let other = observer.block_on(client());
    for round in 0..12 {
        let path = unique_path(&format!("moved-race-{round}"));
        let rt = runtime(true);
        let (lock, guard) = rt.block_on(async {
            let c = zk_rwlock::connect_client(&server().connect_string(), SESSION, SESSION)
                .await
                .unwrap();
            let lock = SharedLock::new(c, &path).unwrap();
            let guard = handed_off(&lock, &path).await;
            (lock, guard)
        });
        let node = guard.node().to_owned();
        let client = lock.client().clone();
        let start = std::sync::Arc::new(std::sync::Barrier::new(2));
        let ender = std::thread::spawn({
            let start = start.clone();
            move || {
                start.wait();
                if round % 2 == 0 {
                    std::thread::sleep(Duration::from_micros(200 * (round as u64 / 2)));
                }
                drop(rt);
            }
        });
        start.wait();
        if round % 2 == 1 {
            std::thread::sleep(Duration::from_micros(200 * (round as u64 / 2)));
        }
        drop(guard);
        drop(lock);
        let joined = Instant::now();
        ender.join().unwrap();
        assert!(
            joined.elapsed() < Duration::from_secs(3),
            "round {round}: the runtime took {:?} to end",
            joined.elapsed()
        );
        observer.block_on(async {
            eventually("the guard's node is released", Duration::from_secs(3), || {
                let other = other.clone();
                let node = node.clone();
                async move { other.check_stat(&node).await.unwrap().is_none() }
            })
            .await;
        });
        assert_eq!(
            client.state(),
            zk::SessionState::SyncConnected,
            "round {round}: the session after the move"
        );
    }
    assert_eq!(support::panics_since(panics), Vec::<String>::new(), "no panic");
}
