//! The contender machine's driver (`src/lock/driver.rs`, `carrier.rs`,
//! `held.rs`, `keeper.rs`) at the edges, against a real server: a directory
//! refused for its data past the recycling threshold, what the logs name, a
//! revocation request seen while waiting, a missing chroot. No sleeps:
//! conditions are polled with a deadline, and background work is waited
//! for through the lock's last handle, which waits (up to 2 s, while
//! connected) for what it started.

use zk_rwlock_fixtures as support;

use std::sync::OnceLock;
use std::time::Duration;

use support::{children, client_on, eventually, joined, unique_path, wait_watching};
use zk_rwlock::{zk, Error, SharedLock};
use zk_rwlock_fixtures::launcher::ZkCluster;

/// Upper bound for anything that should happen promptly.
const SHORT: Duration = Duration::from_secs(15);
/// ZooKeeper's last sequence number.
const LIMIT: i32 = i32::MAX;
/// `ordering::RECYCLE_THRESHOLD`: from here on a contender that leaves an
/// empty directory recycles it.
const THRESHOLD: i32 = LIMIT - (1 << 20);

/// A node that holds an application's data and whose child counter is past
/// the threshold (say the parent of a busy queue of sequential children).
const COUNTER: &str = "/edges/counter";
/// A lock directory at the counter's limit.
const EXHAUSTED: &str = "/edges/exhausted";

/// One server for this module, with the seeded directories.
fn server() -> &'static ZkCluster {
    static SERVER: OnceLock<ZkCluster> = OnceLock::new();
    SERVER.get_or_init(|| {
        ZkCluster::builder()
            .seed_cversion(COUNTER, THRESHOLD + 5)
            .seed_cversion(EXHAUSTED, LIMIT)
            .start()
            .unwrap_or_else(|e| panic!("these tests need ZooKeeper and a JDK (javac): {e}"))
    })
}

async fn client() -> zk::Client {
    client_on(&server().connect_string()).await
}

async fn lock(path: &str) -> SharedLock {
    SharedLock::new(client().await, path).expect("valid lock path")
}

/// Everything `zk_rwlock` logged at DEBUG or above in this process since
/// the first call.
fn logs() -> String {
    support::captured_logs("zk_rwlock=debug")
}

/// The log lines that contain every one of `parts`.
fn lines_with(parts: &[&str]) -> Vec<String> {
    logs()
        .lines()
        .filter(|l| parts.iter().all(|p| l.contains(p)))
        .map(str::to_owned)
        .collect()
}

/// The requests this module's server received on session `sid` so far.
fn received_on(sid: i64) -> i64 {
    zk_rwlock_fixtures::received_by(server(), sid)
}

/// A lock on a node that holds someone's data is refused, "and the data
/// left alone" (docs/library.md), also when that node's child counter is past the
/// recycling threshold: the withdrawal of the refused acquire's node does
/// not recycle it (delete it and create it again, persistent and empty),
/// which would wipe the data and restart its child counter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_refused_for_its_data_keeps_it_past_the_recycling_threshold() {
    let c = client().await;
    c.set_data(COUNTER, b"42", None)
        .await
        .expect("the application's data");
    let (_, before) = c.get_data(COUNTER).await.expect("the node");
    let refused = lock(COUNTER).await;
    match refused.write().await.map(drop) {
        Err(Error::DirectoryHoldsData { path }) => assert_eq!(path, COUNTER),
        other => panic!("expected DirectoryHoldsData, got {other:?}"),
    }
    // The lock's last handle waits for the withdrawal it left running.
    drop(refused);
    let (data, after) = c
        .get_data(COUNTER)
        .await
        .expect("the application's node is still there");
    assert_eq!(
        (String::from_utf8_lossy(&data).into_owned(), after.czxid),
        ("42".to_owned(), before.czxid),
        "the refused lock deleted the application's node and made it again, empty \
         (czxid {} -> {}, child version {} -> {})",
        before.czxid,
        after.czxid,
        before.cversion,
        after.cversion,
    );
}

