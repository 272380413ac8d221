//! The report: the final picture, the totals, the verdict, the files
//! (--events, --svg) and the exit code.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use zk_rwlock::{zk, Mode};

use super::partition::Partition;
use super::run::{markers, Kill, Ran};
use super::screen::{print_now, Screen};
use super::setup::Setup;
use super::State;
use crate::event::{Kind, Line};
use crate::svg::{self, Picture};
use crate::timeline::{self, ms, secs, Frame, Marker};
use crate::verdict::{check, check_permits, handoffs, HoldEnd, MarkKind, Model, Violation, WaitEnd};
use crate::Config;
use zk_rwlock_testkit::Percentiles;

/// Draws the final picture, prints the totals and the verdict, writes the
/// files asked for and cleans up; returns the exit code.
pub(super) async fn report(cfg: &Config, setup: &Setup, ran: Ran) -> ExitCode {
    let Ran {
        mut screen,
        t0,
        kill,
        interrupted,
    } = ran;
    let (state, partition) = (&setup.state, setup.partition.as_ref());
    let (model, span_us, marked) = final_picture(
        &mut screen,
        state,
        partition,
        kill.as_ref(),
        t0,
        cfg.duration.as_micros() as u64,
        interrupted,
    );

    let mut violations = match cfg.permits {
        Some(n) => check_permits(&model, n),
        None => check(&model.holds),
    };
    if cfg.permits.is_some() && !interrupted {
        let nodes = left_behind(&setup.watcher, &cfg.path).await;
        if !nodes.is_empty() {
            violations.push(Violation::LeftBehind { nodes });
        }
    }
    let failures = state.failures();
    let mut report = String::new();
    totals(&mut report, cfg, &model, t0, span_us, kill.as_ref(), &failures);
    if let Some(p) = partition {
        let _ = writeln!(report, "  partition   {}", p.summary(&model, t0));
    }
    verdict_lines(&mut report, &model, &violations, t0);
    print_now(&report);
    print_failures(state, &failures);

    let mut ok = violations.is_empty() && failures.is_empty() && !interrupted;
    if let Some(Err(e)) = &kill {
        eprintln!("zk-rwlock demo: error: could not kill the leader: {e}");
        ok = false;
    }
    if let Some(p) = partition.filter(|p| p.frozen.is_none()) {
        eprintln!(
            "zk-rwlock demo: error: --partition: {} was not granted its long hold during the run, so it was never cut off",
            state.workers[p.victim].label
        );
        ok = false;
    }
    if let Some(path) = &cfg.events {
        if let Err(e) = write_events(path, state, partition) {
            eprintln!("zk-rwlock demo: error: cannot write {}: {e}", path.display());
            ok = false;
        }
    }
    if let Some(path) = &cfg.svg {
        let picture = picture(cfg, &model, t0, span_us, marked, &violations);
        match std::fs::write(path, svg::render(&picture)) {
            Ok(()) => eprintln!("demo: wrote the timeline to {}", path.display()),
            Err(e) => {
                eprintln!("zk-rwlock demo: error: cannot write {}: {e}", path.display());
                ok = false;
            }
        }
    }
    if let Some(client) = &setup.client {
        clean_up(client, cfg).await;
    }
    if interrupted {
        eprintln!("demo: interrupted");
        ExitCode::from(130)
    } else if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Draws the final picture: the whole run, including the last releases.
/// Returns the model of the run, its span (µs) and its markers.
fn final_picture(
    screen: &mut Screen,
    state: &State,
    partition: Option<&Partition>,
    kill: Option<&Result<Kill, String>>,
    t0: u64,
    duration_us: u64,
    interrupted: bool,
) -> (Model, u64, Vec<Marker>) {
    let last = state.events.iter().map(|e| e.t_us).max().unwrap_or(t0);
    // An interrupted run is drawn up to where it stopped.
    let end = if interrupted {
        last.max(t0 + 1)
    } else {
        last.max(t0 + duration_us)
    };
    let span_us = end - t0;
    let model = state.model(end);
    let (width, _) = screen.size();
    let marked = markers(kill, partition, &model, t0);
    let lines = timeline::render(&Frame {
        model: &model,
        t0,
        span_us,
        now: None,
        markers: marked.clone(),
        width,
        color: screen.color,
    });
    screen.draw(&lines);
    screen.finish();
    (model, span_us, marked)
}

/// The picture of --svg.
fn picture<'a>(
    cfg: &Config,
    model: &'a Model,
    t0: u64,
    span_us: u64,
    markers: Vec<Marker>,
    violations: &[Violation],
) -> Picture<'a> {
    Picture {
        model,
        t0,
        span_us,
        markers,
        title: format!(
            "zk-rwlock demo: {}, {} on {}",
            match cfg.permits {
                Some(n) => format!("{} workers, {n} permits", cfg.contenders),
                None => format!("{} writers, {} readers", cfg.writers, cfg.readers),
            },
            secs(cfg.duration.as_micros() as i64),
            if cfg.connect.is_some() {
                "ZooKeeper".to_owned()
            } else if cfg.members == 1 {
                "a standalone ZooKeeper".to_owned()
            } else {
                format!("a {}-server ensemble", cfg.members)
            }
        ),
        subtitle: verdict_summary(model, violations),
        ok: violations.is_empty(),
    }
}

