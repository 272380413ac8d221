mod connection;
mod depot;
mod event;
mod lease;
mod request;
mod types;
mod watch;
mod xid;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use asyncs::{select, sync};
use futures::channel::mpsc;
use futures::{AsyncWriteExt, StreamExt};
use ignore_result::Ignore;
use tracing::field::display;
use tracing::{debug, info, instrument, warn, Span};

use self::connection::{AsyncReadToBuf, Connection, Connector};
pub use self::depot::Depot;
use self::event::WatcherEvent;
pub use self::request::{
    ConnectOperation,
    MarshalledRequest,
    OpStat,
    Operation,
    Request,
    SessionOperation,
    SetWatchesOperation,
    StateReceiver,
};
pub use self::lease::{LeaseCell, SessionLease};
use self::types::WatchMode;
pub use self::types::{EventType, SessionId, SessionInfo, SessionState, WatchedEvent};
use self::watch::WatchManager;
pub use self::watch::{OneshotReceiver, PersistentReceiver, WatchReceiver};
use crate::deadline::Deadline;
use crate::endpoint::IterableEndpoints;
use crate::error::Error;
use crate::proto::{ConnectRequest, ConnectResponse, ErrorCode, OpCode, PredefinedXid, ReplyHeader};
use crate::record;
use crate::rt;
#[cfg(feature = "sasl-digest-md5")]
use crate::sasl::{SaslInitiator, SaslOptions, SaslSession};
#[cfg(feature = "tls")]
use crate::tls::TlsOptions;

pub const PASSWORD_LEN: usize = 16;
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(6);

#[derive(Default)]
pub struct Builder {
    #[cfg(feature = "tls")]
    tls: Option<TlsOptions>,
    #[cfg(feature = "sasl-digest-md5")]
    sasl: Option<SaslOptions>,
    authes: Vec<MarshalledRequest>,
    readonly: bool,
    detached: bool,
    session: Option<SessionInfo>,
    session_timeout: Duration,
    connection_timeout: Duration,
}

impl Builder {
    #[cfg(feature = "tls")]
    pub fn with_tls(self, tls: Option<TlsOptions>) -> Self {
        Self { tls, ..self }
    }

    #[cfg(feature = "sasl-digest-md5")]
    pub fn with_sasl(self, sasl: Option<SaslOptions>) -> Self {
        Self { sasl, ..self }
    }

    pub fn with_authes(self, authes: Vec<MarshalledRequest>) -> Self {
        Self { authes, ..self }
    }

    pub fn with_readonly(self, readonly: bool) -> Self {
        Self { readonly, ..self }
    }

    pub fn with_detached(self, detached: bool) -> Self {
        Self { detached, ..self }
    }

    pub fn with_session(self, session: Option<SessionInfo>) -> Self {
        Self { session, ..self }
    }

    pub fn with_session_timeout(self, session_timeout: Duration) -> Self {
        Self { session_timeout, ..self }
    }

    pub fn with_connection_timeout(self, connection_timeout: Duration) -> Self {
        Self { connection_timeout, ..self }
    }

    pub fn build(self, requester: Weak<mpsc::UnboundedSender<Request>>) -> Result<Session, Error> {
        let session = match self.session {
            Some(session) => {
                if session.is_readonly() {
                    return Err(Error::with_message(format!(
                        "can't reestablish readonly and hence local session {}",
                        session.id()
                    )));
                }
                Span::current().record("session", display(session.id()));
                session
            },
            None => SessionInfo::new(SessionId(0), vec![0; PASSWORD_LEN]),
        };
        if self.session_timeout < Duration::ZERO {
            return Err(Error::BadArguments(&"session timeout must not be negative"));
        } else if self.connection_timeout < Duration::ZERO {
            return Err(Error::BadArguments(&"connection timeout must not be negative"));
        }
        #[cfg(feature = "tls")]
        let connector = match self.tls {
            Some(options) => Connector::with_tls(options.into_client()?),
            None => Connector::new(),
        };
        #[cfg(not(feature = "tls"))]
        let connector = Connector::new();
        let (state_sender, state_receiver) = sync::watch::channel(SessionState::Disconnected);
        let now = Instant::now();
        let watch_manager = WatchManager::new(requester, state_receiver);
        let mut session = Session {
            readonly: self.readonly,
            detached: self.detached,

            configured_connection_timeout: self.connection_timeout,

            last_zxid: session.last_zxid,
            last_recv: now,
            last_send: now,
            last_ping: None,
            connect_sent: now,
            lease: Arc::new(LeaseCell::new()),
            tick_timeout: Duration::ZERO,
            shortest_timeout: Duration::ZERO,
            ping_timeout: Duration::ZERO,
            session_expired_timeout: Duration::ZERO,
            connector,
            #[cfg(feature = "sasl-digest-md5")]
            sasl_options: self.sasl,
            #[cfg(feature = "sasl-digest-md5")]
            sasl_session: None,

            session,
            session_timeout: self.session_timeout,
            session_state: SessionState::Disconnected,

            authes: self.authes,
            connecting_host: String::new(),
            closed_before_answer: None,
            state_sender,
            watch_manager,
        };
        let timeout = if self.session_timeout.is_zero() { DEFAULT_SESSION_TIMEOUT } else { self.session_timeout };
        session.reset_timeout(timeout);
        Ok(session)
    }
}

