//! `zk-rwlock-bench` against a throwaway server: every workload with small
//! sizes, its last stdout line parsed as JSON and checked against the
//! peers' contract (`peers/README.md`): the fields are there, no
//! violations, the grants asked for, FIFO hand-offs in the herd, the
//! floor rows (also through `bench/floor-impl.sh`), and no session left
//! waiting to close at the end.

use zk_rwlock_testkit as support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::thread;

use serde_json::Value;
use support::{server, unique_path};

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock-bench");

/// The fields every row has (the contract's required ones, and what this
/// implementation always prints).
const COMMON_FIELDS: [&str; 15] = [
    "impl",
    "workload",
    "clients",
    "grants",
    "secs",
    "grants_per_s",
    "p50_ms",
    "p99_ms",
    "max_ms",
    "violations",
    "errors",
    "latency_kind",
    "window_cpu_s",
    "max_rss_kb",
    "version",
];

/// Runs `zk-rwlock-bench --workload W ARGS...` on the shared server (through
/// `--zk`, as peers/run.sh does) and returns the parsed last stdout line.
fn bench(workload: &str, args: &[&str]) -> Value {
    let path = unique_path(workload);
    let output = Command::new(BIN)
        .args(["--zk", &server().connect_string(), "--workload", workload])
        .args([
            "--path",
            &path,
            "--warmup",
            "5",
            "--max-secs",
            "10",
            "--seed",
            "7",
        ])
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("ZK_CONNECT")
        .stdin(Stdio::null())
        .output()
        .expect("run zk-rwlock-bench");
    parse(workload, &output)
}

fn parse(workload: &str, output: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{workload}: exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status.code()
    );
    let last = stdout.lines().last().unwrap_or_default();
    let row: Value = serde_json::from_str(last).unwrap_or_else(|e| {
        panic!("{workload}: last stdout line is not JSON ({e}): {last:?}\nstderr:\n{stderr}")
    });
    for field in COMMON_FIELDS {
        assert!(row.get(field).is_some(), "{workload}: no `{field}` in {row}");
    }
    assert_eq!(row["impl"], "rust", "{row}");
    assert_eq!(row["workload"], workload, "{row}");
    assert_eq!(row["violations"], 0, "{row}");
    assert_eq!(row["errors"], 0, "{row}");
    assert!(row.get("first_error").is_none(), "{row}");
    // Every session was closed at once: none ran into the close wait (which
    // made the process exit 5 s after its run).
    assert!(
        !stderr.contains("not seen closed"),
        "{workload}: a session was left open:\n{stderr}"
    );
    row
}

fn f(row: &Value, field: &str) -> f64 {
    row[field]
        .as_f64()
        .unwrap_or_else(|| panic!("`{field}` is not a number in {row}"))
}

fn u(row: &Value, field: &str) -> u64 {
    row[field]
        .as_u64()
        .unwrap_or_else(|| panic!("`{field}` is not a count in {row}"))
}

/// Latency figures are present and ordered: 0 <= p50 <= p99 <= max.
fn check_latencies(row: &Value) {
    let (p50, p99, max) = (f(row, "p50_ms"), f(row, "p99_ms"), f(row, "max_ms"));
    assert!(0.0 <= p50 && p50 <= p99 && p99 <= max, "{row}");
    assert!(f(row, "secs") > 0.0 && f(row, "grants_per_s") > 0.0, "{row}");
}

/// The wake-up counters of a lock workload.
fn check_wakeups(row: &Value) -> (u64, u64) {
    let (wakeups, spurious) = (u(row, "wakeups"), u(row, "spurious_wakeups"));
    assert!(spurious <= wakeups, "{row}");
    assert!(u(row, "relisted_wakeups") <= wakeups, "{row}");
    (wakeups, spurious)
}

fn uncontended(workload: &str) {
    let row = bench(workload, &["--grants", "50", "--clients", "4"]);
    assert_eq!(row["clients"], 1, "uncontended runs have one client: {row}");
    assert_eq!(row["grants"], 50, "{row}");
    assert_eq!(row["latency_kind"], "acquire", "{row}");
    check_latencies(&row);
    // Nobody else takes the lock: nothing to wait for.
    assert_eq!(check_wakeups(&row), (0, 0), "{row}");
}

