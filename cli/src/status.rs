//! `zk-rwlock status`: show the queue of a lock (who holds it, who waits on
//! whom), once or on every change.
//!
//! One listing of the lock directory is classified by the pure
//! [`zk_rwlock::ordering::queue`], then each contender's stat (fencing
//! token, creation time, owner session) is read with pipelined requests. In
//! `--watch` mode a children watch (or, while the directory does not exist,
//! an existence watch) is set before each snapshot, so every change after a
//! snapshot's listing triggers the next one.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::signal::unix::{signal, SignalKind};
use zk_rwlock::{zk, Contender, ContenderState, Mode, SharedLock};

use crate::common::{self, exit, Failure};

const AFTER_HELP: &str = "See `zk-rwlock status --help` for the JSON fields and exit codes.";

// (The subcommand's doc comment in main.rs sets its about text, long form
// included, so the long description lives in the after-help.)
const AFTER_LONG_HELP: &str = "\
What it shows:
  The contenders of the lock directory PATH in queue order, with each one's
  identity, mode, state (`holds`, or `waits on <node>`), fencing token (the
  node's czxid) and age. Children of PATH that are not contender nodes are
  listed as foreign: the lock ignores them. A lock directory that does not
  exist has no contenders.
  Contender nodes are ephemeral. A persistent node with a contender's name
  (made by hand or by another tool) still counts as a contender, one that
  never leaves: it is marked PERMANENT and named in a warning under the
  table, since it blocks the lock until someone deletes it.

JSON (--json): one object per snapshot:
  {\"path\": \"/locks/x\", \"contenders\": [{\"position\": 1, \"node\": <child name>,
   \"path\": <full path>, \"identity\": ..., \"token\": <uuid hex or null>,
   \"mode\": \"read\"|\"write\", \"seq\": <sequence>, \"state\": \"holds\"|\"waits\",
   \"waits_on\": <child name or null>, \"fencing_token\": <czxid or null>,
   \"session\": \"0x...\" or null, \"ephemeral\": true|false|null (false: a
   persistent node that blocks the lock until deleted),
   \"created_ms\": <ms since epoch or null>, \"age_ms\": <ms or null>}, ...],
   \"foreign\": [<child name>, ...]}
  Stat fields are null for a node deleted between listing and reading it.
  With --watch, one object per line, per change.

Exit codes:
  0    success (with --watch: stopped by Ctrl-C)
  2    usage error: bad option or argument, invalid lock path or connect string
  69   ZooKeeper unreachable
  70   other ZooKeeper error (e.g. the session expired while watching)
  77   permission denied by ZooKeeper (NoAuth)

Environment:
  ZK_CONNECT  ZooKeeper servers when --connect is not given

Examples:
  zk-rwlock status /locks/backup
  zk-rwlock status --watch /locks/backup
  zk-rwlock status --json /locks/backup | jq '.contenders[] | select(.state == \"holds\")'";

/// Arguments of `status`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP, after_long_help = AFTER_LONG_HELP)]
pub struct Args {
    /// The lock directory, an absolute ZooKeeper path like /locks/backup
    #[arg(value_name = "PATH")]
    path: String,

    /// ZooKeeper servers, host:port[,host:port...] [env: ZK_CONNECT]
    /// [default: 127.0.0.1:2181]
    #[arg(short, long, value_name = "SERVERS")]
    connect: Option<String>,

    /// Print JSON instead of a table
    #[arg(long)]
    json: bool,

    /// Print the queue again on every change, until Ctrl-C (on a terminal:
    /// redraw in place, ages refreshed every second)
    #[arg(long)]
    watch: bool,

    /// Give up connecting to ZooKeeper after DUR
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = common::parse_duration, allow_hyphen_values = true)]
    connect_timeout: Duration,
}

/// Runs `status`.
pub fn run(args: Args) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return Failure::new(exit::SOFTWARE, format!("cannot start the runtime: {e}")).report(),
    };
    let result = runtime.block_on(status(args));
    drop(runtime);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Stdout was closed (`| head`): stop quietly.
        Err(failure) if failure.code == 0 => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

