//! Throwaway Apache ZooKeeper servers for tests and examples.
//!
//! [`ZkCluster`] starts one standalone server or an N-member ensemble of
//! ZooKeeper 3.8 servers (the Java implementation, e.g. Debian's `zookeeper`
//! package) on `127.0.0.1` only, each in its own directory under a fresh
//! temporary directory, and removes everything again when dropped (but the
//! data kept with [`ZkClusterBuilder::data_dir`]).
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
//! # Partitions
//!
//! [`ZkClusterBuilder::partitionable`] routes every member-to-member
//! connection (quorum and election ports) through an in-process link per
//! directed pair of members, named in each member's own `zoo.cfg`;
//! [`ZkCluster::partition`], [`ZkCluster::cut_link`] and
//! [`ZkCluster::heal_all`] cut and heal them. A cut link forwards nothing
//! and closes nothing, and new connections hang, so that ZooKeeper's own
//! timeouts notice (see `network.rs` for how the election's connections
//! back are kept on the links).
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

mod builder;
mod config;
pub(crate) mod error;
mod logs;
mod network;
mod probe;
mod process;

pub use builder::ZkClusterBuilder;
pub use error::{LaunchError, JAR_DIR_ENV, JAVAC_ENV, JAVA_ENV};
pub use probe::ServerMode;

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::secure::TlsFiles;
use rustix::process::Signal;
use tempfile::TempDir;

use config::{free_ports, Ports};
use logs::log_tail;
use network::Network;
use probe::{four_letter_port, PROBE_TIMEOUT};
use process::{signal, wait_proc_state, Proc};

/// Directory searched for the ZooKeeper jars when neither
/// [`ZkClusterBuilder::jar_dir`] nor [`JAR_DIR_ENV`] is set.
pub const DEFAULT_JAR_DIR: &str = "/usr/share/java";

/// Default ZooKeeper `tickTime` of the servers started by this module.
pub const DEFAULT_TICK_TIME: Duration = Duration::from_millis(200);

/// ZooKeeper `syncLimit` of the servers started by this module, in ticks: a
/// follower that hears nothing from its leader for this many ticks gives it
/// up (and answers its clients until then).
pub const SYNC_LIMIT: u32 = 5;

/// Default deadline for servers to start serving.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Default timeout of one four-letter-word exchange ([`ZkCluster::four_letter`]).
pub const DEFAULT_FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(2);

/// Number of launch attempts (each on fresh ports) when ports are raced away.
const MAX_LAUNCH_ATTEMPTS: usize = 5;

#[derive(Debug)]
struct Member {
    dir: PathBuf,
    /// The data directory: `dir/data`, or one kept
    /// ([`ZkClusterBuilder::data_dir`]).
    data: PathBuf,
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
        self.data.clone()
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
/// (`$TMPDIR/zk-rwlock-zk-<pid>-<random>`); a data directory kept with
/// [`ZkClusterBuilder::data_dir`] stays.
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
    /// The data directories are kept ([`ZkClusterBuilder::data_dir`]):
    /// never emptied at a start.
    keep_data: bool,
    /// Extra `zoo.cfg` lines ([`ZkClusterBuilder::setting`]).
    settings: Vec<(String, String)>,
    /// Extra JVM arguments ([`ZkClusterBuilder::jvm_arg`]).
    jvm_args: Vec<String>,
    /// Whether the members talk to each other through links that can be
    /// cut ([`ZkClusterBuilder::partitionable`]).
    partitionable: bool,
    /// Those links, once started.
    network: Option<Network>,
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

    /// The servers' `syncLimit`, in ticks ([`SYNC_LIMIT`]).
    pub fn sync_limit(&self) -> u32 {
        SYNC_LIMIT
    }

