//! The ZooKeeper adapter: [`SharedLock`] and its guards.
//!
//! The adapter is thin: it carries the exchanges of [`crate::wire`] (the
//! requests each action of [`crate::contender`]'s machine sends, and how
//! their answers feed it back) on the client, the same interpreter the
//! simulation carries; the machine says what to do next (the run loop in
//! that module's documentation). No rule of a contender's life lives here.
//!
//! Its rooms: this module has the lock handle, its builder and every
//! public method of [`SharedLock`], in the order of use (connect, acquire,
//! look at the queue, revoke; `snapshot` and `revoke` do the work of the
//! last ones); `driver` runs an acquire (the machine's loop, and the
//! wait's watches and events); `carrier` carries each exchange on the
//! client (each request as the client's call, each answer back in the
//! core's terms); `held` has a contender's life before and after the grant
//! (`Pending`, `Held`: withdrawal, lease, release); `guard` the guard
//! types; `keeper` the watch a guard keeps on its node; `snapshot` and
//! `revoke` the listing of contenders and revocation requests; `validate`
//! the checks of paths and identities and the defaults.

use std::collections::HashSet;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing::warn;

use crate::background;
use crate::connect::{
    connect_client, connect_client_with, ConnectOptions, DEFAULT_CONNECT_TIMEOUT, DEFAULT_SESSION_TIMEOUT,
};
use crate::contender::Contender;
use crate::error::Error;
use crate::lease;
use crate::limits;
use crate::node_name::{Layout, Mode};
use crate::stats::{Recorder, Stats};
use crate::zk;

mod carrier;
mod driver;
mod guard;
mod held;
mod keeper;
mod notice;
mod queued;
mod reentrant;
mod revoke;
mod semaphore;
mod snapshot;
mod transaction;
mod validate;
mod wire;

pub use guard::{Guard, ReadGuard, WriteGuard};
pub use queued::{Place, Queued};
pub use reentrant::ReentrantLock;
pub use revoke::{Revoked, REVOKE_PAYLOAD};
pub use semaphore::{Permit, Semaphore, SemaphoreBuilder};
pub use snapshot::{ContenderState, QueueEntry, Snapshot};
pub use transaction::{CreateAcl, Transaction};
pub use validate::{validate_identity, validate_path};

pub(crate) use crate::contender::child_path;
pub(crate) use crate::error::with_retry;
pub(crate) use carrier::wire_error;
pub(crate) use wire::session_state;

/// How long an acquire may wait ([`crate::contender::Patience`]).
pub(crate) type Patience = crate::contender::Patience<tokio::time::Instant>;

/// Waiting until `timeout` from now ([`crate::contender::Patience::within`]).
fn deadline(timeout: Duration) -> Patience {
    Patience::within(timeout, |timeout| {
        tokio::time::Instant::now().checked_add(timeout)
    })
}

/// How long a giving-up acquire (timed out, `try_*` that found the lock
/// taken, or refused at the counter's limit) waits for its node's deletion
/// before it returns; the deletion goes on in the background after that
/// (for example until the client has reconnected). 250 ms.
pub const GIVE_UP_SLACK: Duration = Duration::from_millis(250);

/// How long `try_*` waits for ZooKeeper's answers (it never waits for
/// another contender): when no answer comes in time, for example while
/// the client is disconnected, it gives up with `Ok(None)`. 500 ms.
pub const TRY_TIMEOUT: Duration = Duration::from_millis(500);
use validate::{default_acls, peers_cannot_read, shared_default_identity};

/// A read/write lock on one lock directory, used through one ZooKeeper
/// client session.
///
/// Cheap to clone: clones share the client and the configuration. Any
/// number of tasks may acquire through one `SharedLock` (or through several
/// on the same client): each acquire creates its own contender node with
/// its own fencing token.
///
/// # Cancellation safety
///
/// Every acquire future may be dropped at any await point, for example by
/// `tokio::time::timeout(d, lock.write())`. The contender node it created
/// (or was creating) is then deleted in the background, through connection
/// loss, until the deletion is confirmed or the session is gone. Nothing is
/// left behind.
///
/// # Deadlocks
///
/// A task that holds a read guard and then asks the same lock for write
/// access waits for itself forever: its own read node precedes its write
/// node. This is the same as with `std::sync::RwLock` and
/// `tokio::sync::RwLock`. Release the read guard first, or use
/// [`SharedLock::write_timeout`] as an escape. Guards are never re-entered.
///
/// # Example
///
/// ```no_run
/// # async fn run() -> Result<(), zk_rwlock::Error> {
/// let lock = zk_rwlock::SharedLock::connect("127.0.0.1:2181", "/locks/orders").await?;
/// let guard = lock.write().await?;
/// // ... exclusive work, passing guard.fencing_token() to the store ...
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SharedLock {
    inner: Arc<Inner>,
}

