//! The adapter against a real ZooKeeper server: sharing, exclusion, queueing,
//! timeouts, cancellation, fencing, loss, many tasks, the blocking API, and
//! bad input. Every test checks that its lock directory ends up empty.

use zk_rwlock_fixtures as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::{
    assert_drained, children, client, eventually, lock, received_on, server, unique_path, wait_contenders,
    wait_watching,
};
use zk_rwlock::{zk, ContenderState, Error, Mode, SharedLock};

const SHORT: Duration = Duration::from_secs(10);

/// Waits until `lock` shows `n` contenders.
#[tokio::test]
async fn readers_share() {
    let path = unique_path("share");
    let mut guards = Vec::new();
    for _ in 0..5 {
        let l = lock(&path).await;
        let g = tokio::time::timeout(SHORT, l.read())
            .await
            .expect("readers do not wait for readers")
            .unwrap();
        assert!(g.is_held());
        assert_eq!(g.mode(), Mode::Read);
        guards.push(g);
    }
    let l = lock(&path).await;
    let contenders = l.contenders().await.unwrap();
    assert_eq!(contenders.len(), 5);
    assert!(contenders.iter().all(|c| c.state == ContenderState::Holds));
    assert!(
        l.try_write().await.unwrap().is_none(),
        "a writer is excluded by readers"
    );
    for g in guards {
        g.release().await.unwrap();
    }
    assert_drained(&path).await;
}

#[tokio::test]
async fn writer_excludes_everyone() {
    let path = unique_path("exclude");
    let (a, b) = (lock(&path).await, lock(&path).await);
    let w = a.write().await.unwrap();
    assert!(b.try_read().await.unwrap().is_none());
    assert!(b.try_write().await.unwrap().is_none());
    assert!(b
        .read_timeout(Duration::from_millis(200))
        .await
        .unwrap()
        .is_none());
    assert!(b
        .write_timeout(Duration::from_millis(200))
        .await
        .unwrap()
        .is_none());
    // Only the holder's node is left: failed attempts removed theirs.
    assert_eq!(
        children(b.client(), &path).await,
        vec![w.node().rsplit('/').next().unwrap().to_owned()]
    );
    w.release().await.unwrap();
    let r = b.try_read().await.unwrap().expect("free after release");
    r.release().await.unwrap();
    assert_drained(&path).await;
}

#[tokio::test]
async fn readers_behind_a_writer_wait_and_then_go_together() {
    let path = unique_path("queue");
    let l = lock(&path).await;
    let r1 = l.read().await.unwrap();
    let lw = lock(&path).await;
    let writer_session = lw.client().session_id().0;
    let writer = tokio::spawn(async move { lw.write().await });
    wait_contenders(&l, 2).await;
    let mut readers = Vec::new();
    let mut reader_sessions = Vec::new();
    for i in 0..3 {
        let lr = lock(&path).await;
        reader_sessions.push(lr.client().session_id().0);
        readers.push(tokio::spawn(async move { lr.read().await }));
        wait_contenders(&l, 3 + i).await;
    }
    // The queue is R [W] R R R: the readers wait on the writer.
    let queue = l.contenders().await.unwrap();
    let w_name = queue[1].name.to_string();
    assert_eq!(queue[1].name.mode(), Mode::Write);
    assert_eq!(queue[1].state, ContenderState::WaitsOn(queue[0].name.to_string()));
    for c in &queue[2..] {
        assert_eq!(
            c.state,
            ContenderState::WaitsOn(w_name.clone()),
            "readers wait on the writer"
        );
    }
    // Each really waits: the writer watches the reader that holds, the
    // readers watch the writer.
    wait_watching(server(), &queue[0].path, writer_session).await;
    for session in &reader_sessions {
        wait_watching(server(), &queue[1].path, *session).await;
    }
    r1.release().await.unwrap();
    let w = tokio::time::timeout(SHORT, writer)
        .await
        .expect("writer granted")
        .unwrap()
        .unwrap();
    assert_eq!(w.node(), queue[1].path);
    // The readers still wait while the writer holds: still watching it, and
    // the queue says so.
    for session in &reader_sessions {
        assert!(
            support::watches(server(), w.node(), *session),
            "reader session 0x{session:x} stopped watching the writer while it holds"
        );
    }
    let queue_now = l.contenders().await.unwrap();
    assert_eq!(queue_now.len(), 4, "{queue_now:?}");
    assert_eq!(queue_now[0].path, w.node());
    assert!(queue_now[1..]
        .iter()
        .all(|c| c.state == ContenderState::WaitsOn(w_name.clone())));
    assert!(
        readers.iter().all(|r| !r.is_finished()),
        "readers still wait while the writer holds"
    );
    w.release().await.unwrap();
    let mut granted = Vec::new();
    for r in readers {
        granted.push(
            tokio::time::timeout(SHORT, r)
                .await
                .expect("reader granted")
                .unwrap()
                .unwrap(),
        );
    }
    // All three hold together.
    assert!(granted.iter().all(|g| g.is_held()));
    let queue = l.contenders().await.unwrap();
    assert_eq!(queue.len(), 3);
    assert!(queue.iter().all(|c| c.state == ContenderState::Holds));
    for g in granted {
        g.release().await.unwrap();
    }
    assert_drained(&path).await;
}

