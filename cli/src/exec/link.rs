//! `exec`'s side of the keeper ([`super::keeper`]): starts it with the
//! command, tells it the lease and what to send, hears what became of the
//! command's tree.

use std::ffi::OsString;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;

use std::time::Instant;

use zk_rwlock::HoldState;

use super::keeper::{self, FromKeeper, ToKeeper};
use zk_rwlock_cli::exit;

/// What the keeper needs to start.
pub struct Start<'a> {
    pub command: &'a [OsString],
    /// The variables CMD gets (the keeper adds ZK_RWLOCK_LEASE_FILE).
    pub env: Vec<(&'static str, String)>,
    /// Variables CMD must not inherit from this process.
    pub env_remove: Vec<&'static str>,
    pub own_group: bool,
    pub kill_orphans: bool,
    pub kill_after: Duration,
    pub deadline: i128,
    pub term_at: Option<i128>,
    pub kill_at: Option<i128>,
}

/// The lease as exec sees it, and the keeper's times to act on its own
/// (see [`ToKeeper::Lease`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub deadline: Instant,
    pub state: HoldState,
    pub term_at: Option<Instant>,
    pub kill_at: Option<Instant>,
}

/// A running keeper.
pub struct Keeper {
    process: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<OwnedReadHalf>>,
    writer: OwnedWriteHalf,
    /// The last lease sent, as exec's clock reads it: only changes are
    /// sent (on the boot clock the same instant reads a little differently
    /// each time it is converted).
    sent: Option<Lease>,
    /// The keeper is gone (end of file or an error).
    closed: bool,
    /// CMD runs in a process group of its own (not in a terminal's foreground).
    pub own_group: bool,
    /// `--kill-orphans`.
    pub kill_orphans: bool,
    /// The keeper's pid (0 if unknown).
    pub pid: libc::pid_t,
}

/// How long one message may take to send before it is given up (the
/// keeper reads at once; only a stopped keeper lets its socket fill).
const SEND_WITHIN: Duration = Duration::from_millis(200);

impl Keeper {
    /// Starts the keeper, which starts CMD: CMD's pid, or the exit code
    /// and message of why it could not run.
    pub async fn start(start: Start<'_>) -> Result<(Keeper, libc::pid_t), (u8, String)> {
        let software = |what: &str, e: io::Error| (exit::SOFTWARE, format!("{what}: {e}"));
        let (ours, theirs) = std::os::unix::net::UnixStream::pair()
            .map_err(|e| software("cannot create the keeper's socket", e))?;
        // This very program, even if its file was replaced or removed since
        // it started (an upgrade while exec waited for the lock).
        let exe = if cfg!(target_os = "linux") {
            std::path::PathBuf::from("/proc/self/exe")
        } else {
            std::env::current_exe().map_err(|e| software("cannot find zk-rwlock's own executable", e))?
        };
        let fd = theirs.as_raw_fd();
        let mut cmd = tokio::process::Command::new(exe);
        cmd.arg0("zk-rwlock")
            .arg(keeper::SUBCOMMAND)
            .arg("--control-fd")
            .arg(fd.to_string())
            .arg("--kill-after-ns")
            .arg(start.kill_after.as_nanos().min(u64::MAX as u128).to_string())
            .arg(format!("--deadline={}", start.deadline));
        if let Some(t) = start.term_at {
            cmd.arg(format!("--term-at={t}"));
        }
        if let Some(t) = start.kill_at {
            cmd.arg(format!("--kill-at={t}"));
        }
        if start.own_group {
            cmd.arg("--own-group");
        }
        if start.kill_orphans {
            cmd.arg("--kill-orphans");
        }
        cmd.arg("--").args(start.command);
        for (key, value) in &start.env {
            cmd.env(key, value);
        }
        for key in &start.env_remove {
            cmd.env_remove(key);
        }
        // The keeper's end of the socket, and only it, survives exec: in the
        // forked child, before exec, only fcntl (async-signal-safe), no
        // allocation. The closure owns that end: dropping `cmd` closes it here.
        let in_child = move || Ok(rustix::io::fcntl_setfd(&theirs, rustix::io::FdFlags::empty())?);
        // SAFETY: `pre_exec` is unsafe by its signature; `in_child` does
        // only what a forked child may do.
        unsafe { cmd.pre_exec(in_child) };
        // The keeper outlives exec on purpose (it kills CMD's tree when exec
        // dies): no parent-death signal, and not killed on drop.
        let process = cmd
            .spawn()
            .map_err(|e| software("cannot start the keeper process", e))?;
        drop(cmd);
        ours.set_nonblocking(true)
            .map_err(|e| software("cannot use the keeper's socket", e))?;
        let stream = UnixStream::from_std(ours).map_err(|e| software("cannot use the keeper's socket", e))?;
        let (read, writer) = stream.into_split();
        let mut keeper = Keeper {
            pid: process.id().map_or(0, |p| p as libc::pid_t),
            process,
            lines: BufReader::new(read).lines(),
            writer,
            sent: None,
            closed: false,
            own_group: start.own_group,
            kill_orphans: start.kill_orphans,
        };
        match keeper.next().await {
            Some(FromKeeper::Started(pid)) => Ok((keeper, pid)),
            Some(FromKeeper::Failed(code, message)) => {
                keeper.wait_exit().await;
                Err((code, message))
            }
            other => {
                keeper.wait_exit().await;
                Err((
                    exit::SOFTWARE,
                    format!("the keeper process did not start the command ({other:?})"),
                ))
            }
        }
    }

    /// The next message; `None` once the keeper is gone.
    pub async fn next(&mut self) -> Option<FromKeeper> {
        if self.closed {
            return std::future::pending().await;
        }
        loop {
            match self.lines.next_line().await {
                Ok(Some(line)) => match FromKeeper::parse(&line) {
                    Some(msg) => return Some(msg),
                    None => tracing::warn!(line, "unknown message from the keeper"),
                },
                Ok(None) | Err(_) => {
                    self.closed = true;
                    return None;
                }
            }
        }
    }

    /// Sends the lease if it changed.
    pub async fn lease(&mut self, lease: Lease) {
        if self.sent == Some(lease) {
            return;
        }
        let msg = ToKeeper::Lease {
            deadline: keeper::boot_of(lease.deadline),
            state: lease.state,
            term_at: lease.term_at.map(keeper::boot_of),
            kill_at: lease.kill_at.map(keeper::boot_of),
        };
        self.send(&msg).await;
        self.sent = Some(lease);
    }

    /// Signals every process of CMD's tree.
    pub async fn signal(&mut self, sig: libc::c_int) {
        self.send(&ToKeeper::Signal(sig)).await;
    }

    /// SIGKILL to CMD's tree until nothing of it is left.
    pub async fn kill(&mut self) {
        self.send(&ToKeeper::Kill).await;
    }

    async fn send(&mut self, msg: &ToKeeper) {
        if self.closed {
            return;
        }
        let line = msg.encode();
        match tokio::time::timeout(SEND_WITHIN, self.writer.write_all(line.as_bytes())).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(error = %e, "the keeper is not listening"),
            Err(_) => tracing::warn!("the keeper did not read a message within {SEND_WITHIN:?}"),
        }
    }

    /// Waits for the keeper process to exit (it does once the tree is gone).
    pub async fn wait_exit(&mut self) {
        if let Err(e) = self.process.wait().await {
            tracing::debug!(error = %e, "cannot wait for the keeper");
        }
    }
}
