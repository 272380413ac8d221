//! `Client::set_watches` of the vendored client (patch 18 in
//! `vendor/zookeeper-client/PATCHES.md`): several one-shot watches set with
//! one `SetWatches` request relative to a zxid, against a real server. The
//! server sends the events of what changed after that zxid before its
//! answer, so the client registers the watchers before it writes the
//! request: these tests check that none of those events is lost (each is
//! ready when the call returns), that a change before the zxid does not
//! fire, that the watches are set and fire later, across a reconnection
//! too, with a chroot, and what an error or an empty call does.

use zk_rwlock_fixtures as support;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use support::proxy::Proxy;
use support::{client, client_on, mkdir_open, received_on, server, unique_path, watches};
use zk_rwlock::zk;
use zk_rwlock::zk::EventType::{NodeCreated, NodeDataChanged, NodeDeleted};

/// Upper bound for anything that should happen promptly.
const WITHIN: Duration = Duration::from_secs(20);

/// `SetWatches`, as the proxy sees it.
const SET_WATCHES: i32 = 101;

/// A watcher's event to come.
type Event = Pin<Box<dyn Future<Output = zk::WatchedEvent> + Send>>;

/// The events of `watchers`, in order.
fn events_of(watchers: Vec<zk::OneshotWatcher>) -> Vec<Event> {
    watchers
        .into_iter()
        .map(|w| Box::pin(w.changed()) as Event)
        .collect()
}

/// `c.set_watches(zxid, data, exist)`: the events of its watchers, failing
/// the test on an error or after `WITHIN`.
async fn set(c: &zk::Client, zxid: i64, data: &[&str], exist: &[&str]) -> Vec<Event> {
    let watchers = answered(c.set_watches(zxid, data, exist))
        .await
        .unwrap_or_else(|e| panic!("set_watches: {e}"));
    assert_eq!(watchers.len(), data.len() + exist.len(), "one watcher per path");
    events_of(watchers)
}

/// The answer of a call, failing the test after `WITHIN`.
async fn answered<T>(call: impl Future<Output = T>) -> T {
    tokio::time::timeout(WITHIN, call)
        .await
        .unwrap_or_else(|_| panic!("no answer within {WITHIN:?}"))
}

/// The event if it is there already (one poll, no waiting).
async fn ready(event: &mut Event) -> Option<zk::WatchedEvent> {
    tokio::time::timeout(Duration::ZERO, event).await.ok()
}

/// Waits for the event, failing the test after `WITHIN`.
async fn fires(what: &str, event: &mut Event) -> (zk::EventType, String) {
    let event = tokio::time::timeout(WITHIN, event)
        .await
        .unwrap_or_else(|_| panic!("no event for {what} within {WITHIN:?}"));
    (event.event_type, event.path)
}

/// Asserts that none of `events` has fired yet.
async fn none_ready(when: &str, events: &mut [Event]) {
    for (i, event) in events.iter_mut().enumerate() {
        if let Some(e) = ready(event).await {
            panic!("{when}: watcher {i} fired: {:?} {}", e.event_type, e.path);
        }
    }
}

/// Asserts that every one of `events` has fired already, with `want`.
async fn all_ready(when: &str, events: &mut [Event], want: &[(zk::EventType, &str)]) {
    assert_eq!(events.len(), want.len(), "{when}: watchers");
    for (event, (kind, path)) in events.iter_mut().zip(want) {
        let got = ready(event)
            .await
            .unwrap_or_else(|| panic!("{when}: no event yet for {path} (expected {kind:?})"));
        assert_eq!(
            (got.event_type, got.path.as_str()),
            (*kind, *path),
            "{when}: the event of the watcher on {path}"
        );
    }
}

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

/// Creates `path` (persistent, open) and returns its creation's zxid.
async fn create(c: &zk::Client, path: &str) -> i64 {
    let (stat, _) = c
        .create(path, b"v0", &persistent())
        .await
        .unwrap_or_else(|e| panic!("create {path}: {e}"));
    stat.mzxid
}

