//! Lock metrics through the [`metrics`](https://docs.rs/metrics) facade
//! (Cargo feature `metrics`, off by default): the library records, the
//! application installs the exporter (Prometheus, StatsD, ...).
//!
//! [`METRICS`] lists every metric with its kind, labels and meaning (the
//! table in `docs/metrics.md` is kept in step with it by a test);
//! [`describe_metrics`] registers their help texts and units with the
//! installed recorder. Without the feature both still exist (the list is
//! data), and nothing is recorded: every recording call compiles to
//! nothing, and a lock keeps only the counts behind
//! [`Stats::waiting`](crate::Stats::waiting),
//! [`Stats::holding`](crate::Stats::holding) and
//! [`Stats::lost`](crate::Stats::lost).
//!
//! # Labels
//!
//! | label | values |
//! |---|---|
//! | `mode` | `read`, `write` |
//! | `outcome` | `granted`; `timeout` (a deadline passed, or `try_*` found the lock taken); `failed` (an error); `cancelled` (the acquire's future was dropped, e.g. by `tokio::time::timeout`) |
//! | `state` | `held`, `suspended` (the lock's session is disconnected, the lease running) |
//! | `handoff` | `immediate` (granted by its first listing), `handoff` (the watched node's deletion, with or without reading the release record), `marker` (the watched writer's release marker), `relisted` (after a new listing) |
//! | `reason` | `session_expired`, `session_closed` (closed, or its authentication failed), `node_deleted` (by someone else), `lease_ran_out` |
//! | `path` | the lock directory, only for locks built with [`LockBuilder::metrics_path_label`](crate::LockBuilder::metrics_path_label) |
//!
//! No lock path is a label unless asked for: a service with a lock per
//! record would otherwise make a time series per record.
//!
//! # When each is recorded
//!
//! An acquire is a waiter from its call until it ends (granted, gave up,
//! failed, or its future dropped); its wait is observed in
//! `zk_rwlock_acquire_wait_seconds` then, also when cancelled
//! (`outcome="cancelled"`, counted in neither `zk_rwlock_acquire_timeouts_total`
//! nor [`Stats`](crate::Stats)' ends). A guard is a holder from its grant
//! until it is released or dropped (when the release begins, not when its
//! deletion is confirmed) or known lost; its hold time is observed then.
//! A guard moves from `held` to `suspended` and back as its lock's session
//! disconnects and reconnects. A lost guard leaves the gauge when its loss
//! is known: at once for a node deleted or a session ended (the guard's
//! kept watch tells), and for a lease that ran out when the guard's state
//! is looked at (`state()`, a pending `lost()`/`suspended()`, ...), as
//! [`HoldState`](crate::HoldState) itself. A release that finds its node
//! deleted by someone else counts a loss (`node_deleted`) too.
//! `zk_rwlock_sessions_expired_total` counts the sessions made by
//! [`connect_client`](crate::connect_client) and friends (and
//! [`SharedLock::connect`](crate::SharedLock::connect)) that expire.

use crate::acquire::Counts;
use crate::zk;

/// The kind of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// A monotonic count (`_total`).
    Counter,
    /// A value that goes up and down.
    Gauge,
    /// A distribution of observed values (here: seconds).
    Histogram,
}

impl MetricKind {
    /// The Prometheus type name: `counter`, `gauge`, `histogram`.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
            MetricKind::Histogram => "histogram",
        }
    }
}

/// One metric the library records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// Its name, Prometheus style.
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: MetricKind,
    /// Its labels (besides `path`, which a lock adds when asked to).
    pub labels: &'static [&'static str],
    /// What it means (the help text [`describe_metrics`] registers).
    pub help: &'static str,
}

