//! An acquire that tells its place in the queue while it waits:
//! [`SharedLock::enqueue`] and [`Queued`].

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::watch;

use super::guard::Guard;
use super::SharedLock;
use super::{deadline, Patience};
use crate::error::Error;
use crate::node_name::Mode;

pub use zk_rwlock_core::acquire::Place;

/// An acquire under way that tells its place in the queue, from
/// [`SharedLock::enqueue`]: await it for the guard, and follow
/// [`Queued::place`] meanwhile: the node it made, how many contenders came
/// before it, and which one it waits on, as of each listing of the
/// directory its wait made (it costs no request: the listings say it).
/// A wait that is handed the lock by a deletion or a release marker does
/// not list again, so `ahead` is the last listing's; the grant says
/// `waits_on: None`.
///
/// Dropping it before it completes withdraws the acquire, as dropping any
/// acquire's future does.
///
/// ```no_run
/// # async fn demo(lock: zk_rwlock::SharedLock) -> Result<(), zk_rwlock::Error> {
/// use zk_rwlock::Mode;
/// let queued = lock.enqueue(Mode::Write);
/// let mut place = queued.place();
/// tokio::spawn(async move {
///     while place.changed().await.is_ok() {
///         if let Some(p) = place.borrow_and_update().clone() {
///             println!("{} ahead of {}, waiting on {:?}", p.ahead, p.node, p.waits_on);
///         }
///     }
/// });
/// let guard = queued.await?;
/// guard.release().await
/// # }
/// ```
#[must_use = "an acquire does nothing unless awaited"]
pub struct Queued<T> {
    place: watch::Receiver<Option<Place>>,
    acquire: Pin<Box<dyn Future<Output = Result<T, Error>> + Send>>,
}

impl<T> Queued<T> {
    /// The acquire's place in the queue: `None` until its node is made and
    /// listed, then the last listing's.
    pub fn place(&self) -> watch::Receiver<Option<Place>> {
        self.place.clone()
    }
}

impl<T> std::fmt::Debug for Queued<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queued")
            .field("place", &*self.place.borrow())
            .finish_non_exhaustive()
    }
}

impl<T> Future for Queued<T> {
    type Output = Result<T, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.acquire.as_mut().poll(cx)
    }
}

impl SharedLock {
    /// Acquires the lock in `mode`, waiting as long as it takes, as
    /// [`SharedLock::acquire`] does, and tells the acquire's place in the
    /// queue while it waits ([`Queued::place`]).
    pub fn enqueue(&self, mode: Mode) -> Queued<Guard> {
        let (places, place) = watch::channel(None);
        let lock = self.clone();
        Queued {
            place,
            acquire: Box::pin(async move {
                let held = lock
                    .acquire_placed(mode, Patience::Forever, Some(&places))
                    .await?;
                held.map(|held| Guard::new(mode, held))
                    .ok_or_else(super::unreachable_timeout)
            }),
        }
    }

    /// As [`SharedLock::enqueue`], giving up after `timeout` (`Ok(None)`,
    /// as [`SharedLock::acquire_timeout`]), counted from its first await.
    pub fn enqueue_timeout(&self, mode: Mode, timeout: Duration) -> Queued<Option<Guard>> {
        let (places, place) = watch::channel(None);
        let lock = self.clone();
        Queued {
            place,
            // The timeout counts from the first await, as an async fn's.
            acquire: Box::pin(async move {
                let held = lock
                    .acquire_placed(mode, deadline(timeout), Some(&places))
                    .await?;
                Ok(held.map(|held| Guard::new(mode, held)))
            }),
        }
    }
}
