//! The links between the members of a partitionable ensemble
//! ([`ZkClusterBuilder::partitionable`](super::ZkClusterBuilder::partitionable)).
//!
//! Every directed pair of members `i -> j` has two in-process byte pumps,
//! one for `j`'s quorum (peer) port and one for its election port, and
//! member `i`'s `zoo.cfg` names them in its `server.<j+1>` line (its own
//! line keeps its real ports). Whatever `i` opens towards `j` therefore
//! goes through link `i -> j`: a follower's connection to its leader, and
//! the election connections `i` opens.
//!
//! ZooKeeper keeps one election connection per pair, opened by the member
//! with the larger server id; the smaller one that wants to talk connects,
//! sends its initial message (protocol version, server id, its election
//! address) and hangs up, and the larger one connects back to the address
//! in that message. That address is `i`'s real election port, which would
//! bypass the links: the election pump of `i -> j` rewrites it into the
//! address of the pump of `j -> i`, so that the connection back goes
//! through a link as well.
//!
//! A cut link forwards nothing and closes nothing, in either direction, on
//! the connections it carries (bytes read are held until it heals), and
//! accepts new connections without forwarding them: they hang until the
//! link heals, and are then closed, as a connection the far side never
//! saw. ZooKeeper's own timeouts must notice. The pumps forward to their
//! member's current ports, which a relaunch on fresh ports changes.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use super::config::Ports;

/// How often a pump held by a cut looks whether it healed.
const CUT_POLL: Duration = Duration::from_millis(5);

/// The first long of a ZooKeeper election connection's initial message,
/// protocol versions 1 and 2 (3.5 and later).
const ELECTION_PROTOCOLS: [i64; 2] = [-65536, -65535];

/// Largest election address the rewrite reads (ZooKeeper's own bound is
/// larger, but an address list is far shorter).
const MAX_ADDRESS_LEN: usize = 64 * 1024;

/// State shared by a pump's threads.
#[derive(Default)]
struct Shared {
    /// Current port of the member the pump forwards to.
    upstream: AtomicU16,
    cut: AtomicBool,
    stopped: AtomicBool,
    /// For an election pump: the port written into initial messages.
    advertise: AtomicU16,
    /// The sockets of every connection, shut down when the network stops.
    sockets: Mutex<Vec<TcpStream>>,
}

impl Shared {
    /// Waits while the link is cut; false once the network stopped.
    fn wait_healed(&self) -> bool {
        while self.cut.load(Ordering::SeqCst) && !self.stopped.load(Ordering::SeqCst) {
            thread::sleep(CUT_POLL);
        }
        !self.stopped.load(Ordering::SeqCst)
    }

    fn track(&self, socket: &TcpStream) {
        if let Ok(clone) = socket.try_clone() {
            let mut sockets = self.sockets.lock().unwrap_or_else(PoisonError::into_inner);
            sockets.push(clone);
        }
    }
}

/// One listening port and its forwarding threads.
struct Pump {
    port: u16,
    shared: Arc<Shared>,
}

