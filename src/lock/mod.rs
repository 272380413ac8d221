//! The ZooKeeper adapter: [`SharedLock`] and its guards.
//!
//! The adapter is thin: it creates, lists, watches and deletes nodes, and
//! feeds what comes back to [`crate::acquire`]'s state machine, which says
//! what to do next (the run loop in that module's documentation). No rule
//! of when a contender holds lives here.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;
use tracing::{debug, info, info_span, warn, Instrument};
use uuid::Uuid;

use crate::acquire::{Acquire, Action, Counts, Event, Failure, Input, NodeEvent, Record, Reply};
use crate::background;
use crate::error::{is_retryable, Error};
use crate::lease::{self, HoldState, Link, LossCause};
use crate::limits;
use crate::node_name::{Layout, Mode, NodeName};
use crate::ordering::{self, Decision};
use crate::stats::{End, Recorder, Stats};
use crate::zk;

mod keeper;

/// How long [`SharedLock::connect`] tries to reach a server: 10 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The session timeout [`SharedLock::connect`] asks for: 10 s (the server
/// may grant another, between 2 and 20 ticks).
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

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
}

impl Drop for Inner {
    /// The last handle of the lock (the lock itself, its clones, guards and
    /// acquires) is gone: wait, while connected and for at most
    /// [`FLUSH_TIMEOUT`], for the releases and deletions it left running in
    /// the background, so that a program that drops a guard and then its
    /// runtime, or returns from `main`, has released it.
    ///
    /// For a session on the library's background thread ([`connect_client`])
    /// this thread just waits. A session the caller connected is driven by
    /// the caller's runtime, which may need this very thread: inside a
    /// multi-thread runtime the wait is a
    /// [`block_in_place`](tokio::task::block_in_place), and its other
    /// workers drive the session meanwhile. Where that cannot be (a
    /// current-thread runtime, a runtime shutting down, no runtime), the
    /// pending work is left running and a warning says so: it completes
    /// only if the session's runtime goes on running, otherwise the nodes
    /// stay until the session expires.
    fn drop(&mut self) {
        let client = &self.client;
        let connected = || client.state() == zk::SessionState::SyncConnected;
        if background::runs_session(client.session_id().0) {
            self.tasks.wait_idle(FLUSH_TIMEOUT, connected);
            return;
        }
        let pending = self.tasks.running();
        if pending == 0 || !connected() {
            return;
        }
        let blocked = background::may_block_for_caller_session().and_then(|()| {
            // Tokio still refuses where the runtime entered is not the one
            // whose thread this is (a multi-thread runtime's handle entered
            // inside a current-thread runtime): caught, and said below. Not
            // tried while unwinding, where a second panic would abort.
            if std::thread::panicking() {
                return Err("this thread is unwinding from a panic");
            }
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                tokio::task::block_in_place(|| self.tasks.wait_idle(FLUSH_TIMEOUT, connected))
            }))
            .map_err(|_| "tokio refused to block this thread (the runtime entered does not run it)")
        });
        match blocked {
            Ok(()) => {}
            Err(why) => warn!(
                lock = %self.path,
                pending,
                why,
                "the lock's last handle is dropped with releases or deletions pending on a session this \
                 process's runtime drives, and it cannot wait for them here: they complete only if that \
                 runtime keeps running, otherwise the nodes stay until the session expires (release \
                 guards with `release().await`, or drop the lock inside a multi-thread runtime)"
            ),
        }
    }
}

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
}

impl LockBuilder {
    /// The identity written into contender node names (default: this
    /// machine's host name); in a peer's [layout](Self::layout), into the
    /// nodes' data. Non-empty, at most
    /// [`MAX_IDENTITY_LEN`](crate::limits::MAX_IDENTITY_LEN) (255) bytes,
    /// without `/`, `@` or NUL: checked by [`build`](Self::build).
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
        // A lag above 4/9 of the timeout leaves a lease of less than 0.39 of
        // it: too close to the gaps between two answers of a healthy session
        // (3/20 of the timeout between pings, checked every 1/20) for a
        // holder to act on, and for `exec`'s kill margin.
        if self.follower_lag * 9 > timeout * 4 || lease::span(timeout, self.follower_lag).is_none() {
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
        let size = limits::largest_request(&limits::LockShape {
            server_path_len: chroot.len() + self.path.len(),
            identity: &identity,
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
                stats: Recorder::default(),
                follower_lag: self.follower_lag,
                data_checked: AtomicBool::new(false),
            }),
        })
    }
}

