//! Attacks on the protocol, each against a real server: a stray write and
//! a withdrawal that look like a release, blocking handles dropped inside a
//! runtime, a recycled directory and other identities, forged names, a
//! reconnect storm during hand-offs, and the last handle dropped in a
//! current-thread task.

use zk_rwlock_testkit as support;

use std::time::Duration;

use support::{client, eventually, joined, server, unique_path};
use zk_rwlock::{zk, Mode, SharedLock};

const SHORT: Duration = Duration::from_secs(10);

/// Two holders, if `release_grants` trusted "a data change on the
/// watched node, then getData says NoNode" as proof that a writer that
/// HELD the lock released it. But a data change followed by a deletion of
/// a node that never held (a stray write, then the waiter gives up / its
/// session ends) looks exactly the same from the watcher's side.
///
/// Interleaving (one round):
///   1. A (zk-rwlock) holds the write lock: A-W-0.
///   2. F (another client following the wire protocol) queues as a writer:
///      f-W-1, ephemeral sequential. It waits behind A.
///   3. C (zk-rwlock) asks for `mode`: C-?-2. For a writer, its predecessors
///      are A and F, its immediate predecessor F is a writer, so decide()
///      says Wait { watch: f-W-1, deletion_grants: false, release_grants:
///      true }; for a reader, F is the last of two writers before it: the
///      same answer.
///   4. Someone writes F's node (zkCli `set`, a monitoring tool, F itself);
///      right after, F gives up and deletes its node (timeout, Ctrl-C,
///      expiry). No mark, F never held. (`marked` = true: F sends both in
///      one multi, which makes the interleaving deterministic; otherwise
///      they are pipelined and C's getData usually, not always, arrives
///      after the delete.)
///   5. C sees NodeDataChanged, getData(f-W-1) -> NoNode. Had it taken that
///      for a release, C would be granted while A still holds the write
///      lock; the release record in the directory's data does not name F,
///      so C lists again and waits on A.
///
/// Returns the node C was granted while A held, if it was.
async fn stray_write_round(mode: Mode, marked: bool) -> Option<String> {
    let path = unique_path("stray-then-gone");
    let a = support::lock(&path).await;
    let held = a.write().await.unwrap();
    let f = client().await;
    let (_, seq) = f
        .create(
            &format!("{path}/f-W-"),
            &[],
            &zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let f_node = format!("{path}/f-W-{:010}", seq.into_i64());
    let c = support::lock(&path).await;
    let c_session = c.client().session_id().0;
    let waiter = tokio::spawn(async move { c.acquire(mode).await });
    eventually("C watches F's node", SHORT, || async {
        support::watches(server(), &f_node, c_session)
    })
    .await;
    // Step 4: a stray write, then F withdraws.
    if marked {
        let mut multi = f.new_multi_writer();
        multi.add_set_data(&f_node, b"hello", None).unwrap();
        multi.add_delete(&f_node, None).unwrap();
        multi.commit().await.unwrap();
    } else {
        let write = f.set_data(&f_node, b"hello", None);
        let delete = f.delete(&f_node, None);
        write.await.unwrap();
        delete.await.unwrap();
    }
    // Correct: C lists again and watches A's node. Wrong: C is granted.
    let a_node = held.node().to_owned();
    eventually("C re-decides (watches A) or is granted", SHORT, || async {
        waiter.is_finished() || support::watches(server(), &a_node, c_session)
    })
    .await;
    let wrong = if waiter.is_finished() {
        let g = waiter.await.unwrap().unwrap();
        let node = g.node().to_owned();
        assert!(held.is_held());
        g.release().await.unwrap();
        held.release().await.unwrap();
        Some(node)
    } else {
        held.release().await.unwrap();
        joined(SHORT, waiter).await.unwrap().release().await.unwrap();
        None
    };
    support::assert_drained(&path).await;
    wrong
}

/// A writer, pipelined write+delete: 20 rounds (each round
/// reproduces it most of the time on this machine).
#[tokio::test]
async fn stray_write_then_withdrawal_of_a_waiter_grants_a_second_writer() {
    for round in 0..20 {
        if let Some(node) = stray_write_round(Mode::Write, false).await {
            panic!("round {round}: writer {node} was granted while another writer held the lock");
        }
    }
}

/// A reader, pipelined write+delete.
#[tokio::test]
async fn stray_write_then_withdrawal_of_a_waiting_writer_grants_a_reader() {
    for round in 0..20 {
        if let Some(node) = stray_write_round(Mode::Read, false).await {
            panic!("round {round}: reader {node} was granted while a writer held the lock");
        }
    }
}

/// Deterministic: F's write and deletion in one transaction.
#[tokio::test]
async fn a_marked_deletion_of_a_node_that_never_held_grants_a_second_writer() {
    if let Some(node) = stray_write_round(Mode::Write, true).await {
        panic!("writer {node} was granted while another writer held the lock");
    }
}

/// No crash in Drop: `blocking::Guard` keeps an `Arc<Runtime>` of
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

/// Held up (kept as a regression guard): `queue()` gives every contender
/// the same decision as `decide()`, over every queue of up to 4 nodes
/// drawn from sequences {0, 1, 2, MAX, -1, -2147483648} (duplicates
/// included) and both modes.
#[test]
fn queue_agrees_with_decide_exhaustively() {
    use zk_rwlock::ordering::{decide, queue};
    let seqs = [0, 1, 2, i32::MAX, -1, i32::MIN];
    let mut count = 0;
    for n in 1..=4usize {
        let combos = (seqs.len() * 2).pow(n as u32);
        for mut k in 0..combos {
            let mut names = Vec::new();
            for i in 0..n {
                let pick = k % (seqs.len() * 2);
                k /= seqs.len() * 2;
                let seq = seqs[pick / 2];
                let mode = if pick % 2 == 0 { 'R' } else { 'W' };
                names.push(format!("h{i}-{mode}-{seq:010}"));
            }
            let q = queue(&names);
            for me in &names {
                let d = decide(me, &names).unwrap();
                let p = q.contenders.iter().find(|p| p.name == me.as_str()).unwrap();
                assert_eq!(p.decision, d, "{me} in {names:?}");
                count += 1;
            }
        }
    }
    assert!(count > 0);
}

/// A server of this binary's own whose `/adversarial/acl-flip` directory
/// (open to anyone, as seeded) has its sequence counter at the limit.
fn seeded_server() -> &'static zk_rwlock_testkit::launcher::ZkCluster {
    static SEEDED: std::sync::OnceLock<zk_rwlock_testkit::launcher::ZkCluster> = std::sync::OnceLock::new();
    SEEDED.get_or_init(|| {
        zk_rwlock_testkit::launcher::ZkCluster::builder()
            .seed_cversion("/adversarial/acl-flip", i32::MAX)
            .start()
            .expect("seeded server")
    })
}

