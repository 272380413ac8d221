//! `zk-rwlock exec`: run a command while holding a read or write lock, in
//! the manner of flock(1), `etcdctl lock` and `consul lock`.
//!
//! The sequence is: connect, acquire (interruptible, optionally bounded),
//! spawn the command, supervise it (child exit, the lock's state and
//! lease, signals), release, close the session, exit. Every way out of the
//! acquire deletes the contender node before the process exits: the
//! session is closed explicitly and its end awaited, which also waits for
//! the library's background clean-up of a cancelled acquire.
//!
//! While the command runs, the guard's [`HoldState`] and lease deadline
//! decide when it is stopped ([`stop`], a pure verdict), and the command
//! can read them in its lease file ([`lease_file`]).

mod holding;
pub mod keeper;
mod lease_file;
mod link;
mod stop;
mod tree;

use std::ffi::OsString;
use std::io;
use std::process::ExitCode;
use std::time::Duration;

use clap::ArgGroup;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::time::{Instant, MissedTickBehavior};
use zk_rwlock::{lease, HoldState, Layout, LossCause, Mode, MultiLock, SharedLock};

pub(crate) use holding::Holding;
use keeper::FromKeeper;
use link::Keeper;
pub(crate) use stop::OnSuspend;
use stop::{Cause, Policy, Step};
use zk_rwlock_cli::common;
use zk_rwlock_cli::connection;
use zk_rwlock_cli::failure::{self, exit, Failure};

/// How long to wait, at most, for the session to close (and with it for the
/// deletion of any node left by a cancelled acquire) before exiting.
const CLOSE_WITHIN: Duration = Duration::from_secs(5);

const AFTER_HELP: &str = "See `zk-rwlock exec --help` for signals, exit codes and examples.";

// (The subcommand's doc comment in main.rs sets its about text, long form
// included, so the long description lives in the after-help.)
const AFTER_LONG_HELP: &str = "\
How it works:
  zk-rwlock waits for the lock on the ZooKeeper lock directory PATH (at most
  --timeout), runs CMD with stdin, stdout and stderr inherited, releases the
  lock when CMD and every process it started have exited, and exits with
  CMD's exit status. Readers share the lock; a writer excludes readers and
  writers. Waiters are served in arrival order.

CMD's process tree:
  CMD runs under a keeper process (`zk-rwlock __keeper`, no network) that
  is a child subreaper: every process CMD starts stays its descendant, even
  one that leaves CMD's process group or session (background jobs,
  pipelines, nohup, setsid, disown, a daemon's double fork).
  - When CMD exits while processes it started still run, the lock is held
    until they have exited too (as with flock(1), whose lock lives while
    any process holds it); zk-rwlock names them on stderr. --kill-orphans
    ends them instead (SIGTERM, SIGKILL after --kill-after).
  - If zk-rwlock is killed (SIGKILL, out of memory), the keeper kills the
    whole tree at once.
  - If zk-rwlock is stopped (SIGSTOP, Ctrl-Z, a debugger) or starved, the
    keeper stops the tree by the lease's deadlines on its own (below) and
    writes `lost` in the lease file at the deadline.
  - Not CMD's descendants, so not covered: work handed to another service
    (systemd-run, at, ssh, docker run -d, a job queue): run it in the
    foreground (systemd-run --wait, docker run without -d) or fence its
    writes. If zk-rwlock and the keeper are both killed with SIGKILL at
    once (pkill -9), CMD dies with the keeper but what it started is left.

  CMD gets these environment variables:
    ZK_RWLOCK_NODE           full path of this contender's ZooKeeper node
    ZK_RWLOCK_FENCING_TOKEN  the fencing token (the node's czxid, a positive
                             integer): larger than every earlier writer's
                             token; pass it to stores that can reject writes
                             carrying an older token
    ZK_RWLOCK_SESSION_TIMEOUT_MS
                             the session timeout the server granted, in ms
    ZK_RWLOCK_LEASE_DEADLINE_MS
                             the lease deadline (below) when CMD started, in
                             Unix epoch milliseconds
    ZK_RWLOCK_LEASE_FILE     a file with one line, `<deadline> <state>`: the
                             lease deadline now (Unix epoch ms) and `held`,
                             `suspended` or `lost`. zk-rwlock replaces it
                             atomically whenever either changes (the
                             deadline moves on about every 3/20 of the
                             session timeout), checking every min(250ms,
                             session timeout / 20); read it whole. At the
                             deadline it says `lost` even if zk-rwlock
                             could not act. It lives in a private
                             directory (mode 0700), removed once CMD's
                             tree is gone. If it cannot
                             be created, zk-rwlock warns and CMD runs
                             without this variable.
    ZK_RWLOCK_NODES, ZK_RWLOCK_FENCING_TOKENS
                             with --also-read/--also-write only: every
                             part's node, and `<token> <lock path>`, one
                             per line, in path order (ZK_RWLOCK_NODE and
                             ZK_RWLOCK_FENCING_TOKEN are PATH's)

Several locks:
  --also-read PATH2 and --also-write PATH2 (each may repeat) take more
  locks with PATH, all or nothing: one after the other in path order,
  whatever order the command line gives, so commands that name the same
  paths in any order never deadlock each other. On a timeout, an error or
  a signal while waiting, the locks already taken are released. While CMD
  runs, the state is the worst part's and the lease deadline the earliest
  part's; a revocation request on any part counts.

The lease:
  No one else can be granted the lock before the lease deadline: the send
  time of the last request the server answered, plus the session timeout,
  less 2% for clock drift. While connected, every answer (a ping at least
  every 3/20 of the session timeout) moves it on. A lost connection is
  noticed about 2/5 of the session timeout after the last answer: the lock
  is then suspended, safe until the deadline, and lost after it unless the
  connection comes back first.

  --on-suspend lease (the default): when the connection is lost, CMD
  keeps running while the lease can still cover its orderly stop. If the
  connection is not back by the lease deadline less the kill margin,
  min(1s, session timeout / 5), less --grace (default 3/10 of the session
  timeout, at most 3s), every process of CMD's tree gets SIGTERM; if any
  still runs at the deadline less the margin, or --kill-after after
  SIGTERM if that is sooner, SIGKILL; zk-rwlock waits until they are
  gone. With a 10s session SIGTERM comes 5.8s after the server's last
  answer: a server restart or a rolling restart leaves CMD running. The
  margin is time for the kernel to tear processes down (a large process,
  I/O in progress) before the deadline.

  --on-suspend term: as soon as the loss is noticed, SIGTERM at once,
  then SIGKILL as above.

  With either, a connection that comes back after SIGTERM does not undo
  it: zk-rwlock releases the lock once the tree has exited, and exits 79.

  --on-suspend ignore: CMD keeps running while the connection is lost,
  until the lease runs out. Use it when CMD watches ZK_RWLOCK_LEASE_FILE
  itself, or when its writes are fenced.

  If the lock is lost while CMD runs (the lease ran out, the ZooKeeper
  session expired or was closed, or the node was deleted), zk-rwlock says
  why, sends SIGTERM to every process of CMD's tree, SIGKILL after --kill-after
  (with lease and term: at the lease deadline less the margin, if that is
  sooner), and exits 79.

Revocation:
  `zk-rwlock revoke PATH` (or any client writing `__REVOKE__`, Apache
  Curator's revocation message, to this contender's node) asks the holder
  to let go. With --on-revoke SIGNAL, zk-rwlock sends SIGNAL to every
  process of CMD's tree once when the request arrives (also if it arrived while
  waiting for the lock), and nothing more: no SIGKILL follows, the lock is
  held until CMD's tree has exited, and zk-rwlock then releases it and exits with CMD's
  status (128+n if signal n killed it). With --on-revoke ignore (the
  default), requests are not even looked for: a holder is only revoked
  when it chose to be. A request is seen only if this client may READ its
  own contender node, and the revoker needs WRITE on it (nodes created
  with a creator-only ACL cannot be revoked by other identities).