/// Checks that `path` can name a lock directory: absolute, not the root,
/// no empty, `.` or `..` segments, no trailing `/`, no NUL, at most
/// [`MAX_PATH_LEN`](crate::limits::MAX_PATH_LEN) (4096) bytes, and no segment
/// that parses as a contender node name (`<host>-<R|W>-<seq>`, see
/// [`node_name::is_contender_name`](crate::node_name::is_contender_name)).
/// Does no I/O.
///
/// The last rule protects the lock one level up: the lock directory and
/// its parents are created as persistent nodes, and a persistent child
/// named like a contender would count there as a contender that never
/// leaves, blocking that lock until someone deletes it.
///
/// # Errors
///
/// [`Error::InvalidPath`], whose message quotes the path and says what is allowed.
pub fn validate_path(path: &str) -> Result<(), Error> {
    let bad = |reason| {
        Err(Error::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if path.is_empty() {
        return bad("it is empty");
    }
    if !path.starts_with('/') {
        return bad("it does not start with '/'");
    }
    if path == "/" {
        return bad("it is the root node itself");
    }
    if path.contains('\0') {
        return bad("it contains NUL");
    }
    if path.ends_with('/') {
        return bad("it ends with '/'");
    }
    if path.len() > limits::MAX_PATH_LEN {
        return bad("it is longer than 4096 bytes: every request and watch of the lock carries it");
    }
    for segment in path[1..].split('/') {
        match segment {
            "" => return bad("it has an empty segment ('//')"),
            "." | ".." => return bad("it has a '.' or '..' segment"),
            _ => {}
        }
    }
    let mut segments = path[1..].split('/').rev();
    if segments.next().is_some_and(crate::node_name::is_contender_name) {
        return bad(
            "its last segment looks like a contender node name (`<host>-<R|W>-<seq>`): \
             the lock one level up would count this lock's persistent directory as a contender \
             that holds it forever",
        );
    }
    if segments.any(crate::node_name::is_contender_name) {
        return bad(
            "one of its segments looks like a contender node name (`<host>-<R|W>-<seq>`): \
             the lock one level above that segment would count its persistent node as a contender \
             that holds it forever",
        );
    }
    Ok(())
}

/// Checks that `identity` can be written into contender node names:
/// non-empty, at most [`MAX_IDENTITY_LEN`](crate::limits::MAX_IDENTITY_LEN)
/// (255) bytes (every listing of the directory carries every contender's
/// name, see [`crate::limits`]), without `/`, `@` or NUL, and not
/// [`REVOKE_PAYLOAD`] (the Curator and kazoo layouts write the identity as
/// the node's data, where that value would read as a revocation request).
/// Does no I/O.
///
/// # Errors
///
/// [`Error::InvalidIdentity`], whose message quotes the identity and says what is allowed.
pub fn validate_identity(identity: &str) -> Result<(), Error> {
    let bad = |reason| {
        Err(Error::InvalidIdentity {
            identity: identity.to_owned(),
            reason,
        })
    };
    if identity.is_empty() {
        return bad("it is empty");
    }
    if identity.len() > limits::MAX_IDENTITY_LEN {
        return bad(
            "it is longer than 255 bytes: every contender's node name carries it, and a listing of \
             the lock's contenders must fit in one reply",
        );
    }
    if identity.contains('/') {
        return bad("it contains '/'");
    }
    if identity.contains('@') {
        return bad("it contains '@'");
    }
    if identity.contains('\0') {
        return bad("it contains NUL");
    }
    if identity.as_bytes() == REVOKE_PAYLOAD {
        return bad("it is the revocation request `__REVOKE__`, which would ask the holder to let go");
    }
    Ok(())
}

/// Whether contender nodes made with `acls` in `layout` would be
/// unreadable to a peer library's contenders: a peer layout, and no ACL
/// entry giving READ to anyone but the creator (scheme `auth`). Curator and
/// kazoo watch their predecessor by reading it (getData / get).
fn peers_cannot_read(layout: Layout, acls: &[zk::Acl]) -> bool {
    layout != Layout::Native
        && !acls
            .iter()
            .any(|acl| acl.scheme() != "auth" && acl.permission().has(zk::Permission::READ))
}

/// How a lock in `layout` creates its directory: a container, which the
/// server removes once it is empty, except in kazoo's layout: kazoo checks
/// its lock path once per lock object and does not recreate it, so a
/// reaped directory would fail kazoo's next acquire (kazoo's own
/// directories are persistent).
fn directory_mode(layout: Layout) -> zk::CreateMode {
    match layout {
        Layout::Kazoo => zk::CreateMode::Persistent,
        _ => zk::CreateMode::Container,
    }
}

/// [`default_identity`], read once per process.
fn shared_default_identity() -> Arc<str> {
    static IDENTITY: OnceLock<Arc<str>> = OnceLock::new();
    IDENTITY.get_or_init(|| Arc::from(default_identity())).clone()
}

/// The default ACLs (open to anyone), one copy per process.
fn default_acls() -> Arc<[zk::Acl]> {
    static ACLS: OnceLock<Arc<[zk::Acl]>> = OnceLock::new();
    ACLS.get_or_init(|| Arc::from(zk::Acls::anyone_all().to_vec()))
        .clone()
}

/// This machine's host name, made safe for node names (and cut to
/// [`MAX_IDENTITY_LEN`](limits::MAX_IDENTITY_LEN) bytes, which a host name
/// read from the environment may exceed).
pub(crate) fn default_identity() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let mut cleaned = String::new();
    for c in raw.trim().chars() {
        let c = if matches!(c, '/' | '@' | '\0') || c.is_control() {
            '_'
        } else {
            c
        };
        if cleaned.len() + c.len_utf8() > limits::MAX_IDENTITY_LEN {
            break;
        }
        cleaned.push(c);
    }
    if cleaned.is_empty() {
        "localhost".to_owned()
    } else {
        cleaned
    }
}

/// How long an acquire may wait.
#[derive(Clone, Copy)]
enum Patience {
    /// Give up at once if the lock is not free (`try_*`).
    None,
    /// Give up at this instant.
    Until(Instant),
    /// Wait as long as it takes.
    Forever,
}

impl SharedLock {
    /// A lock on `path` used through `client`, with the default identity and ACLs. No I/O.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] if `path` is not a valid lock directory path.
    pub fn new(client: zk::Client, path: &str) -> Result<SharedLock, Error> {
        SharedLock::builder(client, path).build()
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
        }
    }

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

    /// Acquires the lock for reading (shared), waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// [`Error::SessionExpired`] or [`Error::SessionClosed`] if the session
    /// ends while waiting; [`Error::Lost`] if someone deletes the contender
    /// node; [`Error::ChrootMissing`] if the client's chroot does not exist;
    /// [`Error::NoAuth`], [`Error::EphemeralDirectory`],
    /// [`Error::ZooKeeper`] for what the server refuses.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future leaves no node behind (see [`SharedLock`]).
    pub async fn read(&self) -> Result<ReadGuard, Error> {
        let held = self.acquire_held(Mode::Read, Patience::Forever).await?;
        held.map(ReadGuard).ok_or_else(unreachable_timeout)
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
        held.map(WriteGuard).ok_or_else(unreachable_timeout)
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
            .map(ReadGuard))
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
            .map(WriteGuard))
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
            .map(ReadGuard))
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
            .map(WriteGuard))
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
    pub async fn contenders(&self) -> Result<Vec<Contender>, Error> {
        Ok(self.snapshot().await?.contenders)
    }

    /// Asks the holder of the contender node `node` to let go: writes
    /// [`REVOKE_PAYLOAD`] as the node's data (ZooKeeper's "revocable shared
    /// locks" recipe, with Apache Curator's payload). Cooperative: the
    /// holder learns it through its guard
    /// ([`WriteGuard::revocation_requested`]) and decides; nothing is
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
        let dir = self.inner.path.as_str();
        let name = match node.strip_prefix(dir).and_then(|rest| rest.strip_prefix('/')) {
            Some(name) => name,
            None if node.starts_with('/') => "",
            None => node,
        };
        // Nothing is written to a node that is not a contender of this lock:
        // a name with `/` is a node further down (a nested lock's), which
        // `NodeName` would parse (its host part may contain `/`).
        let parsed = match name.parse::<NodeName>() {
            Ok(parsed) if !name.contains('/') => parsed,
            _ => {
                debug!(node, "not a contender node of this lock: nothing to revoke");
                return Ok(false);
            }
        };
        // kazoo has no revocation, and its node data is the contender's
        // identifier (kazoo's `contenders()` reads it): nothing is written.
        if parsed.layout() == Layout::Kazoo {
            debug!(
                node,
                "a kazoo contender node: kazoo has no revocation, nothing sent"
            );
            return Ok(false);
        }
        let path = child_path(dir, name);
        let client = &self.inner.client;
        // Idempotent: retried through connection loss.
        match with_retry(client, || client.set_data(&path, REVOKE_PAYLOAD, None)).await {
            Ok(_) => {
                info!(node = %path, "revocation requested");
                Ok(true)
            }
            Err(zk::Error::NoNode) => Ok(false),
            Err(e) => Err(Error::from_zk(e, &path)),
        }
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
        let mut revoked = Revoked::default();
        for contender in self.contenders().await? {
            if contender.state != ContenderState::Holds {
                continue;
            }
            if contender.name.layout() == Layout::Kazoo {
                revoked.not_revocable.push(contender.path);
                continue;
            }
            match self.revoke(&contender.path).await {
                Ok(true) => revoked.asked.push(contender.path),
                Ok(false) => {}
                Err(e @ Error::NoAuth { .. }) => revoked.refused.push((contender.path, e)),
                Err(e) => return Err(e),
            }
        }
        Ok(revoked)
    }

    /// Lists the lock directory: contenders in queue order (with their
    /// stats) and the children that are not contenders.
    ///
    /// # Errors
    ///
    /// As [`SharedLock::contenders`].
    pub async fn snapshot(&self) -> Result<Snapshot, Error> {
        let client = &self.inner.client;
        let dir = &self.inner.path;
        let children = match with_retry(client, || client.list_children(dir)).await {
            Ok(children) => Some(children),
            Err(zk::Error::NoNode) => match missing_chroot(client, Some(dir)).await {
                Some(e) => return Err(e),
                None => None,
            },
            Err(e) => return Err(Error::from_zk(e, dir)),
        };
        self.describe(children).await
    }

    /// Classifies a listing of the lock directory (`None`: the directory
    /// does not exist) with [`ordering::queue`] and reads each contender's
    /// stat. All stat requests are sent before any reply is awaited.
    async fn describe(&self, children: Option<Vec<String>>) -> Result<Snapshot, Error> {
        let client = &self.inner.client;
        let dir = &self.inner.path;
        let exists = children.is_some();
        let children = children.unwrap_or_default();
        let queue = ordering::queue(&children);
        let paths: Vec<String> = queue.contenders.iter().map(|p| child_path(dir, p.name)).collect();
        let stats: Vec<_> = paths.iter().map(|p| client.check_stat(p)).collect();
        let mut contenders = Vec::with_capacity(paths.len());
        for ((place, path), stat) in queue.contenders.iter().zip(&paths).zip(stats) {
            let stat = match stat.await {
                Ok(stat) => stat,
                Err(e) if is_retryable(&e) => None,
                Err(e) => return Err(Error::from_zk(e, path)),
            };
            let Ok(name) = place.name.parse::<NodeName>() else {
                continue;
            };
            contenders.push(Contender {
                path: path.clone(),
                state: match place.decision {
                    Decision::Granted => ContenderState::Holds,
                    Decision::Wait { watch, .. } => ContenderState::WaitsOn(watch.to_owned()),
                    _ => ContenderState::Exhausted,
                },
                fencing_token: stat.as_ref().map(|s| s.czxid),
                created: stat
                    .as_ref()
                    .map(|s| UNIX_EPOCH + Duration::from_millis(s.ctime.max(0) as u64)),
                session: stat.as_ref().map(|s| s.ephemeral_owner),
                name,
            });
        }
        Ok(Snapshot {
            exists,
            contenders,
            foreign: queue.foreign.iter().map(|s| (*s).to_owned()).collect(),
        })
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
    /// The deadline holds whatever the connection does: the call returns at
    /// most [`GIVE_UP_SLACK`] after it, also while the client is
    /// disconnected. The node's deletion is awaited for that long; if it is
    /// not confirmed by then (no server reachable), it goes on in the
    /// background and completes after the client reconnects, or with the
    /// session's end.
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

    /// The acquire loop: create, snapshot, decide, act.
    async fn acquire_held(&self, mode: Mode, patience: Patience) -> Result<Option<Held>, Error> {
        let span = info_span!("acquire", lock = %self.inner.path, mode = %mode);
        let started = Instant::now();
        self.inner.stats.started();
        let mut counts = Counts::default();
        let result = match self
            .acquire_inner(mode, patience, &mut counts)
            .instrument(span)
            .await
        {
            // Neither the directory nor its parents could be created: a
            // missing chroot is the one cause the server does not name.
            Err(Error::ZooKeeper(zk::Error::NoNode)) => {
                Err(missing_chroot(&self.inner.client, Some(&self.inner.path))
                    .await
                    .unwrap_or(Error::ZooKeeper(zk::Error::NoNode)))
            }
            result => result,
        };
        let end = match &result {
            Ok(Some(_)) => End::Granted,
            Ok(None) => End::GaveUp,
            Err(_) => End::Failed,
        };
        self.inner.stats.record(end, counts, started.elapsed());
        result
    }

    /// What the acquires through this lock (and its clones) did so far:
    /// counts of grants, hand-offs, wake-ups, listings and retries, and
    /// wait times. Reading them costs no request. An acquire is counted
    /// when it ends: one whose future is dropped (cancelled) counts only
    /// in [`Stats::acquires`].
    pub fn stats(&self) -> Stats {
        self.inner.stats.get()
    }

    /// The driver of [`Acquire`]: performs its actions and feeds back what
    /// came of them (the run loop of [`crate::acquire`]).
    async fn acquire_inner(
        &self,
        mode: Mode,
        patience: Patience,
        counts: &mut Counts,
    ) -> Result<Option<Held>, Error> {
        let inner = &self.inner;
        let client = &inner.client;
        let dir = inner.path.as_str();
        let token = Uuid::new_v4();
        let Some(prefix) = inner.layout.prefix(&inner.identity, token, mode) else {
            return Err(Error::UnsupportedMode {
                layout: inner.layout,
                mode,
            });
        };
        // Every session state change from here on: after a reconnect, the
        // client re-registers watches in no particular order, so events of
        // our own node and of the watched node may come in either order.
        let states = client.state_watcher();
        // From here on, dropping this future deletes whatever node it made.
        let mut pending = Pending::new(self.inner.clone(), token);
        let until = match patience {
            Patience::Until(until) => Some(until),
            Patience::None => Some(Instant::now() + TRY_TIMEOUT),
            Patience::Forever => None,
        };
        let mut machine = Acquire::new(mode, !matches!(patience, Patience::None));
        let Some(created) = before(until, self.create(&prefix, &mut pending)).await else {
            debug!("timed out while creating the contender node");
            return pending.give_up().await;
        };
        let (me, seq, czxid, children) = created?;
        let node = child_path(dir, &me);
        debug!(node = %node, "created contender node");
        pending.seq = seq;
        let mut driver = Driver {
            lock: self,
            states,
            node,
            until,
            own_watch: None,
            own_revoked: false,
            watched: None,
            watched_path: String::new(),
            last_error: None,
            ended: None,
        };
        let mut action = machine.created(&me, children.as_deref());
        if machine.saw_foreign() {
            if let Some(children) = &children {
                self.warn_foreign(children);
            }
        }
        drop(children);
        loop {
            *counts = machine.counts();
            action = match action {
                Action::Grant { mark } => {
                    debug!(node = %driver.node, handoff = machine.counts().handoff, "granted");
                    let own_watch = driver.own_watch.take();
                    let held = self.grant(
                        &mut pending,
                        mark,
                        driver.node,
                        (seq, czxid),
                        own_watch,
                        driver.own_revoked,
                    );
                    return Ok(Some(held));
                }
                Action::GiveUp => {
                    debug!(node = %driver.node, "giving up");
                    return pending.give_up().await;
                }
                Action::Fail(failure) => return Err(driver.failed(failure, &mut pending).await),
                action => driver.perform(&mut machine, action).await,
            };
        }
    }

    /// Creates the contender node, pipelined with the first listing of the
    /// directory. Returns the node's name, its sequence, its czxid, and the
    /// listing if it is known to contain the node. Creates the directory
    /// when it is missing, also when it vanishes between attempts (it is
    /// removed when empty). Until an acquire of this lock has found the
    /// directory's data to be the lock's (the listing's stat says whether
    /// there is any; if there is, one read), a directory holding data that
    /// is not the lock's is refused (the node withdrawn) with
    /// [`Error::DirectoryHoldsData`].
    async fn create(
        &self,
        prefix: &str,
        pending: &mut Pending,
    ) -> Result<(String, i32, i64, Option<Vec<String>>), Error> {
        let inner = &self.inner;
        let client = &inner.client;
        let dir = inner.path.as_str();
        let prefix_path = child_path(dir, prefix);
        let acls = zk::Acls::new(&inner.acls);
        let options = zk::CreateMode::EphemeralSequential.with_acls(acls);
        // kazoo keeps its identifier as the node's data, Curator the
        // client's address: a peer layout gets the identity.
        let data = match inner.layout {
            Layout::Native => &[][..],
            _ => inner.identity.as_bytes(),
        };
        let mut missing = 0;
        loop {
            pending.creating = true;
            // Both requests leave now; the server answers a session's requests
            // in order, so the listing already contains the new node. The
            // listing's stat says whether the directory holds data.
            let create = client.create(&prefix_path, data, &options);
            let list = client.get_children(dir);
            let (me, czxid, list) = match create.await {
                Ok((stat, seq)) => (
                    format!("{prefix}{:010}", seq.into_i64() as i32),
                    stat.czxid,
                    Some(list),
                ),
                Err(zk::Error::NoNode) => {
                    drop(list);
                    pending.creating = false;
                    missing += 1;
                    if missing > MAX_DIRECTORY_ATTEMPTS {
                        return Err(Error::from_zk(zk::Error::NoNode, dir));
                    }
                    self.make_dir().await?;
                    continue;
                }
                Err(e) if is_retryable(&e) => {
                    drop(list);
                    // The create may have been applied: look for the token.
                    let Some((me, czxid)) = find_own(client, dir, pending.token, inner.layout).await? else {
                        continue;
                    };
                    debug!("found own node after connection loss during create");
                    (me, czxid, None)
                }
                Err(e) => {
                    pending.creating = false;
                    return Err(Error::from_zk(e, dir));
                }
            };
            pending.node = Some(child_path(dir, &me));
            pending.creating = false;
            let (children, data_length) = match list {
                Some(list) => match list.await {
                    Ok((children, stat)) => (Some(children), Some(stat.data_length)),
                    Err(_) => (None, None),
                },
                None => (None, None),
            };
            if !inner.data_checked.load(Ordering::Relaxed) {
                self.check_data(data_length, pending).await?;
            }
            let seq = me
                .parse::<NodeName>()
                .map(|n| n.seq())
                .unwrap_or(ordering::SEQUENCE_LIMIT);
            if seq >= ordering::RECYCLE_THRESHOLD {
                warn_threshold(dir, seq);
            }
            let children = children.filter(|c| c.contains(&me));
            return Ok((me, seq, czxid, children));
        }
    }

    /// Checks that the lock directory's data is the lock's (nothing or a
    /// release record, see [`node_name::is_lock_directory_data`]): no
    /// request if the listing said it holds none (`data_length` 0),
    /// otherwise one read. If it is not, withdraws the node just created
    /// and fails: each release of the write lock would overwrite that data.
    ///
    /// [`node_name::is_lock_directory_data`]: crate::node_name::is_lock_directory_data
    async fn check_data(&self, data_length: Option<i32>, pending: &mut Pending) -> Result<(), Error> {
        let inner = &self.inner;
        let client = &inner.client;
        let dir = inner.path.as_str();
        let data = match data_length {
            Some(0) => Ok(Vec::new()),
            _ => with_retry(client, || client.get_data(dir))
                .await
                .map(|(data, _)| data),
        };
        match data {
            Ok(data) if crate::node_name::is_lock_directory_data(&data) => {
                inner.data_checked.store(true, Ordering::Relaxed);
                Ok(())
            }
            Ok(data) => {
                warn!(
                    lock = %dir,
                    bytes = data.len(),
                    "the lock directory holds data that is not a release record: not using it as a lock"
                );
                pending.give_up().await?;
                Err(Error::DirectoryHoldsData { path: dir.to_owned() })
            }
            Err(e) => {
                pending.give_up().await?;
                Err(Error::from_zk(e, dir))
            }
        }
    }

    /// Creates the lock directory: its parents as persistent nodes, the
    /// directory itself as a container node, which the server removes once
    /// it is empty (so its sequence counter starts again from 0). Servers
    /// before 3.6, and locks in kazoo's layout, get a persistent directory. The directory is tried first,
    /// alone: its parents usually exist (a service locking per record makes
    /// many directories under one parent), and a create that finds its node
    /// there is still a write the server logs.
    async fn make_dir(&self) -> Result<(), Error> {
        let client = &self.inner.client;
        let dir = self.inner.path.as_str();
        let acls = zk::Acls::new(&self.inner.directory_acls);
        match self.create_dir_node(acls).await {
            Err(zk::Error::NoNode) => {}
            result => return result.map_err(|e| Error::from_zk(e, dir)),
        }
        if let Some(parent) = dir
            .rsplit_once('/')
            .map(|(parent, _)| parent)
            .filter(|p| !p.is_empty())
        {
            let options = zk::CreateMode::Persistent.with_acls(acls);
            match with_retry(client, || client.mkdir(parent, &options)).await {
                Ok(()) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(Error::from_zk(e, parent)),
            }
        }
        match self.create_dir_node(acls).await {
            // A parent removed meanwhile: the caller's create finds the
            // directory missing and comes back (a bounded number of times).
            Ok(()) | Err(zk::Error::NoNode) => Ok(()),
            Err(e) => Err(Error::from_zk(e, dir)),
        }
    }

    /// Creates the lock directory's node, its parent existing: a container
    /// (persistent on servers before 3.6, and in kazoo's layout, see
    /// [`directory_mode`]). A directory already there is success.
    async fn create_dir_node(&self, acls: zk::Acls<'_>) -> Result<(), zk::Error> {
        let client = &self.inner.client;
        let dir = self.inner.path.as_str();
        let container = directory_mode(self.inner.layout).with_acls(acls);
        match with_retry(client, || client.create(dir, &[], &container)).await {
            Ok(_) | Err(zk::Error::NodeExists) => Ok(()),
            Err(zk::Error::Unimplemented) => {
                let persistent = zk::CreateMode::Persistent.with_acls(acls);
                match with_retry(client, || client.create(dir, &[], &persistent)).await {
                    Ok(_) | Err(zk::Error::NodeExists) => Ok(()),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Hands a granted node to a guard: the pending clean-up is disarmed.
    fn grant(
        &self,
        pending: &mut Pending,
        mark: bool,
        node: String,
        seq_czxid: (i32, i64),
        own_watch: Option<WatchFuture>,
        revoked: bool,
    ) -> Held {
        pending.forget();
        Held::new(self.inner.clone(), mark, node, seq_czxid, own_watch, revoked)
    }

    /// The error for a contender node that vanished.
    fn gone_error(&self, node: &str) -> Error {
        Error::from_session_state(self.inner.client.state()).unwrap_or_else(|| Error::Lost {
            node: node.to_owned(),
        })
    }

    /// True the first time this lock is asked about `key`: what is logged
    /// under it is logged once.
    fn first_time(&self, key: &str) -> bool {
        self.inner
            .warned
            .lock()
            .is_ok_and(|mut warned| warned.get_or_insert_with(Box::default).insert(key.to_owned()))
    }

    /// Logs each child that is not a contender, once per name.
    fn warn_foreign(&self, children: &[String]) {
        for child in children {
            if crate::node_name::parse_parts(child).is_err() && self.first_time(child) {
                warn!(
                    lock = %self.inner.path,
                    child = %child,
                    "ignoring a child that is not a contender node in any known layout (native \
                     `<host>-<R|W>-<seq>`, Curator `_c_<uuid>-__READ__|__WRIT__|lock-<seq>`, \
                     kazoo `<hex>__rlock__|__lock__<seq>`)"
                );
            }
        }
    }

    /// Logs, once per lock, that a watched contender cannot be read by this
    /// identity: the server would not deliver its watch events, so it is
    /// polled. (Once per lock, not per node: every acquire waits on a new
    /// node, and the set of names warned about must not grow without end.)
    fn warn_unreadable(&self, path: &str) {
        if self.first_time("\0unreadable") {
            warn!(
                node = %path,
                "cannot read the contender node to wait on (its ACL): polling it instead of watching; \
                 give every contender READ on contender nodes (e.g. world:anyone:r) for prompt hand-offs"
            );
        }
    }

    /// Logs, once per node, that a watched contender is not ephemeral: it
    /// stays, and blocks the lock, until someone deletes it.
    fn warn_persistent(&self, path: &str) {
        if self.first_time(path) {
            warn!(node = %path, "a contender node in the queue is not ephemeral: it blocks the lock until someone deletes it");
        }
    }
}

/// The lock directory at one moment, from [`SharedLock::snapshot`].
///
/// Non-exhaustive: fields may be added. Outside this crate, start from
/// `Snapshot::default()` and set the fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// Whether the lock directory exists.
    pub exists: bool,
    /// Contenders in queue order (head first).
    pub contenders: Vec<Contender>,
    /// Children that are not contender nodes (ignored by the lock).
    pub foreign: Vec<String>,
}

/// What [`SharedLock::revoke_holders`] did: the holders asked and those
/// whose node refused the request.
///
/// Non-exhaustive: fields may be added.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Revoked {
    /// Full paths of the nodes asked (the request was written), in queue
    /// order.
    pub asked: Vec<String>,
    /// Full paths of the holders' nodes whose ACL refused WRITE to this
    /// client, each with its [`Error::NoAuth`]: those holders were not
    /// asked.
    pub refused: Vec<(String, Error)>,
    /// Full paths of the holders' nodes in kazoo's layout, in queue order:
    /// not asked, nothing written (kazoo has no revocation, and the node's
    /// data is its contender's identifier).
    pub not_revocable: Vec<String>,
}

/// One contender of a lock, as seen by [`SharedLock::contenders`].
///
/// Non-exhaustive: fields may be added. Outside this crate, build one with
/// [`Contender::new`] and set the fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Contender {
    /// Full path of the contender node.
    pub path: String,
    /// The parsed node name: identity, token, mode, sequence.
    pub name: NodeName,
    /// Holds the lock, or waits on a node.
    pub state: ContenderState,
    /// The node's czxid, if it still existed when read.
    pub fencing_token: Option<i64>,
    /// When the node was created (server clock), if it still existed when read.
    pub created: Option<SystemTime>,
    /// The id of the session that owns the node, if it still existed when
    /// read: the node's `ephemeralOwner`, `0` for a node that is not
    /// ephemeral (see [`Contender::is_persistent`]).
    pub session: Option<i64>,
}

impl Contender {
    /// The contender `name` in the lock directory `dir`, in `state`, with
    /// no stat (`fencing_token`, `created` and `session` are `None`, as
    /// for a node deleted before its stat was read).
    pub fn new(dir: &str, name: NodeName, state: ContenderState) -> Contender {
        Contender {
            path: child_path(dir, &name.to_string()),
            name,
            state,
            fencing_token: None,
            created: None,
            session: None,
        }
    }

    /// True for a node that is not ephemeral (`session` is `Some(0)`): no
    /// session's request for the lock, but a persistent node that has a
    /// contender's name (made by hand or by another tool). The lock still
    /// counts it as a contender, one that never leaves: it blocks everyone
    /// queued after it until someone deletes it.
    pub fn is_persistent(&self) -> bool {
        self.session == Some(0)
    }
}

/// Whether a contender holds the lock or waits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContenderState {
    /// Holds the lock.
    Holds,
    /// Waits on the node with this child name.
    WaitsOn(String),
    /// Cannot be ordered (its sequence is at ZooKeeper's limit, negative, or
    /// shared with another node): it is never granted, and its owner
    /// withdraws it (see [`Error::SequenceExhausted`]).
    Exhausted,
}

