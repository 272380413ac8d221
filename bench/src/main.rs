//! `zk-rwlock-bench`: the lock workloads of the Curator/kazoo comparison
//! (`peers/README.md`, "Contract for another implementation"), with the
//! same semantics as the peers, plus `floor_*` workloads that measure what
//! plain ZooKeeper calls cost on the same server, without any lock logic.
//!
//! Every benchmark client is its own ZooKeeper session (its own
//! `zk::Client`, session timeout 4 s), opened before the clock starts;
//! clients are tasks on a multi-thread tokio runtime (the peers use
//! threads). One JSON object is printed as the last line of stdout.
//!
//! Wake-ups are the library's own counts ([`SharedLock::stats`]), summed
//! over every lock of the run.

// The command line's helpers (exit codes, failures, connecting and closing
// sessions), shared as source.
#[allow(dead_code)]
#[path = "../../cli/src/common.rs"]
mod common;
// The command line's connection options (--auth, --tls-*, --acl), shared as source.
#[allow(dead_code)]
#[path = "../../cli/src/connection.rs"]
mod connection;

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use serde_json::Value;
use zk_rwlock::{zk, Guard, Mode, SharedLock};

use crate::common::{exit, Failure};

/// Session timeout of every benchmark client (the peers' value: the server
/// maximum with `tickTime=200`).
const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
/// How long connecting one session may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Sessions connected at once before the clock starts.
const CONNECT_BATCH: usize = 64;
/// How long the herd's holder waits after the last waiter is queued.
const HERD_PAUSE: Duration = Duration::from_millis(300);
/// How long one herd waiter may take to appear in the queue.
const ENQUEUE_LIMIT: Duration = Duration::from_secs(10);

const AFTER_HELP: &str = "See `zk-rwlock-bench --help` for the workloads and the JSON fields.";

const AFTER_LONG_HELP: &str = "\
Workloads (the peers' contract, peers/README.md; --clients and --grants
default to the values of peers/run.sh):
  uncontended_write   1 client, G x (write acquire, release); secs = whole loop
  uncontended_read    the same with the read lock
  uncontended_mutex   the same with the write lock (there is no separate
                      exclusive lock; the peers use their mutex recipe here)
  contended_write     C clients loop write acquire/release (hold --hold-ms);
                      the G-th grant stops the run, later (draining) grants
                      are not counted; secs = start barrier -> G-th grant,
                      or --max-secs if not reached (reached_target:false).
                      Default C=8, G=2000.
  contended_mutex     the same (write lock)
  mixed_90r10w        C clients (default 16, G=4000), each op a read with
                      p=0.9 (per-client PRNG seeded seed*1000+i), else write
  herd_release        client 0 holds the write lock; C waiters (default 64)
                      ask for the write lock one after another, each started
                      once the previous one's node is visible; after 300 ms
                      client 0 releases; every waiter releases as soon as it
                      is granted. Latencies are hand-offs (previous holder's
                      release call -> this grant); secs = holder's release
                      call -> last grant.
  floor_cycle         no lock logic: C clients (default 1) at once on one
                      directory, G cycles in all of (create ephemeral-
                      sequential + list children, pipelined; then delete).
                      grants = cycles; latency = create+list. With C=2 it is
                      the floor for contended_write with 2 clients.
  floor_create_delete the same, each cycle (create ephemeral-sequential;
                      delete), sequential; latency = create
  floor_handoff       client A deletes a node that client B watches with a data
                      watch, G rounds (default 500); latency = A's delete call
                      -> B's notification
  entity_locks        per-entity locks: ONE session shared by C workers
                      (default 64, G=4000); each grant takes the write lock of
                      PATH/e<k>, k uniform in --entities (default 1024; worker
                      i seeded seed*1000+i); directories are made on first
                      use, inside the timed run; violations = grants while
                      another worker held the same entity
  entity_floor        its floor, no lock logic: the same session, workers and
                      entity choice, each cycle one create (ephemeral-
                      sequential) in PATH/e<k> (making the directory on first
                      use) and its delete; latency = create
  memory_handles      client memory: C (default 10000) idle locks (PATH/e<i>)
                      on one session; bytes_each = VmRSS growth / C
  memory_waiters      C (default 1000) write acquires through one lock of one
                      session queued behind a holder of the same session;
                      bytes_each = VmRSS growth / C once all are queued; then
                      the holder releases and every waiter takes the lock

Every client is its own ZooKeeper session (timeout 4 s), opened before the
clock starts. --warmup N: N uncounted write acquire/release cycles (floors:
N uncounted cycles) by client 0 on PATH-warmup before measuring. Latency is
measured with a monotonic clock right before acquire to right after it
returns; percentiles are nearest-rank (sorted[ceil(q*n)-1]).

Output: one JSON object, the last line of stdout:
  impl, workload, clients, grants, secs, grants_per_s, p50_ms, p99_ms,
  max_ms, violations, errors, latency_kind (\"acquire\", \"handoff\" or for
  floors \"create_list\"/\"create\"), and where they apply:
  reached_target, hold_ms, acquire_timeouts, reads, writes, read_p99_ms,
  write_p99_ms (mixed), fifo_order, all_granted, enqueue_secs (herd),
  wakeups (watch events received by waiting acquires), spurious_wakeups
  (of those, wake-ups that did not end in a grant: the acquire waited again
  or gave up), relisted_wakeups (wake-ups that ended in a grant only after
  listing the lock directory again, instead of a direct hand-off),
  window_cpu_s (this process's user+sys CPU, all threads, from the clock's
  start to the run's end), max_rss_kb, first_error, version; entity_*:
  entities, sessions (1), entity_violations; memory_*: rss_base_kb, rss_kb,
  bytes_each.
  violations: a process-wide (readers, writers) count is updated right after
  each acquire and right before each release; a writer granted while anyone
  holds, or a reader granted while a writer holds, is a violation.

Exit codes:
  0    measured (the JSON line is printed)
  1    measured, but the lock let holders overlap (violations > 0)
  2    usage error
  69   ZooKeeper unreachable
  70   the benchmark could not run (e.g. a herd waiter never queued)

Environment:
  ZK_CONNECT  ZooKeeper servers when --zk/--connect is not given
  RUST_LOG    diagnostics on stderr (default: warn)

Examples:
  zk-rwlock-bench --workload uncontended_write
  zk-rwlock-bench --zk 127.0.0.1:2181 --workload contended_write --clients 32
  IMPLS=\"curator kazoo rust\" IMPL_CMD_rust=\"$PWD/target/release/zk-rwlock-bench\" \\
    bash peers/run.sh";

/// Measure lock throughput and latency against a ZooKeeper server (the
/// workloads of the Curator/kazoo comparison), printing JSON.
///
/// Set RUST_LOG (e.g. RUST_LOG=zk_rwlock=debug) for diagnostics on stderr.
#[derive(Debug, Parser)]
#[command(
    name = "zk-rwlock-bench",
    version,
    about,
    long_about = None,
    after_help = AFTER_HELP,
    after_long_help = AFTER_LONG_HELP
)]
struct Args {
    /// ZooKeeper servers, host:port[,host:port...] [env: ZK_CONNECT]
    /// [default: 127.0.0.1:2181]
    #[arg(long = "zk", visible_alias = "connect", value_name = "SERVERS")]
    zk: Option<String>,

    #[command(flatten)]
    security: connection::Security,

    #[command(flatten)]
    acl: connection::AclArg,

    /// What to measure (see below)
    #[arg(long, value_enum, value_name = "WORKLOAD")]
    workload: Workload,

    /// Clients (sessions); for herd_release the number of waiters; entity_*
    /// workers on one session; memory_* handles or waiters [default: 1,
    /// contended 8, mixed 16, herd 64, entity 64, memory_handles 10000,
    /// memory_waiters 1000]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    clients: Option<u64>,

