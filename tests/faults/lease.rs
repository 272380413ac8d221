//! The lease: a guard knows until when no one else can hold its lock, and
//! that moment comes before the server really expires the session. Each
//! test partitions a holder from its server with a proxy that stops
//! forwarding without closing anything, and measures, on one monotonic
//! clock, the holder's lease deadline against the moment the server
//! deleted the holder's node (seen by a watch from another session) and
//! the moment the next writer was granted.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::proxy::Proxy;
use tokio::time::Instant;
use zk_rwlock::{zk, HoldState, SharedLock};
use zk_rwlock_fixtures::launcher::ZkCluster;

const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
const WITHIN: Duration = Duration::from_secs(30);

/// What one partition showed, as offsets from the holder's lease deadline.
#[derive(Debug)]
struct Partition {
    /// When the guard became suspended (negative: before the deadline).
    suspended: f64,
    /// When `lost()` completed.
    lost: f64,
    /// When the server's deletion of the node was seen.
    expired: f64,
    /// When the next writer was granted.
    granted: f64,
}

/// Seconds from `deadline` to `t` (negative if `t` is earlier).
fn offset(t: Instant, deadline: Instant) -> f64 {
    if t >= deadline {
        (t - deadline).as_secs_f64()
    } else {
        -(deadline - t).as_secs_f64()
    }
}

/// Holds a write lock on `path` through a proxy to `holder_at`, freezes the
/// proxy while another session on `other_at` waits for the lock, and
/// measures.
async fn partition(holder_at: &str, other_at: &str, path: &str) -> Partition {
    let proxy = Proxy::start(holder_at);
    let holder = zk::Client::connector()
        .with_session_timeout(SESSION_TIMEOUT)
        .connect(proxy.addr())
        .await
        .expect("holder connects");
    let lock = SharedLock::new(holder, path).unwrap();
    let guard = lock.write().await.unwrap();
    assert_eq!(guard.state(), HoldState::Held);
    let deadline = guard.lease_deadline();
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    assert!(
        left > SESSION_TIMEOUT / 2 && left <= SESSION_TIMEOUT,
        "a fresh lease runs most of a session timeout: {left:?} left"
    );

    let other = SharedLock::new(support::client_on(other_at).await, path).unwrap();
    let waiter = {
        let other = other.clone();
        tokio::spawn(async move {
            let g = other.write().await.unwrap();
            (Instant::now(), g)
        })
    };
    support::wait_contenders(&other, 2).await;
    let observer = support::client_on(other_at).await;
    let (stat, watcher) = observer.check_and_watch_stat(guard.node()).await.unwrap();
    assert!(stat.is_some(), "the holder's node exists");
    let deleted = tokio::spawn(async move {
        let event = watcher.changed().await;
        assert_eq!(event.event_type, zk::EventType::NodeDeleted);
        Instant::now()
    });

    // The lease keeps moving while connected; read it once more just
    // before the partition, then it can only stay where it is.
    proxy.freeze();
    let deadline = Instant::from_std(guard.lease_deadline());

    let state = tokio::time::timeout(WITHIN, guard.suspended())
        .await
        .expect("the holder notices the partition");
    let suspended = Instant::now();
    assert_eq!(state, HoldState::Suspended, "suspended before the lease runs out");
    assert!(guard.is_held(), "a suspended guard still holds");
    assert_eq!(
        Instant::from_std(guard.lease_deadline()),
        deadline,
        "no answers, no renewal"
    );
    tokio::time::timeout(WITHIN, guard.lost())
        .await
        .expect("the lease runs out");
    let lost = Instant::now();
    assert_eq!(guard.state(), HoldState::Lost);
    assert!(!guard.is_held());

    let expired = support::joined(WITHIN, deleted).await;
    let (granted, next) = support::joined(WITHIN, waiter).await;
    next.release().await.unwrap();
    // Healing the partition does not bring the guard back.
    proxy.thaw();
    assert_eq!(guard.state(), HoldState::Lost);
    drop(guard);
    Partition {
        suspended: offset(suspended, deadline),
        lost: offset(lost, deadline),
        expired: offset(expired, deadline),
        granted: offset(granted, deadline),
    }
}