Signals:
  SIGINT, SIGTERM or SIGHUP while waiting for the lock: the request is
  withdrawn (its node deleted) and zk-rwlock exits 128+signal.
  While CMD runs: the signal is forwarded to every process of CMD's tree;
  zk-rwlock waits for the tree, releases the lock and exits 128+signal.
  CMD runs in its own process group. When zk-rwlock runs in the foreground
  of a terminal, CMD stays in the terminal's foreground group instead, so
  that it can use the terminal and Ctrl-C / Ctrl-Z reach it directly
  (CMD's status then tells). If zk-rwlock dies, the keeper kills CMD's
  tree.

Exit codes:
  CMD's status  CMD ran and exited (128+n if signal n killed it)
  2    usage error: bad option or argument, invalid lock path (also
       one whose node holds data that is not a lock's), identity (at
       most 255 bytes) or connect string, ACLs too large for a request,
       a --follower-lag the session timeout cannot carry (CMD not run)
  69   ZooKeeper unreachable (CMD not run)
  70   other lock or ZooKeeper error before CMD ran, e.g. the session
       expired while waiting, or the lock directory used up ZooKeeper's
       sequence numbers (the message says how to recover); or the release
       failed after CMD exited 0
  75   timed out waiting for the lock (--timeout; CMD not run)
  77   permission denied by ZooKeeper (NoAuth), or credentials rejected
       (AuthFailed)
  79   the lock was lost, or the connection to ZooKeeper was lost, while
       CMD ran: CMD was stopped (the messages say which)
  126  CMD found but cannot be executed
  127  CMD not found
  129, 130, 143  zk-rwlock got SIGHUP, SIGINT (Ctrl-C) or SIGTERM
  CMD's own status may collide with these codes; zk-rwlock's messages on
  stderr always start with `zk-rwlock:`.

Environment:
  ZK_CONNECT  ZooKeeper servers when --connect is not given
  ZK_RWLOCK_AUTH  --auth when it is not given (out of sight of ps)
  ZK_RWLOCK_FOLLOWER_LAG  --follower-lag when it is not given
  RUST_LOG    diagnostics on stderr, e.g. RUST_LOG=zk_rwlock=debug

Examples:
  zk-rwlock exec --write /locks/backup -- pg_dump -f /backups/db.sql mydb
  zk-rwlock exec --read --timeout 30s /locks/config -- ./read-config.sh
  ZK_CONNECT=zk1:2181,zk2:2181,zk3:2181 zk-rwlock exec -w /locks/deploy -- make deploy
  zk-rwlock exec -w --on-suspend ignore /locks/etl -- ./etl.sh  # checks $ZK_RWLOCK_LEASE_FILE";

/// Arguments of `exec`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = AFTER_HELP,
    after_long_help = AFTER_LONG_HELP,
    group(ArgGroup::new("mode").required(true).args(["read", "write"])),
)]
pub struct Args {
    /// Take the lock for reading (shared with other readers).
    #[arg(short, long)]
    read: bool,

    /// Take the lock for writing (exclusive).
    #[arg(short, long)]
    write: bool,

    /// Give up if the lock is not granted within DUR (e.g. 500ms, 30s,
    /// 1m30s; a plain number is seconds; 0 = only if free now) [default:
    /// wait as long as it takes]
    #[arg(short, long, value_name = "DUR", value_parser = common::parse_duration, allow_hyphen_values = true)]
    timeout: Option<Duration>,

    /// ZooKeeper servers, host:port[,host:port...] [env: ZK_CONNECT]
    /// [default: 127.0.0.1:2181]
    #[arg(short, long, value_name = "SERVERS")]
    connect: Option<String>,

    /// The name written into the lock node, shown by `status` (no '/' or '@')
    /// [default: this machine's host name]
    #[arg(long, value_name = "ID")]
    identity: Option<String>,

