//! `semaphore`: C clients, each its own session, loop on one counting
//! semaphore of `--permits` N (acquire, hold, release) until the G-th
//! grant, as the contended loops do on a lock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use zk_rwlock::{zk, Permit, Semaphore};

use crate::output::{Extra, LoopFields, Outcome, SemaphoreFields};
use crate::sessions::{close_all, connect_all};
use crate::stats::{cpu_secs, ms};
use crate::workloads::{join_until_max, Shared};
use crate::Bench;
use zk_rwlock_cli::Failure;

/// A semaphore of the run's permits on `path`, through `client`.
fn semaphore(b: &Bench, client: &zk::Client, path: &str) -> Result<Semaphore, Failure> {
    Ok(b.acls
        .apply_semaphore(Semaphore::builder(client.clone(), path, b.permits))
        .build()?)
}

/// `--warmup` uncounted acquire/release cycles by `client` on a semaphore
/// of the same permits on PATH-warmup.
async fn warmup(b: &Bench, client: &zk::Client) -> Result<(), Failure> {
    if b.warmup == 0 {
        return Ok(());
    }
    let sem = semaphore(b, client, &b.warmup_path())?;
    for _ in 0..b.warmup {
        sem.acquire().await?.release().await?;
    }
    Ok(())
}

/// `semaphore`: C clients loop acquire / hold (`--hold-ms`) / release on
/// one semaphore of N permits; the G-th grant stops the run. The holders
/// are counted right after each acquire and right before each release: a
/// grant that makes them more than N is a violation.
pub(crate) async fn semaphore_loop(b: &Arc<Bench>) -> Result<Outcome, Failure> {
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
    for client in &clients {
        let sem = semaphore(b, client, &b.path)?;
        b.wakes.track_semaphore(&sem);
        let (b, shared) = (b.clone(), shared.clone());
        tasks.push(tokio::spawn(client_loop(b, shared, sem)));
    }
    b.wakes.reset();
    let cpu0 = cpu_secs();
    let start = Instant::now();
    let _ = shared.start.set(start);
    shared.barrier.wait().await;
    let (lat, stuck): (Vec<f64>, bool) = join_until_max(b, start, tasks, "client").await;
    let cpu_s = cpu_secs() - cpu0;
    let (end, wakes) = match shared.target.get() {
        Some(&(at, wakes)) => (at, wakes),
        None => (start + b.max, b.wakes.get()),
    };
    close_all(b, clients).await;
    let extra = Extra::Semaphore(SemaphoreFields {
        lp: LoopFields {
            reached_target: shared.target.get().is_some(),
            hold_ms: (b.hold_ms > 0.0).then_some(b.hold_ms),
            acquire_timeouts: shared.timeouts.load(Ordering::Relaxed),
            stuck_threads: stuck,
            mixed: None,
        },
        permits: b.permits,
        max_holders: b.holders.max_permit_holders(),
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

/// One client of the semaphore loop: its counted grants' latencies.
async fn client_loop(b: Arc<Bench>, shared: Arc<Shared>, sem: Semaphore) -> Vec<f64> {
    let mut samples = Vec::new();
    shared.barrier.wait().await;
    let Some(&start) = shared.start.get() else {
        return samples;
    };
    let deadline = start + b.max;
    while !shared.stop.load(Ordering::Acquire) {
        let t0 = Instant::now();
        let left = deadline.saturating_duration_since(t0);
        if left.is_zero() {
            break;
        }
        let permit: Permit = match sem.acquire_timeout(left).await {
            Ok(Some(permit)) => permit,
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
        b.holders.permit_acquired(b.permits);
        let g = shared.granted.fetch_add(1, Ordering::AcqRel) + 1;
        if g <= b.grants && t1 <= deadline {
            samples.push(ms(t1 - t0));
            if g == b.grants {
                let _ = shared.target.set((t1, b.wakes.get()));
                shared.stop.store(true, Ordering::Release);
            }
        }
        if !b.hold.is_zero() {
            // A thread that sleeps, as in the contended loops.
            let hold: Duration = b.hold;
            tokio::task::block_in_place(|| std::thread::sleep(hold));
        }
        b.holders.permit_releasing();
        if let Err(e) = permit.release().await {
            b.errors.record(&e);
            break;
        }
    }
    samples
}
