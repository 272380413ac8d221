//! Churn: the library used over and over, in every way at once, must leave
//! the process and the server as it found them.
//!
//! One cycle: sessions connected and closed ([`connect_client`]), write and
//! read locks acquired and released (async and blocking), guards dropped
//! without a release, acquires that time out and acquires cancelled by
//! dropping their future, a multi-lock, an election, all against a session
//! that lives for the whole run and holds the contended lock meanwhile.
//! After a warm-up, samples are taken between cycles: the process's
//! resident memory, open file descriptors and threads, the library's
//! session registry, and the server's znodes, watches, ephemerals and
//! approximate data size (`mntr`).
//!
//! The verdict, the tolerance the README states (docs/testing.md, "Churn"):
//! resident memory at the end and at its largest within +10 % or +8 MiB
//! (the larger) of the value after the warm-up; file descriptors and
//! threads back to at most their value after the warm-up; the server's
//! watches and ephemerals back to that value, and its znodes too but for the
//! run's lock directories (containers, which the server reaps when empty
//! and a cycle makes again); the session registry back to its size before
//! the run. The process and server figures are
//! polled at the end (sessions close in the background), with a deadline.
//!
//! `CHURN_SECS` (default 40) sets the measured time, `CHURN_WARMUP_SECS`
//! (default 8) the warm-up, `CHURN_SAMPLE_SECS` (default 5) the sampling
//! interval. The hour: `CHURN_SECS=3600 CHURN_WARMUP_SECS=30
//! CHURN_SAMPLE_SECS=300 cargo test --test churn churn_leaves -- --nocapture`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use zk_rwlock::{blocking, connect_client, Election, Mode, MultiLock, SharedLock};
use zk_rwlock_fixtures as support;

/// The tests of this binary measure the whole process: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the end figures may take to come back (sessions close, idle
/// runtime threads exit).
const SETTLE: Duration = Duration::from_secs(30);
/// Resident memory may end this much above its post-warm-up value: the
/// larger of a tenth of it and 8 MiB.
const RSS_SLACK_KB: u64 = 8 * 1024;

fn env_secs(name: &str, default: u64) -> Duration {
    Duration::from_secs(support::env_or(name, default))
}

/// N connect/close cycles leave the session registry at its starting size:
/// each session leaves it when it ends.
#[test]
fn closed_sessions_leave_the_registry() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    support::multi_thread_runtime(2).block_on(registry_cycles());
}

async fn registry_cycles() {
    let servers = support::server().connect_string();
    let start = zk_rwlock::registered_sessions();
    let hubs = zk_rwlock::session_hubs();
    let path = support::unique_path("churn-hubs");
    for _ in 0..20 {
        let client = connect_client(&servers, SESSION_TIMEOUT, CONNECT_TIMEOUT)
            .await
            .expect("connects");
        assert!(
            zk_rwlock::registered_sessions() > start,
            "a live session is registered"
        );
        // A grant gives the session its hub.
        let lock = SharedLock::new(client.clone(), &path).expect("a lock");
        lock.write()
            .await
            .expect("granted")
            .release()
            .await
            .expect("released");
        assert!(zk_rwlock::session_hubs() > hubs, "the session has a hub");
        drop((lock, client));
    }
    support::eventually("the registry back to its start", SETTLE, || async {
        zk_rwlock::registered_sessions() == start
    })
    .await;
    support::eventually("the sessions' hubs gone with them", SETTLE, || async {
        zk_rwlock::session_hubs() == hubs
    })
    .await;
    // A session the caller connected has none: its runtimes may end first.
    let own = support::client().await;
    let lock = SharedLock::new(own.clone(), &path).expect("a lock");
    let guard = lock.write().await.expect("granted");
    assert_eq!(zk_rwlock::session_hubs(), hubs, "no hub for the caller's session");
    guard.release().await.expect("released");
    // Its directory goes with the test: the server reaps an empty container
    // on a clock of its own, which would change the count of the next test.
    match own.delete(&path, None).await {
        Ok(()) | Err(zk_rwlock::zk::Error::NoNode) => {}
        Err(e) => panic!("cannot delete {path}: {e}"),
    }
    // A session that fails after it connected (a missing chroot) leaves too.
    let e = connect_client(
        &format!("{servers}/no-such-chroot"),
        SESSION_TIMEOUT,
        CONNECT_TIMEOUT,
    )
    .await
    .unwrap_err();
    assert!(matches!(e, zk_rwlock::Error::ChrootMissing { .. }), "{e}");
    support::eventually("the registry back to its start", SETTLE, || async {
        zk_rwlock::registered_sessions() == start
    })
    .await;
    // A session that expires leaves it, while its client is still held.
    let proxy = support::proxy::Proxy::start(&servers);
    let expiring = connect_client(proxy.addr(), SESSION_TIMEOUT, CONNECT_TIMEOUT)
        .await
        .expect("connects");
    assert_eq!(zk_rwlock::registered_sessions(), start + 1);
    support::expire_behind(&proxy, &expiring, &servers).await;
    support::eventually("the expired session out of the registry", SETTLE, || async {
        zk_rwlock::registered_sessions() == start
    })
    .await;
    assert_eq!(expiring.state(), zk_rwlock::zk::SessionState::Expired);
}