/// Connects a new client session to `servers` (a connect string like
/// `"127.0.0.1:2181,127.0.0.1:2182"`), asking for `session_timeout`, and
/// gives up after `connect_timeout` or as soon as every server has refused.
///
/// The session runs on the library's background thread, not on the
/// caller's runtime: it outlives that runtime, so that guards dropped as
/// the runtime shuts down (as `#[tokio::main]` returns) are still released
/// (see [`SharedLock`]).
///
/// A chroot in `servers` (`host:port/app`) must exist: one `exists` request
/// checks it once connected. For credentials and TLS:
/// [`connect_client_with`](crate::connect_client_with).
///
/// # Errors
///
/// [`Error::InvalidConnectString`] for a malformed connect string;
/// [`Error::Unreachable`] if no session is established in time;
/// [`Error::ChrootMissing`] if the chroot does not exist.
pub async fn connect_client(
    servers: &str,
    session_timeout: Duration,
    connect_timeout: Duration,
) -> Result<zk::Client, Error> {
    let options = crate::ConnectOptions::new()
        .session_timeout(session_timeout)
        .connect_timeout(connect_timeout);
    crate::connect_client_with(servers, &options).await
}

/// [`Error::ChrootMissing`] (naming the lock directory `path`, if given) if
/// `client` has a chroot and it does not exist; `None` if it exists, there
/// is none, or the check fails (the caller's own error stands then).
pub(crate) async fn missing_chroot(client: &zk::Client, path: Option<&str>) -> Option<Error> {
    let chroot = client.path();
    if chroot == "/" {
        return None;
    }
    // Under a chroot, `/` is the chroot itself.
    match with_retry(client, || client.check_stat("/")).await {
        Ok(None) => Some(Error::ChrootMissing {
            chroot: chroot.to_owned(),
            path: path.map(str::to_owned),
        }),
        _ => None,
    }
}

