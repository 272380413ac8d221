//! `connect_client` against a server that accepts the TCP connection and
//! never answers: it reports `Unreachable` after its connect timeout and
//! leaves nothing connecting behind.

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use zk_rwlock::{connect_client, Error};

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
