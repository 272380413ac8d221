//! `zk-rwlock-demo` end to end: the real binary, its worker processes and a
//! throwaway ZooKeeper (the demo starts its own).

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock-demo");

fn demo(args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let output = Command::new(BIN)
        .args(args)
        .env("COLUMNS", "100")
        .output()
        .expect("run zk-rwlock-demo");
    (output, started.elapsed())
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A fresh scratch directory for this test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zk-rwlock-demo-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

#[test]
fn small_demo_passes_its_verdict_and_draws_an_svg() {
    let dir = scratch("small");
    let svg = dir.join("t.svg");
    let svg_arg = svg.to_str().expect("utf-8 temp path");
    let (output, took) = demo(&[
        "--readers",
        "3",
        "--writers",
        "2",
        "--duration",
        "3s",
        "--seed",
        "7",
        "--svg",
        svg_arg,
    ]);
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "demo failed ({:?}) after {took:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(
        stdout.contains("verdict: OK — 0 violations"),
        "no OK verdict:\n{stdout}\n{stderr}"
    );
    // The non-TTY timeline: one row per worker, no colours, and the totals.
    for row in ["W1 ", "W2 ", "R1 ", "R2 ", "R3 "] {
        assert!(
            stdout.lines().any(|l| l.starts_with(row)),
            "no row {row:?}:\n{stdout}"
        );
    }
    assert!(!stdout.contains('\x1b'), "colours in a pipe:\n{stdout}");
    assert!(stdout.contains("hand-offs") && stdout.contains("p99"), "{stdout}");
    assert!(stdout.contains("5 of 5 finished cleanly"), "{stdout}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let picture = std::fs::read_to_string(&svg).expect("the SVG was written");
    assert!(
        picture.starts_with("<svg") || picture.starts_with("<?xml"),
        "{}",
        &picture[..picture.len().min(200)]
    );
    assert!(picture.trim_end().ends_with("</svg>"));
    assert!(picture.contains("write hold") && picture.contains("read hold"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--permits`: the workers share a semaphore; the verdict counts them.
#[test]
fn a_semaphore_demo_counts_its_holders() {
    let (output, took) = demo(&[
        "--permits",
        "2",
        "--contenders",
        "5",
        "--duration",
        "3s",
        "--seed",
        "7",
    ]);
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "demo failed ({:?}) after {took:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(
        stdout.contains("5 workers share 2 permits of semaphore"),
        "{stdout}"
    );
    for row in ["P1 ", "P5 ", "P# "] {
        assert!(
            stdout.lines().any(|l| l.starts_with(row)),
            "no row {row:?}:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("permits     at most 2 of 2 held at once"),
        "{stdout}"
    );
    assert!(
        stdout.contains("verdict: OK — 0 violations (")
            && stdout.contains("checked against 2 permits, every worker granted, nothing left behind)"),
        "no OK verdict:\n{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn kill_leader_without_an_ensemble_is_a_clear_error() {
    let (output, _) = demo(&["--kill-leader", "--duration", "1s"]);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "accepted:\n{stdout}\n{stderr}");
    assert!(stderr.contains("--kill-leader needs --ensemble 3"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stdout.contains("verdict"), "it ran:\n{stdout}");
}

#[test]
fn bad_arguments_are_clear_errors() {
    for (args, says) in [
        (&["--readers", "0", "--writers", "0"][..], "at least one worker"),
        (&["--readers", "100"][..], "at most 64"),
        (&["--duration", "0s"][..], "longer than 0"),
        (
            &["--ensemble", "3", "--connect", "127.0.0.1:1"][..],
            "cannot be combined",
        ),
        (&["--ensemble", "4"][..], "3, 5 or 7"),
        (&["--permits", "2", "--writers", "1"][..], "cannot be used with"),
        (&["--contenders", "4"][..], "--permits"),
    ] {
        let (output, _) = demo(args);
        let (_, stderr) = text(&output);
        assert!(!output.status.success(), "{args:?} accepted");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn an_unreachable_server_is_a_clear_error() {
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let connect = format!("127.0.0.1:{port}");
    let (output, took) = demo(&["--connect", &connect, "--duration", "1s"]);
    let (_, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(
        stderr.contains("ZooKeeper") && stderr.contains(&connect),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

/// The leader of a 3-server ensemble dies halfway; the lock carries on.
#[test]
fn the_lock_survives_the_leader_being_killed() {
    let dir = scratch("kill");
    let svg = dir.join("k.svg");
    let (output, took) = demo(&[
        "--ensemble",
        "3",
        "--kill-leader",
        "--readers",
        "3",
        "--writers",
        "2",
        "--duration",
        "4s",
        "--svg",
        svg.to_str().expect("utf-8 temp path"),
    ]);
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "demo failed ({:?}) after {took:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(stdout.contains("verdict: OK — 0 violations"), "{stdout}");
    assert!(stdout.contains("killed at"), "no leader kill reported:\n{stdout}");
    assert!(
        stdout.contains("next grant"),
        "no grant after the kill:\n{stdout}"
    );
    assert!(stdout.contains('▲'), "no kill marker on the axis:\n{stdout}");
    let picture = std::fs::read_to_string(&svg).expect("the SVG was written");
    assert!(picture.contains("leader killed"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The events the demo wrote with `--events`.
fn events(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("the events were written")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

/// One writer is cut off from ZooKeeper in the middle of a long hold: it is
/// suspended and stops working, loses the lock at its lease deadline, and
/// nobody else is granted the lock before that deadline.
#[test]
fn a_writer_cut_off_mid_hold_is_suspended_and_loses_the_lock_at_its_lease_deadline() {
    let dir = scratch("partition");
    let (svg, events_file) = (dir.join("p.svg"), dir.join("events.jsonl"));
    let (output, took) = demo(&[
        "--partition",
        "--readers",
        "2",
        "--writers",
        "2",
        "--duration",
        "9s",
        "--seed",
        "11",
        "--svg",
        svg.to_str().expect("utf-8 temp path"),
        "--events",
        events_file.to_str().expect("utf-8 temp path"),
    ]);
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "demo failed ({:?}) after {took:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(stdout.contains("verdict: OK — 0 violations"), "{stdout}");

    let all = events(&events_file);
    let t = |e: &serde_json::Value| e["t_us"].as_u64().expect("t_us");
    let cut = all.iter().find(|e| e["ev"] == "cut_off").expect("a cut");
    let (victim, node, t_cut) = (cut["victim"].clone(), cut["node"].clone(), t(cut));
    assert_eq!(victim, "W1");
    let of_victim_after = |ev: &str| {
        all.iter()
            .find(|e| e["worker"] == victim && e["ev"] == ev && t(e) > t_cut)
            .unwrap_or_else(|| panic!("no {ev} of {victim} after the cut:\n{stdout}"))
    };
    let grant = all
        .iter()
        .find(|e| e["ev"] == "grant" && e["node"] == node)
        .expect("the grant of the hold that was cut off");
    assert!(t(grant) < t_cut && grant["worker"] == victim, "{grant}");
    assert!(
        grant["hold_us"].as_u64() >= Some(2_000_000),
        "a long hold: {grant}"
    );
    let suspended = of_victim_after("suspended");
    let lost = of_victim_after("lost");
    let lease = suspended["lease_us"].as_u64().expect("lease_us");
    // Cut off, then suspended, then the lease deadline, at which the lock is
    // lost. (A lease deadline is converted from `Instant` to the events'
    // clock by reading both clocks: a microsecond or two of error.)
    const CONVERSION: u64 = 1_000;
    assert!(t_cut < t(suspended), "{suspended}");
    assert!(
        t(suspended) < lease,
        "suspended after its lease deadline: {suspended}"
    );
    assert!(
        lease <= t(lost) + CONVERSION,
        "lost before its lease deadline: {lost} (lease {lease})"
    );
    let lost_lease = lost["lease_us"].as_u64().expect("lease_us");
    assert!(
        lost_lease.abs_diff(lease) <= CONVERSION,
        "an answer came in between: {lost} (lease {lease})"
    );
    // No work while suspended.
    assert!(
        !all.iter()
            .any(|e| e["worker"] == victim && e["ev"] == "write" && t(suspended) < t(e) && t(e) < t(lost)),
        "{victim} wrote while suspended"
    );
    // Nobody else was granted the lock before the lease deadline.
    let next = all
        .iter()
        .find(|e| e["ev"] == "grant" && e["worker"] != victim && t(e) > t_cut)
        .expect("a grant after the cut");
    assert!(
        t(next) > lease,
        "{} granted {} µs before {victim}'s lease deadline",
        next["worker"],
        lease - t(next)
    );
    let restored = all
        .iter()
        .find(|e| e["ev"] == "restored")
        .expect("the connection restored");
    assert!(t(restored) > t_cut);

    // The timeline and the picture show it.
    assert!(stdout.contains('░'), "no suspended cells:\n{stdout}");
    assert!(stdout.contains("W1 cut off from ZooKeeper at"), "{stdout}");
    assert!(stdout.contains("W1's lease deadline"), "{stdout}");
    assert!(stdout.contains("partition   W1 cut off at"), "{stdout}");
    let picture = std::fs::read_to_string(&svg).expect("the SVG was written");
    assert!(picture.contains("suspended (cut off, lease running)") && picture.contains("lease deadline"));
    let _ = std::fs::remove_dir_all(&dir);
}