/// One sample of everything that must stay flat.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    secs: u64,
    cycles: u64,
    rss_kb: u64,
    fds: u64,
    threads: u64,
    registry: u64,
    znodes: u64,
    /// How many of the run's lock directories exist: ZooKeeper reaps an
    /// empty container (a lock's directory) on a clock of its own, and a
    /// cycle makes it again, so only the other znodes must stay flat.
    directories: u64,
    watches: u64,
    ephemerals: u64,
    data_bytes: u64,
}

impl Sample {
    async fn take(observer: &Observer, started: Instant, cycles: u64) -> Sample {
        let directories = observer.directories().await;
        let server = support::server().four_letter(0, "mntr").expect("mntr answers");
        let mntr = |key: &str| {
            server
                .lines()
                .find_map(|l| {
                    l.strip_prefix(key)
                        .filter(|rest| rest.starts_with(char::is_whitespace))
                })
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("mntr has no {key}: {server}"))
        };
        Sample {
            secs: started.elapsed().as_secs(),
            cycles,
            rss_kb: rss_kb(),
            fds: count_dir("/proc/self/fd"),
            threads: count_dir("/proc/self/task"),
            registry: zk_rwlock::registered_sessions() as u64,
            znodes: mntr("zk_znode_count"),
            directories,
            watches: mntr("zk_watch_count"),
            ephemerals: mntr("zk_ephemerals_count"),
            data_bytes: mntr("zk_approximate_data_size"),
        }
    }

    fn row(&self, what: &str) -> String {
        format!(
            "{what:<10} {:>6} {:>8} {:>9} {:>4} {:>7} {:>8} {:>6} {:>4} {:>7} {:>10} {:>9}",
            self.secs,
            self.cycles,
            self.rss_kb,
            self.fds,
            self.threads,
            self.registry,
            self.znodes,
            self.directories,
            self.watches,
            self.ephemerals,
            self.data_bytes
        )
    }
}

const HEADER: &str =
    "sample       secs   cycles    rss_kb  fds threads registry znodes dirs watches ephemerals data_size";

fn rss_kb() -> u64 {
    support::rss_kb("self").expect("VmRSS in /proc/self/status")
}

fn count_dir(dir: &str) -> u64 {
    std::fs::read_dir(dir).expect("a /proc directory").count() as u64
}

/// A session of its own that counts the run's directories.
struct Observer {
    client: zk_rwlock::zk::Client,
    directories: Vec<String>,
}

impl Observer {
    async fn directories(&self) -> u64 {
        let mut n = 0;
        for dir in &self.directories {
            if self.client.check_stat(dir).await.expect("stat answers").is_some() {
                n += 1;
            }
        }
        n
    }
}

