//! ZooKeeper's limits, against a real server: the request limit
//! (`jute.maxbuffer`) and lock directories that hold someone's data (at the
//! end), and first the sequence counter at its limit, on a server whose
//! lock directories start with their child version counter (cversion) near
//! `2147483647` (seeded with `ZkClusterBuilder::seed_cversion`, no 2^31
//! creates). The counter does not wrap: after `2147483647` the server hands
//! out `2147483647` again, and creates that are in flight together even get
//! wrapped, negative and repeated numbers (see the first test). Such nodes
//! must never be granted: the acquire withdraws its node and fails with
//! `Error::SequenceExhausted`, and whoever leaves the directory empty near
//! the limit deletes it, so that the next contender starts again from 0,
//! and says so in a warning.

use zk_rwlock_fixtures as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use support::{children, client_on, eventually, joined, pin, seq_of};
use zk_rwlock::{zk, Error, SharedLock};
use zk_rwlock_fixtures::launcher::ZkCluster;

/// Upper bound for anything that should happen promptly.
const SHORT: Duration = Duration::from_secs(15);
/// ZooKeeper's last sequence number: the counter stops there.
const LIMIT: i32 = i32::MAX;
/// The start of the last 2^20 counter values before the limit, where the
/// lock recycles directories that become empty and warns once.
const THRESHOLD: i32 = LIMIT - (1 << 20);

/// The server's own behaviour at the limit (no lock involved).
const SERVER: &str = "/limits/server";
/// Test a: contenders run into the limit.
const RACE: &str = "/limits/race";
/// Test a: contenders run through the limit on a directory that is recycled.
const RECYCLED_RACE: &str = "/limits/recycled-race";
/// Test b: a lone contender at the limit, by try, timeout and plain wait.
const ALONE_TRY: &str = "/limits/alone-try";
const ALONE_TIMEOUT: &str = "/limits/alone-timeout";
const ALONE_WAIT: &str = "/limits/alone-wait";
const ALONE_WRAPPED: &str = "/limits/alone-wrapped";
/// Test c: recovery of plain persistent directories.
const RECYCLED: &str = "/limits/recycled";
const HELD: &str = "/limits/held";
/// Test d, `zk-rwlock exec` at the limit, is the command line's
/// (`cli/tests/exec/sequence_limit.rs`). Test e: the warning past the threshold.
const WARNED: &str = "/limits/warned";
/// Test e: the warning when an idle directory is recycled (a name without
/// "recycl" in it: the log lines carry it).
const IDLE: &str = "/limits/idle-counter";

/// One server for the tests of this module, with every test's directory
/// seeded (as a plain persistent node, the way older versions or other
/// clients leave them). The next child of a seeded directory gets the
/// seeded value as its sequence number. Fails (never skips) with
/// installation advice when ZooKeeper, Java or javac is missing.
fn server() -> &'static ZkCluster {
    static SERVER_: OnceLock<ZkCluster> = OnceLock::new();
    SERVER_.get_or_init(|| {
        ZkCluster::builder()
            .seed_cversion(SERVER, LIMIT - 7)
            .seed_cversion(RACE, LIMIT - 7)
            .seed_cversion(RECYCLED_RACE, LIMIT - 7)
            .seed_cversion(ALONE_TRY, LIMIT)
            .seed_cversion(ALONE_TIMEOUT, LIMIT)
            .seed_cversion(ALONE_WAIT, LIMIT)
            .seed_cversion(ALONE_WRAPPED, i32::MIN)
            .seed_cversion(RECYCLED, LIMIT)
            .seed_cversion(HELD, LIMIT - 1)
            .seed_cversion(WARNED, THRESHOLD - 10)
            .seed_cversion(IDLE, THRESHOLD + 5)
            .start()
            .unwrap_or_else(|e| {
                panic!(
                    "these tests need a real ZooKeeper server and a JDK (javac): {e}\n\
                     install them with `sudo apt-get install -y zookeeper openjdk-17-jdk-headless` \
                     (or run ./scripts/ensure-zookeeper.sh, which does)"
                )
            })
    })
}

async fn client() -> zk::Client {
    client_on(&server().connect_string()).await
}

/// A lock on `path` through a new session.
async fn lock(path: &str) -> SharedLock {
    SharedLock::new(client().await, path).expect("valid lock path")
}

/// The directory's stat, `None` once it is gone.
async fn dir_stat(c: &zk::Client, path: &str) -> Option<zk::Stat> {
    c.check_stat(path)
        .await
        .unwrap_or_else(|e| panic!("stat {path}: {e}"))
}

/// Asserts that `result` is `SequenceExhausted` for `path`.
fn assert_exhausted<T: std::fmt::Debug>(result: Result<T, Error>, path: &str, how: &str) {
    match result {
        Err(Error::SequenceExhausted { path: p }) => assert_eq!(p, path, "{how}"),
        other => {
            panic!("{how} on {path} at the counter's limit: expected Err(SequenceExhausted), got {other:?}")
        }
    }
}