struct Inner {
    client: zk::Client,
    path: String,
    /// Shared by every lock with the default identity (as are the default
    /// ACLs): a service may keep a lock per record, thousands of them.
    identity: Arc<str>,
    /// How this lock names its contender nodes.
    layout: Layout,
    acls: Arc<[zk::Acl]>,
    directory_acls: Arc<[zk::Acl]>,
    /// Foreign child names (and persistent contenders) already warned
    /// about, so each is logged once; made on the first warning (boxed:
    /// 8 bytes per lock until then, not a set's 48).
    #[allow(clippy::box_collection)]
    warned: Mutex<Option<Box<HashSet<String>>>>,
    /// Releases and deletions running in the background.
    tasks: Arc<background::Tasks>,
    /// What the acquires did.
    stats: Recorder,
    /// Subtracted from lease deadlines, see [`LockBuilder::follower_lag`].
    follower_lag: Duration,
    /// An acquire found the directory's data to be the lock's (empty or a
    /// release record): later acquires do not read it again.
    data_checked: AtomicBool,
    /// This session was seen to read its own node in this lock, on the
    /// connection counted this (`zk::Client::connections`) less one; 0: not
    /// known. Later waits on that connection set the watches on it and on a
    /// release marker in one request
    /// ([`zk_rwlock_core::contender::Contender::with_own_readable`]).
    own_readable: AtomicU64,
    /// See [`LockBuilder::release_markers`].
    release_markers: bool,
    /// See [`LockBuilder::max_listing_size`].
    listing_limit: Option<usize>,
    /// A counting semaphore's permits ([`crate::Semaphore`]); `None` for a lock.
    permits: Option<NonZeroU32>,
    /// The watches its waits left to fire, one per node.
    leftovers: driver::Leftovers,
}

impl Inner {
    /// A contender's machine for an acquire of this lock in `mode` (that
    /// may wait, `may_wait`; that tells its place, `placed`), on the
    /// session's connection `connection`: what earlier acquires learnt of
    /// the directory's data and, on that connection, of reading its own
    /// nodes, it knows.
    fn contender(
        &self,
        mode: Mode,
        may_wait: bool,
        token: uuid::Uuid,
        connection: u64,
        placed: bool,
    ) -> Contender {
        Contender::new(
            mode,
            may_wait,
            self.layout,
            token,
            self.client.session_id().0,
            !self.data_checked.load(Ordering::Relaxed),
        )
        .with_release_markers(self.release_markers)
        .with_own_readable(self.own_readable.load(Ordering::Relaxed) == connection + 1)
        .with_listing_limit(self.listing_limit)
        .with_place(placed)
        .with_permits(self.permits)
    }

    /// Keeps what `machine` learnt for later acquires: the directory's data
    /// checked, and reading its own node on the session's connection
    /// `connection`.
    fn learnt(&self, machine: &Contender, connection: u64) {
        if machine.data_checked() {
            self.data_checked.store(true, Ordering::Relaxed);
        }
        if machine.own_readable() {
            self.own_readable.store(connection + 1, Ordering::Relaxed);
        }
    }
}

