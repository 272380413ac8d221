//! Which session timeout the lease may trust. A reconnection may be told a
//! longer timeout than the session was created with (a restarted server's,
//! or another member's, `minSessionTimeout`), and that server renews the
//! session with it. But a server logs only the `createSession`
//! transaction: a server restarted on its data, or a newly elected leader,
//! schedules the session again with the timeout it was created with
//! (`SessionTrackerImpl`'s constructor, from `ZKDatabase`'s
//! `sessionsWithTimeouts`). So the lease runs on the smallest timeout the
//! session was ever told (`SessionLease::timeout`).
//!
//! Each test holds a write lock, cuts the holder off with a proxy that
//! forwards nothing and closes nothing, crashes the server that would
//! expire the session (`kill -9`), and samples the holder's guard until
//! another writer is granted: no lease deadline the guard reported may be
//! after that grant.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::proxy::Proxy;
use tokio::time::Instant;
use zk_rwlock::{zk, HoldState, SharedLock, WriteGuard};
use zk_rwlock_fixtures::launcher::ZkCluster;

const WITHIN: Duration = Duration::from_secs(30);

/// One sample of the holder's guard.
#[derive(Clone, Copy, Debug)]
struct Sample {
    at: Instant,
    state: HoldState,
    deadline: Instant,
}

fn sample(guard: &WriteGuard) -> Sample {
    Sample {
        at: Instant::now(),
        state: guard.state(),
        deadline: Instant::from_std(guard.lease_deadline()),
    }
}

/// Milliseconds from `origin` to `t` (negative if `t` is earlier).
fn ms(t: Instant, origin: Instant) -> i64 {
    if t >= origin {
        (t - origin).as_millis() as i64
    } else {
        -((origin - t).as_millis() as i64)
    }
}

