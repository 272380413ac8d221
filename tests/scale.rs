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
//!   cargo test --release --test scale -- --ignored --nocapture many_contenders_sized
//! ```
//!
//! (`SCALE_MIX=1` makes every fifth contender a writer and the others
//! readers; `SCALE_HEAP` is the server's `-Xmx`, 512m by default.)

use zk_rwlock_testkit as support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::launcher::ZkCluster;
use support::{seq_of, Percentiles};
use zk_rwlock::{zk, Mode, SharedLock};

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
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// One figure of the server's `mntr` answer.
fn mntr(cluster: &ZkCluster, key: &str) -> Option<u64> {
    let answer = cluster.four_letter(0, "mntr").ok()?;
    answer
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.trim().parse().ok())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
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
        locks.push(SharedLock::new(session(&connect).await, path).expect("valid lock path"));
    }
    let server_rss_before = rss(&server_pid);
    let client_before = rss(&me);

    // Holders now: writers count 1000, readers 1.
    let holding = Arc::new(AtomicI64::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let nodes_before = mntr(cluster, "zk_znode_count").unwrap_or(0);
    let watches_before = mntr(cluster, "zk_watch_count").unwrap_or(0);
    let queue_start = Instant::now();
    let mut tasks = Vec::with_capacity(run.contenders);
    for i in 0..run.contenders {
        let lock = locks[i % run.sessions].clone();
        let mode = if !run.mix || i % 5 == 0 {
            Mode::Write
        } else {
            Mode::Read
        };
        let holding = holding.clone();
        let overlaps = overlaps.clone();
        let deadline = run.deadline;
        tasks.push(tokio::spawn(async move {
            let guard = match lock.acquire_timeout(mode, deadline).await {
                Ok(Some(guard)) => guard,
                Ok(None) => {
                    return Err(format!(
                        "contender {i} ({mode:?}) not granted within {deadline:?}"
                    ))
                }
                Err(e) => return Err(format!("contender {i} ({mode:?}): {e}")),
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
    let queue_deadline = Instant::now() + run.deadline;
    loop {
        // From the server's figures (a listing of the directory is as
        // large as the queue): every node made, and every waiter watching
        // (it listed the directory first).
        let nodes = mntr(cluster, "zk_znode_count").unwrap_or(0);
        let watches = mntr(cluster, "zk_watch_count").unwrap_or(0);
        if nodes >= nodes_before + run.contenders as u64 && watches >= watches_before + run.contenders as u64
        {
            break;
        }
        assert!(
            Instant::now() < queue_deadline,
            "{} of {} contender nodes made, {} watches, after {:?}",
            nodes.saturating_sub(nodes_before),
            run.contenders,
            watches.saturating_sub(watches_before),
            run.deadline
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let queue_time = queue_start.elapsed();
    let client_rss_per_waiter = (rss(&me).saturating_sub(client_before)) as f64 / run.contenders as f64;
    let server_rss_queued = rss(&server_pid);
    let data_size_queued = mntr(cluster, "zk_approximate_data_size");
    let watch_count_queued = mntr(cluster, "zk_watch_count");
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

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
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
        contenders: env_usize("SCALE_CONTENDERS", 20_000),
        sessions: env_usize("SCALE_SESSIONS", 200),
        mix: env_usize("SCALE_MIX", 0) != 0,
        deadline: Duration::from_secs(env_usize("SCALE_DEADLINE_S", 1800) as u64),
    };
    println!(
        "server heap: -Xmx{}",
        heap.as_deref().unwrap_or("512m (the test kit's default)")
    );
    let figures = many_contenders(&cluster, "/scale/sized", &run).await;
    figures.print(&run);
}