#[tokio::test]
async fn writers_are_granted_in_fifo_order_with_increasing_tokens() {
    let path = unique_path("fifo");
    let l = lock(&path).await;
    let first = l.write().await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..5 {
        let lw = lock(&path).await;
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let g = lw.write().await.unwrap();
            order.lock().unwrap().push((i, g.fencing_token()));
            g.release().await.unwrap();
        }));
        wait_contenders(&l, 2 + i).await;
    }
    let first_token = first.fencing_token();
    first.release().await.unwrap();
    for t in tasks {
        tokio::time::timeout(SHORT, t)
            .await
            .expect("all writers granted")
            .unwrap();
    }
    let order = order.lock().unwrap().clone();
    assert_eq!(
        order.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4],
        "FIFO"
    );
    let mut last = first_token;
    for (_, token) in order {
        assert!(
            token > last,
            "fencing tokens strictly increase: {token} after {last}"
        );
        last = token;
    }
    assert_drained(&path).await;
}

#[tokio::test]
async fn cancelled_acquires_leave_no_nodes() {
    let path = unique_path("cancel");
    let holder_lock = lock(&path).await;
    let holder = holder_lock.write().await.unwrap();
    let shared = lock(&path).await;
    // Cancel at many different points: before the create is answered, while
    // listing, while waiting.
    let mut tasks = Vec::new();
    for i in 0..30u64 {
        let l = if i % 2 == 0 {
            shared.clone()
        } else {
            lock(&path).await
        };
        tasks.push(tokio::spawn(async move {
            let wait = Duration::from_micros(i * 700);
            let mode = if i % 3 == 0 { Mode::Read } else { Mode::Write };
            // Anything but the deadline (a grant, an error) is wrong.
            match tokio::time::timeout(wait, l.acquire(mode)).await {
                Err(_elapsed) => None,
                Ok(outcome) => Some(format!("{mode} after {wait:?}: {outcome:?}")),
            }
        }));
    }
    for t in tasks {
        if let Some(outcome) = t.await.unwrap() {
            panic!("an acquire ended before its deadline while the writer holds: {outcome}");
        }
    }
    let holder_name = holder.node().rsplit('/').next().unwrap().to_owned();
    support::settles_to(holder_lock.client(), &path, &[holder_name]).await;
    holder.release().await.unwrap();
    assert_drained(&path).await;
}

#[tokio::test]
async fn guard_learns_when_its_node_is_deleted() {
    let path = unique_path("lost");
    let l = lock(&path).await;
    let g = l.write().await.unwrap();
    assert!(g.is_held());
    let other = client().await;
    let node = g.node().to_owned();
    let deleter = tokio::spawn(async move {
        other.delete(&node, None).await.unwrap();
    });
    tokio::time::timeout(SHORT, g.lost())
        .await
        .expect("lost() completes");
    deleter.await.unwrap();
    assert!(!g.is_held());
    // The release says the lock was lost before it: it did not release it.
    let node = g.node().to_owned();
    assert!(
        matches!(g.release().await, Err(Error::Lost { node: n }) if n == node),
        "releasing a node someone else deleted is Error::Lost"
    );
    assert_drained(&path).await;
}

#[tokio::test]
async fn guard_learns_when_its_session_closes() {
    let path = unique_path("closed");
    let proxy = support::proxy::Proxy::start(&server().connect_string());
    let c = support::client_on(proxy.addr()).await;
    let l = SharedLock::new(c.clone(), &path).unwrap();
    let g = l.write().await.unwrap();
    let waiter_lock = lock(&path).await;
    let waiter = tokio::spawn(async move { waiter_lock.write().await });
    wait_contenders(&l, 2).await;
    // Expire the holder's session: the server deletes its node, and the
    // holder's client sees `Expired` when it reconnects.
    support::expire_behind(&proxy, &c, &server().connect_string()).await;
    tokio::time::timeout(SHORT, g.lost())
        .await
        .expect("lost() completes on expiry");
    assert!(!g.is_held());
    let w = tokio::time::timeout(SHORT, waiter)
        .await
        .expect("the other session is granted")
        .unwrap()
        .unwrap();
    assert!(matches!(
        g.release().await,
        Err(Error::SessionExpired | Error::SessionClosed)
    ));
    assert!(matches!(
        l.try_write().await,
        Err(Error::SessionExpired | Error::SessionClosed)
    ));
    w.release().await.unwrap();
    assert_drained(&path).await;
}

/// A hold recorded by the test: its mode and when it began and ended, as
/// seen by the holder (after the acquire returned, before the release began).
#[derive(Debug, Clone, Copy)]
struct Hold {
    mode: Mode,
    start: std::time::Instant,
    end: std::time::Instant,
}

/// Fails, naming the pair, if a writer's hold overlaps any other hold.
fn assert_no_writer_overlaps(holds: &[Hold]) {
    for (i, a) in holds.iter().enumerate() {
        for b in &holds[i + 1..] {
            if a.mode == Mode::Write || b.mode == Mode::Write {
                assert!(
                    a.end <= b.start || b.end <= a.start,
                    "overlapping holds, one of them a writer's: {a:?} and {b:?}"
                );
            }
        }
    }
}

