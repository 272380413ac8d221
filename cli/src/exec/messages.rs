//! What `exec` says on stderr while CMD runs: pure functions of what
//! happened, beside the verdict ([`super::stop`]) that decides what to do.

use std::time::Duration;

use zk_rwlock::HoldState;

use super::stop::{Cause, Step};

/// `300ms`, `2s`, `1.5s`; `0s` rather than `0ns`.
pub(super) fn human(d: Duration) -> String {
    if d.is_zero() {
        "0s".to_owned()
    } else {
        format!("{d:?}")
    }
}

/// As [`human`], to the millisecond: `2.316s`, not `2.316492183s`.
pub(super) fn human_ms(d: Duration) -> String {
    human(Duration::from_millis(
        u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
    ))
}

/// What to say when the release has waited a while on a lost connection:
/// it waits for the server at most `left` more, until the client gives the
/// session up; the node goes with the session then.
pub(super) fn release_waits(left: Duration) -> String {
    format!(
        "the command has ended; the release waits for ZooKeeper (the connection is lost) for at most \
         {} more: if no server answers by then, the session ends and the lock's node goes with it",
        human(Duration::from_secs(left.as_secs_f64().ceil() as u64))
    )
}

/// Says `message` on stderr, after `zk-rwlock: `.
pub(super) fn say(message: &str) {
    eprintln!("zk-rwlock: {message}");
}

/// Where things stand when the supervisor speaks: what it does now, and
/// the times that matter then.
#[derive(Debug, Clone, Copy)]
pub(super) struct Moment {
    /// What the supervisor does now.
    pub step: Step,
    /// Whether the command is being stopped already (SIGTERM or SIGKILL sent).
    pub stopping: bool,
    /// What is left of the lease.
    pub left: Duration,
    /// Until SIGKILL, should SIGTERM go out now; `None`: never.
    pub kill_in: Option<Duration>,
    /// Until SIGTERM, should the connection stay lost; `None`: never
    /// (`--on-suspend ignore`).
    pub term_in: Option<Duration>,
}

impl Moment {
    fn kill_in(&self) -> String {
        self.kill_in.map_or_else(|| "never".to_owned(), human_ms)
    }
}

/// What to say when the lock's state has become `state` while the command
/// runs; `why` says how the lock was lost (for [`HoldState::Lost`]).
pub(super) fn state_changed(state: HoldState, at: &Moment, why: &str) -> String {
    let left = human_ms(at.left);
    match state {
        HoldState::Suspended => {
            let what = match at.step {
                Step::Term(_) => format!(
                    "stopping the command (SIGTERM now, SIGKILL in {} if it still runs)",
                    at.kill_in()
                ),
                _ if at.stopping => "the command is being stopped".to_owned(),
                _ => match at.term_in {
                    Some(term_in) => format!(
                        "the command keeps running; it gets SIGTERM in {} unless the connection is back",
                        human_ms(term_in)
                    ),
                    None => "the command keeps running (--on-suspend ignore)".to_owned(),
                },
            };
            format!(
                "connection to ZooKeeper lost while the command ran; the lease keeps the lock for {left} \
                 more: {what}"
            )
        }
        HoldState::Held => format!(
            "connection to ZooKeeper back: the lock is held{}",
            if at.stopping {
                "; the command is being stopped all the same"
            } else {
                ""
            }
        ),
        HoldState::Lost => match at.step {
            Step::Term(_) => format!(
                "lock lost ({why}): terminating the command (SIGTERM, then SIGKILL in {} if it still runs)",
                at.kill_in()
            ),
            _ if at.stopping => format!("lock lost ({why}) while the command was being stopped"),
            _ => lost_while_running(why),
        },
    }
}

/// The lock was lost (`why`) while the command ran.
pub(super) fn lost_while_running(why: &str) -> String {
    format!("lock lost ({why}) while the command ran")
}

/// What to say about the signal the supervisor sends now, if anything
/// more than [`state_changed`] said (`kill_after`: `--kill-after`).
pub(super) fn step_taken(at: &Moment, kill_after: Duration) -> Option<String> {
    let left = human_ms(at.left);
    match at.step {
        Step::Run | Step::Term(Cause::Suspended | Cause::Lost | Cause::LeaseEnding | Cause::KillAfter) => {
            None
        }
        Step::Term(Cause::Outlasted) => Some(format!(
            "no answer from ZooKeeper and {left} left of the lease: stopping the command \
             (SIGTERM now, SIGKILL in {} if it still runs)",
            at.kill_in()
        )),
        Step::Kill(Cause::KillAfter) => Some(format!(
            "the command outlived --kill-after ({}): sending SIGKILL",
            human(kill_after)
        )),
        Step::Kill(_) if !at.left.is_zero() => Some(format!(
            "the command still runs {left} before the lease runs out: sending SIGKILL"
        )),
        Step::Kill(_) => Some("the command still runs and its lease has run out: sending SIGKILL".to_owned()),
    }
}

