//! What other clients, ACLs, outages and a program's exit can do to the
//! lock, each against a real server: a stray write on a holder's node,
//! contenders of different identities, deadlines while the server is down,
//! guards dropped outside a runtime or as the program ends, and events
//! that arrive out of order after a reconnect.

use zk_rwlock_testkit as support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::proxy::Proxy;
use support::{
    children, client, client_on, eventually, joined, own_server, server, unique_path, wait_contenders,
};
use zk_rwlock::{zk, ContenderState, Error, SharedLock, GIVE_UP_SLACK, TRY_TIMEOUT};

const SHORT: Duration = Duration::from_secs(10);

/// Anyone may write to a contender node (zkCli's `set`, a monitoring tool,
/// the holder's own code through `client()`): the waiter that watches it
/// sees a data change, which is also what a release's mark looks like. It
/// must check that the node is gone before it takes the lock.
#[tokio::test]
async fn a_data_write_on_the_holders_node_grants_nobody() {
    let path = unique_path("stray-write");
    let holder_lock = support::lock(&path).await;
    let holder = holder_lock.write().await.unwrap();
    let waiter_lock = support::lock(&path).await;
    let waiter_session = waiter_lock.client().session_id().0;
    let waiter = tokio::spawn(async move { waiter_lock.write().await });
    let node = holder.node().to_owned();
    eventually("the waiter watches the holder", SHORT, || async {
        support::watches(server(), &node, waiter_session)
    })
    .await;
    let stranger = client().await;
    for round in 0..3 {
        stranger.set_data(&node, b"hello", None).await.unwrap();
        // The write fired the waiter's watch; it checks the node, finds it
        // still there and watches it again (or, wrongly, takes the lock).
        eventually("the waiter watches the holder again", SHORT, || async {
            waiter.is_finished() || support::watches(server(), &node, waiter_session)
        })
        .await;
        assert!(
            !waiter.is_finished(),
            "round {round}: a data write on the holder's node granted the waiter while the holder held"
        );
    }
    assert!(holder.is_held());
    holder.release().await.unwrap();
    let granted = joined(SHORT, waiter).await.unwrap();
    granted.release().await.unwrap();
    support::assert_drained(&path).await;
}

/// Two digest users share one lock whose directory is open but whose
/// contender nodes are `creator_all`: neither may read the other's node,
/// and `exists` watches need no permission, so both can wait on each other.
#[tokio::test]
async fn contenders_of_different_identities_watch_each_others_nodes() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("zk_rwlock=debug")
        .with_test_writer()
        .try_init();
    let path = unique_path("identities");
    let admin = client().await;
    support::mkdir_open(&admin, &path).await;
    let connect = |user: &'static str| async move {
        zk::Client::connector()
            .with_session_timeout(Duration::from_secs(4))
            .with_auth("digest", user.as_bytes())
            .connect(&server().connect_string())
            .await
            .unwrap()
    };
    let alice = SharedLock::builder(connect("alice:secret").await, &path)
        .acls(&zk::Acls::creator_all())
        .build()
        .unwrap();
    let bob = SharedLock::builder(connect("bob:secret").await, &path)
        .acls(&zk::Acls::creator_all())
        .build()
        .unwrap();
    // Bob's node is not readable by Alice.
    let held = bob.write().await.unwrap();
    assert!(matches!(
        alice.client().get_data(held.node()).await,
        Err(zk::Error::NoAuth)
    ));
    held.release().await.unwrap();
    for round in 0..3 {
        let (first, second) = if round % 2 == 0 {
            (&alice, &bob)
        } else {
            (&bob, &alice)
        };
        let g1 = first.write().await.unwrap();
        let writer = tokio::spawn({
            let second = second.clone();
            async move { second.write().await }
        });
        wait_contenders(&alice, 2).await;
        let reader = tokio::spawn({
            let first = first.clone();
            async move { first.read().await }
        });
        wait_contenders(&alice, 3).await;
        assert!(!writer.is_finished() && !reader.is_finished());
        g1.release().await.unwrap();
        let g2 = joined(SHORT, writer)
            .await
            .expect("the other identity's writer is granted");
        assert!(!reader.is_finished(), "the reader waits for the writer");
        g2.release().await.unwrap();
        joined(SHORT, reader).await.unwrap().release().await.unwrap();
    }
    support::assert_drained(&path).await;
}