impl Drop for Inner {
    /// The last handle of the lock (the lock itself, its clones, guards and
    /// acquires) is gone: wait, while connected and for at most
    /// [`FLUSH_TIMEOUT`], for the releases and deletions it left running in
    /// the background, so that a program that drops a guard and then its
    /// runtime, or returns from `main`, has released it.
    ///
    /// A session the library connected ([`connect_client`]) outlives the
    /// runtime that runs it (see [`crate::background`]): on the background
    /// thread, or outside the runtime that runs it, this thread just waits;
    /// on a worker of that runtime, the wait is a
    /// [`block_in_place`](tokio::task::block_in_place), and its other
    /// workers drive the session meanwhile; in that runtime as it shuts
    /// down, the session's move to the background thread waits instead.
    /// A session the caller connected is driven by the caller's runtime,
    /// which may need this very thread: inside a multi-thread runtime the
    /// wait is a `block_in_place`. Where that cannot be (a current-thread
    /// runtime, a runtime shutting down, no runtime), the pending work is
    /// left running and a warning says so: it completes only if the
    /// session's runtime goes on running, otherwise the nodes stay until
    /// the session expires.
    fn drop(&mut self) {
        // Nothing pending: nothing to wait for, and nothing to look up.
        if self.tasks.running() == 0 {
            return;
        }
        let client = &self.client;
        let connected = || client.state() == zk::SessionState::SyncConnected;
        let blocked = match background::how_to_wait(client.session_id().0) {
            background::Wait::Block => {
                self.tasks.wait_idle(FLUSH_TIMEOUT, connected);
                return;
            }
            background::Wait::AtTheMove(placement) => {
                if self.tasks.running() > 0 && !placement.flush_at_move(self.tasks.clone()) {
                    // Moved meanwhile: nothing of this runtime runs it now.
                    self.tasks.wait_idle(FLUSH_TIMEOUT, connected);
                }
                return;
            }
            background::Wait::BlockInPlace => self.block_in_place(connected),
            background::Wait::CallerSession => {
                if !connected() {
                    return;
                }
                background::may_block_for_caller_session().and_then(|()| self.block_in_place(connected))
            }
        };
        if let Err(why) = blocked {
            warn!(
                lock = %self.path,
                pending = self.tasks.running(),
                why,
                "the lock's last handle is dropped with releases or deletions pending on a session this \
                 process's runtime drives, and it cannot wait for them here: they complete only if that \
                 runtime keeps running, otherwise the nodes stay until the session expires (release \
                 guards with `release().await`, or drop the lock inside a multi-thread runtime)"
            );
        }
    }
}

impl Inner {
    /// Waits for the pending work with [`tokio::task::block_in_place`], so
    /// that the runtime's other workers drive the session meanwhile.
    fn block_in_place(&self, connected: impl Fn() -> bool) -> Result<(), &'static str> {
        if self.tasks.running() == 0 || !connected() {
            return Ok(());
        }
        // Tokio still refuses where the runtime entered is not the one
        // whose thread this is (a multi-thread runtime's handle entered
        // inside a current-thread runtime): caught, and said. Not tried
        // while unwinding, where a second panic would abort.
        if std::thread::panicking() {
            return Err("this thread is unwinding from a panic");
        }
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tokio::task::block_in_place(|| self.tasks.wait_idle(FLUSH_TIMEOUT, connected))
        }))
        .map_err(|_| "tokio refused to block this thread (the runtime entered does not run it)")
    }
}

use crate::background::FLUSH_TIMEOUT;

impl std::fmt::Debug for SharedLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLock")
            .field("path", &self.inner.path)
            .field("identity", &self.inner.identity)
            .field("session", &self.inner.client.session_id())
            .finish()
    }
}

/// Configures a [`SharedLock`]: identity and ACLs.
#[must_use]
pub struct LockBuilder {
    client: zk::Client,
    path: String,
    identity: Option<String>,
    /// `None`: the default, open to anyone.
    acls: Option<Vec<zk::Acl>>,
    /// `None`: the default, open to anyone.
    directory_acls: Option<Vec<zk::Acl>>,
    follower_lag: Duration,
    layout: Layout,
    release_markers: bool,
    metrics_path_label: bool,
    /// `None`: the default, the client's `max_request_size`.
    max_listing_size: Option<Option<usize>>,
    /// A counting semaphore's ([`crate::Semaphore`]).
    permits: Option<NonZeroU32>,
}

impl LockBuilder {
    /// The identity written into contender node names (default: this
    /// machine's host name); in a peer's [layout](Self::layout), into the
    /// nodes' data. Non-empty, at most
    /// [`MAX_IDENTITY_LEN`](crate::limits::MAX_IDENTITY_LEN) (255) bytes,
    /// without `/`, `@` or a character ZooKeeper refuses in a path (NUL,
    /// control characters, U+D800–U+F8FF, U+FFF0–U+FFFF, and anything above
    /// U+FFFF), not `__REVOKE__`: checked by [`build`](Self::build).
    pub fn identity(mut self, identity: &str) -> LockBuilder {
        self.identity = Some(identity.to_owned());
        self
    }

    /// How this lock names its contender nodes (default: [`Layout::Native`]):
    /// in a peer library's layout, Apache Curator or kazoo locking the same
    /// path see this lock's contenders as their own and exclude them. The
    /// lock recognises every layout's contenders whatever it writes (see
    /// [`crate::node_name`]). In a peer's layout the identity is written as
    /// the contender node's data, where kazoo keeps its identifier.
    /// [`Layout::CuratorMutex`] is exclusive only: read acquires fail with
    /// [`Error::UnsupportedMode`].
    pub fn layout(mut self, layout: Layout) -> LockBuilder {
        self.layout = layout;
        self
    }