/// Wait of an acquire, in seconds.
pub const ACQUIRE_WAIT_SECONDS: &str = "zk_rwlock_acquire_wait_seconds";
/// Hold time of a guard, in seconds.
pub const HOLD_SECONDS: &str = "zk_rwlock_hold_seconds";
/// Acquires in progress.
pub const WAITERS: &str = "zk_rwlock_waiters";
/// Guards holding.
pub const HOLDERS: &str = "zk_rwlock_holders";
/// Grants.
pub const GRANTS_TOTAL: &str = "zk_rwlock_grants_total";
/// Guards lost.
pub const LOST_TOTAL: &str = "zk_rwlock_lost_total";
/// Acquires that gave up.
pub const ACQUIRE_TIMEOUTS_TOTAL: &str = "zk_rwlock_acquire_timeouts_total";
/// Relistings after connection losses.
pub const RETRIES_TOTAL: &str = "zk_rwlock_retries_total";
/// Expired sessions.
pub const SESSIONS_EXPIRED_TOTAL: &str = "zk_rwlock_sessions_expired_total";

/// Every metric the library records, with its labels and meaning.
pub const METRICS: &[Metric] = &[
    Metric {
        name: ACQUIRE_WAIT_SECONDS,
        kind: MetricKind::Histogram,
        labels: &["mode", "outcome"],
        help: "Time from an acquire's call to its end: granted, timeout (deadline passed or try_* found the lock taken), failed, or cancelled (future dropped).",
    },
    Metric {
        name: HOLD_SECONDS,
        kind: MetricKind::Histogram,
        labels: &["mode"],
        help: "Time from a grant to the guard's release, drop, or known loss.",
    },
    Metric {
        name: WAITERS,
        kind: MetricKind::Gauge,
        labels: &["mode"],
        help: "Acquires in progress (called, not yet granted, given up, failed or cancelled).",
    },
    Metric {
        name: HOLDERS,
        kind: MetricKind::Gauge,
        labels: &["mode", "state"],
        help: "Guards holding a lock, held or suspended (session disconnected, lease running); lost, released and dropped guards are not counted.",
    },
    Metric {
        name: GRANTS_TOTAL,
        kind: MetricKind::Counter,
        labels: &["mode", "handoff"],
        help: "Grants, by how they came: immediate (first listing), handoff (watched node's deletion), marker (release marker), relisted (new listing).",
    },
    Metric {
        name: LOST_TOTAL,
        kind: MetricKind::Counter,
        labels: &["reason"],
        help: "Guards lost: session_expired, session_closed, node_deleted (by someone else), lease_ran_out.",
    },
    Metric {
        name: ACQUIRE_TIMEOUTS_TOTAL,
        kind: MetricKind::Counter,
        labels: &[],
        help: "Acquires that gave up: a deadline passed, or try_* found the lock taken.",
    },
    Metric {
        name: RETRIES_TOTAL,
        kind: MetricKind::Counter,
        labels: &[],
        help: "Connection losses that made an acquire list the lock directory again.",
    },
    Metric {
        name: SESSIONS_EXPIRED_TOTAL,
        kind: MetricKind::Counter,
        labels: &[],
        help: "Sessions made by the library's connect functions that expired.",
    },
];

/// Registers the help text and unit of every metric in [`METRICS`] with
/// the installed recorder (`describe_counter!` and friends). Call it once
/// after installing the recorder; optional (exporters then show no help
/// text). Does nothing without the `metrics` feature.
pub fn describe_metrics() {
    #[cfg(feature = "metrics")]
    imp::describe();
}

// The values of the labels that are not plain modes: the recording calls
// below take them, and the lock's counts (`stats.rs`, above) hand them in.

/// How an acquire ended, as the metrics' `outcome` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) enum Outcome {
    Granted,
    Timeout,
    Failed,
    /// Its future was dropped.
    Cancelled,
}

/// How a grant came about: the metrics' `handoff` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) enum GrantKind {
    /// By the first listing, without waiting.
    Immediate,
    /// By the watched node's deletion (with or without the release record).
    Handoff,
    /// By the watched writer's release marker.
    Marker,
    /// By a new listing after a wake-up or a retry.
    Relisted,
}

#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
impl GrantKind {
    /// How the grant of an acquire that did `counts` came about.
    pub(crate) fn of(counts: Counts) -> GrantKind {
        if counts.marked {
            GrantKind::Marker
        } else if counts.handoff {
            GrantKind::Handoff
        } else if counts.wakeups == 0 && counts.listings <= 1 {
            GrantKind::Immediate
        } else {
            GrantKind::Relisted
        }
    }
}

