//! [`LaunchError`], the errors of the ZooKeeper launcher.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Environment variable naming the directory that holds the ZooKeeper jars.
pub const JAR_DIR_ENV: &str = "ZK_RWLOCK_JAR_DIR";

/// Environment variable naming the `java` binary to run.
pub const JAVA_ENV: &str = "JAVA";

/// Environment variable naming the `javac` binary (used by
/// [`super::ZkClusterBuilder::seed_cversion`]; default: `javac` on `PATH`).
pub const JAVAC_ENV: &str = "JAVAC";

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
    /// directories ([`ZkClusterBuilder::seed_cversion`](super::ZkClusterBuilder::seed_cversion)).
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

    /// A client port asked for
    /// ([`ZkClusterBuilder::client_port`](super::ZkClusterBuilder::client_port))
    /// is taken.
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
