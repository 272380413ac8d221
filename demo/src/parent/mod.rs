//! The demo's parent process: ZooKeeper, the workers, the live timeline,
//! the totals and the verdict.
//!
//! [`run()`] starts ZooKeeper and the runtime; the demo inside it goes through
//! [`setup`] (the parent's session, the store, the workers), [`readiness`]
//! (their sessions), [`run`](mod@run) (the run: events, the live timeline, the
//! faults) and [`report`] (the final picture, the totals and the verdict).

mod partition;
mod readiness;
mod report;
mod run;
mod screen;
mod setup;

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::signal::unix::{signal, Signal, SignalKind};
use zk_rwlock_testkit::launcher::ZkCluster;

use super::event::{now_us, Event, Kind, Line};
use super::verdict::{Model, Worker};
use super::Config;

/// How long workers may take to connect and report ready.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long after the end of the run workers may take to finish.
const GRACE: Duration = Duration::from_secs(10);
/// How long after Ctrl-C workers may take to finish.
const INTERRUPT_GRACE: Duration = Duration::from_secs(3);
/// Redraw period of the live timeline.
const REDRAW: Duration = Duration::from_millis(100);
/// Lines of a failed worker's stderr shown.
const STDERR_TAIL: usize = 12;

/// What the per-worker tasks tell the main loop.
enum Msg {
    /// A line of a worker's stdout (or why it is not an event).
    Line(usize, Result<Line, String>),
    /// A line of a worker's stderr.
    Stderr(usize, String),
    /// A worker's stdout closed.
    StdoutClosed(usize),
    /// A worker exited.
    Exited(usize, Result<std::process::ExitStatus, String>),
}

/// What the parent knows about one worker process.
#[derive(Debug, Default)]
struct Proc {
    ready: bool,
    done: bool,
    stdout_closed: bool,
    exit: Option<Result<std::process::ExitStatus, String>>,
    stderr: Vec<String>,
    stderr_lines: usize,
    problems: Vec<String>,
    killed: bool,
}

impl Proc {
    fn finished(&self) -> bool {
        self.stdout_closed && self.exit.is_some()
    }
}

/// Everything seen so far.
struct State {
    workers: Vec<Worker>,
    procs: Vec<Proc>,
    events: Vec<Event>,
    /// The permits of the semaphore the workers share (`--permits`).
    permits: Option<u32>,
}

impl State {
    fn apply(&mut self, msg: Msg) {
        match msg {
            Msg::Line(w, Ok(line)) => {
                let p = &mut self.procs[w];
                match &line.kind {
                    Kind::Ready { .. } => p.ready = true,
                    Kind::Done { .. } => p.done = true,
                    Kind::Error { msg } => p.problems.push(format!(
                        "reported an error: {msg}{}",
                        if p.ready { "" } else { " (before it was ready)" }
                    )),
                    _ => {}
                }
                self.events.push(Event {
                    worker: w,
                    t_us: line.t_us,
                    kind: line.kind,
                });
            }
            Msg::Line(w, Err(bad)) => self.procs[w]
                .problems
                .push(format!("printed a line that is not an event: {bad}")),
            Msg::Stderr(w, line) => {
                let p = &mut self.procs[w];
                p.stderr_lines += 1;
                p.stderr.push(line);
                if p.stderr.len() > STDERR_TAIL {
                    p.stderr.remove(0);
                }
            }
            Msg::StdoutClosed(w) => self.procs[w].stdout_closed = true,
            Msg::Exited(w, status) => {
                self.procs[w].exit = Some(status);
                self.events.push(Event {
                    worker: w,
                    t_us: now_us(),
                    kind: Kind::Exit,
                });
            }
        }
    }

    fn all_finished(&self) -> bool {
        self.procs.iter().all(Proc::finished)
    }

    fn model(&self, end: u64) -> Model {
        let mut model = Model::build(&self.workers, &self.events, end);
        model.permits = self.permits;
        model
    }

    /// Problems of each worker, including how it ended.
    fn failures(&self) -> Vec<(usize, Vec<String>)> {
        let mut out = Vec::new();
        for (w, p) in self.procs.iter().enumerate() {
            let mut problems = p.problems.clone();
            if p.killed {
                problems.push(format!(
                    "did not finish within {GRACE:?} after the end of the run and was killed"
                ));
            }
            match &p.exit {
                Some(Ok(status)) if status.success() => {}
                Some(Ok(status)) if !p.killed => problems.push(format!("exited with {status}")),
                Some(Ok(_)) => {}
                Some(Err(e)) => problems.push(format!("could not be waited for: {e}")),
                None => problems.push("did not exit".into()),
            }
            if p.ready && !p.done && problems.is_empty() {
                problems.push("ended without reporting `done`".into());
            }
            if !problems.is_empty() {
                out.push((w, problems));
            }
        }
        out
    }
}

/// SIGINT and SIGTERM, as far as they could be watched.
struct Signals {
    int: Option<Signal>,
    term: Option<Signal>,
}

impl Signals {
    fn new() -> Signals {
        Signals {
            int: signal(SignalKind::interrupt()).ok(),
            term: signal(SignalKind::terminate()).ok(),
        }
    }

    /// Completes on SIGINT or SIGTERM (never, if neither could be watched).
    async fn recv(&mut self) {
        let int = async {
            match &mut self.int {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        let term = async {
            match &mut self.term {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = int => {}
            () = term => {}
        }
    }
}

/// Runs the demo with a checked configuration.
pub fn run(cfg: Config) -> ExitCode {
    let (connect, cluster, server) = match &cfg.connect {
        Some(c) => (c.clone(), None, format!("ZooKeeper at {c}")),
        None => {
            let what = if cfg.members == 1 {
                "a throwaway ZooKeeper server".to_owned()
            } else {
                format!("a throwaway {}-server ZooKeeper ensemble", cfg.members)
            };
            eprintln!("demo: starting {what} on 127.0.0.1 ...");
            let started = if cfg.members == 1 {
                ZkCluster::standalone()
            } else {
                ZkCluster::ensemble(cfg.members)
            };
            match started {
                Ok(cluster) => {
                    let connect = cluster.connect_string();
                    (connect.clone(), Some(cluster), format!("{what} ({connect})"))
                }
                Err(e) => {
                    eprintln!("zk-rwlock demo: error: cannot start ZooKeeper: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("zk-rwlock demo: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cluster = Arc::new(Mutex::new(cluster));
    let code = runtime.block_on(demo(&cfg, &connect, &server, cluster.clone()));
    runtime.shutdown_timeout(Duration::from_secs(2));
    // Dropping the cluster stops its servers and deletes their directory.
    drop(cluster);
    code
}

/// The demo, inside the runtime.
async fn demo(cfg: &Config, connect: &str, server: &str, cluster: Arc<Mutex<Option<ZkCluster>>>) -> ExitCode {
    let mut setup = match setup::start(cfg, connect).await {
        Ok(setup) => setup,
        Err(code) => return code,
    };
    let mut signals = Signals::new();
    if let Err(code) = readiness::wait(&mut setup, &mut signals).await {
        return code;
    }
    let ran = run::go(cfg, server, &mut setup, &mut signals, &cluster).await;
    report::report(cfg, &setup, ran).await
}