/// What the server does at the limit, which the lock has to cope with.
/// A seeded directory's next child gets the seeded value; one create after
/// another then counts up to 2147483647 and stays there (a second node with
/// the same prefix is refused: NodeExists). Creates in flight at the same
/// time get numbers past the limit, wrapped to negative ones, some twice.
/// Clients see the counter in `Stat::cversion` doubled (minus the number of
/// children), so it wraps there long before the limit.
#[tokio::test]
async fn the_server_sticks_at_the_limit_and_wraps_creates_in_flight() {
    let c = client().await;
    let stat = dir_stat(&c, SERVER).await.expect("seeded directory");
    assert_eq!(
        stat.cversion,
        (LIMIT - 7).wrapping_mul(2),
        "Stat::cversion is 2 * counter - children"
    );
    let mode = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let mut seqs = Vec::new();
    for i in 0..10 {
        let (_, seq) = c
            .create(&format!("{SERVER}/n{i}-"), &[], &mode)
            .await
            .unwrap_or_else(|e| panic!("create {i}: {e}"));
        seqs.push(seq.into_i64());
    }
    let expected: Vec<i64> = (0..10)
        .map(|i| (i64::from(LIMIT) - 7 + i).min(i64::from(LIMIT)))
        .collect();
    assert_eq!(seqs, expected, "counts up to the limit, then stays");
    let again = c.create(&format!("{SERVER}/n9-"), &[], &mode).await;
    assert!(
        matches!(again, Err(zk::Error::NodeExists)),
        "same prefix at the limit: {again:?}"
    );

    // Creates sent together, from two sessions: none below the limit.
    let other = client().await;
    let names: Vec<String> = (0..20).map(|i| format!("{SERVER}/p{i}-")).collect();
    let pending: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, name)| if i % 2 == 0 { &c } else { &other }.create(name, &[], &mode))
        .collect();
    let mut in_flight = Vec::new();
    for p in pending {
        in_flight.push(p.await.expect("create in flight").1.into_i64());
    }
    assert!(
        in_flight.iter().all(|&s| s == i64::from(LIMIT) || s < 0),
        "past the limit every sequence is 2147483647 or wrapped: {in_flight:?}"
    );
    let wrapped = in_flight.iter().filter(|&&s| s < 0).count();
    let mut distinct = in_flight.clone();
    distinct.sort_unstable();
    distinct.dedup();
    println!(
        "20 creates in flight at the limit: {wrapped} wrapped to negative numbers, \
         {} distinct numbers: {in_flight:?}",
        distinct.len()
    );
}

/// One grant of a race.
#[derive(Debug)]
struct Grant {
    contender: usize,
    seq: i32,
    token: i64,
    start: Instant,
    end: Instant,
    /// Another grant was held when this one began.
    overlapped: bool,
}

/// What one contender of a race saw.
#[derive(Debug, Default)]
struct Outcome {
    grants: Vec<Grant>,
    exhausted: usize,
    other: Vec<String>,
}

/// `contenders` sessions each take the write lock on `path` again and
/// again, holding it 1-5 ms, until `done` says so about what they saw, or
/// after `rounds` attempts, or once `within` has passed. `refused` counts
/// the `SequenceExhausted` answers of all of them as they come.
async fn race(
    path: &'static str,
    contenders: usize,
    rounds: usize,
    within: Duration,
    done: fn(&Outcome) -> bool,
    refused: Arc<AtomicUsize>,
) -> Vec<Outcome> {
    let deadline = Instant::now() + within;
    let holders = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for contender in 0..contenders {
        let lock = lock(path).await;
        let holders = holders.clone();
        let refused = refused.clone();
        tasks.push(tokio::spawn(async move {
            let mut out = Outcome::default();
            for _ in 0..rounds {
                if done(&out) || Instant::now() >= deadline {
                    break;
                }
                match lock.write_timeout(SHORT).await {
                    Ok(Some(guard)) => {
                        let start = Instant::now();
                        let overlapped = holders.fetch_add(1, Ordering::SeqCst) != 0;
                        let hold = 1 + (uuid::Uuid::new_v4().as_u128() % 5) as u64;
                        tokio::time::sleep(Duration::from_millis(hold)).await;
                        holders.fetch_sub(1, Ordering::SeqCst);
                        let end = Instant::now();
                        out.grants.push(Grant {
                            contender,
                            seq: seq_of(guard.node()),
                            token: guard.fencing_token(),
                            start,
                            end,
                            overlapped,
                        });
                        if let Err(e) = guard.release().await {
                            out.other.push(format!("release: {e}"));
                        }
                    }
                    Ok(None) => out.other.push(format!("not granted within {SHORT:?}")),
                    Err(Error::SequenceExhausted { path: p }) if p == path => {
                        out.exhausted += 1;
                        refused.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(e) => out.other.push(format!("acquire: {e}")),
                }
            }
            out
        }));
    }
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(joined(within + 2 * SHORT, t).await);
    }
    outcomes
}

