//! Running CMD under a held lock: the keeper process started, the
//! supervision, the release, and what it all ended with. Shared by `exec`
//! and `lead`.

use std::ffi::OsString;
use std::time::Duration;

use zk_rwlock::zk;
use zk_rwlock_cli::{exit, failure};

use super::args::Supervision;
use super::holding::Holding;
use super::link::{self, Keeper};
use super::messages::say;
use super::signals::Signals;
use super::supervise::{supervise, unattended, Outcome, Stopped};
use super::{keeper, lease_file, tree};

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

/// Runs CMD while `guard` holds its lock (or permit), taken through
/// `client`'s session, supervised as `exec` does (see its help: the lease,
/// the keeper process, signals, revocation), then releases it. Shared by
/// `exec` (a lock, several, or a semaphore's permit) and `lead`.
pub(crate) async fn run_holding(
    client: &zk::Client,
    guard: Holding,
    command: &[OsString],
    args: &Supervision,
    signals: &mut Signals,
) -> Ran {
    let ran = |code: u8, end: End| Ran { code, end };
    let session_timeout = session_timeout_of(client);
    let schedule = args.schedule();
    let span = schedule.span(session_timeout).unwrap_or_default();
    // The kill margin is min(1 s, T/5, span/4): a lease shortened by a
    // follower lag keeps at most a quarter of it as margin. `exec` and
    // `lead` checked that this schedule lets CMD run on a healthy
    // connection to this session ([`Supervision::check_granted`]).
    let policy = schedule.policy(session_timeout);
    if let Some(outage) = policy.survivable_outage(span, session_timeout) {
        tracing::debug!(
            ?outage,
            "the command survives any outage of the server this short"
        );
    }
    let deadline = guard.lease_deadline();
    let (term_at, kill_at) = unattended(&policy, deadline, None);
    let start = link::Start {
        command,
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
            say(&message);
            if let Err(e) = guard.release().await {
                say(&format!("could not release the lock: {e}"));
            }
            return ran(code, End::NotStarted);
        }
    };
    let period = lease_file::check_period(session_timeout);
    let outcome = supervise(keeper, client, &guard, (policy, args.on_revoke), period, signals).await;

    let released = release_saying_how_long(guard, client).await;
    let given_up = client.session_given_up();
    if let Some(Stopped::Lost(why)) = &outcome.stopped {
        // The node is gone already: nothing more to say.
        tracing::debug!(%why, "released after loss");
    }
    let (ran, message) = ending(&outcome, released, given_up);
    if let Some(message) = message {
        say(&message);
    }
    ran
}

/// The session timeout the lease of `client`'s session runs on: the
/// smallest the server told this session (see [`zk_rwlock::lease`]), or the
/// negotiated one.
pub(crate) fn session_timeout_of(client: &zk::Client) -> Duration {
    client
        .session_lease()
        .map_or_else(|| client.session_timeout(), |lease| lease.timeout)
}

/// How long a release may run before `exec` says what it waits for.
const RELEASE_QUIET: Duration = Duration::from_secs(1);

/// Releases `guard`. A release that has not ended after [`RELEASE_QUIET`]
/// on a lost connection waits for the server to answer, at most until the
/// client gives the session up (the client says when:
/// `Client::session_gives_up_at`, the vendored client's patch 16): `exec`
/// says so rather than sit silent for that long.
async fn release_saying_how_long(guard: Holding, client: &zk::Client) -> Result<(), zk_rwlock::Error> {
    let release = guard.release();
    tokio::pin!(release);
    tokio::select! {
        released = &mut release => return released,
        () = tokio::time::sleep(RELEASE_QUIET) => {}
    }
    if client.state() != zk::SessionState::SyncConnected {
        // `None` unless the client is reconnecting the session.
        if let Some(gives_up) = client.session_gives_up_at() {
            let left = gives_up.saturating_duration_since(std::time::Instant::now());
            say(&super::messages::release_waits(left));
        }
    }
    release.await
}

