//! [`ZkClusterBuilder`]: the settings of a cluster, checked before anything
//! starts.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use super::config::{classpath, write_file, Ports};
use super::process::{create_root, reap_stale_dirs, Proc};
use super::{
    LaunchError, Member, ZkCluster, DEFAULT_JAR_DIR, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TICK_TIME, JAR_DIR_ENV,
    JAVA_ENV,
};
use crate::secure::{self, ClientAuth};

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
    data_dir: Option<PathBuf>,
    settings: Vec<(String, String)>,
    jvm_args: Vec<String>,
    partitionable: bool,
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
            data_dir: None,
            settings: Vec::new(),
            jvm_args: Vec::new(),
            partitionable: false,
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

    /// Keeps member `i`'s data (its snapshots and transaction logs: the
    /// tree and the sessions) in `dir/member-<i>` instead of the cluster's
    /// temporary directory: made if missing, used as it is if there, and
    /// left in place when the cluster is dropped. A cluster started again
    /// on the same directory has the same tree, and the sessions whose
    /// timeout has not run out since. Not with
    /// [`seed_cversion`](Self::seed_cversion), which needs fresh data.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
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

    /// Adds `key=value` to every member's `zoo.cfg`, after the launcher's
    /// own lines, so that it overrides them (e.g. `maxClientCnxns`, whose
    /// default here is 0: unlimited). Repeatable.
    pub fn setting(mut self, key: &str, value: &str) -> Self {
        self.settings.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Passes `arg` to every member's JVM before the main class, e.g.
    /// `-Djute.maxbuffer=4194304` or `-Dreadonlymode.enabled=true`.
    /// Repeatable.
    pub fn jvm_arg(mut self, arg: &str) -> Self {
        self.jvm_args.push(arg.to_owned());
        self
    }

    /// Routes every member-to-member connection of an ensemble through
    /// links the test can cut ([`ZkCluster::partition`],
    /// [`ZkCluster::cut_link`], [`ZkCluster::heal_all`]): one in-process
    /// proxy per directed pair of members for the quorum port and one for
    /// the election port, named in each member's own `zoo.cfg`. Client
    /// ports are not proxied. No effect on a standalone server.
    pub fn partitionable(mut self) -> Self {
        self.partitionable = true;
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
    pub(super) fn prepare(self) -> Result<ZkCluster, LaunchError> {
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
        for (key, value) in &self.settings {
            let valid =
                !key.is_empty() && !key.contains(['=', '\n', '\r', '#']) && !value.contains(['\n', '\r']);
            if !valid {
                return Err(LaunchError::InvalidArgument(format!(
                    "`{key}={value}` is not one zoo.cfg line"
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
        if self.data_dir.is_some() && !self.seeds.is_empty() {
            return Err(LaunchError::InvalidArgument(
                "a kept data directory cannot be seeded: seeds need fresh data".into(),
            ));
        }
        let data_dir = match &self.data_dir {
            Some(dir) => Some(
                std::path::absolute(dir)
                    .map_err(|e| LaunchError::io(format!("resolving {}", dir.display()), e))?,
            ),
            None => None,
        };
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
                data: match &data_dir {
                    Some(dir) => dir.join(format!("member-{i}")),
                    None => root.join(format!("member-{i}")).join("data"),
                },
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
            keep_data: data_dir.is_some(),
            settings: self.settings,
            jvm_args: self.jvm_args,
            partitionable: self.partitionable,
            network: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_checked_before_anything_starts() {
        for path in ["relative", "/", "/a/", "/a//b"] {
            let err = ZkCluster::builder()
                .seed_cversion(path, 1)
                .prepare()
                .expect_err(path);
            assert!(matches!(err, LaunchError::InvalidArgument(_)), "{path}: {err}");
        }
        let err = ZkCluster::builder()
            .data_dir("/nonexistent/zk-rwlock-unit-test")
            .seed_cversion("/a", 1)
            .prepare()
            .expect_err("seeds and a kept data directory");
        assert!(matches!(err, LaunchError::InvalidArgument(_)), "{err}");
    }
}