    /// The ZooKeeper session timeout to ask for: if zk-rwlock cannot reach
    /// ZooKeeper for this long, the lock is lost (the server bounds it)
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = common::parse_duration, allow_hyphen_values = true)]
    session_timeout: Duration,

    /// Give up connecting to ZooKeeper after DUR
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = common::parse_duration, allow_hyphen_values = true)]
    connect_timeout: Duration,

    #[command(flatten)]
    security: connection::Security,

    #[command(flatten)]
    acl: connection::AclArg,

    /// When CMD is stopped, how long it gets between SIGTERM and SIGKILL
    /// (SIGKILL comes sooner if the lease would run out first, except with
    /// --on-suspend ignore)
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = common::parse_duration, allow_hyphen_values = true)]
    kill_after: Duration,

    /// When the connection to ZooKeeper is lost while CMD runs: `lease`
    /// lets CMD run while the lease can still cover its stop (SIGTERM at the
    /// lease deadline less the kill margin less --grace, SIGKILL at the
    /// deadline less the margin); `term` stops CMD at once; `ignore` lets it
    /// run until the lock is lost
    #[arg(long, value_name = "WHAT", value_enum, default_value_t = OnSuspend::Lease)]
    on_suspend: OnSuspend,

    /// With --on-suspend lease: how long before its SIGKILL time CMD gets
    /// SIGTERM when the connection stays lost [default: 3/10 of the session
    /// timeout, at most 3s]
    #[arg(long, value_name = "DUR", value_parser = common::parse_duration, allow_hyphen_values = true)]
    grace: Option<Duration>,

    /// When CMD exits, end the processes it started that still run
    /// (SIGTERM, SIGKILL after --kill-after) instead of holding the lock
    /// until they exit
    #[arg(long)]
    kill_orphans: bool,

    /// When someone asks the holder to let go (`zk-rwlock revoke`): send
    /// SIGNAL (TERM, INT, HUP, USR1, USR2, QUIT, KILL, with or without SIG)
    /// to every process of CMD's tree, once; `ignore` keeps CMD running
    #[arg(long, value_name = "SIGNAL|ignore", default_value = "ignore", value_parser = parse_on_revoke)]
    on_revoke: OnRevoke,

    /// On an ensemble whose followers may lose their leader or whose leader
    /// may stall: syncLimit x tickTime + tickTime of the ensemble (e.g. 12s).
    /// Makes the lease that much (and 3/20 of the session timeout) shorter,
    /// so that it ends before the leader can expire the session even then;
    /// the session timeout must be at least 2.25 x DUR [default: 0s]
    #[arg(long, value_name = "DUR", value_parser = common::parse_duration, allow_hyphen_values = true, env = "ZK_RWLOCK_FOLLOWER_LAG")]
    follower_lag: Option<Duration>,

    /// Name this command's contender nodes as a peer library does, so that
    /// it excludes and is excluded by that library's locks on the same
    /// path: native, curator (Curator's InterProcessReadWriteLock),
    /// curator-mutex (Curator's InterProcessMutex; write only), kazoo
    /// (kazoo's ReadLock, WriteLock and Lock). Every layout's nodes count
    /// as contenders whatever this says [default: native]
    #[arg(long, value_name = "LAYOUT", env = "ZK_RWLOCK_LAYOUT", value_parser = common::parse_layout)]
    layout: Option<Layout>,

    /// Also take the read lock on PATH2, all or nothing with PATH (repeat
    /// for more); the locks are taken in path order, so commands naming the
    /// same paths in any order never deadlock each other
    #[arg(long = "also-read", value_name = "PATH2")]
    also_read: Vec<String>,

    /// Also take the write lock on PATH2, all or nothing with PATH (repeat
    /// for more)
    #[arg(long = "also-write", value_name = "PATH2")]
    also_write: Vec<String>,

    /// The lock directory, an absolute ZooKeeper path like /locks/backup
    #[arg(value_name = "PATH")]
    path: String,

    /// The command to run and its arguments (put `--` before them)
    #[arg(
        value_name = "CMD",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    command: Vec<OsString>,
}

/// What to do with a revocation request: the signal to send CMD, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnRevoke(Option<libc::c_int>);

/// `ignore`, or a signal name (`TERM`, `SIGTERM`, case-insensitive).
pub(crate) fn parse_on_revoke(s: &str) -> Result<OnRevoke, String> {
    let upper = s.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    let sig = match name {
        "IGNORE" => return Ok(OnRevoke(None)),
        "TERM" => libc::SIGTERM,
        "INT" => libc::SIGINT,
        "HUP" => libc::SIGHUP,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "QUIT" => libc::SIGQUIT,
        "KILL" => libc::SIGKILL,
        _ => {
            return Err(format!(
                "`{s}` is not one of ignore, TERM, INT, HUP, USR1, USR2, QUIT, KILL"
            ))
        }
    };
    Ok(OnRevoke(Some(sig)))
}

/// Runs `exec`.
pub fn run(args: Args) -> ExitCode {
    match common::block_on(exec(args)) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => failure.report(),
    }
}

