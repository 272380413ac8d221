//! `zk-rwlock exec` while its server is down or restarted (the library's
//! own tests of this are in its `faults` binary, `tests/faults/` at the
//! repository root): `--timeout` holds its deadline with the server down;
//! a release that waits for a server says how long; a restart shorter than
//! the outage `exec --help` says CMD survives leaves CMD running, at the
//! worst moment of the ping cycle and for 2 s under a 10 s session.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zk_rwlock::{ContenderState, SharedLock, GIVE_UP_SLACK};
use zk_rwlock_fixtures::proxy::Proxy;
use zk_rwlock_fixtures::{client_on, eventually, own_server, unique_path, wait_contenders};

use crate::common::scratch;

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock");
/// Upper bound for anything that should happen promptly (a server's
/// restart included).
const WITHIN: Duration = Duration::from_secs(30);

/// `zk-rwlock exec --timeout` holds its deadline while the server is down
/// (as the library's timed acquires do, `tests/faults/`): it exits 75
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
/// The outage of the restart test: a restart once seen to stop CMD (4.1 s),
/// a little shorter than [`SURVIVABLE`].
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

/// A server restarted for 2 s under a command on a 10 s session: by
/// default the command rides it out and exec exits with its status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_second_restart_leaves_the_command_running() {
    let mut zk = own_server(Duration::from_secs(1));
    let connect = zk.connect_string();
    let dir = scratch("restart");
    let path = unique_path("restart");
    let started = dir.join("started");
    let done = dir.join("done");
    let a = Command::new(BIN)
        .args([
            "exec",
            "--write",
            "--session-timeout",
            "10s",
            "--connect",
            &connect,
            &path,
            "--",
        ])
        .args([
            "sh",
            "-c",
            r#"touch "$0"; while [ ! -e "$1.go" ]; do sleep 0.05; done; echo ok > "$1""#,
        ])
        .arg(&started)
        .arg(&done)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zk-rwlock exec");
    eventually("the command runs", WITHIN, || {
        let there = started.exists();
        async move { there }
    })
    .await;
    zk.stop(0).expect("stop the server");
    // The outage itself: the server is away for 2 s.
    tokio::time::sleep(Duration::from_secs(2)).await;
    zk.start(0).expect("start the server again");
    zk.wait_serving(0, WITHIN).expect("the server serves again");
    // Let the command finish only once the client is back with its session.
    let probe = client_on(&connect).await;
    eventually("exec's node is still there", WITHIN, || {
        let probe = probe.clone();
        let path = path.clone();
        async move { probe.list_children(&path).await.is_ok_and(|c| c.len() == 1) }
    })
    .await;
    std::fs::write(done.with_extension("go"), "").expect("go");
    let out = tokio::time::timeout(WITHIN, tokio::task::spawn_blocking(move || a.wait_with_output()))
        .await
        .expect("exec finished in time")
        .expect("join")
        .expect("wait for exec");
    let (code, stderr) = (out.status.code(), String::from_utf8_lossy(&out.stderr));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&done).unwrap_or_default(),
        "ok\n",
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
