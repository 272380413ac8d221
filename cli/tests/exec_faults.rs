//! `zk-rwlock exec` where the library's own tests break things (see
//! `tests/faults.rs`, `tests/hardening.rs` and `tests/limits.rs` at the
//! repository root): a holder killed with SIGKILL, a deadline while the
//! server is down, and ZooKeeper's sequence counter at its limit.

use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use zk_rwlock::{zk, ContenderState, SharedLock, GIVE_UP_SLACK};
use zk_rwlock_testkit::{
    alive, children, client_on, eventually, joined, own_server, pin, seq_of, server, settles_to, unique_path,
    wait_contenders, ZkCluster,
};

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock");
/// Upper bound for anything that should happen promptly.
const WITHIN: Duration = Duration::from_secs(20);
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

/// A `zk-rwlock exec` holder killed with SIGKILL takes its command with it,
/// and its lock passes on only once its session has expired.
#[tokio::test]
async fn a_killed_holder_process_is_replaced_only_after_its_session_expires() {
    let connect = server().connect_string();
    let path = unique_path("kill9");
    let pidfile = std::env::temp_dir().join(format!("zk-rwlock-{}", &path[1..].replace('/', "-")));
    let _ = std::fs::remove_file(&pidfile);
    let mut holder = Command::new(BIN)
        .args([
            "exec",
            "--write",
            "--session-timeout",
            "2s",
            "--connect",
            &connect,
            &path,
            "--",
            "sh",
            "-c",
            // The command writes its pid, then becomes `sleep` (same pid).
            r#"echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 600"#,
            "sh",
        ])
        .arg(&pidfile)
        .stdin(Stdio::null())
        .spawn()
        .expect("run zk-rwlock exec");
    let observer = SharedLock::new(client_on(&connect).await, &path).unwrap();
    eventually("the holder process holds the lock", WITHIN, || async {
        observer
            .contenders()
            .await
            .map(|c| c.len() == 1 && c[0].state == ContenderState::Holds)
            .unwrap_or(false)
    })
    .await;
    let held = observer.contenders().await.unwrap().remove(0).path;
    let mut command = None;
    eventually("the command wrote its pid", WITHIN, || {
        command = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|pid| pid.trim().parse::<u32>().ok());
        let found = command.is_some();
        async move { found }
    })
    .await;
    let command = command.unwrap();
    let _ = std::fs::remove_file(&pidfile);
    assert!(alive(command), "the command runs");
    let waiter_lock = observer.clone();
    let waiter = tokio::spawn(async move { waiter_lock.write().await });
    wait_contenders(&observer, 2).await;

    holder.kill().expect("kill -9 the holder");
    let killed = std::time::Instant::now();
    let _ = holder.wait();
    // exec cannot forward a SIGKILL; on Linux its command gets one when
    // exec dies (`exec --help`: "CMD is killed (SIGKILL) if zk-rwlock itself
    // dies"): no command keeps running without the lock.
    eventually(
        "the command died with exec",
        WITHIN,
        || async move { !alive(command) },
    )
    .await;
    let direct = client_on(&connect).await;
    // Not before: while the dead holder's node exists, nobody else is granted.
    loop {
        let granted = waiter.is_finished();
        let exists = direct.check_stat(&held).await.unwrap().is_some();
        assert!(
            !(granted && exists),
            "granted while the killed holder's node still existed"
        );
        if !exists {
            break;
        }
        assert!(
            killed.elapsed() < WITHIN,
            "the killed holder's session never expired"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let expired_after = killed.elapsed();
    let g = tokio::time::timeout(WITHIN, waiter)
        .await
        .expect("granted after expiry")
        .unwrap()
        .unwrap();
    // The session (2 s) was last renewed at most a ping interval (a few
    // hundred ms) before the kill: its node lives on for about 2 s.
    assert!(
        expired_after >= Duration::from_secs(1),
        "the node outlived its process until expiry, not {expired_after:?}"
    );
    g.release().await.unwrap();
    settles_to(&direct, &path, &[]).await;
}

/// `zk-rwlock exec --timeout` holds its deadline while the server is down
/// (as the library's timed acquires do, `tests/hardening.rs`): it exits 75
/// by then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_timeout_holds_while_the_server_is_down() {
    let mut zk = own_server(Duration::from_millis(500));
    let servers = zk.connect_string();
    let path = unique_path("exec-deadline");
    let holder_lock = SharedLock::new(client_on(&servers).await, &path).unwrap();
    let _holder = holder_lock.write().await.unwrap();
    let started = Instant::now();
    let exec = Command::new(BIN)
        .args([
            "exec",
            "--write",
            "--timeout",
            "2s",
            "--connect",
            &servers,
            &path,
            "--",
            "true",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_contenders(&holder_lock, 2).await;
    zk.kill(0).unwrap();
    let status = tokio::task::spawn_blocking(move || exec.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(
        status.status.code(),
        Some(75),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let bound = Duration::from_secs(2) + GIVE_UP_SLACK + Duration::from_secs(1);
    assert!(
        took <= bound,
        "exec --timeout 2s took {took:?} with the server down (bound {bound:?})"
    );
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

/// The server goes away while CMD runs: `exec` stops CMD before its lease
/// deadline, and while the release waits for a server it says how long it
/// may wait, then exits 79 within that bound (7/5 of the session timeout
/// after the server's last answer) instead of sitting silent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_that_waits_for_a_server_says_how_long() {
    let mut zk = own_server(Duration::from_millis(500));
    let servers = zk.connect_string();
    let path = unique_path("release-waits");
    let watcher = SharedLock::new(client_on(&servers).await, &path).unwrap();
    let exec = Command::new(BIN)
        .args([
            "exec",
            "--write",
            "--session-timeout",
            "4s",
            "--connect",
            &servers,
            &path,
            "--",
            "sleep",
            "60",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    eventually("exec holds the lock", WITHIN, || async {
        matches!(watcher.contenders().await.as_deref(), Ok([c]) if c.state == ContenderState::Holds)
    })
    .await;
    zk.kill(0).unwrap();
    let killed = Instant::now();
    let out = tokio::task::spawn_blocking(move || exec.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let took = killed.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(79), "{stderr}");
    assert!(
        stderr.contains("the release waits for ZooKeeper (the connection is lost) for at most"),
        "{stderr}"
    );
    let bound = Duration::from_secs(4) * 7 / 5 + Duration::from_secs(2);
    assert!(
        took <= bound,
        "exec exited {took:?} after the server went away (bound {bound:?}): {stderr}"
    );
}
