//! Fuzzing of the vendored client's reply decoding through a real socket.
//!
//! A fake server in the test accepts the client's connection, reads its
//! connect request and answers with a script drawn by proptest: a valid
//! connect response (with odd timeouts, passwords, trailing bytes) or bytes
//! that are not one, then reply frames to the client's requests: the xid it
//! sent or another, any error code, bodies that are noise or near-valid
//! records (strings, vectors and buffers with wrong lengths, stats cut
//! short, watch notifications for watched and other paths), frames with a
//! lying length, bytes between frames. Every later connection is told that
//! the session expired, so that a client gives up instead of reconnecting
//! for a session timeout. A lock's write acquire runs on the same session:
//! it must end by its deadline and must never be granted (the fake server
//! cannot know the node's random token, so a grant could only rest on
//! garbage).
//!
//! proptest at the byte level stands in for `cargo fuzz` (which needs a
//! nightly toolchain). The property: the client returns values or errors,
//! its connection may be lost, but no thread or task panics and every call
//! ends by its deadline. Failing seeds are kept in `proptest-regressions/`;
//! crashes found are kept below as regression cases.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use zk_rwlock::{zk, SharedLock, GIVE_UP_SLACK};
use zk_rwlock_fixtures::{panics_since, panics_so_far};

/// Which xid a reply carries.
#[derive(Debug, Clone)]
enum Xid {
    /// The xid of the request it answers.
    Echo,
    /// A watch notification (-1).
    Notification,
    /// A ping reply (-2).
    Ping,
    /// The auth reply (-4), the set-watches reply (-8).
    Other(i32),
}

/// A reply body.
#[derive(Debug, Clone)]
enum Body {
    Noise(Vec<u8>),
    /// A string or buffer: a length (maybe lying) and bytes.
    Buffer(i32, Vec<u8>),
    /// A vector: a count (maybe lying) and buffers.
    Vector(i32, Vec<(i32, Vec<u8>)>),
    /// A stat (68 bytes) cut or padded to this many bytes, then a buffer.
    Stat(usize, Vec<u8>),
    /// A watch notification: type, state, path length and path.
    Event(i32, i32, i32, String),
}

impl Body {
    fn bytes(&self) -> Vec<u8> {
        let buffer = |out: &mut Vec<u8>, len: i32, bytes: &[u8]| {
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(bytes);
        };
        let mut out = Vec::new();
        match self {
            Body::Noise(b) => out.extend_from_slice(b),
            Body::Buffer(len, b) => buffer(&mut out, *len, b),
            Body::Vector(count, items) => {
                out.extend_from_slice(&count.to_be_bytes());
                for (len, b) in items {
                    buffer(&mut out, *len, b);
                }
            }
            Body::Stat(n, tail) => {
                let mut stat: Vec<u8> = (0..68u8).collect();
                stat.resize(*n, 0xff);
                out.extend_from_slice(&stat);
                out.extend_from_slice(tail);
            }
            Body::Event(kind, state, len, path) => {
                out.extend_from_slice(&kind.to_be_bytes());
                out.extend_from_slice(&state.to_be_bytes());
                buffer(&mut out, *len, path.as_bytes());
            }
        }
        out
    }
}

/// One frame from the fake server.
#[derive(Debug, Clone)]
struct Reply {
    /// Sent before reading a request (unasked), or as the answer to one.
    unasked: bool,
    xid: Xid,
    zxid: i64,
    err: i32,
    body: Body,
    /// A length prefix that lies (else the true one).
    length: Option<i32>,
    /// Bytes written after the frame, outside any frame.
    stray: Vec<u8>,
    /// Close the connection after this frame.
    close: bool,
}

/// How the fake server answers the connect request.
#[derive(Debug, Clone)]
enum Prelude {
    Connect {
        version: i32,
        timeout: i32,
        session: i64,
        password: (i32, Vec<u8>),
        readonly: Vec<u8>,
    },
    Noise(Vec<u8>),
}

impl Prelude {
    /// A well-formed connect response: session 0x12345678, a 2 s timeout.
    fn session() -> Prelude {
        Prelude::Connect {
            version: 0,
            timeout: 2000,
            session: 0x1234_5678,
            password: (16, vec![7; 16]),
            readonly: vec![0],
        }
    }
}

