//! `zk-rwlock lead`: run a service as the leader of an election, for good.
//!
//! Campaign ([`zk_rwlock::Election`]), run CMD as the leader under `exec`'s
//! supervision ([`crate::exec::run_holding`]: the lease, the keeper
//! process that owns CMD's tree, signals), resign when CMD's tree has
//! exited, and campaign again after a back-off when CMD failed or the
//! leadership was lost, up to `--max-terms`.

use std::ffi::OsString;
use std::hash::{BuildHasher, Hasher};
use std::process::ExitCode;
use std::time::Duration;

use zk_rwlock::{zk, Election, Guard};

use crate::exec::{self, End, Holding, Signals, Supervision};
use zk_rwlock_cli::common;
use zk_rwlock_cli::connection;
use zk_rwlock_cli::connection::{Acl, AclArg, Security};
use zk_rwlock_cli::{exit, Failure};

/// How long to wait, at most, for the session to close before exiting.
const CLOSE_WITHIN: Duration = Duration::from_secs(5);

const AFTER_HELP: &str = "See `zk-rwlock lead --help` for what happens when CMD exits or leadership is lost.";

const AFTER_LONG_HELP: &str = "\
How it works:
  zk-rwlock campaigns in the election on the lock directory PATH: it waits
  for the write lock there as a plain writer (`zk-rwlock status PATH` shows
  every candidate, and the leader). Once it leads, it writes its
  announcement (`leader:<identity>`) to its node, runs CMD exactly as
  `zk-rwlock exec --write` does (see `zk-rwlock exec --help`: the lease,
  --on-suspend, --grace, --kill-after, the keeper that owns CMD's whole
  process tree, the environment variables; ZK_RWLOCK_FENCING_TOKEN is the
  term), and resigns (deletes its node) once CMD and every process it
  started have exited. No one else can lead before CMD's tree is gone.

After a term:
  CMD exited 0            resign and exit 0 (the service is done)
  CMD exited non-zero     resign, wait the back-off, campaign again
  leadership lost         (session expired, node deleted, connection lost
                          too long: CMD was stopped) wait the back-off,
                          campaign again, on a new session if needed
  SIGINT, SIGTERM, SIGHUP forwarded to CMD's tree while it runs; then
                          resign and exit 128+signal (while campaigning or
                          backing off: withdraw and exit 128+signal)
  CMD cannot be started   exit 126 or 127
  resignation refused     (the server refused the node's deletion, e.g. the
                          directory's ACL): exit with CMD's status, or 70
                          if it was 0; closing the session deletes the node
  After --max-terms terms, zk-rwlock exits with the last term's code instead
  of campaigning again. The back-off starts at the low end of --backoff,
  doubles after each term that ended within the high end, goes back to the
  low end after a longer term, and is drawn at random between half and all
  of that (jitter).

Revocation:
  `zk-rwlock revoke PATH` asks the leader to step down; it ends nothing by
  itself. With --on-revoke SIGNAL, CMD's tree gets SIGNAL once; when the
  tree has exited the leader resigns and goes on as above for CMD's status
  (killed by SIGNAL: campaign again after the back-off, behind the
  candidates already waiting). With --on-revoke ignore (the default) CMD
  keeps running and the leader keeps leading, with the same term, until
  CMD exits: `zk-rwlock status PATH` and the library's observers keep
  naming it, marked as asked to step down, and nobody else leads
  meanwhile.

Exit codes:
  0    CMD exited 0 as leader
  2    usage error (CMD not run)
  69   ZooKeeper unreachable or refusing sessions at the start
  70, 77  other ZooKeeper errors, permission denied (CMD not run)
  79   the leadership was lost in the last term allowed by --max-terms
  126, 127  CMD cannot be executed, or not found
  129, 130, 143  zk-rwlock got SIGHUP, SIGINT or SIGTERM
  CMD's own status, for the last term allowed by --max-terms

Examples:
  zk-rwlock lead /elections/billing -- ./billing-scheduler
  zk-rwlock lead --max-terms 1 --backoff 2s..1m /elections/etl -- ./etl.sh";

/// Arguments of `lead`.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP, after_long_help = AFTER_LONG_HELP)]
pub struct Args {
    /// ZooKeeper servers, host:port[,host:port...] [env: ZK_CONNECT]
    /// [default: 127.0.0.1:2181]
    #[arg(short, long, alias = "server", value_name = "SERVERS")]
    connect: Option<String>,

    /// The candidate's name, written into its node and announcement, shown
    /// by `status` (no '/' or '@') [default: this machine's host name]
    #[arg(long, value_name = "ID")]
    identity: Option<String>,

    /// The ZooKeeper session timeout to ask for (more than 0)
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = common::parse_timeout, allow_hyphen_values = true)]
    session_timeout: Duration,

    /// Give up connecting to ZooKeeper after DUR (more than 0)
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = common::parse_timeout, allow_hyphen_values = true)]
    connect_timeout: Duration,

    #[command(flatten)]
    security: Security,

    #[command(flatten)]
    acl: AclArg,

    /// Wait between terms: MIN..MAX, doubling from MIN after each failed
    /// term, with jitter (see --help)
    #[arg(long, value_name = "MIN..MAX", default_value = "1s..30s", value_parser = parse_backoff)]
    backoff: Backoff,

    /// Lead at most N terms, then exit with the last term's code
    /// [default: campaign again for ever]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_terms: Option<u64>,

    #[command(flatten)]
    supervision: Supervision,

    /// The election's lock directory, an absolute ZooKeeper path
    #[arg(value_name = "PATH")]
    path: String,

    /// The command to run as leader and its arguments (put `--` before them)
    #[arg(
        value_name = "CMD",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    command: Vec<OsString>,
}

