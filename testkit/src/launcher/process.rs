//! The members' processes: spawning a server with its watchdog, signalling,
//! stopping and killing it, and reaping the servers and directories that
//! dead owners left behind.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{kill_process, test_kill_process, waitid, Pid, Signal, WaitId, WaitIdOptions};
use tempfile::TempDir;

use super::probe::port_accepts;
use super::{LaunchError, ZkCluster};

const MAIN_CLASS: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

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

/// How long [`ZkCluster::stop`] waits after `SIGTERM` before `SIGKILL`.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// How long to wait for a port to close / a signal to take effect.
const SETTLE_DEADLINE: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub(super) enum Proc {
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

impl ZkCluster {
    /// Spawns member `i`'s server process (the member must be stopped).
    pub(super) fn spawn(&mut self, i: usize) -> Result<(), LaunchError> {
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
            .args(&self.jvm_args)
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

    pub(super) fn terminate(&mut self, i: usize, hard: bool) -> Result<(), LaunchError> {
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
    pub(super) fn kill_quietly(&mut self, i: usize) {
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

/// Creates `<tmp>/zk-rwlock-zk-<pid>-<random>`, removed when the returned
/// value is dropped. The pid in the name lets [`reap_stale_dirs`] find
/// directories whose owner is gone.
pub(super) fn create_root(tmp: &Path) -> Result<TempDir, LaunchError> {
    tempfile::Builder::new()
        .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
        .tempdir_in(tmp)
        .map_err(|e| LaunchError::io(format!("creating a ZooKeeper temp dir in {}", tmp.display()), e))
}

/// Sends signal `sig` to process `pid`.
pub(super) fn signal(pid: u32, sig: Signal) -> Result<(), LaunchError> {
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
pub(super) fn wait_proc_state(pid: u32, stopped: bool) {
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
pub(super) fn reap_stale_dirs(tmp: &Path) {
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
        // Until the child has exec'd `sh`, its command line is this test's: wait for it
        // to name `dir`, as a server's does (under load the exec comes late).
        let cmdline = format!("/proc/{}/cmdline", orphan.id());
        let named = dir.to_str().expect("utf-8 temp dir").to_owned();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !fs::read(&cmdline).is_ok_and(|c| String::from_utf8_lossy(&c).contains(&named)) {
            assert!(
                Instant::now() < deadline,
                "the orphan's command line never named {named}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
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
}
