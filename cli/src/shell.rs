//! What a shell user installs beside the binary: completions and man pages,
//! generated from the same clap definitions as `--help`, by the
//! subcommands `completions` and `man`:
//!
//! ```sh
//! # Completions (bash, zsh, fish, elvish, powershell):
//! zk-rwlock completions bash > ~/.local/share/bash-completion/completions/zk-rwlock
//! zk-rwlock completions zsh > ~/.zfunc/_zk-rwlock   # a directory on $fpath
//! zk-rwlock completions fish > ~/.config/fish/completions/zk-rwlock.fish
//! # Man pages: zk-rwlock(1) on stdout, or one page per subcommand in a directory:
//! zk-rwlock man > zk-rwlock.1
//! sudo zk-rwlock man /usr/local/share/man/man1
//! ```

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use zk_rwlock_cli::{exit, Failure};

/// Arguments of `completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Arguments of `man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write zk-rwlock.1 and one page per subcommand (zk-rwlock-exec.1, ...)
    /// into DIR instead of zk-rwlock(1) on stdout
    #[arg(value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Prints the completions of `command` for a shell.
pub fn completions(args: CompletionsArgs, mut command: clap::Command) -> ExitCode {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "zk-rwlock", &mut out);
    print(&out)
}

/// Prints the man page of `command`, or writes every page into a directory.
pub fn man(args: ManArgs, command: clap::Command) -> ExitCode {
    match args.dir {
        Some(dir) => match clap_mangen::generate_to(command, &dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => Failure::new(
                exit::SOFTWARE,
                format!("cannot write the man pages into {}: {e}", dir.display()),
            )
            .report(),
        },
        None => {
            let mut out = Vec::new();
            match clap_mangen::Man::new(command).render(&mut out) {
                Ok(()) => print(&out),
                Err(e) => Failure::new(exit::SOFTWARE, format!("cannot render the man page: {e}")).report(),
            }
        }
    }
}

fn print(out: &[u8]) -> ExitCode {
    let mut stdout = io::stdout().lock();
    match stdout.write_all(out).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`| head`): nothing more to say.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => Failure::new(exit::SOFTWARE, format!("cannot write to stdout: {e}")).report(),
    }
}
