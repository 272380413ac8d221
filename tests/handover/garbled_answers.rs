//! The library's own transactions answered by a reply that does not match
//! them, against a real server: a release (the release record and the
//! deletion) or a downgrade whose `multi` a network (or server) answers
//! with a well-formed, empty success, either without forwarding it (the
//! `liar`) or after the server applied it (the `applied_liar`). Such an
//! answer is not taken for applied (an answer must answer every operation
//! in kind): the request is sent again, as after a lost answer. A release
//! never says `Ok(())` with its node still there, and one that was applied
//! is its own deletion; a downgrade that was applied is settled by its
//! reader node's owner; nothing is left behind.
//!
//! The `liar` proxy here also serves `transactions` (a user's commit so
//! answered).

use zk_rwlock_fixtures as support;

use std::time::{Duration, Instant};

use support::{
    assert_drained, children, client, client_on, joined, lock, server, unique_path, wait_contenders,
};
use zk_rwlock::SharedLock;

const SHORT: Duration = Duration::from_secs(10);

pub(crate) mod liar {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::thread;

    /// A proxy that, when armed, swallows the next `multi` request and
    /// answers it itself with an empty successful result list.
    pub struct Liar {
        pub addr: String,
        armed: Arc<AtomicBool>,
        lied: Arc<AtomicUsize>,
    }

    fn frame(r: &mut impl Read) -> Option<Vec<u8>> {
        let mut len = [0u8; 4];
        r.read_exact(&mut len).ok()?;
        let mut body = vec![0u8; i32::from_be_bytes(len).max(0) as usize];
        r.read_exact(&mut body).ok()?;
        Some(body)
    }

    fn send(w: &Mutex<TcpStream>, body: &[u8]) -> bool {
        let mut w = w.lock().unwrap();
        w.write_all(&(body.len() as i32).to_be_bytes()).is_ok() && w.write_all(body).is_ok()
    }

    impl Liar {
        pub fn start(upstream: &str) -> Liar {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap().to_string();
            let armed = Arc::new(AtomicBool::new(false));
            let lied = Arc::new(AtomicUsize::new(0));
            let (a, l, up) = (armed.clone(), lied.clone(), upstream.to_owned());
            thread::spawn(move || {
                for client in listener.incoming() {
                    let Ok(client) = client else { continue };
                    let Ok(server) = TcpStream::connect(&up) else {
                        continue;
                    };
                    let to_client = Arc::new(Mutex::new(client.try_clone().unwrap()));
                    let zxid = Arc::new(AtomicI64::new(0));
                    // Server to client.
                    {
                        let (mut server, to_client, zxid) =
                            (server.try_clone().unwrap(), to_client.clone(), zxid.clone());
                        thread::spawn(move || {
                            let mut first = true;
                            while let Some(body) = frame(&mut server) {
                                if !first && body.len() >= 12 {
                                    let z = i64::from_be_bytes(body[4..12].try_into().unwrap());
                                    if z > 0 {
                                        zxid.fetch_max(z, Ordering::SeqCst);
                                    }
                                }
                                first = false;
                                if !send(&to_client, &body) {
                                    break;
                                }
                            }
                            let _ = to_client.lock().unwrap().shutdown(std::net::Shutdown::Both);
                        });
                    }
                    // Client to server.
                    let (a, l) = (a.clone(), l.clone());
                    thread::spawn(move || {
                        let (mut client, mut server) = (client, server);
                        let mut first = true;
                        while let Some(body) = frame(&mut client) {
                            let op = (!first && body.len() >= 8)
                                .then(|| i32::from_be_bytes(body[4..8].try_into().unwrap()));
                            first = false;
                            if op == Some(14) && a.swap(false, Ordering::SeqCst) {
                                let mut reply = Vec::new();
                                reply.extend_from_slice(&body[0..4]); // xid
                                reply.extend_from_slice(&zxid.load(Ordering::SeqCst).to_be_bytes());
                                reply.extend_from_slice(&0i32.to_be_bytes()); // err
                                reply.extend_from_slice(&(-1i32).to_be_bytes()); // type
                                reply.push(1); // done
                                reply.extend_from_slice(&(-1i32).to_be_bytes()); // err
                                l.fetch_add(1, Ordering::SeqCst);
                                if !send(&to_client, &reply) {
                                    break;
                                }
                                continue;
                            }
                            if server.write_all(&(body.len() as i32).to_be_bytes()).is_err()
                                || server.write_all(&body).is_err()
                            {
                                break;
                            }
                        }
                        let _ = server.shutdown(std::net::Shutdown::Both);
                    });
                }
            });
            Liar { addr, armed, lied }
        }