/// Why a guard was lost: the metrics' `reason` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LostReason {
    SessionExpired,
    /// Closed, or its authentication failed.
    SessionClosed,
    /// Deleted by someone else.
    NodeDeleted,
    LeaseRanOut,
}

impl LostReason {
    /// The reason for a guard lost with its session, whose state is `state`.
    pub(crate) fn of_session(state: zk::SessionState) -> LostReason {
        match state {
            zk::SessionState::Expired => LostReason::SessionExpired,
            _ => LostReason::SessionClosed,
        }
    }
}

pub(crate) use imp::*;

/// The recording, with the feature.
#[cfg(feature = "metrics")]
mod imp {
    use std::sync::{Arc, Mutex, PoisonError, Weak};
    use std::time::Duration;

    use ::metrics::{Key, KeyName, Label, Level, Metadata, SharedString, Unit};

    use super::*;
    use crate::acquire::Counts;
    use crate::background::{self, AbortOnDrop};
    use crate::node_name::Mode;
    use crate::zk;
    use tokio::time::Instant;

    static METADATA: Metadata<'static> = Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

    pub(super) fn describe() {
        ::metrics::with_recorder(|recorder| {
            for metric in METRICS {
                let name = KeyName::from_const_str(metric.name);
                let help = SharedString::const_str(metric.help);
                match metric.kind {
                    MetricKind::Counter => recorder.describe_counter(name, Some(Unit::Count), help),
                    MetricKind::Gauge => recorder.describe_gauge(name, Some(Unit::Count), help),
                    MetricKind::Histogram => recorder.describe_histogram(name, Some(Unit::Seconds), help),
                }
            }
        });
    }

    /// A static label slice: `labels!("mode" => "read", ...)`.
    macro_rules! labels {
        ($($k:literal => $v:literal),*) => {{
            static LABELS: &[Label] = &[$(Label::from_static_parts($k, $v)),*];
            LABELS
        }};
    }