/// The lock paths of the run: made in the warm-up, then reused.
struct Paths {
    plain: String,
    contended: String,
    multi_a: String,
    multi_b: String,
    election: String,
    blocking: String,
}

/// One cycle of churn; `long` is the lock of the session that lives for
/// the whole run, on `paths.contended`.
async fn cycle(servers: &str, paths: &Paths, long: &SharedLock) {
    // A session of its own: write and read, one guard released, one dropped.
    let a = connect_client(servers, SESSION_TIMEOUT, CONNECT_TIMEOUT)
        .await
        .expect("connects");
    let plain = SharedLock::new(a.clone(), &paths.plain).expect("a lock");
    plain
        .write()
        .await
        .expect("write")
        .release()
        .await
        .expect("released");
    drop(plain.read().await.expect("read"));
    drop(plain.acquire(Mode::Write).await.expect("write"));

    // Contention with the long session: a timed-out and a cancelled acquire.
    let b = connect_client(servers, SESSION_TIMEOUT, CONNECT_TIMEOUT)
        .await
        .expect("connects");
    let contended = SharedLock::new(b.clone(), &paths.contended).expect("a lock");
    let held = long.write().await.expect("the long session writes");
    let timed_out = contended
        .write_timeout(Duration::from_millis(20))
        .await
        .expect("no error");
    assert!(timed_out.is_none(), "granted while another session writes");
    let cancelled = tokio::time::timeout(Duration::from_millis(20), contended.read()).await;
    assert!(cancelled.is_err(), "granted while another session writes");
    held.release().await.expect("released");
    contended
        .read()
        .await
        .expect("read")
        .release()
        .await
        .expect("released");

    // A multi-lock: released, then dropped.
    let multi = MultiLock::new(b, &[(&paths.multi_a, Mode::Write), (&paths.multi_b, Mode::Read)])
        .expect("a multi-lock");
    multi
        .acquire()
        .await
        .expect("acquired")
        .release()
        .await
        .expect("released");
    drop(multi.acquire().await.expect("acquired"));

    // An election: campaign and resign.
    let election = Election::new(a, &paths.election, "churn").expect("an election");
    election
        .campaign()
        .await
        .expect("leads")
        .resign()
        .await
        .expect("resigned");

    // The blocking API, on a thread of its own (it refuses a runtime's).
    let servers = servers.to_owned();
    let path = paths.blocking.clone();
    let blocking = std::thread::spawn(move || {
        let lock = blocking::SharedLock::connect(&servers, &path).expect("connects");
        lock.write().expect("write").release().expect("released");
        drop(lock.read().expect("read"));
    });
    tokio::task::block_in_place(|| blocking.join()).expect("the blocking part");
    drop((plain, contended, multi, election));
}

