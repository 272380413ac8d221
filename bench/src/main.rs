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
//! Wake-ups are the library's own counts
//! ([`SharedLock::stats`](zk_rwlock::SharedLock::stats), and
//! [`Semaphore::stats`](zk_rwlock::Semaphore::stats) for `semaphore`),
//! summed over every lock of the run.

mod entities;
mod floors;
mod memory;
mod output;
mod semaphore;
mod sessions;
mod stats;
mod tally;
mod workloads;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Parser, ValueEnum};
use zk_rwlock::Mode;

use crate::entities::entities;
use crate::floors::{contended_floor, floor_cycle, floor_handoff};
use crate::memory::{memory_handles, memory_waiters};
use crate::output::Outcome;
use crate::semaphore::semaphore_loop;
use crate::sessions::remove_dirs;
use crate::tally::{Errors, Holders, WakeCounters};
use crate::workloads::{contended, herd, uncontended};
use zk_rwlock_cli::{common, connection, exit, Failure};

/// Session timeout of every benchmark client (the peers' value: the server
/// maximum with `tickTime=200`).
const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
/// How long connecting one session may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Sessions connected at once before the clock starts.
pub(crate) const CONNECT_BATCH: usize = 64;
/// How long the herd's holder waits after the last waiter is queued.
pub(crate) const HERD_PAUSE: Duration = Duration::from_millis(300);
/// How long one herd waiter may take to appear in the queue.
pub(crate) const ENQUEUE_LIMIT: Duration = Duration::from_secs(10);

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
  semaphore           C clients (default 16, G=2000) loop on one counting
                      semaphore of --permits N (default 4): acquire, hold
                      --hold-ms, release; the G-th grant stops the run, as
                      in contended_write. violations = grants that made the
                      holders (counted right after acquire, right before
                      release) more than N; max_holders = the most at once.
                      --warmup cycles use a semaphore of the same N.
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
                      grants = cycles; latency = create+list. No hand-off:
                      the floor of contended_write is contended_floor
  floor_create_delete the same, each cycle (create ephemeral-sequential;
                      delete), sequential; latency = create
  floor_handoff       client A deletes a node that client B watches with a data
                      watch, G rounds (default 500), one step after the
                      other; latency = A's delete call -> B's notification
  contended_floor     the floor of contended_write with 2 clients, no lock
                      logic: 2 sessions hand a grant back and forth with
                      ephemeral-sequential nodes in PATH. The holder
                      releases by deleting its node; the other, which had a
                      data watch on it, is notified and holds. At its
                      release a party sends in one pipelined batch the
                      create of its next node, a data watch on the other's
                      node (named in-process, no listing) and the delete of
                      its node; answered in order, the watch is set before
                      the delete grants the other, so every grant comes by
                      a notification. Per grant one create, one watch, one
                      delete; grant to grant only that batch's commit and
                      the notification. G grants (default 2000), --hold-ms
                      as contended_write; latency = the holder's release
                      (batch sent) -> the other's grant
  entity_locks        per-entity locks: ONE session shared by C workers
                      (default 64, G=4000); each grant takes the write lock of
                      PATH/e<k>, k uniform in --entities (default 1024; worker
                      i seeded seed*1000+i); directories are made on first
                      use, inside the timed run; violations = grants while
                      another worker held the same entity
  entity_floor        its floor, no lock logic: the same session, workers and
                      entity choice; each grant is what an uncontended
                      lock grant needs: one create (ephemeral-sequential)
                      in PATH/e<k> and a listing (getChildren) of PATH/e<k>,
                      pipelined as the lock sends them (making the
                      directory on first use), then the delete;
                      latency = create+list
  memory_handles      client memory: C (default 10000) idle locks (PATH/e<i>)
                      on one session; bytes_each = VmRSS growth / C
  memory_waiters      C (default 1000) write acquires through one lock of one
                      session queued behind a holder of the same session;
                      bytes_each = VmRSS growth / C once all are queued; then
                      the holder releases and every waiter takes the lock