#[derive(Debug, Clone)]
struct Script {
    prelude: Prelude,
    replies: Vec<Reply>,
    /// Connect with a chroot.
    chroot: bool,
    /// The lock's acquire comes before the client's calls (else after).
    lock_first: bool,
    /// The client's first call (see [`exercise`]).
    first: usize,
}

fn frame(body: &[u8], length: Option<i32>) -> Vec<u8> {
    let mut out = length.unwrap_or(body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

impl Prelude {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Prelude::Connect {
                version,
                timeout,
                session,
                password: (len, password),
                readonly,
            } => {
                let mut body = version.to_be_bytes().to_vec();
                body.extend_from_slice(&timeout.to_be_bytes());
                body.extend_from_slice(&session.to_be_bytes());
                body.extend_from_slice(&len.to_be_bytes());
                body.extend_from_slice(password);
                body.extend_from_slice(readonly);
                frame(&body, None)
            }
            Prelude::Noise(b) => b.clone(),
        }
    }
}

impl Reply {
    fn bytes(&self, asked: i32) -> Vec<u8> {
        let xid = match self.xid {
            Xid::Echo => asked,
            Xid::Notification => -1,
            Xid::Ping => -2,
            Xid::Other(x) => x,
        };
        let mut body = xid.to_be_bytes().to_vec();
        body.extend_from_slice(&self.zxid.to_be_bytes());
        body.extend_from_slice(&self.err.to_be_bytes());
        body.extend_from_slice(&self.body.bytes());
        let mut out = frame(&body, self.length);
        out.extend_from_slice(&self.stray);
        out
    }
}

fn noise(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

/// Lengths and counts: true, small, negative, huge.
fn length() -> impl Strategy<Value = i32> {
    prop_oneof![
        0..16i32,
        Just(-1),
        Just(i32::MIN),
        Just(i32::MAX),
        Just(0x0010_0000),
        any::<i32>()
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/".to_owned()),
        Just("/a".to_owned()),
        Just("/x".to_owned()),
        Just("/root".to_owned()),
        Just("/root/a".to_owned()),
        Just("/root/x".to_owned()),
        Just(String::new()),
        "[/a-z]{0,8}",
        any::<String>(),
    ]
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        noise(80).prop_map(Body::Noise),
        (length(), noise(24)).prop_map(|(l, b)| Body::Buffer(l, b)),
        (length(), proptest::collection::vec((length(), noise(12)), 0..4))
            .prop_map(|(c, i)| Body::Vector(c, i)),
        (0usize..100, noise(16)).prop_map(|(n, t)| Body::Stat(n, t)),
        (
            -2..6i32,
            -2..8i32,
            prop_oneof![Just(-1), 0..12i32, any::<i32>()],
            path()
        )
            .prop_map(|(kind, state, len, path)| {
                let len = if len == -1 { path.len() as i32 } else { len };
                Body::Event(kind, state, len, path)
            }),
    ]
}

fn reply() -> impl Strategy<Value = Reply> {
    (
        any::<bool>(),
        prop_oneof![
            4 => Just(Xid::Echo),
            2 => Just(Xid::Notification),
            1 => Just(Xid::Ping),
            1 => prop_oneof![Just(-4), Just(-8), Just(0), any::<i32>()].prop_map(Xid::Other),
        ],
        any::<i64>(),
        prop_oneof![
            4 => Just(0),
            2 => prop_oneof![Just(-101), Just(-110), Just(-112), Just(-115), Just(-4), Just(-6)],
            1 => any::<i32>(),
        ],
        body(),
        prop_oneof![6 => Just(None), 1 => length().prop_map(Some)],
        prop_oneof![6 => Just(Vec::new()), 1 => noise(16)],
        proptest::bool::weighted(0.05),
    )
        .prop_map(|(unasked, xid, zxid, err, body, length, stray, close)| Reply {
            unasked,
            xid,
            zxid,
            err,
            body,
            length,
            stray,
            close,
        })
}

fn prelude() -> impl Strategy<Value = Prelude> {
    prop_oneof![
        4 => (
            prop_oneof![4 => Just(0), 1 => any::<i32>()],
            prop_oneof![Just(2000), Just(0), Just(1), Just(-1), Just(i32::MAX), any::<i32>()],
            prop_oneof![Just(0x1234_5678_i64), Just(0), any::<i64>()],
            prop_oneof![Just((16, vec![7u8; 16])), (length(), noise(20))],
            prop_oneof![Just(vec![0]), Just(vec![1]), Just(vec![]), noise(6)],
        )
            .prop_map(|(version, timeout, session, password, readonly)| Prelude::Connect {
                version,
                timeout,
                session,
                password,
                readonly
            }),
        1 => noise(64).prop_map(Prelude::Noise),
    ]
}