/// Polls `done` against fresh samples until it holds or `SETTLE` passes;
/// the last sample either way.
async fn settled(
    observer: &Observer,
    started: Instant,
    cycles: u64,
    done: impl Fn(&Sample) -> bool,
) -> Sample {
    let deadline = Instant::now() + SETTLE;
    loop {
        let sample = Sample::take(observer, started, cycles).await;
        if done(&sample) || Instant::now() >= deadline {
            return sample;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn churn_leaves_nothing_behind() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    support::multi_thread_runtime(2).block_on(churn());
}

async fn churn() {
    let measured = env_secs("CHURN_SECS", 40);
    let warmup = env_secs("CHURN_WARMUP_SECS", 8);
    let every = env_secs("CHURN_SAMPLE_SECS", 5);
    let servers = support::server().connect_string();
    let base = support::unique_path("churn");
    let paths = Paths {
        plain: format!("{base}/plain"),
        contended: format!("{base}/contended"),
        multi_a: format!("{base}/multi-a"),
        multi_b: format!("{base}/multi-b"),
        election: format!("{base}/election"),
        blocking: format!("{base}/blocking"),
    };
    let observer = Observer {
        client: support::client().await,
        directories: [
            &base,
            &paths.plain,
            &paths.contended,
            &paths.multi_a,
            &paths.multi_b,
            &paths.election,
            &paths.blocking,
        ]
        .map(String::clone)
        .to_vec(),
    };
    let registry_start = zk_rwlock::registered_sessions() as u64;
    let long_client = connect_client(&servers, SESSION_TIMEOUT, CONNECT_TIMEOUT)
        .await
        .expect("connects");
    let long = SharedLock::new(long_client, &paths.contended).expect("a lock");

    let started = Instant::now();
    let mut cycles = 0u64;
    while started.elapsed() < warmup {
        cycle(&servers, &paths, &long).await;
        cycles += 1;
    }
    // After the warm-up: between cycles, once the closed sessions' nodes
    // are gone (the long session holds none between cycles).
    let after_warmup = settled(&observer, started, cycles, |s| s.ephemerals == 0).await;
    assert_eq!(
        after_warmup.ephemerals, 0,
        "ephemerals left between cycles: {after_warmup:?}"
    );
    let mut samples = vec![after_warmup];
    let mut next = Instant::now() + every;
    let until = Instant::now() + measured;
    while Instant::now() < until {
        cycle(&servers, &paths, &long).await;
        cycles += 1;
        if Instant::now() >= next {
            samples.push(Sample::take(&observer, started, cycles).await);
            next += every;
        }
    }
    let flat = |s: &Sample| {
        s.fds <= after_warmup.fds
            && s.threads <= after_warmup.threads
            && s.znodes - s.directories == after_warmup.znodes - after_warmup.directories
            && s.watches == after_warmup.watches
            && s.ephemerals == after_warmup.ephemerals
    };
    let end = settled(&observer, started, cycles, flat).await;
    samples.push(end);
    drop(long);
    let registry_end = settled(&observer, started, cycles, |s| s.registry == registry_start).await;

    let rss_limit = after_warmup.rss_kb + (after_warmup.rss_kb / 10).max(RSS_SLACK_KB);
    let max = samples.iter().fold(Sample::default(), |m, s| Sample {
        secs: m.secs.max(s.secs),
        cycles: m.cycles.max(s.cycles),
        rss_kb: m.rss_kb.max(s.rss_kb),
        fds: m.fds.max(s.fds),
        threads: m.threads.max(s.threads),
        registry: m.registry.max(s.registry),
        znodes: m.znodes.max(s.znodes),
        directories: m.directories.max(s.directories),
        watches: m.watches.max(s.watches),
        ephemerals: m.ephemerals.max(s.ephemerals),
        data_bytes: m.data_bytes.max(s.data_bytes),
    });
    let mut table = format!("churn: {cycles} cycles, warm-up {warmup:?}, measured {measured:?}\n{HEADER}\n");
    for (i, s) in samples.iter().enumerate() {
        let what = match i {
            0 => "warmed",
            i if i == samples.len() - 1 => "end",
            _ => "",
        };
        table += &s.row(what);
        table.push('\n');
    }
    table += &max.row("max");
    table.push('\n');
    table += &format!(
        "registry: {registry_start} before the run, {} with the long session, {} after it closed\n",
        end.registry, registry_end.registry
    );
    table += &format!(
        "tolerance: rss <= {rss_limit} kB (+max(10 %, 8 MiB)); fds <= {}, threads <= {}; \
         znodes - dirs == {}, watches == {}, ephemerals == {} at the end; registry == {registry_start}\n",
        after_warmup.fds,
        after_warmup.threads,
        after_warmup.znodes - after_warmup.directories,
        after_warmup.watches,
        after_warmup.ephemerals
    );
    eprintln!("{table}");

    assert!(flat(&end), "something grew:\n{table}");
    assert!(max.rss_kb <= rss_limit, "resident memory grew:\n{table}");
    assert_eq!(
        registry_end.registry, registry_start,
        "the session registry grew:\n{table}"
    );
}