/// A fresh directory, open to anyone.
async fn dir(c: &zk::Client, name: &str) -> String {
    let dir = unique_path(name);
    mkdir_open(c, &dir).await;
    dir
}

/// Waits until the client's state is `want`, failing the test if the
/// session ends first or nothing happens within `WITHIN`.
async fn state_becomes(states: &mut zk::StateWatcher, want: zk::SessionState) {
    let wait = async {
        loop {
            match states.changed().await {
                state if state == want => return,
                state if state.is_terminated() => panic!("the session ended: {state:?}"),
                _ => {}
            }
        }
    };
    tokio::time::timeout(WITHIN, wait)
        .await
        .unwrap_or_else(|_| panic!("not {want:?} within {WITHIN:?}"));
}

/// One call with two data paths and one exist path is one request; nothing
/// fires at once when nothing changed after the zxid; each watcher then
/// fires on its node's change (deletion, data change, creation).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_sets_every_watch_and_each_fires_on_its_change() {
    let c = client().await;
    let other = client().await;
    let sid = c.session_id().0;
    let base = dir(&c, "set-watches-one").await;
    // A ping may fall into one measurement: keep the least of a few.
    let mut least = i64::MAX;
    for round in 0..3 {
        let (gone, changed, created) = (
            format!("{base}/gone{round}"),
            format!("{base}/changed{round}"),
            format!("{base}/created{round}"),
        );
        create(&other, &gone).await;
        let zxid = create(&other, &changed).await;
        let before = received_on(sid);
        let mut events = set(&c, zxid, &[&gone, &changed], &[&created]).await;
        least = least.min(received_on(sid) - before);
        none_ready("nothing changed after the zxid", &mut events).await;

        other.delete(&gone, None).await.expect("delete");
        other.set_data(&changed, b"v1", None).await.expect("set_data");
        other.create(&created, b"", &persistent()).await.expect("create");
        assert_eq!(fires(&gone, &mut events[0]).await, (NodeDeleted, gone.clone()));
        assert_eq!(
            fires(&changed, &mut events[1]).await,
            (NodeDataChanged, changed.clone())
        );
        assert_eq!(
            fires(&created, &mut events[2]).await,
            (NodeCreated, created.clone())
        );
    }
    assert_eq!(
        least, 1,
        "requests the server received for one set_watches of three paths"
    );
}

/// What changed after the zxid fires before the call returns, none lost: a
/// data-watched node deleted (NodeDeleted), one whose data changed
/// (NodeDataChanged), one deleted and created again (NodeDataChanged), a
/// data-watched path that never existed (NodeDeleted), and exist-watched
/// nodes that exist, created after the zxid or before it (NodeCreated).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_after_the_zxid_fire_before_the_call_returns() {
    let c = client().await;
    let other = client().await;
    let base = dir(&c, "set-watches-immediate").await;
    let p = |name: &str| format!("{base}/{name}");
    let (deleted, changed, recreated, never) = (p("deleted"), p("changed"), p("recreated"), p("never"));
    let (created, old) = (p("created"), p("old"));
    create(&other, &old).await;
    create(&other, &deleted).await;
    create(&other, &recreated).await;
    let zxid = create(&other, &changed).await;

    other.delete(&deleted, None).await.expect("delete");
    other.set_data(&changed, b"v1", None).await.expect("set_data");
    other.delete(&recreated, None).await.expect("delete");
    create(&other, &recreated).await;
    create(&other, &created).await;

    let mut events = set(
        &c,
        zxid,
        &[&deleted, &changed, &recreated, &never],
        &[&created, &old],
    )
    .await;
    all_ready(
        "when set_watches returns",
        &mut events,
        &[
            (NodeDeleted, &deleted),
            (NodeDataChanged, &changed),
            (NodeDataChanged, &recreated),
            (NodeDeleted, &never),
            (NodeCreated, &created),
            (NodeCreated, &old),
        ],
    )
    .await;
}