/// Asserts that no two grants of a race overlapped, that none was of a
/// node at or past the limit, that fencing tokens grew from grant to grant,
/// and that nothing but `SequenceExhausted` went wrong. Returns the granted
/// sequences in grant order.
fn check_race(outcomes: &[Outcome]) -> Vec<i32> {
    let mut grants: Vec<&Grant> = outcomes.iter().flat_map(|o| &o.grants).collect();
    grants.sort_by_key(|g| g.start);
    // Recorded intervals lie inside the real ones (after the grant, before
    // the release), so every overlap found here is real.
    let overlapping: Vec<(&Grant, &Grant)> = grants
        .iter()
        .enumerate()
        .flat_map(|(i, a)| {
            grants[i + 1..]
                .iter()
                .filter(|b| b.start < a.end)
                .map(move |b| (*a, *b))
        })
        .collect();
    let began_while_held = grants.iter().filter(|g| g.overlapped).count();
    let t0 = grants.first().map_or_else(Instant::now, |g| g.start);
    let show = |g: &Grant| {
        format!(
            "contender {} seq {} {:.1}..{:.1} ms",
            g.contender,
            g.seq,
            (g.start - t0).as_secs_f64() * 1e3,
            (g.end - t0).as_secs_f64() * 1e3
        )
    };
    let overlaps: Vec<String> = overlapping
        .iter()
        .map(|(a, b)| format!("{} / {}", show(a), show(b)))
        .collect();
    let seqs: Vec<i32> = grants.iter().map(|g| g.seq).collect();
    let at_limit = seqs.iter().filter(|&&s| s == LIMIT).count();
    let wrapped = seqs.iter().filter(|&&s| s < 0).count();
    let summary = format!(
        "{} grants ({at_limit} at 2147483647, {wrapped} negative), {} overlapping pairs, \
         {began_while_held} began while another was held, refused {:?}; first sequences: {:?}",
        grants.len(),
        overlaps.len(),
        outcomes.iter().map(|o| o.exhausted).collect::<Vec<_>>(),
        &seqs[..seqs.len().min(40)]
    );
    println!("{summary}");
    assert!(
        overlaps.is_empty() && began_while_held == 0,
        "overlapping writers: {summary}; the first overlaps: {:#?}",
        &overlaps[..overlaps.len().min(20)]
    );
    assert!(
        at_limit == 0 && wrapped == 0,
        "granted nodes at or past the limit: {summary}"
    );
    for w in grants.windows(2) {
        assert!(
            w[1].token > w[0].token,
            "fencing token {} granted after {}",
            w[1].token,
            w[0].token
        );
    }
    for (i, o) in outcomes.iter().enumerate() {
        assert!(o.other.is_empty(), "contender {i}: {:?}", o.other);
    }
    seqs
}

/// a. Writers race into the limit: no two are granted at the same time,
/// none is granted a node at or past the limit, every contender ends with
/// `SequenceExhausted`, no contender node is left behind, and later
/// acquires keep failing (a non-contender child keeps the directory from
/// being recycled).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn at_the_limit_no_writer_is_granted_twice() {
    const ROUNDS: usize = 12;
    let _pin = pin(client().await, RACE).await; // takes LIMIT - 7
    let refused = Arc::new(AtomicUsize::new(0));
    let outcomes = race(
        RACE,
        4,
        ROUNDS,
        Duration::from_secs(60),
        |o| o.exhausted > 0,
        refused,
    )
    .await;
    check_race(&outcomes);
    for (i, o) in outcomes.iter().enumerate() {
        assert_eq!(
            o.exhausted,
            1,
            "contender {i} never got SequenceExhausted in {ROUNDS} rounds (grants {:?})",
            o.grants.iter().map(|g| g.seq).collect::<Vec<_>>()
        );
    }
    let c = client().await;
    eventually("only the pin is left", SHORT, || {
        let c = c.clone();
        async move { children(&c, RACE).await == ["pin"] }
    })
    .await;
    // The counter stays at the limit: the next acquire is refused too.
    let late = lock(RACE).await;
    assert_exhausted(late.try_write().await, RACE, "a later try_write");
    assert_exhausted(
        late.read_timeout(Duration::from_millis(500)).await,
        RACE,
        "a later read_timeout",
    );
    assert_eq!(children(&c, RACE).await, ["pin"], "refused acquires left nodes");
}

/// a. Writers keep going through the limit: once they are refused there,
/// the non-contender child that kept the directory is removed; refused
/// contenders retry, the directory is recycled once empty, and grants go on
/// from a fresh counter, still one at a time, with growing fencing tokens,
/// never at or past the limit. Each contender goes on until it has been
/// granted a node of the new counter.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_keep_going_through_the_recycling() {
    let pinned = pin(client().await, RECYCLED_RACE).await;
    let fresh = |o: &Outcome| o.grants.iter().any(|g| (0..1000).contains(&g.seq));
    let refused = Arc::new(AtomicUsize::new(0));
    let racing = tokio::spawn(race(
        RECYCLED_RACE,
        4,
        5000,
        Duration::from_secs(30),
        fresh,
        refused.clone(),
    ));
    eventually("a contender was refused at the limit", SHORT, || {
        let n = refused.load(Ordering::SeqCst);
        async move { n > 0 }
    })
    .await;
    pinned
        .delete(&format!("{RECYCLED_RACE}/pin"), None)
        .await
        .expect("delete the pin");
    let outcomes = joined(Duration::from_secs(30) + 3 * SHORT, racing).await;
    check_race(&outcomes);
    for (i, o) in outcomes.iter().enumerate() {
        assert!(
            fresh(o),
            "contender {i} got no grant from a fresh counter within 30 s and 1000 attempts \
             (the directory was not recycled?): {} refused, grants {:?}",
            o.exhausted,
            o.grants.iter().map(|g| g.seq).collect::<Vec<_>>()
        );
    }
    let c = client().await;
    eventually("no contender is left", SHORT, || {
        let c = c.clone();
        async move { children(&c, RECYCLED_RACE).await.is_empty() }
    })
    .await;
}

