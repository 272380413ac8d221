//! The run: the workers' events, the live timeline and the faults
//! (--kill-leader, --partition), until every worker has finished.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use zk_rwlock::zk;
use zk_rwlock_testkit::launcher::ZkCluster;

use super::partition::Partition;
use super::screen::{print_now, Screen};
use super::setup::{write_all, Setup};
use super::{Msg, Signals, State, GRACE, INTERRUPT_GRACE, REDRAW};
use crate::event::now_us;
use crate::timeline::{self, secs, Frame, Marker};
use crate::verdict::Model;
use crate::Config;

/// The leader kill, once done.
#[derive(Debug, Clone)]
pub(super) struct Kill {
    pub(super) t_us: u64,
    pub(super) member: usize,
    pub(super) port: u16,
}

/// What the report needs of the run.
pub(super) struct Ran {
    /// The terminal, with the live timeline on it.
    pub(super) screen: Screen,
    /// When the workers were told to go (µs, `CLOCK_MONOTONIC`).
    pub(super) t0: u64,
    /// The leader kill (--kill-leader), once tried.
    pub(super) kill: Option<Result<Kill, String>>,
    /// Whether the run was interrupted (Ctrl-C, SIGTERM).
    pub(super) interrupted: bool,
}

/// Tells the ready workers to go and runs until every one has finished;
/// then the cut-off worker (--partition) is restored.
pub(super) async fn go(
    cfg: &Config,
    server: &str,
    setup: &mut Setup,
    signals: &mut Signals,
    cluster: &Arc<Mutex<Option<ZkCluster>>>,
) -> Ran {
    let screen = Screen::new();
    print_now(&headline(cfg, server, setup));
    let t0 = now_us();
    let started = Instant::now();
    for stdin in setup.stdins.iter_mut().flatten() {
        // A worker that is gone shows up through its exit.
        let _ = write_all(stdin, b"go\n").await;
    }
    let mut run = Run {
        cfg,
        t0,
        started,
        screen,
        grace_deadline: started + cfg.duration + GRACE,
        kill_started: false,
        kill_task: None,
        kill: None,
        stragglers_killed: false,
        interrupted: false,
    };
    run.run(setup, signals, cluster).await;
    if let Some(task) = run.kill_task.take() {
        run.kill = Some(
            task.await
                .unwrap_or_else(|e| Err(format!("the kill task failed: {e}"))),
        );
    }
    setup.stdins.clear();
    if let Some(p) = setup.partition.as_mut() {
        p.restore();
    }
    Ran {
        screen: run.screen,
        t0,
        kill: run.kill,
        interrupted: run.interrupted,
    }
}

/// The first line of the output: who shares which lock, how long, where.
fn headline(cfg: &Config, server: &str, setup: &Setup) -> String {
    let who = match cfg.permits {
        Some(n) => format!(
            "{} worker{} share {n} permit{} of semaphore",
            cfg.contenders,
            if cfg.contenders == 1 { "" } else { "s" },
            if n == 1 { "" } else { "s" },
        ),
        None => format!(
            "{} writer{} and {} reader{} share lock",
            cfg.writers,
            if cfg.writers == 1 { "" } else { "s" },
            cfg.readers,
            if cfg.readers == 1 { "" } else { "s" },
        ),
    };
    format!(
        "zk-rwlock demo: {who} {} for {} on {}{} (seed {})\n",
        cfg.path,
        secs(cfg.duration.as_micros() as i64),
        server,
        match (cfg.kill_leader, &setup.partition) {
            (true, _) => "; the leader dies halfway".to_owned(),
            (false, Some(p)) => format!("; {} is cut off mid-hold", setup.state.workers[p.victim].label),
            (false, None) => String::new(),
        },
        cfg.seed,
    )
}

/// The run loop's own state.
struct Run<'a> {
    cfg: &'a Config,
    t0: u64,
    started: Instant,
    screen: Screen,
    /// When the workers still running are killed.
    grace_deadline: Instant,
    kill_started: bool,
    kill_task: Option<JoinHandle<Result<Kill, String>>>,
    kill: Option<Result<Kill, String>>,
    stragglers_killed: bool,
    interrupted: bool,
}