async fn status(args: Args) -> Result<(), Failure> {
    // In watch mode Ctrl-C is the normal way out: catch it from the start.
    let mut interrupt = if args.watch {
        Some(
            signal(SignalKind::interrupt())
                .map_err(|e| Failure::new(exit::SOFTWARE, format!("cannot install a signal handler: {e}")))?,
        )
    } else {
        None
    };
    common::check_lock_path(&args.path)?;
    let servers = common::connect_string(args.connect.clone());
    let client = tokio::select! {
        client = common::connect(&servers, Duration::from_secs(10), args.connect_timeout) => client?,
        _ = recv(&mut interrupt) => return Ok(()),
    };
    let states = client.state_watcher();
    let result = match SharedLock::new(client, &args.path) {
        Ok(lock) => {
            let out = Output::new(args.json, args.watch);
            if args.watch {
                watch(&lock, &out, &mut interrupt).await
            } else {
                once(&lock, &out).await
            }
        }
        Err(e) => Err(Failure::from(e)),
    };
    common::await_session_end(states, Duration::from_secs(2)).await;
    result
}

/// Waits for the signal, if one is being caught; forever otherwise.
async fn recv(signal: &mut Option<tokio::signal::unix::Signal>) {
    match signal {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// One snapshot, printed once.
async fn once(lock: &SharedLock, out: &Output) -> Result<(), Failure> {
    let s = lock.snapshot().await.map_err(Failure::from)?;
    let snapshot = Snapshot {
        path: lock.path().to_owned(),
        exists: s.exists,
        contenders: s.contenders,
        foreign: s.foreign,
    };
    out.show(&snapshot).map_err(write_failure)
}

/// Snapshots on every change of the lock directory, until Ctrl-C.
async fn watch(
    lock: &SharedLock,
    out: &Output,
    interrupt: &mut Option<tokio::signal::unix::Signal>,
) -> Result<(), Failure> {
    let client = lock.client();
    let dir = lock.path();
    loop {
        // Read the directory and leave a watch that fires on the next change.
        let listed = tokio::select! {
            listed = list_and_watch(client, dir) => listed?,
            _ = recv(interrupt) => return Ok(()),
        };
        let Some((_, watcher)) = listed else {
            continue;
        };
        let snapshot = tokio::select! {
            snapshot = describe(lock) => snapshot?,
            _ = recv(interrupt) => return Ok(()),
        };
        out.show(&snapshot).map_err(write_failure)?;
        let changed = watcher.changed();
        tokio::pin!(changed);
        let mut ticks = tokio::time::interval(Duration::from_secs(1));
        ticks.tick().await;
        let event = loop {
            tokio::select! {
                event = &mut changed => break event,
                _ = recv(interrupt) => return Ok(()),
                _ = ticks.tick(), if out.redraw => out.show(&snapshot).map_err(write_failure)?,
            }
        };
        tracing::debug!(?event, "lock directory changed");
        if let Some(err) = zk_rwlock::Error::from_session_state(event.session_state) {
            let what = common::session_end(&err).unwrap_or("the ZooKeeper session ended");
            return Err(Failure::new(
                exit::SOFTWARE,
                format!("{what} while watching {dir}"),
            ));
        }
    }
}

/// Lists the directory with a children watch, or, if it does not exist,
/// sets an existence watch. `None`: try again (it appeared meanwhile, or
/// the connection was lost).
async fn list_and_watch(
    client: &zk::Client,
    dir: &str,
) -> Result<Option<(Option<Vec<String>>, zk::OneshotWatcher)>, Failure> {
    match client.list_and_watch_children(dir).await {
        Ok((children, watcher)) => Ok(Some((Some(children), watcher))),
        Err(zk::Error::NoNode) => match client.check_and_watch_stat(dir).await {
            Ok((None, watcher)) => Ok(Some((None, watcher))),
            // Created in between: list it. (The existence watch fires on
            // the next change of the node and is then gone.)
            Ok((Some(_), _)) => Ok(None),
            Err(e) if zk_rwlock::is_retryable(&e) => Ok(None),
            Err(e) => Err(common::zk_failure(e, dir)),
        },
        Err(e) if zk_rwlock::is_retryable(&e) => {
            // Requests wait for the reconnection; this only avoids a spin if
            // the client reports the loss at once.
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(None)
        }
        Err(e) => Err(common::zk_failure(e, dir)),
    }
}

/// What `status` shows: the lock directory at one moment.
struct Snapshot {
    path: String,
    /// Whether the lock directory exists.
    exists: bool,
    contenders: Vec<Contender>,
    foreign: Vec<String>,
}

/// A snapshot taken after the watch was set: any change after it fires
/// the watch (the library sends all stat requests at once).
async fn describe(lock: &SharedLock) -> Result<Snapshot, Failure> {
    let s = lock.snapshot().await.map_err(Failure::from)?;
    Ok(Snapshot {
        path: lock.path().to_owned(),
        exists: s.exists,
        contenders: s.contenders,
        foreign: s.foreign,
    })
}

/// How snapshots are printed.
struct Output {
    json: bool,
    watch: bool,
    /// Redraw in place (a terminal in watch mode).
    redraw: bool,
    /// Whether a snapshot was printed already.
    printed: std::cell::Cell<bool>,
}

impl Output {
    fn new(json: bool, watch: bool) -> Output {
        Output {
            json,
            watch,
            redraw: watch && !json && io::stdout().is_terminal(),
            printed: std::cell::Cell::new(false),
        }
    }

    fn show(&self, snapshot: &Snapshot) -> io::Result<()> {
        let now = SystemTime::now();
        let mut text = String::new();
        if self.json {
            let value = json(snapshot, now);
            let encoded = if self.watch {
                serde_json::to_string(&value)
            } else {
                serde_json::to_string_pretty(&value)
            };
            text.push_str(&encoded.map_err(io::Error::other)?);
            text.push('\n');
        } else {
            if self.redraw {
                text.push_str("\x1b[H\x1b[2J");
                text.push_str(&format!("watching {} (Ctrl-C to quit)\n\n", snapshot.path));
            } else if self.watch && self.printed.get() {
                text.push('\n');
            }
            text.push_str(&table(snapshot, now));
        }
        self.printed.set(true);
        let mut stdout = io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()
    }
}

fn write_failure(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        // The reader went away (`| head`): nothing more to say.
        Failure::new(0, "output closed")
    } else {
        Failure::new(exit::SOFTWARE, format!("cannot write to stdout: {e}"))
    }
}

/// The human-readable form.
fn table(snapshot: &Snapshot, now: SystemTime) -> String {
    let mut out = String::new();
    let n = snapshot.contenders.len();
    if n == 0 {
        let why = if snapshot.exists {
            ""
        } else {
            " (the lock directory does not exist)"
        };
        out.push_str(&format!("{}: no contenders{why}\n", snapshot.path));
    } else {
        let holding = snapshot
            .contenders
            .iter()
            .filter(|c| c.state == ContenderState::Holds)
            .count();
        out.push_str(&format!(
            "{}: {n} contender{}, {holding} holding, {} waiting\n",
            snapshot.path,
            if n == 1 { "" } else { "s" },
            n - holding
        ));
        let mut rows = vec![["POS", "NODE", "IDENTITY", "MODE", "STATE", "TOKEN", "AGE"].map(str::to_owned)];
        for (i, c) in snapshot.contenders.iter().enumerate() {
            rows.push([
                (i + 1).to_string(),
                c.name.to_string(),
                c.name.identity().to_owned(),
                c.name.mode().to_string(),
                {
                    let mut state = match &c.state {
                        ContenderState::Holds => "holds".to_owned(),
                        ContenderState::WaitsOn(node) => format!("waits on {node}"),
                        _ => "sequence at the limit: never granted".to_owned(),
                    };
                    if c.is_persistent() {
                        state.push_str(" (PERMANENT node)");
                    }
                    state
                },
                c.fencing_token.map_or_else(|| "-".to_owned(), |t| t.to_string()),
                c.created
                    .map_or_else(|| "gone".to_owned(), |t| format_age(age(t, now))),
            ]);
        }
        let mut widths = [0usize; 7];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for row in &rows {
            let mut line = String::new();
            for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                // Numbers right-aligned, text left-aligned.
                if matches!(i, 0 | 5 | 6) {
                    line.push_str(&format!("{cell:>w$}"));
                } else {
                    line.push_str(&format!("{cell:<w$}"));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        for c in snapshot.contenders.iter().filter(|c| c.is_persistent()) {
            out.push_str(&permanent_warning(&c.path));
        }
    }
    if !snapshot.foreign.is_empty() {
        out.push_str(&format!(
            "foreign children (not contender nodes; the lock ignores them): {}\n",
            snapshot.foreign.join(", ")
        ));
    }
    out
}

/// The warning under the table for a persistent node with a contender's name.
fn permanent_warning(path: &str) -> String {
    format!(
        "WARNING: {path} is a PERMANENT node, not a lock holder or waiter: contender nodes are \
         ephemeral, and this one never goes away by itself, so it blocks the lock until it is \
         deleted (zkCli.sh: `delete {path}`, or `deleteall {path}` if it has children)\n"
    )
}

/// The JSON form.
#[derive(Serialize)]
struct JsonStatus<'a> {
    path: &'a str,
    contenders: Vec<JsonContender>,
    foreign: &'a [String],
}

#[derive(Serialize)]
struct JsonContender {
    position: usize,
    node: String,
    path: String,
    identity: String,
    token: Option<String>,
    mode: &'static str,
    seq: i32,
    state: &'static str,
    waits_on: Option<String>,
    fencing_token: Option<i64>,
    session: Option<String>,
    /// False for a persistent node with a contender's name: it blocks the lock until deleted.
    ephemeral: Option<bool>,
    created_ms: Option<i64>,
    age_ms: Option<u64>,
}

fn json(snapshot: &Snapshot, now: SystemTime) -> JsonStatus<'_> {
    let contenders = snapshot
        .contenders
        .iter()
        .enumerate()
        .map(|(i, c)| JsonContender {
            position: i + 1,
            node: c.name.to_string(),
            path: c.path.clone(),
            identity: c.name.identity().to_owned(),
            token: c.name.token().map(|t| t.simple().to_string()),
            mode: match c.name.mode() {
                Mode::Read => "read",
                Mode::Write => "write",
            },
            seq: c.name.seq(),
            state: match c.state {
                ContenderState::Holds => "holds",
                ContenderState::WaitsOn(_) => "waits",
                _ => "exhausted",
            },
            waits_on: match &c.state {
                ContenderState::WaitsOn(node) => Some(node.clone()),
                _ => None,
            },
            fencing_token: c.fencing_token,
            session: c.session.map(|s| format!("{:#x}", s as u64)),
            ephemeral: c.session.map(|s| s != 0),
            created_ms: c
                .created
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as i64),
            age_ms: c.created.map(|t| age(t, now).as_millis() as u64),
        })
        .collect();
    JsonStatus {
        path: &snapshot.path,
        contenders,
        foreign: &snapshot.foreign,
    }
}

