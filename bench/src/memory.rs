//! Client memory: idle lock handles and queued waiters on one session.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_rwlock::SharedLock;

use crate::entities::entity_path;
use crate::output::{Extra, MemoryFields, Outcome};
use crate::sessions::{close_all, connect_all};
use crate::stats::{cpu_secs, num};
use crate::workloads::warmup;
use crate::{Bench, ENQUEUE_LIMIT, HERD_PAUSE};
use zk_rwlock_cli::{exit, failure, Failure};

/// This process's resident set (`VmRSS` of /proc/self/status), in KiB.
fn vm_rss_kb() -> Option<u64> {
    zk_rwlock_testkit::rss_kb("self")
}

/// `memory_handles`: C idle locks on one session (one per path, as a
/// service keeps one per record), VmRSS before and after.
pub(crate) async fn memory_handles(b: &Arc<Bench>) -> Result<Outcome, Failure> {
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
    close_all(b, clients).await;
    Ok(Outcome {
        clients: b.clients,
        grants: 0,
        secs: Some(secs),
        lat_ms: Vec::new(),
        latency_kind: "none",
        extra: Some(Extra::Memory(MemoryFields::new(base, rss, b.clients))),
        wakes: None,
        cpu_s,
    })
}

/// `memory_waiters`: a holder and C waiting write acquires through one
/// lock of one session; VmRSS before the waiters and once all are queued
/// (and have had time to set their watches); then the holder releases and
/// every waiter takes the lock and releases it.
pub(crate) async fn memory_waiters(b: &Arc<Bench>) -> Result<Outcome, Failure> {
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
            Err(e) => return Err(failure::zk_failure(e, &b.path)),
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
    drop(lock);
    drop(client);
    close_all(b, clients).await;
    let extra = MemoryFields {
        enqueue_secs: num(Some(queued)),
        ..MemoryFields::new(base, rss, b.clients)
    };
    Ok(Outcome {
        clients: b.clients,
        grants: granted.load(Ordering::Relaxed),
        secs: Some(secs),
        lat_ms: Vec::new(),
        latency_kind: "none",
        extra: Some(Extra::Memory(extra)),
        wakes: Some(wakes),
        cpu_s,
    })
}