    fn mode_labels(mode: Mode) -> &'static [Label] {
        match mode {
            Mode::Read => labels!("mode" => "read"),
            Mode::Write => labels!("mode" => "write"),
        }
    }

    fn wait_labels(mode: Mode, outcome: Outcome) -> &'static [Label] {
        use Outcome::*;
        match (mode, outcome) {
            (Mode::Read, Granted) => labels!("mode" => "read", "outcome" => "granted"),
            (Mode::Read, Timeout) => labels!("mode" => "read", "outcome" => "timeout"),
            (Mode::Read, Failed) => labels!("mode" => "read", "outcome" => "failed"),
            (Mode::Read, Cancelled) => labels!("mode" => "read", "outcome" => "cancelled"),
            (Mode::Write, Granted) => labels!("mode" => "write", "outcome" => "granted"),
            (Mode::Write, Timeout) => labels!("mode" => "write", "outcome" => "timeout"),
            (Mode::Write, Failed) => labels!("mode" => "write", "outcome" => "failed"),
            (Mode::Write, Cancelled) => labels!("mode" => "write", "outcome" => "cancelled"),
        }
    }

    fn holder_labels(mode: Mode, suspended: bool) -> &'static [Label] {
        match (mode, suspended) {
            (Mode::Read, false) => labels!("mode" => "read", "state" => "held"),
            (Mode::Read, true) => labels!("mode" => "read", "state" => "suspended"),
            (Mode::Write, false) => labels!("mode" => "write", "state" => "held"),
            (Mode::Write, true) => labels!("mode" => "write", "state" => "suspended"),
        }
    }

    fn grant_labels(mode: Mode, kind: GrantKind) -> &'static [Label] {
        use GrantKind::*;
        match (mode, kind) {
            (Mode::Read, Immediate) => labels!("mode" => "read", "handoff" => "immediate"),
            (Mode::Read, Handoff) => labels!("mode" => "read", "handoff" => "handoff"),
            (Mode::Read, Marker) => labels!("mode" => "read", "handoff" => "marker"),
            (Mode::Read, Relisted) => labels!("mode" => "read", "handoff" => "relisted"),
            (Mode::Write, Immediate) => labels!("mode" => "write", "handoff" => "immediate"),
            (Mode::Write, Handoff) => labels!("mode" => "write", "handoff" => "handoff"),
            (Mode::Write, Marker) => labels!("mode" => "write", "handoff" => "marker"),
            (Mode::Write, Relisted) => labels!("mode" => "write", "handoff" => "relisted"),
        }
    }

    fn lost_labels(reason: LostReason) -> &'static [Label] {
        match reason {
            LostReason::SessionExpired => labels!("reason" => "session_expired"),
            LostReason::SessionClosed => labels!("reason" => "session_closed"),
            LostReason::NodeDeleted => labels!("reason" => "node_deleted"),
            LostReason::LeaseRanOut => labels!("reason" => "lease_ran_out"),
        }
    }

    /// What a lock records its metrics with: its `path` label, if asked
    /// for, and its holders by link state.
    #[derive(Default, Clone)]
    pub(crate) struct LockMetrics(Arc<Shared>);

    #[derive(Default)]
    pub(crate) struct Shared {
        path: Option<Arc<str>>,
        holders: Mutex<Holders>,
    }

    impl std::ops::Deref for LockMetrics {
        type Target = Shared;
        fn deref(&self) -> &Shared {
            &self.0
        }
    }

    /// The guards of one lock that hold it, by mode, and whether its
    /// session is disconnected (they are all `suspended` then); whether the
    /// session's hub tells it the session's state (from its first holder
    /// on, for the lock's life: [`crate::hub`]), or else the task that
    /// follows it while there are holders.
    #[derive(Default)]
    struct Holders {
        count: [u64; 2],
        suspended: bool,
        linked: bool,
        link_watch: Option<AbortOnDrop<()>>,
    }

    fn index(mode: Mode) -> usize {
        match mode {
            Mode::Read => 0,
            Mode::Write => 1,
        }
    }

    impl LockMetrics {
        pub(crate) fn new(path: Option<&str>) -> LockMetrics {
            LockMetrics(Arc::new(Shared {
                path: path.map(Arc::from),
                holders: Mutex::default(),
            }))
        }

        /// A guard of `mode` begins to hold the lock, on `client`'s
        /// session: the lock's first one has the session's hub tell it the
        /// session's state from then on.
        pub(crate) fn holder_in(&self, mode: Mode, client: &zk::Client) {
            let mut holders = self.holders();
            if holders.count == [0, 0] {
                if !holders.linked {
                    if let Some(hub) = crate::hub::of(client) {
                        let me: Arc<dyn crate::hub::Linked> = self.0.clone();
                        hub.link(Arc::downgrade(&me));
                        holders.linked = true;
                    }
                }
                // Linked (or watching) first, then reading the state: no
                // change is missed.
                if holders.linked {
                    holders.suspended = is_down(client.state());
                } else {
                    let states = client.state_watcher();
                    holders.suspended = is_down(states.peek_state());
                    holders.link_watch =
                        start_link_watch(Arc::downgrade(&self.0), states, client.session_id().0);
                }
            }
            holders.count[index(mode)] += 1;
            self.gauge(HOLDERS, holder_labels(mode, holders.suspended), 1.0);
        }
    }

    impl Shared {
        /// The key of `name` with `labels`, and the lock's path if it has one.
        fn key(&self, name: &'static str, labels: &'static [Label]) -> Key {
            match &self.path {
                None => Key::from_static_parts(name, labels),
                Some(path) => {
                    let mut all = labels.to_vec();
                    all.push(Label::new("path", SharedString::from_shared(path.clone())));
                    Key::from_parts(name, all)
                }
            }
        }

        fn counter(&self, name: &'static str, labels: &'static [Label], n: u64) {
            ::metrics::with_recorder(|r| {
                r.register_counter(&self.key(name, labels), &METADATA)
                    .increment(n)
            });
        }

        fn gauge(&self, name: &'static str, labels: &'static [Label], delta: f64) {
            ::metrics::with_recorder(|r| {
                r.register_gauge(&self.key(name, labels), &METADATA)
                    .increment(delta)
            });
        }

        fn histogram(&self, name: &'static str, labels: &'static [Label], value: Duration) {
            ::metrics::with_recorder(|r| {
                r.register_histogram(&self.key(name, labels), &METADATA)
                    .record(value.as_secs_f64())
            });
        }

        pub(crate) fn waiter_in(&self, mode: Mode) {
            self.gauge(WAITERS, mode_labels(mode), 1.0);
        }

        /// An acquire that started at `started` is no longer waiting;
        /// unless `finished`, its future was dropped (cancelled).
        pub(crate) fn waiter_out(&self, mode: Mode, finished: bool, started: Instant) {
            self.gauge(WAITERS, mode_labels(mode), -1.0);
            if !finished {
                self.acquire_ended(mode, Outcome::Cancelled, started.elapsed(), Counts::default());
            }
        }

        /// An acquire ended after it did `counts`.
        pub(crate) fn acquire_ended(&self, mode: Mode, outcome: Outcome, waited: Duration, counts: Counts) {
            self.histogram(ACQUIRE_WAIT_SECONDS, wait_labels(mode, outcome), waited);
            if outcome == Outcome::Granted {
                self.counter(GRANTS_TOTAL, grant_labels(mode, GrantKind::of(counts)), 1);
            }
            let retries = counts.retries;
            if outcome == Outcome::Timeout {
                self.counter(ACQUIRE_TIMEOUTS_TOTAL, &[], 1);
            }
            if retries > 0 {
                self.counter(RETRIES_TOTAL, &[], u64::from(retries));
            }
        }

        fn holders(&self) -> std::sync::MutexGuard<'_, Holders> {
            self.holders.lock().unwrap_or_else(PoisonError::into_inner)
        }

        /// A guard of `mode` that held the lock since `since` no longer
        /// does; the last one stops following the session's state.
        pub(crate) fn holder_out(&self, mode: Mode, since: std::time::Instant) {
            self.histogram(HOLD_SECONDS, mode_labels(mode), since.elapsed());
            let mut holders = self.holders();
            let count = &mut holders.count[index(mode)];
            *count = count.saturating_sub(1);
            self.gauge(HOLDERS, holder_labels(mode, holders.suspended), -1.0);
            if holders.count == [0, 0] {
                holders.link_watch = None;
            }
        }

        /// A guard changes its mode from `from` to `to` (a downgrade).
        pub(crate) fn holder_moved(&self, from: Mode, to: Mode) {
            if from == to {
                return;
            }
            let mut holders = self.holders();
            let count = &mut holders.count[index(from)];
            *count = count.saturating_sub(1);
            holders.count[index(to)] += 1;
            self.gauge(HOLDERS, holder_labels(from, holders.suspended), -1.0);
            self.gauge(HOLDERS, holder_labels(to, holders.suspended), 1.0);
        }

        pub(crate) fn lost(&self, reason: LostReason) {
            self.counter(LOST_TOTAL, lost_labels(reason), 1);
        }
    }

    impl crate::hub::Linked for Shared {
        /// The lock's session is (`suspended`) or is no longer
        /// disconnected: its holders move.
        fn link(&self, state: zk::SessionState) {
            let suspended = is_down(state);
            let mut holders = self.holders();
            if holders.suspended == suspended {
                return;
            }
            holders.suspended = suspended;
            for mode in [Mode::Read, Mode::Write] {
                let n = holders.count[index(mode)] as f64;
                if n > 0.0 {
                    self.gauge(HOLDERS, holder_labels(mode, !suspended), -n);
                    self.gauge(HOLDERS, holder_labels(mode, suspended), n);
                }
            }
        }
    }

    /// Whether a session in `state` makes its guards suspended (as
    /// [`HoldState::Suspended`](crate::HoldState::Suspended)).
    fn is_down(state: zk::SessionState) -> bool {
        matches!(
            state,
            zk::SessionState::Disconnected | zk::SessionState::ConnectedReadOnly
        )
    }

    /// Follows the session's `states` for the holders of a lock whose
    /// session has no hub (one the caller connected), where the session `id`
    /// runs; ends with the session, or when aborted (no holders left).
    fn start_link_watch(
        lock: Weak<Shared>,
        mut states: zk::StateWatcher,
        id: i64,
    ) -> Option<AbortOnDrop<()>> {
        let work = async move {
            loop {
                let state = states.changed().await;
                // A session that ended loses its guards, which leave the
                // gauge as they learn it (their kept watches tell them).
                if state.is_terminated() {
                    return;
                }
                let Some(lock) = lock.upgrade() else { return };
                crate::hub::Linked::link(&*lock, states.peek_state());
            }
        };
        background::spawn_near(id, work).map(AbortOnDrop)
    }

    /// Counts the session of `client` in `zk_rwlock_sessions_expired_total`
    /// if it expires: a task follows its state where it runs.
    pub(crate) fn watch_session(client: &zk::Client) {
        let mut states = client.state_watcher();
        let work = async move {
            loop {
                match states.changed().await {
                    zk::SessionState::Expired => {
                        ::metrics::with_recorder(|r| {
                            r.register_counter(&Key::from_static_name(SESSIONS_EXPIRED_TOTAL), &METADATA)
                                .increment(1)
                        });
                        return;
                    }
                    state if state.is_terminated() => return,
                    _ => {}
                }
            }
        };
        // Not awaited: it ends with the session.
        drop(background::spawn_near(client.session_id().0, work));
    }
}