/// b. A node at 2147483647 is never granted, even when it is alone in the
/// directory (and so first): by `try_write`, `write_timeout` and `write`.
/// Nor is a node with a wrapped, negative number, as creates in flight past
/// the limit get them: unique or not, a later node can get a smaller one
/// (-2147483648 after -2147483647, once the first in-flight batch is
/// applied and the next batch wraps again) and sort before a holder.
/// Nothing is left behind.
#[tokio::test]
async fn a_node_at_the_limit_is_never_granted_even_alone() {
    let c = client().await;
    for path in [ALONE_TRY, ALONE_TIMEOUT, ALONE_WAIT, ALONE_WRAPPED] {
        assert!(children(&c, path).await.is_empty());
    }
    assert_exhausted(lock(ALONE_TRY).await.try_write().await, ALONE_TRY, "try_write");
    assert_exhausted(
        lock(ALONE_TIMEOUT)
            .await
            .write_timeout(Duration::from_secs(1))
            .await,
        ALONE_TIMEOUT,
        "write_timeout",
    );
    let waiting = lock(ALONE_WAIT).await;
    let result = tokio::time::timeout(SHORT, waiting.write())
        .await
        .expect("write() at the limit returns");
    assert_exhausted(result, ALONE_WAIT, "write");
    assert_exhausted(
        lock(ALONE_WRAPPED).await.try_write().await,
        ALONE_WRAPPED,
        "try_write with a wrapped sequence (-2147483648)",
    );
    for path in [ALONE_TRY, ALONE_TIMEOUT, ALONE_WAIT, ALONE_WRAPPED] {
        assert!(
            children(&c, path).await.is_empty(),
            "{path}: the refused acquire left {:?}",
            children(&c, path).await
        );
    }
}

/// c. A plain persistent directory at the limit recovers by itself: the
/// refused acquirer leaves it empty and recycles it (deleted and created
/// again in one transaction), and the next acquire gets a fresh counter.
#[tokio::test]
async fn an_exhausted_directory_is_deleted_and_recreated() {
    let c = client().await;
    assert!(dir_stat(&c, RECYCLED).await.is_some(), "seeded directory");
    let before = dir_stat(&c, RECYCLED).await.map(|s| s.czxid);
    let l = lock(RECYCLED).await;
    assert_exhausted(l.try_write().await, RECYCLED, "try_write");
    // Recycled in place: deleted and created again in one transaction.
    eventually("the refused acquirer recycled the empty directory", SHORT, || {
        let c = c.clone();
        async move { dir_stat(&c, RECYCLED).await.map(|s| s.czxid) != before }
    })
    .await;
    let g = l
        .try_write()
        .await
        .expect("acquire on the recreated directory")
        .expect("free");
    assert!(
        (0..10).contains(&seq_of(g.node())),
        "a fresh counter: {}",
        g.node()
    );
    // (Whether it came back as a container node cannot be seen from a
    // client: ZooKeeper reports ephemeralOwner 0 for containers.)
    g.release().await.expect("release");
}

/// c. With a holder below the limit, the refused acquirer cannot delete the
/// directory; once the holder releases (leaving it empty near the limit),
/// the directory goes and a new acquire works from a fresh counter.
#[tokio::test]
async fn the_last_contender_to_leave_deletes_the_directory() {
    let c = client().await;
    let holder = lock(HELD).await;
    let held = holder
        .try_write()
        .await
        .expect("try_write below the limit")
        .expect("free");
    assert_eq!(seq_of(held.node()), LIMIT - 1);
    let refused = lock(HELD).await;
    assert_exhausted(refused.try_write().await, HELD, "try_write behind a holder");
    let held_name = held.node().rsplit('/').next().unwrap().to_owned();
    assert_eq!(
        children(&c, HELD).await,
        [held_name],
        "the refused node is withdrawn, the directory stays"
    );
    assert!(held.is_held());
    let before = dir_stat(&c, HELD).await.map(|s| s.czxid);
    held.release().await.expect("release");
    eventually("the holder's release recycled the directory", SHORT, || {
        let c = c.clone();
        async move { dir_stat(&c, HELD).await.map(|s| s.czxid) != before }
    })
    .await;
    let g = refused
        .try_write()
        .await
        .expect("acquire on the recreated directory")
        .expect("free");
    assert!(
        (0..10).contains(&seq_of(g.node())),
        "a fresh counter: {}",
        g.node()
    );
    g.release().await.expect("release");
}

/// e. Crossing the threshold (the last 2^20 numbers before the limit) is
/// logged as a warning once per directory, not on every acquire.
#[tokio::test]
async fn passing_the_threshold_warns_once() {
    let _ = support::captured_logs("warn");
    let _pin = pin(client().await, WARNED).await; // keeps the directory
    let l = lock(WARNED).await;
    let mut last = 0;
    for _ in 0..25 {
        let g = l.try_write().await.expect("try_write").expect("free");
        last = seq_of(g.node());
        g.release().await.expect("release");
    }
    assert!(last > THRESHOLD + 10, "the counter passed the threshold: {last}");
    let log = support::captured_logs("warn");
    // (The pin draws a warning of its own: not a contender.)
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(WARNED) && !l.contains("not a contender"))
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "expected one warning about {WARNED} past the threshold, got: {lines:#?}"
    );
    let line = lines[0].to_lowercase();
    assert!(
        line.contains("sequence") || line.contains("counter"),
        "{}",
        lines[0]
    );
}