/// A random hold time of 1 to 5 ms (a fresh `RandomState` is randomly keyed).
fn random_hold() -> Duration {
    use std::hash::BuildHasher;
    let r = std::collections::hash_map::RandomState::new().hash_one(0u8);
    Duration::from_micros(1_000 + r % 4_000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_share_one_session() {
    let path = unique_path("tasks");
    let l = lock(&path).await;
    let holds = Arc::new(Mutex::new(Vec::new()));
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..20 {
        let (l, holds, tokens) = (l.clone(), holds.clone(), tokens.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..5 {
                let mode = if i % 4 == 0 { Mode::Write } else { Mode::Read };
                let g = l.acquire(mode).await.unwrap();
                let start = std::time::Instant::now();
                tokio::time::sleep(random_hold()).await;
                let end = std::time::Instant::now();
                if mode == Mode::Write {
                    tokens.lock().unwrap().push(g.fencing_token());
                }
                holds.lock().unwrap().push(Hold { mode, start, end });
                g.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(60), t)
            .await
            .expect("all tasks finish")
            .unwrap();
    }
    let holds = holds.lock().unwrap().clone();
    assert_eq!(holds.len(), 100);
    assert_no_writer_overlaps(&holds);
    // Readers did share: some two read holds overlapped.
    let shared = holds.iter().enumerate().any(|(i, a)| {
        holds[i + 1..]
            .iter()
            .any(|b| a.mode == Mode::Read && b.mode == Mode::Read && a.start < b.end && b.start < a.end)
    });
    assert!(shared, "no two readers ever held at once");
    let tokens = tokens.lock().unwrap().clone();
    let mut unique = tokens.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), tokens.len(), "each grant has its own token");
    assert_drained(&path).await;
}

#[test]
fn blocking_api_from_plain_threads() {
    let path = unique_path("blocking");
    let connect = server().connect_string();
    let inside = Arc::new(AtomicUsize::new(0));
    let violations = Arc::new(AtomicUsize::new(0));
    let all_done = Arc::new(std::sync::Barrier::new(4));
    let one_at_a_time = Arc::new(Mutex::new(()));
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let (connect, path, inside, violations) =
                (connect.clone(), path.clone(), inside.clone(), violations.clone());
            let (all_done, one_at_a_time) = (all_done.clone(), one_at_a_time.clone());
            std::thread::spawn(move || {
                let l = zk_rwlock::blocking::SharedLock::connect(&connect, &path).unwrap();
                for _ in 0..5 {
                    let g = if i == 0 {
                        l.write().unwrap()
                    } else {
                        l.read().unwrap()
                    };
                    assert!(g.is_held());
                    let add = if g.mode() == Mode::Write { 1000 } else { 1 };
                    let before = inside.fetch_add(add, Ordering::SeqCst);
                    if (add == 1000 && before != 0) || before >= 1000 {
                        violations.fetch_add(1, Ordering::SeqCst);
                    }
                    std::thread::yield_now();
                    inside.fetch_sub(add, Ordering::SeqCst);
                    drop(g); // releases
                }
                // Every thread has dropped its last guard: the lock is free
                // for each thread in turn.
                all_done.wait();
                let _turn = one_at_a_time.lock().unwrap();
                let g = l.try_write().unwrap().expect("free once every guard was dropped");
                assert!(g.is_held());
                g.release().expect("released");
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(violations.load(Ordering::SeqCst), 0);
    let l = zk_rwlock::blocking::SharedLock::connect(&connect, &path).unwrap();
    assert_eq!(
        l.contenders().unwrap(),
        vec![],
        "dropped guards released their nodes"
    );
    let g = l.write_timeout(Duration::from_secs(5)).unwrap().expect("free");
    assert_eq!(l.try_read().unwrap().map(|g| g.node().to_owned()), None);
    g.release().unwrap();
}

/// The data a blocking lock protects is read and written through the
/// lock's own runtime (`block_on`), from a plain thread with no runtime of
/// its own; two writers' read-modify-write cycles lose no update.
#[test]
fn blocking_lock_runs_the_clients_calls_on_its_data() {
    let path = unique_path("blocking-data");
    let data = format!("{path}-data");
    let connect = server().connect_string();
    let setup = zk_rwlock::blocking::SharedLock::connect(&connect, &path).unwrap();
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    setup
        .block_on(setup.client().create(&data, b"0", &open))
        .unwrap()
        .unwrap();
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let (connect, path, data) = (connect.clone(), path.clone(), data.clone());
            std::thread::spawn(move || {
                let lock = zk_rwlock::blocking::SharedLock::connect(&connect, &path).unwrap();
                for _ in 0..10 {
                    let guard = lock.write().unwrap();
                    let client = lock.client();
                    let (bytes, _) = lock.block_on(client.get_data(&data)).unwrap().unwrap();
                    let n: u64 = String::from_utf8(bytes).unwrap().parse().unwrap();
                    // Unconditional: only the lock keeps the other writer out.
                    let next = (n + 1).to_string();
                    lock.block_on(client.set_data(&data, next.as_bytes(), None))
                        .unwrap()
                        .unwrap();
                    guard.release().unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let (bytes, _) = setup.block_on(setup.client().get_data(&data)).unwrap().unwrap();
    assert_eq!(bytes, b"20", "an update was lost");
}

/// On a thread that runs a runtime's tasks (here the test's
/// current_thread runtime) the blocking API would starve them: refused,
/// also for a lock made elsewhere.
#[tokio::test]
async fn blocking_api_refuses_to_run_inside_a_runtime() {
    let err = zk_rwlock::blocking::SharedLock::connect(&server().connect_string(), "/x").unwrap_err();
    assert!(matches!(err, Error::InsideRuntime), "{err}");
    let connect = server().connect_string();
    let path = unique_path("blocking-refused");
    let l = std::thread::spawn(move || zk_rwlock::blocking::SharedLock::connect(&connect, &path))
        .join()
        .unwrap()
        .unwrap();
    assert!(matches!(l.try_write(), Err(Error::InsideRuntime)));
    assert!(matches!(l.contenders(), Err(Error::InsideRuntime)));
    assert!(matches!(l.block_on(async {}), Err(Error::InsideRuntime)));
    // A task on a multi-thread runtime's worker: refused as well.
    let on_worker = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let task = rt.spawn(async move { l.try_write().map(|g| g.is_some()) });
        rt.block_on(task).unwrap()
    })
    .join()
    .unwrap();
    assert!(matches!(on_worker, Err(Error::InsideRuntime)), "{on_worker:?}");
}

/// Acquires and releases through the blocking API in `spawn_blocking` on
/// `rt`, while a task of the same runtime holds the lock at first: the
/// blocking writer waits for it, and the runtime's thread is free to run
/// that task's release.
fn blocking_api_in_spawn_blocking(rt: tokio::runtime::Runtime) {
    let path = unique_path("spawn-blocking");
    rt.block_on(async {
        let holder = lock(&path).await;
        let held = holder.read().await.unwrap();
        let connect = server().connect_string();
        let p = path.clone();
        let blocking = tokio::task::spawn_blocking(move || {
            let l = zk_rwlock::blocking::SharedLock::connect(&connect, &p)?;
            let r = l.try_read()?.expect("readers share");
            r.release()?;
            let w = l.write_timeout(SHORT)?.expect("granted once the task releases");
            let token = w.fencing_token();
            w.release()?;
            assert_eq!(l.contenders()?, vec![]);
            Ok::<_, Error>(token)
        });
        // (Or it failed: then its error is shown below.)
        eventually("the blocking writer waits", SHORT, || async {
            let c = holder.contenders().await.unwrap_or_default();
            blocking.is_finished() || (c.len() == 2 && c[1].name.mode() == Mode::Write)
        })
        .await;
        held.release().await.unwrap();
        let token = support::joined(SHORT, blocking)
            .await
            .unwrap_or_else(|e| panic!("the blocking API failed in spawn_blocking: {e}"));
        assert!(token > 0);
        assert_drained(&path).await;
    });
}

#[test]
fn blocking_api_inside_spawn_blocking_on_a_multi_thread_runtime() {
    let rt = support::multi_thread_runtime(2);
    blocking_api_in_spawn_blocking(rt);
}

/// A multi-thread runtime's `block_on` runs none of its tasks, and
/// `block_in_place` hands a worker's tasks to another thread: the blocking
/// API works in both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_api_in_a_multi_thread_block_on_and_in_block_in_place() {
    let path = unique_path("mt-block-on");
    let l = zk_rwlock::blocking::SharedLock::connect(&server().connect_string(), &path).unwrap();
    l.try_write().unwrap().expect("free").release().unwrap();
    let in_place = tokio::spawn(async move {
        tokio::task::block_in_place(|| {
            let g = l.write_timeout(SHORT)?.expect("free");
            g.release()
        })
    });
    support::joined(SHORT, in_place).await.unwrap();
    assert_drained(&path).await;
}

#[test]
fn blocking_api_inside_spawn_blocking_on_a_current_thread_runtime() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    blocking_api_in_spawn_blocking(rt);
}

#[tokio::test]
async fn bad_input_gives_typed_errors() {
    let c = client().await;
    for bad in ["", "locks/a", "/", "/a/", "//a", "/a/./b", "/a/../b", "/a\0b"] {
        match SharedLock::new(c.clone(), bad) {
            Err(Error::InvalidPath { path, .. }) => assert_eq!(path, bad),
            other => panic!("{bad:?}: expected InvalidPath, got {other:?}"),
        }
    }
    for bad in ["", "a/b", "a@b", "a\0b"] {
        match SharedLock::builder(c.clone(), "/ok").identity(bad).build() {
            Err(Error::InvalidIdentity { identity, .. }) => assert_eq!(identity, bad),
            other => panic!("{bad:?}: expected InvalidIdentity, got {other:?}"),
        }
    }
    let err = SharedLock::new(c.clone(), "locks/a").unwrap_err().to_string();
    assert!(
        err.contains("`locks/a`") && err.contains("start with '/'"),
        "{err}"
    );
}

#[tokio::test]
async fn ephemeral_lock_directory_is_a_typed_error() {
    let c = client().await;
    let base = unique_path("eph");
    support::mkdir_open(&c, &base).await;
    let dir = format!("{base}/ephemeral");
    c.create(
        &dir,
        &[],
        &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
    )
    .await
    .unwrap();
    let l = SharedLock::new(c.clone(), &dir).unwrap();
    match l.try_write().await {
        Err(Error::EphemeralDirectory { path }) => assert_eq!(path, dir),
        other => panic!("expected EphemeralDirectory, got {other:?}"),
    }
    assert!(children(&c, &dir).await.is_empty());
}

#[tokio::test]
async fn no_auth_is_a_typed_error() {
    let path = unique_path("acl");
    let owner = zk::Client::connector()
        .with_auth("digest", b"alice:secret")
        .connect(&server().connect_string())
        .await
        .unwrap();
    // A private lock: its directory too is alice's alone.
    let mine = SharedLock::builder(owner.clone(), &path)
        .acls(&zk::Acls::creator_all())
        .directory_acls(&zk::Acls::creator_all())
        .build()
        .unwrap();
    let g = mine.write().await.unwrap();
    let stranger = lock(&path).await;
    match stranger.try_write().await {
        Err(Error::NoAuth { .. }) => {}
        other => panic!("expected NoAuth, got {other:?}"),
    }
    g.release().await.unwrap();
    assert!(children(&owner, &path).await.is_empty());
}

#[tokio::test]
async fn unreachable_server_is_a_typed_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let servers = format!("127.0.0.1:{port}");
    let started = std::time::Instant::now();
    match SharedLock::connect(&servers, "/x").await {
        Err(Error::Unreachable { servers: s, .. }) => assert_eq!(s, servers),
        other => panic!("expected Unreachable, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(30), "no hang");
}

#[tokio::test]
async fn a_waiter_whose_node_is_deleted_is_never_granted() {
    let path = unique_path("waiter-deleted");
    let holder = lock(&path).await;
    let h = holder.write().await.unwrap();
    // The waiter's deletion of the holder's node alone would grant it (a
    // hand-off); its own node is deleted first.
    let l = lock(&path).await;
    let session = l.client().session_id().0;
    let waiter = tokio::spawn(async move { l.read().await });
    wait_contenders(&holder, 2).await;
    // Really waiting, its watches set: not still listing.
    wait_watching(server(), h.node(), session).await;
    let queue = holder.contenders().await.unwrap();
    let other = client().await;
    other.delete(&queue[1].path, None).await.unwrap();
    let result = tokio::time::timeout(SHORT, waiter)
        .await
        .expect("the waiter learns at once")
        .unwrap();
    match result {
        Err(Error::Lost { node }) => assert_eq!(node, queue[1].path),
        other => panic!("expected Lost, got {other:?}"),
    }
    assert!(h.is_held());
    h.release().await.unwrap();
    assert_drained(&path).await;
}

#[tokio::test]
async fn a_guard_granted_after_waiting_learns_when_its_node_is_deleted() {
    let path = unique_path("lost-after-wait");
    let holder = lock(&path).await;
    let h = holder.write().await.unwrap();
    let l = lock(&path).await;
    let session = l.client().session_id().0;
    let waiter = tokio::spawn(async move { l.write().await });
    wait_contenders(&holder, 2).await;
    wait_watching(server(), h.node(), session).await;
    h.release().await.unwrap();
    // Granted on the hand-off: the guard keeps the watch set while waiting.
    let g = support::joined(SHORT, waiter).await.unwrap();
    let other = client().await;
    other.delete(g.node(), None).await.unwrap();
    tokio::time::timeout(SHORT, g.lost())
        .await
        .expect("lost() completes");
    assert!(!g.is_held());
    let node = g.node().to_owned();
    assert!(matches!(g.release().await, Err(Error::Lost { node: n }) if n == node));
    assert_drained(&path).await;
}

/// A timed acquire always finishes its first look: on a free lock a zero or
/// tiny timeout is granted every time, as `try_*` is, on a new path and on
/// one that exists, in every mode.
#[tokio::test]
async fn a_zero_or_tiny_timeout_gets_a_free_lock() {
    let l = lock(&unique_path("zero-timeout")).await;
    for round in 0..40 {
        let timeout = Duration::from_millis([0, 1][round % 2]);
        let mode = [Mode::Write, Mode::Read][(round / 2) % 2];
        // A new path each fourth round: the directory is made in the look.
        let fresh;
        let l = if round % 4 == 0 {
            fresh = lock(&unique_path("zero-timeout-new")).await;
            &fresh
        } else {
            &l
        };
        let g = l
            .acquire_timeout(mode, timeout)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("round {round}: {mode} with {timeout:?} missed a free lock"));
        g.release().await.unwrap();
        let missed = || format!("round {round}: {mode}_timeout({timeout:?}) missed a free lock");
        match mode {
            Mode::Write => {
                l.write_timeout(timeout)
                    .await
                    .unwrap()
                    .unwrap_or_else(|| panic!("{}", missed()))
                    .release()
                    .await
            }
            Mode::Read => {
                l.read_timeout(timeout)
                    .await
                    .unwrap()
                    .unwrap_or_else(|| panic!("{}", missed()))
                    .release()
                    .await
            }
        }
        .unwrap();
    }
    assert_drained(l.path()).await;
}

/// Against a holder, a zero or tiny timeout returns `None` as soon as its
/// look has found the lock taken: before the look's own bound
/// (`TRY_TIMEOUT`) on a server that answers, which only a wait that ran on
/// to that bound reaches. It leaves no node.
#[tokio::test]
async fn a_zero_or_tiny_timeout_on_a_held_lock_returns_in_time_and_leaves_nothing() {
    let path = unique_path("zero-timeout-held");
    let (a, b) = (lock(&path).await, lock(&path).await);
    let w = a.write().await.unwrap();
    let holder = vec![w.node().rsplit('/').next().unwrap().to_owned()];
    let bound = zk_rwlock::TRY_TIMEOUT;
    for timeout in [0, 1, 5, 0, 1, 5].map(Duration::from_millis) {
        for mode in [Mode::Read, Mode::Write] {
            let started = std::time::Instant::now();
            assert!(b.acquire_timeout(mode, timeout).await.unwrap().is_none());
            let took = started.elapsed();
            assert!(
                took < bound,
                "{mode} with {timeout:?} took {took:?}: not before the look's bound"
            );
            assert_eq!(
                children(b.client(), &path).await,
                holder,
                "a withdrawn node was left"
            );
        }
    }
    w.release().await.unwrap();
    assert_drained(&path).await;
}

#[tokio::test]
async fn the_mode_can_be_chosen_at_run_time() {
    let path = unique_path("any-mode");
    let (a, b) = (lock(&path).await, lock(&path).await);
    let w = a.acquire(Mode::Write).await.unwrap();
    assert_eq!(w.mode(), Mode::Write);
    assert_eq!(w.lock_path(), path);
    assert!(b.try_acquire(Mode::Read).await.unwrap().is_none());
    assert!(b
        .acquire_timeout(Mode::Read, Duration::from_millis(100))
        .await
        .unwrap()
        .is_none());
    let token = w.fencing_token();
    w.release().await.unwrap();
    let r = b.acquire_timeout(Mode::Read, SHORT).await.unwrap().expect("free");
    assert!(r.is_held() && r.fencing_token() > token);
    r.release().await.unwrap();
    assert_drained(&path).await;
}

#[tokio::test]
async fn a_malformed_connect_string_is_a_typed_error() {
    match SharedLock::connect("127.0.0.1:notaport", "/x").await {
        Err(Error::InvalidConnectString { servers, .. }) => assert_eq!(servers, "127.0.0.1:notaport"),
        other => panic!("expected InvalidConnectString, got {other:?}"),
    }
    let trailing = format!("{},", server().connect_string());
    match SharedLock::connect(&trailing, "/x").await {
        Err(e @ Error::InvalidConnectString { .. }) => {
            assert!(e.to_string().contains("stray ','"), "{e}")
        }
        other => panic!("expected InvalidConnectString for {trailing:?}, got {other:?}"),
    }
}

/// Whether `err` names the missing chroot and, if given, the lock path, and
/// says that the chroot must exist.
fn names_the_chroot(err: &Error, chroot: &str, path: Option<&str>) -> bool {
    let text = err.to_string();
    text.contains(&format!("chroot `{chroot}`"))
        && text.contains("must exist")
        && path.is_none_or(|p| text.contains(&format!("`{p}`")) && text.contains(&format!("`{chroot}{p}`")))
}

/// A connect string whose chroot (`host:port/app`) does not exist: connecting
/// says so, and a client that has such a chroot (set after connecting) gets
/// the same error, naming the lock, from every acquire, `contenders()` and
/// `snapshot()`, instead of a bare `NoNode` or an empty queue. Once the
/// chroot exists, the lock works under it.
#[tokio::test]
async fn a_missing_chroot_is_named_with_the_lock_path() {
    let chroot = unique_path("chroot");
    let servers = format!("{}{chroot}", server().connect_string());
    let short = zk_rwlock::DEFAULT_SESSION_TIMEOUT;

    let err = zk_rwlock::connect_client(&servers, short, SHORT)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::ChrootMissing { chroot: c, path: None } if *c == chroot),
        "{err:?}"
    );
    assert!(names_the_chroot(&err, &chroot, None), "{err}");
    for path in ["/locks/a", "/a"] {
        let err = SharedLock::connect(&servers, path).await.unwrap_err();
        assert!(
            matches!(&err, Error::ChrootMissing { chroot: c, path: Some(p) } if *c == chroot && p == path),
            "{err:?}"
        );
        assert!(names_the_chroot(&err, &chroot, Some(path)), "{err}");
    }
    let (s, c) = (servers.clone(), chroot.clone());
    let blocking = std::thread::spawn(move || zk_rwlock::blocking::SharedLock::connect(&s, "/locks/a"))
        .join()
        .unwrap()
        .unwrap_err();
    assert!(names_the_chroot(&blocking, &c, Some("/locks/a")), "{blocking}");

    let root = client().await;
    let chrooted = root.clone().chroot(chroot.as_str()).unwrap();
    for path in ["/locks/a", "/a"] {
        let l = SharedLock::new(chrooted.clone(), path).unwrap();
        let missing = |err: Error| {
            assert!(
                matches!(&err, Error::ChrootMissing { path: Some(p), .. } if p == path),
                "{path}: {err:?}"
            );
            assert!(names_the_chroot(&err, &chroot, Some(path)), "{err}");
        };
        missing(l.try_write().await.unwrap_err());
        missing(l.read_timeout(SHORT).await.unwrap_err());
        missing(l.contenders().await.unwrap_err());
        missing(l.snapshot().await.unwrap_err());
    }
    assert_eq!(
        root.check_stat(&chroot).await.unwrap(),
        None,
        "nothing was created"
    );

    support::mkdir_open(&root, &chroot).await;
    let l = SharedLock::connect(&servers, "/locks/a").await.unwrap();
    assert_eq!(l.contenders().await.unwrap(), vec![]);
    assert!(!l.snapshot().await.unwrap().exists);
    let g = l.write().await.unwrap();
    assert!(g.node().starts_with("/locks/a/"), "{}", g.node());
    assert_eq!(children(&root, &format!("{chroot}/locks/a")).await.len(), 1);
    g.release().await.unwrap();
}

