//! The observer task: who leads, followed through watches.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tracing::{debug, warn};

use super::look::look;
use super::Leader;
use crate::backoff::Backoff;
use crate::error::{ends_session, is_retryable};
use crate::zk;

/// The observer task (see "Observers" in the [module documentation](super)).
pub(super) async fn observe(
    client: zk::Client,
    dir: String,
    sender: Arc<watch::Sender<Option<Leader>>>,
    slot: Arc<Mutex<Weak<watch::Sender<Option<Leader>>>>>,
) {
    let publish = |leader: Option<Leader>| {
        sender.send_if_modified(|now| {
            if *now == leader {
                return false;
            }
            debug!(election = %dir, ?leader, "leader changed");
            *now = leader;
            true
        });
    };
    let stop = |why: &str| {
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = Weak::new();
        debug!(election = %dir, why, "observer stopped");
    };
    let mut states = client.state_watcher();
    let mut pause = Duration::ZERO;
    loop {
        // Stop when no one listens (checked under the slot's lock, so that
        // `observe` never subscribes to a task that is about to stop).
        if sender.receiver_count() == 0 {
            let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
            if sender.receiver_count() == 0 {
                *slot = Weak::new();
                debug!(election = %dir, "observer stopped: no receiver left");
                return;
            }
        }
        // Consumed before the look: a change during it means a new look.
        let state = states.state();
        if state.is_terminated() {
            publish(None);
            return stop("the session ended");
        }
        if state != zk::SessionState::SyncConnected {
            // Disconnected: look again once reconnected.
            tokio::select! {
                _ = states.changed() => {}
                () = sender.closed() => {}
            }
            continue;
        }
        let changed = match look(&client, &dir, true, false).await.map_err(|(e, _)| e) {
            Ok(look) => {
                pause = Duration::ZERO;
                publish(look.leader);
                look.changed
            }
            Err(e) if ends_session(&e) => {
                publish(None);
                return stop("the session ended");
            }
            Err(e) => {
                if !is_retryable(&e) {
                    // Who leads is unknown until a look succeeds (the head
                    // cannot be read, say): not the last leader seen.
                    publish(None);
                    warn!(election = %dir, error = %e, "cannot follow the election; trying again");
                }
                pause = Backoff::OBSERVER.next(pause);
                None
            }
        };
        let fired = async {
            match changed {
                Some(changed) => {
                    changed.changed().await;
                }
                None => std::future::pending().await,
            }
        };
        let retry = async {
            if pause.is_zero() {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(pause).await;
        };
        tokio::select! {
            () = fired => {}
            // A reconnection, or the session's end: see the loop's top.
            _ = states.changed() => {}
            () = retry => {}
            () = sender.closed() => {}
        }
    }
}
