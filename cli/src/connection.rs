//! How every subcommand that connects reaches a secured ensemble:
//! credentials (`--auth`, `ZK_RWLOCK_AUTH`), TLS (`--tls-ca`, `--tls-cert`,
//! `--tls-key`) and the ACL of the nodes a lock creates (`--acl`).
//! One set of options, flattened into each subcommand's arguments (and
//! into the demo's and the benchmark's). Also the connect string, and the
//! wait for a session's end.

use std::path::{Path, PathBuf};
use std::time::Duration;

use zk_rwlock::{zk, ConnectOptions};

use crate::failure::{self, exit, Failure};

/// The ZooKeeper connect string used when neither `--connect` nor `ZK_CONNECT` is given.
pub const DEFAULT_CONNECT: &str = "127.0.0.1:2181";

/// The environment variable read when `--auth` is not given.
pub const AUTH_ENV: &str = "ZK_RWLOCK_AUTH";

/// Credentials and TLS, for every subcommand that connects.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct Security {
    /// Authenticate as SCHEME:CREDENTIALS, e.g. digest:alice:secret
    /// (ZooKeeper's addauth); sasl:USER:PASSWORD logs in with SASL
    /// DIGEST-MD5. A password on the command line is visible to every user
    /// of the machine (ps, /proc): prefer the environment variable
    #[arg(long, value_name = "SCHEME:CREDENTIALS", env = AUTH_ENV, hide_env_values = true)]
    pub auth: Option<String>,

    /// Connect with TLS, trusting the CA certificate(s) in FILE (PEM); the
    /// servers' certificates must name the hosts of the connect string
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,

    /// Present the client certificate in FILE (PEM) to servers that ask for
    /// one (ssl.clientAuth); needs --tls-key and --tls-ca
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "tls_ca"])]
    pub tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert (PEM)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

/// The ACL of the nodes a lock creates: its contender nodes (`--acl`), and
/// its directory and parents when missing (`--dir-acl`, default the same).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Acl {
    /// Anyone may do anything (world:anyone, all permissions).
    #[default]
    Open,
    /// Only the same authenticated identity (creator_all): others cannot
    /// read or write (revoke) this process's nodes, nor delete them unless
    /// the directory lets them.
    Creator,
    /// The same identity may do anything, anyone may read: others see the
    /// nodes' data (`status`) but cannot write (revoke) them, nor delete
    /// them unless the directory lets them.
    ReadOnlyOthers,
}

impl Acl {
    /// The ZooKeeper ACL.
    pub fn acls(self) -> Vec<zk::Acl> {
        match self {
            Acl::Open => zk::Acls::anyone_all().to_vec(),
            Acl::Creator => zk::Acls::creator_all().to_vec(),
            Acl::ReadOnlyOthers => [&*zk::Acls::creator_all(), &*zk::Acls::anyone_read()].concat(),
        }
    }

    /// The value as written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Acl::Open => "open",
            Acl::Creator => "creator",
            Acl::ReadOnlyOthers => "read-only-others",
        }
    }
}

/// The `--acl` and `--dir-acl` options, for the subcommands that create nodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::Args)]
pub struct AclArg {
    /// The ACL of the contender nodes the lock creates: `open` (anyone),
    /// `creator` (only this identity: needs --auth or a client certificate)
    /// or `read-only-others` (this identity; anyone else may read)
    #[arg(long, value_name = "ACL", value_enum, default_value_t = Acl::Open)]
    pub acl: Acl,
    /// The ACL of the lock directory and its parents when they are missing
    /// (existing ones keep theirs); default: the same as --acl. Whoever may
    /// use the directory can delete or outwait any contender in it: `open`
    /// trusts every identity
    #[arg(long = "dir-acl", value_name = "ACL", value_enum)]
    pub dir_acl: Option<Acl>,
}

impl AclArg {
    /// Sets both ACLs on a lock's builder (`open`, the builder's default,
    /// is left to it: its handles share one copy).
    pub fn apply(&self, mut builder: zk_rwlock::LockBuilder) -> zk_rwlock::LockBuilder {
        if self.acl != Acl::Open {
            builder = builder.acls(&self.acl.acls());
        }
        if let Some(dir_acl) = self.dir_acl {
            builder = builder.directory_acls(&dir_acl.acls());
        }
        builder
    }

    /// Sets both ACLs on a semaphore's builder, as [`AclArg::apply`] on a
    /// lock's.
    pub fn apply_semaphore(&self, mut builder: zk_rwlock::SemaphoreBuilder) -> zk_rwlock::SemaphoreBuilder {
        if self.acl != Acl::Open {
            builder = builder.acls(&self.acl.acls());
        }
        if let Some(dir_acl) = self.dir_acl {
            builder = builder.directory_acls(&dir_acl.acls());
        }
        builder
    }
}

fn read(option: &str, path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|e| {
        Failure::new(
            exit::USAGE,
            format!("cannot read {option} {}: {e}", path.display()),
        )
    })
}

