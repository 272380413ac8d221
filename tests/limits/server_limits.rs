//! What a ZooKeeper server refuses when it is at a limit of its own, against
//! real servers configured for it: a connection beyond `maxClientCnxns`, a
//! burst of requests through the request throttler, and an ensemble member
//! without a quorum. In each case an acquire is granted or ends with a
//! typed error or a give-up by its deadline: never a hang, never a grant the
//! server did not make, never two writers at once.

use zk_rwlock_fixtures as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::launcher::{ZkCluster, ZkClusterBuilder};
use zk_rwlock::{connect_client, zk, Error, SharedLock};

/// Upper bound for anything that should happen promptly.
const SHORT: Duration = Duration::from_secs(20);
/// The deadline of waiters whose turn comes after others' (on a loaded
/// machine, a queue takes a while).
const LONG: Duration = Duration::from_secs(60);

fn start(builder: ZkClusterBuilder) -> ZkCluster {
    builder.start().unwrap_or_else(|e| {
        panic!(
            "these tests need a real ZooKeeper server: {e}\n\
             install it with `sudo apt-get install -y zookeeper` (or run ./scripts/test.sh, which does)"
        )
    })
}

/// A server that takes 3 connections from one address: the fourth session
/// fails by its connect timeout with `SessionRefused`, whose message names
/// `maxClientCnxns`; the three sessions keep working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_beyond_max_client_cnxns_is_refused_with_a_typed_error() {
    let cluster = start(ZkCluster::builder().setting("maxClientCnxns", "3"));
    let connect = cluster.connect_string();
    let mut sessions = Vec::new();
    for i in 0..3 {
        let client = connect_client(&connect, Duration::from_secs(4), Duration::from_secs(5))
            .await
            .unwrap_or_else(|e| panic!("session {i} of 3: {e}"));
        sessions.push(client);
    }
    let ids: Vec<_> = sessions.iter().map(|c| c.session_id()).collect();

    let connect_timeout = Duration::from_secs(3);
    let started = Instant::now();
    let fourth = connect_client(&connect, Duration::from_secs(4), connect_timeout).await;
    let took = started.elapsed();
    match &fourth {
        Err(e @ Error::SessionRefused { server, timeout, .. }) => {
            let message = e.to_string();
            println!("the fourth connection after {took:?}: {message}");
            assert!(message.contains("maxClientCnxns"), "{message}");
            assert!(message.contains("closed it before answering"), "{message}");
            assert!(server.contains(&cluster.client_port(0).to_string()), "{server}");
            assert_eq!(*timeout, connect_timeout);
        }
        other => panic!("the fourth connection: expected Err(SessionRefused), got {other:?}"),
    }
    assert!(
        took >= connect_timeout && took < connect_timeout + Duration::from_secs(2),
        "failed after {took:?}, the connect timeout is {connect_timeout:?}"
    );

    // The three sessions are untouched: same ids, connected, and they lock.
    for (client, id) in sessions.iter().zip(&ids) {
        assert_eq!(client.session_id(), *id);
        assert_eq!(client.state(), zk::SessionState::SyncConnected);
    }
    let lock = SharedLock::new(sessions[0].clone(), "/server-limits/cnxns").expect("valid path");
    let guard = tokio::time::timeout(SHORT, lock.write())
        .await
        .expect("a write lock within 20 s")
        .expect("a write lock on an existing session");
    let other = SharedLock::new(sessions[1].clone(), "/server-limits/cnxns").expect("valid path");
    assert!(
        other.try_read().await.expect("try_read").is_none(),
        "a reader beside the writer"
    );
    guard.release().await.expect("release");
}

