//! A small TCP proxy between a ZooKeeper client and a server that can cut
//! connections on command: all at once, or right after forwarding a
//! request of a given type (before its reply can come back), can refuse
//! new connections for a while, can freeze: forward nothing, in either
//! direction, without closing anything (a network partition), and can
//! garble random bytes of random server-to-client frames (seeded).
//!
//! It understands just enough of ZooKeeper's framing: every packet is a
//! 4-byte big-endian length and a body; the first packet of a connection is
//! the connect request, every later one starts with `xid` and the op code.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use crate::rng::SplitMix64;

/// ZooKeeper op codes the tests cut after.
pub mod op {
    /// `create`.
    pub const CREATE: i32 = 1;
    /// `delete`.
    pub const DELETE: i32 = 2;
    /// `exists` (also sets a watch when asked to).
    pub const EXISTS: i32 = 3;
    /// `getData`.
    pub const GET_DATA: i32 = 4;
    /// `getChildren`.
    pub const GET_CHILDREN: i32 = 8;
    /// `getChildren2` (children with the parent's stat).
    pub const GET_CHILDREN2: i32 = 12;
    /// `multi` (a transaction: a release is one).
    pub const MULTI: i32 = 14;
    /// `create2` (create returning a stat).
    pub const CREATE2: i32 = 15;
}

struct Conn {
    client: TcpStream,
    server: TcpStream,
    /// Set before a cut: the server-to-client pump forwards nothing more.
    replies_blocked: Arc<AtomicBool>,
    /// Set when either pump has stopped.
    closed: Arc<AtomicBool>,
}

impl Conn {
    /// Cuts the connection; true if it was still open.
    fn cut(&self) -> bool {
        let open = !self.closed.load(Ordering::SeqCst);
        self.replies_blocked.store(true, Ordering::SeqCst);
        let _ = self.client.shutdown(Shutdown::Both);
        let _ = self.server.shutdown(Shutdown::Both);
        open
    }
}

/// While set, no byte and no close passes in either direction.
#[derive(Clone, Default)]
struct Freeze(Arc<AtomicBool>);