/// Writes every event as a JSON line with its worker's label (`worker`),
/// and the partition's cut and restoration as the parent's (`demo`).
fn write_events(path: &std::path::Path, state: &State, partition: Option<&Partition>) -> std::io::Result<()> {
    let mut lines: Vec<(u64, serde_json::Value)> = Vec::new();
    for e in &state.events {
        let mut value = match &e.kind {
            Kind::Exit => serde_json::json!({ "ev": "exit", "t_us": e.t_us }),
            kind => serde_json::to_value(Line {
                t_us: e.t_us,
                kind: kind.clone(),
            })
            .map_err(std::io::Error::other)?,
        };
        value["worker"] = state.workers[e.worker].label.clone().into();
        lines.push((e.t_us, value));
    }
    if let Some(p) = partition {
        if let Some((t, node)) = &p.frozen {
            lines.push((
                *t,
                serde_json::json!({ "worker": "demo", "ev": "cut_off", "t_us": t, "node": node, "victim": state.workers[p.victim].label }),
            ));
        }
        if let Some(t) = p.restored {
            lines.push((
                t,
                serde_json::json!({ "worker": "demo", "ev": "restored", "t_us": t }),
            ));
        }
    }
    lines.sort_by_key(|(t, _)| *t);
    let text: String = lines.iter().map(|(_, v)| format!("{v}\n")).collect();
    std::fs::write(path, text)
}

/// How long the directory may take to empty once every worker has exited:
/// the nodes of a worker killed at the end go when its session expires.
const LEFT_WITHIN: Duration = Duration::from_secs(12);

/// The contender nodes still in the directory [`LEFT_WITHIN`] after the
/// run, or once none is left; what cannot be listed says so.
async fn left_behind(client: &zk::Client, path: &str) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + LEFT_WITHIN;
    loop {
        let left = match client.list_children(path).await {
            Ok(children) => children,
            Err(zk::Error::NoNode) => Vec::new(),
            Err(e) => vec![format!("(cannot list {path}: {e})")],
        };
        if left.is_empty() || tokio::time::Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Removes the lock directory (and the default parent) from a server that outlives the demo.
async fn clean_up(client: &zk::Client, cfg: &Config) {
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        let _ = client.delete(&cfg.path, None).await;
        if cfg.default_path {
            if let Some((parent, _)) = cfg.path.rsplit_once('/') {
                if !parent.is_empty() {
                    let _ = client.delete(parent, None).await;
                }
            }
        }
    })
    .await;
}

/// p50 and p99 of the waits (want → grant) of `mode` (all if `None`).
fn wait_percentiles(model: &Model, mode: Option<Mode>) -> Option<(u64, u64, usize)> {
    let waits: Vec<u64> = model
        .waits
        .iter()
        .filter(|w| w.ended == WaitEnd::Granted)
        .filter(|w| mode.is_none_or(|m| model.workers[w.worker].mode == m))
        .map(|w| w.end - w.start)
        .collect();
    let p = Percentiles::of(&waits);
    Some((p.at(50.0)?, p.at(99.0)?, waits.len()))
}

