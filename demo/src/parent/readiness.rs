//! Waiting until every worker has its ZooKeeper session; if one does not,
//! stopping them all.

use std::process::ExitCode;
use std::time::Duration;

use tokio::time::Instant;

use super::report::print_failures;
use super::setup::Setup;
use super::{Signals, READY_TIMEOUT};

/// Waits until every worker has reported ready. If one does not (or on
/// Ctrl-C), the error is printed, the workers are stopped and what went
/// wrong with them is printed; the exit code comes back.
pub(super) async fn wait(setup: &mut Setup, signals: &mut Signals) -> Result<(), ExitCode> {
    let (state, rx) = (&mut setup.state, &mut setup.rx);
    let n = state.procs.len();
    let mut interrupted = false;

    // Wait until every worker has its session.
    eprintln!("demo: started {n} worker processes; waiting for their ZooKeeper sessions ...");
    let ready_deadline = Instant::now() + READY_TIMEOUT;
    let mut why_not_ready = None;
    while !state.procs.iter().all(|p| p.ready) {
        tokio::select! {
            msg = rx.recv() => match msg {
                Some(msg) => state.apply(msg),
                None => break,
            },
            () = tokio::time::sleep_until(ready_deadline) => {
                why_not_ready = Some(format!("not every worker connected within {READY_TIMEOUT:?}"));
                break;
            }
            () = signals.recv() => {
                why_not_ready = Some("interrupted".into());
                interrupted = true;
                break;
            }
        }
        if state
            .procs
            .iter()
            .any(|p| !p.problems.is_empty() || p.exit.is_some())
        {
            why_not_ready = Some("a worker failed while connecting".into());
            break;
        }
    }
    if why_not_ready.is_none() && !state.procs.iter().all(|p| p.ready) {
        why_not_ready = Some("the workers' output ended before they were ready".into());
    }
    let Some(why) = why_not_ready else {
        return Ok(());
    };
    eprintln!("zk-rwlock demo: error: {why}");
    stop_workers(setup).await;
    Err(if interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::FAILURE
    })
}

/// Kills every worker, waits (a little) for them to end and prints what
/// went wrong with them.
async fn stop_workers(setup: &mut Setup) {
    setup.stdins.clear();
    for kill in setup.kills.iter_mut().filter_map(Option::take) {
        let _ = kill.send(());
    }
    let (state, rx) = (&mut setup.state, &mut setup.rx);
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while !state.all_finished() {
            match rx.recv().await {
                Some(msg) => state.apply(msg),
                None => break,
            }
        }
    })
    .await;
    print_failures(state, &state.failures());
}