/// How a run ends, from how CMD ended (`outcome`) and what the release
/// said: the code and [`End`], and what to say about it. Pure.
fn ending(
    outcome: &Outcome,
    released: Result<(), zk_rwlock::Error>,
    given_up: bool,
) -> (Ran, Option<String>) {
    let ran = |code: u8, end: End| Ran { code, end };
    let not_released = |e: &zk_rwlock::Error| format!("could not release the lock: {e}");
    match (&outcome.stopped, released) {
        (Some(Stopped::Lost(_)), _) => (ran(exit::LOST, End::Lost), None),
        (Some(Stopped::KeeperDied), released) => (
            ran(exit::LOST, End::Lost),
            Some(match released {
                Ok(()) => {
                    "the command was killed because its keeper process died; the lock is released".to_owned()
                }
                Err(e) => not_released(&e),
            }),
        ),
        // The connection may be back by now: released as usual. If it is
        // not, the client gave up on the session (no server answered for
        // 7/5 of the session timeout: `given_up`).
        (Some(Stopped::Suspended), released) => {
            let stopped = "the command was stopped because the connection to ZooKeeper was lost";
            (
                ran(exit::LOST, End::Lost),
                Some(match released {
                    Ok(()) => format!("{stopped}; the lock is released"),
                    Err(e) => match failure::session_end(&e, given_up) {
                        Some(what) => format!("{stopped}; then the lock was lost too ({what})"),
                        None => not_released(&e),
                    },
                }),
            )
        }
        (None, Ok(())) => {
            let end = if outcome.interrupted {
                End::Interrupted
            } else {
                End::Exited
            };
            (ran(outcome.code, end), None)
        }
        (None, Err(zk_rwlock::Error::Lost { node })) => (
            ran(exit::LOST, End::Lost),
            Some(format!(
                "lock lost: node {node} was deleted, possibly while the command ran"
            )),
        ),
        (None, Err(e)) if e.is_session_over() => (
            ran(exit::LOST, End::Lost),
            Some(
                "lock lost: the ZooKeeper session ended before the lock was released, possibly while \
                 the command ran"
                    .to_owned(),
            ),
        ),
        (None, Err(e)) => {
            let code = if outcome.code == 0 {
                exit::SOFTWARE
            } else {
                outcome.code
            };
            (ran(code, End::ReleaseFailed), Some(not_released(&e)))
        }
    }
}

/// Whether zk-rwlock runs in the foreground process group of the terminal on stdin.
fn in_terminal_foreground() -> bool {
    let stdin = std::io::stdin();
    rustix::termios::isatty(&stdin)
        && rustix::termios::tcgetpgrp(&stdin).is_ok_and(|group| group == rustix::process::getpgrp())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(code: u8, stopped: Option<Stopped>, interrupted: bool) -> Outcome {
        Outcome {
            code,
            stopped,
            interrupted,
        }
    }

    #[test]
    fn endings() {
        let end = |o: Outcome, released| {
            let (ran, message) = ending(&o, released, false);
            (ran.code, ran.end, message)
        };
        assert_eq!(end(outcome(3, None, false), Ok(())), (3, End::Exited, None));
        assert_eq!(
            end(outcome(130, None, true), Ok(())),
            (130, End::Interrupted, None)
        );
        let lost = Stopped::Lost("why".to_owned());
        assert_eq!(
            end(
                outcome(0, Some(lost), false),
                Err(zk_rwlock::Error::SessionExpired)
            ),
            (exit::LOST, End::Lost, None)
        );
        let (code, end_, message) = end(
            outcome(143, Some(Stopped::Suspended), false),
            Err(zk_rwlock::Error::SessionExpired),
        );
        assert_eq!((code, end_), (exit::LOST, End::Lost));
        assert_eq!(
            message.unwrap(),
            "the command was stopped because the connection to ZooKeeper was lost; then the lock was \
             lost too (the ZooKeeper session expired)"
        );
        let (_, _, message) = end(outcome(137, Some(Stopped::KeeperDied), false), Ok(()));
        assert!(message
            .unwrap()
            .contains("its keeper process died; the lock is released"));
        let node = "/a/x-W-0000000001".to_owned();
        let (code, end_, message) = end(outcome(0, None, false), Err(zk_rwlock::Error::Lost { node }));
        assert_eq!((code, end_), (exit::LOST, End::Lost));
        assert!(message
            .unwrap()
            .starts_with("lock lost: node /a/x-W-0000000001 was deleted"));
        let refused = || zk_rwlock::Error::NoAuth {
            path: "/a/x".to_owned(),
        };
        let (code, end_, message) = end(outcome(0, None, false), Err(refused()));
        assert_eq!((code, end_), (exit::SOFTWARE, End::ReleaseFailed));
        assert!(message.unwrap().starts_with("could not release the lock: "));
        assert_eq!(
            end(outcome(4, None, false), Err(refused())).0,
            4,
            "CMD's own failure stands"
        );
    }
}
