//! Supervision: waiting for CMD's tree while following the lock's state
//! and lease, the keeper and signals, and stopping the tree when the
//! policy ([`super::stop`]) says so. What it says is [`super::messages`].

use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};
use zk_rwlock::{lease, zk, HoldState, LossCause};
use zk_rwlock_cli::{exit, failure};

use super::args::OnRevoke;
use super::holding::Holding;
use super::keeper::FromKeeper;
use super::link::{self, Keeper};
use super::messages::{self, say, Moment};
use super::signals::{signal_exit, signal_name, Signals};
use super::stop::{Cause, Policy, Step};
use super::tree;

/// Why the command was stopped by zk-rwlock.
pub(super) enum Stopped {
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
pub(super) struct Outcome {
    /// The exit code to use if zk-rwlock did not stop the command.
    pub(super) code: u8,
    /// Whether, and why, zk-rwlock stopped the command (or found the lock
    /// lost when it exited).
    pub(super) stopped: Option<Stopped>,
    /// Whether zk-rwlock got a signal (forwarded to the command) meanwhile.
    pub(super) interrupted: bool,
}

/// How long to wait for a command's processes to be gone after SIGKILL
/// before giving up on them (a process in uninterruptible sleep).
const KILL_WAIT: Duration = Duration::from_secs(5);

/// Waits for the command and every process it started (the keeper says
/// when the tree is gone) while following the lock's state and lease, and
/// signals. Stops the tree as `policy` says; keeps the keeper told of the
/// lease, so that it stops the tree by the same rules if this process
/// cannot act.
pub(super) async fn supervise(
    mut keeper: Keeper,
    client: &zk::Client,
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
        let at = Moment {
            step,
            stopping: termed.is_some() || killed.is_some(),
            left: deadline.saturating_duration_since(now),
            kill_in: policy
                .kill_at(Some(now), deadline)
                .map(|(at, _)| at.saturating_duration_since(now)),
            term_in: policy
                .term_at(deadline)
                .map(|at| at.saturating_duration_since(now)),
        };
        let stopping = at.stopping;
        if state != seen {
            let why = (state == HoldState::Lost).then(|| loss_reason(client, guard));
            say(&messages::state_changed(
                state,
                &at,
                why.as_deref().unwrap_or_default(),
            ));
            lost = why.or(lost);
            seen = state;
        }
        if let Some(message) = messages::step_taken(&at, policy.kill_after) {
            say(&message);
        }
        match step {
            Step::Run => {}
            Step::Term(cause) => {
                keeper.signal(libc::SIGTERM).await;
                // Directly too: a stopped keeper would not pass it on.
                tree::signal_descendants_but(me, Some(keeper.pid), libc::SIGTERM);
                termed = Some((now, cause));
            }
            Step::Kill(cause) => {
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
                say(&messages::still_alive(KILL_WAIT));
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
                    say(&messages::remaining(&pids, keeper.kill_orphans));
                }
                Some(FromKeeper::Remain(_)) | Some(FromKeeper::Started(_)) | Some(FromKeeper::Failed(..)) => {}
                Some(FromKeeper::Acted(sig)) => {
                    let news = if sig == libc::SIGKILL { killed.is_none() } else { termed.is_none() };
                    if sig == libc::SIGKILL {
                        killed.get_or_insert(now);
                    }
                    termed.get_or_insert((now, Cause::LeaseEnding));
                    if news {
                        say(&messages::keeper_acted(signal_name(sig)));
                    }
                }
                Some(FromKeeper::Gone) => break,
                None => {
                    say("the keeper process died: killing the command's processes");
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
                    say(&format!(
                        "revocation requested on {}: sending {} to the command",
                        guard.node(),
                        signal_name(sig)
                    ));
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
        let why = loss_reason(client, guard);
        say(&messages::lost_while_running(&why));
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
pub(super) fn unattended(
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
            say(&messages::still_alive(KILL_WAIT));
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
/// the stronger news (a server expired it, or the client gave it up when no
/// server answered), then the lease running out, else the node was deleted.
fn loss_reason(client: &zk::Client, guard: &Holding) -> String {
    let ended = zk_rwlock::Error::from_session_state(client.state());
    let now = std::time::Instant::now();
    match lease::loss_cause(ended.is_some(), now, guard.lease_deadline()) {
        Some(LossCause::SessionEnded) => ended
            .as_ref()
            .and_then(|e| failure::session_end(e, client.session_given_up()))
            .unwrap_or("the ZooKeeper session ended")
            .to_owned(),
        Some(LossCause::LeaseRanOut) => {
            "its lease ran out: no answer from ZooKeeper within the session timeout".to_owned()
        }
        None => format!("node {} was deleted", guard.lost_part()),
    }
}
