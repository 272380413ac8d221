//! Many contenders on one lock, against a real server: they queue over many
//! sessions (several contenders per session), then the queue drains. Every
//! contender must be granted exactly once, writers in the order of their
//! sequence numbers and never beside another holder. The test prints what
//! it measured: the time to queue them all, grants per second as the queue
//! drains, the hand-off p50, the client's memory per waiter, the server's
//! memory and the listings the contenders made.
//!
//! The CI-sized run (2,000 contenders) is the default test. The large runs
//! are `#[ignore]`d and sized by environment variables:
//!
//! ```text
//! SCALE_CONTENDERS=20000 SCALE_SESSIONS=200 SCALE_HEAP=2g \
//!   cargo test --release --test limits -- --ignored --nocapture many_contenders_sized
//! ```
//!
//! (`SCALE_MIX=1` makes every fifth contender a writer and the others
//! readers; `SCALE_HEAP` is the server's `-Xmx`, 512m by default;
//! `SCALE_QUEUE_AT_ONCE=N` queues them N at a time, each batch once the
//! one before waits; `SCALE_DEADLINE_S` bounds the queuing and each wait;
//! `SCALE_MAX_LISTING` is the locks' listing limit in bytes, 0 for none:
//! by default, `jute.maxbuffer`, which refuses contenders past about
//! 20,163 with `Error::ListingTooLarge`.)
//!
//! Then one session holding many locks, and waiting on some more, whose
//! connection is cut: every guard must be held again and every waiter still
//! waiting after the reconnection (the client registers its watches again
//! in `SetWatches` batches of 128 KiB of paths), and the waiters granted
//! once the holder releases. CI-sized with 2,000 locks; the large run:
//!
//! ```text
//! SCALE_PATHS=100000 cargo test --release --test limits -- --ignored --nocapture many_paths_sized
//! ```

use zk_rwlock_fixtures as support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::launcher::ZkCluster;
use support::{seq_of, Percentiles};
use zk_rwlock::{zk, HoldState, Mode, SharedLock};

/// The sessions' timeout: long, so that a loaded machine does not expire them.
const SESSION_TIMEOUT: Duration = Duration::from_secs(15);

/// A server of the test's own: sessions of up to 20 s (ticks of 1 s), and
/// `heap` as its maximum heap (`-Xmx`) if given.
fn start_server(heap: Option<&str>) -> ZkCluster {
    let mut builder = ZkCluster::builder().tick_time(Duration::from_secs(1));
    if let Some(heap) = heap {
        builder = builder.jvm_arg(&format!("-Xmx{heap}"));
    }
    builder.start().unwrap_or_else(|e| {
        panic!(
            "these tests need a real ZooKeeper server: {e}\n\
             install it with `sudo apt-get install -y zookeeper` (or run ./scripts/test.sh, which does)"
        )
    })
}

async fn session(connect: &str) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(SESSION_TIMEOUT)
        .connect(connect)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {connect}: {e}"))
}

