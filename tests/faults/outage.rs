//! A server outage shorter than the session timeout must not cost a held
//! lock: the client reconnects to the same session in time, and the lock
//! and its node survive. Each `lock_survives_*` test stops a standalone
//! server for a fraction of the negotiated session timeout and starts it
//! again on the same port. And while the server is down, acquires with a
//! deadline still return by it.

use zk_rwlock_fixtures as support;

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use support::{children, client_on, eventually, joined, own_server, unique_path, wait_contenders};
use tokio::time::Instant;
use zk_rwlock::{connect_client, zk, SharedLock, GIVE_UP_SLACK, TRY_TIMEOUT};
use zk_rwlock_fixtures::launcher::ZkCluster;

/// The session timeout asked for; the server below grants 1–10 s.
const SESSION_TIMEOUT: Duration = Duration::from_secs(8);
const TICK_TIME: Duration = Duration::from_millis(500);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Patience for anything the outage itself does not delay.
const WITHIN: Duration = Duration::from_secs(30);
/// The connect timeout, and the patience, of the deadline test.
const SHORT: Duration = Duration::from_secs(10);

/// One outage at a time: a server that starts while another one starts
/// takes longer, which would stretch the outage beyond its planned length.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn need_zookeeper<T>(e: zk_rwlock_fixtures::launcher::LaunchError) -> T {
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

/// `*_timeout`, `try_*` and `exec --timeout` return by their deadline (plus
/// `GIVE_UP_SLACK`) when the server goes away while they wait; the node is
/// deleted after the client reconnects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_hold_while_the_server_is_down() {
    let mut zk = own_server(Duration::from_millis(500));
    let servers = zk.connect_string();
    let path = unique_path("deadline");
    let session = Duration::from_secs(8);
    let holder_lock =
        SharedLock::new(connect_client(&servers, session, SHORT).await.unwrap(), &path).unwrap();
    let holder = holder_lock.write().await.unwrap();
    let waiter = SharedLock::new(connect_client(&servers, session, SHORT).await.unwrap(), &path).unwrap();
    let timeout = Duration::from_secs(2);
    let timed = tokio::spawn({
        let waiter = waiter.clone();
        async move {
            let started = Instant::now();
            let got = waiter.write_timeout(timeout).await;
            (got.map(|g| g.is_some()), started.elapsed())
        }
    });
    wait_contenders(&holder_lock, 2).await;
    zk.kill(0).unwrap();
    let (got, took) = joined(SHORT * 2, timed).await;
    assert!(matches!(got, Ok(false)), "timed out without the lock: {got:?}");
    let bound = timeout + GIVE_UP_SLACK + Duration::from_millis(500);
    assert!(
        took <= bound,
        "write_timeout(2s) took {took:?} with the server down (bound {bound:?})"
    );

    let started = Instant::now();
    let tried = waiter.try_read().await;
    let took = started.elapsed();
    assert!(matches!(tried, Ok(None)), "{tried:?}");
    let bound = TRY_TIMEOUT + GIVE_UP_SLACK + Duration::from_millis(500);
    assert!(
        took <= bound,
        "try_read took {took:?} with the server down (bound {bound:?})"
    );

    // Back again: the withdrawn nodes go once the waiter has reconnected;
    // the holder keeps its lock.
    zk.start(0).unwrap();
    let observer = client_on(&servers).await;
    let holder_name = holder.node().rsplit('/').next().unwrap().to_owned();
    eventually("only the holder's node is left", SHORT * 2, || async {
        children(&observer, &path).await == vec![holder_name.clone()]
    })
    .await;
    assert!(holder.is_held());
    holder.release().await.unwrap();
}