/// Spawns work on another runtime (patch 20): where a session goes on when the runtime that
/// serves it drops it.
pub type Fallback = Arc<dyn Fn(Pin<Box<dyn Future<Output = ()> + Send>>) + Send + Sync>;

/// A session as it is served (patch 20): what it needs to go on, owned here and lent to
/// [`Session::serve`]. If the runtime that runs it drops it before the session ends (the
/// runtime shuts down), it goes on on the fallback runtime, if it has one: a plain connection is
/// taken out of the dropping runtime's I/O driver (which tokio shuts down only after dropping its
/// tasks) and served on as it is, with no request lost or sent again; a TLS connection is lost
/// there, and the session connects again from the fallback runtime, as after any lost
/// connection: the same session, its watches set again. Every `Client` of the session, its
/// watchers and its lease stay valid: they hold channels to this state, not to a runtime.
/// Without a fallback, or while the thread unwinds from a panic, the session ends with the task,
/// as upstream's does.
pub struct Serving {
    parts: Option<Parts>,
    fallback: Option<Fallback>,
}

/// What a session needs to be served (patch 20).
struct Parts {
    session: Session,
    conn: Option<Connection>,
    resumed: bool,
    endpoints: IterableEndpoints,
    buf: Vec<u8>,
    depot: Depot,
    requester: mpsc::UnboundedReceiver<Request>,
}

impl Serving {
    /// The session that `start` connected with `conn`, to be served with [`Self::serve`].
    pub fn new(
        session: Session,
        conn: Connection,
        mut endpoints: IterableEndpoints,
        buf: Vec<u8>,
        depot: Depot,
        requester: mpsc::UnboundedReceiver<Request>,
        fallback: Option<Fallback>,
    ) -> Self {
        endpoints.cycle();
        endpoints.reset();
        let parts = Parts { session, conn: Some(conn), resumed: false, endpoints, buf, depot, requester };
        Self { parts: Some(parts), fallback }
    }

    /// Serves the session until it ends.
    pub async fn serve(mut self) {
        if let Some(Parts { session, conn, resumed, endpoints, buf, depot, requester }) = self.parts.as_mut() {
            session.serve(conn, *resumed, endpoints, buf, depot, requester).await;
        }
        // Ended: nothing to go on with.
        self.parts = None;
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let (Some(mut parts), Some(fallback)) = (self.parts.take(), self.fallback.take()) else {
            return;
        };
        if std::thread::panicking() {
            return;
        }
        // A connection being served: the socket goes along if it is plain, otherwise it is lost.
        let socket = match parts.conn.take().map(Connection::into_std) {
            None => None,
            Some(Ok(Ok(socket))) => Some(socket),
            Some(Ok(Err(err))) => {
                parts.session.lose_connection(&Error::other(err), &mut parts.depot);
                None
            },
            Some(Err(_tls)) => {
                parts.session.lose_connection(&Error::ConnectionLoss, &mut parts.depot);
                None
            },
        };
        info!(session = %parts.session.session.id, moved = socket.is_some(), "the runtime serving the session dropped it: serving it on another");
        fallback(Box::pin(async move {
            if let Some(socket) = socket {
                match Connection::from_std(socket) {
                    Ok(conn) => {
                        parts.conn = Some(conn);
                        parts.resumed = true;
                    },
                    Err(err) => parts.session.lose_connection(&Error::other(err), &mut parts.depot),
                }
            }
            // No fallback from the fallback: it is the last place.
            Serving { parts: Some(parts), fallback: None }.serve().await;
        }));
    }
}

/// How many requests the session takes from its channel at once, at most (zk-rwlock patch 19).
const REQUEST_BATCH: usize = 64;

pub struct Session {
    readonly: bool,
    detached: bool,

