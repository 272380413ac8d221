//! `zk-rwlock`: run a command under a ZooKeeper read/write lock, show who
//! holds a lock and who waits on whom, or ask its holders to let go.

mod exec;
mod lead;
mod revoke;
mod shell;
mod status;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Distributed read/write locks on Apache ZooKeeper.
///
/// Set RUST_LOG (e.g. RUST_LOG=zk_rwlock=debug) for diagnostics on stderr.
#[derive(Debug, Parser)]
#[command(
    name = "zk-rwlock",
    // With the git revision it was built from, when built in the repository (build.rs).
    version = env!("ZK_RWLOCK_VERSION"),
    about,
    long_about = None,
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a command while holding a read or write lock.
    Exec(exec::Args),
    /// Show the queue of one or more locks: who holds each, who waits on whom.
    Status(status::Args),
    /// Ask the holder(s) of a lock, or one contender, to let go.
    Revoke(revoke::Args),
    /// Run a command as the leader of an election, campaigning again when it fails.
    Lead(lead::Args),
    /// (exec's keeper process; not for use by hand)
    #[command(name = "__keeper", hide = true)]
    Keeper(exec::keeper::Args),
    /// Print shell completions for SHELL on stdout
    ///
    /// Where to put them:
    ///   bash: ~/.local/share/bash-completion/completions/zk-rwlock
    ///   zsh:  ~/.zfunc/_zk-rwlock (a directory on $fpath)
    ///   fish: ~/.config/fish/completions/zk-rwlock.fish
    #[command(verbatim_doc_comment)]
    Completions(shell::CompletionsArgs),
    /// Print the man page zk-rwlock(1), or write every page into DIR
    ///
    /// For example: zk-rwlock man > zk-rwlock.1, or
    /// sudo zk-rwlock man /usr/local/share/man/man1
    #[command(verbatim_doc_comment)]
    Man(shell::ManArgs),
}

fn main() -> ExitCode {
    zk_rwlock_cli::common::init_tracing();
    let cli = Cli::parse();
    match cli.command {
        Command::Exec(args) => exec::run(args),
        Command::Status(args) => status::run(args),
        Command::Revoke(args) => revoke::run(args),
        Command::Lead(args) => lead::run(args),
        Command::Keeper(args) => exec::keeper::run(args),
        Command::Completions(args) => shell::completions(args, Cli::command()),
        Command::Man(args) => shell::man(args, Cli::command()),
    }
}
