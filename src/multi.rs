//! All or nothing: one guard over several locks, each in its own mode.
//!
//! A [`MultiLock`] names several lock directories, each with a [`Mode`]
//! (say write `/accounts/42` and read `/rates`). Its acquire takes every
//! part or none. On a give-up, a failure partway or a part lost, the parts
//! it already holds are all released at once before it returns, waiting
//! for them at most [`crate::GIVE_UP_SLACK`] (after the deadline, for
//! [`MultiLock::acquire_timeout`]); releases not done by then go on in the
//! background. When its future is dropped, the parts it holds are released
//! and the contender node it was waiting with is deleted, in the background
//! (see [`SharedLock`]'s cancellation safety). A [`MultiGuard`] holds them
//! all.
//!
//! The parts are taken one after the other, each with its own contender
//! node (an acquire costs a queue turn per part, not one request). While
//! it waits for a part, the acquire watches the parts it holds: if one of
//! them is lost (its node deleted, its session over, its lease run out),
//! it fails at once with [`Error::Lost`] (or the session's error) and
//! releases everything. It never returns a guard with a part lost.
//!
//! Each part taken is watched once for the rest of the acquire, so the
//! requests of an acquire grow linearly with the number of parts.
//!
//! # No deadlock between multi-locks
//!
//! The parts are acquired one after the other in one canonical order,
//! sorted by absolute path (each lock's path under its client's chroot),
//! whatever order the caller gave: two multi-locks over the same lock
//! directories (named in any order, through any chroots) never each hold a
//! part the other waits for. A task that holds a single guard and then
//! asks a multi-lock for a path sorted before it can still deadlock, as
//! with any two locks taken in opposite orders.
//!
//! Apache Curator's `InterProcessMultiLock` acquires its locks in the order
//! the caller lists them ("the order that they are to be locked"), so two
//! processes listing the same paths in opposite orders can deadlock; its
//! timed acquire also gives each lock the whole timeout. Here the order is
//! canonical and [`MultiLock::acquire_timeout`]'s deadline is for all parts
//! together.
//!
//! # Duplicate paths
//!
//! A lock directory may appear once: [`MultiLock::new`] and
//! [`MultiLock::from_locks`] reject a second occurrence (the same absolute
//! path, chroot included) with [`Error::InvalidPath`] (reason: "it appears
//! more than once in one multi-lock") rather than guess which mode was
//! meant: two contenders of
//! one multi-lock on one lock would wait for each other, as asking a held
//! read lock for write does. A multi-lock needs at least one part (an
//! empty list is an [`Error::InvalidPath`] with an empty path).
//!
//! # What the guard reports
//!
//! The parts share a fate: [`MultiGuard::state`] is the worst part's
//! ([`HoldState::Lost`] over [`HoldState::Suspended`] over
//! [`HoldState::Held`]; each part keeps a watch on its node, so it is true
//! with no future pending), [`MultiGuard::release`] reports a part whose
//! node someone else deleted ([`Error::Lost`]), [`MultiGuard::lease_deadline`] the earliest, and
//! [`MultiGuard::lost`] completes when any part is lost. Each part has its
//! own fencing token ([`MultiGuard::fencing_token`]): pass each store the
//! token of the lock that guards it.
//!
//! # Example
//!
//! ```no_run
//! use zk_rwlock::{multi::MultiLock, Mode};
//!
//! # async fn example() -> Result<(), zk_rwlock::Error> {
//! let client = zk_rwlock::connect_client(
//!     "127.0.0.1:2181",
//!     zk_rwlock::DEFAULT_SESSION_TIMEOUT,
//!     zk_rwlock::DEFAULT_CONNECT_TIMEOUT,
//! )
//! .await?;
//! let lock = MultiLock::new(client, &[("/accounts/42", Mode::Write), ("/rates", Mode::Read)])?;
//! let guard = lock.acquire().await?; // or try_acquire(), acquire_timeout(d)
//! let token = guard.fencing_token("/accounts/42"); // Some(czxid) for each part's path
//! tokio::select! {
//!     _ = transfer(token) => {}
//!     // Any part's connection or lock is lost: stop before the earliest lease deadline.
//!     _ = guard.suspended() => return Ok(()),
//! }
//! guard.release().await?; // releases every part; dropping the guard does too, in the background
//! # Ok(())
//! # }
//! # async fn transfer(_token: Option<i64>) {}
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::Poll;
use std::time::Duration;

use tokio::time::Instant;
use tracing::debug;