fn contended(workload: &str, extra: &[&str]) -> Value {
    let mut args = vec!["--grants", "50", "--clients", "4"];
    args.extend_from_slice(extra);
    let row = bench(workload, &args);
    assert_eq!(row["clients"], 4, "{row}");
    assert_eq!(row["grants"], 50, "{row}");
    assert_eq!(row["reached_target"], true, "{row}");
    assert_eq!(row["acquire_timeouts"], 0, "{row}");
    assert_eq!(row["latency_kind"], "acquire", "{row}");
    check_latencies(&row);
    check_wakeups(&row);
    row
}

/// A named check that runs `zk-rwlock-bench`.
type Check = (&'static str, Box<dyn FnOnce() + Send>);

/// Runs the given checks side by side (each runs a process of its own).
fn all(checks: Vec<Check>) {
    let running: Vec<_> = checks
        .into_iter()
        .map(|(name, check)| (name, thread::spawn(check)))
        .collect();
    let failed: Vec<&str> = running
        .into_iter()
        .filter_map(|(name, handle)| handle.join().is_err().then_some(name))
        .collect();
    assert!(failed.is_empty(), "failed: {failed:?}");
}

#[test]
fn uncontended_workloads() {
    all(vec![
        ("uncontended_write", Box::new(|| uncontended("uncontended_write"))),
        ("uncontended_read", Box::new(|| uncontended("uncontended_read"))),
        ("uncontended_mutex", Box::new(|| uncontended("uncontended_mutex"))),
    ]);
}

#[test]
fn contended_workloads() {
    all(vec![
        (
            "contended_write",
            Box::new(|| {
                let row = contended("contended_write", &[]);
                assert!(row.get("reads").is_none(), "{row}");
            }),
        ),
        (
            "contended_mutex",
            Box::new(|| {
                contended("contended_mutex", &[]);
            }),
        ),
        (
            "mixed_90r10w",
            Box::new(|| {
                let row = contended("mixed_90r10w", &[]);
                assert_eq!(u(&row, "reads") + u(&row, "writes"), 50, "{row}");
                assert!(u(&row, "reads") > u(&row, "writes"), "90% reads: {row}");
                assert!(row.get("read_p99_ms").is_some() && row.get("write_p99_ms").is_some());
            }),
        ),
        (
            "contended_write with --hold-ms",
            Box::new(|| {
                let row = contended("contended_write", &["--hold-ms", "1"]);
                assert_eq!(f(&row, "hold_ms"), 1.0, "{row}");
                // 50 grants held 1 ms each, one at a time.
                assert!(f(&row, "secs") >= 0.05, "{row}");
            }),
        ),
    ]);
}

#[test]
fn semaphore_workload() {
    all(vec![
        (
            "semaphore",
            Box::new(|| {
                let row = contended("semaphore", &[]);
                assert_eq!(row["permits"], 4, "the default: {row}");
                let max = u(&row, "max_holders");
                assert!((1..=4).contains(&max), "{row}");
            }),
        ),
        (
            "semaphore of 2 permits holding 1 ms",
            Box::new(|| {
                // 4 clients on 2 permits, each grant held 1 ms: never more
                // than 2 at once (violations 0, checked by `bench`), and
                // 50 grants take at least 25 ms.
                let row = contended("semaphore", &["--permits", "2", "--hold-ms", "1"]);
                assert_eq!(row["permits"], 2, "{row}");
                assert_eq!(f(&row, "hold_ms"), 1.0, "{row}");
                let max = u(&row, "max_holders");
                assert!((1..=2).contains(&max), "{row}");
                assert!(f(&row, "secs") >= 0.025, "{row}");
            }),
        ),
    ]);
}

#[test]
fn herd_release_hands_off_in_queue_order() {
    let row = bench("herd_release", &["--clients", "8"]);
    assert_eq!(row["clients"], 8, "{row}");
    assert_eq!(row["grants"], 8, "{row}");
    assert_eq!(row["latency_kind"], "handoff", "{row}");
    assert_eq!(row["fifo_order"], true, "{row}");
    assert_eq!(row["all_granted"], true, "{row}");
    assert_eq!(row["acquire_timeouts"], 0, "{row}");
    assert!(f(&row, "enqueue_secs") > 0.0, "{row}");
    check_latencies(&row);
    // Each waiter watches its own predecessor: one wake-up each, no herd;
    // each predecessor held the lock and released it with the mark, so no
    // hand-off needs a new listing.
    let (wakeups, spurious) = check_wakeups(&row);
    assert_eq!((wakeups, spurious), (8, 0), "{row}");
    assert_eq!(u(&row, "relisted_wakeups"), 0, "{row}");
}

#[test]
fn floors() {
    all(vec![
        (
            "floor_cycle",
            Box::new(|| {
                let row = bench("floor_cycle", &["--grants", "50"]);
                assert_eq!(row["grants"], 50, "{row}");
                assert_eq!(row["latency_kind"], "create_list", "{row}");
                assert!(row.get("wakeups").is_none(), "no lock, no wake-ups: {row}");
                check_latencies(&row);
            }),
        ),
        (
            "floor_cycle with 3 clients",
            Box::new(|| {
                let row = bench("floor_cycle", &["--grants", "50", "--clients", "3"]);
                assert_eq!(row["clients"], 3, "{row}");
                assert_eq!(row["grants"], 50, "cycles in all, not per client: {row}");
                check_latencies(&row);
            }),
        ),
        (
            "floor_create_delete",
            Box::new(|| {
                let row = bench("floor_create_delete", &["--grants", "50"]);
                assert_eq!(row["grants"], 50, "{row}");
                assert_eq!(row["latency_kind"], "create", "{row}");
                check_latencies(&row);
            }),
        ),
        (
            "floor_handoff",
            Box::new(|| {
                let row = bench("floor_handoff", &["--grants", "20"]);
                assert_eq!(row["clients"], 2, "{row}");
                assert_eq!(row["grants"], 20, "{row}");
                assert_eq!(row["latency_kind"], "handoff", "{row}");
                check_latencies(&row);
            }),
        ),
        (
            "contended_floor",
            Box::new(|| {
                let row = bench("contended_floor", &["--grants", "100", "--clients", "5"]);
                assert_eq!(row["clients"], 2, "always 2 sessions: {row}");
                assert_eq!(row["grants"], 100, "{row}");
                assert_eq!(row["reached_target"], true, "{row}");
                assert_eq!(row["latency_kind"], "handoff", "{row}");
                assert!(row.get("wakeups").is_none(), "no lock, no wake-ups: {row}");
                check_latencies(&row);
            }),
        ),
        (
            "contended_floor with --hold-ms",
            Box::new(|| {
                let row = bench("contended_floor", &["--grants", "50", "--hold-ms", "1"]);
                assert_eq!(row["grants"], 50, "{row}");
                assert_eq!(f(&row, "hold_ms"), 1.0, "{row}");
                // 50 grants held 1 ms each, one at a time.
                assert!(f(&row, "secs") >= 0.05, "{row}");
            }),
        ),
    ]);
}

/// Runs `bench/floor-impl.sh` as peers/run.sh runs an implementation
/// (`--zk --workload --clients --grants --max-secs --path --warmup --seed`,
/// then `extra`) and returns its last stdout line, parsed.
fn floor_impl(workload: &str, clients: &str, extra: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("floor-impl.sh");
    let path = unique_path(&format!("floor-impl-{workload}"));
    let output = Command::new("bash")
        .arg(&script)
        .arg(BIN)
        .args(["--zk", &server().connect_string(), "--workload", workload])
        .args(["--clients", clients, "--grants", "40", "--max-secs", "10"])
        .args(["--path", &path, "--warmup", "5", "--seed", "7"])
        .args(extra)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run floor-impl.sh");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{workload}: {output:?}");
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{workload}: not JSON ({e}): {stdout}"))
}

