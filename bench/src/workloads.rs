//! The lock workloads: uncontended, contended and mixed loops, the herd,
//! and what the other workloads share with them.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use zk_rwlock::{zk, Guard, Mode, SharedLock};
use zk_rwlock_testkit::SplitMix64;

use crate::output::{Extra, HerdFields, LoopFields, MixedFields, Outcome};
use crate::sessions::{close_all, connect_all};
use crate::stats::{cpu_secs, in_ms, latencies, ms, num};
use crate::tally::Wakes;
use crate::{Bench, ENQUEUE_LIMIT, HERD_PAUSE};
use zk_rwlock_cli::{exit, failure, Failure};

/// Acquires `mode`, waiting at most `timeout` (forever if `None`). The
/// `*_mutex` workloads use the write lock: there is no separate exclusive
/// lock.
pub(crate) async fn acquire(
    lock: &SharedLock,
    mode: Mode,
    timeout: Option<Duration>,
) -> Result<Option<Guard>, zk_rwlock::Error> {
    match timeout {
        None => lock.acquire(mode).await.map(Some),
        Some(t) => lock.acquire_timeout(mode, t).await,
    }
}

/// `--warmup` uncounted write cycles by `client` on PATH-warmup.
pub(crate) async fn warmup(b: &Bench, client: &zk::Client) -> Result<(), Failure> {
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
pub(crate) async fn uncontended(b: &Bench, mode: Mode) -> Result<Outcome, Failure> {
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
        let guard = match acquire(&lock, mode, None).await {
            Ok(Some(guard)) => guard,
            Ok(None) => break,
            Err(e) => {
                b.errors.record(&e);
                break;
            }
        };
        let t1 = Instant::now();
        b.holders.acquired(mode);
        lat.push(ms(t1 - t0));
        b.holders.releasing(mode);
        if let Err(e) = guard.release().await {
            b.errors.record(&e);
            break;
        }
    }
    let end = Instant::now();
    let cpu_s = cpu_secs() - cpu0;
    let wakes = b.wakes.get();
    drop(lock);
    close_all(b, clients).await;
    Ok(Outcome {
        clients: 1,
        grants: lat.len() as u64,
        secs: Some((end - start).as_secs_f64()),
        lat_ms: lat,
        latency_kind: "acquire",
        extra: None,
        wakes: Some(wakes),
        cpu_s,
    })
}

/// State shared by the clients of a contended or mixed loop.
pub(crate) struct Shared {
    pub(crate) stop: AtomicBool,
    pub(crate) granted: AtomicU64,
    pub(crate) timeouts: AtomicU64,
    pub(crate) barrier: tokio::sync::Barrier,
    pub(crate) start: OnceLock<Instant>,
    /// When the G-th grant came, and the wake-up counts then.
    pub(crate) target: OnceLock<(Instant, Wakes)>,
}

/// What one client of a loop measured: (latency in ms, mode) per counted grant.
type Samples = Vec<(f64, Mode)>;

/// `contended_*` (`fixed` = the mode every client asks for) and
/// `mixed_90r10w` (`fixed` = None: read with p=0.9 per op).
pub(crate) async fn contended(b: &Arc<Bench>, fixed: Option<Mode>) -> Result<Outcome, Failure> {
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
    close_all(b, clients).await;
    let lat: Vec<f64> = samples.iter().map(|(l, _)| *l).collect();
    let mixed = fixed.is_none().then(|| {
        let pick = |mode| -> Vec<f64> {
            samples
                .iter()
                .filter(|(_, m)| *m == mode)
                .map(|(l, _)| *l)
                .collect()
        };
        let (reads, writes) = (pick(Mode::Read), pick(Mode::Write));
        MixedFields {
            reads: reads.len(),
            writes: writes.len(),
            read_p99_ms: num(in_ms(latencies(&reads).at(99.0))),
            write_p99_ms: num(in_ms(latencies(&writes).at(99.0))),
        }
    });
    let extra = Extra::Loop(LoopFields {
        reached_target: shared.target.get().is_some(),
        hold_ms: (b.hold_ms > 0.0).then_some(b.hold_ms),
        acquire_timeouts: shared.timeouts.load(Ordering::Relaxed),
        stuck_threads: stuck,
        mixed,
    });
    Ok(Outcome {
        clients: b.clients,
        grants: lat.len() as u64,
        secs: Some((end - start).as_secs_f64()),
        lat_ms: lat,
        latency_kind: "acquire",
        extra: Some(extra),
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
    fixed: Option<Mode>,
) -> Samples {
    let mut rng = SplitMix64::new(b.seed.wrapping_mul(1000).wrapping_add(i));
    let mut samples = Samples::new();
    shared.barrier.wait().await;
    let Some(&start) = shared.start.get() else {
        return samples;
    };
    let deadline = start + b.max;
    while !shared.stop.load(Ordering::Acquire) {
        let mode = fixed.unwrap_or_else(|| {
            if rng.next_f64() < 0.9 {
                Mode::Read
            } else {
                Mode::Write
            }
        });
        let t0 = Instant::now();
        let left = deadline.saturating_duration_since(t0);
        if left.is_zero() {
            break;
        }
        let guard = match acquire(&lock, mode, Some(left)).await {
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
        b.holders.acquired(mode);
        let g = shared.granted.fetch_add(1, Ordering::AcqRel) + 1;
        if g <= b.grants && t1 <= deadline {
            samples.push((ms(t1 - t0), mode));
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
        b.holders.releasing(mode);
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
pub(crate) async fn herd(b: &Arc<Bench>) -> Result<Outcome, Failure> {
    let waiters = b.clients;
    let clients = connect_all(b, waiters + 1).await?;
    warmup(b, &clients[0]).await?;
    let holder = b
        .acls
        .apply(SharedLock::builder(clients[0].clone(), &b.path))
        .build()?;
    b.wakes.track(&holder);
    let held = holder.write().await?;
    b.holders.acquired(Mode::Write);
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
                Err(e) => return Err(failure::zk_failure(e, &b.path)),
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
    b.holders.releasing(Mode::Write);
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
    close_all(b, clients).await;
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
        extra: Some(Extra::Herd(HerdFields {
            fifo_order: fifo && n == waiters,
            all_granted: all_done && n == waiters,
            acquire_timeouts: log.timeouts.load(Ordering::Relaxed),
            enqueue_secs: num(Some(enqueue_secs)),
        })),
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
            b.holders.acquired(Mode::Write);
            let k = log.order.fetch_add(1, Ordering::AcqRel) + 1;
            if k < log.grant_at.len() {
                log.grant_at[k].store(log.nanos(granted_at), Ordering::Relaxed);
                log.grant_order[k].store(id, Ordering::Relaxed);
            }
            b.holders.releasing(Mode::Write);
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

/// Joins the loop tasks of a run, each returning its samples, until 30 s
/// past the run's longest time (`--max-secs`): a task still running then is
/// aborted, and reported as stuck. A task that failed is recorded as an
/// error (`what`: "client", "worker").
pub(crate) async fn join_until_max<T>(
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