/// The wire protocol: a writer that had to wait releases with one
/// transaction that writes its node's name as the directory's data (the
/// release record) and deletes the node; a writer granted at once, and a
/// reader, just delete their node.
#[tokio::test]
async fn a_writer_that_waited_leaves_the_release_record_in_the_transaction_that_deletes_it() {
    let path = unique_path("release-record");
    let watcher = client().await;
    let record = |watcher: zk::Client, path: String| async move {
        match watcher.get_data(&path).await {
            Ok((data, _)) => String::from_utf8(data).unwrap(),
            Err(e) => panic!("read {path}: {e}"),
        }
    };
    for mode in [Mode::Write, Mode::Read] {
        let g = lock(&path).await.acquire(mode).await.unwrap();
        g.release().await.unwrap();
        assert_eq!(
            record(watcher.clone(), path.clone()).await,
            "",
            "{mode} granted at once leaves no record"
        );
    }
    let holder = lock(&path).await.write().await.unwrap();
    let l = lock(&path).await;
    let session = l.client().session_id().0;
    let waiter = tokio::spawn(async move { l.write().await });
    // It must have had to wait: watching the holder, not merely queued.
    wait_watching(server(), holder.node(), session).await;
    holder.release().await.unwrap();
    let g = support::joined(SHORT, waiter).await.unwrap();
    let node = g.node().to_owned();
    let (_, _, watch) = watcher.get_and_watch_data(&node).await.unwrap();
    g.release().await.unwrap();
    let event = tokio::time::timeout(SHORT, watch.changed())
        .await
        .expect("the watch fires");
    assert_eq!(event.event_type, zk::EventType::NodeDeleted);
    assert_eq!(
        record(watcher.clone(), path.clone()).await,
        node.rsplit('/').next().unwrap(),
        "a writer that waited names itself in the directory's data as it goes"
    );
    assert_drained(&path).await;
}