fn totals(
    out: &mut String,
    cfg: &Config,
    model: &Model,
    t0: u64,
    span_us: u64,
    kill: Option<&Result<Kill, String>>,
    failures: &[(usize, Vec<String>)],
) {
    let count = |mode: Mode| model.holds.iter().filter(|h| h.mode == mode).count();
    let (writes, reads) = (count(Mode::Write), count(Mode::Read));
    let _ = writeln!(out);
    let rate =
        (writes + reads) as f64 / (span_us.min(cfg.duration.as_micros() as u64) as f64 / 1e6).max(1e-3);
    let wait = |mode: Option<Mode>| match wait_percentiles(model, mode) {
        Some((p50, p99, _)) => format!("p50 {}, p99 {}", ms(p50), ms(p99)),
        None => "-".to_owned(),
    };
    if cfg.permits.is_some() {
        let _ = writeln!(
            out,
            "  grants      {} permits taken ({rate:.1}/s)",
            writes + reads
        );
        let _ = writeln!(out, "  wait        {}   from asking to holding", wait(None));
    } else {
        let _ = writeln!(
            out,
            "  grants      {} hand-offs: {writes} write, {reads} read ({rate:.1}/s)",
            writes + reads,
        );
        let _ = writeln!(
            out,
            "  wait        {}   (write {}; read {})   from asking to holding",
            wait(None),
            wait(Some(Mode::Write)),
            wait(Some(Mode::Read))
        );
    }
    let handoff = handoffs(model);
    let p = Percentiles::of(&handoff);
    if let (Some(p50), Some(p99)) = (p.at(50.0), p.at(99.0)) {
        let _ = writeln!(
            out,
            "  hand-off    p50 {}, p99 {}   from a release to the grant it let through ({} grants)",
            ms(p50),
            ms(p99),
            handoff.len()
        );
    }
    match cfg.permits {
        Some(n) => {
            let _ = writeln!(
                out,
                "  permits     at most {} of {n} held at once (by the holders' own intervals)",
                model.max_in_band()
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  readers     at most {} holding at once",
                model.max_concurrent_readers()
            );
        }
    }
    if !model.writes.is_empty() {
        let refused = model.writes.iter().filter(|w| !w.accepted).count();
        let _ = writeln!(
            out,
            "  store       {} writes with the writer's fencing token: {} accepted, {refused} refused as stale",
            model.writes.len(),
            model.writes.len() - refused
        );
    }
    let losts = model.marks.iter().filter(|m| m.kind == MarkKind::Lost).count();
    let open = model.holds.iter().filter(|h| h.ended == HoldEnd::Open).count();
    if losts + open > 0 {
        let _ = writeln!(
            out,
            "  lost        {losts} hold(s) reported lost, {open} never released"
        );
    }
    if let Some(kill) = kill {
        match kill {
            Ok(k) => {
                let after = model.holds.iter().map(|h| h.start).filter(|&t| t > k.t_us).min();
                let _ = writeln!(
                    out,
                    "  leader      member {} (port {}) killed at {}; {}",
                    k.member,
                    k.port,
                    secs(k.t_us as i64 - t0 as i64),
                    match after {
                        Some(t) => format!("next grant {} later", ms(t - k.t_us)),
                        None => "no grant after it".to_owned(),
                    }
                );
            }
            Err(e) => {
                let _ = writeln!(out, "  leader      could not be killed: {e}");
            }
        }
    }
    if !model.offline.is_empty() {
        let mut who: Vec<usize> = model.offline.iter().map(|s| s.worker).collect();
        who.sort_unstable();
        who.dedup();
        let longest = model.offline.iter().map(|s| s.end - s.start).max().unwrap_or(0);
        let unclosed = model.offline.iter().filter(|s| !s.closed).count();
        let expired = model
            .marks
            .iter()
            .filter(|m| matches!(m.kind, MarkKind::SessionEnded(_)))
            .count();
        let _ = writeln!(
            out,
            "  sessions    {} of {} workers were disconnected; {}, longest {}",
            who.len(),
            model.workers.len(),
            match (unclosed, expired) {
                (0, 0) => "all reconnected to their session".to_owned(),
                (0, n) => format!("all reconnected, {n} with a new session (the old one expired)"),
                (u, _) => format!("{u} never reconnected"),
            },
            ms(longest)
        );
    }
    let _ = writeln!(
        out,
        "  workers     {} of {} finished cleanly; run {} (seed {})",
        model.workers.len() - failures.len(),
        model.workers.len(),
        secs(span_us as i64),
        cfg.seed
    );
}

