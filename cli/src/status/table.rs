//! The human-readable form of a snapshot: the table and the warnings
//! under it.

use std::time::{Duration, SystemTime};

use zk_rwlock::{ContenderState, Layout, QueueEntry};
use zk_rwlock_core::ordering;

use super::snapshot::{permit_tag, Snapshot};

/// The human-readable form.
pub(super) fn table(snapshot: &Snapshot, now: SystemTime, layout: Option<Layout>) -> String {
    let mut out = String::new();
    let n = snapshot.contenders.len();
    if n == 0 {
        let why = if snapshot.exists {
            ""
        } else {
            " (the lock directory does not exist)"
        };
        out.push_str(&format!("{}: no contenders{why}\n", snapshot.path));
    } else {
        let holding = snapshot
            .contenders
            .iter()
            .filter(|c| c.state == ContenderState::Holds)
            .count();
        out.push_str(&format!(
            "{}: {n} contender{}, {holding} holding, {} waiting\n",
            snapshot.path,
            if n == 1 { "" } else { "s" },
            n - holding
        ));
        if let Some(permits) = snapshot.permits() {
            out.push_str(&semaphore_line(permits, holding));
        }
        if let Some(leader) = &snapshot.leader {
            let term = leader.term.map_or_else(|| "-".to_owned(), |t| t.to_string());
            let asked = if leader.revocation_requested {
                ", asked to step down (revocation requested): leads until it resigns"
            } else {
                ""
            };
            out.push_str(&format!(
                "leader: {} (term {term}, node {}){asked}\n",
                leader.identity, leader.node
            ));
        }
        let mut rows = vec![[
            "POS", "NODE", "IDENTITY", "MODE", "STATE", "TOKEN", "AGE", "ALSO IN",
        ]
        .map(str::to_owned)];
        for (i, c) in snapshot.contenders.iter().enumerate() {
            rows.push([
                (i + 1).to_string(),
                c.name.to_string(),
                identity_cell(&c.name),
                match permit_tag(&c.name) {
                    Some(_) => "permit".to_owned(),
                    None => c.name.mode().to_string(),
                },
                {
                    let mut state = match &c.state {
                        ContenderState::Holds => "holds".to_owned(),
                        ContenderState::WaitsOn(node) => format!("waits on {node}"),
                        _ => "sequence at the limit: never granted".to_owned(),
                    };
                    if c.is_persistent() {
                        state.push_str(" (PERMANENT node)");
                    }
                    state
                },
                c.fencing_token.map_or_else(|| "-".to_owned(), |t| t.to_string()),
                c.created
                    .map_or_else(|| "gone".to_owned(), |t| format_age(age(t, now))),
                match snapshot.also_in.as_ref().map(|a| &a[i]) {
                    Some(paths) if !paths.is_empty() => paths.join(","),
                    _ => "-".to_owned(),
                },
            ]);
        }
        // The ALSO IN column only with several paths.
        let columns = if snapshot.also_in.is_some() { 8 } else { 7 };
        let mut widths = [0usize; 8];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for row in &rows {
            let mut line = String::new();
            for (i, (cell, w)) in row.iter().zip(widths).take(columns).enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                // Numbers right-aligned, text left-aligned.
                if matches!(i, 0 | 5 | 6) {
                    line.push_str(&format!("{cell:>w$}"));
                } else {
                    line.push_str(&format!("{cell:<w$}"));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        for c in snapshot.contenders.iter().filter(|c| c.is_persistent()) {
            out.push_str(&permanent_warning(&c.path));
        }
        if snapshot.permits().is_some() {
            out.push_str(&semaphore_warnings(&snapshot.contenders));
        }
        out.push_str(&layout_warnings(&snapshot.contenders, layout));
        out.push_str(&kazoo_lock_warnings(&snapshot.contenders));
    }
    if !snapshot.foreign.is_empty() {
        out.push_str(&format!(
            "foreign children (not contender nodes; the lock ignores them): {}\n",
            snapshot.foreign.join(", ")
        ));
    }
    out
}

/// The line under the summary of a semaphore's directory: its permits,
/// how many are held (`holding`: the contenders shown holding), how many
/// are free.
pub(super) fn semaphore_line(permits: u32, holding: usize) -> String {
    let held = u32::try_from(holding).unwrap_or(u32::MAX);
    format!(
        "semaphore: {permits} permit{}, {held} held, {} free\n",
        if permits == 1 { "" } else { "s" },
        permits.saturating_sub(held)
    )
}

/// Warnings under the table of a semaphore's directory: contenders that
/// carry another permit count than the semaphore's (each withdraws when it
/// finds one before it with another count; those already holding stay
/// until they release), and contenders that carry none (a lock's, or a peer
/// library's), each counted as one permit taken.
pub(super) fn semaphore_warnings(contenders: &[QueueEntry]) -> String {
    let names: Vec<String> = contenders.iter().map(|c| c.name.to_string()).collect();
    let Some(permits) = zk_rwlock_core::semaphore::permits_in(&names) else {
        return String::new();
    };
    let mut out = String::new();
    let others: Vec<String> = contenders
        .iter()
        .filter_map(|c| {
            permit_tag(&c.name)
                .filter(|(_, n)| *n != permits)
                .map(|(_, n)| format!("{} ({n})", c.name))
        })
        .collect();
    if !others.is_empty() {
        out.push_str(&format!(
            "WARNING: the contenders of this semaphore disagree on its permits ({permits} first): {}; \
             a contender that finds one before it with another count withdraws: give every client of \
             this path the same --permits\n",
            others.join(", ")
        ));
    }
    let untagged: Vec<String> = contenders
        .iter()
        .filter(|c| permit_tag(&c.name).is_none())
        .map(|c| c.name.to_string())
        .collect();
    if !untagged.is_empty() {
        out.push_str(&format!(
            "WARNING: {} carr{} no permit count (a lock's contender, not a permit): the semaphore counts \
             each as one permit taken; do not share a directory between a lock and a semaphore\n",
            untagged.join(", "),
            if untagged.len() == 1 { "ies" } else { "y" }
        ));
    }
    out
}

/// The IDENTITY cell: a native contender's identity (a semaphore
/// contender's without its permit count); for a peer's, which library
/// wrote it (its name carries no identity).
pub(super) fn identity_cell(name: &zk_rwlock::NodeName) -> String {
    match name.layout() {
        Layout::Native => permit_tag(name)
            .map_or_else(|| name.identity(), |(identity, _)| identity)
            .to_owned(),
        layout => format!("({})", layout.library()),
    }
}

/// Warnings under the table for a queue that mixes layouts: a peer library
/// recognises only its own recipe's nodes, so it may hold beside the
/// others (zk-rwlock recognises every layout). With `--layout` set to a
/// peer's, only that library's blind spots, whether or not its nodes are in
/// the queue yet; with `native` or without it, each peer library present.
pub(super) fn layout_warnings(contenders: &[QueueEntry], layout: Option<Layout>) -> String {
    let mut out = String::new();
    for peer in Layout::ALL.into_iter().filter(|l| *l != Layout::Native) {
        let relevant = match layout {
            Some(Layout::Native) | None => contenders.iter().any(|c| c.name.layout() == peer),
            Some(chosen) => chosen == peer,
        };
        if !relevant {
            continue;
        }
        let unseen: Vec<String> = contenders
            .iter()
            .filter(|c| !peer.recognises(c.name.layout()))
            .map(|c| c.name.to_string())
            .collect();
        if !unseen.is_empty() {
            out.push_str(&format!(
                "WARNING: {} does not recognise {}: it can hold the lock beside them; give every \
                 client of this path one layout (zk-rwlock exec --layout {peer})\n",
                peer.library(),
                unseen.join(", ")
            ));
        }
    }
    out
}

/// Warnings under the table for each contender shown waiting whose own
/// library may grant it beside every contender ahead of it that the library
/// recognises ([`ordering::blind_to`]; the contenders of other layouts are
/// [`layout_warnings`]'): a kazoo `__lock__` node with kazoo `__rlock__`
/// nodes ahead of it and no `__lock__` node. kazoo's `Lock` writes the same
/// name as its `WriteLock` but is blocked by `__lock__` nodes only, so it
/// may hold beside those readers although it is shown waiting.
pub(super) fn kazoo_lock_warnings(contenders: &[QueueEntry]) -> String {
    let key = |c: &QueueEntry| (c.name.layout(), c.name.mode());
    let mut out = String::new();
    for (i, c) in contenders.iter().enumerate() {
        if c.state == ContenderState::Holds {
            continue;
        }
        let me = key(c);
        let seen: Vec<&QueueEntry> = contenders[..i]
            .iter()
            .filter(|a| me.0.recognises(a.name.layout()))
            .collect();
        if seen.is_empty() || !seen.iter().all(|a| ordering::blind_to(me, key(a))) {
            continue;
        }
        let readers: Vec<String> = seen.iter().map(|a| a.name.to_string()).collect();
        out.push_str(&format!(
            "WARNING: {} waits behind kazoo readers ({}) but may be a kazoo Lock (not WriteLock), \
             which holds beside readers\n",
            c.name,
            readers.join(", ")
        ));
    }
    out
}

/// The warning under the table for a persistent node with a contender's name.
pub(super) fn permanent_warning(path: &str) -> String {
    format!(
        "WARNING: {path} is a PERMANENT node, not a lock holder or waiter: contender nodes are \
         ephemeral, and this one never goes away by itself, so it blocks the lock until it is \
         deleted (zkCli.sh: `delete {path}`, or `deleteall {path}` if it has children)\n"
    )
}

/// Time since `created` (the server's clock), zero if that lies ahead of ours.
pub(super) fn age(created: SystemTime, now: SystemTime) -> Duration {
    now.duration_since(created).unwrap_or_default()
}

/// `850ms`, `3.2s`, `4m05s`, `2h03m`, `3d04h`.
pub(super) fn format_age(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 1 {
        format!("{}ms", d.as_millis())
    } else if secs < 60 {
        format!("{:.1}s", d.as_secs_f64())
    } else if secs < 3600 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else if secs < 86400 {
        format!("{}h{:02}m", secs / 3600, secs % 3600 / 60)
    } else {
        format!("{}d{:02}h", secs / 86400, secs % 86400 / 3600)
    }
}
