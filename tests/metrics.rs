//! The lock metrics (feature `metrics`) against a real server, through
//! `metrics-util`'s debugging recorder, installed once for this test
//! binary. Each test's locks carry their path as a label, so the tests,
//! which run at once, read only their own series (the test of the
//! unlabelled series is the only one that makes any, besides the expired
//! sessions' counter, which only one test moves).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use zk_rwlock::{zk, Error, HoldState, Mode, MultiLock, SharedLock};
use zk_rwlock_fixtures as support;

use support::proxy::Proxy;
use support::{client, eventually, joined, server, unique_path, wait_contenders, wait_watching};

const WITHIN: Duration = Duration::from_secs(10);

/// The recorder's snapshots, added up: a snapshot of the debugging
/// recorder takes what was recorded since the last one (counters and
/// gauges are reset to zero, histograms drained), and every test takes
/// snapshots. (The library only moves its gauges up and down, never sets
/// them: their deltas add up to their values.)
struct Recorded {
    snapshotter: Snapshotter,
    sums: Mutex<HashMap<String, Value>>,
}

fn recorded() -> &'static Recorded {
    static RECORDED: OnceLock<Recorded> = OnceLock::new();
    RECORDED.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder.install().expect("the only recorder of this test binary");
        zk_rwlock::describe_metrics();
        Recorded {
            snapshotter,
            sums: Mutex::default(),
        }
    })
}

/// `name{k=v,...}`, labels sorted.
fn key(name: &str, labels: &[(&str, &str)]) -> String {
    let mut labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    labels.sort();
    format!("{name}{{{}}}", labels.join(","))
}

#[derive(Clone)]
enum Value {
    Counter(u64),
    Gauge(f64),
    Histogram(Vec<f64>),
}

/// Every metric recorded so far, by [`key`]: histograms with every value
/// observed since the recorder was installed.
fn snapshot() -> HashMap<String, Value> {
    let recorded = recorded();
    let mut sums = recorded.sums.lock().unwrap_or_else(|e| e.into_inner());
    for (composite, _, _, value) in recorded.snapshotter.snapshot().into_vec() {
        let k = composite.key();
        let labels: Vec<(&str, &str)> = k.labels().map(|l| (l.key(), l.value())).collect();
        let name = key(k.name(), &labels);
        match (sums.get_mut(&name), value) {
            (Some(Value::Counter(sum)), DebugValue::Counter(n)) => *sum += n,
            (Some(Value::Gauge(sum)), DebugValue::Gauge(g)) => *sum += g.into_inner(),
            (Some(Value::Histogram(all)), DebugValue::Histogram(values)) => {
                all.extend(values.iter().map(|v| v.into_inner()));
            }
            (Some(_), _) => panic!("{name} changed its kind"),
            (None, value) => {
                let value = match value {
                    DebugValue::Counter(n) => Value::Counter(n),
                    DebugValue::Gauge(g) => Value::Gauge(g.into_inner()),
                    DebugValue::Histogram(values) => {
                        Value::Histogram(values.iter().map(|v| v.into_inner()).collect())
                    }
                };
                sums.insert(name, value);
            }
        }
    }
    sums.clone()
}

fn counter(name: &str, labels: &[(&str, &str)]) -> u64 {
    match snapshot().get(&key(name, labels)) {
        Some(Value::Counter(n)) => *n,
        None => 0,
        Some(_) => panic!("{} is no counter", key(name, labels)),
    }
}

fn gauge(name: &str, labels: &[(&str, &str)]) -> f64 {
    match snapshot().get(&key(name, labels)) {
        Some(Value::Gauge(g)) => *g,
        None => 0.0,
        Some(_) => panic!("{} is no gauge", key(name, labels)),
    }
}

fn observed(name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
    match snapshot().get(&key(name, labels)) {
        Some(Value::Histogram(values)) => values.clone(),
        None => Vec::new(),
        Some(_) => panic!("{} is no histogram", key(name, labels)),
    }
}

/// The holders gauge of `path` in `mode`: (held, suspended).
fn holders(path: &str, mode: &str) -> (f64, f64) {
    let of = |state| {
        gauge(
            "zk_rwlock_holders",
            &[("mode", mode), ("state", state), ("path", path)],
        )
    };
    (of("held"), of("suspended"))
}

fn waiters(path: &str, mode: &str) -> f64 {
    gauge("zk_rwlock_waiters", &[("mode", mode), ("path", path)])
}