        pub fn arm(&self) {
            self.armed.store(true, Ordering::SeqCst);
        }

        pub fn lied(&self) -> usize {
            self.lied.load(Ordering::SeqCst)
        }
    }
}

/// A writer that waited, so that its release is the release-record
/// transaction, on a session through `liar`: returns its lock and guard.
async fn waited_writer(liar: &liar::Liar, path: &str) -> (SharedLock, zk_rwlock::WriteGuard) {
    let first_lock = lock(path).await;
    let first = first_lock.write().await.unwrap();
    let holder = SharedLock::new(client_on(&liar.addr).await, path).unwrap();
    let w = tokio::spawn({
        let holder = holder.clone();
        async move { holder.write().await }
    });
    wait_contenders(&first_lock, 2).await;
    first.release().await.unwrap();
    let guard = joined(SHORT, w).await.unwrap();
    (holder, guard)
}

/// The release's transaction (release record and deletion) answered by an
/// empty success is not taken for a release: `release()` never says
/// `Ok(())` while the node is still there (which would wedge the lock
/// until the session ends).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_multi_answer_is_no_release() {
    let liar = liar::Liar::start(&server().connect_string());
    let path = unique_path("garbled-release");
    let (_holder, guard) = waited_writer(&liar, &path).await;
    let node = guard.node().to_owned();
    liar.arm();
    let r = guard.release().await;
    assert_eq!(liar.lied(), 1, "the release was a multi");
    let left = children(&client().await, &path).await;
    eprintln!("release: {r:?}; left in the directory: {left:?}");
    assert!(
        r.is_err() || !left.iter().any(|c| node.ends_with(c.as_str())),
        "a release answered by an empty multi is not taken as applied, yet it said {r:?} \
         with {node} still there: {left:?}"
    );
}

/// The downgrade's transaction answered by an empty success is not taken
/// for applied: the downgrade ends, a read guard it returns holds, and
/// nothing is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_multi_answer_to_a_downgrade_is_not_applied() {
    let liar = liar::Liar::start(&server().connect_string());
    let path = unique_path("garbled-downgrade");
    let holder = SharedLock::new(client_on(&liar.addr).await, &path).unwrap();
    let guard = holder.write().await.unwrap();
    liar.arm();
    let r = tokio::time::timeout(SHORT, guard.downgrade())
        .await
        .expect("the downgrade ends");
    assert_eq!(liar.lied(), 1, "the downgrade was a multi");
    eprintln!("downgrade: {r:?}");
    if let Ok(read) = r {
        assert!(read.is_held(), "the read guard the downgrade returned holds");
        read.release().await.unwrap();
    }
    assert_drained(&path).await;
}

/// A proxy that forwards everything, but when armed replaces the server's
/// reply to the next `multi` (after the server applied it) with a
/// well-formed empty success.
mod applied_liar {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::thread;

    pub struct Liar {
        pub addr: String,
        armed: Arc<AtomicBool>,
        lied: Arc<AtomicUsize>,
    }

    fn frame(r: &mut impl Read) -> Option<Vec<u8>> {
        let mut len = [0u8; 4];
        r.read_exact(&mut len).ok()?;
        let mut body = vec![0u8; i32::from_be_bytes(len).max(0) as usize];
        r.read_exact(&mut body).ok()?;
        Some(body)
    }

    fn send(w: &mut TcpStream, body: &[u8]) -> bool {
        w.write_all(&(body.len() as i32).to_be_bytes()).is_ok() && w.write_all(body).is_ok()
    }