/// Connects, then runs the rest with the lock, then closes the session
/// and waits for it to end, whatever happened.
async fn exec(args: Args) -> Result<u8, Failure> {
    let mut signals = Signals::new()
        .map_err(|e| Failure::new(exit::SOFTWARE, format!("cannot install signal handlers: {e}")))?;
    common::check_lock_path(&args.path)?;
    let mut seen = std::collections::HashSet::from([args.path.as_str()]);
    for path in args.also_read.iter().chain(&args.also_write) {
        common::check_lock_path(path)?;
        // Before connecting: a usage error, said plainly.
        if !seen.insert(path) {
            return Err(Failure::new(
                exit::USAGE,
                format!("lock path `{path}` is given more than once: name each lock once, with its mode"),
            ));
        }
    }
    args.security.check_acl(args.acl)?;
    let servers = connection::connect_string(args.connect.clone());
    let client = tokio::select! {
        client = args.security.connect(&servers, args.session_timeout, args.connect_timeout) => client?,
        sig = signals.recv() => {
            eprintln!("zk-rwlock: interrupted ({}) while connecting to ZooKeeper", signal_name(sig));
            return Ok(signal_exit(sig));
        }
    };
    let states = client.state_watcher();
    let build = |path: &str| {
        let mut builder = args.acl.apply(SharedLock::builder(client.clone(), path));
        if let Some(lag) = args.follower_lag {
            builder = builder.follower_lag(lag);
        }
        if let Some(identity) = &args.identity {
            builder = builder.identity(identity);
        }
        if let Some(layout) = args.layout {
            builder = builder.layout(layout);
        }
        builder.build()
    };
    let extra: Result<Vec<(SharedLock, Mode)>, _> = (args.also_read.iter().map(|p| (p, Mode::Read)))
        .chain(args.also_write.iter().map(|p| (p, Mode::Write)))
        .map(|(p, mode)| build(p).map(|lock| (lock, mode)))
        .collect();
    let result = match (build(&args.path), extra) {
        (Ok(lock), Ok(extra)) => {
            drop(client);
            with_lock(lock, extra, &args, &mut signals).await
        }
        (Err(e), _) | (_, Err(e)) => Err(Failure::from(e)),
    };
    // Every clone of the client is gone now, except in the library's
    // background clean-up of a cancelled acquire: the session closes once
    // that is done, and closing it deletes whatever ephemeral node is left.
    let closed = connection::await_session_end(states, CLOSE_WITHIN).await;
    tracing::debug!(closed, "ZooKeeper session over");
    if !closed {
        tracing::warn!(
            "the ZooKeeper session could not be closed (disconnected, or not within {CLOSE_WITHIN:?}); \
             the server removes its nodes when it expires"
        );
    }
    result
}

/// Acquires, runs the command, releases. Consumes the lock so that the
/// session can close when this returns.
async fn with_lock(
    lock: SharedLock,
    extra: Vec<(SharedLock, Mode)>,
    args: &Args,
    signals: &mut Signals,
) -> Result<u8, Failure> {
    let mode = if args.write { Mode::Write } else { Mode::Read };
    let path = match extra.len() {
        0 => lock.path().to_owned(),
        1 => format!("{} (and 1 more lock)", lock.path()),
        n => format!("{} (and {n} more locks)", lock.path()),
    };
    let acquired = tokio::select! {
        acquired = acquire(&lock, mode, extra, args.timeout) => acquired.map_err(|e| waiting_failure(e, mode, &path))?,
        sig = signals.recv() => {
            // Dropping the acquire deletes its node in the background; the
            // session close in `exec` waits for that.
            eprintln!(
                "zk-rwlock: interrupted ({}) while waiting for the {mode} lock on {path}",
                signal_name(sig)
            );
            return Ok(signal_exit(sig));
        }
    };
    let Some(guard) = acquired else {
        let waited = human(args.timeout.unwrap_or_default());
        return Err(Failure::new(
            exit::TEMPFAIL,
            format!("timed out after {waited} waiting for the {mode} lock on {path}"),
        ));
    };
    tracing::debug!(node = guard.node(), token = guard.fencing_token(), "lock granted");
    Ok(run_holding(&lock, guard, &args.run_options(), signals).await.code)
}

/// How to run CMD under a held lock: the options of `exec` that say it
/// (`lead` has the same).
pub(crate) struct RunOptions<'a> {
    pub command: &'a [OsString],
    pub on_suspend: OnSuspend,
    pub kill_after: Duration,
    pub grace: Option<Duration>,
    pub kill_orphans: bool,
    pub on_revoke: OnRevoke,
    pub follower_lag: Option<Duration>,
}

impl Args {
    fn run_options(&self) -> RunOptions<'_> {
        RunOptions {
            command: &self.command,
            on_suspend: self.on_suspend,
            kill_after: self.kill_after,
            grace: self.grace,
            kill_orphans: self.kill_orphans,
            on_revoke: self.on_revoke,
            follower_lag: self.follower_lag,
        }
    }
}

/// How a run of CMD under a held lock ended ([`run_holding`]).
pub(crate) struct Ran {
    /// The exit code `exec` exits with.
    pub code: u8,
    /// What happened, for a caller that goes on (`lead`).
    pub end: End,
}

/// See [`Ran`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// CMD could not be started (`code` says why: 126, 127, 70); the lock
    /// was released.
    NotStarted,
    /// CMD's tree exited on its own and the lock was released: `code` is
    /// CMD's status.
    Exited,
    /// zk-rwlock got a signal while CMD ran and forwarded it; CMD's tree
    /// exited and the lock was released (`code` is 128+signal).
    Interrupted,
    /// The lock was lost, or the connection was lost, while CMD ran: CMD
    /// was stopped (`code` is 79).
    Lost,
    /// CMD exited but the release failed (`code` says how).
    ReleaseFailed,
}

