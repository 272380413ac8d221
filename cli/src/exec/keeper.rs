//! The keeper: the process between `exec` and its command that holds the
//! command's whole process tree, and stops it in time even when `exec`
//! cannot act.
//!
//! ```text
//! zk-rwlock exec          ZooKeeper session, lease, stop policy
//!   └─ keeper             child subreaper: no network, one thread
//!        └─ CMD           and everything CMD starts, wherever it goes
//! ```
//!
//! * **The whole tree.** The keeper is a child subreaper, so every process
//!   CMD starts stays its descendant, even one that leaves CMD's process
//!   group or session (a background job, `nohup`, `setsid`, a double
//!   fork). The keeper says `gone` only when it has no child left: only
//!   then does `exec` release the lock.
//! * **When `exec` dies** (SIGKILL, the OOM killer), the control socket
//!   reaches end of file: the keeper kills the tree at once.
//! * **When `exec` stops** (SIGSTOP, a debugger), nothing renews the times
//!   `exec` gave it: at the last `term` time the keeper sends SIGTERM to
//!   the tree, at the last `kill` time SIGKILL (both before the lease
//!   deadline), and at the deadline it writes `lost` in the lease file.
//!
//! The keeper blocks the terminal's and job control's signals (SIGINT,
//! SIGQUIT, SIGHUP, SIGTERM, SIGTSTP, SIGTTIN, SIGTTOU): `exec` forwards
//! what CMD should get, and a keeper stopped with CMD could not stop CMD.
//! Only SIGKILL ends it; if both `exec` and the keeper are killed with
//! SIGKILL together, CMD itself dies with them (parent-death signal) but
//! what CMD started is left to run.
//!
//! The control protocol is one line per message over a Unix socket pair;
//! times are `CLOCK_BOOTTIME` nanoseconds (one clock for both processes,
//! which goes on while the machine is suspended, as the server's does).

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use nix::sys::signal::{sigprocmask, SigSet, SigmaskHow, Signal as NixSignal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::process::{Pid, Signal};
use zk_rwlock::HoldState;

use super::lease_file::LeaseFile;
use super::tree;
use zk_rwlock_cli::exit;

mod protocol;
mod rules;

pub use protocol::{FromKeeper, ToKeeper};
use rules::{Act, Watch};

/// The hidden subcommand that runs the keeper.
pub const SUBCOMMAND: &str = "__keeper";

/// Now on `CLOCK_BOOTTIME`, in nanoseconds.
pub fn boot_now() -> i128 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec)
}

/// `at` (a monotonic instant) on the boot clock.
pub fn boot_of(at: std::time::Instant) -> i128 {
    let now = std::time::Instant::now();
    let boot = boot_now();
    if at >= now {
        boot + at.duration_since(now).as_nanos() as i128
    } else {
        boot - now.duration_since(at).as_nanos() as i128
    }
}

// ---------------------------------------------------------------------------
// The keeper process.

/// The keeper's arguments (hidden: `exec` alone runs it).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The control socket's file descriptor.
    #[arg(long)]
    control_fd: RawFd,
    /// Run CMD in a process group of its own.
    #[arg(long)]
    own_group: bool,
    /// When CMD exits, SIGTERM the rest of its tree (SIGKILL after --kill-after).
    #[arg(long)]
    kill_orphans: bool,
    /// Nanoseconds between SIGTERM and SIGKILL for --kill-orphans.
    #[arg(long)]
    kill_after_ns: u64,
    /// The lease deadline when CMD starts (boot ns).
    #[arg(long, allow_hyphen_values = true)]
    deadline: i128,
    /// Without a word from exec: SIGTERM at this time (boot ns).
    #[arg(long, allow_hyphen_values = true)]
    term_at: Option<i128>,
    /// Without a word from exec: SIGKILL at this time (boot ns).
    #[arg(long, allow_hyphen_values = true)]
    kill_at: Option<i128>,
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

/// The signals the keeper blocks: all it must not die or stop of, and SIGCHLD (read from a signalfd).
/// (sigprocmask and signalfd are not in rustix: nix wraps them.)
fn blocked_set() -> SigSet {
    let mut set = SigSet::empty();
    for sig in [
        NixSignal::SIGCHLD,
        NixSignal::SIGINT,
        NixSignal::SIGQUIT,
        NixSignal::SIGHUP,
        NixSignal::SIGTERM,
        NixSignal::SIGTSTP,
        NixSignal::SIGTTIN,
        NixSignal::SIGTTOU,
        NixSignal::SIGPIPE,
    ] {
        set.add(sig);
    }
    set
}

/// Runs the keeper: never returns before the tree is gone (or `exec` and
/// the tree are).
pub fn run(args: Args) -> ExitCode {
    match keep(args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("zk-rwlock: keeper: {e}");
            ExitCode::from(exit::SOFTWARE)
        }
    }
}

