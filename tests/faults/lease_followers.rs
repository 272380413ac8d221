//! The lease on an ensemble, where the server that answers a client is not
//! always the one that expires its session: a follower answers its
//! clients' pings itself and reports them to the leader only in answer to
//! the leader's own pings. Each test breaks something between the servers
//! (a byte-level proxy on one member's quorum connection to the leader,
//! [`RawProxy`]) or changes a member's configuration, and samples the
//! holder's guard every 2 ms until another writer is granted the lock:
//! from that grant on, the holder must never report `Held` or `Suspended`,
//! nor a lease deadline after the grant.

use zk_rwlock_fixtures as support;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use tokio::time::Instant;
use zk_rwlock::{zk, HoldState, SharedLock};
use zk_rwlock_fixtures::launcher::ZkCluster;

const WITHIN: Duration = Duration::from_secs(30);

/// A TCP proxy that forwards bytes as they come (no framing: the quorum
/// protocol is not ZooKeeper's client framing) and can freeze: nothing is
/// forwarded and nothing is closed, in either direction.
struct RawProxy {
    addr: SocketAddr,
    frozen: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
}

impl RawProxy {
    fn start(upstream: SocketAddr) -> RawProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let frozen = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (f, a) = (frozen.clone(), accepted.clone());
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(upstream) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                a.fetch_add(1, Ordering::SeqCst);
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (f1, f2) = (f.clone(), f.clone());
                thread::spawn(move || pump(client, server, &f1));
                thread::spawn(move || pump(s2, c2, &f2));
            }
        });
        RawProxy {
            addr,
            frozen,
            accepted,
        }
    }

    fn freeze(&self) {
        self.frozen.store(true, Ordering::SeqCst);
    }

    fn thaw(&self) {
        self.frozen.store(false, Ordering::SeqCst);
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, frozen: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    let wait = || {
        while frozen.load(Ordering::SeqCst) {
            thread::sleep(Duration::from_millis(1));
        }
    };
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        wait();
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    wait();
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

/// Restarts member `member` of `cluster` with its quorum connection to the
/// leader `leader` going through a [`RawProxy`]; returns the proxy once the
/// member follows through it.
fn route_through_proxy(cluster: &mut ZkCluster, member: usize, leader: usize) -> RawProxy {
    let cfg_path = cluster.dir().join(format!("member-{member}")).join("zoo.cfg");
    let cfg = std::fs::read_to_string(&cfg_path).unwrap();
    let key = format!("server.{}=", leader + 1);
    let line = cfg.lines().find(|l| l.starts_with(&key)).unwrap().to_owned();
    // server.N=127.0.0.1:<peer>:<election>
    let mut parts = line[key.len()..].split(':');
    let (host, peer, election) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let proxy = RawProxy::start(format!("{host}:{peer}").parse().unwrap());
    let rerouted = format!("{key}{host}:{}:{election}", proxy.addr.port());
    cluster.stop(member).unwrap();
    std::fs::write(&cfg_path, cfg.replace(&line, &rerouted)).unwrap();
    cluster.start(member).unwrap();
    let deadline = std::time::Instant::now() + WITHIN;
    while proxy.accepted.load(Ordering::SeqCst) == 0
        || cluster.mode(member) != Some(zk_rwlock_fixtures::launcher::ServerMode::Follower)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "member {member} does not follow through the proxy"
        );
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(cluster.leader(), Some(leader), "the leader stayed");
    proxy
}

/// A 3-node ensemble (tick 200 ms, syncLimit 5) with one follower's
/// connection to the leader routed through a freezable proxy.
fn ensemble_with_routed_follower() -> (ZkCluster, usize, usize, RawProxy) {
    let mut cluster = ZkCluster::ensemble(3).unwrap_or_else(|e| panic!("needs a ZooKeeper ensemble: {e}"));
    let leader = cluster.leader().expect("a leader");
    let follower = (0..3).find(|&i| i != leader).unwrap();
    let proxy = route_through_proxy(&mut cluster, follower, leader);
    (cluster, leader, follower, proxy)
}

