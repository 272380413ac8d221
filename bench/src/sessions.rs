//! Sessions: connecting and closing the benchmark clients' sessions, and
//! removing the run's directories.

use std::time::Duration;

use zk_rwlock::zk;

use crate::{Bench, CONNECT_BATCH};
use zk_rwlock_cli::{connection, exit, Failure};

/// Connects `n` sessions (in batches, concurrently), in order.
pub(crate) async fn connect_all(b: &Bench, n: usize) -> Result<Vec<zk::Client>, Failure> {
    let mut clients = Vec::with_capacity(n);
    while clients.len() < n {
        let batch = (n - clients.len()).min(CONNECT_BATCH);
        let connecting: Vec<_> = (0..batch)
            .map(|_| {
                let (servers, options) = (b.servers.clone(), b.connect.clone());
                tokio::spawn(async move { b_connect(&servers, &options).await })
            })
            .collect();
        for task in connecting {
            let client = task
                .await
                .map_err(|e| Failure::new(exit::SOFTWARE, format!("connecting failed: {e}")))??;
            clients.push(client);
        }
    }
    Ok(clients)
}

/// Connects one session with the run's options.
async fn b_connect(servers: &str, options: &zk_rwlock::ConnectOptions) -> Result<zk::Client, Failure> {
    zk_rwlock::connect_client_with(servers, options)
        .await
        .map_err(Failure::from)
}

/// How long [`close_all`] waits for the server to confirm the closes.
const CLOSE_WITHIN: Duration = Duration::from_secs(5);

/// Closes sessions and waits a little for the server to confirm, so their
/// nodes are gone. A session closes when the last clone of its client is
/// dropped: this first lets go of the locks and semaphores `b.wakes`
/// tracks (take the wake-up counts before), and every other clone of the
/// clients (lock handles, tasks) must be gone already, or the wait runs
/// into [`CLOSE_WITHIN`] (warned on stderr) and the process exits that
/// much later.
pub(crate) async fn close_all(b: &Bench, clients: Vec<zk::Client>) {
    b.wakes.clear();
    let states: Vec<_> = clients.iter().map(|c| c.state_watcher()).collect();
    drop(clients);
    let ends: Vec<_> = states
        .into_iter()
        .map(|s| tokio::spawn(connection::await_session_end(s, CLOSE_WITHIN)))
        .collect();
    let mut open = 0;
    for end in ends {
        if !matches!(end.await, Ok(true)) {
            open += 1;
        }
    }
    if open > 0 {
        tracing::warn!(
            "{open} session(s) not seen closed within {CLOSE_WITHIN:?} (a clone of the client still held, \
             or disconnected); the server removes their nodes when they expire"
        );
    }
}

/// Removes the lock directories this run named itself (best effort).
pub(crate) async fn remove_dirs(b: &Bench) {
    let Ok(client) = b_connect(&b.servers, &b.connect).await else {
        return;
    };
    // The entity workloads' directories (containers the server would
    // remove later), then the run's own.
    if let Ok(children) = client.list_children(&b.path).await {
        for child in children {
            let _ = client.delete(&format!("{}/{child}", b.path), None).await;
        }
    }
    for dir in [b.warmup_path(), b.path.clone()] {
        let _ = client.delete(&dir, None).await;
    }
    // The shared parent, if this was the last run using it.
    if let Some((parent, _)) = b.path.rsplit_once('/') {
        if !parent.is_empty() {
            let _ = client.delete(parent, None).await;
        }
    }
    close_all(b, vec![client]).await;
}
