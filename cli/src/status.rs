//! `zk-rwlock status`: show the queue of one or more locks (who holds
//! each, who waits on whom), once or on every change.
//!
//! One listing of the lock directory is classified by the pure
//! [`zk_rwlock::ordering::queue`], then each contender's stat (fencing
//! token, creation time, owner session) is read with pipelined requests. In
//! `--watch` mode a children watch (or, while the directory does not exist,
//! an existence watch) is set before each snapshot, so every change after a
//! snapshot's listing triggers the next one.
//!
//! With several paths, each directory is listed (with its watch) and then
//! described in turn; a change in any of them triggers the next round.
//! Contenders of different paths owned by the same ZooKeeper session (the
//! parts of one multi-lock, or locks taken by one client) are linked.

use std::collections::HashMap;
use std::future::Future;
use std::io::{self, IsTerminal, Write};
use std::pin::Pin;
use std::process::ExitCode;
use std::task::Poll;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::signal::unix::{signal, SignalKind};
use zk_rwlock::{ordering, zk, Contender, ContenderState, Layout, Mode, SharedLock};

use zk_rwlock_cli::common;
use zk_rwlock_cli::connection;
use zk_rwlock_cli::failure::{self, exit, Failure};

const AFTER_HELP: &str = "See `zk-rwlock status --help` for the JSON fields and exit codes.";

// (The subcommand's doc comment in main.rs sets its about text, long form
// included, so the long description lives in the after-help.)
const AFTER_LONG_HELP: &str = "\
What it shows:
  The contenders of each lock directory PATH in queue order, with each one's
  identity, mode, state (`holds`, or `waits on <node>`), fencing token (the
  node's czxid) and age. Apache Curator's and kazoo's contenders (see
  `zk-rwlock exec --layout`) count too, in their modes; their identity
  column names the library that wrote them. Children of PATH that are not
  contender nodes in any layout are listed as foreign: the lock ignores
  them. A lock directory that does not exist has no contenders.
  A queue that mixes layouts gets a warning under the table for each peer
  library that does not recognise some of its contenders (Curator's
  read/write lock and its mutex, and kazoo, each see only their own nodes).
  With --layout (env ZK_RWLOCK_LAYOUT, as for exec) set to a peer's layout,
  only that library's warning: the contenders it would not recognise, even
  before its own nodes are queued. Every layout's nodes are shown whatever
  it says. A kazoo `__lock__` node shown waiting behind kazoo `__rlock__`
  nodes gets a warning: it may be a kazoo Lock (not WriteLock), which holds
  beside readers.
  Contender nodes are ephemeral. A persistent node with a contender's name
  (made by hand or by another tool) still counts as a contender, one that
  never leaves: it is marked PERMANENT and named in a warning under the
  table, since it blocks the lock until someone deletes it.
  A lock directory used for an election (`zk-rwlock lead`, the library's
  Election) gets a line `leader: <identity> (term <token>, node <node>)`
  under the summary while its head writer holds and has announced itself
  (its node's data is `leader:<identity>`); a head writer that holds but
  has not announced itself yet (its client has not learned of its grant)
  is not named. With --watch the head writer's node is watched too, so the
  announcement shows at once. JSON: \"leader\": {\"identity\", \"node\",
  \"term\"}, present only then.

Several paths:
  Each path's queue in turn, in the order given, separated by a blank line;
  each starts with its summary line naming the path. The table gets one more
  column, ALSO IN: the other given paths where the same ZooKeeper session has
  a contender (`-` if none). That is how the parts of a multi-lock show up
  (all parts of a MultiLock share its client's session), but separate locks
  taken over one client are linked the same way. Persistent (PERMANENT)
  nodes have no session and are never linked. A path given twice is a usage
  error. With --watch, all paths are shown again on a change in any of them.

JSON (--json): one object per snapshot:
  {\"path\": \"/locks/x\", \"contenders\": [{\"position\": 1, \"node\": <child name>,
   \"path\": <full path>, \"identity\": ..., \"layout\": \"native\"|\"curator\"|
   \"curator-mutex\"|\"kazoo\", \"token\": <uuid hex or null>,
   \"mode\": \"read\"|\"write\", \"seq\": <sequence>, \"state\": \"holds\"|\"waits\",
   \"waits_on\": <child name or null>, \"fencing_token\": <czxid or null>,
   \"session\": \"0x...\" or null, \"ephemeral\": true|false|null (false: a
   persistent node that blocks the lock until deleted),
   \"created_ms\": <ms since epoch or null>, \"age_ms\": <ms or null>}, ...],
   \"foreign\": [<child name>, ...]}
  Stat fields are null for a node deleted between listing and reading it.
  With --watch, one object per line, per change.
  Several paths: one object {\"locks\": [<the object above, per path, in the
  order given>, ...]}, where each contender also has \"also_in\": [<other
  given path where the same session has a contender>, ...] (empty if none).
  With --watch, one such object per line, per change in any of the paths.