/// Runs CMD while `guard` holds `lock`, supervised as `exec` does (see its
/// help: the lease, the keeper process, signals, revocation), then
/// releases the lock. Shared by `exec` and `lead`.
pub(crate) async fn run_holding(
    lock: &SharedLock,
    guard: Holding,
    args: &RunOptions<'_>,
    signals: &mut Signals,
) -> Ran {
    let ran = |code: u8, end: End| Ran { code, end };
    let client = lock.client();
    let session_timeout = client
        .session_lease()
        .map_or_else(|| client.session_timeout(), |lease| lease.timeout);
    let policy = Policy {
        on_suspend: args.on_suspend,
        kill_after: args.kill_after,
        // A lease shortened by a follower lag keeps a kill margin of at most
        // a quarter of it: the deadline never comes that close between two
        // answers of a healthy session.
        margin: stop::kill_margin(session_timeout).min(
            zk_rwlock::lease::span(session_timeout, args.follower_lag.unwrap_or_default())
                .unwrap_or_default()
                / 4,
        ),
        grace: args.grace.unwrap_or_else(|| stop::default_grace(session_timeout)),
    };
    let deadline = guard.lease_deadline();
    let (term_at, kill_at) = unattended(&policy, deadline, None);
    let start = link::Start {
        command: args.command,
        env: command_env(&guard, session_timeout, deadline),
        env_remove: if guard.parts().len() > 1 {
            Vec::new()
        } else {
            vec!["ZK_RWLOCK_NODES", "ZK_RWLOCK_FENCING_TOKENS"]
        },
        own_group: !in_terminal_foreground(),
        kill_orphans: args.kill_orphans,
        kill_after: args.kill_after,
        deadline: keeper::boot_of(deadline),
        term_at: term_at.map(keeper::boot_of),
        kill_at: kill_at.map(keeper::boot_of),
    };
    // Should the keeper die on its own, CMD's tree comes back to this
    // process, which then kills it (see `kill_own_tree`).
    if let Err(e) = tree::become_subreaper() {
        tracing::debug!(error = %e, "not a child subreaper");
    }
    let keeper = match Keeper::start(start).await {
        Ok((keeper, pid)) => {
            tracing::debug!(pid, "command started");
            keeper
        }
        Err((code, message)) => {
            eprintln!("zk-rwlock: {message}");
            if let Err(e) = guard.release().await {
                eprintln!("zk-rwlock: could not release the lock: {e}");
            }
            return ran(code, End::NotStarted);
        }
    };
    let period = lease_file::check_period(session_timeout);
    let outcome = supervise(keeper, lock, &guard, (policy, args.on_revoke), period, signals).await;

    match outcome.stopped {
        Some(Stopped::Lost(why)) => {
            let _ = guard.release().await; // the node is gone already
            tracing::debug!(%why, "released after loss");
            return ran(exit::LOST, End::Lost);
        }
        Some(Stopped::KeeperDied) => {
            match guard.release().await {
                Ok(()) => eprintln!(
                    "zk-rwlock: the command was killed because its keeper process died; the lock is released"
                ),
                Err(e) => eprintln!("zk-rwlock: could not release the lock: {e}"),
            }
            return ran(exit::LOST, End::Lost);
        }
        Some(Stopped::Suspended) => {
            // The connection may be back by now: release as usual. If it is
            // not, the client gives up on the session 7/5 of the session
            // timeout after the server's last answer.
            match guard.release().await {
                Ok(()) => eprintln!(
                    "zk-rwlock: the command was stopped because the connection to ZooKeeper was lost; \
                     the lock is released"
                ),
                Err(e) => match failure::session_end(&e) {
                    Some(what) => eprintln!(
                        "zk-rwlock: the command was stopped because the connection to ZooKeeper was lost; \
                         then the lock was lost too ({what})"
                    ),
                    None => eprintln!("zk-rwlock: could not release the lock: {e}"),
                },
            }
            return ran(exit::LOST, End::Lost);
        }
        None => {}
    }
    let ended = if outcome.interrupted {
        End::Interrupted
    } else {
        End::Exited
    };
    match guard.release().await {
        Ok(()) => ran(outcome.code, ended),
        Err(zk_rwlock::Error::Lost { node }) => {
            eprintln!("zk-rwlock: lock lost: node {node} was deleted, possibly while the command ran");
            ran(exit::LOST, End::Lost)
        }
        Err(e) if e.is_session_over() => {
            eprintln!(
                "zk-rwlock: lock lost: the ZooKeeper session ended before the lock was released, \
                 possibly while the command ran"
            );
            ran(exit::LOST, End::Lost)
        }
        Err(e) => {
            eprintln!("zk-rwlock: could not release the lock: {e}");
            let code = if outcome.code == 0 {
                exit::SOFTWARE
            } else {
                outcome.code
            };
            ran(code, End::ReleaseFailed)
        }
    }
}

/// Says what went wrong while waiting for the lock.
fn waiting_failure(err: zk_rwlock::Error, mode: Mode, path: &str) -> Failure {
    use zk_rwlock::Error;
    let what = match (&err, failure::session_end(&err)) {
        (Error::Lost { node }, _) => format!("someone deleted its node {node}"),
        (_, Some(what)) => what.to_owned(),
        // Among them `SequenceExhausted`, whose text says what to do.
        _ => return Failure::from(err),
    };
    let code = match err {
        Error::AuthFailed => exit::NOPERM,
        _ => exit::SOFTWARE,
    };
    Failure::new(
        code,
        format!("{what} while waiting for the {mode} lock on {path}"),
    )
}

/// Acquires in `mode`; `Ok(None)` if `timeout` passed first.
async fn acquire(
    lock: &SharedLock,
    mode: Mode,
    extra: Vec<(SharedLock, Mode)>,
    timeout: Option<Duration>,
) -> Result<Option<Holding>, zk_rwlock::Error> {
    if extra.is_empty() {
        let guard = match timeout {
            None => lock.acquire(mode).await.map(Some),
            Some(t) => lock.acquire_timeout(mode, t).await,
        };
        return guard.map(|g| g.map(Holding::One));
    }
    let first = lock.path().to_owned();
    let multi = MultiLock::from_locks(std::iter::once((lock.clone(), mode)).chain(extra))?;
    let guard = match timeout {
        None => multi.acquire().await.map(Some),
        Some(t) => multi.acquire_timeout(t).await,
    };
    guard.map(|g| g.map(|guard| Holding::Many { guard, first }))
}

/// Whether zk-rwlock runs in the foreground process group of the terminal on stdin.
fn in_terminal_foreground() -> bool {
    // SAFETY: isatty, tcgetpgrp and getpgrp only query process and terminal state.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() }
}

