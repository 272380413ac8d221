//! `zk-rwlock exec --layout` (or `ZK_RWLOCK_LAYOUT`): the node is named as
//! Curator's or kazoo's locks name theirs; a layout that does not exist, or
//! a mode it does not have, is a usage error. (`status` and `revoke` with
//! peers' contenders: the `commands` binary's `peer_contenders.rs`.)

use zk_rwlock_fixtures as support;

use crate::common::{finish, zk_rwlock, BIN};
use serde_json::Value;
use support::{assert_drained, unique_path};
use zk_rwlock::{Layout, Mode, NodeName};

/// Runs `zk-rwlock <args>` on the shared server; returns the exit code, stdout, stderr.
async fn run(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut cmd = zk_rwlock(args);
    cmd.env_remove("ZK_RWLOCK_LAYOUT").envs(env.iter().copied());
    let run = finish(cmd.spawn().expect("spawn zk-rwlock")).await;
    (run.code, run.stdout, run.stderr)
}

/// `exec` in each layout, by `--layout` and by `ZK_RWLOCK_LAYOUT`: the node
/// is named as the peer names it, its data is the identity.
#[tokio::test]
async fn exec_writes_the_layout_it_is_given() {
    let path = unique_path("cli-layout");
    let script = r#"echo "$ZK_RWLOCK_NODE"; "$0" status --json "$1""#;
    for (layout, mode, by_env) in [
        (Layout::Curator, Mode::Read, false),
        (Layout::Curator, Mode::Write, true),
        (Layout::CuratorMutex, Mode::Write, false),
        (Layout::Kazoo, Mode::Read, true),
        (Layout::Kazoo, Mode::Write, false),
        (Layout::Native, Mode::Write, false),
    ] {
        let flag = format!("--{}", if mode == Mode::Read { "read" } else { "write" });
        let mut args = vec!["exec", &flag, "--identity", "job-7"];
        let env: Vec<(&str, &str)> = if by_env {
            vec![("ZK_RWLOCK_LAYOUT", layout.name())]
        } else {
            args.extend(["--layout", layout.name()]);
            vec![]
        };
        args.extend([path.as_str(), "--", "sh", "-c", script, BIN, &path]);
        let (code, stdout, stderr) = run(&args, &env).await;
        assert_eq!(code, Some(0), "{layout} {mode}: {stderr}");
        let (node, json) = stdout.split_once('\n').unwrap();
        let name: NodeName = node.rsplit('/').next().unwrap().parse().unwrap();
        assert_eq!((name.layout(), name.mode()), (layout, mode), "{node}");
        assert!(name.token().is_some(), "{node}");
        let status: Value = serde_json::from_str(json).unwrap();
        assert_eq!(status["contenders"][0]["layout"], layout.name(), "{status}");
        assert_eq!(status["contenders"][0]["state"], "holds", "{status}");
    }
    assert_drained(&path).await;
}

#[tokio::test]
async fn bad_layouts_are_usage_errors() {
    let path = unique_path("cli-layout-bad");
    let (code, _, stderr) = run(
        &["exec", "--write", "--layout", "zookeeper", &path, "--", "true"],
        &[],
    )
    .await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("unknown layout `zookeeper`"), "{stderr}");
    assert!(stderr.contains("curator-mutex"), "{stderr}");
    let (code, _, stderr) = run(
        &["exec", "--read", "--layout", "curator-mutex", &path, "--", "true"],
        &[],
    )
    .await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("`curator-mutex` layout has no read locks"),
        "{stderr}"
    );
    assert_drained(&path).await;
}
