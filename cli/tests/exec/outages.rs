//! `zk-rwlock exec` where the library's own tests break things (see
//! `tests/faults.rs`, `tests/hardening.rs` and `tests/limits.rs` at the
//! repository root): a holder killed with SIGKILL, a deadline while the
//! server is down, a server restart under a running command, and
//! ZooKeeper's sequence counter at its limit.

use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zk_rwlock::{zk, ContenderState, SharedLock, GIVE_UP_SLACK};
use zk_rwlock_testkit::proxy::Proxy;
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

/// What `exec --help` and docs/cli.md say CMD survives with the defaults
/// (`--on-suspend lease`, the default grace and a 10 s session): any
/// outage of the server up to this long, whatever the timing.
const SURVIVABLE: Duration = Duration::from_millis(4_700);
/// The outage of the restart test: the restart the issue saw stop CMD
/// (4.1 s), a little shorter than [`SURVIVABLE`].
const RESTART_OUTAGE: Duration = Duration::from_millis(4_100);
/// ZooKeeper's op code of a ping (the proxy cuts after one).
const PING: i32 = 11;

/// `exec --help` states the outage CMD survives with the defaults.
#[test]
fn exec_help_states_the_outage_cmd_survives() {
    let out = Command::new(BIN)
        .args(["exec", "--help"])
        .output()
        .expect("run zk-rwlock");
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for said in [
        "49/50 x T - margin - grace - T/5 - min(1s, T/10) - 0.1s: 4.7s with the defaults",
        "at most 1s",
    ] {
        assert!(help.contains(said), "exec --help lacks {said:?}: {help}");
    }
}

/// A lease file's line: deadline (Unix ms) and state.
fn lease_line(text: &str) -> Option<(u128, String)> {
    let mut words = text.split_whitespace();
    let deadline = words.next()?.parse().ok()?;
    Some((deadline, words.next()?.to_owned()))
}

/// The times (Unix ms) of a command's `tick <ns>` lines.
fn tick_times(ticks: &str) -> Vec<u128> {
    ticks
        .lines()
        .filter_map(|l| l.strip_prefix("tick "))
        .filter_map(|t| t.trim().parse::<u128>().ok())
        .map(|ns| ns / 1_000_000)
        .collect()
}

fn wall_ms(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).expect("after 1970").as_millis()
}

/// With the defaults (`--on-suspend lease`, a 10 s session), a server
/// restart whose outage is shorter than the one `exec --help` says CMD
/// survives leaves CMD running, at the worst moment of the ping cycle: the
/// connection is cut right after the client's ping has reached the server,
/// before its answer (so the last answered request is a whole ping gap
/// old), the server is restarted on its data, and clients are kept out
/// until the outage has lasted [`RESTART_OUTAGE`]. Judged by CMD's own
/// record: it ticks every 50 ms through the outage, gets no SIGTERM, and
/// ends on its own once told to; then `exec` exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_shorter_than_the_survivable_outage_leaves_cmd_running() {
    // tickTime 500 ms: sessions of up to 10 s, exec's default.
    let mut zk = own_server(Duration::from_millis(500));
    let proxy = Proxy::start(&zk.connect_string());
    let path = unique_path("restart");
    let dir = std::env::temp_dir().join(format!("zk-rwlock-{}", &path[1..].replace('/', "-")));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let script = r#"
