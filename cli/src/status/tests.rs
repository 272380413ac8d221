use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zk_rwlock::{ContenderState, Layout, Mode, QueueEntry};

use super::output::json;
use super::snapshot::{link_sessions, Leader, Snapshot};
use super::table::*;

#[test]
fn ages() {
    assert_eq!(format_age(Duration::from_millis(850)), "850ms");
    assert_eq!(format_age(Duration::from_millis(3240)), "3.2s");
    assert_eq!(format_age(Duration::from_secs(245)), "4m05s");
    assert_eq!(format_age(Duration::from_secs(2 * 3600 + 180)), "2h03m");
    assert_eq!(format_age(Duration::from_secs(3 * 86400 + 4 * 3600)), "3d04h");
}

const K1: &str = "0123456789abcdef0123456789abcdef__rlock__0000000001";
const K2: &str = "0123456789abcdef0123456789abcdef__rlock__0000000002";
const K3: &str = "fedcba9876543210fedcba9876543210__lock__0000000003";

fn queue(names: &[&str]) -> Vec<QueueEntry> {
    let names: Vec<zk_rwlock::NodeName> = names.iter().map(|n| n.parse().unwrap()).collect();
    // States as the queue gives them: a reader holds unless a writer is
    // ahead; a writer holds only at the head.
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let state =
            if i == 0 || (name.mode() == Mode::Read && names[..i].iter().all(|n| n.mode() == Mode::Read)) {
                ContenderState::Holds
            } else {
                ContenderState::WaitsOn(names[i - 1].to_string())
            };
        out.push(QueueEntry::new("/x", name.clone(), state));
    }
    out
}

#[test]
fn a_kazoo_lock_behind_kazoo_readers_is_flagged() {
    let w = kazoo_lock_warnings(&queue(&[K1, K2, K3]));
    assert_eq!(w.lines().count(), 1, "{w}");
    assert!(w.contains(K3) && w.contains(K1) && w.contains(K2), "{w}");
    assert!(
        w.contains("may be a kazoo Lock (not WriteLock), which holds beside readers"),
        "{w}"
    );
    // A kazoo writer at the head holds: nothing to say.
    assert_eq!(kazoo_lock_warnings(&queue(&[K3])), "");
    // Behind a kazoo writer, a kazoo Lock waits too.
    let k4 = "fedcba9876543210fedcba9876543210__lock__0000000004";
    assert_eq!(kazoo_lock_warnings(&queue(&[K1, K3, k4])).lines().count(), 1);
    // Native or Curator readers ahead: kazoo's Lock ignores them anyway.
    assert_eq!(kazoo_lock_warnings(&queue(&["a-R-0000000001", K3])), "");
    // Other peers wait for the readers of their own layout.
    let curator = "_c_0b7d6f5e-1c2a-4e3b-8f9a-0123456789ab-";
    let (reader, writer) = (
        format!("{curator}__READ__0000000001"),
        format!("{curator}__WRIT__0000000002"),
    );
    assert_eq!(kazoo_lock_warnings(&queue(&[&reader, &writer])), "");
    assert_eq!(
        kazoo_lock_warnings(&queue(&["a-R-0000000001", "b-W-0000000002"])),
        ""
    );
}

#[test]
fn layout_warnings_follow_the_chosen_layout() {
    let q = queue(&["a-R-0000000001", K2]);
    // Without --layout (or native): each peer present, here kazoo.
    let w = layout_warnings(&q, None);
    assert!(w.contains("kazoo does not recognise a-R-0000000001"), "{w}");
    assert_eq!(layout_warnings(&q, Some(Layout::Native)), w);
    // A chosen peer layout: only that library, present or not.
    let w = layout_warnings(&q, Some(Layout::Curator));
    assert_eq!(w.lines().count(), 1, "{w}");
    assert!(
        w.contains("does not recognise a-R-0000000001, ") && w.contains(K2),
        "{w}"
    );
    assert!(w.contains("--layout curator"), "{w}");
    assert_eq!(layout_warnings(&queue(&[K1, K2]), Some(Layout::Kazoo)), "");
}