async fn gauges_become(what: &str, want: impl Fn() -> bool) {
    eventually(what, WITHIN, || {
        let now = want();
        async move { now }
    })
    .await;
}

/// A lock on `path` whose metrics carry its path, through a new session.
async fn labelled(path: &str) -> SharedLock {
    labelled_on(client().await, path)
}

fn labelled_on(client: zk::Client, path: &str) -> SharedLock {
    SharedLock::builder(client, path)
        .metrics_path_label(true)
        .build()
        .expect("valid lock path")
}

#[tokio::test]
async fn a_contended_writer_is_handed_off_and_the_gauges_return_to_zero() {
    recorded();
    let path = unique_path("metrics-handoff");
    let p = path.as_str();
    let (first, second) = (labelled(p).await, labelled(p).await);
    let held = first.write().await.expect("first writer");
    assert_eq!(holders(p, "write"), (1.0, 0.0));
    assert_eq!(first.stats().holding, 1);
    let waiter = {
        let second = second.clone();
        tokio::spawn(async move { second.write().await })
    };
    wait_contenders(&first, 2).await;
    wait_watching(server(), held.node(), second.client().session_id().0).await;
    // The second writer waits from here on.
    let watching = std::time::Instant::now();
    assert_eq!(waiters(p, "write"), 1.0);
    assert_eq!((second.stats().waiting, second.stats().holding), (1, 0));
    // The first writer holds a while longer; the second is granted only
    // after the release below begins, so its wait covers at least that.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let releasing = std::time::Instant::now();
    let waited_at_least = releasing.duration_since(watching).as_secs_f64();

    held.release().await.expect("release");
    let guard = joined(WITHIN, waiter).await.expect("second writer");
    let hold = |mode| observed("zk_rwlock_hold_seconds", &[("mode", mode), ("path", p)]);
    assert_eq!(hold("write").len(), 1);
    assert_eq!(holders(p, "write"), (1.0, 0.0));
    assert_eq!(waiters(p, "write"), 0.0);
    let grants = |how| {
        counter(
            "zk_rwlock_grants_total",
            &[("mode", "write"), ("handoff", how), ("path", p)],
        )
    };
    assert_eq!(grants("immediate"), 1);
    // By the release's marker or by the deletion, whichever event came first.
    assert_eq!(grants("handoff") + grants("marker"), 1);
    assert_eq!(grants("relisted"), 0);

    guard.release().await.expect("release");
    assert_eq!(holders(p, "write"), (0.0, 0.0));
    assert_eq!(hold("write").len(), 2);
    assert!(hold("read").is_empty());
    let waited = observed(
        "zk_rwlock_acquire_wait_seconds",
        &[("mode", "write"), ("outcome", "granted"), ("path", p)],
    );
    assert_eq!(waited.len(), 2, "{waited:?}");
    // The second writer waited until the first one's release.
    assert!(
        waited.iter().any(|w| *w >= waited_at_least),
        "{waited:?} < {waited_at_least}"
    );
    for lock in [&first, &second] {
        assert_eq!((lock.stats().waiting, lock.stats().holding), (0, 0));
    }
}

#[tokio::test]
async fn acquires_that_give_up_or_are_cancelled_are_recorded() {
    recorded();
    let path = unique_path("metrics-timeout");
    let p = path.as_str();
    let (holder, other) = (labelled(p).await, labelled(p).await);
    let held = holder.write().await.expect("writer");
    let timed = other.write_timeout(Duration::from_millis(100)).await;
    assert!(timed.expect("write_timeout").is_none());
    assert!(other.try_write().await.expect("try_write").is_none());
    assert!(other.try_read().await.expect("try_read").is_none());
    let cancelled = tokio::time::timeout(Duration::from_millis(100), other.read()).await;
    assert!(cancelled.is_err(), "the read was granted beside a writer");

    let wait = |mode, outcome| {
        observed(
            "zk_rwlock_acquire_wait_seconds",
            &[("mode", mode), ("outcome", outcome), ("path", p)],
        )
    };
    let timeouts = wait("write", "timeout");
    assert_eq!(timeouts.len(), 2, "{timeouts:?}");
    assert!(timeouts.iter().any(|w| *w >= 0.1), "{timeouts:?}");
    assert_eq!(wait("read", "timeout").len(), 1);
    let cancels = wait("read", "cancelled");
    assert!(matches!(cancels[..], [w] if w >= 0.1), "{cancels:?}");
    assert!(wait("read", "granted").is_empty() && wait("write", "failed").is_empty());
    assert_eq!(counter("zk_rwlock_acquire_timeouts_total", &[("path", p)]), 3);
    assert_eq!((waiters(p, "read"), waiters(p, "write")), (0.0, 0.0));
    let stats = other.stats();
    assert_eq!(
        (stats.acquires, stats.give_ups, stats.waiting),
        (4, 3, 0),
        "{stats:?}"
    );
    held.release().await.expect("release");
    assert_eq!(holders(p, "write"), (0.0, 0.0));
}

