//! One demo worker process: its own ZooKeeper session, a loop of
//! acquire / hold / release / think, and one JSON line per event on stdout.
//!
//! The worker connects, reports `ready`, and waits for a line `go` on stdin;
//! its run lasts `--duration` from then. End of stdin (the parent is gone or
//! wants it to stop) ends the run early. Stdout is read by the parent only.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use zk_rwlock::{zk, Mode, SharedLock};

use super::event::{now_us, Kind, Line};
use super::WorkerArgs;

/// How long a reader holds the lock: uniformly from this range (ms).
pub const READ_HOLD_MS: (u64, u64) = (20, 200);
/// How long a writer holds the lock (ms).
pub const WRITE_HOLD_MS: (u64, u64) = (20, 120);
/// Pause between a release and the next request (ms).
pub const THINK_MS: (u64, u64) = (50, 500);
/// Session timeout the workers ask for (the server may grant less).
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a worker tries to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a worker waits for its session to close at the end.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// SplitMix64: a tiny seeded generator (not for cryptography).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `lo..=hi`.
    pub fn range(&mut self, (lo, hi): (u64, u64)) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// Writes event lines to stdout, one write per line.
struct Out;

impl Out {
    /// Sends `kind` stamped `t_us`; false if stdout is gone.
    fn send_at(&self, t_us: u64, kind: Kind) -> bool {
        let line = Line { t_us, kind }.to_json_line();
        let mut out = std::io::stdout().lock();
        out.write_all(line.as_bytes()).and_then(|()| out.flush()).is_ok()
    }

    /// Sends `kind` stamped now.
    fn send(&self, kind: Kind) -> bool {
        self.send_at(now_us(), kind)
    }
}

/// What stdin says: nothing yet, `go`, or closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stdin {
    Waiting,
    Go,
    Closed,
}

/// Reads stdin on a plain thread (a blocked read must not keep the runtime
/// from shutting down) and publishes what it says.
fn watch_stdin() -> watch::Receiver<Stdin> {
    let (tx, rx) = watch::channel(Stdin::Waiting);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            match line {
                Ok(line) if line.trim() == "go" => {
                    let _ = tx.send(Stdin::Go);
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let _ = tx.send(Stdin::Closed);
    });
    rx
}

/// Runs one worker; see the module documentation.
pub fn run(args: WorkerArgs) -> ExitCode {
    let out = Out;
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            out.send(Kind::Error {
                msg: format!("cannot start a runtime: {e}"),
            });
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(work(args, &out));
    runtime.shutdown_timeout(Duration::from_millis(500));
    code
}

async fn work(args: WorkerArgs, out: &Out) -> ExitCode {
    let mode = args.mode.into();
    let mut stdin = watch_stdin();
    let connecting = zk::Client::connector()
        .with_session_timeout(SESSION_TIMEOUT)
        .connect(&args.connect);
    let client = match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => {
            out.send(Kind::Error {
                msg: format!("cannot connect to ZooKeeper at {}: {e}", args.connect),
            });
            return ExitCode::FAILURE;
        }
        Err(_) => {
            out.send(Kind::Error {
                msg: format!(
                    "cannot connect to ZooKeeper at {}: no answer within {CONNECT_TIMEOUT:?}",
                    args.connect
                ),
            });
            return ExitCode::FAILURE;
        }
    };
    let identity = format!("demo-{}", args.label);
    let lock = match SharedLock::builder(client.clone(), &args.path)
        .identity(&identity)
        .build()
    {
        Ok(lock) => lock,
        Err(e) => {
            out.send(Kind::Error { msg: e.to_string() });
            return ExitCode::FAILURE;
        }
    };
    // Report session state changes (a failover shows as Disconnected, then SyncConnected).
    let mut states = client.state_watcher();
    let state_task = tokio::spawn(async move {
        loop {
            let state = states.changed().await;
            let t = now_us();
            if !Out.send_at(
                t,
                Kind::State {
                    state: format!("{state:?}"),
                },
            ) || state.is_terminated()
            {
                return;
            }
        }
    });
    let mut closing = client.state_watcher();
    let session = format!("0x{:x}", client.session_id().0);
    drop(client);
    if !out.send(Kind::Ready { session }) {
        return ExitCode::FAILURE;
    }
    match stdin.wait_for(|s| *s != Stdin::Waiting).await.map(|s| *s) {
        Ok(Stdin::Go) => {}
        _ => return ExitCode::SUCCESS,
    }
    let end = Instant::now() + args.duration;
    let mut rng = SplitMix64::new(args.seed);
    let hold_ms = match mode {
        Mode::Read => READ_HOLD_MS,
        Mode::Write => WRITE_HOLD_MS,
    };
    let mut grants = 0u64;
    let mut failed = false;
    let stopped = |rx: &watch::Receiver<Stdin>| *rx.borrow() == Stdin::Closed;
    while Instant::now() < end && !stopped(&stdin) {
        if !out.send(Kind::Want) {
            failed = true;
            break;
        }
        let mut stop = stdin.clone();
        let acquired = tokio::select! {
            acquired = lock.acquire(mode) => {
                let t = now_us();
                Some((t, acquired))
            }
            () = tokio::time::sleep_until(end) => None,
            _ = stop.wait_for(|s| *s == Stdin::Closed) => None,
        };
        let Some((t_grant, acquired)) = acquired else {
            // Dropping the acquire future deletes its node in the background.
            out.send(Kind::Cancel);
            break;
        };
        let guard = match acquired {
            Ok(guard) => guard,
            Err(e) => {
                out.send(Kind::Error {
                    msg: format!("acquire failed: {e}"),
                });
                failed = true;
                break;
            }
        };
        grants += 1;
        out.send_at(
            t_grant,
            Kind::Grant {
                token: guard.fencing_token(),
                node: guard.node().to_owned(),
            },
        );
        let hold = Duration::from_millis(rng.range(hold_ms));
        let lost = tokio::select! {
            () = tokio::time::sleep(hold) => false,
            () = guard.lost() => true,
        };
        if lost {
            out.send(Kind::Lost);
            drop(guard);
        } else {
            let t_release = now_us();
            out.send_at(t_release, Kind::Release);
            if let Err(e) = guard.release().await {
                out.send(Kind::Error {
                    msg: format!("release failed: {e}"),
                });
                failed = true;
                break;
            }
        }
        let think = Duration::from_millis(rng.range(THINK_MS));
        let mut stop = stdin.clone();
        tokio::select! {
            () = tokio::time::sleep(think) => {}
            () = tokio::time::sleep_until(end) => {}
            _ = stop.wait_for(|s| *s == Stdin::Closed) => {}
        }
    }
    out.send(Kind::Done { grants });
    // Close the session: dropping the last client closes it in the background.
    drop(lock);
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, async {
        while !closing.state().is_terminated() {
            closing.changed().await;
        }
    })
    .await;
    state_task.abort();
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_is_seeded_and_in_range() {
        let a: Vec<u64> = {
            let mut r = SplitMix64::new(7);
            (0..5).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = SplitMix64::new(7);
            (0..5).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a[0], SplitMix64::new(8).next_u64());
        let mut r = SplitMix64::new(1);
        let mut seen = [false; 11];
        for _ in 0..1000 {
            let v = r.range((20, 30));
            assert!((20..=30).contains(&v));
            seen[(v - 20) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(r.range((5, 5)), 5);
    }
}