/// A data change at or before the zxid does not fire (the zxid of the
/// change itself is "before": only a larger mzxid fires); the watch is set
/// and fires at the next change. The same for an exist watch on an absent
/// node deleted before the zxid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_up_to_the_zxid_does_not_fire_and_the_next_one_does() {
    let c = client().await;
    let other = client().await;
    let base = dir(&c, "set-watches-before").await;
    let (node, absent) = (format!("{base}/node"), format!("{base}/absent"));
    create(&other, &node).await;
    create(&other, &absent).await;
    other.delete(&absent, None).await.expect("delete");
    let stat = other.set_data(&node, b"v1", None).await.expect("set_data");

    let mut events = set(&c, stat.mzxid, &[&node], &[&absent]).await;
    // The server sends the events of earlier changes before its answer.
    none_ready("changes up to the zxid", &mut events).await;

    other.set_data(&node, b"v2", None).await.expect("set_data");
    assert_eq!(
        fires(&node, &mut events[0]).await,
        (NodeDataChanged, node.clone())
    );
    other.create(&absent, b"", &persistent()).await.expect("create");
    assert_eq!(
        fires(&absent, &mut events[1]).await,
        (NodeCreated, absent.clone())
    );
}

/// A client with a chroot names its paths without it, and its events (at
/// once and later) name them so; the chroot's own node is `/`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chrooted_client_gets_events_with_its_own_paths() {
    let other = client().await;
    let base = dir(&other, "set-watches-chroot").await;
    let c = client()
        .await
        .chroot(base.clone())
        .unwrap_or_else(|_| panic!("chroot {base}"));
    let zxid = create(&other, &format!("{base}/a")).await;
    create(&other, &format!("{base}/here")).await;

    let mut events = set(&c, zxid, &["/a", "/gone", "/"], &["/here", "/later"]).await;
    all_ready(
        "when set_watches returns",
        &mut events[3..4],
        &[(NodeCreated, "/here")],
    )
    .await;
    all_ready(
        "when set_watches returns",
        &mut events[1..2],
        &[(NodeDeleted, "/gone")],
    )
    .await;
    none_ready("unchanged", &mut events[..1]).await;
    none_ready("unchanged", &mut events[2..3]).await;
    none_ready("absent", &mut events[4..]).await;

    other
        .set_data(&format!("{base}/a"), b"v1", None)
        .await
        .expect("set_data");
    assert_eq!(
        fires("/a", &mut events[0]).await,
        (NodeDataChanged, "/a".to_owned())
    );
    other.set_data(&base, b"v1", None).await.expect("set_data");
    assert_eq!(
        fires("/", &mut events[2]).await,
        (NodeDataChanged, "/".to_owned())
    );
    other
        .create(&format!("{base}/later"), b"", &persistent())
        .await
        .expect("create");
    assert_eq!(
        fires("/later", &mut events[4]).await,
        (NodeCreated, "/later".to_owned())
    );
}