/// Samples `guard` every 5 ms while `rest` runs (it ends with another
/// writer's grant: its instant, and what it keeps), then until the guard
/// is lost.
async fn sample_until_granted<T>(
    guard: &WriteGuard,
    rest: impl std::future::Future<Output = (Instant, T)>,
) -> (Vec<Sample>, Instant, T) {
    tokio::pin!(rest);
    let mut samples = Vec::new();
    let end = Instant::now() + 2 * WITHIN;
    let (granted, next) = loop {
        samples.push(sample(guard));
        assert!(Instant::now() < end, "no grant within {:?}", 2 * WITHIN);
        tokio::select! {
            out = &mut rest => break out,
            () = tokio::time::sleep(Duration::from_millis(5)) => {}
        }
    };
    let end = Instant::now() + WITHIN;
    loop {
        let s = sample(guard);
        samples.push(s);
        if s.state == HoldState::Lost || s.at > end {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    (samples, granted, next)
}

/// Prints the timeline and asserts the promise of a lease deadline: no one
/// else was granted before it. Returns the margin: how long before the
/// grant the latest deadline the guard reported was.
fn report_and_check(label: &str, samples: &[Sample], granted: Instant, cut: Instant) -> Duration {
    let latest = samples
        .iter()
        .max_by_key(|s| s.deadline)
        .copied()
        .expect("samples");
    let first = |st: HoldState| samples.iter().find(|s| s.state == st).map(|s| ms(s.at, cut));
    eprintln!(
        "{label}: cut and crash at 0 ms; holder Suspended at {:?} ms, Lost at {:?} ms; latest lease \
         deadline reported {} ms (while {:?}); other writer granted at {} ms: {}",
        first(HoldState::Suspended),
        first(HoldState::Lost),
        ms(latest.deadline, cut),
        latest.state,
        ms(granted, cut),
        if latest.deadline > granted {
            format!("OVERCLAIM of {} ms", ms(latest.deadline, granted))
        } else {
            format!("margin {} ms", ms(granted, latest.deadline))
        },
    );
    assert!(
        latest.deadline <= granted,
        "{label}: the holder reported a lease deadline {} ms after the other writer's grant ({:?} at {} ms)",
        ms(latest.deadline, granted),
        latest.state,
        ms(latest.at, cut),
    );
    assert!(
        samples
            .iter()
            .all(|s| s.at < granted || s.state == HoldState::Lost),
        "{label}: the holder did not know it lost after the grant"
    );
    granted - latest.deadline
}

/// Waits until `client` is connected and its last connect response told
/// `timeout`.
async fn told(client: &zk::Client, timeout: Duration, what: &str) {
    support::eventually(what, WITHIN, || async {
        client.state() == zk::SessionState::SyncConnected
            && client.session_lease().map(|l| l.negotiated) == Some(timeout)
    })
    .await;
}

/// Standalone server (tick 200 ms): a session created with `created`; the
/// server is restarted on its data with `min_after` as its
/// `minSessionTimeout` (if any), and the client reconnects; then it takes a
/// write lock, is cut off, and the server crashes (`kill -9`) and restarts.
/// Returns the margin of the lease before the other writer's grant.
async fn standalone(created: Duration, min_after: Option<Duration>) -> Duration {
    let label = match min_after {
        Some(min) => format!("standalone, created {created:?}, told {min:?} after a restart"),
        None => format!("standalone, created {created:?}, restarted alike"),
    };
    let mut cluster = support::own_server(Duration::from_millis(200));
    let at = cluster.connect_string();
    let proxy = Proxy::start(&at);
    let holder = zk::Client::connector()
        .with_session_timeout(created)
        .connect(proxy.addr())
        .await
        .expect("holder connects");
    told(&holder, created, "the session is created with the asked timeout").await;

    // The operator's restart, with its data (and maybe a new minimum).
    let mut cluster = tokio::task::spawn_blocking(move || {
        cluster.stop(0).expect("stop");
        if let Some(min) = min_after {
            let ms = min.as_millis().to_string();
            cluster
                .set_member_setting(0, "minSessionTimeout", &ms)
                .expect("setting");
            cluster
                .set_member_setting(0, "maxSessionTimeout", &ms)
                .expect("setting");
        }
        cluster.start(0).expect("restart");
        cluster
    })
    .await
    .unwrap();
    let now_told = min_after.unwrap_or(created);
    told(&holder, now_told, "the holder reconnects to the same session").await;
    // Checked after the crash, so that a lease on another timeout shows
    // what it claimed.
    let lease_timeout = holder.session_lease().expect("a lease").timeout;

    let path = support::unique_path("lease-timeout-standalone");
    let lock = SharedLock::new(holder, &path).unwrap();
    let guard = lock.write().await.unwrap();
    assert_eq!(guard.state(), HoldState::Held);

    // Cut off, then the crash: the restarted server restores the session
    // with the timeout of its createSession transaction.
    proxy.freeze();
    let cut = Instant::now();
    let rest = async {
        let cluster = tokio::task::spawn_blocking(move || {
            cluster.kill(0).expect("kill -9");
            cluster.start(0).expect("start after the crash");
            cluster
        })
        .await
        .unwrap();
        let other = SharedLock::new(support::client_on(&at).await, &path).unwrap();
        let next = other.write().await.unwrap();
        (Instant::now(), (next, cluster))
    };
    let (samples, granted, (next, cluster)) = sample_until_granted(&guard, rest).await;
    let margin = report_and_check(&label, &samples, granted, cut);
    assert_eq!(
        lease_timeout, created,
        "the smallest timeout told: the created one"
    );
    next.release().await.unwrap();
    drop(guard);
    tokio::task::spawn_blocking(move || drop(cluster)).await.unwrap();
    margin
}

/// The standalone reproduction, scaled down: created with 4 s, the
/// server's minimum raised to 10 s and the server restarted; the client is
/// told 10 s. After a crash the server expires the session 4 s after it is
/// back, and the lease must have ended by then. (Trusting the 10 s told
/// last, the guard reported a lease deadline 5.1 to 5.4 s after the other
/// writer's grant, and at the grant it often still said `Held`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_raised_by_a_restart_does_not_outlast_a_crash() {
    let margin = standalone(Duration::from_secs(4), Some(Duration::from_secs(10))).await;
    assert!(margin > Duration::ZERO);
}

/// Control: the same restart without a new minimum, then the same crash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_without_a_new_timeout_then_a_crash() {
    let margin = standalone(Duration::from_secs(4), None).await;
    assert!(margin > Duration::ZERO);
}

