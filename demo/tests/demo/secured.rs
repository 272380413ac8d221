//! `zk-rwlock-demo --connect` on a secured server: the parent and every
//! worker process connect with TLS and a client certificate, authenticate
//! with the credentials of `ZK_RWLOCK_AUTH`, and create creator-only nodes.

use std::process::Command;

use zk_rwlock::{connect_client_with, zk, ConnectOptions};
use zk_rwlock_testkit::secured_server;

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock-demo");

#[test]
fn workers_connect_with_tls_and_credentials() {
    let cluster = secured_server();
    let files = cluster.tls_files().expect("tls");
    let secure = cluster.secure_connect_string().expect("secure port");
    // An open parent for the lock (a lock's missing parents get its own ACL).
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = connect_client_with(&cluster.connect_string(), &ConnectOptions::new())
            .await
            .expect("connect");
        match client
            .create(
                "/secured-demo",
                &[],
                &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
            )
            .await
        {
            Ok(_) | Err(zk::Error::NodeExists) => {}
            Err(e) => panic!("creating /secured-demo: {e}"),
        }
    });
    let path = format!("/secured-demo/run-{}", std::process::id());
    let s = |p: &std::path::Path| p.to_str().expect("utf-8 path").to_owned();
    let output = Command::new(BIN)
        .args(["--connect", &secure, "--path", &path, "--acl", "creator"])
        .args(["--tls-ca", &s(&files.ca_pem)])
        .args([
            "--tls-cert",
            &s(&files.client_cert_pem),
            "--tls-key",
            &s(&files.client_key_pem),
        ])
        .args([
            "--readers",
            "2",
            "--writers",
            "1",
            "--duration",
            "2s",
            "--seed",
            "3",
        ])
        .env("ZK_RWLOCK_AUTH", "digest:demo:demo-pw")
        .env("COLUMNS", "100")
        .env_remove("RUST_LOG")
        .output()
        .expect("run zk-rwlock-demo");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(stdout.contains("verdict: OK"), "{stdout}\n{stderr}");
    // The lock's directory was made by the demo's identity, for it alone.
    runtime.block_on(async {
        let anonymous = connect_client_with(&cluster.connect_string(), &ConnectOptions::new())
            .await
            .expect("connect");
        match anonymous.get_acl(&path).await {
            Ok((acl, _)) => assert!(
                acl.iter()
                    .all(|a| a.scheme() == "digest" && a.id().starts_with("demo:")),
                "{acl:?}"
            ),
            // Removed when empty (a container), or already cleaned up.
            Err(zk::Error::NoNode) => {}
            Err(e) => panic!("{e}"),
        }
    });
    // Without the credentials, the creator-only ACL is refused before anything starts.
    let output = Command::new(BIN)
        .args([
            "--connect",
            &secure,
            "--path",
            &path,
            "--acl",
            "creator",
            "--duration",
            "1s",
        ])
        .env_remove("ZK_RWLOCK_AUTH")
        .output()
        .expect("run zk-rwlock-demo");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--acl creator needs an authenticated identity"));
}
