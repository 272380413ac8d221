//! Acquires dropped during a hand-off: while the holder's release is in
//! flight, its watch events (the deletion, the release marker's creation,
//! the record) arriving, and the next contenders being granted. Those
//! dropped leave no node behind, and those granted never overlap.

use zk_rwlock_fixtures as support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::{assert_drained, lock, unique_path};
use zk_rwlock::Mode;

/// Who holds now, as the granted tasks say: writers, readers.
#[derive(Default)]
struct Holding {
    writers: AtomicUsize,
    readers: AtomicUsize,
}

/// Rounds of a writer's release into a queue of readers and writers whose
/// acquires are dropped at instants spread across the release (before,
/// during and after its hand-off): every dropped acquire's node is
/// withdrawn, and no grant overlaps a writer's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquires_dropped_during_a_hand_off_leave_nothing_and_overlap_nothing() {
    let path = unique_path("cancel-handoff");
    let holding = Arc::new(Holding::default());
    let (mut granted, mut dropped) = (0, 0);
    for round in 0..6u64 {
        let holder_lock = lock(&path).await;
        let holder = holder_lock.write().await.unwrap();
        let shared = lock(&path).await;
        // Every session connected before the clock starts.
        let mut locks = Vec::new();
        for i in 0..24u64 {
            locks.push(if i % 3 == 0 {
                lock(&path).await
            } else {
                shared.clone()
            });
        }
        let start = tokio::time::Instant::now();
        let mut tasks = Vec::new();
        for (i, l) in (0..24u64).zip(locks) {
            let holding = holding.clone();
            // Deadlines from 30 ms to 216 ms after the start; the release
            // leaves at 60 ms.
            let until = start + Duration::from_millis(30 + i * 8 + round % 3);
            tasks.push(tokio::spawn(async move {
                let mode = if (i + round) % 4 == 0 {
                    Mode::Write
                } else {
                    Mode::Read
                };
                let Ok(granted) = tokio::time::timeout_at(until, l.acquire(mode)).await else {
                    return false;
                };
                let guard = granted.unwrap_or_else(|e| panic!("{mode} acquire {i} failed: {e}"));
                match mode {
                    Mode::Write => {
                        assert_eq!(
                            holding.writers.fetch_add(1, Ordering::SeqCst),
                            0,
                            "two writers at once"
                        );
                        assert_eq!(
                            holding.readers.load(Ordering::SeqCst),
                            0,
                            "a writer beside readers"
                        );
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        holding.writers.fetch_sub(1, Ordering::SeqCst);
                    }
                    Mode::Read => {
                        holding.readers.fetch_add(1, Ordering::SeqCst);
                        assert_eq!(
                            holding.writers.load(Ordering::SeqCst),
                            0,
                            "a reader beside a writer"
                        );
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        holding.readers.fetch_sub(1, Ordering::SeqCst);
                    }
                }
                guard.release().await.unwrap();
                true
            }));
        }
        tokio::time::sleep_until(start + Duration::from_millis(60)).await;
        holder.release().await.unwrap();
        for t in tasks {
            if t.await.unwrap() {
                granted += 1;
            } else {
                dropped += 1;
            }
        }
        assert_drained(&path).await;
    }
    // Both sides of the hand-off were exercised.
    assert!(granted > 0 && dropped > 0, "granted {granted}, dropped {dropped}");
}
