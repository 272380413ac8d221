//! zk-rwlock and the real peer libraries on one lock path: Apache Curator
//! 5.4 (Debian's jars; tests/peers/Contender.java, compiled here with javac)
//! and kazoo 2.11 (the venv scripts/ensure-peers.sh makes;
//! tests/peers/contender.py). Every contender appends "A <R|W> <name>" to
//! one log file when it holds and "R <R|W> <name>" before it releases; the
//! file's order is the order of those moments, and the checker fails on a
//! writer that holds beside anyone.

use zk_rwlock_fixtures as support;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use support::proxy::{op, Proxy};
use support::{children, client_on, eventually, server, settles_to, unique_path, wait_nodes, wait_watching};
use zk_rwlock::{zk, Layout, Mode, NodeName, SharedLock};

const WITHIN: Duration = Duration::from_secs(30);
const ROUNDS: usize = 8;
const HOLD_MS: u64 = 15;

/// The peers: a compiled Curator contender and kazoo's python.
struct Peers {
    java_classpath: String,
    python: PathBuf,
    dir: PathBuf,
}

fn missing(what: &str) -> ! {
    panic!(
        "these tests lock against Apache Curator 5.4 and kazoo 2.11: {what}\n\
         install both with `bash scripts/ensure-peers.sh` (scripts/test.sh runs it)"
    )
}

fn peers() -> &'static Peers {
    static PEERS: OnceLock<Peers> = OnceLock::new();
    PEERS.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let jars = std::env::var("ZK_RWLOCK_JAR_DIR").unwrap_or_else(|_| "/usr/share/java".into());
        let mut classpath = Vec::new();
        for jar in [
            "curator-recipes",
            "curator-framework",
            "curator-client",
            "guava",
            "zookeeper",
            "zookeeper-jute",
            "slf4j-api",
            "slf4j-simple",
        ] {
            let path = Path::new(&jars).join(format!("{jar}.jar"));
            if !path.is_file() {
                missing(&format!("{} is missing", path.display()));
            }
            classpath.push(path.display().to_string());
        }
        let python = root.join("bench/peers/kazoo/.venv/bin/python");
        let version = Command::new(&python)
            .args(["-c", "import kazoo.version as v; print(v.__version__)"])
            .output();
        match version {
            Ok(out) if String::from_utf8_lossy(&out.stdout).trim() == "2.11.0" => {}
            _ => missing(&format!("{} has no kazoo 2.11.0", python.display())),
        }
        let dir = std::env::temp_dir().join(format!("zk-rwlock-interop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let javac = std::env::var("JAVAC").unwrap_or_else(|_| "javac".into());
        let out = Command::new(&javac)
            .arg("-nowarn")
            .arg("-d")
            .arg(&dir)
            .arg("-cp")
            .arg(classpath.join(":"))
            .arg(root.join("tests/peers/Contender.java"))
            .output()
            .unwrap_or_else(|e| missing(&format!("cannot run {javac}: {e}")));
        assert!(
            dir.join("Contender.class").is_file(),
            "javac failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        classpath.insert(0, dir.display().to_string());
        Peers {
            java_classpath: classpath.join(":"),
            python,
            dir,
        }
    })
}

/// Starts the Curator contenders, one per kind (`read`, `write`, `mutex`).
fn curator(path: &str, log: &Path, kinds: &[&str]) -> std::process::Child {
    let p = peers();
    Command::new(std::env::var("JAVA").unwrap_or_else(|_| "java".into()))
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=error")
        .arg("-cp")
        .arg(&p.java_classpath)
        .arg("Contender")
        .arg(server().connect_string())
        .arg(path)
        .arg(log)
        .arg(ROUNDS.to_string())
        .arg(HOLD_MS.to_string())
        .args(kinds)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("java runs")
}

