//! What a guard says when nothing awaits it, against a real server: a held
//! node deleted by someone else turns the guard `Lost` by itself (its kept
//! watch, through connection loss too), its release says the lock was lost,
//! and a lock whose last handle goes as its runtime ends has released what
//! it held. No test here awaits `lost()` or another state future before it
//! looks at `state()`.

use zk_rwlock_fixtures as support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::proxy::{op, Proxy};
use support::{
    assert_drained, client, client_on, eventually, received_on, server, unique_path, wait_watching,
};
use zk_rwlock::{zk, Error, HoldState, Mode, MultiLock, SharedLock};

const SHORT: Duration = Duration::from_secs(10);

/// How soon a guard must say `Lost` once its node is deleted: far less than
/// the 4 s session timeout of the test clients, which would end it anyway.
const LOST_WITHIN: Duration = Duration::from_secs(2);

/// Polls `state` (a guard's, nothing awaited) until it says `Lost`, failing
/// the test after [`LOST_WITHIN`].
async fn turns_lost(what: &str, state: impl Fn() -> HoldState) {
    eventually(&format!("{what} says Lost"), LOST_WITHIN, || {
        let now = state();
        async move { now == HoldState::Lost }
    })
    .await;
}

/// [`turns_lost`] from a plain thread, for a blocking guard.
fn blocking_turns_lost(what: &str, state: impl Fn() -> HoldState) {
    support::poll(&format!("{what} says Lost"), LOST_WITHIN, || {
        (state() == HoldState::Lost).then_some(())
    });
}

/// Waits until `client` is connected again after its connection was cut
/// (the proxy accepted a connection after `before`).
async fn reconnected(proxy: &Proxy, before: usize, client: &zk::Client) {
    eventually("the client reconnected", SHORT, || async {
        proxy.accepted() > before && client.state() == zk::SessionState::SyncConnected
    })
    .await;
}

fn is_lost_error(result: &Result<(), Error>, node: &str) -> bool {
    matches!(result, Err(Error::Lost { node: n }) if n == node)
}

/// The scenario: A holds, B waits; a stranger deletes A's node; B
/// is granted. A's guard says `Lost` by itself (no future pending), is not
/// held, and its release reports `Error::Lost`, for a write and a read
/// guard alike.
#[tokio::test]
async fn a_held_node_deleted_by_a_stranger_turns_the_guard_lost() {
    for mode in [Mode::Write, Mode::Read] {
        let path = unique_path("stranger");
        let a = support::lock(&path).await;
        let held = a.acquire(mode).await.unwrap();
        let node = held.node().to_owned();
        assert_eq!(held.state(), HoldState::Held);
        let b = support::lock(&path).await;
        let b_session = b.client().session_id().0;
        let waiter = tokio::spawn(async move { b.write().await });
        wait_watching(server(), &node, b_session).await;

        client().await.delete(&node, None).await.unwrap();
        let granted = support::joined(SHORT, waiter).await.unwrap();
        turns_lost(&format!("the {mode} guard"), || held.state()).await;
        assert!(!held.is_held(), "{mode}");
        assert!(granted.is_held());
        let released = held.release().await;
        assert!(is_lost_error(&released, &node), "{mode}: {released:?}");
        granted.release().await.unwrap();
        assert_drained(&path).await;
    }
}