/// Nothing is recorded without the feature: the same calls, empty.
#[cfg(not(feature = "metrics"))]
mod imp {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{LostReason, Outcome};
    use crate::acquire::Counts;
    use crate::node_name::Mode;
    use crate::zk;

    #[derive(Default, Clone)]
    pub(crate) struct LockMetrics;

    impl LockMetrics {
        pub(crate) fn new(_path: Option<&str>) -> LockMetrics {
            LockMetrics
        }
        #[inline]
        pub(crate) fn waiter_in(&self, _mode: Mode) {}
        #[inline]
        pub(crate) fn waiter_out(&self, _mode: Mode, _finished: bool, _started: Instant) {}
        #[inline]
        pub(crate) fn acquire_ended(
            &self,
            _mode: Mode,
            _outcome: Outcome,
            _waited: Duration,
            _counts: Counts,
        ) {
        }
        #[inline]
        pub(crate) fn holder_in(&self, _mode: Mode, _client: &zk::Client) {}
        #[inline]
        pub(crate) fn holder_out(&self, _mode: Mode, _since: std::time::Instant) {}
        #[inline]
        pub(crate) fn holder_moved(&self, _from: Mode, _to: Mode) {}
        #[inline]
        pub(crate) fn lost(&self, _reason: LostReason) {}
    }

