//! See `main.rs`.

use zk_rwlock_fixtures as support;

use crate::semaphore;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::{assert_drained, child_name, client, server, unique_path, wait_nodes, watchers_in};
use zk_rwlock::{ContenderState, Error, Guard, Permit, Semaphore};

const WITHIN: Duration = Duration::from_secs(20);

async fn granted(task: tokio::task::JoinHandle<Permit>) -> Permit {
    tokio::time::timeout(WITHIN, task)
        .await
        .expect("the waiter is granted")
        .unwrap()
}

#[tokio::test]
async fn at_most_n_hold_at_once_and_every_waiter_is_granted() {
    let path = unique_path("sem-bound");
    const PERMITS: u32 = 3;
    const CONTENDERS: usize = 9;
    const ROUNDS: usize = 6;
    let holding = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..CONTENDERS {
        let sem = semaphore(&path, PERMITS).await;
        let (holding, most) = (holding.clone(), most.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                let permit = sem.acquire().await.unwrap();
                let now = holding.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                holding.fetch_sub(1, Ordering::SeqCst);
                permit.release().await.unwrap();
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("every contender finishes its rounds")
            .unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    assert!(
        most <= PERMITS as usize,
        "{most} held at once with {PERMITS} permits"
    );
    assert_eq!(
        most, PERMITS as usize,
        "{CONTENDERS} contenders fill every permit"
    );
    assert_drained(&path).await;
}

#[tokio::test]
async fn the_release_of_the_nearer_watched_node_grants_the_waiter() {
    // Two permits, two holders: the third watches both. The nearer one
    // leaving grants it while the farther one stays (a watch on the N-th
    // predecessor alone would miss this).
    let path = unique_path("sem-nearer");
    let sem = semaphore(&path, 2).await;
    let first = sem.acquire().await.unwrap();
    let second = sem.acquire().await.unwrap();
    let waiter = semaphore(&path, 2).await;
    let task = tokio::spawn(async move { waiter.acquire().await.unwrap() });
    let c = client().await;
    wait_nodes(&c, &path, 3).await;
    support::wait_watching(server(), second.node(), task_session(&c, &path, 2).await).await;
    second.release().await.unwrap();
    let third = granted(task).await;
    assert!(third.fencing_token() > first.fencing_token());
    assert!(first.is_held() && third.is_held());
    drop((first, third));
    assert_drained(&path).await;
}

/// The session that owns the `index`-th contender node of `path` in queue order.
async fn task_session(c: &zk_rwlock::zk::Client, path: &str, index: usize) -> i64 {
    let mut names = support::children(c, path).await;
    names.sort_by_key(|n| support::seq_of(n));
    let node = format!("{path}/{}", names[index]);
    let (_, stat) = c.get_data(&node).await.unwrap();
    stat.ephemeral_owner
}

#[tokio::test]
async fn a_release_wakes_at_most_n_waiters() {
    // Each waiter watches only the N nodes right before it: the head
    // holder's node is watched by at most N sessions, whatever the
    // queue's length.
    let path = unique_path("sem-herd");
    const PERMITS: u32 = 2;
    let holders = semaphore(&path, PERMITS).await;
    let a = holders.acquire().await.unwrap();
    let b = holders.acquire().await.unwrap();
    let mut waiters = Vec::new();
    for _ in 0..8 {
        let sem = semaphore(&path, PERMITS).await;
        waiters.push(tokio::spawn(async move {
            let permit = sem.acquire().await.unwrap();
            permit.release().await.unwrap();
        }));
    }
    let c = client().await;
    let names = wait_nodes(&c, &path, 10).await;
    let mut sorted = names.clone();
    sorted.sort_by_key(|n| support::seq_of(n));
    // Every waiter has set its watches once the last one watches.
    let last = format!("{path}/{}", sorted[8]);
    let last_waiter = task_session(&c, &path, 9).await;
    support::wait_watching(server(), &last, last_waiter).await;
    let wchp = server().four_letter(0, "wchp").unwrap();
    for name in &sorted {
        let node = format!("{path}/{name}");
        let owner = c
            .get_data(&node)
            .await
            .map(|(_, s)| s.ephemeral_owner)
            .unwrap_or(0);
        let others = watchers_in(&wchp, &node)
            .into_iter()
            .filter(|s| *s != format!("0x{owner:x}"))
            .count();
        assert!(
            others <= PERMITS as usize,
            "{node} is watched by {others} other sessions (herd): {wchp}"
        );
    }
    drop((a, b));
    for w in waiters {
        tokio::time::timeout(WITHIN, w)
            .await
            .expect("every waiter is granted")
            .unwrap();
    }
    assert_drained(&path).await;
}

#[tokio::test]
async fn contenders_that_disagree_on_the_count_are_refused_and_withdrawn() {
    let path = unique_path("sem-disagree");
    let two = semaphore(&path, 2).await;
    let held = two.acquire().await.unwrap();
    let three = semaphore(&path, 3).await;
    match three.acquire().await {
        Err(Error::PermitsDisagree {
            carried, asked, node, ..
        }) => {
            assert_eq!((carried, asked), (2, 3));
            assert_eq!(node, held.node());
        }
        other => panic!("expected PermitsDisagree, got {other:?}"),
    }
    let c = client().await;
    assert_eq!(
        support::children(&c, &path).await,
        vec![child_name(held.node()).to_owned()]
    );
    held.release().await.unwrap();
    assert_drained(&path).await;
}

#[tokio::test]
async fn try_and_timed_acquires_give_up_when_every_permit_is_held() {
    let path = unique_path("sem-try");
    let sem = semaphore(&path, 1).await;
    let held = sem.try_acquire().await.unwrap().expect("a free permit is taken");
    let other = semaphore(&path, 1).await;
    assert!(other.try_acquire().await.unwrap().is_none());
    assert!(other
        .acquire_timeout(Duration::from_millis(200))
        .await
        .unwrap()
        .is_none());
    // A zero timeout takes a free permit.
    held.release().await.unwrap();
    let again = other.acquire_timeout(Duration::ZERO).await.unwrap();
    assert!(again.is_some(), "a zero timeout takes a free permit");
    drop(again);
    assert_drained(&path).await;
}

#[tokio::test]
async fn status_shows_the_holders_of_the_permits_and_revocation_reaches_them() {
    let path = unique_path("sem-status");
    let sem = semaphore(&path, 2).await;
    let a = sem.acquire().await.unwrap();
    let b = sem.acquire().await.unwrap();
    let waiter = semaphore(&path, 2).await;
    let task = tokio::spawn(async move { waiter.acquire().await.unwrap() });
    let c = client().await;
    wait_nodes(&c, &path, 3).await;
    let queue = sem.contenders().await.unwrap();
    let states: Vec<_> = queue.iter().map(|q| q.state.clone()).collect();
    assert_eq!(states[0], ContenderState::Holds);
    assert_eq!(states[1], ContenderState::Holds);
    assert_eq!(
        states[2],
        ContenderState::WaitsOn(child_name(b.node()).to_owned())
    );
    let revoked = sem.revoke_holders().await.unwrap();
    let mut asked = revoked.asked.clone();
    asked.sort();
    let mut holders = vec![a.node().to_owned(), b.node().to_owned()];
    holders.sort();
    assert_eq!(asked, holders);
    for permit in [&a, &b] {
        tokio::time::timeout(WITHIN, permit.revocation_requested())
            .await
            .expect("the holder sees the request");
    }
    drop((a, b));
    drop(granted(task).await);
    assert_drained(&path).await;
}

#[tokio::test]
async fn a_permit_has_no_read_mode_and_zero_permits_are_refused() {
    let path = unique_path("sem-errors");
    assert!(matches!(
        Semaphore::new(client().await, &path, 0),
        Err(Error::NoPermits)
    ));
    let sem = semaphore(&path, 2).await;
    let permit = sem.acquire().await.unwrap();
    let node = permit.node().to_owned();
    match Guard::from(permit).downgrade().await {
        Err(Error::DowngradePermit { node: refused }) => assert_eq!(refused, node),
        other => panic!("expected DowngradePermit, got {other:?}"),
    }
    assert_drained(&path).await;
}

#[test]
fn the_blocking_semaphore_bounds_its_holders() {
    let path = unique_path("sem-blocking");
    let connect = server().connect_string();
    let sem = zk_rwlock::blocking::Semaphore::connect(&connect, &path, 2).unwrap();
    let a = sem.acquire().unwrap();
    let b = sem.try_acquire().unwrap().expect("the second permit is free");
    assert!(sem.try_acquire().unwrap().is_none());
    assert!(sem.acquire_timeout(Duration::from_millis(100)).unwrap().is_none());
    a.release().unwrap();
    let c = sem
        .acquire_timeout(Duration::from_secs(10))
        .unwrap()
        .expect("granted");
    assert!(c.fencing_token() > b.fencing_token());
    drop((b, c));
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(assert_drained(&path));
}