/// The resident set size of a process, in bytes (`VmRSS` in `/proc`).
fn rss(pid: &str) -> u64 {
    support::rss_kb(pid).map_or(0, |kb| kb * 1024)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Waits until `n` contenders are queued, from the server's figures (a
/// listing of the directory is as large as the queue): `n` nodes more than
/// `nodes_before`, and as many watches more than `watches_before` (each
/// waiter watches after it listed the directory). Fails the test at
/// `deadline` or at the first contender's failure; prints the server's
/// figures every 10 s.
async fn queued(
    cluster: &ZkCluster,
    n: usize,
    nodes_before: u64,
    watches_before: u64,
    deadline: Instant,
    failed: &std::sync::Mutex<Option<String>>,
    progress: &mut Instant,
) {
    let server_pid = cluster.pid(0).map(|p| p.to_string()).unwrap_or_default();
    loop {
        let nodes = cluster
            .mntr(0, "zk_znode_count")
            .unwrap_or(0)
            .saturating_sub(nodes_before);
        let watches = cluster
            .mntr(0, "zk_watch_count")
            .unwrap_or(0)
            .saturating_sub(watches_before);
        if nodes >= n as u64 && watches >= n as u64 {
            return;
        }
        if progress.elapsed() > Duration::from_secs(10) {
            *progress = Instant::now();
            println!(
                "queuing: {nodes} of {n} nodes, {watches} watches; server RSS {:.0} MiB, {} connections; \
                 client RSS {:.0} MiB",
                mib(rss(&server_pid)),
                cluster.mntr(0, "zk_num_alive_connections").unwrap_or(0),
                mib(rss(&std::process::id().to_string())),
            );
        }
        if let Some(first) = failed.lock().ok().and_then(|f| f.clone()) {
            panic!("a contender failed while {nodes} of {n} were queued: {first}");
        }
        assert!(
            Instant::now() < deadline,
            "{nodes} of {n} contender nodes made, {watches} watches, by the deadline"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What one contender saw.
struct Grant {
    seq: i32,
    mode: Mode,
    granted: Instant,
    released: Instant,
}

/// A run's settings.
struct Run {
    contenders: usize,
    sessions: usize,
    /// Every fifth contender a writer, the others readers; else all writers.
    mix: bool,
    /// The longest a contender may wait for its grant.
    deadline: Duration,
    /// At most this many contenders queuing (not yet waiting) at once;
    /// 0: all at once.
    queue_at_once: usize,
    /// The locks' listing limit, if not their default (`jute.maxbuffer`).
    max_listing: Option<Option<usize>>,
}

/// What a run measured, printed by [`Figures::print`].
struct Figures {
    queue_time: Duration,
    drain_time: Duration,
    grants: usize,
    handoff_p50: Option<u64>,
    handoff_p99: Option<u64>,
    client_rss_per_waiter: f64,
    server_rss_before: u64,
    server_rss_queued: u64,
    data_size_queued: Option<u64>,
    watch_count_queued: Option<u64>,
    listings: u64,
    listing_bytes: u64,
    name_len: usize,
}

impl Figures {
    fn print(&self, run: &Run) {
        println!(
            "scale: {} contenders ({}) on {} sessions: queued in {:.2} s ({:.0}/s); drained {} grants in \
             {:.2} s ({:.0} grants/s); hand-off p50 {:.2} ms, p99 {:.2} ms; client RSS {:.0} bytes per \
             waiter; server RSS {:.0} -> {:.0} MiB queued, mntr approximate data size {:?} bytes, watch \
             count {:?}; {} listings ({:.2} per contender), about {:.1} MiB of names listed \
             ({}-byte names)",
            run.contenders,
            if run.mix { "1 writer in 5" } else { "all writers" },
            run.sessions,
            self.queue_time.as_secs_f64(),
            run.contenders as f64 / self.queue_time.as_secs_f64(),
            self.grants,
            self.drain_time.as_secs_f64(),
            self.grants as f64 / self.drain_time.as_secs_f64(),
            self.handoff_p50.unwrap_or(0) as f64 / 1e6,
            self.handoff_p99.unwrap_or(0) as f64 / 1e6,
            self.client_rss_per_waiter,
            mib(self.server_rss_before),
            mib(self.server_rss_queued),
            self.data_size_queued,
            self.watch_count_queued,
            self.listings,
            self.listings as f64 / run.contenders as f64,
            mib(self.listing_bytes),
            self.name_len,
        );
    }
}

/// Queues `run.contenders` contenders on one lock behind a writer that
/// holds it, spread over `run.sessions` sessions, then releases the writer
/// and lets the queue drain (each contender releases as soon as it is
/// granted). Asserts that every contender is granted exactly once, writers
/// in sequence order and never beside another holder.
async fn many_contenders(cluster: &ZkCluster, path: &str, run: &Run) -> Figures {
    let connect = cluster.connect_string();
    let server_pid = cluster.pid(0).map(|p| p.to_string()).unwrap_or_default();
    let me = std::process::id().to_string();

    let first = SharedLock::new(session(&connect).await, path).expect("valid lock path");
    let held = first.write().await.expect("the first writer holds");
    let mut locks = Vec::with_capacity(run.sessions);
    for _ in 0..run.sessions {
        let builder = SharedLock::builder(session(&connect).await, path);
        let builder = match run.max_listing {
            Some(limit) => builder.max_listing_size(limit),
            None => builder,
        };
        locks.push(builder.build().expect("valid lock path"));
    }
    let server_rss_before = rss(&server_pid);
    let client_before = rss(&me);

    // Holders now: writers count 1000, readers 1.
    let holding = Arc::new(AtomicI64::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(std::sync::Mutex::new(None::<String>));
    let nodes_before = cluster.mntr(0, "zk_znode_count").unwrap_or(0);
    let watches_before = cluster.mntr(0, "zk_watch_count").unwrap_or(0);
    let queue_start = Instant::now();
    let mut tasks = Vec::with_capacity(run.contenders);
    let batch = if run.queue_at_once == 0 {
        run.contenders
    } else {
        run.queue_at_once
    };
    let queue_deadline = Instant::now() + run.deadline;
    let mut progress = Instant::now();
    for i in 0..run.contenders {
        if i > 0 && i % batch == 0 {
            queued(
                cluster,
                i,
                nodes_before,
                watches_before,
                queue_deadline,
                &failed,
                &mut progress,
            )
            .await;
        }
        let lock = locks[i % run.sessions].clone();
        let mode = if !run.mix || i % 5 == 0 {
            Mode::Write
        } else {
            Mode::Read
        };
        let holding = holding.clone();
        let overlaps = overlaps.clone();
        let deadline = run.deadline;
        let failed = failed.clone();
        tasks.push(tokio::spawn(async move {
            let result = lock.acquire_timeout(mode, deadline).await;
            let guard = match result {
                Ok(Some(guard)) => guard,
                Ok(None) => {
                    return Err(format!(
                        "contender {i} ({mode:?}) not granted within {deadline:?}"
                    ))
                }
                Err(e) => {
                    let e = format!("contender {i} ({mode:?}): {e}");
                    if let Ok(mut first) = failed.lock() {
                        first.get_or_insert_with(|| e.clone());
                    }
                    return Err(e);
                }
            };
            let granted = Instant::now();
            let weight = if mode == Mode::Write { 1000 } else { 1 };
            let before = holding.fetch_add(weight, Ordering::SeqCst);
            if (mode == Mode::Write && before != 0) || before >= 1000 {
                overlaps.fetch_add(1, Ordering::SeqCst);
            }
            let seq = seq_of(guard.node());
            holding.fetch_sub(weight, Ordering::SeqCst);
            let released = Instant::now();
            guard
                .release()
                .await
                .map_err(|e| format!("release of contender {i}: {e}"))?;
            Ok(Grant {
                seq,
                mode,
                granted,
                released,
            })
        }));
    }

    // Queued: every contender's node is in the directory and every one has
    // listed it (and so decided to wait).
    let observer = session(&connect).await;
    let listings = |locks: &[SharedLock]| locks.iter().map(|l| l.stats().listings).sum::<u64>();
    queued(
        cluster,
        run.contenders,
        nodes_before,
        watches_before,
        queue_deadline,
        &failed,
        &mut progress,
    )
    .await;
    let queue_time = queue_start.elapsed();
    let client_rss_per_waiter = (rss(&me).saturating_sub(client_before)) as f64 / run.contenders as f64;
    let server_rss_queued = rss(&server_pid);
    let data_size_queued = cluster.mntr(0, "zk_approximate_data_size");
    let watch_count_queued = cluster.mntr(0, "zk_watch_count");
    let name_len = observer
        .list_children(path)
        .await
        .ok()
        .and_then(|names| names.first().map(String::len))
        .unwrap_or(0);

    let drain_start = Instant::now();
    let first_released = Instant::now();
    held.release().await.expect("the first writer releases");
    let mut grants = Vec::with_capacity(run.contenders);
    let mut failures = Vec::new();
    for task in tasks {
        match task.await {
            Ok(Ok(grant)) => grants.push(grant),
            Ok(Err(e)) => failures.push(e),
            Err(e) => failures.push(format!("task: {e}")),
        }
    }
    let drain_time = drain_start.elapsed();
    assert!(
        failures.is_empty(),
        "{} of {} contenders failed, the first: {:?}",
        failures.len(),
        run.contenders,
        failures.first()
    );
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "a writer beside another holder"
    );
    let seqs: HashSet<i32> = grants.iter().map(|g| g.seq).collect();
    assert_eq!(seqs.len(), run.contenders, "every contender granted exactly once");

    // In sequence order: each writer granted after everything before it
    // was released, each reader after the writers before it were.
    grants.sort_by_key(|g| g.seq);
    let mut last_release: Option<Instant> = Some(first_released);
    let mut last_writer_release = first_released;
    let mut handoffs = Vec::new();
    for g in &grants {
        match g.mode {
            Mode::Write => {
                let before = grants
                    .iter()
                    .take_while(|o| o.seq < g.seq)
                    .map(|o| o.released)
                    .max()
                    .unwrap_or(first_released)
                    .max(first_released);
                assert!(
                    g.granted >= before,
                    "writer {} granted before its predecessors released",
                    g.seq
                );
                if let Some(prev) = last_release {
                    handoffs.push(g.granted.saturating_duration_since(prev).as_nanos() as u64);
                }
                last_writer_release = g.released;
            }
            Mode::Read => {
                assert!(
                    g.granted >= last_writer_release,
                    "reader {} granted before the writer before it released",
                    g.seq
                );
            }
        }
        last_release = Some(g.released);
    }
    let hand = Percentiles::of(&handoffs);
    let total_listings = listings(&locks);
    // Each contender's first listing carries every name queued before it
    // (4 bytes of length and the name): about n^2/2 names in all.
    let n = run.contenders as u64;
    let listing_bytes = n * (n + 1) / 2 * (4 + name_len as u64)
        + (total_listings.saturating_sub(n)) * (n / 2) * (4 + name_len as u64);
    Figures {
        queue_time,
        drain_time,
        grants: grants.len(),
        handoff_p50: hand.at(50.0),
        handoff_p99: hand.at(99.0),
        client_rss_per_waiter,
        server_rss_before,
        server_rss_queued,
        data_size_queued,
        watch_count_queued,
        listings: total_listings,
        listing_bytes,
        name_len,
    }
}

/// CI-sized: 2,000 writers, then 2,000 contenders of a mix, over 100
/// sessions. Each listing stays under 130 KB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_contenders_on_one_lock_are_granted_once_each_in_order() {
    let cluster = start_server(None);
    for (name, mix) in [("chain", false), ("mix", true)] {
        let run = Run {
            contenders: 2000,
            sessions: 100,
            mix,
            deadline: Duration::from_secs(60),
            queue_at_once: 0,
            max_listing: None,
        };
        let figures = many_contenders(&cluster, &format!("/scale/{name}"), &run).await;
        figures.print(&run);
        // Each contender lists the directory when it queues, and writers
        // of a chain are handed the lock without listing again.
        assert!(
            figures.listings <= 2 * run.contenders as u64 + 10,
            "{} listings for {} contenders",
            figures.listings,
            run.contenders
        );
    }
}

/// The large runs, sized by `SCALE_CONTENDERS` (20,000), `SCALE_SESSIONS`
/// (200), `SCALE_MIX` (0) and `SCALE_HEAP` (the server's -Xmx).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes long; sized by SCALE_CONTENDERS, SCALE_SESSIONS, SCALE_MIX, SCALE_HEAP"]
async fn many_contenders_sized() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let heap = std::env::var("SCALE_HEAP").ok();
    let cluster = start_server(heap.as_deref());
    let run = Run {
        contenders: support::env_or("SCALE_CONTENDERS", 20_000),
        sessions: support::env_or("SCALE_SESSIONS", 200),
        mix: support::env_or::<usize>("SCALE_MIX", 0) != 0,
        deadline: Duration::from_secs(support::env_or("SCALE_DEADLINE_S", 1800)),
        queue_at_once: support::env_or("SCALE_QUEUE_AT_ONCE", 0),
        max_listing: std::env::var("SCALE_MAX_LISTING")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .map(|limit| (limit > 0).then_some(limit)),
    };
    println!(
        "server heap: -Xmx{}",
        heap.as_deref().unwrap_or("512m (the test kit's default)")
    );
    let figures = many_contenders(&cluster, "/scale/sized", &run).await;
    figures.print(&run);
}

/// What [`many_paths`] measured.
struct PathFigures {
    acquire_time: Duration,
    client_rss_per_lock: f64,
    server_rss: u64,
    watches: Option<u64>,
    reconnect_time: Duration,
    connections: usize,
    grant_time: Duration,
}

/// One session (through a proxy) holds the write lock on `paths` locks and
/// waits for the read lock on every tenth of `paths` other locks, which a
/// second session holds. The proxy cuts the first session's connection:
/// within `within` every guard is held again (same session) and every
/// waiter still waits; then the second session releases and every waiter
/// is granted within `within`.
async fn many_paths(cluster: &ZkCluster, paths: usize, within: Duration) -> PathFigures {
    let me = std::process::id().to_string();
    let server_pid = cluster.pid(0).map(|p| p.to_string()).unwrap_or_default();
    let proxy = support::proxy::Proxy::start(&cluster.connect_string());
    let holder = session(proxy.addr()).await;
    let other = session(&cluster.connect_string()).await;
    let session_id = holder.session_id();
    let before = rss(&me);
    let started = Instant::now();

    // The holder's write locks, 500 acquires at a time.
    let mut guards = Vec::with_capacity(paths);
    for chunk in (0..paths).collect::<Vec<_>>().chunks(500) {
        let acquires: Vec<_> = chunk
            .iter()
            .map(|&i| {
                let lock = SharedLock::new(holder.clone(), &format!("/paths/held/{i}")).expect("valid path");
                tokio::spawn(async move { lock.write_timeout(SESSION_TIMEOUT).await })
            })
            .collect();
        for acquire in acquires {
            match support::joined(within, acquire).await {
                Ok(Some(guard)) => guards.push(guard),
                other => panic!("a write lock of the holder: {other:?}"),
            }
        }
    }
    // Every tenth of as many other locks: held by the other session,
    // waited for by the holder's session.
    let waited = paths / 10;
    let mut blockers = Vec::with_capacity(waited);
    for i in 0..waited {
        let lock = SharedLock::new(other.clone(), &format!("/paths/waited/{i}")).expect("valid path");
        blockers.push(lock.write().await.expect("the other session's write lock"));
    }
    let waiters: Vec<_> = (0..waited)
        .map(|i| {
            let lock = SharedLock::new(holder.clone(), &format!("/paths/waited/{i}")).expect("valid path");
            tokio::spawn(async move { lock.read_timeout(Duration::from_secs(600)).await })
        })
        .collect();
    let watches_expected = (paths + waited) as u64;
    let watch_deadline = Instant::now() + within;
    let watches = loop {
        let watches = cluster.mntr(0, "zk_watch_count");
        if watches.unwrap_or(0) >= watches_expected {
            break watches;
        }
        assert!(
            Instant::now() < watch_deadline,
            "{watches:?} watches of {watches_expected} expected within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let acquire_time = started.elapsed();
    let client_rss_per_lock = rss(&me).saturating_sub(before) as f64 / (paths + waited) as f64;
    let server_rss = rss(&server_pid);

    // Cut the connection: the session comes back, and with it every guard.
    let mut states = holder.state_watcher();
    let cut = Instant::now();
    assert_eq!(proxy.cut_all(), 1, "the holder's connection is cut");
    let reconnected = async {
        loop {
            match states.changed().await {
                zk::SessionState::SyncConnected => return,
                state if state.is_terminated() => panic!("the holder's session ended: {state:?}"),
                _ => {}
            }
        }
    };
    tokio::time::timeout(within, reconnected)
        .await
        .unwrap_or_else(|_| panic!("the holder did not reconnect within {within:?}"));
    for (i, guard) in guards.iter().enumerate() {
        let state = tokio::time::timeout(within.saturating_sub(cut.elapsed()), guard.resumed())
            .await
            .unwrap_or_else(|_| panic!("guard {i} still {:?} {within:?} after the cut", guard.state()));
        assert_eq!(state, HoldState::Held, "guard {i} after the reconnection");
    }
    let reconnect_time = cut.elapsed();
    assert_eq!(holder.session_id(), session_id, "the same session");
    let connections = proxy.accepted();
    assert!(
        waiters.iter().all(|w| !w.is_finished()),
        "a waiter ended while its lock was held"
    );

    // The other session releases: every waiter is granted.
    let released = Instant::now();
    for blocker in blockers {
        blocker.release().await.expect("release");
    }
    for (i, waiter) in waiters.into_iter().enumerate() {
        match support::joined(within, waiter).await {
            Ok(Some(guard)) => drop(guard),
            other => panic!("waiter {i} after the release: {other:?}"),
        }
    }
    let grant_time = released.elapsed();
    for guard in guards {
        assert!(guard.is_held(), "a guard lost");
        drop(guard);
    }
    PathFigures {
        acquire_time,
        client_rss_per_lock,
        server_rss,
        watches,
        reconnect_time,
        connections,
        grant_time,
    }
}

fn print_paths(paths: usize, f: &PathFigures) {
    println!(
        "scale: one session holding {paths} write locks and waiting on {} more: set up in {:.1} s; client \
         RSS {:.0} bytes per lock; server RSS {:.0} MiB, {:?} watches; after a cut connection every guard \
         held again in {:.2} s ({} connections in all); the {} waiters granted {:.2} s after their \
         locks' release",
        paths / 10,
        f.acquire_time.as_secs_f64(),
        f.client_rss_per_lock,
        mib(f.server_rss),
        f.watches,
        f.reconnect_time.as_secs_f64(),
        f.connections,
        paths / 10,
        f.grant_time.as_secs_f64(),
    );
}

/// CI-sized: 2,000 locks held and 200 waited for by one session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_with_two_thousand_locks_gets_them_all_back_after_a_cut() {
    let cluster = start_server(None);
    let figures = many_paths(&cluster, 2000, Duration::from_secs(30)).await;
    print_paths(2000, &figures);
    assert_eq!(figures.connections, 2, "the holder reconnected once");
}

/// The large run, sized by `SCALE_PATHS` (100,000) and `SCALE_HEAP`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes long; sized by SCALE_PATHS and SCALE_HEAP"]
async fn many_paths_sized() {
    let heap = std::env::var("SCALE_HEAP").ok();
    let cluster = start_server(heap.as_deref());
    let paths = support::env_or::<usize>("SCALE_PATHS", 100_000);
    println!(
        "server heap: -Xmx{}",
        heap.as_deref().unwrap_or("512m (the test kit's default)")
    );
    let figures = many_paths(
        &cluster,
        paths,
        Duration::from_secs(support::env_or("SCALE_DEADLINE_S", 600)),
    )
    .await;
    print_paths(paths, &figures);
}