    /// Grants to measure (floors: cycles or rounds) [default: 2000, mixed
    /// and entity 4000, herd = clients, floor_handoff 500]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    grants: Option<u64>,

    /// Upper bound of the measured run, in seconds
    #[arg(long, value_name = "SECS", default_value_t = 20.0)]
    max_secs: f64,

    /// The lock directory [default: /zk-rwlock-bench/<workload>-<pid>-<ms>,
    /// removed again afterwards]
    #[arg(long, value_name = "PATH")]
    path: Option<String>,

    /// Uncounted acquire/release cycles by client 0 on PATH-warmup first
    #[arg(long, value_name = "N", default_value_t = 200)]
    warmup: u64,

    /// Seed of the mixed workload's per-client generators (seed*1000+i)
    #[arg(long, value_name = "N", default_value_t = 42)]
    seed: u64,

    /// Hold each grant this long in contended_*, mixed_* and entity_*
    /// (milliseconds)
    #[arg(long, value_name = "MS", default_value_t = 0.0)]
    hold_ms: f64,

    /// entity_*: how many lock paths (PATH/e<k>) the workers pick from
    #[arg(long, value_name = "E", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    entities: u64,

    /// The `impl` field of the output (peers/run.sh keys rows on it; its
    /// error rows for this implementation use the IMPLS name `rust`)
    #[arg(long, value_name = "NAME", default_value = "rust")]
    impl_name: String,

    /// Runtime worker threads driving the clients. One is enough: the work
    /// is waiting on ZooKeeper, and the client's sockets are served by its
    /// own I/O thread; more workers add cross-thread wake-ups (measured:
    /// steadier latency and less CPU per grant with 1 on 2 cores)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1024))]
    threads: u64,

    /// Print the library's lock metrics (zk_rwlock_*, its `metrics`
    /// feature) of the run in Prometheus text format on stderr at the end
    #[arg(long)]
    prometheus: bool,
}

/// The workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    #[value(name = "uncontended_write")]
    UncontendedWrite,
    #[value(name = "uncontended_read")]
    UncontendedRead,
    #[value(name = "uncontended_mutex")]
    UncontendedMutex,
    #[value(name = "contended_write")]
    ContendedWrite,
    #[value(name = "contended_mutex")]
    ContendedMutex,
    #[value(name = "mixed_90r10w")]
    Mixed90r10w,
    #[value(name = "herd_release")]
    HerdRelease,
    #[value(name = "floor_cycle")]
    FloorCycle,
    #[value(name = "floor_create_delete")]
    FloorCreateDelete,
    #[value(name = "floor_handoff")]
    FloorHandoff,
    #[value(name = "entity_locks")]
    EntityLocks,
    #[value(name = "entity_floor")]
    EntityFloor,
    #[value(name = "memory_handles")]
    MemoryHandles,
    #[value(name = "memory_waiters")]
    MemoryWaiters,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::UncontendedWrite => "uncontended_write",
            Workload::UncontendedRead => "uncontended_read",
            Workload::UncontendedMutex => "uncontended_mutex",
            Workload::ContendedWrite => "contended_write",
            Workload::ContendedMutex => "contended_mutex",
            Workload::Mixed90r10w => "mixed_90r10w",
            Workload::HerdRelease => "herd_release",
            Workload::FloorCycle => "floor_cycle",
            Workload::FloorCreateDelete => "floor_create_delete",
            Workload::FloorHandoff => "floor_handoff",
            Workload::EntityLocks => "entity_locks",
            Workload::EntityFloor => "entity_floor",
            Workload::MemoryHandles => "memory_handles",
            Workload::MemoryWaiters => "memory_waiters",
        }
    }

    fn default_clients(self) -> usize {
        match self {
            Workload::ContendedWrite | Workload::ContendedMutex => 8,
            Workload::Mixed90r10w => 16,
            Workload::HerdRelease | Workload::EntityLocks | Workload::EntityFloor => 64,
            Workload::MemoryHandles => 10_000,
            Workload::MemoryWaiters => 1000,
            _ => 1,
        }
    }

    fn default_grants(self, clients: usize) -> u64 {
        match self {
            Workload::Mixed90r10w | Workload::EntityLocks | Workload::EntityFloor => 4000,
            Workload::HerdRelease | Workload::MemoryWaiters => clients as u64,
            Workload::FloorHandoff => 500,
            _ => 2000,
        }
    }

    /// Whether the workload takes locks (and so reports wake-ups).
    fn is_lock(self) -> bool {
        !matches!(
            self,
            Workload::FloorCycle
                | Workload::FloorCreateDelete
                | Workload::FloorHandoff
                | Workload::EntityFloor
                | Workload::MemoryHandles
        )
    }
}

fn main() -> ExitCode {
    common::init_tracing();
    run(Args::parse())
}

/// The bucket bounds of the Prometheus histograms, in seconds.
const SECONDS_BUCKETS: &[f64] = &[
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0,
];

/// Installs the Prometheus recorder (no HTTP listener: the text is
/// rendered at the end) and registers the library's metric descriptions.
fn install_prometheus() -> Result<metrics_exporter_prometheus::PrometheusHandle, Failure> {
    let failed = |e| {
        Failure::new(
            exit::SOFTWARE,
            format!("cannot install the Prometheus recorder: {e}"),
        )
    };
    let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets(SECONDS_BUCKETS)
        .and_then(|builder| builder.install_recorder())
        .map_err(failed)?;
    zk_rwlock::describe_metrics();
    Ok(handle)
}