/// A stranger writes to the held node, deletes it and makes a node of the
/// same name, in one transaction: the data change uses up the guard's
/// watch, and the node its watch then reads is the stranger's (another
/// czxid). The guard says `Lost`, and its release reports it and leaves
/// the stranger's node alone.
#[tokio::test]
async fn a_held_node_deleted_and_made_again_by_a_stranger_turns_the_guard_lost() {
    let path = unique_path("remade");
    let lock = support::lock(&path).await;
    let held = lock.write().await.unwrap();
    let node = held.node().to_owned();
    wait_watching(server(), &node, lock.client().session_id().0).await;
    let stranger = client().await;
    let mut multi = stranger.new_multi_writer();
    multi.add_set_data(&node, b"not a revocation", None).unwrap();
    multi.add_delete(&node, None).unwrap();
    multi
        .add_create(
            &node,
            b"",
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .unwrap();
    multi.commit().await.unwrap();
    turns_lost("the guard", || held.state()).await;
    let released = held.release().await;
    assert!(is_lost_error(&released, &node), "{released:?}");
    assert!(
        stranger.check_stat(&node).await.unwrap().is_some(),
        "the release deleted the stranger's node"
    );
    stranger.delete(&node, None).await.unwrap();
}

/// The lock's last handle dropped inside a current-thread runtime with a
/// multi-thread runtime's handle entered, a release pending: tokio refuses
/// to block there, and the drop says so instead of panicking.
#[test]
fn a_lock_dropped_where_tokio_refuses_to_block_does_not_panic() {
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let path = unique_path("refused-block");
    let handle = multi.handle().clone();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        current.block_on(async {
            // The session runs on the multi-thread runtime.
            let c = handle.spawn(client()).await.unwrap();
            let lock = SharedLock::new(c, &path).unwrap();
            drop(lock.write().await.unwrap()); // its release pending
            let _entered = handle.enter();
            drop(lock);
        })
    }));
    assert!(outcome.is_ok(), "dropping the lock panicked");
    multi.block_on(support::assert_drained(&path));
}

/// A multi-lock's guard is lost when one part's node is deleted, without a
/// pending future; its release releases the other part and reports the
/// deleted one.
#[tokio::test]
async fn a_multi_guard_whose_part_is_deleted_says_lost() {
    let base = unique_path("stranger-multi");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let multi = MultiLock::new(
        client().await,
        &[(a.as_str(), Mode::Write), (b.as_str(), Mode::Read)],
    )
    .unwrap();
    let guard = multi.acquire().await.unwrap();
    let deleted = guard.part(&a).unwrap().node().to_owned();
    client().await.delete(&deleted, None).await.unwrap();
    turns_lost("the multi guard", || guard.state()).await;
    assert!(!guard.is_held());
    assert_eq!(guard.part(&b).unwrap().state(), HoldState::Held);
    let released = guard.release().await;
    assert!(is_lost_error(&released, &deleted), "{released:?}");
    assert_drained(&a).await;
    assert_drained(&b).await;
}

/// The blocking guard, from a plain thread: `state()` turns `Lost` by
/// itself, `release()` reports `Error::Lost`.
#[test]
fn a_blocking_guard_whose_node_is_deleted_says_lost() {
    use zk_rwlock::blocking::SharedLock as BlockingLock;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let path = unique_path("stranger-blocking");
    let lock = BlockingLock::connect(&server().connect_string(), &path).unwrap();
    let held = lock.write().unwrap();
    let node = held.node().to_owned();
    assert_eq!(held.state(), HoldState::Held);
    rt.block_on(async { client().await.delete(&node, None).await.unwrap() });
    blocking_turns_lost("the blocking guard", || held.state());
    assert!(!held.is_held());
    let released = held.release();
    assert!(is_lost_error(&released, &node), "{released:?}");
    assert_eq!(lock.contenders().unwrap(), vec![]);
}

/// The kept watch survives a cut connection: once the client has
/// reconnected, a deletion turns the guard `Lost` all the same.
#[tokio::test]
async fn the_watch_survives_a_cut_connection() {
    let proxy = Proxy::start(&server().connect_string());
    let path = unique_path("stranger-cut");
    let c = client_on(proxy.addr()).await;
    let lock = SharedLock::new(c.clone(), &path).unwrap();
    let held = lock.write().await.unwrap();
    let node = held.node().to_owned();
    // The guard's own watch is on the server before the cut.
    wait_watching(server(), &node, c.session_id().0).await;
    let before = proxy.accepted();
    proxy.cut_all();
    reconnected(&proxy, before, &c).await;
    assert_eq!(held.state(), HoldState::Held);
    client().await.delete(&node, None).await.unwrap();
    turns_lost("the guard", || held.state()).await;
    let released = held.release().await;
    assert!(is_lost_error(&released, &node), "{released:?}");
    assert_drained(&path).await;
}