fn script() -> impl Strategy<Value = Script> {
    (
        prelude(),
        proptest::collection::vec(reply(), 0..12),
        any::<bool>(),
        any::<bool>(),
        0..CALLS,
    )
        .prop_map(|(prelude, replies, chroot, lock_first, first)| Script {
            prelude,
            replies,
            chroot,
            lock_first,
            first,
        })
}

/// Reads one frame (its body), with the socket's read timeout.
fn read_frame(conn: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    conn.read_exact(&mut len).ok()?;
    let n = usize::try_from(i32::from_be_bytes(len)).ok()?.min(1 << 20);
    let mut body = vec![0u8; n];
    conn.read_exact(&mut body).ok()?;
    Some(body)
}

/// The session-expired answer to a reconnect: a connect response with
/// session id 0.
fn expired() -> Vec<u8> {
    Prelude::Connect {
        version: 0,
        timeout: 0,
        session: 0,
        password: (16, vec![0; 16]),
        readonly: vec![0],
    }
    .bytes()
}

/// Serves one connection: the script on the first, "expired" on the rest.
fn serve(mut conn: TcpStream, script: Option<&Script>) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = conn.set_nodelay(true);
    if read_frame(&mut conn).is_none() {
        return;
    }
    let Some(script) = script else {
        let _ = conn.write_all(&expired());
        return;
    };
    if conn.write_all(&script.prelude.bytes()).is_err() {
        return;
    }
    for reply in &script.replies {
        let asked = if reply.unasked {
            1
        } else {
            match read_frame(&mut conn) {
                Some(body) if body.len() >= 4 => i32::from_be_bytes([body[0], body[1], body[2], body[3]]),
                Some(_) => 0,
                None => return,
            }
        };
        if conn.write_all(&reply.bytes(asked)).is_err() || reply.close {
            return;
        }
    }
    // Then silence until the client leaves.
    while read_frame(&mut conn).is_some() {}
}

/// A fake server for one script; stops when dropped.
struct FakeServer {
    addr: String,
    stopped: Arc<AtomicBool>,
    worker: Option<thread::JoinHandle<()>>,
}

