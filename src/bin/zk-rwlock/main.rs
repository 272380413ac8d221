//! `zk-rwlock`: run a command under a ZooKeeper read/write lock, inspect a
//! lock, or watch many processes share one lock in a demo.

mod bench;
mod common;
mod demo;
mod exec;
mod status;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Distributed read/write locks on Apache ZooKeeper.
///
/// Set RUST_LOG (e.g. RUST_LOG=zk_rwlock=debug) for diagnostics on stderr.
#[derive(Debug, Parser)]
#[command(name = "zk-rwlock", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a command while holding a read or write lock.
    Exec(exec::Args),
    /// Show the queue of a lock: who holds it, who waits on whom.
    Status(status::Args),
    /// Run many worker processes that share one lock, draw their timeline,
    /// and check that no writer ever overlapped anyone.
    Demo(demo::Args),
    /// Measure lock throughput and latency against a ZooKeeper server
    /// (the workloads of the Curator/kazoo comparison), printing JSON.
    Bench(bench::Args),
    /// One worker process of `demo` (internal).
    #[command(hide = true)]
    DemoWorker(demo::WorkerArgs),
}

fn main() -> ExitCode {
    common::init_tracing();
    let cli = Cli::parse();
    match cli.command {
        Command::Exec(args) => exec::run(args),
        Command::Status(args) => status::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Bench(args) => bench::run(args),
        Command::DemoWorker(args) => demo::run_worker(args),
    }
}