    /// The ACLs of the contender nodes this lock creates, and (unless
    /// [`directory_acls`](Self::directory_acls) says otherwise) of the lock
    /// directory and its parents when this lock creates them. Default: open
    /// to anyone (`world:anyone`, all permissions).
    ///
    /// A creator-only ACL ([`zk::Acls::creator_all`]) needs an
    /// authenticated identity (credentials, see
    /// [`ConnectOptions`](crate::ConnectOptions)): without one the first
    /// create fails with `Error::ZooKeeper(zk::Error::InvalidAcl)`.
    pub fn acls(mut self, acls: &[zk::Acl]) -> LockBuilder {
        self.acls = Some(acls.to_vec());
        self
    }

    /// The ACLs of the lock directory and its parents, when this lock
    /// creates them (existing nodes keep theirs). Default: the contender
    /// nodes' ACLs ([`acls`](Self::acls)).
    ///
    /// Every contender needs READ (to list), CREATE (to queue), DELETE (to
    /// leave) and WRITE (the release record) on the directory, and whoever
    /// recycles a directory at the sequence counter's limit needs CREATE
    /// and DELETE on its parent: an identity refused any of them gets
    /// [`Error::NoAuth`](crate::Error::NoAuth). So the directory's ACL is
    /// the lock's trust boundary: an identity with those permissions can
    /// delete any contender (ZooKeeper checks DELETE on the parent, not on
    /// the node), plant contenders, and write a release record that names
    /// a waiter which then withdraws, granting the waiter behind it early.
    /// Identities that share a lock but protect their contender nodes from
    /// each other (`creator_all`) should get a directory whose ACL names
    /// exactly them (e.g. one `digest` entry each with READ, WRITE, CREATE
    /// and DELETE), made beforehand or given here.
    pub fn directory_acls(mut self, acls: &[zk::Acl]) -> LockBuilder {
        self.directory_acls = Some(acls.to_vec());
        self
    }

    /// How much later than the leader a follower of your ensemble may learn
    /// of, or report on, a session: `syncLimit × tickTime + tickTime` of the
    /// ensemble (12 s for ZooKeeper's sample configuration: syncLimit 5,
    /// tickTime 2 s). Default: zero, for a standalone server, or an
    /// ensemble whose followers stay in touch with their leader.
    ///
    /// A follower answers its clients' pings itself and reports them to the
    /// leader, which expires sessions, only in answer to the leader's own
    /// pings. A follower cut off from the leader, or whose leader stalls
    /// (a long garbage collection), goes on answering for up to
    /// `syncLimit × tickTime`, while the leader may expire the session on
    /// what it last heard. A non-zero lag makes every lease deadline of
    /// this lock earlier by the lag plus the client's ping interval (3/20
    /// of the session timeout), which keeps it before the leader's expiry
    /// in those cases too (see [`crate::lease`]). The session timeout must
    /// then be at least 2.25 times the lag, which leaves 0.38 of it or more
    /// for the lease.
    pub fn follower_lag(mut self, lag: Duration) -> LockBuilder {
        self.follower_lag = lag;
        self
    }

    /// Whether a waiter takes the release marker's event as the release of
    /// the writer it waits on (default: true), which hands the lock off in
    /// the release's notification, with no request (see the wire protocol
    /// in `docs/protocol.md`). Creating the marker takes CREATE on the lock
    /// directory, which every contender needs; a principal with CREATE but
    /// not DELETE on the directory (it cannot delete contender nodes, so it
    /// cannot otherwise break the lock) could create a marker while a
    /// waiter watches for it and, if the waited-on writer then gave up,
    /// have the waiter granted beside the holder. Where the directory's ACL
    /// gives CREATE to such principals, turn this off: waiters then read
    /// the release record after the deletion (one round trip more per
    /// hand-off in a chain of writers), which takes WRITE to forge. This
    /// lock's releases make the marker either way, for the other
    /// contenders.
    pub fn release_markers(mut self, on: bool) -> LockBuilder {
        self.release_markers = on;
        self
    }

