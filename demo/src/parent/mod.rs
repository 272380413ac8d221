//! The demo's parent process: ZooKeeper, the workers, the live timeline,
//! the totals and the verdict.

use std::fmt::Write as _;
use std::future::poll_fn;
use std::io::{IsTerminal, Write};
use std::pin::Pin;
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::process::{ChildStdin, Command};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use zk_rwlock::{zk, Mode, SharedLock};
use zk_rwlock_testkit::launcher::ZkCluster;
use zk_rwlock_testkit::proxy::Proxy;

use super::event::{now_us, Event, Kind, Line};
use super::store::FencedStore;
use super::svg::{self, Picture};
use super::timeline::{self, secs, Frame, Marker};
use super::verdict::{
    check, handoffs, percentile, HoldEnd, MarkKind, Model, Suspension, Violation, WaitEnd, Worker,
};
use super::worker::SplitMix64;
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

/// The leader kill, once done.
#[derive(Debug, Clone)]
struct Kill {
    t_us: u64,
    member: usize,
    port: u16,
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
        Model::build(&self.workers, &self.events, end)
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

/// The terminal: live redraws when it is one.
struct Screen {
    live: bool,
    color: bool,
    fixed_width: Option<usize>,
    drawn: usize,
    cursor_hidden: bool,
}

impl Screen {
    fn new() -> Screen {
        let tty = std::io::stdout().is_terminal();
        let fixed_width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok());
        Screen {
            live: tty,
            color: tty && std::env::var_os("NO_COLOR").is_none(),
            fixed_width,
            drawn: 0,
            cursor_hidden: false,
        }
    }

    /// Width and height of the terminal, if stdout is one.
    fn size(&self) -> (usize, Option<usize>) {
        let term = if self.live { terminal_size() } else { None };
        let width = self.fixed_width.or(term.map(|t| t.0)).unwrap_or(100);
        (width.clamp(40, 400), term.map(|t| t.1))
    }

    /// Draws `lines` over the previous frame.
    fn draw(&mut self, lines: &[String]) {
        let mut out = String::new();
        if self.drawn > 0 {
            let _ = write!(out, "\x1b[{}A\r", self.drawn);
        } else if self.live && !self.cursor_hidden {
            out.push_str("\x1b[?25l");
            self.cursor_hidden = true;
        }
        for line in lines {
            if self.live {
                out.push_str("\x1b[2K");
            }
            out.push_str(line);
            out.push('\n');
        }
        if self.live && lines.len() < self.drawn {
            out.push_str("\x1b[J");
        }
        self.drawn = if self.live { lines.len() } else { 0 };
        print_now(&out);
    }

