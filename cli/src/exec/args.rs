//! `exec`'s arguments and its help.

use std::ffi::OsString;
use std::time::Duration;

use clap::ArgGroup;
use zk_rwlock::Layout;
use zk_rwlock_cli::{common, connection, exit, Failure};

use super::messages::{human, human_ms};
use super::stop::{self, Fit, OnSuspend, Schedule};

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

A semaphore:
  --permits N instead of --read/--write takes one of N permits of the
  semaphore PATH (the library's Semaphore): at most N commands hold one
  at once, served in arrival order. Everything else is as for a lock:
  --timeout, the lease, --on-suspend, CMD's process tree, --on-revoke,
  the environment (ZK_RWLOCK_NODE is the permit's node, and
  ZK_RWLOCK_FENCING_TOKEN its czxid, unique and growing across the
  holders) and the exit codes. Every contender of PATH must give the same
  N: an exec that finds one before it with another N withdraws and exits
  2 without running CMD. Not with --also-read/--also-write, nor a
  --layout other than native; do not share PATH with a read/write lock.
  `zk-rwlock status PATH` shows the semaphore, its holders and its queue;
  `zk-rwlock revoke PATH` asks every permit holder to let go.

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
  min(1s, session timeout / 5) (and with --follower-lag at most a quarter
  of the lease span, which the lag shortens), less --grace (default 3/10
  of the session timeout, at most 1s), every process of CMD's tree gets
  SIGTERM; if any still runs at the deadline less the margin, or
  --kill-after after SIGTERM if that is sooner, SIGKILL; zk-rwlock waits
  until they are gone. The margin is time for the kernel to tear
  processes down (a large process, I/O in progress) before the deadline.
  What CMD survives: SIGTERM comes 49/50 x T - margin - grace after the
  send of the last request the server answered (T: the session timeout;
  7.8s with the defaults and T = 10s). That request may be T/5 older than
  the outage (the pings' gap), and the client tries again every
  min(1s, T/10) + 0.1s while the server is away, so CMD keeps running
  through any outage (from the server's last answer until it serves
  again, e.g. a restart) of up to 49/50 x T - margin - grace - T/5 -
  min(1s, T/10) - 0.1s: 4.7s with the defaults (12.5s with a 20s
  session). Longer outages are survived only with luck (up to 7.8s).

  On a healthy connection the last answer may be T/5 old (the pings'
  gap), so the schedule must leave CMD at least that and one retry gap:
  SIGTERM's time above (with lease or term; with ignore, the lease span)
  must be at least T/5 + min(1s, T/10) + 0.1s (3.1s with T = 10s, 1.3s
  with T = 4s), i.e. the outage survived must not be negative. A --grace
  or --follower-lag that breaks this is a usage error naming the largest
  value the session allows: --grace at most 5.7s with T = 10s (1.82s with
  4s); --follower-lag, with the default grace, at most 3.2s with T = 10s
  (0.253s with 4s). It is checked against --session-timeout before
  connecting and against the session timeout granted once connected.

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
       a --follower-lag or --grace the session timeout cannot carry,
       a zero --session-timeout or --connect-timeout, an empty
       ZK_CONNECT, a --layout without the mode asked for, --permits 0
       or with --read/--write, --also-read, --also-write or a --layout
       other than native (CMD not run); found before connecting,
       except what only the server knows: a lock directory holding
       data, a missing chroot, a session timeout granted shorter than
       asked for, a semaphore whose contenders carry another --permits
  69   ZooKeeper unreachable (no server answered, or no host name of
       the connect string resolves) or refusing sessions (CMD not run)
  70   other lock or ZooKeeper error before CMD ran, e.g. the session
       expired while waiting, or the lock directory used up ZooKeeper's
       sequence numbers (the message says how to recover); or the release
       failed after CMD exited 0
  75   timed out waiting for the lock or permit (--timeout; CMD not
       run)
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
  ZK_CONNECT  ZooKeeper servers when --connect is not given (set but
              empty: a usage error)
  ZK_RWLOCK_AUTH  --auth when it is not given (out of sight of ps)
  ZK_RWLOCK_FOLLOWER_LAG  --follower-lag when it is not given
  RUST_LOG    diagnostics on stderr, e.g. RUST_LOG=zk_rwlock=debug (without
              it, warnings only, as `zk-rwlock: warning:` lines)

Examples:
  zk-rwlock exec --write /locks/backup -- pg_dump -f /backups/db.sql mydb
  zk-rwlock exec --read --timeout 30s /locks/config -- ./read-config.sh
  ZK_CONNECT=zk1:2181,zk2:2181,zk3:2181 zk-rwlock exec -w /locks/deploy -- make deploy
  zk-rwlock exec -w --on-suspend ignore /locks/etl -- ./etl.sh  # checks $ZK_RWLOCK_LEASE_FILE
  zk-rwlock exec --permits 4 /semaphores/encoders -- ./encode.sh in.mov  # at most 4 at once";

/// Arguments of `exec`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = AFTER_HELP,
    after_long_help = AFTER_LONG_HELP,
    group(ArgGroup::new("mode").required(true).args(["read", "write", "permits"])),
)]
pub struct Args {
    /// Take the lock for reading (shared with other readers).
    #[arg(short, long)]
    pub(super) read: bool,

