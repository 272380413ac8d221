//! Throwaway Apache ZooKeeper servers for tests and examples.
//!
//! [`ZkCluster`] starts one standalone server or an N-member ensemble of
//! ZooKeeper 3.8 servers (the Java implementation, e.g. Debian's `zookeeper`
//! package) on `127.0.0.1` only, each in its own directory under a fresh
//! temporary directory, and removes everything again when dropped.
//!
//! ```no_run
//! use zk_rwlock_testkit::ZkCluster;
//!
//! # fn main() -> Result<(), zk_rwlock_testkit::LaunchError> {
//! let mut zk = ZkCluster::standalone()?;
//! assert_eq!(zk.four_letter(0, "ruok")?, "imok");
//! let connect = zk.connect_string(); // "127.0.0.1:<port>"
//! # let _ = connect;
//! zk.restart(0)?; // same port, same data
//! # Ok(())
//! # }
//! ```
//!
//! # Requirements
//!
//! * A Java runtime: `java` on `PATH`, or the binary named by the `JAVA`
//!   environment variable (or [`ZkClusterBuilder::java`]).
//! * The ZooKeeper 3.8 jars (`zookeeper.jar`, `zookeeper-jute.jar` and their
//!   netty / slf4j / metrics / commons dependencies) in `/usr/share/java`, or
//!   in the directory named by the `ZK_RWLOCK_JAR_DIR` environment variable
//!   (or [`ZkClusterBuilder::jar_dir`]). On Debian/Ubuntu:
//!   `sudo apt-get install -y zookeeper`.
//!
//! # Seeded data
//!
//! [`ZkClusterBuilder::seed_cversion`] starts the servers on a data
//! directory in which a persistent node's child version counter (the source
//! of sequential nodes' suffixes) already stands at a chosen value, e.g. near
//! its limit `2147483647`, without creating that many children. This needs a
//! Java compiler (`javac`, from a JDK) to build a small helper
//! (`src/launcher/SeedCversion.java`) against the server's jars.
//!
//! # Secured servers
//!
//! [`ZkClusterBuilder::tls`] gives every member a TLS-only client port
//! (`secureClientPort` with the Netty connection factory) beside the plain
//! one the launcher probes, with keys made at start-up by the JDK's
//! `keytool` (and `openssl`, for the client key as PEM) in the cluster's
//! directory: see [`crate::secure`]. [`ZkClusterBuilder::sasl_user`] adds
//! SASL DIGEST-MD5 users (`authProvider.1` and a JAAS file). ACLs that deny
//! the world are made by the tests themselves, as any client would.
//!
//! # Robustness
//!
//! Ports are chosen by binding `127.0.0.1:0` and releasing the socket; if a
//! server then fails to bind because another process took the port in the
//! meantime, the launch is retried on a fresh set of ports (a bounded number
//! of times). Client ports chosen by the caller
//! ([`ZkClusterBuilder::client_port`]) are checked the same way, but never
//! replaced: a taken one fails the start with [`LaunchError::PortInUse`]. Readiness is established by polling the four-letter words
//! `ruok`, `srvr` and `conf` (the latter to make sure the answering server is
//! really ours) with a deadline; nothing sleeps "to let things settle".
//!
//! Dropping a [`ZkCluster`] kills its servers and deletes its directory. If
//! the owning process dies without running destructors (e.g. `SIGKILL`), a
//! watchdog process (`sh`, reading a pipe from the owner until it closes)
//! kills its servers. Should that fail too, the next [`ZkCluster`] started on
//! the same machine (Linux only: it reads `/proc/<pid>/cmdline`) kills such
//! orphans - only processes whose command line names a launcher directory
//! whose owning process is gone - and deletes their directories.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use crate::secure::{self, ClientAuth, TlsFiles};
use rustix::process::{kill_process, test_kill_process, waitid, Pid, Signal, WaitId, WaitIdOptions};
use tempfile::TempDir;

/// Environment variable naming the directory that holds the ZooKeeper jars.
pub const JAR_DIR_ENV: &str = "ZK_RWLOCK_JAR_DIR";

/// Environment variable naming the `java` binary to run.
pub const JAVA_ENV: &str = "JAVA";

/// Environment variable naming the `javac` binary (used by
/// [`ZkClusterBuilder::seed_cversion`]; default: `javac` on `PATH`).
pub const JAVAC_ENV: &str = "JAVAC";

/// Directory searched for the ZooKeeper jars when neither
/// [`ZkClusterBuilder::jar_dir`] nor [`JAR_DIR_ENV`] is set.
pub const DEFAULT_JAR_DIR: &str = "/usr/share/java";

/// Default ZooKeeper `tickTime` of the servers started by this module.
pub const DEFAULT_TICK_TIME: Duration = Duration::from_millis(200);

/// Default deadline for servers to start serving.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Default timeout of one four-letter-word exchange ([`ZkCluster::four_letter`]).
pub const DEFAULT_FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(2);

/// Jars that must be present.
const MANDATORY_JARS: [&str; 2] = ["zookeeper.jar", "zookeeper-jute.jar"];

/// Jars that are put on the class path when present.
const OPTIONAL_JARS: [&str; 14] = [
    "netty-handler.jar",
    "netty-transport.jar",
    "netty-common.jar",
    "netty-buffer.jar",
    "netty-codec.jar",
    "netty-resolver.jar",
    "netty-transport-native-epoll.jar",
    "netty-transport-native-unix-common.jar",
    "slf4j-api.jar",
    "slf4j-simple.jar",
    "metrics-core.jar",
    "commons-cli.jar",
    "commons-io.jar",
    "snappy-java.jar",
];

const MAIN_CLASS: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

/// Source of the helper that writes seeded snapshots ([`ZkClusterBuilder::seed_cversion`]).
const SEED_SOURCE: &str = include_str!("launcher/SeedCversion.java");

/// JVM flags: small heap, fast start-up (measured: C1-only and the serial
/// collector start a standalone server ~10-30% faster on a 2-CPU machine).
const JVM_FLAGS: [&str; 10] = [
    "-Xms32m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Djava.net.preferIPv4Stack=true",
    "-Dzookeeper.jmx.log4j.disable=true",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
];

/// Prefix of the temporary directories created by this module.
const DIR_PREFIX: &str = "zk-rwlock-zk-";

/// How often readiness and exit conditions are polled.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Timeout of one probe while polling for readiness.
const PROBE_TIMEOUT: Duration = Duration::from_millis(1000);

/// How long [`ZkCluster::stop`] waits after `SIGTERM` before `SIGKILL`.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// How long to wait for a port to close / a signal to take effect.
const SETTLE_DEADLINE: Duration = Duration::from_secs(5);

/// Number of launch attempts (each on fresh ports) when ports are raced away.
const MAX_LAUNCH_ATTEMPTS: usize = 5;

/// Maximum number of log lines included in errors.
const LOG_TAIL_LINES: usize = 40;

/// Maximum number of log bytes read for the tail included in errors.
const LOG_TAIL_BYTES: u64 = 16 * 1024;

