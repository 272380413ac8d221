//! A server outage shorter than the session timeout must not cost a held
//! lock: the client reconnects to the same session in time, and the lock
//! and its node survive. Each test stops a standalone server for a fraction
//! of the negotiated session timeout and starts it again on the same port.

use zk_rwlock_testkit as support;

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use tokio::time::Instant;
use zk_rwlock::{connect_client, zk, SharedLock};
use zk_rwlock_testkit::launcher::ZkCluster;

/// The session timeout asked for; the server below grants 1–10 s.
const SESSION_TIMEOUT: Duration = Duration::from_secs(8);
const TICK_TIME: Duration = Duration::from_millis(500);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Patience for anything the outage itself does not delay.
const WITHIN: Duration = Duration::from_secs(30);

/// One outage at a time: a server that starts while another one starts
/// takes longer, which would stretch the outage beyond its planned length.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn need_zookeeper<T>(e: zk_rwlock_testkit::launcher::LaunchError) -> T {
    panic!(
        "this test needs a real ZooKeeper server: {e}\ninstall it with `sudo apt-get install -y zookeeper`"
    )
}

/// Stops the server, and returns it with the moment `states` reported the
/// client disconnected: the outage, as the client sees it, starts there.
async fn stop(mut zk: ZkCluster, states: &mut zk::StateWatcher) -> (ZkCluster, Instant) {
    let stopping = tokio::task::spawn_blocking(move || zk.stop(0).map(|()| zk));
    let disconnected = async {
        while states.changed().await != zk::SessionState::Disconnected {}
        Instant::now()
    };
    let down = tokio::time::timeout(WITHIN, disconnected)
        .await
        .expect("the client sees the server go");
    let zk = support::joined(WITHIN, stopping)
        .await
        .unwrap_or_else(need_zookeeper);
    (zk, down)
}

/// Starts the stopped server again, and returns it (once it serves) with
/// the moment its client port accepted connections again: from then on a
/// client's connection attempt succeeds (its handshake is answered as soon
/// as the server has loaded its data).
async fn start(zk: ZkCluster) -> (ZkCluster, Instant) {
    let port = SocketAddr::from((Ipv4Addr::LOCALHOST, zk.client_port(0)));
    let mut starting = tokio::task::spawn_blocking(move || {
        let mut zk = zk;
        zk.start(0).map(|()| zk)
    });
    let accepting = async {
        loop {
            let open = tokio::task::block_in_place(|| {
                TcpStream::connect_timeout(&port, Duration::from_millis(100)).is_ok()
            });
            if open {
                return Instant::now();
            }
            if starting.is_finished() {
                let failed = (&mut starting).await.expect("start does not panic");
                panic!("the server did not come back: {:?}", failed.err());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let back = tokio::time::timeout(WITHIN, accepting)
        .await
        .expect("the server's port opens again");
    let zk = support::joined(WITHIN, starting)
        .await
        .unwrap_or_else(need_zookeeper);
    (zk, back)
}

/// Waits until `states` reports `SyncConnected` (`Ok`) or a session-ending
/// state (`Err`), failing the test at `until`.
async fn reconnected(
    states: &mut zk::StateWatcher,
    until: Instant,
    what: &str,
) -> Result<(), zk::SessionState> {
    let wait = async {
        loop {
            match states.changed().await {
                zk::SessionState::SyncConnected => return Ok(()),
                state if state.is_terminated() => return Err(state),
                _ => {}
            }
        }
    };
    tokio::time::timeout_at(until, wait)
        .await
        .unwrap_or_else(|_| panic!("{what}: the client neither reconnected nor gave up"))
}

/// Holds a write lock, stops the server for `fraction` of the negotiated
/// session timeout, starts it again, and checks that the lock is still held
/// through the same session.
async fn lock_survives_an_outage_of(fraction: f64) {
    let _serial = ONE_AT_A_TIME.lock().await;
    let zk = tokio::task::block_in_place(|| ZkCluster::builder().tick_time(TICK_TIME).start())
        .unwrap_or_else(need_zookeeper);
    // How long the server takes from a start to an open port here (a first
    // start takes longer): it is started that much before the outage ends.
    let zk = tokio::task::block_in_place(|| {
        let mut zk = zk;
        zk.stop(0).map(|()| zk)
    })
    .unwrap_or_else(need_zookeeper);
    let starting = Instant::now();
    let (zk, back) = start(zk).await;
    let startup = back - starting;

    let connect = zk.connect_string();
    let path = support::unique_path("outage");
    let holder = connect_client(&connect, SESSION_TIMEOUT, CONNECT_TIMEOUT)
        .await
        .unwrap();
    let session = holder.session_id();
    let timeout = holder.session_timeout();
    assert_eq!(
        timeout, SESSION_TIMEOUT,
        "the server grants the session timeout asked for"
    );
    let lock = SharedLock::new(holder.clone(), &path).unwrap();
    let guard = lock.write().await.unwrap();
    let outage = timeout.mul_f64(fraction);
    let what = format!("{fraction} x {timeout:?} outage");

    let mut states = holder.state_watcher();
    let (zk, down) = stop(zk, &mut states).await;
    tokio::time::sleep_until(down + outage.saturating_sub(startup)).await;
    let (zk, back) = start(zk).await;
    let measured = back - down;
    // The client gives up 1.4 session timeouts after it last heard from the
    // server, which was before `down`.
    let outcome = reconnected(&mut states, down + timeout.mul_f64(1.4) + WITHIN, &what).await;
    let after = back.elapsed();
    eprintln!(
        "{what}: no server for {measured:.2?} (planned {outage:.2?}); the client {} {after:.2?} after the port opened",
        if outcome.is_ok() { "reconnected" } else { "gave up" },
    );
    if let Err(state) = outcome {
        panic!("{what}: no server for {measured:.2?}, then the client ended its session ({state:?}) after {after:.2?}");
    }

    assert_eq!(holder.session_id(), session, "{what}: the same session");
    assert!(guard.is_held(), "{what}: the lock is still held");
    let other = connect_client(&connect, SESSION_TIMEOUT, CONNECT_TIMEOUT)
        .await
        .unwrap();
    let stat = other
        .check_stat(guard.node())
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{what}: the holder's node {} is gone", guard.node()));
    assert_eq!(stat.ephemeral_owner, session.0, "{what}: the node's owner");
    let contender = SharedLock::new(other, &path).unwrap();
    assert!(
        contender.try_write().await.unwrap().is_none(),
        "{what}: a second writer is refused"
    );
    guard.release().await.unwrap();
    drop(zk);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_survives_an_outage_of_half_the_session_timeout() {
    lock_survives_an_outage_of(0.5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_survives_an_outage_of_0_7_session_timeouts() {
    lock_survives_an_outage_of(0.7).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_survives_an_outage_of_0_9_session_timeouts() {
    lock_survives_an_outage_of(0.9).await;
}
