//! A guard dropped anywhere is released, against a real server: on a plain
//! thread outside any runtime, as the program ends (at the end of
//! `block_on`, after its runtime, a blocking guard), inside a runtime (a
//! blocking guard or lock made outside it, without a panic in `Drop`), and
//! as the last handle in a current-thread task. Others get the lock at
//! once, not after the session timeout.

use zk_rwlock_fixtures as support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{client, eventually, server, unique_path};
use zk_rwlock::SharedLock;

const SHORT: Duration = Duration::from_secs(10);

/// The name libtest gives this module's test `name` (its path without the
/// binary's crate), for running it alone in a child process.
fn test_name(name: &str) -> String {
    let module = module_path!().split_once("::").map_or("", |(_, module)| module);
    format!("{module}::{name}")
}

/// A guard dropped on a plain thread, outside any runtime, is released.
#[tokio::test]
async fn an_async_guard_dropped_outside_a_runtime_is_released() {
    let path = unique_path("plain-thread");
    for own_client in [false, true] {
        let lock = if own_client {
            support::lock(&path).await
        } else {
            SharedLock::connect(&server().connect_string(), &path)
                .await
                .unwrap()
        };
        let guard = lock.write().await.unwrap();
        std::thread::spawn(move || drop(guard)).join().unwrap();
        let other = support::lock(&path).await;
        let started = Instant::now();
        eventually("the dropped guard's lock is free", SHORT, || async {
            match other.try_write().await {
                Ok(Some(g)) => g.release().await.is_ok(),
                _ => false,
            }
        })
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "released after {:?} (own client: {own_client})",
            started.elapsed()
        );
    }
}

/// The environment variable that makes this test binary play a program
/// that ends while its guard is held (see `child`).
const CHILD: &str = "ZK_RWLOCK_DROPPED_GUARD_CHILD";

/// A program ends normally with a guard held: dropped at the end of
/// `block_on` (what `#[tokio::main]` returning does), dropped after its
/// runtime, held by a task its runtime drops as it ends (the lock made
/// first, so that the session's task may be dropped after the holder's), or
/// a blocking guard. Others get the lock within 1 s of the
/// program's exit, not after the session timeout (10 s by default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_dropped_as_the_program_ends_is_released() {
    for how in [
        "end-of-block-on",
        "after-the-runtime",
        "in-a-task-as-the-runtime-ends",
        "blocking",
    ] {
        let path = unique_path(how);
        let output = tokio::task::spawn_blocking({
            let path = path.clone();
            move || {
                Command::new(std::env::current_exe().unwrap())
                    .args([
                        "--exact",
                        &test_name("child"),
                        "--nocapture",
                        "--test-threads",
                        "1",
                    ])
                    .env(CHILD, format!("{how} {} {path}", server().connect_string()))
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .output()
                    .unwrap()
            }
        })
        .await
        .unwrap();
        let exited = Instant::now();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{how}: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            stdout.contains("HELD "),
            "{how}: the child never held the lock: {stdout}"
        );
        let other = support::lock(&path).await;
        eventually(&format!("{how}: the lock is free"), SHORT * 2, || async {
            match other.try_write().await {
                Ok(Some(g)) => g.release().await.is_ok(),
                _ => false,
            }
        })
        .await;
        assert!(
            exited.elapsed() < Duration::from_secs(1),
            "{how}: the lock was free only {:?} after the program ended",
            exited.elapsed()
        );
    }
}

