//! Leadership on a real server: one leader at a time with growing terms,
//! prompt hand-over on resignation and on a killed leader, a leader that is
//! told it is suspended before anyone else can lead, the blocking API, a
//! campaign that fails with its expired session, and a campaign dropped at
//! any point that leaves no node behind.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::launcher::ZkCluster;
use support::proxy::Proxy;
use support::{candidate, client_on, server, unique_path, until_term};
use tokio::time::Instant;
use zk_rwlock::{zk, Election, HoldState};

const WITHIN: Duration = Duration::from_secs(20);

/// Waits until `election`'s lock shows `n` contenders.
async fn contenders(election: &Election, n: usize) {
    support::wait_contenders(election.lock(), n).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_at_a_time_and_terms_grow() {
    let path = unique_path("election-one");
    let connect = server().connect_string();
    const CANDIDATES: usize = 4;
    const TERMS: usize = 5;
    let mut tasks = Vec::new();
    for c in 0..CANDIDATES {
        let election = candidate(&connect, &path, &format!("c{c}")).await;
        tasks.push(tokio::spawn(async move {
            let mut terms = Vec::new();
            for _ in 0..TERMS {
                let leadership = election.campaign().await.unwrap();
                let granted = Instant::now();
                assert_eq!(leadership.state(), HoldState::Held);
                assert_eq!(leadership.identity(), format!("c{c}"));
                // A little work as leader, letting the others run.
                tokio::task::yield_now().await;
                tokio::time::sleep(Duration::from_millis(3)).await;
                let term = leadership.term();
                let resigned = Instant::now();
                leadership.resign().await.unwrap();
                terms.push((granted, resigned, term, c));
            }
            terms
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(support::joined(4 * WITHIN, task).await);
    }
    assert_eq!(all.len(), CANDIDATES * TERMS);
    all.sort_by_key(|&(granted, ..)| granted);
    for pair in all.windows(2) {
        let ((_, resigned, term, a), (granted, _, next, b)) = (pair[0], pair[1]);
        assert!(
            resigned <= granted,
            "two leaders at once: c{a} (term {term}) still led when c{b} (term {next}) was granted"
        );
        assert!(term < next, "terms grow in grant order: {term} then {next}");
    }
    support::assert_drained(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resigned_leader_is_replaced_at_once() {
    let path = unique_path("election-resign");
    let connect = server().connect_string();
    let a = candidate(&connect, &path, "a").await;
    let b = candidate(&connect, &path, "b").await;
    let leading = a.campaign().await.unwrap();
    let waiting = tokio::spawn(async move {
        let l = b.campaign().await.unwrap();
        (Instant::now(), l)
    });
    contenders(&a, 2).await;
    assert!(!waiting.is_finished(), "b waits while a leads");
    let resigning = Instant::now();
    leading.resign().await.unwrap();
    let (granted, next) = support::joined(WITHIN, waiting).await;
    let took = granted - resigning;
    assert!(took < Duration::from_secs(2), "b led {took:?} after a resigned");
    assert_eq!(next.identity(), "b");
    let now = a.leader().await.unwrap().expect("b leads");
    assert_eq!(
        (now.identity.as_str(), now.term, now.node.as_str()),
        ("b", next.term(), next.node())
    );
    next.resign().await.unwrap();
    assert_eq!(a.leader().await.unwrap(), None);
}

/// The child process of [`a_killed_leader_is_replaced_within_the_session_timeout`]:
/// campaigns, says `LEADING <term>` on stdout, and waits to be killed.
/// Does nothing unless run by that test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run as a child process by a_killed_leader_is_replaced_within_the_session_timeout"]
async fn child_leader_process() {
    let (Ok(connect), Ok(path)) = (
        std::env::var("ELECTION_CHILD_CONNECT"),
        std::env::var("ELECTION_CHILD_PATH"),
    ) else {
        return;
    };
    let client = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(2))
        .connect(&connect)
        .await
        .unwrap();
    let election = Election::new(client, &path, "child").unwrap();
    let leadership = election.campaign().await.unwrap();
    println!("LEADING {}", leadership.term());
    std::future::pending::<()>().await;
}

/// The name libtest gives this module's test `name` (its path without the
/// binary's crate), for running it alone in a child process.
fn test_name(name: &str) -> String {
    let module = module_path!().split_once("::").map_or("", |(_, module)| module);
    format!("{module}::{name}")
}

/// A child process, killed when the test ends (also when it fails).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_is_replaced_within_the_session_timeout() {
    use std::io::BufRead;
    let path = unique_path("election-killed");
    let connect = server().connect_string();
    let mut child = KillOnDrop(
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                &test_name("child_leader_process"),
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("ELECTION_CHILD_CONNECT", &connect)
            .env("ELECTION_CHILD_PATH", &path)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut lines = std::io::BufReader::new(stdout).lines();
        // libtest prints `test leadership::child_leader_process ... ` before it.
        lines.find_map(|l| {
            l.ok()?
                .split_once("LEADING ")
                .map(|(_, term)| term.trim().to_owned())
        })
    });
    let line = support::joined(WITHIN, line).await.expect("the child leads");
    let child_term: i64 = line.parse().unwrap();

    let next = candidate(&connect, &path, "next").await;
    let observer = candidate(&connect, &path, "observer").await;
    let mut rx = observer.observe();
    let seen = until_term(&mut rx, child_term).await;
    assert_eq!(seen.identity, "child");
    let session_timeout = Duration::from_secs(2);
    let waiting = {
        let next = next.clone();
        tokio::spawn(async move {
            let l = next.campaign().await.unwrap();
            (Instant::now(), l)
        })
    };
    contenders(&next, 2).await;
    child.0.kill().unwrap();
    let killed = Instant::now();
    child.0.wait().unwrap();
    let (granted, leadership) = support::joined(WITHIN, waiting).await;
    let took = granted - killed;
    // The server may grant up to 20 ticks (4 s here) for the asked 2 s;
    // it expires sessions on tick boundaries.
    let bound = session_timeout * 2 + Duration::from_secs(2);
    assert!(
        took < bound,
        "the next leader came {took:?} after the kill (bound {bound:?})"
    );
    assert!(leadership.term() > child_term);
    let seen = until_term(&mut rx, leadership.term()).await;
    assert_eq!(seen.identity, "next");
    leadership.resign().await.unwrap();
}

/// On a 3-node ensemble, the leader's client is cut off for good: its
/// leadership says Suspended, with a lease deadline, before the next
/// candidate's campaign returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leader_is_suspended_before_the_next_one_leads() {
    let cluster = tokio::task::spawn_blocking(|| ZkCluster::ensemble(3))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("this test needs a real ZooKeeper ensemble: {e}"));
    let path = unique_path("election-suspend");
    let proxies: Vec<Proxy> = (0..3)
        .map(|i| Proxy::start(&cluster.member_connect_string(i)))
        .collect();
    let via: Vec<&str> = proxies.iter().map(Proxy::addr).collect();
    let a_client = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(3))
        .connect(&via.join(","))
        .await
        .unwrap();
    let a = Election::new(a_client, &path, "a").unwrap();
    let b = candidate(&cluster.connect_string(), &path, "b").await;
    let leading = a.campaign().await.unwrap();
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move {
            let l = b.campaign().await.unwrap();
            (std::time::Instant::now(), l)
        })
    };
    contenders(&b, 2).await;
    let deadline_before = leading.lease_deadline();
    for proxy in &proxies {
        proxy.set_blocked(true);
        proxy.freeze();
    }
    let state = tokio::time::timeout(WITHIN, leading.suspended())
        .await
        .expect("a notices");
    let suspended = std::time::Instant::now();
    assert_eq!(state, HoldState::Suspended);
    let deadline = leading.lease_deadline();
    assert!(
        deadline >= deadline_before,
        "the deadline only moves forward while connected"
    );
    let (granted, next) = support::joined(WITHIN, waiting).await;
    assert!(suspended < granted, "a was suspended before b led");
    assert!(
        deadline <= granted,
        "a's lease deadline {deadline:?} passed before b led at {granted:?}"
    );
    assert_eq!(next.identity(), "b");
    tokio::time::timeout(WITHIN, leading.lost())
        .await
        .expect("a's leadership is lost");
    assert!(!leading.is_held());
    next.resign().await.unwrap();
    drop(leading);
    for proxy in &proxies {
        proxy.thaw();
    }
}

