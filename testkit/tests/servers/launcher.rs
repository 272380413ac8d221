//! Integration tests of the throwaway ZooKeeper launcher, against real
//! servers (needs Java and the ZooKeeper 3.8 jars; see `zk_rwlock_testkit::launcher`).

use std::path::Path;
use std::time::{Duration, Instant};

use zk_rwlock_testkit::launcher::{LaunchError, ServerMode, ZkCluster};
use zk_rwlock_testkit::poll;

fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// The state letter of process `pid` in `/proc/<pid>/stat` (`T`: stopped).
fn proc_state(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().next().map(str::to_owned)
}

fn port_accepts(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

fn leaders(zk: &ZkCluster) -> Vec<usize> {
    (0..zk.members())
        .filter(|&i| zk.mode(i).is_some_and(ServerMode::is_leader))
        .collect()
}

#[test]
fn cluster_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ZkCluster>();
    assert_send_sync::<LaunchError>();
}

#[test]
fn standalone_lifecycle() {
    let t0 = Instant::now();
    let mut zk = ZkCluster::standalone().expect("start standalone ZooKeeper");
    eprintln!("standalone serving after {:?}", t0.elapsed());

    assert_eq!(zk.members(), 1);
    assert_eq!(zk.four_letter(0, "ruok").expect("ruok"), "imok");
    let port = zk.client_port(0);
    assert_ne!(port, 0);
    assert_eq!(zk.connect_string(), format!("127.0.0.1:{port}"));
    assert_eq!(zk.member_connect_string(0), zk.connect_string());
    assert_eq!(zk.mode(0), Some(ServerMode::Standalone));
    assert_eq!(zk.leader(), Some(0));
    assert_eq!(zk.tick_time(), Duration::from_millis(200));
    let conf = zk.four_letter(0, "conf").expect("conf");
    assert!(conf.contains("minSessionTimeout=400"), "{conf}");
    assert!(conf.contains("maxSessionTimeout=4000"), "{conf}");
    assert!(zk.log_path(0).is_file());

    // stop: process gone and port closed; start again on the same port.
    let pid = zk.pid(0).expect("pid of a running member");
    zk.stop(0).expect("stop");
    assert!(!zk.is_running(0));
    assert_eq!(zk.pid(0), None);
    assert!(!process_exists(pid));
    assert!(!port_accepts(port));
    assert!(zk.four_letter(0, "ruok").is_err());
    assert_eq!(zk.leader(), None);
    zk.stop(0).expect("stopping a stopped member is a no-op");

    let t1 = Instant::now();
    zk.start(0).expect("start again");
    eprintln!("standalone restart serving after {:?}", t1.elapsed());
    assert_eq!(zk.client_port(0), port);
    assert_eq!(zk.four_letter(0, "ruok").expect("ruok"), "imok");

    // pause: no answers; resume: answers again. Both have taken effect
    // when they return.
    let pid = zk.pid(0).expect("pid");
    zk.pause(0).expect("pause");
    assert!(zk.is_paused(0));
    assert_eq!(proc_state(pid).as_deref(), Some("T"), "stopped after pause");
    let paused = zk.four_letter_timeout(0, "ruok", Duration::from_millis(300));
    assert!(
        matches!(paused, Err(LaunchError::FourLetter { .. })),
        "{paused:?}"
    );
    assert_eq!(zk.mode(0), None);
    assert!(matches!(
        zk.wait_serving(0, Duration::from_secs(1)),
        Err(LaunchError::InvalidState { .. })
    ));
    zk.resume(0).expect("resume");
    assert!(!zk.is_paused(0));
    assert_ne!(proc_state(pid).as_deref(), Some("T"), "running after resume");
    zk.wait_serving(0, Duration::from_secs(10))
        .expect("serving after resume");
    assert_eq!(zk.four_letter(0, "ruok").expect("ruok"), "imok");

    // restart = stop + start.
    zk.restart(0).expect("restart");
    assert_eq!(zk.leader(), Some(0));

    // kill, then Drop of a cluster with a stopped member and a paused one
    // below; here: Drop removes the directory and the process.
    let dir = zk.dir().to_path_buf();
    let pid = zk.pid(0).expect("pid");
    assert!(dir.is_dir());
    zk.pause(0).expect("pause before drop");
    drop(zk);
    assert!(!dir.exists(), "{} still exists", dir.display());
    assert!(!process_exists(pid), "process {pid} survived drop");
    assert!(!port_accepts(port));
}

#[test]
fn chosen_client_ports() {
    let free = std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let zk = ZkCluster::builder()
        .client_port(free)
        .start()
        .expect("start on a chosen port");
    assert_eq!(zk.connect_string(), format!("127.0.0.1:{free}"));
    assert_eq!(zk.four_letter(0, "ruok").expect("ruok"), "imok");
    let err = ZkCluster::builder()
        .client_port(free)
        .start()
        .expect_err("the port is taken");
    assert!(
        matches!(err, LaunchError::PortInUse { port, .. } if port == free),
        "{err}"
    );
    assert!(matches!(
        ZkCluster::builder().members(3).client_port(65534).start(),
        Err(LaunchError::InvalidArgument(_))
    ));
}