/// Runs one benchmark.
fn run(args: Args) -> ExitCode {
    let prometheus = match args.prometheus.then(install_prometheus).transpose() {
        Ok(handle) => handle,
        Err(failure) => return failure.report(),
    };
    let bench = match Bench::from_args(args) {
        Ok(bench) => bench,
        Err(failure) => return failure.report(),
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all();
    runtime.worker_threads(bench.threads);
    let runtime = match runtime.build() {
        Ok(runtime) => runtime,
        Err(e) => return Failure::new(exit::SOFTWARE, format!("cannot start the runtime: {e}")).report(),
    };
    let bench = Arc::new(bench);
    let result = runtime.block_on(async {
        tokio::spawn(measure(bench.clone())).await.unwrap_or_else(|e| {
            Err(Failure::new(
                exit::SOFTWARE,
                format!("the benchmark task failed: {e}"),
            ))
        })
    });
    runtime.shutdown_timeout(Duration::from_secs(2));
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(failure) => return failure.report(),
    };
    let line = bench.json_line(&outcome);
    if let Some(handle) = prometheus {
        eprint!("{}", handle.render());
    }
    println!("{line}");
    if bench.holders.violations() > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Everything a run needs, shared by its tasks.
struct Bench {
    servers: String,
    workload: Workload,
    clients: usize,
    grants: u64,
    max: Duration,
    path: String,
    /// The path was chosen here: remove the directories afterwards.
    own_path: bool,
    warmup: u64,
    seed: u64,
    hold: Duration,
    hold_ms: f64,
    entities: usize,
    impl_name: String,
    threads: usize,
    holders: Holders,
    errors: Errors,
    wakes: Arc<WakeCounters>,
    /// How sessions connect (--auth, --tls-*).
    connect: zk_rwlock::ConnectOptions,
    /// The ACLs of the lock workloads' nodes (--acl, --dir-acl).
    acls: connection::AclArg,
}

impl Bench {
    fn from_args(args: Args) -> Result<Bench, Failure> {
        let usage = |m: String| Failure::new(exit::USAGE, m);
        if !args.max_secs.is_finite() || args.max_secs <= 0.0 || args.max_secs > 1e6 {
            return Err(usage(format!(
                "invalid --max-secs {}: must be a number of seconds > 0",
                args.max_secs
            )));
        }
        if !args.hold_ms.is_finite() || !(0.0..=3.6e6).contains(&args.hold_ms) {
            return Err(usage(format!(
                "invalid --hold-ms {}: must be >= 0 milliseconds",
                args.hold_ms
            )));
        }
        args.security.check_acl(args.acl)?;
        let connect = args.security.options(SESSION_TIMEOUT, CONNECT_TIMEOUT)?;
        let acls = args.acl;
        let workload = args.workload;
        let clients = args.clients.map_or(workload.default_clients(), |c| c as usize);
        let clients = match workload {
            Workload::UncontendedWrite | Workload::UncontendedRead | Workload::UncontendedMutex => 1,
            Workload::FloorHandoff => 2,
            _ => clients,
        };
        let grants = match workload {
            Workload::HerdRelease | Workload::MemoryWaiters => clients as u64,
            _ => args.grants.unwrap_or_else(|| workload.default_grants(clients)),
        };
        let (path, own_path) = match args.path {
            Some(path) => (path, false),
            None => {
                let ms = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis());
                let name = workload.name();
                (
                    format!("/zk-rwlock-bench/{name}-{}-{ms}", std::process::id()),
                    true,
                )
            }
        };
        Ok(Bench {
            servers: common::connect_string(args.zk),
            connect,
            acls,
            workload,
            clients,
            grants,
            max: Duration::from_secs_f64(args.max_secs),
            path,
            own_path,
            warmup: args.warmup,
            seed: args.seed,
            hold: Duration::from_secs_f64(args.hold_ms / 1000.0),
            hold_ms: args.hold_ms,
            entities: usize::try_from(args.entities).unwrap_or(usize::MAX),
            impl_name: args.impl_name,
            threads: usize::try_from(args.threads).unwrap_or(1),
            holders: Holders::default(),
            errors: Errors::default(),
            wakes: Arc::new(WakeCounters::default()),
        })
    }

    fn warmup_path(&self) -> String {
        format!("{}-warmup", self.path)
    }

    /// The output line.
    fn json_line(&self, o: &Outcome) -> String {
        let mut lat = o.lat_ms.clone();
        lat.sort_by(f64::total_cmp);
        let secs = o.secs.filter(|s| s.is_finite());
        let per_s = match secs {
            Some(s) if s > 0.0 => o.grants as f64 / s,
            _ => 0.0,
        };
        let mut fields: Vec<(&str, Value)> = vec![
            ("impl", self.impl_name.clone().into()),
            ("workload", self.workload.name().into()),
            ("clients", o.clients.into()),
            ("grants", o.grants.into()),
            ("secs", num(secs)),
            ("grants_per_s", num(Some(per_s))),
            ("p50_ms", num(percentile(&lat, 0.50))),
            ("p99_ms", num(percentile(&lat, 0.99))),
            ("max_ms", num(lat.last().copied())),
            ("violations", self.holders.violations().into()),
            ("errors", self.errors.count.load(Ordering::Relaxed).into()),
            ("latency_kind", o.latency_kind.into()),
        ];
        fields.extend(o.extra.iter().map(|(k, v)| (*k, v.clone())));
        if let Some(w) = o.wakes {
            fields.push(("wakeups", w.wakeups.into()));
            fields.push(("spurious_wakeups", w.spurious.into()));
            fields.push(("relisted_wakeups", w.relisted.into()));
        }
        fields.push(("window_cpu_s", num(Some(o.cpu_s))));
        if let Some(kb) = max_rss_kb() {
            fields.push(("max_rss_kb", kb.into()));
        }
        if let Some(first) = self.errors.first.get() {
            fields.push(("first_error", first.clone().into()));
        }
        fields.push((
            "version",
            format!("zk-rwlock-{} zookeeper-client-0.11", env!("CARGO_PKG_VERSION")).into(),
        ));
        let mut line = String::from("{");
        for (i, (key, value)) in fields.iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            let _ = write!(line, "{}:{}", Value::from(*key), value);
        }
        line.push('}');
        line
    }
}

/// What a workload measured.
struct Outcome {
    clients: usize,
    grants: u64,
    secs: Option<f64>,
    lat_ms: Vec<f64>,
    latency_kind: &'static str,
    extra: Vec<(&'static str, Value)>,
    /// Wake-up counts of lock workloads.
    wakes: Option<Wakes>,
    /// CPU of this process (all threads) from the clock's start to the
    /// run's end: `window_cpu_s`.
    cpu_s: f64,
}

async fn measure(b: Arc<Bench>) -> Result<Outcome, Failure> {
    zk_rwlock::validate_path(&b.path)?;
    let outcome = match b.workload {
        Workload::UncontendedWrite | Workload::UncontendedMutex => uncontended(&b, Kind::Write).await,
        Workload::UncontendedRead => uncontended(&b, Kind::Read).await,
        Workload::ContendedWrite | Workload::ContendedMutex => contended(&b, Some(Kind::Write)).await,
        Workload::Mixed90r10w => contended(&b, None).await,
        Workload::HerdRelease => herd(&b).await,
        Workload::FloorCycle => floor_cycle(&b, true).await,
        Workload::FloorCreateDelete => floor_cycle(&b, false).await,
        Workload::FloorHandoff => floor_handoff(&b).await,
        Workload::EntityLocks => entities(&b, false).await,
        Workload::EntityFloor => entities(&b, true).await,
        Workload::MemoryHandles => memory_handles(&b).await,
        Workload::MemoryWaiters => memory_waiters(&b).await,
    }?;
    debug_assert!(outcome.wakes.is_some() == b.workload.is_lock());
    if b.own_path {
        remove_dirs(&b).await;
    }
    Ok(outcome)
}

// ---------------------------------------------------------------------------
// Lock workloads

/// What a benchmark client asks for. The `*_mutex` workloads use the write
/// lock: there is no separate exclusive lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
}

/// Acquires `kind`, waiting at most `timeout` (forever if `None`).
async fn acquire(
    lock: &SharedLock,
    kind: Kind,
    timeout: Option<Duration>,
) -> Result<Option<Guard>, zk_rwlock::Error> {
    let mode = match kind {
        Kind::Read => Mode::Read,
        Kind::Write => Mode::Write,
    };
    match timeout {
        None => lock.acquire(mode).await.map(Some),
        Some(t) => lock.acquire_timeout(mode, t).await,
    }
}

/// `--warmup` uncounted write cycles by `client` on PATH-warmup.
async fn warmup(b: &Bench, client: &zk::Client) -> Result<(), Failure> {
    if b.warmup == 0 {
        return Ok(());
    }
    let lock = b
        .acls
        .apply(SharedLock::builder(client.clone(), &b.warmup_path()))
        .build()?;
    for _ in 0..b.warmup {
        lock.write().await?.release().await?;
    }
    Ok(())
}

/// `uncontended_*`: one client, G x (acquire, release).
async fn uncontended(b: &Bench, kind: Kind) -> Result<Outcome, Failure> {
    let clients = connect_all(b, 1).await?;
    warmup(b, &clients[0]).await?;
    let lock = b
        .acls
        .apply(SharedLock::builder(clients[0].clone(), &b.path))
        .build()?;
    b.wakes.track(&lock);
    let mut lat = Vec::with_capacity(b.grants as usize);
    b.wakes.reset();
    let cpu0 = cpu_secs();
    let start = Instant::now();
    let deadline = start + b.max;
    for _ in 0..b.grants {
        if Instant::now() >= deadline {
            break;
        }
        let t0 = Instant::now();
        let guard = match acquire(&lock, kind, None).await {
            Ok(Some(guard)) => guard,
            Ok(None) => break,
            Err(e) => {
                b.errors.record(&e);
                break;
            }
        };
        let t1 = Instant::now();
        b.holders.acquired(kind);
        lat.push(ms(t1 - t0));
        b.holders.releasing(kind);
        if let Err(e) = guard.release().await {
            b.errors.record(&e);
            break;
        }
    }
    let end = Instant::now();
    let cpu_s = cpu_secs() - cpu0;
    let wakes = b.wakes.get();
    drop(lock);
    close_all(clients).await;
    Ok(Outcome {
        clients: 1,
        grants: lat.len() as u64,
        secs: Some((end - start).as_secs_f64()),
        lat_ms: lat,
        latency_kind: "acquire",
        extra: Vec::new(),
        wakes: Some(wakes),
        cpu_s,
    })
}