Every client is its own ZooKeeper session (timeout 4 s), opened before the
clock starts. --warmup N: N uncounted write acquire/release cycles (floors:
N uncounted cycles, contended_floor and floor_handoff: hand-offs between
their 2 clients; semaphore: permit cycles) by client 0 on PATH-warmup
before measuring. Latency is
measured with a monotonic clock right before acquire to right after it
returns; percentiles come from an HDR histogram (3 significant digits:
within 0.1% of nearest-rank, sorted[ceil(q*n)-1]).

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
  entities, sessions (1), entity_violations; semaphore: permits,
  max_holders; memory_*: rss_base_kb, rss_kb, bytes_each.
  violations: a process-wide (readers, writers) count is updated right after
  each acquire and right before each release; a writer granted while anyone
  holds, or a reader granted while a writer holds, is a violation
  (semaphore: a grant that makes more than N holders).

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
    /// contended 8, mixed 16, semaphore 16, herd 64, entity 64,
    /// memory_handles 10000, memory_waiters 1000; floor_handoff and
    /// contended_floor always 2]
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

    /// Hold each grant this long in contended_*, mixed_*, semaphore and
    /// entity_* (milliseconds)
    #[arg(long, value_name = "MS", default_value_t = 0.0)]
    hold_ms: f64,

    /// entity_*: how many lock paths (PATH/e<k>) the workers pick from
    #[arg(long, value_name = "E", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    entities: u64,

    /// semaphore: how many may hold at once
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    permits: u32,

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
    #[value(name = "semaphore")]
    Semaphore,
    #[value(name = "herd_release")]
    HerdRelease,
    #[value(name = "floor_cycle")]
    FloorCycle,
    #[value(name = "floor_create_delete")]
    FloorCreateDelete,
    #[value(name = "floor_handoff")]
    FloorHandoff,
    #[value(name = "contended_floor")]
    ContendedFloor,
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
    /// The name on the command line and in the output (clap's).
    fn name(self) -> String {
        self.to_possible_value()
            .expect("every workload has a name")
            .get_name()
            .to_owned()
    }

    fn default_clients(self) -> usize {
        match self {
            Workload::ContendedWrite | Workload::ContendedMutex => 8,
            Workload::ContendedFloor => 2,
            Workload::Mixed90r10w | Workload::Semaphore => 16,
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
                | Workload::ContendedFloor
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
pub(crate) struct Bench {
    pub(crate) servers: String,
    pub(crate) workload: Workload,
    pub(crate) clients: usize,
    pub(crate) grants: u64,
    pub(crate) max: Duration,
    pub(crate) path: String,
    /// The path was chosen here: remove the directories afterwards.
    pub(crate) own_path: bool,
    pub(crate) warmup: u64,
    pub(crate) seed: u64,
    pub(crate) hold: Duration,
    pub(crate) hold_ms: f64,
    pub(crate) entities: usize,
    /// `semaphore`: its permits (`--permits`).
    pub(crate) permits: u32,
    pub(crate) impl_name: String,
    pub(crate) threads: usize,
    pub(crate) holders: Holders,
    pub(crate) errors: Errors,
    pub(crate) wakes: Arc<WakeCounters>,
    /// How sessions connect (--auth, --tls-*).
    pub(crate) connect: zk_rwlock::ConnectOptions,
    /// The ACLs of the lock workloads' nodes (--acl, --dir-acl).
    pub(crate) acls: connection::AclArg,
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
            Workload::FloorHandoff | Workload::ContendedFloor => 2,
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
            servers: connection::connect_string(args.zk),
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
            permits: args.permits,
            impl_name: args.impl_name,
            threads: usize::try_from(args.threads).unwrap_or(1),
            holders: Holders::default(),
            errors: Errors::default(),
            wakes: Arc::new(WakeCounters::default()),
        })
    }

    pub(crate) fn warmup_path(&self) -> String {
        format!("{}-warmup", self.path)
    }
}

async fn measure(b: Arc<Bench>) -> Result<Outcome, Failure> {
    zk_rwlock::validate_path(&b.path)?;
    let outcome = match b.workload {
        Workload::UncontendedWrite | Workload::UncontendedMutex => uncontended(&b, Mode::Write).await,
        Workload::UncontendedRead => uncontended(&b, Mode::Read).await,
        Workload::ContendedWrite | Workload::ContendedMutex => contended(&b, Some(Mode::Write)).await,
        Workload::Mixed90r10w => contended(&b, None).await,
        Workload::Semaphore => semaphore_loop(&b).await,
        Workload::HerdRelease => herd(&b).await,
        Workload::FloorCycle => floor_cycle(&b, true).await,
        Workload::FloorCreateDelete => floor_cycle(&b, false).await,
        Workload::FloorHandoff => floor_handoff(&b).await,
        Workload::ContendedFloor => contended_floor(&b).await,
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
