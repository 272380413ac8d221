//! `zk-rwlock`: run a command under a ZooKeeper read/write lock, show who
//! holds a lock and who waits on whom, or ask its holders to let go.

mod exec;
mod lead;
mod revoke;
mod shell;
mod status;

use std::ffi::OsStr;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use zk_rwlock_cli::{exit, Failure};

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
    /// Run a command while holding a read or write lock, or one of N permits.
    Exec(exec::Args),
    /// Show the queue of one or more locks: who holds each, who waits on whom.
    Status(status::Args),
    /// Ask the holder(s) of a lock, or one contender, to let go.
    Revoke(revoke::Args),
    /// Run a command as the leader of an election, campaigning again when it fails.
    Lead(lead::Args),
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

/// `zk-rwlock __keeper ...`: exec's keeper process (not for use by hand).
/// Parsed apart from [`Cli`], so that no help, completion or man page
/// offers it.
#[derive(Debug, Parser)]
#[command(name = "zk-rwlock __keeper", version = env!("ZK_RWLOCK_VERSION"))]
struct KeeperCli {
    #[command(flatten)]
    args: exec::keeper::Args,
}

fn main() -> ExitCode {
    zk_rwlock_cli::common::init_tracing();
    if std::env::args_os().nth(1).as_deref() == Some(OsStr::new(exec::keeper::SUBCOMMAND)) {
        return match KeeperCli::try_parse_from(std::env::args_os().skip(1)) {
            Ok(keeper) => exec::keeper::run(keeper.args),
            Err(err) => usage_error(err),
        };
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(err),
    };
    match cli.command {
        Command::Exec(args) => exec::run(args),
        Command::Status(args) => status::run(args),
        Command::Revoke(args) => revoke::run(args),
        Command::Lead(args) => lead::run(args),
        Command::Completions(args) => shell::completions(args, Cli::command()),
        Command::Man(args) => shell::man(args, Cli::command()),
    }
}

/// Reports an error clap found in the arguments as the command line's
/// other usage errors read: one `zk-rwlock: ` line on stderr, exit 2.
/// `--help` and `--version` go to stdout as clap prints them (exit 0).
fn usage_error(err: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if !err.use_stderr() {
        err.exit();
    }
    let message = match err.kind() {
        // `zk-rwlock` alone: clap would print the whole help on stderr.
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let names: Vec<String> = Cli::command()
                .get_subcommands()
                .filter(|sub| !sub.is_hide_set())
                .map(|sub| sub.get_name().to_owned())
                .collect();
            format!(
                "no subcommand given: {} (see `zk-rwlock --help`)",
                names.join(", ")
            )
        }
        _ => {
            // The subcommand's help, when clap's text shows no usage.
            let sub = std::env::args_os().nth(1).and_then(|word| {
                let word = word.to_str()?.to_owned();
                Cli::command()
                    .get_subcommands()
                    .any(|sub| sub.get_name() == word)
                    .then_some(word)
            });
            let command = sub.map_or_else(|| "zk-rwlock".to_owned(), |sub| format!("zk-rwlock {sub}"));
            let line = one_line(&err.render().to_string(), &command);
            match from_env(&err) {
                Some((arg, var)) => line.replacen(&format!("'{arg}'"), &format!("'{arg}' (set by {var})"), 1),
                None => line,
            }
        }
    };
    Failure::new(exit::USAGE, message).report()
}

/// clap's rendering of an error (`error: ...`, maybe an indented list or
/// tips, then the usage and "For more information, try '--help'.") as one
/// line: the message, its list and tips joined, then where to read more,
/// from the usage's command (`see `zk-rwlock exec --help``), else
/// `command`'s. Pure.
fn one_line(rendered: &str, command: &str) -> String {
    let mut out = String::new();
    let mut listing = false;
    let mut usage = None;
    for line in rendered.lines() {
        let text = line.trim();
        if let Some(rest) = text.strip_prefix("Usage:") {
            usage = Some(rest.trim());
            break;
        }
        if text.is_empty() || text.starts_with("For more information") {
            continue;
        }
        if out.is_empty() {
            out.push_str(text.strip_prefix("error:").map_or(text, str::trim_start));
            listing = out.ends_with(':');
        } else if text.starts_with("tip:") {
            out.push_str("; ");
            out.push_str(text);
            listing = false;
        } else {
            out.push_str(if !listing || out.ends_with(':') { " " } else { ", " });
            out.push_str(text);
        }
    }
    let words: Vec<&str> = usage
        .unwrap_or(command)
        .split_whitespace()
        .take_while(|word| !word.starts_with(['<', '[', '-']))
        .collect();
    let command = if words.is_empty() {
        command.to_owned()
    } else {
        words.join(" ")
    };
    format!("{out} (see `{command} --help`)")
}