/// The driver's log lines name the node (`node=<path>`) from the create
/// on, also for an acquire decided by the listing pipelined with its create
/// (the uncontended grant, a `try_*` that finds the lock taken).
#[tokio::test]
async fn an_acquire_decided_at_once_names_its_node_in_the_log() {
    let _ = logs();
    let path = unique_path("edges-log");
    let (a, b) = (lock(&path).await, lock(&path).await);
    let held = a.write().await.expect("write");
    assert!(b.try_write().await.expect("try_write").is_none());
    let named = format!("node={path}/");
    for what in ["granted", "giving up"] {
        let lines = lines_with(&[&path, what]);
        assert!(!lines.is_empty(), "no `{what}` line for {path} in the log");
        assert!(
            lines.iter().all(|l| l.contains(&named)),
            "`{what}` without its node: {lines:#?}"
        );
    }
    held.release().await.expect("release");
}

/// The warning of an acquire refused at the counter's limit names the node.
#[tokio::test]
async fn the_exhausted_warning_names_the_node() {
    let _ = logs();
    let l = lock(EXHAUSTED).await;
    match l.write().await.map(drop) {
        Err(Error::SequenceExhausted { path }) => assert_eq!(path, EXHAUSTED),
        other => panic!("expected SequenceExhausted, got {other:?}"),
    }
    let lines = lines_with(&["sequence counter is used up", EXHAUSTED]);
    assert!(!lines.is_empty(), "no warning for {EXHAUSTED} in the log");
    let named = format!("node={EXHAUSTED}/");
    assert!(
        lines.iter().all(|l| l.contains(&named)),
        "the warning does not name the node: {lines:#?}"
    );
}

/// A revocation request written on a node while it waits is logged
/// ("revocation requested", INFO) when the guard is made.
#[tokio::test]
async fn a_revocation_seen_while_waiting_is_logged_when_granted() {
    let _ = logs();
    let path = unique_path("edges-revoked");
    let (a, b, revoker) = (lock(&path).await, lock(&path).await, lock(&path).await);
    let held = a.write().await.expect("a: write");
    let b_session = b.client().session_id().0;
    let waiting = tokio::spawn(async move { b.write().await.map(|g| (g, b)) });
    let c = client().await;
    let b_node = {
        let (c2, path2) = (c.clone(), path.clone());
        eventually("b queues", SHORT, move || {
            let (c, path) = (c2.clone(), path2.clone());
            async move { children(&c, &path).await.len() == 2 }
        })
        .await;
        let mut nodes = children(&c, &path).await;
        nodes.sort_by_key(|n| support::seq_of(n));
        format!("{path}/{}", nodes[1])
    };
    // b watches its own node while it waits on a's.
    wait_watching(server(), &b_node, b_session).await;
    assert!(revoker.revoke(&b_node).await.expect("revoke"), "b's node exists");
    // The request fired b's watch (removed at once on the server); b reads
    // its node again and sets a new watch: it has seen the request.
    wait_watching(server(), &b_node, b_session).await;
    held.release().await.expect("a: release");
    let (granted, _b) = joined(SHORT, waiting).await.expect("b: write");
    assert_eq!(granted.node(), b_node);
    assert!(granted.is_revocation_requested());
    // (The revoker logs its request too, from `zk_rwlock::lock::revoke`.)
    let lines = lines_with(&["zk_rwlock::lock::keeper: revocation requested", &b_node]);
    assert!(
        !lines.is_empty(),
        "the revocation request b's guard holds was never logged"
    );
    granted.release().await.expect("b: release");
}

/// A lock under a chroot that does not exist fails with `ChrootMissing`
/// once the directory and its parents could not be made: the parents'
/// `NoNode` fails the acquire at once, in a handful of requests, not after
/// `MAX_DIRECTORY_ATTEMPTS` rounds (which on a distant ensemble could
/// outlast `TRY_TIMEOUT` and turn `try_*`'s error into `Ok(None)`).
#[tokio::test]
async fn a_missing_chroot_is_found_without_ten_rounds_of_directory_making() {
    let root = client().await;
    let chroot = unique_path("edges-chroot");
    let chrooted = root.clone().chroot(chroot.as_str()).unwrap();
    let l = SharedLock::new(chrooted, "/locks/a").unwrap();
    let sid = root.session_id().0;
    // One request first, so that `cons` lists the session.
    root.check_stat("/").await.unwrap();
    let before = received_on(sid);
    match l.write().await.map(drop) {
        Err(Error::ChrootMissing { .. }) => {}
        other => panic!("expected ChrootMissing, got {other:?}"),
    }
    let sent = received_on(sid) - before;
    assert!(
        sent <= 12,
        "{sent} requests to find that the chroot {chroot} is missing"
    );
}