/// State shared by the clients of a contended or mixed loop.
struct Shared {
    stop: AtomicBool,
    granted: AtomicU64,
    timeouts: AtomicU64,
    barrier: tokio::sync::Barrier,
    start: OnceLock<Instant>,
    /// When the G-th grant came, and the wake-up counts then.
    target: OnceLock<(Instant, Wakes)>,
}

/// What one client of a loop measured: (latency in ms, kind) per counted grant.
type Samples = Vec<(f64, Kind)>;

/// `contended_*` (`fixed` = the kind every client asks for) and
/// `mixed_90r10w` (`fixed` = None: read with p=0.9 per op).
async fn contended(b: &Arc<Bench>, fixed: Option<Kind>) -> Result<Outcome, Failure> {
    let clients = connect_all(b, b.clients).await?;
    warmup(b, &clients[0]).await?;
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        granted: AtomicU64::new(0),
        timeouts: AtomicU64::new(0),
        barrier: tokio::sync::Barrier::new(b.clients + 1),
        start: OnceLock::new(),
        target: OnceLock::new(),
    });
    let mut tasks = Vec::with_capacity(b.clients);
    for (i, client) in clients.iter().enumerate() {
        let lock = b
            .acls
            .apply(SharedLock::builder(client.clone(), &b.path))
            .build()?;
        b.wakes.track(&lock);
        let (b, shared) = (b.clone(), shared.clone());
        tasks.push(tokio::spawn(client_loop(b, shared, lock, i as u64, fixed)));
    }
    b.wakes.reset();
    let cpu0 = cpu_secs();
    let start = Instant::now();
    let _ = shared.start.set(start);
    shared.barrier.wait().await;
    let (samples, stuck): (Samples, bool) = join_until_max(b, start, tasks, "client").await;
    let cpu_s = cpu_secs() - cpu0;
    let (end, wakes) = match shared.target.get() {
        Some(&(at, wakes)) => (at, wakes),
        None => (start + b.max, b.wakes.get()),
    };
    close_all(clients).await;
    let lat: Vec<f64> = samples.iter().map(|(l, _)| *l).collect();
    let mut extra: Vec<(&'static str, Value)> =
        vec![("reached_target", shared.target.get().is_some().into())];
    if b.hold_ms > 0.0 {
        extra.push(("hold_ms", b.hold_ms.into()));
    }
    extra.push(("acquire_timeouts", shared.timeouts.load(Ordering::Relaxed).into()));
    if stuck {
        extra.push(("stuck_threads", true.into()));
    }
    if fixed.is_none() {
        let pick = |kind| {
            let mut v: Vec<f64> = samples
                .iter()
                .filter(|(_, k)| *k == kind)
                .map(|(l, _)| *l)
                .collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let (reads, writes) = (pick(Kind::Read), pick(Kind::Write));
        extra.push(("reads", reads.len().into()));
        extra.push(("writes", writes.len().into()));
        extra.push(("read_p99_ms", num(percentile(&reads, 0.99))));
        extra.push(("write_p99_ms", num(percentile(&writes, 0.99))));
    }
    Ok(Outcome {
        clients: b.clients,
        grants: lat.len() as u64,
        secs: Some((end - start).as_secs_f64()),
        lat_ms: lat,
        latency_kind: "acquire",
        extra,
        wakes: Some(wakes),
        cpu_s,
    })
}

/// One client of a contended or mixed loop.
async fn client_loop(
    b: Arc<Bench>,
    shared: Arc<Shared>,
    lock: SharedLock,
    i: u64,
    fixed: Option<Kind>,
) -> Samples {
    let mut rng = SplitMix64(b.seed.wrapping_mul(1000).wrapping_add(i));
    let mut samples = Samples::new();
    shared.barrier.wait().await;
    let Some(&start) = shared.start.get() else {
        return samples;
    };
    let deadline = start + b.max;
    while !shared.stop.load(Ordering::Acquire) {
        let kind = fixed.unwrap_or_else(|| {
            if rng.next_f64() < 0.9 {
                Kind::Read
            } else {
                Kind::Write
            }
        });
        let t0 = Instant::now();
        let left = deadline.saturating_duration_since(t0);
        if left.is_zero() {
            break;
        }
        let guard = match acquire(&lock, kind, Some(left)).await {
            Ok(Some(guard)) => guard,
            Ok(None) => {
                shared.timeouts.fetch_add(1, Ordering::Relaxed);
                break;
            }
            Err(e) => {
                b.errors.record(&e);
                break;
            }
        };
        let t1 = Instant::now();
        b.holders.acquired(kind);
        let g = shared.granted.fetch_add(1, Ordering::AcqRel) + 1;
        if g <= b.grants && t1 <= deadline {
            samples.push((ms(t1 - t0), kind));
            if g == b.grants {
                let _ = shared.target.set((t1, b.wakes.get()));
                shared.stop.store(true, Ordering::Release);
            }
        }
        if !b.hold.is_zero() {
            // A thread that sleeps, as in the peers (a tokio timer would
            // round 1 ms up to the next millisecond tick).
            let hold = b.hold;
            tokio::task::block_in_place(|| std::thread::sleep(hold));
        }
        b.holders.releasing(kind);
        if let Err(e) = guard.release().await {
            b.errors.record(&e);
            break;
        }
    }
    samples
}

/// Grant and release instants of the herd, in nanoseconds since `base`.
struct HerdLog {
    base: Instant,
    order: AtomicUsize,
    timeouts: AtomicU64,
    /// `grant_at[k]`: when the k-th grant came (k from 1).
    grant_at: Vec<AtomicU64>,
    /// `release_at[k]`: when the k-th holder called release (0: the first holder).
    release_at: Vec<AtomicU64>,
    /// `grant_order[k]`: which waiter was granted k-th.
    grant_order: Vec<AtomicUsize>,
}

impl HerdLog {
    fn nanos(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.base).as_nanos() as u64
    }
}