/// A watched writer that goes without the release mark (its session
/// expired, or it gave up) may still have others ahead of it: the watcher
/// looks again and waits on them instead of taking the lock.
#[tokio::test]
async fn a_writer_gone_without_the_release_mark_does_not_grant_the_next() {
    let path = unique_path("unmarked");
    let holder = lock(&path).await;
    let h = holder.write().await.unwrap();
    let second = lock(&path).await;
    let w2 = tokio::spawn(async move { second.write().await });
    wait_contenders(&holder, 2).await;
    let third = lock(&path).await;
    let session = format!("0x{:x}", third.client().session_id().0);
    let w3 = tokio::spawn(async move { third.write().await });
    wait_contenders(&holder, 3).await;
    let queue = holder.contenders().await.unwrap();
    assert_eq!(queue[2].state, ContenderState::WaitsOn(queue[1].name.to_string()));
    // The middle writer's node goes without a mark.
    client().await.delete(&queue[1].path, None).await.unwrap();
    assert!(matches!(
        support::joined(SHORT, w2).await,
        Err(Error::Lost { .. })
    ));
    // The third writer now watches the holder: it listed again.
    let (holder_node, session, w3_ref) = (&queue[0].path, &session, &w3);
    eventually("the third writer watches the holder", SHORT, || async move {
        assert!(
            !w3_ref.is_finished(),
            "the third writer took the lock while the holder held it"
        );
        let watches = server().four_letter(0, "wchp").unwrap_or_default();
        support::watchers_in(&watches, holder_node).contains(session)
    })
    .await;
    assert!(h.is_held());
    h.release().await.unwrap();
    let g3 = support::joined(SHORT, w3).await.unwrap();
    g3.release().await.unwrap();
    assert_drained(&path).await;
}

