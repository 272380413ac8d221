//! Connecting a session: [`connect_client`]; with credentials, TLS and
//! SASL: [`ConnectOptions`]. Sessions run on the library's background
//! thread. The lock (`lock/`) connects through this module; nothing here
//! knows the lock.

use std::time::Duration;

use crate::background::{self, AbortOnDrop};
use crate::error::{with_retry, Error};
use crate::zk;

/// How long [`SharedLock::connect`](crate::SharedLock::connect) tries to
/// reach a server: 10 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The session timeout [`SharedLock::connect`](crate::SharedLock::connect)
/// asks for: 10 s (the server may grant another, between 2 and 20 ticks).
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The pause before connecting again after every server refused, doubled
/// after each attempt up to [`LAST_RETRY_PAUSE`].
const FIRST_RETRY_PAUSE: Duration = Duration::from_millis(50);
/// The longest pause between two connect attempts.
const LAST_RETRY_PAUSE: Duration = Duration::from_secs(1);

/// How to connect a ZooKeeper session: timeouts, credentials, TLS, SASL.
///
/// The timeouts, the credentials sent with every (re)connection (`digest:alice:secret`, ...), and, with
/// the crate's Cargo features, TLS (feature `tls`) and SASL DIGEST-MD5
/// (feature `sasl`). [`connect_client_with`] connects a session with them;
/// [`SharedLock::connect_with_options`](crate::SharedLock::connect_with_options) and
/// [`blocking::SharedLock::connect_with_options`](crate::blocking::SharedLock::connect_with_options)
/// connect and make a lock in one call. The same options serve both APIs.
///
/// ```no_run
/// use zk_rwlock::{ConnectOptions, SharedLock};
///
/// # async fn run() -> Result<(), zk_rwlock::Error> {
/// let options = ConnectOptions::new().digest("alice", "secret");
/// let lock = SharedLock::connect_with_options("zk1:2181,zk2:2181", "/locks/orders", &options).await?;
/// # let _ = lock; Ok(()) }
/// ```
///
/// Credentials are sent again after every reconnection (the client keeps
/// them), so a session that moves to another server keeps its identity.
///
/// What the server checks: `digest` credentials are never refused, a wrong
/// password only gives another identity, which the ACLs then refuse
/// ([`Error::NoAuth`]); an unknown scheme, and SASL credentials the server
/// rejects, end the session ([`Error::AuthFailed`]).
///
/// A builder: every method takes and returns the options. `Debug` never
/// shows credentials or keys.
#[derive(Clone, Default)]
#[must_use]
pub struct ConnectOptions {
    connector: Option<zk::Connector>,
    session_timeout: Option<Duration>,
    connect_timeout: Option<Duration>,
    auth: Vec<(String, Vec<u8>)>,
    #[cfg(feature = "tls")]
    tls_ca: Option<String>,
    #[cfg(feature = "tls")]
    tls_identity: Option<(String, String)>,
    #[cfg(feature = "sasl")]
    sasl: Option<(String, String)>,
    /// The session on the library's background thread even inside a
    /// multi-thread runtime ([`ConnectOptions::session_on_own_thread`]).
    own_thread: bool,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let schemes: Vec<&str> = self.auth.iter().map(|(scheme, _)| scheme.as_str()).collect();
        let mut s = f.debug_struct("ConnectOptions");
        s.field("session_timeout", &self.session_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("auth_schemes", &schemes)
            .field("tls", &self.uses_tls())
            .field("session_on_own_thread", &self.own_thread);
        #[cfg(feature = "sasl")]
        s.field("sasl_user", &self.sasl.as_ref().map(|(user, _)| user));
        s.finish_non_exhaustive()
    }
}

impl ConnectOptions {
    /// No credentials, no TLS, [`DEFAULT_SESSION_TIMEOUT`] and [`DEFAULT_CONNECT_TIMEOUT`].
    pub fn new() -> ConnectOptions {
        ConnectOptions::default()
    }

    /// Starts from a [`zk::Connector`] configured by hand (for the
    /// client's other options, e.g. `with_readonly`); the options set here
    /// are added to it. Its session timeout stands unless
    /// [`session_timeout`](Self::session_timeout) is set. TLS configured on
    /// it cannot be seen: `tcp+tls://` servers are then left to it (with
    /// the `tls` feature) instead of being refused without a CA.
    pub fn from_connector(connector: zk::Connector) -> ConnectOptions {
        ConnectOptions {
            connector: Some(connector),
            ..ConnectOptions::default()
        }
    }

    /// The session timeout to ask for (default [`DEFAULT_SESSION_TIMEOUT`];
    /// the server grants between 2 and 20 ticks).
    pub fn session_timeout(mut self, timeout: Duration) -> ConnectOptions {
        self.session_timeout = Some(timeout);
        self
    }

