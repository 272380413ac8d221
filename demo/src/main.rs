//! `zk-rwlock-demo`: many worker processes share one lock; the parent draws
//! their timeline live and checks from their reports that no writer ever
//! overlapped anyone and that writer fencing tokens only grew. With
//! `--permits N` they share a semaphore of N permits instead, and the
//! parent checks that no more than N held at once, that every worker was
//! granted, and that nothing was left in the directory.
//!
//! Each worker is this binary run again as `zk-rwlock-demo worker` (a hidden
//! subcommand), with its own ZooKeeper session. It reports events as JSON lines on stdout (see
//! [`event`]), stamped with `CLOCK_MONOTONIC`, which all processes of a
//! machine share. A grant is stamped right after the acquire returned and a
//! release right before the release call, so the checked hold intervals are
//! exactly the times the worker believed it held the lock.

mod event;
mod parent;
mod svg;
mod timeline;
mod verdict;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use zk_rwlock::Mode;

use zk_rwlock_cli::common::{self, parse_duration};
use zk_rwlock_cli::connection;

/// Many processes share one ZooKeeper read/write lock: watch their timeline
/// live, then the totals and the safety verdict (exit 1 on a violation).
///
/// Set RUST_LOG (e.g. RUST_LOG=zk_rwlock=debug) for diagnostics on stderr.
#[derive(Debug, Parser)]
#[command(
    name = "zk-rwlock-demo",
    version,
    about,
    long_about = None,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    args: Args,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// One worker process of the demo (internal).
    #[command(hide = true)]
    Worker(WorkerArgs),
}

fn main() -> ExitCode {
    common::init_tracing();
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Worker(args)) => worker::run(args),
        None => run(cli.args),
    }
}

/// Most worker processes a demo may start.
pub const MAX_WORKERS: usize = 64;
/// Longest demo run.
pub const MAX_DURATION: Duration = Duration::from_secs(3600);
/// Shortest run with --partition.
pub const MIN_PARTITION_DURATION: Duration = Duration::from_secs(8);

/// Arguments of the demo.
///
/// Without --connect the demo starts a throwaway ZooKeeper on 127.0.0.1
/// (standalone, or a local ensemble with --ensemble) and removes it
/// afterwards. An option given twice takes its last value (so that
/// `scripts/demo.sh --duration 30s` overrides the script's own choice).
#[derive(Debug, clap::Args)]
#[command(args_override_self = true)]
pub struct Args {
    /// Number of reader processes.
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub readers: usize,
    /// Number of writer processes.
    #[arg(long, value_name = "M", default_value_t = 3)]
    pub writers: usize,
    /// Share a semaphore of N permits (zk_rwlock::Semaphore) instead of the
    /// read/write lock: every worker takes one permit at a time. The verdict
    /// then checks that at most N held at once, that every worker that asked
    /// was granted, and that the directory is empty afterwards.
    #[arg(
        long,
        value_name = "N",
        conflicts_with_all = ["readers", "writers"],
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub permits: Option<u32>,
    /// With --permits: the number of worker processes [default: 3N].
    #[arg(long, value_name = "M", requires = "permits")]
    pub contenders: Option<usize>,
    /// How long the workers contend, e.g. 10s, 1500ms, 2m.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Use this ZooKeeper instead of a throwaway one, e.g. 127.0.0.1:2181,127.0.0.1:2182.
    #[arg(long, value_name = "SERVERS")]
    pub connect: Option<String>,
    /// Start a throwaway local ensemble of this many servers (3, 5 or 7) instead of one server.
    #[arg(long, value_name = "N")]
    pub ensemble: Option<usize>,
    /// Halfway through, kill the ensemble's leader (needs --ensemble).
    #[arg(long)]
    pub kill_leader: bool,
    /// Cut the first writer (or reader) off from ZooKeeper in the middle of
    /// a long hold, through a proxy the demo starts for it: it is suspended,
    /// stops its work, and loses the lock at its lease deadline; the next
    /// writer is granted once the server has expired its session (the
    /// connection is restored then). Needs --duration 8s or more.
    #[arg(long)]
    pub partition: bool,
    /// Also write the timeline as an SVG picture to this file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Also write every event as a JSON line to this file (with the worker's label).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// The lock path [default: /zk-rwlock-demo/<pid>].
    #[arg(long, value_name = "P")]
    pub path: Option<String>,
    /// Seed of the workers' random hold and think times [default: from the clock].
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Credentials and TLS for --connect (the workers get them too; the
    /// credentials through the environment, out of sight of ps).
    #[command(flatten)]
    pub security: connection::Security,
    #[command(flatten)]
    pub acl: connection::AclArg,
}

/// Read or write, as a command-line value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WorkerMode {
    /// Shared.
    Read,
    /// Exclusive.
    Write,
}

impl From<WorkerMode> for Mode {
    fn from(m: WorkerMode) -> Mode {
        match m {
            WorkerMode::Read => Mode::Read,
            WorkerMode::Write => Mode::Write,
        }
    }
}

