//! Fuzzing of the library's parsers at the byte level: node names in every
//! layout, lock paths and identities, release records, connect strings, and
//! ordering decisions over arbitrary child lists.
//!
//! proptest stands in for `cargo fuzz` (which needs a nightly toolchain):
//! inputs are arbitrary bytes read as (lossy) UTF-8, arbitrary strings, and
//! near-valid names with bytes changed, so that the parsers' edges are met
//! as well as noise. The property everywhere: no panic; where a format is
//! defined, parse and format round-trip. Failing seeds are kept in
//! `proptest-regressions/`.

use std::str::FromStr;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use uuid::Uuid;
use zk_rwlock::node_name::{
    is_contender_name, is_lock_directory_data, record_names, release_marker, release_record, released_node,
    revocation_target, RevocationTarget,
};
use zk_rwlock::{connect_client, validate_identity, validate_path, Error, Layout, Mode, NodeName};
use zk_rwlock_core::ordering::{decide, downgrade, leader, queue, Decision};

fn config(cases: u32, file: &'static str) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        ..ProptestConfig::default()
    }
}

/// Bytes read as UTF-8 (lossily): what a child name from the server may be.
fn lossy() -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<u8>(), 0..96).prop_map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Read), Just(Mode::Write)]
}

fn layout() -> impl Strategy<Value = Layout> {
    proptest::sample::select(Layout::ALL.to_vec())
}

/// A name written in some layout, then mangled: bytes replaced, cut short,
/// or extended, so that inputs sit close to the accepted ones.
fn near_name() -> impl Strategy<Value = String> {
    (
        layout(),
        "[a-z0-9.@_-]{0,12}",
        any::<u128>(),
        mode(),
        any::<i32>(),
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
        0usize..4,
        "[-0-9a-zA-Z_@]{0,4}",
    )
        .prop_map(|(layout, identity, token, mode, seq, edits, cut, tail)| {
            let name = NodeName::new_in(layout, &identity, Uuid::from_u128(token), mode, seq)
                .map(|n| n.to_string())
                .unwrap_or_else(|| format!("{identity}-W-{seq:010}"));
            let mut bytes = name.into_bytes();
            for (at, b) in edits {
                let i = at.index(bytes.len().max(1));
                if i < bytes.len() {
                    bytes[i] = b;
                }
            }
            bytes.truncate(bytes.len().saturating_sub(cut));
            bytes.extend_from_slice(tail.as_bytes());
            String::from_utf8_lossy(&bytes).into_owned()
        })
}

/// Any input: noise, arbitrary strings, or near-valid names.
fn input() -> impl Strategy<Value = String> {
    prop_oneof![lossy(), any::<String>(), near_name()]
}

/// Short strings after `prefix` of ASCII letters and separators mixed with
/// characters at the edges of ZooKeeper's ranges of refused characters.
fn with_characters(prefix: &'static str) -> impl Strategy<Value = String> {
    let edges = proptest::sample::select(vec![
        '\0',
        '\u{1}',
        '\t',
        '\n',
        '\u{1e}',
        '\u{1f}',
        ' ',
        '~',
        '\u{7f}',
        '\u{80}',
        '\u{85}',
        '\u{9f}',
        '\u{a0}',
        '\u{2028}',
        '\u{d7ff}',
        '\u{e000}',
        '\u{f8ff}',
        '\u{f900}',
        '\u{ffef}',
        '\u{fff0}',
        '\u{fffd}',
        '\u{ffff}',
        '\u{10000}',
        '\u{1f512}',
        '\u{10ffff}',
    ]);
    let plain = proptest::sample::select(vec!['a', 'z', '.', '-', '/', '@', 'é']);
    proptest::collection::vec(prop_oneof![edges, plain], 1..10)
        .prop_map(move |chars| format!("{prefix}{}", chars.into_iter().collect::<String>()))
}

/// Whether ZooKeeper takes every character of `path`, by its own rules,
/// written here from them independently of the library: its client's check
/// over code points (NUL to U+001F, U+007F to U+009F, U+D800 to U+F8FF,
/// U+FFF0 to U+FFFF refused) and its server's `PathUtils.validatePath`,
/// which reads the path as UTF-16 code units (the same ranges; characters
/// beyond U+FFFF are surrogates there).
fn zookeeper_takes_characters(path: &str) -> bool {
    let refused = |u: u32| {
        (0x0000..=0x001f).contains(&u)
            || (0x007f..=0x009f).contains(&u)
            || (0xd800..=0xf8ff).contains(&u)
            || (0xfff0..=0xffff).contains(&u)
    };
    let client = path.chars().all(|c| !refused(u32::from(c)));
    let server = path.encode_utf16().all(|unit| !refused(u32::from(unit)));
    client && server
}

/// Whether `message` is one line without control characters (a raw
/// newline or other), as messages must be.
fn one_line(message: &str) -> bool {
    !message
        .chars()
        .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
}

