//! Shared fixtures of the integration tests: one ZooKeeper server per test
//! binary (unique lock paths keep tests apart), clients, and polling with a
//! deadline instead of sleeping. They fail the test (panic) with a message
//! rather than return errors.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use zookeeper_client as zk;

use crate::launcher::ZkCluster;
use crate::proxy;

/// The server shared by the tests of one binary. It fails the test (never
/// skips it) with installation advice when ZooKeeper is missing.
pub fn server() -> &'static ZkCluster {
    static SERVER: OnceLock<ZkCluster> = OnceLock::new();
    SERVER.get_or_init(|| ZkCluster::standalone().unwrap_or_else(|e| need_zookeeper(e)))
}

/// A standalone server of the caller's own with this tick time (sessions
/// of 2 to 20 ticks), for a test that stops, restarts or kills it. Fails
/// the test (never skips it) with installation advice when ZooKeeper is
/// missing.
pub fn own_server(tick: Duration) -> ZkCluster {
    ZkCluster::builder()
        .tick_time(tick)
        .start()
        .unwrap_or_else(|e| need_zookeeper(e))
}

/// Fails the test that could not start a server, saying how to install one.
fn need_zookeeper(e: impl std::fmt::Display) -> ! {
    panic!(
        "these tests need a real ZooKeeper server: {e}\n\
         install it with `sudo apt-get install -y zookeeper` (or run ./scripts/test.sh, which does)"
    )
}

/// A fresh lock path, unique within this process.
pub fn unique_path(name: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "/test/{}-{}-{}",
        name,
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A new client session on `connect`.
pub async fn client_on(connect: &str) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .connect(connect)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {connect}: {e}"))
}

/// A new client session on the shared server.
pub async fn client() -> zk::Client {
    client_on(&server().connect_string()).await
}