impl FakeServer {
    fn start(script: Script) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let stopped = Arc::new(AtomicBool::new(false));
        let stop = stopped.clone();
        let worker = thread::spawn(move || {
            let mut first = true;
            let mut conns = Vec::new();
            for conn in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                if let Ok(c) = conn.try_clone() {
                    conns.push(c);
                }
                let script = first.then(|| script.clone());
                first = false;
                thread::spawn(move || serve(conn, script.as_ref()));
            }
            for conn in conns {
                let _ = conn.shutdown(Shutdown::Both);
            }
        });
        FakeServer {
            addr,
            stopped,
            worker: Some(worker),
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(&self.addr);
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// Each call's deadline.
const CALL: Duration = Duration::from_secs(2);

/// A lock's write acquire on the fake server: it ends by its deadline,
/// and is never granted. The server cannot know the node's name (its token
/// is random), so a grant could only rest on garbage.
async fn acquire_on_garbage(client: &zk::Client) -> Result<(), String> {
    let lock = SharedLock::new(client.clone(), "/lock").map_err(|e| e.to_string())?;
    let wait = Duration::from_millis(500);
    let bound = wait + GIVE_UP_SLACK + Duration::from_secs(1);
    match tokio::time::timeout(bound, lock.write_timeout(wait)).await {
        Err(_) => Err(format!("an acquire of {wait:?} ran past {bound:?}")),
        Ok(Ok(Some(guard))) => Err(format!("granted on garbage: {guard:?}")),
        Ok(_) => Ok(()),
    }
}

/// Calls every kind of request the library makes (and a few more), each
/// with a deadline, and a lock's acquire first or last; an error names a
/// call that did not end by its deadline, or a grant.
/// How many kinds of call [`exercise`] makes.
const CALLS: usize = 11;

async fn exercise(client: zk::Client, lock_first: bool, first: usize) -> Result<(), String> {
    if lock_first {
        acquire_on_garbage(&client).await?;
    }
    macro_rules! call {
        ($what:expr, $fut:expr) => {
            match tokio::time::timeout(CALL, $fut).await {
                Ok(result) => result,
                Err(_) => return Err(format!("{} hung past {CALL:?}", $what)),
            }
        };
    }
    let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    // Every call comes first in some scripts: the first replies are the
    // likeliest to reach a call before the connection is lost.
    for i in (0..CALLS).map(|k| (k + first) % CALLS) {
        match i {
            0 => drop(call!("create", client.create("/a/n-", b"x", &ephemeral))),
            1 => drop(call!("get_children", client.get_children("/a"))),
            2 => drop(call!("list_children", client.list_children("/a"))),
            3 => drop(call!("get_data", client.get_data("/a"))),
            4 => drop(call!("check_stat", client.check_stat("/x"))),
            5 => {
                if let Ok((_, _, watcher)) =
                    call!("get_and_watch_children", client.get_and_watch_children("/a"))
                {
                    // A notification may or may not come; it must not panic.
                    let _ = tokio::time::timeout(Duration::from_millis(20), watcher.changed()).await;
                }
            }
            6 => {
                if let Ok((_, watcher)) = call!("check_and_watch_stat", client.check_and_watch_stat("/x")) {
                    let _ = tokio::time::timeout(Duration::from_millis(20), watcher.changed()).await;
                }
            }
            7 => {
                if let Ok(mut watcher) =
                    call!("watch", client.watch("/", zk::AddWatchMode::PersistentRecursive))
                {
                    let _ = tokio::time::timeout(Duration::from_millis(20), watcher.changed()).await;
                }
            }
            8 => {
                let mut multi = client.new_multi_writer();
                let _ = multi.add_check_version("/a", 1);
                let _ = multi.add_delete("/a/n-0000000001", None);
                drop(call!("multi", multi.commit()));
            }
            9 => drop(call!("delete", client.delete("/a/n-0000000001", None))),
            _ => drop(call!("sync", client.sync("/a"))),
        }
    }
    if !lock_first {
        acquire_on_garbage(&client).await?;
    }
    Ok(())
}

/// Runs one script: the client connects (or fails to) and calls; returns
/// an error if anything panicked or hung.
fn run(rt: &tokio::runtime::Runtime, script: Script) -> Result<(), String> {
    // Panics anywhere in the process: the client's task, the fake server, the test.
    let panics = panics_so_far();
    let (chroot, lock_first, first) = (script.chroot, script.lock_first, script.first);
    let server = FakeServer::start(script);
    let connect = if chroot {
        format!("{}/root", server.addr)
    } else {
        server.addr.clone()
    };
    let started = Instant::now();
    let task = rt.spawn(async move {
        let client = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(2))
            .with_connection_timeout(Duration::from_millis(300))
            .connect(&connect);
        match tokio::time::timeout(Duration::from_secs(4), client).await {
            Err(_) => Err("connect hung past 4 s".to_owned()),
            Ok(Err(_)) => Ok(()),
            Ok(Ok(client)) => exercise(client, lock_first, first).await,
        }
    });
    let outcome = rt.block_on(async {
        match tokio::time::timeout(Duration::from_secs(40), task).await {
            Err(_) => Err("the case hung".to_owned()),
            Ok(Err(e)) => Err(format!("the client's task failed: {e}")),
            Ok(Ok(result)) => result,
        }
    });
    drop(server);
    let took = started.elapsed();
    let panicked = panics_since(panics);
    if !panicked.is_empty() {
        return Err(format!("{} panic(s): {panicked:#?}", panicked.len()));
    }
    outcome.map_err(|e| format!("{e} (after {took:?})"))
}

#[test]
fn garbled_replies_never_panic_or_hang() {
    let rt = zk_rwlock_fixtures::multi_thread_runtime(2);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        // `FUZZ_CASES=5000` for a longer run.
        cases: zk_rwlock_fixtures::env_or("FUZZ_CASES", 300),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/garbled_replies.txt",
        ))),
        ..ProptestConfig::default()
    });
    let started = Instant::now();
    runner
        .run(&script(), |script| {
            let shown = format!("{script:?}");
            run(&rt, script).map_err(|e| TestCaseError::fail(format!("{e}\nscript: {shown}")))
        })
        .unwrap();
    eprintln!("{} scripts in {:?}", runner.config().cases, started.elapsed());
}