/// `herd_release`: one holder, C queued writers, one release.
async fn herd(b: &Arc<Bench>) -> Result<Outcome, Failure> {
    let waiters = b.clients;
    let clients = connect_all(b, waiters + 1).await?;
    warmup(b, &clients[0]).await?;
    let holder = b
        .acls
        .apply(SharedLock::builder(clients[0].clone(), &b.path))
        .build()?;
    b.wakes.track(&holder);
    let held = holder.write().await?;
    b.holders.acquired(Kind::Write);
    let slots = || (0..=waiters).map(|_| AtomicU64::new(0)).collect::<Vec<_>>();
    let log = Arc::new(HerdLog {
        base: Instant::now(),
        order: AtomicUsize::new(0),
        timeouts: AtomicU64::new(0),
        grant_at: slots(),
        release_at: slots(),
        grant_order: (0..=waiters).map(|_| AtomicUsize::new(0)).collect(),
    });
    let patience = b.max + Duration::from_secs(60);
    b.wakes.reset();
    let enqueue_start = Instant::now();
    let mut tasks = Vec::with_capacity(waiters);
    for (id, client) in clients.iter().enumerate().skip(1) {
        let lock = b
            .acls
            .apply(SharedLock::builder(client.clone(), &b.path))
            .build()?;
        b.wakes.track(&lock);
        let (b2, log2) = (b.clone(), log.clone());
        tasks.push(tokio::spawn(herd_waiter(b2, log2, lock, id, patience)));
        // Start the next waiter only once this one's node is in the queue.
        let until = Instant::now() + ENQUEUE_LIMIT;
        loop {
            match clients[0].list_children(&b.path).await {
                Ok(children) if children.len() > id => break,
                Ok(_) => {}
                Err(e) => return Err(common::zk_failure(e, &b.path)),
            }
            if Instant::now() > until {
                return Err(Failure::new(
                    exit::SOFTWARE,
                    format!("herd waiter {id} did not enqueue within {ENQUEUE_LIMIT:?}"),
                ));
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let enqueue_secs = enqueue_start.elapsed().as_secs_f64();
    // Let the last waiters finish setting their watches.
    tokio::time::sleep(HERD_PAUSE).await;
    b.holders.releasing(Kind::Write);
    let cpu0 = cpu_secs();
    let t0 = Instant::now();
    log.release_at[0].store(log.nanos(t0), Ordering::Relaxed);
    if let Err(e) = held.release().await {
        b.errors.record(&e);
    }
    let all_done = tokio::time::timeout(patience, async {
        for task in tasks {
            if let Err(e) = task.await {
                b.errors.record(&format!("waiter task failed: {e}"));
            }
        }
    })
    .await
    .is_ok();
    let cpu_s = cpu_secs() - cpu0;
    let wakes = b.wakes.get();
    drop(holder);
    close_all(clients).await;
    let n = log.order.load(Ordering::Acquire).min(waiters);
    let at = |v: &[AtomicU64], k: usize| v[k].load(Ordering::Relaxed) as f64 / 1e6;
    let lat: Vec<f64> = (1..=n)
        .map(|k| at(&log.grant_at, k) - at(&log.release_at, k - 1))
        .collect();
    let fifo = (1..=n).all(|k| log.grant_order[k].load(Ordering::Relaxed) == k);
    let secs = (n > 0).then(|| (at(&log.grant_at, n) - at(&log.release_at, 0)) / 1e3);
    Ok(Outcome {
        clients: waiters,
        grants: n as u64,
        secs,
        lat_ms: lat,
        latency_kind: "handoff",
        extra: vec![
            ("fifo_order", (fifo && n == waiters).into()),
            ("all_granted", (all_done && n == waiters).into()),
            ("acquire_timeouts", log.timeouts.load(Ordering::Relaxed).into()),
            ("enqueue_secs", num(Some(enqueue_secs))),
        ],
        wakes: Some(wakes),
        cpu_s,
    })
}

/// One herd waiter: write acquire, release as soon as granted.
async fn herd_waiter(b: Arc<Bench>, log: Arc<HerdLog>, lock: SharedLock, id: usize, patience: Duration) {
    let result = lock.write_timeout(patience).await;
    let granted_at = Instant::now();
    match result {
        Ok(Some(guard)) => {
            b.holders.acquired(Kind::Write);
            let k = log.order.fetch_add(1, Ordering::AcqRel) + 1;
            if k < log.grant_at.len() {
                log.grant_at[k].store(log.nanos(granted_at), Ordering::Relaxed);
                log.grant_order[k].store(id, Ordering::Relaxed);
            }
            b.holders.releasing(Kind::Write);
            if k < log.release_at.len() {
                log.release_at[k].store(log.nanos(Instant::now()), Ordering::Relaxed);
            }
            if let Err(e) = guard.release().await {
                b.errors.record(&e);
            }
        }
        Ok(None) => {
            log.timeouts.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => b.errors.record(&e),
    }
}

// ---------------------------------------------------------------------------
// Floors: plain client calls, no lock logic

fn dir_options() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

fn node_options() -> zk::CreateOptions<'static> {
    zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all())
}

/// One floor cycle on `dir`: create an ephemeral-sequential node (pipelined
/// with a listing of `dir` if `list`), then delete it. Returns the time to
/// the create's (and listing's) answer.
async fn floor_one(client: &zk::Client, dir: &str, list: bool) -> Result<Duration, zk::Error> {
    let prefix = format!("{dir}/floor-W-");
    let options = node_options();
    let t0 = Instant::now();
    let create = client.create(&prefix, &[], &options);
    let listing = list.then(|| client.list_children(dir));
    let (_, seq) = create.await?;
    if let Some(listing) = listing {
        listing.await?;
    }
    let took = t0.elapsed();
    let node = format!("{prefix}{:010}", seq.into_i64() as i32);
    client.delete(&node, None).await?;
    Ok(took)
}

/// Makes `b.path` and the warmup directory, then runs `b.warmup`
/// uncounted rounds of `warmup_round` (one round on the warmup directory).
async fn floor_setup<F, Fut>(
    b: &Bench,
    client: &zk::Client,
    warmup_dir: &str,
    warmup_round: F,
) -> Result<(), Failure>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Duration, zk::Error>>,
{
    for dir in [b.path.as_str(), warmup_dir] {
        client
            .mkdir(dir, &dir_options())
            .await
            .map_err(|e| common::zk_failure(e, dir))?;
    }
    for _ in 0..b.warmup {
        warmup_round()
            .await
            .map_err(|e| common::zk_failure(e, warmup_dir))?;
    }
    Ok(())
}

/// Timed rounds on `b.path` for one client, until `taken` (shared by every
/// client of the run) reaches `b.grants`, the deadline passes, or a round
/// fails (recorded). Returns the latencies (ms) `round` measured.
async fn timed_rounds<F, Fut>(b: &Bench, taken: &AtomicU64, deadline: Instant, round: F) -> Vec<f64>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Duration, zk::Error>>,
{
    let mut lat = Vec::new();
    while taken.fetch_add(1, Ordering::AcqRel) < b.grants && Instant::now() < deadline {
        match round().await {
            Ok(took) => lat.push(ms(took)),
            Err(e) => {
                b.errors.record(&e);
                break;
            }
        }
    }
    lat
}

/// `floor_cycle` (`list`) and `floor_create_delete`: every client cycles
/// on the same directory at once, `b.grants` cycles in all.
async fn floor_cycle(b: &Arc<Bench>, list: bool) -> Result<Outcome, Failure> {
    let clients = connect_all(b, b.clients).await?;
    let warmup_dir = b.warmup_path();
    let first = &clients[0];
    floor_setup(b, first, &warmup_dir, || floor_one(first, &warmup_dir, list)).await?;
    let taken = Arc::new(AtomicU64::new(0));
    let cpu0 = cpu_secs();
    let start = Instant::now();
    let deadline = start + b.max;
    let tasks: Vec<_> = clients
        .iter()
        .map(|client| {
            let (b, client, taken) = (b.clone(), client.clone(), taken.clone());
            tokio::spawn(async move {
                timed_rounds(&b, &taken, deadline, || floor_one(&client, &b.path, list)).await
            })
        })
        .collect();
    let mut lat = Vec::with_capacity(b.grants as usize);
    for task in tasks {
        match task.await {
            Ok(mut part) => lat.append(&mut part),
            Err(e) => b.errors.record(&format!("floor client task failed: {e}")),
        }
    }
    let (secs, cpu_s) = (start.elapsed().as_secs_f64(), cpu_secs() - cpu0);
    close_all(clients).await;
    Ok(Outcome {
        clients: b.clients,
        grants: lat.len() as u64,
        secs: Some(secs),
        lat_ms: lat,
        latency_kind: if list { "create_list" } else { "create" },
        extra: Vec::new(),
        wakes: None,
        cpu_s,
    })
}

/// One hand-off round: A creates a node, B sets a data watch on it, A
/// deletes it. Returns the time from A's delete call to B's notification.
async fn handoff_one(a: &zk::Client, b: &zk::Client, dir: &str) -> Result<Duration, zk::Error> {
    let options = node_options();
    let (_, seq) = a.create(&format!("{dir}/floor-W-"), &[], &options).await?;
    let node = format!("{dir}/floor-W-{:010}", seq.into_i64() as i32);
    let (_, _, watcher) = b.get_and_watch_data(&node).await?;
    let t0 = Instant::now();
    let deleted = a.delete(&node, None);
    let notified = async {
        let event = watcher.changed().await;
        (Instant::now(), event)
    };
    let (deleted, (t1, event)) = tokio::join!(deleted, notified);
    deleted?;
    if event.event_type != zk::EventType::NodeDeleted {
        return Err(zk::Error::UnexpectedError(format!(
            "expected NodeDeleted, got {:?}",
            event.event_type
        )));
    }
    Ok(t1 - t0)
}

/// `floor_handoff`: G rounds of [`handoff_one`].
async fn floor_handoff(b: &Bench) -> Result<Outcome, Failure> {
    let clients = connect_all(b, 2).await?;
    let (a, w) = (&clients[0], &clients[1]);
    let warmup_dir = b.warmup_path();
    floor_setup(b, a, &warmup_dir, || handoff_one(a, w, &warmup_dir)).await?;
    let (cpu0, start) = (cpu_secs(), Instant::now());
    let lat = timed_rounds(b, &AtomicU64::new(0), start + b.max, || {
        handoff_one(a, w, &b.path)
    })
    .await;
    let (secs, cpu_s) = (start.elapsed().as_secs_f64(), cpu_secs() - cpu0);
    close_all(clients).await;
    Ok(Outcome {
        clients: 2,
        grants: lat.len() as u64,
        secs: Some(secs),
        lat_ms: lat,
        latency_kind: "handoff",
        extra: Vec::new(),
        wakes: None,
        cpu_s,
    })
}

/// Joins the loop tasks of a run, each returning its samples, until 30 s
/// past the run's longest time (`--max-secs`): a task still running then is
/// aborted, and reported as stuck. A task that failed is recorded as an
/// error (`what`: "client", "worker").
async fn join_until_max<T>(
    b: &Bench,
    start: Instant,
    tasks: Vec<tokio::task::JoinHandle<Vec<T>>>,
    what: &str,
) -> (Vec<T>, bool) {
    let mut samples = Vec::with_capacity(b.grants as usize);
    let mut stuck = false;
    let join_until = tokio::time::Instant::from_std(start + b.max + Duration::from_secs(30));
    for task in tasks {
        let abort = task.abort_handle();
        match tokio::time::timeout_at(join_until, task).await {
            Ok(Ok(mine)) => samples.extend(mine),
            Ok(Err(e)) => b.errors.record(&format!("{what} task failed: {e}")),
            Err(_) => {
                stuck = true;
                abort.abort();
            }
        }
    }
    (samples, stuck)
}

// ---------------------------------------------------------------------------
// Per-entity locks on one session

/// What an entity worker holds: a lock's guard, or (floor) its own node.
enum EntityHold {
    Guard(Guard),
    Node(String),
}

/// `entity_locks` (`floor` false) and `entity_floor`: one session, C workers,
/// each grant on `PATH/e<k>`, k uniform in `b.entities`.
async fn entities(b: &Arc<Bench>, floor: bool) -> Result<Outcome, Failure> {
    let clients = connect_all(b, 1).await?;
    let client = clients[0].clone();
    if floor {
        // As the lock's warm-up: its directory and parents, not PATH itself.
        let warmup_dir = b.warmup_path();
        client
            .mkdir(&warmup_dir, &dir_options())
            .await
            .map_err(|e| common::zk_failure(e, &warmup_dir))?;
        for _ in 0..b.warmup {
            floor_one(&client, &warmup_dir, false)
                .await
                .map_err(|e| common::zk_failure(e, &warmup_dir))?;
        }
    } else {
        warmup(b, &client).await?;
    }
    // One lock handle per entity, made before the clock (no I/O): the
    // directories themselves are made by the first acquire of each.
    let locks: Arc<Vec<SharedLock>> = if floor {
        Arc::new(Vec::new())
    } else {
        let mut locks = Vec::with_capacity(b.entities);
        for k in 0..b.entities {
            let lock = b
                .acls
                .apply(SharedLock::builder(client.clone(), &entity_path(b, k)))
                .build()?;
            b.wakes.track(&lock);
            locks.push(lock);
        }
        Arc::new(locks)
    };
    let board = Arc::new(EntityBoard {
        held: (0..b.entities).map(|_| AtomicU64::new(0)).collect(),
        violations: AtomicU64::new(0),
    });
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        granted: AtomicU64::new(0),
        timeouts: AtomicU64::new(0),
        barrier: tokio::sync::Barrier::new(b.clients + 1),
        start: OnceLock::new(),
        target: OnceLock::new(),
    });
    let tasks: Vec<_> = (0..b.clients)
        .map(|i| {
            let worker = EntityWorker {
                b: b.clone(),
                shared: shared.clone(),
                board: board.clone(),
                client: client.clone(),
                locks: locks.clone(),
            };
            tokio::spawn(worker.run(i as u64))
        })
        .collect();
    b.wakes.reset();
    let cpu0 = cpu_secs();
    let start = Instant::now();
    let _ = shared.start.set(start);
    shared.barrier.wait().await;
    let (lat, stuck): (Vec<f64>, bool) = join_until_max(b, start, tasks, "worker").await;
    let cpu_s = cpu_secs() - cpu0;
    let (end, wakes) = match shared.target.get() {
        Some(&(at, wakes)) => (at, wakes),
        None => (start + b.max, b.wakes.get()),
    };
    b.wakes.clear();
    drop(locks);
    drop(client);
    close_all(clients).await;
    let violations = board.violations.load(Ordering::Relaxed);
    b.holders.add_violations(violations);
    let mut extra: Vec<(&'static str, Value)> = vec![
        ("entities", b.entities.into()),
        ("sessions", 1.into()),
        ("entity_violations", violations.into()),
        ("reached_target", shared.target.get().is_some().into()),
        ("acquire_timeouts", shared.timeouts.load(Ordering::Relaxed).into()),
    ];
    if b.hold_ms > 0.0 {
        extra.push(("hold_ms", b.hold_ms.into()));
    }
    if stuck {
        extra.push(("stuck_threads", true.into()));
    }
    Ok(Outcome {
        clients: b.clients,
        grants: lat.len() as u64,
        secs: Some((end - start).as_secs_f64()),
        lat_ms: lat,
        latency_kind: if floor { "create" } else { "acquire" },
        extra,
        wakes: (!floor).then_some(wakes),
        cpu_s,
    })
}

