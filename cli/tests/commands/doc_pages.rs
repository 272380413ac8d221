//! The repository's pages hold together: every relative link between README.md,
//! ARCHITECTURE.md and `docs/*.md` resolves (the file exists; an `#anchor`
//! names a heading of that file), the README maps every page of `docs/`,
//! and the metrics table lists exactly what the library records. (Their
//! Rust blocks are doctests: see `src/lib.rs`.)

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The repository's root (this crate is `cli/`).
fn root() -> &'static Path {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR"));
    cli.parent().unwrap_or(cli)
}

/// README.md, ARCHITECTURE.md and every `docs/*.md`.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of `markdown` outside fenced code blocks.
fn prose(markdown: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push(line);
        }
    }
    lines
}

/// The targets of the inline links and images on `line`: `[text](target)`.
fn link_targets(line: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        targets.push(after[..end].trim());
        rest = &after[end..];
    }
    targets
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-`
/// and `_` dropped, spaces made `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings, as GitHub makes them (a repeated
/// heading gets `-1`, `-2`, ...).
fn anchors(markdown: &str) -> HashSet<String> {
    let mut anchors = HashSet::new();
    for line in prose(markdown) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = slug(heading);
        let mut anchor = base.clone();
        let mut n = 0;
        while !anchors.insert(anchor.clone()) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
    }
    anchors
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(
        slug(" What a holder knows: held, suspended, lost"),
        "what-a-holder-knows-held-suspended-lost"
    );
    assert_eq!(slug("CMD's process tree"), "cmds-process-tree");
    assert_eq!(slug("`exec`, and `MultiLock`"), "exec-and-multilock");
    let twice = anchors("# A\n\n```\n# not a heading\n```\n## A\n#hashtag\n");
    let want: HashSet<String> = ["a", "a-1"].map(str::to_owned).into();
    assert_eq!(twice, want);
    assert_eq!(
        link_targets("see [a](x.md#b) and ![c](d.svg), `[e]`"),
        ["x.md#b", "d.svg"]
    );
}

#[test]
fn every_relative_link_between_the_docs_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = read(&page);
        let dir = page.parent().expect("a page's directory");
        for line in prose(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target, None),
                };
                let file = if path.is_empty() {
                    page.clone()
                } else {
                    dir.join(path)
                };
                if !file.exists() {
                    broken.push(format!("{}: {target}: no such file", page.display()));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if file.extension().is_none_or(|ext| ext != "md") {
                    broken.push(format!(
                        "{}: {target}: an anchor into a file that is not markdown",
                        page.display()
                    ));
                } else if !anchors(&read(&file)).contains(anchor) {
                    broken.push(format!(
                        "{}: {target}: no heading has that anchor",
                        page.display()
                    ));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: is the link parser broken?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The README is the map: it links every page of `docs/`, and names the two
/// commands (the CI runs `scripts/test.sh`).
#[test]
fn the_readme_maps_every_page_and_names_the_two_commands() {
    let readme = read(&root().join("README.md"));
    for page in pages().iter().skip(2) {
        let name = page.file_name().and_then(|n| n.to_str()).expect("a page's name");
        assert!(
            readme.contains(&format!("](docs/{name})")),
            "README.md does not link docs/{name}"
        );
    }
    assert!(
        readme.contains("](ARCHITECTURE.md)"),
        "README.md does not link ARCHITECTURE.md"
    );
    for command in ["./scripts/demo.sh", "./scripts/test.sh"] {
        assert!(readme.contains(command), "README.md does not name {command}");
    }
}

/// The table of metrics in docs/metrics.md lists exactly the metrics of
/// `zk_rwlock::metrics::METRICS`, each with its type and labels.
#[test]
fn the_metrics_page_lists_every_metric_the_library_records() {
    let page = read(&root().join("docs/metrics.md"));
    let rows: Vec<(String, String, Vec<String>)> = page
        .lines()
        .filter(|line| line.starts_with("| `zk_rwlock_"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            assert!(
                cells.len() >= 6 && !cells[4].is_empty(),
                "a metric row needs a meaning: {line}"
            );
            let unquote = |cell: &str| cell.trim_matches('`').to_owned();
            let labels = cells[3]
                .split(',')
                .map(str::trim)
                .filter(|label| !label.is_empty())
                .map(unquote)
                .collect();
            (unquote(cells[1]), cells[2].to_owned(), labels)
        })
        .collect();
    let code: Vec<(String, String, Vec<String>)> = zk_rwlock::metrics::METRICS
        .iter()
        .map(|m| {
            let labels = m.labels.iter().map(|l| (*l).to_owned()).collect();
            (m.name.to_owned(), m.kind.as_str().to_owned(), labels)
        })
        .collect();
    assert_eq!(
        rows, code,
        "docs/metrics.md's table of metrics and METRICS differ"
    );
}

/// What the docs tell a newcomer to run can be run as written: no
/// placeholder where a command needs a value, and every `cargo install`
/// uses the locked versions the minimum Rust version is checked against.
#[test]
fn documented_install_commands_can_be_run_as_written() {
    for page in pages() {
        let text = read(&page);
        for (n, line) in text.lines().enumerate() {
            let at = format!("{}:{}", page.display(), n + 1);
            assert!(
                !line.contains("<this repository>"),
                "{at}: a placeholder for a command: {line}"
            );
            if let Some(i) = line.find("cargo install") {
                let command = &line[i..];
                assert!(
                    command.contains("--locked"),
                    "{at}: `cargo install` without --locked: {line}"
                );
            }
        }
    }
}

/// `scripts/demo.sh` and `scripts/dev-server.sh` run the binary cargo
/// built, wherever cargo puts it (`CARGO_TARGET_DIR` included), and say
/// that they are building.
#[test]
fn the_first_run_scripts_find_what_cargo_built_and_say_they_build() {
    let helper = read(&root().join("scripts/build-bin.sh"));
    assert!(
        helper.contains("\"executable\""),
        "build-bin.sh reads cargo's artifact paths"
    );
    assert!(helper.contains("the first build takes a few minutes"));
    for script in ["scripts/demo.sh", "scripts/dev-server.sh"] {
        let text = read(&root().join(script));
        assert!(
            text.contains("scripts/build-bin.sh"),
            "{script} builds through build-bin.sh"
        );
        assert!(!text.contains("target/debug"), "{script} assumes target/debug");
    }
}