    /// Runs the session on the library's background thread even when it is
    /// connected inside a multi-thread runtime, where it would otherwise run
    /// (see [`connect_client`]). A session on your runtime sends its
    /// heartbeats and reads its answers only when a worker is free: if
    /// your tasks keep every worker busy (CPU-bound work, blocking calls)
    /// for longer than about two fifths of the session timeout, the
    /// connection is taken for lost and made again (guards `Suspended`
    /// meanwhile), and past the session timeout the session expires and
    /// its guards are `Lost`. On its own thread it goes on whatever your
    /// runtime does, at the cost of a hop between threads for every request
    /// (up to twice the client's CPU per grant in this project's
    /// benchmarks). Off by default.
    pub fn session_on_own_thread(mut self, own: bool) -> ConnectOptions {
        self.own_thread = own;
        self
    }

    /// How long connecting may take (default [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, timeout: Duration) -> ConnectOptions {
        self.connect_timeout = Some(timeout);
        self
    }

    /// Adds credentials for an authentication scheme (ZooKeeper's
    /// `addAuthInfo`), e.g. `auth("digest", b"alice:secret")`. Repeatable.
    pub fn auth(mut self, scheme: &str, credentials: &[u8]) -> ConnectOptions {
        self.auth.push((scheme.to_owned(), credentials.to_vec()));
        self
    }

    /// Adds `digest` credentials: `auth("digest", "user:password")`. The
    /// identity in ACLs is then `digest:user:<base64 of SHA-1 of user:password>`.
    pub fn digest(self, user: &str, password: &str) -> ConnectOptions {
        self.auth("digest", format!("{user}:{password}").as_bytes())
    }

    /// Connects with TLS, trusting the CA certificates in `pem` (PEM text,
    /// one or more `CERTIFICATE` blocks). Every server of the connect
    /// string is then reached with TLS (`tcp://host:port` names a plain
    /// one). The server's certificate must name the host as written in the
    /// connect string (a DNS name or an IP address in its subject
    /// alternative names).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTls`] if `pem` holds no certificate.
    #[cfg(feature = "tls")]
    pub fn tls_ca_pem(mut self, pem: &str) -> Result<ConnectOptions, Error> {
        zk::TlsCa::from_pem(pem).map_err(|e| Error::InvalidTls {
            reason: format!("the CA certificates cannot be used: {e}"),
        })?;
        self.tls_ca = Some(pem.to_owned());
        Ok(self)
    }

    /// Presents a client certificate (for servers with `ssl.clientAuth`):
    /// the certificate chain and its private key, both PEM text (the key
    /// as PKCS#8, PKCS#1 or SEC1). Needs [`tls_ca_pem`](Self::tls_ca_pem) too.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTls`] if `cert` holds no certificate or `key` no private key.
    #[cfg(feature = "tls")]
    pub fn tls_identity_pem(mut self, cert: &str, key: &str) -> Result<ConnectOptions, Error> {
        if !cert.contains("-----BEGIN CERTIFICATE-----") {
            return Err(Error::InvalidTls {
                reason: "the client certificate holds no PEM `CERTIFICATE` block".to_owned(),
            });
        }
        zk::TlsIdentity::from_pem(cert, key).map_err(|e| Error::InvalidTls {
            reason: format!("the client certificate or key cannot be used: {e}"),
        })?;
        self.tls_identity = Some((cert.to_owned(), key.to_owned()));
        Ok(self)
    }

    /// Authenticates with SASL DIGEST-MD5 as `user` (a `user_<name>` of the
    /// server's JAAS `Server` section). The identity in ACLs is then
    /// `sasl:user`. A rejected password ends the session:
    /// [`Error::AuthFailed`].
    #[cfg(feature = "sasl")]
    pub fn sasl_digest_md5(mut self, user: &str, password: &str) -> ConnectOptions {
        self.sasl = Some((user.to_owned(), password.to_owned()));
        self
    }

    /// Whether connections use TLS (a CA was given).
    pub fn uses_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls_ca.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// Whether any credentials are set (`auth`, SASL, or a client certificate).
    pub fn has_credentials(&self) -> bool {
        #[allow(unused_mut)]
        let mut any = !self.auth.is_empty();
        #[cfg(feature = "tls")]
        {
            any |= self.tls_identity.is_some();
        }
        #[cfg(feature = "sasl")]
        {
            any |= self.sasl.is_some();
        }
        any
    }

    /// The client's own builder with these options applied (fail-eagerly
    /// included), for connecting by hand.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTls`] for a client certificate without a CA.
    pub fn connector(&self) -> Result<zk::Connector, Error> {
        let mut connector = match &self.connector {
            Some(connector) => connector.clone(),
            None => zk::Client::connector().with_session_timeout(DEFAULT_SESSION_TIMEOUT),
        };
        if let Some(timeout) = self.session_timeout {
            connector = connector.with_session_timeout(timeout);
        }
        connector = connector.with_fail_eagerly();
        for (scheme, credentials) in &self.auth {
            connector = connector.with_auth(scheme, credentials);
        }
        #[cfg(feature = "tls")]
        {
            if let Some(ca) = &self.tls_ca {
                let mut tls = zk::TlsOptions::new()
                    .with_pem_ca(ca)
                    .map_err(|e| Error::InvalidTls {
                        reason: e.to_string(),
                    })?;
                if let Some((cert, key)) = &self.tls_identity {
                    tls = tls.with_pem_identity(cert, key).map_err(|e| Error::InvalidTls {
                        reason: e.to_string(),
                    })?;
                }
                connector = connector.with_tls(tls);
            } else if self.tls_identity.is_some() {
                return Err(Error::InvalidTls {
                    reason: "a client certificate needs the CA certificates that verify the server too"
                        .to_owned(),
                });
            }
        }
        #[cfg(feature = "sasl")]
        {
            if let Some((user, password)) = &self.sasl {
                connector = connector.with_sasl(zk::SaslOptions::digest_md5(user.clone(), password.clone()));
            }
        }
        Ok(connector)
    }

    fn connect_timeout_or_default(&self) -> Duration {
        self.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT)
    }
}