use crate::error::Error;
use crate::lease::HoldState;
use crate::lock::{validate_path, Guard, SharedLock, GIVE_UP_SLACK};
use crate::node_name::Mode;
use crate::zk;

/// Several locks, each in its own mode, acquired all together or not at
/// all (see the [module documentation](self)). Cheap to clone.
#[derive(Clone, Debug)]
pub struct MultiLock {
    /// Sorted by path, without duplicates, never empty.
    parts: Vec<(SharedLock, Mode)>,
}

impl MultiLock {
    /// A multi-lock over `parts` (lock directory path and mode), all used
    /// through `client` with the default identity and ACLs. The order of
    /// `parts` does not matter. No I/O.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] for a path that is not a valid lock
    /// directory, that appears twice, or if `parts` is empty.
    pub fn new(client: zk::Client, parts: &[(&str, Mode)]) -> Result<MultiLock, Error> {
        check_parts(parts)?;
        let locks = parts
            .iter()
            .map(|&(path, mode)| Ok((SharedLock::new(client.clone(), path)?, mode)))
            .collect::<Result<Vec<_>, Error>>()?;
        MultiLock::from_locks(locks)
    }

    /// A multi-lock over locks made elsewhere, for example with
    /// [`SharedLock::builder`] (identity, ACLs, follower lag). The locks
    /// may use different sessions and different chroots: they are sorted
    /// and compared by absolute path (the lock's path under its client's
    /// chroot). [`MultiGuard::part`] and [`MultiGuard::fencing_token`] still
    /// take each path as given to its lock (relative to its client's
    /// chroot); when two parts have the same such path under different
    /// chroots, they answer for the first in acquisition order.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] if a lock directory (absolute path) appears
    /// twice or `parts` is empty.
    pub fn from_locks(parts: impl IntoIterator<Item = (SharedLock, Mode)>) -> Result<MultiLock, Error> {
        let parts: Vec<(SharedLock, Mode)> = parts.into_iter().collect();
        if parts.is_empty() {
            return Err(Error::InvalidPath {
                path: String::new(),
                reason: "a multi-lock needs at least one lock path",
            });
        }
        let mut keyed: Vec<(String, (SharedLock, Mode))> = parts
            .into_iter()
            .map(|part| (absolute(part.0.client().path(), part.0.path()), part))
            .collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(pair) = keyed.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(duplicate(&pair[0].0));
        }
        Ok(MultiLock {
            parts: keyed.into_iter().map(|(_, part)| part).collect(),
        })
    }

    /// Acquires every part, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// The first part's error (as [`SharedLock::read`]); the parts taken
    /// before it are released. If a part already taken is lost while a
    /// later one is awaited (its node deleted, its session over, its lease
    /// run out), the acquire stops with [`Error::Lost`] (or
    /// [`Error::SessionExpired`], [`Error::SessionClosed`]) and releases
    /// everything: it never returns a guard with a part lost.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future releases the parts already held and deletes the
    /// node of the part being acquired, in the background.
    pub async fn acquire(&self) -> Result<MultiGuard, Error> {
        match self.acquire_all(Wait::Forever).await? {
            Some(guard) => Ok(guard),
            // `Wait::Forever` never gives up; a typed error, not a panic.
            None => Err(Error::ZooKeeper(zk::Error::UnexpectedError(
                "multi-lock acquire without a deadline gave up".to_owned(),
            ))),
        }
    }

    /// Acquires every part if each is free when its turn comes; `Ok(None)`
    /// otherwise, with what was taken released (see
    /// [`SharedLock::try_acquire`]). "Free" is judged part by part, in
    /// order, while the earlier parts are held: this is not one atomic
    /// check. Each part may wait up to [`crate::TRY_TIMEOUT`] for the
    /// server's answers, so against a slow server the call can take up to
    /// N × `TRY_TIMEOUT` (N parts), plus [`crate::GIVE_UP_SLACK`] to release.
    ///
    /// # Errors
    ///
    /// As [`MultiLock::acquire`].
    pub async fn try_acquire(&self) -> Result<Option<MultiGuard>, Error> {
        self.acquire_all(Wait::Not).await
    }

    /// Acquires every part within `timeout`, counted for all parts
    /// together; `Ok(None)` on timeout, with what was taken released. Each
    /// part finishes its first look whatever is left of the timeout (see
    /// [`SharedLock::acquire_timeout`]): a part reached after the deadline is
    /// taken if it is free then, as [`MultiLock::try_acquire`] takes it, so
    /// a zero timeout is `try_acquire`. The waiting is bounded by the
    /// timeout, the looks are not: against a server that does not answer,
    /// each part reached after the deadline may take up to
    /// [`crate::TRY_TIMEOUT`] for its look, so the call takes at most about
    /// the timeout plus N × `TRY_TIMEOUT` (N parts), plus
    /// [`crate::GIVE_UP_SLACK`] to release what was taken. A timeout too
    /// large to add to the current instant (say [`Duration::MAX`]) waits as
    /// [`MultiLock::acquire`].
    ///
    /// # Errors
    ///
    /// As [`MultiLock::acquire`].
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<MultiGuard>, Error> {
        // A timeout too large for an `Instant` (say `Duration::MAX`) is no limit.
        let wait = Instant::now()
            .checked_add(timeout)
            .map_or(Wait::Forever, Wait::Until);
        self.acquire_all(wait).await
    }

    /// The parts in acquisition order (sorted by absolute path).
    pub fn parts(&self) -> impl Iterator<Item = (&SharedLock, Mode)> + '_ {
        self.parts.iter().map(|(lock, mode)| (lock, *mode))
    }

    /// Takes the parts one by one in path order. On a give-up, an error or
    /// a loss, whatever is taken is released, waiting within the slack; when
    /// this future is dropped, dropped (each part releases in the background).
    async fn acquire_all(&self, wait: Wait) -> Result<Option<MultiGuard>, Error> {
        /// Why the acquire stopped before taking every part.
        enum Stop {
            Lost,
            Failed(Error),
            GaveUp,
        }
        // One slot per part, never moved while the loss watches borrow
        // them: each part taken is watched once for the whole acquire.
        let slots: Vec<OnceLock<Guard>> = self.parts.iter().map(|_| OnceLock::new()).collect();
        let mut watches: Vec<Pin<Box<dyn Future<Output = ()> + Send + '_>>> =
            Vec::with_capacity(self.parts.len());
        let mut stop = None;
        for ((lock, mode), slot) in self.parts.iter().zip(&slots) {
            let mode = *mode;
            let next = async {
                match wait {
                    Wait::Forever => lock.acquire(mode).await.map(Some),
                    Wait::Not => lock.try_acquire(mode).await,
                    Wait::Until(deadline) => {
                        let left = deadline.saturating_duration_since(Instant::now());
                        lock.acquire_timeout(mode, left).await
                    }
                }
            };
            let outcome = tokio::select! {
                biased;
                () = first(watches.iter_mut()) => None,
                outcome = next => Some(outcome),
            };
            match outcome {
                None => stop = Some(Stop::Lost),
                Some(Err(e)) => {
                    debug!(lock = lock.path(), error = %e, "multi-lock failed; releasing the parts taken");
                    stop = Some(Stop::Failed(e));
                }
                Some(Ok(None)) => {
                    debug!(
                        lock = lock.path(),
                        "multi-lock gave up; releasing the parts taken"
                    );
                    stop = Some(Stop::GaveUp);
                }
                Some(Ok(Some(guard))) => {
                    let guard: &Guard = slot.get_or_init(|| guard);
                    watches.push(Box::pin(guard.lost()));
                    continue;
                }
            }
            break;
        }
        drop(watches);
        let held: Vec<Guard> = slots.into_iter().filter_map(OnceLock::into_inner).collect();
        let stop = match stop {
            None if held.iter().any(|g| g.state() == HoldState::Lost) => Stop::Lost,
            None => return Ok(Some(MultiGuard { parts: held })),
            Some(stop) => stop,
        };
        match stop {
            Stop::Lost => {
                let e = self.lost_error(&held);
                release_within(held, GIVE_UP_SLACK).await;
                Err(e)
            }
            Stop::Failed(e) => {
                release_within(held, GIVE_UP_SLACK).await;
                Err(e)
            }
            Stop::GaveUp => {
                // From the give-up, not the deadline: a part's first look
                // may end after the deadline (it is taken if free then), and
                // what was taken is released before `Ok(None)` as for `try_*`.
                release_within(held, GIVE_UP_SLACK).await;
                Ok(None)
            }
        }
    }

    /// The error for the first lost part of `held` (in path order): the
    /// end of its session, or the deletion of its node.
    fn lost_error(&self, held: &[Guard]) -> Error {
        let lost = self
            .parts
            .iter()
            .zip(held)
            .find(|(_, g)| g.state() == HoldState::Lost);
        let Some(((lock, _), guard)) = lost else {
            return Error::Lost {
                node: held.first().map(|g| g.node().to_owned()).unwrap_or_default(),
            };
        };
        debug!(
            node = guard.node(),
            "multi-lock: a part taken was lost; releasing all"
        );
        Error::from_session_state(lock.client().state()).unwrap_or_else(|| Error::Lost {
            node: guard.node().to_owned(),
        })
    }
}

