//! `bench/targets.py` on made-up `run.sh` results: the entity_locks targets
//! (against Curator, against its floor from the same run, p99), client CPU
//! per grant taken from `window_cpu_s` (not `proc_cpu_s`), the floor's own
//! rows left without targets, and the exit status.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One run's rows: zk-rwlock, Curator and the floor for entity_locks, and
/// the "floor" implementation's row for a workload it has no floor for.
fn run(lock_per_s: f64, p99: f64, window_cpu: f64, floor_per_s: Option<f64>) -> String {
    let mut rows = vec![
        format!(
            r#"{{"impl":"rust","workload":"entity_locks","clients":64,"grants":4000,"grants_per_s":{lock_per_s},"p99_ms":{p99},"violations":0,"window_cpu_s":{window_cpu},"proc_cpu_s":0.1,"zk_rx":15000}}"#
        ),
        r#"{"impl":"curator","workload":"entity_locks","clients":64,"grants":4000,"grants_per_s":1500,"p99_ms":200,"violations":0,"window_cpu_s":2.0,"proc_cpu_s":10.0,"zk_rx":20000}"#.to_owned(),
        r#"{"impl":"floor","workload":"uncontended_write","clients":1,"grants":null,"skipped":"no floor for this workload"}"#.to_owned(),
    ];
    if let Some(f) = floor_per_s {
        rows.push(format!(
            r#"{{"impl":"rust","workload":"entity_floor","clients":64,"grants":4000,"grants_per_s":{f},"p99_ms":20,"violations":0,"window_cpu_s":0.1,"zk_rx":10000}}"#
        ));
    }
    rows.join("\n") + "\n"
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write a results file");
    path
}

/// The cells of the target line that starts with `target`, one per run.
fn cells<'a>(out: &'a str, target: &str) -> Vec<&'a str> {
    let line = out
        .lines()
        .find(|l| l.starts_with(target))
        .unwrap_or_else(|| panic!("no line for {target:?} in:\n{out}"));
    line[target.len()..]
        .split_whitespace()
        .filter(|w| *w == "ok" || *w == "MISS")
        .collect()
}

#[test]
fn entity_targets_run_by_run() {
    let dir = std::env::temp_dir().join(format!("zk-rwlock-targets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // Run 1 meets every target; run 2 misses each (and would pass the CPU
    // target on proc_cpu_s); run 3 has no floor row.
    let met = write(&dir, "met.jsonl", &run(3000.0, 40.0, 0.2, Some(3400.0)));
    let missed = write(&dir, "missed.jsonl", &run(2000.0, 150.0, 1.0, Some(3000.0)));
    let no_floor = write(&dir, "no-floor.jsonl", &run(3000.0, 40.0, 0.2, None));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("targets.py");
    let output = Command::new("python3")
        .arg(&script)
        .args([&met, &missed, &no_floor])
        .output()
        .expect("run python3 bench/targets.py (install python3)");
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "misses exit 1:\n{out}");
    let t = |target| cells(&out, target);
    assert_eq!(
        t("entity_locks(64) grants/s / Curator >= 1.5"),
        ["ok", "MISS", "ok"],
        "{out}"
    );
    assert_eq!(
        t("entity_locks(64) grants/s / entity_floor >= 0.85 "),
        ["ok", "MISS"],
        "{out}"
    );
    assert_eq!(
        t("entity_locks(64) grants/s / entity_floor >= 0.85 (no floor row)"),
        ["MISS"],
        "{out}"
    );
    assert_eq!(
        t("entity_locks(64) p99 / Curator <= 0.5"),
        ["ok", "MISS", "ok"],
        "{out}"
    );
    assert_eq!(
        t("entity_locks(64) CPU/grant / Curator <= 0.25"),
        ["ok", "MISS", "ok"],
        "{out}"
    );
    assert_eq!(
        t("entity_locks(64) requests/grant / Curator <= 1"),
        ["ok", "ok", "ok"],
        "{out}"
    );
    assert!(
        !out.contains("entity_floor(64)"),
        "the floor has no targets of its own:\n{out}"
    );
    assert!(
        !out.contains("uncontended_write"),
        "the floor's skipped rows are no rows:\n{out}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
