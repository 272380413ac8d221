//! `zk-rwlock status`: show the queue of one or more locks (who holds
//! each, who waits on whom), once or on every change.
//!
//! A `sync` first (the server may be a follower behind the ensemble, as
//! [`zk_rwlock::Election::leader`] does), then one listing of the lock
//! directory is classified by the pure
//! [`zk_rwlock_core::ordering::queue`], then each contender's stat (fencing
//! token, creation time, owner session) is read with pipelined requests,
//! and the election's leader, if any, by the pure
//! [`zk_rwlock_core::election::who_leads`] from that listing and one read
//! of the holding head writer's node. In
//! `--watch` mode a children watch (or, while the directory does not exist,
//! an existence watch) is set before each snapshot, so every change after a
//! snapshot's listing triggers the next one.
//!
//! With several paths, each directory is listed (with its watch) and then
//! described in turn; a change in any of them triggers the next round.
//! Contenders of different paths owned by the same ZooKeeper session (the
//! parts of one multi-lock, or locks taken by one client) are linked.

mod output;
mod snapshot;
mod table;

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::task::Poll;
use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};
use zk_rwlock::{zk, Layout, SharedLock};

use zk_rwlock_cli::common;
use zk_rwlock_cli::connection;
use zk_rwlock_cli::failure::{self, exit, Failure};

use output::{write_failure, Output};
use snapshot::describe_all;

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
  is not named. A leader asked to step down (`zk-rwlock revoke`: the
  request is written over its announcement) leads until it resigns: it
  stays named, the line ending `, asked to step down (revocation
  requested): leads until it resigns`. With --watch the head writer's
  node is watched too, so the announcement and a request show at once.
  JSON: \"leader\": {\"identity\", \"node\", \"term\",
  \"revocation_requested\": true|false}, present only then.

A semaphore:
  A directory whose contenders carry a permit count in their names
  (`<identity>@permits-<N>@<token>-W-<seq>`: `zk-rwlock exec --permits
  N`, the library's Semaphore) is shown as a semaphore: a line
  `semaphore: <N> permits, <held> held, <free> free` under the summary;
  the first N contenders hold a permit (MODE `permit`), the others wait,
  each shown waiting on the one before it (it watches the N before it).
  The IDENTITY column shows the identity without the count. Warnings
  under the table name contenders that carry another count (they
  withdraw) and contenders that carry none (a lock's: each counts as one
  permit taken). A semaphore elects no leader. JSON: \"permits\": N on
  the path's object and on each semaphore contender, present only then
  (\"mode\" stays \"write\").

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
   \"mode\": \"read\"|\"write\", \"seq\": <sequence>, \"permits\": <N, a semaphore
   contender only>, \"state\": \"holds\"|\"waits\",
   \"waits_on\": <child name or null>, \"fencing_token\": <czxid or null>,
   \"session\": \"0x...\" or null, \"ephemeral\": true|false|null (false: a
   persistent node that blocks the lock until deleted),
   \"created_ms\": <ms since epoch or null>, \"age_ms\": <ms or null>}, ...],
   \"foreign\": [<child name>, ...], \"permits\": <N, a semaphore only>}
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
  69   ZooKeeper unreachable or refusing sessions
  70   other ZooKeeper error (e.g. the session expired while watching)
  77   permission denied by ZooKeeper (NoAuth), or credentials rejected
       (AuthFailed)

Environment:
  ZK_CONNECT  ZooKeeper servers when --connect is not given (set but
              empty: a usage error)
  ZK_RWLOCK_AUTH  --auth when it is not given (out of sight of ps)

Examples:
  zk-rwlock status /locks/backup
  zk-rwlock status --watch /locks/backup
  zk-rwlock status /locks/db /locks/rates
  zk-rwlock status /semaphores/encoders   # a semaphore: its N, holders and queue
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

    /// Give up connecting to ZooKeeper after DUR (more than 0)
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = common::parse_timeout, allow_hyphen_values = true)]
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
    let servers = connection::servers(args.connect.clone())?;
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
            let given_up = locks.first().is_some_and(|l| l.client().session_given_up());
            let what = failure::session_end(&err, given_up).unwrap_or("the ZooKeeper session ended");
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

#[cfg(test)]
mod tests;