Exit codes:
  0    success (with --watch: stopped by Ctrl-C)
  2    usage error: bad option or argument, invalid lock path (named) or connect
       string, a path given twice
  69   ZooKeeper unreachable
  70   other ZooKeeper error (e.g. the session expired while watching)
  77   permission denied by ZooKeeper (NoAuth), or credentials rejected
       (AuthFailed)

Environment:
  ZK_CONNECT  ZooKeeper servers when --connect is not given
  ZK_RWLOCK_AUTH  --auth when it is not given (out of sight of ps)

Examples:
  zk-rwlock status /locks/backup
  zk-rwlock status --watch /locks/backup
  zk-rwlock status /locks/db /locks/rates
  zk-rwlock status --json /locks/backup | jq '.contenders[] | select(.state == \"holds\")'";

/// Arguments of `status`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP, after_long_help = AFTER_LONG_HELP)]
pub struct Args {
    /// The lock directory, an absolute ZooKeeper path like /locks/backup;
    /// several: each one's queue in turn, contenders of one session linked
    #[arg(value_name = "PATH", required = true, num_args = 1..)]
    paths: Vec<String>,

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

    /// The layout your clients of PATH use (as `exec --layout`): native,
    /// curator, curator-mutex, kazoo. Every layout's nodes are shown
    /// whatever this says; with a peer layout, the warning under the table
    /// names the contenders that library would not recognise
    #[arg(long, value_name = "LAYOUT", env = "ZK_RWLOCK_LAYOUT", value_parser = common::parse_layout)]
    layout: Option<Layout>,

    #[command(flatten)]
    security: connection::Security,
}