/// The blocking API: campaign, observe, campaign with a timeout, resign
/// (also by dropping the leadership).
#[test]
fn the_blocking_election_campaigns_observes_and_resigns() {
    let path = unique_path("election-blocking");
    let connect = server().connect_string();
    let a = zk_rwlock::blocking::Election::connect(&connect, &path, "a").unwrap();
    let b = zk_rwlock::blocking::Election::connect(&connect, &path, "b").unwrap();
    let mut observer = b.observe();
    let leading = a.campaign().unwrap();
    assert_eq!(leading.identity(), "a");
    assert_eq!(leading.state(), HoldState::Held);
    let now = b.leader().unwrap().expect("a leads");
    assert_eq!((now.identity.as_str(), now.term), ("a", leading.term()));
    let deadline = std::time::Instant::now() + WITHIN;
    while observer.current().map(|l| l.term) != Some(leading.term()) {
        assert!(std::time::Instant::now() < deadline, "the observer names a");
        observer.changed(Duration::from_millis(500)).unwrap();
    }
    assert!(
        b.campaign_timeout(Duration::from_millis(100)).unwrap().is_none(),
        "a leads"
    );
    let a_term = leading.term();
    leading.resign().unwrap();
    let next = b.campaign_timeout(WITHIN).unwrap().expect("b leads");
    assert!(next.term() > a_term);
    assert_eq!(
        next.wait_suspended(Duration::from_millis(10)).unwrap(),
        HoldState::Held
    );
    drop(next); // resigns
    assert_eq!(a.leader().unwrap(), None);
}

