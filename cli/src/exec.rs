//! `zk-rwlock exec`: run a command while holding a read or write lock (or
//! one of a semaphore's N permits, `--permits N`), in the manner of
//! flock(1), `etcdctl lock` and `consul lock`.
//!
//! A permit is taken as a write [`Guard`] (`Guard::from(permit)`) as soon
//! as it is granted: from there on it is supervised, released and reported
//! as a lock is, by the same code.
//!
//! The sequence is: connect, acquire (interruptible, optionally bounded),
//! spawn the command, supervise it (child exit, the lock's state and
//! lease, signals), release, close the session, exit. Every way out of the
//! acquire deletes the contender node before the process exits: the
//! session is closed explicitly and its end awaited, which also waits for
//! the library's background clean-up of a cancelled acquire.
//!
//! While the command runs, the guard's [`HoldState`](zk_rwlock::HoldState)
//! and lease deadline decide when it is stopped ([`stop`], a pure verdict),
//! and the command can read them in its lease file ([`lease_file`]).
//!
//! Here: the orchestration (connect, acquire, close). Beside it: [`args`]
//! (the options and the help), [`run`](mod@run) (CMD under a held lock, shared with
//! `lead`), [`supervise`] (following CMD, the lock and signals),
//! [`messages`] (what it says, pure), [`signals`], [`link`] and [`keeper`]
//! (the process that owns CMD's tree, and `exec`'s side of it), [`tree`].

mod args;
mod holding;
pub mod keeper;
mod lease_file;
mod link;
mod messages;
mod run;
mod signals;
mod stop;
mod supervise;
mod tree;

use std::process::ExitCode;
use std::time::Duration;

use zk_rwlock::{zk, Guard, Layout, Mode, MultiLock, Semaphore, SharedLock};
use zk_rwlock_cli::failure::{self, exit, Failure};
use zk_rwlock_cli::{common, connection};

pub use args::Args;
pub(crate) use args::Supervision;
pub(crate) use holding::Holding;
use messages::human;
pub(crate) use run::{run_holding, session_timeout_of, End};
pub(crate) use signals::{signal_exit, signal_name, Signals};