impl Freeze {
    /// Waits while frozen, or until `cut` is set.
    fn wait(&self, cut: &AtomicBool) {
        while self.0.load(Ordering::SeqCst) && !cut.load(Ordering::SeqCst) {
            thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

#[derive(Default)]
struct State {
    conns: Vec<Conn>,
    /// Cut the connection right after forwarding the next request with one of these op codes.
    cut_after: Vec<i32>,
    /// `cut_after` stays armed after a cut ([`Proxy::cut_after_every_request`]).
    cut_always: bool,
    /// Right after forwarding the next request with one of these op codes,
    /// send the client a reply it never asked for (an unknown xid) instead
    /// of the server's.
    garble_after: Vec<i32>,
    /// Watch notifications for paths containing this text are held back
    /// for this long, while later packets pass (events delivered out of
    /// order).
    delay_events: Option<(String, std::time::Duration)>,
    /// Random bytes of random server-to-client frames are changed.
    garble: Option<Garble>,
    /// `exists` of a path containing this text that finds the node is
    /// answered `NoAuth` ([`Proxy::refuse_exists_of`]).
    refuse_exists: Option<String>,
    /// The xids of the `exists` requests whose answer is to be refused,
    /// per connection.
    refusing: Vec<(usize, i32)>,
    /// How many answers were refused so far.
    refused_exists: usize,
    /// How many connections were made (each one's id).
    connections: usize,
}

/// Which bytes [`Proxy::garble_replies`] changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Garbling {
    /// Any byte of the frame, its length prefix included, to any other
    /// value: garbage, but also well-formed replies that lie (a digit of a
    /// child name, a zxid, an error code). The protocol has no checksum:
    /// no client can tell such a lie from the truth (TLS can: it drops the
    /// connection on a changed byte).
    Anywhere,
    /// Only changes a client can detect: the length prefix to any other
    /// value (the framing breaks); the lowest byte of a reply's xid (the
    /// reply then answers no request, or one that is not the oldest
    /// waiting, which a client that checks the server's request order
    /// catches); or a byte of a string (a run of at least 8 printable
    /// bytes: paths, node names) to `0xff`, which is never valid UTF-8.
    /// Not the xid of a watch notification (`-1`): changed into the xid of
    /// the oldest request it would be taken as that request's answer.
    Detectable,
}

/// The seeded garbling of server-to-client frames.
struct Garble {
    kind: Garbling,
    rng: SplitMix64,
    one_in: u64,
    garbled: usize,
    /// What was garbled, frame by frame (see [`Proxy::garble_log`]).
    log: Vec<String>,
}

impl Garble {
    /// Garbles `packet` (length prefix and body) once in `one_in` frames:
    /// one to three random bytes get random values. The length prefix may
    /// be hit too, so that the client's framing is garbled as well.
    fn apply(&mut self, packet: &mut [u8]) {
        if packet.is_empty() || !self.rng.one_in(self.one_in) {
            return;
        }
        let original = packet.to_vec();
        let mut changes = Vec::new();
        for _ in 0..1 + self.rng.below(3) {
            let (at, new) = match self.kind {
                Garbling::Anywhere => {
                    let at = self.rng.index(packet.len());
                    // Never the same value: a garbled frame differs.
                    (at, packet[at] ^ (1 + self.rng.below(255) as u8))
                }
                Garbling::Detectable => {
                    let strings = string_bytes(packet);
                    // A reply to a request: xid at bytes 4..8, not negative.
                    let reply = packet.len() >= 8 && packet[4] & 0x80 == 0;
                    match self.rng.below(3) {
                        1 if reply => (7, packet[7] ^ (1 + self.rng.below(255) as u8)),
                        2 if !strings.is_empty() => (strings[self.rng.index(strings.len())], 0xff),
                        _ => {
                            // The length prefix.
                            let at = self.rng.index(packet.len().min(4));
                            (at, packet[at] ^ (1 + self.rng.below(255) as u8))
                        }
                    }
                }
            };
            let old = packet[at];
            packet[at] = new;
            changes.push(format!("[{at}] {old:#04x}->{new:#04x}"));
        }
        self.garbled += 1;
        self.log.push(format!(
            "{} of {:?}",
            changes.join(", "),
            String::from_utf8_lossy(&original[..original.len().min(160)])
        ));
    }
}

/// The proxy; stops when dropped.
pub struct Proxy {
    addr: String,
    state: Arc<Mutex<State>>,
    blocked: Arc<AtomicBool>,
    frozen: Freeze,
    stopped: Arc<AtomicBool>,
    fired: Arc<AtomicUsize>,
    accepted: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
}

impl Proxy {
    /// Starts a proxy on a free loopback port, forwarding to `upstream`
    /// (`host:port`); panics if no port can be bound (see [`Proxy::try_start`]).
    pub fn start(upstream: &str) -> Proxy {
        Proxy::try_start(upstream).unwrap_or_else(|e| panic!("cannot start a proxy to {upstream}: {e}"))
    }

    /// Starts a proxy on a free loopback port, forwarding to `upstream`
    /// (`host:port`, resolved for each connection).
    ///
    /// # Errors
    ///
    /// The error of binding the listening socket.
    pub fn try_start(upstream: &str) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?.to_string();
        let proxy = Proxy {
            addr,
            state: Arc::default(),
            blocked: Arc::default(),
            frozen: Freeze::default(),
            stopped: Arc::default(),
            fired: Arc::default(),
            accepted: Arc::default(),
            refused: Arc::default(),
        };
        let frozen = proxy.frozen.clone();
        let (state, blocked, stopped, fired, accepted, refused) = (
            proxy.state.clone(),
            proxy.blocked.clone(),
            proxy.stopped.clone(),
            proxy.fired.clone(),
            proxy.accepted.clone(),
            proxy.refused.clone(),
        );
        let upstream = upstream.to_owned();
        thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                if blocked.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    refused.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&upstream) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                accepted.fetch_add(1, Ordering::SeqCst);
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                spawn_pumps(client, server, state.clone(), fired.clone(), frozen.clone());
            }
        });
        Ok(proxy)
    }

    /// The address clients connect to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Cuts every connection now; returns how many were still open.
    pub fn cut_all(&self) -> usize {
        let mut state = self.state.lock().unwrap();
        state.conns.drain(..).filter(|conn| conn.cut()).count()
    }

    /// Freezes every connection, open and new: nothing is forwarded in
    /// either direction and nothing is closed (a close waits too), as in a
    /// network partition. New connections are accepted and then frozen.
    /// Bytes already read are held, and delivered on [`Proxy::thaw`].
    pub fn freeze(&self) {
        self.frozen.0.store(true, Ordering::SeqCst);
    }

    /// Ends a [`Proxy::freeze`]: what was held back is delivered, then
    /// forwarding goes on (the partition heals).
    pub fn thaw(&self) {
        self.frozen.0.store(false, Ordering::SeqCst);
    }

    /// How many connections are open (both pumps running).
    pub fn open(&self) -> usize {
        let state = self.state.lock().unwrap();
        state
            .conns
            .iter()
            .filter(|c| !c.closed.load(Ordering::SeqCst))
            .count()
    }

    /// While blocked, new connections are accepted and closed at once.
    pub fn set_blocked(&self, blocked: bool) {
        self.blocked.store(blocked, Ordering::SeqCst);
    }

    /// Arms a cut: the next request with one of `ops` is forwarded to the
    /// server, and its connection is cut before any reply comes back.
    pub fn cut_after_request(&self, ops: &[i32]) {
        let mut st = self.state.lock().unwrap();
        st.cut_after = ops.to_vec();
        st.cut_always = false;
    }

    /// Arms a cut that stays armed: every request with one of `ops` is
    /// forwarded to the server, and its connection is cut before any reply
    /// comes back, until `cut_after_request(&[])`. A client sending such a
    /// request never gets its answer, as from a server too slow to answer
    /// within the client's connection timeout.
    pub fn cut_after_every_request(&self, ops: &[i32]) {
        let mut st = self.state.lock().unwrap();
        st.cut_after = ops.to_vec();
        st.cut_always = true;
    }

    /// Arms a garbled reply: the next request with one of `ops` is
    /// forwarded to the server, and the client gets, instead of its reply, a
    /// reply with an xid it never sent. The client drops the connection and
    /// fails every request in flight with `UnexpectedError`; the request may
    /// well have been applied.
    pub fn garble_after_request(&self, ops: &[i32]) {
        self.state.lock().unwrap().garble_after = ops.to_vec();
    }

    /// Holds back watch notifications whose path contains `path_part` for
    /// `delay`, on every connection from now on, while later packets pass:
    /// the client sees those events after ones the server sent later.
    pub fn delay_events_for(&self, path_part: &str, delay: std::time::Duration) {
        self.state.lock().unwrap().delay_events = Some((path_part.to_owned(), delay));
    }

    /// Garbles random bytes of random server-to-client frames, on every
    /// connection from now on: each frame (the connect response included)
    /// is picked once in `one_in`, and one to three of its bytes, as
    /// `kind` says, get other values. `seed` makes
    /// the choices repeatable for one order of frames. `None` ends it.
    pub fn garble_replies(&self, kind: Garbling, seeded: Option<(u64, u64)>) {
        self.state.lock().unwrap().garble = seeded.map(|(seed, one_in)| Garble {
            kind,
            rng: SplitMix64(seed),
            one_in: one_in.max(1),
            garbled: 0,
            log: Vec::new(),
        });
    }

    /// How many frames [`Proxy::garble_replies`] has garbled so far.
    pub fn garbled(&self) -> usize {
        self.state
            .lock()
            .unwrap()
            .garble
            .as_ref()
            .map_or(0, |g| g.garbled)
    }

    /// The frames [`Proxy::garble_replies`] has garbled so far: the
    /// offsets and bytes changed, and the frame's start as it was.
    pub fn garble_log(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap()
            .garble
            .as_ref()
            .map_or_else(Vec::new, |g| g.log.clone())
    }

    /// Answers `exists` of every path that contains `path_part`, when it
    /// finds the node there, with `NoAuth` instead (an empty reply with
    /// that error), on every connection from now on; `exists` of a node
    /// that is gone passes as it is. So a server from ZooKeeper 3.7.3,
    /// 3.8.4 and 3.9.2 on answers an identity that may not READ the node
    /// (ZOOKEEPER-2590): the test kit's 3.8.0 does not check READ there.
    pub fn refuse_exists_of(&self, path_part: &str) {
        self.state.lock().unwrap().refuse_exists = Some(path_part.to_owned());
    }

    /// How many `exists` answers [`Proxy::refuse_exists_of`] refused.
    pub fn refused_exists(&self) -> usize {
        self.state.lock().unwrap().refused_exists
    }

    /// How many armed cuts (and garbled replies) have fired: each is
    /// counted as the request that fires it is taken, before it is
    /// forwarded, so before its client can see the cut.
    pub fn fired(&self) -> usize {
        self.fired.load(Ordering::SeqCst)
    }

    /// How many connections were accepted and forwarded.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// How many connections were closed at once because the proxy was blocked.
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees `stopped`.
        let _ = TcpStream::connect(&self.addr);
        self.cut_all();
    }
}

