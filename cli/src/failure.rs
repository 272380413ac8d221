//! How a subcommand fails: its exit codes, and one line on stderr that
//! says what happened and what to do. The library's errors map to exit
//! codes here, and only here.

use std::sync::OnceLock;

/// Exit codes of `exec` and `status` (sysexits(3) values where one fits).
pub mod exit {
    /// Usage error: bad option, argument, lock path, identity or connect string.
    pub const USAGE: u8 = 2;
    /// No ZooKeeper server could be reached (none answered, or no host
    /// name of the connect string resolves), or every one refused the
    /// session (EX_UNAVAILABLE).
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
            | Error::LeaseTooShort { .. }
            // Contenders of one semaphore that disagree on its permits,
            // or a semaphore of none: what the command line asked for.
            | Error::PermitsDisagree { .. }
            | Error::NoPermits => exit::USAGE,
            Error::Unreachable { .. } | Error::SessionRefused { .. } | Error::UnresolvableHosts { .. } => {
                exit::UNAVAILABLE
            }
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
            err @ (Error::Unreachable { .. } | Error::SessionRefused { .. }) => {
                Failure::new(code, format!("{err}{}", unreachable_advice()))
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
                no_auth_advice()
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
/// `given_up`: the client gave the session up
/// ([`zk_rwlock::zk::Client::session_given_up`]), so a session that ended
/// because no server answered for 7/5 of its timeout is not said to have
/// expired on a server.
pub fn session_end(err: &zk_rwlock::Error, given_up: bool) -> Option<&'static str> {
    if !err.is_session_over() {
        return None;
    }
    Some(match err {
        zk_rwlock::Error::SessionExpired if given_up => {
            "the ZooKeeper client gave the session up (no server answered for 7/5 of the session \
             timeout; a server removes its nodes once it expires it)"
        }
        zk_rwlock::Error::SessionExpired => "the ZooKeeper session expired",
        zk_rwlock::Error::SessionClosed => "the ZooKeeper session was closed",
        zk_rwlock::Error::AuthFailed => "ZooKeeper rejected the credentials and closed the session",
        _ => "the ZooKeeper session ended",
    })
}

/// What the messages about refused access say, set once per process by
/// [`Security::options`](crate::connection::Security::options) through [`given`].
static GIVEN: OnceLock<Given> = OnceLock::new();

#[derive(Debug, Clone, Copy)]
struct Given {
    credentials: bool,
    tls: bool,
}

/// Records what the user gave to reach the ensemble: an authenticated
/// identity (credentials or a client certificate), a TLS CA. The advice of
/// the messages below follows it; the first call of a process wins.
pub fn given(credentials: bool, tls: bool) {
    let _ = GIVEN.set(Given { credentials, tls });
}

/// The advice to append to a NoAuth message: what to pass.
pub fn no_auth_advice() -> &'static str {
    match GIVEN.get() {
        Some(Given {
            credentials: true, ..
        }) => {
            "the credentials given (--auth, ZK_RWLOCK_AUTH or the client certificate) are not \
             allowed there: check the user and password, or ask for access to the node"
        }
        _ => "the server requires authentication there: pass --auth or set ZK_RWLOCK_AUTH",
    }
}

/// The advice to append to an `Unreachable` or `SessionRefused` message,
/// about TLS (a TLS port closes a plain connection, and the reverse).
pub fn unreachable_advice() -> &'static str {
    match GIVEN.get() {
        Some(Given { tls: true, .. }) => {
            " With --tls-ca the servers must take TLS on these ports, present a certificate \
             signed by that CA for the host named, and accept --tls-cert if they ask for one."
        }
        _ => " If the servers take TLS connections only, pass --tls-ca.",
    }
}