/// For a bad option value that came from the option's environment
/// variable (`ZK_RWLOCK_FOLLOWER_LAG=abc`) rather than the command line:
/// the option as clap names it (`--follower-lag <DUR>`) and the variable.
fn from_env(err: &clap::Error) -> Option<(String, String)> {
    use clap::error::{ContextKind, ContextValue};
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) = (
        err.get(ContextKind::InvalidArg),
        err.get(ContextKind::InvalidValue),
    ) else {
        return None;
    };
    let long = arg.split_whitespace().next()?.strip_prefix("--")?;
    let var = env_of(&Cli::command(), long)?;
    let given = std::env::args_os().skip(1).any(|word| {
        word.to_str().is_some_and(|word| {
            word.strip_prefix("--")
                .is_some_and(|w| w == long || w.starts_with(&format!("{long}=")))
        })
    });
    let set = std::env::var_os(&var).is_some_and(|v| v.to_str() == Some(value.as_str()));
    (set && !given).then(|| (arg.clone(), var))
}

/// The environment variable of the option `--long`, in `command` or a subcommand.
fn env_of(command: &clap::Command, long: &str) -> Option<String> {
    command
        .get_arguments()
        .find(|a| a.get_long() == Some(long))
        .and_then(|a| a.get_env())
        .map(|var| var.to_string_lossy().into_owned())
        .or_else(|| command.get_subcommands().find_map(|sub| env_of(sub, long)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_errors_read_as_one_line() {
        for (rendered, want) in [
            (
                "error: the argument '--write' cannot be used with '--read'\n\nUsage: zk-rwlock exec \
                 <--read|--write> <PATH> <CMD>...\n\nFor more information, try '--help'.\n",
                "the argument '--write' cannot be used with '--read' (see `zk-rwlock exec --help`)",
            ),
            (
                "error: the following required arguments were not provided:\n  <PATH>\n  <CMD>...\n\n\
                 Usage: zk-rwlock exec <--read|--write> <PATH> <CMD>...\n\nFor more information, try '--help'.\n",
                "the following required arguments were not provided: <PATH>, <CMD>... (see `zk-rwlock exec \
                 --help`)",
            ),
            (
                "error: unexpected argument '--mode' found\n\n  tip: to pass '--mode' as a value, use '-- \
                 --mode'\n\nUsage: zk-rwlock exec [OPTIONS]\n\nFor more information, try '--help'.\n",
                "unexpected argument '--mode' found; tip: to pass '--mode' as a value, use '-- --mode' (see \
                 `zk-rwlock exec --help`)",
            ),
            (
                "error: invalid value 'x' for '--on-suspend <WHAT>'\n  [possible values: lease, term, \
                 ignore]\n\nFor more information, try '--help'.\n",
                "invalid value 'x' for '--on-suspend <WHAT>' [possible values: lease, term, ignore] (see \
                 `zk-rwlock --help`)",
            ),
            (
                "error: unrecognized subcommand 'exce'\n\n  tip: a similar subcommand exists: 'exec'\n\n\
                 Usage: zk-rwlock <COMMAND>\n\nFor more information, try '--help'.\n",
                "unrecognized subcommand 'exce'; tip: a similar subcommand exists: 'exec' (see `zk-rwlock \
                 --help`)",
            ),
        ] {
            assert_eq!(one_line(rendered, "zk-rwlock"), want);
        }
        // No usage shown (a bad value): the subcommand's help.
        assert_eq!(
            one_line(
                "error: invalid value '0' for '--grace <DUR>': no\n\nFor more information, try \
                      '--help'.\n",
                "zk-rwlock lead"
            ),
            "invalid value '0' for '--grace <DUR>': no (see `zk-rwlock lead --help`)"
        );
    }

    #[test]
    fn follower_lag_names_its_variable() {
        assert_eq!(
            env_of(&Cli::command(), "follower-lag").as_deref(),
            Some("ZK_RWLOCK_FOLLOWER_LAG")
        );
        assert_eq!(
            env_of(&Cli::command(), "layout").as_deref(),
            Some("ZK_RWLOCK_LAYOUT")
        );
        assert_eq!(env_of(&Cli::command(), "grace"), None);
    }

    #[test]
    fn the_keeper_is_no_subcommand_of_the_cli() {
        assert!(Cli::command()
            .get_subcommands()
            .all(|sub| sub.get_name() != exec::keeper::SUBCOMMAND));
        // It parses on its own, as exec starts it.
        let keeper = KeeperCli::try_parse_from([
            "__keeper",
            "--control-fd",
            "3",
            "--kill-after-ns",
            "1",
            "--deadline=-5",
            "true",
        ]);
        assert!(keeper.is_ok(), "{keeper:?}");
    }
}