/// `--backoff`: the shortest and the longest wait between terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    min: Duration,
    max: Duration,
}

/// `MIN..MAX`, each a duration (`1s..30s`); a single duration is both.
fn parse_backoff(s: &str) -> Result<Backoff, String> {
    let (min, max) = match s.split_once("..") {
        Some((min, max)) => (common::parse_duration(min)?, common::parse_duration(max)?),
        None => {
            let d = common::parse_duration(s)?;
            (d, d)
        }
    };
    if min > max {
        return Err(format!("`{s}`: the low end is above the high end"));
    }
    Ok(Backoff { min, max })
}

impl Backoff {
    /// The wait after a term that ended `failures` failed terms in a row
    /// (1 for the first), before jitter: MIN doubled, at most MAX.
    fn base(self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(30);
        self.min.saturating_mul(1 << doublings).min(self.max)
    }

    /// [`Backoff::base`] with jitter: between half and all of it.
    fn wait(self, failures: u32) -> Duration {
        let base = self.base(failures);
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let fraction = 0.5 + (random % 1000) as f64 / 2000.0;
        base.mul_f64(fraction)
    }
}

/// Runs `lead`.
pub fn run(args: Args) -> ExitCode {
    // One thread, as `exec`: CMD is spawned from the main thread.
    match common::block_on(lead(args)) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => failure.report(),
    }
}

/// The session of the terms: an election on a client, replaced when the
/// session ends.
struct Session {
    election: Election,
    states: zk::StateWatcher,
}

async fn lead(args: Args) -> Result<u8, Failure> {
    let mut signals = Signals::new()
        .map_err(|e| Failure::new(exit::SOFTWARE, format!("cannot install signal handlers: {e}")))?;
    common::check_lock_path(&args.path)?;
    args.security.check_acl(args.acl)?;
    args.supervision
        .check(args.identity.as_deref(), args.session_timeout)?;
    let servers = connection::servers(args.connect.clone())?;
    let mut session: Option<Session> = None;
    let mut terms = 0u64;
    let mut failures = 0u32;
    let result = loop {
        let current = match session.take() {
            Some(s) if zk_rwlock::Error::from_session_state(s.election.client().state()).is_none() => s,
            ended => {
                if let Some(ended) = ended {
                    close(ended).await;
                }
                let client = tokio::select! {
                    client = args.security.connect(&servers, args.session_timeout, args.connect_timeout) => client,
                    sig = signals.recv() => {
                        eprintln!("zk-rwlock: interrupted ({}) while connecting to ZooKeeper", exec::signal_name(sig));
                        break Ok(exec::signal_exit(sig));
                    }
                };
                let client = match client {
                    Ok(client) => client,
                    // Reachable before: try again after the back-off.
                    Err(failure) if terms > 0 && failure.code == exit::UNAVAILABLE => {
                        failures += 1;
                        eprintln!("zk-rwlock: {}", failure.message);
                        if let Some(code) = back_off(&args, failures, &mut signals).await {
                            break Ok(code);
                        }
                        continue;
                    }
                    Err(failure) => break Err(failure),
                };
                let states = client.state_watcher();
                match build(&args, client) {
                    Ok(election) => {
                        let session = Session { election, states };
                        // The server may have granted a shorter session
                        // than asked for: the stop schedule must still let
                        // CMD run on a healthy connection.
                        let granted = exec::session_timeout_of(session.election.client());
                        if let Err(failure) = args.supervision.check_granted(args.session_timeout, granted) {
                            close(session).await;
                            break Err(failure);
                        }
                        session
                    }
                    Err(e) => break Err(Failure::from(e)),
                }
            }
        };
        let election = current.election.clone();
        session = Some(current);
        let campaigned = tokio::select! {
            campaigned = election.campaign() => campaigned,
            sig = signals.recv() => {
                eprintln!(
                    "zk-rwlock: interrupted ({}) while campaigning on {}",
                    exec::signal_name(sig),
                    args.path
                );
                break Ok(exec::signal_exit(sig));
            }
        };
        let leadership = match campaigned {
            Ok(leadership) => leadership,
            Err(e) if e.is_session_over() || matches!(e, zk_rwlock::Error::Lost { .. }) => {
                failures += 1;
                eprintln!(
                    "zk-rwlock: campaign on {} failed: {e}; campaigning again",
                    args.path
                );
                if let Some(code) = back_off(&args, failures, &mut signals).await {
                    break Ok(code);
                }
                continue;
            }
            Err(e) => break Err(Failure::from(e)),
        };
        terms += 1;
        let term = leadership.term();
        eprintln!(
            "zk-rwlock: leading {} (term {term}) as {}",
            args.path,
            election.identity()
        );
        let started = std::time::Instant::now();
        let guard = Holding::One(Guard::from(leadership.into_guard()));
        let ran = exec::run_holding(
            election.lock().client(),
            guard,
            &args.command,
            &args.supervision,
            &mut signals,
        )
        .await;
        tracing::debug!(term, code = ran.code, end = ?ran.end, "term over");
        match ran.end {
            End::NotStarted | End::Interrupted => break Ok(ran.code),
            End::Exited if ran.code == 0 => break Ok(0),
            End::Exited | End::Lost => {}
            // The node may still be there (the server refused its deletion,
            // and would refuse the next one too): a campaign on this
            // session would queue behind it for ever. Stop; closing the
            // session (below) deletes the node.
            End::ReleaseFailed => {
                eprintln!("zk-rwlock: stopping: closing the ZooKeeper session deletes the node");
                break Ok(ran.code);
            }
        }
        if args.max_terms.is_some_and(|max| terms >= max) {
            break Ok(ran.code);
        }
        failures = if started.elapsed() > args.backoff.max {
            1
        } else {
            failures + 1
        };
        let why = match ran.end {
            End::Exited => format!("the command exited with status {}", ran.code),
            _ => "the leadership ended".to_owned(),
        };
        eprintln!("zk-rwlock: {why} (term {term}); campaigning again");
        if let Some(code) = back_off(&args, failures, &mut signals).await {
            break Ok(code);
        }
    };
    if let Some(session) = session {
        close(session).await;
    }
    result
}