/// Connects a new client session to `servers` (a connect string like
/// `"127.0.0.1:2181,127.0.0.1:2182"`), asking for `session_timeout`, and
/// gives up after `connect_timeout`. Servers that refuse the connection
/// (not started yet, restarting) are tried again, after a pause that grows
/// from 50 ms to 1 s, until then.
///
/// The session outlives the caller's runtime, so that guards dropped as
/// the runtime shuts down (as `#[tokio::main]` returns) are still released
/// (see [`SharedLock`](crate::SharedLock)). Called inside a multi-thread
/// runtime that goes on, over a plain connection, it runs on that runtime
/// (no hop to another thread per request) until the runtime drops it, and
/// then moves to the library's background thread with its connection, its
/// watches and its guards as they are. Otherwise (a current-thread runtime,
/// TLS, no runtime) it runs on the background thread from the start. On
/// your runtime its heartbeats need a free worker: a runtime whose workers
/// are all kept busy past about two fifths of the session timeout loses
/// the connection (see [`ConnectOptions::session_on_own_thread`], which
/// keeps the session on the background thread).
///
/// A chroot in `servers` (`host:port/app`) must exist: one `exists` request
/// checks it once connected. For credentials and TLS:
/// [`connect_client_with`].
///
/// # Errors
///
/// [`Error::InvalidConnectString`] for a malformed connect string (a
/// scheme other than `tcp://` or `tcp+tls://`, a port out of range, ...),
/// before anything is sent; [`Error::UnresolvableHosts`] at once if no host
/// of it resolves to an address; [`Error::InvalidTls`] at once for a
/// `tcp+tls://` server (TLS needs a CA: [`connect_client_with`]);
/// [`Error::Unreachable`] if no session is established in time;
/// [`Error::SessionRefused`] instead if a server accepted the connection and
/// closed it before answering (`maxClientCnxns`, no quorum);
/// [`Error::ChrootMissing`] if the chroot does not exist.
pub async fn connect_client(
    servers: &str,
    session_timeout: Duration,
    connect_timeout: Duration,
) -> Result<zk::Client, Error> {
    let options = ConnectOptions::new()
        .session_timeout(session_timeout)
        .connect_timeout(connect_timeout);
    connect_client_with(servers, &options).await
}