/// Everything that reads a child name or a record, on one input: nothing
/// may panic, and a name that parses prints back to itself.
fn check_name(s: &str) {
    let parsed = NodeName::from_str(s);
    assert_eq!(parsed.is_ok(), is_contender_name(s), "{s:?}: {parsed:?}");
    match parsed {
        Ok(name) => {
            assert_eq!(name.to_string(), s, "{name:?}");
            assert!(name.host().starts_with(name.identity()), "{name:?}");
            assert_eq!(NodeName::from_str(&name.to_string()).as_ref(), Ok(&name));
            assert!(name.layout().marker(name.mode()).is_some(), "{name:?}");
        }
        Err(e) => {
            assert_eq!(e.name(), s);
            let _ = (e.reason(), e.to_string());
        }
    }
    let _ = revocation_target("/locks/a", s);
    let _ = revocation_target(s, s);
    let _ = is_lock_directory_data(s.as_bytes());
    let record = release_record(s);
    let _ = record_names(record, s);
    let _ = record_names(s.as_bytes(), s);
    let _ = released_node(s.as_bytes());
    let _ = release_marker(s);
    let _ = validate_path(s);
    let _ = validate_identity(s);
    let _ = Layout::from_str(s);
}

proptest! {
    #![proptest_config(config(4096, "proptest-regressions/malformed_input.txt"))]

    /// Any bytes as a child name, lock path, identity or record: no panic;
    /// a parsed name round-trips.
    #[test]
    fn names_never_panic(s in input()) {
        check_name(&s);
    }

    /// A name written in any layout for any valid identity parses back to
    /// what was written.
    #[test]
    fn written_names_round_trip(
        layout in layout(),
        identity in "[a-zA-Z0-9._-]{1,16}",
        token in any::<u128>(),
        mode in mode(),
        seq in 0..=i32::MAX,
    ) {
        prop_assume!(validate_identity(&identity).is_ok());
        let token = Uuid::from_u128(token);
        let Some(name) = NodeName::new_in(layout, &identity, token, mode, seq) else {
            prop_assert!(!layout.supports(mode));
            return Ok(());
        };
        let text = name.to_string();
        let back = NodeName::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        prop_assert_eq!(&back, &name);
        prop_assert_eq!(back.token(), Some(token));
        prop_assert_eq!(back.layout(), layout);
        prop_assert_eq!(back.mode(), mode);
        prop_assert_eq!(back.seq(), seq);
        prop_assert!(text.starts_with(&layout.prefix(&identity, token, mode).unwrap()));
        match revocation_target("/locks/a", &text) {
            RevocationTarget::Ask(node) => prop_assert!(layout.revocable() && node == text),
            RevocationTarget::NotRevocable { .. } => prop_assert!(!layout.revocable()),
            other => prop_assert!(false, "{text}: {other:?}"),
        }
        // Only a native writer's release leaves a record.
        let recorded = layout == Layout::Native && mode == Mode::Write;
        prop_assert_eq!(released_node(release_record(&text)), recorded.then_some(text.as_str()));
        prop_assert!(record_names(release_record(&text), &text));
    }

    /// A lock path that passes validation is a path ZooKeeper takes: it
    /// starts with `/`, has no empty part, does not end with `/`, has no
    /// character ZooKeeper refuses, and is not in ZooKeeper's own tree. A
    /// path refused for a character has one ZooKeeper refuses, and every
    /// refusal is an `InvalidPath` in one line.
    #[test]
    fn valid_paths_are_zookeeper_paths(
        s in prop_oneof![input(), "(/[a-z@._-]{0,6}){1,4}/?", with_characters("/"), "/zookeeper(/[a-z]{0,3})?"]
    ) {
        match validate_path(&s) {
            Ok(()) => {
                prop_assert!(s.starts_with('/'), "{s:?}");
                prop_assert!(s == "/" || !s.ends_with('/'), "{s:?}");
                prop_assert!(!s.contains("//"), "{s:?}");
                prop_assert!(zookeeper_takes_characters(&s), "{s:?}");
                prop_assert!(s != "/zookeeper" && !s.starts_with("/zookeeper/"), "{s:?}");
            }
            Err(e @ Error::InvalidPath { .. }) => {
                let message = e.to_string();
                prop_assert!(one_line(&message), "{message:?}");
                let Error::InvalidPath { reason, .. } = e else { unreachable!() };
                if reason.starts_with("it contains a character ZooKeeper refuses") {
                    prop_assert!(!zookeeper_takes_characters(&s), "{s:?}: {message}");
                    prop_assert!(message.contains("at byte"), "{message}");
                }
            }
            Err(e) => prop_assert!(false, "{s:?}: {e:?}"),
        }
    }

    /// An identity that passes validation makes contender node names
    /// ZooKeeper takes; one refused for a character has one ZooKeeper
    /// refuses; every refusal is an `InvalidIdentity` in one line.
    #[test]
    fn valid_identities_make_zookeeper_node_names(s in prop_oneof![input(), with_characters("")]) {
        match validate_identity(&s) {
            Ok(()) => {
                prop_assert!(!s.is_empty() && !s.contains('/') && !s.contains('@'), "{s:?}");
                for layout in Layout::ALL.iter().copied() {
                    if let Some(name) = NodeName::new_in(layout, &s, Uuid::from_u128(7), Mode::Write, 1) {
                        let path = format!("/locks/a/{name}");
                        prop_assert!(zookeeper_takes_characters(&path), "{path:?}");
                    }
                }
            }
            Err(e @ Error::InvalidIdentity { .. }) => {
                let message = e.to_string();
                prop_assert!(one_line(&message), "{message:?}");
                let Error::InvalidIdentity { reason, .. } = e else { unreachable!() };
                if reason.starts_with("it contains a character ZooKeeper refuses") {
                    prop_assert!(!zookeeper_takes_characters(&s), "{s:?}: {message}");
                    prop_assert!(message.contains("at byte"), "{message}");
                }
            }
            Err(e) => prop_assert!(false, "{s:?}: {e:?}"),
        }
    }

    /// Ordering over arbitrary child lists, with `me` among them or not:
    /// errors, never panics; a decision names children of the list.
    #[test]
    fn ordering_never_panics(
        children in proptest::collection::vec(prop_oneof![input(), near_name()], 0..12),
        pick in any::<prop::sample::Index>(),
        other in input(),
        mine in any::<bool>(),
    ) {
        let me = if mine && !children.is_empty() {
            children[pick.index(children.len())].clone()
        } else {
            other.clone()
        };
        match decide(&me, &children) {
            Ok(Decision::Granted) => prop_assert!(children.contains(&me)),
            Ok(Decision::Wait { watch, .. }) => {
                prop_assert!(children.iter().any(|c| c == watch));
                prop_assert!(watch != me);
            }
            Ok(other) => {
                let _ = format!("{other:?}");
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
        let _ = downgrade(&other, &me, &children);
        let _ = downgrade(&me, &me, &children);
        let q = queue(&children);
        let _ = q.holders().count();
        if let Some(l) = leader(&children) {
            prop_assert!(children.iter().any(|c| c == l));
        }
    }
}

/// Connect strings: any string returns a typed error quickly (or connects:
/// a string may name a listening port), never panics.
#[test]
fn connect_strings_fail_typed_and_quickly() {
    let rt = zk_rwlock_fixtures::multi_thread_runtime(2);
    let strings = prop_oneof![
        lossy(),
        any::<String>(),
        "[a-z0-9.:,/\\[\\] -]{0,40}",
        "(127\\.0\\.0\\.1|localhost|\\[::1\\]|256\\.1\\.1\\.1|):[0-9]{0,6}(/[a-z/]{0,6})?(,[0-9.:]{0,12}){0,2}",
        "(tcp\\+tls://|tcp://|)(127\\.0\\.0\\.1|localhost):[0-9]{1,5}(,tcp\\+tls://127\\.0\\.0\\.1:[0-9]{1,5})?",
    ];
    let mut runner = proptest::test_runner::TestRunner::new(config(
        96,
        "proptest-regressions/malformed_connect_strings.txt",
    ));
    runner
        .run(&strings, |s| {
            let started = Instant::now();
            let result = rt.block_on(async {
                tokio::time::timeout(
                    Duration::from_secs(5),
                    connect_client(&s, Duration::from_secs(2), Duration::from_millis(150)),
                )
                .await
            });
            let took = started.elapsed();
            let Ok(result) = result else {
                panic!("{s:?}: no answer after {took:?}");
            };
            match result {
                Ok(client) => drop(client),
                Err(
                    Error::InvalidConnectString { .. }
                    | Error::UnresolvableHosts { .. }
                    | Error::Unreachable { .. }
                    | Error::SessionRefused { .. }
                    | Error::ChrootMissing { .. }
                    | Error::InvalidTls { .. }
                    | Error::ZooKeeper(_),
                ) => {}
                Err(e) => panic!("{s:?}: unexpected {e:?}"),
            }
            prop_assert!(took < Duration::from_secs(3), "{s:?} took {took:?}");
            Ok(())
        })
        .unwrap();
}

/// `NodeName` promises "FromStr and Display round-trip exactly": so
/// `-000000000` (not something ZooKeeper prints), which would parse as
/// sequence 0 and print back as `0000000000`, is no contender name, or
/// round-trips.
#[test]
fn negative_zero_sequence_is_not_a_contender_name() {
    let name = "h-W--000000000";
    if let Ok(parsed) = name.parse::<NodeName>() {
        assert_eq!(
            parsed.to_string(),
            name,
            "round trip of {name:?} (parsed as seq {})",
            parsed.seq()
        );
    }
}