/// `PATH/e<k>`.
fn entity_path(b: &Bench, k: usize) -> String {
    format!("{}/e{k}", b.path)
}

/// Holders per entity, and the grants made while another worker held the
/// same entity.
struct EntityBoard {
    held: Vec<AtomicU64>,
    violations: AtomicU64,
}

/// One worker of an entity workload.
struct EntityWorker {
    b: Arc<Bench>,
    shared: Arc<Shared>,
    board: Arc<EntityBoard>,
    client: zk::Client,
    /// Empty for the floor.
    locks: Arc<Vec<SharedLock>>,
}

impl EntityWorker {
    /// Loops until the G-th grant (of all workers), the deadline or an
    /// error; returns the latencies (ms) of its counted grants.
    async fn run(self, i: u64) -> Vec<f64> {
        let (b, shared) = (&self.b, &self.shared);
        let mut rng = SplitMix64(b.seed.wrapping_mul(1000).wrapping_add(i));
        let mut lat = Vec::new();
        shared.barrier.wait().await;
        let Some(&start) = shared.start.get() else {
            return lat;
        };
        let deadline = start + b.max;
        while !shared.stop.load(Ordering::Acquire) {
            let k = rng.below(b.entities);
            let t0 = Instant::now();
            let left = deadline.saturating_duration_since(t0);
            if left.is_zero() {
                break;
            }
            let hold = match self.take(k, left).await {
                Ok(Some(hold)) => hold,
                Ok(None) => {
                    shared.timeouts.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Err(e) => {
                    b.errors.record(&e);
                    break;
                }
            };
            let t1 = Instant::now();
            if self.board.held[k].fetch_add(1, Ordering::AcqRel) > 0 {
                self.board.violations.fetch_add(1, Ordering::Relaxed);
            }
            let g = shared.granted.fetch_add(1, Ordering::AcqRel) + 1;
            if g <= b.grants && t1 <= deadline {
                lat.push(ms(t1 - t0));
                if g == b.grants {
                    let _ = shared.target.set((t1, b.wakes.get()));
                    shared.stop.store(true, Ordering::Release);
                }
            }
            if !b.hold.is_zero() {
                let hold = b.hold;
                tokio::task::block_in_place(|| std::thread::sleep(hold));
            }
            self.board.held[k].fetch_sub(1, Ordering::AcqRel);
            let released = match hold {
                EntityHold::Guard(guard) => guard.release().await.map_err(|e| e.to_string()),
                EntityHold::Node(node) => self.client.delete(&node, None).await.map_err(|e| e.to_string()),
            };
            if let Err(e) = released {
                b.errors.record(&e);
                break;
            }
        }
        lat
    }

    /// The write lock of entity `k` (or, for the floor, a node of its own
    /// in the entity's directory); `Ok(None)` if `left` passed first.
    async fn take(&self, k: usize, left: Duration) -> Result<Option<EntityHold>, String> {
        match self.locks.get(k) {
            Some(lock) => match acquire(lock, Kind::Write, Some(left)).await {
                Ok(guard) => Ok(guard.map(EntityHold::Guard)),
                Err(e) => Err(e.to_string()),
            },
            None => floor_entity_create(&self.client, &entity_path(&self.b, k))
                .await
                .map(|node| Some(EntityHold::Node(node)))
                .map_err(|e| e.to_string()),
        }
    }
}

/// The floor's create: one ephemeral-sequential node in `dir`; where `dir`
/// is missing, it is made first as the lock makes it (a container, its
/// parent persistent), then the create is sent again.
async fn floor_entity_create(client: &zk::Client, dir: &str) -> Result<String, zk::Error> {
    let prefix = format!("{dir}/floor-W-");
    let options = node_options();
    let container = zk::CreateMode::Container.with_acls(zk::Acls::anyone_all());
    for _ in 0..10 {
        match client.create(&prefix, &[], &options).await {
            Ok((_, seq)) => return Ok(format!("{prefix}{:010}", seq.into_i64() as i32)),
            Err(zk::Error::NoNode) => match client.create(dir, &[], &container).await {
                Ok(_) | Err(zk::Error::NodeExists) => {}
                Err(zk::Error::NoNode) => {
                    if let Some((parent, _)) = dir.rsplit_once('/') {
                        client.mkdir(parent, &dir_options()).await?;
                    }
                }
                Err(e) => return Err(e),
            },
            Err(e) => return Err(e),
        }
    }
    Err(zk::Error::NoNode)
}

// ---------------------------------------------------------------------------
// Client memory

/// This process's resident set (`VmRSS` of /proc/self/status), in KiB.
fn vm_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The memory rows' extra fields: resident set before and after, and the
/// growth per handle or waiter in bytes.
fn memory_fields(base_kb: u64, rss_kb: u64, n: usize) -> Vec<(&'static str, Value)> {
    let each = (rss_kb.saturating_sub(base_kb) * 1024) as f64 / n.max(1) as f64;
    vec![
        ("rss_base_kb", base_kb.into()),
        ("rss_kb", rss_kb.into()),
        ("bytes_each", num(Some(each.round()))),
    ]
}

/// `memory_handles`: C idle locks on one session (one per path, as a
/// service keeps one per record), VmRSS before and after.
async fn memory_handles(b: &Arc<Bench>) -> Result<Outcome, Failure> {
    let clients = connect_all(b, 1).await?;
    let client = clients[0].clone();
    let paths: Vec<String> = (0..b.clients).map(|k| entity_path(b, k)).collect();
    let mut locks = Vec::with_capacity(b.clients);
    let base = vm_rss_kb().unwrap_or(0);
    let (cpu0, start) = (cpu_secs(), Instant::now());
    for path in &paths {
        locks.push(SharedLock::new(client.clone(), path)?);
    }
    let rss = vm_rss_kb().unwrap_or(0);
    let (secs, cpu_s) = (start.elapsed().as_secs_f64(), cpu_secs() - cpu0);
    drop(locks);
    drop(client);
    close_all(clients).await;
    Ok(Outcome {
        clients: b.clients,
        grants: 0,
        secs: Some(secs),
        lat_ms: Vec::new(),
        latency_kind: "none",
        extra: memory_fields(base, rss, b.clients),
        wakes: None,
        cpu_s,
    })
}

/// `memory_waiters`: a holder and C waiting write acquires through one
/// lock of one session; VmRSS before the waiters and once all are queued
/// (and have had time to set their watches); then the holder releases and
/// every waiter takes the lock and releases it.
async fn memory_waiters(b: &Arc<Bench>) -> Result<Outcome, Failure> {
    let clients = connect_all(b, 1).await?;
    let client = clients[0].clone();
    warmup(b, &client).await?;
    let lock = SharedLock::new(client.clone(), &b.path)?;
    b.wakes.track(&lock);
    let held = lock.write().await?;
    let granted = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(b.clients);
    b.wakes.reset();
    let base = vm_rss_kb().unwrap_or(0);
    let (cpu0, start) = (cpu_secs(), Instant::now());
    for _ in 0..b.clients {
        let (lock, granted) = (lock.clone(), granted.clone());
        tasks.push(tokio::spawn(async move {
            let guard = lock.write().await?;
            granted.fetch_add(1, Ordering::Relaxed);
            guard.release().await?;
            Ok::<(), zk_rwlock::Error>(())
        }));
    }
    let until = Instant::now() + ENQUEUE_LIMIT + b.max;
    loop {
        match client.list_children(&b.path).await {
            Ok(children) if children.len() > b.clients => break,
            Ok(_) => {}
            Err(e) => return Err(common::zk_failure(e, &b.path)),
        }
        if Instant::now() > until {
            return Err(Failure::new(
                exit::SOFTWARE,
                "the waiters did not all enqueue in time",
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let queued = start.elapsed().as_secs_f64();
    // Let the last waiters finish setting their watches.
    tokio::time::sleep(HERD_PAUSE).await;
    let rss = vm_rss_kb().unwrap_or(0);
    let released = Instant::now();
    if let Err(e) = held.release().await {
        b.errors.record(&e);
    }
    for task in tasks {
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => b.errors.record(&e),
            Err(e) => b.errors.record(&format!("waiter task failed: {e}")),
        }
    }
    let (secs, cpu_s) = (released.elapsed().as_secs_f64(), cpu_secs() - cpu0);
    let wakes = b.wakes.get();
    b.wakes.clear();
    drop(lock);
    drop(client);
    close_all(clients).await;
    let mut extra = memory_fields(base, rss, b.clients);
    extra.push(("enqueue_secs", num(Some(queued))));
    Ok(Outcome {
        clients: b.clients,
        grants: granted.load(Ordering::Relaxed),
        secs: Some(secs),
        lat_ms: Vec::new(),
        latency_kind: "none",
        extra,
        wakes: Some(wakes),
        cpu_s,
    })
}

// ---------------------------------------------------------------------------
// Sessions

/// Connects `n` sessions (in batches, concurrently), in order.
async fn connect_all(b: &Bench, n: usize) -> Result<Vec<zk::Client>, Failure> {
    let mut clients = Vec::with_capacity(n);
    while clients.len() < n {
        let batch = (n - clients.len()).min(CONNECT_BATCH);
        let connecting: Vec<_> = (0..batch)
            .map(|_| {
                let (servers, options) = (b.servers.clone(), b.connect.clone());
                tokio::spawn(async move { b_connect(&servers, &options).await })
            })
            .collect();
        for task in connecting {
            let client = task
                .await
                .map_err(|e| Failure::new(exit::SOFTWARE, format!("connecting failed: {e}")))??;
            clients.push(client);
        }
    }
    Ok(clients)
}

/// Connects one session with the run's options.
async fn b_connect(servers: &str, options: &zk_rwlock::ConnectOptions) -> Result<zk::Client, Failure> {
    zk_rwlock::connect_client_with(servers, options)
        .await
        .map_err(Failure::from)
}

/// Closes sessions (every other clone of the clients must be gone) and
/// waits a little for the server to confirm, so their nodes are gone.
async fn close_all(clients: Vec<zk::Client>) {
    let states: Vec<_> = clients.iter().map(|c| c.state_watcher()).collect();
    drop(clients);
    let ends: Vec<_> = states
        .into_iter()
        .map(|s| tokio::spawn(common::await_session_end(s, Duration::from_secs(5))))
        .collect();
    for end in ends {
        let _ = end.await;
    }
}

/// Removes the lock directories this run named itself (best effort).
async fn remove_dirs(b: &Bench) {
    let Ok(client) = b_connect(&b.servers, &b.connect).await else {
        return;
    };
    // The entity workloads' directories (containers the server would
    // remove later), then the run's own.
    if let Ok(children) = client.list_children(&b.path).await {
        for child in children {
            let _ = client.delete(&format!("{}/{child}", b.path), None).await;
        }
    }
    for dir in [b.warmup_path(), b.path.clone()] {
        let _ = client.delete(&dir, None).await;
    }
    // The shared parent, if this was the last run using it.
    if let Some((parent, _)) = b.path.rsplit_once('/') {
        if !parent.is_empty() {
            let _ = client.delete(parent, None).await;
        }
    }
    close_all(vec![client]).await;
}

// ---------------------------------------------------------------------------
// Safety counter, errors, wake-up counting

/// The process-wide (readers, writers) count of the peers' safety check.
#[derive(Default)]
struct Holders {
    state: Mutex<HolderState>,
}

#[derive(Default)]
struct HolderState {
    readers: i64,
    writers: i64,
    violations: u64,
}

impl Holders {
    /// Right after an acquire returned.
    fn acquired(&self, kind: Kind) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match kind {
            Kind::Read => {
                s.readers += 1;
                if s.writers > 0 {
                    s.violations += 1;
                }
            }
            Kind::Write => {
                s.writers += 1;
                if s.writers > 1 || s.readers > 0 {
                    s.violations += 1;
                }
            }
        }
    }

    /// Right before a release.
    fn releasing(&self, kind: Kind) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match kind {
            Kind::Read => s.readers -= 1,
            Kind::Write => s.writers -= 1,
        }
    }

    fn violations(&self) -> u64 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).violations
    }