/// `*_timeout`, `try_*` and `exec --timeout` return by their deadline (plus
/// `GIVE_UP_SLACK`) when the server goes away while they wait; the node is
/// deleted after the client reconnects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_hold_while_the_server_is_down() {
    let mut zk = own_server(Duration::from_millis(500));
    let servers = zk.connect_string();
    let path = unique_path("deadline");
    let session = Duration::from_secs(8);
    let holder_lock = SharedLock::new(
        zk_rwlock::connect_client(&servers, session, SHORT).await.unwrap(),
        &path,
    )
    .unwrap();
    let holder = holder_lock.write().await.unwrap();
    let waiter = SharedLock::new(
        zk_rwlock::connect_client(&servers, session, SHORT).await.unwrap(),
        &path,
    )
    .unwrap();
    let timeout = Duration::from_secs(2);
    let timed = tokio::spawn({
        let waiter = waiter.clone();
        async move {
            let started = Instant::now();
            let got = waiter.write_timeout(timeout).await;
            (got.map(|g| g.is_some()), started.elapsed())
        }
    });
    wait_contenders(&holder_lock, 2).await;
    zk.kill(0).unwrap();
    let (got, took) = joined(SHORT * 2, timed).await;
    assert!(matches!(got, Ok(false)), "timed out without the lock: {got:?}");
    let bound = timeout + GIVE_UP_SLACK + Duration::from_millis(500);
    assert!(
        took <= bound,
        "write_timeout(2s) took {took:?} with the server down (bound {bound:?})"
    );

    let started = Instant::now();
    let tried = waiter.try_read().await;
    let took = started.elapsed();
    assert!(matches!(tried, Ok(None)), "{tried:?}");
    let bound = TRY_TIMEOUT + GIVE_UP_SLACK + Duration::from_millis(500);
    assert!(
        took <= bound,
        "try_read took {took:?} with the server down (bound {bound:?})"
    );

    // Back again: the withdrawn nodes go once the waiter has reconnected;
    // the holder keeps its lock.
    zk.start(0).unwrap();
    let observer = client_on(&servers).await;
    let holder_name = holder.node().rsplit('/').next().unwrap().to_owned();
    eventually("only the holder's node is left", SHORT * 2, || async {
        children(&observer, &path).await == vec![holder_name.clone()]
    })
    .await;
    assert!(holder.is_held());
    holder.release().await.unwrap();
}

/// A guard dropped on a plain thread, outside any runtime, is released.
#[tokio::test]
async fn an_async_guard_dropped_outside_a_runtime_is_released() {
    let path = unique_path("plain-thread");
    for own_client in [false, true] {
        let lock = if own_client {
            support::lock(&path).await
        } else {
            SharedLock::connect(&server().connect_string(), &path)
                .await
                .unwrap()
        };
        let guard = lock.write().await.unwrap();
        std::thread::spawn(move || drop(guard)).join().unwrap();
        let other = support::lock(&path).await;
        let started = Instant::now();
        eventually("the dropped guard's lock is free", SHORT, || async {
            match other.try_write().await {
                Ok(Some(g)) => g.release().await.is_ok(),
                _ => false,
            }
        })
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "released after {:?} (own client: {own_client})",
            started.elapsed()
        );
    }
}

/// The environment variable that makes this test binary play a program
/// that ends while its guard is held (see `child`).
const CHILD: &str = "ZK_RWLOCK_HARDENING_CHILD";