/// Releases every guard of `held` at once and waits up to `within` for
/// them; the releases not done by then go on in the background.
async fn release_within(held: Vec<Guard>, within: Duration) {
    if held.is_empty() {
        return;
    }
    let tasks: Vec<_> = held
        .into_iter()
        .map(|g| tokio::spawn(async move { g.release().await }))
        .collect();
    let all = async {
        for task in tasks {
            match task.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => debug!(error = %e, "multi-lock: releasing a part taken failed"),
                Err(e) => debug!(error = %e, "multi-lock: a part's release task failed"),
            }
        }
    };
    if tokio::time::timeout(within, all).await.is_err() {
        debug!("multi-lock: releases of the parts taken go on in the background");
    }
}

/// The absolute path of lock directory `path` of a lock whose client has
/// chroot `chroot` ("/" without one).
fn absolute(chroot: &str, path: &str) -> String {
    let chroot = chroot.trim_end_matches('/');
    format!("{chroot}{path}")
}

/// Checks `parts` without I/O: valid lock paths, at least one, none twice.
pub(crate) fn check_parts(parts: &[(&str, Mode)]) -> Result<(), Error> {
    for (path, _) in parts {
        validate_path(path)?;
    }
    let mut paths: Vec<&str> = parts.iter().map(|(path, _)| *path).collect();
    paths.sort_unstable();
    if paths.is_empty() {
        return Err(Error::InvalidPath {
            path: String::new(),
            reason: "a multi-lock needs at least one lock path",
        });
    }
    if let Some(pair) = paths.windows(2).find(|w| w[0] == w[1]) {
        return Err(duplicate(pair[0]));
    }
    Ok(())
}