/// A background task that is cancelled when its handle is dropped.
pub(crate) struct AbortOnDrop<T>(pub(crate) tokio::task::JoinHandle<T>);

impl<T> std::future::Future for AbortOnDrop<T> {
    type Output = Result<T, tokio::task::JoinError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What the driver of one acquire holds besides the machine: the watches'
/// futures, the deadline, and what it saw last.
struct Driver<'a> {
    lock: &'a SharedLock,
    states: zk::StateWatcher,
    /// The full path of our node.
    node: String,
    until: Option<Instant>,
    /// The pending watch on our own node.
    own_watch: Option<WatchFuture>,
    /// Our node's data was the revocation request when one of its watches
    /// was set (see [`REVOKE_PAYLOAD`]; never reset, as the guard's flag):
    /// the guard starts with the flag.
    own_revoked: bool,
    /// The pending watch on the watched node.
    watched: Option<WatchFuture>,
    watched_path: String,
    /// The error behind the last failed request, for `Failure::Request`.
    last_error: Option<Error>,
    /// The terminal session state seen, if any.
    ended: Option<zk::SessionState>,
}

impl Driver<'_> {
    /// Performs one action that is not an end, and returns the machine's next action.
    async fn perform(&mut self, machine: &mut Acquire, action: Action) -> Action {
        let client = &self.lock.inner.client;
        let dir = self.lock.inner.path.as_str();
        match action {
            Action::List => {
                let listed = before(self.until, with_retry(client, || client.list_children(dir))).await;
                self.pump(machine);
                match listed {
                    None => machine.step(Input::Deadline),
                    Some(Ok(children)) => {
                        let next = machine.step(Input::Listed(Reply::Ok(&children)));
                        if machine.saw_foreign() {
                            self.lock.warn_foreign(&children);
                        }
                        next
                    }
                    Some(Err(e)) => {
                        let reply = self.reply(e, dir);
                        machine.step(Input::Listed(reply))
                    }
                }
            }
            Action::SetWatches { own, watched } => {
                self.watched_path = child_path(dir, &watched);
                self.watched = None;
                if own {
                    self.own_watch = None;
                }
                // Data watches (`getData`): on a missing node no watch is
                // left behind. Both requests leave now.
                let own_request = own.then(|| client.get_and_watch_data(&self.node));
                let watch_request = client.get_and_watch_data(&self.watched_path);
                let requests = async {
                    let own = match own_request {
                        Some(request) => Some(request.await),
                        None => None,
                    };
                    (own, watch_request.await)
                };
                // Changes of state before the watches were set do not matter.
                while state_now(&mut self.states).is_some() {}
                let Some((own, watched)) = before(self.until, requests).await else {
                    return machine.step(Input::Deadline);
                };
                let watched = match watched {
                    Ok((_, stat, watcher)) => {
                        if stat.ephemeral_owner == 0 {
                            self.lock.warn_persistent(&self.watched_path);
                        }
                        self.watched = Some(Box::pin(watcher.changed()));
                        Reply::Ok(())
                    }
                    Err(e) => {
                        if e == zk::Error::NoAuth {
                            self.lock.warn_unreadable(&self.watched_path);
                        }
                        let path = self.watched_path.clone();
                        self.reply(e, &path)
                    }
                };
                // The machine looks at our own node's answer first: its
                // error is the one a failure reports.
                let own = own.map(|own| match own {
                    Ok((data, _, watcher)) => {
                        // Sticky, as the guard's flag: a later write to the
                        // node does not take back a request seen.
                        self.own_revoked |= is_revocation(&data);
                        self.own_watch = Some(Box::pin(watcher.changed()));
                        Reply::Ok(())
                    }
                    Err(e) => {
                        let node = self.node.clone();
                        self.reply(e, &node)
                    }
                });
                self.pump(machine);
                let next = machine.step(Input::WatchesSet { own, watched });
                if let Action::Wait { poll } = next {
                    debug!(node = %self.node, watch = %self.watched_path, polling = poll, "waiting");
                }
                next
            }
            Action::Wait { poll } => {
                let input = self.wait(poll).await;
                debug!(node = %self.node, input = ?input, "woke up");
                machine.step(input)
            }
            Action::Rewatch { .. } => {
                let again = before(self.until, client.get_and_watch_data(&self.watched_path)).await;
                self.pump(machine);
                match again {
                    None => machine.step(Input::Deadline),
                    Some(Ok((_, _, watcher))) => {
                        debug!(node = %self.node, watch = %self.watched_path, "data written to the watched node, which is still there: waiting on");
                        self.watched = Some(Box::pin(watcher.changed()));
                        machine.step(Input::Rewatched(Reply::Ok(())))
                    }
                    Some(Err(e)) => {
                        let path = self.watched_path.clone();
                        let reply = self.reply(e, &path);
                        machine.step(Input::Rewatched(reply))
                    }
                }
            }
            Action::ReadRecord { watched } => {
                // One read request, with our own node.
                let node = self.node.as_str();
                let verify = || async {
                    let mut reads = client.new_multi_reader();
                    reads.add_get_data(dir)?;
                    reads.add_get_data(node)?;
                    reads.commit().await
                };
                let read = before(self.until, with_retry(client, verify)).await;
                self.pump(machine);
                let reply = match read {
                    None => return machine.step(Input::Deadline),
                    Some(Ok(reads)) => match reads.as_slice() {
                        [zk::MultiReadResult::Data { data: record, .. }, mine] => Reply::Ok(Record {
                            names_watched: record.as_slice() == watched.as_bytes(),
                            own: match mine {
                                zk::MultiReadResult::Data { .. } => Reply::Ok(()),
                                zk::MultiReadResult::Error { err } => error_reply(err),
                                _ => Reply::Failed,
                            },
                        }),
                        _ => Reply::Failed,
                    },
                    Some(Err(e)) => {
                        debug!(node = %self.node, error = %e, "cannot read the release record: listing again");
                        error_reply(&e)
                    }
                };
                machine.step(Input::RecordRead(reply))
            }
            Action::CheckOwn => {
                debug!(node = %self.node, "checking our own node before the hand-off");
                let node = self.node.as_str();
                let checked = before(self.until, with_retry(client, || client.check_stat(node))).await;
                self.pump(machine);
                match checked {
                    None => machine.step(Input::Deadline),
                    Some(Ok(stat)) => machine.step(Input::OwnChecked(Reply::Ok(stat.is_some()))),
                    Some(Err(e)) => {
                        let node = self.node.clone();
                        let reply = self.reply(e, &node);
                        machine.step(Input::OwnChecked(reply))
                    }
                }
            }
            Action::Grant { .. } | Action::GiveUp | Action::Fail(_) => action,
        }
    }

    /// Waits for the next event of an acquire that waits.
    async fn wait(&mut self, poll: bool) -> Input<'static> {
        let client = &self.lock.inner.client;
        let own = async {
            match self.own_watch.as_mut() {
                Some(changed) => changed.await,
                None => std::future::pending().await,
            }
        };
        let watched = async {
            if poll {
                return match poll_until_gone(client, &self.watched_path).await {
                    Ok(()) => (Event::Watched(NodeEvent::Deleted), client.state()),
                    Err(e) => {
                        let error = Error::from_zk(e, &self.watched_path);
                        let event = if error.is_session_over() {
                            Event::SessionEnded
                        } else {
                            Event::Watched(NodeEvent::Failed)
                        };
                        self.last_error = Some(error);
                        (event, client.state())
                    }
                };
            }
            match self.watched.as_mut() {
                Some(changed) => {
                    let event = changed.await;
                    (Event::Watched(node_event(&event)), event.session_state)
                }
                // Nothing to wait on: a fresh snapshot decides.
                None => (Event::Watched(NodeEvent::Other), client.state()),
            }
        };
        let deadline = async {
            match self.until {
                Some(until) => tokio::time::sleep_until(until).await,
                None => std::future::pending().await,
            }
        };
        let states = &mut self.states;
        // The session state an event carries: a watch hears of the
        // session's end before `client.state()` says so.
        let (input, own_fired, watched_fired, state) = tokio::select! {
            biased;
            event = own => (Input::Event(Event::Own(node_event(&event))), true, false, event.session_state),
            state = states.changed() => (Input::Event(session_event(state)), false, false, state),
            (event, state) = watched => (Input::Event(event), false, !poll, state),
            () = deadline => (Input::Deadline, false, false, client.state()),
        };
        if own_fired {
            self.own_watch = None;
        }
        if watched_fired {
            self.watched = None;
        }
        if let Input::Event(
            Event::SessionEnded
            | Event::Own(NodeEvent::SessionEnded)
            | Event::Watched(NodeEvent::SessionEnded),
        ) = input
        {
            self.ended = Some(state)
                .filter(|state| Error::from_session_state(*state).is_some())
                .or(Some(client.state()));
        }
        input
    }

    /// Tells the machine what arrived while a request was in flight: our own
    /// node's watch, and the session's state changes.
    fn pump(&mut self, machine: &mut Acquire) {
        if let Some(event) = take_ready(&mut self.own_watch) {
            if Error::from_session_state(event.session_state).is_some() {
                self.ended = Some(event.session_state);
            }
            machine.event(Event::Own(node_event(&event)));
        }
        while let Some(state) = state_now(&mut self.states) {
            let event = session_event(state);
            if event == Event::SessionEnded {
                self.ended = Some(state);
            }
            machine.event(event);
        }
    }

    /// The machine's view of a failed request; the error is kept for `Failure::Request`.
    fn reply<T>(&mut self, e: zk::Error, path: &str) -> Reply<T> {
        let reply = error_reply(&e);
        self.last_error = Some(Error::from_zk(e, path));
        reply
    }

    /// The error for a failed acquire.
    async fn failed(&mut self, failure: Failure, pending: &mut Pending) -> Error {
        let lock = self.lock;
        match failure {
            Failure::Lost => {
                pending.forget();
                lock.gone_error(&self.node)
            }
            Failure::SessionEnded => {
                pending.forget();
                self.ended
                    .and_then(Error::from_session_state)
                    .unwrap_or_else(|| lock.gone_error(&self.node))
            }
            Failure::Exhausted => {
                warn!(node = %self.node, "the lock directory's sequence counter is used up: withdrawing");
                let _ = pending.give_up().await;
                Error::SequenceExhausted {
                    path: lock.inner.path.clone(),
                }
            }
            Failure::InvalidName => Error::ZooKeeper(zk::Error::UnexpectedError(format!(
                "the contender node {} is not named as a contender",
                self.node
            ))),
            Failure::Request => self.last_error.take().unwrap_or_else(|| {
                Error::ZooKeeper(zk::Error::UnexpectedError("the acquire failed".to_owned()))
            }),
        }
    }
}

