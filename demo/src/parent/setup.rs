//! Setting up: the parent's own session, the fenced store, the proxies of
//! --partition and the worker processes.

use std::future::poll_fn;
use std::pin::Pin;
use std::process::{ExitCode, Stdio};
use std::task::Poll;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::process::{ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};
use zk_rwlock::{zk, Mode, SharedLock};
use zk_rwlock_testkit::fenced_store::FencedStore;

use super::partition::Partition;
use super::{Msg, Proc, State};
use crate::event::Line;
use crate::verdict::Worker;
use crate::worker::SplitMix64;
use crate::Config;

/// What [`start`] set up: the parent's session, the running workers and
/// the proxies of --partition.
pub(super) struct Setup {
    /// The parent's session, kept to clean up a server that outlives the
    /// demo (`--connect`).
    pub(super) client: Option<zk::Client>,
    /// The parent's session, which watches the node of a cut-off worker
    /// (--partition).
    pub(super) watcher: zk::Client,
    /// Everything seen so far.
    pub(super) state: State,
    /// What the per-worker tasks report.
    pub(super) rx: mpsc::UnboundedReceiver<Msg>,
    /// The workers' stdins.
    pub(super) stdins: Vec<Option<ChildStdin>>,
    /// The senders that kill the workers.
    pub(super) kills: Vec<Option<oneshot::Sender<()>>>,
    /// The worker to cut off (--partition) and its proxies.
    pub(super) partition: Option<Partition>,
    /// The fenced store the writers write to, removed when dropped.
    pub(super) _store: StoreDir,
}

/// Checks the server and the path, then starts the workers. An error is
/// printed; it comes back as the exit code.
pub(super) async fn start(cfg: &Config, connect: &str) -> Result<Setup, ExitCode> {
    // The parent's own session: is the server there, is the path valid?
    let client = match connect_parent(cfg, connect).await {
        Ok(client) => client,
        Err(e) => {
            eprintln!("zk-rwlock demo: error: {e}");
            return Err(ExitCode::FAILURE);
        }
    };
    if let Err(e) = SharedLock::new(client.clone(), &cfg.path) {
        eprintln!("zk-rwlock demo: error: {e}");
        return Err(ExitCode::from(2));
    }
    // The session watches the node of a cut-off worker (--partition), and
    // cleans up a server that outlives the demo.
    let watcher = client.clone();
    let client = cfg.connect.is_some().then_some(client);

    let workers = workers(cfg);
    let n = workers.len();
    let (tx, rx) = mpsc::unbounded_channel();
    let state = State {
        workers: workers.clone(),
        procs: (0..n).map(|_| Proc::default()).collect(),
        events: Vec::new(),
        permits: cfg.permits,
    };
    // The fenced store the writers write to, for this run only.
    let store = StoreDir(std::env::temp_dir().join(format!("zk-rwlock-demo-store-{}", std::process::id())));
    if let Err(e) = FencedStore::open(&store.0) {
        eprintln!(
            "zk-rwlock demo: error: cannot create the fenced store in {}: {e}",
            store.0.display()
        );
        return Err(ExitCode::FAILURE);
    }
    // The worker to cut off reaches ZooKeeper through proxies of its own.
    let mut partition = None;
    if cfg.partition {
        match Partition::start(connect) {
            Ok(p) => partition = Some(p),
            Err(e) => {
                eprintln!("zk-rwlock demo: error: cannot start the proxies of --partition: {e}");
                return Err(ExitCode::FAILURE);
            }
        }
    }
    let (stdins, kills) = spawn_workers(cfg, connect, &workers, &store, partition.as_ref(), &tx)?;
    drop(tx);
    Ok(Setup {
        client,
        watcher,
        state,
        rx,
        stdins,
        kills,
        partition,
        _store: store,
    })
}

/// The workers of `cfg`: the writers `W1`, ..., then the readers `R1`, ...;
/// with --permits the contenders `P1`, ..., each holding a permit as a
/// writer holds the lock (its guard is a write guard).
fn workers(cfg: &Config) -> Vec<Worker> {
    let permits = (1..=cfg.contenders).map(|i| Worker {
        label: format!("P{i}"),
        mode: Mode::Write,
    });
    (1..=cfg.writers)
        .map(|i| Worker {
            label: format!("W{i}"),
            mode: Mode::Write,
        })
        .chain((1..=cfg.readers).map(|i| Worker {
            label: format!("R{i}"),
            mode: Mode::Read,
        }))
        .chain(permits)
        .collect()
}

/// Starts every worker; the one to cut off (--partition) reaches ZooKeeper
/// through its proxies. Returns their stdins and the senders that kill them.
#[allow(clippy::type_complexity)]
fn spawn_workers(
    cfg: &Config,
    connect: &str,
    workers: &[Worker],
    store: &StoreDir,
    partition: Option<&Partition>,
    tx: &mpsc::UnboundedSender<Msg>,
) -> Result<(Vec<Option<ChildStdin>>, Vec<Option<oneshot::Sender<()>>>), ExitCode> {
    let mut stdins: Vec<Option<ChildStdin>> = Vec::new();
    let mut kills: Vec<Option<oneshot::Sender<()>>> = Vec::new();
    for (w, worker) in workers.iter().enumerate() {
        let connect = match partition {
            Some(p) if w == p.victim => p.connect.as_str(),
            _ => connect,
        };
        match spawn_worker(w, worker, cfg, (connect, &store.0), tx) {
            Ok((stdin, kill)) => {
                stdins.push(Some(stdin));
                kills.push(Some(kill));
            }
            Err(e) => {
                eprintln!("zk-rwlock demo: error: {e}");
                return Err(ExitCode::FAILURE);
            }
        }
    }
    Ok((stdins, kills))
}

/// Connects the parent's own session (to check the server and the path).
async fn connect_parent(cfg: &Config, connect: &str) -> Result<zk::Client, String> {
    let options = cfg
        .security
        .options(Duration::from_secs(10), Duration::from_secs(15))
        .map_err(|f| f.message)?;
    zk_rwlock::connect_client_with(connect, &options)
        .await
        .map_err(|e| zk_rwlock_cli::Failure::from(e).message)
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
pub(super) async fn write_all<W: AsyncWrite + Unpin>(w: &mut W, mut data: &[u8]) -> std::io::Result<()> {
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
fn tls_args(security: &zk_rwlock_cli::connection::Security) -> Vec<std::ffi::OsString> {
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
        Some(auth) => cmd.env(zk_rwlock_cli::connection::AUTH_ENV, auth),
        None => cmd.env_remove(zk_rwlock_cli::connection::AUTH_ENV),
    };
    cmd.arg("worker")
        .args(["--connect", connect, "--path", &cfg.path]);
    match cfg.permits {
        Some(n) => cmd.args(["--permits", &n.to_string()]),
        None => cmd.args([
            "--mode",
            match worker.mode {
                Mode::Read => "read",
                Mode::Write => "write",
            },
        ]),
    };
    cmd.args(["--duration", &format!("{}", cfg.duration.as_secs_f64())])
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
pub(super) struct StoreDir(std::path::PathBuf);

impl Drop for StoreDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
