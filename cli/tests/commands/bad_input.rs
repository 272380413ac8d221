//! Bad input and the messages a newcomer meets, in every subcommand: every
//! argument is checked before connecting, a usage error is one
//! `zk-rwlock:` line and exit 2 at once, a connect string is refused with
//! what is wrong with it, a host that does not resolve is named as such, a
//! server that cannot be reached or a lock directory that is no lock's is
//! a clear one-line message with its own exit code, and each failure is
//! said once.

use zk_rwlock_fixtures as support;

use std::ffi::OsString;
use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{finish, finish_within, run, zk_rwlock, Run, BIN};
use support::{children, client, server, unique_path};
use zk_rwlock::zk;

/// A port that takes connections into its backlog and never accepts them:
/// a client that connects there is seen ([`Watched::connected`]), and
/// waits for an answer that never comes.
struct Watched {
    listener: TcpListener,
    connect: String,
}

impl Watched {
    fn new() -> Watched {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        listener.set_nonblocking(true).expect("non-blocking");
        let connect = listener.local_addr().expect("its address").to_string();
        Watched { listener, connect }
    }

    /// Whether anyone connected so far.
    fn connected(&self) -> bool {
        match self.listener.accept() {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(e) => panic!("accept: {e}"),
        }
    }
}

/// Runs `zk-rwlock <args>` without a server (nothing in the environment
/// points at one), to completion, at most `limit`.
fn run_alone(args: &[&str], limit: Duration) -> Run {
    run_alone_with(args.iter().map(OsString::from).collect(), &[], limit)
}

