//! `connect_client` against a server that accepts the TCP connection and
//! never answers: it reports `Unreachable` after its connect timeout and
//! leaves nothing connecting behind. Against servers that refuse the
//! connection it keeps trying until its connect timeout: a server that
//! begins to listen meanwhile is met.

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use zk_rwlock::{connect_client, Error};
use zk_rwlock_testkit as support;

#[tokio::test]
async fn a_connect_that_times_out_closes_its_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    let accepted = std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().expect("the client connects");
        socket
            .set_read_timeout(Some(Duration::from_secs(20)))
            .expect("a read timeout");
        // The client's handshake, then nothing more until it closes.
        let mut buf = [0u8; 4096];
        loop {
            match socket.read(&mut buf) {
                Ok(0) => return Ok(Instant::now()),
                Ok(_) => continue,
                Err(e) => return Err(e),
            }
        }
    });
    let result = connect_client(
        &addr.to_string(),
        Duration::from_secs(30),
        Duration::from_millis(500),
    )
    .await;
    let returned = Instant::now();
    assert!(matches!(result, Err(Error::Unreachable { .. })), "{result:?}");
    let closed = tokio::task::spawn_blocking(move || accepted.join())
        .await
        .expect("joined")
        .expect("the accepting thread")
        .expect("the connection is closed within 20 s");
    let after = closed.saturating_duration_since(returned);
    assert!(
        after < Duration::from_secs(5),
        "the timed-out connect kept its connection open for {after:?}"
    );
}

/// A port nothing listens on (bound, then freed).
fn refusing_port() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.local_addr().expect("its address")
}

/// Every server refuses: `Unreachable` once the connect timeout has been
/// spent trying, not at the first refusal (the error says "tried for up to").
#[tokio::test]
async fn refused_connections_are_tried_again_until_the_connect_timeout() {
    let addr = refusing_port();
    let timeout = Duration::from_millis(1500);
    let started = Instant::now();
    let result = connect_client(&addr.to_string(), Duration::from_secs(10), timeout).await;
    let took = started.elapsed();
    assert!(
        matches!(&result, Err(Error::Unreachable { timeout: t, .. }) if *t == timeout),
        "{result:?}"
    );
    assert!(
        took >= timeout,
        "gave up after {took:?}, before the connect timeout"
    );
    assert!(
        took < timeout + Duration::from_secs(3),
        "gave up only after {took:?}"
    );
}

/// A server that begins to listen 600 ms into the connect (a restart that
/// is not over yet) is met: the session is established.
#[tokio::test]
async fn a_server_that_begins_to_listen_within_the_connect_timeout_is_met() {
    let server = support::server().connect_string();
    let addr = refusing_port();
    let late = Duration::from_millis(600);
    // The server's port appears late: a forwarder to the real server (it
    // ends with the test's process).
    std::thread::spawn(move || {
        std::thread::sleep(late);
        let listener = TcpListener::bind(addr).expect("the port again");
        for inbound in listener.incoming() {
            let Ok(inbound) = inbound else { return };
            let Ok(outbound) = std::net::TcpStream::connect(&server) else {
                return;
            };
            for (mut from, mut to) in [
                (inbound.try_clone(), outbound.try_clone()),
                (outbound.try_clone(), inbound.try_clone()),
            ]
            .into_iter()
            .filter_map(|(a, b)| Some((a.ok()?, b.ok()?)))
            {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                });
            }
        }
    });
    let started = Instant::now();
    let client = connect_client(
        &addr.to_string(),
        Duration::from_secs(10),
        Duration::from_secs(10),
    )
    .await
    .expect("connected once the server listens");
    assert!(started.elapsed() >= late, "connected before anything listened");
    client.check_stat("/").await.expect("the session answers");
}