    /// The largest listing of the lock directory, in bytes (see
    /// [`limits::listing_size`]), that an acquire queues behind; `None`: no
    /// limit. Default: the client's
    /// [`max_request_size`](zk::Client::max_request_size), ZooKeeper's
    /// `jute.maxbuffer` (1 MiB less one byte unless raised).
    ///
    /// Every contender lists the directory when it queues, and the listing
    /// carries every contender's name: ZooKeeper's Java clients (Curator,
    /// zkCli, this lock's Curator peer; not kazoo, which reads any length) refuse a
    /// reply larger than their `jute.maxbuffer` and reconnect, again and
    /// again, and queuing `n` contenders sends about `n * n / 2` names. So
    /// an acquire that finds the lock taken and the listing larger than the
    /// limit does not wait: it withdraws its node and fails with
    /// [`Error::ListingTooLarge`] (with 48-byte names, like those of a
    /// 2-byte identity, a 1 MiB listing carries 20,163 contenders; with a
    /// 20-byte identity, 14,978). Acquires already waiting are not turned away.
    /// Raise it together with `jute.maxbuffer` on every server and Java
    /// client; `None` only where no Java client lists the lock.
    pub fn max_listing_size(mut self, limit: Option<usize>) -> LockBuilder {
        self.max_listing_size = Some(limit);
        self
    }

    /// Whether this lock's metrics carry its path as the label `path`
    /// (default: false). Off, the metrics of every lock add up in the
    /// same series: a lock path is an unbounded label value (a service
    /// may keep a lock per record). See [`crate::metrics`]; nothing is
    /// recorded without the `metrics` feature.
    pub fn metrics_path_label(mut self, on: bool) -> LockBuilder {
        self.metrics_path_label = on;
        self
    }

    /// Makes the lock a counting semaphore's with `permits` permits
    /// ([`crate::Semaphore`]): its contenders are writers in the native
    /// layout whose names carry the count.
    pub(crate) fn permits(mut self, permits: NonZeroU32) -> LockBuilder {
        self.permits = Some(permits);
        self.layout = Layout::Native;
        self
    }

    /// Validates the configuration. Does no I/O.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`], [`Error::InvalidIdentity`];
    /// [`Error::RequestTooLarge`] if a request of the lock would be larger
    /// than the client's [`max_request_size`](zk::Client::max_request_size)
    /// (ZooKeeper's `jute.maxbuffer`, see [`crate::limits`]): too many or
    /// too long ACL entries;
    /// [`Error::LeaseTooShort`] if the session timeout is less than 2.25
    /// times the [follower lag](Self::follower_lag).
    pub fn build(self) -> Result<SharedLock, Error> {
        validate_path(&self.path)?;
        let timeout = self
            .client
            .session_lease()
            .map_or(self.client.session_timeout(), |l| l.timeout);
        if !lease::follower_lag_admissible(timeout, self.follower_lag) {
            return Err(Error::LeaseTooShort {
                session_timeout: timeout,
                follower_lag: self.follower_lag,
            });
        }
        let identity = match self.identity {
            Some(identity) => {
                validate_identity(&identity)?;
                Arc::from(identity)
            }
            None => shared_default_identity(),
        };
        let acls = match self.acls {
            Some(acls) => Arc::from(acls),
            None => default_acls(),
        };
        // Once per process: a service may build a lock per record.
        static WARNED_UNREADABLE: AtomicBool = AtomicBool::new(false);
        if peers_cannot_read(self.layout, &acls) && !WARNED_UNREADABLE.swap(true, Ordering::Relaxed) {
            warn!(
                path = %self.path,
                layout = %self.layout,
                "the contender nodes' ACLs give READ to their creator only: a Curator or kazoo \
                 contender queued behind one of them fails with NoAuth (it watches its \
                 predecessor by reading it); give the peers' identities READ"
            );
        }
        // The directory takes the contender nodes' ACL unless told
        // otherwise: whoever may write the directory may forge its release
        // record, delete its contenders (DELETE is the parent's permission)
        // or plant contenders in it.
        let directory_acls = match self.directory_acls {
            Some(acls) => Arc::from(acls),
            None => acls.clone(),
        };
        let chroot = match self.client.path() {
            "/" => "",
            chroot => chroot,
        };
        // A semaphore's names carry the count after the identity.
        let named = match self.permits {
            Some(permits) => format!("{identity}@{}{permits}", zk_rwlock_core::semaphore::PERMITS_TAG),
            None => identity.to_string(),
        };
        let size = limits::largest_request(&limits::LockShape {
            server_path_len: chroot.len() + self.path.len(),
            identity: &named,
            layout: self.layout,
            acls_len: limits::acls_len(&acls),
            directory_acls_len: limits::acls_len(&directory_acls),
        });
        let limit = self.client.max_request_size();
        if size > limit {
            return Err(Error::RequestTooLarge {
                path: self.path,
                size,
                limit,
            });
        }
        let stats = Recorder::new(self.metrics_path_label.then_some(self.path.as_str()));
        Ok(SharedLock {
            inner: Arc::new(Inner {
                client: self.client,
                path: self.path,
                identity,
                layout: self.layout,
                acls,
                directory_acls,
                warned: Mutex::new(None),
                tasks: Arc::default(),
                stats,
                follower_lag: self.follower_lag,
                data_checked: AtomicBool::new(false),
                own_readable: AtomicU64::new(0),
                release_markers: self.release_markers,
                listing_limit: self.max_listing_size.unwrap_or(Some(limit)),
                permits: self.permits,
                leftovers: driver::Leftovers::default(),
            }),
        })
    }
}

