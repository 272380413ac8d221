//! A lock holder with many watches loses its connection. After a
//! reconnection the client registers its watches again with `SetWatches`
//! requests of about 128 KiB of paths each, and every one of them carries
//! the same predefined xid (−8). The vendored zookeeper-client matches
//! their replies in order (patch 4 in vendor/zookeeper-client/PATCHES.md);
//! without that, the second reply found no request, the client dropped the
//! connection, and did so after every reconnection until it gave up the
//! session as expired, although the server still held it.

use zk_rwlock_fixtures as support;

use std::time::Duration;

use support::proxy::Proxy;
use support::{client, client_on, eventually, lock, server, unique_path, wait_contenders};
use zk_rwlock::node_name::RELEASE_MARKER_SUFFIX;
use zk_rwlock::{zk, HoldState, SharedLock};

/// How many nodes the holder watches, and the length of their names:
/// together about 180 KB of paths, more than one `SetWatches` carries.
const NODES: usize = 800;
const NAME_LEN: usize = 200;

/// Upper bound for anything that should happen promptly.
const WITHIN: Duration = Duration::from_secs(20);

/// Runs `f` on every one of `paths` at once (on clones of `client`) and
/// returns the results in the order of `paths`.
async fn on_all<T, F, Fut>(client: &zk::Client, paths: &[String], f: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(zk::Client, String) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    let tasks: Vec<_> = paths
        .iter()
        .map(|path| tokio::spawn(f(client.clone(), path.clone())))
        .collect();
    let mut out = Vec::with_capacity(tasks.len());
    for task in tasks {
        out.push(support::joined(WITHIN, task).await);
    }
    out
}

/// Waits until `states` reports `SyncConnected`, failing the test if the
/// session ends first or nothing happens within `WITHIN`.
async fn reconnected(states: &mut zk::StateWatcher) {
    let wait = async {
        loop {
            match states.changed().await {
                zk::SessionState::SyncConnected => return,
                state if state.is_terminated() => panic!("the client ended its session: {state:?}"),
                _ => {}
            }
        }
    };
    tokio::time::timeout(WITHIN, wait)
        .await
        .unwrap_or_else(|_| panic!("the client did not reconnect within {WITHIN:?}"));
}

/// A write lock holder whose session watches 800 nodes with 200-character
/// names loses its connection: it reconnects once, keeps its session and
/// its lock, and every watch is registered again (each fires when another
/// session changes its node).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_with_800_long_watched_paths_reconnects_once_and_keeps_them() {
    let proxy = Proxy::start(&server().connect_string());
    let holder = client_on(proxy.addr()).await;
    let other = client().await;
    let session = holder.session_id();
    let lock = SharedLock::new(holder.clone(), &unique_path("many-watches-lock")).unwrap();
    let guard = lock.write().await.unwrap();

    let dir = unique_path("many-watches");
    support::mkdir_open(&other, &dir).await;
    let paths: Vec<String> = (0..NODES)
        .map(|i| format!("{dir}/{i:04}{}", "x".repeat(NAME_LEN - 4)))
        .collect();
    let bytes: usize = paths.iter().map(String::len).sum();
    assert!(
        bytes > 129 * 1024,
        "{bytes} bytes of paths: more than one SetWatches (128 KiB)"
    );
    on_all(&other, &paths, |c, path| async move {
        let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        c.create(&path, &[], &persistent)
            .await
            .unwrap_or_else(|e| panic!("create {path}: {e}"));
    })
    .await;
    let watchers = on_all(&holder, &paths, |c, path| async move {
        let (_, _, watcher) = c
            .get_and_watch_data(&path)
            .await
            .unwrap_or_else(|e| panic!("watch {path}: {e}"));
        watcher
    })
    .await;
    assert_eq!(proxy.accepted(), 1, "one connection before the cut");

    let mut states = holder.state_watcher();
    assert_eq!(proxy.cut_all(), 1, "the holder's connection is cut");
    reconnected(&mut states).await;
    // The client takes requests again once the server has answered all it
    // sent on connecting (its `SetWatches`).
    let answered = tokio::time::timeout(WITHIN, holder.check_stat(&dir))
        .await
        .unwrap_or_else(|_| panic!("no answer within {WITHIN:?}"));
    assert!(
        matches!(answered, Ok(Some(_))),
        "a request after the reconnection: {answered:?} ({} connections)",
        proxy.accepted()
    );
    let resumed = tokio::time::timeout(WITHIN, guard.resumed())
        .await
        .unwrap_or_else(|_| panic!("the guard still suspended after {WITHIN:?}"));
    assert_eq!(resumed, HoldState::Held, "the guard after the reconnection");

    // Every watch is registered again (the server keeps watches per
    // connection): changes by another session reach all watchers. The
    // connection count checked after them covers this time too.
    on_all(&other, &paths, |c, path| async move {
        c.set_data(&path, b"changed", None)
            .await
            .unwrap_or_else(|e| panic!("set {path}: {e}"));
    })
    .await;
    for (path, watcher) in paths.iter().zip(watchers) {
        let event = tokio::time::timeout(WITHIN, watcher.changed())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "no event for {path} within {WITHIN:?}; {} connections, client {:?}",
                    proxy.accepted(),
                    holder.state()
                )
            });
        assert_eq!(
            (event.event_type, event.path.as_str()),
            (zk::EventType::NodeDataChanged, path.as_str()),
            "the watch on {path} ({} connections, client {:?}, session event {:?})",
            proxy.accepted(),
            holder.state(),
            event.session_state
        );
    }

    assert_eq!(proxy.accepted(), 2, "the holder reconnected once");
    assert_eq!(holder.session_id(), session, "the same session");
    assert_eq!(holder.state(), zk::SessionState::SyncConnected);
    assert_eq!(guard.state(), HoldState::Held, "the guard at the end");
    guard.release().await.unwrap();
}

