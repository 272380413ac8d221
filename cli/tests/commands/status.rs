//! `zk-rwlock status`: the real queue in JSON and as a table, foreign
//! children, `--watch`, and a permanent node named like a contender.

use zk_rwlock_fixtures as support;

use crate::common::{contenders, run, wait_children, watch_status, SHORT};
use serde_json::Value;
use support::{assert_drained, client, lock, unique_path};
use zk_rwlock::{zk, ContenderState};

/// `status --json` shows the real queue, and foreign children.
#[tokio::test]
async fn status_shows_the_real_queue() {
    let path = unique_path("status");
    let reader = lock(&path).await;
    let r = reader.read().await.unwrap();
    let writer_lock = lock(&path).await;
    let writer = tokio::spawn(async move { writer_lock.write().await });
    wait_children(reader.client(), &path, 2).await;
    let foreign = format!("{path}/not-a-lock-node");
    reader
        .client()
        .create(
            &foreign,
            &[],
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();

    let out = run(&["status", "--json", &path]).await;
    out.expect_code(0);
    let status: Value = serde_json::from_str(&out.stdout).expect("JSON");
    let expected = reader.contenders().await.unwrap();
    assert_eq!(status["path"], path.as_str());
    assert_eq!(status["foreign"], serde_json::json!(["not-a-lock-node"]));
    let got = status["contenders"].as_array().unwrap();
    assert_eq!(got.len(), expected.len());
    assert_eq!(got.len(), 2);
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g["position"], i + 1);
        assert_eq!(g["node"], e.name.to_string());
        assert_eq!(g["path"], e.path.as_str());
        assert_eq!(g["identity"], e.name.identity());
        assert_eq!(g["token"], e.name.token().unwrap().simple().to_string());
        assert_eq!(g["mode"], e.name.mode().to_string());
        assert_eq!(g["seq"], e.name.seq());
        assert_eq!(g["fencing_token"], e.fencing_token.unwrap());
        assert_eq!(g["session"], format!("{:#x}", e.session.unwrap() as u64));
        match &e.state {
            ContenderState::Holds => {
                assert_eq!(g["state"], "holds");
                assert_eq!(g["waits_on"], Value::Null);
            }
            ContenderState::WaitsOn(node) => {
                assert_eq!(g["state"], "waits");
                assert_eq!(g["waits_on"], node.as_str());
            }
            other => panic!("unexpected state {other:?}"),
        }
        assert!(g["created_ms"].as_i64().unwrap() > 0);
        assert!(g["age_ms"].as_u64().is_some());
    }
    assert_eq!(got[0]["mode"], "read");
    assert_eq!(got[0]["state"], "holds");
    assert_eq!(got[0]["fencing_token"], r.fencing_token());
    assert_eq!(got[1]["mode"], "write");
    assert_eq!(got[1]["waits_on"], got[0]["node"]);

    // The table says the same.
    let out = run(&["status", &path]).await;
    out.expect_code(0);
    let table = &out.stdout;
    assert!(
        table.starts_with(&format!("{path}: 2 contenders, 1 holding, 1 waiting\n")),
        "{table}"
    );
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[1]
        .split_whitespace()
        .eq(["POS", "NODE", "IDENTITY", "MODE", "STATE", "TOKEN", "AGE"]));
    let row2: Vec<&str> = lines[3].split_whitespace().collect();
    assert_eq!(
        row2[..4],
        [
            "2",
            &expected[1].name.to_string(),
            expected[1].name.identity(),
            "write"
        ]
    );
    assert_eq!(row2[4..7], ["waits", "on", &expected[0].name.to_string()]);
    assert!(table.contains("not-a-lock-node"), "{table}");

    reader.client().delete(&foreign, None).await.unwrap();
    r.release().await.unwrap();
    let w = tokio::time::timeout(SHORT, writer)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    w.release().await.unwrap();
    assert_drained(&path).await;

    // Empty and missing lock directories.
    let out = run(&["status", &path]).await;
    out.expect_code(0);
    assert_eq!(out.stdout, format!("{path}: no contenders\n"));
    let missing = unique_path("status-missing");
    let out = run(&["status", "--json", &missing]).await;
    out.expect_code(0);
    let status: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(status["contenders"], serde_json::json!([]));
    assert_eq!(status["foreign"], serde_json::json!([]));
}

