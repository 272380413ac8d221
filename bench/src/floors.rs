//! The floors: plain client calls, no lock logic.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::{watch, Barrier};
use zk_rwlock::{zk, Mode};

use crate::output::{Extra, LoopFields, Outcome};
use crate::sessions::{close_all, connect_all};
use crate::stats::{cpu_secs, ms};
use crate::workloads::join_until_max;
use crate::Bench;
use zk_rwlock_cli::{failure, Failure};

pub(crate) fn dir_options() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

pub(crate) fn node_options() -> zk::CreateOptions<'static> {
    zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all())
}

/// The path of the sequential node created with `prefix`.
pub(crate) fn node_path(prefix: &str, seq: zk::CreateSequence) -> String {
    format!("{prefix}{:010}", seq.into_i64() as i32)
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
    let node = node_path(&prefix, seq);
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
    close_all(b, clients).await;
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
    let prefix = format!("{dir}/floor-W-");
    let (_, seq) = a.create(&prefix, &[], &options).await?;
    let node = node_path(&prefix, seq);
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
    close_all(b, clients).await;
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

/// `contended_floor`: the floor of `contended_write` with 2 clients, what two
/// writers alternating a lock must at least pay on ZooKeeper per grant, with
/// no lock logic: two sessions hand a grant back and forth with
/// ephemeral-sequential nodes in `PATH`. The holder releases by deleting
/// its node; the other party, which had a data watch on that node, is
/// notified and is then the holder. At its release (hold 0: as soon as it
/// is granted) a party sends, pipelined on its session: the create of its
/// next node (its place behind the other), a data watch on the other's
/// node (named in-process, no listing), and the delete of its node. The
/// session answers them in order, so the watch is set before the delete
/// can grant the other party, and so before that party can release: every
/// grant comes by a notification. Per grant: one create, one watch, one
/// delete; from grant to grant: that batch's commit and the delete's
/// notification. The `--warmup` rounds are the same hand-offs on
/// PATH-warmup. Latencies are hand-offs: the holder's release (its batch
/// sent) -> the other's grant.
pub(crate) async fn contended_floor(b: &Arc<Bench>) -> Result<Outcome, Failure> {
    let clients = connect_all(b, 2).await?;
    let warmup_dir = b.warmup_path();
    for dir in [b.path.as_str(), warmup_dir.as_str()] {
        clients[0]
            .mkdir(dir, &dir_options())
            .await
            .map_err(|e| failure::zk_failure(e, dir))?;
    }
    if b.warmup > 0 {
        alternate(b, &clients, &warmup_dir, b.warmup).await?;
    }
    let run = alternate(b, &clients, &b.path, b.grants).await?;
    close_all(b, clients).await;
    Ok(Outcome {
        clients: 2,
        grants: run.lat.len() as u64,
        secs: Some(run.secs),
        lat_ms: run.lat,
        latency_kind: "handoff",
        extra: Some(Extra::Loop(LoopFields {
            reached_target: run.reached_target,
            hold_ms: (b.hold_ms > 0.0).then_some(b.hold_ms),
            acquire_timeouts: 0,
            stuck_threads: run.stuck,
            mixed: None,
        })),
        wakes: None,
        cpu_s: run.cpu_s,
    })
}

/// What one [`alternate`] run measured.
struct Alternated {
    /// Hand-off latencies (ms) of the counted grants.
    lat: Vec<f64>,
    /// Start -> the `grants`-th grant, or the longest run (`--max-secs`).
    secs: f64,
    reached_target: bool,
    stuck: bool,
    /// `window_cpu_s`.
    cpu_s: f64,
}

/// What one party of a hand-off tells the other, in this order: the node
/// it queued with, its release, its next node, its next release, ...
enum Turn {
    /// Its newest node: the node the other party watches at its release.
    Queued(String),
    /// It released (sent its release batch) at this instant.
    Released(Instant),
}

/// What both parties of an [`alternate`] run share.
struct Relay {
    /// The grants to count.
    grants: u64,
    granted: AtomicU64,
    barrier: Barrier,
    start: OnceLock<Instant>,
    /// When the `grants`-th grant came.
    target: OnceLock<Instant>,
    /// Set when the run ends (target reached, deadline, failure): both
    /// parties then stop, waiting or not.
    stop: watch::Sender<bool>,
}

impl Relay {
    fn stop(&self) {
        self.stop.send_replace(true);
    }

    fn stopped(&self) -> bool {
        *self.stop.borrow()
    }
}

/// Two parties (`clients[0]`, `clients[1]`) hand a grant back and forth on
/// `dir` until `grants` hand-offs, the deadline (`--max-secs`) or a
/// failure. Before the clock party 0 holds, and party 1 is queued behind
/// it with its watch set.
async fn alternate(
    b: &Arc<Bench>,
    clients: &[zk::Client],
    dir: &str,
    grants: u64,
) -> Result<Alternated, Failure> {
    let prefix = format!("{dir}/floor-W-");
    let options = node_options();
    let failed = |e| failure::zk_failure(e, dir);
    let (_, seq) = clients[0].create(&prefix, &[], &options).await.map_err(failed)?;
    let first = node_path(&prefix, seq);
    let (_, seq) = clients[1].create(&prefix, &[], &options).await.map_err(failed)?;
    let second = node_path(&prefix, seq);
    let (_, _, watcher) = clients[1].get_and_watch_data(&first).await.map_err(failed)?;
    b.holders.acquired(Mode::Write);
    let relay = Arc::new(Relay {
        grants,
        granted: AtomicU64::new(0),
        barrier: Barrier::new(3),
        start: OnceLock::new(),
        target: OnceLock::new(),
        stop: watch::Sender::new(false),
    });
    let (to_second, from_first) = unbounded_channel();
    let (to_first, from_second) = unbounded_channel();
    // Party 0 watches party 1's node at its first release.
    let _ = to_first.send(Turn::Queued(second.clone()));
    let party = |client: &zk::Client, tx, rx| Party {
        b: b.clone(),
        relay: relay.clone(),
        client: client.clone(),
        prefix: prefix.clone(),
        tx,
        rx,
    };
    let tasks = vec![
        tokio::spawn(party(&clients[0], to_second, from_second).run(first, None)),
        tokio::spawn(party(&clients[1], to_first, from_first).run(second, Some(watcher))),
    ];
    let cpu0 = cpu_secs();
    let start = Instant::now();
    let _ = relay.start.set(start);
    relay.barrier.wait().await;
    let (lat, stuck) = join_until_max(b, start, tasks, "party").await;
    let cpu_s = cpu_secs() - cpu0;
    let end = relay.target.get().copied();
    Ok(Alternated {
        lat,
        secs: (end.unwrap_or(start + b.max) - start).as_secs_f64(),
        reached_target: end.is_some(),
        stuck,
        cpu_s,
    })
}

/// One party of [`alternate`]: its session, and its line to the other.
struct Party {
    b: Arc<Bench>,
    relay: Arc<Relay>,
    client: zk::Client,
    /// `dir/floor-W-`.
    prefix: String,
    tx: UnboundedSender<Turn>,
    rx: UnboundedReceiver<Turn>,
}

impl Party {
    /// Holds `mine` (`watcher` None) or waits behind the other party's node
    /// (`watcher`: the watch set on it), then alternates until the run
    /// stops; returns the hand-off latencies (ms) of its counted grants.
    async fn run(mut self, mut mine: String, mut watcher: Option<zk::OneshotWatcher>) -> Vec<f64> {
        let mut lat = Vec::new();
        let mut stop = self.relay.stop.subscribe();
        self.relay.barrier.wait().await;
        let Some(&start) = self.relay.start.get() else {
            return lat;
        };
        let deadline = start + self.b.max;
        let holding = loop {
            if let Some(watcher) = watcher.take() {
                match self.wait(watcher, &mut stop, deadline).await {
                    Ok(true) => {}
                    Ok(false) => break false,
                    Err(e) => {
                        self.fail(&e);
                        break false;
                    }
                }
                if !self.granted(&mut lat, deadline).await {
                    break true;
                }
            }
            if !self.b.hold.is_zero() {
                // A thread that sleeps, as the lock workloads hold.
                let hold = self.b.hold;
                tokio::task::block_in_place(|| std::thread::sleep(hold));
            }
            match self.release(&mut mine).await {
                Ok(Some(next)) => watcher = Some(next),
                Ok(None) => break true,
                Err(e) => {
                    self.fail(&e);
                    break false;
                }
            }
        };
        // The run is over: let go of the node (uncounted; the other party
        // may be waiting on it).
        if holding {
            self.b.holders.releasing(Mode::Write);
        }
        let _ = self.client.delete(&mine, None).await;
        lat
    }

    /// Waits for the notification of the watched node's deletion: the
    /// grant (`Ok(true)`), unless the run stops first (`Ok(false)`).
    async fn wait(
        &self,
        watcher: zk::OneshotWatcher,
        stop: &mut watch::Receiver<bool>,
        deadline: Instant,
    ) -> Result<bool, String> {
        tokio::select! {
            event = watcher.changed() => match event.event_type {
                zk::EventType::NodeDeleted => Ok(true),
                other => Err(format!("hand-off: expected NodeDeleted, got {other:?}")),
            },
            _ = stop.wait_for(|stopped| *stopped) => Ok(false),
            _ = tokio::time::sleep_until(deadline.into()) => {
                self.relay.stop();
                Ok(false)
            }
        }
    }

    /// Counts a grant that came now; whether the run goes on (false: it
    /// stops, this party holding).
    async fn granted(&mut self, lat: &mut Vec<f64>, deadline: Instant) -> bool {
        let t1 = Instant::now();
        self.b.holders.acquired(Mode::Write);
        // The other's release, told before its batch was sent.
        let released = match self.rx.recv().await {
            Some(Turn::Released(t0)) => t0,
            other => {
                self.out_of_turn(other.is_some());
                return false;
            }
        };
        let relay = &self.relay;
        let g = relay.granted.fetch_add(1, Ordering::AcqRel) + 1;
        if g <= relay.grants && t1 <= deadline {
            lat.push(ms(t1 - released));
            if g == relay.grants {
                let _ = relay.target.set(t1);
                relay.stop();
            }
        }
        if t1 > deadline {
            relay.stop();
        }
        !relay.stopped()
    }

    /// Releases `mine` and queues again behind the other party, in one
    /// pipelined batch: the create of the next node (then `mine`), a data
    /// watch on the other's node, the delete of `mine`. Returns the watch
    /// (`None`: the other party stopped, this one still holds).
    async fn release(&mut self, mine: &mut String) -> Result<Option<zk::OneshotWatcher>, String> {
        // The other's newest node (known since its create's answer, in
        // practice before this party was granted).
        let other = match self.rx.recv().await {
            Some(Turn::Queued(node)) => node,
            got => {
                self.out_of_turn(got.is_some());
                return Ok(None);
            }
        };
        self.b.holders.releasing(Mode::Write);
        let _ = self.tx.send(Turn::Released(Instant::now()));
        let options = node_options();
        let created = self.client.create(&self.prefix, &[], &options);
        let watched = self.client.get_and_watch_data(&other);
        let deleted = self.client.delete(mine, None);
        let (_, seq) = created
            .await
            .map_err(|e| format!("create {}: {e}", self.prefix))?;
        let old = std::mem::replace(mine, node_path(&self.prefix, seq));
        let _ = self.tx.send(Turn::Queued(mine.clone()));
        let (_, _, watcher) = watched.await.map_err(|e| format!("watch {other}: {e}"))?;
        deleted.await.map_err(|e| format!("delete {old}: {e}"))?;
        Ok(Some(watcher))
    }

    /// The other party's messages ended or came out of order: an error,
    /// unless the run was stopping (the other party stopped first).
    fn out_of_turn(&self, out_of_order: bool) {
        if out_of_order || !self.relay.stopped() {
            self.fail(&"hand-off: the other party is out of turn");
        }
    }

    /// Records a failure and stops the run.
    fn fail(&self, e: &dyn std::fmt::Display) {
        self.b.errors.record(e);
        self.relay.stop();
    }
}
