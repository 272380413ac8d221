//! The blocking face of [`crate::Election`]: [`Election`], [`Leadership`]
//! and [`Observer`], for code without an async runtime (see the
//! [module documentation](super) for the threads it can be used from).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{connect_runtime, runtime, Guard, OwnedRuntime};
use crate::error::Error;
use crate::lock::validate_path;
use crate::{zk, HoldState, Leader, DEFAULT_SESSION_TIMEOUT};

/// A leader election for synchronous code (see [`crate::Election`]).
/// Cheap to clone; clones share the session.
///
/// ```no_run
/// let election = zk_rwlock::blocking::Election::connect("127.0.0.1:2181", "/elections/billing", "web01")?;
/// let leadership = election.campaign()?;
/// // ... lead, passing leadership.term() to the store ...
/// leadership.resign()?;
/// # Ok::<(), zk_rwlock::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Election {
    election: crate::Election,
    rt: Arc<OwnedRuntime>,
}

impl Election {
    /// Connects a new session to `servers` and makes an election on `path`
    /// for the candidate `identity`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] before connecting; [`Error::Unreachable`];
    /// [`Error::InvalidIdentity`]; [`Error::InsideRuntime`].
    pub fn connect(servers: &str, path: &str, identity: &str) -> Result<Election, Error> {
        validate_path(path)?;
        crate::lock::validate_identity(identity)?;
        let (rt, client) = connect_runtime(servers, DEFAULT_SESSION_TIMEOUT, Some(path))?;
        Ok(Election {
            election: crate::Election::new(client, path, identity)?,
            rt: Arc::new(rt),
        })
    }

    /// An election on `path` through an existing `client` (see
    /// [`super::SharedLock::with_client`] for where the client runs).
    ///
    /// # Errors
    ///
    /// As [`crate::Election::new`], and [`Error::InsideRuntime`].
    pub fn new(client: zk::Client, path: &str, identity: &str) -> Result<Election, Error> {
        Election::from_async(crate::Election::new(client, path, identity)?)
    }

