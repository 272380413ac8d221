//! What an exchange told the user ([`Notice`], decided by the core's
//! [`crate::wire::Exchange::notices`]), written to the log.

use std::collections::HashSet;
use std::sync::Mutex;

use tracing::{debug, warn};

use super::Inner;
use crate::contender::Warning;
use crate::ordering;
use crate::wire::Notice;

impl Inner {
    /// True the first time this lock is asked about `key`: what is logged
    /// under it is logged once.
    fn first_time(&self, key: &str) -> bool {
        self.warned
            .lock()
            .is_ok_and(|mut warned| warned.get_or_insert_with(Box::default).insert(key.to_owned()))
    }

    /// Logs what an exchange told ([`Notice`], [`log_notice`]), a name once per lock.
    pub(super) fn notice(&self, notice: Notice) {
        log_notice(&self.path, notice, |name| self.first_time(name));
    }

    /// Logs, once per lock, that a watched contender, `path`, cannot be
    /// read by this identity: the server would not deliver its watch
    /// events, so it is polled. (Once per lock, not per node: every acquire
    /// waits on a new node, and the set of names warned about must not
    /// grow without end.)
    pub(super) fn warn_unreadable(&self, path: &str) {
        if self.first_time("\0unreadable") {
            warn!(
                node = %path,
                "cannot read the contender node to wait on (its ACL): polling it instead of watching; \
                 give every contender READ on contender nodes (e.g. world:anyone:r) for prompt hand-offs"
            );
        }
    }
}

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