/// Connects a new client session to `servers` (a connect string like
/// `"zk1:2181,zk2:2181"`, optionally with a chroot) with `options`, and
/// gives up after the connect timeout (servers that refuse are tried again
/// until then).
///
/// As [`connect_client`], which it generalises: the session outlives the
/// caller's runtime (where it runs is said there), and a chroot must
/// exist.
///
/// # Errors
///
/// [`Error::InvalidConnectString`]; [`Error::UnresolvableHosts`];
/// [`Error::InvalidTls`] (also at once for a `tcp+tls://` server without a
/// CA, `ConnectOptions::tls_ca_pem`, or without the `tls` feature);
/// [`Error::Unreachable`] if no session is established in time (also when
/// a TLS server is reached without TLS, or a plain one with it: the
/// handshake fails); [`Error::SessionRefused`] if a server accepted the
/// connection and closed it before answering the connect request
/// (`maxClientCnxns`, no quorum); [`Error::AuthFailed`] if the server rejected the
/// credentials; [`Error::ChrootMissing`].
pub async fn connect_client_with(servers: &str, options: &ConnectOptions) -> Result<zk::Client, Error> {
    // Before anything is sent: the client's own words for these are
    // "invalid address" or "empty node is not allowed in path".
    let hosts = parse_connect_string(servers).map_err(|reason| Error::InvalidConnectString {
        servers: servers.to_owned(),
        reason,
    })?;
    // The client would try a `tcp+tls://` server without TLS again and
    // again ("tls not configured") until the connect timeout.
    check_tls(servers, options.uses_tls(), options.connector.is_some())
        .map_err(|reason| Error::InvalidTls { reason })?;
    let connect_timeout = options.connect_timeout_or_default();
    let connector = options.connector()?;
    let deadline = deadline_after(connect_timeout);
    // A host name that does not resolve is met at once, not after the
    // connect timeout (the client would try it again and again).
    match tokio::time::timeout_at(deadline, unresolvable(&hosts)).await {
        Ok(None) => {}
        Ok(Some((hosts, reason))) => {
            return Err(Error::UnresolvableHosts {
                servers: servers.to_owned(),
                hosts,
                reason,
            })
        }
        Err(_) => {
            return Err(Error::UnresolvableHosts {
                servers: servers.to_owned(),
                hosts: hosts.into_iter().map(|(host, _)| host.to_owned()).collect(),
                reason: format!("the name service did not answer within {connect_timeout:?}"),
            })
        }
    }
    let secure = options.uses_tls();
    let cluster = servers.to_owned();
    // The last server that closed the connection before answering, if any.
    let refused = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let refused_by = refused.clone();
    // Each attempt fails eagerly once every server has refused; the next one
    // comes after a pause (doubling up to a second) until the connect
    // timeout ends the loop: a server that is starting, restarting or not
    // yet resolvable is met as soon as it listens.
    let connecting = |connector: zk::Connector| async move {
        let mut pause = FIRST_RETRY_PAUSE;
        loop {
            let attempt = connector.clone();
            // `secure` is false without the `tls` feature.
            let result = match secure {
                #[cfg(feature = "tls")]
                true => attempt.secure_connect(&cluster).await,
                _ => attempt.connect(&cluster).await,
            };
            match result {
                Err(zk::Error::NoHosts) => {
                    tracing::debug!(servers = %cluster, ?pause, "every server refused; trying again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(LAST_RETRY_PAUSE);
                }
                // A server that refuses the session (too many connections
                // from this host, no quorum) may take it a moment later.
                Err(zk::Error::ClosedBeforeSession { server }) => {
                    tracing::debug!(servers = %cluster, %server, ?pause, "a server closed the connection before answering; trying again");
                    if let Ok(mut last) = refused_by.lock() {
                        *last = Some(server);
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(LAST_RETRY_PAUSE);
                }
                other => return other,
            }
        }
    };
    // On the caller's runtime if it is a multi-thread one that goes on: no
    // hop to another thread per request. It moves to the background thread
    // if that runtime drops it (see `background::Placement`). A TLS
    // connection cannot move as it is (it would connect again), and a
    // current-thread runtime's one thread may be the one a lock's last
    // handle blocks to wait for its releases: both start on the background,
    // as does a session asked to (`session_on_own_thread`).
    let placement = match (background::handle(), tokio::runtime::Handle::try_current()) {
        (Some(_), Ok(here))
            if !secure
                && !options.own_thread
                && here.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
                && !background::shutting_down(&here) =>
        {
            background::Placement::caller(here.id())
        }
        _ => background::Placement::background(),
    };
    let connecting = {
        let placement = placement.clone();
        let connector = connector.with_fallback(move |serve| placement.moved(serve));
        connecting(connector)
    };
    let connected = match background::handle().filter(|_| placement.on_background()) {
        Some(background) => {
            let task = AbortOnDrop(background.spawn(connecting));
            match tokio::time::timeout_at(deadline, task).await {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(e)) => Ok(Err(zk::Error::UnexpectedError(format!("connecting failed: {e}")))),
                Err(elapsed) => Err(elapsed),
            }
        }
        None => tokio::time::timeout_at(deadline, connecting).await,
    };
    match connected {
        Ok(Ok(client)) => {
            if background::handle().is_some() {
                background::register_session(&client, placement);
            }
            match missing_chroot(&client, None).await {
                Some(e) => Err(e),
                None => {
                    crate::metrics::watch_session(&client);
                    Ok(client)
                }
            }
        }
        Ok(Err(zk::Error::NoHosts)) | Ok(Err(zk::Error::Timeout)) | Err(_) => {
            match refused.lock().ok().and_then(|mut last| last.take()) {
                Some(server) => Err(Error::SessionRefused {
                    servers: servers.to_owned(),
                    server,
                    timeout: connect_timeout,
                }),
                None => Err(Error::Unreachable {
                    servers: servers.to_owned(),
                    timeout: connect_timeout,
                }),
            }
        }
        Ok(Err(zk::Error::BadArguments(reason))) => Err(Error::InvalidConnectString {
            servers: servers.to_owned(),
            reason: (*reason).to_owned(),
        }),
        Ok(Err(e)) => Err(Error::from_zk(e, servers)),
    }
}

/// The instant `timeout` from now; about 30 years from now for a longer
/// one (as `tokio::time::timeout` does, which must not overflow).
fn deadline_after(timeout: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
}

/// The schemes the client knows, before `host:port`: plain and TLS.
const SCHEMES: [&str; 2] = ["tcp", "tcp+tls"];

/// Checks a connect string (`host:port[,host:port...][/chroot]`, each
/// server optionally `tcp://` or `tcp+tls://`, IPv6 addresses in brackets,
/// the port 2181 when left out) and returns its hosts and ports; what is
/// wrong with it otherwise, naming the entry. No I/O.
fn parse_connect_string(servers: &str) -> Result<Vec<(&str, u16)>, String> {
    if servers.trim().is_empty() {
        return Err("it is empty".to_owned());
    }
    let entries: Vec<&str> = servers.split(',').collect();
    let last = entries.len() - 1;
    let mut hosts = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        if entry.trim().is_empty() {
            // The client calls it an "empty connect string".
            return Err("it has an empty entry (a stray ',')".to_owned());
        }
        if entry.chars().any(char::is_whitespace) {
            return Err(format!("`{entry}` contains whitespace"));
        }
        let mut address = entry;
        if let Some((scheme, rest)) = entry.split_once("://") {
            if !SCHEMES.contains(&scheme) {
                return Err(format!(
                    "`{scheme}://` is not a scheme of ZooKeeper connect strings (only tcp:// and \
                     tcp+tls:// are, and neither is needed)"
                ));
            }
            address = rest;
        }
        // The chroot follows the last server; the client reads a '/' in
        // any other entry as part of its port.
        if let Some(slash) = address.find('/') {
            let chroot = &address[slash..];
            if i != last {
                return Err(format!(
                    "`{entry}` has a chroot (`{chroot}`) but is not the last server: the chroot goes \
                     once, after the last one (host1:2181,host2:2181{chroot})"
                ));
            }
            check_chroot(chroot)?;
            address = &address[..slash];
        }
        let (host, port) = split_host_port(entry, address)?;
        hosts.push((host, port));
    }
    Ok(hosts)
}

