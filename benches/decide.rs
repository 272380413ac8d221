//! `decide` and `queue` on large queues: prints figures, asserts nothing.
//!
//! Run: `cargo bench --bench decide`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use zk_rwlock::{Mode, NodeName};
use zk_rwlock_core::ordering::{decide, queue};

/// A realistic directory listing: `n` contenders written by this library,
/// one writer in ten, in ZooKeeper's (unordered) listing order.
fn children(n: usize) -> Vec<String> {
    let base: i32 = 1_000_000;
    let mut names: Vec<String> = (0..n)
        .map(|i| {
            let mode = if i % 10 == 3 { Mode::Write } else { Mode::Read };
            let token = uuid::Uuid::from_u128(0x7f3a_0c1e_9b2d_4f60_a1b2_c3d4_e5f6_0718 ^ i as u128);
            NodeName::new(
                &format!("worker-{:03}", i % 97),
                token,
                mode,
                base.wrapping_add(i as i32),
            )
            .to_string()
        })
        .collect();
    // A deterministic scramble: ZooKeeper lists children in hash order.
    let len = names.len();
    for i in 0..len {
        names.swap(i, (i * 7919 + 13) % len);
    }
    names
}

fn time<F: FnMut()>(iters: u32, mut f: F) -> (Duration, Duration) {
    let mut samples: Vec<Duration> = (0..iters)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    samples.sort();
    (samples[0], samples[samples.len() / 2])
}

fn main() {
    println!("{:<28} {:>8} {:>12} {:>12}", "case", "n", "min", "median");
    for n in [100usize, 1_000, 10_000] {
        let names = children(n);
        // The last contender: the worst case for `decide` (everyone precedes it).
        let last = queue(&names)
            .contenders
            .last()
            .map(|p| p.name.to_owned())
            .unwrap_or_default();
        let (min, med) = time(200, || {
            black_box(decide(black_box(&last), black_box(&names)).ok());
        });
        println!(
            "{:<28} {:>8} {:>12?} {:>12?}",
            "decide (last contender)", n, min, med
        );
        let (min, med) = time(50, || {
            black_box(queue(black_box(&names)).contenders.len());
        });
        println!(
            "{:<28} {:>8} {:>12?} {:>12?}",
            "queue (classify all)", n, min, med
        );
    }
}