/// A session that expires while its candidate waits fails the campaign
/// with a typed error; its observer says None and stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_while_campaigning_is_an_error_and_stops_the_observer() {
    let path = unique_path("election-expiry");
    let connect = server().connect_string();
    let proxy = Proxy::start(&connect);
    let a = candidate(&connect, &path, "a").await;
    let b_client = client_on(proxy.addr()).await;
    let b = Election::new(b_client.clone(), &path, "b").unwrap();
    let leading = a.campaign().await.unwrap();
    let mut rx = b.observe();
    until_term(&mut rx, leading.term()).await;
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move { b.campaign().await })
    };
    contenders(&a, 2).await;
    support::expire_behind(&proxy, &b_client, &connect).await;
    let failed = support::joined(WITHIN, waiting).await;
    assert!(
        matches!(failed, Err(zk_rwlock::Error::SessionExpired)),
        "{failed:?}"
    );
    let stopped = tokio::time::timeout(WITHIN, async { while rx.changed().await.is_ok() {} }).await;
    assert!(stopped.is_ok(), "the observer stopped");
    assert_eq!(*rx.borrow(), None);
    assert_eq!(a.leader().await.unwrap().map(|l| l.term), Some(leading.term()));
    leading.resign().await.unwrap();
    support::assert_drained(&path).await;
}

/// A campaign dropped at any point (timings varied
/// around the grant and the announcement) leaves no node behind, and the
/// next campaign is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_campaign_leaves_no_node() {
    let path = unique_path("election-drop");
    let connect = server().connect_string();
    let a = candidate(&connect, &path, "a").await;
    let checker = candidate(&connect, &path, "checker").await;
    for i in 0..40u64 {
        let cut = Duration::from_micros(i * 150);
        let _ = tokio::time::timeout(cut, a.campaign()).await;
        support::eventually("the dropped campaign's node is gone", WITHIN, || async {
            checker.lock().contenders().await.unwrap().is_empty()
        })
        .await;
    }
    let leading = tokio::time::timeout(WITHIN, a.campaign()).await.unwrap().unwrap();
    leading.resign().await.unwrap();
    support::assert_drained(&path).await;
}