    /// Take the lock for writing (exclusive).
    #[arg(short, long)]
    pub(super) write: bool,

    /// Take one of N permits of the semaphore PATH instead of a lock: at
    /// most N commands run at once (N from 1; every contender of PATH must
    /// give the same N)
    #[arg(long, value_name = "N", value_parser = parse_permits, conflicts_with_all = ["also_read", "also_write"])]
    pub(super) permits: Option<u32>,

    /// Give up if the lock is not granted within DUR (e.g. 500ms, 30s,
    /// 1m30s; a plain number is seconds; 0 = only if free now). The first
    /// look at the lock always ends, so a free lock is granted whatever DUR
    /// is; connecting is bounded by --connect-timeout, not by DUR [default:
    /// wait as long as it takes]
    #[arg(short, long, value_name = "DUR", value_parser = common::parse_duration, allow_hyphen_values = true)]
    pub(super) timeout: Option<Duration>,

    /// ZooKeeper servers, host:port[,host:port...] [env: ZK_CONNECT]
    /// [default: 127.0.0.1:2181]
    #[arg(short, long, value_name = "SERVERS")]
    pub(super) connect: Option<String>,

    /// The name written into the lock node, shown by `status` (no '/' or '@')
    /// [default: this machine's host name]
    #[arg(long, value_name = "ID")]
    pub(super) identity: Option<String>,

    /// The ZooKeeper session timeout to ask for: if zk-rwlock cannot reach
    /// ZooKeeper for this long, the lock is lost (the server bounds it;
    /// more than 0)
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = common::parse_timeout, allow_hyphen_values = true)]
    pub(super) session_timeout: Duration,

    /// Give up connecting to ZooKeeper after DUR (more than 0)
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = common::parse_timeout, allow_hyphen_values = true)]
    pub(super) connect_timeout: Duration,

    #[command(flatten)]
    pub(super) security: connection::Security,

    #[command(flatten)]
    pub(super) acl: connection::AclArg,

    #[command(flatten)]
    pub(super) supervision: Supervision,

    /// Name this command's contender nodes as a peer library does, so that
    /// it excludes and is excluded by that library's locks on the same
    /// path: native, curator (Curator's InterProcessReadWriteLock),
    /// curator-mutex (Curator's InterProcessMutex; write only), kazoo
    /// (kazoo's ReadLock, WriteLock and Lock). Every layout's nodes count
    /// as contenders whatever this says [default: native]
    #[arg(long, value_name = "LAYOUT", env = "ZK_RWLOCK_LAYOUT", value_parser = common::parse_layout)]
    pub(super) layout: Option<Layout>,

    /// Also take the read lock on PATH2, all or nothing with PATH (repeat
    /// for more); the locks are taken in path order, so commands naming the
    /// same paths in any order never deadlock each other
    #[arg(long = "also-read", value_name = "PATH2")]
    pub(super) also_read: Vec<String>,

    /// Also take the write lock on PATH2, all or nothing with PATH (repeat
    /// for more)
    #[arg(long = "also-write", value_name = "PATH2")]
    pub(super) also_write: Vec<String>,

    /// The lock directory, an absolute ZooKeeper path like /locks/backup
    #[arg(value_name = "PATH")]
    pub(super) path: String,

    /// The command to run and its arguments (put `--` before them)
    #[arg(
        value_name = "CMD",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub(super) command: Vec<OsString>,
}