/// `status --watch --json` prints one line per change, and exits 0 on Ctrl-C.
#[tokio::test]
async fn status_watch_follows_changes() {
    let path = unique_path("watch");
    let mut watch = watch_status(&[&path]);
    // The directory does not exist yet.
    watch.next("no contenders", |v| contenders(v) == 0).await;
    let l = lock(&path).await;
    let g = l.write().await.unwrap();
    let v = watch.next("the writer", |v| contenders(v) == 1).await;
    assert_eq!(v["contenders"][0]["path"], g.node());
    assert_eq!(v["contenders"][0]["state"], "holds");
    g.release().await.unwrap();
    watch.next("the writer gone", |v| contenders(v) == 0).await;
    watch.interrupt().await;
    assert_drained(&path).await;
}

/// A persistent node named like a contender (left by hand or by another
/// tool) counts as a contender that never leaves: it blocks the lock, and
/// `status` flags it. A lock path that would make such a node is refused.
#[tokio::test]
async fn status_flags_a_permanent_node_named_like_a_contender() {
    let path = unique_path("permanent");
    let c = client().await;
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    c.mkdir(&path, &persistent).await.unwrap();
    let blocker = format!("{path}/web01-W-0000000000");
    c.create(&blocker, &[], &persistent).await.unwrap();

    // The lock counts it as the writer that holds.
    let l = lock(&path).await;
    assert!(l.try_write().await.unwrap().is_none(), "granted past the node");
    let reader = tokio::spawn(async move { l.read().await });
    wait_children(&c, &path, 2).await;

    let out = run(&["status", "--json", &path]).await;
    out.expect_code(0);
    let status: Value = serde_json::from_str(&out.stdout).expect("JSON");
    let got = status["contenders"].as_array().unwrap();
    assert_eq!(got.len(), 2, "{status}");
    assert_eq!(got[0]["node"], "web01-W-0000000000");
    assert_eq!(got[0]["state"], "holds");
    assert_eq!(got[0]["ephemeral"], false);
    assert_eq!(got[0]["session"], "0x0");
    assert_eq!(got[1]["state"], "waits");
    assert_eq!(got[1]["waits_on"], "web01-W-0000000000");
    assert_eq!(got[1]["ephemeral"], true);

    let out = run(&["status", &path]).await;
    out.expect_code(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[2].contains("web01-W-0000000000") && lines[2].contains("holds (PERMANENT node)"),
        "{}",
        out.stdout
    );
    assert!(!lines[3].contains("PERMANENT"), "{}", out.stdout);
    assert!(
        lines[4].starts_with(&format!("WARNING: {blocker} is a PERMANENT node"))
            && lines[4].contains("blocks the lock until it is deleted")
            && lines[4].contains(&format!("`delete {blocker}`")),
        "{}",
        out.stdout
    );

    // The lock path that made such a node in the first place is refused.
    let out = run(&["exec", "--write", &blocker, "--", "true"]).await;
    out.expect_code(2);
    assert!(
        out.stderr.contains(&format!(
            "zk-rwlock: invalid lock path `{blocker}`: its last segment looks like a contender node name"
        )),
        "{out:#?}"
    );
    let out = run(&["status", &blocker]).await;
    out.expect_code(2);
    assert!(
        out.stderr.contains("looks like a contender node name"),
        "{out:#?}"
    );

    // Deleting it lets the lock go on.
    c.delete(&blocker, None).await.unwrap();
    let r = tokio::time::timeout(SHORT, reader)
        .await
        .expect("granted once the node is gone")
        .unwrap()
        .unwrap();
    r.release().await.unwrap();
    assert_drained(&path).await;
}
