//! The `zk-dev-server` binary with `--data-dir`: a client's session, and its
//! ephemeral node, survive a restart of the dev server on the same
//! directory and port.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};
use zookeeper_client as zk;

/// A running `zk-dev-server`: stopped as Ctrl-C would stop it when dropped
/// (also when the test fails).
struct DevServer(Child);

impl DevServer {
    /// Starts `zk-dev-server --port PORT --data-dir DIR` and returns it with
    /// its connect string (the one line it prints once it serves).
    fn start(port: u16, dir: &Path) -> (DevServer, String) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_zk-dev-server"))
            .args(["--port", &port.to_string(), "--data-dir"])
            .arg(dir)
            .stdout(Stdio::piped())
            .spawn()
            .expect("zk-dev-server starts");
        let stdout = child.stdout.take();
        let server = DevServer(child);
        let mut line = String::new();
        BufReader::new(stdout.expect("piped stdout"))
            .read_line(&mut line)
            .expect("the connect string");
        assert!(!line.trim().is_empty(), "zk-dev-server printed no connect string");
        (server, line.trim().to_owned())
    }

    /// Stops it with SIGINT and waits for it to exit; its exit status.
    fn stop(&mut self) -> std::io::Result<std::process::ExitStatus> {
        if let Ok(Some(status)) = self.0.try_wait() {
            return Ok(status);
        }
        let pid = i32::try_from(self.0.id()).ok().and_then(Pid::from_raw);
        if let Some(pid) = pid {
            let _ = kill_process(pid, Signal::INT);
        }
        self.0.wait()
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Stops the dev server as Ctrl-C would; it exits with success.
fn stop(mut server: DevServer) {
    let status = server.stop().expect("zk-dev-server exits");
    assert!(status.success(), "zk-dev-server: {status}");
}

/// A free TCP port on 127.0.0.1 (free when asked).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    listener.local_addr().expect("addr").port()
}

#[test]
fn a_session_survives_a_restart_on_the_same_data_dir() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let (server, connect) = DevServer::start(port, dir.path());
    // tickTime 2000 ms: sessions of up to 40 s.
    let client = runtime.block_on(async {
        zk::Client::connector()
            .with_session_timeout(Duration::from_secs(30))
            .connect(&connect)
            .await
            .expect("a session")
    });
    let session = client.session_id();
    let node = "/survivor";
    runtime
        .block_on(client.create(
            node,
            b"kept",
            &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
        ))
        .expect("an ephemeral node");

    stop(server);
    let (server, again) = DevServer::start(port, dir.path());
    assert_eq!(again, connect);
    // The client reconnects by itself to the same session: its ephemeral
    // node is still there, still its own.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (data, stat) = loop {
        match runtime.block_on(client.get_data(node)) {
            Ok(read) => break read,
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "the session did not come back: {e} (state {:?})",
                    client.state()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    };
    assert_eq!(data, b"kept");
    assert_eq!(stat.ephemeral_owner, session.0);
    assert_eq!(client.session_id(), session);
    drop(client);
    stop(server);
    assert!(
        dir.path().join("member-0").is_dir(),
        "the data stays after the last stop"
    );
}