#[test]
fn permanent_nodes_are_flagged() {
    let contender = |name: &str, state, session| {
        let mut c = QueueEntry::new("/x", name.parse().unwrap(), state);
        (c.fencing_token, c.created, c.session) = (Some(7), Some(UNIX_EPOCH), session);
        c
    };
    let s = Snapshot {
        path: "/x".to_owned(),
        exists: true,
        contenders: vec![
            contender("a-W-0000000000", ContenderState::Holds, Some(0)),
            contender(
                "b-R-0000000001",
                ContenderState::WaitsOn("a-W-0000000000".to_owned()),
                Some(0x1234),
            ),
        ],
        foreign: Vec::new(),
        also_in: None,
        leader: None,
        head_watch: None,
    };
    let now = SystemTime::now();
    let t = table(&s, now, None);
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[2].contains("holds (PERMANENT node)"), "{t}");
    assert!(!lines[3].contains("PERMANENT"), "{t}");
    assert_eq!(lines[4], permanent_warning("/x/a-W-0000000000").trim_end(), "{t}");
    assert!(lines[4].contains("`delete /x/a-W-0000000000`"), "{t}");
    assert_eq!(lines.len(), 5, "{t}");
    let j = serde_json::to_value(json(&s, now)).unwrap();
    assert_eq!(j["contenders"][0]["ephemeral"], false);
    assert_eq!(j["contenders"][0]["session"], "0x0");
    assert_eq!(j["contenders"][1]["ephemeral"], true);
}

#[test]
fn contenders_are_linked_across_paths_by_session() {
    let contender = |dir: &str, name: &str, session| {
        let mut c = QueueEntry::new(dir, name.parse().unwrap(), ContenderState::Holds);
        c.session = session;
        c
    };
    let snapshot = |path: &str, contenders| Snapshot {
        path: path.to_owned(),
        exists: true,
        contenders,
        foreign: Vec::new(),
        also_in: None,
        leader: None,
        head_watch: None,
    };
    let mut s = vec![
        snapshot(
            "/a",
            vec![
                contender("/a", "m-W-0000000000", Some(7)),
                contender("/a", "o-R-0000000001", Some(8)),
                contender("/a", "p-R-0000000002", Some(0)),
                contender("/a", "g-R-0000000003", None),
            ],
        ),
        snapshot("/b", vec![contender("/b", "m-R-0000000000", Some(7))]),
        snapshot(
            "/c",
            vec![
                contender("/c", "m-W-0000000000", Some(7)),
                contender("/c", "p-W-0000000001", Some(0)),
            ],
        ),
    ];
    link_sessions(&mut s);
    let also_in = |s: &Snapshot| s.also_in.clone().unwrap();
    assert_eq!(also_in(&s[0]), [vec!["/b", "/c"], vec![], vec![], vec![]]);
    assert_eq!(also_in(&s[1]), [vec!["/a", "/c"]]);
    assert_eq!(also_in(&s[2]), [vec!["/a", "/b"], vec![]]);
    let t = table(&s[1], SystemTime::now(), None);
    assert!(t.lines().nth(1).unwrap().ends_with("ALSO IN"), "{t}");
    assert!(t.lines().nth(2).unwrap().ends_with("/a,/c"), "{t}");
    let j = serde_json::to_value(json(&s[0], SystemTime::now())).unwrap();
    assert_eq!(j["contenders"][0]["also_in"], serde_json::json!(["/b", "/c"]));
    assert_eq!(j["contenders"][1]["also_in"], serde_json::json!([]));
}

#[test]
fn empty_and_missing_directories() {
    let mut s = Snapshot {
        path: "/x".to_owned(),
        exists: false,
        contenders: Vec::new(),
        foreign: Vec::new(),
        also_in: None,
        leader: None,
        head_watch: None,
    };
    assert_eq!(
        table(&s, SystemTime::now(), None),
        "/x: no contenders (the lock directory does not exist)\n"
    );
    s.exists = true;
    s.foreign.push("junk".to_owned());
    let t = table(&s, SystemTime::now(), None);
    assert!(t.starts_with("/x: no contenders\n"), "{t}");
    assert!(t.contains("junk"), "{t}");
}

