//! Observers of an election (`Election::observe`, `leader()`) on a real
//! server: they see every leader in grant order (also across a server
//! restart), never name a candidate before its campaign was granted, keep
//! one watch (on the head node) for as long as a receiver lives, and stop
//! naming a resigned leader when they cannot read the next one's node;
//! they follow a directory removed and made again, watch a reader at the
//! head (naming no one), and `leader()` leaves no watch and names the node
//! it could not read.

use zk_rwlock_fixtures as support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::proxy::Proxy;
use support::{candidate, client_on, eventually, server, unique_path, until_term, wait_watching};
use tokio::time::Instant;
use zk_rwlock::{zk, ContenderState, Election, HoldState, Leader, SharedLock};

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
    until_none(&mut rx).await;
    // No contender: the directory's children are watched (`wchp` does not
    // list child watches), and the next candidate is seen.
    let leading = a.campaign().await.unwrap();
    until_term(&mut rx, leading.term()).await;
    leading.resign().await.unwrap();
}

/// An observer that cannot read the head stops naming the leader before
/// it. Here the next leader's node is `creator_all` (digest auth) without
/// READ for the observer, which the module docs advise against but which
/// the lock itself allows: `a` resigns, `b` leads, and the observer's
/// `getData` on the head gets NoAuth on every retry. `leader()` says
/// Err(NoAuth); the observer's receiver must not go on naming `a`, who
/// resigned, for ever (had it kept its last value when a look fails with
/// an error other than connection loss, nothing would tell the receiver
/// that it is blind).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_that_cannot_read_the_head_does_not_name_a_resigned_leader() {
    let path = unique_path("election-noread");
    let connect = server().connect_string();
    let admin = client_on(&connect).await;
    support::mkdir_open(&admin, &path).await;
    let a = candidate(&connect, &path, "a").await;
    let b_client = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .with_auth("digest", b"bob:secret".as_slice())
        .connect(&connect)
        .await
        .unwrap();
    let b = Election::builder(b_client, &path)
        .identity("b")
        .acls(&zk::Acls::creator_all())
        .build()
        .unwrap();
    let observer = candidate(&connect, &path, "observer").await;
    let mut rx = observer.observe();
    let leading = a.campaign().await.unwrap();
    let a_term = leading.term();
    until_term(&mut rx, a_term).await;
    let waiting = tokio::spawn(async move { b.campaign().await.unwrap() });
    support::wait_contenders(a.lock(), 2).await;
    leading.resign().await.unwrap();
    let next = support::joined(WITHIN, waiting).await;
    // leader() cannot read b's node either, and names it.
    match observer.leader().await {
        Err(zk_rwlock::Error::NoAuth { path: named }) => assert_eq!(named, next.node()),
        other => panic!("leader() said {other:?}"),
    }
    let moved_on = tokio::time::timeout(
        Duration::from_secs(10),
        rx.wait_for(|l| l.as_ref().map(|l| l.term) != Some(a_term)),
    )
    .await;
    assert!(
        moved_on.is_ok(),
        "the observer still names a (term {a_term}), who resigned; b leads with term {}",
        next.term()
    );
    next.resign().await.unwrap();
}

/// Waits until `rx` says no one is known to lead.
async fn until_none(rx: &mut tokio::sync::watch::Receiver<Option<Leader>>) {
    tokio::time::timeout(WITHIN, rx.wait_for(Option::is_none))
        .await
        .expect("the observer says None in time")
        .expect("the observer runs");
}

/// An observer of a missing directory watches its creation, names its
/// first leader, and after the directory is removed again watches its
/// creation again; `leader()` leaves no watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_follows_a_directory_removed_and_made_again() {
    let path = unique_path("observed-dir");
    let zk = server();
    let connect = zk.connect_string();
    let observer = candidate(&connect, &path, "observer").await;
    let session = observer.client().session_id().0;
    let mut rx = observer.observe();
    // No directory: an `exists` watch on it (wchp lists exists watches).
    wait_watching(zk, &path, session).await;
    assert_eq!(observer.leader().await.unwrap(), None);

    let a = candidate(&connect, &path, "a").await;
    let leading = a.campaign().await.unwrap();
    until_term(&mut rx, leading.term()).await;
    wait_watching(zk, leading.node(), session).await;
    assert!(
        !support::watches(zk, &path, session),
        "no watch on the directory while someone leads"
    );

    // leader() through another session leaves no watch.
    let asker = candidate(&connect, &path, "asker").await;
    let named = asker.leader().await.unwrap().expect("a leads");
    assert_eq!(named.node, leading.node());
    assert_eq!(named.term, leading.term());
    assert!(
        !support::watches(zk, leading.node(), asker.client().session_id().0),
        "leader() left a data watch on the head"
    );
    assert!(!support::watches(zk, &path, asker.client().session_id().0));

    leading.resign().await.unwrap();
    until_none(&mut rx).await;
    // Remove the directory while the observer watches its children.
    let admin = client_on(&connect).await;
    match admin.delete(&path, None).await {
        Ok(()) | Err(zk::Error::NoNode) => {}
        Err(e) => panic!("delete {path}: {e}"),
    }
    wait_watching(zk, &path, session).await;
    assert_eq!(observer.leader().await.unwrap(), None);
    // Made again by the next campaign: named.
    let leading = a.campaign().await.unwrap();
    until_term(&mut rx, leading.term()).await;
    leading.resign().await.unwrap();
}

/// A reader of a SharedLock at the head: the observer names no one and
/// watches the reader's node; once it leaves, the waiting candidate is named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_at_the_head_is_watched_and_names_no_one() {
    let path = unique_path("reader-head");
    let zk = server();
    let connect = zk.connect_string();
    let reader = SharedLock::builder(client_on(&connect).await, &path)
        .identity("reader")
        .build()
        .unwrap();
    let guard = reader.read().await.unwrap();
    let observer = candidate(&connect, &path, "observer").await;
    let session = observer.client().session_id().0;
    let mut rx = observer.observe();
    wait_watching(zk, guard.node(), session).await;
    assert!(rx.borrow().is_none());
    let a = candidate(&connect, &path, "a").await;
    let waiting = tokio::spawn(async move { a.campaign().await.unwrap() });
    support::wait_contenders(observer.lock(), 2).await;
    assert_eq!(observer.leader().await.unwrap(), None, "a reader holds");
    assert!(rx.borrow().is_none());
    guard.release().await.unwrap();
    let leading = support::joined(WITHIN, waiting).await;
    until_term(&mut rx, leading.term()).await;
    leading.resign().await.unwrap();
}