/// Watchers set with `set_watches` are set again after a reconnection, like
/// every watcher: a node changed while the client was cut off fires on the
/// reconnection, one changed after it fires then. A `set_watches` called
/// while the client is cut off waits for the reconnection, whose own
/// `SetWatches` (same xid −8) answers nothing of it: it gets its own
/// answer and its events, and the connection is not dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_are_set_again_after_a_reconnection() {
    let proxy = Proxy::start(&server().connect_string());
    let c = client_on(proxy.addr()).await;
    let other = client().await;
    let base = dir(&other, "set-watches-reconnect").await;
    let p = |name: &str| format!("{base}/{name}");
    let (during, after, appears, late) = (p("during"), p("after"), p("appears"), p("late"));
    create(&other, &during).await;
    create(&other, &after).await;
    let late_zxid = create(&other, &late).await;

    let mut events = set(&c, late_zxid, &[&during, &after], &[&appears]).await;
    none_ready("nothing changed", &mut events).await;

    let mut states = c.state_watcher();
    proxy.set_blocked(true);
    assert_eq!(proxy.cut_all(), 1, "the client's connection is cut");
    state_becomes(&mut states, zk::SessionState::Disconnected).await;
    other.set_data(&during, b"v1", None).await.expect("set_data");
    other.create(&appears, b"", &persistent()).await.expect("create");
    other.set_data(&late, b"v1", None).await.expect("set_data");
    // Sent now, written after the reconnection.
    let late_call = c.set_watches(late_zxid, &[&late], &[]);
    proxy.set_blocked(false);
    state_becomes(&mut states, zk::SessionState::SyncConnected).await;

    assert_eq!(
        fires(&during, &mut events[0]).await,
        (NodeDataChanged, during.clone())
    );
    assert_eq!(
        fires(&appears, &mut events[2]).await,
        (NodeCreated, appears.clone())
    );
    let late_watchers = answered(late_call).await.expect("set_watches sent while cut off");
    let mut late_events = events_of(late_watchers);
    all_ready(
        "after the reconnection",
        &mut late_events,
        &[(NodeDataChanged, &late)],
    )
    .await;
    none_ready("unchanged since", &mut events[1..2]).await;
    other.delete(&after, None).await.expect("delete");
    assert_eq!(fires(&after, &mut events[1]).await, (NodeDeleted, after.clone()));
    assert_eq!(proxy.accepted(), 2, "the client reconnected once");
}

/// Empty lists send nothing and return no watcher at once; a bad path is
/// refused without a request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_lists_and_bad_paths_send_nothing() {
    let c = client().await;
    let sid = c.session_id().0;
    // A ping may fall into one measurement: keep the least of a few.
    let mut least = i64::MAX;
    for _ in 0..3 {
        let before = received_on(sid);
        let mut call = Box::pin(c.set_watches(0, &[], &[]));
        let result = tokio::time::timeout(Duration::ZERO, &mut call)
            .await
            .expect("answered at once");
        assert!(matches!(result, Ok(ref w) if w.is_empty()), "{result:?}");
        assert!(
            matches!(
                answered(c.set_watches(0, &["relative"], &[])).await,
                Err(zk::Error::BadArguments(_))
            ),
            "a path without a leading slash"
        );
        assert!(
            matches!(
                answered(c.set_watches(0, &["/ok"], &["/bad/"])).await,
                Err(zk::Error::BadArguments(_))
            ),
            "a path with a trailing slash"
        );
        least = least.min(received_on(sid) - before);
    }
    assert_eq!(least, 0, "requests the server received");
}

/// The connection is lost after the request was written, before its
/// answer: the call fails with `ConnectionLoss`, and its watchers, which
/// the client set again on its reconnection, are removed from the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_lost_before_the_answer_fails_and_leaves_no_watch() {
    let proxy = Proxy::start(&server().connect_string());
    let c = client_on(proxy.addr()).await;
    let sid = c.session_id().0;
    let base = dir(&c, "set-watches-lost").await;
    let (node, absent) = (format!("{base}/node"), format!("{base}/absent"));
    let zxid = create(&c, &node).await;

    let mut states = c.state_watcher();
    proxy.cut_after_request(&[SET_WATCHES]);
    let result = answered(c.set_watches(zxid, &[&node], &[&absent])).await;
    assert!(matches!(result, Err(zk::Error::ConnectionLoss)), "{result:?}");
    assert_eq!(proxy.fired(), 1, "the cut after SetWatches");
    state_becomes(&mut states, zk::SessionState::SyncConnected).await;
    // The watchers' removals were asked before this request: the server
    // has handled them when it answers it.
    answered(c.check_stat(&node))
        .await
        .expect("a request after the reconnection");
    for path in [&node, &absent] {
        assert!(!watches(server(), path, sid), "the session still watches {path}");
    }
    assert_eq!(proxy.accepted(), 2, "the client reconnected once");
}