/// e. A holder whose release leaves an idle directory past the threshold
/// recycles it (deletes it and makes it again, with its ACL, in one
/// transaction) and warns that it did ("recycled the idle lock directory
/// ..."): an operator's only sign that the counter starts from 0 again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recycling_the_idle_directory_is_logged() {
    let _ = support::captured_logs("warn");
    let c = client().await;
    let before = dir_stat(&c, IDLE).await.expect("seeded directory");
    let l = lock(IDLE).await;
    let g = l.try_write().await.expect("try_write").expect("free");
    assert_eq!(seq_of(g.node()), THRESHOLD + 5);
    g.release().await.expect("release");
    eventually("the release recycled the directory", SHORT, || {
        let c = c.clone();
        async move { dir_stat(&c, IDLE).await.is_some_and(|s| s.czxid != before.czxid) }
    })
    .await;
    let log = support::captured_logs("warn");
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(IDLE) && l.contains("recycl"))
        .collect();
    assert!(
        !lines.is_empty(),
        "a recycled directory (czxid {} -> new) is logged at WARN; the WARN lines about it: {:#?}",
        before.czxid,
        log.lines().filter(|l| l.contains(IDLE)).collect::<Vec<_>>()
    );
}

// ---------------------------------------------------------------------------
// Input the server would refuse: requests larger than `jute.maxbuffer`
// (1 MiB less one byte by default) and lock directories holding data.

/// The server's default `jute.maxbuffer`: it closes the connection on a
/// larger request.
const JUTE_MAXBUFFER: usize = 0xfffff;

