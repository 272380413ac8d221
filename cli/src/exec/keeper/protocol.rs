//! The keeper's messages, one line each on the control socket: from
//! `exec` ([`ToKeeper`]) and back ([`FromKeeper`]).

use zk_rwlock::HoldState;

/// From `exec` to the keeper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToKeeper {
    /// The lease as `exec` sees it now, and what the keeper does if it
    /// hears nothing more: SIGTERM to the tree at `term_at`, SIGKILL at
    /// `kill_at` (boot nanoseconds; `None`: not on its own).
    Lease {
        deadline: i128,
        state: HoldState,
        term_at: Option<i128>,
        kill_at: Option<i128>,
    },
    /// Send this signal to every process of the tree.
    Signal(libc::c_int),
    /// SIGKILL the tree, again until nothing of it is left.
    Kill,
}

/// From the keeper to `exec`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromKeeper {
    /// CMD runs with this pid.
    Started(libc::pid_t),
    /// CMD could not be started: exit code, message.
    Failed(u8, String),
    /// CMD itself exited, with this shell-style code.
    Exited(u8),
    /// CMD exited, these processes it started still run.
    Remain(Vec<libc::pid_t>),
    /// The keeper signalled the tree on its own: `exec` said nothing in time.
    Acted(libc::c_int),
    /// Nothing of the tree is left; the keeper exits.
    Gone,
}

fn state_word(state: HoldState) -> &'static str {
    match state {
        HoldState::Held => "held",
        HoldState::Suspended => "suspended",
        HoldState::Lost => "lost",
    }
}

fn opt(t: Option<i128>) -> String {
    t.map_or_else(|| "-".to_owned(), |t| t.to_string())
}

fn parse_opt(s: &str) -> Option<Option<i128>> {
    if s == "-" {
        Some(None)
    } else {
        s.parse().ok().map(Some)
    }
}

impl ToKeeper {
    pub fn encode(&self) -> String {
        match self {
            ToKeeper::Lease {
                deadline,
                state,
                term_at,
                kill_at,
            } => format!(
                "lease {deadline} {} {} {}\n",
                state_word(*state),
                opt(*term_at),
                opt(*kill_at)
            ),
            ToKeeper::Signal(sig) => format!("signal {sig}\n"),
            ToKeeper::Kill => "kill\n".to_owned(),
        }
    }

    pub fn parse(line: &str) -> Option<ToKeeper> {
        let mut words = line.split_whitespace();
        match words.next()? {
            "lease" => {
                let deadline = words.next()?.parse().ok()?;
                let state = match words.next()? {
                    "held" => HoldState::Held,
                    "suspended" => HoldState::Suspended,
                    "lost" => HoldState::Lost,
                    _ => return None,
                };
                let term_at = parse_opt(words.next()?)?;
                let kill_at = parse_opt(words.next()?)?;
                Some(ToKeeper::Lease {
                    deadline,
                    state,
                    term_at,
                    kill_at,
                })
            }
            "signal" => Some(ToKeeper::Signal(words.next()?.parse().ok()?)),
            "kill" => Some(ToKeeper::Kill),
            _ => None,
        }
    }
}

impl FromKeeper {
    pub fn encode(&self) -> String {
        match self {
            FromKeeper::Started(pid) => format!("started {pid}\n"),
            // The message on one line.
            FromKeeper::Failed(code, message) => format!("failed {code} {}\n", message.replace('\n', " ")),
            FromKeeper::Exited(code) => format!("exited {code}\n"),
            FromKeeper::Remain(pids) => {
                let pids: Vec<String> = pids.iter().map(i32::to_string).collect();
                format!("remain {}\n", pids.join(" "))
            }
            FromKeeper::Acted(sig) => format!("acted {sig}\n"),
            FromKeeper::Gone => "gone\n".to_owned(),
        }
    }

    pub fn parse(line: &str) -> Option<FromKeeper> {
        let (word, rest) = line.trim_end().split_once(' ').unwrap_or((line.trim_end(), ""));
        match word {
            "started" => Some(FromKeeper::Started(rest.parse().ok()?)),
            "failed" => {
                let (code, message) = rest.split_once(' ').unwrap_or((rest, ""));
                Some(FromKeeper::Failed(code.parse().ok()?, message.to_owned()))
            }
            "exited" => Some(FromKeeper::Exited(rest.parse().ok()?)),
            "remain" => rest
                .split_whitespace()
                .map(|p| p.parse().ok())
                .collect::<Option<Vec<_>>>()
                .map(FromKeeper::Remain),
            "acted" => Some(FromKeeper::Acted(rest.parse().ok()?)),
            "gone" => Some(FromKeeper::Gone),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        for msg in [
            ToKeeper::Lease {
                deadline: 123_456_789_000,
                state: HoldState::Suspended,
                term_at: Some(-5),
                kill_at: None,
            },
            ToKeeper::Signal(libc::SIGUSR1),
            ToKeeper::Kill,
        ] {
            assert_eq!(ToKeeper::parse(&msg.encode()), Some(msg.clone()), "{msg:?}");
        }
        for msg in [
            FromKeeper::Started(42),
            FromKeeper::Failed(127, "cannot run `x`: command not found".to_owned()),
            FromKeeper::Exited(3),
            FromKeeper::Remain(vec![7, 8]),
            FromKeeper::Acted(libc::SIGKILL),
            FromKeeper::Gone,
        ] {
            assert_eq!(FromKeeper::parse(&msg.encode()), Some(msg.clone()), "{msg:?}");
        }
        assert_eq!(
            FromKeeper::parse(&FromKeeper::Failed(126, "a\nb".to_owned()).encode()),
            Some(FromKeeper::Failed(126, "a b".to_owned()))
        );
        assert_eq!(ToKeeper::parse("lease x held - -"), None);
        assert_eq!(FromKeeper::parse("what"), None);
    }
}