/// A node deleted while the client is cut off: the reconnection brings the
/// deletion (the watch is set again), and the guard says `Lost`.
#[tokio::test]
async fn a_deletion_during_a_disconnect_is_seen_after_it() {
    let proxy = Proxy::start(&server().connect_string());
    let path = unique_path("stranger-disconnected");
    let c = client_on(proxy.addr()).await;
    let lock = SharedLock::new(c.clone(), &path).unwrap();
    let held = lock.read().await.unwrap();
    let node = held.node().to_owned();
    wait_watching(server(), &node, c.session_id().0).await;
    let before = proxy.accepted();
    proxy.set_blocked(true);
    proxy.cut_all();
    client().await.delete(&node, None).await.unwrap();
    assert_ne!(held.state(), HoldState::Lost, "nothing told it yet");
    proxy.set_blocked(false);
    reconnected(&proxy, before, &c).await;
    turns_lost("the guard", || held.state()).await;
    let released = held.release().await;
    assert!(is_lost_error(&released, &node), "{released:?}");
    assert_drained(&path).await;
}

/// A release right after a stranger deleted the node, on a connection that
/// was cut and came back: `Error::Lost`, whether or not the guard's watch
/// has told it yet.
#[tokio::test]
async fn a_release_after_a_reconnection_reports_a_deleted_node() {
    let proxy = Proxy::start(&server().connect_string());
    let path = unique_path("stranger-release");
    let c = client_on(proxy.addr()).await;
    let lock = SharedLock::new(c.clone(), &path).unwrap();
    let held = lock.write().await.unwrap();
    let node = held.node().to_owned();
    let before = proxy.accepted();
    proxy.cut_all();
    reconnected(&proxy, before, &c).await;
    client().await.delete(&node, None).await.unwrap();
    let released = held.release().await;
    assert!(is_lost_error(&released, &node), "{released:?}");
    assert_drained(&path).await;
}

/// The other side of the rule: a release whose delete was applied but
/// whose answer was lost with the connection finds the node gone when it
/// tries again. That deletion was its own: released, not lost.
#[tokio::test]
async fn a_release_whose_answer_was_lost_counts_as_released() {
    let proxy = Proxy::start(&server().connect_string());
    let path = unique_path("lost-answer");
    let c = client_on(proxy.addr()).await;
    let lock = SharedLock::new(c.clone(), &path).unwrap();
    // A read guard releases with a plain delete.
    let held = lock.read().await.unwrap();
    proxy.cut_after_request(&[op::DELETE]);
    held.release().await.unwrap();
    assert_eq!(proxy.fired(), 1, "the delete's answer was cut off");
    assert_drained(&path).await;
}

/// Revocation requests go through the same kept watch: a request is seen
/// with no future pending, and a deletion after it still turns the guard
/// `Lost` (the watch was set again after the data change).
#[tokio::test]
async fn a_revocation_request_is_seen_without_a_pending_future() {
    let path = unique_path("revoke-kept");
    let lock = support::lock(&path).await;
    let held = lock.write().await.unwrap();
    let node = held.node().to_owned();
    let revoker = support::lock(&path).await;
    assert!(revoker.revoke(&node).await.unwrap());
    eventually("the guard sees the request", LOST_WITHIN, || async {
        held.is_revocation_requested()
    })
    .await;
    assert_eq!(held.state(), HoldState::Held, "a request takes nothing away");
    assert!(tokio::time::timeout(SHORT, held.revocation_requested())
        .await
        .unwrap());
    client().await.delete(&node, None).await.unwrap();
    turns_lost("the revoked guard", || held.state()).await;
    assert!(is_lost_error(&held.release().await, &node));
    assert_drained(&path).await;
}

/// A guard's watch ends with the guard: once its guards are released or
/// dropped and the lock and client are gone, nothing holds the session
/// open (a leaked watch task would keep a clone of the client): it closes,
/// and its ephemeral witness node goes at once.
#[tokio::test]
async fn nothing_outlives_released_and_dropped_guards() {
    let path = unique_path("no-leak");
    let c = client().await;
    let lock = SharedLock::new(c.clone(), &path).unwrap();
    lock.write().await.unwrap().release().await.unwrap();
    let witness = format!("{path}-witness");
    c.create(
        &witness,
        &[],
        &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
    )
    .await
    .unwrap();
    drop(c);
    drop(lock.read().await.unwrap());
    drop(lock);
    assert_drained(&path).await;
    let observer = client().await;
    eventually("the session closed", SHORT, || async {
        observer.check_stat(&witness).await.unwrap().is_none()
    })
    .await;
}