/// Errors of the ZooKeeper launcher.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// The ZooKeeper jars were not found.
    #[error(
        "ZooKeeper jars not found in {} ({missing}): install them with \
         `sudo apt-get install -y zookeeper` (Debian/Ubuntu) or set {JAR_DIR_ENV} \
         to a directory holding the ZooKeeper 3.8 jars",
        jar_dir.display()
    )]
    NotInstalled {
        /// Directory that was searched.
        jar_dir: PathBuf,
        /// Comma-separated names of the missing mandatory jars.
        missing: String,
    },

    /// The `java` binary could not be run.
    #[error(
        "could not run the Java launcher `{java}`: {source}; install a Java runtime \
         (e.g. `sudo apt-get install -y default-jre-headless`) or set {JAVA_ENV} to \
         the path of a `java` binary"
    )]
    JavaNotFound {
        /// The binary that was tried.
        java: String,
        /// Why spawning it failed.
        #[source]
        source: io::Error,
    },

    /// The Java compiler could not be run; it is needed to seed data
    /// directories ([`ZkClusterBuilder::seed_cversion`]).
    #[error(
        "could not run the Java compiler `{javac}`: {source}; seeding a node's cversion compiles \
         a small Java helper against the ZooKeeper jars: install a JDK (e.g. \
         `sudo apt-get install -y openjdk-17-jdk-headless`, or run scripts/ensure-zookeeper.sh) \
         or set {JAVAC_ENV} to the path of a `javac` binary"
    )]
    JavacNotFound {
        /// The binary that was tried.
        javac: String,
        /// Why spawning it failed.
        #[source]
        source: io::Error,
    },

    /// Compiling or running the seeding helper failed.
    #[error("seeding the ZooKeeper data directories failed: {step} {status}; its output:\n{output}")]
    SeedFailed {
        /// What was being done (`compiling ...`, `running ...`).
        step: String,
        /// Its exit status.
        status: String,
        /// Its standard output and error.
        output: String,
    },

    /// A tool that makes a secured server's material (`keytool`,
    /// `openssl`) could not be run.
    #[error("could not run `{tool}`: {source}; a secured ZooKeeper's test keys are made with it: {install}")]
    ToolNotFound {
        /// The binary that was tried.
        tool: String,
        /// How to install it.
        install: String,
        /// Why spawning it failed.
        #[source]
        source: io::Error,
    },

    /// Making a secured server's material failed.
    #[error("making the test keys failed: `{command}` {status}; its output:\n{output}")]
    ToolFailed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// Its standard output and error.
        output: String,
    },

    /// An argument was out of range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A member index was out of range.
    #[error(
        "no ZooKeeper member {index}: this cluster has {members} member(s), \
         numbered from 0"
    )]
    NoSuchMember {
        /// The index that was asked for.
        index: usize,
        /// Number of members of the cluster.
        members: usize,
    },

    /// The member is not in a state that allows the operation.
    #[error("cannot {action} ZooKeeper member {member}: it is {state}; {hint}")]
    InvalidState {
        /// The member index.
        member: usize,
        /// The member's state (`"stopped"`, `"paused"`).
        state: &'static str,
        /// The operation that was refused.
        action: &'static str,
        /// What to do instead.
        hint: &'static str,
    },

    /// A file-system or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// A server process exited when it should be running.
    #[error(
        "ZooKeeper member {member} exited unexpectedly ({status}); last lines of {}:\n{log_tail}",
        log_path.display()
    )]
    Exited {
        /// The member index.
        member: usize,
        /// The exit status.
        status: String,
        /// The member's log file (deleted with the cluster).
        log_path: PathBuf,
        /// The end of the member's log since it was last started.
        log_tail: String,
    },

    /// A condition was not reached before its deadline.
    #[error(
        "timed out after {waited:?} waiting for {what} (last observation: {last}); \
         the machine may be overloaded or the server misconfigured{logs}"
    )]
    Timeout {
        /// The condition that was waited for.
        what: String,
        /// How long it was waited for.
        waited: Duration,
        /// The last observed state.
        last: String,
        /// Log tails of the members involved (may be empty).
        logs: String,
    },

    /// Start-up kept failing because other processes took the chosen ports.
    #[error(
        "could not start ZooKeeper after {attempts} attempts on fresh loopback ports \
         (other processes kept taking them); free some ports or retry; last failure: {last}"
    )]
    PortsUnavailable {
        /// Number of attempts made.
        attempts: usize,
        /// The failure of the last attempt.
        last: Box<LaunchError>,
    },

    /// A four-letter-word exchange failed (refused, timed out, ...).
    #[error(
        "four-letter word `{word}` to ZooKeeper member {member} on 127.0.0.1:{port} \
         failed: {source}; check that the member is running and not paused"
    )]
    FourLetter {
        /// The member index.
        member: usize,
        /// The word that was sent.
        word: String,
        /// The member's client port.
        port: u16,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// A client port asked for ([`ZkClusterBuilder::client_port`]) is taken.
    #[error(
        "cannot serve on 127.0.0.1:{port}: {source}; stop whatever listens there \
         (another ZooKeeper?) or choose another port"
    )]
    PortInUse {
        /// The client port.
        port: u16,
        /// Why binding it failed.
        #[source]
        source: io::Error,
    },

    /// A member's process exited but its client port still accepts connections.
    #[error(
        "ZooKeeper member {member} has exited but 127.0.0.1:{port} still accepts \
         connections: another process is using the port; stop that process"
    )]
    PortStillOpen {
        /// The member index.
        member: usize,
        /// The client port.
        port: u16,
    },
}

impl LaunchError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        LaunchError::Io {
            context: context.into(),
            source,
        }
    }
}

/// The role a ZooKeeper server reports in its `srvr` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerMode {
    /// A standalone (single) server.
    Standalone,
    /// The leader of an ensemble.
    Leader,
    /// A follower in an ensemble.
    Follower,
    /// An observer in an ensemble.
    Observer,
}

impl ServerMode {
    /// Parses the `Mode: ...` line of a `srvr`/`stat` answer.
    pub fn from_srvr(answer: &str) -> Option<ServerMode> {
        answer
            .lines()
            .find_map(|line| line.trim().strip_prefix("Mode:"))
            .and_then(|mode| match mode.trim() {
                "standalone" => Some(ServerMode::Standalone),
                "leader" => Some(ServerMode::Leader),
                "follower" => Some(ServerMode::Follower),
                "observer" => Some(ServerMode::Observer),
                _ => None,
            })
    }

    /// Whether this server is the one that decides: a leader or a standalone server.
    pub fn is_leader(self) -> bool {
        matches!(self, ServerMode::Leader | ServerMode::Standalone)
    }
}

impl fmt::Display for ServerMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServerMode::Standalone => "standalone",
            ServerMode::Leader => "leader",
            ServerMode::Follower => "follower",
            ServerMode::Observer => "observer",
        })
    }
}

/// Builder for a [`ZkCluster`]; see [`ZkCluster::builder`].
#[derive(Debug, Clone)]
pub struct ZkClusterBuilder {
    members: usize,
    tick_time: Duration,
    jar_dir: Option<PathBuf>,
    java: Option<PathBuf>,
    startup_timeout: Duration,
    seeds: Vec<(String, i32)>,
    client_port: Option<u16>,
    tls: Option<ClientAuth>,
    sasl_users: Vec<(String, String)>,
}

impl Default for ZkClusterBuilder {
    fn default() -> Self {
        ZkClusterBuilder {
            members: 1,
            tick_time: DEFAULT_TICK_TIME,
            jar_dir: None,
            java: None,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            seeds: Vec::new(),
            client_port: None,
            tls: None,
            sasl_users: Vec::new(),
        }
    }
}

impl ZkClusterBuilder {
    /// Number of servers: 1 (the default) starts a standalone server, more
    /// start an ensemble (quorum: a majority of `n`).
    pub fn members(mut self, n: usize) -> Self {
        self.members = n;
        self
    }

    /// Client port of member 0; member `i` listens on `port + i` (default:
    /// free ports chosen by the system). Peer and election ports are always
    /// chosen freely. A taken port fails the start with
    /// [`LaunchError::PortInUse`].
    pub fn client_port(mut self, port: u16) -> Self {
        self.client_port = Some(port);
        self
    }

    /// ZooKeeper `tickTime` (default 200 ms, whole milliseconds). Sessions
    /// may last from 2 to 20 ticks.
    pub fn tick_time(mut self, tick: Duration) -> Self {
        self.tick_time = tick;
        self
    }