    connector: Connector,

    configured_connection_timeout: Duration,

    last_zxid: i64,
    last_recv: Instant,
    last_send: Instant,
    last_ping: Option<Instant>,
    /// When the current connect request was queued (patch 3).
    connect_sent: Instant,
    /// What the server has confirmed of this session (patch 3).
    pub lease: Arc<LeaseCell>,
    tick_timeout: Duration,
    /// The smallest session timeout told (patch 14), for the reconnect back-off.
    shortest_timeout: Duration,
    ping_timeout: Duration,
    session_expired_timeout: Duration,

    pub session: SessionInfo,
    session_state: SessionState,
    pub session_timeout: Duration,

    #[cfg(feature = "sasl-digest-md5")]
    sasl_options: Option<SaslOptions>,
    #[cfg(feature = "sasl-digest-md5")]
    sasl_session: Option<SaslSession>,

    pub authes: Vec<MarshalledRequest>,
    /// The host of the connection being established, for SASL (patch 5).
    connecting_host: String,
    /// The last server that accepted the TCP connection of an attempt of `start` and closed
    /// it before answering the connect request (patch 13).
    closed_before_answer: Option<String>,
    state_sender: sync::watch::Sender<SessionState>,

    watch_manager: WatchManager,
}

impl Session {
    pub fn builder() -> Builder {
        Builder::default()
    }

    fn is_readonly_allowed(&self) -> bool {
        // Session downgrade is not allowed as partitioned session will expired finally by quorum.
        self.readonly && self.session.readonly
    }

    async fn close_requester(requester: &mut mpsc::UnboundedReceiver<Request>, err: &Error) {
        requester.close();
        while let Some(request) = requester.next().await {
            let responser = request.into_responser();
            responser.send(Err(err.clone()));
        }
    }

    pub fn subscribe_state(&self) -> sync::watch::Receiver<SessionState> {
        self.state_sender.subscribe()
    }

    /// Serves the session until it ends: `conn`, if any, first, then connection after connection
    /// while the session lives; fails the requests left when it ends. `resumed`: the same
    /// connection, served on from another runtime (patch 20), whose closing request, if the
    /// client's channel ended, is already queued.
    #[instrument(name = "serve", skip_all, fields(session = display(self.session.id)))]
    async fn serve(
        &mut self,
        conn: &mut Option<Connection>,
        resumed: bool,
        endpoints: &mut IterableEndpoints,
        buf: &mut Vec<u8>,
        depot: &mut Depot,
        requester: &mut mpsc::UnboundedReceiver<Request>,
    ) {
        let mut halted = resumed && futures::stream::FusedStream::is_terminated(requester);
        while !self.session_state.is_terminated() {
            if conn.is_none() {
                match self.start(endpoints, buf, depot).await {
                    Err(err) => {
                        warn!("fail to connect to cluster {:?} due to {}", endpoints.endpoints(), err);
                        self.resolve_start_error(&err);
                        break;
                    },
                    Ok(started) => *conn = Some(started),
                }
                endpoints.reset();
            }
            if let Some(serving) = conn.as_mut() {
                let err = self.serve_session(endpoints, serving, buf, depot, requester, halted).await.unwrap_err();
                *conn = None;
                self.lose_connection(&err, depot);
            }
            halted = false;
        }
        let err = self.state_error();
        Self::close_requester(requester, &err).await;
        depot.terminate(err);
    }

    /// The connection is gone with `err`: the state it leads to, and the requests written or
    /// queued on it fail.
    fn lose_connection(&mut self, err: &Error, depot: &mut Depot) {
        self.resolve_serve_error(err);
        info!("enter state {} due to {}", self.session_state, err);
        depot.error(err);
    }

    fn state_error(&self) -> Error {
        self.session_state.to_error()
    }

    fn change_state(&mut self, state: SessionState) {
        if state == self.session_state || self.session_state.is_terminated() {
            return;
        }
        self.session_state = state;
        self.watch_manager.dispatch_session_state(state);
        self.state_sender.send(state).ignore();
    }

    fn resolve_start_error(&mut self, err: &Error) {
        if *err == Error::Timeout && self.session.id.0 != 0 {
            // The client's own expiry: no server said the session expired (patch 15).
            self.lease.give_up();
        }
        let state = match err {
            Error::SessionExpired | Error::SessionMoved | Error::Timeout => SessionState::Expired,
            Error::AuthFailed => SessionState::AuthFailed,
            _ => SessionState::Closed,
        };
        self.change_state(state);
    }