/// [`run_alone`] with arguments that may not be UTF-8, and `env` set.
fn run_alone_with(args: Vec<OsString>, env: &[(&str, &str)], limit: Duration) -> Run {
    let mut child = std::process::Command::new(BIN)
        .args(&args)
        .env_remove("ZK_CONNECT")
        .env_remove("RUST_LOG")
        .env_remove("ZK_RWLOCK_FOLLOWER_LAG")
        .env_remove("ZK_RWLOCK_LAYOUT")
        .env_remove("ZK_RWLOCK_AUTH")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn zk-rwlock");
    let started = Instant::now();
    loop {
        if let Some(_status) = child.try_wait().expect("wait") {
            break;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "zk-rwlock {args:?} still ran after {limit:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().expect("output");
    let run = Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    run.assert_no_panic();
    run
}

/// Asserts that `out` exited `code` with exactly one line on stderr, a
/// `zk-rwlock:` message containing `message`, and nothing on stdout.
fn one_message(what: &str, out: &Run, code: i32, message: &str) {
    assert_eq!(out.code, Some(code), "{what}: {out:#?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: one message: {out:#?}");
    assert!(lines[0].starts_with("zk-rwlock: "), "{what}: {out:#?}");
    assert!(lines[0].contains(message), "{what}: wanted {message:?}: {out:#?}");
    assert!(out.stdout.is_empty(), "{what}: {out:#?}");
}

/// A bad identity, a follower lag the session timeout cannot
/// carry, a mode the layout does not have, a bad path or node: exit 2 with
/// one message, and no connection attempted (the connect string points at
/// a port that would take it, and a connect timeout long enough for any
/// attempt to show).
#[test]
fn usage_errors_are_reported_before_connecting() {
    let port = Watched::new();
    let c = port.connect.as_str();
    let long = "x".repeat(300);
    let identity = |id: &'static str| -> Vec<String> { vec!["--identity".into(), id.into()] };
    let mut cases: Vec<(Vec<String>, &str)> = Vec::new();
    for sub in ["exec", "lead"] {
        let mode: &[&str] = if sub == "exec" { &["-w"] } else { &[] };
        let with = |extra: Vec<String>| -> Vec<String> {
            let mut args: Vec<String> = vec![sub.into()];
            args.extend(mode.iter().map(|s| s.to_string()));
            args.extend(["--connect", c, "--connect-timeout", "30s"].map(String::from));
            args.extend(extra);
            args.extend(["/locks/usage", "--", "true"].map(String::from));
            args
        };
        cases.push((with(identity("")), "invalid identity ``: it is empty"));
        cases.push((with(identity("a/b")), "invalid identity `a/b`: it contains '/'"));
        cases.push((with(identity("a@b")), "invalid identity `a@b`: it contains '@'"));
        cases.push((
            with(identity("__REVOKE__")),
            "invalid identity `__REVOKE__`: it is the revocation request",
        ));
        cases.push((
            with(vec!["--identity".into(), long.clone()]),
            "(300 bytes): it is longer than 255 bytes",
        ));
        // The default session timeout (10s) cannot carry it.
        cases.push((
            with(vec!["--follower-lag".into(), "5s".into()]),
            "a session timeout of 10s (--session-timeout) leaves too short a lease with a follower lag \
             of 5s",
        ));
        cases.push((
            with(
                ["--session-timeout", "4s", "--follower-lag", "1800ms"]
                    .map(String::from)
                    .to_vec(),
            ),
            "the session timeout must be at least 2.25 x the follower lag, here 4.05s",
        ));
        // Within the lease's own bound (2.25 x), but the stop schedule
        // would stop CMD on a healthy connection: SIGTERM 1.925 s (0.215 s)
        // after an answer, which may be 2 s (0.8 s) old between pings.
        cases.push((
            with(vec!["--follower-lag".into(), "4.4s".into()]),
            "--follower-lag 4.4s (or ZK_RWLOCK_FOLLOWER_LAG) is too large for a session timeout of 10s \
             (--session-timeout) with --grace 1s (the default): the command would be stopped while the \
             connection is healthy: SIGTERM comes 1.925s after the last answer",
        ));
        cases.push((
            with(
                ["--session-timeout", "4s", "--follower-lag", "1.7s"]
                    .map(String::from)
                    .to_vec(),
            ),
            "the largest follower lag this session allows with that grace is 253ms",
        ));
        // A grace longer than the lease can cover, with either mode that
        // sends SIGTERM before the lease's end.
        for on_suspend in ["lease", "term"] {
            cases.push((
                with(
                    ["--grace", "20s", "--on-suspend", on_suspend]
                        .map(String::from)
                        .to_vec(),
                ),
                "--grace 20s is too long for a session timeout of 10s (--session-timeout): the command would \
                 be stopped while the connection is healthy: SIGTERM comes at once, and a healthy \
                 connection's answers may come 2s apart (at least 3.1s is needed: that ping gap and a retry \
                 gap); the largest grace this session allows is 5.7s",
            ));
        }
        cases.push((
            with(["--session-timeout", "300ms"].map(String::from).to_vec()),
            "a session timeout of 300ms (--session-timeout) is too short for --on-suspend lease, --grace \
             90ms (the default): ",
        ));
        cases.push((
            with(vec!["--session-timeout".into(), "0".into()]),
            "invalid value '0' for '--session-timeout <DUR>': a timeout of `0` is no time: give at least \
             1ms",
        ));
    }
    // A zero connect timeout: no server can answer in no time.
    for sub in [&["exec", "-w"][..], &["lead"], &["status"], &["revoke"]] {
        let mut args: Vec<String> = sub.iter().map(|s| s.to_string()).collect();
        args.extend(["--connect", c, "--connect-timeout", "0s", "/locks/usage"].map(String::from));
        if sub[0] == "exec" || sub[0] == "lead" {
            args.extend(["--", "true"].map(String::from));
        }
        cases.push((
            args,
            "invalid value '0s' for '--connect-timeout <DUR>': a timeout of `0s` is no time: give at \
             least 1ms",
        ));
    }
    let exec = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = ["exec", "--connect", c, "--connect-timeout", "30s"]
            .map(String::from)
            .to_vec();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    cases.push((
        exec(&["-r", "--layout", "curator-mutex", "/locks/usage", "--", "true"]),
        "the `curator-mutex` layout has no read locks",
    ));
    cases.push((
        exec(&[
            "-w",
            "--layout",
            "curator-mutex",
            "--also-read",
            "/locks/b",
            "/locks/usage",
            "--",
            "true",
        ]),
        "the `curator-mutex` layout has no read locks",
    ));
    cases.push((
        exec(&["-w", "locks/usage", "--", "true"]),
        "invalid lock path `locks/usage`",
    ));
    cases.push((
        exec(&["-w", "--also-write", "/a", "/a", "--", "true"]),
        "lock path `/a` is given more than once",
    ));
    cases.push((
        exec(&["-w", "--acl", "creator", "/locks/usage", "--", "true"]),
        "--acl creator needs an authenticated identity",
    ));
    cases.push((
        [
            "lead",
            "--connect",
            c,
            "--connect-timeout",
            "30s",
            "/a//b",
            "--",
            "true",
        ]
        .map(String::from)
        .to_vec(),
        "invalid lock path `/a//b`",
    ));
    cases.push((
        ["status", "--connect", c, "--connect-timeout", "30s", "/a", "/a"]
            .map(String::from)
            .to_vec(),
        "lock path `/a` given twice",
    ));
    cases.push((
        ["status", "--connect", c, "--connect-timeout", "30s", "a"]
            .map(String::from)
            .to_vec(),
        "invalid lock path `a`",
    ));
    cases.push((
        [
            "revoke",
            "--connect",
            c,
            "--connect-timeout",
            "30s",
            "/a",
            "web01",
        ]
        .map(String::from)
        .to_vec(),
        "`web01` is not a contender node of /a",
    ));
    for (args, message) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // A connect would run into the 30s connect timeout: far more than this.
        let out = run_alone(&args, Duration::from_secs(20));
        let what = format!("{:?}", &args[..args.len().min(8)]);
        one_message(&what, &out, 2, message);
        assert!(
            !port.connected(),
            "{what}: connected before checking its arguments"
        );
    }
}

/// A connect string that is not one says what is wrong with it,
/// for every subcommand, before connecting.
#[test]
fn connect_strings_are_refused_with_what_is_wrong() {
    for (servers, message) in [
        (
            "http://127.0.0.1:2181",
            "invalid connect string `http://127.0.0.1:2181`: `http://` is not a scheme of ZooKeeper \
             connect strings",
        ),
        (
            "127.0.0.1:99999",
            "invalid connect string `127.0.0.1:99999`: the port 99999 of `127.0.0.1:99999` is out of \
             range: a port is a number from 1 to 65535",
        ),
        (
            "zk1:2181/app,zk2:2181",
            "`zk1:2181/app` has a chroot (`/app`) but is not the last server",
        ),
        ("::1:2181", "put it in brackets, like [::1]:2181"),
    ] {
        for args in [
            &["exec", "-w", "--connect", servers, "/locks/x", "--", "true"][..],
            &["lead", "--connect", servers, "/locks/x", "--", "true"],
            &["status", "--connect", servers, "/locks/x"],
            &["revoke", "--connect", servers, "/locks/x"],
        ] {
            let out = run_alone(args, Duration::from_secs(5));
            one_message(&format!("{args:?}"), &out, 2, message);
        }
    }
}

/// A host name that does not resolve is said to be one at once,
/// not after the connect timeout with the words for a refused port.
#[test]
fn a_host_that_does_not_resolve_is_named_at_once() {
    let servers = "nosuchhost.invalid:2181";
    for args in [
        &[
            "exec",
            "-w",
            "--connect",
            servers,
            "--connect-timeout",
            "60s",
            "/locks/x",
            "--",
            "true",
        ][..],
        &[
            "status",
            "--connect",
            servers,
            "--connect-timeout",
            "60s",
            "/locks/x",
        ],
    ] {
        // Far less than the connect timeout, whatever the name service takes.
        let out = run_alone(args, Duration::from_secs(30));
        one_message(
            &format!("{args:?}"),
            &out,
            69,
            "cannot reach ZooKeeper at nosuchhost.invalid:2181: the host name `nosuchhost.invalid` does \
             not resolve to an address (name resolution failed: ",
        );
        assert!(!out.stderr.contains("no server answered"), "{out:#?}");
        assert!(
            !out.stderr.contains("--tls-ca"),
            "no TLS advice for a name: {out:#?}"
        );
    }
}

/// A host that does not resolve among others that do is left
/// out with one warning, in the command line's own format.
#[tokio::test]
async fn a_host_that_does_not_resolve_among_others_is_a_warning() {
    let servers = format!("nosuchhost.invalid:2181,{}", server().connect_string());
    let path = unique_path("some-resolve");
    let out = finish(
        zk_rwlock(&["status", "--connect", &servers, &path])
            .spawn()
            .unwrap(),
    )
    .await;
    out.expect_code(0);
    // The resolver's words after `error=` are the system's.
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{out:#?}");
    assert!(
        lines[0].starts_with(
            "zk-rwlock: warning: a host of the connect string does not resolve: trying the others \
             (host=nosuchhost.invalid, error="
        ),
        "{out:#?}"
    );
}

/// A usage error found once connected (the server granted a
/// shorter session timeout than asked for, too short for the follower
/// lag) closes the session at once: no wait for a close, no warning.
#[tokio::test]
async fn a_usage_error_found_once_connected_closes_the_session_at_once() {
    // The shared server grants at most 4s.
    assert_eq!(server().max_session_timeout(), Duration::from_secs(4));
    let path = unique_path("granted-short");
    for args in [
        &[
            "exec",
            "-w",
            "--session-timeout",
            "10s",
            "--follower-lag",
            "2s",
            &path,
            "--",
            "true",
        ][..],
        &[
            "lead",
            "--session-timeout",
            "10s",
            "--follower-lag",
            "2s",
            &path,
            "--",
            "true",
        ],
    ] {
        let started = Instant::now();
        // Today's close waits 5s for the session to end, then warns.
        let out = finish_within(zk_rwlock(args).spawn().unwrap(), Duration::from_secs(4)).await;
        let took = started.elapsed();
        one_message(
            &format!("{args:?}"),
            &out,
            2,
            "the session timeout the server granted, 4s, leaves too short a lease with a follower lag \
             of 2s",
        );
        assert!(took < Duration::from_secs(4), "{args:?} took {took:?}");
    }
    assert!(children(&client().await, &path).await.is_empty());
}

/// A stop schedule that fits the session timeout asked for but not the
/// shorter one the server granted (here 4 s for 10 s: `--grace 3s` would
/// send SIGTERM 0.12 s after an answer, while a healthy connection's answers
/// come up to 0.8 s apart) is refused once connected, as a usage error, and
/// the session is closed at once; CMD never runs.
#[tokio::test]
async fn a_stop_schedule_the_granted_session_cannot_carry_is_refused() {
    assert_eq!(server().max_session_timeout(), Duration::from_secs(4));
    let path = unique_path("granted-grace");
    let dir = std::env::temp_dir().join(unique_path("granted-grace-ran").replace('/', "-"));
    let marker = dir.to_str().unwrap();
    let touch = format!("touch {marker}");
    for sub in [&["exec", "-w"][..], &["lead", "--max-terms", "1"]] {
        let mut args = sub.to_vec();
        args.extend([
            "--session-timeout",
            "10s",
            "--grace",
            "3s",
            &path,
            "--",
            "sh",
            "-c",
            &touch,
        ]);
        let started = Instant::now();
        let out = finish_within(zk_rwlock(&args).spawn().unwrap(), Duration::from_secs(4)).await;
        let took = started.elapsed();
        one_message(
            &format!("{args:?}"),
            &out,
            2,
            "--grace 3s is too long for the session timeout the server granted (4s; asked for 10s): the \
             command would be stopped while the connection is healthy: SIGTERM comes 120ms after the last \
             answer, and a healthy connection's answers may come 800ms apart (at least 1.3s is needed: \
             that ping gap and a retry gap); the largest grace this session allows is 1.82s",
        );
        assert!(took < Duration::from_secs(4), "{args:?} took {took:?}");
        assert!(!dir.exists(), "{args:?}: CMD ran");
    }
    assert!(children(&client().await, &path).await.is_empty());
}

/// A lock directory holding someone's data is refused with one
/// message: the library's warning about it is left out.
#[tokio::test]
async fn a_directory_holding_data_is_said_once() {
    let counter = unique_path("counter-once");
    let c = client().await;
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    match c.mkdir("/test", &open).await {
        Ok(()) | Err(zk::Error::NodeExists) => {}
        Err(e) => panic!("mkdir /test: {e}"),
    }
    c.create(&counter, b"42", &open).await.unwrap();
    let out = finish(
        zk_rwlock(&["exec", "-w", &counter, "--", "true"])
            .spawn()
            .unwrap(),
    )
    .await;
    one_message(
        "exec on a counter",
        &out,
        2,
        &format!("lock directory `{counter}` holds data that is not a lock's release record"),
    );
    // Asked for, the library's warning is there.
    let out = finish(
        zk_rwlock(&["exec", "-w", &counter, "--", "true"])
            .env("RUST_LOG", "warn")
            .spawn()
            .unwrap(),
    )
    .await;
    out.expect_code(2);
    assert!(out.stderr.contains("WARN zk_rwlock::lock::notice"), "{out:#?}");
    c.delete(&counter, None).await.unwrap();
}

/// Bad arguments, and servers or directories that cannot serve: a clear
/// one-line message, a specific exit code, no panic.
#[tokio::test]
async fn bad_arguments_are_reported_clearly() {
    let path = unique_path("bad");
    let free_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let unreachable = format!("127.0.0.1:{free_port}");
    let chroot = unique_path("no-chroot");
    let no_chroot = format!("{}{chroot}", server().connect_string());
    let long_identity = "x".repeat(300);
    // A node that holds someone's data (a counter) is no lock directory.
    let counter = unique_path("counter");
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let c = client().await;
    match c.mkdir("/test", &open).await {
        Ok(()) | Err(zk::Error::NodeExists) => {}
        Err(e) => panic!("mkdir /test: {e}"),
    }
    c.create(&counter, b"42", &open).await.unwrap();
    let cases: Vec<(Vec<&str>, i32, String)> = vec![
        (
            vec!["exec", "--write", "locks/x", "--", "true"],
            2,
            "zk-rwlock: invalid lock path `locks/x`".to_owned(),
        ),
        (
            vec!["exec", "--write", "/a//b", "--", "true"],
            2,
            "invalid lock path `/a//b`".to_owned(),
        ),
        // An invalid path is reported even when no server is reachable.
        (
            vec!["exec", "-w", "-c", &unreachable, "locks/x", "--", "true"],
            2,
            "invalid lock path".to_owned(),
        ),
        (
            vec!["exec", "--mode", "x", &path, "--", "true"],
            2,
            "unexpected argument '--mode'".to_owned(),
        ),
        // A follower lag the session timeout (4 s) cannot carry.
        (
            vec![
                "exec",
                "-w",
                "--session-timeout",
                "4s",
                "--follower-lag",
                "1800ms",
                &path,
                "--",
                "true",
            ],
            2,
            "leaves too short a lease with a follower lag of 1.8s (--follower-lag or ZK_RWLOCK_FOLLOWER_LAG): \
             the session timeout must be at least 2.25 x the follower lag"
                .to_owned(),
        ),
        (
            vec!["exec", "-w", "--follower-lag", "soon", &path, "--", "true"],
            2,
            "invalid value 'soon' for '--follower-lag <DUR>'".to_owned(),
        ),
        (
            vec!["exec", &path, "--", "true"],
            2,
            "<--read|--write|--permits <N>>".to_owned(),
        ),
        (
            vec!["exec", "--read", "--write", &path, "--", "true"],
            2,
            "cannot be used with".to_owned(),
        ),
        (vec!["exec", "--write", &path], 2, "<CMD>".to_owned()),
        (
            vec!["exec", "--write", "--timeout", "-1s", &path, "--", "true"],
            2,
            "invalid duration `-1s`".to_owned(),
        ),
        (
            vec!["exec", "--write", "--timeout", "5 parsecs", &path, "--", "true"],
            2,
            "invalid duration `5 parsecs`".to_owned(),
        ),
        (
            vec!["exec", "--write", "--also-read", &path, &path, "--", "true"],
            2,
            format!("zk-rwlock: lock path `{path}` is given more than once: name each lock once, with its mode"),
        ),
        (
            vec!["exec", "--write", "--identity", "a/b", &path, "--", "true"],
            2,
            "invalid identity `a/b`".to_owned(),
        ),
        (
            vec!["exec", "--write", "--identity", "__REVOKE__", &path, "--", "true"],
            2,
            "invalid identity `__REVOKE__`".to_owned(),
        ),
        (
            vec!["exec", "--write", "--identity", &long_identity, &path, "--", "true"],
            2,
            "(300 bytes): it is longer than 255 bytes".to_owned(),
        ),
        (
            vec!["exec", "--write", &counter, "--", "true"],
            2,
            format!("zk-rwlock: lock directory `{counter}` holds data that is not a lock's release record"),
        ),
        (
            // Refused connections are tried again until the connect timeout.
            vec![
                "exec",
                "--write",
                "--connect-timeout",
                "1s",
                "--connect",
                &unreachable,
                &path,
                "--",
                "true",
            ],
            69,
            format!("zk-rwlock: cannot reach ZooKeeper at {unreachable}"),
        ),
        (
            vec!["status", "--connect-timeout", "1s", "--connect", &unreachable, &path],
            69,
            format!("zk-rwlock: cannot reach ZooKeeper at {unreachable}"),
        ),
        (
            vec!["status", "locks/x"],
            2,
            "zk-rwlock: invalid lock path `locks/x`".to_owned(),
        ),
        // A chroot that does not exist is named, as a connect string error.
        (
            vec!["exec", "--write", "--connect", &no_chroot, &path, "--", "true"],
            2,
            format!("zk-rwlock: the chroot `{chroot}` of the connect string does not exist"),
        ),
        (
            vec!["status", "--connect", &no_chroot, &path],
            2,
            format!("zk-rwlock: the chroot `{chroot}` of the connect string does not exist"),
        ),
    ];
    for (args, code, message) in cases {
        let out = run(&args).await;
        assert_eq!(out.code, Some(code), "{args:?}: {out:#?}");
        out.assert_no_panic();
        assert!(
            out.stderr.contains(&message),
            "{args:?}: wanted {message:?} in {out:#?}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: {out:#?}");
    }
    assert!(children(&client().await, &path).await.is_empty());
    let (data, _) = client().await.get_data(&counter).await.unwrap();
    assert_eq!(data, b"42", "the counter's data");
    assert!(children(&client().await, &counter).await.is_empty());
}

/// What ZooKeeper itself would refuse, found before connecting: a
/// character ZooKeeper refuses in node names in `--identity` or a lock path
/// (named, escaped: the message stays one line), a lock path in
/// ZooKeeper's own tree `/zookeeper`, and a `tcp+tls://` server without
/// `--tls-ca`. Each exits 2 at once with one message, and no connection is
/// attempted (the port would take it, and 30s of connect timeout would
/// show any attempt).
#[test]
fn what_zookeeper_would_refuse_is_a_usage_error_before_connecting() {
    let port = Watched::new();
    let c = port.connect.as_str();
    let tls = format!("tcp+tls://{c}");
    let with = |sub: &str, extra: &[&str], path: &str| -> Vec<String> {
        let mut args: Vec<String> = vec![sub.into()];
        if sub == "exec" {
            args.push("-w".into());
        }
        args.extend(["--connect", c, "--connect-timeout", "30s"].map(String::from));
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push(path.into());
        if sub != "status" {
            args.extend(["--", "true"].map(String::from));
        }
        args
    };
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            with("exec", &["--identity", "a\nb"], "/locks/usage"),
            "invalid identity `a\\nb`: it contains `\\n` (U+000A) at byte 1, a character ZooKeeper \
             refuses in node names"
                .into(),
        ),
        (
            with("lead", &["--identity", "web\u{85}01"], "/locks/usage"),
            "invalid identity `web\\u{85}01`: it contains U+0085 at byte 3".into(),
        ),
        (
            with("exec", &["--identity", "a\u{e000}"], "/locks/usage"),
            "it contains U+E000 at byte 1".into(),
        ),
        (
            with("exec", &[], "/locks/a\u{1}"),
            "invalid lock path `/locks/a\\u{1}`: it contains U+0001 at byte 8, a character ZooKeeper \
             refuses in paths"
                .into(),
        ),
        (
            with("status", &[], "/locks/a\nb"),
            "invalid lock path `/locks/a\\nb`: it contains `\\n` (U+000A) at byte 8".into(),
        ),
        (
            with("exec", &[], "/zookeeper/x"),
            "invalid lock path `/zookeeper/x`: it is in ZooKeeper's own tree `/zookeeper`".into(),
        ),
        (
            with("lead", &[], "/zookeeper"),
            "invalid lock path `/zookeeper`: it is in ZooKeeper's own tree".into(),
        ),
        (
            with("status", &[], "/zookeeper/quota"),
            "invalid lock path `/zookeeper/quota`: it is in ZooKeeper's own tree".into(),
        ),
        (
            [
                "exec",
                "-w",
                "--connect",
                &tls,
                "--connect-timeout",
                "30s",
                "/locks/usage",
                "--",
                "true",
            ]
            .map(String::from)
            .to_vec(),
            format!(
                "invalid TLS settings: the connect string asks for TLS (`{tls}`), but no TLS CA is given"
            ),
        ),
    ];
    for (args, message) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_alone(&args, Duration::from_secs(20));
        let what = format!("{args:?}");
        one_message(&what, &out, 2, &message);
        assert!(
            !port.connected(),
            "{what}: connected before checking its arguments"
        );
    }
}