    /// Directory holding the ZooKeeper jars (default: `$ZK_RWLOCK_JAR_DIR`,
    /// else `/usr/share/java`).
    pub fn jar_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.jar_dir = Some(dir.into());
        self
    }

    /// The `java` binary (default: `$JAVA`, else `java` on `PATH`).
    pub fn java(mut self, java: impl Into<PathBuf>) -> Self {
        self.java = Some(java.into());
        self
    }

    /// How long to wait for the servers to serve (default 30 s); also used by
    /// [`ZkCluster::start`].
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Starts the servers on data in which the persistent node `path` (and
    /// its parents, as persistent nodes with the open ACL) exists without
    /// children and with its child version counter (`cversion`) at
    /// `cversion`: the next sequential child created under `path` gets
    /// the suffix `cversion`, the one after it `cversion + 1`, up to
    /// ZooKeeper's limit `2147483647`. A negative value gives the wrapped
    /// numbers ZooKeeper hands out to creates in flight past the limit.
    /// Repeatable for several paths. Applied to every member's data
    /// directory before its first start.
    ///
    /// This compiles a small Java helper (`$JAVAC`, else `javac` on `PATH`)
    /// that writes a snapshot with ZooKeeper's own `DataTree` and
    /// `FileTxnSnapLog`; without a JDK the start fails with
    /// [`LaunchError::JavacNotFound`].
    pub fn seed_cversion(mut self, path: &str, cversion: i32) -> Self {
        self.seeds.push((path.to_owned(), cversion));
        self
    }

    /// Gives every member a TLS-only client port besides its plain one
    /// (which the launcher keeps for its four-letter-word probes): a
    /// `secureClientPort` on `127.0.0.1` with the Netty connection factory,
    /// a key store and a trust store made at start-up with the JDK's
    /// `keytool` in the cluster's directory (see [`ZkCluster::tls_files`]
    /// for the PEM files clients use). With [`ClientAuth::Need`] clients
    /// must present a certificate signed by the test CA.
    ///
    /// Needs `keytool` (a JDK; `$KEYTOOL`) and `openssl` (`$OPENSSL`).
    pub fn tls(mut self, client_auth: ClientAuth) -> Self {
        self.tls = Some(client_auth);
        self
    }

    /// Accepts SASL DIGEST-MD5 for `user` with `password`: the servers get
    /// `authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider`
    /// and a JAAS file (`-Djava.security.auth.login.config`) whose `Server`
    /// section lists the users. Repeatable. Clients authenticated so have
    /// the ACL identity `sasl:<user>`.
    pub fn sasl_user(mut self, user: &str, password: &str) -> Self {
        self.sasl_users.push((user.to_owned(), password.to_owned()));
        self
    }

    /// Starts the servers and waits until all of them serve (and, for an
    /// ensemble, exactly one of them is the leader).
    ///
    /// # Errors
    ///
    /// [`LaunchError::NotInstalled`] / [`LaunchError::JavaNotFound`] when
    /// ZooKeeper or Java is missing, [`LaunchError::InvalidArgument`] for
    /// zero members or a tick time outside 1 ms..=1 h, and the errors of a
    /// failed start-up ([`LaunchError::Exited`], [`LaunchError::Timeout`],
    /// [`LaunchError::PortsUnavailable`], [`LaunchError::Io`]).
    pub fn start(self) -> Result<ZkCluster, LaunchError> {
        let mut cluster = self.prepare()?;
        cluster.launch()?;
        Ok(cluster)
    }

    /// Validates the settings and creates the (not yet started) cluster and
    /// its temporary directory.
    fn prepare(self) -> Result<ZkCluster, LaunchError> {
        if self.members == 0 {
            return Err(LaunchError::InvalidArgument(
                "a ZooKeeper cluster needs at least 1 member".into(),
            ));
        }
        let tick_ms = self.tick_time.as_millis();
        if !(1..=3_600_000).contains(&tick_ms) {
            return Err(LaunchError::InvalidArgument(format!(
                "tick time {:?} is outside 1 ms..=1 h",
                self.tick_time
            )));
        }
        let tick_ms = u64::try_from(tick_ms).unwrap_or(200);
        if let Some(port) = self.client_port {
            let last = usize::from(port) + self.members - 1;
            if port == 0 || last > usize::from(u16::MAX) {
                return Err(LaunchError::InvalidArgument(format!(
                    "client ports {port}..={last} are outside 1..=65535"
                )));
            }
        }
        for (path, cversion) in &self.seeds {
            let valid = path.len() > 1
                && path.starts_with('/')
                && !path.ends_with('/')
                && !path.contains("//")
                && !path.contains('\0');
            if !valid {
                return Err(LaunchError::InvalidArgument(format!(
                    "cannot seed cversion {cversion} of `{path}`: the path must be absolute \
                     (like `/locks/a`), not `/`, and without empty segments"
                )));
            }
        }
        let jar_dir = self
            .jar_dir
            .or_else(|| std::env::var_os(JAR_DIR_ENV).map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_JAR_DIR));
        let classpath = classpath(&jar_dir)?;
        let java = self
            .java
            .map(OsString::from)
            .or_else(|| std::env::var_os(JAVA_ENV).filter(|j| !j.is_empty()))
            .unwrap_or_else(|| OsString::from("java"));

        let tmp = std::env::temp_dir();
        reap_stale_dirs(&tmp);
        let dir = create_root(&tmp)?;
        let root = dir.path().to_path_buf();
        let tls = match self.tls {
            Some(auth) => Some(secure::make_tls(&root.join("tls"), &java, auth)?),
            None => None,
        };
        if !self.sasl_users.is_empty() {
            write_file(&root.join("jaas.conf"), &secure::jaas(&self.sasl_users))?;
        }
        let members = (0..self.members)
            .map(|i| Member {
                dir: root.join(format!("member-{i}")),
                ports: Ports::default(),
                log_offset: 0,
                proc: Mutex::new(Proc::Stopped),
            })
            .collect();
        // From here on, Drop cleans up (kills processes, removes `root`).
        Ok(ZkCluster {
            root,
            dir: Some(dir),
            client_port: self.client_port,
            java,
            classpath,
            tick_ms,
            startup_timeout: self.startup_timeout,
            members,
            seeds: self.seeds,
            tls,
            sasl: !self.sasl_users.is_empty(),
        })
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Ports {
    client: u16,
    peer: u16,
    election: u16,
    /// The TLS-only client port (0: none).
    secure: u16,
}

#[derive(Debug)]
enum Proc {
    Stopped,
    Running {
        child: Child,
        paused: bool,
        /// `sh` waiting for EOF on a pipe from this process: when this
        /// process dies without cleaning up, the pipe closes and the
        /// watchdog kills the server, so no server outlives its owner.
        watchdog: Option<Child>,
    },
}

#[derive(Debug)]
struct Member {
    dir: PathBuf,
    ports: Ports,
    /// Length of the log file when the member was last started.
    log_offset: u64,
    proc: Mutex<Proc>,
}

impl Member {
    fn lock(&self) -> MutexGuard<'_, Proc> {
        self.proc.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn proc_mut(&mut self) -> &mut Proc {
        self.proc.get_mut().unwrap_or_else(PoisonError::into_inner)
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("zk.log")
    }

    fn cfg_path(&self) -> PathBuf {
        self.dir.join("zoo.cfg")
    }
}

/// One standalone ZooKeeper server or an ensemble of them, on `127.0.0.1`.
///
/// Members are numbered from 0; in an ensemble member `i` has ZooKeeper
/// server id `i + 1`. Each member keeps its ports and data directory across
/// [`stop`](ZkCluster::stop)/[`start`](ZkCluster::start). Dropping the
/// cluster kills all members and deletes the temporary directory
/// (`$TMPDIR/zk-rwlock-zk-<pid>-<random>`).
///
/// `ZkCluster` is `Send` and `Sync`.
#[derive(Debug)]
pub struct ZkCluster {
    root: PathBuf,
    /// Owns `root`: removed on drop (after the members are killed).
    dir: Option<TempDir>,
    /// Client port of member 0, if chosen ([`ZkClusterBuilder::client_port`]).
    client_port: Option<u16>,
    java: OsString,
    classpath: OsString,
    tick_ms: u64,
    startup_timeout: Duration,
    members: Vec<Member>,
    /// Applied to fresh data directories ([`ZkClusterBuilder::seed_cversion`]).
    seeds: Vec<(String, i32)>,
    /// The TLS material, if the members have a TLS-only port ([`ZkClusterBuilder::tls`]).
    tls: Option<TlsFiles>,
    /// Whether the members take SASL ([`ZkClusterBuilder::sasl_user`]).
    sasl: bool,
}

impl ZkCluster {
    /// Starts one standalone server (tick time 200 ms) and waits until it serves.
    ///
    /// # Errors
    ///
    /// As [`ZkClusterBuilder::start`].
    pub fn standalone() -> Result<ZkCluster, LaunchError> {
        ZkCluster::builder().start()
    }

    /// Starts an ensemble of `n` servers (tick time 200 ms) and waits until
    /// all serve and one is the leader. `n == 1` starts a standalone server.
    ///
    /// # Errors
    ///
    /// As [`ZkClusterBuilder::start`].
    pub fn ensemble(n: usize) -> Result<ZkCluster, LaunchError> {
        ZkCluster::builder().members(n).start()
    }

    /// A builder to choose the number of members, tick time, jar directory, ...
    pub fn builder() -> ZkClusterBuilder {
        ZkClusterBuilder::default()
    }

    /// Connect string naming all members: `"127.0.0.1:p1,127.0.0.1:p2,..."`.
    pub fn connect_string(&self) -> String {
        self.members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.ports.client))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Connect string naming member `i` only: `"127.0.0.1:<port>"`.
    ///
    /// # Panics
    ///
    /// If `i >= self.members()`.
    pub fn member_connect_string(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.client_port(i))
    }

    /// Connect string naming every member's TLS-only client port
    /// (`"127.0.0.1:s1,..."`), or `None` without [`ZkClusterBuilder::tls`].
    pub fn secure_connect_string(&self) -> Option<String> {
        self.tls.as_ref()?;
        Some(
            self.members
                .iter()
                .map(|m| format!("127.0.0.1:{}", m.ports.secure))
                .collect::<Vec<_>>()
                .join(","),
        )
    }

    /// The PEM files for clients of the TLS-only port (CA, client
    /// certificate and key), or `None` without [`ZkClusterBuilder::tls`].
    pub fn tls_files(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    /// The servers' JAAS file (with [`ZkClusterBuilder::sasl_user`]):
    /// rewrite it and restart a member to change its users.
    pub fn jaas_path(&self) -> Option<PathBuf> {
        self.sasl.then(|| self.root.join("jaas.conf"))
    }

    /// Number of members.
    pub fn members(&self) -> usize {
        self.members.len()
    }

    /// Client port of member `i` (on `127.0.0.1`).
    ///
    /// # Panics
    ///
    /// If `i >= self.members()`.
    pub fn client_port(&self, i: usize) -> u16 {
        self.members[i].ports.client
    }

    /// The servers' `tickTime`.
    pub fn tick_time(&self) -> Duration {
        Duration::from_millis(self.tick_ms)
    }

    /// Smallest session timeout the servers grant (2 ticks).
    pub fn min_session_timeout(&self) -> Duration {
        Duration::from_millis(2 * self.tick_ms)
    }

    /// Largest session timeout the servers grant (20 ticks).
    pub fn max_session_timeout(&self) -> Duration {
        Duration::from_millis(20 * self.tick_ms)
    }

    /// The cluster's temporary directory (deleted on drop).
    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// Log file (Java stdout and stderr) of member `i`. Restarts append to it.
    pub fn log_path(&self, i: usize) -> PathBuf {
        self.root.join(format!("member-{i}")).join("zk.log")
    }

    /// Process id of member `i`, if it is running (possibly paused).
    pub fn pid(&self, i: usize) -> Option<u32> {
        match &*self.members.get(i)?.lock() {
            Proc::Running { child, .. } => Some(child.id()),
            Proc::Stopped => None,
        }
    }

    /// Whether member `i` has a process (running or paused). A process that
    /// died on its own is noticed here and the member becomes stopped.
    pub fn is_running(&self, i: usize) -> bool {
        let Some(m) = self.members.get(i) else {
            return false;
        };
        let mut proc = m.lock();
        match &mut *proc {
            Proc::Running { child, .. } => match child.try_wait() {
                Ok(Some(_)) => {
                    *proc = Proc::Stopped;
                    false
                }
                Ok(None) | Err(_) => true,
            },
            Proc::Stopped => false,
        }
    }

    /// Whether member `i` is paused ([`pause`](ZkCluster::pause)).
    pub fn is_paused(&self, i: usize) -> bool {
        self.members
            .get(i)
            .is_some_and(|m| matches!(&*m.lock(), Proc::Running { paused: true, .. }))
    }

    /// Stops member `i`: `SIGTERM`, then `SIGKILL` if it has not exited
    /// within 5 s; returns once the process has exited and its client port
    /// refuses connections. Stopping a stopped member does nothing; a paused
    /// member is resumed first.
    ///
    /// # Errors
    ///
    /// [`LaunchError::NoSuchMember`], [`LaunchError::Io`] if signalling or
    /// waiting fails, [`LaunchError::PortStillOpen`] if the port stays open.
    pub fn stop(&mut self, i: usize) -> Result<(), LaunchError> {
        self.terminate(i, false)
    }

    /// Kills member `i` with `SIGKILL` (no clean shutdown); returns once the
    /// process has exited and its client port refuses connections. Killing a
    /// stopped member does nothing.
    ///
    /// # Errors
    ///
    /// As [`stop`](ZkCluster::stop).
    pub fn kill(&mut self, i: usize) -> Result<(), LaunchError> {
        self.terminate(i, true)
    }

    /// Starts a stopped member again (same ports, same data directory) and
    /// waits until it serves (in an ensemble: until it has joined a quorum).
    /// For a running member this only waits until it serves.
    ///
    /// # Errors
    ///
    /// [`LaunchError::NoSuchMember`], [`LaunchError::InvalidState`] for a
    /// paused member, [`LaunchError::JavaNotFound`], [`LaunchError::Exited`]
    /// if the server exits (e.g. because another process took its port),
    /// [`LaunchError::Timeout`] if it does not serve within the start-up
    /// timeout (the member is then stopped again), [`LaunchError::Io`].
    pub fn start(&mut self, i: usize) -> Result<(), LaunchError> {
        self.check_index(i)?;
        let running = match self.members[i].proc_mut() {
            Proc::Running { paused: true, .. } => {
                return Err(LaunchError::InvalidState {
                    member: i,
                    state: "paused",
                    action: "start",
                    hint: "resume it first",
                })
            }
            Proc::Running { .. } => true,
            Proc::Stopped => false,
        };
        if !running {
            self.spawn(i)?;
        }
        let result = self.wait_until(&[i], false, self.startup_timeout);
        if result.is_err() && !running {
            self.kill_quietly(i);
        }
        result
    }

    /// [`stop`](ZkCluster::stop)s then [`start`](ZkCluster::start)s member `i`.
    ///
    /// # Errors
    ///
    /// As [`stop`](ZkCluster::stop) and [`start`](ZkCluster::start).
    pub fn restart(&mut self, i: usize) -> Result<(), LaunchError> {
        self.stop(i)?;
        self.start(i)
    }

    /// Pauses member `i` with `SIGSTOP`: it keeps its sockets but answers
    /// nothing, like a hung or partitioned server. Pausing a paused member
    /// does nothing.
    ///
    /// # Errors
    ///
    /// [`LaunchError::NoSuchMember`], [`LaunchError::InvalidState`] for a
    /// stopped member, [`LaunchError::Exited`] if the process has died,
    /// [`LaunchError::Io`] if signalling fails.
    pub fn pause(&mut self, i: usize) -> Result<(), LaunchError> {
        self.check_index(i)?;
        self.check_alive(i, "pause")?;
        let member = &mut self.members[i];
        if let Proc::Running { child, paused, .. } = member.proc_mut() {
            if !*paused {
                let pid = child.id();
                signal(pid, Signal::STOP)?;
                *paused = true;
                wait_proc_state(pid, true);
            }
        }
        Ok(())
    }

    /// Resumes a paused member `i` with `SIGCONT`. Resuming a running member
    /// that is not paused does nothing.
    ///
    /// # Errors
    ///
    /// [`LaunchError::NoSuchMember`], [`LaunchError::InvalidState`] for a
    /// stopped member, [`LaunchError::Io`] if signalling fails.
    pub fn resume(&mut self, i: usize) -> Result<(), LaunchError> {
        self.check_index(i)?;
        match self.members[i].proc_mut() {
            Proc::Stopped => Err(LaunchError::InvalidState {
                member: i,
                state: "stopped",
                action: "resume",
                hint: "start it instead",
            }),
            Proc::Running { child, paused, .. } => {
                if *paused {
                    let pid = child.id();
                    signal(pid, Signal::CONT)?;
                    *paused = false;
                    wait_proc_state(pid, false);
                }
                Ok(())
            }
        }
    }

    /// The member that is the leader (or the standalone server), asking each
    /// running, unpaused member with `srvr`. `None` if no member says so.
    pub fn leader(&self) -> Option<usize> {
        (0..self.members.len()).find(|&i| self.mode(i).is_some_and(ServerMode::is_leader))
    }

    /// The mode member `i` reports with `srvr`; `None` if it is stopped,
    /// paused, unreachable or not serving (e.g. electing a leader).
    pub fn mode(&self, i: usize) -> Option<ServerMode> {
        let m = self.members.get(i)?;
        if !matches!(&*m.lock(), Proc::Running { paused: false, .. }) {
            return None;
        }
        let answer = four_letter_port(m.ports.client, "srvr", PROBE_TIMEOUT).ok()?;
        ServerMode::from_srvr(&answer)
    }

    /// Sends a four-letter word (`ruok`, `srvr`, `stat`, `mntr`, `cons`,
    /// `wchs`, `conf`, ...) to member `i` and returns the whole answer; times
    /// out after 2 s.
    ///
    /// # Errors
    ///
    /// [`LaunchError::NoSuchMember`], [`LaunchError::InvalidArgument`] if
    /// `word` is not four ASCII letters, [`LaunchError::FourLetter`] if the
    /// exchange fails or times out (e.g. the member is stopped or paused).
    pub fn four_letter(&self, i: usize, word: &str) -> Result<String, LaunchError> {
        self.four_letter_timeout(i, word, DEFAULT_FOUR_LETTER_TIMEOUT)
    }

    /// As [`four_letter`](ZkCluster::four_letter) with the given timeout for
    /// the whole exchange.
    ///
    /// # Errors
    ///
    /// As [`four_letter`](ZkCluster::four_letter).
    pub fn four_letter_timeout(
        &self,
        i: usize,
        word: &str,
        timeout: Duration,
    ) -> Result<String, LaunchError> {
        self.check_index(i)?;
        if word.len() != 4 || !word.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(LaunchError::InvalidArgument(format!(
                "`{word}` is not a four-letter word (expected e.g. ruok, srvr, mntr)"
            )));
        }
        let port = self.members[i].ports.client;
        four_letter_port(port, word, timeout).map_err(|source| LaunchError::FourLetter {
            member: i,
            word: word.to_owned(),
            port,
            source,
        })
    }

    /// Waits until member `i` answers `ruok` with `imok` and `srvr` with a
    /// mode (standalone, leader, follower, observer).
    ///
    /// # Errors
    ///
    /// [`LaunchError::NoSuchMember`], [`LaunchError::InvalidState`] if the
    /// member is stopped or paused, [`LaunchError::Exited`] if its process
    /// exits, [`LaunchError::Timeout`] when `timeout` passes first.
    pub fn wait_serving(&self, i: usize, timeout: Duration) -> Result<(), LaunchError> {
        self.check_index(i)?;
        if self.is_paused(i) {
            return Err(LaunchError::InvalidState {
                member: i,
                state: "paused",
                action: "wait for",
                hint: "resume it first",
            });
        }
        self.wait_until(&[i], false, timeout)
    }

    // ---- internals -------------------------------------------------------

    fn check_index(&self, i: usize) -> Result<(), LaunchError> {
        if i < self.members.len() {
            Ok(())
        } else {
            Err(LaunchError::NoSuchMember {
                index: i,
                members: self.members.len(),
            })
        }
    }

    /// Fails unless member `i` has a live process; notices processes that
    /// died on their own (the member becomes stopped).
    fn check_alive(&self, i: usize, action: &'static str) -> Result<(), LaunchError> {
        let m = &self.members[i];
        let mut proc = m.lock();
        let exit = match &mut *proc {
            Proc::Stopped => {
                return Err(LaunchError::InvalidState {
                    member: i,
                    state: "stopped",
                    action,
                    hint: "start it first",
                })
            }
            Proc::Running { child, .. } => match child.try_wait() {
                Ok(None) => return Ok(()),
                Ok(Some(status)) => status.to_string(),
                Err(e) => {
                    return Err(LaunchError::io(
                        format!("checking the process of ZooKeeper member {i}"),
                        e,
                    ))
                }
            },
        };
        *proc = Proc::Stopped;
        drop(proc);
        Err(LaunchError::Exited {
            member: i,
            status: exit,
            log_path: m.log_path(),
            log_tail: log_tail(&m.log_path(), m.log_offset),
        })
    }

    /// Starts all members, retrying on fresh ports when a port was raced away.
    fn launch(&mut self) -> Result<(), LaunchError> {
        let first_client = self.client_port;
        let secure = self.tls.is_some();
        self.launch_with(|n| free_ports(n, first_client, secure))
    }

    /// [`launch`](Self::launch) with the port picker as a parameter (for tests).
    fn launch_with(
        &mut self,
        mut pick_ports: impl FnMut(usize) -> Result<Vec<Ports>, LaunchError>,
    ) -> Result<(), LaunchError> {
        let all: Vec<usize> = (0..self.members.len()).collect();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = pick_ports(self.members.len()).and_then(|ports| self.launch_once(&all, ports));
            let Err(err) = result else {
                return Ok(());
            };
            let raced = self.any_bind_failure();
            for i in all.iter().copied() {
                self.kill_quietly(i);
            }
            if !raced {
                return Err(err);
            }
            if attempt >= MAX_LAUNCH_ATTEMPTS {
                return Err(LaunchError::PortsUnavailable {
                    attempts: attempt,
                    last: Box::new(err),
                });
            }
            tracing::debug!(attempt, error = %err, "ZooKeeper port raced away; retrying on fresh ports");
        }
    }

    fn launch_once(&mut self, all: &[usize], ports: Vec<Ports>) -> Result<(), LaunchError> {
        for (m, p) in self.members.iter_mut().zip(ports) {
            m.ports = p;
        }
        for &i in all {
            self.prepare_member(i)?;
        }
        if !self.seeds.is_empty() {
            self.seed(all)?;
        }
        for &i in all {
            self.spawn(i)?;
        }
        self.wait_until(all, true, self.startup_timeout)
    }

    /// (Re)creates member `i`'s directory, data directory, config and `myid`.
    fn prepare_member(&self, i: usize) -> Result<(), LaunchError> {
        let m = &self.members[i];
        let data = m.data_dir();
        if data.exists() {
            fs::remove_dir_all(&data)
                .map_err(|e| LaunchError::io(format!("removing old data dir {}", data.display()), e))?;
        }
        fs::create_dir_all(&data).map_err(|e| LaunchError::io(format!("creating {}", data.display()), e))?;
        let cfg = self.config(i);
        write_file(&m.cfg_path(), &cfg)?;
        if self.members.len() > 1 {
            write_file(&data.join("myid"), &format!("{}\n", i + 1))?;
        }
        Ok(())
    }

    /// Writes the seeded snapshot ([`ZkClusterBuilder::seed_cversion`]) into
    /// the (fresh) data directories of the members in `which`, compiling the
    /// helper on first use.
    fn seed(&self, which: &[usize]) -> Result<(), LaunchError> {
        let dir = self.root.join("seed");
        let classes = dir.join("classes");
        if !classes.join("SeedCversion.class").is_file() {
            fs::create_dir_all(&classes)
                .map_err(|e| LaunchError::io(format!("creating {}", classes.display()), e))?;
            let source = dir.join("SeedCversion.java");
            write_file(&source, SEED_SOURCE)?;
            let javac = std::env::var_os(JAVAC_ENV)
                .filter(|j| !j.is_empty())
                .unwrap_or_else(|| OsString::from("javac"));
            let mut cmd = Command::new(&javac);
            cmd.arg("-nowarn")
                .arg("-d")
                .arg(&classes)
                .arg("-cp")
                .arg(&self.classpath)
                .arg(&source);
            run_helper(cmd, "compiling SeedCversion.java").map_err(|e| match e {
                LaunchError::JavaNotFound { source, .. } => LaunchError::JavacNotFound {
                    javac: javac.to_string_lossy().into_owned(),
                    source,
                },
                other => other,
            })?;
        }
        let mut classpath = OsString::from(&classes);
        classpath.push(":");
        classpath.push(&self.classpath);
        let mut cmd = Command::new(&self.java);
        cmd.args([
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        ])
        .arg("-cp")
        .arg(classpath)
        .arg("SeedCversion");
        for &i in which {
            cmd.arg(self.members[i].data_dir());
        }
        cmd.arg("--");
        for (path, cversion) in &self.seeds {
            cmd.arg(path).arg(cversion.to_string());
        }
        run_helper(cmd, "running SeedCversion")
    }

    fn config(&self, i: usize) -> String {
        let m = &self.members[i];
        let tick = self.tick_ms;
        let mut cfg = format!(
            "# written by zk_rwlock_testkit::launcher\n\
             tickTime={tick}\n\
             initLimit=10\n\
             syncLimit=5\n\
             dataDir={data}\n\
             clientPort={port}\n\
             clientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n\
             4lw.commands.whitelist=*\n\
             maxClientCnxns=0\n\
             minSessionTimeout={min}\n\
             maxSessionTimeout={max}\n\
             reconfigEnabled=false\n\
             # throwaway data: no fsync per transaction, small log pre-allocation\n\
             forceSync=no\n\
             preAllocSize=1024\n",
            data = m.data_dir().display(),
            port = m.ports.client,
            min = 2 * tick,
            max = 20 * tick,
        );
        if let Some(tls) = &self.tls {
            cfg.push_str(&tls.config(m.ports.secure));
        }
        if self.sasl {
            cfg.push_str("authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n");
        }
        if self.members.len() > 1 {
            cfg.push_str(
                "quorumListenOnAllIPs=false\n\
                 electionPortBindRetry=3\n\
                 cnxTimeout=1000\n\
                 fastleader.maxNotificationInterval=1000\n",
            );
            for (j, other) in self.members.iter().enumerate() {
                cfg.push_str(&format!(
                    "server.{}=127.0.0.1:{}:{}\n",
                    j + 1,
                    other.ports.peer,
                    other.ports.election
                ));
            }
        }
        cfg
    }

    /// Spawns member `i`'s server process (the member must be stopped).
    fn spawn(&mut self, i: usize) -> Result<(), LaunchError> {
        let m = &mut self.members[i];
        let log_path = m.log_path();
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| LaunchError::io(format!("opening {}", log_path.display()), e))?;
        let offset = log
            .metadata()
            .map_err(|e| LaunchError::io(format!("reading {}", log_path.display()), e))?
            .len();
        // Best effort: a marker between runs of the same member.
        let _ = writeln!(log, "==== zk_rwlock_testkit::launcher: starting member {i} ====");
        let stderr = log
            .try_clone()
            .map_err(|e| LaunchError::io(format!("duplicating {}", log_path.display()), e))?;
        let jaas = self.sasl.then(|| {
            format!(
                "-Djava.security.auth.login.config={}",
                self.root.join("jaas.conf").display()
            )
        });
        let child = Command::new(&self.java)
            .args(JVM_FLAGS)
            .args(jaas)
            .arg("-cp")
            .arg(&self.classpath)
            .arg(MAIN_CLASS)
            .arg(m.cfg_path())
            .current_dir(&m.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr)
            .spawn()
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied => LaunchError::JavaNotFound {
                    java: self.java.to_string_lossy().into_owned(),
                    source: e,
                },
                _ => LaunchError::io(format!("starting ZooKeeper member {i}"), e),
            })?;
        // For reaping orphans should this process die without cleaning up.
        let _ = fs::write(m.dir.join("pid"), format!("{}\n", child.id()));
        let watchdog = spawn_watchdog(child.id());
        m.log_offset = offset;
        *m.proc_mut() = Proc::Running {
            child,
            paused: false,
            watchdog,
        };
        Ok(())
    }

    /// Polls until every member in `which` serves and, if `need_leader`,
    /// exactly one of them is the leader.
    fn wait_until(&self, which: &[usize], need_leader: bool, timeout: Duration) -> Result<(), LaunchError> {
        let start = Instant::now();
        let deadline = start + timeout;
        loop {
            let mut all_serving = true;
            let mut leaders = Vec::new();
            let mut last = String::new();
            for &i in which {
                self.check_alive(i, "wait for")?;
                match self.probe(i) {
                    Ok(mode) => {
                        if mode.is_leader() {
                            leaders.push(i);
                        }
                    }
                    Err(obs) => {
                        all_serving = false;
                        last = format!("member {i}: {obs}");
                    }
                }
            }
            if all_serving {
                if !need_leader || leaders.len() == 1 {
                    return Ok(());
                }
                last = format!("leaders: {leaders:?}");
            }
            if Instant::now() >= deadline {
                let logs = which
                    .iter()
                    .map(|&i| {
                        let m = &self.members[i];
                        format!(
                            "\n--- last lines of {} ---\n{}",
                            m.log_path().display(),
                            log_tail(&m.log_path(), m.log_offset)
                        )
                    })
                    .collect::<String>();
                let what = if which.len() == 1 {
                    format!("ZooKeeper member {} to serve", which[0])
                } else if need_leader {
                    format!("ZooKeeper members {which:?} to serve with one leader")
                } else {
                    format!("ZooKeeper members {which:?} to serve")
                };
                return Err(LaunchError::Timeout {
                    what,
                    waited: start.elapsed(),
                    last,
                    logs,
                });
            }
            thread::sleep(POLL_INTERVAL.min(deadline.saturating_duration_since(Instant::now())));
        }
    }

    /// One readiness probe of member `i`: `ruok`, `srvr`, and `conf` to check
    /// that the answering server uses our data directory (not some other
    /// process that took the port).
    fn probe(&self, i: usize) -> Result<ServerMode, String> {
        let m = &self.members[i];
        let port = m.ports.client;
        let ruok = four_letter_port(port, "ruok", PROBE_TIMEOUT).map_err(|e| format!("ruok: {e}"))?;
        if ruok != "imok" {
            return Err(format!("ruok answered {ruok:?}"));
        }
        let srvr = four_letter_port(port, "srvr", PROBE_TIMEOUT).map_err(|e| format!("srvr: {e}"))?;
        let mode = ServerMode::from_srvr(&srvr).ok_or_else(|| format!("srvr answered {:?}", srvr.trim()))?;
        let conf = four_letter_port(port, "conf", PROBE_TIMEOUT).map_err(|e| format!("conf: {e}"))?;
        let ours = format!("dataDir={}", m.data_dir().display());
        if !conf.lines().any(|l| l.starts_with(&ours)) {
            return Err(format!(
                "port {port} is served by another ZooKeeper (conf lacks {ours})"
            ));
        }
        Ok(mode)
    }

    /// Whether some member's log (since its last start) shows a bind failure.
    fn any_bind_failure(&self) -> bool {
        self.members.iter().any(|m| {
            let tail = read_from(&m.log_path(), m.log_offset);
            tail.contains("Address already in use") || tail.contains("BindException")
        })
    }

    fn terminate(&mut self, i: usize, hard: bool) -> Result<(), LaunchError> {
        self.check_index(i)?;
        let port = self.members[i].ports.client;
        let proc = self.members[i].proc_mut();
        let Proc::Running {
            child,
            paused,
            watchdog,
        } = proc
        else {
            return Ok(());
        };
        stop_watchdog(watchdog);
        let exited = child
            .try_wait()
            .map_err(|e| LaunchError::io(format!("checking ZooKeeper member {i}"), e))?
            .is_some();
        if !exited {
            if hard {
                child
                    .kill()
                    .map_err(|e| LaunchError::io(format!("killing ZooKeeper member {i}"), e))?;
            } else {
                let pid = child.id();
                if *paused {
                    signal(pid, Signal::CONT)?;
                }
                signal(pid, Signal::TERM)?;
                if !wait_exit(child, STOP_GRACE)? {
                    tracing::warn!(member = i, "ZooKeeper did not exit on SIGTERM; killing it");
                    child
                        .kill()
                        .map_err(|e| LaunchError::io(format!("killing ZooKeeper member {i}"), e))?;
                }
            }
            child
                .wait()
                .map_err(|e| LaunchError::io(format!("waiting for ZooKeeper member {i}"), e))?;
        }
        *proc = Proc::Stopped;
        let deadline = Instant::now() + SETTLE_DEADLINE;
        while port_accepts(port) {
            if Instant::now() >= deadline {
                return Err(LaunchError::PortStillOpen { member: i, port });
            }
            thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    /// Kills member `i` (if running), ignoring errors.
    fn kill_quietly(&mut self, i: usize) {
        let proc = self.members[i].proc_mut();
        if let Proc::Running {
            child,
            paused,
            watchdog,
        } = proc
        {
            stop_watchdog(watchdog);
            if *paused {
                let _ = signal(child.id(), Signal::CONT);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        *proc = Proc::Stopped;
    }
}

impl Drop for ZkCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill_quietly(i);
        }
        if let Some(dir) = self.dir.take() {
            if let Err(e) = dir.close() {
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::warn!(dir = %self.root.display(), error = %e, "could not remove ZooKeeper temp dir");
                }
            }
        }
    }
}