fn spawn_pumps(
    client: TcpStream,
    server: TcpStream,
    state: Arc<Mutex<State>>,
    fired: Arc<AtomicUsize>,
    frozen: Freeze,
) {
    let replies_blocked = Arc::new(AtomicBool::new(false));
    let closed = Arc::new(AtomicBool::new(false));
    let (Ok(c2), Ok(s2), Ok(c3), Ok(s3)) = (
        client.try_clone(),
        server.try_clone(),
        client.try_clone(),
        server.try_clone(),
    ) else {
        return;
    };
    let id = {
        let mut st = state.lock().unwrap();
        st.conns.push(Conn {
            client: c3,
            server: s3,
            replies_blocked: replies_blocked.clone(),
            closed: closed.clone(),
        });
        // Forget connections that are over.
        st.conns.retain(|c| !c.closed.load(Ordering::SeqCst));
        st.connections += 1;
        st.connections
    };
    // Server to client: packet by packet (the first is the connect
    // response), unless replies are blocked; some watch notifications may
    // be held back.
    {
        let (mut from, to, blocked) = (s2, c2, replies_blocked.clone());
        let (state, frozen, closed) = (state.clone(), frozen.clone(), closed.clone());
        thread::spawn(move || {
            let to = Arc::new(Mutex::new(to));
            let mut first = true;
            loop {
                let mut len = [0u8; 4];
                if from.read_exact(&mut len).is_err() {
                    break;
                }
                let n = i32::from_be_bytes(len).max(0) as usize;
                let mut packet = len.to_vec();
                packet.resize(4 + n, 0);
                if from.read_exact(&mut packet[4..]).is_err() {
                    break;
                }
                frozen.wait(&blocked);
                if blocked.load(Ordering::SeqCst) {
                    break;
                }
                if let Some(garble) = state.lock().unwrap().garble.as_mut() {
                    garble.apply(&mut packet);
                }
                if !first {
                    refuse_exists(id, &mut packet, &state);
                }
                let delay = if first {
                    None
                } else {
                    event_delay(&packet[4..], &state)
                };
                first = false;
                if let Some(delay) = delay {
                    let to = to.clone();
                    thread::spawn(move || {
                        thread::sleep(delay);
                        let _ = to.lock().unwrap().write_all(&packet);
                    });
                    continue;
                }
                if to.lock().unwrap().write_all(&packet).is_err() {
                    break;
                }
            }
            frozen.wait(&blocked);
            closed.store(true, Ordering::SeqCst);
            let _ = to.lock().unwrap().shutdown(Shutdown::Both);
            let _ = from.shutdown(Shutdown::Both);
        });
    }
    // Client to server: packet by packet, watching op codes.
    thread::spawn(move || {
        let (mut from, mut to) = (client, server);
        let mut first = true;
        loop {
            let mut len = [0u8; 4];
            if from.read_exact(&mut len).is_err() {
                break;
            }
            let n = i32::from_be_bytes(len).max(0) as usize;
            let mut body = vec![0u8; n];
            if from.read_exact(&mut body).is_err() {
                break;
            }
            let op = if first || n < 8 {
                None
            } else {
                Some(i32::from_be_bytes([body[4], body[5], body[6], body[7]]))
            };
            first = false;
            if op == Some(op::EXISTS) {
                note_exists(id, &body, &state);
            }
            let (cut, garble) = {
                let mut st = state.lock().unwrap();
                match op {
                    Some(op) if st.cut_after.contains(&op) => {
                        if !st.cut_always {
                            st.cut_after.clear();
                        }
                        (true, false)
                    }
                    Some(op) if st.garble_after.contains(&op) => {
                        st.garble_after.clear();
                        (true, true)
                    }
                    _ => (false, false),
                }
            };
            if cut {
                // Counted before the client can see it (the other pump
                // closes the client's connection at the next reply): a
                // test that reads the count once its request failed finds
                // this fault in it.
                fired.fetch_add(1, Ordering::SeqCst);
                // No reply may pass from here on.
                replies_blocked.store(true, Ordering::SeqCst);
            }
            let mut packet = Vec::with_capacity(4 + n);
            packet.extend_from_slice(&len);
            packet.extend_from_slice(&body);
            frozen.wait(&replies_blocked);
            if to.write_all(&packet).is_err() {
                break;
            }
            if cut {
                let _ = to.flush();
                if garble {
                    // xid, zxid, err: a reply header for a request never sent.
                    let mut reply = 16i32.to_be_bytes().to_vec();
                    reply.extend_from_slice(&0x3fff_fff0i32.to_be_bytes());
                    reply.extend_from_slice(&0i64.to_be_bytes());
                    reply.extend_from_slice(&0i32.to_be_bytes());
                    let _ = from.write_all(&reply);
                    let _ = from.flush();
                }
                break;
            }
        }
        frozen.wait(&replies_blocked);
        closed.store(true, Ordering::SeqCst);
        let _ = from.shutdown(Shutdown::Both);
        // Let the server read the request before the connection closes.
        let _ = to.shutdown(Shutdown::Write);
    });
}

