//! `zk-rwlock` against a secured server: credentials from `--auth` and
//! `ZK_RWLOCK_AUTH`, `--acl` choices across identities, TLS with client
//! certificates, SASL, and the exit codes and messages of what is refused
//! or missing; and, on the plain test server, a lock directory the user
//! may not write to.

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;
use zk_rwlock::{connect_client_with, zk, ConnectOptions, SharedLock};
use zk_rwlock_fixtures::{secured_server, SASL_USERS};

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock");
/// Upper bound for anything that should happen promptly.
const SHORT: Duration = Duration::from_secs(20);

#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn expect(&self, code: i32, stderr_has: &str) -> &Run {
        assert_eq!(self.code, Some(code), "unexpected exit: {self:#?}");
        assert!(
            self.stderr.contains(stderr_has),
            "stderr lacks {stderr_has:?}: {self:#?}"
        );
        assert!(!self.stderr.contains("panicked"), "{self:#?}");
        self
    }
}

/// `zk-rwlock <args>` on the secured server's plain port, with `auth` in
/// `ZK_RWLOCK_AUTH` (none if `None`).
async fn run_as(auth: Option<&str>, args: &[&str]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("ZK_CONNECT", secured_server().connect_string())
        .env_remove("RUST_LOG")
        .env_remove("ZK_RWLOCK_AUTH")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    if let Some(auth) = auth {
        cmd.env("ZK_RWLOCK_AUTH", auth);
    }
    let out = tokio::time::timeout(SHORT, cmd.output())
        .await
        .expect("zk-rwlock finished in time")
        .expect("run zk-rwlock");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

const ALICE: &str = "digest:alice:alice-pw";
const BOB: &str = "digest:bob:bob-pw";

/// A fresh lock path under `/secured-cli`, a directory open to anyone (a
/// lock's missing parents get the lock's own ACL).
async fn path(name: &str) -> String {
    let client = connect_client_with(&secured_server().connect_string(), &ConnectOptions::new())
        .await
        .expect("connect");
    match client
        .create(
            "/secured-cli",
            &[],
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
    {
        Ok(_) | Err(zk::Error::NodeExists) => {}
        Err(e) => panic!("creating /secured-cli: {e}"),
    }
    zk_rwlock_fixtures::unique_path(name).replacen("/test/", "/secured-cli/", 1)
}

/// A lock held for write by alice, with `acls` on its nodes (directory included).
async fn held_by_alice(path: &str, acls: &[zk::Acl]) -> zk_rwlock::WriteGuard {
    let alice = connect_client_with(
        &secured_server().connect_string(),
        &ConnectOptions::new().digest("alice", "alice-pw"),
    )
    .await
    .expect("connect");
    let lock = SharedLock::builder(alice, path)
        .acls(acls)
        .directory_acls(acls)
        .build()
        .expect("lock");
    lock.write().await.expect("alice writes")
}

fn argv(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[tokio::test]
async fn a_private_lock_refuses_others_with_exit_77_and_says_what_to_pass() {
    let path = path("private").await;
    let guard = held_by_alice(&path, &zk::Acls::creator_all()).await;
    let needs_auth = format!("ZooKeeper refused access to `{path}` (NoAuth): the server requires authentication there: pass --auth or set ZK_RWLOCK_AUTH");
    run_as(None, &["status", &path]).await.expect(77, &needs_auth);
    run_as(None, &["exec", "--write", &path, "--", "true"])
        .await
        .expect(77, &needs_auth);
    let wrong =
        "the credentials given (--auth, ZK_RWLOCK_AUTH or the client certificate) are not allowed there";
    run_as(Some(BOB), &["status", &path]).await.expect(77, wrong);
    run_as(
        Some(BOB),
        &["exec", "--read", "--timeout", "5s", &path, "--", "true"],
    )
    .await
    .expect(77, wrong);
    run_as(Some(BOB), &["revoke", &path]).await.expect(77, "NoAuth");
    run_as(Some("digest:alice:wrong-pw"), &["status", &path])
        .await
        .expect(77, wrong);
    // The owner, on the command line rather than in the environment.
    let out = run_as(None, &["status", "--json", "--auth", ALICE, &path]).await;
    let out = out.expect(0, "");
    assert!(
        out.stdout.contains(guard.node().rsplit('/').next().unwrap()),
        "{out:#?}"
    );
    guard.release().await.expect("release");
}

#[tokio::test]
async fn a_read_only_identity_can_run_status_but_not_queue() {
    let path = path("read-only").await;
    let acls = [&*zk::Acls::creator_all(), &*zk::Acls::anyone_read()].concat();
    let guard = held_by_alice(&path, &acls).await;
    let node = guard.node().rsplit('/').next().unwrap().to_owned();
    for auth in [None, Some(BOB)] {
        let out = run_as(auth, &["status", "--json", &path]).await;
        out.expect(0, "");
        assert!(out.stdout.contains(&node), "{out:#?}");
        run_as(auth, &["exec", "--read", &path, "--", "true"])
            .await
            .expect(77, "NoAuth");
    }
    guard.release().await.expect("release");
}

/// `exec --acl creator` with credentials from the environment: the command
/// runs under the lock; another identity is refused access to it while it
/// runs, the same identity is not (the command's own `status` calls show it).
#[tokio::test]
async fn exec_with_credentials_from_the_environment_and_a_creator_acl() {
    let path = path("exec-creator").await;
    let script = format!(
        "ZK_RWLOCK_AUTH={BOB} {BIN} status {path} >/dev/null 2>&1; echo bob=$?; \
         {BIN} status {path} >/dev/null 2>&1; echo alice=$?"
    );
    let out = run_as(
        Some(ALICE),
        &[
            "exec",
            "--write",
            "--acl",
            "creator",
            "--dir-acl",
            "creator",
            &path,
            "--",
            "sh",
            "-c",
            &script,
        ],
    )
    .await;
    out.expect(0, "");
    assert_eq!(out.stdout, "bob=77\nalice=0\n", "{out:#?}");
    // read-only-others (on another lock: the first one's directory keeps
    // its creator-only ACL until the server removes it): bob may look, not queue.
    let path = self::path("exec-read-only").await;
    let script = format!(
        "ZK_RWLOCK_AUTH={BOB} {BIN} status {path} >/dev/null 2>&1; echo bob-status=$?; \
         ZK_RWLOCK_AUTH={BOB} {BIN} exec --read --timeout 5s {path} -- true 2>/dev/null; echo bob-exec=$?"
    );
    let out = run_as(
        Some(ALICE),
        &[
            "exec",
            "--read",
            "--acl",
            "read-only-others",
            "--dir-acl",
            "read-only-others",
            &path,
            "--",
            "sh",
            "-c",
            &script,
        ],
    )
    .await;
    out.expect(0, "");
    assert_eq!(out.stdout, "bob-status=0\nbob-exec=77\n", "{out:#?}");
    // Creator-only nodes in an open directory (--dir-acl open): bob
    // cannot read alice's node, but he sees it in `status` and shares the
    // lock with her.
    let path = self::path("exec-creator-nodes").await;
    let script = format!(
        "ZK_RWLOCK_AUTH={BOB} {BIN} status {path} >/dev/null 2>&1; echo bob-status=$?; \
         ZK_RWLOCK_AUTH={BOB} {BIN} exec --read --acl creator --timeout 5s {path} -- true; echo bob-exec=$?"
    );
    let out = run_as(
        Some(ALICE),
        &[
            "exec",
            "--read",
            "--acl",
            "creator",
            "--dir-acl",
            "open",
            &path,
            "--",
            "sh",
            "-c",
            &script,
        ],
    )
    .await;
    out.expect(0, "");
    assert_eq!(out.stdout, "bob-status=0\nbob-exec=0\n", "{out:#?}");
}

/// Two identities contend through the command line on one lock whose
/// directory is open and whose contender nodes are creator-only: the
/// second waits on the first's node (which it cannot read) and runs after it.
#[tokio::test]
async fn two_identities_contend_through_exec() {
    let path = path("contend").await;
    // Open directory: create it before either queues (the first would
    // otherwise create it creator-only).
    let client = connect_client_with(&secured_server().connect_string(), &ConnectOptions::new())
        .await
        .expect("connect");
    match client
        .create(
            &path,
            &[],
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
    {
        Ok(_) | Err(zk::Error::NodeExists) => {}
        Err(e) => panic!("{e}"),
    }
    let holder = {
        // Alice's exec holds the lock until the marker file appears.
        let dir = std::env::temp_dir().join(format!("zk-rwlock-secured-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch");
        let go = dir.join("go");
        let _ = std::fs::remove_file(&go);
        let script = format!("while [ ! -e {} ]; do sleep 0.05; done", go.display());
        let path = path.clone();
        let task = tokio::spawn(async move {
            run_as(
                Some(ALICE),
                &[
                    "exec", "--write", "--acl", "creator", &path, "--", "sh", "-c", &script,
                ],
            )
            .await
        });
        (task, go)
    };
    let wait_queue = |n: usize| {
        let client = client.clone();
        let path = path.clone();
        async move {
            zk_rwlock_fixtures::eventually(&format!("{n} contenders"), SHORT, || {
                let client = client.clone();
                let path = path.clone();
                async move {
                    client
                        .list_children(&path)
                        .await
                        .map(|c| c.len() == n)
                        .unwrap_or(false)
                }
            })
            .await
        }
    };
    wait_queue(1).await;
    let bob = {
        let path = path.clone();
        tokio::spawn(async move {
            run_as(
                Some(BOB),
                &["exec", "--write", "--acl", "creator", &path, "--", "true"],
            )
            .await
        })
    };
    wait_queue(2).await;
    assert!(!bob.is_finished(), "bob ran while alice held the lock");
    std::fs::write(&holder.1, b"").expect("go");
    holder.0.await.expect("alice").expect(0, "");
    tokio::time::timeout(SHORT, bob)
        .await
        .expect("bob in time")
        .expect("bob")
        .expect(0, "");
}

#[tokio::test]
async fn tls_with_a_client_certificate_and_what_a_missing_piece_says() {
    let cluster = secured_server();
    let files = cluster.tls_files().expect("tls");
    let secure = cluster.secure_connect_string().expect("secure");
    let (ca, cert, key) = (
        files.ca_pem.to_str().unwrap(),
        files.client_cert_pem.to_str().unwrap(),
        files.client_key_pem.to_str().unwrap(),
    );
    let path = path("tls").await;
    let tls = ["--tls-ca", ca, "--tls-cert", cert, "--tls-key", key];
    let with_timeout = |timeout: &str, extra: &[&str]| -> Vec<String> {
        [
            "status",
            "-c",
            secure.as_str(),
            "--connect-timeout",
            timeout,
            path.as_str(),
        ]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect()
    };
    // What a missing piece says comes at once, or after 3 s; a complete
    // set connects, given time for a TLS handshake on a busy machine.
    let args = |extra: &[&str]| with_timeout("3s", extra);
    run_as(None, &argv(&with_timeout("20s", &tls)))
        .await
        .expect(0, "");
    run_as(
        None,
        &[
            "exec", "-w", "-c", &secure, tls[0], ca, tls[2], cert, tls[4], key, &path, "--", "true",
        ],
    )
    .await
    .expect(0, "");
    // Plain to the TLS port.
    run_as(None, &argv(&args(&[])))
        .await
        .expect(69, "If the servers take TLS connections only, pass --tls-ca");
    // No client certificate where the server requires one.
    run_as(None, &argv(&args(&["--tls-ca", ca])))
        .await
        .expect(69, "accept --tls-cert if they ask for one");
    // Usage errors, before connecting.
    run_as(None, &argv(&args(&["--tls-ca", ca, "--tls-cert", cert])))
        .await
        .expect(2, "--tls-key");
    run_as(None, &argv(&args(&["--tls-ca", "/nonexistent/ca.pem"])))
        .await
        .expect(2, "cannot read --tls-ca /nonexistent/ca.pem");
    run_as(None, &argv(&args(&["--tls-ca", key])))
        .await
        .expect(2, "invalid TLS settings");
    run_as(
        None,
        &argv(&args(&["--tls-ca", ca, "--tls-cert", ca, "--tls-key", ca])),
    )
    .await
    .expect(2, "invalid TLS settings");
}

#[tokio::test]
async fn sasl_credentials_and_a_rejected_password() {
    let (user, password) = SASL_USERS[0];
    let path = path("sasl").await;
    let good = format!("sasl:{user}:{password}");
    run_as(
        Some(&good),
        &["exec", "-w", "--acl", "creator", &path, "--", "true"],
    )
    .await
    .expect(0, "");
    // A scheme the server has no provider for ends the session the same way.
    run_as(Some("no-such-scheme:x"), &["status", &path])
        .await
        .expect(77, "ZooKeeper rejected the credentials (AuthFailed)");
    let bad = format!("sasl:{user}:not-the-password");
    run_as(Some(&bad), &["status", &path])
        .await
        .expect(77, "ZooKeeper rejected the credentials (AuthFailed)");
}

#[tokio::test]
async fn usage_errors_and_help() {
    for bad in ["digest", "digest:alice", ":x", "sasl:"] {
        run_as(Some(bad), &["status", "/locks/x"])
            .await
            .expect(2, "invalid --auth (or ZK_RWLOCK_AUTH)");
    }
    run_as(
        None,
        &["exec", "-w", "--acl", "creator", "/locks/x", "--", "true"],
    )
    .await
    .expect(2, "--acl creator needs an authenticated identity");
    for sub in ["exec", "status", "revoke"] {
        let out = run_as(None, &[sub, "--help"]).await;
        out.expect(0, "");
        assert!(
            out.stdout.contains("visible to every user of the machine (ps"),
            "{sub}: {out:#?}"
        );
        assert!(out.stdout.contains("ZK_RWLOCK_AUTH"), "{sub}: {out:#?}");
        assert!(
            out.stdout.contains("--tls-ca") && out.stdout.contains("--tls-key"),
            "{sub}"
        );
    }
    // The credentials' value is never shown in the help.
    let out = run_as(Some("digest:alice:top-secret"), &["status", "--help"]).await;
    assert!(!out.stdout.contains("top-secret"), "{out:#?}");
}

/// A lock directory the user may not write to, on the plain test server:
/// exit 77.
#[tokio::test]
async fn no_auth_exits_77() {
    let path = zk_rwlock_fixtures::unique_path("noauth");
    let owner = zk::Client::connector()
        .with_auth("digest", b"alice:secret")
        .connect(&zk_rwlock_fixtures::server().connect_string())
        .await
        .unwrap();
    owner
        .mkdir(
            &path,
            &zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all()),
        )
        .await
        .unwrap();
    let out = crate::common::run(&["exec", "--write", &path, "--", "true"]).await;
    out.expect_code(77);
    assert!(out.stderr.contains("NoAuth"), "{out:#?}");
    assert!(zk_rwlock_fixtures::children(&owner, &path).await.is_empty());
    owner.delete(&path, None).await.unwrap();
}