/// Starts the kazoo contenders, one per kind (`read`, `write`, `lock`,
/// `read+native`, `write+native`).
fn kazoo(path: &str, log: &Path, kinds: &[&str]) -> std::process::Child {
    let p = peers();
    Command::new(&p.python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/contender.py"))
        .arg(server().connect_string())
        .arg(path)
        .arg(log)
        .arg(ROUNDS.to_string())
        .arg(HOLD_MS.to_string())
        .args(kinds)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python runs")
}

/// Waits for a peer process; it must succeed.
async fn finished(child: std::process::Child) -> Output {
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || child.wait_with_output()),
    )
    .await
    .expect("the peer process finishes")
    .unwrap()
    .unwrap();
    assert!(
        out.status.success(),
        "peer process failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn append(log: &Path, line: &str) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
        .unwrap();
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
}

/// One zk-rwlock contender: `ROUNDS` holds in `layout`, each `HOLD_MS`.
/// Through `proxy`, each of its first creates loses its connection after
/// the server has it (the node must be found by its token).
async fn ours(path: String, log: PathBuf, layout: Layout, mode: Mode, name: String, proxy: Option<Proxy>) {
    let connect = proxy
        .as_ref()
        .map_or_else(|| server().connect_string(), |p| p.addr().to_owned());
    let lock = SharedLock::builder(client_on(&connect).await, &path)
        .layout(layout)
        .identity(&name)
        .build()
        .unwrap();
    let letter = mode.letter();
    // Start once a peer holds, so that the holds interleave.
    eventually("a peer held the lock", Duration::from_secs(60), || async {
        std::fs::read_to_string(&log).is_ok_and(|t| t.lines().any(|l| !l.contains(" rust-")))
    })
    .await;
    for round in 0..ROUNDS {
        if let Some(proxy) = proxy.as_ref().filter(|_| round < 3) {
            proxy.cut_after_request(&[op::CREATE, op::CREATE2]);
        }
        let guard = tokio::time::timeout(Duration::from_secs(60), lock.acquire(mode))
            .await
            .unwrap_or_else(|_| panic!("{name}: not granted within 60 s"))
            .unwrap();
        let node: NodeName = guard.node().rsplit('/').next().unwrap().parse().unwrap();
        assert_eq!(node.layout(), layout, "{name} writes its layout");
        append(&log, &format!("A {letter} {name}"));
        tokio::time::sleep(Duration::from_millis(HOLD_MS)).await;
        append(&log, &format!("R {letter} {name}"));
        guard.release().await.unwrap();
    }
    if let Some(proxy) = &proxy {
        assert_eq!(proxy.fired(), 3, "{name}: three creates lost their connection");
    }
}

/// The holds in `log`: fails on a writer beside anyone, a release without
/// its hold, or a hold never released. Returns the holds per contender.
fn check(log: &str) -> Result<BTreeMap<String, usize>, String> {
    let mut holding: BTreeMap<&str, &str> = BTreeMap::new();
    let mut holds = BTreeMap::new();
    for (i, line) in log.lines().enumerate() {
        let mut words = line.split(' ');
        let (Some(event), Some(mode), Some(name)) = (words.next(), words.next(), words.next()) else {
            return Err(format!("line {}: bad line {line:?}", i + 1));
        };
        match event {
            "A" => {
                let writer_beside = holding.values().any(|m| *m == "W");
                if (mode == "W" && !holding.is_empty()) || writer_beside {
                    return Err(format!(
                        "line {}: {name} ({mode}) holds beside {holding:?}",
                        i + 1
                    ));
                }
                holding.insert(name, mode);
                *holds.entry(name.to_owned()).or_insert(0) += 1;
            }
            "R" if holding.remove(name).is_some() => {}
            _ => return Err(format!("line {}: {line:?} without a hold", i + 1)),
        }
    }
    if !holding.is_empty() {
        return Err(format!("never released: {holding:?}"));
    }
    Ok(holds)
}