    #[inline]
    pub(crate) fn watch_session(_client: &zk::Client) {}
}

#[cfg(test)]
mod label_tests {
    use super::*;

    #[test]
    fn how_grants_came_about() {
        let counts = |listings, wakeups, handoff, marked| Counts {
            listings,
            wakeups,
            retries: 0,
            handoff,
            marked,
        };
        use GrantKind::*;
        for (listings, wakeups, handoff, marked, kind) in [
            (1, 0, false, false, Immediate),
            (0, 0, false, false, Immediate),
            // A retry listed again: not granted by the first listing.
            (2, 0, false, false, Relisted),
            (1, 1, false, false, Relisted),
            (2, 1, false, false, Relisted),
            // The watched node found gone when the watch was set: no wake-up.
            (1, 0, true, false, Handoff),
            (1, 1, true, false, Handoff),
            (1, 1, true, true, Marker),
            (3, 2, true, true, Marker),
        ] {
            assert_eq!(
                GrantKind::of(counts(listings, wakeups, handoff, marked)),
                kind,
                "{listings} {wakeups} {handoff} {marked}"
            );
        }
    }

    #[test]
    fn loss_reasons() {
        use zk::SessionState::*;
        assert_eq!(LostReason::of_session(Expired), LostReason::SessionExpired);
        for state in [Closed, AuthFailed, SyncConnected, Disconnected] {
            assert_eq!(
                LostReason::of_session(state),
                LostReason::SessionClosed,
                "{state:?}"
            );
        }
    }
}

#[cfg(all(test, feature = "metrics"))]
mod tests {
    use std::time::Duration;

    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    use super::*;
    use crate::acquire::Counts;
    use crate::node_name::Mode;

