//! The client's vocabulary in the core's terms: watch events, session
//! states and the errors that name a session's end translated one to one (what each means is the core's:
//! [`NodeEvent::of`](crate::acquire::NodeEvent::of), [`lease::Link::of`]), the type of a pending watch, and
//! what a watch or the session's state channel gave, asked without waiting.

use std::future::Future;
use std::task::{Context, Poll, Waker};

use crate::acquire::WatchedKind;
use crate::lease;
use crate::wire::Fired;
use crate::zk;

/// A pending watch: its event, once it fires.
pub(super) type WatchFuture = std::pin::Pin<Box<dyn std::future::Future<Output = zk::WatchedEvent> + Send>>;

/// The core's copy of a watch event's kind, one to one.
fn watched_kind(kind: zk::EventType) -> WatchedKind {
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

/// A watch event in the core's terms: its kind and the session's state it carries.
pub(super) fn event_of(event: &zk::WatchedEvent) -> (WatchedKind, lease::SessionState) {
    (watched_kind(event.event_type), session_state(event.session_state))
}

/// What a watch gave, if it fired, in the core's terms: `cx` is woken when
/// it fires otherwise.
pub(super) fn poll_watch(watch: &mut WatchFuture, cx: &mut Context<'_>) -> Fired {
    match watch.as_mut().poll(cx) {
        Poll::Ready(event) => Some(event_of(&event)),
        Poll::Pending => None,
    }
}

/// What a watch gave, if it fired, without waiting for it.
pub(super) fn fired(watch: &mut WatchFuture) -> Fired {
    poll_watch(watch, &mut Context::from_waker(Waker::noop()))
}

/// The next session state change already seen, without waiting.
pub(super) fn state_now(states: &mut zk::StateWatcher) -> Option<zk::SessionState> {
    let mut cx = Context::from_waker(Waker::noop());
    match std::pin::pin!(states.changed()).poll(&mut cx) {
        Poll::Ready(state) => Some(state),
        Poll::Pending => None,
    }
}