/// How CMD is supervised while it runs under the lock: `exec`'s options,
/// and `lead`'s, the same flags.
#[derive(Debug, Clone, clap::Args)]
pub struct Supervision {
    /// When CMD is stopped, how long it gets between SIGTERM and SIGKILL
    /// (SIGKILL comes sooner if the lease would run out first, except with
    /// --on-suspend ignore)
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = common::parse_duration, allow_hyphen_values = true)]
    pub(crate) kill_after: Duration,

    /// When the connection to ZooKeeper is lost while CMD runs: `lease`
    /// lets CMD run while the lease can still cover its stop (SIGTERM at the
    /// lease deadline less the kill margin less --grace, SIGKILL at the
    /// deadline less the margin); `term` stops CMD at once; `ignore` lets it
    /// run until the lock is lost
    #[arg(long, value_name = "WHAT", value_enum, default_value_t = OnSuspend::Lease)]
    pub(crate) on_suspend: OnSuspend,

    /// With --on-suspend lease: how long before its SIGKILL time CMD gets
    /// SIGTERM when the connection stays lost; at most what the session
    /// allows, so that SIGTERM never comes on a healthy connection (5.7s
    /// with a 10s session, 1.82s with 4s; see --help) [default: 3/10 of
    /// the session timeout, at most 1s]
    #[arg(long, value_name = "DUR", value_parser = common::parse_duration, allow_hyphen_values = true)]
    pub(crate) grace: Option<Duration>,

    /// When CMD exits, end the processes it started that still run
    /// (SIGTERM, SIGKILL after --kill-after) instead of holding the lock
    /// until they exit
    #[arg(long)]
    pub(crate) kill_orphans: bool,

    /// When someone asks the holder to let go (`zk-rwlock revoke`): send
    /// SIGNAL (TERM, INT, HUP, USR1, USR2, QUIT, KILL, with or without SIG)
    /// to every process of CMD's tree, once; `ignore` keeps CMD running
    #[arg(long, value_name = "SIGNAL|ignore", default_value = "ignore", value_parser = parse_on_revoke)]
    pub(crate) on_revoke: OnRevoke,

    /// On an ensemble whose followers may lose their leader or whose leader
    /// may stall: syncLimit x tickTime + tickTime of the ensemble (e.g. 12s).
    /// Makes the lease that much (and 3/20 of the session timeout) shorter,
    /// so that it ends before the leader can expire the session even then;
    /// the session timeout must be at least 2.25 x DUR, and leave the stop
    /// schedule room on a healthy connection (with the default grace: at
    /// most 3.2s with a 10s session, 0.253s with 4s; see --help) [default:
    /// 0s]
    #[arg(long, value_name = "DUR", value_parser = common::parse_duration, allow_hyphen_values = true, env = "ZK_RWLOCK_FOLLOWER_LAG")]
    pub(crate) follower_lag: Option<Duration>,
}

impl Supervision {
    /// The stop options, for [`Schedule::policy`] and [`Schedule::fit`].
    pub(crate) fn schedule(&self) -> Schedule {
        Schedule {
            on_suspend: self.on_suspend,
            kill_after: self.kill_after,
            grace: self.grace,
            follower_lag: self.follower_lag,
        }
    }

    /// Checks, before connecting, what the lock would refuse only once
    /// connected: `identity` (`--identity`) and whether `session_timeout`
    /// (`--session-timeout`, as asked for) can carry `--follower-lag`; and
    /// that the stop schedule (`--grace`, `--follower-lag`, `--on-suspend`)
    /// lets CMD run on a healthy connection to such a session
    /// ([`Schedule::fit`]). For `exec` and `lead`: a usage error (exit 2)
    /// at once, also when no server is reachable.
    pub(crate) fn check(&self, identity: Option<&str>, session_timeout: Duration) -> Result<(), Failure> {
        common::check_identity(identity)?;
        common::check_follower_lag(session_timeout, self.follower_lag)?;
        self.check_schedule(Session::Asked(session_timeout))
    }

    /// Checks once connected, as [`Supervision::check`] did before, that
    /// the stop schedule lets CMD run on a healthy connection to the
    /// session the server granted (`granted`; `asked`: `--session-timeout`):
    /// a server may grant less than asked for. (The lock checks the follower
    /// lag's own bound on it as it is built.) A usage error (exit 2).
    pub(crate) fn check_granted(&self, asked: Duration, granted: Duration) -> Result<(), Failure> {
        self.check_schedule(Session::Granted { asked, granted })
    }

    fn check_schedule(&self, session: Session) -> Result<(), Failure> {
        match refusal(&self.schedule(), session) {
            None => Ok(()),
            Some(message) => Err(Failure::new(exit::USAGE, message)),
        }
    }
}