/// How long to wait, at most, for the session to close (and with it for the
/// deletion of any node left by a cancelled acquire) before exiting.
const CLOSE_WITHIN: Duration = Duration::from_secs(5);

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
    check(&args)?;
    let servers = connection::servers(args.connect.clone())?;
    let client = tokio::select! {
        client = args.security.connect(&servers, args.session_timeout, args.connect_timeout) => client?,
        sig = signals.recv() => {
            eprintln!("zk-rwlock: interrupted ({}) while connecting to ZooKeeper", signal_name(sig));
            return Ok(signal_exit(sig));
        }
    };
    let states = client.state_watcher();
    let target = match args.permits {
        Some(permits) => semaphore(&client, &args, permits).map(Target::Permit),
        None => locks(&client, &args),
    };
    // The locks (or the semaphore) hold the client now, if they were made;
    // if not (the server granted a session timeout too short for
    // --follower-lag), the session closes at once.
    drop(client);
    let result = match target {
        // The server may have granted a shorter session than asked for: the
        // stop schedule must still let CMD run on a healthy connection.
        Ok(target) => match args
            .supervision
            .check_granted(args.session_timeout, session_timeout_of(target.client()))
        {
            Ok(()) => with_lock(target, &args, &mut signals).await,
            Err(failure) => Err(failure),
        },
        Err(e) => Err(Failure::from(e)),
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

/// What `exec` acquires: PATH's lock in the mode asked for, with the other
/// locks of `--also-read`/`--also-write`, or one of the permits of the
/// semaphore PATH (`--permits`).
enum Target {
    Lock {
        lock: SharedLock,
        mode: Mode,
        extra: Vec<(SharedLock, Mode)>,
    },
    Permit(Semaphore),
}

/// PATH's lock and the others asked for, on `client`.
fn locks(client: &zk::Client, args: &Args) -> Result<Target, zk_rwlock::Error> {
    let build = |path: &str| {
        let mut builder = args.acl.apply(SharedLock::builder(client.clone(), path));
        if let Some(lag) = args.supervision.follower_lag {
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
    let lock = build(&args.path)?;
    let extra = (args.also_read.iter().map(|p| (p, Mode::Read)))
        .chain(args.also_write.iter().map(|p| (p, Mode::Write)))
        .map(|(p, mode)| build(p).map(|lock| (lock, mode)))
        .collect::<Result<_, _>>()?;
    let mode = if args.write { Mode::Write } else { Mode::Read };
    Ok(Target::Lock { lock, mode, extra })
}

/// The semaphore PATH of `permits` permits, on `client`.
fn semaphore(client: &zk::Client, args: &Args, permits: u32) -> Result<Semaphore, zk_rwlock::Error> {
    let mut builder = args
        .acl
        .apply_semaphore(Semaphore::builder(client.clone(), &args.path, permits));
    if let Some(lag) = args.supervision.follower_lag {
        builder = builder.follower_lag(lag);
    }
    if let Some(identity) = &args.identity {
        builder = builder.identity(identity);
    }
    builder.build()
}

impl Target {
    fn client(&self) -> &zk::Client {
        match self {
            Target::Lock { lock, .. } => lock.client(),
            Target::Permit(semaphore) => semaphore.client(),
        }
    }

    /// What is waited for, in a sentence: `the write lock on /locks/a (and
    /// 1 more lock)`, `one of the 4 permits on /semaphores/s`.
    fn awaited(&self) -> String {
        match self {
            Target::Lock { lock, mode, extra } => format!("the {mode} lock on {}", lock_paths(lock, extra)),
            Target::Permit(semaphore) => permit_words(semaphore.path(), semaphore.permits()),
        }
    }

    /// What was asked for, for a timeout: one lock in its mode, several,
    /// or a permit.
    fn wanted(&self) -> String {
        match self {
            Target::Lock { lock, extra, .. } if !extra.is_empty() => {
                format!("the locks on {}", lock_paths(lock, extra))
            }
            _ => self.awaited(),
        }
    }

    /// Acquires; `Ok(None)` if `timeout` passed first. A permit is held
    /// as a write guard (`Guard::from`): the supervision is a lock's.
    async fn acquire(&self, timeout: Option<Duration>) -> Result<Option<Holding>, zk_rwlock::Error> {
        match self {
            Target::Lock { lock, mode, extra } => acquire(lock, *mode, extra.clone(), timeout).await,
            Target::Permit(semaphore) => {
                let permit = match timeout {
                    None => semaphore.acquire().await.map(Some),
                    Some(t) => semaphore.acquire_timeout(t).await,
                };
                permit.map(|p| p.map(|permit| Holding::One(Guard::from(permit))))
            }
        }
    }
}

/// PATH, and how many more locks were asked for.
fn lock_paths(lock: &SharedLock, extra: &[(SharedLock, Mode)]) -> String {
    match extra.len() {
        0 => lock.path().to_owned(),
        1 => format!("{} (and 1 more lock)", lock.path()),
        n => format!("{} (and {n} more locks)", lock.path()),
    }
}

/// A permit of the semaphore `path` of `permits` permits, in a sentence.
fn permit_words(path: &str, permits: u32) -> String {
    if permits == 1 {
        format!("the only permit on {path}")
    } else {
        format!("one of the {permits} permits on {path}")
    }
}

/// Checks every argument that can be checked before connecting: the lock
/// paths (each named once), the ACLs against the credentials, the identity,
/// the follower lag and the stop schedule (`--grace`, `--follower-lag`,
/// `--on-suspend`) against the session timeout asked for, that the
/// layout has locks of each mode asked for, and that a semaphore
/// (`--permits`) is asked for in the native layout. A usage error (exit 2)
/// at once, with no session to close, also when no server is reachable.
/// (The connect string, `--auth` and the TLS files are checked as the
/// connect begins, before anything is sent.)
fn check(args: &Args) -> Result<(), Failure> {
    common::check_lock_path(&args.path)?;
    let mut seen = std::collections::HashSet::from([args.path.as_str()]);
    for path in args.also_read.iter().chain(&args.also_write) {
        common::check_lock_path(path)?;
        if !seen.insert(path) {
            return Err(Failure::new(
                exit::USAGE,
                format!("lock path `{path}` is given more than once: name each lock once, with its mode"),
            ));
        }
    }
    args.security.check_acl(args.acl)?;
    args.supervision
        .check(args.identity.as_deref(), args.session_timeout)?;
    match (args.layout, args.permits) {
        (Some(layout), Some(_)) if layout != Layout::Native => {
            return Err(Failure::new(
                exit::USAGE,
                format!(
                    "--permits takes a permit of this library's semaphore, whose nodes have the native \
                     layout: --layout {layout} (or ZK_RWLOCK_LAYOUT) cannot be used with it"
                ),
            ));
        }
        (Some(layout), None) => {
            let main = if args.write { Mode::Write } else { Mode::Read };
            let modes = std::iter::once(main)
                .chain(args.also_read.iter().map(|_| Mode::Read))
                .chain(args.also_write.iter().map(|_| Mode::Write));
            for mode in modes {
                if layout.marker(mode).is_none() {
                    return Err(Failure::from(zk_rwlock::Error::UnsupportedMode { layout, mode }));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Acquires, runs the command, releases. Consumes the lock (or
/// semaphore) so that the session can close when this returns.
async fn with_lock(target: Target, args: &Args, signals: &mut Signals) -> Result<u8, Failure> {
    let awaited = target.awaited();
    let acquired = tokio::select! {
        acquired = target.acquire(args.timeout) => acquired.map_err(|e| waiting_failure(e, &awaited, target.client().session_given_up()))?,
        sig = signals.recv() => {
            // Dropping the acquire deletes its node in the background; the
            // session close in `exec` waits for that.
            eprintln!(
                "zk-rwlock: interrupted ({}) while waiting for {awaited}",
                signal_name(sig)
            );
            return Ok(signal_exit(sig));
        }
    };
    let Some(guard) = acquired else {
        let wanted = target.wanted();
        let timeout = args.timeout.unwrap_or_default();
        let message = if timeout.is_zero() {
            let taken = if matches!(target, Target::Permit(_)) {
                "all taken"
            } else {
                "taken"
            };
            format!("{wanted}: {taken} (--timeout 0: only if free now)")
        } else {
            format!("timed out after {} waiting for {wanted}", human(timeout))
        };
        return Err(Failure::new(exit::TEMPFAIL, message));
    };
    tracing::debug!(node = guard.node(), token = guard.fencing_token(), "lock granted");
    Ok(
        run_holding(target.client(), guard, &args.command, &args.supervision, signals)
            .await
            .code,
    )
}

/// Says what went wrong while waiting for `awaited` (the lock or permit,
/// in a sentence).
fn waiting_failure(err: zk_rwlock::Error, awaited: &str, given_up: bool) -> Failure {
    use zk_rwlock::Error;
    let what = match (&err, failure::session_end(&err, given_up)) {
        (Error::Lost { node }, _) => format!("someone deleted its node {node}"),
        (_, Some(what)) => what.to_owned(),
        (
            Error::PermitsDisagree {
                path,
                node,
                carried,
                asked,
            },
            _,
        ) => {
            return Failure::new(
                exit::USAGE,
                format!(
                    "--permits {asked} disagrees with the semaphore {path}: its contender {node} was \
                     started with --permits {carried} (every contender of one semaphore must give the \
                     same N); the request was withdrawn and the command not run"
                ),
            );
        }
        // Among them `SequenceExhausted`, whose text says what to do.
        _ => return Failure::from(err),
    };
    let code = match err {
        Error::AuthFailed => exit::NOPERM,
        _ => exit::SOFTWARE,
    };
    Failure::new(code, format!("{what} while waiting for {awaited}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_while_waiting() {
        let exhausted = zk_rwlock::Error::SequenceExhausted {
            path: "/locks/a".to_owned(),
        };
        let text = exhausted.to_string();
        let f = waiting_failure(exhausted, "the write lock on /locks/a", false);
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
            let f = waiting_failure(err, "the read lock on /locks/a", false);
            assert_eq!(f.code, exit::SOFTWARE);
            assert_eq!(
                f.message,
                format!("{what} while waiting for the read lock on /locks/a")
            );
        }
        let f = waiting_failure(zk_rwlock::Error::AuthFailed, "the write lock on /locks/a", false);
        assert_eq!(f.code, exit::NOPERM);
        assert!(f.message.contains("rejected the credentials"), "{}", f.message);
        let f = waiting_failure(
            zk_rwlock::Error::NoAuth {
                path: "/locks/a".to_owned(),
            },
            "the read lock on /locks/a",
            false,
        );
        assert_eq!(f.code, exit::NOPERM);
        // A session the client gave up is not said to have expired on a server.
        let f = waiting_failure(
            zk_rwlock::Error::SessionExpired,
            "the read lock on /locks/a",
            true,
        );
        assert!(
            f.message.starts_with("the ZooKeeper client gave the session up"),
            "{}",
            f.message
        );
        assert!(!f.message.contains("session expired"), "{}", f.message);
    }

    /// A semaphore whose contenders carry another count: a usage error
    /// naming both counts and the node; a session's end while waiting
    /// names the permit waited for.
    #[test]
    fn failures_while_waiting_for_a_permit() {
        let f = waiting_failure(
            zk_rwlock::Error::PermitsDisagree {
                path: "/s".to_owned(),
                node: "/s/a@permits-2@0123-W-0000000001".to_owned(),
                carried: 2,
                asked: 3,
            },
            &permit_words("/s", 3),
            false,
        );
        assert_eq!(f.code, exit::USAGE);
        assert_eq!(
            f.message,
            "--permits 3 disagrees with the semaphore /s: its contender /s/a@permits-2@0123-W-0000000001 \
             was started with --permits 2 (every contender of one semaphore must give the same N); the \
             request was withdrawn and the command not run"
        );
        let f = waiting_failure(zk_rwlock::Error::SessionExpired, &permit_words("/s", 3), false);
        assert_eq!(f.code, exit::SOFTWARE);
        assert_eq!(
            f.message,
            "the ZooKeeper session expired while waiting for one of the 3 permits on /s"
        );
        assert_eq!(permit_words("/s", 1), "the only permit on /s");
    }
}