/// Checks that the servers of the connect string written `tcp+tls://` can
/// be reached: with TLS, when the options give a CA (`uses_tls`), or may
/// (a connector configured by hand, `hand_made`, whose TLS options cannot
/// be seen); what to do otherwise. No I/O.
fn check_tls(servers: &str, uses_tls: bool, hand_made: bool) -> Result<(), String> {
    let Some(entry) = servers.split(',').find(|entry| entry.starts_with("tcp+tls://")) else {
        return Ok(());
    };
    if cfg!(feature = "tls") && (uses_tls || hand_made) {
        return Ok(());
    }
    let missing = if cfg!(feature = "tls") {
        "no TLS CA is given: give the CA certificates that verify the servers \
         (`ConnectOptions::tls_ca_pem`; `--tls-ca` on the command line)"
    } else {
        "this build of zk-rwlock has no TLS: build it with its `tls` feature and give the CA \
         certificates that verify the servers (`ConnectOptions::tls_ca_pem`)"
    };
    Err(format!(
        "the connect string asks for TLS (`{entry}`), but {missing}, or write the server without \
         `tcp+tls://`"
    ))
}

/// Splits `host:port`, `[v6]:port`, `host` or `[v6]` (port 2181) of the
/// connect string's `entry`.
fn split_host_port<'a>(entry: &str, address: &'a str) -> Result<(&'a str, u16), String> {
    let (host, port) = if let Some(bracketed) = address.strip_prefix('[') {
        let Some((host, rest)) = bracketed.split_once(']') else {
            return Err(format!(
                "`{entry}` opens an IPv6 address with '[' but does not close it with ']'"
            ));
        };
        match rest {
            "" => (host, None),
            _ => match rest.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err(format!("`{entry}`: expected ':' and a port after ']'")),
            },
        }
    } else {
        match address.rsplit_once(':') {
            Some((host, _)) if host.contains(':') => {
                return Err(format!(
                    "`{entry}` looks like an IPv6 address: put it in brackets, like [::1]:2181"
                ))
            }
            Some((host, port)) => (host, Some(port)),
            None => (address, None),
        }
    };
    if host.is_empty() {
        return Err(format!("`{entry}` has no host"));
    }
    let port = match port {
        None | Some("") => 2181,
        Some(port) if !port.bytes().all(|b| b.is_ascii_digit()) => {
            return Err(format!("the port `{port}` of `{entry}` is not a number"))
        }
        Some(port) => match port.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => {
                return Err(format!(
                    "the port {port} of `{entry}` is out of range: a port is a number from 1 to 65535"
                ))
            }
        },
    };
    Ok((host, port))
}

