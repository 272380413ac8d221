//! The README's code blocks, verbatim, inside functions that compile:
//! `tests/readme.rs` checks that every `rust` block of README.md appears
//! here, so `cargo build --examples` compiles the README. Run it against a
//! server (`scripts/dev-server.sh`) with `cargo run --example readme`.
//! (`rustfmt::skip` keeps the blocks as the README shows them.)

use std::error::Error;

/// A stand-in for the store that takes fencing tokens.
struct Store;

impl Store {
    fn put(&self, _key: &str, _value: &str, _token: i64) -> Result<(), Box<dyn Error>> {
        Ok(())
    }
}

async fn do_the_work() {}

#[rustfmt::skip]
async fn async_api() -> Result<(), Box<dyn Error>> {
    let (store, key, value) = (Store, "k", "v");
    use zk_rwlock::SharedLock;

    let lock = SharedLock::connect("127.0.0.1:2181", "/locks/orders").await?;
    let guard = lock.write().await?;                 // or .read(), .try_write(), .write_timeout(d)
    store.put(key, value, guard.fencing_token())?;   // downstream rejects older tokens
    tokio::select! {
        _ = do_the_work() => {}
        // Connection lost (or lock lost): stop before the lease deadline.
        _ = guard.suspended() => return Err("lock in doubt: stop writing".into()),
    }
    guard.release().await?;                          // dropping the guard also releases
    Ok(())
}

#[rustfmt::skip]
fn blocking_api() -> Result<(), Box<dyn Error>> {
    let lock = zk_rwlock::blocking::SharedLock::connect("127.0.0.1:2181", "/locks/orders")?;
    let guard = lock.read()?;
    println!("reading under token {}", guard.fencing_token());
    drop(guard);
    Ok(())
}

#[rustfmt::skip]
async fn own_client() -> Result<(), Box<dyn Error>> {
    use zk_rwlock::SharedLock;
    use zk_rwlock::{connect_client, DEFAULT_CONNECT_TIMEOUT, DEFAULT_SESSION_TIMEOUT};
    let client = connect_client("127.0.0.1:2181", DEFAULT_SESSION_TIMEOUT, DEFAULT_CONNECT_TIMEOUT).await?;
    let lock = SharedLock::builder(client, "/locks/orders").identity("web01").build()?;
    let queue = lock.contenders().await?;            // queue order: who holds, who waits on whom
    let guard = lock.acquire(zk_rwlock::Mode::Read).await?;   // mode chosen at run time: a `Guard`
    let stats = lock.stats();                        // grants, hand-offs, waits, waiting, holding: no request
    println!("{queue:?} {stats:?}");
    guard.release().await?;
    Ok(())
}

#[rustfmt::skip]
async fn multi_and_revocation() -> Result<(), Box<dyn Error>> {
    use zk_rwlock::SharedLock;
    let lock = SharedLock::connect("127.0.0.1:2181", "/locks/orders").await?;
    let client = lock.client().clone();
    let guard = lock.write().await?;
    use zk_rwlock::{Mode, MultiLock};
    let parts = [("/accounts/42", Mode::Write), ("/rates", Mode::Read)];
    let multi = MultiLock::new(client.clone(), &parts)?;      // any order: taken in path order
    let both = multi.acquire().await?;                        // all parts, or none left behind
    let token = both.fencing_token("/accounts/42");           // one fencing token per part
    both.release().await?;

    let asked = lock.revoke_holders().await?;                 // writes `__REVOKE__` on each holder's node
    if guard.revocation_requested().await {                   // in the holder: cooperative, it decides
        guard.release().await?;
    }
    println!("{token:?} {asked:?}");
    Ok(())
}

