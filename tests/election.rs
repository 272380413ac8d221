//! Leader election on a real server: one leader at a time, prompt
//! hand-over on resignation and on a killed leader, observers that see
//! every change in order (also across a server restart) and never name a
//! candidate before its campaign was granted, and a leader that is told it
//! is suspended before anyone else can lead.

use zk_rwlock_testkit as support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::launcher::ZkCluster;
use support::proxy::Proxy;
use support::{candidate, client_on, eventually, server, unique_path, until_term};
use tokio::time::Instant;
use zk_rwlock::{zk, ContenderState, Election, HoldState, Leader};

const WITHIN: Duration = Duration::from_secs(20);

/// Waits until `election`'s lock shows `n` contenders.
async fn contenders(election: &Election, n: usize) {
    support::wait_contenders(election.lock(), n).await;
}

/// Collects every distinct leader an observer reports, in order.
fn collect(mut rx: tokio::sync::watch::Receiver<Option<Leader>>) -> Arc<Mutex<Vec<Leader>>> {
    let seen = Arc::new(Mutex::new(Vec::<Leader>::new()));
    let out = seen.clone();
    tokio::spawn(async move {
        loop {
            if let Some(leader) = rx.borrow_and_update().clone() {
                let mut seen = out.lock().unwrap();
                if seen.last() != Some(&leader) {
                    seen.push(leader);
                }
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    });
    seen
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
                "child_leader_process",
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
        // libtest prints `test child_leader_process ... ` before it.
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

/// Observers see every leader in grant order, never one whose campaign
/// has not returned, and keep following across a server restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observers_see_every_change_in_order_across_a_restart() {
    let mut zk = tokio::task::spawn_blocking(|| support::own_server(Duration::from_millis(200)))
        .await
        .unwrap();
    let connect = zk.connect_string();
    let path = unique_path("election-observe");
    let mut candidates = Vec::new();
    for c in 0..3 {
        candidates.push(candidate(&connect, &path, &format!("c{c}")).await);
    }
    let observer = candidate(&connect, &path, "observer").await;
    let rx = observer.observe();
    let seen = collect(rx.clone());
    let mut rx2 = observer.observe();
    // Terms granted by a returned campaign, in order.
    let granted: Arc<Mutex<Vec<i64>>> = Arc::default();
    // Each observation must name a term whose campaign returned by then (or
    // returns right after: the announcement comes before the return).
    let checker = {
        let granted = granted.clone();
        let mut rx = observer.observe();
        tokio::spawn(async move {
            while rx.changed().await.is_ok() {
                let Some(leader) = rx.borrow_and_update().clone() else {
                    continue;
                };
                let deadline = Instant::now() + Duration::from_secs(5);
                while !granted.lock().unwrap().contains(&leader.term) {
                    assert!(
                        Instant::now() < deadline,
                        "named {leader:?} whose campaign never returned"
                    );
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    let mut terms = Vec::new();
    for round in 0..6 {
        let election = &candidates[round % 3];
        let leadership = election.campaign().await.unwrap();
        granted.lock().unwrap().push(leadership.term());
        terms.push((leadership.identity().to_owned(), leadership.term()));
        until_term(&mut rx2, leadership.term()).await;
        if round == 2 {
            // The server restarts while c2 leads: the observer lists
            // again after the reconnection and still names c2.
            zk.stop(0).unwrap();
            eventually("the observer's client notices", WITHIN, || async {
                observer.client().state() != zk::SessionState::SyncConnected
            })
            .await;
            zk.start(0).unwrap();
            eventually("the leader's client reconnects", WITHIN, || async {
                election.client().state() == zk::SessionState::SyncConnected
                    && observer.client().state() == zk::SessionState::SyncConnected
            })
            .await;
            assert_eq!(
                leadership.state(),
                HoldState::Held,
                "the leader lived through the restart"
            );
            until_term(&mut rx2, leadership.term()).await;
        }
        leadership.resign().await.unwrap();
    }
    // After the last resignation the observer says no one leads.
    tokio::time::timeout(WITHIN, rx2.wait_for(Option::is_none))
        .await
        .unwrap()
        .unwrap();
    let seen: Vec<(String, i64)> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|l| (l.identity.clone(), l.term))
        .collect();
    assert_eq!(seen, terms, "the observer saw every leader, in order");
    let grown = terms.windows(2).all(|w| w[0].1 < w[1].1);
    assert!(grown, "terms grow: {terms:?}");
    drop(rx);
    drop(rx2);
    drop(observer);
    checker.abort();
}

/// The head writer of the queue holds the lock before its client knows:
/// while that client is cut off, no observer names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_one_is_named_before_its_campaign_is_granted() {
    let path = unique_path("election-early");
    let connect = server().connect_string();
    let proxy = Proxy::start(&connect);
    let a = candidate(&connect, &path, "a").await;
    let b_client = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .connect(proxy.addr())
        .await
        .unwrap();
    let b = Election::new(b_client, &path, "b").unwrap();
    let observer = candidate(&connect, &path, "observer").await;
    let mut rx = observer.observe();

    let leading = a.campaign().await.unwrap();
    until_term(&mut rx, leading.term()).await;
    let waiting = tokio::spawn(async move {
        let l = b.campaign().await;
        (Instant::now(), l)
    });
    contenders(&a, 2).await;
    // b's campaign cannot learn of its grant while its connection is frozen.
    proxy.freeze();
    leading.resign().await.unwrap();
    eventually("b's node heads the queue", WITHIN, || async {
        let queue = observer.lock().contenders().await.unwrap();
        queue.len() == 1 && queue[0].state == ContenderState::Holds && queue[0].name.identity() == "b"
    })
    .await;
    // b holds the lock now, but it has not been granted its campaign.
    assert_eq!(observer.leader().await.unwrap(), None, "leader() names no one");
    tokio::time::timeout(WITHIN, rx.wait_for(Option::is_none))
        .await
        .unwrap()
        .unwrap();
    assert!(!waiting.is_finished());
    let frozen_check = Instant::now();
    proxy.thaw();
    let (granted, leadership) = support::joined(WITHIN, waiting).await;
    let leadership = leadership.expect("b leads after the thaw");
    let seen = until_term(&mut rx, leadership.term()).await;
    assert_eq!(seen.identity, "b");
    assert!(granted > frozen_check);
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

#[test]
fn blocking_election_smoke() {
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

/// A revocation request written while a candidate waits is not hidden by
/// its announcement, and one written on the leader's node reaches its
/// leadership (observers keep naming it, asked to step down: see
/// `a_revoked_leader_stays_named_until_it_resigns`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_announcement_never_hides_a_revocation() {
    let path = unique_path("election-revoke");
    let connect = server().connect_string();
    let a = candidate(&connect, &path, "a").await;
    let b = candidate(&connect, &path, "b").await;
    let observer = candidate(&connect, &path, "observer").await;
    let mut rx = observer.observe();
    let leading = a.campaign().await.unwrap();
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move { b.campaign().await.unwrap() })
    };
    contenders(&a, 2).await;
    let queue = observer.lock().contenders().await.unwrap();
    assert!(
        observer.lock().revoke(&queue[1].path).await.unwrap(),
        "b's node is asked"
    );
    leading.resign().await.unwrap();
    let next = support::joined(WITHIN, waiting).await;
    assert!(
        next.is_revocation_requested(),
        "the request made while b waited is not lost"
    );
    until_term(&mut rx, next.term()).await;
    let (data, _) = observer.client().get_data(next.node()).await.unwrap();
    assert_eq!(data, b"leader:b", "announced after the request was taken in");

    // A request on the announced leader: its leadership sees it.
    let c = candidate(&connect, &path, "c").await;
    let third = c.campaign_timeout(Duration::from_millis(200)).await.unwrap();
    assert!(third.is_none(), "b still leads");
    next.resign().await.unwrap();
    let leading = c.campaign().await.unwrap();
    until_term(&mut rx, leading.term()).await;
    assert!(!leading.is_revocation_requested());
    assert!(observer.lock().revoke(leading.node()).await.unwrap());
    assert!(
        tokio::time::timeout(WITHIN, leading.revocation_requested())
            .await
            .unwrap(),
        "the leader is asked to step down"
    );
    let named = observer.leader().await.unwrap().expect("still named");
    assert_eq!((named.term, named.revocation_requested), (leading.term(), true));
    leading.resign().await.unwrap();
    tokio::time::timeout(WITHIN, rx.wait_for(Option::is_none))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(observer.leader().await.unwrap(), None);
    support::assert_drained(&path).await;
}

/// A revocation request asks the leader to step down and ends nothing by
/// itself: a leader that ignores it (as `zk-rwlock lead` does by default)
/// still holds the write lock, nobody else can lead, and its term stands.
/// So `leader()` and `observe()` keep naming it, with the request shown,
/// from the request until it resigns (never `None` in between), and the
/// next candidate is named once it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_leader_stays_named_until_it_resigns() {
    let path = unique_path("election-revoked-leader");
    let connect = server().connect_string();
    let a = candidate(&connect, &path, "a").await;
    let b = candidate(&connect, &path, "b").await;
    let observer = candidate(&connect, &path, "observer").await;
    let leading = a.campaign().await.unwrap();
    let mut rx = observer.observe();
    until_term(&mut rx, leading.term()).await;
    // Every value the observer says from now on, in order.
    let said = Arc::new(Mutex::new(Vec::<Option<Leader>>::new()));
    let recorder = {
        let (said, mut rx) = (said.clone(), rx.clone());
        tokio::spawn(async move {
            loop {
                said.lock().unwrap().push(rx.borrow_and_update().clone());
                if rx.changed().await.is_err() {
                    return;
                }
            }
        })
    };
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move { b.campaign().await.unwrap() })
    };
    contenders(&a, 2).await;

    let asked = observer.lock().revoke_holders().await.unwrap().asked;
    assert_eq!(asked, [leading.node()], "the leader's node is asked");
    assert!(
        tokio::time::timeout(WITHIN, leading.revocation_requested())
            .await
            .unwrap(),
        "the leader is asked to step down"
    );
    // The request is its node's data, over the announcement.
    let (data, stat) = observer.client().get_data(leading.node()).await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (zk_rwlock::REVOKE_PAYLOAD, 2));
    // It leads on: the lock is still its, the next candidate waits.
    assert_eq!(leading.state(), HoldState::Held);
    assert!(!waiting.is_finished(), "a request grants no one");
    let named = observer
        .leader()
        .await
        .unwrap()
        .expect("the revoked leader is named");
    assert_eq!(
        (
            named.identity.as_str(),
            named.term,
            named.node.as_str(),
            named.revocation_requested
        ),
        ("a", leading.term(), leading.node(), true)
    );
    let seen = tokio::time::timeout(
        WITHIN,
        rx.wait_for(|l| l.as_ref().is_some_and(|l| l.revocation_requested)),
    )
    .await
    .expect("the observer shows the request")
    .unwrap()
    .clone()
    .unwrap();
    assert_eq!(seen.term, leading.term());
    // The next campaign's observer names it too, from its first look.
    let late = candidate(&connect, &path, "late").await;
    let mut late_rx = late.observe();
    let first = until_term(&mut late_rx, leading.term()).await;
    assert!(first.revocation_requested);

    // Its term ends when it resigns: then the next candidate leads.
    let resigned = leading.term();
    leading.resign().await.unwrap();
    let next = support::joined(WITHIN, waiting).await;
    until_term(&mut rx, next.term()).await;
    let now = observer.leader().await.unwrap().expect("b leads");
    assert_eq!((now.identity.as_str(), now.revocation_requested), ("b", false));
    let next_term = next.term();
    next.resign().await.unwrap();
    eventually("the recorder saw the next leader", WITHIN, || {
        let seen = said
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.as_ref().is_some_and(|l| l.term == next_term));
        async move { seen }
    })
    .await;
    recorder.abort();
    let said = said.lock().unwrap().clone();
    // From the request to the resignation: a, then a asked, never None.
    let revoked_at = said
        .iter()
        .position(|l| l.as_ref().is_some_and(|l| l.revocation_requested))
        .expect("the request was seen");
    let resigned_at = said
        .iter()
        .position(|l| l.as_ref().is_none_or(|l| l.term != resigned))
        .expect("the resignation was seen");
    assert!(revoked_at < resigned_at, "{said:?}");
    assert!(
        said[..resigned_at]
            .iter()
            .all(|l| l.as_ref().is_some_and(|l| l.term == resigned)),
        "the leader was not named all along: {said:?}"
    );
    support::assert_drained(&path).await;
}

