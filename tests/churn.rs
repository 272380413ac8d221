//! Churn: the library used over and over must leave the process as it
//! found it. Here: the session registry of the library's background thread.

use std::sync::Mutex;
use std::time::Duration;

use zk_rwlock::connect_client;
use zk_rwlock_testkit as support;

/// The tests of this binary measure the whole process: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the end figures may take to come back (sessions close, idle
/// runtime threads exit).
const SETTLE: Duration = Duration::from_secs(30);

/// N connect/close cycles leave the session registry at its starting size:
/// each session leaves it when it ends.
#[test]
fn closed_sessions_leave_the_registry() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    runtime().block_on(registry_cycles());
}

/// A runtime like `#[tokio::main]`'s, two workers (the blocking API's part
/// of a cycle runs in `block_in_place`).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

async fn registry_cycles() {
    let servers = support::server().connect_string();
    let start = zk_rwlock::registered_sessions();
    for _ in 0..20 {
        let client = connect_client(&servers, SESSION_TIMEOUT, CONNECT_TIMEOUT)
            .await
            .expect("connects");
        assert!(
            zk_rwlock::registered_sessions() > start,
            "a live session is registered"
        );
        drop(client);
    }
    support::eventually("the registry back to its start", SETTLE, || async {
        zk_rwlock::registered_sessions() == start
    })
    .await;
    // A session that fails after it connected (a missing chroot) leaves too.
    let e = connect_client(
        &format!("{servers}/no-such-chroot"),
        SESSION_TIMEOUT,
        CONNECT_TIMEOUT,
    )
    .await
    .unwrap_err();
    assert!(matches!(e, zk_rwlock::Error::ChrootMissing { .. }), "{e}");
    support::eventually("the registry back to its start", SETTLE, || async {
        zk_rwlock::registered_sessions() == start
    })
    .await;
}
