//! What a member runs with: its ports, its `zoo.cfg`, the class path, and
//! the seeded data directories ([`ZkClusterBuilder::seed_cversion`](super::ZkClusterBuilder::seed_cversion)).

use std::ffi::OsString;
use std::fs;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::process::{Command, Stdio};

use super::{LaunchError, ZkCluster, JAVAC_ENV, SYNC_LIMIT};

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

/// Source of the helper that writes seeded snapshots
/// ([`ZkClusterBuilder::seed_cversion`](super::ZkClusterBuilder::seed_cversion)).
const SEED_SOURCE: &str = include_str!("SeedCversion.java");

#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Ports {
    pub(super) client: u16,
    pub(super) peer: u16,
    pub(super) election: u16,
    /// The TLS-only client port (0: none).
    pub(super) secure: u16,
}

impl ZkCluster {
    /// (Re)creates member `i`'s directory, data directory (emptied unless
    /// kept), config and `myid`.
    pub(super) fn prepare_member(&self, i: usize) -> Result<(), LaunchError> {
        let m = &self.members[i];
        let data = m.data_dir();
        if data.exists() && !self.keep_data {
            fs::remove_dir_all(&data)
                .map_err(|e| LaunchError::io(format!("removing old data dir {}", data.display()), e))?;
        }
        for dir in [&m.dir, &data] {
            fs::create_dir_all(dir).map_err(|e| LaunchError::io(format!("creating {}", dir.display()), e))?;
        }
        let cfg = self.config(i);
        write_file(&m.cfg_path(), &cfg)?;
        if self.members.len() > 1 {
            write_file(&data.join("myid"), &format!("{}\n", i + 1))?;
        }
        Ok(())
    }

    /// Writes the seeded snapshot
    /// ([`ZkClusterBuilder::seed_cversion`](super::ZkClusterBuilder::seed_cversion))
    /// into the (fresh) data directories of the members in `which`,
    /// compiling the helper on first use.
    pub(super) fn seed(&self, which: &[usize]) -> Result<(), LaunchError> {
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
             syncLimit={sync}\n\
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
            sync = SYNC_LIMIT,
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
                // Another member is reached through the link i -> j, if any.
                let (peer, election) = self
                    .network
                    .as_ref()
                    .and_then(|net| net.ports(i, j))
                    .unwrap_or((other.ports.peer, other.ports.election));
                cfg.push_str(&format!("server.{}=127.0.0.1:{peer}:{election}\n", j + 1));
            }
        }
        for (key, value) in &self.settings {
            cfg.push_str(&format!("{key}={value}\n"));
        }
        cfg
    }
}

/// Builds the class path from the jars in `dir`.
pub(super) fn classpath(dir: &Path) -> Result<OsString, LaunchError> {
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

/// Picks distinct loopback ports for `n` members (client, peer and election
/// ports) by binding them all at once, then releasing them: free ports
/// chosen by the system, except that member `i`'s client port is
/// `first_client + i` when `first_client` is given.
pub(super) fn free_ports(
    n: usize,
    first_client: Option<u16>,
    secure: bool,
) -> Result<Vec<Ports>, LaunchError> {
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

/// `cfg` with every line setting `key` left out and `key=value` appended.
pub(super) fn with_setting(cfg: &str, key: &str, value: &str) -> String {
    let mut out: String = cfg
        .lines()
        .filter(|line| line.split_once('=').is_none_or(|(k, _)| k.trim() != key))
        .flat_map(|line| [line, "\n"])
        .collect();
    out.push_str(&format!("{key}={value}\n"));
    out
}

pub(super) fn write_file(path: &Path, contents: &str) -> Result<(), LaunchError> {
    fs::write(path, contents).map_err(|e| LaunchError::io(format!("writing {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Mutex;

    use super::super::process::Proc;
    use super::super::{Member, DEFAULT_STARTUP_TIMEOUT};
    use super::*;

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
            keep_data: false,
            settings: Vec::new(),
            jvm_args: Vec::new(),
            partitionable: false,
            network: None,
            members: (0..n)
                .map(|i| Member {
                    dir: PathBuf::from(format!("/nonexistent/zk-rwlock-unit-test/member-{i}")),
                    data: PathBuf::from(format!("/nonexistent/zk-rwlock-unit-test/member-{i}/data")),
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
    fn partitionable_config_names_the_links() {
        let mut zk = unstarted(3);
        let net = super::super::Network::start(3).expect("links");
        let ports: Vec<Ports> = zk.members.iter().map(|m| m.ports).collect();
        net.retarget(&ports);
        zk.network = Some(net);
        let cfg = zk.config(1);
        let net = zk.network.as_ref().expect("links");
        let (peer0, election0) = net.ports(1, 0).expect("link 1 -> 0");
        let (peer2, election2) = net.ports(1, 2).expect("link 1 -> 2");
        for line in [
            format!("server.1=127.0.0.1:{peer0}:{election0}"),
            "server.2=127.0.0.1:2001:3001".to_owned(),
            format!("server.3=127.0.0.1:{peer2}:{election2}"),
        ] {
            assert!(cfg.lines().any(|l| l == line), "missing {line:?} in\n{cfg}");
        }
        assert_ne!(net.ports(1, 0), net.ports(2, 0), "one link per directed pair");
    }

    #[test]
    fn settings_come_last_and_override() {
        let mut zk = unstarted(1);
        zk.settings.push(("maxClientCnxns".into(), "5".into()));
        let cfg = zk.config(0);
        let lines: Vec<&str> = cfg.lines().collect();
        assert_eq!(lines.last(), Some(&"maxClientCnxns=5"), "{cfg}");
        assert!(lines.contains(&"maxClientCnxns=0"), "{cfg}");
    }

    #[test]
    fn a_member_setting_replaces_its_key() {
        let zk = unstarted(1);
        let cfg = with_setting(&zk.config(0), "minSessionTimeout", "6000");
        let lines: Vec<&str> = cfg.lines().collect();
        assert_eq!(lines.last(), Some(&"minSessionTimeout=6000"), "{cfg}");
        assert!(!lines.contains(&"minSessionTimeout=400"), "{cfg}");
        assert!(lines.contains(&"maxSessionTimeout=4000"), "{cfg}");
        let again = with_setting(&cfg, "minSessionTimeout", "800");
        assert_eq!(again.matches("minSessionTimeout=").count(), 1, "{again}");
        assert!(again.ends_with("minSessionTimeout=800\n"), "{again}");
        assert_eq!(with_setting("# a comment\n", "k", "v"), "# a comment\nk=v\n");
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
}