    /// Adds violations counted elsewhere (per entity).
    fn add_violations(&self, n: u64) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).violations += n;
    }
}

/// Errors of lock or client calls during the run.
#[derive(Default)]
struct Errors {
    count: AtomicU64,
    first: OnceLock<String>,
}

impl Errors {
    fn record(&self, e: &dyn std::fmt::Display) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let text = e.to_string();
        eprintln!("error: {text}");
        let _ = self.first.set(text);
    }
}

/// Wake-ups of waiting acquires, from the stats of every lock of the run
/// ([`SharedLock::stats`]), counted from the last reset.
#[derive(Default)]
struct WakeCounters {
    locks: Mutex<Vec<SharedLock>>,
    base: Mutex<Option<Wakes>>,
}

impl WakeCounters {
    /// Counts the acquires of `lock` from now on (and those it made before
    /// the next reset).
    fn track(&self, lock: &SharedLock) {
        self.locks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(lock.clone());
    }

    fn total(&self) -> Wakes {
        let locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.iter().map(SharedLock::stats).fold(
            Wakes {
                wakeups: 0,
                spurious: 0,
                relisted: 0,
            },
            |sum, stats| Wakes {
                wakeups: sum.wakeups + stats.wakeups,
                spurious: sum.spurious + stats.spurious_wakeups,
                relisted: sum.relisted + stats.relisted_grants,
            },
        )
    }