/// Checks the chroot of a connect string (`/app`) as the client and the
/// server would (the characters with the rule of lock paths and
/// identities), in words that name it.
fn check_chroot(chroot: &str) -> Result<(), String> {
    if chroot == "/" {
        return Ok(());
    }
    let why = if chroot[1..].split('/').any(str::is_empty) {
        "it has an empty segment ('//') or ends with '/'".to_owned()
    } else if chroot[1..].split('/').any(|s| s == "." || s == "..") {
        "it has a '.' or '..' segment".to_owned()
    } else if let Some((at, c)) = crate::error::first_refused(chroot) {
        format!(
            "it has {} at byte {at}, a character ZooKeeper refuses in paths",
            crate::error::character_name(c)
        )
    } else {
        return Ok(());
    };
    Err(format!(
        "its chroot `{chroot}` (what follows the first '/' of the last server) is not a valid ZooKeeper \
         path: {why}; a connect string is host:port[,host:port...] with an optional /chroot at the end"
    ))
}

/// Resolves the host names of the connect string (IP addresses need no
/// resolving). `None` if one host is an IP address or a name that resolves
/// (the names that do not are logged: the client tries the others); else
/// every host and the first host's resolver error.
async fn unresolvable(hosts: &[(&str, u16)]) -> Option<(Vec<String>, String)> {
    let names: Vec<(String, u16)> = hosts
        .iter()
        .filter(|(host, _)| host.parse::<std::net::IpAddr>().is_err())
        .map(|&(host, port)| (host.to_owned(), port))
        .collect();
    if names.is_empty() {
        return None;
    }
    let addresses = hosts.len() - names.len();
    let resolved = tokio::task::spawn_blocking(move || {
        names
            .into_iter()
            .map(|(host, port)| {
                let error = match std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port)) {
                    Ok(mut addrs) => addrs.next().is_none().then(|| "no address".to_owned()),
                    Err(e) => Some(e.to_string()),
                };
                (host, error)
            })
            .collect::<Vec<_>>()
    })
    .await;
    // A lookup that could not run: the client resolves them itself.
    let resolved = resolved.ok()?;
    if addresses > 0 || resolved.iter().any(|(_, error)| error.is_none()) {
        for (host, error) in &resolved {
            if let Some(error) = error {
                tracing::warn!(host = %host, %error, "a host of the connect string does not resolve: trying the others");
            }
        }
        return None;
    }
    let reason = resolved.first().and_then(|(_, e)| e.clone()).unwrap_or_default();
    Some((resolved.into_iter().map(|(host, _)| host).collect(), reason))
}

/// `result`, an acquire's on the lock directory `path`, or for its
/// `NoNode` (neither the directory nor its parents could be created)
/// [`Error::ChrootMissing`] if the client's chroot is missing
/// ([`missing_chroot`]).
pub(crate) async fn diagnose_no_node<T>(
    client: &zk::Client,
    path: &str,
    result: Result<T, Error>,
) -> Result<T, Error> {
    match result {
        Err(Error::ZooKeeper(zk::Error::NoNode)) => Err(missing_chroot(client, Some(path))
            .await
            .unwrap_or(Error::ZooKeeper(zk::Error::NoNode))),
        result => result,
    }
}