/// A session the caller connected on a multi-thread runtime; guard and
/// lock dropped inside `block_on`, then the runtime.
/// The lock is free at once, not after the session's expiry (10 s here).
#[test]
fn a_guard_dropped_as_its_multi_thread_runtime_ends_is_released() {
    let path = unique_path("runtime-end");
    let rt = support::multi_thread_runtime(2);
    let (node, kept) = rt.block_on(async {
        let c = zk::Client::connector()
            .with_session_timeout(SHORT)
            .connect(&server().connect_string())
            .await
            .unwrap();
        let lock = SharedLock::new(c.clone(), &path).unwrap();
        let guard = lock.write().await.unwrap();
        let node = guard.node().to_owned();
        drop(guard);
        drop(lock);
        // A clone outlives the runtime: the session is not closed by the
        // last client's drop, only the release can free the lock.
        (node, c)
    });
    drop(rt);
    let observer = tokio::runtime::Runtime::new().unwrap();
    observer.block_on(async {
        let other = client().await;
        assert!(
            other.check_stat(&node).await.unwrap().is_none(),
            "the dropped guard's node {node} is still there after its runtime ended"
        );
        let free = SharedLock::new(other, &path).unwrap().try_write().await.unwrap();
        free.expect("the lock is free").release().await.unwrap();
    });
    drop(kept);
}

/// A runtime that shuts down with a guard held in one of its tasks (the
/// lock's last handle goes with that task) does not wait for a release
/// that cannot complete: its session's task is being dropped too.
#[test]
fn a_runtime_shutting_down_with_a_held_guard_does_not_stall() {
    let path = unique_path("runtime-shutdown");
    let rt = support::multi_thread_runtime(2);
    let (held, kept) = rt.block_on(async {
        let c = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(4))
            .connect(&server().connect_string())
            .await
            .unwrap();
        let lock = SharedLock::new(c.clone(), &path).unwrap();
        let (held_tx, held_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let guard = lock.write().await.unwrap();
            let _ = held_tx.send(());
            std::future::pending::<()>().await;
            drop((guard, lock));
        });
        (held_rx.await, c)
    });
    held.unwrap();
    support::shut_down_within(rt, Duration::from_secs(1));
    drop(kept);
}

/// On a current-thread runtime the lock's last handle cannot wait for the
/// releases pending on the caller's session: it says so.
#[test]
fn a_current_thread_runtime_is_warned_about_pending_releases() {
    let logs = Logs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(logs.clone())
        .with_ansi(false)
        .finish();
    let path = unique_path("current-thread");
    tracing::subscriber::with_default(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let c = client().await;
            let lock = SharedLock::new(c, &path).unwrap();
            let guard = lock.write().await.unwrap();
            drop(guard);
            drop(lock);
        });
        // The release completes while the runtime runs.
        rt.block_on(assert_drained(&path));
    });
    let text = logs.text();
    assert!(
        text.contains("cannot wait for them here") && text.contains(&path),
        "no warning about the pending release:\n{text}"
    );
}

/// A `tracing` writer that keeps what it is given.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;

    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

/// The watches the server holds (`wchs`: "Total watches:N").
fn watches_on_server() -> usize {
    let wchs = server().four_letter(0, "wchs").unwrap();
    wchs.lines()
        .find_map(|l| l.strip_prefix("Total watches:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no watch count in {wchs:?}"))
}

/// This process's resident set (`VmRSS`), in KiB.
fn vm_rss_kb() -> u64 {
    support::rss_kb("self").expect("VmRSS in /proc/self/status")
}