/// The errors clap finds in the arguments read as every other usage error:
/// one `zk-rwlock:` line (no `error:`, usage or "For more information"),
/// exit 2, nothing on stdout; a value from an option's environment variable
/// names the variable.
#[test]
fn clap_usage_errors_are_one_line() {
    use std::os::unix::ffi::OsStringExt;
    let args = |words: &[&str]| -> Vec<OsString> { words.iter().map(OsString::from).collect() };
    let mut bad_path = args(&["exec", "-w"]);
    bad_path.push(OsString::from_vec(b"/locks/\xff".to_vec()));
    bad_path.extend(args(&["--", "true"]));
    for (argv, env, message) in [
        (
            args(&["exec", "-r", "-w", "/locks/x", "--", "true"]),
            &[][..],
            "zk-rwlock: the argument '--read' cannot be used with '--write' (see `zk-rwlock exec --help`)",
        ),
        (
            args(&["exec", "-w", "/locks/x"]),
            &[],
            "zk-rwlock: the following required arguments were not provided: <CMD>... (see `zk-rwlock exec \
             --help`)",
        ),
        (
            args(&["exec", "/locks/x", "--", "true"]),
            &[],
            "the following required arguments were not provided: <--read|--write|--permits <N>>",
        ),
        (
            args(&["lead", "--on-suspend", "x", "/locks/x", "--", "true"]),
            &[],
            "zk-rwlock: invalid value 'x' for '--on-suspend <WHAT>' [possible values: lease, term, ignore] \
             (see `zk-rwlock lead --help`)",
        ),
        (
            args(&["exec", "-w", "--mode", "x", "/locks/x", "--", "true"]),
            &[],
            "zk-rwlock: unexpected argument '--mode' found; tip: ",
        ),
        (
            bad_path,
            &[],
            "zk-rwlock: invalid UTF-8 was detected in one or more arguments",
        ),
        (
            args(&[]),
            &[],
            "zk-rwlock: no subcommand given: exec, status, revoke, lead, completions, man (see `zk-rwlock \
             --help`)",
        ),
        (args(&["exce"]), &[], "zk-rwlock: unrecognized subcommand 'exce'"),
        (
            args(&["exec", "-w", "/locks/x", "--", "true"]),
            &[("ZK_RWLOCK_FOLLOWER_LAG", "abc")],
            "zk-rwlock: invalid value 'abc' for '--follower-lag <DUR>' (set by ZK_RWLOCK_FOLLOWER_LAG): \
             invalid duration `abc`",
        ),
        (
            args(&["status", "/locks/x"]),
            &[("ZK_RWLOCK_LAYOUT", "zk")],
            "zk-rwlock: invalid value 'zk' for '--layout <LAYOUT>' (set by ZK_RWLOCK_LAYOUT)",
        ),
        // On the command line, the option is to blame.
        (
            args(&["exec", "-w", "--follower-lag", "abc", "/locks/x", "--", "true"]),
            &[("ZK_RWLOCK_FOLLOWER_LAG", "abc")],
            "zk-rwlock: invalid value 'abc' for '--follower-lag <DUR>': invalid duration `abc`",
        ),
    ] {
        let what = format!("{argv:?} {env:?}");
        let out = run_alone_with(argv, env, Duration::from_secs(5));
        one_message(&what, &out, 2, message);
        assert!(
            !out.stderr.contains("error:") && !out.stderr.contains("For more information"),
            "{what}: {out:#?}"
        );
    }
}

