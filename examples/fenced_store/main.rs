//! Fencing end to end: writers take a zk-rwlock write lock and write to a
//! store with their fencing token; the store refuses a write whose token is
//! older than the newest it has seen. That is what stops a holder that was
//! paused (or cut off) past its lease from overwriting the work of the
//! writer granted after it: no check of the guard's state before the write
//! can, since the pause may fall between the check and the write.
//!
//! Run it against a ZooKeeper server (`scripts/dev-server.sh` runs one):
//!
//! ```text
//! cargo run --example fenced_store [-- SERVERS [STORE_DIR]]
//! ```
//!
//! SERVERS defaults to `$ZK_CONNECT`, then `127.0.0.1:2181`; STORE_DIR to a
//! new temporary directory. Two holders take the lock in turn; the first
//! then writes late, as a process resuming from a pause would, and is
//! refused. The store itself is a module of the test kit
//! (`testkit/src/fenced_store.rs`, `zk_rwlock_fixtures::fenced_store`); the
//! demo's workers and its soak test write to it too.

use std::error::Error;

use zk_rwlock::{HoldState, SharedLock};
use zk_rwlock_fixtures::fenced_store::{FencedStore, Outcome};

const LOCK_PATH: &str = "/locks/fenced-store-example";

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let servers = args
        .next()
        .or_else(|| std::env::var("ZK_CONNECT").ok())
        .unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let dir = args.next().map_or_else(
        || std::env::temp_dir().join(format!("fenced-store-{}", std::process::id())),
        std::path::PathBuf::from,
    );
    let store = FencedStore::open(&dir)?;

    // Two holders, each with its own ZooKeeper session.
    let first = SharedLock::connect(&servers, LOCK_PATH).await?;
    let second = SharedLock::connect(&servers, LOCK_PATH).await?;

    let guard = first.write().await?;
    let old_token = guard.fencing_token();
    // Check the lease before acting on the lock: that catches a connection
    // that is gone, but not a pause between this line and the next.
    if guard.state() == HoldState::Held {
        let outcome = store.write(old_token, "first: balance = 100")?;
        println!("first  (token {old_token}): {outcome:?}");
    }
    guard.release().await?;

    let guard = second.write().await?;
    let token = guard.fencing_token();
    let outcome = store.write(token, "second: balance = 70")?;
    println!("second (token {token}): {outcome:?}");
    guard.release().await?;

    // The first holder resumes and writes with the token it had: the store
    // has seen a newer one, so the write is refused.
    let outcome = store.write(old_token, "first: balance = 130")?;
    println!("first, late (token {old_token}): {outcome:?}");
    assert!(matches!(outcome, Outcome::Rejected { .. }));

    println!("\n{}/log:", store.dir().display());
    for entry in store.entries()? {
        println!(
            "  {} token {}: {}",
            if entry.accepted { "accepted" } else { "REJECTED" },
            entry.token,
            entry.record
        );
    }
    Ok(())
}
