//! The ZooKeeper client's own log lines stay out of the command line's
//! messages unless `RUST_LOG` asks for them. No server needed: a listener
//! that closes every connection at once makes the client warn that it
//! failed to establish a session.

use std::net::TcpListener;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock");

/// The start of the message for a server that accepts the connection and
/// closes it before answering (`Error::SessionRefused`).
const REFUSED: &str = "ZooKeeper at ";

/// `zk-rwlock status` against a port that accepts connections and closes
/// them; returns the exit code and stderr.
fn status_against_a_closing_server(rust_log: Option<&str>) -> (Option<i32>, String) {
    let closing = TcpListener::bind("127.0.0.1:0").expect("bind");
    let connect = closing.local_addr().unwrap().to_string();
    std::thread::spawn(move || closing.incoming().for_each(drop));
    let mut cmd = Command::new(BIN);
    cmd.args(["status", "--connect", &connect, "--connect-timeout", "1s", "/a"]);
    match rust_log {
        Some(filter) => cmd.env("RUST_LOG", filter),
        None => cmd.env_remove("RUST_LOG"),
    };
    let out = cmd.output().expect("run zk-rwlock");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_clients_warnings_are_left_out_by_default() {
    let (code, stderr) = status_against_a_closing_server(None);
    assert_eq!(code, Some(69), "{stderr}");
    assert!(!stderr.contains("zookeeper_client"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // A server that closes the connection it accepted refuses the session.
    assert!(stderr.starts_with(&format!("zk-rwlock: {REFUSED}")), "{stderr}");
}

#[test]
fn rust_log_asks_for_the_clients_warnings() {
    let (code, stderr) = status_against_a_closing_server(Some("zookeeper_client=warn"));
    assert_eq!(code, Some(69), "{stderr}");
    assert!(stderr.contains("zookeeper_client"), "{stderr}");
    assert!(stderr.contains(&format!("zk-rwlock: {REFUSED}")), "{stderr}");
}