#[test]
fn kill_and_errors() {
    let mut zk = ZkCluster::builder()
        .tick_time(Duration::from_millis(100))
        .start()
        .expect("start standalone ZooKeeper");
    assert_eq!(zk.min_session_timeout(), Duration::from_millis(200));
    let port = zk.client_port(0);

    assert!(matches!(
        zk.four_letter(1, "ruok"),
        Err(LaunchError::NoSuchMember { index: 1, members: 1 })
    ));
    assert!(matches!(
        zk.four_letter(0, "ruok\n"),
        Err(LaunchError::InvalidArgument(_))
    ));
    assert!(matches!(zk.stop(3), Err(LaunchError::NoSuchMember { .. })));

    let pid = zk.pid(0).expect("pid");
    zk.kill(0).expect("kill");
    assert!(!process_exists(pid));
    assert!(!port_accepts(port));
    assert!(matches!(zk.pause(0), Err(LaunchError::InvalidState { .. })));
    assert!(matches!(zk.resume(0), Err(LaunchError::InvalidState { .. })));
    zk.start(0).expect("start after kill");
    assert_eq!(zk.four_letter(0, "ruok").expect("ruok"), "imok");
}

#[test]
fn missing_jars_and_bad_arguments() {
    let err = ZkCluster::builder()
        .jar_dir("/nonexistent/zk-rwlock-jars")
        .start()
        .expect_err("no jars there");
    assert!(matches!(err, LaunchError::NotInstalled { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("apt-get install -y zookeeper"), "{msg}");
    assert!(msg.contains("ZK_RWLOCK_JAR_DIR"), "{msg}");
    assert!(msg.contains("/nonexistent/zk-rwlock-jars"), "{msg}");

    let err = ZkCluster::builder()
        .java("/nonexistent/bin/java")
        .start()
        .expect_err("no java there");
    // Either the jars are missing too, or java is reported missing.
    assert!(
        matches!(
            err,
            LaunchError::JavaNotFound { .. } | LaunchError::NotInstalled { .. }
        ),
        "{err:?}"
    );

    let err = ZkCluster::ensemble(0).expect_err("zero members");
    assert!(matches!(err, LaunchError::InvalidArgument(_)), "{err:?}");
    let err = ZkCluster::builder()
        .tick_time(Duration::ZERO)
        .start()
        .expect_err("zero tick");
    assert!(matches!(err, LaunchError::InvalidArgument(_)), "{err:?}");
}

#[test]
fn ensemble_leader_failover() {
    let t0 = Instant::now();
    let mut zk = ZkCluster::ensemble(3).expect("start 3-member ensemble");
    eprintln!("3-member ensemble serving after {:?}", t0.elapsed());

    assert_eq!(zk.members(), 3);
    let ports: Vec<u16> = (0..3).map(|i| zk.client_port(i)).collect();
    let expected = ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(zk.connect_string(), expected);
    for i in 0..3 {
        assert_eq!(zk.four_letter(i, "ruok").expect("ruok"), "imok");
        assert!(matches!(
            zk.mode(i),
            Some(ServerMode::Leader | ServerMode::Follower)
        ));
    }
    let all_leaders = leaders(&zk);
    assert_eq!(all_leaders.len(), 1, "leaders: {all_leaders:?}");
    let old = all_leaders[0];
    assert_eq!(zk.leader(), Some(old));

    // Kill the leader: one of the other two takes over.
    let t1 = Instant::now();
    zk.kill(old).expect("kill leader");
    let new = poll("a new leader", Duration::from_secs(30), || {
        zk.leader().filter(|&l| l != old)
    });
    eprintln!("new leader {new} (was {old}) after {:?}", t1.elapsed());
    assert_ne!(new, old);
    assert!(!zk.is_running(old));
    assert_eq!(leaders(&zk), vec![new]);
    let others: Vec<usize> = (0..3).filter(|&i| i != old).collect();
    for &i in &others {
        zk.wait_serving(i, Duration::from_secs(30))
            .expect("survivor serves");
    }

    // The old leader rejoins as a follower.
    let t2 = Instant::now();
    zk.start(old).expect("restart old leader");
    eprintln!("old leader rejoined after {:?}", t2.elapsed());
    assert_eq!(zk.client_port(old), ports[old]);
    assert_eq!(zk.mode(old), Some(ServerMode::Follower));
    assert_eq!(leaders(&zk), vec![new]);

    let dir = zk.dir().to_path_buf();
    let pids: Vec<u32> = (0..3).filter_map(|i| zk.pid(i)).collect();
    assert_eq!(pids.len(), 3);
    drop(zk);
    assert!(!dir.exists());
    for pid in pids {
        assert!(!process_exists(pid), "process {pid} survived drop");
    }
}

#[test]
fn settings_and_jvm_args_reach_the_server() {
    let zk = ZkCluster::builder()
        .setting("maxClientCnxns", "7")
        .jvm_arg("-Djute.maxbuffer=2097152")
        .start()
        .expect("start with a setting and a JVM argument");
    let conf = zk.four_letter(0, "conf").expect("conf");
    assert!(conf.lines().any(|l| l == "maxClientCnxns=7"), "{conf}");
    let pid = zk.pid(0).expect("a running member");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("the server's command line");
    assert!(
        cmdline
            .split(|&b| b == 0)
            .any(|arg| arg == b"-Djute.maxbuffer=2097152"),
        "{}",
        String::from_utf8_lossy(&cmdline)
    );
    assert!(matches!(
        ZkCluster::builder().setting("a=b", "c").start(),
        Err(LaunchError::InvalidArgument(_))
    ));
}