    fn resolve_serve_error(&mut self, err: &Error) {
        let state = match err {
            Error::SessionExpired | Error::SessionMoved => SessionState::Expired,
            Error::AuthFailed => SessionState::AuthFailed,
            Error::ClientClosed => SessionState::Closed,
            _ => SessionState::Disconnected,
        };
        self.change_state(state);
    }

    fn handle_notification(&mut self, zxid: i64, mut body: &[u8], depot: &mut Depot) -> Result<(), Error> {
        let event = record::unmarshal_entity::<WatcherEvent>(&"watch notification", &mut body)?;
        self.watch_manager.dispatch_server_event(event.with_zxid(zxid), depot);
        Ok(())
    }

    fn handle_session_failure(&mut self, operation: SessionOperation, err: Error, depot: &mut Depot) {
        let SessionOperation { responser, request, .. } = operation;
        let info = request.get_operation_info();
        debug!("unknown operation failure: {:?}, {:?}", info, err);
        match info {
            (op_code, OpStat::Watch { path, mode }) if op_code != OpCode::RemoveWatches => depot.fail_watch(path, mode),
            _ => {},
        }
        responser.send(Err(err));
    }

    fn handle_session_watcher(
        &mut self,
        request: &MarshalledRequest,
        error_code: ErrorCode,
        depot: &mut Depot,
    ) -> (OpCode, WatchReceiver) {
        let info = request.get_operation_info();
        debug!("operation get reply: {:?}, {:?}", info, error_code);
        let (op_code, path, mode) = match info {
            (op_code, OpStat::Watch { path, mode }) if op_code != OpCode::RemoveWatches => (op_code, path, mode),
            (op_code, _) => return (op_code, WatchReceiver::None),
        };
        let watcher = self.watch_manager.create_watcher(path, mode, request.get_code(), error_code);
        if watcher.is_none() {
            depot.fail_watch(path, mode);
        } else {
            depot.succeed_watch(path, mode);
        }
        (op_code, watcher)
    }

    fn handle_session_reply(
        &mut self,
        operation: SessionOperation,
        rc: i32,
        #[allow(unused_mut)] mut body: &[u8],
        #[allow(unused_mut)] depot: &mut Depot,
    ) -> Result<(), Error> {
        let error_code = match ErrorCode::try_from(rc) {
            Ok(error_code) => error_code,
            Err(err) => {
                self.handle_session_failure(operation, Error::from(err), depot);
                return Ok(());
            },
        };
        let SessionOperation { responser, request, .. } = operation;
        let (op_code, watcher) = self.handle_session_watcher(&request, error_code, depot);
        if error_code == ErrorCode::Ok || (op_code == OpCode::Exists && error_code == ErrorCode::NoNode) {
            if op_code == OpCode::Auth {
                if responser.send_empty() {
                    self.authes.push(request);
                }
                return Ok(());
            }
            #[cfg(feature = "sasl-digest-md5")]
            if op_code == OpCode::Sasl {
                let Some(sasl) = self.sasl_session.as_mut() else {
                    return Err(Error::UnexpectedError("got sasl response while no client sasl session".to_string()));
                };
                match record::deserialize::<Option<&[u8]>>(&mut body)? {
                    None => depot.complete_sasl(),
                    Some(challenge) => match sasl.step(challenge)? {
                        None => depot.complete_sasl(),
                        Some(response) => depot.push_sasl(response),
                    },
                }
                return Ok(());
            }
            let mut buf = request.0;
            buf.clear();
            buf.extend_from_slice(body);
            responser.send(Ok((buf, watcher)));
        } else {
            assert!(watcher.is_none());
            responser.send(Err(Error::from(error_code)));
        }
        Ok(())
    }

    fn handle_reply(&mut self, header: ReplyHeader, body: &[u8], depot: &mut Depot) -> Result<(), Error> {
        if header.err == ErrorCode::SessionExpired as i32 {
            return Err(Error::SessionExpired);
        } else if header.err == ErrorCode::AuthFailed as i32
            || header.err == ErrorCode::SessionClosedRequireSaslAuth as i32
        {
            return Err(Error::AuthFailed);
        }
        if header.xid == PredefinedXid::Notification as i32 {
            self.handle_notification(header.zxid, body, depot)?;
            return Ok(());
        } else if header.xid == PredefinedXid::Ping as i32 {
            if let Some(sent) = depot.pop_ping()? {
                self.lease.answered(sent);
            }
            if let Some(last_ping) = self.last_ping.take() {
                let elapsed = Instant::now() - last_ping;
                debug!("got ping response after {}ms", elapsed.as_millis());
            }
            return Ok(());
        }
        let operation = depot.pop_request(header.xid, header.err)?;
        // Only a reply that answers a request counts as seen (zk-rwlock patch 21): a refused one
        // is garbage (a frame read from the middle of another), and its zxid, once sent as the
        // connect request's last zxid seen, would make every server refuse the session.
        self.last_zxid = self.last_zxid.max(header.zxid);
        // The server renews the session on every request it submits, which
        // is every one but `auth` and `sasl` (patch 3).
        if let (Some(sent), code) = (operation.sent, operation.request.get_code()) {
            if code != OpCode::Auth && code != OpCode::Sasl {
                self.lease.answered(sent);
            }
        }
        self.handle_session_reply(operation, header.err, body, depot)
    }