/// The variables CMD gets: its node, token, session timeout and lease
/// deadline at the start (the keeper adds the lease file).
fn command_env(
    guard: &Holding,
    session_timeout: Duration,
    deadline: std::time::Instant,
) -> Vec<(&'static str, String)> {
    let deadline_ms = lease_file::unix_ms(deadline, std::time::Instant::now(), std::time::SystemTime::now());
    let mut env = vec![
        ("ZK_RWLOCK_NODE", guard.node().to_owned()),
        ("ZK_RWLOCK_FENCING_TOKEN", guard.fencing_token().to_string()),
        (
            "ZK_RWLOCK_SESSION_TIMEOUT_MS",
            session_timeout.as_millis().to_string(),
        ),
        ("ZK_RWLOCK_LEASE_DEADLINE_MS", deadline_ms.to_string()),
    ];
    let parts = guard.parts();
    if parts.len() > 1 {
        let nodes: Vec<&str> = parts.iter().map(|(_, node, _)| *node).collect();
        let tokens: Vec<String> = parts
            .iter()
            .map(|(dir, _, token)| format!("{token} {dir}"))
            .collect();
        env.push(("ZK_RWLOCK_NODES", nodes.join("\n")));
        env.push(("ZK_RWLOCK_FENCING_TOKENS", tokens.join("\n")));
    }
    env
}

/// Why the command was stopped by zk-rwlock.
enum Stopped {
    /// The connection to ZooKeeper was lost (`--on-suspend term`), or
    /// stayed lost too long (`lease`), and the lock was not seen lost while
    /// the command ran.
    Suspended,
    /// The lock was lost: why.
    Lost(String),
    /// The keeper process died (killed on its own): the tree was killed.
    KeeperDied,
}

/// How the command ended.
struct Outcome {
    /// The exit code to use if zk-rwlock did not stop the command.
    code: u8,
    /// Whether, and why, zk-rwlock stopped the command (or found the lock
    /// lost when it exited).
    stopped: Option<Stopped>,
    /// Whether zk-rwlock got a signal (forwarded to the command) meanwhile.
    interrupted: bool,
}

/// How long to wait for a command's processes to be gone after SIGKILL
/// before giving up on them (a process in uninterruptible sleep).
const KILL_WAIT: Duration = Duration::from_secs(5);