fn keep(args: Args) -> io::Result<u8> {
    let set = blocked_set();
    // The keeper has one thread: the process's mask.
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None)?;
    // SAFETY: the descriptor was handed over by exec for this process alone.
    let mut control = unsafe { UnixStream::from_raw_fd(args.control_fd) };
    // Not for CMD.
    rustix::io::fcntl_setfd(&control, rustix::io::FdFlags::CLOEXEC)?;
    control.set_nonblocking(true)?;
    let sigfd = SignalFd::with_flags(&set, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)?;
    tree::become_subreaper()?;
    // A group of its own: stopping exec's process group (kill -STOP -PGID,
    // a shell's job control) must not stop the keeper with it. CMD goes to
    // a group of its own, or back to exec's (a terminal's foreground).
    let exec_group = rustix::process::getpgrp();
    if let Err(e) = rustix::process::setpgid(None, None) {
        tracing::debug!(error = %io::Error::from(e), "keeper: no process group of its own");
    }

    let me = std::process::id() as libc::pid_t;
    let mut watch = Watch::new(args.deadline, args.term_at, args.kill_at);
    let mut lease = match LeaseFile::create(unix_ms(args.deadline), HoldState::Held) {
        Ok(file) => Some(file),
        Err(e) => {
            eprintln!(
                "zk-rwlock: warning: cannot create the lease file in {}: {e}; \
                 the command runs without ZK_RWLOCK_LEASE_FILE",
                std::env::temp_dir().display()
            );
            None
        }
    };
    let cmd_pid = match spawn(&args, lease.as_ref().map(LeaseFile::path), exec_group) {
        Ok(pid) => pid,
        Err((code, message)) => {
            send(&mut control, &FromKeeper::Failed(code, message));
            return Ok(code);
        }
    };
    send(&mut control, &FromKeeper::Started(cmd_pid));

    let mut exec_alive = true;
    let mut buf = Vec::new();
    let mut cmd_running = true;
    let mut last_kill: Option<i128> = None;
    loop {
        // Children that ended.
        let (reaped, left) = tree::reap();
        for (pid, status) in reaped {
            if pid == cmd_pid && cmd_running {
                cmd_running = false;
                send(&mut control, &FromKeeper::Exited(shell_code(status)));
                if left {
                    let remain = tree::descendants(me);
                    if !remain.is_empty() {
                        send(&mut control, &FromKeeper::Remain(remain));
                        if args.kill_orphans {
                            let act = watch.on_command_exit_kill_orphans(
                                boot_now(),
                                Duration::from_nanos(args.kill_after_ns),
                            );
                            perform(act, me, &mut control, &mut lease, &watch, false);
                        }
                    }
                }
            }
        }
        if !left {
            if let Some(file) = lease.as_mut() {
                file.update(unix_ms(watch.deadline), watch.state);
            }
            send(&mut control, &FromKeeper::Gone);
            return Ok(0);
        }
        // Messages from exec.
        if exec_alive {
            match read_lines(&mut control, &mut buf) {
                Ok((lines, eof)) => {
                    for line in lines {
                        match ToKeeper::parse(&line) {
                            Some(msg) => {
                                if let ToKeeper::Signal(sig) = msg {
                                    tree::signal_descendants(me, sig);
                                }
                                let act = watch.on_message(&msg);
                                if let ToKeeper::Lease { deadline, state, .. } = msg {
                                    if let Some(file) = lease.as_mut() {
                                        file.update(unix_ms(deadline), state);
                                    }
                                }
                                if let Some(act) = act {
                                    perform(act, me, &mut control, &mut lease, &watch, false);
                                }
                            }
                            None => tracing::warn!(line, "keeper: unknown message"),
                        }
                    }
                    if eof {
                        exec_alive = false;
                        eprintln!("zk-rwlock: exec is gone: killing the processes of its command");
                        let act = watch.on_exec_gone();
                        perform(act, me, &mut control, &mut lease, &watch, false);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        // Timers.
        let now = boot_now();
        while let Some(act) = watch.due(now) {
            perform(act, me, &mut control, &mut lease, &watch, true);
        }
        // While killing: again, every 10 ms, until nothing is left.
        if watch.killing && last_kill.is_none_or(|at| now - at >= 10_000_000) {
            tree::signal_descendants(me, libc::SIGKILL);
            last_kill = Some(now);
        }
        let mut wake = watch.next_wake().map(|at| at - now);
        if watch.killing {
            wake = Some(wake.map_or(10_000_000, |w| w.min(10_000_000)));
        }
        // Rounded up to the millisecond, at most a second.
        let timeout = wake.map(|ns| {
            let ms = ((ns.max(0) + 999_999) / 1_000_000).min(1_000) as i64;
            Timespec {
                tv_sec: ms / 1_000,
                tv_nsec: (ms % 1_000 * 1_000_000) as _,
            }
        });
        let mut fds = vec![PollFd::new(&sigfd, PollFlags::IN)];
        if exec_alive {
            fds.push(PollFd::new(&control, PollFlags::IN));
        }
        match rustix::event::poll(&mut fds, timeout.as_ref()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        if !fds[0].revents().is_empty() {
            // Drain the signalfd: reaping above finds what ended.
            let mut info = [0u8; 128];
            while rustix::io::read(&sigfd, &mut info).is_ok_and(|n| n > 0) {}
        }
    }
}

/// Does `act`: signals the tree or marks the lease file; tells exec when
/// the keeper acted on its own (`own`).
fn perform(
    act: Act,
    me: libc::pid_t,
    control: &mut UnixStream,
    lease: &mut Option<LeaseFile>,
    watch: &Watch,
    own: bool,
) {
    let sig = match act {
        Act::MarkLost => {
            if let Some(file) = lease.as_mut() {
                file.update(unix_ms(watch.deadline), HoldState::Lost);
            }
            return;
        }
        Act::Term => libc::SIGTERM,
        Act::Kill | Act::KillOrphans => libc::SIGKILL,
    };
    tree::signal_descendants(me, sig);
    if own && act != Act::KillOrphans {
        send(control, &FromKeeper::Acted(sig));
    }
}

/// Sends a message; exec may be gone (then nothing is listening).
fn send(control: &mut UnixStream, msg: &FromKeeper) {
    let line = msg.encode();
    // A few bytes on a socket exec drains: a short wait at most.
    let _ = control.set_nonblocking(false);
    let _ = control.set_write_timeout(Some(Duration::from_millis(200)));
    if let Err(e) = control.write_all(line.as_bytes()) {
        tracing::debug!(error = %e, "keeper: exec not listening");
    }
    let _ = control.set_nonblocking(true);
}

/// The complete lines available now, and whether the other end closed.
fn read_lines(control: &mut UnixStream, buf: &mut Vec<u8>) -> io::Result<(Vec<String>, bool)> {
    let mut chunk = [0u8; 4096];
    let mut eof = false;
    loop {
        match control.read(&mut chunk) {
            Ok(0) => {
                eof = true;
                break;
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A reset is exec gone too.
            Err(_) => {
                eof = true;
                break;
            }
        }
    }
    let mut lines = Vec::new();
    while let Some(at) = buf.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = buf.drain(..=at).collect();
        lines.push(String::from_utf8_lossy(&line).trim_end().to_owned());
    }
    Ok((lines, eof))
}

/// A boot-clock time as Unix epoch milliseconds.
fn unix_ms(at: i128) -> u64 {
    let now = boot_now();
    let wall = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    u64::try_from((wall + (at - now)).max(0) / 1_000_000).unwrap_or(u64::MAX)
}

/// A wait status as a shell's exit code: the code, or 128+signal.
fn shell_code(status: libc::c_int) -> u8 {
    if libc::WIFEXITED(status) {
        (libc::WEXITSTATUS(status) & 0xff) as u8
    } else if libc::WIFSIGNALED(status) {
        super::signal_exit(libc::WTERMSIG(status))
    } else {
        exit::SOFTWARE
    }
}

/// Starts CMD: in its own process group unless told otherwise, killed if
/// the keeper dies. On failure, the exit code (126/127) and a message.
fn spawn(
    args: &Args,
    lease_file: Option<&std::path::Path>,
    exec_group: Pid,
) -> Result<libc::pid_t, (u8, String)> {
    use std::os::unix::process::CommandExt;
    let (program, rest) = args
        .command
        .split_first()
        .ok_or((exit::USAGE, "no command given".to_owned()))?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(rest);
    match lease_file {
        Some(file) => cmd.env("ZK_RWLOCK_LEASE_FILE", file),
        // Not one inherited from an outer zk-rwlock.
        None => cmd.env_remove("ZK_RWLOCK_LEASE_FILE"),
    };
    cmd.process_group(if args.own_group {
        0
    } else {
        exec_group.as_raw_pid()
    });
    #[cfg(target_os = "linux")]
    {
        let parent = rustix::process::getpid();
        let none = SigSet::empty();
        // In the forked child, before exec: only async-signal-safe calls
        // (sigprocmask, prctl, getppid), no allocation.
        let in_child = move || {
            // CMD starts with no signal blocked (the keeper blocks many).
            sigprocmask(SigmaskHow::SIG_SETMASK, Some(&none), None)?;
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            // The keeper died before the death signal was armed.
            if rustix::process::getppid() != Some(parent) {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        };
        // SAFETY: `pre_exec` is unsafe by its signature; `in_child` does
        // only what a forked child of a single-threaded keeper may do.
        unsafe { cmd.pre_exec(in_child) };
    }
    let name = program.to_string_lossy();
    match cmd.spawn() {
        // The keeper reaps it with waitpid(-1): the handle is not waited on.
        Ok(child) => Ok(child.id() as libc::pid_t),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err((exit::NOT_FOUND, format!("cannot run `{name}`: command not found")))
        }
        Err(e) => Err((exit::CANNOT_EXECUTE, format!("cannot run `{name}`: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_codes_of_wait_statuses() {
        assert_eq!(shell_code(3 << 8), 3);
        assert_eq!(shell_code(libc::SIGKILL), 137);
        assert_eq!(shell_code(libc::SIGTERM), 143);
    }
}