/// A path under `/limits/input` unique in this process (the parent is made
/// on demand by the lock).
fn input_path(name: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("/limits/input/{name}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// Asserts that `result` is `InvalidIdentity` for `identity`, with a short
/// message that names the limit.
fn assert_identity_refused<T: std::fmt::Debug>(result: Result<T, Error>, identity: &str) {
    match result {
        Err(e @ Error::InvalidIdentity { .. }) => {
            let message = e.to_string();
            assert!(message.contains("longer than 255 bytes"), "{message}");
            assert!(message.len() < 600, "a long message: {} bytes", message.len());
            let Error::InvalidIdentity { identity: given, .. } = e else {
                unreachable!()
            };
            assert!(given == identity, "the error names another identity");
        }
        other => panic!(
            "an identity of {} bytes: expected InvalidIdentity, got {:?}",
            identity.len(),
            other.map(|_| ())
        ),
    }
}

/// An identity longer than 255 bytes (every contender's name carries it,
/// and a listing carries every name) is refused when the lock is built,
/// however large: one of 2 MiB, which no request could carry, as well as
/// one of 256 bytes. One of 255 bytes (multi-byte characters count by
/// their bytes) works, natively in the node's name and in kazoo's layout
/// as the node's data.
#[tokio::test]
async fn an_identity_longer_than_the_limit_is_refused_when_the_lock_is_built() {
    let c = client().await;
    let path = input_path("identity");
    for len in [256, 2 << 20] {
        let identity = "x".repeat(len);
        let built = SharedLock::builder(c.clone(), &path).identity(&identity).build();
        assert_identity_refused(built, &identity);
        assert_identity_refused(zk_rwlock::validate_identity(&identity), &identity);
    }
    let identity = format!("{}x", "é".repeat(127));
    assert_eq!(identity.len(), zk_rwlock::limits::MAX_IDENTITY_LEN);
    for layout in [zk_rwlock::Layout::Native, zk_rwlock::Layout::Kazoo] {
        let lock = SharedLock::builder(c.clone(), &path)
            .identity(&identity)
            .layout(layout)
            .build()
            .unwrap_or_else(|e| panic!("{layout}: an identity of 255 bytes: {e}"));
        let guard = lock
            .try_write()
            .await
            .unwrap_or_else(|e| panic!("{layout}: try_write: {e}"))
            .expect("free");
        let (data, _) = c.get_data(guard.node()).await.expect("read the node");
        match layout {
            zk_rwlock::Layout::Native => assert!(guard.node().contains(&identity)),
            _ => assert_eq!(data, identity.as_bytes(), "{layout}: the identity is the data"),
        }
        guard.release().await.expect("release");
    }
    assert!(children(&c, &path).await.is_empty());
}

/// A lock path longer than 4096 bytes is refused when the lock is built;
/// one of 4096 bytes works.
#[tokio::test]
async fn a_path_longer_than_the_limit_is_refused_when_the_lock_is_built() {
    let c = client().await;
    let base = input_path("path");
    let path = format!(
        "{base}/{}",
        "p".repeat(zk_rwlock::limits::MAX_PATH_LEN - base.len() - 1)
    );
    assert_eq!(path.len(), zk_rwlock::limits::MAX_PATH_LEN);
    let too_long = format!("{path}q");
    match SharedLock::new(c.clone(), &too_long) {
        Err(e @ Error::InvalidPath { .. }) => {
            let message = e.to_string();
            assert!(message.contains("longer than 4096 bytes"), "{message}");
            assert!(message.len() < 800, "a long message: {} bytes", message.len());
        }
        other => panic!(
            "a path of 4097 bytes: expected InvalidPath, got {:?}",
            other.map(|_| ())
        ),
    }
    let lock = SharedLock::new(c.clone(), &path).expect("a path of 4096 bytes");
    let guard = lock.try_write().await.expect("try_write").expect("free");
    guard.release().await.expect("release");
}

/// Characters at the edges of ZooKeeper's ranges of characters refused in
/// paths (NUL, U+0001-U+001F, U+007F-U+009F, U+D800-U+F8FF, U+FFF0-U+FFFF,
/// and beyond U+FFFF, surrogates to the server) and how messages name them.
const REFUSED: [(char, &str); 14] = [
    ('\0', "`\\0` (U+0000)"),
    ('\u{1}', "U+0001"),
    ('\t', "`\\t` (U+0009)"),
    ('\n', "`\\n` (U+000A)"),
    ('\u{1f}', "U+001F"),
    ('\u{7f}', "U+007F"),
    ('\u{85}', "U+0085"),
    ('\u{9f}', "U+009F"),
    ('\u{e000}', "U+E000"),
    ('\u{f8ff}', "U+F8FF"),
    ('\u{fff0}', "U+FFF0"),
    ('\u{ffff}', "U+FFFF"),
    ('\u{10000}', "U+10000"),
    ('\u{1f512}', "U+1F512"),
];

/// Characters just outside those ranges, which ZooKeeper takes.
const TAKEN: [char; 7] = [' ', '\u{a0}', 'é', '\u{2028}', '\u{d7ff}', '\u{f900}', '\u{ffef}'];

/// Asserts that `result` is `InvalidIdentity` (`identity`) or `InvalidPath`
/// (`path`) for `given`, in one line that names the character `name`.
fn assert_character_refused<T>(result: Result<T, Error>, given: &str, name: &str, what: &str) {
    let message = match result {
        Err(e @ Error::InvalidIdentity { .. }) if what == "identity" => {
            let Error::InvalidIdentity { identity, .. } = &e else {
                unreachable!()
            };
            assert_eq!(identity, given);
            e.to_string()
        }
        Err(e @ Error::InvalidPath { .. }) if what == "path" => {
            let Error::InvalidPath { path, .. } = &e else {
                unreachable!()
            };
            assert_eq!(path, given);
            e.to_string()
        }
        Err(e) => panic!("{what} {given:?}: expected Invalid{what}, got {e:?}"),
        Ok(_) => panic!("{what} {given:?}: accepted"),
    };
    assert!(
        message.contains(&format!("it contains {name} at byte ")),
        "{message}"
    );
    assert!(message.contains("a character ZooKeeper refuses in"), "{message}");
    assert!(
        !message.chars().any(|c| c.is_control() || c == '\u{2028}'),
        "a message of more than one line: {message:?}"
    );
}

/// ZooKeeper refuses some characters in paths, so in node names: an
/// identity or a lock path with one is refused when the lock (or the
/// election) is built, naming the character, not at the first request
/// with the client's generic "unsupported characters in path". First,
/// ZooKeeper itself (its client and its server) refuses a node named with
/// each and takes one named with each character just outside its ranges,
/// which the lock takes too, as identity and in its path.
#[tokio::test]
async fn characters_zookeeper_refuses_are_refused_when_the_lock_is_built() {
    let c = client().await;
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let raw = "/limits/characters";
    for p in ["/limits", raw] {
        match c.create(p, &[], &open).await {
            Ok(_) | Err(zk::Error::NodeExists) => {}
            Err(e) => panic!("create {p}: {e}"),
        }
    }
    let ephemeral = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    for (ch, name) in REFUSED {
        let node = format!("{raw}/a{ch}b");
        match c.create(&node, &[], &ephemeral).await {
            Err(zk::Error::BadArguments(_)) => {}
            other => panic!("ZooKeeper took {name} in a node name: {other:?}"),
        }
    }
    for ch in TAKEN {
        let node = format!("{raw}/a{ch}b");
        c.create(&node, &[], &ephemeral)
            .await
            .unwrap_or_else(|e| panic!("ZooKeeper refused {ch:?} in a node name: {e}"));
    }

    let path = input_path("characters");
    for (ch, name) in REFUSED {
        let identity = format!("a{ch}b");
        let built = SharedLock::builder(c.clone(), &path).identity(&identity).build();
        assert_character_refused(built, &identity, name, "identity");
        let election = zk_rwlock::Election::new(c.clone(), &path, &identity);
        assert_character_refused(election, &identity, name, "identity");
        assert_character_refused(
            zk_rwlock::validate_identity(&identity),
            &identity,
            name,
            "identity",
        );
        let bad_path = format!("{path}/a{ch}b");
        assert_character_refused(SharedLock::new(c.clone(), &bad_path), &bad_path, name, "path");
        let election = zk_rwlock::Election::new(c.clone(), &bad_path, "web01");
        assert_character_refused(election, &bad_path, name, "path");
        assert_character_refused(zk_rwlock::validate_path(&bad_path), &bad_path, name, "path");
    }
    for ch in TAKEN {
        let identity = format!("a{ch}b");
        let lock_path = format!("{path}/a{ch}b");
        let lock = SharedLock::builder(c.clone(), &lock_path)
            .identity(&identity)
            .build()
            .unwrap_or_else(|e| panic!("{ch:?}: {e}"));
        let guard = lock
            .try_write()
            .await
            .unwrap_or_else(|e| panic!("{ch:?}: try_write: {e}"))
            .expect("free");
        assert!(guard.node().contains(&identity), "{}", guard.node());
        guard.release().await.expect("release");
    }
}

/// ZooKeeper's own tree `/zookeeper` (quotas, configuration) is no lock
/// directory, nor is anything under it: refused when the lock, the
/// election or the multi-lock is built, and nothing is created there.
#[tokio::test]
async fn a_lock_in_zookeepers_own_tree_is_refused_when_built() {
    let c = client().await;
    let tree = |path: &'static str| {
        let c = c.clone();
        async move {
            let mut names = children(&c, path).await;
            names.sort();
            names
        }
    };
    let before = tree("/zookeeper").await;
    let quotas = tree("/zookeeper/quota").await;
    for path in [
        "/zookeeper",
        "/zookeeper/x",
        "/zookeeper/quota",
        "/zookeeper/quota/app/lock",
    ] {
        let refused = |result: Result<(), Error>, how: &str| match result {
            Err(e @ Error::InvalidPath { .. }) => {
                assert!(
                    e.to_string().contains("ZooKeeper's own tree `/zookeeper`"),
                    "{how} {path}: {e}"
                )
            }
            other => panic!("{how} {path}: expected InvalidPath, got {other:?}"),
        };
        refused(SharedLock::new(c.clone(), path).map(drop), "lock");
        refused(
            zk_rwlock::Election::new(c.clone(), path, "web01").map(drop),
            "election",
        );
        let parts = [
            ("/limits/not-zookeeper", zk_rwlock::Mode::Write),
            (path, zk_rwlock::Mode::Read),
        ];
        refused(
            zk_rwlock::MultiLock::new(c.clone(), &parts).map(drop),
            "multi-lock",
        );
        refused(zk_rwlock::validate_path(path), "validate_path");
    }
    // A path that only looks like it is a lock like any other.
    let guard = lock("/limits/zookeeper")
        .await
        .try_write()
        .await
        .expect("try_write")
        .expect("free");
    guard.release().await.expect("release");
    assert_eq!(tree("/zookeeper").await, before);
    assert_eq!(tree("/zookeeper/quota").await, quotas);
}

/// ACLs: `world:anyone` (all permissions) and READ for 300 digest users
/// with long names, `pad` bytes of names in all: the last one takes what
/// does not divide evenly, so that one more byte of `pad` is one more byte
/// of every request carrying them.
fn padded_acls(pad: usize) -> Vec<zk::Acl> {
    const USERS: usize = 300;
    let mut acls = vec![zk::Acl::new(
        zk::Permission::ALL,
        zk::AuthId::new("world", "anyone"),
    )];
    for i in 0..USERS {
        let len = pad / USERS + if i == USERS - 1 { pad % USERS } else { 0 };
        let head = format!("u{i:03}:");
        assert!(len > head.len(), "pad {pad} is too small");
        let id = format!("{head}{}", "h".repeat(len - head.len()));
        acls.push(zk::Acl::new(zk::Permission::READ, zk::AuthId::new("digest", &id)));
    }
    acls
}

/// ACLs too large for a request are refused when the lock is built, with
/// the size of its largest request and the limit; ACLs that bring its
/// largest request (here the contender create, in kazoo's layout, which
/// releases with a plain delete and carries the identity as data) to
/// exactly the limit work against the server, and the client counts that
/// create, one byte larger, as the lock does. (In the native layout the
/// release, whose marker carries the ACLs again, is the larger:
/// `tests/handover/release_marker.rs`.)
#[tokio::test]
async fn acls_too_large_for_a_request_are_refused_when_the_lock_is_built() {
    let c = client().await;
    let path = input_path("acls");
    // A long identity makes the contender create the largest request.
    let identity = "i".repeat(100);
    let build = |acls: &[zk::Acl]| {
        SharedLock::builder(c.clone(), &path)
            .identity(&identity)
            .layout(zk_rwlock::Layout::Kazoo)
            .acls(acls)
            .build()
    };
    assert_eq!(c.max_request_size(), JUTE_MAXBUFFER);
    let size_of = |result: Result<SharedLock, Error>| match result {
        Err(e @ Error::RequestTooLarge { .. }) => {
            let message = e.to_string();
            assert!(message.contains("1048575 bytes"), "{message}");
            let Error::RequestTooLarge { path: p, size, limit } = e else {
                unreachable!()
            };
            assert_eq!((p.as_str(), limit), (path.as_str(), JUTE_MAXBUFFER));
            size
        }
        other => panic!("expected RequestTooLarge, got {:?}", other.map(|_| ())),
    };
    let over = size_of(build(&padded_acls(1 << 20)));
    // Each byte of an id is a byte of the request.
    let fits = (1 << 20) - (over - JUTE_MAXBUFFER);
    let lock = build(&padded_acls(fits)).expect("ACLs that bring the largest request to the limit");
    let guard = lock
        .try_write()
        .await
        .expect("a create of exactly jute.maxbuffer bytes is accepted")
        .expect("free");
    guard.release().await.expect("release");
    assert_eq!(size_of(build(&padded_acls(fits + 1))), JUTE_MAXBUFFER + 1);
    // The client's own count of that create: one byte too large.
    // kazoo's read prefix is the longer: the lock counts the longer mode.
    let prefix = zk_rwlock::Layout::Kazoo
        .prefix(&identity, uuid::Uuid::new_v4(), zk_rwlock::Mode::Read)
        .expect("kazoo read prefix");
    let acls = padded_acls(fits + 1);
    let create = c
        .create(
            &format!("{path}/{prefix}"),
            identity.as_bytes(),
            &zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::new(&acls)),
        )
        .await;
    assert_eq!(
        create.map(|_| ()),
        Err(zk::Error::RequestTooLarge {
            size: JUTE_MAXBUFFER + 1,
            limit: JUTE_MAXBUFFER
        })
    );
}