/// The child program of `a_guard_dropped_as_the_program_ends_is_released`;
/// does nothing unless that test runs it.
#[test]
fn child() {
    let Ok(spec) = std::env::var(CHILD) else { return };
    let mut words = spec.split(' ');
    let (how, servers, path) = (
        words.next().unwrap().to_owned(),
        words.next().unwrap().to_owned(),
        words.next().unwrap().to_owned(),
    );
    match how.as_str() {
        "end-of-block-on" => {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(async {
                let lock = SharedLock::connect(&servers, &path).await.unwrap();
                let guard = lock.write().await.unwrap();
                println!("HELD {}", guard.node());
            });
        }
        "after-the-runtime" => {
            let rt = tokio::runtime::Runtime::new().unwrap();
            let guard = rt.block_on(async {
                let lock = SharedLock::connect(&servers, &path).await.unwrap();
                lock.write().await.unwrap()
            });
            println!("HELD {}", guard.node());
            drop(rt);
            drop(guard);
        }
        "in-a-task-as-the-runtime-ends" => {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(async {
                let (lock_tx, held_rx) = support::hold_in_a_task_spawned_first();
                let lock = SharedLock::connect(&servers, &path).await.unwrap();
                lock_tx.send(lock).unwrap();
                println!("HELD {}", held_rx.await.unwrap());
            });
            drop(rt);
        }
        "blocking" => {
            let lock = zk_rwlock::blocking::SharedLock::connect(&servers, &path).unwrap();
            let guard = lock.write().unwrap();
            println!("HELD {}", guard.node());
            drop(lock);
            drop(guard);
        }
        other => panic!("unknown child scenario {other}"),
    }
}

/// A blocking guard that outlives its lock can be dropped inside a runtime,
/// without a panic in Drop: `blocking::Guard` keeps an `Arc<Runtime>` of
/// its lock. Its `Drop` takes care not to block inside an async runtime
/// (`release_inner` drops the async guard, which releases in the
/// background, and logs `InsideRuntime`) — but then the guard's own
/// `Arc<Runtime>` is dropped. When the `blocking::SharedLock` is already
/// gone, that is the last reference, and tokio panics: "Cannot drop a
/// runtime in a context where blocking is not allowed". A panic in Drop
/// (an abort if the task was already unwinding).
///
/// Interleaving: a plain thread takes a blocking guard and drops its lock
/// (keeping the guard), then hands the guard to async code, which drops it.
#[test]
fn a_blocking_guard_that_outlives_its_lock_can_be_dropped_inside_a_runtime() {
    let path = unique_path("blocking-guard-in-rt");
    let connect = server().connect_string();
    let lock = zk_rwlock::blocking::SharedLock::connect(&connect, &path).unwrap();
    let guard = lock.write().unwrap();
    let node = guard.node().to_owned();
    drop(lock);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async move { drop(guard) })
    }));
    // Whatever happened, the node must go (it does: released in the background).
    rt.block_on(async {
        let c = client().await;
        eventually("the guard's node is deleted", SHORT, || async {
            matches!(c.check_stat(&node).await, Ok(None))
        })
        .await;
    });
    assert!(
        dropped.is_ok(),
        "dropping a blocking guard inside a runtime panicked (its lock was dropped first)"
    );
}

/// The lock itself: a `blocking::SharedLock` made before a
/// runtime starts (e.g. at the top of `main`) and dropped inside it.
#[test]
fn a_blocking_lock_can_be_dropped_inside_a_runtime() {
    let path = unique_path("blocking-lock-in-rt");
    let connect = server().connect_string();
    let lock = zk_rwlock::blocking::SharedLock::connect(&connect, &path).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async move {
            // Using it here returns InsideRuntime, as documented.
            assert!(matches!(lock.try_write(), Err(zk_rwlock::Error::InsideRuntime)));
            drop(lock)
        })
    }));
    assert!(
        dropped.is_ok(),
        "dropping a blocking lock inside a runtime panicked"
    );
}

/// The last handle of a lock (a guard, then the lock) dropped
/// inside a task of a current_thread runtime neither deadlocks nor leaves
/// the node: the release runs on the library's background thread.
#[test]
fn last_handle_dropped_in_a_current_thread_task_releases() {
    let path = unique_path("ct-drop");
    let connect = server().connect_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let node = rt.block_on(async {
        let lock = SharedLock::connect(&connect, &path).await.unwrap();
        let guard = lock.write().await.unwrap();
        let node = guard.node().to_owned();
        let started = std::time::Instant::now();
        tokio::spawn(async move {
            drop(guard);
            drop(lock);
        })
        .await
        .unwrap();
        assert!(started.elapsed() < Duration::from_millis(2500));
        node
    });
    drop(rt);
    let rt2 = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt2.block_on(async {
        let c = client().await;
        // Dropping the last handle waited for the release: it is done already.
        assert!(
            matches!(c.check_stat(&node).await, Ok(None)),
            "{node} still there"
        );
    });
}