/// A lock on `path` for a session with digest credentials `user`
/// (`name:password`) whose contender nodes only that identity may touch.
async fn creator_only(connect: &str, path: &str, user: &str) -> zk_rwlock::LockBuilder {
    let client = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .with_auth("digest", user.as_bytes())
        .connect(connect)
        .await
        .unwrap();
    SharedLock::builder(client, path).acls(&zk::Acls::creator_all())
}

/// Other identities keep their access when the directory is recycled: it
/// is deleted and created again, with the same ACL, in one transaction. A
/// directory that was simply deleted would be recreated by the next
/// contender with its `LockBuilder::directory_acls` (by default its
/// contender nodes' ACL): that happens to the directories the
/// library makes (container nodes) when ZooKeeper removes them, and to
/// those deleted by hand. A lock shared by identities that protect their
/// contender nodes with `creator_all` (the setup of
/// hardening::contenders_of_different_identities_watch_each_others_nodes)
/// stays shared when its directory is open (see
/// `a_creator_only_lock_with_an_open_directory_lets_others_queue`); only an
/// operator's pre-made directory ACL is lost when the directory is deleted.
///
/// Interleaving: the directory (open to anyone) is at the limit; Alice's
/// acquire is refused (SequenceExhausted) and deletes the empty directory;
/// Alice's next acquire recreates it as a container with creator_all
/// (digest alice); Bob, who could queue there before, now gets NoAuth.
#[tokio::test]
async fn a_recreated_directory_keeps_other_identities_out() {
    let path = "/adversarial/acl-flip";
    let connect = seeded_server().connect_string();
    let alice = creator_only(&connect, path, "alice:secret")
        .await
        .build()
        .unwrap();
    let bob = creator_only(&connect, path, "bob:secret").await.build().unwrap();
    // Bob can use the directory as it is (the counter is at the limit, so
    // he is refused with SequenceExhausted, not NoAuth) ... but that would
    // recycle it; so check his permission with a plain child instead.
    let probe = format!("{path}/probe");
    bob.client()
        .create(
            &probe,
            &[],
            &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .expect("Bob may create children in the seeded directory");
    bob.client().delete(&probe, None).await.unwrap();
    match alice.write().await {
        Err(zk_rwlock::Error::SequenceExhausted { .. }) => {}
        other => panic!("expected SequenceExhausted at the limit, got {other:?}"),
    }
    let c = support::client_on(&connect).await;
    // Recycled in place: the same directory, its counter from 0 again.
    let g = alice.write().await.expect("the directory was recycled");
    let seq = g.node().rsplit('-').next().unwrap().parse::<i64>().unwrap();
    assert!(seq < 10, "a fresh counter: {}", g.node());
    g.release().await.unwrap();
    let bobs = bob.try_write().await;
    assert!(
        bobs.is_ok(),
        "after Alice recreated the lock directory, Bob gets {bobs:?} (directory ACL now {:?})",
        c.get_acl(path).await.map(|(acl, _)| acl)
    );
}

/// `NodeName` promises "FromStr and Display
/// round-trip exactly", but `-000000000` (not something ZooKeeper prints)
/// parses as sequence 0 and prints back as `0000000000`.
#[test]
fn negative_zero_sequence_is_not_a_contender_name() {
    let name = "h-W--000000000";
    if let Ok(parsed) = name.parse::<zk_rwlock::NodeName>() {
        assert_eq!(
            parsed.to_string(),
            name,
            "round trip of {name:?} (parsed as seq {})",
            parsed.seq()
        );
    }
}

/// Held up: reconnect storms during hand-offs. Six contenders (3 writers,
/// 3 readers) on sessions through one proxy, which cuts every connection
/// every 150 ms and arms a cut right after a random request type (create,
/// getData, getChildren, multi, delete). An in-process checker counts
/// holders; no session expires in this test, so any overlap is a bug.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_storm_during_hand_offs_keeps_exclusion() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use support::proxy::{op, Proxy};
    let path = unique_path("storm");
    let proxy = Arc::new(Proxy::start(&server().connect_string()));
    let state = Arc::new(Mutex::new((0usize, 0usize, 0usize))); // readers, writers, violations
    let stop = Arc::new(AtomicBool::new(false));
    let grants = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut workers = Vec::new();
    for i in 0..6 {
        let mode = if i % 2 == 0 { Mode::Write } else { Mode::Read };
        let (state, stop, grants, errors, proxy, path) = (
            state.clone(),
            stop.clone(),
            grants.clone(),
            errors.clone(),
            proxy.clone(),
            path.clone(),
        );
        workers.push(tokio::spawn(async move {
            let client = zk::Client::connector()
                .with_session_timeout(Duration::from_secs(8))
                .connect(proxy.addr())
                .await
                .unwrap();
            let lock = SharedLock::new(client, &path).unwrap();
            while !stop.load(Ordering::SeqCst) {
                let guard = match lock.acquire_timeout(mode, Duration::from_secs(3)).await {
                    Ok(Some(g)) => g,
                    Ok(None) => continue,
                    Err(e) => {
                        errors.lock().unwrap().push(format!("acquire {mode}: {e}"));
                        if e.is_session_over() {
                            return;
                        }
                        continue;
                    }
                };
                {
                    let mut s = state.lock().unwrap();
                    let bad = match mode {
                        Mode::Write => s.0 > 0 || s.1 > 0,
                        Mode::Read => s.1 > 0,
                    };
                    if bad {
                        s.2 += 1;
                        errors
                            .lock()
                            .unwrap()
                            .push(format!("overlap: {mode} {} granted with {s:?}", guard.node()));
                    }
                    match mode {
                        Mode::Write => s.1 += 1,
                        Mode::Read => s.0 += 1,
                    }
                }
                grants.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(2 + (i as u64) * 2)).await;
                {
                    let mut s = state.lock().unwrap();
                    match mode {
                        Mode::Write => s.1 -= 1,
                        Mode::Read => s.0 -= 1,
                    }
                }
                if let Err(e) = guard.release().await {
                    errors.lock().unwrap().push(format!("release {mode}: {e}"));
                }
            }
        }));
    }
    let ops = [
        op::CREATE2,
        op::CREATE,
        op::GET_DATA,
        op::GET_CHILDREN,
        op::MULTI,
        op::DELETE,
    ];
    let started = std::time::Instant::now();
    let mut k = 0;
    while started.elapsed() < Duration::from_secs(8) {
        tokio::time::sleep(Duration::from_millis(150)).await;
        if k % 2 == 0 {
            proxy.cut_all();
        } else {
            proxy.cut_after_request(&[ops[k % ops.len()]]);
        }
        k += 1;
    }
    proxy.cut_after_request(&[]);
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        joined(Duration::from_secs(30), w).await;
    }
    let s = *state.lock().unwrap();
    let errors = errors.lock().unwrap().clone();
    eprintln!(
        "storm: grants={} cuts fired={} errors={:?}",
        grants.load(Ordering::SeqCst),
        proxy.fired(),
        errors
    );
    assert_eq!(s.2, 0, "overlaps: {errors:?}");
    assert!(grants.load(Ordering::SeqCst) > 0);
    support::assert_drained(&path).await;
}