impl Run<'_> {
    /// Runs until every worker has finished (or their output ended).
    async fn run(
        &mut self,
        setup: &mut Setup,
        signals: &mut Signals,
        cluster: &Arc<Mutex<Option<ZkCluster>>>,
    ) {
        let cfg = self.cfg;
        let started = self.started;
        let kill_at = started + cfg.duration / 2;
        let mut ticker = tokio::time::interval(REDRAW);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        // The worker to cut off asks for a long hold a fifth into the run; it
        // is cut off once granted, and restored once the server has deleted
        // its node (its session expired), or at the end of the run.
        let long_at = started + cfg.duration / 5;
        let (gone_tx, mut gone_rx) = mpsc::unbounded_channel::<()>();

        while !setup.state.all_finished() {
            let cut_off = setup
                .partition
                .as_ref()
                .is_some_and(|p| p.frozen.is_some() && p.restored.is_none());
            tokio::select! {
                msg = setup.rx.recv() => match msg {
                    Some(msg) => {
                        self.cut_off(setup, &msg, &gone_tx);
                        setup.state.apply(msg);
                    }
                    None => break,
                },
                _ = ticker.tick(), if self.screen.live => self.redraw(&setup.state, setup.partition.as_ref()),
                () = tokio::time::sleep_until(long_at), if setup.partition.as_ref().is_some_and(|p| !p.asked) => {
                    ask_long_hold(setup).await;
                }
                _ = gone_rx.recv(), if cut_off => {
                    if let Some(p) = setup.partition.as_mut() {
                        p.restore();
                    }
                }
                () = tokio::time::sleep_until(started + cfg.duration), if cut_off => {
                    if let Some(p) = setup.partition.as_mut() {
                        p.restore();
                    }
                }
                () = tokio::time::sleep_until(kill_at), if cfg.kill_leader && !self.kill_started => {
                    self.kill_started = true;
                    let cluster = cluster.clone();
                    self.kill_task = Some(tokio::task::spawn_blocking(move || kill_leader(&cluster)));
                }
                joined = join(&mut self.kill_task), if self.kill_task.is_some() => {
                    self.kill_task = None;
                    self.killed(joined.unwrap_or_else(|e| Err(format!("the kill task failed: {e}"))));
                }
                () = tokio::time::sleep_until(self.grace_deadline), if !self.stragglers_killed => {
                    self.kill_stragglers(setup);
                }
                () = signals.recv(), if !self.interrupted => {
                    self.interrupted = true;
                    // End of stdin stops the workers; they finish cleanly.
                    setup.stdins.clear();
                    self.grace_deadline = self.grace_deadline.min(Instant::now() + INTERRUPT_GRACE);
                }
            }
        }
    }

    /// Cuts the worker off (--partition) if `msg` is the grant of its long
    /// hold, and watches its node: it is restored once the node is gone.
    fn cut_off(&self, setup: &mut Setup, msg: &Msg, gone_tx: &mpsc::UnboundedSender<()>) {
        if let (Some(p), Msg::Line(w, Ok(line))) = (setup.partition.as_mut(), msg) {
            if let Some(node) = p.cut_off(*w, &line.kind) {
                if !self.screen.live {
                    eprintln!(
                        "demo: {} cut off from ZooKeeper at {}",
                        setup.state.workers[p.victim].label,
                        secs(now_us() as i64 - self.t0 as i64)
                    );
                }
                let (watcher, gone) = (setup.watcher.clone(), gone_tx.clone());
                tokio::spawn(async move {
                    node_gone(&watcher, &node).await;
                    let _ = gone.send(());
                });
            }
        }
    }

    /// Redraws the live timeline.
    fn redraw(&mut self, state: &State, partition: Option<&Partition>) {
        let now = now_us();
        let (width, height) = self.screen.size();
        let model = state.model(now);
        let lines = timeline::render(&Frame {
            model: &model,
            t0: self.t0,
            span_us: (self.cfg.duration.as_micros() as u64).max(now.saturating_sub(self.t0)),
            now: Some(now),
            markers: markers(self.kill.as_ref(), partition, &model, self.t0),
            width,
            color: self.screen.color,
        });
        if height.is_none_or(|h| lines.len() < h) {
            self.screen.draw(&lines);
        } else {
            // Too tall to redraw in place: the header line only.
            self.screen.draw(&lines[..1]);
        }
    }

    /// Records the outcome of the leader kill.
    fn killed(&mut self, outcome: Result<Kill, String>) {
        if !self.screen.live {
            match &outcome {
                Ok(k) => eprintln!("demo: {}", kill_label(k, self.t0)),
                Err(e) => eprintln!("demo: could not kill the leader: {e}"),
            }
        }
        self.kill = Some(outcome);
    }

    /// Kills the workers still running after the grace period.
    fn kill_stragglers(&mut self, setup: &mut Setup) {
        self.stragglers_killed = true;
        for (w, k) in setup.kills.iter_mut().enumerate() {
            if let Some(k) = k.take() {
                if setup.state.procs[w].exit.is_none() {
                    setup.state.procs[w].killed = !self.interrupted;
                    let _ = k.send(());
                }
            }
        }
    }
}