#[tokio::test]
async fn a_guard_whose_node_is_deleted_is_lost_once() {
    recorded();
    let path = unique_path("metrics-deleted");
    let p = path.as_str();
    let lock = labelled(p).await;
    let held = lock.read().await.expect("reader");
    assert_eq!(holders(p, "read"), (1.0, 0.0));
    client()
        .await
        .delete(held.node(), None)
        .await
        .expect("stranger's delete");
    // The guard's kept watch tells, with nothing awaiting the guard.
    gauges_become("the lost guard leaves the gauge", || {
        holders(p, "read") == (0.0, 0.0)
    })
    .await;
    let lost = |reason| counter("zk_rwlock_lost_total", &[("reason", reason), ("path", p)]);
    assert_eq!(lost("node_deleted"), 1);
    assert_eq!(held.state(), HoldState::Lost);
    assert_eq!(lock.stats().holding, 0);
    let node = held.node().to_owned();
    let released = held.release().await;
    assert!(
        matches!(&released, Err(Error::Lost { node: n }) if *n == node),
        "{released:?}"
    );
    assert_eq!(lost("node_deleted"), 1, "counted once");
    assert_eq!(
        observed("zk_rwlock_hold_seconds", &[("mode", "read"), ("path", p)]).len(),
        1
    );
}

/// A release right after a stranger deleted the node: lost, counted once,
/// whether the guard's watch told it first or the release's delete found
/// the node gone.
#[tokio::test]
async fn a_release_that_finds_its_node_deleted_counts_one_loss() {
    recorded();
    let path = unique_path("metrics-deleted-release");
    let p = path.as_str();
    let lock = labelled(p).await;
    let stranger = client().await;
    for round in 1..=3 {
        let held = lock.write().await.expect("writer");
        stranger
            .delete(held.node(), None)
            .await
            .expect("stranger's delete");
        let released = held.release().await;
        assert!(matches!(released, Err(Error::Lost { .. })), "{released:?}");
        assert_eq!(holders(p, "write"), (0.0, 0.0));
        let lost = || counter("zk_rwlock_lost_total", &[("reason", "node_deleted"), ("path", p)]);
        gauges_become("the loss is counted", || lost() == round).await;
    }
    assert_eq!((lock.stats().holding, lock.stats().lost), (0, 3));
}

/// A guard is `suspended` while its session is disconnected and `held`
/// again once it reconnects; the session's expiry loses it and is counted.
#[tokio::test]
async fn a_suspended_guard_moves_and_an_expired_session_loses_it() {
    recorded();
    let direct = server().connect_string();
    let proxy = Proxy::start(&direct);
    let path = unique_path("metrics-expired");
    let p = path.as_str();
    // The library's connect function: its session's expiry is counted.
    let victim = zk_rwlock::connect_client(proxy.addr(), Duration::from_secs(4), WITHIN)
        .await
        .expect("connect");
    let lock = labelled_on(victim.clone(), p);
    let held = lock.write().await.expect("writer");
    assert_eq!(holders(p, "write"), (1.0, 0.0));

    proxy.set_blocked(true);
    proxy.cut_all();
    gauges_become("the guard is counted suspended", || {
        holders(p, "write") == (0.0, 1.0)
    })
    .await;
    assert_eq!(held.state(), HoldState::Suspended);
    proxy.set_blocked(false);
    gauges_become("the guard is counted held again", || {
        holders(p, "write") == (1.0, 0.0)
    })
    .await;
    assert_eq!(held.state(), HoldState::Held);

    let expired = || counter("zk_rwlock_sessions_expired_total", &[]);
    let before = expired();
    support::expire_behind(&proxy, &victim, &direct).await;
    eventually("the client learns its session expired", WITHIN, || async {
        victim.state() == zk::SessionState::Expired
    })
    .await;
    gauges_become("the lost guard leaves the gauge", || {
        holders(p, "write") == (0.0, 0.0)
    })
    .await;
    let lost = |reason| counter("zk_rwlock_lost_total", &[("reason", reason), ("path", p)]);
    assert_eq!(lost("session_expired"), 1);
    assert_eq!(
        lost("node_deleted") + lost("lease_ran_out") + lost("session_closed"),
        0
    );
    gauges_become("the expiry is counted", || expired() == before + 1).await;
    assert_eq!(held.state(), HoldState::Lost);
    assert!(held.release().await.is_err());
    assert_eq!(lost("session_expired"), 1, "counted once");
    assert_eq!((lock.stats().holding, lock.stats().lost), (0, 1));
}