impl Pump {
    fn bind() -> io::Result<(Pump, TcpListener)> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        Ok((
            Pump {
                port,
                shared: Arc::default(),
            },
            listener,
        ))
    }

    fn run(&self, listener: TcpListener, election: bool) {
        let shared = self.shared.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                if shared.stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let shared = shared.clone();
                thread::spawn(move || serve(client, &shared, election));
            }
        });
    }

    fn stop(&self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees `stopped`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        let sockets =
            std::mem::take(&mut *self.shared.sockets.lock().unwrap_or_else(PoisonError::into_inner));
        for s in sockets {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// One accepted connection: held while the link is cut (then closed), else
/// forwarded both ways.
fn serve(client: TcpStream, shared: &Arc<Shared>, election: bool) {
    if shared.cut.load(Ordering::SeqCst) {
        shared.track(&client);
        shared.wait_healed();
        let _ = client.shutdown(Shutdown::Both);
        return;
    }
    let port = shared.upstream.load(Ordering::SeqCst);
    let Ok(server) = TcpStream::connect(("127.0.0.1", port)) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    shared.track(&client);
    shared.track(&server);
    let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else {
        let _ = client.shutdown(Shutdown::Both);
        let _ = server.shutdown(Shutdown::Both);
        return;
    };
    let back = shared.clone();
    thread::spawn(move || pump(server2, client2, &back, None));
    let advertise = election.then(|| shared.advertise.load(Ordering::SeqCst));
    pump(client, server, shared, advertise);
}

/// Forwards `from` to `to` until either ends, holding everything (bytes
/// and the close) while the link is cut. With `advertise`, the first
/// message is an election initial message whose address is rewritten.
fn pump(mut from: TcpStream, mut to: TcpStream, shared: &Shared, advertise: Option<u16>) {
    if let Some(port) = advertise.filter(|&p| p != 0) {
        match read_initial(&mut from, port) {
            Ok(bytes) => {
                if !shared.wait_healed() || to.write_all(&bytes).is_err() {
                    return;
                }
            }
            Err(_) => {
                shared.wait_healed();
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
        }
    }
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if !shared.wait_healed() || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    shared.wait_healed();
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

/// Reads an election connection's initial message and returns it with its
/// address replaced by `127.0.0.1:<port>`; other first bytes (an older
/// protocol) are returned as they came.
fn read_initial(from: &mut TcpStream, port: u16) -> io::Result<Vec<u8>> {
    let mut version = [0u8; 8];
    from.read_exact(&mut version)?;
    if !ELECTION_PROTOCOLS.contains(&i64::from_be_bytes(version)) {
        return Ok(version.to_vec());
    }
    let mut sid_len = [0u8; 12];
    from.read_exact(&mut sid_len)?;
    let len = i32::from_be_bytes([sid_len[8], sid_len[9], sid_len[10], sid_len[11]]);
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= MAX_ADDRESS_LEN)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unreasonable address length"))?;
    let mut old = vec![0u8; len];
    from.read_exact(&mut old)?;
    Ok(rewrite_initial(version, &sid_len[..8], port))
}

/// An initial message of protocol `version` from server `sid` (8 bytes)
/// advertising `127.0.0.1:<port>`.
fn rewrite_initial(version: [u8; 8], sid: &[u8], port: u16) -> Vec<u8> {
    let address = format!("127.0.0.1:{port}");
    let mut out = Vec::with_capacity(20 + address.len());
    out.extend_from_slice(&version);
    out.extend_from_slice(sid);
    out.extend_from_slice(&(address.len() as i32).to_be_bytes());
    out.extend_from_slice(address.as_bytes());
    out
}

/// The pumps of link `from -> to`.
struct Link {
    peer: Pump,
    election: Pump,
}

impl Link {
    fn set_cut(&self, cut: bool) {
        self.peer.shared.cut.store(cut, Ordering::SeqCst);
        self.election.shared.cut.store(cut, Ordering::SeqCst);
    }

    fn is_cut(&self) -> bool {
        self.peer.shared.cut.load(Ordering::SeqCst)
    }
}

/// Every directed link of an `n`-member ensemble.
pub(super) struct Network {
    n: usize,
    /// Link `i -> j` at `i * n + j`; `None` on the diagonal.
    links: Vec<Option<Link>>,
}

impl std::fmt::Debug for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network")
            .field("members", &self.n)
            .field("cut", &self.describe())
            .finish()
    }
}

impl Network {
    /// Binds and starts the pumps of every link (forwarding nowhere until
    /// [`retarget`](Network::retarget)).
    pub(super) fn start(n: usize) -> io::Result<Network> {
        let mut links = Vec::with_capacity(n * n);
        let mut listeners = Vec::with_capacity(n * n);
        for i in 0..n {
            for j in 0..n {
                if i == j {
                    links.push(None);
                    listeners.push(None);
                    continue;
                }
                let (peer, peer_l) = Pump::bind()?;
                let (election, election_l) = Pump::bind()?;
                links.push(Some(Link { peer, election }));
                listeners.push(Some((peer_l, election_l)));
            }
        }
        let net = Network { n, links };
        for i in 0..n {
            for j in 0..n {
                if let (Some(link), Some(back)) = (net.link(i, j), net.link(j, i)) {
                    link.election
                        .shared
                        .advertise
                        .store(back.election.port, Ordering::SeqCst);
                }
            }
        }
        for (link, listener) in net.links.iter().zip(listeners) {
            if let (Some(link), Some((peer_l, election_l))) = (link, listener) {
                link.peer.run(peer_l, false);
                link.election.run(election_l, true);
            }
        }
        Ok(net)
    }

    fn link(&self, from: usize, to: usize) -> Option<&Link> {
        if from >= self.n || to >= self.n {
            return None;
        }
        self.links[from * self.n + to].as_ref()
    }

    /// Points every link at its member's current ports.
    pub(super) fn retarget(&self, ports: &[Ports]) {
        for i in 0..self.n {
            for (j, p) in ports.iter().enumerate().take(self.n) {
                if let Some(link) = self.link(i, j) {
                    link.peer.shared.upstream.store(p.peer, Ordering::SeqCst);
                    link.election.shared.upstream.store(p.election, Ordering::SeqCst);
                }
            }
        }
    }

    /// The (peer, election) ports member `from` uses to reach member `to`.
    pub(super) fn ports(&self, from: usize, to: usize) -> Option<(u16, u16)> {
        self.link(from, to).map(|l| (l.peer.port, l.election.port))
    }

    /// Cuts (or heals) both directions between `a` and `b`.
    pub(super) fn set_cut(&self, a: usize, b: usize, cut: bool) {
        for (x, y) in [(a, b), (b, a)] {
            if let Some(link) = self.link(x, y) {
                link.set_cut(cut);
            }
        }
    }

    /// Whether `a` and `b` are cut apart.
    pub(super) fn is_cut(&self, a: usize, b: usize) -> bool {
        self.link(a, b).is_some_and(Link::is_cut)
    }

    /// The cut pairs, e.g. `cut 0-2 0-3 1-2 1-3`, or `healed`.
    pub(super) fn describe(&self) -> String {
        let cut: Vec<String> = (0..self.n)
            .flat_map(|a| (a + 1..self.n).map(move |b| (a, b)))
            .filter(|&(a, b)| self.is_cut(a, b))
            .map(|(a, b)| format!("{a}-{b}"))
            .collect();
        if cut.is_empty() {
            "healed".to_owned()
        } else {
            format!("cut {}", cut.join(" "))
        }
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        for link in self.links.iter().flatten() {
            link.peer.stop();
            link.election.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    const WITHIN: Duration = Duration::from_secs(10);

    /// A two-member network whose link 0 -> 1 forwards to `upstream`.
    fn network_to(upstream: u16, election: u16) -> Network {
        let net = Network::start(2).expect("network");
        let ports = [
            Ports::default(),
            Ports {
                peer: upstream,
                election,
                ..Ports::default()
            },
        ];
        net.retarget(&ports);
        net
    }

    fn read_some(s: &mut TcpStream, want: usize) -> Vec<u8> {
        let mut got = Vec::new();
        let deadline = Instant::now() + WITHIN;
        let mut buf = [0u8; 256];
        while got.len() < want {
            assert!(Instant::now() < deadline, "only {got:?} arrived");
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut => {}
                Err(e) => panic!("read: {e}"),
            }
        }
        got
    }

    /// Nothing passes a cut link, not even a close, on a live connection;
    /// healing delivers what was held, then the close.
    #[test]
    fn a_cut_link_holds_bytes_and_closes() {
        let server = TcpListener::bind("127.0.0.1:0").expect("bind");
        let net = network_to(server.local_addr().expect("addr").port(), 1);
        let (peer, _) = net.ports(0, 1).expect("link");
        let mut client = TcpStream::connect(("127.0.0.1", peer)).expect("connect");
        let (mut upstream, _) = server.accept().expect("accept");
        client.write_all(b"ping").expect("write");
        assert_eq!(read_some(&mut upstream, 4), b"ping");

        net.set_cut(0, 1, true);
        assert_eq!(net.describe(), "cut 0-1");
        client.write_all(b"held").expect("write");
        client.shutdown(Shutdown::Write).expect("shutdown");
        upstream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .expect("timeout");
        let mut buf = [0u8; 8];
        match upstream.read(&mut buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut => {}
            other => panic!("a cut link passed {other:?}"),
        }

        net.set_cut(0, 1, false);
        assert_eq!(net.describe(), "healed");
        upstream.set_read_timeout(Some(WITHIN)).expect("timeout");
        assert_eq!(read_some(&mut upstream, 4), b"held");
        assert_eq!(upstream.read(&mut buf).expect("eof"), 0, "the close comes last");
    }

    /// A connection made while the link is cut is accepted but never
    /// reaches the member, and is closed once the link heals.
    #[test]
    fn new_connections_hang_while_cut() {
        let server = TcpListener::bind("127.0.0.1:0").expect("bind");
        server.set_nonblocking(true).expect("nonblocking");
        let net = network_to(server.local_addr().expect("addr").port(), 1);
        net.set_cut(0, 1, true);
        let (peer, _) = net.ports(0, 1).expect("link");
        let mut client = TcpStream::connect(("127.0.0.1", peer)).expect("connect");
        client
            .write_all(b"hello")
            .expect("a hanging connection takes bytes");
        client
            .set_read_timeout(Some(Duration::from_millis(300)))
            .expect("timeout");
        let mut buf = [0u8; 8];
        assert!(client.read(&mut buf).is_err(), "no answer, no close while cut");
        assert!(server.accept().is_err(), "nothing reached the member");
        net.set_cut(0, 1, false);
        client.set_read_timeout(Some(WITHIN)).expect("timeout");
        assert_eq!(client.read(&mut buf).expect("closed on heal"), 0);
        assert!(server.accept().is_err(), "nothing reached the member");
    }

    /// The election pump rewrites the address of an initial message into
    /// that of the link back, and forwards the rest untouched.
    #[test]
    fn initial_messages_advertise_the_link_back() {
        let server = TcpListener::bind("127.0.0.1:0").expect("bind");
        let net = network_to(1, server.local_addr().expect("addr").port());
        let (_, election) = net.ports(0, 1).expect("link");
        let (_, back) = net.ports(1, 0).expect("link back");
        let mut client = TcpStream::connect(("127.0.0.1", election)).expect("connect");
        let address = b"127.0.0.1:5";
        let mut msg = (-65535i64).to_be_bytes().to_vec();
        msg.extend_from_slice(&7i64.to_be_bytes());
        msg.extend_from_slice(&(address.len() as i32).to_be_bytes());
        msg.extend_from_slice(address);
        msg.extend_from_slice(b"rest");
        client.write_all(&msg).expect("write");
        let (mut upstream, _) = server.accept().expect("accept");
        let want = format!("127.0.0.1:{back}");
        let got = read_some(&mut upstream, 20 + want.len() + 4);
        assert_eq!(&got[..8], &(-65535i64).to_be_bytes());
        assert_eq!(&got[8..16], &7i64.to_be_bytes());
        assert_eq!(&got[16..20], &(want.len() as i32).to_be_bytes());
        assert_eq!(&got[20..20 + want.len()], want.as_bytes());
        assert_eq!(&got[20 + want.len()..], b"rest");
    }
}