fn check(runs: &[Partition], label: &str) {
    assert!(!runs.is_empty());
    for run in runs {
        assert!(run.suspended < 0.0, "suspended after the deadline: {run:?}");
        assert!(run.lost >= 0.0, "lost before the deadline: {run:?}");
        assert!(
            run.lost < 0.5,
            "lost() completes at the deadline, not long after: {run:?}"
        );
        assert!(
            run.expired > 0.0,
            "the server expired the session before the lease deadline: {run:?}"
        );
        assert!(run.granted > 0.0, "granted before the lease deadline: {run:?}");
    }
    let mut margins: Vec<f64> = runs.iter().map(|r| r.expired).collect();
    margins.sort_by(f64::total_cmp);
    let ms = |s: f64| format!("{:.0} ms", s * 1000.0);
    eprintln!(
        "lease margin ({label}, session timeout {SESSION_TIMEOUT:?}, {} partitions): server expiry seen \
         {} / {} / {} (min / median / max) after the lease deadline; suspended {} before it; \
         next writer granted {} after it",
        runs.len(),
        ms(margins[0]),
        ms(margins[margins.len() / 2]),
        ms(margins[margins.len() - 1]),
        ms(-runs.iter().map(|r| r.suspended).fold(f64::NEG_INFINITY, f64::max)),
        ms(runs.iter().map(|r| r.granted).fold(f64::INFINITY, f64::min)),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_ends_before_the_server_expires_the_session() {
    let server = support::server().connect_string();
    // Partitions in parallel, each with its own proxy and lock.
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let server = server.clone();
            tokio::spawn(async move {
                // Staggered, so that the partitions fall at different
                // points of the ping cycle.
                tokio::time::sleep(Duration::from_millis(97 * i)).await;
                partition(&server, &server, &support::unique_path("lease")).await
            })
        })
        .collect();
    let mut runs = Vec::new();
    for task in tasks {
        runs.push(support::joined(2 * WITHIN, task).await);
    }
    check(&runs, "standalone server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_ends_before_the_leader_expires_a_session_held_by_a_follower() {
    let cluster = tokio::task::spawn_blocking(|| ZkCluster::ensemble(3))
        .await
        .unwrap()
        .unwrap_or_else(|e| {
            panic!("this test needs a real ZooKeeper ensemble: {e}\ninstall it with `sudo apt-get install -y zookeeper`")
        });
    let leader = cluster.leader().expect("an ensemble has a leader");
    let follower = (0..3).find(|&i| i != leader).unwrap();
    let (at_follower, at_leader) = (
        cluster.member_connect_string(follower),
        cluster.member_connect_string(leader),
    );
    let tasks: Vec<_> = (0..3)
        .map(|i| {
            let (at_follower, at_leader) = (at_follower.clone(), at_leader.clone());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(131 * i)).await;
                partition(&at_follower, &at_leader, &support::unique_path("lease-ensemble")).await
            })
        })
        .collect();
    let mut runs = Vec::new();
    for task in tasks {
        runs.push(support::joined(2 * WITHIN, task).await);
    }
    check(&runs, "3-node ensemble, holder on a follower");
}