/// Every lock of a session follows its link, also one held again after
/// its holders left: two locks on one session, each held, released and
/// held again, move to `suspended` together while it is disconnected, and
/// back. Both for a session the library connected (its hub tells the
/// locks) and one the caller connected (each lock's holders follow it).
#[tokio::test]
async fn the_locks_of_one_session_held_again_move_with_its_link() {
    recorded();
    for library in [true, false] {
        let proxy = Proxy::start(&server().connect_string());
        let client = if library {
            zk_rwlock::connect_client(proxy.addr(), Duration::from_secs(4), WITHIN)
                .await
                .expect("connect")
        } else {
            support::client_on(proxy.addr()).await
        };
        locks_held_again_move_with_the_link(&proxy, client).await;
    }
}

async fn locks_held_again_move_with_the_link(proxy: &Proxy, client: zk::Client) {
    let (a, b) = (unique_path("metrics-link-a"), unique_path("metrics-link-b"));
    let (first, second) = (labelled_on(client.clone(), &a), labelled_on(client.clone(), &b));
    for lock in [&first, &second] {
        lock.write()
            .await
            .expect("writer")
            .release()
            .await
            .expect("release");
    }
    let held = (
        first.write().await.expect("writer"),
        second.read().await.expect("reader"),
    );
    assert_eq!(
        (holders(&a, "write"), holders(&b, "read")),
        ((1.0, 0.0), (1.0, 0.0))
    );

    proxy.set_blocked(true);
    proxy.cut_all();
    gauges_become("both locks' holders are counted suspended", || {
        (holders(&a, "write"), holders(&b, "read")) == ((0.0, 1.0), (0.0, 1.0))
    })
    .await;
    proxy.set_blocked(false);
    gauges_become("both are counted held again", || {
        (holders(&a, "write"), holders(&b, "read")) == ((1.0, 0.0), (1.0, 0.0))
    })
    .await;
    held.0.release().await.expect("release");
    held.1.release().await.expect("release");
    assert_eq!(
        (holders(&a, "write"), holders(&b, "read")),
        ((0.0, 0.0), (0.0, 0.0))
    );
}

/// A guard cut off past its lease deadline is lost when its state is
/// looked at (`lease_ran_out`), and its release does not count it again. (A session of its own, not the library's connect: the
/// expired sessions' counter is the other test's.)
#[tokio::test]
async fn a_lease_that_runs_out_loses_the_guard_once() {
    recorded();
    let direct = server().connect_string();
    let proxy = Proxy::start(&direct);
    let path = unique_path("metrics-lease");
    let p = path.as_str();
    let c = support::client_on(proxy.addr()).await;
    let lock = labelled_on(c.clone(), p);
    let held = lock.read().await.expect("reader");
    proxy.set_blocked(true);
    proxy.cut_all();
    gauges_become("the guard is counted suspended", || {
        holders(p, "read") == (0.0, 1.0)
    })
    .await;
    // Past the lease deadline, and nothing from the server yet.
    eventually("the lease runs out", WITHIN, || {
        let now = held.state();
        async move { now == HoldState::Lost }
    })
    .await;
    assert_eq!(holders(p, "read"), (0.0, 0.0));
    let lost = |reason| counter("zk_rwlock_lost_total", &[("reason", reason), ("path", p)]);
    assert_eq!(lost("lease_ran_out"), 1);
    // Whether the session outlived the cut or not, the guard stays lost;
    // its release (or the session's end) counts nothing more.
    proxy.set_blocked(false);
    let _ = held.release().await;
    assert_eq!(lost("lease_ran_out"), 1, "counted once");
    assert_eq!(
        lost("session_expired") + lost("session_closed") + lost("node_deleted"),
        0
    );
    assert_eq!(holders(p, "read"), (0.0, 0.0));
}