/// Held up: the last handle of a lock (a guard, then the lock) dropped
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

/// A lock whose contender nodes are `creator_all` and whose directory is
/// given an open ACL (`directory_acls`) makes a missing lock directory (and
/// parents) open: another identity can queue on it, and only the contender
/// nodes are the creator's alone. Without `directory_acls` the directory
/// takes the contender nodes' ACL (see `tests/secured.rs`).
#[tokio::test]
async fn a_creator_only_lock_with_an_open_directory_lets_others_queue() {
    let path = "/adversarial/fresh-parent/creator-dir";
    let connect = seeded_server().connect_string();
    let open_dir = |b: zk_rwlock::LockBuilder| b.directory_acls(&zk::Acls::anyone_all()).build().unwrap();
    let alice = open_dir(creator_only(&connect, path, "alice:secret").await);
    let bob = open_dir(creator_only(&connect, path, "bob:secret").await);
    let g = alice.write().await.expect("alice makes the directory and holds");
    let c = support::client_on(&connect).await;
    for dir in ["/adversarial/fresh-parent", path] {
        let (acl, _) = c.get_acl(dir).await.unwrap();
        assert_eq!(acl, zk::Acls::anyone_all().to_vec(), "the ACL of {dir}");
    }
    let refused = c.get_data(g.node()).await;
    assert_eq!(
        refused.err(),
        Some(zk::Error::NoAuth),
        "alice's node is hers alone"
    );
    assert!(
        bob.try_write().await.unwrap().is_none(),
        "bob queues (and gives up) beside alice's holder"
    );
    g.release().await.unwrap();
    let b = bob
        .try_write()
        .await
        .unwrap()
        .expect("bob takes the lock after alice");
    b.release().await.unwrap();
}
