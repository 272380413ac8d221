//! Partitions inside a real ensemble ([`ZkClusterBuilder::partitionable`]):
//! every member-to-member connection goes through a link the test cuts, and
//! ZooKeeper's own timeouts must notice (needs Java and the ZooKeeper 3.8
//! jars; see `zk_rwlock_testkit::launcher`).

use std::time::{Duration, Instant};

use zk_rwlock_testkit::launcher::{ServerMode, ZkCluster, ZkClusterBuilder};
use zk_rwlock_testkit::poll;

/// Generous: elections after a cut take a few seconds of ZooKeeper's
/// timeouts (tick 200 ms, syncLimit 5, initLimit 10), more on a busy machine.
const WITHIN: Duration = Duration::from_secs(60);

fn modes(zk: &ZkCluster) -> Vec<Option<ServerMode>> {
    (0..zk.members()).map(|i| zk.mode(i)).collect()
}

fn ensemble(n: usize) -> ZkCluster {
    ZkClusterBuilder::default()
        .members(n)
        .partitionable()
        .start()
        .unwrap_or_else(|e| panic!("needs a ZooKeeper ensemble: {e}"))
}

/// The members' own config names the links, not each other's ports.
#[test]
fn members_reach_each_other_through_the_links() {
    let zk = ensemble(3);
    assert!(zk.is_partitionable());
    assert_eq!(zk.cut_description(), "healed");
    let cfg = std::fs::read_to_string(zk.dir().join("member-0").join("zoo.cfg")).expect("zoo.cfg");
    let other = std::fs::read_to_string(zk.dir().join("member-1").join("zoo.cfg")).expect("zoo.cfg");
    let line = |cfg: &str, key: &str| {
        cfg.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} in {cfg}"))
            .to_owned()
    };
    // Member 0 reaches member 2 through another port than member 1 does.
    assert_ne!(line(&cfg, "server.3="), line(&other, "server.3="));
    // Each keeps its own real ports.
    assert_ne!(line(&cfg, "server.1="), line(&other, "server.1="));
    let err = ZkCluster::ensemble(1)
        .expect("standalone")
        .partition(&[&[0]])
        .expect_err("a standalone server is not partitionable");
    assert!(err.to_string().contains("not partitionable"), "{err}");
}

/// The leader cut off from both followers steps down and stops serving;
/// the two others elect a new leader; healing brings the old one back as
/// a follower of the new one.
#[test]
fn an_isolated_leader_is_replaced_and_rejoins_as_follower() {
    let zk = ensemble(3);
    let old = zk.leader().expect("a leader");
    let others: Vec<usize> = (0..3).filter(|&i| i != old).collect();
    zk.partition(&[&others]).expect("isolate the leader");
    assert_eq!(
        zk.cut_description(),
        format!(
            "cut {}",
            others
                .iter()
                .map(|&o| format!("{}-{}", old.min(o), old.max(o)))
                .collect::<Vec<_>>()
                .join(" ")
        )
    );
    let new = poll("a new leader among the two others", WITHIN, || {
        others
            .iter()
            .copied()
            .find(|&i| zk.mode(i) == Some(ServerMode::Leader))
    });
    poll("the isolated member stops serving", WITHIN, || {
        zk.mode(old).is_none().then_some(())
    });
    let follower = others.iter().copied().find(|&i| i != new).expect("the other");
    poll("the other follows the new leader", WITHIN, || {
        (zk.mode(follower) == Some(ServerMode::Follower)).then_some(())
    });
    // It stays out of service while cut off: no election can succeed alone.
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        assert_eq!(zk.mode(old), None, "an isolated member served: {:?}", modes(&zk));
        std::thread::sleep(Duration::from_millis(100));
    }

    zk.heal_all().expect("heal");
    poll("the old leader rejoins as a follower", WITHIN, || {
        (zk.mode(old) == Some(ServerMode::Follower)).then_some(())
    });
    assert_eq!(zk.leader(), Some(new), "the new leader stays: {:?}", modes(&zk));
}

/// A bridge in five members: {0, 1} and {3, 4} cannot see each other,
/// member 2 sees everyone. Whoever leads keeps a majority only through its
/// side and the bridge; the members cut off from the leader stop serving,
/// the ensemble goes on with a quorum, and healing brings all back.
#[test]
fn a_bridge_keeps_a_quorum_around_the_leader() {
    let zk = ensemble(5);
    for a in [0, 1] {
        for b in [3, 4] {
            zk.cut_link(a, b).expect("cut");
        }
    }
    assert_eq!(zk.cut_description(), "cut 0-3 0-4 1-3 1-4");
    assert!(zk.is_cut(0, 3) && zk.is_cut(4, 1) && !zk.is_cut(0, 2) && !zk.is_cut(0, 1));
    // Settled: one leader, every member linked to it follows, every other
    // one does not serve.
    let leader = poll(
        "one leader, followed by every member it can reach",
        WITHIN,
        || {
            let m = modes(&zk);
            let leaders: Vec<usize> = (0..5).filter(|&i| m[i] == Some(ServerMode::Leader)).collect();
            let [l] = leaders[..] else { return None };
            let settled = (0..5).filter(|&i| i != l).all(|i| {
                if zk.is_cut(i, l) {
                    m[i].is_none()
                } else {
                    m[i] == Some(ServerMode::Follower)
                }
            });
            settled.then_some(l)
        },
    );
    let serving = modes(&zk).iter().filter(|m| m.is_some()).count();
    assert!(
        serving >= 3,
        "a quorum serves around leader {leader}: {:?}",
        modes(&zk)
    );

    zk.heal_all().expect("heal");
    poll("all five serve with one leader", WITHIN, || {
        let m = modes(&zk);
        let leaders = m.iter().filter(|m| **m == Some(ServerMode::Leader)).count();
        (leaders == 1 && m.iter().all(Option::is_some)).then_some(())
    });
}

/// A lone follower cut off from the two others stops serving while the
/// majority keeps its leader; stopped and started again once healed, it
/// follows through the same links.
#[test]
fn a_minority_stops_serving_and_comes_back() {
    let mut zk = ensemble(3);
    let leader = zk.leader().expect("a leader");
    let alone = (leader + 1) % 3;
    let rest: Vec<usize> = (0..3).filter(|&i| i != alone).collect();
    zk.partition(&[&rest, &[alone]]).expect("partition");
    poll("the lone follower stops serving", WITHIN, || {
        zk.mode(alone).is_none().then_some(())
    });
    assert_eq!(zk.leader(), Some(leader), "the majority keeps its leader");
    zk.stop(alone).expect("stop");
    zk.heal_all().expect("heal");
    zk.start(alone).expect("start once healed");
    poll("it follows", WITHIN, || {
        (zk.mode(alone) == Some(ServerMode::Follower)).then_some(())
    });
    assert_eq!(zk.leader(), Some(leader));
}