    fn calc_tick_timeout(&self, session_timeout: Duration) -> Duration {
        let connection_timeout = self.configured_connection_timeout;
        let tick_timeout = if connection_timeout.is_zero() || connection_timeout > session_timeout * 3 / 5 {
            session_timeout / 20
        } else {
            connection_timeout / 8
        };
        tick_timeout.max(Duration::from_millis(1))
    }

    /// Resets connection and session related timeout values.
    ///
    /// Set ping timeout to `3/8` of connection timeout to fully cover one roundtrip. See also
    /// [PredefinedXid::Ping].
    ///
    /// Set connection timeout to `2/5` of session timeout for at least two tries after connection
    /// loss if there is no configured connection timeout.
    ///
    /// Set client side session expired timeout to `7/5` of negotiated session timeout so client
    /// can expire session on its behalf.
    ///
    /// Numerators are chose deliberately so that resulting timeout values are sensible to mental
    /// model and friendly to eyeballs(`tick` is likely to be a natural number of milliseconds) in
    /// best effort.
    ///
    /// See also [ZOOKEEPER-1751][] and [ZOOKEEPER-4508][].
    ///
    /// [ZOOKEEPER-1751]: https://issues.apache.org/jira/browse/ZOOKEEPER-1751
    /// [ZOOKEEPER-4508]: https://issues.apache.org/jira/browse/ZOOKEEPER-4508
    fn reset_timeout(&mut self, session_timeout: Duration) {
        self.reset_timeouts(session_timeout, session_timeout);
    }

    /// As [Session::reset_timeout], with the tick, the pings and the connection timeout
    /// derived from `lease_timeout`, the smallest session timeout this session was told,
    /// and the client side session expiration from `negotiated`, the latest (zk-rwlock
    /// patch 14). The lease (see `lease.rs`) runs on the smallest, so the pings must renew
    /// it as often as that one asks, and a dead connection must be noticed within it.
    fn reset_timeouts(&mut self, negotiated: Duration, lease_timeout: Duration) {
        let shortest = lease_timeout.min(negotiated);
        let tick = self.calc_tick_timeout(shortest);
        self.tick_timeout = tick;
        self.shortest_timeout = shortest;
        self.ping_timeout = Duration::from_secs(10).min(3 * tick);
        self.connector.set_timeout(8 * tick);
        self.session_timeout = negotiated.max(self.connector.timeout());
        self.session_expired_timeout = self.session_timeout * 7 / 5;
    }

    /// Caps backoff between connection attempts to `1/10` of session timeout and at most one
    /// second, so that a server that comes back before session timeout is reached in time.
    /// Exponential backoff without cap sleeps past client side session expiration after a few
    /// seconds of outage. Java client sleeps up to one second between attempts. The session
    /// timeout is the smallest one told (patch 14): a server may expire the session on it.
    fn max_reconnect_backoff(&self) -> Duration {
        Duration::from_secs(1).min(self.shortest_timeout / 10)
    }

    fn complete_connect(&mut self) {
        let state = if self.session.readonly { SessionState::ConnectedReadOnly } else { SessionState::SyncConnected };
        self.change_state(state);
    }