    /// The value of each metric recorded, as `name{label=value,...}`.
    fn recorded(recorder: &DebuggingRecorder) -> Vec<(String, DebugValue)> {
        let mut all: Vec<(String, DebugValue)> = recorder
            .snapshotter()
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(key, _, _, value)| {
                let key = key.key();
                let labels: Vec<String> = key
                    .labels()
                    .map(|l| format!("{}={}", l.key(), l.value()))
                    .collect();
                (format!("{}{{{}}}", key.name(), labels.join(",")), value)
            })
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    #[test]
    fn an_acquire_records_its_wait_grant_retries_and_timeout() {
        let recorder = DebuggingRecorder::new();
        ::metrics::with_local_recorder(&recorder, || {
            let lock = LockMetrics::new(Some("/a"));
            let counts = Counts {
                listings: 3,
                wakeups: 1,
                retries: 2,
                handoff: false,
                marked: false,
            };
            lock.acquire_ended(Mode::Write, Outcome::Granted, Duration::from_millis(1500), counts);
            lock.acquire_ended(
                Mode::Read,
                Outcome::Timeout,
                Duration::from_millis(20),
                Counts::default(),
            );
        });
        let got = recorded(&recorder);
        let names: Vec<&str> = got.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "zk_rwlock_acquire_timeouts_total{path=/a}",
                "zk_rwlock_acquire_wait_seconds{mode=read,outcome=timeout,path=/a}",
                "zk_rwlock_acquire_wait_seconds{mode=write,outcome=granted,path=/a}",
                "zk_rwlock_grants_total{mode=write,handoff=relisted,path=/a}",
                "zk_rwlock_retries_total{path=/a}",
            ]
        );
        assert_eq!(got[0].1, DebugValue::Counter(1));
        assert_eq!(got[2].1, DebugValue::Histogram(vec![1.5.into()]));
        assert_eq!(got[3].1, DebugValue::Counter(1));
        assert_eq!(got[4].1, DebugValue::Counter(2));
    }

    #[test]
    fn every_metric_is_described() {
        let recorder = DebuggingRecorder::new();
        ::metrics::with_local_recorder(&recorder, || {
            describe_metrics();
            // A description shows with a metric recorded under its name.
            let lock = LockMetrics::new(None);
            lock.acquire_ended(Mode::Read, Outcome::Cancelled, Duration::ZERO, Counts::default());
        });
        let snapshot = recorder.snapshotter().snapshot().into_vec();
        let [(key, unit, help, _)] = &snapshot[..] else {
            panic!("{snapshot:?}")
        };
        assert_eq!(key.key().name(), ACQUIRE_WAIT_SECONDS);
        assert_eq!(*unit, Some(::metrics::Unit::Seconds));
        assert_eq!(help.as_deref(), Some(METRICS[0].help));
    }

    #[test]
    fn a_downgraded_holder_moves_from_write_to_read() {
        let recorder = DebuggingRecorder::new();
        ::metrics::with_local_recorder(&recorder, || {
            let lock = LockMetrics::new(None);
            lock.holder_moved(Mode::Write, Mode::Read);
            lock.holder_moved(Mode::Read, Mode::Read);
        });
        let got = recorded(&recorder);
        let got: Vec<(&str, &DebugValue)> = got.iter().map(|(k, v)| (k.as_str(), v)).collect();
        assert_eq!(
            got,
            [
                (
                    "zk_rwlock_holders{mode=read,state=held}",
                    &DebugValue::Gauge(1.0.into())
                ),
                (
                    "zk_rwlock_holders{mode=write,state=held}",
                    &DebugValue::Gauge((-1.0).into())
                ),
            ]
        );
    }

    #[test]
    fn names_follow_prometheus_conventions() {
        for metric in METRICS {
            assert!(metric.name.starts_with("zk_rwlock_"), "{}", metric.name);
            match metric.kind {
                MetricKind::Counter => assert!(metric.name.ends_with("_total"), "{}", metric.name),
                MetricKind::Histogram => assert!(metric.name.ends_with("_seconds"), "{}", metric.name),
                MetricKind::Gauge => assert!(!metric.name.ends_with("_total"), "{}", metric.name),
            }
        }
    }
}