    /// Lets go of the tracked locks (and so of their sessions), keeping
    /// nothing to count: call it once the counts are taken.
    fn clear(&self) {
        self.locks.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    fn reset(&self) {
        let total = self.total();
        *self.base.lock().unwrap_or_else(|p| p.into_inner()) = Some(total);
    }

    fn get(&self) -> Wakes {
        let total = self.total();
        match *self.base.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(base) => Wakes {
                wakeups: total.wakeups - base.wakeups,
                spurious: total.spurious - base.spurious,
                relisted: total.relisted - base.relisted,
            },
            None => total,
        }
    }
}

/// A snapshot of [`WakeCounters`].
#[derive(Debug, Clone, Copy, Default)]
struct Wakes {
    wakeups: u64,
    spurious: u64,
    relisted: u64,
}

// ---------------------------------------------------------------------------
// Small helpers

/// SplitMix64: a small seeded generator for the mixed workload's coin.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n) (n >= 1).
    fn below(&mut self, n: usize) -> usize {
        ((self.next_f64() * n as f64) as usize).min(n.saturating_sub(1))
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Nearest-rank percentile of sorted values: `sorted[ceil(q*n)-1]`.
fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// A JSON number rounded to 4 decimals (as the peers print), or null.
fn num(v: Option<f64>) -> Value {
    match v {
        Some(v) if v.is_finite() => Value::from((v * 1e4).round() / 1e4),
        _ => Value::Null,
    }
}

fn rusage() -> Option<libc::rusage> {
    // SAFETY: `rusage` is plain data (all-zero is valid); getrusage only
    // writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    (rc == 0).then_some(usage)
}

/// User + system CPU time of this process so far, in seconds.
fn cpu_secs() -> f64 {
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    rusage().map_or(0.0, |u| tv(u.ru_utime) + tv(u.ru_stime))
}

/// Peak resident set size of this process, in KiB.
fn max_rss_kb() -> Option<libc::c_long> {
    rusage().map(|u| u.ru_maxrss)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), Some(50.0));
        assert_eq!(percentile(&v, 0.99), Some(99.0));
        assert_eq!(percentile(&[3.0], 0.99), Some(3.0));
        assert_eq!(percentile(&[1.0, 2.0], 0.5), Some(1.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn coin_is_seeded_and_fair() {
        let mut a = SplitMix64(42_000);
        let mut b = SplitMix64(42_000);
        let draws: Vec<f64> = (0..10_000).map(|_| a.next_f64()).collect();
        assert!(draws
            .iter()
            .all(|&x| x == b.next_f64() && (0.0..1.0).contains(&x)));
        let reads = draws.iter().filter(|&&x| x < 0.9).count();
        assert!((8800..9200).contains(&reads), "{reads}");
    }

    #[test]
    fn numbers() {
        assert_eq!(num(Some(1.234_567)), Value::from(1.2346));
        assert_eq!(num(Some(f64::NAN)), Value::Null);
        assert_eq!(num(None), Value::Null);
    }
}
