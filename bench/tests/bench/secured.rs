//! `zk-rwlock-bench` on a secured server: every session connects with TLS
//! and a client certificate and authenticates; the lock's nodes are creator-only.

use std::process::{Command, Stdio};

use serde_json::Value;
use zk_rwlock_testkit::{secured_server, unique_path};

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock-bench");

#[test]
fn a_contended_workload_with_tls_credentials_and_a_creator_acl() {
    let cluster = secured_server();
    let files = cluster.tls_files().expect("tls");
    let s = |p: &std::path::Path| p.to_str().expect("utf-8 path").to_owned();
    let output = Command::new(BIN)
        .args(["--zk", &cluster.secure_connect_string().expect("secure port")])
        .args([
            "--workload",
            "contended_write",
            "--grants",
            "20",
            "--clients",
            "3",
            "--warmup",
            "2",
        ])
        .args([
            "--path",
            &unique_path("bench"),
            "--max-secs",
            "20",
            "--acl",
            "creator",
        ])
        .args(["--tls-ca", &s(&files.ca_pem)])
        .args([
            "--tls-cert",
            &s(&files.client_cert_pem),
            "--tls-key",
            &s(&files.client_key_pem),
        ])
        .env("ZK_RWLOCK_AUTH", "digest:bench:bench-pw")
        .env_remove("RUST_LOG")
        .env_remove("ZK_CONNECT")
        .stdin(Stdio::null())
        .output()
        .expect("run zk-rwlock-bench");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    let row: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("JSON row");
    assert_eq!(row["grants"], 20, "{row}");
    assert_eq!(row["violations"], 0, "{row}");
    assert_eq!(row["errors"], 0, "{row}");
}