// ---- helpers ---------------------------------------------------------------

/// Builds the class path from the jars in `dir`.
fn classpath(dir: &Path) -> Result<OsString, LaunchError> {
    let missing: Vec<&str> = MANDATORY_JARS
        .iter()
        .copied()
        .filter(|jar| !dir.join(jar).is_file())
        .collect();
    if !missing.is_empty() {
        return Err(LaunchError::NotInstalled {
            jar_dir: dir.to_path_buf(),
            missing: missing.join(", "),
        });
    }
    let jars = MANDATORY_JARS
        .iter()
        .chain(OPTIONAL_JARS.iter())
        .map(|jar| dir.join(jar))
        .filter(|p| p.is_file());
    std::env::join_paths(jars).map_err(|e| {
        LaunchError::InvalidArgument(format!(
            "jar directory {} cannot be used in a class path: {e}",
            dir.display()
        ))
    })
}

/// Creates `<tmp>/zk-rwlock-zk-<pid>-<random>`, removed when the returned
/// value is dropped. The pid in the name lets [`reap_stale_dirs`] find
/// directories whose owner is gone.
fn create_root(tmp: &Path) -> Result<TempDir, LaunchError> {
    tempfile::Builder::new()
        .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
        .tempdir_in(tmp)
        .map_err(|e| LaunchError::io(format!("creating a ZooKeeper temp dir in {}", tmp.display()), e))
}