/// The session timeout a check is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Session {
    /// `--session-timeout`, before connecting.
    Asked(Duration),
    /// What the server granted, once connected.
    Granted {
        /// `--session-timeout`.
        asked: Duration,
        /// The server's.
        granted: Duration,
    },
}

/// What to say if `schedule` does not let CMD run on a healthy connection
/// to `session` ([`Schedule::fit`]): the option to change and the largest
/// (or shortest) value the session allows, and why. `None` if it does.
/// Pure.
pub(crate) fn refusal(schedule: &Schedule, session: Session) -> Option<String> {
    let (timeout, session_words) = match session {
        Session::Asked(t) => (
            t,
            format!("a session timeout of {} (--session-timeout)", human(t)),
        ),
        Session::Granted { asked, granted } => (
            granted,
            format!(
                "the session timeout the server granted ({}; asked for {})",
                human(granted),
                human(asked)
            ),
        ),
    };
    let fit = schedule.fit(timeout);
    if fit == Fit::Runs {
        return None;
    }
    let first = schedule
        .span(timeout)
        .and_then(|span| schedule.policy(timeout).first_signal_after(span));
    let (what, when) = match schedule.on_suspend {
        OnSuspend::Ignore => ("the lock would be lost", "its lease ends"),
        OnSuspend::Lease | OnSuspend::Term => ("the command would be stopped", "SIGTERM comes"),
    };
    let why = format!(
        "{what} while the connection is healthy: {when} {}, and a healthy connection's answers may \
         come {} apart (at least {} is needed: that ping gap and a retry gap)",
        first.map_or_else(
            || "at once".to_owned(),
            |f| format!("{} after the last answer", human_ms(f))
        ),
        human(stop::ping_gap(timeout)),
        human_ms(stop::healthy_silence(timeout)),
    );
    let lag = schedule.follower_lag.filter(|lag| !lag.is_zero());
    let grace = match schedule.grace {
        Some(grace) => format!("--grace {}", human(grace)),
        None => format!("--grace {} (the default)", human_ms(stop::default_grace(timeout))),
    };
    Some(match fit {
        Fit::Runs => return None,
        Fit::GraceTooLong { largest } => format!(
            "--grace {} is too long for {session_words}{}: {why}; the largest grace this session allows \
             is {}",
            human(schedule.grace.unwrap_or_default()),
            lag.map_or_else(String::new, |lag| format!(" with --follower-lag {}", human(lag))),
            human(largest),
        ),
        Fit::LagTooLarge { largest } => format!(
            "--follower-lag {} (or ZK_RWLOCK_FOLLOWER_LAG) is too large for {session_words} with {grace}: \
             {why}; the largest follower lag this session allows with that grace is {}",
            human(lag.unwrap_or_default()),
            human(largest),
        ),
        Fit::SessionTooShort { shortest } => {
            let mut options = vec![format!("--on-suspend {}", on_suspend_name(schedule.on_suspend))];
            // No grace with `ignore`: nothing is sent before the lease's end.
            if schedule.on_suspend != OnSuspend::Ignore {
                options.push(grace);
            }
            if let Some(lag) = lag {
                options.push(format!("--follower-lag {}", human(lag)));
            }
            let need = shortest.map_or_else(
                || "no session timeout is long enough for them".to_owned(),
                |t| format!("they need a session timeout of at least {}", human(t)),
            );
            format!(
                "{session_words} is too short for {}: {why}; {need}",
                options.join(", ")
            )
        }
    })
}

/// `--on-suspend`'s value as written.
fn on_suspend_name(on_suspend: OnSuspend) -> &'static str {
    match on_suspend {
        OnSuspend::Lease => "lease",
        OnSuspend::Term => "term",
        OnSuspend::Ignore => "ignore",
    }
}

/// `--permits`' value: a whole number from 1.
pub(crate) fn parse_permits(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(0) => Err("a semaphore needs at least one permit: give N from 1".to_owned()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "`{s}` is not a number of permits: give a whole number from 1 to {}",
            u32::MAX
        )),
    }
}