/// One sample of the holder's guard.
#[derive(Clone, Copy, Debug)]
struct Sample {
    at: Instant,
    state: HoldState,
    deadline: Instant,
}

fn ms(t: Instant, origin: Instant) -> i64 {
    if t >= origin {
        (t - origin).as_millis() as i64
    } else {
        -((origin - t).as_millis() as i64)
    }
}

/// A holder on `holder_at` only (session `timeout`, `follower_lag`), a
/// writer waiting on `other_at`; once the holder's session has answered a
/// ping, `partition` breaks something; then samples the holder's guard
/// until the other writer is granted and the holder knows it lost.
/// Returns the samples, the grant instant and the partition instant.
async fn race(
    holder_at: &str,
    other_at: &str,
    timeout: Duration,
    follower_lag: Duration,
    partition: impl FnOnce(),
) -> (Vec<Sample>, Instant, Instant) {
    let path = support::unique_path("lease-followers");
    let holder = zk::Client::connector()
        .with_session_timeout(timeout)
        .connect(holder_at)
        .await
        .expect("holder connects");
    assert_eq!(holder.session_timeout(), timeout, "negotiated as asked");
    let lock = SharedLock::builder(holder.clone(), &path)
        .follower_lag(follower_lag)
        .build()
        .unwrap();
    let guard = lock.write().await.unwrap();
    let other = SharedLock::new(support::client_on(other_at).await, &path).unwrap();
    let waiter = {
        let other = other.clone();
        tokio::spawn(async move {
            let g = other.write().await.unwrap();
            (Instant::now(), g)
        })
    };
    support::wait_contenders(&other, 2).await;
    // A steady state: the session has answered a ping since the grant.
    let granted_lease = holder.session_lease().unwrap().answered_sent;
    support::eventually("the session answers a ping", WITHIN, || async {
        holder.session_lease().unwrap().answered_sent > granted_lease + timeout / 10
    })
    .await;
    assert_eq!(guard.state(), HoldState::Held);

    partition();
    let cut = Instant::now();
    let (samples, granted_at, next) = sample_until_granted(&guard, waiter).await;
    next.release().await.unwrap();
    drop(guard);
    (samples, granted_at, cut)
}