#[test]
fn the_checker_catches_overlaps() {
    assert!(check("A R a\nA R b\nR R a\nR R b\n").is_ok());
    assert!(check("A W a\nR W a\nA W b\nR W b\n").is_ok());
    assert!(check("A W a\nA R b\nR R b\nR W a\n").is_err());
    assert!(check("A R a\nA W b\nR W b\nR R a\n").is_err());
    assert!(check("A W a\nA W b\n").is_err());
    assert!(check("R W a\n").is_err());
    assert!(check("A W a\n").is_err());
}

/// Runs `peer` (already started) and our contenders on `path`; checks the
/// log and that every contender held `ROUNDS` times.
async fn run_mixed(
    path: &str,
    log: &Path,
    peer: std::process::Child,
    ours_: Vec<tokio::task::JoinHandle<()>>,
    peer_names: usize,
) {
    for task in ours_ {
        tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("our contender finishes")
            .expect("our contender succeeds");
    }
    finished(peer).await;
    let text = std::fs::read_to_string(log).unwrap();
    let holds = check(&text).unwrap_or_else(|e| panic!("{path}: {e}\n{text}"));
    assert_eq!(holds.len(), peer_names, "every contender held: {holds:?}");
    assert!(holds.values().all(|n| *n == ROUNDS), "{holds:?}");
    // The libraries took turns: a hold of ours follows a peer's, and the
    // other way round, several times.
    let turns = text
        .lines()
        .filter(|l| l.starts_with('A'))
        .map(|l| l.contains(" rust-"))
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0] != w[1])
        .count();
    assert!(
        turns >= 4,
        "{path}: the holds hardly interleave ({turns} turns):\n{text}"
    );
    let direct = client_on(&server().connect_string()).await;
    settles_to(&direct, path, &[]).await;
}

fn log_file(name: &str) -> PathBuf {
    let log = peers().dir.join(format!("{name}.log"));
    let _ = std::fs::remove_file(&log);
    log
}

