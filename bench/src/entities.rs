//! Per-entity locks on one session: `entity_locks` and its floor.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use zk_rwlock::{zk, Guard, Mode, SharedLock};
use zk_rwlock_testkit::SplitMix64;

use crate::floors::{dir_options, floor_one, node_options};
use crate::output::{EntityFields, Extra, Outcome};
use crate::sessions::{close_all, connect_all};
use crate::stats::{cpu_secs, ms};
use crate::workloads::{acquire, join_until_max, warmup, Shared};
use crate::Bench;
use zk_rwlock_cli::{failure, Failure};

/// What an entity worker holds: a lock's guard, or (floor) its own node.
enum EntityHold {
    Guard(Guard),
    Node(String),
}

/// `entity_locks` (`floor` false) and `entity_floor`: one session, C workers,
/// each grant on `PATH/e<k>`, k uniform in `b.entities`. The floor's grant
/// is what an uncontended lock grant needs at least: one create
/// (ephemeral-sequential, in `PATH/e<k>`) pipelined with a listing of
/// `PATH/e<k>` (as the lock sends them), then, at the release, the delete.
pub(crate) async fn entities(b: &Arc<Bench>, floor: bool) -> Result<Outcome, Failure> {
    let clients = connect_all(b, 1).await?;
    let client = clients[0].clone();
    if floor {
        // As the lock's warm-up: its directory and parents, not PATH itself.
        let warmup_dir = b.warmup_path();
        client
            .mkdir(&warmup_dir, &dir_options())
            .await
            .map_err(|e| failure::zk_failure(e, &warmup_dir))?;
        for _ in 0..b.warmup {
            floor_one(&client, &warmup_dir, true)
                .await
                .map_err(|e| failure::zk_failure(e, &warmup_dir))?;
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
    drop(locks);
    drop(client);
    close_all(b, clients).await;
    let violations = board.violations.load(Ordering::Relaxed);
    b.holders.add_violations(violations);
    let extra = Extra::Entity(EntityFields {
        entities: b.entities,
        sessions: 1,
        entity_violations: violations,
        reached_target: shared.target.get().is_some(),
        acquire_timeouts: shared.timeouts.load(Ordering::Relaxed),
        hold_ms: (b.hold_ms > 0.0).then_some(b.hold_ms),
        stuck_threads: stuck,
    });
    Ok(Outcome {
        clients: b.clients,
        grants: lat.len() as u64,
        secs: Some((end - start).as_secs_f64()),
        lat_ms: lat,
        latency_kind: if floor { "create_list" } else { "acquire" },
        extra: Some(extra),
        wakes: (!floor).then_some(wakes),
        cpu_s,
    })
}

/// `PATH/e<k>`.
pub(crate) fn entity_path(b: &Bench, k: usize) -> String {
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
        let mut rng = SplitMix64::new(b.seed.wrapping_mul(1000).wrapping_add(i));
        let mut lat = Vec::new();
        shared.barrier.wait().await;
        let Some(&start) = shared.start.get() else {
            return lat;
        };
        let deadline = start + b.max;
        while !shared.stop.load(Ordering::Acquire) {
            let k = rng.index(b.entities);
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
    /// in the entity's directory, and a listing of it); `Ok(None)` if
    /// `left` passed first.
    async fn take(&self, k: usize, left: Duration) -> Result<Option<EntityHold>, String> {
        match self.locks.get(k) {
            Some(lock) => match acquire(lock, Mode::Write, Some(left)).await {
                Ok(guard) => Ok(guard.map(EntityHold::Guard)),
                Err(e) => Err(e.to_string()),
            },
            None => floor_entity_create_list(&self.client, &entity_path(&self.b, k))
                .await
                .map(|node| Some(EntityHold::Node(node)))
                .map_err(|e| e.to_string()),
        }
    }
}

/// The floor's grant: one ephemeral-sequential node in `dir` and a listing
/// of `dir` (getChildren with its stat, as the lock lists), sent together
/// (pipelined: the session's requests are answered in order, so the
/// listing holds the new node); where `dir` is missing, it is made first as
/// the lock makes it (a container, its parent persistent), then both are
/// sent again. Returns the new node's path.
async fn floor_entity_create_list(client: &zk::Client, dir: &str) -> Result<String, zk::Error> {
    let prefix = format!("{dir}/floor-W-");
    let options = node_options();
    let container = zk::CreateMode::Container.with_acls(zk::Acls::anyone_all());
    for _ in 0..10 {
        let created = client.create(&prefix, &[], &options);
        let listed = client.get_children(dir);
        match created.await {
            Ok((_, seq)) => {
                listed.await?;
                return Ok(format!("{prefix}{:010}", seq.into_i64() as i32));
            }
            Err(zk::Error::NoNode) => {
                // The listing failed as well (no directory): make it.
                let _ = listed.await;
                match client.create(dir, &[], &container).await {
                    Ok(_) | Err(zk::Error::NodeExists) => {}
                    Err(zk::Error::NoNode) => {
                        if let Some((parent, _)) = dir.rsplit_once('/') {
                            client.mkdir(parent, &dir_options()).await?;
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(zk::Error::NoNode)
}