/// A session that expires while the request waits fails the call with
/// `SessionExpired`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_fails_the_call() {
    let proxy = Proxy::start(&server().connect_string());
    let c = client_on(proxy.addr()).await;
    let base = dir(&c, "set-watches-expired").await;
    let node = format!("{base}/node");
    let zxid = create(&c, &node).await;
    support::expire_behind(&proxy, &c, &server().connect_string()).await;
    let result = answered(c.set_watches(zxid, &[&node], &[])).await;
    assert!(matches!(result, Err(zk::Error::SessionExpired)), "{result:?}");
}

/// Nodes the session may not read, on a server that checks READ when a
/// watch fires (the fix of CVE-2024-23944: upstream 3.8.4 and 3.9.2; the
/// test kit's Debian 3.8.0-11+deb12u2 has it). The call succeeds. The
/// watches are set, but their later events never come: a deletion, a data
/// change, a creation. The events sent at once come all the same: the
/// server sends them without that check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_node_fires_only_at_once() {
    let owner = client().await;
    owner.auth("digest", b"set-watches:secret").await.expect("auth");
    let c = client().await;
    let sid = c.session_id().0;
    let base = dir(&owner, "set-watches-unreadable").await;
    let secret = zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all());
    let p = |name: &str| format!("{base}/{name}");
    let (deleted, changed, hidden, old) = (p("deleted"), p("changed"), p("hidden"), p("old"));
    let (earlier, _) = owner.create(&old, b"", &secret).await.expect("create");
    owner.create(&deleted, b"", &secret).await.expect("create");
    let (stat, _) = owner.create(&changed, b"", &secret).await.expect("create");
    assert!(
        matches!(c.get_data(&changed).await, Err(zk::Error::NoAuth)),
        "the node is unreadable"
    );

    let mut later = set(&c, stat.mzxid, &[&deleted, &changed], &[&hidden]).await;
    none_ready("nothing changed after the zxid", &mut later).await;
    assert!(watches(server(), &changed, sid), "the server set the watch");
    owner.delete(&deleted, None).await.expect("delete");
    owner.set_data(&changed, b"x", None).await.expect("set_data");
    owner.create(&hidden, b"", &secret).await.expect("create");
    // Notifications of these changes would come before this answer (of a
    // node the session may read: from ZooKeeper 3.8.4 on, `exists` of a
    // node that is there checks READ).
    answered(c.check_stat(&base)).await.expect("check_stat");
    none_ready("after the changes", &mut later).await;

    // The same nodes, relative to a zxid before they changed: at once.
    let mut at_once = set(&c, earlier.mzxid, &[&deleted, &changed], &[&old]).await;
    all_ready(
        "when set_watches returns",
        &mut at_once,
        &[
            (NodeDeleted, &deleted),
            (NodeDataChanged, &changed),
            (NodeCreated, &old),
        ],
    )
    .await;
}

/// The removal of a dropped watcher that waits for the answer of a watching
/// request on the same path (here a `getData` that fails: the node is
/// absent) is not sent after a `SetWatches` on that path: it would remove
/// the new watch on the server, whose watcher would never fire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_removal_does_not_remove_the_new_watch() {
    let c = client().await;
    let other = client().await;
    let base = dir(&c, "set-watches-removal").await;
    for round in 0..5 {
        let path = format!("{base}/node{round}");
        let (stat, old) = c.check_and_watch_stat(&path).await.expect("exists");
        assert!(stat.is_none(), "{path} is absent");
        let zxid = other.set_data(&base, b"", None).await.expect("set_data").mzxid;
        // In order on the session: a watching request that will fail, the
        // old watcher's removal (waiting for that request), the new watch.
        let failing = c.get_and_watch_data(&path);
        drop(old);
        let watchers = c.set_watches(zxid, &[], &[&path]);
        assert!(
            matches!(failing.await, Err(zk::Error::NoNode)),
            "getData of an absent node"
        );
        let mut events = events_of(answered(watchers).await.expect("set_watches"));
        none_ready("absent", &mut events).await;
        other.create(&path, b"", &persistent()).await.expect("create");
        assert_eq!(fires(&path, &mut events[0]).await, (NodeCreated, path.clone()));
    }
}