/// A request larger than `jute.maxbuffer` (a create with 2 MiB of data), on
/// a session that holds a lock, fails at once with `RequestTooLarge`,
/// which is not retryable, and is never sent: a server closes the
/// connection on it. Sent again and again (as a caller that retries would),
/// it never costs the session its connection: the session's state never
/// changes and the guard stays held.
#[tokio::test]
async fn an_oversized_request_fails_at_once_and_leaves_the_session_alone() {
    let c = client().await;
    let path = input_path("oversized");
    let lock = SharedLock::new(c.clone(), &path).expect("lock");
    let guard = lock.write().await.expect("write");
    let mut states = c.state_watcher();
    let session = c.session_id();
    let data = vec![7u8; 2 << 20];
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let mut changes = Vec::new();
    for attempt in 0..20 {
        let started = Instant::now();
        let result = c.create(&format!("{path}-data"), &data, &persistent).await;
        let took = started.elapsed();
        match result {
            Err(zk::Error::RequestTooLarge { size, limit }) => {
                assert_eq!(limit, JUTE_MAXBUFFER);
                assert!(size > data.len(), "size {size}");
            }
            other => panic!("attempt {attempt}: expected RequestTooLarge, got {other:?}"),
        }
        assert!(
            !zk_rwlock::is_retryable(&zk::Error::RequestTooLarge { size: 0, limit: 0 }),
            "a request that cannot be sent is not retried"
        );
        assert!(took < Duration::from_secs(1), "attempt {attempt} took {took:?}");
        // A request that does reach the server, answered on the same
        // connection: a dropped connection would have changed the state.
        c.check_stat(&path)
            .await
            .expect("a request after the refused one");
        while let Ok(state) = tokio::time::timeout(Duration::ZERO, states.changed()).await {
            changes.push(state);
        }
        assert!(guard.is_held(), "attempt {attempt}: guard {:?}", guard.state());
    }
    assert!(changes.is_empty(), "the session's state changed: {changes:?}");
    assert_eq!(c.session_id(), session);
    assert_eq!(guard.state(), zk_rwlock::HoldState::Held);
    assert!(c
        .check_stat(&format!("{path}-data"))
        .await
        .expect("stat")
        .is_none());
    guard.release().await.expect("release");
}

