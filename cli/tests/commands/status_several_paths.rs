//! `zk-rwlock status` with several paths, against a real ZooKeeper server:
//! a `MultiLock` holding two paths shows up in both queues, its parts linked
//! by their shared session (`also_in`), in JSON, in the table, and in
//! `--watch`; with one path the output has no such field or column.

use zk_rwlock_fixtures as support;

use crate::common::{contenders, run, watch_status, Watching, SHORT};
use serde_json::Value;
use support::{assert_drained, client, lock, unique_path, wait_contenders};
use zk_rwlock::{Mode, MultiLock};

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn status_of_several_paths_links_a_multi_lock_by_session() {
    let (p1, p2) = (unique_path("multi-a"), unique_path("multi-b"));
    let multi = MultiLock::new(client().await, &[(&p1, Mode::Write), (&p2, Mode::Read)]).unwrap();
    let held = multi.acquire().await.unwrap();
    // A writer on p1 from another session waits behind the multi-lock.
    let other = lock(&p1).await;
    let waiter_lock = other.clone();
    let waiter = tokio::spawn(async move { waiter_lock.write().await });
    wait_contenders(&other, 2).await;

    let out = run(&["status", "--json", &p1, &p2]).await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
    let locks = v["locks"].as_array().expect("locks");
    assert_eq!(locks.len(), 2, "{v}");
    assert_eq!(locks[0]["path"], p1.as_str());
    assert_eq!(locks[1]["path"], p2.as_str());
    let (q1, q2) = (
        locks[0]["contenders"].as_array().unwrap(),
        locks[1]["contenders"].as_array().unwrap(),
    );
    assert_eq!((q1.len(), q2.len()), (2, 1), "{v}");
    // The multi-lock's parts: one session, each naming the other path.
    assert_eq!(q1[0]["path"], held.part(&p1).unwrap().node());
    assert_eq!(q2[0]["path"], held.part(&p2).unwrap().node());
    assert_eq!(
        (&q1[0]["mode"], &q1[0]["state"]),
        (&"write".into(), &"holds".into())
    );
    assert_eq!(
        (&q2[0]["mode"], &q2[0]["state"]),
        (&"read".into(), &"holds".into())
    );
    assert_eq!(q1[0]["session"], q2[0]["session"], "{v}");
    assert_eq!(strings(&q1[0]["also_in"]), [p2.as_str()]);
    assert_eq!(strings(&q2[0]["also_in"]), [p1.as_str()]);
    // The waiter has its own session, on p1 only.
    assert_eq!(q1[1]["state"], "waits");
    assert_ne!(q1[1]["session"], q1[0]["session"]);
    assert_eq!(strings(&q1[1]["also_in"]), Vec::<&str>::new());

    // The table: each path's queue in turn, with an ALSO IN column.
    let out = run(&["status", &p1, &p2]).await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    let sections: Vec<&str> = out.stdout.split("\n\n").collect();
    assert_eq!(sections.len(), 2, "{}", out.stdout);
    let (s1, s2): (Vec<&str>, Vec<&str>) = (sections[0].lines().collect(), sections[1].lines().collect());
    assert_eq!(s1[0], format!("{p1}: 2 contenders, 1 holding, 1 waiting"));
    assert!(s1[1]
        .split_whitespace()
        .eq(["POS", "NODE", "IDENTITY", "MODE", "STATE", "TOKEN", "AGE", "ALSO", "IN"]));
    assert!(s1[2].ends_with(&format!(" {p2}")), "{}", out.stdout);
    assert!(s1[3].ends_with(" -"), "{}", out.stdout);
    assert_eq!(s2[0], format!("{p2}: 1 contender, 1 holding, 0 waiting"));
    assert!(s2[2].ends_with(&format!(" {p1}")), "{}", out.stdout);
    assert_eq!((s1.len(), s2.len()), (4, 3), "{}", out.stdout);

    // One path: as before, no also_in and no ALSO IN column.
    let out = run(&["status", "--json", &p1]).await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(v["path"], p1.as_str());
    assert_eq!(v["contenders"].as_array().unwrap().len(), 2);
    assert!(v["contenders"][0].get("also_in").is_none(), "{v}");
    let out = run(&["status", &p1]).await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[1]
        .split_whitespace()
        .eq(["POS", "NODE", "IDENTITY", "MODE", "STATE", "TOKEN", "AGE"]));

    held.release().await.unwrap();
    let w = tokio::time::timeout(SHORT, waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    w.release().await.unwrap();
    assert_drained(&p1).await;
    assert_drained(&p2).await;
}

#[tokio::test]
async fn bad_paths_among_several_are_usage_errors() {
    let path = unique_path("multi-bad");
    let cases: [(&[&str], &str); 3] = [
        (
            &["status", &path, "locks/x"],
            "zk-rwlock: invalid lock path `locks/x`",
        ),
        (
            &["status", "--json", &path, &path],
            &format!("zk-rwlock: lock path `{path}` given twice"),
        ),
        (&["status"], "PATH"),
    ];
    for (args, message) in cases {
        let out = run(args).await;
        assert_eq!(out.code, Some(2), "{args:?}: {out:#?}");
        assert!(
            out.stderr.contains(message),
            "{args:?}: wanted {message:?} in {out:#?}"
        );
        assert_eq!(out.stdout, "", "{args:?}");
    }
}

/// The next snapshot (one `{"locks": [...]}` per line) where the paths
/// have `want` contenders each.
async fn next_matching(watch: &mut Watching, want: [usize; 2]) -> Value {
    let counts =
        |v: &Value| -> Vec<usize> { v["locks"].as_array().unwrap().iter().map(contenders).collect() };
    watch
        .next(&format!("{want:?} contenders"), |v| counts(v) == want)
        .await
}

/// `--watch` with several paths redraws on a change in any of them.
#[tokio::test]
async fn status_watch_of_several_paths_follows_each() {
    let (p1, p2) = (unique_path("watch-a"), unique_path("watch-b"));
    let mut watch = watch_status(&[&p1, &p2]);
    next_matching(&mut watch, [0, 0]).await;
    // A change in the second path only.
    let l2 = lock(&p2).await;
    let g2 = l2.read().await.unwrap();
    next_matching(&mut watch, [0, 1]).await;
    // Then in the first.
    let l1 = lock(&p1).await;
    let g1 = l1.write().await.unwrap();
    let v = next_matching(&mut watch, [1, 1]).await;
    assert_eq!(v["locks"][0]["contenders"][0]["path"], g1.node());
    assert_eq!(v["locks"][1]["contenders"][0]["path"], g2.node());
    g2.release().await.unwrap();
    next_matching(&mut watch, [1, 0]).await;
    g1.release().await.unwrap();
    next_matching(&mut watch, [0, 0]).await;

    watch.interrupt().await;
    assert_drained(&p1).await;
    assert_drained(&p2).await;
}
