//! One demo worker process: its own ZooKeeper session, a loop of
//! acquire / hold / release / think, and one JSON line per event on stdout.
//!
//! The worker connects, reports `ready`, and waits for a line `go` on stdin;
//! its run lasts `--duration` from then. End of stdin (the parent is gone or
//! wants it to stop) ends the run early; a line `long` makes its next hold
//! last several session timeouts (the parent cuts it off from ZooKeeper
//! during that hold). Stdout is read by the parent only.
//!
//! A hold: a writer writes `begin` to the fenced store (`--store`) with its
//! token, works (sleeps) for the hold time, writing `progress` every half
//! second of a long hold while the lock is held, stops working while the
//! connection is lost (`suspended`) until it is back (`resumed`) or the
//! lease deadline passes (`lost`), and at the end of the work writes `end`
//! and releases. After a loss it goes on with its session if the session
//! survived, or with a new one.
//!
//! With `--permits N` instead of `--mode` the worker takes one of the N
//! permits of a semaphore (`zk_rwlock::Semaphore`) on the path, held as a
//! guard is (the permit's [`Guard`]), and writes nothing to the store:
//! holders that hold together write with tokens in any order.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use zk_rwlock::{zk, Guard, HoldState, Mode, Semaphore, SharedLock};
use zk_rwlock_testkit::fenced_store::{FencedStore, Outcome};
// The demo's seeded generator is the test kit's (also used by the parent).
pub use zk_rwlock_testkit::SplitMix64;

use super::event::{instant_us, now_us, Kind, Line};
use super::{WorkerArgs, WorkerMode};

/// How long a reader holds the lock: uniformly from this range (ms).
pub const READ_HOLD_MS: (u64, u64) = (20, 200);
/// How long a writer holds the lock (ms).
pub const WRITE_HOLD_MS: (u64, u64) = (20, 120);
/// How long a worker holds a permit (`--permits`) (ms): about as long as it
/// thinks, so that 3N workers keep N permits busy and a queue waiting.
pub const PERMIT_HOLD_MS: (u64, u64) = (50, 300);
/// Pause between a release and the next request (ms).
pub const THINK_MS: (u64, u64) = (50, 500);
/// Session timeout the workers ask for (the server may grant less).
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a worker tries to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a worker waits for its session to close at the end.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
/// A long hold (asked for with `long` on stdin) lasts this many session
/// timeouts, unless the lock is lost first.
const LONG_HOLD_TIMEOUTS: u32 = 3;
/// How often a writer writes to the store during a long hold.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

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
/// from shutting down) and publishes what it says: `go` and the end of
/// stdin through the channel, `long` (make the next hold a long one) by
/// setting the flag.
fn watch_stdin(long: Arc<AtomicBool>) -> watch::Receiver<Stdin> {
    let (tx, rx) = watch::channel(Stdin::Waiting);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            match line.as_deref().map(str::trim) {
                Ok("go") => {
                    let _ = tx.send(Stdin::Go);
                }
                Ok("long") => long.store(true, Ordering::SeqCst),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let _ = tx.send(Stdin::Closed);
    });
    rx
}

/// Completes when stdin is closed.
async fn closed(stdin: &watch::Receiver<Stdin>) {
    let mut stdin = stdin.clone();
    let _ = stdin.wait_for(|s| *s == Stdin::Closed).await;
}

/// What the worker takes: the read/write lock in its mode, or a permit.
enum Lock {
    /// `--mode`.
    Shared(SharedLock, Mode),
    /// `--permits`.
    Permits(Semaphore),
}

impl Lock {
    /// Waits for the lock or a permit, as a guard.
    async fn acquire(&self) -> Result<Guard, zk_rwlock::Error> {
        match self {
            Lock::Shared(lock, mode) => lock.acquire(*mode).await,
            Lock::Permits(semaphore) => semaphore.acquire().await.map(Guard::from),
        }
    }
}

/// One ZooKeeper session of the worker and its lock.
struct Session {
    client: zk::Client,
    lock: Lock,
    /// Reports the session's state changes.
    states: tokio::task::JoinHandle<()>,
}

