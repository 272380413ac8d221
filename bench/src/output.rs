//! The output: what a workload measured, and the JSON object printed as the
//! last line of stdout (its fields and their order are `--help`'s "Output").

use std::sync::atomic::Ordering;

use serde::Serialize;

use crate::stats::{in_ms, latencies, max_rss_kb, num};
use crate::tally::Wakes;
use crate::Bench;

/// What a workload measured.
pub(crate) struct Outcome {
    pub(crate) clients: usize,
    pub(crate) grants: u64,
    pub(crate) secs: Option<f64>,
    pub(crate) lat_ms: Vec<f64>,
    pub(crate) latency_kind: &'static str,
    /// The workload's own fields (`None`: it has none).
    pub(crate) extra: Option<Extra>,
    /// Wake-up counts of lock workloads.
    pub(crate) wakes: Option<Wakes>,
    /// CPU of this process (all threads) from the clock's start to the
    /// run's end: `window_cpu_s`.
    pub(crate) cpu_s: f64,
}

/// The fields only some workloads have, in their order in the output
/// (after `latency_kind`). Numbers that are `Option<f64>` are rounded with
/// [`num`] (`None` prints as null).
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Extra {
    /// `contended_*` and `mixed_90r10w`.
    Loop(LoopFields),
    /// `herd_release`.
    Herd(HerdFields),
    /// `entity_*`.
    Entity(EntityFields),
    /// `semaphore`.
    Semaphore(SemaphoreFields),
    /// `memory_*`.
    Memory(MemoryFields),
}

/// The fields of the contended and mixed loops.
#[derive(Serialize)]
pub(crate) struct LoopFields {
    pub(crate) reached_target: bool,
    /// `--hold-ms`, if not 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) hold_ms: Option<f64>,
    pub(crate) acquire_timeouts: u64,
    /// Printed only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) stuck_threads: bool,
    /// `mixed_90r10w` only.
    #[serde(flatten)]
    pub(crate) mixed: Option<MixedFields>,
}

/// The mixed workload's reads and writes.
#[derive(Serialize)]
pub(crate) struct MixedFields {
    pub(crate) reads: usize,
    pub(crate) writes: usize,
    pub(crate) read_p99_ms: Option<f64>,
    pub(crate) write_p99_ms: Option<f64>,
}

/// The herd's fields.
#[derive(Serialize)]
pub(crate) struct HerdFields {
    pub(crate) fifo_order: bool,
    pub(crate) all_granted: bool,
    pub(crate) acquire_timeouts: u64,
    pub(crate) enqueue_secs: Option<f64>,
}

/// The semaphore loop's fields: its loop's, then how many permits and the
/// most holders seen at once (never more than `permits` unless violated).
#[derive(Serialize)]
pub(crate) struct SemaphoreFields {
    #[serde(flatten)]
    pub(crate) lp: LoopFields,
    pub(crate) permits: u32,
    pub(crate) max_holders: u64,
}

/// The entity workloads' fields.
#[derive(Serialize)]
pub(crate) struct EntityFields {
    pub(crate) entities: usize,
    pub(crate) sessions: u64,
    pub(crate) entity_violations: u64,
    pub(crate) reached_target: bool,
    pub(crate) acquire_timeouts: u64,
    /// `--hold-ms`, if not 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) hold_ms: Option<f64>,
    /// Printed only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) stuck_threads: bool,
}

/// The memory rows' fields: resident set before and after, the growth per
/// handle or waiter in bytes, and (`memory_waiters`) how long queueing took.
#[derive(Serialize)]
pub(crate) struct MemoryFields {
    pub(crate) rss_base_kb: u64,
    pub(crate) rss_kb: u64,
    pub(crate) bytes_each: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) enqueue_secs: Option<f64>,
}

impl MemoryFields {
    /// The fields for `n` handles or waiters, without `enqueue_secs`.
    pub(crate) fn new(base_kb: u64, rss_kb: u64, n: usize) -> MemoryFields {
        let each = (rss_kb.saturating_sub(base_kb) * 1024) as f64 / n.max(1) as f64;
        MemoryFields {
            rss_base_kb: base_kb,
            rss_kb,
            bytes_each: num(Some(each.round())),
            enqueue_secs: None,
        }
    }
}

/// The output line's fields, in order.
#[derive(Serialize)]
struct Line<'a> {
    #[serde(rename = "impl")]
    impl_name: &'a str,
    workload: String,
    clients: usize,
    grants: u64,
    secs: Option<f64>,
    grants_per_s: Option<f64>,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    max_ms: Option<f64>,
    violations: u64,
    errors: u64,
    latency_kind: &'static str,
    #[serde(flatten)]
    extra: Option<&'a Extra>,
    #[serde(flatten)]
    wakes: Option<Wakes>,
    window_cpu_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_rss_kb: Option<std::ffi::c_long>,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_error: Option<&'a str>,
    version: String,
}

impl Bench {
    /// The output line.
    pub(crate) fn json_line(&self, o: &Outcome) -> String {
        let lat = latencies(&o.lat_ms);
        let secs = o.secs.filter(|s| s.is_finite());
        let per_s = match secs {
            Some(s) if s > 0.0 => o.grants as f64 / s,
            _ => 0.0,
        };
        let line = Line {
            impl_name: &self.impl_name,
            workload: self.workload.name(),
            clients: o.clients,
            grants: o.grants,
            secs: num(secs),
            grants_per_s: num(Some(per_s)),
            p50_ms: num(in_ms(lat.at(50.0))),
            p99_ms: num(in_ms(lat.at(99.0))),
            max_ms: num(in_ms(lat.max())),
            violations: self.holders.violations(),
            errors: self.errors.count.load(Ordering::Relaxed),
            latency_kind: o.latency_kind,
            extra: o.extra.as_ref(),
            wakes: o.wakes,
            window_cpu_s: num(Some(o.cpu_s)),
            max_rss_kb: max_rss_kb(),
            first_error: self.errors.first.get().map(String::as_str),
            version: format!("zk-rwlock-{} zookeeper-client-0.11", env!("CARGO_PKG_VERSION")),
        };
        serde_json::to_string(&line).expect("the output line serializes")
    }
}