    fn handle_connect_response(&mut self, mut body: &[u8]) -> Result<(), Error> {
        let response = record::unmarshal::<ConnectResponse>(&mut body)?;
        debug!("received connect response: {response:?}");
        let session_id = SessionId(response.session_id);
        if session_id.0 == 0 {
            return Err(Error::SessionExpired);
        } else if !self.is_readonly_allowed() && response.readonly {
            return Err(Error::UnexpectedError(format!(
                "get readonly session {}, while is not allowed since readonly={}, old session readonly={}",
                session_id, self.readonly, self.session.readonly
            )));
        }
        if self.session.id != session_id {
            self.session.id = session_id;
            // The timeouts told another session say nothing of this one (patch 14).
            self.lease.new_session();
            info!(
                "new session established: {} readonly={}, timeout={}ms",
                session_id, response.readonly, response.session_timeout
            );
            let span = Span::current();
            span.record("session", display(session_id));
        }
        self.session.password.clear();
        self.session.password.extend_from_slice(response.password);
        self.session.readonly = response.readonly;
        // A negative timeout (no server sends one) counts as zero: no lease.
        let negotiated = Duration::from_millis(u64::try_from(response.session_timeout).unwrap_or(0));
        // Accepting a connect request renews the session (patch 3); the lease
        // keeps the smallest timeout told (patch 14), and the pings follow it.
        self.lease.negotiated(negotiated);
        self.lease.answered(self.connect_sent);
        self.reset_timeouts(negotiated, self.lease.smallest().unwrap_or(negotiated));
        self.complete_connect();
        Ok(())
    }

    fn handle_recv_buf(&mut self, recved: &mut Vec<u8>, depot: &mut Depot) -> Result<(), Error> {
        let mut reading = recved.as_slice();
        if self.session_state == SessionState::Disconnected {
            if let Some(body) = record::try_deserialize::<&[u8]>(&mut reading)? {
                self.handle_connect_response(body)?;
                self.send_after_connect(depot)?;
            } else {
                return Ok(());
            }
        }
        while let Some(mut body) = record::try_deserialize::<&[u8]>(&mut reading)? {
            let header: ReplyHeader = record::unmarshal(&mut body)?;
            self.handle_reply(header, body, depot)?;
        }
        let consumed_bytes = recved.len() - reading.len();
        recved.drain(..consumed_bytes);
        self.last_recv = Instant::now();
        Ok(())
    }

    async fn serve_connecting(
        &mut self,
        conn: &mut Connection,
        buf: &mut Vec<u8>,
        depot: &mut Depot,
    ) -> Result<(), Error> {
        let mut pinged = false;
        let (mut reader, mut writer) = conn.split();
        let mut tick = rt::Interval::new(self.tick_timeout);
        while !(self.session_state.is_connected() && depot.is_empty()) {
            select! {
                r = reader.read_to_buf(buf) => match r.map_err(Error::other)? {
                    0 => return Err(Error::ConnectionLoss),
                    _ => self.handle_recv_buf(buf, depot)?,
                },
                r = depot.write_to(&mut writer) => {
                    r?;
                    self.last_send = Instant::now();
                },
                now = tick.tick() => {
                    if now >= self.last_recv + self.connector.timeout() {
                        return Err(Error::with_message(format!("no response from connection in {}ms", self.connector.timeout().as_millis())));
                    }
                },
            }
            if self.session_state.is_connected() && !pinged {
                // Send opcode other than `auth` and `sasl` to get possible AuthFailed if
                // "zookeeper.enforce.auth.enabled".
                pinged = true;
                self.send_ping(depot, Instant::now());
            }
        }
        Ok(())
    }

    async fn poll<T>(f: &mut Option<impl std::future::Future<Output = T>>) -> T {
        match f.as_mut() {
            None => std::future::pending().await,
            Some(f) => unsafe { std::pin::Pin::new_unchecked(f).await },
        }
    }