#[test]
fn floor_impl_rows() {
    let row = floor_impl("contended_write", "2", &[]);
    assert_eq!(row["impl"], "rust", "{row}");
    assert_eq!(row["workload"], "contended_floor", "{row}");
    assert_eq!(row["clients"], 2, "{row}");
    assert_eq!(row["grants"], 40, "{row}");
    assert_eq!(row["violations"], 0, "{row}");
    assert!(row["window_cpu_s"].is_number(), "{row}");

    let row = floor_impl("entity_locks", "4", &["--entities", "8"]);
    assert_eq!(row["workload"], "entity_floor", "{row}");
    assert_eq!(row["latency_kind"], "create_list", "{row}");
    assert_eq!(row["grants"], 40, "{row}");

    // No floor: one skipped row of the implementation "floor".
    for (workload, clients) in [("contended_write", "8"), ("mixed_90r10w", "16")] {
        let row = floor_impl(workload, clients, &[]);
        assert_eq!(row["impl"], "floor", "{row}");
        assert_eq!(row["workload"], workload, "{row}");
        assert!(row["grants"].is_null() && row["skipped"].is_string(), "{row}");
    }
}

/// An entity row: one session, the grants asked for, none on an entity
/// another worker held.
fn entity(workload: &str, args: &[&str]) -> Value {
    let row = bench(workload, args);
    assert_eq!(row["sessions"], 1, "{row}");
    assert_eq!(row["entity_violations"], 0, "{row}");
    assert_eq!(row["reached_target"], true, "{row}");
    assert_eq!(row["acquire_timeouts"], 0, "{row}");
    check_latencies(&row);
    row
}