/// Asks the worker to cut off (--partition) for its long hold.
async fn ask_long_hold(setup: &mut Setup) {
    if let Some(p) = setup.partition.as_mut() {
        p.asked = true;
        if let Some(Some(stdin)) = setup.stdins.get_mut(p.victim) {
            // A worker that is gone shows up through its exit.
            let _ = write_all(stdin, b"long\n").await;
        }
    }
}

/// Completes when the leader kill's task does (never without one).
async fn join(
    task: &mut Option<JoinHandle<Result<Kill, String>>>,
) -> Result<Result<Kill, String>, tokio::task::JoinError> {
    match task.as_mut() {
        Some(task) => task.await,
        None => std::future::pending().await,
    }
}

/// The leader kill, as the timeline labels it.
fn kill_label(k: &Kill, t0: u64) -> String {
    format!(
        "leader (member {}, port {}) killed at {}",
        k.member,
        k.port,
        secs(k.t_us as i64 - t0 as i64)
    )
}

/// The timeline's markers: the leader kill, the cut and the lease deadline.
pub(super) fn markers(
    kill: Option<&Result<Kill, String>>,
    partition: Option<&Partition>,
    model: &Model,
    t0: u64,
) -> Vec<Marker> {
    let mut markers: Vec<Marker> = kill
        .into_iter()
        .flatten()
        .map(|k| Marker {
            t: k.t_us,
            label: kill_label(k, t0),
            legend: "leader killed",
        })
        .collect();
    if let Some(p) = partition {
        markers.extend(p.markers(model, t0));
    }
    markers.sort_by_key(|m| m.t);
    markers
}

/// Completes when `node` is gone: deleted, or its session expired.
async fn node_gone(client: &zk::Client, node: &str) {
    loop {
        match client.check_and_watch_stat(node).await {
            Ok((None, _)) => return,
            Ok((Some(_), watcher)) => {
                if watcher.changed().await.event_type == zk::EventType::NodeDeleted {
                    return;
                }
            }
            Err(e) if zk_rwlock::is_retryable(&e) => tokio::time::sleep(Duration::from_millis(100)).await,
            // The parent's session is gone: restore at the end of the run.
            Err(_) => return std::future::pending().await,
        }
    }
}

/// Kills the ensemble's leader (blocking).
fn kill_leader(cluster: &Mutex<Option<ZkCluster>>) -> Result<Kill, String> {
    let mut guard = cluster.lock().unwrap_or_else(PoisonError::into_inner);
    let cluster = guard.as_mut().ok_or("there is no local ensemble")?;
    let member = cluster
        .leader()
        .ok_or("no member of the ensemble says it is the leader")?;
    let port = cluster.client_port(member);
    let t_us = now_us();
    let error = cluster.kill(member).err().map(|e| e.to_string());
    match error {
        Some(e) => Err(e),
        None => Ok(Kill { t_us, member, port }),
    }
}