/// `ZK_CONNECT` set but empty names no server: a usage error, as
/// `--connect ''` is, rather than a silent fall back to 127.0.0.1:2181;
/// at once, for every subcommand that connects.
#[test]
fn an_empty_zk_connect_is_a_usage_error() {
    for args in [
        &["exec", "-w", "--connect-timeout", "30s", "/locks/x", "--", "true"][..],
        &["lead", "--connect-timeout", "30s", "/locks/x", "--", "true"],
        &["status", "--connect-timeout", "30s", "/locks/x"],
        &["revoke", "--connect-timeout", "30s", "/locks/x"],
    ] {
        for empty in ["", " "] {
            let argv = args.iter().map(OsString::from).collect();
            let out = run_alone_with(argv, &[("ZK_CONNECT", empty)], Duration::from_secs(10));
            one_message(
                &format!("{args:?} ZK_CONNECT={empty:?}"),
                &out,
                2,
                "zk-rwlock: ZK_CONNECT is set but empty: name the ZooKeeper servers there \
                 (host:port[,host:port...]), pass --connect, or unset it to use 127.0.0.1:2181",
            );
        }
    }
}

/// The shell completions offer the subcommands a user runs, not the
/// keeper's (`__keeper`, which `exec` alone starts).
#[test]
fn completions_leave_the_keeper_out() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = std::process::Command::new(BIN)
            .args(["completions", shell])
            .output()
            .expect("run zk-rwlock");
        assert!(out.status.success(), "{shell}: {out:?}");
        let script = String::from_utf8(out.stdout).expect("utf-8");
        assert!(script.contains("exec"), "{shell}: {script}");
        assert!(
            !script.contains("__keeper"),
            "{shell} completions offer the keeper"
        );
        assert!(
            !script.contains("control-fd"),
            "{shell} completions offer the keeper's options"
        );
    }
}
