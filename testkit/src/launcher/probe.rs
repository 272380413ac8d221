//! Four-letter words and readiness: [`ServerMode`], the probes that tell
//! when members serve, and the raw four-letter-word exchange.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use super::logs::log_tail;
use super::{LaunchError, ZkCluster};

/// How often readiness and exit conditions are polled.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Timeout of one probe while polling for readiness.
pub(super) const PROBE_TIMEOUT: Duration = Duration::from_millis(1000);

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

impl ZkCluster {
    /// Polls until every member in `which` serves and, if `need_leader`,
    /// exactly one of them is the leader.
    pub(super) fn wait_until(
        &self,
        which: &[usize],
        need_leader: bool,
        timeout: Duration,
    ) -> Result<(), LaunchError> {
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
}

/// Sends a four-letter word to `127.0.0.1:port`; reads the answer until EOF.
pub(super) fn four_letter_port(port: u16, word: &str, timeout: Duration) -> io::Result<String> {
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
pub(super) fn port_accepts(port: u16) -> bool {
    TcpStream::connect_timeout(
        &SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        Duration::from_millis(200),
    )
    .is_ok()
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
}