impl Session {
    /// Connects a new session; the error says why not.
    async fn connect(args: &WorkerArgs) -> Result<Session, String> {
        let options = args
            .security
            .options(SESSION_TIMEOUT, CONNECT_TIMEOUT)
            .map_err(|f| f.message)?;
        let client = zk_rwlock::connect_client_with(&args.connect, &options)
            .await
            .map_err(|e| format!("cannot connect to ZooKeeper at {}: {e}", args.connect))?;
        let identity = format!("demo-{}", args.label);
        let lock = match (args.permits, args.mode) {
            (Some(permits), _) => {
                let mut builder = Semaphore::builder(client.clone(), &args.path, permits)
                    .identity(&identity)
                    .follower_lag(args.follower_lag);
                // The ACLs as `AclArg::apply` sets them on a lock's builder.
                if args.acl.acl != zk_rwlock_cli::connection::Acl::Open {
                    builder = builder.acls(&args.acl.acl.acls());
                }
                if let Some(dir_acl) = args.acl.dir_acl {
                    builder = builder.directory_acls(&dir_acl.acls());
                }
                Lock::Permits(builder.build().map_err(|e| e.to_string())?)
            }
            (None, mode) => Lock::Shared(
                args.acl
                    .apply(SharedLock::builder(client.clone(), &args.path))
                    .identity(&identity)
                    .follower_lag(args.follower_lag)
                    .build()
                    .map_err(|e| e.to_string())?,
                mode.map_or(Mode::Read, Mode::from),
            ),
        };
        // Report session state changes (a failover shows as Disconnected, then SyncConnected).
        let mut states = client.state_watcher();
        let states = tokio::spawn(async move {
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
        Ok(Session { client, lock, states })
    }

    /// The session id, in hex.
    fn id(&self) -> String {
        format!("0x{:x}", self.client.session_id().0)
    }

    /// Closes the session (dropping the last client closes it in the
    /// background) and waits a little for it to be closed.
    async fn close(self) {
        let mut closing = self.client.state_watcher();
        drop(self.lock);
        drop(self.client);
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, async {
            while !closing.state().is_terminated() {
                closing.changed().await;
            }
        })
        .await;
        self.states.abort();
    }
}

/// Waits until `session` can be used again after a loss: connected (it
/// goes on with it), or ended (a new session replaces it, reported with a
/// `session` event). False if stdin closed first.
async fn settle(
    session: &mut Session,
    args: &WorkerArgs,
    out: &Out,
    stdin: &watch::Receiver<Stdin>,
) -> Result<bool, String> {
    let mut states = session.client.state_watcher();
    loop {
        let state = session.client.state();
        if state == zk::SessionState::SyncConnected {
            return Ok(true);
        }
        if state.is_terminated() {
            break;
        }
        tokio::select! {
            _ = states.changed() => {}
            () = closed(stdin) => return Ok(false),
        }
    }
    let fresh = tokio::select! {
        fresh = Session::connect(args) => fresh?,
        () = closed(stdin) => return Ok(false),
    };
    out.send(Kind::Session { session: fresh.id() });
    std::mem::replace(session, fresh).close().await;
    Ok(true)
}

/// Writes `<label> <n> <what>` to the store with `token`, and reports it.
/// Returns whether the store accepted it.
async fn store_write(
    store: &FencedStore,
    out: &Out,
    label: &str,
    (token, n, what): (i64, u64, &str),
    lease_us: u64,
) -> Result<bool, String> {
    let (writer, record) = (store.clone(), format!("{label} {n} {what}"));
    let outcome = tokio::task::spawn_blocking(move || writer.write(token, &record))
        .await
        .map_err(|e| format!("the fenced store's write task failed: {e}"))?
        .map_err(|e| {
            format!(
                "cannot write to the fenced store in {}: {e}",
                store.dir().display()
            )
        })?;
    let accepted = outcome == Outcome::Accepted;
    out.send(Kind::Write {
        token,
        n,
        what: what.to_owned(),
        accepted,
        lease_us,
    });
    Ok(accepted)
}

/// How a hold's work ended.
enum Worked {
    /// Its time is up (or the run is over).
    Done,
    /// The lock was lost first.
    Lost,
}

/// Runs one worker; see the module documentation.
pub fn run(args: WorkerArgs) -> ExitCode {
    let out = Out;
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
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
    let long = Arc::new(AtomicBool::new(false));
    let mut stdin = watch_stdin(long.clone());
    // Writers write to the store; readers only read the lock, and permit
    // holders hold together.
    let store = match (&args.store, args.mode) {
        (Some(dir), Some(WorkerMode::Write)) if args.permits.is_none() => match FencedStore::open(dir) {
            Ok(store) => Some(store),
            Err(e) => {
                out.send(Kind::Error {
                    msg: format!("cannot open the fenced store in {}: {e}", dir.display()),
                });
                return ExitCode::FAILURE;
            }
        },
        _ => None,
    };
    let mut session = match Session::connect(&args).await {
        Ok(session) => session,
        Err(msg) => {
            out.send(Kind::Error { msg });
            return ExitCode::FAILURE;
        }
    };
    if !out.send(Kind::Ready {
        session: session.id(),
    }) {
        return ExitCode::FAILURE;
    }
    match stdin.wait_for(|s| *s != Stdin::Waiting).await.map(|s| *s) {
        Ok(Stdin::Go) => {}
        _ => return ExitCode::SUCCESS,
    }
    let end = Instant::now() + args.duration;
    let mut rng = SplitMix64::new(args.seed);
    let hold_ms = match (args.permits, args.mode) {
        (Some(_), _) => PERMIT_HOLD_MS,
        (None, Some(WorkerMode::Write)) => WRITE_HOLD_MS,
        (None, _) => READ_HOLD_MS,
    };
    let (mut grants, mut writes) = (0u64, 0u64);
    let mut failed = None;
    let stopped = |rx: &watch::Receiver<Stdin>| *rx.borrow() == Stdin::Closed;
    'run: while Instant::now() < end && !stopped(&stdin) {
        // A session that ended while idle (or after a loss) is replaced first.
        if session.client.state().is_terminated() {
            match settle(&mut session, &args, out, &stdin).await {
                Ok(true) => {}
                Ok(false) => break,
                Err(msg) => {
                    failed = Some(msg);
                    break;
                }
            }
        }
        if !out.send(Kind::Want) {
            failed = Some(String::new());
            break;
        }
        let acquired = tokio::select! {
            acquired = session.lock.acquire() => {
                let t = now_us();
                Some((t, acquired))
            }
            () = tokio::time::sleep_until(end) => None,
            () = closed(&stdin) => None,
        };
        let Some((t_grant, acquired)) = acquired else {
            // Dropping the acquire future deletes its node in the background.
            out.send(Kind::Cancel);
            break;
        };
        let guard = match acquired {
            Ok(guard) => guard,
            Err(e) => {
                failed = Some(format!("acquire failed: {e}"));
                break;
            }
        };
        grants += 1;
        let mut hold = Duration::from_millis(rng.range(hold_ms));
        if long.swap(false, Ordering::SeqCst) {
            hold = session.client.session_timeout() * LONG_HOLD_TIMEOUTS;
        }
        out.send_at(
            t_grant,
            Kind::Grant {
                token: guard.fencing_token(),
                node: guard.node().to_owned(),
                lease_us: instant_us(guard.lease_deadline()),
                hold_us: hold.as_micros() as u64,
            },
        );
        let token = guard.fencing_token();
        let mut write = async |what: &str, lease_us: u64| -> Result<(), String> {
            if let Some(store) = &store {
                writes += 1;
                store_write(store, out, &args.label, (token, writes, what), lease_us).await?;
            }
            Ok(())
        };
        // The work: a write right after the grant, a write every
        // PROGRESS_EVERY of a long hold while the lock is held, and stops
        // while the connection is lost.
        if let Err(msg) = write("begin", instant_us(guard.lease_deadline())).await {
            failed = Some(msg);
            break;
        }
        let work_end = Instant::now() + hold;
        let mut progress = tokio::time::interval_at(Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        let worked = {
            let mut suspended = std::pin::pin!(guard.suspended());
            loop {
                // Biased: after a pause (SIGSTOP) longer than the hold, the
                // work is done before the loss is looked at, as in a process
                // that was stopped in the middle of its work.
                tokio::select! {
                    biased;
                    () = tokio::time::sleep_until(work_end) => break Worked::Done,
                    () = closed(&stdin) => break Worked::Done,
                    _ = progress.tick(), if hold > PROGRESS_EVERY => {
                        if guard.state() == HoldState::Held {
                            if let Err(msg) = write("progress", instant_us(guard.lease_deadline())).await {
                                failed = Some(msg);
                                break 'run;
                            }
                        }
                    }
                    state = &mut suspended => {
                        if state == HoldState::Lost {
                            break Worked::Lost;
                        }
                        let t = now_us();
                        out.send_at(t, Kind::Suspended { lease_us: instant_us(guard.lease_deadline()) });
                        // No work until the connection is back within the lease.
                        if guard.resumed().await != HoldState::Held {
                            break Worked::Lost;
                        }
                        let t = now_us();
                        out.send_at(t, Kind::Resumed { lease_us: instant_us(guard.lease_deadline()) });
                        suspended.set(guard.suspended());
                    }
                }
            }
        };
        if let Worked::Done = worked {
            // The result of the work, written without looking at the lease
            // first: a holder paused past its lease gets here too, and only
            // the store's fencing stops its stale write.
            if let Err(msg) = write("end", instant_us(guard.lease_deadline())).await {
                failed = Some(msg);
                break;
            }
        }
        let t = now_us();
        let settled = if matches!(worked, Worked::Lost) || guard.state() == HoldState::Lost {
            out.send_at(
                t,
                Kind::Lost {
                    lease_us: instant_us(guard.lease_deadline()),
                },
            );
            drop(guard);
            false
        } else {
            out.send_at(
                t,
                Kind::Release {
                    lease_us: instant_us(guard.lease_deadline()),
                },
            );
            match guard.release().await {
                Ok(()) => true,
                // The node went with the session: nothing left to release.
                Err(zk_rwlock::Error::SessionExpired | zk_rwlock::Error::SessionClosed) => false,
                Err(e) => {
                    failed = Some(format!("release failed: {e}"));
                    break;
                }
            }
        };
        if !settled {
            match settle(&mut session, &args, out, &stdin).await {
                Ok(true) => {}
                Ok(false) => break,
                Err(msg) => {
                    failed = Some(msg);
                    break;
                }
            }
        }
        let think = Duration::from_millis(rng.range(THINK_MS));
        tokio::select! {
            () = tokio::time::sleep(think) => {}
            () = tokio::time::sleep_until(end) => {}
            () = closed(&stdin) => {}
        }
    }
    if let Some(msg) = &failed {
        if !msg.is_empty() {
            out.send(Kind::Error { msg: msg.clone() });
        }
    } else {
        out.send(Kind::Done { grants });
    }
    session.close().await;
    if failed.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