#[tokio::test]
async fn a_multi_guard_dropped_leaves_the_gauges() {
    recorded();
    let (a, b) = (unique_path("metrics-multi-a"), unique_path("metrics-multi-b"));
    let c = client().await;
    let multi = MultiLock::from_locks([
        (labelled_on(c.clone(), &a), Mode::Write),
        (labelled_on(c.clone(), &b), Mode::Read),
    ])
    .expect("multi-lock");
    let guard = multi.acquire().await.expect("every part");
    assert_eq!(
        (holders(&a, "write"), holders(&b, "read")),
        ((1.0, 0.0), (1.0, 0.0))
    );
    drop(guard);
    assert_eq!(
        (holders(&a, "write"), holders(&b, "read")),
        ((0.0, 0.0), (0.0, 0.0))
    );
    for path in [&a, &b] {
        support::assert_drained(path).await;
    }
}

#[test]
fn a_blocking_guard_counts_as_a_holder() {
    recorded();
    let path = unique_path("metrics-blocking");
    let p = path.as_str();
    let options = zk_rwlock::ConnectOptions::new();
    let c = zk_rwlock::blocking::connect(&server().connect_string(), &options).expect("connect");
    let lock = zk_rwlock::blocking::SharedLock::from_async(labelled_on(c, p)).expect("blocking lock");
    let guard = lock.write().expect("writer");
    assert_eq!(holders(p, "write"), (1.0, 0.0));
    assert_eq!(lock.as_async().stats().holding, 1);
    drop(guard);
    assert_eq!(holders(p, "write"), (0.0, 0.0));
    let reader = lock.read().expect("reader");
    assert_eq!(holders(p, "read"), (1.0, 0.0));
    reader.release().expect("release");
    assert_eq!(holders(p, "read"), (0.0, 0.0));
    assert_eq!(lock.as_async().stats().holding, 0);
}

/// Without the opt-in, no series names a path: every lock adds up in one.
/// (This test is the only one here whose locks have no path label.)
#[tokio::test]
async fn without_the_path_label_no_series_names_the_lock() {
    recorded();
    let path = unique_path("metrics-unlabelled");
    let lock = SharedLock::new(client().await, &path).expect("lock");
    let held = lock.write().await.expect("writer");
    assert_eq!(
        gauge("zk_rwlock_holders", &[("mode", "write"), ("state", "held")]),
        1.0
    );
    held.release().await.expect("release");
    assert_eq!(
        gauge("zk_rwlock_holders", &[("mode", "write"), ("state", "held")]),
        0.0
    );
    let grants = counter(
        "zk_rwlock_grants_total",
        &[("mode", "write"), ("handoff", "immediate")],
    );
    assert_eq!(grants, 1);
    let named: Vec<String> = snapshot().into_keys().filter(|k| k.contains(&path)).collect();
    assert!(named.is_empty(), "{named:?}");
}

/// A downgraded guard moves from the write holders to the read holders,
/// whether a reader node takes the writer's place or the writer node is
/// kept (a writer queued right behind it), and leaves them at its release.
#[tokio::test]
async fn a_downgrade_moves_the_guard_to_the_read_holders() {
    recorded();
    let path = unique_path("metrics-downgrade");
    let p = path.as_str();
    let lock = labelled(p).await;
    // Alone: a reader node takes the writer's place.
    let read = lock
        .write()
        .await
        .expect("writer")
        .downgrade()
        .await
        .expect("downgraded");
    assert_eq!(
        (holders(p, "write"), holders(p, "read")),
        ((0.0, 0.0), (1.0, 0.0))
    );
    assert_eq!(lock.stats().holding, 1);
    read.release().await.expect("release");
    assert_eq!(holders(p, "read"), (0.0, 0.0));
    // A writer queued right behind: the writer node is kept.
    let write = lock.write().await.expect("writer");
    let other = labelled(p).await;
    let next = {
        let other = other.clone();
        tokio::spawn(async move { other.write().await })
    };
    wait_contenders(&lock, 2).await;
    wait_watching(server(), write.node(), other.client().session_id().0).await;
    let kept = write.node().to_owned();
    let read = write.downgrade().await.expect("downgraded in place");
    assert_eq!(read.node(), kept);
    assert_eq!(
        (holders(p, "write"), holders(p, "read")),
        ((0.0, 0.0), (1.0, 0.0))
    );
    read.release().await.expect("release");
    joined(WITHIN, next)
        .await
        .expect("next writer")
        .release()
        .await
        .expect("release");
    gauges_become("no holders", || {
        holders(p, "read") == (0.0, 0.0) && holders(p, "write") == (0.0, 0.0)
    })
    .await;
    assert_eq!(lock.stats().holding, 0);
}