/// How many marker paths a session watches (from `wchc`, by session).
fn marker_watches_of(session: i64) -> usize {
    let wchc = server().four_letter(0, "wchc").unwrap();
    let mut in_session = false;
    let mut n = 0;
    for line in wchc.lines() {
        if line.starts_with("0x") {
            in_session = i64::from_str_radix(line.trim().trim_start_matches("0x"), 16).ok() == Some(session);
        } else if in_session && line.trim().ends_with(RELEASE_MARKER_SUFFIX) {
            n += 1;
        }
    }
    n
}

/// A lock path of about `len` bytes, in segments of 200 bytes.
fn long_path(name: &str, len: usize) -> String {
    let mut path = unique_path(name);
    while path.len() + 201 < len {
        path.push('/');
        path.push_str(&"s".repeat(200));
    }
    path
}

/// One session queues `WAITERS` writers on a lock with a ~4 KiB path (the
/// documented limit is 4096 bytes): all but the first watch a release
/// marker with `exists`, about 1.2 MB of paths, more than a server takes in
/// one request (`jute.maxbuffer`). Its connection is cut once: it
/// reconnects and keeps its session. The client registers exists watches
/// again in batches as data watches; it once sent every batch's exists
/// paths again in each later batch (patch 8 in
/// vendor/zookeeper-client/PATCHES.md), so the batches grew past the
/// server's limit, the server dropped every reconnection, and the session
/// was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_marker_watches_on_one_session_survive_a_reconnection() {
    const WAITERS: usize = 320;
    let path = long_path("many-marker-watches", 3900);
    assert!(path.len() <= 4096);
    let head_lock = lock(&path).await;
    let head = head_lock.write().await.unwrap();

    let proxy = Proxy::start(&server().connect_string());
    let waiter_client = client_on(proxy.addr()).await;
    let session = waiter_client.session_id().0;
    let waiters_lock = SharedLock::new(waiter_client.clone(), &path).unwrap();
    let mut tasks = Vec::new();
    for _ in 0..WAITERS {
        let l = waiters_lock.clone();
        tasks.push(tokio::spawn(async move { l.write().await }));
    }
    wait_contenders(&head_lock, WAITERS + 1).await;
    eventually("the waiters watch their markers", Duration::from_secs(60), || {
        let n = marker_watches_of(session);
        async move { n >= WAITERS - 1 }
    })
    .await;

    let mut states = waiter_client.state_watcher();
    assert_eq!(proxy.cut_all(), 1);
    let reconnected = tokio::time::timeout(WITHIN, async {
        loop {
            match states.changed().await {
                zk::SessionState::SyncConnected => return Ok(()),
                s if s.is_terminated() => return Err(s),
                _ => {}
            }
        }
    })
    .await;
    let answered = tokio::time::timeout(WITHIN, waiter_client.check_stat(&path)).await;
    let accepted = proxy.accepted();
    // Clean up before asserting.
    for t in &tasks {
        t.abort();
    }
    drop(head);
    assert!(
        matches!(reconnected, Ok(Ok(()))) && matches!(answered, Ok(Ok(Some(_)))),
        "the session with {WAITERS} marker watches did not come back: reconnected {reconnected:?}, \
         request after it {answered:?}, {accepted} connections accepted by the proxy"
    );
}

/// The same cut, with the library out of the picture: one session with
/// `n` exists watches on absent ~3.8 KiB paths (what a marker's watch is),
/// or data watches on existing nodes (`data`), comes back.
async fn raw_watches_survive_a_cut(n: usize, data: bool) -> Result<(), String> {
    let dir = long_path("many-raw-watches", 3800);
    let other = client().await;
    other
        .mkdir(
            &dir,
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .ok();
    let paths: Vec<String> = (0..n).map(|i| format!("{dir}/{i:04}-x.released")).collect();
    if data {
        for p in &paths {
            other
                .create(
                    p,
                    &[],
                    &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
                )
                .await
                .unwrap();
        }
    }
    let proxy = Proxy::start(&server().connect_string());
    let c = client_on(proxy.addr()).await;
    let mut watchers = Vec::new();
    for p in &paths {
        if data {
            watchers.push(c.get_and_watch_data(p).await.unwrap().2);
        } else {
            let (stat, w) = c.check_and_watch_stat(p).await.unwrap();
            assert!(stat.is_none());
            watchers.push(w);
        }
    }
    let mut states = c.state_watcher();
    proxy.cut_all();
    let _ = tokio::time::timeout(WITHIN, async {
        loop {
            match states.changed().await {
                zk::SessionState::SyncConnected => return,
                s if s.is_terminated() => return,
                _ => {}
            }
        }
    })
    .await;
    let answered = tokio::time::timeout(WITHIN, c.check_stat(&dir)).await;
    match answered {
        Ok(Ok(Some(_))) => Ok(()),
        other => Err(format!("{other:?} after {} connections", proxy.accepted())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_data_watches_of_4k_survive_a_cut() {
    raw_watches_survive_a_cut(300, true).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_exists_watches_of_4k_survive_a_cut() {
    raw_watches_survive_a_cut(300, false).await.unwrap();
}