#[test]
fn an_announced_head_writer_is_named_leader() {
    let name = "web01@0123456789abcdef0123456789abcdef-W-0000000004";
    let mut c = QueueEntry::new("/e", name.parse().unwrap(), ContenderState::Holds);
    c.fencing_token = Some(42);
    let s = Snapshot {
        path: "/e".to_owned(),
        exists: true,
        contenders: vec![c],
        foreign: Vec::new(),
        also_in: None,
        leader: Some(Leader {
            identity: "web01".to_owned(),
            node: name.to_owned(),
            term: Some(42),
            revocation_requested: false,
        }),
        head_watch: None,
    };
    let table = table(&s, SystemTime::now(), None);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "/e: 1 contender, 1 holding, 0 waiting");
    assert_eq!(lines[1], format!("leader: web01 (term 42, node {name})"));
    let json = serde_json::to_string(&json(&s, SystemTime::now())).unwrap();
    assert!(json.contains(r#""leader":{"identity":"web01","#), "{json}");
    assert!(json.contains(r#""revocation_requested":false}"#), "{json}");
}

#[test]
fn a_leader_asked_to_step_down_is_still_named() {
    let name = "web01@0123456789abcdef0123456789abcdef-W-0000000004";
    let mut c = QueueEntry::new("/e", name.parse().unwrap(), ContenderState::Holds);
    c.fencing_token = Some(42);
    let s = Snapshot {
        path: "/e".to_owned(),
        exists: true,
        contenders: vec![c],
        foreign: Vec::new(),
        also_in: None,
        leader: Some(Leader {
            identity: "web01".to_owned(),
            node: name.to_owned(),
            term: Some(42),
            revocation_requested: true,
        }),
        head_watch: None,
    };
    let table = table(&s, SystemTime::now(), None);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[1],
        format!(
            "leader: web01 (term 42, node {name}), asked to step down (revocation requested): leads until \
             it resigns"
        )
    );
    let json = serde_json::to_string(&json(&s, SystemTime::now())).unwrap();
    assert!(json.contains(r#""revocation_requested":true}"#), "{json}");
}

/// A semaphore's directory: its permits under the summary, MODE `permit`,
/// the identity without the count, `permits` in JSON (the lock's fields
/// unchanged), and warnings for contenders that carry another count or
/// none.
#[test]
fn a_semaphore_shows_its_permits_holders_and_queue() {
    let token = "0123456789abcdef0123456789abcdef";
    let names = [
        format!("web01@permits-2@{token}-W-0000000001"),
        format!("web02@permits-2@{token}-W-0000000002"),
        format!("web03@permits-2@{token}-W-0000000003"),
    ];
    let states = [
        ContenderState::Holds,
        ContenderState::Holds,
        ContenderState::WaitsOn(names[1].clone()),
    ];
    let contenders: Vec<QueueEntry> = names
        .iter()
        .zip(states)
        .map(|(name, state)| QueueEntry::new("/s", name.parse().unwrap(), state))
        .collect();
    let mut s = Snapshot {
        path: "/s".to_owned(),
        exists: true,
        contenders,
        foreign: Vec::new(),
        also_in: None,
        leader: None,
        head_watch: None,
    };
    assert_eq!(s.permits(), Some(2));
    let t = table(&s, SystemTime::now(), None);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[0], "/s: 3 contenders, 2 holding, 1 waiting", "{t}");
    assert_eq!(lines[1], "semaphore: 2 permits, 2 held, 0 free", "{t}");
    let row = |i: usize| lines[3 + i].split_whitespace().collect::<Vec<_>>();
    assert_eq!(
        row(0)[1..5],
        [names[0].as_str(), "web01", "permit", "holds"],
        "{t}"
    );
    assert_eq!(
        row(1)[1..5],
        [names[1].as_str(), "web02", "permit", "holds"],
        "{t}"
    );
    assert_eq!(
        row(2)[1..6],
        [names[2].as_str(), "web03", "permit", "waits", "on"],
        "{t}"
    );
    assert_eq!(lines.len(), 6, "no warning: {t}");

    let j = serde_json::to_value(json(&s, SystemTime::now())).unwrap();
    assert_eq!(j["permits"], 2);
    assert_eq!(j["contenders"][0]["identity"], "web01");
    assert_eq!(j["contenders"][0]["permits"], 2);
    assert_eq!(j["contenders"][0]["mode"], "write");
    assert_eq!(j["contenders"][0]["node"], names[0].as_str());
    assert_eq!(j["contenders"][2]["state"], "waits");

    // A contender with another count, and a lock's writer: warned about.
    let other = format!("web04@permits-3@{token}-W-0000000004");
    let writer = format!("web05@{token}-W-0000000005");
    for name in [&other, &writer] {
        s.contenders.push(QueueEntry::new(
            "/s",
            name.parse().unwrap(),
            ContenderState::WaitsOn(names[2].clone()),
        ));
    }
    let t = table(&s, SystemTime::now(), None);
    assert!(
        t.contains(&format!(
            "WARNING: the contenders of this semaphore disagree on its permits (2 first): {other} (3);"
        )),
        "{t}"
    );
    assert!(
        t.contains(&format!(
            "WARNING: {writer} carries no permit count (a lock's contender, not a permit)"
        )),
        "{t}"
    );
    let j = serde_json::to_value(json(&s, SystemTime::now())).unwrap();
    assert_eq!(j["contenders"][4]["identity"], "web05");
    assert!(j["contenders"][4].get("permits").is_none(), "{j}");

    // A lock's directory: no `permits` anywhere.
    let lock = Snapshot {
        contenders: queue(&["a-R-0000000001", "b-W-0000000002"]),
        ..s
    };
    assert_eq!(lock.permits(), None);
    let j = serde_json::to_value(json(&lock, SystemTime::now())).unwrap();
    assert!(j.get("permits").is_none(), "{j}");
    assert!(j["contenders"][0].get("permits").is_none(), "{j}");
    assert!(!table(&lock, SystemTime::now(), None).contains("semaphore"));
    assert_eq!(semaphore_line(1, 0), "semaphore: 1 permit, 0 held, 1 free\n");
}
