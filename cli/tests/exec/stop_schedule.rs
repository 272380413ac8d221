//! The stop schedule on a healthy connection: `--follower-lag` and `--grace`
//! too large for the session are refused (exit 2, before connecting) with
//! the largest value the session allows, and at that value CMD runs for
//! several ping intervals without a signal, under `exec` and `lead`.
//! (The rule itself, `Schedule::fit` in cli/src/exec/stop.rs, has table
//! tests there; the refusals once connected are in the `commands` binary's
//! `bad_input`.)

use zk_rwlock_fixtures as support;

use std::time::Duration;

use crate::common::{finish_within, zk_rwlock, Run};
use support::{assert_drained, server, unique_path};

/// The session of these tests: 4 s, the most the shared server grants.
/// Pings come every 3/20 of it (0.6 s), so an idle connection's last
/// answer is up to 0.8 s old.
const SESSION: &str = "4s";

/// CMD: says a word every 250 ms for 3 s (five ping intervals), then
/// `done`, and exits 0; a signal cuts it short.
const TICKS: &str = "i=0; while [ $i -lt 12 ]; do echo \"tick $i $ZK_RWLOCK_SESSION_TIMEOUT_MS\"; \
                     sleep 0.25; i=$((i+1)); done; echo done";

/// What `zk-rwlock <args>` refuses: exit 2 at once, one message, ending in
/// the largest value the session allows (`... allows is 253ms`, or `...
/// allows with that grace is 253ms`), which this returns.
async fn largest_allowed(args: &[&str]) -> String {
    let out = finish_within(
        zk_rwlock(args).spawn().expect("spawn zk-rwlock"),
        Duration::from_secs(10),
    )
    .await;
    out.expect_code(2);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: one message: {out:#?}");
    let (_, value) = lines[0]
        .rsplit_once(" allows is ")
        .or_else(|| lines[0].rsplit_once(" allows with that grace is "))
        .unwrap_or_else(|| panic!("{args:?}: no largest value in {out:#?}"));
    value.to_owned()
}

/// Runs `zk-rwlock <sub> ... --session-timeout 4s <options> PATH -- CMD`
/// (CMD: [`TICKS`]) to the end.
async fn run_ticks(sub: &[&str], options: &[&str], path: &str) -> Run {
    let mut args = sub.to_vec();
    args.extend(["--session-timeout", SESSION]);
    args.extend(options);
    args.extend([path, "--", "sh", "-c", TICKS]);
    finish_within(
        zk_rwlock(&args).spawn().expect("spawn zk-rwlock"),
        Duration::from_secs(20),
    )
    .await
}

/// CMD ran to its end, untouched: every tick and `done` on its stdout, the
/// session it was told the one asked for, exit 0.
fn ran_through(what: &str, out: &Run) {
    assert_eq!(out.code, Some(0), "{what}: {out:#?}");
    let want: Vec<String> = (0..12)
        .map(|i| format!("tick {i} 4000"))
        .chain(["done".to_owned()])
        .collect();
    let got: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(got, want, "{what}: CMD's own output: {out:#?}");
    assert!(
        !out.stderr.contains("SIGTERM") && !out.stderr.contains("stopping"),
        "{what}: {out:#?}"
    );
}

/// Rows: the options refused, the largest value said, and the options to
/// run with it (`{}`: that value).
type Case = (&'static [&'static str], &'static str, &'static [&'static str]);

const CASES: [Case; 4] = [
    // The newcomer's: SIGTERM would come 0.215 s after an answer.
    (&["--follower-lag", "1.7s"], "253ms", &["--follower-lag", "{}"]),
    // Without a grace, the lag can be larger.
    (
        &["--grace", "0s", "--follower-lag", "1.7s"],
        "1.586s",
        &["--grace", "0s", "--follower-lag", "{}"],
    ),
    (&["--grace", "20s"], "1.82s", &["--grace", "{}"]),
    (
        &["--on-suspend", "term", "--grace", "20s"],
        "1.82s",
        &["--on-suspend", "term", "--grace", "{}"],
    ),
];

/// Refused, then run at the largest value allowed, for each case, all at
/// once (each run lasts 3 s).
async fn largest_values_keep_cmd_running(sub: &'static [&'static str], name: &str) {
    assert_eq!(server().max_session_timeout(), Duration::from_secs(4));
    let mut runs = Vec::new();
    for (i, (refused, said, options)) in CASES.into_iter().enumerate() {
        let path = unique_path(&format!("{name}-{i}"));
        runs.push(tokio::spawn(async move {
            let mut args = sub.to_vec();
            args.extend(["--session-timeout", SESSION]);
            args.extend(refused);
            args.extend([path.as_str(), "--", "true"]);
            let largest = largest_allowed(&args).await;
            assert_eq!(largest, said, "{args:?}");
            let options: Vec<&str> = options
                .iter()
                .map(|o| if *o == "{}" { largest.as_str() } else { o })
                .collect();
            let out = run_ticks(sub, &options, &path).await;
            ran_through(&format!("{sub:?} {options:?}"), &out);
            assert_drained(&path).await;
        }));
    }
    for run in runs {
        run.await.expect("a case");
    }
}

/// `exec` at the largest follower lag and grace a 4 s session allows:
/// CMD runs its 3 s through, with `--on-suspend lease` and `term`.
#[tokio::test]
async fn exec_runs_at_the_largest_values_the_session_allows() {
    largest_values_keep_cmd_running(&["exec", "--write"], "schedule-exec").await;
}

/// The same for `lead`, for one term.
#[tokio::test]
async fn lead_runs_at_the_largest_values_the_session_allows() {
    largest_values_keep_cmd_running(&["lead", "--max-terms", "1"], "schedule-lead").await;
}