/// The election on `client` that the arguments describe.
fn build(args: &Args, client: zk::Client) -> Result<Election, zk_rwlock::Error> {
    let mut builder = Election::builder(client, &args.path);
    if let Some(identity) = &args.identity {
        builder = builder.identity(identity);
    }
    if args.acl.acl != Acl::Open {
        builder = builder.acls(&args.acl.acl.acls());
    }
    if let Some(dir_acl) = args.acl.dir_acl {
        builder = builder.directory_acls(&dir_acl.acls());
    }
    if let Some(lag) = args.supervision.follower_lag {
        builder = builder.follower_lag(lag);
    }
    builder.build()
}

/// Waits the back-off after `failures` failed terms in a row; a signal
/// meanwhile ends `lead`: its exit code.
async fn back_off(args: &Args, failures: u32, signals: &mut Signals) -> Option<u8> {
    let wait = args.backoff.wait(failures);
    tracing::debug!(?wait, failures, "backing off");
    tokio::select! {
        () = tokio::time::sleep(wait) => None,
        sig = signals.recv() => {
            eprintln!("zk-rwlock: interrupted ({}) between terms", exec::signal_name(sig));
            Some(exec::signal_exit(sig))
        }
    }
}

/// Closes the session (dropping the election, its last client) and waits
/// for its end, which also waits for background clean-ups.
async fn close(session: Session) {
    let Session { election, states } = session;
    drop(election);
    let closed = connection::await_session_end(states, CLOSE_WITHIN).await;
    tracing::debug!(closed, "ZooKeeper session over");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_parses_and_doubles() {
        let b = parse_backoff("1s..30s").unwrap();
        assert_eq!((b.min, b.max), (Duration::from_secs(1), Duration::from_secs(30)));
        assert_eq!(b.base(1), Duration::from_secs(1));
        assert_eq!(b.base(2), Duration::from_secs(2));
        assert_eq!(b.base(5), Duration::from_secs(16));
        assert_eq!(b.base(6), Duration::from_secs(30));
        assert_eq!(b.base(u32::MAX), Duration::from_secs(30));
        for failures in 1..8 {
            let w = b.wait(failures);
            assert!(w >= b.base(failures) / 2 && w <= b.base(failures), "{w:?}");
        }
        assert_eq!(parse_backoff("500ms").unwrap().max, Duration::from_millis(500));
        assert!(parse_backoff("30s..1s").is_err());
        assert!(parse_backoff("x..1s").is_err());
    }
}