fn verdict_summary(model: &Model, violations: &[Violation]) -> String {
    let writes = model.holds.iter().filter(|h| h.mode == Mode::Write).count();
    if let (Some(n), true) = (model.permits, violations.is_empty()) {
        format!(
            "verdict: OK — 0 violations ({} holds checked against {n} permits, every worker granted, nothing left behind)",
            model.holds.len()
        )
    } else if violations.is_empty() {
        format!(
            "verdict: OK — 0 violations ({} holds checked for overlaps, {writes} writer tokens increasing)",
            model.holds.len()
        )
    } else {
        format!("verdict: FAILED — {} violations", violations.len())
    }
}

fn verdict_lines(out: &mut String, model: &Model, violations: &[Violation], t0: u64) {
    let at = |t: u64| format!("{:.3}s", (t as i64 - t0 as i64) as f64 / 1e6);
    let label = |w: usize| model.workers[w].label.as_str();
    let _ = writeln!(out, "{}", verdict_summary(model, violations));
    for v in violations.iter().take(20) {
        match v {
            Violation::Overlap { a, b } => {
                let lost = [a, b]
                    .iter()
                    .filter(|h| h.ended == HoldEnd::Lost)
                    .map(|h| format!(" ({} later reported the lock lost)", label(h.worker)))
                    .collect::<String>();
                let _ = writeln!(
                    out,
                    "  overlap: {} {:?} [{} – {}] and {} {:?} [{} – {}] by {}{lost}",
                    label(a.worker),
                    a.mode,
                    at(a.start),
                    at(a.end),
                    label(b.worker),
                    b.mode,
                    at(b.start),
                    at(b.end),
                    ms(a.end.min(b.end) - b.start),
                );
            }
            Violation::TooMany {
                at: t,
                permits,
                holds,
            } => {
                let who: Vec<String> = holds
                    .iter()
                    .map(|h| format!("{} [{} – {}]", label(h.worker), at(h.start), at(h.end)))
                    .collect();
                let _ = writeln!(
                    out,
                    "  too many: {} held {permits} permits at {}: {}",
                    holds.len(),
                    at(*t),
                    who.join(", ")
                );
            }
            Violation::NotGranted { worker, asked } => {
                let _ = writeln!(
                    out,
                    "  not granted: {} asked at {} and was never granted during the run",
                    label(*worker),
                    at(*asked)
                );
            }
            Violation::LeftBehind { nodes } => {
                let _ = writeln!(
                    out,
                    "  left behind: {} node(s) in the directory after the run: {}",
                    nodes.len(),
                    nodes.join(", ")
                );
            }
            Violation::Token { before, after } => {
                let _ = writeln!(
                    out,
                    "  token: {} was granted at {} with token 0x{:x}, not larger than {}'s 0x{:x} granted at {}",
                    label(after.worker),
                    at(after.start),
                    after.token,
                    label(before.worker),
                    before.token,
                    at(before.start),
                );
            }
        }
    }
    if violations.len() > 20 {
        let _ = writeln!(out, "  ... and {} more", violations.len() - 20);
    }
}

pub(super) fn print_failures(state: &State, failures: &[(usize, Vec<String>)]) {
    if failures.is_empty() {
        return;
    }
    let mut out = String::from("\nworker failures:\n");
    for (w, problems) in failures {
        let p = &state.procs[*w];
        for problem in problems {
            let _ = writeln!(out, "  {} {problem}", state.workers[*w].label);
        }
        if !p.stderr.is_empty() {
            let _ = writeln!(
                out,
                "    last {} of its {} stderr lines:",
                p.stderr.len(),
                p.stderr_lines
            );
            for line in &p.stderr {
                let _ = writeln!(out, "    | {line}");
            }
        }
    }
    print_now(&out);
}
