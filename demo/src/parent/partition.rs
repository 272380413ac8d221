//! --partition: the worker cut off from ZooKeeper mid-hold, through proxies
//! of its own.

use std::fmt::Write as _;

use zk_rwlock::Mode;
use zk_rwlock_testkit::proxy::Proxy;

use crate::event::{now_us, Kind};
use crate::timeline::{ms, secs, Marker};
use crate::verdict::{Hold, MarkKind, Model, Suspension};

/// A hold of at least this long (µs) is the long hold a worker was asked for.
const LONG_HOLD_US: u64 = 2_000_000;

/// The worker cut off from ZooKeeper (--partition): the first one, through
/// proxies of its own.
pub(super) struct Partition {
    /// Its index.
    pub(super) victim: usize,
    /// Its connect string: the proxies.
    pub(super) connect: String,
    proxies: Vec<Proxy>,
    /// Whether it was asked for a long hold.
    pub(super) asked: bool,
    /// When it was cut off, and the node it held.
    pub(super) frozen: Option<(u64, String)>,
    /// When its connection was restored.
    pub(super) restored: Option<u64>,
}

impl Partition {
    /// One proxy per server of `connect` (a chroot suffix is kept).
    pub(super) fn start(connect: &str) -> Result<Partition, String> {
        let (hosts, chroot) = connect.split_at(connect.find('/').unwrap_or(connect.len()));
        let mut proxies = Vec::new();
        for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
            proxies.push(Proxy::try_start(host).map_err(|e| format!("a proxy to {host}: {e}"))?);
        }
        let addrs: Vec<&str> = proxies.iter().map(Proxy::addr).collect();
        Ok(Partition {
            victim: 0,
            connect: format!("{}{chroot}", addrs.join(",")),
            proxies,
            asked: false,
            frozen: None,
            restored: None,
        })
    }

    /// Cuts the worker off if `kind`, from worker `w`, is the grant of the
    /// long hold it was asked for; returns the node it holds then.
    pub(super) fn cut_off(&mut self, w: usize, kind: &Kind) -> Option<String> {
        let Kind::Grant { node, hold_us, .. } = kind else {
            return None;
        };
        if w != self.victim || !self.asked || self.frozen.is_some() || *hold_us < LONG_HOLD_US {
            return None;
        }
        for proxy in &self.proxies {
            proxy.freeze();
        }
        self.frozen = Some((now_us(), node.clone()));
        Some(node.clone())
    }

    /// Restores the connection (what was held back is delivered).
    pub(super) fn restore(&mut self) {
        if self.frozen.is_some() && self.restored.is_none() {
            for proxy in &self.proxies {
                proxy.thaw();
            }
            self.restored = Some(now_us());
        }
    }

    /// The suspension of the cut-off hold, if the worker reported one.
    fn suspension(&self, model: &Model) -> Option<Suspension> {
        let (t, _) = self.frozen.as_ref()?;
        model
            .suspensions
            .iter()
            .find(|s| s.worker == self.victim && s.start >= *t)
            .copied()
    }

    /// The cut and the lease deadline, for the timeline.
    pub(super) fn markers(&self, model: &Model, t0: u64) -> Vec<Marker> {
        let label = &model.workers[self.victim].label;
        let mut out = Vec::new();
        if let Some((t, _)) = &self.frozen {
            out.push(Marker {
                t: *t,
                label: format!(
                    "{label} cut off from ZooKeeper at {}",
                    secs(*t as i64 - t0 as i64)
                ),
                legend: "cut off / lease deadline",
            });
        }
        if let Some(s) = self.suspension(model) {
            out.push(Marker {
                t: s.lease,
                label: format!(
                    "{label}'s lease deadline {}: no one else could {} before it",
                    secs(s.lease as i64 - t0 as i64),
                    if model.counts_permits() {
                        "take its permit"
                    } else {
                        "hold the lock"
                    }
                ),
                legend: "cut off / lease deadline",
            });
        }
        out
    }

    /// What happened, in order, for the totals.
    pub(super) fn summary(&self, model: &Model, t0: u64) -> String {
        let at = |t: u64| secs(t as i64 - t0 as i64);
        let victim = &model.workers[self.victim];
        let Some((t, node)) = &self.frozen else {
            return format!(
                "{} was never granted its long hold: nothing was cut off",
                victim.label
            );
        };
        let mut out = format!("{} cut off at {} in a long hold", victim.label, at(*t));
        if let Some(h) = model.holds.iter().find(|h| &h.node == node) {
            let _ = write!(out, " (token 0x{:x})", h.token);
        }
        match self.suspension(model) {
            Some(s) => {
                let _ = write!(
                    out,
                    "; suspended at {} (work stopped); lease deadline {}",
                    at(s.start),
                    at(s.lease)
                );
                if let Some(lost) = model
                    .marks
                    .iter()
                    .find(|m| m.worker == self.victim && m.kind == MarkKind::Lost && m.t >= *t)
                {
                    let _ = write!(out, "; lost at {}", at(lost.t));
                }
                if let Some(permits) = model.permits {
                    match permit_taken(model, self.victim, *t, permits) {
                        Some(h) => {
                            let _ = write!(
                                out,
                                "; its permit taken by {} at {} ({permits} others held then), {} after the lease deadline",
                                model.workers[h.worker].label,
                                at(h.start),
                                ms(h.start.saturating_sub(s.lease))
                            );
                        }
                        None => out.push_str("; nobody took its permit afterwards"),
                    }
                    if let Some(r) = self.restored {
                        let _ = write!(out, "; connection restored at {}", at(r));
                    }
                    return out;
                }
                let next = model
                    .holds
                    .iter()
                    .filter(|h| h.worker != self.victim && h.start > *t)
                    .filter(|h| h.mode == Mode::Write || victim.mode == Mode::Write)
                    .min_by_key(|h| h.start);
                match next {
                    Some(h) => {
                        let _ = write!(
                            out,
                            "; next {} {} granted at {}, {} after the lease deadline",
                            if h.mode == Mode::Write { "writer" } else { "reader" },
                            model.workers[h.worker].label,
                            at(h.start),
                            ms(h.start.saturating_sub(s.lease))
                        );
                    }
                    None => out.push_str("; nobody else was granted the lock afterwards"),
                }
            }
            None => out.push_str("; it reported no suspension"),
        }
        if let Some(r) = self.restored {
            let _ = write!(out, "; connection restored at {}", at(r));
        }
        out
    }
}

/// The first hold after `from` with `permits` holders besides `victim`
/// (itself among them), by their own intervals: the one that took the
/// victim's permit (`--permits`).
fn permit_taken(model: &Model, victim: usize, from: u64, permits: u32) -> Option<&Hold> {
    let others: Vec<&Hold> = model.holds.iter().filter(|h| h.worker != victim).collect();
    let mut after: Vec<&Hold> = others.iter().copied().filter(|h| h.start > from).collect();
    after.sort_by_key(|h| h.start);
    after.into_iter().find(|b| {
        let holding = others
            .iter()
            .filter(|a| std::ptr::eq(**a, *b) || (a.start <= b.start && b.start < a.end))
            .count();
        holding >= permits as usize
    })
}
