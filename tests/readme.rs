//! Every `rust` code block of README.md appears, line by line, in
//! `examples/readme.rs`, which `cargo test` compiles: the README's code
//! compiles.

fn blocks(markdown: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in markdown.lines() {
        match current.as_mut() {
            None if line.trim_start().starts_with("```rust") => current = Some(Vec::new()),
            Some(_) if line.trim_start().starts_with("```") => blocks.extend(current.take()),
            Some(block) => block.push(line.trim().to_owned()),
            None => {}
        }
    }
    blocks
}

#[test]
fn every_readme_block_is_compiled_in_the_readme_example() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let example = std::fs::read_to_string(format!("{root}/examples/readme.rs")).expect("examples/readme.rs");
    let example: Vec<String> = example.lines().map(|l| l.trim().to_owned()).collect();
    let blocks = blocks(&readme);
    assert!(
        blocks.len() >= 4,
        "found only {} rust blocks in README.md",
        blocks.len()
    );
    for block in blocks {
        let found = example
            .windows(block.len())
            .any(|window| window == block.as_slice());
        assert!(
            found,
            "this README block is not in examples/readme.rs:\n{}",
            block.join("\n")
        );
    }
}

/// The README's table of metrics (section "Metrics") lists exactly the
/// metrics of `zk_rwlock::metrics::METRICS`, each with its type and labels.
#[test]
fn the_readme_lists_every_metric_the_library_records() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let rows: Vec<(String, String, Vec<String>)> = readme
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
    assert_eq!(rows, code, "README.md's table of metrics and METRICS differ");
}