/// Waits for `what` with a deadline, from a plain thread (no runtime).
fn eventually_blocking(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + within;
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out after {within:?} waiting for: {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Dropping a held async guard, without `release()`, inside a runtime frees
/// the lock: another session's waiting writer is granted, and the dropped
/// guard's node is gone. For a `ReadGuard` and a `WriteGuard`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_held_guard_releases_the_lock() {
    for mode in [Mode::Read, Mode::Write] {
        let path = unique_path("drop");
        let holder = lock(&path).await;
        // The guard, and how to drop it: its own type, not a `Guard`.
        let (node, drop_guard): (String, Box<dyn FnOnce() + Send>) = match mode {
            Mode::Read => {
                let g = holder.read().await.unwrap();
                (g.node().to_owned(), Box::new(move || drop(g)))
            }
            Mode::Write => {
                let g = holder.write().await.unwrap();
                (g.node().to_owned(), Box::new(move || drop(g)))
            }
        };
        let waiter_lock = lock(&path).await;
        let session = waiter_lock.client().session_id().0;
        let waiter = tokio::spawn(async move { waiter_lock.write().await });
        wait_watching(server(), &node, session).await;
        drop_guard();
        let w = support::joined(SHORT, waiter)
            .await
            .unwrap_or_else(|e| panic!("{mode}: the waiter failed after the drop: {e}"));
        let observer = holder.client();
        assert_eq!(
            observer.check_stat(&node).await.unwrap(),
            None,
            "{mode}: the dropped guard's node is gone"
        );
        assert_eq!(
            children(observer, &path).await,
            vec![w.node().rsplit('/').next().unwrap().to_owned()],
            "{mode}: only the new holder's node is left"
        );
        // The holder's session is still there: its node went by the drop,
        // not with the session.
        assert_eq!(observer.state(), zk::SessionState::SyncConnected);
        w.release().await.unwrap();
        assert_drained(&path).await;
    }
}

/// The same for the blocking API: dropping its guard releases the lock
/// before `drop` returns, and another session's waiting writer is granted.
#[test]
fn dropping_a_blocking_guard_releases_the_lock() {
    use zk_rwlock::blocking::SharedLock as BlockingLock;
    let connect = server().connect_string();
    for mode in [Mode::Read, Mode::Write] {
        let path = unique_path("drop-blocking");
        let holder = BlockingLock::connect(&connect, &path).unwrap();
        let g = match mode {
            Mode::Read => holder.read(),
            Mode::Write => holder.write(),
        }
        .unwrap();
        assert_eq!(g.mode(), mode);
        let node = g.node().to_owned();
        let waiter_lock = BlockingLock::connect(&connect, &path).unwrap();
        let session = waiter_lock.client().session_id().0;
        let waiter = std::thread::spawn(move || {
            let w = waiter_lock.write_timeout(SHORT);
            (waiter_lock, w)
        });
        eventually_blocking(&format!("the waiter watches {node}"), SHORT, || {
            support::watches(server(), &node, session)
        });
        drop(g);
        // No polling: the blocking guard's drop waits for the deletion.
        let left = holder.contenders().unwrap();
        assert!(
            left.iter().all(|c| c.node() != node),
            "{mode}: the dropped guard's node is still there: {left:?}"
        );
        let (waiter_lock, w) = waiter.join().unwrap();
        let w = w
            .unwrap()
            .unwrap_or_else(|| panic!("{mode}: the waiter was not granted within {SHORT:?}"));
        assert!(w.is_held());
        let left = holder.contenders().unwrap();
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(left[0].path, w.node());
        w.release().unwrap();
        assert_eq!(waiter_lock.contenders().unwrap(), vec![]);
    }
}

/// A blocking guard learns that its node was deleted: `wait_lost` says no
/// while the lock is held and yes once another client deletes the node.
/// Its `release` is done when it returns; on a thread that runs a runtime's
/// tasks it is refused with `InsideRuntime`, and the node is released in
/// the background all the same.
#[test]
fn a_blocking_guard_learns_of_loss_and_refuses_to_release_inside_a_runtime() {
    use zk_rwlock::blocking::SharedLock as BlockingLock;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let connect = server().connect_string();
    let path = unique_path("blocking-lost");
    let l = BlockingLock::connect(&connect, &path).unwrap();

    let g = l.write().unwrap();
    assert!(
        !g.wait_lost(Duration::from_millis(200)).unwrap(),
        "held, yet lost"
    );
    assert!(g.is_held());
    let node = g.node().to_owned();
    rt.block_on(async { client().await.delete(&node, None).await.unwrap() });
    assert!(
        g.wait_lost(SHORT).unwrap(),
        "not lost within {SHORT:?} of the deletion"
    );
    assert!(!g.is_held());
    // Someone else deleted the node: the release says the lock was lost.
    assert!(matches!(g.release(), Err(Error::Lost { node: n }) if n == node));

    // Inside a multi-thread runtime's `block_on` (not one of its workers) a
    // blocking release works, and the node is gone when it returns.
    let g = l.write().unwrap();
    let node = g.node().to_owned();
    rt.block_on(async { g.release() }).unwrap();
    rt.block_on(async {
        let observer = client().await;
        assert!(
            observer.check_stat(&node).await.unwrap().is_none(),
            "released, yet {node} is there"
        );
    });

    // On a thread that runs a runtime's tasks it is refused, and the node
    // is released in the background all the same.
    let g = l.write().unwrap();
    let node = g.node().to_owned();
    let local = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let refused = local.block_on(async { g.release() });
    assert!(matches!(refused, Err(Error::InsideRuntime)), "{refused:?}");
    rt.block_on(async {
        let observer = client().await;
        eventually("the refused guard's node is released", SHORT, || async {
            observer.check_stat(&node).await.unwrap().is_none()
        })
        .await;
    });
    assert_eq!(l.contenders().unwrap(), vec![]);
}

/// A new lock directory under an existing parent (a lock per record, many
/// directories under one parent) costs one create: the first acquire sends
/// the create and the listing that find it missing, the directory's create,
/// and the create and listing again; the parent is not created again.
#[tokio::test]
async fn a_new_directory_under_an_existing_parent_costs_one_create() {
    let base = unique_path("dir-requests");
    let c = client().await;
    let sid = c.session_id().0;
    let first = SharedLock::new(c.clone(), &format!("{base}/first")).unwrap();
    first.write().await.unwrap().release().await.unwrap();
    // A ping may fall into one measurement: keep the least of a few.
    let mut least = i64::MAX;
    for i in 0..5 {
        let l = SharedLock::new(c.clone(), &format!("{base}/e{i}")).unwrap();
        let before = received_on(sid);
        let g = l.write().await.unwrap();
        least = least.min(received_on(sid) - before);
        g.release().await.unwrap();
    }
    assert_eq!(least, 5, "requests of the first acquire on a new directory");
}