    /// The blocking face of an async election (made with
    /// [`crate::Election::builder`], say).
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`], [`Error::Runtime`].
    pub fn from_async(election: crate::Election) -> Result<Election, Error> {
        Ok(Election {
            election,
            rt: Arc::new(runtime()?),
        })
    }

    /// Waits until this candidate leads (see [`crate::Election::campaign`]).
    ///
    /// # Errors
    ///
    /// As [`crate::Election::campaign`], and [`Error::InsideRuntime`].
    pub fn campaign(&self) -> Result<Leadership, Error> {
        let leadership = self.rt.block_on(self.election.campaign())??;
        Ok(self.wrap(leadership))
    }

    /// Waits at most `timeout` to lead; `Ok(None)` on timeout (see
    /// [`crate::Election::campaign_timeout`]).
    ///
    /// # Errors
    ///
    /// As [`crate::Election::campaign`], and [`Error::InsideRuntime`].
    pub fn campaign_timeout(&self, timeout: Duration) -> Result<Option<Leadership>, Error> {
        let leadership = self.rt.block_on(self.election.campaign_timeout(timeout))??;
        Ok(leadership.map(|l| self.wrap(l)))
    }

    /// Who leads now (see [`crate::Election::leader`]).
    ///
    /// # Errors
    ///
    /// As [`crate::Election::leader`], and [`Error::InsideRuntime`].
    pub fn leader(&self) -> Result<Option<Leader>, Error> {
        self.rt.block_on(self.election.leader())?
    }

    /// Follows who leads (see [`crate::Election::observe`]).
    pub fn observe(&self) -> Observer {
        Observer {
            receiver: self.election.observe(),
            rt: self.rt.clone(),
        }
    }

    /// The async election underneath.
    pub fn as_async(&self) -> &crate::Election {
        &self.election
    }

    /// The lock directory.
    pub fn path(&self) -> &str {
        self.election.path()
    }

    fn wrap(&self, leadership: crate::Leadership) -> Leadership {
        let identity = leadership.identity().to_owned();
        Leadership {
            guard: Guard {
                inner: Some(crate::Guard::from(leadership.into_guard())),
                rt: self.rt.clone(),
            },
            identity,
        }
    }
}

/// Follows who leads, for synchronous code: a receiver of
/// [`crate::Election::observe`].
#[derive(Debug)]
pub struct Observer {
    receiver: tokio::sync::watch::Receiver<Option<Leader>>,
    rt: Arc<OwnedRuntime>,
}

impl Observer {
    /// The leader as last seen (`None`: no leader known).
    pub fn current(&self) -> Option<Leader> {
        self.receiver.borrow().clone()
    }

    /// Waits up to `timeout` for the next change of leader: `Some` with the
    /// new value, `None` if the time ran out first or the observer stopped
    /// (the session ended: see [`Observer::is_stopped`]).
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn changed(&mut self, timeout: Duration) -> Result<Option<Option<Leader>>, Error> {
        let receiver = &mut self.receiver;
        self.rt.block_on_within(
            timeout,
            async {
                match receiver.changed().await {
                    Ok(()) => Some(receiver.borrow_and_update().clone()),
                    Err(_) => None,
                }
            },
            None,
        )
    }

    /// True once the observer stopped (the session ended): no change will
    /// come any more.
    pub fn is_stopped(&self) -> bool {
        self.receiver.has_changed().is_err()
    }
}

/// This candidate's leadership, for synchronous code (see
/// [`crate::Leadership`]). Resigns when dropped.
#[derive(Debug)]
#[must_use = "dropping the leadership resigns it"]
pub struct Leadership {
    guard: Guard,
    identity: String,
}

impl Leadership {
    /// The term: the fencing token (see [`crate::Leadership::term`]).
    pub fn term(&self) -> i64 {
        self.guard.fencing_token()
    }

    /// Full path of the leader's node.
    pub fn node(&self) -> &str {
        self.guard.node()
    }

    /// The leader's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The lease deadline (see [`crate::Leadership::lease_deadline`]).
    pub fn lease_deadline(&self) -> Instant {
        self.guard.lease_deadline()
    }

    /// Held, suspended or lost (see [`crate::Leadership::state`]).
    pub fn state(&self) -> HoldState {
        self.guard.state()
    }

    /// False once the leadership is known lost.
    pub fn is_held(&self) -> bool {
        self.guard.is_held()
    }

    /// Waits up to `timeout` for the leadership to be no longer held
    /// (suspended or lost); [`HoldState::Held`] if the time ran out first.
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_suspended(&self, timeout: Duration) -> Result<HoldState, Error> {
        self.guard.wait_suspended(timeout)
    }

    /// Waits up to `timeout` for the leadership to be no longer suspended;
    /// [`HoldState::Suspended`] if the time ran out first.
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_resumed(&self, timeout: Duration) -> Result<HoldState, Error> {
        self.guard.wait_resumed(timeout)
    }

    /// Waits up to `timeout` for the leadership to be lost; true if it was.
    ///
    /// # Errors
    ///
    /// [`Error::InsideRuntime`].
    pub fn wait_lost(&self, timeout: Duration) -> Result<bool, Error> {
        self.guard.wait_lost(timeout)
    }

    /// True once someone asked this leader to step down.
    pub fn is_revocation_requested(&self) -> bool {
        self.guard.is_revocation_requested()
    }

    /// ZooKeeper operations that commit only while this candidate leads,
    /// all or none, with a blocking commit (see
    /// [`crate::Leadership::transaction`]).
    pub fn transaction(&self) -> super::Transaction<'_> {
        self.guard.transaction()
    }

    /// Resigns (see [`crate::Leadership::resign`]).
    ///
    /// # Errors
    ///
    /// As [`crate::Leadership::resign`], and [`Error::InsideRuntime`].
    pub fn resign(self) -> Result<(), Error> {
        self.guard.release()
    }
}