/// Runs `status`.
pub fn run(args: Args) -> ExitCode {
    match common::block_on(status(args)) {
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
    for (i, path) in args.paths.iter().enumerate() {
        common::check_lock_path(path)?;
        if args.paths[..i].contains(path) {
            return Err(Failure::new(
                exit::USAGE,
                format!("lock path `{path}` given twice"),
            ));
        }
    }
    let servers = connection::connect_string(args.connect.clone());
    let client = tokio::select! {
        client = args.security.connect(&servers, Duration::from_secs(10), args.connect_timeout) => client?,
        _ = recv(&mut interrupt) => return Ok(()),
    };
    let states = client.state_watcher();
    let locks: Result<Vec<SharedLock>, _> = args
        .paths
        .iter()
        .map(|path| SharedLock::new(client.clone(), path))
        .collect();
    drop(client);
    let result = match locks {
        Ok(locks) => {
            let out = Output::new(args.json, args.watch, locks.len() > 1, args.layout);
            if args.watch {
                watch(&locks, &out, &mut interrupt).await
            } else {
                once(&locks, &out).await
            }
        }
        Err(e) => Err(Failure::from(e)),
    };
    connection::await_session_end(states, Duration::from_secs(2)).await;
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

/// One snapshot of each lock, printed once.
async fn once(locks: &[SharedLock], out: &Output) -> Result<(), Failure> {
    let snapshots = describe_all(locks, false).await?;
    out.show(&snapshots).map_err(write_failure)
}

/// Snapshots on every change of any of the lock directories, until Ctrl-C.
async fn watch(
    locks: &[SharedLock],
    out: &Output,
    interrupt: &mut Option<tokio::signal::unix::Signal>,
) -> Result<(), Failure> {
    loop {
        // Read each directory and leave a watch that fires on its next change.
        let mut watchers = Vec::with_capacity(locks.len());
        for lock in locks {
            let watcher = loop {
                let listed = tokio::select! {
                    listed = list_and_watch(lock.client(), lock.path()) => listed?,
                    _ = recv(interrupt) => return Ok(()),
                };
                if let Some((_, watcher)) = listed {
                    break watcher;
                }
            };
            watchers.push((lock.path(), watcher));
        }
        let mut snapshots = tokio::select! {
            snapshots = describe_all(locks, true) => snapshots?,
            _ = recv(interrupt) => return Ok(()),
        };
        out.show(&snapshots).map_err(write_failure)?;
        // A holding head writer's node is watched too: its announcement
        // (a data change) makes it an election's leader.
        for (lock, snapshot) in locks.iter().zip(snapshots.iter_mut()) {
            if let Some(w) = snapshot.head_watch.take() {
                watchers.push((lock.path(), w));
            }
        }
        let mut changed: Vec<Changed<'_>> = watchers
            .into_iter()
            .map(|(dir, w)| Box::pin(async move { (dir, w.changed().await) }) as Changed<'_>)
            .collect();
        // The first of the watches to fire.
        let any = std::future::poll_fn(|cx| {
            for changed in changed.iter_mut() {
                if let Poll::Ready(fired) = changed.as_mut().poll(cx) {
                    return Poll::Ready(fired);
                }
            }
            Poll::Pending
        });
        tokio::pin!(any);
        let mut ticks = tokio::time::interval(Duration::from_secs(1));
        ticks.tick().await;
        let (dir, event) = loop {
            tokio::select! {
                fired = &mut any => break fired,
                _ = recv(interrupt) => return Ok(()),
                _ = ticks.tick(), if out.redraw => out.show(&snapshots).map_err(write_failure)?,
            }
        };
        tracing::debug!(?event, dir, "lock directory changed");
        if let Some(err) = zk_rwlock::Error::from_session_state(event.session_state) {
            let what = failure::session_end(&err).unwrap_or("the ZooKeeper session ended");
            return Err(Failure::new(
                exit::SOFTWARE,
                format!("{what} while watching {dir}"),
            ));
        }
    }
}

/// A lock directory's watch firing: the directory and the event.
type Changed<'a> = Pin<Box<dyn Future<Output = (&'a str, zk::WatchedEvent)> + 'a>>;

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
            Err(e) => Err(failure::zk_failure(e, dir)),
        },
        Err(e) if zk_rwlock::is_retryable(&e) => {
            // Requests wait for the reconnection; this only avoids a spin if
            // the client reports the loss at once.
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(None)
        }
        Err(e) => Err(failure::zk_failure(e, dir)),
    }
}

/// What `status` shows: the lock directory at one moment.
struct Snapshot {
    path: String,
    /// Whether the lock directory exists.
    exists: bool,
    contenders: Vec<Contender>,
    foreign: Vec<String>,
    /// With several paths: for each contender, the other given paths where
    /// its session has a contender. `None` with one path.
    also_in: Option<Vec<Vec<String>>>,
    /// The elected leader, when the directory is used for an election: the
    /// head writer, holding, whose node carries its announcement.
    leader: Option<Leader>,
    /// With --watch: a data watch on the holding head writer's node.
    head_watch: Option<zk::OneshotWatcher>,
}

/// An election's leader as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct Leader {
    identity: String,
    node: String,
    term: Option<i64>,
}

/// A snapshot taken after the watch was set: any change after it fires
/// the watch (the library sends all stat requests at once).
async fn describe(lock: &SharedLock, watch: bool) -> Result<Snapshot, Failure> {
    let s = lock.snapshot().await.map_err(Failure::from)?;
    let (leader, head_watch) = leader(lock, &s.contenders, watch).await;
    Ok(Snapshot {
        path: lock.path().to_owned(),
        exists: s.exists,
        contenders: s.contenders,
        foreign: s.foreign,
        also_in: None,
        leader,
        head_watch,
    })
}