/// Time since `created` (the server's clock), zero if that lies ahead of ours.
fn age(created: SystemTime, now: SystemTime) -> Duration {
    now.duration_since(created).unwrap_or_default()
}

/// `850ms`, `3.2s`, `4m05s`, `2h03m`, `3d04h`.
fn format_age(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 1 {
        format!("{}ms", d.as_millis())
    } else if secs < 60 {
        format!("{:.1}s", d.as_secs_f64())
    } else if secs < 3600 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else if secs < 86400 {
        format!("{}h{:02}m", secs / 3600, secs % 3600 / 60)
    } else {
        format!("{}d{:02}h", secs / 86400, secs % 86400 / 3600)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages() {
        assert_eq!(format_age(Duration::from_millis(850)), "850ms");
        assert_eq!(format_age(Duration::from_millis(3240)), "3.2s");
        assert_eq!(format_age(Duration::from_secs(245)), "4m05s");
        assert_eq!(format_age(Duration::from_secs(2 * 3600 + 180)), "2h03m");
        assert_eq!(format_age(Duration::from_secs(3 * 86400 + 4 * 3600)), "3d04h");
    }

    #[test]
    fn permanent_nodes_are_flagged() {
        let contender = |name: &str, state, session| {
            let mut c = Contender::new("/x", name.parse().unwrap(), state);
            (c.fencing_token, c.created, c.session) = (Some(7), Some(UNIX_EPOCH), session);
            c
        };
        let s = Snapshot {
            path: "/x".to_owned(),
            exists: true,
            contenders: vec![
                contender("a-W-0000000000", ContenderState::Holds, Some(0)),
                contender(
                    "b-R-0000000001",
                    ContenderState::WaitsOn("a-W-0000000000".to_owned()),
                    Some(0x1234),
                ),
            ],
            foreign: Vec::new(),
        };
        let now = SystemTime::now();
        let t = table(&s, now);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[2].contains("holds (PERMANENT node)"), "{t}");
        assert!(!lines[3].contains("PERMANENT"), "{t}");
        assert_eq!(lines[4], permanent_warning("/x/a-W-0000000000").trim_end(), "{t}");
        assert!(lines[4].contains("`delete /x/a-W-0000000000`"), "{t}");
        assert_eq!(lines.len(), 5, "{t}");
        let j = serde_json::to_value(json(&s, now)).unwrap();
        assert_eq!(j["contenders"][0]["ephemeral"], false);
        assert_eq!(j["contenders"][0]["session"], "0x0");
        assert_eq!(j["contenders"][1]["ephemeral"], true);
    }

    #[test]
    fn empty_and_missing_directories() {
        let mut s = Snapshot {
            path: "/x".to_owned(),
            exists: false,
            contenders: Vec::new(),
            foreign: Vec::new(),
        };
        assert_eq!(
            table(&s, SystemTime::now()),
            "/x: no contenders (the lock directory does not exist)\n"
        );
        s.exists = true;
        s.foreign.push("junk".to_owned());
        let t = table(&s, SystemTime::now());
        assert!(t.starts_with("/x: no contenders\n"), "{t}");
        assert!(t.contains("junk"), "{t}");
    }
}