/// A program ends normally with a guard held: dropped at the end of
/// `block_on` (what `#[tokio::main]` returning does), dropped after its
/// runtime, or a blocking guard. Others get the lock within 1 s of the
/// program's exit, not after the session timeout (10 s by default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_dropped_as_the_program_ends_is_released() {
    for how in ["end-of-block-on", "after-the-runtime", "blocking"] {
        let path = unique_path(how);
        let output = tokio::task::spawn_blocking({
            let path = path.clone();
            move || {
                Command::new(std::env::current_exe().unwrap())
                    .args(["--exact", "child", "--nocapture", "--test-threads", "1"])
                    .env(CHILD, format!("{how} {} {path}", server().connect_string()))
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .output()
                    .unwrap()
            }
        })
        .await
        .unwrap();
        let exited = Instant::now();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{how}: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            stdout.contains("HELD "),
            "{how}: the child never held the lock: {stdout}"
        );
        let other = support::lock(&path).await;
        eventually(&format!("{how}: the lock is free"), SHORT * 2, || async {
            match other.try_write().await {
                Ok(Some(g)) => g.release().await.is_ok(),
                _ => false,
            }
        })
        .await;
        assert!(
            exited.elapsed() < Duration::from_secs(1),
            "{how}: the lock was free only {:?} after the program ended",
            exited.elapsed()
        );
    }
}

/// The child program of `a_guard_dropped_as_the_program_ends_is_released`;
/// does nothing unless that test runs it.
#[test]
fn child() {
    let Ok(spec) = std::env::var(CHILD) else { return };
    let mut words = spec.split(' ');
    let (how, servers, path) = (
        words.next().unwrap().to_owned(),
        words.next().unwrap().to_owned(),
        words.next().unwrap().to_owned(),
    );
    match how.as_str() {
        "end-of-block-on" => {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(async {
                let lock = SharedLock::connect(&servers, &path).await.unwrap();
                let guard = lock.write().await.unwrap();
                println!("HELD {}", guard.node());
            });
        }
        "after-the-runtime" => {
            let rt = tokio::runtime::Runtime::new().unwrap();
            let guard = rt.block_on(async {
                let lock = SharedLock::connect(&servers, &path).await.unwrap();
                lock.write().await.unwrap()
            });
            println!("HELD {}", guard.node());
            drop(rt);
            drop(guard);
        }
        "blocking" => {
            let lock = zk_rwlock::blocking::SharedLock::connect(&servers, &path).unwrap();
            let guard = lock.write().unwrap();
            println!("HELD {}", guard.node());
            drop(lock);
            drop(guard);
        }
        other => panic!("unknown child scenario {other}"),
    }
}

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

/// A request in flight when the connection breaks may have been applied,
/// whatever error the client hands it: `ConnectionLoss`, an I/O error, or
/// (here) `UnexpectedError`, when the client drops a connection that sent it
/// a reply it never asked for. A create is then looked for by its token, a
/// release or a withdrawal retried: nothing is left to block the lock for
/// the rest of the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbled_reply_strands_no_node() {
    use support::proxy::op;
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
    eventually("only the holder's node is left", SHORT, || async {
        children(&observer, &path).await == vec![holder_name.clone()]
    })
    .await;
    assert_eq!(proxy.fired(), 3);
    holder.release().await.unwrap();
    support::assert_drained(&path).await;
}

/// A waiter that only a release can grant (its watched writer has others
/// before it) has no watch on its own node: the read of the release record
/// reads its node too, so a waiter whose node someone deleted is never
/// granted by the release.
#[tokio::test]
async fn a_release_does_not_grant_a_waiter_whose_node_is_gone() {
    let path = unique_path("release-gone");
    let support::WriterChain {
        first,
        second,
        third,
        queue,
        ..
    } = support::writer_chain(&path).await;
    // The third writer's node goes; nothing tells it yet.
    client().await.delete(&queue[2].path, None).await.unwrap();
    first.release().await.unwrap();
    let second = joined(SHORT, second).await.unwrap();
    // The second writer waited: it releases with the record naming it.
    second.release().await.unwrap();
    match joined(SHORT, third).await {
        Err(Error::Lost { node }) => assert_eq!(node, queue[2].path),
        other => panic!("a writer whose node was deleted got {other:?}"),
    }
    support::assert_drained(&path).await;
}