/// Picks distinct loopback ports for `n` members (client, peer and election
/// ports) by binding them all at once, then releasing them: free ports
/// chosen by the system, except that member `i`'s client port is
/// `first_client + i` when `first_client` is given.
fn free_ports(n: usize, first_client: Option<u16>, secure: bool) -> Result<Vec<Ports>, LaunchError> {
    // client, [secure], [peer, election]
    let per_member = if n > 1 { 3 } else { 1 } + usize::from(secure);
    let mut listeners = Vec::with_capacity(n * per_member);
    for i in 0..n * per_member {
        let fixed = first_client
            .filter(|_| i % per_member == 0)
            .map(|first| usize::from(first) + i / per_member);
        let listener = match fixed {
            Some(port) => {
                let port = u16::try_from(port).map_err(|_| {
                    LaunchError::InvalidArgument(format!("client port {port} is outside 1..=65535"))
                })?;
                TcpListener::bind((Ipv4Addr::LOCALHOST, port))
                    .map_err(|source| LaunchError::PortInUse { port, source })?
            }
            None => TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .map_err(|e| LaunchError::io("binding a free port on 127.0.0.1", e))?,
        };
        listeners.push(listener);
    }
    let ports = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<io::Result<Vec<_>>>()
        .map_err(|e| LaunchError::io("reading a bound port on 127.0.0.1", e))?;
    drop(listeners);
    Ok(ports
        .chunks(per_member)
        .map(|c| {
            let (secure, rest) = if secure { (c[1], &c[2..]) } else { (0, &c[1..]) };
            Ports {
                client: c[0],
                secure,
                peer: rest.first().copied().unwrap_or(0),
                election: rest.get(1).copied().unwrap_or(0),
            }
        })
        .collect())
}