impl Security {
    /// The credentials given; an empty `ZK_RWLOCK_AUTH` counts as none.
    fn credentials(&self) -> Option<&str> {
        self.auth.as_deref().filter(|auth| !auth.is_empty())
    }

    /// Whether an authenticated identity is given (credentials or a client certificate).
    pub fn has_identity(&self) -> bool {
        self.credentials().is_some() || self.tls_cert.is_some()
    }

    /// Checks that the ACLs of `arg` can be used with these credentials:
    /// creator-only ACLs need an authenticated identity (ZooKeeper rejects
    /// them with InvalidACL otherwise).
    pub fn check_acl(&self, arg: AclArg) -> Result<(), Failure> {
        for (option, acl) in [("--acl", arg.acl), ("--dir-acl", arg.dir_acl.unwrap_or(arg.acl))] {
            if acl == Acl::Open || self.has_identity() {
                continue;
            }
            return Err(Failure::new(
                exit::USAGE,
                format!(
                    "{option} {} needs an authenticated identity: pass --auth (or set {AUTH_ENV}) or \
                     --tls-cert/--tls-key; ZooKeeper rejects creator-only ACLs from clients without one",
                    acl.name()
                ),
            ));
        }
        Ok(())
    }

    /// The connect options: timeouts, the credentials, the TLS files read
    /// and checked. Usage errors (exit 2) for a malformed `--auth`, a file
    /// that cannot be read or does not parse.
    pub fn options(
        &self,
        session_timeout: Duration,
        connect_timeout: Duration,
    ) -> Result<ConnectOptions, Failure> {
        let mut options = ConnectOptions::new()
            .session_timeout(session_timeout)
            .connect_timeout(connect_timeout);
        if let Some(auth) = self.credentials() {
            options = with_auth(options, auth)?;
        }
        let usage = |option: &str, e: zk_rwlock::Error| Failure::new(exit::USAGE, format!("{option}: {e}"));
        if let Some(ca) = &self.tls_ca {
            let pem = read("--tls-ca", ca)?;
            options = options
                .tls_ca_pem(&pem)
                .map_err(|e| usage(&format!("--tls-ca {}", ca.display()), e))?;
        }
        if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
            let cert_pem = read("--tls-cert", cert)?;
            let key_pem = read("--tls-key", key)?;
            options = options.tls_identity_pem(&cert_pem, &key_pem).map_err(|e| {
                usage(
                    &format!("--tls-cert {} --tls-key {}", cert.display(), key.display()),
                    e,
                )
            })?;
        }
        failure::given(self.has_identity(), self.tls_ca.is_some());
        Ok(options)
    }

    /// Connects a new session to `servers` with these options.
    pub async fn connect(
        &self,
        servers: &str,
        session_timeout: Duration,
        connect_timeout: Duration,
    ) -> Result<zk::Client, Failure> {
        let options = self.options(session_timeout, connect_timeout)?;
        zk_rwlock::connect_client_with(servers, &options)
            .await
            .map_err(Failure::from)
    }
}

/// The environment variable read when `--connect` is not given.
pub const CONNECT_ENV: &str = "ZK_CONNECT";

/// The connect string: `--connect`, else `$ZK_CONNECT`, else [`DEFAULT_CONNECT`].
/// An empty (or blank, or non-UTF-8) `ZK_CONNECT` counts as unset: the
/// bench's rule. The command line's subcommands use [`servers`], which
/// refuses it.
pub fn connect_string(arg: Option<String>) -> String {
    arg.or_else(|| std::env::var(CONNECT_ENV).ok().filter(|s| !s.trim().is_empty()))
        .unwrap_or_else(|| DEFAULT_CONNECT.to_owned())
}

/// The connect string of a subcommand: `--connect`, else `$ZK_CONNECT`,
/// else [`DEFAULT_CONNECT`]. A `ZK_CONNECT` that is set but empty (or
/// blank, or not UTF-8) is a usage error, as `--connect ''` is: it names no
/// server, and falling back to a local server would take a lock there that
/// excludes no one.
pub fn servers(arg: Option<String>) -> Result<String, Failure> {
    if let Some(servers) = arg {
        return Ok(servers);
    }
    servers_from(std::env::var_os(CONNECT_ENV))
}