/// The machine's view of an error.
fn error_reply<T>(e: &zk::Error) -> Reply<T> {
    match e {
        zk::Error::NoNode => Reply::NoNode,
        zk::Error::NoAuth => Reply::NoAuth,
        e if is_retryable(e) => Reply::Retry,
        _ => Reply::Failed,
    }
}

/// The machine's view of a watch event.
fn node_event(event: &zk::WatchedEvent) -> NodeEvent {
    if Error::from_session_state(event.session_state).is_some() {
        return NodeEvent::SessionEnded;
    }
    match event.event_type {
        zk::EventType::NodeDeleted => NodeEvent::Deleted,
        zk::EventType::NodeDataChanged => NodeEvent::DataChanged,
        _ => NodeEvent::Other,
    }
}

/// The machine's view of a session state change.
fn session_event(state: zk::SessionState) -> Event {
    if Error::from_session_state(state).is_some() {
        Event::SessionEnded
    } else {
        Event::Interrupted
    }
}

/// The shortest and the longest pause between two checks of a node that
/// cannot be watched.
const POLL_INTERVALS: (Duration, Duration) = (Duration::from_millis(10), Duration::from_millis(200));

/// Checks with `exists` (which needs no permission) until the node at
/// `path` is gone, pausing between checks from 10 ms up to 200 ms. Fails
/// with the last error once checks fail for good: a non-retryable error,
/// or retryable ones for twice the session timeout.
async fn poll_until_gone(client: &zk::Client, path: &str) -> Result<(), zk::Error> {
    let mut pause = POLL_INTERVALS.0;
    let mut failing_since: Option<Instant> = None;
    loop {
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(POLL_INTERVALS.1);
        match client.check_stat(path).await {
            Ok(None) => return Ok(()),
            Ok(Some(_)) => failing_since = None,
            Err(e) if is_retryable(&e) => {
                let since = *failing_since.get_or_insert_with(Instant::now);
                if since.elapsed() > client.session_timeout() * 2 {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// A pending watch: its event, once it fires.
type WatchFuture = std::pin::Pin<Box<dyn std::future::Future<Output = zk::WatchedEvent> + Send>>;

/// The event of a watch that has fired (checked without waiting); a
/// finished watch is taken out, as it must not be polled again.
fn take_ready(watch: &mut Option<WatchFuture>) -> Option<zk::WatchedEvent> {
    let changed = watch.as_mut()?;
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match changed.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(event) => {
            *watch = None;
            Some(event)
        }
        std::task::Poll::Pending => None,
    }
}

/// The next session state change already seen, without waiting.
fn state_now(states: &mut zk::StateWatcher) -> Option<zk::SessionState> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match std::future::Future::poll(std::pin::pin!(states.changed()), &mut cx) {
        std::task::Poll::Ready(state) => Some(state),
        std::task::Poll::Pending => None,
    }
}

/// Runs `fut` unless the deadline passes first (`None` then).
async fn before<T>(until: Option<Instant>, fut: impl std::future::Future<Output = T>) -> Option<T> {
    match until {
        None => Some(fut.await),
        Some(until) => tokio::time::timeout_at(until, fut).await.ok(),
    }
}

/// Waiting until `timeout` from now; forever if that instant is beyond
/// the clock's range (`Duration::MAX`).
fn deadline(timeout: Duration) -> Patience {
    Instant::now()
        .checked_add(timeout)
        .map_or(Patience::Forever, Patience::Until)
}

fn unreachable_timeout() -> Error {
    // `Patience::Forever` never returns `None`; this stays a typed error, not a panic.
    Error::ZooKeeper(zk::Error::UnexpectedError(
        "acquire without a deadline gave up".to_owned(),
    ))
}

fn child_path(dir: &str, name: &str) -> String {
    let mut path = String::with_capacity(dir.len() + 1 + name.len());
    path.push_str(dir);
    path.push('/');
    path.push_str(name);
    path
}

/// Runs an idempotent request again after a retryable error (see
/// [`is_retryable`]), until it gets the server's answer or the session is
/// over. A request sent while the client is disconnected waits for the
/// reconnection; once the session is over, requests fail with its terminal
/// error. Retries are spaced out (up to 100 ms apart), and they stop after
/// twice the session timeout: by then the client has declared the session
/// expired if it could not reconnect, so an error still coming back means
/// the client's session task is gone (its runtime shut down), which ends
/// the session just the same.
async fn with_retry<T, F, Fut>(client: &zk::Client, op: F) -> Result<T, zk::Error>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, zk::Error>>,
{
    let started = Instant::now();
    let mut pause = Duration::ZERO;
    loop {
        match op().await {
            Err(e) if is_retryable(&e) => {
                if started.elapsed() > client.session_timeout() * 2 {
                    debug!(error = %e, "giving up retrying: the session cannot be reached");
                    return Err(e);
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).clamp(Duration::from_millis(1), Duration::from_millis(100));
            }
            result => return result,
        }
    }
}

/// Finds this session's node carrying `token` in `layout` after a
/// connection loss (`<identity>@<token>` native, `_c_<token>-` Curator,
/// the token's hex kazoo): syncs the server with the leader first, so that
/// a create still in flight elsewhere is seen. Nodes with the token owned
/// by another session (an earlier, expired one) are not ours.
async fn find_own(
    client: &zk::Client,
    dir: &str,
    token: Uuid,
    layout: Layout,
) -> Result<Option<(String, i64)>, Error> {
    let session = client.session_id().0;
    let _ = with_retry(client, || client.sync(dir)).await;
    let children = match with_retry(client, || client.list_children(dir)).await {
        Ok(children) => children,
        Err(zk::Error::NoNode) => return Ok(None),
        Err(e) => return Err(Error::from_zk(e, dir)),
    };
    let mut mine: Vec<(String, i64)> = Vec::new();
    for child in children {
        let Ok(name) = child.parse::<NodeName>() else {
            continue;
        };
        if name.token() != Some(token) || name.layout() != layout {
            continue;
        }
        let path = child_path(dir, &child);
        match with_retry(client, || client.check_stat(&path)).await {
            Ok(Some(stat)) if stat.ephemeral_owner == session => mine.push((child, stat.czxid)),
            Ok(_) => {}
            Err(e) => return Err(Error::from_zk(e, &path)),
        }
    }
    // Two nodes with one token can only come from a retried create: keep
    // the first, delete the others.
    mine.sort_by_key(|(_, czxid)| *czxid);
    let mut found = mine.into_iter();
    let first = found.next();
    for (extra, _) in found {
        delete_node(client, &child_path(dir, &extra)).await?;
    }
    Ok(first)
}

/// Deletes a node, retrying until the deletion is confirmed or the session
/// is over. A missing node counts as deleted.
async fn delete_node(client: &zk::Client, path: &str) -> Result<(), Error> {
    match with_retry(client, || client.delete(path, None)).await {
        Ok(()) | Err(zk::Error::NoNode) => Ok(()),
        Err(e) => Err(Error::from_zk(e, path)),
    }
}

/// Recycles the lock directory if it is empty, once its sequence counter
/// is near the limit (see [`ordering::needs_recycling`]): one transaction
/// deletes it and creates it again, as a persistent node with the same
/// ACL, so its counter starts from 0 and whatever access an operator (or
/// another identity) gave it stays as it was. Fails harmlessly (and
/// silently) if someone has queued in the meantime or the directory is
/// gone; if its ACL cannot be read, the directory is left alone.
async fn recycle_dir(client: &zk::Client, dir: &str) {
    let acl = match client.get_acl(dir).await {
        Ok((acl, stat)) if stat.num_children == 0 => acl,
        Ok(_) => return,
        Err(e) => {
            debug!(lock = %dir, error = %e, "cannot read the lock directory's ACL: not recycling it");
            return;
        }
    };
    let recycle = async {
        let mut multi = client.new_multi_writer();
        multi.add_delete(dir, None)?;
        multi.add_create(
            dir,
            &[],
            &zk::CreateMode::Persistent.with_acls(zk::Acls::new(&acl)),
        )?;
        multi.commit().await.map_err(zk::Error::from)
    };
    match recycle.await {
        Ok(_) => {
            warn!(lock = %dir, "recycled the idle lock directory: its sequence counter was near its limit and starts from 0 again")
        }
        Err(e) => debug!(lock = %dir, error = %e, "the lock directory stays"),
    }
}

/// Logs, once per directory in this process, that its sequence counter has
/// passed [`ordering::RECYCLE_THRESHOLD`].
fn warn_threshold(dir: &str, seq: i32) {
    static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let Ok(mut warned) = WARNED.lock() else {
        return;
    };
    if warned.get_or_insert_with(HashSet::new).insert(dir.to_owned()) {
        warn!(
            lock = %dir,
            seq,
            limit = ordering::SEQUENCE_LIMIT,
            "the lock directory's sequence counter is near its limit: the directory is deleted and recreated as soon as it is idle"
        );
    }
}

/// Releases a writer's held node with the release record: one transaction
/// writes the node's name as the lock directory's data and deletes the node.
/// The contender watching the node reads the record after the deletion: a
/// node named there held the lock and released it (see
/// [`ordering`](crate::ordering)). Retried until answered or the session is
/// over; the server's `NoNode` is passed on (see [`release_node`]). Where
/// the server refuses the record (an ACL, a quota), a plain deletion.
async fn release_marked(
    client: &zk::Client,
    dir: &str,
    path: &str,
    answer_lost: &AtomicBool,
) -> Result<(), zk::Error> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let release = || {
        noting(answer_lost, async {
            let mut multi = client.new_multi_writer();
            multi.add_set_data(dir, name.as_bytes(), None)?;
            multi.add_delete(path, None)?;
            multi.commit().await.map_err(zk::Error::from)
        })
    };
    match with_retry(client, release).await {
        Ok(_) => Ok(()),
        Err(zk::Error::NoNode) => Err(zk::Error::NoNode),
        Err(e) if Error::from_zk(e.clone(), path).is_session_over() => Err(e),
        // The server refused the record (no WRITE on the directory, a
        // quota, ...): the transaction, deletion included, did not happen.
        // A plain deletion releases all the same; successors list again.
        Err(e) => {
            debug!(node = %path, error = %e, "the release record was refused: deleting without it");
            with_retry(client, || noting(answer_lost, client.delete(path, None))).await
        }
    }
}

/// Runs one request of a release, noting in `answer_lost` when its answer
/// was lost to a broken connection ([`is_retryable`]): it may have been
/// applied.
async fn noting<T>(
    answer_lost: &AtomicBool,
    request: impl std::future::Future<Output = Result<T, zk::Error>>,
) -> Result<T, zk::Error> {
    let result = request.await;
    if matches!(&result, Err(e) if is_retryable(e)) {
        answer_lost.store(true, Ordering::Relaxed);
    }
    result
}

/// Releases a held node, with the release record or not (see `Held::mark`),
/// retrying through connection loss until the deletion is answered or the
/// session is over, and recycles the directory if its counter is near the
/// limit.
///
/// A node the server says does not exist was deleted by someone else, and
/// the lock was lost before this release: [`Error::Lost`]. Unless a request
/// of this release was sent before and its answer lost: that one may have
/// deleted it, and the node counts as released (see
/// [`lease::released_by_us`]).
async fn release_node(client: &zk::Client, dir: &str, mark: bool, path: &str, seq: i32) -> Result<(), Error> {
    let answer_lost = AtomicBool::new(false);
    let deleted = if mark {
        release_marked(client, dir, path, &answer_lost).await
    } else {
        with_retry(client, || noting(&answer_lost, client.delete(path, None))).await
    };
    let result = match deleted {
        Ok(()) => Ok(()),
        Err(zk::Error::NoNode) if lease::released_by_us(false, true, answer_lost.load(Ordering::Relaxed)) => {
            debug!(node = %path, "the node was gone on a retry: released by the attempt whose answer was lost");
            Ok(())
        }
        Err(zk::Error::NoNode) => Err(Error::Lost {
            node: path.to_owned(),
        }),
        Err(e) => Err(Error::from_zk(e, path)),
    };
    if result.is_ok() && ordering::needs_recycling(seq) {
        recycle_dir(client, dir).await;
    }
    result
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

/// How often an acquire recreates a lock directory that vanishes under it
/// (it is removed when empty) before it reports `NoNode`.
const MAX_DIRECTORY_ATTEMPTS: u32 = 10;

/// How long the last handle of a lock waits, while connected, for the
/// releases and deletions it started in the background.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// A contender node that has not been handed to a guard yet. Dropping it
/// deletes the node in the background (cancellation safety).
struct Pending {
    inner: Arc<Inner>,
    token: Uuid,
    /// Full path, once known.
    node: Option<String>,
    /// The node's sequence, once known.
    seq: i32,
    /// A create request may have been sent whose result is not known.
    creating: bool,
    armed: bool,
}

impl Pending {
    fn new(inner: Arc<Inner>, token: Uuid) -> Pending {
        Pending {
            inner,
            token,
            node: None,
            seq: 0,
            creating: false,
            armed: true,
        }
    }

    /// The node now belongs to a guard, or is known to be gone.
    fn forget(&mut self) {
        self.armed = false;
    }

    /// Withdraws the request: starts deleting the node now, waits for the
    /// deletion at most [`GIVE_UP_SLACK`], and lets it go on in the
    /// background after that. Reports a deletion the server refused.
    async fn give_up(&mut self) -> Result<Option<Held>, Error> {
        if let Some(removal) = self.start_removal() {
            if let Ok(Ok(Err(e))) = tokio::time::timeout(GIVE_UP_SLACK, removal).await {
                return Err(e);
            }
        }
        Ok(None)
    }

    /// Starts the deletion of the node, if there is one to delete. The
    /// delete request leaves at once, so any later request of this session
    /// (a new acquire) is answered after it.
    fn start_removal(&mut self) -> Option<tokio::task::JoinHandle<Result<(), Error>>> {
        if !std::mem::take(&mut self.armed) || (self.node.is_none() && !self.creating) {
            return None;
        }
        let client = self.inner.client.clone();
        let dir = self.inner.path.clone();
        let layout = self.inner.layout;
        let (token, node, creating, seq) = (self.token, self.node.take(), self.creating, self.seq);
        let first = node.as_deref().map(|node| client.delete(node, None));
        self.inner.tasks.spawn(async move {
            let result = match (node, first) {
                (Some(node), Some(first)) => match first.await {
                    Ok(()) | Err(zk::Error::NoNode) => Ok(Some(seq)),
                    Err(e) if is_retryable(&e) => delete_node(&client, &node).await.map(|()| Some(seq)),
                    Err(e) => Err(Error::from_zk(e, &node)),
                },
                _ if creating => match find_own(&client, &dir, token, layout).await {
                    Ok(Some((me, _))) => {
                        let seq = me.parse::<NodeName>().map_or(seq, |n| n.seq());
                        delete_node(&client, &child_path(&dir, &me))
                            .await
                            .map(|()| Some(seq))
                    }
                    Ok(None) => Ok(None),
                    Err(e) => Err(e),
                },
                _ => Ok(None),
            };
            match result {
                Ok(Some(seq)) if ordering::needs_recycling(seq) => {
                    recycle_dir(&client, &dir).await;
                    Ok(())
                }
                Ok(_) => Ok(()),
                // The session is over: its ephemeral nodes are gone with it.
                Err(e) if e.is_session_over() => Ok(()),
                Err(e) => {
                    warn!(lock = %dir, error = %e, "could not delete the node of a withdrawn acquire");
                    Err(e)
                }
            }
        })
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.start_removal();
    }
}

/// The state common to read and write guards.
struct Held {
    inner: Arc<Inner>,
    /// Release with the release record (the mark): a writer that had to
    /// wait. Only a contender that saw others before this writer can take
    /// the lock on its record;
    /// a writer granted on its first listing had none before it, so its
    /// successor's decision already says its deletion alone grants. (A
    /// successor that listed just before that first listing may still have
    /// seen an older node: without the record it lists again, as it must.)
    /// Readers never write the record: no rule takes a reader's.
    mark: bool,
    seq: i32,
    fencing_token: i64,
    /// The node's path, and what the keeper and the futures waiting on the
    /// guard's state share.
    flags: Arc<keeper::Flags>,
    /// The task that keeps a watch on the node for the guard's life (see
    /// [`keeper`]); aborted when the guard is released or dropped.
    keeper: Option<AbortOnDrop<()>>,
    /// When the lock was granted: the lease deadline if the session's lease
    /// is unknown (it is known once the server answered a request, so this
    /// is only a fallback that makes such a guard lost at once).
    granted_at: std::time::Instant,
    /// [`suspended_since_boot`] when the lock was granted.
    suspended_at_grant: Duration,
    released: bool,
}

impl Held {
    /// The guard of a granted `node`, with its keeper started: `own_watch`
    /// is the watch on the node set while waiting, if any (the keeper takes
    /// it over), `revoked` whether a revocation request was seen meanwhile.
    fn new(
        inner: Arc<Inner>,
        mark: bool,
        node: String,
        (seq, fencing_token): (i32, i64),
        own_watch: Option<WatchFuture>,
        revoked: bool,
    ) -> Held {
        let granted_at = std::time::Instant::now();
        let suspended_at_grant = suspended_since_boot();
        let flags = Arc::new(keeper::Flags::new(node, fencing_token));
        if revoked {
            flags.mark_revoked();
        }
        let keeper = keeper::start(&inner.client, &flags, own_watch);
        Held {
            inner,
            mark,
            seq,
            fencing_token,
            flags,
            keeper,
            granted_at,
            suspended_at_grant,
            released: false,
        }
    }

    /// Full path of the guard's node.
    fn node(&self) -> &str {
        self.flags.node()
    }

    fn lease_deadline(&self) -> std::time::Instant {
        // No floor from earlier readings: a reconnection may negotiate a
        // shorter timeout, and the server renews the session with it.
        let deadline =
            session_lease_deadline(&self.inner.client, self.inner.follower_lag).unwrap_or(self.granted_at);
        // The monotonic clock stands still while the machine is suspended,
        // the server's does not: a guard that lived through a suspend loses
        // that much of its lease, for good (which answer came before the
        // suspend and which after is not known).
        let suspended = suspended_since_boot().saturating_sub(self.suspended_at_grant);
        if suspended >= MIN_SUSPEND {
            deadline.checked_sub(suspended).unwrap_or(self.granted_at)
        } else {
            deadline
        }
    }

    fn state(&self) -> HoldState {
        let link = match self.inner.client.state() {
            zk::SessionState::SyncConnected => Link::Up,
            zk::SessionState::Disconnected | zk::SessionState::ConnectedReadOnly => Link::Down,
            _ => Link::Ended,
        };
        let flagged = self.flags.is_lost();
        let deadline = self.lease_deadline();
        let (state, cause) = lease::hold_state(flagged, link, std::time::Instant::now(), deadline);
        match cause {
            Some(LossCause::SessionEnded) => self.mark_lost("the session ended"),
            Some(LossCause::LeaseRanOut) => {
                self.mark_lost("the lease deadline passed without an answer from the server")
            }
            None => {}
        }
        state
    }

    fn is_held(&self) -> bool {
        self.state() != HoldState::Lost
    }

    fn mark_lost(&self, why: &str) {
        self.flags.mark_lost(why);
    }

    fn is_revocation_requested(&self) -> bool {
        self.flags.is_revoked()
    }

    /// Completes when the lock is lost or a revocation request was seen;
    /// true for the request (also when the lock was lost after it).
    async fn revocation_requested(&self) -> bool {
        self.wait(|state, revoked| revoked || state == HoldState::Lost)
            .await;
        self.is_revocation_requested()
    }

    /// Completes when `done` holds for the guard's state, and returns that
    /// state. Meanwhile it follows the session's state, the lease deadline,
    /// and what the guard's keeper learns of the node (its deletion).
    async fn until(&self, done: impl Fn(HoldState) -> bool) -> HoldState {
        self.wait(|state, _| done(state)).await
    }

    /// As [`Held::until`], with `done` also told whether a revocation was
    /// requested. Costs no request: the keeper's watch on the node (see
    /// [`keeper`]) sets the flags this looks at.
    async fn wait(&self, done: impl Fn(HoldState, bool) -> bool) -> HoldState {
        let mut states = self.inner.client.state_watcher();
        loop {
            let flagged = self.flags.notify.notified();
            let state = self.state();
            if done(state, self.is_revocation_requested()) {
                return state;
            }
            let lease_end = Instant::from_std(self.lease_deadline()).min(Instant::now() + RECHECK);
            tokio::select! {
                _ = states.changed() => {}
                () = tokio::time::sleep_until(lease_end) => {}
                () = flagged => {}
            }
        }
    }

    /// Begins the release (of [`Held::release`] or the drop): the work that
    /// deletes the node and then ends the keeper, to be run in the
    /// background; [`Error::Lost`] instead if the keeper saw the node
    /// deleted by someone else before (nothing of the guard's own to
    /// delete, see [`lease::released_by_us`]).
    fn begin_release(
        &mut self,
    ) -> Result<impl std::future::Future<Output = Result<(), Error>> + Send + 'static, Error> {
        self.released = true;
        let deleted_before = self.flags.begin_release();
        let keeper = self.keeper.take();
        let node = self.node().to_owned();
        // Nothing sent yet: neither found missing nor an answer lost.
        if !lease::released_by_us(deleted_before, false, false) {
            return Err(Error::Lost { node });
        }
        let client = self.inner.client.clone();
        let dir = self.inner.path.clone();
        let (mark, seq) = (self.mark, self.seq);
        Ok(async move {
            let result = release_node(&client, &dir, mark, &node, seq).await;
            // After the deletion, which fired the keeper's watch: ending
            // the keeper then costs no request to remove the watch.
            drop(keeper);
            result
        })
    }

    /// Releases, on the library's background runtime: dropping this future
    /// (a timeout around it, say) leaves the release running until it is
    /// confirmed or the session is over, as a dropped guard's would.
    ///
    /// A node the keeper saw deleted before is not deleted again: the
    /// release reports [`Error::Lost`] at once. Otherwise see
    /// [`release_node`] for what a node found missing means.
    async fn release(mut self) -> Result<(), Error> {
        let span = info_span!("release", node = %self.node());
        let work = match self.begin_release() {
            Ok(work) => work,
            Err(e) => {
                let _entered = span.enter();
                debug!("the node was deleted by someone else before the release: the lock was lost");
                return Err(e);
            }
        };
        let work = async move {
            let result = work.await;
            debug!(?result, "released");
            result
        }
        .instrument(span);
        match self.inner.tasks.spawn(work) {
            Some(task) => match task.await {
                Ok(result) => result,
                Err(e) => Err(Error::Runtime(std::io::Error::other(format!(
                    "the release failed: {e}"
                )))),
            },
            None => Err(Error::Runtime(std::io::Error::other(
                "no runtime to run the release on",
            ))),
        }
    }
}

/// Below this, a difference between the boot and monotonic clocks is the
/// time between reading them, not a suspend.
const MIN_SUSPEND: Duration = Duration::from_millis(5);

/// The longest a future waiting on a guard's state sleeps before it looks
/// again: its timers run on the monotonic clock, which stands still while
/// the machine is suspended, so after a resume it must not wait out a
/// deadline that has long passed.
const RECHECK: Duration = Duration::from_secs(1);

/// How long this machine has been suspended since it booted:
/// `CLOCK_BOOTTIME` less `CLOCK_MONOTONIC` (Linux). Zero where unknown.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn suspended_since_boot() -> Duration {
    use rustix::time::{clock_gettime, ClockId, Timespec};
    let nanos = |t: Timespec| i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec);
    let monotonic = nanos(clock_gettime(ClockId::Monotonic));
    let boot = nanos(clock_gettime(ClockId::Boottime));
    Duration::from_nanos(u64::try_from((boot - monotonic).max(0)).unwrap_or(u64::MAX))
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn suspended_since_boot() -> Duration {
    Duration::ZERO
}

/// The lease deadline of `client`'s session, once the server has answered.
fn session_lease_deadline(client: &zk::Client, follower_lag: Duration) -> Option<std::time::Instant> {
    client
        .session_lease()
        .map(|l| lease::deadline(l.answered_sent, l.timeout, follower_lag))
}

/// The data that asks the holder of a contender node to let go, written
/// with `setData` on that node ([`SharedLock::revoke`]): Apache Curator's
/// `LockInternals.REVOKE_MESSAGE` (the bytes of `"__REVOKE__"`), so that
/// Curator's `Revoker.attemptRevoke(client, node)` asks a zk-rwlock holder
/// too. Contender nodes are created with empty data; any other data on
/// them is no request.
pub const REVOKE_PAYLOAD: &[u8] = b"__REVOKE__";

/// Whether a contender node's data is a revocation request.
fn is_revocation(data: &[u8]) -> bool {
    data == REVOKE_PAYLOAD
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let node = self.node().to_owned();
        let Ok(work) = self.begin_release() else {
            debug!(node = %node, "dropped a guard whose node someone else deleted: nothing to release");
            return;
        };
        // On the library's background runtime: the caller's runtime may be
        // shutting down, or there may be none (a plain thread).
        self.inner.tasks.spawn(async move {
            match work.await {
                Ok(()) => debug!(node = %node, "released on drop"),
                Err(e) => warn!(node = %node, error = %e, "release on drop failed"),
            }
        });
    }
}