/// Runs a helper of [`ZkCluster::seed`] to completion; `JavaNotFound` when
/// it cannot be spawned, `SeedFailed` (with its output) when it fails.
fn run_helper(mut cmd: Command, step: &str) -> Result<(), LaunchError> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied => LaunchError::JavaNotFound {
            java: cmd.get_program().to_string_lossy().into_owned(),
            source: e,
        },
        _ => LaunchError::io(step.to_owned(), e),
    })?;
    if out.status.success() {
        return Ok(());
    }
    Err(LaunchError::SeedFailed {
        step: step.to_owned(),
        status: out.status.to_string(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    })
}

fn write_file(path: &Path, contents: &str) -> Result<(), LaunchError> {
    fs::write(path, contents).map_err(|e| LaunchError::io(format!("writing {}", path.display()), e))
}

/// Sends a four-letter word to `127.0.0.1:port`; reads the answer until EOF.
fn four_letter_port(port: u16, word: &str, timeout: Duration) -> io::Result<String> {
    let deadline = Instant::now() + timeout;
    let remaining = || {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no complete answer within {timeout:?}"),
            ))
        } else {
            Ok(left)
        }
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, remaining()?)?;
    stream.set_write_timeout(Some(remaining()?))?;
    stream.write_all(word.as_bytes())?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        stream.set_read_timeout(Some(remaining()?))?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no complete answer within {timeout:?}"),
                ))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// Whether something accepts connections on `127.0.0.1:port`.