/// Samples `guard` every 2 ms until `waiter` (another writer) is granted,
/// then until the guard is lost.
async fn sample_until_granted(
    guard: &zk_rwlock::WriteGuard,
    waiter: tokio::task::JoinHandle<(Instant, zk_rwlock::WriteGuard)>,
) -> (Vec<Sample>, Instant, zk_rwlock::WriteGuard) {
    let mut samples = Vec::new();
    let end = Instant::now() + WITHIN;
    loop {
        let now = Instant::now();
        samples.push(Sample {
            at: now,
            state: guard.state(),
            deadline: Instant::from_std(guard.lease_deadline()),
        });
        if waiter.is_finished() {
            let (granted, next) = waiter.await.unwrap();
            // Keep sampling until the holder knows.
            break_after_lost(guard, &mut samples).await;
            return (samples, granted, next);
        }
        assert!(now < end, "no grant within {WITHIN:?}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn break_after_lost(guard: &zk_rwlock::WriteGuard, samples: &mut Vec<Sample>) {
    let end = Instant::now() + WITHIN;
    loop {
        let now = Instant::now();
        let s = Sample {
            at: now,
            state: guard.state(),
            deadline: Instant::from_std(guard.lease_deadline()),
        };
        samples.push(s);
        if s.state == HoldState::Lost || now > end {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Prints the timeline and asserts the promise: from the grant on, the
/// holder is never Held or Suspended, and its lease deadline is not after
/// the grant.
fn report_and_check(label: &str, samples: &[Sample], granted: Instant, cut: Instant) {
    let first = |st: HoldState| samples.iter().find(|s| s.state == st).map(|s| ms(s.at, cut));
    let at_grant = samples.iter().find(|s| s.at >= granted).copied();
    let last_deadline = samples.iter().map(|s| s.deadline).max().unwrap();
    let violating: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.at >= granted && s.state != HoldState::Lost)
        .collect();
    eprintln!(
        "{label}: partition at 0 ms; other writer granted at {} ms; holder first Suspended at {:?} ms, \
         Lost at {:?} ms; holder at the grant: {:?} (lease deadline {} ms); latest lease deadline \
         reported {} ms; {} samples after the grant not Lost, spanning {} ms",
        ms(granted, cut),
        first(HoldState::Suspended),
        first(HoldState::Lost),
        at_grant.map(|s| s.state),
        at_grant.map_or(0, |s| ms(s.deadline, cut)),
        ms(last_deadline, cut),
        violating.len(),
        violating.last().map_or(0, |s| ms(s.at, granted)),
    );
    if let Some(s) = samples
        .iter()
        .filter(|s| s.state != HoldState::Lost && s.deadline > granted)
        .max_by_key(|s| s.deadline)
    {
        eprintln!(
            "{label}: largest overclaim: at {} ms the holder reported {:?} with a lease deadline {} ms after the grant",
            ms(s.at, cut),
            s.state,
            ms(s.deadline, granted)
        );
    }
    assert!(
        violating.is_empty(),
        "{label}: the holder reported {:?} (lease deadline {} ms after the partition) while the other \
         writer had held the lock since {} ms after the partition",
        violating[0].state,
        ms(violating[0].deadline, cut),
        ms(granted, cut),
    );
    // The promise of a lease deadline: no one else is granted before it.
    let overclaim = samples
        .iter()
        .filter(|s| s.state != HoldState::Lost && s.deadline > granted)
        .map(|s| s.deadline - granted)
        .max();
    assert!(
        overclaim.is_none(),
        "{label}: a lease deadline {:?} after the other writer's grant was reported",
        overclaim.unwrap()
    );
}

/// The follower the holder is connected to loses the leader, and only the
/// leader. For syncLimit × tickTime (here 1 s) it goes on answering the
/// holder's pings itself while none of them reach the leader, which
/// expires the session one timeout after the last one it heard of. With
/// the follower lag set to syncLimit × tickTime + tickTime, the holder's
/// lease runs out first. (Without it, the holder reported `Suspended` with
/// a lease deadline 636 ms after the other writer's grant.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_cut_from_its_leader_does_not_stretch_the_lease_past_the_expiry() {
    let (cluster, leader, follower, proxy) = tokio::task::spawn_blocking(ensemble_with_routed_follower)
        .await
        .unwrap();
    let (at_follower, at_leader) = (
        cluster.member_connect_string(follower),
        cluster.member_connect_string(leader),
    );
    // The launcher's ensembles: tickTime 200 ms, syncLimit 5.
    let lag = 6 * cluster.tick_time();
    let (samples, granted, cut) = race(&at_follower, &at_leader, Duration::from_secs(4), lag, || {
        proxy.freeze()
    })
    .await;
    proxy.thaw();
    report_and_check(
        "follower cut from the leader, session timeout 4 s, follower lag 1.2 s",
        &samples,
        granted,
        cut,
    );
    drop(cluster);
}

/// The negotiated timeout shrinks on a reconnect (members with different
/// `maxSessionTimeout`, as during a rolling configuration change): the
/// server renews the session with the new, shorter timeout (ExpiryQueue
/// `update` moves it to an earlier bucket), and so must the lease. (A
/// floor kept from the grant, computed with the old timeout, once made the
/// guard report a lease deadline 2.6 s after the other writer's grant.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_shortened_by_a_reconnect_shortens_the_lease() {
    use support::proxy::Proxy;
    let (cluster, a, b) = tokio::task::spawn_blocking(|| {
        let mut cluster =
            ZkCluster::ensemble(3).unwrap_or_else(|e| panic!("needs a ZooKeeper ensemble: {e}"));
        let leader = cluster.leader().expect("a leader");
        let b = (0..3).find(|&i| i != leader).unwrap();
        let cfg_path = cluster.dir().join(format!("member-{b}")).join("zoo.cfg");
        let cfg = std::fs::read_to_string(&cfg_path).unwrap();
        cluster.stop(b).unwrap();
        std::fs::write(
            &cfg_path,
            cfg.replace("maxSessionTimeout=4000", "maxSessionTimeout=1000"),
        )
        .unwrap();
        cluster.start(b).unwrap();
        (cluster, leader, b)
    })
    .await
    .unwrap();
    let (at_a, at_b) = (cluster.member_connect_string(a), cluster.member_connect_string(b));
    let (proxy_a, proxy_b) = (Proxy::start(&at_a), Proxy::start(&at_b));
    proxy_b.set_blocked(true);
    let holder = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .connect(&format!("{},{}", proxy_a.addr(), proxy_b.addr()))
        .await
        .expect("holder connects");
    assert_eq!(holder.session_timeout(), Duration::from_secs(4));
    let path = support::unique_path("lease-shrink");
    let lock = SharedLock::new(holder, &path).unwrap();
    let guard = lock.write().await.unwrap();
    let other = SharedLock::new(support::client_on(&at_a).await, &path).unwrap();
    let waiter = {
        let other = other.clone();
        tokio::spawn(async move {
            let g = other.write().await.unwrap();
            (Instant::now(), g)
        })
    };
    support::wait_contenders(&other, 2).await;

    // Move the holder to member b, which grants 1 s at most.
    proxy_b.set_blocked(false);
    proxy_a.set_blocked(true);
    proxy_a.cut_all();
    support::eventually(
        "the holder is back, on member b, with a 1 s timeout",
        WITHIN,
        || async {
            guard.state() == HoldState::Held
                && lock.client().session_lease().map(|l| l.timeout) == Some(Duration::from_secs(1))
        },
    )
    .await;
    let lease = lock.client().session_lease().unwrap();
    eprintln!(
        "after the move: the session's own lease ends {} ms from now; the guard reports {} ms",
        ms(
            Instant::from_std(zk_rwlock::lease::deadline(
                lease.answered_sent,
                lease.timeout,
                Duration::ZERO
            )),
            Instant::now()
        ),
        ms(Instant::from_std(guard.lease_deadline()), Instant::now()),
    );
    proxy_b.freeze();
    let cut = Instant::now();
    let (samples, granted, next) = sample_until_granted(&guard, waiter).await;
    next.release().await.unwrap();
    proxy_b.thaw();
    report_and_check(
        "negotiated timeout 4 s -> 1 s on a reconnect, then partitioned",
        &samples,
        granted,
        cut,
    );
    drop(cluster);
}

/// A follower lag the session timeout cannot carry is refused when the
/// lock is built, with what to do about it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_lag_too_long_for_the_session_timeout_is_refused() {
    let client = support::client().await; // 4 s sessions
    let path = support::unique_path("lease-too-short");
    // 4 s is less than 2.25 x 1.8 s (the lease would be 1.52 s).
    let err = SharedLock::builder(client.clone(), &path)
        .follower_lag(Duration::from_millis(1800))
        .build()
        .unwrap_err();
    assert!(matches!(err, zk_rwlock::Error::LeaseTooShort { .. }), "{err:?}");
    assert!(
        err.to_string().contains("at least 2.25 x the follower lag"),
        "{err}"
    );
    // 4 s = 2.25 x 1.777 s: 3.92 s - 0.6 s - 1.777 s = 1.543 s.
    let lock = SharedLock::builder(client, &path)
        .follower_lag(Duration::from_millis(1777))
        .build()
        .unwrap();
    let guard = lock.write().await.unwrap();
    let left = guard
        .lease_deadline()
        .saturating_duration_since(std::time::Instant::now());
    assert!(left <= Duration::from_millis(1543), "{left:?}");
    assert_eq!(guard.state(), HoldState::Held);
    guard.release().await.unwrap();
}
