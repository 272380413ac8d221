//! `connect_client` against a server that accepts the TCP connection and
//! never answers: it reports `Unreachable` after its connect timeout and
//! leaves nothing connecting behind. Against servers that refuse the
//! connection it keeps trying until its connect timeout: a server that
//! begins to listen meanwhile is met.

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use zk_rwlock::{connect_client, Error};
use zk_rwlock_fixtures as support;

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

/// A server that is down when the connect begins, and serves again within
/// the connect timeout (a restart that is not over yet), is met: the
/// session is established.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_begins_to_listen_within_the_connect_timeout_is_met() {
    let mut zk = support::own_server(Duration::from_millis(500));
    let servers = zk.connect_string();
    zk.stop(0).expect("stopped: its port refuses connections");
    // Without retries this would fail at once with `Unreachable`.
    let connecting = tokio::spawn(async move {
        connect_client(&servers, Duration::from_secs(10), Duration::from_secs(20)).await
    });
    let zk = tokio::task::spawn_blocking(move || {
        zk.start(0).expect("the server serves again");
        zk
    })
    .await
    .expect("restarted");
    let client = connecting
        .await
        .expect("the connect task")
        .expect("connected once the server listens");
    client.check_stat("/").await.expect("the session answers");
    drop(zk);
}

/// A connect string that is not one is refused before anything is sent,
/// saying what is wrong with it (not the client's "invalid address" or
/// "empty node is not allowed in path").
#[tokio::test]
async fn a_malformed_connect_string_says_what_is_wrong() {
    for (servers, reason) in [
        (
            "http://127.0.0.1:2181",
            "`http://` is not a scheme of ZooKeeper connect strings",
        ),
        (
            "127.0.0.1:99999",
            "the port 99999 of `127.0.0.1:99999` is out of range",
        ),
        ("127.0.0.1:2181/app/", "its chroot `/app/`"),
        ("a:1,,b:2", "it has an empty entry"),
    ] {
        let started = Instant::now();
        let result = connect_client(servers, Duration::from_secs(10), Duration::from_secs(30)).await;
        match result {
            Err(e @ Error::InvalidConnectString { .. }) => {
                assert!(e.to_string().contains(reason), "{servers}: {e}");
                assert!(started.elapsed() < Duration::from_secs(5), "{servers}");
            }
            other => panic!("{servers}: {other:?}"),
        }
    }
}

/// A `tcp+tls://` server without a TLS CA in the options (or without the
/// `tls` feature) is refused at once with `InvalidTls`, saying what is
/// missing, not tried (the client's "tls not configured") until the
/// connect timeout ends in `Unreachable`: here a server that listens.
#[tokio::test]
async fn a_tls_server_without_a_ca_is_refused_at_once() {
    let zk = support::server();
    let timeout = Duration::from_secs(30);
    let plain = zk.connect_string();
    for servers in [
        format!("tcp+tls://{plain}"),
        format!("{plain},tcp+tls://{plain}/app"),
    ] {
        let options = zk_rwlock::ConnectOptions::new().connect_timeout(timeout);
        let started = Instant::now();
        let results = [
            connect_client(&servers, Duration::from_secs(10), timeout)
                .await
                .map(drop),
            zk_rwlock::connect_client_with(&servers, &options).await.map(drop),
            zk_rwlock::SharedLock::connect_with_options(&servers, "/locks/tls", &options)
                .await
                .map(drop),
        ];
        for result in results {
            match result {
                Err(e @ Error::InvalidTls { .. }) => {
                    let message = e.to_string();
                    assert!(
                        message.contains(&format!("the connect string asks for TLS (`tcp+tls://{plain}")),
                        "{message}"
                    );
                    let missing = if cfg!(feature = "tls") {
                        "no TLS CA is given"
                    } else {
                        "build it with its `tls` feature"
                    };
                    assert!(message.contains(missing), "{message}");
                }
                other => panic!("{servers}: expected InvalidTls, got {other:?}"),
            }
        }
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "{servers}: took {took:?}");
    }
    // The same server without `tcp+tls://`: a session.
    let client = connect_client(&plain, Duration::from_secs(10), timeout)
        .await
        .expect("connected");
    client.check_stat("/").await.expect("the session answers");
}

/// A connect string none of whose hosts resolves fails at once with
/// `UnresolvableHosts`, naming them, instead of `Unreachable` after the
/// connect timeout; one host that resolves is enough to connect.
#[tokio::test]
async fn hosts_that_do_not_resolve_are_named_at_once() {
    let timeout = Duration::from_secs(60);
    let servers = "nosuchhost.invalid:2181,other.invalid:2181";
    let started = Instant::now();
    let result = connect_client(servers, Duration::from_secs(10), timeout).await;
    let took = started.elapsed();
    match &result {
        Err(e @ Error::UnresolvableHosts { hosts, .. }) => {
            assert_eq!(hosts, &["nosuchhost.invalid", "other.invalid"]);
            assert!(
                e.to_string()
                    .contains("none of the host names `nosuchhost.invalid`, `other.invalid` resolves"),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(took < timeout / 2, "took {took:?}");
    let zk = support::server();
    let mixed = format!("nosuchhost.invalid:2181,{}", zk.connect_string());
    let client = connect_client(&mixed, Duration::from_secs(10), Duration::from_secs(20))
        .await
        .expect("connected through the host that resolves");
    client.check_stat("/").await.expect("the session answers");
}

/// With no server up, a release ends when the client gives the session
/// up (7/5 of the session timeout after the last answer), and its error
/// says that this may be the client's doing, not a server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_the_client_gives_up_is_not_said_to_be_expired_by_a_server() {
    let mut zk = support::own_server(Duration::from_millis(200));
    let client = connect_client(
        &zk.connect_string(),
        Duration::from_secs(2),
        Duration::from_secs(20),
    )
    .await
    .expect("connected");
    let lock = zk_rwlock::SharedLock::new(client.clone(), "/given-up").expect("a lock");
    let guard = lock.write().await.expect("granted");
    assert!(!client.session_given_up());
    let zk = tokio::task::spawn_blocking(move || {
        zk.stop(0).expect("stopped");
        zk
    })
    .await
    .expect("stopped");
    let started = Instant::now();
    let err = guard.release().await.expect_err("no server to release on");
    let took = started.elapsed();
    assert!(err.is_session_over(), "{err:?}");
    assert!(
        err.to_string()
            .contains("or this client gave it up because no server answered for 7/5 of the session timeout"),
        "{err}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        client.session_given_up(),
        "the client gave it up: no server said so"
    );
    drop(zk);
}

/// A session a server expired is not one the client gave up.
#[tokio::test]
async fn a_session_a_server_expired_is_not_given_up() {
    let direct = support::server().connect_string();
    let proxy = support::proxy::Proxy::start(&direct);
    let client = support::client_on(proxy.addr()).await;
    support::expire_behind(&proxy, &client, &direct).await;
    let mut states = client.state_watcher();
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        while client.state() != zk_rwlock::zk::SessionState::Expired {
            states.changed().await;
        }
    })
    .await;
    assert!(ended.is_ok(), "the session did not end: {:?}", client.state());
    assert!(!client.session_given_up(), "a server expired it");
}