impl SharedLock {
    /// Connects a new client session to `servers` (a ZooKeeper connect
    /// string like `"127.0.0.1:2181,127.0.0.1:2182"`) and makes a lock on `path`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] before connecting; [`Error::Unreachable`] if no
    /// server answers within [`DEFAULT_CONNECT_TIMEOUT`];
    /// [`Error::ChrootMissing`] (naming `path`) if the chroot of `servers`
    /// does not exist.
    pub async fn connect(servers: &str, path: &str) -> Result<SharedLock, Error> {
        validate_path(path)?;
        let client = connect_client(servers, DEFAULT_SESSION_TIMEOUT, DEFAULT_CONNECT_TIMEOUT)
            .await
            .map_err(|e| e.for_lock(path))?;
        SharedLock::new(client, path)
    }

    /// A builder to set the identity and ACLs.
    pub fn builder(client: zk::Client, path: &str) -> LockBuilder {
        LockBuilder {
            client,
            path: path.to_owned(),
            identity: None,
            follower_lag: Duration::ZERO,
            acls: None,
            directory_acls: None,
            layout: Layout::Native,
            release_markers: true,
            metrics_path_label: false,
            max_listing_size: None,
            permits: None,
        }
    }

    /// A lock on `path` used through `client`, with the default identity and ACLs. No I/O.
    ///
    /// The guards' lease deadlines run on the session timeouts `client` was
    /// told. A client attached to an existing session
    /// (`zk::Connector::with_session`) was not told the timeout the session
    /// was created with, which a restarted server or a new leader restores:
    /// give locks a client that made its own session.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] if `path` is not a valid lock directory path.
    pub fn new(client: zk::Client, path: &str) -> Result<SharedLock, Error> {
        SharedLock::builder(client, path).build()
    }

    /// Acquires the lock for reading (shared), waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// [`Error::SessionExpired`] or [`Error::SessionClosed`] if the session
    /// ends while waiting; [`Error::Lost`] if someone deletes the contender
    /// node; [`Error::ChrootMissing`] if the client's chroot does not exist;
    /// [`Error::ListingTooLarge`] if the lock is taken and its directory's
    /// listing is over [`LockBuilder::max_listing_size`] (never for a
    /// `try_*`, which does not wait);
    /// [`Error::NoAuth`], [`Error::EphemeralDirectory`],
    /// [`Error::ZooKeeper`] for what the server refuses.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future leaves no node behind (see [`SharedLock`]).
    pub async fn read(&self) -> Result<ReadGuard, Error> {
        let held = self.acquire_held(Mode::Read, Patience::Forever).await?;
        held.map(ReadGuard::new).ok_or_else(unreachable_timeout)
    }

    /// Acquires the lock for writing (exclusive), waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future leaves no node behind (see [`SharedLock`]).
    pub async fn write(&self) -> Result<WriteGuard, Error> {
        let held = self.acquire_held(Mode::Write, Patience::Forever).await?;
        held.map(WriteGuard::new).ok_or_else(unreachable_timeout)
    }