fn port_accepts(port: u16) -> bool {
    TcpStream::connect_timeout(
        &SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        Duration::from_millis(200),
    )
    .is_ok()
}

/// Sends signal `sig` to process `pid`.
fn signal(pid: u32, sig: Signal) -> Result<(), LaunchError> {
    let target =
        pid_of(pid).ok_or_else(|| LaunchError::InvalidArgument(format!("{pid} is not a process id")))?;
    kill_process(target, sig)
        .map_err(|e| LaunchError::io(format!("sending {sig:?} to process {pid}"), e.into()))
}

/// `pid` as a process id for the system calls; `None` for 0 and values
/// past `i32::MAX`.
fn pid_of(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}

/// Whether process `pid` exists (a null signal: only `ESRCH` says no).
fn process_exists(pid: u32) -> bool {
    pid_of(pid).is_some_and(|p| !matches!(test_kill_process(p), Err(rustix::io::Errno::SRCH)))
}

/// Waits up to `timeout` for `child` to exit; `Ok(true)` once it has.
fn wait_exit(child: &mut Child, timeout: Duration) -> Result<bool, LaunchError> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return Ok(true),
            Ok(None) if Instant::now() >= deadline => return Ok(false),
            Ok(None) => thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(LaunchError::io("waiting for a ZooKeeper process", e)),
        }
    }
}

/// Best effort: waits (at most [`SETTLE_DEADLINE`]) until child process
/// `pid` has stopped on a signal (`stopped`) or has been continued (not
/// `stopped`), or has exited, so that pause/resume take effect before
/// returning. The state change is only peeked at (`WNOWAIT`): an exit
/// status stays for `Child::wait`.
fn wait_proc_state(pid: u32, stopped: bool) {
    let Some(pid) = pid_of(pid) else {
        return;
    };
    let change = if stopped {
        WaitIdOptions::STOPPED
    } else {
        WaitIdOptions::CONTINUED
    };
    let options = change | WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG;
    let deadline = Instant::now() + SETTLE_DEADLINE;
    while Instant::now() < deadline {
        match waitid(WaitId::Pid(pid), options) {
            Ok(None) => thread::sleep(Duration::from_millis(2)),
            Ok(Some(_)) | Err(_) => return,
        }
    }
}

/// Reads `path` from byte `offset` (at most the last [`LOG_TAIL_BYTES`]).
fn read_from(path: &Path, offset: u64) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = offset.max(len.saturating_sub(LOG_TAIL_BYTES));
    if file.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    let _ = file.take(LOG_TAIL_BYTES).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The last lines of `path` written since byte `offset`.
fn log_tail(path: &Path, offset: u64) -> String {
    let text = read_from(path, offset);
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
    if tail.is_empty() {
        "(log is empty)".to_owned()
    } else {
        tail
    }
}