d="$1"
trap 'echo "TERM $(date +%s%N)" >> "$d/ticks"; exit 143' TERM
echo "$ZK_RWLOCK_SESSION_TIMEOUT_MS $ZK_RWLOCK_LEASE_FILE" > "$d/env.tmp" && mv "$d/env.tmp" "$d/env"
while [ ! -e "$d/stop" ]; do echo "tick $(date +%s%N)" >> "$d/ticks"; sleep 0.05; done
echo "end $(date +%s%N)" >> "$d/ticks"
"#;
    let exec = Command::new(BIN)
        .args([
            "exec",
            "--write",
            "--connect",
            proxy.addr(),
            &path,
            "--",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(&dir)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zk-rwlock exec");
    let mut env = String::new();
    eventually("the command runs", WITHIN, || {
        env = std::fs::read_to_string(dir.join("env")).unwrap_or_default();
        let ran = !env.is_empty();
        async move { ran }
    })
    .await;
    let (timeout, lease_file) = env.trim().split_once(' ').expect("timeout and lease file");
    assert_eq!(
        timeout, "10000",
        "the server granted exec's default session timeout"
    );
    let lease_file = std::path::PathBuf::from(lease_file);
    let read_lease = || lease_line(&std::fs::read_to_string(&lease_file).unwrap_or_default());

    // The worst moment: right after a ping reached the server, unanswered.
    proxy.set_blocked(true);
    proxy.cut_after_request(&[PING]);
    eventually("the next ping was cut", WITHIN, || async { proxy.fired() == 1 }).await;
    let cut = tokio::time::Instant::now();
    let cut_wall = SystemTime::now();
    let (before, _) = read_lease().expect("a lease file");
    tokio::task::block_in_place(|| zk.restart(0)).expect("restart the server on its data");
    let restarted = cut.elapsed();
    tokio::time::sleep_until(cut + RESTART_OUTAGE).await;
    proxy.set_blocked(false);
    let outage = cut.elapsed();
    assert!(
        outage < SURVIVABLE,
        "this machine took {restarted:?} to restart the server: too slow to test a {RESTART_OUTAGE:?} outage"
    );
    // Back: the lease was renewed by an answer to a request sent after the cut.
    let mut renewed = None;
    eventually("exec's lease renewed after the outage", WITHIN, || {
        let ticks = std::fs::read_to_string(dir.join("ticks")).unwrap_or_default();
        assert!(
            !ticks.contains("TERM"),
            "the command got SIGTERM after a {outage:?} outage"
        );
        renewed =
            read_lease().filter(|(deadline, state)| state == "held" && *deadline > wall_ms(cut_wall) + 9_800);
        let back = renewed.is_some();
        async move { back }
    })
    .await;
    let back_wall = wall_ms(SystemTime::now());
    eventually("the command ticks after the reconnection", WITHIN, || {
        let ticks = std::fs::read_to_string(dir.join("ticks")).unwrap_or_default();
        let after = tick_times(&ticks).last().is_some_and(|&t| t >= back_wall);
        async move { after }
    })
    .await;
    std::fs::write(dir.join("stop"), b"").expect("tell the command to stop");
    let out = tokio::task::spawn_blocking(move || exec.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ticks = std::fs::read_to_string(dir.join("ticks")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    // The last answered request was sent 9.8 s before the lease's deadline.
    let age = wall_ms(cut_wall) as i128 - (before as i128 - 9_800);
    // From the last answered request before the cut to the first after it
    // (SIGTERM would have come at 7800 ms).
    let silence = renewed
        .as_ref()
        .map(|(deadline, _)| deadline.saturating_sub(before));
    println!(
        "restart: server restarted in {restarted:?}, outage {outage:?}, last answer {age} ms old at the cut, \
         {silence:?} ms without an answer"
    );
    assert!(
        !ticks.contains("TERM"),
        "the command got SIGTERM: {ticks}\n{stderr}"
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("connection to ZooKeeper lost while the command ran"),
        "the outage was noticed: {stderr}"
    );
    assert!(!stderr.contains("stopping the command"), "{stderr}");
    let times = tick_times(&ticks);
    assert!(
        ticks.lines().last().is_some_and(|l| l.starts_with("end ")),
        "{ticks}"
    );
    let cut_ms = wall_ms(cut_wall);
    assert!(
        times.first().is_some_and(|&t| t < cut_ms) && times.last().is_some_and(|&t| t >= back_wall),
        "the command ticked from before the cut until after the reconnection"
    );
    let longest = times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or_default();
    assert!(
        longest < 1_000,
        "the command stopped ticking for {longest} ms during the outage"
    );
}