#[test]
fn entity_workloads() {
    all(vec![
        (
            "entity_locks",
            Box::new(|| {
                let row = entity(
                    "entity_locks",
                    &["--clients", "8", "--grants", "200", "--entities", "16"],
                );
                assert_eq!(row["clients"], 8, "{row}");
                assert_eq!(row["grants"], 200, "{row}");
                assert_eq!(row["entities"], 16, "{row}");
                assert_eq!(row["latency_kind"], "acquire", "{row}");
                check_wakeups(&row);
            }),
        ),
        (
            "entity_locks holding 1 ms on 2 entities",
            Box::new(|| {
                // 4 workers on 2 entities, each grant held 1 ms: workers
                // meet on an entity and wait for each other, one at a time.
                let row = entity(
                    "entity_locks",
                    &[
                        "--clients",
                        "4",
                        "--grants",
                        "60",
                        "--entities",
                        "2",
                        "--hold-ms",
                        "1",
                    ],
                );
                let (wakeups, _) = check_wakeups(&row);
                assert!(wakeups > 0, "workers met on an entity: {row}");
            }),
        ),
        (
            "entity_floor",
            Box::new(|| {
                let row = entity(
                    "entity_floor",
                    &["--clients", "8", "--grants", "200", "--entities", "16"],
                );
                assert_eq!(row["grants"], 200, "{row}");
                assert_eq!(row["latency_kind"], "create_list", "{row}");
                assert!(row.get("wakeups").is_none(), "no lock, no wake-ups: {row}");
            }),
        ),
        (
            "memory_handles",
            Box::new(|| {
                let row = bench("memory_handles", &["--clients", "500"]);
                assert_eq!(row["clients"], 500, "{row}");
                assert!(u(&row, "rss_kb") >= u(&row, "rss_base_kb"), "{row}");
                assert!(row["bytes_each"].is_number(), "{row}");
            }),
        ),
        (
            "memory_waiters",
            Box::new(|| {
                let row = bench("memory_waiters", &["--clients", "20"]);
                assert_eq!(row["grants"], 20, "every waiter got the lock: {row}");
                assert!(row["bytes_each"].is_number(), "{row}");
                assert_eq!(check_wakeups(&row), (20, 0), "{row}");
            }),
        ),
    ]);
}

#[test]
fn defaults_and_usage() {
    // `--connect` is an alias of `--zk`; without --path a fresh directory is
    // used and removed afterwards.
    let output = Command::new(BIN)
        .args(["--connect", &server().connect_string()])
        .args([
            "--workload",
            "uncontended_write",
            "--grants",
            "10",
            "--warmup",
            "0",
        ])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run zk-rwlock-bench");
    let row = parse("uncontended_write", &output);
    assert_eq!(row["grants"], 10, "{row}");

    // `ZK_CONNECT` when no flag is given.
    let output = Command::new(BIN)
        .args([
            "--workload",
            "floor_create_delete",
            "--grants",
            "5",
            "--warmup",
            "0",
        ])
        .env("ZK_CONNECT", server().connect_string())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run zk-rwlock-bench");
    parse("floor_create_delete", &output);

    for bad in [
        &["--workload", "nonsense"][..],
        &["--workload", "uncontended_write", "--max-secs", "0"],
        &["--workload", "uncontended_write", "--path", "no-slash"],
    ] {
        let output = Command::new(BIN)
            .args(bad)
            .env("ZK_CONNECT", server().connect_string())
            .stdin(Stdio::null())
            .output()
            .expect("run zk-rwlock-bench");
        assert_eq!(output.status.code(), Some(2), "{bad:?}: {output:?}");
        assert!(output.stdout.is_empty(), "{bad:?}: {output:?}");
    }

    let help = Command::new(BIN)
        .arg("--help")
        .output()
        .expect("run zk-rwlock-bench --help");
    let help = String::from_utf8_lossy(&help.stdout);
    for word in [
        "herd_release",
        "floor_handoff",
        "contended_floor",
        "spurious_wakeups",
        "fifo_order",
        "max_holders",
        "--permits",
        "--connect",
    ] {
        assert!(help.contains(word), "--help does not mention {word}:\n{help}");
    }
}