/// Starts the watchdog of server process `pid` (best effort: without it,
/// orphans are still reaped by the next cluster started on this machine).
fn spawn_watchdog(pid: u32) -> Option<Child> {
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cat >/dev/null; kill -CONT {pid} 2>/dev/null; kill -KILL {pid} 2>/dev/null"
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

/// Stops a watchdog without letting it kill anything (its server is being
/// stopped by us, and its pid may be reused afterwards).
fn stop_watchdog(watchdog: &mut Option<Child>) {
    if let Some(mut w) = watchdog.take() {
        let _ = w.kill();
        let _ = w.wait();
    }
}

/// Kills the servers of launcher directories whose owning process is gone
/// (it died without running `Drop`) and removes those directories. Needs
/// Linux `/proc` (a process's command line has no portable interface);
/// does nothing elsewhere. Only processes whose command line names the
/// stale directory are killed.
fn reap_stale_dirs(tmp: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(tmp) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix(DIR_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if owner == me || process_exists(owner) {
            continue;
        }
        let dir = entry.path();
        let Some(dir_str) = dir.to_str() else {
            continue;
        };
        if let Ok(members) = fs::read_dir(&dir) {
            for member in members.flatten() {
                let Some(pid) = fs::read_to_string(member.path().join("pid"))
                    .ok()
                    .and_then(|s| s.trim().parse::<u32>().ok())
                else {
                    continue;
                };
                let ours = fs::read(format!("/proc/{pid}/cmdline"))
                    .map(|cmd| contains(&cmd, dir_str.as_bytes()))
                    .unwrap_or(false);
                if ours {
                    tracing::info!(pid, dir = dir_str, "killing orphaned ZooKeeper server");
                    let _ = signal(pid, Signal::KILL);
                }
            }
        }
        let _ = fs::remove_dir_all(&dir);
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_srvr_modes() {
        let srvr = "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n";
        assert_eq!(ServerMode::from_srvr(srvr), Some(ServerMode::Follower));
        assert_eq!(ServerMode::from_srvr("Mode: leader"), Some(ServerMode::Leader));
        assert_eq!(
            ServerMode::from_srvr("Mode: standalone\n"),
            Some(ServerMode::Standalone)
        );
        assert_eq!(
            ServerMode::from_srvr("Mode: observer"),
            Some(ServerMode::Observer)
        );
        assert_eq!(
            ServerMode::from_srvr("This ZooKeeper instance is not currently serving requests"),
            None
        );
        assert!(ServerMode::Standalone.is_leader());
        assert!(ServerMode::Leader.is_leader());
        assert!(!ServerMode::Follower.is_leader());
        assert_eq!(ServerMode::Leader.to_string(), "leader");
    }

    fn unstarted(n: usize) -> ZkCluster {
        ZkCluster {
            root: PathBuf::from("/nonexistent/zk-rwlock-unit-test"),
            dir: None,
            client_port: None,
            java: OsString::from("java"),
            classpath: OsString::new(),
            tick_ms: 200,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            seeds: Vec::new(),
            tls: None,
            sasl: false,
            members: (0..n)
                .map(|i| Member {
                    dir: PathBuf::from(format!("/nonexistent/zk-rwlock-unit-test/member-{i}")),
                    ports: Ports {
                        client: 1000 + i as u16,
                        peer: 2000 + i as u16,
                        election: 3000 + i as u16,
                        secure: 0,
                    },
                    log_offset: 0,
                    proc: Mutex::new(Proc::Stopped),
                })
                .collect(),
        }
    }

    #[test]
    fn seeds_are_checked_before_anything_starts() {
        for path in ["relative", "/", "/a/", "/a//b"] {
            let err = ZkCluster::builder()
                .seed_cversion(path, 1)
                .prepare()
                .expect_err(path);
            assert!(matches!(err, LaunchError::InvalidArgument(_)), "{path}: {err}");
        }
    }

    #[test]
    fn standalone_config() {
        let zk = unstarted(1);
        let cfg = zk.config(0);
        for line in [
            "tickTime=200",
            "initLimit=10",
            "syncLimit=5",
            "dataDir=/nonexistent/zk-rwlock-unit-test/member-0/data",
            "clientPort=1000",
            "clientPortAddress=127.0.0.1",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            "maxClientCnxns=0",
            "minSessionTimeout=400",
            "maxSessionTimeout=4000",
            "reconfigEnabled=false",
        ] {
            assert!(cfg.lines().any(|l| l == line), "missing {line:?} in\n{cfg}");
        }
        assert!(!cfg.contains("server."), "{cfg}");
        assert_eq!(zk.connect_string(), "127.0.0.1:1000");
    }

    #[test]
    fn ensemble_config() {
        let zk = unstarted(3);
        let cfg = zk.config(1);
        for line in [
            "clientPort=1001",
            "quorumListenOnAllIPs=false",
            "server.1=127.0.0.1:2000:3000",
            "server.2=127.0.0.1:2001:3001",
            "server.3=127.0.0.1:2002:3002",
        ] {
            assert!(cfg.lines().any(|l| l == line), "missing {line:?} in\n{cfg}");
        }
        assert_eq!(
            zk.connect_string(),
            "127.0.0.1:1000,127.0.0.1:1001,127.0.0.1:1002"
        );
        assert_eq!(zk.member_connect_string(2), "127.0.0.1:1002");
    }

    #[test]
    fn free_ports_are_distinct() {
        let ports = free_ports(3, None, false).expect("free ports");
        let mut all: Vec<u16> = ports
            .iter()
            .flat_map(|p| [p.client, p.peer, p.election])
            .collect();
        assert!(all.iter().all(|&p| p != 0));
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 9);
    }

    #[test]
    fn log_tail_keeps_last_lines_since_offset() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let dir = scratch.path();
        let path = dir.join("zk.log");
        let old = "old run\n";
        let new: String = (0..100).map(|i| format!("line {i}\n")).collect();
        fs::write(&path, format!("{old}{new}")).expect("write");
        let tail = log_tail(&path, old.len() as u64);
        assert!(!tail.contains("old run"));
        assert!(tail.ends_with("line 99"));
        assert_eq!(tail.lines().count(), LOG_TAIL_LINES);
        assert_eq!(log_tail(&dir.join("missing.log"), 0), "(log is empty)");
    }

    /// Directories of dead owners are removed and their servers killed.
    #[test]
    fn reaps_orphans_of_dead_owners() {
        if !Path::new("/proc/self").exists() {
            return;
        }
        // A private root: other tests start clusters, and so reap, in the shared temp dir.
        let scratch = tempfile::tempdir().expect("temp dir");
        let tmp = scratch.path();
        // A pid that is (almost certainly) not in use any more.
        let mut gone = Command::new("true").spawn().expect("spawn true");
        let dead = gone.id();
        gone.wait().expect("wait true");
        let dir = tmp.join(format!("{DIR_PREFIX}{dead}-0"));
        fs::create_dir_all(dir.join("member-0")).expect("mkdir");
        // Stands in for an orphaned server: its command line names `dir`. The shell waits in
        // its builtin `read`: a lone external command (`sh -c "sleep 30"`) may be exec'd by
        // dash, and `sleep`'s command line no longer names `dir`.
        let mut orphan = Command::new("sh")
            .args(["-c", "read line", dir.to_str().expect("utf-8 temp dir")])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("spawn sh");
        fs::write(dir.join("member-0/pid"), orphan.id().to_string()).expect("pid file");
        // Not ours to kill: a pid whose command line does not name `dir`.
        let mut bystander = Command::new("sleep").arg("30").spawn().expect("spawn sleep");
        fs::create_dir_all(dir.join("member-1")).expect("mkdir");
        fs::write(dir.join("member-1/pid"), bystander.id().to_string()).expect("pid file");

        reap_stale_dirs(tmp);

        assert!(!dir.exists());
        let status = wait_with_deadline(&mut orphan, Duration::from_secs(5));
        assert!(status.is_some_and(|s| !s.success()), "orphan not killed");
        assert!(
            bystander.try_wait().expect("try_wait").is_none(),
            "bystander killed"
        );
        let _ = bystander.kill();
        let _ = bystander.wait();
    }

    fn wait_with_deadline(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// A server whose client port was taken is detected (it exits with a bind
    /// error) and the launch is retried on fresh ports.
    #[test]
    fn retries_when_a_port_was_taken() {
        let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        let taken_port = taken.local_addr().expect("addr").port();
        let mut zk = ZkCluster::builder().prepare().expect("prepare");
        let mut calls = 0;
        zk.launch_with(|n| {
            calls += 1;
            if calls == 1 {
                Ok(vec![Ports {
                    client: taken_port,
                    ..Ports::default()
                }])
            } else {
                free_ports(n, None, false)
            }
        })
        .expect("launch on fresh ports");
        assert_eq!(calls, 2);
        assert_ne!(zk.client_port(0), taken_port);
        let log = fs::read_to_string(zk.log_path(0)).expect("log");
        assert!(log.contains("Address already in use"), "{log}");
        assert_eq!(zk.four_letter(0, "ruok").expect("ruok"), "imok");

        // Starting a stopped member whose port was taken meanwhile fails
        // with the server's exit, not with a false success.
        let port = zk.client_port(0);
        zk.stop(0).expect("stop");
        let _thief = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("take the port");
        let err = zk.start(0).expect_err("port is taken");
        assert!(matches!(err, LaunchError::Exited { .. }), "{err}");
        assert!(err.to_string().contains("Address already in use"), "{err}");
        assert!(!zk.is_running(0));
    }
}
