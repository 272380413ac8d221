//! `zk-rwlock exec` at ZooKeeper's sequence counter's limit (the library's
//! own tests of the limit are in its `limits` binary, `tests/limits/` at
//! the repository root): it runs nothing, exits 70 and says why, and loops
//! of writers run into the limit never overlap.

use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use zk_rwlock::zk;
use zk_rwlock_fixtures::{children, client_on, eventually, joined, pin, seq_of, ZkCluster};

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock");
/// Upper bound for one `exec` run at the counter's limit.
const SHORT: Duration = Duration::from_secs(15);
/// ZooKeeper's last sequence number: the counter stops there.
const LIMIT: i32 = i32::MAX;
/// `exec` at the limit.
const CLI: &str = "/limits/cli";
/// `exec --write` loops run into the limit.
const CLI_RACE: &str = "/limits/cli-race";

/// One server for the tests at the limit, with their directories seeded
/// (as plain persistent nodes) near the counter's limit. Fails (never
/// skips) with installation advice when ZooKeeper, Java or javac is missing.
fn seeded() -> &'static ZkCluster {
    static SEEDED: OnceLock<ZkCluster> = OnceLock::new();
    SEEDED.get_or_init(|| {
        ZkCluster::builder()
            .seed_cversion(CLI, LIMIT)
            .seed_cversion(CLI_RACE, LIMIT - 7)
            .start()
            .unwrap_or_else(|e| {
                panic!(
                    "these tests need a real ZooKeeper server and a JDK (javac): {e}\n\
                     install them with `sudo apt-get install -y zookeeper openjdk-17-jdk-headless` \
                     (or run ./scripts/ensure-zookeeper.sh, which does)"
                )
            })
    })
}

async fn seeded_client() -> zk::Client {
    client_on(&seeded().connect_string()).await
}

/// `zk-rwlock exec` at the limit does not run the command, exits 70 and
/// says that the sequence numbers are used up.
#[tokio::test]
async fn exec_at_the_limit_exits_70_and_says_why() {
    let marker = std::env::temp_dir().join(format!("zk-rwlock-limits-ran-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let out = tokio::process::Command::new(BIN)
        .args(["exec", "--write", CLI, "--", "touch"])
        .arg(&marker)
        .env("ZK_CONNECT", seeded().connect_string())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(SHORT, out)
        .await
        .expect("zk-rwlock finished in time")
        .expect("run zk-rwlock");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ran = std::fs::remove_file(&marker).is_ok();
    assert_eq!(out.status.code(), Some(70), "stderr: {stderr}");
    assert!(!ran, "the command ran");
    let lower = stderr.to_lowercase();
    for word in ["sequence", "2147483647", CLI] {
        assert!(lower.contains(word), "stderr lacks {word:?}: {stderr}");
    }
    assert!(!lower.contains("panicked"), "{stderr}");
    let c = seeded_client().await;
    assert!(children(&c, CLI).await.is_empty(), "a node was left behind");
}

/// Four `zk-rwlock exec --write` loops on one
/// directory near the limit. The commands log when they start and end
/// (nanoseconds) and their node: no two overlap, none ran on a node at or
/// past the limit, and each loop ends with exit 70 (refused at the limit)
/// rather than a grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exec_loops_at_the_limit_never_overlap() {
    const ROUNDS: usize = 12;
    let _pin = pin(seeded_client().await, CLI_RACE).await; // keeps the directory; takes LIMIT - 7
    let dir = std::env::temp_dir().join(format!("zk-rwlock-limits-exec-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let script = r#"echo "start $(date +%s%N) $ZK_RWLOCK_NODE" >> "$1"; sleep 0.00$2; echo "end $(date +%s%N)" >> "$1""#;
    let mut loops = Vec::new();
    for i in 0..4 {
        let log = dir.join(format!("loop-{i}"));
        loops.push(tokio::spawn(async move {
            let mut last = None;
            for round in 0..ROUNDS {
                let hold = 1 + (round + i) % 5;
                let out = tokio::process::Command::new(BIN)
                    .args(["exec", "--write", CLI_RACE, "--", "sh", "-c", script, "sh"])
                    .arg(&log)
                    .arg(hold.to_string())
                    .env("ZK_CONNECT", seeded().connect_string())
                    .env_remove("RUST_LOG")
                    .stdin(Stdio::null())
                    .kill_on_drop(true)
                    .output();
                let out = tokio::time::timeout(SHORT, out)
                    .await
                    .expect("zk-rwlock finished in time")
                    .expect("run zk-rwlock");
                let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                last = Some((out.status.code(), stderr));
                if out.status.code() != Some(0) {
                    break;
                }
            }
            (log, last)
        }));
    }
    let mut runs = Vec::new(); // (start, end, node)
    let mut ends = Vec::new();
    for l in loops {
        let (log, last) = joined(Duration::from_secs(120), l).await;
        ends.push(last.expect("ran at least once"));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let mut lines = text.lines();
        while let Some(start) = lines.next() {
            let mut words = start.split_whitespace().skip(1);
            let begin: u128 = words.next().and_then(|w| w.parse().ok()).expect(start);
            let node = words.next().expect(start).to_owned();
            let end = lines.next().expect("an end line after each start");
            let end: u128 = end
                .split_whitespace()
                .nth(1)
                .and_then(|w| w.parse().ok())
                .expect(end);
            runs.push((begin, end, node));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    runs.sort();
    let seqs: Vec<i32> = runs.iter().map(|(_, _, node)| seq_of(node)).collect();
    let overlaps = runs
        .iter()
        .enumerate()
        .map(|(i, a)| runs[i + 1..].iter().filter(|b| b.0 < a.1).count())
        .sum::<usize>();
    println!(
        "exec loops: {} runs, {overlaps} overlapping pairs, sequences {seqs:?}",
        runs.len()
    );
    assert_eq!(overlaps, 0, "overlapping commands; sequences {seqs:?}");
    assert!(
        seqs.iter().all(|s| (0..LIMIT).contains(s)),
        "commands ran on nodes at or past the limit: {seqs:?}"
    );
    for (code, stderr) in ends {
        assert_eq!(
            code,
            Some(70),
            "a loop of {ROUNDS} runs did not end refused at the limit; last stderr: {stderr}"
        );
        assert!(stderr.contains("2147483647"), "{stderr}");
    }
    let c = seeded_client().await;
    eventually("only the pin is left", SHORT, || {
        let c = c.clone();
        async move { children(&c, CLI_RACE).await == ["pin"] }
    })
    .await;
}