/// Arguments of one demo worker process.
///
/// The worker connects, prints `{"ev":"ready",..}`, and starts when it reads
/// a line `go` on stdin; the end of stdin stops it.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// ZooKeeper connect string.
    #[arg(long, value_name = "SERVERS")]
    pub connect: String,
    /// The lock path.
    #[arg(long, value_name = "P")]
    pub path: String,
    /// Read or write.
    #[arg(
        long,
        value_enum,
        required_unless_present = "permits",
        conflicts_with = "permits"
    )]
    pub mode: Option<WorkerMode>,
    /// Take one of this many permits of a semaphore on the path
    /// (`zk_rwlock::Semaphore`) instead of the read/write lock.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub permits: Option<u32>,
    /// How long to contend after `go`.
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub duration: Duration,
    /// Seed of the random hold and think times.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Name used in the contender nodes (`demo-<label>`) and in the store's records.
    #[arg(long, default_value = "worker")]
    pub label: String,
    /// A writer writes to the fenced store in this directory while it holds the lock.
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// The lock's follower lag (`LockBuilder::follower_lag`): on an ensemble whose followers
    /// may lose their leader, `syncLimit × tickTime + tickTime`.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "0s")]
    pub follower_lag: Duration,
    /// Credentials (from ZK_RWLOCK_AUTH) and TLS.
    #[command(flatten)]
    pub security: connection::Security,
    #[command(flatten)]
    pub acl: connection::AclArg,
}

/// A validated demo configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Reader processes.
    pub readers: usize,
    /// Writer processes.
    pub writers: usize,
    /// A semaphore of this many permits instead of the lock (`--permits`).
    pub permits: Option<u32>,
    /// Processes that take permits (`--contenders`; 0 without `--permits`).
    pub contenders: usize,
    /// Run length.
    pub duration: Duration,
    /// An existing ZooKeeper to use.
    pub connect: Option<String>,
    /// Members of the throwaway ZooKeeper (1: standalone).
    pub members: usize,
    /// Kill the leader halfway.
    pub kill_leader: bool,
    /// Cut one worker off mid-hold.
    pub partition: bool,
    /// Where to write the SVG.
    pub svg: Option<PathBuf>,
    /// Where to write the events.
    pub events: Option<PathBuf>,
    /// The lock path.
    pub path: String,
    /// Whether the path is the default one (its parent may be removed afterwards).
    pub default_path: bool,
    /// Seed of the workers' random times.
    pub seed: u64,
    /// Credentials and TLS of every session.
    pub security: connection::Security,
    /// The ACL of the lock's nodes.
    pub acl: connection::AclArg,
}

impl Config {
    /// Checks the arguments; the error says what to change.
    pub fn new(args: Args) -> Result<Config, String> {
        let (readers, writers, contenders) = match args.permits {
            Some(n) => (0, 0, args.contenders.unwrap_or((n as usize).saturating_mul(3))),
            None => (args.readers, args.writers, 0),
        };
        let workers = readers.saturating_add(writers).saturating_add(contenders);
        if workers == 0 {
            return Err(if args.permits.is_some() {
                "--contenders 0: the demo needs at least one worker".into()
            } else {
                "--readers and --writers are both 0: the demo needs at least one worker".into()
            });
        }
        if workers > MAX_WORKERS {
            return Err(if args.permits.is_some() {
                format!(
                    "--contenders {workers} (3 × --permits unless given) is too many worker processes; at most {MAX_WORKERS} are allowed"
                )
            } else {
                format!(
                    "--readers {} and --writers {} make {workers} worker processes; at most {MAX_WORKERS} are allowed",
                    args.readers, args.writers
                )
            });
        }
        if args.duration.is_zero() {
            return Err("--duration must be longer than 0, e.g. --duration 10s".into());
        }
        if args.duration > MAX_DURATION {
            return Err(format!("--duration {:?} is too long: at most 1h", args.duration));
        }
        if args.connect.is_some() && args.ensemble.is_some() {
            return Err(
                "--ensemble starts a throwaway local ensemble and cannot be combined with --connect".into(),
            );
        }
        if let Some(n) = args.ensemble {
            if !(3..=7).contains(&n) || n % 2 == 0 {
                return Err(format!(
                    "--ensemble {n}: the ensemble must have 3, 5 or 7 members"
                ));
            }
        }
        if args.kill_leader && args.ensemble.is_none() {
            return Err(
                "--kill-leader needs --ensemble 3: it kills the leader of a throwaway local \
                        ensemble (a single server, or one given with --connect, is never killed)"
                    .into(),
            );
        }
        if args.partition && args.duration < MIN_PARTITION_DURATION {
            return Err(format!(
                "--partition needs --duration 8s or more (got {:?}): the cut-off worker's session must \
                 expire within the run, one session timeout after the cut (4 s on the demo's own server)",
                args.duration
            ));
        }
        if let Some(c) = &args.connect {
            if c.trim().is_empty() {
                return Err("--connect is empty: give host:port pairs, e.g. 127.0.0.1:2181".into());
            }
        }
        if args.connect.is_none()
            && (args.security.tls_ca.is_some() || args.acl != connection::AclArg::default())
        {
            return Err(
                "--tls-ca, --acl and --dir-acl are for a secured ZooKeeper given with --connect: the demo's own \
                 throwaway server takes plain connections and any identity"
                    .into(),
            );
        }
        args.security.check_acl(args.acl).map_err(|f| f.message)?;
        let default_path = args.path.is_none();
        let path = args
            .path
            .unwrap_or_else(|| format!("/zk-rwlock-demo/{}", std::process::id()));
        if !path.starts_with('/') || path == "/" || path.ends_with('/') || path.contains("//") {
            return Err(format!(
                "--path `{path}` is not a lock path: use an absolute ZooKeeper path like /zk-rwlock-demo/run1"
            ));
        }
        let seed = args.seed.unwrap_or_else(|| {
            worker::SplitMix64::new(event::now_us() ^ u64::from(std::process::id())).next_u64() % 1_000_000
        });
        Ok(Config {
            readers,
            writers,
            permits: args.permits,
            contenders,
            duration: args.duration,
            connect: args.connect,
            members: args.ensemble.unwrap_or(1),
            kill_leader: args.kill_leader,
            partition: args.partition,
            svg: args.svg,
            events: args.events,
            path,
            default_path,
            seed,
            security: args.security,
            acl: args.acl,
        })
    }
}