/// A server whose request throttler holds at most 2 requests in the
/// pipeline and answers `Throttled` to any request that waited for it
/// longer than 1 ms (`zookeeper.request_throttle_max_requests`,
/// `zookeeper.throttled_op_wait_time`). A burst of 60 acquires of the write
/// lock over 6 sessions, each with a deadline of 30 s: each one ends
/// granted, given up, or with an error by its deadline; no two writers at
/// once; and nothing is left behind in the directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_acquires_on_a_throttling_server_ends_by_the_deadlines() {
    let cluster = start(
        ZkCluster::builder()
            .jvm_arg("-Dzookeeper.request_throttle_max_requests=2")
            .jvm_arg("-Dzookeeper.throttled_op_wait_time=1")
            .jvm_arg("-Dzookeeper.request_throttle_stall_time=5"),
    );
    let connect = cluster.connect_string();
    const PATH: &str = "/server-limits/throttled";
    const SESSIONS: usize = 6;
    const ACQUIRES: usize = 60;
    let deadline = Duration::from_secs(30);
    let mut locks = Vec::new();
    for _ in 0..SESSIONS {
        let client = connect_client(&connect, Duration::from_secs(10), Duration::from_secs(10))
            .await
            .expect("a session");
        locks.push(SharedLock::new(client, PATH).expect("valid path"));
    }
    let holders = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..ACQUIRES)
        .map(|i| {
            let lock = locks[i % SESSIONS].clone();
            let holders = holders.clone();
            let overlaps = overlaps.clone();
            tokio::spawn(async move {
                let asked = Instant::now();
                let result = lock.write_timeout(deadline).await;
                let ended = asked.elapsed();
                let outcome = match result {
                    Ok(Some(guard)) => {
                        if holders.fetch_add(1, Ordering::SeqCst) != 0 {
                            overlaps.fetch_add(1, Ordering::SeqCst);
                        }
                        tokio::task::yield_now().await;
                        holders.fetch_sub(1, Ordering::SeqCst);
                        match guard.release().await {
                            Ok(()) => "granted".to_owned(),
                            Err(e) => format!("granted, release failed: {e}"),
                        }
                    }
                    Ok(None) => "gave up".to_owned(),
                    Err(e) => format!("error: {e}"),
                };
                (ended, outcome)
            })
        })
        .collect();
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for task in tasks {
        let (ended, outcome) = support::joined(deadline + SHORT, task).await;
        assert!(
            ended < deadline + Duration::from_secs(5),
            "an acquire ended {ended:?} after it began, its deadline is {deadline:?}: {outcome}"
        );
        *outcomes.entry(outcome).or_default() += 1;
    }
    let throttled = cluster.mntr(0, "zk_throttled_ops").unwrap_or(0);
    println!(
        "{ACQUIRES} acquires on a throttling server in {:?}: {outcomes:?}; the server answered \
         {throttled} requests with Throttled",
        started.elapsed()
    );
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two writers at once");
    assert!(
        throttled > 0,
        "the server throttled nothing: the test tests nothing"
    );
    assert!(
        outcomes.get("granted").copied().unwrap_or(0) > 0,
        "no acquire was granted: {outcomes:?}"
    );
    // Nothing orphaned: every node of the burst is gone.
    let observer = connect_client(&connect, Duration::from_secs(10), Duration::from_secs(10))
        .await
        .expect("a session");
    support::eventually("the directory empty", SHORT, || {
        let observer = observer.clone();
        async move {
            match observer.list_children(PATH).await {
                Ok(children) => children.is_empty(),
                Err(zk::Error::NoNode) => true,
                Err(_) => false,
            }
        }
    })
    .await;
}