/// What keeping a watch on every held node costs: 10,000 write guards held
/// at once on one session, one lock directory each (made beforehand, so
/// each grant is one create and one listing). Prints the growth of the
/// resident set per guard, the requests the server received per grant, the
/// time per grant and per release, and the watches on the server. A
/// measurement, not a check: run it alone, in a release build,
/// `cargo test --release --test faults cost_of_ten_thousand -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement that prints figures; run it alone"]
async fn cost_of_ten_thousand_held_guards_on_one_session() {
    const N: usize = 10_000;
    let base = unique_path("cost");
    // Long sessions: few pings among the counted requests.
    let c = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(30))
        .connect(&server().connect_string())
        .await
        .unwrap();
    let sid = c.session_id().0;
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    c.mkdir(&base, &persistent).await.unwrap();
    let dirs: Vec<_> = (0..N).map(|i| format!("{base}/e{i}")).collect();
    for chunk in dirs.chunks(500) {
        let creates: Vec<_> = chunk.iter().map(|d| c.create(d, &[], &persistent)).collect();
        for create in creates {
            create.await.unwrap();
        }
    }
    let locks: Vec<SharedLock> = dirs
        .iter()
        .map(|d| SharedLock::new(c.clone(), d).unwrap())
        .collect();
    let watches_before = watches_on_server();
    let rss_before = vm_rss_kb();
    let received_before = received_on(sid);
    let started = Instant::now();
    let mut guards = Vec::with_capacity(N);
    for lock in &locks {
        guards.push(lock.write().await.unwrap());
    }
    let granting = started.elapsed();
    // The watches are set in the background after each grant.
    let waited = Instant::now();
    while watches_on_server() < watches_before + N && waited.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let watches = watches_on_server() - watches_before;
    let received = received_on(sid) - received_before;
    let rss_after = vm_rss_kb();
    assert!(guards.iter().all(|g| g.state() == HoldState::Held));
    let started = Instant::now();
    for guard in guards {
        guard.release().await.unwrap();
    }
    let releasing = started.elapsed();
    println!(
        "{N} held guards on one session: {:.0} bytes each (resident set {rss_before} -> {rss_after} KiB), \
         {:.2} requests per grant, {:.3} ms per grant, {:.3} ms per release, {watches} watches on the server",
        (rss_after.saturating_sub(rss_before) * 1024) as f64 / N as f64,
        received as f64 / N as f64,
        granting.as_secs_f64() * 1e3 / N as f64,
        releasing.as_secs_f64() * 1e3 / N as f64,
    );
}

/// A guard granted at its first look (no watch set yet) whose node a
/// stranger deletes at once turns `Lost` within the documented bound: the
/// later of 100 ms (plus a round trip) and the notification.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_granted_at_its_first_look_sees_its_node_deleted_within_the_bound() {
    let path = unique_path("first-look-delete");
    let holder = support::lock(&path).await;
    let stranger = client().await;
    let guard = holder.write().await.unwrap();
    let granted = Instant::now();
    stranger.delete(guard.node(), None).await.unwrap();
    let seen = tokio::time::timeout(SHORT, guard.lost()).await;
    let after = granted.elapsed();
    assert!(seen.is_ok(), "lost() completes");
    assert_eq!(guard.state(), HoldState::Lost);
    assert!(
        after < Duration::from_millis(100) + Duration::from_secs(1),
        "Lost {after:?} after the grant"
    );
    assert!(matches!(guard.release().await, Err(Error::Lost { .. })));
}

/// Two blocking locks on one client the caller connected, each with a
/// runtime of its own: dropping the first (its runtime ends) leaves the
/// second's guards watched, one whose watch was set already and one
/// granted just before, whose first read was not due yet.
#[test]
fn a_guard_on_a_callers_session_stays_watched_when_another_locks_runtime_ends() {
    use zk_rwlock::blocking::SharedLock as BlockingLock;
    let rt = support::multi_thread_runtime(2);
    let (client, stranger) = rt.block_on(async { (client().await, client().await) });
    for first_read_due in [true, false] {
        let (pa, pb) = (unique_path("two-runtimes-a"), unique_path("two-runtimes-b"));
        let a = BlockingLock::with_client(client.clone(), &pa).unwrap();
        let b = BlockingLock::with_client(client.clone(), &pb).unwrap();
        drop(a.write().unwrap());
        let guard = b.write().unwrap();
        if first_read_due {
            rt.block_on(wait_watching(server(), guard.node(), client.session_id().0));
        }
        drop(a);
        rt.block_on(stranger.delete(guard.node(), None)).unwrap();
        blocking_turns_lost(&format!("the guard (first read due: {first_read_due})"), || {
            guard.state()
        });
    }
}