    /// Acquires the lock for reading if that is possible without waiting;
    /// `Ok(None)` otherwise, with the contender node deleted again. See
    /// [`SharedLock::try_acquire`] for when the server does not answer.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub async fn try_read(&self) -> Result<Option<ReadGuard>, Error> {
        Ok(self
            .acquire_held(Mode::Read, Patience::None)
            .await?
            .map(ReadGuard::new))
    }

    /// Acquires the lock for writing if that is possible without waiting;
    /// `Ok(None)` otherwise, with the contender node deleted again. See
    /// [`SharedLock::try_acquire`] for when the server does not answer.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub async fn try_write(&self) -> Result<Option<WriteGuard>, Error> {
        Ok(self
            .acquire_held(Mode::Write, Patience::None)
            .await?
            .map(WriteGuard::new))
    }

    /// Acquires the lock for reading, waiting at most `timeout`; `Ok(None)`
    /// on timeout. See [`SharedLock::acquire_timeout`] for the deadline's
    /// precision.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub async fn read_timeout(&self, timeout: Duration) -> Result<Option<ReadGuard>, Error> {
        Ok(self
            .acquire_held(Mode::Read, deadline(timeout))
            .await?
            .map(ReadGuard::new))
    }

    /// Acquires the lock for writing, waiting at most `timeout`; `Ok(None)`
    /// on timeout. See [`SharedLock::acquire_timeout`] for the deadline's
    /// precision.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub async fn write_timeout(&self, timeout: Duration) -> Result<Option<WriteGuard>, Error> {
        Ok(self
            .acquire_held(Mode::Write, deadline(timeout))
            .await?
            .map(WriteGuard::new))
    }

    /// Acquires the lock in `mode`, waiting as long as it takes: [`SharedLock::read`]
    /// or [`SharedLock::write`] for code that chooses the mode at run time.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future leaves no node behind (see [`SharedLock`]).
    pub async fn acquire(&self, mode: Mode) -> Result<Guard, Error> {
        let held = self.acquire_held(mode, Patience::Forever).await?;
        held.map(|h| Guard::new(mode, h)).ok_or_else(unreachable_timeout)
    }

    /// Acquires the lock in `mode` if that is possible without waiting;
    /// `Ok(None)` otherwise, with the contender node deleted again.
    ///
    /// It never waits for another contender, and it waits for ZooKeeper's
    /// answers at most [`TRY_TIMEOUT`]: while the client is disconnected it
    /// returns `Ok(None)` after that (plus [`GIVE_UP_SLACK`]), and its node,
    /// if the create was sent, is deleted in the background once the client
    /// has reconnected.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub async fn try_acquire(&self, mode: Mode) -> Result<Option<Guard>, Error> {
        Ok(self
            .acquire_held(mode, Patience::None)
            .await?
            .map(|h| Guard::new(mode, h)))
    }

    /// Acquires the lock in `mode`, waiting at most `timeout`; `Ok(None)`
    /// on timeout, with the contender node deleted.
    ///
    /// The acquire always finishes its first look, the create of its node
    /// and the listing sent with it, and is granted if the lock is free at
    /// that look, however short `timeout` is: the deadline bounds the wait
    /// for other contenders, not the look. A zero `timeout` is exactly
    /// [`SharedLock::try_acquire`]. The look's answers are awaited until
    /// the deadline or for [`TRY_TIMEOUT`], whichever is later, so the
    /// call returns about [`GIVE_UP_SLACK`] after the later of the two (a
    /// few milliseconds of timer rounding aside),
    /// also while the client is disconnected. The node's deletion is
    /// awaited for that slack; if it is not confirmed by then (no server
    /// reachable), it goes on in the background and completes after the
    /// client reconnects, or with the session's end.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::read`].
    pub async fn acquire_timeout(&self, mode: Mode, timeout: Duration) -> Result<Option<Guard>, Error> {
        Ok(self
            .acquire_held(mode, deadline(timeout))
            .await?
            .map(|h| Guard::new(mode, h)))
    }

    /// What the acquires through this lock (and its clones) did so far:
    /// counts of grants, hand-offs, wake-ups, listings and retries, and
    /// wait times. Reading them costs no request. An acquire is counted
    /// when it ends: one whose future is dropped (cancelled) counts only
    /// in [`Stats::acquires`].
    pub fn stats(&self) -> Stats {
        self.inner.stats.get()
    }

    /// The contenders of this lock in queue order: who holds it, who waits
    /// on whom, with fencing tokens and creation times. Children that are
    /// not contenders are left out. A lock directory that does not exist
    /// has no contenders.
    ///
    /// # Errors
    ///
    /// [`Error::ChrootMissing`] if the client's chroot does not exist (not an
    /// empty queue); [`Error::NoAuth`], [`Error::SessionExpired`],
    /// [`Error::ZooKeeper`].
    pub async fn contenders(&self) -> Result<Vec<QueueEntry>, Error> {
        Ok(self.snapshot().await?.contenders)
    }

    /// Lists the lock directory: contenders in queue order (with their
    /// stats) and the children that are not contenders.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::contenders`].
    pub async fn snapshot(&self) -> Result<Snapshot, Error> {
        snapshot::take(self).await
    }

    /// Asks the holder of the contender node `node` to let go: writes
    /// [`REVOKE_PAYLOAD`] as the node's data (ZooKeeper's "revocable shared
    /// locks" recipe, with Apache Curator's payload). Cooperative: the
    /// holder learns it through its guard
    /// ([`WriteGuard::revocation_requested`](crate::WriteGuard::revocation_requested)) and decides; nothing is
    /// taken from it, and no one is granted before it releases (a data
    /// change on a contender node grants nothing).
    ///
    /// Permissions: revoking needs WRITE on the node (nodes created with
    /// an ACL such as [`zk::Acls::creator_all`] cannot be revoked by other
    /// identities: [`Error::NoAuth`]), and the holder sees a request only if
    /// it may READ its own node (on a node it cannot watch, a request is
    /// written but never seen).
    ///
    /// `node` is a child name of this lock's directory, or its full path.
    /// Writing to a node that still waits costs its owner a listing plus
    /// new watches; a request its owner saw while waiting stays recorded,
    /// and one it did not is seen by the guard's kept watch, which reads
    /// the node at the grant. Ok(false) if there is no
    /// such contender: the node no longer exists (released, withdrawn, or
    /// its session ended), or `node` does not name a contender node of this
    /// lock (another directory, a node further down such as a nested
    /// lock's, a name that does not parse), in which case nothing is sent.
    ///
    /// A kazoo node (`…__lock__…`, `…__rlock__…`) is never written to:
    /// kazoo has no revocation, and the node's data is its contender's
    /// identifier, which kazoo's `Lock.contenders()` returns. Ok(false),
    /// nothing sent. Curator nodes are asked: `__REVOKE__` is Curator's own
    /// revocation message, acted on by a Curator holder only if it made
    /// its lock revocable (`makeRevocable`).
    ///
    /// The request is retried through connection loss: if it landed but
    /// its answer was lost, and the holder released before the retry, the
    /// result is Ok(false) although the request was written (to a node now
    /// gone).
    ///
    /// # Errors
    ///
    /// [`Error::NoAuth`] if the node's ACL refuses WRITE;
    /// [`Error::SessionExpired`], [`Error::ZooKeeper`].
    pub async fn revoke(&self, node: &str) -> Result<bool, Error> {
        revoke::ask(self, node).await
    }

    /// Asks every current holder of the lock to let go (see
    /// [`SharedLock::revoke`]): one listing, then one request per holder,
    /// each asked even if another refused. Returns the full paths of the
    /// nodes asked that still existed ([`Revoked::asked`]), those whose
    /// ACL refused WRITE ([`Revoked::refused`], with
    /// [`Error::NoAuth`]) and the kazoo holders, which are not asked
    /// (kazoo has no revocation: [`Revoked::not_revocable`]). A holder
    /// granted after the listing is not asked.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::contenders`]; [`Error::SessionExpired`] or
    /// [`Error::ZooKeeper`] from a request (NoAuth is not an error here: it
    /// is reported in [`Revoked::refused`]).
    pub async fn revoke_holders(&self) -> Result<Revoked, Error> {
        revoke::ask_holders(self).await
    }

    /// Connects a new client session to `servers` with `options`
    /// (credentials, TLS, timeouts) and makes a lock on `path` with the
    /// default identity and ACLs. For other ACLs, connect with
    /// [`connect_client_with`] and use [`SharedLock::builder`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] before connecting, and those of [`connect_client_with`].
    pub async fn connect_with_options(
        servers: &str,
        path: &str,
        options: &ConnectOptions,
    ) -> Result<SharedLock, Error> {
        validate_path(path)?;
        let client = connect_client_with(servers, options)
            .await
            .map_err(|e| e.for_lock(path))?;
        SharedLock::new(client, path)
    }

    /// The lock directory path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// The identity written into contender node names.
    pub fn identity(&self) -> &str {
        &self.inner.identity
    }

    /// How this lock names its contender nodes (see [`LockBuilder::layout`]).
    pub fn layout(&self) -> Layout {
        self.inner.layout
    }

    /// The client session this lock uses.
    pub fn client(&self) -> &zk::Client {
        &self.inner.client
    }
}

pub(super) fn unreachable_timeout() -> Error {
    // `Patience::Forever` never returns `None`; this stays a typed error, not a panic.
    Error::ZooKeeper(zk::Error::UnexpectedError(
        "acquire without a deadline gave up".to_owned(),
    ))
}