/// Runs `call` on a session of a fake server that answers each request
/// with `body` (and no error); returns what the call returned, or how its
/// task failed. Fails the test on a panic anywhere.
fn answered_with<T, F, Fut>(body: Body, call: F) -> Result<T, tokio::task::JoinError>
where
    F: FnOnce(zk::Client) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let rt = zk_rwlock_fixtures::multi_thread_runtime(2);
    let reply = Reply {
        unasked: false,
        xid: Xid::Echo,
        zxid: 1,
        err: 0,
        body,
        length: None,
        stray: Vec::new(),
        close: false,
    };
    let server = FakeServer::start(Script {
        prelude: Prelude::session(),
        replies: vec![reply; 3],
        chroot: false,
        lock_first: false,
        first: 0,
    });
    let panics = panics_so_far();
    let addr = server.addr.clone();
    let result = rt.block_on(async move {
        let client = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(2))
            .connect(&addr)
            .await
            .expect("the fake server's session");
        let task = tokio::spawn(call(client));
        tokio::time::timeout(CALL, task).await.expect("the call ends")
    });
    assert_eq!(panics_since(panics), Vec::<String>::new(), "no panic");
    result
}

/// Found by the fuzzing: a `create` reply whose path is empty made the
/// client panic on the caller's task (`strip_root_path` sliced the empty
/// path); it is an error now (vendor patch 10).
#[test]
fn an_empty_created_path_is_an_error() {
    let created = answered_with(Body::Buffer(0, Vec::new()), |client| async move {
        let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        client.create("/a/n-", b"x", &ephemeral).await.map(|(_, seq)| seq)
    })
    .expect("the create's task did not panic");
    assert!(
        matches!(created, Err(zk::Error::UnexpectedError(_))),
        "{created:?}"
    );
}

/// Found by the garbling proxy (`tests/waiting/garbled_wire.rs`, a length
/// prefix made smaller): a `getData` reply shorter than a stat made the
/// client panic on the caller's task (`attempt to subtract with
/// overflow`); it is an error now (vendor patch 11).
#[test]
fn a_short_get_data_reply_is_an_error() {
    for len in [0, 3, 40, 67, 68, 71] {
        let got = answered_with(Body::Noise(vec![0; len]), |client| async move {
            client.get_data("/a").await
        })
        .expect("the call's task did not panic");
        assert!(
            matches!(got, Err(zk::Error::UnexpectedError(_))),
            "{len} bytes: {got:?}"
        );
    }
}

/// A reply frame: the header (`xid`, zxid 1, no error) and `body`.
fn reply_frame(xid: i32, body: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(20 + body.len());
    frame.extend_from_slice(&(16 + body.len() as i32).to_be_bytes());
    frame.extend_from_slice(&xid.to_be_bytes());
    frame.extend_from_slice(&1i64.to_be_bytes());
    frame.extend_from_slice(&0i32.to_be_bytes());
    frame.extend_from_slice(body);
    frame
}

/// ZooKeeper answers a session's requests in order. A reply that answers a
/// later request while an earlier one waits (its xid garbled into another
/// pending request's) is refused: the connection is dropped and both calls
/// fail, instead of the later call taking the earlier one's answer
/// (vendor patch 12).
#[test]
fn a_reply_out_of_request_order_is_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        read_frame(&mut conn).expect("the connect request");
        let prelude = Prelude::session();
        conn.write_all(&prelude.bytes()).unwrap();
        // The two getData requests (pings answered as they come).
        let mut xids = Vec::new();
        while xids.len() < 2 {
            let body = read_frame(&mut conn).expect("a request");
            let xid = i32::from_be_bytes([body[0], body[1], body[2], body[3]]);
            if xid == -2 {
                conn.write_all(&reply_frame(-2, &[])).unwrap();
            } else {
                xids.push(xid);
            }
        }
        // The first request's answer, data "first", under the second's xid.
        let mut body = Vec::new();
        body.extend_from_slice(&5i32.to_be_bytes());
        body.extend_from_slice(b"first");
        body.extend_from_slice(&[0u8; 68]);
        let _ = conn.write_all(&reply_frame(xids[1], &body));
        // Then whatever comes, until the client leaves.
        while read_frame(&mut conn).is_some() {}
        xids
    });
    let rt = zk_rwlock_fixtures::multi_thread_runtime(2);
    let panics = panics_so_far();
    let (a, b) = rt.block_on(async move {
        let client = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(2))
            .connect(&addr)
            .await
            .expect("the fake server's session");
        let calls = async { tokio::join!(client.get_data("/a"), client.get_data("/b")) };
        let out = tokio::time::timeout(CALL, calls).await.expect("both calls end");
        drop(client);
        out
    });
    assert_eq!(panics_since(panics), Vec::<String>::new(), "no panic");
    assert!(
        matches!(b, Err(zk::Error::UnexpectedError(_))),
        "the second call took the first one's answer: {b:?}"
    );
    assert!(a.is_err(), "the first call has no answer: {a:?}");
    let xids = server.join().expect("the fake server");
    assert!(xids[0] < xids[1], "{xids:?}");
}