#[rustfmt::skip]
async fn layouts() -> Result<(), Box<dyn Error>> {
    let client = zk_rwlock::SharedLock::connect("127.0.0.1:2181", "/locks/orders").await?.client().clone();
    use zk_rwlock::{Layout, SharedLock};

    let lock = SharedLock::builder(client, "/locks/orders").layout(Layout::Curator).build()?;
    let guard = lock.write().await?;   // `_c_<uuid>-__WRIT__<seq>`: Curator's readers and writers wait for it
    guard.release().await?;
    Ok(())
}

#[rustfmt::skip]
fn decisions() -> Result<(), Box<dyn Error>> {
    use zk_rwlock::ordering::{decide, Decision};

    let children = ["b-W-0000000002", "a-R-0000000001", "c-R-0000000003", "d-W-2147483647"];
    assert_eq!(decide("a-R-0000000001", &children)?, Decision::Granted);
    assert_eq!(
        decide("c-R-0000000003", &children)?,
        Decision::Wait { watch: "b-W-0000000002", deletion_grants: true, release_grants: true },
    );
    assert_eq!(decide("d-W-2147483647", &children)?, Decision::Exhausted);
    Ok(())
}

#[rustfmt::skip]
async fn secured_async() -> Result<(), Box<dyn Error>> {
use zk_rwlock::{connect_client_with, zk, ConnectOptions, SharedLock};

let options = ConnectOptions::new()
    .digest("alice", &std::env::var("ZK_PASSWORD")?)
    .tls_ca_pem(&std::fs::read_to_string("/etc/zk/ca.pem")?)?
    .tls_identity_pem(&std::fs::read_to_string("/etc/zk/client.pem")?, &std::fs::read_to_string("/etc/zk/client-key.pem")?)?;
let client = connect_client_with("zk1:2281,zk2:2281,zk3:2281", &options).await?;
let lock = SharedLock::builder(client, "/locks/orders")
    .acls(&zk::Acls::creator_all())          // only alice may read, revoke or delete her nodes
    .build()?;
let guard = lock.write().await?;
    guard.release().await?;
    Ok(())
}

#[rustfmt::skip]
fn secured_blocking() -> Result<(), Box<dyn Error>> {
use zk_rwlock::{blocking, ConnectOptions};

let options = ConnectOptions::new().sasl_digest_md5("alice", "secret");
let lock = blocking::SharedLock::connect_with_options("zk1:2181", "/locks/orders", &options)?;
let client = blocking::connect("zk1:2181", &options)?;
let same_identity = blocking::SharedLock::with_client(client, "/locks/reports")?;
    drop((lock, same_identity));
    Ok(())
}

async fn serve_as_leader(_term: i64) {}

#[rustfmt::skip]
async fn election() -> Result<(), Box<dyn Error>> {
    let lock = zk_rwlock::SharedLock::connect("127.0.0.1:2181", "/locks/orders").await?;
    let client = lock.client().clone();
    use zk_rwlock::Election;
    let election = Election::new(client.clone(), "/elections/billing", "web01")?;
    let mut leaders = election.observe();                     // every change of leader, in order
    let leadership = election.campaign().await?;              // waits until this candidate leads
    let now = election.leader().await?;                       // Some(Leader { identity, node, term, .. })
    tokio::select! {
        _ = serve_as_leader(leadership.term()) => {}          // the term fences the leader's writes
        _ = leadership.suspended() => {}                      // connection lost: stop before lease_deadline()
    }
    leadership.resign().await?;                               // dropping it resigns too
    leaders.changed().await?;                                 // the next leader, or None
    println!("{now:?}");
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    decisions()?;
    async_api().await?;
    own_client().await?;
    multi_and_revocation().await?;
    election().await?;
    layouts().await?;
    tokio::task::spawn_blocking(|| blocking_api().map_err(|e| e.to_string())).await??;
    // Secured ensembles: these need one at zk1 (see the README).
    if std::env::var_os("ZK_SECURED_EXAMPLE").is_some() {
        secured_async().await?;
        tokio::task::spawn_blocking(|| secured_blocking().map_err(|e| e.to_string())).await??;
    }
    Ok(())
}