    impl Liar {
        pub fn start(upstream: &str) -> Liar {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap().to_string();
            let armed = Arc::new(AtomicBool::new(false));
            let lied = Arc::new(AtomicUsize::new(0));
            let (a, l, up) = (armed.clone(), lied.clone(), upstream.to_owned());
            thread::spawn(move || {
                for client in listener.incoming() {
                    let Ok(client) = client else { continue };
                    let Ok(server) = TcpStream::connect(&up) else {
                        continue;
                    };
                    let target: Arc<Mutex<Option<i32>>> = Arc::new(Mutex::new(None));
                    {
                        let (mut server, mut to_client, target, l) = (
                            server.try_clone().unwrap(),
                            client.try_clone().unwrap(),
                            target.clone(),
                            l.clone(),
                        );
                        thread::spawn(move || {
                            let mut first = true;
                            while let Some(body) = frame(&mut server) {
                                let mut out = body.clone();
                                if !first && body.len() >= 16 {
                                    let xid = i32::from_be_bytes(body[0..4].try_into().unwrap());
                                    let mut t = target.lock().unwrap();
                                    if *t == Some(xid) {
                                        *t = None;
                                        out = Vec::new();
                                        out.extend_from_slice(&body[0..12]); // xid, zxid
                                        out.extend_from_slice(&0i32.to_be_bytes()); // err
                                        out.extend_from_slice(&(-1i32).to_be_bytes());
                                        out.push(1);
                                        out.extend_from_slice(&(-1i32).to_be_bytes());
                                        l.fetch_add(1, Ordering::SeqCst);
                                    }
                                }
                                first = false;
                                if !send(&mut to_client, &out) {
                                    break;
                                }
                            }
                            let _ = to_client.shutdown(std::net::Shutdown::Both);
                        });
                    }
                    let (a, target) = (a.clone(), target.clone());
                    thread::spawn(move || {
                        let (mut client, mut server) = (client, server);
                        let mut first = true;
                        while let Some(body) = frame(&mut client) {
                            let op = (!first && body.len() >= 8)
                                .then(|| i32::from_be_bytes(body[4..8].try_into().unwrap()));
                            first = false;
                            if op == Some(14) && a.swap(false, Ordering::SeqCst) {
                                let xid = i32::from_be_bytes(body[0..4].try_into().unwrap());
                                *target.lock().unwrap() = Some(xid);
                            }
                            if !send(&mut server, &body) {
                                break;
                            }
                        }
                        let _ = server.shutdown(std::net::Shutdown::Both);
                    });
                }
            });
            Liar { addr, armed, lied }
        }
        pub fn arm(&self) {
            self.armed.store(true, Ordering::SeqCst);
        }
        pub fn lied(&self) -> usize {
            self.lied.load(Ordering::SeqCst)
        }
    }
}

/// The release's transaction (a waited writer: record + deletion) applied
/// by the server, its answer replaced by an empty success: sent again, it
/// finds the node gone; that is its own deletion (answer lost): `Ok(())`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applied_release_whose_success_is_garbled_is_our_own_deletion() {
    let liar = applied_liar::Liar::start(&server().connect_string());
    let path = unique_path("applied-release");
    let first_lock = lock(&path).await;
    let first = first_lock.write().await.unwrap();
    let holder = SharedLock::new(client_on(&liar.addr).await, &path).unwrap();
    let w = tokio::spawn({
        let holder = holder.clone();
        async move { holder.write().await }
    });
    support::wait_contenders(&first_lock, 2).await;
    // Waiting on it (not granted by a listing that found it gone): its
    // release writes the record, in a multi.
    let session = holder.client().session_id().0;
    support::wait_watching(server(), first.node(), session).await;
    first.release().await.unwrap();
    let guard = support::joined(SHORT, w).await.unwrap();
    let node = guard.node().to_owned();
    liar.arm();
    let r = tokio::time::timeout(SHORT, guard.release())
        .await
        .expect("the release ends");
    assert_eq!(liar.lied(), 1, "the release was a multi");
    assert!(
        r.is_ok(),
        "an applied release whose answer was garbled is ours: {r:?} ({node})"
    );
    assert_drained(&path).await;
}

/// The downgrade's transaction applied, its answer replaced by an empty
/// success: sent again it fails (the reader exists); the reader's stat
/// settles it: the downgrade is applied, and the read guard holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applied_downgrade_whose_success_is_garbled_is_settled_by_its_reader() {
    let liar = applied_liar::Liar::start(&server().connect_string());
    let path = unique_path("applied-downgrade");
    let holder = SharedLock::new(client_on(&liar.addr).await, &path).unwrap();
    let guard = holder.write().await.unwrap();
    let writer = guard.node().to_owned();
    liar.arm();
    let r = tokio::time::timeout(SHORT, guard.downgrade())
        .await
        .expect("the downgrade ends");
    assert_eq!(liar.lied(), 1, "the downgrade was a multi");
    let read = r.expect("applied: the reader holds");
    assert!(read.is_held());
    assert_ne!(read.node(), writer, "the reader took the writer's place");
    // Held well past the first-watch bound: the reader's keeper found its node.
    let measured = Instant::now();
    let lost = tokio::time::timeout(Duration::from_millis(500), read.lost()).await;
    assert!(lost.is_err(), "the reader stays held ({:?})", measured.elapsed());
    read.release().await.unwrap();
    assert_drained(&path).await;
}