    /// Stops redrawing: what was drawn stays.
    fn finish(&mut self) {
        self.drawn = 0;
        if self.cursor_hidden {
            print_now("\x1b[?25h");
            self.cursor_hidden = false;
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        self.finish();
    }
}

fn print_now(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    let _ = out.flush();
}

/// Columns and rows of the terminal on stdout.
fn terminal_size() -> Option<(usize, usize)> {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` into the valid, writable `ws`.
    let rc = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (rc == 0 && ws.ws_col > 0).then_some((usize::from(ws.ws_col), usize::from(ws.ws_row)))
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

/// Connects the parent's own session (to check the server and the path).
async fn connect_parent(cfg: &Config, connect: &str) -> Result<zk::Client, String> {
    let options = cfg
        .security
        .options(Duration::from_secs(10), Duration::from_secs(15))
        .map_err(|f| f.message)?;
    zk_rwlock::connect_client_with(connect, &options)
        .await
        .map_err(|e| crate::common::Failure::from(e).message)
}

/// Reads lines from a pipe. (The crate's tokio has no `io-util` feature, so
/// this is a small line splitter on top of `poll_read`.)
struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    fn new(inner: R) -> LineReader<R> {
        LineReader {
            inner,
            buf: Vec::new(),
            eof: false,
        }
    }

    /// The next line without its end, or `None` at the end of the stream.
    async fn next_line(&mut self) -> std::io::Result<Option<String>> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                let text = String::from_utf8_lossy(&line[..i]);
                return Ok(Some(text.trim_end_matches('\r').to_owned()));
            }
            if self.eof {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                let rest = std::mem::take(&mut self.buf);
                return Ok(Some(String::from_utf8_lossy(&rest).into_owned()));
            }
            let mut chunk = [0u8; 4096];
            let inner = &mut self.inner;
            let n = poll_fn(|cx| {
                let mut read = ReadBuf::new(&mut chunk);
                match Pin::new(&mut *inner).poll_read(cx, &mut read) {
                    Poll::Ready(Ok(())) => Poll::Ready(Ok(read.filled().len())),
                    Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await?;
            if n == 0 {
                self.eof = true;
            } else {
                self.buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

/// Writes all of `data` to a pipe and flushes it.
async fn write_all<W: AsyncWrite + Unpin>(w: &mut W, mut data: &[u8]) -> std::io::Result<()> {
    while !data.is_empty() {
        let n = poll_fn(|cx| Pin::new(&mut *w).poll_write(cx, data)).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        data = &data[n..];
    }
    poll_fn(|cx| Pin::new(&mut *w).poll_flush(cx)).await
}

/// The arguments that give a worker the demo's TLS files. Its credentials
/// go through the environment (`ZK_RWLOCK_AUTH`), where `ps` does not show them.
fn tls_args(security: &crate::connection::Security) -> Vec<std::ffi::OsString> {
    let mut args = Vec::new();
    for (option, path) in [
        ("--tls-ca", &security.tls_ca),
        ("--tls-cert", &security.tls_cert),
        ("--tls-key", &security.tls_key),
    ] {
        if let Some(path) = path {
            args.push(option.into());
            args.push(path.clone().into_os_string());
        }
    }
    args
}

/// Starts worker `w`; its tasks report to `tx`. Returns its stdin and the
/// sender that kills it.
fn spawn_worker(
    w: usize,
    worker: &Worker,
    cfg: &Config,
    (connect, store): (&str, &std::path::Path),
    tx: &mpsc::UnboundedSender<Msg>,
) -> Result<(ChildStdin, oneshot::Sender<()>), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
    let seed = SplitMix64::new(cfg.seed ^ (w as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).next_u64();
    // On Linux, /proc/self/exe is this very program even if its file has
    // been replaced (say, by a rebuild) since it started.
    let self_exe = std::path::Path::new("/proc/self/exe");
    let mut cmd = if self_exe.exists() {
        let mut cmd = Command::new(self_exe);
        cmd.arg0(&exe);
        cmd
    } else {
        Command::new(&exe)
    };
    match &cfg.security.auth {
        Some(auth) => cmd.env(crate::connection::AUTH_ENV, auth),
        None => cmd.env_remove(crate::connection::AUTH_ENV),
    };
    cmd.arg("worker")
        .args(["--connect", connect, "--path", &cfg.path])
        .args([
            "--mode",
            match worker.mode {
                Mode::Read => "read",
                Mode::Write => "write",
            },
        ])
        .args(["--duration", &format!("{}", cfg.duration.as_secs_f64())])
        .args(["--seed", &seed.to_string(), "--label", &worker.label])
        .arg("--store")
        .arg(store)
        .args(["--acl", cfg.acl.acl.name()])
        .args(cfg.acl.dir_acl.iter().flat_map(|a| ["--dir-acl", a.name()]))
        .args(tls_args(&cfg.security))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own process group: Ctrl-C reaches the parent only, which then
        // lets the workers finish cleanly.
        .process_group(0);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start worker {}: {e}", worker.label))?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(format!("worker {} has no pipes", worker.label));
    };
    let out_tx = tx.clone();
    tokio::spawn(async move {
        let mut lines = LineReader::new(stdout);
        while let Ok(Some(line)) = lines.next_line().await {
            let parsed = serde_json::from_str::<Line>(&line).map_err(|e| format!("{line:?} ({e})"));
            let _ = out_tx.send(Msg::Line(w, parsed));
        }
        let _ = out_tx.send(Msg::StdoutClosed(w));
    });
    let err_tx = tx.clone();
    tokio::spawn(async move {
        let mut lines = LineReader::new(stderr);
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = err_tx.send(Msg::Stderr(w, line));
        }
    });
    let (kill_tx, kill_rx) = oneshot::channel::<()>();
    let exit_tx = tx.clone();
    tokio::spawn(async move {
        let status = tokio::select! {
            status = child.wait() => status,
            _ = kill_rx => {
                let _ = child.start_kill();
                child.wait().await
            }
        };
        let _ = exit_tx.send(Msg::Exited(w, status.map_err(|e| e.to_string())));
    });
    Ok((stdin, kill_tx))
}

/// The fenced store's directory, removed when dropped.
struct StoreDir(std::path::PathBuf);

impl Drop for StoreDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The demo, inside the runtime.
async fn demo(cfg: &Config, connect: &str, server: &str, cluster: Arc<Mutex<Option<ZkCluster>>>) -> ExitCode {
    // The parent's own session: is the server there, is the path valid?
    let client = match connect_parent(cfg, connect).await {
        Ok(client) => client,
        Err(e) => {
            eprintln!("zk-rwlock demo: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = SharedLock::new(client.clone(), &cfg.path) {
        eprintln!("zk-rwlock demo: error: {e}");
        return ExitCode::from(2);
    }
    // The session watches the node of a cut-off worker (--partition), and
    // cleans up a server that outlives the demo.
    let watcher = client.clone();
    let client = cfg.connect.is_some().then_some(client);

    let workers: Vec<Worker> = (1..=cfg.writers)
        .map(|i| Worker {
            label: format!("W{i}"),
            mode: Mode::Write,
        })
        .chain((1..=cfg.readers).map(|i| Worker {
            label: format!("R{i}"),
            mode: Mode::Read,
        }))
        .collect();
    let n = workers.len();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut stdins: Vec<Option<ChildStdin>> = Vec::new();
    let mut kills: Vec<Option<oneshot::Sender<()>>> = Vec::new();
    let mut state = State {
        workers: workers.clone(),
        procs: (0..n).map(|_| Proc::default()).collect(),
        events: Vec::new(),
    };
    // The fenced store the writers write to, for this run only.
    let store = StoreDir(std::env::temp_dir().join(format!("zk-rwlock-demo-store-{}", std::process::id())));
    if let Err(e) = FencedStore::open(&store.0) {
        eprintln!(
            "zk-rwlock demo: error: cannot create the fenced store in {}: {e}",
            store.0.display()
        );
        return ExitCode::FAILURE;
    }
    // The worker to cut off reaches ZooKeeper through proxies of its own.
    let mut partition = None;
    if cfg.partition {
        match Partition::start(connect) {
            Ok(p) => partition = Some(p),
            Err(e) => {
                eprintln!("zk-rwlock demo: error: cannot start the proxies of --partition: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    for (w, worker) in workers.iter().enumerate() {
        let connect = match &partition {
            Some(p) if w == p.victim => p.connect.as_str(),
            _ => connect,
        };
        match spawn_worker(w, worker, cfg, (connect, &store.0), &tx) {
            Ok((stdin, kill)) => {
                stdins.push(Some(stdin));
                kills.push(Some(kill));
            }
            Err(e) => {
                eprintln!("zk-rwlock demo: error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    drop(tx);

    let mut sigint = signal(SignalKind::interrupt()).ok();
    let mut sigterm = signal(SignalKind::terminate()).ok();
    let mut interrupted = false;

    // Wait until every worker has its session.
    eprintln!("demo: started {n} worker processes; waiting for their ZooKeeper sessions ...");
    let ready_deadline = Instant::now() + READY_TIMEOUT;
    let mut why_not_ready = None;
    while !state.procs.iter().all(|p| p.ready) {
        tokio::select! {
            msg = rx.recv() => match msg {
                Some(msg) => state.apply(msg),
                None => break,
            },
            () = tokio::time::sleep_until(ready_deadline) => {
                why_not_ready = Some(format!("not every worker connected within {READY_TIMEOUT:?}"));
                break;
            }
            _ = recv_signal(&mut sigint, &mut sigterm) => {
                why_not_ready = Some("interrupted".into());
                interrupted = true;
                break;
            }
        }
        if state
            .procs
            .iter()
            .any(|p| !p.problems.is_empty() || p.exit.is_some())
        {
            why_not_ready = Some("a worker failed while connecting".into());
            break;
        }
    }
    if why_not_ready.is_none() && !state.procs.iter().all(|p| p.ready) {
        why_not_ready = Some("the workers' output ended before they were ready".into());
    }
    if let Some(why) = why_not_ready {
        eprintln!("zk-rwlock demo: error: {why}");
        drop(stdins);
        for kill in kills.iter_mut().filter_map(Option::take) {
            let _ = kill.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while !state.all_finished() {
                match rx.recv().await {
                    Some(msg) => state.apply(msg),
                    None => break,
                }
            }
        })
        .await;
        print_failures(&state, &state.failures());
        return if interrupted {
            ExitCode::from(130)
        } else {
            ExitCode::FAILURE
        };
    }

    // Go.
    let mut screen = Screen::new();
    print_now(&format!(
        "zk-rwlock demo: {} writer{} and {} reader{} share lock {} for {} on {}{} (seed {})\n",
        cfg.writers,
        if cfg.writers == 1 { "" } else { "s" },
        cfg.readers,
        if cfg.readers == 1 { "" } else { "s" },
        cfg.path,
        secs(cfg.duration.as_micros() as i64),
        server,
        match (cfg.kill_leader, &partition) {
            (true, _) => "; the leader dies halfway".to_owned(),
            (false, Some(p)) => format!("; {} is cut off mid-hold", state.workers[p.victim].label),
            (false, None) => String::new(),
        },
        cfg.seed,
    ));
    let t0 = now_us();
    let started = Instant::now();
    for stdin in stdins.iter_mut().flatten() {
        // A worker that is gone shows up through its exit.
        let _ = write_all(stdin, b"go\n").await;
    }
    let duration_us = cfg.duration.as_micros() as u64;
    let kill_at = started + cfg.duration / 2;
    let mut grace_deadline = started + cfg.duration + GRACE;
    let mut kill_started = false;
    let mut kill_task: Option<tokio::task::JoinHandle<Result<Kill, String>>> = None;
    let mut kill: Option<Result<Kill, String>> = None;
    let mut stragglers_killed = false;
    let mut ticker = tokio::time::interval(REDRAW);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let kill_label = |k: &Kill| {
        format!(
            "leader (member {}, port {}) killed at {}",
            k.member,
            k.port,
            secs(k.t_us as i64 - t0 as i64)
        )
    };
    let markers = |kill: &Option<Result<Kill, String>>, partition: &Option<Partition>, model: &Model| {
        let mut markers: Vec<Marker> = kill
            .iter()
            .flatten()
            .map(|k| Marker {
                t: k.t_us,
                label: kill_label(k),
                legend: "leader killed",
            })
            .collect();
        if let Some(p) = partition {
            markers.extend(p.markers(model, t0));
        }
        markers.sort_by_key(|m| m.t);
        markers
    };
    // The worker to cut off asks for a long hold a fifth into the run; it
    // is cut off once granted, and restored once the server has deleted
    // its node (its session expired), or at the end of the run.
    let long_at = started + cfg.duration / 5;
    let (gone_tx, mut gone_rx) = mpsc::unbounded_channel::<()>();

    while !state.all_finished() {
        let cut_off = partition
            .as_ref()
            .is_some_and(|p| p.frozen.is_some() && p.restored.is_none());
        tokio::select! {
            msg = rx.recv() => match msg {
                Some(msg) => {
                    if let (Some(p), Msg::Line(w, Ok(line))) = (partition.as_mut(), &msg) {
                        if let Some(node) = p.cut_off(*w, &line.kind) {
                            if !screen.live {
                                eprintln!("demo: {} cut off from ZooKeeper at {}", state.workers[p.victim].label, secs(now_us() as i64 - t0 as i64));
                            }
                            let (watcher, gone) = (watcher.clone(), gone_tx.clone());
                            tokio::spawn(async move {
                                node_gone(&watcher, &node).await;
                                let _ = gone.send(());
                            });
                        }
                    }
                    state.apply(msg);
                }
                None => break,
            },
            _ = ticker.tick(), if screen.live => {
                let now = now_us();
                let (width, height) = screen.size();
                let model = state.model(now);
                let lines = timeline::render(&Frame {
                    model: &model,
                    t0,
                    span_us: duration_us.max(now.saturating_sub(t0)),
                    now: Some(now),
                    markers: markers(&kill, &partition, &model),
                    width,
                    color: screen.color,
                });
                if height.is_none_or(|h| lines.len() < h) {
                    screen.draw(&lines);
                } else {
                    // Too tall to redraw in place: the header line only.
                    screen.draw(&lines[..1]);
                }
            }
            () = tokio::time::sleep_until(long_at), if partition.as_ref().is_some_and(|p| !p.asked) => {
                if let Some(p) = partition.as_mut() {
                    p.asked = true;
                    if let Some(Some(stdin)) = stdins.get_mut(p.victim) {
                        // A worker that is gone shows up through its exit.
                        let _ = write_all(stdin, b"long\n").await;
                    }
                }
            }
            _ = gone_rx.recv(), if cut_off => {
                if let Some(p) = partition.as_mut() {
                    p.restore();
                }
            }
            () = tokio::time::sleep_until(started + cfg.duration), if cut_off => {
                if let Some(p) = partition.as_mut() {
                    p.restore();
                }
            }
            () = tokio::time::sleep_until(kill_at), if cfg.kill_leader && !kill_started => {
                kill_started = true;
                let cluster = cluster.clone();
                kill_task = Some(tokio::task::spawn_blocking(move || kill_leader(&cluster)));
            }
            joined = async {
                match kill_task.as_mut() {
                    Some(task) => task.await,
                    None => std::future::pending().await,
                }
            }, if kill_task.is_some() => {
                kill_task = None;
                let outcome = joined.unwrap_or_else(|e| Err(format!("the kill task failed: {e}")));
                if !screen.live {
                    match &outcome {
                        Ok(k) => eprintln!("demo: {}", kill_label(k)),
                        Err(e) => eprintln!("demo: could not kill the leader: {e}"),
                    }
                }
                kill = Some(outcome);
            }
            () = tokio::time::sleep_until(grace_deadline), if !stragglers_killed => {
                stragglers_killed = true;
                for (w, k) in kills.iter_mut().enumerate() {
                    if let Some(k) = k.take() {
                        if state.procs[w].exit.is_none() {
                            state.procs[w].killed = !interrupted;
                            let _ = k.send(());
                        }
                    }
                }
            }
            _ = recv_signal(&mut sigint, &mut sigterm), if !interrupted => {
                interrupted = true;
                // End of stdin stops the workers; they finish cleanly.
                stdins.clear();
                grace_deadline = grace_deadline.min(Instant::now() + INTERRUPT_GRACE);
            }
        }
    }
    if let Some(task) = kill_task.take() {
        kill = Some(
            task.await
                .unwrap_or_else(|e| Err(format!("the kill task failed: {e}"))),
        );
    }
    drop(stdins);
    if let Some(p) = partition.as_mut() {
        p.restore();
    }

    // The final picture: the whole run, including the last releases.
    let last = state.events.iter().map(|e| e.t_us).max().unwrap_or(t0);
    // An interrupted run is drawn up to where it stopped.
    let end = if interrupted {
        last.max(t0 + 1)
    } else {
        last.max(t0 + duration_us)
    };
    let span_us = end - t0;
    let model = state.model(end);
    let (width, _) = screen.size();
    let marked = markers(&kill, &partition, &model);
    let lines = timeline::render(&Frame {
        model: &model,
        t0,
        span_us,
        now: None,
        markers: marked.clone(),
        width,
        color: screen.color,
    });
    screen.draw(&lines);
    screen.finish();

    let violations = check(&model.holds);
    let failures = state.failures();
    let mut report = String::new();
    totals(&mut report, cfg, &model, t0, span_us, kill.as_ref(), &failures);
    if let Some(p) = &partition {
        let _ = writeln!(report, "  partition   {}", p.summary(&model, t0));
    }
    verdict_lines(&mut report, &model, &violations, t0);
    print_now(&report);
    print_failures(&state, &failures);

    let mut ok = violations.is_empty() && failures.is_empty() && !interrupted;
    if let Some(Err(e)) = &kill {
        eprintln!("zk-rwlock demo: error: could not kill the leader: {e}");
        ok = false;
    }
    if let Some(p) = partition.as_ref().filter(|p| p.frozen.is_none()) {
        eprintln!(
            "zk-rwlock demo: error: --partition: {} was not granted its long hold during the run, so it was never cut off",
            state.workers[p.victim].label
        );
        ok = false;
    }
    if let Some(path) = &cfg.events {
        if let Err(e) = write_events(path, &state, partition.as_ref()) {
            eprintln!("zk-rwlock demo: error: cannot write {}: {e}", path.display());
            ok = false;
        }
    }
    if let Some(path) = &cfg.svg {
        let picture = Picture {
            model: &model,
            t0,
            span_us,
            markers: marked,
            title: format!(
                "zk-rwlock demo: {} writers, {} readers, {} on {}",
                cfg.writers,
                cfg.readers,
                secs(cfg.duration.as_micros() as i64),
                if cfg.connect.is_some() {
                    "ZooKeeper".to_owned()
                } else if cfg.members == 1 {
                    "a standalone ZooKeeper".to_owned()
                } else {
                    format!("a {}-server ensemble", cfg.members)
                }
            ),
            subtitle: verdict_summary(&model, &violations),
            ok: violations.is_empty(),
        };
        match std::fs::write(path, svg::render(&picture)) {
            Ok(()) => eprintln!("demo: wrote the timeline to {}", path.display()),
            Err(e) => {
                eprintln!("zk-rwlock demo: error: cannot write {}: {e}", path.display());
                ok = false;
            }
        }
    }
    if let Some(client) = client {
        clean_up(&client, cfg).await;
    }
    if interrupted {
        eprintln!("demo: interrupted");
        ExitCode::from(130)
    } else if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// A hold of at least this long (µs) is the long hold a worker was asked for.
const LONG_HOLD_US: u64 = 2_000_000;

/// The worker cut off from ZooKeeper (--partition): the first one, through
/// proxies of its own.
struct Partition {
    /// Its index.
    victim: usize,
    /// Its connect string: the proxies.
    connect: String,
    proxies: Vec<Proxy>,
    /// Whether it was asked for a long hold.
    asked: bool,
    /// When it was cut off, and the node it held.
    frozen: Option<(u64, String)>,
    /// When its connection was restored.
    restored: Option<u64>,
}

impl Partition {
    /// One proxy per server of `connect` (a chroot suffix is kept).
    fn start(connect: &str) -> Result<Partition, String> {
        let (hosts, chroot) = connect.split_at(connect.find('/').unwrap_or(connect.len()));
        let mut proxies = Vec::new();
        for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
            proxies.push(Proxy::try_start(host).map_err(|e| format!("a proxy to {host}: {e}"))?);
        }
        let addrs: Vec<&str> = proxies.iter().map(Proxy::addr).collect();
        Ok(Partition {
            victim: 0,
            connect: format!("{}{chroot}", addrs.join(",")),
            proxies,
            asked: false,
            frozen: None,
            restored: None,
        })
    }

    /// Cuts the worker off if `kind`, from worker `w`, is the grant of the
    /// long hold it was asked for; returns the node it holds then.
    fn cut_off(&mut self, w: usize, kind: &Kind) -> Option<String> {
        let Kind::Grant { node, hold_us, .. } = kind else {
            return None;
        };
        if w != self.victim || !self.asked || self.frozen.is_some() || *hold_us < LONG_HOLD_US {
            return None;
        }
        for proxy in &self.proxies {
            proxy.freeze();
        }
        self.frozen = Some((now_us(), node.clone()));
        Some(node.clone())
    }

    /// Restores the connection (what was held back is delivered).
    fn restore(&mut self) {
        if self.frozen.is_some() && self.restored.is_none() {
            for proxy in &self.proxies {
                proxy.thaw();
            }
            self.restored = Some(now_us());
        }
    }

    /// The suspension of the cut-off hold, if the worker reported one.
    fn suspension(&self, model: &Model) -> Option<Suspension> {
        let (t, _) = self.frozen.as_ref()?;
        model
            .suspensions
            .iter()
            .find(|s| s.worker == self.victim && s.start >= *t)
            .copied()
    }

    /// The cut and the lease deadline, for the timeline.
    fn markers(&self, model: &Model, t0: u64) -> Vec<Marker> {
        let label = &model.workers[self.victim].label;
        let mut out = Vec::new();
        if let Some((t, _)) = &self.frozen {
            out.push(Marker {
                t: *t,
                label: format!(
                    "{label} cut off from ZooKeeper at {}",
                    secs(*t as i64 - t0 as i64)
                ),
                legend: "cut off / lease deadline",
            });
        }
        if let Some(s) = self.suspension(model) {
            out.push(Marker {
                t: s.lease,
                label: format!(
                    "{label}'s lease deadline {}: no one else could hold the lock before it",
                    secs(s.lease as i64 - t0 as i64)
                ),
                legend: "cut off / lease deadline",
            });
        }
        out
    }

    /// What happened, in order, for the totals.
    fn summary(&self, model: &Model, t0: u64) -> String {
        let at = |t: u64| secs(t as i64 - t0 as i64);
        let victim = &model.workers[self.victim];
        let Some((t, node)) = &self.frozen else {
            return format!(
                "{} was never granted its long hold: nothing was cut off",
                victim.label
            );
        };
        let mut out = format!("{} cut off at {} in a long hold", victim.label, at(*t));
        if let Some(h) = model.holds.iter().find(|h| &h.node == node) {
            let _ = write!(out, " (token 0x{:x})", h.token);
        }
        match self.suspension(model) {
            Some(s) => {
                let _ = write!(
                    out,
                    "; suspended at {} (work stopped); lease deadline {}",
                    at(s.start),
                    at(s.lease)
                );
                if let Some(lost) = model
                    .marks
                    .iter()
                    .find(|m| m.worker == self.victim && m.kind == MarkKind::Lost && m.t >= *t)
                {
                    let _ = write!(out, "; lost at {}", at(lost.t));
                }
                let next = model
                    .holds
                    .iter()
                    .filter(|h| h.worker != self.victim && h.start > *t)
                    .filter(|h| h.mode == Mode::Write || victim.mode == Mode::Write)
                    .min_by_key(|h| h.start);
                match next {
                    Some(h) => {
                        let _ = write!(
                            out,
                            "; next {} {} granted at {}, {} after the lease deadline",
                            if h.mode == Mode::Write { "writer" } else { "reader" },
                            model.workers[h.worker].label,
                            at(h.start),
                            ms(h.start.saturating_sub(s.lease))
                        );
                    }
                    None => out.push_str("; nobody else was granted the lock afterwards"),
                }
            }
            None => out.push_str("; it reported no suspension"),
        }
        if let Some(r) = self.restored {
            let _ = write!(out, "; connection restored at {}", at(r));
        }
        out
    }
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

/// Writes every event as a JSON line with its worker's label (`worker`),
/// and the partition's cut and restoration as the parent's (`demo`).
fn write_events(path: &std::path::Path, state: &State, partition: Option<&Partition>) -> std::io::Result<()> {
    let mut lines: Vec<(u64, serde_json::Value)> = Vec::new();
    for e in &state.events {
        let mut value = match &e.kind {
            Kind::Exit => serde_json::json!({ "ev": "exit", "t_us": e.t_us }),
            kind => serde_json::to_value(Line {
                t_us: e.t_us,
                kind: kind.clone(),
            })
            .map_err(std::io::Error::other)?,
        };
        value["worker"] = state.workers[e.worker].label.clone().into();
        lines.push((e.t_us, value));
    }
    if let Some(p) = partition {
        if let Some((t, node)) = &p.frozen {
            lines.push((
                *t,
                serde_json::json!({ "worker": "demo", "ev": "cut_off", "t_us": t, "node": node, "victim": state.workers[p.victim].label }),
            ));
        }
        if let Some(t) = p.restored {
            lines.push((
                t,
                serde_json::json!({ "worker": "demo", "ev": "restored", "t_us": t }),
            ));
        }
    }
    lines.sort_by_key(|(t, _)| *t);
    let text: String = lines.iter().map(|(_, v)| format!("{v}\n")).collect();
    std::fs::write(path, text)
}

/// Completes on SIGINT or SIGTERM (never, if neither could be watched).
async fn recv_signal(
    sigint: &mut Option<tokio::signal::unix::Signal>,
    sigterm: &mut Option<tokio::signal::unix::Signal>,
) {
    let int = async {
        match sigint {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    };
    let term = async {
        match sigterm {
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

/// Removes the lock directory (and the default parent) from a server that outlives the demo.
async fn clean_up(client: &zk::Client, cfg: &Config) {
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        let _ = client.delete(&cfg.path, None).await;
        if cfg.default_path {
            if let Some((parent, _)) = cfg.path.rsplit_once('/') {
                if !parent.is_empty() {
                    let _ = client.delete(parent, None).await;
                }
            }
        }
    })
    .await;
}

fn ms(us: u64) -> String {
    let ms = us as f64 / 1000.0;
    if ms < 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

/// p50 and p99 of the waits (want → grant) of `mode` (all if `None`).
fn wait_percentiles(model: &Model, mode: Option<Mode>) -> Option<(u64, u64, usize)> {
    let mut waits: Vec<u64> = model
        .waits
        .iter()
        .filter(|w| w.ended == WaitEnd::Granted)
        .filter(|w| mode.is_none_or(|m| model.workers[w.worker].mode == m))
        .map(|w| w.end - w.start)
        .collect();
    waits.sort_unstable();
    Some((percentile(&waits, 50.0)?, percentile(&waits, 99.0)?, waits.len()))
}

fn totals(
    out: &mut String,
    cfg: &Config,
    model: &Model,
    t0: u64,
    span_us: u64,
    kill: Option<&Result<Kill, String>>,
    failures: &[(usize, Vec<String>)],
) {
    let count = |mode: Mode| model.holds.iter().filter(|h| h.mode == mode).count();
    let (writes, reads) = (count(Mode::Write), count(Mode::Read));
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  grants      {} hand-offs: {writes} write, {reads} read ({:.1}/s)",
        writes + reads,
        (writes + reads) as f64 / (span_us.min(cfg.duration.as_micros() as u64) as f64 / 1e6).max(1e-3)
    );
    let wait = |mode: Option<Mode>| match wait_percentiles(model, mode) {
        Some((p50, p99, _)) => format!("p50 {}, p99 {}", ms(p50), ms(p99)),
        None => "-".to_owned(),
    };
    let _ = writeln!(
        out,
        "  wait        {}   (write {}; read {})   from asking to holding",
        wait(None),
        wait(Some(Mode::Write)),
        wait(Some(Mode::Read))
    );
    let handoff = handoffs(model);
    if let (Some(p50), Some(p99)) = (percentile(&handoff, 50.0), percentile(&handoff, 99.0)) {
        let _ = writeln!(
            out,
            "  hand-off    p50 {}, p99 {}   from a release to the grant it let through ({} grants)",
            ms(p50),
            ms(p99),
            handoff.len()
        );
    }
    let _ = writeln!(
        out,
        "  readers     at most {} holding at once",
        model.max_concurrent_readers()
    );
    if !model.writes.is_empty() {
        let refused = model.writes.iter().filter(|w| !w.accepted).count();
        let _ = writeln!(
            out,
            "  store       {} writes with the writer's fencing token: {} accepted, {refused} refused as stale",
            model.writes.len(),
            model.writes.len() - refused
        );
    }
    let losts = model.marks.iter().filter(|m| m.kind == MarkKind::Lost).count();
    let open = model.holds.iter().filter(|h| h.ended == HoldEnd::Open).count();
    if losts + open > 0 {
        let _ = writeln!(
            out,
            "  lost        {losts} hold(s) reported lost, {open} never released"
        );
    }
    if let Some(kill) = kill {
        match kill {
            Ok(k) => {
                let after = model.holds.iter().map(|h| h.start).filter(|&t| t > k.t_us).min();
                let _ = writeln!(
                    out,
                    "  leader      member {} (port {}) killed at {}; {}",
                    k.member,
                    k.port,
                    secs(k.t_us as i64 - t0 as i64),
                    match after {
                        Some(t) => format!("next grant {} later", ms(t - k.t_us)),
                        None => "no grant after it".to_owned(),
                    }
                );
            }
            Err(e) => {
                let _ = writeln!(out, "  leader      could not be killed: {e}");
            }
        }
    }
    if !model.offline.is_empty() {
        let mut who: Vec<usize> = model.offline.iter().map(|s| s.worker).collect();
        who.sort_unstable();
        who.dedup();
        let longest = model.offline.iter().map(|s| s.end - s.start).max().unwrap_or(0);
        let unclosed = model.offline.iter().filter(|s| !s.closed).count();
        let expired = model
            .marks
            .iter()
            .filter(|m| matches!(m.kind, MarkKind::SessionEnded(_)))
            .count();
        let _ = writeln!(
            out,
            "  sessions    {} of {} workers were disconnected; {}, longest {}",
            who.len(),
            model.workers.len(),
            match (unclosed, expired) {
                (0, 0) => "all reconnected to their session".to_owned(),
                (0, n) => format!("all reconnected, {n} with a new session (the old one expired)"),
                (u, _) => format!("{u} never reconnected"),
            },
            ms(longest)
        );
    }
    let _ = writeln!(
        out,
        "  workers     {} of {} finished cleanly; run {} (seed {})",
        model.workers.len() - failures.len(),
        model.workers.len(),
        secs(span_us as i64),
        cfg.seed
    );
}

fn verdict_summary(model: &Model, violations: &[Violation]) -> String {
    let writes = model.holds.iter().filter(|h| h.mode == Mode::Write).count();
    if violations.is_empty() {
        format!(
            "verdict: OK — 0 violations ({} holds checked for overlaps, {writes} writer tokens increasing)",
            model.holds.len()
        )
    } else {
        format!("verdict: FAILED — {} violations", violations.len())
    }
}

fn verdict_lines(out: &mut String, model: &Model, violations: &[Violation], t0: u64) {
    let at = |t: u64| format!("{:.3}s", (t as i64 - t0 as i64) as f64 / 1e6);
    let label = |w: usize| model.workers[w].label.as_str();
    let _ = writeln!(out, "{}", verdict_summary(model, violations));
    for v in violations.iter().take(20) {
        match v {
            Violation::Overlap { a, b } => {
                let lost = [a, b]
                    .iter()
                    .filter(|h| h.ended == HoldEnd::Lost)
                    .map(|h| format!(" ({} later reported the lock lost)", label(h.worker)))
                    .collect::<String>();
                let _ = writeln!(
                    out,
                    "  overlap: {} {:?} [{} – {}] and {} {:?} [{} – {}] by {}{lost}",
                    label(a.worker),
                    a.mode,
                    at(a.start),
                    at(a.end),
                    label(b.worker),
                    b.mode,
                    at(b.start),
                    at(b.end),
                    ms(a.end.min(b.end) - b.start),
                );
            }
            Violation::Token { before, after } => {
                let _ = writeln!(
                    out,
                    "  token: {} was granted at {} with token 0x{:x}, not larger than {}'s 0x{:x} granted at {}",
                    label(after.worker),
                    at(after.start),
                    after.token,
                    label(before.worker),
                    before.token,
                    at(before.start),
                );
            }
        }
    }
    if violations.len() > 20 {
        let _ = writeln!(out, "  ... and {} more", violations.len() - 20);
    }
}

fn print_failures(state: &State, failures: &[(usize, Vec<String>)]) {
    if failures.is_empty() {
        return;
    }
    let mut out = String::from("\nworker failures:\n");
    for (w, problems) in failures {
        let p = &state.procs[*w];
        for problem in problems {
            let _ = writeln!(out, "  {} {problem}", state.workers[*w].label);
        }
        if !p.stderr.is_empty() {
            let _ = writeln!(
                out,
                "    last {} of its {} stderr lines:",
                p.stderr.len(),
                p.stderr_lines
            );
            for line in &p.stderr {
                let _ = writeln!(out, "    | {line}");
            }
        }
    }
    print_now(&out);
}