/// Waits for the command and every process it started (the keeper says
/// when the tree is gone) while following the lock's state and lease, and
/// signals. Stops the tree as `policy` says; keeps the keeper told of the
/// lease, so that it stops the tree by the same rules if this process
/// cannot act.
async fn supervise(
    mut keeper: Keeper,
    lock: &SharedLock,
    guard: &Holding,
    (policy, on_revoke): (Policy, OnRevoke),
    period: Duration,
    signals: &mut Signals,
) -> Outcome {
    // Looked for only when asked to act on it: a second watcher on the
    // node (one getData), no request otherwise.
    let mut revocable = on_revoke.0.is_some();
    let mut interrupted: Option<libc::c_int> = None;
    // When SIGTERM was sent, and why.
    let mut termed: Option<(std::time::Instant, Cause)> = None;
    // When SIGKILL was sent.
    let mut killed: Option<std::time::Instant> = None;
    let mut lost: Option<String> = None;
    let mut seen = HoldState::Held;
    // CMD's own exit code, once it exited.
    let mut code: Option<u8> = None;
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // Wakes up on every change of state; the tick catches the lease
    // moving on, which nothing announces.
    let change = state_change(guard, HoldState::Held);
    let revoked = guard.revocation_requested();
    tokio::pin!(change, revoked);
    let mut following = true;
    let mut keeper_died = false;
    let me = std::process::id() as libc::pid_t;
    loop {
        let now = std::time::Instant::now();
        let state = guard.state();
        let deadline = guard.lease_deadline();
        let (term_at, kill_at) = unattended(&policy, deadline, termed.map(|(at, _)| at));
        keeper
            .lease(link::Lease {
                deadline,
                state,
                term_at,
                kill_at: kill_at.filter(|_| killed.is_none()),
            })
            .await;
        let step = if killed.is_some() {
            Step::Run
        } else {
            policy.step(state, now, deadline, termed.map(|(at, _)| at))
        };
        let left = human_ms(deadline.saturating_duration_since(now));
        let stopping = termed.is_some() || killed.is_some();
        let kill_in = || {
            policy
                .kill_at(Some(now), deadline)
                .map(|(at, _)| human_ms(at.saturating_duration_since(now)))
                .unwrap_or_else(|| "never".to_owned())
        };
        if state != seen {
            match state {
                HoldState::Suspended => {
                    let what = match step {
                        Step::Term(_) => format!(
                            "stopping the command (SIGTERM now, SIGKILL in {} if it still runs)",
                            kill_in()
                        ),
                        _ if stopping => "the command is being stopped".to_owned(),
                        _ => match policy.term_at(deadline) {
                            Some(at) => format!(
                                "the command keeps running; it gets SIGTERM in {} unless the connection is back",
                                human_ms(at.saturating_duration_since(now))
                            ),
                            None => "the command keeps running (--on-suspend ignore)".to_owned(),
                        },
                    };
                    eprintln!(
                        "zk-rwlock: connection to ZooKeeper lost while the command ran; \
                         the lease keeps the lock for {left} more: {what}"
                    );
                }
                HoldState::Held => eprintln!(
                    "zk-rwlock: connection to ZooKeeper back: the lock is held{}",
                    if stopping {
                        "; the command is being stopped all the same"
                    } else {
                        ""
                    }
                ),
                HoldState::Lost => {
                    let why = loss_reason(lock, guard);
                    match step {
                        Step::Term(_) => eprintln!(
                            "zk-rwlock: lock lost ({why}): terminating the command \
                             (SIGTERM, then SIGKILL in {} if it still runs)",
                            kill_in()
                        ),
                        _ if stopping => {
                            eprintln!("zk-rwlock: lock lost ({why}) while the command was being stopped")
                        }
                        _ => eprintln!("zk-rwlock: lock lost ({why}) while the command ran"),
                    }
                    lost = Some(why);
                }
            }
            seen = state;
        }
        match step {
            Step::Run => {}
            Step::Term(cause) => {
                if cause == Cause::Outlasted {
                    eprintln!(
                        "zk-rwlock: no answer from ZooKeeper and {left} left of the lease: stopping the command \
                         (SIGTERM now, SIGKILL in {} if it still runs)",
                        kill_in()
                    );
                }
                keeper.signal(libc::SIGTERM).await;
                // Directly too: a stopped keeper would not pass it on.
                tree::signal_descendants_but(me, Some(keeper.pid), libc::SIGTERM);
                termed = Some((now, cause));
            }
            Step::Kill(cause) => {
                match cause {
                    Cause::KillAfter => eprintln!(
                        "zk-rwlock: the command outlived --kill-after ({}): sending SIGKILL",
                        human(policy.kill_after)
                    ),
                    _ if deadline > now => eprintln!(
                        "zk-rwlock: the command still runs {left} before the lease runs out: sending SIGKILL"
                    ),
                    _ => eprintln!(
                        "zk-rwlock: the command still runs and its lease has run out: sending SIGKILL"
                    ),
                }
                keeper.kill().await;
                killed = Some(now);
                termed.get_or_insert((now, cause));
            }
        }
        if let Some(at) = killed {
            // Directly too, again until the keeper says the tree is gone:
            // a stopped keeper would not pass it on.
            tree::signal_descendants_but(me, Some(keeper.pid), libc::SIGKILL);
            if now.saturating_duration_since(at) >= KILL_WAIT {
                eprintln!(
                    "zk-rwlock: warning: processes of the command are still alive {} after SIGKILL; \
                     not waiting for them",
                    human(KILL_WAIT)
                );
                break;
            }
        }
        let wake = if killed.is_some() {
            // SIGKILL again soon, until the tree is gone.
            Some(Instant::now() + Duration::from_millis(20))
        } else {
            [
                policy
                    .kill_at(termed.map(|(at, _)| at), deadline)
                    .map(|(at, _)| at),
                if termed.is_none() {
                    policy.term_at(deadline)
                } else {
                    None
                },
            ]
            .into_iter()
            .flatten()
            .min()
            .map(Instant::from_std)
        };
        tokio::select! {
            event = keeper.next() => match event {
                Some(FromKeeper::Exited(c)) => code = Some(c),
                Some(FromKeeper::Remain(pids)) if !stopping => {
                    let pids: Vec<String> = pids.iter().map(i32::to_string).collect();
                    eprintln!(
                        "zk-rwlock: the command exited; {} process{} it started still run{} ({}): {}",
                        pids.len(),
                        if pids.len() == 1 { "" } else { "es" },
                        if pids.len() == 1 { "s" } else { "" },
                        pids.join(" "),
                        if keeper.kill_orphans {
                            "ending them (--kill-orphans)"
                        } else {
                            "the lock is held until they exit (--kill-orphans ends them)"
                        }
                    );
                }
                Some(FromKeeper::Remain(_)) | Some(FromKeeper::Started(_)) | Some(FromKeeper::Failed(..)) => {}
                Some(FromKeeper::Acted(sig)) => {
                    let news = if sig == libc::SIGKILL { killed.is_none() } else { termed.is_none() };
                    if sig == libc::SIGKILL {
                        killed.get_or_insert(now);
                    }
                    termed.get_or_insert((now, Cause::LeaseEnding));
                    if news {
                        eprintln!(
                        "zk-rwlock: the command's processes got {} from the keeper: zk-rwlock did not act in time \
                         (stopped or starved) and the lease is ending",
                        signal_name(sig)
                    );
                    }
                }
                Some(FromKeeper::Gone) => break,
                None => {
                    eprintln!("zk-rwlock: the keeper process died: killing the command's processes");
                    kill_own_tree().await;
                    killed.get_or_insert(now);
                    termed.get_or_insert((now, Cause::Lost));
                    keeper_died = true;
                    break;
                }
            },
            state = &mut change, if following => {
                if state == HoldState::Lost {
                    following = false;
                } else {
                    change.set(state_change(guard, state));
                }
            }
            requested = &mut revoked, if revocable => {
                revocable = false;
                if let (true, Some(sig)) = (requested, on_revoke.0) {
                    eprintln!(
                        "zk-rwlock: revocation requested on {}: sending {} to the command",
                        guard.node(),
                        signal_name(sig)
                    );
                    keeper.signal(sig).await;
                }
            }
            () = sleep_until(wake) => {}
            _ = tick.tick() => {}
            sig = signals.recv() => {
                // A terminal's Ctrl-C already reached a command that shares our group.
                if sig != libc::SIGINT || keeper.own_group {
                    tracing::debug!(sig, "forwarding signal to the command's processes");
                    keeper.signal(sig).await;
                    interrupted.get_or_insert(sig);
                }
            }
        }
    }
    let code = code.unwrap_or(exit::SOFTWARE);
    // Lost, but the command's exit won the race to be noticed.
    if lost.is_none() && termed.is_none() && guard.state() == HoldState::Lost {
        let why = loss_reason(lock, guard);
        eprintln!("zk-rwlock: lock lost ({why}) while the command ran");
        lost = Some(why);
    }
    let stopped = match (lost, termed) {
        (Some(why), _) => Some(Stopped::Lost(why)),
        (None, Some(_)) if keeper_died => Some(Stopped::KeeperDied),
        (None, Some(_)) => Some(Stopped::Suspended),
        (None, None) => None,
    };
    Outcome {
        code: interrupted.map_or(code, signal_exit),
        stopped,
        interrupted: interrupted.is_some(),
    }
}

/// The times the keeper acts on by itself: the policy's, a little later
/// (min(200 ms, kill margin / 4), still before the deadline), so that an
/// `exec` that can act does so first.
fn unattended(
    policy: &Policy,
    deadline: std::time::Instant,
    termed: Option<std::time::Instant>,
) -> (Option<std::time::Instant>, Option<std::time::Instant>) {
    let slack = Duration::from_millis(200).min(policy.margin / 4);
    let (term, kill) = policy.unattended(deadline, termed);
    (term.map(|t| t + slack), kill.map(|t| t + slack))
}