/// The observer keeps one watch, on the head node, and removes it when its
/// last receiver is dropped; the next `observe` starts again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_observer_watches_the_head_and_stops_with_its_last_receiver() {
    let path = unique_path("election-observer");
    let zk = server();
    let connect = zk.connect_string();
    let a = candidate(&connect, &path, "a").await;
    let observer = candidate(&connect, &path, "observer").await;
    let session = observer.client().session_id().0;
    let leading = a.campaign().await.unwrap();
    let mut rx = observer.observe();
    let mut rx2 = observer.observe();
    until_term(&mut rx, leading.term()).await;
    until_term(&mut rx2, leading.term()).await;
    support::wait_watching(zk, leading.node(), session).await;
    assert!(
        !support::watches(zk, &path, session),
        "no watch on the directory while someone leads"
    );
    drop(rx);
    assert!(
        support::watches(zk, leading.node(), session),
        "one receiver is left"
    );
    drop(rx2);
    eventually("the observer removed its watch", WITHIN, || async {
        !support::watches(zk, leading.node(), session)
    })
    .await;
    // Started again by the next call.
    let mut rx = observer.observe();
    until_term(&mut rx, leading.term()).await;
    leading.resign().await.unwrap();
    tokio::time::timeout(WITHIN, rx.wait_for(Option::is_none))
        .await
        .unwrap()
        .unwrap();
    // No contender: the directory's children are watched (`wchp` does not
    // list child watches), and the next candidate is seen.
    let leading = a.campaign().await.unwrap();
    until_term(&mut rx, leading.term()).await;
    leading.resign().await.unwrap();
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

