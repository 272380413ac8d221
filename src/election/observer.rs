//! The observer task: who leads, followed through watches.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tracing::{debug, warn};

use super::{head_read, rules, Leader};
use crate::backoff::Backoff;
use crate::error::{ends_session, is_retryable};
use crate::lock::child_path;
use crate::zk;

/// What one look at the directory found: the leader, and the watch that
/// says when to look again.
struct Look {
    leader: Option<Leader>,
    changed: Option<zk::OneshotWatcher>,
}

/// One look: list the directory, read and watch its head (or watch the
/// children of an empty directory, or the directory's creation).
async fn look(client: &zk::Client, dir: &str) -> Result<Look, zk::Error> {
    loop {
        // A plain listing first: the children's watch is set only while
        // the directory holds no contender.
        let children = match client.list_children(dir).await {
            Ok(children) if rules::watched(&children).is_some() => children,
            Ok(_) => match client.list_and_watch_children(dir).await {
                Ok((children, changed)) if rules::watched(&children).is_none() => {
                    return Ok(Look {
                        leader: None,
                        changed: Some(changed),
                    })
                }
                // A candidate came meanwhile: the head's watch will do,
                // and dropping this one removes it.
                Ok((children, _)) => children,
                Err(zk::Error::NoNode) => continue,
                Err(e) => return Err(e),
            },
            Err(zk::Error::NoNode) => match client.check_and_watch_stat(dir).await {
                Ok((None, changed)) => {
                    return Ok(Look {
                        leader: None,
                        changed: Some(changed),
                    })
                }
                // Made meanwhile: list again.
                Ok((Some(_), _)) => continue,
                Err(e) => return Err(e),
            },
            Err(e) => return Err(e),
        };
        let Some(head) = rules::watched(&children) else {
            continue;
        };
        let path = child_path(dir, head);
        match client.get_and_watch_data(&path).await {
            Ok((data, stat, changed)) => {
                // A read of the head always answers (`rules::who_leads`):
                // no second read.
                let leader = rules::who_leads(&children, Some(head_read(head, &data, &stat)))
                    .leader()
                    .map(|leader| Leader::named(dir, leader));
                return Ok(Look {
                    leader,
                    changed: Some(changed),
                });
            }
            // The head left between the listing and the read.
            Err(zk::Error::NoNode) => continue,
            Err(e) => return Err(e),
        }
    }
}

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
        let changed = match look(&client, &dir).await {
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