/// Runs the demo.
fn run(args: Args) -> ExitCode {
    match Config::new(args) {
        Ok(config) => parent::run(config),
        Err(msg) => {
            eprintln!("zk-rwlock demo: error: {msg}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn config(line: &str) -> Result<Config, String> {
        let argv = std::iter::once("demo").chain(line.split_whitespace());
        Config::new(Cli::try_parse_from(argv).map_err(|e| e.to_string())?.args)
    }

    #[test]
    fn defaults() {
        let c = config("--seed 1").unwrap();
        assert_eq!((c.readers, c.writers), (6, 3));
        assert_eq!(c.duration, Duration::from_secs(10));
        assert_eq!(
            (c.members, c.kill_leader, c.partition, c.seed),
            (1, false, false, 1)
        );
        let c = config("--partition --duration 8s --events e.jsonl").unwrap();
        assert!(c.partition);
        assert_eq!(c.events, Some(PathBuf::from("e.jsonl")));
        assert!(c.default_path && c.path.starts_with("/zk-rwlock-demo/"));
        let c = config("--ensemble 3 --kill-leader --path /x/y --readers 0").unwrap();
        assert_eq!((c.members, c.kill_leader, c.readers), (3, true, 0));
        assert_eq!(c.path, "/x/y");
        assert!(!c.default_path);
        // The last of a repeated option wins.
        let c = config("--duration 10s --svg a.svg --duration 3s --svg b.svg").unwrap();
        assert_eq!(c.duration, Duration::from_secs(3));
        assert_eq!(c.svg, Some(PathBuf::from("b.svg")));
        // A semaphore: 3N contenders unless told, and no readers or writers.
        let c = config("--permits 3").unwrap();
        assert_eq!(
            (c.permits, c.contenders, c.readers, c.writers),
            (Some(3), 9, 0, 0)
        );
        let c = config("--permits 2 --contenders 5 --partition --duration 8s").unwrap();
        assert_eq!((c.permits, c.contenders, c.partition), (Some(2), 5, true));
    }

    #[test]
    fn clear_errors() {
        for (line, says) in [
            ("--readers 0 --writers 0", "at least one worker"),
            ("--readers 60 --writers 5", "at most 64"),
            ("--duration 0s", "longer than 0"),
            ("--duration 2h", "at most 1h"),
            ("--kill-leader", "--kill-leader needs --ensemble 3"),
            (
                "--partition --duration 5s",
                "--partition needs --duration 8s or more",
            ),
            ("--ensemble 2", "3, 5 or 7"),
            ("--ensemble 9", "3, 5 or 7"),
            (
                "--ensemble 3 --connect 127.0.0.1:2181",
                "cannot be combined with --connect",
            ),
            ("--path relative", "not a lock path"),
            ("--path /a/", "not a lock path"),
            ("--duration 5x", "invalid duration `5x`"),
            ("--permits 0", "--permits"),
            ("--permits 2 --writers 1", "cannot be used with"),
            ("--permits 2 --readers 1", "cannot be used with"),
            ("--contenders 4", "--permits"),
            ("--permits 2 --contenders 0", "--contenders 0"),
            ("--permits 30", "at most 64"),
            (
                "--duration 10s --svg a.svg --duration 0s --svg b.svg",
                "longer than 0",
            ),
        ] {
            let err = config(line).expect_err(line);
            assert!(err.contains(says), "{line}: {err}");
        }
    }
}
