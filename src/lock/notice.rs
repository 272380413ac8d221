//! What an exchange told the user ([`Notice`], decided by the core's
//! [`crate::wire::Exchange::notices`]), written to the log.

use std::collections::HashSet;
use std::sync::Mutex;

use tracing::{debug, warn};

use crate::contender::Warning;
use crate::ordering;
use crate::wire::Notice;

/// Logs what an exchange in the directory `dir` told ([`Notice`]): the
/// names `first_time` says are new (each child or node is logged once per
/// lock), and the counter near its limit once per directory in this
/// process.
pub(super) fn log_notice(dir: &str, notice: Notice, first_time: impl Fn(&str) -> bool) {
    match notice {
        Notice::CounterNearLimit { seq } => {
            static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
            let Ok(mut warned) = WARNED.lock() else {
                return;
            };
            if warned.get_or_insert_with(HashSet::new).insert(dir.to_owned()) {
                warn!(
                    lock = %dir,
                    seq,
                    limit = ordering::SEQUENCE_LIMIT,
                    "the lock directory's sequence counter is near its limit: the directory is deleted and recreated as soon as it is idle"
                );
            }
        }
        Notice::FoundOwn { name } => {
            debug!(node = %name, "found own node after connection loss during create")
        }
        Notice::DirectoryData { bytes } => warn!(
            lock = %dir,
            bytes,
            "the lock directory holds data that is not a release record: not using it as a lock"
        ),
        Notice::Recycled => {
            warn!(lock = %dir, "recycled the idle lock directory: its sequence counter was near its limit and starts from 0 again")
        }
        Notice::Foreign { names } => {
            for child in names.iter().filter(|name| first_time(name)) {
                warn!(
                    lock = %dir,
                    child = %child,
                    "ignoring a child that is not a contender node in any known layout (native \
                     `<host>-<R|W>-<seq>`, Curator `_c_<uuid>-__READ__|__WRIT__|lock-<seq>`, \
                     kazoo `<hex>__rlock__|__lock__<seq>`)"
                );
            }
        }
        Notice::Persistent { path } => {
            if first_time(&path) {
                warn!(node = %path, "a contender node in the queue is not ephemeral: it blocks the lock until someone deletes it");
            }
        }
    }
}

/// Logs what a failed acquire warns of ([`Warning`]) as it withdraws its
/// node, `node` (a full path). (Under this module's target: the command
/// line leaves these out, as it reports the failure itself.)
pub(super) fn log_warning(node: &str, warning: Warning) {
    match warning {
        Warning::CounterUsedUp => {
            warn!(node = %node, "the lock directory's sequence counter is used up: withdrawing")
        }
        Warning::ListingTooLarge(refused) => {
            warn!(node = %node, ?refused, "the lock directory's listing is over the limit: withdrawing")
        }
    }
}
