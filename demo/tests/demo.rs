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
