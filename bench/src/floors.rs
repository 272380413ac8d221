//! The floors: plain client calls, no lock logic.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_rwlock::zk;

use crate::output::Outcome;
use crate::sessions::{close_all, connect_all};
use crate::stats::{cpu_secs, ms};
use crate::Bench;
use zk_rwlock_cli::{failure, Failure};

pub(crate) fn dir_options() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

pub(crate) fn node_options() -> zk::CreateOptions<'static> {
    zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all())
}

/// One floor cycle on `dir`: create an ephemeral-sequential node (pipelined
/// with a listing of `dir` if `list`), then delete it. Returns the time to
/// the create's (and listing's) answer.
pub(crate) async fn floor_one(client: &zk::Client, dir: &str, list: bool) -> Result<Duration, zk::Error> {
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
            .map_err(|e| failure::zk_failure(e, dir))?;
    }
    for _ in 0..b.warmup {
        warmup_round()
            .await
            .map_err(|e| failure::zk_failure(e, warmup_dir))?;
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
pub(crate) async fn floor_cycle(b: &Arc<Bench>, list: bool) -> Result<Outcome, Failure> {
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
        extra: None,
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
pub(crate) async fn floor_handoff(b: &Bench) -> Result<Outcome, Failure> {
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
        extra: None,
        wakes: None,
        cpu_s,
    })
}