/// The error for a path given twice.
fn duplicate(path: &str) -> Error {
    Error::InvalidPath {
        path: path.to_owned(),
        reason: crate::error::DUPLICATE_PATH,
    }
}

/// How long [`MultiLock::acquire_all`] waits for each part.
#[derive(Clone, Copy)]
enum Wait {
    /// As long as it takes.
    Forever,
    /// Not at all.
    Not,
    /// Until this instant, for all parts together.
    Until(Instant),
}

/// Every part of a [`MultiLock`], held. Dropping it releases them all in
/// the background; [`MultiGuard::release`] waits and reports.
#[derive(Debug)]
#[must_use = "dropping the guard releases the locks"]
pub struct MultiGuard {
    /// Sorted by path.
    parts: Vec<Guard>,
}

impl MultiGuard {
    /// The guards of the parts, sorted by lock path.
    pub fn parts(&self) -> &[Guard] {
        &self.parts
    }

    /// The guards of the parts, sorted by lock path, to keep or release one
    /// by one.
    pub fn into_parts(self) -> Vec<Guard> {
        self.parts
    }

    /// The guard of the part on lock directory `path` (as given to its
    /// lock, relative to its client's chroot), if there is one.
    pub fn part(&self, path: &str) -> Option<&Guard> {
        self.parts.iter().find(|g| g.lock_path() == path)
    }

