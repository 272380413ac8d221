//! The client's vocabulary in the core's terms: watch events, session
//! states and the errors that name a session's end translated one to one (what each means is the core's:
//! [`NodeEvent::of`](crate::acquire::NodeEvent::of), [`lease::Link::of`]), and the type of a pending watch.

use crate::acquire::WatchedKind;
use crate::lease;
use crate::zk;

/// A pending watch: its event, once it fires.
pub(super) type WatchFuture = std::pin::Pin<Box<dyn std::future::Future<Output = zk::WatchedEvent> + Send>>;

/// The core's copy of a watch event's kind, one to one.
pub(super) fn watched_kind(kind: zk::EventType) -> WatchedKind {
    match kind {
        zk::EventType::Session => WatchedKind::Session,
        zk::EventType::NodeCreated => WatchedKind::Created,
        zk::EventType::NodeDeleted => WatchedKind::Deleted,
        zk::EventType::NodeDataChanged => WatchedKind::DataChanged,
        zk::EventType::NodeChildrenChanged => WatchedKind::ChildrenChanged,
    }
}

/// The core's copy of the client's session state, one to one (what each
/// means is [`lease::Link::of`]).
pub(crate) fn session_state(state: zk::SessionState) -> lease::SessionState {
    match state {
        zk::SessionState::SyncConnected => lease::SessionState::Connected,
        zk::SessionState::ConnectedReadOnly => lease::SessionState::ConnectedReadOnly,
        zk::SessionState::Disconnected => lease::SessionState::Disconnected,
        zk::SessionState::Expired => lease::SessionState::Expired,
        zk::SessionState::Closed => lease::SessionState::Closed,
        zk::SessionState::AuthFailed => lease::SessionState::AuthFailed,
    }
}

/// The session's end a client's error names, in the core's terms (what it
/// means is the core's: [`crate::wire::Keeping::answered`]); `None` for an
/// error that names none.
pub(super) fn session_ended(error: &zk::Error) -> Option<lease::SessionState> {
    match error {
        zk::Error::SessionExpired => Some(lease::SessionState::Expired),
        zk::Error::ClientClosed => Some(lease::SessionState::Closed),
        zk::Error::AuthFailed => Some(lease::SessionState::AuthFailed),
        _ => None,
    }
}
