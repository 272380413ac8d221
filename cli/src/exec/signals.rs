//! The signals `exec` (and `lead`) handle themselves, their names, and
//! the exit code that reports one.

use std::io;

use tokio::signal::unix::{signal, Signal, SignalKind};

pub(crate) fn signal_exit(sig: libc::c_int) -> u8 {
    (128 + sig).clamp(0, 255) as u8
}

pub(crate) fn signal_name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGKILL => "SIGKILL",
        _ => "signal",
    }
}

/// The signals zk-rwlock handles itself: SIGINT, SIGTERM, SIGHUP.
pub(crate) struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl Signals {
    pub(crate) fn new() -> io::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The next signal received.
    pub(crate) async fn recv(&mut self) -> libc::c_int {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_of_statuses() {
        assert_eq!(signal_exit(libc::SIGINT), 130);
        assert_eq!(signal_exit(libc::SIGTERM), 143);
    }
}