/// Polls `cond` until it holds, failing the test after `within`.
pub async fn eventually<F, Fut>(what: &str, within: Duration, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if cond().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {within:?} waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The resident set size of process `pid` (`self` for this one) in kB, by
/// `VmRSS` in `/proc/<pid>/status`; `None` if it cannot be read.
pub fn rss_kb(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Drops `rt` (its tasks first, then the runtime), failing the test if
/// that takes `within` or more: a runtime that ends with locks held in its
/// tasks must not stall on their releases.
pub fn shut_down_within(rt: tokio::runtime::Runtime, within: Duration) {
    let started = std::time::Instant::now();
    drop(rt);
    let took = started.elapsed();
    assert!(took < within, "the runtime took {took:?} to shut down");
}

/// A multi-thread runtime of `workers` threads with I/O and timers, as
/// `#[tokio::main]` makes, for tests that drive one from a plain thread.
pub fn multi_thread_runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The value of the environment variable `name`, parsed, else `default`
/// (unset or not a value of `T`): a long run's knob.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Polls `f` every 20 ms on this thread until it returns `Some`, failing
/// the test after `timeout`: [`eventually`] for code outside a runtime.
pub fn poll<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out after {timeout:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The children of `path` (empty if it does not exist).
pub async fn children(client: &zk::Client, path: &str) -> Vec<String> {
    match client.list_children(path).await {
        Ok(children) => children,
        Err(zk::Error::NoNode) => Vec::new(),
        Err(e) => panic!("list {path}: {e}"),
    }
}

/// Asserts that the lock directory ends up with no contender nodes (a
/// background release may still be in flight, so this polls).
pub async fn assert_drained(path: &str) {
    settles_to(&client().await, path, &[]).await;
}

/// Waits until the children of `path` are exactly `want`; on timeout the
/// message names what is left.
pub async fn settles_to(client: &zk::Client, path: &str, want: &[String]) {
    let within = Duration::from_secs(20);
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let now = children(client, path).await;
        if now == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path}: after {within:?} its children are {now:?}, not {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Expires the session of `victim`, which must be connected through
/// `proxy`, deterministically: cut the victim off, attach a second client
/// to the same session (id and password) directly at `direct`, close it,
/// wait until the server has deleted the session's ephemeral nodes, then
/// let the victim reconnect: it is told its session expired.
pub async fn expire_behind(proxy: &proxy::Proxy, victim: &zk::Client, direct: &str) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let witness = format!(
        "/expire-witness-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    victim
        .create(
            &witness,
            &[],
            &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap_or_else(|e| panic!("create {witness}: {e}"));
    proxy.set_blocked(true);
    proxy.cut_all();
    let killer = zk::Client::connector()
        .with_session_timeout(victim.session_timeout())
        .with_session(victim.session().clone())
        .connect(direct)
        .await
        .unwrap_or_else(|e| panic!("cannot attach to session {}: {e}", victim.session_id()));
    drop(killer);
    let observer = client_on(direct).await;
    eventually("the server ended the session", Duration::from_secs(10), || {
        let (observer, witness) = (observer.clone(), witness.clone());
        async move { matches!(observer.check_stat(&witness).await, Ok(None)) }
    })
    .await;
    proxy.set_blocked(false);
}

/// Waits for a spawned task to finish, failing the test after `within`
/// (or if the task panicked), and returns its output.
pub async fn joined<T>(within: Duration, task: tokio::task::JoinHandle<T>) -> T {
    match tokio::time::timeout(within, task).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => panic!("the task failed: {e}"),
        Err(_) => panic!("the task did not finish within {within:?}"),
    }
}

/// The sessions (as `0x…` hex) that the server's `wchp` answer lists as
/// watching `node`.
pub fn watchers_in(wchp: &str, node: &str) -> Vec<String> {
    wchp.lines()
        .skip_while(|line| *line != node)
        .skip(1)
        .take_while(|line| line.starts_with('\t'))
        .map(|line| line.trim().to_owned())
        .collect()
}

/// Whether `session` has a watch on `node` on any running, unpaused member
/// of `cluster` (a session's watches live on the member it is connected to).
pub fn watches(cluster: &ZkCluster, node: &str, session: i64) -> bool {
    let session = format!("0x{session:x}");
    (0..cluster.members())
        .filter(|&i| cluster.is_running(i) && !cluster.is_paused(i))
        .filter_map(|i| cluster.four_letter(i, "wchp").ok())
        .any(|wchp| watchers_in(&wchp, node).contains(&session))
}

/// Waits until `session` watches `node` on `cluster`: the contender of that
/// session is really waiting on that node (its request is in the queue and
/// its watch is set), not merely not finished yet.
pub async fn wait_watching(cluster: &ZkCluster, node: &str, session: i64) {
    eventually(
        &format!("session 0x{session:x} watches {node}"),
        Duration::from_secs(20),
        || async { watches(cluster, node, session) },
    )
    .await;
}

/// The per-attempt token of a contender node name (`identity@token-M-seq`,
/// the token after the last `@`, as in a semaphore's `identity@permits-N@token-W-seq`;
/// Curator's `_c_<uuid>-`, kazoo's hex before `__`), or the whole name when
/// it has none.
pub fn token_of(child: &str) -> &str {
    if child.starts_with("_c_") && child.len() > 39 {
        return &child[..39];
    }
    if let Some((hex, _)) = child.split_once("__").filter(|_| !child.contains('@')) {
        return hex;
    }
    let rest = child.rsplit_once('@').map_or(child, |(_, rest)| rest);
    rest.split_once('-').map_or(rest, |(token, _)| token)
}

/// Fails at once, naming them, if two children carry one contender's token:
/// a create retried after a cut left a duplicate.
pub fn assert_no_duplicate(path: &str, children: &[String]) {
    for (i, a) in children.iter().enumerate() {
        for b in &children[i + 1..] {
            assert!(
                token_of(a) != token_of(b),
                "{path}: duplicate contender node: {a} and {b} carry the same token {} (children: {children:?})",
                token_of(a)
            );
        }
    }
}

/// Makes `path` and its missing parents through `client`, persistent and
/// open to anyone.
pub async fn mkdir_open(client: &zk::Client, path: &str) {
    client
        .mkdir(
            path,
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap_or_else(|e| panic!("mkdir {path}: {e}"));
}

/// Waits until the lock directory `path` has exactly `n` children and
/// returns them. Fails at once, with the listing, if there are more than
/// `n` or two of them belong to one contender, instead of timing out.
pub async fn wait_nodes(client: &zk::Client, path: &str, n: usize) -> Vec<String> {
    let within = Duration::from_secs(20);
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let now = children(client, path).await;
        assert_no_duplicate(path, &now);
        assert!(
            now.len() <= n,
            "{path}: {} nodes where {n} contenders exist: {now:?}",
            now.len()
        );
        if now.len() == n {
            return now;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {within:?} waiting for {n} contender nodes in {path}: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The child name of a node's path (the whole of it when it has no `/`).
pub fn child_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Creates, through `client`, an ephemeral child `pin` under `path`: not a
/// contender (the name does not parse), but it keeps the directory from
/// being empty, so nobody deletes it. It takes one sequence number. The
/// returned session must live as long as the pin is needed.
pub async fn pin(client: zk::Client, path: &str) -> zk::Client {
    client
        .create(
            &format!("{path}/pin"),
            &[],
            &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap_or_else(|e| panic!("create {path}/pin: {e}"));
    client
}

/// The SASL DIGEST-MD5 users of [`secured_server`]: `(user, password)`.
pub const SASL_USERS: [(&str, &str); 2] = [("alice", "alice-sasl-pw"), ("bob", "bob-sasl-pw")];

fn start_or_fail(builder: crate::ZkClusterBuilder) -> ZkCluster {
    match builder.start() {
        Ok(cluster) => cluster,
        Err(e) => panic!(
            "these tests need a real ZooKeeper server with TLS and SASL: {e}\n\
             install it with `sudo apt-get install -y zookeeper openjdk-17-jdk-headless openssl` \
             (or run ./scripts/test.sh, which does)"
        ),
    }
}

/// A secured server shared by the tests of one binary: a plain client port
/// ([`ZkCluster::connect_string`]), a TLS-only port that requires a client
/// certificate ([`ZkCluster::secure_connect_string`],
/// [`ZkCluster::tls_files`]), and SASL DIGEST-MD5 for [`SASL_USERS`].
pub fn secured_server() -> &'static ZkCluster {
    static SERVER: OnceLock<ZkCluster> = OnceLock::new();
    SERVER.get_or_init(|| {
        let mut builder = ZkCluster::builder().tls(crate::ClientAuth::Need);
        for (user, password) in SASL_USERS {
            builder = builder.sasl_user(user, password);
        }
        start_or_fail(builder)
    })
}

/// A server shared by the tests of one binary whose TLS-only port asks for
/// no client certificate: clients need only trust its CA.
pub fn tls_server() -> &'static ZkCluster {
    static SERVER: OnceLock<ZkCluster> = OnceLock::new();
    SERVER.get_or_init(|| start_or_fail(ZkCluster::builder().tls(crate::ClientAuth::None)))
}

/// The text of one of a secured cluster's PEM files.
pub fn pem(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Whether process `pid` exists and is not a zombie (read from `/proc`).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z"),
    }
}

/// The requests the shared test [`server`] received on session `sid` so
/// far (the `recved` count of `cons`).
pub fn received_on(sid: i64) -> i64 {
    received_by(server(), sid)
}

/// The requests `cluster`'s first server received on session `sid` so far
/// (the `recved` count of `cons`).
pub fn received_by(cluster: &ZkCluster, sid: i64) -> i64 {
    let cons = cluster.four_letter(0, "cons").unwrap();
    let tag = format!("sid=0x{sid:x},");
    let line = cons
        .lines()
        .find(|l| l.contains(&tag))
        .unwrap_or_else(|| panic!("no connection with {tag} in:\n{cons}"));
    let from = line.find("recved=").unwrap() + "recved=".len();
    line[from..].split(',').next().unwrap().parse().unwrap()
}

/// A server of its own that enforces quotas (`enforceQuota=true` in its
/// `zoo.cfg`), with the lock directory `/quota-app/lock` made and the quota
/// `limits` set on it (the `zookeeper_limits` data that zkCli's `setquota`
/// writes, e.g. `count=-1,bytes=-1,countHardLimit=-1,byteHardLimit=16`).
/// Returns the server and an admin session on it.
pub async fn quota_server(limits: &str) -> (ZkCluster, zk::Client) {
    let mut cluster = ZkCluster::standalone().expect("a ZooKeeper server");
    cluster.stop(0).expect("the server stops");
    {
        use std::io::Write;
        let cfg = cluster.dir().join("member-0").join("zoo.cfg");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&cfg)
            .expect("zoo.cfg opens");
        // Unknown zoo.cfg keys become `zookeeper.<key>` system properties.
        writeln!(f, "enforceQuota=true").expect("zoo.cfg is written");
    }
    cluster.start(0).expect("the server starts again");
    let admin = client_on(&cluster.connect_string()).await;
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    for p in ["/quota-app", "/quota-app/lock"] {
        admin
            .create(p, &[], &open)
            .await
            .unwrap_or_else(|e| panic!("create {p}: {e}"));
    }
    for p in ["/zookeeper/quota/quota-app", "/zookeeper/quota/quota-app/lock"] {
        match admin.create(p, &[], &open).await {
            Ok(_) | Err(zk::Error::NodeExists) => {}
            Err(e) => panic!("create {p}: {e}"),
        }
    }
    let quota = [
        ("zookeeper_limits", limits.as_bytes()),
        ("zookeeper_stats", b"count=1,bytes=0".as_slice()),
    ];
    for (name, data) in quota {
        let p = format!("/zookeeper/quota/quota-app/lock/{name}");
        admin
            .create(&p, data, &open)
            .await
            .unwrap_or_else(|e| panic!("create {p}: {e}"));
    }
    (cluster, admin)
}

/// What was logged in this process since the first call, at the levels
/// `filter` lets through (a `tracing_subscriber::EnvFilter` directive, such
/// as `zk_rwlock=debug` or `warn`). The first call installs the process's
/// subscriber: a later call's filter is ignored.
pub fn captured_logs(filter: &str) -> String {
    static LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        struct Sink;
        impl std::io::Write for Sink {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                LOG.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_ansi(false)
            .with_writer(|| Sink)
            .init();
    });
    String::from_utf8_lossy(&LOG.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
}

/// How many panics this process has had, on any thread, since the first
/// call, which installs a counting panic hook in front of the default one
/// (the panic is still printed). [`panics_since`] tells what they said.
pub fn panics_so_far() -> usize {
    panic_log().lock().unwrap_or_else(PoisonError::into_inner).len()
}

/// What the panics after the first `count` said: each with its thread and
/// place, so a test that saw one can name it in its failure.
pub fn panics_since(count: usize) -> Vec<String> {
    panic_log()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .skip(count)
        .cloned()
        .collect()
}

fn panic_log() -> &'static Mutex<Vec<String>> {
    static PANICS: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    PANICS.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            let said = match (
                info.payload().downcast_ref::<&str>(),
                info.payload().downcast_ref::<String>(),
            ) {
                (Some(s), _) => (*s).to_owned(),
                (_, Some(s)) => s.clone(),
                _ => "(no message)".to_owned(),
            };
            let place = info.location().map(ToString::to_string).unwrap_or_default();
            let entry = format!(
                "thread {:?} at {place}: {said}",
                thread.name().unwrap_or("unnamed")
            );
            panic_log()
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(entry);
            default(info);
        }));
        Mutex::new(Vec::new())
    })
}
