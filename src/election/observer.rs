//! The observer task: who leads, followed through watches.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::watch;
use tracing::{debug, warn};

use super::look::look;
use super::rules::{self, AfterLook, BeforeLook};
use super::Leader;
use crate::lock::{session_state, wire_error};
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
    let mut observing = rules::Observing::new();
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
        match observing.before_look(session_state(states.state())) {
            BeforeLook::Look => {}
            BeforeLook::Stop => {
                publish(None);
                return stop("the session ended");
            }
            BeforeLook::AwaitState => {
                tokio::select! {
                    _ = states.changed() => {}
                    () = sender.closed() => {}
                }
                continue;
            }
        }
        let looked = look(&client, &dir, true, false).await;
        let error = looked.as_ref().err().map(|(e, _)| e.clone());
        let (changed, pause) = match observing.looked(looked.map_err(|(e, _)| wire_error(&e))) {
            AfterLook::Publish(found) => {
                publish(found.leader);
                (found.changed, None)
            }
            AfterLook::Retry(pause) => (None, Some(pause)),
            AfterLook::Unknown(pause) => {
                publish(None);
                if let Some(e) = error {
                    warn!(election = %dir, error = %e, "cannot follow the election; trying again");
                }
                (None, Some(pause))
            }
            AfterLook::Stop => {
                publish(None);
                return stop("the session ended");
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
            match pause {
                Some(pause) => tokio::time::sleep(pause).await,
                None => std::future::pending::<()>().await,
            }
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