/// A session the caller connected, used first on a current-thread runtime
/// that then stays idle: a guard granted on the session's own runtime
/// still learns of its node's deletion.
#[test]
fn a_guard_sees_its_deletion_though_an_idle_runtime_used_its_session_first() {
    let main = support::multi_thread_runtime(2);
    let (client, stranger) = main.block_on(async { (client().await, client().await) });
    let side = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    side.block_on(async {
        let lock = SharedLock::new(client.clone(), &unique_path("idle-runtime-side")).unwrap();
        lock.write().await.unwrap().release().await.unwrap();
    });
    main.block_on(async {
        let lock = SharedLock::new(client.clone(), &unique_path("idle-runtime-main")).unwrap();
        let guard = lock.write().await.unwrap();
        stranger.delete(guard.node(), None).await.unwrap();
        turns_lost("the guard", || guard.state()).await;
    });
    drop(side);
}

/// A grant made inside a runtime that is shutting down (a blocking task of
/// it drives the acquire; the session runs on another runtime) returns.
#[test]
fn a_grant_inside_a_runtime_that_is_shutting_down_returns() {
    let main = support::multi_thread_runtime(2);
    let client = main.block_on(client());
    let lock = SharedLock::new(client.clone(), &unique_path("grant-in-shutdown")).unwrap();
    let side = support::multi_thread_runtime(2);
    let (shutting, shut) = std::sync::mpsc::channel::<()>();
    let (granted, grant) = std::sync::mpsc::channel();
    side.spawn_blocking(move || {
        let handle = tokio::runtime::Handle::current();
        shut.recv().unwrap();
        // Until a task spawned there is cancelled at once: shutting down.
        let deadline = Instant::now() + SHORT;
        while handle.block_on(handle.spawn(async {})).is_ok() {
            assert!(Instant::now() < deadline, "the runtime never began to shut down");
            std::thread::sleep(Duration::from_millis(5));
        }
        let node = handle.block_on(async { lock.write().await.map(|g| g.node().to_owned()) });
        granted.send(node).unwrap();
    });
    let ending = std::thread::spawn(move || {
        shutting.send(()).unwrap();
        side.shutdown_timeout(SHORT);
    });
    let got = grant.recv_timeout(SHORT);
    assert!(matches!(got, Ok(Ok(_))), "the grant: {got:?}");
    ending.join().unwrap();
}

/// A guard granted at its first look whose session ends before its first
/// read is due is counted lost all the same (by its keeper's failed read),
/// without anyone asking its state: on a session the library connected
/// and on one the caller connected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_whose_session_ends_before_its_first_read_is_counted_lost() {
    let own = support::own_server(Duration::from_millis(20));
    let direct = own.connect_string();
    let timeout = Duration::from_millis(60);
    for library in [true, false] {
        let proxy = Proxy::start(&direct);
        let victim = if library {
            zk_rwlock::connect_client(proxy.addr(), timeout, SHORT)
                .await
                .expect("connect")
        } else {
            zk::Client::connector()
                .with_session_timeout(timeout)
                .connect(proxy.addr())
                .await
                .expect("connect")
        };
        let lock = SharedLock::new(victim.clone(), &unique_path("ended-before-first-read")).unwrap();
        let guard = lock.write().await.unwrap();
        proxy.set_blocked(true);
        proxy.cut_all();
        eventually(
            &format!("the guard counted lost (library session: {library})"),
            SHORT,
            || {
                let stats = lock.stats();
                async move { (stats.holding, stats.lost) == (0, 1) }
            },
        )
        .await;
        assert!(victim.state().is_terminated(), "{:?}", victim.state());
        drop(guard);
    }
}
