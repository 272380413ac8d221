//! Prints the ordering decisions for a sample lock directory.
//!
//! Run: `cargo run --example decisions`.

use zk_rwlock_core::ordering::{queue, Decision};

fn main() {
    // A listing as ZooKeeper returns it: unordered, with one child that is
    // not a contender, and two that got the sequence counter's limit (where
    // it sticks): they are never granted, and nobody waits on them.
    let children = [
        "web-02@00000000000000000000000000000003-W-2147483644",
        "web-01@00000000000000000000000000000001-R-2147483642",
        "batch-7-R-2147483643",
        "README",
        "web-03@00000000000000000000000000000004-R-2147483645",
        "web-01@00000000000000000000000000000005-R-2147483647",
        "web-04@00000000000000000000000000000006-W-2147483647",
        "web-05@00000000000000000000000000000007-W-2147483646",
    ];
    let q = queue(&children);
    println!("{:<4} {:<54} {:<6} decision", "pos", "node", "mode");
    for (i, place) in q.contenders.iter().enumerate() {
        let what = match place.decision {
            Decision::Granted => "HOLDS".to_owned(),
            Decision::Wait {
                watch,
                deletion_grants: true,
                ..
            } => format!("waits on {watch} (its deletion grants)"),
            Decision::Wait {
                watch,
                release_grants: true,
                ..
            } => format!("waits on {watch} (its release grants)"),
            Decision::Wait { watch, .. } => format!("waits on {watch}"),
            _ => "never granted: its sequence is at the counter's limit".to_owned(),
        };
        println!("{:<4} {:<54} {:<6} {what}", i + 1, place.name, place.mode);
    }
    for name in &q.foreign {
        println!("{:<4} {:<54} {:<6} ignored: not a contender", "-", name, "-");
    }
}
