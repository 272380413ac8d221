//! Secured servers: digest credentials and ACLs through the async and the
//! blocking API, TLS with a CA and with a client certificate, SASL
//! DIGEST-MD5, and what goes wrong when a piece is missing.
//!
//! Two servers (started once per binary): one with a plain port, a TLS-only
//! port that requires client certificates, and SASL users; one whose
//! TLS-only port asks for no certificate.

use std::time::{Duration, Instant};

use zk_rwlock::{blocking, connect_client_with, zk, ConnectOptions, Error, SharedLock};
use zk_rwlock_fixtures::{pem, secured_server, tls_server, wait_contenders, SASL_USERS};

/// Bounds every "at once" in this file: a refusal must come well before it.
const PROMPT: Duration = Duration::from_secs(10);

fn digest(user: &str) -> ConnectOptions {
    ConnectOptions::new()
        .digest(user, &format!("{user}-pw"))
        .session_timeout(Duration::from_secs(4))
}

async fn connect(options: &ConnectOptions) -> zk::Client {
    ensure_root(secured_server()).await;
    connect_client_with(&secured_server().connect_string(), options)
        .await
        .unwrap_or_else(|e| panic!("connecting with {options:?}: {e}"))
}

/// Creates `path` (and its parents) as persistent nodes open to anyone.
async fn open_dir(path: &str) {
    let client = connect(&ConnectOptions::new()).await;
    client
        .mkdir(
            path,
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .expect("mkdir");
}

/// A fresh lock path under `/secured`, which is open to anyone: a lock's
/// missing parents are created with the lock's own ACLs, and a parent only
/// one identity may write would keep the others from their own locks.
fn unique_path(name: &str) -> String {
    zk_rwlock_fixtures::unique_path(name).replacen("/test/", "/secured/", 1)
}

/// Creates `/secured` open to anyone on `cluster`, once per server.
async fn ensure_root(cluster: &zk_rwlock_fixtures::ZkCluster) {
    let client = connect_client_with(&cluster.connect_string(), &ConnectOptions::new())
        .await
        .expect("connect");
    match client
        .create(
            "/secured",
            &[],
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
    {
        Ok(_) | Err(zk::Error::NodeExists) => {}
        Err(e) => panic!("creating /secured: {e}"),
    }
}

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PROMPT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {PROMPT:?}"))
}

#[tokio::test]
async fn a_private_lock_refuses_other_identities_at_once() {
    let path = unique_path("private");
    let alice = connect(&digest("alice")).await;
    let lock = SharedLock::builder(alice, &path)
        .acls(&zk::Acls::creator_all())
        .directory_acls(&zk::Acls::creator_all())
        .build()
        .expect("lock");
    let guard = lock.write().await.expect("alice writes");
    // The directory is alice's alone: bob, and a client without credentials,
    // are refused when they queue, not left waiting.
    for (who, options) in [("bob", digest("bob")), ("anonymous", ConnectOptions::new())] {
        let other = SharedLock::new(connect(&options).await, &path).expect("lock");
        let started = Instant::now();
        let result = within(who, other.write()).await;
        assert!(
            matches!(&result, Err(Error::NoAuth { path: p }) if p == &path),
            "{who}: {result:?}"
        );
        assert!(started.elapsed() < PROMPT, "{who} waited {:?}", started.elapsed());
        let status = within(who, other.contenders()).await;
        assert!(matches!(status, Err(Error::NoAuth { .. })), "{who}: {status:?}");
    }
    // A wrong password is another identity, refused the same way.
    let wrong = ConnectOptions::new().digest("alice", "not-her-password");
    let other = SharedLock::new(connect(&wrong).await, &path).expect("lock");
    assert!(matches!(
        within("wrong password", other.read()).await,
        Err(Error::NoAuth { .. })
    ));
    guard.release().await.expect("release");
}

#[tokio::test]
async fn two_identities_share_a_lock_whose_nodes_only_their_creator_may_read() {
    let path = unique_path("shared");
    open_dir(&path).await;
    let alice = SharedLock::builder(connect(&digest("alice")).await, &path)
        .acls(&zk::Acls::creator_all())
        .build()
        .expect("lock");
    let bob = SharedLock::builder(connect(&digest("bob")).await, &path)
        .acls(&zk::Acls::creator_all())
        .build()
        .expect("lock");
    let held = alice.write().await.expect("alice writes");
    // Bob cannot read alice's node: he waits on it with `exists`.
    let denied = bob.client().get_data(held.node()).await;
    assert!(matches!(denied, Err(zk::Error::NoAuth)), "{denied:?}");
    let waiting = {
        let bob = bob.clone();
        tokio::spawn(async move { bob.write().await })
    };
    wait_contenders(&alice, 2).await;
    assert!(
        !waiting.is_finished(),
        "bob was granted while alice held the lock"
    );
    let alice_token = held.fencing_token();
    held.release().await.expect("alice releases");
    let bobs = within("bob's grant after alice's release", waiting)
        .await
        .expect("joined")
        .expect("bob writes");
    assert!(bobs.fencing_token() > alice_token);
    // And the other way round, as readers behind a writer.
    let readers = {
        let alice = alice.clone();
        tokio::spawn(async move { alice.read().await })
    };
    wait_contenders(&bob, 2).await;
    bobs.release().await.expect("bob releases");
    let read = within("alice's read", readers)
        .await
        .expect("joined")
        .expect("alice reads");
    read.release().await.expect("release");
}

#[test]
fn the_blocking_api_takes_options_a_client_or_a_connector() {
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(ensure_root(secured_server()));
    let path = unique_path("blocking");
    let lock = blocking::SharedLock::connect_with_options(
        &secured_server().connect_string(),
        &path,
        &digest("carol"),
    )
    .expect("connect");
    let guard = lock.write().expect("write");
    assert!(guard.is_held());
    drop(guard);
    // An existing client, connected with a Connector configured by hand.
    let connector = zk::Client::connector().with_readonly(false);
    let options = ConnectOptions::from_connector(connector).digest("carol", "carol-pw");
    let client = blocking::connect(&secured_server().connect_string(), &options).expect("connect");
    let ids = zk::Acls::creator_all();
    let lock = blocking::SharedLock::from_async(
        SharedLock::builder(client.clone(), &path)
            .acls(&ids)
            .build()
            .expect("lock"),
    )
    .expect("blocking lock");
    let guard = lock.read().expect("read");
    drop(guard);
    let other = blocking::SharedLock::with_client(client, &path).expect("lock");
    assert!(other.try_write().expect("try_write").is_some());
}

fn tls_options(cluster: &zk_rwlock_fixtures::ZkCluster, with_identity: bool) -> ConnectOptions {
    let files = cluster.tls_files().expect("a TLS cluster");
    let mut options = ConnectOptions::new()
        .connect_timeout(Duration::from_secs(3))
        .tls_ca_pem(&pem(&files.ca_pem))
        .expect("CA");
    if with_identity {
        options = options
            .tls_identity_pem(&pem(&files.client_cert_pem), &pem(&files.client_key_pem))
            .expect("identity");
    }
    options
}

#[tokio::test]
async fn tls_with_a_ca_file() {
    let cluster = tls_server();
    let secure = cluster.secure_connect_string().expect("secure port");
    ensure_root(cluster).await;
    let path = unique_path("tls");
    let lock = SharedLock::connect_with_options(&secure, &path, &tls_options(cluster, false))
        .await
        .expect("TLS connect");
    let guard = lock.write().await.expect("write");
    guard.release().await.expect("release");
}

#[tokio::test]
async fn tls_with_a_client_certificate() {
    let cluster = secured_server();
    let secure = cluster.secure_connect_string().expect("secure port");
    let client = connect_client_with(&secure, &tls_options(cluster, true))
        .await
        .expect("TLS connect with a certificate");
    // The server knows the client by its certificate.
    let users = client.list_auth_users().await.expect("whoami");
    assert!(
        users
            .iter()
            .any(|u| u.scheme() == "x509" && u.user().contains("zk-rwlock-test-client")),
        "{users:?}"
    );
    let lock = SharedLock::new(client, &unique_path("x509")).expect("lock");
    lock.write()
        .await
        .expect("write")
        .release()
        .await
        .expect("release");
}

/// Every way of reaching a TLS port wrongly (or a plain one with TLS)
/// fails within the connect timeout, as `Unreachable` or `SessionRefused`.
#[tokio::test]
async fn wrong_tls_fails_within_the_connect_timeout() {
    let cluster = secured_server();
    let secure = cluster.secure_connect_string().expect("secure port");
    let files = cluster.tls_files().expect("tls");
    let plain = ConnectOptions::new().connect_timeout(Duration::from_secs(3));
    let other_ca = ConnectOptions::new()
        .connect_timeout(Duration::from_secs(3))
        .tls_ca_pem(&pem(&files.client_cert_pem))
        .expect("CA");
    let cases = [
        ("plain to the TLS port", &secure, plain),
        ("no client certificate", &secure, tls_options(cluster, false)),
        (
            "a CA that did not sign the server's certificate",
            &secure,
            other_ca,
        ),
        (
            "TLS to the plain port",
            &cluster.connect_string(),
            tls_options(cluster, true),
        ),
    ];
    for (what, servers, options) in cases {
        let started = Instant::now();
        let result = within(what, connect_client_with(servers, &options)).await;
        // A server that closes the connection it accepted, before any
        // answer, refuses the session as far as the client can tell.
        assert!(
            matches!(
                result,
                Err(Error::Unreachable { .. } | Error::SessionRefused { .. })
            ),
            "{what}: {result:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "{what}: {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn sasl_digest_md5() {
    let (user, password) = SASL_USERS[0];
    let options = ConnectOptions::new()
        .sasl_digest_md5(user, password)
        .connect_timeout(Duration::from_secs(5));
    let client = connect(&options).await;
    let users = client.list_auth_users().await.expect("whoami");
    assert!(
        users.iter().any(|u| u.scheme() == "sasl" && u.user() == user),
        "{users:?}"
    );
    let path = unique_path("sasl");
    let lock = SharedLock::builder(client.clone(), &path)
        .acls(&zk::Acls::creator_all())
        .directory_acls(&zk::Acls::creator_all())
        .build()
        .expect("lock");
    let guard = lock.write().await.expect("write");
    let (acl, _) = client.get_acl(guard.node()).await.expect("acl");
    assert!(
        acl.iter().all(|a| a.scheme() == "sasl" && a.id() == user),
        "{acl:?}"
    );
    // The other SASL user is refused.
    let (bob, bob_password) = SASL_USERS[1];
    let other = connect(&ConnectOptions::new().sasl_digest_md5(bob, bob_password)).await;
    let other = SharedLock::new(other, &path).expect("lock");
    assert!(matches!(
        within("bob", other.read()).await,
        Err(Error::NoAuth { .. })
    ));
    guard.release().await.expect("release");
}

#[tokio::test]
async fn a_rejected_sasl_password_is_auth_failed() {
    let options = ConnectOptions::new()
        .sasl_digest_md5(SASL_USERS[0].0, "not-the-password")
        .connect_timeout(Duration::from_secs(5));
    let result = within(
        "SASL with a wrong password",
        connect_client_with(&secured_server().connect_string(), &options),
    )
    .await;
    assert!(matches!(result, Err(Error::AuthFailed)), "{result:?}");
}

/// Credentials the server rejects in the middle of a session (here an
/// unknown scheme) end it: the state is `AuthFailed`, holders learn it and
/// acquires fail with `Error::AuthFailed`.
#[tokio::test]
async fn auth_that_fails_mid_session_ends_the_session() {
    let client = connect(&digest("dave")).await;
    let lock = SharedLock::new(client.clone(), &unique_path("midsession")).expect("lock");
    let guard = lock.write().await.expect("write");
    let refused = client.auth("no-such-scheme", b"x").await;
    assert!(matches!(refused, Err(zk::Error::AuthFailed)), "{refused:?}");
    within("the guard learns it", guard.lost()).await;
    assert_eq!(client.state(), zk::SessionState::AuthFailed);
    let again = within("acquire", lock.read()).await;
    assert!(matches!(again, Err(Error::AuthFailed)), "{again:?}");
}

/// `creator_all` needs an authenticated identity: without one ZooKeeper
/// rejects the ACL (InvalidACL) at the first create.
#[tokio::test]
async fn creator_only_acls_without_credentials_are_invalid() {
    let lock = SharedLock::builder(
        connect(&ConnectOptions::new()).await,
        &unique_path("noauth-creator"),
    )
    .acls(&zk::Acls::creator_all())
    .build()
    .expect("lock");
    let result = within("acquire", lock.write()).await;
    assert!(
        matches!(result, Err(Error::ZooKeeper(zk::Error::InvalidAcl))),
        "{result:?}"
    );
}

/// The client sends its credentials (digest, and the SASL exchange) again on
/// every reconnection: after its connection is cut, the same session keeps
/// its identity and rights.
#[tokio::test]
async fn credentials_survive_a_reconnection() {
    ensure_root(secured_server()).await;
    let (sasl_user, sasl_password) = SASL_USERS[1];
    let cases = [
        (digest("alice"), "digest", "alice"),
        (
            ConnectOptions::new().sasl_digest_md5(sasl_user, sasl_password),
            "sasl",
            sasl_user,
        ),
    ];
    for (options, scheme, user) in cases {
        let proxy = zk_rwlock_fixtures::proxy::Proxy::start(&secured_server().connect_string());
        let path = unique_path("reconnect");
        let client = connect_client_with(proxy.addr(), &options)
            .await
            .expect("connect");
        let lock = SharedLock::builder(client.clone(), &path)
            .acls(&zk::Acls::creator_all())
            .build()
            .expect("lock");
        let guard = lock.read().await.expect("read");
        let session = client.session_id();
        let mut states = client.state_watcher();
        assert!(proxy.cut_all() > 0, "nothing to cut");
        within("reconnected", async {
            let mut state = states.changed().await;
            while state != zk::SessionState::SyncConnected {
                state = states.changed().await;
            }
        })
        .await;
        assert!(proxy.accepted() >= 2, "{scheme}: the client did not reconnect");
        assert_eq!(client.session_id(), session);
        let users = client.list_auth_users().await.expect("whoami");
        assert!(
            users.iter().any(|u| u.scheme() == scheme && u.user() == user),
            "{users:?}"
        );
        // Still allowed where only this identity is.
        let second = within("second read", lock.read()).await.expect("read");
        second.release().await.expect("release");
        guard.release().await.expect("release");
    }
}

/// A SASL password changed on the server while a session holds a lock:
/// the reconnection's SASL exchange fails, the session ends as
/// `AuthFailed`, the holder learns it, and later calls fail with
/// `Error::AuthFailed`.
#[tokio::test]
async fn a_sasl_password_changed_on_the_server_ends_the_session_at_the_reconnection() {
    let mut cluster = zk_rwlock_fixtures::ZkCluster::builder()
        .sasl_user("erin", "old-pw")
        .start()
        .unwrap_or_else(|e| panic!("these tests need a real ZooKeeper server: {e}"));
    let options = ConnectOptions::new()
        .sasl_digest_md5("erin", "old-pw")
        .session_timeout(Duration::from_secs(4));
    let client = connect_client_with(&cluster.connect_string(), &options)
        .await
        .expect("connect");
    let lock = SharedLock::new(client.clone(), "/rotated").expect("lock");
    let guard = lock.write().await.expect("write");
    let jaas = cluster.jaas_path().expect("a SASL cluster");
    let text = std::fs::read_to_string(&jaas).expect("jaas");
    std::fs::write(&jaas, text.replace("old-pw", "new-pw")).expect("rewrite jaas");
    let mut states = client.state_watcher();
    let restarted = tokio::task::spawn_blocking(move || {
        cluster.restart(0).expect("restart");
        cluster
    });
    within("the session ends", async {
        while client.state() != zk::SessionState::AuthFailed {
            let state = states.changed().await;
            assert!(
                matches!(
                    state,
                    zk::SessionState::Disconnected
                        | zk::SessionState::SyncConnected
                        | zk::SessionState::AuthFailed
                ),
                "{state:?}"
            );
        }
    })
    .await;
    within("the guard learns it", guard.lost()).await;
    let again = within("acquire", lock.read()).await;
    assert!(matches!(again, Err(Error::AuthFailed)), "{again:?}");
    // The server stays up until here.
    drop(within("the restart", restarted).await.expect("restarted"));
}
