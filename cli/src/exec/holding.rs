//! What `exec` holds: one lock (or a semaphore's permit, as a write guard),
//! or several locks taken all or nothing (`--also-read`, `--also-write`),
//! behind one face. With several, the
//! state is the worst part's, the lease deadline the earliest part's, and a
//! revocation request on any part counts.

use zk_rwlock::{Guard, HoldState, MultiGuard};

/// The lock or locks `exec` holds.
pub enum Holding {
    /// One lock (PATH), or one permit of the semaphore PATH
    /// (`Guard::from(permit)`).
    One(Guard),
    /// Several: `first` is PATH, the one `--read`/`--write` names.
    Many { guard: MultiGuard, first: String },
}

impl Holding {
    fn first(&self) -> Option<&Guard> {
        match self {
            Holding::One(guard) => Some(guard),
            Holding::Many { guard, first } => guard.part(first),
        }
    }

    /// PATH's contender node.
    pub fn node(&self) -> &str {
        self.first().map_or("", Guard::node)
    }

    /// PATH's fencing token.
    pub fn fencing_token(&self) -> i64 {
        self.first().map_or(0, Guard::fencing_token)
    }

    /// Every part: lock directory, node, fencing token (in path order).
    pub fn parts(&self) -> Vec<(String, &str, i64)> {
        let dir = |g: &Guard| g.lock_path().to_owned();
        match self {
            Holding::One(g) => vec![(dir(g), g.node(), g.fencing_token())],
            Holding::Many { guard, .. } => guard
                .parts()
                .iter()
                .map(|g| (dir(g), g.node(), g.fencing_token()))
                .collect(),
        }
    }

    /// The part whose loss is the news, for messages: the first lost part.
    pub fn lost_part(&self) -> &str {
        match self {
            Holding::One(g) => g.node(),
            Holding::Many { guard, .. } => guard
                .parts()
                .iter()
                .find(|g| g.state() == HoldState::Lost)
                .map_or_else(|| self.node(), Guard::node),
        }
    }

    pub fn state(&self) -> HoldState {
        match self {
            Holding::One(g) => g.state(),
            Holding::Many { guard, .. } => guard.state(),
        }
    }

    pub fn lease_deadline(&self) -> std::time::Instant {
        match self {
            Holding::One(g) => g.lease_deadline(),
            Holding::Many { guard, .. } => guard.lease_deadline(),
        }
    }

    pub async fn suspended(&self) -> HoldState {
        match self {
            Holding::One(g) => g.suspended().await,
            Holding::Many { guard, .. } => guard.suspended().await,
        }
    }

    pub async fn resumed(&self) -> HoldState {
        match self {
            Holding::One(g) => g.resumed().await,
            Holding::Many { guard, .. } => guard.resumed().await,
        }
    }

    /// True when a revocation request reaches any part; false once every
    /// part is lost without one.
    pub async fn revocation_requested(&self) -> bool {
        match self {
            Holding::One(g) => g.revocation_requested().await,
            Holding::Many { guard, .. } => guard.revocation_requested().await,
        }
    }

    pub async fn release(self) -> Result<(), zk_rwlock::Error> {
        match self {
            Holding::One(g) => g.release().await,
            Holding::Many { guard, .. } => guard.release().await,
        }
    }
}