    /// The follower lag for locks on this cluster
    /// (`LockBuilder::follower_lag`): `syncLimit × tickTime + tickTime`,
    /// how long a follower cut off from its leader may go on answering its
    /// clients, and a tick more.
    pub fn follower_lag(&self) -> Duration {
        self.tick_time() * (self.sync_limit() + 1)
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

    /// Sets `key=value` in member `i`'s `zoo.cfg`, in place of any line of
    /// that key, for the member's next [`start`](ZkCluster::start): a
    /// member configured unlike the others (its own `minSessionTimeout`),
    /// or a setting changed across a restart. A running member keeps what
    /// it started with until it is restarted.
    ///
    /// # Errors
    ///
    /// [`LaunchError::NoSuchMember`], [`LaunchError::InvalidArgument`] if
    /// `key` is empty or holds `=`, or either holds a line break;
    /// [`LaunchError::Io`] if the file cannot be read or written.
    pub fn set_member_setting(&self, i: usize, key: &str, value: &str) -> Result<(), LaunchError> {
        self.check_index(i)?;
        if key.is_empty() || key.contains('=') || [key, value].iter().any(|s| s.contains(['\n', '\r'])) {
            return Err(LaunchError::InvalidArgument(format!(
                "not a zoo.cfg setting: {key:?}={value:?}"
            )));
        }
        let path = self.members[i].cfg_path();
        let cfg = std::fs::read_to_string(&path)
            .map_err(|e| LaunchError::io(format!("reading {}", path.display()), e))?;
        config::write_file(&path, &config::with_setting(&cfg, key, value))
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

    /// One figure of member `i`'s `mntr` answer (e.g. `zk_znode_count`),
    /// if it answers and has it.
    pub fn mntr(&self, i: usize, key: &str) -> Option<u64> {
        let answer = self.four_letter(i, "mntr").ok()?;
        answer
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.trim().parse().ok())
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

    // ---- partitions -----------------------------------------------------

    /// Whether the members talk through links that can be cut
    /// ([`ZkClusterBuilder::partitionable`]).
    pub fn is_partitionable(&self) -> bool {
        self.network.is_some()
    }

    /// Partitions the ensemble into `groups`: members of different groups
    /// cannot talk to each other, members of one group can; a member in no
    /// group is isolated. Replaces the previous cut.
    ///
    /// # Errors
    ///
    /// [`LaunchError::InvalidArgument`] without
    /// [`ZkClusterBuilder::partitionable`], or if a member is in two groups;
    /// [`LaunchError::NoSuchMember`].
    pub fn partition(&self, groups: &[&[usize]]) -> Result<(), LaunchError> {
        let net = self.network()?;
        let n = self.members.len();
        let mut group = vec![None; n];
        for (g, members) in groups.iter().enumerate() {
            for &i in *members {
                self.check_index(i)?;
                if group[i].is_some_and(|other| other != g) {
                    return Err(LaunchError::InvalidArgument(format!(
                        "member {i} is in two groups of the partition {groups:?}"
                    )));
                }
                group[i] = Some(g);
            }
        }
        for a in 0..n {
            for b in a + 1..n {
                let together = group[a].is_some() && group[a] == group[b];
                net.set_cut(a, b, !together);
            }
        }
        tracing::debug!(cut = %net.describe(), "partitioned the ensemble");
        Ok(())
    }

    /// Cuts the link between members `a` and `b`, both ways: nothing more
    /// passes between them, nothing is closed, and new connections hang.
    ///
    /// # Errors
    ///
    /// As [`partition`](ZkCluster::partition).
    pub fn cut_link(&self, a: usize, b: usize) -> Result<(), LaunchError> {
        self.set_link(a, b, true)
    }

    /// Heals the link between members `a` and `b`: what was held passes,
    /// and forwarding goes on.
    ///
    /// # Errors
    ///
    /// As [`partition`](ZkCluster::partition).
    pub fn heal_link(&self, a: usize, b: usize) -> Result<(), LaunchError> {
        self.set_link(a, b, false)
    }

    /// Heals every link.
    ///
    /// # Errors
    ///
    /// [`LaunchError::InvalidArgument`] without
    /// [`ZkClusterBuilder::partitionable`].
    pub fn heal_all(&self) -> Result<(), LaunchError> {
        let all: Vec<usize> = (0..self.members.len()).collect();
        self.partition(&[&all])
    }

    /// Whether members `a` and `b` are cut apart (false without
    /// [`ZkClusterBuilder::partitionable`]).
    pub fn is_cut(&self, a: usize, b: usize) -> bool {
        self.network.as_ref().is_some_and(|net| net.is_cut(a, b))
    }

    /// The current cut, for logs: `healed`, or the pairs of members cut
    /// apart (`cut 0-2 0-3 1-2 1-3`); `not partitionable` without
    /// [`ZkClusterBuilder::partitionable`].
    pub fn cut_description(&self) -> String {
        self.network
            .as_ref()
            .map_or_else(|| "not partitionable".to_owned(), Network::describe)
    }

    fn set_link(&self, a: usize, b: usize, cut: bool) -> Result<(), LaunchError> {
        let net = self.network()?;
        self.check_index(a)?;
        self.check_index(b)?;
        net.set_cut(a, b, cut);
        tracing::debug!(cut = %net.describe(), "changed a link");
        Ok(())
    }

    fn network(&self) -> Result<&Network, LaunchError> {
        self.network.as_ref().ok_or_else(|| {
            LaunchError::InvalidArgument(
                "the ensemble is not partitionable: build it with ZkClusterBuilder::partitionable \
                 and more than one member"
                    .into(),
            )
        })
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
        if self.partitionable && self.members.len() > 1 && self.network.is_none() {
            let net = Network::start(self.members.len())
                .map_err(|e| LaunchError::io("binding the links between the members on 127.0.0.1", e))?;
            self.network = Some(net);
        }
        if let Some(net) = &self.network {
            net.retarget(&ports);
        }
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

#[cfg(test)]
mod tests {
    use std::fs;
    use std::net::{Ipv4Addr, TcpListener};

    use super::*;

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