fn spawn_ours(
    path: &str,
    log: &Path,
    layout: Layout,
    mode: Mode,
    name: &str,
    proxy: Option<Proxy>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(ours(
        path.to_owned(),
        log.to_owned(),
        layout,
        mode,
        name.to_owned(),
        proxy,
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn curator_read_write_lock_and_ours_never_overlap() {
    let path = unique_path("interop-curator");
    let log = log_file("curator");
    let peer = curator(&path, &log, &["write", "write", "read"]);
    let proxy = Proxy::start(&server().connect_string());
    let ours_ = vec![
        spawn_ours(&path, &log, Layout::Curator, Mode::Write, "rust-w0", None),
        spawn_ours(&path, &log, Layout::Curator, Mode::Write, "rust-w1", Some(proxy)),
        spawn_ours(&path, &log, Layout::Curator, Mode::Read, "rust-r0", None),
    ];
    run_mixed(&path, &log, peer, ours_, 6).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn curator_mutex_and_ours_never_overlap() {
    let path = unique_path("interop-curator-mutex");
    let log = log_file("curator-mutex");
    let peer = curator(&path, &log, &["mutex", "mutex"]);
    let proxy = Proxy::start(&server().connect_string());
    let ours_ = vec![
        spawn_ours(&path, &log, Layout::CuratorMutex, Mode::Write, "rust-m0", None),
        spawn_ours(
            &path,
            &log,
            Layout::CuratorMutex,
            Mode::Write,
            "rust-m1",
            Some(proxy),
        ),
    ];
    run_mixed(&path, &log, peer, ours_, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kazoo_locks_and_ours_never_overlap() {
    let path = unique_path("interop-kazoo");
    let log = log_file("kazoo");
    let peer = kazoo(&path, &log, &["write", "write", "read"]);
    let proxy = Proxy::start(&server().connect_string());
    let ours_ = vec![
        spawn_ours(&path, &log, Layout::Kazoo, Mode::Write, "rust-w0", None),
        spawn_ours(&path, &log, Layout::Kazoo, Mode::Write, "rust-w1", Some(proxy)),
        spawn_ours(&path, &log, Layout::Kazoo, Mode::Read, "rust-r0", None),
    ];
    run_mixed(&path, &log, peer, ours_, 6).await;
}

/// kazoo's `Lock` ignores readers, so it takes part only among writers.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kazoo_plain_lock_and_our_writers_never_overlap() {
    let path = unique_path("interop-kazoo-lock");
    let log = log_file("kazoo-lock");
    let peer = kazoo(&path, &log, &["lock", "write"]);
    let ours_ = vec![spawn_ours(
        &path,
        &log,
        Layout::Kazoo,
        Mode::Write,
        "rust-w0",
        None,
    )];
    run_mixed(&path, &log, peer, ours_, 3).await;
}

/// The reverse direction without a layout: kazoo told of the native markers
/// (`extra_lock_patterns`) against native zk-rwlock contenders.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kazoo_with_extra_lock_patterns_and_native_contenders_never_overlap() {
    let path = unique_path("interop-kazoo-native");
    let log = log_file("kazoo-native");
    let peer = kazoo(&path, &log, &["write+native", "read+native"]);
    let ours_ = vec![
        spawn_ours(&path, &log, Layout::Native, Mode::Write, "rust-w0", None),
        spawn_ours(&path, &log, Layout::Native, Mode::Read, "rust-r0", None),
    ];
    run_mixed(&path, &log, peer, ours_, 4).await;
}

/// What the peers' own rules let through on one path, as docs/interop.md says:
/// Curator's mutex and its read/write lock's write lock hold together, and
/// so do kazoo's `ReadLock` and `Lock`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_recipes_that_do_not_exclude_each_other() {
    let p = peers();
    let path = unique_path("interop-probe-curator");
    let out = Command::new(std::env::var("JAVA").unwrap_or_else(|_| "java".into()))
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=error")
        .arg("-cp")
        .arg(&p.java_classpath)
        .arg("Contender")
        .arg(server().connect_string())
        .arg(&path)
        .arg("probe-mutex-then-writer")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "writer granted: true",
        "{out:?}"
    );
    let path = unique_path("interop-probe-kazoo");
    let out = Command::new(&p.python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/contender.py"))
        .arg(server().connect_string())
        .arg(&path)
        .arg("probe-reader-then-lock")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "lock granted: True",
        "{out:?}"
    );
}

/// A peer-layout node this session creates: the data of a node in a peer's
/// layout is the identity (kazoo keeps its identifier there).
#[tokio::test]
async fn connection_cut_during_create_finds_the_node_in_every_layout() {
    for layout in Layout::ALL {
        let proxy = Proxy::start(&server().connect_string());
        let path = unique_path(&format!("interop-cut-{layout}"));
        let c = client_on(proxy.addr()).await;
        let lock = SharedLock::builder(c.clone(), &path)
            .layout(layout)
            .identity("cutter")
            .build()
            .unwrap();
        let direct = client_on(&server().connect_string()).await;
        support::mkdir_open(&direct, &path).await;
        // A peer's writer holds: a kazoo `__lock__` node, made directly.
        let (_, seq) = direct
            .create(
                &format!("{path}/0123456789abcdef0123456789abcdef__lock__"),
                b"peer",
                &zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all()),
            )
            .await
            .unwrap();
        let holder = format!("{path}/0123456789abcdef0123456789abcdef__lock__{seq}");
        proxy.cut_after_request(&[op::CREATE, op::CREATE2]);
        let l = lock.clone();
        let waiter = tokio::spawn(async move { l.write().await });
        eventually("the cut fired", WITHIN, || async { proxy.fired() == 1 }).await;
        wait_watching(server(), &holder, c.session_id().0).await;
        let kids = wait_nodes(&direct, &path, 2).await;
        assert_eq!(
            kids.len(),
            2,
            "{layout}: holder and one node of ours, no duplicate: {kids:?}"
        );
        let mine = kids
            .iter()
            .find(|k| !holder.ends_with(k.as_str()))
            .unwrap()
            .clone();
        let name: NodeName = mine.parse().unwrap();
        assert_eq!((name.layout(), name.mode()), (layout, Mode::Write), "{mine}");
        let (data, stat) = direct.get_data(&format!("{path}/{mine}")).await.unwrap();
        let want: &[u8] = if layout == Layout::Native { b"" } else { b"cutter" };
        assert_eq!(data, want, "{layout}: node data");
        assert_eq!(stat.ephemeral_owner, c.session_id().0);
        assert!(!waiter.is_finished(), "{layout}: waits behind the peer's writer");
        direct.delete(&holder, None).await.unwrap();
        let g = support::joined(WITHIN, waiter).await.unwrap();
        assert_eq!(children(&direct, &path).await, vec![mine.clone()], "{layout}");
        g.release().await.unwrap();
        settles_to(&direct, &path, &[]).await;
    }
}

/// The Curator mutex layout has no readers.
#[tokio::test]
async fn curator_mutex_layout_refuses_read_locks() {
    let path = unique_path("interop-mutex-read");
    let lock = SharedLock::builder(client_on(&server().connect_string()).await, &path)
        .layout(Layout::CuratorMutex)
        .build()
        .unwrap();
    let err = lock.read().await.unwrap_err();
    assert!(
        matches!(
            err,
            zk_rwlock::Error::UnsupportedMode {
                layout: Layout::CuratorMutex,
                mode: Mode::Read
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("curator-mutex"), "{err}");
    assert_eq!(lock.layout(), Layout::CuratorMutex);
}

/// Behind a peer's holder: a write to its node (a revocation request, or
/// anything) grants nothing; the end of the peer's session does, once the
/// peer's writer ahead of it is gone as well. Curator's and kazoo's nodes
/// made directly, in two sessions of their own.
#[tokio::test]
async fn writes_on_a_peer_holder_grant_nothing_its_session_end_does() {
    let path = unique_path("interop-peer-holder");
    let direct = client_on(&server().connect_string()).await;
    support::mkdir_open(&direct, &path).await;
    let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let peer_a = client_on(&server().connect_string()).await;
    let (_, seq) = peer_a
        .create(
            &format!("{path}/_c_7f3a0c1e-9b2d-4f60-a1b2-c3d4e5f60718-lock-"),
            b"",
            &ephemeral,
        )
        .await
        .unwrap();
    let holder = format!("{path}/_c_7f3a0c1e-9b2d-4f60-a1b2-c3d4e5f60718-lock-{seq}");
    let peer_b = client_on(&server().connect_string()).await;
    let (_, seq) = peer_b
        .create(
            &format!("{path}/0123456789abcdef0123456789abcdef__lock__"),
            b"",
            &ephemeral,
        )
        .await
        .unwrap();
    let second = format!("{path}/0123456789abcdef0123456789abcdef__lock__{seq}");
    let c = client_on(&server().connect_string()).await;
    let lock = SharedLock::builder(c.clone(), &path)
        .layout(Layout::Kazoo)
        .build()
        .unwrap();
    let reader = tokio::spawn({
        let lock = lock.clone();
        async move { lock.read().await }
    });
    // The reader waits on the last writer before it, kazoo's.
    wait_watching(server(), &second, c.session_id().0).await;
    direct.set_data(&holder, b"__REVOKE__", None).await.unwrap();
    direct.set_data(&second, b"__REVOKE__", None).await.unwrap();
    wait_watching(server(), &second, c.session_id().0).await;
    assert!(!reader.is_finished(), "a write on a peer's node grants nothing");
    // kazoo's writer goes with its session; Curator's mutex still holds.
    drop(peer_b);
    wait_watching(server(), &holder, c.session_id().0).await;
    assert!(!reader.is_finished(), "Curator's mutex still holds");
    drop(peer_a);
    let guard = support::joined(WITHIN, reader).await.unwrap();
    assert_eq!(children(&direct, &path).await.len(), 1);
    guard.release().await.unwrap();
    settles_to(&direct, &path, &[]).await;
}

/// Curator 5.5 and later downgrade: the thread holding the write lock
/// takes the read lock with a plain ephemeral `__READ__` node carrying the
/// writer's sequence, then releases the write lock. A writer of ours
/// queued behind must wait for that reader (Curator 5.4, Debian's, has no
/// such node: nodes made directly here, as 5.5 makes them).
#[tokio::test]
async fn a_writer_behind_a_curator_writer_waits_for_its_downgraded_reader() {
    let path = unique_path("interop-downgrade");
    let direct = client_on(&server().connect_string()).await;
    support::mkdir_open(&direct, &path).await;
    let curator = client_on(&server().connect_string()).await;
    let prefix = format!("{path}/_c_7f3a0c1e-9b2d-4f60-a1b2-c3d4e5f60718-");
    let (_, seq) = curator
        .create(
            &format!("{prefix}__WRIT__"),
            b"",
            &zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let writer = format!("{prefix}__WRIT__{seq}");
    let c = client_on(&server().connect_string()).await;
    let lock = SharedLock::builder(c.clone(), &path)
        .layout(Layout::Curator)
        .build()
        .unwrap();
    let ours = tokio::spawn({
        let lock = lock.clone();
        async move { lock.write().await }
    });
    wait_watching(server(), &writer, c.session_id().0).await;
    let reader = format!("{prefix}__READ__{seq}");
    curator
        .create(
            &reader,
            b"",
            &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    curator.delete(&writer, None).await.unwrap();
    wait_watching(server(), &reader, c.session_id().0).await;
    assert!(!ours.is_finished(), "the downgraded reader holds");
    curator.delete(&reader, None).await.unwrap();
    let guard = support::joined(WITHIN, ours).await.unwrap();
    guard.release().await.unwrap();
    settles_to(&direct, &path, &[]).await;
}

/// kazoo has no revocation and keeps its contender's identifier as the
/// node's data (kazoo's `Lock.contenders()` returns it): `revoke_holders`
/// and `revoke` never write to a kazoo node; a Curator holder is asked
/// (`__REVOKE__` is Curator's own message). Nodes made as kazoo 2.11 and
/// Curator make them.
#[tokio::test]
async fn revocation_leaves_kazoo_holders_alone_and_asks_curator_holders() {
    let path = unique_path("interop-revoke-peers");
    let peer = client_on(&server().connect_string()).await;
    support::mkdir_open(&peer, &path).await;
    let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let (_, seq) = peer
        .create(
            &format!("{path}/0123456789abcdef0123456789abcdef__rlock__"),
            b"billing-worker-7",
            &ephemeral,
        )
        .await
        .unwrap();
    let kazoo_node = format!("{path}/0123456789abcdef0123456789abcdef__rlock__{seq}");
    let (_, seq) = peer
        .create(
            &format!("{path}/_c_7f3a0c1e-9b2d-4f60-a1b2-c3d4e5f60718-__READ__"),
            b"10.0.0.1",
            &ephemeral,
        )
        .await
        .unwrap();
    let curator_node = format!("{path}/_c_7f3a0c1e-9b2d-4f60-a1b2-c3d4e5f60718-__READ__{seq}");
    let lock = SharedLock::new(client_on(&server().connect_string()).await, &path).unwrap();
    let revoked = lock.revoke_holders().await.unwrap();
    assert_eq!(revoked.asked, vec![curator_node.clone()]);
    assert_eq!(revoked.not_revocable, vec![kazoo_node.clone()]);
    assert!(revoked.refused.is_empty(), "{:?}", revoked.refused);
    assert!(!lock.revoke(&kazoo_node).await.unwrap());
    let (data, _) = peer.get_data(&kazoo_node).await.unwrap();
    assert_eq!(data, b"billing-worker-7");
    let (data, _) = peer.get_data(&curator_node).await.unwrap();
    assert_eq!(data, zk_rwlock::REVOKE_PAYLOAD);
}