/// A lock on a node that holds someone's data (here a counter) is refused
/// at its acquires with `DirectoryHoldsData`, by every kind of acquire,
/// and the data and the node stay as they were (no contender left behind).
/// A lock on a child path of the node works, writers exclude each other
/// there and hand off with the release record, which is written in the
/// child's data, not the counter's; a directory whose data is such a
/// record is the lock's, and a new lock object uses it.
#[tokio::test]
async fn a_lock_on_a_node_that_holds_data_is_refused_and_the_data_kept() {
    let c = client().await;
    let counter = input_path("counter");
    c.mkdir(
        "/limits/input",
        &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
    )
    .await
    .or_else(|e| {
        if e == zk::Error::NodeExists {
            Ok(())
        } else {
            Err(e)
        }
    })
    .expect("parent");
    c.create(
        &counter,
        b"42",
        &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
    )
    .await
    .expect("the counter node");
    let refused = |result: Result<(), Error>, how: &str| match result {
        Err(Error::DirectoryHoldsData { path }) => assert_eq!(path, counter, "{how}"),
        other => panic!("{how} on a node holding data: expected DirectoryHoldsData, got {other:?}"),
    };
    let on_counter = lock(&counter).await;
    refused(on_counter.write().await.map(drop), "write");
    refused(on_counter.try_read().await.map(drop), "try_read");
    refused(
        on_counter.write_timeout(Duration::from_secs(2)).await.map(drop),
        "write_timeout",
    );
    let message = on_counter.try_write().await.map(drop).unwrap_err().to_string();
    assert!(message.contains(&format!("`{counter}/lock`")), "{message}");
    let (data, stat) = c.get_data(&counter).await.expect("the counter");
    assert_eq!(data, b"42", "the counter's data");
    assert_eq!(stat.version, 0, "the counter was written to");
    // Each refused acquire withdrew its node (waiting for the deletion at
    // most GIVE_UP_SLACK before it returned).
    eventually("the refused acquires' nodes are gone", SHORT, || {
        let c = c.clone();
        let counter = counter.clone();
        async move { children(&c, &counter).await.is_empty() }
    })
    .await;

    // A lock of its own, under the counter.
    let path = format!("{counter}/lock");
    let (a, b, probe) = (lock(&path).await, lock(&path).await, lock(&path).await);
    let held = a.write().await.expect("a: write");
    let waiting = tokio::spawn(async move { b.write().await.map(|g| (g, b)) });
    eventually("b waits", SHORT, || {
        let c = c.clone();
        let path = path.clone();
        async move { children(&c, &path).await.len() == 2 }
    })
    .await;
    assert!(
        probe.try_write().await.expect("try_write").is_none(),
        "a writer holds"
    );
    held.release().await.expect("a: release");
    let (handed, _b) = joined(SHORT, waiting).await.expect("b: write");
    let b_node = handed.node().rsplit('/').next().unwrap_or_default().to_owned();
    assert!(
        probe.try_read().await.expect("try_read").is_none(),
        "a writer holds"
    );
    // b waited: its release writes the record into the lock's directory.
    handed.release().await.expect("b: release");
    let (record, _) = c.get_data(&path).await.expect("the lock's directory");
    assert_eq!(record, b_node.as_bytes(), "the release record");
    let fresh = lock(&path).await;
    let again = fresh
        .try_write()
        .await
        .expect("a directory holding a release record")
        .expect("free");
    again.release().await.expect("release");
    let (data, stat) = c.get_data(&counter).await.expect("the counter");
    assert_eq!(
        (data.as_slice(), stat.version),
        (&b"42"[..], 0),
        "the counter was written to"
    );
}