/// A stranger's write to the leader's node is replaced by the leader's
/// announcement again (observers keep naming it); it revokes and grants
/// nothing, and the next leader is named as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strangers_write_on_the_leaders_node_is_announced_over() {
    let path = unique_path("election-stranger");
    let connect = server().connect_string();
    let a = candidate(&connect, &path, "a").await;
    let b = candidate(&connect, &path, "b").await;
    let observer = candidate(&connect, &path, "observer").await;
    let mut rx = observer.observe();
    let leading = a.campaign().await.unwrap();
    until_term(&mut rx, leading.term()).await;
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move { b.campaign().await.unwrap() })
    };
    contenders(&a, 2).await;
    let stranger = client_on(&connect).await;
    let (_, before) = stranger.get_data(leading.node()).await.unwrap();
    stranger.set_data(leading.node(), b"junk", None).await.unwrap();
    eventually("the leader announced itself again", WITHIN, || async {
        let (data, stat) = stranger.get_data(leading.node()).await.unwrap();
        data == b"leader:a" && stat.version > before.version + 1
    })
    .await;
    until_term(&mut rx, leading.term()).await;
    assert_eq!(
        observer.leader().await.unwrap().map(|l| l.term),
        Some(leading.term())
    );
    assert_eq!(leading.state(), HoldState::Held);
    assert!(
        !leading.is_revocation_requested(),
        "junk is no revocation request"
    );
    assert!(!waiting.is_finished(), "a data change grants no one");
    leading.resign().await.unwrap();
    let next = support::joined(WITHIN, waiting).await;
    let seen = until_term(&mut rx, next.term()).await;
    assert_eq!(seen.identity, "b");
    next.resign().await.unwrap();
    support::assert_drained(&path).await;
}
