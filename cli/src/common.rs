//! What the subcommands share: tracing set-up, the connect string, durations.

use std::time::Duration;

/// The ZooKeeper connect string used when neither `--connect` nor `ZK_CONNECT` is given.
pub const DEFAULT_CONNECT: &str = "127.0.0.1:2181";

/// Installs a `tracing` subscriber writing to stderr, filtered by `RUST_LOG`
/// (default: warnings).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}

/// Parses a duration in humantime's grammar (`500ms`, `3s`, `1m30s`,
/// `2h 15m`, `1day`), or a plain number of seconds (`1.5`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let parsed = match s.parse::<f64>() {
        // A plain number is seconds (say so in the errors below).
        Ok(secs) if secs.is_finite() && (0.0..=1e9).contains(&secs) => {
            return Ok(Duration::from_secs_f64(secs))
        }
        Ok(_) => None,
        Err(_) => Some(humantime::parse_duration(s).map_err(|e| {
            format!(
                "invalid duration `{s}`: {e}; write a number with a unit, like 500ms, 3s, 1m30s or 2h \
                 (a plain number is seconds)"
            )
        })?),
    };
    match parsed {
        Some(d) if d.as_secs_f64() <= 1e9 => Ok(d),
        _ => Err(format!(
            "invalid duration `{s}`: must be between 0 and 1e9 seconds"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("3s"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h 15m"), Ok(Duration::from_secs(8100)));
        assert_eq!(parse_duration("5d"), Ok(Duration::from_secs(5 * 86_400)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("abc")
            .unwrap_err()
            .contains("a plain number is seconds"));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("100000years").is_err());
    }
}

// ---------------------------------------------------------------------------
// Shared by `exec` and `status`: exit codes, one-line failures, connecting
// and closing a session.

/// Exit codes of `exec` and `status` (sysexits(3) values where one fits).
pub mod exit {
    /// Usage error: bad option, argument, lock path, identity or connect string.
    pub const USAGE: u8 = 2;
    /// No ZooKeeper server could be reached (EX_UNAVAILABLE).
    pub const UNAVAILABLE: u8 = 69;
    /// Any other lock or ZooKeeper error (EX_SOFTWARE).
    pub const SOFTWARE: u8 = 70;
    /// Timed out waiting for the lock (EX_TEMPFAIL).
    pub const TEMPFAIL: u8 = 75;
    /// ZooKeeper refused access: NoAuth (EX_NOPERM).
    pub const NOPERM: u8 = 77;
    /// The lock, or the connection to ZooKeeper, was lost while the command ran: it was stopped.
    pub const LOST: u8 = 79;
    /// The command was found but could not be executed (as in shells).
    pub const CANNOT_EXECUTE: u8 = 126;
    /// The command was not found (as in shells).
    pub const NOT_FOUND: u8 = 127;
}

/// A failure to report: one line on stderr, then exit with `code`.
#[derive(Debug)]
pub struct Failure {
    /// The process exit code.
    pub code: u8,
    /// The message, without the `zk-rwlock: ` prefix.
    pub message: String,
}

impl Failure {
    /// A failure with this exit code and message.
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// Prints the message on stderr and returns the exit code.
    pub fn report(&self) -> std::process::ExitCode {
        eprintln!("zk-rwlock: {}", self.message);
        std::process::ExitCode::from(self.code)
    }
}

impl From<zk_rwlock::Error> for Failure {
    fn from(err: zk_rwlock::Error) -> Failure {
        use zk_rwlock::Error;
        let code = match &err {
            Error::InvalidPath { .. }
            | Error::InvalidIdentity { .. }
            | Error::RequestTooLarge { .. }
            | Error::DirectoryHoldsData { .. }
            | Error::UnsupportedMode { .. }
            | Error::InvalidConnectString { .. }
            | Error::ChrootMissing { .. }
            | Error::InvalidTls { .. }
            | Error::LeaseTooShort { .. } => exit::USAGE,
            Error::Unreachable { .. } => exit::UNAVAILABLE,
            Error::NoAuth { .. } | Error::AuthFailed => exit::NOPERM,
            // Its text says what happened and what to do about it.
            Error::SequenceExhausted { .. } => exit::SOFTWARE,
            _ => exit::SOFTWARE,
        };
        match err {
            // The library's text advises on `Connector::with_auth`: not for the command line.
            Error::NoAuth { path } => zk_failure(zk_rwlock::zk::Error::NoAuth, &path),
            Error::AuthFailed => Failure::new(
                code,
                "ZooKeeper rejected the credentials (AuthFailed) and closed the session: check \
                 --auth (or ZK_RWLOCK_AUTH): its scheme, user and password",
            ),
            err @ Error::Unreachable { .. } => {
                Failure::new(code, format!("{err}{}", crate::connection::unreachable_advice()))
            }
            Error::ZooKeeper(zk_rwlock::zk::Error::InvalidAcl) => Failure::new(code, invalid_acl()),
            err => Failure::new(code, err.to_string()),
        }
    }
}

/// A failure for a ZooKeeper error of an operation on `path`, classified
/// as the library classifies its own ([`zk_rwlock::Error::from_zk`]).
pub fn zk_failure(err: zk_rwlock::zk::Error, path: &str) -> Failure {
    use zk_rwlock::Error;
    match Error::from_zk(err, path) {
        Error::NoAuth { .. } => Failure::new(
            exit::NOPERM,
            format!(
                "ZooKeeper refused access to `{path}` (NoAuth): {}",
                crate::connection::no_auth_advice()
            ),
        ),
        Error::ZooKeeper(zk_rwlock::zk::Error::InvalidAcl) => Failure::new(exit::SOFTWARE, invalid_acl()),
        Error::ZooKeeper(other) => {
            Failure::new(exit::SOFTWARE, format!("ZooKeeper error on `{path}`: {other}"))
        }
        err => Failure::from(err),
    }
}

/// The message for ZooKeeper's InvalidACL: the usual cause is a
/// creator-only ACL without an authenticated identity.
fn invalid_acl() -> String {
    "ZooKeeper rejected the ACL of a node to create (InvalidACL): a creator-only ACL (--acl creator \
     or read-only-others) needs an authenticated identity: pass --auth (or set ZK_RWLOCK_AUTH) or a \
     client certificate"
        .to_owned()
}

/// How an error that ends the session reads in a sentence; `None` for the
/// others. Which errors end it is the library's call
/// ([`zk_rwlock::Error::is_session_over`]); only the wording is chosen here.
pub fn session_end(err: &zk_rwlock::Error) -> Option<&'static str> {
    if !err.is_session_over() {
        return None;
    }
    Some(match err {
        zk_rwlock::Error::SessionExpired => "the ZooKeeper session expired",
        zk_rwlock::Error::SessionClosed => "the ZooKeeper session was closed",
        zk_rwlock::Error::AuthFailed => "ZooKeeper rejected the credentials and closed the session",
        _ => "the ZooKeeper session ended",
    })
}

/// The connect string: `--connect`, else `$ZK_CONNECT`, else [`DEFAULT_CONNECT`].
pub fn connect_string(arg: Option<String>) -> String {
    arg.or_else(|| std::env::var("ZK_CONNECT").ok().filter(|s| !s.trim().is_empty()))
        .unwrap_or_else(|| DEFAULT_CONNECT.to_owned())
}

/// Waits until the session watched by `states` is over, at most `within`.
///
/// Call it after dropping every clone of the session's client (and every
/// lock made on it): the client then sends `CloseSession`, which deletes the
/// session's ephemeral nodes on the server, and reports `Closed` once the
/// server has answered. Background clean-ups of the lock library hold a
/// clone of the client, so this also waits for them. Returns whether the
/// session was seen to end. While the client is disconnected nothing can
/// be closed: it returns at once (false), and the server removes the
/// session's nodes when the session expires.
pub async fn await_session_end(mut states: zk_rwlock::zk::StateWatcher, within: Duration) -> bool {
    let ended = |s| zk_rwlock::Error::from_session_state(s).is_some();
    tokio::time::timeout(within, async {
        let mut state = states.peek_state();
        while !ended(state) {
            if state == zk_rwlock::zk::SessionState::Disconnected {
                return false;
            }
            state = states.changed().await;
        }
        true
    })
    .await
    .unwrap_or(false)
}

/// Checks a lock path before connecting, with the library's one path check
/// ([`zk_rwlock::validate_path`]), so that a bad path is reported as such
/// (exit 2) even when no server is reachable.
pub fn check_lock_path(path: &str) -> Result<(), Failure> {
    zk_rwlock::validate_path(path).map_err(Failure::from)
}