/// The lease costs no requests of its own: guards on one session share its
/// pings, however many there are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_guards_share_one_heartbeat() {
    let client = support::client().await;
    let sid = format!("sid=0x{:x}", client.session_id().0);
    let mut guards = Vec::new();
    for i in 0..100 {
        let lock = SharedLock::new(client.clone(), &support::unique_path(&format!("hundred-{i}"))).unwrap();
        guards.push(lock.write().await.unwrap());
    }
    let recved = || {
        let cons = support::server().four_letter(0, "cons").unwrap();
        let line = cons
            .lines()
            .find(|l| l.contains(&sid))
            .unwrap_or_else(|| panic!("no connection with {sid} in:\n{cons}"))
            .to_owned();
        let n = line.split("recved=").nth(1).unwrap().split(',').next().unwrap();
        n.parse::<u64>().unwrap()
    };
    // Every guard keeps a watch on its node from its grant on (one
    // getData each); watching its state costs nothing more.
    let session = format!("0x{:x}", client.session_id().0);
    let nodes: Vec<String> = guards.iter().map(|g| g.node().to_owned()).collect();
    support::eventually("every guard watches its node", WITHIN, || async {
        let wchp = support::server().four_letter(0, "wchp").unwrap();
        nodes
            .iter()
            .all(|node| support::watchers_in(&wchp, node).contains(&session))
    })
    .await;
    let watching: Vec<_> = guards
        .into_iter()
        .map(|g| {
            tokio::spawn(async move {
                tokio::select! {
                    _ = g.suspended() => panic!("suspended on a healthy connection"),
                    () = tokio::time::sleep(3 * SESSION_TIMEOUT) => g,
                }
            })
        })
        .collect();
    let start = recved();
    let first = client.session_lease().unwrap().answered_sent;
    tokio::time::sleep(2 * SESSION_TIMEOUT).await;
    let during = recved() - start;
    let mut guards = Vec::new();
    for task in watching {
        guards.push(support::joined(WITHIN, task).await);
    }
    for g in &guards {
        assert_eq!(g.state(), HoldState::Held);
    }
    // One lease for the session: every guard reads the same deadline
    // between two readings of the session's lease that agree (a ping
    // answered in between moves it for all of them: read again).
    let mut deadlines = Vec::new();
    for _ in 0..20 {
        let lease = client.session_lease();
        deadlines = guards.iter().map(|g| g.lease_deadline()).collect();
        if client.session_lease() == lease {
            break;
        }
    }
    let later = deadlines[0];
    assert!(later > first + SESSION_TIMEOUT, "the lease moved on");
    assert!(
        deadlines.iter().all(|d| *d == later),
        "one lease for the session: {deadlines:?}"
    );
    // Pings every 3/20 of the timeout: about 13 in two timeouts.
    eprintln!(
        "requests from a session holding 100 guards, all watched, over {:?}: {during}",
        2 * SESSION_TIMEOUT
    );
    assert!((5..=20).contains(&during), "{during} requests");
    for g in guards {
        g.release().await.unwrap();
    }
}

/// The blocking guard reports the same states, and a partition that heals
/// before the lease deadline gives the lock back: suspended, then held, with
/// a lease that moved on.
#[test]
fn blocking_guard_is_suspended_and_resumes_when_the_partition_heals() {
    let proxy = Proxy::start(&support::server().connect_string());
    let lock = zk_rwlock::blocking::SharedLock::connect_with(
        proxy.addr(),
        &support::unique_path("blocking"),
        None,
        SESSION_TIMEOUT,
    )
    .unwrap();
    let guard = lock.write().unwrap();
    assert_eq!(guard.state(), HoldState::Held);
    assert_eq!(
        guard.wait_suspended(Duration::from_millis(50)).unwrap(),
        HoldState::Held,
        "times out held"
    );
    proxy.freeze();
    let frozen_at = guard.lease_deadline();
    assert_eq!(guard.wait_suspended(WITHIN).unwrap(), HoldState::Suspended);
    assert!(guard.is_held());
    assert_eq!(guard.lease_deadline(), frozen_at, "no answers, no renewal");
    assert_eq!(
        guard.wait_resumed(Duration::from_millis(50)).unwrap(),
        HoldState::Suspended,
        "times out suspended"
    );
    proxy.thaw();
    assert_eq!(
        guard.wait_resumed(WITHIN).unwrap(),
        HoldState::Held,
        "back within the lease"
    );
    assert!(guard.lease_deadline() > frozen_at, "renewed by the reconnection");
    assert!(!guard.wait_lost(Duration::from_millis(50)).unwrap());
    guard.release().unwrap();
}

/// A release whose future is dropped (a timeout around it) during a
/// partition still completes once the connection is back: it runs on the
/// library's background runtime, not in the dropped future.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_cut_short_still_completes() {
    let proxy = Proxy::start(&support::server().connect_string());
    let holder = zk::Client::connector()
        .with_session_timeout(SESSION_TIMEOUT)
        .connect(proxy.addr())
        .await
        .expect("holder connects");
    let path = support::unique_path("release-cut-short");
    let lock = SharedLock::new(holder, &path).unwrap();
    let guard = lock.write().await.unwrap();
    proxy.freeze();
    let cut_short = tokio::time::timeout(Duration::from_millis(300), guard.release()).await;
    assert!(cut_short.is_err(), "no answer while frozen");
    proxy.cut_all();
    proxy.thaw();
    let observer = support::client().await;
    support::eventually("the release completed after the reconnection", WITHIN, || {
        let (observer, path) = (observer.clone(), path.clone());
        async move { support::children(&observer, &path).await.is_empty() }
    })
    .await;
    // And no waiting as long as a deadline beyond the clock's range.
    let guard = lock.write_timeout(Duration::MAX).await.unwrap().expect("free");
    guard.release().await.unwrap();
}