/// [`Error::ChrootMissing`] (naming the lock directory `path`, if given) if
/// `client` has a chroot and it does not exist; `None` if it exists, there
/// is none, or the check fails (the caller's own error stands then).
pub(crate) async fn missing_chroot(client: &zk::Client, path: Option<&str>) -> Option<Error> {
    let chroot = client.path();
    if chroot == "/" {
        return None;
    }
    // Under a chroot, `/` is the chroot itself; retried through connection
    // loss.
    match with_retry(client, || client.check_stat("/")).await {
        Ok(None) => Some(Error::ChrootMissing {
            chroot: chroot.to_owned(),
            path: path.map(str::to_owned),
        }),
        Ok(Some(_)) | Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_strings() {
        fn ok(s: &str) -> Vec<(&str, u16)> {
            parse_connect_string(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
        }
        assert_eq!(ok("127.0.0.1:2181"), [("127.0.0.1", 2181)]);
        assert_eq!(ok("zk1,zk2:2182/app"), [("zk1", 2181), ("zk2", 2182)]);
        assert_eq!(ok("tcp://a:1,tcp+tls://b:2/app/x"), [("a", 1), ("b", 2)]);
        assert_eq!(ok("[::1]:2181,[fe80::1]"), [("::1", 2181), ("fe80::1", 2181)]);
        assert_eq!(ok("host:"), [("host", 2181)]);
        assert_eq!(ok("a:65535/"), [("a", 65535)]);
        for (bad, why) in [
            ("", "it is empty"),
            (" ", "it is empty"),
            ("a:1,", "empty entry"),
            ("a:1,,b:2", "empty entry"),
            ("http://127.0.0.1:2181", "`http://` is not a scheme"),
            ("zk://a:1", "`zk://` is not a scheme"),
            (
                "127.0.0.1:99999",
                "the port 99999 of `127.0.0.1:99999` is out of range",
            ),
            ("a:0", "out of range"),
            ("a:123456789012345678901234567890", "out of range"),
            ("a:abc", "the port `abc` of `a:abc` is not a number"),
            ("a:-1", "not a number"),
            (":2181", "has no host"),
            ("tcp://", "has no host"),
            ("::1", "put it in brackets"),
            ("[::1", "does not close it"),
            ("[::1]x", "expected ':'"),
            ("a:1/app,b:2", "is not the last server"),
            ("a:1//app", "empty segment"),
            ("a:1/app/", "empty segment"),
            ("a:1/app/../x", "'.' or '..'"),
            ("a :1", "whitespace"),
            // The characters ZooKeeper refuses in paths: the rule of lock
            // paths and identities (`\u{85}` and `\n` are whitespace).
            (
                "a:1/app\u{1}",
                "it has U+0001 at byte 4, a character ZooKeeper refuses in paths",
            ),
            ("a:1/a\u{7f}/b", "it has U+007F at byte 2"),
            ("a:1/\u{e000}", "it has U+E000 at byte 1"),
            ("a:1/app/\u{fff0}x", "it has U+FFF0 at byte 5"),
            ("a:1/\u{1f512}", "it has U+1F512 at byte 1"),
            ("a:1/a\u{85}", "whitespace"),
        ] {
            let err = parse_connect_string(bad).expect_err(bad);
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        assert_eq!(ok("a:1/app/é\u{ffef}"), [("a", 1)]);
    }

    /// A refused character is named in the message, the connect string
    /// escaped: the message is one line.
    #[test]
    fn a_refused_chroot_character_is_named_in_one_line() {
        let servers = "a:1/app\u{1}";
        let e = Error::InvalidConnectString {
            servers: servers.to_owned(),
            reason: parse_connect_string(servers).expect_err("refused"),
        };
        let message = e.to_string();
        assert!(
            message.starts_with("invalid connect string `a:1/app\\u{1}`: its chroot `/app\\u{1}`"),
            "{message}"
        );
        assert!(!message.chars().any(char::is_control), "{message:?}");
    }

    /// `tcp+tls://` needs TLS: a CA, and the `tls` feature; a connector made
    /// by hand may have TLS that cannot be seen (only with the feature).
    #[test]
    fn tls_servers_need_a_ca() {
        let tls = cfg!(feature = "tls");
        // (servers, the options give a CA, a connector made by hand, accepted)
        for (servers, ca, hand_made, accepted) in [
            ("a:1,tcp://b:2/app", false, false, true),
            ("tcp://a:1", true, false, true),
            ("tcp+tls://a:1", true, false, tls),
            ("tcp+tls://a:1", false, true, tls),
            ("tcp+tls://a:1", false, false, false),
            ("a:1,tcp+tls://b:2/app", false, false, false),
            ("tcp://a:1,tcp+tls://[::1]:2,c:3", false, false, false),
        ] {
            let checked = check_tls(servers, ca, hand_made);
            assert_eq!(
                checked.is_ok(),
                accepted,
                "{servers} {ca} {hand_made}: {checked:?}"
            );
            if let Err(reason) = checked {
                let entry = servers
                    .split(',')
                    .find(|e| e.starts_with("tcp+tls://"))
                    .expect("one");
                assert!(
                    reason.starts_with(&format!("the connect string asks for TLS (`{entry}`), but ")),
                    "{reason}"
                );
                let needed = if tls {
                    "no TLS CA is given: give the CA certificates that verify the servers \
                     (`ConnectOptions::tls_ca_pem`"
                } else {
                    "this build of zk-rwlock has no TLS: build it with its `tls` feature"
                };
                assert!(reason.contains(needed), "{reason}");
            }
        }
    }

    /// Refused before anything is sent, however long the connect timeout:
    /// the client would try a `tcp+tls://` server without TLS until then.
    #[tokio::test]
    async fn a_tls_server_without_a_ca_is_refused_at_once() {
        // No server: nothing would answer for the whole minute.
        let servers = "tcp+tls://127.0.0.1:1";
        let started = std::time::Instant::now();
        let result = connect_client(servers, Duration::from_secs(10), Duration::from_secs(60)).await;
        match result {
            Err(Error::InvalidTls { reason }) => {
                assert!(reason.contains("tcp+tls://127.0.0.1:1"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn hosts_that_do_not_resolve() {
        assert_eq!(unresolvable(&[("127.0.0.1", 1), ("::1", 1)]).await, None);
        assert_eq!(unresolvable(&[("localhost", 1)]).await, None);
        // One address or one name that resolves: the others are left to the client.
        assert_eq!(
            unresolvable(&[("nosuchhost.invalid", 1), ("127.0.0.1", 1)]).await,
            None
        );
        assert_eq!(
            unresolvable(&[("nosuchhost.invalid", 1), ("localhost", 1)]).await,
            None
        );
        let (hosts, reason) = unresolvable(&[("nosuchhost.invalid", 1), ("other.invalid", 2)])
            .await
            .expect("no host resolves");
        assert_eq!(hosts, ["nosuchhost.invalid", "other.invalid"]);
        assert!(!reason.is_empty());
    }

    #[test]
    fn debug_shows_no_credentials() {
        let options = ConnectOptions::new()
            .digest("alice", "s3cret")
            .auth("ip", b"10.0.0.1");
        let shown = format!("{options:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("digest") && shown.contains("ip"), "{shown}");
        assert!(options.has_credentials());
        assert!(!ConnectOptions::new().has_credentials());
    }

    #[cfg(feature = "tls")]
    #[test]
    fn tls_material_is_checked_when_given() {
        let e = ConnectOptions::new().tls_ca_pem("not a certificate").unwrap_err();
        assert!(matches!(e, Error::InvalidTls { .. }), "{e}");
        let e = ConnectOptions::new().tls_identity_pem("", "").unwrap_err();
        assert!(matches!(e, Error::InvalidTls { .. }), "{e}");
    }

    /// A P-256 key as `keytool` and `openssl pkcs12 -nodes` export it: PKCS#8
    /// without the public key (a throwaway key, made for this test).
    #[cfg(feature = "tls")]
    const EC_KEY_WITHOUT_PUBLIC: &str = "-----BEGIN PRIVATE KEY-----
MEECAQAwEwYHKoZIzj0CAQYIKoZIzj0DAQcEJzAlAgEBBCA9rBYWpko9lSJN5TBY
ynDKlKvtd2sOPKQZtav0XCI1eA==
-----END PRIVATE KEY-----
";

    /// The same key after `openssl ec`, which writes the public key back.
    #[cfg(feature = "tls")]
    const EC_KEY: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEID2sFhamSj2VIk3lMFjKcMqUq+13aw48pBm1q/RcIjV4oAoGCCqGSM49
AwEHoUQDQgAE9dO31EjI7ds+3rpjDCdRYUfr7w4ykcfuR7UuoaOkl4nWAwVhQh/u
QOoUw6PAGR9QpxwT3EdkbqKUtThIxTy3og==
-----END EC PRIVATE KEY-----
";

    /// The certificate is only read as PEM here, not verified.
    #[cfg(feature = "tls")]
    const CERT: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";

    /// The crypto provider is asked whether it can use the key when the key is
    /// given, not at the first connect; an EC key without its public key gets
    /// the advice that repairs it under ring (aws-lc-rs reads it as it is).
    #[cfg(feature = "tls")]
    #[test]
    fn a_client_key_the_provider_cannot_use_is_refused_with_advice() {
        let complete = ConnectOptions::new().tls_identity_pem(CERT, EC_KEY);
        assert!(complete.is_ok(), "a complete EC key: {:?}", complete.err());
        let without = ConnectOptions::new().tls_identity_pem(CERT, EC_KEY_WITHOUT_PUBLIC);
        if cfg!(feature = "tls-aws-lc-rs") {
            assert!(without.is_ok(), "aws-lc-rs reads it: {:?}", without.err());
        } else {
            let e = without.unwrap_err();
            assert!(matches!(e, Error::InvalidTls { .. }), "{e}");
            assert!(
                e.to_string().contains("openssl ec -in key.pem -out key.pem"),
                "{e}"
            );
        }
    }
}
