//! The acquire driver against a real server: how it reports the end of a
//! session that a waiter learns of from its watches, how it behaves
//! across interruptions of the connection, and the request a waiter lists
//! the directory with (a plain `getChildren`).

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::proxy::{op, Proxy};
use support::{eventually, joined, server, unique_path, wait_contenders};
use zk_rwlock::{zk, Error, SharedLock};

const WITHIN: Duration = Duration::from_secs(30);

/// Sets `n` exists-watches on paths that do not exist, through `client`,
/// and returns them (a watch dropped is removed again). Every one of them
/// receives the session's end, as the acquire's own watches do: the client
/// hands that event to each watch before it publishes the new session state.
async fn idle_watches(client: &zk::Client, tag: &str, n: usize) -> Vec<zk::OneshotWatcher> {
    let mut kept = Vec::with_capacity(n);
    let paths: Vec<String> = (0..n).map(|i| format!("/review-nowhere-{tag}-{i}")).collect();
    for batch in paths.chunks(2_000) {
        let requests: Vec<_> = batch.iter().map(|p| client.check_and_watch_stat(p)).collect();
        for request in requests {
            let (stat, watcher) = request.await.expect("exists watch");
            assert!(stat.is_none());
            kept.push(watcher);
        }
    }
    kept
}

/// Two locks on the directory `path` (made, open), each with nodes only
/// its own identity may read (`creator_all`): bob's session straight to the
/// server, alice's to `alice_at` (the server, or a proxy to it).
async fn locks_that_cannot_read_each_other(path: &str, alice_at: &str) -> (SharedLock, SharedLock) {
    let admin = support::client().await;
    support::mkdir_open(&admin, path).await;
    let connect = |user: &'static str, to: String| async move {
        zk::Client::connector()
            .with_session_timeout(Duration::from_secs(8))
            .with_auth("digest", user.as_bytes())
            .connect(&to)
            .await
            .unwrap()
    };
    let lock = |client| {
        SharedLock::builder(client, path)
            .acls(&zk::Acls::creator_all())
            .build()
            .unwrap()
    };
    let bob = lock(connect("bob:secret", server().connect_string()).await);
    let alice = lock(connect("alice:secret", alice_at.to_owned()).await);
    (bob, alice)
}

/// A waiter that may not read the node it waits on polls it with `exists`
/// (its watch is refused), and keeps waiting while the holder holds: also
/// on a server that checks READ for `exists` of a node that is there
/// (ZooKeeper 3.7.3, 3.8.4, 3.9.2 and later answer such a look `NoAuth`,
/// which says the node is there). It is granted once the holder releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polling_waiter_waits_while_the_holder_holds_and_is_granted_on_its_release() {
    let path = unique_path("poll-holds");
    let (bob, alice) = locks_that_cannot_read_each_other(&path, &server().connect_string()).await;
    let held = bob.write().await.unwrap();
    assert!(matches!(
        alice.client().get_data(held.node()).await,
        Err(zk::Error::NoAuth)
    ));
    let waiter = tokio::spawn({
        let alice = alice.clone();
        async move { alice.write().await }
    });
    wait_contenders(&bob, 2).await;
    // Its looks reach the server while bob holds (a look every 200 ms at
    // most; the session's pings are 2.7 s apart): five more requests are
    // at least three looks.
    let sid = alice.client().session_id().0;
    let before = support::received_on(sid);
    eventually("alice looks at bob's node", WITHIN, || async {
        support::received_on(sid) >= before + 5
    })
    .await;
    assert!(!waiter.is_finished(), "the waiter waits while bob holds");
    held.release().await.unwrap();
    let guard = joined(WITHIN, waiter).await.expect("alice is granted");
    guard.release().await.unwrap();
}

/// On a server that checks READ for `exists` of a node that is there
/// (ZooKeeper 3.7.3, 3.8.4, 3.9.2 and later, ZOOKEEPER-2590: the proxy
/// answers as such a server does), a waiter that may not read the node it
/// waits on takes the refusal of its looks as "there": it waits while the
/// holder holds, and is granted once the holder releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polling_waiter_whose_looks_are_refused_while_the_node_is_there_waits_and_is_granted() {
    let path = unique_path("poll-refused");
    let proxy = Proxy::start(&server().connect_string());
    let (bob, alice) = locks_that_cannot_read_each_other(&path, proxy.addr()).await;
    let held = bob.write().await.unwrap();
    proxy.refuse_exists_of(held.node());
    let waiter = tokio::spawn({
        let alice = alice.clone();
        async move { alice.write().await }
    });
    eventually("alice's looks at bob's node are refused", WITHIN, || async {
        proxy.refused_exists() >= 3
    })
    .await;
    assert!(!waiter.is_finished(), "the waiter waits while bob holds");
    held.release().await.unwrap();
    let guard = joined(WITHIN, waiter).await.expect("alice is granted");
    guard.release().await.unwrap();
}