    async fn serve_session(
        &mut self,
        endpoints: &mut IterableEndpoints,
        conn: &mut Connection,
        buf: &mut Vec<u8>,
        depot: &mut Depot,
        requester: &mut mpsc::UnboundedReceiver<Request>,
        halted: bool,
    ) -> Result<(), Error> {
        #[cfg(feature = "sasl-digest-md5")]
        self.sasl_session.take();
        let mut seek_for_writable =
            if self.session.readonly { Some(self.connector.clone().seek_for_writable(endpoints)) } else { None };
        let mut tick = rt::Interval::new(self.tick_timeout);
        let mut err = None;
        let mut channel_halted = halted;
        depot.start();
        let (mut reader, mut writer) = conn.split();
        while !(channel_halted && depot.is_empty()) {
            select! {
                Some(endpoint) = Self::poll(&mut seek_for_writable), if seek_for_writable.is_some() => {
                    seek_for_writable = None;
                    err = Some(Error::with_message(format!("encounter writable server {endpoint}")));
                    channel_halted = true;
                },
                r = reader.read_to_buf(buf) => match r.map_err(Error::other)? {
                    0 => return Err(Error::ConnectionLoss),
                    _ => self.handle_recv_buf(buf, depot)?,
                },
                r = depot.write_to(&mut writer) => {
                    r?;
                    self.last_send = Instant::now();
                },
                r = requester.next(), if !channel_halted => match r {
                    None => {
                        if !self.detached {
                            depot.push_session(SessionOperation::new_without_body(OpCode::CloseSession));
                        }
                        channel_halted = true;
                    }
                    Some(request) => {
                        self.take_request(request, depot);
                        // zk-rwlock patch 19: the requests queued meanwhile too (up to a
                        // batch), so that requests sent together leave in one write.
                        for _ in 1..REQUEST_BATCH {
                            #[allow(deprecated)] // `try_recv` needs futures 0.3.31.
                            let Ok(Some(request)) = requester.try_next() else {
                                break;
                            };
                            self.take_request(request, depot);
                        }
                    },
                },
                now = tick.tick() => {
                    if now >= self.last_recv + self.connector.timeout() {
                        return Err(Error::with_message(format!("no response from connection in {}ms", self.connector.timeout().as_millis())));
                    }
                    if self.last_ping.is_none() && now >= self.last_send + self.ping_timeout {
                        self.send_ping(depot, now);
                    }
                },
            }
        }
        writer.flush().await.map_err(Error::other)?;
        Err(err.unwrap_or(Error::ClientClosed))
    }

    /// Takes a request from the client's channel (a closed channel is handled by the caller).
    fn take_request(&mut self, request: Request, depot: &mut Depot) {
        match request {
            Request::Session(operation) => depot.push_session(operation),
            Request::RemoveWatcher { id, responser } => {
                self.watch_manager.remove_watcher(id, responser, depot);
            },
            Request::SetWatches(operation) => self.set_watches(operation, depot),
        }
    }

    /// Takes a client's `SetWatches` request (zk-rwlock patch 18): registers its watchers, hands
    /// them to the caller, cancels removals that wait for watching requests on its paths (sent
    /// after it, they would remove its watches) and queues the request. The server sends the
    /// events of what changed since the request's relative zxid before its answer, so the
    /// watchers must be there before the request is written: a notification that finds no watcher
    /// is dropped (and taken for a dangling watch). The answer is matched like a reconnection's
    /// `SetWatches`, in write order among the requests of xid −8 (patch 4).
    fn set_watches(&mut self, operation: SetWatchesOperation, depot: &mut Depot) {
        let SetWatchesOperation { operation, paths, data, watchers } = operation;
        if watchers.is_canceled() {
            // The caller is gone: nobody would get the watchers nor the answer.
            return;
        }
        let receivers = self.watch_manager.add_set_watches(&paths, data);
        if let Err(receivers) = watchers.send(receivers) {
            // Gone in between: nothing was sent, so the watchers go without a removal request.
            self.watch_manager.forget_watchers(receivers);
            return;
        }
        // Data and exist watches are both removed as `WatchMode::Data`.
        paths.iter().for_each(|path| depot.cancel_unwatch_for(path, WatchMode::Data));
        depot.push_session(operation);
    }

    fn send_ping(&mut self, depot: &mut Depot, now: Instant) {
        let operation = SessionOperation::new_without_body(OpCode::Ping);
        depot.push_session(operation);
        self.last_send = now;
        self.last_ping = Some(self.last_send);
    }