/// A three-member ensemble with read-only mode enabled loses two members:
/// the third goes read-only. An acquire through it is never granted: a new
/// session fails with `SessionRefused`, and a waiter on a session that was
/// connected before gives up at its deadline. Once a quorum is back, both
/// acquire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_through_a_read_only_member_is_never_granted() {
    let mut cluster = start(
        ZkCluster::builder()
            .members(3)
            .tick_time(Duration::from_secs(1))
            .jvm_arg("-Dreadonlymode.enabled=true"),
    );
    const PATH: &str = "/server-limits/read-only";
    // Member 2 is a follower or the leader; stop the two others.
    let survivor = 2;
    let only = cluster.member_connect_string(survivor);
    let waiter_client = connect_client(&only, Duration::from_secs(20), Duration::from_secs(10))
        .await
        .expect("a session on the third member");
    let waiter = SharedLock::new(waiter_client.clone(), PATH).expect("valid path");
    for i in 0..3 {
        if i != survivor {
            cluster.stop(i).expect("stop a member");
        }
    }
    support::eventually("the third member read-only", SHORT, || {
        let mode = cluster.four_letter(survivor, "srvr").unwrap_or_default();
        async move { mode.contains("read-only") }
    })
    .await;

    // A new session: refused by its connect timeout, with a typed error.
    let started = Instant::now();
    let refused = connect_client(&only, Duration::from_secs(10), Duration::from_secs(3)).await;
    println!(
        "a new session on the read-only member after {:?}: {refused:?}",
        started.elapsed()
    );
    assert!(
        matches!(refused, Err(Error::SessionRefused { .. })),
        "a new session on a read-only member: {refused:?}"
    );
    // The session from before: its acquire waits and gives up at its
    // deadline (or fails with a typed error), never granted.
    let started = Instant::now();
    let attempt = waiter.write_timeout(Duration::from_secs(3)).await;
    let took = started.elapsed();
    println!("an acquire on the session from before after {took:?}: {attempt:?}");
    match &attempt {
        Ok(None) => {}
        Err(e) if !e.is_session_over() => {}
        other => panic!("an acquire through a read-only member: {other:?}"),
    }
    assert!(took < Duration::from_secs(8), "the acquire ended after {took:?}");

    // A quorum again: both acquire.
    for i in 0..3 {
        if i != survivor {
            cluster.start(i).expect("start a member");
        }
    }
    let granted = tokio::time::timeout(SHORT, async {
        loop {
            match waiter.write_timeout(Duration::from_secs(5)).await {
                Ok(Some(guard)) => return guard,
                Ok(None) => {}
                Err(e) if e.is_session_over() => panic!("the session from before ended: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    })
    .await
    .expect("the session from before acquires once a quorum is back");
    granted.release().await.expect("release");
    let fresh = connect_client(
        &cluster.connect_string(),
        Duration::from_secs(10),
        Duration::from_secs(10),
    )
    .await
    .expect("a new session once a quorum is back");
    let lock = SharedLock::new(fresh, PATH).expect("valid path");
    let guard = tokio::time::timeout(SHORT, lock.write())
        .await
        .expect("a write lock within 20 s")
        .expect("a write lock");
    guard.release().await.expect("release");
}

/// A lock whose listing limit lets 10 contenders queue (beside a
/// stranger's node, which counts in the listing's size): the eleventh
/// acquire that finds the lock taken withdraws its node and fails with
/// `ListingTooLarge` at once, naming `jute.maxbuffer` and counting the
/// contenders, not the stranger's node; those queued still wait and are
/// granted in turn; once the queue is short again an acquire queues.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_behind_a_listing_over_the_limit_withdraws_with_a_typed_error() {
    let cluster = start(ZkCluster::builder());
    let connect = cluster.connect_string();
    const PATH: &str = "/server-limits/listing";
    let client = connect_client(&connect, Duration::from_secs(10), Duration::from_secs(10))
        .await
        .expect("a session");
    // Names of this identity are 48 bytes: 10 of them, the stranger's
    // node, and the reply's header and stat.
    const STRANGER: &str = "notes";
    let mut listing = vec!["x".repeat(48); 10];
    listing.push(STRANGER.to_owned());
    let limit = zk_rwlock::limits::listing_size(&listing);
    let lock = SharedLock::builder(client.clone(), PATH)
        .identity("vm")
        .max_listing_size(Some(limit))
        .build()
        .expect("a lock");
    let holder = lock.write().await.expect("the first writer holds");
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    client
        .create(&format!("{PATH}/{STRANGER}"), b"", &persistent)
        .await
        .expect("the stranger's node");
    // Each waiter releases as soon as it is granted: the next in line
    // (by sequence, not by spawning order) waits on it.
    let waiters: Vec<_> = (0..9)
        .map(|_| {
            let lock = lock.clone();
            tokio::spawn(async move {
                match lock.write_timeout(LONG).await {
                    Ok(Some(guard)) => guard.release().await.map(|()| true),
                    Ok(None) => Ok(false),
                    Err(e) => Err(e),
                }
            })
        })
        .collect();
    support::eventually("10 contenders and the stranger's node", SHORT, || {
        let client = client.clone();
        async move { client.list_children(PATH).await.map_or(0, |c| c.len()) == 11 }
    })
    .await;

    let started = Instant::now();
    let refused = lock.write_timeout(SHORT).await;
    let took = started.elapsed();
    match &refused {
        Err(
            e @ Error::ListingTooLarge {
                path,
                contenders,
                size,
                limit: l,
            },
        ) => {
            println!("the eleventh acquire after {took:?}: {e}");
            assert_eq!(path, PATH);
            assert_eq!(*contenders, 11);
            assert!(size > l && *l == limit, "{size} > {l}");
            assert!(e.to_string().contains("jute.maxbuffer"), "{e}");
        }
        other => panic!("the eleventh acquire: expected Err(ListingTooLarge), got {other:?}"),
    }
    assert!(took < Duration::from_secs(5), "refused after {took:?}");
    let children = client.list_children(PATH).await.expect("listing");
    assert_eq!(children.len(), 11, "the refused node withdrawn: {children:?}");

    // The queue drains in order; then an acquire queues again.
    holder.release().await.expect("release");
    for waiter in waiters {
        let granted = support::joined(LONG, waiter).await.expect("a waiter");
        assert!(granted, "a waiter not granted within its deadline");
    }
    let again = lock
        .write_timeout(SHORT)
        .await
        .expect("an acquire on a short queue");
    assert!(again.is_some(), "granted");
}

/// A server that never answers a lock's listings (the proxy cuts the
/// connection after each one, as a client does when an overloaded server
/// answers nothing within its connection timeout) while the session lives
/// on: the acquire retries for twice the session timeout, then fails with
/// `NoAnswer`, whose message says what to do, and withdraws its node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_that_never_gets_an_answer_fails_with_a_typed_error() {
    use support::proxy::{op, Proxy};
    let cluster = start(ZkCluster::builder());
    const PATH: &str = "/server-limits/no-answer";
    let proxy = Proxy::start(&cluster.connect_string());
    let session_timeout = Duration::from_secs(4);
    let client = connect_client(proxy.addr(), session_timeout, Duration::from_secs(10))
        .await
        .expect("a session");
    let session = client.session_id();
    let lock = SharedLock::new(client.clone(), PATH).expect("valid path");
    proxy.cut_after_every_request(&[op::GET_CHILDREN, op::GET_CHILDREN2]);
    let started = Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(30), lock.write())
        .await
        .expect("the acquire ends within 30 s");
    let took = started.elapsed();
    proxy.cut_after_request(&[]);
    match &result {
        Err(
            e @ Error::NoAnswer {
                path, retried_for, ..
            },
        ) => {
            println!("after {took:?} and {} connections: {e}", proxy.accepted());
            assert_eq!(path, PATH);
            assert_eq!(*retried_for, session_timeout * 2);
            assert!(e.to_string().contains("fewer waiters"), "{e}");
        }
        other => panic!("expected Err(NoAnswer), got {other:?} after {took:?}"),
    }
    assert!(took >= session_timeout * 2, "gave up after {took:?}");
    assert!(proxy.accepted() > 2, "the connection was cut again and again");
    assert_eq!(client.session_id(), session, "the session lived on");
    // Nothing left behind once the connection holds.
    support::eventually("the node withdrawn", SHORT, || {
        let client = client.clone();
        async move {
            match client.list_children(PATH).await {
                Ok(children) => children.is_empty(),
                Err(zk::Error::NoNode) => true,
                Err(_) => false,
            }
        }
    })
    .await;
}

/// A refused acquire whose withdrawal the server refuses (the directory's
/// ACL gives no DELETE) leaves its node queued: it says so with the
/// deletion's error, as a timed-out acquire does, not `ListingTooLarge`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_acquire_whose_withdrawal_is_refused_says_so() {
    let cluster = start(ZkCluster::builder());
    let connect = cluster.connect_string();
    const PATH: &str = "/server-limits/no-delete";
    let client = connect_client(&connect, Duration::from_secs(10), Duration::from_secs(10))
        .await
        .expect("a session");
    let dir_acls = [zk::Acl::new(
        zk::Permission::READ | zk::Permission::CREATE | zk::Permission::WRITE,
        zk::AuthId::anyone(),
    )];
    let builder = || {
        SharedLock::builder(client.clone(), PATH)
            .identity("vm")
            .directory_acls(&dir_acls)
    };
    let open = builder().build().expect("a lock");
    let limited = builder()
        .max_listing_size(Some(zk_rwlock::limits::listing_size(&["x".repeat(48)])))
        .build()
        .expect("a lock");
    let _holder = open.write().await.expect("held");
    let timed_out = open.write_timeout(Duration::from_secs(1)).await;
    assert!(matches!(timed_out, Err(Error::NoAuth { .. })), "{timed_out:?}");
    let refused = limited.write_timeout(SHORT).await;
    assert!(matches!(refused, Err(Error::NoAuth { .. })), "{refused:?}");
    let children = client.list_children(PATH).await.expect("listing");
    assert_eq!(children.len(), 3, "both withdrawals refused: {children:?}");
}