/// The election's leader in a snapshot: its head writer, if it holds and
/// its node carries its announcement (one read of the node; see
/// [`zk_rwlock::election`]). `None` for a plain lock, or if the read fails.
/// With `watch`, the read leaves a data watch on the node, returned too.
async fn leader(
    lock: &SharedLock,
    contenders: &[Contender],
    watch: bool,
) -> (Option<Leader>, Option<zk::OneshotWatcher>) {
    let Some(head) = contenders.first() else {
        return (None, None);
    };
    // A persistent look-alike is no candidate (candidates are ephemeral).
    if head.state != ContenderState::Holds || head.name.mode() != Mode::Write || head.is_persistent() {
        return (None, None);
    }
    let client = lock.client();
    let (data, watcher) = if watch {
        match client.get_and_watch_data(&head.path).await {
            Ok((data, _, watcher)) => (data, Some(watcher)),
            Err(_) => return (None, None),
        }
    } else {
        match client.get_data(&head.path).await {
            Ok((data, _)) => (data, None),
            Err(_) => return (None, None),
        }
    };
    let name = head.name.to_string();
    let leader = zk_rwlock::election::rules::announces(&name, &data).then(|| Leader {
        identity: head.name.identity().to_owned(),
        node: name,
        term: head.fencing_token,
    });
    (leader, watcher)
}

/// A snapshot of each lock in turn; with several, contenders are linked
/// across paths by session.
async fn describe_all(locks: &[SharedLock], watch: bool) -> Result<Vec<Snapshot>, Failure> {
    let mut snapshots = Vec::with_capacity(locks.len());
    for lock in locks {
        snapshots.push(describe(lock, watch).await?);
    }
    if snapshots.len() > 1 {
        link_sessions(&mut snapshots);
    }
    Ok(snapshots)
}

/// Fills in `also_in`: for each contender, the other paths where a
/// contender has the same session. Session 0 (a persistent node) and
/// unknown sessions (a node gone before its stat was read) link nothing.
fn link_sessions(snapshots: &mut [Snapshot]) {
    let mut paths_of: HashMap<i64, Vec<&str>> = HashMap::new();
    for s in snapshots.iter() {
        for c in &s.contenders {
            if let Some(session) = c.session.filter(|&id| id != 0) {
                let paths = paths_of.entry(session).or_default();
                if !paths.contains(&s.path.as_str()) {
                    paths.push(&s.path);
                }
            }
        }
    }
    let linked: Vec<Vec<Vec<String>>> = snapshots
        .iter()
        .map(|s| {
            s.contenders
                .iter()
                .map(|c| match c.session.and_then(|id| paths_of.get(&id)) {
                    Some(paths) => paths
                        .iter()
                        .filter(|&&p| p != s.path)
                        .map(|&p| p.to_owned())
                        .collect(),
                    None => Vec::new(),
                })
                .collect()
        })
        .collect();
    for (s, also_in) in snapshots.iter_mut().zip(linked) {
        s.also_in = Some(also_in);
    }
}

/// How snapshots are printed.
struct Output {
    json: bool,
    watch: bool,
    /// Several paths: `{"locks": [...]}` in JSON, sections in text.
    several: bool,
    /// Redraw in place (a terminal in watch mode).
    redraw: bool,
    /// Whether a snapshot was printed already.
    printed: std::cell::Cell<bool>,
    /// `--layout`: the layout whose blind spots the warnings name.
    layout: Option<Layout>,
}

impl Output {
    fn new(json: bool, watch: bool, several: bool, layout: Option<Layout>) -> Output {
        Output {
            layout,
            json,
            watch,
            several,
            redraw: watch && !json && io::stdout().is_terminal(),
            printed: std::cell::Cell::new(false),
        }
    }