/// [`servers`] when `--connect` is not given, from `ZK_CONNECT`'s value.
fn servers_from(env: Option<std::ffi::OsString>) -> Result<String, Failure> {
    let Some(value) = env else {
        return Ok(DEFAULT_CONNECT.to_owned());
    };
    let bad = |what: &str| {
        Failure::new(
            exit::USAGE,
            format!(
                "{CONNECT_ENV} is set but {what}: name the ZooKeeper servers there (host:port[,host:port...]), \
                 pass --connect, or unset it to use {DEFAULT_CONNECT}"
            ),
        )
    };
    match value.into_string() {
        Ok(servers) if servers.trim().is_empty() => Err(bad("empty")),
        Ok(servers) => Ok(servers),
        Err(_) => Err(bad("not valid UTF-8")),
    }
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

/// Adds `SCHEME:CREDENTIALS` to `options`: `sasl:USER:PASSWORD` as SASL
/// DIGEST-MD5, any other scheme as ZooKeeper's addauth.
fn with_auth(options: ConnectOptions, auth: &str) -> Result<ConnectOptions, Failure> {
    let bad = |why: &str| {
        Failure::new(
            exit::USAGE,
            format!("invalid --auth (or {AUTH_ENV}): {why}; expected SCHEME:CREDENTIALS, e.g. digest:alice:secret"),
        )
    };
    let Some((scheme, credentials)) = auth.split_once(':') else {
        return Err(bad("there is no ':' after the scheme"));
    };
    if scheme.is_empty() || credentials.is_empty() {
        return Err(bad("the scheme or the credentials are empty"));
    }
    match scheme {
        "digest" | "sasl" => {
            let Some((user, password)) = credentials.split_once(':') else {
                return Err(bad(&format!("{scheme} credentials are USER:PASSWORD")));
            };
            if user.is_empty() {
                return Err(bad("the user is empty"));
            }
            Ok(if scheme == "sasl" {
                options.sasl_digest_md5(user, password)
            } else {
                options.digest(user, password)
            })
        }
        _ => Ok(options.auth(scheme, credentials.as_bytes())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_zk_connect_is_refused() {
        let from = |v: Option<&str>| servers_from(v.map(std::ffi::OsString::from));
        assert_eq!(from(None).unwrap(), DEFAULT_CONNECT);
        assert_eq!(from(Some("zk1:2181")).unwrap(), "zk1:2181");
        for empty in ["", "  "] {
            let refused = from(Some(empty)).unwrap_err();
            assert_eq!(refused.code, exit::USAGE);
            assert!(
                refused.message.starts_with("ZK_CONNECT is set but empty"),
                "{}",
                refused.message
            );
        }
        let bytes = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"zk\xff:2181");
        let refused = servers_from(Some(bytes.to_owned())).unwrap_err();
        assert!(refused.message.contains("not valid UTF-8"), "{}", refused.message);
        // `--connect` wins, as given: its own check names what is wrong.
        assert_eq!(servers(Some(String::new())).unwrap(), "");
    }

    #[test]
    fn auth_values() {
        let ok = |s: &str| with_auth(ConnectOptions::new(), s).map(|o| o.has_credentials());
        assert!(matches!(ok("digest:alice:secret"), Ok(true)));
        assert!(matches!(ok("digest:alice:"), Ok(true)));
        assert!(matches!(ok("sasl:alice:secret"), Ok(true)));
        assert!(matches!(ok("ip:10.0.0.1"), Ok(true)));
        for bad in [
            "digest",
            "digest:",
            ":x",
            "digest:alice",
            "sasl:alice",
            "digest::pw-1234",
            ":pw-1234",
        ] {
            let failure = ok(bad).expect_err(bad);
            assert_eq!(failure.code, exit::USAGE, "{bad}");
            assert!(
                failure.message.contains("SCHEME:CREDENTIALS"),
                "{}",
                failure.message
            );
            // The value given is not repeated: it may hold a password.
            assert!(!failure.message.contains("pw-1234"), "{}", failure.message);
        }
    }

    #[test]
    fn acl_choices() {
        assert_eq!(Acl::Open.acls(), zk::Acls::anyone_all().to_vec());
        assert_eq!(Acl::Creator.acls(), zk::Acls::creator_all().to_vec());
        let ro = Acl::ReadOnlyOthers.acls();
        assert_eq!(ro.len(), 2);
        assert!(ro
            .iter()
            .any(|a| a.scheme() == "world" && a.permission() == zk::Permission::READ));
        let empty = Security {
            auth: Some(String::new()),
            ..Security::default()
        };
        assert!(!empty.has_identity());
        let anonymous = Security::default();
        let arg = |acl, dir_acl| AclArg {
            acl,
            dir_acl: Some(dir_acl),
        };
        for (acl, dir_acl) in [(Acl::Creator, Acl::Open), (Acl::Open, Acl::ReadOnlyOthers)] {
            let refused = anonymous.check_acl(arg(acl, dir_acl)).unwrap_err();
            assert_eq!(refused.code, exit::USAGE);
            let option = if acl == Acl::Open { "--dir-acl" } else { "--acl " };
            assert!(refused.message.starts_with(option), "{}", refused.message);
        }
        assert!(anonymous.check_acl(AclArg::default()).is_ok());
        let same = AclArg {
            acl: Acl::Creator,
            dir_acl: None,
        };
        assert!(anonymous
            .check_acl(same)
            .unwrap_err()
            .message
            .starts_with("--acl "));
        let alice = Security {
            auth: Some("digest:alice:pw".into()),
            ..Security::default()
        };
        assert!(alice.check_acl(arg(Acl::ReadOnlyOthers, Acl::Creator)).is_ok());
    }
}