/// CMD exited and `pids` it started still run.
pub(super) fn remaining(pids: &[i32], kill_orphans: bool) -> String {
    let one = pids.len() == 1;
    let pids: Vec<String> = pids.iter().map(i32::to_string).collect();
    format!(
        "the command exited; {} process{} it started still run{} ({}): {}",
        pids.len(),
        if one { "" } else { "es" },
        if one { "s" } else { "" },
        pids.join(" "),
        if kill_orphans {
            "ending them (--kill-orphans)"
        } else {
            "the lock is held until they exit (--kill-orphans ends them)"
        }
    )
}

/// The keeper sent `signal` (its name) on its own.
pub(super) fn keeper_acted(signal: &str) -> String {
    format!(
        "the command's processes got {signal} from the keeper: zk-rwlock did not act in time \
         (stopped or starved) and the lease is ending"
    )
}

/// Processes of the command outlived SIGKILL by `waited`.
pub(super) fn still_alive(waited: Duration) -> String {
    format!(
        "warning: processes of the command are still alive {} after SIGKILL; not waiting for them",
        human(waited)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_wait_is_said_in_whole_seconds_rounded_up() {
        let said = release_waits(Duration::from_millis(12_300));
        assert!(said.contains("for at most 13s more"), "{said}");
        assert!(
            said.contains("the session ends and the lock's node goes with it"),
            "{said}"
        );
        assert!(release_waits(Duration::ZERO).contains("at most 0s more"));
    }

    fn at(step: Step, stopping: bool) -> Moment {
        Moment {
            step,
            stopping,
            left: Duration::from_millis(2_316),
            kill_in: Some(Duration::from_millis(1_500)),
            term_in: Some(Duration::from_millis(600)),
        }
    }

    #[test]
    fn durations() {
        assert_eq!(human(Duration::ZERO), "0s");
        assert_eq!(human_ms(Duration::from_nanos(2_316_492_183)), "2.316s");
    }

    #[test]
    fn state_changes() {
        assert_eq!(
            state_changed(HoldState::Suspended, &at(Step::Run, false), ""),
            "connection to ZooKeeper lost while the command ran; the lease keeps the lock for 2.316s \
             more: the command keeps running; it gets SIGTERM in 600ms unless the connection is back"
        );
        let ignore = Moment {
            term_in: None,
            ..at(Step::Run, false)
        };
        assert!(state_changed(HoldState::Suspended, &ignore, "").ends_with("(--on-suspend ignore)"));
        assert!(
            state_changed(HoldState::Suspended, &at(Step::Term(Cause::Suspended), false), "")
                .ends_with("stopping the command (SIGTERM now, SIGKILL in 1.5s if it still runs)")
        );
        assert_eq!(
            state_changed(HoldState::Held, &at(Step::Run, true), ""),
            "connection to ZooKeeper back: the lock is held; the command is being stopped all the same"
        );
        let never = Moment {
            kill_in: None,
            ..at(Step::Term(Cause::Lost), false)
        };
        assert_eq!(
            state_changed(HoldState::Lost, &never, "node /a/x was deleted"),
            "lock lost (node /a/x was deleted): terminating the command (SIGTERM, then SIGKILL in never \
             if it still runs)"
        );
        assert_eq!(
            state_changed(HoldState::Lost, &at(Step::Run, true), "why"),
            "lock lost (why) while the command was being stopped"
        );
    }

    #[test]
    fn steps() {
        let kill_after = Duration::from_secs(10);
        assert_eq!(step_taken(&at(Step::Run, false), kill_after), None);
        assert_eq!(step_taken(&at(Step::Term(Cause::Lost), false), kill_after), None);
        assert!(step_taken(&at(Step::Term(Cause::Outlasted), false), kill_after)
            .unwrap()
            .starts_with("no answer from ZooKeeper and 2.316s left"));
        assert_eq!(
            step_taken(&at(Step::Kill(Cause::KillAfter), true), kill_after).unwrap(),
            "the command outlived --kill-after (10s): sending SIGKILL"
        );
        let ran_out = Moment {
            left: Duration::ZERO,
            ..at(Step::Kill(Cause::LeaseEnding), true)
        };
        assert!(step_taken(&ran_out, kill_after)
            .unwrap()
            .contains("its lease has run out"));
        assert_eq!(
            remaining(&[42], false),
            "the command exited; 1 process it started still runs (42): the lock is held until they \
             exit (--kill-orphans ends them)"
        );
        assert!(remaining(&[1, 2], true)
            .starts_with("the command exited; 2 processes it started still run (1 2)"));
    }
}