/// What to do with a revocation request: the signal to send CMD, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnRevoke(pub(super) Option<libc::c_int>);

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
        assert_eq!(
            cli.args.supervision.on_revoke,
            OnRevoke(None),
            "ignore by default"
        );
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

    /// What a refused stop schedule says: the option to change, the
    /// largest value the session allows, and why; before connecting and
    /// with the timeout the server granted.
    #[test]
    fn refused_schedules_name_the_option_and_the_largest_value() {
        let parse = |args: &[&str]| {
            let mut all = vec!["x", "-w"];
            all.extend(args);
            all.extend(["/a", "--", "true"]);
            Cli::try_parse_from(all).unwrap().args
        };
        let s = Duration::from_secs;
        for (args, session, wanted) in [
            (
                &["--follower-lag", "4.4s"][..],
                Session::Asked(s(10)),
                "--follower-lag 4.4s (or ZK_RWLOCK_FOLLOWER_LAG) is too large for a session timeout of 10s \
                 (--session-timeout) with --grace 1s (the default): the command would be stopped while the \
                 connection is healthy: SIGTERM comes 1.925s after the last answer, and a healthy \
                 connection's answers may come 2s apart (at least 3.1s is needed: that ping gap and a retry \
                 gap); the largest follower lag this session allows with that grace is 3.2s",
            ),
            (
                &["--grace", "20s", "--on-suspend", "term"],
                Session::Asked(s(10)),
                "--grace 20s is too long for a session timeout of 10s (--session-timeout): the command would \
                 be stopped while the connection is healthy: SIGTERM comes at once, and",
            ),
            (
                &["--grace", "3s"],
                Session::Granted {
                    asked: s(10),
                    granted: s(4),
                },
                "--grace 3s is too long for the session timeout the server granted (4s; asked for 10s): the \
                 command would be stopped while the connection is healthy: SIGTERM comes 120ms after the last \
                 answer, and a healthy connection's answers may come 800ms apart (at least 1.3s is needed: \
                 that ping gap and a retry gap); the largest grace this session allows is 1.82s",
            ),
            (
                &["--follower-lag", "500ms", "--grace", "200ms"],
                Session::Granted {
                    asked: s(10),
                    granted: s(2),
                },
                "--grace 200ms is too long for the session timeout the server granted (2s; asked for 10s) \
                 with --follower-lag 500ms: the command would be stopped while the connection is healthy: \
                 SIGTERM comes 670ms after the last answer, and a healthy connection's answers may come 400ms \
                 apart (at least 700ms is needed: that ping gap and a retry gap); the largest grace this \
                 session allows is 170ms",
            ),
        ] {
            let args = parse(args);
            let message = refusal(&args.supervision.schedule(), session).expect("refused");
            assert!(message.starts_with(wanted), "{message}");
            let failure = match session {
                Session::Asked(t) => args.supervision.check(None, t),
                Session::Granted { asked, granted } => args.supervision.check_granted(asked, granted),
            }
            .unwrap_err();
            assert_eq!((failure.code, failure.message), (exit::USAGE, message));
        }
        assert!(refused_largest("--grace 20s", "5.7s"));
        // The defaults pass, on any session the docs name.
        for t in [2, 4, 10, 20, 60] {
            assert_eq!(
                refusal(&parse(&[]).supervision.schedule(), Session::Asked(s(t))),
                None
            );
        }
    }

    /// Whether `exec -w <option> /a -- true` on a 10 s session is refused
    /// with `largest` as the largest value.
    fn refused_largest(option: &str, largest: &str) -> bool {
        let mut all = vec!["x", "-w"];
        all.extend(option.split(' '));
        all.extend(["/a", "--", "true"]);
        let args = Cli::try_parse_from(all).unwrap().args;
        refusal(
            &args.supervision.schedule(),
            Session::Asked(Duration::from_secs(10)),
        )
        .is_some_and(|m| m.ends_with(&format!("allows is {largest}")))
    }

    #[test]
    fn permits_instead_of_a_mode() {
        let cli = Cli::try_parse_from(["x", "--permits", "3", "/s", "--", "true"]).unwrap();
        assert_eq!(cli.args.permits, Some(3));
        assert!(!cli.args.read && !cli.args.write);
        assert_eq!(parse_permits("1"), Ok(1));
        assert_eq!(
            parse_permits("0"),
            Err("a semaphore needs at least one permit: give N from 1".to_owned())
        );
        assert!(parse_permits("-1")
            .unwrap_err()
            .contains("is not a number of permits"));
        assert!(parse_permits("two")
            .unwrap_err()
            .contains("is not a number of permits"));
        for bad in [
            &["x", "--permits", "0", "/s", "--", "true"][..],
            &["x", "--permits", "2", "--read", "/s", "--", "true"],
            &["x", "--permits", "2", "-w", "/s", "--", "true"],
            &["x", "--permits", "2", "--also-read", "/t", "/s", "--", "true"],
            &["x", "--permits", "2", "--also-write", "/t", "/s", "--", "true"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
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
}
