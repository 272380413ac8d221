//! What a shell user installs, generated from the clap definitions: the
//! completions and man pages, listed in `--help`, and `--version` (with
//! the git revision when built in the repository). No server needed.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_zk-rwlock");

/// Runs `zk-rwlock <args>`: its exit status must be 0; returns stdout.
fn stdout_of(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().expect("run zk-rwlock");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "zk-rwlock {args:?}: {:?}\n{stderr}",
        out.status
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

#[test]
fn completions_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout_of(&["completions", shell]);
        for word in ["zk-rwlock", "exec", "status", "revoke", "lead", "--on-suspend"] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    let bad = Command::new(BIN).args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2), "an unknown shell is a usage error");
}

#[test]
fn man_pages_on_stdout_and_in_a_directory() {
    let page = stdout_of(&["man"]);
    assert!(page.contains(".TH zk-rwlock 1"), "{page}");
    assert!(page.contains("exec") && page.contains("status"), "{page}");

    let dir = std::env::temp_dir().join(format!("zk-rwlock-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    stdout_of(&["man", dir.to_str().unwrap()]);
    for name in [
        "zk-rwlock",
        "zk-rwlock-exec",
        "zk-rwlock-status",
        "zk-rwlock-revoke",
        "zk-rwlock-lead",
    ] {
        let page = std::fs::read_to_string(dir.join(format!("{name}.1"))).expect(name);
        assert!(page.contains(".TH"), "{name}.1: {page}");
    }
    let exec = std::fs::read_to_string(dir.join("zk-rwlock-exec.1")).unwrap();
    assert!(exec.contains("on\\-suspend"), "{exec}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn version_names_the_package_version() {
    let version = stdout_of(&["--version"]);
    let expected = format!("zk-rwlock {}", env!("CARGO_PKG_VERSION"));
    assert!(version.starts_with(&expected), "{version}");
    // `0.1.0` alone, or `0.1.0 (<revision>)` when built in the repository.
    let rest = version.trim_end().strip_prefix(&expected).unwrap();
    assert!(
        rest.is_empty()
            || (rest.starts_with(" (")
                && rest.ends_with(')')
                && rest[2..rest.len() - 1].chars().all(|c| c.is_ascii_hexdigit())),
        "{version}"
    );
    assert_eq!(
        stdout_of(&["exec", "--version"]),
        version.replacen("zk-rwlock", "zk-rwlock-exec", 1)
    );
}

/// `completions` and `man` are listed in `--help`; the keeper's
/// subcommand is not.
#[test]
fn help_lists_completions_and_man() {
    let help = stdout_of(&["--help"]);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        commands,
        ["exec", "status", "revoke", "lead", "completions", "man", "help"],
        "{help}"
    );
}