/// The keeper died (killed on its own): its orphans, CMD's tree, came back
/// to this process (a subreaper too). Kills them until none is left, for
/// at most [`KILL_WAIT`].
async fn kill_own_tree() {
    let me = std::process::id() as libc::pid_t;
    let until = std::time::Instant::now() + KILL_WAIT;
    while tree::signal_descendants(me, libc::SIGKILL) > 0 {
        if std::time::Instant::now() >= until {
            eprintln!(
                "zk-rwlock: warning: processes of the command are still alive {} after SIGKILL; \
                 not waiting for them",
                human(KILL_WAIT)
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Completes when the guard's state is no longer `from` (the guard's own
/// futures: one watch on the node at a time), with the new state.
async fn state_change(guard: &Holding, from: HoldState) -> HoldState {
    match from {
        HoldState::Held => guard.suspended().await,
        HoldState::Suspended => guard.resumed().await,
        HoldState::Lost => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Says how the lock was lost ([`lease::loss_cause`]): the session's end is
/// the stronger news, then the lease running out, else the node was deleted.
fn loss_reason(lock: &SharedLock, guard: &Holding) -> String {
    let ended = zk_rwlock::Error::from_session_state(lock.client().state());
    let now = std::time::Instant::now();
    match lease::loss_cause(ended.is_some(), now, guard.lease_deadline()) {
        Some(LossCause::SessionEnded) => ended
            .as_ref()
            .and_then(failure::session_end)
            .unwrap_or("the ZooKeeper session ended")
            .to_owned(),
        Some(LossCause::LeaseRanOut) => {
            "its lease ran out: no answer from ZooKeeper within the session timeout".to_owned()
        }
        None => format!("node {} was deleted", guard.lost_part()),
    }
}

/// `300ms`, `2s`, `1.5s`; `0s` rather than `0ns`.
fn human(d: Duration) -> String {
    if d.is_zero() {
        "0s".to_owned()
    } else {
        format!("{d:?}")
    }
}

/// As [`human`], to the millisecond: `2.316s`, not `2.316492183s`.
fn human_ms(d: Duration) -> String {
    human(Duration::from_millis(
        u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
    ))
}

pub(crate) fn signal_exit(sig: libc::c_int) -> u8 {
    (128 + sig).clamp(0, 255) as u8
}

pub(crate) fn signal_name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGKILL => "SIGKILL",
        _ => "signal",
    }
}

/// The signals zk-rwlock handles itself: SIGINT, SIGTERM, SIGHUP.
pub(crate) struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl Signals {
    pub(crate) fn new() -> io::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The next signal received.
    pub(crate) async fn recv(&mut self) -> libc::c_int {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn on_revoke_values() {
        assert_eq!(parse_on_revoke("ignore"), Ok(OnRevoke(None)));
        assert_eq!(parse_on_revoke("TERM"), Ok(OnRevoke(Some(libc::SIGTERM))));
        assert_eq!(parse_on_revoke("sigusr1"), Ok(OnRevoke(Some(libc::SIGUSR1))));
        assert!(parse_on_revoke("STOP").is_err());
        assert!(parse_on_revoke("15").is_err());
        let cli = Cli::try_parse_from(["x", "-w", "/l", "--", "true"]).unwrap();
        assert_eq!(cli.args.on_revoke, OnRevoke(None), "ignore by default");
    }

    #[test]
    fn parses_command_after_double_dash() {
        let cli = Cli::try_parse_from(["x", "--write", "/a", "--", "sh", "-c", "exit 3"]).unwrap();
        assert!(cli.args.write && !cli.args.read);
        assert_eq!(cli.args.path, "/a");
        assert_eq!(cli.args.command, ["sh", "-c", "exit 3"]);
    }

    #[test]
    fn parses_command_without_double_dash() {
        let cli = Cli::try_parse_from(["x", "-r", "-t", "2s", "/a", "ls", "-l", "--all"]).unwrap();
        assert!(cli.args.read);
        assert_eq!(cli.args.timeout, Some(Duration::from_secs(2)));
        assert_eq!(cli.args.command, ["ls", "-l", "--all"]);
    }

    #[test]
    fn rejects_bad_arguments() {
        for bad in [
            &["x", "/a", "--", "true"][..],
            &["x", "-r", "-w", "/a", "--", "true"],
            &["x", "-w", "/a"],
            &["x", "-w", "--timeout", "-1s", "/a", "--", "true"],
            &["x", "-w", "--mode", "x", "/a", "--", "true"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn failures_while_waiting() {
        let exhausted = zk_rwlock::Error::SequenceExhausted {
            path: "/locks/a".to_owned(),
        };
        let text = exhausted.to_string();
        let f = waiting_failure(exhausted, Mode::Write, "/locks/a");
        assert_eq!(f.code, exit::SOFTWARE);
        // The library's own words: what happened and what to do.
        assert_eq!(f.message, text);
        assert!(
            f.message.contains("2147483647") && f.message.contains("delete `/locks/a`"),
            "{}",
            f.message
        );

        for (err, what) in [
            (zk_rwlock::Error::SessionExpired, "the ZooKeeper session expired"),
            (
                zk_rwlock::Error::SessionClosed,
                "the ZooKeeper session was closed",
            ),
        ] {
            let f = waiting_failure(err, Mode::Read, "/locks/a");
            assert_eq!(f.code, exit::SOFTWARE);
            assert_eq!(
                f.message,
                format!("{what} while waiting for the read lock on /locks/a")
            );
        }
        let f = waiting_failure(zk_rwlock::Error::AuthFailed, Mode::Write, "/locks/a");
        assert_eq!(f.code, exit::NOPERM);
        assert!(f.message.contains("rejected the credentials"), "{}", f.message);
        let f = waiting_failure(
            zk_rwlock::Error::NoAuth {
                path: "/locks/a".to_owned(),
            },
            Mode::Read,
            "/locks/a",
        );
        assert_eq!(f.code, exit::NOPERM);
    }

    #[test]
    fn exit_codes_of_statuses() {
        assert_eq!(signal_exit(libc::SIGINT), 130);
        assert_eq!(signal_exit(libc::SIGTERM), 143);
    }
}
