use std::collections::VecDeque;
use std::io::IoSlice;

use futures_lite::io::AsyncWriteExt;
use hashbrown::HashMap;
use strum::IntoEnumIterator;
use tracing::debug;

use super::request::{MarshalledRequest, OpStat, Operation, SessionOperation, StateResponser};
use super::types::WatchMode;
use super::xid::Xid;
use crate::error::Error;
use crate::proto::{ErrorCode, OpCode, PredefinedXid, RemoveWatchesRequest};

#[derive(Default)]
pub struct Depot {
    xid: Xid,

    // If ongoing authes are interruptted due to disconnection, they will be retried after
    // session reestablishment as auth failure will terminate session and should not be dropped
    // silently in case of disconnection.
    pending_authes: Vec<SessionOperation>,

    writing_slices: Vec<IoSlice<'static>>,
    writing_operations: VecDeque<Operation>,
    written_operations: HashMap<i32, SessionOperation>,
    // Written requests with predefined xids other than ping, in write order. Several of them can
    // share a xid (e.g. `SetWatches` batches) and ZooKeeper replies to them in order (patch 4).
    written_predefined: VecDeque<SessionOperation>,
    // The xids of `written_operations` other than ping, auth and SASL, in write order. ZooKeeper
    // answers a session's requests in the order it received them, so a reply must answer the
    // oldest of these, unless it is a refusal made before the pipeline (`may_overtake`); one that
    // answers another was garbled or misrouted (patch 12).
    written_order: VecDeque<i32>,

    sasl: bool,
    pending_operations: VecDeque<SessionOperation>,