/// The offsets, past the frame's header (length, xid, zxid, err), of the
/// bytes in runs of at least 8 printable ASCII bytes: the strings of a
/// reply (numbers rarely hold such runs).
fn string_bytes(packet: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut run = 0;
    for (i, b) in packet.iter().enumerate().skip(20) {
        if (0x20..0x7f).contains(b) {
            run += 1;
        } else {
            if run >= 8 {
                out.extend(i - run..i);
            }
            run = 0;
        }
    }
    if run >= 8 {
        out.extend(packet.len() - run..packet.len());
    }
    out
}

/// Notes the xid of an `exists` request (`body`: xid, type, path, watch)
/// on connection `id` whose answer [`Proxy::refuse_exists_of`] refuses.
fn note_exists(id: usize, body: &[u8], state: &Mutex<State>) {
    let Some(len) = body.get(8..12) else { return };
    let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]).max(0) as usize;
    let Some(path) = body.get(12..12 + len) else {
        return;
    };
    let path = String::from_utf8_lossy(path);
    let mut st = state.lock().unwrap();
    if st
        .refuse_exists
        .as_ref()
        .is_some_and(|part| path.contains(part.as_str()))
    {
        let xid = i32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        st.refusing.push((id, xid));
    }
}

/// Replaces `packet` (length prefix and body: xid, zxid, err, ...), the
/// answer of an `exists` noted by [`note_exists`] on connection `id`, by
/// an empty `NoAuth` answer if it found the node.
fn refuse_exists(id: usize, packet: &mut Vec<u8>, state: &Mutex<State>) {
    if packet.len() < 20 {
        return;
    }
    let xid = i32::from_be_bytes([packet[4], packet[5], packet[6], packet[7]]);
    let mut st = state.lock().unwrap();
    let Some(at) = st.refusing.iter().position(|noted| *noted == (id, xid)) else {
        return;
    };
    st.refusing.swap_remove(at);
    let err = i32::from_be_bytes([packet[16], packet[17], packet[18], packet[19]]);
    if err != 0 {
        return;
    }
    const NO_AUTH: i32 = -102;
    packet.truncate(20);
    packet[0..4].copy_from_slice(&16i32.to_be_bytes());
    packet[16..20].copy_from_slice(&NO_AUTH.to_be_bytes());
    st.refused_exists += 1;
}

/// How long to hold back a reply body from the server, if it is a watch
/// notification (xid -1) for a path the proxy was told to delay.
fn event_delay(body: &[u8], state: &Mutex<State>) -> Option<std::time::Duration> {
    // xid (4), zxid (8), err (4), type (4), state (4), path length (4), path.
    if body.len() < 28 || i32::from_be_bytes([body[0], body[1], body[2], body[3]]) != -1 {
        return None;
    }
    let len = i32::from_be_bytes([body[24], body[25], body[26], body[27]]).max(0) as usize;
    let path = String::from_utf8_lossy(body.get(28..28 + len)?);
    let st = state.lock().unwrap();
    let (part, delay) = st.delay_events.as_ref()?;
    path.contains(part.as_str()).then_some(*delay)
}