    /// ZooKeeper operations that commit only while every part is held:
    /// all of them, in one ZooKeeper `multi` behind a check that each
    /// part's node still exists (the checks first, in path order), or
    /// none. A part lost makes the commit fail with [`Error::Lost`] naming
    /// its node, and nothing is written. The parts must share one session
    /// and chroot ([`MultiLock::new`] makes them so; otherwise
    /// [`Error::TransactionAcrossSessions`]). See
    /// [`Transaction`](crate::Transaction) for what a commit proves.
    pub fn transaction(&self) -> crate::Transaction<'_> {
        crate::Transaction::new(self.parts.iter().collect())
    }

    /// The fencing token of the part on lock directory `path` (as given to
    /// its lock, relative to its client's chroot; see
    /// [`Guard::fencing_token`]); `None` if no part has that path.
    pub fn fencing_token(&self, path: &str) -> Option<i64> {
        self.part(path).map(Guard::fencing_token)
    }

    /// The worst state of the parts: lost if any part is lost, else
    /// suspended if any is suspended, else held.
    pub fn state(&self) -> HoldState {
        self.parts
            .iter()
            .map(Guard::state)
            .max()
            .unwrap_or(HoldState::Held)
    }

    /// False once any part is known lost.
    pub fn is_held(&self) -> bool {
        self.state() != HoldState::Lost
    }

    /// The earliest lease deadline of the parts: until then no one else
    /// can hold a lock conflicting with any part.
    pub fn lease_deadline(&self) -> std::time::Instant {
        self.parts
            .iter()
            .map(Guard::lease_deadline)
            .min()
            .unwrap_or_else(std::time::Instant::now)
    }

    /// Completes when any part is lost.
    pub async fn lost(&self) {
        first(
            self.parts
                .iter()
                .map(|g| Box::pin(g.lost()) as Pin<Box<dyn Future<Output = ()> + Send + '_>>),
        )
        .await;
    }

    /// True when a revocation request reaches any part (see
    /// [`crate::WriteGuard::revocation_requested`]); false once every part
    /// is lost without one.
    pub async fn revocation_requested(&self) -> bool {
        let asked = std::sync::atomic::AtomicBool::new(false);
        let without = std::sync::atomic::AtomicUsize::new(0);
        let n = self.parts.len();
        first(self.parts.iter().map(|g| {
            let (asked, without) = (&asked, &without);
            Box::pin(async move {
                if g.revocation_requested().await {
                    asked.store(true, std::sync::atomic::Ordering::Release);
                } else if without.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1 < n {
                    // Lost without a request: the other parts decide.
                    std::future::pending::<()>().await;
                }
            }) as Pin<Box<dyn Future<Output = ()> + Send + '_>>
        }))
        .await;
        asked.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Completes when any part is no longer held (suspended or lost), with
    /// the worst state then: the state that part reported, or a worse one
    /// of another part ([`HoldState::Lost`] if any part is lost by then).
    pub async fn suspended(&self) -> HoldState {
        let seen = std::sync::Mutex::new(HoldState::Held);
        first(self.parts.iter().map(|g| {
            let seen = &seen;
            Box::pin(async move {
                let state = g.suspended().await;
                let mut seen = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                *seen = (*seen).max(state);
            }) as Pin<Box<dyn Future<Output = ()> + Send + '_>>
        }))
        .await;
        let seen = *seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.max(self.state())
    }

    /// Completes when no part is suspended any more: all held again, or
    /// one lost. Returns the state then.
    pub async fn resumed(&self) -> HoldState {
        loop {
            let all_resumed = async {
                for g in &self.parts {
                    if g.resumed().await == HoldState::Lost {
                        return;
                    }
                }
            };
            tokio::select! {
                () = all_resumed => {}
                () = self.lost() => return HoldState::Lost,
            }
            match self.state() {
                HoldState::Suspended => continue,
                state => return state,
            }
        }
    }

    /// Releases every part, all at once, and reports the first error (in
    /// path order); every part is released (or left to its background
    /// release) whatever the others do.
    ///
    /// # Errors
    ///
    /// As [`crate::WriteGuard::release`].
    pub async fn release(self) -> Result<(), Error> {
        let results = join_all(self.parts.into_iter().map(|g| Box::pin(g.release()))).await;
        results.into_iter().collect()
    }
}

/// Completes when the first of `futures` does (never if there are none).
async fn first<F: Future<Output = ()> + Unpin>(futures: impl Iterator<Item = F>) {
    let mut futures: Vec<F> = futures.collect();
    std::future::poll_fn(|cx| {
        if futures.iter_mut().any(|f| Pin::new(f).poll(cx).is_ready()) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}

/// Runs all of `futures` at once; their outputs in order.
async fn join_all<F: Future + Unpin>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut slots: Vec<(F, Option<F::Output>)> = futures.map(|f| (f, None)).collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for (f, out) in slots.iter_mut() {
            if out.is_none() {
                match Pin::new(f).poll(cx) {
                    Poll::Ready(o) => *out = Some(o),
                    Poll::Pending => done = false,
                }
            }
        }
        if done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    slots.into_iter().filter_map(|(_, out)| out).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_checked_without_io() {
        assert!(check_parts(&[("/b", Mode::Read), ("/a", Mode::Write)]).is_ok());
        for (parts, why) in [
            (&[][..], "at least one"),
            (
                &[("/a", Mode::Read), ("/b", Mode::Read), ("/a", Mode::Read)][..],
                "more than once",
            ),
            (&[("/a", Mode::Read), ("b", Mode::Read)][..], "does not start"),
        ] {
            let err = check_parts(parts).unwrap_err().to_string();
            assert!(err.contains(why), "{parts:?}: {err}");
        }
    }
}