    watching_paths: HashMap<(&'static str, WatchMode), usize>,
    unwatching_paths: HashMap<(&'static str, WatchMode), SessionOperation>,
}

impl Depot {
    pub fn new() -> Self {
        let writing_capacity = 128usize;
        Depot {
            xid: Default::default(),
            sasl: false,
            pending_authes: Vec::with_capacity(5),
            writing_slices: Vec::with_capacity(writing_capacity),
            writing_operations: VecDeque::with_capacity(writing_capacity),
            written_operations: HashMap::with_capacity(128),
            written_predefined: VecDeque::with_capacity(8),
            written_order: VecDeque::with_capacity(128),
            pending_operations: VecDeque::with_capacity(32),
            watching_paths: HashMap::with_capacity(32),
            unwatching_paths: HashMap::with_capacity(32),
        }
    }

    /// Reset state and clear buffered operations from previous run except `pending_authes`.
    pub fn reset(&mut self) {
        // We don't reset xid, so we get continuous xid (ignoring the overflow) even in case of
        // reconnection. This is helpful in diagnosis.
        self.sasl = false;
        self.writing_slices.clear();
        self.writing_operations.clear();
        self.written_operations.clear();
        self.written_predefined.clear();
        self.written_order.clear();
        self.pending_operations.clear();
        self.watching_paths.clear();
        self.unwatching_paths.clear();
    }

    /// Error out ongoing operations except authes.
    pub fn error(&mut self, err: &Error) {
        self.written_order.clear();
        self.written_predefined
            .drain(..)
            .chain(self.written_operations.drain().map(|(_, operation)| operation))
            .for_each(|operation| {
                if operation.request.get_code() == OpCode::Auth {
                    self.pending_authes.push(operation);
                    return;
                }
                operation.responser.send(Err(err.clone()));
            });
        self.writing_operations.drain(..).for_each(|operation| {
            if let Operation::Session(operation) = operation {
                if operation.request.get_code() == OpCode::Auth {
                    self.pending_authes.push(operation);
                    return;
                }
                operation.responser.send(Err(err.clone()));
            }
        });
        self.unwatching_paths.drain().for_each(|(_, operation)| {
            operation.responser.send(Err(err.clone()));
        });
        self.writing_slices.clear();
        self.watching_paths.clear();
    }

    /// Terminate all ongoing operations including authes.
    pub fn terminate(&mut self, err: Error) {
        self.error(&err);
        for SessionOperation { responser, .. } in self.pending_authes.drain(..) {
            responser.send(Err(err.clone()));
        }
    }

    /// Check whether there is any ongoing operations.
    pub fn is_empty(&self) -> bool {
        self.writing_operations.is_empty()
            && self.written_operations.is_empty()
            && self.written_predefined.is_empty()
            && self.pending_operations.is_empty()
    }

    /// Whether replies with this xid are matched in write order: a predefined xid other than ping,
    /// which is at most one in flight.
    fn is_replied_in_order(xid: i32) -> bool {
        xid < 0 && xid != PredefinedXid::Ping as i32
    }

    /// Whether the server answers this operation in the order of the session's requests: every
    /// one but ping, auth and SASL. Auth and SASL are answered as soon as they are read, before the
    /// requests ahead of them (`ZooKeeperServer.processPacket`); auth carries an ordinary xid.
    fn is_answered_in_request_order(xid: i32, code: OpCode) -> bool {
        xid != PredefinedXid::Ping as i32
            && !Self::is_replied_in_order(xid)
            && code != OpCode::Sasl
            && code != OpCode::Auth
    }

    /// Whether a reply with error `err` to a `code` request may come ahead of the replies to
    /// requests written before it: a refusal ZooKeeper makes in its first request processor, before
    /// the requests ahead of it are answered. A read-only server refuses writes with `NotReadOnly`
    /// (`ReadOnlyRequestProcessor`); with `zookeeper.enableEagerACLCheck` a leader or follower
    /// refuses creates, deletes, `setData` and `setACL` its ACLs forbid with `NoAuth` or
    /// `InvalidACL` (`ZooKeeperServer.authWriteRequest`); a server refuses an op code it does not
    /// know with `Unimplemented` (`ZooKeeperServer.submitRequestNow`).
    fn may_overtake(code: OpCode, err: i32) -> bool {
        if err == ErrorCode::NotReadOnly as i32 || err == ErrorCode::Unimplemented as i32 {
            return true;
        }
        (err == ErrorCode::NoAuth as i32 || err == ErrorCode::InvalidAcl as i32)
            && matches!(code, OpCode::Create | OpCode::Create2 | OpCode::Delete | OpCode::SetData | OpCode::SetACL)
    }

    /// Pops the written request that a reply with `xid` and error `err` answers.
    pub fn pop_request(&mut self, xid: i32, err: i32) -> Result<SessionOperation, Error> {
        let operation = if Self::is_replied_in_order(xid) {
            let index = self.written_predefined.iter().position(|operation| operation.request.get_xid() == xid);
            index.and_then(|index| self.written_predefined.remove(index))
        } else {
            let code = self.written_operations.get(&xid).map(|operation| operation.request.get_code());
            let in_order = code.is_some_and(|code| Self::is_answered_in_request_order(xid, code));
            if in_order {
                let overtaking = code.is_some_and(|code| Self::may_overtake(code, err));
                match self.written_order.front() {
                    Some(&oldest) if oldest == xid => {
                        self.written_order.pop_front();
                    },
                    _ if overtaking && self.written_order.contains(&xid) => {
                        self.written_order.retain(|&written| written != xid);
                    },
                    oldest => {
                        return Err(Error::UnexpectedError(format!(
                            "recv response with xid {xid} while the oldest pending request has xid {}: \
                             ZooKeeper answers in request order, so the reply is garbled",
                            oldest.map_or_else(|| "none".to_string(), |xid| xid.to_string())
                        )))
                    },
                }
            }
            self.written_operations.remove(&xid)
        };
        match operation {
            None => Err(Error::UnexpectedError(format!("recv response with xid {xid} but no pending request"))),
            Some(operation) => Ok(operation),
        }
    }

    fn write_session(&mut self, mut operation: SessionOperation) {
        if operation.request.get_xid() == 0 {
            operation.request.set_xid(self.xid.next());
        }
        self.push_operation(Operation::Session(operation));
    }

    fn push_request(&mut self, operation: SessionOperation) {
        if self.sasl {
            self.pending_operations.push_back(operation);
            return;
        }
        self.write_session(operation);
    }

    /// Pops the ping in flight; returns when it was sent.
    pub fn pop_ping(&mut self) -> Result<Option<std::time::Instant>, Error> {
        self.pop_request(PredefinedXid::Ping.into(), 0).map(|operation| operation.sent)
    }

    pub fn push_operation(&mut self, operation: Operation) {
        let buf = unsafe { std::mem::transmute::<&[u8], &'_ [u8]>(operation.get_data()) };
        self.writing_operations.push_back(operation);
        self.writing_slices.push(IoSlice::new(buf));
    }

    #[allow(dead_code)]
    pub fn push_sasl(&mut self, token: &[u8]) {
        let operation = SessionOperation::new(OpCode::Sasl, &Some(token));
        self.write_session(operation);
        self.sasl = true;
    }

    #[allow(dead_code)]
    pub fn complete_sasl(&mut self) {
        self.sasl = false;
        while let Some(operation) = self.pending_operations.pop_front() {
            self.write_session(operation);
        }
    }

    pub fn has_pending_writes(&self) -> bool {
        !self.writing_slices.is_empty()
    }

    pub fn start(&mut self) {
        let mut pending_authes = std::mem::take(&mut self.pending_authes);
        for operation in pending_authes.drain(..) {
            self.push_session(operation);
        }
        self.pending_authes = pending_authes;
    }

    fn cancel_unwatch(&mut self, path: &'static str, mode: WatchMode) {
        if let Some(SessionOperation { responser, .. }) = self.unwatching_paths.remove(&(path, mode)) {
            responser.send_empty();
        }
        if let Some(SessionOperation { responser, .. }) = self.unwatching_paths.remove(&(path, WatchMode::Any)) {
            responser.send_empty();
        }
    }

    /// A watch of `mode` on `path` is set by a request written from now on (a client's
    /// `SetWatches`, zk-rwlock patch 18): the removals of earlier watchers of it waiting for the
    /// replies of watching requests would remove that watch too, so they are cancelled, as a
    /// watching request's success does ([Depot::succeed_watch]).
    pub fn cancel_unwatch_for(&mut self, path: &str, mode: WatchMode) {
        let path = unsafe { std::mem::transmute::<&str, &'_ str>(path) };
        self.cancel_unwatch(path, mode);
    }

    pub fn fail_watch(&mut self, path: &str, mode: WatchMode) {
        let path = unsafe { std::mem::transmute::<&str, &'_ str>(path) };
        let count = self.watching_paths.get_mut(&(path, mode)).unwrap();
        *count -= 1;
        if *count == 0 {
            self.watching_paths.remove(&(path, mode));
            if let Some(operation) = self.unwatching_paths.remove(&(path, mode)) {
                self.push_request(operation);
            }
            if self.has_watching_requests(path) {
                return;
            }
            if let Some(operation) = self.unwatching_paths.remove(&(path, WatchMode::Any)) {
                self.push_request(operation);
            }
        }
    }

    pub fn succeed_watch(&mut self, path: &str, mode: WatchMode) {
        let path = unsafe { std::mem::transmute::<&str, &'_ str>(path) };
        let count = self.watching_paths.get_mut(&(path, mode)).unwrap();
        *count -= 1;
        if *count == 0 {
            self.watching_paths.remove(&(path, mode));
        }
        self.cancel_unwatch(path, mode);
    }

    pub fn push_session(&mut self, operation: SessionOperation) {
        let info = operation.request.get_operation_info();
        debug!("sending request: {:?}", info);
        if let (op_code, OpStat::Watch { path, mode }) = info {
            let path = unsafe { std::mem::transmute::<&str, &'_ str>(path) };
            if op_code == OpCode::RemoveWatches {
                if self.watching_paths.contains_key(&(path, mode))
                    || (mode == WatchMode::Any && self.has_watching_requests(path))
                {
                    self.unwatching_paths.insert((path, mode), operation);
                    return;
                }
            } else {
                // Overwrite old paths as they could be invalidated after reply.
                // `HashMap::insert` does not update the key in case it is present, so we have to remove it first.
                let count = self.watching_paths.remove(&(path, mode)).unwrap_or(0) + 1;
                self.watching_paths.insert((path, mode), count);
            }
        }
        self.push_request(operation);
    }

    pub fn push_remove_watch(&mut self, path: &str, mode: WatchMode, responser: StateResponser) {
        let record = RemoveWatchesRequest { path, mode: mode.into() };
        let operation =
            SessionOperation { request: MarshalledRequest::new(OpCode::RemoveWatches, &record), responser, sent: None };
        self.push_session(operation);
    }

    pub fn has_watching_requests(&self, path: &str) -> bool {
        WatchMode::iter()
            .filter(|mode| *mode != WatchMode::Any)
            .any(|mode| self.watching_paths.contains_key(&(path, mode)))
    }

    pub async fn write_to(&mut self, write: &mut (impl AsyncWriteExt + Unpin)) -> Result<(), Error> {
        if !self.has_pending_writes() {
            write.flush().await.map_err(Error::other)?;
            return std::future::pending().await;
        }
        // Taken before the bytes reach the socket: no earlier than the
        // server can receive any request completed by this write (patch 3).
        let started = std::time::Instant::now();
        let mut written_bytes = write.write_vectored(self.writing_slices.as_slice()).await.map_err(Error::other)?;
        let written_slices = self
            .writing_slices
            .iter()
            .position(|slice| {
                if written_bytes >= slice.len() {
                    written_bytes -= slice.len();
                    return false;
                }
                true
            })
            .unwrap_or(self.writing_slices.len());
        if written_slices != 0 {
            self.writing_slices.drain(..written_slices);
            self.writing_operations
                .drain(..written_slices)
                .filter_map(|operation| {
                    if let Operation::Session(operation) = operation {
                        return Some(operation);
                    }
                    None
                })
                .for_each(|mut operation| {
                    operation.sent = Some(started);
                    let xid = operation.request.get_xid();
                    if Self::is_replied_in_order(xid) {
                        self.written_predefined.push_back(operation);
                    } else {
                        if Self::is_answered_in_request_order(xid, operation.request.get_code()) {
                            self.written_order.push_back(xid);
                        }
                        self.written_operations.insert(xid, operation);
                    }
                });
        }
        if written_bytes != 0 {
            let (_, rest) = self.writing_slices[0].split_at(written_bytes);
            let rest = unsafe { std::mem::transmute::<&[u8], &'_ [u8]>(rest) };
            self.writing_slices[0] = IoSlice::new(rest);
        }
        Ok(())
    }
}