/// The ensemble reproduction: 3 members (tick 200 ms, syncLimit 5),
/// a 3 s session created on follower A, with the follower lag set (1.2 s).
/// The holder moves to follower B, whose `minSessionTimeout` is 8 s, and is
/// told 8 s; it is cut off, and the leader is killed (`kill -9`). The new
/// leader restores the session with 3 s from its takeover. (Trusting the
/// 8 s, the guard reported a lease deadline 1.7 to 2.1 s after the other
/// writer's grant; with the lease on 3 s but the pings still on 8 s, the
/// guard went `Lost` on the healthy connection to B.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_raised_by_another_member_does_not_outlast_a_new_leader() {
    let created = Duration::from_secs(3);
    let at_b_timeout = Duration::from_secs(8);
    let (cluster, leader, a, b) = tokio::task::spawn_blocking(move || {
        let mut cluster =
            ZkCluster::ensemble(3).unwrap_or_else(|e| panic!("needs a ZooKeeper ensemble: {e}"));
        let leader = cluster.leader().expect("a leader");
        let mut followers = (0..3).filter(|&i| i != leader);
        let (a, b) = (followers.next().unwrap(), followers.next().unwrap());
        let ms = at_b_timeout.as_millis().to_string();
        cluster.set_member_setting(b, "minSessionTimeout", &ms).unwrap();
        cluster.set_member_setting(b, "maxSessionTimeout", &ms).unwrap();
        cluster.restart(b).unwrap();
        assert_eq!(cluster.leader(), Some(leader), "the leader stayed");
        (cluster, leader, a, b)
    })
    .await
    .unwrap();
    let lag = cluster.follower_lag();
    let (at_a, at_b) = (cluster.member_connect_string(a), cluster.member_connect_string(b));
    let (proxy_a, proxy_b) = (Proxy::start(&at_a), Proxy::start(&at_b));
    proxy_b.set_blocked(true);
    let holder = zk::Client::connector()
        .with_session_timeout(created)
        .connect(&format!("{},{}", proxy_a.addr(), proxy_b.addr()))
        .await
        .expect("holder connects");
    told(&holder, created, "the session is created on A with 3 s").await;
    let path = support::unique_path("lease-timeout-ensemble");
    let lock = SharedLock::builder(holder.clone(), &path)
        .follower_lag(lag)
        .build()
        .unwrap();
    let guard = lock.write().await.unwrap();
    let other = SharedLock::new(support::client_on(&format!("{at_a},{at_b}")).await, &path).unwrap();
    let waiter = {
        let other = other.clone();
        tokio::spawn(async move {
            let g = other.write().await.unwrap();
            (Instant::now(), g)
        })
    };
    support::wait_contenders(&other, 2).await;

    // Move the holder to B.
    proxy_b.set_blocked(false);
    proxy_a.set_blocked(true);
    proxy_a.cut_all();
    told(&holder, at_b_timeout, "the holder is back, on B, told 8 s").await;
    assert_eq!(guard.state(), HoldState::Held);
    let lease_timeout = holder.session_lease().map(|l| l.timeout);
    // A healthy connection keeps the shorter lease renewed: the client
    // pings every 3/20 of the smallest timeout told, not of the 8 s.
    let steady = Instant::now() + Duration::from_secs(3);
    while Instant::now() < steady {
        let s = sample(&guard);
        assert_eq!(s.state, HoldState::Held, "on a healthy connection: {s:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // Cut off from B, then the leader crashes.
    proxy_b.freeze();
    let cut = Instant::now();
    let rest = async {
        let cluster = tokio::task::spawn_blocking(move || {
            let mut cluster = cluster;
            cluster.kill(leader).expect("kill -9 the leader");
            cluster
        })
        .await
        .unwrap();
        let (granted, next) = support::joined(2 * WITHIN, waiter).await;
        (granted, (next, cluster))
    };
    let (samples, granted, (next, cluster)) = sample_until_granted(&guard, rest).await;
    report_and_check(
        "ensemble, created 3 s on follower A, told 8 s by follower B, leader killed, follower lag 1.2 s",
        &samples,
        granted,
        cut,
    );
    assert_eq!(
        lease_timeout,
        Some(created),
        "the smallest timeout told: the created one"
    );
    next.release().await.unwrap();
    drop(guard);
    tokio::task::spawn_blocking(move || drop(cluster)).await.unwrap();
}