/// A child count far beyond the reply's bytes (a garbled count, or a
/// length prefix garbled so that the count is read from a name's text:
/// `"web0"` reads as 2 004 050 480) made the client reserve room for that
/// many names before reading one: 48 GiB for `i32::MAX`, an allocation
/// that fails and aborts the whole process (not even a panic). It is an
/// error now, as any count the reply's bytes do not hold (vendor patch 21).
#[test]
fn a_child_count_beyond_the_reply_is_an_error_not_an_abort() {
    for count in [i32::MAX, 0x7765_6230, 0x0100_0000] {
        let listed = answered_with(
            Body::Vector(count, vec![(1, b"a".to_vec())]),
            |client| async move { client.list_children("/a").await },
        )
        .expect("the call's task did not panic");
        assert!(
            matches!(listed, Err(zk::Error::UnmarshalError { .. })),
            "count {count}: {listed:?}"
        );
        let got = answered_with(Body::Vector(count, Vec::new()), |client| async move {
            client.get_children("/a").await
        })
        .expect("the call's task did not panic");
        assert!(
            matches!(got, Err(zk::Error::UnmarshalError { .. })),
            "count {count}: {got:?}"
        );
    }
}

/// A reply refused for its xid (a frame read from the middle of another
/// once a length prefix was garbled) carries a garbage zxid. The client
/// took it for the latest zxid it had seen before refusing the reply, and
/// sent it as the last zxid seen when it connected again; a ZooKeeper
/// server refuses a client that has seen a zxid from its future, so the
/// session could no longer reconnect anywhere and was lost. Only a reply
/// that answers a request counts now (vendor patch 21).
#[test]
fn a_refused_reply_does_not_raise_the_last_zxid_seen() {
    const GARBAGE_ZXID: i64 = 0x7fff_0000_0000_0000;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = thread::spawn(move || {
        let prelude = Prelude::session();
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        read_frame(&mut conn).expect("the connect request");
        conn.write_all(&prelude.bytes()).unwrap();
        // The getData request, answered under an xid never sent, zxid garbage.
        loop {
            let body = read_frame(&mut conn).expect("a request");
            if i32::from_be_bytes([body[0], body[1], body[2], body[3]]) != -2 {
                break;
            }
            conn.write_all(&reply_frame(-2, &[])).unwrap();
        }
        let mut reply = 16i32.to_be_bytes().to_vec();
        reply.extend_from_slice(&0x3fff_fff0i32.to_be_bytes());
        reply.extend_from_slice(&GARBAGE_ZXID.to_be_bytes());
        reply.extend_from_slice(&0i32.to_be_bytes());
        let _ = conn.write_all(&reply);
        // The client drops the connection and connects again: its last zxid seen.
        let (mut again, _) = listener.accept().unwrap();
        again.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let connect = read_frame(&mut again).expect("the second connect request");
        let seen = i64::from_be_bytes(connect[4..12].try_into().unwrap());
        let _ = again.write_all(&prelude.bytes());
        drop(conn);
        seen
    });
    let rt = zk_rwlock_fixtures::multi_thread_runtime(2);
    let panics = panics_so_far();
    let got = rt.block_on(async move {
        let client = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(2))
            .connect(&addr)
            .await
            .expect("the fake server's session");
        let got = tokio::time::timeout(CALL, client.get_data("/a"))
            .await
            .expect("the call ends");
        // Time for the client to connect again.
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(client);
        got
    });
    assert_eq!(panics_since(panics), Vec::<String>::new(), "no panic");
    assert!(got.is_err(), "the refused reply answered nothing: {got:?}");
    let seen = server.join().expect("the fake server");
    assert!(seen < GARBAGE_ZXID, "the client says it saw zxid {seen:#x}");
}