    fn show(&self, snapshots: &[Snapshot]) -> io::Result<()> {
        let now = SystemTime::now();
        let mut text = String::new();
        if self.json {
            let encoded = if self.several {
                let value = JsonLocks {
                    locks: snapshots.iter().map(|s| json(s, now)).collect(),
                };
                if self.watch {
                    serde_json::to_string(&value)
                } else {
                    serde_json::to_string_pretty(&value)
                }
            } else {
                let value = json(&snapshots[0], now);
                if self.watch {
                    serde_json::to_string(&value)
                } else {
                    serde_json::to_string_pretty(&value)
                }
            };
            text.push_str(&encoded.map_err(io::Error::other)?);
            text.push('\n');
        } else {
            if self.redraw {
                text.push_str("\x1b[H\x1b[2J");
                let paths: Vec<&str> = snapshots.iter().map(|s| s.path.as_str()).collect();
                text.push_str(&format!("watching {} (Ctrl-C to quit)\n\n", paths.join(", ")));
            } else if self.watch && self.printed.get() {
                text.push('\n');
            }
            for (i, snapshot) in snapshots.iter().enumerate() {
                if i > 0 {
                    text.push('\n');
                }
                text.push_str(&table(snapshot, now, self.layout));
            }
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
fn table(snapshot: &Snapshot, now: SystemTime, layout: Option<Layout>) -> String {
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
        if let Some(leader) = &snapshot.leader {
            let term = leader.term.map_or_else(|| "-".to_owned(), |t| t.to_string());
            out.push_str(&format!(
                "leader: {} (term {term}, node {})\n",
                leader.identity, leader.node
            ));
        }
        let mut rows = vec![[
            "POS", "NODE", "IDENTITY", "MODE", "STATE", "TOKEN", "AGE", "ALSO IN",
        ]
        .map(str::to_owned)];
        for (i, c) in snapshot.contenders.iter().enumerate() {
            rows.push([
                (i + 1).to_string(),
                c.name.to_string(),
                identity_cell(&c.name),
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
                match snapshot.also_in.as_ref().map(|a| &a[i]) {
                    Some(paths) if !paths.is_empty() => paths.join(","),
                    _ => "-".to_owned(),
                },
            ]);
        }
        // The ALSO IN column only with several paths.
        let columns = if snapshot.also_in.is_some() { 8 } else { 7 };
        let mut widths = [0usize; 8];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for row in &rows {
            let mut line = String::new();
            for (i, (cell, w)) in row.iter().zip(widths).take(columns).enumerate() {
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
        out.push_str(&layout_warnings(&snapshot.contenders, layout));
        out.push_str(&kazoo_lock_warnings(&snapshot.contenders));
    }
    if !snapshot.foreign.is_empty() {
        out.push_str(&format!(
            "foreign children (not contender nodes; the lock ignores them): {}\n",
            snapshot.foreign.join(", ")
        ));
    }
    out
}

/// The IDENTITY cell: a native contender's identity; for a peer's, which
/// library wrote it (its name carries no identity).
fn identity_cell(name: &zk_rwlock::NodeName) -> String {
    match name.layout() {
        Layout::Native => name.identity().to_owned(),
        layout => format!("({})", layout.library()),
    }
}

/// Warnings under the table for a queue that mixes layouts: a peer library
/// recognises only its own recipe's nodes, so it may hold beside the
/// others (zk-rwlock recognises every layout). With `--layout` set to a
/// peer's, only that library's blind spots, whether or not its nodes are in
/// the queue yet; with `native` or without it, each peer library present.
fn layout_warnings(contenders: &[Contender], layout: Option<Layout>) -> String {
    let mut out = String::new();
    for peer in Layout::ALL.into_iter().filter(|l| *l != Layout::Native) {
        let relevant = match layout {
            Some(Layout::Native) | None => contenders.iter().any(|c| c.name.layout() == peer),
            Some(chosen) => chosen == peer,
        };
        if !relevant {
            continue;
        }
        let unseen: Vec<String> = contenders
            .iter()
            .filter(|c| !peer.recognises(c.name.layout()))
            .map(|c| c.name.to_string())
            .collect();
        if !unseen.is_empty() {
            out.push_str(&format!(
                "WARNING: {} does not recognise {}: it can hold the lock beside them; give every \
                 client of this path one layout (zk-rwlock exec --layout {peer})\n",
                peer.library(),
                unseen.join(", ")
            ));
        }
    }
    out
}

/// Warnings under the table for each contender shown waiting whose own
/// library may grant it beside every contender ahead of it that the library
/// recognises ([`ordering::blind_to`]; the contenders of other layouts are
/// [`layout_warnings`]'): a kazoo `__lock__` node with kazoo `__rlock__`
/// nodes ahead of it and no `__lock__` node. kazoo's `Lock` writes the same
/// name as its `WriteLock` but is blocked by `__lock__` nodes only, so it
/// may hold beside those readers although it is shown waiting.
fn kazoo_lock_warnings(contenders: &[Contender]) -> String {
    let key = |c: &Contender| (c.name.layout(), c.name.mode());
    let mut out = String::new();
    for (i, c) in contenders.iter().enumerate() {
        if c.state == ContenderState::Holds {
            continue;
        }
        let me = key(c);
        let seen: Vec<&Contender> = contenders[..i]
            .iter()
            .filter(|a| me.0.recognises(a.name.layout()))
            .collect();
        if seen.is_empty() || !seen.iter().all(|a| ordering::blind_to(me, key(a))) {
            continue;
        }
        let readers: Vec<String> = seen.iter().map(|a| a.name.to_string()).collect();
        out.push_str(&format!(
            "WARNING: {} waits behind kazoo readers ({}) but may be a kazoo Lock (not WriteLock), \
             which holds beside readers\n",
            c.name,
            readers.join(", ")
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

/// The JSON form with several paths.
#[derive(Serialize)]
struct JsonLocks<'a> {
    locks: Vec<JsonStatus<'a>>,
}

/// The JSON form of one path.
#[derive(Serialize)]
struct JsonStatus<'a> {
    path: &'a str,
    contenders: Vec<JsonContender>,
    foreign: &'a [String],
    /// Only when the directory is used for an election and someone leads.
    #[serde(skip_serializing_if = "Option::is_none")]
    leader: Option<&'a Leader>,
}

#[derive(Serialize)]
struct JsonContender {
    position: usize,
    node: String,
    path: String,
    identity: String,
    /// Which layout (so which library) the node's name is written in.
    layout: &'static str,
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
    /// With several paths: the other given paths where this session has a contender.
    #[serde(skip_serializing_if = "Option::is_none")]
    also_in: Option<Vec<String>>,
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
            layout: c.name.layout().name(),
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
            also_in: snapshot.also_in.as_ref().map(|a| a[i].clone()),
        })
        .collect();
    JsonStatus {
        path: &snapshot.path,
        contenders,
        foreign: &snapshot.foreign,
        leader: snapshot.leader.as_ref(),
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

    const K1: &str = "0123456789abcdef0123456789abcdef__rlock__0000000001";
    const K2: &str = "0123456789abcdef0123456789abcdef__rlock__0000000002";
    const K3: &str = "fedcba9876543210fedcba9876543210__lock__0000000003";

    fn queue(names: &[&str]) -> Vec<Contender> {
        let names: Vec<zk_rwlock::NodeName> = names.iter().map(|n| n.parse().unwrap()).collect();
        // States as the queue gives them: a reader holds unless a writer is
        // ahead; a writer holds only at the head.
        let mut out = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let state = if i == 0
                || (name.mode() == Mode::Read && names[..i].iter().all(|n| n.mode() == Mode::Read))
            {
                ContenderState::Holds
            } else {
                ContenderState::WaitsOn(names[i - 1].to_string())
            };
            out.push(Contender::new("/x", name.clone(), state));
        }
        out
    }

    #[test]
    fn a_kazoo_lock_behind_kazoo_readers_is_flagged() {
        let w = kazoo_lock_warnings(&queue(&[K1, K2, K3]));
        assert_eq!(w.lines().count(), 1, "{w}");
        assert!(w.contains(K3) && w.contains(K1) && w.contains(K2), "{w}");
        assert!(
            w.contains("may be a kazoo Lock (not WriteLock), which holds beside readers"),
            "{w}"
        );
        // A kazoo writer at the head holds: nothing to say.
        assert_eq!(kazoo_lock_warnings(&queue(&[K3])), "");
        // Behind a kazoo writer, a kazoo Lock waits too.
        let k4 = "fedcba9876543210fedcba9876543210__lock__0000000004";
        assert_eq!(kazoo_lock_warnings(&queue(&[K1, K3, k4])).lines().count(), 1);
        // Native or Curator readers ahead: kazoo's Lock ignores them anyway.
        assert_eq!(kazoo_lock_warnings(&queue(&["a-R-0000000001", K3])), "");
        // Other peers wait for the readers of their own layout.
        let curator = "_c_0b7d6f5e-1c2a-4e3b-8f9a-0123456789ab-";
        let (reader, writer) = (
            format!("{curator}__READ__0000000001"),
            format!("{curator}__WRIT__0000000002"),
        );
        assert_eq!(kazoo_lock_warnings(&queue(&[&reader, &writer])), "");
        assert_eq!(
            kazoo_lock_warnings(&queue(&["a-R-0000000001", "b-W-0000000002"])),
            ""
        );
    }

    #[test]
    fn layout_warnings_follow_the_chosen_layout() {
        let q = queue(&["a-R-0000000001", K2]);
        // Without --layout (or native): each peer present, here kazoo.
        let w = layout_warnings(&q, None);
        assert!(w.contains("kazoo does not recognise a-R-0000000001"), "{w}");
        assert_eq!(layout_warnings(&q, Some(Layout::Native)), w);
        // A chosen peer layout: only that library, present or not.
        let w = layout_warnings(&q, Some(Layout::Curator));
        assert_eq!(w.lines().count(), 1, "{w}");
        assert!(
            w.contains("does not recognise a-R-0000000001, ") && w.contains(K2),
            "{w}"
        );
        assert!(w.contains("--layout curator"), "{w}");
        assert_eq!(layout_warnings(&queue(&[K1, K2]), Some(Layout::Kazoo)), "");
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
            also_in: None,
            leader: None,
            head_watch: None,
        };
        let now = SystemTime::now();
        let t = table(&s, now, None);
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
    fn contenders_are_linked_across_paths_by_session() {
        let contender = |dir: &str, name: &str, session| {
            let mut c = Contender::new(dir, name.parse().unwrap(), ContenderState::Holds);
            c.session = session;
            c
        };
        let snapshot = |path: &str, contenders| Snapshot {
            path: path.to_owned(),
            exists: true,
            contenders,
            foreign: Vec::new(),
            also_in: None,
            leader: None,
            head_watch: None,
        };
        let mut s = vec![
            snapshot(
                "/a",
                vec![
                    contender("/a", "m-W-0000000000", Some(7)),
                    contender("/a", "o-R-0000000001", Some(8)),
                    contender("/a", "p-R-0000000002", Some(0)),
                    contender("/a", "g-R-0000000003", None),
                ],
            ),
            snapshot("/b", vec![contender("/b", "m-R-0000000000", Some(7))]),
            snapshot(
                "/c",
                vec![
                    contender("/c", "m-W-0000000000", Some(7)),
                    contender("/c", "p-W-0000000001", Some(0)),
                ],
            ),
        ];
        link_sessions(&mut s);
        let also_in = |s: &Snapshot| s.also_in.clone().unwrap();
        assert_eq!(also_in(&s[0]), [vec!["/b", "/c"], vec![], vec![], vec![]]);
        assert_eq!(also_in(&s[1]), [vec!["/a", "/c"]]);
        assert_eq!(also_in(&s[2]), [vec!["/a", "/b"], vec![]]);
        let t = table(&s[1], SystemTime::now(), None);
        assert!(t.lines().nth(1).unwrap().ends_with("ALSO IN"), "{t}");
        assert!(t.lines().nth(2).unwrap().ends_with("/a,/c"), "{t}");
        let j = serde_json::to_value(json(&s[0], SystemTime::now())).unwrap();
        assert_eq!(j["contenders"][0]["also_in"], serde_json::json!(["/b", "/c"]));
        assert_eq!(j["contenders"][1]["also_in"], serde_json::json!([]));
    }

    #[test]
    fn empty_and_missing_directories() {
        let mut s = Snapshot {
            path: "/x".to_owned(),
            exists: false,
            contenders: Vec::new(),
            foreign: Vec::new(),
            also_in: None,
            leader: None,
            head_watch: None,
        };
        assert_eq!(
            table(&s, SystemTime::now(), None),
            "/x: no contenders (the lock directory does not exist)\n"
        );
        s.exists = true;
        s.foreign.push("junk".to_owned());
        let t = table(&s, SystemTime::now(), None);
        assert!(t.starts_with("/x: no contenders\n"), "{t}");
        assert!(t.contains("junk"), "{t}");
    }

    #[test]
    fn an_announced_head_writer_is_named_leader() {
        let name = "web01@0123456789abcdef0123456789abcdef-W-0000000004";
        let mut c = Contender::new("/e", name.parse().unwrap(), ContenderState::Holds);
        c.fencing_token = Some(42);
        let s = Snapshot {
            path: "/e".to_owned(),
            exists: true,
            contenders: vec![c],
            foreign: Vec::new(),
            also_in: None,
            leader: Some(Leader {
                identity: "web01".to_owned(),
                node: name.to_owned(),
                term: Some(42),
            }),
            head_watch: None,
        };
        let table = table(&s, SystemTime::now(), None);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "/e: 1 contender, 1 holding, 0 waiting");
        assert_eq!(lines[1], format!("leader: web01 (term 42, node {name})"));
        let json = serde_json::to_string(&json(&s, SystemTime::now())).unwrap();
        assert!(json.contains(r#""leader":{"identity":"web01","#), "{json}");
    }
}