macro_rules! guard {
    ($(#[$doc:meta])* $name:ident, $mode:expr) => {
        $(#[$doc])*
        ///
        /// The guard owns its node, not a thread or a task: it can move
        /// between tasks and threads. Dropping it releases the lock in the
        /// background (logged with `tracing` if that fails); call
        /// `release` to learn the outcome.
        ///
        /// For its whole life the guard keeps a watch on its node (one
        /// `getData` at the grant, unless the acquire had set one while
        /// waiting): whoever deletes the node, the guard knows it without
        /// being asked or awaited, and its state says `Lost` from then on.
        #[must_use = "dropping the guard releases the lock"]
        pub struct $name(Held);

        impl $name {
            /// Full path of this guard's contender node.
            pub fn node(&self) -> &str {
                self.0.node()
            }

            /// The fencing token: the czxid of the contender node. Larger
            /// than the token of every writer granted before on this lock.
            /// Pass it to stores that can reject writes with an older token.
            pub fn fencing_token(&self) -> i64 {
                self.0.fencing_token
            }

            /// The mode of this guard.
            pub fn mode(&self) -> Mode {
                $mode
            }

            /// Where the lock stands now: [`HoldState::Held`],
            /// [`HoldState::Suspended`] (connection lost, lease still
            /// running) or [`HoldState::Lost`] (final). See
            /// [`crate::lease`] for what each promises.
            ///
            /// True without any future pending: it is `Lost` once the
            /// session has ended, the lease deadline has passed, or the
            /// guard's kept watch has seen its node deleted (by anyone: an
            /// operator, another client), a notification's trip after the
            /// deletion. Costs no request.
            pub fn state(&self) -> HoldState {
                self.0.state()
            }

            /// The lease deadline: no one else can be granted a conflicting
            /// lock before this instant, whatever happens to the connection.
            /// It moves forward with every answer from the server, by one
            /// heartbeat of the session (shared by all its guards). Past it,
            /// the guard is [`HoldState::Lost`] until released. Stop acting
            /// as the holder before it, with time to spare for what you do
            /// (see [`crate::lease`]).
            pub fn lease_deadline(&self) -> std::time::Instant {
                self.0.lease_deadline()
            }

            /// False once the lock is known lost ([`HoldState::Lost`]):
            /// the session ended, the node was deleted (seen by the
            /// guard's kept watch, no future needed), or the lease
            /// deadline passed. True while held or suspended: use
            /// [`Self::state`] to tell them apart.
            pub fn is_held(&self) -> bool {
                self.0.is_held()
            }

            /// Completes when the lock is lost ([`HoldState::Lost`]): the
            /// session expires or is closed, the node is deleted by someone
            /// else, or the lease deadline passes before the server answers
            /// again. Costs no request: it waits on what the guard's kept
            /// watch and the session tell.
            ///
            /// # Cancellation safety
            ///
            /// Safe to drop and call again.
            pub async fn lost(&self) {
                self.0.until(|s| s == HoldState::Lost).await;
            }

            /// Completes when the lock is no longer [`HoldState::Held`]:
            /// the connection is lost ([`HoldState::Suspended`]) or the lock
            /// is ([`HoldState::Lost`]). Returns that state. Complete at
            /// once if it is already so.
            ///
            /// # Cancellation safety
            ///
            /// Safe to drop and call again.
            pub async fn suspended(&self) -> HoldState {
                self.0.until(|s| s != HoldState::Held).await
            }

            /// Completes when the lock is no longer
            /// [`HoldState::Suspended`]: the connection is back within the
            /// lease ([`HoldState::Held`]) or the lock is lost. Returns that
            /// state. Completes at once if it is not suspended.
            ///
            /// # Cancellation safety
            ///
            /// Safe to drop and call again.
            pub async fn resumed(&self) -> HoldState {
                self.0.until(|s| s != HoldState::Suspended).await
            }

            /// True once a revocation request was seen on this guard's node
            /// ([`SharedLock::revoke`]): someone asks the holder to let go.
            /// Cooperative: the lock is still held until released; no one
            /// else is granted meanwhile. Never reset.
            ///
            /// Costs no request: the guard's kept watch on its node sees
            /// the request (a data change, read once more), with or without
            /// a future pending, and so does the acquire for a request made
            /// while it waited. To act on a request, await
            /// [`Self::revocation_requested`] (e.g. in a `select!` with the
            /// work) rather than polling this flag. The holder sees a
            /// request only if it may READ its own node.
            pub fn is_revocation_requested(&self) -> bool {
                self.0.is_revocation_requested()
            }

            /// Completes when a revocation request arrives on this guard's
            /// node (true), at once if one already did, or when the lock is
            /// lost first (false: no request can come any more). Costs no
            /// request of its own: the guard's kept watch sees requests
            /// (each data change of the node costs one `getData` to read it
            /// and watch again). A node the holder may not READ cannot be
            /// watched: a request on it is never seen, and this completes
            /// only when the lock is lost.
            ///
            /// # Cancellation safety
            ///
            /// Safe to drop and call again.
            pub async fn revocation_requested(&self) -> bool {
                self.0.revocation_requested().await
            }

            /// Releases the lock: deletes the contender node, retrying
            /// through connection loss until the deletion is confirmed or
            /// the session is over.
            ///
            /// A node someone else deleted was not released by this call:
            /// the lock was lost before it, and the release says so with
            /// [`Error::Lost`] (whether the guard's kept watch had seen the
            /// deletion, or the server answers the release's first delete
            /// with "no such node"). One case cannot be told apart: when a
            /// delete of this release was sent and its answer lost with the
            /// connection, a node found gone on the retry counts as
            /// released by that delete.
            ///
            /// For a writer that had to wait, the deletion is one transaction
            /// that also writes the node's name as the lock directory's data
            /// (the release record): the contender watching the node learns
            /// that a writer that held the lock left, and takes the lock
            /// without listing the directory again (see
            /// [`ordering`](crate::ordering)).
            ///
            /// # Errors
            ///
            /// [`Error::Lost`] if someone else deleted the node (see
            /// above); [`Error::SessionExpired`] or [`Error::SessionClosed`]
            /// if the session ended first (the node is gone with it, but
            /// the lock was lost before this release); [`Error::NoAuth`] or
            /// [`Error::ZooKeeper`] if the server refused the deletion.
            pub async fn release(self) -> Result<(), Error> {
                self.0.release().await
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("node", &self.0.node())
                    .field("fencing_token", &self.0.fencing_token)
                    .field("state", &self.0.state())
                    .finish()
            }
        }
    };
}

/// A held lock of either mode, from [`SharedLock::acquire`] and friends.
///
/// The same methods as [`ReadGuard`] and [`WriteGuard`]; dropping it
/// releases the lock in the background.
#[derive(Debug)]
#[must_use = "dropping the guard releases the lock"]
pub enum Guard {
    /// A read (shared) lock.
    Read(ReadGuard),
    /// A write (exclusive) lock.
    Write(WriteGuard),
}

impl Guard {
    fn new(mode: Mode, held: Held) -> Guard {
        match mode {
            Mode::Read => Guard::Read(ReadGuard(held)),
            Mode::Write => Guard::Write(WriteGuard(held)),
        }
    }

    fn held(&self) -> &Held {
        match self {
            Guard::Read(g) => &g.0,
            Guard::Write(g) => &g.0,
        }
    }

    /// Full path of this guard's contender node.
    pub fn node(&self) -> &str {
        self.held().node()
    }

    /// The fencing token: the czxid of the contender node (see [`WriteGuard::fencing_token`]).
    pub fn fencing_token(&self) -> i64 {
        self.held().fencing_token
    }

    /// Read or write.
    pub fn mode(&self) -> Mode {
        match self {
            Guard::Read(_) => Mode::Read,
            Guard::Write(_) => Mode::Write,
        }
    }

    /// Held, suspended or lost (see [`WriteGuard::state`]).
    pub fn state(&self) -> HoldState {
        self.held().state()
    }

    /// The lease deadline (see [`WriteGuard::lease_deadline`]).
    pub fn lease_deadline(&self) -> std::time::Instant {
        self.held().lease_deadline()
    }

    /// False once the lock is known lost (see [`WriteGuard::is_held`]).
    pub fn is_held(&self) -> bool {
        self.held().is_held()
    }

    /// Completes when the lock is lost (see [`WriteGuard::lost`]).
    pub async fn lost(&self) {
        self.held().until(|s| s == HoldState::Lost).await;
    }

    /// Completes when the lock is no longer held: suspended or lost (see
    /// [`WriteGuard::suspended`]).
    pub async fn suspended(&self) -> HoldState {
        self.held().until(|s| s != HoldState::Held).await
    }

    /// Completes when the lock is no longer suspended: held again or lost
    /// (see [`WriteGuard::resumed`]).
    pub async fn resumed(&self) -> HoldState {
        self.held().until(|s| s != HoldState::Suspended).await
    }

    /// A revocation request was seen (see
    /// [`WriteGuard::is_revocation_requested`]).
    pub fn is_revocation_requested(&self) -> bool {
        self.held().is_revocation_requested()
    }

    /// Completes when a revocation request arrives (true) or the lock is
    /// lost first (false); see [`WriteGuard::revocation_requested`].
    pub async fn revocation_requested(&self) -> bool {
        self.held().revocation_requested().await
    }

    /// Releases the lock and reports the outcome (see [`WriteGuard::release`]).
    ///
    /// # Errors
    ///
    /// As [`WriteGuard::release`].
    pub async fn release(self) -> Result<(), Error> {
        match self {
            Guard::Read(g) => g.0.release().await,
            Guard::Write(g) => g.0.release().await,
        }
    }
}

guard!(
    /// A held read (shared) lock.
    ReadGuard,
    Mode::Read
);
guard!(
    /// A held write (exclusive) lock.
    WriteGuard,
    Mode::Write
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        for ok in [
            "/a",
            "/shared_lock",
            "/a/b-c/d.e",
            "/..a",
            "/a./b",
            // Near misses of contender names.
            "/locks/web01-W-1",
            "/locks/web01-X-0000000001",
            "/locks/-W-0000000001",
            "/locks/web01-W-0000000001x",
        ] {
            assert!(validate_path(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("", "empty"),
            ("a", "does not start"),
            ("locks/a", "does not start"),
            ("/", "root"),
            ("/a/", "ends with"),
            ("//a", "empty segment"),
            ("/a//b", "empty segment"),
            ("/a/./b", "'.'"),
            ("/a/..", "'.'"),
            ("/a\0b", "NUL"),
            (
                "/locks/web01-W-0000000001",
                "its last segment looks like a contender node name",
            ),
            (
                "/web01-R--000000005",
                "its last segment looks like a contender node name",
            ),
            (
                "/locks/a-W-0000000001/b",
                "one of its segments looks like a contender node name",
            ),
            // Peers' contender names too: a persistent node so named would
            // block their locks and ours one level up.
            (
                "/locks/lock-0000000001",
                "its last segment looks like a contender node name",
            ),
            (
                "/locks/0123456789abcdef0123456789abcdef__rlock__0000000001/b",
                "one of its segments looks like a contender node name",
            ),
        ] {
            let err = validate_path(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad:?}: {err}");
            assert!(err.contains(&format!("`{bad}`")), "{bad:?}: {err}");
        }
    }

    #[test]
    fn kazoo_directories_persist() {
        assert_eq!(directory_mode(Layout::Kazoo), zk::CreateMode::Persistent);
        for layout in [Layout::Native, Layout::Curator, Layout::CuratorMutex] {
            assert_eq!(directory_mode(layout), zk::CreateMode::Container, "{layout}");
        }
    }

    #[test]
    fn peer_layouts_need_read_for_others() {
        let creator = zk::Acls::creator_all().to_vec();
        assert!(peers_cannot_read(Layout::Kazoo, &creator));
        assert!(peers_cannot_read(Layout::Curator, &creator));
        assert!(!peers_cannot_read(Layout::Native, &creator));
        let mut readable = creator.clone();
        readable.extend(zk::Acls::anyone_read().iter().cloned());
        assert!(!peers_cannot_read(Layout::Kazoo, &readable));
        assert!(!peers_cannot_read(Layout::CuratorMutex, &default_acls()));
    }

    #[test]
    fn identities() {
        assert!(validate_identity("web-01.example").is_ok());
        for bad in ["", "a/b", "a@b", "a\0", "__REVOKE__"] {
            let err = validate_identity(bad).unwrap_err().to_string();
            assert!(err.contains("invalid identity"), "{err}");
        }
        let err = validate_identity("__REVOKE__").unwrap_err().to_string();
        assert!(err.contains("revocation request"), "{err}");
        assert!(validate_identity("__REVOKE__x").is_ok());
        assert!(validate_identity(&default_identity()).is_ok());
        // Bytes count, not characters: 127 two-byte characters and one more byte.
        let longest = format!("{}x", "é".repeat(127));
        assert!(validate_identity(&longest).is_ok());
        let err = validate_identity(&format!("{longest}x")).unwrap_err().to_string();
        assert!(err.contains("longer than 255 bytes"), "{err}");
    }

    #[test]
    fn path_length() {
        let longest = format!("/{}", "p".repeat(limits::MAX_PATH_LEN - 1));
        assert!(validate_path(&longest).is_ok());
        let err = validate_path(&format!("{longest}p")).unwrap_err().to_string();
        assert!(err.contains("longer than 4096 bytes"), "{err}");
    }
}