    fn send_connect(&self, depot: &mut Depot) {
        let request = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid,
            timeout: self.session_timeout.as_millis() as i32,
            session_id: if self.session.readonly { 0 } else { self.session.id.0 },
            password: self.session.password.as_slice(),
            readonly: self.is_readonly_allowed(),
        };
        debug!("sending connect request: {request:?}");
        let operation = ConnectOperation::new(&request);
        depot.push_operation(Operation::Connect(operation));
    }

    #[cfg(feature = "sasl-digest-md5")]
    fn send_sasl(&mut self, depot: &mut Depot, host: &str) -> Result<(), Error> {
        self.sasl_session = None;
        let Some(options) = self.sasl_options.as_ref() else {
            return Ok(());
        };
        let session = options.new_session(host).inspect_err(|e| {
            warn!("fail to open sasl session for {host}: {e}");
        })?;
        depot.push_sasl(session.initial());
        self.sasl_session = Some(session);
        Ok(())
    }

    /// Sends what a new connection sends once the server has accepted its connect request: the
    /// SASL exchange, the auth packets and the watches. Sent before that answer, ZooKeeper's Netty
    /// server may answer them first, which a client cannot take for the connect response (patch 5).
    fn send_after_connect(&mut self, depot: &mut Depot) -> Result<(), Error> {
        #[cfg(feature = "sasl-digest-md5")]
        {
            let host = std::mem::take(&mut self.connecting_host);
            let sent = self.send_sasl(depot, &host);
            self.connecting_host = host;
            sent?;
        }
        self.send_authes(depot);
        self.watch_manager.resend_watches(self.last_zxid, depot);
        Ok(())
    }

    fn send_authes(&self, depot: &mut Depot) {
        self.authes.iter().for_each(|auth| {
            let operation = SessionOperation::from(auth.clone());
            depot.push_session(operation);
        });
    }

    async fn start_once(
        &mut self,
        endpoints: &mut IterableEndpoints,
        deadline: &mut Deadline,
        buf: &mut Vec<u8>,
        depot: &mut Depot,
    ) -> Result<Connection, Error> {
        // Wakes up half a backoff before deadline so that a last attempt is made in time.
        let max_backoff = self.max_reconnect_backoff();
        let max_delay = match deadline.timeout() {
            remaining if remaining > max_backoff / 2 => remaining - max_backoff / 2,
            remaining => remaining,
        };
        let Some(endpoint) = endpoints.next(max_delay, max_backoff).await else {
            return Err(Error::NoHosts);
        };
        let mut conn = match self.connector.connect(endpoint, deadline).await {
            Err(err) => {
                debug!("fails in connecting to {} due to {:?}", endpoint, err);
                return Err(Error::ConnectionLoss);
            },
            Ok(conn) => {
                debug!("succeeds in connecting to {}", endpoint);
                conn
            },
        };
        depot.reset();
        buf.clear();
        self.connect_sent = Instant::now();
        self.send_connect(depot);
        // SASL, auth and watches follow the connect response (patch 5).
        self.connecting_host.clear();
        self.connecting_host.push_str(endpoint.host);
        self.last_send = Instant::now();
        self.last_recv = self.last_send;
        self.last_ping = None;
        self.change_state(SessionState::Disconnected);
        match self.serve_connecting(&mut conn, buf, depot).await {
            Err(err) => {
                warn!("fails to establish session to {} due to {}", endpoint, err);
                // Closed by the server before it answered the connect request (patch 13).
                if err == Error::ConnectionLoss && !self.session_state.is_connected() {
                    self.closed_before_answer = Some(endpoint.to_string());
                }
                Err(err)
            },
            _ => {
                info!("succeeds to establish session to {}", endpoint);
                Ok(conn)
            },
        }
    }

    pub async fn start(
        &mut self,
        endpoints: &mut IterableEndpoints,
        buf: &mut Vec<u8>,
        depot: &mut Depot,
    ) -> Result<Connection, Error> {
        let result = self.start_until_deadline(endpoints, buf, depot).await;
        // Connected again, or given up: no longer reconnecting (patch 16).
        self.lease.reconnecting_until(None);
        result
    }

    async fn start_until_deadline(
        &mut self,
        endpoints: &mut IterableEndpoints,
        buf: &mut Vec<u8>,
        depot: &mut Depot,
    ) -> Result<Connection, Error> {
        endpoints.start();
        let session_timeout = if self.session.id.0 == 0 { self.session_timeout } else { self.session_expired_timeout };
        debug!(
            session_timeout = session_timeout.as_millis(),
            connection_timeout = self.connector.timeout().as_millis(),
            "attempts new connections to {:?}",
            endpoints.endpoints()
        );
        let mut deadline = Deadline::until(self.last_recv + session_timeout);
        if self.session.id.0 != 0 {
            // When the client gives an established session up, for Client::session_gives_up_at (patch 16).
            self.lease.reconnecting_until(Some(self.last_recv + session_timeout));
        }
        self.closed_before_answer = None;
        let mut last_error = match self.start_once(endpoints, &mut deadline, buf, depot).await {
            Err(err) => err,
            Ok(conn) => return Ok(conn),
        };
        while !last_error.is_terminated() {
            if deadline.elapsed() {
                return Err(Error::Timeout);
            }
            match self.start_once(endpoints, &mut deadline, buf, depot).await {
                Err(err) => {
                    last_error = err;
                    continue;
                },
                Ok(conn) => return Ok(conn),
            };
        }
        // Every server was tried and one of them closed the connection before answering (patch 13).
        if last_error == Error::NoHosts {
            if let Some(server) = self.closed_before_answer.take() {
                return Err(Error::ClosedBeforeSession { server });
            }
        }
        Err(last_error)
    }
}