/// A waiter whose session expires learns it from the session event that its
/// own node's watch (or the watched node's) delivers. It must fail with
/// `SessionExpired` (or `SessionClosed`), never with `Lost`: its node was
/// not deleted by anyone, its session ended. The event itself says so; the
/// client's published state may lag behind it (the client dispatches the
/// event to every watch of the session first). Other watches of the same
/// session widen that gap; without them it is narrower, but still there
/// whenever the session and the acquire run on different threads (as with
/// `SharedLock::connect` and the blocking API).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_session_expires_fails_with_session_expired_not_lost() {
    let direct = server().connect_string();
    for round in 0..3 {
        let path = unique_path("review-expiry-kind");
        let proxy = Proxy::start(&direct);
        let holder_lock = support::lock(&path).await;
        let holder = holder_lock.write().await.expect("holder");
        // The session runs on the library's own runtime, the acquire on the
        // test's: the acquire reads the session state while the client is
        // still busy handing out the event.
        let victim = SharedLock::connect(proxy.addr(), &path).await.expect("victim");
        let session = victim.client().session_id().0;
        let _idle = idle_watches(victim.client(), &format!("{}-{round}", std::process::id()), 3_000).await;
        let waiter = tokio::spawn({
            let victim = victim.clone();
            async move { victim.write().await.map(|g| g.node().to_owned()) }
        });
        wait_contenders(&holder_lock, 2).await;
        let node = holder.node().to_owned();
        eventually("the waiter watches the holder", WITHIN, || async {
            support::watches(server(), &node, session)
        })
        .await;
        support::expire_behind(&proxy, victim.client(), &direct).await;
        match joined(WITHIN, waiter).await {
            Err(Error::SessionExpired | Error::SessionClosed) => {}
            other => {
                let then = victim.client().state();
                eventually("the client publishes the session's end", WITHIN, || async {
                    victim.client().state().is_terminated()
                })
                .await;
                panic!(
                    "round {round}: a waiter whose session expired got {other:?} \
                     (the client's state was {then:?} as it returned, then {:?})",
                    victim.client().state()
                )
            }
        }
        holder.release().await.expect("release");
    }
}

/// A waiter that cannot read the node it waits on polls it. Cuts of its
/// connection while it polls end its wait (a change of the session's
/// state) and start the polling again: it is still granted once the node
/// is gone, and its node is still the only one it has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polling_waiter_survives_cut_connections_and_is_granted() {
    let path = unique_path("poll-cut");
    let proxy = Proxy::start(&server().connect_string());
    let (bob, alice) = locks_that_cannot_read_each_other(&path, proxy.addr()).await;
    let held = bob.write().await.unwrap();
    assert!(matches!(
        alice.client().get_data(held.node()).await,
        Err(zk::Error::NoAuth)
    ));
    let waiter = tokio::spawn({
        let alice = alice.clone();
        async move { alice.write().await }
    });
    wait_contenders(&bob, 2).await;
    for _ in 0..3 {
        let accepted = proxy.accepted();
        proxy.cut_all();
        eventually("alice reconnects", WITHIN, || async {
            proxy.accepted() > accepted
        })
        .await;
        eventually("alice is connected", WITHIN, || async {
            alice.client().state() == zk::SessionState::SyncConnected
        })
        .await;
        assert!(!waiter.is_finished(), "the waiter waits while bob holds");
    }
    held.release().await.unwrap();
    let guard = joined(WITHIN, waiter).await.expect("alice is granted");
    assert_eq!(bob.contenders().await.unwrap().len(), 1);
    guard.release().await.unwrap();
    support::assert_drained(&path).await;
}

/// A waiter whose own node is written to (a stranger's write, as a
/// revocation request is) lists the directory again, with a plain
/// `getChildren` (op 8, what the proxy's `op::GET_CHILDREN` cuts after),
/// not `getChildren2` (op 12): only the create's listing asks for the
/// directory's stat. (So the cuts `reconnects`' storm arms on
/// `op::GET_CHILDREN` reach the wait's listings.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiters_listing_is_a_plain_get_children() {
    let proxy = Proxy::start(&server().connect_string());
    let path = unique_path("driver-list-op");
    let holder_lock = support::lock(&path).await;
    let held = holder_lock.write().await.expect("the first writer holds");
    let waiter_lock = SharedLock::new(support::client_on(proxy.addr()).await, &path).expect("a lock");
    let session = waiter_lock.client().session_id().0;
    let waiter = tokio::spawn({
        let l = waiter_lock.clone();
        async move { l.write().await }
    });
    wait_contenders(&holder_lock, 2).await;
    let queue = holder_lock.contenders().await.expect("contenders");
    let mine = queue[1].path.clone();
    // The waiter watches the holder and its own node: it waits.
    support::wait_watching(server(), held.node(), session).await;
    support::wait_watching(server(), &mine, session).await;
    proxy.cut_after_request(&[op::GET_CHILDREN]);
    // A stranger's write to the waiter's node fires (and so removes) its
    // watch on it: the waiter lists again, then watches its node again.
    support::client()
        .await
        .set_data(&mine, b"not a revocation request", None)
        .await
        .expect("a write to the waiter's node");
    support::wait_watching(server(), &mine, session).await;
    proxy.cut_after_request(&[]);
    let fired = proxy.fired();
    held.release().await.expect("release");
    let granted = joined(WITHIN, waiter).await.expect("the waiter is granted");
    granted.release().await.expect("release");
    support::assert_drained(&path).await;
    assert_eq!(
        fired, 1,
        "the waiter lists again (it watches its node again) with a plain getChildren (op 8), \
         on which the cut was armed"
    );
}
