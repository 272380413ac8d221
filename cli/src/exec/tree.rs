//! A process tree, as `/proc` shows it: the live (not zombie) descendants
//! of a process, and signals to every one of them.
//!
//! `exec`'s keeper is a child subreaper (`PR_SET_CHILD_SUBREAPER`): a
//! process of the command's tree whose parent dies is re-parented to the
//! keeper, not to init, so "every descendant of the keeper" is every
//! process the command started, however it left its process group or
//! session (`setsid`, a double fork, `nohup`, `disown`).

use std::collections::HashMap;
use std::io;

use rustix::process::{Pid, Signal, WaitOptions};

/// One process as `/proc/<pid>/stat` shows it.
struct Stat {
    ppid: libc::pid_t,
    zombie: bool,
}

/// `/proc/<pid>/stat`: the parent and whether it is a zombie.
fn stat(pid: libc::pid_t) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the parenthesised command name (which may hold anything): state, ppid, ...
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    // A thread-group leader that exited while other threads of it run
    // shows as a zombie too, and cannot be reaped until they end: it lives
    // for as long as its task directory lists more than itself.
    let zombie = (state == "Z" || state == "X")
        && std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, Iterator::count) <= 1;
    Some(Stat { ppid, zombie })
}

/// Every process's parent, and whether it lives.
fn table() -> io::Result<HashMap<libc::pid_t, Stat>> {
    let mut all = HashMap::new();
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // Gone between the listing and the read: not a descendant any more.
        if let Some(s) = stat(pid) {
            all.insert(pid, s);
        }
    }
    Ok(all)
}

/// The live (not zombie) descendants of `root`, parents before children.
/// A zombie's children are followed (they still descend from `root` until
/// re-parented). Empty if `/proc` cannot be read.
pub fn descendants(root: libc::pid_t) -> Vec<libc::pid_t> {
    let all = match table() {
        Ok(all) => all,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read /proc: the command's processes cannot be listed");
            return Vec::new();
        }
    };
    let mut children: HashMap<libc::pid_t, Vec<libc::pid_t>> = HashMap::new();
    for (&pid, s) in &all {
        children.entry(s.ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut queue = vec![root];
    while let Some(parent) = queue.pop() {
        for &child in children.get(&parent).map_or(&[][..], Vec::as_slice) {
            if child == root {
                continue;
            }
            if all.get(&child).is_some_and(|s| !s.zombie) {
                out.push(child);
            }
            queue.push(child);
        }
    }
    out
}

/// Sends `sig` to every live descendant of `root`; how many there were.
/// Processes forked meanwhile may be missed: for SIGKILL, call again until
/// none is left.
pub fn signal_descendants(root: libc::pid_t, sig: libc::c_int) -> usize {
    signal_descendants_but(root, None, sig)
}

/// As [`signal_descendants`], sparing `spared` (and what descends from it
/// only through it is still signalled: only that one process is left out).
pub fn signal_descendants_but(root: libc::pid_t, spared: Option<libc::pid_t>, sig: libc::c_int) -> usize {
    let pids: Vec<_> = descendants(root)
        .into_iter()
        .filter(|&p| Some(p) != spared)
        .collect();
    for &pid in &pids {
        signal(pid, sig);
    }
    pids.len()
}

/// kill(2), logging a failure (the process may have just exited).
pub fn signal(pid: libc::pid_t, sig: libc::c_int) {
    // The pid is a descendant of this process that `/proc` just listed as
    // alive; it is not reaped (and its id not reused) before this process
    // waits for it.
    let (Some(target), Some(signal)) = (Pid::from_raw(pid), Signal::from_named_raw(sig)) else {
        tracing::debug!(pid, sig, "kill: no such pid or signal");
        return;
    };
    if let Err(e) = rustix::process::kill_process(target, signal) {
        tracing::debug!(pid, sig, error = %io::Error::from(e), "kill failed");
    }
}

/// Makes this process a child subreaper: orphans among its descendants
/// are re-parented to it instead of to init (Linux).
#[cfg(target_os = "linux")]
pub fn become_subreaper() -> io::Result<()> {
    // prctl(PR_SET_CHILD_SUBREAPER, 1): any pid given sets the attribute.
    Ok(rustix::process::set_child_subreaper(Some(Pid::INIT))?)
}

#[cfg(not(target_os = "linux"))]
pub fn become_subreaper() -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "child subreapers exist only on Linux",
    ))
}

/// Reaps every child of this process that has exited, without blocking;
/// returns (pid, raw wait status) of each, and whether children are left.
pub fn reap() -> (Vec<(libc::pid_t, libc::c_int)>, bool) {
    let mut done = Vec::new();
    loop {
        // waitpid(-1): any child, whatever its group.
        match rustix::process::wait(WaitOptions::NOHANG) {
            Ok(None) => return (done, true),
            Ok(Some((pid, status))) => done.push((pid.as_raw_pid(), status.as_raw())),
            Err(rustix::io::Errno::INTR) => continue,
            // ECHILD: no children at all.
            Err(_) => return (done, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    /// A process whose main thread exited while another thread runs shows
    /// as a zombie, but lives: it is listed, and SIGKILL ends it.
    #[test]
    fn a_process_whose_main_thread_exited_is_alive() {
        let script = "import threading, time, ctypes\n\
                      threading.Thread(target=lambda: time.sleep(60)).start()\n\
                      ctypes.CDLL(None).syscall(60, 0)\n";
        let Ok(mut child) = Command::new("python3").args(["-c", script]).spawn() else {
            return; // no python3 here: nothing to check
        };
        let pid = child.id() as libc::pid_t;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if text
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            {
                break;
            }
            assert!(Instant::now() < deadline, "the main thread never exited");
            std::thread::sleep(Duration::from_millis(10));
        }
        let me = std::process::id() as libc::pid_t;
        assert!(descendants(me).contains(&pid));
        signal(pid, libc::SIGKILL);
        let _ = child.wait();
        assert!(!descendants(me).contains(&pid));
    }

    #[test]
    fn finds_a_grandchild_and_signals_it() {
        // sh forks a sleep and waits for it: both descend from this test.
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .expect("sh");
        let me = std::process::id() as libc::pid_t;
        let sh = child.id() as libc::pid_t;
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut found = Vec::new();
        let child_of_sh = |found: &[libc::pid_t]| {
            found
                .iter()
                .copied()
                .find(|&p| stat(p).is_some_and(|s| s.ppid == sh))
        };
        while Instant::now() < deadline {
            found = descendants(me);
            if child_of_sh(&found).is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(found.contains(&sh), "{found:?}");
        let sleep = child_of_sh(&found).expect("the sleep");
        signal(sleep, libc::SIGKILL);
        let status = child.wait().expect("wait");
        assert!(status.success(), "sh's wait returns 0 once its job is killed");
        assert!(!descendants(me).contains(&sleep));
    }
}
