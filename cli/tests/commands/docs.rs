//! docs/cli.md's exit codes are the binary's: for each subcommand, the
//! codes in the page's table are the codes in the "Exit codes:" list of its
//! `--help`, no more and no fewer.

use std::collections::BTreeSet;
use std::process::Command;

/// The `--help` of `zk-rwlock <subcommand>`.
fn help(subcommand: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_zk-rwlock"))
        .args([subcommand, "--help"])
        .output()
        .expect("run zk-rwlock");
    assert!(
        out.status.success(),
        "zk-rwlock {subcommand} --help: {:?}",
        out.status
    );
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// What a list of exit codes holds: the numeric codes, and whether the
/// command's own status is one of them.
#[derive(Debug, PartialEq)]
struct Codes {
    numbers: BTreeSet<u32>,
    commands_status: bool,
}

/// The numbers in `text` separated by `,` or `/`: "126 / 127", "129, 130, 143".
fn numbers(text: &str) -> Vec<u32> {
    text.split([',', '/'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse()
                .unwrap_or_else(|_| panic!("not an exit code: {s:?} in {text:?}"))
        })
        .collect()
}

/// The "Exit codes:" list of a help text: one entry a line, indented by two
/// spaces, its codes before the first double space; continuation lines are
/// indented deeper.
fn help_codes(help: &str) -> Codes {
    let start = help
        .find("\nExit codes:\n")
        .expect("an \"Exit codes:\" list in the help")
        + 13;
    let mut codes = Codes {
        numbers: BTreeSet::new(),
        commands_status: false,
    };
    for line in help[start..].lines() {
        if line.trim().is_empty() || !line.starts_with(' ') {
            break;
        }
        let Some(entry) = line.strip_prefix("  ").filter(|e| !e.starts_with(' ')) else {
            continue;
        };
        if entry.starts_with("CMD's") {
            codes.commands_status = true;
        } else if entry.starts_with(|c: char| c.is_ascii_digit()) {
            let field = entry.split("  ").next().unwrap_or(entry);
            codes.numbers.extend(numbers(field));
        }
    }
    assert!(!codes.numbers.is_empty(), "no exit codes found in:\n{help}");
    codes
}

/// The exit code table in the `## <subcommand>` section of docs/cli.md.
fn page_codes(page: &str, subcommand: &str) -> Codes {
    let heading = format!("\n## {subcommand}\n");
    let start = page
        .find(&heading)
        .unwrap_or_else(|| panic!("docs/cli.md has no section `## {subcommand}`"))
        + heading.len();
    let section = &page[start..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let table = section
        .split("| exit code | meaning |")
        .nth(1)
        .unwrap_or_else(|| panic!("docs/cli.md's `## {subcommand}` has no exit code table"));
    let mut codes = Codes {
        numbers: BTreeSet::new(),
        commands_status: false,
    };
    for row in table.lines().skip(2).take_while(|line| line.starts_with('|')) {
        let code = row.split('|').nth(1).expect("a table row").trim();
        if code == "CMD's status" {
            codes.commands_status = true;
        } else {
            codes.numbers.extend(numbers(code));
        }
    }
    codes
}

#[test]
fn the_pages_exit_codes_are_the_helps() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cli.md")).expect("docs/cli.md");
    for subcommand in ["exec", "lead", "status", "revoke"] {
        assert_eq!(
            page_codes(&page, subcommand),
            help_codes(&help(subcommand)),
            "exit codes of `zk-rwlock {subcommand}`: docs/cli.md (left) and --help (right) differ"
        );
    }
}

#[test]
fn the_parsers_read_both_forms() {
    let help = "Usage: x\n\nExit codes:\n  CMD's status  ran\n  2    usage\n       more\n  129, 130, 143  signals\n  CMD's own status may collide\n\nEnvironment:\n  X  y\n";
    let want = Codes {
        numbers: [2, 129, 130, 143].into(),
        commands_status: true,
    };
    assert_eq!(help_codes(help), want);
    let page = "# cli\n\n## exec\n\n| exit code | meaning |\n|---|---|\n| CMD's status | ran |\n| 2 | usage |\n| 129 / 130 / 143 | signals |\n\n## status\n";
    assert_eq!(page_codes(page, "exec"), want);
}
